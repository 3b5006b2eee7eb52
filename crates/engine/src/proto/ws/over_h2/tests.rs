//! WebSocket over HTTP/2 on bytes alone: the preface and the CONNECT after the
//! server's SETTINGS, its fields, the answer's checks, messages framed as DATA within
//! the windows, frames however the bytes are cut, and the stream's end each way.

use super::super::{ErrorKind, Event, WsClient};
use super::*;
use crate::WsLoad;
use stampede_wire::ws;

const REQUEST: &[u8] = b"GET /ws/echo?room=a HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: chat\r\nX-Trace: 7\r\n\r\n";

fn frame_bytes(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    frame::head(&mut f, payload.len(), kind, flags, stream);
    f.extend_from_slice(payload);
    f
}

/// The frames in `out`: kind, flags, stream, payload.
fn frames(mut out: &[u8]) -> Vec<(u8, u8, u32, Vec<u8>)> {
    let mut all = Vec::new();
    while let Some(h) = Head::parse(out) {
        all.push((h.kind, h.flags, h.stream, out[9..9 + h.len].to_vec()));
        out = &out[9 + h.len..];
    }
    assert!(out.is_empty(), "a cut frame");
    all
}

fn settings(pairs: &[(u16, u32)]) -> Vec<u8> {
    let mut b = Vec::new();
    frame::settings(&mut b, pairs);
    b
}

fn enabled() -> Vec<u8> {
    settings(&[(frame::SETTINGS_ENABLE_CONNECT_PROTOCOL, 1)])
}

fn answer(status: &str, fields: &[(&str, &str)], end: bool) -> Vec<u8> {
    let mut b = Vec::new();
    hpack::literal(&mut b, b":status", status.as_bytes());
    for (n, v) in fields {
        hpack::literal(&mut b, n.as_bytes(), v.as_bytes());
    }
    let flags = frame::END_HEADERS | if end { frame::END_STREAM } else { 0 };
    frame_bytes(frame::HEADERS, flags, STREAM, &b)
}

fn server_frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    ws::frame(&mut f, (true, false), opcode, payload, None);
    f
}

/// Takes a client's output.
fn take(c: &mut WsClient) -> Vec<u8> {
    let out = c.unwritten().to_vec();
    c.wrote(out.len());
    out
}

/// What a server reads from the DATA on the stream in `out`: each message, the
/// close, and whether the stream ended.
fn server_reads(out: &[u8]) -> (Vec<String>, bool) {
    let mut data = Vec::new();
    let mut ended = false;
    for (kind, flags, stream, payload) in frames(out) {
        if kind == frame::DATA {
            assert_eq!(stream, STREAM);
            data.extend_from_slice(&payload);
            ended |= flags & frame::END_STREAM != 0;
        }
    }
    let mut r = ws::Reader::new(ws::ReaderOptions {
        peer_is_client: true,
        max_message: 1 << 20,
        keep: true,
    });
    let mut got = Vec::new();
    r.feed(&data, &mut |ev| match ev {
        ws::Event::Message { data, .. } => got.push(String::from_utf8_lossy(data).into_owned()),
        ws::Event::Close { code, .. } => got.push(format!("close {code:?}")),
        ws::Event::Ping(_) => got.push("ping".into()),
        ws::Event::Pong(p) => got.push(format!("pong {}", String::from_utf8_lossy(p))),
    })
    .expect("a client's frames keep the rules");
    (got, ended)
}

/// A client over HTTP/2 with `queued` messages queued, past the server's SETTINGS
/// (`server`) and the `200`; its output after the preface.
fn opened(load: &WsLoad, queued: usize, server: &[u8]) -> (WsClient, Vec<u8>) {
    let mut c = WsClient::over_h2(load, REQUEST, false, false);
    c.queue(queued);
    take(&mut c);
    let mut ev = Vec::new();
    let mut input = server.to_vec();
    input.extend(answer("200", &[("sec-websocket-protocol", "chat")], false));
    c.feed(&input, &mut ev).unwrap();
    assert!(ev.is_empty() && c.take_upgraded() && c.open());
    let out = take(&mut c);
    (c, out)
}

fn load() -> WsLoad {
    let mut l = WsLoad::text("hello");
    l.protocols = vec!["chat".into()];
    l
}

