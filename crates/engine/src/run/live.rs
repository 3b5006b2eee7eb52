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

use crate::measure::result::Interval;
use crate::measure::second::RawInterval;
use crate::run::control::Control;

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
    pub fn poll(&mut self, control: &Control) -> Vec<Interval> {
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
            ready.extend(entry.remove());
        }
        crate::measure::recorder::merge_intervals(ready)
    }
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
        let ts: Vec<(u32, u64)> = got.iter().map(|i| (i.t, i.completed)).collect();
        assert_eq!(ts, [(0, 6), (1, 2), (2, 3)]);
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
        assert_eq!((got[0].t, got[0].completed), (0, 8));
        assert_eq!(got[0].connections, 4, "peaks add up");
        assert_eq!(got[0].latency.count, 2);
        control.publish_second(piece(1, 1));
        let got = live.poll(&control);
        assert_eq!((got[0].t, got[0].completed), (1, 8));
    }
}
