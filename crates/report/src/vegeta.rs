//! vegeta's reports of a result: the text report (requests, durations, latencies,
//! bytes, success, status codes, error set), its JSON object, the histogram of given
//! buckets (`hist[0,1ms,10ms]`) and the HdrHistogram plot (`hdrplot`). Durations are
//! written as Go writes them (`1.5ms`, `2m3.5s`). A request with no answer is status 0,
//! as in vegeta; success is a 2xx or 3xx answer. The attack is the run's sending time
//! (its duration, as set), the wait what came after it.

use std::fmt::Write as _;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde_json::json;
use stampede_engine::{value_at_percentile, RunResult};

/// A duration as Go's `time.Duration` prints it: `0s`, `950µs`, `1.5ms`, `2m3.5s`.
pub fn go_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns == 0 {
        return "0s".into();
    }
    // Trailing zeros of a fraction dropped, as Go does.
    let frac = |whole: u128, part: u128, digits: usize| -> String {
        let f = format!("{part:0digits$}");
        let f = f.trim_end_matches('0');
        if f.is_empty() {
            whole.to_string()
        } else {
            format!("{whole}.{f}")
        }
    };
    if ns < 1_000 {
        return format!("{ns}ns");
    }
    if ns < 1_000_000 {
        return format!("{}µs", frac(ns / 1_000, ns % 1_000, 3));
    }
    if ns < 1_000_000_000 {
        return format!("{}ms", frac(ns / 1_000_000, ns % 1_000_000, 6));
    }
    let (h, rest) = (ns / 3_600_000_000_000, ns % 3_600_000_000_000);
    let (m, rest) = (rest / 60_000_000_000, rest % 60_000_000_000);
    let s = frac(rest / 1_000_000_000, rest % 1_000_000_000, 9);
    match (h, m) {
        (0, 0) => format!("{s}s"),
        (0, m) => format!("{m}m{s}s"),
        (h, m) => format!("{h}h{m}m{s}s"),
    }
}

/// µs as a Go duration.
fn us(v: f64) -> String {
    go_duration(Duration::from_nanos((v.max(0.0) * 1e3).round() as u64))
}

/// Every request of the result: answered, failed, and cut off at the end.
fn requests(r: &RunResult) -> u64 {
    r.requests.completed + r.requests.failed + r.requests.abandoned
}

/// Answers with a 2xx or 3xx status.
fn successes(r: &RunResult) -> u64 {
    (r.statuses.iter())
        .filter(|(s, _)| (200..400).contains(*s))
        .map(|(_, n)| n)
        .sum()
}

/// (attack, wait) in seconds: the sending time as set, and the rest.
fn attack_wait(r: &RunResult) -> (f64, f64) {
    let attack = r
        .settings
        .duration_s
        .map_or(r.duration_s, |d| d.min(r.duration_s));
    (attack, (r.duration_s - attack).max(0.0))
}

/// Status counts with the requests that got none as status 0.
fn status_codes(r: &RunResult) -> Vec<(u16, u64)> {
    let unanswered = r.requests.failed + r.requests.abandoned;
    let mut out: Vec<(u16, u64)> = r.statuses.iter().map(|(s, n)| (*s, *n)).collect();
    if unanswered > 0 {
        out.insert(0, (0, unanswered));
    }
    out
}

/// The errors, one line each, as vegeta's error set lists them.
fn error_set(r: &RunResult) -> Vec<String> {
    // vegeta counts a status outside 200–399 as an error named by its status line.
    let mut out: Vec<String> = (r.statuses.iter())
        .filter(|(s, n)| !(200..400).contains(*s) && **n > 0)
        .map(|(s, _)| match stampede_wire::status::reason(*s) {
            Some(why) => format!("{s} {why}"),
            None => s.to_string(),
        })
        .collect();
    out.extend(
        (r.errors.iter())
            .filter(|(_, n)| **n > 0)
            .map(|(k, _)| k.replace('_', " ")),
    );
    if r.requests.abandoned > 0 {
        out.push("still in flight when the attack ended".into());
    }
    out
}

