//! A figure per target: for a run of several requests (a targets file, h2load's URIs,
//! a plan's request list, a session's script steps), each one's responses by status,
//! failures by kind and latency percentiles, beside the run's own.
//!
//! Each worker keeps one [`TargetRecorder`] per target it sent, made when the first
//! answer comes, with a latency histogram of two significant digits (25 KiB, where the
//! run's own histograms keep three): [`MAX_TARGETS`] of them bound a worker's memory to
//! 2.5 MiB however many requests a list names. Targets past the limit are counted
//! together as one, named so. The run's figures stay exact; a target's percentiles are
//! within 1 %.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::error::{ErrorKind, HistError};
use crate::measure::hist::{Hist, MAX_TRACKABLE_US};
use crate::measure::result::LatencyStats;

/// Targets given figures of their own; those past it share one.
pub const MAX_TARGETS: usize = 100;

/// The name of the figures shared by the targets past [`MAX_TARGETS`].
pub const OTHERS: &str = "(the other targets)";

/// One target's figures in a result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetStats {
    /// The request: its method and target (`GET /api/users?page=2`).
    pub name: String,
    /// Responses received.
    pub completed: u64,
    /// Requests that got no response.
    pub failed: u64,
    /// Responses by status.
    pub statuses: BTreeMap<u16, u64>,
    /// Failures by kind.
    pub errors: BTreeMap<String, u64>,
    /// Latency of its responses from their intended starts (two significant digits).
    pub latency: LatencyStats,
    /// Its latency histogram (HdrHistogram's V2 encoding, base64), for exact merges.
    pub histogram: String,
    /// A journey's step: its answers that failed each check, by the check's name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub checks_failed: BTreeMap<String, u64>,
    /// A journey's step: its extractions that found nothing, by variable and why
    /// (`token: no match`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub captures_missed: BTreeMap<String, u64>,
    /// Streamed answers: the first event's time from the intended start (a chat's
    /// time to first token by turn), and its histogram for exact merges.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_event: Option<LatencyStats>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_event_histogram: Option<String>,
}

/// A new histogram for one target's latency, µs.
fn target_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_TRACKABLE_US, 2).expect("valid histogram bounds")
}

/// One target's figures in a worker, as they are recorded.
pub(crate) struct TargetRecorder {
    completed: u64,
    failed: u64,
    /// (status, responses): a target answers with a few statuses.
    statuses: Vec<(u16, u64)>,
    errors: [u64; ErrorKind::ALL.len()],
    latency: Histogram<u64>,
    /// Streamed answers' first events, once one came.
    first_event: Option<Histogram<u64>>,
}

impl TargetRecorder {
    fn new() -> TargetRecorder {
        TargetRecorder {
            completed: 0,
            failed: 0,
            statuses: Vec::new(),
            errors: [0; ErrorKind::ALL.len()],
            latency: target_histogram(),
            first_event: None,
        }
    }

    fn merge(&mut self, o: &TargetRecorder) {
        self.completed += o.completed;
        self.failed += o.failed;
        for &(code, n) in &o.statuses {
            self.count_status(code, n);
        }
        for (a, b) in self.errors.iter_mut().zip(&o.errors) {
            *a += b;
        }
        // Same bounds and precision: the additions cannot fail.
        let _ = self.latency.add(&o.latency);
        if let Some(f) = &o.first_event {
            let _ = (self.first_event.get_or_insert_with(target_histogram)).add(f);
        }
    }

    fn count_status(&mut self, code: u16, n: u64) {
        match self.statuses.iter_mut().find(|(c, _)| *c == code) {
            Some((_, m)) => *m += n,
            None => self.statuses.push((code, n)),
        }
    }
}

/// A worker's figures per target: empty for a run of one request.
#[derive(Default)]
pub(crate) struct Targets {
    /// Indexed by target, [`MAX_TARGETS`] at most, and one more for the rest;
    /// `None` for one not answered yet.
    each: Vec<Option<Box<TargetRecorder>>>,
    /// The last slot is shared by the targets past [`MAX_TARGETS`].
    shared: bool,
}

impl Targets {
    /// Figures for a run of `n` targets (none when `n` is 1 or less).
    pub(crate) fn new(n: usize) -> Targets {
        Targets::each(if n > 1 { n } else { 0 })
    }

