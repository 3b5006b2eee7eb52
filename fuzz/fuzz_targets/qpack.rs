//! Fuzzes the QPACK decoder: a hostile field section must decode to fields within the
//! section limit or fail with QPACK's or HTTP/3's error code — never panic, and never
//! hand over more than the limit; the same bytes as an encoder stream are checked too.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stampede_wire::h3::qpack::{encoder_stream, Decoder};

const LIMIT: usize = 512;

fuzz_target!(|data: &[u8]| {
    let mut d = Decoder::new(LIMIT);
    let mut size = 0usize;
    let _ = d.decode(data, &mut |n, v| {
        size += n.len() + v.len() + 32;
        assert!(size <= LIMIT);
    });
    let _ = encoder_stream(data);
});
