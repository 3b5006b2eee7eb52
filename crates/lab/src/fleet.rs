//! A fleet run's channel between each segment's process and the coordinator (`stampede
//! ssh`, `stampede collect`): what the segments say — ready, each second's figures, a
//! start missed, a failure — as frame lines ahead of their result (on their standard
//! output over ssh, on their connection to a collector), what the coordinator says
//! back (`start T`, `stop`, `refused WHY`), and the exact merge of the seconds as they
//! come ([`LiveMerge`]), which the live line, the fleet-wide stop and the
//! coordinator's live log read.
//!
//! Everything a segment sends is bounded and checked before it is used: a frame line
//! over [`MAX_FRAME`] bytes, a histogram that does not decode or holds a value past
//! the engine's bounds, a second far from the run's or one a segment sent twice is
//! refused and counted against that segment, never merged.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use stampede_engine::{ErrorKind, Hist, Interval};

/// What begins a frame line on a segment's standard output.
pub const PREFIX: &str = "@stampede-fleet ";

/// Most bytes of one frame line (a second's two histograms, encoded, are a few KiB).
pub const MAX_FRAME: usize = 1 << 20;

/// The latest second a segment may report (a day).
pub const MAX_SECOND: u32 = 86_400;

/// How far past the next second to give out a segment may report: what the merge
/// holds is bounded by it, whatever a segment sends.
pub const MAX_AHEAD: u32 = 300;

/// How late after the shared start a segment may receive it and still start; later,
/// it starts nothing (it would fire its backlog at once).
pub const START_TOLERANCE_S: f64 = 1.0;

/// What a segment says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Frame {
    /// Its inputs are read and its run planned: it waits for the start. What it
    /// runs, for the coordinator's live outputs.
    Ready {
        segment: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run: Option<RunLabel>,
    },
    /// One second of its run, as its result will hold it.
    Second(SegmentSecond),
    /// The start came this many seconds past the tolerance: it starts nothing.
    Missed { late_s: f64 },
    /// It ends without a result, for this reason (over a socket, where no exit status
    /// comes back).
    Failed { why: String },
}

/// What a segment runs, as the live outputs label it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunLabel {
    pub method: String,
    pub url: String,
    pub host: String,
    pub port: u16,
    pub scheme: String,
    /// The whole run's rate, for an open model (each segment runs its share).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
}

/// A segment's second: the interval its result will hold, and its answers by status
/// and failures by kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SegmentSecond {
    #[serde(flatten)]
    pub interval: Interval,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub statuses: Vec<(u16, u64)>,
    /// By [`ErrorKind::name`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<(String, u64)>,
}

impl From<Interval> for SegmentSecond {
    fn from(interval: Interval) -> SegmentSecond {
        SegmentSecond {
            interval,
            statuses: Vec::new(),
            errors: Vec::new(),
        }
    }
}

/// The first line a segment sends over a socket ([`collect`]): the run's token and the
/// segment it was given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hello {
    pub token: String,
    /// `K/N`.
    pub segment: String,
}

impl Hello {
    /// The hello as a line (with its newline).
    pub fn line(&self) -> String {
        format!(
            "{PREFIX}{}\n",
            serde_json::to_string(self).expect("a hello serialises")
        )
    }
}

impl Frame {
    /// The frame as a line (with its newline).
    pub fn line(&self) -> String {
        format!(
            "{PREFIX}{}\n",
            serde_json::to_string(self).expect("a frame serialises")
        )
    }

    /// The frame a line holds: `None` for a line that is no frame (the result's
    /// JSON); an error for a frame that is malformed or too long.
    pub fn parse(line: &[u8]) -> Option<Result<Frame, FrameError>> {
        let rest = line.strip_prefix(PREFIX.as_bytes())?;
        if line.len() > MAX_FRAME {
            return Some(Err(FrameError::TooLong(line.len())));
        }
        Some(serde_json::from_slice(rest).map_err(|e| FrameError::Malformed(e.to_string())))
    }
}

/// Why a frame line was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("a frame of {0} bytes, over the {MAX_FRAME} taken")]
    TooLong(usize),
    #[error("a malformed frame: {0}")]
    Malformed(String),
}

/// What the coordinator says to a segment: the shared start, Unix seconds.
pub fn start_line(at_unix_s: f64) -> String {
    format!("start {at_unix_s:.6}\n")
}

/// What the coordinator says to stop a segment early.
pub const STOP_LINE: &str = "stop\n";

/// A line the coordinator sent, as a segment reads it.
#[derive(Debug, Clone, PartialEq)]
pub enum Order {
    Start(f64),
    Stop,
    /// The collector would not take this process (a wrong token, a segment not its
    /// own or already taken): why.
    Refused(String),
}

impl Order {
    pub fn parse(line: &str) -> Option<Order> {
        match line.trim().split_once(' ') {
            Some(("start", t)) => t
                .parse()
                .ok()
                .filter(|t: &f64| t.is_finite())
                .map(Order::Start),
            Some(("refused", why)) => Some(Order::Refused(why.to_string())),
            None if line.trim() == "stop" => Some(Order::Stop),
            _ => None,
        }
    }
}

