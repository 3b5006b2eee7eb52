//! Extractions: a value taken from an answer into one of the user's variables, for
//! the requests after it to send back — a JSON value by path, a regular expression's
//! group, a header, a cookie the answer sets. The first match, or every match as a
//! list (for a loop over them); when nothing matches, a default, or a failure the
//! step is counted by.

use regex::bytes::{Regex, RegexBuilder};

use crate::path::{text_of, JsonPath};
use crate::reply::{JsonTrouble, Reply};
use crate::template::{Scope, Slot, TemplateError};
use crate::vars::{Value, Vars, MAX_VALUE};

/// The largest compiled regular expression, in bytes.
pub const MAX_REGEX: usize = 1 << 20;

/// Where an extraction looks.
#[derive(Debug, Clone)]
pub enum Source {
    /// The body as JSON, by path.
    Json(JsonPath),
    /// The body as text: the expression's group (0: the whole match).
    Regex {
        re: Regex,
        group: usize,
        /// The same pattern's shortcut, when it has the shape (see [`crate::around`]).
        fast: Option<Box<crate::around::Around>>,
    },
    /// A header's value.
    Header(String),
    /// The value of a cookie the answer sets (`Set-Cookie`).
    Cookie(String),
}

/// One extraction, checked against the journey's names.
#[derive(Debug, Clone)]
pub struct Extraction {
    /// The variable it sets.
    pub var: String,
    slot: Slot,
    pub source: Source,
    /// Every match, as a list; otherwise the first.
    pub all: bool,
    /// Taken when nothing matches, instead of failing.
    pub default: Option<String>,
}

/// Why an extraction failed its step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missed {
    /// Nothing matched and there is no default.
    NoMatch,
    /// The body is not JSON.
    NotJson,
    /// The body is too large to search as JSON.
    TooLarge,
    /// The value is longer than a variable holds.
    TooLong,
}

impl Missed {
    /// How it is named in the figures.
    pub fn as_str(self) -> &'static str {
        match self {
            Missed::NoMatch => "no match",
            Missed::NotJson => "not JSON",
            Missed::TooLarge => "body too large for JSON",
            Missed::TooLong => "value too long",
        }
    }
}

impl Extraction {
    /// An extraction into `var` (declared in `scope` now) of `kind` (`json`,
    /// `regexp` or `regex`, `header`, `cookie`) with `expr`; `field` names it in
    /// errors. A regular expression's group is its first when it has one, else the
    /// whole match.
    pub fn new(
        var: &str,
        kind: &str,
        expr: &str,
        scope: &mut Scope,
        field: &str,
    ) -> Result<Extraction, TemplateError> {
        let err = |reason: String| TemplateError {
            field: field.to_string(),
            reason,
        };
        let source = match kind {
            "json" => Source::Json(JsonPath::parse(expr).map_err(|e| err(e.0))?),
            "regexp" | "regex" => {
                let re = RegexBuilder::new(expr)
                    .size_limit(MAX_REGEX)
                    .build()
                    .map_err(|e| err(format!("regular expression {expr:?}: {e}")))?;
                let group = usize::from(re.captures_len() > 1);
                let fast = crate::around::Around::of(expr).map(Box::new);
                Source::Regex { re, group, fast }
            }
            "header" => Source::Header(expr.trim().to_string()),
            "cookie" => Source::Cookie(expr.trim().to_string()),
            _ => {
                return Err(err(format!(
                    "{kind:?} is not a place to extract from; use json, regexp, header or cookie"
                )))
            }
        };
        Ok(Extraction {
            var: var.to_string(),
            slot: scope.declare(var)?,
            source,
            all: false,
            default: None,
        })
    }

    /// The slot it sets.
    pub fn slot(&self) -> Slot {
        self.slot
    }

    /// Takes the value from `reply` into `vars`; a miss leaves `vars` as they were
    /// unless a default is set.
    pub fn apply(&self, reply: &Reply<'_>, vars: &mut Vars) -> Result<(), Missed> {
        let found = match self.found(reply) {
            Ok(f) => f,
            Err(Missed::NoMatch) => Vec::new(),
            Err(m) => return Err(m),
        };
        let value = match (found.is_empty(), &self.default) {
            (true, Some(d)) => Value::Text(d.clone()),
            (true, None) => return Err(Missed::NoMatch),
            (false, _) if self.all => Value::List(found),
            (false, _) => Value::Text(found.into_iter().next().expect("not empty")),
        };
        if value.len() > MAX_VALUE {
            return Err(Missed::TooLong);
        }
        vars.set(self.slot, value);
        Ok(())
    }

