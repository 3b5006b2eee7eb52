//! GuideLLM's profiles: what each benchmark of a run is ([`Strategy`]) and which
//! comes next given those measured so far ([`Planner`]). `synchronous`,
//! `concurrent`, `throughput`, `constant`, `poisson` and `async` are fixed lists;
//! `sweep` runs synchronous and throughput first and then rates evenly spaced
//! between their measured request rates; `knee` runs a list of concurrencies, fits a
//! rising line and a flatter tail to the output token rate (GuideLLM's segmented
//! fit and its thresholds) and, when `adaptive`, measures a grid around the knee;
//! `goodput` doubles the concurrency until the share of requests meeting the
//! service levels falls below its target, then bisects. Pure: the planner reads
//! only the [`Measured`] figures it is given.

use crate::FlagError;

/// One benchmark's load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Strategy {
    Synchronous,
    Concurrent { streams: usize },
    Throughput { max_concurrency: usize },
    Constant { rate: f64, max_concurrency: usize },
    Poisson { rate: f64, max_concurrency: usize },
}

impl Strategy {
    /// The name GuideLLM's reports give it (`concurrent@4`, `constant@2.50`).
    pub fn label(&self) -> String {
        match self {
            Strategy::Synchronous => "synchronous".into(),
            Strategy::Concurrent { streams } => format!("concurrent@{streams}"),
            Strategy::Throughput { .. } => "throughput".into(),
            Strategy::Constant { rate, .. } => format!("constant@{rate:.2}"),
            Strategy::Poisson { rate, .. } => format!("poisson@{rate:.2}"),
        }
    }

    /// GuideLLM's `type_`.
    pub fn kind(&self) -> &'static str {
        match self {
            Strategy::Synchronous => "synchronous",
            Strategy::Concurrent { .. } => "concurrent",
            Strategy::Throughput { .. } => "throughput",
            Strategy::Constant { .. } => "constant",
            Strategy::Poisson { .. } => "poisson",
        }
    }

    /// Requests in flight at most.
    pub fn concurrency(&self) -> usize {
        match *self {
            Strategy::Synchronous => 1,
            Strategy::Concurrent { streams } => streams,
            Strategy::Throughput { max_concurrency }
            | Strategy::Constant {
                max_concurrency, ..
            }
            | Strategy::Poisson {
                max_concurrency, ..
            } => max_concurrency,
        }
    }
}

/// What the planner reads of a finished benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Measured {
    /// Successful requests a second.
    pub requests_per_s: f64,
    /// Successful output tokens a second.
    pub output_tokens_per_s: f64,
    /// Requests judged against the service levels, and those that met them all.
    pub judged: u64,
    pub met: u64,
    /// A constraint that ends the whole run stopped it (`max_errors`).
    pub stopped: bool,
}

/// A profile as the flags gave it.
#[derive(Debug, Clone, PartialEq)]
pub enum Profile {
    /// A fixed list of benchmarks.
    Fixed(Vec<Strategy>),
    Sweep {
        size: usize,
        poisson: bool,
        max_concurrency: usize,
    },
    Knee {
        streams: Vec<usize>,
        adaptive: bool,
        each_side: usize,
        max_step: usize,
    },
    Goodput {
        target: f64,
        initial: usize,
        max: usize,
        tolerance: f64,
        max_probes: usize,
        confidence: f64,
    },
}

/// GuideLLM's knee thresholds: a tail at most this flat against the rise, a fit at
/// least this much better than one line, the breakpoint at this share of the peak.
const MAX_TAIL_SLOPE_RATIO: f64 = 0.25;
const MIN_FIT_IMPROVEMENT: f64 = 0.50;
const MIN_THROUGHPUT_FRACTION: f64 = 0.85;
const MIN_POINTS: usize = 5;

/// Where the output token rate stops rising, from its measured points.
#[derive(Debug, Clone, PartialEq)]
pub struct Knee {
    /// `ok` or `no_knee`.
    pub status: &'static str,
    pub reason: &'static str,
    /// The two lines' crossing, in concurrency.
    pub knee: Option<f64>,
    /// The first measured concurrency at or above it.
    pub saturation_concurrency: Option<f64>,
    pub pre_slope: Option<f64>,
    pub tail_slope: Option<f64>,
}

