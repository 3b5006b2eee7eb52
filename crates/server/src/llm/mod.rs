//! A mock OpenAI-compatible LLM server, deterministic so that tests and benchmarks
//! know the true answer: `/v1/models`, `/v1/completions` and `/v1/chat/completions`,
//! streamed (server-sent events) or not, and `/v1/embeddings` (answered at once).
//!
//! A request's completion has `max_completion_tokens` (or `max_tokens`) tokens, the
//! configured default when it names none. The first comes the configured time to
//! first token after the request, each next the configured inter-token latency after
//! the one before; with `k` streams under way on the thread (this one included) both
//! are multiplied by `ceil(k / batch)`, as a batching server slows when its batch is
//! full. A token is a word here: the prompt's tokens are its whitespace-separated
//! words, and each completion token is one word (` tok`), so a client that counts
//! words counts exactly what `usage` says. Streams send OpenAI's chunk objects (a chat
//! stream's first also carries the role), the last token's with `finish_reason:
//! "length"`, then a usage chunk when `stream_options.include_usage` asks, then `data:
//! [DONE]`; a request that is not streamed gets one JSON answer when its last token
//! would have come.

pub mod engine;
pub mod metrics;
pub mod truth;

use std::io::Write as _;
use std::time::{Duration, Instant};

/// The mock's timing and defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LlmConfig {
    /// From the request to the first token.
    pub ttft: Duration,
    /// From one token to the next.
    pub itl: Duration,
    /// Streams a thread serves at full speed; more slow each (see the module's
    /// comment). 0: never slower.
    pub batch: u32,
    /// Tokens answered when a request names no maximum.
    pub max_tokens: u32,
    /// Every `k`-th completion a thread begins has its first token this much later,
    /// as a stalled prefill would (`None`: none does).
    pub stall: Option<(u32, Duration)>,
    /// Serve as a continuous-batching engine does (see [`engine`]) instead of on
    /// the fixed timing above.
    pub engine: Option<engine::EngineConfig>,
}

impl Default for LlmConfig {
    fn default() -> Self {
        LlmConfig {
            ttft: Duration::from_millis(50),
            itl: Duration::from_millis(10),
            batch: 0,
            max_tokens: 16,
            stall: None,
            engine: None,
        }
    }
}

/// Most tokens one completion may ask for.
pub const MAX_TOKENS: u64 = 100_000;

/// The model the mock serves.
pub const MODEL: &str = "stampede-mock";

/// `/v1/models`' answer.
pub const MODELS: &[u8] =
    b"{\"object\":\"list\",\"data\":[{\"id\":\"stampede-mock\",\"object\":\"model\",\"created\":0,\"owned_by\":\"stampede\"}]}";

/// Which API a request used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    Completions,
    Chat,
}

/// What a completion request asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Asked {
    pub api: Api,
    pub stream: bool,
    /// A usage chunk before `[DONE]` (`stream_options.include_usage`).
    pub usage: bool,
    pub max_tokens: u32,
    pub prompt_tokens: u32,
}

/// Reads a completion request's JSON body; the error says what is wrong with it.
pub fn read_request(api: Api, body: &[u8], cfg: &LlmConfig) -> Result<Asked, &'static str> {
    let v: serde_json::Value =
        serde_json::from_slice(body).map_err(|_| "the request body is not JSON")?;
    let words = |s: &str| s.split_whitespace().count() as u32;
    let prompt_tokens = match api {
        Api::Completions => match &v["prompt"] {
            serde_json::Value::String(s) => words(s),
            _ => return Err("prompt must be a string"),
        },
        Api::Chat => {
            let Some(messages) = v["messages"].as_array() else {
                return Err("messages must be an array");
            };
            messages
                .iter()
                .map(|m| m["content"].as_str().map_or(0, words))
                .sum()
        }
    };
    let max = v
        .get("max_completion_tokens")
        .filter(|m| !m.is_null())
        .or_else(|| v.get("max_tokens").filter(|m| !m.is_null()));
    let max_tokens = match max {
        None => cfg.max_tokens,
        Some(m) => match m.as_u64() {
            Some(n) if (1..=MAX_TOKENS).contains(&n) => n as u32,
            _ => return Err("max_tokens must be 1 to 100000"),
        },
    };
    Ok(Asked {
        api,
        stream: v["stream"].as_bool().unwrap_or(false),
        usage: v["stream_options"]["include_usage"]
            .as_bool()
            .unwrap_or(false),
        max_tokens,
        prompt_tokens,
    })
}

/// Dimensions of the mock's embeddings.
const DIMENSIONS: usize = 8;

