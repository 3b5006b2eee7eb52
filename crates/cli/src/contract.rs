//! One run contract for the dialects (`ab`, `wrk`, `httperf`, `h2load`, `oha`,
//! `hey`): the steps every dialect takes, in this order, written once in [`run`].
//! Parse the command line (refused flags named, inert ones noted), claim standard
//! output for the JSON result when it goes there, read what the flags point at
//! (resolve the target, read the files), translate the flags into a run, apply the
//! segment, execute, report, write the result, warn. A dialect's command line (its
//! arguments, the reading and a pure translation) is a [`CommandLine`] of
//! `stampede_flags`; its [`Tool`] adds what it prints around the run and its report.

use stampede_engine::{LoadSpec, Run, RunResult};
use stampede_flags::CommandLine;
use stampede_report::loud_warnings;

use crate::common::{self, Exit};

/// What one dialect supplies to [`run`] beyond its command line: how it runs and
/// what it prints.
pub trait Tool: CommandLine {
    /// What the run and the report carry from the translation's info to the end
    /// (the info itself for most; wrk's adds its script and the script's watch).
    type State: From<Self::Info>;

    /// Runs `spec` (through `common::execute`), with what the dialect prints
    /// before and after it and how it shows progress.
    fn execute(a: &Self::Args, spec: LoadSpec, state: &mut Self::State) -> Result<Run, Exit>;

    /// The dialect's report and its other outputs (which may take the run's
    /// per-request records).
    fn report(a: &Self::Args, run: &mut Run, state: &mut Self::State) -> Result<(), Exit>;

    /// What comes after the result is written and the warnings given.
    fn finish(_a: &Self::Args, _run: &Run, _state: Self::State) -> Result<(), Exit> {
        Ok(())
    }
}

/// Dialect `T`'s report of a result it did not run itself — the merged result of a
/// fan-out's segments — read with the command line each segment ran: its report's
/// flags and outputs honoured (the per-request outputs have no records to list).
pub fn report_merged<T: Tool>(args: &[String], result: RunResult) -> Result<(), Exit> {
    let (a, _) = T::DIALECT.parse::<T::Args>(args)?;
    let inputs = T::inputs(&a)?;
    let (_, info) = T::translate(&a, inputs)?;
    let mut state = T::State::from(info);
    let mut run = Run {
        result,
        requests: None,
        requests_dropped: 0,
        raw_lost: 0,
    };
    T::report(&a, &mut run, &mut state)
}

/// Runs dialect `T` with `args` (the words after its name).
pub fn run<T: Tool>(args: &[String]) -> Result<(), Exit> {
    let (a, notes) = T::DIALECT.parse::<T::Args>(args)?;
    for n in &notes {
        eprintln!("stampede {}: {n}", T::DIALECT.tool);
    }
    common::claim_stdout(T::result_file(&a));
    T::result_file(&a).check_path()?;
    let inputs = T::inputs(&a)?;
    let (mut spec, info) = T::translate(&a, inputs)?;
    let mut state = T::State::from(info);
    T::segments(&a).apply(&mut spec)?;
    crate::fleet::barrier(T::segments(&a), &mut spec)?;
    let mut run = T::execute(&a, spec, &mut state)?;
    T::report(&a, &mut run, &mut state)?;
    if run.requests_dropped > 0 {
        eprintln!(
            "stampede: the per-request output lists the first {} requests; {} more were measured but not listed (at most {} are kept)",
            run.requests.as_ref().map_or(0, Vec::len),
            run.requests_dropped,
            stampede_engine::MAX_RECORDS
        );
    }
    common::write_result(T::result_file(&a), &run.result)?;
    for w in loud_warnings(&run.result) {
        eprintln!("stampede: {w}");
    }
    T::finish(&a, &run, state)
}
