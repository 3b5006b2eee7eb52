//! The HTTP/2 client state machine against hand-built server frames.

use super::settings::WINDOW;
use super::*;
use stampede_wire::frame::PADDED;

pub(in crate::proto) fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    frame_head(&mut f, payload.len(), kind, flags, stream);
    f.extend_from_slice(payload);
    f
}

pub(in crate::proto) fn block(headers: &[(&[u8], &[u8])]) -> Vec<u8> {
    loona_hpack::Encoder::new().encode(headers.iter().copied())
}

pub(in crate::proto) fn get() -> H2Request {
    H2Request::from_http1(
        b"GET /pong?x=1 HTTP/1.1\r\nHost: example.test:8443\r\nConnection: keep-alive\r\nUser-Agent: stampede\r\n\r\n",
        "https",
    )
    .unwrap()
}

/// A connection that has had the server's preface (an empty SETTINGS), with nothing
/// left to send.
pub(in crate::proto) fn settled() -> H2Conn {
    let mut c = H2Conn::new();
    c.feed(&frame(SETTINGS, 0, 0, &[]), &[], &mut Vec::new())
        .unwrap();
    assert!(c.settled());
    c.out.clear();
    c
}

/// Splits `out` into (type, flags, stream, payload) frames, after the preface.
fn frames(out: &[u8]) -> Vec<(u8, u8, u32, Vec<u8>)> {
    let mut b = out.strip_prefix(PREFACE).unwrap_or(out);
    let mut v = Vec::new();
    while b.len() >= 9 {
        let len = u32::from_be_bytes([0, b[0], b[1], b[2]]) as usize;
        let id = u32::from_be_bytes([b[5], b[6], b[7], b[8]]);
        v.push((b[3], b[4], id, b[9..9 + len].to_vec()));
        b = &b[9 + len..];
    }
    v
}

#[test]
fn requests_translate_to_pseudo_headers_without_connection_headers() {
    let r = get();
    let mut got = Vec::new();
    loona_hpack::Decoder::new()
        .decode_with_cb(&r.block, |n, v| {
            got.push((
                String::from_utf8(n.to_vec()).unwrap(),
                String::from_utf8(v.to_vec()).unwrap(),
            ))
        })
        .unwrap();
    let got: Vec<(&str, &str)> = got.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    assert_eq!(
        got,
        [
            (":method", "GET"),
            (":scheme", "https"),
            (":authority", "example.test:8443"),
            (":path", "/pong?x=1"),
            ("user-agent", "stampede"),
        ]
    );
    assert!(r.body.is_empty());
}

#[test]
fn a_response_in_headers_continuation_and_padded_data() {
    let mut c = H2Conn::new();
    let start = frames(&c.out);
    assert_eq!(start[0].0, SETTINGS);
    assert_eq!(start[1].0, WINDOW_UPDATE);
    c.out.clear();
    let id = c.request(&get(), false);
    assert_eq!(id, 1);
    let sent = frames(&c.out);
    assert_eq!((sent[0].0, sent[0].1), (HEADERS, END_HEADERS | END_STREAM));
    assert_eq!(c.request(&get(), false), 3);
    c.out.clear();

    let hb = block(&[
        (b":status", b"200"),
        (b"server", b"test"),
        (b"content-type", b"text/plain"),
    ]);
    let (a, b) = hb.split_at(3);
    let mut input = frame(SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 100]);
    input.extend(frame(HEADERS, 0, 1, a));
    input.extend(frame(CONTINUATION, END_HEADERS, 1, b));
    let mut padded = vec![3u8];
    padded.extend_from_slice(b"PONG");
    padded.extend_from_slice(&[0, 0, 0]);
    input.extend(frame(DATA, PADDED | END_STREAM, 1, &padded));
    // Stream 3: headers only, from a second encoder (its own, independent table).
    input.extend(frame(
        HEADERS,
        END_HEADERS | END_STREAM,
        3,
        &loona_hpack::Encoder::new().encode([(&b":status"[..], &b"404"[..])]),
    ));
    let mut events = Vec::new();
    // Fed a byte at a time: partial frames wait for the rest.
    for b in input.chunks(1) {
        c.feed(b, &[], &mut events).unwrap();
    }
    assert_eq!(
        events,
        [
            Event::Response(Response {
                stream: 1,
                status: 200,
                body: 4,
                close: false,
                reused: false,
                fresh: false,
                grpc: None,
            }),
            Event::Response(Response {
                stream: 3,
                status: 404,
                body: 0,
                close: false,
                reused: true,
                fresh: false,
                grpc: None,
            })
        ]
    );
    assert_eq!(c.peer_max_streams, Some(100));
    assert_eq!(
        frames(&c.out)[0],
        (SETTINGS, ACK, 0, vec![]),
        "settings acked"
    );
    assert_eq!(c.open_streams(), 0);
}

