//! `stampede vllm bench serve`'s run and report: vLLM's ready check (the first
//! prompt, asked until the server answers it), its warm-up requests, its benchmark
//! report and its result JSON (saved, or appended a line each); its flags are
//! [`stampede_flags::vllm`]'s.

use std::time::{Duration, Instant};

use stampede_engine::{LoadSpec, Run, Shape};
use stampede_report::vllm::{date_now, report, result_json, Info};

use crate::common::{self, Exit, ProgressOptions};
use crate::contract::Tool;
use stampede_flags::vllm::*;

/// Runs `stampede vllm bench serve ARGS`.
pub fn main(args: &[String]) -> Result<(), Exit> {
    match args {
        [bench, serve, rest @ ..] if bench == "bench" && serve == "serve" => {
            crate::contract::run::<Vllm>(rest)
        }
        // `stampede vllm --help` (or `vllm bench --help`): the benchmark's help.
        [help] | [_, help] if help == "--help" || help == "-h" => {
            crate::console::out(&DIALECT.help::<VllmArgs>());
            Ok(())
        }
        _ => Err(Exit::usage(
            "stampede vllm: `bench serve` is the benchmark offered: stampede vllm bench serve --model M [--base-url URL] …",
        )),
    }
}

/// `spec`'s first request sent `n` times, at most `cap` at once, nothing shown.
fn first_prompt(spec: &LoadSpec, n: u64, cap: usize) -> LoadSpec {
    let mut one = spec.clone();
    one.load.variety = vec![spec.load.request.clone()];
    one.load.requests = Some(n);
    one.load.connections = cap.clamp(1, n.max(1) as usize);
    one.load.threads = 1;
    one.load.shape = Shape::Closed;
    one.load.duration = None;
    one
}

fn quiet() -> ProgressOptions {
    ProgressOptions {
        quiet: true,
        ..Default::default()
    }
}

/// Why a run of the first prompt did not answer it, or `None` when it did.
fn unanswered(run: &Run) -> Option<String> {
    let r = &run.result;
    if r.requests.failed == 0 && r.statuses.keys().all(|s| (200..300).contains(s)) {
        return None;
    }
    let mut why: Vec<String> = (r.statuses.iter())
        .filter(|(s, _)| !(200..300).contains(*s))
        .map(|(s, _)| format!("status {s}"))
        .collect();
    why.extend(r.errors.keys().cloned());
    Some(why.join(", "))
}

/// Ctrl-C (or SIGTERM) before the benchmark's own run: nothing is measured.
fn stopped() -> Result<(), Exit> {
    if common::interrupted() {
        return Err(Exit {
            code: common::EXIT_INTERRUPTED,
            message: "interrupted before the benchmark's run: nothing measured".into(),
        });
    }
    Ok(())
}

/// vLLM's ready check: the first prompt, sent until it is answered; a server not yet
/// listening is asked again each second until `timeout`, one that answers wrongly
/// ends the benchmark at once with what it answered.
fn ready_check(spec: &LoadSpec, timeout: Duration) -> Result<(), Exit> {
    common::out("Starting initial single prompt test run...\n");
    let until = Instant::now() + timeout;
    loop {
        stopped()?;
        match common::execute(first_prompt(spec, 1, 1), quiet()) {
            Ok(run) => match unanswered(&run) {
                None => break,
                Some(why) => {
                    return Err(Exit::fail(format!(
                        "Initial test run failed ({why}): make sure the benchmark's flags suit the server (--backend, --endpoint, --model)"
                    )))
                }
            },
            Err(e) if Instant::now() >= until => {
                return Err(Exit::fail(format!(
                    "the endpoint was not ready within --ready-check-timeout-sec {}: {}",
                    timeout.as_secs(),
                    e.message
                )))
            }
            Err(_) => {
                // A second from this try, looking for Ctrl-C as it waits.
                let next = (Instant::now() + Duration::from_secs(1)).min(until);
                while Instant::now() < next && !common::interrupted() {
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
    }
    common::out("Initial test run completed.\n");
    Ok(())
}

impl Tool for Vllm {
    type State = Self::Info;

    fn execute(a: &VllmArgs, spec: LoadSpec, _info: &mut Info) -> Result<Run, Exit> {
        if a.ready_check_timeout_sec > 0 {
            ready_check(&spec, Duration::from_secs(a.ready_check_timeout_sec))?;
        } else {
            common::out("Skipping endpoint ready check.\n");
        }
        if a.num_warmups > 0 {
            common::out(&format!("Warming up with {} requests...\n", a.num_warmups));
            let cap = a.max_concurrency.unwrap_or(a.num_warmups as usize);
            common::execute(first_prompt(&spec, a.num_warmups, cap), quiet())?;
            stopped()?;
            common::out("Warmup run completed.\n");
        }
        common::out("Starting main benchmark run...\n");
        let scrape =
            (a.server.scrape()?).map(|(url, every, names)| stampede_metrics::scrape::ScrapeSpec {
                url,
                every,
                names,
                forward: None,
            });
        common::execute(
            spec,
            ProgressOptions {
                scrape,
                ..Default::default()
            },
        )
    }

    fn report(a: &VllmArgs, run: &mut Run, info: &mut Info) -> Result<(), Exit> {
        common::out(&report(&run.result, info));
        if a.save_result || a.append_result {
            save(a, &result_json(&run.result, info), info)?;
        }
        Ok(())
    }
}

/// Writes the JSON result where vLLM would: `--result-filename` (or the name vLLM
/// makes of the label, rate, cap and model) in `--result-dir`; appended after a
/// newline with `--append-result`.
fn save(a: &VllmArgs, json: &serde_json::Value, info: &Info) -> Result<(), Exit> {
    let name = a.result_filename.clone().unwrap_or_else(|| {
        let base = info.model.rsplit('/').next().unwrap_or(&info.model);
        let cap = info
            .max_concurrency
            .map_or(String::new(), |c| format!("-concurrency{c}"));
        let rate = match &info.ramp {
            Some(r) => format!("ramp-up-{}-{}qps-{}", r.strategy, r.start, r.end),
            None => info.rate.map_or("inf".to_string(), |r| format!("{r:?}")),
        };
        format!("{}-{rate}qps{cap}-{base}-{}.json", info.label, date_now())
    });
    let path = match &a.result_dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .map_err(|e| Exit::fail(format!("--result-dir {dir}: {e}")))?;
            std::path::Path::new(dir).join(name)
        }
        None => std::path::PathBuf::from(name),
    };
    let text = serde_json::to_string(json).expect("JSON");
    let fail = |e: std::io::Error| Exit::fail(format!("--save-result {}: {e}", path.display()));
    if a.append_result {
        use std::io::Write as _;
        let mut f = (std::fs::OpenOptions::new().create(true).append(true))
            .open(&path)
            .map_err(fail)?;
        let empty = f.metadata().map_or(true, |m| m.len() == 0);
        let sep = if empty { "" } else { "\n" };
        f.write_all(format!("{sep}{text}").as_bytes()).map_err(fail)
    } else {
        std::fs::write(&path, text).map_err(fail)
    }
}
