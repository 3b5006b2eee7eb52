//! The WebSocket endpoints against hand-built handshakes and client frames.

use super::*;
use crate::request::Parsed;
use stampede_wire::ws::{Event, Reader, ReaderOptions};

const LINES: Lines<'static> = Lines {
    date: b"Date: Thu, 01 Jan 2026 00:00:00 GMT\r\n",
    server: b"Server: stampede\r\n",
};

const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";

/// A handshake's head: `method path`, then the standard fields with `key`, `version`
/// and the `extra` lines.
fn head(method: &str, path: &str, key: &str, version: &str, extra: &str) -> Vec<u8> {
    format!(
        "{method} {path} HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: {version}\r\n{extra}\r\n"
    )
    .into_bytes()
}

/// The handshake of `head`, answered into `out`.
fn answer(head: &[u8], out: &mut Vec<u8>) -> Handshake {
    let limits = crate::request::Limits::default();
    let Parsed::Complete(req, n) = crate::request::parse(head, &limits) else {
        panic!("not a request: {}", String::from_utf8_lossy(head));
    };
    handshake(&req, &head[..n], out, LINES)
}

fn open(path: &str) -> (Box<WsConn>, String) {
    let mut out = Vec::new();
    match answer(&head("GET", path, KEY, "13", ""), &mut out) {
        Handshake::Upgraded(w) => (w, String::from_utf8(out).unwrap()),
        Handshake::Refused => panic!("refused: {}", String::from_utf8_lossy(&out)),
    }
}

/// What the server sent, read as a client reads it.
fn events(out: &[u8]) -> Vec<String> {
    let mut r = Reader::new(ReaderOptions {
        peer_is_client: false,
        max_message: 1 << 24,
        keep: true,
    });
    let mut got = Vec::new();
    r.feed(out, &mut |e| {
        got.push(match e {
            Event::Message { text, data, .. } => {
                format!(
                    "{} {}",
                    if text { "text" } else { "binary" },
                    String::from_utf8_lossy(data)
                )
            }
            Event::Ping(p) => format!("ping {}", String::from_utf8_lossy(p)),
            Event::Pong(p) => format!("pong {}", String::from_utf8_lossy(p)),
            Event::Close { code, reason } => format!("close {code:?} {reason}"),
        })
    })
    .unwrap();
    got
}

fn client(op: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    ws::frame(&mut f, (true, false), op, payload, Some([1, 2, 3, 4]));
    f
}

#[test]
fn the_handshake_answers_with_rfc_6455s_accept_key() {
    let (_, said) = open("/ws/echo");
    assert!(
        said.starts_with("HTTP/1.1 101 Switching Protocols\r\n"),
        "{said}"
    );
    assert!(
        said.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"),
        "{said}"
    );
    assert!(
        said.contains("Upgrade: websocket\r\nConnection: Upgrade\r\n"),
        "{said}"
    );
    assert!(
        said.ends_with("\r\n\r\n") && !said.contains("Sec-WebSocket-Protocol"),
        "{said}"
    );
    // The first subprotocol offered is taken.
    let mut out = Vec::new();
    let offered = head(
        "GET",
        "/ws/echo",
        KEY,
        "13",
        "Sec-WebSocket-Protocol: chat.v2 , chat.v1\r\n",
    );
    assert!(matches!(answer(&offered, &mut out), Handshake::Upgraded(_)));
    assert!(String::from_utf8(out)
        .unwrap()
        .contains("Sec-WebSocket-Protocol: chat.v2\r\n"));
}

#[test]
fn handshakes_that_are_not_one_are_refused_with_their_status() {
    let refused = |h: Vec<u8>| {
        let mut out = Vec::new();
        assert!(matches!(answer(&h, &mut out), Handshake::Refused));
        String::from_utf8(out).unwrap()
    };
    let e = refused(head("GET", "/ws/echo", "short", "13", ""));
    assert!(e.starts_with("HTTP/1.1 400 "), "{e}");
    let no_upgrade = String::from_utf8(head("GET", "/ws/echo", KEY, "13", ""))
        .unwrap()
        .replace("Connection: Upgrade", "Connection: keep-alive");
    let e = refused(no_upgrade.into_bytes());
    assert!(e.starts_with("HTTP/1.1 400 "), "{e}");
    let e = refused(head("GET", "/ws/echo", KEY, "8", ""));
    assert!(
        e.starts_with("HTTP/1.1 426 ") && e.contains("Sec-WebSocket-Version: 13\r\n"),
        "{e}"
    );
    let e = refused(head("POST", "/ws/echo", KEY, "13", ""));
    assert!(e.starts_with("HTTP/1.1 400 "), "{e}");
    let e = refused(head("GET", "/elsewhere", KEY, "13", ""));
    assert!(
        e.starts_with("HTTP/1.1 404 ") && e.contains("/ws/echo"),
        "{e}"
    );
    let e = refused(head("GET", "/ws/push?size=99999999", KEY, "13", ""));
    assert!(e.starts_with("HTTP/1.1 400 ") && e.contains("size"), "{e}");
    let e = refused(head("GET", "/ws/push?rate=5", KEY, "13", ""));
    assert!(
        e.contains("interval_ms, size, count, text and stamp"),
        "{e}"
    );
    let e = refused(head("GET", "/ws/push?stamp=1&size=42", KEY, "13", ""));
    assert!(
        e.starts_with("HTTP/1.1 400 ") && e.contains("at least 43"),
        "{e}"
    );
    let e = refused(head("GET", "/ws/push?stamp=2", KEY, "13", ""));
    assert!(e.contains("stamp is 0 or 1"), "{e}");
    assert!(e.contains("Connection: close\r\n"), "{e}");
}