#[test]
fn the_connect_waits_for_the_servers_settings_and_carries_the_upgrade_as_fields() {
    let mut c = WsClient::over_h2(&load(), REQUEST, false, false);
    c.queue(2);
    let first = take(&mut c);
    assert!(first.starts_with(frame::PREFACE));
    let sent = frames(&first[frame::PREFACE.len()..]);
    // SETTINGS and the connection's window: no stream opened before the server said.
    assert_eq!(
        sent.iter().map(|f| f.0).collect::<Vec<_>>(),
        [frame::SETTINGS, frame::WINDOW_UPDATE]
    );
    let mut ev = Vec::new();
    c.feed(&enabled(), &mut ev).unwrap();
    let out = frames(&take(&mut c));
    assert_eq!((out[0].0, out[0].1), (frame::SETTINGS, frame::ACK));
    assert_eq!((out[1].0, out[1].2), (frame::HEADERS, STREAM));
    assert_eq!(out[1].1, frame::END_HEADERS, "the stream stays open");
    let mut fields = Vec::new();
    hpack::Decoder::new()
        .decode(&out[1].3, |n, v| {
            fields.push(format!(
                "{}: {}",
                String::from_utf8_lossy(n),
                String::from_utf8_lossy(v)
            ))
        })
        .unwrap();
    assert_eq!(
        fields,
        [
            ":method: CONNECT",
            ":protocol: websocket",
            ":scheme: http",
            ":path: /ws/echo?room=a",
            ":authority: 127.0.0.1:8080",
            "sec-websocket-version: 13",
            "sec-websocket-protocol: chat",
            "x-trace: 7",
        ]
    );
    // The messages queued wait for the 200, then go as DATA.
    assert_eq!(out.len(), 2);
    c.feed(&answer("200", &[], false), &mut ev).unwrap();
    assert!(c.take_upgraded());
    let (got, ended) = server_reads(&take(&mut c));
    assert_eq!(got, ["hello", "hello"]);
    assert!(!ended);
}

#[test]
fn echoes_answer_however_the_frames_are_cut() {
    let (mut c, _) = opened(&load(), 3, &enabled());
    let mut bytes = Vec::new();
    for m in ["hello", "hello", "hello"] {
        bytes.extend(frame_bytes(
            frame::DATA,
            0,
            STREAM,
            &server_frame(ws::TEXT, m.as_bytes()),
        ));
    }
    // A PING among them is answered.
    bytes.extend(frame_bytes(frame::PING, 0, 0, b"12345678"));
    let mut ev = Vec::new();
    for piece in bytes.chunks(5) {
        c.feed(piece, &mut ev).unwrap();
    }
    assert_eq!(
        ev.iter()
            .filter(|e| matches!(e, Event::Response(_)))
            .count(),
        3
    );
    let out = frames(&take(&mut c));
    assert!(out
        .iter()
        .any(|f| f.0 == frame::PING && f.1 == frame::ACK && f.3 == b"12345678"));
}

#[test]
fn data_waits_for_the_servers_windows() {
    // A stream window of 10 bytes: 10 of the two messages' 22 framed bytes go.
    let server = settings(&[
        (frame::SETTINGS_ENABLE_CONNECT_PROTOCOL, 1),
        (frame::SETTINGS_INITIAL_WINDOW_SIZE, 10),
    ]);
    let (mut c, out) = opened(&load(), 2, &server);
    let data: usize = frames(&out)
        .iter()
        .filter(|f| f.0 == frame::DATA)
        .map(|f| f.3.len())
        .sum();
    assert_eq!(data, 10, "the stream's window");
    // The stream's window opens: the rest follows.
    let mut ev = Vec::new();
    c.feed(
        &frame_bytes(frame::WINDOW_UPDATE, 0, STREAM, &100u32.to_be_bytes()),
        &mut ev,
    )
    .unwrap();
    let rest = take(&mut c);
    let mut all = out.clone();
    all.extend(rest);
    assert_eq!(server_reads(&all).0, ["hello", "hello"]);
}

#[test]
fn what_is_read_opens_our_windows_again() {
    let (mut c, _) = opened(&load(), 1, &enabled());
    // One message over many DATA frames: 640,000 bytes, past half our window.
    let big = server_frame(ws::BINARY, &vec![b'x'; 640_000]);
    let mut ev = Vec::new();
    let mut updates = 0;
    for piece in big.chunks(16_000) {
        c.feed(&frame_bytes(frame::DATA, 0, STREAM, piece), &mut ev)
            .unwrap();
        updates += frames(&take(&mut c))
            .iter()
            .filter(|f| f.0 == frame::WINDOW_UPDATE)
            .count();
    }
    // The connection's and the stream's, once; the message answered whole.
    assert_eq!(updates, 2);
    assert_eq!(ev.len(), 1);
}

