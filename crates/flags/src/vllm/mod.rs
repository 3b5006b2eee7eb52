//! `stampede vllm bench serve`'s command line: vLLM's serving benchmark's flags and
//! datasets, translated into a run of stampede's engine.
//!
//! The flags are `vllm bench serve`'s: the backend picks the API (`openai` and `vllm`
//! the completions one, `openai-chat` the chat one), the random dataset draws its
//! prompts (of the model's tokens with its tokenizer, else of words, see
//! [`stampede_engine::openai`]) and ShareGPT's file gives them (its first human turn the
//! prompt, the reply's tokens, or `--sharegpt-output-len`, the maximum), a request rate's gaps are gamma-distributed with the burstiness as
//! their shape (1 a Poisson process, see [`stampede_engine::arrivals::Gaps`]) and `inf`
//! sends as fast as `--max-concurrency` lets, `--goodput` sets the service levels.
//! What differs, on purpose: TTFT and E2EL run from each request's intended start,
//! so a queue behind `--max-concurrency` or a late client shows in them (vLLM times
//! from the send; those figures are printed beside ours, "from the send"); tokens are
//! each completion's usage (its text's, by the tokenizer, without one); the JSON result has the
//! summary's keys without the per-request lists (bounded memory).

use std::time::Duration;

use clap::Parser;
use stampede_engine::input::{self, Input};
use stampede_engine::{LoadSpec, Shape, Slo, Target, TokenCounter};
use stampede_report::vllm::{Info, Metric};

use crate::args::{self as common, ResultFile, SegmentArgs};
use crate::dialect::{Dialect, Inert, Refused};
use crate::CommandLine;
use crate::FlagError;
use stampede_engine::openai::{Api, Prompts};

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
            instead: "--prompts FILE on `stampede load --openai` with the request fields you need",
        },
        Refused {
            flag: "--logprobs",
            why: "log probabilities are not timed",
            instead: "leave it out",
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
    ],
    prefixes: false,
    go: false,
};

