//! Target processes: started in their own process group (optionally pinned to CPUs,
//! optionally under a [`crate::guard`] that takes the whole tree down with it),
//! watched, measured from /proc, and stopped with SIGTERM then SIGKILL.
//!
//! CPU time and memory are taken for the whole process tree (a server that forks
//! workers is measured whole), sampled from /proc while a run goes; the direct child's
//! own peak RSS and CPU also come from `wait4`'s rusage when it exits, as
//! `/usr/bin/time` reports them.

use std::collections::{BTreeMap, VecDeque};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How a stopped process ended, with its rusage.
#[derive(Debug, Clone, PartialEq)]
pub struct Exit {
    /// `exited 0`, `killed by signal 9`, …
    pub status: String,
    /// User CPU seconds (rusage).
    pub user_s: f64,
    /// System CPU seconds (rusage).
    pub sys_s: f64,
    /// Peak RSS, KiB (rusage).
    pub max_rss_kb: u64,
}

/// A started target.
pub struct Running {
    child: Child,
    stderr: Arc<Mutex<VecDeque<u8>>>,
    reader: Option<std::thread::JoinHandle<()>>,
    exited: Option<Exit>,
    /// The direct child is a guard (not measured itself) that ends the tree within
    /// this grace of a stop.
    guard: Option<Duration>,
    /// The target runs on another host; the direct child is the ssh that watches it.
    remote: Option<Remote>,
}

/// A target on another host: the ssh running [`crate::remote::TARGET_SCRIPT`] there,
/// whose standard input ends the target when closed, and what the script reports.
struct Remote {
    stdin: Option<std::process::ChildStdin>,
    reported: Arc<Mutex<crate::remote::Reported>>,
    reader: Option<std::thread::JoinHandle<()>>,
    grace: Duration,
}

/// Run a target under a guard ([`crate::guard`]): the stampede executable that acts as
/// one, and the grace its processes get between SIGTERM and SIGKILL.
pub struct Guard<'a> {
    /// The `stampede` binary.
    pub exe: &'a Path,
    /// SIGTERM to SIGKILL.
    pub grace: Duration,
}

const TAIL: usize = 4096;

/// Keeps the last [`TAIL`] bytes of `err` in `buf` until it ends.
fn tail_reader(
    mut err: impl Read + Send + 'static,
    buf: Arc<Mutex<VecDeque<u8>>>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut chunk = [0u8; 1024];
        while let Ok(n) = err.read(&mut chunk) {
            if n == 0 {
                break;
            }
            let mut b = buf.lock().unwrap_or_else(|e| e.into_inner());
            b.extend(&chunk[..n]);
            while b.len() > TAIL {
                b.pop_front();
            }
        }
    })
}

