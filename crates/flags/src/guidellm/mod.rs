//! `stampede guidellm run` and `stampede guidellm benchmark`: GuideLLM's command
//! lines (its PyPI release 0.8.1, and the `benchmark --target --rate-type --rate`
//! form of its earlier releases that its documentation still shows) translated into
//! a series of runs of stampede's engine. The argument strings (`--backend
//! kind=openai_http,target=…`) are read by [`kv`]; the profile's benchmarks are
//! chosen one after another by [`profile::Planner`] from the figures of those before
//! (a sweep's rates from its synchronous and throughput request rates, a knee's
//! adaptive grid, a goodput search's bisection); the reports are
//! [`stampede_report::guidellm`]'s: its console tables, `benchmarks.json` and
//! `benchmarks.csv` under its keys.
//!
//! What differs, on purpose: every latency is timed from the request's intended
//! start (GuideLLM times from the send, so a queue behind its workers is not in its
//! figures); its warm-up and cool-down windows, trace replay, multi-modal data and
//! the Python backends are refused by name with what to use instead.

mod args;
pub mod data;
pub mod kv;
pub mod profile;

pub use args::GuidellmArgs;

use std::time::Duration;

use stampede_engine::{LoadSpec, Shape, Slo, Target, TokenCounter};

use crate::args::{self as common, ResultFile, SegmentArgs};
use crate::dialect::{Dialect, Inert, Refused};
use crate::vllm::bodies::{Backend, Bodies};
use crate::vllm::datasets::Sample;
use crate::{CommandLine, FlagError};
use kv::Fields;
use profile::{Profile, Strategy};

pub const DIALECT: Dialect = Dialect {
    tool: "guidellm",
    refused: &[
        Refused {
            flag: "--scenario",
            why: "scenario files are GuideLLM's own and its built-in ones are downloaded",
            instead: "the flags themselves (--backend, --profile, --data, --constraint)",
        },
        Refused {
            flag: "--data-column-mapper",
            why: "columns are found by their usual names (prompt, text, instruction, question, input, content; output_tokens_count, output_tokens)",
            instead: "a file whose prompt column has one of those names",
        },
        Refused {
            flag: "--data-preprocessor",
            why: "multi-modal preprocessing is not offered",
            instead: "text data",
        },
        Refused {
            flag: "--data-finalizer",
            why: "requests are finalised as generative ones, always",
            instead: "leave it out",
        },
        Refused {
            flag: "--data-loader",
            why: "data is read by stampede, not a PyTorch loader",
            instead: "leave it out",
        },
        Refused {
            flag: "--warmup-percent",
            why: "every request is counted, timed from its intended start; a warm-up window would hide the start-up GuideLLM's figures then leave out",
            instead: "a short run first (--constraint kind=max_requests,count=N), its report ignored",
        },
        Refused {
            flag: "--cooldown-percent",
            why: "every request is counted",
            instead: "--constraint kind=max_duration,seconds=S",
        },
    ],
    inert: &[
        Inert {
            id: "disable_progress",
            flag: "--disable-progress",
            why: "progress is one line a second on standard error, not redrawn",
        },
        Inert {
            id: "display_scheduler_stats",
            flag: "--display-scheduler-stats",
            why: "the scheduler's figures are the run's own (send lag) in the JSON",
        },
    ],
    prefixes: false,
    go: false,
};

/// The backend's fields.
#[derive(Debug, Clone)]
pub struct BackendArgs {
    pub target: String,
    pub model: Option<String>,
    /// `/v1/chat/completions` or `/v1/completions`.
    pub request_format: String,
    pub api_key: Option<String>,
    pub timeout: Option<f64>,
    pub max_tokens: Option<u32>,
    pub stream: bool,
    pub extras: serde_json::Map<String, serde_json::Value>,
}

/// An output asked for.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    Console,
    Json(String),
    Csv(String),
}

/// What ends each benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Constraints {
    pub max_requests: Option<u64>,
    pub max_duration: Option<f64>,
    /// Errors that stop the benchmark and the run.
    pub max_errors: Option<u64>,
}

/// What the runner and the reports need besides each benchmark's spec.
#[derive(Debug, Clone)]
pub struct Info {
    pub profile: Profile,
    /// The profile's own fields, as given (for the JSON's config).
    pub profile_args: serde_json::Value,
    pub constraints: Constraints,
    pub outputs: Vec<Output>,
    pub console: bool,
    pub backend: BackendArgs,
    pub model: String,
    pub data: serde_json::Value,
    pub seed: u64,
    pub labels: serde_json::Map<String, serde_json::Value>,
    /// Each request's prompt length in tokens (the tokenizer's, else words).
    pub isl: Vec<u32>,
    pub slo: Option<Slo>,
    pub streaming: bool,
    /// `turns` above 1: each benchmark's users hold conversations.
    pub chat: Option<ChatParts>,
}

