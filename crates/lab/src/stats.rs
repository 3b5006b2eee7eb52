//! Statistics over repeated runs: summaries with confidence intervals, outliers by
//! median absolute deviation, and A/B verdicts from Welch's t-test (or Mann-Whitney U)
//! with a noise threshold and the ratio's uncertainty.
//!
//! A verdict's ratio, interval and p-value come from one method, so they cannot
//! contradict each other: the comparison is made on the logarithms of the samples
//! (throughput and latency are ratio-scale, and a log-ratio's interval cannot go
//! negative). Welch's interval for the difference of log means, exponentiated, is the
//! interval of the ratio of geometric means, and it excludes 1 exactly when Welch's
//! p < 0.05. For Mann-Whitney the interval is the set of log-ratio shifts the same test
//! does not reject (test inversion), around the Hodges-Lehmann estimate.
//!
//! Everything is computed from first principles (Student's t through the regularised
//! incomplete beta function, the normal CDF through erfc), so no numeric library is
//! needed and the tests pin the values against published tables.

use serde::{Deserialize, Serialize};
use stampede_engine::math::erfc;

/// Summary of repeated measurements.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of measurements.
    pub n: usize,
    /// Mean.
    pub mean: f64,
    /// Median.
    pub median: f64,
    /// Sample standard deviation.
    pub sd: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
    /// 95 % confidence interval of the mean (Student's t).
    pub ci95: (f64, f64),
    /// Indices of outliers (robust z-score over 3.5, from the median absolute deviation).
    pub outliers: Vec<usize>,
}

/// Summarises `xs` (not empty).
pub fn summarize(xs: &[f64]) -> Summary {
    let n = xs.len();
    let mean = xs.iter().sum::<f64>() / n as f64;
    let sd = if n > 1 {
        (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
    } else {
        0.0
    };
    let med = median(xs);
    let half = if n > 1 {
        t_quantile(0.975, (n - 1) as f64) * sd / (n as f64).sqrt()
    } else {
        0.0
    };
    let mad = median(&xs.iter().map(|x| (x - med).abs()).collect::<Vec<_>>());
    let outliers = if mad > 0.0 {
        xs.iter()
            .enumerate()
            .filter(|(_, x)| 0.6745 * (*x - med).abs() / mad > 3.5)
            .map(|(i, _)| i)
            .collect()
    } else {
        Vec::new()
    };
    Summary {
        n,
        mean,
        median: med,
        sd,
        min: xs.iter().cloned().fold(f64::INFINITY, f64::min),
        max: xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
        ci95: (mean - half, mean + half),
        outliers,
    }
}

fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Which test a comparison used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Test {
    /// Welch's unequal-variance t-test.
    Welch,
    /// Mann-Whitney U (normal approximation with tie correction).
    MannWhitney,
}

/// The answer of a comparison of B against A.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Shift {
    /// B is larger, significantly and beyond the noise threshold.
    Higher,
    /// B is smaller, significantly and beyond the noise threshold.
    Lower,
    /// Not significant, or within the noise threshold.
    NoDifference,
    /// Not given: a compared run was client-bound, so its figures describe the load
    /// generator, not the server (see [`crate::summary::Cell::limit`]).
    Withheld,
}

/// A comparison of samples B against baseline A.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// B over A: the ratio of geometric means (Welch), or the Hodges-Lehmann estimate
    /// of the ratio (Mann-Whitney).
    pub ratio: f64,
    /// 95 % interval of the ratio by the same method as the test; `None` when the
    /// samples are too small for any interval (fewer than two runs a side for Welch;
    /// for Mann-Whitney, too few for the test to reject any ratio).
    pub ratio_ci95: Option<(f64, f64)>,
    /// Two-sided p-value.
    pub p_value: f64,
    /// The test used.
    pub test: Test,
    /// The verdict at the 5 % level and the noise threshold.
    pub verdict: Shift,
    /// Why the verdict is withheld, when it is (a compared run was client-bound, or
    /// could not open its connections).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub withheld: Option<String>,
    /// Why the verdict is a bound, when it is: the side that came out ahead was
    /// client-bound, so its own figure understates it and the difference is at least
    /// the one shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_least: Option<String>,
}

