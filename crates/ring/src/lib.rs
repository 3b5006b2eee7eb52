//! The io_uring backend of a thread's connections (a load generator's worker, a
//! server's loop): every send and receive of a wake-up goes to the kernel in the same
//! `io_uring_enter` that waits for the next completions, instead of one system call
//! each as with epoll.
//!
//! A connection is made as before (a non-blocking connect, or an accept, watched by
//! the thread's epoll instance); once it is open, its descriptor leaves the epoll set
//! and is
//! *adopted* here: it takes a slot of the ring's registered file table, a multishot
//! receive is armed on it with buffers the kernel picks from a provided buffer ring,
//! and its writes are queued as sends. The worker still sees readiness: each wait
//! turns the completions it reaped into the same events epoll gives (readable,
//! writable once a full output queue has room, read closed, error), with the
//! received bytes waiting in the socket's inbox, so the protocols and the loop are
//! the same for both backends. The epoll instance itself is watched by a multishot
//! poll in the ring, so connects, listeners, timers and sockets that stay on epoll
//! (QUIC's) wake the same wait. TLS sits above a [`Carried`] socket: its records go
//! through the ring like any other bytes. A socket asked to stamp arrivals is
//! received with a multishot `recvmsg` whose buffers carry the kernel's stamp (see
//! `stamps`), and [`nap`] submits a pass's sends and sleeps without waking for
//! completions: the open model's nap to its next start, its late reads timed by
//! those stamps.
//!
//! The ring lives in a thread-local of the loop's thread (it is made with the
//! single-issuer flag: only that thread may submit), installed by [`install`] for the
//! length of the loop. Every buffer the kernel may write into or read from
//! is owned here until the completion that ends its use has been reaped: sockets
//! that close while a receive or send is in flight keep their slot until then, and
//! the ring is torn down only after every operation has completed (past a bound, the
//! buffers are leaked rather than freed under the kernel). All of this module's
//! `unsafe` is that bookkeeping.

use std::cell::RefCell;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use io_uring::{opcode, squeue, types, IoUring};

mod accept;
mod backend;
mod buffers;
mod carried;
mod completions;
mod stamps;

use accept::Listening;
pub use accept::{accept, listen, unlisten};
pub use backend::{IoBackend, RingError};
use buffers::Buffers;
pub use carried::Carried;

/// Provided buffers the kernel receives into: how many, and how large each.
const BUFFERS: u16 = 512;
const BUFFER_SIZE: usize = 8192;
/// The buffer group's id.
const GROUP: u16 = 0;
/// Bytes a socket's output queue takes before a write would block.
const OUTBOX_LIMIT: usize = 1 << 20;

/// The most capacity an emptied buffer keeps: a burst of output (up to
/// `OUTBOX_LIMIT` in each of a socket's two send buffers) would otherwise stay
/// allocated, uncounted, for as long as the connection lives.
const KEPT_CAPACITY: usize = 64 << 10;
/// Unread bytes past which a socket's receive is paused until they are read.
const INBOX_LIMIT: usize = 256 << 10;
/// Bytes each stamped receive's buffer keeps for control messages (room for the
/// arrival stamp's; see [`stamps`]).
const CONTROL: usize = 64;
/// Submission queue entries (the completion queue has four times as many).
const ENTRIES: u32 = 2048;
/// Slots of the registered file table at most (fewer when the descriptor limit is lower).
const FIXED_FILES: u32 = 65_536;
/// How long the teardown waits for the last operations to complete.
const TEARDOWN: Duration = Duration::from_secs(2);

/// Kinds of operation, in a completion's user data's low bits.
const OP_RECV: u64 = 1;
const OP_SEND: u64 = 2;
const OP_CANCEL: u64 = 3;
const OP_POLL: u64 = 4;
const OP_ACCEPT: u64 = 5;

