//! The run's switchboard: the stop switch, live counters, and the seconds a watched
//! run hands over to a live view.
//!
//! Workers write it, whoever watches the run (the terminal's progress line, the live
//! view, the recorder's per-second publication) reads it; none of them needs to know
//! the worker.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

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
    /// Whether workers send each finished second to `seconds` (see [`Control::watched`]).
    pub(crate) watched: bool,
    seconds: Mutex<Vec<RawInterval>>,
    /// The last second of each worker that has ended (see [`Control::retire`]).
    retired: Mutex<Vec<u32>>,
    /// Where each request's record goes, when they are streamed out.
    raw: Mutex<Option<RawOut>>,
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

    /// Called by a worker once a second while watched.
    pub(crate) fn publish_second(&self, raw: RawInterval) {
        self.seconds
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(raw);
    }

    /// The seconds published since the last call.
    pub(crate) fn take_seconds(&self) -> Vec<RawInterval> {
        std::mem::take(&mut *self.seconds.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Called by a watched worker as it ends, after publishing its last second `last`:
    /// later seconds no longer wait for it.
    pub(crate) fn retire(&self, last: u32) {
        self.retired
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(last);
    }

    /// The workers retired since the last call, by their last second.
    pub(crate) fn take_retired(&self) -> Vec<u32> {
        std::mem::take(&mut *self.retired.lock().unwrap_or_else(|e| e.into_inner()))
    }
}