impl Comparison {
    /// Withholds the verdict, saying why.
    pub fn withhold(&mut self, why: impl Into<String>) {
        self.verdict = Shift::Withheld;
        self.withheld = Some(why.into());
    }
}

/// Compares B against A on the samples' logarithms (see the module's note): a
/// difference is significant at 5 % and beyond `1 ± noise` in ratio. Samples must be
/// positive (req/s, latencies); non-positive values are clamped to the smallest
/// positive number.
pub fn compare(a: &[f64], b: &[f64], noise: f64, test: Test) -> Comparison {
    let ln =
        |xs: &[f64]| -> Vec<f64> { xs.iter().map(|x| x.max(f64::MIN_POSITIVE).ln()).collect() };
    let (la, lb) = (ln(a), ln(b));
    let (ratio, ratio_ci95, p_value) = match test {
        Test::Welch => {
            let (sa, sb) = (summarize(&la), summarize(&lb));
            let d = sb.mean - sa.mean;
            let (p, half) = welch(&sa, &sb);
            let ci = half.map(|h| ((d - h).exp(), (d + h).exp()));
            (d.exp(), ci, p)
        }
        Test::MannWhitney => {
            let (shift, ci) = mann_whitney_shift(&la, &lb);
            (
                shift.exp(),
                ci.map(|(lo, hi)| (lo.exp(), hi.exp())),
                mann_whitney_p(&la, &lb),
            )
        }
    };
    let verdict = if p_value < 0.05 && (ratio - 1.0).abs() > noise {
        if ratio > 1.0 {
            Shift::Higher
        } else {
            Shift::Lower
        }
    } else {
        Shift::NoDifference
    };
    Comparison {
        ratio,
        ratio_ci95,
        p_value,
        test,
        verdict,
        withheld: None,
        at_least: None,
    }
}

/// Welch's test of mean(b) − mean(a): the two-sided p-value and the half-width of the
/// 95 % interval of the difference (`None` with fewer than two values a side). The
/// interval excludes 0 exactly when p < 0.05: both use the same t and df.
pub fn welch(a: &Summary, b: &Summary) -> (f64, Option<f64>) {
    if a.n < 2 || b.n < 2 {
        return (1.0, None);
    }
    let (va, vb) = (a.sd.powi(2) / a.n as f64, b.sd.powi(2) / b.n as f64);
    let se = (va + vb).sqrt();
    if se == 0.0 {
        return (if a.mean == b.mean { 1.0 } else { 0.0 }, Some(0.0));
    }
    let t = (b.mean - a.mean) / se;
    let df = (va + vb).powi(2) / (va.powi(2) / (a.n - 1) as f64 + vb.powi(2) / (b.n - 1) as f64);
    let p = 2.0 * (1.0 - t_cdf(t.abs(), df));
    (p, Some(t_quantile(0.975, df) * se))
}