/// What the flags point at.
pub struct Inputs {
    pub target: Target,
    pub backend: BackendArgs,
    pub model: String,
    pub tokenizer: Option<TokenCounter>,
    pub samples: Vec<Sample>,
    pub turns: data::Turns,
    pub data: serde_json::Value,
}

/// A multi-turn run's conversations and what each request carries besides them.
#[derive(Debug, Clone)]
pub struct ChatParts {
    /// Each conversation's turns: the prompt and the tokens it asks for.
    pub conversations: Vec<Vec<Sample>>,
    pub delay: (Duration, Duration),
    pub headers: Vec<(String, String)>,
    /// Body fields added to every request (`extras`, `ignore_eos`).
    pub extra: serde_json::Map<String, serde_json::Value>,
    pub path: String,
    pub authority: String,
}

pub struct Guidellm;

impl CommandLine for Guidellm {
    type Args = GuidellmArgs;
    type Inputs = Inputs;
    type Info = Info;
    const DIALECT: &'static Dialect = &DIALECT;

    fn result_file(a: &GuidellmArgs) -> &ResultFile {
        &a.result
    }

    fn segments(a: &GuidellmArgs) -> &SegmentArgs {
        &a.segments
    }

    fn inputs(a: &GuidellmArgs) -> Result<Inputs, FlagError> {
        let backend = backend(a)?;
        let target = common::resolve(
            &format!(
                "{}{}",
                backend.target.trim_end_matches('/'),
                backend.request_format
            ),
            None,
        )?;
        let tokenizer = match tokenizer_path(a)? {
            Some(t) => Some(TokenCounter::load(&t, "--tokenizer").map_err(FlagError::usage)?),
            None => None,
        };
        let model = match &backend.model {
            Some(m) => m.clone(),
            None => crate::vllm::models::first_model(&backend.target)?,
        };
        let (samples, turns, data) = data::read(&a.data, seed(a)?, tokenizer.as_ref())?;
        Ok(Inputs {
            target,
            backend,
            model,
            tokenizer,
            samples,
            turns,
            data,
        })
    }

    fn translate(a: &GuidellmArgs, inputs: Inputs) -> Result<(LoadSpec, Info), FlagError> {
        translate(a, inputs)
    }
}

fn backend(a: &GuidellmArgs) -> Result<BackendArgs, FlagError> {
    let mut f = match (&a.backend, &a.backend_args) {
        (Some(b), _) => Fields::of("--backend", b, "openai_http")?,
        (None, Some(j)) => Fields::from_map(
            "--backend-args",
            kv::parse("--backend-args", j)?,
            "openai_http",
        ),
        (None, None) => Fields::from_map("--backend", Default::default(), "openai_http"),
    };
    let kind = a
        .backend_type
        .clone()
        .unwrap_or_else(|| f.kind().to_string());
    if kind != "openai_http" {
        return Err(FlagError::usage(format!(
            "--backend kind={kind}: openai_http is offered (the websocket and in-process vLLM backends are not)"
        )));
    }
    let target = f
        .string("target")?
        .or_else(|| a.target.clone())
        .ok_or_else(|| {
            FlagError::usage(
                "--backend: target=URL is needed (the server's base URL), or --target URL",
            )
        })?;
    let model = f
        .string("model")?
        .or_else(|| a.model.clone())
        .filter(|m| !m.is_empty());
    let request_format = match (f.string("request_format")?, a.request_type.as_deref()) {
        (Some(r), _) => r,
        (None, Some("text_completions")) => "/v1/completions".into(),
        (None, Some("chat_completions") | None) => "/v1/chat/completions".into(),
        (None, Some(other)) => {
            return Err(FlagError::usage(format!(
                "--request-type {other}: chat_completions or text_completions"
            )))
        }
    };
    if !matches!(
        request_format.as_str(),
        "/v1/chat/completions" | "/v1/completions"
    ) {
        return Err(FlagError::usage(format!(
            "--backend kind=openai_http: request_format={request_format}: /v1/chat/completions or /v1/completions are offered (embeddings, responses, audio and pooling are not)"
        )));
    }
    let out = BackendArgs {
        target,
        model,
        request_format,
        api_key: f.string("api_key")?,
        timeout: f.positive("timeout")?,
        max_tokens: f
            .count("max_tokens", 1)?
            .map(|n| n.min(u64::from(u32::MAX)) as u32),
        stream: f.boolean("stream")?.unwrap_or(true),
        extras: match f.object("extras")? {
            // GuideLLM's extras hold body fields under `body`, or are the fields.
            Some(mut o) => match o.remove("body") {
                Some(serde_json::Value::Object(b)) => b,
                _ => o,
            },
            None => Default::default(),
        },
    };
    for ignored in [
        "timeout_connect",
        "http2",
        "follow_redirects",
        "verify",
        "validate_backend",
    ] {
        f.take(ignored);
    }
    f.done(&[
        "target",
        "model",
        "request_format",
        "api_key",
        "timeout",
        "max_tokens",
        "stream",
        "extras",
        "timeout_connect",
        "http2",
        "follow_redirects",
        "verify",
        "validate_backend",
    ])?;
    Ok(out)
}

