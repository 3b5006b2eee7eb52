//! Fuzzes the engine's response parser: bytes from a hostile server, fed in two pieces
//! at a split point taken from the input, must complete responses or fail with a
//! protocol error — never panic, never loop without progress.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stampede_engine::h1::parse::ResponseParser;

fuzz_target!(|data: &[u8]| {
    if data.is_empty() {
        return;
    }
    let head = data[0] & 1 == 1;
    let split = (data[0] as usize >> 1).min(data.len() - 1);
    let body = &data[1..];
    let split = split.min(body.len());
    let mut p = ResponseParser::new(head);
    p.capture_server();
    if data[0] & 2 == 2 {
        // Keeping headers and de-chunked bodies (verification's path) must hold too.
        p.keep_responses();
    }
    for part in [&body[..split], &body[split..]] {
        let mut pos = 0;
        while pos < part.len() {
            match p.feed(&part[pos..]) {
                Ok((n, done)) => {
                    assert!(n > 0 || done.is_some(), "no progress");
                    if done.is_some() {
                        let _ = p.take_kept();
                    }
                    assert!(pos + n <= part.len());
                    pos += n;
                }
                Err(_) => return,
            }
        }
    }
    let _ = p.eof();
});
