//! When users or requests arrive: deterministic and random arrival processes as plain
//! iterators of offsets from the start of the run.
//!
//! Every open-model shape (wrk2's fixed rate, Poisson arrivals, Gatling's open injection
//! steps, httperf's `--period` forms) is an iterator of non-decreasing [`Duration`]s.
//! Nothing here reads a clock, so every shape is tested exactly in simulated time, and
//! [`Stride`] splits one global arrival sequence across worker threads without
//! coordination (worker `w` of `n` takes arrivals `w, w+n, w+2n, …`).

use crate::error::SyntaxError;
use std::time::Duration;

/// A small, fast, seedable random generator (SplitMix64).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator with the given seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform number in (0, 1].
    pub fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// An exponentially distributed number with the given mean.
    pub fn exp(&mut self, mean: f64) -> f64 {
        -self.unit().ln() * mean
    }

    /// A standard normal number (Box and Muller's transform).
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }

    /// A gamma-distributed number of this shape (> 0) and scale: Marsaglia and
    /// Tsang's squeeze for shapes of 1 and more, and for smaller ones a draw of shape
    /// + 1 times `U^(1/shape)`.
    pub fn gamma(&mut self, shape: f64, scale: f64) -> f64 {
        if shape < 1.0 {
            let boost = self.unit().powf(1.0 / shape);
            return self.gamma(shape + 1.0, scale) * boost;
        }
        let d = shape - 1.0 / 3.0;
        let c = 1.0 / (9.0 * d).sqrt();
        loop {
            let x = self.normal();
            let v = (1.0 + c * x).powi(3);
            if v <= 0.0 {
                continue;
            }
            let u = self.unit();
            if u < 1.0 - 0.0331 * x.powi(4) || u.ln() < 0.5 * x * x + d * (1.0 - v + v.ln()) {
                return d * v * scale;
            }
        }
    }
}

/// How the gaps between a rate's arrivals are drawn.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Gaps {
    /// Every gap `1/rate` (wrk2's `-R`).
    Even,
    /// Exponential gaps: a Poisson process.
    Poisson,
    /// Gamma-distributed gaps of mean `1/rate` and this shape, the burstiness factor:
    /// below 1 the arrivals come in bursts, above 1 more evenly (the gaps' squared
    /// coefficient of variation is `1/burstiness`), and 1 is a Poisson process.
    Gamma(f64),
    /// Arrivals in groups of this many sent together, one group every `n/rate`
    /// seconds (oha's `--burst-rate` per `--burst-delay`).
    Burst(u32),
}

impl Gaps {
    /// The gaps a rate's flags ask for: `--poisson`, a `--burstiness` factor, or even.
    pub fn of(poisson: bool, burstiness: Option<f64>) -> Gaps {
        match burstiness {
            Some(1.0) => Gaps::Poisson,
            Some(b) => Gaps::Gamma(b),
            None if poisson => Gaps::Poisson,
            None => Gaps::Even,
        }
    }

    /// Checks a burstiness factor: finite and above 0.
    pub fn check_burstiness(b: f64) -> Result<f64, SyntaxError> {
        if b.is_finite() && b > 0.0 && b <= 1e6 {
            Ok(b)
        } else {
            Err(SyntaxError(format!(
                "{b} is not a burstiness factor; give a number above 0 (1 is a Poisson process, 0.5 burstier, 4 smoother)"
            )))
        }
    }

    /// The words a run's description uses: "", ", Poisson arrivals", ….
    pub fn describe(&self) -> String {
        match self {
            Gaps::Even => String::new(),
            Gaps::Poisson => ", Poisson arrivals".into(),
            Gaps::Gamma(b) => format!(", gamma arrivals of burstiness {b}"),
            Gaps::Burst(n) => format!(", in bursts of {n}"),
        }
    }
}

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s.max(0.0))
}

/// `rate` arrivals per second, evenly spaced, from offset 0.
#[derive(Debug, Clone)]
pub struct Fixed {
    period: f64,
    k: u64,
}

