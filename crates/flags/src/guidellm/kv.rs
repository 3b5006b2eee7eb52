//! GuideLLM's argument strings: `kind=concurrent,streams=4` — comma-separated
//! `key=value` pairs whose keys may nest (`slo.ttft_ms=200`) and index lists
//! (`streams[1]=8`), whose values are typed as YAML types them (numbers, `true`,
//! `null`, a flow list `[1,2]` when it holds no comma) — or one JSON object. Read
//! into a JSON object, then taken field by field by [`Fields`], which names the flag
//! and the field in every refusal and refuses the fields it was not asked for.

use serde_json::{Map, Value};

use crate::FlagError;

/// The most bytes of one argument string read.
const MAX_ARG: usize = 64 * 1024;

/// The most entries a list index may reach (`streams[63]`).
const MAX_INDEX: usize = 64;

/// `s` given to `flag`, as a JSON object.
pub fn parse(flag: &str, s: &str) -> Result<Map<String, Value>, FlagError> {
    let bad = |why: String| FlagError::usage(format!("{flag} {s}: {why}"));
    if s.len() > MAX_ARG {
        return Err(bad(format!("longer than {MAX_ARG} bytes")));
    }
    if s.trim_start().starts_with('{') {
        return match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(m)) => Ok(m),
            Ok(_) => Err(bad("not a JSON object".into())),
            Err(e) => Err(bad(format!("not JSON ({e})"))),
        };
    }
    let mut out = Map::new();
    for (i, pair) in split(s).into_iter().map(str::trim).enumerate() {
        if pair.is_empty() {
            continue;
        }
        let Some((k, v)) = pair.split_once('=') else {
            return Err(bad(format!(
                "item {} ({pair}) is not key=value; write kind=…,key=value,… or a JSON object",
                i + 1
            )));
        };
        let path = key_path(k.trim()).map_err(&bad)?;
        set(&mut out, &path, scalar(v.trim())).map_err(&bad)?;
    }
    Ok(out)
}

