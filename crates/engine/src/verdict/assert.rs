//! Assertions on a run's result, for CI: `p99 < 50ms`, `errors < 0.1%`, `rps > 10000`,
//! and on streams `ttft_p99 < 500ms`, `itl_p99 < 50ms`.
//!
//! An assertion is `METRIC OP VALUE`. Metrics: latency percentiles `pNN` (any
//! percentile, e.g. `p99.9`, from the corrected latency's full histogram), `mean`,
//! `max`, `min`, and the same prefixed `uncorrected_` (latency from the actual send);
//! `rps` (completed responses per second); `errors` and `non2xx` as a count or, with a
//! `%` value, a share of the requests. A run that times streams also has the same
//! statistics of its stream figures, written `FIGURE_STAT`: `ttft` (the first event,
//! alias `first_event`), `ttfb` (the first body byte, alias `first_byte`), `itl` (the
//! gap between events, alias `gap`), `tpot` (time per output token) and `e2el` (the
//! whole response, the latency above), the first two from the intended start or, with
//! `uncorrected_`, from the send; and `tokens_per_s` and `goodput` (completions per
//! second that met the service levels). A run of sessions (journeys, users) has
//! `journeys_failed` (alias `sessions_failed`): a count, or with `%` a share of the
//! journeys that ended. Operators: `<`, `<=`, `>`, `>=`, `==`, `!=`.
//! Latency values need a unit (`us`, `ms`, `s`); counts and rates take `k` and `M`.

use crate::error::SyntaxError;
use crate::RunResult;
use serde::{Deserialize, Serialize};

/// Which distribution a latency statistic reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Figure {
    /// The whole response (`pNN`, `mean`, … and `e2el_…`).
    Latency,
    /// The first body byte.
    Ttfb,
    /// The first event (the first token of a completion).
    Ttft,
    /// Between consecutive events.
    Itl,
    /// Time per output token.
    Tpot,
}

impl Figure {
    /// The figure a name prefix writes, and whether it is timed from a start (so has
    /// an uncorrected twin).
    fn named(s: &str) -> Option<(Figure, bool)> {
        Some(match s {
            "e2el" => (Figure::Latency, true),
            "ttft" | "first_event" => (Figure::Ttft, true),
            "ttfb" | "first_byte" => (Figure::Ttfb, true),
            "itl" | "gap" => (Figure::Itl, false),
            "tpot" => (Figure::Tpot, false),
            _ => return None,
        })
    }
}

/// A statistic of a distribution.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Stat {
    /// A percentile, 0–100.
    Percentile(f64),
    Mean,
    Max,
    Min,
}

/// What an assertion measures.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Metric {
    /// A statistic of a latency figure, from the intended start or (`true`) the send.
    Latency(Figure, Stat, bool),
    /// Completed responses per second.
    Rps,
    /// Failed requests.
    Errors,
    /// Completed responses that were not 2xx.
    Non2xx,
    /// Completion tokens per second.
    TokensPerS,
    /// Completions per second that met the service levels.
    Goodput,
    /// Sessions (journeys, users) that ended in failure: a request that got no
    /// answer, or a journey's failed check or capture.
    JourneysFailed,
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
fn latency_value(v: &str) -> Result<f64, SyntaxError> {
    let t = v.trim();
    if t.chars()
        .last()
        .is_none_or(|c| c.is_ascii_digit() || c == '.')
    {
        return Err(format!("{v:?} needs a unit: us, ms or s").into());
    }
    crate::spec::parse_duration(t)
        .map(|d| d.as_secs_f64() * 1e6)
        .map_err(|e| SyntaxError(e.to_string()))
}

fn number(v: &str) -> Result<f64, SyntaxError> {
    let t = v.trim();
    let (num, mult) = match t.chars().last() {
        Some('k') | Some('K') => (&t[..t.len() - 1], 1e3),
        Some('M') => (&t[..t.len() - 1], 1e6),
        _ => (t, 1.0),
    };
    num.trim()
        .parse::<f64>()
        .map(|n| n * mult)
        .map_err(|_| SyntaxError(format!("{v:?} is not a number (10000, 10k, 1.5M)")))
}

