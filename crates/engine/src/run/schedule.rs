//! Who sends next, and when it was meant to start — without reading a clock.
//!
//! A [`Schedule`] is consulted by the worker loop whenever it could start something:
//! a request on a free connection (pool shapes) or a new session (user shapes). It takes
//! the current time and the number of sessions active as arguments and answers with a
//! [`Next`]; it never reads a clock or touches a socket, so every load shape is tested
//! in simulated time, exactly. The intended start it returns is what latency is measured
//! from (wrk2's correction for coordinated omission): an arrival that could not be sent
//! on time keeps its intended start, so the wait counts against the server.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::spec::inject::Profile;

/// The schedule's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Start one now; it was meant to start at `intended`.
    Send {
        /// The intended start.
        intended: Instant,
    },
    /// Nothing to start before this time (or before a session ends).
    Wait(Instant),
    /// Nothing more will start.
    Done,
}

/// Decides when requests or sessions start. One worker loop serves every implementation.
pub trait Schedule: Send {
    /// Called with the current time and the number of this worker's sessions in progress.
    fn next(&mut self, now: Instant, active: usize) -> Next;

    /// Arrivals due at or before `until` that were never started (counted at the end of a
    /// run whose generator fell behind), each one's intended start handed to `each`.
    /// Consumes them.
    fn drain_due(&mut self, _until: Instant, _each: &mut dyn FnMut(Instant)) -> u64 {
        0
    }

    /// Whether an arrival is due at `now`, without taking it (open shapes only).
    fn is_due(&mut self, _now: Instant) -> bool {
        false
    }

    /// Whether the run's request count is spent: nothing more will start, though the
    /// schedule has not yet been asked (pool shapes with a count).
    fn spent(&self) -> bool {
        false
    }

    /// How early a start may go out: one that falls due within this of `now` is
    /// answered [`Next::Send`], so that a loop that is awake (woken by the start due
    /// first, or by a socket) sends what falls due in the next moments with it, rather
    /// than sleeping and waking for each (open shapes; zero for the others).
    fn horizon(&self) -> Duration {
        Duration::ZERO
    }
}

/// A request budget shared by all workers of a count-bounded run.
#[derive(Debug)]
pub struct Budget {
    limit: Option<u64>,
    claimed: AtomicU64,
}

impl Budget {
    /// A budget of `limit` requests, or unlimited.
    pub fn new(limit: Option<u64>) -> Budget {
        Budget {
            limit,
            claimed: AtomicU64::new(0),
        }
    }

    /// Takes one from the budget; false when it is spent.
    pub fn claim(&self) -> bool {
        match self.limit {
            None => true,
            // Relaxed is enough: only the count matters, not ordering with other memory.
            Some(limit) => self.claimed.fetch_add(1, Ordering::Relaxed) < limit,
        }
    }

    /// Whether every request of the budget has been claimed.
    pub fn spent(&self) -> bool {
        self.limit
            .is_some_and(|limit| self.claimed.load(Ordering::Relaxed) >= limit)
    }
}

/// The closed model: a free connection sends at once, until the budget or the deadline
/// runs out.
#[derive(Debug)]
pub struct Closed {
    budget: Arc<Budget>,
    end: Option<Instant>,
}

impl Closed {
    /// A closed schedule drawing on `budget` and ending at `end`, if given.
    pub fn new(budget: Arc<Budget>, end: Option<Instant>) -> Closed {
        Closed { budget, end }
    }
}

impl Schedule for Closed {
    fn next(&mut self, now: Instant, _active: usize) -> Next {
        if self.end.is_some_and(|end| now >= end) || !self.budget.claim() {
            return Next::Done;
        }
        Next::Send { intended: now }
    }

    fn spent(&self) -> bool {
        self.budget.spent()
    }
}

/// The open model: starts follow an arrival process (offsets from `start`), whatever
/// happens to earlier ones.
pub struct Open<I> {
    start: Instant,
    end: Option<Instant>,
    arrivals: I,
    peeked: Option<Duration>,
    budget: Arc<Budget>,
    horizon: Duration,
}

impl<I: Iterator<Item = Duration> + Send> Open<I> {
    /// Arrivals `arrivals` (offsets from `start`), none at or after `end`, at most the
    /// budget's count.
    pub fn new(start: Instant, end: Option<Instant>, arrivals: I, budget: Arc<Budget>) -> Self {
        Open {
            start,
            end,
            arrivals,
            peeked: None,
            budget,
            horizon: Duration::ZERO,
        }
    }

    /// Starts due within `horizon` of the time asked about are sent then (see
    /// [`Schedule::horizon`]).
    pub fn with_horizon(mut self, horizon: Duration) -> Self {
        self.horizon = horizon;
        self
    }

    fn peek(&mut self) -> Option<Instant> {
        if self.peeked.is_none() {
            self.peeked = self.arrivals.next();
        }
        let t = self.start + self.peeked?;
        self.end.is_none_or(|e| t < e).then_some(t)
    }
}

