//! `load --openai chat --turns N`: multi-turn conversations
//! ([`stampede_journey::chat`]) drawn as `--input-tokens`/`--output-tokens` draw
//! single prompts, or read from a ShareGPT file (`--conversations`), with a shared
//! system prompt, a delay between turns and a context limit; closed (each
//! connection one conversation after another) or, with `--rate`, conversations
//! arriving at that rate, each on a connection of its own, its turns following as
//! their delays end.

use std::time::Duration;

use stampede_engine::inject::{InjectionStep, Profile};
use stampede_engine::{LoadSpec, Session, Shape, TokenCounter};
use stampede_journey::chat::{Chat, ChatRun, Conversation, Turn};

use super::args::LoadArgs;
use crate::common::{self, Exit};

/// Drawn conversations (each turn a prompt as `--input-tokens` draws them).
const DRAWN_CONVERSATIONS: usize = 1000;

/// `T` or `MIN-MAX`.
fn delay(s: &str) -> Result<(Duration, Duration), Exit> {
    let bad = |e: String| {
        Exit::usage(format!(
            "--turn-delay {s}: {e}; a duration (2s) or MIN-MAX (500ms-2s)"
        ))
    };
    let (lo, hi) = match s.split_once('-') {
        Some((a, b)) => (
            common::parse_duration(a).map_err(|e| bad(e.to_string()))?,
            common::parse_duration(b).map_err(|e| bad(e.to_string()))?,
        ),
        None => {
            let d = common::parse_duration(s).map_err(|e| bad(e.to_string()))?;
            (d, d)
        }
    };
    if hi < lo {
        return Err(bad("its maximum is below its minimum".into()));
    }
    Ok((lo, hi))
}

fn conversations(
    a: &LoadArgs,
    turns: u32,
    tokenizer: Option<&TokenCounter>,
) -> Result<Vec<Conversation>, Exit> {
    if let Some(path) = &a.conversations {
        let talks = stampede_flags::vllm::datasets::sharegpt_conversations(
            path,
            "--conversations",
            turns as usize,
        )
        .map_err(|e| Exit::usage(e.to_string()))?;
        let count = |t: &str| tokenizer.map_or(t.split_whitespace().count() as u32, |k| k.count(t));
        let out: Vec<Conversation> = talks
            .into_iter()
            .map(|t| Conversation {
                turns: t
                    .into_iter()
                    .map(|(q, r)| Turn {
                        prompt: q,
                        max_tokens: count(&r).max(1),
                    })
                    .collect(),
            })
            .collect();
        if out.is_empty() {
            return Err(Exit::usage(format!(
                "--conversations {path}: no conversation with a turn in it"
            )));
        }
        return Ok(out);
    }
    let per = turns as usize;
    let prompts = stampede_engine::openai::Prompts {
        api: stampede_engine::openai::Api::Chat,
        model: &a.model,
        input_words: a.input_tokens,
        output_tokens: a.output_tokens,
        range_ratio: a.range_ratio,
        file: a.prompts.as_deref(),
        what: "--prompts",
        count: (DRAWN_CONVERSATIONS * per).min(stampede_engine::openai::MAX_PROMPTS),
        seed: a.seed,
        ignore_eos: a.ignore_eos,
        tokenizer,
    };
    let drawn = prompts.prompts().map_err(Exit::usage)?;
    Ok(drawn
        .chunks(per)
        .filter(|c| c.len() == per)
        .map(|c| Conversation {
            turns: c
                .iter()
                .map(|(p, n)| Turn {
                    prompt: p.clone(),
                    max_tokens: *n,
                })
                .collect(),
        })
        .collect())
}

/// `--turns`: the chat's hooks on the spec, its shape set; `None` without it.
pub(super) fn chat(a: &LoadArgs, spec: &mut LoadSpec) -> Result<Option<ChatRun>, Exit> {
    let Some(turns) = a.turns else {
        return Ok(None);
    };
    if a.openai != Some(stampede_engine::openai::Api::Chat) {
        return Err(Exit::usage(
            "--turns: conversations go to a chat endpoint; give --openai chat",
        ));
    }
    if turns == 0 || turns > 1000 {
        return Err(Exit::usage(format!("--turns {turns}: 1 to 1000")));
    }
    if !a.inject.is_empty() || !a.rate_steps.is_empty() {
        return Err(Exit::usage("--turns: conversations arrive by --rate (or are held by -c); --inject and --rate-steps are not offered with them"));
    }
    let tokenizer = spec.load.streams.tokenizer.clone();
    let list = conversations(a, turns, tokenizer.as_ref())?;
    let system = a.system_prompt.map(|n| {
        let mut r = stampede_engine::openai::Rng(a.seed ^ 0x7379_7374);
        stampede_engine::openai::filler(n, tokenizer.as_ref(), &mut || r.draw())
    });
    let mut extra = serde_json::Map::new();
    if a.ignore_eos {
        extra.insert("ignore_eos".into(), true.into());
    }
    let headers = (a.headers.iter())
        .map(|h| common::header_arg(h))
        .collect::<Result<Vec<_>, _>>()?;
    let target = &spec.target;
    let run = ChatRun::new(Chat {
        conversations: list,
        system,
        model: a.model.clone(),
        path: target.path.clone(),
        authority: target.authority.clone(),
        headers,
        extra,
        stream: true,
        delay: a
            .turn_delay
            .as_deref()
            .map(delay)
            .transpose()?
            .unwrap_or_default(),
        max_context: a.max_context,
        overflow: a.context_overflow,
        tokenizer,
        seed: a.seed,
    })
    .map_err(|e| Exit::usage(format!("--turns: {e}")))?;
    if let Some(rate) = a.rate {
        if a.requests.is_some() {
            return Err(Exit::usage(
                "--turns with --rate: conversations arrive for -d; -n is not offered with them",
            ));
        }
        let during = a.duration.unwrap_or(Duration::from_secs(10));
        spec.load.shape = Shape::Users(Profile {
            steps: vec![InjectionStep::ConstantRate {
                rate,
                during,
                randomized: a.poisson,
            }],
        });
        spec.load.session = Session {
            calls: u32::MAX,
            ..Default::default()
        };
        // The conversations begun go on to their last turn.
        spec.load.duration = None;
    }
    // The hooks build every request: the prompts drawn for single requests go.
    spec.load.variety = Vec::new();
    spec.load.walk = None;
    spec.hooks = Some(run.hooks());
    Ok(Some(run))
}