/// A metric's name, lower-cased: `p99`, `uncorrected_mean`, `ttft_p99.9`, `rps`, ….
fn metric(name: &str) -> Result<Metric, SyntaxError> {
    let (unc, base) = match name.strip_prefix("uncorrected_") {
        Some(b) => (true, b),
        None => (false, name),
    };
    let plain = match base {
        "rps" => Some(Metric::Rps),
        "errors" => Some(Metric::Errors),
        "non2xx" | "non_2xx" => Some(Metric::Non2xx),
        "tokens_per_s" => Some(Metric::TokensPerS),
        "goodput" => Some(Metric::Goodput),
        "journeys_failed" | "sessions_failed" => Some(Metric::JourneysFailed),
        _ => None,
    };
    if let Some(m) = plain {
        return match unc {
            true => Err(format!("{base} has no uncorrected form").into()),
            false => Ok(m),
        };
    }
    let (figure, stat) = match base.rsplit_once('_') {
        Some((f, stat)) => match Figure::named(f) {
            Some((fig, timed)) => {
                if unc && !timed {
                    return Err(format!(
                        "{f} is a gap between events, the same from the send; drop uncorrected_"
                    )
                    .into());
                }
                (fig, stat)
            }
            None => return Err(unknown(name)),
        },
        None => (Figure::Latency, base),
    };
    let stat = match stat {
        "mean" => Stat::Mean,
        "max" => Stat::Max,
        "min" => Stat::Min,
        p if p.starts_with('p') => {
            let q: f64 = p[1..]
                .parse()
                .map_err(|_| format!("{p:?} is not a percentile; write p50, p99, p99.9"))?;
            if !(0.0..=100.0).contains(&q) {
                return Err(format!("{p:?} is not between p0 and p100").into());
            }
            Stat::Percentile(q)
        }
        _ => return Err(unknown(name)),
    };
    Ok(Metric::Latency(figure, stat, unc))
}

fn unknown(name: &str) -> SyntaxError {
    SyntaxError(format!(
        "unknown metric {name:?}; use pNN, mean, max, min (optionally uncorrected_…), rps, errors or non2xx; on streams ttft_, ttfb_, itl_, tpot_ or e2el_ before pNN, mean, max or min, tokens_per_s or goodput"
    ))
}

/// The distribution a figure reads in `r`; `None` where the run timed no streams
/// (or, for TPOT, no completions).
fn figure(r: &RunResult, f: Figure, unc: bool) -> Option<&hdrhistogram::Histogram<u64>> {
    let h = &r.histograms;
    let s = h.stream.as_ref();
    Some(match (f, unc) {
        (Figure::Latency, false) => &h.latency.0,
        (Figure::Latency, true) => &h.uncorrected.0,
        (Figure::Ttfb, false) => &s?.first_byte.0,
        (Figure::Ttfb, true) => &s?.first_byte_uncorrected.0,
        (Figure::Ttft, false) => &s?.first_event.0,
        (Figure::Ttft, true) => &s?.first_event_uncorrected.0,
        (Figure::Itl, _) => &s?.gap.0,
        (Figure::Tpot, _) => {
            r.protocols.stream.as_ref()?.tokens.as_ref()?;
            &s?.tpot.0
        }
    })
}

/// Why a figure has no value: the flags that would have measured it.
fn absent(f: Figure) -> &'static str {
    match f {
        Figure::Tpot => "no completions timed (needs --openai)",
        _ => "no streams timed (needs --stream, --sse or --openai)",
    }
}

/// What a run's figures are while it goes (a fleet's seconds merged so far): enough
/// to judge the assertions on latency, rate and failures.
#[derive(Debug, Clone, Copy)]
pub struct LiveFigures<'a> {
    /// Latency from the intended start, and from the send.
    pub latency: &'a hdrhistogram::Histogram<u64>,
    pub uncorrected: &'a hdrhistogram::Histogram<u64>,
    /// Seconds since the start.
    pub seconds: f64,
    pub started: u64,
    pub completed: u64,
    pub failed: u64,
}

