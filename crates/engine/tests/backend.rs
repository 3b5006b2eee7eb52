//! Both kernel interfaces carry the same runs: the reference server on 127.0.0.1:0 and
//! the load on epoll, then both on io_uring (where this kernel allows it), over
//! HTTP/1.1 (one request at a time, pipelined, a connection per request, bodies
//! larger than the ring's buffers) and HTTP/2, closed and at a fixed rate, and over
//! TLS (both protocols, full handshakes, large bodies); each run
//! counts exactly and says which interface carried it. Every run is bounded in count
//! and time.

use std::sync::Arc;
use std::time::Duration;

use stampede_engine::net::IoBackend;
use stampede_engine::{run, Control, LoadSpec, RequestBuilder, Shape, Target};
use stampede_server::{Config, Running};

use crate::common::go;

/// Whether io_uring can carry connections here; says why not when it cannot.
fn uring_here() -> bool {
    match stampede_ring::probe() {
        Ok(()) => true,
        Err(why) => {
            eprintln!("io_uring is refused here, its half of the test is skipped: {why}");
            false
        }
    }
}

fn spec(srv: &Running, path: &str, io: IoBackend) -> LoadSpec {
    let target = Target::parse(&srv.url(path)).unwrap();
    let req = RequestBuilder::native(&target, "GET", true)
        .build()
        .unwrap();
    let mut s = LoadSpec::new(target, req);
    s.load.connections = 16;
    s.load.threads = 2;
    s.load.timeout = Some(Duration::from_secs(5));
    s.load.socket.io = io;
    s
}

fn each_backend(check: impl Fn(IoBackend)) {
    check(IoBackend::Epoll);
    if uring_here() {
        check(IoBackend::IoUring);
    }
}

/// Every one of the run's `n` requests was answered, none failed.
fn all_answered(r: &stampede_engine::RunResult, n: u64, io: IoBackend) {
    let got = (r.requests.completed, r.requests.failed);
    assert_eq!(got, (n, 0), "{io:?}: {:?}", r.errors);
}

fn server(io: IoBackend) -> Running {
    Running::local(Config {
        threads: 2,
        io,
        ..Config::default()
    })
    .unwrap()
}

#[test]
fn http1_closed_pipelined_and_a_connection_per_request_count_the_same_on_both() {
    each_backend(|io| {
        let srv = server(io);
        let mut s = spec(&srv, "/pong", io);
        s.load.requests = Some(4_000);
        let r = go(s.clone());
        all_answered(&r, 4_000, io);
        assert_eq!(r.origin.io, io.name(), "the result says which carried it");
        assert_eq!(r.origin.io_note, None);

        s.load.pipeline = 8;
        let r = go(s.clone());
        all_answered(&r, 4_000, io);
        assert_eq!(r.statuses.get(&200), Some(&4_000));

        if io == IoBackend::Epoll && std::env::var_os("STAMPEDE_IO").is_none() {
            // auto keeps epoll for a thread of one connection, and says why.
            let mut one = s.clone();
            (one.load.connections, one.load.threads) = (1, 1);
            one.load.requests = Some(100);
            one.load.socket.io = IoBackend::Auto;
            let auto = go(one);
            assert_eq!(auto.origin.io, "epoll");
            let note = auto.origin.io_note.unwrap_or_default();
            assert!(note.contains("one connection"), "{note}");
        }
        s.load.pipeline = 1;
        s.load.keepalive = false;
        s.load.requests = Some(600);
        let r = go(s);
        all_answered(&r, 600, io);
        assert!(r.connections_opened >= 600, "{}", r.connections_opened);
    });
}

#[test]
fn bodies_larger_than_the_rings_buffers_arrive_whole() {
    each_backend(|io| {
        let srv = server(io);
        // 1 MB bodies: over a hundred of the ring's 8 KiB buffers each.
        let mut s = spec(&srv, "/bytes/1000000", io);
        s.load.connections = 4;
        s.load.requests = Some(40);
        s.load.check_length = true;
        let r = go(s);
        all_answered(&r, 40, io);
        assert_eq!(r.bytes.body, 40 * 1_000_000, "{io:?}");
    });
}

