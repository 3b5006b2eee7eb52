//! stampede's own compact summary: throughput, latency percentiles, statuses, errors
//! by kind and bytes, in a handful of aligned lines.

use std::fmt::Write as _;

use stampede_engine::RunResult;

use crate::units::{human_bytes, human_us, thousands};

/// The summary printed by `stampede load`.
pub fn summary(r: &RunResult) -> String {
    let mut o = String::new();
    let s = &r.settings;
    let bound = match (s.requests, s.duration_s) {
        (Some(n), _) => format!("{} requests", thousands(n)),
        (None, Some(d)) => format!("{d:.0}s"),
        _ => String::new(),
    };
    let _ = writeln!(
        o,
        "{} {} — {} connections, {} threads, {}{}, {}",
        s.method,
        s.url,
        s.connections,
        s.threads,
        if s.keepalive {
            "keep-alive"
        } else {
            "new connection per request"
        },
        if s.pipeline > 1 {
            format!(", pipeline {}", s.pipeline)
        } else {
            String::new()
        },
        bound
    );
    let q = &r.requests;
    let _ = writeln!(
        o,
        "  requests    {} completed in {:.2}s = {:.0} req/s; {} failed; {} abandoned at the end",
        thousands(q.completed),
        r.duration_s,
        r.throughput_rps,
        thousands(q.failed),
        thousands(q.abandoned)
    );
    let l = &r.latency;
    let p = |x: f64| human_us(l.at(x).unwrap_or(0) as f64);
    let _ = writeln!(
        o,
        "  latency     p50 {}  p90 {}  p99 {}  p99.9 {}  max {}  (mean {} ± {})",
        p(50.0),
        p(90.0),
        p(99.0),
        p(99.9),
        human_us(l.max_us as f64),
        human_us(l.mean_us),
        human_us(l.stdev_us)
    );
    let statuses: Vec<String> = r
        .statuses
        .iter()
        .map(|(c, n)| format!("{c} × {}", thousands(*n)))
        .collect();
    let _ = writeln!(
        o,
        "  statuses    {}",
        if statuses.is_empty() {
            "none".to_string()
        } else {
            statuses.join(", ")
        }
    );
    let errors: Vec<String> = r
        .errors
        .iter()
        .map(|(k, n)| format!("{k} × {}", thousands(*n)))
        .collect();
    let _ = writeln!(
        o,
        "  errors      {}",
        if errors.is_empty() {
            "none".to_string()
        } else {
            errors.join(", ")
        }
    );
    if q.length_mismatch > 0 {
        let _ = writeln!(
            o,
            "  length      {} responses differ in body length from the first",
            thousands(q.length_mismatch)
        );
    }
    let t = r.duration_s.max(f64::MIN_POSITIVE);
    let _ = writeln!(
        o,
        "  bytes       {} read ({}/s), {} written; {} connections opened",
        human_bytes(r.bytes.read as f64),
        human_bytes(r.bytes.read as f64 / t),
        human_bytes(r.bytes.written as f64),
        thousands(r.connections_opened)
    );
    o
}
