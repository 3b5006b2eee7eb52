//! `stampede artillery run SCRIPT.yml`: an Artillery 2 test script run as it is
//! ([`stampede_journey::artillery`] reads it into a journey file and injection
//! steps), its users arriving as its phases say, each on a connection of its own;
//! Artillery's summary report printed at the end and its JSON report written with
//! `--output`.

use clap::{Args, Parser, Subcommand};
use hdrhistogram::Histogram;
use stampede_engine::inject::Profile;
use stampede_engine::request::RequestBuilder;
use stampede_engine::{Hist, LiveSecond, LoadSpec, RunResult, Shape, Target};
use stampede_journey::artillery::{read_file, Script};
use stampede_journey::run::{JourneyFigures, JourneyRun, LiveJourneys};
use stampede_report::artillery::{
    artillery_json, artillery_period, artillery_phase, artillery_summary, Metrics, Summary,
};

use crate::common::{self, Exit, ProgressOptions};

/// Artillery's exit status when an expectation failed.
const EXIT_EXPECT: i32 = 21;

#[derive(Parser, Debug)]
#[command(
    name = "stampede artillery",
    about = "Artillery 2's test scripts, run as they are"
)]
struct ArtilleryCli {
    #[command(subcommand)]
    command: ArtilleryCommand,
}

#[derive(Subcommand, Debug)]
enum ArtilleryCommand {
    /// Run a test script: stampede artillery run script.yml
    Run(RunArgs),
}

#[derive(Args, Debug)]
struct RunArgs {
    /// The test script (YAML)
    #[arg(value_name = "SCRIPT")]
    script: String,
    /// Write the JSON report to FILE
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<String>,
    /// The target's URL, instead of config.target
    #[arg(short = 't', long = "target", value_name = "URL")]
    target: Option<String>,
    /// No phase lines or report every ten seconds while it runs
    #[arg(short = 'q', long = "quiet")]
    quiet: bool,
    /// Take the server's certificate unchecked
    #[arg(short = 'k', long = "insecure")]
    insecure: bool,
    /// Write the journey file the script became to FILE and run nothing (to run it with
    /// stampede load --journey and its other workload models)
    #[arg(long = "journey-out", value_name = "FILE")]
    journey_out: Option<String>,
    /// (Artillery's environments: refused, give --target)
    #[arg(short = 'e', long = "environment", value_name = "NAME", hide = true)]
    environment: Option<String>,
    /// (Artillery's overrides: refused, edit the script)
    #[arg(long = "overrides", value_name = "JSON", hide = true)]
    overrides: Option<String>,
    /// (Artillery's variables: refused, put them in config.variables)
    #[arg(short = 'v', long = "variables", value_name = "JSON", hide = true)]
    variables: Option<String>,
    /// (Artillery's dotenv: refused, set the environment before the run)
    #[arg(long = "dotenv", value_name = "FILE", hide = true)]
    dotenv: Option<String>,
}

/// `stampede artillery …` with the words after `artillery`.
pub fn main(args: &[String]) -> Result<(), Exit> {
    let words = std::iter::once("stampede artillery".to_string()).chain(args.iter().cloned());
    let cli = match ArtilleryCli::try_parse_from(words) {
        Ok(c) => c,
        Err(e) => {
            return Err(match e.use_stderr() {
                true => Exit::usage(e.to_string().trim_start_matches("error: ").trim_end()),
                false => Exit {
                    code: 0,
                    message: e.to_string(),
                },
            })
        }
    };
    let ArtilleryCommand::Run(a) = cli.command;
    for (flag, given, instead) in [
        (
            "--environment",
            a.environment.is_some(),
            "give the environment's target with --target",
        ),
        ("--overrides", a.overrides.is_some(), "edit the script"),
        (
            "--variables",
            a.variables.is_some(),
            "put them in config.variables",
        ),
        (
            "--dotenv",
            a.dotenv.is_some(),
            "set the environment before the run",
        ),
    ] {
        if given {
            return Err(Exit::usage(format!(
                "artillery run {flag}: not taken by stampede; {instead}"
            )));
        }
    }
    run(a)
}

