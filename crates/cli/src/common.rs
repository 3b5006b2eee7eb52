//! Helpers shared by the dialects: value parsers with clear messages, Ctrl-C handling,
//! and the one function that runs a spec (with its live view) and maps failures to exit
//! codes.

use std::sync::Arc;

use stampede_engine::{Control, LoadSpec, Run};

pub use crate::console::{install_sigint, interrupted, out};
use crate::live;
pub use crate::live::ProgressOptions;

pub use crate::console::{Exit, EXIT_USAGE};

pub use stampede_flags::args::*;

/// Validates and runs a spec with a live progress line; maps failures to exit codes.
pub fn execute(spec: LoadSpec, progress: ProgressOptions) -> Result<Run, Exit> {
    execute_recording(spec, progress, None)
}

/// [`execute`], streaming one record per request to `records` (`--raw`).
pub fn execute_recording(
    spec: LoadSpec,
    progress: ProgressOptions,
    records: Option<stampede_engine::RawOut>,
) -> Result<Run, Exit> {
    let plan = spec.plan().map_err(|e| Exit::usage(e.to_string()))?;
    let part = stampede_engine::Part {
        plan,
        places: Vec::new(),
    };
    execute_parts(&[part], progress, records)
}

/// [`execute_recording`] for a run over several servers (`LoadSpec::split`), one
/// part per server, each probed first.
pub fn execute_parts(
    parts: &[stampede_engine::Part],
    mut progress: ProgressOptions,
    records: Option<stampede_engine::RawOut>,
) -> Result<Run, Exit> {
    let mut scrape = progress.scrape.take();
    // The live outputs carry the server's series as they are scraped.
    if let (Some(s), Some(hub)) = (scrape.as_mut(), progress.metrics.clone()) {
        s.forward = Some(Arc::new(move |values| hub.server_sample(values)));
    }
    for part in parts {
        probe(&part.plan)?;
    }
    // A fleet's segment sends each second to the coordinator, beside what else shows it.
    if crate::fleet::active() {
        let mut inner = progress.each_second.take();
        progress.each_second = Some(Box::new(move |s| {
            crate::fleet::second(s);
            if let Some(f) = inner.as_mut() {
                f(s);
            }
        }));
    }
    install_sigint();
    // Workers hand over each second only when something shows it.
    let control = Arc::new(if progress.shows_seconds() {
        Control::watched()
    } else {
        Control::default()
    });
    if let Some(r) = records {
        control.record_to(r);
    }
    let metrics = progress.metrics.clone();
    let watcher = {
        let control = control.clone();
        let run = live::RunShape::of(parts);
        std::thread::spawn(move || live::watch(control, run, progress))
    };
    if let Some(m) = &metrics {
        m.begin();
    }
    let _ = RUN_STARTED.set(std::time::Instant::now());
    let scraper = match &scrape {
        Some(s) => Some(
            stampede_metrics::scrape::Scraper::start(s)
                .map_err(|e| Exit::usage(format!("--server-metrics: {e}")))?,
        ),
        None => None,
    };
    let out = stampede_engine::run_parts(parts, control.clone());
    let scraped = scraper.map(|s| s.finish());
    control.close_records();
    control.stop();
    let _ = watcher.join();
    let mut run = out.map_err(|e| Exit::fail(e.to_string()))?;
    // Stopped by Ctrl-C or SIGTERM: the result says so (summary, JSON, HTML) and the
    // command exits 130 once its report is written (see `main`).
    run.result.interrupted = interrupted();
    if let Some(m) = scraped {
        run.result.attach_server(m);
    }
    Ok(run)
}

/// Checks that the spec's server answers before the run, naming what failed.
fn probe(plan: &stampede_engine::Plan) -> Result<(), Exit> {
    let Err(e) = stampede_engine::probe(plan) else {
        return Ok(());
    };
    let hint = match stampede_tls::classify(&e) {
        _ if stampede_tls::peer_not_tls(&e) => {
            " (the server does not speak TLS: it answered in plain text; use an http:// URL — in ghz, add --insecure)"
        }
        Some(stampede_tls::Failure::Certificate) => {
            " (TLS certificate; trust its CA with --cacert FILE, or skip verification with --insecure)"
        }
        Some(stampede_tls::Failure::Other) => " (TLS handshake)",
        None => "",
    };
    let net = &plan.config().net;
    let via = match &net.proxy {
        Some(p) => format!(" through the proxy {}", p.url),
        None => String::new(),
    };
    Err(Exit::fail(format!(
        "could not connect to {} ({}){via}: {e}{hint}",
        net.target.url,
        net.target.describe_address()
    )))
}

/// When the engine began this process's run (its target probed, its settings checked).
static RUN_STARTED: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();

/// When the engine began this process's run, once it has.
pub fn run_started() -> Option<std::time::Instant> {
    RUN_STARTED.get().copied()
}

/// Exit code of a run stopped by Ctrl-C or SIGTERM, after its partial report.
pub const EXIT_INTERRUPTED: i32 = 130;

/// Exit code when the run happened but an assertion failed.
pub const EXIT_ASSERT: i32 = 3;

