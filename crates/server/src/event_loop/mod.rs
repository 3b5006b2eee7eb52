//! One server thread's event loop: its listeners, its connections, HTTP/3's UDP
//! sockets, the timers (deferred answers, the once-a-second scan for slow and idle
//! clients) and draining at shutdown. Accepting is in `accept`, connection input and
//! output in `conn`, the answers given later than at once (delays, feeds, computed
//! bodies) in `deferred`, the UDP sockets and their QUIC endpoints in `datagrams`.
//! No part of it names a protocol: each connection's is driven through
//! [`crate::proto::Proto`]'s verbs.

/// The loop's buffers and settings lent to connection `$c`'s protocol for one call
/// (see [`crate::proto::Env`]).
macro_rules! env {
    ($s:ident, $c:expr) => {
        crate::proto::Env {
            a: crate::h1::Answering {
                out: &mut $s.out,
                ctx: &mut $s.ctx,
                limits: &$s.config.limits,
                lines: crate::routes::Lines {
                    date: $s.lines.date.line(),
                    server: &$s.lines.server,
                },
                draining: $s.draining,
                waiting_output: $c.wbuf.len(),
                max_output: crate::proto::MAX_PENDING_OUTPUT,
            },
            config: &$s.config,
            date: &$s.lines.date,
            close_after: $c.close_after,
            scratch: &mut $s.scratch,
            later: &mut $s.later,
            publish: &mut $s.room.publish,
        }
    };
}

mod accept;
mod conn;
mod datagrams;
mod deferred;

pub(crate) use datagrams::Datagrams;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::net::TcpListener;
use mio::{Events, Interest, Poll, Token, Waker};

use crate::date::DateCache;
use crate::proto::{Proto, Scratch};
use crate::routes::{Ctx, Deferred};
use crate::store::Store;
use crate::transport::Io;
use crate::ws::room::{Backlog, Delivery, Rooms};
use crate::{Config, Done, Job, Shutdown};

const WAKE: Token = Token(usize::MAX);
/// The alarm that wakes the loop for the first deferred answer due.
const ALARM: Token = Token(usize::MAX - 1);
const LISTENER_BASE: usize = usize::MAX / 2;
/// The first UDP socket's token (HTTP/3's; see [`datagrams`]).
const DATAGRAM_BASE: usize = usize::MAX / 4;
const IO_BUF: usize = 64 * 1024;
/// Reads of one connection per wake-up: a client that sends without pause (a flood
/// of frames) gets its turn and then waits for the others' (epoll is edge-triggered,
/// so it is queued to be read again).
const READS_PER_WAKE: usize = 16;
/// How long accepting pauses when the process is out of descriptors.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);
/// How long a WebSocket connection whose close is out waits for the client's end of
/// the TCP connection before closing it regardless.
const LINGER: Duration = Duration::from_secs(2);
/// The stream slot of a timer that ends a WebSocket connection's linger.
const LINGER_TIMER: u32 = u32::MAX;

struct Conn {
    stream: Io,
    /// Unparsed input (a partial request, or requests queued behind a deferred one).
    rbuf: Vec<u8>,
    /// Output not yet written.
    wbuf: Vec<u8>,
    /// The connection ends once what was answered is written.
    close_after: bool,
    head_since: Option<Instant>,
    last_active: Instant,
    generation: u32,
    /// The peer sent FIN: answer what was asked, then close.
    peer_closed: bool,
    /// What it speaks (see [`Proto`]).
    proto: Proto,
    /// Reading stopped while output waits for the client.
    paused: bool,
    /// When output last made progress: output that makes none for the idle timeout
    /// ends the connection.
    wrote_at: Instant,
    /// HTTP/2 body bytes held for the client's windows, and since when that count.
    held: (usize, Instant),
    /// When it was accepted: a TLS handshake not done within the head timeout of it
    /// ends the connection (a few bytes of ClientHello must not hold it).
    accepted: Instant,
    /// WebSocket: the close is out and the write side shut; what the client still
    /// sends is read and dropped until it closes its side (or [`LINGER`] passes), so
    /// that its last frames do not meet a closed socket, whose reset could destroy
    /// the close it has not read yet.
    lingering: bool,
}

