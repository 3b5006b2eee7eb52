//! Fuzzes the engine's HTTP/2 client connection: any bytes from a hostile server, fed
//! in pieces after a few requests, must give responses, resets or a protocol error —
//! never a panic — and what the client queues for a server that does not read its
//! answers (PING and SETTINGS floods) stays bounded.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stampede_engine::h2::{H2Conn, H2Request, MAX_QUEUED_OUTPUT};

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let req = H2Request::from_http1(b"GET /x HTTP/1.1\r\nHost: h\r\n\r\n", "http")
        .expect("a valid request");
    let mut c = H2Conn::new();
    for _ in 0..=first % 8 {
        c.request(&req, true);
    }
    // The high bit: the server reads what the client writes (its output is taken).
    let server_reads = first & 0x80 != 0;
    let mut events = Vec::new();
    for part in rest.chunks(1 + (first as usize & 0x3f)) {
        if c.feed(part, &[], &mut events).is_err() {
            return;
        }
        assert!(
            c.out.len() <= MAX_QUEUED_OUTPUT + 64 * 1024,
            "{} bytes queued",
            c.out.len()
        );
        if server_reads {
            c.out.clear();
        }
        events.clear();
    }
});
