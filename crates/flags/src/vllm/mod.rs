//! `stampede vllm bench serve`'s command line: vLLM's serving benchmark's flags and
//! datasets, translated into a run of stampede's engine.
//!
//! Every flag of `vllm bench serve` is taken: honoured, noted as inert with why, or
//! refused with why and what to use instead ([`DIALECT`]). The backend picks the API
//! (completions, chat, embeddings); the datasets are read from local files or drawn
//! ([`datasets`]); a request rate's gaps are gamma-distributed with the burstiness as
//! their shape (1 a Poisson process, see [`stampede_engine::arrivals::Gaps`]), a
//! ramp-up raises it by each request's place ([`ramp`]), `inf` sends as fast as
//! `--max-concurrency` lets; `--goodput` sets the service levels.
//! What differs, on purpose: TTFT and E2EL run from each request's intended start,
//! so a queue behind `--max-concurrency` or a late client shows in them (vLLM times
//! from the send; those figures are printed beside ours, "from the send"); tokens are
//! each completion's usage (its text's, by the tokenizer, without one); the JSON
//! result has the summary's keys without the per-request lists (bounded memory).

mod args;
pub(crate) mod bodies;
pub mod datasets;
pub(crate) mod models;
mod parquet;
pub mod ramp;
#[cfg(test)]
mod tests;

use std::time::Duration;

use stampede_engine::{LoadSpec, Shape, Slo, Target, TokenCounter};
use stampede_report::vllm::{Info, Metric, RampInfo};

pub use args::{DatasetArgs, SamplingArgs, VllmArgs};
pub use bodies::Backend;
use datasets::{Ask, Sample};

use crate::args::{self as common, ResultFile, SegmentArgs};
use crate::dialect::{Dialect, Inert, Refused};
use crate::CommandLine;
use crate::FlagError;

const MULTIMODAL: &str = "it draws images for multimodal models";

pub const DIALECT: Dialect = Dialect {
    tool: "vllm bench serve",
    refused: &[
        Refused {
            flag: "--profile",
            why: "it drives the server's own profiler",
            instead: "profile the server beside the run (perf record -p PID)",
        },
        Refused {
            flag: "--use-beam-search",
            why: "beam search is a sampling setting of the server",
            instead: "--extra-body '{\"use_beam_search\": true}'",
        },
        Refused {
            flag: "--logprobs",
            why: "log probabilities are not timed",
            instead: "--extra-body '{\"logprobs\": N}' asks for them without timing them",
        },
        Refused {
            flag: "--save-detailed",
            why: "its per-request lists (texts, every token's time) grow with the run; results here stay bounded",
            instead: "--json FILE writes the run's histograms, exact to merge and to draw",
        },
        Refused {
            flag: "--enable-multimodal-chat",
            why: MULTIMODAL,
            instead: "a text dataset",
        },
        Refused {
            flag: "--random-mm-base-items-per-request",
            why: MULTIMODAL,
            instead: "--dataset-name random",
        },
        Refused {
            flag: "--random-mm-num-mm-items-range-ratio",
            why: MULTIMODAL,
            instead: "--dataset-name random",
        },
        Refused {
            flag: "--random-mm-limit-mm-per-prompt",
            why: MULTIMODAL,
            instead: "--dataset-name random",
        },
        Refused {
            flag: "--random-mm-bucket-config",
            why: MULTIMODAL,
            instead: "--dataset-name random",
        },
        Refused {
            flag: "--no-reranker",
            why: "reranking (vllm-rerank, random-rerank) is not offered",
            instead: "--backend openai-embeddings for a pooling model",
        },
        Refused {
            flag: "--blazedit-min-distance",
            why: "Blazedit is a dataset of the Hugging Face hub, and nothing is downloaded",
            instead: "--dataset-name hf --dataset-path FILE with its rows saved (Parquet, JSON or JSONL)",
        },
        Refused {
            flag: "--blazedit-max-distance",
            why: "Blazedit is a dataset of the Hugging Face hub, and nothing is downloaded",
            instead: "--dataset-name hf --dataset-path FILE with its rows saved (Parquet, JSON or JSONL)",
        },
    ],
    inert: &[
        Inert {
            id: "disable_tqdm",
            flag: "--disable-tqdm",
            why: "progress is one line a second on standard error",
        },
        Inert {
            id: "trust_remote_code",
            flag: "--trust-remote-code",
            why: "the tokenizer is read from its tokenizer.json; no model code is run",
        },
        Inert {
            id: "tokenizer_mode",
            flag: "--tokenizer-mode",
            why: "every mode reads the same tokenizer.json",
        },
        Inert {
            id: "no_stream",
            flag: "--no-stream",
            why: "datasets are read from local files: ShareGPT's as a stream, the others whole",
        },
        Inert {
            id: "skip_chat_template",
            flag: "--skip-chat-template",
            why: "no chat template is applied here: prompts go as written, and the server templates chat requests",
        },
        Inert {
            id: "hf_name",
            flag: "--hf-name",
            why: "a local dataset's layout is known from its rows' fields",
        },
    ],
    prefixes: false,
    go: false,
};

