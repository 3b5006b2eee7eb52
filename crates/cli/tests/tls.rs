//! HTTPS end to end: the reference server with a generated certificate, `stampede
//! load` and the dialects against it, certificate failures (clear before a run,
//! counted during one), a plain-HTTP server asked for TLS, handshakes per request
//! without keep-alive and with resumption, TLS 1.2, and mutual TLS. Every run is
//! bounded by a request count.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use serde_json::Value;
use stampede_engine::{Control, LoadSpec, RequestBuilder, Target};
use stampede_server::Config;
use stampede_server::Running;
use stampede_tls::{ClientOptions, ServerCert};

/// A directory for one test's files, removed when the test is done with it.
fn tmp(name: &str) -> crate::common::recorder::tempdir::Dir {
    crate::common::recorder::tempdir::Dir::named("tls", name)
}

/// Writes a self-signed certificate for 127.0.0.1 and its key into `dir`.
fn certificate(dir: &Path) -> (PathBuf, PathBuf) {
    let (cert, key) = stampede_tls::self_signed(&["127.0.0.1".into(), "localhost".into()]).unwrap();
    let (c, k) = (dir.join("server.pem"), dir.join("server.key"));
    std::fs::write(&c, cert).unwrap();
    std::fs::write(&k, key).unwrap();
    (c, k)
}

/// The reference server over TLS with the certificate in `dir`.
fn tls_server(dir: &Path, client_ca: Option<&Path>) -> (Running, PathBuf) {
    tls_server_with(dir, client_ca, vec![b"http/1.1".to_vec()])
}

/// The reference server over TLS, its ALPN offering `alpn`.
fn tls_server_offering(dir: &Path, alpn: Vec<Vec<u8>>) -> (Running, PathBuf) {
    tls_server_with(dir, None, alpn)
}

fn tls_server_with(dir: &Path, client_ca: Option<&Path>, alpn: Vec<Vec<u8>>) -> (Running, PathBuf) {
    let (cert, key) = certificate(dir);
    let tls = stampede_tls::server_config(
        &ServerCert::Files {
            cert: cert.clone(),
            key,
        },
        alpn,
        client_ca,
    )
    .unwrap();
    let srv = crate::common::srv_with(Config {
        threads: 1,
        tls: Some(tls),
        ..Config::default()
    });
    (srv, cert)
}

fn https(srv: &Running, path: &str) -> String {
    format!("https://{}{path}", srv.addr())
}

pub(crate) fn stampede(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_stampede"))
        .args(args)
        .output()
        .expect("the binary runs")
}