    /// Figures for each of `n` targets, even one alone (one server's part of a run
    /// over several, whose requests are named beside the other servers').
    pub(crate) fn each(n: usize) -> Targets {
        let slots = n.min(MAX_TARGETS + 1);
        Targets {
            each: (0..slots).map(|_| None).collect(),
            shared: n > MAX_TARGETS + 1,
        }
    }

    #[inline]
    pub(crate) fn is_on(&self) -> bool {
        !self.each.is_empty()
    }

    /// The figures of `target`; `None` for a run of one request.
    fn slot(&mut self, target: u32) -> Option<&mut TargetRecorder> {
        let last = self.each.len().checked_sub(1)?;
        let i = (target as usize).min(last);
        Some(self.each[i].get_or_insert_with(|| Box::new(TargetRecorder::new())))
    }

    /// A response to `target`.
    #[cold]
    pub(crate) fn complete(&mut self, target: u32, status: u16, total_us: u64) {
        let Some(t) = self.slot(target) else { return };
        t.completed += 1;
        t.count_status(status, 1);
        t.latency.saturating_record(total_us);
    }

    /// A response to `target` counted without a latency sample (wrk2's batch latency).
    #[cold]
    pub(crate) fn count(&mut self, target: u32, status: u16) {
        let Some(t) = self.slot(target) else { return };
        t.completed += 1;
        t.count_status(status, 1);
    }

    /// A streamed answer to `target` brought its first event `us` after its intended
    /// start.
    #[cold]
    pub(crate) fn first_event(&mut self, target: u32, us: u64) {
        let Some(t) = self.slot(target) else { return };
        (t.first_event.get_or_insert_with(target_histogram)).saturating_record(us);
    }

    /// A request to `target` that got no response.
    #[cold]
    pub(crate) fn fail(&mut self, target: u32, kind: ErrorKind) {
        let Some(t) = self.slot(target) else { return };
        t.failed += 1;
        t.errors[kind.index()] += 1;
    }

    /// Adds another worker's figures.
    pub(crate) fn merge(&mut self, other: Targets) {
        if self.each.is_empty() {
            *self = other;
            return;
        }
        for (a, b) in self.each.iter_mut().zip(other.each) {
            match (a.as_mut(), b) {
                (Some(a), Some(b)) => a.merge(&b),
                (None, Some(b)) => *a = Some(b),
                (_, None) => {}
            }
        }
    }

    /// The result's figures, each target named by `name(index)`; targets never sent
    /// are left out.
    pub(crate) fn stats(&self, name: impl Fn(usize) -> String) -> Vec<TargetStats> {
        let shared = self.shared;
        self.each
            .iter()
            .enumerate()
            .filter_map(|(i, t)| {
                let t = t.as_ref()?;
                let name = if shared && i == MAX_TARGETS {
                    OTHERS.to_string()
                } else {
                    name(i)
                };
                Some(TargetStats {
                    name,
                    completed: t.completed,
                    failed: t.failed,
                    statuses: t.statuses.iter().copied().collect(),
                    errors: ErrorKind::ALL
                        .iter()
                        .filter(|k| t.errors[k.index()] > 0)
                        .map(|k| (k.name().to_string(), t.errors[k.index()]))
                        .collect(),
                    latency: LatencyStats::of(&t.latency),
                    histogram: Hist(t.latency.clone()).to_base64(),
                    checks_failed: BTreeMap::new(),
                    captures_missed: BTreeMap::new(),
                    first_event: t.first_event.as_ref().map(LatencyStats::of),
                    first_event_histogram: (t.first_event.clone()).map(|h| Hist(h).to_base64()),
                })
            })
            .collect()
    }
}

/// What a watched worker last reported of each target: its slot's counts and
/// latencies as they stood then.
#[derive(Default)]
pub(crate) struct Reported {
    each: Vec<Option<Box<Last>>>,
}

/// One target as last reported: answered, failed, latencies.
struct Last(u64, u64, Histogram<u64>);

