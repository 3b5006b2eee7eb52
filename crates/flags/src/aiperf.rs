//! `stampede aiperf profile`'s command line: AIPerf's profiling flags (its PyPI
//! release 0.13.0) translated into a run of stampede's engine — the endpoint and
//! model, synthetic prompts of a normal length distribution or a `single_turn` JSONL
//! file, concurrency, request rate (constant, Poisson or gamma arrivals), counts and
//! durations, goodput levels — whose report is AIPerf's console table and its
//! `profile_export_aiperf.json` (see [`stampede_report::aiperf`]).
//!
//! What differs, on purpose: time to first token and request latency run from each
//! request's intended start (AIPerf times from the send, so a queue behind its
//! concurrency is not in its figures; those are printed beside ours); AIPerf's
//! hundreds of other flags (multi-modal inputs, traces, sweeps, its services) are
//! refused by clap with the accepted list, and the server's metrics are scraped as
//! AIPerf scrapes them, from the URL's `/metrics` unless `--no-server-metrics`.

use std::time::Duration;

use clap::Parser;
use stampede_engine::input::{self, Input};
use stampede_engine::{LoadSpec, Shape, Slo, Target, TokenCounter};
use stampede_report::aiperf::Info;

use crate::args::{self as common, ResultFile, SegmentArgs};
use crate::dialect::{Dialect, Inert, Refused};
use crate::vllm::bodies::{Backend, Bodies};
use crate::vllm::datasets::{Rng, Sample, MAX_LEN};
use crate::{CommandLine, FlagError};

pub const DIALECT: Dialect = Dialect {
    tool: "aiperf profile",
    refused: &[
        Refused {
            flag: "--public-dataset",
            why: "public datasets are downloaded, and nothing is downloaded here",
            instead: "--input-file FILE of single_turn JSONL, or stampede vllm bench serve --dataset-name sharegpt --dataset-path FILE",
        },
        Refused {
            flag: "--fixed-schedule",
            why: "trace replay is not offered by this command",
            instead: "stampede load --targets FILE, or stampede vllm bench serve --dataset-name burstgpt",
        },
        Refused {
            flag: "--conversation-num",
            why: "multi-turn conversations are not offered by this command",
            instead: "stampede load --openai chat --turns N (or stampede guidellm run --data kind=synthetic_text,…,turns=N)",
        },
    ],
    inert: &[
        Inert {
            id: "ui",
            flag: "--ui",
            why: "progress is one line a second on standard error",
        },
        Inert {
            id: "no_gpu_telemetry",
            flag: "--no-gpu-telemetry",
            why: "no GPU telemetry is collected here",
        },
    ],
    prefixes: false,
    go: false,
};

