//! The server's own metrics in a text report (`--server-metrics`): what the scrapes
//! came to, each series kept — a counter by its change over the run, a gauge by its
//! first, highest and last values — so that the client's figures and the server's
//! queue, batch and cache are read side by side.

use std::fmt::Write as _;

use stampede_engine::result::ServerMetrics;

/// A value as the report writes it: whole numbers without decimals.
fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        let sign = if v < 0.0 { "-" } else { "" };
        format!("{sign}{}", crate::units::thousands(v.abs() as u64))
    } else {
        format!("{v:.3}")
    }
}

/// The report's lines, each after `indent`.
pub fn lines(m: &ServerMetrics, indent: &str) -> String {
    let mut o = String::new();
    let failed: u64 = m.failed.values().sum();
    let _ = write!(
        o,
        "{indent}{}: {} scrapes",
        m.url,
        crate::units::thousands(m.scrapes)
    );
    if failed > 0 {
        let why: Vec<String> = m.failed.iter().map(|(k, n)| format!("{n} {k}")).collect();
        let _ = write!(o, ", {failed} failed ({})", why.join(", "));
    }
    let _ = writeln!(o);
    if m.series.is_empty() {
        let _ = writeln!(
            o,
            "{indent}  no series of a known serving engine (--server-metric NAME keeps one)"
        );
    }
    for name in m.series.keys() {
        let Some(s) = m.span(name) else { continue };
        if ServerMetrics::is_counter(name) {
            let _ = writeln!(o, "{indent}  {name:<42} +{}", num(s.last - s.first));
        } else {
            let _ = writeln!(
                o,
                "{indent}  {name:<42} {} → peak {} → {}",
                num(s.first),
                num(s.max),
                num(s.last)
            );
        }
    }
    if m.dropped > 0 {
        let _ = writeln!(
            o,
            "{indent}  {} samples past the bounds left out",
            m.dropped
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_by_their_change_gauges_by_their_span() {
        let mut m = ServerMetrics {
            url: "http://h/metrics".into(),
            scrapes: 3,
            ..Default::default()
        };
        m.failed.insert("timeout".into(), 1);
        m.series.insert(
            "vllm:num_requests_waiting".into(),
            vec![[0.0, 0.0], [1.0, 37.0], [2.0, 5.0]],
        );
        m.series.insert(
            "vllm:prompt_tokens_total".into(),
            vec![[0.0, 100.0], [2.0, 102_500.0]],
        );
        m.series
            .insert("vllm:kv_cache_usage_perc".into(), vec![[0.0, 0.25]]);
        let t = lines(&m, "  ");
        assert!(
            t.starts_with("  http://h/metrics: 3 scrapes, 1 failed (1 timeout)\n"),
            "{t}"
        );
        assert!(
            t.contains("vllm:num_requests_waiting                  0 → peak 37 → 5"),
            "{t}"
        );
        assert!(
            t.contains("vllm:prompt_tokens_total                   +102,400"),
            "{t}"
        );
        assert!(t.contains("0.250 → peak 0.250 → 0.250"), "{t}");
    }
}
