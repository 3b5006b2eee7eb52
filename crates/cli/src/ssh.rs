//! `stampede ssh`: a run's segments on several hosts over SSH, merged.
//!
//! Each host runs one segment of the given `stampede load` command (`--segment K/N`,
//! one shared `--start-at`, `--json -`) through the user's own `ssh` (their config,
//! keys and agent; `BatchMode`, so a host that would ask for a password fails instead
//! of waiting). `stampede` must be on the host's PATH, or `--copy` puts this binary
//! there first (with `scp`). The results come back on each ssh's standard output and
//! are merged exactly; a host that fails is named, and the others are merged only
//! with `--partial`.

use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::Args;
use stampede_engine::merge::Merger;
use stampede_engine::RunResult;
use stampede_report::summary;

use crate::common::{self, Exit};

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
    /// Write the merged result as JSON
    #[arg(long = "json", value_name = "FILE")]
    pub json: Option<String>,
    /// The stampede command each host runs: `load URL …`
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Quotes `s` for the remote shell ssh hands the command to.
fn quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=,@%+".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

fn ssh_base(a: &SshArgs, program: &str) -> Command {
    let mut c = Command::new(program);
    c.args(["-o", "BatchMode=yes"]);
    for o in &a.options {
        c.args(["-o", o]);
    }
    c
}

/// Runs the segments, merges, reports.
pub fn main(a: SshArgs) -> Result<(), Exit> {
    let Some(sub) = a.command.first() else {
        return Err(Exit::usage(
            "give the stampede command after --: -- load URL …",
        ));
    };
    if sub != "load" {
        return Err(Exit::usage(format!(
            "after --: {sub:?} is not load; each host runs `stampede load …` (whose result it prints as JSON)"
        )));
    }
    for taken in ["--segment", "--start-at", "--json"] {
        if a.command
            .iter()
            .any(|x| x == taken || x.starts_with(&format!("{taken}=")))
        {
            return Err(Exit::usage(format!(
                "after --: leave out {taken}; each host is given its own"
            )));
        }
    }
    if a.hosts.iter().any(|h| h.trim().is_empty()) {
        return Err(Exit::usage("--hosts: a host name is empty"));
    }
    let n = a.hosts.len();
    let remote = if a.copy {
        copy_binary(&a)?
    } else {
        a.remote.clone()
    };
    let at = (SystemTime::now() + a.start_in)
        .duration_since(UNIX_EPOCH)
        .map_err(|_| Exit::usage("--start-in: the start is before 1970"))?
        .as_secs_f64();
    let children = a
        .hosts
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let mut words = vec![quote(&remote), "load".into(), "-q".into()];
            words.extend(a.command[1..].iter().map(|w| quote(w)));
            words.extend([
                "--segment".into(),
                format!("{}/{n}", i + 1),
                "--start-at".into(),
                format!("{at:.3}"),
                "--json".into(),
                "-".into(),
            ]);
            let child = ssh_base(&a, "ssh")
                .arg(host)
                .arg(words.join(" "))
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| Exit::fail(format!("cannot run ssh (is it on PATH?): {e}")))?;
            Ok((host.clone(), child))
        })
        .collect::<Result<Vec<_>, Exit>>()?;
    eprintln!(
        "stampede: {n} segments started over ssh; shared start in {:.1} s",
        a.start_in.as_secs_f64()
    );
    let mut merger = Merger::new(false);
    let mut failed = Vec::new();
    for (i, (host, child)) in children.into_iter().enumerate() {
        let out = child
            .wait_with_output()
            .map_err(|e| Exit::fail(format!("{host}: {e}")))?;
        let parsed = if out.status.success() {
            serde_json::from_slice::<RunResult>(&out.stdout)
                .map_err(|e| format!("its output is not a stampede result: {e}"))
        } else {
            let err = String::from_utf8_lossy(&out.stderr);
            Err(format!(
                "exited {}: {}",
                out.status
                    .code()
                    .map_or("by a signal".into(), |c| c.to_string()),
                err.trim().lines().last().unwrap_or("")
            ))
        };
        match parsed {
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
    common::out(&summary(&r));
    if let Some(p) = &a.json {
        common::write_file(p, &(r.to_json() + "\n"))?;
    }
    Ok(())
}

/// Copies this executable to every host; returns the remote path.
fn copy_binary(a: &SshArgs) -> Result<String, Exit> {
    let exe = std::env::current_exe()
        .map_err(|e| Exit::fail(format!("cannot find this stampede executable: {e}")))?;
    let remote = format!("/tmp/stampede-{}", env!("CARGO_PKG_VERSION"));
    for host in &a.hosts {
        let out = ssh_base(a, "scp")
            .arg("-q")
            .arg(&exe)
            .arg(format!("{host}:{remote}"))
            .stdin(Stdio::null())
            .output()
            .map_err(|e| Exit::fail(format!("cannot run scp (is it on PATH?): {e}")))?;
        if !out.status.success() {
            return Err(Exit::fail(format!(
                "copying stampede to {host} failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
    }
    Ok(remote)
}

#[cfg(test)]
mod tests {
    use super::quote;

    #[test]
    fn words_reach_the_remote_shell_intact() {
        assert_eq!(quote("http://h:8/p?a=1"), "'http://h:8/p?a=1'");
        assert_eq!(quote("-c"), "-c");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote(""), "''");
        assert_eq!(quote("p99 < 5ms"), "'p99 < 5ms'");
    }
}
