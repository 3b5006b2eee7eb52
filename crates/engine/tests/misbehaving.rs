//! The engine against scripted servers on 127.0.0.1:0 (and a Unix socket): every
//! failure kind is provoked on purpose and counted exactly. Every run is bounded by a
//! request count and short timeouts.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::{find, go, ok_response, serve};

use stampede_engine::{LoadSpec, RequestBuilder, RunResult, Target};

fn spec(url: &str, n: u64, c: usize) -> LoadSpec {
    let target = Target::parse(url).unwrap();
    let req = RequestBuilder::native(&target, "GET", true)
        .build()
        .unwrap();
    let mut s = LoadSpec::new(target, req);
    s.load.requests = Some(n);
    s.load.connections = c;
    s.load.threads = 2;
    s.load.timeout = Some(Duration::from_millis(500));
    s.load.connect_timeout = Duration::from_secs(2);
    s
}

fn errors(r: &RunResult) -> Vec<(String, u64)> {
    r.errors.iter().map(|(k, v)| (k.clone(), *v)).collect()
}

#[test]
fn keepalive_content_length() {
    let url = serve(
        "/pong",
        Arc::new(|s, _| s.write_all(&ok_response("PONG")).is_ok()),
    );
    let r = go(spec(&url, 300, 4));
    assert_eq!(r.requests.completed, 300);
    assert_eq!(r.statuses.get(&200), Some(&300));
    assert_eq!(r.requests.keepalive, 300);
    // Every request on a kept-alive connection: at most the four asked for. (Fewer when
    // one worker thread is scheduled late on a busy machine and finds the shared budget
    // already spent: its connections never open.)
    assert!(
        (1..=4).contains(&r.connections_opened),
        "{}",
        r.connections_opened
    );
    assert_eq!(r.bytes.body, 1200);
    assert_eq!(r.server_software.as_deref(), Some("scripted"));
    assert_eq!(r.document_length, None, "length check was off");
    assert_eq!(r.latency.count, 300);
    assert!(r.errors.is_empty());
}

#[test]
fn chunked_bodies_and_404s() {
    let url = serve(
        "/x",
        Arc::new(|s, n| {
            let resp: &[u8] = if n % 2 == 0 {
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\n\r\n"
            } else {
                b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found"
            };
            s.write_all(resp).is_ok()
        }),
    );
    let mut sp = spec(&url, 100, 1);
    sp.load.threads = 1;
    let r = go(sp);
    assert_eq!(r.requests.completed, 100);
    assert_eq!(r.statuses.get(&200), Some(&50));
    assert_eq!(r.statuses.get(&404), Some(&50));
    assert_eq!(r.non_2xx(), 50);
}

