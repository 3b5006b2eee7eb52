//! From measured runs to answers: per target × scenario statistics over the
//! repetitions, A/B verdicts against the baseline target, and comparisons of one bench
//! with an earlier one.
//!
//! The summary is plain data (serde), so the terminal table, the Markdown report and
//! the JSON export are renderings of one thing and cannot disagree.

use serde::{Deserialize, Serialize};

use crate::record::{AssertionOutcome, Outcome, RunRecord, TargetStatus, Verification};
use crate::stats::{compare, summarize, Comparison, Shift, Summary, Test};

/// One target on one scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// Target name.
    pub target: String,
    /// Measured runs.
    pub runs: usize,
    /// Completed responses per second, over the runs.
    pub rps: Option<Summary>,
    /// Median latency (corrected), ms, over the runs.
    pub p50_ms: Option<Summary>,
    /// 99th percentile latency (corrected), ms, over the runs.
    pub p99_ms: Option<Summary>,
    /// The capacity each run's search found, req/s, when the runs are searches.
    #[serde(default)]
    pub max_rate: Option<Summary>,
    /// Failed requests, all runs.
    pub failed: u64,
    /// Non-2xx responses, all runs.
    pub non_2xx: u64,
    /// Completed responses, all runs.
    pub completed: u64,
    /// Target CPU (user + system, whole process tree) per completed response, µs.
    pub target_cpu_us_per_req: Option<f64>,
    /// Largest peak RSS of the target over the runs, KiB.
    pub target_peak_rss_kb: Option<u64>,
    /// Load generator CPU per completed response, µs.
    pub client_cpu_us_per_req: Option<f64>,
    /// This target against the baseline (the plan's first target), on the row's metric.
    pub vs_baseline: Option<Comparison>,
    /// The server's CPU per request against the baseline's, run by run, given where
    /// the row's verdict is withheld because the client set the pace: what each server
    /// spent on a request does not depend on which side was the limit, so that answer
    /// is still the server's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_vs_baseline: Option<Comparison>,
    /// Repetitions (1-based) flagged as outliers in req/s.
    pub outlier_runs: Vec<u32>,
    /// Why the cell is empty or flagged: verification failures, warnings.
    pub notes: Vec<String>,
    /// Which side was the limit of its runs: each verdict with how many runs had it,
    /// e.g. `server-bound ×3`.
    #[serde(default)]
    pub limit: Option<String>,
    /// Whether any of its runs was client-bound.
    #[serde(default)]
    pub client_bound: bool,
    /// Whether any of its runs could not open a tenth or more of its connections.
    #[serde(default)]
    pub unconnected: bool,
    /// What a reader may want to know but need not worry about: why automatic
    /// repetitions stopped, warm-up found inside runs.
    #[serde(default)]
    pub info: Vec<String>,
    /// Scenarios that time streams: their figures over the runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<StreamCell>,
}

/// A streaming scenario's figures on one target, over its runs: the first event (an
/// OpenAI stream's first token) and the gaps between events from the intended start,
/// ms, and for OpenAI streams tokens per second and goodput.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamCell {
    pub ttft_p50_ms: Summary,
    pub ttft_p99_ms: Summary,
    pub itl_p50_ms: Summary,
    pub itl_p99_ms: Summary,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_s: Option<Summary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput_rps: Option<Summary>,
}

impl StreamCell {
    /// The figures of `runs`, when every one of them timed streams.
    fn of(runs: &[&RunRecord]) -> Option<StreamCell> {
        let streams: Vec<&stampede_engine::StreamStats> = runs
            .iter()
            .map(|r| r.result.protocols.stream.as_ref())
            .collect::<Option<_>>()?;
        if streams.is_empty() {
            return None;
        }
        let stat = |f: &dyn Fn(&stampede_engine::StreamStats) -> Option<f64>| {
            let xs: Option<Vec<f64>> = streams.iter().map(|s| f(s)).collect();
            xs.map(|x| summarize(&x))
        };
        let at = |l: &stampede_engine::LatencyStats, p: f64| ms(l.at(p));
        Some(StreamCell {
            ttft_p50_ms: stat(&|s| Some(at(&s.first_event, 50.0)))?,
            ttft_p99_ms: stat(&|s| Some(at(&s.first_event, 99.0)))?,
            itl_p50_ms: stat(&|s| Some(at(&s.gap, 50.0)))?,
            itl_p99_ms: stat(&|s| Some(at(&s.gap, 99.0)))?,
            tokens_per_s: stat(&|s| s.tokens.as_ref().map(|t| t.per_second)),
            goodput_rps: stat(&|s| s.tokens.as_ref().and_then(|t| t.goodput_rps)),
        })
    }
}

