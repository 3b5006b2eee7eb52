//! Artillery 2's reports: the summary printed at the end of `artillery run`
//! (counters, rates and summaries, one a line, named as Artillery names them, their
//! values after a row of dots) and the JSON report of `--output` (`aggregate` and
//! `intermediate`, each with its counters, rates and summaries). The figures come in
//! as [`Metrics`], made from a run by the caller.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use hdrhistogram::Histogram;
use serde_json::{json, Map, Value};

/// A distribution as Artillery summarises it, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub min: f64,
    pub max: f64,
    pub count: u64,
    pub mean: f64,
    pub p50: f64,
    pub p75: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
}

fn tenth(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

impl Summary {
    /// Of a histogram in microseconds; `None` when it holds nothing.
    pub fn of_micros(h: &Histogram<u64>) -> Option<Summary> {
        if h.is_empty() {
            return None;
        }
        let ms = |us: u64| tenth(us as f64 / 1000.0);
        let at = |q: f64| ms(h.value_at_quantile(q));
        Some(Summary {
            min: ms(h.min()),
            max: ms(h.max()),
            count: h.len(),
            mean: tenth(h.mean() / 1000.0),
            p50: at(0.5),
            p75: at(0.75),
            p90: at(0.9),
            p95: at(0.95),
            p99: at(0.99),
            p999: at(0.999),
        })
    }

    fn json(&self) -> Value {
        json!({
            "min": self.min, "max": self.max, "count": self.count, "mean": self.mean,
            "p50": self.p50, "median": self.p50, "p75": self.p75, "p90": self.p90,
            "p95": self.p95, "p99": self.p99, "p999": self.p999,
        })
    }
}

/// One period's (or the whole run's) figures.
#[derive(Debug, Clone, Default)]
pub struct Metrics {
    /// When the period began, ms since the epoch (Artillery's `period`: a multiple of
    /// ten seconds).
    pub period_ms: u64,
    /// The first and last measurements, ms since the epoch.
    pub first_ms: u64,
    pub last_ms: u64,
    pub counters: BTreeMap<String, u64>,
    pub rates: BTreeMap<String, u64>,
    pub summaries: BTreeMap<String, Summary>,
}

/// A number as JavaScript prints it: no `.0` on a whole one.
fn js(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

/// `name: ........ value`, the dots out to Artillery's column.
fn line(o: &mut String, name: &str, value: &str) {
    let head = format!("{name}: ");
    let dots = 80usize.saturating_sub(head.chars().count());
    let _ = writeln!(o, "{head}{} {value}", ".".repeat(dots));
}

/// The metrics block: every counter, rate and summary, by name.
pub fn artillery_metrics(m: &Metrics) -> String {
    enum Row<'a> {
        Count(u64),
        Rate(u64),
        Sum(&'a Summary),
    }
    let mut rows: BTreeMap<&str, Row> = BTreeMap::new();
    for (k, v) in &m.counters {
        rows.insert(k, Row::Count(*v));
    }
    for (k, v) in &m.rates {
        rows.insert(k, Row::Rate(*v));
    }
    for (k, v) in &m.summaries {
        rows.insert(k, Row::Sum(v));
    }
    let mut o = String::new();
    for (name, row) in rows {
        match row {
            Row::Count(n) => line(&mut o, name, &n.to_string()),
            Row::Rate(n) => line(&mut o, name, &format!("{n}/sec")),
            Row::Sum(s) => {
                let _ = writeln!(o, "{name}:");
                for (k, v) in [
                    ("min", s.min),
                    ("max", s.max),
                    ("mean", s.mean),
                    ("median", s.p50),
                    ("p95", s.p95),
                    ("p99", s.p99),
                ] {
                    line(&mut o, &format!("  {k}"), &js(v));
                }
            }
        }
    }
    o
}

/// `HH:MM:SS(+0000)` of a time in ms since the epoch, in UTC.
fn clock(unix_ms: u64) -> String {
    let s = unix_ms / 1000;
    format!(
        "{:02}:{:02}:{:02}(+0000)",
        s / 3600 % 24,
        s / 60 % 60,
        s % 60
    )
}

/// The line a phase's start or completion prints: `Phase started: warm (index: 0,
/// duration: 60s) 12:00:00(+0000)` (a phase without a name is `unnamed`).
pub fn artillery_phase(
    started: bool,
    (name, index): (Option<&str>, usize),
    duration_s: f64,
    at_ms: u64,
) -> String {
    format!(
        "Phase {}: {} (index: {index}, duration: {}s) {}\n",
        if started { "started" } else { "completed" },
        name.unwrap_or("unnamed"),
        js(duration_s),
        clock(at_ms)
    )
}

/// The report of one ten-second period, printed as it ends: its end, its width (from
/// its first measurement to its last), and its metrics.
pub fn artillery_period(m: &Metrics) -> String {
    let rule = "-".repeat(38);
    let width = m.last_ms.saturating_sub(m.first_ms) as f64 / 1000.0;
    format!(
        "{rule}\nMetrics for period to: {} (width: {}s)\n{rule}\n\n{}\n",
        clock(m.period_ms + 10_000),
        js((width * 1000.0).round() / 1000.0),
        artillery_metrics(m)
    )
}

/// The end of `artillery run`: that every user finished, and the summary report.
pub fn artillery_summary(m: &Metrics, total_s: f64, at_ms: u64) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "All VUs finished. Total time: {} seconds\n",
        total_s.round() as u64
    );
    let rule = "-".repeat(32);
    let _ = writeln!(o, "{rule}\nSummary report @ {}\n{rule}\n", clock(at_ms));
    o.push_str(&artillery_metrics(m));
    o
}