#[test]
fn resets_goaway_and_ping() {
    let mut c = settled();
    for _ in 0..3 {
        c.request(&get(), false);
    }
    c.out.clear();
    let mut input = frame(RST_STREAM, 0, 3, &7u32.to_be_bytes());
    input.extend(frame(PING, 0, 0, b"12345678"));
    let mut goaway = 1u32.to_be_bytes().to_vec();
    goaway.extend_from_slice(&0u32.to_be_bytes());
    input.extend(frame(GOAWAY, 0, 0, &goaway));
    let mut events = Vec::new();
    c.feed(&input, &[], &mut events).unwrap();
    assert_eq!(
        events,
        [
            Event::Reset {
                stream: 3,
                code: 7,
                refused: true,
                kind: crate::ErrorKind::H2StreamReset
            },
            Event::GoAway {
                last_stream: 1,
                code: 0,
                kind: crate::ErrorKind::H2GoAway
            }
        ]
    );
    assert!(c.goaway);
    assert_eq!(frames(&c.out), [(PING, ACK, 0, b"12345678".to_vec())]);
}

#[test]
fn protocol_errors_close_the_connection() {
    for bad in [
        frame(DATA, 0, 0, b"x"),
        frame(PUSH_PROMISE, END_HEADERS, 1, &[0, 0, 0, 2]),
        frame(RST_STREAM, 0, 1, &[0, 0]),
        frame(CONTINUATION, END_HEADERS, 1, b""),
        vec![0, 0x40, 1, DATA, 0, 0, 0, 0, 1],
    ] {
        let mut c = settled();
        c.request(&get(), false);
        assert!(c.feed(&bad, &[], &mut Vec::new()).is_err(), "{bad:?}");
    }
}

#[test]
fn the_server_must_open_with_settings() {
    for (input, error) in [
        (
            &b"HTTP/1.1 400 Bad Request\r\n\r\n"[..],
            H2Error::Http1Answer,
        ),
        (
            &frame(PING, 0, 0, b"12345678")[..],
            H2Error::Protocol(format!(
                "the server's first HTTP/2 frame is of type {PING}, not SETTINGS"
            )),
        ),
        (
            &frame(SETTINGS, ACK, 0, b"")[..],
            H2Error::Protocol(format!(
                "the server's first HTTP/2 frame is of type {SETTINGS}, not SETTINGS"
            )),
        ),
    ] {
        let mut c = H2Conn::new();
        assert_eq!(c.feed(input, &[], &mut Vec::new()), Err(error));
        assert!(!c.settled());
    }
    // A preface split across reads: settled once the whole frame is in.
    let mut c = H2Conn::new();
    let preface = frame(SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 100]);
    c.feed(&preface[..12], &[], &mut Vec::new()).unwrap();
    assert!(!c.settled());
    c.feed(&preface[12..], &[], &mut Vec::new()).unwrap();
    assert!(c.settled());
    assert_eq!(c.peer_max_streams, Some(100));
}

