//! A scripted HTTP server for the engine's tests: thread per connection on
//! 127.0.0.1:0, answering every complete request in its buffer through a closure.
#![allow(dead_code)]

use std::io::Read;
use std::time::Instant;

use stampede_engine::{run, Control, LoadSpec, RunResult};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What a scripted server does with the n-th request it reads (n counts from 0 across
/// all connections). Returning false closes the connection.
pub type Behaviour = Arc<dyn Fn(&mut TcpStream, u64) -> bool + Send + Sync>;

/// Serves on 127.0.0.1:0, one thread per connection; returns the URL.
pub fn serve(path: &str, behaviour: Behaviour) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let counter = Arc::new(AtomicU64::new(0));
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            let b = behaviour.clone();
            let counter = counter.clone();
            std::thread::spawn(move || {
                let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    // Answer every complete request in the buffer (pipelining).
                    while let Some(end) = find(&buf, b"\r\n\r\n") {
                        buf.drain(..end + 4);
                        let n = counter.fetch_add(1, Ordering::SeqCst);
                        if !b(&mut s, n) {
                            return;
                        }
                    }
                    match s.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(k) => buf.extend_from_slice(&chunk[..k]),
                    }
                }
            });
        }
    });
    format!("http://{addr}{path}")
}

pub fn find(h: &[u8], n: &[u8]) -> Option<usize> {
    h.windows(n.len()).position(|w| w == n)
}

pub fn ok_response(body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\nServer: scripted\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Validates and runs `s`; asserts it ended within 20 s and that every started request
/// ended exactly once.
pub fn go(mut s: LoadSpec) -> RunResult {
    s.validate().unwrap();
    let started = Instant::now();
    let r = run(&s.clone().plan().unwrap(), Arc::new(Control::default()))
        .unwrap()
        .result;
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "run took too long"
    );
    assert_eq!(
        r.requests.started,
        r.requests.completed + r.requests.failed + r.requests.abandoned,
        "{r:#?}"
    );
    r
}

/// Waits until `ready` holds, or fails the test naming `what` after `within`: for what
/// no event marks (a count another thread reaches), polled as every crate's tests poll.
pub fn eventually(what: &str, within: Duration, mut ready: impl FnMut() -> bool) {
    stampede_testing::eventually(what, within, || ready().then_some(()));
}
