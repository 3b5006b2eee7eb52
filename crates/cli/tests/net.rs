//! How connections are made, end to end: through an HTTP proxy (plain-http requests
//! forwarded in absolute form with the proxy's credentials; https tunnelled with
//! CONNECT to the reference server over TLS; a proxy that refuses the tunnel), from a
//! chosen local address (`load --local-address`, ab's `-B`), closed with a reset
//! (httperf's `--close-with-reset`), and ab's `-w` HTML tables. Every server is on
//! 127.0.0.0/8 and every run is bounded by a request count.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::recorder::{stampede, text, Recorder};

/// What the test proxy was asked: each request line and its Proxy-Authorization.
#[derive(Debug, Clone, PartialEq)]
struct Heard {
    line: String,
    authorization: Option<String>,
}

/// A small HTTP proxy on 127.0.0.1:0: answers forwarded requests itself (200, body
/// `ok`), opens CONNECT tunnels to the named host and port (or refuses them with 407
/// when `refuse`), and records what it was asked. Stops when dropped.
struct TestProxy {
    port: u16,
    heard: Arc<Mutex<Vec<Heard>>>,
    stop: Arc<AtomicBool>,
}

impl TestProxy {
    fn start(refuse: bool) -> TestProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let heard = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (h, st) = (heard.clone(), stop.clone());
        std::thread::spawn(move || {
            // Blocking accepts; the drop wakes the last one with a connection.
            while let Ok((sock, _)) = listener.accept() {
                if st.load(Ordering::Relaxed) {
                    break;
                }
                let h = h.clone();
                std::thread::spawn(move || proxy_conn(sock, &h, refuse));
            }
        });
        TestProxy { port, heard, stop }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn heard(&self) -> Vec<Heard> {
        self.heard.lock().unwrap().clone()
    }
}

impl Drop for TestProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = std::net::TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// One client connection of the test proxy.
fn proxy_conn(mut sock: TcpStream, heard: &Mutex<Vec<Heard>>, refuse: bool) {
    sock.set_nonblocking(false).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = match sock.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        buf.extend_from_slice(&chunk[..n]);
        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            buf.drain(..end + 4);
            let mut lines = head.split("\r\n");
            let line = lines.next().unwrap_or("").to_string();
            let authorization = lines
                .filter_map(|l| l.split_once(':'))
                .find(|(n, _)| n.eq_ignore_ascii_case("proxy-authorization"))
                .map(|(_, v)| v.trim().to_string());
            heard.lock().unwrap().push(Heard {
                line: line.clone(),
                authorization,
            });
            if let Some(to) = line
                .strip_prefix("CONNECT ")
                .and_then(|r| r.split(' ').next())
            {
                if refuse {
                    let _ = sock.write_all(
                        b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n",
                    );
                    return;
                }
                let Ok(server) = TcpStream::connect(to) else {
                    let _ = sock.write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n");
                    return;
                };
                sock.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    .unwrap();
                return splice(sock, server);
            }
            if sock
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                .is_err()
            {
                return;
            }
        }
    }
}

