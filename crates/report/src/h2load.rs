//! h2load's report layout: the request counts by outcome, status classes, traffic with
//! the header compression, and the min/max/mean/sd table for request time, connect
//! time, time to first byte and per-client req/s.

use std::fmt::Write as _;

use hdrhistogram::Histogram;
use stampede_engine::{ErrorKind, RequestRecord, RunResult};

use crate::units::{scale_binary, scale_us};
use crate::wrk::within_stdev;

/// What the report needs beyond the result.
pub struct H2loadInfo {
    /// Worker threads and clients (connections).
    pub threads: u64,
    /// Clients.
    pub clients: u64,
    /// Requests asked for (h2load's `-n`), when not bounded by `-D`.
    pub requests: Option<u64>,
    /// "h2c", "h2" or "http/1.1".
    pub protocol: String,
}

/// A duration as h2load writes it: `88us`, `1.33ms`, `2.28s`.
fn duration(us: f64) -> String {
    match scale_us(us) {
        (v, 0) => format!("{v:.0}us"),
        (v, 1) => format!("{v:.2}ms"),
        (v, _) => format!("{v:.2}s"),
    }
}

/// A byte count with a 1024-based unit, as h2load writes it: `138.86KB`.
fn bytes(n: f64) -> String {
    const U: [&str; 4] = ["B", "KB", "MB", "GB"];
    match scale_binary(n, U.len() - 1) {
        (v, 0) => format!("{v:.0}B"),
        (v, i) => format!("{v:.2}{}", U[i]),
    }
}

/// The head printed before the run.
pub fn h2load_preamble(info: &H2loadInfo) -> String {
    let mut o = String::from("starting benchmark...\n");
    for t in 0..info.threads {
        let clients = info.clients / info.threads + u64::from(t < info.clients % info.threads);
        let reqs = info
            .requests
            .map(|n| n / info.threads + u64::from(t < n % info.threads));
        let _ = match reqs {
            Some(n) => writeln!(
                o,
                "spawning thread #{t}: {clients} total client(s). {n} total requests"
            ),
            None => writeln!(
                o,
                "spawning thread #{t}: {clients} total client(s). Timing-based test"
            ),
        };
    }
    let _ = writeln!(o, "Application protocol: {}", info.protocol);
    o
}

/// One row of the statistics table: a histogram's min, max, mean and sd written by
/// `fmt`, and the share within one sd of the mean.
fn row(o: &mut String, label: &str, h: &Histogram<u64>, fmt: &dyn Fn(f64) -> String) {
    let (min, max, mean, sd, within) = if h.is_empty() {
        (0.0, 0.0, 0.0, 0.0, 0.0)
    } else {
        (
            h.min() as f64,
            h.max() as f64,
            h.mean(),
            h.stdev(),
            within_stdev(h),
        )
    };
    let _ = writeln!(
        o,
        "{label} {:>10}  {:>10}  {:>10}  {:>10}{:>9.2}%",
        fmt(min),
        fmt(max),
        fmt(mean),
        fmt(sd),
        within
    );
}

/// h2load's report for a finished run.
pub fn h2load_report(r: &RunResult, info: &H2loadInfo) -> String {
    let mut o = String::from("\n");
    let t = r.duration_s.max(f64::MIN_POSITIVE);
    let done = r.requests.completed;
    let _ = writeln!(
        o,
        "finished in {}, {:.2} req/s, {}/s",
        duration(r.duration_s * 1e6),
        done as f64 / t,
        bytes(r.bytes.read as f64 / t)
    );
    let class = |lo: u16| -> u64 {
        r.statuses
            .iter()
            .filter(|(s, _)| (lo..lo + 100).contains(*s))
            .map(|(_, n)| n)
            .sum()
    };
    let succeeded = class(200) + class(300);
    let errored = r.requests.failed;
    let failed = done - succeeded + errored;
    let total = info.requests.unwrap_or(r.requests.started);
    let _ = writeln!(
        o,
        "requests: {total} total, {} started, {} done, {succeeded} succeeded, {failed} failed, {errored} errored, {} timeout",
        r.requests.started,
        done + errored,
        r.errors_of(ErrorKind::Timeout)
    );
    let _ = writeln!(
        o,
        "status codes: {} 2xx, {} 3xx, {} 4xx, {} 5xx",
        class(200),
        class(300),
        class(400),
        class(500)
    );
    // HTTP/2 (HPACK) and HTTP/3 (QPACK) count their header blocks both ways.
    let (headers, savings) = if r.bytes.headers_decoded > 0 {
        let c = r.bytes.headers_compressed;
        (c, 100.0 * (1.0 - c as f64 / r.bytes.headers_decoded as f64))
    } else {
        (r.bytes.read.saturating_sub(r.bytes.body), 0.0)
    };
    let _ = writeln!(
        o,
        "traffic: {} ({}) total, {} ({}) headers (space savings {savings:.2}%), {} ({}) data",
        bytes(r.bytes.read as f64),
        r.bytes.read,
        bytes(headers as f64),
        headers,
        bytes(r.bytes.body as f64),
        r.bytes.body
    );
    o.push_str("                     min         max         mean         sd        +/- sd\n");
    row(
        &mut o,
        "time for request:",
        &r.histograms.uncorrected.0,
        &duration,
    );
    // Connect times of requests that opened a connection (0 marks a reused one).
    let mut connect = stampede_engine::result::new_histogram();
    for v in r.histograms.connect.0.iter_recorded() {
        if v.value_iterated_to() > 0 {
            let _ = connect.record_n(v.value_iterated_to(), v.count_at_value());
        }
    }
    row(&mut o, "time for connect:", &connect, &duration);
    row(
        &mut o,
        "time to 1st byte:",
        &r.histograms.first_byte.0,
        &duration,
    );
    // Per client: its responses over the run's length.
    let mut rps = stampede_engine::result::new_histogram();
    for v in r.histograms.per_connection.0.iter_recorded() {
        let per_s = (v.value_iterated_to() as f64 / t * 100.0).round() as u64;
        let _ = rps.record_n(per_s, v.count_at_value());
    }
    row(&mut o, "req/s           :", &rps, &|v| {
        format!("{:.2}", v / 100.0)
    });
    o
}

/// h2load's `--log-file`: a line per request, in the order the requests ended, with
/// its start (µs since the Unix epoch), its status (-1 for a request that got no
/// response) and the µs from its start to the end of its response (or its failure).
pub fn h2load_log(records: &[RequestRecord]) -> String {
    let mut order: Vec<&RequestRecord> = records.iter().collect();
    order.sort_by_key(|r| r.start_unix_us + r.total_us);
    let mut o = String::with_capacity(records.len() * 28);
    for r in order {
        let status = if r.status == 0 { -1 } else { r.status as i32 };
        let _ = writeln!(o, "{}\t{status}\t{}", r.start_unix_us, r.total_us);
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_as_h2load_writes_them() {
        assert_eq!(duration(88.0), "88us");
        assert_eq!(duration(1330.0), "1.33ms");
        assert_eq!(duration(2_280_000.0), "2.28s");
        assert_eq!(bytes(142_196.0), "138.86KB");
        assert_eq!(bytes(8000.0), "7.81KB");
        assert_eq!(bytes(5_913_000.0), "5.64MB");
        assert_eq!(bytes(512.0), "512B");
    }
}
