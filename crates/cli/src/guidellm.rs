//! `stampede guidellm run` (and the older `guidellm benchmark`): the profile's
//! benchmarks run one after another, each chosen by
//! [`stampede_flags::guidellm::profile::Planner`] from the figures of those before
//! it, then GuideLLM's console tables and its `benchmarks.json` / `benchmarks.csv`
//! written ([`stampede_report::guidellm`]). A `max_errors` constraint stops the
//! benchmark it is reached in and the run; Ctrl-C stops the run with what was
//! measured reported.

use serde_json::json;
use stampede_flags::guidellm::profile::{Measured, Planner, Profile, Strategy};
use stampede_flags::guidellm::*;
use stampede_flags::CommandLine as _;
use stampede_report::guidellm::{console, csv, json as report_json, Benchmark, Report};

use crate::common::{self, Exit, ProgressOptions};

/// Runs `stampede guidellm run|benchmark ARGS`.
pub fn main(args: &[String]) -> Result<(), Exit> {
    match args {
        [cmd, rest @ ..] if cmd == "run" || cmd == "benchmark" => {
            // `guidellm benchmark run …` was the older releases' spelling too.
            let rest = match rest {
                [run, more @ ..] if cmd == "benchmark" && run == "run" => more,
                r => r,
            };
            run(rest)
        }
        [help] if help == "--help" || help == "-h" => {
            crate::console::out(&DIALECT.help::<GuidellmArgs>());
            Ok(())
        }
        _ => Err(Exit::usage(
            "stampede guidellm: `run` (or the older `benchmark`) is the command offered: stampede guidellm run --backend kind=openai_http,target=URL --profile … --data …",
        )),
    }
}

fn strategy_json(s: &Strategy) -> serde_json::Value {
    let mut v = json!({"type_": s.kind(), "max_concurrency": s.concurrency()});
    match *s {
        Strategy::Concurrent { streams } => v["streams"] = streams.into(),
        Strategy::Constant { rate, .. } | Strategy::Poisson { rate, .. } => v["rate"] = rate.into(),
        _ => {}
    }
    v
}

/// A benchmark's conversations, begun anew.
fn chat_run(
    c: &ChatParts,
    info: &Info,
    spec: &stampede_engine::LoadSpec,
) -> Result<stampede_journey::chat::ChatRun, Exit> {
    use stampede_journey::chat::{Chat, ChatRun, Conversation, Overflow, Turn};
    let conversations = (c.conversations.iter())
        .map(|t| Conversation {
            turns: (t.iter())
                .map(|(p, n)| Turn {
                    prompt: p.clone(),
                    max_tokens: *n,
                })
                .collect(),
        })
        .collect();
    ChatRun::new(Chat {
        conversations,
        system: None,
        model: info.model.clone(),
        path: c.path.clone(),
        authority: c.authority.clone(),
        headers: c.headers.clone(),
        extra: c.extra.clone(),
        stream: true,
        delay: c.delay,
        max_context: None,
        overflow: Overflow::DropOldest,
        tokenizer: spec.load.streams.tokenizer.clone(),
        seed: info.seed,
    })
    .map_err(|e| Exit::usage(format!("--data turns: {e}")))
}

fn measured(r: &stampede_engine::RunResult, stopped: bool) -> Measured {
    let secs = r.duration_s.max(1e-9);
    let ok: u64 = r.statuses.range(200..300).map(|(_, n)| n).sum();
    let tokens = r.protocols.stream.as_ref().and_then(|s| s.tokens.as_ref());
    let judged = r.histograms.stream.as_ref().map_or(0, |s| s.tokens.0.len());
    Measured {
        requests_per_s: ok as f64 / secs,
        output_tokens_per_s: tokens.map_or(0.0, |t| t.total as f64 / secs),
        judged,
        met: tokens.and_then(|t| t.good).unwrap_or(0),
        stopped,
    }
}

