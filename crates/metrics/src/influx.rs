//! `--out influxdb=URL`: each second as points in InfluxDB's line protocol, written to
//! InfluxDB 1.x's `/write` (the URL's path names the database, as k6's flag takes it:
//! `http://127.0.0.1:8086/stampede`; a URL whose path is already `/write?db=…` is used
//! as given).
//!
//! Measurements, each tagged with the machine, method and URL: `stampede` (the
//! second's requests, failures, bytes, events, latency quantiles and send lag in
//! seconds, connections, in flight, users), `stampede_status` (responses by `status`),
//! `stampede_failures` (failures by `kind`), `stampede_step` (a run of several
//! requests, by `step`) and `stampede_server` (with `--server-metrics`: each series
//! the server exports as last scraped by that second, by `metric` (its name), in `value`).
//! Timestamps are the second's start in milliseconds.

use std::fmt::Write as _;
use std::sync::Arc;

use stampede_engine::LatencyStats;

use super::post::Endpoint;
use super::{RunInfo, Second};

/// The database written to when the URL names none.
pub const DEFAULT_DB: &str = "stampede";

/// The path and query of the write endpoint for `e`.
pub fn write_path(e: &Endpoint) -> String {
    if e.path.starts_with("/write?") {
        if e.path.contains("precision=") {
            return e.path.clone();
        }
        return format!("{}&precision=ms", e.path);
    }
    let db = e.path.trim_matches('/');
    let db = if db.is_empty() { DEFAULT_DB } else { db };
    format!("/write?db={}&precision=ms", percent(db))
}

/// A database name as a query value.
fn percent(s: &str) -> String {
    let mut o = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            o.push(b as char);
        } else {
            let _ = write!(o, "%{b:02X}");
        }
    }
    o
}

/// A tag key or value, escaped.
fn tag(v: &str) -> String {
    let mut o = String::with_capacity(v.len());
    for c in v.chars() {
        if matches!(c, ',' | '=' | ' ') {
            o.push('\\');
        }
        // Line breaks end a point: never inside one.
        o.push(if c == '\n' || c == '\r' { ' ' } else { c });
    }
    o
}

fn latency_fields(o: &mut String, prefix: &str, l: &LatencyStats) {
    if l.count == 0 {
        return;
    }
    for (name, q) in [("p50", 50.0), ("p90", 90.0), ("p99", 99.0), ("p999", 99.9)] {
        let _ = write!(o, ",{prefix}_{name}={}", l.at(q).unwrap_or(0) as f64 / 1e6);
    }
    let _ = write!(
        o,
        ",{prefix}_max={},{prefix}_mean={}",
        l.max_us as f64 / 1e6,
        l.mean_us / 1e6
    );
}

/// The points of `seconds`, one line each.
pub fn lines(info: &RunInfo, seconds: &[Arc<Second>]) -> Vec<u8> {
    let tags = format!(
        "host={},method={},url={}",
        tag(&info.host),
        tag(&info.method),
        tag(&info.url)
    );
    let mut o = String::new();
    for s in seconds {
        let _ = write!(
            o,
            "stampede,{tags} requests={}i,failures={}i,bytes={}i,events={}i,connections={}i,in_flight={}i,users={}i",
            s.completed, s.failed, s.bytes_read, s.events, s.connections, s.in_flight, s.users
        );
        latency_fields(&mut o, "latency", &s.latency);
        latency_fields(&mut o, "send_lag", &s.send_lag);
        let _ = writeln!(o, " {}", s.unix_ms);
        for (code, n) in &s.statuses {
            let _ = writeln!(
                o,
                "stampede_status,{tags},status={code} requests={n}i {}",
                s.unix_ms
            );
        }
        for (kind, n) in &s.errors {
            let _ = writeln!(
                o,
                "stampede_failures,{tags},kind={} requests={n}i {}",
                tag(kind),
                s.unix_ms
            );
        }
        for (step, completed, failed, latency) in &s.steps {
            let _ = write!(
                o,
                "stampede_step,{tags},step={} requests={completed}i,failures={failed}i",
                tag(step)
            );
            latency_fields(&mut o, "latency", latency);
            let _ = writeln!(o, " {}", s.unix_ms);
        }
        for (name, v) in s.server.iter().filter(|(_, v)| v.is_finite()) {
            let _ = writeln!(
                o,
                "stampede_server,{tags},metric={} value={v} {}",
                tag(name),
                s.unix_ms
            );
        }
    }
    o.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_database_comes_from_the_path() {
        let e = |u: &str| Endpoint::parse(u).unwrap();
        assert_eq!(
            write_path(&e("http://h:8086/k6")),
            "/write?db=k6&precision=ms"
        );
        assert_eq!(
            write_path(&e("http://h:8086")),
            "/write?db=stampede&precision=ms"
        );
        assert_eq!(
            write_path(&e("http://h:8086/my db")),
            "/write?db=my%20db&precision=ms"
        );
        assert_eq!(
            write_path(&e("http://h:8086/write?db=x&rp=y")),
            "/write?db=x&rp=y&precision=ms"
        );
    }

    #[test]
    fn a_second_becomes_its_points() {
        let mut h = hdrhistogram::Histogram::<u64>::new(3).unwrap();
        h.record(2_000).unwrap();
        let s = Second {
            unix_ms: 1_700_000_000_000,
            completed: 5,
            failed: 1,
            bytes_read: 100,
            events: 0,
            latency: LatencyStats::of(&h),
            connections: 2,
            in_flight: 1,
            users: 0,
            statuses: vec![(200, 4), (404, 1)],
            errors: vec![("timeout", 1)],
            send_lag: LatencyStats::of(&hdrhistogram::Histogram::<u64>::new(3).unwrap()),
            steps: vec![("log in".into(), 3, 0, LatencyStats::of(&h))],
            server: vec![
                ("vllm:num_requests_waiting".into(), 37.0),
                ("vllm:kv_cache_usage_perc".into(), f64::NAN),
            ],
        };
        let info = RunInfo {
            method: "GET".into(),
            url: "http://a/b c,d".into(),
            server_address: "x".into(),
            server_port: 80,
            scheme: "http".into(),
            offered_rate: None,
            start_unix_ms: 0,
            host: "m".into(),
        };
        let text = String::from_utf8(lines(&info, &[Arc::new(s)])).unwrap();
        let l: Vec<&str> = text.lines().collect();
        assert_eq!(l.len(), 6, "{text}");
        assert!(l[0].starts_with("stampede,host=m,method=GET,url=http://a/b\\ c\\,d requests=5i,failures=1i,bytes=100i,"), "{}", l[0]);
        assert!(
            l[0].contains(",latency_p50=0.002,") && !l[0].contains("send_lag"),
            "{}",
            l[0]
        );
        assert!(l[0].ends_with(" 1700000000000"));
        assert_eq!(l[2], "stampede_status,host=m,method=GET,url=http://a/b\\ c\\,d,status=404 requests=1i 1700000000000");
        assert!(
            l[3].starts_with("stampede_failures,") && l[3].contains(",kind=timeout requests=1i ")
        );
        assert!(
            l[4].starts_with("stampede_step,host=m,")
                && l[4].contains(",step=log\\ in requests=3i,failures=0i,latency_p50=0.002,"),
            "{}",
            l[4]
        );
        // The server's series as scraped, a point each; a value Influx cannot hold
        // (NaN) is left out.
        assert_eq!(l[5], "stampede_server,host=m,method=GET,url=http://a/b\\ c\\,d,metric=vllm:num_requests_waiting value=37 1700000000000");
    }
}
