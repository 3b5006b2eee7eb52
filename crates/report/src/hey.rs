//! hey's reports: the summary (times in seconds to four places, the data), the
//! response-time histogram of eleven marks, the latency distribution, the details
//! (connect, lookup and the wait for the first byte), statuses and errors; and its CSV
//! of one line per request. Latencies run from the actual send, as hey's do. hey times
//! the write and the read of a response apart; here they are timed together, so the
//! details leave out hey's "req write" and "resp read" rows and the CSV writes the
//! write as 0 and the whole remainder as the read. The name is resolved once before
//! the run, so each request's lookup is 0.

use std::fmt::Write as _;

use hdrhistogram::Histogram;
use stampede_engine::{value_at_percentile, RequestRecord, RunResult};

use crate::oha::{bar, error_counts, linear_buckets, span};

/// Seconds to four places, as hey writes them.
fn secs(us: f64) -> String {
    format!("{:.4}", us / 1e6)
}

/// Average, fastest and slowest of a histogram in µs, each as hey writes it.
fn row(h: &Histogram<u64>) -> String {
    let (f, s, a) = span(h);
    format!("{} secs, {} secs, {} secs", secs(a), secs(f), secs(s))
}

/// hey's text report.
pub fn hey_report(r: &RunResult) -> String {
    let h = &r.histograms.uncorrected.0;
    let total_s = r.duration_s.max(f64::MIN_POSITIVE);
    let results = r.requests.completed + r.requests.failed;
    let (fastest, slowest, average) = span(h);
    let mut o = String::from("\nSummary:\n");
    let _ = writeln!(o, "  Total:\t{} secs", secs(r.duration_s * 1e6));
    let _ = writeln!(o, "  Slowest:\t{} secs", secs(slowest));
    let _ = writeln!(o, "  Fastest:\t{} secs", secs(fastest));
    let _ = writeln!(o, "  Average:\t{} secs", secs(average));
    let _ = writeln!(o, "  Requests/sec:\t{:.4}", results as f64 / total_s);
    o.push_str("  \n");
    if r.bytes.body > 0 {
        let _ = writeln!(o, "  Total data:\t{} bytes", r.bytes.body);
        let per = r.bytes.body / r.requests.completed.max(1);
        let _ = writeln!(o, "  Size/request:\t{per} bytes");
    }
    o.push_str("\nResponse time histogram:\n");
    let buckets = linear_buckets(h, 11);
    let max = buckets.iter().map(|b| b.1).max().unwrap_or(0);
    for (mark, n) in &buckets {
        let _ = writeln!(o, "  {:.3} [{n}]\t|{}", mark / 1e6, bar(*n, max, 40));
    }
    o.push_str("\n\nLatency distribution:\n");
    if !h.is_empty() {
        for p in [10, 25, 50, 75, 90, 95, 99] {
            let v = value_at_percentile(h, f64::from(p)) as f64;
            let _ = writeln!(o, "  {p}% in {} secs", secs(v));
        }
    }
    o.push_str("\nDetails (average, fastest, slowest):\n");
    let _ = writeln!(o, "  DNS+dialup:\t{}", row(&r.histograms.connect.0));
    let _ = writeln!(
        o,
        "  DNS-lookup:\t{}",
        row(&Histogram::new(1).expect("1 digit"))
    );
    let _ = writeln!(o, "  resp wait:\t{}", row(&r.histograms.waiting.0));
    o.push_str("\nStatus code distribution:\n");
    for (status, n) in &r.statuses {
        let _ = writeln!(o, "  [{status}]\t{n} responses");
    }
    let errors = error_counts(r, None);
    if !errors.is_empty() {
        o.push_str("\nError distribution:\n");
        for (n, e) in errors {
            let _ = writeln!(o, "  [{n}]\t{e}");
        }
    }
    o
}

/// hey's `-o csv`: one line per answered request in the order they started, times in
/// seconds: the whole response, the connect (0 on a reused connection), the lookup
/// (0), the write (0: timed with the read), the wait for the first byte, the rest,
/// the status, and the start from the run's.
pub fn hey_csv(records: &[RequestRecord]) -> String {
    let mut order: Vec<&RequestRecord> = records.iter().filter(|r| r.status != 0).collect();
    order.sort_by_key(|r| r.start_unix_us);
    let t0 = records.iter().map(|r| r.start_unix_us).min().unwrap_or(0);
    let s = |us: u64| secs(us as f64);
    let mut o = String::with_capacity(80 + order.len() * 64);
    o.push_str("response-time,DNS+dialup,DNS,Request-write,Response-delay,Response-read,status-code,offset\n");
    for r in order {
        let read = r.total_us.saturating_sub(r.connect_us + r.waiting_us);
        let _ = writeln!(
            o,
            "{},{},0.0000,0.0000,{},{},{},{}",
            s(r.total_us),
            s(r.connect_us),
            s(r.waiting_us),
            s(read),
            r.status,
            s(r.start_unix_us - t0)
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_has_heys_columns_and_skips_failures() {
        let rec = |start, status| RequestRecord {
            start_unix_us: start,
            connect_us: 100,
            total_us: 1_000,
            waiting_us: 600,
            status,
            body_bytes: 4,
            grpc: None,
            error: None,
        };
        let csv = hey_csv(&[rec(5_000, 200), rec(4_000, 0), rec(4_500, 404)]);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(
            lines,
            [
                "response-time,DNS+dialup,DNS,Request-write,Response-delay,Response-read,status-code,offset",
                "0.0010,0.0001,0.0000,0.0000,0.0006,0.0003,404,0.0005",
                "0.0010,0.0001,0.0000,0.0000,0.0006,0.0003,200,0.0010",
            ]
        );
    }
}
