//! `stampede ssh`: a run's segments on several hosts over SSH, run as one fleet.
//!
//! Each host runs one segment of the given `stampede load` (or dialect) command
//! (`--segment K/N`, `--fleet`, `--json -`) through the user's own `ssh`
//! ([`stampede_lab::remote`]: their config, keys and agent; `BatchMode`, so a host
//! that would ask for a password fails instead of waiting). `stampede` must be on the
//! host's PATH, or `--copy` puts this binary there first (with `scp`). The files the
//! command reads travel with it ([`stampede_lab::fanout::inputs`]: one archive per
//! host, unpacked and checked against its digests there before the start, the command
//! rewritten to the copy).
//!
//! The ssh connections are the fleet's channel ([`stampede_lab::fleet`]): each
//! segment says ready and waits; the start is given to all at once when every one is
//! ready (or `--start-in` has passed; the late are missing); each second's figures
//! come back as they are made and are merged exactly into one live line (and
//! `--live-log`); `--abort-on` is judged on them and stops every segment; a segment
//! that stalls or outruns `--deadline` is stopped. The results are merged exactly
//! and reported in the command's own form; the segments missing are named (the
//! others are merged only with `--partial`), in the result's `fleet` too.

use std::time::Duration;

use clap::Args;
use stampede_engine::assert::{Assertion, LiveFigures};
use stampede_engine::merge::Merger;
use stampede_engine::{FleetMissing, FleetStop, FleetSummary};
use stampede_lab::fleet::{self, run::Decision, run::Waits, LiveMerge};
use stampede_lab::remote::Hosts;
use stampede_report::units::{human_us, thousands};

use crate::common::{self, Exit};
use crate::merge::Report;
use stampede_lab::fanout;

/// Arguments of `stampede ssh`.
#[derive(Args, Debug)]
pub struct SshArgs {
    /// Hosts, one segment each, as ssh takes them (`host`, `user@host`, an alias; a
    /// host named twice runs two segments)
    #[arg(
        long = "hosts",
        value_name = "A,B,…",
        value_delimiter = ',',
        required = true
    )]
    pub hosts: Vec<String>,
    /// How long every segment has to connect, read its inputs and say it is ready; one
    /// that is not ready by then is stopped and counted missing
    #[arg(long = "start-in", value_name = "DURATION", default_value = "10s", value_parser = common::parse_duration)]
    pub start_in: Duration,
    /// How long after the shared start a host may take to send its result back; one
    /// still running then is stopped and counted missing (set it above the run's
    /// duration)
    #[arg(long = "deadline", value_name = "DURATION", default_value = "1h", value_parser = common::parse_duration)]
    pub deadline: Duration,
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
    /// Write each segment's own result to DIR/segment-K.json as well (`stampede merge`
    /// of them is the merged result)
    #[arg(long = "parts", value_name = "DIR")]
    pub parts: Option<String>,
    /// Copy this stampede to each host (as /tmp/stampede-VERSION) and run that
    #[arg(long = "copy")]
    pub copy: bool,
    /// The stampede program on the hosts, when not copied
    #[arg(
        long = "remote-stampede",
        value_name = "PATH",
        default_value = "stampede"
    )]
    pub remote: String,
    /// An option for ssh and scp (repeatable), e.g. -o 'Port=2222'
    #[arg(short = 'o', long = "ssh-option", value_name = "OPTION")]
    pub options: Vec<String>,
    /// Merge the hosts that succeeded when some fail
    #[arg(long = "partial")]
    pub partial: bool,
    /// The report printed (default: the command's own, e.g. wrk's for `wrk …`)
    #[arg(long = "format", value_enum)]
    pub format: Option<Report>,
    #[command(flatten)]
    pub out: common::Outputs,
    /// The stampede command each host runs: `load URL …` or a dialect's (`wrk …`)
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Runs the segments, merges, reports.
pub fn main(a: SshArgs) -> Result<(), Exit> {
    fanout::check(&a.command, "host")?;
    if a.hosts.iter().any(|h| h.trim().is_empty()) {
        return Err(Exit::usage("--hosts: a host name is empty"));
    }
    if let Some(e) = a
        .hosts
        .iter()
        .find_map(|h| stampede_lab::remote::check_host(h).err())
    {
        return Err(Exit::usage(format!("--hosts: {e}")));
    }
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
    let mut live_log = match &a.live_log {
        Some(p) => Some(
            std::fs::File::create(p)
                .map(std::io::BufWriter::new)
                .map_err(|e| Exit::usage(format!("--live-log {p}: {e}")))?,
        ),
        None => None,
    };
    let hosts = Hosts {
        hosts: a.hosts.clone(),
        options: a.options.clone(),
        program: Some(a.remote.clone()),
        copy: a.copy,
    };
    let n = a.hosts.len();
    // Every input is read, bounded and digested before anything reaches a host.
    let inputs = fanout::inputs::find(&a.command, fanout::inputs::OVER_SSH)?;
    let mut unique = a.hosts.clone();
    unique.sort();
    unique.dedup();
    let remote = Hosts {
        hosts: unique.clone(),
        ..hosts.clone()
    }
    .prepare()
    .map_err(|e| Exit::fail(e.to_string()))?;
    let dir = format!("/tmp/stampede-inputs-{}", &inputs.digest()[..16]);
    if !inputs.files.is_empty() {
        eprintln!(
            "stampede: shipping {} input files ({} bytes) to {dir} on each host",
            inputs.files.len(),
            inputs.bytes()
        );
        let archive = fanout::inputs::tar(&inputs.files, &inputs.sums());
        Hosts {
            hosts: unique,
            ..hosts.clone()
        }
        .ship(&dir, &archive)
        .map_err(|e| Exit::fail(e.to_string()))?;
    }
    let command = inputs.command_at(&dir);
    eprintln!(
        "stampede: {n} segments over ssh; the start is given once every one is ready (within {:.1} s)",
        a.start_in.as_secs_f64()
    );
    let waits = Waits {
        ready: a.start_in,
        lead: Duration::from_secs(1),
        stall: a.stall_after,
        deadline: a.deadline,
    };
    let mut merge = LiveMerge::default();
    let mut stopped_by: Option<FleetStop> = None;
    let outcome = fleet::run::run(
        &hosts,
        |k, n| {
            let mut words = vec![remote.clone()];
            words.extend(fanout::fleet_command(&command, &format!("{k}/{n}")));
            words
        },
        waits,
        &mut merge,
        |s, m| {
            show_second(s, n, live_log.as_mut());
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
        },
    )
    .map_err(|e| Exit::fail(e.to_string()))?;
    let mut merger = Merger::new(false);
    let mut missing = Vec::new();
    if let Some(d) = &a.parts {
        std::fs::create_dir_all(d).map_err(|e| Exit::fail(format!("--parts {d}: {e}")))?;
    }
    for (k, seg) in outcome.segments.into_iter().enumerate() {
        match seg.result {
            Ok(r) => {
                if let Some(d) = &a.parts {
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
    if !missing.is_empty() && (!a.partial || missing.len() == n) {
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
        stopped_by: stopped_by.clone(),
        refused_frames: outcome.refused,
    });
    let (command, format) = (&a.command, a.format);
    let shown = crate::merge::emit_with(
        &r,
        |r| crate::fanout::print_report(command, format, r),
        &a.out,
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
