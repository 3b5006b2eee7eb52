//! HTTP/3 end to end: `stampede load --http3` against the reference server's HTTP/3
//! on 127.0.0.1 (closed and fixed-rate load, streams, streamed answers), the Alt-Svc
//! the server's other answers carry, what is refused before a run (an http:// URL, a
//! server with no HTTP/3), and servers that misbehave on UDP (silent, garbage): each
//! counted as its kind, the run ending on time. Every run is bounded by a count or a
//! duration.

use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::tls::{json_run, stampede};
use stampede_server::{Config, Running};
use stampede_tls::ServerCert;

/// A directory for one test's files, removed when the test is done with it.
fn tmp(name: &str) -> crate::common::recorder::tempdir::Dir {
    crate::common::recorder::tempdir::Dir::named("h3", name)
}

/// The reference server over TLS with HTTP/3, its certificate written into `dir`.
fn h3_server(dir: &Path, http3: bool) -> (Running, PathBuf) {
    h3_server_with(dir, |c| c.http3 = http3)
}

/// [`h3_server`] with HTTP/3 on and `tune` applied to its configuration.
fn h3_server_with(dir: &Path, tune: impl FnOnce(&mut Config)) -> (Running, PathBuf) {
    let (cert, key) = stampede_tls::self_signed(&["127.0.0.1".into(), "localhost".into()]).unwrap();
    let (c, k) = (dir.join("server.pem"), dir.join("server.key"));
    std::fs::write(&c, cert).unwrap();
    std::fs::write(&k, key).unwrap();
    let tls = stampede_tls::server_config(
        &ServerCert::Files {
            cert: c.clone(),
            key: k,
        },
        stampede_tls::alpn(true),
        None,
    )
    .unwrap();
    let mut config = Config {
        threads: 1,
        tls: Some(tls),
        http3: true,
        ..Config::default()
    };
    tune(&mut config);
    (crate::common::srv_with(config), c)
}

#[test]
fn a_request_head_over_the_servers_limit_is_refused_on_its_stream() {
    let dir = tmp("head");
    let (srv, ca) = h3_server_with(&dir, |c| c.limits.max_head = 1024);
    let (url, ca) = (format!("https://{}/pong", srv.addr()), ca.to_str().unwrap());
    let big = format!("x-big: {}", "a".repeat(2000));
    let base = [
        "load", &url, "--http3", "-c", "1", "-n", "5", "--cacert", ca,
    ];
    // Within the server's --max-head: answered.
    let r = json_run(&base);
    assert_eq!(r["requests"]["completed"], 5, "{r}");
    // Past it: each stream reset with H3_EXCESSIVE_LOAD, the connection serving on.
    let out = stampede(&[&base[..], &["-H", &big, "-q", "--json", "-"]].concat());
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["requests"]["completed"], 0, "{r}");
    assert_eq!(r["errors"]["h3_stream_reset"], 5, "{r}");
    assert_eq!(r["quic"]["resets"]["H3_EXCESSIVE_LOAD"], 5, "{r}");
    assert_eq!(r["quic"]["connections"], 1, "{r}");
    srv.stop().unwrap();
}