/// One thread's server loop: its listeners, connections (TCP, TLS and, for HTTP/3,
/// UDP datagrams), timers and buffers. The protocol state lives in the sans-IO
/// connections it holds, each driven through [`Proto`]'s verbs.
pub(crate) struct EventLoop {
    poll: Poll,
    pub(crate) waker: Arc<Waker>,
    listeners: Vec<TcpListener>,
    config: Config,
    compute: Compute,
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    open: usize,
    max_open: usize,
    lines: HeaderLines,
    timers: Timers,
    ibuf: Vec<u8>,
    out: Vec<u8>,
    ctx: Ctx,
    /// Buffers the connections' protocols reuse.
    scratch: Scratch,
    /// Answers a protocol's pass left to come later, with their stream.
    later: Vec<(Deferred, u32)>,
    generation: u32,
    draining: bool,
    /// Connections whose read budget ran out with data left: (connection, its
    /// generation, whether the peer had closed).
    reread: Vec<(usize, u32, bool)>,
    /// Out of descriptors: accepting is tried again then. The listener is
    /// edge-triggered, so connections already waiting in its backlog would otherwise
    /// wait for another to arrive, and with a full backlog none ever does.
    accept_retry: Option<Instant>,
    /// This loop's index among the server's threads.
    index: usize,
    room: RoomSide,
    /// Plain connections go onto the thread's io_uring ring: `Some(required)` (a ring
    /// that cannot be made then fails the loop rather than leaving it on epoll).
    ring: Option<bool>,
    held: Held,
    /// HTTP/3's UDP sockets and their endpoints, where the server speaks it.
    udp: Option<datagrams::Udp>,
}

/// Answers computed on the server's compute thread: its queue, and this loop's inbox
/// of what it computed.
struct Compute {
    jobs: Sender<Job>,
    done_tx: Sender<Done>,
    done_rx: Receiver<Done>,
}

/// The `Date` and `Server` lines of answers.
struct HeaderLines {
    date: DateCache,
    /// The `Server` line of HTTP/1.1 answers, and `Alt-Svc`'s when HTTP/3 is served.
    server: Vec<u8>,
}

/// The loop's timers.
struct Timers {
    /// Deferred answers due: (when, connection, generation, HTTP/2 stream or 0).
    heap: BinaryHeap<Reverse<(Instant, usize, u32, u32)>>,
    /// Wakes the loop when the first deferred answer is due, to the microsecond: a
    /// poll's own timeout is rounded up to whole milliseconds, which would make each
    /// timed event (a token of the mock LLM, a server-sent event) up to a millisecond
    /// late. `None` where the system gives no timer; the poll's timeout then serves.
    alarm: Option<Alarm>,
}

/// WebSocket rooms: the server's registry, this loop's inbox, and the messages its
/// members sent in this wake-up, by room, to publish at its end.
struct RoomSide {
    registry: Arc<Rooms>,
    inbox: Receiver<Delivery>,
    backlog: Arc<Backlog>,
    publish: Vec<(Box<[u8]>, Vec<u8>)>,
}

/// Output waiting for clients, against the server's budget for it.
struct Held {
    /// Bytes waiting in every connection's `wbuf`, and on io_uring in the rings'
    /// queues, over all of the server's loops (see [`Config::output_budget`]).
    total: Arc<AtomicUsize>,
    /// This loop's ring's share of `total`, as last counted.
    ring: usize,
}

/// One readiness event, from epoll or from the ring's completions.
#[derive(Clone, Copy)]
struct Ready {
    token: usize,
    readable: bool,
    writable: bool,
    closing: bool,
}

impl Ready {
    fn from_bits(token: u64, bits: u32) -> Ready {
        let has = |b: libc::c_int| bits & b as u32 != 0;
        Ready {
            token: token as usize,
            readable: has(libc::EPOLLIN | libc::EPOLLPRI),
            writable: has(libc::EPOLLOUT),
            closing: has(libc::EPOLLERR | libc::EPOLLHUP)
                || (has(libc::EPOLLIN) && has(libc::EPOLLRDHUP)),
        }
    }
}