fn tokenizer_path(a: &GuidellmArgs) -> Result<Option<String>, FlagError> {
    if let Some(t) = &a.tokenizer {
        let mut f = Fields::of("--tokenizer", t, "hf_auto")?;
        if !matches!(f.kind(), "hf_auto" | "huggingface_auto") {
            return Err(FlagError::usage(format!(
                "--tokenizer kind={}: hf_auto (a local directory or tokenizer.json)",
                f.kind()
            )));
        }
        let m = f.string("model")?;
        f.take("load_kwargs");
        f.done(&["model", "load_kwargs"])?;
        return Ok(m);
    }
    Ok(a.processor.clone())
}

fn seed(a: &GuidellmArgs) -> Result<u64, FlagError> {
    match &a.seed {
        Some(s) => {
            let mut f = Fields::of("--seed", s, "static")?;
            let v = f.count("value", 0)?.unwrap_or(42);
            f.done(&["value"])?;
            Ok(v)
        }
        None => Ok(a.random_seed.unwrap_or(42)),
    }
}

/// The default most requests in flight of throughput and rate strategies.
const DEFAULT_MAX_CONCURRENCY: usize = 512;

fn profile(a: &GuidellmArgs) -> Result<(Profile, serde_json::Value), FlagError> {
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

fn constraints(a: &GuidellmArgs) -> Result<Constraints, FlagError> {
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

fn outputs(a: &GuidellmArgs) -> Result<Vec<Output>, FlagError> {
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

fn slo(a: &GuidellmArgs) -> Result<Option<Slo>, FlagError> {
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

pub fn translate(a: &GuidellmArgs, inputs: Inputs) -> Result<(LoadSpec, Info), FlagError> {
    let Inputs {
        target,
        backend,
        model,
        tokenizer,
        samples,
        turns,
        data,
    } = inputs;
    let (profile, profile_args) = profile(a)?;
    let constraints = constraints(a)?;
    let slo = slo(a)?;
    if matches!(profile, Profile::Goodput { .. }) && slo.is_none() {
        return Err(FlagError::usage(
            "--profile kind=goodput searches for the most load meeting service levels: give them, e.g. --metrics kind=generative,slo.ttft_ms=2000",
        ));
    }
    let mut labels = serde_json::Map::new();
    for l in &a.label {
        let (k, v) = l
            .split_once('=')
            .ok_or_else(|| FlagError::usage(format!("--label {l}: KEY=VALUE")))?;
        labels.insert(k.to_string(), v.into());
    }
    let mut headers = Vec::new();
    if let Some(k) = backend
        .api_key
        .clone()
        .or_else(|| std::env::var("OPENAI_API_KEY").ok())
    {
        headers.push(("Authorization".to_string(), format!("Bearer {k}")));
    }
    let api = if backend.request_format == "/v1/completions" {
        Backend::Completions
    } else {
        Backend::Chat
    };
    let samples: Vec<Sample> = match backend.max_tokens {
        Some(m) => samples
            .into_iter()
            .map(|(p, o)| (p, if o == 0 { m } else { o.min(m) }))
            .collect(),
        None => samples,
    };
    let bodies = Bodies {
        backend: api,
        model: &model,
        loras: &[],
        extra: backend.extras.clone(),
        ignore_eos: samples.iter().any(|(_, o)| *o > 0),
        seed: 0,
        stream: backend.stream,
    };
    let requests = bodies.requests(&target, &headers, "guidellm-", &samples, 1)?;
    let isl: Vec<u32> = samples
        .iter()
        .map(|(p, _)| {
            tokenizer
                .as_ref()
                .map_or(p.split_whitespace().count() as u32, |t| t.count(p))
        })
        .collect();
    let mut spec = LoadSpec::new(target, requests[0].clone());
    spec.load.variety = requests;
    spec.load.walk = Some(stampede_engine::Walk {
        rate: 1.0,
        once: false,
    });
    spec.load.requests = Some(constraints.max_requests.unwrap_or(samples.len() as u64));
    if let Some(d) = constraints.max_duration {
        spec.load.duration = Some(Duration::from_secs_f64(d));
        if constraints.max_requests.is_none() {
            spec.load.requests = None;
        }
    }
    if backend.stream {
        spec.load.streams.stream = Some(stampede_engine::StreamMode::Openai);
        let most = samples.iter().map(|(_, o)| *o).max().unwrap_or(0);
        let most = if most == 0 { 100_000 } else { most };
        spec.load.streams.max_events = Some(most.saturating_mul(2).saturating_add(16));
        spec.load.streams.slo = slo;
        spec.load.streams.tokenizer = tokenizer;
    } else if slo.is_some() {
        return Err(FlagError::usage(
            "--metrics slo: service levels time tokens; leave the backend's stream on",
        ));
    }
    spec.load.timeout = backend.timeout.map(Duration::from_secs_f64);
    spec.load.seed = seed(a)?;
    let chat = (turns.turns > 1).then(|| ChatParts {
        conversations: samples
            .chunks(turns.turns)
            .map(<[Sample]>::to_vec)
            .collect(),
        delay: turns.delay,
        headers: headers.clone(),
        extra: {
            let mut e = backend.extras.clone();
            if bodies.ignore_eos {
                e.insert("ignore_eos".into(), true.into());
            }
            e
        },
        path: spec.target.path.clone(),
        authority: spec.target.authority.clone(),
    });
    if chat.is_some() && (!backend.stream || api != Backend::Chat) {
        return Err(FlagError::usage(
            "--data turns: conversations go to /v1/chat/completions, streamed",
        ));
    }
    let info = Info {
        chat,
        profile,
        profile_args,
        constraints,
        outputs: outputs(a)?,
        console: !a.disable_console,
        streaming: backend.stream,
        backend,
        model,
        data,
        seed: spec.load.seed,
        labels,
        isl,
        slo,
    };
    Ok((spec, info))
}

/// `spec` shaped as benchmark `s`; with conversations of `turns` turns, a rate is
/// the conversations' arrivals (each on a connection of its own, its turns
/// following), over the benchmark's length or until its requests are reached.
pub fn shape(spec: &mut LoadSpec, s: &Strategy, turns: usize) {
    use stampede_engine::arrivals::Gaps;
    use stampede_engine::inject::{InjectionStep, Profile};
    let n = spec.load.requests.unwrap_or(u64::MAX).min(10_000) as usize;
    if let (true, Strategy::Constant { rate, .. } | Strategy::Poisson { rate, .. }) =
        (turns > 1, *s)
    {
        let during = spec.load.duration.unwrap_or_else(|| {
            let talks = spec.load.requests.unwrap_or(1000).div_ceil(turns as u64);
            Duration::from_secs_f64(talks as f64 / rate)
        });
        spec.load.shape = Shape::Users(Profile {
            steps: vec![InjectionStep::ConstantRate {
                rate,
                during,
                randomized: matches!(s, Strategy::Poisson { .. }),
            }],
        });
        spec.load.session = stampede_engine::Session {
            calls: u32::MAX,
            ..Default::default()
        };
        (spec.load.duration, spec.load.requests) = (None, None);
        spec.load.threads = common::cpus();
        return;
    }
    let (shape, connections) = match *s {
        Strategy::Synchronous => (Shape::Closed, 1),
        Strategy::Concurrent { streams } => (Shape::Closed, streams),
        Strategy::Throughput { max_concurrency } => (Shape::Closed, max_concurrency.min(n.max(1))),
        Strategy::Constant {
            rate,
            max_concurrency,
        } => (
            Shape::Rate {
                rate,
                gaps: Gaps::of(false, None),
            },
            max_concurrency,
        ),
        Strategy::Poisson {
            rate,
            max_concurrency,
        } => (
            Shape::Rate {
                rate,
                gaps: Gaps::of(true, None),
            },
            max_concurrency,
        ),
    };
    spec.load.shape = shape;
    spec.load.connections = connections.max(1);
    spec.load.threads = common::cpus().min(spec.load.connections);
}

#[cfg(test)]
mod tests;
