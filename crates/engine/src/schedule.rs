//! Who sends next, and when it was meant to start — without reading a clock.
//!
//! A [`Schedule`] is consulted by the worker loop whenever a connection is free. It
//! takes the current time as an argument and answers with a [`Next`]; it never reads a
//! clock or touches a socket, so every load shape is tested in simulated time, exactly.
//! The intended start it returns is what latency is measured from (wrk2's correction
//! for coordinated omission); in the closed model a request is meant to start the moment
//! a connection is free, so intended and actual start coincide.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// The schedule's answer for a free connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Send a request now; it was meant to start at `intended`.
    Send {
        /// The request's intended start.
        intended: Instant,
    },
    /// Nothing to send before this time.
    Wait(Instant),
    /// Nothing more will be sent.
    Done,
}

/// Decides when requests start. One worker loop serves every implementation.
pub trait Schedule: Send {
    /// Called with the current time whenever a connection could send.
    fn next(&mut self, now: Instant) -> Next;
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

    /// Takes one request from the budget; false when it is spent.
    pub fn claim(&self) -> bool {
        match self.limit {
            None => true,
            Some(limit) => {
                // Relaxed is enough: only the count matters, not ordering with other memory.
                self.claimed.fetch_add(1, Ordering::Relaxed) < limit
            }
        }
    }
}

/// The closed model: a free connection sends at once, until the request budget or the
/// deadline runs out.
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
    fn next(&mut self, now: Instant) -> Next {
        if self.end.is_some_and(|end| now >= end) || !self.budget.claim() {
            return Next::Done;
        }
        Next::Send { intended: now }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

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
                match s.next(now) {
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
        assert!(matches!(s.next(t0), Next::Send { .. }));
        assert!(matches!(
            s.next(end - Duration::from_nanos(1)),
            Next::Send { .. }
        ));
        assert_eq!(s.next(end), Next::Done);
    }
}