impl EventLoop {
    /// Publishes the messages this wake-up's room members sent: each room's frames
    /// made shareable once, its members on other loops handed to their inboxes, this
    /// loop's written now.
    #[cold]
    fn publish_rooms(&mut self, now: Instant) {
        for (room, frames) in std::mem::take(&mut self.room.publish) {
            let frames: Arc<[u8]> = frames.into();
            let own = self.room.registry.publish(&room, self.index, &frames);
            self.deliver(&own, &frames, false, now);
        }
    }

    /// Writes `frames` to each of this loop's connections in `to` still holding the
    /// generation named; one whose unread output is past the limit is closed with
    /// 1008 instead, and so is each of them when this loop's inbox `overflow`ed.
    #[cold]
    fn deliver(&mut self, to: &[(usize, u32)], frames: &[u8], overflow: bool, now: Instant) {
        for &(ci, g) in to {
            let Some(c) = self.conns.get_mut(ci).and_then(Option::as_mut) else {
                continue;
            };
            if c.generation != g || c.peer_closed {
                continue;
            }
            self.out.clear();
            let limit = c.proto.output_limit().unwrap_or(usize::MAX);
            let too_slow = overflow || c.wbuf.len() >= limit;
            match c.proto.room_frames(frames, too_slow, &mut self.out) {
                None => continue,
                Some(true) => c.close_after = true,
                Some(false) => c.last_active = now,
            }
            self.write_out(ci);
            self.after_io(ci, now);
        }
    }
}

/// A timerfd, armed for one deadline at a time.
struct Alarm {
    fd: std::os::fd::OwnedFd,
    /// The deadline it is armed for.
    armed: Option<Instant>,
}

impl Alarm {
    fn new(registry: &mio::Registry) -> Option<Alarm> {
        use rustix::time::{timerfd_create, TimerfdClockId, TimerfdFlags};
        use std::os::fd::AsRawFd;
        let flags = TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC;
        let fd = timerfd_create(TimerfdClockId::Monotonic, flags).ok()?;
        registry
            .register(
                &mut mio::unix::SourceFd(&fd.as_raw_fd()),
                ALARM,
                Interest::READABLE,
            )
            .ok()?;
        Some(Alarm { fd, armed: None })
    }

    /// Arms it for `at` (from `now`), unless it is armed for that already.
    fn arm(&mut self, at: Instant, now: Instant) {
        use rustix::time::{timerfd_settime, Itimerspec, TimerfdTimerFlags, Timespec};
        if self.armed == Some(at) {
            return;
        }
        // Zero would disarm it: a deadline passed fires at once instead.
        let d = at
            .saturating_duration_since(now)
            .max(Duration::from_nanos(1));
        let spec = Itimerspec {
            it_interval: Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: Timespec {
                tv_sec: d.as_secs() as i64,
                tv_nsec: i64::from(d.subsec_nanos()) as _,
            },
        };
        let r = timerfd_settime(&self.fd, TimerfdTimerFlags::empty(), &spec);
        self.armed = r.is_ok().then_some(at);
    }

    /// It fired: its count is read so that it stops being readable.
    fn fired(&mut self) {
        let mut n = [0u8; 8];
        let _ = rustix::io::read(&self.fd, &mut n);
        self.armed = None;
    }
}

