//! WebSocket over HTTP/2 against hand-built frames: the setting, the extended
//! CONNECT and its refusals, echoes, the close both ways, a push and a client that
//! reads nothing.

use super::super::tests::{frame_bytes, frames};
use super::*;
use crate::request::Limits;
use stampede_wire::hpack;
use stampede_wire::ws;

/// An extended CONNECT on `stream` with `fields` after the pseudo-headers
/// (`:method`, `:protocol`, `:path` as given).
fn connect(
    stream: u32,
    method: &str,
    protocol: &str,
    path: &str,
    fields: &[(&str, &str)],
    end: bool,
) -> Vec<u8> {
    let mut b = Vec::new();
    hpack::literal(&mut b, b":method", method.as_bytes());
    if !protocol.is_empty() {
        hpack::literal(&mut b, b":protocol", protocol.as_bytes());
    }
    hpack::literal(&mut b, b":scheme", b"http");
    hpack::literal(&mut b, b":path", path.as_bytes());
    hpack::literal(&mut b, b":authority", b"h");
    for (n, v) in fields {
        hpack::literal(&mut b, n.as_bytes(), v.as_bytes());
    }
    let flags = frame::END_HEADERS | if end { frame::END_STREAM } else { 0 };
    frame_bytes(frame::HEADERS, flags, stream, &b)
}

const V13: (&str, &str) = ("sec-websocket-version", "13");

/// A client's masked frame.
fn client_frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    ws::frame(&mut f, (true, false), opcode, payload, Some([1, 2, 3, 4]));
    f
}

/// A connection past the preface and settings with `input` fed, its streams
/// routed as the event loop routes tunnels; what it wrote after its settings, and
/// how each was routed.
fn serve(input: &[u8]) -> (H2Conn, Vec<u8>, Vec<Routed>) {
    let mut out = Vec::new();
    let mut c = H2Conn::new(Limits::default(), &mut out);
    let mut all = frame::PREFACE.to_vec();
    all.extend(frame_bytes(frame::SETTINGS, 0, 0, &[]));
    all.extend_from_slice(input);
    out.clear();
    c.feed(&all, &mut out).unwrap();
    let routed = route(&mut c, &mut out);
    (c, out, routed)
}

/// [`serve`] with an echo opened on stream 1.
fn open_echo() -> (H2Conn, Vec<u8>, Vec<Routed>) {
    serve(&connect(
        1,
        "CONNECT",
        "websocket",
        "/ws/echo",
        &[V13],
        false,
    ))
}

fn route(c: &mut H2Conn, out: &mut Vec<u8>) -> Vec<Routed> {
    let (mut p, mut body) = (Vec::new(), Vec::new());
    let mut routed = Vec::new();
    while let Some(ready) = c.next_ready(&mut p, &mut body) {
        assert!(ready.tunnel != Tunnel::None, "only tunnels here");
        routed.push(c.open_socket(out, (ready.stream, ready.tunnel), &p, &body, (b"d", b"s")));
    }
    routed
}

/// The header blocks' fields, the DATA's bytes, END_STREAM seen and the reset's
/// code on `stream`, in `out`.
struct Seen {
    fields: Vec<(String, String)>,
    data: Vec<u8>,
    ended: bool,
    reset: Option<u32>,
}

fn seen(peer: &mut hpack::Decoder, out: &[u8], stream: u32) -> Seen {
    let mut s = Seen {
        fields: Vec::new(),
        data: Vec::new(),
        ended: false,
        reset: None,
    };
    for (kind, flags, id, payload) in frames(out) {
        if kind == frame::HEADERS {
            peer.decode(&payload, |n, v| {
                if id == stream {
                    s.fields.push((
                        String::from_utf8_lossy(n).into(),
                        String::from_utf8_lossy(v).into(),
                    ));
                }
            })
            .unwrap();
        }
        if id != stream {
            continue;
        }
        match kind {
            frame::DATA => s.data.extend_from_slice(&payload),
            frame::RST_STREAM => s.reset = frame::u32_payload(&payload),
            _ => {}
        }
        if (kind == frame::DATA || kind == frame::HEADERS) && flags & frame::END_STREAM != 0 {
            s.ended = true;
        }
    }
    s
}