impl<I: Iterator<Item = Duration> + Send> Schedule for Open<I> {
    fn next(&mut self, now: Instant, _active: usize) -> Next {
        let Some(t) = self.peek() else {
            return Next::Done;
        };
        if t > now + self.horizon {
            return Next::Wait(t);
        }
        if !self.budget.claim() {
            return Next::Done;
        }
        self.peeked = None;
        Next::Send { intended: t }
    }

    fn is_due(&mut self, now: Instant) -> bool {
        self.peek().is_some_and(|t| t <= now)
    }

    fn drain_due(&mut self, until: Instant, each: &mut dyn FnMut(Instant)) -> u64 {
        let mut n = 0;
        while let Some(t) = self.peek() {
            if t > until || !self.budget.claim() {
                break;
            }
            self.peeked = None;
            each(t);
            n += 1;
        }
        n
    }

    fn spent(&self) -> bool {
        self.budget.spent()
    }

    fn horizon(&self) -> Duration {
        self.horizon
    }
}

/// Gatling's closed injection: keeps this worker's share of the profile's target
/// concurrency active; a user that finishes is replaced at once.
pub struct ClosedUsers {
    start: Instant,
    profile: Arc<Profile>,
    worker: usize,
    workers: usize,
}

impl ClosedUsers {
    /// Worker `worker` of `workers` following `profile` from `start`.
    pub fn new(start: Instant, profile: Arc<Profile>, worker: usize, workers: usize) -> Self {
        ClosedUsers {
            start,
            profile,
            worker,
            workers: workers.max(1),
        }
    }
}

impl Schedule for ClosedUsers {
    fn next(&mut self, now: Instant, active: usize) -> Next {
        let t = now.saturating_duration_since(self.start);
        if t >= self.profile.duration() {
            return Next::Done;
        }
        let total = self.profile.concurrency_at(t);
        // This worker's share: the total split as evenly as possible.
        let share = (total + (self.workers - 1 - self.worker) as u64) / self.workers as u64;
        if (active as u64) < share {
            Next::Send { intended: now }
        } else {
            // Targets ramp: look again shortly, or when a user finishes.
            Next::Wait(now + Duration::from_millis(10))
        }
    }
}

/// httperf without a rate: `count` sessions one after another.
pub struct Sequential {
    left: u64,
}

impl Sequential {
    /// `count` sessions, one at a time.
    pub fn new(count: u64) -> Sequential {
        Sequential { left: count }
    }
}

