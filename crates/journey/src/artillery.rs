//! Artillery 2 test scripts, read as they are written: `config` (the target, the
//! phases, a CSV payload, variables, default headers, the HTTP timeout, TLS and the
//! `expect` and `metrics-by-endpoint` plugins) and `scenarios` (weighted, each a
//! `flow` of requests with `json`, `body`, `form`, `headers`, `qs`, `auth`,
//! captures, expectations and `ifTrue`, `think`, `loop` with `count` or `over`, and
//! `log`). The script becomes a journey file of stampede's own (a journey for each
//! scenario) and Gatling injection steps for its phases, which `stampede load`'s
//! machinery runs; what it cannot run — JavaScript (`processor` functions, hooks,
//! `whileTrue`), plugins other than those two, engines other than HTTP — is refused
//! by name with what to use instead. An unknown key is refused with its line.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value as Json;
use serde_norway::Value as Yaml;

use crate::feeder::{Feeder, Format, Order};
use crate::journey::Journey;
use crate::Invalid;

/// The largest script read.
pub const MAX_SCRIPT: usize = 1024 * 1024;

/// Why a script cannot be run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {reason}")]
pub struct ScriptError {
    pub file: String,
    pub reason: String,
}

/// A script ready to run.
#[derive(Debug, Clone)]
pub struct Script {
    /// Its scenarios as a journey file's journeys.
    pub journey: Journey,
    /// The journey file it became (TOML), for `--journey` runs and to read.
    pub toml: String,
    /// `config.target`.
    pub target: String,
    /// The phases as Gatling injection steps (`--inject`).
    pub inject: Vec<String>,
    /// Each phase's name (when it has one) and length, in order: what the run says as
    /// each starts and completes.
    pub phases: Vec<(Option<String>, Duration)>,
    /// `config.http.timeout`.
    pub timeout: Option<Duration>,
    /// `config.tls.rejectUnauthorized: false`.
    pub insecure: bool,
    /// The plugins it asks for that are run: `expect`, `metrics-by-endpoint`.
    pub expect: bool,
    pub by_endpoint: bool,
    /// Each check's line, and the kind of expectation it came from (`statusCode`, …).
    pub expectations: BTreeMap<String, String>,
    /// The payload as the journey file's feeder reads it: the file's name (beside the
    /// journey file) and its CSV, the fields as its header row.
    pub payload: Option<(String, String)>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScript {
    config: RawConfig,
    scenarios: Vec<RawScenario>,
    before: Option<Yaml>,
    after: Option<Yaml>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawConfig {
    target: Option<String>,
    #[serde(default)]
    phases: Vec<RawPhase>,
    payload: Option<Yaml>,
    #[serde(default)]
    variables: BTreeMap<String, Yaml>,
    defaults: Option<RawDefaults>,
    http: Option<RawHttp>,
    tls: Option<RawTls>,
    #[serde(default)]
    plugins: BTreeMap<String, Yaml>,
    processor: Option<Yaml>,
    engines: Option<Yaml>,
    environments: Option<Yaml>,
    ensure: Option<Yaml>,
    include_files: Option<Yaml>,
    stats_interval: Option<Yaml>,
    mode: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawPhase {
    duration: Option<Yaml>,
    arrival_rate: Option<f64>,
    ramp_to: Option<f64>,
    arrival_count: Option<u64>,
    pause: Option<Yaml>,
    name: Option<String>,
    max_vusers: Option<Yaml>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDefaults {
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawHttp {
    timeout: Option<Yaml>,
    defaults: Option<RawDefaults>,
    pool: Option<Yaml>,
    max_sockets: Option<Yaml>,
    extended_metrics: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawTls {
    reject_unauthorized: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawPayload {
    path: String,
    #[serde(default)]
    fields: Vec<String>,
    order: Option<String>,
    #[serde(default)]
    skip_header: bool,
    delimiter: Option<String>,
    cast: Option<bool>,
    skip_empty_lines: Option<bool>,
    load_all: Option<bool>,
    name: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawScenario {
    name: Option<String>,
    weight: Option<u32>,
    engine: Option<String>,
    #[serde(default)]
    flow: Vec<RawAction>,
    before_scenario: Option<Yaml>,
    after_scenario: Option<Yaml>,
    before_request: Option<Yaml>,
    after_response: Option<Yaml>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawAction {
    get: Option<RawRequest>,
    post: Option<RawRequest>,
    put: Option<RawRequest>,
    patch: Option<RawRequest>,
    delete: Option<RawRequest>,
    head: Option<RawRequest>,
    options: Option<RawRequest>,
    think: Option<Yaml>,
    #[serde(rename = "loop")]
    repeat: Option<Vec<RawAction>>,
    count: Option<Yaml>,
    over: Option<Yaml>,
    while_true: Option<Yaml>,
    log: Option<String>,
    function: Option<Yaml>,
    parallel: Option<Yaml>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawRequest {
    url: String,
    name: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    json: Option<Yaml>,
    body: Option<String>,
    form: Option<BTreeMap<String, Yaml>>,
    form_data: Option<Yaml>,
    qs: Option<BTreeMap<String, Yaml>>,
    capture: Option<Yaml>,
    expect: Option<Yaml>,
    if_true: Option<String>,
    auth: Option<RawAuth>,
    cookie: Option<Yaml>,
    follow_redirect: Option<bool>,
    gzip: Option<bool>,
    before_request: Option<Yaml>,
    after_response: Option<Yaml>,
    #[serde(rename = "match")]
    matches: Option<Yaml>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAuth {
    user: String,
    pass: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCapture {
    json: Option<String>,
    regexp: Option<String>,
    header: Option<String>,
    selector: Option<Yaml>,
    xpath: Option<Yaml>,
    #[serde(rename = "as")]
    var: String,
    group: Option<Yaml>,
    strict: Option<bool>,
    index: Option<Yaml>,
    transform: Option<Yaml>,
    flags: Option<Yaml>,
}

/// Reads the script at `path` (its payload beside it).
pub fn read_file(path: &str) -> Result<Script, ScriptError> {
    let err = |reason: String| ScriptError {
        file: path.to_string(),
        reason,
    };
    let bytes = crate::read_bounded(path, stampede_engine::input::Input::Config, "a script")
        .map_err(|e| err(e.0))?;
    let text =
        String::from_utf8(bytes).map_err(|e| err(format!("not UTF-8 text: {}", e.utf8_error())))?;
    let dir = std::path::Path::new(path)
        .parent()
        .unwrap_or(std::path::Path::new("."))
        .to_path_buf();
    parse(path, &text, |p| {
        let full = dir.join(p);
        crate::read_bounded(
            &full.to_string_lossy(),
            stampede_engine::input::Input::List,
            "a payload",
        )
        .map_err(|e| Invalid(format!("{}: {e}", full.display())))
    })
}

/// Reads a script's `text` (`file` names it in errors); `payload` reads a payload
/// file it names.
pub fn parse(
    file: &str,
    text: &str,
    payload: impl Fn(&str) -> Result<Vec<u8>, Invalid>,
) -> Result<Script, ScriptError> {
    let err = |reason: String| ScriptError {
        file: file.to_string(),
        reason,
    };
    if text.len() > MAX_SCRIPT {
        return Err(err(format!(
            "{} bytes; a script is at most {MAX_SCRIPT}",
            text.len()
        )));
    }
    let raw: RawScript = serde_norway::from_str(text).map_err(|e| {
        let at = e
            .location()
            .map(|l| format!("line {}, column {}: ", l.line(), l.column()))
            .unwrap_or_default();
        let msg = e.to_string();
        let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
        err(format!("{at}{msg}"))
    })?;
    let mut t = Translation::default();
    t.script(&raw, &payload).map_err(|e| err(e.0))
}

/// What a script is translated into, as it goes.
#[derive(Default)]
struct Translation {
    toml: String,
    /// Loops met so far: each gets variables of its own.
    loops: usize,
    expectations: BTreeMap<String, String>,
    /// Each scenario's request names, to keep them apart.
    names: BTreeMap<String, usize>,
    /// Default headers.
    defaults: BTreeMap<String, String>,
    /// A literal list a loop walks, by its variable.
    lists: Vec<(String, Vec<String>)>,
}

/// The innermost loop's variables: `$loopElement` and `$loopCount`.
#[derive(Clone, Copy)]
struct LoopVars<'a> {
    element: &'a str,
    count: &'a str,
}

fn refuse<T>(what: &str, instead: &str) -> Result<T, Invalid> {
    Err(format!("{what}: not run by stampede; {instead}").into())
}

fn seconds(v: &Yaml, field: &str) -> Result<Duration, Invalid> {
    match v {
        Yaml::Number(n) => n
            .as_f64()
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(Duration::from_secs_f64)
            .ok_or_else(|| Invalid(format!("{field}: {n} is not a number of seconds"))),
        Yaml::String(s) => {
            let s = s.trim();
            if let Ok(n) = s.parse::<f64>() {
                return seconds(&Yaml::from(n), field);
            }
            // Artillery's durations: "30s", "5m", "1h", "500ms", "2 minutes".
            let compact: String = s.split_whitespace().collect();
            let (num, unit) = compact.split_at(
                compact
                    .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                    .unwrap_or(compact.len()),
            );
            let n: f64 = num
                .parse()
                .map_err(|_| format!("{field}: {s:?} is not a duration"))?;
            let k = match unit {
                "ms" => 0.001,
                "s" | "sec" | "secs" | "second" | "seconds" => 1.0,
                "m" | "min" | "mins" | "minute" | "minutes" => 60.0,
                "h" | "hr" | "hour" | "hours" => 3600.0,
                _ => {
                    return Err(format!(
                        "{field}: {s:?} is not a duration (30, \"30s\", \"5m\", \"500ms\")"
                    )
                    .into())
                }
            };
            Ok(Duration::from_secs_f64(n * k))
        }
        _ => Err(format!("{field}: a number of seconds or a duration (\"30s\")").into()),
    }
}

fn text_of(v: &Yaml) -> Option<String> {
    match v {
        Yaml::String(s) => Some(s.clone()),
        Yaml::Number(n) => Some(n.to_string()),
        Yaml::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn json_of(v: &Yaml) -> Result<Json, Invalid> {
    serde_json::to_value(v).map_err(|e| Invalid(format!("not JSON: {e}")))
}

fn quoted(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

fn duration_text(d: Duration) -> String {
    format!("{}ms", d.as_millis())
}

/// Artillery's template names in stampede's: `$loopElement`, `$loopCount`,
/// `$processEnvironment.X`.
fn template(text: &str, l: Option<LoopVars>) -> Result<String, Invalid> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("{{") {
        out.push_str(&rest[..i]);
        let Some(j) = rest[i..].find("}}") else {
            out.push_str(&rest[i..]);
            return Ok(out);
        };
        let inner = rest[i + 2..i + j].trim();
        let name = match inner {
            "$loopElement" | "$loopCount" => {
                let Some(l) = l else {
                    return Err(format!("{{{{ {inner} }}}} outside a loop").into());
                };
                if inner == "$loopElement" {
                    l.element.to_string()
                } else {
                    l.count.to_string()
                }
            }
            _ => match inner.strip_prefix("$processEnvironment.") {
                Some(v) => format!("$env.{v}"),
                None => inner.to_string(),
            },
        };
        let _ = write!(out, "{{{{ {name} }}}}");
        rest = &rest[i + j + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

fn templated_json(v: &Json, l: Option<LoopVars>) -> Result<Json, Invalid> {
    Ok(match v {
        Json::String(s) => Json::String(template(s, l)?),
        Json::Array(a) => Json::Array(
            a.iter()
                .map(|x| templated_json(x, l))
                .collect::<Result<_, _>>()?,
        ),
        Json::Object(m) => Json::Object(
            m.iter()
                .map(|(k, x)| Ok((template(k, l)?, templated_json(x, l)?)))
                .collect::<Result<_, Invalid>>()?,
        ),
        other => other.clone(),
    })
}

fn form(s: &str) -> String {
    let mut out = String::new();
    // Placeholders go as they are: their values are sent as rendered.
    let mut rest = s;
    while !rest.is_empty() {
        if let Some(tail) = rest.strip_prefix("{{") {
            let end = tail.find("}}").map_or(tail.len(), |j| j + 2);
            out.push_str("{{");
            out.push_str(&tail[..end]);
            rest = &tail[end..];
            continue;
        }
        let c = rest.chars().next().expect("not empty");
        match c {
            'A'..='Z' | 'a'..='z' | '0'..='9' | '-' | '_' | '.' | '~' => out.push(c),
            ' ' => out.push('+'),
            _ => {
                let mut b = [0u8; 4];
                for byte in c.encode_utf8(&mut b).bytes() {
                    let _ = write!(out, "%{byte:02X}");
                }
            }
        }
        rest = &rest[c.len_utf8()..];
    }
    out
}

fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(A[(n >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

impl Translation {
    fn script(
        &mut self,
        raw: &RawScript,
        payload: &impl Fn(&str) -> Result<Vec<u8>, Invalid>,
    ) -> Result<Script, Invalid> {
        let c = &raw.config;
        if raw.before.is_some() || raw.after.is_some() {
            return refuse(
                "before/after",
                "a journey's first steps are what every user does first; a setup run before the load is a separate stampede run",
            );
        }
        for (key, given, instead) in [
            (
                "config.processor",
                c.processor.is_some(),
                "JavaScript functions do not run here: write what they compute as captures, conditions and templates (stampede help journeys)",
            ),
            ("config.engines", c.engines.is_some(), "only the HTTP engine runs here"),
            (
                "config.environments",
                c.environments.is_some(),
                "give the environment's target with --target",
            ),
            (
                "config.ensure",
                c.ensure.is_some(),
                "use stampede load's --assert on the journey's figures",
            ),
            (
                "config.includeFiles",
                c.include_files.is_some(),
                "the payload is read beside the script",
            ),
            (
                "config.statsInterval",
                c.stats_interval.is_some(),
                "the live view reports every second",
            ),
        ] {
            if given {
                return refuse(key, instead);
            }
        }
        if c.mode.as_deref().is_some_and(|m| m != "uniform") {
            return refuse(
                "config.mode: poisson",
                "arrivals are spread evenly, as Artillery's uniform mode",
            );
        }
        let mut expect = false;
        let mut by_endpoint = false;
        for name in c.plugins.keys() {
            match name.as_str() {
                "expect" => expect = true,
                "metrics-by-endpoint" => by_endpoint = true,
                other => {
                    return refuse(
                        &format!("config.plugins.{other}"),
                        "the plugins run here are expect and metrics-by-endpoint (stampede's outputs: --json, --html, --prometheus, --influx)",
                    )
                }
            }
        }
        let target = c
            .target
            .clone()
            .ok_or_else(|| "config.target: the URL of the server (or give --target)".to_string())?;
        let (inject, lengths) = phases(&c.phases)?;
        let timeout = match c.http.as_ref().and_then(|h| h.timeout.as_ref()) {
            Some(t) => Some(seconds(t, "config.http.timeout")?),
            None => None,
        };
        if let Some(h) = &c.http {
            if h.pool.is_some() || h.max_sockets.is_some() {
                return refuse(
                    "config.http.pool",
                    "each user has a connection of its own, as Artillery's default",
                );
            }
            if h.extended_metrics.is_some() {
                return refuse(
                    "config.http.extendedMetrics",
                    "the JSON result (--json) has the connection and wait times",
                );
            }
            if let Some(d) = &h.defaults {
                self.defaults.extend(d.headers.clone());
            }
        }
        if let Some(d) = &c.defaults {
            self.defaults.extend(d.headers.clone());
        }
        let insecure = c
            .tls
            .as_ref()
            .and_then(|t| t.reject_unauthorized)
            .is_some_and(|r| !r);
        // The payload, as a feeder whose header row is its fields.
        let mut feeder = None;
        let mut payload_path = String::new();
        let mut payload_csv = None;
        if let Some(p) = &c.payload {
            let p: RawPayload = match p {
                Yaml::Sequence(s) if s.len() == 1 => serde_norway::from_value(s[0].clone()),
                Yaml::Sequence(_) => {
                    return refuse("config.payload: several files", "give one payload file")
                }
                other => serde_norway::from_value(other.clone()),
            }
            .map_err(|e| format!("config.payload: {e}"))?;
            if p.delimiter.as_deref().is_some_and(|d| d != ",") {
                return refuse("config.payload.delimiter", "a payload is comma-separated");
            }
            if p.load_all == Some(true) || p.name.is_some() {
                return refuse(
                    "config.payload.loadAll",
                    "each user takes a row; a list to walk goes in config.variables",
                );
            }
            if p.cast.is_some() || p.skip_empty_lines.is_some() {
                return refuse(
                    "config.payload.cast/skipEmptyLines",
                    "values are text and empty lines are refused with their line",
                );
            }
            if p.fields.is_empty() {
                return Err("config.payload.fields: name the columns".into());
            }
            let order = match p.order.as_deref() {
                None | Some("random") => Order::Random,
                Some("sequence") => Order::Sequence,
                Some(o) => {
                    return Err(format!("config.payload.order: {o:?}: random or sequence").into())
                }
            };
            let bytes = payload(&p.path).map_err(|e| format!("config.payload.path: {e}"))?;
            let text = String::from_utf8(bytes).map_err(|e| {
                format!(
                    "config.payload.path: {}: not UTF-8: {}",
                    p.path,
                    e.utf8_error()
                )
            })?;
            let body = match p.skip_header {
                true => text.split_once('\n').map_or("", |x| x.1).to_string(),
                false => text,
            };
            let csv = format!("{}\n{body}", p.fields.join(","));
            let f = Feeder::parse(&p.path, csv.as_bytes(), Format::Csv).map_err(|e| {
                format!(
                    "config.payload: {e}{}",
                    if p.skip_header {
                        ""
                    } else {
                        " (lines counted from the fields' line)"
                    }
                )
            })?;
            feeder = Some((f, order));
            let stem = std::path::Path::new(&p.path)
                .file_stem()
                .map_or("payload".into(), |s| s.to_string_lossy().into_owned());
            payload_path = format!("{stem}.journey.csv");
            payload_csv = Some((payload_path.clone(), csv));
        }
        self.toml
            .push_str("# An Artillery script as a journey file\n");
        if let Some((_, order)) = &feeder {
            let _ = writeln!(
                self.toml,
                "[feeder]\nfile = {}\norder = {}\nexhausted = \"again\"",
                quoted(&payload_path),
                quoted(match order {
                    Order::Random => "random",
                    _ => "sequence",
                })
            );
        }
        if !c.variables.is_empty() {
            let _ = writeln!(self.toml, "[variables]");
            for (name, v) in &c.variables {
                let values: Vec<String> = match v {
                    Yaml::Sequence(s) => s
                        .iter()
                        .map(|x| {
                            text_of(x).ok_or_else(|| {
                                format!("config.variables.{name}: a list of texts or numbers")
                            })
                        })
                        .collect::<Result<_, _>>()?,
                    other => vec![text_of(other).ok_or_else(|| {
                        format!("config.variables.{name}: a text, a number or a list of them")
                    })?],
                };
                let list: Vec<String> = values.iter().map(|x| quoted(x)).collect();
                let _ = writeln!(self.toml, "{} = [{}]", quoted(name), list.join(", "));
            }
        }
        if raw.scenarios.is_empty() {
            return Err("scenarios: none; a script has one at least".into());
        }
        let mut body = String::new();
        let mut scenario_names: Vec<String> = Vec::new();
        for (i, s) in raw.scenarios.iter().enumerate() {
            let at = format!("scenarios[{i}]");
            if let Some(e) = s.engine.as_deref().filter(|e| *e != "http") {
                return refuse(
                    &format!("{at}.engine: {e}"),
                    if e == "ws" {
                        "load a WebSocket server with stampede load ws://… (stampede help websocket)"
                    } else {
                        "only the HTTP engine runs here"
                    },
                );
            }
            for (k, v) in [
                ("beforeScenario", &s.before_scenario),
                ("afterScenario", &s.after_scenario),
                ("beforeRequest", &s.before_request),
                ("afterResponse", &s.after_response),
            ] {
                if v.is_some() {
                    return refuse(&format!("{at}.{k}"), "JavaScript hooks do not run here: captures, conditions and templates do their work");
                }
            }
            let name = s.name.clone().unwrap_or_else(|| i.to_string());
            if scenario_names.contains(&name) {
                return Err(format!("{at}.name: {name:?} names another scenario too").into());
            }
            scenario_names.push(name.clone());
            if s.flow.is_empty() {
                return Err(
                    format!("{at}.flow: empty; a scenario makes a request at least").into(),
                );
            }
            let _ = writeln!(
                body,
                "\n[[journey]]\nname = {}\nweight = {}",
                quoted(&name),
                s.weight.unwrap_or(1).max(1)
            );
            self.names.clear();
            let mut steps = String::new();
            self.flow(
                &s.flow,
                &format!("{at}.flow"),
                "journey.step",
                None,
                &mut steps,
            )?;
            body.push_str(&steps);
        }
        if !self.lists.is_empty() {
            let _ = writeln!(self.toml, "[lists]");
            for (name, items) in &self.lists {
                let list: Vec<String> = items.iter().map(|x| quoted(x)).collect();
                let _ = writeln!(self.toml, "{name} = [{}]", list.join(", "));
            }
        }
        self.toml.push_str(&body);
        let journey = Journey::parse("the script's journey", &self.toml, |_| match &feeder {
            Some((f, _)) => Ok(f.clone()),
            None => unreachable!("a feeder table only with a payload"),
        })
        .map_err(|e| e.reason)?;
        Ok(Script {
            journey,
            toml: std::mem::take(&mut self.toml),
            target,
            inject,
            phases: lengths,
            timeout,
            insecure,
            expect,
            by_endpoint,
            expectations: std::mem::take(&mut self.expectations),
            payload: payload_csv,
        })
    }
}

mod flow;
mod phases;

use phases::phases;

#[cfg(test)]
mod tests;