fn status(s: &Seen) -> &str {
    &s.fields
        .iter()
        .find(|f| f.0 == ":status")
        .expect("a status")
        .1
}

/// What the server's WebSocket frames say, read as a client reads them.
fn messages(data: &[u8]) -> Vec<String> {
    let mut r = ws::Reader::new(ws::ReaderOptions {
        peer_is_client: false,
        max_message: 1 << 24,
        keep: true,
    });
    let mut got = Vec::new();
    r.feed(data, &mut |e| {
        got.push(match e {
            ws::Event::Message { data, .. } => format!("message {}", String::from_utf8_lossy(data)),
            ws::Event::Ping(p) => format!("ping {}", String::from_utf8_lossy(p)),
            ws::Event::Pong(p) => format!("pong {}", String::from_utf8_lossy(p)),
            ws::Event::Close { code, .. } => format!("close {code:?}"),
        })
    })
    .unwrap();
    got
}

#[test]
fn the_server_says_it_takes_extended_connect() {
    let mut out = Vec::new();
    H2Conn::new(Limits::default(), &mut out);
    let settings = &frames(&out)[0];
    assert_eq!(settings.0, frame::SETTINGS);
    let pairs: Vec<_> = frame::settings_pairs(&settings.3).unwrap().collect();
    assert!(
        pairs.contains(&(frame::SETTINGS_ENABLE_CONNECT_PROTOCOL, 1)),
        "{pairs:?}"
    );
}

#[test]
fn an_echo_over_a_stream_answers_each_message_and_the_close() {
    // A message sent before the CONNECT was routed is kept for it.
    let mut input = connect(1, "CONNECT", "websocket", "/ws/echo", &[V13], false);
    input.extend(frame_bytes(
        frame::DATA,
        0,
        1,
        &client_frame(ws::TEXT, b"early"),
    ));
    let (mut c, out, routed) = serve(&input);
    assert!(matches!(routed[..], [Routed::Written]));
    let mut peer = hpack::Decoder::new();
    let s = seen(&mut peer, &out, 1);
    assert_eq!(status(&s), "200");
    assert!(!s.ended && s.reset.is_none());
    assert_eq!(messages(&s.data), ["message early"]);
    // A ping, a message cut over two DATA frames.
    let mut out = Vec::new();
    let mut bytes = client_frame(ws::PING, b"p");
    bytes.extend(client_frame(ws::BINARY, b"hello"));
    c.feed(&frame_bytes(frame::DATA, 0, 1, &bytes[..9]), &mut out)
        .unwrap();
    c.feed(&frame_bytes(frame::DATA, 0, 1, &bytes[9..]), &mut out)
        .unwrap();
    let s = seen(&mut peer, &out, 1);
    assert_eq!(messages(&s.data), ["pong p", "message hello"]);
    assert!(!s.ended);
    // The client's close: answered with its code, our side ended, the stream reset
    // with NO_ERROR as the client's side is still open.
    let mut out = Vec::new();
    let close = client_frame(ws::CLOSE, &1000u16.to_be_bytes());
    c.feed(&frame_bytes(frame::DATA, 0, 1, &close), &mut out)
        .unwrap();
    let s = seen(&mut peer, &out, 1);
    assert_eq!(messages(&s.data), ["close Some(1000)"]);
    assert!(s.ended);
    assert_eq!(s.reset, Some(frame::NO_ERROR));
    assert_eq!(c.open_streams(), 0);
    assert!(c.sockets.is_empty() && c.asks.is_empty() && c.posted.is_empty());
}

