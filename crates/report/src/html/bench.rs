//! The HTML report of a bench: each scenario's targets side by side, their changes
//! against the baseline with the test that found them, and the environment.

use crate::svg::{bar_chart, esc, line_chart, BarGroup, LineChart, Scale, Series};
use crate::units::thousands;
use stampede_engine::Hist;
use stampede_lab::record::RunRecord;
use stampede_lab::stats::Shift;
use stampede_lab::summary::{BenchSummary, Metric};
use std::fmt::Write as _;

use super::*;

/// The report of a bench: its summary and the runs behind it.
///
/// Long on purpose: it writes the page top to bottom, section by section; split, one layout
/// would be scattered over many functions.
pub fn bench_html(s: &BenchSummary, runs: &[RunRecord]) -> String {
    let mut o = String::new();
    let _ = write!(
        o,
        "<h1>{}</h1><p class=\"muted\">Bench {} — {}</p>",
        esc(&s.plan),
        s.bench_id,
        esc(&s.machine)
    );
    if let Some(d) = &s.description {
        // What the plan says the comparison means (on a shared-CPU machine, the
        // built-in plan says so here, as the terminal does).
        let _ = write!(o, "<p class=\"note\">{}</p>", esc(d));
    }
    if s.interrupted {
        o.push_str("<div class=\"warn\">The bench was interrupted; the figures are those of the runs that finished.</div>");
    }
    for t in s.targets.iter().filter(|t| !t.ok) {
        let _ = write!(
            o,
            "<div class=\"warn\">Target {}: {}</div>",
            esc(&t.name),
            esc(&t.status)
        );
    }
    let _ = write!(
        o,
        "<h2>Comparison</h2><p class=\"muted\">Mean ± standard deviation over the measured runs: req/s, p99 latency for open load, or the highest rate that met its conditions for a capacity search. Verdicts against <b>{}</b> at the 5 % level with a {:.0} % noise threshold.</p><div class=\"scroll\"><table class=\"wrap cmp\"><tr><th>scenario</th>",
        esc(&s.baseline),
        s.noise * 100.0
    );
    for t in &s.targets {
        let _ = write!(o, "<th>{}</th>", esc(&t.name));
    }
    o.push_str("</tr>");
    for r in &s.rows {
        let _ = write!(o, "<tr><td>{}</td>", esc(&r.scenario));
        for c in &r.cells {
            let fig = match r.metric {
                Metric::Rps => c.rps.as_ref().map(|x| {
                    format!(
                        "{} ± {}",
                        thousands(x.mean.round() as u64),
                        thousands(x.sd.round() as u64)
                    )
                }),
                Metric::P99Ms => c
                    .p99_ms
                    .as_ref()
                    .map(|x| format!("p99 {:.2} ± {:.2} ms", x.mean, x.sd)),
                Metric::MaxRate => c.max_rate.as_ref().map(|x| {
                    format!(
                        "max {} ± {} {}",
                        thousands(x.mean.round() as u64),
                        thousands(x.sd.round() as u64),
                        r.per.unit()
                    )
                }),
            };
            let verdict = match &c.vs_baseline {
                Some(v) => {
                    let better = crate::bench::better(v.verdict, r.metric);
                    let cls = match v.verdict {
                        Shift::NoDifference => "muted",
                        Shift::Withheld => "bad",
                        _ if better => "good",
                        _ => "bad",
                    };
                    let withheld = if v.verdict == Shift::Withheld {
                        ", no verdict: client-bound"
                    } else if v.at_least.is_some() {
                        ", at least: the side ahead was client-bound"
                    } else {
                        ""
                    };
                    let cpu = match &c.cpu_vs_baseline {
                        Some(cpu) => format!(
                            "<br><span class=\"muted\">server CPU/req: {}</span>",
                            esc(&crate::bench::cpu_verdict(cpu))
                        ),
                        None => String::new(),
                    };
                    format!(
                        "<br><span class=\"{cls}\">{:.2}× ({}{withheld})</span>{cpu}",
                        v.ratio,
                        crate::bench::ratio_interval(v)
                    )
                }
                None => String::new(),
            };
            let flag = if c.notes.is_empty() {
                ""
            } else {
                " <span class=\"bad\" title=\"see Flags\">⚠</span>"
            };
            let _ = write!(
                o,
                "<td>{}{verdict}{flag}</td>",
                fig.unwrap_or_else(|| "—".into())
            );
        }
        o.push_str("</tr>");
    }
    o.push_str("</table></div>");
    if s.rows
        .iter()
        .any(|r| r.cells.iter().any(|c| !c.notes.is_empty()))
    {
        o.push_str("<p class=\"muted\"><span class=\"bad\">⚠</span> a flag on the cell: something in its runs may make its figures mislead; see Flags.</p>");
    }

    streams_table(&mut o, s);

    let names: Vec<&str> = s.targets.iter().map(|t| t.name.as_str()).collect();
    let closed: Vec<&stampede_lab::summary::Row> =
        s.rows.iter().filter(|r| r.metric == Metric::Rps).collect();
    let open: Vec<&stampede_lab::summary::Row> = s
        .rows
        .iter()
        .filter(|r| r.metric == Metric::P99Ms)
        .collect();
    o.push_str("<h2>Throughput and latency</h2><div class=\"grid2\">");
    let groups = |rows: &[&stampede_lab::summary::Row],
                  f: &dyn Fn(&stampede_lab::summary::Cell) -> Option<(f64, f64)>|
     -> Vec<BarGroup> {
        names
            .iter()
            .enumerate()
            .map(|(i, n)| BarGroup {
                name: n.to_string(),
                values: rows.iter().map(|r| f(&r.cells[i])).collect(),
            })
            .collect()
    };
    let cats = |rows: &[&stampede_lab::summary::Row]| {
        rows.iter().map(|r| r.scenario.clone()).collect::<Vec<_>>()
    };
    if !closed.is_empty() {
        figure(
            &mut o,
            "Req/s (closed load), mean ± σ",
            &bar_chart(
                "req/s per scenario",
                "req/s",
                &cats(&closed),
                &groups(&closed, &|c| c.rps.as_ref().map(|x| (x.mean, x.sd))),
            ),
        );
    }
    if !open.is_empty() {
        figure(
            &mut o,
            "p99 latency (open load), mean ± σ",
            &bar_chart(
                "p99 per scenario",
                "ms",
                &cats(&open),
                &groups(&open, &|c| c.p99_ms.as_ref().map(|x| (x.mean, x.sd))),
            ),
        );
    }
    let searched: Vec<&stampede_lab::summary::Row> = s
        .rows
        .iter()
        .filter(|r| r.metric == Metric::MaxRate)
        .collect();
    if !searched.is_empty() {
        figure(
            &mut o,
            "Capacity (highest rate meeting every condition), mean ± σ",
            &bar_chart(
                "capacity per scenario",
                "req/s",
                &cats(&searched),
                &groups(&searched, &|c| c.max_rate.as_ref().map(|x| (x.mean, x.sd))),
            ),
        );
        for r in &searched {
            capacity_curves(&mut o, &r.scenario, &names, runs);
        }
    }
    let all: Vec<&stampede_lab::summary::Row> = s.rows.iter().collect();
    figure(
        &mut o,
        "Target CPU per request",
        &bar_chart(
            "target CPU per request",
            "µs",
            &cats(&all),
            &groups(&all, &|c| c.target_cpu_us_per_req.map(|v| (v, 0.0))),
        ),
    );
    figure(
        &mut o,
        "Target peak RSS",
        &bar_chart(
            "target peak RSS",
            "MiB",
            &cats(&all),
            &groups(&all, &|c| {
                c.target_peak_rss_kb.map(|v| (v as f64 / 1024.0, 0.0))
            }),
        ),
    );
    o.push_str("</div><h2>Latency spectra</h2><p class=\"muted\">Each target's measured runs merged, latency from the intended start.</p><div class=\"grid2\">");
    for r in &s.rows {
        let series: Vec<Series> = names
            .iter()
            .map(|n| {
                let mut h = Hist::default();
                for run in runs
                    .iter()
                    .filter(|x| x.target == *n && x.scenario == r.scenario)
                {
                    h.add(&run.result.histograms.latency);
                }
                Series {
                    name: n.to_string(),
                    points: spectrum(&h),
                }
            })
            .collect();
        figure(
            &mut o,
            &r.scenario,
            &line_chart(&LineChart {
                title: &r.scenario,
                x_label: "percentile",
                y_label: "ms (log)",
                x_scale: Scale::Percentile,
                y_scale: Scale::Log,
                series,
            }),
        );
    }
    o.push_str("</div>");

    let flags = s.flags();
    if !flags.is_empty() {
        o.push_str("<h2>Flags</h2><ul>");
        for f in flags {
            let _ = write!(o, "<li>{}</li>", esc(&f));
        }
        o.push_str("</ul>");
    }
    let infos = s.infos();
    if !infos.is_empty() {
        o.push_str("<h2>Notes</h2><ul>");
        for n in infos {
            let _ = write!(o, "<li>{}</li>", esc(&n));
        }
        o.push_str("</ul>");
    }
    o.push_str("<h2>Verification</h2>");
    if s.verification_problems.is_empty() {
        o.push_str("<p class=\"good\">Every target answered every scenario as expected before it was measured.</p>");
    } else {
        o.push_str(
            "<table><tr><th>target</th><th>scenario</th><th>outcome</th><th>what failed</th></tr>",
        );
        for v in &s.verification_problems {
            let _ = write!(o, "<tr><td>{}</td><td>{}</td><td class=\"bad\">{}</td><td style=\"text-align:left;white-space:normal\">{}</td></tr>", esc(&v.target), esc(&v.scenario), v.outcome.as_str(), esc(&v.failures.join("; ")));
        }
        o.push_str("</table>");
    }
    o.push_str("<h2>Targets</h2><table><tr><th>target</th><th>version</th><th>status</th></tr>");
    for t in &s.targets {
        let _ = write!(o, "<tr><td>{}</td><td>{}</td><td class=\"{}\" style=\"text-align:left;white-space:normal\">{}</td></tr>", esc(&t.name), esc(t.version.as_deref().unwrap_or("—")), if t.ok { "" } else { "bad" }, esc(&t.status));
    }
    o.push_str("</table><h2>Environment</h2>");
    env_table(&mut o, &s.environment);
    page(&format!("{} — bench {}", s.plan, s.bench_id), &o)
}

