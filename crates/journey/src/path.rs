//! JSON paths, the subset load testers' captures and checks use: `$.a.b`, `$['a b']`,
//! `$.items[0]`, `$.items[-1]` (from the end), `$.items[*].id` and `$.*` (every
//! member), `$..id` (at any depth). The leading `$` may be left out (`items[0].id`).

use serde_json::Value;

use crate::Invalid;

/// The deepest a path's `..` looks, and the most values one path yields.
pub const MAX_DEPTH: usize = 64;
pub const MAX_MATCHES: usize = 10_000;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Seg {
    Key(String),
    Index(i64),
    All,
    /// `..name`: `name` at any depth below.
    Deep(String),
}

/// A checked JSON path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonPath {
    text: String,
    segs: Vec<Seg>,
}

impl JsonPath {
    /// Reads a path; what is wrong says where in it.
    pub fn parse(text: &str) -> Result<JsonPath, Invalid> {
        let t = text.trim();
        let body = t.strip_prefix('$').unwrap_or(t);
        let b = body.as_bytes();
        let mut segs = Vec::new();
        let mut i = 0;
        let bad =
            |at: usize, why: &str| Invalid(format!("JSON path {t:?}, at {:?}: {why}", &body[at..]));
        // A path without `$` begins with a name.
        if !t.starts_with('$') && !b.is_empty() && b[0] != b'[' && b[0] != b'.' {
            let end = name_end(b, 0);
            segs.push(Seg::Key(body[..end].to_string()));
            i = end;
        }
        while i < b.len() {
            match b[i] {
                b'.' if b.get(i + 1) == Some(&b'.') => {
                    let end = name_end(b, i + 2);
                    if end == i + 2 {
                        return Err(bad(i, "a name after .."));
                    }
                    segs.push(Seg::Deep(body[i + 2..end].to_string()));
                    i = end;
                }
                b'.' if b.get(i + 1) == Some(&b'*') => {
                    segs.push(Seg::All);
                    i += 2;
                }
                b'.' => {
                    let end = name_end(b, i + 1);
                    if end == i + 1 {
                        return Err(bad(i, "a name after ."));
                    }
                    segs.push(Seg::Key(body[i + 1..end].to_string()));
                    i = end;
                }
                b'[' => {
                    let close = body[i..]
                        .find(']')
                        .map(|p| i + p)
                        .ok_or_else(|| bad(i, "no closing ]"))?;
                    let inner = body[i + 1..close].trim();
                    let seg = if inner == "*" {
                        Seg::All
                    } else if let Some(q) = inner
                        .strip_prefix('\'')
                        .and_then(|s| s.strip_suffix('\''))
                        .or_else(|| inner.strip_prefix('"').and_then(|s| s.strip_suffix('"')))
                    {
                        Seg::Key(q.to_string())
                    } else {
                        Seg::Index(
                            inner
                                .parse()
                                .map_err(|_| bad(i, "an index, '*' or a quoted name in [ ]"))?,
                        )
                    };
                    segs.push(seg);
                    i = close + 1;
                }
                _ => return Err(bad(i, "a . or [ here")),
            }
        }
        if segs.len() > MAX_DEPTH {
            return Err(Invalid(format!(
                "JSON path {t:?}: more than {MAX_DEPTH} steps"
            )));
        }
        Ok(JsonPath {
            text: t.to_string(),
            segs,
        })
    }

    /// The path as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The values the path finds in `root` (an object's members by name, an array's
    /// in order), at most
    /// [`MAX_MATCHES`].
    pub fn find<'v>(&self, root: &'v Value) -> Vec<&'v Value> {
        let mut cur = vec![root];
        for seg in &self.segs {
            let mut next = Vec::new();
            for v in cur {
                match seg {
                    Seg::Key(k) => next.extend(v.get(k.as_str())),
                    Seg::Index(n) => {
                        if let Value::Array(a) = v {
                            let at = if *n < 0 { a.len() as i64 + n } else { *n };
                            next.extend(usize::try_from(at).ok().and_then(|at| a.get(at)));
                        }
                    }
                    Seg::All => match v {
                        Value::Array(a) => next.extend(a.iter()),
                        Value::Object(o) => next.extend(o.values()),
                        _ => {}
                    },
                    Seg::Deep(k) => deep(v, k, 0, &mut next),
                }
                if next.len() >= MAX_MATCHES {
                    next.truncate(MAX_MATCHES);
                    break;
                }
            }
            cur = next;
        }
        cur
    }
}

fn name_end(b: &[u8], from: usize) -> usize {
    (b[from..].iter())
        .position(|&c| matches!(c, b'.' | b'['))
        .map_or(b.len(), |p| from + p)
}

fn deep<'v>(v: &'v Value, key: &str, depth: usize, out: &mut Vec<&'v Value>) {
    if depth > MAX_DEPTH || out.len() >= MAX_MATCHES {
        return;
    }
    match v {
        Value::Object(o) => {
            if let Some(x) = o.get(key) {
                out.push(x);
            }
            for x in o.values() {
                deep(x, key, depth + 1, out);
            }
        }
        Value::Array(a) => {
            for x in a {
                deep(x, key, depth + 1, out);
            }
        }
        _ => {}
    }
}

/// A JSON value as a variable holds it: a string's text, anything else as JSON.
pub fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(path: &str, doc: &str) -> Vec<String> {
        let v: Value = serde_json::from_str(doc).unwrap();
        JsonPath::parse(path)
            .unwrap()
            .find(&v)
            .into_iter()
            .map(text_of)
            .collect()
    }

    #[test]
    fn paths_find_what_load_testers_captures_ask_for() {
        let doc = r#"{"token": "t1", "user": {"id": 7, "name a": "x"},
                      "items": [{"id": 1, "tags": ["a"]}, {"id": 2}, {"id": 3, "in": {"id": 9}}]}"#;
        assert_eq!(found("$.token", doc), ["t1"]);
        assert_eq!(found("token", doc), ["t1"]);
        assert_eq!(found("$.user.id", doc), ["7"]);
        assert_eq!(found("$.user['name a']", doc), ["x"]);
        assert_eq!(found("$[\"user\"].id", doc), ["7"]);
        assert_eq!(found("$.items[0].id", doc), ["1"]);
        assert_eq!(found("items[-1].id", doc), ["3"]);
        assert_eq!(found("$.items[*].id", doc), ["1", "2", "3"]);
        assert_eq!(found("$.items[0].tags", doc), [r#"["a"]"#]);
        assert_eq!(found("$.user.*", doc), ["7", "x"]);
        // An object's members come by name, an array's in order.
        assert_eq!(found("$..id", doc), ["1", "2", "3", "9", "7"]);
        assert!(found("$.items[5].id", doc).is_empty());
        assert!(found("$.nope", doc).is_empty());
        assert_eq!(found("$", "[1]"), ["[1]"]);
    }

    #[test]
    fn a_bad_path_says_where() {
        for (p, says) in [
            ("$.a[", "no closing ]"),
            ("$.a[x]", "an index, '*' or a quoted name"),
            ("$.", "a name after ."),
            ("$..", "a name after .."),
            ("$a", "a . or [ here"),
        ] {
            let e = JsonPath::parse(p).unwrap_err();
            assert!(e.0.contains(says), "{p}: {e}");
        }
    }
}