fn period_json(m: &Metrics) -> Value {
    let mut summaries = Map::new();
    for (k, s) in &m.summaries {
        summaries.insert(k.clone(), s.json());
    }
    let rates: Map<String, Value> = (m.rates.iter())
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
    let counters: Map<String, Value> = (m.counters.iter())
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
    json!({
        "period": m.period_ms,
        "counters": counters,
        "rates": rates,
        "firstCounterAt": m.first_ms,
        "firstHistogramAt": m.first_ms,
        "lastCounterAt": m.last_ms,
        "lastHistogramAt": m.last_ms,
        "firstMetricAt": m.first_ms,
        "lastMetricAt": m.last_ms,
        "summaries": summaries.clone(),
        "histograms": summaries,
    })
}

/// The JSON report of `--output`: the whole run, and its periods.
pub fn artillery_json(aggregate: &Metrics, intermediate: &[Metrics]) -> Value {
    json!({
        "aggregate": period_json(aggregate),
        "intermediate": intermediate.iter().map(period_json).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_dotted_to_artillerys_column_and_sorted_by_name() {
        let mut h = Histogram::<u64>::new(3).unwrap();
        for us in [400, 1_000, 2_000, 12_600] {
            h.record(us).unwrap();
        }
        let m = Metrics {
            counters: [("http.requests".into(), 84), ("http.codes.200".into(), 76)].into(),
            rates: [("http.request_rate".into(), 18)].into(),
            summaries: [("http.response_time".into(), Summary::of_micros(&h).unwrap())].into(),
            ..Default::default()
        };
        let text = artillery_summary(&m, 6.6, 1_795_992_471_000);
        let want = "\
All VUs finished. Total time: 7 seconds

--------------------------------
Summary report @ 22:47:51(+0000)
--------------------------------

http.codes.200: ................................................................ 76
http.request_rate: ............................................................. 18/sec
http.requests: ................................................................. 84
http.response_time:
  min: ......................................................................... 0.4
  max: ......................................................................... 12.6
  mean: ........................................................................ 4
  median: ...................................................................... 1
  p95: ......................................................................... 12.6
  p99: ......................................................................... 12.6
";
        assert_eq!(text, want);
        let j = artillery_json(&m, &[]);
        assert_eq!(j["aggregate"]["counters"]["http.requests"], 84);
        assert_eq!(
            j["aggregate"]["summaries"]["http.response_time"]["median"],
            1.0
        );
        assert_eq!(j["aggregate"]["rates"]["http.request_rate"], 18);
        assert_eq!(j["intermediate"], json!([]));
    }
}
