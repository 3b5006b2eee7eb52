//! A live view of a run in progress: each second, merged across workers, as soon as
//! every worker has finished it.
//!
//! A run started with [`Control::watched`] has its workers hand over each second they
//! finish (counters, gauges and both histograms, serialised). [`Live`] collects those
//! pieces and releases a second once all workers have sent theirs, merged exactly as
//! the final result merges them, so a live chart and the report agree. A worker that
//! has ended (its users done while others still wait on outstanding requests) is not
//! waited for past its last second.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use hdrhistogram::serialization::Deserializer;

use crate::error::ErrorKind;
use crate::measure::result::{Hist, Interval};
use crate::measure::second::RawInterval;
use crate::run::control::Control;

/// One second of a watched run, all workers merged: what the result's interval says,
/// and the breakdown live outputs (metrics) need besides.
#[derive(Debug, Clone)]
pub struct LiveSecond {
    /// The second as the result will have it.
    pub interval: Interval,
    /// Responses by status in the second, by status.
    pub statuses: Vec<(u16, u64)>,
    /// Failures by kind in the second, in [`ErrorKind::ALL`]'s order.
    pub errors: Vec<(ErrorKind, u64)>,
    /// The send lags of the requests started in the second, µs.
    pub send_lag: Hist,
    /// For a run of several requests (a journey's steps, a targets file): each one
    /// that moved in the second, by its slot (named by
    /// [`crate::measure::targets::target_name`]).
    pub targets: Vec<crate::measure::targets::LiveTarget>,
}

/// Gathers the seconds a watched run publishes. Poll it from any thread.
#[derive(Debug)]
pub struct Live {
    workers: usize,
    pending: BTreeMap<u32, Vec<RawInterval>>,
    /// The last second of each worker that has ended.
    retired: Vec<u32>,
}

impl Live {
    /// A view of a run with `workers` worker threads (`Load::threads`).
    pub fn new(workers: usize) -> Live {
        Live {
            workers: workers.max(1),
            pending: BTreeMap::new(),
            retired: Vec::new(),
        }
    }

    /// The seconds every worker has finished since the last call, oldest first. A
    /// second some worker has not finished yet waits for the next call.
    pub fn poll(&mut self, control: &Control) -> Vec<LiveSecond> {
        for raw in control.take_seconds() {
            self.pending.entry(raw.t).or_default().push(raw);
        }
        self.retired.extend(control.take_retired());
        let mut ready = Vec::new();
        while let Some(entry) = self.pending.first_entry() {
            let t = *entry.key();
            let gone = self.retired.iter().filter(|&&last| last < t).count();
            if entry.get().len() < self.workers.saturating_sub(gone) {
                break;
            }
            ready.push(entry.remove());
        }
        ready.into_iter().filter_map(second).collect()
    }

    /// Every second left, once the run is over (every worker has filed its last):
    /// those still waiting for a worker that filed nothing for them are whole too.
    pub fn finish(&mut self, control: &Control) -> Vec<LiveSecond> {
        let mut out = self.poll(control);
        let left = std::mem::take(&mut self.pending);
        out.extend(left.into_values().filter_map(second));
        out
    }

    /// Like [`Live::poll`], but blocks while no second is ready, for `within` at most
    /// (then it gives none): a watcher that follows the run as its seconds come,
    /// without polling on a guessed interval.
    pub fn wait(&mut self, control: &Control, within: Duration) -> Vec<LiveSecond> {
        let until = Instant::now() + within;
        loop {
            let ready = self.poll(control);
            if !ready.is_empty() || !control.wait_handed(until) {
                return ready;
            }
        }
    }
}

