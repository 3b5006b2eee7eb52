//! oha's `--rand-regex-url`: the URL is a regular expression and every request gets a
//! new path drawn from it, so a cache or router sees many distinct URLs.
//!
//! The scheme, host and port must be fixed text at the start of the pattern (dots
//! escaped as `\.`, as oha asks): one run loads one server. Only what follows (the
//! path and query) varies. The pattern is parsed with `regex-syntax` and drawn from
//! its syntax tree with the engine's seeded generator, so the same seed gives the
//! same paths; a repetition without an upper bound (`*`, `+`, `{n,}`) repeats at most
//! `--max-repeat` more times than its minimum. A drawn byte that may not appear in a
//! request-target (space, controls, non-ASCII) is percent-encoded, so no path can
//! break the request's framing. The paths are written by the engine's script hooks:
//! a new request per request, on the worker's thread, without a script language.

use std::sync::Arc;

use regex_syntax::hir::{Class, Hir, HirKind};
use stampede_engine::arrivals::Rng;
use stampede_engine::hooks::{Flow, ThreadHooks, ThreadHooksSource};
use stampede_engine::{Hooks, Request};

use crate::InputError;

/// A pattern compiled for drawing.
#[derive(Debug, Clone)]
enum Node {
    /// Fixed bytes.
    Text(Vec<u8>),
    /// One of the characters in inclusive ranges (`count` of them in all), written as
    /// UTF-8, or as one byte for a byte-oriented class (`bytes`).
    Class {
        ranges: Vec<(u32, u32)>,
        count: u64,
        bytes: bool,
    },
    /// The node from `min` to `max` times.
    Repeat(Box<Node>, u32, u32),
    Concat(Vec<Node>),
    Either(Vec<Node>),
}

impl Node {
    fn class(ranges: Vec<(u32, u32)>, bytes: bool) -> Node {
        let count = ranges.iter().map(|(a, b)| (b - a) as u64 + 1).sum();
        Node::Class {
            ranges,
            count,
            bytes,
        }
    }

    fn of(h: &Hir, max_repeat: u32) -> Node {
        match h.kind() {
            HirKind::Empty | HirKind::Look(_) => Node::Text(Vec::new()),
            HirKind::Literal(l) => Node::Text(l.0.to_vec()),
            HirKind::Class(Class::Unicode(c)) => Node::class(
                (c.ranges().iter())
                    .map(|r| (r.start() as u32, r.end() as u32))
                    .collect(),
                false,
            ),
            HirKind::Class(Class::Bytes(c)) => Node::class(
                (c.ranges().iter())
                    .map(|r| (r.start() as u32, r.end() as u32))
                    .collect(),
                true,
            ),
            HirKind::Repetition(r) => {
                let max = r.max.unwrap_or(r.min.saturating_add(max_repeat));
                Node::Repeat(Box::new(Node::of(&r.sub, max_repeat)), r.min, max)
            }
            HirKind::Capture(c) => Node::of(&c.sub, max_repeat),
            HirKind::Concat(v) => Node::Concat(v.iter().map(|h| Node::of(h, max_repeat)).collect()),
            HirKind::Alternation(v) => {
                Node::Either(v.iter().map(|h| Node::of(h, max_repeat)).collect())
            }
        }
    }

    /// The longest string a draw can append, percent-encoding counted (saturating).
    fn max_len(&self) -> u64 {
        match self {
            Node::Text(t) => t
                .iter()
                .map(|b| if b.is_ascii_graphic() { 1 } else { 3 })
                .sum(),
            Node::Class { ranges, .. } if ranges.iter().all(|&(a, b)| a > 0x20 && b < 0x7f) => 1,
            // A character of up to four bytes, each percent-encoded.
            Node::Class { .. } => 12,
            Node::Repeat(sub, _, max) => sub.max_len().saturating_mul(u64::from(*max)),
            Node::Concat(v) => v.iter().fold(0u64, |a, n| a.saturating_add(n.max_len())),
            Node::Either(v) => v.iter().map(Node::max_len).max().unwrap_or(0),
        }
    }

