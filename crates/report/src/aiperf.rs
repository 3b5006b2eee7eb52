//! `stampede aiperf profile`'s outputs, in AIPerf's layout: its console table of LLM
//! metrics (avg, min, max, p99, p90, p50, std per metric) and its export files,
//! `profile_export_aiperf.json` (a stats block per metric under AIPerf's keys: `unit`,
//! `avg`, `min`, `max`, `p1` … `p99`, `std`, `count`, `sum`) and
//! `profile_export_aiperf.csv`. Time to first token and request latency are timed
//! from each request's intended start; AIPerf's own, from the send, are given beside
//! them (`…_from_send` keys, "from the send" rows).

use std::fmt::Write as _;

use stampede_engine::{percentile_linear, Hist, RunResult};

/// What the outputs need besides the result.
pub struct Info {
    pub model: String,
    pub url: String,
    pub endpoint_type: String,
    pub streaming: bool,
    pub concurrency: Option<usize>,
    pub request_rate: Option<f64>,
    /// Each request's input length in tokens.
    pub isl: Vec<u32>,
    pub seed: Option<u64>,
    pub artifact_dir: String,
    /// The exports' base name.
    pub prefix: String,
    /// The server's metrics endpoint scraped, if any.
    pub scrape: Option<String>,
    pub warmups: u64,
}

/// One metric's statistics, in its display unit.
#[derive(Debug, Clone, PartialEq)]
pub struct Stats {
    pub avg: f64,
    pub min: f64,
    pub max: f64,
    pub std: f64,
    pub count: u64,
    /// p1, p5, p10, p25, p50, p75, p90, p95, p99.
    pub p: [f64; 9],
}

const PERCENTILES: [f64; 9] = [1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0];

impl Stats {
    /// A histogram's, divided by `scale` (1000: µs to ms).
    fn of(h: &Hist, scale: f64) -> Option<Stats> {
        if h.0.is_empty() {
            return None;
        }
        Some(Stats {
            avg: h.0.mean() / scale,
            min: h.0.min() as f64 / scale,
            max: h.0.max() as f64 / scale,
            std: h.0.stdev() / scale,
            count: h.0.len(),
            p: PERCENTILES.map(|q| percentile_linear(&h.0, q) / scale),
        })
    }

    /// Plain values'.
    fn of_values(v: &[f64]) -> Option<Stats> {
        if v.is_empty() {
            return None;
        }
        let mut s = v.to_vec();
        s.sort_by(|a, b| a.total_cmp(b));
        let n = s.len() as f64;
        let avg = s.iter().sum::<f64>() / n;
        let at = |q: f64| {
            let rank = q / 100.0 * (n - 1.0);
            let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
            s[lo] + (s[hi] - s[lo]) * (rank - lo as f64)
        };
        Some(Stats {
            avg,
            min: s[0],
            max: s[s.len() - 1],
            std: (s.iter().map(|x| (x - avg).powi(2)).sum::<f64>() / n).sqrt(),
            count: s.len() as u64,
            p: PERCENTILES.map(at),
        })
    }

    /// The reciprocals of a histogram's values times `k` (tokens per second per
    /// user from the seconds a token took), each value weighed by its count.
    fn of_reciprocals(h: &Hist, k: f64) -> Option<Stats> {
        let mut v = Vec::new();
        for it in h.0.iter_recorded() {
            let x = it.value_iterated_to() as f64;
            if x > 0.0 {
                v.extend(std::iter::repeat_n(k / x, it.count_at_value() as usize));
            }
            if v.len() > 1_000_000 {
                break;
            }
        }
        Stats::of_values(&v)
    }
}

/// A metric: its key, its row's name, its unit, and its figures (a distribution,
/// or one value).
struct Row {
    key: &'static str,
    name: String,
    unit: &'static str,
    stats: Option<Stats>,
    value: Option<f64>,
}

