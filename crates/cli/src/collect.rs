//! `stampede collect`: the coordinator of a fleet whose processes something else
//! starts — a Kubernetes Job, a batch scheduler, a script over many machines — where
//! the processes can reach the coordinator but it cannot start them.
//!
//! It listens; each process runs its command with `--segment K/N --fleet-connect
//! HOST:PORT` and the run's token in `$STAMPEDE_FLEET_TOKEN`, joins, and from then on
//! is driven as `stampede ssh` drives its hosts' ([`crate::coordinate`]): the start
//! given once every segment is ready, each second merged exactly into the live line,
//! `--abort-on` judged on it, the stalled and the missing named, the results merged
//! and reported. The results come over the connection, never through a log. Only the
//! run's own processes are taken ([`stampede_lab::fleet::collect`]).

use std::io::Write;
use std::time::Duration;

use clap::Args;
use stampede_lab::fanout;
use stampede_lab::fleet::collect;

use crate::common::Exit;
use crate::coordinate::FleetArgs;

/// Most bytes of a token file.
const MAX_TOKEN_FILE: u64 = 1024;

/// Arguments of `stampede collect`.
#[derive(Args, Debug)]
pub struct CollectArgs {
    /// Where the fleet's processes connect, e.g. 0.0.0.0:7411 (port 0: one the system
    /// picks, said on standard error)
    #[arg(long = "listen", value_name = "ADDR:PORT")]
    pub listen: String,
    /// How many segments the run has: each process runs one, `--segment K/N`
    #[arg(long = "segments", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub segments: u32,
    /// The run's token: read from FILE when it exists, otherwise made (128 random
    /// bits) and written there, readable by its owner only. Each process gives it in
    /// $STAMPEDE_FLEET_TOKEN; a connection without it is refused
    #[arg(long = "token-file", value_name = "FILE")]
    pub token_file: String,
    #[command(flatten)]
    pub fleet: FleetArgs,
    /// The command the processes run (`load URL …`, `wrk …`, `vllm bench serve …`):
    /// the merged run is reported as its tool reports; without it, as `load` does
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Listens, drives the segments that join, merges, reports.
pub fn main(a: CollectArgs) -> Result<(), Exit> {
    if !a.command.is_empty() {
        fanout::check(&a.command, "process")?;
    }
    let ready = a.fleet.ready_within(Duration::from_secs(60));
    let checked = a.fleet.check(ready, &a.command)?;
    let token = token(&a.token_file)?;
    let listener = std::net::TcpListener::bind(&a.listen)
        .map_err(|e| Exit::usage(format!("--listen {}: {e}", a.listen)))?;
    let at = listener
        .local_addr()
        .map_err(|e| Exit::fail(format!("--listen {}: {e}", a.listen)))?;
    let n = a.segments as usize;
    eprintln!(
        "stampede: collecting {n} segments on {at}; the start is given once every one is ready (within {:.1} s)",
        ready.as_secs_f64()
    );
    let channel = collect::listen(listener, token, n);
    let names: Vec<String> = (1..=n).map(|k| format!("segment {k}")).collect();
    crate::coordinate::drive(channel, &names, &a.fleet, checked, &a.command)
}

/// The run's token from `path`, or a new one written there.
fn token(path: &str) -> Result<String, Exit> {
    use std::os::unix::fs::OpenOptionsExt;
    match std::path::Path::new(path).exists() {
        true => read_token(path),
        false => {
            let t = collect::token().map_err(|e| Exit::fail(format!("a token: {e}")))?;
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path)
                .and_then(|mut f| f.write_all(format!("{t}\n").as_bytes()))
                .map_err(|e| Exit::usage(format!("--token-file {path}: {e}")))?;
            Ok(t)
        }
    }
}

/// The run's token in `path` (`--token-file`).
pub fn read_token(path: &str) -> Result<String, Exit> {
    use std::io::Read;
    let flag = |e: String| Exit::usage(format!("--token-file {path}: {e}"));
    let f = std::fs::File::open(path).map_err(|e| flag(e.to_string()))?;
    let mut text = String::new();
    f.take(MAX_TOKEN_FILE + 1)
        .read_to_string(&mut text)
        .map_err(|e| flag(e.to_string()))?;
    let t = text.trim();
    if text.len() as u64 > MAX_TOKEN_FILE
        || t.len() < 16
        || !t.chars().all(|c| c.is_ascii_graphic())
    {
        return Err(flag(format!(
            "a token is one word of 16 to {MAX_TOKEN_FILE} printable characters"
        )));
    }
    Ok(t.to_string())
}