impl Assertion {
    /// Whether the assertion can be judged on [`LiveFigures`]: the response's latency
    /// statistics, `rps` and `errors` (not the stream figures, `non2xx` or journeys).
    pub fn judged_live(&self) -> bool {
        matches!(
            self.metric,
            Metric::Latency(Figure::Latency, ..) | Metric::Rps | Metric::Errors
        )
    }

    /// Judges the assertion on a run's figures so far; `None` when it is not one
    /// [`Assertion::judged_live`] or nothing it reads has been measured yet.
    pub fn check_live(&self, f: &LiveFigures) -> Option<Checked> {
        let (actual, shown) = match self.metric {
            Metric::Latency(Figure::Latency, stat, u) => {
                let h = if u { f.uncorrected } else { f.latency };
                if h.is_empty() {
                    return None;
                }
                let v = match stat {
                    Stat::Percentile(q) => crate::value_at_percentile(h, q) as f64,
                    Stat::Mean => h.mean(),
                    Stat::Max => h.max() as f64,
                    Stat::Min => h.min() as f64,
                };
                (v, format!("{:.3} ms", v / 1000.0))
            }
            Metric::Rps if f.seconds > 0.0 => {
                let v = f.completed as f64 / f.seconds;
                (v, format!("{v:.1} req/s"))
            }
            Metric::Errors if self.share && f.started > 0 => {
                let v = f.failed as f64 / f.started as f64;
                (
                    v,
                    format!("{:.4}% ({} of {})", v * 100.0, f.failed, f.started),
                )
            }
            Metric::Errors if !self.share => (f.failed as f64, f.failed.to_string()),
            _ => return None,
        };
        Some(Checked {
            assertion: self.text.clone(),
            passed: self.holds(actual),
            actual: shown,
        })
    }

    /// Whether `actual` meets the assertion (a value not measured, NaN, never does).
    fn holds(&self, actual: f64) -> bool {
        let v = self.value;
        !actual.is_nan()
            && match self.op {
                Op::Lt => actual < v,
                Op::Le => actual <= v,
                Op::Gt => actual > v,
                Op::Ge => actual >= v,
                Op::Eq => actual == v,
                Op::Ne => actual != v,
            }
    }

    /// Whether the assertion reads stream figures (a run that times none fails it).
    pub fn needs_stream(&self) -> bool {
        matches!(
            self.metric,
            Metric::Latency(Figure::Ttfb | Figure::Ttft | Figure::Itl, ..)
        ) || self.needs_tokens()
    }

    /// Whether the assertion reads completion tokens (OpenAI streams only).
    pub fn needs_tokens(&self) -> bool {
        matches!(
            self.metric,
            Metric::Latency(Figure::Tpot, ..) | Metric::TokensPerS | Metric::Goodput
        )
    }

