//! The worker loop: one thread, one epoll instance, its own connections.
//!
//! The loop is the same for every load shape. In pool shapes (closed, fixed rate) free
//! connections ask the [`Schedule`] what to send and when it was meant to start; in
//! session shapes (Gatling users, httperf connections) each start is a new session with
//! a connection of its own that makes its calls in bursts, pauses, and closes. Everything
//! else is socket readiness and timers (a timerfd gives wake-ups finer than epoll's
//! millisecond, so a paced run is not late by the loop's own sleep).
//! It is built to make few system calls per request, since on loopback the kernel is
//! where a load generator spends most of its time: sockets are registered once,
//! edge-triggered, for both directions (no `epoll_ctl` per request, unlike wrk's
//! add/remove of write interest); a request is written as soon as its connection is free;
//! a short read means the socket is drained, so no extra read just to see `EAGAIN`;
//! every response already in the buffer is parsed from one read.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mio::net::{TcpStream, UnixStream};
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Registry, Token};

use crate::error::ErrorKind;
use crate::h2::{Event, H2Conn, H2Request, ASSUMED_MAX_STREAMS};
use crate::http1::ResponseParser;
use crate::recorder::{micros, Gauges, RawInterval, Recorder, Timing};
use crate::result::TlsSession;
use crate::schedule::{Next, Schedule};
use crate::spec::{LoadSpec, Session};
use crate::target::Address;
use stampede_tls::rustls::ClientConfig;
use stampede_tls::TlsStream;

const TIMER: Token = Token(usize::MAX);

/// HTTP/2's error code for a stream the server did not process.
const REFUSED_STREAM: u32 = 7;

/// A timerfd: wakes the poll at a precise instant.
struct TimerFd(libc::c_int);

impl TimerFd {
    fn new() -> io::Result<TimerFd> {
        // SAFETY: plain syscalls on a descriptor this struct owns.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // Timers of this thread may fire 1 µs late rather than the default 50 µs.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1u64, 0, 0, 0) };
        Ok(TimerFd(fd))
    }

    /// Fires once after `after` (at least 1 µs).
    fn arm(&self, after: Duration) {
        let after = after.max(Duration::from_micros(1));
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: after.as_secs() as libc::time_t,
                tv_nsec: after.subsec_nanos() as libc::c_long,
            },
        };
        // SAFETY: valid descriptor and struct.
        unsafe { libc::timerfd_settime(self.0, 0, &spec, std::ptr::null_mut()) };
    }

    fn clear(&self) {
        let mut buf = [0u8; 8];
        // SAFETY: reads at most 8 bytes into the buffer.
        unsafe { libc::read(self.0, buf.as_mut_ptr().cast(), 8) };
    }
}

impl Drop for TimerFd {
    fn drop(&mut self) {
        // SAFETY: closes the descriptor this struct owns.
        unsafe { libc::close(self.0) };
    }
}

/// A session in progress on a connection.
#[derive(Clone, Copy)]
struct SessionState {
    calls_left: u32,
    /// Next step of the script (script sessions).
    step: u32,
    started: Instant,
    /// Waiting out the think time until then.
    think_until: Option<Instant>,
}

const READ_BUF: usize = 64 * 1024;
/// Reads of one connection per wake-up before the loop checks the run's end and the
/// request timeouts again: a server that sends without pause (endless chunks, 1xx
/// answers, CONTINUATION frames) cannot hold the worker past them.
const READS_PER_WAKE: usize = 16;
/// Sessions started per wake-up before the loop checks the stop switch and sockets.
const SESSIONS_PER_WAKE: usize = 1024;
/// How often timers (request and connect timeouts, reconnect back-off) are checked.
const TIMER_TICK: Duration = Duration::from_millis(10);

/// Live counters shared with whoever watches the run, and the stop switch.
#[derive(Debug, Default)]
pub struct Control {
    /// Set to stop the run early (Ctrl-C); in-flight requests are abandoned.
    pub stop: AtomicBool,
    /// Responses completed so far.
    pub completed: AtomicU64,
    /// Requests failed so far.
    pub failed: AtomicU64,
    /// Bytes read so far.
    pub bytes_read: AtomicU64,
    /// Whether workers send each finished second to `seconds` (see [`Control::watched`]).
    watched: bool,
    seconds: Mutex<Vec<RawInterval>>,
    /// The last second of each worker that has ended (see [`Control::retire`]).
    retired: Mutex<Vec<u32>>,
}

impl Control {
    /// A control whose run also hands over each finished second, histogram included,
    /// for a live view: read them with [`crate::Live`].
    pub fn watched() -> Control {
        Control {
            watched: true,
            ..Control::default()
        }
    }

    /// Asks every worker to stop.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Called by a worker once a second while watched.
    pub(crate) fn publish_second(&self, raw: RawInterval) {
        self.seconds
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(raw);
    }