/// The event bits a wait reports, as epoll's.
const IN: u32 = libc::EPOLLIN as u32;
const OUT: u32 = libc::EPOLLOUT as u32;
const ERR: u32 = libc::EPOLLERR as u32;
const RDHUP: u32 = libc::EPOLLRDHUP as u32;

thread_local! {
    static CORE: RefCell<Option<Core>> = const { RefCell::new(None) };
}

fn user_data(slot: u32, gen: u32, op: u64) -> u64 {
    (u64::from(gen) << 32) | (u64::from(slot) << 3) | op
}

/// Empties a buffer, giving its memory back when it grew past `KEPT_CAPACITY`.
fn trim(v: &mut Vec<u8>) {
    v.clear();
    if v.capacity() > KEPT_CAPACITY {
        *v = Vec::new();
    }
}

/// One adopted socket's state.
#[derive(Default)]
struct Slot {
    fd: Option<OwnedFd>,
    /// The worker's token for its events.
    token: u64,
    /// Bumped each time the slot is freed: completions of an earlier socket are told apart.
    gen: u32,
    /// Held by a live [`Socket`] (false: free, or closing until its operations end).
    open: bool,
    /// Whether the descriptor is in the registered file table at this slot.
    fixed: bool,
    /// Received bytes not yet read, from `read_at`.
    inbox: Vec<u8>,
    read_at: usize,
    /// Receives carry the kernel's arrival stamps (a multishot `recvmsg`).
    stamps: bool,
    /// When the last bytes received reached the socket (`CLOCK_REALTIME`).
    arrived: Option<Duration>,
    eof: bool,
    error: Option<i32>,
    /// A multishot receive is armed.
    recv: bool,
    /// Its cancellation is under way (paused for a full inbox, or closing).
    cancelling: bool,
    /// What the send in flight carries, from `sent`.
    sending: Vec<u8>,
    sent: usize,
    send: bool,
    /// Written and not yet sent: the next send.
    outbox: Vec<u8>,
    /// In the core's list of sockets to flush.
    queued: bool,
    /// A write was refused for a full queue: report writable when there is room.
    blocked: bool,
    /// Given up on ([`Socket::abort`]): nothing more is sent, and what was unsent
    /// has already left the thread's count.
    aborted: bool,
    /// Shut the socket down so (`SHUT_*`) once its output has gone.
    shut: Option<libc::c_int>,
    /// Operations in flight.
    ops: u32,
    /// Event bits gathered since the last wait.
    bits: u32,
}

/// A thread's ring and its sockets.
struct Core {
    // Dropped first: the buffers outlive the ring.
    ring: IoUring,
    bufs: Buffers,
    /// The worker's epoll instance, watched by a multishot poll (-1: none).
    epfd: RawFd,
    epoll_armed: bool,
    epoll_ready: bool,
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// Slots with event bits to report.
    dirty: Vec<u32>,
    /// Entries that found the submission queue full, oldest first: they go in before
    /// any later one (a cancel never overtakes what it cancels).
    waiting: std::collections::VecDeque<squeue::Entry>,
    /// Sockets written to since the last wait.
    flush: Vec<u32>,
    /// Listening sockets, by the index [`listen`] was given, and the connections
    /// (or errors) their accepts brought, oldest first.
    listeners: Vec<Option<Listening>>,
    accepted: std::collections::VecDeque<(u32, io::Result<OwnedFd>)>,
    /// Events of listening sockets since the last wait.
    marks: Vec<(u64, u32)>,
    /// Operations in flight, all slots together (and the epoll poll).
    in_flight: usize,
    /// Bytes written and not yet sent, all slots together (see [`queued`]).
    queued: usize,
    /// Size of the registered file table.
    fixed: u32,
    reaped: Vec<(u64, i32, u32)>,
    /// What a stamped receive asks for: no name, [`CONTROL`] bytes of control
    /// messages. Boxed: the kernel reads it where it was when the receive was armed.
    stamped: Box<libc::msghdr>,
}

