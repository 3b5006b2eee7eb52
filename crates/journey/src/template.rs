//! Templates: a request's URL, headers and body written as text with `{{ name }}`
//! placeholders, each a variable of the user (a feeder's column, a value an answer
//! handed out, one the journey sets) or a value drawn for each use (`{{ $uuid }}`,
//! `{{ $randomNumber(1, 100) }}`, …).
//!
//! A template is checked once, before the run, against the names the journey
//! declares ([`Scope`]): a name nothing sets is refused with the field that uses it.
//! Names become slots, so rendering looks nothing up by name; the text between
//! placeholders is kept as it is, so a template with no placeholder renders to its
//! text with one copy.

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::vars::{Value, Vars};
use crate::Invalid;

/// The most variables a journey declares.
pub const MAX_NAMES: usize = 1024;
/// The longest string `$randomString(n)` draws.
pub const MAX_RANDOM_STRING: usize = 4096;

/// A variable's place in a user's [`Vars`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Slot(pub u16);

/// The names a journey declares, each with its slot.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    names: Vec<String>,
}

impl Scope {
    /// The slot of `name`, declared now if it was not (at most [`MAX_NAMES`]).
    pub fn declare(&mut self, name: &str) -> Result<Slot, TemplateError> {
        if let Some(s) = self.slot(name) {
            return Ok(s);
        }
        check_name(name).map_err(|why| TemplateError::new(name, why))?;
        if self.names.len() >= MAX_NAMES {
            return Err(TemplateError::new(
                name,
                format!("more than {MAX_NAMES} variables"),
            ));
        }
        self.names.push(name.to_string());
        Ok(Slot(self.names.len() as u16 - 1))
    }

    /// The slot of `name`, if declared.
    pub fn slot(&self, name: &str) -> Option<Slot> {
        (self.names.iter())
            .position(|n| n == name)
            .map(|i| Slot(i as u16))
    }

    /// The name in `slot`.
    pub fn name(&self, slot: Slot) -> &str {
        &self.names[slot.0 as usize]
    }

    /// How many names are declared.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// A variable's name: a letter or `_`, then letters, digits, `_`, `-` or `.`.
fn check_name(name: &str) -> Result<(), Invalid> {
    let mut chars = name.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => {
            return Err(Invalid(format!(
                "{name:?} is not a name: begin with a letter or _"
            )))
        }
    }
    if let Some(c) = chars.find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))) {
        return Err(Invalid(format!(
            "{name:?} is not a name: {c:?} is not a letter, digit, _, - or ."
        )));
    }
    Ok(())
}

/// A template that cannot be used, with the field it is in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct TemplateError {
    /// Where the template is: a step and field (`login.body`), or a flag.
    pub field: String,
    pub reason: String,
}

impl TemplateError {
    fn new(field: impl fmt::Display, reason: impl fmt::Display) -> TemplateError {
        TemplateError {
            field: field.to_string(),
            reason: reason.to_string(),
        }
    }
}

/// A value drawn each time a template is rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Builtin {
    /// The run's next number in sequence (from 0, unique across the run's threads).
    Seq,
    /// A random (version 4) UUID.
    Uuid,
    /// A random integer from `lo` to `hi`, both included.
    RandomNumber { lo: i64, hi: i64 },
    /// A random string of letters and digits.
    RandomString(usize),
    /// The user's number in the run (from 0).
    User,
    /// The user's journey count (from 0): which pass of its journey this is.
    Iteration,
    /// Milliseconds since the Unix epoch.
    Timestamp,
    /// The time in RFC 3339, UTC, to the millisecond.
    IsoTime,
}

const BUILTINS: &str = "$seq, $uuid, $randomNumber(MIN, MAX), $randomString(LENGTH), $user, $iteration, $timestamp, $isoTime, $env.NAME";

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    /// Bytes `start..end` of the template's text.
    Text(u32, u32),
    Var(Slot),
    /// `{{ name | json }}`: the value as a JSON value — a number, `true`, `false` or
    /// `null` as it is, other text as a JSON string, a list as an array of strings.
    Json(Slot),
    Builtin(Builtin),
}

