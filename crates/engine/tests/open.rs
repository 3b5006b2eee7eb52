//! Open-model shapes against scripted servers on 127.0.0.1:0: fixed rate, a freezing
//! server (coordinated omission), Gatling injection, and httperf-style sessions. Every
//! run is bounded in time and count.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::{eventually, go, ok_response, serve};
use stampede_engine::arrivals::Period;
use stampede_engine::inject::Profile;
use stampede_engine::{LoadSpec, RequestBuilder, Session, Shape, Target};

fn spec(url: &str, shape: Shape) -> LoadSpec {
    let target = Target::parse(url).unwrap();
    let req = RequestBuilder::native(&target, "GET", true)
        .build()
        .unwrap();
    let mut s = LoadSpec::new(target, req);
    s.load.shape = shape;
    s.load.timeout = Some(Duration::from_secs(5));
    s
}

/// A loopback port nothing listens on (bound, then let go).
fn dead_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn pong() -> String {
    serve(
        "/",
        Arc::new(|s, _| s.write_all(&ok_response("PONG")).is_ok()),
    )
}

#[test]
fn fixed_rate_offers_exactly_the_arrivals() {
    let url = pong();
    let mut s = spec(
        &url,
        Shape::Rate {
            rate: 2000.0,
            gaps: stampede_engine::arrivals::Gaps::Even,
        },
    );
    s.load.connections = 8;
    s.load.threads = 2;
    s.load.duration = Some(Duration::from_secs(1));
    let r = go(s);
    let open = r.open.clone().unwrap();
    // 2,000 arrivals have an offset below one second; each was sent or counted unsent.
    assert_eq!(r.requests.started + open.never_sent, 2000, "{open:?}");
    assert!(r.requests.completed >= 1990, "{}", r.requests.completed);
    assert_eq!(open.target_rate, Some(2000.0));
    assert!(r.requests.failed == 0);
    assert_eq!(r.histograms.send_lag.0.len(), r.requests.started);
}

#[test]
fn a_freeze_shows_in_corrected_latency_only() {
    // Every request takes the gate; request 300 holds it for 300 ms: the server freezes.
    // One of the tests' few sleeps: the run is on the machine's clock, as a user's
    // is, so that the correction is checked against arrivals the kernel really timed.
    let gate = Arc::new(Mutex::new(()));
    let url = serve(
        "/",
        Arc::new(move |s, n| {
            let _g = gate.lock().unwrap();
            if n == 300 {
                std::thread::sleep(Duration::from_millis(300));
            }
            s.write_all(&ok_response("x")).is_ok()
        }),
    );
    let mut s = spec(
        &url,
        Shape::Rate {
            rate: 1000.0,
            gaps: stampede_engine::arrivals::Gaps::Even,
        },
    );
    s.load.connections = 1;
    s.load.threads = 1;
    s.load.duration = Some(Duration::from_millis(1200));
    let r = go(s);
    let corrected = r.latency.at(90.0).unwrap();
    let uncorrected = r.latency_uncorrected.at(99.0).unwrap();
    assert!(corrected > 50_000, "corrected p90 {corrected} µs");
    assert!(uncorrected < 20_000, "uncorrected p99 {uncorrected} µs");
    // The one request caught in the freeze shows in both maxima.
    assert!(r.latency_uncorrected.max_us >= 290_000);
    let open = r.open.unwrap();
    assert!(open.behind);
    assert!(open.cause.unwrap().contains("connections were busy"));
}

#[test]
fn gatling_open_injection_one_connection_per_user() {
    let url = pong();
    let profile = Profile::parse(&[
        "atOnceUsers(5)".into(),
        "rampUsers(20).during(500 ms)".into(),
    ])
    .unwrap();
    let mut s = spec(&url, Shape::Users(profile));
    s.load.threads = 2;
    let r = go(s);
    let sess = r.sessions.unwrap();
    assert_eq!((sess.started, sess.completed, sess.failed), (25, 25, 0));
    assert_eq!(r.requests.completed, 25);
    assert_eq!(r.connections_opened, 25);
    assert!(r.duration_s >= 0.45, "{}", r.duration_s);
}

