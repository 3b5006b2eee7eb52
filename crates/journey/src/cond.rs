//! Conditions on a user's variables: whether a step (or a group of steps) is taken
//! or skipped. One line each, over a variable the journey declares before it:
//!
//! ```text
//! token exists      token !exists
//! role == admin     role != "guest user"
//! count > 0         price <= 9.99         ids >= 2
//! ```
//!
//! A variable with no value does not exist, equals nothing and compares with no
//! number (`!=` holds for it). A list (a capture of every match) counts as its length:
//! `ids > 0` holds when it took at least one.

use crate::template::{Scope, Slot, TemplateError};
use crate::vars::{Value, Vars};

/// A condition on one variable.
#[derive(Debug, Clone, PartialEq)]
pub struct Cond {
    /// Its line, as written.
    pub line: String,
    slot: Slot,
    test: Test,
}

#[derive(Debug, Clone, PartialEq)]
enum Test {
    Exists(bool),
    Eq(String),
    Ne(String),
    /// A comparison with a number: which way, and the number.
    Cmp(Ord, f64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ord {
    Lt,
    Le,
    Gt,
    Ge,
}

const FORMS: &str = "NAME exists | NAME !exists | NAME == VALUE | NAME != VALUE | NAME < N | NAME <= N | NAME > N | NAME >= N";

impl Cond {
    /// Reads a condition's line over the names in `scope`; `field` names it in
    /// errors.
    pub fn parse(line: &str, scope: &Scope, field: &str) -> Result<Cond, TemplateError> {
        let err = |why: String| TemplateError {
            field: field.to_string(),
            reason: format!("{line:?}: {why}; the forms are {FORMS}"),
        };
        let text = line.trim();
        let (name, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
        let slot = scope.slot(name).ok_or_else(|| {
            let declared: Vec<&str> = (0..scope.len())
                .map(|i| scope.name(Slot(i as u16)))
                .collect();
            err(format!(
                "no variable {name:?} before it (declared: {})",
                if declared.is_empty() {
                    "none".to_string()
                } else {
                    declared.join(", ")
                }
            ))
        })?;
        let rest = rest.trim();
        let test = if rest == "exists" {
            Test::Exists(true)
        } else if rest == "!exists" {
            Test::Exists(false)
        } else if let Some(v) = rest.strip_prefix("==") {
            Test::Eq(unquote(v.trim()).to_string())
        } else if let Some(v) = rest.strip_prefix("!=") {
            Test::Ne(unquote(v.trim()).to_string())
        } else {
            let (ord, n) = if let Some(n) = rest.strip_prefix("<=") {
                (Ord::Le, n)
            } else if let Some(n) = rest.strip_prefix(">=") {
                (Ord::Ge, n)
            } else if let Some(n) = rest.strip_prefix('<') {
                (Ord::Lt, n)
            } else if let Some(n) = rest.strip_prefix('>') {
                (Ord::Gt, n)
            } else {
                return Err(err("no test after the name".into()));
            };
            let n: f64 = (n.trim().parse().ok())
                .filter(|n: &f64| n.is_finite())
                .ok_or_else(|| err(format!("{:?} is not a number", n.trim())))?;
            Test::Cmp(ord, n)
        };
        Ok(Cond {
            line: text.to_string(),
            slot,
            test,
        })
    }

    /// Whether it holds for `vars`.
    pub fn holds(&self, vars: &Vars) -> bool {
        let v = vars.get(self.slot);
        match &self.test {
            Test::Exists(want) => {
                let there = match v {
                    None => false,
                    Some(Value::List(l)) => !l.is_empty(),
                    Some(Value::Text(_)) => true,
                };
                there == *want
            }
            Test::Eq(x) => text(v).is_some_and(|t| t == *x),
            Test::Ne(x) => text(v).is_none_or(|t| t != *x),
            Test::Cmp(ord, n) => {
                let Some(have) = number(v) else {
                    return false;
                };
                match ord {
                    Ord::Lt => have < *n,
                    Ord::Le => have <= *n,
                    Ord::Gt => have > *n,
                    Ord::Ge => have >= *n,
                }
            }
        }
    }
}

/// The value as text: a list as its length.
fn text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::Text(t) => Some(t.clone()),
        Value::List(l) => Some(l.len().to_string()),
    }
}

fn number(v: Option<&Value>) -> Option<f64> {
    match v? {
        Value::Text(t) => t.trim().parse().ok().filter(|n: &f64| n.is_finite()),
        Value::List(l) => Some(l.len() as f64),
    }
}

fn unquote(s: &str) -> &str {
    s.strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope() -> Scope {
        let mut s = Scope::default();
        for n in ["token", "role", "count", "ids"] {
            s.declare(n).unwrap();
        }
        s
    }

    #[test]
    fn conditions_hold_on_text_numbers_lists_and_absence() {
        let s = scope();
        let mut v = Vars::new(s.len());
        let c = |line: &str| Cond::parse(line, &s, "if").unwrap();
        assert!(!c("token exists").holds(&v) && c("token !exists").holds(&v));
        assert!(c("role != admin").holds(&v) && !c("role == admin").holds(&v));
        assert!(!c("count > 0").holds(&v) && !c("count <= 0").holds(&v));
        v.set(s.slot("token").unwrap(), Value::Text(String::new()));
        v.set(s.slot("role").unwrap(), Value::Text("guest user".into()));
        v.set(s.slot("count").unwrap(), Value::Text(" 3 ".into()));
        assert!(c("token exists").holds(&v));
        assert!(c("role == \"guest user\"").holds(&v) && !c("role != \"guest user\"").holds(&v));
        assert!(c("count > 2.5").holds(&v) && c("count >= 3").holds(&v));
        assert!(!c("count < 3").holds(&v) && c("count <= 3").holds(&v));
        v.set(s.slot("count").unwrap(), Value::Text("three".into()));
        assert!(!c("count > 0").holds(&v) && !c("count < 0").holds(&v));
        v.set(s.slot("ids").unwrap(), Value::List(vec![]));
        assert!(!c("ids exists").holds(&v) && c("ids == 0").holds(&v));
        v.set(
            s.slot("ids").unwrap(),
            Value::List(vec!["a".into(), "b".into()]),
        );
        assert!(c("ids exists").holds(&v) && c("ids >= 2").holds(&v) && !c("ids > 2").holds(&v));
    }

    #[test]
    fn a_condition_that_does_not_read_is_refused_with_its_field_and_the_forms() {
        let s = scope();
        for (line, says) in [
            (
                "tokn exists",
                "no variable \"tokn\" before it (declared: token, role",
            ),
            ("token", "no test after the name"),
            ("count > many", "\"many\" is not a number"),
            ("count > inf", "\"inf\" is not a number"),
            ("role ~= x", "no test after the name"),
        ] {
            let e = Cond::parse(line, &s, "step 2 (\"cart\"), if").unwrap_err();
            assert_eq!(e.field, "step 2 (\"cart\"), if");
            assert!(e.reason.contains(says), "{line}: {}", e.reason);
            assert!(e.reason.contains("NAME exists"), "{}", e.reason);
        }
    }
}