/// Why io_uring cannot carry a run's connections here.
fn refused(what: &str, e: &io::Error) -> RingError {
    RingError::Refused(match e.raw_os_error() {
        Some(libc::EPERM) => {
            format!("{what}: not permitted (kernel.io_uring_disabled or a seccomp profile)")
        }
        Some(libc::ENOSYS) => format!("{what}: this kernel has no io_uring"),
        Some(libc::EINVAL) => format!("{what}: this kernel lacks a feature it needs ({e})"),
        _ => format!("{what}: {e}"),
    })
}

impl Core {
    fn new(epfd: RawFd) -> Result<Core, RingError> {
        let ring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .setup_cqsize(ENTRIES * 4)
            .build(ENTRIES)
            .map_err(|e| refused("io_uring setup", &e))?;
        let p = ring.params();
        if !p.is_feature_ext_arg() || !p.is_feature_nodrop() {
            return Err(
                "io_uring lacks timed waits or overflow-safe completions (Linux 5.11+)"
                    .to_string()
                    .into(),
            );
        }
        let bufs = Buffers::new(&ring).map_err(|e| refused("io_uring provided buffers", &e))?;
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes into the struct it is given.
        let nofile = match unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } {
            0 => limit.rlim_cur.min(u64::from(FIXED_FILES)) as u32,
            _ => 0,
        };
        // Without a table each operation names the descriptor itself: slower, not wrong.
        let fixed = match nofile > 0 && ring.submitter().register_files_sparse(nofile).is_ok() {
            true => nofile,
            false => 0,
        };
        let mut core = Core {
            ring,
            bufs,
            epfd,
            epoll_armed: false,
            epoll_ready: false,
            slots: Vec::new(),
            free: Vec::new(),
            dirty: Vec::new(),
            waiting: std::collections::VecDeque::new(),
            flush: Vec::new(),
            listeners: Vec::new(),
            accepted: std::collections::VecDeque::new(),
            marks: Vec::new(),
            in_flight: 0,
            queued: 0,
            fixed,
            reaped: Vec::new(),
            stamped: Box::new(stamps::header()),
        };
        core.arm_epoll();
        Ok(core)
    }

    /// Queues an entry; it goes to the kernel with the next wait.
    fn push(&mut self, e: squeue::Entry) {
        self.in_flight += 1;
        if !self.waiting.is_empty() {
            self.waiting.push_back(e);
            return;
        }
        // SAFETY: every entry made here points only at memory this core owns until
        // the entry's last completion is reaped (the slots' send buffers, which are
        // not touched while a send is in flight; the provided buffers).
        if unsafe { self.ring.submission().push(&e) }.is_err() {
            let _ = self.ring.submit();
            // SAFETY: as above.
            if unsafe { self.ring.submission().push(&e) }.is_err() {
                self.waiting.push_back(e);
            }
        }
    }

    fn arm_epoll(&mut self) {
        if self.epfd < 0 || self.epoll_armed {
            return;
        }
        let e = opcode::PollAdd::new(types::Fd(self.epfd), libc::POLLIN as u32)
            .multi(true)
            .build()
            .user_data(OP_POLL);
        self.epoll_armed = true;
        self.push(e);
    }

    fn arm_recv(&mut self, slot: u32) {
        let s = &mut self.slots[slot as usize];
        let Some(fd) = s.fd.as_ref().map(AsRawFd::as_raw_fd) else {
            return;
        };
        let msg: *const libc::msghdr = &*self.stamped;
        let e = match (s.fixed, s.stamps) {
            (true, false) => opcode::RecvMulti::new(types::Fixed(slot), GROUP).build(),
            (false, false) => opcode::RecvMulti::new(types::Fd(fd), GROUP).build(),
            (true, true) => opcode::RecvMsgMulti::new(types::Fixed(slot), msg, GROUP).build(),
            (false, true) => opcode::RecvMsgMulti::new(types::Fd(fd), msg, GROUP).build(),
        }
        .user_data(user_data(slot, s.gen, OP_RECV));
        s.recv = true;
        s.ops += 1;
        self.push(e);
    }

    fn start_send(&mut self, slot: u32) {
        let s = &mut self.slots[slot as usize];
        let Some(fd) = s.fd.as_ref().map(AsRawFd::as_raw_fd) else {
            return;
        };
        let rest = &s.sending[s.sent..];
        let (p, n) = (rest.as_ptr(), rest.len() as u32);
        let e = match s.fixed {
            true => opcode::Send::new(types::Fixed(slot), p, n)
                .flags(libc::MSG_NOSIGNAL)
                .build(),
            false => opcode::Send::new(types::Fd(fd), p, n)
                .flags(libc::MSG_NOSIGNAL)
                .build(),
        }
        .user_data(user_data(slot, s.gen, OP_SEND));
        s.send = true;
        s.ops += 1;
        self.push(e);
    }

    fn cancel_recv(&mut self, slot: u32) {
        let s = &mut self.slots[slot as usize];
        if !s.recv || s.cancelling {
            return;
        }
        let target = user_data(slot, s.gen, OP_RECV);
        s.cancelling = true;
        s.ops += 1;
        let e = opcode::AsyncCancel::new(target)
            .build()
            .user_data(user_data(slot, s.gen, OP_CANCEL));
        self.push(e);
    }

    fn mark(&mut self, slot: u32, bits: u32) {
        let s = &mut self.slots[slot as usize];
        if !s.open {
            return;
        }
        if s.bits == 0 {
            self.dirty.push(slot);
        }
        s.bits |= bits;
    }

    /// Takes an open descriptor over (from epoll when `watched`; see the module's note),
    /// its receives stamped when `stamps`.
    fn adopt(&mut self, fd: OwnedFd, token: usize, watched: bool, stamps: bool) -> (u32, u32) {
        if watched && self.epfd >= 0 {
            // SAFETY: removes a registration; the event pointer may be null for DEL.
            unsafe {
                libc::epoll_ctl(
                    self.epfd,
                    libc::EPOLL_CTL_DEL,
                    fd.as_raw_fd(),
                    std::ptr::null_mut(),
                )
            };
        }
        let slot = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push(Slot::default());
                (self.slots.len() - 1) as u32
            }
        };
        let fixed = slot < self.fixed
            && self
                .ring
                .submitter()
                .register_files_update(slot, &[fd.as_raw_fd()])
                .is_ok();
        let s = &mut self.slots[slot as usize];
        s.fd = Some(fd);
        s.token = token as u64;
        s.open = true;
        s.fixed = fixed;
        s.stamps = stamps;
        let gen = s.gen;
        self.arm_recv(slot);
        (slot, gen)
    }

    fn slot(&mut self, slot: u32, gen: u32) -> io::Result<&mut Slot> {
        match self.slots.get_mut(slot as usize) {
            Some(s) if s.gen == gen && s.open => Ok(s),
            _ => Err(io::Error::other("io_uring socket already closed")),
        }
    }

    fn read(&mut self, slot: u32, gen: u32, b: &mut [u8]) -> io::Result<usize> {
        let s = self.slot(slot, gen)?;
        let have = s.inbox.len() - s.read_at;
        if have > 0 {
            let n = have.min(b.len());
            b[..n].copy_from_slice(&s.inbox[s.read_at..s.read_at + n]);
            s.read_at += n;
            if s.read_at == s.inbox.len() {
                s.inbox.clear();
                s.read_at = 0;
                if !s.recv && !s.eof && s.error.is_none() {
                    self.arm_recv(slot);
                }
            }
            return Ok(n);
        }
        if let Some(e) = s.error {
            return Err(io::Error::from_raw_os_error(e));
        }
        if s.eof {
            return Ok(0);
        }
        if !s.recv {
            self.arm_recv(slot);
        }
        Err(io::ErrorKind::WouldBlock.into())
    }

    fn write(&mut self, slot: u32, gen: u32, b: &[u8]) -> io::Result<usize> {
        let s = self.slot(slot, gen)?;
        if let Some(e) = s.error {
            return Err(io::Error::from_raw_os_error(e));
        }
        if s.aborted {
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        let room = OUTBOX_LIMIT.saturating_sub(s.outbox.len());
        if room == 0 {
            s.blocked = true;
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = b.len().min(room);
        s.outbox.extend_from_slice(&b[..n]);
        // Everything a connection is given in one pass goes out as one send, made
        // when the pass ends (see `flush`).
        if !s.queued && n > 0 {
            s.queued = true;
            self.flush.push(slot);
        }
        self.queued += n;
        Ok(n)
    }

    /// Starts a send of each queued output whose connection has none in flight
    /// (the others go on when theirs completes).
    fn flush(&mut self) {
        for slot in std::mem::take(&mut self.flush) {
            let s = &mut self.slots[slot as usize];
            s.queued = false;
            if !s.send && !s.outbox.is_empty() && s.fd.is_some() {
                std::mem::swap(&mut s.sending, &mut s.outbox);
                s.sent = 0;
                self.start_send(slot);
            }
        }
    }

    /// Drops the output not yet sent (the queue, and the send in flight, cancelled)
    /// and makes the close that follows reset the connection.
    fn abort(&mut self, slot: u32, gen: u32) {
        let Ok(s) = self.slot(slot, gen) else { return };
        if s.aborted {
            return;
        }
        s.aborted = true;
        // The send in flight keeps its buffer until the kernel gives it back, but its
        // bytes leave the count now: the budget sees the connection's output gone.
        let dropped = s.outbox.len() + if s.send { s.sending.len() - s.sent } else { 0 };
        s.outbox.clear();
        s.shut = None;
        let sending = s.send;
        if let Some(fd) = &s.fd {
            linger_zero(fd.as_raw_fd());
        }
        self.queued -= dropped;
        if sending {
            let s = &mut self.slots[slot as usize];
            s.ops += 1;
            let e = opcode::AsyncCancel::new(user_data(slot, gen, OP_SEND))
                .build()
                .user_data(user_data(slot, gen, OP_CANCEL));
            self.push(e);
        }
    }

    fn shutdown(&mut self, slot: u32, gen: u32, how: libc::c_int) {
        let Ok(s) = self.slot(slot, gen) else { return };
        if s.send || !s.outbox.is_empty() {
            s.shut = Some(how);
        } else if let Some(fd) = &s.fd {
            // SAFETY: a plain call on a descriptor this slot owns.
            unsafe { libc::shutdown(fd.as_raw_fd(), how) };
        }
    }

    /// The socket is dropped: its receive is cancelled, its output finishes, and
    /// the slot is freed once nothing is in flight.
    fn close(&mut self, slot: u32, gen: u32) {
        let Ok(s) = self.slot(slot, gen) else { return };
        s.open = false;
        s.bits = 0;
        self.cancel_recv(slot);
        self.settle(slot);
    }

    fn settle(&mut self, slot: u32) {
        let s = &mut self.slots[slot as usize];
        // Output written before the close still goes out.
        if s.open || s.ops > 0 || !s.outbox.is_empty() || s.fd.is_none() {
            return;
        }
        if s.fixed {
            let _ = self.ring.submitter().register_files_update(slot, &[-1]);
        }
        let s = &mut self.slots[slot as usize];
        if let (Some(how), Some(fd)) = (s.shut, &s.fd) {
            // SAFETY: a plain call on a descriptor this slot owns.
            unsafe { libc::shutdown(fd.as_raw_fd(), how) };
        }
        let gen = s.gen.wrapping_add(1);
        trim(&mut s.inbox);
        trim(&mut s.sending);
        trim(&mut s.outbox);
        *s = Slot {
            gen,
            inbox: std::mem::take(&mut s.inbox),
            sending: std::mem::take(&mut s.sending),
            outbox: std::mem::take(&mut s.outbox),
            ..Slot::default()
        };
        self.free.push(slot);
    }
}

/// A socket whose I/O goes through the thread's ring.
pub struct Socket {
    slot: u32,
    gen: u32,
}

fn with_core<T>(f: impl FnOnce(&mut Core) -> io::Result<T>) -> io::Result<T> {
    CORE.with(|c| match c.borrow_mut().as_mut() {
        Some(core) => f(core),
        None => Err(io::Error::other("this thread has no io_uring ring")),
    })
}

impl Socket {
    /// Takes over an open socket, reporting its events under `token` (`watched`:
    /// it is registered with the thread's epoll instance, and leaves it); gives the
    /// descriptor back when this thread has no ring.
    pub fn adopt(fd: OwnedFd, token: usize, watched: bool) -> Result<Socket, OwnedFd> {
        CORE.with(|c| match c.borrow_mut().as_mut() {
            Some(core) => {
                let (slot, gen) = core.adopt(fd, token, watched, false);
                Ok(Socket { slot, gen })
            }
            None => Err(fd),
        })
    }

    /// As [`Socket::adopt`], for a socket asked to stamp arrivals (`SO_TIMESTAMPNS`,
    /// set by the caller): each receive then carries its stamp, which
    /// [`Socket::read_stamped`] returns.
    pub fn adopt_stamped(fd: OwnedFd, token: usize, watched: bool) -> Result<Socket, OwnedFd> {
        CORE.with(|c| match c.borrow_mut().as_mut() {
            Some(core) => {
                let (slot, gen) = core.adopt(fd, token, watched, true);
                Ok(Socket { slot, gen })
            }
            None => Err(fd),
        })
    }

    /// Reads like `read`, and with it when the last bytes received reached the
    /// socket (`CLOCK_REALTIME`, since the epoch) for a socket adopted stamped.
    pub fn read_stamped(&mut self, b: &mut [u8]) -> io::Result<(usize, Option<Duration>)> {
        with_core(|c| {
            let n = c.read(self.slot, self.gen, b)?;
            Ok((n, c.slots[self.slot as usize].arrived))
        })
    }

    /// The capacity of this socket's two send buffers (what its output holds in
    /// the process, sent or not).
    #[cfg(test)]
    pub(crate) fn output_capacity(&self) -> usize {
        with_core(|c| {
            let s = c.slot(self.slot, self.gen)?;
            Ok(s.sending.capacity() + s.outbox.capacity())
        })
        .unwrap_or(0)
    }

    /// Gives up on the connection: the output not yet sent is dropped (a send in
    /// flight is cancelled) and the close resets it. For a peer that stopped reading,
    /// whose output would otherwise wait in the process for as long as it holds the
    /// connection open.
    pub fn abort(&mut self) {
        let _ = with_core(|c| {
            c.abort(self.slot, self.gen);
            Ok(())
        });
    }

    /// Shuts the socket down (`how`) once the output queued so far has gone.
    pub fn shutdown(&mut self, how: std::net::Shutdown) {
        let how = match how {
            std::net::Shutdown::Read => libc::SHUT_RD,
            std::net::Shutdown::Write => libc::SHUT_WR,
            std::net::Shutdown::Both => libc::SHUT_RDWR,
        };
        let _ = with_core(|c| {
            c.shutdown(self.slot, self.gen, how);
            Ok(())
        });
    }
}

impl io::Read for Socket {
    #[inline]
    fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        with_core(|c| c.read(self.slot, self.gen, b))
    }
}