    /// Parses `METRIC OP VALUE`.
    pub fn parse(s: &str) -> Result<Assertion, SyntaxError> {
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
        let metric = metric(&name).map_err(|e| format!("{s:?}: {e}"))?;
        let (value, share) = match metric {
            Metric::Errors | Metric::Non2xx | Metric::JourneysFailed if value.ends_with('%') => (
                number(&value[..value.len() - 1]).map_err(|e| format!("{s:?}: {e}"))? / 100.0,
                true,
            ),
            Metric::Errors
            | Metric::Non2xx
            | Metric::JourneysFailed
            | Metric::Rps
            | Metric::TokensPerS
            | Metric::Goodput => (number(value).map_err(|e| format!("{s:?}: {e}"))?, false),
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
        let ms = |us: f64| format!("{:.3} ms", us / 1000.0);
        let share = |n: u64, of: u64| if of == 0 { 0.0 } else { n as f64 / of as f64 };
        let tokens = r.protocols.stream.as_ref().and_then(|s| s.tokens.as_ref());
        let (actual, shown) = match self.metric {
            Metric::Latency(f, stat, u) => match figure(r, f, u) {
                Some(h) if !h.is_empty() => {
                    let v = match stat {
                        Stat::Percentile(q) => crate::value_at_percentile(h, q) as f64,
                        Stat::Mean => h.mean(),
                        Stat::Max => h.max() as f64,
                        Stat::Min => h.min() as f64,
                    };
                    (v, ms(v))
                }
                Some(_) => (f64::NAN, "none measured".into()),
                None => (f64::NAN, absent(f).into()),
            },
            Metric::TokensPerS => match tokens {
                Some(t) => (t.per_second, format!("{:.1} tok/s", t.per_second)),
                None => (f64::NAN, absent(Figure::Tpot).into()),
            },
            Metric::Goodput => match tokens.and_then(|t| t.goodput_rps) {
                Some(g) => (g, format!("{g:.2} req/s")),
                None if tokens.is_some() => (f64::NAN, "no service levels (--goodput)".into()),
                None => (f64::NAN, absent(Figure::Tpot).into()),
            },
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
            Metric::JourneysFailed => match &r.sessions {
                // A share of the journeys that ended; those still walking at the end
                // are neither.
                Some(st) if self.share => {
                    let ended = st.completed + st.failed;
                    let f = share(st.failed, ended);
                    (f, format!("{:.4}% ({} of {ended})", f * 100.0, st.failed))
                }
                Some(st) => (st.failed as f64, st.failed.to_string()),
                None => (f64::NAN, "no journeys or sessions in this run".into()),
            },
        };
        // A figure the run did not measure holds no comparison.
        let passed = self.holds(actual);
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
    fn live_figures_judge_latency_rate_and_failures_and_nothing_else() {
        let mut h = crate::measure::hist::new_histogram();
        for v in [1_000u64, 2_000, 40_000] {
            h.record(v).unwrap();
        }
        let empty = crate::measure::hist::new_histogram();
        let f = LiveFigures {
            latency: &h,
            uncorrected: &empty,
            seconds: 2.0,
            started: 4,
            completed: 3,
            failed: 1,
        };
        let check = |s: &str| Assertion::parse(s).unwrap().check_live(&f);
        let c = check("p99 < 10ms").unwrap();
        assert!(!c.passed && c.actual.starts_with("40."), "{c:?}");
        assert!(check("rps > 1").unwrap().passed);
        assert!(!check("errors < 20%").unwrap().passed);
        assert!(check("errors <= 1").unwrap().passed);
        // Nothing measured from the send yet: not judged.
        assert_eq!(check("uncorrected_p99 < 1ms"), None);
        let stream = Assertion::parse("ttft_p99 < 1s").unwrap();
        assert!(!stream.judged_live() && stream.check_live(&f).is_none());
        assert!(Assertion::parse("mean < 1s").unwrap().judged_live());
    }

    #[test]
    fn parses_every_form_and_names_what_is_wrong() {
        let a = Assertion::parse("p99 < 50ms").unwrap();
        assert_eq!(
            (a.metric, a.op, a.value),
            (
                Metric::Latency(Figure::Latency, Stat::Percentile(99.0), false),
                Op::Lt,
                50_000.0
            )
        );
        let a = Assertion::parse("uncorrected_p99.9<=1.5s").unwrap();
        assert_eq!(
            (a.metric, a.op, a.value),
            (
                Metric::Latency(Figure::Latency, Stat::Percentile(99.9), true),
                Op::Le,
                1_500_000.0
            )
        );
        let a = Assertion::parse("TTFT_p99 < 500ms").unwrap();
        assert_eq!(
            a.metric,
            Metric::Latency(Figure::Ttft, Stat::Percentile(99.0), false)
        );
        assert!(a.needs_stream() && !a.needs_tokens());
        let a = Assertion::parse("uncorrected_first_byte_mean < 2ms").unwrap();
        assert_eq!(a.metric, Metric::Latency(Figure::Ttfb, Stat::Mean, true));
        let a = Assertion::parse("tokens_per_s > 1.5k").unwrap();
        assert_eq!((a.metric, a.value), (Metric::TokensPerS, 1_500.0));
        assert!(a.needs_tokens());
        let a = Assertion::parse("e2el_max < 2s").unwrap();
        assert_eq!(a.metric, Metric::Latency(Figure::Latency, Stat::Max, false));
        assert!(!a.needs_stream());
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
            ("uncorrected_itl_p99 < 5ms", "drop uncorrected_"),
            ("uncorrected_goodput > 5", "no uncorrected form"),
            ("ttft_p999x < 5ms", "not a percentile"),
            ("ttft_median < 5ms", "unknown metric"),
            ("tokens_per_s > 5ms", "not a number"),
        ] {
            let e = Assertion::parse(bad).unwrap_err();
            assert!(e.0.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn failed_journeys_are_checked_as_a_count_or_a_share_of_those_that_ended() {
        let mut r: RunResult =
            serde_json::from_str(include_str!("../../tests/data/small-result.json"))
                .expect("fixture");
        let check = |a: &str, r: &RunResult| Assertion::parse(a).unwrap().check(r);
        let none = check("journeys_failed < 1%", &r);
        assert!(
            !none.passed && none.actual.contains("no journeys"),
            "{none:?}"
        );
        r.sessions = Some(crate::measure::result::SessionStats {
            started: 110,
            completed: 95,
            failed: 5,
            max_concurrent: 10,
            lifetime: crate::Hist::default().stats(),
            calls: 3,
            burst: 1,
        });
        // Ten still walking at the end are in neither.
        let share = check("journeys_failed < 6%", &r);
        assert!(share.passed, "{share:?}");
        assert_eq!(share.actual, "5.0000% (5 of 100)");
        assert!(!check("sessions_failed < 5%", &r).passed);
        assert!(check("journeys_failed <= 5", &r).passed);
        assert!(Assertion::parse("uncorrected_journeys_failed < 1").is_err());
    }

    /// A result whose stream figures are known: first events at 100 ms (99 of them)
    /// and 900 ms (1), 80 ms from the send; gaps of 10 ms; tokens when `tokens`.
    fn streamed(tokens: bool) -> RunResult {
        let mut r: RunResult =
            serde_json::from_str(include_str!("../../tests/data/small-result.json"))
                .expect("fixture");
        let mut s = crate::measure::stream::StreamHistograms::default();
        s.first_event.0.record_n(100_000, 99).unwrap();
        s.first_event.0.record(900_000).unwrap();
        s.first_event_uncorrected.0.record_n(80_000, 100).unwrap();
        s.gap.0.record_n(10_000, 1_000).unwrap();
        s.tpot.0.record_n(12_000, 100).unwrap();
        let mode = if tokens {
            crate::StreamMode::Openai
        } else {
            crate::StreamMode::Sse
        };
        r.protocols.stream = Some(crate::measure::stream::StreamStats::of(
            mode,
            (1_100, 0, 3_200, Some(90), 0),
            10.0,
            &s,
        ));
        r.histograms.stream = Some(s);
        r
    }

    #[test]
    fn stream_figures_are_checked_and_missing_ones_fail_with_the_flag_to_add() {
        let check = |a: &str, r: &RunResult| Assertion::parse(a).unwrap().check(r);
        let r = streamed(true);
        for (a, passed, shows) in [
            ("ttft_p50 < 150ms", true, "100."),
            ("ttft_p99.5 < 500ms", false, "90"),
            ("uncorrected_ttft_p99.5 < 100ms", true, "80."),
            ("itl_p99 <= 10.1ms", true, "10."),
            ("tpot_mean < 12.5ms", true, "12."),
            ("tokens_per_s >= 320", true, "320.0 tok/s"),
            ("goodput > 8.5", true, "9.00 req/s"),
            ("ttfb_p50 < 1s", false, "none measured"),
        ] {
            let c = check(a, &r);
            assert_eq!(c.passed, passed, "{a}: {c:?}");
            assert!(c.actual.contains(shows), "{a}: {c:?}");
        }
        let sse = streamed(false);
        let c = check("tpot_p99 < 1s", &sse);
        assert!(!c.passed && c.actual.contains("--openai"), "{c:?}");
        assert!(check("itl_p50 < 20ms", &sse).passed);
        let mut plain = streamed(false);
        plain.protocols.stream = None;
        plain.histograms.stream = None;
        let c = check("ttft_p99 < 1s", &plain);
        assert!(!c.passed && c.actual.contains("--sse"), "{c:?}");
    }
}