#[test]
fn a_client_that_ends_its_side_ends_ours() {
    let (mut c, _, _) = open_echo();
    let mut out = Vec::new();
    c.feed(
        &frame_bytes(
            frame::DATA,
            frame::END_STREAM,
            1,
            &client_frame(ws::TEXT, b"last"),
        ),
        &mut out,
    )
    .unwrap();
    let s = seen(&mut hpack::Decoder::new(), &out, 1);
    // Its last message is echoed, then the stream ends without a reset.
    assert_eq!(messages(&s.data), ["message last"]);
    assert!(s.ended);
    assert_eq!(s.reset, None);
    assert_eq!(c.open_streams(), 0);
}

#[test]
fn a_broken_rule_is_closed_with_its_code() {
    let (mut c, _, _) = open_echo();
    let mut out = Vec::new();
    // Unmasked: a client must mask.
    let mut f = Vec::new();
    ws::frame(&mut f, (true, false), ws::TEXT, b"x", None);
    c.feed(&frame_bytes(frame::DATA, 0, 1, &f), &mut out)
        .unwrap();
    let s = seen(&mut hpack::Decoder::new(), &out, 1);
    assert_eq!(messages(&s.data), ["close Some(1002)"]);
    assert!(s.ended);
    assert_eq!(c.open_streams(), 0);
}

#[test]
fn subprotocol_and_compression_are_answered_in_the_head() {
    let fields = [
        V13,
        ("sec-websocket-protocol", "chat, superchat"),
        (
            "sec-websocket-extensions",
            "permessage-deflate; client_max_window_bits",
        ),
    ];
    let (mut c, out, _) = serve(&connect(
        1,
        "CONNECT",
        "websocket",
        "/ws/echo",
        &fields,
        false,
    ));
    let mut peer = hpack::Decoder::new();
    let s = seen(&mut peer, &out, 1);
    assert_eq!(status(&s), "200");
    let get = |n: &str| s.fields.iter().find(|f| f.0 == n).map(|f| f.1.clone());
    assert_eq!(get("sec-websocket-protocol").as_deref(), Some("chat"));
    assert!(get("sec-websocket-extensions").is_some_and(|v| v.starts_with("permessage-deflate")));
    // A compressed message (RSV1) is taken and its echo compressed.
    let mut d = ws::deflate::Params::default().deflater(false);
    let mut f = Vec::new();
    d.frame(&mut f, ws::TEXT, b"squeezed", Some([9, 9, 9, 9]));
    let mut out = Vec::new();
    c.feed(&frame_bytes(frame::DATA, 0, 1, &f), &mut out)
        .unwrap();
    let s = seen(&mut peer, &out, 1);
    assert!(
        !s.data.is_empty() && s.data[0] & 0x40 != 0,
        "RSV1 on the echo"
    );
}

#[test]
fn what_the_server_does_not_tunnel_is_refused_by_status() {
    let cases = [
        (
            connect(1, "CONNECT", "websocket", "/ws/nowhere", &[V13], false),
            "404",
        ),
        (
            connect(
                1,
                "CONNECT",
                "websocket",
                "/ws/echo",
                &[("sec-websocket-version", "8")],
                false,
            ),
            "400",
        ),
        (
            connect(
                1,
                "CONNECT",
                "websocket",
                "/ws/push?interval_ms=0",
                &[V13],
                false,
            ),
            "400",
        ),
        (
            connect(1, "CONNECT", "websocket", "/ws/room", &[V13], false),
            "501",
        ),
        (
            connect(1, "CONNECT", "webtransport", "/ws/echo", &[V13], false),
            "501",
        ),
    ];
    for (input, want) in cases {
        let (c, out, _) = serve(&input);
        let s = seen(&mut hpack::Decoder::new(), &out, 1);
        assert_eq!(status(&s), want);
        assert!(s.ended);
        // The client's side was open: reset once the refusal is out.
        assert_eq!(s.reset, Some(frame::NO_ERROR));
        assert_eq!(c.open_streams(), 0);
        assert!(c.sockets.is_empty() && c.asks.is_empty());
    }
}

