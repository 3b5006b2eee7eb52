//! The engine against servers that send without pause: an endless chunked body of
//! chunk extensions, endless 1xx answers, endless trailers. The run's end and the
//! request timeout must hold however fast bytes arrive. In a test binary of its own,
//! since these servers keep a core busy while they run.

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::{go, serve};
use stampede_engine::{LoadSpec, RequestBuilder, Target};

/// A server that, asked once, sends `head` and then `unit` repeated without pause (for
/// at most 15 s, or until the client goes).
fn endless(head: &'static [u8], unit: &'static [u8]) -> String {
    serve(
        "/",
        Arc::new(move |s, _| {
            let _ = s.write_all(head);
            let block = unit.repeat(65536 / unit.len());
            let until = Instant::now() + Duration::from_secs(15);
            while Instant::now() < until {
                if s.write_all(&block).is_err() {
                    break;
                }
            }
            false
        }),
    )
}

#[test]
fn an_endless_answer_cannot_hold_the_run_past_its_deadline_or_timeout() {
    let cases: [(&[u8], &[u8]); 3] = [
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"1;ext=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\nx\r\n",
        ),
        (b"", b"HTTP/1.1 100 Continue\r\n\r\n"),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n",
            b"X-Trailer: aaaaaaaaaaaaaaaaaaaaaaaaa\r\n",
        ),
    ];
    for (head, unit) in cases {
        let url = endless(head, unit);
        let target = Target::parse(&url).unwrap();
        let req = RequestBuilder::native(&target, "GET", true)
            .build()
            .unwrap();
        let mut s = LoadSpec::new(target, req);
        s.load.connections = 1;
        s.load.threads = 1;
        s.load.duration = Some(Duration::from_secs(2));
        s.load.timeout = Some(Duration::from_millis(700));
        let t = Instant::now();
        let r = go(s);
        let took = t.elapsed();
        let what = String::from_utf8_lossy(&unit[..20]).into_owned();
        assert!(took < Duration::from_secs(4), "{what:?}: ran {took:?}");
        assert_eq!(r.requests.completed, 0, "{what:?}");
        assert!(r.requests.failed >= 1, "{what:?}: {:?}", r.errors);
    }
}
