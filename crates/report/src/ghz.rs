//! ghz's reports: the summary (count, total, slowest, fastest, average, requests per
//! second, the response-time histogram of eleven marks, the latency distribution, the
//! status codes and errors), its JSON (`-O json`, `pretty`), its CSV of one line per
//! call, and its InfluxDB lines (`influx-summary`, `influx-details`).
//!
//! Statuses are gRPC's code names as Go writes them (`OK`, `Unavailable`,
//! `DeadlineExceeded`). A call answered with a status is counted by it; a call that got
//! no answer is counted as the status ghz gives such a call (`DeadlineExceeded` for a
//! timeout, `Internal` for an answer that broke gRPC's framing, `Unavailable` for the
//! rest), its error naming stampede's failure kind. As in ghz, the latency figures
//! take the calls answered `OK` unless errors are counted too. Latencies run from each
//! call's intended start: the same as its send in the closed model, and under a rate
//! the wait of a call that found no free stream is counted, which ghz leaves out.

use std::fmt::Write as _;

use hdrhistogram::Histogram;
use serde_json::{json, Map, Value};
use stampede_engine::{value_at_percentile, RequestRecord, RunResult};

use crate::oha::linear_buckets;

/// Go's names of gRPC's codes, by number.
const GO_CODES: [&str; 17] = [
    "OK",
    "Canceled",
    "Unknown",
    "InvalidArgument",
    "DeadlineExceeded",
    "NotFound",
    "AlreadyExists",
    "PermissionDenied",
    "ResourceExhausted",
    "FailedPrecondition",
    "Aborted",
    "OutOfRange",
    "Unimplemented",
    "Internal",
    "Unavailable",
    "DataLoss",
    "Unauthenticated",
];

/// The percentiles of ghz's latency distribution.
const PERCENTILES: [u32; 7] = [10, 25, 50, 75, 90, 95, 99];

/// A code's name as Go writes it.
pub fn go_code(code: u8) -> &'static str {
    GO_CODES
        .get(usize::from(code))
        .copied()
        .unwrap_or("Unknown")
}

/// The code ghz gives a call that got no answer, by stampede's failure kind.
fn code_of_failure(kind: &str) -> u8 {
    match kind {
        "timeout" | "stream_stall" => 4,
        "grpc_message" | "grpc_no_status" | "h2_stream_reset" => 13,
        _ => 14,
    }
}

