//! oha's reports: the text summary (success rate, times, sizes, the response-time
//! histogram of eleven marks from the fastest to the slowest, the distribution, the
//! connection details, statuses and errors), its JSON object, and its CSV of one line
//! per request. The latencies are the run's from the actual send, or with oha's
//! `--latency-correction` (and a rate) from each request's intended start. The
//! connect details are per new connection; the name was resolved once before the run,
//! so each connection's lookup is 0. The first byte is timed from the end of the
//! request's write.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use hdrhistogram::Histogram;
use serde_json::{json, Map, Value};
use stampede_engine::{value_at_percentile, RequestRecord, RunResult};

/// What oha's report needs besides the result.
#[derive(Debug, Clone, Copy)]
pub struct OhaInfo {
    /// `--latency-correction` with a rate: latencies from the intended start.
    pub corrected: bool,
    /// `-u`: the time unit, or `None` to choose one from the slowest response.
    pub unit: Option<TimeUnit>,
}

/// oha's `-u` time units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    Ns,
    Us,
    Ms,
    S,
    M,
    H,
}

impl TimeUnit {
    /// Every unit, smallest first.
    pub const ALL: [TimeUnit; 6] = [
        TimeUnit::Ns,
        TimeUnit::Us,
        TimeUnit::Ms,
        TimeUnit::S,
        TimeUnit::M,
        TimeUnit::H,
    ];

    /// The unit's name as written after a figure (and as `-u` takes it).
    pub fn name(self) -> &'static str {
        match self {
            TimeUnit::Ns => "ns",
            TimeUnit::Us => "us",
            TimeUnit::Ms => "ms",
            TimeUnit::S => "s",
            TimeUnit::M => "m",
            TimeUnit::H => "h",
        }
    }

    /// Microseconds in one unit.
    fn us(self) -> f64 {
        match self {
            TimeUnit::Ns => 1e-3,
            TimeUnit::Us => 1.0,
            TimeUnit::Ms => 1e3,
            TimeUnit::S => 1e6,
            TimeUnit::M => 6e7,
            TimeUnit::H => 3.6e9,
        }
    }

    /// The largest unit in which `us` is at least 1 (up to seconds; ms for nothing).
    fn fitting(us: f64) -> TimeUnit {
        if us <= 0.0 {
            return TimeUnit::Ms;
        }
        [TimeUnit::S, TimeUnit::Ms, TimeUnit::Us]
            .into_iter()
            .find(|u| us >= u.us())
            .unwrap_or(TimeUnit::Ns)
    }
}

/// The percentiles oha's distribution lists.
const PERCENTILES: [f64; 9] = [10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.9, 99.99];

/// A histogram's samples counted in `marks` linear steps from its smallest to its
/// largest value (µs): each mark with the samples above the mark before it and at
/// most it (the first: those at the smallest). hey and oha both draw these.
pub(crate) fn linear_buckets(h: &Histogram<u64>, marks: usize) -> Vec<(f64, u64)> {
    if h.is_empty() || marks < 2 {
        return Vec::new();
    }
    let lo = h.lowest_equivalent(h.min()) as f64;
    let hi = (h.max() as f64).max(lo);
    let step = (hi - lo) / (marks - 1) as f64;
    let mut out: Vec<(f64, u64)> = (0..marks).map(|i| (lo + step * i as f64, 0)).collect();
    out[marks - 1].0 = hi;
    for v in h.iter_recorded() {
        let x = h.lowest_equivalent(v.value_iterated_to()) as f64;
        let i = if step > 0.0 {
            (((x - lo) / step).ceil().max(0.0) as usize).min(marks - 1)
        } else {
            0
        };
        out[i].1 += v.count_at_value();
    }
    out
}

/// The bars of a histogram row: `width` marks for the largest count.
pub(crate) fn bar(count: u64, max: u64, width: u64) -> String {
    let n = (count * width + max / 2).checked_div(max).unwrap_or(0);
    "■".repeat(n as usize)
}

/// A byte count as oha writes it: `4 B`, `7.81 KiB`.
fn bytes(n: f64) -> String {
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    match crate::units::scale_binary(n, U.len() - 1) {
        (v, 0) => format!("{v:.0} B"),
        (v, i) => format!("{v:.2} {}", U[i]),
    }
}

/// The latencies the report shows: from the actual send, or corrected.
fn latencies<'a>(r: &'a RunResult, info: &OhaInfo) -> &'a Histogram<u64> {
    if info.corrected {
        &r.histograms.latency.0
    } else {
        &r.histograms.uncorrected.0
    }
}