#[test]
fn bodies_wait_for_the_servers_windows_and_ours_are_refilled() {
    let body = vec![b'x'; 100_000];
    let req = H2Request::from_http1(
        &[
            &b"POST /up HTTP/1.1\r\nHost: h\r\nContent-Length: 100000\r\n\r\n"[..],
            &body,
        ]
        .concat(),
        "http",
    )
    .unwrap();
    assert_eq!(req.body.len(), 100_000);
    let mut c = settled();
    c.request(&req, false);
    let sent: usize = frames(&c.out)
        .iter()
        .filter(|f| f.0 == DATA)
        .map(|f| f.3.len())
        .sum();
    assert_eq!(
        sent, 65_535,
        "the default window, in frames of 16,384 at most"
    );
    assert!(frames(&c.out).iter().all(|f| f.3.len() <= 16_384));
    c.out.clear();
    let mut events = Vec::new();
    let mut more = frame(WINDOW_UPDATE, 0, 0, &100_000u32.to_be_bytes());
    more.extend(frame(WINDOW_UPDATE, 0, 1, &100_000u32.to_be_bytes()));
    c.feed(&more, &req.body, &mut events).unwrap();
    let rest: Vec<_> = frames(&c.out).into_iter().filter(|f| f.0 == DATA).collect();
    assert_eq!(
        rest.iter().map(|f| f.3.len()).sum::<usize>(),
        100_000 - 65_535
    );
    assert_eq!(rest.last().unwrap().1, END_STREAM);

    // Receiving: past half of our 1 GiB window, a WINDOW_UPDATE goes out.
    c.out.clear();
    let chunk = vec![0u8; 16_384];
    let mut input = Vec::new();
    for _ in 0..(WINDOW as usize / 2 / 16_384 + 1) {
        input.extend(frame(DATA, 0, 1, &chunk));
    }
    c.feed(&input, &req.body, &mut events).unwrap();
    let updates: Vec<_> = frames(&c.out)
        .into_iter()
        .filter(|f| f.0 == WINDOW_UPDATE)
        .map(|f| f.2)
        .collect();
    assert_eq!(updates, [0, 1], "connection and stream windows refilled");
}

#[test]
fn a_repeated_request_is_indexed_after_the_first() {
    let r = get();
    let mut c = H2Conn::new();
    c.out.clear();
    for _ in 0..3 {
        c.request(&r, true);
    }
    let sent = frames(&c.out);
    assert_eq!(sent[0].3, r.block_first);
    assert_eq!(sent[1].3, r.block_indexed);
    assert!(r.block_indexed.len() <= 6, "{:?}", r.block_indexed);
    // An independent decoder sees the same fields in all three blocks.
    let mut d = loona_hpack::Decoder::new();
    let blocks: Vec<Vec<(Vec<u8>, Vec<u8>)>> =
        sent.iter().map(|f| d.decode(&f.3).unwrap()).collect();
    assert_eq!(blocks[0], blocks[1]);
    assert_eq!(blocks[1], blocks[2]);
    assert_eq!(blocks[0][3], (b":path".to_vec(), b"/pong?x=1".to_vec()));
    assert_eq!(blocks[0][0], (b":method".to_vec(), b"GET".to_vec()));

    // A server that shrinks its table: a size update, then literals.
    let mut input = frame(SETTINGS, 0, 0, &[0, 1, 0, 0, 0, 0]);
    c.out.clear();
    c.feed(&std::mem::take(&mut input), &[], &mut Vec::new())
        .unwrap();
    c.out.clear();
    c.request(&r, true);
    c.request(&r, true);
    let sent = frames(&c.out);
    assert_eq!(sent[0].3[0], 0x20);
    assert_eq!(&sent[0].3[1..], &r.block[..]);
    assert_eq!(sent[1].3, r.block);
}