/// A checked template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    text: Box<[u8]>,
    parts: Vec<Part>,
}

impl Template {
    /// Reads `text`, whose variables must be declared in `scope`; `field` names where
    /// it is in errors. `{{` with no `}}` after it is an error; `\{{` is a literal
    /// `{{`. `$env.NAME` is read now, from this process's environment.
    pub fn parse(text: &str, scope: &Scope, field: &str) -> Result<Template, TemplateError> {
        let bytes = text.as_bytes();
        let mut literal = Vec::with_capacity(bytes.len());
        let mut parts = Vec::new();
        let mut start = 0usize;
        let mut i = 0usize;
        let flush = |literal: &Vec<u8>, start: &mut usize, parts: &mut Vec<Part>| {
            if literal.len() > *start {
                parts.push(Part::Text(*start as u32, literal.len() as u32));
            }
            *start = literal.len();
        };
        while i < bytes.len() {
            if bytes[i..].starts_with(b"\\{{") {
                literal.extend_from_slice(b"{{");
                i += 3;
                continue;
            }
            if !bytes[i..].starts_with(b"{{") {
                literal.push(bytes[i]);
                i += 1;
                continue;
            }
            let Some(len) = text[i + 2..].find("}}") else {
                return Err(TemplateError::new(
                    field,
                    format!("the {{{{ at byte {i} is not closed with }}}} (write \\{{{{ for a literal {{{{)"),
                ));
            };
            let inner = text[i + 2..i + 2 + len].trim();
            i += 2 + len + 2;
            match placeholder(inner, scope).map_err(|why| TemplateError::new(field, why))? {
                Placeholder::Part(p) => {
                    flush(&literal, &mut start, &mut parts);
                    parts.push(p);
                }
                Placeholder::Text(t) => literal.extend_from_slice(t.as_bytes()),
            }
        }
        flush(&literal, &mut start, &mut parts);
        Ok(Template {
            text: literal.into_boxed_slice(),
            parts,
        })
    }

    /// Whether the template renders the same every time (no placeholder).
    pub fn is_constant(&self) -> bool {
        self.parts.iter().all(|p| matches!(p, Part::Text(..)))
    }

    /// The text of a constant template (see [`Template::is_constant`]).
    pub fn constant(&self) -> Option<&[u8]> {
        self.is_constant().then_some(&self.text[..])
    }

    /// The variables the template reads.
    pub fn slots(&self) -> impl Iterator<Item = Slot> + '_ {
        self.parts.iter().filter_map(|p| match p {
            Part::Var(s) | Part::Json(s) => Some(*s),
            _ => None,
        })
    }

    /// Appends the template with `vars` and fresh draws to `out`. A variable with no
    /// value (an extraction that found nothing and had no default) or holding a list
    /// is an error naming it, and `out` is left as it was.
    pub fn render(
        &self,
        vars: &Vars,
        draw: &mut Draw,
        out: &mut Vec<u8>,
    ) -> Result<(), Unrendered> {
        let mark = out.len();
        for p in &self.parts {
            match p {
                Part::Text(a, b) => out.extend_from_slice(&self.text[*a as usize..*b as usize]),
                Part::Var(s) => match vars.get(*s) {
                    Some(Value::Text(t)) => out.extend_from_slice(t.as_bytes()),
                    Some(Value::List(_)) => {
                        out.truncate(mark);
                        return Err(Unrendered::List(*s));
                    }
                    None => {
                        out.truncate(mark);
                        return Err(Unrendered::Unset(*s));
                    }
                },
                Part::Json(s) => match vars.get(*s) {
                    Some(Value::Text(t)) => json_value(t, out),
                    Some(Value::List(l)) => {
                        out.push(b'[');
                        for (i, t) in l.iter().enumerate() {
                            if i > 0 {
                                out.push(b',');
                            }
                            json_string(t, out);
                        }
                        out.push(b']');
                    }
                    None => {
                        out.truncate(mark);
                        return Err(Unrendered::Unset(*s));
                    }
                },
                Part::Builtin(b) => draw.write(*b, out),
            }
        }
        Ok(())
    }

    /// [`Template::render`] into a string (templates are UTF-8, and so are values).
    pub fn render_string(&self, vars: &Vars, draw: &mut Draw) -> Result<String, Unrendered> {
        let mut out = Vec::new();
        self.render(vars, draw, &mut out)?;
        Ok(String::from_utf8(out).expect("a template and its values are UTF-8"))
    }
}

