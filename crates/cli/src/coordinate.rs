//! The coordinator's side of a fleet run, whatever started its segments (`stampede
//! ssh` its own processes, `stampede collect` those that connect to it): the fleet's
//! options, the loop driven ([`stampede_lab::fleet::run`]) with each merged second
//! shown, logged and judged against `--abort-on`, then the segments' results merged
//! exactly, the missing named, and the merged run reported in the command's form.

use std::time::Duration;

use clap::Args;
use stampede_engine::assert::{Assertion, LiveFigures};
use stampede_engine::merge::Merger;
use stampede_engine::{FleetMissing, FleetStop, FleetSummary};
use std::sync::Arc;

use stampede_engine::{Hist, Interval, LiveSecond, RunResult};
use stampede_lab::fleet::{self, run::Channel, run::Decision, run::Waits, FleetSecond, LiveMerge};
use stampede_metrics::dashboard::Dashboard;
use stampede_metrics::{Hub, RunInfo};
use stampede_report::dashboard::{live_fragment, LiveStatus};
use stampede_report::units::{human_us, thousands};

use crate::common::{self, Exit};
use crate::merge::Report;

/// How a fleet run waits, stops, merges and reports.
#[derive(Args, Debug)]
pub struct FleetArgs {
    /// How long every segment has to start, read its inputs and say it is ready (a
    /// pod: to be scheduled and pull its image too); one that is not ready by then is
    /// stopped and counted missing. Default: 10 s over ssh, 60 s for pods and collected
    /// processes. (`k8s` without --listen: how long after submission the set start is)
    #[arg(long = "start-in", value_name = "DURATION", value_parser = common::parse_duration)]
    pub start_in: Option<Duration>,
    /// How long after the shared start a segment may take to send its result back;
    /// one still running then is stopped and counted missing. Default: the command's
    /// own duration and two minutes, where it gives one; else an hour
    #[arg(long = "deadline", value_name = "DURATION", value_parser = common::parse_duration)]
    pub deadline: Option<Duration>,
    /// A running segment that sends no second's figures for this long is stopped and
    /// counted missing
    #[arg(long = "stall-after", value_name = "DURATION", default_value = "10s", value_parser = common::parse_duration)]
    pub stall_after: Duration,
    /// Stop every segment as soon as the fleet's merged figures so far fail this
    /// condition (as --assert writes them: latency statistics, rps, errors);
    /// repeatable. The result says which stopped it, and when
    #[arg(long = "abort-on", value_name = "CONDITION")]
    pub abort_on: Vec<String>,
    /// Write each merged second as a JSON line to FILE as it is shown (its counts,
    /// percentiles and histogram)
    #[arg(long = "live-log", value_name = "FILE")]
    pub live_log: Option<String>,
    /// Serve a live page of the fleet's merged figures at http://ADDR/ (with
    /// /metrics beside it), the merged report once the run ends
    #[arg(long = "dashboard", value_name = "ADDR")]
    pub dashboard: Option<String>,
    #[command(flatten)]
    pub push: crate::metrics::PushArgs,
    /// Write each segment's own result to DIR/segment-K.json as well (`stampede merge`
    /// of them is the merged result)
    #[arg(long = "parts", value_name = "DIR")]
    pub parts: Option<String>,
    /// Merge the segments that succeeded when some fail (each named)
    #[arg(long = "partial")]
    pub partial: bool,
    /// The report printed (default: the command's own, e.g. wrk's for `wrk …`)
    #[arg(long = "format", value_enum)]
    pub format: Option<Report>,
    #[command(flatten)]
    pub out: common::Outputs,
}

/// What [`FleetArgs::check`] read: the conditions, ready to judge, and the waits.
pub struct Checked {
    waits: Waits,
    asserts: Vec<Assertion>,
    aborts: Vec<Assertion>,
    live_log: Option<std::io::BufWriter<std::fs::File>>,
    live: Live,
}

