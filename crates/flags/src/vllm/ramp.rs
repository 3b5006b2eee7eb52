//! `vllm bench serve`'s ramp-up (`--ramp-up-strategy linear|exponential` from
//! `--ramp-up-start-rps` to `--ramp-up-end-rps`): vLLM sets request `i` of `n`'s
//! rate by its place in the run — `start + (end - start)·i/(n-1)`, or
//! `start·(end/start)^(i/(n-1))` — and waits one gap at that rate before it. Here
//! that schedule becomes an arrival profile of the engine's: the run cut into
//! stretches of equal request counts, each a linear ramp of the arrival rate over the
//! time its requests take, so each request arrives at the rate vLLM gives it, timed
//! from that intended arrival.

use std::time::Duration;

use stampede_engine::inject::{InjectionStep, Profile};

use crate::FlagError;

/// How the rate grows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    Linear,
    Exponential,
}

/// A ramp-up from `start` to `end` requests per second over a run's requests.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RampUp {
    pub strategy: Strategy,
    pub start: f64,
    pub end: f64,
}

/// Stretches the schedule is cut into, at most.
const STRETCHES: usize = 100;

impl RampUp {
    /// The ramp the flags ask for, checked as vLLM checks it (and a start of 0,
    /// which vLLM accepts and then fails on, refused here).
    pub fn of(
        strategy: Option<&str>,
        start: Option<f64>,
        end: Option<f64>,
        rate_given: bool,
    ) -> Result<Option<RampUp>, FlagError> {
        let Some(s) = strategy else {
            if start.is_some() || end.is_some() {
                return Err(FlagError::usage(
                    "--ramp-up-start-rps and --ramp-up-end-rps: need --ramp-up-strategy linear or exponential",
                ));
            }
            return Ok(None);
        };
        let strategy = match s {
            "linear" => Strategy::Linear,
            "exponential" => Strategy::Exponential,
            other => {
                return Err(FlagError::usage(format!(
                    "--ramp-up-strategy {other}: linear or exponential"
                )))
            }
        };
        if rate_given {
            return Err(FlagError::usage(
                "--ramp-up-strategy: the ramp sets the request rate; leave out --request-rate",
            ));
        }
        let (Some(start), Some(end)) = (start, end) else {
            return Err(FlagError::usage(
                "--ramp-up-strategy: needs both --ramp-up-start-rps and --ramp-up-end-rps",
            ));
        };
        if !(start.is_finite() && end.is_finite()) || start < 1.0 || end < start {
            return Err(FlagError::usage(format!(
                "--ramp-up-start-rps {start} and --ramp-up-end-rps {end}: a start of 1 or more, an end at least the start (a rate of 0 would never send the first request)"
            )));
        }
        Ok(Some(RampUp {
            strategy,
            start,
            end,
        }))
    }

    /// Request `i` of `n`'s rate, as vLLM gives it.
    pub fn rate(&self, i: usize, n: usize) -> f64 {
        let progress = i as f64 / (n.max(2) - 1) as f64;
        match self.strategy {
            Strategy::Linear => self.start + (self.end - self.start) * progress,
            Strategy::Exponential => self.start * (self.end / self.start).powf(progress),
        }
    }

    /// When request `i` of `n` is due on average, seconds from the start: one gap
    /// at each rate up to its own.
    fn due(&self, i: usize, n: usize) -> f64 {
        (0..=i).map(|k| 1.0 / self.rate(k, n)).sum()
    }

    /// The arrival profile of `n` requests: stretches of linear ramps (Poisson
    /// arrivals when `poisson`, else even), then the end rate held, so a run whose
    /// random arrivals come short of `n` by the schedule's end still sends them all.
    pub fn profile(&self, n: usize, poisson: bool) -> Profile {
        let k = n.clamp(1, STRETCHES);
        let mut steps = Vec::with_capacity(k + 1);
        let mut at = 0.0;
        for j in 0..k {
            let (a, b) = (j * n / k, (j + 1) * n / k);
            let until = self.due(b.saturating_sub(1), n);
            let during = Duration::from_secs_f64((until - at).max(1e-6));
            at = until;
            steps.push(InjectionStep::RampRate {
                from: self.rate(a, n),
                to: self.rate(b.min(n - 1), n),
                during,
                randomized: poisson,
            });
        }
        steps.push(InjectionStep::ConstantRate {
            rate: self.end,
            during: Duration::from_secs_f64(n as f64 / self.end + 60.0),
            randomized: poisson,
        });
        Profile { steps }
    }