/// What the report needs besides the result.
#[derive(Debug, Clone, Default)]
pub struct GhzInfo {
    /// `--name`.
    pub name: Option<String>,
    /// `--count-errors`: the latency figures take every call, not only those answered
    /// OK.
    pub count_errors: bool,
    /// `--duration-stop close`: calls in flight when a timed run ended are counted as
    /// `Canceled` (otherwise they are left out).
    pub cut_as_canceled: bool,
    /// Why the run ended: `normal`, `timeout` (its duration) or `cancel`.
    pub end_reason: &'static str,
    /// The options as ghz's JSON report echoes them.
    pub options: Value,
    /// `--tags`.
    pub tags: Option<Map<String, Value>>,
    /// The tags of the InfluxDB lines, in ghz's order (`proto`, `call`, `host`, `n`,
    /// …), values as written.
    pub influx_tags: Vec<(&'static str, String)>,
}

/// The calls counted: by status name, by error, and the latencies taken.
struct Tally {
    count: u64,
    statuses: Vec<(String, u64)>,
    errors: Vec<(String, u64)>,
    hist: Histogram<u64>,
}

fn tally(r: &RunResult, info: &GhzInfo) -> Tally {
    let mut statuses: Vec<(String, u64)> = Vec::new();
    let mut errors: Vec<(String, u64)> = Vec::new();
    let mut add = |status: &str, error: Option<String>, n: u64| {
        if n == 0 {
            return;
        }
        match statuses.iter_mut().find(|(s, _)| s == status) {
            Some((_, c)) => *c += n,
            None => statuses.push((status.to_string(), n)),
        }
        if let Some(e) = error {
            errors.push((e, n));
        }
    };
    let mut answered = 0;
    for (name, n) in r.protocols.grpc.iter().flatten() {
        let code = stampede_wire::grpc::code_of(name).unwrap_or(stampede_wire::grpc::UNKNOWN);
        let go = go_code(code);
        answered += n;
        // Those whose answer had a message are listed with it, as ghz's desc.
        let mut left = *n;
        for m in r
            .protocols
            .grpc_messages
            .iter()
            .filter(|m| &m.status == name)
        {
            let k = m.count.min(left);
            left -= k;
            add(
                go,
                Some(format!("rpc error: code = {go} desc = {}", m.message)),
                k,
            );
        }
        add(
            go,
            (code != 0).then(|| format!("rpc error: code = {go}")),
            left,
        );
    }
    // An answer without a gRPC status (a server that is no gRPC server).
    let bare = r.requests.completed.saturating_sub(answered);
    add(
        "Unknown",
        Some("rpc error: code = Unknown desc = an answer without grpc-status".into()),
        bare,
    );
    for (kind, n) in &r.errors {
        let go = go_code(code_of_failure(kind));
        let desc = kind.replace('_', " ");
        add(
            go,
            Some(format!("rpc error: code = {go} desc = {desc}")),
            *n,
        );
    }
    if info.cut_as_canceled {
        add(
            "Canceled",
            Some("rpc error: code = Canceled desc = the run ended with the call in flight".into()),
            r.requests.abandoned,
        );
    }
    statuses.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    errors.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let count = statuses.iter().map(|s| s.1).sum();
    let mut hist = r.histograms.ok.0.clone();
    if info.count_errors {
        let _ = hist.add(&r.histograms.ko.0);
    }
    Tally {
        count,
        statuses,
        errors,
        hist,
    }
}

/// A duration in µs as ghz writes it: milliseconds to two places, seconds from one
/// second on.
fn dur(us: f64) -> String {
    if us >= 1e6 {
        format!("{:.2} s", us / 1e6)
    } else {
        format!("{:.2} ms", us / 1e3)
    }
}

/// Fastest, slowest and average in µs (zeros when nothing was taken).
fn span(h: &Histogram<u64>) -> (f64, f64, f64) {
    if h.is_empty() {
        (0.0, 0.0, 0.0)
    } else {
        (h.min() as f64, h.max() as f64, h.mean())
    }
}

/// Rows of a table as Go's tabwriter aligns them with a padding of three: every
/// cell, the last included, padded to its column's widest and three spaces more.
fn table(rows: &[[String; 2]]) -> String {
    let width = |i: usize| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0) + 3;
    let (w0, w1) = (width(0), width(1));
    let mut o = String::new();
    for r in rows {
        let _ = writeln!(o, "  {:<w0$}{:<w1$}", r[0], r[1]);
    }
    o
}

/// ghz's summary.
pub fn ghz_summary(r: &RunResult, info: &GhzInfo) -> String {
    let t = tally(r, info);
    let (fastest, slowest, average) = span(&t.hist);
    let secs = r.duration_s.max(f64::MIN_POSITIVE);
    let mut o = String::from("\nSummary:\n");
    if let Some(n) = &info.name {
        let _ = writeln!(o, "  Name:\t\t{n}");
    }
    let _ = writeln!(o, "  Count:\t{}", t.count);
    let _ = writeln!(o, "  Total:\t{}", dur(r.duration_s * 1e6));
    let _ = writeln!(o, "  Slowest:\t{}", dur(slowest));
    let _ = writeln!(o, "  Fastest:\t{}", dur(fastest));
    let _ = writeln!(o, "  Average:\t{}", dur(average));
    let _ = writeln!(o, "  Requests/sec:\t{:.2}", t.count as f64 / secs);
    o.push_str("\nResponse time histogram:\n");
    let buckets = linear_buckets(&t.hist, 11);
    let max = buckets.iter().map(|b| b.1).max().unwrap_or(0);
    for (mark, n) in &buckets {
        let bars = (n * 40).checked_div(max).unwrap_or(0) as usize;
        let _ = writeln!(o, "  {:.3} [{n}]\t|{}", mark / 1e3, "∎".repeat(bars));
    }
    o.push_str("\nLatency distribution:");
    if !t.hist.is_empty() {
        for p in PERCENTILES {
            let v = value_at_percentile(&t.hist, f64::from(p)) as f64;
            let _ = write!(o, "\n  {p} % in {} ", dur(v));
        }
    }
    o.push_str("\n\n");
    if !t.statuses.is_empty() {
        o.push_str("Status code distribution:\n");
        let rows: Vec<[String; 2]> = (t.statuses.iter())
            .map(|(s, n)| [format!("[{s}]"), format!("{n} responses")])
            .collect();
        o += &table(&rows);
    }
    o.push('\n');
    if !t.errors.is_empty() {
        o.push_str("Error distribution:\n");
        let rows: Vec<[String; 2]> = (t.errors.iter())
            .map(|(e, n)| [format!("[{n}]"), e.clone()])
            .collect();
        o += &table(&rows);
    }
    o.push('\n');
    o
}