/// The Hodges-Lehmann shift of b against a (the median of all differences b_j − a_i)
/// and the 95 % interval of shifts δ for which Mann-Whitney U, on `a` against `b − δ`,
/// gives p ≥ 0.05; `None` when no shift is rejected (the samples are too small).
fn mann_whitney_shift(a: &[f64], b: &[f64]) -> (f64, Option<(f64, f64)>) {
    let mut d: Vec<f64> = b
        .iter()
        .flat_map(|y| a.iter().map(move |x| y - x))
        .collect();
    let shift = median(&d);
    d.sort_by(f64::total_cmp);
    d.dedup();
    // U only changes where a shift equals some difference: try each, the points between
    // them, and one beyond each end.
    let mut candidates = Vec::with_capacity(2 * d.len() + 1);
    if let (Some(&lo), Some(&hi)) = (d.first(), d.last()) {
        let pad = (hi - lo).abs().max(1e-9);
        candidates.push(lo - pad);
        for w in d.windows(2) {
            candidates.push(w[0]);
            candidates.push((w[0] + w[1]) / 2.0);
        }
        candidates.push(hi);
        candidates.push(hi + pad);
    }
    let shifted = |delta: f64| -> Vec<f64> { b.iter().map(|y| y - delta).collect() };
    let kept: Vec<usize> = (0..candidates.len())
        .filter(|&i| mann_whitney_p(a, &shifted(candidates[i])) >= 0.05)
        .collect();
    let (Some(&first), Some(&last)) = (kept.first(), kept.last()) else {
        return (shift, None);
    };
    if first == 0 || last == candidates.len() - 1 {
        // Not rejected even beyond every difference: no bounded interval.
        return (shift, None);
    }
    // Even indices inside are the points between differences: a kept one stands for its
    // whole gap, so the interval reaches the differences on either side.
    let lo = if first % 2 == 0 { first - 1 } else { first };
    let hi = if last % 2 == 0 { last + 1 } else { last };
    (shift, Some((candidates[lo], candidates[hi])))
}

fn mann_whitney_p(a: &[f64], b: &[f64]) -> f64 {
    let (n1, n2) = (a.len() as f64, b.len() as f64);
    let mut all: Vec<(f64, usize)> = a
        .iter()
        .map(|&x| (x, 0))
        .chain(b.iter().map(|&x| (x, 1)))
        .collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    // Average ranks for ties; collect tie sizes for the variance correction.
    let mut ranks = vec![0.0; all.len()];
    let mut ties = 0.0;
    let mut i = 0;
    while i < all.len() {
        let mut j = i;
        while j + 1 < all.len() && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let r = (i + j) as f64 / 2.0 + 1.0;
        for rank in ranks.iter_mut().take(j + 1).skip(i) {
            *rank = r;
        }
        let t = (j - i + 1) as f64;
        ties += t * t * t - t;
        i = j + 1;
    }
    let r1: f64 = all
        .iter()
        .zip(&ranks)
        .filter(|(x, _)| x.1 == 0)
        .map(|(_, r)| r)
        .sum();
    let u1 = r1 - n1 * (n1 + 1.0) / 2.0;
    let n = n1 + n2;
    let mu = n1 * n2 / 2.0;
    let var = n1 * n2 / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)));
    if var <= 0.0 {
        return 1.0;
    }
    // Continuity correction.
    let z = ((u1 - mu).abs() - 0.5).max(0.0) / var.sqrt();
    erfc(z / std::f64::consts::SQRT_2)
}

