//! Listening sockets on the ring: a multishot accept per listener, the connections
//! (or errors) it brings queued until the loop takes them one at a time, and its
//! cancellation when the loop stops accepting.

use std::io;
use std::os::fd::{OwnedFd, RawFd};

use io_uring::{opcode, types};

use crate::{user_data, with_core, Core, CORE, IN, OP_ACCEPT};

/// A listening socket whose connections a multishot accept takes.
pub(crate) struct Listening {
    fd: RawFd,
    token: u64,
    armed: bool,
    /// No longer accepting (its accept is cancelled and not armed again).
    stopped: bool,
}

impl Core {
    /// Takes connections on listening socket `fd` with a multishot accept, its
    /// events reported under `token`, as listener `li`.
    fn listen(&mut self, li: u32, fd: RawFd, token: usize) {
        let i = li as usize;
        if self.listeners.len() <= i {
            self.listeners.resize_with(i + 1, || None);
        }
        self.listeners[i] = Some(Listening {
            fd,
            token: token as u64,
            armed: false,
            stopped: false,
        });
        self.arm_accept(li);
    }

    fn arm_accept(&mut self, li: u32) {
        let Some(Some(l)) = self.listeners.get_mut(li as usize) else {
            return;
        };
        if l.armed || l.stopped {
            return;
        }
        l.armed = true;
        let e = opcode::AcceptMulti::new(types::Fd(l.fd))
            .flags(libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC)
            .build()
            .user_data(user_data(li, 0, OP_ACCEPT));
        self.push(e);
    }

    /// Stops accepting on listener `li`: its accept is cancelled and the connections
    /// it brought and nobody took are closed.
    pub(crate) fn unlisten(&mut self, li: u32) {
        let Some(Some(l)) = self.listeners.get_mut(li as usize) else {
            return;
        };
        l.stopped = true;
        if l.armed {
            let e = opcode::AsyncCancel::new(user_data(li, 0, OP_ACCEPT))
                .build()
                .user_data(user_data(li, 1, OP_ACCEPT));
            self.push(e);
        }
        self.accepted.retain(|a| a.0 != li);
    }

    /// An accept's completion (`gen` 1: its cancel's).
    pub(crate) fn accepted(&mut self, li: u32, gen: u32, res: i32, more: bool) {
        if gen == 1 {
            self.in_flight -= 1;
            return;
        }
        let Some(Some(l)) = self.listeners.get_mut(li as usize) else {
            return;
        };
        if !more {
            l.armed = false;
        }
        let (token, stopped) = (l.token, l.stopped);
        if !more {
            self.in_flight -= 1;
        }
        let got = match res {
            // SAFETY: a completed accept's result is a new descriptor, ours alone.
            fd if fd >= 0 => Ok(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) }),
            e if e == -libc::ECANCELED => return,
            e => Err(io::Error::from_raw_os_error(-e)),
        };
        if stopped {
            return;
        }
        self.accepted.push_back((li, got));
        self.marks.push((token, IN));
    }

    /// The next connection (or accept error) of listener `li`; `None` when there is
    /// none yet (the accept is armed again if it had ended).
    fn accept(&mut self, li: u32) -> Option<io::Result<OwnedFd>> {
        if let Some(i) = self.accepted.iter().position(|a| a.0 == li) {
            return self.accepted.remove(i).map(|a| a.1);
        }
        self.arm_accept(li);
        None
    }
}

/// Takes the connections of listening socket `fd` (not registered with the thread's
/// epoll instance) with a multishot accept: a wait reports `token` readable when some
/// came, and [`accept`] hands them over. `li` names the listener in the calls below.
pub fn listen(li: u32, fd: RawFd, token: usize) -> io::Result<()> {
    with_core(|c| {
        c.listen(li, fd, token);
        Ok(())
    })
}

/// The next connection listener `li` accepted (non-blocking, close-on-exec), or the
/// error its accept met (out of descriptors, …: the accept is armed again on the
/// next call after it); `None` when there is none yet.
pub fn accept(li: u32) -> Option<io::Result<OwnedFd>> {
    CORE.with(|c| c.borrow_mut().as_mut().and_then(|core| core.accept(li)))
}

/// Stops taking connections on listener `li` (before its socket is closed).
pub fn unlisten(li: u32) {
    let _ = with_core(|c| {
        c.unlisten(li);
        Ok(())
    });
}
