//! What a recorded answer hands out that later requests may send back: its JSON
//! values (with their paths), the server's own headers and hidden form fields, and
//! the variable names they are captured into.

use super::*;

/// The values an answer hands out, with where each is: JSON values, the server's own
/// headers, hidden form fields.
pub(super) fn offers(e: &Entry) -> Vec<(String, Offer)> {
    let mut out = Vec::new();
    for h in &e.response.headers {
        let lower = h.name.to_ascii_lowercase();
        if PLAIN_RESPONSE.contains(&lower.as_str()) || h.value.trim().len() < MIN_TEXT * 2 {
            continue;
        }
        out.push((
            h.value.trim().to_string(),
            Offer {
                kind: "header",
                expr: h.name.clone(),
                name: var_name(&h.name),
            },
        ));
    }
    let c = &e.response.content;
    let Some(text) = c.text.as_deref() else {
        return out;
    };
    if c.encoding
        .as_deref()
        .is_some_and(|x| x.eq_ignore_ascii_case("base64"))
    {
        return out;
    }
    let mime = c.mime.to_ascii_lowercase();
    let trimmed = text.trim_start();
    if mime.contains("json") || trimmed.starts_with('{') || trimmed.starts_with('[') {
        if let Ok(v) = serde_json::from_str::<Value>(text) {
            json_leaves(&v, "$", "value", &mut out, 0);
        }
    } else if mime.contains("html") {
        hidden_fields(text, &mut out);
    }
    out.truncate(MAX_OFFERED);
    out
}

fn json_leaves(v: &Value, path: &str, key: &str, out: &mut Vec<(String, Offer)>, depth: usize) {
    if depth > 32 || out.len() >= MAX_OFFERED {
        return;
    }
    let offer = |value: String| {
        (
            value,
            Offer {
                kind: "json",
                expr: path.to_string(),
                name: var_name(key),
            },
        )
    };
    match v {
        Value::String(s) if s.chars().count() >= MIN_TEXT && !s.contains(['\n', '\r']) => {
            out.push(offer(s.clone()))
        }
        Value::Number(n) if n.is_u64() || n.is_i64() => {
            let s = n.to_string();
            if s.trim_start_matches('-').len() >= MIN_DIGITS {
                out.push(offer(s));
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                json_leaves(x, &format!("{path}[{i}]"), key, out, depth + 1);
            }
        }
        Value::Object(m) => {
            for (k, x) in m {
                let p = if !k.is_empty()
                    && k.chars()
                        .next()
                        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                {
                    format!("{path}.{k}")
                } else if !k.contains(['\'', ']', '"']) {
                    format!("{path}['{k}']")
                } else {
                    continue;
                };
                json_leaves(x, &p, k, out, depth + 1);
            }
        }
        _ => {}
    }
}

/// `<input type="hidden" name="N" value="V">` fields of an HTML answer.
fn hidden_fields(html: &str, out: &mut Vec<(String, Offer)>) {
    let attr = |tag: &str, name: &str| -> Option<String> {
        let lower = tag.to_ascii_lowercase();
        for q in ['"', '\''] {
            let key = format!(" {name}={q}");
            if let Some(i) = lower.find(&key) {
                let from = i + key.len();
                let end = tag[from..].find(q)? + from;
                return Some(tag[from..end].to_string());
            }
        }
        None
    };
    let lower = html.to_ascii_lowercase();
    let mut at = 0;
    while let Some(i) = lower[at..].find("<input").map(|i| at + i) {
        let end = lower[i..].find('>').map_or(lower.len(), |e| i + e);
        let tag = &html[i..end];
        at = end;
        if attr(tag, "type").is_none_or(|t| !t.eq_ignore_ascii_case("hidden")) {
            continue;
        }
        let (Some(name), Some(value)) = (attr(tag, "name"), attr(tag, "value")) else {
            continue;
        };
        if value.len() < MIN_TEXT || name.contains(['"', '\\']) {
            continue;
        }
        out.push((
            value,
            Offer {
                kind: "regexp",
                expr: format!(r#"name="{}"[^>]*value="([^"]*)""#, regex::escape(&name)),
                name: var_name(&name),
            },
        ));
    }
}

/// A variable's name from a key: letters, digits and `_`, not starting with a digit.
pub(super) fn var_name(key: &str) -> String {
    let mut s: String = key
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    s = s.trim_matches('_').to_string();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert_str(0, "v_");
    }
    s
}

/// `base`, or `base_2`, `base_3`, … whichever is not taken yet; taken now.
pub(super) fn unique(base: &str, used: &mut Vec<String>) -> String {
    let mut name = base.to_string();
    let mut n = 1;
    while used.contains(&name) {
        n += 1;
        name = format!("{base}_{n}");
    }
    used.push(name.clone());
    name
}
