//! A journey from a recording: a browser's HAR export (HAR 1.2, as every browser's
//! developer tools and most proxies save it) read into a journey file, one step for
//! each request to the recording's origin, in order.
//!
//! What makes a recording replayable is found here, not left to the user: a value an
//! answer handed out (a JSON value, a header of the server's own, a hidden form field)
//! that a later request sends back — a token, an id, a CSRF field — becomes a capture
//! on the step whose answer gave it and a `{{ name }}` in each later request that
//! sends it. A value the client sent before any answer gave it (a user name echoed
//! back) is the client's own and stays as it is. Cookies need nothing: each user's jar
//! sends what the answers set, so the recorded `Cookie` headers are left out. Each
//! step checks the status it was recorded with. Static assets (images, styles,
//! scripts, fonts) are left out unless asked for, and requests to other origins always
//! are; every choice is given as a note.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use serde::Deserialize;
use serde_json::Value;

use crate::journey::Journey;

/// The largest HAR file read (the ceiling of a list of requests).
pub const MAX_HAR: u64 = stampede_engine::input::Input::List.limit();
/// The most steps a journey from a recording takes (a journey's own limit).
pub const MAX_ENTRIES: usize = crate::journey::MAX_STEPS;
/// The shortest text value taken for a handed-out value (shorter ones match by
/// chance), and the fewest digits of a number.
pub const MIN_TEXT: usize = 4;
pub const MIN_DIGITS: usize = 3;
/// The most values one answer offers, and the most the whole recording tracks.
const MAX_OFFERED: usize = 500;
const MAX_TRACKED: usize = 20_000;

/// Why a recording cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {reason}")]
pub struct HarError {
    pub file: String,
    pub reason: String,
}

/// What to take from a recording.
#[derive(Debug, Clone, Default)]
pub struct HarOptions {
    /// Keep images, styles, scripts and fonts.
    pub include_static: bool,
    /// The origin whose requests are kept (`https://host:port`); the first request's
    /// when absent.
    pub origin: Option<String>,
    /// Keep the recorded pauses between requests as think times.
    pub think: bool,
}

/// A journey written from a recording.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The journey file's text (TOML), checked to read as a journey.
    pub toml: String,
    /// The origin its paths are on (the URL to run it against).
    pub origin: String,
    /// What was made of the recording, a line each.
    pub notes: Vec<String>,
}

#[derive(Deserialize)]
struct Har {
    log: Log,
}

#[derive(Deserialize)]
struct Log {
    #[serde(default)]
    entries: Vec<Entry>,
}

#[derive(Deserialize)]
struct Entry {
    #[serde(rename = "startedDateTime", default)]
    started: String,
    #[serde(default)]
    time: f64,
    request: Req,
    response: Resp,
}

#[derive(Deserialize)]
struct Req {
    method: String,
    url: String,
    #[serde(default)]
    headers: Vec<Field>,
    #[serde(rename = "postData")]
    post: Option<Post>,
}

#[derive(Deserialize)]
struct Post {
    #[serde(rename = "mimeType", default)]
    mime: String,
    text: Option<String>,
    #[serde(default)]
    params: Vec<Field>,
}

#[derive(Deserialize)]
struct Field {
    name: String,
    #[serde(default)]
    value: String,
}

#[derive(Deserialize)]
struct Resp {
    #[serde(default)]
    status: i64,
    #[serde(default)]
    headers: Vec<Field>,
    #[serde(default)]
    content: Content,
}

#[derive(Deserialize, Default)]
struct Content {
    #[serde(rename = "mimeType", default)]
    mime: String,
    text: Option<String>,
    encoding: Option<String>,
}

/// Request headers a journey does not send as recorded: stampede's own, the jar's,
/// and what a browser adds about itself.
const DROPPED: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "cookie",
    "connection",
    "keep-alive",
    "accept-encoding",
    "accept-language",
    "user-agent",
    "referer",
    "origin",
    "cache-control",
    "pragma",
    "priority",
    "dnt",
    "te",
    "upgrade-insecure-requests",
    "if-none-match",
    "if-modified-since",
];