#[test]
fn a_server_that_floods_control_frames_without_reading_is_cut_off() {
    for kind in [PING, SETTINGS] {
        let mut c = settled();
        let one = if kind == PING {
            frame(PING, 0, 0, b"12345678")
        } else {
            frame(SETTINGS, 0, 0, &[])
        };
        // Ten times what may be queued, never written out.
        let flood = one.repeat(10 * MAX_QUEUED_OUTPUT / one.len());
        let fed = c.feed(&flood, &[], &mut Vec::new());
        let e = fed.expect_err("the flood ends the connection");
        assert!(e.to_string().contains("without reading"), "{e:?}");
        assert!(c.out.len() <= MAX_QUEUED_OUTPUT + 17, "{}", c.out.len());
    }
    // A server that does read gets every answer.
    let mut c = settled();
    for _ in 0..1000 {
        c.feed(&frame(PING, 0, 0, b"12345678"), &[], &mut Vec::new())
            .unwrap();
        c.out.clear();
    }
}

#[test]
fn a_header_block_is_bounded_in_size_and_in_frames() {
    let empty = {
        let mut c = settled();
        c.request(&get(), false);
        let mut input = frame(HEADERS, 0, 1, &block(&[(b":status", b"200")]));
        input.extend(frame(CONTINUATION, 0, 1, b"").repeat(5000));
        c.feed(&input, &[], &mut Vec::new())
    };
    assert!(empty.is_err(), "an endless run of empty CONTINUATIONs");
    let big = {
        let mut c = settled();
        c.request(&get(), false);
        let mut input = frame(HEADERS, 0, 1, &block(&[(b":status", b"200")]));
        input.extend(frame(CONTINUATION, 0, 1, &[0x40; 16_000]).repeat(20));
        c.feed(&input, &[], &mut Vec::new())
    };
    assert!(big.is_err_and(|e| e.to_string().contains("256 KiB")));
}

#[test]
fn a_response_without_a_status_fails_its_stream_as_malformed() {
    let mut c = settled();
    c.request(&get(), false);
    c.request(&get(), false);
    c.out.clear();
    let mut input = frame(
        HEADERS,
        END_HEADERS | END_STREAM,
        1,
        &block(&[(b"server", b"x")]),
    );
    input.extend(frame(
        HEADERS,
        END_HEADERS | END_STREAM,
        3,
        &loona_hpack::Encoder::new().encode([(&b":status"[..], &b"20x"[..])]),
    ));
    let mut events = Vec::new();
    c.feed(&input, &[], &mut events).unwrap();
    assert_eq!(
        events,
        [
            Event::Malformed { stream: 1 },
            Event::Malformed { stream: 3 }
        ]
    );
    assert_eq!(
        frames(&c.out),
        [
            (RST_STREAM, 0, 1, 1u32.to_be_bytes().to_vec()),
            (RST_STREAM, 0, 3, 1u32.to_be_bytes().to_vec())
        ]
    );
    assert_eq!(c.open_streams(), 0);
}

/// A connection offering small windows, a larger frame and other tables (h2load's
/// `-w 10 -W 14 -f 32K --header-table-size 8K --encoder-header-table-size 0`).
fn small() -> H2Conn {
    let mut c = H2Conn::with(H2Settings {
        stream_window: 1023,
        connection_window: 16_383,
        max_frame: 32_768,
        header_table: 8192,
        encoder_table: 0,
    });
    let start = frames(&c.out);
    let pairs: Vec<(u16, u32)> = frame::settings_pairs(&start[0].3).unwrap().collect();
    assert_eq!(
        pairs,
        [
            (SETTINGS_ENABLE_PUSH, 0),
            (SETTINGS_INITIAL_WINDOW_SIZE, 1023),
            (SETTINGS_MAX_FRAME_SIZE, 32_768),
            (SETTINGS_HEADER_TABLE_SIZE, 8192),
        ]
    );
    assert_eq!(
        start.len(),
        1,
        "no WINDOW_UPDATE: the window is below 65,535"
    );
    c.feed(&frame(SETTINGS, 0, 0, &[]), &[], &mut Vec::new())
        .unwrap();
    c.out.clear();
    c
}

