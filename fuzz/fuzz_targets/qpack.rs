//! Fuzzes the QPACK decoder with a dynamic table: the input's first byte splits it
//! into encoder-stream bytes (fed in two pieces) and a field section. Each must be
//! applied or decoded within the limits, or fail with QPACK's or HTTP/3's error code —
//! never panic, never hand over more than the section limit, never hold more than the
//! table's capacity. The section is decoded twice: the second time may be answered
//! from the decoder's memory of the last section, and must come out the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stampede_wire::h3::qpack::Decoder;

const LIMIT: usize = 512;
const TABLE: usize = 256;

fuzz_target!(|data: &[u8]| {
    if data.is_empty() {
        return;
    }
    let rest = &data[1..];
    let split = (data[0] as usize).min(rest.len());
    let (stream, section) = rest.split_at(split);
    let mut d = Decoder::with_table(LIMIT, TABLE);
    let half = stream.len() / 2;
    if d.encoder_stream(&stream[..half]).is_err() || d.encoder_stream(&stream[half..]).is_err() {
        return;
    }
    let mut decode = || {
        let mut size = 0usize;
        let mut fields = Vec::new();
        let r = d.decode(section, &mut |n, v| {
            size += n.len() + v.len() + 32;
            assert!(size <= LIMIT);
            fields.push((n.to_vec(), v.to_vec()));
        });
        (r.map_err(|e| e.code), fields)
    };
    let first = decode();
    assert_eq!(first, decode());
});
