//! The WebSocket client connection on bytes alone: its upgrade request, the 101's
//! checks, messages masked and read back as a server reads them, answers however
//! the bytes are cut, pings, closes and every broken rule with its kind.

use super::*;

pub(crate) fn load() -> WsLoad {
    WsLoad::text("hello")
}

pub(in crate::proto) const REQUEST: &[u8] = b"GET /ws/echo HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\r\n";

/// The key the client's upgrade request carries.
pub(in crate::proto) fn key_of(out: &[u8]) -> String {
    let text = std::str::from_utf8(out).unwrap();
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("Sec-WebSocket-Key: "))
        .expect("a key");
    line.to_string()
}

pub(in crate::proto) fn answer(key: &str, extra: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n{extra}\r\n",
        ws::accept_key(key.as_bytes())
    )
    .into_bytes()
}

/// A client whose upgrade was answered, its output taken.
fn upgraded(l: &WsLoad, queued: usize) -> (WsClient, Vec<u8>) {
    let mut c = WsClient::seeded(l, REQUEST, 7, false);
    c.queue(queued);
    let key = key_of(c.unwritten());
    let n = c.unwritten().len();
    c.wrote(n);
    let mut ev = Vec::new();
    c.feed(&answer(&key, ""), &mut ev).unwrap();
    assert!(ev.is_empty() && c.take_upgraded() && c.open());
    let out = c.unwritten().to_vec();
    c.wrote(out.len());
    (c, out)
}

/// What a server reads from `bytes`: each message's text.
fn server_reads(bytes: &[u8]) -> Vec<String> {
    let mut r = Reader::new(ReaderOptions {
        peer_is_client: true,
        max_message: 1 << 20,
        keep: true,
    });
    let mut got = Vec::new();
    r.feed(bytes, &mut |ev| match ev {
        WsEvent::Message { data, .. } => got.push(String::from_utf8(data.to_vec()).unwrap()),
        WsEvent::Close { code, .. } => got.push(format!("close {code:?}")),
        WsEvent::Ping(_) => got.push("ping".into()),
        WsEvent::Pong(p) => got.push(format!("pong {}", String::from_utf8_lossy(p))),
    })
    .expect("a client's frames keep the rules");
    got
}

fn server_frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    ws::frame(&mut f, (true, false), opcode, payload, None);
    f
}

fn responses(ev: &[Event]) -> Vec<(u16, u64)> {
    ev.iter()
        .map(|e| match e {
            Event::Response(r) => (r.status, r.body),
            other => panic!("{other:?}"),
        })
        .collect()
}

#[test]
fn the_upgrade_carries_a_fresh_valid_key_and_messages_wait_for_the_101() {
    let mut a = WsClient::seeded(&load(), REQUEST, 1, false);
    let b = WsClient::seeded(&load(), REQUEST, 2, false);
    let out = a.unwritten().to_vec();
    assert!(out.starts_with(b"GET /ws/echo HTTP/1.1\r\n"));
    assert!(out.ends_with(b"\r\n\r\n") && !out.ends_with(b"\r\n\r\n\r\n"));
    let key = key_of(&out);
    assert!(ws::valid_key(key.as_bytes()), "{key}");
    assert_ne!(key, key_of(b.unwritten()), "each connection its own key");
    // Queued before the answer: nothing but the upgrade goes out.
    a.queue(3);
    assert_eq!(a.unwritten(), &out[..]);
    a.wrote(out.len());
    assert!(a.unwritten().is_empty() && !a.open());
    // The 101 with a message of the server's in the same bytes.
    let mut bytes = answer(&key, "");
    bytes.extend(server_frame(ws::TEXT, b"hello"));
    let mut ev = Vec::new();
    a.feed(&bytes, &mut ev).unwrap();
    assert!(a.take_upgraded() && !a.take_upgraded());
    assert_eq!(responses(&ev), [(101, 5)]);
    // The three waiting messages, each masked with its own key.
    let sent = a.unwritten().to_vec();
    assert_eq!(server_reads(&sent), ["hello", "hello", "hello"]);
    let masks: Vec<&[u8]> = vec![&sent[2..6], &sent[13..17], &sent[24..28]];
    assert!(masks[0] != masks[1] && masks[1] != masks[2], "{masks:?}");
}