#[test]
fn windows_below_the_initial_are_reached_by_withholding_updates() {
    let mut c = small();
    let r = get();
    let mut events = Vec::new();
    let id = c.request(&r, true);
    // Nothing inserted into the server's table: the encoder may use none of it.
    assert_eq!(frames(&c.out)[0].3, r.block);
    c.out.clear();
    let mut input = frame(HEADERS, END_HEADERS, id, &block(&[(b":status", b"200")]));
    // The stream window (1,023) is refilled at half of it; the connection's credit
    // (65,535 to start) shrinks to 16,383 by withholding the first 49,152 bytes.
    for _ in 0..96 {
        input.extend(frame(DATA, 0, id, &[7u8; 512]));
    }
    c.feed(&input, &[], &mut events).unwrap();
    let updates: Vec<(u32, u32)> = frames(&c.out)
        .into_iter()
        .filter(|f| f.0 == WINDOW_UPDATE)
        .map(|f| (f.2, frame::u32_payload(&f.3).unwrap()))
        .collect();
    assert!(
        updates.iter().all(|&(s, n)| s == id && n == 512),
        "{updates:?}"
    );
    assert_eq!(updates.len(), 96);
    // 49,152 received: the withheld share is used up; from here the connection is
    // refilled at half its window.
    c.out.clear();
    let mut more = Vec::new();
    for _ in 0..16 {
        more.extend(frame(DATA, 0, id, &[7u8; 512]));
    }
    c.feed(&more, &[], &mut events).unwrap();
    let conn: Vec<u32> = frames(&c.out)
        .into_iter()
        .filter(|f| f.0 == WINDOW_UPDATE && f.2 == 0)
        .map(|f| frame::u32_payload(&f.3).unwrap())
        .collect();
    assert_eq!(conn, [8192]);
}

#[test]
fn the_frame_size_and_table_we_offered_are_what_we_accept() {
    let mut c = small();
    let id = c.request(&get(), false);
    // A 20,000-byte frame is within the 32K offered; the default refuses it.
    let mut input = frame(HEADERS, END_HEADERS, id, &block(&[(b":status", b"200")]));
    input.extend(frame(DATA, END_STREAM, id, &vec![0u8; 20_000]));
    let mut events = Vec::new();
    c.feed(&input, &[], &mut events).unwrap();
    assert!(matches!(events[..], [Event::Response(_)]), "{events:?}");
    let mut d = settled();
    d.request(&get(), false);
    let e = d.feed(&input, &[], &mut Vec::new()).unwrap_err();
    assert!(e.to_string().contains("exceeds the 16384"), "{e}");
    // A table size update to 8,192 is taken when offered, refused otherwise.
    let mut grown = vec![0x3f, 0xe1, 0x3f]; // size update to 8,192
    grown.extend(block(&[(b":status", b"204")]));
    let id = c.request(&get(), false);
    let mut events = Vec::new();
    c.feed(
        &frame(HEADERS, END_HEADERS | END_STREAM, id, &grown),
        &[],
        &mut events,
    )
    .unwrap();
    assert!(matches!(events[..], [Event::Response(_)]), "{events:?}");
    let mut d = settled();
    let id = d.request(&get(), false);
    assert!(d
        .feed(
            &frame(HEADERS, END_HEADERS | END_STREAM, id, &grown),
            &[],
            &mut Vec::new()
        )
        .is_err());
}

#[test]
fn settings_out_of_range_are_refused() {
    let ok = H2Settings::default();
    assert!(ok.check().is_ok());
    for bad in [
        H2Settings {
            stream_window: 0,
            ..ok
        },
        H2Settings {
            connection_window: 0,
            ..ok
        },
        H2Settings {
            stream_window: 1 << 31,
            ..ok
        },
        H2Settings {
            max_frame: 16_383,
            ..ok
        },
        H2Settings {
            max_frame: 1 << 24,
            ..ok
        },
    ] {
        assert!(bad.check().is_err(), "{bad:?}");
    }
}