/// Response headers whose values are the protocol's, never a value handed out.
const PLAIN_RESPONSE: &[&str] = &[
    "date",
    "server",
    "content-type",
    "content-length",
    "content-encoding",
    "connection",
    "keep-alive",
    "cache-control",
    "expires",
    "last-modified",
    "etag",
    "vary",
    "set-cookie",
    "age",
    "via",
    "accept-ranges",
    "transfer-encoding",
    "strict-transport-security",
    "alt-svc",
    "content-security-policy",
    "x-content-type-options",
    "x-frame-options",
    "x-xss-protection",
    "referrer-policy",
    "access-control-allow-origin",
    "access-control-allow-headers",
    "access-control-allow-methods",
];

/// A piece of a request being rewritten: as recorded, or a variable.
#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Text(String),
    Var(String),
}

/// A request's text, rewritten piece by piece.
#[derive(Debug, Clone)]
struct Rewritten(Vec<Piece>);

impl Rewritten {
    fn new(s: &str) -> Rewritten {
        Rewritten(vec![Piece::Text(s.to_string())])
    }

    /// Replaces each occurrence of `value` standing alone (not inside a longer word)
    /// in its recorded text with `var`; whether one was.
    fn replace(&mut self, value: &str, var: &str) -> bool {
        let mut out = Vec::new();
        let mut any = false;
        for p in self.0.drain(..) {
            let Piece::Text(t) = p else {
                out.push(p);
                continue;
            };
            let mut rest = t.as_str();
            let mut from = 0;
            while let Some(at) = rest[from..].find(value).map(|i| from + i) {
                let end = at + value.len();
                if alone(rest, at, end) {
                    if at > 0 {
                        out.push(Piece::Text(rest[..at].to_string()));
                    }
                    out.push(Piece::Var(var.to_string()));
                    any = true;
                    rest = &rest[end..];
                    from = 0;
                } else {
                    from = at + rest[at..].chars().next().map_or(1, char::len_utf8);
                }
            }
            if !rest.is_empty() {
                out.push(Piece::Text(rest.to_string()));
            }
        }
        self.0 = out;
        any
    }

    /// Whether `value` stands alone somewhere in its recorded text.
    fn holds(&self, value: &str) -> bool {
        self.0.iter().any(|p| match p {
            Piece::Text(t) => find_alone(t, value),
            Piece::Var(_) => false,
        })
    }

