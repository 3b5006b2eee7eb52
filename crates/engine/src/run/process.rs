//! Process limits that decide whether a run can start (the open-file limit), and the
//! CPU time a process has used, read one way for every caller (the httperf report, the
//! lab's client and target figures).
//!
//! Every connection is a file descriptor; ab's c10k run needs over 10,000. The soft limit
//! is raised to the hard limit at start, and a run that would still not fit is refused
//! before it begins, with the command that fixes it, instead of failing halfway.

/// Raises the soft RLIMIT_NOFILE towards `wanted` (up to the hard limit) and returns the
/// soft limit in force afterwards.
pub fn raise_nofile(wanted: u64) -> u64 {
    // SAFETY: getrlimit/setrlimit only read and write the struct we pass.
    unsafe {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return 1024;
        }
        if lim.rlim_cur < wanted {
            let target = if lim.rlim_max == libc::RLIM_INFINITY {
                wanted
            } else {
                wanted.min(lim.rlim_max)
            };
            let new = libc::rlimit {
                rlim_cur: target as libc::rlim_t,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &new) == 0 {
                lim.rlim_cur = new.rlim_cur;
            }
        }
        lim.rlim_cur
    }
}

/// Descriptors a run with `connections` connections and `threads` workers needs:
/// one per connection, an epoll and a waker per worker, and a margin for stdio and files.
pub fn fds_needed(connections: usize, threads: usize) -> u64 {
    connections as u64 + 2 * threads as u64 + 32
}

/// CPU time used, in seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuTime {
    /// In user mode.
    pub user: f64,
    /// In the kernel.
    pub system: f64,
}

impl CpuTime {
    /// User and system together.
    pub fn total(&self) -> f64 {
        self.user + self.system
    }

    /// The times in a `rusage` the kernel filled.
    pub fn of(ru: &libc::rusage) -> CpuTime {
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        CpuTime {
            user: secs(ru.ru_utime),
            system: secs(ru.ru_stime),
        }
    }
}

/// This process's CPU time so far, every thread's.
pub fn self_cpu() -> CpuTime {
    rusage(libc::RUSAGE_SELF)
}

/// The calling thread's CPU time so far.
pub fn thread_cpu() -> CpuTime {
    rusage(libc::RUSAGE_THREAD)
}

fn rusage(who: libc::c_int) -> CpuTime {
    // SAFETY: an all-zero rusage is a valid value of the plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes only into the struct we pass.
    let r = unsafe { libc::getrusage(who, &mut ru) };
    if r != 0 {
        // Cannot fail for RUSAGE_SELF or RUSAGE_THREAD with a valid pointer.
        return CpuTime::default();
    }
    CpuTime::of(&ru)
}

/// The CPUs this process may run on (its affinity mask); empty if it cannot be read.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set for the kernel to fill; CPU_ISSET
    // reads within it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}