fn run(a: RunArgs) -> Result<(), Exit> {
    let script = read_file(&a.script).map_err(Exit::usage)?;
    if let Some(path) = &a.journey_out {
        std::fs::write(path, &script.toml)
            .map_err(|e| Exit::fail(format!("--journey-out {path}: cannot be written: {e}")))?;
        if let Some((name, csv)) = &script.payload {
            // The payload with its fields as a header row, where the journey reads it.
            let beside = std::path::Path::new(path)
                .parent()
                .unwrap_or(std::path::Path::new("."))
                .join(name);
            std::fs::write(&beside, csv).map_err(|e| {
                Exit::fail(format!(
                    "--journey-out: {}: cannot be written: {e}",
                    beside.display()
                ))
            })?;
        }
        eprintln!(
            "stampede: artillery: wrote {path}; run it with: stampede load {}/ --journey {path}",
            script.target.trim_end_matches('/')
        );
        return Ok(());
    }
    if let Some(o) = &a.output {
        if std::path::Path::new(o).is_dir() {
            return Err(Exit::usage(format!(
                "--output {o}: a directory; name a file"
            )));
        }
    }
    let url = a.target.clone().unwrap_or_else(|| script.target.clone());
    let target = Target::parse(&url)
        .map_err(|e| Exit::usage(format!("{}: config.target {url:?}: {e}", a.script)))?;
    let request = RequestBuilder::native(&target, "GET", true)
        .build()
        .map_err(|e| Exit::usage(format!("config.target {url:?}: {e}")))?;
    let mut spec = LoadSpec::new(target.clone(), request);
    if target.tls {
        let options = stampede_tls::ClientOptions {
            insecure: a.insecure || script.insecure,
            alpn: stampede_tls::alpn(false),
            ..Default::default()
        };
        spec.tls = Some(
            stampede_tls::client_config(&options).map_err(|e| Exit::usage(format!("TLS: {e}")))?,
        );
    }
    let profile = Profile::parse(&script.inject)
        .map_err(|e| Exit::usage(format!("{}: config.phases: {e}", a.script)))?;
    spec.load.shape = Shape::Users(profile);
    spec.load.session.calls = u32::MAX;
    spec.load.duration = None;
    spec.load.threads = common::cpus();
    spec.load.timeout = Some(script.timeout.unwrap_or(std::time::Duration::from_secs(10)));
    let journey = JourneyRun::new(
        script.journey.clone(),
        &spec.target,
        spec.load.seed,
        spec.load.threads,
    );
    spec.hooks = Some(journey.hooks());
    // Artillery's own progress: a report every ten seconds, no bar.
    let periods = std::sync::Arc::new(std::sync::Mutex::new(Periods::new(
        journey.clone(),
        script.phases.clone(),
    )));
    let progress = ProgressOptions {
        quiet: true,
        each_second: (!a.quiet).then(|| {
            let periods = periods.clone();
            Box::new(move |s: &LiveSecond| {
                if let Ok(mut p) = periods.lock() {
                    p.second(s);
                }
            }) as crate::live::EachSecond
        }),
        ..Default::default()
    };
    let mut run = common::execute(spec, progress)?;
    if let Ok(mut p) = periods.lock() {
        if !a.quiet {
            // What the run lasted, to the second it ended in.
            p.phases_until((run.result.duration_s.ceil() as u64 + 1) * 1000);
            p.flush();
        }
    }
    journey.annotate(&mut run.result);
    if let Some(why) = journey.stopped() {
        eprintln!("stampede: artillery: {why}");
    }
    let figures = journey.figures();
    let r = &run.result;
    let aggregate = aggregate(r, &figures, &script);
    let end_ms = r.started_unix_ms + (r.duration_s * 1000.0) as u64;
    common::out(&artillery_summary(&aggregate, r.duration_s, end_ms));
    if let Some(o) = &a.output {
        let report = artillery_json(&aggregate, &intermediate(r));
        let text = serde_json::to_string_pretty(&report).expect("a report is JSON");
        std::fs::write(o, text + "\n")
            .map_err(|e| Exit::fail(format!("--output {o}: cannot be written: {e}")))?;
        common::out(&format!("Log file: {o}\n"));
    }
    if script.expect
        && aggregate
            .counters
            .get("plugins.expect.failed")
            .copied()
            .unwrap_or(0)
            > 0
    {
        return Err(Exit {
            code: EXIT_EXPECT,
            message: String::new(),
        });
    }
    Ok(())
}

/// Artillery's name of an error kind.
fn error_name(kind: &str) -> String {
    match kind {
        "timeout" => "ETIMEDOUT".into(),
        "connect_refused" => "ECONNREFUSED".into(),
        "connect_timeout" => "ETIMEDOUT".into(),
        "reset" => "ECONNRESET".into(),
        other => other.to_string(),
    }
}

fn decode(h: &str) -> Option<Histogram<u64>> {
    Hist::from_base64(h).ok().map(|h| h.0)
}

