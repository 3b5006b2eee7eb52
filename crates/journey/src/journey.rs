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

/// Reads steps into a journey's places, each request into the file's steps.
struct Reader<'a> {
    err: &'a dyn Fn(String) -> JourneyError,
    steps: Vec<Step>,
    figures: Vec<String>,
    /// The first of the journey being read's steps.
    route_from: usize,
}

impl Reader<'_> {
    /// Reads `raw` (the steps of a journey, or of a group) into `ops`, declaring what
    /// they capture in `scope`; `place` is the journey's name in errors and the
    /// group's number the steps' numbers begin with.
    fn steps_of(
        &mut self,
        raw: &[RawStep],
        place: (&str, &str),
        scope: &mut Scope,
        default_think: Think,
        ops: &mut Vec<Op>,
        depth: usize,
    ) -> Result<(), JourneyError> {
        let err = self.err;
        let (journey, label) = place;
        for (i, s) in raw.iter().enumerate() {
            let number = format!("{label}{}", i + 1);
            let at = match &s.name {
                Some(n) => format!("{journey}step {number} ({n:?})"),
                None => format!("{journey}step {number}"),
            };
            let when = match &s.when {
                Some(c) => Some(
                    Cond::parse(c, scope, &format!("{at}, if")).map_err(|e| err(e.to_string()))?,
                ),
                None => None,
            };
            let think = match &s.think {
                Some(x) => think(x).map_err(|e| err(format!("{at}, think: {e}")))?,
                None => default_think,
            };
            let group = !s.step.is_empty();
            // A step of a pause or a log line alone sends nothing.
            let pause = s.url.is_none() && !group && s.think.is_some() && s.log.is_none();
            if (pause || s.log.is_some()) && (group || s.repeat.is_some() || s.url.is_some()) {
                return Err(err(format!(
                    "{at}: a log line is a step of its own (no url, loop or [[step.step]])"
                )));
            }
            if pause || s.log.is_some() {
                if let Some(field) = request_field(s).filter(|f| *f != "url") {
                    return Err(err(format!(
                        "{at}, {field}: a pause or a log line sends no request"
                    )));
                }
                let op = match &s.log {
                    Some(l) => {
                        if s.think.is_some() {
                            return Err(err(format!("{at}: a log line and a pause are two steps")));
                        }
                        Op::Log(
                            Template::parse(l, scope, &format!("{at}, log"))
                                .map_err(|e| err(e.to_string()))?,
                        )
                    }
                    None => Op::Pause(think),
                };
                match when {
                    None => ops.push(op),
                    Some(c) => {
                        let enter = ops.len();
                        ops.push(Op::Enter {
                            when: Some(c),
                            repeat: Repeat::Count(1),
                            index: None,
                            leave: enter + 2,
                        });
                        ops.push(op);
                        ops.push(Op::Leave { enter });
                    }
                }
                continue;
            }
            if !group && s.repeat.is_none() {
                let step = self.request(s, &at, scope, think)?;
                ops.push(Op::Step { step, when });
                continue;
            }
            if depth + 1 > MAX_DEPTH {
                return Err(err(format!("{at}: groups nest at most {MAX_DEPTH} deep")));
            }
            let (repeat, index) = match &s.repeat {
                None => (Repeat::Count(1), None),
                Some(l) => self.repeat(l, &at, scope)?,
            };
            let enter = ops.len();
            ops.push(Op::Enter {
                when,
                repeat,
                index,
                leave: 0,
            });
            if group {
                if let Some(field) = request_field(s) {
                    return Err(err(format!(
                        "{at}, {field}: a group ([[step.step]]) sends no request of its own; give it to one of its steps"
                    )));
                }
                self.steps_of(
                    &s.step,
                    (journey, &format!("{number}.")),
                    scope,
                    think,
                    ops,
                    depth + 1,
                )?;
            } else {
                // A request that loops: a group of one.
                let step = self.request(s, &at, scope, think)?;
                ops.push(Op::Step { step, when: None });
            }
            let leave = ops.len();
            ops.push(Op::Leave { enter });
            if let Op::Enter { leave: l, .. } = &mut ops[enter] {
                *l = leave;
            }
        }
        Ok(())
    }

    /// A loop's turns, with its item and index declared.
    fn repeat(
        &self,
        l: &RawLoop,
        at: &str,
        scope: &mut Scope,
    ) -> Result<(Repeat, Option<(Slot, u32)>), JourneyError> {
        let err = self.err;
        let field = format!("{at}, loop");
        let repeat = match (l.count, &l.over, &l.item) {
            (Some(n), None, None) => {
                if n == 0 || n > MAX_TURNS {
                    return Err(err(format!("{field}: count {n}; a loop turns 1 to {MAX_TURNS} times")));
                }
                Repeat::Count(n)
            }
            (None, Some(list), Some(item)) => {
                let list = scope.slot(list).ok_or_else(|| {
                    err(format!(
                        "{field}: over {list:?}: no variable of that name before it (a capture with all = true makes a list)"
                    ))
                })?;
                let item = scope
                    .declare(item)
                    .map_err(|e| err(format!("{field}: as: {}", e.reason)))?;
                Repeat::Over { list, item }
            }
            (None, Some(_), None) => {
                return Err(err(format!("{field}: over needs as = \"NAME\", the variable each item is put in")))
            }
            _ => {
                return Err(err(format!(
                    "{field}: {{ count = N }} or {{ over = \"LIST\", as = \"ITEM\" }}, each with index = \"NAME\" if wanted"
                )))
            }
        };
        let index = match &l.index {
            None => None,
            Some(n) => Some(
                scope
                    .declare(n)
                    .map_err(|e| err(format!("{field}: index: {}", e.reason)))?,
            )
            .map(|slot| (slot, l.first.unwrap_or(0))),
        };
        if l.first.is_some() && l.index.is_none() {
            return Err(err(format!(
                "{field}: first is the index's first value: give index = \"NAME\" with it"
            )));
        }
        Ok((repeat, index))
    }

    /// A request step, added to the file's steps: its index.
    fn request(
        &mut self,
        s: &RawStep,
        at: &str,
        scope: &mut Scope,
        think: Think,
    ) -> Result<usize, JourneyError> {
        let err = self.err;
        let Some(name) = s.name.as_deref().filter(|n| !n.trim().is_empty()) else {
            return Err(err(format!(
                "{at}: a name is needed (it names the step's figures)"
            )));
        };
        let Some(url) = &s.url else {
            return Err(err(format!(
                "{at}: a url is needed (or [[step.step]]s, for a group)"
            )));
        };
        if self.steps.len() >= MAX_STEPS {
            return Err(err(format!(
                "{at}: more than {MAX_STEPS} steps; a file takes at most {MAX_STEPS}"
            )));
        }
        if self.steps[self.route_from..].iter().any(|x| x.name == name) {
            return Err(err(format!(
                "{at}: another step of this journey has this name"
            )));
        }
        let t = |text: &str, field: &str| {
            Template::parse(text, scope, &format!("{at}, {field}")).map_err(|e| err(e.to_string()))
        };
        let method = s.method.as_deref().unwrap_or("GET").to_ascii_uppercase();
        if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic()) {
            return Err(err(format!("{at}, method: {method:?} is not a method")));
        }
        let url = t(url, "url")?;
        let mut headers = Vec::new();
        for (n, v) in &s.headers {
            if n.is_empty() || !n.bytes().all(|b| b.is_ascii_graphic() && b != b':') {
                return Err(err(format!("{at}, headers: {n:?} is not a header name")));
            }
            if ["host", "content-length", "transfer-encoding"]
                .contains(&n.to_ascii_lowercase().as_str())
            {
                return Err(err(format!("{at}, headers: {n} is set by stampede")));
            }
            if [
                "connection",
                "keep-alive",
                "upgrade",
                "proxy-connection",
                "te",
            ]
            .contains(&n.to_ascii_lowercase().as_str())
            {
                return Err(err(format!(
                    "{at}, headers: {n} is about the connection, which stampede keeps (HTTP/2 and HTTP/3 do not carry it)"
                )));
            }
            if s.headers.len() > MAX_HEADERS {
                return Err(err(format!(
                    "{at}, headers: {}; a step sends at most {MAX_HEADERS}",
                    s.headers.len()
                )));
            }
            headers.push((n.clone(), t(v, &format!("headers.{n}"))?));
        }
        let body = match (&s.body, &s.json) {
            (Some(_), Some(_)) => {
                return Err(err(format!("{at}: body or json, not both")));
            }
            (Some(b), None) => Some(t(b, "body")?),
            (None, Some(j)) => {
                if !headers
                    .iter()
                    .any(|(n, _)| n.eq_ignore_ascii_case("content-type"))
                {
                    headers.push((
                        "Content-Type".into(),
                        Template::parse("application/json", scope, "").expect("constant"),
                    ));
                }
                let text = json_template(j).map_err(|e| err(format!("{at}, json: {e}")))?;
                Some(t(&text, "json")?)
            }
            (None, None) => None,
        };
        let checks = (s.check.iter())
            .map(|c| Check::parse(c).map_err(|e| err(format!("{at}, check: {e}"))))
            .collect::<Result<Vec<_>, _>>()?;
        // Captures are declared after the step's own templates are read: a step
        // cannot send what its own answer hands out.
        let mut captures = Vec::new();
        for c in &s.capture {
            let field = format!("{at}, capture {:?}", c.var);
            let given: Vec<(&str, &String)> = [
                ("json", &c.json),
                ("regexp", &c.regexp),
                ("header", &c.header),
                ("cookie", &c.cookie),
            ]
            .into_iter()
            .filter_map(|(k, v)| v.as_ref().map(|v| (k, v)))
            .collect();
            let [(kind, expr)] = given[..] else {
                return Err(err(format!(
                    "{field}: one of json, regexp, header or cookie says where to look"
                )));
            };
            let mut x = Extraction::new(&c.var, kind, expr, scope, &field)
                .map_err(|e| err(e.to_string()))?;
            x.default = c.default.clone();
            x.all = c.all;
            captures.push(x);
        }
        let figure = match self.figures.iter().position(|f| f == name) {
            Some(f) => f,
            None => {
                self.figures.push(name.to_string());
                self.figures.len() - 1
            }
        };
        self.steps.push(Step {
            figure,
            name: name.to_string(),
            method,
            url,
            headers,
            body,
            captures,
            checks,
            think,
        });
        Ok(self.steps.len() - 1)
    }
}