impl EventLoop {
    pub(crate) fn new(
        index: usize,
        (listeners, datagrams): (Vec<TcpListener>, Vec<Datagrams>),
        config: Config,
        store: Arc<Store>,
        jobs: Sender<Job>,
        max_open: usize,
        (rooms, held): (Arc<Rooms>, Arc<AtomicUsize>),
    ) -> io::Result<EventLoop> {
        let poll = Poll::new()?;
        let udp = match datagrams.is_empty() {
            true => None,
            false => Some(datagrams::Udp::new(
                datagrams,
                poll.registry(),
                DATAGRAM_BASE,
            )?),
        };
        let waker = Arc::new(Waker::new(poll.registry(), WAKE)?);
        let (room_tx, room_rx) = mpsc::channel();
        let backlog = rooms.add_loop(index, room_tx, waker.clone());
        // A manual clock's time is not the kernel's: its timers are met by the loop's
        // bounded waits instead of an alarm.
        let alarm = match config.clock.is_manual() {
            true => None,
            false => Alarm::new(poll.registry()),
        };
        let (done_tx, done_rx) = mpsc::channel();
        let mut server_line = crate::SERVER_LINE.as_bytes().to_vec();
        if let Some(v) = &config.alt_svc {
            server_line.extend_from_slice(format!("Alt-Svc: {v}\r\n").as_bytes());
        }
        Ok(EventLoop {
            poll,
            waker,
            listeners,
            ctx: Ctx {
                llm: config.llm,
                engine: (config.llm.engine)
                    .map(|e| crate::llm::engine::Engine::new(e, config.llm_metrics.clone())),
                llm_metrics: config.llm_metrics.clone(),
                ..Ctx::new(store, config.static_dir.clone(), index)
            },
            config,
            compute: Compute {
                jobs,
                done_tx,
                done_rx,
            },
            conns: Vec::new(),
            free: Vec::new(),
            open: 0,
            max_open,
            lines: HeaderLines {
                date: DateCache::new(),
                server: server_line,
            },
            timers: Timers {
                heap: BinaryHeap::new(),
                alarm,
            },
            ibuf: vec![0; IO_BUF],
            out: Vec::with_capacity(IO_BUF),
            scratch: Scratch::default(),
            later: Vec::new(),
            generation: 0,
            draining: false,
            reread: Vec::new(),
            accept_retry: None,
            index,
            room: RoomSide {
                registry: rooms,
                inbox: room_rx,
                backlog,
                publish: Vec::new(),
            },
            ring: None,
            held: Held {
                total: held,
                ring: 0,
            },
            udp,
        })
    }

    /// Closes connection `ci` because the server's output budget is spent while its
    /// client leaves answers unread.
    fn shed(&mut self, ci: usize) {
        if let Some(c) = self.conns[ci].as_mut() {
            // Its output would wait as long as it holds the connection without
            // reading (in the process on io_uring, in the kernel on epoll), and a
            // close frame would wait behind it: dropped, and the connection reset.
            c.stream.abort();
        }
        self.close(ci);
        // At once, so that the next client judged against the budget sees it spent
        // by one connection fewer.
        self.count_ring_output();
    }

    /// On io_uring the output a client leaves unread also waits in the process (in
    /// its socket's queue), where on epoll the kernel's socket buffer holds it: the
    /// ring's count since the last call is carried into the server-wide one.
    fn count_ring_output(&mut self) {
        if self.ring.is_none() {
            return;
        }
        let queued = stampede_ring::queued();
        if queued > self.held.ring {
            self.held
                .total
                .fetch_add(queued - self.held.ring, Ordering::Relaxed);
        } else {
            self.held
                .total
                .fetch_sub(self.held.ring - queued, Ordering::Relaxed);
        }
        self.held.ring = queued;
    }

    /// Puts the loop's TCP connections (plain or TLS) on an io_uring ring
    /// (`Some(required)`; see the field).
    pub(crate) fn with_ring(mut self, ring: Option<bool>) -> EventLoop {
        self.ring = ring;
        self
    }

