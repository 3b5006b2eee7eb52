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

use crate::common::Exit;

/// A pattern compiled for drawing.
#[derive(Debug, Clone)]
enum Node {
    /// Fixed bytes.
    Text(Vec<u8>),
    /// One character from inclusive ranges, with the total count of characters.
    Chars(Vec<(u32, u32)>, u64),
    /// One byte from inclusive ranges (a byte-oriented class).
    Bytes(Vec<(u8, u8)>, u64),
    /// The node from `min` to `max` times.
    Repeat(Box<Node>, u32, u32),
    Concat(Vec<Node>),
    Either(Vec<Node>),
}

impl Node {
    fn of(h: &Hir, max_repeat: u32) -> Node {
        match h.kind() {
            HirKind::Empty | HirKind::Look(_) => Node::Text(Vec::new()),
            HirKind::Literal(l) => Node::Text(l.0.to_vec()),
            HirKind::Class(Class::Unicode(c)) => {
                let r: Vec<(u32, u32)> = (c.ranges().iter())
                    .map(|r| (r.start() as u32, r.end() as u32))
                    .collect();
                let n = r.iter().map(|(a, b)| (b - a) as u64 + 1).sum();
                Node::Chars(r, n)
            }
            HirKind::Class(Class::Bytes(c)) => {
                let r: Vec<(u8, u8)> = c.ranges().iter().map(|r| (r.start(), r.end())).collect();
                let n = r.iter().map(|(a, b)| (b - a) as u64 + 1).sum();
                Node::Bytes(r, n)
            }
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

    /// Appends a drawn string to `out`.
    fn draw(&self, rng: &mut Rng, out: &mut Vec<u8>) {
        let below = |rng: &mut Rng, n: u64| rng.next_u64() % n.max(1);
        match self {
            Node::Text(t) => out.extend_from_slice(t),
            Node::Chars(ranges, n) => {
                let mut k = below(rng, *n);
                for &(a, b) in ranges {
                    let size = (b - a) as u64 + 1;
                    if k < size {
                        let c = char::from_u32(a + k as u32).unwrap_or('\u{fffd}');
                        let mut tmp = [0u8; 4];
                        out.extend_from_slice(c.encode_utf8(&mut tmp).as_bytes());
                        return;
                    }
                    k -= size;
                }
            }
            Node::Bytes(ranges, n) => {
                let mut k = below(rng, *n);
                for &(a, b) in ranges {
                    let size = (b - a) as u64 + 1;
                    if k < size {
                        out.push(a + k as u8);
                        return;
                    }
                    k -= size;
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

/// A URL pattern: the fixed origin (`http://host:port`) and the part that varies.
#[derive(Debug, Clone)]
pub struct UrlPattern {
    /// `scheme://authority`, as the pattern spells it (escapes removed).
    pub origin: String,
    path: Node,
}

impl UrlPattern {
    /// Parses `pattern`; `max_repeat` bounds the open repetitions.
    pub fn parse(pattern: &str, max_repeat: u32) -> Result<UrlPattern, Exit> {
        let err = |what: String| Exit::usage(format!("--rand-regex-url {pattern:?}: {what}"));
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
        let mut parts = vec![Node::Text(lead.as_bytes()[start..].to_vec())];
        parts.extend(rest.iter().map(|h| Node::of(h, max_repeat)));
        Ok(UrlPattern {
            origin: lead[..start].to_string(),
            path: Node::Concat(parts),
        })
    }

    /// A drawn path and query, starting with `/`, every byte allowed in a
    /// request-target.
    pub fn draw(&self, rng: &mut Rng) -> String {
        let mut raw = Vec::with_capacity(64);
        self.path.draw(rng, &mut raw);
        let mut out = String::with_capacity(raw.len() + 1);
        if raw.first() != Some(&b'/') {
            out.push('/');
        }
        for b in raw {
            if b.is_ascii_graphic() {
                out.push(b as char);
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
        }
        out
    }
}

/// The run's requests with drawn paths: `request` split around its request-target.
pub struct RandomPaths {
    pattern: UrlPattern,
    /// The request line up to the target (`GET `).
    before: Vec<u8>,
    /// From the space after the target to the end of the body.
    after: Vec<u8>,
    pipeline: usize,
    seed: u64,
}

impl RandomPaths {
    /// Hooks that send `request` with a path drawn from `pattern` each time, `pipeline`
    /// requests per batch; thread `i` draws from `seed + i`.
    pub fn hooks(pattern: UrlPattern, request: &Request, pipeline: usize, seed: u64) -> Hooks {
        let b = &request.bytes;
        let sp1 = b.iter().position(|&c| c == b' ').unwrap_or(0);
        let sp2 = sp1 + 1 + b[sp1 + 1..].iter().position(|&c| c == b' ').unwrap_or(0);
        Hooks(Arc::new(RandomPaths {
            pattern,
            before: b[..=sp1].to_vec(),
            after: b[sp2..].to_vec(),
            pipeline: pipeline.max(1),
            seed,
        }))
    }
}

/// One worker thread's drawing: the run's pattern and request, its own generator.
struct ThreadPaths {
    run: Arc<RandomPaths>,
    rng: Rng,
}

impl ThreadHooksSource for RandomPaths {
    fn thread(&self, index: usize) -> Box<dyn ThreadHooks> {
        Box::new(ThreadPaths {
            run: Arc::new(RandomPaths {
                pattern: self.pattern.clone(),
                before: self.before.clone(),
                after: self.after.clone(),
                pipeline: self.pipeline,
                seed: self.seed,
            }),
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
    fn request(&mut self, out: &mut Vec<u8>) -> Flow {
        let run = &*self.run;
        for _ in 0..run.pipeline {
            out.extend_from_slice(&run.before);
            out.extend_from_slice(run.pattern.draw(&mut self.rng).as_bytes());
            out.extend_from_slice(&run.after);
        }
        Flow::Go
    }
    fn response(&mut self, _: u16, _: &[(String, String)], _: &[u8]) -> Flow {
        Flow::Go
    }
    fn delay(&mut self) -> (std::time::Duration, Flow) {
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
        // A fixed URL is its own path.
        let p = UrlPattern::parse("http://h:1", 3).unwrap();
        assert_eq!(p.draw(&mut rng), "/");
    }

    #[test]
    fn a_varying_origin_or_a_bad_pattern_is_refused_with_why() {
        for (bad, needle) in [
            ("http://[a-z]+:3000/", "fixed text"),
            ("http://h:300[0-9]/", "fixed text"),
            ("(http|https)://h/", "fixed text"),
            ("http://h/[a-", "not a regular expression"),
        ] {
            let e = UrlPattern::parse(bad, 4).unwrap_err().message;
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
        assert_eq!(t.request(&mut out), Flow::Go);
        let text = String::from_utf8(out.clone()).unwrap();
        assert_eq!(stampede_engine::hooks::count_requests(&out), Ok(3));
        let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("GET ")).collect();
        assert_eq!(lines.len(), 3);
        for l in &lines {
            assert_eq!(l.len(), "GET /123456 HTTP/1.1".len(), "{l}");
        }
    }
}
