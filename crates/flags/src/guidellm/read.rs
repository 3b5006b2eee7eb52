//! GuideLLM's argument strings that shape the run rather than its requests: the
//! profile (its kind and fields, `--override`, or the older `--rate-type --rate`),
//! the constraints, the outputs and the service levels of `--metrics`, each read
//! into stampede's terms with every unknown field refused by name.

use stampede_engine::Slo;

use super::kv::{self, Fields};
use super::profile::{Profile, Strategy};
use super::{Constraints, GuidellmArgs, Output};
use crate::args as common;
use crate::FlagError;

/// The default most requests in flight of throughput and rate strategies.
const DEFAULT_MAX_CONCURRENCY: usize = 512;

pub(super) fn profile(a: &GuidellmArgs) -> Result<(Profile, serde_json::Value), FlagError> {
    let mut m = match (&a.profile, &a.rate_type) {
        (Some(p), _) => kv::parse("--profile", p)?,
        (None, Some(t)) => {
            let mut m = serde_json::Map::new();
            m.insert("kind".into(), t.clone().into());
            if let Some(r) = &a.rate {
                let key = match t.as_str() {
                    "concurrent" => "streams",
                    "sweep" => "sweep_size",
                    _ => "rate",
                };
                m.insert(key.into(), r.clone().into());
            }
            m
        }
        (None, None) => {
            let mut m = serde_json::Map::new();
            m.insert("kind".into(), "sweep".into());
            m
        }
    };
    for pair in a.overrides.chunks(2) {
        let [k, v] = pair else { continue };
        let key = match k.as_str() {
            "profile.streams" => "streams",
            "profile.rate" => "rate",
            other => {
                return Err(FlagError::usage(format!(
                    "--override {other}: profile.streams or profile.rate"
                )))
            }
        };
        m.insert(key.into(), v.clone().into());
    }
    let echo = serde_json::Value::Object(m.clone());
    let mut f = Fields::from_map("--profile", m, "sweep");
    let max_c = |f: &mut Fields| -> Result<usize, FlagError> {
        Ok(f.count("max_concurrency", 1)?
            .map_or(DEFAULT_MAX_CONCURRENCY, |n| n.min(10_000) as usize))
    };
    let whole = |xs: Vec<f64>, f: &Fields, field: &str| -> Result<Vec<usize>, FlagError> {
        xs.into_iter()
            .map(|x| {
                (x.fract() == 0.0 && x <= 10_000.0)
                    .then_some(x as usize)
                    .ok_or_else(|| {
                        FlagError::usage(format!(
                            "--profile kind={}: {field} {x}: whole numbers from 1 to 10000",
                            f.kind()
                        ))
                    })
            })
            .collect()
    };
    let kind = f.kind().to_string();
    for transient in ["warmup", "cooldown"] {
        if let Some(v) = f.take(transient) {
            if v.as_f64() != Some(0.0) {
                return Err(FlagError::usage(format!(
                    "--profile kind={kind}: {transient} = {v}: every request is counted here, timed from its intended start; leave {transient} out"
                )));
            }
        }
    }
    if let Some(r) = f.number("rampup_duration")? {
        if r != 0.0 {
            return Err(FlagError::usage(format!(
                "--profile kind={kind}: rampup_duration = {r}: not offered; stampede vllm bench serve --ramp-up-strategy ramps a rate"
            )));
        }
    }
    let p = match kind.as_str() {
        "synchronous" => {
            f.done(&[])?;
            Profile::Fixed(vec![Strategy::Synchronous])
        }
        "concurrent" => {
            let xs = f.numbers("streams")?.ok_or_else(|| {
                FlagError::usage("--profile kind=concurrent: streams=N (or a list) is needed")
            })?;
            let streams = whole(xs, &f, "streams")?;
            f.done(&["streams"])?;
            Profile::Fixed(streams.into_iter().map(|streams| Strategy::Concurrent { streams }).collect())
        }
        "throughput" => {
            let max_concurrency = max_c(&mut f)?;
            f.done(&["max_concurrency"])?;
            Profile::Fixed(vec![Strategy::Throughput { max_concurrency }])
        }
        "constant" | "poisson" | "async" => {
            let rates = f.numbers("rate")?.ok_or_else(|| {
                FlagError::usage(format!("--profile kind={kind}: rate=R (or a list) is needed"))
            })?;
            let max_concurrency = max_c(&mut f)?;
            let poisson = match (kind.as_str(), f.string("strategy_type")?) {
                ("poisson", _) => true,
                ("async", Some(t)) => t == "poisson",
                _ => false,
            };
            f.done(&["rate", "max_concurrency", "strategy_type"])?;
            Profile::Fixed(
                rates
                    .into_iter()
                    .map(|rate| {
                        if poisson {
                            Strategy::Poisson { rate, max_concurrency }
                        } else {
                            Strategy::Constant { rate, max_concurrency }
                        }
                    })
                    .collect(),
            )
        }
        "sweep" => {
            let size = f.count("sweep_size", 3)?.unwrap_or(10).min(64) as usize;
            let poisson = match f.string("strategy_type")?.as_deref() {
                None | Some("constant") => false,
                Some("poisson") => true,
                Some(o) => {
                    return Err(FlagError::usage(format!(
                        "--profile kind=sweep: strategy_type={o}: constant or poisson"
                    )))
                }
            };
            let max_concurrency = max_c(&mut f)?;
            f.done(&["sweep_size", "strategy_type", "max_concurrency"])?;
            Profile::Sweep { size, poisson, max_concurrency }
        }
        "knee" => {
            let initial = f.numbers("initial_streams")?;
            let (lo, hi, n) = (f.count("min_streams", 1)?, f.count("max_streams", 1)?, f.count("count", 5)?);
            let streams = match (initial, lo, hi, n) {
                (Some(xs), None, None, None) => whole(xs, &f, "initial_streams")?,
                (None, Some(lo), Some(hi), Some(n)) if lo < hi && hi - lo >= n - 1 => {
                    let (steps, span) = (n - 1, hi - lo);
                    (0..n).map(|i| (lo + (i * span + steps / 2) / steps) as usize).collect()
                }
                _ => {
                    return Err(FlagError::usage(
                        "--profile kind=knee: initial_streams=[…] (five or more, increasing), or min_streams, max_streams and count (count ≥ 5 points that fit between them)",
                    ))
                }
            };
            if streams.len() < 5 || streams.windows(2).any(|w| w[0] >= w[1]) || streams.len() > 64 {
                return Err(FlagError::usage(
                    "--profile kind=knee: initial_streams must be 5 to 64 distinct concurrencies, increasing",
                ));
            }
            let adaptive = f.boolean("adaptive")?.unwrap_or(false);
            let each_side = f.count("points_each_side", 1)?.unwrap_or(5).min(32) as usize;
            let max_step = f.count("max_step", 1)?.unwrap_or(5).min(10_000) as usize;
            f.done(&["initial_streams", "min_streams", "max_streams", "count", "adaptive", "points_each_side", "max_step"])?;
            Profile::Knee { streams, adaptive, each_side, max_step }
        }
        "goodput" => {
            let target = f.number("target_attainment")?.unwrap_or(0.95);
            let initial = f.count("initial_streams", 1)?.unwrap_or(4) as usize;
            let max = f.count("max_streams", 1)?.unwrap_or(1024).min(10_000) as usize;
            let tolerance = f.number("tolerance")?.unwrap_or(0.1);
            let max_probes = f.count("max_probes", 1)?.unwrap_or(15).min(64) as usize;
            let confidence = f.number("confidence")?.unwrap_or(0.95);
            f.done(&["target_attainment", "initial_streams", "max_streams", "tolerance", "max_probes", "confidence"])?;
            let valid = target > 0.0
                && target < 1.0
                && tolerance > 0.0
                && tolerance <= 1.0
                && (0.5..=0.999).contains(&confidence)
                && initial <= max;
            if !valid {
                return Err(FlagError::usage(
                    "--profile kind=goodput: target_attainment in (0, 1), tolerance in (0, 1], confidence in [0.5, 0.999], initial_streams ≤ max_streams",
                ));
            }
            Profile::Goodput { target, initial, max, tolerance, max_probes, confidence }
        }
        "replay" => {
            return Err(FlagError::usage(
                "--profile kind=replay: trace replay is not offered by this command; stampede vllm bench serve --dataset-name burstgpt replays a trace's shape",
            ))
        }
        other => {
            return Err(FlagError::usage(format!(
                "--profile kind={other}: synchronous, concurrent, throughput, constant, poisson, async, sweep, knee or goodput"
            )))
        }
    };
    Ok((p, echo))
}

