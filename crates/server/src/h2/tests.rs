use super::*;

pub(super) fn frame_bytes(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    frame::head(&mut f, payload.len(), kind, flags, stream);
    f.extend_from_slice(payload);
    f
}

fn get(stream: u32) -> Vec<u8> {
    let mut b = Vec::new();
    for (n, v) in [
        (&b":method"[..], &b"GET"[..]),
        (b":scheme", b"http"),
        (b":path", b"/pong"),
    ] {
        hpack::literal(&mut b, n, v);
    }
    frame_bytes(
        frame::HEADERS,
        frame::END_HEADERS | frame::END_STREAM,
        stream,
        &b,
    )
}

#[test]
fn streams_reset_before_routing_leave_the_ready_queue() {
    let mut out = Vec::new();
    let mut c = H2Conn::new(Limits::default(), &mut out);
    let mut input = frame::PREFACE.to_vec();
    // Routing is held back (as when output is full): open and reset stream after
    // stream, far more than the stream limit.
    for i in 0..10_000u32 {
        let id = 1 + 2 * i;
        input.extend(get(id));
        input.extend(frame_bytes(
            frame::RST_STREAM,
            0,
            id,
            &frame::CANCEL.to_be_bytes(),
        ));
    }
    let used = c.feed(&input, &mut out).unwrap();
    assert_eq!(used, input.len());
    assert_eq!(c.ready.len(), 0);
    assert_eq!(c.open_streams(), 0);
    assert_eq!(c.next_ready(&mut Vec::new(), &mut Vec::new()), None);
}

/// The frames in `out`: kind, flags, stream, payload.
pub(super) fn frames(out: &[u8]) -> Vec<(u8, u8, u32, Vec<u8>)> {
    let mut at = 0;
    let mut all = Vec::new();
    while let Some(h) = Head::parse(&out[at..]) {
        all.push((
            h.kind,
            h.flags,
            h.stream,
            out[at + 9..at + 9 + h.len].to_vec(),
        ));
        at += 9 + h.len;
    }
    assert_eq!(at, out.len());
    all
}

/// A connection past the preface and settings, and a live call opened on stream 1
/// to `path` (routed as the event loop routes it).
fn live_call(path: &str) -> (H2Conn, Vec<u8>) {
    let mut out = Vec::new();
    let mut c = H2Conn::new(Limits::default(), &mut out);
    let mut b = Vec::new();
    for (n, v) in [
        (&b":method"[..], &b"POST"[..]),
        (b":scheme", b"http"),
        (b":path", path.as_bytes()),
        (b"content-type", b"application/grpc"),
    ] {
        hpack::literal(&mut b, n, v);
    }
    let mut input = frame::PREFACE.to_vec();
    input.extend(frame_bytes(frame::SETTINGS, 0, 0, &[]));
    input.extend(frame_bytes(frame::HEADERS, frame::END_HEADERS, 1, &b));
    c.feed(&input, &mut out).unwrap();
    let (mut p, mut body) = (Vec::new(), Vec::new());
    let ready = c.next_ready(&mut p, &mut body).expect("routed as it opens");
    assert!(ready.live);
    out.clear();
    c.open_call(
        &mut out,
        (1, &p),
        crate::grpc::Encoding::Identity,
        &body,
        (b"d", b"s"),
    );
    (c, out)
}

fn message(m: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    stampede_wire::grpc::frame(&mut b, false, m);
    b
}

/// The grpc-status of a trailers block.
fn status_of(c: &mut hpack::Decoder, block: &[u8]) -> String {
    let mut status = String::new();
    c.decode(block, |n, v| {
        if n == b"grpc-status" {
            status = String::from_utf8_lossy(v).into_owned();
        }
    })
    .unwrap();
    status
}

