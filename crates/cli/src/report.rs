//! `stampede report`: a self-contained HTML report of a stored bench (the comparison,
//! its runs, verifications and environment), of one stored run (`--run ID`), or of a
//! run's result file (`--json`'s, or '-' for standard input), so a pipeline can end in
//! a page.

use std::path::PathBuf;

use clap::Args;
use stampede_lab::plan::Plan;
use stampede_lab::record::RunRecord;
use stampede_lab::summary::{summarize_bench, BenchRecord};

use crate::bench::{existing_store, VerdictArgs};
use crate::common::{self, Exit};

/// Arguments of `stampede report`.
#[derive(Args, Debug)]
pub struct ReportArgs {
    /// The bench to report by its id (default: the latest), or a run's result: a
    /// `--json` file, or '-' to read it from standard input
    #[arg(value_name = "BENCH|RESULT", value_parser = Source::parse)]
    pub bench: Option<Source>,
    /// Report one measured run instead (ids: the JSON summary or `stampede report --list-runs`)
    #[arg(long = "run", value_name = "ID", conflicts_with = "bench")]
    pub run: Option<i64>,
    /// List the measured runs of the bench with their ids
    #[arg(long = "list-runs")]
    pub list_runs: bool,
    /// The HTML file to write ('-' for standard output)
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FILE",
        default_value = "stampede-report.html"
    )]
    pub output: String,
    /// The result store
    #[arg(long = "db", value_name = "FILE", default_value = "stampede.db")]
    pub db: PathBuf,
    #[command(flatten)]
    pub verdicts: VerdictArgs,
}

/// What `stampede report` reports: a stored bench, or a run's result file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Bench(i64),
    Result(String),
}

/// What `stampede report`'s argument cannot be.
#[derive(Debug)]
pub struct NotASource(String);

impl std::fmt::Display for NotASource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "neither a bench id (a number: stampede compare --list shows them) nor a result file (--json's, or '-' for standard input): {:?}",
            self.0
        )
    }
}

impl std::error::Error for NotASource {}

impl Source {
    fn parse(s: &str) -> Result<Source, NotASource> {
        match s.parse::<i64>() {
            Ok(id) => Ok(Source::Bench(id)),
            Err(_) if s == "-" || s.ends_with(".json") || std::path::Path::new(s).is_file() => {
                Ok(Source::Result(s.to_string()))
            }
            Err(_) => Err(NotASource(s.to_string())),
        }
    }
}

/// `stampede report`: an HTML report of a stored bench, of one stored run, or of a
/// run's result file.
pub fn report(a: ReportArgs) -> Result<(), Exit> {
    if let Some(Source::Result(path)) = &a.bench {
        let r = crate::merge::read(path)?;
        let title = format!("{} {}", r.settings.method, r.settings.url);
        common::write_file(&a.output, &stampede_report::run_html(&r, &title, None))?;
        if a.output != "-" {
            eprintln!("stampede: wrote {}", a.output);
        }
        return Ok(());
    }
    let bench = match a.bench {
        Some(Source::Bench(id)) => Some(id),
        _ => None,
    };
    let (noise, test) = a.verdicts.get()?;
    let store = existing_store(&a.db)?;
    let fail = |e: stampede_lab::store::StoreError| Exit::fail(e.to_string());
    if let Some(id) = a.run {
        let (bench, run) = store
            .run(id)
            .map_err(fail)?
            .ok_or_else(|| Exit::usage(format!("run {id} is not in {}", a.db.display())))?;
        let env = store
            .bench(Some(bench))
            .map_err(fail)?
            .and_then(|b| serde_json::from_str(&b.environment).ok());
        let title = format!(
            "{} / {} run {} (bench {bench})",
            run.target, run.scenario, run.repetition
        );
        common::write_file(
            &a.output,
            &stampede_report::run_html(&run.result, &title, env.as_ref()),
        )?;
        eprintln!("stampede: wrote {}", a.output);
        return Ok(());
    }
    let row = store
        .bench(bench)
        .map_err(fail)?
        .ok_or_else(|| match bench {
            Some(id) => Exit::usage(format!(
                "bench {id} is not in {} (stampede compare --list shows them)",
                a.db.display()
            )),
            None => Exit::fail(format!("{} holds no bench", a.db.display())),
        })?;
    let runs = store.runs_with_ids(row.id).map_err(fail)?;
    if a.list_runs {
        let mut out = String::from("   id  target / scenario / run\n");
        for (id, r) in &runs {
            out += &format!(
                "{id:>5}  {} / {} / {}\n",
                r.target, r.scenario, r.repetition
            );
        }
        common::out(&out);
        return Ok(());
    }
    let runs: Vec<RunRecord> = runs.into_iter().map(|(_, r)| r).collect();
    let verifications = store.verifications(row.id).map_err(fail)?;
    // Scenarios in plan order when the stored plan still parses, else as they ran.
    let mut scenarios: Vec<String> = store
        .plan_source(row.id)
        .map_err(fail)?
        .and_then(|src| Plan::parse(&src, "stored plan").ok())
        .map(|p| p.scenarios.into_iter().map(|s| s.name).collect())
        .unwrap_or_default();
    for v in &verifications {
        if !scenarios.contains(&v.scenario) {
            scenarios.push(v.scenario.clone());
        }
    }
    let env: serde_json::Value = serde_json::from_str(&row.environment).unwrap_or_default();
    let machine = serde_json::from_value::<stampede_lab::environment::Environment>(env.clone())
        .map(|e| e.one_line())
        .unwrap_or_default();
    let record = BenchRecord {
        bench_id: row.id,
        plan: &row.plan_name,
        environment: &env,
        machine: &machine,
        targets: &store.target_statuses(row.id).map_err(fail)?,
        scenarios: &scenarios,
        verifications: &verifications,
        runs: &runs,
        assertions: &[],
        notes: &store.notes(row.id).map_err(fail)?,
        interrupted: false,
    };
    let summary = summarize_bench(&record, noise, test);
    common::write_file(&a.output, &stampede_report::bench_html(&summary, &runs))?;
    eprintln!("stampede: wrote {}", a.output);
    Ok(())
}
