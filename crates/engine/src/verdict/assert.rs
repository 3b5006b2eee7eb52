//! Assertions on a run's result, for CI: `p99 < 50ms`, `errors < 0.1%`, `rps > 10000`.
//!
//! An assertion is `METRIC OP VALUE`. Metrics: latency percentiles `pNN` (any
//! percentile, e.g. `p99.9`, from the corrected latency's full histogram), `mean`,
//! `max`, `min`, and the same prefixed `uncorrected_` (latency from the actual send);
//! `rps` (completed responses per second); `errors` and `non2xx` as a count or, with a
//! `%` value, a share of the requests. Operators: `<`, `<=`, `>`, `>=`, `==`, `!=`.
//! Latency values need a unit (`us`, `ms`, `s`); counts and rates take `k` and `M`.

use crate::error::SyntaxError;
use crate::RunResult;
use serde::{Deserialize, Serialize};

/// What an assertion measures.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Metric {
    /// A latency percentile (0–100), from the intended start or the actual send.
    Percentile(f64, bool),
    /// Mean latency.
    Mean(bool),
    /// Largest latency.
    Max(bool),
    /// Smallest latency.
    Min(bool),
    /// Completed responses per second.
    Rps,
    /// Failed requests.
    Errors,
    /// Completed responses that were not 2xx.
    Non2xx,
}

/// A comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

/// A parsed assertion.
#[derive(Debug, Clone, PartialEq)]
pub struct Assertion {
    /// As written.
    pub text: String,
    metric: Metric,
    op: Op,
    /// µs for latency, req/s, a count, or a fraction when `share`.
    value: f64,
    /// The value is a share of the requests (`%`).
    share: bool,
}

/// The outcome of one assertion on one result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checked {
    /// The assertion as written.
    pub assertion: String,
    /// Whether it held.
    pub passed: bool,
    /// The measured value, with its unit.
    pub actual: String,
}

/// A latency bound in µs: a duration as flags and plans write one, but with its unit
/// required (a bare `50` could mean anything here).
fn latency_value(v: &str) -> Result<f64, String> {
    let t = v.trim();
    if t.chars()
        .last()
        .is_none_or(|c| c.is_ascii_digit() || c == '.')
    {
        return Err(format!("{v:?} needs a unit: us, ms or s"));
    }
    crate::spec::parse_duration(t)
        .map(|d| d.as_secs_f64() * 1e6)
        .map_err(|e| e.to_string())
}

fn number(v: &str) -> Result<f64, String> {
    let t = v.trim();
    let (num, mult) = match t.chars().last() {
        Some('k') | Some('K') => (&t[..t.len() - 1], 1e3),
        Some('M') => (&t[..t.len() - 1], 1e6),
        _ => (t, 1.0),
    };
    num.trim()
        .parse::<f64>()
        .map(|n| n * mult)
        .map_err(|_| format!("{v:?} is not a number (10000, 10k, 1.5M)"))
}

impl Assertion {
    /// Parses `METRIC OP VALUE`.
    pub fn parse(s: &str) -> Result<Assertion, SyntaxError> {
        Self::parse_text(s).map_err(SyntaxError)
    }

    /// The parse, with the message as text (see the public wrapper above).
    fn parse_text(s: &str) -> Result<Assertion, String> {
        let ops = [
            ("<=", Op::Le),
            (">=", Op::Ge),
            ("==", Op::Eq),
            ("!=", Op::Ne),
            ("<", Op::Lt),
            (">", Op::Gt),
        ];
        let (at, len, op) = ops
            .iter()
            .filter_map(|(t, op)| s.find(t).map(|i| (i, t.len(), *op)))
            .min_by_key(|x| (x.0, usize::MAX - x.1))
            .ok_or_else(|| {
                format!("{s:?} has no comparison; write METRIC OP VALUE, e.g. 'p99 < 50ms', 'errors < 0.1%', 'rps > 10000'")
            })?;
        let name = s[..at].trim().to_ascii_lowercase();
        let value = s[at + len..].trim();
        let (unc, base) = match name.strip_prefix("uncorrected_") {
            Some(b) => (true, b),
            None => (false, name.as_str()),
        };
        let metric = match base {
            "mean" => Metric::Mean(unc),
            "max" => Metric::Max(unc),
            "min" => Metric::Min(unc),
            "rps" if !unc => Metric::Rps,
            "errors" if !unc => Metric::Errors,
            "non2xx" | "non_2xx" if !unc => Metric::Non2xx,
            p if p.starts_with('p') => {
                let q: f64 = p[1..].parse().map_err(|_| {
                    format!("{s:?}: {p:?} is not a percentile; write p50, p99, p99.9")
                })?;
                if !(0.0..=100.0).contains(&q) {
                    return Err(format!("{s:?}: {p:?} is not between p0 and p100"));
                }
                Metric::Percentile(q, unc)
            }
            other => {
                return Err(format!(
                    "{s:?}: unknown metric {other:?}; use pNN, mean, max, min (optionally uncorrected_…), rps, errors or non2xx"
                ))
            }
        };
        let (value, share) = match metric {
            Metric::Errors | Metric::Non2xx if value.ends_with('%') => (
                number(&value[..value.len() - 1]).map_err(|e| format!("{s:?}: {e}"))? / 100.0,
                true,
            ),
            Metric::Errors | Metric::Non2xx | Metric::Rps => {
                (number(value).map_err(|e| format!("{s:?}: {e}"))?, false)
            }
            _ => (
                latency_value(value).map_err(|e| format!("{s:?}: {e}"))?,
                false,
            ),
        };
        Ok(Assertion {
            text: s.trim().to_string(),
            metric,
            op,
            value,
            share,
        })
    }

