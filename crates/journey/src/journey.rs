//! A journey file: the steps a user takes in order, each a request whose URL,
//! headers and body are templates, with what to take from its answer, what the
//! answer must pass and how long the user thinks before the next step; the data
//! users are fed, and constants. Written in TOML:
//!
//! ```toml
//! think = "100ms"                      # after every step, unless the step says
//!
//! [feeder]
//! file = "users.csv"                   # beside the journey file; .jsonl for JSONL
//! order = "sequence"                   # sequence | random | unique
//! exhausted = "stop"                   # unique rows used up: stop | again
//!
//! [variables]
//! shop = "main"
//!
//! [[step]]
//! name = "login"
//! method = "POST"
//! url = "/login"
//! json = { user = "{{ user }}", password = "{{ password }}" }
//! capture = [{ json = "$.token", as = "token" }]
//! check = ["status 200"]
//!
//! [[step]]
//! name = "items"
//! url = "/items?shop={{ shop }}"
//! headers = { Authorization = "Bearer {{ token }}" }
//! capture = [{ json = "$.items[0].id", as = "item" }]
//! think = { uniform = ["50ms", "150ms"] }
//! ```
//!
//! Everything is checked when the file is read: an unknown key is refused with its
//! line, and a template may use only the names set before its step — the feeder's
//! columns, the variables, and what the steps before it capture — so a journey that
//! reads the file runs without a name missing.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use crate::check::Check;
use crate::cond::Cond;
use crate::extract::Extraction;
use crate::feeder::{Feeder, FeederError, Order};
use crate::template::{Draw, Scope, Slot, Template, TemplateError};
use crate::walk::{Op, Repeat, MAX_DEPTH, MAX_TURNS};
use crate::Invalid;

/// The largest journey file read.
pub const MAX_FILE: usize = 1024 * 1024;
/// The most steps a journey has.
pub const MAX_STEPS: usize = 100;
/// The most headers a step sends (HTTP/2's and HTTP/3's translation takes 64 with
/// those stampede adds).
pub const MAX_HEADERS: usize = 48;

/// A journey that cannot be used: the file, and where in it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {reason}")]
pub struct JourneyError {
    pub file: String,
    /// Where (a line, or a step and field) and what is wrong.
    pub reason: String,
}

/// How long a user thinks after a step's answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Think {
    Fixed(Duration),
    /// Drawn evenly between the two.
    Uniform(Duration, Duration),
    /// Drawn from an exponential distribution with this mean.
    Exponential(Duration),
}

impl Think {
    /// One draw.
    pub fn draw(&self, d: &mut Draw) -> Duration {
        match *self {
            Think::Fixed(t) => t,
            Think::Uniform(a, b) => {
                a + (b - a).mul_f64((d.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
            }
            Think::Exponential(m) => {
                let u = ((d.next_u64() >> 11) as f64 + 1.0) / ((1u64 << 53) as f64 + 1.0);
                m.mul_f64(-u.ln()).min(m * 100)
            }
        }
    }

    /// Whether it is always zero.
    pub fn is_zero(&self) -> bool {
        matches!(self, Think::Fixed(t) if t.is_zero())
    }
}

/// One step: a request.
#[derive(Debug, Clone)]
pub struct Step {
    pub name: String,
    /// The figure it is counted under: its name's index in [`Journey::figures`].
    pub figure: usize,
    pub method: String,
    pub url: Template,
    pub headers: Vec<(String, Template)>,
    pub body: Option<Template>,
    pub captures: Vec<Extraction>,
    pub checks: Vec<Check>,
    pub think: Think,
}

/// What happens when a unique feeder has no row left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exhausted {
    /// The run stops, saying so.
    Stop,
    /// The rows are taken again from the first, said once.
    Again,
}

/// A feeder as a journey uses it.
#[derive(Debug, Clone)]
pub struct Feed {
    pub feeder: Feeder,
    pub order: Order,
    pub exhausted: Exhausted,
    /// The slots its columns fill.
    pub slots: Vec<Slot>,
}

/// A value every user starts with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Constant {
    /// One of these texts, drawn for each user (one: the same for all).
    OneOf(Vec<String>),
    /// A list, for a loop to walk.
    List(Vec<String>),
}