pub(super) fn constraints(a: &GuidellmArgs) -> Result<Constraints, FlagError> {
    let mut c = Constraints {
        max_requests: a.max_requests,
        max_duration: a.max_seconds,
        max_errors: a.max_errors,
    };
    for s in &a.constraint {
        let mut f = Fields::of("--constraint", s, "")?;
        f.take("stopping_scope");
        match f.kind() {
            "max_requests" => c.max_requests = f.count("count", 1)?,
            "max_duration" => c.max_duration = f.positive("seconds")?,
            "max_errors" => c.max_errors = f.count("count", 1)?,
            other => {
                return Err(FlagError::usage(format!(
                    "--constraint kind={other}: max_requests,count=N, max_duration,seconds=S or max_errors,count=N"
                )))
            }
        }
        f.done(&["count", "seconds", "stopping_scope"])?;
    }
    if let Some(d) = c.max_duration {
        if !(d > 0.0 && d.is_finite()) {
            return Err(FlagError::usage(format!("--max-seconds {d}: above 0")));
        }
    }
    Ok(c)
}

pub(super) fn outputs(a: &GuidellmArgs) -> Result<Vec<Output>, FlagError> {
    let mut out = Vec::new();
    if let Some(p) = &a.output_path {
        let lower = p.to_ascii_lowercase();
        if lower.ends_with(".json") {
            out.push(Output::Json(p.clone()));
        } else if lower.ends_with(".csv") {
            out.push(Output::Csv(p.clone()));
        } else if lower.ends_with(".yaml") || lower.ends_with(".yml") || lower.ends_with(".html") {
            return Err(FlagError::usage(format!(
                "--output-path {p}: .json or .csv (or a directory for both)"
            )));
        } else {
            out.push(Output::Json(format!(
                "{}/benchmarks.json",
                p.trim_end_matches('/')
            )));
            out.push(Output::Csv(format!(
                "{}/benchmarks.csv",
                p.trim_end_matches('/')
            )));
        }
    }
    for s in &a.output {
        let mut f = Fields::of("--output", s, "")?;
        let path = f.string("path")?.or(f.string("filename")?);
        let o = match f.kind() {
            "console" => Output::Console,
            "json" => Output::Json(path.unwrap_or_else(|| "benchmarks.json".into())),
            "csv" => Output::Csv(path.unwrap_or_else(|| "benchmarks.csv".into())),
            other => {
                return Err(FlagError::usage(format!(
                    "--output kind={other}: console, json or csv (html, plot and yaml are not written here; stampede report --html draws a run)"
                )))
            }
        };
        f.done(&["path", "filename"])?;
        out.push(o);
    }
    if a.output.is_empty() && a.output_path.is_none() {
        out.push(Output::Json("benchmarks.json".into()));
        out.push(Output::Csv("benchmarks.csv".into()));
    }
    for o in &out {
        if let Output::Json(p) | Output::Csv(p) = o {
            common::check_writable("--output", p)?;
        }
    }
    Ok(out)
}

pub(super) fn slo(a: &GuidellmArgs) -> Result<Option<Slo>, FlagError> {
    let Some(s) = &a.metrics else { return Ok(None) };
    let mut f = Fields::of("--metrics", s, "generative")?;
    let slo = f.object("slo")?;
    for k in [
        "sample_size",
        "prefer_response_metrics",
        "confidence",
        "warnings",
    ] {
        f.take(k);
    }
    f.done(&[
        "slo",
        "sample_size",
        "prefer_response_metrics",
        "confidence",
        "warnings",
    ])?;
    let Some(slo) = slo else { return Ok(None) };
    let mut levels = Vec::new();
    for (k, v) in slo {
        let ours = match k.as_str() {
            "ttft_ms" => "ttft",
            "tpot_ms" => "tpot",
            "e2el_ms" => "e2el",
            other => {
                return Err(FlagError::usage(format!(
                    "--metrics slo.{other}: ttft_ms, tpot_ms or e2el_ms"
                )))
            }
        };
        levels.push(format!("{ours}:{v}"));
    }
    Slo::parse(&levels).map_err(|e| FlagError::usage(format!("--metrics slo: {e}")))
}
