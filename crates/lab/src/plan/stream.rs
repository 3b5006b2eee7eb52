//! A scenario that times streams: `stream = "chunks"` or `"sse"` times each response's
//! pieces or server-sent events, `openai = { api = "chat", … }` sends streamed
//! completions to an OpenAI-compatible server and times their tokens, and
//! `event_timeout` fails a stream that sends nothing for that long. Read here with the
//! line of each value; the prompts (drawn by the plan's seed, or read from a JSONL
//! file) become the request bodies once, at parse time, so a plan that cannot run is
//! refused before any target starts.

use super::*;
use stampede_engine::openai::{Api, Prompts, MAX_PROMPTS, MAX_WORDS};
use stampede_engine::{Slo, StreamMode, TokenCounter};

/// How a scenario's responses are timed as streams.
#[derive(Debug, Clone)]
pub struct StreamPlan {
    /// What counts as an event.
    pub mode: StreamMode,
    /// A stream that sends no event for this long fails as `stream_stall`.
    pub event_timeout: Option<Duration>,
    /// OpenAI completions: the request bodies (each in turn) and the service levels.
    pub openai: Option<OpenaiPlan>,
}

/// An OpenAI scenario's completions.
#[derive(Debug, Clone)]
pub struct OpenaiPlan {
    /// The API the bodies are for.
    pub api: Api,
    /// Each request's JSON body, streamed with its usage, sent in turn.
    pub bodies: Vec<Vec<u8>>,
    /// Service levels for goodput (`goodput = ["ttft:500", "tpot:50"]`).
    pub slo: Option<Slo>,
    /// The model's tokenizer (`tokenizer = "path/tokenizer.json"`): prompts of its
    /// tokens, and completions without usage counted from their text.
    pub tokenizer: Option<TokenCounter>,
}

/// The distinct prompts a scenario draws at most: a run with more requests takes
/// them again in turn.
const DRAWN: u64 = 1_000;

/// `openai = {…}` as the plan writes it.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawOpenai {
    api: Spanned<String>,
    model: Option<String>,
    input_tokens: Option<Spanned<u32>>,
    output_tokens: Option<Spanned<u32>>,
    range_ratio: Option<Spanned<f64>>,
    prompts: Option<Spanned<String>>,
    ignore_eos: Option<bool>,
    #[serde(default)]
    goodput: Vec<Spanned<String>>,
    seed: Option<u64>,
    tokenizer: Option<Spanned<String>>,
}

/// The scenario's stream keys; `None` when it has none. `requests` bounds the prompts
/// drawn.
pub(super) fn stream_plan(
    cx: &Ctx,
    s: &RawScenario,
    name: &str,
    requests: Option<u64>,
) -> Result<Option<StreamPlan>, PlanError> {
    let event_timeout = match &s.event_timeout {
        Some(t) => {
            let d = cx.duration(t, "scenario.event_timeout")?;
            if d.is_zero() {
                return Err(cx.err(
                    t.span().start,
                    "scenario.event_timeout",
                    "must be longer than 0",
                ));
            }
            Some(d)
        }
        None => None,
    };
    let mode = match (&s.stream, &s.openai) {
        (Some(m), Some(_)) => {
            return Err(cx.err(
                m.span().start,
                "scenario.stream",
                format!(
                    "scenario {name:?}: openai streams are timed as OpenAI streams; drop stream"
                ),
            ))
        }
        (Some(m), None) => match m.get_ref().as_str() {
            "chunks" => StreamMode::Chunks,
            "sse" => StreamMode::Sse,
            other => {
                return Err(cx.err(
                    m.span().start,
                    "scenario.stream",
                    format!("{other:?} is not chunks or sse"),
                ))
            }
        },
        (None, Some(_)) => StreamMode::Openai,
        (None, None) => {
            if let Some(t) = &s.event_timeout {
                return Err(cx.err(
                    t.span().start,
                    "scenario.event_timeout",
                    format!("scenario {name:?}: times the events of streams; add stream or openai"),
                ));
            }
            return Ok(None);
        }
    };
    let openai = match &s.openai {
        Some(o) => Some(openai(cx, s, o, name, requests)?),
        None => None,
    };
    Ok(Some(StreamPlan {
        mode,
        event_timeout,
        openai,
    }))
}