    /// As a template: recorded text with `{{` escaped, variables as placeholders.
    fn template(&self) -> String {
        let mut s = String::new();
        for p in &self.0 {
            match p {
                Piece::Text(t) => s.push_str(&t.replace("{{", "\\{{")),
                Piece::Var(v) => {
                    let _ = write!(s, "{{{{ {v} }}}}");
                }
            }
        }
        s
    }
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn alone(text: &str, at: usize, end: usize) -> bool {
    let before = text[..at].chars().next_back();
    let after = text[end..].chars().next();
    !before.is_some_and(is_word) && !after.is_some_and(is_word)
}

fn find_alone(text: &str, value: &str) -> bool {
    let mut from = 0;
    while let Some(at) = text[from..].find(value).map(|i| from + i) {
        if alone(text, at, at + value.len()) {
            return true;
        }
        from = at + text[at..].chars().next().map_or(1, char::len_utf8);
    }
    false
}

/// One kept request, being rewritten.
struct Draft {
    method: String,
    name: String,
    url: Rewritten,
    headers: Vec<(String, Rewritten)>,
    body: Option<Rewritten>,
    status: Option<u16>,
    think_ms: Option<u64>,
    /// Captures this step's answer gives: (variable, kind, expression).
    captures: Vec<(String, &'static str, String)>,
}

/// Where an answer gave a value: a capture's kind and expression, and a name for it.
#[derive(Debug, Clone)]
struct Offer {
    kind: &'static str,
    expr: String,
    name: String,
}

/// A value handed out, tracked for the requests after it.
struct Tracked {
    step: usize,
    offer: Offer,
    /// The variable it was captured into, once a request sent it.
    var: Option<String>,
}

/// Reads a HAR file into a journey.
pub fn read_file(path: &str, opts: &HarOptions) -> Result<Recorded, HarError> {
    let err = |reason: String| HarError {
        file: path.to_string(),
        reason,
    };
    let bytes = crate::read_bounded(path, stampede_engine::input::Input::List, "a recording")
        .map_err(|e| err(e.0))?;
    convert(path, &bytes, opts)
}

/// Reads a HAR recording's `bytes` (`file` names it in errors) into a journey.
pub fn convert(file: &str, bytes: &[u8], opts: &HarOptions) -> Result<Recorded, HarError> {
    let err = |reason: String| HarError {
        file: file.to_string(),
        reason,
    };
    if bytes.len() as u64 > MAX_HAR {
        return Err(err(format!(
            "{} bytes; a recording is read up to {MAX_HAR}",
            bytes.len()
        )));
    }
    let har: Har = serde_json::from_slice(bytes).map_err(|e| {
        err(format!(
            "line {}, column {}: not a HAR file: {e}",
            e.line(),
            e.column()
        ))
    })?;
    let entries = har.log.entries;
    if entries.is_empty() {
        return Err(err("log.entries is empty: nothing was recorded".into()));
    }
    let origin = match &opts.origin {
        Some(o) => origin_of(o)
            .ok_or_else(|| err(format!("--origin {o:?} is not an http:// or https:// URL")))?,
        None => origin_of(&entries[0].request.url).ok_or_else(|| {
            err(format!(
                "log.entries[0].request.url {:?} is not an http:// or https:// URL",
                entries[0].request.url
            ))
        })?,
    };
    let mut notes = Vec::new();
    let mut others: BTreeMap<String, usize> = BTreeMap::new();
    let (mut statics, mut unanswered) = (0, 0);
    let mut kept: Vec<&Entry> = Vec::new();
    for e in &entries {
        if origin_of(&e.request.url).as_deref() != Some(origin.as_str()) {
            let o = origin_of(&e.request.url).unwrap_or_else(|| e.request.url.clone());
            *others.entry(o).or_default() += 1;
        } else if e.response.status <= 0 {
            unanswered += 1;
        } else if !opts.include_static && is_static(e) {
            statics += 1;
        } else {
            kept.push(e);
        }
    }
    for (o, n) in &others {
        notes.push(format!(
            "left out {n} request{} to {o} (a journey runs against one origin, {origin})",
            plural(*n)
        ));
    }
    if statics > 0 {
        notes.push(format!(
            "left out {statics} static asset{} (images, styles, scripts, fonts; --include-static keeps them)",
            plural(statics)
        ));
    }
    if unanswered > 0 {
        notes.push(format!(
            "left out {unanswered} request{} the browser recorded no answer for (blocked or cancelled)",
            plural(unanswered)
        ));
    }
    if kept.is_empty() {
        return Err(err(format!("no request to {origin} is left to replay")));
    }
    if kept.len() > MAX_ENTRIES {
        return Err(err(format!(
            "{} requests to {origin}; a journey takes at most {MAX_ENTRIES} (--origin chooses another, or cut the recording)",
            kept.len()
        )));
    }
    let mut drafts: Vec<Draft> = Vec::new();
    let mut names: HashMap<String, usize> = HashMap::new();
    let mut dropped_headers: BTreeMap<String, usize> = BTreeMap::new();
    let mut prev_end: Option<f64> = None;
    for e in &kept {
        let method = e.request.method.to_ascii_uppercase();
        let path = e.request.url[origin.len()..].to_string();
        let path = if path.starts_with('/') {
            path
        } else {
            format!("/{path}")
        };
        let path = path.split('#').next().unwrap_or("/").to_string();
        let bare = path.split('?').next().unwrap_or("/");
        let base = format!("{method} {}", short(bare, 60));
        let n = names.entry(base.clone()).or_default();
        *n += 1;
        let name = if *n == 1 {
            base
        } else {
            format!("{base} #{n}")
        };
        let mut headers = Vec::new();
        for h in &e.request.headers {
            let lower = h.name.to_ascii_lowercase();
            if lower.starts_with(':')
                || lower.starts_with("sec-")
                || DROPPED.contains(&lower.as_str())
            {
                *dropped_headers.entry(lower).or_default() += 1;
                continue;
            }
            if h.name.is_empty() || !h.name.bytes().all(|b| b.is_ascii_graphic() && b != b':') {
                continue;
            }
            if headers
                .iter()
                .any(|(n, _): &(String, Rewritten)| n.eq_ignore_ascii_case(&h.name))
            {
                continue;
            }
            headers.push((h.name.clone(), Rewritten::new(&h.value)));
        }
        let body = e.request.post.as_ref().and_then(|p| match &p.text {
            Some(t) => Some(t.clone()),
            None if !p.params.is_empty() => Some(
                (p.params.iter())
                    .map(|f| format!("{}={}", form(&f.name), form(&f.value)))
                    .collect::<Vec<_>>()
                    .join("&"),
            ),
            None => None,
        });
        if let Some(p) = &e.request.post {
            if !p.mime.is_empty()
                && !headers
                    .iter()
                    .any(|(n, _)| n.eq_ignore_ascii_case("content-type"))
            {
                headers.push(("Content-Type".into(), Rewritten::new(&p.mime)));
            }
        }
        let start = stampede_wire::date::rfc3339(&e.started).map(|s| s * 1000.0);
        let think_ms = match (opts.think, start, prev_end) {
            (true, Some(s), Some(p)) if s > p => Some((s - p).round() as u64),
            _ => None,
        };
        prev_end = start.map(|s| s + e.time.max(0.0));
        drafts.push(Draft {
            method,
            name,
            url: Rewritten::new(&path),
            headers,
            body: body.map(|b| Rewritten::new(&b)),
            status: u16::try_from(e.response.status)
                .ok()
                .filter(|s| (100..=599).contains(s)),
            think_ms,
            captures: Vec::new(),
        });
    }
    if !dropped_headers.is_empty() {
        let list: Vec<String> = dropped_headers.keys().cloned().collect();
        notes.push(format!(
            "request headers not sent as recorded: {} (stampede's own, the cookie jar's, or the browser's about itself)",
            list.join(", ")
        ));
    }
    // Values the answers hand out, and the requests that send them back.
    let mut tracked: HashMap<String, Tracked> = HashMap::new();
    let mut used_vars: Vec<String> = Vec::new();
    for j in 0..drafts.len() {
        // Requests from the first to this one: a value already sent is the client's.
        let mut found: Vec<(String, usize)> = Vec::new();
        let mut order: Vec<&String> = tracked.keys().collect();
        // Longest first: a value inside another is not taken for it.
        order.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
        let order: Vec<String> = order.into_iter().cloned().collect();
        for value in &order {
            let d = &mut drafts[j];
            let sends = d.url.holds(value)
                || d.headers.iter().any(|(_, h)| h.holds(value))
                || d.body.as_ref().is_some_and(|b| b.holds(value));
            if !sends {
                continue;
            }
            let t = tracked.get_mut(value).expect("tracked");
            let var = match &t.var {
                Some(v) => v.clone(),
                None => unique(&t.offer.name, &mut used_vars),
            };
            d.url.replace(value, &var);
            for (_, h) in d.headers.iter_mut() {
                h.replace(value, &var);
            }
            if let Some(b) = d.body.as_mut() {
                b.replace(value, &var);
            }
            if t.var.is_none() {
                t.var = Some(var.clone());
                let step = t.step;
                drafts[step]
                    .captures
                    .push((var.clone(), t.offer.kind, t.offer.expr.clone()));
                found.push((var, step));
            }
        }
        for (var, step) in found {
            let t = tracked
                .values()
                .find(|t| t.var.as_deref() == Some(&var))
                .expect("tracked");
            notes.push(format!(
                "step {} ({:?}) sends {{{{ {var} }}}}: captured from step {}'s answer ({} {})",
                j + 1,
                drafts[j].name,
                step + 1,
                t.offer.kind,
                t.offer.expr
            ));
        }
        // What this step's answer offers, unless a request already sent it.
        let e = kept[j];
        for (value, offer) in offers(e) {
            if tracked.len() >= MAX_TRACKED {
                break;
            }
            let already = drafts[..=j].iter().any(|d| {
                d.url.holds(&value)
                    || d.headers.iter().any(|(_, h)| h.holds(&value))
                    || d.body.as_ref().is_some_and(|b| b.holds(&value))
            });
            if already {
                continue;
            }
            // A later answer giving the same value again is where it is taken from.
            match tracked.get_mut(&value) {
                Some(t) if t.var.is_none() => {
                    t.step = j;
                    t.offer = offer;
                }
                Some(_) => {}
                None => {
                    tracked.insert(
                        value,
                        Tracked {
                            step: j,
                            offer,
                            var: None,
                        },
                    );
                }
            }
        }
    }
    if notes.iter().all(|n| !n.contains("sends {{")) {
        notes.push("no request sends back a value an answer handed out: the steps are replayed as recorded".into());
    }
    let toml = write_toml(file, &origin, &drafts, &notes);
    // What is written must read as a journey: a failure here is stampede's, said plainly.
    Journey::parse("the journey written", &toml, |f| {
        Err(crate::feeder::FeederError {
            place: f.to_string(),
            reason: "a recording's journey has no feeder".into(),
        })
    })
    .map_err(|e| {
        err(format!(
            "the journey made from it does not read ({e}); please report this with the file"
        ))
    })?;
    Ok(Recorded {
        toml,
        origin,
        notes,
    })
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// `scheme://host[:port]` of a URL, lower-cased, or `None` when it is not http(s).
fn origin_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let host = &rest[..end];
    if host.is_empty() {
        return None;
    }
    Some(format!("{scheme}://{}", host.to_ascii_lowercase()))
}

fn is_static(e: &Entry) -> bool {
    let mime = e.response.content.mime.to_ascii_lowercase();
    let by_type = mime.starts_with("image/")
        || mime.starts_with("font/")
        || mime.starts_with("text/css")
        || mime.contains("javascript")
        || mime.starts_with("video/")
        || mime.starts_with("audio/");
    let path = e.request.url.split(['?', '#']).next().unwrap_or("");
    let ext = path.rsplit_once('.').map(|(_, x)| x.to_ascii_lowercase());
    let by_name = ext.is_some_and(|x| {
        [
            "js", "mjs", "css", "png", "jpg", "jpeg", "gif", "svg", "ico", "webp", "avif", "woff",
            "woff2", "ttf", "otf", "eot", "map", "mp4", "webm", "mp3",
        ]
        .contains(&x.as_str())
    });
    e.request.method.eq_ignore_ascii_case("GET") && (by_type || by_name)
}

fn short(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut t: String = s.chars().take(max - 1).collect();
    t.push('…');
    t
}

fn form(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => {
                let _ = write!(out, "%{b:02X}");
            }
        }
    }
    out
}

