//! HTTP/1.1 response heads and bodies parsed as they come: framing, split reads, the
//! fields kept in place, and what is refused.

use super::*;

#[test]
fn fields_are_read_from_the_head_once_trimmed_and_in_order() {
    let mut f = Fields::default();
    let head = b"HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nX-Sp:  \tpadded \t\r\nset-cookie:b=2\r\nX-Bad: \xff!\r\nno colon\r\n\r\n";
    assert!(f.read_head(head));
    let all: Vec<(&str, &str)> = f.iter().collect();
    assert_eq!(
        all,
        [
            ("Set-Cookie", "a=1"),
            ("X-Sp", "padded"),
            ("set-cookie", "b=2"),
            ("X-Bad", "\u{fffd}!")
        ]
    );
    assert_eq!(f.get("SET-COOKIE"), Some("a=1"));
    assert_eq!(
        f.iter()
            .rev()
            .find(|(n, _)| n.eq_ignore_ascii_case("set-cookie")),
        Some(("set-cookie", "b=2"))
    );
    assert_eq!(f.len(), 4);
    // Read again into the same room: the last head's fields only.
    assert!(f.read_head(b"HTTP/1.1 204 No Content\r\n\r\n"));
    assert!(f.is_empty());
    assert!(!f.read_head(b"no status line"));
    let p = Fields::from_pairs([("content-type", "text/plain"), ("x", "1")]);
    assert_eq!(p.get("Content-Type"), Some("text/plain"));
    assert_eq!(
        String::from_utf8_lossy(p.text.as_bytes()),
        "content-type: text/plain\r\nx: 1\r\n"
    );
}

/// Feeds `wire` split at `split`, returning every completed response.
fn run(wire: &[u8], split: usize, head: bool) -> Result<Vec<Completed>, ParseError> {
    let mut p = ResponseParser::new(head);
    let mut out = Vec::new();
    for part in [&wire[..split], &wire[split..]] {
        let mut pos = 0;
        while pos < part.len() {
            let (n, c) = p.feed(&part[pos..])?;
            pos += n;
            out.extend(c);
            assert!(n > 0 || c.is_some(), "no progress");
        }
    }
    out.extend(p.eof());
    Ok(out)
}

fn every_split(wire: &[u8], head: bool) -> Vec<Completed> {
    let first = run(wire, 0, head).unwrap();
    for s in 1..=wire.len() {
        assert_eq!(run(wire, s, head).unwrap(), first, "split at {s}");
    }
    first
}

#[test]
fn content_length_and_pipelined_responses() {
    let one = b"HTTP/1.1 200 OK\r\nServer: x\r\nContent-Length: 4\r\n\r\nPONG";
    let wire = [&one[..], &one[..], &one[..]].concat();
    let got = every_split(&wire, false);
    assert_eq!(got.len(), 3);
    for c in got {
        assert_eq!(c.status, 200);
        assert_eq!(c.body_bytes, 4);
        assert_eq!(c.head_bytes as usize, one.len() - 4);
        assert!(c.keep_alive);
    }
}

#[test]
fn chunked_with_extensions_and_trailers() {
    let wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n4;a=b\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nX-T: 1\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n";
    let got = every_split(wire, false);
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].status, 200);
    let head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n".len();
    let second = b"HTTP/1.1 204 No Content\r\n\r\n".len();
    assert_eq!(got[0].body_bytes as usize, wire.len() - head - second);
    assert_eq!(got[1].status, 204);
    assert_eq!(got[1].body_bytes, 0);
}

#[test]
fn close_delimited_and_http10() {
    let wire = b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nhello world";
    let got = every_split(wire, false);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].body_bytes, 11);
    assert!(!got[0].keep_alive);
    let ka = b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 1\r\n\r\nx";
    assert!(every_split(ka, false)[0].keep_alive);
    let close = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx";
    assert!(!every_split(close, false)[0].keep_alive);
}

#[test]
fn interim_responses_are_skipped_and_head_has_no_body() {
    let wire = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc";
    let got = every_split(wire, false);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].status, 200);
    assert_eq!(got[0].head_bytes as usize, wire.len() - 3);
    let head = b"HTTP/1.1 200 OK\r\nContent-Length: 3000\r\n\r\nHTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
    let got = every_split(head, true);
    assert_eq!(got.iter().map(|c| c.status).collect::<Vec<_>>(), [200, 404]);
}

#[test]
fn truncated_body_is_not_complete() {
    let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc";
    assert!(run(wire, 5, false).unwrap().is_empty());
}