/// `aiperf profile`'s flags.
#[derive(Parser, Debug)]
#[command(
    name = "stampede aiperf profile",
    version,
    about = "AIPerf's profile (its flags, console table and profile_export_aiperf.json)",
    disable_version_flag = true
)]
pub struct AiperfArgs {
    /// The model(s) to ask for, comma-separated: requests take them in turn
    #[arg(
        short = 'm',
        long = "model-names",
        visible_alias = "model",
        value_name = "NAMES",
        required = true
    )]
    pub model: String,
    /// The server's base URL; the endpoint type's path is appended
    #[arg(
        short = 'u',
        long = "url",
        value_name = "URL",
        default_value = "http://localhost:8000"
    )]
    pub url: String,
    /// chat (/v1/chat/completions), completions (/v1/completions) or embeddings
    /// (/v1/embeddings)
    #[arg(long = "endpoint-type", value_name = "TYPE", default_value = "chat")]
    pub endpoint_type: String,
    /// A path instead of the endpoint type's
    #[arg(
        long = "custom-endpoint",
        visible_alias = "endpoint",
        value_name = "PATH"
    )]
    pub endpoint: Option<String>,
    /// Stream the answers, timing each token
    #[arg(long = "streaming")]
    pub streaming: bool,
    /// The model's tokenizer (its tokenizer.json or the directory holding it);
    /// `builtin` or none: prompts and answers are counted in words
    #[arg(long = "tokenizer", value_name = "PATH")]
    pub tokenizer: Option<String>,
    /// Requests in flight at most
    #[arg(long = "concurrency", value_name = "N")]
    pub concurrency: Option<usize>,
    /// Requests per second
    #[arg(long = "request-rate", value_name = "RPS")]
    pub request_rate: Option<f64>,
    /// constant, poisson or gamma arrivals with --request-rate
    #[arg(
        long = "arrival-pattern",
        visible_alias = "request-rate-mode",
        value_name = "MODE",
        default_value = "poisson"
    )]
    pub arrival_pattern: String,
    /// The gamma arrivals' shape (1: Poisson's)
    #[arg(
        long = "arrival-smoothness",
        visible_alias = "vllm-burstiness",
        value_name = "F",
        default_value_t = 1.0
    )]
    pub arrival_smoothness: f64,
    /// Requests sent (default: max(10, 2 × concurrency), or the file's entries)
    #[arg(
        long = "request-count",
        visible_alias = "num-requests",
        value_name = "N"
    )]
    pub request_count: Option<u64>,
    /// Stop issuing requests after this many seconds
    #[arg(long = "benchmark-duration", value_name = "S")]
    pub benchmark_duration: Option<f64>,
    /// Requests of the first prompt sent before the run, not counted
    #[arg(
        long = "warmup-request-count",
        visible_alias = "num-warmup-requests",
        value_name = "N",
        default_value_t = 0
    )]
    pub warmup_request_count: u64,
    /// Synthetic prompts' mean length in tokens
    #[arg(long = "prompt-input-tokens-mean", visible_aliases = ["synthetic-input-tokens-mean", "isl"], value_name = "N", default_value_t = 550)]
    pub isl: u32,
    /// Their standard deviation
    #[arg(long = "prompt-input-tokens-stddev", visible_aliases = ["synthetic-input-tokens-stddev", "isl-stddev"], value_name = "N", default_value_t = 0.0)]
    pub isl_stddev: f64,
    /// The tokens each request asks for, on the mean (none: the model decides)
    #[arg(long = "prompt-output-tokens-mean", visible_aliases = ["output-tokens-mean", "osl"], value_name = "N")]
    pub osl: Option<u32>,
    /// Their standard deviation
    #[arg(long = "prompt-output-tokens-stddev", visible_aliases = ["output-tokens-stddev", "osl-stddev"], value_name = "N", default_value_t = 0.0)]
    pub osl_stddev: f64,
    /// A dataset file: JSONL, one {"text": …} (or {"texts": […]}) a line
    #[arg(long = "input-file", value_name = "FILE")]
    pub input_file: Option<String>,
    /// The file's layout: single_turn
    #[arg(long = "custom-dataset-type", value_name = "TYPE")]
    pub custom_dataset_type: Option<String>,
    /// Service levels, KEY:VALUE in ms: time_to_first_token, inter_token_latency,
    /// request_latency
    #[arg(long = "goodput", value_name = "KEY:MS", num_args = 1..)]
    pub goodput: Vec<String>,
    /// Where the exports go (made if missing)
    #[arg(
        long = "artifact-dir",
        visible_alias = "output-artifact-dir",
        value_name = "DIR",
        default_value = "artifacts"
    )]
    pub artifact_dir: String,
    /// The exports' base name (default: profile_export_aiperf)
    #[arg(
        long = "profile-export-prefix",
        visible_alias = "profile-export-file",
        value_name = "NAME"
    )]
    pub profile_export_prefix: Option<String>,
    #[arg(long = "ui-type", visible_alias = "ui", value_name = "TYPE", id = "ui")]
    pub ui: Option<String>,
    #[arg(long = "random-seed", value_name = "N")]
    pub random_seed: Option<u64>,
    /// Fields added to every request's body: KEY:VALUE pairs or a JSON object
    #[arg(long = "extra-inputs", value_name = "KEY:VALUE", num_args = 1..)]
    pub extra_inputs: Vec<String>,
    /// Headers sent with every request, Header:Value
    #[arg(short = 'H', long = "header", value_name = "HEADER:VALUE")]
    pub header: Vec<String>,
    /// Sent as Authorization: Bearer KEY
    #[arg(long = "api-key", value_name = "KEY")]
    pub api_key: Option<String>,
    /// A request unanswered after this long fails
    #[arg(
        long = "request-timeout-seconds",
        value_name = "S",
        default_value_t = 21_600.0
    )]
    pub request_timeout_seconds: f64,
    /// Scrape the server's metrics at this URL (default: the URL's /metrics)
    #[arg(long = "server-metrics", value_name = "URL", num_args = 0..)]
    pub server_metrics: Vec<String>,
    /// Scrape nothing from the server
    #[arg(long = "no-server-metrics")]
    pub no_server_metrics: bool,
    #[arg(long = "no-gpu-telemetry")]
    pub no_gpu_telemetry: bool,
    #[command(flatten)]
    pub result: ResultFile,
    #[command(flatten)]
    pub segments: SegmentArgs,
}

