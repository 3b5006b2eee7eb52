//! The run's switchboard: the stop switch, live counters, and the seconds a watched
//! run hands over to a live view.
//!
//! Workers write it, whoever watches the run (the terminal's progress line, the live
//! view, the recorder's per-second publication) reads it; none of them needs to know
//! the worker.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use stampede_wire::clock::Clock;

use crate::measure::raw::{RawOut, RawSink};
use crate::measure::second::RawInterval;

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
    /// Whether workers hand over each finished second (see [`Control::watched`]).
    pub(crate) watched: bool,
    /// What the workers handed over and the watcher has not yet taken, and the
    /// signal of each hand-over, which a watcher that waits ([`Control::wait_handed`])
    /// blocks on.
    handed: (Mutex<Handed>, Condvar),
    /// Where each request's record goes, when they are streamed out.
    raw: Mutex<Option<RawOut>>,
    /// The time the workers read (see [`Control::on`]).
    clock: Clock,
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

    /// This control, its run's workers reading `clock`: a manual clock
    /// ([`Clock::manual`]) runs them in simulated time — their seconds, timeouts,
    /// arrivals and latencies counted on it, moved by whoever holds a clone — with
    /// the kernel's arrival stamps left aside (they are on the machine's clock).
    pub fn on(self, clock: Clock) -> Control {
        Control { clock, ..self }
    }

    /// The time the run's workers read.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// Streams one record per request to `out` (see [`crate::raw_writer`]); call
    /// before the run, and [`Control::close_records`] after it.
    pub fn record_to(&self, out: RawOut) {
        *self.raw.lock().unwrap_or_else(|e| e.into_inner()) = Some(out);
    }

    /// The run has ended: lets the records' writer finish once the workers' last
    /// records are in.
    pub fn close_records(&self) {
        self.raw.lock().unwrap_or_else(|e| e.into_inner()).take();
    }

    /// A worker's end of the records, when they are streamed out.
    pub(crate) fn raw_sink(
        &self,
        worker: u32,
        places: &[u32],
        start: std::time::Instant,
        start_unix_us: u64,
    ) -> Option<RawSink> {
        self.raw
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(|o| RawSink::new(o, worker, places, start, start_unix_us))
    }

    /// Asks every worker to stop.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// What was handed over and not yet taken.
    fn handed(&self) -> std::sync::MutexGuard<'_, Handed> {
        self.handed.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Called by a worker once a second while watched.
    pub(crate) fn publish_second(&self, raw: RawInterval) {
        self.handed().seconds.push(raw);
        self.handed.1.notify_all();
    }

    /// Blocks while nothing handed over waits to be taken, until `until` on the
    /// machine's clock; whether something does.
    pub(crate) fn wait_handed(&self, until: Instant) -> bool {
        let mut h = self.handed();
        while h.seconds.is_empty() && h.retired.is_empty() {
            let left = until.saturating_duration_since(Instant::now());
            if left == Duration::ZERO {
                return false;
            }
            h = (self.handed.1.wait_timeout(h, left))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        true
    }

    /// The seconds published since the last call.
    pub(crate) fn take_seconds(&self) -> Vec<RawInterval> {
        std::mem::take(&mut self.handed().seconds)
    }

    /// Called by a watched worker as it ends, after publishing its last second `last`:
    /// later seconds no longer wait for it.
    pub(crate) fn retire(&self, last: u32) {
        self.handed().retired.push(last);
        self.handed.1.notify_all();
    }

    /// The workers retired since the last call, by their last second.
    pub(crate) fn take_retired(&self) -> Vec<u32> {
        std::mem::take(&mut self.handed().retired)
    }
}

/// What the workers hand a watched run's watcher: each finished second, and the last
/// second of each worker that has ended.
#[derive(Debug, Default)]
struct Handed {
    seconds: Vec<RawInterval>,
    retired: Vec<u32>,
}
