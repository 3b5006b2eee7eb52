//! History: each scenario × target across every stored bench, and where its figure
//! changed.
//!
//! A series holds one point per complete bench that measured the pair: the figure the
//! bench compares (req/s for closed load, p99 for open load) as the mean over its
//! repetitions with its 95 % interval, and the bench's machine, stampede version and
//! git commit. Change points are found by PELT (Killick, Fearnhead and Eckley, 2012:
//! optimal partitioning with pruning) with a Gaussian change-in-mean cost and a
//! BIC-style penalty of `3 ln n` per change (in units of σ²), σ estimated robustly from
//! the median absolute difference between consecutive points (so that a shift does not
//! inflate it) and never below the benches' own standard errors; every segment holds
//! at least two benches (one odd bench is an outlier, not a change), and a change is
//! kept only when Welch's test separates its two segments at the 1 % level.

use serde::{Deserialize, Serialize};

use crate::stats::summarize;
use crate::summary::Metric;

/// One bench's figure for a scenario × target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// The bench.
    pub bench_id: i64,
    /// Its start, ms since the epoch.
    pub started_unix_ms: u64,
    /// Mean over its repetitions.
    pub figure: f64,
    /// 95 % interval of the mean (the figure itself with one run), never below zero.
    pub ci95: (f64, f64),
    /// Repetitions.
    pub runs: usize,
    /// The machine in one line.
    pub machine: String,
    /// stampede's version.
    pub stampede: String,
    /// Git commit of the directory the bench ran in.
    pub commit: Option<String>,
    /// Whether any of its runs was client-bound.
    pub client_bound: bool,
}

/// A change found in a series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// The last bench before the change.
    pub before_bench: i64,
    /// The first bench after it.
    pub after_bench: i64,
    /// Mean of the segment before.
    pub before_mean: f64,
    /// Mean of the segment after.
    pub after_mean: f64,
}

impl Change {
    /// After over before, minus one.
    pub fn relative(&self) -> f64 {
        self.after_mean / self.before_mean - 1.0
    }
}

/// One scenario × target over the benches, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Scenario name.
    pub scenario: String,
    /// Target name.
    pub target: String,
    /// What the figure is.
    pub metric: Metric,
    /// One point per bench.
    pub points: Vec<Point>,
    /// Changes found, oldest first.
    pub changes: Vec<Change>,
}

/// Every series in the store (complete benches only), optionally of one scenario.
#[cfg(feature = "store")]
pub fn history(
    store: &crate::store::Store,
    scenario: Option<&str>,
) -> Result<Vec<Series>, crate::store::StoreError> {
    use crate::environment::Environment;
    use crate::record::RunRecord;
    use crate::store::BenchRow;
    let mut benches: Vec<BenchRow> = store
        .benches()?
        .into_iter()
        .filter(|b| b.ended.as_deref() == Some("complete"))
        .collect();
    benches.sort_by_key(|b| b.id);
    let mut series: Vec<Series> = Vec::new();
    for b in &benches {
        let env: Option<Environment> = serde_json::from_str(&b.environment).ok();
        let runs = store.runs(b.id)?;
        let mut keys: Vec<(String, String)> = Vec::new();
        for r in &runs {
            let k = (r.scenario.clone(), r.target.clone());
            if scenario.is_none_or(|s| s == k.0) && !keys.contains(&k) {
                keys.push(k);
            }
        }
        for (sc, t) in keys {
            let rs: Vec<&RunRecord> = runs
                .iter()
                .filter(|r| r.scenario == sc && r.target == t)
                .collect();
            let metric = Metric::of_runs(rs.iter().copied());
            let xs: Vec<f64> = rs.iter().map(|r| metric.figure(&r.result)).collect();
            let s = summarize(&xs);
            let point = Point {
                bench_id: b.id,
                started_unix_ms: b.started_unix_ms,
                figure: s.mean,
                ci95: interval(&s),
                runs: s.n,
                machine: env.as_ref().map_or("unknown".into(), |e| e.one_line()),
                stampede: env.as_ref().map_or(String::new(), |e| e.stampede.clone()),
                commit: env.as_ref().and_then(|e| e.git_commit.clone()),
                client_bound: rs.iter().any(|r| r.result.client_bound()),
            };
            match series
                .iter_mut()
                .find(|x| x.scenario == sc && x.target == t && x.metric == metric)
            {
                Some(x) => x.points.push(point),
                None => series.push(Series {
                    scenario: sc,
                    target: t,
                    metric,
                    points: vec![point],
                    changes: Vec::new(),
                }),
            }
        }
    }
    for s in &mut series {
        s.changes = changes_of(&s.points);
    }
    Ok(series)
}