#[test]
fn answers_come_whole_however_the_bytes_are_cut() {
    let mut stream = Vec::new();
    stream.extend(server_frame(ws::TEXT, b"hello"));
    stream.extend(server_frame(ws::BINARY, &[7u8; 300]));
    // A fragmented text message with a ping between its frames.
    let mut f = Vec::new();
    ws::frame(&mut f, (false, false), ws::TEXT, b"ab", None);
    ws::frame(&mut f, (true, false), ws::PING, b"p", None);
    ws::frame(&mut f, (true, false), ws::CONTINUATION, b"cd", None);
    stream.extend(f);
    for cut in 0..stream.len() {
        let (mut c, _) = upgraded(&load(), 0);
        let mut ev = Vec::new();
        c.feed(&stream[..cut], &mut ev).unwrap();
        c.feed(&stream[cut..], &mut ev).unwrap();
        assert_eq!(
            responses(&ev),
            [(101, 5), (101, 300), (101, 4)],
            "cut {cut}"
        );
        match &ev[1] {
            Event::Response(r) => assert!(r.reused && r.fresh && !r.close),
            _ => unreachable!(),
        }
        assert_eq!(server_reads(c.unwritten()), ["pong p"], "cut {cut}");
    }
}

#[test]
fn binary_messages_and_the_goodbye() {
    let mut l = load();
    l.binary = true;
    l.message = std::sync::Arc::from(&[0xffu8, 0, 1][..]);
    let (mut c, out) = upgraded(&l, 1);
    assert_eq!(out[0], 0x80 | ws::BINARY);
    c.goodbye(ws::NORMAL);
    assert_eq!(server_reads(c.unwritten()), ["close Some(1000)"]);
    assert!(!c.open());
    c.queue(1);
    assert_eq!(
        server_reads(c.unwritten()),
        ["close Some(1000)"],
        "nothing after the close"
    );
}

#[test]
fn the_servers_close_is_answered_and_fails_what_waits() {
    let (mut c, _) = upgraded(&load(), 1);
    let mut payload = 1001u16.to_be_bytes().to_vec();
    payload.extend_from_slice(b"bye");
    let mut ev = Vec::new();
    let e = c
        .feed(&server_frame(ws::CLOSE, &payload), &mut ev)
        .unwrap_err();
    assert_eq!(e.0, ErrorKind::WsClosed);
    assert_eq!(c.close_code(), Some(Some(1001)));
    assert_eq!(server_reads(c.unwritten()), ["close Some(1001)"]);
    // A close without a code is answered without one.
    let (mut c, _) = upgraded(&load(), 1);
    let e = c.feed(&server_frame(ws::CLOSE, b""), &mut ev).unwrap_err();
    assert_eq!((e.0, c.close_code()), (ErrorKind::WsClosed, Some(None)));
    assert_eq!(server_reads(c.unwritten()), ["close None"]);
}

#[test]
fn each_broken_rule_fails_by_kind_with_its_close_code() {
    let mut masked = Vec::new();
    ws::frame(
        &mut masked,
        (true, false),
        ws::TEXT,
        b"hi",
        Some([1, 2, 3, 4]),
    );
    let mut big = Vec::new();
    ws::head(&mut big, (true, false), ws::BINARY, 17 << 20, None);
    let cases: [(&str, Vec<u8>, ErrorKind, u16); 5] = [
        ("masked", masked, ErrorKind::WsProtocol, 1002),
        (
            "reserved opcode",
            vec![0x83, 0],
            ErrorKind::WsProtocol,
            1002,
        ),
        ("rsv1", vec![0xc1, 0], ErrorKind::WsProtocol, 1002),
        (
            "bad utf-8",
            server_frame(ws::TEXT, &[0xc3, 0x28]),
            ErrorKind::WsInvalidText,
            1007,
        ),
        ("too big", big, ErrorKind::WsTooBig, 1009),
    ];
    for (what, bytes, kind, code) in cases {
        let (mut c, _) = upgraded(&load(), 1);
        let mut ev = Vec::new();
        let e = c.feed(&bytes, &mut ev).unwrap_err();
        assert_eq!(e.0, kind, "{what}");
        assert!(ev.is_empty(), "{what}");
        assert_eq!(
            server_reads(c.unwritten()),
            [format!("close Some({code})")],
            "{what}"
        );
        assert!(!c.open());
    }
}

