//! Fuzzes the decoding of histograms and interval logs read from files a merge is
//! given: whatever the bytes claim (lengths, bounds, counts, times), decoding returns a
//! histogram or an error within the size limits — never a panic, never an allocation
//! sized by a header alone.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stampede_engine::{decode_checked, Hist};

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = decode_checked(data) {
        let mut sum = Hist::default();
        // Twice: a sum past the format's count limit is refused, never wrapped.
        for _ in 0..2 {
            if sum.add_checked(&h).is_err() {
                break;
            }
        }
        let _ = sum.to_base64();
    }
    // The same bytes as an interval log.
    let _ = stampede_engine::merge::from_hlog(data);
});