#[test]
fn a_protocol_outside_a_connect_or_a_connect_that_ends_is_malformed() {
    for input in [
        connect(1, "GET", "websocket", "/ws/echo", &[V13], false),
        connect(1, "CONNECT", "websocket", "/ws/echo", &[V13], true),
    ] {
        let (c, out, routed) = serve(&input);
        assert!(routed.is_empty());
        let s = seen(&mut hpack::Decoder::new(), &out, 1);
        assert_eq!(s.reset, Some(frame::PROTOCOL_ERROR));
        assert_eq!(c.open_streams(), 0);
        assert!(c.asks.is_empty());
    }
    // Too many extension fields.
    let many = [("sec-websocket-extensions", "x"); 9];
    let (_, out, routed) = serve(&connect(
        1,
        "CONNECT",
        "websocket",
        "/ws/echo",
        &many,
        false,
    ));
    assert!(routed.is_empty());
    assert_eq!(
        seen(&mut hpack::Decoder::new(), &out, 1).reset,
        Some(frame::PROTOCOL_ERROR)
    );
}

#[test]
fn a_push_goes_on_timers_and_ends_with_its_close() {
    let path = "/ws/push?interval_ms=5&count=2&size=3&text=1";
    let (mut c, out, routed) = serve(&connect(1, "CONNECT", "websocket", path, &[V13], false));
    assert!(matches!(routed[..], [Routed::Later(Deferred::Delay(0))]));
    let mut peer = hpack::Decoder::new();
    assert_eq!(status(&seen(&mut peer, &out, 1)), "200");
    assert!(c.feeding(1));
    let mut out = Vec::new();
    let first = c.feed_next(
        &mut out,
        1,
        &mut crate::feed::Fixed,
        std::time::Instant::now(),
    );
    assert!(matches!(first, crate::h1::Fed::Next(_)));
    let last = c.feed_next(
        &mut out,
        1,
        &mut crate::feed::Fixed,
        std::time::Instant::now(),
    );
    assert!(matches!(last, crate::h1::Fed::Done { .. }));
    let s = seen(&mut peer, &out, 1);
    assert_eq!(
        messages(&s.data),
        ["message xxx", "message xxx", "close Some(1000)"]
    );
    assert!(s.ended);
    assert!(!c.feeding(1));
}

#[test]
fn answers_left_unread_are_bounded() {
    // The client opens no window: every echo is held.
    let mut input = frame_bytes(frame::SETTINGS, 0, 0, &[0, 4, 0, 0, 0, 0]);
    input.extend(connect(
        1,
        "CONNECT",
        "websocket",
        "/ws/echo",
        &[V13],
        false,
    ));
    let (mut c, _, _) = serve(&input);
    let message = client_frame(ws::BINARY, &vec![7u8; 1 << 20]);
    let mut out = Vec::new();
    let mut reset = None;
    for _ in 0..20 {
        for piece in message.chunks(frame::DEFAULT_MAX_FRAME) {
            out.clear();
            c.feed(&frame_bytes(frame::DATA, 0, 1, piece), &mut out)
                .unwrap();
            reset = reset.or(seen(&mut hpack::Decoder::new(), &out, 1).reset);
        }
        if reset.is_some() {
            break;
        }
    }
    assert_eq!(reset, Some(frame::ENHANCE_YOUR_CALM));
    assert!(c.held() <= MAX_HELD);
    assert_eq!(c.open_streams(), 0);
}

#[test]
fn going_away_closes_each_socket() {
    let (mut c, _, _) = open_echo();
    let mut out = Vec::new();
    c.go_away(&mut out);
    let s = seen(&mut hpack::Decoder::new(), &out, 1);
    assert_eq!(messages(&s.data), ["close Some(1001)"]);
    assert!(s.ended);
}