/// The latencies vegeta lists: min, mean, 50, 90, 95, 99, max (µs).
fn latencies(h: &Histogram<u64>) -> [f64; 7] {
    if h.is_empty() {
        return [0.0; 7];
    }
    let p = |q: f64| value_at_percentile(h, q) as f64;
    [
        h.min() as f64,
        h.mean(),
        p(50.0),
        p(90.0),
        p(95.0),
        p(99.0),
        h.max() as f64,
    ]
}

/// vegeta's text report.
pub fn vegeta_text(r: &RunResult) -> String {
    let n = requests(r);
    let (attack, wait) = attack_wait(r);
    let ok = successes(r);
    let h = &r.histograms.latency.0;
    let mut o = String::new();
    let row = |o: &mut String, name: &str, fields: &str, values: String| {
        let _ = writeln!(o, "{name:<14}{fields:<34}{values}");
    };
    row(
        &mut o,
        "Requests",
        "[total, rate, throughput]",
        format!(
            "{n}, {:.2}, {:.2}",
            n as f64 / attack.max(f64::MIN_POSITIVE),
            ok as f64 / r.duration_s.max(f64::MIN_POSITIVE)
        ),
    );
    row(
        &mut o,
        "Duration",
        "[total, attack, wait]",
        format!(
            "{}, {}, {}",
            us(r.duration_s * 1e6),
            us(attack * 1e6),
            us(wait * 1e6)
        ),
    );
    let l: Vec<String> = latencies(h).iter().map(|v| us(*v)).collect();
    row(
        &mut o,
        "Latencies",
        "[min, mean, 50, 90, 95, 99, max]",
        l.join(", "),
    );
    let mean = |total: u64| total as f64 / n.max(1) as f64;
    row(
        &mut o,
        "Bytes In",
        "[total, mean]",
        format!("{}, {:.2}", r.bytes.body, mean(r.bytes.body)),
    );
    let out = r.settings.request_bytes.saturating_mul(n);
    row(
        &mut o,
        "Bytes Out",
        "[total, mean]",
        format!("{out}, {:.2}", mean(out)),
    );
    row(
        &mut o,
        "Success",
        "[ratio]",
        format!("{:.2}%", 100.0 * ok as f64 / n.max(1) as f64),
    );
    let codes: Vec<String> = (status_codes(r).iter())
        .map(|(s, c)| format!("{s}:{c}"))
        .collect();
    row(&mut o, "Status Codes", "[code:count]", codes.join("  "));
    o.push_str("Error Set:\n");
    for e in error_set(r) {
        let _ = writeln!(o, "{e}");
    }
    o
}

/// vegeta's JSON report (`-type=json`): durations in nanoseconds.
pub fn vegeta_json(r: &RunResult) -> String {
    let n = requests(r);
    let (attack, wait) = attack_wait(r);
    let ok = successes(r);
    let ns = |v: f64| (v * 1e3).round() as u64;
    let [min, mean, p50, p90, p95, p99, max] = latencies(&r.histograms.latency.0);
    let total_ns =
        (r.histograms.latency.0.mean() * r.histograms.latency.0.len() as f64 * 1e3).round() as u64;
    let start = r.started_unix_ms;
    let rfc = stampede_wire::date::rfc3339_ms;
    let out = r.settings.request_bytes.saturating_mul(n);
    let codes: serde_json::Map<String, serde_json::Value> = (status_codes(r).into_iter())
        .map(|(s, c)| (s.to_string(), json!(c)))
        .collect();
    let v = json!({
        "latencies": {
            "total": total_ns, "mean": ns(mean), "50th": ns(p50), "90th": ns(p90),
            "95th": ns(p95), "99th": ns(p99), "max": ns(max), "min": ns(min),
        },
        "bytes_in": { "total": r.bytes.body, "mean": r.bytes.body as f64 / n.max(1) as f64 },
        "bytes_out": { "total": out, "mean": out as f64 / n.max(1) as f64 },
        "earliest": rfc(start),
        "latest": rfc(start + (attack * 1e3) as u64),
        "end": rfc(start + (r.duration_s * 1e3) as u64),
        "duration": (attack * 1e9) as u64,
        "wait": (wait * 1e9) as u64,
        "requests": n,
        "rate": n as f64 / attack.max(f64::MIN_POSITIVE),
        "throughput": ok as f64 / r.duration_s.max(f64::MIN_POSITIVE),
        "success": ok as f64 / n.max(1) as f64,
        "status_codes": codes,
        "errors": error_set(r),
    });
    serde_json::to_string(&v).unwrap_or_default() + "\n"
}

