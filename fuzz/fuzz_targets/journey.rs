#![no_main]
//! What journeys are read from — a journey file, a browser's recording (HAR), an
//! Artillery script — chosen by the input's first byte: any input is read or refused
//! with its reason, never a panic or a hang.

use libfuzzer_sys::fuzz_target;
use stampede_journey::feeder::{Feeder, FeederError, Format};

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    match which % 3 {
        0 => {
            let _ = stampede_journey::journey::Journey::parse("f.toml", text, |_| {
                Feeder::parse("users.csv", b"user,password\nann,pw\n", Format::Csv).map_err(
                    |e| FeederError {
                        place: e.place,
                        reason: e.reason,
                    },
                )
            });
        }
        1 => {
            let _ = stampede_journey::har::convert("f.har", rest, &Default::default());
        }
        _ => {
            let _ = stampede_journey::artillery::parse("f.yml", text, |_| {
                Ok(b"ann,pw\nbob,pw2\n".to_vec())
            });
        }
    }
});
