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

mod batch;
mod conn;
mod connect;
mod drive;
mod paced;
mod read;
mod redirect;
mod session;
mod state;
mod stream;
mod wait;

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
use crate::proto::h2::ASSUMED_MAX_STREAMS;
use crate::proto::{Event, Proto};
use crate::run::control::Control;
use crate::run::io::{TimerFd, Waiter};
use crate::run::schedule::{Next, Schedule};
use crate::spec::plan::Plan;
use crate::spec::LoadSpec;
use conn::{fresh_proto, Conn, Pending, State};
use drive::{Drive, Pool, Sessions};
use state::{Dial, Once, Pace, Prepared, Published, Script};
use wait::{next_wait, Wait, WaitState};

const TIMER: Token = Token(usize::MAX);

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
    /// The run's connections go on io_uring (see [`crate::run::ring`]).
    pub ring: bool,
    /// ... and a thread whose ring cannot be made fails the run rather than using epoll.
    pub ring_required: bool,
    /// Why epoll carries the run, or some of its threads (set by `auto`'s choice, or
    /// by a thread whose ring could not be made).
    pub io_note: Mutex<Option<String>>,
    /// A thread fell back to epoll.
    pub fell_back: std::sync::atomic::AtomicBool,
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
    rec: Recorder,
    /// Events of the connection being read, reused.
    events: Vec<Event>,
    /// Connections whose socket still had data when their read budget ran out, and
    /// whether the peer had closed: read again after the loop's deadline and timer
    /// checks (epoll is edge-triggered, so no new event would come for them).
    reread: Vec<(usize, bool)>,
    /// HTTP/3: QUIC's timers of the connections, earliest first (an entry whose
    /// connection's timer has moved since is skipped).
    quic_timers: std::collections::BinaryHeap<std::cmp::Reverse<(Instant, usize)>>,
    in_flight: u64,
    /// Sockets held, connecting or open.
    sockets: u64,
    /// Where and how connections are made.
    dial: Dial,
    /// What the run has yet to note once (the server's name, the TLS session).
    once: Once,
    /// The request bytes, prepared once, and how responses are taken.
    prep: Prepared,
    /// When to wake, and how the last wait ended.
    pace: Pace,
    /// What the shape does with the connections: a pool's free list and delays, or
    /// the sessions and their slots.
    drive: Drive<'a>,
    /// The thread's script, if the run has one.
    script: Script,
    /// Progress not yet published to the run's live counters.
    published: Published,
}