/// The streaming scenarios' figures, each target's mean ± standard deviation over its
/// runs: TTFT and ITL from the intended start, tokens/s and goodput (none: nothing).
fn streams_table(o: &mut String, s: &BenchSummary) {
    let cells: Vec<(
        &str,
        &stampede_lab::summary::Cell,
        &stampede_lab::summary::StreamCell,
    )> = (s.rows.iter())
        .flat_map(|r| r.cells.iter().map(move |c| (r.scenario.as_str(), c)))
        .filter_map(|(sc, c)| c.stream.as_ref().map(|st| (sc, c, st)))
        .collect();
    if cells.is_empty() {
        return;
    }
    o.push_str("<h2>Streams</h2><p class=\"muted\">Mean ± standard deviation over the measured runs. The first event is an OpenAI stream's first token (TTFT), the gaps between events its inter-token latency (ITL), both from each request's intended start.</p><div class=\"scroll\"><table><tr><th>scenario</th><th>target</th><th>TTFT p50</th><th>TTFT p99</th><th>ITL p50</th><th>ITL p99</th><th>tokens/s</th><th>goodput req/s</th></tr>");
    let both =
        |x: &stampede_lab::stats::Summary| format!("{} ± {:.2}", crate::bench::ms_of(x), x.sd);
    for (scenario, c, st) in cells {
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(scenario),
            esc(&c.target),
            both(&st.ttft_p50_ms),
            both(&st.ttft_p99_ms),
            both(&st.itl_p50_ms),
            both(&st.itl_p99_ms),
            (st.tokens_per_s.as_ref()).map_or("—".into(), |t| format!("{:.1} ± {:.1}", t.mean, t.sd)),
            (st.goodput_rps.as_ref()).map_or("—".into(), |g| format!("{:.2} ± {:.2}", g.mean, g.sd)),
        );
    }
    o.push_str("</table></div>");
}
