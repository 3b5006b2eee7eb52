//! `stampede wrk`: wrk's flags and report, measured with stampede's engine.
//!
//! The request is wrk's default (`GET path HTTP/1.1` with a Host header and any `-H`
//! headers); `--latency` prints wrk2's HdrHistogram distribution. `-R` is wrk2's fixed
//! rate, exact from the first request (no calibration period), and `-U` adds the
//! uncorrected distribution. `-s script.lua` runs a wrk Lua script (arguments after
//! `--` go to its `init`) through `stampede-script`: its request replaces the flags'
//! one, its hooks run on the worker threads, and its `done` after the report.

use stampede_engine::input::{self, Input};
use std::sync::Arc;

use clap::{ArgAction, Parser};
use stampede_engine::{Hooks, LoadSpec, RequestBuilder, Run, Shape, Target};
use stampede_report::wrk::{req_sec_samples, socket_errors};
use stampede_report::{wrk_report, WrkInfo};
use stampede_script::{Script, Summary, Target as ScriptTarget};

use crate::common::{self, Exit, ProgressOptions};
use crate::contract::{self, Tool};
use crate::dialect::Dialect;

/// wrk's and wrk2's command line: every flag of their usage is taken.
pub const DIALECT: Dialect = Dialect {
    tool: "wrk",
    refused: &[],
    inert: &[],
    prefixes: false,
    go: false,
};

#[derive(Parser, Debug)]
#[command(
    name = "stampede wrk",
    version,
    about = "wrk-compatible load test (wrk's flags and report)",
    disable_version_flag = true
)]
pub struct WrkArgs {
    /// Connections to keep open
    #[arg(short = 'c', long = "connections", value_name = "N", default_value = "10", value_parser = common::parse_metric)]
    connections: u64,
    /// Duration of test
    #[arg(short = 'd', long = "duration", value_name = "T", default_value = "10s", value_parser = common::parse_duration)]
    duration: std::time::Duration,
    /// Number of threads to use
    #[arg(short = 't', long = "threads", value_name = "N", default_value = "2", value_parser = common::parse_metric)]
    threads: u64,
    /// Load Lua script file
    #[arg(short = 's', long = "script", value_name = "S")]
    script: Option<String>,
    /// Add header to request
    #[arg(short = 'H', long = "header", value_name = "H", action = ArgAction::Append)]
    headers: Vec<String>,
    /// Print latency statistics
    #[arg(short = 'L', long = "latency")]
    latency: bool,
    /// Socket/request timeout
    #[arg(short = 'T', long = "timeout", value_name = "T", default_value = "2s", value_parser = common::parse_duration)]
    timeout: std::time::Duration,
    /// wrk2's constant throughput: requests/s for the whole run, latency corrected for
    /// coordinated omission
    #[arg(short = 'R', long = "rate", value_name = "R", value_parser = common::parse_metric)]
    rate: Option<u64>,
    /// wrk2's batch latency: with --pipeline, time each batch once, at its last
    /// response (the others are counted, not timed)
    #[arg(short = 'B', long = "batch_latency")]
    batch_latency: bool,
    /// wrk2's uncorrected latency histogram
    #[arg(short = 'U', long = "u_latency")]
    u_latency: bool,
    /// Requests per pipelined write (stampede; replaces wrk's pipeline.lua)
    #[arg(long = "pipeline", value_name = "N", default_value_t = 1)]
    pipeline: usize,
    /// Request body from a file (stampede; replaces scripts that set wrk.body)
    #[arg(long = "body-file", value_name = "FILE")]
    body_file: Option<String>,
    /// Request method (stampede; replaces scripts that set wrk.method)
    #[arg(short = 'm', long = "method", value_name = "M", default_value = "GET")]
    method: String,
    /// Print version details
    #[arg(short = 'v', long = "version", action = ArgAction::Version)]
    _version: Option<bool>,
    /// The URL to load
    #[arg(value_name = "URL")]
    url: String,
    /// Arguments for the script's init(args), after `--`
    #[arg(last = true, value_name = "ARGS")]
    script_args: Vec<String>,
    #[command(flatten)]
    pub segments: crate::common::SegmentArgs,
    #[command(flatten)]
    pub result: crate::common::ResultFile,
}

pub fn main(args: &[String]) -> Result<(), Exit> {
    contract::run::<Wrk>(args)
}

/// wrk's place in the dialects' run contract.
struct Wrk;

/// What wrk's report and script need, from the translation to the end.
struct WrkRun {
    info: WrkInfo,
    /// The body file's bytes and the script's source, for the script's `wrk` table.
    body: Option<Vec<u8>>,
    source: Option<String>,
    script: Option<Arc<Script>>,
    watch: Option<ScriptWatch>,
}

