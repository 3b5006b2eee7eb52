//! Reading a journey file's steps into its places: each step's request (its
//! templates, captures, checks and think time), groups, loops and conditions, and
//! the JSON bodies written as TOML tables.

use super::*;

/// Reads steps into a journey's places, each request into the file's steps.
pub(super) struct Reader<'a> {
    pub(super) err: &'a dyn Fn(String) -> JourneyError,
    pub(super) steps: Vec<Step>,
    pub(super) figures: Vec<String>,
    /// The first of the journey being read's steps.
    pub(super) route_from: usize,
}

impl Reader<'_> {
    /// Reads `raw` (the steps of a journey, or of a group) into `ops`, declaring what
    /// they capture in `scope`; `place` is the journey's name in errors and the
    /// group's number the steps' numbers begin with.
    pub(super) fn steps_of(
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

pub(super) fn think(t: &RawThink) -> Result<Think, Invalid> {
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