fn conclusion(profile: &Profile, p: &Planner) -> Option<serde_json::Value> {
    let c = &p.conclusion;
    match profile {
        Profile::Knee { .. } => Some(json!({
            "kind": "knee",
            "knee": c.knee.as_ref().map(|k| json!({
                "status": k.status, "reason": k.reason, "knee": k.knee,
                "saturation_concurrency": k.saturation_concurrency,
                "pre_slope": k.pre_slope, "tail_slope": k.tail_slope,
            })),
            "adaptive_concurrencies": c.adaptive,
        })),
        Profile::Goodput { .. } => Some(json!({
            "kind": "goodput",
            "best_passing_streams": c.best_passing,
            "stop_reason": c.stop_reason,
            "probes": c.probes.iter().map(|p| json!({
                "streams": p.streams, "attainment": p.attainment,
                "attainment_lower": p.lower, "attainment_upper": p.upper,
                "determined_requests": p.judged, "passed": p.passed, "resolved": p.resolved,
            })).collect::<Vec<_>>(),
        })),
        _ => None,
    }
}

fn run(args: &[String]) -> Result<(), Exit> {
    let (a, notes) = DIALECT.parse::<GuidellmArgs>(args)?;
    for n in &notes {
        eprintln!("stampede guidellm: {n}");
    }
    common::claim_stdout(&a.result);
    a.result.check_path()?;
    let inputs = Guidellm::inputs(&a)?;
    let (base, info) = Guidellm::translate(&a, inputs)?;
    let mut planner = Planner::new(info.profile.clone());
    let mut benchmarks = Vec::new();
    let mut last = None;
    while let Some(s) = planner.next(last.take())? {
        let mut spec = base.clone();
        let turns = info.chat.as_ref().map_or(1, |c| c.conversations[0].len());
        shape(&mut spec, &s, turns);
        let chat = match &info.chat {
            Some(c) => Some(chat_run(c, &info, &spec)?),
            None => None,
        };
        if let Some(c) = &chat {
            spec.load.variety = Vec::new();
            spec.load.walk = None;
            spec.hooks = Some(c.hooks());
        }
        a.segments.apply(&mut spec)?;
        if info.console {
            eprintln!(
                "stampede guidellm: benchmark {} ({})",
                benchmarks.len() + 1,
                s.label()
            );
        }
        let mut run = common::execute(
            spec,
            ProgressOptions {
                quiet: !info.console,
                lines: true,
                max_failures: info.constraints.max_errors,
                ..Default::default()
            },
        )?;
        if let Some(c) = &chat {
            c.annotate(&mut run.result);
        }
        let stopped = info
            .constraints
            .max_errors
            .is_some_and(|n| run.result.requests.failed >= n);
        if stopped {
            eprintln!(
                "stampede guidellm: {} ended at max_errors ({} failed); no benchmark follows",
                s.label(),
                run.result.requests.failed
            );
        }
        last = Some((s, measured(&run.result, stopped)));
        benchmarks.push(Benchmark {
            label: s.label(),
            strategy: strategy_json(&s),
            concurrency: s.concurrency(),
            result: run.result,
        });
        if crate::console::interrupted() {
            break;
        }
    }
    let report = Report {
        spec: json!({
            "backend": {
                "kind": "openai_http", "target": info.backend.target, "model": info.model,
                "request_format": info.backend.request_format, "stream": info.backend.stream,
                "max_tokens": info.backend.max_tokens,
            },
            "profile": info.profile_args,
            "constraints": {
                "max_requests": info.constraints.max_requests,
                "max_duration": info.constraints.max_duration,
                "max_errors": info.constraints.max_errors,
            },
            "data": [info.data],
            "seed": {"kind": "static", "value": info.seed},
        }),
        labels: info.labels.clone(),
        conclusion: conclusion(&info.profile, &planner),
        benchmarks,
        isl: info.isl.clone(),
    };
    for o in &info.outputs {
        match o {
            Output::Console => {}
            Output::Json(p) => {
                let text = serde_json::to_string_pretty(&report_json(&report)).expect("JSON");
                common::write_file(p, &text)?;
            }
            Output::Csv(p) => common::write_file(p, &csv::csv(&report))?,
        }
    }
    if info.console {
        common::out(&console::report(&report));
    }
    if let Some(path) = &a.result.json {
        // One stampede result a line, a benchmark each (`stampede merge` reads each).
        let lines: Vec<String> = (report.benchmarks.iter())
            .map(|b| serde_json::to_string(&b.result).expect("JSON"))
            .collect();
        common::write_file(path, &(lines.join("\n") + "\n"))?;
    }
    if crate::console::interrupted() {
        return Err(Exit {
            code: common::EXIT_INTERRUPTED,
            message: "interrupted; the benchmarks measured so far are reported".into(),
        });
    }
    Ok(())
}
