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
//! Each connection holds one protocol value ([`Proto`], sans-IO), made by the thread's
//! [`Connector`] from the run's [`Config`](crate::spec::config::Config); the worker
//! moves bytes (or datagrams) between it and the socket, keeps its timers on one heap
//! and settles the events and notes it reports, never asking which protocol it is. This module holds the loop and its timers;
//! `dispatch` what starts when the schedule says so; `connect` the connections' life
//! (connect, TLS, write, close); `read` their input; `wait` the choice, between
//! passes, of how long to wait and on what.

mod batch;
mod conn;
mod connect;
mod dispatch;
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
use crate::proto::connector::Connector;
use crate::proto::Event;
use crate::run::control::Control;
use crate::run::io::{TimerFd, Waiter};
use crate::run::schedule::Schedule;
use crate::spec::config::Config;
use crate::spec::plan::Plan;
use conn::{Conn, Pending, State};
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
    cfg: &'a Config,
    shared: &'a Shared,
    schedule: Box<dyn Schedule + 'a>,
    poll: Poll,
    conns: Vec<Conn>,
    rec: Recorder,
    /// Events of the connection being read, reused.
    events: Vec<Event>,
    /// ... and what it noted beside them (seldom anything).
    notes: Vec<crate::proto::Note>,
    /// What every connection's protocol value is made by.
    connector: Connector,
    /// Connections whose socket still had data when their read budget ran out, and
    /// whether the peer had closed: read again after the loop's deadline and timer
    /// checks (epoll is edge-triggered, so no new event would come for them).
    reread: Vec<(usize, bool)>,
    /// The connections' protocol timers (QUIC's), earliest first, one heap for every
    /// protocol's (an entry whose connection's timer has moved since is skipped).
    protocol_timers: std::collections::BinaryHeap<std::cmp::Reverse<(Instant, usize)>>,
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
        let cfg = plan.config();
        let work = plan.workload();
        // Pool shapes own `connections` slots for the whole run; session shapes grow
        // their slots as sessions arrive.
        let (drive, pool) = match work.sessions() {
            Some(s) => (
                Drive::Sessions(Sessions::new(*s, &cfg.sends.script, lane)),
                0,
            ),
            None => (Drive::Pool(Pool::new(connections)), connections),
        };
        let mut connector = Connector::new(cfg);
        let mut conns: Vec<Conn> = (0..pool)
            .map(|_| Conn::new(connector.fresh(), cfg.size.pipeline, start))
            .collect();
        let hooks = cfg.sends.hooks.as_ref().map(|h| h.0.thread(index));
        let mut prep = Prepared::new(plan, &hooks);
        prep.made = (cfg.sends.calls.as_ref()).map(|m| crate::run::made::Maker::new(m, index));
        // Pool shapes only: a session's next call, a redirect's next hop or a script's
        // follow-up waits for the response and would wait out the nap. Not on a
        // manual clock: a nap and the kernel's stamps after it are the machine's time.
        let nap = !shared.control.clock().is_manual()
            && matches!(
                cfg.arrivals.shape,
                crate::spec::Shape::Rate { .. } | crate::spec::Shape::Paced(_)
            )
            && prep.redirects == 0
            && prep.paced.is_none()
            && !hooks
                .as_ref()
                .is_some_and(|h| h.wants_responses() || h.builds_requests());
        if prep.respond {
            // Kept on every connection made from now on as well (a reconnect, ALPN's
            // HTTP/2, QUIC's handshake).
            connector.keep = true;
            for c in &mut conns {
                c.proto.keep_responses();
            }
        }
        let horizon = schedule.horizon();
        let mut rec = Recorder::new(
            start,
            start_unix_us,
            if cfg.record_requests {
                crate::measure::recorder::MAX_RECORDS / cfg.size.threads.max(1)
            } else {
                0
            },
            shared.control.watched.then(|| shared.control.clone()),
        );
        // A run of several requests keeps a figure per request — where they differ in
        // method or target: prompts sent in turn to one endpoint are one request.
        let load = &cfg.sends;
        let alike = |v: &[crate::Request]| {
            v.first().is_some_and(|a| {
                v.iter()
                    .all(|r| r.method == a.method && r.target() == a.target())
            })
        };
        let named = load.hooks.as_ref().map_or(0, |h| h.0.targets().len());
        let n = match load.variety.len() {
            0 if named > 0 => named,
            0 => load.script.len(),
            _ if places.is_empty() && alike(&load.variety) => 1,
            n => n,
        };
        // Requests its hooks name (a journey's steps) have figures of their own, even
        // one alone: its failed checks are counted there.
        rec.targets = match places.is_empty() && named == 0 {
            true => crate::measure::targets::Targets::new(n),
            false => crate::measure::targets::Targets::each(n),
        };
        rec.raw = (shared.control).raw_sink(index as u32, places, start, start_unix_us);
        let poll = Poll::new()?;
        let timer = TimerFd::new()?;
        poll.registry()
            .register(&mut SourceFd(&timer.raw()), TIMER, Interest::READABLE)?;
        Ok(Worker {
            cfg,
            shared,
            schedule,
            poll,
            conns,
            rec,
            events: Vec::new(),
            notes: Vec::new(),
            connector,
            reread: Vec::new(),
            protocol_timers: std::collections::BinaryHeap::new(),
            in_flight: 0,
            sockets: 0,
            dial: Dial::new(cfg, &hooks, index),
            once: Once {
                server: true,
                tls: true,
            },
            prep,
            pace: Pace {
                sending_done: false,
                wake_at: None,
                horizon,
                end: cfg.ends.duration.map(|d| start + d),
                drain: cfg.ends.drain,
                never_sent: 0,
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
                streams_built: cfg.protocol.has_streams()
                    && hooks.as_ref().is_some_and(|h| h.builds_requests()),
                sessions_built: cfg.arrivals.shape.has_sessions()
                    && hooks.as_ref().is_some_and(|h| h.builds_requests()),
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
        let control = self.shared.control.clone();
        let clock = control.clock().clone();
        let mut next_timer = clock.now() + TIMER_TICK;
        let abandoned;
        if self.script.delays {
            // wrk waits out a delay before a connection's first request too.
            let now = clock.now();
            if let Drive::Pool(pool) = &mut self.drive {
                for ci in pool.hold_all() {
                    self.delay(ci, now);
                }
            }
        }
        loop {
            let now = clock.now();
            if self.script.stopped || control.stop.load(Ordering::Relaxed) {
                abandoned = self.in_flight + self.drive.given_up();
                break;
            }
            if let Some(end) = self.pace.end.filter(|e| now >= *e) {
                match self.pace.drain.take() {
                    // The duration is over: nothing more starts, and what is in
                    // flight has until the drain's end.
                    Some(d) if self.in_flight > 0 || self.drive.active() > 0 => {
                        self.close_schedule(end);
                        self.pace.end = Some(end + d);
                        continue;
                    }
                    _ => {
                        abandoned = self.in_flight + self.drive.given_up();
                        break;
                    }
                }
            }
            self.rec.roll(now);
            self.gauge();
            if now >= next_timer {
                self.timers(now);
                next_timer = now + TIMER_TICK;
            }
            if self.protocol_timers.peek().is_some_and(|t| t.0 .0 <= now) {
                self.timeouts(now);
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
            if let Some(t) = self.protocol_timers.peek() {
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
                // A manual clock's timers are met by bounded waits, not a timerfd.
                precise: waiter.precise() || clock.is_manual(),
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
            let waited = waiter.wait(self.poll.as_raw_fd(), clock.bound(timeout));
            let mut woke = blocked.map(|at| {
                let woke = Instant::now();
                me.idle(woke - at);
                match clock.is_manual() {
                    true => clock.now(),
                    false => woke,
                }
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
                let now = woke.take().unwrap_or_else(|| clock.now());
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
        let now = clock.now();
        for c in &mut self.conns {
            // The protocol's goodbye (QUIC's close, WebSocket's 1000), so that the
            // server lets the connection go at once and sees a clean close.
            c.part(true, now, &mut self.rec);
            // Gone, so that its congestion-limited time so far is counted.
            c.proto = self.connector.fresh();
            c.link.release(self.poll.registry());
        }
        if let Some(us) = self.connector.congestion_limited_us() {
            self.rec.quic.congestion_limited_us = us;
        }
        // Every arrival due before the end that was not started is counted, even one due
        // a moment before it: the arrivals then add up exactly (one or two of them stay
        // far below the 0.1 % that marks a run as behind).
        let never_sent = match self.pace.end {
            Some(end) if !self.pace.sending_done => self.drain_unsent(end.min(clock.now())),
            _ => self.pace.never_sent,
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
    /// The duration is over and a drain begins: the arrivals due before `end` that
    /// were never started are counted, and nothing more starts.
    fn close_schedule(&mut self, end: Instant) {
        if !self.pace.sending_done {
            self.pace.never_sent = self.drain_unsent(end);
            self.pace.sending_done = true;
        }
        self.pace.wake_at = None;
    }

    /// Takes every arrival due before `end` that was never started, each counted in
    /// the latency as censored at `end`; how many there were.
    fn drain_unsent(&mut self, end: Instant) -> u64 {
        let rec = &mut self.rec;
        (self.schedule).drain_due(end - Duration::from_nanos(1), &mut |t| {
            rec.censor(end.saturating_duration_since(t))
        })
    }

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
        self.published.publish(
            &self.shared.control,
            rec.tally.completed,
            failed,
            rec.tally.bytes_read,
        );
    }

    fn timers(&mut self, now: Instant) {
        let timeout = self.cfg.ends.timeout;
        let connect_timeout = self.cfg.ends.connect_timeout;
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
            let shaking = !c.proto.handshaken();
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
                if let (Some(t), Some(p)) = (self.cfg.ends.last_wait, c.pending.back()) {
                    if now - p.sent >= t && self.sent_last(ci) {
                        self.fail_and_close(ci, now, ErrorKind::Timeout);
                        continue;
                    }
                }
                if let Some(t) = self.cfg.ends.event_timeout {
                    if self.stalled(ci, now, t) {
                        self.fail_and_close(ci, now, ErrorKind::StreamStall);
                        continue;
                    }
                }
                if let Some(max) = self.cfg.ends.max_events {
                    if self.past_events(ci, max) {
                        self.fail_and_close(ci, now, ErrorKind::StreamEvent);
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