#[test]
fn refusals_and_broken_answers_fail_by_kind() {
    // Refused with a status.
    let mut c = WsClient::over_h2(&load(), REQUEST, false, false);
    let mut ev = Vec::new();
    let mut input = enabled();
    input.extend(answer("403", &[], true));
    assert_eq!(c.feed(&input, &mut ev).unwrap_err().0, ErrorKind::WsUpgrade);
    assert_eq!(c.refused(), Some(403));
    // A 200 that ends the stream with it: nothing opened, no status refused.
    let mut c = WsClient::over_h2(&load(), REQUEST, false, false);
    let mut input = enabled();
    input.extend(answer("200", &[], true));
    assert_eq!(
        c.feed(&input, &mut ev).unwrap_err().0,
        ErrorKind::WsHandshake
    );
    assert_eq!(c.refused(), None);
    // A subprotocol that was not offered.
    let mut c = WsClient::over_h2(&WsLoad::text("x"), REQUEST, false, false);
    let mut input = enabled();
    input.extend(answer("200", &[("sec-websocket-protocol", "other")], false));
    assert_eq!(
        c.feed(&input, &mut ev).unwrap_err().0,
        ErrorKind::WsHandshake
    );
    // Compression asked for and not taken.
    let mut l = load();
    l.deflate = true;
    let mut c = WsClient::over_h2(&l, REQUEST, false, false);
    let mut input = enabled();
    input.extend(answer("200", &[], false));
    assert_eq!(
        c.feed(&input, &mut ev).unwrap_err().0,
        ErrorKind::WsDeflateDeclined
    );
    // A server without extended CONNECT, and one that is no HTTP/2 server.
    let mut c = WsClient::over_h2(&load(), REQUEST, false, false);
    assert_eq!(
        c.feed(&settings(&[]), &mut ev).unwrap_err().0,
        ErrorKind::WsHandshake
    );
    let mut c = WsClient::over_h2(&load(), REQUEST, false, false);
    let page = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
    assert_eq!(c.feed(page, &mut ev).unwrap_err().0, ErrorKind::WsHandshake);
    // DATA before the answer, and a frame past our size.
    let mut c = WsClient::over_h2(&load(), REQUEST, false, false);
    let mut input = enabled();
    input.extend(frame_bytes(frame::DATA, 0, STREAM, b"x"));
    assert_eq!(
        c.feed(&input, &mut ev).unwrap_err().0,
        ErrorKind::WsProtocol
    );
    let (mut c, _) = opened(&load(), 1, &enabled());
    let mut huge = Vec::new();
    frame::head(&mut huge, 20_000, frame::DATA, 0, STREAM);
    assert_eq!(c.feed(&huge, &mut ev).unwrap_err().0, ErrorKind::WsProtocol);
    assert!(ev.is_empty());
}

#[test]
fn the_stream_ending_without_a_close_is_abnormal_and_after_one_is_the_end() {
    // The server ends its side (or resets) without a close.
    for end in [
        frame_bytes(frame::DATA, frame::END_STREAM, STREAM, &[]),
        frame_bytes(frame::RST_STREAM, 0, STREAM, &frame::CANCEL.to_be_bytes()),
    ] {
        let (mut c, _) = opened(&load(), 1, &enabled());
        let mut ev = Vec::new();
        assert_eq!(c.feed(&end, &mut ev).unwrap_err().0, ErrorKind::WsClosed);
        assert_eq!(c.close_code(), None);
    }
    // The server's close, then its end: the close answered, our side ended with it.
    let (mut c, _) = opened(&load(), 1, &enabled());
    let mut input = frame_bytes(
        frame::DATA,
        0,
        STREAM,
        &server_frame(ws::CLOSE, &1001u16.to_be_bytes()),
    );
    input.extend(frame_bytes(frame::DATA, frame::END_STREAM, STREAM, &[]));
    let mut ev = Vec::new();
    assert_eq!(c.feed(&input, &mut ev).unwrap_err().0, ErrorKind::WsClosed);
    assert_eq!(c.close_code(), Some(Some(1001)));
    let (got, ended) = server_reads(&take(&mut c));
    assert_eq!(got, ["close Some(1001)"]);
    assert!(ended);
    // Our goodbye: the close with END_STREAM, and the server's reset after it is
    // the end.
    let (mut c, _) = opened(&load(), 0, &enabled());
    c.goodbye(ws::NORMAL);
    let (got, ended) = server_reads(&take(&mut c));
    assert_eq!(got, ["close Some(1000)"]);
    assert!(ended);
    let reset = frame_bytes(frame::RST_STREAM, 0, STREAM, &frame::NO_ERROR.to_be_bytes());
    c.feed(&reset, &mut Vec::new()).unwrap();
}