#[test]
fn a_live_call_answers_each_request_as_it_comes() {
    let (mut c, out) = live_call("/stampede.v1.Echo/Bidi");
    let mut peer = hpack::Decoder::new();
    // The head goes at once.
    let head = frames(&out);
    assert_eq!(head.len(), 1);
    assert_eq!(
        (head[0].0, head[0].1 & frame::END_STREAM),
        (frame::HEADERS, 0)
    );
    peer.decode(&head[0].3, |_, _| {}).unwrap();
    // A request split over two DATA frames: answered once it is whole.
    let req = message(b"\x10\x02");
    let mut out = Vec::new();
    c.feed(&frame_bytes(frame::DATA, 0, 1, &req[..3]), &mut out)
        .unwrap();
    assert!(frames(&out).iter().all(|f| f.0 != frame::DATA));
    out.clear();
    c.feed(&frame_bytes(frame::DATA, 0, 1, &req[3..]), &mut out)
        .unwrap();
    let got = frames(&out);
    let data: Vec<_> = got.iter().filter(|f| f.0 == frame::DATA).collect();
    assert_eq!(data.len(), 1);
    assert_eq!(data[0].3, message(b"\x0a\x02xx\x10\x01"));
    assert_eq!(data[0].1 & frame::END_STREAM, 0);
    // The client ends its side: the last answer, then OK trailers, the stream closed.
    out.clear();
    c.feed(
        &frame_bytes(frame::DATA, frame::END_STREAM, 1, &message(b"\x0a\x01z")),
        &mut out,
    )
    .unwrap();
    let got = frames(&out);
    let kinds: Vec<u8> = got.iter().map(|f| f.0).collect();
    assert_eq!(kinds, [frame::DATA, frame::HEADERS]);
    assert_eq!(got[0].3, message(b"\x0a\x01z\x10\x02"));
    assert_ne!(got[1].1 & frame::END_STREAM, 0);
    assert_eq!(status_of(&mut peer, &got[1].3), "0");
    assert_eq!(c.open_streams(), 0);
}

#[test]
fn a_live_call_that_fails_ends_with_its_status_and_a_reset() {
    let (mut c, out) = live_call("/stampede.v1.Echo/Bidi");
    let mut peer = hpack::Decoder::new();
    peer.decode(&frames(&out)[0].3, |_, _| {}).unwrap();
    // A request that does not decode, the client still sending: INVALID_ARGUMENT,
    // then RST_STREAM (NO_ERROR).
    let mut out = Vec::new();
    c.feed(
        &frame_bytes(frame::DATA, 0, 1, &message(b"\x0a\x09")),
        &mut out,
    )
    .unwrap();
    let got = frames(&out);
    let kinds: Vec<u8> = got.iter().map(|f| f.0).collect();
    assert_eq!(kinds, [frame::HEADERS, frame::RST_STREAM]);
    assert_eq!(status_of(&mut peer, &got[0].3), "3");
    assert_eq!(got[1].3, frame::NO_ERROR.to_be_bytes());
    assert_eq!(c.open_streams(), 0);
    // A prefix over the message limit: RESOURCE_EXHAUSTED before any of it is kept.
    let (mut c, out) = live_call("/stampede.v1.Echo/Bidi");
    let mut peer = hpack::Decoder::new();
    peer.decode(&frames(&out)[0].3, |_, _| {}).unwrap();
    let mut out = Vec::new();
    c.feed(
        &frame_bytes(frame::DATA, 0, 1, &[0, 0x7f, 0, 0, 0]),
        &mut out,
    )
    .unwrap();
    assert_eq!(status_of(&mut peer, &frames(&out)[0].3), "8");
    // Reflection on a server that offers none: UNIMPLEMENTED at once.
    let (c, out) = live_call("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo");
    let mut peer = hpack::Decoder::new();
    let got = frames(&out);
    let kinds: Vec<u8> = got.iter().map(|f| f.0).collect();
    assert_eq!(kinds, [frame::HEADERS, frame::HEADERS, frame::RST_STREAM]);
    peer.decode(&got[0].3, |_, _| {}).unwrap();
    assert_eq!(status_of(&mut peer, &got[1].3), "12");
    assert_eq!(c.open_streams(), 0);
}

#[test]
fn a_live_call_whose_answers_pile_up_unread_is_ended() {
    let (mut c, _) = live_call("/stampede.v1.Echo/Bidi");
    // The client's windows shut: SETTINGS_INITIAL_WINDOW_SIZE 0.
    let mut out = Vec::new();
    let mut zero = Vec::new();
    zero.extend_from_slice(&frame::SETTINGS_INITIAL_WINDOW_SIZE.to_be_bytes());
    zero.extend_from_slice(&0u32.to_be_bytes());
    c.feed(&frame_bytes(frame::SETTINGS, 0, 0, &zero), &mut out)
        .unwrap();
    // Each request asks for 4 MiB back; the fourth puts the call past 16 MiB waiting.
    let ask = message(b"\x10\x80\x80\x80\x02");
    for n in 1..=4 {
        assert_eq!(c.calls.len(), 1, "open before request {n}");
        c.feed(&frame_bytes(frame::DATA, 0, 1, &ask), &mut out)
            .unwrap();
    }
    assert!(c.calls.is_empty(), "the call is ended");
    assert_eq!(c.trailers.len(), 1);
    assert_eq!(c.trailers[0].1, 8, "RESOURCE_EXHAUSTED, after what is held");
}