    /// Appends a drawn string to `out`, each byte a request-target may not hold
    /// percent-encoded.
    fn draw(&self, rng: &mut Rng, out: &mut Vec<u8>) {
        let below = |rng: &mut Rng, n: u64| rng.next_u64() % n.max(1);
        match self {
            Node::Text(t) => t.iter().for_each(|&b| push_safe(out, b)),
            Node::Class {
                ranges,
                count,
                bytes,
            } => {
                let mut k = below(rng, *count);
                for &(a, b) in ranges {
                    let size = (b - a) as u64 + 1;
                    if k >= size {
                        k -= size;
                        continue;
                    }
                    let v = a + k as u32;
                    if *bytes {
                        push_safe(out, v as u8);
                    } else {
                        let c = char::from_u32(v).unwrap_or('\u{fffd}');
                        let mut tmp = [0u8; 4];
                        c.encode_utf8(&mut tmp)
                            .bytes()
                            .for_each(|b| push_safe(out, b));
                    }
                    return;
                }
            }
            Node::Repeat(sub, min, max) => {
                let times = min + below(rng, (max - min) as u64 + 1) as u32;
                for _ in 0..times {
                    sub.draw(rng, out);
                }
            }
            Node::Concat(v) => v.iter().for_each(|n| n.draw(rng, out)),
            Node::Either(v) => v[below(rng, v.len() as u64) as usize].draw(rng, out),
        }
    }
}

/// Appends `b`, percent-encoded unless it is visible ASCII.
fn push_safe(out: &mut Vec<u8>, b: u8) {
    if b.is_ascii_graphic() {
        out.push(b);
    } else {
        const HEX: &[u8; 16] = b"0123456789ABCDEF";
        out.extend_from_slice(&[b'%', HEX[(b >> 4) as usize], HEX[(b & 15) as usize]]);
    }
}

/// The longest path and query a pattern may draw, percent-encoding counted: 16 KiB,
/// twice what common servers accept in a request line.
pub const MAX_DRAWN_TARGET: u64 = 16 << 10;

/// A URL pattern: the fixed origin (`http://host:port`) and the part that varies.
#[derive(Debug, Clone)]
pub struct UrlPattern {
    /// `scheme://authority`, as the pattern spells it (escapes removed).
    pub origin: String,
    path: Node,
}

impl UrlPattern {
    /// Parses `pattern`; `max_repeat` bounds the open repetitions.
    pub fn parse(pattern: &str, max_repeat: u32) -> Result<UrlPattern, InputError> {
        let err = |what: String| InputError::of(format!("--rand-regex-url {pattern:?}"), what);
        let hir = regex_syntax::ParserBuilder::new()
            .unicode(true)
            .utf8(true)
            .build()
            .parse(pattern)
            .map_err(|e| err(format!("not a regular expression: {e}")))?;
        let (lead, rest): (Vec<u8>, Vec<Hir>) = match hir.kind() {
            HirKind::Literal(l) => (l.0.to_vec(), Vec::new()),
            HirKind::Concat(v) => match v.first().map(Hir::kind) {
                Some(HirKind::Literal(l)) => (l.0.to_vec(), v[1..].to_vec()),
                _ => (Vec::new(), v.clone()),
            },
            _ => (Vec::new(), Vec::new()),
        };
        let lead = String::from_utf8_lossy(&lead).into_owned();
        let fixed = || {
            err("the scheme, host and port must be fixed text at the start, only the path may vary (escape each dot as \\., e.g. http://127\\.0\\.0\\.1:3000/[a-z]{3})".into())
        };
        let after = lead.find("://").ok_or_else(fixed)? + 3;
        let start = match lead[after..].find(['/', '?']) {
            Some(i) => after + i,
            None if rest.is_empty() => lead.len(),
            None => return Err(fixed()),
        };
        // The path starts with `/` (before a query, or for a bare origin).
        let mut first = lead.as_bytes()[start..].to_vec();
        if first.first() != Some(&b'/') {
            first.insert(0, b'/');
        }
        let mut parts = vec![Node::Text(first)];
        parts.extend(rest.iter().map(|h| Node::of(h, max_repeat)));
        let path = Node::Concat(parts);
        // Checked before any draw: `x{4294967295}` would build 4 GiB per request.
        let longest = path.max_len();
        if longest > MAX_DRAWN_TARGET {
            return Err(err(format!(
                "a drawn path could take {} bytes; at most {MAX_DRAWN_TARGET} are drawn per request (lower the repetitions' bounds or --max-repeat)",
                if longest == u64::MAX { "more than 2^64".to_string() } else { longest.to_string() }
            )));
        }
        Ok(UrlPattern {
            origin: lead[..start].to_string(),
            path,
        })
    }

