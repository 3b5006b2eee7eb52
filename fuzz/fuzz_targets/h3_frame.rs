//! Fuzzes HTTP/3's frame reader: a hostile stream, fed in two pieces at a split point
//! taken from the input, must give frames (a SETTINGS or GOAWAY payload read as one)
//! or fail with an HTTP/3 error code — never panic, and never hold a frame over its
//! limit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stampede_wire::h3::{goaway_id, kind, Frame, FrameReader, Settings};

const LIMIT: usize = 256;

fuzz_target!(|data: &[u8]| {
    if data.is_empty() {
        return;
    }
    let body = &data[1..];
    let split = (data[0] as usize).min(body.len());
    let mut r = FrameReader::new(LIMIT);
    let mut on = |f: Frame<'_>| {
        match f {
            Frame::Data { .. } => {}
            Frame::Other { kind: t, payload } => {
                assert!(payload.len() <= LIMIT);
                match t {
                    kind::SETTINGS => {
                        Settings::parse(payload)?;
                    }
                    kind::GOAWAY => {
                        goaway_id(payload)?;
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    };
    for part in [&body[..split], &body[split..]] {
        if r.feed(part, &mut on).is_err() {
            return;
        }
    }
});