/// Why a template could not be rendered for a user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unrendered {
    /// The variable has no value yet.
    Unset(Slot),
    /// The variable holds a list (an extraction of every match): loop over it.
    List(Slot),
}

/// A text as a JSON value: as it is when it is a JSON number or literal, else quoted.
fn json_value(t: &str, out: &mut Vec<u8>) {
    let bare = matches!(t, "true" | "false" | "null")
        || serde_json::from_str::<serde_json::Number>(t).is_ok();
    if bare {
        out.extend_from_slice(t.as_bytes());
    } else {
        json_string(t, out);
    }
}

fn json_string(t: &str, out: &mut Vec<u8>) {
    let _ = serde_json::to_writer(&mut *out, t);
}

enum Placeholder {
    Part(Part),
    /// Read now: `$env.NAME`.
    Text(String),
}

fn placeholder(inner: &str, scope: &Scope) -> Result<Placeholder, Invalid> {
    if let Some((name, filter)) = inner.split_once('|') {
        let (name, filter) = (name.trim(), filter.trim());
        if filter != "json" {
            return Err(Invalid(format!(
                "{{{{ {inner} }}}}: no filter {filter:?}; the one filter is | json"
            )));
        }
        return match placeholder(name, scope)? {
            Placeholder::Part(Part::Var(s)) => Ok(Placeholder::Part(Part::Json(s))),
            _ => Err(Invalid(format!(
                "{{{{ {inner} }}}}: | json takes a variable"
            ))),
        };
    }
    let Some(b) = inner.strip_prefix('$') else {
        return match scope.slot(inner) {
            Some(s) => Ok(Placeholder::Part(Part::Var(s))),
            None if inner.is_empty() => Err("an empty {{ }}".into()),
            None => {
                check_name(inner)?;
                Err(Invalid(format!(
                    "{{{{ {inner} }}}}: no variable {inner:?} (declared: {}; built in: {BUILTINS})",
                    match scope.is_empty() {
                        true => "none".to_string(),
                        false => scope.names.join(", "),
                    }
                )))
            }
        };
    };
    if let Some(var) = b.strip_prefix("env.") {
        return std::env::var(var).map(Placeholder::Text).map_err(|_| {
            Invalid(format!(
                "{{{{ {inner} }}}}: ${var} is not set in the environment"
            ))
        });
    }
    let (name, args) = match b.split_once('(') {
        Some((n, rest)) => {
            let args = rest
                .strip_suffix(')')
                .ok_or_else(|| format!("{{{{ {inner} }}}}: no closing )"))?;
            (n.trim(), Some(args))
        }
        None => (b.trim(), None),
    };
    let nums = |want: usize| -> Result<Vec<i64>, Invalid> {
        let a = args.unwrap_or("").trim();
        let v: Vec<i64> = match a.is_empty() {
            true => Vec::new(),
            false => a
                .split(',')
                .map(|x| x.trim().parse::<i64>())
                .collect::<Result<_, _>>()
                .map_err(|_| format!("{{{{ {inner} }}}}: its arguments are whole numbers"))?,
        };
        if v.len() != want {
            return Err(Invalid(format!(
                "{{{{ {inner} }}}}: ${name} takes {want} argument{}",
                if want == 1 { "" } else { "s" }
            )));
        }
        Ok(v)
    };
    let builtin = match name {
        "seq" => Builtin::Seq,
        "uuid" => Builtin::Uuid,
        "user" => Builtin::User,
        "iteration" => Builtin::Iteration,
        "timestamp" => Builtin::Timestamp,
        "isoTime" => Builtin::IsoTime,
        "randomNumber" => {
            let v = nums(2)?;
            if v[0] > v[1] {
                return Err(Invalid(format!(
                    "{{{{ {inner} }}}}: the lower bound comes first"
                )));
            }
            Builtin::RandomNumber { lo: v[0], hi: v[1] }
        }
        "randomString" => {
            let n = match args.map(str::trim) {
                None | Some("") => 10,
                _ => nums(1)?[0],
            };
            if !(1..=MAX_RANDOM_STRING as i64).contains(&n) {
                return Err(Invalid(format!(
                    "{{{{ {inner} }}}}: a length from 1 to {MAX_RANDOM_STRING}"
                )));
            }
            Builtin::RandomString(n as usize)
        }
        _ => {
            return Err(Invalid(format!(
                "{{{{ {inner} }}}}: no built-in ${name}; they are {BUILTINS}"
            )))
        }
    };
    let takes_args = matches!(
        builtin,
        Builtin::RandomNumber { .. } | Builtin::RandomString(_)
    );
    if args.is_some() && !takes_args {
        return Err(Invalid(format!(
            "{{{{ {inner} }}}}: ${name} takes no arguments"
        )));
    }
    Ok(Placeholder::Part(Part::Builtin(builtin)))
}

