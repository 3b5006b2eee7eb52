//! Fuzzes WebSocket's frame reader: hostile bytes, read as a server reads a client
//! and as a client reads a server, fed in two pieces at a split point taken from the
//! input, must yield messages within the limit or fail with a close code — never
//! panic, never keep more than one message within the limit. The same bytes are a
//! server's answer to the load client's upgrade (after a valid 101 when the first
//! byte says so), as round trips or as a push stream: answers are each no longer
//! than the limit, stamps held no more than the messages, and a failure ends it.
//! With permessage-deflate on (a bit of the first byte), RSV1 messages are inflated
//! within the same limit, and the input cut into messages deflates and inflates
//! back to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stampede_engine::ws::WsClient;
use stampede_engine::WsLoad;
use stampede_wire::ws::{self, deflate, Event, Reader, ReaderOptions};

/// The load client's view: `input` after the upgrade's answer (a valid one when
/// `upgraded`), in pieces, as round trips or (`push`) as a push stream whose
/// messages may carry stamps; what it queues for a server that does not read
/// (pongs) stays bounded, and so do the stamps held for the worker.
fn client(input: &[u8], split: usize, upgraded: bool, push: bool) {
    let mut load = WsLoad::text("x");
    load.max_message = MAX;
    let mut c = WsClient::seeded(&load, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 1, push);
    c.queue(2);
    let mut bytes = Vec::new();
    if upgraded {
        let head = String::from_utf8_lossy(c.unwritten()).into_owned();
        let key = head
            .lines()
            .find_map(|l| l.strip_prefix("Sec-WebSocket-Key: "))
            .expect("a key");
        bytes
            .extend_from_slice(b"HTTP/1.1 101 OK\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n");
        bytes.extend_from_slice(
            format!(
                "Sec-WebSocket-Accept: {}\r\n\r\n",
                ws::accept_key(key.as_bytes())
            )
            .as_bytes(),
        );
    }
    bytes.extend_from_slice(input);
    let step = 1 + split % 16;
    let mut events = Vec::new();
    for part in bytes.chunks(step) {
        events.clear();
        if c.feed(part, &mut events).is_err() {
            break;
        }
        let mut stamps = 0;
        while c.take_stamp().is_some() {
            stamps += 1;
        }
        assert!(stamps <= events.len(), "{stamps} stamps for {} events", events.len());
        assert!(
            c.unwritten().len() <= stampede_engine::ws::MAX_QUEUED_PONGS + 256,
            "{} bytes queued",
            c.unwritten().len()
        );
    }
}

const MAX: u64 = 512;

fuzz_target!(|data: &[u8]| {
    if data.is_empty() {
        return;
    }
    let input = &data[1..];
    let _ = ws::valid_key(input);
    let split = (data[0] as usize).min(input.len());
    for peer_is_client in [true, false] {
        let mut r = Reader::new(ReaderOptions {
            peer_is_client,
            max_message: MAX,
            keep: data[0] & 1 == 1,
        });
        if data[0] & 2 == 2 {
            // permessage-deflate: RSV1 messages inflate, bounded by the same limit.
            r.inflate(data[0] & 16 == 16);
        }
        let mut on = |e: Event<'_>| match e {
            Event::Message { len, data, .. } => {
                assert!(len <= MAX && data.len() as u64 <= MAX);
            }
            Event::Ping(p) | Event::Pong(p) => assert!(p.len() <= ws::MAX_CONTROL),
            Event::Close { code, .. } => assert!(code.is_none_or(ws::sendable_code)),
        };
        for part in [&input[..split], &input[split..]] {
            if let Err(e) = r.feed(part, &mut on) {
                assert!(ws::sendable_code(e.code));
                break;
            }
        }
    }
    client(input, split, data[0] & 4 == 4, data[0] & 8 == 8);
    client_over_h2(input, split, data[0] & 4 == 4);
    deflate_round_trip(input, data[0]);
});

/// The load client over HTTP/2 (RFC 8441): `input` as the server's frames (after its
/// SETTINGS and a `200` when `opened`), in pieces: never a panic, and the output it
/// owes a server that does not read bounded.
fn client_over_h2(input: &[u8], split: usize, opened: bool) {
    use stampede_wire::{frame, hpack};
    let mut load = WsLoad::text("x");
    load.max_message = MAX;
    let mut c = WsClient::over_h2(&load, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", false, false);
    c.queue(2);
    let mut bytes = Vec::new();
    if opened {
        frame::settings(&mut bytes, &[(frame::SETTINGS_ENABLE_CONNECT_PROTOCOL, 1)]);
        let mut block = Vec::new();
        hpack::literal(&mut block, b":status", b"200");
        frame::head(&mut bytes, block.len(), frame::HEADERS, frame::END_HEADERS, 1);
        bytes.extend_from_slice(&block);
    }
    bytes.extend_from_slice(input);
    let mut events = Vec::new();
    for part in bytes.chunks(1 + split % 64) {
        events.clear();
        let fed = c.feed(part, &mut events);
        assert!(
            c.unwritten().len()
                <= stampede_engine::ws::over_h2::MAX_OWED
                    + stampede_engine::ws::MAX_QUEUED_PONGS
                    + 1024,
            "{} bytes owed",
            c.unwritten().len()
        );
        if fed.is_err() {
            break;
        }
    }
}

/// The input as messages through permessage-deflate's codec, with the window and
/// the context's reset the first byte picks: each inflates back to itself.
fn deflate_round_trip(input: &[u8], how: u8) {
    let bits = 8 + (how >> 5);
    let reset = how & 16 == 16;
    let mut d = deflate::Deflater::new(bits, reset);
    let mut i = deflate::Inflater::new(reset);
    for message in input.chunks(1 + usize::from(how) % 97) {
        let mut payload = Vec::new();
        if !d.message(message, &mut payload) {
            assert_eq!(payload, message);
            continue;
        }
        let mut back = Vec::new();
        let mut on = |p: &[u8]| {
            back.extend_from_slice(p);
            Ok(())
        };
        i.feed(&payload, &mut on).expect("its own output inflates");
        i.finish(&mut on).expect("its own output inflates");
        assert_eq!(back, message);
    }
}
