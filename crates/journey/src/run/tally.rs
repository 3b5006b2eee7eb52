//! What a journey's users are counted by: each thread's tally (journeys begun,
//! completed and failed, their lifetimes, each step's checks and misses), handed to
//! the run's as it goes; and the figures read from it, live and at the end.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

/// What the users counted.
pub(super) struct Tally {
    pub(super) started: u64,
    pub(super) completed: u64,
    pub(super) failed: u64,
    /// Each step's failed checks and missed captures, by name.
    pub(super) checks: Vec<BTreeMap<String, u64>>,
    pub(super) missed: Vec<BTreeMap<String, u64>>,
    /// Completed journeys' durations, µs.
    pub(super) lifetime: Histogram<u64>,
    /// Journeys begun, by the file's journey.
    pub(super) by_route: Vec<u64>,
    /// Each step's checks, by name: how many times each was made.
    pub(super) checked: Vec<BTreeMap<String, u64>>,
    /// Journeys that ended before their last step (a capture that missed, an answer
    /// that never came, a step that could not be made), of the failed.
    pub(super) broken: u64,
    /// The durations of journeys walked to their end (checks passed or not), µs.
    pub(super) walked: Histogram<u64>,
}

impl Tally {
    pub(super) fn new(steps: usize, routes: usize) -> Tally {
        Tally {
            by_route: vec![0; routes],
            checked: vec![BTreeMap::new(); steps],
            broken: 0,
            walked: Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds"),
            started: 0,
            completed: 0,
            failed: 0,
            checks: vec![BTreeMap::new(); steps],
            missed: vec![BTreeMap::new(); steps],
            lifetime: Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds"),
        }
    }

    pub(super) fn add(&mut self, o: &Tally) {
        self.started += o.started;
        self.completed += o.completed;
        self.failed += o.failed;
        for (mine, theirs) in self.checks.iter_mut().zip(&o.checks) {
            for (k, n) in theirs {
                *mine.entry(k.clone()).or_default() += n;
            }
        }
        for (mine, theirs) in self.missed.iter_mut().zip(&o.missed) {
            for (k, n) in theirs {
                *mine.entry(k.clone()).or_default() += n;
            }
        }
        let _ = self.lifetime.add(&o.lifetime);
        for (mine, theirs) in self.by_route.iter_mut().zip(&o.by_route) {
            *mine += theirs;
        }
        for (mine, theirs) in self.checked.iter_mut().zip(&o.checked) {
            for (k, n) in theirs {
                *mine.entry(k.clone()).or_default() += n;
            }
        }
        self.broken += o.broken;
        let _ = self.walked.add(&o.walked);
    }

    /// Back to nothing counted, its allocations kept.
    pub(super) fn clear(&mut self) {
        (self.started, self.completed, self.failed, self.broken) = (0, 0, 0, 0);
        for m in (self.checks.iter_mut())
            .chain(&mut self.missed)
            .chain(&mut self.checked)
        {
            m.clear();
        }
        self.by_route.iter_mut().for_each(|n| *n = 0);
        self.lifetime.reset();
        self.walked.reset();
    }
}

/// A journey's users so far and each step's failed checks and missed captures, as
/// (step, check or capture, failures).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LiveJourneys {
    pub started: u64,
    pub completed: u64,
    pub failed: u64,
    /// Of the failed, those that ended before their last step.
    pub broken: u64,
    pub checks_failed: Vec<(String, String, u64)>,
}

/// What the users did, beside the run's sessions.
#[derive(Debug, Clone)]
pub struct JourneyFigures {
    /// Journeys begun, by the file's journey.
    pub by_journey: Vec<(String, u64)>,
    /// Each step's checks, by name, and how many times each was made.
    pub checks_made: Vec<(String, BTreeMap<String, u64>)>,
    /// Journeys that ended before their last step (a capture that missed, an answer
    /// that never came, a step that could not be made).
    pub broken: u64,
    /// Durations of the journeys walked to their end, checks passed or not, µs.
    pub walked: Histogram<u64>,
}