impl<'a> Worker<'a> {
    /// Worker `index` of the run (which picks its script's thread hooks), taking
    /// arrivals `lane.0`, `lane.0 + lane.1`, … of the run's sequence; `places` are its
    /// requests' places in the whole list when the run is one part of several (see
    /// [`crate::run_parts`]), else empty.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        plan: &'a Plan,
        shared: &'a Shared,
        schedule: Box<dyn Schedule + 'a>,
        (index, places): (usize, &[u32]),
        lane: (usize, usize),
        connections: usize,
        start: Instant,
        start_unix_us: u64,
    ) -> io::Result<Worker<'a>> {
        let spec = plan.spec();
        let work = plan.workload();
        // Pool shapes own `connections` slots for the whole run; session shapes grow
        // their slots as sessions arrive.
        let (drive, pool) = match work.sessions() {
            Some(s) => (
                Drive::Sessions(Sessions::new(*s, &spec.load.script, lane)),
                0,
            ),
            None => (Drive::Pool(Pool::new(connections)), connections),
        };
        let mut conns: Vec<Conn> = (0..pool)
            .map(|_| Conn::new(fresh_proto(spec), spec.load.pipeline, start))
            .collect();
        let hooks = spec.hooks.as_ref().map(|h| h.0.thread(index));
        let mut prep = Prepared::new(plan, &hooks);
        prep.made = (spec.calls.as_ref()).map(|m| crate::run::made::Maker::new(m, index));
        // Pool shapes only: a session's next call, a redirect's next hop or a script's
        // follow-up waits for the response and would wait out the nap.
        let nap = matches!(
            spec.load.shape,
            crate::spec::Shape::Rate { .. } | crate::spec::Shape::Paced(_)
        ) && prep.redirects == 0
            && prep.paced.is_none()
            && !hooks
                .as_ref()
                .is_some_and(|h| h.wants_responses() || h.builds_requests());
        for c in &mut conns {
            if let (true, Some(h1)) = (prep.respond, c.proto.h1()) {
                h1.keep_responses();
            }
        }
        let horizon = schedule.horizon();
        let mut rec = Recorder::new(
            start,
            start_unix_us,
            if spec.record_requests {
                crate::measure::recorder::MAX_RECORDS / spec.load.threads.max(1)
            } else {
                0
            },
            shared.control.watched.then(|| shared.control.clone()),
        );
        // A run of several requests keeps a figure per request.
        let load = &spec.load;
        let n = match load.variety.len() {
            0 => load.script.len(),
            n => n,
        };
        rec.targets = match places.is_empty() {
            true => crate::measure::targets::Targets::new(n),
            false => crate::measure::targets::Targets::each(n),
        };
        rec.raw = (shared.control).raw_sink(index as u32, places, start, start_unix_us);
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
            rec,
            events: Vec::new(),
            reread: Vec::new(),
            quic_timers: std::collections::BinaryHeap::new(),
            in_flight: 0,
            sockets: 0,
            dial: Dial::new(spec, &hooks, index),
            once: Once {
                server: true,
                tls: true,
            },
            prep,
            pace: Pace {
                sending_done: false,
                wake_at: None,
                horizon,
                end: spec.load.duration.map(|d| start + d),
                nap,
                streaming: false,
                stamped: false,
                clock: (start, Duration::ZERO),
                arrived: None,
                timer,
                timer_armed: None,
            },
            drive,
            script: Script {
                watch_sends: hooks.as_ref().is_some_and(|h| h.watches_sends()),
                delays: hooks.as_ref().is_some_and(|h| h.has_delay()),
                stopped: false,
                hooks,
            },
            published: Published::default(),
        })
    }

    /// Long on purpose: the event loop itself, kept one frame on the path of every request.
    pub fn run(mut self) -> io::Result<WorkerOutput> {
        let me = self.shared.load.register();
        let mut waiter = Waiter::new(1024);
        // Declared after the connections' owner: dropped (and torn down) before it.
        let mut _ring = None;
        if self.shared.ring {
            match stampede_ring::install(self.poll.as_raw_fd()) {
                Ok(r) => {
                    _ring = Some(r);
                    waiter.on_ring();
                    self.dial.ring = true;
                }
                Err(why) if self.shared.ring_required => return Err(io::Error::other(why)),
                Err(why) => {
                    self.shared.fell_back.store(true, Ordering::Relaxed);
                    let mut note = self
                        .shared
                        .io_note
                        .lock()
                        .unwrap_or_else(|e| e.into_inner());
                    note.get_or_insert(format!("a thread fell back to epoll: {why}"));
                }
            }
        }
        let mut buf = vec![0u8; READ_BUF];
        let mut next_timer = Instant::now() + TIMER_TICK;
        let control = self.shared.control.clone();
        let abandoned;
        if self.script.delays {
            // wrk waits out a delay before a connection's first request too.
            let now = Instant::now();
            if let Drive::Pool(pool) = &mut self.drive {
                for ci in pool.hold_all() {
                    self.delay(ci, now);
                }
            }
        }
        loop {
            let now = Instant::now();
            if self.script.stopped
                || control.stop.load(Ordering::Relaxed)
                || self.pace.end.is_some_and(|e| now >= e)
            {
                abandoned = self.in_flight + self.drive.given_up();
                break;
            }
            self.rec.roll(now);
            self.gauge();
            if now >= next_timer {
                self.timers(now);
                next_timer = now + TIMER_TICK;
            }
            if self.quic_timers.peek().is_some_and(|t| t.0 .0 <= now) {
                self.quic_timeouts(now);
            }
            if self.drive.next_due().is_some_and(|t| t <= now) {
                self.release_due(now);
            }
            let paced = self.prep.paced.as_ref().and_then(|p| p.next_due());
            if paced.is_some_and(|t| t <= now) {
                self.send_paced(now);
            }
            self.dispatch(now);
            self.publish();
            if self.pace.sending_done && self.in_flight == 0 && self.drive.active() == 0 {
                abandoned = self.drive.given_up();
                break;
            }
            let mut deadline = next_timer;
            if let Some(e) = self.pace.end {
                deadline = deadline.min(e);
            }
            if let Some(t) = self.quic_timers.peek() {
                deadline = deadline.min(t.0 .0);
            }
            if let Some(t) = self.prep.paced.as_ref().and_then(|p| p.next_due()) {
                deadline = deadline.min(t);
            }
            let due = match self.drive.next_due() {
                Some(t) => Some(self.pace.wake_at.map_or(t, |w| w.min(t))),
                None => self.pace.wake_at,
            };
            let timeout = match next_wait(&WaitState {
                now,
                deadline,
                due,
                precise: waiter.precise(),
                reread: !self.reread.is_empty(),
                stamped: self.pace.stamped,
                nap: self.pace.nap,
                partial: self.pace.streaming,
                idle: self.drive.free_count(),
                conns: self.conns.len(),
            }) {
                Wait::Drain => Duration::ZERO,
                Wait::Nap(nap) => {
                    // The loop's top then sends what fell due, and the responses are
                    // read in the same pass by the kernel's arrival stamps.
                    let slept = Instant::now();
                    waiter.nap(nap)?;
                    me.idle(slept.elapsed());
                    self.pace.stamped = true;
                    continue;
                }
                Wait::Sockets { until, timer } => {
                    let until = match timer {
                        Some(at) => {
                            let timer = &self.pace.timer;
                            wait::arm(until, at, &mut self.pace.timer_armed, || {
                                timer.arm(at.saturating_duration_since(now)).is_ok()
                            })
                        }
                        None => until,
                    };
                    until.saturating_duration_since(now)
                }
            };
            // Time blocked in a wait had nothing to do: the verdict's idle share. The
            // clock read on waking also times the first event it brought.
            let blocked = (!timeout.is_zero()).then(Instant::now);
            let waited = waiter.wait(self.poll.as_raw_fd(), timeout);
            let mut woke = blocked.map(|at| {
                let woke = Instant::now();
                me.idle(woke - at);
                woke
            });
            match waited {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            if self.pace.nap {
                self.pace.streaming = false;
                if self.pace.stamped {
                    self.pace.clock = clock_pair(Instant::now, wall_clock);
                }
            }
            for i in 0..waiter.len() {
                let ev = waiter.get(i);
                if ev.token() == TIMER.0 {
                    self.pace.timer.clear();
                    self.pace.timer_armed = None;
                    continue;
                }
                let ci = ev.token();
                let now = woke.take().unwrap_or_else(Instant::now);
                match self.conns[ci].link.state() {
                    State::Connecting | State::Tunnel(_) => self.on_dial(ci, &mut buf, now),
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
            self.pace.stamped = false;
            self.pace.arrived = None;
        }
        // Close every socket; requests still in flight are abandoned, not failed.
        let now = Instant::now();
        for c in &mut self.conns {
            if let Some(h) = c.proto.h3() {
                // QUIC's goodbye, so that the server lets the connection go at once.
                h.close(now);
                let _ = c.link.send_datagrams(h.unwritten(), h.segment(), h.ecn());
                self.rec.quic.add(&h.figures());
                // Gone, so that its congestion-limited time so far is counted.
                c.proto = fresh_proto(self.spec);
            }
            // WebSocket's goodbye (1000), so that the server sees a clean close.
            c.ws_part(true);
            c.link.release(self.poll.registry());
        }
        if let Some(q) = &self.dial.quic {
            self.rec.quic.congestion_limited_us = q.limited.micros();
        }
        // Every arrival due before the end that was not started is counted, even one due
        // a moment before it: the arrivals then add up exactly (one or two of them stay
        // far below the 0.1 % that marks a run as behind).
        let never_sent = match self.pace.end {
            Some(end) if !self.pace.sending_done => self
                .schedule
                .drain_due(end.min(Instant::now()) - Duration::from_nanos(1)),
            _ => 0,
        };
        self.publish();
        if let Drive::Pool(_) = self.drive {
            for c in &self.conns {
                self.rec
                    .hist
                    .per_connection
                    .0
                    .saturating_record(c.completed_total);
            }
        }
        self.rec.finish();
        self.rec.close_raw();
        self.shared.load.finish(&me);
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
            users: self.drive.active() as u64,
        });
    }

    fn publish(&mut self) {
        let failed: u64 = self.rec.errors.iter().sum();
        let rec = &self.rec;
        self.published
            .publish(&self.shared.control, rec.completed, failed, rec.bytes_read);
    }

    /// Starts what the schedule says is due: requests on free connections (pool
    /// shapes) or new sessions (session shapes).
    fn dispatch(&mut self, now: Instant) {
        if self.pace.sending_done {
            return;
        }
        if self
            .pace
            .wake_at
            .is_some_and(|w| now + self.pace.horizon < w)
        {
            return;
        }
        self.pace.wake_at = None;
        if let Drive::Sessions(_) = self.drive {
            return self.dispatch_sessions(now);
        }
        while let Some(ci) = self.next_free() {
            let mut claimed = 0;
            // HTTP/1: an idle connection has nothing pending. HTTP/2: refill the streams.
            let room = self.room(ci);
            if room == 0 {
                // HTTP/2 at the server's stream limit: it rejoins when a stream ends.
                self.take_free();
                continue;
            }
            while claimed < room {
                match self.schedule.next(now, 0) {
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
                        self.pace.wake_at = Some(t);
                        break;
                    }
                    Next::Done => {
                        self.pace.sending_done = true;
                        break;
                    }
                }
            }
            if claimed == 0 {
                return;
            }
            self.take_free();
            let len = if self.prep.dynamic {
                match self.build_request(ci, claimed) {
                    Some(len) => len,
                    None => return self.drop_claimed(ci),
                }
            } else {
                claimed * self.prep.req_len
            };
            self.start_batch(ci, claimed, 0, len, now);
            if self.pace.sending_done || self.pace.wake_at.is_some() {
                if self.pace.wake_at.is_some() && self.spare_streams(ci) {
                    // Streams to spare: the next start goes on this connection when it
                    // falls due, not once an answer comes (with one connection, a start
                    // would otherwise wait for the server).
                    self.make_idle(ci);
                }
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
        if self.script.watch_sends {
            self.show_sent(ci, base, len);
        }
        self.in_flight += claimed as u64;
        self.rec.started += claimed as u64;
        self.gauge();
        let c = &mut self.conns[ci];
        c.proto.send(base..base + len);
        let mut made = false;
        if let Proto::Ws(w) = &mut c.proto {
            if w.stamping() {
                // Stamped messages carry their requests' intended starts.
                let from = c.pending.len().saturating_sub(claimed);
                w.due(c.pending.range(from..).map(|p| p.intended));
            }
            made = self.prep.made.is_some();
        }
        match made {
            true => self.queue_made_messages(ci, claimed),
            false => c.proto.queue(claimed),
        }
        self.open_streams(ci);
        match self.conns[ci].link.state() {
            State::Open => self.write(ci, now),
            State::Closed => self.connect(ci, now),
            State::Connecting | State::Tunnel(_) | State::Backoff(_) => {
                unreachable!("only open or closed connections start a batch")
            }
        }
    }

    /// WebSocket messages made one by one, numbered over the run's calls, queued on
    /// `ci`; a maker that cannot make one stops the run.
    #[cold]
    fn queue_made_messages(&mut self, ci: usize, claimed: usize) {
        let (Some(made), Some(w)) = (self.prep.made.as_mut(), self.conns[ci].proto.ws()) else {
            return;
        };
        for _ in 0..claimed {
            let number = self.shared.calls.fetch_add(1, Ordering::Relaxed);
            if !made.make(number, ci) {
                self.shared.control.stop();
                return;
            }
            w.queue_made(&made.body, &made.fields);
        }
    }

    /// All responses of the connection's batch are in: a pool's connection is free
    /// again (after the script's delay, if it has one); a session goes on.
    fn batch_done(&mut self, ci: usize, now: Instant) {
        if let Drive::Sessions(_) = self.drive {
            return self.session_batch_done(ci, now);
        }
        if self.script.delays {
            return self.delay(ci, now);
        }
        self.make_idle(ci)
    }

    /// Requests the connection can take now: HTTP/1 an idle connection takes a
    /// pipeline's worth; HTTP/2 up to `--streams`, within the server's
    /// SETTINGS_MAX_CONCURRENT_STREAMS (100 assumed until it says, as RFC 9113 advises,
    /// and while TLS's ALPN has not yet chosen).
    fn room(&self, ci: usize) -> usize {
        let c = &self.conns[ci];
        let limit = match &c.proto {
            Proto::H2(h) => self.spec.load.pipeline.min(h.stream_limit()),
            Proto::H1(_) if self.spec.load.http2 => {
                self.spec.load.pipeline.min(ASSUMED_MAX_STREAMS)
            }
            Proto::H1(_) => self.spec.load.pipeline,
            // QUIC's stream limit holds requests back in their queue, not here.
            Proto::H3(_) => self.spec.load.pipeline,
            // Messages in flight on one connection: `--pipeline`'s.
            Proto::Ws(_) => self.spec.load.pipeline,
        };
        limit.saturating_sub(c.pending.len())
    }

    /// Whether `ci` is an open multiplexed connection with room for more streams.
    fn spare_streams(&self, ci: usize) -> bool {
        let c = &self.conns[ci];
        c.proto.multiplexed() && c.link.state() == State::Open && self.room(ci) > 0
    }

    /// Which request the connection is sending: the script step its session is on, or
    /// the run's one request.
    fn request_index(&self, ci: usize) -> usize {
        match &self.drive {
            Drive::Sessions(s) => s.request_index(ci),
            Drive::Pool(_) => 0,
        }
    }

    /// HTTP/2 and HTTP/3: sends the connection's requests that have no stream yet,
    /// as far as the server's stream limit allows; the rest wait for streams to end
    /// (their latency counts the wait: it is the client's queue). HTTP/1 has no
    /// streams: its requests go out as queued.
    #[inline(always)]
    fn open_streams(&mut self, ci: usize) {
        if self.conns[ci].proto.multiplexed() {
            self.open_mux_streams(ci);
        }
    }

    fn open_mux_streams(&mut self, ci: usize) {
        let mut index = self.request_index(ci);
        // A session's script steps: the requests still without a stream are the last
        // sent, steps `step - waiting ..` in order.
        let steps = self.drive.session_on(ci) && !self.spec.load.script.is_empty();
        let c = &mut self.conns[ci];
        if steps {
            let waiting = c.pending.iter().filter(|p| p.stream == 0).count();
            index = (index + 1).saturating_sub(waiting);
        }
        if self.prep.paced.is_some() {
            return self.open_paced_streams(ci);
        }
        if let Some(made) = self.prep.made.as_mut() {
            // Calls made one by one: each its own body and fields, numbered over the
            // run's calls.
            let Some(h2) = c.proto.h2() else {
                return;
            };
            let free = h2.stream_limit().saturating_sub(h2.open_streams());
            let req = &self.prep.h2_requests[0];
            for p in c.pending.iter_mut().filter(|p| p.stream == 0).take(free) {
                let number = self.shared.calls.fetch_add(1, Ordering::Relaxed);
                if !made.make(number, ci) {
                    self.shared.control.stop();
                    return;
                }
                p.stream = h2.request_made(req, &made.body, &made.fields);
            }
            return;
        }
        let Some(h2) = c.proto.mux() else {
            return;
        };
        let repeat = self.prep.h2_requests.len() == 1;
        let turns = !self.spec.load.variety.is_empty();
        let free = h2.stream_limit().saturating_sub(h2.open_streams());
        // One request for every stream (the pool's common case): looked up once.
        let one = &self.prep.h2_requests[index.min(self.prep.h2_requests.len() - 1)];
        let walk = self.spec.load.walk.filter(|_| turns);
        for p in c.pending.iter_mut().filter(|p| p.stream == 0).take(free) {
            if let Some(w) = walk {
                // One walk over the run's calls, as HTTP/1.1's batches take it (a walk
                // here goes round: validation refuses one that ends the run).
                let call = self.shared.calls.fetch_add(1, Ordering::Relaxed);
                let all = &self.prep.h2_requests;
                let i = w.index(call, all.len());
                p.stream = h2.request(&all[i], false);
                p.target = i as u32;
            } else if turns {
                p.stream = h2.request(&self.prep.h2_requests[c.turn], false);
                p.target = c.turn as u32;
                c.turn = (c.turn + 1) % self.prep.h2_requests.len();
            } else if steps {
                p.stream = h2.request(&self.prep.h2_requests[index], repeat);
                p.target = index as u32;
                index += 1;
            } else {
                p.stream = h2.request(one, repeat);
            }
        }
    }

    /// A pool's connection `ci` can take requests (sessions' slots are theirs).
    #[inline]
    fn make_idle(&mut self, ci: usize) {
        if let Drive::Pool(pool) = &mut self.drive {
            pool.free(ci);
        }
    }

    /// The pool's connection to fill next, if one is free.
    #[inline]
    fn next_free(&self) -> Option<usize> {
        match &self.drive {
            Drive::Pool(pool) => pool.next_free(),
            Drive::Sessions(_) => None,
        }
    }

    /// The connection [`Worker::next_free`] named is busy now.
    #[inline]
    fn take_free(&mut self) {
        if let Drive::Pool(pool) = &mut self.drive {
            pool.take();
        }
    }

    /// Whether connection `ci` has sent its last request: its session's calls are all
    /// sent, or (pool shapes) the schedule has nothing more to start.
    fn sent_last(&self, ci: usize) -> bool {
        match &self.drive {
            Drive::Sessions(s) => s.sent_last(ci),
            Drive::Pool(_) => self.pace.sending_done || self.schedule.spent(),
        }
    }

    fn timers(&mut self, now: Instant) {
        let timeout = self.spec.load.timeout;
        let connect_timeout = self.spec.load.connect_timeout;
        for ci in 0..self.conns.len() {
            let c = &mut self.conns[ci];
            if c.link.retry_due(now) {
                self.make_idle(ci);
            } else if c.link.dial_expired(now, connect_timeout) {
                self.drop_socket(ci);
                self.conns[ci].link.hold_until(now);
                self.fail_pending(ci, now, ErrorKind::ConnectTimeout);
            }
            let c = &mut self.conns[ci];
            let shaking = c.proto.h3().is_some_and(|h| !h.connected());
            if shaking && now.saturating_duration_since(c.link.dialled_at()) >= connect_timeout {
                // QUIC's handshake is the connect: it too has the connect timeout.
                self.drop_socket(ci);
                self.conns[ci].link.hold_until(now);
                self.fail_pending(ci, now, ErrorKind::ConnectTimeout);
                continue;
            }
            let c = &self.conns[ci];
            if c.link.state() == State::Open {
                if let (Some(t), Some(p)) = (timeout, c.pending.front()) {
                    if now - p.sent >= t {
                        self.fail_and_close(ci, now, ErrorKind::Timeout);
                        continue;
                    }
                }
                if let (Some(t), Some(p)) = (self.spec.load.last_wait, c.pending.back()) {
                    if now - p.sent >= t && self.sent_last(ci) {
                        self.fail_and_close(ci, now, ErrorKind::Timeout);
                        continue;
                    }
                }
                if let Some(t) = self.spec.load.event_timeout {
                    if self.stalled(ci, now, t) {
                        self.fail_and_close(ci, now, ErrorKind::StreamStall);
                        continue;
                    }
                }
            }
            if let Drive::Sessions(_) = self.drive {
                self.think_over(ci, now);
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