#[test]
fn a_watched_stream_reports_each_data_frame_and_a_broken_one_is_cancelled() {
    use crate::proto::watch::{Progress, StreamMode, MAX_EVENT};
    let mut c = settled();
    c.watch(StreamMode::Sse, None);
    let id = c.request(&get(), false);
    let mut input = frame(
        HEADERS,
        END_HEADERS,
        id,
        &block(&[
            (b":status", b"200"),
            (b"content-type", b"text/event-stream"),
        ]),
    );
    input.extend(frame(DATA, 0, id, b"data: 1\n\ndata: 2\n\nda"));
    input.extend(frame(DATA, 0, id, b"ta: [DONE]\n\n"));
    input.extend(frame(DATA, END_STREAM, id, b""));
    let mut events = Vec::new();
    c.feed(&input, &[], &mut events).unwrap();
    let progress: Vec<Progress> = events
        .iter()
        .filter_map(|e| match e {
            Event::Progress { stream, progress } if *stream == id => Some(*progress),
            _ => None,
        })
        .collect();
    assert_eq!(
        progress,
        [
            Progress {
                bytes: 20,
                events: 2,
                done: false,
                tokens: None,
                stamped: false
            },
            Progress {
                bytes: 12,
                events: 0,
                done: true,
                tokens: None,
                stamped: false
            }
        ]
    );
    assert!(matches!(events.last(), Some(Event::Response(r)) if r.stream == id));
    // An event over the limit: the stream is cancelled, the connection goes on.
    let id = c.request(&get(), false);
    c.out.clear();
    let mut input = frame(HEADERS, END_HEADERS, id, &block(&[(b":status", b"200")]));
    let big = vec![b'x'; 16_000];
    for _ in 0..=MAX_EVENT / big.len() {
        input.extend(frame(DATA, 0, id, &big));
    }
    let mut events = Vec::new();
    c.feed(&input, &[], &mut events).unwrap();
    assert!(
        events.contains(&Event::StreamBroken {
            stream: id,
            kind: crate::ErrorKind::StreamEvent
        }),
        "{events:?}"
    );
    assert!(frames(&c.out)
        .iter()
        .any(|f| f.0 == RST_STREAM && f.2 == id && f.3 == frame::CANCEL.to_be_bytes()));
    assert_eq!(c.open_streams(), 0);
}

#[test]
fn grpc_answers_carry_their_status_and_a_broken_one_fails_by_kind() {
    let mut c = settled();
    c.watch(StreamMode::Grpc, None);
    let head = block(&[(b":status", b"200"), (b"content-type", b"application/grpc")]);
    let trailers = |code: &[u8]| block(&[(b"grpc-status", code), (b"grpc-message", b"x")]);
    let mut message = Vec::new();
    stampede_wire::grpc::frame(&mut message, false, b"\x0a\x02hi");
    let mut input = Vec::new();
    // 1: a message, then trailers with OK.
    let one = c.request(&get(), false);
    input.extend(frame(HEADERS, END_HEADERS, one, &head));
    input.extend(frame(DATA, 0, one, &message));
    input.extend(frame(
        HEADERS,
        END_HEADERS | END_STREAM,
        one,
        &trailers(b"0"),
    ));
    // 3: trailers only (status and grpc-status in one block), UNAVAILABLE, with a
    // percent-encoded message far over the length kept.
    let two = c.request(&get(), false);
    let long = format!("down%20now{}", "é".repeat(300));
    let only = block(&[
        (b":status", b"200"),
        (b"grpc-status", b"14"),
        (b"grpc-message", long.as_bytes()),
    ]);
    input.extend(frame(HEADERS, END_HEADERS | END_STREAM, two, &only));
    // 5: a message whose prefix promises more than came.
    let three = c.request(&get(), false);
    input.extend(frame(HEADERS, END_HEADERS, three, &head));
    input.extend(frame(DATA, 0, three, &message[..6]));
    input.extend(frame(
        HEADERS,
        END_HEADERS | END_STREAM,
        three,
        &trailers(b"0"),
    ));
    // 7: no grpc-status at all.
    let four = c.request(&get(), false);
    input.extend(frame(HEADERS, END_HEADERS, four, &head));
    input.extend(frame(DATA, END_STREAM, four, &message));
    let mut events = Vec::new();
    c.feed(&input, &[], &mut events).unwrap();
    let answers: Vec<(u32, Option<u8>)> = (events.iter())
        .filter_map(|e| match e {
            Event::Response(r) => Some((r.stream, r.grpc)),
            _ => None,
        })
        .collect();
    assert_eq!(answers, [(one, Some(0)), (two, Some(14))]);
    // The message, decoded and cut on a character within 256 bytes.
    let messages: Vec<(u8, Box<str>)> = c.take_grpc_messages().collect();
    assert_eq!(messages.len(), 1);
    let (code, text) = &messages[0];
    assert_eq!(*code, 14);
    assert!(text.starts_with("down nowé"), "{text}");
    assert_eq!(text.len(), 8 + 2 * 124);
    assert!(events.contains(&Event::Failed {
        stream: three,
        kind: crate::ErrorKind::GrpcMessage
    }));
    assert!(events.contains(&Event::Failed {
        stream: four,
        kind: crate::ErrorKind::GrpcNoStatus
    }));
    // A prefix over the size limit cancels the stream as it comes.
    let five = c.request(&get(), false);
    let mut events = Vec::new();
    let mut input = frame(HEADERS, END_HEADERS, five, &head);
    input.extend(frame(DATA, 0, five, &[0, 0x7f, 0, 0, 0]));
    c.feed(&input, &[], &mut events).unwrap();
    assert_eq!(
        events,
        [Event::StreamBroken {
            stream: five,
            kind: crate::ErrorKind::GrpcMessage
        }]
    );
}

