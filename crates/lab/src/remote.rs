//! Running stampede on other hosts through the user's own `ssh`: one segment of a run
//! per host, their JSON results read back and parsed.
//!
//! ssh is the user's (their config, keys and agent), always with `BatchMode=yes`, so
//! that a host that would ask for a password fails at once instead of waiting. The
//! remote command is quoted word by word for the remote shell. `stampede ssh` and a
//! plan's `[client] hosts` both start their segments here.

use std::io::Write;
use std::process::{Child, Command, Stdio};

use stampede_engine::RunResult;

/// Each host with its segment's result, or what went wrong there.
pub type Outcomes = Vec<(String, Result<RunResult, String>)>;

/// How to reach the hosts and the stampede on them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hosts {
    /// ssh destinations (`host`, `user@host`, an alias from the user's ssh config).
    pub hosts: Vec<String>,
    /// `-o` options for ssh and scp.
    pub options: Vec<String>,
    /// The stampede program on the hosts (`stampede` on their PATH by default).
    pub program: Option<String>,
    /// Copy this stampede executable to each host first (as `/tmp/stampede-VERSION`).
    pub copy: bool,
}

/// Quotes `s` for the POSIX shell ssh hands the remote command to.
pub fn quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=,@%+".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

impl Hosts {
    /// `ssh` or `scp` with the batch-mode and user options.
    pub fn base(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.args(["-o", "BatchMode=yes"]);
        for o in &self.options {
            c.args(["-o", o]);
        }
        c
    }

    /// The stampede to run on the hosts: copied there first when asked.
    pub fn prepare(&self) -> Result<String, String> {
        if !self.copy {
            return Ok(self
                .program
                .clone()
                .unwrap_or_else(|| "stampede".to_string()));
        }
        let exe = std::env::current_exe()
            .map_err(|e| format!("cannot find this stampede executable: {e}"))?;
        let remote = format!("/tmp/stampede-{}", env!("CARGO_PKG_VERSION"));
        for host in &self.hosts {
            let out = self
                .base("scp")
                .arg("-q")
                .arg(&exe)
                .arg(format!("{host}:{remote}"))
                .stdin(Stdio::null())
                .output()
                .map_err(|e| format!("cannot run scp (is it on PATH?): {e}"))?;
            if !out.status.success() {
                return Err(format!(
                    "copying stampede to {host} failed: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
        }
        Ok(remote)
    }

    /// Starts `words` (quoted here) on `host`, with `input` on its standard input.
    pub fn spawn(
        &self,
        host: &str,
        words: &[String],
        input: Option<&[u8]>,
    ) -> Result<Child, String> {
        let line: Vec<String> = words.iter().map(|w| quote(w)).collect();
        let mut child = self
            .base("ssh")
            .arg(host)
            .arg(line.join(" "))
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run ssh (is it on PATH?): {e}"))?;
        if let (Some(bytes), Some(mut stdin)) = (input, child.stdin.take()) {
            stdin
                .write_all(bytes)
                .map_err(|e| format!("{host}: writing to ssh: {e}"))?;
        }
        Ok(child)
    }

    /// Runs segment K of N on host K (`words_for(K, N)` is the remote command, whose
    /// standard output is a result as JSON), all at once; returns each host's result or
    /// what went wrong there, in host order.
    pub fn run_segments(
        &self,
        words_for: impl Fn(usize, usize) -> Vec<String>,
        input: Option<&[u8]>,
    ) -> Result<Outcomes, String> {
        let n = self.hosts.len();
        let children = self
            .hosts
            .iter()
            .enumerate()
            .map(|(i, host)| Ok((host.clone(), self.spawn(host, &words_for(i + 1, n), input)?)))
            .collect::<Result<Vec<_>, String>>()?;
        Ok(children
            .into_iter()
            .map(|(host, child)| {
                let r = match child.wait_with_output() {
                    Err(e) => Err(format!("ssh: {e}")),
                    Ok(out) if out.status.success() => parse_result(&out.stdout),
                    Ok(out) => {
                        let err = String::from_utf8_lossy(&out.stderr);
                        Err(format!(
                            "exited {}: {}",
                            out.status
                                .code()
                                .map_or("by a signal".into(), |c| c.to_string()),
                            err.trim().lines().last().unwrap_or("")
                        ))
                    }
                };
                (host, r)
            })
            .collect())
    }
}

/// The result in a segment's output: its JSON alone, or (where its reports and
/// warnings are mixed in, as in a pod's log) the last object that begins with a line
/// `{` and ends with a line `}`.
pub fn parse_result(out: &[u8]) -> Result<RunResult, String> {
    if let Ok(r) = serde_json::from_slice::<RunResult>(out) {
        return Ok(r);
    }
    let text = String::from_utf8_lossy(out);
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .rposition(|l| *l == "{")
        .ok_or("its output holds no stampede result (JSON)")?;
    let end = lines[start..]
        .iter()
        .position(|l| *l == "}")
        .map(|e| start + e)
        .ok_or("its result (JSON) is cut short")?;
    serde_json::from_str(&lines[start..=end].join("\n"))
        .map_err(|e| format!("its output is not a stampede result: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_reach_the_remote_shell_intact() {
        assert_eq!(quote("http://h:8/p?a=1"), "'http://h:8/p?a=1'");
        assert_eq!(quote("-c"), "-c");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote(""), "''");
        assert_eq!(quote("p99 < 5ms"), "'p99 < 5ms'");
    }

    #[test]
    fn a_result_is_found_among_report_lines() {
        assert!(parse_result(b"Running 1s test\n  Thread Stats\n").is_err());
        assert!(parse_result(b"report\n{\n  \"a\": 1\n").is_err());
    }
}