    fn found(&self, reply: &Reply<'_>) -> Result<Vec<String>, Missed> {
        let limit = if self.all { usize::MAX } else { 1 };
        Ok(match &self.source {
            Source::Json(p) => {
                let doc = reply.json().map_err(|e| match e {
                    JsonTrouble::TooLarge => Missed::TooLarge,
                    JsonTrouble::NotJson => Missed::NotJson,
                })?;
                p.find(doc).into_iter().take(limit).map(text_of).collect()
            }
            Source::Regex {
                fast: Some(fast), ..
            } => {
                let mut out = Vec::new();
                let mut at = 0;
                while let Some((end, g)) = fast.find(reply.body, at) {
                    out.push(String::from_utf8_lossy(g).into_owned());
                    if !self.all {
                        break;
                    }
                    at = end;
                }
                out
            }
            // On the body's bytes as they came: no copy of it as text.
            Source::Regex { re, group, .. } if !self.all => {
                let mut at = re.capture_locations();
                (re.captures_read(&mut at, reply.body))
                    .and(at.get(*group))
                    .map(|(a, b)| String::from_utf8_lossy(&reply.body[a..b]).into_owned())
                    .into_iter()
                    .collect()
            }
            Source::Regex { re, group, .. } => (re.captures_iter(reply.body))
                .filter_map(|c| {
                    let m = c.get(*group)?;
                    Some(String::from_utf8_lossy(m.as_bytes()).into_owned())
                })
                .collect(),
            Source::Header(name) => reply.header(name).take(limit).map(str::to_string).collect(),
            Source::Cookie(name) => (reply.header("set-cookie"))
                .filter_map(|sc| {
                    let pair = sc.split(';').next()?;
                    let (n, v) = pair.split_once('=')?;
                    (n.trim() == name).then(|| v.trim().trim_matches('"').to_string())
                })
                .take(limit)
                .collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn reply<'a>(h: &'a [(&'a str, &'a str)], body: &'a [u8]) -> Reply<'a> {
        Reply::new(200, h, body, Duration::ZERO)
    }

    #[test]
    fn each_source_takes_the_first_match_or_all_of_them() {
        let mut scope = Scope::default();
        let h = [
            ("Location", "/cart/9"),
            ("Set-Cookie", "sid=abc; Path=/; HttpOnly"),
            ("Set-Cookie", "theme=\"dark\""),
        ];
        let body = br#"{"token": "t-1", "items": [{"id": 4}, {"id": 5}]}"#;
        let r = reply(&h, body);
        let mut v = Vars::default();
        for (var, kind, expr, want) in [
            ("token", "json", "$.token", "t-1"),
            ("first", "json", "$.items[*].id", "4"),
            ("tok2", "regexp", r#""token": "([^"]+)""#, "t-1"),
            ("whole", "regex", r"t-\d", "t-1"),
            ("where", "header", "location", "/cart/9"),
            ("sid", "cookie", "sid", "abc"),
            ("theme", "cookie", "theme", "dark"),
        ] {
            let x = Extraction::new(var, kind, expr, &mut scope, "step").unwrap();
            x.apply(&r, &mut v).unwrap();
            assert_eq!(v.get(x.slot()), Some(&Value::Text(want.into())), "{var}");
        }
        let mut ids = Extraction::new("ids", "json", "$.items[*].id", &mut scope, "s").unwrap();
        ids.all = true;
        ids.apply(&r, &mut v).unwrap();
        assert_eq!(
            v.get(ids.slot()),
            Some(&Value::List(vec!["4".into(), "5".into()]))
        );
    }

    #[test]
    fn a_miss_fails_or_takes_the_default_and_bad_bodies_are_named() {
        let mut scope = Scope::default();
        let mut x = Extraction::new("t", "json", "$.token", &mut scope, "login").unwrap();
        let mut v = Vars::default();
        assert_eq!(x.apply(&reply(&[], b"{}"), &mut v), Err(Missed::NoMatch));
        assert_eq!(v.get(x.slot()), None);
        assert_eq!(
            x.apply(&reply(&[], b"<html>"), &mut v),
            Err(Missed::NotJson)
        );
        x.default = Some("none".into());
        x.apply(&reply(&[], b"{}"), &mut v).unwrap();
        assert_eq!(v.get(x.slot()), Some(&Value::Text("none".into())));
        let big = format!("{{\"token\": \"{}\"}}", "x".repeat(MAX_VALUE + 1));
        assert_eq!(
            x.apply(&reply(&[], big.as_bytes()), &mut v),
            Err(Missed::TooLong)
        );
        for (kind, expr, says) in [
            ("xpath", "//a", "not a place to extract from"),
            ("regexp", "(", "regular expression"),
            ("json", "$.a[", "no closing ]"),
        ] {
            let e = Extraction::new("v", kind, expr, &mut scope, "cart.capture").unwrap_err();
            assert_eq!(e.field, "cart.capture");
            assert!(e.reason.contains(says), "{kind}: {}", e.reason);
        }
    }
}
