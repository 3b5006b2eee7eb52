//! The live metrics outputs checked by the systems that consume them, each started
//! here on loopback as a user would run it: Prometheus scrapes `/metrics` and takes
//! remote writes, InfluxDB 1.x takes the line protocol; each is then asked, through
//! its own query API, for the run's request count, which must be the result's.
//! Needs `prometheus` and `influxd` (Debian's packages; CI installs and requires them).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::common::recorder::tempdir::Dir;
use crate::common::{eventually, missing_peer, srv};

const BIN: &str = env!("CARGO_BIN_EXE_stampede");

/// A peer's process, killed (and then its directory removed) when dropped.
struct Peer {
    child: Child,
    _dir: Dir,
    port: u16,
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn installed(cmd: &str) -> bool {
    Command::new(cmd)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// A port free now on 127.0.0.1, for a peer that cannot be told to take any (its
/// configuration names the port before it starts).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One HTTP/1.1 exchange on loopback: the status and the body (read to the close).
fn http(port: u16, method: &str, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let status = text.split(' ').nth(1)?.parse().ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        unchunk(body)
    } else {
        body.to_string()
    };
    Some((status, body))
}

fn unchunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}

fn encode(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Prometheus on a free port with `config`, remote write received; ready when it says so.
fn prometheus(config: &str) -> Option<Peer> {
    if !installed("prometheus") {
        missing_peer("prometheus");
        return None;
    }
    let tmp = Dir::new();
    let dir = &tmp.0;
    std::fs::write(dir.join("prometheus.yml"), config).unwrap();
    let port = free_port();
    let child = Command::new("prometheus")
        .arg(format!(
            "--config.file={}",
            dir.join("prometheus.yml").display()
        ))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .arg("--web.enable-remote-write-receiver")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("prometheus starts");
    let peer = Peer {
        child,
        _dir: tmp,
        port,
    };
    eventually("prometheus ready", Duration::from_secs(30), || {
        http(port, "GET", "/-/ready").filter(|(s, _)| *s == 200)
    });
    Some(peer)
}

/// The value of an instant query's only sample, once it has one.
fn prom_value(port: u16, query: &str) -> Option<f64> {
    let (status, body) = http(
        port,
        "GET",
        &format!("/api/v1/query?query={}", encode(query)),
    )?;
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    let r = v["data"]["result"].as_array()?.first()?.clone();
    r["value"][1].as_str()?.parse().ok()
}

/// Runs `stampede load` against the reference server for 2 s, with `args`; returns
/// the result's completed requests and the run's output.
fn run_load(args: &[&str], dir: &Path, on_start: impl FnOnce(&mut Child)) -> (u64, Output) {
    let s = srv();
    let json = dir.join("result.json");
    let mut child = Command::new(BIN)
        .args([
            "load",
            &s.url("/pong"),
            "-d",
            "2s",
            "-c",
            "2",
            "-q",
            "--json",
        ])
        .arg(&json)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    on_start(&mut child);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let completed = r["requests"]["completed"].as_u64().unwrap();
    assert!(completed > 100, "{r}");
    (completed, out)
}

#[test]
fn prometheus_scrapes_a_run_and_its_query_api_returns_the_request_count() {
    // The metrics port is chosen by stampede (127.0.0.1:0) and read from its line;
    // Prometheus's configuration names it, so Prometheus starts after stampede.
    if !installed("prometheus") {
        return missing_peer("prometheus");
    }
    let tmp = Dir::new();
    let dir = &tmp.0;
    let mut prom: Option<Peer> = None;
    let (completed, _) = run_load(
        &["--metrics-listen", "127.0.0.1:0", "--metrics-linger", "60s"],
        dir,
        |child| {
            let err = child.stderr.take().unwrap();
            let mut lines = BufReader::new(err).lines();
            let line = lines.next().unwrap().unwrap();
            let addr = line
                .strip_prefix("stampede: metrics at http://")
                .and_then(|r| r.strip_suffix("/metrics"))
                .unwrap_or_else(|| panic!("{line}"))
                .to_string();
            std::thread::spawn(move || lines.for_each(drop));
            prom = prometheus(&format!(
                "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: stampede\n    static_configs:\n      - targets: ['{addr}']\n"
            ));
        },
    );
    let prom = prom.expect("prometheus is installed");
    // The run ended once Prometheus had scraped its final figures.
    let got = eventually("the scraped count", Duration::from_secs(20), || {
        prom_value(prom.port, "sum(stampede_requests_total{job=\"stampede\"})")
            .filter(|v| *v == completed as f64)
    });
    assert_eq!(got, completed as f64);
    let finished = prom_value(prom.port, "stampede_run_finished{job=\"stampede\"}");
    assert_eq!(finished, Some(1.0));
    let count = prom_value(
        prom.port,
        "stampede_latency_seconds_count{job=\"stampede\"}",
    );
    assert_eq!(count, Some(completed as f64), "every response timed");
}

#[test]
fn prometheus_takes_remote_writes_and_returns_the_request_count() {
    let Some(prom) = prometheus("global:\n  scrape_interval: 15s\n") else {
        return;
    };
    let tmp = Dir::new();
    let dir = &tmp.0;
    let url = format!("prometheus-rw=http://127.0.0.1:{}/api/v1/write", prom.port);
    let (completed, out) = run_load(&["--out", &url], dir, |_| {});
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("writes failed"), "{err}");
    let got = eventually("the pushed count", Duration::from_secs(20), || {
        prom_value(prom.port, "sum(stampede_requests_total{job=\"stampede\"})")
            .filter(|v| *v == completed as f64)
    });
    assert_eq!(got, completed as f64);
    let p99 = prom_value(
        prom.port,
        "stampede_latency_seconds{job=\"stampede\",quantile=\"0.99\"}",
    )
    .unwrap();
    assert!(p99 > 0.0 && p99 < 1.0, "{p99}");
}