impl Targets {
    /// Each target's figures since `last` (answered, failed and latencies), and
    /// `last` brought up to now: what a watched second carries of them. Only
    /// targets that moved are named.
    pub(crate) fn since(&self, last: &mut Reported) -> Vec<crate::measure::second::TargetDelta> {
        use hdrhistogram::serialization::{Serializer, V2Serializer};
        let mut out = Vec::new();
        if last.each.len() < self.each.len() {
            last.each.resize_with(self.each.len(), || None);
        }
        for (slot, (now, then)) in self.each.iter().zip(&mut last.each).enumerate() {
            let Some(now) = now else { continue };
            let then = then.get_or_insert_with(|| Box::new(Last(0, 0, target_histogram())));
            if now.completed == then.0 && now.failed == then.1 {
                continue;
            }
            let mut latency = Vec::new();
            if now.latency.len() > then.2.len() {
                let mut diff = now.latency.clone();
                // The running histogram only ever grows past its earlier copy.
                if diff.subtract(&then.2).is_ok() {
                    V2Serializer::new()
                        .serialize(&diff, &mut latency)
                        .expect("serialising to memory cannot fail");
                }
                then.2.clone_from(&now.latency);
            }
            out.push(crate::measure::second::TargetDelta {
                slot: slot as u32,
                completed: now.completed - then.0,
                failed: now.failed - then.1,
                latency,
            });
            (then.0, then.1) = (now.completed, now.failed);
        }
        out
    }
}

/// One request's figures in a live second, merged over the workers.
#[derive(Debug, Clone)]
pub struct LiveTarget {
    /// Its place among the run's requests (see [`target_name`]).
    pub slot: usize,
    /// Answered in the second.
    pub completed: u64,
    /// Failed in the second.
    pub failed: u64,
    /// Its latencies in the second, µs (two significant digits).
    pub latency: Hist,
}

impl LiveTarget {
    pub(crate) fn new(slot: usize) -> LiveTarget {
        LiveTarget {
            slot,
            completed: 0,
            failed: 0,
            latency: Hist(target_histogram()),
        }
    }
}

/// The name of the request in `slot` of a run's figures per target: what its hooks
/// call it (a journey's step), else its method and target; the last slot of a run of
/// more than [`MAX_TARGETS`] is the others'.
pub fn target_name(
    slot: usize,
    named: &[String],
    variety: &[crate::Request],
    script: &[crate::Step],
    request: &crate::Request,
) -> String {
    let n = named.len().max(variety.len()).max(script.len());
    if slot == MAX_TARGETS && n > MAX_TARGETS + 1 {
        return OTHERS.to_string();
    }
    if let Some(name) = named.get(slot) {
        return name.clone();
    }
    let r = match variety.get(slot) {
        Some(r) => r,
        None => script.get(slot).map_or(request, |s| &s.request),
    };
    format!("{} {}", r.method, r.target())
}