#[test]
fn gatling_closed_injection_keeps_concurrency() {
    let active = Arc::new(AtomicU64::new(0));
    let peak = Arc::new(AtomicU64::new(0));
    let (a, p) = (active.clone(), peak.clone());
    let url = serve(
        "/",
        Arc::new(move |s, _| {
            let now = a.fetch_add(1, Ordering::SeqCst) + 1;
            p.fetch_max(now, Ordering::SeqCst);
            // Each answer takes 20 ms of the machine's time (one of the tests' few
            // sleeps), so that users overlap: the peak is what is measured.
            std::thread::sleep(Duration::from_millis(20));
            a.fetch_sub(1, Ordering::SeqCst);
            s.write_all(&ok_response("x")).is_ok()
        }),
    );
    let profile = Profile::parse(&["constantConcurrentUsers(3).during(600 ms)".into()]).unwrap();
    let mut s = spec(&url, Shape::Users(profile));
    s.load.threads = 1;
    let r = go(s);
    let sess = r.sessions.unwrap();
    assert_eq!(sess.max_concurrent, 3);
    assert_eq!(peak.load(Ordering::SeqCst), 3);
    // About 3 users per 20 ms for 600 ms.
    assert!((40..=95).contains(&sess.completed), "{}", sess.completed);
    assert_eq!(sess.failed, 0);
}

#[test]
fn httperf_sessions_with_bursts_and_think_time() {
    let url = pong();
    let mut s = spec(
        &url,
        Shape::Sessions {
            period: Some(Period::Deterministic(0.01)),
            count: 10,
        },
    );
    s.load.threads = 2;
    s.load.session = Session {
        calls: 6,
        burst: 3,
        think: Duration::from_millis(50),
        ..Default::default()
    };
    let r = go(s);
    let sess = r.sessions.unwrap();
    assert_eq!((sess.started, sess.completed), (10, 10));
    assert_eq!(r.requests.completed, 60);
    assert_eq!(r.connections_opened, 10);
    // Two bursts with one think time between them.
    assert!(sess.lifetime.min_us >= 50_000, "{:?}", sess.lifetime);
    assert_eq!(r.open.unwrap().target_rate, Some(100.0));
}

#[test]
fn sequential_sessions_run_one_at_a_time() {
    let url = pong();
    let mut s = spec(
        &url,
        Shape::Sessions {
            period: None,
            count: 5,
        },
    );
    s.load.threads = 4;
    s.load.session = Session {
        calls: 2,
        burst: 2,
        think: Duration::ZERO,
        ..Default::default()
    };
    let r = go(s);
    let sess = r.sessions.unwrap();
    assert_eq!(sess.max_concurrent, 1);
    assert_eq!(sess.completed, 5);
    assert_eq!(r.requests.completed, 10);
}

#[test]
fn sessions_against_a_dead_port_fail_cleanly() {
    let port = dead_port();
    let mut s = spec(
        &format!("http://127.0.0.1:{port}/"),
        Shape::Sessions {
            period: Some(Period::Deterministic(0.001)),
            count: 20,
        },
    );
    s.load.session.calls = 3;
    let r = go(s);
    let sess = r.sessions.unwrap();
    assert_eq!((sess.started, sess.failed), (20, 20));
    assert_eq!(r.errors.get("connect_refused"), Some(&20));
}