#[test]
fn close_delimited_http10_bodies() {
    let url = serve(
        "/",
        Arc::new(|s, _| {
            let _ = s.write_all(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil close");
            false
        }),
    );
    let r = go(spec(&url, 50, 5));
    assert_eq!(r.requests.completed, 50);
    assert_eq!(r.bytes.body, 50 * 11);
    assert_eq!(r.connections_opened, 50);
    assert_eq!(r.requests.keepalive, 0);
}

#[test]
fn no_keepalive_opens_one_connection_per_request() {
    let url = serve(
        "/",
        Arc::new(|s, _| s.write_all(&ok_response("hi")).is_ok()),
    );
    let mut sp = spec(&url, 40, 4);
    sp.load.keepalive = false;
    let r = go(sp);
    assert_eq!(r.requests.completed, 40);
    assert_eq!(r.connections_opened, 40);
    assert_eq!(r.requests.keepalive, 0);
}

#[test]
fn reset_mid_response() {
    let url = serve(
        "/",
        Arc::new(|s, _| {
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Le");
            // Linger 0: close sends RST instead of FIN.
            let sock = socket2::SockRef::from(&*s);
            let _ = sock.set_linger(Some(Duration::ZERO));
            false
        }),
    );
    let r = go(spec(&url, 20, 2));
    assert_eq!(r.requests.completed, 0);
    assert_eq!(errors(&r), vec![("reset".to_string(), 20)]);
}

#[test]
fn stall_past_the_timeout() {
    let url = serve(
        "/",
        Arc::new(|s, _| {
            // The server never answers: it reads until the client gives up (its
            // timeout, under test) and closes.
            let _ = std::io::copy(s, &mut std::io::sink());
            false
        }),
    );
    let mut sp = spec(&url, 4, 2);
    sp.load.timeout = Some(Duration::from_millis(200));
    let started = Instant::now();
    let r = go(sp);
    assert_eq!(errors(&r), vec![("timeout".to_string(), 4)]);
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[test]
fn garbage_status_line() {
    let url = serve(
        "/",
        Arc::new(|s, _| {
            let _ = s.write_all(b"HTTZ/9 what\r\n\r\n");
            true
        }),
    );
    let r = go(spec(&url, 30, 3));
    assert_eq!(errors(&r), vec![("protocol".to_string(), 30)]);
}

#[test]
fn truncated_body() {
    let url = serve(
        "/",
        Arc::new(|s, _| {
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
            false
        }),
    );
    let r = go(spec(&url, 25, 5));
    assert_eq!(errors(&r), vec![("closed".to_string(), 25)]);
}

#[test]
fn connection_refused() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let r = go(spec(&format!("http://127.0.0.1:{port}/"), 12, 3));
    assert_eq!(errors(&r), vec![("connect_refused".to_string(), 12)]);
    assert_eq!(r.requests.completed, 0);
}

#[test]
fn length_differs_from_first_response() {
    let url = serve(
        "/perf",
        Arc::new(|s, n| {
            let body = if n % 2 == 0 { "abc" } else { "abcd" };
            s.write_all(&ok_response(body)).is_ok()
        }),
    );
    let mut sp = spec(&url, 10, 1);
    sp.load.threads = 1;
    sp.load.check_length = true;
    let r = go(sp);
    assert_eq!(r.requests.completed, 10);
    assert_eq!(r.document_length, Some(3));
    assert_eq!(r.requests.length_mismatch, 5);
}

#[test]
fn pipelined_requests() {
    let url = serve("/", Arc::new(|s, _| s.write_all(&ok_response("P")).is_ok()));
    let mut sp = spec(&url, 1000, 4);
    sp.load.pipeline = 8;
    let r = go(sp);
    assert_eq!(r.requests.completed, 1000);
    // No more connections than asked for (fewer when a late worker finds the budget
    // spent, as in keepalive_content_length).
    assert!((1..=4).contains(&r.connections_opened));
}

#[test]
fn duration_bound_run() {
    let url = serve("/", Arc::new(|s, _| s.write_all(&ok_response("d")).is_ok()));
    let mut sp = spec(&url, 1, 2);
    sp.load.requests = None;
    sp.load.duration = Some(Duration::from_millis(300));
    let r = go(sp);
    assert!(r.requests.completed > 10, "{}", r.requests.completed);
    assert!((r.duration_s - 0.3).abs() < 0.05, "{}", r.duration_s);
    assert!(r.requests.failed == 0);
    let per_second: u64 = r.intervals.iter().map(|i| i.completed).sum();
    assert_eq!(per_second, r.requests.completed);
    // The encoded per-second histograms add up to the run's histogram.
    let mut sum = stampede_engine::Hist::default();
    for iv in &r.intervals {
        let h = iv.decode_histogram().unwrap();
        assert_eq!(h.0.len(), iv.completed);
        sum.add(&h);
    }
    assert_eq!(sum, r.histograms.latency);
}

#[test]
fn unix_socket() {
    let dir = std::env::temp_dir().join(format!("stampede-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("s.sock");
    let _ = std::fs::remove_file(&path);
    let l = std::os::unix::net::UnixListener::bind(&path).unwrap();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let mut pending = Vec::new();
                loop {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(k) => pending.extend_from_slice(&buf[..k]),
                    }
                    while let Some(end) = find(&pending, b"\r\n\r\n") {
                        pending.drain(..end + 4);
                        if s.write_all(&ok_response("unix")).is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    let target = Target::parse("http://localhost/chat")
        .unwrap()
        .with_unix_socket(&path);
    let req = RequestBuilder::native(&target, "GET", true)
        .build()
        .unwrap();
    let mut sp = LoadSpec::new(target, req);
    sp.load.requests = Some(200);
    sp.load.connections = 2;
    let r = go(sp);
    assert_eq!(r.requests.completed, 200);
    assert_eq!(r.bytes.body, 800);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn json_round_trip_keeps_histograms() {
    let url = serve("/", Arc::new(|s, _| s.write_all(&ok_response("j")).is_ok()));
    let r = go(spec(&url, 100, 2));
    let back: RunResult = serde_json::from_str(&r.to_json()).unwrap();
    assert_eq!(back, r);
    assert_eq!(back.histograms.latency.0.len(), 100);
}

#[test]
fn two_responses_to_one_request_are_a_protocol_error() {
    let url = serve(
        "/",
        Arc::new(|s, _| {
            let twice = [ok_response("ONE"), ok_response("TWO")].concat();
            s.write_all(&twice).is_ok()
        }),
    );
    let mut s = spec(&url, 10, 1);
    s.load.threads = 1;
    let r = go(s);
    let protocol = r.errors.get("protocol").copied().unwrap_or(0);
    assert!(protocol >= 1, "{:?}", errors(&r));
    assert!(r.requests.completed < 10, "{:?}", r.requests);
    assert_eq!(r.requests.completed + r.requests.failed, 10);
}