fn line_fit(xs: &[f64], ys: &[f64]) -> (f64, f64, f64) {
    let n = xs.len() as f64;
    let (xm, ym) = (xs.iter().sum::<f64>() / n, ys.iter().sum::<f64>() / n);
    let den: f64 = xs.iter().map(|x| (x - xm).powi(2)).sum();
    let num: f64 = xs.iter().zip(ys).map(|(x, y)| (x - xm) * (y - ym)).sum();
    let slope = if den != 0.0 { num / den } else { 0.0 };
    let icpt = ym - slope * xm;
    let err = xs
        .iter()
        .zip(ys)
        .map(|(x, y)| (y - (icpt + slope * x)).powi(2))
        .sum();
    (icpt, slope, err)
}

/// GuideLLM's segmented fit over `(concurrency, output tokens/s)` points (repeated
/// concurrencies averaged).
pub fn find_knee(points: &[(f64, f64)]) -> Knee {
    let none = |reason| Knee {
        status: "no_knee",
        reason,
        knee: None,
        saturation_concurrency: None,
        pre_slope: None,
        tail_slope: None,
    };
    let mut by: std::collections::BTreeMap<u64, (f64, f64, u32)> = Default::default();
    for &(x, y) in points.iter().filter(|(x, y)| *x > 0.0 && *y >= 0.0) {
        let e = by.entry(x.to_bits()).or_insert((x, 0.0, 0));
        e.1 += y;
        e.2 += 1;
    }
    let mut pts: Vec<(f64, f64)> = by
        .values()
        .map(|(x, s, n)| (*x, s / f64::from(*n)))
        .collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    if pts.len() < MIN_POINTS {
        return none("fewer than five distinct concurrency points");
    }
    let xs: Vec<f64> = pts.iter().map(|p| p.0).collect();
    let ys: Vec<f64> = pts.iter().map(|p| p.1).collect();
    let (x0, x1) = (xs[0], xs[xs.len() - 1]);
    let (y0, y1) = (
        ys.iter().copied().fold(f64::INFINITY, f64::min),
        ys.iter().copied().fold(0.0, f64::max),
    );
    if x1 == x0 || y1 == y0 {
        return none("the throughput curve has no usable range");
    }
    let nx: Vec<f64> = xs.iter().map(|x| (x - x0) / (x1 - x0)).collect();
    let ny: Vec<f64> = ys.iter().map(|y| (y - y0) / (y1 - y0)).collect();
    let (_, _, single) = line_fit(&nx, &ny);
    if single <= 1e-12 {
        return none("the throughput curve is approximately linear");
    }
    let stop = if nx.len() == MIN_POINTS {
        nx.len() - 1
    } else {
        nx.len() - 2
    };
    let mut best: Option<(f64, usize, f64, f64, f64, f64)> = None;
    for i in 2..stop {
        let (pi, ps, pe) = line_fit(&nx[..=i], &ny[..=i]);
        let (ti, ts, te) = line_fit(&nx[i..], &ny[i..]);
        if ps <= 0.0
            || ts / ps > MAX_TAIL_SLOPE_RATIO
            || 1.0 - (pe + te) / single < MIN_FIT_IMPROVEMENT
            || ys[i] / y1 < MIN_THROUGHPUT_FRACTION
        {
            continue;
        }
        if best.is_none_or(|b| pe + te < b.0) {
            best = Some((pe + te, i, pi, ps, ti, ts));
        }
    }
    let Some((_, i, pi, ps, ti, ts)) = best else {
        return none("no breakpoint satisfied the saturation thresholds");
    };
    let mut k = if (ps - ts).abs() > 1e-12 {
        (ti - pi) / (ps - ts)
    } else {
        nx[i]
    };
    if !(nx[i - 1] <= k && k <= nx[i + 1]) {
        k = nx[i];
    }
    let knee = x0 + k * (x1 - x0);
    let eps = (x1 - x0) * 1e-9;
    Knee {
        status: "ok",
        reason: "a rising segment followed by a substantially flatter tail",
        knee: Some(knee),
        saturation_concurrency: Some(*xs.iter().find(|&&x| x >= knee - eps).unwrap_or(&x1)),
        pre_slope: Some(ps),
        tail_slope: Some(ts),
    }
}

