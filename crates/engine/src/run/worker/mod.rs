//! The worker loop: one thread, one epoll instance, its own connections.
//!
//! The loop is the same for every load shape. In pool shapes (closed, fixed rate) free
//! connections ask the [`Schedule`] what to send and when it was meant to start; in
//! session shapes (Gatling users, httperf connections) each start is a new session with
//! a connection of its own that makes its calls in bursts, pauses, and closes. Everything
//! else is socket readiness and timers: the wait for readiness takes a timeout in
//! nanoseconds (`epoll_pwait2`; a timerfd where the kernel lacks it), so a paced run is
//! not late by the loop's own sleep. Open shapes wake as seldom as their precision
//! allows: starts due within the schedule's horizon go out together, and over plain TCP
//! the loop naps to the next start instead of waking for each response, reading what
//! came meanwhile by the kernel's arrival stamps.
//! It is built to make few system calls per request, since on loopback the kernel is
//! where a load generator spends most of its time: sockets are registered once,
//! edge-triggered, for both directions (no `epoll_ctl` per request, unlike wrk's
//! add/remove of write interest); a request is written as soon as its connection is free;
//! a short read means the socket is drained, so no extra read just to see `EAGAIN`;
//! every response already in the buffer is parsed from one read.
//!
//! Each connection holds one protocol value ([`Proto`]: HTTP/1.1 or HTTP/2, both
//! sans-IO); the worker moves bytes between it and the socket and settles the events
//! it reports the same way for both. This module holds the loop and the scheduling;
//! `connect` the connections' life (connect, TLS, write, close); `read` their input;
//! `wait` the choice, between passes, of how long to wait and on what.

mod connect;
mod read;
mod redirect;
mod wait;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Interest, Poll, Token};

use crate::error::ErrorKind;
use crate::measure::recorder::{Gauges, Recorder};
use crate::measure::result::TlsSession;
use crate::proto::h2::{H2Request, ASSUMED_MAX_STREAMS};
use crate::proto::{Event, Proto};
use crate::run::control::Control;
use crate::run::hooks::{Flow, ThreadHooks};
use crate::run::io::{Stream, TimerFd, Waiter};
use crate::run::schedule::{Next, Schedule};
use crate::spec::target::Address;
use crate::spec::{LoadSpec, Session};
use wait::{next_wait, Wait, WaitState};

const TIMER: Token = Token(usize::MAX);

/// A session in progress on a connection.
#[derive(Clone)]
struct SessionState {
    /// Calls not yet sent (retries aside).
    calls_left: u32,
    /// Next step of the script (script sessions), and where this session's steps end.
    step: u32,
    end: u32,
    /// Calls of the current burst not yet sent (a burst goes out in groups of at most
    /// `max_piped`).
    burst_left: u32,
    started: Instant,
    /// Waiting out the think time until then.
    think_until: Option<Instant>,
    /// Calls answered with the failure status, to send again once the connection's
    /// batch is answered: script steps (0 for sessions without a script).
    retry: Vec<u32>,
    /// The step the batch in flight sends again, when it is a retry.
    resending: Option<u32>,
    /// The cookie a reply set (`name=value`), sent with the session's later requests
    /// (session cookies; empty: none yet).
    cookie: Vec<u8>,
    /// Timed steps: when the next step is due, once it is on the worker's `delayed`
    /// heap (so that it goes there once).
    queued: Option<Instant>,
    /// The slot's responses before this session began (the session's own are those
    /// after).
    answered_before: u64,
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

/// The wall clock, since the epoch (what the kernel's arrival stamps count in).
fn wall_clock() -> Duration {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
}

/// The monotonic and wall clocks read together, to place the kernel's arrival stamps
/// (wall clock) on the monotonic clock. The wall clock is read between two monotonic
/// readings, and the later one is kept: the instant the wall reading belongs to lies
/// between them, so a stamp placed by the later one is never placed early, and a
/// response is never timed shorter than it took (however long the thread was held
/// between the readings). Of three tries, the one with the tightest pair is taken.
fn clock_pair(mono: impl Fn() -> Instant, wall: impl Fn() -> Duration) -> (Instant, Duration) {
    let mut best: Option<(Duration, Instant, Duration)> = None;
    for _ in 0..3 {
        let before = mono();
        let w = wall();
        let after = mono();
        let width = after - before;
        if best.is_none_or(|b| width < b.0) {
            best = Some((width, after, w));
        }
        if width < Duration::from_micros(2) {
            break;
        }
    }
    let (_, m, w) = best.expect("three tries");
    (m, w)
}

/// State shared by the workers of one run (touched rarely, never per byte).
pub(crate) struct Shared {
    pub control: Arc<Control>,
    /// Body length of the first complete response, `u64::MAX` until one arrives.
    pub doc_len: AtomicU64,
    /// Calls that took a request by the run's walk (see [`crate::spec::Walk`]).
    pub calls: AtomicU64,
    pub server: Mutex<Option<String>>,
    /// What the first finished TLS handshake settled on.
    pub tls: Mutex<Option<TlsSession>>,
    /// Each worker thread's CPU accounting, for the limit verdict.
    pub load: crate::verdict::limit::Sampler,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// No socket.
    Closed,
    /// Connect under way.
    Connecting,
    /// Connected to the proxy; CONNECT's first `.0` bytes written, its answer awaited.
    Tunnel(usize),
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
    /// Redirects followed for it so far (see [`Worker::follow`]).
    hops: u8,
}

impl Pending {
    /// A request meant to start at `intended`, sent at `sent`, without a stream yet.
    #[inline]
    fn new(intended: Instant, sent: Instant) -> Pending {
        Pending {
            intended,
            sent,
            stream: 0,
            refused: 0,
            hops: 0,
        }
    }
}

struct Conn {
    stream: Option<Stream>,
    state: State,
    /// HTTP/1.1 or HTTP/2: what to write, and what the bytes read mean.
    proto: Proto,
    pending: VecDeque<Pending>,
    /// When the last write of requests finished.
    write_done: Instant,
    connect_started: Instant,
    /// Connect time to charge to the next completed request (0 once charged).
    connect_us: u64,
    /// When the TLS handshake began, until it ends.
    handshake_started: Option<Instant>,
    /// TLS with HTTP/2 offered: nothing is written until ALPN has decided.
    alpn_pending: bool,
    /// When the response being read began, if the protocol says (HTTP/1).
    first_byte: Option<Instant>,
    failures: u32,
    /// Responses completed on this slot over the run.
    completed_total: u64,
    /// No response yet since the last connect (for the time to first byte).
    awaiting_first: bool,
    /// Whether the connection is in the worker's idle list.
    in_idle: bool,
    /// The session running on this slot (session shapes).
    session: Option<SessionState>,
    /// The batch's request bytes when a script builds them or several requests take
    /// turns (empty otherwise: the worker's prepared copy is sent).
    own: Vec<u8>,
    /// Several requests in turn: the one this connection sends next.
    turn: usize,
    /// The proxy's answer to CONNECT, read so far (empty but while tunnelling).
    reply: Vec<u8>,
}

impl Conn {
    fn new(proto: Proto, pipeline: usize, start: Instant) -> Conn {
        Conn {
            stream: None,
            state: State::Closed,
            proto,
            pending: VecDeque::with_capacity(pipeline),
            write_done: start,
            connect_started: start,
            connect_us: 0,
            handshake_started: None,
            alpn_pending: false,
            first_byte: None,
            failures: 0,
            completed_total: 0,
            awaiting_first: false,
            in_idle: false,
            session: None,
            own: Vec::new(),
            turn: 0,
            reply: Vec::new(),
        }
    }

