//! `stampede vegeta`: `attack` runs and writes its results; `report`, `encode` and
//! `plot` read them; the flags of each are [`stampede_flags::vegeta`]'s.

use stampede_engine::input::{self, Input};
use stampede_engine::merge::Merger;
use stampede_engine::{LoadSpec, Run, RunResult};
use stampede_report::vegeta::{vegeta_hdrplot, vegeta_hist, vegeta_json, vegeta_text};

use crate::common::{self, Exit, ProgressOptions};
use crate::contract::{self, Tool};
use stampede_flags::vegeta::*;

/// The commands, for `stampede help vegeta` and the usage error.
const COMMANDS: &str = "attack, report, encode, plot";

pub fn main(args: &[String]) -> Result<(), Exit> {
    let rest = args.get(1..).unwrap_or_default();
    match args.first().map(String::as_str) {
        Some("attack") => contract::run::<Attack>(rest),
        Some("report") => report(rest),
        Some("encode") => encode(rest),
        Some("plot") => plot(rest),
        Some("-h" | "--help" | "help") => {
            common::out(&help());
            Ok(())
        }
        Some(other) => Err(Exit::usage(format!(
            "vegeta {other}: not a command of vegeta here; give one of {COMMANDS} (`stampede help vegeta`)"
        ))),
        None => Err(Exit::usage(format!(
            "vegeta: give a command, one of {COMMANDS}, e.g. stampede vegeta attack -rate 100/s -duration 10s -targets t.txt | stampede vegeta report"
        ))),
    }
}

/// `stampede help vegeta`: each command's flags.
pub fn help() -> String {
    [
        ATTACK.help::<AttackArgs>(),
        REPORT.help::<ReportArgs>(),
        ENCODE.help::<EncodeArgs>(),
        PLOT.help::<PlotArgs>(),
    ]
    .join("\n")
}

impl Tool for Attack {
    type State = Self::Info;

    fn execute(a: &AttackArgs, spec: LoadSpec, servers: &mut Servers) -> Result<Run, Exit> {
        if servers.is_empty() {
            return common::execute(spec, ProgressOptions::default());
        }
        let parts = (spec.split(std::mem::take(servers)))
            .map_err(|e| Exit::usage(format!("-targets {}: {e}", a.targets)))?;
        common::execute_parts(&parts, ProgressOptions::default(), None)
    }

    fn report(a: &AttackArgs, run: &mut Run, _info: &mut Servers) -> Result<(), Exit> {
        let json = run.result.to_json() + "\n";
        match a.output.as_str() {
            "stdout" | "-" => crate::console::out_data(&json),
            path => common::write_file(path, &json)?,
        }
        Ok(())
    }
}

/// Hands `each` the results in `files` (standard input when none), each file holding
/// one or more, one at a time: one file is in memory at once (at most 1 GiB), never
/// all of them.
fn for_each_result(
    files: &[String],
    mut each: impl FnMut(RunResult) -> Result<(), Exit>,
) -> Result<(), Exit> {
    let stdin = ["-".to_string()];
    let files = if files.is_empty() { &stdin[..] } else { files };
    let mut seen = 0;
    for f in files {
        let path = if f == "stdin" { "-" } else { f.as_str() };
        let bytes =
            input::read(path, "results", Input::Result).map_err(|e| Exit::usage(e.to_string()))?;
        let name = if path == "-" {
            "standard input"
        } else {
            f.as_str()
        };
        for r in serde_json::Deserializer::from_slice(&bytes).into_iter::<RunResult>() {
            each(r.map_err(|e| {
                Exit::usage(format!(
                    "{name}: not the results of stampede vegeta attack ({e})"
                ))
            })?)?;
            seen += 1;
        }
    }
    if seen == 0 {
        return Err(Exit::usage(
            "no results to read; pipe an attack in: stampede vegeta attack … | stampede vegeta report",
        ));
    }
    Ok(())
}

/// The results merged into one (histograms added, counts summed), added as read.
fn merged(files: &[String]) -> Result<RunResult, Exit> {
    let mut m = Merger::new(true);
    for_each_result(files, |r| m.add(&r).map_err(|e| Exit::usage(e.to_string())))?;
    m.finish().map_err(|e| Exit::usage(e.to_string()))
}

/// Writes `text` to `-output`'s file or standard output.
fn emit(output: &str, text: &str) -> Result<(), Exit> {
    match output {
        "stdout" | "-" => {
            crate::console::out_data(text);
            Ok(())
        }
        path => common::write_file(path, text),
    }
}

/// `vegeta report`.
fn report(args: &[String]) -> Result<(), Exit> {
    let (a, notes) = REPORT.parse::<ReportArgs>(args)?;
    for n in notes {
        eprintln!("stampede vegeta: {n}");
    }
    let buckets =
        |spec: &str| parse_buckets(spec).map_err(|e| Exit::usage(format!("-type=hist: {e}")));
    let kind = a.kind.as_str();
    // The bounds are checked before any result is read.
    let bounds = match kind.strip_prefix("hist") {
        Some("") => match &a.buckets {
            Some(b) => Some(buckets(b)?),
            None => {
                return Err(Exit::usage(
                    "-type=hist: give the buckets, e.g. -type='hist[0,1ms,10ms]' or -buckets '[0,1ms,10ms]'",
                ))
            }
        },
        Some(spec) => Some(buckets(spec)?),
        None => None,
    };
    if bounds.is_none() && !matches!(kind, "text" | "json" | "hdrplot") {
        return Err(Exit::usage(format!(
            "-type {kind}: reports are text, json, hist[BUCKETS] and hdrplot"
        )));
    }
    let r = merged(&a.io.files)?;
    let text = match (kind, bounds) {
        (_, Some(b)) => vegeta_hist(&r, &b),
        ("json", None) => vegeta_json(&r),
        ("hdrplot", None) => vegeta_hdrplot(&r),
        _ => vegeta_text(&r),
    };
    emit(&a.io.output, &text)
}

/// `vegeta encode`.
fn encode(args: &[String]) -> Result<(), Exit> {
    let (a, _) = ENCODE.parse::<EncodeArgs>(args)?;
    let to = a.to.as_str();
    if to == "gob" {
        return Err(Exit::usage(
            "-to gob: Go's own encoding is not written here; use -to json (the results) or -to csv (per second)",
        ));
    }
    if !matches!(to, "json" | "csv") {
        return Err(Exit::usage(format!("-to {to}: encodings are json and csv")));
    }
    // Each result written as it is read: the output never holds them all.
    let mut file = match a.io.output.as_str() {
        "stdout" | "-" => None,
        path => Some((
            path,
            std::fs::File::create(path).map_err(|e| Exit::fail(format!("-output {path}: {e}")))?,
        )),
    };
    for_each_result(&a.io.files, |r| {
        let text = match to {
            "json" => r.to_json() + "\n",
            _ => stampede_report::series_csv(&r),
        };
        match &mut file {
            None => crate::console::out_data(&text),
            Some((path, f)) => {
                use std::io::Write as _;
                f.write_all(text.as_bytes())
                    .map_err(|e| Exit::fail(format!("-output {path}: {e}")))?;
            }
        }
        Ok(())
    })
}

/// `vegeta plot`.
fn plot(args: &[String]) -> Result<(), Exit> {
    let (a, notes) = PLOT.parse::<PlotArgs>(args)?;
    for n in notes {
        eprintln!("stampede vegeta: {n}");
    }
    let r = merged(&a.io.files)?;
    emit(&a.io.output, &stampede_report::run_html(&r, &a.title, None))
}
