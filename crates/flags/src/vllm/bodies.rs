//! The requests `vllm bench serve` sends, built before the run: each prompt's JSON
//! body for the backend's API (completions and chat streamed with their usage;
//! embeddings answered whole), with vLLM's sampling parameters and `--extra-body`
//! merged in, a LoRA module drawn per request from `--lora-modules`, and the headers
//! vLLM sends (`--header`, a bearer token from `OPENAI_API_KEY`, `x-request-id`).

use stampede_engine::{Request, RequestBuilder, Target};

use super::datasets::{Rng, Sample};
use crate::FlagError;

/// The API a backend speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// `vllm`, `openai`: `/v1/completions`, streamed.
    Completions,
    /// `openai-chat`: `/v1/chat/completions`, streamed.
    Chat,
    /// `openai-embeddings`: `/v1/embeddings` with `input`.
    Embeddings,
    /// `openai-embeddings-chat`: `/v1/embeddings` with `messages`.
    EmbeddingsChat,
    /// `infinity-embeddings`: `/embeddings` of an Infinity server, `input` only.
    Infinity,
}

/// Backends vLLM offers that need inputs other than text, each with why it is refused.
const REFUSED: &[(&str, &str)] = &[
    (
        "openai-audio",
        "it sends audio files, from datasets of sound",
    ),
    ("openai-embeddings-clip", "it sends images"),
    ("openai-embeddings-vlm2vec", "it sends images"),
    ("infinity-embeddings-clip", "it sends images"),
    (
        "vllm-rerank",
        "it sends a query with documents, from the random-rerank dataset",
    ),
];

impl Backend {
    pub fn of(name: &str) -> Result<Backend, FlagError> {
        Ok(match name {
            "openai" | "vllm" => Backend::Completions,
            "openai-chat" => Backend::Chat,
            "openai-embeddings" => Backend::Embeddings,
            "openai-embeddings-chat" => Backend::EmbeddingsChat,
            "infinity-embeddings" => Backend::Infinity,
            other => {
                let why = REFUSED.iter().find(|(n, _)| *n == other).map_or(
                    "not a backend of vllm bench serve".to_string(),
                    |(_, why)| format!("not offered here: {why}"),
                );
                return Err(FlagError::usage(format!(
                    "--backend {other}: {why}; offered: vllm, openai (/v1/completions), openai-chat (/v1/chat/completions), openai-embeddings, openai-embeddings-chat, infinity-embeddings"
                )));
            }
        })
    }

    /// Streamed and timed token by token (else answered whole: pooling).
    pub fn generates(self) -> bool {
        matches!(self, Backend::Completions | Backend::Chat)
    }
}

/// What every body carries besides its prompt.
pub struct Bodies<'a> {
    pub backend: Backend,
    /// `--served-model-name`, else `--model`.
    pub model: &'a str,
    /// `--lora-modules`: each request asks for one of them, drawn with the seed.
    pub loras: &'a [String],
    /// Sampling parameters and `--extra-body`, merged into every generating body
    /// (`--extra-body` into pooling ones too).
    pub extra: serde_json::Map<String, serde_json::Value>,
    pub ignore_eos: bool,
    pub seed: u64,
    /// Generating backends: ask for a stream (else one answer, whole).
    pub stream: bool,
}

/// Most bytes the bodies of one run may take together, counted before building.
const MAX_BODIES: u64 = stampede_engine::input::MAX_BUILT_REQUESTS;

impl Bodies<'_> {
    /// The JSON body of one request: `prompts` (one, or an embeddings batch) asking
    /// for `out` tokens of `model` (0: no maximum).
    pub fn body(&self, prompts: &[&str], out: u32, model: &str) -> Vec<u8> {
        use serde_json::json;
        let one = prompts.first().copied().unwrap_or("");
        let mut v = match self.backend {
            Backend::Completions => json!({"model": model, "prompt": one, "max_tokens": out}),
            Backend::Chat => json!({
                "model": model,
                "messages": [{"role": "user", "content": one}],
                "max_completion_tokens": out,
            }),
            Backend::Embeddings | Backend::Infinity => {
                let input = if prompts.len() == 1 {
                    json!(one)
                } else {
                    json!(prompts)
                };
                json!({"model": model, "input": input})
            }
            Backend::EmbeddingsChat => json!({
                "model": model,
                "messages": [{"role": "user", "content": one}],
            }),
        };
        if out == 0 {
            // No maximum asked for: the model decides.
            if let Some(o) = v.as_object_mut() {
                o.remove("max_tokens");
                o.remove("max_completion_tokens");
            }
        }
        if self.backend.generates() {
            if self.stream {
                v["stream"] = true.into();
                v["stream_options"] = json!({"include_usage": true});
            }
            if self.ignore_eos {
                v["ignore_eos"] = true.into();
            }
        } else if self.backend != Backend::Infinity {
            // Embedding models' contexts are short: vLLM asks the server to cut.
            v["truncate_prompt_tokens"] = (-1).into();
        }
        for (k, x) in &self.extra {
            v[k] = x.clone();
        }
        serde_json::to_vec(&v).expect("a JSON value serialises")
    }

    /// The run's requests, one per sample (or per `batch` of them, for embeddings),
    /// each POSTed to `target` with `headers` and `x-request-id: {id_prefix}{i}`.
    pub fn requests(
        &self,
        target: &Target,
        headers: &[(String, String)],
        id_prefix: &str,
        samples: &[Sample],
        batch: usize,
    ) -> Result<Vec<Request>, FlagError> {
        let bytes: u64 = samples.iter().map(|(p, _)| p.len() as u64 + 256).sum();
        if bytes > MAX_BODIES {
            return Err(FlagError::usage(format!(
                "--num-prompts {}: these prompts would build about {:.1} GiB of request bodies, more than the {} built before a run; send fewer or shorter",
                samples.len(),
                bytes as f64 / f64::from(1u32 << 30),
                stampede_engine::input::size(MAX_BODIES)
            )));
        }
        let mut r = Rng(self.seed ^ 0x6c6f_7261);
        let batch = if self.backend.generates() {
            1
        } else {
            batch.max(1)
        };
        (samples.chunks(batch).enumerate())
            .map(|(i, group)| {
                let model = match self.loras {
                    [] => self.model,
                    l => l[r.below(l.len())].as_str(),
                };
                let prompts: Vec<&str> = group.iter().map(|(p, _)| p.as_str()).collect();
                let mut b = RequestBuilder::native(target, "POST", true)
                    .set_header("Content-Type", "application/json");
                for (n, v) in headers {
                    b = b.set_header(n, v);
                }
                b = b.set_header("x-request-id", &format!("{id_prefix}{i}"));
                (b.body(self.body(&prompts, group[0].1, model)).build())
                    .map_err(|e| FlagError::usage(e.to_string()))
            })
            .collect()
    }
}