/// `vllm bench serve`'s flags.
#[derive(Parser, Debug)]
#[command(
    name = "stampede vllm bench serve",
    version,
    about = "vLLM's serving benchmark (vllm bench serve's flags, report and JSON result)",
    disable_version_flag = true
)]
pub struct VllmArgs {
    /// The server's API: openai or vllm (/v1/completions), openai-chat
    /// (/v1/chat/completions)
    #[arg(long = "backend", value_name = "NAME", default_value = "openai")]
    pub backend: String,
    /// The server's URL (instead of --host and --port)
    #[arg(long = "base-url", value_name = "URL")]
    pub base_url: Option<String>,
    #[arg(long = "host", value_name = "HOST", default_value = "127.0.0.1")]
    pub host: String,
    #[arg(long = "port", value_name = "PORT", default_value_t = 8000)]
    pub port: u16,
    /// The API's path
    #[arg(
        long = "endpoint",
        value_name = "PATH",
        default_value = "/v1/completions"
    )]
    pub endpoint: String,
    /// The model to ask for
    #[arg(long = "model", value_name = "NAME")]
    pub model: String,
    /// The name the server serves the model under, sent in requests instead of --model
    #[arg(long = "served-model-name", value_name = "NAME")]
    pub served_model_name: Option<String>,
    /// The model's tokenizer: its tokenizer.json, the directory holding it, or a model
    /// in the local Hugging Face cache (default: --model's, where the cache has it)
    #[arg(long = "tokenizer", value_name = "NAME")]
    pub tokenizer: Option<String>,
    /// random or sharegpt
    #[arg(long = "dataset-name", value_name = "NAME", default_value = "random")]
    pub dataset_name: String,
    /// The ShareGPT file (--dataset-name sharegpt)
    #[arg(long = "dataset-path", value_name = "FILE")]
    pub dataset_path: Option<String>,
    /// Prompts sent, each once
    #[arg(long = "num-prompts", value_name = "N", default_value_t = 1000)]
    pub num_prompts: usize,
    #[arg(long = "random-input-len", value_name = "N", default_value_t = 1024)]
    pub random_input_len: u32,
    #[arg(long = "random-output-len", value_name = "N", default_value_t = 128)]
    pub random_output_len: u32,
    #[arg(long = "random-range-ratio", value_name = "R", default_value_t = 0.0)]
    pub random_range_ratio: f64,
    /// Words every random prompt begins with (the same for all)
    #[arg(long = "random-prefix-len", value_name = "N", default_value_t = 0)]
    pub random_prefix_len: u32,
    /// Each ShareGPT prompt's maximum (instead of its reply's length)
    #[arg(long = "sharegpt-output-len", value_name = "N")]
    pub sharegpt_output_len: Option<u32>,
    /// Requests per second (inf: all at once, within --max-concurrency)
    #[arg(long = "request-rate", value_name = "RPS", default_value = "inf")]
    pub request_rate: String,
    /// The gaps' gamma shape with --request-rate: 1 a Poisson process, below 1
    /// burstier, above 1 smoother
    #[arg(long = "burstiness", value_name = "F", default_value_t = 1.0)]
    pub burstiness: f64,
    /// Requests in flight at most
    #[arg(long = "max-concurrency", value_name = "N")]
    pub max_concurrency: Option<usize>,
    /// Metrics with percentiles in the report: ttft, tpot, itl, e2el
    #[arg(
        long = "percentile-metrics",
        value_name = "LIST",
        default_value = "ttft,tpot,itl"
    )]
    pub percentile_metrics: String,
    /// Percentiles reported, comma-separated
    #[arg(long = "metric-percentiles", value_name = "LIST", default_value = "99")]
    pub metric_percentiles: String,
    /// Service levels, KEY:MS for ttft, tpot and e2el (goodput: the requests meeting
    /// all)
    #[arg(long = "goodput", value_name = "KEY:MS", num_args = 1..)]
    pub goodput: Vec<String>,
    #[arg(long = "seed", value_name = "N", default_value_t = 0)]
    pub seed: u64,
    /// Write vLLM's JSON result
    #[arg(long = "save-result")]
    pub save_result: bool,
    #[arg(long = "result-dir", value_name = "DIR")]
    pub result_dir: Option<String>,
    #[arg(long = "result-filename", value_name = "FILE")]
    pub result_filename: Option<String>,
    /// Ask the server to ignore its end-of-sequence token
    #[arg(long = "ignore-eos")]
    pub ignore_eos: bool,
    #[arg(long = "disable-tqdm")]
    pub disable_tqdm: bool,
    #[arg(long = "trust-remote-code")]
    pub trust_remote_code: bool,
    /// The results' label: the saved result's file name begins with it, and its JSON
    /// carries it (default: --backend)
    #[arg(long = "label", value_name = "NAME")]
    pub label: Option<String>,
    /// Send the ShareGPT conversations in the file's order (by default they are
    /// shuffled with --seed, as vLLM does)
    #[arg(long = "disable-shuffle")]
    pub disable_shuffle: bool,
    #[command(flatten)]
    pub result: ResultFile,
    #[command(flatten)]
    pub segments: SegmentArgs,
}

pub struct Vllm;

impl CommandLine for Vllm {
    type Args = VllmArgs;
    type Inputs = (Target, Option<String>);
    type Info = Info;
    const DIALECT: &'static Dialect = &DIALECT;

    fn result_file(a: &VllmArgs) -> &ResultFile {
        &a.result
    }

    fn segments(a: &VllmArgs) -> &SegmentArgs {
        &a.segments
    }

    fn inputs(a: &VllmArgs) -> Result<Self::Inputs, FlagError> {
        let target = common::resolve(&url(a), None)?;
        let dataset = match (a.dataset_name.as_str(), &a.dataset_path) {
            ("sharegpt", Some(path)) => Some(
                input::read_text(path, "--dataset-path", Input::List)
                    .map_err(|e| FlagError::usage(e.to_string()))?,
            ),
            _ => None,
        };
        Ok((target, dataset))
    }

    fn translate(
        a: &VllmArgs,
        (target, dataset): Self::Inputs,
    ) -> Result<(LoadSpec, Info), FlagError> {
        translate(a, target, dataset)
    }
}

/// The URL the flags name: --base-url (or --host and --port) and --endpoint.
fn url(a: &VllmArgs) -> String {
    let base = match &a.base_url {
        Some(b) => b.trim_end_matches('/').to_string(),
        None => format!("http://{}:{}", a.host, a.port),
    };
    format!("{base}{}", a.endpoint)
}