    pub(crate) fn run(mut self, shutdown: Shutdown) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        let mut events = Events::with_capacity(1024);
        let mut completions: Vec<libc::epoll_event> = Vec::new();
        let mut ready: Vec<Ready> = Vec::with_capacity(1024);
        // Torn down (every operation ended) when the loop returns, before the
        // connections it carried are dropped with `self`.
        let mut _ring = None;
        if let Some(required) = self.ring {
            match stampede_ring::install(self.poll.as_raw_fd()) {
                Ok(r) => _ring = Some(r),
                Err(why) if required => return Err(io::Error::other(why)),
                Err(_) => self.ring = None,
            }
        }
        for (i, l) in self.listeners.iter_mut().enumerate() {
            let token = LISTENER_BASE + i;
            match self.ring {
                // On the ring a multishot accept takes the listener's connections.
                Some(_) => stampede_ring::listen(i as u32, l.as_raw_fd(), token)?,
                None => self
                    .poll
                    .registry()
                    .register(l, Token(token), Interest::READABLE)?,
            }
        }
        let mut next_scan = self.config.clock.now() + Duration::from_secs(1);
        let mut drain_deadline = None;
        loop {
            let now = self.config.clock.now();
            let mut timeout = next_scan.saturating_duration_since(now);
            if let Some(&Reverse((t, ..))) = self.timers.heap.peek() {
                match &mut self.timers.alarm {
                    Some(a) => a.arm(t, now),
                    None => timeout = timeout.min(t.saturating_duration_since(now)),
                }
            }
            if !self.reread.is_empty() {
                timeout = Duration::ZERO;
            }
            if let Some(t) = self.accept_retry {
                timeout = timeout.min(t.saturating_duration_since(now));
            }
            if let Some(t) = self.udp.as_mut().and_then(|u| u.wait_until(now)) {
                timeout = timeout.min(t.saturating_duration_since(now));
            }
            let timeout = self.config.clock.bound(timeout);
            let waited = match self.ring {
                Some(_) => stampede_ring::wait(timeout, &mut completions),
                None => self.poll.poll(&mut events, Some(timeout)),
            };
            match waited {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            ready.clear();
            match self.ring {
                Some(_) => ready.extend(
                    completions
                        .iter()
                        .map(|e| Ready::from_bits(e.u64, e.events)),
                ),
                None => ready.extend(events.iter().map(|e| Ready {
                    token: e.token().0,
                    readable: e.is_readable(),
                    writable: e.is_writable(),
                    closing: e.is_read_closed() || e.is_error(),
                })),
            }
            self.lines.date.refresh();
            let now = self.config.clock.now();
            let mut woken = false;
            for &ev in &ready {
                match Token(ev.token) {
                    // Another loop's room messages, or the shutdown.
                    WAKE => woken = true,
                    ALARM => {
                        if let Some(a) = &mut self.timers.alarm {
                            a.fired();
                        }
                    }
                    // Listeners, and UDP sockets: one test on a connection's way.
                    Token(t) if t >= DATAGRAM_BASE => {
                        if t >= LISTENER_BASE {
                            self.accept(t - LISTENER_BASE, now);
                        } else if let Some(u) = &mut self.udp {
                            u.ready(t - DATAGRAM_BASE, ev.readable, ev.writable, now);
                        }
                    }
                    Token(ci) => {
                        if ev.writable {
                            self.flush(ci, now);
                        }
                        if ev.readable || ev.closing {
                            self.on_readable(ci, now, ev.closing);
                        }
                    }
                }
            }
            if self.accept_retry.is_some_and(|t| now >= t) {
                self.accept_retry = None;
                for li in 0..self.listeners.len() {
                    self.accept(li, now);
                }
            }
            for (ci, generation, closing) in std::mem::take(&mut self.reread) {
                if self.conns[ci]
                    .as_ref()
                    .is_some_and(|c| c.generation == generation)
                {
                    self.on_readable(ci, now, closing);
                }
            }
            if !self.room.publish.is_empty() {
                self.publish_rooms(now);
            }
            if let Some(u) = &mut self.udp {
                u.turn(now, self.lines.date.value());
            }
            // Each delivery wakes the loop after it is queued, so the inbox is read
            // only when woken.
            while let Some(d) = woken.then(|| self.room.inbox.try_recv().ok()).flatten() {
                self.room.backlog.took(&d);
                self.deliver(&d.to, &d.frames, d.overflow, now);
            }
            while let Ok(d) = self.compute.done_rx.try_recv() {
                self.finish_biteq(d, now);
            }
            while let Some(&Reverse((t, ci, g, stream))) = self.timers.heap.peek() {
                if t > now {
                    break;
                }
                self.timers.heap.pop();
                self.finish_delay(ci, g, stream, now);
            }
            self.count_ring_output();
            if now >= next_scan {
                self.scan(now);
                next_scan = now + Duration::from_secs(1);
            }
            if shutdown.is_triggered() && !self.draining {
                self.draining = true;
                if let Some(mut u) = self.udp.take() {
                    // Datagram connections are closed at once (they have no FIN).
                    u.close(now, self.poll.registry());
                }
                drain_deadline = Some(now + self.config.drain_timeout);
                for (i, mut l) in std::mem::take(&mut self.listeners).into_iter().enumerate() {
                    match self.ring {
                        Some(_) => stampede_ring::unlisten(i as u32),
                        None => {
                            let _ = self.poll.registry().deregister(&mut l);
                        }
                    }
                }
                for ci in 0..self.conns.len() {
                    if let Some(c) = self.conns[ci].as_mut() {
                        // The protocol's goodbye: HTTP/2's streams opened so far are
                        // answered, then the close; WebSocket's close, then the
                        // connection's.
                        self.out.clear();
                        if let Some(close) = c.proto.go_away(&mut self.out) {
                            c.close_after |= close;
                            self.write_out(ci);
                            self.after_io(ci, now);
                            continue;
                        }
                    }
                    if self.is_idle(ci) {
                        self.close(ci);
                    }
                }
            }
            if self.draining && (self.open == 0 || drain_deadline.is_some_and(|d| now >= d)) {
                self.held.total.fetch_sub(self.held.ring, Ordering::Relaxed);
                return Ok(());
            }
        }
    }