#[test]
fn a_refused_or_broken_upgrade_fails_by_kind() {
    // Refused, with a page or an error: the status is kept, nothing is answered.
    for status in [200u16, 404, 426] {
        let mut c = WsClient::seeded(&load(), REQUEST, 3, false);
        c.queue(1);
        let mut ev = Vec::new();
        let head = format!("HTTP/1.1 {status} X\r\nContent-Length: 0\r\n\r\n");
        let e = c.feed(head.as_bytes(), &mut ev).unwrap_err();
        assert_eq!((e.0, c.refused()), (ErrorKind::WsUpgrade, Some(status)));
        assert!(ev.is_empty() && !c.open());
    }
    // 101s that break the handshake.
    type Answer = fn(&str) -> Vec<u8>;
    let broken: [(&str, Answer); 5] = [
        ("wrong accept", |_| answer("dGhlIHNhbXBsZSBub25jZQ==", "")),
        ("extension", |k| {
            answer(k, "Sec-WebSocket-Extensions: permessage-deflate\r\n")
        }),
        ("subprotocol not offered", |k| {
            answer(k, "Sec-WebSocket-Protocol: chat\r\n")
        }),
        ("no upgrade", |k| {
            format!(
                "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n\r\n",
                ws::accept_key(k.as_bytes())
            )
            .into_bytes()
        }),
        ("not http", |_| b"SSH-2.0-OpenSSH\r\n\r\n".to_vec()),
    ];
    for (what, make) in broken {
        let mut c = WsClient::seeded(&load(), REQUEST, 4, false);
        c.queue(1);
        let key = key_of(c.unwritten());
        let mut ev = Vec::new();
        let e = c.feed(&make(&key), &mut ev).unwrap_err();
        assert_eq!(e.0, ErrorKind::WsHandshake, "{what}");
        assert!(ev.is_empty() && !c.open(), "{what}");
    }
    // A subprotocol that was offered is taken; a "Connection" with several tokens too.
    let mut l = load();
    l.protocols = vec!["chat".into(), "superchat".into()];
    let mut c = WsClient::seeded(&l, REQUEST, 5, false);
    let key = key_of(c.unwritten());
    let ok = format!(
        "HTTP/1.1 101 OK\r\nupgrade: WebSocket\r\nconnection: keep-alive, upgrade\r\nsec-websocket-accept: {}\r\nSec-WebSocket-Protocol: superchat\r\n\r\n",
        ws::accept_key(key.as_bytes())
    );
    c.feed(ok.as_bytes(), &mut Vec::new()).unwrap();
    assert!(c.open());
}

#[test]
fn an_endless_upgrade_answer_is_refused_at_its_limit() {
    let mut c = WsClient::seeded(&load(), REQUEST, 6, false);
    let mut ev = Vec::new();
    c.feed(b"HTTP/1.1 101 Switching Protocols\r\n", &mut ev)
        .unwrap();
    let line = [b'x'; 1000];
    let mut failed = None;
    for i in 0..32 {
        if let Err(e) = c.feed(&line, &mut ev) {
            failed = Some((i, e.0));
            break;
        }
    }
    let (i, kind) = failed.expect("refused");
    assert_eq!(kind, ErrorKind::WsHandshake);
    assert!(i < 17, "refused within 16 KiB, at {i}");
}