/// One of a file's journeys: the order its steps are taken in, and the names its
/// templates may use.
#[derive(Debug, Clone)]
pub struct Route {
    pub name: String,
    /// Its share of the users' journeys, against the others' weights.
    pub weight: u32,
    /// The feeder's columns, the constants, then what its steps capture.
    pub scope: Scope,
    pub ops: Vec<Op>,
}

/// A checked journey file: one journey, or a weighted mix of them, over the same
/// feeder and constants.
#[derive(Debug, Clone)]
pub struct Journey {
    pub feed: Option<Feed>,
    /// The `[variables]` (each user one of a variable's values) and `[lists]`.
    pub constants: Vec<(Slot, Constant)>,
    /// Every journey's steps, in the file's order.
    pub steps: Vec<Step>,
    /// The steps' names, each once: the run's figures. Steps of different journeys
    /// with one name are counted as one.
    pub figures: Vec<String>,
    pub routes: Vec<Route>,
    /// The file it was read from, by name.
    pub file: Option<String>,
}

impl Journey {
    /// What a run of it offers, in a few words: `shop.toml (buyer 3 : looker 1)`.
    pub fn describe(&self) -> String {
        let file = self.file.as_deref().unwrap_or("the journey");
        let name = std::path::Path::new(file)
            .file_name()
            .map_or(file.into(), |n| n.to_string_lossy());
        if self.routes.len() < 2 {
            return name.into_owned();
        }
        let mix: Vec<String> = (self.routes.iter())
            .map(|r| format!("{} {}", r.name, r.weight))
            .collect();
        format!("{name} ({})", mix.join(" : "))
    }

    /// The most variables any of its journeys declares.
    pub fn width(&self) -> usize {
        self.routes.iter().map(|r| r.scope.len()).max().unwrap_or(0)
    }

