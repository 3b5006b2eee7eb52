//! `stampede bench [PLAN]` and `stampede compare`: the lab's front end.
//!
//! `bench` loads a plan (or the built-in one), runs it through the lab's runner with a
//! progress view on stderr, prints the comparison table and writes the Markdown (and
//! optionally JSON) report; `compare` sets a bench from the store against an earlier
//! one. Exit codes: 0 every target measured, 1 a target failed or a verification
//! failed (the table says which), 2 bad usage, 3 an assertion failed, 130 interrupted.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, ValueEnum};
use stampede_lab::plan::Plan;
use stampede_lab::record::Outcome;
use stampede_lab::runner::{self, BenchEvent, Observer, Phase};
use stampede_lab::stats::Test;
use stampede_lab::store::Store;
use stampede_lab::summary::{compare_benches, summarize_bench, BenchRecord, BenchSummary};
use stampede_report::{bench_markdown, bench_table, changes_table};

use crate::colour::{paint, Stream};
use crate::common::{self, Exit};

/// The plan `stampede bench` runs when given none.
pub const BUILTIN_PLAN: &str = include_str!("plans/builtin.toml");

/// The built-in plan for a machine of `cpus` CPUs (`ring`: io_uring can be had).
///
/// - Three or more: the load generator pinned to CPU 0 and each server to the others;
///   the reference server with one thread against one a server CPU (its scaling).
/// - Two, with io_uring: the load generator on CPU 0, each server on CPU 1, one
///   thread; the server on epoll against the server on io_uring — two configurations
///   that differ on one core, each measured with a core of its own, so the limit is
///   told in each cell and the comparison means something.
/// - Otherwise they share the machine unpinned, and the description says what the
///   comparison then means.
pub fn builtin_plan(cpus: usize, ring: bool) -> String {
    let one_thread = ("serve-1-thread", " --threads 1");
    let (client, server, first, second, name, description) = if cpus >= 3 {
        let list: Vec<String> = (1..cpus).map(|c| c.to_string()).collect();
        (
            "cpus = [0]".to_string(),
            format!("cpus = [{}]", list.join(", ")),
            one_thread,
            ("serve-all-cores", format!(" --threads {}", cpus - 1)),
            "built-in: reference server, 1 thread vs all cores",
            format!(
                "The load generator runs on CPU 0 and each server on CPUs 1-{}: the all-cores server has {} threads on cores of its own, so the comparison is the server's scaling from one thread to {}.",
                cpus - 1,
                cpus - 1,
                cpus - 1
            ),
        )
    } else if cpus == 2 && ring {
        (
            "cpus = [0]".to_string(),
            "cpus = [1]".to_string(),
            ("serve-epoll", " --threads 1 --io epoll"),
            ("serve-io_uring", " --threads 1 --io io_uring".to_string()),
            "built-in: reference server on epoll vs io_uring, one core each",
            "This machine has 2 CPUs: the load generator runs on CPU 0 and each server on CPU 1 with one thread, so neither takes the other's core and each cell says which side set the pace. The two servers differ in the kernel interface their connections use, epoll or io_uring; on three or more CPUs this plan compares one thread against all cores instead.".to_string(),
        )
    } else {
        (
            String::new(),
            String::new(),
            one_thread,
            ("serve-all-cores", String::new()),
            "built-in: reference server, 1 thread vs all cores",
            format!(
                "This machine has {cpus} CPU{}: the load generator and the servers share {}, unpinned. The all-cores server's threads compete with the load generator for the same cores, so it is not expected to beat the one-thread server here; the table compares two configurations on a shared machine, not how the server scales. On three or more CPUs this plan pins them apart.",
                if cpus == 1 { "" } else { "s" },
                if cpus == 1 { "it" } else { "them" }
            ),
        )
    };
    BUILTIN_PLAN
        .replace("# @client-cpus@", &client)
        .replace("# @server-cpus@", &server)
        .replace("@name@", name)
        .replace("@first@", first.0)
        .replace("@first-args@", first.1)
        .replace("@second@", second.0)
        .replace("@second-args@", &second.1)
        .replace("@description@", &description)
}

/// The built-in plan for this machine.
fn this_machines_plan() -> String {
    let cpus = stampede_lab::preflight::allowed_cpus().len();
    builtin_plan(cpus, stampede_ring::probe().is_ok())
}

