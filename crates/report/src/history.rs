//! `stampede history` in the terminal and as an HTML page: each scenario × target's
//! figure bench by bench, with its interval, machine, version and commit, and the
//! changes found, each naming the benches on either side.

use std::fmt::Write as _;

use stampede_lab::history::Series;
use stampede_lab::summary::Metric;

use crate::svg::{esc, line_chart, LineChart, Scale, Series as Line};
use crate::units::thousands;

fn date(ms: u64) -> String {
    let (y, m, d) = stampede_wire::date::civil_from_days((ms / 86_400_000) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

fn figure(v: f64, metric: Metric) -> String {
    match metric {
        Metric::Rps => thousands(v.round() as u64),
        Metric::P99Ms => format!("{v:.2} ms"),
        // Requests or journeys a second, as the search counted.
        Metric::MaxRate => format!("max {}/s", thousands(v.round() as u64)),
    }
}

fn what(metric: Metric) -> &'static str {
    match metric {
        Metric::Rps => "req/s, higher is better",
        Metric::P99Ms => "p99, lower is better",
        Metric::MaxRate => "highest rate meeting the search's conditions, higher is better",
    }
}

/// A point's columns: bench, date, figure, interval, runs, stampede, commit.
fn cells(p: &stampede_lab::history::Point, metric: Metric) -> [String; 7] {
    [
        p.bench_id.to_string(),
        date(p.started_unix_ms),
        figure(p.figure, metric),
        format!(
            "{} – {}",
            figure(p.ci95.0, metric),
            figure(p.ci95.1, metric)
        ),
        p.runs.to_string(),
        p.stampede.clone(),
        p.commit
            .as_deref()
            .map_or("—".to_string(), |c| c.chars().take(10).collect()),
    ]
}

/// The change in words: `+12.3 % between bench 4 and bench 5 (stampede compare 4 5)`.
pub fn change_line(c: &stampede_lab::history::Change, metric: Metric) -> String {
    format!(
        "{:+.1} % ({} → {}) between bench {} and bench {}: stampede compare {} {}",
        c.relative() * 100.0,
        figure(c.before_mean, metric),
        figure(c.after_mean, metric),
        c.before_bench,
        c.after_bench,
        c.before_bench,
        c.after_bench
    )
}

/// The terminal listing.
pub fn history_text(all: &[Series]) -> String {
    let mut o = String::new();
    if all.is_empty() {
        o.push_str("no complete bench in the store measured anything yet\n");
    }
    for s in all {
        let _ = writeln!(o, "{} / {} ({})", s.scenario, s.target, what(s.metric));
        let _ = writeln!(
            o,
            "  {:>5}  {:<10}  {:>12}  {:>23}  {:>4}  {:<8}  {:<10}  machine",
            "bench", "date", "figure", "95 % interval", "runs", "stampede", "commit"
        );
        for p in &s.points {
            let [bench, date, fig, interval, runs, version, commit] = cells(p, s.metric);
            let _ = writeln!(
                o,
                "  {bench:>5}  {date:<10}  {fig:>12}  {interval:>23}  {runs:>4}  {version:<8}  {commit:<10}  {}{}",
                p.machine,
                if p.client_bound {
                    "  [client-bound]"
                } else {
                    ""
                }
            );
            if let Some(c) = s.changes.iter().find(|c| c.before_bench == p.bench_id) {
                let _ = writeln!(o, "  ── change {}", change_line(c, s.metric));
            }
        }
        o.push('\n');
    }
    o
}

/// The HTML page: per series, a chart of the figure with its interval's ends and the
/// segment means between changes, then the table.
pub fn history_html(all: &[Series], title: &str) -> String {
    let mut o = String::new();
    let _ = write!(
        o,
        "<h1>{}</h1><p class=\"muted\">Each scenario × target over the complete benches in the store. Changes: PELT on the bench means (a BIC-style penalty, segments of two benches or more), kept when Welch's test separates the segments at 1 %.</p>",
        esc(title)
    );
    if all.is_empty() {
        o.push_str("<p>No complete bench in the store measured anything yet.</p>");
    }
    for s in all {
        let _ = write!(
            o,
            "<h2>{} / {}</h2><p class=\"muted\">{}</p>",
            esc(&s.scenario),
            esc(&s.target),
            what(s.metric)
        );
        for c in &s.changes {
            let _ = write!(
                o,
                "<div class=\"warn\">Change {}</div>",
                esc(&change_line(c, s.metric))
            );
        }
        let x = |i: usize| s.points[i].bench_id as f64;
        let mut seg = Vec::new();
        let mut at = 0;
        for c in &s.changes {
            while at < s.points.len() && s.points[at].bench_id <= c.before_bench {
                seg.push((x(at), c.before_mean));
                at += 1;
            }
        }
        let last_mean = s.changes.last().map(|c| c.after_mean);
        while at < s.points.len() {
            let mean = last_mean.unwrap_or_else(|| {
                s.points.iter().map(|p| p.figure).sum::<f64>() / s.points.len() as f64
            });
            seg.push((x(at), mean));
            at += 1;
        }
        let chart = line_chart(&LineChart {
            title: "figure by bench",
            x_label: "bench",
            y_label: match s.metric {
                Metric::Rps => "req/s",
                Metric::P99Ms => "p99 ms",
                Metric::MaxRate => "max rate /s",
            },
            x_scale: Scale::Linear,
            y_scale: Scale::Linear,
            series: vec![
                Line {
                    name: "bench mean".into(),
                    points: (0..s.points.len())
                        .map(|i| (x(i), s.points[i].figure))
                        .collect(),
                },
                Line {
                    name: "95 % low".into(),
                    points: (0..s.points.len())
                        .map(|i| (x(i), s.points[i].ci95.0))
                        .collect(),
                },
                Line {
                    name: "95 % high".into(),
                    points: (0..s.points.len())
                        .map(|i| (x(i), s.points[i].ci95.1))
                        .collect(),
                },
                Line {
                    name: "segment mean".into(),
                    points: seg,
                },
            ],
        });
        let _ = write!(o, "<figure>{chart}</figure>");
        o.push_str("<div class=\"scroll\"><table><tr><th>bench</th><th>date</th><th>figure</th><th>95 % interval</th><th>runs</th><th>stampede</th><th>commit</th><th>machine</th></tr>");
        for p in &s.points {
            o.push_str("<tr>");
            for c in cells(p, s.metric) {
                let _ = write!(o, "<td>{}</td>", esc(&c));
            }
            let _ = write!(
                o,
                "<td>{}{}</td></tr>",
                esc(&p.machine),
                if p.client_bound {
                    " <span class=\"bad\">client-bound</span>"
                } else {
                    ""
                }
            );
        }
        o.push_str("</table></div>");
    }
    crate::html::document(title, &o, "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_civil() {
        assert_eq!(date(0), "1970-01-01");
        assert_eq!(date(1_795_392_000_000), "2026-11-23");
        assert_eq!(date(951_782_400_000), "2000-02-29");
    }
}