/// The whole run's figures, named as Artillery names them.
fn aggregate(r: &RunResult, f: &JourneyFigures, script: &Script) -> Metrics {
    let mut m = Metrics {
        period_ms: r.started_unix_ms / 10_000 * 10_000,
        first_ms: r.started_unix_ms,
        last_ms: r.started_unix_ms + (r.duration_s * 1000.0) as u64,
        ..Default::default()
    };
    let c = &mut m.counters;
    let s = r.sessions.as_ref();
    let started = s.map_or(0, |s| s.started);
    let ended = s.map_or(0, |s| s.completed + s.failed);
    c.insert("vusers.created".into(), started);
    for (name, n) in &f.by_journey {
        if *n > 0 {
            c.insert(format!("vusers.created_by_name.{name}"), *n);
        }
    }
    c.insert("vusers.completed".into(), ended.saturating_sub(f.broken));
    c.insert("vusers.failed".into(), f.broken);
    c.insert(
        "http.requests".into(),
        r.requests.completed + r.requests.failed,
    );
    c.insert("http.responses".into(), r.requests.completed);
    c.insert("http.downloaded_bytes".into(), r.bytes.body);
    for (code, n) in &r.statuses {
        c.insert(format!("http.codes.{code}"), *n);
    }
    for (kind, n) in &r.errors {
        *c.entry(format!("errors.{}", error_name(kind))).or_default() += n;
    }
    let missed: u64 = (r.targets.iter())
        .flat_map(|t| t.captures_missed.values())
        .sum();
    if missed > 0 {
        c.insert("errors.Failed capture or match".into(), missed);
    }
    if script.expect {
        let (mut ok, mut failed) = (0u64, 0u64);
        for (figure, made) in &f.checks_made {
            let t = r.targets.iter().find(|t| t.name == *figure);
            for (check, n) in made {
                let bad = t
                    .and_then(|t| t.checks_failed.get(check))
                    .copied()
                    .unwrap_or(0);
                let kind = script
                    .expectations
                    .get(check)
                    .cloned()
                    .unwrap_or_else(|| check.clone());
                if n - bad > 0 {
                    *c.entry(format!("plugins.expect.ok.{kind}")).or_default() += n - bad;
                }
                if bad > 0 {
                    *c.entry(format!("plugins.expect.failed.{kind}"))
                        .or_default() += bad;
                }
                ok += n - bad;
                failed += bad;
            }
        }
        if ok > 0 {
            c.insert("plugins.expect.ok".into(), ok);
        }
        if failed > 0 {
            c.insert("plugins.expect.failed".into(), failed);
        }
    }
    if script.by_endpoint {
        for t in &r.targets {
            for (code, n) in &t.statuses {
                c.insert(
                    format!("plugins.metrics-by-endpoint.{}.codes.{code}", t.name),
                    *n,
                );
            }
            if let Some(s) = decode(&t.histogram).as_ref().and_then(Summary::of_micros) {
                m.summaries.insert(
                    format!("plugins.metrics-by-endpoint.response_time.{}", t.name),
                    s,
                );
            }
        }
    }
    m.rates
        .insert("http.request_rate".into(), r.throughput_rps.round() as u64);
    if let Some(s) = Summary::of_micros(&r.histograms.latency.0) {
        m.summaries.insert("http.response_time".into(), s);
    }
    if let Some(s) = Summary::of_micros(&f.walked) {
        m.summaries.insert("vusers.session_length".into(), s);
    }
    m
}

/// One of Artillery's ten-second periods as its seconds come: their requests,
/// answers and latencies.
struct Gathering {
    m: Metrics,
    latency: Option<Histogram<u64>>,
    seconds: u64,
}

impl Gathering {
    /// The period a second that began at `at_ms` (since the epoch) falls in.
    fn period_of(at_ms: u64) -> u64 {
        at_ms / 10_000 * 10_000
    }

    fn new(at_ms: u64) -> Gathering {
        Gathering {
            m: Metrics {
                period_ms: Gathering::period_of(at_ms),
                first_ms: at_ms,
                ..Default::default()
            },
            latency: None,
            seconds: 0,
        }
    }

    /// Adds second `i`, which began at `at_ms`.
    fn add(&mut self, at_ms: u64, i: &stampede_engine::Interval) {
        self.m.last_ms = at_ms + 1000;
        self.seconds += 1;
        let c = &mut self.m.counters;
        *c.entry("http.requests".into()).or_default() += i.completed + i.failed;
        *c.entry("http.responses".into()).or_default() += i.completed;
        if let Some(ih) = decode(&i.histogram) {
            match &mut self.latency {
                Some(h) => {
                    let _ = h.add(&ih);
                }
                None => self.latency = Some(ih),
            }
        }
    }

