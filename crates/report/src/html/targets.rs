//! The run report's section for runs of several requests (`--targets`, a plan's list,
//! h2load's URIs, a session's script): a row per request with its counts, latency
//! percentiles, statuses and failures.

use std::fmt::Write as _;

use stampede_engine::RunResult;

use super::ms;
use crate::svg::esc;
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
        for (kind, n) in &t.errors {
            let sep = if first { "" } else { ", " };
            let _ = write!(
                o,
                "{sep}<span class=\"bad\">{} × {}</span>",
                esc(kind),
                thousands(*n)
            );
            first = false;
        }
        o.push_str("</td></tr>");
    }
    o.push_str("</table></div><p class=\"muted\">Each request's percentiles have two significant digits; the run's above have three.</p>");
}
