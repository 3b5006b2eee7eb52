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
mod read;

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
use read::{constraints, outputs, profile, slo};

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