/// GuideLLM's adaptive grid: up to `each_side` points either side of the knee, at
/// the widest step up to `max_step` that keeps them above 0, less those measured.
pub fn knee_grid(center: f64, each_side: usize, max_step: usize, measured: &[usize]) -> Vec<usize> {
    let (mut step, mut anchor) = (1i64, ((center + 0.5).floor() as i64).max(1));
    for s in (1..=max_step as i64).rev() {
        step = s;
        anchor = s.max((center / s as f64 + 0.5).floor() as i64 * s);
        if anchor - each_side as i64 * step > 0 {
            break;
        }
    }
    let mut out: Vec<usize> = (-(each_side as i64)..=each_side as i64)
        .map(|o| anchor + o * step)
        .filter(|&c| c > 0)
        .map(|c| c as usize)
        .filter(|c| !measured.contains(c))
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The Wilson score interval of `k` successes in `n` trials at `confidence`.
pub fn wilson(k: u64, n: u64, confidence: f64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let z = normal_quantile(0.5 + confidence / 2.0);
    let (n, p) = (n as f64, k as f64 / n as f64);
    let d = 1.0 + z * z / n;
    let c = (p + z * z / (2.0 * n)) / d;
    let h = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / d;
    ((c - h).max(0.0), (c + h).min(1.0))
}

/// The standard normal's quantile (Acklam's rational approximation, 1e-9).
fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -39.696_830_286_653_76,
        220.946_098_424_520_5,
        -275.928_510_446_968_7,
        138.357_751_867_269,
        -30.664_798_066_147_16,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -54.476_098_798_224_06,
        161.585_836_858_040_9,
        -155.698_979_859_886_6,
        66.801_311_887_719_72,
        -13.280_681_552_885_72,
    ];
    const C: [f64; 6] = [
        -0.007_784_894_002_430_293,
        -0.322_396_458_041_136_5,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        0.007_784_695_709_041_462,
        0.322_467_129_070_039_8,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// One goodput probe's verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    pub streams: usize,
    pub attainment: f64,
    pub lower: f64,
    pub upper: f64,
    pub judged: u64,
    pub passed: bool,
    /// The interval lies wholly on one side of the target.
    pub resolved: bool,
}

/// What a profile concluded, for the reports.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Conclusion {
    pub knee: Option<Knee>,
    /// The grid measured after the first analysis.
    pub adaptive: Vec<usize>,
    pub probes: Vec<Probe>,
    /// Goodput: the highest passing concurrency, and why the search stopped.
    pub best_passing: Option<usize>,
    pub stop_reason: Option<&'static str>,
}

/// Chooses each benchmark from the ones measured before it.
pub struct Planner {
    profile: Profile,
    done: Vec<(Strategy, Measured)>,
    /// Sweep: the rates after synchronous and throughput.
    rates: Vec<f64>,
    /// Knee: the concurrencies to measure, the initial ones first.
    streams: Vec<usize>,
    analysed: bool,
    lowest_failing: Option<usize>,
    pub conclusion: Conclusion,
}

impl Planner {
    pub fn new(profile: Profile) -> Planner {
        let streams = match &profile {
            Profile::Knee { streams, .. } => streams.clone(),
            _ => Vec::new(),
        };
        Planner {
            profile,
            done: Vec::new(),
            rates: Vec::new(),
            streams,
            analysed: false,
            lowest_failing: None,
            conclusion: Conclusion::default(),
        }
    }