/// `s` cut at its commas, except those inside brackets, braces or quotes (a list
/// written whole, `streams=[1,2,4]`, is one item).
fn split(s: &str) -> Vec<&str> {
    let (mut out, mut depth, mut quoted, mut from) = (Vec::new(), 0i32, false, 0);
    for (i, c) in s.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '[' | '{' if !quoted => depth += 1,
            ']' | '}' if !quoted => depth -= 1,
            ',' if !quoted && depth <= 0 => {
                out.push(&s[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[from..]);
    out
}

/// One step of a key: a field, or a list's index.
enum Seg {
    Field(String),
    Index(usize),
}

fn key_path(k: &str) -> Result<Vec<Seg>, String> {
    if k.is_empty() {
        return Err("an empty key".into());
    }
    let mut out = Vec::new();
    for part in k.split('.') {
        let (name, mut rest) = part.split_at(part.find('[').unwrap_or(part.len()));
        if name.is_empty() {
            return Err(format!("key {k}: an empty field"));
        }
        out.push(Seg::Field(name.to_string()));
        while let Some(r) = rest.strip_prefix('[') {
            let (n, after) = r
                .split_once(']')
                .ok_or_else(|| format!("key {k}: an unclosed ["))?;
            let n: usize = n
                .parse()
                .map_err(|_| format!("key {k}: [{n}] is not an index"))?;
            if n >= MAX_INDEX {
                return Err(format!("key {k}: index {n} past {}", MAX_INDEX - 1));
            }
            out.push(Seg::Index(n));
            rest = after;
        }
        if !rest.is_empty() {
            return Err(format!("key {k}: {rest} after an index"));
        }
    }
    Ok(out)
}

fn set(m: &mut Map<String, Value>, path: &[Seg], v: Value) -> Result<(), String> {
    let Some(Seg::Field(first)) = path.first() else {
        return Err("a key must begin with a field".into());
    };
    let mut at = m.entry(first.clone()).or_insert(Value::Null);
    for seg in &path[1..] {
        at = match seg {
            Seg::Field(f) => {
                if at.is_null() {
                    *at = Value::Object(Map::new());
                }
                match at {
                    Value::Object(o) => o.entry(f.clone()).or_insert(Value::Null),
                    _ => return Err(format!("{f}: set both as a value and as fields")),
                }
            }
            Seg::Index(i) => {
                if at.is_null() {
                    *at = Value::Array(Vec::new());
                }
                match at {
                    Value::Array(a) => {
                        if a.len() <= *i {
                            a.resize(*i + 1, Value::Null);
                        }
                        &mut a[*i]
                    }
                    _ => return Err(format!("[{i}]: set both as a value and as a list")),
                }
            }
        };
    }
    if !at.is_null() {
        return Err("a key given twice".into());
    }
    *at = v;
    Ok(())
}

/// A value as YAML's safe load types it, for the forms an argument string can hold.
fn scalar(v: &str) -> Value {
    match v {
        "" | "null" | "None" | "~" => return Value::Null,
        "true" | "True" => return Value::Bool(true),
        "false" | "False" => return Value::Bool(false),
        _ => {}
    }
    if let Ok(n) = v.parse::<i64>() {
        return n.into();
    }
    if let Ok(x) = v.parse::<f64>() {
        if x.is_finite() {
            return x.into();
        }
    }
    if v.starts_with('[') || v.starts_with('{') || v.starts_with('"') {
        if let Ok(j) = serde_json::from_str(v) {
            return j;
        }
    }
    Value::String(v.to_string())
}

/// A parsed argument's fields, taken one by one; what is left when [`Fields::done`]
/// is called was not a field of its kind.
pub struct Fields {
    flag: &'static str,
    kind: String,
    m: Map<String, Value>,
}

impl Fields {
    /// `s`, given to `flag`; its `kind` (or `default` without one).
    pub fn of(flag: &'static str, s: &str, default: &str) -> Result<Fields, FlagError> {
        Ok(Fields::from_map(flag, parse(flag, s)?, default))
    }

    pub fn from_map(flag: &'static str, mut m: Map<String, Value>, default: &str) -> Fields {
        let kind = match m.remove("kind") {
            Some(Value::String(k)) => k,
            _ => default.to_string(),
        };
        Fields { flag, kind, m }
    }

    pub fn kind(&self) -> &str {
        &self.kind
    }

    fn bad(&self, field: &str, why: &str) -> FlagError {
        FlagError::usage(format!("{} kind={}: {field} {why}", self.flag, self.kind))
    }

    /// A field's raw value, taken.
    pub fn take(&mut self, field: &str) -> Option<Value> {
        self.m.remove(field).filter(|v| !v.is_null())
    }

    pub fn string(&mut self, field: &str) -> Result<Option<String>, FlagError> {
        match self.take(field) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(v) => Ok(Some(v.to_string())),
        }
    }

    pub fn number(&mut self, field: &str) -> Result<Option<f64>, FlagError> {
        match self.take(field) {
            None => Ok(None),
            Some(v) => match v
                .as_f64()
                .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
            {
                Some(x) if x.is_finite() => Ok(Some(x)),
                _ => Err(self.bad(field, &format!("= {v}: not a number"))),
            },
        }
    }

    /// A number above 0.
    pub fn positive(&mut self, field: &str) -> Result<Option<f64>, FlagError> {
        match self.number(field)? {
            Some(x) if x <= 0.0 => Err(self.bad(field, &format!("= {x}: must be above 0"))),
            x => Ok(x),
        }
    }

    /// A whole number of at least `min`.
    pub fn count(&mut self, field: &str, min: u64) -> Result<Option<u64>, FlagError> {
        match self.number(field)? {
            None => Ok(None),
            Some(x) if x.fract() == 0.0 && x >= min as f64 && x < 1e15 => Ok(Some(x as u64)),
            Some(x) => Err(self.bad(field, &format!("= {x}: a whole number from {min}"))),
        }
    }

    pub fn boolean(&mut self, field: &str) -> Result<Option<bool>, FlagError> {
        match self.take(field) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(b)),
            Some(v) => Err(self.bad(field, &format!("= {v}: true or false"))),
        }
    }

    /// A number or a list of them (`rate=2`, `rate=[1,2]`, `rate[0]=1,rate[1]=2`).
    pub fn numbers(&mut self, field: &str) -> Result<Option<Vec<f64>>, FlagError> {
        let Some(v) = self.take(field) else {
            return Ok(None);
        };
        let items = match &v {
            Value::Array(a) => a.clone(),
            Value::String(s) => s
                .split([',', ' '])
                .filter(|p| !p.is_empty())
                .map(scalar)
                .collect(),
            other => vec![other.clone()],
        };
        let xs: Option<Vec<f64>> = items
            .iter()
            .map(|x| x.as_f64().filter(|x| x.is_finite() && *x > 0.0))
            .collect();
        match xs {
            Some(xs) if !xs.is_empty() && xs.len() <= MAX_INDEX => Ok(Some(xs)),
            _ => Err(self.bad(
                field,
                &format!("= {v}: a number above 0, or a list of up to {MAX_INDEX} of them"),
            )),
        }
    }

    /// A nested object, as its fields.
    pub fn object(&mut self, field: &str) -> Result<Option<Map<String, Value>>, FlagError> {
        match self.take(field) {
            None => Ok(None),
            Some(Value::Object(o)) => Ok(Some(o)),
            Some(Value::String(s)) if s.trim_start().starts_with('{') => {
                match serde_json::from_str(&s) {
                    Ok(Value::Object(o)) => Ok(Some(o)),
                    _ => Err(self.bad(field, "is not a JSON object")),
                }
            }
            Some(v) => Err(self.bad(field, &format!("= {v}: not an object"))),
        }
    }

    /// Refuses the fields nobody took, naming those of the kind.
    pub fn done(&self, accepted: &[&str]) -> Result<(), FlagError> {
        match self.m.keys().next() {
            None => Ok(()),
            Some(k) => Err(FlagError::usage(format!(
                "{} kind={}: {k} is not a field taken here; taken: {}",
                self.flag,
                self.kind,
                accepted.join(", ")
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_nest_index_and_type_as_guidellm_reads_them() {
        let m = parse(
            "--profile",
            "kind=concurrent,streams[0]=1,streams[1]=4,slo.ttft_ms=200.5,adaptive=true,x=None,name=a b",
        )
        .unwrap();
        assert_eq!(
            Value::Object(m),
            serde_json::json!({"kind": "concurrent", "streams": [1, 4],
                "slo": {"ttft_ms": 200.5}, "adaptive": true, "x": null, "name": "a b"})
        );
        let m = parse("--profile", r#"{"kind":"sweep","sweep_size":5}"#).unwrap();
        assert_eq!(m["sweep_size"], 5);
        assert_eq!(
            parse("--profile", "kind=knee,initial_streams=[1,2]").unwrap()["initial_streams"],
            serde_json::json!([1, 2])
        );
        assert_eq!(
            parse("--profile", "kind=knee,4").unwrap_err().to_string(),
            "--profile kind=knee,4: item 2 (4) is not key=value; write kind=…,key=value,… or a JSON object"
        );
        for bad in ["a=1,a=2", "a=1,a.b=2", "s[99]=1", "=3", "a[x]=1"] {
            assert!(parse("--data", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn fields_are_typed_and_the_unknown_refused_by_name() {
        let mut f = Fields::of(
            "--profile",
            "kind=constant,rate=[1,2.5],max_concurrency=8,z=1",
            "x",
        )
        .unwrap();
        assert_eq!(f.kind(), "constant");
        assert_eq!(f.numbers("rate").unwrap(), Some(vec![1.0, 2.5]));
        assert_eq!(f.count("max_concurrency", 1).unwrap(), Some(8));
        let e = f
            .done(&["rate", "max_concurrency"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("z is not a field taken here; taken: rate, max_concurrency"),
            "{e}"
        );
        let mut f = Fields::of("--profile", "kind=concurrent,streams=0", "x").unwrap();
        let e = f.numbers("streams").unwrap_err().to_string();
        assert!(e.contains("--profile kind=concurrent: streams = 0"), "{e}");
        let mut f = Fields::of("--constraint", "kind=max_requests,count=1.5", "x").unwrap();
        assert!(f.count("count", 1).is_err());
    }
}