/// What a scenario's verdicts compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Completed responses per second, higher is better (closed load: the server sets
    /// the pace).
    Rps,
    /// 99th percentile latency from the intended start, lower is better (open load:
    /// the schedule sets the pace, so req/s only repeats the rate asked for).
    P99Ms,
    /// The highest rate that met every condition of a capacity search, req/s, higher
    /// is better (0 when no rate did).
    MaxRate,
}

impl Metric {
    /// What the runs of one scenario are compared on: the capacity found when they are
    /// searches, p99 when any is open load, else req/s.
    pub fn of_runs<'a>(runs: impl IntoIterator<Item = &'a RunRecord>) -> Metric {
        let mut metric = Metric::Rps;
        for r in runs {
            if r.result.capacity.is_some() {
                return Metric::MaxRate;
            }
            if r.result.open.is_some() {
                metric = Metric::P99Ms;
            }
        }
        metric
    }

    /// This metric's figure of one run: req/s, p99 in ms, or the capacity in req/s.
    pub fn figure(self, r: &stampede_engine::RunResult) -> f64 {
        match self {
            Metric::Rps => r.throughput_rps,
            Metric::P99Ms => ms(r.latency.at(99.0)),
            Metric::MaxRate => max_rate(r),
        }
    }

    /// Whether a larger figure is better.
    pub fn higher_is_better(self) -> bool {
        self != Metric::P99Ms
    }
}

/// The `metric` figures of `target`'s runs of `scenario`.
pub fn samples(runs: &[RunRecord], target: &str, scenario: &str, metric: Metric) -> Vec<f64> {
    runs.iter()
        .filter(|r| r.target == target && r.scenario == scenario)
        .map(|r| metric.figure(&r.result))
        .collect()
}

/// The target's CPU (user + system) per completed response of each of its runs on a
/// scenario, µs; `None` unless every run has it and there are two or more (a
/// comparison needs a spread on each side).
fn cpu_samples(runs: &[RunRecord], target: &str, scenario: &str) -> Option<Vec<f64>> {
    let xs: Option<Vec<f64>> = (runs.iter())
        .filter(|r| r.target == target && r.scenario == scenario)
        .map(|r| {
            let cpu = r.target_cpu_user_s? + r.target_cpu_sys_s?;
            let n = r.result.requests.completed;
            (n > 0).then(|| cpu * 1e6 / n as f64)
        })
        .collect();
    xs.filter(|v| v.len() >= 2)
}

/// One scenario across the targets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// Scenario name.
    pub scenario: String,
    /// What the verdicts compare.
    pub metric: Metric,
    /// What a capacity search's rates count (requests, or journeys).
    #[serde(default, skip_serializing_if = "is_per_request")]
    pub per: stampede_engine::capacity::Per,
    /// One cell per target, in plan order.
    pub cells: Vec<Cell>,
}

fn is_per_request(p: &stampede_engine::capacity::Per) -> bool {
    *p == stampede_engine::capacity::Per::Request
}

/// A whole bench, summarised.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchSummary {
    /// Bench id in the store.
    pub bench_id: i64,
    /// Plan name.
    pub plan: String,
    /// The plan's description, when it has one.
    #[serde(default)]
    pub description: Option<String>,
    /// The machine, in one line.
    pub machine: String,
    /// The environment, whole.
    pub environment: serde_json::Value,
    /// The baseline target's name.
    pub baseline: String,
    /// Ratios within `1 ± noise` count as no difference.
    pub noise: f64,
    /// The test behind the verdicts.
    pub test: Test,
    /// What became of each target.
    pub targets: Vec<TargetStatus>,
    /// Scenarios in plan order.
    pub rows: Vec<Row>,
    /// Verifications that did not pass.
    pub verification_problems: Vec<Verification>,
    /// Every assertion checked, per measured run.
    pub assertions: Vec<AssertionOutcome>,
    /// The bench was stopped early.
    pub interrupted: bool,
}