#[test]
fn a_ping_flood_to_a_client_whose_output_waits_is_bounded() {
    let (mut c, _) = upgraded(&load(), 0);
    let ping = server_frame(ws::PING, &[1u8; 100]);
    let mut ev = Vec::new();
    for _ in 0..10_000 {
        c.feed(&ping, &mut ev).unwrap();
    }
    let queued = c.unwritten().len();
    assert!(
        (MAX_QUEUED_PONGS..MAX_QUEUED_PONGS + 128).contains(&queued),
        "{queued}"
    );
    // Taken: the next ping is answered again.
    c.wrote(queued);
    c.feed(&ping, &mut ev).unwrap();
    assert_eq!(c.unwritten().len(), 106);
    assert!(ev.is_empty());
}

#[test]
fn with_deflate_messages_go_compressed_and_answers_inflate() {
    let mut l = load();
    l.message = "compress me, compress me, compress me".as_bytes().into();
    l.deflate = true;
    let mut c = WsClient::seeded(&l, REQUEST, 7, false);
    c.queue(2);
    let key = key_of(c.unwritten());
    let n = c.unwritten().len();
    c.wrote(n);
    let mut ev = Vec::new();
    let taken = "Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover; client_max_window_bits=10\r\n";
    c.feed(&answer(&key, taken), &mut ev).unwrap();
    assert!(ev.is_empty() && c.take_upgraded() && c.open());
    // The two messages that waited went out compressed (RSV1), each smaller than the
    // text, and a server with the extension reads the text back.
    let out = c.unwritten().to_vec();
    c.wrote(out.len());
    assert_eq!(out[0] & 0x40, 0x40, "RSV1 on the first frame");
    assert!(out.len() < 2 * (6 + l.message.len()), "{} bytes", out.len());
    let mut r = Reader::new(ReaderOptions {
        peer_is_client: true,
        max_message: 1 << 20,
        keep: true,
    });
    r.inflate(false);
    let mut got = Vec::new();
    r.feed(&out, &mut |e| {
        if let WsEvent::Message {
            data, compressed, ..
        } = e
        {
            assert!(compressed);
            got.push(data.to_vec());
        }
    })
    .unwrap();
    assert_eq!(got, [l.message.to_vec(), l.message.to_vec()]);
    // The server resets its context per message, as it said: each answer inflates on
    // its own, and counts as its inflated length.
    let text = "an answer, an answer, an answer, an answer".repeat(10);
    let mut p = deflate::Params {
        server_no_context_takeover: true,
        ..deflate::Params::default()
    }
    .deflater(true);
    let mut frames = Vec::new();
    for _ in 0..2 {
        let mut payload = Vec::new();
        assert!(p.message(text.as_bytes(), &mut payload));
        ws::frame(&mut frames, (true, true), ws::TEXT, &payload, None);
    }
    for piece in frames.chunks(5) {
        c.feed(piece, &mut ev).unwrap();
    }
    let n = text.len() as u64;
    assert_eq!(responses(&ev), [(UPGRADED, n), (UPGRADED, n)]);
}

