//! Process limits that decide whether a run can start: the open-file limit.
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
