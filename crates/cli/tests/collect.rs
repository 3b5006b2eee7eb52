//! `stampede collect`: a fleet whose processes the test starts itself, as a Job or a
//! scheduler would, each joining the collector with `--fleet-connect` and the run's
//! token. Only the run's own processes are taken; the four that are start together,
//! are merged live second by second, and their results come back over the
//! connection, merged as `stampede merge` merges them.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// Processes killed when the test ends, however it ends.
struct Procs(Vec<Child>);

impl Drop for Procs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn stampede() -> Command {
    Command::new(env!("CARGO_BIN_EXE_stampede"))
}

/// A segment's process: `load` at a shared 400/s for 2 s, joining `at`.
fn segment(url: &str, at: &str, segment: &str, token: &str) -> Command {
    let mut c = stampede();
    c.args(["load", "-q", "--rate", "400", "-d", "2s", "-c", "4", url])
        .args(["--segment", segment, "--fleet-connect", at, "--json", "-"])
        .env("STAMPEDE_FLEET_TOKEN", token)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c
}

/// GET http://ADDR/metrics: the body, as long as its Content-Length says.
fn scrape(addr: &str) -> String {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    c.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        let n = c.read(&mut buf).unwrap();
        assert!(n > 0, "the connection closed early");
        got.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&got).into_owned();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let len: usize = (head.lines())
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse().unwrap())
                })
                .expect("a Content-Length");
            if body.len() >= len {
                return body.to_string();
            }
        }
    }
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn a_collector_takes_only_its_runs_processes_and_merges_them_live() {
    let srv = crate::common::srv();
    let url = srv.url("/pong");
    let dir = std::env::temp_dir().join(format!("stampede-collect-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (merged, live, parts, token_file) = (
        dir.join("merged.json"),
        dir.join("live.jsonl"),
        dir.join("parts"),
        dir.join("token"),
    );
    let mut collector = stampede()
        .args(["collect", "--listen", "127.0.0.1:0", "--segments", "4"])
        .arg("--token-file")
        .arg(&token_file)
        .args(["--start-in", "30s", "--deadline", "60s"])
        .arg("--json")
        .arg(&merged)
        .arg("--live-log")
        .arg(&live)
        .arg("--parts")
        .arg(&parts)
        .args(["--metrics-listen", "127.0.0.1:0", "--metrics-linger", "60s"])
        .args(["--", "load", "--rate", "400", "-d", "2s", "-c", "4", &url])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(collector.stderr.take().unwrap());
    let mut procs = Procs(Vec::new());
    // Its /metrics, then its address, once it listens.
    let mut metrics = String::new();
    err.read_line(&mut metrics).unwrap();
    let metrics = metrics
        .trim()
        .strip_prefix("stampede: metrics at http://")
        .and_then(|m| m.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("{metrics}"))
        .to_string();
    let mut first = String::new();
    err.read_line(&mut first).unwrap();
    let at = first
        .strip_prefix("stampede: collecting 4 segments on ")
        .and_then(|l| l.split(';').next())
        .unwrap_or_else(|| panic!("{first}"))
        .to_string();
    procs.0.push(collector);
    let token = std::fs::read_to_string(&token_file).unwrap();
    let token = token.trim();
    assert_eq!(token.len(), 32);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&token_file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    // Two processes that are not the run's: a wrong token, a segment it does not have.
    for (seg, tok, why) in [
        ("1/4", "0000000000000000", "not this run's token"),
        ("5/5", token, "segment \"5/5\" is not one of this run's"),
    ] {
        let out = segment(&url, &at, seg, tok).output().unwrap();
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{e}");
        assert!(
            e.contains(&format!("the collector refused this process: {why}")),
            "{e}"
        );
    }
    // The run's four.
    for k in 1..=4 {
        procs.0.push(
            segment(&url, &at, &format!("{k}/4"), token)
                .spawn()
                .unwrap(),
        );
    }
    for p in &mut procs.0[1..] {
        assert!(p.wait().unwrap().success());
    }
    // The fleet's figures as /metrics serves them once the run is over (the collector
    // lingers until they are read).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let text = loop {
        let t = scrape(&metrics);
        if t.lines().any(|l| l == "stampede_run_finished 1") {
            break t;
        }
        assert!(std::time::Instant::now() < deadline, "{t}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let mut collector = procs.0.remove(0);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    let status = collector.wait().unwrap();
    assert!(status.success(), "{first}{rest}");
    let m = json(&merged);
    let n = |k: &str| m["requests"][k].as_u64().unwrap();
    // /metrics said what the merged seconds say: answers by status, the latency
    // histogram's count (the result's own latency adds the requests still under way
    // at the end, which no second holds), the target the segments named.
    let value = |prefix: &str| -> u64 {
        (text.lines())
            .filter(|l| l.starts_with(prefix))
            .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap() as u64)
            .sum()
    };
    let seconds = |f: &dyn Fn(&serde_json::Value) -> u64| -> u64 {
        m["intervals"].as_array().unwrap().iter().map(f).sum()
    };
    assert_eq!(
        value("stampede_requests_total{"),
        seconds(&|i| i["completed"].as_u64().unwrap()),
        "{text}"
    );
    assert_eq!(
        n("completed"),
        seconds(&|i| i["completed"].as_u64().unwrap())
    );
    assert_eq!(
        value("stampede_latency_histogram_seconds_count"),
        seconds(&|i| i["latency"]["count"].as_u64().unwrap()),
        "{text}"
    );
    assert!(text.contains(&format!("url=\"{url}\"")), "{text}");
    assert_eq!(
        n("started") + m["open"]["never_sent"].as_u64().unwrap(),
        800,
        "{m:#}"
    );
    assert!(n("completed") >= 780, "{m:#}");
    assert_eq!(m["fleet"]["merged"], 4, "{m:#}");
    assert_eq!(m["fleet"]["refused_connections"], 2, "{m:#}");
    // The four started together: one shared start in every part.
    let starts: Vec<f64> = (1..=4)
        .map(|k| {
            json(&parts.join(format!("segment-{k}.json")))["started_unix_ms"]
                .as_f64()
                .unwrap()
        })
        .collect();
    assert!(
        starts.iter().all(|s| (s - starts[0]).abs() < 50.0),
        "{starts:?}"
    );
    // The merged result is `stampede merge` of the parts the segments sent.
    let again = dir.join("again.json");
    let out = stampede()
        .arg("merge")
        .args((1..=4).map(|k| parts.join(format!("segment-{k}.json"))))
        .arg("--json")
        .arg(&again)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let a = json(&again);
    for key in [
        "requests",
        "statuses",
        "latency",
        "histograms",
        "intervals",
        "open",
    ] {
        assert_eq!(a[key], m[key], "{key}");
    }
    // Each live second is the merged result's, histogram for histogram.
    let intervals = m["intervals"].as_array().unwrap();
    let mut compared = 0;
    for line in std::fs::read_to_string(&live).unwrap().lines() {
        let l: serde_json::Value = serde_json::from_str(line).unwrap();
        let t = l["t"].as_u64().unwrap();
        let Some(iv) = intervals.iter().find(|i| i["t"].as_u64() == Some(t)) else {
            continue;
        };
        assert_eq!(l["histogram"], iv["histogram"], "second {t}");
        assert_eq!(l["completed"], iv["completed"], "second {t}");
        compared += 1;
    }
    assert!(compared >= 2, "{m:#}");
    drop(procs);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_token_file_that_is_no_token_is_refused_before_anything_listens() {
    let dir = std::env::temp_dir().join(format!("stampede-collect-t-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("token");
    std::fs::write(&bad, "short\n").unwrap();
    let out = stampede()
        .args(["collect", "--listen", "127.0.0.1:0", "--segments", "2"])
        .arg("--token-file")
        .arg(&bad)
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(
        e.contains("--token-file") && e.contains("16 to 1024"),
        "{e}"
    );
    // A segment without the token in its environment says where it looks.
    let out = stampede()
        .args(["load", "-n", "1", "http://127.0.0.1:9/"])
        .args(["--segment", "1/2", "--fleet-connect", "127.0.0.1:9"])
        .env_remove("STAMPEDE_FLEET_TOKEN")
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(e.contains("$STAMPEDE_FLEET_TOKEN, which is not set"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