#[test]
fn the_echo_sends_each_message_back_and_answers_pings_and_the_close() {
    let (mut w, _) = open("/ws/echo");
    let mut out = Vec::new();
    let mut input = client(ws::TEXT, "héllo".as_bytes());
    input.extend(client(ws::PING, b"are you there"));
    input.extend(client(ws::BINARY, b"\x00\x01"));
    // Whatever the cut, the same answers.
    for cut in [1, 5, input.len()] {
        let (mut w, _) = open("/ws/echo");
        let mut out = Vec::new();
        for piece in input.chunks(cut) {
            assert!(!w.feed(piece, &mut out));
        }
        assert_eq!(
            events(&out),
            ["text héllo", "pong are you there", "binary \u{0}\u{1}"]
        );
    }
    let mut bye = Vec::new();
    ws::close(&mut bye, Some(4000), "done", Some([9, 9, 9, 9]));
    assert!(w.feed(&bye, &mut out));
    assert_eq!(events(&out), ["close Some(4000) "]);
    // After the close nothing more is answered.
    out.clear();
    assert!(w.feed(&client(ws::TEXT, b"late"), &mut out));
    assert!(out.is_empty());
}

#[test]
fn a_client_that_breaks_the_rules_is_sent_the_code_that_answers_it() {
    let (mut w, _) = open("/ws/echo");
    let mut out = Vec::new();
    // Unmasked: a protocol error.
    let mut f = Vec::new();
    ws::frame(&mut f, (true, false), ws::TEXT, b"x", None);
    assert!(w.feed(&f, &mut out));
    let got = events(&out);
    assert!(got[0].starts_with("close Some(1002)"), "{got:?}");
    // Text that is not UTF-8: 1007.
    let (mut w, _) = open("/ws/echo");
    let mut out = Vec::new();
    assert!(w.feed(&client(ws::TEXT, b"\xff"), &mut out));
    assert!(events(&out)[0].starts_with("close Some(1007)"));
}

#[test]
fn the_push_sends_its_count_on_the_schedule_then_closes() {
    let (mut w, _) = open("/ws/push?interval_ms=20&size=3&count=3&text=1");
    let t = Instant::now();
    assert_eq!(w.push_from(t), Some(t));
    let mut out = Vec::new();
    let ms = |n| t + Duration::from_millis(n);
    assert_eq!(w.push_next(&mut out), Some(ms(20)));
    assert_eq!(w.push_next(&mut out), Some(ms(40)));
    assert_eq!(w.push_next(&mut out), None);
    assert!(w.closing());
    assert_eq!(
        events(&out),
        [
            "text xxx",
            "text xxx",
            "text xxx",
            "close Some(1000) pushed every message"
        ]
    );
    // The echo pushes nothing.
    let (mut e, _) = open("/ws/echo");
    assert_eq!(e.push_from(t), None);
}

#[test]
fn a_stamped_push_carries_when_each_message_was_due_and_sent() {
    use stampede_wire::stamp::{self, Stamp};
    let (mut w, _) = open("/ws/push?interval_ms=20&size=50&count=2&text=1&stamp=1");
    // Due 20 ms before now: the first message goes late, the second on time.
    let t = Instant::now() - Duration::from_millis(20);
    w.push_from(t);
    let mut out = Vec::new();
    let before = stamp::unix_ns(Instant::now());
    w.push_next(&mut out);
    w.push_next(&mut out);
    let after = stamp::unix_ns(Instant::now());
    let mut r = Reader::new(ReaderOptions {
        peer_is_client: false,
        max_message: 1 << 20,
        keep: true,
    });
    let mut stamps = Vec::new();
    r.feed(&out, &mut |e| {
        if let Event::Message { text, data, .. } = e {
            assert!(text && data.len() == 50 && data.ends_with(b"xxxxxxx"));
            stamps.push(Stamp::read(data).expect("a stamp"));
        }
    })
    .unwrap();
    assert_eq!(stamps.len(), 2);
    assert_eq!(stamps[0].due_ns, stamp::unix_ns(t));
    assert_eq!(stamps[1].due_ns - stamps[0].due_ns, 20_000_000);
    for s in &stamps {
        assert!((before..=after).contains(&s.sent_ns), "{s:?}");
    }
    // Unstamped by default, and a stamp alone when no size is given.
    let (mut w, _) = open("/ws/push?count=1&stamp=1");
    w.push_from(t);
    let mut out = Vec::new();
    w.push_next(&mut out);
    assert_eq!(out[1] as usize, stamp::LEN);
}

