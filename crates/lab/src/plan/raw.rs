//! A plan as TOML spells it, before the checks: the tables and fields serde reads
//! (spans kept where the plan parser checks a value itself), and the context that
//! turns a span into the file, line and field an error names.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::PlanError;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPlan {
    pub(super) name: Option<String>,
    pub(super) description: Option<String>,
    pub(super) runs: Option<RawRuns>,
    pub(super) client: Option<RawClient>,
    pub(super) ssh: Option<RawSsh>,
    #[serde(default, rename = "target")]
    pub(super) targets: Vec<Spanned<RawTarget>>,
    #[serde(default, rename = "scenario")]
    pub(super) scenarios: Vec<Spanned<RawScenario>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRuns {
    pub(super) primer: Option<bool>,
    pub(super) warmup: Option<u32>,
    pub(super) repetitions: Option<Spanned<RawReps>>,
    pub(super) min_repetitions: Option<Spanned<u32>>,
    pub(super) max_repetitions: Option<Spanned<u32>>,
    pub(super) precision: Option<Spanned<String>>,
    pub(super) pause: Option<Spanned<String>>,
}

/// `repetitions`: a count, or `"auto"`.
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum RawReps {
    Count(u32),
    Word(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawClient {
    pub(super) cpus: Option<Spanned<Vec<usize>>>,
    pub(super) threads: Option<Spanned<usize>>,
    pub(super) hosts: Option<Spanned<Vec<String>>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSsh {
    #[serde(default)]
    pub(super) options: Vec<String>,
    pub(super) stampede: Option<String>,
    #[serde(default)]
    pub(super) copy: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTarget {
    pub(super) name: Spanned<String>,
    pub(super) start: Option<String>,
    pub(super) url: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) env: BTreeMap<String, String>,
    pub(super) cwd: Option<String>,
    pub(super) ready: Option<Spanned<String>>,
    pub(super) ready_timeout: Option<Spanned<String>>,
    pub(super) version: Option<String>,
    #[serde(default)]
    pub(super) cpus: Vec<usize>,
    pub(super) port: Option<Spanned<u16>>,
    pub(super) stop_grace: Option<Spanned<String>>,
    pub(super) host: Option<Spanned<String>>,
    pub(super) address: Option<Spanned<String>>,
    pub(super) tls: Option<bool>,
    pub(super) insecure: Option<Spanned<bool>>,
    pub(super) cacert: Option<Spanned<String>>,
    pub(super) expect: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSessions {
    pub(super) count: u64,
    pub(super) rate: Option<f64>,
    pub(super) period: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawVerify {
    pub(super) status: Option<u16>,
    pub(super) content_type: Option<String>,
    pub(super) body: Option<String>,
    pub(super) body_contains: Option<String>,
    pub(super) body_length: Option<usize>,
    pub(super) json_key: Option<String>,
    pub(super) headers: Option<Vec<String>>,
    pub(super) date_fresh: Option<bool>,
    pub(super) on_failure: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawStep {
    pub(super) path: Spanned<String>,
    pub(super) method: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) headers: Vec<Spanned<String>>,
    pub(super) body: Option<String>,
    pub(super) pause: Option<Spanned<String>>,
    pub(super) verify: Option<RawVerify>,
}

/// A scenario's table as the plan file writes it: one field per key a scenario
/// accepts (hence over twenty), each with its span for error messages.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawScenario {
    pub(super) name: Spanned<String>,
    pub(super) path: Option<Spanned<String>>,
    pub(super) method: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) headers: Vec<Spanned<String>>,
    pub(super) body: Option<String>,
    pub(super) style: Option<Spanned<String>>,
    pub(super) connections: Option<Spanned<usize>>,
    pub(super) requests: Option<Spanned<u64>>,
    pub(super) duration: Option<Spanned<String>>,
    pub(super) keepalive: Option<Spanned<bool>>,
    pub(super) pipeline: Option<Spanned<usize>>,
    pub(super) http2: Option<bool>,
    pub(super) streams: Option<Spanned<usize>>,
    pub(super) rate: Option<f64>,
    pub(super) poisson: Option<bool>,
    pub(super) burstiness: Option<Spanned<f64>>,
    pub(super) inject: Option<Spanned<Vec<String>>>,
    pub(super) sessions: Option<RawSessions>,
    pub(super) calls: Option<Spanned<u32>>,
    pub(super) burst: Option<Spanned<u32>>,
    pub(super) think: Option<Spanned<String>>,
    pub(super) timeout: Option<Spanned<String>>,
    pub(super) verify: Option<RawVerify>,
    pub(super) steps: Option<Spanned<Vec<RawStep>>>,
    #[serde(default, rename = "assert")]
    pub(super) asserts: Vec<Spanned<String>>,
    pub(super) search: Option<Spanned<RawSearch>>,
    pub(super) stream: Option<Spanned<String>>,
    pub(super) openai: Option<Spanned<super::stream::RawOpenai>>,
    pub(super) event_timeout: Option<Spanned<String>>,
    pub(super) ws: Option<Spanned<super::ws::RawWs>>,
    pub(super) journey: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSearch {
    #[serde(default)]
    pub(super) conditions: Vec<Spanned<String>>,
    pub(super) max_rate: Option<Spanned<f64>>,
    pub(super) start_rate: Option<Spanned<f64>>,
    pub(super) step: Option<Spanned<String>>,
    pub(super) warmup: Option<Spanned<String>>,
    pub(super) precision: Option<Spanned<String>>,
    pub(super) max_steps: Option<Spanned<usize>>,
}

impl RawVerify {
    /// Whether it asks for anything of an HTTP answer (beyond `on_failure`).
    pub(super) fn checks_http(&self) -> bool {
        self.status.is_some()
            || self.content_type.is_some()
            || self.body.is_some()
            || self.body_contains.is_some()
            || self.body_length.is_some()
            || self.json_key.is_some()
            || self.headers.is_some()
            || self.date_fresh.is_some()
    }
}

/// Refuses the first of `refused` (given, its field, why not) that was given beside
/// a scenario's `with` table: `scenario "x": not with ws: why; drop field`.
pub(super) fn refuse_beside(
    cx: &Ctx,
    (here, name, with): (usize, &str, &str),
    refused: &[(bool, &str, &str)],
) -> Result<(), PlanError> {
    match refused.iter().find(|(set, _, _)| *set) {
        Some((_, field, why)) => Err(cx.err(
            here,
            field,
            format!(
                "scenario {name:?}: not with {with}: {why}; drop {}",
                field.trim_start_matches("scenario.")
            ),
        )),
        None => Ok(()),
    }
}

pub(super) struct Ctx<'a> {
    pub(super) file: &'a str,
    pub(super) src: &'a str,
}

impl Ctx<'_> {
    pub(super) fn line(&self, offset: usize) -> usize {
        self.src[..offset.min(self.src.len())].matches('\n').count() + 1
    }

    pub(super) fn err(&self, offset: usize, field: &str, message: impl Into<String>) -> PlanError {
        PlanError {
            file: self.file.to_string(),
            line: self.line(offset),
            field: field.to_string(),
            message: message.into(),
        }
    }

    pub(super) fn duration(&self, v: &Spanned<String>, field: &str) -> Result<Duration, PlanError> {
        stampede_engine::parse_duration(v.get_ref()).map_err(|m| self.err(v.span().start, field, m))
    }

    /// A percentage written `"2%"`, as a fraction; `example` shows the form in the error.
    pub(super) fn percent(
        &self,
        v: &Spanned<String>,
        field: &str,
        example: &str,
    ) -> Result<f64, PlanError> {
        let t = v.get_ref().trim();
        match t
            .strip_suffix('%')
            .and_then(|n| n.trim().parse::<f64>().ok())
        {
            Some(p) if p > 0.0 && p < 100.0 => Ok(p / 100.0),
            _ => Err(self.err(
                v.span().start,
                field,
                format!("{t:?} is not a percentage between 0 and 100, e.g. \"{example}\""),
            )),
        }
    }
}

/// The table (`scenario`, `runs`, …) whose header is the last one at or before `offset`.
pub(super) fn table_at(src: &str, offset: usize) -> Option<String> {
    let upto = &src[..src[offset.min(src.len())..]
        .find('\n')
        .map_or(src.len(), |i| offset + i)];
    upto.lines().rev().find_map(|l| {
        let l = l.trim();
        l.starts_with('[')
            .then(|| l.trim_matches(|c| c == '[' || c == ']').trim().to_string())
    })
}

/// The dotted field at `offset`: its table, then the keys of any inline tables the
/// offset is inside, then the key being assigned (`scenario.sessions.count`).
pub(super) fn field_at(src: &str, offset: usize) -> Option<String> {
    let (mut parts, pending) = within(src, offset);
    parts.push(pending?);
    Some(parts.join("."))
}

/// The table at `offset` and the keys of the inline tables it is inside (an offset at
/// an inline table's `{` counts as inside it), and the key being assigned there.
pub(super) fn within(src: &str, offset: usize) -> (Vec<String>, Option<String>) {
    let offset = offset.min(src.len());
    let line_start = src[..offset].rfind('\n').map_or(0, |i| i + 1);
    let prefix = &src[line_start..offset];
    let (mut stack, mut key, mut pending) = (Vec::new(), String::new(), None::<String>);
    let mut quote = None;
    for c in prefix.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '=') => pending = Some(std::mem::take(&mut key)),
            (None, '{') => stack.extend(pending.take()),
            (None, '}') => {
                stack.pop();
            }
            (None, ',') => {
                key.clear();
                pending = None;
            }
            (None, c) if c.is_alphanumeric() || c == '_' || c == '-' => key.push(c),
            (None, '.') => key.push('.'),
            _ => {}
        }
    }
    if src[offset..].starts_with('{') {
        stack.extend(pending.take());
    }
    let mut parts: Vec<String> = table_at(src, offset).into_iter().collect();
    parts.extend(stack);
    (parts, pending)
}