impl Tool for Wrk {
    type Args = WrkArgs;
    type Inputs = (Target, Option<Vec<u8>>, Option<String>);
    type Info = WrkRun;
    const DIALECT: &'static Dialect = &DIALECT;

    fn result_file(a: &WrkArgs) -> &crate::common::ResultFile {
        &a.result
    }

    fn segments(a: &WrkArgs) -> &crate::common::SegmentArgs {
        &a.segments
    }

    fn inputs(a: &WrkArgs) -> Result<Self::Inputs, Exit> {
        let target = common::resolve(&a.url, None)?;
        let body = a.body_file.as_deref().map(common::read_body).transpose()?;
        let source = match &a.script {
            Some(path) => Some(
                input::read_text(path, "-s/--script", Input::Config)
                    .map_err(|e| Exit::usage(e.to_string()))?,
            ),
            None => None,
        };
        Ok((target, body, source))
    }

    fn translate(
        a: &WrkArgs,
        (target, body, source): Self::Inputs,
    ) -> Result<(LoadSpec, WrkRun), Exit> {
        let spec = translate(a, target, body.clone())?;
        let info = WrkInfo {
            url: a.url.clone(),
            threads: a.threads,
            connections: a.connections,
            duration_s: a.duration.as_secs_f64(),
            latency: a.latency || a.u_latency,
            uncorrected: a.u_latency,
            wrk2: a.rate.is_some(),
        };
        Ok((
            spec,
            WrkRun {
                info,
                body,
                source,
                script: None,
                watch: None,
            },
        ))
    }

    fn execute(a: &WrkArgs, mut spec: LoadSpec, w: &mut WrkRun) -> Result<Run, Exit> {
        if let (Some(path), Some(source)) = (&a.script, &w.source) {
            w.script = Some(attach_script(a, path, source, w.body.take(), &mut spec)?);
            // The script's code runs on the workers and at the end; a loop in it would
            // hold the run past -d, and LuaJIT's compiled loops cannot be interrupted.
            // The run ends after its shared start (a segment's --start-at) and the
            // duration, counted from when the engine begins, then any wait for the
            // last answers.
            let start_in = spec
                .start_at
                .and_then(|t| t.duration_since(std::time::SystemTime::now()).ok())
                .unwrap_or_default();
            let lasts = start_in
                + spec.load.duration.unwrap_or(a.duration)
                + spec.load.last_wait.unwrap_or_default();
            w.watch = Some(ScriptWatch::start(path, lasts + SCRIPT_GRACE));
        }
        common::execute(
            spec,
            ProgressOptions {
                quiet: false,
                heartbeat: None,
                ..Default::default()
            },
        )
    }

    fn report(_a: &WrkArgs, run: &mut Run, w: &mut WrkRun) -> Result<(), Exit> {
        common::out(&wrk_report(&run.result, &w.info));
        Ok(())
    }

    fn finish(a: &WrkArgs, run: &Run, w: WrkRun) -> Result<(), Exit> {
        if let Some(watch) = &w.watch {
            // done() has no deadline of its own: only Ctrl-C limits it.
            watch.set_deadline(None);
        }
        if let Some(script) = w.script {
            let errors = script.errors();
            if let Some(first) = errors.first() {
                return Err(Exit::fail(format!(
                    "{}: the run stopped at a script error: {first}",
                    script.path()
                )));
            }
            script
                .done(
                    &done_summary(&run.result),
                    &run.result.histograms.latency.0,
                    &req_sec_samples(&run.result, a.threads),
                )
                .map_err(|e| Exit::fail(format!("{}: {e}", script.path())))?;
        }
        if let Some(watch) = w.watch {
            watch.finish();
        }
        Ok(())
    }
}

/// How long a script may hold the run past its end, or the process past Ctrl-C.
const SCRIPT_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

/// Ends the process when a script's code does not return: past the run's end plus
/// [`SCRIPT_GRACE`] (a loop in `request`, `response` or `delay` holds a worker, so the
/// run cannot end at `-d`), or [`SCRIPT_GRACE`] after Ctrl-C (also in `done`).
struct ScriptWatch {
    state: std::sync::Arc<(
        std::sync::atomic::AtomicBool,
        std::sync::Mutex<Option<std::time::Duration>>,
    )>,
}