/// `openai = {…}`: the API, the prompts and the service levels. The scenario's own
/// request fields would be ignored, so they are refused.
fn openai(
    cx: &Ctx,
    s: &RawScenario,
    raw: &Spanned<RawOpenai>,
    name: &str,
    requests: Option<u64>,
) -> Result<OpenaiPlan, PlanError> {
    let here = raw.span().start;
    let o = raw.get_ref();
    for (set, field) in [
        (s.body.is_some(), "scenario.body"),
        (s.method.is_some(), "scenario.method"),
        (s.steps.is_some(), "scenario.steps"),
        (
            s.inject.is_some() || s.sessions.is_some(),
            "scenario.inject",
        ),
    ] {
        if set {
            return Err(cx.err(
                here,
                field,
                format!("scenario {name:?}: an openai scenario sends its own POST of each prompt; drop {}", field.trim_start_matches("scenario.")),
            ));
        }
    }
    let api: Api = o
        .api
        .get_ref()
        .parse()
        .map_err(|e: stampede_engine::error::SyntaxError| {
            cx.err(o.api.span().start, "scenario.openai.api", e.0)
        })?;
    let words = |v: &Option<Spanned<u32>>, field: &str, default: u32| match v {
        Some(n) if *n.get_ref() == 0 || *n.get_ref() > MAX_WORDS => {
            Err(cx.err(n.span().start, field, format!("must be 1 to {MAX_WORDS}")))
        }
        Some(n) => Ok(*n.get_ref()),
        None => Ok(default),
    };
    let input_words = words(&o.input_tokens, "scenario.openai.input_tokens", 128)?;
    let output_tokens = words(&o.output_tokens, "scenario.openai.output_tokens", 64)?;
    let range_ratio = match &o.range_ratio {
        Some(r) if !(0.0..1.0).contains(r.get_ref()) => {
            return Err(cx.err(
                r.span().start,
                "scenario.openai.range_ratio",
                "must be in [0, 1)",
            ))
        }
        Some(r) => *r.get_ref(),
        None => 0.0,
    };
    let slo = {
        let levels: Vec<&str> = o.goodput.iter().map(|g| g.get_ref().as_str()).collect();
        Slo::parse(&levels).map_err(|e| {
            // The line of the level that is wrong.
            let bad = (o.goodput.iter()).find(|g| Slo::parse(&[g.get_ref()]).is_err());
            let at = bad.map_or(here, |g| g.span().start);
            cx.err(at, "scenario.openai.goodput", e)
        })?
    };
    let tokenizer = match &o.tokenizer {
        Some(t) => Some(
            TokenCounter::load(t.get_ref(), "scenario.openai.tokenizer")
                .map_err(|e| cx.err(t.span().start, "scenario.openai.tokenizer", e.to_string()))?,
        ),
        None => None,
    };
    let model = o.model.clone().unwrap_or_else(|| "default".into());
    let mut prompts = Prompts {
        api,
        model: &model,
        input_words,
        output_tokens,
        range_ratio,
        file: o.prompts.as_ref().map(|p| p.get_ref().as_str()),
        what: "scenario.openai.prompts",
        count: requests
            .unwrap_or(DRAWN)
            .clamp(1, DRAWN.min(MAX_PROMPTS as u64)) as usize,
        seed: o.seed.unwrap_or(0x5eed),
        ignore_eos: o.ignore_eos.unwrap_or(false),
        tokenizer: tokenizer.as_ref(),
    };
    let at = o.prompts.as_ref().map_or(here, |p| p.span().start);
    let drawn = prompts
        .prompts()
        .map_err(|e| cx.err(at, "scenario.openai.prompts", e.to_string()))?;
    // A file's prompts are each sent in turn, all of them.
    if o.prompts.is_some() {
        prompts.count = drawn.len();
    }
    Ok(OpenaiPlan {
        api,
        bodies: prompts.bodies_of(&drawn),
        slo,
        tokenizer,
    })
}