/// A handshake to `path` offering `offer`: the connection and what was answered.
fn offered(path: &str, offer: &str) -> (Box<WsConn>, String) {
    let mut out = Vec::new();
    let extra = format!("Sec-WebSocket-Extensions: {offer}\r\n");
    match answer(&head("GET", path, KEY, "13", &extra), &mut out) {
        Handshake::Upgraded(w) => (w, String::from_utf8(out).unwrap()),
        Handshake::Refused => panic!("refused: {}", String::from_utf8_lossy(&out)),
    }
}

#[test]
fn the_echo_takes_permessage_deflate_and_answers_compressed() {
    let offer = "x-webkit-deflate-frame, permessage-deflate; server_max_window_bits=7, permessage-deflate; client_no_context_takeover; client_max_window_bits";
    let (mut w, said) = offered("/ws/echo", offer);
    // The first offer it can take, answered with what it keeps to.
    assert!(
        said.contains(
            "\r\nSec-WebSocket-Extensions: permessage-deflate; client_no_context_takeover\r\n"
        ),
        "{said}"
    );
    // A client that resets its context per message: two compressed messages, each
    // inflated on its own; the echoes come compressed, in the server's kept context.
    let text = "the same words again and again, ".repeat(20);
    let mut d = deflate::Params {
        client_no_context_takeover: true,
        ..deflate::Params::default()
    }
    .deflater(false);
    let mut frames = Vec::new();
    for _ in 0..2 {
        let mut payload = Vec::new();
        assert!(d.message(text.as_bytes(), &mut payload));
        ws::frame(
            &mut frames,
            (true, true),
            ws::TEXT,
            &payload,
            Some([9, 8, 7, 6]),
        );
    }
    let mut out = Vec::new();
    for piece in frames.chunks(3) {
        assert!(!w.feed(piece, &mut out));
    }
    assert!(out.len() < text.len() / 4, "{} bytes", out.len());
    let mut r = Reader::new(ReaderOptions {
        peer_is_client: false,
        max_message: 1 << 20,
        keep: true,
    });
    r.inflate(false);
    let mut got = Vec::new();
    r.feed(&out, &mut |e| {
        if let Event::Message {
            compressed, data, ..
        } = e
        {
            assert!(compressed);
            got.push(String::from_utf8(data.to_vec()).unwrap());
        }
    })
    .unwrap();
    assert_eq!(got, [text.clone(), text]);
}

#[test]
fn deflate_offers_it_cannot_take_and_other_endpoints_are_declined() {
    for offer in [
        "permessage-deflate; server_max_window_bits=16",
        "permessage-deflate; client_max_window_bits=x",
        "permessage-deflate; mystery",
        "deflate-stream",
    ] {
        let (_, said) = offered("/ws/echo", offer);
        assert!(!said.contains("Extensions"), "{offer}: {said}");
    }
    for path in ["/ws/room", "/ws/push?count=1"] {
        let (_, said) = offered(path, "permessage-deflate");
        assert!(!said.contains("Extensions"), "{path}: {said}");
    }
    // A window of 2^8 is taken, and honoured by answering uncompressed.
    let (mut w, said) = offered("/ws/echo", "permessage-deflate; server_max_window_bits=8");
    assert!(
        said.contains("permessage-deflate; server_max_window_bits=8\r\n"),
        "{said}"
    );
    let mut out = Vec::new();
    w.feed(&client(ws::TEXT, b"plain"), &mut out);
    assert_eq!(out[0] & 0x40, 0, "no RSV1");
    assert_eq!(events(&out), ["text plain"]);
    // Without the extension, RSV1 is answered with 1002.
    let (mut w, _) = open("/ws/echo");
    let mut f = Vec::new();
    ws::frame(&mut f, (true, true), ws::TEXT, b"x", Some([1, 2, 3, 4]));
    let mut out = Vec::new();
    assert!(w.feed(&f, &mut out));
    assert!(
        events(&out)[0].starts_with("close Some(1002)"),
        "{:?}",
        events(&out)
    );
}
