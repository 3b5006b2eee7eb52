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
        missing_peer("prometheus (`apt-get install prometheus`)");
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

/// The queries of a dashboard shipped in packaging/grafana/, as its panels hold them.
fn dashboard_queries(file: &str, field: &str) -> Vec<String> {
    let path = format!(
        "{}/../../packaging/grafana/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    let d: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let queries: Vec<String> = d["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().unwrap().clone())
        .map(|t| t[field].as_str().unwrap().to_string())
        .collect();
    assert!(queries.len() >= 6, "{queries:?}");
    queries
}

/// Every query of the Prometheus dashboard, evaluated at `at` (Unix seconds), is
/// accepted and finds series in what the run wrote (the failures' too, had the run
/// failed any: this one fails none).
fn prometheus_dashboard_finds_the_run(port: u16, at: f64) {
    for q in dashboard_queries("stampede-prometheus.json", "expr") {
        let q = q
            .replace("$__rate_interval", "1m")
            .replace("$job", "stampede");
        let path = format!("/api/v1/query?query={}&time={at:.3}", encode(&q));
        let (status, body) = http(port, "GET", &path).unwrap();
        assert_eq!(status, 200, "{q}: {body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["status"], "success", "{q}: {body}");
        let found = v["data"]["result"]
            .as_array()
            .is_some_and(|r| !r.is_empty());
        let failures = q.contains("stampede_request_failures_total");
        assert!(
            found || failures,
            "the dashboard's query {q} finds nothing: {body}"
        );
    }
}

/// Runs `stampede load` against the reference server for 2 s, with `args` (a `-d` among
/// them runs that long instead); returns the result's completed requests and the
/// run's output.
fn run_load(args: &[&str], dir: &Path, on_start: impl FnOnce(&mut Child)) -> (u64, Output) {
    let out = try_load(args, dir, on_start);
    (completed_of(&out, dir), out)
}

/// A finished run's completed requests, once it succeeded with more than 100.
fn completed_of(out: &Output, dir: &Path) -> u64 {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json = dir.join("result.json");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let completed = r["requests"]["completed"].as_u64().unwrap();
    assert!(completed > 100, "{r}");
    completed
}

/// [`run_load`]'s run, its output whether it succeeded or not.
fn try_load(args: &[&str], dir: &Path, on_start: impl FnOnce(&mut Child)) -> Output {
    let s = srv();
    let json = dir.join("result.json");
    let mut child = Command::new(BIN)
        .args(["load", &s.url("/pong"), "-c", "2", "-q", "--json"])
        .arg(&json)
        .args(if args.contains(&"-d") {
            &[][..]
        } else {
            &["-d", "2s"][..]
        })
        // `{metrics}` stands for the server's own /metrics.
        .args(
            args.iter()
                .map(|a| a.replace("{metrics}", &s.url("/metrics"))),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    on_start(&mut child);
    child.wait_with_output().unwrap()
}

#[test]
fn prometheus_scrapes_a_run_and_its_query_api_returns_the_request_count() {
    // Prometheus runs before the run, so that it scrapes the run as it goes: its
    // configuration names the metrics port, a free one taken here. Another process
    // may take that port before the run listens on it (the wait below lasts seconds,
    // and every test's connections draw local ports from the same range): the run
    // then fails to listen, and another port is tried with a fresh Prometheus.
    let tmp = Dir::new();
    let dir = &tmp.0;
    let mut attempts = 0;
    let (prom, completed) = loop {
        attempts += 1;
        let metrics = free_port();
        let Some(prom) = prometheus(&format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: stampede\n    static_configs:\n      - targets: ['127.0.0.1:{metrics}']\n"
        )) else {
            return;
        };
        // Its discovery hands the target to the scraper a few seconds after the start:
        // the run begins once the scraper has tried it (and found nothing listening yet).
        eventually("prometheus scraping", Duration::from_secs(30), || {
            let (_, body) = http(prom.port, "GET", "/api/v1/targets")?;
            let v: Value = serde_json::from_str(&body).ok()?;
            let t = v["data"]["activeTargets"].as_array()?.first()?.clone();
            (t["health"] != "unknown").then_some(())
        });
        let listen = format!("127.0.0.1:{metrics}");
        let args = [
            "--metrics-listen",
            &listen,
            "--metrics-linger",
            "60s",
            "--rate",
            "2000",
            // Long enough for several scrapes a second apart, which rate() needs.
            "-d",
            "4s",
        ];
        let out = try_load(&args, dir, |_| {});
        let err = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() && err.contains("Address already in use") && attempts < 3 {
            continue;
        }
        break (prom, completed_of(&out, dir));
    };
    // The run ended once Prometheus had scraped its final figures. Its next scrape
    // finds the process gone and marks the series stale, so the last values are asked
    // for over a window (which skips staleness markers).
    let last = |q: &str| prom_value(prom.port, &format!("{q}[5m]))"));
    let got = eventually("the scraped count", Duration::from_secs(20), || {
        last("sum(last_over_time(stampede_requests_total{job=\"stampede\"}")
            .filter(|v| *v == completed as f64)
    });
    assert_eq!(got, completed as f64);
    let finished = last("max(last_over_time(stampede_run_finished{job=\"stampede\"}");
    assert_eq!(finished, Some(1.0));
    let count = last("max(last_over_time(stampede_latency_seconds_count{job=\"stampede\"}");
    assert_eq!(count, Some(completed as f64), "every response timed");
    // The dashboard's queries, at the run's end (while its series were fresh).
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("result.json")).unwrap()).unwrap();
    let end = r["started_unix_ms"].as_f64().unwrap() / 1000.0 + r["duration_s"].as_f64().unwrap();
    prometheus_dashboard_finds_the_run(prom.port, end);
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

