//! `stampede wrk`'s run and report: wrk's report, and with `-s` its Lua script's
//! `setup`, `init`, `request`, `response` and `done` called around the run; its flags
//! are [`stampede_flags::wrk`]'s.

use std::sync::Arc;

use stampede_engine::{Hooks, LoadSpec, Run};
use stampede_report::wrk::{req_sec_samples, socket_errors};
use stampede_report::wrk_report;
use stampede_script::{Script, Summary, Target as ScriptTarget};

use crate::common::{self, Exit, ProgressOptions};
use crate::contract::{self, Tool};
use stampede_flags::wrk::*;

pub fn main(args: &[String]) -> Result<(), Exit> {
    contract::run::<Wrk>(args)
}

/// What wrk's report and script need, from the translation to the end: the
/// translation's, the script once loaded and its watch.
pub struct WrkState {
    run: WrkRun,
    script: Option<Arc<Script>>,
    watch: Option<ScriptWatch>,
}

impl From<WrkRun> for WrkState {
    fn from(run: WrkRun) -> WrkState {
        WrkState {
            run,
            script: None,
            watch: None,
        }
    }
}

impl Tool for Wrk {
    type State = WrkState;

    fn execute(a: &WrkArgs, mut spec: LoadSpec, w: &mut WrkState) -> Result<Run, Exit> {
        if let (Some(path), Some(source)) = (&a.script, &w.run.source) {
            w.script = Some(attach_script(
                a,
                path,
                source,
                w.run.body.take(),
                &mut spec,
            )?);
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

    fn report(_a: &WrkArgs, run: &mut Run, w: &mut WrkState) -> Result<(), Exit> {
        common::out(&wrk_report(&run.result, &w.run.info));
        Ok(())
    }

    fn finish(a: &WrkArgs, run: &Run, w: WrkState) -> Result<(), Exit> {
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
