//! A shortcut for the capture load tests write most: a literal, a run of one
//! character class, a literal — `"token":"([^"]+)"`, `name="csrf" value="([^"]*)"` —
//! found with a substring search and one scan, where the regular expression engine
//! spends a forward pass, a reverse pass and a capture pass on every answer. It finds
//! what the regular expression finds, match for match (its tests hold it to that);
//! a pattern of any other shape is left to the regular expression.
//!
//! Why it is exact: a match begins with the prefix, so the starts to try are the
//! prefix's occurrences, leftmost first. From one start the run of the class is
//! greedy and the suffix's first character is outside the class, so the run cannot
//! give back a character for the suffix to begin on: the longest run is the only
//! candidate, and it matches when it is long enough and the suffix follows it. The
//! run reads as the pattern does over bytes: ASCII by the class, and (when the class
//! holds every character past ASCII) each valid UTF-8 character; an invalid byte
//! ends it.

use memchr::memmem::Finder;
use regex_syntax::hir::{Class, Hir, HirKind};

/// A pattern of the shape literal, class run in group 1, literal.
#[derive(Debug, Clone)]
pub struct Around {
    prefix: Finder<'static>,
    suffix: Vec<u8>,
    /// Which ASCII bytes the class holds.
    ascii: [bool; 128],
    /// Whether it holds every character past ASCII (else none).
    wide: bool,
    /// The fewest characters the run takes.
    min: u32,
}

impl Around {
    /// The shortcut for `pattern`, when it has the shape; `None` otherwise.
    pub fn of(pattern: &str) -> Option<Around> {
        let hir = regex_syntax::parse(pattern).ok()?;
        let HirKind::Concat(parts) = hir.kind() else {
            return None;
        };
        let [pre, group, suf] = parts.as_slice() else {
            return None;
        };
        let (HirKind::Literal(pre), HirKind::Literal(suf)) = (pre.kind(), suf.kind()) else {
            return None;
        };
        let HirKind::Capture(cap) = group.kind() else {
            return None;
        };
        let HirKind::Repetition(rep) = cap.sub.kind() else {
            return None;
        };
        if cap.index != 1 || !rep.greedy || rep.max.is_some() || pre.0.is_empty() {
            return None;
        }
        let (ascii, wide) = class(&rep.sub)?;
        let first = *suf.0.first()?;
        if !first.is_ascii() || ascii[first as usize] {
            return None;
        }
        Some(Around {
            prefix: Finder::new(&pre.0).into_owned(),
            suffix: suf.0.to_vec(),
            ascii,
            wide,
            min: rep.min,
        })
    }

    /// The first match in `hay` at or after `from`: where it ends, and its group.
    pub fn find<'h>(&self, hay: &'h [u8], from: usize) -> Option<(usize, &'h [u8])> {
        let mut at = from;
        while let Some(p) = hay.get(at..).and_then(|h| self.prefix.find(h)) {
            let start = at + p + self.prefix.needle().len();
            let (end, n) = self.run(hay, start);
            if n >= self.min && hay[end..].starts_with(&self.suffix) {
                return Some((end + self.suffix.len(), &hay[start..end]));
            }
            at += p + 1;
        }
        None
    }

    /// Where the class's run from `i` ends, and how many characters it holds.
    fn run(&self, hay: &[u8], mut i: usize) -> (usize, u32) {
        let mut n = 0u32;
        while let Some(&b) = hay.get(i) {
            let len = match b {
                _ if b.is_ascii() => usize::from(self.ascii[b as usize]),
                _ if !self.wide => 0,
                0xC2..=0xDF => 2,
                0xE0..=0xEF => 3,
                0xF0..=0xF4 => 4,
                _ => 0,
            };
            let whole = len > 0
                && hay
                    .get(i..i + len)
                    .is_some_and(|c| len == 1 || std::str::from_utf8(c).is_ok());
            if !whole {
                break;
            }
            i += len;
            n = n.saturating_add(1);
        }
        (i, n)
    }
}