    /// The journey a new user takes: drawn by weight.
    pub fn pick(&self, d: &mut Draw) -> usize {
        if self.routes.len() == 1 {
            return 0;
        }
        let total: u64 = self.routes.iter().map(|r| u64::from(r.weight)).sum();
        let mut x = d.below(total);
        for (i, r) in self.routes.iter().enumerate() {
            if x < u64::from(r.weight) {
                return i;
            }
            x -= u64::from(r.weight);
        }
        self.routes.len() - 1
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawJourney {
    think: Option<RawThink>,
    feeder: Option<RawFeeder>,
    #[serde(default)]
    variables: BTreeMap<String, RawVariable>,
    #[serde(default)]
    lists: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    step: Vec<RawStep>,
    #[serde(default)]
    journey: Vec<RawRoute>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawVariable {
    One(String),
    OneOf(Vec<String>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFeeder {
    file: String,
    order: Option<String>,
    exhausted: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRoute {
    name: String,
    weight: Option<u32>,
    think: Option<RawThink>,
    #[serde(default)]
    step: Vec<RawStep>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    name: Option<String>,
    method: Option<String>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    body: Option<String>,
    json: Option<toml::Value>,
    #[serde(default)]
    capture: Vec<RawCapture>,
    #[serde(default)]
    check: Vec<String>,
    think: Option<RawThink>,
    #[serde(rename = "if")]
    when: Option<String>,
    #[serde(rename = "loop")]
    repeat: Option<RawLoop>,
    /// A group's steps (`[[step.step]]`).
    #[serde(default)]
    step: Vec<RawStep>,
    /// A line to write to the log (a step of its own).
    log: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLoop {
    count: Option<u32>,
    over: Option<String>,
    #[serde(rename = "as")]
    item: Option<String>,
    index: Option<String>,
    /// The index's first value (0 when absent).
    first: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCapture {
    json: Option<String>,
    regexp: Option<String>,
    header: Option<String>,
    cookie: Option<String>,
    #[serde(rename = "as")]
    var: String,
    default: Option<String>,
    /// Every match, as a list.
    #[serde(default)]
    all: bool,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawThink {
    Text(String),
    Table(RawThinkTable),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawThinkTable {
    uniform: Option<[String; 2]>,
    exponential: Option<String>,
}

impl Journey {
    /// One request as a journey of one step (`load`'s flags with a feeder): its
    /// `url` (a path, or a URL on the run's origin), `headers` and `body` are
    /// templates over the feeder's columns and the built-ins, and each request is a
    /// journey of its own taking the next row. `fields` name the URL, a header and
    /// the body in errors (`URL`, `-H`, `--body-file`).
    pub fn single(
        method: &str,
        url: &str,
        headers: &[(String, String)],
        body: Option<&str>,
        feed: Option<(Feeder, Order, Exhausted)>,
        fields: [&str; 3],
    ) -> Result<Journey, TemplateError> {
        let mut scope = Scope::default();
        let feed = match feed {
            None => None,
            Some((feeder, order, exhausted)) => {
                let slots = feeder.declare(&mut scope)?;
                Some(Feed {
                    feeder,
                    order,
                    exhausted,
                    slots,
                })
            }
        };
        let [url_field, header_field, body_field] = fields;
        let url_t = Template::parse(url, &scope, url_field)?;
        let headers = (headers.iter())
            .map(|(n, v)| {
                Ok((
                    n.clone(),
                    Template::parse(v, &scope, &format!("{header_field} {n}"))?,
                ))
            })
            .collect::<Result<Vec<_>, TemplateError>>()?;
        let body = body
            .map(|b| Template::parse(b, &scope, body_field))
            .transpose()?;
        Ok(Journey {
            feed,
            constants: Vec::new(),
            routes: vec![Route {
                name: method.to_string(),
                weight: 1,
                scope,
                ops: vec![Op::Step {
                    step: 0,
                    when: None,
                }],
            }],
            file: None,
            figures: vec![format!("{method} {url}")],
            steps: vec![Step {
                figure: 0,
                name: format!("{method} {url}"),
                method: method.to_string(),
                url: url_t,
                headers,
                body,
                captures: Vec::new(),
                checks: Vec::new(),
                think: Think::Fixed(Duration::ZERO),
            }],
        })
    }

    /// Reads the journey at `path` (its feeder's file relative to it).
    pub fn read_file(path: &str) -> Result<Journey, JourneyError> {
        let err = |reason: String| JourneyError {
            file: path.to_string(),
            reason,
        };
        let bytes = crate::read_bounded(path, stampede_engine::input::Input::Config, "a journey")
            .map_err(|e| err(e.0))?;
        let text = String::from_utf8(bytes)
            .map_err(|e| err(format!("not UTF-8 text: {}", e.utf8_error())))?;
        let dir = std::path::Path::new(path)
            .parent()
            .unwrap_or(std::path::Path::new("."));
        Journey::parse(path, &text, |file| {
            let p = dir.join(file);
            Feeder::read_file(&p.to_string_lossy())
        })
    }

    /// Reads a journey from `text` (`file` names it in errors); `feeder` reads the
    /// feeder file it names.
    pub fn parse(
        file: &str,
        text: &str,
        feeder: impl FnOnce(&str) -> Result<Feeder, FeederError>,
    ) -> Result<Journey, JourneyError> {
        let err = |reason: String| JourneyError {
            file: file.to_string(),
            reason,
        };
        if text.len() > MAX_FILE {
            return Err(err(format!(
                "{} bytes; a journey is at most {MAX_FILE}",
                text.len()
            )));
        }
        let raw: RawJourney = toml::from_str(text).map_err(|e| {
            let line = e
                .span()
                .map(|s| 1 + text[..s.start.min(text.len())].matches('\n').count());
            let msg = e.message().trim().to_string();
            err(match line {
                Some(l) => format!("line {l}: {msg}"),
                None => msg,
            })
        })?;
        let routes: Vec<(String, u32, Option<&RawThink>, &[RawStep])> =
            match (raw.step.is_empty(), raw.journey.is_empty()) {
                (true, true) => {
                    return Err(err(
                        "no [[step]] and no [[journey]]: a journey takes at least one step".into(),
                    ))
                }
                (false, false) => {
                    return Err(err(
                        "[[step]] at the top and [[journey]] tables: write one journey's steps, or each journey's own ([[journey.step]])".into(),
                    ))
                }
                (false, true) => vec![("journey".into(), 1, None, &raw.step[..])],
                (true, false) => raw
                    .journey
                    .iter()
                    .map(|r| (r.name.clone(), r.weight.unwrap_or(1), r.think.as_ref(), &r.step[..]))
                    .collect(),
            };
        let default_think = match &raw.think {
            Some(t) => think(t).map_err(|e| err(format!("think: {e}")))?,
            None => Think::Fixed(Duration::ZERO),
        };
        let mut scope = Scope::default();
        let feed = match &raw.feeder {
            None => None,
            Some(f) => {
                let feeder = feeder(&f.file).map_err(|e| err(format!("feeder: {e}")))?;
                let order = match f.order.as_deref() {
                    None => Order::Sequence,
                    Some(o) => o.parse().map_err(|e| err(format!("feeder.order: {e}")))?,
                };
                let exhausted = match f.exhausted.as_deref() {
                    None | Some("stop") => Exhausted::Stop,
                    Some("again") => Exhausted::Again,
                    Some(o) => {
                        return Err(err(format!("feeder.exhausted: {o:?}: write stop or again")))
                    }
                };
                let slots = feeder
                    .declare(&mut scope)
                    .map_err(|e| err(format!("feeder: {e}")))?;
                Some(Feed {
                    feeder,
                    order,
                    exhausted,
                    slots,
                })
            }
        };
        let mut constants = Vec::new();
        for (name, value) in &raw.variables {
            let slot = scope
                .declare(name)
                .map_err(|e| err(format!("variables: {}", e.reason)))?;
            let values = match value {
                RawVariable::One(v) => vec![v.clone()],
                RawVariable::OneOf(v) if v.is_empty() => {
                    return Err(err(format!(
                        "variables.{name}: an empty list; give one value at least"
                    )))
                }
                RawVariable::OneOf(v) => v.clone(),
            };
            constants.push((slot, Constant::OneOf(values)));
        }
        for (name, items) in &raw.lists {
            if scope.slot(name).is_some() {
                return Err(err(format!(
                    "lists.{name}: a variable of this name is declared before it"
                )));
            }
            let slot = scope
                .declare(name)
                .map_err(|e| err(format!("lists: {}", e.reason)))?;
            constants.push((slot, Constant::List(items.clone())));
        }
        let mut reader = Reader {
            err: &err,
            steps: Vec::new(),
            figures: Vec::new(),
            route_from: 0,
        };
        let many = routes.len() > 1 || !raw.journey.is_empty();
        let mut out = Vec::new();
        for (name, weight, own_think, raw_steps) in routes {
            let at = if many {
                format!("journey {name:?}, ")
            } else {
                String::new()
            };
            if many && out.iter().any(|r: &Route| r.name == name) {
                return Err(err(format!("{at}another journey has this name")));
            }
            if weight == 0 {
                return Err(err(format!("{at}weight: 0; a weight is 1 or more")));
            }
            if raw_steps.is_empty() {
                return Err(err(format!(
                    "{at}no [[journey.step]]: a journey takes at least one step"
                )));
            }
            let think = match own_think {
                Some(t) => think(t).map_err(|e| err(format!("{at}think: {e}")))?,
                None => default_think,
            };
            let mut scope = scope.clone();
            let mut ops = Vec::new();
            reader.route_from = reader.steps.len();
            reader.steps_of(raw_steps, (&at, ""), &mut scope, think, &mut ops, 0)?;
            if matches!(ops.first(), Some(Op::Pause(_))) {
                return Err(err(format!(
                    "{at}step 1: a journey begins with a request; a pause before it is the arrival's (--inject) or the think time of the journey before"
                )));
            }
            out.push(Route {
                name,
                weight,
                scope,
                ops,
            });
        }
        if out.iter().map(|r| u64::from(r.weight)).sum::<u64>() > u64::from(u32::MAX) {
            return Err(err("the journeys' weights add up past 4294967295".into()));
        }
        Ok(Journey {
            feed,
            constants,
            steps: reader.steps,
            figures: reader.figures,
            routes: out,
            file: Some(file.to_string()),
        })
    }
}

mod read;

pub use read::{json_template, json_value_template};
use read::{think, Reader};

#[cfg(test)]
mod tests;
