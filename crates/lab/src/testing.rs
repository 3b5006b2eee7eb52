//! What the lab's unit tests share: waiting for a condition another process or
//! thread brings about (a process gone, a line read), polled as every crate's tests
//! poll, bounded, instead of sleeping for a guessed time.

use std::time::Duration;

/// Waits until `ready` holds; panics naming `what` after `within`.
pub(crate) fn eventually(what: &str, within: Duration, mut ready: impl FnMut() -> bool) {
    stampede_testing::eventually(what, within, || ready().then_some(()));
}