/// What a user's renders draw from: its numbers, the run's sequence and a random
/// stream of its own (seeded, so a run repeats exactly).
#[derive(Debug, Clone)]
pub struct Draw {
    /// The user's number in the run.
    pub user: u64,
    /// The user's journey count.
    pub iteration: u64,
    /// The next `$seq` this thread hands out, and how far apart its numbers are (the
    /// threads' sequences interleave, so every number is handed out once) — unless
    /// the run's threads share one counter.
    seq: u64,
    stride: u64,
    shared_seq: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
    rng: u64,
    /// The time `$timestamp` and `$isoTime` write; `None`: the machine's, when drawn.
    pub now: Option<SystemTime>,
}

impl Draw {
    /// Draws for the thread `lane.0` of `lane.1`, from `seed`.
    pub fn new(seed: u64, lane: (u64, u64)) -> Draw {
        Draw {
            user: 0,
            iteration: 0,
            seq: lane.0,
            stride: lane.1.max(1),
            rng: splitmix(seed ^ lane.0.wrapping_mul(0x9e37_79b9_7f4a_7c15)),
            now: None,
            shared_seq: None,
        }
    }

    /// `$seq` from a counter every thread shares: 0, 1, 2, … over the run, in the
    /// order the renders take them.
    pub fn with_sequence(mut self, counter: std::sync::Arc<std::sync::atomic::AtomicU64>) -> Draw {
        self.shared_seq = Some(counter);
        self
    }