/// Checks assertions against a result, prints PASS/FAIL lines on stderr, writes JUnit
/// XML if asked; any failure becomes exit code 3.
pub fn check_assertions(
    asserts: &[stampede_engine::assert::Assertion],
    r: &stampede_engine::RunResult,
    class: &str,
    junit: Option<&str>,
) -> Result<(), Exit> {
    if asserts.is_empty() {
        return Ok(());
    }
    let checked: Vec<_> = asserts.iter().map(|x| x.check(r)).collect();
    for c in &checked {
        eprintln!(
            "{} {}  (measured {})",
            if c.passed { "PASS" } else { "FAIL" },
            c.assertion,
            c.actual
        );
    }
    if let Some(path) = junit {
        let cases: Vec<stampede_report::JunitCase> = checked
            .iter()
            .map(|c| stampede_report::JunitCase {
                class: class.to_string(),
                name: c.assertion.clone(),
                failure: (!c.passed).then(|| format!("{}: measured {}", c.assertion, c.actual)),
            })
            .collect();
        write_file(path, &stampede_report::junit("stampede", &cases))?;
    }
    let failed = checked.iter().filter(|c| !c.passed).count();
    if failed > 0 {
        return Err(Exit {
            code: EXIT_ASSERT,
            message: format!("{failed} of {} assertions failed", checked.len()),
        });
    }
    Ok(())
}

/// Writes a file, naming it in the error.
pub fn write_file(path: &str, contents: &str) -> Result<(), Exit> {
    if path == "-" {
        out(contents);
        return Ok(());
    }
    std::fs::write(path, contents).map_err(|e| Exit::fail(format!("could not write {path}: {e}")))
}

/// What a run's result is written as, beyond the printed report: the flags `load` and
/// `merge` share.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct Outputs {
    /// Write the result as JSON to FILE ('-' for standard output, replacing the summary)
    #[arg(long = "json", value_name = "FILE")]
    pub json: Option<String>,
    /// Write a self-contained HTML report (charts, no network needed to open it)
    #[arg(long = "html", value_name = "FILE")]
    pub html: Option<String>,
    /// Write the corrected latency's percentile distribution (HdrHistogram .hgrm text)
    #[arg(long = "hgrm", value_name = "FILE")]
    pub hgrm: Option<String>,
    /// Write an HdrHistogram interval log (format 1.3; corrected and uncorrected per second)
    #[arg(long = "hlog", value_name = "FILE")]
    pub hlog: Option<String>,
    /// Write the per-second series as CSV
    #[arg(long = "csv", value_name = "FILE")]
    pub csv: Option<String>,
    /// Write each request's figures as CSV (a run of several requests: --targets, a
    /// plan's list, h2load's URIs)
    #[arg(long = "targets-csv", value_name = "FILE")]
    pub targets_csv: Option<String>,
    /// Check the result: 'p99 < 50ms', 'errors < 0.1%', 'rps > 10000' (repeatable); any
    /// failure exits 3
    #[arg(long = "assert", value_name = "EXPR", action = clap::ArgAction::Append)]
    pub asserts: Vec<String>,
    /// Write the assertions' outcomes as JUnit XML
    #[arg(long = "junit", value_name = "FILE", requires = "asserts")]
    pub junit: Option<String>,
}

impl Outputs {
    /// The `--assert` expressions, parsed (a bad one is a usage error naming it).
    pub fn assertions(&self) -> Result<Vec<stampede_engine::assert::Assertion>, Exit> {
        self.asserts
            .iter()
            .map(|x| {
                stampede_engine::assert::Assertion::parse(x)
                    .map_err(|e| Exit::usage(format!("--assert: {e}")))
            })
            .collect()
    }

    /// Refuses, before anything runs, a file output that cannot be written: a run
    /// is never measured only to be lost to a wrong path.
    pub fn check_paths(&self) -> Result<(), Exit> {
        for (flag, path) in [
            ("--json", &self.json),
            ("--html", &self.html),
            ("--hgrm", &self.hgrm),
            ("--hlog", &self.hlog),
            ("--csv", &self.csv),
            ("--targets-csv", &self.targets_csv),
            ("--junit", &self.junit),
        ] {
            if let Some(p) = path {
                check_writable(flag, p)?;
            }
        }
        Ok(())
    }

    /// Writes the .hgrm, .hlog and CSV files asked for; one that fails is named in
    /// `w` and the others are still written.
    pub fn write_files(&self, r: &stampede_engine::RunResult, w: &mut Writes) {
        use stampede_report::{hgrm, hlog, series_csv, targets_csv};
        for (path, text) in [
            (
                &self.hgrm,
                hgrm as fn(&stampede_engine::RunResult) -> String,
            ),
            (&self.hlog, hlog),
            (&self.csv, series_csv),
            (&self.targets_csv, targets_csv),
        ] {
            if let Some(p) = path {
                w.file(p, &text(r));
            }
        }
    }
}

/// error and the others are still written; [`Writes::done`] then fails the command.
#[derive(Default)]
pub struct Writes {
    failed: Vec<String>,
}

impl Writes {
    /// Writes `contents` to `path` (`-`: standard output), remembering a failure.
    pub fn file(&mut self, path: &str, contents: &str) {
        if let Err(e) = write_file(path, contents) {
            eprintln!("stampede: {}", e.message);
            self.failed.push(path.to_string());
        }
    }

    /// Fails when any file could not be written, naming them.
    pub fn done(self) -> Result<(), Exit> {
        match self.failed.len() {
            0 => Ok(()),
            _ => Err(Exit::fail(format!(
                "could not write {}; the other outputs were written",
                self.failed.join(", ")
            ))),
        }
    }
}

/// Called before anything is printed: with `--json -` the report goes to standard
/// error so that standard output is the JSON alone.
pub fn claim_stdout(f: &ResultFile) {
    if f.json.as_deref() == Some("-") {
        crate::console::reports_to_stderr();
    }
}

/// Writes the result to `f` if asked.
pub fn write_result(f: &ResultFile, r: &stampede_engine::RunResult) -> Result<(), Exit> {
    match f.json.as_deref() {
        Some("-") => {
            crate::console::out_data(&(r.to_json() + "\n"));
            Ok(())
        }
        Some(p) => write_file(p, &(r.to_json() + "\n")),
        None => Ok(()),
    }
}