/// Connect times of the requests that opened a connection (0 marks a reused one).
fn dialups(r: &RunResult) -> Histogram<u64> {
    let mut h = stampede_engine::result::new_histogram();
    for v in r.histograms.connect.0.iter_recorded() {
        if v.value_iterated_to() > 0 {
            let _ = h.record_n(v.value_iterated_to(), v.count_at_value());
        }
    }
    h
}

/// Every result oha counts: answered, failed, and cut off at the deadline.
fn results(r: &RunResult) -> u64 {
    r.requests.completed + r.requests.failed + r.requests.abandoned
}

/// The failures by kind in words (`connect refused`), with `extra` ones, most
/// frequent first: the error distributions of oha and hey.
pub(crate) fn error_counts(r: &RunResult, extra: Option<(u64, &str)>) -> Vec<(u64, String)> {
    let mut out: Vec<(u64, String)> = (r.errors.iter())
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| (*n, k.replace('_', " ")))
        .collect();
    out.extend(extra.filter(|e| e.0 > 0).map(|(n, e)| (n, e.to_string())));
    out.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    out
}

/// The errors as oha's distribution names them: requests cut off at `-z` too.
fn errors(r: &RunResult) -> Vec<(u64, String)> {
    error_counts(r, Some((r.requests.abandoned, "aborted due to deadline")))
}

/// Statuses, most frequent first.
fn statuses(r: &RunResult) -> Vec<(u16, u64)> {
    let mut s: Vec<(u16, u64)> = r.statuses.iter().map(|(k, v)| (*k, *v)).collect();
    s.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    s
}

/// (fastest, slowest, average) of a histogram in µs; zeros when empty.
pub(crate) fn span(h: &Histogram<u64>) -> (f64, f64, f64) {
    if h.is_empty() {
        (0.0, 0.0, 0.0)
    } else {
        (h.min() as f64, h.max() as f64, h.mean())
    }
}

/// oha's text report.
pub fn oha_report(r: &RunResult, info: &OhaInfo) -> String {
    let h = latencies(r, info);
    let (fastest, slowest, average) = span(h);
    let unit = info.unit.unwrap_or_else(|| TimeUnit::fitting(slowest));
    let t = |us: f64| format!("{:.4} {}", us / unit.us(), unit.name());
    let secs = r.duration_s.max(f64::MIN_POSITIVE);
    let all = results(r);
    let success = if all == 0 {
        0.0
    } else {
        100.0 * r.requests.completed as f64 / all as f64
    };
    let data = r.bytes.body as f64;
    let mut o = String::from("Summary:\n");
    let _ = writeln!(o, "  Success rate:\t{success:.2}%");
    let _ = writeln!(o, "  Total:\t{}", t(r.duration_s * 1e6));
    let _ = writeln!(o, "  Slowest:\t{}", t(slowest));
    let _ = writeln!(o, "  Fastest:\t{}", t(fastest));
    let _ = writeln!(o, "  Average:\t{}", t(average));
    let _ = writeln!(o, "  Requests/sec:\t{:.4}", all as f64 / secs);
    o.push('\n');
    let _ = writeln!(o, "  Total data:\t{}", bytes(data));
    let per = if r.requests.completed == 0 {
        "0 B".to_string()
    } else {
        bytes((data / r.requests.completed as f64).round())
    };
    let _ = writeln!(o, "  Size/request:\t{per}");
    let _ = writeln!(o, "  Size/sec:\t{}", bytes(data / secs));
    o.push_str("\nResponse time histogram:\n");
    let buckets = linear_buckets(h, 11);
    let max = buckets.iter().map(|b| b.1).max().unwrap_or(0);
    let marks: Vec<String> = (buckets.iter())
        .map(|(m, _)| format!("{:.3} {}", m / unit.us(), unit.name()))
        .collect();
    let counts: Vec<String> = buckets.iter().map(|(_, c)| format!("[{c}]")).collect();
    let mw = marks.iter().map(String::len).max().unwrap_or(0);
    let cw = counts.iter().map(String::len).max().unwrap_or(0);
    for ((m, c), (_, n)) in marks.iter().zip(&counts).zip(&buckets) {
        let _ = writeln!(o, "  {m:>mw$} {c:<cw$} |{}", bar(*n, max, 32));
    }
    o.push_str("\nResponse time distribution:\n");
    for p in PERCENTILES {
        let _ = writeln!(o, "  {p:.2}% in {}", t(value_at_percentile(h, p) as f64));
    }
    o.push_str("\n\nDetails (average, fastest, slowest):\n");
    let (df, ds, da) = span(&dialups(r));
    let _ = writeln!(o, "  DNS+dialup:\t{}, {}, {}", t(da), t(df), t(ds));
    let _ = writeln!(o, "  DNS-lookup:\t{}, {}, {}", t(0.0), t(0.0), t(0.0));
    o.push_str("\nStatus code distribution:\n");
    for (s, n) in statuses(r) {
        let _ = writeln!(o, "  [{s}] {n} responses");
    }
    let errs = errors(r);
    if !errs.is_empty() {
        o.push_str("\nError distribution:\n");
        for (n, e) in errs {
            let _ = writeln!(o, "  [{n}] {e}");
        }
    }
    o
}