/// A record's status name and error text, as ghz's details give them.
fn record_outcome(rec: &RequestRecord) -> (&'static str, String) {
    match (rec.grpc, rec.error) {
        (Some(0), _) => ("OK", String::new()),
        (Some(c), _) => (go_code(c), format!("rpc error: code = {}", go_code(c))),
        (None, Some(kind)) => {
            let go = go_code(code_of_failure(kind.name()));
            let desc = kind.name().replace('_', " ");
            (go, format!("rpc error: code = {go} desc = {desc}"))
        }
        (None, None) => (
            "Unknown",
            "rpc error: code = Unknown desc = an answer without grpc-status".into(),
        ),
    }
}

/// RFC 3339 in UTC with microseconds: `2026-11-27T05:59:44.208472Z`.
fn rfc3339(unix_us: u64) -> String {
    let secs = unix_us / 1_000_000;
    let (y, m, d) = stampede_wire::date::civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:06}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        unix_us % 1_000_000
    )
}

/// ghz's JSON report (`-O json`; `pretty` is the same indented). Durations are
/// nanoseconds, the histogram's marks seconds, as ghz writes them; `details` lists
/// the calls whose records were kept.
pub fn ghz_json(r: &RunResult, records: &[RequestRecord], info: &GhzInfo) -> Value {
    let t = tally(r, info);
    let (fastest, slowest, average) = span(&t.hist);
    let ns = |us: f64| (us * 1e3).round() as u64;
    let mut o = Map::new();
    let date = rfc3339(r.started_unix_ms * 1000);
    o.insert("date".into(), json!(format!("{}Z", &date[..19])));
    if let Some(n) = &info.name {
        o.insert("name".into(), json!(n));
    }
    o.insert("endReason".into(), json!(info.end_reason));
    o.insert("options".into(), info.options.clone());
    o.insert("count".into(), json!(t.count));
    o.insert("total".into(), json!(ns(r.duration_s * 1e6)));
    o.insert("average".into(), json!(ns(average)));
    o.insert("fastest".into(), json!(ns(fastest)));
    o.insert("slowest".into(), json!(ns(slowest)));
    let secs = r.duration_s.max(f64::MIN_POSITIVE);
    o.insert("rps".into(), json!(t.count as f64 / secs));
    let dist = |v: &[(String, u64)]| -> Map<String, Value> {
        v.iter().map(|(k, n)| (k.clone(), json!(n))).collect()
    };
    o.insert("errorDistribution".into(), Value::Object(dist(&t.errors)));
    o.insert(
        "statusCodeDistribution".into(),
        Value::Object(dist(&t.statuses)),
    );
    let (latency, histogram) = if t.hist.is_empty() {
        (Value::Null, Value::Null)
    } else {
        let l: Vec<Value> = PERCENTILES
            .iter()
            .map(|p| {
                let v = value_at_percentile(&t.hist, f64::from(*p)) as f64;
                json!({"percentage": p, "latency": ns(v)})
            })
            .collect();
        let total = t.hist.len().max(1) as f64;
        let h: Vec<Value> = linear_buckets(&t.hist, 11)
            .into_iter()
            .map(|(mark, n)| json!({"mark": mark / 1e6, "count": n, "frequency": n as f64 / total}))
            .collect();
        (Value::Array(l), Value::Array(h))
    };
    o.insert("latencyDistribution".into(), latency);
    o.insert("histogram".into(), histogram);
    let details: Vec<Value> = records
        .iter()
        .map(|rec| {
            let (status, error) = record_outcome(rec);
            json!({
                "timestamp": rfc3339(rec.start_unix_us),
                "latency": rec.total_us * 1000,
                "error": error,
                "status": status,
            })
        })
        .collect();
    o.insert("details".into(), Value::Array(details));
    if let Some(tags) = &info.tags {
        o.insert("tags".into(), Value::Object(tags.clone()));
    }
    Value::Object(o)
}

