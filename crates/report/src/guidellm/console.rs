//! GuideLLM's console tables for a run's benchmarks: the run summary (timings,
//! request and token counts), the request latency statistics (request latency,
//! time to first token, inter-token latency, time per output token: mean, median,
//! p95) and the server throughput statistics (concurrency, requests, input and
//! output tokens a second), in its `|===|` boxes — then what the profile concluded.

use std::fmt::Write as _;

use super::{Dist, Figures, Report};

/// A table: its title, its columns (group, name) and rows.
fn table(title: &str, cols: &[(&str, &str)], rows: &[Vec<String>]) -> String {
    let mut w: Vec<usize> = cols
        .iter()
        .map(|(g, n)| g.chars().count().max(n.chars().count()))
        .collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let rule = |c: char| {
        format!(
            "|{}|\n",
            w.iter()
                .map(|n| c.to_string().repeat(n + 2))
                .collect::<Vec<_>>()
                .join("|")
        )
    };
    let line = |cells: &[String]| {
        format!(
            "|{}|\n",
            cells
                .iter()
                .zip(&w)
                .map(|(c, n)| format!(" {c:<n$} "))
                .collect::<Vec<_>>()
                .join("|")
        )
    };
    let mut o = format!("\nℹ {title}\n");
    o += &rule('=');
    let mut last = "";
    let groups: Vec<String> = cols
        .iter()
        .map(|(g, _)| {
            let shown = if *g == last {
                String::new()
            } else {
                g.to_string()
            };
            last = g;
            shown
        })
        .collect();
    o += &line(&groups);
    o += &line(&cols.iter().map(|(_, n)| n.to_string()).collect::<Vec<_>>());
    o += &rule('-');
    for r in rows {
        o += &line(r);
    }
    o += &rule('=');
    o
}

fn f1(x: f64) -> String {
    format!("{x:.1}")
}