    /// Appends a drawn path and query to `out`: it starts with `/`, and every byte is
    /// one a request-target may hold.
    pub fn draw_into(&self, rng: &mut Rng, out: &mut Vec<u8>) {
        self.path.draw(rng, out);
    }

    /// A drawn path and query (see [`UrlPattern::draw_into`]).
    pub fn draw(&self, rng: &mut Rng) -> String {
        let mut out = Vec::with_capacity(64);
        self.draw_into(rng, &mut out);
        String::from_utf8(out).expect("drawn paths are ASCII")
    }
}

/// The run's requests with drawn paths: `request` split around its request-target.
struct Draw {
    pattern: UrlPattern,
    /// The request line up to the target (`GET `).
    before: Vec<u8>,
    /// From the space after the target to the end of the body.
    after: Vec<u8>,
    pipeline: usize,
}

/// The hooks' source: the run's `Draw`, shared by its threads.
pub struct RandomPaths {
    draw: Arc<Draw>,
    seed: u64,
}

impl RandomPaths {
    /// Hooks that send `request` with a path drawn from `pattern` each time, `pipeline`
    /// requests per batch; thread `i` draws from `seed + i`.
    pub fn hooks(pattern: UrlPattern, request: &Request, pipeline: usize, seed: u64) -> Hooks {
        let b = &request.bytes;
        let sp1 = b.iter().position(|&c| c == b' ').unwrap_or(0);
        let sp2 = sp1 + 1 + b[sp1 + 1..].iter().position(|&c| c == b' ').unwrap_or(0);
        let draw = Draw {
            pattern,
            before: b[..=sp1].to_vec(),
            after: b[sp2..].to_vec(),
            pipeline: pipeline.max(1),
        };
        Hooks(Arc::new(RandomPaths {
            draw: Arc::new(draw),
            seed,
        }))
    }
}

/// One worker thread's drawing: the run's pattern and request, its own generator.
struct ThreadPaths {
    draw: Arc<Draw>,
    rng: Rng,
}

impl ThreadHooksSource for RandomPaths {
    fn thread(&self, index: usize) -> Box<dyn ThreadHooks> {
        Box::new(ThreadPaths {
            draw: self.draw.clone(),
            rng: Rng::new(self.seed.wrapping_add(index as u64)),
        })
    }
}