#[test]
fn a_made_call_sends_its_own_body_and_fields_and_keeps_the_rest_for_the_windows() {
    let req = H2Request::from_http1(b"POST /svc/M HTTP/1.1\r\nHost: h\r\n\r\n", "http").unwrap();
    let mut c = settled();
    // A small call, whole at once: HEADERS with the request's fields (inserted into
    // the server's table, as a repeated request's are) and its own, then its DATA
    // with END_STREAM.
    let mut fields = Vec::new();
    stampede_wire::hpack::literal(&mut fields, b"x-call", b"7");
    let one = c.request_made(&req, b"hello", &fields);
    let f = frames(&c.out);
    assert_eq!(f.len(), 2);
    assert_eq!((f[0].0, f[0].1), (HEADERS, END_HEADERS));
    assert_eq!(f[0].3, [&req.block_first[..], &fields[..]].concat());
    assert_eq!((f[1].0, f[1].1, f[1].2), (DATA, END_STREAM, one));
    assert_eq!(f[1].3, b"hello");
    // The next call's shared fields are indexes.
    c.out.clear();
    c.request_made(&req, b"hi", &fields);
    let f = frames(&c.out);
    assert_eq!(f[0].3, [&req.block_indexed[..], &fields[..]].concat());
    // A body past the default window: the rest waits, kept for its stream, and goes
    // when the windows open, while another call's body stays its own.
    c.out.clear();
    let big = vec![b'y'; 70_000];
    let two = c.request_made(&req, &big, &[]);
    let sent: usize = frames(&c.out)
        .iter()
        .filter(|f| f.0 == DATA)
        .map(|f| f.3.len())
        .sum();
    assert_eq!(
        sent,
        65_535 - 7,
        "the connection window, less the first calls'"
    );
    c.out.clear();
    let mut more = frame(WINDOW_UPDATE, 0, 0, &100_000u32.to_be_bytes());
    more.extend(frame(WINDOW_UPDATE, 0, two, &100_000u32.to_be_bytes()));
    // The run's prepared body (empty here) is not what the made call sends.
    c.feed(&more, &[], &mut Vec::new()).unwrap();
    let rest: Vec<_> = frames(&c.out).into_iter().filter(|f| f.0 == DATA).collect();
    assert_eq!(
        rest.iter().map(|f| f.3.len()).sum::<usize>(),
        70_000 - 65_528
    );
    assert!(rest
        .iter()
        .all(|f| f.2 == two && f.3.iter().all(|&b| b == b'y')));
    assert_eq!(rest.last().unwrap().1, END_STREAM);
    assert!(c.owned.is_empty(), "nothing kept once sent");
}

