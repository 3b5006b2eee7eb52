//! A capacity search in the terminal and in HTML: the answer, then the
//! latency-against-offered-rate curve, one step per line in rate order.

use std::fmt::Write as _;

use stampede_engine::capacity::Capacity;

use crate::units::{human_us, thousands};

fn rate(r: f64) -> String {
    thousands(r.round() as u64)
}

/// A step's figures as the tables show them: offered, achieved, p50, p99, p99.9,
/// failed, limit.
fn cells(s: &stampede_engine::capacity::RateStep) -> [String; 7] {
    [
        rate(s.rate),
        rate(s.achieved_rps),
        human_us(s.p50_us as f64),
        human_us(s.p99_us as f64),
        human_us(s.p999_us as f64),
        thousands(s.failed),
        s.limit.map_or("—", |v| v.name()).to_string(),
    ]
}

/// The answer in one line: `4,870 req/s meets p99 < 10ms (…)`.
pub fn capacity_line(c: &Capacity) -> String {
    let conds = if c.conditions.is_empty() {
        "no condition but a held rate".to_string()
    } else {
        c.conditions.join(", ")
    };
    match c.max_rate {
        Some(m) => format!(
            "{} {} is the highest rate that meets {conds}; {}",
            rate(m),
            c.per.unit(),
            c.ended
        ),
        None => format!("no rate met {conds}; {}", c.ended),
    }
}

/// The terminal report: the answer, a table of steps by rate with a bar for each
/// step's p99 (log scale, so the knee shows), and each failure's reason.
pub fn capacity_report(c: &Capacity) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "Capacity: {}", capacity_line(c));
    let _ = writeln!(
        o,
        "  {:>10} {:>10} {:>9} {:>9} {:>9} {:>8}  {:<13} p99 (log)",
        "offered/s", "achieved/s", "p50", "p99", "p99.9", "failed", "limit"
    );
    let curve = c.curve();
    let (lo, hi) = curve.iter().fold((f64::MAX, 0.0f64), |(lo, hi), s| {
        let v = (s.p99_us.max(1) as f64).log10();
        (lo.min(v), hi.max(v))
    });
    for s in &curve {
        let v = (s.p99_us.max(1) as f64).log10();
        let width = if hi > lo {
            1 + ((v - lo) / (hi - lo) * 29.0).round() as usize
        } else {
            1
        };
        let [offered, achieved, p50, p99, p999, failed, limit] = cells(s);
        let _ = writeln!(
            o,
            "  {offered:>10} {achieved:>10} {p50:>9} {p99:>9} {p999:>9} {failed:>8}  {limit:<13} {} {}",
            "█".repeat(width),
            if s.passed { "pass" } else { "FAIL" }
        );
    }
    for (i, s) in c.steps.iter().enumerate().filter(|(_, s)| !s.passed) {
        let _ = writeln!(
            o,
            "  step {} at {} {} failed: {}",
            i + 1,
            rate(s.rate),
            c.per.unit(),
            s.why.as_deref().unwrap_or("")
        );
    }
    o
}

/// The HTML section: the answer, the curve as a chart and the steps as a table.
pub fn capacity_html(o: &mut String, c: &Capacity) {
    use crate::svg::{line_chart, LineChart, Scale, Series};
    let esc = crate::svg::esc;
    let _ = write!(o, "<h2>Capacity</h2><p>{}</p>", esc(&capacity_line(c)));
    let curve = c.curve();
    let series = |name: &str, f: &dyn Fn(&stampede_engine::capacity::RateStep) -> u64| Series {
        name: name.into(),
        points: curve
            .iter()
            .map(|s| (s.rate, f(s).max(1) as f64 / 1000.0))
            .collect(),
    };
    let chart = line_chart(&LineChart {
        title: "latency against offered rate",
        x_label: &format!("offered {}", c.per.unit()),
        y_label: "ms (log)",
        x_scale: Scale::Linear,
        y_scale: Scale::Log,
        series: vec![
            series("p50", &|s| s.p50_us),
            series("p99", &|s| s.p99_us),
            series("p99.9", &|s| s.p999_us),
        ],
    });
    let _ = write!(
        o,
        "<figure><figcaption>Latency against offered rate</figcaption>{chart}</figure>"
    );
    o.push_str("<div class=\"scroll\"><table><tr><th>step</th><th>offered/s</th><th>achieved/s</th><th>p50</th><th>p99</th><th>p99.9</th><th>failed</th><th>limit</th><th>outcome</th></tr>");
    for (i, s) in c.steps.iter().enumerate() {
        let outcome = if s.passed {
            "<span class=\"good\">pass</span>".to_string()
        } else {
            format!(
                "<span class=\"bad\">fail</span>: {}",
                esc(s.why.as_deref().unwrap_or(""))
            )
        };
        let _ = write!(o, "<tr><td>{}</td>", i + 1);
        for cell in cells(s) {
            let _ = write!(o, "<td>{}</td>", esc(&cell));
        }
        let _ = write!(o, "<td>{outcome}</td></tr>");
    }
    o.push_str("</table></div>");
}
