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
use stampede_lab::fanout;
use stampede_lab::fleet;
use stampede_lab::remote::Hosts;

use crate::common::Exit;
use crate::coordinate::FleetArgs;

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
    #[command(flatten)]
    pub fleet: FleetArgs,
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
    let ready = a.fleet.ready_within(Duration::from_secs(10));
    let checked = a.fleet.check(ready, &a.command)?;
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
        ready.as_secs_f64()
    );
    let channel = fleet::run::Channel::ssh(&hosts, |k, n| {
        let mut words = vec![remote.clone()];
        words.extend(fanout::fleet_command(&command, &format!("{k}/{n}")));
        words
    })
    .map_err(|e| Exit::fail(e.to_string()))?;
    crate::coordinate::drive(channel, &a.hosts, &a.fleet, checked, &a.command)
}
