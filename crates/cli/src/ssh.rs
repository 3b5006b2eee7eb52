//! `stampede ssh`: a run's segments on several hosts over SSH, merged.
//!
//! Each host runs one segment of the given `stampede load` (or dialect) command
//! (`--segment K/N`, one shared `--start-at`, `--json -`) through the user's own `ssh`
//! ([`stampede_lab::remote`]: their config, keys and agent; `BatchMode`, so a host that
//! would ask for a password fails instead of waiting). `stampede` must be on the host's PATH, or `--copy` puts this binary
//! there first (with `scp`). The files the command reads travel with it
//! ([`stampede_lab::fanout::inputs`]: one archive per host, unpacked and checked
//! against its digests there before the start, the command rewritten to the copy).
//! The results come back on each ssh's standard output and
//! are merged exactly and reported in the command's own form (wrk's report for a
//! `wrk` command); a host that fails is named, and the others are merged only with
//! `--partial`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::Args;
use stampede_engine::merge::Merger;
use stampede_lab::remote::Hosts;

use crate::common::{self, Exit};
use crate::merge::Report;
use stampede_lab::fanout;

/// Arguments of `stampede ssh`.
#[derive(Args, Debug)]
pub struct SshArgs {
    /// Hosts, one segment each, as ssh takes them (`host`, `user@host`, an alias)
    #[arg(
        long = "hosts",
        value_name = "A,B,…",
        value_delimiter = ',',
        required = true
    )]
    pub hosts: Vec<String>,
    /// How long after now the shared start is (time to connect to every host)
    #[arg(long = "start-in", value_name = "DURATION", default_value = "10s", value_parser = common::parse_duration)]
    pub start_in: Duration,
    /// How long after the shared start a host may take to send its result back; one
    /// still running then is stopped and counted as failed (set it above the run's
    /// duration)
    #[arg(long = "deadline", value_name = "DURATION", default_value = "1h", value_parser = common::parse_duration)]
    pub deadline: Duration,
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
    a.out.check_paths()?;
    let hosts = Hosts {
        hosts: a.hosts.clone(),
        options: a.options.clone(),
        program: Some(a.remote.clone()),
        copy: a.copy,
    };
    let n = a.hosts.len();
    // Every input is read, bounded and digested before anything reaches a host.
    let inputs = fanout::inputs::find(&a.command, fanout::inputs::OVER_SSH)
        .map_err(|e| Exit::usage(e.to_string()))?;
    let remote = hosts.prepare().map_err(|e| Exit::fail(e.to_string()))?;
    let dir = format!("/tmp/stampede-inputs-{}", &inputs.digest()[..16]);
    if !inputs.files.is_empty() {
        eprintln!(
            "stampede: shipping {} input files ({} bytes) to {dir} on each host",
            inputs.files.len(),
            inputs.bytes()
        );
        let archive = fanout::inputs::tar(&inputs.files, &inputs.sums());
        hosts
            .ship(&dir, &archive)
            .map_err(|e| Exit::fail(e.to_string()))?;
    }
    let command = inputs.command_at(&dir);
    let at = (SystemTime::now() + a.start_in)
        .duration_since(UNIX_EPOCH)
        .map_err(|_| Exit::usage("--start-in: the start is before 1970"))?
        .as_secs_f64();
    eprintln!(
        "stampede: {n} segments starting over ssh; shared start in {:.1} s",
        a.start_in.as_secs_f64()
    );
    let results = hosts
        .run_segments(
            |k, n| {
                let mut words = vec![remote.clone()];
                words.extend(fanout::segment_command(&command, &format!("{k}/{n}"), at));
                words
            },
            None,
            a.start_in + a.deadline,
        )
        .map_err(|e| Exit::fail(e.to_string()))?;
    let mut merger = Merger::new(false);
    let mut failed = Vec::new();
    for (i, (host, r)) in results.into_iter().enumerate() {
        match r {
            Ok(r) => merger
                .add(&r)
                .map_err(|e| Exit::fail(format!("{host}: {e}")))?,
            Err(e) => {
                eprintln!("stampede: segment {}/{n} on {host} failed: {e}", i + 1);
                failed.push(host);
            }
        }
    }
    if !failed.is_empty() && (!a.partial || failed.len() == n) {
        return Err(Exit::fail(format!(
            "{} of {n} hosts failed ({}); nothing merged{}",
            failed.len(),
            failed.join(", "),
            if failed.len() < n {
                " (--partial merges the others)"
            } else {
                ""
            }
        )));
    }
    let r = merger.finish().map_err(|e| Exit::fail(e.to_string()))?;
    if !failed.is_empty() {
        eprintln!(
            "stampede: merged {} of {n} segments; missing: {}",
            n - failed.len(),
            failed.join(", ")
        );
    }
    let (command, format) = (&a.command, a.format);
    crate::merge::emit_with(
        &r,
        |r| crate::fanout::print_report(command, format, r),
        &a.out,
        &asserts,
    )
}