    /// The period's figures: its counters, its answers a second, its response times.
    fn finish(self) -> Metrics {
        let mut m = self.m;
        let responses = m.counters.get("http.responses").copied().unwrap_or(0);
        m.rates
            .insert("http.request_rate".into(), responses / self.seconds.max(1));
        if let Some(s) = self.latency.as_ref().and_then(Summary::of_micros) {
            m.summaries.insert("http.response_time".into(), s);
        }
        m
    }
}

/// The run's seconds gathered into Artillery's ten-second periods.
fn intermediate(r: &RunResult) -> Vec<Metrics> {
    let mut out: Vec<Gathering> = Vec::new();
    for i in &r.intervals {
        let at = r.started_unix_ms + u64::from(i.t) * 1000;
        if out
            .last()
            .is_none_or(|g| g.m.period_ms != Gathering::period_of(at))
        {
            out.push(Gathering::new(at));
        }
        out.last_mut().expect("pushed").add(at, i);
    }
    out.into_iter().map(Gathering::finish).collect()
}

/// Artillery's report every ten seconds while the run goes: the seconds the workers
/// finish gathered into the wall clock's ten-second period they fall in, each period
/// printed when a second of the next one comes, and the last at the end; and a line
/// as each phase starts and completes, stamped with when it did.
struct Periods {
    /// The run's start, ms since the epoch (the seconds are counted from it).
    start_ms: u64,
    journey: JourneyRun,
    /// Each phase's name and length, and how many have been said to start and to
    /// complete.
    phases: Vec<(Option<String>, std::time::Duration)>,
    said: (usize, usize),
    /// The users as they stood when the last period was printed.
    users: LiveJourneys,
    current: Option<Gathering>,
}

impl Periods {
    fn new(journey: JourneyRun, phases: Vec<(Option<String>, std::time::Duration)>) -> Periods {
        Periods {
            start_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
            journey,
            phases,
            said: (0, 0),
            users: LiveJourneys::default(),
            current: None,
        }
    }

    /// Says each phase that started or completed up to `until_ms` into the run, in
    /// order (a phase's completion before the next one's start).
    fn phases_until(&mut self, until_ms: u64) {
        let start_of = |p: &Periods, k: usize| -> u64 {
            (p.phases[..k].iter())
                .map(|(_, d)| d.as_millis() as u64)
                .sum()
        };
        loop {
            let (started, completed) = self.said;
            let end = (completed < started)
                .then(|| start_of(self, completed) + self.phases[completed].1.as_millis() as u64);
            let begin = (started < self.phases.len()).then(|| start_of(self, started));
            let (is_start, k, at) = match (begin, end) {
                (_, Some(e)) if e <= until_ms && begin.is_none_or(|b| e <= b) => {
                    (false, completed, e)
                }
                (Some(b), _) if b <= until_ms => (true, started, b),
                _ => return,
            };
            let (name, length) = &self.phases[k];
            common::out(&artillery_phase(
                is_start,
                (name.as_deref(), k),
                length.as_secs_f64(),
                self.start_ms + at,
            ));
            common::out("\n");
            match is_start {
                true => self.said.0 += 1,
                false => self.said.1 += 1,
            }
        }
    }

    fn second(&mut self, s: &LiveSecond) {
        let i = &s.interval;
        self.phases_until((u64::from(i.t) + 1) * 1000);
        let at = self.start_ms + u64::from(i.t) * 1000;
        if (self.current.as_ref()).is_some_and(|g| g.m.period_ms != Gathering::period_of(at)) {
            self.flush();
        }
        let g = self.current.get_or_insert_with(|| Gathering::new(at));
        g.add(at, i);
        let c = &mut g.m.counters;
        for (code, n) in &s.statuses {
            *c.entry(format!("http.codes.{code}")).or_default() += n;
        }
        for (kind, n) in &s.errors {
            *c.entry(format!("errors.{}", error_name(kind.name())))
                .or_default() += n;
        }
    }

    /// Prints the period gathered so far, with the users that came and went in it.
    fn flush(&mut self) {
        let Some(g) = self.current.take() else {
            return;
        };
        let mut m = g.finish();
        let now = self.journey.live();
        let was = std::mem::replace(&mut self.users, now.clone());
        let ended = |u: &LiveJourneys| u.completed + u.failed - u.broken;
        let c = &mut m.counters;
        c.insert(
            "vusers.created".into(),
            now.started.saturating_sub(was.started),
        );
        c.insert(
            "vusers.completed".into(),
            ended(&now).saturating_sub(ended(&was)),
        );
        c.insert(
            "vusers.failed".into(),
            now.broken.saturating_sub(was.broken),
        );
        common::out(&artillery_period(&m));
    }
}