impl Schedule for Sequential {
    fn next(&mut self, now: Instant, active: usize) -> Next {
        if self.left == 0 {
            return Next::Done;
        }
        if active > 0 {
            return Next::Wait(now + Duration::from_secs(3600));
        }
        self.left -= 1;
        Next::Send { intended: now }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::arrivals::{Fixed, Stride};

    #[test]
    fn open_sends_what_falls_due_within_the_horizon_and_no_more() {
        // 10,000 a second: one every 100 µs; a 250 µs horizon.
        let t0 = Instant::now();
        let us = |n| t0 + Duration::from_micros(n);
        let mut s = Open::new(t0, None, Fixed::new(10_000.0), Arc::new(Budget::new(None)))
            .with_horizon(Duration::from_micros(250));
        assert_eq!(s.horizon(), Duration::from_micros(250));
        // Awake at 0: the starts due at 0, 100 and 200 µs go now, each with its own
        // intended start; the one at 300 µs is waited for.
        let mut sent = Vec::new();
        let wait = loop {
            match s.next(us(0), 0) {
                Next::Send { intended } => sent.push(intended),
                Next::Wait(t) => break t,
                Next::Done => unreachable!(),
            }
        };
        assert_eq!(sent, vec![us(0), us(100), us(200)]);
        assert_eq!(wait, us(300));
        // Woken at 300 µs (late by 20): up to 570 µs.
        let mut sent = Vec::new();
        while let Next::Send { intended } = s.next(us(320), 0) {
            sent.push(intended);
        }
        assert_eq!(sent, vec![us(300), us(400), us(500)]);
        // Without a horizon only what is due goes.
        let mut exact = Open::new(t0, None, Fixed::new(10_000.0), Arc::new(Budget::new(None)));
        assert_eq!(exact.horizon(), Duration::ZERO);
        assert_eq!(exact.next(us(0), 0), Next::Send { intended: us(0) });
        assert_eq!(exact.next(us(99), 0), Next::Wait(us(100)));
        // Nothing at or after the end goes early.
        let mut ending = Open::new(
            t0,
            Some(us(150)),
            Fixed::new(10_000.0),
            Arc::new(Budget::new(None)),
        )
        .with_horizon(Duration::from_millis(1));
        assert_eq!(ending.next(us(0), 0), Next::Send { intended: us(0) });
        assert_eq!(ending.next(us(0), 0), Next::Send { intended: us(100) });
        assert_eq!(ending.next(us(0), 0), Next::Done);
    }

    #[test]
    fn closed_sends_exactly_the_budget_across_schedules() {
        let budget = Arc::new(Budget::new(Some(5)));
        let t0 = Instant::now();
        let mut a = Closed::new(budget.clone(), None);
        let mut b = Closed::new(budget, None);
        let mut sent = 0;
        for i in 0..10 {
            let now = t0 + Duration::from_millis(i);
            for s in [&mut a as &mut dyn Schedule, &mut b] {
                match s.next(now, 0) {
                    Next::Send { intended } => {
                        assert_eq!(intended, now);
                        sent += 1;
                    }
                    Next::Done => {}
                    Next::Wait(_) => panic!("closed never waits"),
                }
            }
        }
        assert_eq!(sent, 5);
    }

    #[test]
    fn closed_stops_at_the_deadline() {
        let t0 = Instant::now();
        let end = t0 + Duration::from_secs(2);
        let mut s = Closed::new(Arc::new(Budget::new(None)), Some(end));
        assert!(matches!(s.next(t0, 0), Next::Send { .. }));
        assert!(matches!(
            s.next(end - Duration::from_nanos(1), 0),
            Next::Send { .. }
        ));
        assert_eq!(s.next(end, 0), Next::Done);
    }

    /// Drives a schedule in simulated time with steps of `dt`, returning intended starts.
    fn simulate(s: &mut dyn Schedule, t0: Instant, until: Duration, dt: Duration) -> Vec<Duration> {
        let mut out = Vec::new();
        let mut now = t0;
        while now <= t0 + until {
            loop {
                match s.next(now, 0) {
                    Next::Send { intended } => {
                        assert!(intended <= now);
                        out.push(intended - t0);
                    }
                    Next::Wait(t) => {
                        assert!(t > now);
                        break;
                    }
                    Next::Done => return out,
                }
            }
            now += dt;
        }
        out
    }

    #[test]
    fn fixed_rate_keeps_intended_times_when_late() {
        let t0 = Instant::now();
        let end = t0 + Duration::from_secs(1);
        let mut s = Open::new(
            t0,
            Some(end),
            Fixed::new(100.0),
            Arc::new(Budget::new(None)),
        );
        // Polled only every 50 ms: arrivals still carry their own 10 ms grid.
        let got = simulate(
            &mut s,
            t0,
            Duration::from_secs(2),
            Duration::from_millis(50),
        );
        assert_eq!(got.len(), 100);
        for (k, d) in got.iter().enumerate() {
            assert_eq!(*d, Duration::from_millis(10 * k as u64));
        }
    }

    #[test]
    fn rate_split_over_workers_keeps_the_global_rate() {
        let t0 = Instant::now();
        let end = t0 + Duration::from_secs(1);
        let mut all = Vec::new();
        for w in 0..3 {
            let arr = Stride::new(Fixed::new(300.0), w, 3);
            let mut s = Open::new(t0, Some(end), arr, Arc::new(Budget::new(None)));
            all.extend(simulate(
                &mut s,
                t0,
                Duration::from_secs(2),
                Duration::from_millis(1),
            ));
        }
        all.sort();
        assert_eq!(all.len(), 300);
        assert!(all
            .windows(2)
            .all(|w| w[1] - w[0] <= Duration::from_micros(3_334)));
    }

    #[test]
    fn drain_due_counts_what_was_never_sent() {
        let t0 = Instant::now();
        let mut s = Open::new(
            t0,
            Some(t0 + Duration::from_secs(1)),
            Fixed::new(1000.0),
            Arc::new(Budget::new(None)),
        );
        assert!(matches!(s.next(t0, 0), Next::Send { .. }));
        let mut starts = Vec::new();
        let n = s.drain_due(t0 + Duration::from_millis(100), &mut |t| starts.push(t));
        assert_eq!(n, 100);
        assert_eq!(starts.len(), 100);
        assert!(starts.windows(2).all(|w| w[0] < w[1]));
        assert!(starts.iter().all(|t| *t <= t0 + Duration::from_millis(100)));
    }

    #[test]
    fn closed_users_follow_the_target_and_split_it() {
        let profile =
            Arc::new(Profile::parse(&["rampConcurrentUsers(0).to(10).during(10)".into()]).unwrap());
        let t0 = Instant::now();
        let mut a = ClosedUsers::new(t0, profile.clone(), 0, 2);
        let mut b = ClosedUsers::new(t0, profile, 1, 2);
        let at = |s: u64| t0 + Duration::from_secs(s);
        // At 5 s the target is 5: worker 0 keeps 3, worker 1 keeps 2.
        assert!(matches!(a.next(at(5), 2), Next::Send { .. }));
        assert!(matches!(a.next(at(5), 3), Next::Wait(_)));
        assert!(matches!(b.next(at(5), 1), Next::Send { .. }));
        assert!(matches!(b.next(at(5), 2), Next::Wait(_)));
        assert_eq!(a.next(at(10), 0), Next::Done);
    }

    #[test]
    fn sequential_runs_one_session_at_a_time() {
        let t0 = Instant::now();
        let mut s = Sequential::new(2);
        assert!(matches!(s.next(t0, 0), Next::Send { .. }));
        assert!(matches!(s.next(t0, 1), Next::Wait(_)));
        assert!(matches!(s.next(t0, 0), Next::Send { .. }));
        assert_eq!(s.next(t0, 0), Next::Done);
    }
}