    /// Checks the assertion against a result.
    pub fn check(&self, r: &RunResult) -> Checked {
        let hist = |unc: bool| {
            if unc {
                &r.histograms.uncorrected.0
            } else {
                &r.histograms.latency.0
            }
        };
        let ms = |us: f64| format!("{:.3} ms", us / 1000.0);
        let share = |n: u64, of: u64| if of == 0 { 0.0 } else { n as f64 / of as f64 };
        let (actual, shown) = match self.metric {
            Metric::Percentile(q, u) => {
                let h = hist(u);
                let v = crate::value_at_percentile(h, q) as f64;
                (v, ms(v))
            }
            Metric::Mean(u) => (hist(u).mean(), ms(hist(u).mean())),
            Metric::Max(u) => (hist(u).max() as f64, ms(hist(u).max() as f64)),
            Metric::Min(u) => (hist(u).min() as f64, ms(hist(u).min() as f64)),
            Metric::Rps => (r.throughput_rps, format!("{:.1} req/s", r.throughput_rps)),
            Metric::Errors if self.share => {
                let f = share(r.requests.failed, r.requests.started);
                (
                    f,
                    format!(
                        "{:.4}% ({} of {})",
                        f * 100.0,
                        r.requests.failed,
                        r.requests.started
                    ),
                )
            }
            Metric::Errors => (r.requests.failed as f64, r.requests.failed.to_string()),
            Metric::Non2xx if self.share => {
                let f = share(r.non_2xx(), r.requests.completed);
                (
                    f,
                    format!(
                        "{:.4}% ({} of {})",
                        f * 100.0,
                        r.non_2xx(),
                        r.requests.completed
                    ),
                )
            }
            Metric::Non2xx => (r.non_2xx() as f64, r.non_2xx().to_string()),
        };
        let v = self.value;
        let passed = match self.op {
            Op::Lt => actual < v,
            Op::Le => actual <= v,
            Op::Gt => actual > v,
            Op::Ge => actual >= v,
            Op::Eq => actual == v,
            Op::Ne => actual != v,
        };
        Checked {
            assertion: self.text.clone(),
            passed,
            actual: shown,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form_and_names_what_is_wrong() {
        let a = Assertion::parse("p99 < 50ms").unwrap();
        assert_eq!(
            (a.metric, a.op, a.value),
            (Metric::Percentile(99.0, false), Op::Lt, 50_000.0)
        );
        let a = Assertion::parse("uncorrected_p99.9<=1.5s").unwrap();
        assert_eq!(
            (a.metric, a.op, a.value),
            (Metric::Percentile(99.9, true), Op::Le, 1_500_000.0)
        );
        let a = Assertion::parse("errors < 0.1%").unwrap();
        assert!(a.share && (a.value - 0.001).abs() < 1e-12);
        let a = Assertion::parse("rps >= 10k").unwrap();
        assert_eq!((a.metric, a.op, a.value), (Metric::Rps, Op::Ge, 10_000.0));
        assert_eq!(Assertion::parse("non2xx == 0").unwrap().op, Op::Eq);
        for (bad, says) in [
            ("p99 50ms", "no comparison"),
            ("p99 < 50", "needs a unit"),
            ("p99 < 50 parsecs", "unknown unit"),
            ("latency < 5ms", "unknown metric"),
            ("p101 < 5ms", "between p0 and p100"),
            ("rps > lots", "not a number"),
        ] {
            let e = Assertion::parse(bad).unwrap_err();
            assert!(e.0.contains(says), "{bad}: {e}");
        }
    }
}