    /// The next random 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        splitmix(self.rng)
    }

    /// A random number below `n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    fn write(&mut self, b: Builtin, out: &mut Vec<u8>) {
        use std::io::Write;
        match b {
            Builtin::Seq => {
                let n = match &self.shared_seq {
                    Some(c) => c.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
                    None => {
                        self.seq += self.stride;
                        self.seq - self.stride
                    }
                };
                let _ = write!(out, "{n}");
            }
            Builtin::Uuid => {
                let (a, b) = (self.next_u64(), self.next_u64());
                let a = (a & !0xf000) | 0x4000; // version 4
                let b = (b & !(0b11 << 62)) | (0b10 << 62); // RFC 4122 variant
                let _ = write!(
                    out,
                    "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
                    a >> 32,
                    (a >> 16) & 0xffff,
                    a & 0xffff,
                    b >> 48,
                    b & 0xffff_ffff_ffff
                );
            }
            Builtin::RandomNumber { lo, hi } => {
                let span = (hi as i128 - lo as i128 + 1) as u128;
                let n = if span > u64::MAX as u128 {
                    self.next_u64() as i128
                } else {
                    self.below(span as u64) as i128
                };
                let _ = write!(out, "{}", lo as i128 + n);
            }
            Builtin::RandomString(n) => {
                const ALPHABET: &[u8] =
                    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
                for _ in 0..n {
                    out.push(ALPHABET[self.below(ALPHABET.len() as u64) as usize]);
                }
            }
            Builtin::User => {
                let _ = write!(out, "{}", self.user);
            }
            Builtin::Iteration => {
                let _ = write!(out, "{}", self.iteration);
            }
            Builtin::Timestamp => {
                let ms = self.since_epoch().as_millis();
                let _ = write!(out, "{ms}");
            }
            Builtin::IsoTime => {
                let ms = self.since_epoch().as_millis() as u64;
                out.extend_from_slice(stampede_wire::date::rfc3339_ms(ms).as_bytes());
            }
        }
    }

    fn since_epoch(&self) -> std::time::Duration {
        (self.now.unwrap_or_else(SystemTime::now))
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
    }
}