/// The eleven marks of a histogram in seconds, with their counts.
fn histogram_json(h: &Histogram<u64>) -> Value {
    let mut m = Map::new();
    for (mark, n) in linear_buckets(h, 11) {
        // All samples alike: eleven equal marks, one key.
        let key = (mark / 1e6).to_string();
        let before = m.get(&key).and_then(Value::as_u64).unwrap_or(0);
        m.insert(key, json!(before + n));
    }
    Value::Object(m)
}

/// oha's percentiles (`p10` … `p99.99`) in seconds.
fn percentiles_json(h: &Histogram<u64>, scale: f64) -> Value {
    let mut m = Map::new();
    for p in PERCENTILES {
        let key = format!("p{}", p);
        m.insert(key, json!(value_at_percentile(h, p) as f64 * scale));
    }
    Value::Object(m)
}

/// average, fastest, slowest in seconds.
fn details_json(h: &Histogram<u64>) -> Value {
    let (f, s, a) = span(h);
    json!({ "average": a / 1e6, "fastest": f / 1e6, "slowest": s / 1e6 })
}

/// The requests answered per second over the run's whole seconds: mean, sd, extremes
/// and percentiles (requests/s), as oha's `rps` object.
fn rps_json(r: &RunResult) -> Value {
    let mut h = stampede_engine::result::new_histogram();
    for i in &r.intervals {
        let _ = h.record(i.completed);
    }
    if h.is_empty() {
        return json!({ "mean": 0.0, "stddev": null, "max": 0.0, "min": 0.0,
                       "percentiles": percentiles_json(&h, 1.0) });
    }
    let sd = (h.len() > 1).then(|| h.stdev());
    json!({
        "mean": h.mean(),
        "stddev": sd,
        "max": h.max() as f64,
        "min": h.min() as f64,
        "percentiles": percentiles_json(&h, 1.0),
    })
}

/// oha's JSON output (`--output-format json`).
pub fn oha_json(r: &RunResult, info: &OhaInfo) -> String {
    let h = latencies(r, info);
    let (fastest, slowest, average) = span(h);
    let secs = r.duration_s.max(f64::MIN_POSITIVE);
    let all = results(r);
    let success = if all == 0 {
        0.0
    } else {
        r.requests.completed as f64 / all as f64
    };
    let data = r.bytes.body;
    let per = data.checked_div(r.requests.completed).unwrap_or(0);
    let statuses: BTreeMap<String, u64> = (r.statuses.iter())
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
    let errors: BTreeMap<String, u64> = errors(r).into_iter().map(|(n, e)| (e, n)).collect();
    // Whole microseconds in ms: three decimals, as oha rounds them.
    let ms = |us: u64| us as f64 / 1e3;
    let v = json!({
        "summary": {
            "successRate": success,
            "total": r.duration_s,
            "slowest": slowest / 1e6,
            "fastest": fastest / 1e6,
            "average": average / 1e6,
            "requestsPerSec": all as f64 / secs,
            "totalData": data,
            "sizePerRequest": per,
            "sizePerSec": data as f64 / secs,
        },
        "metrics": {
            "success_rate": success,
            "requests_per_sec": all as f64 / secs,
            "latency_ms": {
                "min": ms(fastest as u64),
                "mean": average.round() / 1e3,
                "p50": ms(value_at_percentile(h, 50.0)),
                "p95": ms(value_at_percentile(h, 95.0)),
                "p99": ms(value_at_percentile(h, 99.0)),
                "max": ms(slowest as u64),
            },
        },
        "responseTimeHistogram": histogram_json(h),
        "latencyPercentiles": percentiles_json(h, 1e-6),
        "firstByteHistogram": histogram_json(&r.histograms.waiting.0),
        "firstBytePercentiles": percentiles_json(&r.histograms.waiting.0, 1e-6),
        "rps": rps_json(r),
        "details": {
            "DNSDialup": details_json(&dialups(r)),
            "DNSLookup": { "average": 0.0, "fastest": 0.0, "slowest": 0.0 },
            "firstByte": details_json(&r.histograms.waiting.0),
        },
        "statusCodeDistribution": statuses,
        "errorDistribution": errors,
    });
    serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
}