fn rows(r: &RunResult, info: &Info) -> Vec<Row> {
    let dist = |key, name: &str, unit, stats| Row {
        key,
        name: name.to_string(),
        unit,
        stats,
        value: None,
    };
    let one = |key, name: &str, unit, v| Row {
        key,
        name: name.to_string(),
        unit,
        stats: None,
        value: Some(v),
    };
    let secs = r.duration_s.max(1e-9);
    let completed: u64 = r.statuses.range(200..300).map(|(_, n)| n).sum();
    let isl: Vec<f64> = info.isl.iter().map(|&n| f64::from(n)).collect();
    let mut out = Vec::new();
    let stream = r.histograms.stream.as_ref().filter(|_| info.streaming);
    if let Some(h) = stream {
        out.push(dist(
            "time_to_first_token",
            "Time to First Token",
            "ms",
            Stats::of(&h.first_event, 1000.0),
        ));
        out.push(dist(
            "time_to_first_token_from_send",
            "Time to First Token, from the send",
            "ms",
            Stats::of(&h.first_event_uncorrected, 1000.0),
        ));
    }
    out.push(dist(
        "request_latency",
        "Request Latency",
        "ms",
        Stats::of(&r.histograms.latency, 1000.0),
    ));
    out.push(dist(
        "request_latency_from_send",
        "Request Latency, from the send",
        "ms",
        Stats::of(&r.histograms.uncorrected, 1000.0),
    ));
    let tokens = r.protocols.stream.as_ref().and_then(|s| s.tokens.as_ref());
    if let Some(h) = stream {
        out.push(dist(
            "inter_token_latency",
            "Inter Token Latency",
            "ms",
            Stats::of(&h.tpot, 1000.0),
        ));
        out.push(dist(
            "output_token_throughput_per_user",
            "Output Token Throughput Per User",
            "tokens/sec/user",
            Stats::of_reciprocals(&h.tpot, 1e6),
        ));
        out.push(dist(
            "output_sequence_length",
            "Output Sequence Length",
            "tokens",
            Stats::of(&h.tokens, 1.0),
        ));
    }
    out.push(dist(
        "input_sequence_length",
        "Input Sequence Length",
        "tokens",
        Stats::of_values(&isl),
    ));
    let total_isl: f64 = isl.iter().take(completed as usize).sum();
    if let Some(t) = tokens {
        out.push(one(
            "output_token_throughput",
            "Output Token Throughput",
            "tokens/sec",
            t.total as f64 / secs,
        ));
        if let Some(g) = t.goodput_rps {
            out.push(one("goodput", "Goodput", "requests/sec", g));
        }
    }
    out.push(one(
        "input_token_throughput",
        "Input Token Throughput",
        "tokens/sec",
        total_isl / secs,
    ));
    out.push(one(
        "request_throughput",
        "Request Throughput",
        "requests/sec",
        completed as f64 / secs,
    ));
    out.push(one(
        "completed_request_count",
        "Completed Requests (Success + Error)",
        "requests",
        (completed + r.requests.failed) as f64,
    ));
    let all = (completed + r.requests.failed).max(1) as f64;
    out.push(one(
        "request_error_rate",
        "Request Error Rate",
        "%",
        r.requests.failed as f64 * 100.0 / all,
    ));
    out.push(one(
        "request_count",
        "Request Count",
        "requests",
        completed as f64,
    ));
    out
}

/// A number as the table writes it: two decimals with thousands separators.
fn n2(v: f64) -> String {
    let s = format!("{:.2}", v.abs());
    let (int, frac) = s.split_once('.').unwrap_or((&s, "00"));
    let mut grouped = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    format!("{}{grouped}.{frac}", if v < 0.0 { "-" } else { "" })
}

