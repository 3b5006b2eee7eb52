//! Fuzzes the server-sent event parser: a hostile stream, fed in two pieces at a split
//! point taken from the input, must dispatch events or fail as too large — never
//! panic, and never hold more than its limit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stampede_wire::sse::{SseItem, SseParser};

const MAX: usize = 256;

fuzz_target!(|data: &[u8]| {
    if data.is_empty() {
        return;
    }
    let body = &data[1..];
    let split = (data[0] as usize).min(body.len());
    let mut p = SseParser::new(MAX);
    let mut on = |item: SseItem<'_>| {
        if let SseItem::Event { kind, data } = item {
            assert!(data.len() <= MAX && kind.len() <= MAX);
        }
    };
    for part in [&body[..split], &body[split..]] {
        if p.feed(part, &mut on).is_err() {
            return;
        }
    }
});