/// The statistical test behind verdicts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TestArg {
    /// Welch's unequal-variance t-test.
    Welch,
    /// Mann-Whitney U (rank-based, no normality assumed).
    MannWhitney,
}

impl From<TestArg> for Test {
    fn from(t: TestArg) -> Test {
        match t {
            TestArg::Welch => Test::Welch,
            TestArg::MannWhitney => Test::MannWhitney,
        }
    }
}

/// Arguments of `stampede bench`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// A plan file (TOML, `stampede help plans`); without one, the built-in plan runs the
    /// reference server in two configurations
    #[arg(value_name = "PLAN")]
    pub plan: Option<PathBuf>,
    /// The result store (SQLite)
    #[arg(
        help_heading = "Outputs",
        long = "db",
        value_name = "FILE",
        default_value = "stampede.db"
    )]
    pub db: PathBuf,
    /// Write the Markdown report here (default: stampede-report-ID.md beside the
    /// store, ID the bench's, so that no bench's report overwrites another's)
    #[arg(help_heading = "Outputs", long = "report", value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Also write the summary as JSON ('-' for standard output)
    #[arg(help_heading = "Outputs", long = "json", value_name = "FILE")]
    pub json: Option<String>,
    #[command(flatten, next_help_heading = "Comparison")]
    pub verdicts: VerdictArgs,
    /// Print the built-in plan and exit (a starting point for your own)
    #[arg(help_heading = "The plan", long = "print-plan")]
    pub print_plan: bool,
    /// Check the plan and exit without running it
    #[arg(help_heading = "The plan", long = "check")]
    pub check: bool,
    /// Also write a self-contained HTML report
    #[arg(help_heading = "Outputs", long = "html", value_name = "FILE")]
    pub html: Option<String>,
    /// Write the plan's assertions (checked on every measured run) as JUnit XML
    #[arg(help_heading = "Outputs", long = "junit", value_name = "FILE")]
    pub junit: Option<String>,
    /// Run the plan scaled down, in about a minute: no warm-up, one measured run, each
    /// run at most 5,000 requests or 1 s, timeouts at most 5 s (connection counts,
    /// rates, bursts and injection forms kept); its bench is named "PLAN (quick)"
    #[arg(long = "quick")]
    pub quick: bool,
    /// No progress on stderr
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
}

/// Arguments of `stampede compare`.
#[derive(Args, Debug)]
pub struct CompareArgs {
    /// The earlier bench id (default: the previous complete bench of the same plan)
    #[arg(value_name = "BEFORE")]
    pub before: Option<i64>,
    /// The later bench id (default: the latest)
    #[arg(value_name = "AFTER")]
    pub after: Option<i64>,
    /// The result store
    #[arg(long = "db", value_name = "FILE", default_value = "stampede.db")]
    pub db: PathBuf,
    #[command(flatten)]
    pub verdicts: VerdictArgs,
    /// List the benches in the store instead
    #[arg(long = "list")]
    pub list: bool,
    /// Compare the benches on either side of the latest change `stampede history`
    /// finds (of SCENARIO, or of any scenario)
    #[arg(
        long = "change",
        value_name = "SCENARIO",
        num_args = 0..=1,
        default_missing_value = "",
        conflicts_with_all = ["before", "after", "list"]
    )]
    pub change: Option<String>,
}

/// Arguments of `stampede history`.
#[derive(Args, Debug)]
pub struct HistoryArgs {
    /// Only this scenario
    #[arg(value_name = "SCENARIO")]
    pub scenario: Option<String>,
    /// Only this target
    #[arg(long = "target", value_name = "NAME")]
    pub target: Option<String>,
    /// The result store
    #[arg(long = "db", value_name = "FILE", default_value = "stampede.db")]
    pub db: PathBuf,
    /// Also write the history as an HTML page with a chart per series
    #[arg(long = "html", value_name = "FILE")]
    pub html: Option<String>,
    /// Also write the history as JSON ('-': standard output, instead of the listing)
    #[arg(long = "json", value_name = "FILE")]
    pub json: Option<String>,
}

/// The store's series, filtered as asked.
fn series(
    store: &Store,
    scenario: Option<&str>,
    target: Option<&str>,
) -> Result<Vec<stampede_lab::history::Series>, Exit> {
    let mut all =
        stampede_lab::history::history(store, scenario).map_err(|e| Exit::fail(e.to_string()))?;
    all.retain(|s| target.is_none_or(|t| t == s.target));
    Ok(all)
}

