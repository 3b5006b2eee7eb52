//! What every crate's tests share: waiting for a condition that another thread or
//! process brings about and that no event marks (a row another process stores, a
//! process gone, a count another thread reaches), polled on a short interval and
//! bounded in time, instead of sleeping for a guessed time.
//!
//! Tests wait on readiness wherever something marks it (a line read, an answer, a
//! channel, the live view's seconds, a manual clock's move); this poll is for the
//! rest, and its interval is the one sleep of the tests that wait.
#![forbid(unsafe_code)]

use std::time::{Duration, Instant};

/// How long apart the condition is looked at.
pub const INTERVAL: Duration = Duration::from_millis(10);

/// Waits until `ready` gives a value, or fails the test naming `what` after `within`.
pub fn eventually<T>(what: &str, within: Duration, ready: impl FnMut() -> Option<T>) -> T {
    poll(within, ready).unwrap_or_else(|| panic!("{what}: not within {within:?}"))
}

/// What `ready` gives within `within`, or `None` when it gave nothing by then (see
/// [`eventually`], which fails the test instead).
pub fn poll<T>(within: Duration, mut ready: impl FnMut() -> Option<T>) -> Option<T> {
    let until = Instant::now() + within;
    loop {
        if let Some(v) = ready() {
            return Some(v);
        }
        if Instant::now() >= until {
            return None;
        }
        // Nothing marks the moment: look again shortly.
        std::thread::sleep(INTERVAL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_condition_met_later_is_waited_for_and_one_never_met_is_not() {
        let mut calls = 0;
        assert_eq!(
            poll(Duration::from_secs(5), || {
                calls += 1;
                (calls == 3).then_some(calls)
            }),
            Some(3)
        );
        let t0 = Instant::now();
        assert_eq!(poll(Duration::from_millis(30), || None::<()>), None);
        assert!(t0.elapsed() >= Duration::from_millis(30));
    }

    #[test]
    #[should_panic(expected = "the thing: not within")]
    fn eventually_names_what_never_came() {
        eventually("the thing", Duration::from_millis(20), || None::<()>);
    }
}
