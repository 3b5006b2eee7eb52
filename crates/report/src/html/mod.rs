//! Self-contained HTML reports: one file, no script, no network, readable on a phone
//! and a wide screen, in light and dark schemes.
//!
//! A run report shows the summary (throughput, latency corrected and uncorrected,
//! errors by kind, statuses, bytes, the open-model schedule, the environment) and its
//! charts: requests and failures per second, latency percentiles per second, the
//! response-time distribution, Gatling's ranges and the HdrHistogram percentile
//! spectrum; a run that timed streams adds its stream figures (see `stream`). A bench report shows the comparison table with verdicts, req/s (or p99
//! for open load) per target and scenario with error bars, the targets' latency spectra
//! overlaid, their CPU and memory, the verifications and the environment. Charts are
//! inline SVG drawn here (see [`crate::svg`]).

use std::fmt::Write as _;

use stampede_engine::{value_at_percentile, Hist, Interval, RunResult};
use stampede_lab::record::RunRecord;

use crate::svg::{bar_chart, esc, line_chart, short, BarGroup, LineChart, Scale, Series};
use crate::units::thousands;

mod bench;
mod server;
mod stream;
mod targets;
pub use bench::bench_html;

const STYLE: &str = r#"
:root{--bg:#fff;--fg:#1d232a;--muted:#5d6b78;--line:#d7dde3;--card:#f5f7f9;--bad:#b3261e;--good:#1b7f3b;
--c0:#2f6fde;--c1:#e0671b;--c2:#17945f;--c3:#a23fc6;--c4:#c43b57;--c5:#0f8fa3;--c6:#8a6d00;--c7:#5a5a5a}
@media (prefers-color-scheme:dark){:root{--bg:#14181c;--fg:#e3e8ed;--muted:#9aa7b3;--line:#2f3840;--card:#1d2329;
--bad:#ff8a80;--good:#7bd88f;--c0:#79a8ff;--c1:#ffa463;--c2:#5fd4a0;--c3:#d69bff;--c4:#ff8fa6;--c5:#59d2e6;--c6:#e5c74a;--c7:#b5b5b5}}
*{box-sizing:border-box}body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif}
main{max-width:1100px;margin:0 auto;padding:16px}h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.15em;margin:1.6em 0 .5em;border-bottom:1px solid var(--line);padding-bottom:.2em}
.muted{color:var(--muted)}.bad{color:var(--bad);font-weight:600}.good{color:var(--good);font-weight:600}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:10px}
.card{background:var(--card);border-radius:8px;padding:10px 12px}.card b{display:block;font-size:1.35em}
.scroll{overflow-x:auto}table{border-collapse:collapse;margin:.4em 0;font-variant-numeric:tabular-nums}
th,td{border-bottom:1px solid var(--line);padding:4px 10px;text-align:right;white-space:nowrap}th:first-child,td:first-child{text-align:left}
.grid2{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,480px),1fr));gap:14px}
figure{margin:0;background:var(--card);border-radius:8px;padding:8px}figcaption{font-weight:600;margin:2px 6px 4px}
svg.chart{width:100%;height:auto;display:block}.chart .grid{stroke:var(--line);stroke-width:1}.chart .axis{stroke:var(--muted);stroke-width:1}
.chart text{fill:var(--muted);font-size:11px}.chart .label{font-size:12px}.chart .line{fill:none;stroke-width:2}
.chart .err{stroke:var(--fg);stroke-width:1.2;fill:none}
.s0.line{stroke:var(--c0)}.s1.line{stroke:var(--c1)}.s2.line{stroke:var(--c2)}.s3.line{stroke:var(--c3)}
.s4.line{stroke:var(--c4)}.s5.line{stroke:var(--c5)}.s6.line{stroke:var(--c6)}.s7.line{stroke:var(--c7)}
.s0.fill{fill:var(--c0)}.s1.fill{fill:var(--c1)}.s2.fill{fill:var(--c2)}.s3.fill{fill:var(--c3)}
.s4.fill{fill:var(--c4)}.s5.fill{fill:var(--c5)}.s6.fill{fill:var(--c6)}.s7.fill{fill:var(--c7)}
.wrap td{white-space:normal}.cmp{width:100%}.cmp td{min-width:8em}.wrap td code{word-break:break-all}
.warn{background:var(--card);border-left:4px solid var(--bad);padding:8px 12px;margin:8px 0;border-radius:4px}
.note{background:var(--card);border-left:4px solid var(--muted);padding:8px 12px;margin:8px 0;border-radius:4px}
pre{background:var(--card);padding:10px;border-radius:8px;overflow-x:auto;font-size:13px}
"#;