#[test]
fn an_open_stream_sends_its_parts_as_they_come_and_ends_once() {
    let req = H2Request::from_http1(b"POST /svc/M HTTP/1.1\r\nHost: h\r\n\r\n", "http").unwrap();
    let mut c = settled();
    // The first part goes with the headers, and the send side stays open.
    let id = c.request_open(&req, true, b"one", &[]);
    let f = frames(&c.out);
    assert_eq!((f[0].0, f[0].1), (HEADERS, END_HEADERS));
    assert_eq!((f[1].0, f[1].1, &f[1].3[..]), (DATA, 0, &b"one"[..]));
    c.out.clear();
    assert!(c.send_more(id, b"two", false));
    assert!(c.send_more(id, b"three", true));
    let f = frames(&c.out);
    assert_eq!((f[0].1, &f[0].3[..]), (0, &b"two"[..]));
    assert_eq!((f[1].1, &f[1].3[..]), (END_STREAM, &b"three"[..]));
    // Ended: nothing more goes, and an unknown stream takes nothing.
    c.out.clear();
    assert!(!c.send_more(id, b"four", false));
    assert!(!c.send_more(id + 2, b"x", false));
    assert!(c.out.is_empty());
    // Ended by time: an empty DATA frame with END_STREAM.
    let two = c.request_open(&req, true, b"a", &[]);
    c.out.clear();
    assert!(c.send_more(two, &[], true));
    assert_eq!(frames(&c.out), [(DATA, END_STREAM, two, Vec::new())]);
}

#[test]
fn an_open_stream_waits_for_its_window_and_ends_with_its_last_byte() {
    let req = H2Request::from_http1(b"POST /svc/M HTTP/1.1\r\nHost: h\r\n\r\n", "http").unwrap();
    let mut c = settled();
    let big = vec![b'z'; 70_000];
    let id = c.request_open(&req, true, &big, &[]);
    // Past the window: the next part and the end queue behind what waits.
    assert!(c.send_more(id, b"tail", false));
    assert!(c.send_more(id, &[], true));
    assert_eq!(c.queued(id), 70_000 - 65_535 + 4);
    c.out.clear();
    let mut more = frame(WINDOW_UPDATE, 0, 0, &100_000u32.to_be_bytes());
    more.extend(frame(WINDOW_UPDATE, 0, id, &100_000u32.to_be_bytes()));
    c.feed(&more, &[], &mut Vec::new()).unwrap();
    let data: Vec<_> = frames(&c.out).into_iter().filter(|f| f.0 == DATA).collect();
    let sent: Vec<u8> = data.iter().flat_map(|f| f.3.clone()).collect();
    assert_eq!(sent.len(), 70_000 - 65_535 + 4);
    assert!(sent.ends_with(b"tail"));
    assert_eq!(data.last().unwrap().1, END_STREAM);
    assert_eq!(data.iter().filter(|f| f.1 & END_STREAM != 0).count(), 1);
    assert!(c.owned.is_empty());
    assert_eq!(c.queued(id), 0);
}

#[test]
fn a_stream_answered_before_its_request_ended_is_cancelled() {
    let req = H2Request::from_http1(b"POST /svc/M HTTP/1.1\r\nHost: h\r\n\r\n", "http").unwrap();
    let mut c = settled();
    let id = c.request_open(&req, true, b"one", &[]);
    c.out.clear();
    let head = block(&[(b":status", b"200"), (b"grpc-status", b"0")]);
    let mut events = Vec::new();
    c.feed(
        &frame(HEADERS, END_HEADERS | END_STREAM, id, &head),
        &[],
        &mut events,
    )
    .unwrap();
    assert!(matches!(events[..], [Event::Response(_)]));
    let f = frames(&c.out);
    assert!(f
        .iter()
        .any(|f| f.0 == RST_STREAM && f.2 == id && f.3 == frame::CANCEL.to_be_bytes()));
    assert!(!c.send_more(id, b"two", true));
}