/// Merges the workers' pieces of one second.
fn second(mut pieces: Vec<RawInterval>) -> Option<LiveSecond> {
    let mut statuses = BTreeMap::<u16, u64>::new();
    let mut errors = [0u64; ErrorKind::ALL.len()];
    let mut send_lag = Hist::default();
    let mut targets = BTreeMap::<u32, crate::measure::targets::LiveTarget>::new();
    let mut de = Deserializer::new();
    for extra in pieces.iter_mut().filter_map(|p| p.extra.take()) {
        for d in extra.targets {
            let t = (targets.entry(d.slot))
                .or_insert_with(|| crate::measure::targets::LiveTarget::new(d.slot as usize));
            t.completed += d.completed;
            t.failed += d.failed;
            if !d.latency.is_empty() {
                let h: hdrhistogram::Histogram<u64> = de
                    .deserialize(&mut &d.latency[..])
                    .expect("a histogram this process serialised");
                // Same bounds and precision: the addition cannot fail.
                let _ = t.latency.0.add(&h);
            }
        }
        for (code, n) in extra.statuses {
            *statuses.entry(code).or_default() += n;
        }
        for (kind, n) in extra.errors {
            if let Some(e) = errors.get_mut(kind) {
                *e += n;
            }
        }
        if !extra.send_lag.is_empty() {
            let h: hdrhistogram::Histogram<u64> = de
                .deserialize(&mut &extra.send_lag[..])
                .expect("a histogram this process serialised");
            send_lag.add(&Hist(h));
        }
    }
    let interval = crate::measure::recorder::merge_intervals(pieces).pop()?;
    Some(LiveSecond {
        interval,
        statuses: statuses.into_iter().collect(),
        errors: ErrorKind::ALL
            .iter()
            .zip(errors)
            .filter(|(_, n)| *n > 0)
            .map(|(k, n)| (*k, n))
            .collect(),
        send_lag,
        targets: targets.into_values().collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::recorder::Gauges;

    fn piece(t: u32, completed: u64) -> RawInterval {
        use hdrhistogram::serialization::{Serializer, V2Serializer};
        let mut h = crate::measure::result::new_histogram();
        h.record(100 * completed).unwrap();
        let mut bytes = Vec::new();
        V2Serializer::new().serialize(&h, &mut bytes).unwrap();
        RawInterval {
            t,
            completed,
            failed: 0,
            bytes_read: 0,
            events: 0,
            hist: bytes.clone(),
            hist_uncorrected: bytes,
            gauges: Gauges {
                connections: 2,
                in_flight: 1,
                users: 0,
            },
            extra: None,
        }
    }

    #[test]
    fn a_retired_worker_is_not_waited_for_after_its_last_second() {
        let control = Control::watched();
        let mut live = Live::new(2);
        control.publish_second(piece(0, 5));
        control.retire(0);
        control.publish_second(piece(0, 1));
        control.publish_second(piece(1, 2));
        control.publish_second(piece(2, 3));
        let got = live.poll(&control);
        let ts: Vec<(u32, u64)> = got
            .iter()
            .map(|s| (s.interval.t, s.interval.completed))
            .collect();
        assert_eq!(ts, [(0, 6), (1, 2), (2, 3)]);
    }

    #[test]
    fn once_the_run_is_over_every_second_left_is_given() {
        let control = Control::watched();
        let mut live = Live::new(2);
        // Worker 2 filed second 0 only and never said it retired.
        control.publish_second(piece(0, 5));
        control.publish_second(piece(0, 1));
        control.publish_second(piece(1, 2));
        control.publish_second(piece(2, 1));
        let ts = |got: Vec<LiveSecond>| -> Vec<(u32, u64)> {
            (got.iter())
                .map(|s| (s.interval.t, s.interval.completed))
                .collect()
        };
        assert_eq!(ts(live.poll(&control)), [(0, 6)]);
        assert_eq!(ts(live.finish(&control)), [(1, 2), (2, 1)]);
        assert!(live.finish(&control).is_empty());
    }

    #[test]
    fn a_second_waits_for_every_worker() {
        let control = Control::watched();
        let mut live = Live::new(2);
        control.publish_second(piece(0, 5));
        control.publish_second(piece(1, 7));
        assert!(live.poll(&control).is_empty(), "worker 2 has sent nothing");
        control.publish_second(piece(0, 3));
        let got = live.poll(&control);
        assert_eq!(got.len(), 1);
        let i = &got[0].interval;
        assert_eq!((i.t, i.completed), (0, 8));
        assert_eq!(i.connections, 4, "peaks add up");
        assert_eq!(i.latency.count, 2);
        control.publish_second(piece(1, 1));
        let got = live.poll(&control);
        assert_eq!((got[0].interval.t, got[0].interval.completed), (1, 8));
    }
}