/// InfluxDB 1.x on free ports, its files in a scratch directory, with a database
/// `stampede` created.
fn influxdb() -> Option<Peer> {
    if !installed("influxd") {
        missing_peer("influxd");
        return None;
    }
    let tmp = Dir::new();
    let dir = &tmp.0;
    let (port, rpc) = (free_port(), free_port());
    let d = dir.display();
    std::fs::write(
        dir.join("influxdb.conf"),
        format!(
            "reporting-disabled = true\nbind-address = \"127.0.0.1:{rpc}\"\n[meta]\n  dir = \"{d}/meta\"\n[data]\n  dir = \"{d}/data\"\n  wal-dir = \"{d}/wal\"\n[http]\n  bind-address = \"127.0.0.1:{port}\"\n  log-enabled = false\n"
        ),
    )
    .unwrap();
    let child = Command::new("influxd")
        .arg("-config")
        .arg(dir.join("influxdb.conf"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("influxd starts");
    let peer = Peer {
        child,
        _dir: tmp,
        port,
    };
    eventually("influxdb ready", Duration::from_secs(30), || {
        http(port, "GET", "/ping").filter(|(s, _)| *s == 204)
    });
    let (status, body) = http(
        port,
        "POST",
        &format!("/query?q={}", encode("CREATE DATABASE stampede")),
    )
    .unwrap();
    assert_eq!(status, 200, "{body}");
    Some(peer)
}

/// The first value of an InfluxQL query's first series.
fn influx_value(port: u16, q: &str) -> Option<f64> {
    let (status, body) = http(port, "GET", &format!("/query?db=stampede&q={}", encode(q)))?;
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    v["results"][0]["series"][0]["values"][0][1].as_f64()
}

#[test]
fn influxdb_takes_the_line_protocol_and_returns_the_request_count() {
    let Some(influx) = influxdb() else { return };
    let tmp = Dir::new();
    let dir = &tmp.0;
    let url = format!("influxdb=http://127.0.0.1:{}/stampede", influx.port);
    let (completed, out) = run_load(&["--out", &url], dir, |_| {});
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("writes failed"), "{err}");
    let got = eventually("the written count", Duration::from_secs(20), || {
        influx_value(influx.port, "SELECT sum(requests) FROM stampede")
            .filter(|v| *v == completed as f64)
    });
    assert_eq!(got, completed as f64);
    let ok = influx_value(
        influx.port,
        "SELECT sum(requests) FROM stampede_status WHERE status = '200'",
    );
    assert_eq!(
        ok,
        Some(completed as f64),
        "the reference server answers 200"
    );
    let seconds = influx_value(influx.port, "SELECT count(requests) FROM stampede").unwrap();
    assert!(
        (2.0..=4.0).contains(&seconds),
        "one point a second: {seconds}"
    );
    let p99 = influx_value(influx.port, "SELECT max(latency_p99) FROM stampede").unwrap();
    assert!(p99 > 0.0 && p99 < 1.0, "{p99}");
}

#[test]
fn a_refusing_receiver_is_reported_and_the_run_still_ends_whole() {
    // Nothing listens on a port just freed: every push is refused.
    let port = free_port();
    let tmp = Dir::new();
    let dir = &tmp.0;
    let url = format!("influxdb=http://127.0.0.1:{port}/x");
    let (_, out) = run_load(&["--out", &url], dir, |_| {});
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--out influxdb:") && err.contains("writes failed"),
        "{err}"
    );
}
