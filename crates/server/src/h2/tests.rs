use super::*;

fn frame_bytes(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
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