/// The coordinator's live outputs: the merged seconds served and pushed.
struct Live {
    hub: Option<Arc<Hub>>,
    _server: Option<Arc<Dashboard>>,
    dashboard: Option<Arc<Dashboard>>,
    /// The seconds shown on the dashboard so far (their histograms left out).
    shown: Vec<Interval>,
    /// Whether the hub knows what the fleet runs yet.
    labelled: bool,
}

impl Live {
    /// Opens what `f` asks for (`title`: what the page says the run is).
    fn open(f: &FleetArgs, title: &str) -> Result<Live, Exit> {
        let hub = match f.dashboard.is_some() || f.push.any() {
            true => Some(Hub::with_info(RunInfo::unknown(), Vec::new(), &f.push.out)?),
            false => None,
        };
        let server = match &hub {
            Some(h) => f.push.serve(h)?,
            None => None,
        };
        let dashboard = match &f.dashboard {
            Some(addr) => {
                let d =
                    Dashboard::start(addr, stampede_report::dashboard_page(title), hub.clone())?;
                eprintln!("stampede: live dashboard of the fleet at {}", d.url());
                Some(d)
            }
            None => None,
        };
        Ok(Live {
            hub,
            _server: server,
            dashboard,
            shown: Vec::new(),
            labelled: false,
        })
    }

    /// Shows a merged second.
    fn second(&mut self, s: &FleetSecond, m: &LiveMerge) {
        let interval = Interval {
            t: s.t,
            completed: s.completed,
            failed: s.failed,
            bytes_read: s.bytes_read,
            events: s.events,
            latency: s.latency.stats(),
            histogram: s.latency.to_base64(),
            histogram_uncorrected: s.uncorrected.to_base64(),
            connections: s.connections,
            in_flight: s.in_flight,
            users: s.users,
        };
        if let Some(h) = &self.hub {
            if !std::mem::replace(&mut self.labelled, true) {
                label(h, m);
            }
            h.second(&LiveSecond {
                interval: interval.clone(),
                statuses: s.statuses.iter().map(|(c, n)| (*c, *n)).collect(),
                errors: s.errors.iter().map(|(k, n)| (*k, *n)).collect(),
                send_lag: Hist::default(),
                targets: Vec::new(),
            });
        }
        if let Some(d) = &self.dashboard {
            self.shown.push(Interval {
                histogram: String::new(),
                histogram_uncorrected: String::new(),
                ..interval
            });
            let status = LiveStatus {
                elapsed_s: f64::from(s.t + 1),
                progress: None,
                completed: m.total.completed,
                failed: m.total.failed,
                users: s.users > 0,
            };
            d.second(Some(s.t), live_fragment(&self.shown, &status));
        }
    }

    /// The run has ended with `r` (none: nothing merged).
    fn end(self, f: &FleetArgs, r: Option<&RunResult>, title: &str) {
        if let (Some(d), Some(r)) = (&self.dashboard, r) {
            d.finish(stampede_report::run_html(r, title, None));
        }
        if let Some(h) = &self.hub {
            f.push.end(h);
        }
    }
}

/// What the fleet runs, as its segments said (each names the whole run: its target
/// and its rate); stamped from the shared start.
fn label(h: &Hub, m: &LiveMerge) {
    if let Some(at) = m.start_unix_s {
        h.begin_at((at * 1000.0) as u64);
    }
    let Some(first) = m.runs.values().next() else {
        return;
    };
    let rate = first.rate;
    h.relabel(|i| {
        i.method = first.method.clone();
        i.url = first.url.clone();
        i.server_address = first.host.clone();
        i.server_port = first.port;
        i.scheme = first.scheme.clone();
        i.offered_rate = rate;
    });
}