fn splitmix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(names: &[&str]) -> Scope {
        let mut s = Scope::default();
        for n in names {
            s.declare(n).unwrap();
        }
        s
    }

    #[test]
    fn placeholders_take_the_users_values_and_the_text_stays_as_written() {
        let sc = scope(&["token", "id"]);
        let t = Template::parse(
            r#"{"id": {{ id }}, "t": "{{token}}"} \{{x}}"#,
            &sc,
            "cart.body",
        )
        .unwrap();
        assert!(!t.is_constant());
        assert_eq!(t.slots().collect::<Vec<_>>(), [Slot(1), Slot(0)]);
        let mut v = Vars::new(sc.len());
        v.set(Slot(0), Value::Text("abc".into()));
        v.set(Slot(1), Value::Text("7".into()));
        let mut d = Draw::new(1, (0, 1));
        assert_eq!(
            t.render_string(&v, &mut d).unwrap(),
            r#"{"id": 7, "t": "abc"} {{x}}"#
        );
        let c = Template::parse("/items?page=1", &sc, "list.url").unwrap();
        assert_eq!(c.constant(), Some(&b"/items?page=1"[..]));
    }

    #[test]
    fn an_unknown_name_is_refused_with_the_field_and_what_is_declared() {
        let sc = scope(&["token"]);
        let e =
            Template::parse("Bearer {{ tokn }}", &sc, "login.headers.Authorization").unwrap_err();
        assert_eq!(e.field, "login.headers.Authorization");
        assert!(e.reason.contains("no variable \"tokn\""), "{}", e.reason);
        assert!(e.reason.contains("declared: token"), "{}", e.reason);
        for (bad, says) in [
            ("{{ token", "not closed"),
            ("{{ }}", "empty"),
            ("{{ 9x }}", "not a name"),
            ("{{ $nope }}", "no built-in $nope"),
            ("{{ $randomNumber(5, 1) }}", "lower bound"),
            ("{{ $randomNumber(1) }}", "takes 2 arguments"),
            ("{{ $randomString(0) }}", "a length from 1"),
            ("{{ $uuid(3) }}", "takes no arguments"),
            ("{{ $env.STAMPEDE_SURELY_UNSET_VAR }}", "is not set"),
        ] {
            let e = Template::parse(bad, &sc, "f").unwrap_err();
            assert!(e.reason.contains(says), "{bad}: {}", e.reason);
        }
    }

    #[test]
    fn an_unset_or_list_variable_fails_the_render_and_leaves_the_output_as_it_was() {
        let sc = scope(&["a", "b"]);
        let t = Template::parse("x{{a}}y{{b}}", &sc, "f").unwrap();
        let mut v = Vars::new(2);
        v.set(Slot(0), Value::Text("1".into()));
        let mut d = Draw::new(0, (0, 1));
        let mut out = b"kept".to_vec();
        assert_eq!(
            t.render(&v, &mut d, &mut out),
            Err(Unrendered::Unset(Slot(1)))
        );
        assert_eq!(out, b"kept");
        v.set(Slot(1), Value::List(vec!["p".into(), "q".into()]));
        assert_eq!(
            t.render(&v, &mut d, &mut out),
            Err(Unrendered::List(Slot(1)))
        );
        assert_eq!(out, b"kept");
    }

    #[test]
    fn draws_are_fresh_each_render_in_their_forms_and_repeat_with_the_seed() {
        let sc = Scope::default();
        let t = Template::parse(
            "{{$uuid}} {{ $randomNumber(-3, 3) }} {{$randomString(12)}} {{$seq}}",
            &sc,
            "f",
        )
        .unwrap();
        let v = Vars::new(0);
        let mut d = Draw::new(42, (1, 4));
        let a = t.render_string(&v, &mut d).unwrap();
        let b = t.render_string(&v, &mut d).unwrap();
        assert_ne!(a, b);
        let w: Vec<&str> = a.split(' ').collect();
        let u = w[0].as_bytes();
        assert_eq!(u.len(), 36);
        assert_eq!(
            (u[8], u[13], u[14], u[18], u[23]),
            (b'-', b'-', b'4', b'-', b'-')
        );
        assert!(matches!(u[19], b'8' | b'9' | b'a' | b'b'), "{}", w[0]);
        assert!((-3..=3).contains(&w[1].parse::<i64>().unwrap()));
        assert!(w[2].len() == 12 && w[2].bytes().all(|c| c.is_ascii_alphanumeric()));
        // Thread 1 of 4 hands out 1, 5, 9, …
        assert_eq!(w[3], "1");
        assert_eq!(b.rsplit(' ').next(), Some("5"));
        let mut again = Draw::new(42, (1, 4));
        assert_eq!(t.render_string(&v, &mut again).unwrap(), a);
        // Every number of a range comes up, and nothing outside it.
        let r = Template::parse("{{$randomNumber(1, 6)}}", &sc, "f").unwrap();
        let mut seen = [false; 7];
        for _ in 0..600 {
            seen[r
                .render_string(&v, &mut d)
                .unwrap()
                .parse::<usize>()
                .unwrap()] = true;
        }
        assert_eq!(seen, [false, true, true, true, true, true, true]);
    }

    #[test]
    fn times_and_numbers_are_written_as_users_expect() {
        let sc = Scope::default();
        let t = Template::parse(
            "{{$timestamp}} {{$isoTime}} {{$user}}/{{$iteration}}",
            &sc,
            "f",
        )
        .unwrap();
        let mut d = Draw::new(0, (0, 1));
        d.now = Some(UNIX_EPOCH + std::time::Duration::from_millis(1_795_426_200_123));
        d.user = 17;
        d.iteration = 3;
        assert_eq!(
            t.render_string(&Vars::new(0), &mut d).unwrap(),
            "1795426200123 2026-11-23T09:30:00.123Z 17/3"
        );
    }

    #[test]
    fn the_environment_is_read_once_when_the_template_is() {
        std::env::set_var("STAMPEDE_TEMPLATE_TEST_HOST", "api.test");
        let t = Template::parse(
            "https://{{ $env.STAMPEDE_TEMPLATE_TEST_HOST }}/",
            &Scope::default(),
            "f",
        )
        .unwrap();
        assert_eq!(t.constant(), Some(&b"https://api.test/"[..]));
    }
}