#[test]
fn http2_streams_and_a_fixed_rate_count_the_same_on_both() {
    each_backend(|io| {
        let srv = server(io);
        let mut s = spec(&srv, "/pong", io);
        s.load.protocol.http2 = true;
        s.load.pipeline = 8;
        s.load.requests = Some(4_000);
        let r = go(s.clone());
        all_answered(&r, 4_000, io);
        assert_eq!(r.origin.io, io.name());

        s.load.protocol.http2 = false;
        s.load.pipeline = 1;
        s.load.requests = None;
        s.load.duration = Some(Duration::from_millis(1_500));
        s.load.shape = Shape::Rate {
            rate: 2_000.0,
            gaps: stampede_engine::arrivals::Gaps::Even,
        };
        let r = go(s.clone());
        if io == IoBackend::Epoll && std::env::var_os("STAMPEDE_IO").is_none() {
            // auto keeps epoll where the open model naps, and says why.
            s.load.socket.io = IoBackend::Auto;
            s.load.duration = Some(Duration::from_millis(200));
            let auto = go(s);
            assert_eq!(auto.origin.io, "epoll");
            let note = auto.origin.io_note.unwrap_or_default();
            assert!(note.contains("naps"), "{note}");
        }
        // 3,000 arrivals due; every one started, none failed.
        let open = r.open.as_ref().expect("an open-model run");
        assert_eq!(r.requests.failed, 0, "{io:?}");
        assert!(
            (2_990..=3_000).contains(&(r.requests.started + open.never_sent)),
            "{io:?}: {:?} {open:?}",
            r.requests
        );
    });
}

fn tls_server(io: IoBackend) -> Running {
    let tls = stampede_tls::server_config(
        &stampede_tls::ServerCert::SelfSigned(vec!["127.0.0.1".into()]),
        stampede_tls::alpn(true),
        None,
    )
    .unwrap();
    Running::local(Config {
        threads: 2,
        io,
        tls: Some(tls),
        ..Config::default()
    })
    .unwrap()
}

fn https(srv: &Running, path: &str, io: IoBackend) -> LoadSpec {
    let target = Target::parse(&srv.url(path).replacen("http:", "https:", 1)).unwrap();
    let req = RequestBuilder::native(&target, "GET", true)
        .build()
        .unwrap();
    let mut s = LoadSpec::new(target, req);
    s.load.connections = 8;
    s.load.threads = 2;
    s.load.timeout = Some(Duration::from_secs(5));
    s.load.socket.io = io;
    s.tls = Some(client_tls(false));
    s
}

/// A client that offers ALPN's `h2` with `http/1.1` when `h2`, `http/1.1` alone when
/// not.
fn client_tls(h2: bool) -> Arc<stampede_tls::rustls::ClientConfig> {
    stampede_tls::client_config(&stampede_tls::ClientOptions {
        insecure: true,
        alpn: stampede_tls::alpn(h2),
        ..Default::default()
    })
    .unwrap()
}