impl FleetArgs {
    /// The first flag given that only a live channel serves (none: none is given).
    pub fn live_only(&self) -> Option<&'static str> {
        [
            (!self.abort_on.is_empty(), "--abort-on"),
            (self.live_log.is_some(), "--live-log"),
            (self.dashboard.is_some(), "--dashboard"),
            (self.push.metrics_listen.is_some(), "--metrics-listen"),
            (!self.push.out.is_empty(), "--out"),
            (self.parts.is_some(), "--parts"),
            (self.deadline.is_some(), "--deadline"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag))
    }

    /// How long segments have to be ready: --start-in, or `default`.
    pub fn ready_within(&self, default: Duration) -> Duration {
        self.start_in.unwrap_or(default)
    }

    /// Checks the conditions and the output paths, and opens the live log, before
    /// anything starts; segments have `ready` to be ready, and `command` runs them.
    pub fn check(&self, ready: Duration, command: &[String]) -> Result<Checked, Exit> {
        let a = self;
        let waits = Waits {
            ready,
            lead: Duration::from_secs(1),
            stall: a.stall_after,
            deadline: a.deadline.unwrap_or_else(|| match run_length(command) {
                Some(d) => d + Duration::from_secs(120),
                None => Duration::from_secs(3600),
            }),
        };
        let asserts = a.out.assertions()?;
        let aborts = (a.abort_on.iter())
            .map(|c| {
                let x = Assertion::parse(c).map_err(|e| Exit::usage(format!("--abort-on {e}")))?;
                match x.judged_live() {
                    true => Ok(x),
                    false => Err(Exit::usage(format!(
                        "--abort-on {c:?}: judged on the fleet's live figures, which are the response's latency statistics, rps and errors; give it to --assert to judge at the end"
                    ))),
                }
            })
            .collect::<Result<Vec<_>, Exit>>()?;
        a.out.check_paths()?;
        let live_log = match &a.live_log {
            Some(p) => Some(
                std::fs::File::create(p)
                    .map(std::io::BufWriter::new)
                    .map_err(|e| Exit::usage(format!("--live-log {p}: {e}")))?,
            ),
            None => None,
        };
        Ok(Checked {
            waits,
            asserts,
            aborts,
            live_log,
            live: Live::open(self, &title(command))?,
        })
    }
}

/// Drives the segments of `channel` (named by `names`) as `f` says, merges their
/// results and reports them as `command`'s tool would.
pub fn drive(
    channel: Channel,
    names: &[String],
    f: &FleetArgs,
    checked: Checked,
    command: &[String],
) -> Result<(), Exit> {
    let Checked {
        waits,
        asserts,
        aborts,
        mut live_log,
        mut live,
    } = checked;
    let n = names.len();
    let mut merge = LiveMerge::default();
    let mut stopped_by: Option<FleetStop> = None;
    let outcome = fleet::run::run(channel, names, waits, &mut merge, |s, m| {
        show_second(s, n, live_log.as_mut());
        live.second(s, m);
        let total = &m.total;
        let figures = LiveFigures {
            latency: &total.latency.0,
            uncorrected: &total.uncorrected.0,
            seconds: f64::from(s.t + 1),
            started: m.started,
            completed: total.completed,
            failed: total.failed,
        };
        if stopped_by.is_some() {
            return Decision::Go;
        }
        let failed = aborts
            .iter()
            .filter_map(|x| x.check_live(&figures))
            .find(|c| !c.passed);
        match failed {
            Some(c) => {
                eprintln!(
                        "stampede: the fleet fails --abort-on {:?} after {} s ({}): stopping every segment",
                        c.assertion,
                        s.t + 1,
                        c.actual
                    );
                stopped_by = Some(FleetStop {
                    condition: c.assertion,
                    at_s: f64::from(s.t + 1),
                    actual: c.actual,
                });
                Decision::Stop
            }
            None => Decision::Go,
        }
    });
    let merged = merge_outcome(outcome, n, f, stopped_by.clone());
    live.end(f, merged.as_ref().ok(), &title(command));
    let r = merged?;
    let format = f.format;
    let shown = crate::merge::emit_with(
        &r,
        |r| crate::fanout::print_report(command, format, r),
        &f.out,
        &asserts,
    );
    match stopped_by {
        Some(s) => Err(Exit::fail(format!(
            "stopped by --abort-on {:?} after {} s ({})",
            s.condition, s.at_s, s.actual
        ))),
        None => shown,
    }
}