/// Cells in columns padded to their widest and two spaces, as Go's tabwriter aligns
/// vegeta's histogram.
fn columns(rows: &[Vec<String>]) -> String {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let width: Vec<usize> = (0..n)
        .map(|c| {
            (rows.iter())
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut o = String::new();
    for r in rows {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            if c + 1 == r.len() {
                line.push_str(cell);
            } else {
                let pad = width[c] + 2 - cell.chars().count();
                line.push_str(cell);
                line.push_str(&" ".repeat(pad));
            }
        }
        o.push_str(line.trim_end());
        o.push('\n');
    }
    o
}

/// vegeta's histogram report: the answers per bucket, the last open-ended.
pub fn vegeta_hist(r: &RunResult, bounds: &[u64]) -> String {
    let h = &r.histograms.latency.0;
    let total = h.len().max(1);
    let mut rows = vec![vec![
        "Bucket".to_string(),
        String::new(),
        "#".into(),
        "%".into(),
        "Histogram".into(),
    ]];
    for (i, lo) in bounds.iter().enumerate() {
        let hi = bounds.get(i + 1).copied();
        let count = match hi {
            Some(hi) if hi > 0 => h.count_between(*lo, hi - 1),
            Some(_) => 0,
            None => h.count_between(*lo, u64::MAX >> 1),
        };
        let share = count as f64 / total as f64;
        rows.push(vec![
            format!("[{},", us(*lo as f64)),
            format!("{}]", hi.map_or("+Inf".into(), |v| us(v as f64))),
            count.to_string(),
            format!("{:.2}%", 100.0 * share),
            "#".repeat((share * 75.0) as usize),
        ]);
    }
    columns(&rows)
}

/// vegeta's `hdrplot`: values (ms) at its fixed quantiles, for HdrHistogram's plotter.
pub fn vegeta_hdrplot(r: &RunResult) -> String {
    const Q: [f64; 18] = [
        0.0, 0.5, 0.75, 0.875, 0.9375, 0.96875, 0.984375, 0.992188, 0.996094, 0.998047, 0.999023,
        0.999512, 0.999756, 0.999878, 0.999939, 0.999969, 0.999985, 1.0,
    ];
    let h = &r.histograms.latency.0;
    let mut o = String::from("Value(ms)  Percentile  TotalCount  1/(1-Percentile)\n");
    for q in Q {
        let v = if h.is_empty() {
            0
        } else {
            value_at_percentile(h, q * 100.0)
        };
        let count = (q * h.len() as f64).round() as u64;
        let inv = if q < 1.0 {
            1.0 / (1.0 - q)
        } else {
            f64::INFINITY
        };
        let _ = writeln!(
            o,
            "{:<9.6}  {q:<10.6}  {count:<10}  {}",
            v as f64 / 1e3,
            if inv.is_finite() {
                format!("{inv:.6}")
            } else {
                "inf".into()
            }
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_as_go_writes_them() {
        let d = |ns: u64| go_duration(Duration::from_nanos(ns));
        assert_eq!(d(0), "0s");
        assert_eq!(d(950), "950ns");
        assert_eq!(d(950_000), "950µs");
        assert_eq!(d(1_500_000), "1.5ms");
        assert_eq!(d(90_438_129), "90.438129ms");
        assert_eq!(d(10_094_965_987), "10.094965987s");
        assert_eq!(d(123_500_000_000), "2m3.5s");
        assert_eq!(d(3_600_000_000_000), "1h0m0s");
    }

    #[test]
    fn columns_align_as_a_tabwriter() {
        let rows = vec![
            vec!["Bucket".into(), "".into(), "#".into()],
            vec!["[0s,".into(), "1ms]".into(), "12".into()],
        ];
        assert_eq!(columns(&rows), "Bucket        #\n[0s,    1ms]  12\n");
    }
}
