//! Fuzzes what a fleet's coordinator reads from its segments: frame lines (ready, a
//! second with its histograms, a missed start, a failure), hellos and orders, each
//! second merged as the live view merges it. Whatever a segment sends is merged or
//! refused — never a panic, never a merge past the run's bounds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stampede_lab::fleet::{Frame, Hello, LiveMerge, Order, PREFIX};

fuzz_target!(|data: &[u8]| {
    let mut merge = LiveMerge::default();
    let running = [0usize, 1, 2];
    for (i, line) in data.split(|&b| b == b'\n').enumerate() {
        if let Some(Ok(Frame::Second(iv))) = Frame::parse(line) {
            let _ = merge.add(i % 3, &iv);
        }
        if let Some(rest) = line.strip_prefix(PREFIX.as_bytes()) {
            let _ = serde_json::from_slice::<Hello>(rest);
        }
        let _ = Order::parse(&String::from_utf8_lossy(line));
        // Segments going as the lines go; every whole second given out.
        for s in merge.ready(&running[i % 3..], i % 7 == 6) {
            let _ = s.latency.to_base64();
        }
    }
});