    /// Whether an open connection has bytes waiting for the socket: request bytes,
    /// HTTP/2 frames, or TLS records.
    fn has_output(&mut self) -> bool {
        self.state == State::Open
            && (self.proto.has_output()
                || self
                    .stream
                    .as_mut()
                    .and_then(Stream::tls)
                    .is_some_and(|t| t.wants_write()))
    }
}

/// The protocol a connection of this run starts with: HTTP/2 from the first byte for
/// h2c; HTTP/1.1 otherwise, also over TLS while ALPN has not chosen.
fn fresh_proto(spec: &LoadSpec) -> Proto {
    Proto::new(
        (spec.http2 && spec.tls.is_none()).then_some(spec.h2),
        spec.request.is_head(),
        spec.keepalive,
    )
}

/// Where each session's steps begin and end in a script (a step marked
/// `new_session` begins another).
fn script_ranges(script: &[crate::spec::Step]) -> Vec<(u32, u32)> {
    let mut ranges: Vec<(u32, u32)> = Vec::new();
    for (i, st) in script.iter().enumerate() {
        let i = i as u32;
        match ranges.last_mut() {
            Some(r) if !st.new_session => r.1 = i + 1,
            _ => ranges.push((i, i + 1)),
        }
    }
    ranges
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
    /// HTTP/2: the request (or each script step, or each request of the variety)
    /// translated once.
    h2_requests: Vec<H2Request>,
    /// Events of the connection being read, reused.
    events: Vec<Event>,
    /// A connection with at most this many streams open takes new requests.
    h2_refill_at: usize,
    sending_done: bool,
    /// When the schedule's next start is due: the loop wakes then, if nothing wakes
    /// it sooner.
    wake_at: Option<Instant>,
    /// How early a start may go out when the loop is awake anyway (see
    /// [`Schedule::horizon`]).
    horizon: Duration,
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
    /// Whether the loop may nap until the next start is due, leaving responses that
    /// arrive meanwhile to be read when it wakes (see [`wait::NAP_LIMIT`]): open shapes over
    /// plain TCP, whose sockets stamp each segment's arrival.
    nap: bool,
    /// A read of this pass left a response half received: the loop waits on the
    /// sockets rather than napping, so a long body is not held up by the nap.
    streaming: bool,
    /// A nap just ended: the next wait takes what came meanwhile without sleeping, and
    /// its reads take the kernel's arrival stamps (bytes read after a wake-up for them
    /// are timed as read).
    stamped: bool,
    /// The monotonic and wall clocks read together at the start of the pass, to place
    /// a segment's arrival stamp on the monotonic clock.
    clock: (Instant, Duration),
    /// When the bytes being settled arrived, if the kernel stamped them.
    arrived: Option<Instant>,
    /// Sockets held, connecting or open.
    sockets: u64,
    timer: TimerFd,
    timer_armed: Option<Instant>,
    /// The thread's script, if the run has one (see [`crate::hooks`]).
    hooks: Option<Box<dyn ThreadHooks>>,
    /// Each batch's requests are built into [`Conn::own`]: by the script, or from the
    /// run's requests in turn.
    dynamic: bool,
    /// Every response is kept and read: by the script, or for session cookies.
    respond: bool,
    /// Sessions carry the cookie their replies set.
    cookies: bool,
    /// Redirects followed per request at most (0: none; see [`Worker::follow`]).
    redirects: u32,
    /// The script sees every batch of requests written.
    watch_sends: bool,
    /// Only a pipelined batch's last response is timed (wrk2's `-B`).
    batch_latency: bool,
    /// Responses take the slower path of [`Worker::record_unusual`]: batch latency or
    /// a failure status.
    unusual: bool,
    /// The script delays each batch (see `delayed`).
    delays: bool,
    /// The script delays each batch: connections waiting out their delay, soonest
    /// first; with timed steps, sessions waiting for their next step.
    delayed: BinaryHeap<Reverse<(Instant, usize)>>,
    /// Session steps are sent at their offsets (see [`crate::spec::Step::at`]).
    timed: bool,
    /// The script stopped this thread.
    stopped: bool,
    /// Where this thread connects: the proxy's address, or the one the script chose;
    /// `None`: the target's.
    address: Option<Address>,
    /// The CONNECT request that opens each connection's tunnel (https via a proxy).
    tunnel: Option<Vec<u8>>,
    /// Session scripts: where each session's steps begin and end in `spec.script`,
    /// and the one this worker's next session takes.
    scripts: Vec<(u32, u32)>,
    next_script: usize,
    /// Sessions of the run between two of this worker's: each takes the script of its
    /// place in the run's sequence of arrivals.
    script_stride: usize,
    /// The status that fails a session (`session.fail_status`), 0 when none.
    fail_status: u16,
    /// Requests given up with the session a failure status ended (pipelined behind
    /// it): counted as abandoned, as at the run's end.
    given_up: u64,
    // Progress deltas not yet published.
    pub_completed: u64,
    pub_failed: u64,
    pub_bytes: u64,
}

impl<'a> Worker<'a> {
    /// Worker `index` of the run (which picks its script's thread hooks), taking
    /// arrivals `lane.0`, `lane.0 + lane.1`, … of the run's sequence.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        spec: &'a LoadSpec,
        shared: &'a Shared,
        schedule: Box<dyn Schedule + 'a>,
        index: usize,
        lane: (usize, usize),
        connections: usize,
        start: Instant,
        start_unix_us: u64,
    ) -> io::Result<Worker<'a>> {
        let sessions = spec.shape.has_sessions().then_some(spec.session);
        // Pool shapes own `connections` slots for the whole run; session shapes grow
        // their slots as sessions arrive.
        let pool = if sessions.is_some() { 0 } else { connections };
        let mut conns: Vec<Conn> = (0..pool)
            .map(|_| Conn::new(fresh_proto(spec), spec.pipeline, start))
            .collect();
        let hooks = spec.hooks.as_ref().map(|h| h.0.thread(index));
        let cookies = spec.session.cookies && spec.shape.has_sessions();
        let respond =
            cookies || spec.redirects > 0 || hooks.as_ref().is_some_and(|h| h.wants_responses());
        for c in &mut conns {
            c.in_idle = true;
            if let (true, Some(h1)) = (respond, c.proto.h1()) {
                h1.keep_responses();
            }
        }
        let scripts = script_ranges(&spec.script);
        let horizon = schedule.horizon();
        let poll = Poll::new()?;
        let timer = TimerFd::new()?;
        poll.registry()
            .register(&mut SourceFd(&timer.raw()), TIMER, Interest::READABLE)?;
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
                let sources: Vec<&[u8]> = if !spec.variety.is_empty() {
                    spec.variety.iter().map(|r| &r.bytes[..]).collect()
                } else if spec.script.is_empty() {
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
            events: Vec::new(),
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
            horizon,
            reread: Vec::new(),
            in_flight: 0,
            need_server: true,
            need_tls: true,
            end: spec.duration.map(|d| start + d),
            sessions,
            free: Vec::new(),
            active: 0,
            // Pool shapes only: a session's next call, a redirect's next hop or a
            // script's follow-up waits for the response and would wait out the nap.
            nap: matches!(spec.shape, crate::spec::Shape::Rate { .. })
                && spec.redirects == 0
                && !hooks
                    .as_ref()
                    .is_some_and(|h| h.wants_responses() || h.builds_requests()),
            streaming: false,
            stamped: false,
            clock: (start, Duration::ZERO),
            arrived: None,
            sockets: 0,
            timer,
            timer_armed: None,
            dynamic: !spec.variety.is_empty()
                || cookies
                || spec.redirects > 0
                || hooks.as_ref().is_some_and(|h| h.builds_requests()),
            respond,
            cookies,
            redirects: spec.redirects,
            watch_sends: hooks.as_ref().is_some_and(|h| h.watches_sends()),
            batch_latency: spec.batch_latency,
            unusual: spec.batch_latency
                || (spec.session.fail_status.is_some() && spec.shape.has_sessions()),
            delays: hooks.as_ref().is_some_and(|h| h.has_delay()),
            delayed: BinaryHeap::new(),
            timed: spec.script.first().is_some_and(|s| s.at.is_some()),
            stopped: false,
            address: match &spec.proxy {
                Some(p) => Some(Address::Tcp(p.address.clone())),
                None => (hooks.as_ref())
                    .and_then(|h| h.address())
                    .map(|a| Address::Tcp(vec![a])),
            },
            tunnel: (spec.proxy.as_ref())
                .filter(|_| spec.target.tls)
                .map(|p| p.connect_request(&spec.target)),
            hooks,
            next_script: lane.0 % scripts.len().max(1),
            script_stride: lane.1,
            scripts,
            fail_status: spec
                .session
                .fail_status
                .filter(|_| spec.shape.has_sessions())
                .unwrap_or(0),
            given_up: 0,
            pub_completed: 0,
            pub_failed: 0,
            pub_bytes: 0,
        })
    }

    /// Long on purpose: the event loop itself, kept one frame on the path of every request.
    pub fn run(mut self) -> io::Result<WorkerOutput> {
        let slot = self.shared.load.register();
        let mut waiter = Waiter::new(1024);
        let mut buf = vec![0u8; READ_BUF];
        let mut next_timer = Instant::now() + TIMER_TICK;
        let control = self.shared.control.clone();
        let abandoned;
        if self.delays {
            // wrk waits out a delay before a connection's first request too.
            let now = Instant::now();
            for ci in std::mem::take(&mut self.idle) {
                self.conns[ci].in_idle = false;
                self.delay(ci, now);
            }
        }
        loop {
            let now = Instant::now();
            if self.stopped
                || control.stop.load(Ordering::Relaxed)
                || self.end.is_some_and(|e| now >= e)
            {
                abandoned = self.in_flight + self.given_up;
                break;
            }
            self.rec.roll(now);
            self.gauge();
            if now >= next_timer {
                self.timers(now);
                next_timer = now + TIMER_TICK;
            }
            if !self.delayed.is_empty() {
                self.release_delayed(now);
            }
            self.dispatch(now);
            self.publish();
            if self.sending_done && self.in_flight == 0 && self.active == 0 {
                abandoned = self.given_up;
                break;
            }
            let mut deadline = next_timer;
            if let Some(e) = self.end {
                deadline = deadline.min(e);
            }
            let due = match self.delayed.peek() {
                Some(Reverse((t, _))) => Some(self.wake_at.map_or(*t, |w| w.min(*t))),
                None => self.wake_at,
            };
            let timeout = match next_wait(&WaitState {
                now,
                deadline,
                due,
                precise: waiter.precise(),
                reread: !self.reread.is_empty(),
                stamped: self.stamped,
                nap: self.nap,
                partial: self.streaming,
                idle: self.idle.len(),
                conns: self.conns.len(),
            }) {
                Wait::Drain => Duration::ZERO,
                Wait::Nap(nap) => {
                    // The loop's top then sends what fell due, and the responses are
                    // read in the same pass by the kernel's arrival stamps.
                    std::thread::sleep(nap);
                    self.stamped = true;
                    continue;
                }
                Wait::Sockets { until, timer } => {
                    let until = match timer {
                        Some(at) => {
                            let timer = &self.timer;
                            wait::arm(until, at, &mut self.timer_armed, || {
                                timer.arm(at.saturating_duration_since(now)).is_ok()
                            })
                        }
                        None => until,
                    };
                    until.saturating_duration_since(now)
                }
            };
            match waiter.wait(self.poll.as_raw_fd(), timeout) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            if self.nap {
                self.streaming = false;
                if self.stamped {
                    self.clock = clock_pair(Instant::now, wall_clock);
                }
            }
            for i in 0..waiter.len() {
                let ev = waiter.get(i);
                if ev.token() == TIMER.0 {
                    self.timer.clear();
                    self.timer_armed = None;
                    continue;
                }
                let ci = ev.token();
                let now = Instant::now();
                match self.conns[ci].state {
                    State::Connecting => self.on_connecting(ci, now),
                    State::Tunnel(_) => self.on_tunnel(ci, &mut buf, now),
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
            // Reads after a wake-up for them take the bytes as they come.
            self.stamped = false;
            self.arrived = None;
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
        self.shared.load.finish(slot);
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
        if self.wake_at.is_some_and(|w| now + self.horizon < w) {
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
                        // One sent ahead of its time (within the horizon) is timed
                        // from its send.
                        self.conns[ci]
                            .pending
                            .push_back(Pending::new(intended.min(now), now));
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
            let len = if self.dynamic {
                match self.build_request(ci, claimed) {
                    Some(len) => len,
                    None => return self.drop_claimed(ci),
                }
            } else {
                claimed * self.req_len
            };
            self.start_batch(ci, claimed, 0, len, now);
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
    /// the request bytes from `base` (HTTP/1; HTTP/2 writes frames of its own).
    fn start_batch(&mut self, ci: usize, claimed: usize, base: usize, len: usize, now: Instant) {
        if self.watch_sends {
            self.show_sent(ci, base, len);
        }
        self.in_flight += claimed as u64;
        self.rec.started += claimed as u64;
        self.gauge();
        let c = &mut self.conns[ci];
        c.proto.send(base..base + len);
        c.proto.queue(claimed);
        self.open_streams(ci);
        match self.conns[ci].state {
            State::Open => self.write(ci, now),
            State::Closed => self.connect(ci, now),
            State::Connecting | State::Tunnel(_) | State::Backoff(_) => {
                unreachable!("only open or closed connections start a batch")
            }
        }
    }

    /// Shows the script the requests connection `ci` is about to write.
    #[cold]
    fn show_sent(&mut self, ci: usize, base: usize, len: usize) {
        let bytes = if self.dynamic {
            &self.conns[ci].own
        } else {
            &self.batch
        };
        if let Some(h) = self.hooks.as_mut() {
            h.sent(ci, &bytes[base..base + len]);
        }
    }

    /// Tells the script that the requests still unanswered on `ci` are gone.
    #[cold]
    fn show_gone(&mut self, ci: usize) {
        if let Some(h) = self.hooks.as_mut() {
            h.gone(ci);
        }
    }

    fn dispatch_sessions(&mut self, now: Instant) {
        for _ in 0..SESSIONS_PER_WAKE {
            match self.schedule.next(now, self.active) {
                Next::Send { intended } => {
                    self.rec.lag(intended, now);
                    let intended = intended.min(now);
                    let ci = match self.free.pop() {
                        Some(ci) => ci,
                        None => {
                            let mut proto = fresh_proto(self.spec);
                            if let (true, Some(h1)) = (self.respond, proto.h1()) {
                                h1.keep_responses();
                            }
                            self.conns.push(Conn::new(proto, self.spec.pipeline, now));
                            self.conns.len() - 1
                        }
                    };
                    let (step, end) = match self.scripts.len() {
                        0 => (0, 0),
                        n => {
                            let range = self.scripts[self.next_script];
                            self.next_script = (self.next_script + self.script_stride) % n;
                            range
                        }
                    };
                    let calls = if end > 0 {
                        end - step
                    } else {
                        self.spec.session.calls
                    };
                    self.conns[ci].session = Some(SessionState {
                        calls_left: calls,
                        step,
                        end,
                        burst_left: 0,
                        started: intended,
                        think_until: None,
                        retry: Vec::new(),
                        resending: None,
                        cookie: Vec::new(),
                        queued: None,
                        answered_before: self.conns[ci].completed_total,
                    });
                    self.active += 1;
                    self.rec.sessions_started += 1;
                    self.rec.max_concurrent = self.rec.max_concurrent.max(self.active as u64);
                    if self.timed {
                        self.start_timed(ci, now);
                    } else {
                        self.next_burst(ci, intended, now);
                    }
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

    /// Starts the session's next burst; its requests were meant to start at
    /// `intended`.
    fn next_burst(&mut self, ci: usize, intended: Instant, now: Instant) {
        let Some(s) = self.conns[ci].session.as_mut() else {
            return;
        };
        s.think_until = None;
        s.burst_left = if self.spec.script.is_empty() {
            self.spec.session.burst.min(s.calls_left)
        } else {
            let first = s.step as usize;
            let joined = self.spec.script[first + 1..s.end as usize]
                .iter()
                .take_while(|st| st.follows)
                .count();
            1 + joined as u32
        };
        self.send_group(ci, intended, now);
    }

    /// A timed session begins: it connects at once (as h2load's clients do before
    /// their first step), and sends what is due.
    #[cold]
    fn start_timed(&mut self, ci: usize, now: Instant) {
        self.send_due(ci, now);
        let c = &self.conns[ci];
        if c.session.is_some() && c.state == State::Closed {
            self.connect(ci, now);
        }
    }

    /// Timed steps: sends the session's steps that are due, as many as the connection
    /// has room for, each timed from its offset; then puts the session on the
    /// `delayed` heap for its next step (a due step kept waiting for room goes out
    /// when a response makes some). HTTP/1.1 sends only when the bytes before are
    /// written, and not while the connection is being made (it sends then).
    #[cold]
    fn send_due(&mut self, ci: usize, now: Instant) {
        let room = self.room(ci);
        let c = &mut self.conns[ci];
        let Some(s) = c.session.as_mut() else { return };
        let ready = match c.state {
            State::Open => c.proto.is_h2() || !c.proto.has_output(),
            State::Closed => true,
            _ => false,
        };
        let script = &self.spec.script;
        let at = |i: u32| s.started + script[i as usize].at.unwrap_or_default();
        let first = s.step;
        let mut k = 0;
        while ready && k < room as u32 && first + k < s.end && at(first + k) <= now {
            let intended = at(first + k);
            self.rec.lag(intended, now);
            c.pending.push_back(Pending::new(intended, now));
            k += 1;
        }
        s.step += k;
        s.calls_left -= k;
        if s.step < s.end {
            let next = at(s.step);
            if next > now && s.queued != Some(next) {
                s.queued = Some(next);
                self.delayed.push(Reverse((next, ci)));
            }
        }
        if k > 0 {
            self.send_steps(ci, first as usize, k as usize, now);
        }
    }

    /// Sends as much of the current burst as may be pipelined at once.
    fn send_group(&mut self, ci: usize, intended: Instant, now: Instant) {
        let max = match self.spec.session.max_piped {
            0 => u32::MAX,
            n => n,
        };
        let c = &mut self.conns[ci];
        let Some(s) = c.session.as_mut() else { return };
        let k = s.burst_left.min(max);
        s.burst_left -= k;
        s.calls_left -= k;
        for _ in 0..k {
            c.pending.push_back(Pending::new(intended, now));
        }
        let step = s.step as usize;
        if !self.spec.script.is_empty() {
            s.step += k;
        }
        self.send_steps(ci, step, k as usize, now);
    }

    /// Sends a session's next `k` calls, back to back: script steps `step..step + k`,
    /// or the run's request `k` times when there is no script.
    fn send_steps(&mut self, ci: usize, step: usize, k: usize, now: Instant) {
        if !self.spec.variety.is_empty() {
            // The run's walk over its requests (validate allows no other list here).
            let Some(len) = self.build_request(ci, k) else {
                // The walk ended the run: these calls are not sent.
                let c = &mut self.conns[ci];
                c.pending.truncate(c.pending.len().saturating_sub(k));
                return;
            };
            return self.start_batch(ci, k, 0, len, now);
        }
        let (base, end) = if self.spec.script.is_empty() {
            (0, k * self.req_len)
        } else {
            if let Some(h1) = self.conns[ci].proto.h1() {
                h1.set_head_request(self.spec.script[step].request.is_head());
            }
            (self.offsets[step], self.offsets[step + k])
        };
        if self.cookies {
            let len = self.with_cookie(ci, base, end);
            return self.start_batch(ci, k, 0, len, now);
        }
        self.start_batch(ci, k, base, end - base, now);
    }

    /// Copies the requests `base..end` of the prepared bytes into the connection's own
    /// buffer, each with the session's cookie (if a reply set one) as its last header.
    /// Returns their length.
    #[cold]
    fn with_cookie(&mut self, ci: usize, base: usize, end: usize) -> usize {
        let batch = &self.batch[base..end];
        let c = &mut self.conns[ci];
        c.own.clear();
        let cookie = c.session.as_ref().map_or(&[][..], |s| &s.cookie[..]);
        // Requests the engine built have a Content-Length when they have a body.
        match crate::run::hooks::request_spans(batch) {
            Ok(spans) if !cookie.is_empty() => {
                let mut at = 0;
                for (head, body) in spans {
                    c.own.extend_from_slice(&batch[at..at + head - 2]);
                    c.own.extend_from_slice(b"Cookie: ");
                    c.own.extend_from_slice(cookie);
                    c.own.extend_from_slice(b"\r\n\r\n");
                    c.own.extend_from_slice(&batch[at + head..at + head + body]);
                    at += head + body;
                }
            }
            _ => c.own.extend_from_slice(batch),
        }
        c.own.len()
    }

    /// A response carried the failure status: the call is sent again once the
    /// connection's batch is answered, or the session fails (requests pipelined
    /// behind it are given up).
    #[cold]
    fn failure_status(&mut self, ci: usize, now: Instant) {
        let c = &mut self.conns[ci];
        let Some(s) = c.session.as_mut() else { return };
        if self.spec.session.retry {
            // HTTP/1.1 answers in order: the call answered is the one sent before the
            // requests still pending.
            let step = s
                .resending
                .unwrap_or_else(|| s.step.saturating_sub(1 + c.pending.len() as u32));
            s.retry
                .push(if self.spec.script.is_empty() { 0 } else { step });
            return;
        }
        let behind = c.pending.len() as u64;
        c.pending.clear();
        if self.watch_sends {
            self.show_gone(ci);
        }
        self.in_flight -= behind;
        self.given_up += behind;
        self.end_session(ci, now, false);
    }

    /// The session on `ci` is over: close its connection and free the slot.
    fn end_session(&mut self, ci: usize, now: Instant, ok: bool) {
        let Some(s) = self.conns[ci].session.take() else {
            return;
        };
        self.drop_socket(ci);
        self.conns[ci].state = State::Closed;
        self.rec.session_end(s.started, now, ok);
        // Responses per session, as the pool's per connection (h2load's per client).
        let answered = self.conns[ci].completed_total - s.answered_before;
        self.rec.hist.per_connection.0.saturating_record(answered);
        self.active -= 1;
        self.free.push(ci);
        // A closed-model schedule may start a replacement at once.
        self.wake_at = None;
    }

    /// All responses of the connection's batch are in.
    fn batch_done(&mut self, ci: usize, now: Instant) {
        let Some(s) = self.conns[ci].session.as_mut() else {
            if self.delays {
                return self.delay(ci, now);
            }
            return self.make_idle(ci);
        };
        if self.timed {
            if s.calls_left == 0 {
                return self.end_session(ci, now, true);
            }
            return self.send_due(ci, now);
        }
        s.resending = s.retry.pop();
        if let Some(step) = s.resending {
            self.conns[ci].pending.push_back(Pending::new(now, now));
            return self.send_steps(ci, step as usize, 1, now);
        }
        if s.burst_left > 0 {
            return self.send_group(ci, now, now);
        }
        let (calls_left, step) = (s.calls_left, s.step);
        if calls_left == 0 {
            return self.end_session(ci, now, true);
        }
        let think = match self.spec.script.get((step as usize).wrapping_sub(1)) {
            Some(step) => step.pause,
            None => self.spec.session.think,
        };
        if think.is_zero() {
            self.next_burst(ci, now, now);
        } else if let Some(s) = self.conns[ci].session.as_mut() {
            s.think_until = Some(now + think);
        }
    }

    /// Requests the connection can take now: HTTP/1 an idle connection takes a
    /// pipeline's worth; HTTP/2 up to `--streams`, within the server's
    /// SETTINGS_MAX_CONCURRENT_STREAMS (100 assumed until it says, as RFC 9113 advises,
    /// and while TLS's ALPN has not yet chosen).
    fn room(&self, ci: usize) -> usize {
        let c = &self.conns[ci];
        let limit = match &c.proto {
            Proto::H2(h) => self.spec.pipeline.min(h.stream_limit()),
            Proto::H1(_) if self.spec.http2 => self.spec.pipeline.min(ASSUMED_MAX_STREAMS),
            Proto::H1(_) => self.spec.pipeline,
        };
        limit.saturating_sub(c.pending.len())
    }

    /// Which request the connection is sending: the script step its session is on, or
    /// the run's one request.
    fn request_index(&self, ci: usize) -> usize {
        match &self.conns[ci].session {
            Some(s) if !self.spec.script.is_empty() => (s.step as usize).saturating_sub(1),
            _ => 0,
        }
    }

    /// HTTP/2: queues HEADERS (and body) for the connection's requests that have no
    /// stream yet, as far as the server's stream limit allows; the rest wait for
    /// streams to end (their latency counts the wait: it is the client's queue).
    /// HTTP/1 has no streams: its requests go out as queued.
    #[inline(always)]
    fn open_streams(&mut self, ci: usize) {
        if self.conns[ci].proto.is_h2() {
            self.open_h2_streams(ci);
        }
    }

    fn open_h2_streams(&mut self, ci: usize) {
        let mut index = self.request_index(ci);
        let c = &mut self.conns[ci];
        // A session's script steps: the requests still without a stream are the last
        // sent, steps `step - waiting ..` in order.
        let steps = c.session.is_some() && !self.spec.script.is_empty();
        if steps {
            let waiting = c.pending.iter().filter(|p| p.stream == 0).count();
            index = (index + 1).saturating_sub(waiting);
        }
        let Some(h2) = c.proto.h2().filter(|h| !h.goaway) else {
            return;
        };
        let repeat = self.h2_requests.len() == 1;
        let turns = !self.spec.variety.is_empty();
        let free = h2.stream_limit().saturating_sub(h2.open_streams());
        // One request for every stream (the pool's common case): looked up once.
        let one = &self.h2_requests[index.min(self.h2_requests.len() - 1)];
        for p in c.pending.iter_mut().filter(|p| p.stream == 0).take(free) {
            if turns {
                p.stream = h2.request(&self.h2_requests[c.turn], false);
                c.turn = (c.turn + 1) % self.h2_requests.len();
            } else if steps {
                p.stream = h2.request(&self.h2_requests[index], repeat);
                index += 1;
            } else {
                p.stream = h2.request(one, repeat);
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

    /// The script, or the run's requests in turn, build the batch of `claimed`
    /// requests of connection `ci` into its own buffer. Returns the bytes' length, or
    /// `None` when the script stopped the thread or the run.
    fn build_request(&mut self, ci: usize, claimed: usize) -> Option<usize> {
        let variety = &self.spec.variety;
        if !variety.is_empty() {
            let c = &mut self.conns[ci];
            c.own.clear();
            // HTTP/2 takes its turns as streams open.
            let Some(h1) = c.proto.h1() else {
                return Some(0);
            };
            if let Some(walk) = self.spec.walk {
                let first = self
                    .shared
                    .calls
                    .fetch_add(claimed as u64, Ordering::Relaxed);
                if walk.once && first + claimed as u64 > variety.len() as u64 {
                    // Through the list once: the run ends, as httperf's does.
                    self.stopped = true;
                    self.shared.control.stop();
                    return None;
                }
                let pick = |j: usize| &variety[walk.index(first + j as u64, variety.len())];
                h1.set_head_request(pick(0).is_head());
                for j in 0..claimed {
                    c.own.extend_from_slice(&pick(j).bytes);
                }
                return Some(c.own.len());
            }
            h1.set_head_request(variety[c.turn].is_head());
            for _ in 0..claimed {
                c.own.extend_from_slice(&variety[c.turn].bytes);
                c.turn = (c.turn + 1) % variety.len();
            }
            return Some(c.own.len());
        }
        let Some(hooks) = self.hooks.as_mut() else {
            // The run's one request, in the connection's own buffer (where a redirect
            // writes the request that follows it).
            let c = &mut self.conns[ci];
            c.own.clear();
            c.own
                .extend_from_slice(&self.batch[..claimed * self.req_len]);
            return Some(c.own.len());
        };
        let c = &mut self.conns[ci];
        c.own.clear();
        let flow = hooks.request(&mut c.own);
        if !self.settle_flow(flow) {
            return None;
        }
        let c = &mut self.conns[ci];
        if let Some(h1) = c.proto.h1() {
            h1.set_head_request(c.own.starts_with(b"HEAD "));
        }
        Some(c.own.len())
    }

    /// Requests claimed for a batch the script did not build go back unsent (the
    /// thread or the run is stopping).
    fn drop_claimed(&mut self, ci: usize) {
        self.conns[ci].pending.clear();
        self.make_idle(ci);
    }

    /// Acts on what a script's hook asked. Returns false when this thread is to stop.
    fn settle_flow(&mut self, flow: Flow) -> bool {
        match flow {
            Flow::Go => true,
            Flow::StopThread => {
                self.stopped = true;
                false
            }
            Flow::StopRun => {
                self.stopped = true;
                self.shared.control.stop();
                false
            }
        }
    }

    /// Connection `ci` waits out the script's delay before its next batch.
    fn delay(&mut self, ci: usize, now: Instant) {
        let Some(h) = self.hooks.as_mut() else {
            return self.make_idle(ci);
        };
        let (d, flow) = h.delay();
        if !self.settle_flow(flow) || d.is_zero() {
            return self.make_idle(ci);
        }
        self.delayed.push(Reverse((now + d, ci)));
    }

    /// Connections whose delay is over take requests again.
    #[inline(never)]
    fn release_delayed(&mut self, now: Instant) {
        while let Some(&Reverse((t, ci))) = self.delayed.peek() {
            if t > now {
                break;
            }
            self.delayed.pop();
            if self.timed {
                // A session's next step is due (unless the entry is stale: the
                // session took it early, or ended).
                if let Some(s) = self.conns[ci].session.as_mut() {
                    if s.queued == Some(t) {
                        s.queued = None;
                        self.send_due(ci, now);
                    }
                }
                continue;
            }
            self.make_idle(ci);
        }
    }

    /// Whether connection `ci` has sent its last request: its session's calls are all
    /// sent, or (pool shapes) the schedule has nothing more to start.
    fn sent_last(&self, ci: usize) -> bool {
        match &self.conns[ci].session {
            Some(s) => s.calls_left == 0 && s.burst_left == 0 && s.retry.is_empty(),
            None => self.sending_done || self.schedule.spent(),
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
                State::Connecting | State::Tunnel(_)
                    if now - c.connect_started >= connect_timeout =>
                {
                    self.drop_socket(ci);
                    self.conns[ci].state = State::Backoff(now);
                    self.fail_pending(ci, now, ErrorKind::ConnectTimeout);
                }
                State::Open => {
                    if let (Some(t), Some(p)) = (timeout, c.pending.front()) {
                        if now - p.sent >= t {
                            self.fail_and_close(ci, now, ErrorKind::Timeout);
                            continue;
                        }
                    }
                    if let (Some(t), Some(p)) = (self.spec.last_wait, c.pending.back()) {
                        if now - p.sent >= t && self.sent_last(ci) {
                            self.fail_and_close(ci, now, ErrorKind::Timeout);
                            continue;
                        }
                    }
                }
                _ => {}
            }
            if let Some(t) = self.conns[ci].session.as_ref().and_then(|s| s.think_until) {
                if now >= t {
                    self.next_burst(ci, t, now);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn a_stamp_is_never_placed_before_it_happened_however_long_the_clocks_are_apart() {
        // Clocks where the thread is held 5 ms between the first monotonic reading and
        // the wall reading (then runs on): the wall reading belongs to base + 5 ms.
        let base = Instant::now();
        let t = Cell::new(Duration::ZERO);
        let mono = || {
            let now = base + t.get();
            t.set(t.get() + Duration::from_millis(5));
            now
        };
        let epoch = Duration::from_secs(1_700_000_000);
        let wall = || epoch + t.get();
        let (m, w) = clock_pair(mono, wall);
        // A segment stamped at that very wall time is placed no earlier than the
        // monotonic instant the wall reading was taken at (base + 5 ms).
        let placed = m;
        let truth = base + (w - epoch);
        assert!(
            placed >= truth,
            "{:?} before {:?}",
            placed - base,
            truth - base
        );
        // And with a quick pair, within the pair's width of the truth.
        let (m, w) = clock_pair(Instant::now, wall_clock);
        let later_mono = Instant::now();
        let later_wall = wall_clock();
        let placed = m + (later_wall - w);
        assert!(placed + Duration::from_millis(1) >= later_mono);
    }
}