/// What the flags point at, read before the run: the target, the tokenizer, the
/// prompts, and the bearer token vLLM sends from `OPENAI_API_KEY`.
pub struct Inputs {
    pub target: Target,
    /// `--model`, else the first the server serves.
    pub model: String,
    pub tokenizer: Option<TokenCounter>,
    pub samples: Vec<Sample>,
    pub api_key: Option<String>,
}

pub struct Vllm;

impl CommandLine for Vllm {
    type Args = VllmArgs;
    type Inputs = Inputs;
    type Info = Info;
    const DIALECT: &'static Dialect = &DIALECT;

    fn result_file(a: &VllmArgs) -> &ResultFile {
        &a.result
    }

    fn segments(a: &VllmArgs) -> &SegmentArgs {
        &a.segments
    }

    fn inputs(a: &VllmArgs) -> Result<Inputs, FlagError> {
        let target = common::resolve(&url(a), None)?;
        let backend = Backend::of(&a.backend)?;
        let model = match &a.model {
            Some(m) => m.clone(),
            None => {
                let m = models::first_model(&base(a))?;
                eprintln!("note: --model not given: the server's first model, {m}");
                m
            }
        };
        let tokenizer = tokenizer_of(a, &model)?;
        let samples = samples(a, backend, tokenizer.as_ref())?;
        let api_key = std::env::var("OPENAI_API_KEY")
            .ok()
            .filter(|k| !k.is_empty());
        Ok(Inputs {
            target,
            model,
            tokenizer,
            samples,
            api_key,
        })
    }

    fn translate(a: &VllmArgs, inputs: Inputs) -> Result<(LoadSpec, Info), FlagError> {
        translate(a, inputs)
    }
}

/// The server's base URL: --base-url, or --host and --port.
fn base(a: &VllmArgs) -> String {
    match &a.base_url {
        Some(b) => b.trim_end_matches('/').to_string(),
        None if a.host.contains(':') => format!("http://[{}]:{}", a.host, a.port),
        None => format!("http://{}:{}", a.host, a.port),
    }
}

/// The URL the flags name: the base URL and --endpoint.
fn url(a: &VllmArgs) -> String {
    format!("{}{}", base(a), a.endpoint)
}