/// The run the flags ask for. Pure: the target is resolved and the dataset read.
/// What the flags say besides the prompts: the API, the rate, the report's metrics and
/// percentiles; each refused value named.
struct Flags {
    pub api: Api,
    pub rate: Option<f64>,
    pub gaps: stampede_engine::arrivals::Gaps,
    pub metrics: Vec<Metric>,
    pub percentiles: Vec<f64>,
}

fn flags(a: &VllmArgs) -> Result<Flags, FlagError> {
    let api = match a.backend.as_str() {
        "openai" | "vllm" => Api::Completions,
        "openai-chat" => Api::Chat,
        other => {
            return Err(FlagError::usage(format!(
                "--backend {other}: openai, vllm (/v1/completions) or openai-chat (/v1/chat/completions)"
            )))
        }
    };
    let rate = match a.request_rate.as_str() {
        "inf" => None,
        r => match r.parse::<f64>() {
            Ok(v) if v > 0.0 && v.is_finite() => Some(v),
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
    if a.num_prompts == 0 || a.num_prompts > stampede_engine::openai::MAX_PROMPTS {
        return Err(FlagError::usage(format!(
            "--num-prompts {}: 1 to {}",
            a.num_prompts,
            stampede_engine::openai::MAX_PROMPTS
        )));
    }
    let metrics = (a.percentile_metrics.split(','))
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
        api,
        rate,
        gaps,
        metrics,
        percentiles,
    })
}