/// What the flags point at: the target, the tokenizer, the prompts.
pub struct Inputs {
    pub target: Target,
    pub tokenizer: Option<TokenCounter>,
    pub samples: Vec<Sample>,
}

pub struct Aiperf;

impl CommandLine for Aiperf {
    type Args = AiperfArgs;
    type Inputs = Inputs;
    type Info = Info;
    const DIALECT: &'static Dialect = &DIALECT;

    fn result_file(a: &AiperfArgs) -> &ResultFile {
        &a.result
    }

    fn segments(a: &AiperfArgs) -> &SegmentArgs {
        &a.segments
    }

    fn inputs(a: &AiperfArgs) -> Result<Inputs, FlagError> {
        let backend = backend(a)?;
        let path = a.endpoint.clone().unwrap_or_else(|| match backend {
            Backend::Completions => "/v1/completions".into(),
            Backend::Embeddings => "/v1/embeddings".into(),
            _ => "/v1/chat/completions".into(),
        });
        let target = common::resolve(&format!("{}{path}", a.url.trim_end_matches('/')), None)?;
        let tokenizer = match a.tokenizer.as_deref() {
            None | Some("builtin") => None,
            Some(t) => Some(TokenCounter::load(t, "--tokenizer").map_err(FlagError::usage)?),
        };
        let samples = samples(a, tokenizer.as_ref())?;
        Ok(Inputs {
            target,
            tokenizer,
            samples,
        })
    }

    fn translate(a: &AiperfArgs, inputs: Inputs) -> Result<(LoadSpec, Info), FlagError> {
        translate(a, inputs)
    }
}

fn backend(a: &AiperfArgs) -> Result<Backend, FlagError> {
    match a.endpoint_type.as_str() {
        "chat" => Ok(Backend::Chat),
        "completions" => Ok(Backend::Completions),
        "embeddings" => Ok(Backend::Embeddings),
        other => Err(FlagError::usage(format!(
            "--endpoint-type {other}: chat, completions or embeddings are offered here (audio, images, rankings and the others are not)"
        ))),
    }
}

/// The requests sent: `--request-count`, else AIPerf's default.
fn count(a: &AiperfArgs, file_entries: Option<usize>) -> u64 {
    a.request_count.unwrap_or_else(|| match file_entries {
        Some(n) => n as u64,
        None => 10.max(2 * a.concurrency.unwrap_or(1) as u64),
    })
}