fn page(title: &str, body: &str) -> String {
    document(title, body, "")
}

/// A whole page: the shared style, `body` in `<main>`, and an optional inline script.
pub(crate) fn document(title: &str, body: &str, script: &str) -> String {
    let script = if script.is_empty() {
        String::new()
    } else {
        format!("<script>{script}</script>")
    };
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><meta name=\"color-scheme\" content=\"light dark\"><title>{}</title><style>{STYLE}</style></head><body><main>\n{body}\n<p class=\"muted\">Written by stampede {}.</p></main>{script}</body></html>\n",
        esc(title),
        env!("CARGO_PKG_VERSION")
    )
}

pub(crate) fn ms(us: f64) -> String {
    if us >= 100_000.0 {
        format!("{:.0} ms", us / 1000.0)
    } else if us >= 1000.0 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{:.3} ms", us / 1000.0)
    }
}

pub(crate) fn card(o: &mut String, label: &str, value: &str) {
    let _ = write!(
        o,
        "<div class=\"card\"><span class=\"muted\">{}</span><b>{}</b></div>",
        esc(label),
        esc(value)
    );
}

pub(crate) fn figure(o: &mut String, caption: &str, svg: &str) {
    let _ = write!(
        o,
        "<figure><figcaption>{}</figcaption>{svg}</figure>",
        esc(caption)
    );
}

/// Points of a percentile spectrum in ms, for the percentile axis (up to 99.999 %).
pub(crate) fn spectrum(h: &Hist) -> Vec<(f64, f64)> {
    let h = &h.0;
    if h.is_empty() {
        return Vec::new();
    }
    let mut pts = Vec::new();
    for v in h.iter_quantiles(5) {
        let q = v.quantile_iterated_to() * 100.0;
        if q >= 99.999 {
            break;
        }
        pts.push((
            q,
            h.highest_equivalent(v.value_iterated_to()) as f64 / 1000.0,
        ));
    }
    pts.push((99.999, value_at_percentile(h, 99.999) as f64 / 1000.0));
    pts
}

/// The environment as a table a reader can scan: memory in GiB, CPU lists as lists,
/// kernel settings one per line, and the targets as a table of their own.
fn env_table(o: &mut String, env: &serde_json::Value) {
    use serde_json::Value;
    let serde_json::Value::Object(m) = env else {
        return;
    };
    fn scalar(v: &Value) -> String {
        match v {
            Value::String(s) => s.clone(),
            Value::Null => "—".into(),
            Value::Array(a) if a.is_empty() => "none".into(),
            Value::Array(a) => a.iter().map(scalar).collect::<Vec<_>>().join(", "),
            Value::Object(o) => o
                .iter()
                .map(|(k, v)| format!("{k} = {}", scalar(v)))
                .collect::<Vec<_>>()
                .join("; "),
            other => other.to_string(),
        }
    }
    o.push_str("<div class=\"scroll\"><table class=\"wrap\">");
    for (k, v) in m {
        let shown = match (k.as_str(), v) {
            ("memory_kb", Value::Number(n)) => esc(&crate::units::human_bytes(
                n.as_f64().unwrap_or(0.0) * 1024.0,
            )),
            ("client_cpus", Value::Array(a)) if a.is_empty() => "not pinned".into(),
            ("settings", Value::Object(set)) => set
                .iter()
                .map(|(k, v)| format!("<code>{}</code> {}", esc(k), esc(&scalar(v))))
                .collect::<Vec<_>>()
                .join("<br>"),
            ("targets", Value::Object(ts)) if ts.is_empty() => "none".into(),
            ("targets", Value::Object(ts)) => {
                let mut t = String::from(
                    "<table><tr><th>target</th><th>command</th><th>version</th><th>cpus</th></tr>",
                );
                for (name, te) in ts {
                    let f = |key: &str| scalar(te.get(key).unwrap_or(&Value::Null));
                    let cpus = match te.get("cpus") {
                        Some(Value::Array(a)) if a.is_empty() => "not pinned".into(),
                        _ => f("cpus"),
                    };
                    let _ = write!(
                        t,
                        "<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
                        esc(name),
                        esc(&f("command")),
                        esc(&f("version")),
                        esc(&cpus)
                    );
                }
                t + "</table>"
            }
            (_, v) => esc(&scalar(v)),
        };
        let name = match k.as_str() {
            "memory_kb" => "memory",
            "client_cpus" => "client CPUs",
            "git_commit" => "git commit",
            other => other,
        };
        let _ = write!(
            o,
            "<tr><td>{}</td><td style=\"text-align:left\">{shown}</td></tr>",
            esc(name)
        );
    }
    o.push_str("</table></div>");
}