    /// The seconds published since the last call.
    pub(crate) fn take_seconds(&self) -> Vec<RawInterval> {
        std::mem::take(&mut *self.seconds.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Called by a watched worker as it ends, after publishing its last second `last`:
    /// later seconds no longer wait for it.
    pub(crate) fn retire(&self, last: u32) {
        self.retired
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(last);
    }

    /// The workers retired since the last call, by their last second.
    pub(crate) fn take_retired(&self) -> Vec<u32> {
        std::mem::take(&mut *self.retired.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Writes `buf[*at..]` until done (`Ok(true)`) or the socket would block
/// (`Ok(false)`), counting the bytes; a zero-length write is an error.
fn write_from(s: &mut Stream, buf: &[u8], at: &mut usize, count: &mut u64) -> io::Result<bool> {
    while *at < buf.len() {
        match s.write(&buf[*at..]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                *at += n;
                *count += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// State shared by the workers of one run (touched rarely, never per byte).
pub(crate) struct Shared {
    pub control: Arc<Control>,
    /// Body length of the first complete response, `u64::MAX` until one arrives.
    pub doc_len: AtomicU64,
    pub server: Mutex<Option<String>>,
    /// What the first finished TLS handshake settled on.
    pub tls: Mutex<Option<TlsSession>>,
}

enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl Stream {
    /// Starts a connect; with `tls`, the handshake starts once the socket connects.
    fn connect(addr: &Address, tls: Option<(&Arc<ClientConfig>, &str)>) -> io::Result<Stream> {
        Ok(match addr {
            Address::Tcp(a) => {
                let s = TcpStream::connect(a[0])?;
                s.set_nodelay(true)?;
                match tls {
                    Some((config, host)) => {
                        Stream::Tls(Box::new(TlsStream::client(s, config.clone(), host)?))
                    }
                    None => Stream::Tcp(s),
                }
            }
            Address::Unix(p) => Stream::Unix(UnixStream::connect(p)?),
        })
    }

    /// The TLS stream, if this is one.
    fn tls(&mut self) -> Option<&mut TlsStream<TcpStream>> {
        match self {
            Stream::Tls(t) => Some(t),
            _ => None,
        }
    }

    /// Ok(true) once connected, Ok(false) while the connect is still under way.
    fn connected(&self) -> io::Result<bool> {
        let (err, peer) = match self {
            Stream::Tcp(s) => (s.take_error()?, s.peer_addr().map(|_| ())),
            Stream::Unix(s) => (s.take_error()?, s.peer_addr().map(|_| ())),
            Stream::Tls(t) => (t.io.take_error()?, t.io.peer_addr().map(|_| ())),
        };
        if let Some(e) = err {
            return Err(e);
        }
        match peer {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn register(&mut self, r: &Registry, t: Token) -> io::Result<()> {
        let i = Interest::READABLE | Interest::WRITABLE;
        match self {
            Stream::Tcp(s) => r.register(s, t, i),
            Stream::Unix(s) => r.register(s, t, i),
            Stream::Tls(s) => r.register(&mut s.io, t, i),
        }
    }

    fn deregister(&mut self, r: &Registry) {
        let _ = match self {
            Stream::Tcp(s) => r.deregister(s),
            Stream::Unix(s) => r.deregister(s),
            Stream::Tls(s) => r.deregister(&mut s.io),
        };
    }

    fn shutdown(&mut self) {
        let _ = match self {
            Stream::Tcp(s) => s.shutdown(Shutdown::Both),
            Stream::Unix(s) => s.shutdown(Shutdown::Both),
            Stream::Tls(s) => {
                s.close_notify();
                s.io.shutdown(Shutdown::Both)
            }
        };
    }
}

impl Read for Stream {
    #[inline]
    fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(b),
            Stream::Unix(s) => s.read(b),
            Stream::Tls(s) => s.read(b),
        }
    }
}

impl Write for Stream {
    #[inline]
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(b),
            Stream::Unix(s) => s.write(b),
            Stream::Tls(s) => s.write(b),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// No socket.
    Closed,
    /// Connect under way.
    Connecting,
    /// Connected.
    Open,
    /// Waiting before reconnecting after a failed connect.
    Backoff(Instant),
}

#[derive(Clone, Copy)]
struct Pending {
    intended: Instant,
    sent: Instant,
    /// HTTP/2: the stream carrying it (0 until its HEADERS are queued).
    stream: u32,
    /// HTTP/2: times the server refused its stream unprocessed (REFUSED_STREAM).
    refused: u8,
}

struct Conn {
    stream: Option<Stream>,
    state: State,
    parser: ResponseParser,
    pending: VecDeque<Pending>,
    /// Where the current batch starts in the worker's request bytes, how much of it is
    /// written, and its length.
    base: usize,
    written: usize,
    to_write: usize,
    write_done: Instant,
    connect_started: Instant,
    /// Connect time to charge to the next completed request (0 once charged).
    connect_us: u64,
    /// When the TLS handshake began, until it ends.
    handshake_started: Option<Instant>,
    /// HTTP/2 on this connection (h2c from the start, or h2 once ALPN chose it).
    h2: Option<Box<H2Conn>>,
    /// How much of `h2.out` is written.
    h2_written: usize,
    /// TLS with HTTP/2 offered: nothing is written until ALPN has decided.
    alpn_pending: bool,
    first_byte: Instant,
    failures: u32,
    /// Requests completed on the current socket.
    served: u64,
    /// Responses completed on this slot over the run.
    completed_total: u64,
    /// No response yet since the last connect (for the time to first byte).
    awaiting_first: bool,
    /// Whether the connection is in the worker's idle list.
    in_idle: bool,
    /// The session running on this slot (session shapes).
    session: Option<SessionState>,
}

impl Conn {
    /// Speak HTTP/2 from now on; the HTTP/1 bytes a batch was set up with are not sent.
    fn start_h2(&mut self) {
        self.h2 = Some(Box::new(H2Conn::new()));
        self.written = 0;
        self.to_write = 0;
    }

    /// Whether an open connection has bytes waiting for the socket: request bytes,
    /// HTTP/2 frames, or TLS records.
    fn has_output(&mut self) -> bool {
        self.state == State::Open
            && (self.written < self.to_write
                || self
                    .h2
                    .as_ref()
                    .is_some_and(|h| self.h2_written < h.out.len())
                || self
                    .stream
                    .as_mut()
                    .and_then(Stream::tls)
                    .is_some_and(|t| t.wants_write()))
    }
}

fn new_conn(head: bool, pipeline: usize, start: Instant) -> Conn {
    Conn {
        stream: None,
        state: State::Closed,
        parser: ResponseParser::new(head),
        pending: VecDeque::with_capacity(pipeline),
        base: 0,
        written: 0,
        to_write: 0,
        write_done: start,
        connect_started: start,
        connect_us: 0,
        handshake_started: None,
        h2: None,
        h2_written: 0,
        alpn_pending: false,
        first_byte: start,
        failures: 0,
        served: 0,
        completed_total: 0,
        awaiting_first: false,
        in_idle: false,
        session: None,
    }
}

/// What a worker hands back.
pub(crate) struct WorkerOutput {
    pub recorder: Recorder,
    pub abandoned: u64,
    /// Arrivals due before the end that were never started.
    pub never_sent: u64,
}

pub(crate) struct Worker<'a> {
    spec: &'a LoadSpec,
    shared: &'a Shared,
    schedule: Box<dyn Schedule + 'a>,
    poll: Poll,
    conns: Vec<Conn>,
    idle: Vec<usize>,
    /// The request bytes: `depth` copies of the request, or every step of the script.
    batch: Vec<u8>,
    req_len: usize,
    /// Script sessions: where each step starts in `batch` (and where the last ends).
    offsets: Vec<usize>,
    rec: Recorder,
    /// HTTP/2: the request (or each script step) translated once.
    h2_requests: Vec<H2Request>,
    h2_events: Vec<Event>,
    /// A connection with at most this many streams open takes new requests.
    h2_refill_at: usize,
    sending_done: bool,
    wake_at: Option<Instant>,
    /// Connections whose socket still had data when their read budget ran out, and
    /// whether the peer had closed: read again after the loop's deadline and timer
    /// checks (epoll is edge-triggered, so no new event would come for them).
    reread: Vec<(usize, bool)>,
    in_flight: u64,
    need_server: bool,
    need_tls: bool,
    end: Option<Instant>,
    /// Session shapes: slots that can take a new session, and sessions in progress.
    sessions: Option<Session>,
    free: Vec<usize>,
    active: usize,
    /// Sockets held, connecting or open.
    sockets: u64,
    timer: TimerFd,
    timer_armed: Option<Instant>,
    // Progress deltas not yet published.
    pub_completed: u64,
    pub_failed: u64,
    pub_bytes: u64,
}

impl<'a> Worker<'a> {
    pub fn new(
        spec: &'a LoadSpec,
        shared: &'a Shared,
        schedule: Box<dyn Schedule + 'a>,
        connections: usize,
        start: Instant,
        start_unix_us: u64,
    ) -> io::Result<Worker<'a>> {
        let head = spec.request.is_head();
        let sessions = spec.shape.has_sessions().then_some(spec.session);
        // Pool shapes own `connections` slots for the whole run; session shapes grow
        // their slots as sessions arrive.
        let pool = if sessions.is_some() { 0 } else { connections };
        let mut conns: Vec<Conn> = (0..pool)
            .map(|_| new_conn(head, spec.pipeline, start))
            .collect();
        for c in &mut conns {
            c.in_idle = true;
        }
        let poll = Poll::new()?;
        let timer = TimerFd::new()?;
        poll.registry()
            .register(&mut SourceFd(&timer.0), TIMER, Interest::READABLE)?;
        Ok(Worker {
            spec,
            shared,
            schedule,
            poll,
            conns,
            idle: (0..pool).rev().collect(),
            batch: if spec.script.is_empty() {
                spec.request
                    .repeated(spec.pipeline.max(spec.session.burst as usize))
            } else {
                spec.script
                    .iter()
                    .flat_map(|s| s.request.bytes.iter().copied())
                    .collect()
            },
            req_len: spec.request.bytes.len(),
            offsets: spec
                .script
                .iter()
                .scan(0, |at, s| {
                    let start = *at;
                    *at += s.request.bytes.len();
                    Some(start)
                })
                .chain(std::iter::once(
                    spec.script.iter().map(|s| s.request.bytes.len()).sum(),
                ))
                .collect(),
            h2_requests: if spec.http2 {
                let sources: Vec<&[u8]> = if spec.script.is_empty() {
                    vec![&spec.request.bytes]
                } else {
                    spec.script.iter().map(|s| &s.request.bytes[..]).collect()
                };
                sources
                    .into_iter()
                    .map(|b| {
                        H2Request::from_http1(b, spec.target.scheme()).expect("checked by validate")
                    })
                    .collect()
            } else {
                Vec::new()
            },
            h2_events: Vec::new(),
            // Closed load refills a connection's streams once half are free, so that
            // requests go out in batches (one write, one server read for many); open
            // load refills at once, so that no arrival waits for a batch.
            h2_refill_at: if matches!(spec.shape, crate::spec::Shape::Closed) {
                spec.pipeline / 2
            } else {
                spec.pipeline - 1
            },
            rec: Recorder::new(
                start,
                start_unix_us,
                spec.record_requests,
                shared.control.watched.then(|| shared.control.clone()),
            ),
            sending_done: false,
            wake_at: None,
            reread: Vec::new(),
            in_flight: 0,
            need_server: true,
            need_tls: true,
            end: spec.duration.map(|d| start + d),
            sessions,
            free: Vec::new(),
            active: 0,
            sockets: 0,
            timer,
            timer_armed: None,
            pub_completed: 0,
            pub_failed: 0,
            pub_bytes: 0,
        })
    }

    pub fn run(mut self) -> io::Result<WorkerOutput> {
        let mut events = Events::with_capacity(1024);
        let mut buf = vec![0u8; READ_BUF];
        let mut next_timer = Instant::now() + TIMER_TICK;
        let control = self.shared.control.clone();
        let abandoned;
        loop {
            let now = Instant::now();
            if control.stop.load(Ordering::Relaxed) || self.end.is_some_and(|e| now >= e) {
                abandoned = self.in_flight;
                break;
            }
            self.rec.roll(now);
            self.gauge();
            if now >= next_timer {
                self.timers(now);
                next_timer = now + TIMER_TICK;
            }
            self.dispatch(now);
            self.publish();
            if self.sending_done && self.in_flight == 0 && self.active == 0 {
                abandoned = 0;
                break;
            }
            let mut deadline = next_timer;
            if let Some(e) = self.end {
                deadline = deadline.min(e);
            }
            let mut timeout = deadline.saturating_duration_since(now);
            if !self.reread.is_empty() {
                timeout = Duration::ZERO;
            }
            if let Some(w) = self.wake_at {
                if w < deadline {
                    // epoll counts in milliseconds; the timerfd wakes us on time.
                    if self.timer_armed != Some(w) {
                        self.timer.arm(w.saturating_duration_since(now));
                        self.timer_armed = Some(w);
                    }
                    timeout = deadline.saturating_duration_since(now);
                }
            }
            match self.poll.poll(&mut events, Some(timeout)) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            for ev in events.iter() {
                if ev.token() == TIMER {
                    self.timer.clear();
                    self.timer_armed = None;
                    continue;
                }
                let ci = ev.token().0;
                let now = Instant::now();
                match self.conns[ci].state {
                    State::Connecting => self.on_connecting(ci, now),
                    State::Open => {
                        let closing = ev.is_read_closed() || ev.is_error();
                        if ev.is_readable() || closing {
                            self.on_readable(ci, &mut buf, now, closing);
                        }
                        if ev.is_writable() && self.conns[ci].has_output() {
                            self.write(ci, now);
                        }
                    }
                    State::Closed | State::Backoff(_) => {}
                }
            }
            if !self.reread.is_empty() {
                self.read_again(&mut buf);
            }
        }
        // Close every socket; requests still in flight are abandoned, not failed.
        for c in &mut self.conns {
            if let Some(mut s) = c.stream.take() {
                s.deregister(self.poll.registry());
            }
        }
        // Every arrival due before the end that was not started is counted, even one due
        // a moment before it: the arrivals then add up exactly (one or two of them stay
        // far below the 0.1 % that marks a run as behind).
        let never_sent = match self.end {
            Some(end) if !self.sending_done => self
                .schedule
                .drain_due(end.min(Instant::now()) - Duration::from_nanos(1)),
            _ => 0,
        };
        self.publish();
        if self.sessions.is_none() {
            for c in &self.conns {
                self.rec
                    .hist
                    .per_connection
                    .0
                    .saturating_record(c.completed_total);
            }
        }
        self.rec.finish();
        Ok(WorkerOutput {
            recorder: self.rec,
            abandoned,
            never_sent,
        })
    }

    /// Notes the current connection, request and session levels.
    #[inline]
    fn gauge(&mut self) {
        self.rec.gauge(Gauges {
            connections: self.sockets,
            in_flight: self.in_flight,
            users: self.active as u64,
        });
    }

    fn publish(&mut self) {
        let c = &self.shared.control;
        if self.pub_completed != self.rec.completed {
            c.completed
                .fetch_add(self.rec.completed - self.pub_completed, Ordering::Relaxed);
            self.pub_completed = self.rec.completed;
        }
        let failed: u64 = self.rec.errors.iter().sum();
        if self.pub_failed != failed {
            c.failed
                .fetch_add(failed - self.pub_failed, Ordering::Relaxed);
            self.pub_failed = failed;
        }
        if self.pub_bytes != self.rec.bytes_read {
            c.bytes_read
                .fetch_add(self.rec.bytes_read - self.pub_bytes, Ordering::Relaxed);
            self.pub_bytes = self.rec.bytes_read;
        }
    }

    /// Starts what the schedule says is due: requests on free connections (pool
    /// shapes) or new sessions (session shapes).
    fn dispatch(&mut self, now: Instant) {
        if self.sending_done {
            return;
        }
        if self.wake_at.is_some_and(|w| now < w) {
            return;
        }
        self.wake_at = None;
        if self.sessions.is_some() {
            return self.dispatch_sessions(now);
        }
        while let Some(&ci) = self.idle.last() {
            let mut claimed = 0;
            // HTTP/1: an idle connection has nothing pending. HTTP/2: refill the streams.
            let room = self.room(ci);
            if room == 0 {
                // HTTP/2 at the server's stream limit: it rejoins when a stream ends.
                self.idle.pop();
                self.conns[ci].in_idle = false;
                continue;
            }
            while claimed < room {
                match self.schedule.next(now, self.active) {
                    Next::Send { intended } => {
                        self.rec.lag(intended, now);
                        self.conns[ci].pending.push_back(Pending {
                            intended,
                            sent: now,
                            stream: 0,
                            refused: 0,
                        });
                        claimed += 1;
                    }
                    Next::Wait(t) => {
                        self.wake_at = Some(t);
                        break;
                    }
                    Next::Done => {
                        self.sending_done = true;
                        break;
                    }
                }
            }
            if claimed == 0 {
                return;
            }
            self.idle.pop();
            self.conns[ci].in_idle = false;
            self.start_batch(ci, claimed, 0, claimed * self.req_len, now);
            if self.sending_done || self.wake_at.is_some() {
                return;
            }
        }
        // Every connection is busy: if an arrival is already due, the pool is the limit.
        if self.schedule.is_due(now) {
            self.rec.starved += 1;
        }
    }

    /// Writes (or connects for) `claimed` requests just queued on `ci`: `len` bytes of
    /// the request bytes from `base`.
    fn start_batch(&mut self, ci: usize, claimed: usize, base: usize, len: usize, now: Instant) {
        self.in_flight += claimed as u64;
        self.rec.started += claimed as u64;
        self.gauge();
        let c = &mut self.conns[ci];
        if c.h2.is_some() {
            self.h2_open_streams(ci);
        } else {
            c.base = base;
            c.written = 0;
            c.to_write = len;
        }
        let c = &mut self.conns[ci];
        match c.state {
            State::Open => self.write(ci, now),
            State::Closed => self.connect(ci, now),
            State::Connecting | State::Backoff(_) => {
                unreachable!("only open or closed connections start a batch")
            }
        }
    }

    fn dispatch_sessions(&mut self, now: Instant) {
        for _ in 0..SESSIONS_PER_WAKE {
            match self.schedule.next(now, self.active) {
                Next::Send { intended } => {
                    self.rec.lag(intended, now);
                    let ci = match self.free.pop() {
                        Some(ci) => ci,
                        None => {
                            self.conns.push(new_conn(
                                self.spec.request.is_head(),
                                self.spec.pipeline,
                                now,
                            ));
                            self.conns.len() - 1
                        }
                    };
                    let calls = self.spec.session.calls;
                    self.conns[ci].session = Some(SessionState {
                        calls_left: calls,
                        step: 0,
                        started: intended,
                        think_until: None,
                    });
                    self.active += 1;
                    self.rec.sessions_started += 1;
                    self.rec.max_concurrent = self.rec.max_concurrent.max(self.active as u64);
                    self.next_burst(ci, intended, now);
                }
                Next::Wait(t) => {
                    self.wake_at = Some(t);
                    return;
                }
                Next::Done => {
                    self.sending_done = true;
                    return;
                }
            }
        }
        // More may be due at once (atOnceUsers): the loop checks the stop switch, the
        // end and the sockets first, then comes straight back.
        self.wake_at = Some(now);
    }

    /// Sends the session's next burst; its requests were meant to start at `intended`.
    fn next_burst(&mut self, ci: usize, intended: Instant, now: Instant) {
        let burst = self.spec.session.burst;
        let c = &mut self.conns[ci];
        let Some(s) = c.session.as_mut() else { return };
        s.think_until = None;
        let k = burst.min(s.calls_left);
        s.calls_left -= k;
        for _ in 0..k {
            c.pending.push_back(Pending {
                intended,
                sent: now,
                stream: 0,
                refused: 0,
            });
        }
        if self.spec.script.is_empty() {
            self.start_batch(ci, k as usize, 0, k as usize * self.req_len, now);
        } else {
            // Scripts go one step at a time (burst 1).
            let step = s.step as usize;
            s.step += 1;
            c.parser
                .set_head_request(self.spec.script[step].request.is_head());
            let (base, end) = (self.offsets[step], self.offsets[step + 1]);
            self.start_batch(ci, 1, base, end - base, now);
        }
    }

    /// The session on `ci` is over: close its connection and free the slot.
    fn end_session(&mut self, ci: usize, now: Instant, ok: bool) {
        let Some(s) = self.conns[ci].session.take() else {
            return;
        };
        self.drop_socket(ci);
        self.conns[ci].state = State::Closed;
        self.rec.session_end(s.started, now, ok);
        self.active -= 1;
        self.free.push(ci);
        // A closed-model schedule may start a replacement at once.
        self.wake_at = None;
    }

    /// All responses of the connection's batch are in.
    fn batch_done(&mut self, ci: usize, now: Instant) {
        let Some(s) = self.conns[ci].session else {
            return self.make_idle(ci);
        };
        if s.calls_left == 0 {
            return self.end_session(ci, now, true);
        }
        let think = match self.spec.script.get((s.step as usize).wrapping_sub(1)) {
            Some(step) => step.pause,
            None => self.spec.session.think,
        };
        if think.is_zero() {
            self.next_burst(ci, now, now);
        } else if let Some(s) = self.conns[ci].session.as_mut() {
            s.think_until = Some(now + think);
        }
    }

    fn connect(&mut self, ci: usize, now: Instant) {
        let c = &mut self.conns[ci];
        c.connect_started = now;
        c.served = 0;
        c.awaiting_first = true;
        c.parser.reset();
        c.handshake_started = None;
        c.h2 = None;
        c.h2_written = 0;
        c.alpn_pending = self.spec.http2 && self.spec.tls.is_some();
        if self.spec.http2 && self.spec.tls.is_none() {
            // h2c with prior knowledge: HTTP/2 from the first byte.
            c.start_h2();
        }
        let tls = self
            .spec
            .tls
            .as_ref()
            .map(|cfg| (cfg, self.spec.target.host.as_str()));
        match Stream::connect(&self.spec.target.address, tls) {
            Ok(mut s) => {
                if let Err(e) = s.register(self.poll.registry(), Token(ci)) {
                    self.connect_failed(ci, now, &e);
                    return;
                }
                c.stream = Some(s);
                c.state = State::Connecting;
                self.rec.connections_opened += 1;
                self.sockets += 1;
            }
            Err(e) => self.connect_failed(ci, now, &e),
        }
    }

    fn on_connecting(&mut self, ci: usize, now: Instant) {
        let c = &mut self.conns[ci];
        let Some(s) = &c.stream else { return };
        match s.connected() {
            Ok(false) => {}
            Ok(true) => {
                c.state = State::Open;
                c.failures = 0;
                c.connect_us = micros(c.connect_started, now);
                if matches!(s, Stream::Tls(_)) {
                    c.handshake_started = Some(now);
                }
                for p in c.pending.iter_mut() {
                    p.sent = now;
                }
                if c.h2.is_some() {
                    self.h2_open_streams(ci);
                }
                self.write(ci, now);
            }
            Err(e) => self.connect_failed(ci, now, &e),
        }
    }

    fn connect_failed(&mut self, ci: usize, now: Instant, e: &io::Error) {
        self.connect_failed_as(ci, now, ErrorKind::from_connect_error(e));
    }

    /// A connection that could not be established (TCP or TLS): its requests fail with
    /// `kind`, and the slot backs off before trying again.
    fn connect_failed_as(&mut self, ci: usize, now: Instant, kind: ErrorKind) {
        self.drop_socket(ci);
        if self.conns[ci].session.is_some() {
            return self.fail_pending(ci, now, kind);
        }
        let c = &mut self.conns[ci];
        c.failures += 1;
        // Back off briefly so a dead server does not turn the worker into a spin loop.
        let backoff = Duration::from_millis((1u64 << c.failures.min(7)).min(100));
        c.state = State::Backoff(now + backoff);
        self.fail_pending(ci, now, kind);
    }

    fn write(&mut self, ci: usize, now: Instant) {
        let c = &mut self.conns[ci];
        let Some(s) = &mut c.stream else { return };
        if c.alpn_pending {
            // Only the handshake goes out until ALPN says which protocol to speak.
            if let Some(t) = s.tls() {
                if let Err(e) = t.flush_pending() {
                    return self.io_failed(ci, now, &e, ErrorKind::from_write_error(&e));
                }
            }
            return;
        }
        let done = match &mut c.h2 {
            Some(h2) => write_from(s, &h2.out, &mut c.h2_written, &mut self.rec.bytes_written)
                .inspect(|&done| {
                    if done {
                        h2.out.clear();
                        c.h2_written = 0;
                    }
                }),
            None => write_from(
                s,
                &self.batch[c.base..c.base + c.to_write],
                &mut c.written,
                &mut self.rec.bytes_written,
            ),
        };
        match done {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => return self.io_failed(ci, now, &e, ErrorKind::from_write_error(&e)),
        }
        if let Some(t) = s.tls() {
            // Ciphertext the socket did not take goes out on the next writable edge.
            if let Err(e) = t.flush_pending() {
                return self.io_failed(ci, now, &e, ErrorKind::from_write_error(&e));
            }
        }
        c.write_done = now;
    }

    /// A socket error: during a TLS handshake it is a failed connect (counted by TLS
    /// kind, with back-off); afterwards the connection closes and its requests fail
    /// with `kind`, or as a certificate failure when the server refused ours after
    /// its side of the handshake (TLS 1.3 checks client certificates last).
    fn io_failed(&mut self, ci: usize, now: Instant, e: &io::Error, kind: ErrorKind) {
        if self.conns[ci].handshake_started.is_some() {
            return self.connect_failed_as(ci, now, ErrorKind::from_handshake_error(e));
        }
        let kind = match stampede_tls::classify(e) {
            Some(stampede_tls::Failure::Certificate) => ErrorKind::TlsCertificate,
            _ => kind,
        };
        self.fail_and_close(ci, now, kind)
    }

    /// Records the handshake's duration once it is over.
    #[inline]
    fn check_handshake(&mut self, ci: usize, now: Instant) {
        let c = &mut self.conns[ci];
        let Some(started) = c.handshake_started else {
            return;
        };
        let Some(t) = c.stream.as_mut().and_then(Stream::tls) else {
            return;
        };
        if !t.is_handshaking() {
            c.handshake_started = None;
            let resumed = matches!(
                t.conn.handshake_kind(),
                Some(stampede_tls::rustls::HandshakeKind::Resumed)
            );
            if self.need_tls {
                self.need_tls = false;
                let info = TlsSession {
                    version: t.conn.protocol_version().map(|v| format!("{v:?}")),
                    cipher: t
                        .conn
                        .negotiated_cipher_suite()
                        .map(|s| format!("{:?}", s.suite())),
                    alpn: t.alpn().map(|a| String::from_utf8_lossy(a).into_owned()),
                };
                let mut g = self.shared.tls.lock().unwrap_or_else(|e| e.into_inner());
                g.get_or_insert(info);
            }
            let h2 = t.alpn() == Some(b"h2");
            self.rec.handshake(micros(started, now), resumed);
            if c.alpn_pending {
                // ALPN decided: HTTP/2, or HTTP/1.1 as the server prefers (fallback).
                c.alpn_pending = false;
                if h2 {
                    c.start_h2();
                    self.h2_open_streams(ci);
                } else {
                    self.rec.h1_fallback += 1;
                }
                self.write(ci, now);
            }
        }
    }

    /// Requests the connection can take now: HTTP/1 an idle connection takes a
    /// pipeline's worth; HTTP/2 up to `--streams`, within the server's
    /// SETTINGS_MAX_CONCURRENT_STREAMS (100 assumed until it says, as RFC 9113 advises).
    fn room(&self, ci: usize) -> usize {
        let c = &self.conns[ci];
        let limit = if self.spec.http2 {
            let peer =
                c.h2.as_ref()
                    .map_or(ASSUMED_MAX_STREAMS, |h| h.stream_limit());
            self.spec.pipeline.min(peer)
        } else {
            self.spec.pipeline
        };
        limit.saturating_sub(c.pending.len())
    }

    /// Which translated request the connection is sending: the script step its
    /// session is on, or the run's one request.
    fn h2_request_index(&self, ci: usize) -> usize {
        match &self.conns[ci].session {
            Some(s) if !self.spec.script.is_empty() => (s.step as usize).saturating_sub(1),
            _ => 0,
        }
    }

    /// Queues HEADERS (and body) for the connection's requests that have no stream
    /// yet, as far as the server's stream limit allows; the rest wait for streams to
    /// end (their latency counts the wait: it is the client's queue).
    fn h2_open_streams(&mut self, ci: usize) {
        let req = &self.h2_requests[self.h2_request_index(ci)];
        let c = &mut self.conns[ci];
        let Some(h2) = c.h2.as_mut().filter(|h| !h.goaway) else {
            return;
        };
        let repeat = self.h2_requests.len() == 1;
        let free = h2.stream_limit().saturating_sub(h2.open_streams());
        for p in c.pending.iter_mut().filter(|p| p.stream == 0).take(free) {
            p.stream = h2.request(req, repeat);
        }
    }

    /// Reads the connections whose read budget ran out last time (rare: out of line, so
    /// the loop's own code stays small).
    #[inline(never)]
    fn read_again(&mut self, buf: &mut [u8]) {
        for (ci, closing) in std::mem::take(&mut self.reread) {
            if self.conns[ci].state == State::Open {
                self.on_readable(ci, buf, Instant::now(), closing);
            }
        }
    }

    /// Reads until the socket is drained, or up to [`READS_PER_WAKE`] reads, after
    /// which the connection is queued to be read again. `closing` says the peer's FIN
    /// or RST arrived with this wake-up: then the end of stream must be read too, since
    /// no further edge will announce it.
    #[inline]
    fn on_readable(&mut self, ci: usize, buf: &mut [u8], now: Instant, closing: bool) {
        for _ in 0..READS_PER_WAKE {
            let c = &mut self.conns[ci];
            let Some(s) = &mut c.stream else { return };
            let r = s.read(buf);
            self.check_handshake(ci, now);
            match r {
                Ok(0) if self.conns[ci].handshake_started.is_some() => {
                    // Closed during the handshake: not a TLS server, or it refused us.
                    return self.connect_failed_as(ci, now, ErrorKind::TlsHandshake);
                }
                Ok(0) => return self.on_eof(ci, now),
                Ok(n) => {
                    self.rec.read_bytes(now, n);
                    if !self.consume(ci, &buf[..n], now) {
                        return;
                    }
                    if n < buf.len() && !closing {
                        // A short read drained the socket (epoll(7)); no need to see EAGAIN.
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.io_failed(ci, now, &e, ErrorKind::from_read_error(&e)),
            }
        }
        // Budget spent with data still coming: read on after the loop's own checks.
        self.reread.push((ci, closing));
    }

    /// Parses what was read. Returns false when the connection was closed.
    fn consume(&mut self, ci: usize, mut data: &[u8], now: Instant) -> bool {
        if self.conns[ci].h2.is_some() {
            return self.h2_consume(ci, data, now);
        }
        // Only the requests sent before these bytes arrived can be answered in them: a
        // request sent while they are parsed (after a response completed) cannot.
        let mut answerable = self.conns[ci].pending.len();
        while !data.is_empty() {
            let c = &mut self.conns[ci];
            if c.pending.is_empty() || answerable == 0 {
                // Bytes nobody asked for: the server is broken; drop the connection.
                self.fail_and_close(ci, now, ErrorKind::Protocol);
                return false;
            }
            if c.parser.at_response_start() {
                c.first_byte = now;
                if self.need_server {
                    c.parser.capture_server();
                }
            }
            match c.parser.feed(data) {
                Ok((n, done)) => {
                    data = &data[n..];
                    if let Some(done) = done {
                        answerable -= 1;
                        if answerable == 0 && !data.is_empty() {
                            // More follows the answer to the last request sent: a second
                            // response to one request. Neither is counted as an answer.
                            self.fail_and_close(ci, now, ErrorKind::Protocol);
                            return false;
                        }
                        if !self.complete(ci, done, now) {
                            return false;
                        }
                    }
                }
                Err(_) => {
                    self.fail_and_close(ci, now, ErrorKind::Protocol);
                    return false;
                }
            }
        }
        true
    }

    /// Records a completed response. Returns false when the connection was closed.
    fn complete(&mut self, ci: usize, done: crate::http1::Completed, now: Instant) -> bool {
        let c = &mut self.conns[ci];
        let p = c.pending.pop_front().expect("a pending request");
        self.in_flight -= 1;
        c.served += 1;
        if self.need_server {
            if let Some(server) = c.parser.take_server() {
                self.need_server = false;
                let mut g = self.shared.server.lock().unwrap_or_else(|e| e.into_inner());
                g.get_or_insert(server);
            }
        }
        let timing = Timing {
            total_us: micros(p.intended, now),
            uncorrected_us: micros(p.sent, now),
            connect_us: std::mem::take(&mut c.connect_us),
            waiting_us: micros(c.write_done.max(p.sent), c.first_byte),
        };
        let first = c.first_byte;
        self.first_response(ci, first);
        self.rec
            .complete(now, p.intended, done.status, done.body_bytes, timing);
        self.check_length(done.body_bytes);
        let c = &mut self.conns[ci];
        let reuse = done.keep_alive && self.spec.keepalive;
        if reuse {
            self.rec.keepalive += 1;
        }
        if !reuse {
            if !c.pending.is_empty() {
                // Requests pipelined behind a response that closes the connection are lost.
                self.fail_and_close(ci, now, ErrorKind::Closed);
                return false;
            }
            self.drop_socket(ci);
            self.batch_done(ci, now);
            return false;
        }
        if c.pending.is_empty() {
            self.batch_done(ci, now);
        }
        true
    }

    /// HTTP/2: hands what was read to the connection and settles its streams. Returns
    /// false when the connection was closed.
    fn h2_consume(&mut self, ci: usize, data: &[u8], now: Instant) -> bool {
        let mut events = std::mem::take(&mut self.h2_events);
        events.clear();
        let body = &self.h2_requests[self.h2_request_index(ci)].body;
        let h2 = self.conns[ci].h2.as_mut().expect("an HTTP/2 connection");
        let fed = h2.feed(data, body, &mut events);
        self.rec.headers_compressed += std::mem::take(&mut h2.headers_compressed);
        self.rec.headers_decoded += std::mem::take(&mut h2.headers_decoded);
        if fed.is_err() {
            self.h2_events = events;
            self.fail_and_close(ci, now, ErrorKind::Protocol);
            return false;
        }
        for ev in events.iter() {
            match *ev {
                Event::Response {
                    stream,
                    status,
                    body,
                } => self.h2_complete(ci, stream, status, body, now),
                Event::Malformed { stream } => {
                    self.h2_fail(ci, now, ErrorKind::Protocol, |s| s == stream)
                }
                Event::Reset { stream, code } => {
                    if code == REFUSED_STREAM && self.h2_retry(ci, stream) {
                        continue;
                    }
                    self.h2_fail(ci, now, ErrorKind::H2StreamReset, |s| s == stream)
                }
                // Streams above last_stream were never processed.
                Event::GoAway { last_stream, .. } => {
                    self.h2_fail(ci, now, ErrorKind::H2GoAway, |s| s > last_stream)
                }
            }
        }
        self.h2_events = events;
        // Streams that ended make room for requests waiting on the server's limit.
        self.h2_open_streams(ci);
        let c = &mut self.conns[ci];
        let goaway = c.h2.as_ref().is_some_and(|h| h.goaway);
        if goaway && c.pending.iter().all(|p| p.stream == 0) {
            // The server is going away: a new connection replaces this one and takes
            // the requests that were still waiting for a stream.
            self.drop_socket(ci);
            if self.conns[ci].pending.is_empty() {
                self.batch_done(ci, now);
            } else {
                self.connect(ci, now);
            }
            return false;
        }
        if c.h2.as_ref().is_some_and(|h| !h.out.is_empty()) {
            self.write(ci, now);
        }
        let c = &self.conns[ci];
        if c.state != State::Open {
            return false;
        }
        if c.pending.is_empty() {
            self.batch_done(ci, now);
        } else if c.session.is_none()
            && !goaway
            && c.pending.len() <= self.h2_refill_at
            && self.room(ci) > 0
        {
            // Room for more streams: the connection can take new requests now.
            self.make_idle(ci);
        }
        true
    }

    fn h2_complete(&mut self, ci: usize, stream: u32, status: u16, body: u64, now: Instant) {
        let c = &mut self.conns[ci];
        let Some(i) = c.pending.iter().position(|p| p.stream == stream) else {
            return;
        };
        let p = c.pending.remove(i).expect("present");
        self.in_flight -= 1;
        c.served += 1;
        if c.served > 1 {
            self.rec.keepalive += 1;
        }
        let timing = Timing {
            total_us: micros(p.intended, now),
            uncorrected_us: micros(p.sent, now),
            connect_us: std::mem::take(&mut c.connect_us),
            waiting_us: micros(p.sent, now),
        };
        self.first_response(ci, now);
        self.rec.complete(now, p.intended, status, body, timing);
        self.check_length(body);
    }

    /// Counts a response on the slot; the first since a connect gives the connection's
    /// time to first byte (`first_byte`: when its first byte arrived).
    fn first_response(&mut self, ci: usize, first_byte: Instant) {
        let c = &mut self.conns[ci];
        c.completed_total += 1;
        if c.awaiting_first {
            c.awaiting_first = false;
            self.rec
                .hist
                .first_byte
                .0
                .saturating_record(micros(c.connect_started, first_byte));
        }
    }

    /// ab's `Length` check: a body whose length differs from the first response's.
    fn check_length(&mut self, body: u64) {
        if !self.spec.check_length {
            return;
        }
        let first = self.shared.doc_len.load(Ordering::Relaxed);
        if first == u64::MAX {
            let _ = self.shared.doc_len.compare_exchange(
                u64::MAX,
                body,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        } else if first != body {
            self.rec.length_mismatch += 1;
        }
    }

    /// A stream the server refused unprocessed (RFC 9113 §8.7: safe to retry) goes
    /// back to wait for a stream, up to three times. Returns false when it has had
    /// its tries and must fail.
    fn h2_retry(&mut self, ci: usize, stream: u32) -> bool {
        let Some(p) = self.conns[ci]
            .pending
            .iter_mut()
            .find(|p| p.stream == stream)
        else {
            return true;
        };
        if p.refused >= 3 {
            return false;
        }
        p.refused += 1;
        p.stream = 0;
        true
    }

    /// Fails the connection's requests whose stream `which` picks.
    fn h2_fail(&mut self, ci: usize, now: Instant, kind: ErrorKind, which: impl Fn(u32) -> bool) {
        let c = &mut self.conns[ci];
        let mut i = 0;
        while i < c.pending.len() {
            if c.pending[i].stream != 0 && which(c.pending[i].stream) {
                let p = c.pending.remove(i).expect("present");
                self.in_flight -= 1;
                self.rec.fail(now, kind, p.intended);
            } else {
                i += 1;
            }
        }
    }

    fn make_idle(&mut self, ci: usize) {
        let c = &mut self.conns[ci];
        if c.session.is_some() {
            return;
        }
        if !c.in_idle {
            c.in_idle = true;
            self.idle.push(ci);
        }
    }

    fn on_eof(&mut self, ci: usize, now: Instant) {
        if self.conns[ci].h2.is_some() {
            return self.fail_and_close(ci, now, ErrorKind::Closed);
        }
        let c = &mut self.conns[ci];
        if let Some(done) = c.parser.eof() {
            if !c.pending.is_empty() {
                // A close-delimited body ends with the connection.
                if self.complete(ci, done, now) {
                    self.drop_socket(ci);
                    self.batch_done(ci, now);
                }
                return;
            }
        }
        self.fail_and_close(ci, now, ErrorKind::Closed);
    }

    fn fail_pending(&mut self, ci: usize, now: Instant, kind: ErrorKind) {
        while let Some(p) = self.conns[ci].pending.pop_front() {
            self.in_flight -= 1;
            self.rec.fail(now, kind, p.intended);
        }
        if self.conns[ci].session.is_some() {
            return self.end_session(ci, now, false);
        }
        if !matches!(self.conns[ci].state, State::Backoff(_)) {
            self.conns[ci].state = State::Closed;
            self.make_idle(ci);
        }
    }

    fn drop_socket(&mut self, ci: usize) {
        let c = &mut self.conns[ci];
        if let Some(mut s) = c.stream.take() {
            s.deregister(self.poll.registry());
            s.shutdown();
            self.sockets -= 1;
        }
        c.parser.reset();
        c.written = 0;
        c.to_write = 0;
        c.h2 = None;
        c.h2_written = 0;
        for p in c.pending.iter_mut() {
            p.stream = 0;
        }
        c.state = State::Closed;
    }

    /// Closes the connection; anything still pending fails with `kind`.
    fn fail_and_close(&mut self, ci: usize, now: Instant, kind: ErrorKind) {
        let was_idle = self.conns[ci].pending.is_empty();
        self.drop_socket(ci);
        if !was_idle {
            self.fail_pending(ci, now, kind);
        } else if self.conns[ci].session.is_some() {
            // A session between bursts whose connection went away: the next burst
            // reconnects.
        } else {
            self.make_idle(ci);
        }
    }

    fn timers(&mut self, now: Instant) {
        let timeout = self.spec.timeout;
        let connect_timeout = self.spec.connect_timeout;
        for ci in 0..self.conns.len() {
            let c = &self.conns[ci];
            match c.state {
                State::Backoff(t) if now >= t => {
                    self.conns[ci].state = State::Closed;
                    self.make_idle(ci);
                }
                State::Connecting if now - c.connect_started >= connect_timeout => {
                    self.drop_socket(ci);
                    self.conns[ci].state = State::Backoff(now);
                    self.fail_pending(ci, now, ErrorKind::ConnectTimeout);
                }
                State::Open => {
                    if let (Some(t), Some(p)) = (timeout, c.pending.front()) {
                        if now - p.sent >= t {
                            self.fail_and_close(ci, now, ErrorKind::Timeout);
                        }
                    }
                }
                _ => {}
            }
            if let Some(SessionState {
                think_until: Some(t),
                ..
            }) = self.conns[ci].session
            {
                if now >= t {
                    self.next_burst(ci, t, now);
                }
            }
        }
    }
}