pub fn translate(
    a: &VllmArgs,
    target: Target,
    dataset: Option<String>,
) -> Result<(LoadSpec, Info), FlagError> {
    let Flags {
        api,
        rate,
        gaps,
        metrics,
        percentiles,
    } = flags(a)?;
    let slo = goodput(&a.goodput)?;
    let model = a
        .served_model_name
        .clone()
        .unwrap_or_else(|| a.model.clone());
    let tokenizer = tokenizer_of(a)?;
    let prompts = Prompts {
        api,
        model: &model,
        input_words: a.random_input_len,
        output_tokens: a.random_output_len,
        range_ratio: a.random_range_ratio,
        file: None,
        what: "--dataset-path",
        count: a.num_prompts,
        seed: a.seed,
        ignore_eos: a.ignore_eos,
        tokenizer: tokenizer.as_ref(),
    };
    let drawn = match (a.dataset_name.as_str(), dataset) {
        ("random", _) => {
            let mut p = prompts.draw().map_err(FlagError::usage)?;
            if a.random_prefix_len > 0 {
                let prefix = match &tokenizer {
                    // The same prefix of the model's tokens before every prompt.
                    Some(t) => {
                        let mut s = a.seed ^ 0x9e37_79b9_7f4a_7c15;
                        let mut next = || {
                            s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                            s >> 11
                        };
                        t.draw(a.random_prefix_len, &mut next).0
                    }
                    None => vec!["prefix"; a.random_prefix_len as usize].join(" "),
                };
                for (text, _) in &mut p {
                    *text = format!("{prefix} {text}");
                }
            }
            p
        }
        ("sharegpt", Some(text)) => {
            let mut p = sharegpt(&text, a.sharegpt_output_len, tokenizer.as_ref())?;
            if !a.disable_shuffle {
                shuffle(&mut p, a.seed);
            }
            p
        }
        ("sharegpt", None) => {
            return Err(FlagError::usage(
                "--dataset-name sharegpt needs --dataset-path FILE (ShareGPT's JSON)",
            ))
        }
        (other, _) => {
            return Err(FlagError::usage(format!(
                "--dataset-name {other}: random or sharegpt are offered here"
            )))
        }
    };
    let input_tokens = (drawn.iter().cycle().take(a.num_prompts))
        .map(|(t, _)| prompts.input_tokens(t))
        .sum();
    let requests = (prompts.requests(&target, &[], true, &drawn)).map_err(FlagError::usage)?;
    let mut spec = LoadSpec::new(target, requests[0].clone());
    spec.load.variety = requests;
    spec.load.walk = Some(stampede_engine::Walk {
        rate: 1.0,
        once: false,
    });
    spec.load.requests = Some(a.num_prompts as u64);
    spec.load.streams.stream = Some(stampede_engine::StreamMode::Openai);
    // A completion carries at most the tokens it asked for, an event each at most:
    // a server that streams on past twice that (and some) is broken, not waited for.
    spec.load.streams.max_events = Some(stampede_engine::openai::max_events(&drawn));
    spec.load.streams.slo = slo;
    spec.load.seed = a.seed;
    spec.load.streams.tokenizer = tokenizer.clone();
    // Completions take long: vLLM's client waits up to six hours for one.
    spec.load.timeout = Some(Duration::from_secs(6 * 3600));
    // One connection per request in flight: the cap, or every prompt at once.
    let cap = a.max_concurrency.unwrap_or(a.num_prompts).clamp(1, 10_000);
    spec.load.connections = cap;
    spec.load.threads = common::cpus().min(cap);
    if let Some(r) = rate {
        spec.load.shape = Shape::Rate { rate: r, gaps };
    }
    let info = Info {
        backend: a.backend.clone(),
        label: a.label.clone().unwrap_or_else(|| a.backend.clone()),
        model: a.model.clone(),
        tokenizer: match &tokenizer {
            Some(t) => t.source().to_string(),
            None => a.tokenizer.clone().unwrap_or_else(|| a.model.clone()),
        },
        num_prompts: a.num_prompts,
        rate,
        burstiness: a.burstiness,
        max_concurrency: a.max_concurrency,
        input_tokens,
        metrics,
        percentiles,
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
fn tokenizer_of(a: &VllmArgs) -> Result<Option<TokenCounter>, FlagError> {
    if let Some(t) = &a.tokenizer {
        return TokenCounter::load(t, "--tokenizer")
            .map(Some)
            .map_err(FlagError::usage);
    }
    if stampede_engine::tokenizer::locate(&a.model).is_some() {
        return TokenCounter::load(&a.model, "--model")
            .map(Some)
            .map_err(FlagError::usage);
    }
    eprintln!(
        "note: no tokenizer.json for --model {} here (nothing is downloaded): prompts are counted in words, completions by their usage; --tokenizer PATH counts in the model's tokens",
        a.model
    );
    Ok(None)
}

/// ShareGPT's conversations: each one's first human turn is a prompt, its reply's
/// tokens (by the tokenizer, else its words; or `output_len`) the maximum asked for.
/// Shuffles `items` in a fixed order for `seed` (Fisher–Yates over a 64-bit LCG), as
/// vLLM shuffles its ShareGPT samples with its seed before taking them.
fn shuffle<T>(items: &mut [T], seed: u64) {
    let mut s = seed ^ 0x2545_f491_4f6c_dd1d;
    for i in (1..items.len()).rev() {
        s = s
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let j = ((s >> 33) % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}

fn sharegpt(
    text: &str,
    output_len: Option<u32>,
    tokenizer: Option<&TokenCounter>,
) -> Result<Vec<(String, u32)>, FlagError> {
    let v: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| FlagError::usage(format!("--dataset-path: not ShareGPT's JSON ({e})")))?;
    let Some(list) = v.as_array() else {
        return Err(FlagError::usage(
            "--dataset-path: ShareGPT's JSON is a list of conversations",
        ));
    };
    let mut out = Vec::new();
    for c in list {
        let turns = c["conversations"].as_array();
        let (Some(q), Some(r)) = (turns.and_then(|t| t.first()), turns.and_then(|t| t.get(1)))
        else {
            continue;
        };
        let (Some(q), Some(r)) = (q["value"].as_str(), r["value"].as_str()) else {
            continue;
        };
        let reply = match (output_len, tokenizer) {
            (Some(n), _) => n,
            (None, Some(t)) => t.count(r),
            (None, None) => r.split_whitespace().count() as u32,
        };
        let max = reply.clamp(1, 100_000);
        if !q.trim().is_empty() {
            out.push((q.to_string(), max));
        }
        if out.len() == stampede_engine::openai::MAX_PROMPTS {
            break;
        }
    }
    if out.is_empty() {
        return Err(FlagError::usage(
            "--dataset-path: no conversation with a prompt and a reply",
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::shuffle;

    #[test]
    fn a_seeded_shuffle_is_a_permutation_fixed_by_its_seed() {
        let order: Vec<u32> = (0..50).collect();
        let mut a = order.clone();
        shuffle(&mut a, 0);
        let mut b = order.clone();
        shuffle(&mut b, 0);
        assert_eq!(a, b);
        assert_ne!(a, order);
        let mut sorted = a.clone();
        sorted.sort();
        assert_eq!(sorted, order);
        let mut c = order.clone();
        shuffle(&mut c, 1);
        assert_ne!(a, c);
        let mut one = vec![7];
        shuffle(&mut one, 3);
        assert_eq!(one, [7]);
    }
}