/// `stampede history`.
pub fn history(a: HistoryArgs) -> Result<(), Exit> {
    let store = existing_store(&a.db)?;
    let all = series(&store, a.scenario.as_deref(), a.target.as_deref())?;
    if let (Some(sc), true) = (&a.scenario, all.is_empty()) {
        return Err(Exit::usage(format!(
            "no complete bench in {} measured scenario {sc:?}",
            a.db.display()
        )));
    }
    if let Some(p) = &a.html {
        let title = match &a.scenario {
            Some(s) => format!("History of {s}"),
            None => "History".to_string(),
        };
        common::write_file(p, &stampede_report::history_html(&all, &title))?;
    }
    let json = serde_json::to_string_pretty(&all).expect("history serialises") + "\n";
    match a.json.as_deref() {
        Some("-") => common::out(&json),
        Some(p) => {
            common::write_file(p, &json)?;
            common::out(&stampede_report::history_text(&all));
        }
        None => common::out(&stampede_report::history_text(&all)),
    }
    Ok(())
}

/// How verdicts are reached: shared by bench, compare and report.
#[derive(Args, Debug)]
pub struct VerdictArgs {
    /// Ratios within this many percent count as no difference
    #[arg(long = "noise", value_name = "PCT", default_value_t = 5.0)]
    pub noise: f64,
    /// Statistical test for verdicts
    #[arg(long = "test", value_enum, default_value = "welch")]
    pub test: TestArg,
}

impl VerdictArgs {
    /// The noise threshold as a fraction, and the test.
    pub(crate) fn get(&self) -> Result<(f64, Test), Exit> {
        if !(0.0..100.0).contains(&self.noise) {
            return Err(Exit::usage(format!(
                "--noise: {} is not a percentage from 0 to 100",
                self.noise
            )));
        }
        Ok((self.noise / 100.0, self.test.into()))
    }
}

fn open_store(db: &Path) -> Result<Store, Exit> {
    Store::open(db).map_err(|e| Exit::fail(e.to_string()))
}

/// A store that must already hold benches (compare, report, history): a missing one is
/// named, never created empty.
pub(crate) fn existing_store(db: &Path) -> Result<Store, Exit> {
    if !db.exists() {
        return Err(Exit::fail(format!(
            "{} does not exist: run a bench first, or name the store with --db",
            db.display()
        )));
    }
    open_store(db)
}

