//! Checks: what an answer must be for its step to pass, counted during the load by
//! step and check — a status, a body that contains (or lacks) a text, a JSON value, a
//! header, a response time. Written as one line each:
//!
//! ```text
//! status 200            status 200,201        status 2xx        status 200-204
//! body contains "ok"    body !contains error
//! json $.ok == true     json $.items[0].id != 0     json $.token exists
//! header Content-Type contains json     header Location     header X-A == b
//! time < 250ms
//! ```
//!
//! A check's name is its line unless one is given.

use std::time::Duration;

use crate::path::{text_of, JsonPath};
use crate::reply::Reply;
use crate::Invalid;

/// One check.
#[derive(Debug, Clone)]
pub struct Check {
    /// How it is named in the figures.
    pub name: String,
    test: Test,
}

#[derive(Debug, Clone)]
enum Test {
    Status(Vec<(u16, u16)>),
    Contains {
        text: Vec<u8>,
        not: bool,
    },
    Json {
        path: JsonPath,
        op: Op,
    },
    Header {
        name: String,
        op: Option<(HeaderOp, String)>,
    },
    Within(Duration),
}

#[derive(Debug, Clone)]
enum Op {
    Eq(serde_json::Value),
    Ne(serde_json::Value),
    Exists,
}

#[derive(Debug, Clone, Copy)]
enum HeaderOp {
    Eq,
    Contains,
}

const FORMS: &str = "status 200 | status 2xx | status 200,201 | status 200-299 | body contains TEXT | body !contains TEXT | json PATH == VALUE | json PATH != VALUE | json PATH exists | header NAME | header NAME == VALUE | header NAME contains TEXT | time < DURATION";

impl Check {
    /// Reads a check's line; what is wrong names the forms.
    pub fn parse(line: &str) -> Result<Check, Invalid> {
        let line = line.trim();
        let bad = |why: &str| Invalid(format!("check {line:?}: {why}; the forms are {FORMS}"));
        let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let rest = rest.trim();
        let test = match word {
            "status" => {
                let mut ranges = Vec::new();
                for part in rest.split(',').map(str::trim) {
                    let r = if let Some(c) = part.strip_suffix("xx") {
                        let c: u16 = c
                            .parse()
                            .ok()
                            .filter(|c| (1..=5).contains(c))
                            .ok_or_else(|| bad("a class is 1xx to 5xx"))?;
                        (c * 100, c * 100 + 99)
                    } else if let Some((a, b)) = part.split_once('-') {
                        let a = status(a).ok_or_else(|| bad("a status is 100 to 599"))?;
                        let b = status(b).ok_or_else(|| bad("a status is 100 to 599"))?;
                        if a > b {
                            return Err(bad("a range goes from the lower status up"));
                        }
                        (a, b)
                    } else {
                        let s = status(part).ok_or_else(|| bad("a status is 100 to 599"))?;
                        (s, s)
                    };
                    ranges.push(r);
                }
                Test::Status(ranges)
            }
            "body" => {
                let (op, text) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
                let not = match op {
                    "contains" => false,
                    "!contains" => true,
                    _ => return Err(bad("body contains TEXT or body !contains TEXT")),
                };
                let text = unquote(text.trim());
                if text.is_empty() {
                    return Err(bad("the text to look for is missing"));
                }
                Test::Contains {
                    text: text.as_bytes().to_vec(),
                    not,
                }
            }
            "json" => {
                let (path, tail) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
                let path = JsonPath::parse(path).map_err(|e| bad(&e.0))?;
                let tail = tail.trim();
                let op = if tail == "exists" {
                    Op::Exists
                } else if let Some(v) = tail.strip_prefix("==") {
                    Op::Eq(literal(v.trim()))
                } else if let Some(v) = tail.strip_prefix("!=") {
                    Op::Ne(literal(v.trim()))
                } else {
                    return Err(bad("after the path: == VALUE, != VALUE or exists"));
                };
                Test::Json { path, op }
            }
            "header" => {
                let (name, tail) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
                if name.is_empty() {
                    return Err(bad("the header's name is missing"));
                }
                let tail = tail.trim();
                let op = if tail.is_empty() {
                    None
                } else if let Some(v) = tail.strip_prefix("==") {
                    Some((HeaderOp::Eq, unquote(v.trim()).to_string()))
                } else if let Some(v) = tail.strip_prefix("contains") {
                    Some((HeaderOp::Contains, unquote(v.trim()).to_string()))
                } else {
                    return Err(bad("after the name: nothing, == VALUE or contains TEXT"));
                };
                Test::Header {
                    name: name.to_string(),
                    op,
                }
            }
            "time" => {
                let d = rest
                    .strip_prefix('<')
                    .ok_or_else(|| bad("time < DURATION"))?
                    .trim();
                let d = duration(d).ok_or_else(|| bad("a duration such as 250ms or 2s"))?;
                Test::Within(d)
            }
            _ => return Err(bad("it begins with status, body, json, header or time")),
        };
        Ok(Check {
            name: line.to_string(),
            test,
        })
    }