/// The console table: one row per metric, AIPerf's columns, box-drawn.
pub fn report(r: &RunResult, info: &Info) -> String {
    let header = ["Metric", "avg", "min", "max", "p99", "p90", "p50", "std"];
    let table: Vec<[String; 8]> = rows(r, info)
        .into_iter()
        .filter(|row| row.stats.is_some() || row.value.is_some())
        .map(|row| {
            let name = format!("{} ({})", row.name, row.unit);
            match (&row.stats, row.value) {
                (Some(s), _) => [
                    name,
                    n2(s.avg),
                    n2(s.min),
                    n2(s.max),
                    n2(s.p[8]),
                    n2(s.p[6]),
                    n2(s.p[4]),
                    n2(s.std),
                ],
                (None, v) => {
                    let na = || "N/A".to_string();
                    [
                        name,
                        n2(v.unwrap_or(0.0)),
                        na(),
                        na(),
                        na(),
                        na(),
                        na(),
                        na(),
                    ]
                }
            }
        })
        .collect();
    let mut w = header.map(|h| h.chars().count());
    for row in &table {
        for (i, c) in row.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |l: &str, m: &str, r: &str, f: &str| {
        let parts: Vec<String> = w.iter().map(|n| f.repeat(n + 2)).collect();
        format!("{l}{}{r}\n", parts.join(m))
    };
    let cells = |c: &[String], sep: &str| {
        let parts: Vec<String> = c.iter().zip(w).map(|(c, n)| format!(" {c:>n$} ")).collect();
        format!("{sep}{}{sep}\n", parts.join(sep))
    };
    let mut o = String::new();
    let total: usize = w.iter().map(|n| n + 3).sum::<usize>() + 1;
    let _ = writeln!(o, "{:^total$}", "LLM Metrics");
    o += &line("┏", "┳", "┓", "━");
    o += &cells(&header.map(String::from), "┃");
    o += &line("┡", "╇", "┩", "━");
    for row in &table {
        o += &cells(row, "│");
    }
    o += &line("└", "┴", "┘", "─");
    let _ = writeln!(o, "Benchmark Duration: {:.2} sec", r.duration_s);
    let _ = writeln!(o, "JSON Export: {}", export_path(info, "json"));
    let _ = writeln!(o, "CSV Export: {}", export_path(info, "csv"));
    o
}

/// Where an export goes: the artifact directory, the prefix, the extension.
pub fn export_path(info: &Info, ext: &str) -> String {
    format!(
        "{}/{}.{ext}",
        info.artifact_dir.trim_end_matches('/'),
        info.prefix
    )
}

fn stats_json(unit: &str, s: &Stats) -> serde_json::Value {
    let mut v = serde_json::json!({
        "unit": unit, "avg": s.avg, "min": s.min, "max": s.max, "std": s.std,
        "count": s.count, "sum": s.avg * s.count as f64,
    });
    for (q, x) in PERCENTILES.iter().zip(s.p) {
        v[format!("p{}", *q as u32)] = x.into();
    }
    v
}

/// `ms` since the epoch as AIPerf stamps it: ISO 8601 with microseconds, UTC.
fn iso(ms: u64) -> String {
    format!("{}000", crate::vllm::iso_ms(ms))
}

/// `profile_export_aiperf.json`: AIPerf's keys, a stats block per metric.
pub fn export_json(r: &RunResult, info: &Info) -> serde_json::Value {
    let end = r.started_unix_ms + (r.duration_s * 1000.0) as u64;
    let mut v = serde_json::json!({
        "schema_version": "1.4",
        "generator": format!("stampede {}", env!("CARGO_PKG_VERSION")),
        "benchmark_id": format!("{:012x}", r.started_unix_ms),
    });
    for row in rows(r, info) {
        match (&row.stats, row.value) {
            (Some(s), _) => v[row.key] = stats_json(row.unit, s),
            (None, Some(x)) => v[row.key] = serde_json::json!({"unit": row.unit, "avg": x}),
            _ => {}
        }
    }
    let tokens = r.protocols.stream.as_ref().and_then(|s| s.tokens.as_ref());
    let total_isl: u64 = info.isl.iter().map(|&n| u64::from(n)).sum();
    if let Some(t) = tokens {
        v["total_output_tokens"] = serde_json::json!({"unit": "tokens", "avg": t.total});
        v["total_osl"] = serde_json::json!({"unit": "tokens", "avg": t.total});
        let secs = r.duration_s.max(1e-9);
        v["total_token_throughput"] =
            serde_json::json!({"unit": "tokens/sec", "avg": (t.total + total_isl) as f64 / secs});
    }
    v["total_isl"] = serde_json::json!({"unit": "tokens", "avg": total_isl});
    v["benchmark_duration"] = serde_json::json!({"unit": "sec", "avg": r.duration_s});
    v["input_config"] = serde_json::json!({
        "models": {"items": info.model.split(',').map(|m| serde_json::json!({"name": m})).collect::<Vec<_>>()},
        "endpoint": {"urls": [info.url], "type": info.endpoint_type, "streaming": info.streaming},
        "loadgen": {"concurrency": info.concurrency, "request_rate": info.request_rate, "warmup_request_count": info.warmups},
        "random_seed": info.seed,
    });
    v["was_cancelled"] = r.interrupted.into();
    v["is_complete"] = (!r.interrupted).into();
    v["error_summary"] = (r.errors.iter())
        .map(|(k, n)| serde_json::json!({"error_details": {"type": k, "message": k}, "count": n}))
        .chain(
            (r.statuses.iter())
                .filter(|(s, _)| !(200..300).contains(*s))
                .map(|(s, n)| serde_json::json!({"error_details": {"code": s, "type": "HTTP status"}, "count": n})),
        )
        .collect();
    v["start_time"] = iso(r.started_unix_ms).into();
    v["end_time"] = iso(end).into();
    v
}

/// `profile_export_aiperf.csv`: a row per metric, AIPerf's columns.
pub fn export_csv(r: &RunResult, info: &Info) -> String {
    let mut o = String::from("Metric,avg,min,max,sum,p1,p5,p10,p25,p50,p75,p90,p95,p99,std\n");
    for row in rows(r, info) {
        let name = format!("{} ({})", row.name, row.unit).replace(',', "");
        match (&row.stats, row.value) {
            (Some(s), _) => {
                let _ = write!(
                    o,
                    "{name},{:.2},{:.2},{:.2},{:.2}",
                    s.avg,
                    s.min,
                    s.max,
                    s.avg * s.count as f64
                );
                for x in s.p {
                    let _ = write!(o, ",{x:.2}");
                }
                let _ = writeln!(o, ",{:.2}", s.std);
            }
            (None, Some(x)) => {
                let _ = writeln!(o, "{name},{x:.2},,,,,,,,,,,,,");
            }
            _ => {}
        }
    }
    o
}