/// Which side was the limit: the verdict, its reason, and each figure behind it.
fn limit_section(o: &mut String, l: &stampede_engine::limit::Limit) {
    use stampede_engine::limit::Verdict;
    let cls = match l.verdict {
        Verdict::ClientBound | Verdict::NetworkBound => "bad",
        Verdict::ServerBound => "good",
        Verdict::Undetermined => "muted",
    };
    let _ = write!(
        o,
        "<h2>Limit</h2><p><span class=\"{cls}\">{}</span>: {}.</p><div class=\"scroll\"><table><tr><th>client thread</th><th>on a CPU</th><th>waiting for a CPU</th><th>idle</th><th>busiest second</th></tr>",
        l.verdict.name(),
        esc(&l.reason)
    );
    let pct = |x: f64| format!("{:.0} %", x * 100.0);
    for (i, t) in l.client_threads.iter().enumerate() {
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            i + 1,
            pct(t.busy),
            pct(t.waiting),
            t.idle.map_or("—".into(), pct),
            if t.peak > 0.0 {
                pct(t.peak)
            } else {
                "—".into()
            }
        );
    }
    o.push_str("</table></div><p class=\"muted\">");
    let _ = write!(o, "Client cores: {:.0}.", l.client_cores);
    if let Some(p) = l.pool_saturation {
        let _ = write!(
            o,
            " Every connection busy when a request was due: {:.1} % of requests.",
            p * 100.0
        );
    }
    if let Some(n) = &l.network {
        let _ = write!(
            o,
            " Link {}: {:.0} of {:.0} Mbit/s.",
            esc(&n.interface),
            n.used_mbps,
            n.speed_mbps
        );
    }
    if let Some(t) = &l.target {
        let _ = write!(
            o,
            " Target: {:.2} of {:.0} cores{}.",
            t.busy_cores,
            t.cores,
            t.busiest_thread
                .map_or(String::new(), |b| format!(", busiest thread {}", pct(b)))
        );
    }
    o.push_str("</p>");
}