/// ghz's CSV: one line per call, its latency in milliseconds, its status and error.
pub fn ghz_csv(records: &[RequestRecord]) -> String {
    let mut o = String::with_capacity(32 + records.len() * 24);
    o.push_str("\nduration (ms),status,error\n");
    for rec in records {
        let (status, error) = record_outcome(rec);
        let _ = writeln!(o, "{:.2},{status},{error}", rec.total_us as f64 / 1e3);
    }
    o
}

/// An InfluxDB tag value as ghz writes it (in double quotes), with what the line
/// protocol needs escaped.
fn tag_value(v: &str) -> String {
    let mut o = String::with_capacity(v.len() + 2);
    o.push('"');
    for c in v.chars() {
        if matches!(c, '"' | ',' | ' ' | '=' | '\\') {
            o.push('\\');
        }
        o.push(c);
    }
    o.push('"');
    o
}

/// The tags of ghz's lines: the quoted ones quoted, the numbers as they are.
fn tags(info: &GhzInfo) -> String {
    let quoted = ["proto", "call", "host", "data", "metadata", "tags"];
    let parts: Vec<String> = (info.influx_tags.iter())
        .map(|(k, v)| {
            if quoted.contains(k) {
                format!("{k}={}", tag_value(v))
            } else {
                format!("{k}={v}")
            }
        })
        .collect();
    parts.join(",")
}

/// ghz's `influx-summary`: one line for the run.
pub fn ghz_influx_summary(r: &RunResult, info: &GhzInfo) -> String {
    let t = tally(r, info);
    let (fastest, slowest, average) = span(&t.hist);
    let ns = |us: f64| (us * 1e3).round() as u64;
    let errors: u64 = t.errors.iter().map(|e| e.1).sum();
    let p = |q: f64| {
        if t.hist.is_empty() {
            0
        } else {
            ns(value_at_percentile(&t.hist, q) as f64)
        }
    };
    format!(
        "ghz_run,{},errors={errors},has_errors={} count={},total={},average={},fastest={},slowest={},rps={:.2},median={},p95={},errors={errors} {}",
        tags(info),
        errors > 0,
        t.count,
        ns(r.duration_s * 1e6),
        ns(average),
        ns(fastest),
        ns(slowest),
        t.count as f64 / r.duration_s.max(f64::MIN_POSITIVE),
        p(50.0),
        p(95.0),
        r.started_unix_ms * 1_000_000
    )
}

/// ghz's `influx-details`: one line per call.
pub fn ghz_influx_details(records: &[RequestRecord], info: &GhzInfo) -> String {
    let tags = tags(info);
    let lines: Vec<String> = records
        .iter()
        .map(|rec| {
            let (status, error) = record_outcome(rec);
            format!(
                "ghz_detail,{tags},hasError={} latency={},error={},status=\"{status}\" {}",
                !error.is_empty(),
                rec.total_us * 1000,
                serde_json::to_string(&error).unwrap_or_default(),
                rec.start_unix_us * 1000
            )
        })
        .collect();
    lines.join("\n")
}