/// One second of the fleet, merged from the segments that reported it.
#[derive(Debug, Clone, Default)]
pub struct FleetSecond {
    pub t: u32,
    /// Segments whose figures are in it.
    pub segments: usize,
    pub completed: u64,
    pub failed: u64,
    pub bytes_read: u64,
    pub events: u64,
    pub connections: u64,
    pub in_flight: u64,
    pub users: u64,
    pub latency: Hist,
    pub uncorrected: Hist,
    /// Answers by status.
    pub statuses: BTreeMap<u16, u64>,
    /// Failures by kind.
    pub errors: BTreeMap<ErrorKind, u64>,
}

/// Why a segment's second was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("second {0} is past the run's bounds")]
    Far(u32),
    #[error("second {0} came twice")]
    Twice(u32),
    #[error("second {0} came after it was shown")]
    Late(u32),
    #[error("second {0} is more than {MAX_AHEAD} s ahead of the fleet's")]
    Ahead(u32),
    #[error("its histogram does not decode: {0}")]
    Histogram(String),
    #[error("status {0} is no HTTP status")]
    Status(u16),
    #[error("{0:?} is no kind of failure")]
    ErrorKind(String),
}

/// The seconds of a fleet's segments merged exactly as they come; each second is
/// given out once every segment still running has reported it (or has gone past it).
#[derive(Debug, Default)]
pub struct LiveMerge {
    pending: BTreeMap<u32, (FleetSecond, Vec<usize>)>,
    /// The next second to give out.
    next: u32,
    /// Each segment's latest second.
    latest: BTreeMap<usize, u32>,
    /// Since the start, merged: what the fleet-wide stop judges.
    pub total: FleetSecond,
    /// Requests that ended (answered or failed) in the seconds given out: the
    /// denominator of a share of failures.
    pub started: u64,
    /// The shared start, Unix seconds, once given.
    pub start_unix_s: Option<f64>,
    /// What each segment that said ready runs.
    pub runs: BTreeMap<usize, RunLabel>,
}

impl LiveMerge {
    /// Adds segment `seg`'s second `sec`; nothing of a second refused is kept.
    pub fn add(&mut self, seg: usize, sec: &SegmentSecond) -> Result<(), Refused> {
        let iv = &sec.interval;
        if iv.t > MAX_SECOND {
            return Err(Refused::Far(iv.t));
        }
        if iv.t < self.next {
            return Err(Refused::Late(iv.t));
        }
        if iv.t > self.next.saturating_add(MAX_AHEAD) {
            return Err(Refused::Ahead(iv.t));
        }
        if let Some(&(code, _)) = sec.statuses.iter().find(|(c, _)| !(100..=599).contains(c)) {
            return Err(Refused::Status(code));
        }
        let mut errors = Vec::with_capacity(sec.errors.len());
        for (name, n) in &sec.errors {
            match ErrorKind::ALL.iter().find(|k| k.name() == name) {
                Some(&k) => errors.push((k, *n)),
                None => return Err(Refused::ErrorKind(name.clone())),
            }
        }
        let latency =
            Hist::from_base64(&iv.histogram).map_err(|e| Refused::Histogram(e.to_string()))?;
        let uncorrected = Hist::from_base64(&iv.histogram_uncorrected)
            .map_err(|e| Refused::Histogram(e.to_string()))?;
        let (s, from) = self.pending.entry(iv.t).or_insert_with(|| {
            (
                FleetSecond {
                    t: iv.t,
                    ..FleetSecond::default()
                },
                Vec::new(),
            )
        });
        if from.contains(&seg) {
            return Err(Refused::Twice(iv.t));
        }
        from.push(seg);
        s.segments += 1;
        s.completed += iv.completed;
        s.failed += iv.failed;
        s.bytes_read += iv.bytes_read;
        s.events += iv.events;
        s.connections += iv.connections;
        s.in_flight += iv.in_flight;
        s.users += iv.users;
        s.latency.add(&latency);
        s.uncorrected.add(&uncorrected);
        for &(code, n) in &sec.statuses {
            *s.statuses.entry(code).or_default() += n;
        }
        for (k, n) in errors {
            *s.errors.entry(k).or_default() += n;
        }
        let t = self.latest.entry(seg).or_insert(iv.t);
        *t = (*t).max(iv.t);
        Ok(())
    }

    /// The seconds now whole, in order: those every segment in `running` has reported
    /// or gone past; with `all`, every second held (the run is over).
    pub fn ready(&mut self, running: &[usize], all: bool) -> Vec<FleetSecond> {
        let mut out = Vec::new();
        while let Some((&t, _)) = self.pending.first_key_value() {
            let whole = all
                || running
                    .iter()
                    .all(|seg| self.latest.get(seg).is_some_and(|&l| l > t));
            if !whole {
                break;
            }
            let (s, _) = self.pending.remove(&t).expect("present");
            self.next = t + 1;
            self.total.completed += s.completed;
            self.total.failed += s.failed;
            self.total.bytes_read += s.bytes_read;
            self.total.latency.add(&s.latency);
            self.total.uncorrected.add(&s.uncorrected);
            self.total.t = t;
            self.started += s.completed + s.failed;
            out.push(s);
        }
        out
    }
}

pub mod collect;
pub mod run;

#[cfg(test)]
mod tests;