#[test]
fn protocol_errors_are_classified() {
    let cases: [(&[u8], ParseError); 6] = [
        (b"garbage\r\n\r\n", ParseError::Head),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
            ParseError::ContentLength,
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            ParseError::ContentLength,
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            ParseError::Chunk,
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\naXX",
            ParseError::Chunk,
        ),
        (
            b"HTTP/1.1 101 Switching Protocols\r\n\r\n",
            ParseError::Upgrade,
        ),
    ];
    for (wire, want) in cases {
        for s in 0..=wire.len() {
            assert_eq!(
                run(wire, s, false).unwrap_err(),
                want,
                "{:?}",
                String::from_utf8_lossy(wire)
            );
        }
    }
}

#[test]
fn oversized_head_is_rejected() {
    let mut wire = b"HTTP/1.1 200 OK\r\n".to_vec();
    while wire.len() <= MAX_HEAD + 10 {
        wire.extend_from_slice(
            b"X-Pad: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n",
        );
    }
    assert!(matches!(
        run(&wire, 100, false),
        Err(ParseError::HeadTooLarge)
    ));
}

#[test]
fn keeps_headers_and_dechunked_body() {
    let wire = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nX-A: 1\r\nTransfer-Encoding: chunked\r\n\r\n4;x=y\r\nWiki\r\n5\r\npedia\r\n0\r\n\r\n";
    for split in 0..=wire.len() {
        let mut p = ResponseParser::new(false);
        p.keep_responses();
        let mut done = None;
        for part in [&wire[..split], &wire[split..]] {
            let mut pos = 0;
            while pos < part.len() {
                let (n, c) = p.feed(&part[pos..]).unwrap();
                pos += n;
                done = done.or(c);
            }
        }
        assert_eq!(done.unwrap().status, 200);
        let k = p.take_kept().unwrap();
        assert_eq!(k.body, b"Wikipedia", "split at {split}");
        assert_eq!(
            k.head(),
            b"HTTP/1.1 200 OK\r\nX-A: 1\r\nTransfer-Encoding: chunked\r\n\r\n"
        );
        assert_eq!(
            k.headers.iter().collect::<Vec<_>>(),
            [("X-A", "1"), ("Transfer-Encoding", "chunked")]
        );
        assert_eq!(k.headers.get("transfer-encoding"), Some("chunked"));
    }
    // A sign is not a hex digit: "+5" is no chunk size.
    let bad = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n+5\r\nhello\r\n0\r\n\r\n";
    assert_eq!(run(bad, 0, false), Err(ParseError::Chunk));
}

#[test]
fn captures_server_once() {
    let mut p = ResponseParser::new(false);
    p.capture_server();
    let wire = b"HTTP/1.1 200 OK\r\nServer: nginx/1.22\r\nContent-Length: 0\r\n\r\n";
    p.feed(wire).unwrap();
    assert_eq!(p.take_server().as_deref(), Some("nginx/1.22"));
    p.feed(wire).unwrap();
    assert_eq!(p.take_server(), None);
}

#[test]
fn a_kept_body_stops_at_its_ceiling_and_says_it_was_cut() {
    use crate::MAX_KEPT_BODY;
    let over = MAX_KEPT_BODY + 10;
    let mut p = ResponseParser::new(false);
    p.keep_responses();
    let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {over}\r\n\r\n");
    let (n, done) = p.feed(head.as_bytes()).unwrap();
    assert_eq!((n, done.is_none()), (head.len(), true));
    // The body in pieces, as reads bring it; counted whole, kept to the ceiling.
    let piece = vec![b'x'; 1 << 20];
    let (mut left, mut done) = (over, None);
    while left > 0 {
        let (n, c) = p.feed(&piece[..left.min(piece.len())]).unwrap();
        left -= n;
        done = done.or(c);
    }
    assert_eq!(done.unwrap().body_bytes, over as u64);
    let k = p.take_kept().unwrap();
    assert_eq!(k.body.len(), MAX_KEPT_BODY);
    assert!(k.cut);
    p.recycle(k);
    // The next answer starts afresh, whole.
    let next = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi";
    let (mut pos, mut done) = (0, None);
    while pos < next.len() {
        let (n, c) = p.feed(&next[pos..]).unwrap();
        pos += n;
        done = done.or(c);
    }
    assert!(done.is_some());
    let k = p.take_kept().unwrap();
    assert_eq!((k.body.as_slice(), k.cut), (&b"hi"[..], false));
}
