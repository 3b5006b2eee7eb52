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
pub type Outcomes = Vec<(String, Result<RunResult, RemoteError>)>;

/// What went wrong reaching a host, or with what came back from it.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// Not an ssh destination this code passes on.
    #[error("host {host:?} {why}")]
    Host {
        /// The destination as given.
        host: String,
        /// What is wrong with it.
        why: String,
    },
    /// Not an environment variable's name.
    #[error(
        "{0:?} is not an environment variable's name (a letter or _, then letters, digits and _)"
    )]
    EnvName(String),
    /// This stampede's own executable cannot be found (to copy it).
    #[error("cannot find this stampede executable: {0}")]
    Executable(#[source] std::io::Error),
    /// A program (ssh, scp) does not start.
    #[error("cannot run {program} (is it on PATH?): {source}")]
    Spawn {
        /// The program.
        program: String,
        /// The system's answer.
        source: std::io::Error,
    },
    /// Copying stampede to a host failed.
    #[error("copying stampede to {host} failed: {stderr}")]
    Copy {
        /// The host.
        host: String,
        /// The last of scp's complaint.
        stderr: String,
    },
    /// The run's inputs did not arrive whole on a host.
    #[error("shipping the run's inputs to {host} failed: {stderr}")]
    Ship {
        /// The host.
        host: String,
        /// The last of the remote shell's complaint.
        stderr: String,
    },
    /// Starting the command on a host failed.
    #[error("{host}: {source}")]
    On {
        /// The host.
        host: String,
        /// What failed.
        source: Box<RemoteError>,
    },
    /// A started ssh's status could not be read.
    #[error("ssh: {0}")]
    Status(#[source] std::io::Error),
    /// The host was stopped at the deadline.
    #[error("gave no result within {0:.0} s of the start; stopped")]
    Late(f64),
    /// The remote command failed (`code`: `None` when a signal ended it).
    #[error("exited {}: {stderr}", code.map_or("by a signal".to_string(), |c| c.to_string()))]
    Exit {
        /// Its exit code.
        code: Option<i32>,
        /// The last line of its standard error.
        stderr: String,
    },
    /// Its output holds no result.
    #[error("its output holds no stampede result (JSON)")]
    NoResult,
    /// Its result is cut short.
    #[error("its result (JSON) is cut short")]
    CutShort,
    /// Its output is JSON but not a result.
    #[error("its output is not a stampede result: {0}")]
    NotResult(String),
}

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

/// The hosts this stampede has been copied to (`copy`), so that a bench of many runs
/// copies it to each host once.
#[derive(Debug, Default)]
pub struct Copies(std::collections::BTreeSet<String>);

impl Copies {
    /// The stampede program to run on `on` (some of `hosts`' hosts, or a target's
    /// host), copying it to those that do not have it yet when `hosts.copy`.
    pub fn program(&mut self, hosts: &Hosts, on: &[String]) -> Result<String, RemoteError> {
        let missing: Vec<String> = on
            .iter()
            .filter(|h| hosts.copy && !self.0.contains(*h))
            .cloned()
            .collect();
        let program = Hosts {
            hosts: missing.clone(),
            ..hosts.clone()
        }
        .prepare()?;
        self.0.extend(missing);
        Ok(program)
    }
}

/// Checks an ssh destination: a host name, address or ssh-config alias, optionally
/// `user@` before it. One that begins with `-` would reach ssh as an option, and
/// spaces, quotes or control characters have no place in one.
pub fn check_host(host: &str) -> Result<(), RemoteError> {
    let bad = |why: &str| {
        Err(RemoteError::Host {
            host: host.to_string(),
            why: why.to_string(),
        })
    };
    if host.is_empty() {
        return bad("is empty");
    }
    if host.starts_with('-') {
        return bad("begins with '-', which ssh would read as an option");
    }
    match host
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "._-@:[]%".contains(*c)))
    {
        Some(c) => bad(&format!(
            "holds {c:?}; a host is letters, digits and . _ - @ : [ ] % alone"
        )),
        None => Ok(()),
    }
}