impl BenchSummary {
    /// Every flag of every cell, `scenario / target: note`, outlier runs included: what
    /// a reader must not miss, in table order.
    pub fn flags(&self) -> Vec<String> {
        let mut out = Vec::new();
        for r in &self.rows {
            for c in &r.cells {
                let at = format!("{} / {}", r.scenario, c.target);
                out.extend(c.notes.iter().map(|n| format!("{at}: {n}")));
                if !c.outlier_runs.is_empty() {
                    out.push(format!("{at}: outlier runs {:?}", c.outlier_runs));
                }
            }
        }
        out
    }
}

impl BenchSummary {
    /// Every cell's informational note, `scenario / target: note`, in table order.
    pub fn infos(&self) -> Vec<String> {
        self.rows
            .iter()
            .flat_map(|r| {
                r.cells.iter().flat_map(move |c| {
                    c.info
                        .iter()
                        .map(move |n| format!("{} / {}: {n}", r.scenario, c.target))
                })
            })
            .collect()
    }
}

fn ms(us: Option<u64>) -> f64 {
    us.unwrap_or(0) as f64 / 1000.0
}

/// The highest rate a run's capacity search passed, 0 when none did (or it made none).
fn max_rate(r: &stampede_engine::RunResult) -> f64 {
    r.capacity.as_ref().and_then(|c| c.max_rate).unwrap_or(0.0)
}

