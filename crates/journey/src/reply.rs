//! An answer as extractions and checks read it: its status, its headers, its body,
//! and the body as JSON, parsed at most once however many of them read it and never
//! when it is larger than [`MAX_JSON`] or was cut where the engine stops keeping a body
//! (such an answer fails what reads it as JSON, counted, instead of being searched
//! without a bound); a regular expression or `body contains` reads what was kept.

use std::cell::OnceCell;
use std::time::Duration;

/// The largest body read as JSON.
pub const MAX_JSON: usize = 16 * 1024 * 1024;

/// Why the body could not be read as JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonTrouble {
    /// Larger than [`MAX_JSON`].
    TooLarge,
    /// Not JSON.
    NotJson,
}

/// An answer's headers: names and values, or the engine's fields as received.
#[derive(Clone, Copy)]
pub enum Headers<'a> {
    Pairs(&'a [(&'a str, &'a str)]),
    Fields(&'a stampede_engine::Fields),
}

/// One answer.
pub struct Reply<'a> {
    pub status: u16,
    /// Headers as received: names in any case.
    pub headers: Headers<'a>,
    pub body: &'a [u8],
    /// From the request's start to the answer's end.
    pub elapsed: Duration,
    /// The body was longer than the engine keeps: `body` is its beginning.
    pub cut: bool,
    json: OnceCell<Result<serde_json::Value, JsonTrouble>>,
}

impl<'a> Reply<'a> {
    pub fn new(
        status: u16,
        headers: &'a [(&'a str, &'a str)],
        body: &'a [u8],
        elapsed: Duration,
    ) -> Reply<'a> {
        Reply {
            status,
            headers: Headers::Pairs(headers),
            body,
            elapsed,
            cut: false,
            json: OnceCell::new(),
        }
    }

    /// An answer whose headers are the engine's fields, read where they lie.
    pub fn of_fields(
        status: u16,
        fields: &'a stampede_engine::Fields,
        body: &'a [u8],
        elapsed: Duration,
    ) -> Reply<'a> {
        Reply {
            status,
            headers: Headers::Fields(fields),
            body,
            elapsed,
            cut: false,
            json: OnceCell::new(),
        }
    }

    /// The same answer, its body cut (or not) where the engine stopped keeping it.
    pub fn cut(mut self, cut: bool) -> Reply<'a> {
        self.cut = cut;
        self
    }

    /// The values of header `name` (any case), in order.
    pub fn header<'n>(&self, name: &'n str) -> impl Iterator<Item = &'a str> + 'n
    where
        'a: 'n,
    {
        let (pairs, fields) = match self.headers {
            Headers::Pairs(p) => (Some(p), None),
            Headers::Fields(f) => (None, Some(f)),
        };
        (pairs.into_iter().flatten().map(|&(n, v)| (n, v)))
            .chain(fields.into_iter().flat_map(|f| f.iter()))
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    }

    /// The body as JSON.
    pub fn json(&self) -> Result<&serde_json::Value, JsonTrouble> {
        self.json
            .get_or_init(|| {
                if self.cut || self.body.len() > MAX_JSON {
                    return Err(JsonTrouble::TooLarge);
                }
                serde_json::from_slice(self.body).map_err(|_| JsonTrouble::NotJson)
            })
            .as_ref()
            .map_err(|e| *e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_found_in_any_case_and_the_body_parsed_once() {
        let h = [
            ("Content-Type", "application/json"),
            ("set-cookie", "a=1"),
            ("Set-Cookie", "b=2"),
        ];
        let r = Reply::new(200, &h, br#"{"ok": true}"#, Duration::ZERO);
        assert_eq!(
            r.header("content-type").collect::<Vec<_>>(),
            ["application/json"]
        );
        assert_eq!(r.header("SET-COOKIE").collect::<Vec<_>>(), ["a=1", "b=2"]);
        assert_eq!(r.json().unwrap()["ok"], true);
        assert!(std::ptr::eq(r.json().unwrap(), r.json().unwrap()));
        let r = Reply::new(200, &[], b"<html>", Duration::ZERO);
        assert_eq!(r.json(), Err(JsonTrouble::NotJson));
        // The engine's fields, read where they lie, as the pairs are.
        let mut f = stampede_engine::Fields::default();
        assert!(
            f.read_head(b"HTTP/1.1 200 OK\r\nset-cookie: a=1\r\nX-A: b\r\nSet-Cookie: b=2\r\n\r\n")
        );
        let r = Reply::of_fields(200, &f, b"", Duration::ZERO);
        assert_eq!(r.header("SET-COOKIE").collect::<Vec<_>>(), ["a=1", "b=2"]);
        assert_eq!(r.header("x-a").collect::<Vec<_>>(), ["b"]);
        let big = vec![b' '; MAX_JSON + 1];
        let r = Reply::new(200, &[], &big, Duration::ZERO);
        assert_eq!(r.json(), Err(JsonTrouble::TooLarge));
        // A body the engine cut where it stops keeping is not read as JSON either,
        // though what was kept would parse.
        let r = Reply::new(200, &[], b"{\"a\": 1}", Duration::ZERO).cut(true);
        assert_eq!(r.json(), Err(JsonTrouble::TooLarge));
    }
}