/// CDF of Student's t with `df` degrees of freedom.
pub fn t_cdf(t: f64, df: f64) -> f64 {
    let x = df / (df + t * t);
    let tail = 0.5 * inc_beta(df / 2.0, 0.5, x);
    if t >= 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

/// Quantile of Student's t by bisection on [`t_cdf`].
pub fn t_quantile(p: f64, df: f64) -> f64 {
    let (mut lo, mut hi) = (-1e3, 1e3);
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if t_cdf(mid, df) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

fn ln_gamma(x: f64) -> f64 {
    // Lanczos approximation (g = 7, n = 9).
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + 7.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// Regularised incomplete beta I_x(a, b) (continued fraction, Numerical Recipes).
fn inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_cf(a, b, x) / a
    } else {
        1.0 - front * beta_cf(b, a, 1.0 - x) / b
    }
}

fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    let tiny = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < tiny {
        d = tiny;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..300 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        if d.abs() < tiny {
            d = tiny;
        }
        c = 1.0 + aa / c;
        if c.abs() < tiny {
            c = tiny;
        }
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        if d.abs() < tiny {
            d = tiny;
        }
        c = 1.0 + aa / c;
        if c.abs() < tiny {
            c = tiny;
        }
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// Whether automatic repetitions may stop, and why: the 95 % interval of the mean of
/// `xs` is within ± `precision` of it, or `xs` differs from `baseline` by Welch's test
/// at 5 % divided among the `looks` the runner may take (Bonferroni: whatever the
/// look at which it stops, the chance of calling a difference that is not there stays
/// under 5 %). `None`: measure again.
pub fn settled(xs: &[f64], baseline: Option<&[f64]>, precision: f64, looks: u32) -> Option<String> {
    if xs.len() < 2 {
        return None;
    }
    let s = summarize(xs);
    let half = (s.ci95.1 - s.ci95.0) / 2.0;
    if s.mean != 0.0 && half / s.mean.abs() <= precision {
        return Some(format!(
            "the 95 % interval is ± {:.1} % of the mean (asked: ± {:.1} %)",
            half / s.mean.abs() * 100.0,
            precision * 100.0
        ));
    }
    let base = baseline.filter(|b| b.len() >= 2)?;
    let alpha = 0.05 / f64::from(looks.max(1));
    let c = compare(base, xs, 0.0, Test::Welch);
    (c.p_value < alpha).then(|| {
        format!(
            "it differs from the baseline ({:.2}×, Welch p = {:.2e}, below 0.05 / {looks} looks)",
            c.ratio, c.p_value
        )
    })
}

/// MSER-5 (White, 1997; Franklin and White, 2008): the warm-up to cut from the start
/// of a series, in observations. The series is averaged in batches of 5; the
/// truncation `d` (in batches, at most half of them) minimises the squared error of
/// the remaining batch means about their mean divided by the square of how many
/// remain, which balances bias left in against precision given up. `None` when the
/// series is too short to judge (fewer than four batches).
pub fn mser5(xs: &[f64]) -> Option<usize> {
    const BATCH: usize = 5;
    let z: Vec<f64> = xs
        .chunks_exact(BATCH)
        .map(|c| c.iter().sum::<f64>() / BATCH as f64)
        .collect();
    let m = z.len();
    if m < 4 {
        return None;
    }
    let score = |d: usize| {
        let rest = &z[d..];
        let k = rest.len() as f64;
        let mean = rest.iter().sum::<f64>() / k;
        rest.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (k * k)
    };
    let best = (0..=m / 2)
        .min_by(|&a, &b| score(a).total_cmp(&score(b)))
        .unwrap_or(0);
    Some(best * BATCH)
}

/// A deterministic, roughly standard normal sequence for tests: a 64-bit LCG's
/// uniforms summed twelve at a time.
#[cfg(test)]
pub(crate) struct Normal(pub u64);

#[cfg(test)]
impl Normal {
    pub(crate) fn next(&mut self) -> f64 {
        let mut acc = 0.0;
        for _ in 0..12 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            acc += (self.0 >> 11) as f64 / (1u64 << 53) as f64;
        }
        acc - 6.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn t_distribution_matches_tables() {
        // Two-sided 95 % critical values from Student's table.
        for (df, crit) in [
            (1.0, 12.706),
            (2.0, 4.303),
            (4.0, 2.776),
            (10.0, 2.228),
            (30.0, 2.042),
            (1000.0, 1.962),
        ] {
            assert!(
                close(t_quantile(0.975, df), crit, 0.002),
                "df {df}: {}",
                t_quantile(0.975, df)
            );
        }
        assert!(close(t_cdf(0.0, 5.0), 0.5, 1e-12));
        assert!(close(t_cdf(2.015, 5.0), 0.95, 1e-3));
    }

    #[test]
    fn summaries_of_known_samples() {
        let s = summarize(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert_eq!(s.mean, 5.0);
        assert_eq!(s.median, 4.5);
        assert!(close(s.sd, 2.138_09, 1e-5));
        // 5 ± 2.365 · 2.13809 / √8
        assert!(
            close(s.ci95.0, 3.212_5, 1e-3) && close(s.ci95.1, 6.787_5, 1e-3),
            "{:?}",
            s.ci95
        );
        // MAD = 0.5, so 9 has a robust z of 0.6745 · 4.5 / 0.5 = 6.07: an outlier; 2 and 7
        // (z = 3.37) are not.
        assert_eq!(s.outliers, vec![7]);
        let o = summarize(&[100.0, 101.0, 99.0, 100.5, 99.5, 160.0]);
        assert_eq!(o.outliers, vec![5]);
    }

    #[test]
    fn welch_matches_a_worked_example() {
        // Welch's test on these samples: t = -2.8284, df = 6.1538 (checked by hand).
        let a = [
            27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7,
            21.4,
        ];
        let b = [
            27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5,
            24.4,
        ];
        let (p, half) = welch(&summarize(&a), &summarize(&b));
        // Published result for this example: t = 2.46, df = 24.99, p = 0.021.
        assert!(close(p, 0.021, 0.002), "{p}");
        // The interval's half-width is t(0.975, 24.99) = 2.0595 standard errors, and the
        // standard error is the difference over t = 2.46.
        let d = summarize(&b).mean - summarize(&a).mean;
        assert!(close(half.unwrap(), 2.0595 * d / 2.46, 0.02), "{half:?}");
        let c = compare(&a, &b, 0.0, Test::Welch);
        assert_eq!(c.verdict, Shift::Higher);
    }

    /// A small deterministic generator for the agreement checks.
    fn lcg(seed: &mut u64) -> f64 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (*seed >> 11) as f64 / (1u64 << 53) as f64
    }

    #[test]
    fn a_verdict_s_interval_and_test_never_contradict_each_other() {
        let mut seed = 7;
        let mut significant = [0, 0];
        for case in 0..400 {
            let (na, nb) = (2 + case % 7, 2 + (case / 7) % 7);
            let spread = [0.01, 0.1, 0.5, 1.5][case % 4];
            let shift = 1.0 + [0.0, 0.02, 0.1, 0.5, -0.3][case % 5];
            let sample = |n: usize, m: f64, seed: &mut u64| -> Vec<f64> {
                (0..n)
                    .map(|_| m * (1.0 + spread * (lcg(seed) - 0.5)).max(0.01))
                    .collect()
            };
            let a = sample(na, 1000.0, &mut seed);
            let b = sample(nb, 1000.0 * shift, &mut seed);
            for (i, test) in [Test::Welch, Test::MannWhitney].into_iter().enumerate() {
                let c = compare(&a, &b, 0.0, test);
                let excludes_one = c.ratio_ci95.is_some_and(|(lo, hi)| lo > 1.0 || hi < 1.0);
                assert_eq!(
                    c.p_value < 0.05,
                    excludes_one,
                    "{test:?} {a:?} {b:?}: {c:?}"
                );
                if let Some((lo, hi)) = c.ratio_ci95 {
                    assert!(0.0 < lo && lo <= c.ratio && c.ratio <= hi, "{c:?}");
                }
                significant[i] += usize::from(excludes_one);
            }
        }
        // Both methods found differences in some cases and not in others.
        assert!(
            significant.iter().all(|&n| n > 20 && n < 380),
            "{significant:?}"
        );
    }

    #[test]
    fn the_reported_contradictions_cannot_recur() {
        // A ratio near 0.06 from runs with a wide spread: the interval stays positive
        // and agrees with the p-value.
        let a = [1000.0, 400.0, 1600.0];
        let b = [60.0, 20.0, 100.0];
        let c = compare(&a, &b, 0.05, Test::Welch);
        let (lo, hi) = c.ratio_ci95.unwrap();
        assert!(lo > 0.0 && hi < 1.0 && c.p_value < 0.05, "{c:?}");
        assert_eq!(c.verdict, Shift::Lower);
        let c = compare(
            &[100.0, 20.0, 180.0],
            &[300.0, 30.0, 500.0],
            0.05,
            Test::Welch,
        );
        let (lo, _) = c.ratio_ci95.unwrap();
        assert!(lo > 0.0, "{c:?}");
        // One run a side: no interval, no significance.
        let c = compare(&[100.0], &[200.0], 0.05, Test::Welch);
        assert_eq!((c.ratio_ci95, c.verdict), (None, Shift::NoDifference));
    }

    #[test]
    fn verdicts_respect_the_noise_threshold() {
        let a = [100.0, 101.0, 99.0, 100.0, 100.5];
        let b = [103.0, 104.0, 102.0, 103.0, 103.5];
        assert_eq!(compare(&a, &b, 0.02, Test::Welch).verdict, Shift::Higher);
        assert_eq!(
            compare(&a, &b, 0.05, Test::Welch).verdict,
            Shift::NoDifference
        );
        assert_eq!(compare(&b, &a, 0.02, Test::Welch).verdict, Shift::Lower);
        let same = compare(&a, &a, 0.0, Test::Welch);
        assert_eq!(same.verdict, Shift::NoDifference);
        assert!(close(same.ratio, 1.0, 1e-12));
        let mw = compare(&a, &b, 0.02, Test::MannWhitney);
        // Complete separation of 5 against 5: U = 0, z = 2.507 (with continuity), p = 0.0122.
        assert!(close(mw.p_value, 0.0122, 0.001), "{}", mw.p_value);
        assert_eq!(mw.verdict, Shift::Higher);
    }

    #[test]
    fn mser5_cuts_a_warm_up_and_leaves_a_steady_series_alone() {
        // 20 s climbing from 2,000 to 10,000 req/s, then 80 s around 10,000.
        let wiggle = |i: usize| ((i * 7919) % 13) as f64 * 20.0 - 120.0;
        let warm: Vec<f64> = (0..100)
            .map(|i| {
                let level = if i < 20 {
                    2_000.0 + 400.0 * i as f64
                } else {
                    10_000.0
                };
                level + wiggle(i)
            })
            .collect();
        let cut = mser5(&warm).unwrap();
        assert!((15..=25).contains(&cut), "{cut}");
        let steady: Vec<f64> = (0..100).map(|i| 10_000.0 + wiggle(i)).collect();
        assert!(mser5(&steady).unwrap() <= 5);
        assert_eq!(mser5(&steady[..15]), None);
    }

    #[test]
    fn auto_repetitions_stop_when_precise_or_different_and_not_before() {
        // Tight figures: precise at once.
        let tight = [1000.0, 1001.0, 999.0];
        assert!(settled(&tight, None, 0.02, 10).unwrap().contains("± "));
        // Noisy: neither precise nor, against a close baseline, different.
        let noisy = [900.0, 1100.0, 950.0];
        let base = [1000.0, 1010.0, 990.0];
        assert_eq!(settled(&noisy, Some(&base), 0.01, 10), None);
        // Clearly apart from the baseline though noisy: settled as different.
        let apart = [2000.0, 2150.0, 1900.0, 2050.0];
        let why = settled(&apart, Some(&base), 0.001, 10).unwrap();
        assert!(why.contains("differs from the baseline"), "{why}");
        // One run settles nothing.
        assert_eq!(settled(&[5.0], Some(&base), 0.5, 10), None);
        // The error rate stays honest: on equal populations, stopping at the first
        // look that rejects (of up to 18) calls a difference in under 5 % of trials.
        let mut noise = Normal(7);
        let mut normal = || noise.next();
        let trials = 400;
        let mut false_calls = 0;
        for _ in 0..trials {
            let base: Vec<f64> = (0..5).map(|_| 1000.0 + 50.0 * normal()).collect();
            let mut xs: Vec<f64> = (0..2).map(|_| 1000.0 + 50.0 * normal()).collect();
            while xs.len() <= 20 {
                if let Some(why) = settled(&xs, Some(&base), 1e-9, 19) {
                    if why.contains("differs") {
                        false_calls += 1;
                    }
                    break;
                }
                xs.push(1000.0 + 50.0 * normal());
            }
        }
        assert!(false_calls * 20 <= trials, "{false_calls} of {trials}");
    }
}