/// oha's CSV output: one line per request in the order they started, times in
/// seconds from the run's start: the start, the lookup (0: resolved before the run),
/// the connect (0 on a reused connection), the connect and the wait for the first
/// byte, the whole request, the body's bytes and the status (0: no response).
pub fn oha_csv(records: &[RequestRecord]) -> String {
    let mut order: Vec<&RequestRecord> = records.iter().collect();
    order.sort_by_key(|r| r.start_unix_us);
    let t0 = order.first().map_or(0, |r| r.start_unix_us);
    let s = |us: u64| us as f64 / 1e6;
    let mut o = String::with_capacity(72 + records.len() * 56);
    o.push_str("request-start,DNS,DNS+dialup,Response-delay,request-duration,bytes,status\n");
    for r in order {
        let _ = writeln!(
            o,
            "{},0,{},{},{},{},{}",
            s(r.start_unix_us - t0),
            s(r.connect_us),
            s((r.connect_us + r.waiting_us).min(r.total_us)),
            s(r.total_us),
            r.body_bytes,
            r.status
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(values: &[u64]) -> Histogram<u64> {
        let mut h = stampede_engine::result::new_histogram();
        for v in values {
            h.record(*v).unwrap();
        }
        h
    }

    #[test]
    fn buckets_run_from_the_fastest_to_the_slowest() {
        let b = linear_buckets(&hist(&[10, 10, 20, 60, 110]), 11);
        assert_eq!(b.len(), 11);
        assert_eq!((b[0].0, b[10].0), (10.0, 110.0));
        // 10 ×2 at the first mark; 20 at the second (10 < 20 ≤ 20); 60 at the sixth.
        let counts: Vec<u64> = b.iter().map(|x| x.1).collect();
        assert_eq!(counts, [2, 1, 0, 0, 0, 1, 0, 0, 0, 0, 1]);
        assert!(linear_buckets(&hist(&[]), 11).is_empty());
        let one = linear_buckets(&hist(&[7]), 11);
        assert_eq!(one.iter().map(|x| x.1).sum::<u64>(), 1);
    }

    #[test]
    fn bars_are_rounded_shares_of_the_largest() {
        assert_eq!(bar(100, 100, 32).chars().count(), 32);
        assert_eq!(bar(50, 100, 32).chars().count(), 16);
        assert_eq!(bar(1, 100, 32), "");
        assert_eq!(bar(0, 0, 32), "");
    }

    #[test]
    fn units_fit_the_slowest() {
        assert_eq!(TimeUnit::fitting(4115.6), TimeUnit::Ms);
        assert_eq!(TimeUnit::fitting(2_500_000.0), TimeUnit::S);
        assert_eq!(TimeUnit::fitting(999.0), TimeUnit::Us);
        assert_eq!(TimeUnit::fitting(0.5), TimeUnit::Ns);
        assert_eq!(bytes(4.0), "4 B");
        assert_eq!(bytes(8000.0), "7.81 KiB");
    }

    #[test]
    fn csv_lists_requests_by_start_from_the_first() {
        let rec = |start, status| RequestRecord {
            start_unix_us: start,
            connect_us: 100,
            total_us: 500,
            waiting_us: 300,
            status,
            body_bytes: 4,
            grpc: None,
            error: None,
        };
        let csv = oha_csv(&[rec(2_000_500, 200), rec(2_000_000, 0)]);
        // The connect and the wait never exceed the whole.
        let mut over = rec(1, 200);
        over.waiting_us = 450;
        assert!(oha_csv(&[over]).ends_with("\n0,0,0.0001,0.0005,0.0005,4,200\n"));
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(
            lines,
            [
                "request-start,DNS,DNS+dialup,Response-delay,request-duration,bytes,status",
                "0,0,0.0001,0.0004,0.0005,4,0",
                "0.0005,0,0.0001,0.0004,0.0005,4,200"
            ]
        );
    }
}