/// The dataset's prompts, each with the tokens it asks for: read or drawn, then
/// oversampled to `--num-prompts` unless `--no-oversample` (said on standard error).
fn samples(
    a: &VllmArgs,
    backend: Backend,
    tokenizer: Option<&TokenCounter>,
) -> Result<Vec<Sample>, FlagError> {
    let d = &a.dataset;
    if d.num_prompts == 0 || d.num_prompts > stampede_engine::openai::MAX_PROMPTS {
        return Err(FlagError::usage(format!(
            "--num-prompts {}: 1 to {}",
            d.num_prompts,
            stampede_engine::openai::MAX_PROMPTS
        )));
    }
    let batch = if backend.generates() {
        1
    } else {
        d.random_batch_size.clamp(1, 10_000)
    };
    let ask = Ask {
        count: d.num_prompts * batch,
        seed: d.seed,
        shuffle: !d.disable_shuffle,
        tokenizer,
    };
    let out_len = a.output_len;
    let path = || {
        d.dataset_path.as_deref().ok_or_else(|| {
            FlagError::usage(format!(
                "--dataset-name {} needs --dataset-path FILE",
                d.dataset_name
            ))
        })
    };
    let mut s = match d.dataset_name.as_str() {
        "random" => {
            if let Some(p) = &d.dataset_path {
                return Err(FlagError::usage(format!(
                    "--dataset-path {p}: the random dataset draws its prompts; name the file's dataset (--dataset-name sharegpt, custom, sonnet, …)"
                )));
            }
            random(a, &ask)?
        }
        "sharegpt" => datasets::sharegpt(path()?, out_len.or(d.sharegpt_output_len), &ask)?,
        "sonnet" => datasets::sonnet(
            path()?,
            a.input_len.unwrap_or(d.sonnet_input_len),
            out_len.unwrap_or(d.sonnet_output_len),
            d.sonnet_prefix_len,
            &ask,
        )?,
        "burstgpt" => datasets::burstgpt(path()?, &ask)?,
        "custom" => datasets::custom(path()?, out_len.unwrap_or(d.custom_output_len), &ask)?,
        "spec_bench" => datasets::spec_bench(
            path()?,
            d.spec_bench_category.as_deref(),
            out_len.unwrap_or(d.spec_bench_output_len),
            &ask,
        )?,
        "hf" => datasets::hf(
            path()?,
            d.hf_subset.as_deref(),
            d.hf_split.as_deref().unwrap_or("train"),
            out_len.or(d.hf_output_len),
            &ask,
        )?,
        "prefix_repetition" => datasets::prefix_repetition(
            d.prefix_repetition_prefix_len,
            d.prefix_repetition_suffix_len,
            d.prefix_repetition_num_prefixes,
            out_len.unwrap_or(d.prefix_repetition_output_len),
            &ask,
        )?,
        other => {
            let why = match other {
                "random-mm" | "custom_mm" | "custom_image" => format!("not offered: {MULTIMODAL}"),
                "custom_audio" => "not offered: it sends audio".to_string(),
                "random-rerank" => "not offered: reranking is not".to_string(),
                "speed_bench" | "txt-slices" | "timed_trace" => "not offered here".to_string(),
                _ => "not a dataset of vllm bench serve".to_string(),
            };
            return Err(FlagError::usage(format!(
                "--dataset-name {other}: {why}; offered: random, sharegpt, sonnet, burstgpt, custom, spec_bench, prefix_repetition, hf (a local Parquet, JSON or JSONL file or a directory of them)"
            )));
        }
    };
    if let Some(note) = datasets::oversample(&mut s, ask.count, d.seed, d.no_oversample) {
        eprintln!("note: {note}");
    }
    Ok(s)
}

/// vLLM's random dataset: prompts of `--random-input-len` tokens (± the range
/// ratio), after a prefix of `--random-prefix-len` (or `--common-prefix-len`) the
/// same for all.
fn random(a: &VllmArgs, ask: &Ask) -> Result<Vec<Sample>, FlagError> {
    let d = &a.dataset;
    let prompts = stampede_engine::openai::Prompts {
        api: stampede_engine::openai::Api::Completions,
        model: "",
        input_words: a.input_len.unwrap_or(d.random_input_len),
        output_tokens: a.output_len.unwrap_or(d.random_output_len),
        range_ratio: d.random_range_ratio,
        file: None,
        what: "--dataset-path",
        count: ask.count,
        seed: d.seed,
        ignore_eos: false,
        tokenizer: ask.tokenizer,
    };
    let mut p = prompts.draw().map_err(|e| {
        FlagError::usage(
            e.to_string()
                .replace("--input-tokens", "--random-input-len")
                .replace("--range-ratio", "--random-range-ratio"),
        )
    })?;
    // With a tokenizer at most so many are drawn; the rest take them again in turn.
    let drawn = p.len();
    for i in drawn..ask.count {
        let again = p[i % drawn].clone();
        p.push(again);
    }
    let prefix_len = a.sampling.common_prefix_len.unwrap_or(d.random_prefix_len);
    if prefix_len > 0 {
        if prefix_len > datasets::MAX_LEN {
            return Err(FlagError::usage(format!(
                "--random-prefix-len {prefix_len}: at most {}",
                datasets::MAX_LEN
            )));
        }
        let mut r = datasets::Rng(d.seed ^ 0x9e37_79b9_7f4a_7c15);
        let prefix = stampede_engine::openai::filler(prefix_len, ask.tokenizer, &mut || r.draw());
        for (text, _) in &mut p {
            *text = format!("{prefix} {text}");
        }
    }
    Ok(p)
}

/// What the flags say besides the prompts: the rate, the report's metrics and
/// percentiles; each refused value named.
struct Flags {
    rate: Option<f64>,
    gaps: stampede_engine::arrivals::Gaps,
    metrics: Vec<Metric>,
    percentiles: Vec<f64>,
}