impl Fixed {
    /// Arrivals every `1/rate` seconds.
    pub fn new(rate: f64) -> Fixed {
        Fixed {
            period: 1.0 / rate,
            k: 0,
        }
    }
}

impl Iterator for Fixed {
    type Item = Duration;
    fn next(&mut self) -> Option<Duration> {
        let t = self.k as f64 * self.period;
        self.k += 1;
        Some(secs(t))
    }
}

/// `rate` arrivals per second in groups of `n` at once: group `k` at `k·n/rate`.
#[derive(Debug, Clone)]
pub struct Bursts {
    period: f64,
    n: u64,
    k: u64,
}

impl Bursts {
    /// Groups of `n` (at least 1) arriving together, `rate` arrivals per second.
    pub fn new(rate: f64, n: u32) -> Bursts {
        let n = u64::from(n.max(1));
        Bursts {
            period: n as f64 / rate,
            n,
            k: 0,
        }
    }
}

impl Iterator for Bursts {
    type Item = Duration;
    fn next(&mut self) -> Option<Duration> {
        let t = (self.k / self.n) as f64 * self.period;
        self.k += 1;
        Some(secs(t))
    }
}

/// A Poisson process: exponential gaps with mean `1/rate`.
#[derive(Debug, Clone)]
pub struct Poisson {
    mean_gap: f64,
    t: f64,
    rng: Rng,
}

impl Poisson {
    /// A Poisson process of `rate` arrivals per second.
    pub fn new(rate: f64, seed: u64) -> Poisson {
        Poisson {
            mean_gap: 1.0 / rate,
            t: 0.0,
            rng: Rng::new(seed),
        }
    }
}

impl Iterator for Poisson {
    type Item = Duration;
    fn next(&mut self) -> Option<Duration> {
        self.t += self.rng.exp(self.mean_gap);
        Some(secs(self.t))
    }
}

/// A renewal process whose gaps are gamma-distributed with mean `1/rate` and the
/// given shape (see [`Gaps::Gamma`]).
#[derive(Debug, Clone)]
pub struct Gamma {
    shape: f64,
    scale: f64,
    t: f64,
    rng: Rng,
}

impl Gamma {
    /// `rate` arrivals per second on average, of burstiness `shape`.
    pub fn new(rate: f64, shape: f64, seed: u64) -> Gamma {
        Gamma {
            shape,
            scale: 1.0 / (rate * shape),
            t: 0.0,
            rng: Rng::new(seed),
        }
    }
}

impl Iterator for Gamma {
    type Item = Duration;
    fn next(&mut self) -> Option<Duration> {
        self.t += self.rng.gamma(self.shape, self.scale);
        Some(secs(self.t))
    }
}

/// Takes every `n`-th arrival starting at the `w`-th: one worker's share.
pub struct Stride<I> {
    inner: I,
    n: usize,
    first: Option<usize>,
}

impl<I: Iterator> Stride<I> {
    /// Worker `w`'s share of `inner` among `n` workers.
    pub fn new(inner: I, w: usize, n: usize) -> Stride<I> {
        Stride {
            inner,
            n: n.max(1),
            first: Some(w),
        }
    }
}

impl<I: Iterator> Iterator for Stride<I> {
    type Item = I::Item;
    fn next(&mut self) -> Option<I::Item> {
        match self.first.take() {
            Some(w) => self.inner.nth(w),
            None => self.inner.nth(self.n - 1),
        }
    }
}

/// httperf's `--period` forms: `d`eterministic, `e`xponential, `u`niform and
/// `v`ariable (interarrival times T1 for D1 seconds, then T2 for D2, …).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Period {
    /// Fixed interarrival time, seconds.
    Deterministic(f64),
    /// Exponentially distributed with this mean, seconds.
    Exponential(f64),
    /// Uniformly distributed between the two bounds, seconds.
    Uniform(f64, f64),
    /// `(interarrival, duration)` pairs, seconds; the last pair repeats.
    Variable(Vec<(f64, f64)>),
}