    /// Whether `reply` passes. A JSON check on a body that is not JSON (or too
    /// large to read as JSON) fails.
    pub fn passes(&self, reply: &Reply<'_>) -> bool {
        match &self.test {
            Test::Status(ranges) => ranges
                .iter()
                .any(|(a, b)| (*a..=*b).contains(&reply.status)),
            Test::Contains { text, not } => {
                let found = reply.body.windows(text.len()).any(|w| w == &text[..]);
                found != *not
            }
            Test::Json { path, op } => {
                let Ok(doc) = reply.json() else {
                    return false;
                };
                let found = path.find(doc);
                match op {
                    Op::Exists => !found.is_empty(),
                    Op::Eq(v) => found.first().is_some_and(|f| same(f, v)),
                    Op::Ne(v) => found.first().is_some_and(|f| !same(f, v)),
                }
            }
            Test::Header { name, op } => match op {
                None => reply.header(name).next().is_some(),
                Some((HeaderOp::Eq, v)) => reply.header(name).any(|h| h.trim() == v),
                Some((HeaderOp::Contains, v)) => reply.header(name).any(|h| h.contains(v.as_str())),
            },
            Test::Within(d) => reply.elapsed < *d,
        }
    }
}

fn status(s: &str) -> Option<u16> {
    s.trim().parse().ok().filter(|s| (100..=599).contains(s))
}

fn unquote(s: &str) -> &str {
    s.strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(s)
}

/// A JSON literal, or a bare word as a string.
fn literal(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap_or_else(|_| serde_json::Value::String(s.to_string()))
}

/// Equal as JSON, or a string equal to the other's text (`== 7` passes for `"7"`).
fn same(found: &serde_json::Value, want: &serde_json::Value) -> bool {
    found == want || text_of(found) == text_of(want)
}

/// A duration as flags and plans write it, longer than zero.
fn duration(s: &str) -> Option<Duration> {
    stampede_engine::parse_duration(s)
        .ok()
        .filter(|d| !d.is_zero())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_form_passes_and_fails_as_written() {
        let h = [
            ("Content-Type", "application/json; charset=utf-8"),
            ("X-A", "b"),
        ];
        let body = br#"{"ok": true, "id": "7", "items": [{"id": 1}]}"#;
        let r = Reply::new(201, &h, body, Duration::from_millis(120));
        for (line, want) in [
            ("status 201", true),
            ("status 200", false),
            ("status 2xx", true),
            ("status 200,201", true),
            ("status 202-299", false),
            ("body contains \"ok\"", true),
            ("body !contains error", true),
            ("body contains nothing-here", false),
            ("json $.ok == true", true),
            ("json $.id == 7", true),
            ("json $.items[0].id != 1", false),
            ("json $.items exists", true),
            ("json $.gone exists", false),
            ("header content-type contains json", true),
            ("header X-A == b", true),
            ("header Location", false),
            ("time < 200ms", true),
            ("time < 0.1s", false),
        ] {
            let c = Check::parse(line).unwrap();
            assert_eq!(c.passes(&r), want, "{line}");
            assert_eq!(c.name, line);
        }
        let html = Reply::new(200, &[], b"<p>", Duration::ZERO);
        assert!(!Check::parse("json $.ok exists").unwrap().passes(&html));
    }

    #[test]
    fn a_bad_check_names_what_is_wrong_and_the_forms() {
        for (line, says) in [
            ("status 700", "100 to 599"),
            ("status 9xx", "1xx to 5xx"),
            ("status 300-200", "lower status up"),
            ("body has x", "body contains TEXT"),
            ("body contains", "missing"),
            ("json $.a", "== VALUE"),
            ("json $.a[ exists", "no closing ]"),
            ("header", "name is missing"),
            ("time 5s", "time < DURATION"),
            ("time < soon", "a duration"),
            ("latency < 5ms", "begins with status"),
        ] {
            let e = Check::parse(line).unwrap_err();
            assert!(e.0.contains(says), "{line}: {e}");
            assert!(e.0.contains("the forms are"), "{line}: {e}");
        }
    }
}