/// The docs' shop journey walked against the reference server with `--out OUT`
/// (400 requests): the result, each step's name and answers, once the run said no
/// write failed.
fn journey_out(out: &str) -> (Value, Vec<(String, f64)>) {
    let (_server, url) = crate::common::serve(&[]);
    let tmp = crate::journeys::shop_example();
    let dir = &tmp.0;
    let json = dir.join("result.json");
    let run = Command::new(BIN)
        .args(["load", &url, "--journey"])
        .arg(dir.join("shop.toml"))
        .args(["-c", "2", "-t", "1", "-n", "400", "-q", "--json"])
        .arg(&json)
        .args(["--out", out])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success() && !err.contains("writes failed"),
        "{err}"
    );
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let steps = (r["targets"].as_array().unwrap().iter())
        .map(|t| {
            let name = t["name"].as_str().unwrap().to_string();
            (name, t["completed"].as_f64().unwrap())
        })
        .collect();
    (r, steps)
}

#[test]
fn prometheus_takes_a_journey_s_figures_by_step_over_remote_write() {
    let Some(prom) = prometheus("global:\n  scrape_interval: 15s\n") else {
        return;
    };
    let out = format!("prometheus-rw=http://127.0.0.1:{}/api/v1/write", prom.port);
    let (r, steps) = journey_out(&out);
    for (step, answered) in steps {
        let q = format!("stampede_step_requests_total{{job=\"stampede\",step=\"{step}\"}}");
        let got = eventually("the step's pushed count", Duration::from_secs(20), || {
            prom_value(prom.port, &q).filter(|v| *v == answered)
        });
        assert_eq!(got, answered, "{step}");
    }
    let failed = r["sessions"]["failed"].as_f64().unwrap();
    assert!(failed > 0.0, "the example's fourth user is refused");
    let q = "stampede_journeys_total{job=\"stampede\",outcome=\"failed\"}";
    let got = eventually("the failed journeys", Duration::from_secs(20), || {
        prom_value(prom.port, q).filter(|v| *v == failed)
    });
    assert_eq!(got, failed);
}

#[test]
fn influxdb_takes_a_journey_s_points_by_step() {
    let Some(influx) = influxdb() else { return };
    let (_, steps) = journey_out(&format!(
        "influxdb=http://127.0.0.1:{}/stampede",
        influx.port
    ));
    for (step, answered) in steps {
        let q = format!("SELECT sum(requests) FROM stampede_step WHERE step = '{step}'");
        let got = eventually("the step's written count", Duration::from_secs(20), || {
            influx_value(influx.port, &q).filter(|v| *v == answered)
        });
        assert_eq!(got, answered, "{step}");
    }
}