#[test]
fn deflate_declined_or_answered_wrong_fails_by_kind() {
    let mut l = load();
    l.deflate = true;
    for (extra, kind) in [
        ("", ErrorKind::WsDeflateDeclined),
        ("Sec-WebSocket-Extensions: x-webkit-deflate-frame\r\n", ErrorKind::WsHandshake),
        (
            "Sec-WebSocket-Extensions: permessage-deflate; server_max_window_bits=16\r\n",
            ErrorKind::WsHandshake,
        ),
        (
            "Sec-WebSocket-Extensions: permessage-deflate\r\nSec-WebSocket-Extensions: permessage-deflate\r\n",
            ErrorKind::WsHandshake,
        ),
    ] {
        let mut c = WsClient::seeded(&l, REQUEST, 7, false);
        c.queue(1);
        let key = key_of(c.unwritten());
        let mut ev = Vec::new();
        let e = c.feed(&answer(&key, extra), &mut ev).unwrap_err();
        assert_eq!(e.0, kind, "{extra:?}");
    }
    // Parameters asked of the server: an answer without them fails, one with them
    // is taken.
    l.deflate_params = "server_no_context_takeover; server_max_window_bits=10".into();
    for (extra, ok) in [
        ("permessage-deflate", false),
        ("permessage-deflate; server_no_context_takeover", false),
        (
            "permessage-deflate; server_no_context_takeover; server_max_window_bits=12",
            false,
        ),
        (
            "permessage-deflate; server_no_context_takeover; server_max_window_bits=10",
            true,
        ),
        (
            "permessage-deflate; server_no_context_takeover; server_max_window_bits=9",
            true,
        ),
    ] {
        let mut c = WsClient::seeded(&l, REQUEST, 7, false);
        let key = key_of(c.unwritten());
        let mut ev = Vec::new();
        let got = c.feed(
            &answer(&key, &format!("Sec-WebSocket-Extensions: {extra}\r\n")),
            &mut ev,
        );
        assert_eq!(got.is_ok(), ok, "{extra}");
        if !ok {
            assert_eq!(got.unwrap_err().0, ErrorKind::WsHandshake, "{extra}");
        }
    }
    // Not asked for, the extension is a broken handshake, and RSV1 a broken rule.
    let l = load();
    let mut c = WsClient::seeded(&l, REQUEST, 7, false);
    let key = key_of(c.unwritten());
    let mut ev = Vec::new();
    let taken = "Sec-WebSocket-Extensions: permessage-deflate\r\n";
    let e = c.feed(&answer(&key, taken), &mut ev).unwrap_err();
    assert_eq!(e.0, ErrorKind::WsHandshake);
    let (mut c, _) = upgraded(&l, 1);
    let mut f = Vec::new();
    ws::frame(
        &mut f,
        (true, true),
        ws::TEXT,
        &[0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00],
        None,
    );
    assert_eq!(c.feed(&f, &mut ev).unwrap_err().0, ErrorKind::WsProtocol);
}

#[test]
fn an_expected_answer_is_the_next_message_holding_it_the_others_counted() {
    let mut l = load();
    l.expect = Some(std::sync::Arc::from(&b"id=7"[..]));
    let (mut c, _) = upgraded(&l, 1);
    let mut ev = Vec::new();
    // Another member's message, then the answer — cut mid-frame.
    let mut bytes = server_frame(ws::TEXT, b"id=6 from someone else");
    bytes.extend(server_frame(ws::TEXT, b"mine: id=7"));
    let (a, b) = bytes.split_at(30);
    c.feed(a, &mut ev).unwrap();
    c.feed(b, &mut ev).unwrap();
    assert_eq!(responses(&ev), [(UPGRADED, 10)]);
    assert_eq!(c.take_unmatched(), 1);
    assert_eq!(c.take_unmatched(), 0, "taken once");
    // Each message made with its own expectation: answered in order.
    let mut c = WsClient::seeded(&l, REQUEST, 7, false);
    c.queue_made(b"a", b"<a>");
    c.queue_made(b"b", b"<b>");
    let key = key_of(c.unwritten());
    c.wrote(c.unwritten().len());
    let mut ev = Vec::new();
    c.feed(&answer(&key, ""), &mut ev).unwrap();
    assert_eq!(server_reads(c.unwritten()), ["a", "b"]);
    let mut bytes = server_frame(ws::TEXT, b"<b> early");
    bytes.extend(server_frame(ws::TEXT, b"<a>"));
    bytes.extend(server_frame(ws::TEXT, b"<b>!"));
    c.feed(&bytes, &mut ev).unwrap();
    assert_eq!(responses(&ev), [(UPGRADED, 3), (UPGRADED, 4)]);
    assert_eq!(c.take_unmatched(), 1);
}