/// The answer to `/v1/embeddings`: one vector per input (`input`, a string or a list
/// of them; or a chat's `messages`), answered at once, with the inputs' words as
/// their usage. The error says what is wrong with the request.
pub fn embeddings(body: &[u8]) -> Result<Vec<u8>, &'static str> {
    let v: serde_json::Value =
        serde_json::from_slice(body).map_err(|_| "the request body is not JSON")?;
    let words = |s: &str| s.split_whitespace().count() as u64;
    let texts: Vec<u64> = match (&v["input"], v["messages"].as_array()) {
        (serde_json::Value::String(s), _) => vec![words(s)],
        (serde_json::Value::Array(a), _) if !a.is_empty() => a
            .iter()
            .map(|x| x.as_str().map(words).ok_or("input must be strings"))
            .collect::<Result<_, _>>()?,
        (serde_json::Value::Null, Some(m)) => {
            vec![m
                .iter()
                .map(|m| m["content"].as_str().map_or(0, words))
                .sum()]
        }
        _ => return Err("input must be a string or a list of strings"),
    };
    let tokens: u64 = texts.iter().sum();
    let mut out = Vec::with_capacity(64 + texts.len() * 80);
    out.extend_from_slice(b"{\"object\":\"list\",\"data\":[");
    for (i, n) in texts.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let _ = write!(
            out,
            "{{\"object\":\"embedding\",\"index\":{i},\"embedding\":["
        );
        for d in 0..DIMENSIONS {
            let sep = if d == 0 { "" } else { "," };
            let _ = write!(out, "{sep}{}", ((n + d as u64) % 7) as f64 / 7.0);
        }
        out.extend_from_slice(b"]}");
    }
    let _ = write!(
        out,
        "],\"model\":\"{MODEL}\",\"usage\":{{\"prompt_tokens\":{tokens},\"total_tokens\":{tokens}}}}}"
    );
    Ok(out)
}

/// The block hashes of a completion request's prompt (see
/// [`engine::block_hashes`]): a chat's messages' contents in turn.
pub fn prompt_blocks(api: Api, body: &[u8], block: u32) -> Vec<u64> {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) else {
        return Vec::new();
    };
    let text = match api {
        Api::Completions => v["prompt"].as_str().unwrap_or("").to_string(),
        Api::Chat => (v["messages"].as_array().into_iter().flatten())
            .filter_map(|m| m["content"].as_str())
            .collect::<Vec<_>>()
            .join(" "),
    };
    engine::block_hashes(&text, block)
}

/// The streams a thread has under way, by when each ends: how busy its batch is.
#[derive(Debug, Default)]
pub struct Batch {
    ends: Vec<Instant>,
    /// Completions begun on the thread.
    begun: u64,
}

impl Batch {
    /// A stream of `tokens` tokens begins at `now`: its time to first token and
    /// inter-token latency, slowed as the batch fills (and the first token stalled
    /// when it is a stalled one).
    pub fn begin(&mut self, cfg: &LlmConfig, tokens: u32, now: Instant) -> (Duration, Duration) {
        self.ends.retain(|&e| e > now);
        let k = self.ends.len() as u32 + 1;
        let slow = if cfg.batch == 0 {
            1
        } else {
            k.div_ceil(cfg.batch)
        };
        let (mut ttft, itl) = (cfg.ttft * slow, cfg.itl * slow);
        self.begun += 1;
        if let Some((k, late)) = cfg.stall {
            if self.begun.is_multiple_of(u64::from(k.max(1))) {
                ttft += late;
            }
        }
        self.ends.push(now + ttft + itl * tokens.saturating_sub(1));
        (ttft, itl)
    }
}

/// Appends a streamed chunk object carrying `text` (none: the usage chunk) to `out`,
/// as a server-sent event.
pub(crate) fn chunk_event(
    out: &mut Vec<u8>,
    asked: &Asked,
    id: u32,
    text: Option<&str>,
    last: bool,
) {
    let finish = if last { "\"length\"" } else { "null" };
    let _ = match (asked.api, text) {
        (_, None) => write!(
            out,
            "data: {{\"id\":\"cmpl-{id}\",\"object\":\"{}\",\"created\":0,\"model\":\"{MODEL}\",\"choices\":[],\"usage\":{}}}\n\n",
            object(asked),
            usage_json(asked)
        ),
        (Api::Completions, Some(t)) => write!(
            out,
            "data: {{\"id\":\"cmpl-{id}\",\"object\":\"text_completion\",\"created\":0,\"model\":\"{MODEL}\",\"choices\":[{{\"index\":0,\"text\":\"{t}\",\"logprobs\":null,\"finish_reason\":{finish}}}]}}\n\n"
        ),
        (Api::Chat, Some(t)) => write!(
            out,
            "data: {{\"id\":\"chatcmpl-{id}\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"{MODEL}\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{t}\"}},\"finish_reason\":{finish}}}]}}\n\n"
        ),
    };
}

/// A chat stream's first chunk: the role, no content yet (as OpenAI's servers send).
pub(crate) fn role_event(out: &mut Vec<u8>, id: u32) {
    let _ = write!(
        out,
        "data: {{\"id\":\"chatcmpl-{id}\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"{MODEL}\",\"choices\":[{{\"index\":0,\"delta\":{{\"role\":\"assistant\",\"content\":\"\"}},\"finish_reason\":null}}]}}\n\n"
    );
}