impl Period {
    /// Parses `d0.01`, `e0.01`, `u0.005,0.015`, `v0.1,10,0.01,20`; a bare number is
    /// deterministic.
    pub fn parse(s: &str) -> Result<Period, SyntaxError> {
        let s = s.trim();
        let (kind, rest) = match s.chars().next() {
            Some(c @ ('d' | 'e' | 'u' | 'v' | 'D' | 'E' | 'U' | 'V')) => {
                (c.to_ascii_lowercase(), &s[1..])
            }
            Some(_) => ('d', s),
            None => return Err("empty period".into()),
        };
        let nums: Vec<f64> = rest
            .split(',')
            .map(|x| x.trim().parse::<f64>())
            .collect::<Result<_, _>>()
            .map_err(|_| format!("{s:?}: expected numbers in seconds, as in d0.01, e0.01, u0.005,0.015 or v0.1,10,0.01,20"))?;
        if nums.iter().any(|x| !x.is_finite() || *x < 0.0) {
            return Err(format!("{s:?}: times must be non-negative").into());
        }
        let p = match (kind, nums.as_slice()) {
            ('d', [t]) => Period::Deterministic(*t),
            ('e', [t]) => Period::Exponential(*t),
            ('u', [a, b]) if a <= b => Period::Uniform(*a, *b),
            ('v', v) if !v.is_empty() && v.len() % 2 == 0 => {
                Period::Variable(v.chunks(2).map(|c| (c[0], c[1])).collect())
            }
            _ => {
                return Err(format!(
                    "{s:?}: use d<T>, e<T>, u<T1>,<T2> (T1 <= T2) or v<T1>,<D1>,<T2>,<D2>…"
                )
                .into())
            }
        };
        Ok(p)
    }

    /// The arrivals this period describes, the first at offset 0.
    pub fn arrivals(&self, seed: u64) -> PeriodArrivals {
        PeriodArrivals {
            period: self.clone(),
            t: 0.0,
            first: true,
            rng: Rng::new(seed),
        }
    }
}

impl std::fmt::Display for Period {
    /// httperf's spelling: `d0.05`, `e0.01`, `u0.1,0.2`, `v0.5,10,0.25,20`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Period::Deterministic(t) => write!(f, "d{t}"),
            Period::Exponential(t) => write!(f, "e{t}"),
            Period::Uniform(a, b) => write!(f, "u{a},{b}"),
            Period::Variable(v) => {
                let parts: Vec<String> = v.iter().map(|(t, d)| format!("{t},{d}")).collect();
                write!(f, "v{}", parts.join(","))
            }
        }
    }
}

/// Iterator of [`Period::arrivals`].
#[derive(Debug, Clone)]
pub struct PeriodArrivals {
    period: Period,
    t: f64,
    first: bool,
    rng: Rng,
}

