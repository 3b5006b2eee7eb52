//! Fuzzes WebSocket's frame reader: hostile bytes, read as a server reads a client
//! and as a client reads a server, fed in two pieces at a split point taken from the
//! input, must yield messages within the limit or fail with a close code — never
//! panic, never keep more than one message within the limit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stampede_wire::ws::{self, Event, Reader, ReaderOptions};

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
            deflate: data[0] & 2 == 2,
        });
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
});