/// Summarises the runs of one target on one scenario (empty `runs`: no figures).
///
/// Long on purpose: one figure after another (throughput, each percentile, errors,
/// the limit, CPU), each a few lines over the same runs.
fn cell(target: &str, runs: &[&RunRecord]) -> Cell {
    let stat = |f: &dyn Fn(&RunRecord) -> f64| -> Option<Summary> {
        (!runs.is_empty()).then(|| summarize(&runs.iter().map(|r| f(r)).collect::<Vec<_>>()))
    };
    let completed: u64 = runs.iter().map(|r| r.result.requests.completed).sum();
    let per_req = |f: &dyn Fn(&RunRecord) -> Option<f64>| -> Option<f64> {
        let xs: Option<Vec<f64>> = runs.iter().map(|r| f(r)).collect();
        xs.filter(|_| completed > 0 && !runs.is_empty())
            .map(|v| v.iter().sum::<f64>() * 1e6 / completed as f64)
    };
    let rps = stat(&|r| r.result.throughput_rps);
    let mut notes = Vec::new();
    let failed: u64 = runs.iter().map(|r| r.result.requests.failed).sum();
    let non_2xx: u64 = runs.iter().map(|r| r.result.non_2xx()).sum();
    if non_2xx > 0 {
        notes.push(format!("{non_2xx} responses were not 2xx"));
    }
    if failed > 0 {
        // By kind, as the runs counted them: timeouts and resets mean different things.
        let mut kinds: std::collections::BTreeMap<&str, u64> = Default::default();
        for r in runs {
            for (k, n) in &r.result.errors {
                *kinds.entry(k.as_str()).or_default() += n;
            }
        }
        let mut kinds: Vec<(&str, u64)> = kinds.into_iter().filter(|(_, n)| *n > 0).collect();
        kinds.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let list: Vec<String> = kinds.iter().map(|(k, n)| format!("{k} × {n}")).collect();
        notes.push(format!("{failed} requests failed ({})", list.join(", ")));
    }
    let behind: Vec<String> = runs
        .iter()
        .filter_map(|r| {
            let o = r.result.open.as_ref().filter(|o| o.behind)?;
            Some(format!(
                "run {}: send lag p99 {:.1} ms, {} never sent{}",
                r.repetition,
                o.send_lag.at(99.0).unwrap_or(0) as f64 / 1000.0,
                o.never_sent,
                o.cause.as_ref().map_or(String::new(), |c| format!(", {c}"))
            ))
        })
        .collect();
    if !behind.is_empty() {
        notes.push(format!(
            "the load was not always offered as asked ({})",
            behind.join("; ")
        ));
    }
    // An HTTP/2 scenario over TLS where ALPN chose HTTP/1.1: the figures are HTTP/1.1's.
    let fallback: u64 = runs
        .iter()
        .filter(|r| r.result.settings.http2)
        .filter_map(|r| r.result.protocols.tls.as_ref().map(|t| t.http1_fallback))
        .sum();
    if fallback > 0 {
        notes.push(format!(
            "ALPN chose HTTP/1.1 on {fallback} connections: measured over HTTP/1.1, not HTTP/2"
        ));
    }
    let mut verdicts: std::collections::BTreeMap<&str, usize> = Default::default();
    for r in runs {
        if let Some(l) = &r.result.limit {
            *verdicts.entry(l.verdict.name()).or_default() += 1;
        }
    }
    let client_bound: Vec<&RunRecord> = runs
        .iter()
        .copied()
        .filter(|r| r.result.client_bound())
        .collect();
    if let Some(first) = client_bound.first() {
        let reps: Vec<String> = client_bound
            .iter()
            .map(|r| r.repetition.to_string())
            .collect();
        notes.push(format!(
            "CLIENT-BOUND in run {} of {}: {}; these figures describe the load generator, so no verdict is given against them",
            reps.join(", "),
            runs.len(),
            first.result.client_limit().unwrap_or("")
        ));
    }
    let unconnected: Vec<(&RunRecord, String)> = (runs.iter().copied())
        .filter_map(|r| r.result.unconnected().map(|why| (r, why)))
        .collect();
    if let Some((_, why)) = unconnected.first() {
        let reps: Vec<String> = (unconnected.iter())
            .map(|(r, _)| r.repetition.to_string())
            .collect();
        notes.push(format!(
            "CONNECTIONS NOT OPENED in run {} of {}: {why}; the figures are those of the connections that got in, so no verdict is given against them",
            reps.join(", "),
            runs.len()
        ));
    }
    let mut info = Vec::new();
    for r in runs {
        if let Some(c) = &r.result.capacity {
            info.push(format!(
                "run {}: capacity search of {} steps: {}",
                r.repetition,
                c.steps.len(),
                c.ended
            ));
        }
        // The last second is partial; MSER-5 judges whole seconds.
        let per_second: Vec<f64> = r
            .result
            .intervals
            .iter()
            .take(r.result.duration_s.floor() as usize)
            .map(|i| i.completed as f64)
            .collect();
        if let Some(cut) = crate::stats::mser5(&per_second).filter(|&c| c > 0) {
            info.push(format!(
                "run {}: MSER-5 finds a warm-up of {cut} s in its per-second req/s (of {} s): the fixed warm-up runs were not enough",
                r.repetition,
                per_second.len()
            ));
        }
    }
    Cell {
        info,
        limit: (!verdicts.is_empty()).then(|| {
            verdicts
                .iter()
                .map(|(v, n)| format!("{v} ×{n}"))
                .collect::<Vec<_>>()
                .join(", ")
        }),
        client_bound: !client_bound.is_empty(),
        unconnected: !unconnected.is_empty(),
        target: target.to_string(),
        runs: runs.len(),
        outlier_runs: rps
            .as_ref()
            .map(|s| s.outliers.iter().map(|&i| runs[i].repetition).collect())
            .unwrap_or_default(),
        rps,
        p50_ms: stat(&|r| ms(r.result.latency.at(50.0))),
        p99_ms: stat(&|r| ms(r.result.latency.at(99.0))),
        max_rate: runs
            .iter()
            .any(|r| r.result.capacity.is_some())
            .then(|| stat(&|r| max_rate(&r.result)))
            .flatten(),
        failed,
        non_2xx,
        completed,
        target_cpu_us_per_req: per_req(&|r| Some(r.target_cpu_user_s? + r.target_cpu_sys_s?)),
        target_peak_rss_kb: runs.iter().filter_map(|r| r.target_peak_rss_kb).max(),
        client_cpu_us_per_req: per_req(&|r| r.client_cpu_s),
        vs_baseline: None,
        cpu_vs_baseline: None,
        notes,
        stream: StreamCell::of(runs),
    }
}