/// The segments' results merged, the missing named; an error when some are missing
/// and the others may not be merged alone.
fn merge_outcome(
    outcome: fleet::run::Outcome,
    n: usize,
    f: &FleetArgs,
    stopped_by: Option<FleetStop>,
) -> Result<RunResult, Exit> {
    let mut merger = Merger::new(false);
    let mut missing = Vec::new();
    if let Some(d) = &f.parts {
        std::fs::create_dir_all(d).map_err(|e| Exit::fail(format!("--parts {d}: {e}")))?;
    }
    for (k, seg) in outcome.segments.into_iter().enumerate() {
        match seg.result {
            Ok(r) => {
                if let Some(d) = &f.parts {
                    let path = std::path::Path::new(d).join(format!("segment-{}.json", k + 1));
                    common::write_file(&path.to_string_lossy(), &(r.to_json() + "\n"))?;
                }
                merger
                    .add(&r)
                    .map_err(|e| Exit::fail(format!("{}: {e}", seg.host)))?
            }
            Err(why) => {
                eprintln!(
                    "stampede: segment {} on {} is missing: {why}",
                    seg.segment, seg.host
                );
                missing.push(FleetMissing {
                    segment: seg.segment,
                    host: seg.host,
                    why,
                });
            }
        }
    }
    let names = || {
        (missing.iter())
            .map(|m| format!("{} ({})", m.host, m.segment))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !missing.is_empty() && (!f.partial || missing.len() == n) {
        return Err(Exit::fail(format!(
            "{} of {n} segments failed ({}); nothing merged{}",
            missing.len(),
            names(),
            if missing.len() < n {
                " (--partial merges the others)"
            } else {
                ""
            }
        )));
    }
    let mut r = merger.finish().map_err(|e| Exit::fail(e.to_string()))?;
    if !missing.is_empty() {
        eprintln!(
            "stampede: merged {} of {n} segments; missing: {}",
            n - missing.len(),
            names()
        );
    }
    r.fleet = Some(FleetSummary {
        segments: n as u32,
        merged: (n - missing.len()) as u32,
        missing,
        stopped_by,
        refused_frames: outcome.refused,
        refused_connections: outcome.refused_joins,
    });
    Ok(r)
}

/// What the fleet's page and report say it ran.
fn title(command: &[String]) -> String {
    match command.is_empty() {
        true => "a fleet's run (merged)".to_string(),
        false => format!("{} (merged)", command.join(" ")),
    }
}

/// How long the command runs, where it says (`-d`, `--duration`, `-z`, `-duration`).
pub fn run_length(command: &[String]) -> Option<Duration> {
    let flags = ["-d", "--duration", "-z", "-duration"];
    (0..command.len()).find_map(|i| {
        let value = match command[i].split_once('=') {
            Some((f, v)) if flags.contains(&f) => v,
            _ if flags.contains(&command[i].as_str()) => command.get(i + 1)?.as_str(),
            _ => return None,
        };
        common::parse_duration(value).ok()
    })
}

/// The fleet's second on standard error, and as a line of the live log.
fn show_second(
    s: &stampede_lab::fleet::FleetSecond,
    n: usize,
    log: Option<&mut std::io::BufWriter<std::fs::File>>,
) {
    use std::io::Write as _;
    let h = &s.latency.0;
    let at = |q: f64| stampede_engine::value_at_percentile(h, q);
    let (p50, p90, p99) = if h.is_empty() {
        (0, 0, 0)
    } else {
        (at(50.0), at(90.0), at(99.0))
    };
    eprintln!(
        "fleet {:>4} s  {:>9} req/s  p50 {}  p99 {}  failed {}  {}/{n} segments",
        s.t + 1,
        thousands(s.completed),
        human_us(p50 as f64),
        human_us(p99 as f64),
        s.failed,
        s.segments
    );
    if let Some(w) = log {
        let line = serde_json::json!({
            "t": s.t,
            "segments": s.segments,
            "completed": s.completed,
            "failed": s.failed,
            "p50_us": p50,
            "p90_us": p90,
            "p99_us": p99,
            "histogram": s.latency.to_base64(),
        });
        let _ = writeln!(w, "{line}").and_then(|_| w.flush());
    }
}