/// Long on purpose: the command's steps in the order they happen (plan, checks, store, run,
/// outputs, exit code).
pub fn main(a: BenchArgs) -> Result<(), Exit> {
    if a.print_plan {
        common::out(&this_machines_plan());
        return Ok(());
    }
    let (noise, test) = a.verdicts.get()?;
    let plan = match &a.plan {
        Some(p) => Plan::load(p).map_err(|e| Exit::usage(e.to_string()))?,
        None => Plan::parse(&this_machines_plan(), "(built-in plan)")
            .map_err(|e| Exit::fail(e.to_string()))?,
    };
    let plan = if a.quick { plan.quick() } else { plan };
    let file = a
        .plan
        .as_ref()
        .map_or("(built-in plan)".to_string(), |p| p.display().to_string());
    let problems = stampede_lab::preflight::check(&plan, &file);
    if !problems.is_empty() {
        let lines: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
        return Err(Exit::usage(format!(
            "the plan cannot run on this machine:\n  {}",
            lines.join("\n  ")
        )));
    }
    if a.check {
        common::out(&format!(
            "{}: {} targets, {} scenarios, {} warm-up + {} measured runs each\n",
            plan.name,
            plan.targets.len(),
            plan.scenarios.len(),
            plan.runs.warmup,
            match plan.runs.auto {
                Some(a) => format!(
                    "{}–{} (auto: until ± {:.1} % or a settled difference)",
                    a.min,
                    a.max,
                    a.precision * 100.0
                ),
                None => plan.runs.repetitions.to_string(),
            }
        ));
        return Ok(());
    }
    let store = open_store(&a.db)?;
    let stampede = std::env::current_exe()
        .map_err(|e| Exit::fail(format!("cannot find the stampede executable: {e}")))?;
    common::install_sigint();
    let opts = runner::Options {
        stampede,
        interrupted: common::interrupted,
    };
    let mut progress = Progress::new(a.quiet);
    let out = runner::run_bench(&plan, &store, &opts, &mut progress)
        .map_err(|e| Exit::fail(e.to_string()))?;
    progress.clear();
    let scenarios: Vec<String> = plan.scenarios.iter().map(|s| s.name.clone()).collect();
    let record = BenchRecord {
        bench_id: out.bench_id,
        plan: &out.plan,
        environment: &serde_json::to_value(&out.environment).unwrap_or_default(),
        machine: &out.environment.one_line(),
        targets: &out.targets,
        scenarios: &scenarios,
        verifications: &out.verifications,
        runs: &out.runs,
        assertions: &out.assertions,
        notes: &out.notes,
        interrupted: out.interrupted,
    };
    let mut summary = summarize_bench(&record, noise, test);
    summary.description = plan.description.clone();
    let report = a
        .report
        .clone()
        .unwrap_or_else(|| default_report(&a.db, out.bench_id));
    write_outputs(&summary, &a, &report)?;
    if let Some(p) = &a.html {
        common::write_file(p, &stampede_report::bench_html(&summary, &out.runs))?;
    }
    let db = a.db.display();
    let db_flag = match a.db.as_os_str() == "stampede.db" {
        true => String::new(),
        false => format!(" --db {db}"),
    };
    eprintln!(
        "stampede: {} measured runs stored in {db} (bench {}); the Markdown report is {}
stampede: the HTML report, with the charts and every run: stampede report {}{db_flag} -o bench-{}.html",
        out.runs.len(),
        out.bench_id,
        report.display(),
        out.bench_id,
        out.bench_id
    );
    if out.interrupted {
        return Err(Exit {
            code: 130,
            message: "interrupted; the finished runs are stored".into(),
        });
    }
    if let Some(path) = &a.junit {
        let cases: Vec<stampede_report::JunitCase> = out
            .assertions
            .iter()
            .map(|x| stampede_report::JunitCase {
                class: format!("{}.{}", x.target, x.scenario),
                name: format!("{} (run {})", x.checked.assertion, x.repetition),
                failure: (!x.checked.passed)
                    .then(|| format!("{}: measured {}", x.checked.assertion, x.checked.actual)),
            })
            .collect();
        common::write_file(path, &stampede_report::junit(&out.plan, &cases))?;
    }
    let failed_targets = out.targets.iter().filter(|t| !t.ok).count();
    // A target the plan expects verification to refuse counts the other way round.
    let refused = |name: &str| {
        plan.targets
            .iter()
            .any(|t| t.name == name && t.expect_refused)
    };
    let failed_checks = out
        .verifications
        .iter()
        .filter(|v| v.outcome == Outcome::Fail && !refused(&v.target))
        .count();
    let expected: Vec<&str> = out
        .verifications
        .iter()
        .filter(|v| refused(&v.target))
        .map(|v| v.target.as_str())
        .collect();
    let unexpected: Vec<String> = out
        .verifications
        .iter()
        .filter(|v| refused(&v.target) && v.outcome != Outcome::Fail)
        .map(|v| format!("{} on {}", v.target, v.scenario))
        .collect();
    if !expected.is_empty() && unexpected.is_empty() {
        eprintln!(
            "stampede: {} verification(s) refused a target the plan expects to be refused, as expected",
            expected.len()
        );
    }
    if !unexpected.is_empty() {
        return Err(Exit::fail(format!(
            "verification passed where the plan expects it to refuse (expect = \"refused\"): {}",
            unexpected.join(", ")
        )));
    }
    if failed_targets + failed_checks > 0 {
        return Err(Exit::fail(format!(
            "{failed_targets} target(s) failed and {failed_checks} verification(s) failed; see the table above"
        )));
    }
    let failed_asserts = out.assertions.iter().filter(|x| !x.checked.passed).count();
    if failed_asserts > 0 {
        return Err(Exit {
            code: common::EXIT_ASSERT,
            message: format!(
                "{failed_asserts} of {} assertion checks failed; see the table above",
                out.assertions.len()
            ),
        });
    }
    Ok(())
}

