//! The time an event loop reads: the machine's monotonic clock, or one that moves
//! only when a test moves it.
//!
//! The loops (the server's, the load engine's workers) take every `now` from the
//! [`Clock`] they were given, so their timers — idle and head timeouts, a linger, a
//! run's seconds and its request timeout — can be tested in simulated time: the test
//! makes a [`Clock::manual`], hands it to the loop, and [`Clock::advance`]s it past a
//! timeout instead of sleeping through one. A manual clock's moves wake no one, so a
//! loop that reads one blocks at most [`MANUAL_WAIT`] at a time ([`Clock::bound`])
//! and sees a move within that. The machine's clock is a `None` inside: reading it
//! costs one branch more than [`Instant::now`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The longest a loop on a manual clock blocks before it reads the clock again.
pub const MANUAL_WAIT: Duration = Duration::from_millis(1);

/// A loop's source of time (see the module's doc). The default is the machine's.
#[derive(Debug, Clone, Default)]
pub struct Clock(Option<Arc<Manual>>);

/// A manual clock's state: where it started on the machine's clock, and how far it
/// has been moved since, in nanoseconds.
#[derive(Debug)]
struct Manual {
    base: Instant,
    moved_ns: AtomicU64,
}

impl Clock {
    /// The machine's monotonic clock.
    pub fn real() -> Clock {
        Clock(None)
    }

    /// A clock that reads the machine's time once, now, and from then on moves only
    /// by [`Clock::advance`]. Its clones read and move the same time.
    pub fn manual() -> Clock {
        Clock(Some(Arc::new(Manual {
            base: Instant::now(),
            moved_ns: AtomicU64::new(0),
        })))
    }

    /// The time now.
    #[inline]
    pub fn now(&self) -> Instant {
        match &self.0 {
            None => Instant::now(),
            Some(m) => m.base + Duration::from_nanos(m.moved_ns.load(Ordering::Acquire)),
        }
    }

    /// Moves a manual clock (and its clones) on by `by`; the machine's clock cannot be
    /// moved, and is left alone.
    pub fn advance(&self, by: Duration) {
        if let Some(m) = &self.0 {
            let ns = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
            m.moved_ns.fetch_add(ns, Ordering::AcqRel);
        }
    }

    /// Whether this is a manual clock.
    pub fn is_manual(&self) -> bool {
        self.0.is_some()
    }

    /// How long a loop may block when its next timer is `timeout` away on this clock:
    /// that long on the machine's clock, at most [`MANUAL_WAIT`] on a manual one, whose
    /// moves the loop can only see by reading it.
    #[inline]
    pub fn bound(&self, timeout: Duration) -> Duration {
        match self.0 {
            None => timeout,
            Some(_) => timeout.min(MANUAL_WAIT),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_moved_and_its_clones_move_with_it() {
        let c = Clock::manual();
        let t0 = c.now();
        assert_eq!(c.now(), t0);
        let clone = c.clone();
        clone.advance(Duration::from_secs(3));
        assert_eq!(c.now() - t0, Duration::from_secs(3));
        assert_eq!(c.bound(Duration::from_secs(5)), MANUAL_WAIT);
        assert!(c.is_manual());
    }

    #[test]
    fn the_machines_clock_is_not_moved_and_bounds_nothing() {
        let c = Clock::real();
        let t0 = c.now();
        c.advance(Duration::from_secs(3600));
        assert!(c.now() - t0 < Duration::from_secs(3600));
        assert_eq!(c.bound(Duration::from_secs(5)), Duration::from_secs(5));
        assert!(!Clock::default().is_manual());
    }
}