impl ScriptWatch {
    /// Watches from now; the run's deadline is `lasts` after the engine begins it
    /// ([`common::run_started`]).
    fn start(path: &str, lasts: std::time::Duration) -> ScriptWatch {
        use std::sync::atomic::Ordering;
        use std::time::{Duration, Instant};
        let state = std::sync::Arc::new((
            std::sync::atomic::AtomicBool::new(false),
            std::sync::Mutex::new(Some(lasts)),
        ));
        let (s, path) = (state.clone(), path.to_string());
        std::thread::spawn(move || {
            let mut signalled: Option<Instant> = None;
            while !s.0.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(50));
                let now = Instant::now();
                if common::interrupted() && signalled.is_none() {
                    signalled = Some(now);
                }
                let lasts = *s.1.lock().unwrap_or_else(|e| e.into_inner());
                let late = match (lasts, common::run_started()) {
                    (Some(lasts), Some(began)) => now > began + lasts,
                    _ => false,
                };
                let stuck = signalled.is_some_and(|t| now > t + SCRIPT_GRACE);
                if (late || stuck) && !s.0.load(Ordering::SeqCst) {
                    eprintln!(
                        "stampede: {path}: the script's code has not returned {} s after {} (a loop in request, response, delay or done?); stopping",
                        SCRIPT_GRACE.as_secs(),
                        if stuck { "Ctrl-C" } else { "the run's end" }
                    );
                    std::process::exit(if stuck {
                        common::EXIT_INTERRUPTED
                    } else {
                        crate::console::EXIT_FAIL
                    });
                }
            }
        });
        ScriptWatch { state }
    }

    /// A new deadline (`None`: only Ctrl-C ends the wait).
    fn set_deadline(&self, d: Option<std::time::Duration>) {
        *self.state.1.lock().unwrap_or_else(|e| e.into_inner()) = d;
    }

    /// The script is done: the watch ends.
    fn finish(self) {
        self.state
            .0
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Loads the `-s` script for the run's threads, and lets it shape the spec: its
/// request (and how many it pipelines) replaces the flags' one, and its hooks go to
/// the workers.
fn attach_script(
    a: &WrkArgs,
    path: &str,
    source: &str,
    body: Option<Vec<u8>>,
    spec: &mut LoadSpec,
) -> Result<Arc<Script>, Exit> {
    if a.pipeline != 1 {
        return Err(Exit::usage(
            "--pipeline with -s: the script's request sets the pipelining (return several requests from request(), as wrk's pipeline.lua)",
        ));
    }
    let mut headers = Vec::new();
    for h in &a.headers {
        headers.push(common::header_arg(h)?);
    }
    let t = &spec.target;
    let target = ScriptTarget {
        url: a.url.clone(),
        scheme: if t.tls { "https" } else { "http" }.into(),
        host: t.host.clone(),
        port: explicit_port(&a.url),
        path: t.path.clone(),
        headers,
        method: a.method.clone(),
        body,
    };
    let addr = match &t.address {
        stampede_engine::Address::Tcp(addrs) => addrs.first().copied(),
        stampede_engine::Address::Unix(_) => None,
    };
    let script = Script::load(
        path,
        source,
        &target,
        &a.script_args,
        spec.load.threads,
        addr,
    )
    .map_err(|e| {
        Exit::fail(if e.names(path) {
            e.to_string()
        } else {
            format!("{path}: {e}")
        })
    })?;
    let plan = script.plan();
    spec.load.request = plan.request.clone();
    spec.load.pipeline = plan.pipeline;
    let script = Arc::new(script);
    spec.hooks = Some(Hooks(script.clone()));
    Ok(script)
}

/// The port as written in the URL, if any (wrk's `wrk.port` is nil without one).
fn explicit_port(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let after_host = match host_port.strip_prefix('[') {
        Some(v6) => v6.split_once(']').map_or("", |(_, r)| r),
        None => host_port,
    };
    after_host
        .rsplit_once(':')
        .map(|(_, p)| p.to_string())
        .filter(|p| !p.is_empty())
}

/// wrk's summary table from the result: socket errors as wrk's report counts them,
/// and responses above 399 as its status errors.
fn done_summary(r: &stampede_engine::RunResult) -> Summary {
    let [connect, read, write, timeout] = socket_errors(r);
    Summary {
        duration_us: (r.duration_s * 1e6) as u64,
        requests: r.requests.completed,
        bytes: r.bytes.read,
        connect,
        read,
        write,
        status: r.statuses.range(400..).map(|(_, n)| n).sum(),
        timeout,
    }
}

/// wrk's (and wrk2's) flags as a run. Pure: the caller resolves the target and reads
/// the body file, so that each flag's meaning can be checked without a network.
fn translate(a: &WrkArgs, target: Target, body: Option<Vec<u8>>) -> Result<LoadSpec, Exit> {
    if a.rate == Some(0) {
        return Err(Exit::usage(
            "-R/--rate: the rate must be at least 1 request per second",
        ));
    }
    if a.connections == 0 || a.threads == 0 {
        return Err(Exit::usage("-c and -t must be at least 1"));
    }
    if a.connections < a.threads {
        return Err(Exit::usage("number of connections must be >= threads"));
    }
    let mut b = RequestBuilder::new(&a.method, &target.path);
    let mut has_host = false;
    for h in &a.headers {
        let (n, v) = common::header_arg(h)?;
        has_host |= n.eq_ignore_ascii_case("host");
        b = b.header(&n, &v);
    }
    if !has_host {
        b = b.header("Host", &target.authority);
    }
    if let Some(body) = body {
        b = b.body(body);
    }
    let mut spec = LoadSpec::new(
        target.clone(),
        b.build().map_err(|e| Exit::usage(e.to_string()))?,
    );
    // wrk does not verify certificates.
    spec.tls = crate::tls::TlsArgs::dialect(&target, false)?;
    spec.load.connections = a.connections as usize;
    spec.load.threads = a.threads as usize;
    spec.load.duration = Some(a.duration);
    spec.load.timeout = Some(a.timeout);
    spec.load.pipeline = a.pipeline;
    spec.load.batch_latency = a.batch_latency;
    if let Some(rate) = a.rate {
        spec.load.shape = Shape::Rate {
            rate: rate as f64,
            gaps: stampede_engine::arrivals::Gaps::Even,
        };
    }
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn spec_of(args: &[&str]) -> Result<LoadSpec, Exit> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let (a, _) = DIALECT.parse::<WrkArgs>(&args)?;
        let target = Target::parse(&a.url).unwrap();
        translate(&a, target, None)
    }

    #[test]
    fn flags_become_the_run_wrk_would_make() {
        let s = spec_of(&[
            "-t2",
            "-c10",
            "-d3s",
            "-H",
            "X-A: 1",
            "http://127.0.0.1:9/p",
        ])
        .unwrap();
        assert_eq!((s.load.threads, s.load.connections), (2, 10));
        assert_eq!(s.load.duration, Some(Duration::from_secs(3)));
        assert_eq!(
            String::from_utf8(s.load.request.bytes).unwrap(),
            "GET /p HTTP/1.1\r\nX-A: 1\r\nHost: 127.0.0.1:9\r\n\r\n"
        );
        assert!(matches!(s.load.shape, Shape::Closed));
        // wrk2's -R: a fixed rate.
        let s = spec_of(&["-R", "500", "http://127.0.0.1:9/"]).unwrap();
        assert!(
            matches!(s.load.shape, Shape::Rate { rate, gaps: stampede_engine::arrivals::Gaps::Even } if rate == 500.0)
        );
    }

    #[test]
    fn impossible_combinations_name_the_flag() {
        for (args, flag) in [
            (
                &["-c", "1", "-t", "2", "http://127.0.0.1:9/"][..],
                "connections",
            ),
            (&["-R", "0", "http://127.0.0.1:9/"], "-R"),
        ] {
            let e = spec_of(args).unwrap_err();
            assert!(e.message.contains(flag), "{args:?}: {}", e.message);
        }
    }

    /// Every flag of wrk's and wrk2's usage: parsed into the run, or refused with a
    /// message naming it.
    #[test]
    fn every_documented_flag_is_taken_or_refused_by_name() {
        let u = "http://127.0.0.1:9/";
        for argv in [
            &["-c", "4", u][..],
            &["--connections", "4", u],
            &["-d", "2s", u],
            &["--duration", "2s", u],
            &["-t", "1", u],
            &["--threads", "1", u],
            &["-H", "X-A: 1", u],
            &["--header", "X-A: 1", u],
            &["-L", u],
            &["--latency", u],
            &["-U", "-R", "10", u],
            &["--u_latency", "--rate", "10", u],
            &["-T", "1s", u],
            &["--timeout", "1s", u],
        ] {
            spec_of(argv).unwrap_or_else(|e| panic!("{argv:?}: {}", e.message));
        }
        for flag in ["-B", "--batch_latency"] {
            let s = spec_of(&[flag, "--pipeline", "4", u]).unwrap();
            assert!(s.load.batch_latency && s.load.pipeline == 4, "{flag}");
        }
        // -s/--script reads its file (tested end to end with the scripts); -v prints.
        for flag in ["-v", "--version"] {
            let e = spec_of(&[flag]).unwrap_err();
            assert_eq!(e.code, 0, "{flag}");
        }
        let e = spec_of(&["--conections", "4", u]).unwrap_err();
        assert!(
            e.message
                .starts_with("--conections: not a flag of wrk; did you mean --connections?"),
            "{}",
            e.message
        );
    }
}
