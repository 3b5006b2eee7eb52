//! The keeper of a started target's whole process tree: what the bench runs in place
//! of the target's command, so that nothing the target starts outlives the bench.
//!
//! A target is started as `stampede __guard GRACE_MS BENCH_PID sh -c COMMAND`. The
//! guard makes itself a child subreaper (so a daemon the target starts with `setsid`
//! and a double fork is re-parented to it, not to init) and asks for SIGTERM when the
//! bench dies (`PR_SET_PDEATHSIG`, which holds even for `kill -9` of the bench). It
//! then waits, costing nothing, until the target ends or a signal arrives: from the
//! bench's stop, from the bench's death, or from Ctrl-C. Either way it ends every
//! process below it (SIGTERM, then SIGKILL after the grace), reaps them, and exits as
//! the target did (its exit code, or the same signal), so the bench reports the
//! target's own end. Its rusage, as `wait4` gives it to the bench, includes the
//! target's: a guard reaps what it starts.
//!
//! The guard is the process group's leader; the target stays in that group, so the
//! bench's signals to the group reach both.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The first argument that makes the `stampede` binary a guard.
pub use crate::process::GUARD_ARG as ARG;

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// Runs a guard: `args` are what follows [`ARG`] (grace in ms, the bench's pid, the
/// program and its arguments). Returns the exit code when it does not end by the
/// target's signal itself.
pub fn run(args: &[String]) -> i32 {
    let (Some(grace), Some(parent), Some(program)) = (
        args.first().and_then(|g| g.parse::<u64>().ok()),
        args.get(1).and_then(|p| p.parse::<i32>().ok()),
        args.get(2),
    ) else {
        eprintln!("stampede {ARG}: usage: {ARG} GRACE_MS BENCH_PID PROGRAM [ARGS…]");
        return 2;
    };
    let grace = Duration::from_millis(grace);
    // SAFETY: prctl with these options takes plain integers; sigaction gets a zeroed
    // struct (a valid empty mask) with a handler that only stores to an atomic, which
    // is async-signal-safe. No SA_RESTART: waitpid returns EINTR on a signal.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0);
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::sigemptyset(&mut sa.sa_mask);
        for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
    // SAFETY: getppid has no preconditions.
    if unsafe { libc::getppid() } != parent {
        // The bench died before the death signal was asked for.
        return 1;
    }
    let child = match std::process::Command::new(program).args(&args[3..]).spawn() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("stampede {ARG}: could not run {program}: {e}");
            return 127;
        }
    };
    let target = child.id() as i32;
    let mut status = None;
    while !STOP.load(Ordering::SeqCst) {
        let mut st = 0;
        // SAFETY: waitpid fills the status we pass.
        let r = unsafe { libc::waitpid(-1, &mut st, 0) };
        if r == target {
            status = Some(st);
            break;
        }
        if r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD) {
            break;
        }
        // EINTR (a signal: the loop checks STOP) or an adopted orphan reaped.
    }
    end_tree(target, grace, &mut status);
    match status {
        Some(st) if libc::WIFSIGNALED(st) => {
            let sig = libc::WTERMSIG(st);
            // SAFETY: resets one signal to its default action and raises it, so this
            // process ends the way the target did.
            unsafe {
                libc::signal(sig, libc::SIG_DFL);
                libc::raise(sig);
            }
            128 + sig
        }
        Some(st) if libc::WIFEXITED(st) => libc::WEXITSTATUS(st),
        _ => 1,
    }
}

/// Ends every process below this one: SIGTERM, then SIGKILL once `grace` has passed,
/// reaping as they go; the target's status is kept when it is reaped here.
fn end_tree(target: i32, grace: Duration, status: &mut Option<i32>) {
    // SAFETY: getpid has no preconditions.
    let me = unsafe { libc::getpid() };
    let start = Instant::now();
    let mut killed = false;
    let mut termed = false;
    loop {
        reap(target, status);
        // Done only when nothing at all is below: a process that ended between the
        // reap and this look is a zombie, still to be reaped here. Left to init, it
        // would stay a zombie for good where init does not reap.
        let (below, zombies) = crate::process::descendants(me);
        if below.is_empty() && zombies == 0 {
            return;
        }
        let sig = if start.elapsed() >= grace {
            killed = true;
            libc::SIGKILL
        } else {
            libc::SIGTERM
        };
        if !termed || sig == libc::SIGKILL {
            for &p in &below {
                // SAFETY: signals a process below this one, found in /proc just now.
                unsafe { libc::kill(p, sig) };
            }
            termed = true;
        }
        if killed && start.elapsed() >= grace + Duration::from_secs(5) {
            // Unkillable (uninterruptible sleep): give up rather than hang the bench.
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Reaps whatever has ended among this process's children.
fn reap(target: i32, status: &mut Option<i32>) {
    loop {
        let mut st = 0;
        // SAFETY: waitpid fills the status we pass.
        let r = unsafe { libc::waitpid(-1, &mut st, libc::WNOHANG) };
        if r <= 0 {
            return;
        }
        if r == target {
            *status = Some(st);
        }
    }
}