/// The first request field a group was given, if any.
fn request_field(s: &RawStep) -> Option<&'static str> {
    [
        ("method", s.method.is_some()),
        ("url", s.url.is_some()),
        ("headers", !s.headers.is_empty()),
        ("body", s.body.is_some()),
        ("json", s.json.is_some()),
        ("capture", !s.capture.is_empty()),
        ("check", !s.check.is_empty()),
    ]
    .into_iter()
    .find_map(|(f, given)| given.then_some(f))
}

/// A `json` table as a template of its JSON text: a string that is one placeholder
/// and nothing else (`"{{ id }}"`) takes the value's own type (`{{ id | json }}`: a
/// number stays a number), as load testers' JSON bodies do.
pub fn json_template(v: &toml::Value) -> Result<String, serde_json::Error> {
    json_value_template(&json_of_toml(v))
}

/// [`json_template`] of a JSON value.
pub fn json_value_template(v: &serde_json::Value) -> Result<String, serde_json::Error> {
    let mut whole = Vec::new();
    let marked = mark_whole(v, &mut whole);
    let mut text = serde_json::to_string(&marked)?;
    for (i, name) in whole.iter().enumerate() {
        let marker = serde_json::to_string(&format!("\u{1}{i}\u{1}"))?;
        text = text.replacen(&marker, &format!("{{{{ {name} | json }}}}"), 1);
    }
    Ok(text)
}