impl io::Write for Socket {
    #[inline]
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        with_core(|c| c.write(self.slot, self.gen, b))
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        let _ = CORE.try_with(|c| {
            if let Ok(mut c) = c.try_borrow_mut() {
                if let Some(core) = c.as_mut() {
                    core.close(self.slot, self.gen);
                }
            }
        });
    }
}

/// The ring installed on this thread, until dropped (then torn down).
pub struct Installed(());

/// Installs a ring on this thread that also watches `epfd` (the worker's epoll).
pub fn install(epfd: RawFd) -> Result<Installed, RingError> {
    let core = Core::new(epfd)?;
    CORE.with(|c| *c.borrow_mut() = Some(core));
    Ok(Installed(()))
}

impl Drop for Installed {
    fn drop(&mut self) {
        let core = CORE.with(|c| c.borrow_mut().take());
        if let Some(mut core) = core {
            core.teardown();
        }
    }
}

/// Submits the sends and receives queued since the last wait and waits at most
/// `timeout` for completions; the events they come to, as epoll reports them (the
/// token in `u64`), replace `out`'s, the thread's epoll instance's own among them
/// when it woke.
pub fn wait(timeout: Duration, out: &mut Vec<libc::epoll_event>) -> io::Result<()> {
    with_core(|c| c.wait(timeout, out))
}

