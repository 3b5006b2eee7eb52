//! The run report's section for runs of several requests (`--targets`, a plan's list,
//! h2load's URIs, a session's script, a journey's steps): a row per request with its
//! counts, latency percentiles, statuses and failures (a journey step's failed checks
//! and missed captures among them), and a chart of each request's percentiles.

use std::fmt::Write as _;

use stampede_engine::RunResult;

use super::{figure, ms, spectrum};
use crate::svg::esc;
use crate::svg::{line_chart, LineChart, Scale, Series};
use crate::units::thousands;

/// Appends the section, when the run had several requests.
pub(crate) fn targets_section(o: &mut String, r: &RunResult) {
    if r.targets.is_empty() {
        return;
    }
    o.push_str("<h2>By request</h2><div class=\"scroll\"><table><tr><th>request</th><th>completed</th><th>failed</th><th>p50</th><th>p90</th><th>p99</th><th>max</th><th>statuses and failures</th></tr>");
    for t in &r.targets {
        let l = &t.latency;
        let p = |q: f64| ms(l.at(q).unwrap_or(0) as f64);
        let failed = if t.failed > 0 { " class=\"bad\"" } else { "" };
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td{failed}>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>",
            esc(&t.name),
            thousands(t.completed),
            thousands(t.failed),
            p(50.0),
            p(90.0),
            p(99.0),
            ms(l.max_us as f64)
        );
        let mut first = true;
        for (code, n) in &t.statuses {
            let cls = if (200..400).contains(code) {
                ""
            } else {
                " class=\"bad\""
            };
            let sep = if first { "" } else { ", " };
            let _ = write!(o, "{sep}<span{cls}>{code} × {}</span>", thousands(*n));
            first = false;
        }
        let failures = (t.errors.iter().map(|(k, n)| (k.clone(), *n)))
            .chain((t.checks_failed.iter()).map(|(k, n)| (format!("check {k}"), *n)))
            .chain((t.captures_missed.iter()).map(|(k, n)| (format!("capture {k}"), *n)));
        for (kind, n) in failures {
            let sep = if first { "" } else { ", " };
            let _ = write!(
                o,
                "{sep}<span class=\"bad\">{} × {}</span>",
                esc(&kind),
                thousands(n)
            );
            first = false;
        }
        o.push_str("</td></tr>");
    }
    o.push_str("</table></div><p class=\"muted\">Each request's percentiles have two significant digits; the run's above have three.</p>");
    // One line a request, while the chart can tell them apart.
    if (2..=MAX_LINES).contains(&r.targets.len()) {
        let series: Vec<Series> = (r.targets.iter())
            .filter_map(|t| {
                let h = stampede_engine::Hist::from_base64(&t.histogram).ok()?;
                Some(Series {
                    name: t.name.clone(),
                    points: spectrum(&h),
                })
            })
            .filter(|s| !s.points.is_empty())
            .collect();
        if series.len() >= 2 {
            figure(
                o,
                "Latency by request",
                &line_chart(&LineChart {
                    title: "latency by percentile, each request",
                    x_label: "percentile",
                    y_label: "ms (log)",
                    x_scale: Scale::Percentile,
                    y_scale: Scale::Log,
                    series,
                }),
            );
        }
    }
}

/// The most requests drawn in one chart.
const MAX_LINES: usize = 12;