fn quoted(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

fn write_toml(file: &str, origin: &str, drafts: &[Draft], notes: &[String]) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# A journey recorded in {file}, on {origin}:");
    let _ = writeln!(o, "#   stampede load {origin}/ --journey THIS_FILE");
    for n in notes {
        let _ = writeln!(o, "# - {n}");
    }
    for d in drafts {
        let _ = writeln!(o, "\n[[step]]");
        let _ = writeln!(o, "name = {}", quoted(&d.name));
        if d.method != "GET" {
            let _ = writeln!(o, "method = {}", quoted(&d.method));
        }
        let _ = writeln!(o, "url = {}", quoted(&d.url.template()));
        if !d.headers.is_empty() {
            let hs: Vec<String> = (d.headers.iter())
                .map(|(n, v)| format!("{} = {}", quoted(n), quoted(&v.template())))
                .collect();
            let _ = writeln!(o, "headers = {{ {} }}", hs.join(", "));
        }
        if let Some(b) = &d.body {
            let _ = writeln!(o, "body = {}", quoted(&b.template()));
        }
        if !d.captures.is_empty() {
            let cs: Vec<String> = (d.captures.iter())
                .map(|(var, kind, expr)| {
                    format!("{{ {kind} = {}, as = {} }}", quoted(expr), quoted(var))
                })
                .collect();
            let _ = writeln!(o, "capture = [{}]", cs.join(", "));
        }
        if let Some(s) = d.status {
            let _ = writeln!(o, "check = [\"status {s}\"]");
        }
        if let Some(t) = d.think_ms.filter(|t| *t > 0) {
            let _ = writeln!(o, "think = \"{t}ms\"");
        }
    }
    o
}

mod handed;

#[cfg(test)]
use handed::var_name;
use handed::{offers, unique};

#[cfg(test)]
mod tests;
