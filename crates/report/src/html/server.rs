//! The run report's section for runs that scraped the server's metrics
//! (`--server-metrics`): the scrapes' account, the server's queue and batch, its
//! cache, and its counters as rates, second by second under the client's figures,
//! and a table of every series kept.

use std::fmt::Write as _;

use stampede_engine::result::ServerMetrics;
use stampede_engine::RunResult;

use super::{card, esc, figure};
use crate::svg::{line_chart, LineChart, Scale, Series};
use crate::units::thousands;

/// Most charts of series asked for by name, beyond the known groups.
const MAX_OTHER_CHARTS: usize = 8;

/// A gauge's points: its samples as they are.
fn points(samples: &[[f64; 2]]) -> Vec<(f64, f64)> {
    samples.iter().map(|p| (p[0], p[1])).collect()
}

/// A counter's points: its rate per second between successive samples (a reset,
/// where it falls, counts from zero).
fn rates(samples: &[[f64; 2]]) -> Vec<(f64, f64)> {
    samples
        .windows(2)
        .filter(|w| w[1][0] > w[0][0])
        .map(|w| {
            let grew = if w[1][1] >= w[0][1] {
                w[1][1] - w[0][1]
            } else {
                w[1][1]
            };
            (w[1][0], grew / (w[1][0] - w[0][0]))
        })
        .collect()
}

fn chart(o: &mut String, title: &str, y_label: &str, series: Vec<Series>) {
    if series.iter().all(|s| s.points.is_empty()) {
        return;
    }
    figure(
        o,
        title,
        &line_chart(&LineChart {
            title,
            x_label: "second",
            y_label,
            x_scale: Scale::Linear,
            y_scale: Scale::Linear,
            series,
        }),
    );
}

/// Appends the section, when `r` scraped the server.
pub(crate) fn server_section(o: &mut String, r: &RunResult) {
    let Some(m) = &r.server else {
        return;
    };
    let _ = write!(
        o,
        "<h2>The server's metrics</h2><p class=\"muted\">{}</p><div class=\"cards\">",
        esc(&m.url)
    );
    card(o, "scrapes", &thousands(m.scrapes));
    let failed: u64 = m.failed.values().sum();
    if failed > 0 {
        let why: Vec<String> = m.failed.iter().map(|(k, n)| format!("{n} {k}")).collect();
        card(
            o,
            "scrapes failed",
            &format!("{failed} ({})", why.join(", ")),
        );
    }
    if let Some(q) = m.queue_growth() {
        card(
            o,
            "queue in front of the server",
            &format!("{} → peak {}", q.from, q.peak),
        );
    }
    o.push_str("</div><div class=\"grid2\">");
    let pick = |f: &dyn Fn(&str) -> bool, rate: bool| -> Vec<Series> {
        (m.series.iter())
            .filter(|(n, _)| f(n))
            .map(|(n, s)| Series {
                name: n.clone(),
                points: if rate { rates(s) } else { points(s) },
            })
            .collect()
    };
    let queue = |n: &str| {
        ["running", "waiting", "queue", "batch_current_size"]
            .iter()
            .any(|k| n.contains(k))
            && !ServerMetrics::is_counter(n)
    };
    let cache = |n: &str| {
        (n.contains("cache_usage") || n.contains("token_usage") || n.contains("cache_hit_rate"))
            && !ServerMetrics::is_counter(n)
    };
    let tokens = |n: &str| n.ends_with("tokens_total");
    chart(
        o,
        "Requests running and waiting on the server",
        "requests",
        pick(&queue, false),
    );
    chart(o, "The server's KV cache", "share", pick(&cache, false));
    chart(
        o,
        "Tokens the server processed",
        "tokens per second",
        pick(&tokens, true),
    );
    let other: Vec<&String> = (m.series.keys())
        .filter(|n| {
            !queue(n) && !cache(n) && !tokens(n) && !n.ends_with("_sum") && !n.ends_with("_count")
        })
        .take(MAX_OTHER_CHARTS)
        .collect();
    for n in other {
        let s = &m.series[n];
        let rate = ServerMetrics::is_counter(n);
        let what = if rate { "per second" } else { "value" };
        chart(
            o,
            n,
            what,
            vec![Series {
                name: n.clone(),
                points: if rate { rates(s) } else { points(s) },
            }],
        );
    }
    o.push_str("</div><div class=\"scroll\"><table><tr><th>series</th><th>first</th><th>peak</th><th>last</th><th>change</th></tr>");
    for n in m.series.keys() {
        let Some(s) = m.span(n) else { continue };
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(n),
            s.first,
            s.max,
            s.last,
            s.last - s.first
        );
    }
    o.push_str("</table></div>");
}