/// A bench's 95 % interval of its figure: the figures (req/s, latencies) are never
/// negative, and neither is their interval, so a wide t-interval of few runs is cut at
/// zero; one run's is the figure itself.
pub fn interval(s: &crate::stats::Summary) -> (f64, f64) {
    if s.n > 1 {
        (s.ci95.0.max(0.0), s.ci95.1)
    } else {
        (s.mean, s.mean)
    }
}

/// The changes in a series of points (see the module's note on the method).
pub fn changes_of(points: &[Point]) -> Vec<Change> {
    let xs: Vec<f64> = points.iter().map(|p| p.figure).collect();
    // The benches' own standard errors, from their 95 % intervals (t ≈ 2 or more),
    // by the upper half (the lower may be cut at zero).
    let se: Vec<f64> = points
        .iter()
        .filter(|p| p.runs > 1)
        .map(|p| (p.ci95.1 - p.figure) / 2.0)
        .collect();
    let floor = median(&se).unwrap_or(0.0);
    let mut sd = noise_sd(&xs).max(floor);
    if sd <= 0.0 {
        // No noise at all (figures that repeat exactly, as whole requests over equal
        // runs do): a thousandth of the level stands in, so that a clean step is still
        // a change; Welch's test below then keeps only what differs.
        let level = xs.iter().map(|x| x.abs()).sum::<f64>() / xs.len().max(1) as f64;
        sd = 1e-3 * level;
    }
    let cps = significant(&xs, pelt(&xs, sd));
    let mut out = Vec::new();
    let mut start = 0;
    let bounds: Vec<usize> = cps.iter().copied().chain([xs.len()]).collect();
    let mean = |a: usize, b: usize| xs[a..b].iter().sum::<f64>() / (b - a) as f64;
    for w in bounds.windows(2) {
        let (cp, next) = (w[0], w[1]);
        out.push(Change {
            before_bench: points[cp - 1].bench_id,
            after_bench: points[cp].bench_id,
            before_mean: mean(start, cp),
            after_mean: mean(cp, next),
        });
        start = cp;
    }
    out
}

/// The significance level a change must reach between its two segments.
pub const ALPHA: f64 = 0.01;

/// Keeps the changes whose segments differ by Welch's test at [`ALPHA`]: the least
/// significant is dropped and its segments joined until every change left passes
/// (PELT's σ is an estimate; this guards against changes it makes of noise).
pub fn significant(xs: &[f64], mut cps: Vec<usize>) -> Vec<usize> {
    loop {
        let bounds: Vec<usize> = [0]
            .into_iter()
            .chain(cps.iter().copied())
            .chain([xs.len()])
            .collect();
        let worst = (1..bounds.len() - 1)
            .map(|i| {
                let a = summarize(&xs[bounds[i - 1]..bounds[i]]);
                let b = summarize(&xs[bounds[i]..bounds[i + 1]]);
                (crate::stats::welch(&a, &b).0, i - 1)
            })
            .filter(|(p, _)| p.is_nan() || *p >= ALPHA)
            .max_by(|a, b| a.0.total_cmp(&b.0));
        match worst {
            Some((_, i)) => {
                cps.remove(i);
            }
            None => return cps,
        }
    }
}

fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    })
}

/// The noise σ of a series from its consecutive differences: MAD / 0.6745 / √2 (a
/// difference of two independent points has √2 σ; a few shifts barely move the median).
pub fn noise_sd(xs: &[f64]) -> f64 {
    let d: Vec<f64> = xs.windows(2).map(|w| (w[1] - w[0]).abs()).collect();
    let Some(m) = median(&d) else {
        return 0.0;
    };
    m / 0.6745 / std::f64::consts::SQRT_2
}

/// The penalty per change in units of `ln n` (BIC's is 2; 3 trades a little
/// sensitivity for fewer false alarms on short, noisy series; see [`pelt`]).
pub const PENALTY: f64 = 3.0;

/// The fewest benches a segment holds: one odd bench is an outlier, two in a row at a
/// new level are a change.
pub const MIN_SEGMENT: usize = 2;