pub(crate) fn json_run(args: &[&str]) -> Value {
    let out = stampede(&[args, &["-q", "--json", "-"]].concat());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Runs the engine directly (the CLI refuses to start against a failing handshake).
fn engine_run(url: &str, options: ClientOptions, n: u64) -> stampede_engine::RunResult {
    let target = Target::parse(url).unwrap();
    let req = RequestBuilder::native(&target, "GET", true)
        .build()
        .unwrap();
    let mut spec = LoadSpec::new(target, req);
    spec.tls = Some(stampede_tls::client_config(&options).unwrap());
    spec.load.connections = 2;
    spec.load.requests = Some(n);
    spec.load.timeout = Some(std::time::Duration::from_secs(5));
    spec.validate().unwrap();
    stampede_engine::run(&spec.clone().plan().unwrap(), Arc::new(Control::default()))
        .unwrap()
        .result
}

#[test]
fn https_with_a_trusted_ca_measures_and_reports_the_handshakes() {
    let dir = tmp("trusted");
    let (srv, ca) = tls_server(&dir, None);
    let ca = ca.to_str().unwrap();
    let r = json_run(&[
        "load",
        &https(&srv, "/chat"),
        "-n",
        "3000",
        "-c",
        "4",
        "-t",
        "2",
        "--cacert",
        ca,
    ]);
    assert_eq!(r["requests"]["completed"], 3000);
    assert_eq!(r["statuses"]["200"], 3000);
    let tls = &r["tls"];
    assert_eq!(tls["version"], "TLSv1_3");
    assert_eq!(tls["alpn"], "http/1.1");
    assert_eq!(tls["handshakes"], 4, "one per connection");
    assert_eq!(
        r["histograms"]["tls_handshake"]
            .as_str()
            .map(|s| !s.is_empty()),
        Some(true)
    );

    let r = json_run(&[
        "load",
        &https(&srv, "/pong"),
        "-n",
        "200",
        "-c",
        "2",
        "-t",
        "1",
        "--cacert",
        ca,
        "--tls-version",
        "1.2",
    ]);
    assert_eq!(r["tls"]["version"], "TLSv1_2");
    assert_eq!(r["requests"]["completed"], 200);

    // The dialects speak https too, without verifying, as ab and wrk do.
    let out = stampede(&["ab", "-n", "500", "-c", "5", "-k", &https(&srv, "/pong")]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("Complete requests:      500"), "{text}");
    assert!(text.contains("Failed requests:        0"), "{text}");
    let out = stampede(&["wrk", "-t1", "-c2", "-d1s", &https(&srv, "/pong")]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("Requests/sec:"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_keepalive_every_request_pays_a_handshake_unless_resumed() {
    let dir = tmp("handshakes");
    let (srv, ca) = tls_server(&dir, None);
    let ca = ca.to_str().unwrap();
    let base = [
        "load",
        &https(&srv, "/pong"),
        "-n",
        "300",
        "-c",
        "2",
        "-t",
        "1",
    ];
    let full = json_run(&[&base[..], &["--no-keepalive", "--cacert", ca]].concat());
    assert_eq!(full["requests"]["completed"], 300);
    assert_eq!(full["tls"]["handshakes"], 300);
    assert_eq!(full["tls"]["resumed"], 0);
    let resumed = json_run(
        &[
            &base[..],
            &["--no-keepalive", "--cacert", ca, "--tls-resume"],
        ]
        .concat(),
    );
    assert_eq!(resumed["tls"]["handshakes"], 300);
    let n = resumed["tls"]["resumed"].as_u64().unwrap();
    assert!(n >= 290, "{n} of 300 handshakes resumed");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn certificate_errors_are_clear_before_a_run_and_counted_during_one() {
    let dir = tmp("untrusted");
    let (srv, _) = tls_server(&dir, None);
    // Before a run: the CLI says what failed and how to fix it.
    let out = stampede(&["load", &https(&srv, "/pong"), "-n", "10", "-q"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("invalid peer certificate"), "{err}");
    assert!(
        err.contains("--cacert") && err.contains("--insecure"),
        "{err}"
    );

    // During a run: each request fails as a certificate error, none as anything else.
    let other = dir.join("other.pem");
    std::fs::write(
        &other,
        stampede_tls::self_signed(&["127.0.0.1".into()]).unwrap().0,
    )
    .unwrap();
    let r = engine_run(
        &https(&srv, "/pong"),
        ClientOptions {
            ca_file: Some(other),
            ..Default::default()
        },
        12,
    );
    assert_eq!(r.requests.completed, 0);
    assert_eq!(
        r.errors.into_iter().collect::<Vec<_>>(),
        [("tls_certificate".to_string(), 12)]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_plain_http_server_asked_for_tls_fails_the_handshake() {
    let srv = crate::common::srv();
    let out = stampede(&[
        "load",
        &https(&srv, "/pong"),
        "-n",
        "10",
        "-q",
        "--insecure",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("(the server does not speak TLS"), "{err}");
    let r = engine_run(
        &https(&srv, "/pong"),
        ClientOptions {
            insecure: true,
            ..Default::default()
        },
        8,
    );
    assert_eq!(r.requests.completed, 0);
    assert_eq!(
        r.errors.into_iter().collect::<Vec<_>>(),
        [("tls_handshake".to_string(), 8)]
    );
    // And TLS flags on a plain URL are a usage error naming the flag.
    let out = stampede(&["load", &srv.url("/pong"), "-n", "1", "--insecure"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--insecure applies to https://"));
}

#[test]
fn mutual_tls_with_a_client_certificate() {
    let dir = tmp("mtls");
    // A CA, and a client certificate it signs.
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).unwrap();
    let client_key = rcgen::KeyPair::generate().unwrap();
    let client = rcgen::CertificateParams::new(vec!["client".to_string()])
        .unwrap()
        .signed_by(&client_key, &ca)
        .unwrap();
    let files = [
        ("ca.pem", ca.pem()),
        ("client.pem", client.pem()),
        ("client.key", client_key.serialize_pem()),
    ];
    for (name, pem) in &files {
        std::fs::write(dir.join(name), pem).unwrap();
    }
    let (srv, server_ca) = tls_server(&dir, Some(&dir.join("ca.pem")));
    let p = |n: &str| dir.join(n).to_str().unwrap().to_string();
    let server_ca = server_ca.to_str().unwrap();

    let r = json_run(&[
        "load",
        &https(&srv, "/pong"),
        "-n",
        "100",
        "-c",
        "2",
        "-t",
        "1",
        "--cacert",
        server_ca,
        "--cert",
        &p("client.pem"),
        "--key",
        &p("client.key"),
    ]);
    assert_eq!(r["requests"]["completed"], 100);

    // Without a certificate the server refuses us: counted as a certificate failure.
    let r = engine_run(
        &https(&srv, "/pong"),
        ClientOptions {
            ca_file: Some(server_ca.into()),
            ..Default::default()
        },
        6,
    );
    assert_eq!(r.requests.completed, 0);
    assert_eq!(
        r.errors.into_iter().collect::<Vec<_>>(),
        [("tls_certificate".to_string(), 6)]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn http2_over_tls_falls_back_to_http11_when_alpn_chooses_it() {
    // The reference server offers only http/1.1: ALPN picks it and the run goes on.
    let dir = tmp("alpn");
    let (srv, ca) = tls_server(&dir, None);
    let r = json_run(&[
        "load",
        &https(&srv, "/pong"),
        "-n",
        "500",
        "-c",
        "2",
        "-t",
        "1",
        "--http2",
        "--streams",
        "4",
        "--cacert",
        ca.to_str().unwrap(),
    ]);
    assert_eq!(r["requests"]["completed"], 500);
    assert_eq!(r["tls"]["alpn"], "http/1.1");
    assert_eq!(r["tls"]["http1_fallback"], 2);
    assert_eq!(r["settings"]["http2"], true);

    // Over cleartext, prior knowledge cannot fall back: the CLI says so before a run.
    let plain = crate::common::srv_with(Config {
        threads: 1,
        http2: false,
        ..Config::default()
    });
    let out = stampede(&["load", &plain.url("/pong"), "-n", "10", "--http2", "-q"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("does not speak h2c"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn serve_speaks_http2_over_alpn_and_h2c_unless_told_not_to() {
    let dir = tmp("serve-h2");
    let ca = dir.join("ca.pem");
    let flag = format!("--tls-self-signed={}", ca.display());
    let (tls, base) = crate::common::serve(&[&flag]);
    assert!(base.starts_with("https://127.0.0.1:"), "{base}");
    let r = json_run(&[
        "load",
        &format!("{base}/pong"),
        "-n",
        "2000",
        "-c",
        "2",
        "-t",
        "1",
        "--http2",
        "--streams",
        "16",
        "--cacert",
        ca.to_str().unwrap(),
    ]);
    assert_eq!(r["requests"]["completed"], 2000);
    assert_eq!(r["statuses"]["200"], 2000);
    assert_eq!(r["tls"]["alpn"], "h2");
    assert_eq!(r["tls"]["http1_fallback"], 0);
    // The indexed request and response heads are a few bytes each.
    let compressed = r["bytes"]["headers_compressed"].as_u64().unwrap();
    assert!(
        compressed < 2000 * 16,
        "{compressed} bytes of response heads"
    );
    drop(tls);

    let (plain, base) = crate::common::serve(&[]);
    let r = json_run(&[
        "load",
        &format!("{base}/delay/20"),
        "-n",
        "400",
        "-c",
        "1",
        "-t",
        "1",
        "--http2",
        "--streams",
        "100",
    ]);
    assert_eq!(r["requests"]["completed"], 400);
    assert_eq!(r["settings"]["http2"], true);
    // 100 deferred answers at once on one connection: about four rounds of 20 ms.
    let secs = r["duration_s"].as_f64().unwrap();
    assert!(secs < 1.0, "{secs} s for 4 rounds of 100 streams");
    drop(plain);

    // --no-http2: ALPN offers only http/1.1 and h2c is refused before the run.
    let (old, base) = crate::common::serve(&[&flag, "--no-http2"]);
    let r = json_run(&[
        "load",
        &format!("{base}/pong"),
        "-n",
        "100",
        "--http2",
        "--cacert",
        ca.to_str().unwrap(),
    ]);
    assert_eq!(r["tls"]["alpn"], "http/1.1");
    drop(old);
    let (old, base) = crate::common::serve(&["--no-http2"]);
    let out = stampede(&["load", &format!("{base}/pong"), "-n", "10", "--http2", "-q"]);
    assert_eq!(out.status.code(), Some(1));
    drop(old);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn h2load_against_the_reference_server_over_h2c_and_tls() {
    let dir = tmp("h2load");
    let (srv, _) = tls_server_offering(&dir, vec![b"h2".to_vec(), b"http/1.1".to_vec()]);
    let plain = crate::common::srv();
    for url in [https(&srv, "/json"), plain.url("/json")] {
        match Command::new("h2load")
            .args(["-n", "2000", "-c", "2", "-m", "20", "-t", "1", &url])
            .output()
        {
            Ok(out) => {
                let o = String::from_utf8_lossy(&out.stdout);
                assert!(
                    o.contains("requests: 2000 total, 2000 started, 2000 done, 2000 succeeded"),
                    "{url}\n{o}"
                );
                assert!(o.contains("status codes: 2000 2xx"), "{url}\n{o}");
                assert!(o.contains("(54000) data"), "27-byte bodies\n{o}");
                if url.starts_with("https") {
                    assert!(o.contains("Application protocol: h2"), "{o}");
                }
            }
            Err(_) => {
                return crate::common::missing_peer("h2load (`apt-get install nghttp2-client`)")
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// h2spec, the HTTP/2 conformance suite, against the reference server: over TLS (ALPN
/// h2) every case passes; over h2c the one failure allowed is "invalid connection
/// preface", which a port that also serves HTTP/1.1 answers as an HTTP/1.1 request
/// (400, then close) instead of closing silently.
#[test]
fn h2spec_conformance_over_tls_and_h2c() {
    let dir = tmp("h2spec");
    let (srv, _) = tls_server_offering(&dir, vec![b"h2".to_vec(), b"http/1.1".to_vec()]);
    let plain = crate::common::srv();
    let run = |port: u16, tls: bool| {
        let port = port.to_string();
        let mut args = vec!["-h", "127.0.0.1", "-p", &port, "-P", "/pong", "-o", "5"];
        if tls {
            args.extend(["-t", "-k"]);
        }
        Command::new("h2spec").args(&args).output()
    };
    let out = match run(srv.addr().port(), true) {
        Ok(o) => o,
        Err(_) => return crate::common::missing_peer("h2spec (`go install github.com/summerwind/h2spec/cmd/h2spec@v2.2.1+incompatible`, then on PATH)"),
    };
    let o = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{o}");
    assert!(o.contains(" 0 failed"), "{o}");

    let out = run(plain.addr().port(), false).unwrap();
    let o = String::from_utf8_lossy(&out.stdout);
    let failures = o.split("Failures:").nth(1).unwrap_or("");
    assert_eq!(failures.matches('×').count(), 1, "{o}");
    assert!(failures.contains("Sends invalid connection preface"), "{o}");
    assert!(o.contains(" 1 failed"), "{o}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn grpc_calls_over_tls_natively_and_as_ghz_makes_them() {
    let dir = tmp("grpc");
    let (srv, ca) = tls_server_offering(&dir, vec![b"h2".to_vec(), b"http/1.1".to_vec()]);
    let ca = ca.to_str().unwrap();
    let proto = concat!(env!("CARGO_MANIFEST_DIR"), "/../../proto/helloworld.proto");
    let hello = ["--proto", proto, "--call", "helloworld.Greeter/SayHello"];
    let r = json_run(
        &[
            &[
                "load",
                &https(&srv, "/"),
                "--cacert",
                ca,
                "-n",
                "100",
                "-c",
                "2",
            ][..],
            &hello,
        ]
        .concat(),
    );
    assert_eq!(r["grpc"]["OK"], 100, "{} {}", r["grpc"], r["errors"]);
    assert_eq!(r["tls"]["alpn"], "h2");
    // ghz's TLS flags: the CA, then a name the certificate does not have, then that
    // name with verification skipped.
    let addr = srv.addr().to_string();
    let ghz = |extra: &[&str]| {
        let base = [
            "ghz",
            "--proto",
            proto,
            "--call",
            "helloworld.Greeter.SayHello",
        ];
        stampede(
            &[
                &base[..],
                extra,
                &["-n", "30", "-c", "3", "-O", "json", &addr],
            ]
            .concat(),
        )
    };
    let answered_ok = |out: Output| {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["statusCodeDistribution"]["OK"].clone()
    };
    assert_eq!(answered_ok(ghz(&["--cacert", ca])), 30);
    let out = ghz(&["--cacert", ca, "--cname", "elsewhere.test"]);
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("certificate"), "{said}");
    // No schema: the reflection call goes over TLS too (this server has none).
    let out = stampede(&[
        "ghz",
        "--cacert",
        ca,
        "--call",
        "helloworld.Greeter.SayHello",
        &addr,
    ]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("has no reflection service"), "{said}");
    assert_eq!(
        answered_ok(ghz(&["--cname", "elsewhere.test", "--skipTLS"])),
        30
    );
    drop(srv);
    // A server whose ALPN chooses HTTP/1.1: said before any load, both ways.
    let (old, ca) = tls_server_offering(&dir, vec![b"http/1.1".to_vec()]);
    let ca = ca.to_str().unwrap();
    let url = https(&old, "/");
    let native = [&["load", &url, "--cacert", ca, "-n", "5"][..], &hello].concat();
    let addr = old.addr().to_string();
    let dialect = [
        "ghz",
        "--proto",
        proto,
        "--call",
        "helloworld.Greeter.SayHello",
        "--cacert",
        ca,
        "-n",
        "5",
        &addr,
    ];
    for args in [&native[..], &dialect[..]] {
        let out = stampede(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(said.contains("chose http/1.1 in ALPN"), "{said}");
    }
}

/// `wss://`: the upgrade over TLS (ALPN http/1.1), each message a round trip.
#[test]
fn websocket_over_tls_times_its_messages() {
    let dir = tmp("wss");
    let (srv, ca) = tls_server(&dir, None);
    let url = format!("wss://{}/ws/echo", srv.addr());
    let v = json_run(&[
        "load",
        &url,
        "-n",
        "200",
        "-c",
        "2",
        "-t",
        "1",
        "--cacert",
        ca.to_str().unwrap(),
    ]);
    assert_eq!(v["requests"]["completed"], 200, "{v}");
    assert_eq!(v["statuses"]["101"], 200, "{v}");
    assert_eq!(v["tls"]["alpn"], "http/1.1", "{v}");
}

#[test]
fn websockets_go_over_http2_streams_when_alpn_chooses_h2() {
    let dir = tmp("wss-h2");
    let (srv, ca) = tls_server_offering(&dir, vec![b"h2".to_vec(), b"http/1.1".to_vec()]);
    let url = format!("wss://{}/ws/echo", srv.addr());
    let r = json_run(&[
        "load",
        &url,
        "--http2",
        "-n",
        "400",
        "-c",
        "2",
        "-t",
        "1",
        "--cacert",
        ca.to_str().unwrap(),
    ]);
    assert_eq!(r["requests"]["completed"], 400, "{r}");
    assert_eq!(r["requests"]["failed"], 0, "{r}");
    assert_eq!(r["tls"]["alpn"], "h2", "{r}");
    // A server whose ALPN chooses HTTP/1.1 (this one would take HTTP/2's preface
    // anyway): HTTP/2 is not spoken where TLS agreed on another protocol, so each
    // connection fails as a handshake and no message is sent.
    let (old, ca) = tls_server(&dir, None);
    let url = format!("wss://{}/ws/echo", old.addr());
    let out = stampede(&[
        "load",
        &url,
        "--http2",
        "-n",
        "3",
        "-c",
        "1",
        "-t",
        "1",
        "--cacert",
        ca.to_str().unwrap(),
        "-q",
        "--json",
        "-",
    ]);
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["requests"]["completed"], 0, "{r}");
    assert!(r["errors"]["ws_handshake"].as_u64().unwrap() >= 1, "{r}");
    let _ = std::fs::remove_dir_all(&dir);
}