impl Iterator for PeriodArrivals {
    type Item = Duration;
    fn next(&mut self) -> Option<Duration> {
        if std::mem::take(&mut self.first) {
            return Some(Duration::ZERO);
        }
        let gap = match &self.period {
            Period::Deterministic(t) => *t,
            Period::Exponential(m) => self.rng.exp(*m),
            Period::Uniform(a, b) => a + (b - a) * self.rng.unit(),
            Period::Variable(pairs) => {
                let mut end = 0.0;
                let mut gap = pairs.last().map_or(0.0, |p| p.0);
                for &(t, d) in pairs {
                    end += d;
                    if self.t < end {
                        gap = t;
                        break;
                    }
                }
                gap
            }
        };
        self.t += gap;
        Some(secs(self.t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: impl Iterator<Item = Duration>) -> Vec<u128> {
        v.map(|d| d.as_millis()).collect()
    }

    #[test]
    fn fixed_rate_is_exact_and_strides_partition_it() {
        assert_eq!(ms(Fixed::new(4.0).take(5)), [0, 250, 500, 750, 1000]);
        let all: Vec<Duration> = Fixed::new(1000.0).take(30).collect();
        let mut merged: Vec<Duration> = (0..3)
            .flat_map(|w| Stride::new(Fixed::new(1000.0), w, 3).take(10))
            .collect();
        merged.sort();
        assert_eq!(merged, all);
    }

    #[test]
    fn bursts_arrive_together_at_the_rate() {
        // 3 every 100 ms is 30/s.
        assert_eq!(
            ms(Bursts::new(30.0, 3).take(7)),
            [0, 0, 0, 100, 100, 100, 200]
        );
        assert_eq!(ms(Bursts::new(4.0, 0).take(3)), [0, 250, 500]);
    }

    #[test]
    fn poisson_has_the_right_rate() {
        let n = Poisson::new(1000.0, 7)
            .take_while(|d| *d < Duration::from_secs(10))
            .count();
        assert!((9_700..10_300).contains(&n), "{n}");
    }

    /// The gaps' mean and squared coefficient of variation over `n` draws.
    fn moments(v: impl Iterator<Item = Duration>, n: usize) -> (f64, f64) {
        let t: Vec<f64> = v.take(n).map(|d| d.as_secs_f64()).collect();
        let gaps: Vec<f64> = t.windows(2).map(|w| w[1] - w[0]).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        (mean, var / (mean * mean))
    }

    #[test]
    fn gamma_gaps_keep_the_rate_and_spread_by_burstiness() {
        for (b, seed) in [(0.25, 1), (0.5, 2), (1.0, 3), (2.0, 4), (8.0, 5)] {
            let (mean, cv2) = moments(Gamma::new(100.0, b, seed), 200_001);
            assert!(
                (mean * 100.0 - 1.0).abs() < 0.02,
                "burstiness {b}: mean gap {mean}"
            );
            assert!(
                (cv2 * b - 1.0).abs() < 0.06,
                "burstiness {b}: squared coefficient of variation {cv2}, want {}",
                1.0 / b
            );
        }
        // A burstiness of 1 draws exponential gaps: the same spread as a Poisson process.
        let (_, cv2) = moments(Poisson::new(100.0, 9), 200_001);
        assert!((cv2 - 1.0).abs() < 0.05, "{cv2}");
        let a: Vec<Duration> = Gamma::new(50.0, 0.5, 11).take(100).collect();
        assert_eq!(a, Gamma::new(50.0, 0.5, 11).take(100).collect::<Vec<_>>());
        assert!(a.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn gaps_follow_the_flags_and_bad_factors_are_refused() {
        assert_eq!(Gaps::of(false, None), Gaps::Even);
        assert_eq!(Gaps::of(true, None), Gaps::Poisson);
        assert_eq!(Gaps::of(false, Some(1.0)), Gaps::Poisson);
        assert_eq!(Gaps::of(true, Some(0.5)), Gaps::Gamma(0.5));
        for b in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let e = Gaps::check_burstiness(b).unwrap_err().to_string();
            assert!(e.contains("burstiness"), "{e}");
        }
        assert_eq!(Gaps::check_burstiness(0.3).unwrap(), 0.3);
    }

    #[test]
    fn periods() {
        assert_eq!(Period::parse("d0.5").unwrap(), Period::Deterministic(0.5));
        assert_eq!(Period::parse("0.5").unwrap(), Period::Deterministic(0.5));
        assert!(Period::parse("u2,1").is_err());
        assert!(Period::parse("v1,2,3").is_err());
        assert!(Period::parse("x1").is_err());
        assert_eq!(
            ms(Period::parse("d0.5").unwrap().arrivals(1).take(3)),
            [0, 500, 1000]
        );
        let v = Period::parse("v0.5,1,0.25,10").unwrap();
        assert_eq!(ms(v.arrivals(1).take(6)), [0, 500, 1000, 1250, 1500, 1750]);
        let u: Vec<Duration> = Period::parse("u0.1,0.2")
            .unwrap()
            .arrivals(3)
            .take(100)
            .collect();
        for w in u.windows(2).skip(1) {
            let gap = (w[1] - w[0]).as_secs_f64();
            assert!((0.1..=0.2).contains(&gap), "{gap}");
        }
        let e: f64 = Period::parse("e0.01")
            .unwrap()
            .arrivals(5)
            .nth(10_000)
            .unwrap()
            .as_secs_f64();
        assert!((90.0..110.0).contains(&e), "{e}");
    }
}