/// Where a bench's Markdown report goes when `--report` is not given: beside the
/// store, named by the bench's id.
fn default_report(db: &std::path::Path, bench_id: i64) -> PathBuf {
    let name = format!("stampede-report-{bench_id}.md");
    match db.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) => dir.join(name),
        None => PathBuf::from(name),
    }
}

fn write_outputs(s: &BenchSummary, a: &BenchArgs, report: &std::path::Path) -> Result<(), Exit> {
    let json = serde_json::to_string_pretty(s).expect("the summary serialises") + "\n";
    if a.json.as_deref() == Some("-") {
        common::out(&json);
    } else {
        common::out(&paint(&bench_table(s), Stream::Out));
        if let Some(p) = &a.json {
            common::write_file(p, &json)?;
        }
    }
    common::write_file(&report.display().to_string(), &bench_markdown(s))
}

pub fn compare(a: CompareArgs) -> Result<(), Exit> {
    let (noise, test) = a.verdicts.get()?;
    let store = existing_store(&a.db)?;
    let benches = store.benches().map_err(|e| Exit::fail(e.to_string()))?;
    if a.list {
        let mut out =
            String::from("bench  started                        runs  ended        plan\n");
        for b in &benches {
            let runs = store
                .runs(b.id)
                .map_err(|e| Exit::fail(e.to_string()))?
                .len();
            out += &format!(
                "{:>5}  {}  {:>4}  {:<11}  {}\n",
                b.id,
                stampede_server::date::http_date(b.started_unix_ms / 1000),
                runs,
                // Never ended: still running, or killed before it could say.
                b.ended.as_deref().unwrap_or("unfinished"),
                b.plan_name
            );
        }
        common::out(&out);
        return Ok(());
    }
    let ids: Vec<i64> = benches.iter().map(|b| b.id).collect();
    if let Some(sc) = &a.change {
        let scenario = (!sc.is_empty()).then_some(sc.as_str());
        let all = series(&store, scenario, None)?;
        let latest = all
            .iter()
            .flat_map(|s| s.changes.iter().map(move |c| (c, s)))
            .max_by_key(|(c, _)| c.after_bench);
        let Some((c, s)) = latest else {
            return Err(Exit::fail(format!(
                "stampede history finds no change in {}{}",
                a.db.display(),
                scenario.map_or(String::new(), |s| format!(" for scenario {s:?}"))
            )));
        };
        common::out(&format!(
            "The latest change: {} / {}, {}\n\n",
            s.scenario,
            s.target,
            stampede_report::history::change_line(c, s.metric)
        ));
        let runs = |id| store.runs(id).map_err(|e| Exit::fail(e.to_string()));
        let changes = compare_benches(&runs(c.before_bench)?, &runs(c.after_bench)?, noise, test);
        common::out(&paint(
            &changes_table(c.before_bench, c.after_bench, &changes),
            Stream::Out,
        ));
        return Ok(());
    }
    let after = match a.after {
        Some(id) => id,
        None => match (a.before, ids.first()) {
            // One id given: compare it with the latest.
            (Some(_), Some(&latest)) => latest,
            (None, Some(&latest)) => latest,
            _ => return Err(Exit::fail(format!("{} holds no bench", a.db.display()))),
        },
    };
    let before = match a.before {
        Some(id) => id,
        None => {
            // The previous bench of the same plan that ran to its end: another plan's
            // scenarios would have nothing in common with this one.
            let plan = benches.iter().find(|b| b.id == after).map(|b| &b.plan_name);
            benches
                .iter()
                .find(|b| {
                    b.id < after && Some(&b.plan_name) == plan && b.ended.as_deref() == Some("complete")
                })
                .map(|b| b.id)
                .ok_or_else(|| {
                    Exit::fail(format!(
                        "{} holds no complete bench of plan {:?} before bench {after} to compare with (stampede compare --list shows them; give both ids to compare others)",
                        a.db.display(),
                        plan.map_or("", |p| p.as_str())
                    ))
                })?
        }
    };
    for id in [before, after] {
        if !ids.contains(&id) {
            return Err(Exit::usage(format!(
                "bench {id} is not in {} (stampede compare --list shows them)",
                a.db.display()
            )));
        }
    }
    let runs = |id| store.runs(id).map_err(|e| Exit::fail(e.to_string()));
    let changes = compare_benches(&runs(before)?, &runs(after)?, noise, test);
    common::out(&paint(&changes_table(before, after, &changes), Stream::Out));
    Ok(())
}

