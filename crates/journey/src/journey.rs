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
use crate::extract::Extraction;
use crate::feeder::{Feeder, FeederError, Order};
use crate::template::{Draw, Scope, Slot, Template, TemplateError};
use crate::Invalid;

/// The largest journey file read.
pub const MAX_FILE: usize = 1024 * 1024;
/// The most steps a journey has.
pub const MAX_STEPS: usize = 100;

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

/// One step.
#[derive(Debug, Clone)]
pub struct Step {
    pub name: String,
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

/// A checked journey.
#[derive(Debug, Clone)]
pub struct Journey {
    pub scope: Scope,
    pub feed: Option<Feed>,
    pub constants: Vec<(Slot, String)>,
    pub steps: Vec<Step>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawJourney {
    think: Option<RawThink>,
    feeder: Option<RawFeeder>,
    #[serde(default)]
    variables: BTreeMap<String, String>,
    #[serde(default)]
    step: Vec<RawStep>,
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
struct RawStep {
    name: String,
    method: Option<String>,
    url: String,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    body: Option<String>,
    json: Option<toml::Value>,
    #[serde(default)]
    capture: Vec<RawCapture>,
    #[serde(default)]
    check: Vec<String>,
    think: Option<RawThink>,
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
            scope,
            feed,
            constants: Vec::new(),
            steps: vec![Step {
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
        let meta = std::fs::metadata(path).map_err(|e| err(format!("cannot be read: {e}")))?;
        if meta.len() > MAX_FILE as u64 {
            return Err(err(format!(
                "{} bytes; a journey is at most {MAX_FILE}",
                meta.len()
            )));
        }
        let text =
            std::fs::read_to_string(path).map_err(|e| err(format!("cannot be read: {e}")))?;
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
        if raw.step.is_empty() {
            return Err(err("no [[step]]: a journey takes at least one step".into()));
        }
        if raw.step.len() > MAX_STEPS {
            return Err(err(format!(
                "{} steps; a journey takes at most {MAX_STEPS}",
                raw.step.len()
            )));
        }
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
            constants.push((slot, value.clone()));
        }
        let mut steps = Vec::new();
        let mut names: Vec<&str> = Vec::new();
        for (i, s) in raw.step.iter().enumerate() {
            let at = format!("step {} ({:?})", i + 1, s.name);
            if s.name.trim().is_empty() {
                return Err(err(format!(
                    "step {}: a name is needed (it names the step's figures)",
                    i + 1
                )));
            }
            if names.contains(&s.name.as_str()) {
                return Err(err(format!("{at}: another step has this name")));
            }
            names.push(&s.name);
            let t = |text: &str, field: &str| {
                Template::parse(text, &scope, &format!("{at}, {field}"))
                    .map_err(|e| err(e.to_string()))
            };
            let method = s.method.as_deref().unwrap_or("GET").to_ascii_uppercase();
            if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic()) {
                return Err(err(format!("{at}, method: {method:?} is not a method")));
            }
            let url = t(&s.url, "url")?;
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
                            Template::parse("application/json", &scope, "").expect("constant"),
                        ));
                    }
                    let text =
                        serde_json::to_string(j).map_err(|e| err(format!("{at}, json: {e}")))?;
                    Some(t(&text, "json")?)
                }
                (None, None) => None,
            };
            let checks = (s.check.iter())
                .map(|c| Check::parse(c).map_err(|e| err(format!("{at}, check: {e}"))))
                .collect::<Result<Vec<_>, _>>()?;
            let think = match &s.think {
                Some(x) => think(x).map_err(|e| err(format!("{at}, think: {e}")))?,
                None => default_think,
            };
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
                let mut x = Extraction::new(&c.var, kind, expr, &mut scope, &field)
                    .map_err(|e| err(e.to_string()))?;
                x.default = c.default.clone();
                captures.push(x);
            }
            steps.push(Step {
                name: s.name.clone(),
                method,
                url,
                headers,
                body,
                captures,
                checks,
                think,
            });
        }
        Ok(Journey {
            scope,
            feed,
            constants,
            steps,
        })
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
        assert_eq!(j.constants.len(), 1);
        // Feeder columns, variables, then captures in order.
        let names: Vec<&str> = (0..j.scope.len())
            .map(|i| j.scope.name(Slot(i as u16)))
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
                "step 2 (\"login\"): another step has this name",
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