/// The ASCII bytes a Unicode class holds, and whether it holds every character past
/// ASCII; `None` for a class of bytes or one holding only some of them.
fn class(hir: &Hir) -> Option<([bool; 128], bool)> {
    let HirKind::Class(Class::Unicode(c)) = hir.kind() else {
        return None;
    };
    let mut ascii = [false; 128];
    let mut next = 0x80u32;
    let mut any_wide = false;
    for r in c.ranges() {
        let (lo, hi) = (r.start() as u32, r.end() as u32);
        for b in lo..=hi.min(0x7F) {
            ascii[b as usize] = true;
        }
        if hi < 0x80 {
            continue;
        }
        any_wide = true;
        // Characters skip the surrogates: a range may resume past them.
        let lo = lo.max(0x80);
        if lo > next && !(next == 0xD800 && lo == 0xE000) {
            return None;
        }
        next = next.max(hi + 1);
    }
    match (any_wide, next > 0x10FFFF) {
        (false, _) => Some((ascii, false)),
        (true, true) => Some((ascii, true)),
        (true, false) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use regex::bytes::Regex;

    #[test]
    fn only_the_shape_it_can_answer_exactly_takes_the_shortcut() {
        for p in [
            r#""token":"([^"]+)""#,
            r#"name="csrf" value="([^"]*)""#,
            r"id=([0-9]{2,});",
            r"<b>([a-z]+)</b>",
        ] {
            assert!(Around::of(p).is_some(), "{p}");
        }
        for p in [
            r#"(?i)"token":"([^"]+)""#, // case folded: classes, not literals
            r#""token":"([^"]+?)""#,    // lazy
            r#""token":"(.+)""#,        // the suffix's first character is in the class
            r"id=([0-9]{2,5});",        // bounded
            r"([a-z]+)x",               // no prefix
            r"a([\x{100}-\x{200}]+)b",  // some characters past ASCII, not all
            r"a(?:[a-z]+)b",            // no group
            r"(?-u)a([^x]+)x",          // bytes, not characters
            r"a([a-z]+)b|c",
            r"t(o[^x]*)x", // the group holds more than the run
        ] {
            assert!(Around::of(p).is_none(), "{p}");
        }
    }

    /// A haystack of `len` bytes drawn from pieces that meet the patterns' edges.
    fn hay(seed: &mut u64, len: usize) -> Vec<u8> {
        const PIECES: [&[u8]; 14] = [
            b"\"",
            b"token",
            b":",
            b"a",
            b"7",
            b"id=",
            b";",
            b"x",
            b"\xc3\xa9",
            b"\xff",
            b"\xe2\x82",
            b"<b>",
            b"</b>",
            b"\"token\":\"",
        ];
        let mut out = Vec::new();
        while out.len() < len {
            *seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            out.extend_from_slice(PIECES[(*seed >> 33) as usize % PIECES.len()]);
        }
        out
    }

    #[test]
    fn it_finds_what_the_regular_expression_finds() {
        let patterns = [
            r#""token":"([^"]+)""#,
            r#""token":"([^"]*)""#,
            r"id=([0-9]{2,});",
            r"<b>([a-z]*)</b>",
            r#"a([^";]+);"#,
            r"7([^x]+)x",
        ];
        let mut seed = 7u64;
        for p in patterns {
            let fast = Around::of(p).unwrap_or_else(|| panic!("{p} has the shape"));
            let re = Regex::new(p).unwrap();
            for len in (0..400).map(|i| i % 60) {
                let h = hay(&mut seed, len);
                let want: Vec<&[u8]> = (re.captures_iter(&h))
                    .map(|c| c.get(1).unwrap().as_bytes())
                    .collect();
                let mut got = Vec::new();
                let mut at = 0;
                while let Some((end, g)) = fast.find(&h, at) {
                    got.push(g);
                    at = end;
                }
                assert_eq!(got, want, "{p} in {:?}", String::from_utf8_lossy(&h));
            }
        }
    }
}