/// The answer to a request that is not streamed: every token at once, with usage.
pub(crate) fn whole(out: &mut Vec<u8>, asked: &Asked, id: u32) {
    let text = " tok".repeat(asked.max_tokens as usize);
    let _ = match asked.api {
        Api::Completions => write!(
            out,
            "{{\"id\":\"cmpl-{id}\",\"object\":\"text_completion\",\"created\":0,\"model\":\"{MODEL}\",\"choices\":[{{\"index\":0,\"text\":\"{text}\",\"logprobs\":null,\"finish_reason\":\"length\"}}],\"usage\":{}}}",
            usage_json(asked)
        ),
        Api::Chat => write!(
            out,
            "{{\"id\":\"chatcmpl-{id}\",\"object\":\"chat.completion\",\"created\":0,\"model\":\"{MODEL}\",\"choices\":[{{\"index\":0,\"message\":{{\"role\":\"assistant\",\"content\":\"{text}\"}},\"finish_reason\":\"length\"}}],\"usage\":{}}}",
            usage_json(asked)
        ),
    };
}

fn object(asked: &Asked) -> &'static str {
    match asked.api {
        Api::Completions => "text_completion",
        Api::Chat => "chat.completion.chunk",
    }
}

fn usage_json(asked: &Asked) -> String {
    format!(
        "{{\"prompt_tokens\":{},\"completion_tokens\":{},\"total_tokens\":{}}}",
        asked.prompt_tokens,
        asked.max_tokens,
        u64::from(asked.prompt_tokens) + u64::from(asked.max_tokens)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_read_as_openai_writes_them() {
        let cfg = LlmConfig::default();
        let a = read_request(
            Api::Chat,
            br#"{"model":"m","messages":[{"role":"user","content":"one two  three"}],"max_completion_tokens":5,"stream":true,"stream_options":{"include_usage":true}}"#,
            &cfg,
        )
        .unwrap();
        assert_eq!(
            a,
            Asked {
                api: Api::Chat,
                stream: true,
                usage: true,
                max_tokens: 5,
                prompt_tokens: 3
            }
        );
        let a = read_request(
            Api::Completions,
            br#"{"prompt":"a b","max_tokens":null}"#,
            &cfg,
        )
        .unwrap();
        assert_eq!((a.max_tokens, a.prompt_tokens, a.stream), (16, 2, false));
        for bad in [
            &br#"{"prompt":1}"#[..],
            br#"{"prompt":"x","max_tokens":0}"#,
            br#"{"prompt":"x","max_tokens":100001}"#,
            b"not json",
        ] {
            assert!(read_request(Api::Completions, bad, &cfg).is_err());
        }
        assert!(read_request(Api::Chat, br#"{"prompt":"x"}"#, &cfg).is_err());
    }

    #[test]
    fn a_full_batch_slows_every_new_stream() {
        let cfg = LlmConfig {
            batch: 2,
            ..LlmConfig::default()
        };
        let mut b = Batch::default();
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        assert_eq!(b.begin(&cfg, 10, t0), (ms(50), ms(10)));
        assert_eq!(b.begin(&cfg, 10, t0), (ms(50), ms(10)));
        // A third while two run: twice as slow.
        assert_eq!(b.begin(&cfg, 10, t0), (ms(100), ms(20)));
        // Once the first two ended (50 + 9 × 10 ms), one runs beside the new one.
        assert_eq!(b.begin(&cfg, 10, t0 + ms(141)), (ms(50), ms(10)));
    }

    #[test]
    fn every_kth_completion_is_stalled() {
        let cfg = LlmConfig {
            stall: Some((3, Duration::from_millis(400))),
            ..LlmConfig::default()
        };
        let mut b = Batch::default();
        let t0 = Instant::now();
        let firsts: Vec<u128> = (0..7).map(|_| b.begin(&cfg, 1, t0).0.as_millis()).collect();
        assert_eq!(firsts, [50, 50, 450, 50, 50, 450, 50]);
    }

    #[test]
    fn chunks_are_json_events_and_the_whole_answer_is_json() {
        let asked = Asked {
            api: Api::Chat,
            stream: true,
            usage: true,
            max_tokens: 2,
            prompt_tokens: 3,
        };
        let mut out = Vec::new();
        role_event(&mut out, 7);
        chunk_event(&mut out, &asked, 7, Some(" tok"), true);
        chunk_event(&mut out, &asked, 7, None, false);
        let text = String::from_utf8(out).unwrap();
        let events: Vec<serde_json::Value> = text
            .split("\n\n")
            .filter(|e| !e.is_empty())
            .map(|e| serde_json::from_str(e.strip_prefix("data: ").unwrap()).unwrap())
            .collect();
        assert_eq!(events[0]["choices"][0]["delta"]["role"], "assistant");
        assert_eq!(events[1]["choices"][0]["delta"]["content"], " tok");
        assert_eq!(events[1]["choices"][0]["finish_reason"], "length");
        assert_eq!(events[2]["usage"]["total_tokens"], 5);
        let mut out = Vec::new();
        whole(
            &mut out,
            &Asked {
                api: Api::Completions,
                stream: false,
                ..asked
            },
            1,
        );
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["choices"][0]["text"], " tok tok");
        assert_eq!(v["usage"]["completion_tokens"], 2);
    }
}