/// InfluxDB 1.x on free ports, its files in a scratch directory, with a database
/// `stampede` created.
fn influxdb() -> Option<Peer> {
    if !installed("influxd") {
        missing_peer("influxd (`apt-get install influxdb`)");
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
    let (completed, out) = run_load(
        &[
            "--out",
            &url,
            "--rate",
            "2000",
            "--server-metrics",
            "{metrics}",
        ],
        dir,
        |_| {},
    );
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
    // The server's series as scraped: the reference server's vLLM gauges, a point a
    // second from the first scrape on.
    let scraped = influx_value(
        influx.port,
        "SELECT count(value) FROM stampede_server WHERE metric = 'vllm:num_requests_running'",
    );
    assert!(scraped.is_some_and(|n| n >= 1.0), "{scraped:?}");
    // Every query of the InfluxDB dashboard finds the run's points.
    for q in dashboard_queries("stampede-influxdb.json", "query") {
        let q = q.replace("$timeFilter", "time > now() - 1h");
        let (status, body) = http(
            influx.port,
            "GET",
            &format!("/query?db=stampede&q={}", encode(&q)),
        )
        .unwrap();
        assert_eq!(status, 200, "{q}: {body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        assert!(v["results"][0].get("error").is_none(), "{q}: {body}");
        let values = &v["results"][0]["series"][0]["values"];
        let found = values.as_array().is_some_and(|rows| {
            rows.iter().any(|r| {
                r.as_array().unwrap()[1..]
                    .iter()
                    .any(|x| x.as_f64().is_some_and(|x| x > 0.0))
            })
        });
        let failures = q.contains("stampede_failures");
        assert!(
            found || failures,
            "the dashboard's query {q} finds nothing: {body}"
        );
    }
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

/// A receiver that accepts and then never reads nor answers: the run ends within
/// the final push's bound, and the stall is named as one, not as "os error 11".
#[test]
fn a_stalled_receiver_holds_the_exit_no_longer_than_the_final_push() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Accepts every connection and holds it, answering nothing; it blocks in accept
    // until the run connects, and ends with the test process.
    let held = std::thread::spawn(move || {
        let mut kept = Vec::new();
        for s in listener.incoming().take(4).flatten() {
            kept.push(s);
        }
        kept
    });
    let tmp = Dir::new();
    let url = format!("influxdb=http://127.0.0.1:{port}/x");
    let started = std::time::Instant::now();
    let out = try_load(&["--out", &url, "-d", "1s"], &tmp.0, |_| {});
    let took = started.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--out influxdb:") && err.contains("stalled"),
        "{err}"
    );
    assert!(!err.contains("os error 11"), "{err}");
    // 1 s of run, 2 s of final push and the process's own start and end.
    assert!(took < std::time::Duration::from_secs(8), "{took:?}: {err}");
    drop(held);
}

#[test]
fn an_otlp_receiver_decodes_the_pushes_with_the_published_schema() {
    // Python with opentelemetry-proto (CI installs it and names it here).
    let Some(python) = crate::common::python_with(
        "STAMPEDE_OTLP_PYTHON",
        &["opentelemetry.proto"],
        "opentelemetry-proto",
    ) else {
        return;
    };
    let tmp = Dir::new();
    let got = tmp.0.join("received.jsonl");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/peers/otlp_receiver.py");
    let mut child = Command::new(python)
        .arg(script)
        .arg(&got)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the receiver starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port: u16 = line.trim().strip_prefix("ready ").unwrap().parse().unwrap();
    let receiver = Peer {
        child,
        _dir: Dir::new(),
        port,
    };
    let url = format!("otlp=http://127.0.0.1:{}", receiver.port);
    let (completed, out) = run_load(&["--out", &url], &tmp.0, |_| {});
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("writes failed"), "{err}");
    let text = std::fs::read_to_string(&got).unwrap();
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    let rm = &last["resource_metrics"][0];
    let attrs = rm["resource"]["attributes"].as_array().unwrap();
    assert!(attrs
        .iter()
        .any(|a| a["key"] == "service.name" && a["value"]["string_value"] == "stampede"));
    let metrics = rm["scope_metrics"][0]["metrics"].as_array().unwrap();
    let find = |name: &str| {
        metrics
            .iter()
            .find(|m| m["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {metrics:?}"))
    };
    // The protobuf JSON mapping writes 64-bit integers as strings.
    let n = |v: &Value| {
        v.as_str()
            .and_then(|s| s.parse::<u64>().ok())
            .or(v.as_u64())
            .unwrap()
    };
    let duration = &find("http.client.request.duration")["histogram"]["data_points"][0];
    assert_eq!(n(&duration["count"]), completed);
    let buckets: u64 = duration["bucket_counts"]
        .as_array()
        .unwrap()
        .iter()
        .map(n)
        .sum();
    assert_eq!(buckets, completed);
    assert_eq!(duration["explicit_bounds"].as_array().unwrap().len(), 14);
    let keys: Vec<&str> = duration["attributes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["key"].as_str().unwrap())
        .collect();
    assert_eq!(
        keys,
        [
            "http.request.method",
            "server.address",
            "server.port",
            "url.scheme"
        ]
    );
    let requests = &find("stampede.requests")["sum"];
    assert_eq!(requests["is_monotonic"], true);
    assert_eq!(
        requests["aggregation_temporality"],
        "AGGREGATION_TEMPORALITY_CUMULATIVE"
    );
    let answered: u64 = requests["data_points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| n(&p["as_int"]))
        .sum();
    assert_eq!(answered, completed, "the last push has the run's count");
    let latency = &find("stampede.latency")["summary"]["data_points"][0];
    assert_eq!(n(&latency["count"]), completed);
}