#[test]
fn a_session_script_sends_its_steps_in_order_with_their_pauses() {
    use std::io::Read;
    // Records each connection's request lines; HEAD gets a head with a length but no body.
    let seen: Arc<Mutex<Vec<Vec<String>>>> = Arc::new(Mutex::new(Vec::new()));
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let log = seen.clone();
    std::thread::spawn(move || {
        for s in l.incoming().take(4) {
            let Ok(mut s) = s else { continue };
            let log = log.clone();
            std::thread::spawn(move || {
                s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                let (mut buf, mut chunk, mut lines) = (Vec::new(), [0u8; 4096], Vec::new());
                loop {
                    while let Some(end) = crate::common::find(&buf, b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
                        let len: usize = head
                            .lines()
                            .find_map(|l| l.strip_prefix("Content-Length: "))
                            .map_or(0, |v| v.trim().parse().unwrap());
                        if buf.len() < end + 4 + len {
                            break;
                        }
                        buf.drain(..end + 4 + len);
                        let line = head.lines().next().unwrap_or("").to_string();
                        let reply: &[u8] = if line.starts_with("HEAD") {
                            b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n"
                        } else {
                            b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nPONG"
                        };
                        lines.push(line);
                        if s.write_all(reply).is_err() {
                            break;
                        }
                    }
                    match s.read(&mut chunk) {
                        Ok(0) | Err(_) => break,
                        Ok(k) => buf.extend_from_slice(&chunk[..k]),
                    }
                }
                log.lock().unwrap().push(lines);
            });
        }
    });
    let url = format!("http://{addr}/a");
    let mut s = spec(
        &url,
        Shape::Users(Profile::parse(&["atOnceUsers(4)".to_string()]).unwrap()),
    );
    let target = Target::parse(&url).unwrap();
    let step = |m: &str, path: &str, body: &[u8], pause_ms: u64| {
        stampede_engine::Step::new(
            RequestBuilder::new(m, path)
                .header("Host", &target.authority)
                .body(body.to_vec())
                .build()
                .unwrap(),
            Duration::from_millis(pause_ms),
        )
    };
    s.load.script = vec![
        step("GET", "/a", b"", 0),
        step("HEAD", "/b", b"", 50),
        step("POST", "/c", b"xyz", 0),
    ];
    let r = go(s);
    assert_eq!((r.requests.completed, r.requests.failed), (12, 0));
    let sess = r.sessions.clone().unwrap();
    assert_eq!((sess.completed, sess.calls), (4, 3));
    assert!(sess.lifetime.min_us >= 50_000, "{:?}", sess.lifetime);
    eventually(
        "every session's connection read",
        Duration::from_secs(5),
        || seen.lock().unwrap().len() >= 4,
    );
    for lines in seen.lock().unwrap().iter() {
        assert_eq!(
            lines,
            &["GET /a HTTP/1.1", "HEAD /b HTTP/1.1", "POST /c HTTP/1.1"]
        );
    }
}

#[test]
fn a_script_without_sessions_is_refused() {
    let url = pong();
    let mut s = spec(&url, Shape::Closed);
    s.load.requests = Some(1);
    s.load.script = vec![stampede_engine::Step::new(
        s.load.request.clone(),
        Duration::ZERO,
    )];
    let e = s.validate().unwrap_err().to_string();
    assert!(e.contains("session shape"), "{e}");
}

#[test]
fn a_stop_ends_a_run_with_millions_of_users_due_at_once() {
    let port = dead_port();
    let mut s = spec(
        &format!("http://127.0.0.1:{port}/"),
        Shape::Users(Profile::parse(&["atOnceUsers(100000000)".to_string()]).unwrap()),
    );
    s.load.threads = 1;
    s.validate().unwrap();
    let control = Arc::new(stampede_engine::Control::default());
    let stopper = {
        let control = control.clone();
        std::thread::spawn(move || {
            // Stopped once the run is under way: its first connects have failed.
            eventually("the run is under way", Duration::from_secs(5), || {
                control.failed.load(Ordering::Relaxed) > 0
            });
            control.stop();
        })
    };
    let t = Instant::now();
    let r = stampede_engine::run(&s.clone().plan().unwrap(), control)
        .unwrap()
        .result;
    stopper.join().unwrap();
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    assert!(r.sessions.unwrap().started > 0);
}