/// A length drawn from a normal distribution (Box–Muller) around `mean`, at least 1.
pub(crate) fn normal(r: &mut Rng, mean: f64, stddev: f64) -> u32 {
    if stddev <= 0.0 {
        return (mean.round() as u32).clamp(1, MAX_LEN);
    }
    let u1 = ((r.draw() >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
    let u2 = (r.draw() >> 11) as f64 / (1u64 << 53) as f64;
    let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
    ((mean + stddev * z).round().max(1.0) as u32).min(MAX_LEN)
}

/// The prompts: the file's (taken in turn to the count), or drawn.
fn samples(a: &AiperfArgs, tokenizer: Option<&TokenCounter>) -> Result<Vec<Sample>, FlagError> {
    let seed = a.random_seed.unwrap_or(0);
    let mut r = Rng(seed ^ 0x6169_7065);
    if !(a.isl_stddev >= 0.0 && a.osl_stddev >= 0.0) {
        return Err(FlagError::usage("--isl-stddev and --osl-stddev: 0 or more"));
    }
    let out = |r: &mut Rng| a.osl.map_or(0, |m| normal(r, f64::from(m), a.osl_stddev));
    if let Some(path) = &a.input_file {
        match a.custom_dataset_type.as_deref() {
            None | Some("single_turn") => {}
            Some(other) => {
                return Err(FlagError::usage(format!(
                    "--custom-dataset-type {other}: single_turn is offered here"
                )))
            }
        }
        let text = input::read_text(path, "--input-file", Input::List)
            .map_err(|e| FlagError::usage(e.to_string()))?;
        let mut prompts = Vec::new();
        for (i, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let bad =
                |why: &str| FlagError::usage(format!("--input-file {path}, line {}: {why}", i + 1));
            let v: serde_json::Value =
                serde_json::from_str(line).map_err(|e| bad(&format!("not JSON ({e})")))?;
            let text = match (v.get("text"), v.get("texts")) {
                (Some(serde_json::Value::String(t)), _) => t.clone(),
                (_, Some(serde_json::Value::Array(ts))) => ts
                    .iter()
                    .map(|t| {
                        t.as_str()
                            .map(str::to_string)
                            .ok_or_else(|| bad("\"texts\" must be strings"))
                    })
                    .collect::<Result<Vec<_>, _>>()?
                    .join(" "),
                _ => {
                    return Err(bad(
                        "no \"text\" string or \"texts\" list (single_turn's layout)",
                    ))
                }
            };
            if prompts.len() == stampede_engine::openai::MAX_PROMPTS {
                return Err(bad("more entries than are read"));
            }
            prompts.push(text);
        }
        if prompts.is_empty() {
            return Err(FlagError::usage(format!(
                "--input-file {path}: no entries in it"
            )));
        }
        let n = count(a, Some(prompts.len())) as usize;
        check_count(n)?;
        return Ok((0..n)
            .map(|i| (prompts[i % prompts.len()].clone(), out(&mut r)))
            .collect());
    }
    let n = count(a, None) as usize;
    check_count(n)?;
    Ok((0..n)
        .map(|_| {
            let len = normal(&mut r, f64::from(a.isl), a.isl_stddev);
            let o = out(&mut r);
            (
                stampede_engine::openai::filler(len, tokenizer, &mut || r.draw()),
                o,
            )
        })
        .collect())
}

fn check_count(n: usize) -> Result<(), FlagError> {
    if n == 0 || n > stampede_engine::openai::MAX_PROMPTS {
        return Err(FlagError::usage(format!(
            "--request-count {n}: 1 to {}",
            stampede_engine::openai::MAX_PROMPTS
        )));
    }
    Ok(())
}

/// `--goodput` in AIPerf's names, as the engine's service levels.
fn goodput(levels: &[String]) -> Result<Option<Slo>, FlagError> {
    let mapped: Vec<String> = (levels.iter())
        .map(|l| {
            let (k, v) = l.split_once(':').unwrap_or((l, ""));
            let k = match k {
                "time_to_first_token" => "ttft",
                "inter_token_latency" => "tpot",
                "request_latency" => "e2el",
                other => {
                    return Err(FlagError::usage(format!(
                        "--goodput {other}: time_to_first_token, inter_token_latency or request_latency (ms)"
                    )))
                }
            };
            Ok(format!("{k}:{v}"))
        })
        .collect::<Result<_, _>>()?;
    Slo::parse(&mapped).map_err(|e| FlagError::usage(format!("--goodput {e}")))
}

/// `--extra-inputs`: KEY:VALUE pairs (values as JSON where they parse) or one JSON
/// object.
fn extra_inputs(words: &[String]) -> Result<serde_json::Map<String, serde_json::Value>, FlagError> {
    let mut m = serde_json::Map::new();
    for w in words {
        if w.trim_start().starts_with('{') {
            match serde_json::from_str::<serde_json::Value>(w) {
                Ok(serde_json::Value::Object(o)) => m.extend(o),
                _ => {
                    return Err(FlagError::usage(format!(
                        "--extra-inputs {w}: not a JSON object"
                    )))
                }
            }
            continue;
        }
        let Some((k, v)) = w.split_once(':') else {
            return Err(FlagError::usage(format!(
                "--extra-inputs {w}: KEY:VALUE or a JSON object"
            )));
        };
        let v = serde_json::from_str(v).unwrap_or_else(|_| serde_json::Value::String(v.into()));
        m.insert(k.to_string(), v);
    }
    Ok(m)
}

pub fn translate(a: &AiperfArgs, inputs: Inputs) -> Result<(LoadSpec, Info), FlagError> {
    let Inputs {
        target,
        tokenizer,
        samples,
    } = inputs;
    let backend = backend(a)?;
    let models: Vec<String> = a
        .model
        .split(',')
        .map(|m| m.trim().to_string())
        .filter(|m| !m.is_empty())
        .collect();
    if models.is_empty() {
        return Err(FlagError::usage("--model-names: at least one model"));
    }
    let slo = goodput(&a.goodput)?;
    let mut headers = Vec::new();
    if let Some(k) = &a.api_key {
        headers.push(("Authorization".to_string(), format!("Bearer {k}")));
    }
    for h in &a.header {
        let (n, v) = h
            .split_once(':')
            .ok_or_else(|| FlagError::usage(format!("--header {h}: Header:Value")))?;
        headers.push((n.trim().to_string(), v.trim().to_string()));
    }
    let streams = a.streaming && backend.generates();
    let bodies = Bodies {
        backend,
        model: &models[0],
        loras: if models.len() > 1 { &models } else { &[] },
        extra: extra_inputs(&a.extra_inputs)?,
        ignore_eos: false,
        seed: a.random_seed.unwrap_or(0),
        stream: streams,
    };
    let requests = bodies.requests(&target, &headers, "aiperf-", &samples, 1)?;
    let n = requests.len();
    let isl: Vec<u32> = match &tokenizer {
        Some(t) => samples.iter().map(|(p, _)| t.count(p)).collect(),
        None => samples
            .iter()
            .map(|(p, _)| p.split_whitespace().count() as u32)
            .collect(),
    };
    let mut spec = LoadSpec::new(target, requests[0].clone());
    spec.load.variety = requests;
    spec.load.walk = Some(stampede_engine::Walk {
        rate: 1.0,
        once: false,
    });
    spec.load.requests = Some(n as u64);
    if let Some(d) = a.benchmark_duration {
        if !(d > 0.0 && d.is_finite()) {
            return Err(FlagError::usage(format!(
                "--benchmark-duration {d}: seconds above 0"
            )));
        }
        spec.load.duration = Some(Duration::from_secs_f64(d));
        spec.load.requests = None;
    }
    if streams {
        spec.load.streams.stream = Some(stampede_engine::StreamMode::Openai);
        let most = samples.iter().map(|(_, o)| *o).max().unwrap_or(0);
        let most = if most == 0 { 100_000 } else { most };
        spec.load.streams.max_events = Some(most.saturating_mul(2).saturating_add(16));
        spec.load.streams.slo = slo;
        spec.load.streams.tokenizer = tokenizer.clone();
    } else if slo.is_some() {
        return Err(FlagError::usage(
            "--goodput: service levels time tokens; add --streaming",
        ));
    }
    if !(a.request_timeout_seconds > 0.0 && a.request_timeout_seconds.is_finite()) {
        return Err(FlagError::usage("--request-timeout-seconds: above 0"));
    }
    spec.load.timeout = Some(Duration::from_secs_f64(a.request_timeout_seconds));
    spec.load.seed = a.random_seed.unwrap_or(0);
    let cap = a.concurrency.unwrap_or(match a.request_rate {
        Some(_) => n.min(10_000),
        None => 1,
    });
    if cap == 0 {
        return Err(FlagError::usage("--concurrency: 1 or more"));
    }
    spec.load.connections = cap.min(10_000);
    spec.load.threads = common::cpus().min(spec.load.connections);
    if let Some(rate) = a.request_rate {
        if !(rate > 0.0 && rate.is_finite()) {
            return Err(FlagError::usage(format!("--request-rate {rate}: above 0")));
        }
        let gaps = match a.arrival_pattern.as_str() {
            "constant" => stampede_engine::arrivals::Gaps::of(false, None),
            "poisson" => stampede_engine::arrivals::Gaps::of(true, None),
            "gamma" => stampede_engine::arrivals::Gaps::check_burstiness(a.arrival_smoothness)
                .map(|b| stampede_engine::arrivals::Gaps::of(true, Some(b)))
                .map_err(|e| FlagError::usage(format!("--arrival-smoothness: {e}")))?,
            other => {
                return Err(FlagError::usage(format!(
                    "--arrival-pattern {other}: constant, poisson or gamma"
                )))
            }
        };
        spec.load.shape = Shape::Rate { rate, gaps };
    }
    let scrape = match (a.no_server_metrics, a.server_metrics.first()) {
        (true, _) => None,
        (false, Some(u)) => Some(u.clone()),
        (false, None) => Some(format!("{}/metrics", a.url.trim_end_matches('/'))),
    };
    let info = Info {
        model: models.join(","),
        url: a.url.clone(),
        endpoint_type: a.endpoint_type.clone(),
        streaming: streams,
        concurrency: a.concurrency,
        request_rate: a.request_rate,
        isl,
        seed: a.random_seed,
        artifact_dir: a.artifact_dir.clone(),
        prefix: a
            .profile_export_prefix
            .clone()
            .unwrap_or_else(|| "profile_export_aiperf".into()),
        scrape,
        warmups: a.warmup_request_count,
    };
    Ok((spec, info))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> AiperfArgs {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        DIALECT.parse::<AiperfArgs>(&args).map(|(a, _)| a).unwrap()
    }

    fn run(args: &[&str]) -> Result<(LoadSpec, Info), FlagError> {
        let a = parse(args);
        let inputs = Inputs {
            target: Target::parse_at("http://127.0.0.1:9/v1/chat/completions", None).unwrap(),
            tokenizer: None,
            samples: samples(&a, None)?,
        };
        translate(&a, inputs)
    }

    #[test]
    fn the_flags_make_aiperfs_requests_and_shape() {
        let (spec, info) = run(&[
            "-m",
            "a,b",
            "--streaming",
            "--concurrency",
            "4",
            "--request-rate",
            "8",
            "--request-rate-mode",
            "constant",
            "--isl",
            "12",
            "--isl-stddev",
            "3",
            "--osl",
            "5",
            "--extra-inputs",
            "ignore_eos:true",
            "temperature:0.5",
            "-H",
            "x-team:a",
            "--api-key",
            "k",
            "--goodput",
            "time_to_first_token:200",
            "request_latency:900",
        ])
        .unwrap();
        assert_eq!(
            spec.load.variety.len(),
            10,
            "AIPerf's default: max(10, 2 × 4)"
        );
        assert_eq!(spec.load.connections, 4);
        assert!(matches!(spec.load.shape, Shape::Rate { rate, .. } if rate == 8.0));
        let text = String::from_utf8_lossy(&spec.load.variety[3].bytes).into_owned();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(
            head.contains("Authorization: Bearer k") && head.contains("x-team: a"),
            "{head}"
        );
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["ignore_eos"], true);
        assert_eq!(v["temperature"], 0.5);
        assert_eq!(v["stream"], true);
        assert_eq!(v["max_completion_tokens"], 5);
        assert!(["a", "b"].contains(&v["model"].as_str().unwrap()));
        let slo = spec.load.streams.slo.unwrap();
        assert_eq!((slo.ttft_us, slo.e2el_us), (Some(200_000), Some(900_000)));
        assert!(
            info.isl.iter().any(|&n| n != 12),
            "lengths spread around the mean"
        );
        let mean = info.isl.iter().map(|&n| f64::from(n)).sum::<f64>() / info.isl.len() as f64;
        assert!((8.0..16.0).contains(&mean), "{mean}");
        assert_eq!(
            info.scrape.as_deref(),
            Some("http://localhost:8000/metrics")
        );
    }

    #[test]
    fn without_osl_or_streaming_the_model_decides_and_answers_whole() {
        let (spec, _) = run(&[
            "-m",
            "m",
            "--request-count",
            "3",
            "--isl",
            "4",
            "--no-server-metrics",
        ])
        .unwrap();
        let text = String::from_utf8_lossy(&spec.load.variety[0].bytes).into_owned();
        let body: serde_json::Value =
            serde_json::from_str(text.split_once("\r\n\r\n").unwrap().1).unwrap();
        assert!(
            body.get("max_completion_tokens").is_none() && body.get("stream").is_none(),
            "{body}"
        );
        assert!(spec.load.streams.stream.is_none());
    }

    #[test]
    fn bad_values_are_refused_by_flag() {
        for (args, want) in [
            (
                vec!["--endpoint-type", "rankings"],
                "--endpoint-type rankings",
            ),
            (
                vec!["--request-rate-mode", "burst", "--request-rate", "2"],
                "--arrival-pattern burst",
            ),
            (vec!["--goodput", "ttft:5", "--streaming"], "--goodput ttft"),
            (vec!["--goodput", "request_latency:5"], "add --streaming"),
            (vec!["--extra-inputs", "novalue"], "--extra-inputs novalue"),
            (
                vec!["--custom-dataset-type", "multi_turn", "--input-file", "x"],
                "single_turn is offered",
            ),
        ] {
            let mut all = vec!["-m", "m", "--isl", "2"];
            all.extend(args);
            let a = parse(&all);
            let e = match samples(&a, None) {
                Err(e) => e.to_string(),
                Ok(s) => {
                    let inputs = Inputs {
                        target: Target::parse_at("http://127.0.0.1:9/x", None).unwrap(),
                        tokenizer: None,
                        samples: s,
                    };
                    backend(&a)
                        .and_then(|_| translate(&a, inputs).map(|_| ()))
                        .err()
                        .map(|e| e.to_string())
                        .unwrap_or_default()
                }
            };
            assert!(e.contains(want), "{all:?}: {e}");
        }
        let args: Vec<String> = ["-m", "m", "--public-dataset", "sharegpt"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let e = DIALECT
            .parse::<AiperfArgs>(&args)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("--public-dataset") && e.contains("nothing is downloaded"),
            "{e}"
        );
    }
}