/// Submits the sends and receives queued since the last wait and sleeps for `d`
/// without waking for completions: a load generator's nap to its next start, which
/// reads what came meanwhile by its arrival stamps.
pub fn nap(d: Duration) -> io::Result<()> {
    with_core(|c| c.nap(d))
}

/// Makes closing `fd` reset the connection, dropping what the kernel still holds to
/// send (`SO_LINGER` of zero).
pub fn linger_zero(fd: RawFd) {
    let l = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: setsockopt reads a linger struct of the size given.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&l as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
}

/// Bytes this thread's sockets were given to write that the kernel has not taken
/// yet (each socket's output queue and its send in flight): output held in the
/// process, where on epoll the kernel's socket buffers would hold it. 0 without a
/// ring.
pub fn queued() -> usize {
    CORE.with(|c| c.borrow().as_ref().map_or(0, |c| c.queued))
}

/// Whether io_uring can carry connections on this machine: a ring is made with
/// what the backend needs, and a multishot receive with provided buffers is tried on
/// a socket pair. The error says why not.
///
/// The trial runs on a thread of its own: tearing its ring down leaves work for the
/// thread that made it, which interrupts that thread's next blocking call (a read with
/// a timeout fails with EINTR), so the caller's thread must not be the one.
pub fn probe() -> Result<(), RingError> {
    if CORE.with(|c| c.borrow().is_some()) {
        return Ok(());
    }
    std::thread::Builder::new()
        .name("stampede-io-probe".into())
        .spawn(probe_here)
        .map_err(|e| RingError::Refused(format!("io_uring probe: no thread ({e})")))?
        .join()
        .unwrap_or_else(|_| Err("io_uring probe: its thread panicked".to_string().into()))
}

/// [`probe`]'s trial, on the calling thread.
fn probe_here() -> Result<(), RingError> {
    use std::io::{Read, Write};
    let _ring = install(-1)?;
    let (a, mut b) =
        std::os::unix::net::UnixStream::pair().map_err(|e| format!("io_uring probe: {e}"))?;
    let mut s = Socket::adopt(OwnedFd::from(a), 0, false)
        .map_err(|_| "io_uring probe: no ring".to_string())?;
    b.write_all(b"probe")
        .map_err(|e| format!("io_uring probe: {e}"))?;
    let end = Instant::now() + Duration::from_secs(1);
    let mut out = Vec::new();
    let mut got = [0u8; 8];
    loop {
        wait(Duration::from_millis(20), &mut out).map_err(|e| refused("io_uring wait", &e))?;
        match s.read(&mut got) {
            Ok(5) if &got[..5] == b"probe" => return Ok(()),
            Ok(n) => return Err(format!("io_uring probe: read {n} bytes of 5").into()),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && Instant::now() < end => {}
            Err(e) => {
                return Err(refused(
                    "io_uring multishot receive with provided buffers",
                    &e,
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests;