/// Merges results' figures per target, by name (targets of one name are one target
/// however the lists were ordered); in the order they first appear.
pub fn merge_targets(lists: &[&[TargetStats]]) -> Result<Vec<TargetStats>, HistError> {
    let mut out: Vec<(TargetStats, Hist)> = Vec::new();
    for list in lists {
        for t in *list {
            let h = Hist::from_base64(&t.histogram)?;
            match out.iter_mut().find(|(o, _)| o.name == t.name) {
                Some((o, oh)) => {
                    o.completed = o.completed.saturating_add(t.completed);
                    o.failed = o.failed.saturating_add(t.failed);
                    for (k, n) in &t.statuses {
                        *o.statuses.entry(*k).or_default() += n;
                    }
                    for (k, n) in &t.errors {
                        *o.errors.entry(k.clone()).or_default() += n;
                    }
                    for (k, n) in &t.checks_failed {
                        *o.checks_failed.entry(k.clone()).or_default() += n;
                    }
                    for (k, n) in &t.captures_missed {
                        *o.captures_missed.entry(k.clone()).or_default() += n;
                    }
                    oh.add_checked(&h.0)?;
                    if let Some(b) = &t.first_event_histogram {
                        let mut f = match &o.first_event_histogram {
                            Some(a) => Hist::from_base64(a)?,
                            None => Hist(target_histogram()),
                        };
                        f.add_checked(&Hist::from_base64(b)?.0)?;
                        o.first_event = Some(LatencyStats::of(&f.0));
                        o.first_event_histogram = Some(f.to_base64());
                    }
                }
                None => {
                    let mut own = Hist(target_histogram());
                    own.add_checked(&h.0)?;
                    out.push((t.clone(), own));
                }
            }
        }
    }
    Ok(out
        .into_iter()
        .map(|(mut t, h)| {
            t.latency = LatencyStats::of(&h.0);
            t.histogram = h.to_base64();
            t
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_add_up_per_target_across_workers() {
        let mut a = Targets::new(3);
        let mut b = Targets::new(3);
        a.complete(0, 200, 1_000);
        a.complete(0, 404, 3_000);
        b.complete(0, 200, 2_000);
        b.fail(2, ErrorKind::Timeout);
        a.merge(b);
        let s = a.stats(|i| format!("GET /{i}"));
        assert_eq!(s.len(), 2, "target 1 was never sent: {s:?}");
        assert_eq!(s[0].name, "GET /0");
        assert_eq!((s[0].completed, s[0].failed), (3, 0));
        assert_eq!(s[0].statuses, BTreeMap::from([(200, 2), (404, 1)]));
        assert_eq!(s[0].latency.count, 3);
        let p50 = s[0].latency.at(50.0).unwrap();
        assert!((1_980..=2_020).contains(&p50), "within 1 %: {p50}");
        assert_eq!(s[1].name, "GET /2");
        assert_eq!(s[1].errors, BTreeMap::from([("timeout".to_string(), 1)]));
        assert!(s[0].first_event.is_none(), "no stream watched");
        // A run of one request keeps nothing per target.
        let mut one = Targets::new(1);
        assert!(!one.is_on());
        one.merge(Targets::new(1));
        assert!(one.stats(|_| String::new()).is_empty());
    }

    #[test]
    fn targets_past_the_limit_share_one_figure() {
        let mut t = Targets::new(MAX_TARGETS + 50);
        for i in 0..(MAX_TARGETS as u32 + 50) {
            t.complete(i, 200, 100);
        }
        let s = t.stats(|i| format!("GET /{i}"));
        assert_eq!(s.len(), MAX_TARGETS + 1);
        assert_eq!(s[MAX_TARGETS].name, OTHERS);
        assert_eq!(s[MAX_TARGETS].completed, 50);
        assert_eq!(s[MAX_TARGETS - 1].completed, 1);
        // One past the limit still fits a figure of its own.
        let mut t = Targets::new(MAX_TARGETS + 1);
        t.complete(MAX_TARGETS as u32, 200, 100);
        t.fail(7, ErrorKind::Reset);
        let s = t.stats(|i| format!("GET /{i}"));
        assert_eq!(s[1].name, format!("GET /{MAX_TARGETS}"));
        // A run of one request records nothing, whatever it is told.
        let mut none = Targets::new(1);
        none.complete(0, 200, 1);
        none.fail(0, ErrorKind::Reset);
        assert!(none.stats(|_| String::new()).is_empty());
    }

    #[test]
    fn merges_go_by_name_and_keep_the_histograms_exact() {
        let mut a = Targets::new(2);
        a.complete(0, 200, 1_000);
        a.complete(1, 200, 5_000);
        let x = a.stats(|i| ["GET /a", "GET /b"][i].to_string());
        let mut b = Targets::new(2);
        b.complete(0, 200, 5_000);
        b.complete(1, 500, 1_000);
        // The other run listed them the other way round.
        let y = b.stats(|i| ["GET /b", "GET /a"][i].to_string());
        let m = merge_targets(&[&x, &y]).unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].name, "GET /a");
        assert_eq!(m[0].statuses, BTreeMap::from([(200, 1), (500, 1)]));
        assert_eq!(m[0].latency.count, 2);
        assert_eq!(m[1].name, "GET /b");
        assert_eq!(m[1].latency.count, 2);
        assert!(m[1].latency.min_us >= 4_950, "{:?}", m[1].latency);
    }

    #[test]
    fn a_steps_failed_checks_and_missed_captures_add_up_in_merges() {
        let mut a = Targets::new(2);
        a.complete(0, 200, 1_000);
        a.complete(1, 200, 1_000);
        let mut x = a.stats(|i| ["login", "cart"][i].to_string());
        let mut y = x.clone();
        x[0].checks_failed = BTreeMap::from([("status 200".to_string(), 2)]);
        y[0].checks_failed =
            BTreeMap::from([("status 200".to_string(), 1), ("time < 5ms".to_string(), 4)]);
        y[1].captures_missed = BTreeMap::from([("token: no match".to_string(), 3)]);
        let m = merge_targets(&[&x, &y]).unwrap();
        assert_eq!(
            m[0].checks_failed,
            BTreeMap::from([("status 200".to_string(), 3), ("time < 5ms".to_string(), 4)])
        );
        assert_eq!(
            m[1].captures_missed,
            BTreeMap::from([("token: no match".to_string(), 3)])
        );
        // Absent from the JSON when empty, and read back when present.
        let json = serde_json::to_value(&m[1]).unwrap();
        assert!(json.get("checks_failed").is_none());
        let back: TargetStats = serde_json::from_value(json).unwrap();
        assert_eq!(back, m[1]);
    }
}