impl Running {
    /// Runs `command` through `sh -c` in a new process group, under `guard` when given.
    pub fn start(
        command: &str,
        env: &BTreeMap<String, String>,
        cwd: Option<&Path>,
        cpus: &[usize],
        guard: Option<Guard>,
    ) -> std::io::Result<Running> {
        let mut cmd = match &guard {
            Some(g) => guarded(g.exe, g.grace, command),
            None => {
                let mut c = Command::new("sh");
                c.arg("-c").arg(command);
                c
            }
        };
        cmd.envs(env)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0);
        if let Some(d) = cwd {
            cmd.current_dir(d);
        }
        if !cpus.is_empty() {
            let cpus = cpus.to_vec();
            // SAFETY: only async-signal-safe calls between fork and exec.
            unsafe {
                cmd.pre_exec(move || {
                    set_affinity(0, &cpus);
                    Ok(())
                });
            }
        }
        let mut child = cmd.spawn()?;
        let stderr = Arc::new(Mutex::new(VecDeque::with_capacity(TAIL)));
        let reader = child
            .stderr
            .take()
            .map(|err| tail_reader(err, stderr.clone()));
        Ok(Running {
            child,
            stderr,
            reader,
            exited: None,
            guard: guard.map(|g| g.grace),
            remote: None,
        })
    }

    /// Runs `command` on `host` over ssh (with `hosts`' options), in a session of its
    /// own there, pinned with taskset to `cpus` if given; see
    /// [`crate::remote::TARGET_SCRIPT`]. Its standard error comes back as a local
    /// target's does.
    pub fn start_remote(
        hosts: &crate::remote::Hosts,
        host: &str,
        command: &str,
        env: &BTreeMap<String, String>,
        cwd: Option<&Path>,
        cpus: &[usize],
        grace: Duration,
    ) -> std::io::Result<Running> {
        use crate::remote::quote;
        let invalid = |e: crate::remote::RemoteError| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string())
        };
        crate::remote::check_host(host).map_err(invalid)?;
        let mut line = String::new();
        for (k, v) in env {
            crate::remote::check_env_name(k).map_err(invalid)?;
            line += &format!("export {k}={}; ", quote(v));
        }
        if let Some(d) = cwd {
            line += &format!("cd {} && ", quote(&d.display().to_string()));
        }
        line += command;
        let cpus: Vec<String> = cpus.iter().map(usize::to_string).collect();
        let words = [
            "sh".to_string(),
            "-c".into(),
            crate::remote::TARGET_SCRIPT.into(),
            "sh".into(),
            line,
            format!("{:.3}", grace.as_secs_f64()),
            cpus.join(","),
        ];
        let quoted: Vec<String> = words.iter().map(|w| quote(w)).collect();
        let mut child = hosts
            .base("ssh")
            .arg("--")
            .arg(host)
            .arg(quoted.join(" "))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()?;
        let stderr = Arc::new(Mutex::new(VecDeque::with_capacity(TAIL)));
        let reader = child
            .stderr
            .take()
            .map(|err| tail_reader(err, stderr.clone()));
        let reported = Arc::new(Mutex::new(crate::remote::Reported::default()));
        let lines = child.stdout.take().map(|out| {
            let reported = reported.clone();
            std::thread::spawn(move || {
                use std::io::BufRead;
                for l in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                    reported.lock().unwrap_or_else(|e| e.into_inner()).take(&l);
                }
            })
        });
        Ok(Running {
            remote: Some(Remote {
                stdin: child.stdin.take(),
                reported,
                reader: lines,
                grace,
            }),
            child,
            stderr,
            reader,
            exited: None,
            guard: None,
        })
    }

    /// The target's CPU seconds (user, system) and resident memory (KiB) now, over its
    /// whole process tree, here or on its host.
    pub fn usage(&self) -> (f64, f64, u64) {
        match &self.remote {
            Some(r) => r.reported.lock().unwrap_or_else(|e| e.into_inner()).usage,
            None => tree_usage(self.pid(), self.guarded()),
        }
    }

    /// Whether it runs on another host.
    pub fn is_remote(&self) -> bool {
        self.remote.is_some()
    }

    /// Whether the direct child is a guard rather than the target itself.
    pub fn guarded(&self) -> bool {
        self.guard.is_some()
    }

    /// The process id (also the process group id).
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// The last few KiB the process wrote to stderr.
    pub fn stderr_tail(&self) -> String {
        let b = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        String::from_utf8_lossy(&b.iter().copied().collect::<Vec<u8>>()).into_owned()
    }

    /// `None` while running; how it ended once it has.
    pub fn poll_exit(&mut self) -> Option<Exit> {
        if self.exited.is_none() && self.remote.is_some() {
            self.exited = self.remote_exit(false);
        } else if self.exited.is_none() {
            self.exited = wait4(self.pid(), false);
            if self.exited.is_some() {
                self.drain_stderr();
            }
        }
        self.exited.clone()
    }

    /// After the exit: gives the stderr reader a moment to take the last bytes (it ends
    /// when every writer has closed the pipe; a forked child may keep it open longer).
    fn drain_stderr(&mut self) {
        let deadline = Instant::now() + Duration::from_millis(500);
        while let Some(r) = &self.reader {
            if r.is_finished() {
                if let Some(r) = self.reader.take() {
                    let _ = r.join();
                }
            } else if Instant::now() >= deadline {
                return;
            } else {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }

    /// How a remote target ended, once its ssh has (waiting for that when `block`):
    /// the script's word for it, or the connection's end if the script could not say.
    fn remote_exit(&mut self, block: bool) -> Option<Exit> {
        let status = if block {
            self.child.wait().ok()
        } else {
            self.child.try_wait().ok().flatten()
        }?;
        let r = self.remote.as_mut()?;
        if let Some(h) = r.reader.take() {
            let _ = h.join();
        }
        let rep = r.reported.lock().unwrap_or_else(|e| e.into_inner()).clone();
        self.drain_stderr();
        Some(Exit {
            status: rep.ended.unwrap_or_else(|| {
                format!(
                    "lost: ssh ended ({}) before the target did",
                    status
                        .code()
                        .map_or("by a signal".to_string(), |c| format!("exit {c}"))
                )
            }),
            user_s: rep.usage.0,
            sys_s: rep.usage.1,
            max_rss_kb: rep.peak,
        })
    }

    /// SIGTERM to the group, then SIGKILL after `grace`; returns how it ended.
    pub fn stop(&mut self, grace: Duration) -> Exit {
        if let Some(r) = &mut self.remote {
            if let Some(e) = &self.exited {
                return e.clone();
            }
            // Closing the script's input stops the target there; the ssh ends when
            // the script does, within the grace.
            drop(r.stdin.take());
            let deadline = Instant::now() + grace.max(r.grace) + Duration::from_secs(5);
            while Instant::now() < deadline {
                if let Some(e) = self.remote_exit(false) {
                    self.exited = Some(e.clone());
                    return e;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = self.child.kill();
            let e = self.remote_exit(true).unwrap_or(Exit {
                status: "unknown".into(),
                user_s: 0.0,
                sys_s: 0.0,
                max_rss_kb: 0,
            });
            self.exited = Some(e.clone());
            return e;
        }
        if let Some(e) = self.poll_exit() {
            kill_group(self.pid(), libc::SIGKILL);
            return e;
        }
        kill_group(self.pid(), libc::SIGTERM);
        // A guard ends the tree (processes outside the group too) within its own
        // grace: give it that and a moment before the group is killed under it.
        let grace = match self.guard {
            Some(g) => grace.max(g) + Duration::from_secs(1),
            None => grace,
        };
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Some(e) = self.poll_exit() {
                kill_group(self.pid(), libc::SIGKILL);
                return e;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        kill_group(self.pid(), libc::SIGKILL);
        let e = wait4(self.pid(), true).unwrap_or(Exit {
            status: "unknown".into(),
            user_s: 0.0,
            sys_s: 0.0,
            max_rss_kb: 0,
        });
        self.exited = Some(e.clone());
        self.drain_stderr();
        e
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(r) = &mut self.remote {
            // The script there stops the target when its input closes.
            drop(r.stdin.take());
            if self.exited.is_none() {
                let _ = self.child.kill();
                let _ = self.child.wait();
            }
            return;
        }
        if self.exited.is_none() {
            kill_group(self.pid(), libc::SIGKILL);
            let _ = wait4(self.pid(), true);
        }
    }
}

fn kill_group(pgid: i32, sig: libc::c_int) {
    // SAFETY: signals a process group this module created.
    unsafe {
        libc::kill(-pgid, sig);
    }
}

fn wait4(pid: i32, block: bool) -> Option<Exit> {
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of the plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 writes only into the status and rusage we pass.
    let r = unsafe {
        libc::wait4(
            pid,
            &mut status,
            if block { 0 } else { libc::WNOHANG },
            &mut ru,
        )
    };
    if r != pid {
        return None;
    }
    let cpu = stampede_engine::process::CpuTime::of(&ru);
    let how = if libc::WIFEXITED(status) {
        format!("exited {}", libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        format!("killed by signal {}", libc::WTERMSIG(status))
    } else {
        "ended".into()
    };
    Some(Exit {
        status: how,
        user_s: cpu.user,
        sys_s: cpu.system,
        max_rss_kb: ru.ru_maxrss as u64,
    })
}

/// The first argument that makes the `stampede` binary a guard ([`crate::guard`]).
pub const GUARD_ARG: &str = "__guard";

/// The command line that runs `command` (through `sh -c`) under a guard: `exe` is the
/// stampede binary, `grace` how long the target's processes get between SIGTERM and
/// SIGKILL.
fn guarded(exe: &std::path::Path, grace: Duration, command: &str) -> std::process::Command {
    let mut c = std::process::Command::new(exe);
    c.arg(GUARD_ARG)
        .arg(grace.as_millis().to_string())
        .arg(std::process::id().to_string())
        .args(["sh", "-c", command]);
    c
}

/// Pins thread or process `pid` (0: the calling thread) to `cpus`.
pub fn set_affinity(pid: i32, cpus: &[usize]) -> bool {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET stays in bounds.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            if c < libc::CPU_SETSIZE as usize {
                libc::CPU_SET(c, &mut set);
            }
        }
        libc::sched_setaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// One process as /proc/PID/stat describes it.
#[derive(Debug, Clone, Copy)]
struct Proc {
    pid: i32,
    parent: i32,
    group: i32,
    zombie: bool,
    /// CPU ticks, user and system.
    utime: u64,
    stime: u64,
    /// Resident pages.
    rss: u64,
}

/// Every process /proc shows now.
fn processes() -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(proc_stat)
        .collect()
}

/// One process's /proc/PID/stat.
fn proc_stat(pid: i32) -> Option<Proc> {
    stat_at(&format!("/proc/{pid}/stat"), pid)
}

/// A stat file (a process's, or a thread's under /proc/PID/task/TID/stat).
fn stat_at(path: &str, pid: i32) -> Option<Proc> {
    let s = std::fs::read_to_string(path).ok()?;
    // The command name may hold spaces; fields start after the last ')'.
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some(Proc {
        pid,
        zombie: *f.first()? == "Z",
        parent: f.get(1)?.parse().ok()?,
        group: f.get(2)?.parse().ok()?,
        utime: f.get(11)?.parse().ok()?,
        stime: f.get(12)?.parse().ok()?,
        rss: f.get(21)?.parse().ok()?,
    })
}

/// `root` first, then every process below it by parent links, from `all`.
fn subtree(all: &[Proc], root: i32) -> Vec<Proc> {
    let mut tree: Vec<Proc> = all.iter().filter(|p| p.pid == root).copied().collect();
    let mut pids = vec![root];
    let mut i = 0;
    while i < pids.len() {
        let parent = pids[i];
        for p in all.iter().filter(|p| p.parent == parent) {
            pids.push(p.pid);
            tree.push(*p);
        }
        i += 1;
    }
    tree
}

/// Whether any live (non-zombie) process remains in process group `pgid`.
pub fn group_alive(pgid: i32) -> bool {
    processes().iter().any(|p| !p.zombie && p.group == pgid)
}

/// The processes below `root`, not `root` itself: the live ones, and how many are
/// zombies (ended, not yet reaped by their parent).
pub fn descendants(root: i32) -> (Vec<i32>, usize) {
    let mut live = Vec::new();
    let mut zombies = 0;
    for p in subtree(&processes(), root).iter().filter(|p| p.pid != root) {
        if p.zombie {
            zombies += 1;
        } else {
            live.push(p.pid);
        }
    }
    (live, zombies)
}

/// Totals over a process tree: (user s, system s, RSS KiB); the root itself left out
/// when `skip_root` (a guard, which is not the target).
pub fn tree_usage(root: i32, skip_root: bool) -> (f64, f64, u64) {
    let tree = subtree(&processes(), root);
    // SAFETY: sysconf has no preconditions.
    let (hz, page) = unsafe {
        (
            libc::sysconf(libc::_SC_CLK_TCK) as f64,
            libc::sysconf(libc::_SC_PAGESIZE) as u64,
        )
    };
    let (mut u, mut s, mut rss) = (0u64, 0u64, 0u64);
    for p in tree.iter().filter(|p| !(skip_root && p.pid == root)) {
        u += p.utime;
        s += p.stime;
        rss += p.rss;
    }
    (u as f64 / hz, s as f64 / hz, rss * page / 1024)
}

/// CPU ticks (user + system) of every thread of a process tree, by thread id; the
/// root's own threads left out when `skip_root`.
pub fn thread_ticks(root: i32, skip_root: bool) -> BTreeMap<i32, u64> {
    let mut out = BTreeMap::new();
    for p in subtree(&processes(), root) {
        if skip_root && p.pid == root {
            continue;
        }
        let Ok(dir) = std::fs::read_dir(format!("/proc/{}/task", p.pid)) else {
            continue;
        };
        for tid in dir
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        {
            let Ok(s) = std::fs::read_to_string(format!("/proc/{}/task/{tid}/stat", p.pid)) else {
                continue;
            };
            let Some(rest) = s.rfind(')').map(|i| &s[i + 2..]) else {
                continue;
            };
            let f: Vec<&str> = rest.split_whitespace().collect();
            let ticks = |i: usize| f.get(i).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
            out.insert(tid, ticks(11) + ticks(12));
        }
    }
    out
}

/// What a target used over a measured run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Usage {
    /// User CPU seconds.
    pub user_s: f64,
    /// System CPU seconds.
    pub sys_s: f64,
    /// Peak resident set, KiB.
    pub peak_rss_kb: u64,
    /// Wall time sampled, seconds.
    pub wall_s: f64,
    /// The busiest thread's share of one core (local targets only).
    pub busiest_thread: Option<f64>,
}

/// Samples a target's process tree every 100 ms until stopped (a remote target's
/// script samples it there): CPU at start and end, peak RSS.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    peak: Arc<AtomicU64>,
    handle: Option<std::thread::JoinHandle<()>>,
    start: (f64, f64),
    began: Instant,
    threads: Option<BTreeMap<i32, u64>>,
}

impl Sampler {
    /// Starts sampling `target`; `usage` reads it (see [`Running::usage`]).
    pub fn start(target: &Running) -> Sampler {
        let (u, s, rss) = target.usage();
        if let Some(r) = &target.remote {
            r.reported
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .peak_since = rss;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let peak = Arc::new(AtomicU64::new(rss));
        let handle = match &target.remote {
            Some(r) => {
                let (stop, peak, reported) = (stop.clone(), peak.clone(), r.reported.clone());
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(Duration::from_millis(100));
                        let p = reported
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .peak_since;
                        peak.fetch_max(p, Ordering::Relaxed);
                    }
                })
            }
            None => {
                let (stop, peak) = (stop.clone(), peak.clone());
                let (root, skip_root) = (target.pid(), target.guarded());
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(Duration::from_millis(100));
                        let (_, _, rss) = tree_usage(root, skip_root);
                        peak.fetch_max(rss, Ordering::Relaxed);
                    }
                })
            }
        };
        Sampler {
            stop,
            peak,
            handle: Some(handle),
            start: (u, s),
            began: Instant::now(),
            threads: target
                .remote
                .is_none()
                .then(|| thread_ticks(target.pid(), target.guarded())),
        }
    }

    /// Stops; returns what `target` used since the start.
    pub fn finish(mut self, target: &Running) -> Usage {
        let wall_s = self.began.elapsed().as_secs_f64();
        let busiest_thread = self.threads.take().and_then(|before| {
            // SAFETY: sysconf has no preconditions.
            let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
            let after = thread_ticks(target.pid(), target.guarded());
            after
                .iter()
                .map(|(tid, &t)| t.saturating_sub(before.get(tid).copied().unwrap_or(0)))
                .max()
                .map(|ticks| (ticks as f64 / hz / wall_s.max(1e-3)).min(1.0))
        });
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        let (u, s, rss) = target.usage();
        let peak = self.peak.load(Ordering::Relaxed).max(rss);
        Usage {
            user_s: (u - self.start.0).max(0.0),
            sys_s: (s - self.start.1).max(0.0),
            peak_rss_kb: peak,
            wall_s,
            busiest_thread,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_measures_and_stops_a_process_group() {
        // A shell that forks a child: both must be measured and both must die.
        let mut r = Running::start(
            "sh -c 'sleep 30 & echo started >&2; wait'",
            &BTreeMap::new(),
            None,
            &[],
            None,
        )
        .unwrap();
        // Started once it says so on stderr.
        let t = Instant::now();
        while !r.stderr_tail().contains("started") {
            assert!(t.elapsed() < Duration::from_secs(5), "it did not start");
            std::thread::yield_now();
        }
        assert!(r.poll_exit().is_none());
        let (_, _, rss) = tree_usage(r.pid(), false);
        assert!(rss > 0);
        let t = Instant::now();
        let e = r.stop(Duration::from_secs(2));
        assert!(t.elapsed() < Duration::from_secs(3));
        assert!(
            e.status.contains("signal") || e.status.starts_with("exited"),
            "{}",
            e.status
        );
        // No live process of the group is left (zombies wait for init to reap them).
        crate::testing::eventually("the group gone", Duration::from_secs(5), || {
            !group_alive(r.pid())
        });
    }

    #[test]
    fn descendants_counts_an_ended_child_not_yet_reaped() {
        // A child that has ended but is not waited for is a zombie below us: it runs
        // nothing, yet someone still has to reap it.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        crate::testing::eventually("the child a zombie", Duration::from_secs(5), || {
            proc_stat(pid).is_some_and(|p| p.zombie)
        });
        let (live, zombies) = descendants(std::process::id() as i32);
        assert!(!live.contains(&pid), "{live:?}");
        assert!(zombies >= 1);
        child.wait().unwrap();
        assert!(proc_stat(pid).is_none(), "reaped, so gone from /proc");
    }

    #[test]
    fn reports_a_process_that_died() {
        let mut r =
            Running::start("echo boom >&2; exit 3", &BTreeMap::new(), None, &[], None).unwrap();
        crate::testing::eventually("the exit", Duration::from_secs(5), || {
            r.poll_exit().is_some()
        });
        assert_eq!(r.poll_exit().unwrap().status, "exited 3");
        // Its stderr is read by a thread of its own, which may finish a moment later.
        crate::testing::eventually("its stderr", Duration::from_secs(5), || {
            r.stderr_tail().contains("boom")
        });
    }
}