/// PELT for changes in mean of a Gaussian series with known σ: the indices where a new
/// segment starts, in order, each segment at least [`MIN_SEGMENT`] long. Returns none
/// when σ is 0 or the series has fewer than three points.
pub fn pelt(xs: &[f64], sd: f64) -> Vec<usize> {
    let n = xs.len();
    if n < 3 || sd <= 0.0 || !sd.is_finite() {
        return Vec::new();
    }
    let var = sd * sd;
    let beta = PENALTY * (n as f64).ln();
    // Prefix sums for segment costs: cost(a, b) = Σ(x - mean)² / σ² over xs[a..b].
    let (mut s1, mut s2) = (vec![0.0; n + 1], vec![0.0; n + 1]);
    for (i, x) in xs.iter().enumerate() {
        s1[i + 1] = s1[i] + x;
        s2[i + 1] = s2[i] + x * x;
    }
    let cost = |a: usize, b: usize| {
        let len = (b - a) as f64;
        let sum = s1[b] - s1[a];
        ((s2[b] - s2[a]) - sum * sum / len).max(0.0) / var
    };
    let mut f = vec![f64::INFINITY; n + 1];
    f[0] = -beta;
    let mut last = vec![0usize; n + 1];
    let mut candidates: Vec<usize> = vec![0];
    for t in MIN_SEGMENT..=n {
        // A segment may start at s only if the one before it is long enough.
        let s_new = t - MIN_SEGMENT;
        if s_new >= MIN_SEGMENT {
            candidates.push(s_new);
        }
        let (best, arg) = candidates
            .iter()
            .map(|&s| (f[s] + cost(s, t) + beta, s))
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .expect("a candidate");
        f[t] = best;
        last[t] = arg;
        // Prune: a start that cannot beat the optimum now never will.
        candidates.retain(|&s| f[s] + cost(s, t) <= f[t]);
    }
    let mut cps = Vec::new();
    let mut t = n;
    while last[t] > 0 {
        cps.push(last[t]);
        t = last[t];
    }
    cps.reverse();
    cps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_never_goes_below_zero() {
        // Three p99s of 1, 1 and 31.75 ms: mean 11.25, the t-interval from -33 ms.
        let s = summarize(&[1.0, 1.0, 31.75]);
        assert!(s.ci95.0 < 0.0);
        let (lo, hi) = interval(&s);
        assert_eq!((lo, hi), (0.0, s.ci95.1));
        assert_eq!(interval(&summarize(&[5.0])), (5.0, 5.0));
    }

    fn noise(seed: u64, n: usize) -> Vec<f64> {
        let mut g = crate::stats::Normal(seed);
        (0..n).map(|_| g.next()).collect()
    }

    /// 199 series of 30 points, σ = 2: levels 100, 120, 95 (changes at 10 and 20) must
    /// be found exactly, and the same noise at one level must show none, in at least
    /// 95 % of them each.
    #[test]
    fn finds_known_shifts_and_none_in_noise() {
        let (mut missed, mut false_alarms) = (Vec::new(), Vec::new());
        for seed in 1..200 {
            let e = noise(seed, 30);
            let xs: Vec<f64> = (0..30)
                .map(|i| {
                    let level = match i {
                        0..=9 => 100.0,
                        10..=19 => 120.0,
                        _ => 95.0,
                    };
                    level + 2.0 * e[i]
                })
                .collect();
            if significant(&xs, pelt(&xs, noise_sd(&xs))) != vec![10, 20] {
                missed.push(seed);
            }
            let flat: Vec<f64> = e.iter().map(|x| 100.0 + 2.0 * x).collect();
            if !significant(&flat, pelt(&flat, noise_sd(&flat))).is_empty() {
                false_alarms.push(seed);
            }
        }
        // Any method errs on some noise; on these 199 series it must rarely.
        assert!(
            missed.len() <= 10 && false_alarms.len() <= 10,
            "missed {missed:?}, false alarms {false_alarms:?}"
        );
    }

    /// A bench per figure, numbered from `first`, each of `runs` runs.
    fn series(first: i64, runs: usize, xs: &[f64]) -> Vec<Point> {
        xs.iter()
            .enumerate()
            .map(|(i, &x)| Point {
                bench_id: first + i as i64,
                started_unix_ms: 0,
                figure: x,
                ci95: (x, x),
                runs,
                machine: String::new(),
                stampede: String::new(),
                commit: None,
                client_bound: false,
            })
            .collect()
    }

    #[test]
    fn a_clean_step_without_noise_is_a_change_and_a_flat_series_is_none() {
        // Whole requests over equal runs: the figures repeat exactly.
        let c = changes_of(&series(1, 3, &[93.0, 93.0, 92.0, 8.0, 8.0, 8.0]));
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!((c[0].before_bench, c[0].after_bench), (3, 4));
        let c = changes_of(&series(1, 3, &[8.0; 6]));
        assert!(c.is_empty(), "{c:?}");
        let c = changes_of(&series(1, 3, &[0.0; 6]));
        assert!(c.is_empty(), "{c:?}");
    }

    #[test]
    fn a_change_names_the_benches_on_either_side() {
        let points = series(100, 1, &[10.0, 10.2, 9.9, 10.1, 15.0, 15.2, 14.9, 15.1]);
        let c = changes_of(&points);
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!((c[0].before_bench, c[0].after_bench), (103, 104));
        assert!((c[0].relative() - 0.5).abs() < 0.02);
    }
}