/// The progress view: a line per event, and while a run goes a live line with its
/// request rate (on a terminal).
struct Progress {
    quiet: bool,
    tty: bool,
    live: Option<(Arc<AtomicBool>, std::thread::JoinHandle<()>)>,
}

impl Progress {
    fn new(quiet: bool) -> Progress {
        Progress {
            quiet,
            tty: std::io::stderr().is_terminal(),
            live: None,
        }
    }

    fn clear(&mut self) {
        if let Some((stop, h)) = self.live.take() {
            stop.store(true, Ordering::Relaxed);
            let _ = h.join();
        }
    }
}

fn phase_name(p: Phase) -> String {
    match p {
        Phase::Warmup(k, n) => format!("warm-up {k}/{n}"),
        Phase::Measured(k, n) => format!("run {k}/{n}"),
        Phase::Step {
            run,
            runs,
            step,
            rate,
            per,
            warmup,
        } => format!(
            "run {run}/{runs} search step {step} at {} {}{}",
            stampede_report::units::thousands(rate),
            per.unit(),
            if warmup { " (warm-up)" } else { "" }
        ),
    }
}

impl Observer for Progress {
    fn event(&mut self, e: BenchEvent<'_>) {
        if self.quiet {
            return;
        }
        match e {
            BenchEvent::TargetStarting { target } => eprintln!("[{target}] starting"),
            BenchEvent::TargetReady {
                target,
                url,
                version,
            } => eprintln!(
                "[{target}] ready at {url}{}",
                version.map(|v| format!(" ({v})")).unwrap_or_default()
            ),
            BenchEvent::TargetFailed { target, reason } => eprintln!("[{target}] FAILED: {reason}"),
            BenchEvent::Verified {
                target,
                scenario,
                outcome,
            } => {
                if outcome.outcome != Outcome::Pass {
                    eprintln!(
                        "[{target}] {scenario}: verification {}: {}",
                        if outcome.outcome == Outcome::Fail {
                            "FAILED, not measured"
                        } else {
                            "warned"
                        },
                        outcome.failures.join("; ")
                    );
                }
            }
            BenchEvent::RunStarted {
                target,
                scenario,
                phase,
                control,
            } => {
                self.clear();
                if !self.tty {
                    return;
                }
                let stop = Arc::new(AtomicBool::new(false));
                let (control, stop2) = (control.clone(), stop.clone());
                let label = format!("[{target}] {scenario}: {}", phase_name(phase));
                let h = std::thread::spawn(move || {
                    let bar = indicatif::ProgressBar::new_spinner();
                    bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
                    let mut last = (std::time::Instant::now(), 0u64);
                    while !stop2.load(Ordering::Relaxed) {
                        std::thread::sleep(Duration::from_millis(250));
                        let done = control.completed.load(Ordering::Relaxed);
                        let now = std::time::Instant::now();
                        let rate = (done - last.1) as f64 / (now - last.0).as_secs_f64();
                        last = (now, done);
                        bar.set_message(format!("{label}  {rate:.0} req/s, {done} done"));
                        bar.tick();
                    }
                    bar.finish_and_clear();
                });
                self.live = Some((stop, h));
            }
            BenchEvent::RunFinished {
                target,
                scenario,
                phase,
                rps,
                failed,
                non_2xx,
            } => {
                self.clear();
                if matches!(phase, Phase::Step { warmup: true, .. }) {
                    return;
                }
                let mut flags = String::new();
                if failed > 0 {
                    flags += &format!(", {failed} failed");
                }
                if non_2xx > 0 {
                    flags += &format!(", {non_2xx} non-2xx");
                }
                match phase {
                    Phase::Step { .. } => eprintln!(
                        "[{target}] {scenario}: {}: {} answered{flags}",
                        phase_name(phase),
                        stampede_report::units::thousands(rps.round() as u64)
                    ),
                    _ => eprintln!(
                        "[{target}] {scenario}: {} {rps:.0} req/s{flags}",
                        phase_name(phase)
                    ),
                }
            }
            BenchEvent::Searched {
                target,
                scenario,
                run,
                capacity,
            } => eprintln!(
                "[{target}] {scenario}: run {run} capacity: {}",
                stampede_report::capacity_line(capacity)
            ),
        }
    }
}

#[cfg(test)]
mod tests;