/// The report of one run. `env` is the environment (as JSON) when known.
///
/// Long on purpose: it writes the page top to bottom, section by section; split, one layout
/// would be scattered over many functions.
pub fn run_html(r: &RunResult, title: &str, env: Option<&serde_json::Value>) -> String {
    let mut o = String::new();
    // A user- or session-shaped run opens a connection per user or session: the
    // closed model's connection count does not describe it.
    let connections = match &r.sessions {
        Some(s) => format!(
            "{} {} started, {} connections opened",
            thousands(s.started),
            if r.settings.shape.contains("Users") {
                "users"
            } else {
                "sessions"
            },
            thousands(r.connections_opened)
        ),
        None => format!("{} connections", r.settings.connections),
    };
    let _ = write!(
        o,
        "<h1>{}</h1><p class=\"muted\">{} {} — {} — {:.1} s, {connections}, {} thread{}</p>",
        esc(title),
        esc(&r.settings.method),
        esc(&r.settings.url),
        esc(&r.settings.shape),
        r.duration_s,
        r.settings.threads,
        if r.settings.threads == 1 { "" } else { "s" }
    );
    if r.interrupted {
        let _ = write!(
            o,
            "<div class=\"warn\">{}</div>",
            esc(crate::interrupted_line(r)
                .trim_start()
                .trim_start_matches("! "))
        );
    }
    for w in crate::loud_warnings(r) {
        let _ = write!(o, "<div class=\"warn\">{}</div>", esc(&w));
    }
    o.push_str("<div class=\"cards\">");
    card(
        &mut o,
        "throughput",
        &format!("{} req/s", thousands(r.throughput_rps.round() as u64)),
    );
    card(&mut o, "completed", &thousands(r.requests.completed));
    card(&mut o, "failed (no answer)", &thousands(r.requests.failed));
    card(&mut o, "non-2xx", &thousands(r.non_2xx()));
    card(&mut o, "p50", &ms(r.latency.at(50.0).unwrap_or(0) as f64));
    card(&mut o, "p99", &ms(r.latency.at(99.0).unwrap_or(0) as f64));
    card(&mut o, "max", &ms(r.latency.max_us as f64));
    card(
        &mut o,
        "read",
        &crate::units::human_bytes(r.bytes.read as f64),
    );
    o.push_str("</div>");

    o.push_str("<h2>Latency</h2><div class=\"scroll\"><table><tr><th></th><th>min</th><th>mean</th><th>p50</th><th>p75</th><th>p90</th><th>p99</th><th>p99.9</th><th>p99.99</th><th>max</th></tr>");
    for (name, l) in [
        ("from the intended start (corrected)", &r.latency),
        ("from the actual send (uncorrected)", &r.latency_uncorrected),
    ] {
        let _ = write!(
            o,
            "<tr><td>{name}</td><td>{}</td><td>{}</td>",
            ms(l.min_us as f64),
            ms(l.mean_us)
        );
        for p in [50.0, 75.0, 90.0, 99.0, 99.9, 99.99] {
            let _ = write!(o, "<td>{}</td>", ms(l.at(p).unwrap_or(0) as f64));
        }
        let _ = write!(o, "<td>{}</td></tr>", ms(l.max_us as f64));
    }
    o.push_str("</table></div>");
    targets::targets_section(&mut o, r);
    stream::stream_section(&mut o, r);
    server::server_section(&mut o, r);

    o.push_str("<div class=\"grid2\"><div><h2>Statuses</h2><table><tr><th>status</th><th>responses</th></tr>");
    for (s, n) in &r.statuses {
        let cls = if (200..300).contains(s) || *s == 101 {
            ""
        } else {
            " class=\"bad\""
        };
        let _ = write!(o, "<tr><td{cls}>{s}</td><td>{}</td></tr>", thousands(*n));
    }
    o.push_str("</table></div><div><h2>Errors by kind</h2>");
    if r.errors.is_empty() {
        o.push_str("<p class=\"good\">none</p>");
    } else {
        o.push_str("<table><tr><th>kind</th><th>requests</th></tr>");
        for (k, n) in &r.errors {
            let _ = write!(
                o,
                "<tr><td class=\"bad\">{}</td><td>{}</td></tr>",
                esc(k),
                thousands(*n)
            );
        }
        o.push_str("</table>");
    }
    let _ = write!(
        o,
        "</div></div><p class=\"muted\">Bytes: {} read ({} of bodies), {} written; {} connections opened.</p>",
        thousands(r.bytes.read),
        thousands(r.bytes.body),
        thousands(r.bytes.written),
        thousands(r.connections_opened)
    );
    if let Some(tls) = &r.protocols.tls {
        let _ = write!(o, "<p>TLS: {}.</p>", esc(&crate::tls_line(tls)));
    }
    if let Some(w) = (r.protocols.websocket.as_ref()).filter(|w| {
        w.upgrade.is_some() || !w.refused.is_empty() || !w.closes.is_empty() || w.unmatched > 0
    }) {
        let list = |m: &std::collections::BTreeMap<u16, u64>| {
            let items: Vec<String> = m
                .iter()
                .map(|(k, n)| format!("{k} × {}", thousands(*n)))
                .collect();
            items.join(", ")
        };
        o.push_str("<h2>WebSocket</h2><p>");
        if let Some(u) = &w.upgrade {
            let _ = write!(o, "{}. ", esc(&crate::ws_upgrade_line(u)));
        }
        if !w.refused.is_empty() {
            let _ = write!(o, "Upgrades refused, by status: {}. ", list(&w.refused));
        }
        if !w.closes.is_empty() {
            let _ = write!(
                o,
                "Connections the server closed, by close code: {}. ",
                list(&w.closes)
            );
        }
        if w.unmatched > 0 {
            let _ = write!(
                o,
                "Messages read that were no answer (not holding what was expected): {}.",
                thousands(w.unmatched)
            );
        }
        o.push_str("</p>");
    }
    if let Some(op) = &r.open {
        let _ = write!(
            o,
            "<h2>Schedule</h2><p>Asked for {}, started {:.1}/s; send lag p50 {} p99 {} max {}; {} arrivals never sent.{}</p>",
            op.target_rate.map_or("a profile".into(), |t| format!("{t:.1}/s")),
            op.achieved_rate,
            ms(op.send_lag.at(50.0).unwrap_or(0) as f64),
            ms(op.send_lag.at(99.0).unwrap_or(0) as f64),
            ms(op.send_lag.max_us as f64),
            op.never_sent,
            if op.behind {
                format!(" <span class=\"bad\">Behind schedule: {}</span>", esc(op.cause.as_deref().unwrap_or("")))
            } else {
                " <span class=\"good\">Held.</span>".into()
            }
        );
    }
    if let Some(l) = &r.limit {
        limit_section(&mut o, l);
    }
    if let Some(c) = &r.capacity {
        crate::capacity::capacity_html(&mut o, c);
    }
    if let Some(s) = &r.sessions {
        let _ = write!(
            o,
            "<p>Sessions: {} started, {} completed, {} failed, at most {} at once; lifetime p50 {} p99 {}.</p>",
            s.started,
            s.completed,
            s.failed,
            s.max_concurrent,
            ms(s.lifetime.at(50.0).unwrap_or(0) as f64),
            ms(s.lifetime.at(99.0).unwrap_or(0) as f64)
        );
    }

    o.push_str("<h2>Over time</h2><div class=\"grid2\">");
    over_time(&mut o, &r.intervals, r.duration_s, r.sessions.is_some());
    o.push_str("</div><h2>Distribution</h2><div class=\"grid2\">");
    figure(
        &mut o,
        "Percentile spectrum",
        &line_chart(&LineChart {
            title: "latency by percentile",
            x_label: "percentile",
            y_label: "ms (log)",
            x_scale: Scale::Percentile,
            y_scale: Scale::Log,
            series: vec![
                Series {
                    name: "corrected".into(),
                    points: spectrum(&r.histograms.latency),
                },
                Series {
                    name: "uncorrected".into(),
                    points: spectrum(&r.histograms.uncorrected),
                },
            ],
        }),
    );
    let (cats, counts) = distribution(&r.histograms.latency);
    figure(
        &mut o,
        "Response-time distribution",
        &bar_chart(
            "response-time distribution",
            "responses",
            &cats,
            &[BarGroup {
                name: "responses".into(),
                values: counts.into_iter().map(|c| Some((c as f64, 0.0))).collect(),
            }],
        ),
    );
    let g = &r.histograms.ok.0;
    let below = |ms: u64| g.count_between(0, ms * 1000 - 1);
    let (a, b) = (below(800), below(1200));
    figure(
        &mut o,
        "Gatling's response-time ranges",
        &bar_chart(
            "response-time ranges",
            "requests",
            &[
                "t < 800 ms".into(),
                "800 ms ≤ t < 1200 ms".into(),
                "t ≥ 1200 ms".into(),
                // Gatling's KO: answers with an error status as well as failed
                // requests, so it is not the "failed" card's count.
                "KO (error status or failed)".into(),
            ],
            &[BarGroup {
                name: "requests".into(),
                values: [a, b - a, g.len() - b, r.histograms.ko.0.len()]
                    .iter()
                    .map(|&c| Some((c as f64, 0.0)))
                    .collect(),
            }],
        ),
    );
    o.push_str("</div>");
    if let Some(e) = env {
        o.push_str("<h2>Environment</h2>");
        env_table(&mut o, e);
    }
    page(title, &o)
}