impl ThreadHooks for ThreadPaths {
    fn builds_requests(&self) -> bool {
        true
    }
    fn wants_responses(&self) -> bool {
        false
    }
    fn has_delay(&self) -> bool {
        false
    }
    fn address(&self) -> Option<std::net::SocketAddr> {
        None
    }
    fn request(&mut self, _conn: usize, out: &mut Vec<u8>) -> Flow {
        let d = &*self.draw;
        for _ in 0..d.pipeline {
            out.extend_from_slice(&d.before);
            d.pattern.draw_into(&mut self.rng, out);
            out.extend_from_slice(&d.after);
        }
        Flow::Go
    }
    fn response(&mut self, _: &stampede_engine::Reply) -> Flow {
        Flow::Go
    }
    fn delay(&mut self, _conn: usize) -> (std::time::Duration, Flow) {
        (std::time::Duration::ZERO, Flow::Go)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_drawn_from_the_pattern_after_a_fixed_origin() {
        let p = UrlPattern::parse(r"http://127\.0\.0\.1:3000/[a-z][a-z][0-9]", 4).unwrap();
        assert_eq!(p.origin, "http://127.0.0.1:3000");
        let mut rng = Rng::new(7);
        let paths: Vec<String> = (0..200).map(|_| p.draw(&mut rng)).collect();
        for s in &paths {
            let b = s.as_bytes();
            assert_eq!(b.len(), 4, "{s}");
            assert!(b[0] == b'/' && b[1].is_ascii_lowercase() && b[2].is_ascii_lowercase());
            assert!(b[3].is_ascii_digit(), "{s}");
        }
        let mut distinct = paths.clone();
        distinct.sort();
        distinct.dedup();
        assert!(distinct.len() > 150, "{}", distinct.len());
        // The same seed draws the same paths.
        let mut again = Rng::new(7);
        assert_eq!(p.draw(&mut again), paths[0]);
    }

    #[test]
    fn a_pattern_that_could_draw_more_than_the_ceiling_is_refused_before_drawing() {
        for pat in [
            r"http://h:1/x{4294967295}",
            r"http://h:1/((a{1000}){1000}){1000}",
            r"http://h:1/[a-z]{20000}",
            r"http://h:1/é{5000}",
        ] {
            let e = UrlPattern::parse(pat, 16).unwrap_err().to_string();
            assert!(e.contains("at most 16384 are drawn"), "{pat}: {e}");
        }
        // An open repetition counts at --max-repeat past its minimum.
        assert!(UrlPattern::parse(r"http://h:1/a*", 16_000).is_ok());
        assert!(UrlPattern::parse(r"http://h:1/[a-z]+", 20_000).is_err());
        assert!(UrlPattern::parse(r"http://h:1/[a-z]{1000}", 16).is_ok());
    }

    #[test]
    fn repetitions_alternations_and_unsafe_bytes() {
        let p = UrlPattern::parse(r"http://h:1/(ab|cd)x*\?q=[ é]", 3).unwrap();
        let mut rng = Rng::new(1);
        for _ in 0..200 {
            let s = p.draw(&mut rng);
            let x = s.matches('x').count();
            assert!(s.starts_with("/ab") || s.starts_with("/cd"), "{s}");
            assert!(x <= 3, "{s}");
            assert!(s.ends_with("?q=%20") || s.ends_with("?q=%C3%A9"), "{s}");
        }
        // A fixed URL is its own path; a query alone gets the path `/`.
        let p = UrlPattern::parse("http://h:1", 3).unwrap();
        assert_eq!(p.draw(&mut rng), "/");
        let p = UrlPattern::parse(r"http://h:1\?a=[0-9]", 3).unwrap();
        assert!(p.draw(&mut rng).starts_with("/?a="));
    }

    #[test]
    fn a_varying_origin_or_a_bad_pattern_is_refused_with_why() {
        for (bad, needle) in [
            ("http://[a-z]+:3000/", "fixed text"),
            ("http://h:300[0-9]/", "fixed text"),
            ("(http|https)://h/", "fixed text"),
            ("http://h/[a-", "not a regular expression"),
        ] {
            let e = UrlPattern::parse(bad, 4).unwrap_err().to_string();
            assert!(e.contains(needle), "{bad}: {e}");
        }
    }

    #[test]
    fn each_batch_is_pipeline_requests_with_new_paths() {
        let request = Request {
            method: "GET".into(),
            bytes: b"GET /x HTTP/1.1\r\nHost: h\r\n\r\n".to_vec(),
        };
        let p = UrlPattern::parse("http://h/[0-9]{6}", 4).unwrap();
        let hooks = RandomPaths::hooks(p, &request, 3, 9);
        let mut t = hooks.0.thread(0);
        let mut out = Vec::new();
        assert_eq!(t.request(0, &mut out), Flow::Go);
        let text = String::from_utf8(out.clone()).unwrap();
        assert_eq!(stampede_engine::hooks::count_requests(&out), Ok(3));
        let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("GET ")).collect();
        assert_eq!(lines.len(), 3);
        for l in &lines {
            assert_eq!(l.len(), "GET /123456 HTTP/1.1".len(), "{l}");
        }
    }
}
