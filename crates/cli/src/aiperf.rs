//! `stampede aiperf profile`'s run and report: its warm-up requests, the server's
//! metrics scraped from the URL's `/metrics` as AIPerf scrapes them, its console
//! table, and its exports in the artifact directory; its flags are
//! [`stampede_flags::aiperf`]'s.

use stampede_engine::{LoadSpec, Run, Shape};
use stampede_report::aiperf::{export_csv, export_json, export_path, report, Info};

use crate::common::{self, Exit, ProgressOptions};
use crate::contract::Tool;
use stampede_flags::aiperf::*;

/// Runs `stampede aiperf profile ARGS`.
pub fn main(args: &[String]) -> Result<(), Exit> {
    match args {
        [profile, rest @ ..] if profile == "profile" => crate::contract::run::<Aiperf>(rest),
        [help] if help == "--help" || help == "-h" => {
            crate::console::out(&DIALECT.help::<AiperfArgs>());
            Ok(())
        }
        _ => Err(Exit::usage(
            "stampede aiperf: `profile` is the command offered: stampede aiperf profile -m MODEL --url URL …",
        )),
    }
}

impl Tool for Aiperf {
    type State = Self::Info;

    fn execute(_a: &AiperfArgs, spec: LoadSpec, info: &mut Info) -> Result<Run, Exit> {
        if info.warmups > 0 {
            let mut warm = spec.clone();
            warm.load.variety = vec![spec.load.request.clone()];
            warm.load.requests = Some(info.warmups);
            warm.load.duration = None;
            warm.load.shape = Shape::Closed;
            warm.load.connections = spec.load.connections.min(info.warmups as usize).max(1);
            warm.load.threads = 1;
            common::execute(
                warm,
                ProgressOptions {
                    quiet: true,
                    ..Default::default()
                },
            )?;
        }
        let scrape = info
            .scrape
            .clone()
            .map(|url| stampede_metrics::scrape::ScrapeSpec {
                url,
                every: std::time::Duration::from_secs(1),
                names: Vec::new(),
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

    fn report(_a: &AiperfArgs, run: &mut Run, info: &mut Info) -> Result<(), Exit> {
        let dir = &info.artifact_dir;
        std::fs::create_dir_all(dir)
            .map_err(|e| Exit::fail(format!("--artifact-dir {dir}: {e}")))?;
        let json = serde_json::to_string_pretty(&export_json(&run.result, info)).expect("JSON");
        common::write_file(&export_path(info, "json"), &json)?;
        common::write_file(&export_path(info, "csv"), &export_csv(&run.result, info))?;
        common::out(&report(&run.result, info));
        Ok(())
    }
}
