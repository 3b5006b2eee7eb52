//! What the lab's unit tests share: waiting for a condition another process or
//! thread brings about (a process gone, a line read), polled on a short interval and
//! bounded, instead of sleeping for a guessed time.

use std::time::{Duration, Instant};

/// Polls `ready` every 10 ms until it holds; panics naming `what` after `within`.
pub(crate) fn eventually(what: &str, within: Duration, mut ready: impl FnMut() -> bool) {
    let until = Instant::now() + within;
    while !ready() {
        assert!(Instant::now() < until, "{what}: not within {within:?}");
        // The poll's interval: the one sleep of the lab's tests that wait.
        std::thread::sleep(Duration::from_millis(10));
    }
}