fn json_of_toml(v: &toml::Value) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        toml::Value::String(s) => J::String(s.clone()),
        toml::Value::Integer(i) => J::from(*i),
        toml::Value::Float(f) => serde_json::Number::from_f64(*f).map_or(J::Null, J::Number),
        toml::Value::Boolean(b) => J::Bool(*b),
        toml::Value::Datetime(d) => J::String(d.to_string()),
        toml::Value::Array(a) => J::Array(a.iter().map(json_of_toml).collect()),
        toml::Value::Table(t) => J::Object(
            t.iter()
                .map(|(k, x)| (k.clone(), json_of_toml(x)))
                .collect(),
        ),
    }
}

fn mark_whole(v: &serde_json::Value, whole: &mut Vec<String>) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        J::String(s) => {
            let t = s.trim();
            let inner = t
                .strip_prefix("{{")
                .and_then(|r| r.strip_suffix("}}"))
                .map(str::trim);
            match inner {
                Some(name)
                    if !name.is_empty()
                        && !name.contains(['{', '}', '|', '$'])
                        && !t[2..].contains("{{") =>
                {
                    whole.push(name.to_string());
                    J::String(format!("\u{1}{}\u{1}", whole.len() - 1))
                }
                _ => J::String(s.clone()),
            }
        }
        J::Array(a) => J::Array(a.iter().map(|x| mark_whole(x, whole)).collect()),
        J::Object(t) => J::Object(
            t.iter()
                .map(|(k, x)| (k.clone(), mark_whole(x, whole)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn think(t: &RawThink) -> Result<Think, Invalid> {
    let d = |s: &str| stampede_engine::parse_duration(s).map_err(|e| e.to_string());
    match t {
        RawThink::Text(s) => Ok(Think::Fixed(d(s)?)),
        RawThink::Table(RawThinkTable {
            uniform: Some([a, b]),
            exponential: None,
        }) => {
            let (a, b) = (d(a)?, d(b)?);
            if a > b {
                return Err("uniform: the shorter time comes first".into());
            }
            Ok(Think::Uniform(a, b))
        }
        RawThink::Table(RawThinkTable {
            uniform: None,
            exponential: Some(m),
        }) => Ok(Think::Exponential(d(m)?)),
        RawThink::Table(_) => Err("a duration (\"100ms\"), { uniform = [\"50ms\", \"150ms\"] } or { exponential = \"100ms\" }".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::feeder::Format;

    const SHOP: &str = r#"
think = "10ms"
[feeder]
file = "users.csv"
order = "unique"
[variables]
shop = "main"
[[step]]
name = "login"
method = "post"
url = "/login"
json = { user = "{{ user }}", password = "{{ password }}" }
capture = [{ json = "$.token", as = "token" }]
check = ["status 200"]
[[step]]
name = "items"
url = "/items?shop={{ shop }}"
headers = { Authorization = "Bearer {{ token }}" }
capture = [{ json = "$.items[0].id", as = "item", default = "0" }]
think = { uniform = ["50ms", "150ms"] }
"#;

    fn users(_: &str) -> Result<Feeder, FeederError> {
        Feeder::parse("users.csv", b"user,password\nann,pw1\n", Format::Csv)
    }

    #[test]
    fn a_journey_reads_into_steps_whose_templates_use_what_came_before() {
        let j = Journey::parse("shop.toml", SHOP, users).unwrap();
        assert_eq!(j.steps.len(), 2);
        let login = &j.steps[0];
        assert_eq!(
            (login.name.as_str(), login.method.as_str()),
            ("login", "POST")
        );
        assert_eq!(login.headers[0].0, "Content-Type");
        assert_eq!(login.think, Think::Fixed(Duration::from_millis(10)));
        assert_eq!(
            j.steps[1].think,
            Think::Uniform(Duration::from_millis(50), Duration::from_millis(150))
        );
        assert_eq!(j.feed.as_ref().unwrap().order, Order::Unique);
        assert_eq!(
            j.constants,
            [(Slot(2), Constant::OneOf(vec!["main".into()]))]
        );
        // Feeder columns, variables, then captures in order.
        let names: Vec<&str> = (0..j.routes[0].scope.len())
            .map(|i| j.routes[0].scope.name(Slot(i as u16)))
            .collect();
        assert_eq!(names, ["user", "password", "shop", "token", "item"]);
    }

    #[test]
    fn what_is_wrong_is_refused_with_its_step_field_or_line() {
        for (edit, says) in [
            (
                SHOP.replace("Bearer {{ token }}", "Bearer {{ item }}"),
                "step 2 (\"items\"), headers.Authorization: {{ item }}: no variable \"item\"",
            ),
            (
                SHOP.replace("url = \"/login\"", "url = \"/login/{{ token }}\""),
                "step 1 (\"login\"), url: {{ token }}: no variable",
            ),
            (
                SHOP.replace(
                    "check = [\"status 200\"]",
                    "check = [\"status 200\"]\nretries = 3",
                ),
                "line 15: unknown field `retries`",
            ),
            (
                SHOP.replace("status 200", "status 999"),
                "step 1 (\"login\"), check: check \"status 999\"",
            ),
            (
                SHOP.replace("name = \"items\"", "name = \"login\""),
                "step 2 (\"login\"): another step of this journey has this name",
            ),
            (
                SHOP.replace(
                    "json = \"$.token\", as",
                    "header = \"X\", json = \"$.token\", as",
                ),
                "one of json, regexp, header or cookie",
            ),
            (
                SHOP.replace("order = \"unique\"", "order = \"shuffled\""),
                "feeder.order: \"shuffled\"",
            ),
            (
                SHOP.replace("method = \"post\"", "method = \"PO ST\""),
                "method: \"PO ST\" is not a method",
            ),
            (
                SHOP.replace("headers = {", "headers = { Host = \"x\", "),
                "headers: Host is set by stampede",
            ),
            (
                SHOP.replace("\"50ms\", \"150ms\"", "\"150ms\", \"50ms\""),
                "the shorter time comes first",
            ),
            ("think = \"1s\"\n".to_string(), "no [[step]]"),
        ] {
            let e = Journey::parse("shop.toml", &edit, users).unwrap_err();
            assert!(e.to_string().starts_with("shop.toml: "), "{e}");
            assert!(e.reason.contains(says), "wanted {says:?} in: {}", e.reason);
        }
        let e = Journey::parse("shop.toml", SHOP, |_| {
            Err(FeederError {
                place: "users.csv:3".into(),
                reason: "1 fields; the header names 2".into(),
            })
        })
        .unwrap_err();
        assert_eq!(
            e.reason,
            "feeder: users.csv:3: 1 fields; the header names 2"
        );
    }

    #[test]
    fn one_request_is_a_journey_of_one_step_over_the_feeders_columns() {
        let rows = users("").unwrap();
        let headers = [("X-User".to_string(), "{{ user }}".to_string())];
        let j = Journey::single(
            "POST",
            "/login/{{ user }}",
            &headers,
            Some(r#"{"pw": "{{ password }}", "n": {{ $seq }}}"#),
            Some((rows, Order::Random, Exhausted::Stop)),
            ["URL", "-H", "--body-file"],
        )
        .unwrap();
        assert_eq!(j.steps.len(), 1);
        assert_eq!(j.steps[0].name, "POST /login/{{ user }}");
        assert_eq!(j.feed.as_ref().unwrap().order, Order::Random);
        let e = Journey::single(
            "GET",
            "/",
            &[("X-A".into(), "{{ nope }}".into())],
            None,
            None,
            ["URL", "-H", "--body-file"],
        )
        .unwrap_err();
        assert_eq!(e.field, "-H X-A");
        assert!(
            e.reason.contains("no variable \"nope\" (declared: none"),
            "{}",
            e.reason
        );
    }

    const LOOPS: &str = r#"
[[journey]]
name = "buy"
weight = 2
[[journey.step]]
name = "list"
url = "/items"
capture = [{ json = "$.items[*].id", as = "ids", all = true }]
[[journey.step]]
if = "ids exists"
loop = { over = "ids", as = "id", index = "i" }
[[journey.step.step]]
name = "add"
url = "/cart/{{ id }}?at={{ i }}"
[[journey.step.step]]
name = "again"
url = "/cart"
loop = { count = 2 }
[[journey]]
name = "look"
[[journey.step]]
name = "home"
url = "/"
"#;

    #[test]
    fn groups_loops_conditions_and_a_mix_read_into_places() {
        let j = Journey::parse("loops.toml", LOOPS, users).unwrap();
        let names: Vec<&str> = j.steps.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["list", "add", "again", "home"]);
        assert_eq!(j.figures, names);
        // A step of another journey with a name already used is counted with it.
        let shared =
            Journey::parse("l.toml", &LOOPS.replace("\"home\"", "\"list\""), users).unwrap();
        assert_eq!(shared.figures, ["list", "add", "again"]);
        assert_eq!(shared.steps[3].figure, 0);
        assert_eq!(j.routes.len(), 2);
        assert_eq!((j.routes[0].name.as_str(), j.routes[0].weight), ("buy", 2));
        assert_eq!((j.routes[1].name.as_str(), j.routes[1].weight), ("look", 1));
        let ops = &j.routes[0].ops;
        assert_eq!(ops.len(), 7);
        assert!(matches!(
            ops[0],
            Op::Step {
                step: 0,
                when: None
            }
        ));
        assert!(matches!(
            &ops[1],
            Op::Enter { when: Some(c), repeat: Repeat::Over { .. }, index: Some(_), leave: 6 } if c.line == "ids exists"
        ));
        assert!(matches!(ops[2], Op::Step { step: 1, .. }));
        assert!(matches!(
            ops[3],
            Op::Enter {
                repeat: Repeat::Count(2),
                leave: 5,
                ..
            }
        ));
        assert!(matches!(ops[4], Op::Step { step: 2, .. }));
        assert!(matches!(ops[5], Op::Leave { enter: 3 }));
        assert!(matches!(ops[6], Op::Leave { enter: 1 }));
        // Each journey has its own names: "look" cannot use what "buy" captures.
        assert!(j.routes[1].scope.slot("ids").is_none());
        assert_eq!(j.width(), 3);
        let mut d = Draw::new(1, (0, 1));
        let buy = (0..3000).filter(|_| j.pick(&mut d) == 0).count();
        assert!((1850..2150).contains(&buy), "{buy}");
    }

    #[test]
    fn a_group_a_loop_or_a_mix_that_is_wrong_is_refused_with_its_place() {
        let nest = |depth: usize| {
            let (mut t, mut table) = (String::new(), String::from("step"));
            for _ in 0..depth {
                t.push_str(&format!("[[{table}]]\nloop = {{ count = 2 }}\n"));
                table.push_str(".step");
            }
            t.push_str(&format!("[[{table}]]\nname = \"deep\"\nurl = \"/\"\n"));
            t
        };
        for (edit, says) in [
            (
                LOOPS.replace("if = \"ids exists\"", "if = \"id exists\""),
                "journey \"buy\", step 2, if: \"id exists\": no variable \"id\" before it",
            ),
            (
                LOOPS.replace("over = \"ids\"", "over = \"idz\""),
                "journey \"buy\", step 2, loop: over \"idz\": no variable",
            ),
            (
                LOOPS.replace(", as = \"id\"", ""),
                "step 2, loop: over needs as = \"NAME\"",
            ),
            (
                LOOPS.replace("count = 2", "count = 0"),
                "step 2.2 (\"again\"), loop: count 0; a loop turns 1 to 10000 times",
            ),
            (
                LOOPS.replace("count = 2", "count = 2, over = \"ids\""),
                "step 2.2 (\"again\"), loop: { count = N } or",
            ),
            (
                LOOPS.replace("if = \"ids exists\"", "url = \"/x\""),
                "journey \"buy\", step 2, url: a group ([[step.step]]) sends no request of its own",
            ),
            (
                LOOPS.replace("name = \"again\"\n", ""),
                "journey \"buy\", step 2.2: a name is needed",
            ),
            (
                LOOPS.replace("name = \"again\"", "name = \"add\""),
                "journey \"buy\", step 2.2 (\"add\"): another step of this journey has this name",
            ),
            (
                LOOPS.replace("name = \"look\"", "name = \"buy\""),
                "journey \"buy\", another journey has this name",
            ),
            (
                LOOPS.replace("weight = 2", "weight = 0"),
                "journey \"buy\", weight: 0; a weight is 1 or more",
            ),
            (
                format!("[[step]]\nname = \"x\"\nurl = \"/\"\n{LOOPS}"),
                "[[step]] at the top and [[journey]] tables",
            ),
            (
                LOOPS.replace("loop = { count = 2 }", "loop = { count = 2, times = 3 }"),
                "unknown field `times`",
            ),
            (nest(5), "step 1.1.1.1.1 (no name)"),
        ] {
            let e = Journey::parse("loops.toml", &edit, users).unwrap_err();
            let want = says.replace(" (no name)", ": groups nest at most 4 deep");
            assert!(e.reason.contains(&want), "wanted {want:?} in: {}", e.reason);
        }
        assert!(Journey::parse("n.toml", &nest(4), users).is_ok());
    }

    #[test]
    fn think_times_are_drawn_within_their_bounds() {
        let mut d = Draw::new(7, (0, 1));
        let u = Think::Uniform(Duration::from_millis(50), Duration::from_millis(150));
        let e = Think::Exponential(Duration::from_millis(100));
        let (mut sum, n) = (Duration::ZERO, 4000);
        for _ in 0..n {
            let t = u.draw(&mut d);
            assert!(t >= Duration::from_millis(50) && t <= Duration::from_millis(150));
            sum += e.draw(&mut d);
        }
        let mean = sum.as_secs_f64() / n as f64;
        assert!((0.09..0.11).contains(&mean), "{mean}");
    }
}