#[test]
fn closed_and_fixed_rate_load_over_http3_is_answered_and_reports_quic() {
    let dir = tmp("closed");
    let (srv, ca) = h3_server(&dir, true);
    let url = format!("https://{}/pong", srv.addr());
    let ca = ca.to_str().unwrap();
    let r = json_run(&[
        "load",
        &url,
        "--http3",
        "--streams",
        "4",
        "-c",
        "3",
        "-t",
        "1",
        "-n",
        "3000",
        "--cacert",
        ca,
    ]);
    assert_eq!(r["requests"]["completed"], 3000, "{r}");
    assert_eq!(r["requests"]["failed"], 0);
    assert_eq!(r["statuses"]["200"], 3000);
    assert_eq!(r["settings"]["http3"], true);
    assert_eq!(r["tls"]["alpn"], "h3");
    assert_eq!(r["tls"]["handshakes"], 3);
    assert_eq!(r["quic"]["connections"], 3);
    assert!(r["quic"]["packets_sent"].as_u64().unwrap() >= 3000 / 4);
    assert!(r["quic"]["rtt_max_us"].as_u64().unwrap() > 0);
    assert!(r["quic"]["congestion_limited_us"].is_u64(), "{r}");
    // The client closed every connection itself: none ended otherwise.
    assert!(r["quic"].get("ends").is_none(), "{r}");
    // A fixed rate, corrected for coordinated omission, held.
    let r = json_run(&[
        "load", &url, "--http3", "-c", "4", "-t", "1", "--rate", "500", "-d", "1s", "--cacert", ca,
    ]);
    let done = r["requests"]["completed"].as_u64().unwrap();
    assert!((450..=550).contains(&done), "{r}");
    assert_eq!(r["requests"]["failed"], 0);
    assert!(r["open"].is_object(), "{r}");
    // Sessions on new connections resume and send their first request as 0-RTT.
    let r = json_run(&[
        "load",
        &url,
        "--http3",
        "--tls-resume",
        "--inject",
        "constantUsersPerSec(40) during(1)",
        "--calls",
        "2",
        "--cacert",
        ca,
    ]);
    assert_eq!(r["requests"]["failed"], 0, "{r}");
    assert!(r["tls"]["resumed"].as_u64().unwrap() >= 20, "{r}");
    assert_eq!(r["tls"]["resumed"], r["quic"]["zero_rtt"], "{r}");
    // The text summary names the protocol and QUIC's figures.
    let out = stampede(&[
        "load", &url, "--http3", "-n", "200", "-c", "2", "--cacert", ca,
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("HTTP/3, 1 stream per connection"), "{text}");
    assert!(text.contains("quic        2 connections"), "{text}");
    srv.stop().unwrap();
}

#[test]
fn bodies_and_streamed_answers_arrive_whole_over_http3() {
    let dir = tmp("bodies");
    let (srv, ca) = h3_server(&dir, true);
    let ca = ca.to_str().unwrap();
    let r = json_run(&[
        "load",
        &format!("https://{}/bytes/300000", srv.addr()),
        "--http3",
        "-c",
        "2",
        "-n",
        "20",
        "--cacert",
        ca,
    ]);
    assert_eq!(r["requests"]["completed"], 20, "{r}");
    assert_eq!(r["bytes"]["body"], 20 * 300_000);
    let r = json_run(&[
        "load",
        &format!("https://{}/sse/4?gap=5", srv.addr()),
        "--http3",
        "--sse",
        "-c",
        "2",
        "-n",
        "6",
        "--cacert",
        ca,
    ]);
    assert_eq!(r["requests"]["completed"], 6, "{r}");
    assert_eq!(r["stream"]["events"], 24, "{r}");
    assert_eq!(r["stream"]["done"], 6, "{r}");
    srv.stop().unwrap();
}

/// h2load over HTTP/3 reports QPACK's space savings, as it reports HPACK's.
#[test]
fn h2load_over_http3_reports_the_header_compression() {
    let dir = tmp("h2load-h3");
    let (srv, _ca) = h3_server(&dir, true);
    let url = format!("https://{}/pong", srv.addr());
    let out = stampede(&["h2load", "--alpn-list", "h3", "-n", "50", "-c", "1", &url]);
    let o = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{o}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = o
        .lines()
        .find(|l| l.starts_with("traffic:"))
        .unwrap_or_else(|| panic!("{o}"));
    let savings: f64 = (line.split("space savings ").nth(1))
        .and_then(|v| v.split('%').next()?.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!(savings > 0.0 && savings < 100.0, "{line}");
    srv.stop().unwrap();
}

#[test]
fn https_answers_advertise_http3_with_alt_svc() {
    use std::io::{Read, Write};
    let dir = tmp("altsvc");
    let (srv, _) = h3_server(&dir, true);
    let cfg = stampede_tls::client_config(&stampede_tls::ClientOptions {
        insecure: true,
        alpn: vec![b"http/1.1".to_vec()],
        ..Default::default()
    })
    .unwrap();
    let tcp = std::net::TcpStream::connect(srv.addr()).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let name = stampede_tls::rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let conn = stampede_tls::rustls::ClientConnection::new(cfg, name).unwrap();
    let mut s = stampede_tls::rustls::StreamOwned::new(conn, tcp);
    s.write_all(b"GET /pong HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    let port = srv.addr().port();
    assert!(
        text.contains(&format!("Alt-Svc: h3=\":{port}\"; ma=86400\r\n")),
        "{text}"
    );
    srv.stop().unwrap();
}

#[test]
fn http3_is_refused_before_the_run_where_it_cannot_be_had() {
    // An http:// URL: QUIC is always encrypted.
    let out = stampede(&["load", "http://127.0.0.1:9/", "--http3", "-n", "1"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("http3") && err.contains("https://"), "{err}");
    // A TLS server without HTTP/3: named before the run, not a run of errors.
    let dir = tmp("nohttp3");
    let (srv, ca) = h3_server(&dir, false);
    let started = Instant::now();
    let out = stampede(&[
        "load",
        &format!("https://{}/pong", srv.addr()),
        "--http3",
        "-n",
        "10",
        "--cacert",
        ca.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("HTTP/3"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10));
    // TLS 1.2 only: QUIC needs TLS 1.3.
    let out = stampede(&[
        "load",
        &format!("https://{}/pong", srv.addr()),
        "--http3",
        "--tls-version",
        "1.2",
        "-n",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("TLS 1.3"));
    srv.stop().unwrap();
    // A certificate not trusted: said with what to do, as over TCP.
    let (srv, _ca) = h3_server(&dir, true);
    let url = format!("https://{}/pong", srv.addr());
    let out = stampede(&["load", &url, "--http3", "-n", "1"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not trusted") && err.contains("--cacert FILE") && err.contains("--insecure"),
        "{err}"
    );
    srv.stop().unwrap();
}

/// A UDP "server" on 127.0.0.1 answering every datagram with what `answer` makes of
/// it (nothing when it gives nothing), until dropped.
struct Udp {
    addr: std::net::SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<u64>>,
}

impl Udp {
    fn start(answer: fn(&[u8]) -> Vec<Vec<u8>>) -> Udp {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        let addr = s.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let halt = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut buf = [0u8; 65536];
            let mut seen = 0;
            while !halt.load(Ordering::Relaxed) {
                if let Ok((n, from)) = s.recv_from(&mut buf) {
                    seen += 1;
                    for d in answer(&buf[..n]) {
                        let _ = s.send_to(&d, from);
                    }
                }
            }
            seen
        });
        Udp {
            addr,
            stop,
            thread: Some(thread),
        }
    }

    fn stop(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().unwrap().join().unwrap()
    }
}

/// Runs the engine itself against `addr` over HTTP/3 (the command refuses such a
/// server before the run), for `d`.
fn engine_h3(addr: std::net::SocketAddr, d: Duration) -> (stampede_engine::RunResult, Duration) {
    use stampede_engine::{Control, LoadSpec, RequestBuilder, Target};
    let target = Target::parse(&format!("https://{addr}/")).unwrap();
    let req = RequestBuilder::native(&target, "GET", true)
        .build()
        .unwrap();
    let mut spec = LoadSpec::new(target, req);
    spec.tls = Some(
        stampede_tls::client_config(&stampede_tls::ClientOptions {
            insecure: true,
            ..Default::default()
        })
        .unwrap(),
    );
    spec.load.protocol.http3 = Some(Default::default());
    spec.load.connections = 2;
    spec.load.duration = Some(d);
    spec.load.connect_timeout = Duration::from_millis(300);
    spec.load.timeout = Some(Duration::from_secs(1));
    spec.validate().unwrap();
    let started = Instant::now();
    let r = stampede_engine::run(&spec.clone().plan().unwrap(), Arc::new(Control::default()))
        .unwrap()
        .result;
    (r, started.elapsed())
}

#[test]
fn silent_and_garbage_udp_servers_are_counted_and_the_run_ends_on_time() {
    // Never answers the handshake: connect timeouts, one per attempt.
    let silent = Udp::start(|_| Vec::new());
    let (r, took) = engine_h3(silent.addr, Duration::from_secs(1));
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert_eq!(r.requests.completed, 0);
    assert!(
        r.errors.get("connect_timeout").copied().unwrap_or(0) >= 2,
        "{:?}",
        r.errors
    );
    assert!(silent.stop() > 0);
    // Answers every datagram with garbage (and a Version Negotiation that offers
    // nothing this end speaks): dropped by QUIC, or a failed version; never a hang.
    let garbage = Udp::start(|d| {
        let mut vn = vec![0x80, 0, 0, 0, 0];
        // Echo the connection IDs of a long header, offering version 0x0a0a0a0a.
        if d.len() > 6 && d[0] & 0x80 != 0 {
            let dcid = d[5] as usize;
            if d.len() > 6 + dcid {
                let scid = d[6 + dcid] as usize;
                if d.len() >= 7 + dcid + scid {
                    vn.push(scid as u8);
                    vn.extend_from_slice(&d[7 + dcid..7 + dcid + scid]);
                    vn.push(dcid as u8);
                    vn.extend_from_slice(&d[6..6 + dcid]);
                    vn.extend_from_slice(&[0x0a, 0x0a, 0x0a, 0x0a]);
                }
            }
        }
        vec![vec![0xff; 40], b"HTTP/1.1 200 OK\r\n\r\n".to_vec(), vn]
    });
    let (r, took) = engine_h3(garbage.addr, Duration::from_secs(1));
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert_eq!(r.requests.completed, 0);
    let failed: u64 = r.errors.values().sum();
    assert!(failed >= 2, "{:?}", r.errors);
    let kinds: Vec<&String> = r.errors.keys().collect();
    assert!(
        kinds
            .iter()
            .all(|k| ["connect_timeout", "quic_version"].contains(&k.as_str())),
        "{kinds:?}"
    );
    garbage.stop();
}

/// aioquic's Python, where installed: `STAMPEDE_AIOQUIC_PYTHON`, or the environment
/// CI makes under `~/.cache/stampede/venv-h3`.
fn aioquic() -> Option<PathBuf> {
    crate::common::python_with("STAMPEDE_AIOQUIC_PYTHON", &["aioquic"], "aioquic==1.7.2")
        .map(PathBuf::from)
}

const PEER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/peers/h3_peer.py");

/// Runs the peer script's client side (`args` after the script) to its end and
/// returns the JSON it prints.
fn peer_json(python: &Path, args: &[&str]) -> serde_json::Value {
    let out = std::process::Command::new(python)
        .arg(PEER)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A child process killed when dropped.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts aioquic's script with `args` (a server) and waits for the port it reports.
fn start_peer(python: &Path, args: &[&str]) -> (Child, String) {
    use std::io::BufRead;
    let mut child = Child(
        std::process::Command::new(python)
            .arg(PEER)
            .args(args)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    std::io::BufReader::new(child.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line.trim().strip_prefix("ready ").expect("the peer's port");
    (child, port.to_string())
}

#[test]
fn aioquic_answers_stampede_and_stampede_answers_aioquic() {
    let Some(python) = aioquic() else {
        return;
    };
    let dir = tmp("aioquic");
    // stampede's client against aioquic's server.
    let (cert, key) = stampede_tls::self_signed(&["localhost".into()]).unwrap();
    let (c, k) = (dir.join("peer.pem"), dir.join("peer.key"));
    std::fs::write(&c, cert).unwrap();
    std::fs::write(&k, key).unwrap();
    let (server, port) = start_peer(
        &python,
        &["server", c.to_str().unwrap(), k.to_str().unwrap()],
    );
    let base = format!("https://localhost:{port}");
    let ca = c.to_str().unwrap();
    let r = json_run(&[
        "load",
        &format!("{base}/pong"),
        "--http3",
        "-c",
        "2",
        "--streams",
        "4",
        "-n",
        "400",
        "--cacert",
        ca,
    ]);
    assert_eq!(r["requests"]["completed"], 400, "{r}");
    assert_eq!(r["statuses"]["200"], 400);
    assert_eq!(r["bytes"]["body"], 400 * 5);
    let r = json_run(&[
        "load",
        &format!("{base}/bytes/200000"),
        "--http3",
        "-c",
        "2",
        "-n",
        "10",
        "--cacert",
        ca,
    ]);
    assert_eq!(r["requests"]["completed"], 10, "{r}");
    assert_eq!(r["bytes"]["body"], 10 * 200_000);
    drop(server);
    // aioquic's client against stampede's server: many streams at once, bodies
    // larger than aioquic's flow-control windows.
    let (srv, _) = h3_server(&dir, true);
    let port = srv.addr().port().to_string();
    for (path, n, bytes) in [("/pong", 50, 50 * 4), ("/bytes/100000", 20, 20 * 100_000)] {
        let v = peer_json(
            &python,
            &["client", "127.0.0.1", &port, path, &n.to_string()],
        );
        assert_eq!(v["statuses"]["200"], n, "{v}");
        assert_eq!(v["bytes"], bytes, "{v}");
    }
    srv.stop().unwrap();
}

#[test]
fn caddy_serves_http3_to_stampede() {
    let installed = std::process::Command::new("caddy")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !installed {
        return crate::common::missing_peer("caddy (`apt-get install caddy`)");
    }
    let dir = tmp("caddy");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // Caddy's own CA, nothing installed in the system's trust store, no admin port.
    let caddyfile = format!(
        "{{\n\tadmin off\n\tlocal_certs\n\tskip_install_trust\n\tstorage file_system {d}/data\n\tservers {{\n\t\tprotocols h1 h2 h3\n\t}}\n}}\nhttps://localhost:{port} {{\n\ttls internal\n\trespond /pong \"pong\" 200\n}}\n",
        d = dir.display()
    );
    std::fs::write(dir.join("Caddyfile"), caddyfile).unwrap();
    let _caddy = Child(
        std::process::Command::new("caddy")
            .args(["run", "--adapter", "caddyfile", "--config"])
            .arg(dir.join("Caddyfile"))
            .env("HOME", &*dir)
            .env("XDG_DATA_HOME", &*dir)
            .env("XDG_CONFIG_HOME", &*dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let url = format!("https://localhost:{port}/pong");
    // Ready once its HTTP/3 answers one request.
    crate::common::eventually("caddy's HTTP/3", Duration::from_secs(20), || {
        let out = stampede(&["load", &url, "--http3", "--insecure", "-n", "1", "-q"]);
        out.status.success().then_some(())
    });
    let r = json_run(&[
        "load",
        &url,
        "--http3",
        "--insecure",
        "-c",
        "4",
        "--streams",
        "8",
        "-n",
        "3000",
    ]);
    assert_eq!(r["requests"]["completed"], 3000, "{r}");
    assert_eq!(r["statuses"]["200"], 3000);
    assert_eq!(r["tls"]["alpn"], "h3");
}

#[test]
fn servers_that_break_http3_are_counted_by_kind_and_the_run_ends_on_time() {
    let Some(python) = aioquic() else {
        return;
    };
    let dir = tmp("bad");
    let (cert, key) = stampede_tls::self_signed(&["localhost".into()]).unwrap();
    let (c, k) = (dir.join("peer.pem"), dir.join("peer.key"));
    std::fs::write(&c, cert).unwrap();
    std::fs::write(&k, key).unwrap();
    // What each broken server's requests fail as (none: they are answered), and
    // how QUIC's figures name what happened.
    let cases = [
        (
            "data-first",
            Some("h3_protocol"),
            Some(("ends", "closed here: H3_FRAME_UNEXPECTED")),
        ),
        ("huge-head", Some("protocol"), None),
        (
            "reset",
            Some("h3_stream_reset"),
            Some(("resets", "H3_INTERNAL_ERROR")),
        ),
        ("control-flood", None, None),
    ];
    for (mode, kind, named) in cases {
        let (_server, port) = start_peer(
            &python,
            &["bad", mode, c.to_str().unwrap(), k.to_str().unwrap()],
        );
        let started = Instant::now();
        let out = stampede(&[
            "load",
            &format!("https://localhost:{port}/x"),
            "--http3",
            "--insecure",
            "-c",
            "2",
            "--streams",
            "2",
            "-d",
            "1s",
            "--timeout",
            "2s",
            "-q",
            "--json",
            "-",
        ]);
        assert!(started.elapsed() < Duration::from_secs(8), "{mode}");
        let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        if let Some((map, name)) = named {
            assert!(
                r["quic"][map][name].as_u64().unwrap_or(0) > 0,
                "{mode}: {r}"
            );
        }
        match kind {
            Some(k) => {
                assert_eq!(r["requests"]["completed"], 0, "{mode}: {r}");
                assert!(r["errors"][k].as_u64().unwrap_or(0) > 0, "{mode}: {r}");
                let others = r["errors"]
                    .as_object()
                    .unwrap()
                    .keys()
                    .filter(|e| *e != k)
                    .count();
                assert_eq!(others, 0, "{mode}: {r}");
            }
            None => {
                assert!(
                    r["requests"]["completed"].as_u64().unwrap() > 0,
                    "{mode}: {r}"
                );
                assert_eq!(r["requests"]["failed"], 0, "{mode}: {r}");
            }
        }
    }
}

#[test]
fn the_server_answers_broken_requests_with_http3_s_codes() {
    let Some(python) = aioquic() else {
        return;
    };
    let dir = tmp("badclient");
    let (srv, _) = h3_server(&dir, true);
    let port = srv.addr().port().to_string();
    // Each broken request and the answer RFC 9114 gives it: a stream error (reset)
    // for a malformed message, a connection error (close) for frames out of order,
    // a QPACK failure or a forbidden stream.
    let cases = [
        ("data-first", r#"{"closed": 261}"#),
        ("no-method", r#"{"reset": 270}"#),
        ("bad-qpack", r#"{"closed": 512}"#),
        ("two-controls", r#"{"closed": 259}"#),
        ("push", r#"{"closed": 259}"#),
        ("good", r#"{"answered": true}"#),
    ];
    for (mode, expect) in cases {
        let got = peer_json(&python, &["badclient", "127.0.0.1", &port, mode]);
        let want: serde_json::Value = serde_json::from_str(expect).unwrap();
        assert_eq!(got, want, "{mode}");
    }
    // The server carried on through all of them.
    let r = json_run(&[
        "load",
        &format!("https://localhost:{port}/pong"),
        "--http3",
        "--insecure",
        "-n",
        "100",
    ]);
    assert_eq!(r["requests"]["completed"], 100, "{r}");
    srv.stop().unwrap();
}

#[test]
fn two_segments_of_one_http3_run_merge_into_one_result() {
    let dir = tmp("segments");
    let (srv, ca) = h3_server(&dir, true);
    let url = format!("https://localhost:{}/pong", srv.addr().port());
    let ca = ca.to_str().unwrap().to_string();
    let at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        + 1.0;
    let at = format!("{at:.3}");
    let children: Vec<(std::process::Child, PathBuf)> = (1..=2)
        .map(|k| {
            let json = dir.join(format!("{k}.json"));
            let child = std::process::Command::new(env!("CARGO_BIN_EXE_stampede"))
                .args([
                    "load", "-q", "--http3", "--rate", "600", "-d", "1s", "-c", "4",
                ])
                .args(["-t", "1", "--cacert", &ca, "--start-at", &at, "--segment"])
                .arg(format!("{k}/2"))
                .arg("--json")
                .arg(&json)
                .arg(&url)
                .spawn()
                .unwrap();
            (child, json)
        })
        .collect();
    let mut files = Vec::new();
    let mut parts = Vec::new();
    for (mut child, json) in children {
        assert!(child.wait().unwrap().success());
        let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        parts.push(r);
        files.push(json.to_string_lossy().into_owned());
    }
    let merged = dir.join("merged.json");
    let mut args: Vec<&str> = vec!["merge"];
    args.extend(files.iter().map(String::as_str));
    args.extend(["--json", merged.to_str().unwrap()]);
    let out = stampede(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m: serde_json::Value = serde_json::from_slice(&std::fs::read(&merged).unwrap()).unwrap();
    let completed: u64 = parts
        .iter()
        .map(|p| p["requests"]["completed"].as_u64().unwrap())
        .sum();
    assert!((590..=600).contains(&completed), "{completed}");
    assert_eq!(m["requests"]["completed"].as_u64().unwrap(), completed);
    // QUIC's figures add up: connections and packets are sums, the RTT's extremes
    // the parts' extremes.
    let sum = |k: &str| {
        parts
            .iter()
            .map(|p| p["quic"][k].as_u64().unwrap())
            .sum::<u64>()
    };
    assert_eq!(
        m["quic"]["connections"].as_u64().unwrap(),
        sum("connections")
    );
    assert_eq!(
        m["quic"]["packets_sent"].as_u64().unwrap(),
        sum("packets_sent")
    );
    let max = parts
        .iter()
        .map(|p| p["quic"]["rtt_max_us"].as_u64().unwrap())
        .max();
    assert_eq!(m["quic"]["rtt_max_us"].as_u64(), max);
    assert_eq!(m["settings"]["http3"], true, "{m}");
    srv.stop().unwrap();
}

#[test]
fn a_journey_walks_the_shop_over_http3_and_over_http2_one_request_at_a_time_per_user() {
    let dir = tmp("journey");
    let (srv, ca) = h3_server(&dir, true);
    let docs = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/journeys/");
    for f in ["shop.toml", "users.csv"] {
        std::fs::copy(format!("{docs}{f}"), dir.0.join(f)).unwrap();
    }
    let journey = dir.0.join("shop.toml");
    let (url, ca) = (format!("https://{}/", srv.addr()), ca.to_str().unwrap());
    let j = journey.to_str().unwrap();
    for proto in ["--http3", "--http2"] {
        let r = json_run(&[
            "load",
            &url,
            proto,
            "--journey",
            j,
            "-c",
            "3",
            "-t",
            "1",
            "-n",
            "240",
            "--cacert",
            ca,
        ]);
        let t = |name: &str| {
            (r["targets"].as_array().unwrap().iter())
                .find(|t| t["name"] == name)
                .unwrap_or_else(|| panic!("{proto}: no {name} in {}", r["targets"]))
                .clone()
        };
        let n = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
        let (login, items, add) = (t("login"), t("items"), t("add"));
        // The token each login hands out is carried in the Authorization header of the
        // steps after it, over the protocol's own fields: only the row with the wrong
        // password is refused.
        assert_eq!(
            login["captures_missed"]["token: no match"], login["statuses"]["401"],
            "{proto}"
        );
        for step in [&items, &add] {
            assert_eq!(
                step["statuses"].as_object().unwrap().len(),
                1,
                "{proto}: {step}"
            );
            assert!(n(&step["statuses"]["200"]) > 0, "{proto}: {step}");
            assert!(step.get("checks_failed").is_none(), "{proto}: {step}");
        }
        let (lists, adds) = (n(&items["completed"]), n(&add["completed"]));
        assert!(
            adds <= 3 * lists && adds + 9 >= 3 * lists,
            "{proto}: {lists} lists, {adds} adds"
        );
        assert!(
            n(&r["sessions"]["completed"]) > 0,
            "{proto}: {}",
            r["sessions"]
        );
    }
    // A user sends one request at a time: more streams per connection are refused.
    let out = stampede(&[
        "load",
        &url,
        "--http2",
        "--streams",
        "4",
        "--journey",
        j,
        "-n",
        "1",
        "--cacert",
        ca,
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("one at a time on a connection: one stream each (--streams 1)"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
