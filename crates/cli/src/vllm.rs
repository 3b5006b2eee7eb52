//! `stampede vllm bench serve`'s run and report: vLLM's benchmark report and its
//! result JSON; its flags are [`stampede_flags::vllm`]'s.

use stampede_engine::{LoadSpec, Run};
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

impl Tool for Vllm {
    type State = Self::Info;

    fn execute(_a: &VllmArgs, spec: LoadSpec, _info: &mut Info) -> Result<Run, Exit> {
        common::execute(spec, ProgressOptions::default())
    }

    fn report(a: &VllmArgs, run: &mut Run, info: &mut Info) -> Result<(), Exit> {
        common::out(&report(&run.result, info));
        if a.save_result {
            let json = result_json(&run.result, info);
            let name = a.result_filename.clone().unwrap_or_else(|| {
                let base = info.model.rsplit('/').next().unwrap_or(&info.model);
                let rate = info.rate.map_or("inf".to_string(), |r| r.to_string());
                let cap = info
                    .max_concurrency
                    .map_or(String::new(), |c| format!("-concurrency{c}"));
                format!("{}-{rate}qps{cap}-{base}-{}.json", info.label, date_now())
            });
            let path = match &a.result_dir {
                Some(dir) => std::path::Path::new(dir).join(name),
                None => std::path::PathBuf::from(name),
            };
            std::fs::write(&path, serde_json::to_string_pretty(&json).expect("JSON"))
                .map_err(|e| Exit::fail(format!("--save-result {}: {e}", path.display())))?;
        }
        Ok(())
    }
}