fn flags(a: &VllmArgs, backend: Backend) -> Result<Flags, FlagError> {
    let rate = match a.request_rate.as_deref() {
        None | Some("inf") => None,
        Some(r) => match r.parse::<f64>() {
            Ok(v) if v > 0.0 && v.is_finite() => Some(v),
            Ok(v) if v == f64::INFINITY => None,
            _ => {
                return Err(FlagError::usage(format!(
                    "--request-rate {r}: requests per second above 0, or inf"
                )))
            }
        },
    };
    let gaps = stampede_engine::arrivals::Gaps::check_burstiness(a.burstiness)
        .map(|b| stampede_engine::arrivals::Gaps::of(true, Some(b)))
        .map_err(|e| FlagError::usage(format!("--burstiness: {e}")))?;
    let default = if backend.generates() {
        "ttft,tpot,itl"
    } else {
        "e2el"
    };
    let metrics = (a
        .percentile_metrics
        .as_deref()
        .unwrap_or(default)
        .split(','))
    .map(|m| match m.trim() {
        "ttft" => Ok(Metric::Ttft),
        "tpot" => Ok(Metric::Tpot),
        "itl" => Ok(Metric::Itl),
        "e2el" => Ok(Metric::E2el),
        other => Err(FlagError::usage(format!(
            "--percentile-metrics: {other:?} is not one of ttft, tpot, itl, e2el"
        ))),
    })
    .collect::<Result<Vec<_>, _>>()?;
    let percentiles = (a.metric_percentiles.split(','))
        .map(|p| match p.trim().parse::<f64>() {
            Ok(v) if v > 0.0 && v <= 100.0 => Ok(v),
            _ => Err(FlagError::usage(format!(
                "--metric-percentiles: {p:?} is not a percentile above 0, at most 100"
            ))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Flags {
        rate,
        gaps,
        metrics,
        percentiles,
    })
}

/// `KEY=VALUE` words of `flag`, split at the first `=`.
fn pairs(flag: &str, words: &[String]) -> Result<Vec<(String, String)>, FlagError> {
    (words.iter())
        .map(|w| match w.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => {
                Ok((k.trim().to_string(), v.trim().to_string()))
            }
            _ => Err(FlagError::usage(format!("{flag} {w:?}: KEY=VALUE"))),
        })
        .collect()
}

/// The body fields every request carries besides its prompt: the sampling
/// parameters (generating backends) and `--extra-body`, which wins.
fn extra_fields(
    a: &VllmArgs,
    backend: Backend,
) -> Result<serde_json::Map<String, serde_json::Value>, FlagError> {
    let mut m = if backend.generates() {
        a.sampling.fields()
    } else {
        serde_json::Map::new()
    };
    if let Some(x) = &a.extra_body {
        if x.len() > 1 << 20 {
            return Err(FlagError::usage("--extra-body: at most 1 MiB of JSON"));
        }
        match serde_json::from_str::<serde_json::Value>(x) {
            Ok(serde_json::Value::Object(o)) => m.extend(o),
            Ok(_) => {
                return Err(FlagError::usage(
                    "--extra-body: a JSON object, e.g. '{\"top_k\": 5}'",
                ))
            }
            Err(e) => return Err(FlagError::usage(format!("--extra-body: not JSON ({e})"))),
        }
    }
    Ok(m)
}

pub fn translate(a: &VllmArgs, inputs: Inputs) -> Result<(LoadSpec, Info), FlagError> {
    let Inputs {
        target,
        model: asked,
        tokenizer,
        samples,
        api_key,
    } = inputs;
    let backend = Backend::of(&a.backend)?;
    let Flags {
        rate,
        gaps,
        metrics,
        percentiles,
    } = flags(a, backend)?;
    let ramp = ramp::RampUp::of(
        a.ramp_up_strategy.as_deref(),
        a.ramp_up_start_rps,
        a.ramp_up_end_rps,
        a.request_rate.is_some(),
    )?;
    let slo = goodput(&a.goodput)?;
    if slo.is_some() && !backend.generates() {
        return Err(FlagError::usage(
            "--goodput: service levels time tokens; an embeddings backend has none",
        ));
    }
    let model = a.served_model_name.clone().unwrap_or_else(|| asked.clone());
    let mut headers = pairs("--header", &a.header)?;
    if let Some(k) = api_key {
        headers.insert(0, ("Authorization".into(), format!("Bearer {k}")));
    }
    let metadata = pairs("--metadata", &a.metadata)?;
    let bodies = bodies::Bodies {
        backend,
        model: &model,
        loras: &a.lora_modules,
        extra: extra_fields(a, backend)?,
        // vLLM asks every random prompt for its whole length.
        ignore_eos: a.ignore_eos || a.dataset.dataset_name == "random",
        seed: a.dataset.seed,
        stream: true,
    };
    let id_prefix = a.request_id_prefix.clone().unwrap_or_else(|| {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        format!("bench-{:08x}-", (t ^ u64::from(std::process::id())) as u32)
    });
    let batch = if backend.generates() {
        1
    } else {
        a.dataset.random_batch_size.max(1)
    };
    let requests = bodies.requests(&target, &headers, &id_prefix, &samples, batch)?;
    let count = requests.len();
    let input_tokens = match &tokenizer {
        Some(t) => samples.iter().map(|(p, _)| u64::from(t.count(p))).sum(),
        None => (samples.iter())
            .map(|(p, _)| p.split_whitespace().count() as u64)
            .sum(),
    };
    let mut spec = LoadSpec::new(target, requests[0].clone());
    spec.load.variety = requests;
    spec.load.walk = Some(stampede_engine::Walk {
        rate: 1.0,
        once: false,
    });
    spec.load.requests = Some(count as u64);
    if backend.generates() {
        spec.load.streams.stream = Some(stampede_engine::StreamMode::Openai);
        // A completion carries at most the tokens it asked for, an event each at most:
        // a server that streams on past twice that (and some) is broken, not waited for.
        spec.load.streams.max_events = Some(stampede_engine::openai::max_events(&samples));
        spec.load.streams.slo = slo;
        spec.load.streams.tokenizer = tokenizer.clone();
    }
    spec.load.seed = a.dataset.seed;
    // Completions take long: vLLM's client waits up to six hours for one.
    spec.load.timeout = Some(Duration::from_secs(6 * 3600));
    // One connection per request in flight: the cap, or every prompt at once.
    let cap = a.max_concurrency.unwrap_or(count).clamp(1, 10_000);
    spec.load.connections = cap;
    spec.load.threads = common::cpus().min(cap);
    let ramp_info = match ramp {
        Some(r) => {
            if a.burstiness != 1.0 {
                return Err(FlagError::usage(
                    "--burstiness: with --ramp-up-strategy the gaps are Poisson's (--burstiness 1)",
                ));
            }
            spec.load.shape = Shape::Paced(r.profile(count, true));
            Some(RampInfo {
                strategy: a.ramp_up_strategy.clone().unwrap_or_default(),
                start: r.start,
                end: r.end,
                changes: r.changes(count),
            })
        }
        None => {
            if let Some(r) = rate {
                spec.load.shape = Shape::Rate { rate: r, gaps };
            }
            None
        }
    };
    let info = Info {
        backend: a.backend.clone(),
        label: a.label.clone().unwrap_or_else(|| a.backend.clone()),
        model: asked.clone(),
        tokenizer: match &tokenizer {
            Some(t) => t.source().to_string(),
            None => a.tokenizer.clone().unwrap_or_else(|| asked.clone()),
        },
        num_prompts: a.dataset.num_prompts,
        rate,
        burstiness: a.burstiness,
        max_concurrency: a.max_concurrency,
        input_tokens,
        metrics,
        percentiles,
        pooling: !backend.generates(),
        ramp: ramp_info,
        metadata,
    };
    Ok((spec, info))
}

/// `--goodput ttft:200 tpot:50 e2el:1000`: service levels in ms.
pub fn goodput(args: &[String]) -> Result<Option<Slo>, FlagError> {
    Slo::parse(args).map_err(|e| FlagError::usage(format!("--goodput {e}")))
}

/// The model's tokenizer: `--tokenizer`'s (which must load), else `--model`'s where
/// the local cache has it, as vLLM takes the model's by default; else none, said on
/// standard error: prompts are then counted in words.
fn tokenizer_of(a: &VllmArgs, model: &str) -> Result<Option<TokenCounter>, FlagError> {
    if let Some(t) = &a.tokenizer {
        return TokenCounter::load(t, "--tokenizer")
            .map(Some)
            .map_err(FlagError::usage);
    }
    if stampede_engine::tokenizer::locate(model).is_some() {
        return TokenCounter::load(model, "--model")
            .map(Some)
            .map_err(FlagError::usage);
    }
    eprintln!(
        "note: no tokenizer.json for --model {model} here (nothing is downloaded): prompts are counted in words, completions by their usage; --tokenizer PATH counts in the model's tokens"
    );
    Ok(None)
}