/// The per-second charts of a run (or of the seconds a live run has finished so far):
/// requests, latency percentiles, active connections (and users), errors. `duration_s`
/// is where the last second ends, so a partial last second is scaled to a rate.
///
/// Long on purpose: the over-time section's charts one after another, each a few lines.
pub(crate) fn over_time(o: &mut String, intervals: &[Interval], duration_s: f64, users: bool) {
    // A last second that covers less than half a second (the answers that came after
    // the run's end, or a sliver of one) says little per second and would draw a cliff
    // (or a spike) at the end of every chart: it is left out of them (the JSON and the
    // totals keep it).
    let intervals = crate::files::shown_seconds(intervals, duration_s);
    let secs = |f: &dyn Fn(&Interval) -> f64| -> Vec<(f64, f64)> {
        intervals.iter().map(|i| (i.t as f64, f(i))).collect()
    };
    // The last second may be partial: rates are per second of the interval's length.
    let per_s = |i: &Interval, n: u64| n as f64 / (duration_s - i.t as f64).clamp(0.05, 1.0);
    figure(
        o,
        "Requests per second",
        &line_chart(&LineChart {
            title: "requests per second",
            x_label: "second",
            y_label: "responses/s",
            x_scale: Scale::Linear,
            y_scale: Scale::Linear,
            series: vec![
                Series {
                    name: "completed".into(),
                    points: secs(&|i| per_s(i, i.completed)),
                },
                Series {
                    name: "failed".into(),
                    points: secs(&|i| per_s(i, i.failed)),
                },
            ],
        }),
    );
    let pct = |p: f64| secs(&move |i| i.latency.at(p).unwrap_or(0) as f64 / 1000.0);
    figure(
        o,
        "Latency percentiles per second (corrected)",
        &line_chart(&LineChart {
            title: "latency percentiles per second",
            x_label: "second",
            y_label: "ms (log)",
            x_scale: Scale::Linear,
            y_scale: Scale::Log,
            series: vec![
                Series {
                    name: "p50".into(),
                    points: pct(50.0),
                },
                Series {
                    name: "p90".into(),
                    points: pct(90.0),
                },
                Series {
                    name: "p99".into(),
                    points: pct(99.0),
                },
                Series {
                    name: "max".into(),
                    points: secs(&|i| i.latency.max_us as f64 / 1000.0),
                },
            ],
        }),
    );
    let mut levels = vec![
        Series {
            name: "connections".into(),
            points: secs(&|i| i.connections as f64),
        },
        Series {
            name: "in flight".into(),
            points: secs(&|i| i.in_flight as f64),
        },
    ];
    if users {
        levels.push(Series {
            name: "users".into(),
            points: secs(&|i| i.users as f64),
        });
    }
    figure(
        o,
        if users {
            "Active connections and users"
        } else {
            "Active connections"
        },
        &line_chart(&LineChart {
            title: "active connections per second",
            x_label: "second",
            y_label: "most at once",
            x_scale: Scale::Linear,
            y_scale: Scale::Linear,
            series: levels,
        }),
    );
    figure(
        o,
        "Errors per second",
        &line_chart(&LineChart {
            title: "errors per second",
            x_label: "second",
            y_label: "failed requests/s",
            x_scale: Scale::Linear,
            y_scale: Scale::Linear,
            series: vec![Series {
                name: "failed".into(),
                points: secs(&|i| per_s(i, i.failed)),
            }],
        }),
    );
}

