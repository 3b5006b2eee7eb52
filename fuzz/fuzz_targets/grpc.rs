//! Fuzzes gRPC's message reader and header parsers: a hostile body, fed in two pieces
//! at a split point taken from the input, must yield messages within the limit or
//! fail — never panic, never keep more than the limit; statuses, timeouts and
//! messages parse or are refused.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stampede_wire::grpc::{self, MessageReader};

const MAX: usize = 256;

fuzz_target!(|data: &[u8]| {
    if data.is_empty() {
        return;
    }
    let body = &data[1..];
    let _ = grpc::parse_status(body);
    let _ = grpc::parse_timeout(body);
    let _ = grpc::decode_message(body);
    let split = (data[0] as usize).min(body.len());
    let mut r = MessageReader::new(MAX, data[0] & 1 == 1);
    let mut on = |m: grpc::Message<'_>| {
        assert!(m.len as usize <= MAX && m.bytes.len() <= MAX);
    };
    for part in [&body[..split], &body[split..]] {
        if r.feed(part, &mut on).is_err() {
            return;
        }
    }
    let _ = r.finish();
});