fn hms(unix: f64) -> String {
    let s = unix as u64 % 86_400;
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// The console report.
pub fn report(r: &Report) -> String {
    let figs: Vec<(&str, Figures)> = r
        .benchmarks
        .iter()
        .map(|b| (b.label.as_str(), Figures::of(b, &r.isl)))
        .collect();
    let summary: Vec<Vec<String>> = figs
        .iter()
        .map(|(l, f)| {
            vec![
                l.to_string(),
                hms(f.start),
                hms(f.end),
                f1(f.duration),
                f.successful.to_string(),
                f.incomplete.to_string(),
                f.errored.to_string(),
                f1(f.prompt_tokens.total_sum),
                f1(f.output_tokens.total_sum),
            ]
        })
        .collect();
    let mut o = table(
        "Run Summary Info",
        &[
            ("Benchmark", "Strategy"),
            ("Timings", "Start"),
            ("Timings", "End"),
            ("Timings", "Dur Sec"),
            ("Requests", "Comp"),
            ("Requests", "Inc"),
            ("Requests", "Err"),
            ("Tokens", "Input Comp"),
            ("Tokens", "Output Comp"),
        ],
        &summary,
    );
    let three = |d: &Dist| [f1(d.mean), f1(d.median), f1(d.at("p95"))];
    let lat: Vec<Vec<String>> = figs
        .iter()
        .map(|(l, f)| {
            let mut row = vec![l.to_string()];
            row.extend([
                format!("{:.2}", f.request_latency_s.mean),
                format!("{:.2}", f.request_latency_s.median),
                format!("{:.2}", f.request_latency_s.at("p95")),
            ]);
            row.extend(three(&f.ttft_ms));
            row.extend(three(&f.itl_ms));
            row.extend(three(&f.tpot_ms));
            row
        })
        .collect();
    o += &table(
        "Request Latency Statistics (Completed Requests; timed from each request's intended start)",
        &[
            ("Benchmark", "Strategy"),
            ("Request Latency Sec", "Mean"),
            ("Request Latency Sec", "Mdn"),
            ("Request Latency Sec", "p95"),
            ("TTFT ms", "Mean"),
            ("TTFT ms", "Mdn"),
            ("TTFT ms", "p95"),
            ("ITL ms", "Mean"),
            ("ITL ms", "Mdn"),
            ("ITL ms", "p95"),
            ("TPOT ms", "Mean"),
            ("TPOT ms", "Mdn"),
            ("TPOT ms", "p95"),
        ],
        &lat,
    );
    let tput: Vec<Vec<String>> = figs
        .iter()
        .map(|(l, f)| {
            vec![
                l.to_string(),
                f1(f.concurrency.median),
                f1(f.concurrency.mean),
                f1(f.mean_rps),
                f1(f.mean_prompt_tps),
                f1(f.mean_output_tps),
                f1(f.mean_prompt_tps + f.mean_output_tps),
            ]
        })
        .collect();
    o += &table(
        "Server Throughput Statistics (All Requests)",
        &[
            ("Benchmark", "Strategy"),
            ("Concurrency", "Mdn"),
            ("Concurrency", "Mean"),
            ("Requests", "Per Sec"),
            ("Input Tokens", "Per Sec"),
            ("Output Tokens", "Per Sec"),
            ("Total Tokens", "Per Sec"),
        ],
        &tput,
    );
    if figs.iter().any(|(_, f)| f.slo.is_some()) {
        let rows: Vec<Vec<String>> = figs
            .iter()
            .map(|(l, f)| {
                let (met, judged) = f.slo.unwrap_or((0, 0));
                vec![
                    l.to_string(),
                    judged.to_string(),
                    met.to_string(),
                    if judged > 0 {
                        format!("{:.3}", met as f64 / judged as f64)
                    } else {
                        "-".into()
                    },
                    f1(met as f64 / f.duration.max(1e-9)),
                ]
            })
            .collect();
        o += &table(
            "Service Levels (Completed Requests)",
            &[
                ("Benchmark", "Strategy"),
                ("Requests", "Judged"),
                ("Requests", "Met"),
                ("Attainment", ""),
                ("Goodput", "Req/Sec"),
            ],
            &rows,
        );
    }
    let turns: Vec<Vec<String>> = (r.benchmarks.iter())
        .flat_map(|b| {
            (b.result.targets.iter())
                .filter(|t| t.name.starts_with("turn "))
                .filter_map(|t| Some((t, t.first_event.as_ref()?)))
                .map(|(t, f)| {
                    let ms = |q: f64| f1(f.at(q).unwrap_or(0) as f64 / 1000.0);
                    vec![
                        b.label.clone(),
                        t.name.clone(),
                        t.completed.to_string(),
                        f1(f.mean_us / 1000.0),
                        ms(50.0),
                        ms(99.0),
                    ]
                })
        })
        .collect();
    if !turns.is_empty() {
        o += &table(
            "Per Turn (TTFT from each turn's intended start)",
            &[
                ("Benchmark", "Strategy"),
                ("Turn", ""),
                ("Requests", "Comp"),
                ("TTFT ms", "Mean"),
                ("TTFT ms", "Mdn"),
                ("TTFT ms", "p99"),
            ],
            &turns,
        );
    }
    if let Some(c) = &r.conclusion {
        o += "\n";
        o += &conclusion(c);
    }
    let _ = writeln!(
        o,
        "\n✔ Benchmarking complete, generated {} benchmark(s)",
        r.benchmarks.len()
    );
    o
}

/// The profile's conclusion in words.
fn conclusion(c: &serde_json::Value) -> String {
    let mut o = String::new();
    if let Some(k) = c.get("knee") {
        match k["knee"].as_f64() {
            Some(x) => {
                let _ = writeln!(
                    o,
                    "Knee: output token throughput stops rising near concurrency {x:.1} (first measured at or above it: {}).",
                    k["saturation_concurrency"]
                );
            }
            None => {
                let _ = writeln!(
                    o,
                    "Knee: none found ({}).",
                    k["reason"].as_str().unwrap_or("")
                );
            }
        }
    }
    if let Some(b) = c.get("best_passing_streams") {
        let why = c["stop_reason"].as_str().unwrap_or("");
        match b.as_u64() {
            Some(b) => {
                let _ = writeln!(
                    o,
                    "Goodput: the highest concurrency meeting the service levels is {b} ({why})."
                );
            }
            None => {
                let _ = writeln!(o, "Goodput: no concurrency met the service levels ({why}).");
            }
        }
    }
    o
}