    /// The benchmark after `last` (none: the first), or none when the run is done.
    pub fn next(
        &mut self,
        last: Option<(Strategy, Measured)>,
    ) -> Result<Option<Strategy>, FlagError> {
        if let Some(l) = last {
            self.done.push(l);
        }
        let n = self.done.len();
        let stopped = self.done.last().is_some_and(|(_, m)| m.stopped);
        match self.profile.clone() {
            Profile::Fixed(list) => Ok(if stopped { None } else { list.get(n).copied() }),
            Profile::Sweep {
                size,
                poisson,
                max_concurrency,
            } => {
                if n == 0 {
                    return Ok(Some(Strategy::Synchronous));
                }
                if n == 1 {
                    return Ok(Some(Strategy::Throughput { max_concurrency }));
                }
                if n == 2 {
                    let (lo, hi) = (self.done[0].1.requests_per_s, self.done[1].1.requests_per_s);
                    if lo <= 0.0 && hi <= 0.0 {
                        return Err(FlagError::fail(
                            "--profile kind=sweep: neither the synchronous nor the throughput benchmark completed a request; no rates to sweep",
                        ));
                    }
                    // GuideLLM's linspace(sync, throughput, size - 1) less its first.
                    let k = size.saturating_sub(1).max(2);
                    self.rates = (1..k)
                        .map(|i| lo + (hi - lo) * i as f64 / (k - 1) as f64)
                        .collect();
                } else if stopped {
                    return Ok(None);
                }
                let Some(&rate) = self.rates.get(n - 2) else {
                    return Ok(None);
                };
                if rate <= 0.0 {
                    return Ok(None);
                }
                Ok(Some(if poisson {
                    Strategy::Poisson {
                        rate,
                        max_concurrency,
                    }
                } else {
                    Strategy::Constant {
                        rate,
                        max_concurrency,
                    }
                }))
            }
            Profile::Knee {
                adaptive,
                each_side,
                max_step,
                ..
            } => {
                let initial = match &self.profile {
                    Profile::Knee { streams, .. } => streams.len(),
                    _ => 0,
                };
                if !self.analysed && (stopped || n == initial) {
                    self.analysed = true;
                    let knee = self.analyse();
                    if adaptive && !stopped {
                        if let Some(c) = knee.knee {
                            let measured: Vec<usize> = self.streams.clone();
                            self.conclusion.adaptive = knee_grid(c, each_side, max_step, &measured);
                            self.streams
                                .extend(self.conclusion.adaptive.iter().copied());
                        }
                    }
                }
                if stopped || n >= self.streams.len() {
                    if n > initial {
                        self.analyse();
                    }
                    return Ok(None);
                }
                Ok(Some(Strategy::Concurrent {
                    streams: self.streams[n],
                }))
            }
            Profile::Goodput {
                target,
                initial,
                max,
                tolerance,
                max_probes,
                confidence,
            } => self.goodput(
                stopped,
                (target, initial, max, tolerance, max_probes, confidence),
            ),
        }
    }

    fn analyse(&mut self) -> Knee {
        let pts: Vec<(f64, f64)> = (self.done.iter())
            .map(|(s, m)| (s.concurrency() as f64, m.output_tokens_per_s))
            .collect();
        let k = find_knee(&pts);
        self.conclusion.knee = Some(k.clone());
        k
    }

    fn goodput(
        &mut self,
        stopped: bool,
        (target, initial, max, tolerance, max_probes, confidence): (
            f64,
            usize,
            usize,
            f64,
            usize,
            f64,
        ),
    ) -> Result<Option<Strategy>, FlagError> {
        let c = &mut self.conclusion;
        let Some((s, m)) = self.done.last() else {
            return Ok(Some(Strategy::Concurrent { streams: initial }));
        };
        let streams = s.concurrency();
        if m.judged == 0 {
            return Err(FlagError::fail(format!(
                "--profile kind=goodput: no request at concurrency {streams} could be judged against the service levels (are the answers streamed?)"
            )));
        }
        let attainment = m.met as f64 / m.judged as f64;
        let (lower, upper) = wilson(m.met, m.judged, confidence);
        let passed = attainment >= target;
        c.probes.push(Probe {
            streams,
            attainment,
            lower,
            upper,
            judged: m.judged,
            passed,
            resolved: lower >= target || upper < target,
        });
        if stopped {
            c.stop_reason = Some("constraint_stopped_escalation");
            return Ok(None);
        }
        if passed {
            c.best_passing = Some(c.best_passing.map_or(streams, |b| b.max(streams)));
        } else {
            self.lowest_failing = Some(self.lowest_failing.map_or(streams, |f| f.min(streams)));
        }
        let next = match (c.best_passing, self.lowest_failing) {
            (_, None) if streams >= max => {
                c.stop_reason = Some("max_streams_reached");
                None
            }
            (_, None) => Some((streams * 2).min(max)),
            (None, Some(f)) if f <= 1 => {
                c.stop_reason = Some("fails_at_minimum");
                None
            }
            (None, Some(f)) => Some((f / 2).max(1)),
            (Some(b), Some(f)) => {
                if (f - b) as f64 <= tolerance * b as f64 || f - b <= 1 {
                    c.stop_reason = Some("converged");
                    None
                } else {
                    Some(b + (f - b) / 2)
                }
            }
        };
        if next.is_some() && self.done.len() >= max_probes {
            c.stop_reason = Some("max_probes_exhausted");
            return Ok(None);
        }
        Ok(next.map(|streams| Strategy::Concurrent { streams }))
    }
}

#[cfg(test)]
#[path = "profile_tests.rs"]
mod tests;