    fn is_idle(&self, ci: usize) -> bool {
        match &self.conns[ci] {
            Some(c) => {
                c.rbuf.is_empty() && c.wbuf.is_empty() && !c.proto.busy() && !c.stream.wants_write()
            }
            None => false,
        }
    }

    fn close(&mut self, ci: usize) {
        if let Some(mut c) = self.conns[ci].take() {
            self.held.total.fetch_sub(c.wbuf.len(), Ordering::Relaxed);
            if let Some(room) = c.proto.room() {
                self.room.registry.leave(room, self.index, ci, c.generation);
            }
            if let Some(s) = c.stream.socket() {
                let _ = self.poll.registry().deregister(s);
            }
            self.free.push(ci);
            self.open -= 1;
        }
    }

    /// Once a second: slowloris and idle connections.
    fn scan(&mut self, now: Instant) {
        for ci in 0..self.conns.len() {
            let Some(c) = self.conns[ci].as_mut() else {
                continue;
            };
            let timed_out = c
                .head_since
                .is_some_and(|t| now - t >= self.config.head_timeout);
            // The handshake comes before any head: it gets the same time, from accept.
            if matches!(&c.stream, Io::Tls(t) if t.is_handshaking())
                && now - c.accepted >= self.config.head_timeout
            {
                self.close(ci);
                continue;
            }
            let idle = c.rbuf.is_empty()
                && c.wbuf.is_empty()
                && !c.proto.busy()
                && now - c.last_active >= self.config.idle_timeout;
            // Output the client does not take is no progress: a connection whose
            // output waits for the idle timeout is ended like an idle one. So are
            // HTTP/2 bodies held for a window the client never opens (PINGs do not
            // count as progress).
            let mut stalled = !c.wbuf.is_empty() && now - c.wrote_at >= self.config.idle_timeout;
            let held = c.proto.held();
            if held == 0 || held != c.held.0 {
                c.held = (held, now);
            } else {
                stalled |= now - c.held.1 >= self.config.idle_timeout;
            }
            if timed_out || idle || stalled {
                let mut bye = Vec::new();
                c.proto.timed_out(timed_out, &mut bye);
                if !bye.is_empty() {
                    let _ = c.stream.write(&bye);
                    let _ = c.stream.flush_pending();
                }
                self.close(ci);
            }
        }
    }
}