    /// Each whole rate the ramp reaches and when, seconds from the start (vLLM's
    /// `rps_change_events`).
    pub fn changes(&self, n: usize) -> Vec<(u64, f64)> {
        let mut out = vec![(self.start as u64, 0.0)];
        let mut at = 0.0;
        for i in 0..n {
            at += 1.0 / self.rate(i, n);
            let whole = self.rate(i, n) as u64;
            while out.last().is_some_and(|(r, _)| *r < whole) {
                let next = out.last().map_or(0, |(r, _)| r + 1);
                out.push((next, at));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ramp(strategy: Strategy) -> RampUp {
        RampUp {
            strategy,
            start: 2.0,
            end: 32.0,
        }
    }

    #[test]
    fn rates_follow_vllms_formulas_by_place() {
        let l = ramp(Strategy::Linear);
        assert_eq!(l.rate(0, 31), 2.0);
        assert_eq!(l.rate(15, 31), 17.0);
        assert_eq!(l.rate(30, 31), 32.0);
        let e = ramp(Strategy::Exponential);
        assert!((e.rate(15, 31) - 8.0).abs() < 1e-9);
        assert_eq!(e.rate(30, 31), 32.0);
    }

    /// The profile's stretches hold, on average, the requests the schedule puts in
    /// them, and last the time it gives them.
    #[test]
    fn the_profile_offers_each_stretch_its_requests_in_its_time() {
        for s in [Strategy::Linear, Strategy::Exponential] {
            let r = ramp(s);
            let n = 1000;
            let p = r.profile(n, true);
            assert_eq!(p.steps.len(), STRETCHES + 1);
            let mut offered = 0.0;
            let mut time = 0.0;
            for step in &p.steps[..STRETCHES] {
                let InjectionStep::RampRate {
                    from, to, during, ..
                } = step
                else {
                    panic!("{step:?}");
                };
                offered += (from + to) / 2.0 * during.as_secs_f64();
                time += during.as_secs_f64();
            }
            assert!(
                (offered - n as f64).abs() / (n as f64) < 0.02,
                "{s:?}: {offered}"
            );
            assert!((time - r.due(n - 1, n)).abs() < 1e-6);
        }
    }

    #[test]
    fn whole_rates_are_named_once_each_in_order() {
        let c = ramp(Strategy::Linear).changes(100);
        let rates: Vec<u64> = c.iter().map(|(r, _)| *r).collect();
        assert_eq!(rates, (2..=32).collect::<Vec<_>>());
        assert!(c.windows(2).all(|w| w[0].1 <= w[1].1));
    }

    #[test]
    fn bad_ramps_are_refused_by_flag() {
        for (s, a, b, rate, want) in [
            (
                Some("steep"),
                Some(1.0),
                Some(2.0),
                false,
                "linear or exponential",
            ),
            (
                Some("linear"),
                Some(1.0),
                Some(2.0),
                true,
                "leave out --request-rate",
            ),
            (Some("linear"), None, Some(2.0), false, "needs both"),
            (
                Some("linear"),
                Some(0.0),
                Some(2.0),
                false,
                "a start of 1 or more",
            ),
            (
                Some("linear"),
                Some(3.0),
                Some(2.0),
                false,
                "at least the start",
            ),
            (None, Some(1.0), None, false, "need --ramp-up-strategy"),
        ] {
            let e = RampUp::of(s, a, b, rate).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        }
        assert_eq!(RampUp::of(None, None, None, true).unwrap(), None);
    }
}