/// Copies bytes both ways until either side closes.
fn splice(client: TcpStream, server: TcpStream) {
    client.set_read_timeout(None).unwrap();
    let (mut c2, mut s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
    let up = std::thread::spawn(move || {
        let mut c = client;
        let mut s = server;
        let _ = std::io::copy(&mut c, &mut s);
        let _ = s.shutdown(Shutdown::Write);
    });
    let _ = std::io::copy(&mut s2, &mut c2);
    let _ = c2.shutdown(Shutdown::Write);
    let _ = up.join();
}

fn json(args: &[&str]) -> serde_json::Value {
    let out = stampede(&[args, &["-q", "--json", "-"]].concat());
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn plain_http_goes_through_the_proxy_in_absolute_form_with_its_credentials() {
    let proxy = TestProxy::start(false);
    // Nothing listens on the target's port: only the proxy can answer.
    let gone = TcpListener::bind("127.0.0.1:0").unwrap();
    let target = format!(
        "http://127.0.0.1:{}/a?b=1",
        gone.local_addr().unwrap().port()
    );
    drop(gone);
    let with_user = proxy.url().replace("http://", "http://al:s%40me@");
    let r = json(&["load", "-x", &with_user, "-n", "12", "-c", "2", &target]);
    assert_eq!(r["requests"]["completed"], 12, "{r}");
    let heard = proxy.heard();
    assert_eq!(heard.len(), 12, "{heard:?}");
    for h in &heard {
        assert_eq!(h.line, format!("GET {target} HTTP/1.1"));
        // base64("al:s@me")
        assert_eq!(h.authorization.as_deref(), Some("Basic YWw6c0BtZQ=="));
    }
    // ab's -X and -P say the same.
    let out = stampede(&[
        "ab",
        "-X",
        &format!("127.0.0.1:{}", proxy.port),
        "-P",
        "al:s@me",
        "-n",
        "3",
        &target,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("Complete requests:      3"));
    let ab: Vec<Heard> = proxy.heard().split_off(12);
    assert_eq!(ab.len(), 3, "{ab:?}");
    assert!(ab.iter().all(|h| h.line == format!("GET {target} HTTP/1.0")
        && h.authorization.as_deref() == Some("Basic YWw6c0BtZQ==")));
}

#[test]
fn https_is_tunnelled_with_connect_and_a_refused_tunnel_is_named() {
    let (cert, key) = stampede_tls::self_signed(&["127.0.0.1".into(), "localhost".into()]).unwrap();
    let dir = crate::common::recorder::tempdir::Dir::new();
    let (c, k) = (dir.0.join("c.pem"), dir.0.join("k.pem"));
    std::fs::write(&c, cert).unwrap();
    std::fs::write(&k, key).unwrap();
    let tls = stampede_tls::server_config(
        &stampede_tls::ServerCert::Files { cert: c, key: k },
        vec![b"h2".to_vec(), b"http/1.1".to_vec()],
        None,
    )
    .unwrap();
    let srv = crate::common::srv_with(stampede_server::Config {
        threads: 1,
        tls: Some(tls),
        ..Default::default()
    });
    let url = format!("https://localhost:{}/pong", srv.addr().port());
    let proxy = TestProxy::start(false);
    for http2 in [false, true] {
        let mut args = vec!["load", "--insecure", "-x", proxy.url().leak(), "-n", "20"];
        args.extend(["-c", "2", "-t", "1", &url]);
        if http2 {
            args.push("--http2");
        }
        let r = json(&args);
        assert_eq!(r["requests"]["completed"], 20, "{r}");
        assert_eq!(r["requests"]["failed"], 0, "{r}");
        let alpn = &r["tls"]["alpn"];
        assert_eq!(alpn, if http2 { "h2" } else { "http/1.1" }, "{r}");
    }
    // One tunnel per connection (and the probe's), each to the URL's host and port.
    let heard = proxy.heard();
    let connect = format!("CONNECT localhost:{} HTTP/1.1", srv.addr().port());
    assert!(
        heard.len() >= 4 && heard.iter().all(|h| h.line == connect),
        "{heard:?}"
    );

    let refusing = TestProxy::start(true);
    let out = stampede(&["load", "--insecure", "-x", &refusing.url(), "-n", "5", &url]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("through the proxy") && err.contains("407 Proxy Authentication Required"),
        "{err}"
    );
}

#[test]
fn connections_come_from_the_local_address_asked_for() {
    let rec = Recorder::start();
    let r = json(&[
        "load",
        "--local-address",
        "127.0.0.2",
        "-n",
        "10",
        "-c",
        "2",
        &rec.url("/"),
    ]);
    assert_eq!(r["requests"]["completed"], 10, "{r}");
    let out = stampede(&[
        "ab",
        "-B",
        "127.0.0.3",
        "-b",
        "65536",
        "-n",
        "4",
        &rec.url("/"),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let peers: Vec<String> = rec.seen().iter().map(|s| s.peer.ip().to_string()).collect();
    assert_eq!(peers.len(), 14);
    assert!(peers[..10].iter().all(|p| p == "127.0.0.2"), "{peers:?}");
    assert!(peers[10..].iter().all(|p| p == "127.0.0.3"), "{peers:?}");
    // Several, in turn: a range and a list, over one thread's six connections.
    let r = json(&[
        "load",
        "--local-address",
        "127.0.0.4-127.0.0.5,127.0.0.6",
        "-n",
        "60",
        "-c",
        "6",
        "-t",
        "1",
        &rec.url("/"),
    ]);
    assert_eq!(r["requests"]["completed"], 60, "{r}");
    let mut conns: Vec<std::net::SocketAddr> = rec.seen()[14..].iter().map(|s| s.peer).collect();
    conns.sort();
    conns.dedup();
    let ips: Vec<String> = conns.iter().map(|p| p.ip().to_string()).collect();
    assert_eq!(
        ips,
        [
            "127.0.0.4",
            "127.0.0.4",
            "127.0.0.5",
            "127.0.0.5",
            "127.0.0.6",
            "127.0.0.6"
        ],
        "each address takes two of the six connections"
    );
    for (value, said) in [
        (
            "127.0.0.5-127.0.0.1",
            "a range goes from the lower address up",
        ),
        ("127.0.0.1-::1", "a range's ends are of one family"),
        ("10.0.0.0-10.0.1.255", "more than 256 addresses"),
        ("127.0.0.1,localhost", "'localhost' is not an IP address"),
    ] {
        let out = stampede(&["load", "--local-address", value, "-n", "1", &rec.url("/")]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{value}: {err}");
        assert!(err.contains(said), "{value}: {err}");
    }
    // An address that is not this machine's is named before any run.
    let out = stampede(&[
        "load",
        "--local-address",
        "192.0.2.1",
        "-n",
        "1",
        &rec.url("/"),
    ]);
    let err = text(&out.stderr);
    assert!(
        !out.status.success() && err.contains("--local-address 192.0.2.1"),
        "{err}"
    );
}

#[test]
fn httperf_closes_with_a_reset_when_asked() {
    // A server that answers one request per connection, then sees how the client left
    // (the probe before each run connects and leaves without a request: not counted).
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let ends = Arc::new(Mutex::new(Vec::new()));
    let e = ends.clone();
    std::thread::spawn(move || {
        for sock in listener.incoming().take(8) {
            let mut sock = sock.unwrap();
            sock.set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            let mut buf = [0u8; 4096];
            if !matches!(sock.read(&mut buf), Ok(n) if n > 0) {
                continue;
            }
            sock.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                .unwrap();
            let end = match sock.read(&mut buf) {
                Ok(0) => "fin".to_string(),
                Ok(_) => "data".to_string(),
                Err(e) => format!("{:?}", e.kind()),
            };
            e.lock().unwrap().push(end);
        }
    });
    let port = port.to_string();
    for reset in [false, true] {
        let mut args = vec!["httperf", "--server", "127.0.0.1", "--port", &port];
        args.extend(["--num-conns", "3", "--rate", "100"]);
        if reset {
            args.push("--close-with-reset");
        }
        let out = stampede(&args);
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    crate::common::eventually("six connections ended", Duration::from_secs(10), || {
        (ends.lock().unwrap().len() >= 6).then_some(())
    });
    let ends = ends.lock().unwrap().clone();
    assert_eq!(ends[..3], ["fin", "fin", "fin"], "{ends:?}");
    assert_eq!(
        ends[3..],
        ["ConnectionReset", "ConnectionReset", "ConnectionReset"],
        "{ends:?}"
    );
}

#[test]
fn ab_prints_html_tables_with_w() {
    let rec = Recorder::start();
    let out = stampede(&[
        "ab",
        "-w",
        "-x",
        "border=1",
        "-z",
        "class=v",
        "-n",
        "5",
        "-c",
        "1",
        &rec.url("/"),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let o = text(&out.stdout);
    assert!(o.contains("<table border=1>"), "{o}");
    assert!(
        o.contains(
            "<tr ><th colspan=2 class=v>Complete requests:</th><td colspan=2 class=v>5</td></tr>"
        ),
        "{o}"
    );
    assert!(o.contains("<th class=v>Total:</th>"), "{o}");
    assert!(
        o.contains("Server Software:</th><td colspan=2 class=v>rec</td>"),
        "{o}"
    );
    assert!(o.trim_end().ends_with("</table>"), "{o}");
    assert!(!o.contains("Percentage of the requests"), "{o}");
}

/// Why io_uring cannot carry connections here, if it cannot (after checking that
/// HTTP/3 is refused for it by name, wherever the run is).
fn uring_refused() -> Option<stampede_ring::RingError> {
    // Refused as usage, before anything is dialled.
    let out = stampede(&[
        "load",
        "--io",
        "io_uring",
        "--http3",
        "--insecure",
        "-n",
        "1",
        "https://127.0.0.1:9/",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("HTTP/3's UDP sockets are carried by epoll"),
        "{err}"
    );
    stampede_ring::probe().err()
}

#[test]
fn the_kernel_interface_is_chosen_named_in_the_result_and_refused_with_its_forms() {
    let (_srv, url) = crate::common::serve(&["--io", "epoll"]);
    let url = format!("{url}/pong");
    let r = json(&["load", "--io", "epoll", "-n", "300", "-c", "4", &url]);
    assert_eq!(r["requests"]["completed"], 300, "{r}");
    assert_eq!(r["origin"]["io"], "epoll", "{r}");
    assert!(crate::common::schema_errors(&r).is_empty());
    match uring_refused() {
        Some(why) => eprintln!("io_uring is refused here, its half is skipped: {why}"),
        None => {
            let (_srv, url) = crate::common::serve(&["--io", "io_uring"]);
            let url = format!("{url}/pong");
            let r = json(&[
                "load",
                "--io",
                "io_uring",
                "-n",
                "300",
                "-c",
                "4",
                "--pipeline",
                "4",
                &url,
            ]);
            assert_eq!(r["requests"]["completed"], 300, "{r}");
            assert_eq!(r["requests"]["failed"], 0, "{r}");
            assert_eq!(r["origin"]["io"], "io_uring", "{r}");
            assert!(crate::common::schema_errors(&r).is_empty());
            // -v says which carried the run.
            let out = stampede(&["load", "--io", "io_uring", "-v", "-n", "50", &url]);
            assert!(
                text(&out.stdout).contains("io          io_uring"),
                "{}",
                text(&out.stdout)
            );
            // TLS at both ends on the ring, HTTP/1.1 and HTTP/2 by ALPN.
            let (_tls, https) = crate::common::serve(&["--io", "io_uring", "--tls-self-signed"]);
            let https = format!("{https}/pong");
            for h2 in [false, true] {
                // A full handshake a request over HTTP/1.1; streams over HTTP/2.
                let mode = if h2 { "--http2" } else { "--no-keepalive" };
                let r = json(&[
                    "load",
                    "--io",
                    "io_uring",
                    "--insecure",
                    "-n",
                    "200",
                    "-c",
                    "4",
                    mode,
                    &https,
                ]);
                assert_eq!(r["requests"]["completed"], 200, "{r}");
                assert_eq!(r["requests"]["failed"], 0, "{r}");
                assert_eq!(r["origin"]["io"], "io_uring", "{r}");
                let alpn = if h2 { "h2" } else { "http/1.1" };
                assert_eq!(r["tls"]["alpn"], alpn, "{r}");
                assert_eq!(r["tls"]["handshakes"], r["connections_opened"], "{r}");
            }
            // STAMPEDE_IO sets what auto means, for the dialects.
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_stampede"))
                .env("STAMPEDE_IO", "epoll")
                .args(["load", "-v", "-n", "50", &url])
                .output()
                .unwrap();
            assert!(
                text(&out.stdout).contains("io          epoll"),
                "{}",
                text(&out.stdout)
            );
        }
    }
    // A wrong value names the flag and the accepted forms; so does the variable.
    let out = stampede(&["load", "--io", "kqueue", "-n", "1", &url]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("--io") && err.contains("auto, epoll or io_uring"),
        "{err}"
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_stampede"))
        .env("STAMPEDE_IO", "poll")
        .args(["load", "-n", "1", &url])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert!(
        err.contains("STAMPEDE_IO") && err.contains("auto, epoll or io_uring"),
        "{err}"
    );
    let out = stampede(&["serve", "--io", "kqueue"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--io"), "{}", text(&out.stderr));
}