/// What a bench recorded, as the summary reads it: from the runner just now, or from
/// the store later.
#[derive(Debug, Clone, Copy)]
pub struct BenchRecord<'a> {
    /// Bench id in the store.
    pub bench_id: i64,
    /// Plan name.
    pub plan: &'a str,
    /// The environment, as JSON.
    pub environment: &'a serde_json::Value,
    /// The machine in one line.
    pub machine: &'a str,
    /// Targets in plan order; the first is the baseline.
    pub targets: &'a [TargetStatus],
    /// Scenario names in plan order.
    pub scenarios: &'a [String],
    /// Verification outcomes.
    pub verifications: &'a [Verification],
    /// Measured runs.
    pub runs: &'a [RunRecord],
    /// Assertions checked on the runs.
    pub assertions: &'a [AssertionOutcome],
    /// The runner's notes per target × scenario.
    pub notes: &'a [crate::record::RunNote],
    /// Whether the bench was stopped early.
    pub interrupted: bool,
}

/// Builds the summary of a bench; each target is compared with the first by `test`,
/// Why a comparison with a client-bound run is withheld.
pub const CLIENT_BOUND: &str =
    "a compared run was client-bound (the figures describe the load generator)";

/// Why a comparison with a client-bound run can still be given, as a bound: the
/// client-bound side came out ahead of a side that set its own pace.
pub const AT_LEAST: &str = "the side ahead was client-bound, so its own figure understates it";

/// Why a comparison with a run whose connections could not open is withheld.
pub const UNCONNECTED: &str = "a compared run could not open a tenth or more of its connections (the figures are those of the connections that got in)";

/// differences under `noise` (a fraction) counting as none.
pub fn summarize_bench(b: &BenchRecord<'_>, noise: f64, test: Test) -> BenchSummary {
    let baseline = b
        .targets
        .first()
        .map(|t| t.name.clone())
        .unwrap_or_default();
    let rows = b
        .scenarios
        .iter()
        .map(|sc| {
            let mut cells: Vec<Cell> = b.targets.iter().map(|t| target_cell(b, t, sc)).collect();
            let metric = Metric::of_runs(b.runs.iter().filter(|r| &r.scenario == sc));
            let per = (b.runs.iter())
                .filter(|r| &r.scenario == sc)
                .find_map(|r| r.result.capacity.as_ref().map(|c| c.per))
                .unwrap_or_default();
            let base: Vec<f64> = samples(b.runs, &baseline, sc, metric);
            let base_client_bound = cells.first().is_some_and(|c| c.client_bound);
            let base_unconnected = cells.first().is_some_and(|c| c.unconnected);
            for c in cells.iter_mut().skip(1) {
                let other = samples(b.runs, &c.target, sc, metric);
                if !base.is_empty() && !other.is_empty() {
                    let mut cmp = compare(&base, &other, noise, test);
                    let ahead_was_held = metric == Metric::Rps
                        && !(c.unconnected || base_unconnected)
                        && match cmp.verdict {
                            Shift::Lower => base_client_bound && !c.client_bound,
                            Shift::Higher => c.client_bound && !base_client_bound,
                            _ => false,
                        };
                    if ahead_was_held {
                        // The side ahead was held back by the client: its own figure
                        // understates it, so the other, measured at its own limit, is
                        // behind by at least this much.
                        cmp.at_least = Some(AT_LEAST.to_string());
                    } else if c.client_bound || base_client_bound {
                        cmp.withhold(CLIENT_BOUND);
                        let cpu = |t: &str| cpu_samples(b.runs, t, sc);
                        if let (Some(a), Some(o)) = (cpu(&baseline), cpu(&c.target)) {
                            c.cpu_vs_baseline = Some(compare(&a, &o, noise, test));
                        }
                    } else if c.unconnected || base_unconnected {
                        cmp.withhold(UNCONNECTED);
                    }
                    c.vs_baseline = Some(cmp);
                }
            }
            Row {
                scenario: sc.clone(),
                metric,
                per,
                cells,
            }
        })
        .collect();
    BenchSummary {
        bench_id: b.bench_id,
        // Set by the caller that has the plan (summaries rebuilt from a store have none).
        description: None,
        plan: b.plan.to_string(),
        machine: b.machine.to_string(),
        environment: b.environment.clone(),
        baseline,
        noise,
        test,
        targets: b.targets.to_vec(),
        rows,
        verification_problems: b
            .verifications
            .iter()
            .filter(|v| v.outcome != Outcome::Pass)
            .cloned()
            .collect(),
        assertions: b.assertions.to_vec(),
        interrupted: b.interrupted,
    }
}