/// Log-spaced buckets of a latency histogram: labels and counts.
fn distribution(h: &Hist) -> (Vec<String>, Vec<u64>) {
    let h = &h.0;
    if h.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let (lo, hi) = (h.min().max(1) as f64, h.max().max(2) as f64);
    let n = 8usize;
    let step = (hi / lo).ln() / n as f64;
    let mut cats = Vec::new();
    let mut counts = Vec::new();
    let mut from = lo;
    for k in 1..=n {
        let to = if k == n {
            hi + 1.0
        } else {
            lo * (step * k as f64).exp()
        };
        counts.push(h.count_between(from as u64, (to as u64).max(from as u64 + 1) - 1));
        cats.push(format!("<{}", ms_short(to)));
        from = to;
    }
    (cats, counts)
}

fn ms_short(us: f64) -> String {
    if us >= 1000.0 {
        format!("{}ms", short(us / 1000.0))
    } else {
        format!("{}µs", short(us))
    }
}

/// A searched scenario's p99 against offered rate, one line per target: at each rate its
/// searches offered, the median p99 of the steps there.
fn capacity_curves(o: &mut String, scenario: &str, names: &[&str], runs: &[RunRecord]) {
    let series: Vec<Series> = names
        .iter()
        .map(|n| {
            let mut at: std::collections::BTreeMap<u64, Vec<u64>> = Default::default();
            for st in runs
                .iter()
                .filter(|x| x.target == *n && x.scenario == scenario)
                .filter_map(|x| x.result.capacity.as_ref())
                .flat_map(|c| c.steps.iter())
            {
                at.entry(st.rate.round() as u64)
                    .or_default()
                    .push(st.p99_us);
            }
            Series {
                name: n.to_string(),
                points: at
                    .into_iter()
                    .map(|(rate, mut p99)| {
                        p99.sort_unstable();
                        (rate as f64, p99[p99.len() / 2].max(1) as f64 / 1000.0)
                    })
                    .collect(),
            }
        })
        .collect();
    let title = format!("{scenario}: p99 against offered rate");
    figure(
        o,
        &title,
        &line_chart(&LineChart {
            title: &title,
            x_label: "offered req/s",
            y_label: "p99 ms (log)",
            x_scale: Scale::Linear,
            y_scale: Scale::Log,
            series,
        }),
    );
}
