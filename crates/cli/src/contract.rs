//! One run contract for the dialects (`ab`, `wrk`, `httperf`, `h2load`, `oha`,
//! `hey`): the steps every dialect takes, in this order, written once in [`run`].
//! Parse the command line (refused flags named, inert ones noted), claim standard
//! output for the JSON result when it goes there, read what the flags point at
//! (resolve the target, read the files), translate the flags into a run, apply the
//! segment, execute, report, write the result, warn. A dialect ([`Tool`]) supplies its
//! arguments, the reading, a pure translation (no name resolved and no file read
//! inside it, so that each flag's meaning is tested without a network), what it
//! prints around the run and its report.

use stampede_engine::{LoadSpec, Run};
use stampede_report::loud_warnings;

use crate::common::{Exit, ResultFile, SegmentArgs};
use crate::dialect::Dialect;

/// What one dialect supplies to [`run`].
pub trait Tool {
    /// The dialect's arguments, as clap parses them.
    type Args: clap::CommandFactory + clap::FromArgMatches;
    /// What the flags point at, read before translating: the resolved target, files.
    type Inputs;
    /// What the report needs besides the result, carried from the translation
    /// through the run to the report.
    type Info;

    /// The dialect's command line: its refusals and inert flags.
    const DIALECT: &'static Dialect;

    /// Where the result's JSON goes (`--json`).
    fn result_file(a: &Self::Args) -> &ResultFile;

    /// The share of a run this process takes (`--segment`, `--start-at`).
    fn segments(a: &Self::Args) -> &SegmentArgs;

    /// Resolves the target and reads the files the flags name.
    fn inputs(a: &Self::Args) -> Result<Self::Inputs, Exit>;

    /// The run the flags ask for. Pure: it resolves no name and reads no file.
    fn translate(a: &Self::Args, inputs: Self::Inputs) -> Result<(LoadSpec, Self::Info), Exit>;

    /// Runs `spec` (through `common::execute`), with what the dialect prints
    /// before and after it and how it shows progress.
    fn execute(a: &Self::Args, spec: LoadSpec, info: &mut Self::Info) -> Result<Run, Exit>;

    /// The dialect's report and its other outputs (which may take the run's
    /// per-request records).
    fn report(a: &Self::Args, run: &mut Run, info: &mut Self::Info) -> Result<(), Exit>;

    /// What comes after the result is written and the warnings given.
    fn finish(_a: &Self::Args, _run: &Run, _info: Self::Info) -> Result<(), Exit> {
        Ok(())
    }
}

/// Runs dialect `T` with `args` (the words after its name).
pub fn run<T: Tool>(args: &[String]) -> Result<(), Exit> {
    let (a, notes) = T::DIALECT.parse::<T::Args>(args)?;
    for n in &notes {
        eprintln!("stampede {}: {n}", T::DIALECT.tool);
    }
    T::result_file(&a).claim_stdout();
    T::result_file(&a).check_path()?;
    let inputs = T::inputs(&a)?;
    let (mut spec, mut info) = T::translate(&a, inputs)?;
    T::segments(&a).apply(&mut spec)?;
    let mut run = T::execute(&a, spec, &mut info)?;
    T::report(&a, &mut run, &mut info)?;
    if run.requests_dropped > 0 {
        eprintln!(
            "stampede: the per-request output lists the first {} requests; {} more were measured but not listed (at most {} are kept)",
            run.requests.as_ref().map_or(0, Vec::len),
            run.requests_dropped,
            stampede_engine::MAX_RECORDS
        );
    }
    T::result_file(&a).write(&run.result)?;
    for w in loud_warnings(&run.result) {
        eprintln!("stampede: {w}");
    }
    T::finish(&a, &run, info)
}