/// Checks an environment variable's name for a remote shell's `export NAME=…`: a
/// letter or `_`, then letters, digits and `_`. Anything else would be shell syntax.
pub fn check_env_name(name: &str) -> Result<(), RemoteError> {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if first_ok && chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        Ok(())
    } else {
        Err(RemoteError::EnvName(name.to_string()))
    }
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
    pub fn prepare(&self) -> Result<String, RemoteError> {
        if !self.copy {
            return Ok(self
                .program
                .clone()
                .unwrap_or_else(|| "stampede".to_string()));
        }
        let exe = std::env::current_exe().map_err(RemoteError::Executable)?;
        let remote = format!("/tmp/stampede-{}", env!("CARGO_PKG_VERSION"));
        for host in &self.hosts {
            check_host(host)?;
            let out = self
                .base("scp")
                .arg("-q")
                .arg("--")
                .arg(&exe)
                .arg(format!("{host}:{remote}"))
                .stdin(Stdio::null())
                .output()
                .map_err(|source| RemoteError::Spawn {
                    program: "scp".into(),
                    source,
                })?;
            if !out.status.success() {
                return Err(RemoteError::Copy {
                    host: host.clone(),
                    stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
                });
            }
        }
        Ok(remote)
    }

    /// Unpacks `archive` (a tar of the run's inputs with their `SHA256SUMS`) into
    /// `dir` on every host at once, each checking the digests of what arrived; the
    /// first host where that failed is the error.
    pub fn ship(&self, dir: &str, archive: &[u8]) -> Result<(), RemoteError> {
        let script = format!(
            "mkdir -p {d} && tar -xf - -C {d} && cd {d} && sha256sum -c --quiet SHA256SUMS",
            d = quote(dir)
        );
        let children = (self.hosts.iter())
            .map(|host| {
                check_host(host)?;
                let mut c = self.base("ssh");
                c.arg("--").arg(host).arg(&script);
                let child = start(&mut c, Some(archive)).map_err(|e| RemoteError::On {
                    host: host.clone(),
                    source: Box::new(e),
                })?;
                Ok((host, child))
            })
            .collect::<Result<Vec<_>, RemoteError>>()?;
        let mut first = None;
        for (host, child) in children {
            let out = child.wait_with_output().map_err(RemoteError::Status)?;
            if !out.status.success() && first.is_none() {
                let err = String::from_utf8_lossy(&out.stderr);
                first = Some(RemoteError::Ship {
                    host: host.clone(),
                    stderr: err.trim().lines().last().unwrap_or("").to_string(),
                });
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// Starts `words` (quoted here) on `host`, with `input` on its standard input.
    pub fn spawn(
        &self,
        host: &str,
        words: &[String],
        input: Option<&[u8]>,
    ) -> Result<Child, RemoteError> {
        check_host(host)?;
        let line: Vec<String> = words.iter().map(|w| quote(w)).collect();
        let mut c = self.base("ssh");
        c.arg("--").arg(host).arg(line.join(" "));
        start(&mut c, input).map_err(|e| RemoteError::On {
            host: host.to_string(),
            source: Box::new(e),
        })
    }

    /// Starts `words` (quoted here) on `host` with its standard input left open for
    /// the caller to write (a fleet's orders).
    pub fn spawn_open(&self, host: &str, words: &[String]) -> Result<Child, RemoteError> {
        check_host(host)?;
        let line: Vec<String> = words.iter().map(|w| quote(w)).collect();
        let mut c = self.base("ssh");
        c.arg("--").arg(host).arg(line.join(" "));
        c.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| RemoteError::On {
                host: host.to_string(),
                source: Box::new(RemoteError::Spawn {
                    program: "ssh".into(),
                    source,
                }),
            })
    }

    /// Runs segment K of N on host K (`words_for(K, N)` is the remote command, whose
    /// standard output is a result as JSON), all at once; returns each host's result or
    /// what went wrong there, in host order. A host still running `deadline` after the
    /// start (stuck, or not reading its input) is stopped and counted as failed, so
    /// one host cannot hold the run forever.
    pub fn run_segments(
        &self,
        words_for: impl Fn(usize, usize) -> Vec<String>,
        input: Option<&[u8]>,
        deadline: std::time::Duration,
    ) -> Result<Outcomes, RemoteError> {
        use std::io::Read;
        use std::time::{Duration, Instant};
        let n = self.hosts.len();
        let started = Instant::now();
        let mut children = self
            .hosts
            .iter()
            .enumerate()
            .map(|(i, host)| Ok((host.clone(), self.spawn(host, &words_for(i + 1, n), input)?)))
            .collect::<Result<Vec<_>, RemoteError>>()?;
        // Each host's output is read as it comes (a result at most as large as merge
        // reads), so that a full pipe never stops it.
        let limit = stampede_engine::input::Input::Result.limit();
        let readers: Vec<_> = children
            .iter_mut()
            .map(|(_, c)| {
                let (out, err) = (c.stdout.take(), c.stderr.take());
                std::thread::spawn(move || {
                    let errs = std::thread::spawn(move || {
                        let mut e = Vec::new();
                        if let Some(err) = err {
                            let _ = err.take(1 << 20).read_to_end(&mut e);
                        }
                        e
                    });
                    let mut o = Vec::new();
                    if let Some(out) = out {
                        let _ = out.take(limit).read_to_end(&mut o);
                    }
                    (o, errs.join().unwrap_or_default())
                })
            })
            .collect();
        let mut status: Vec<Option<std::process::ExitStatus>> = vec![None; n];
        let mut late = vec![false; n];
        while status.iter().any(Option::is_none) {
            for (i, (_, c)) in children.iter_mut().enumerate() {
                if status[i].is_none() {
                    status[i] = c.try_wait().map_err(RemoteError::Status)?;
                }
            }
            if started.elapsed() > deadline {
                for (i, (_, c)) in children.iter_mut().enumerate() {
                    if status[i].is_none() {
                        let _ = c.kill();
                        late[i] = true;
                        status[i] = c.wait().ok();
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(children
            .into_iter()
            .zip(readers)
            .enumerate()
            .map(|(i, ((host, _), reader))| {
                let (out, err) = reader.join().unwrap_or_default();
                let last = String::from_utf8_lossy(&err)
                    .trim()
                    .lines()
                    .last()
                    .unwrap_or("")
                    .to_string();
                let r = match status[i] {
                    _ if late[i] => Err(RemoteError::Late(deadline.as_secs_f64())),
                    Some(s) if s.success() => parse_result(&out),
                    Some(s) => Err(RemoteError::Exit {
                        code: s.code(),
                        stderr: last,
                    }),
                    None => Err(RemoteError::Status(std::io::Error::other(
                        "its status could not be read",
                    ))),
                };
                (host, r)
            })
            .collect())
    }
}

/// Starts `command` with its output piped and `input` (if any) written to its standard
/// input, which is then closed; the error names the program and what failed.
pub fn start(command: &mut Command, input: Option<&[u8]>) -> Result<Child, RemoteError> {
    let program = command.get_program().to_string_lossy().into_owned();
    let mut child = command
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| RemoteError::Spawn { program, source })?;
    // Written from a thread: a peer that never reads (a stuck host) must not hold the
    // caller once the pipe's buffer is full. Dropping the pipe closes its input.
    if let (Some(bytes), Some(mut stdin)) = (input, child.stdin.take()) {
        let bytes = bytes.to_vec();
        std::thread::spawn(move || {
            let _ = stdin.write_all(&bytes);
        });
    }
    Ok(child)
}

/// The result in a segment's output: its JSON alone, or (where its reports and
/// warnings are mixed in, as in a pod's log) the last object that begins with a line
/// `{` and ends with a line `}`.
pub fn parse_result(out: &[u8]) -> Result<RunResult, RemoteError> {
    if let Ok(r) = serde_json::from_slice::<RunResult>(out) {
        return Ok(r);
    }
    let text = String::from_utf8_lossy(out);
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .rposition(|l| *l == "{")
        .ok_or(RemoteError::NoResult)?;
    let end = lines[start..]
        .iter()
        .position(|l| *l == "}")
        .map(|e| start + e)
        .ok_or(RemoteError::CutShort)?;
    serde_json::from_str(&lines[start..=end].join("\n"))
        .map_err(|e| RemoteError::NotResult(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_and_environment_names_that_would_be_options_or_shell_are_refused() {
        for ok in [
            "h",
            "user@host.example",
            "10.0.0.1",
            "[::1]",
            "alias_1",
            "fe80::1%eth0",
        ] {
            assert!(check_host(ok).is_ok(), "{ok}");
        }
        for bad in ["", "-oProxyCommand=x", "a b", "h;rm", "h\n", "$(x)", "'h'"] {
            assert!(check_host(bad).is_err(), "{bad:?}");
        }
        let e = check_host("-x").unwrap_err();
        assert!(matches!(&e, RemoteError::Host { host, .. } if host == "-x"));
        assert!(e.to_string().contains("option"), "{e}");
        for ok in ["A", "_x", "PATH_2"] {
            assert!(check_env_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", "1A", "A=1; touch /tmp/x; B", "A B", "A-B"] {
            assert!(
                matches!(check_env_name(bad), Err(RemoteError::EnvName(n)) if n == bad),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn words_reach_the_remote_shell_intact() {
        assert_eq!(quote("http://h:8/p?a=1"), "'http://h:8/p?a=1'");
        assert_eq!(quote("-c"), "-c");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote(""), "''");
        assert_eq!(quote("p99 < 5ms"), "'p99 < 5ms'");
    }

    #[test]
    fn a_host_gets_this_stampede_once() {
        let hosts = Hosts {
            hosts: vec!["copied.invalid".into()],
            options: vec!["ConnectTimeout=1".into()],
            program: None,
            copy: true,
        };
        let mut copies = Copies::default();
        copies.0.insert("copied.invalid".into());
        // Already there: no scp (which could not reach a .invalid host).
        let p = copies.program(&hosts, &hosts.hosts).unwrap();
        assert_eq!(p, format!("/tmp/stampede-{}", env!("CARGO_PKG_VERSION")));
        // Not yet: a copy is tried, and fails by name.
        let e = copies
            .program(&hosts, &["other.invalid".to_string()])
            .unwrap_err();
        assert!(
            matches!(&e, RemoteError::Copy { host, .. } if host == "other.invalid")
                || matches!(&e, RemoteError::Spawn { program, .. } if program == "scp"),
            "{e}"
        );
        // Without copy the plan's program is used as it is.
        let plain = Hosts {
            copy: false,
            program: Some("/opt/st".into()),
            ..hosts
        };
        assert_eq!(copies.program(&plain, &plain.hosts).unwrap(), "/opt/st");
    }

    #[test]
    fn a_result_is_found_among_report_lines() {
        assert!(parse_result(b"Running 1s test\n  Thread Stats\n").is_err());
        assert!(parse_result(b"report\n{\n  \"a\": 1\n").is_err());
    }
}

/// What runs a target on another host, under `sh -c` there (`$1` the command, `$2` the
/// grace in seconds, `$3` CPUs for taskset or empty): it starts the command in a
/// session of its own, says its pid, and every 200 ms the CPU seconds and resident
/// memory of every process in that session (`use USER SYS RSS_KIB`); when its standard
/// input closes (the lab stops it, or the connection drops) it sends SIGTERM to the
/// session's group and SIGKILL after the grace; when the command ends it says how
/// (`exit N`). Standard input is kept as descriptor 3 because an asynchronous list
/// reads /dev/null in a shell without job control. POSIX sh, awk and /proc only: nothing to install on the host.
pub const TARGET_SCRIPT: &str = r#"cmd=$1 grace=$2 cpus=$3
exec 3<&0
tck=$(getconf CLK_TCK) pg=$(getconf PAGESIZE)
if [ -n "$cpus" ]; then set -- taskset -c "$cpus" sh -c "$cmd"; else set -- sh -c "$cmd"; fi
setsid "$@" </dev/null >/dev/null 3<&- &
pid=$!
echo "pid $pid"
( while read -r _ <&3; do :; done; kill -TERM -"$pid" 2>/dev/null; sleep "$grace"; kill -KILL -"$pid" ) >/dev/null 2>&1 &
watch=$!
while cat /proc/[0-9]*/stat 2>/dev/null | awk -v s="$pid" -v t="$tck" -v p="$pg" '
  { l = $0; id = $1; sub(/^.*\) /, "", l); split(l, f, " ");
    if (f[4] == s && f[1] != "Z") { u += f[12]; y += f[13]; r += f[22] }
    if (id == s) st = f[1] }
  END { printf "use %.2f %.2f %d\n", u / t, y / t, r * p / 1024; exit (st == "" || st == "Z") }'
do sleep 0.2; done
wait "$pid"; code=$?
kill -KILL -"$pid" 2>/dev/null
echo "exit $code"
kill "$watch" 2>/dev/null
"#;

/// What a target on another host last reported.
#[derive(Debug, Default, Clone)]
pub struct Reported {
    /// Its pid there.
    pub pid: Option<i32>,
    /// CPU seconds (user, system) of its session, and its resident memory in KiB.
    pub usage: (f64, f64, u64),
    /// The highest resident memory seen since [`Reported::peak_since`] was reset.
    pub peak_since: u64,
    /// The highest resident memory seen at all.
    pub peak: u64,
    /// How it ended (`exited 0`, `killed by signal 15`), once it has.
    pub ended: Option<String>,
}

impl Reported {
    /// Takes one line of [`TARGET_SCRIPT`]'s output.
    pub fn take(&mut self, line: &str) {
        let mut w = line.split_whitespace();
        match w.next() {
            Some("pid") => self.pid = w.next().and_then(|p| p.parse().ok()),
            Some("use") => {
                let v: Vec<f64> = w.filter_map(|x| x.parse().ok()).collect();
                if let [u, s, rss] = v[..] {
                    self.usage = (u, s, rss as u64);
                    self.peak_since = self.peak_since.max(rss as u64);
                    self.peak = self.peak.max(rss as u64);
                }
            }
            Some("exit") => {
                let code: i32 = w.next().and_then(|c| c.parse().ok()).unwrap_or(-1);
                // The shell's status: 128 + N for a command a signal ended.
                self.ended = Some(if code > 128 {
                    format!("killed by signal {}", code - 128)
                } else {
                    format!("exited {code}")
                });
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod script_tests {
    use super::*;

    #[test]
    fn a_remote_target_is_started_measured_and_stopped_by_the_script() {
        // The script run here through sh, as sshd would run it on the host.
        let mut child = std::process::Command::new("sh")
            .args(["-c", TARGET_SCRIPT, "sh"])
            .args(["sh -c 'sleep 30 & echo up >&2; wait'", "1", ""])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for l in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(l);
            }
        });
        // The script samples usage every 200 ms: three samples read are what this
        // half checks before it ends the session.
        let mut r = Reported::default();
        let mut samples = 0;
        while samples < 3 {
            let l = (lines.recv_timeout(std::time::Duration::from_secs(5)))
                .expect("a usage sample within 5 s");
            samples += usize::from(l.starts_with("use "));
            r.take(&l);
        }
        drop(child.stdin.take());
        let started = std::time::Instant::now();
        let status = child.wait().unwrap();
        assert!(started.elapsed() < std::time::Duration::from_secs(3));
        assert!(status.success());
        for l in lines.iter() {
            r.take(&l);
        }
        let pid = r.pid.unwrap();
        assert!(r.peak > 0, "{r:?}");
        assert_eq!(r.ended.as_deref(), Some("killed by signal 15"), "{r:?}");
        // Nothing of the session is left.
        crate::testing::eventually(
            "the session gone",
            std::time::Duration::from_secs(5),
            || !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        );
    }
}