#[test]
fn tls_over_http1_and_http2_with_full_handshakes_and_large_bodies_counts_the_same_on_both() {
    each_backend(|io| {
        let srv = tls_server(io);
        let mut s = https(&srv, "/pong", io);
        s.load.requests = Some(2_000);
        let r = go(s.clone());
        all_answered(&r, 2_000, io);
        assert_eq!(r.origin.io, io.name(), "the result says which carried it");
        let tls = r.protocols.tls.as_ref().expect("TLS figures");
        assert_eq!(tls.handshakes, r.connections_opened, "{io:?}");
        assert_eq!(tls.alpn.as_deref(), Some("http/1.1"));

        // ALPN's h2, eight streams a connection.
        s.load.protocol.http2 = true;
        s.load.pipeline = 8;
        s.tls = Some(client_tls(true));
        let r = go(s.clone());
        all_answered(&r, 2_000, io);
        assert_eq!(
            r.protocols.tls.as_ref().and_then(|t| t.alpn.as_deref()),
            Some("h2")
        );
        assert_eq!(r.statuses.get(&200), Some(&2_000));

        // A connection per request: every one a full handshake, closed with
        // close_notify.
        (s.load.protocol.http2, s.load.pipeline) = (false, 1);
        s.tls = Some(client_tls(false));
        s.load.keepalive = false;
        s.load.requests = Some(300);
        let r = go(s);
        all_answered(&r, 300, io);
        assert!(r.connections_opened >= 300, "{}", r.connections_opened);
        assert_eq!(
            r.protocols.tls.as_ref().map(|t| t.handshakes),
            Some(r.connections_opened)
        );

        // 1 MB bodies: records spanning the ring's buffers, every byte counted.
        let mut s = https(&srv, "/bytes/1000000", io);
        s.load.connections = 4;
        s.load.requests = Some(24);
        s.load.check_length = true;
        let r = go(s);
        all_answered(&r, 24, io);
        assert_eq!(r.bytes.body, 24 * 1_000_000, "{io:?}");
    });
}

/// A run of one request over HTTP/3 to a port nothing listens on.
fn h3_nowhere() -> LoadSpec {
    let target = Target::parse("https://127.0.0.1:9/").unwrap();
    let req = RequestBuilder::native(&target, "GET", true)
        .build()
        .unwrap();
    let mut s = LoadSpec::new(target, req);
    s.load.requests = Some(1);
    s.load.connect_timeout = Duration::from_millis(500);
    s.load.protocol.http3 = Some(Default::default());
    s.tls = Some(
        stampede_tls::client_config(&stampede_tls::ClientOptions {
            insecure: true,
            ..Default::default()
        })
        .unwrap(),
    );
    s
}

#[test]
fn io_uring_asked_for_where_it_cannot_carry_the_run_is_refused_naming_why() {
    // Refused by the spec's check, naming the protocol and the flag.
    let mut s = h3_nowhere();
    s.load.socket.io = IoBackend::IoUring;
    let e = s.validate().unwrap_err().to_string();
    assert!(e.contains("HTTP/3") && e.contains("--io io_uring"), "{e}");
    // auto takes epoll for it and says why.
    let mut s = h3_nowhere();
    s.validate().unwrap();
    if std::env::var_os("STAMPEDE_IO").is_none() {
        let r = run(&s.plan().unwrap(), Arc::new(Control::default()))
            .unwrap()
            .result;
        assert_eq!(r.origin.io, "epoll");
        let note = r.origin.io_note.unwrap_or_default();
        assert!(note.contains("HTTP/3"), "{note}");
    }
}

#[test]
fn the_backend_is_read_as_named_and_anything_else_is_refused_with_the_forms() {
    assert_eq!("io_uring".parse::<IoBackend>(), Ok(IoBackend::IoUring));
    assert_eq!("epoll".parse::<IoBackend>(), Ok(IoBackend::Epoll));
    assert_eq!("auto".parse::<IoBackend>(), Ok(IoBackend::Auto));
    let e = "kqueue".parse::<IoBackend>().unwrap_err().to_string();
    assert!(e.contains("auto, epoll or io_uring"), "{e}");
    // A saved spec leaves auto out, and keeps the others.
    let mut s = LoadSpec::new(
        Target::parse("http://127.0.0.1:9/").unwrap(),
        RequestBuilder::native(&Target::parse("http://127.0.0.1:9/").unwrap(), "GET", true)
            .build()
            .unwrap(),
    );
    let json = serde_json::to_string(&s.load.socket).unwrap();
    assert!(!json.contains("\"io\""), "{json}");
    s.load.socket.io = IoBackend::IoUring;
    let json = serde_json::to_string(&s.load.socket).unwrap();
    assert!(json.contains("\"io\":\"io_uring\""), "{json}");
}