/// One target's cell of a scenario: its runs' figures, and notes on a failed
/// verification, failed assertions, or why it was not measured.
fn target_cell(b: &BenchRecord<'_>, t: &TargetStatus, sc: &str) -> Cell {
    let rs: Vec<&RunRecord> = b
        .runs
        .iter()
        .filter(|r| r.target == t.name && r.scenario == sc)
        .collect();
    let mut c = cell(&t.name, &rs);
    if let Some(v) = b
        .verifications
        .iter()
        .find(|v| v.target == t.name && v.scenario == sc && v.outcome != Outcome::Pass)
    {
        let what = if v.outcome == Outcome::Fail {
            "failed, not measured"
        } else {
            "warned"
        };
        c.notes
            .insert(0, format!("verification {what}: {}", v.failures.join("; ")));
    }
    for a in b
        .assertions
        .iter()
        .filter(|a| a.target == t.name && a.scenario == sc && !a.checked.passed)
    {
        c.notes.push(format!(
            "assertion failed on run {}: {} (measured {})",
            a.repetition, a.checked.assertion, a.checked.actual
        ));
    }
    c.info.splice(
        0..0,
        b.notes
            .iter()
            .filter(|n| n.target == t.name && n.scenario == sc)
            .map(|n| n.note.clone()),
    );
    if rs.is_empty() && c.notes.is_empty() && !t.ok {
        c.notes.push(format!("not measured: {}", t.status));
    }
    c
}

/// One target × scenario measured in two benches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// Target name.
    pub target: String,
    /// Scenario name.
    pub scenario: String,
    /// Req/s in the earlier bench (the capacity found, for a search).
    pub before: Summary,
    /// Req/s in the later bench (the capacity found, for a search).
    pub after: Summary,
    /// What was compared.
    pub metric: Metric,
    /// Later against earlier, on `metric`.
    pub comparison: Comparison,
    /// Mean p99 latency before and after, ms.
    pub p99_ms: (f64, f64),
}

/// Compares every target × scenario that both benches measured (later against earlier).
pub fn compare_benches(
    before: &[RunRecord],
    after: &[RunRecord],
    noise: f64,
    test: Test,
) -> Vec<Change> {
    let mut keys: Vec<(String, String)> = Vec::new();
    for r in after {
        let k = (r.target.clone(), r.scenario.clone());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mean_p99 = |rs: &[RunRecord], t: &str, s: &str| {
        let v: Vec<f64> = rs
            .iter()
            .filter(|r| r.target == t && r.scenario == s)
            .map(|r| ms(r.result.latency.at(99.0)))
            .collect();
        v.iter().sum::<f64>() / v.len().max(1) as f64
    };
    keys.into_iter()
        .filter_map(|(t, s)| {
            let metric = Metric::of_runs(after.iter().filter(|r| r.target == t && r.scenario == s));
            // req/s shown beside the verdict, or the capacity when that is compared.
            let shown = match metric {
                Metric::MaxRate => Metric::MaxRate,
                _ => Metric::Rps,
            };
            let a = samples(before, &t, &s, shown);
            let b = samples(after, &t, &s, shown);
            if a.is_empty() || b.is_empty() {
                return None;
            }
            let (ma, mb) = (
                samples(before, &t, &s, metric),
                samples(after, &t, &s, metric),
            );
            let client_bound = |rs: &[RunRecord]| {
                rs.iter()
                    .any(|r| r.target == t && r.scenario == s && r.result.client_bound())
            };
            let unconnected = |rs: &[RunRecord]| {
                rs.iter()
                    .any(|r| r.target == t && r.scenario == s && r.result.unconnected().is_some())
            };
            let mut comparison = compare(&ma, &mb, noise, test);
            if client_bound(before) || client_bound(after) {
                comparison.withhold(CLIENT_BOUND);
            } else if unconnected(before) || unconnected(after) {
                comparison.withhold(UNCONNECTED);
            }
            Some(Change {
                before: summarize(&a),
                after: summarize(&b),
                metric,
                comparison,
                p99_ms: (mean_p99(before, &t, &s), mean_p99(after, &t, &s)),
                target: t,
                scenario: s,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests;
