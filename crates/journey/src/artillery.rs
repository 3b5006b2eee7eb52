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
    /// A phase's name: taken, and not printed (no phase lines are).
    #[serde(rename = "name")]
    _name: Option<String>,
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
        let inject = phases(&c.phases)?;
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
            timeout,
            insecure,
            expect,
            by_endpoint,
            expectations: std::mem::take(&mut self.expectations),
            payload: payload_csv,
        })
    }

    /// Writes a flow's actions as steps under `table` (`journey.step`, or a loop
    /// group's `journey.step.step`).
    fn flow(
        &mut self,
        actions: &[RawAction],
        at: &str,
        table: &str,
        l: Option<LoopVars>,
        out: &mut String,
    ) -> Result<(), Invalid> {
        for (i, a) in actions.iter().enumerate() {
            let at = format!("{at}[{i}]");
            let methods = [
                ("GET", &a.get),
                ("POST", &a.post),
                ("PUT", &a.put),
                ("PATCH", &a.patch),
                ("DELETE", &a.delete),
                ("HEAD", &a.head),
                ("OPTIONS", &a.options),
            ];
            let given = methods.iter().filter(|(_, r)| r.is_some()).count()
                + [a.think.is_some(), a.repeat.is_some(), a.log.is_some()]
                    .iter()
                    .filter(|x| **x)
                    .count();
            if a.function.is_some() {
                return refuse(&format!("{at}.function"), "JavaScript functions do not run here: captures, conditions and templates do their work");
            }
            if a.parallel.is_some() {
                return refuse(
                    &format!("{at}.parallel"),
                    "a user sends one request at a time here",
                );
            }
            if a.while_true.is_some() {
                return refuse(
                    &format!("{at}.whileTrue"),
                    "a loop turns a count of times or over a list",
                );
            }
            if given != 1 {
                return Err(format!(
                    "{at}: one action (get, post, put, patch, delete, head, options, think, loop or log)"
                ).into());
            }
            if (a.count.is_some() || a.over.is_some()) && a.repeat.is_none() {
                return Err(format!("{at}: count and over belong to a loop").into());
            }
            if let Some((method, Some(r))) = methods.iter().find(|(_, r)| r.is_some()) {
                self.request(
                    method,
                    r,
                    &format!("{at}.{}", method.to_lowercase()),
                    table,
                    l,
                    out,
                )?;
            } else if let Some(t) = &a.think {
                let d = seconds(t, &format!("{at}.think"))?;
                let _ = writeln!(out, "\n[[{table}]]\nthink = {}", quoted(&duration_text(d)));
            } else if let Some(line) = &a.log {
                let _ = writeln!(out, "\n[[{table}]]\nlog = {}", quoted(&template(line, l)?));
            } else if let Some(inner) = &a.repeat {
                self.loops += 1;
                let (element, count) = (
                    format!("loop_element_{}", self.loops),
                    format!("loop_count_{}", self.loops),
                );
                let mut spec = String::new();
                match (&a.count, &a.over) {
                    (_, Some(Yaml::String(var))) => {
                        let var = var
                            .trim()
                            .trim_start_matches("{{")
                            .trim_end_matches("}}")
                            .trim();
                        let _ = write!(
                            spec,
                            "over = {}, as = {}, index = {}",
                            quoted(var),
                            quoted(&element),
                            quoted(&count)
                        );
                    }
                    (_, Some(Yaml::Sequence(items))) => {
                        let items = items
                            .iter()
                            .map(|x| {
                                text_of(x)
                                    .ok_or_else(|| format!("{at}.over: a list of texts or numbers"))
                            })
                            .collect::<Result<Vec<_>, _>>()?;
                        if items.iter().any(|x| x.contains("{{")) {
                            return refuse(
                                &format!("{at}.over: a template in a list"),
                                "a list's items are sent as written; loop over a captured list instead",
                            );
                        }
                        let list = format!("loop_list_{}", self.loops);
                        self.lists.push((list.clone(), items));
                        let _ = write!(
                            spec,
                            "over = {}, as = {}, index = {}",
                            quoted(&list),
                            quoted(&element),
                            quoted(&count)
                        );
                    }
                    (_, Some(_)) => {
                        return Err(format!("{at}.over: a variable's name or a list").into())
                    }
                    (Some(n), None) => {
                        let text = text_of(n).ok_or_else(|| format!("{at}.count: a number"))?;
                        let (from, to) = match text.split_once('-') {
                            Some((a, b)) => (a.trim().parse::<u32>(), b.trim().parse::<u32>()),
                            None => (Ok(0), text.trim().parse::<u32>()),
                        };
                        let (Ok(from), Ok(to)) = (from, to) else {
                            return Err(format!(
                                "{at}.count: {text:?}: a number, or a range \"1-10\""
                            )
                            .into());
                        };
                        if to <= from {
                            return Err(format!("{at}.count: {text:?}: no turn").into());
                        }
                        // $loopElement is the turn's number where there is no list.
                        let _ = write!(
                            spec,
                            "count = {}, index = {}, first = {from}",
                            to - from,
                            quoted(&count)
                        );
                        let _ = writeln!(out, "\n[[{table}]]\nloop = {{ {spec} }}");
                        self.flow(
                            inner,
                            &format!("{at}.loop"),
                            &format!("{table}.step"),
                            Some(LoopVars {
                                element: &count,
                                count: &count,
                            }),
                            out,
                        )?;
                        continue;
                    }
                    (None, None) => return Err(format!("{at}: a loop needs count or over").into()),
                }
                let _ = writeln!(out, "\n[[{table}]]\nloop = {{ {spec} }}");
                self.flow(
                    inner,
                    &format!("{at}.loop"),
                    &format!("{table}.step"),
                    Some(LoopVars {
                        element: &element,
                        count: &count,
                    }),
                    out,
                )?;
            }
        }
        Ok(())
    }

    fn request(
        &mut self,
        method: &str,
        r: &RawRequest,
        at: &str,
        table: &str,
        l: Option<LoopVars>,
        out: &mut String,
    ) -> Result<(), Invalid> {
        for (k, given) in [
            ("formData", r.form_data.is_some()),
            ("beforeRequest", r.before_request.is_some()),
            ("afterResponse", r.after_response.is_some()),
            ("match", r.matches.is_some()),
            ("cookie", r.cookie.is_some()),
            ("gzip", r.gzip.is_some()),
        ] {
            if given {
                let instead = match k {
                    "formData" => "multipart bodies are not sent; use form (URL-encoded) or body",
                    "match" => "use expect (its statusCode, contentType, hasProperty, hasHeader and headerEquals run)",
                    "cookie" => "each user's jar sends what the server sets; a header sends a cookie of your own",
                    "gzip" => "answers are read as they come; send Accept-Encoding in headers if wanted",
                    _ => "JavaScript hooks do not run here: captures, conditions and templates do their work",
                };
                return refuse(&format!("{at}.{k}"), instead);
            }
        }
        if r.follow_redirect == Some(true) {
            return refuse(
                &format!("{at}.followRedirect"),
                "each answer is the step's own: a redirect is another step",
            );
        }
        let base = match &r.name {
            Some(n) => n.clone(),
            None => r.url.split('?').next().unwrap_or(&r.url).to_string(),
        };
        let n = self.names.entry(base.clone()).or_default();
        *n += 1;
        let name = if *n == 1 {
            base
        } else {
            format!("{base} #{n}")
        };
        let mut url = template(&r.url, l)?;
        if let Some(qs) = &r.qs {
            let pairs: Vec<String> = qs
                .iter()
                .map(|(k, v)| {
                    let v = text_of(v).ok_or_else(|| format!("{at}.qs.{k}: a text or a number"))?;
                    Ok(format!(
                        "{}={}",
                        form(&template(k, l)?),
                        form(&template(&v, l)?)
                    ))
                })
                .collect::<Result<_, Invalid>>()?;
            url.push(if url.contains('?') { '&' } else { '?' });
            url.push_str(&pairs.join("&"));
        }
        let mut headers: BTreeMap<String, String> = self.defaults.clone();
        for (k, v) in &r.headers {
            headers.retain(|h, _| !h.eq_ignore_ascii_case(k));
            headers.insert(k.clone(), v.clone());
        }
        if let Some(a) = &r.auth {
            if a.user.contains("{{") || a.pass.contains("{{") {
                return Err(format!("{at}.auth: a user and password of their own; for templated ones send an Authorization header").into());
            }
            headers.insert(
                "Authorization".into(),
                format!(
                    "Basic {}",
                    base64(format!("{}:{}", a.user, a.pass).as_bytes())
                ),
            );
        }
        let bodies = [r.json.is_some(), r.body.is_some(), r.form.is_some()];
        if bodies.iter().filter(|b| **b).count() > 1 {
            return Err(format!("{at}: one of json, body or form").into());
        }
        let has_type =
            |h: &BTreeMap<String, String>| h.keys().any(|k| k.eq_ignore_ascii_case("content-type"));
        let body = if let Some(j) = &r.json {
            if !has_type(&headers) {
                headers.insert("Content-Type".into(), "application/json".into());
            }
            let j = templated_json(&json_of(j).map_err(|e| format!("{at}.json: {e}"))?, l)?;
            Some(crate::journey::json_value_template(&j).map_err(|e| format!("{at}.json: {e}"))?)
        } else if let Some(b) = &r.body {
            Some(template(b, l)?)
        } else if let Some(f) = &r.form {
            if !has_type(&headers) {
                headers.insert(
                    "Content-Type".into(),
                    "application/x-www-form-urlencoded".into(),
                );
            }
            let pairs: Vec<String> = f
                .iter()
                .map(|(k, v)| {
                    let v =
                        text_of(v).ok_or_else(|| format!("{at}.form.{k}: a text or a number"))?;
                    Ok(format!(
                        "{}={}",
                        form(&template(k, l)?),
                        form(&template(&v, l)?)
                    ))
                })
                .collect::<Result<_, Invalid>>()?;
            Some(pairs.join("&"))
        } else {
            None
        };
        let _ = writeln!(out, "\n[[{table}]]\nname = {}", quoted(&name));
        if method != "GET" {
            let _ = writeln!(out, "method = {}", quoted(method));
        }
        let _ = writeln!(out, "url = {}", quoted(&url));
        if let Some(cond) = &r.if_true {
            let _ = writeln!(out, "if = {}", quoted(cond));
        }
        if !headers.is_empty() {
            let hs: Vec<String> = headers
                .iter()
                .map(|(k, v)| Ok(format!("{} = {}", quoted(k), quoted(&template(v, l)?))))
                .collect::<Result<_, Invalid>>()?;
            let _ = writeln!(out, "headers = {{ {} }}", hs.join(", "));
        }
        if let Some(b) = body {
            let _ = writeln!(out, "body = {}", quoted(&b));
        }
        if let Some(c) = &r.capture {
            let list = match c {
                Yaml::Sequence(s) => s.clone(),
                other => vec![other.clone()],
            };
            let mut caps = Vec::new();
            for (k, c) in list.into_iter().enumerate() {
                let c: RawCapture =
                    serde_norway::from_value(c).map_err(|e| format!("{at}.capture[{k}]: {e}"))?;
                let cat = format!("{at}.capture[{k}]");
                if c.selector.is_some() || c.xpath.is_some() {
                    return refuse(
                        &format!("{cat}.selector"),
                        "capture from HTML with a regexp",
                    );
                }
                if c.transform.is_some() || c.index.is_some() || c.flags.is_some() {
                    return refuse(
                        &format!("{cat}.transform/index/flags"),
                        "a capture takes the first match, or every match with all",
                    );
                }
                if c.group.as_ref().and_then(text_of).is_some_and(|g| g != "1") {
                    return refuse(
                        &format!("{cat}.group"),
                        "a regexp capture takes its first group",
                    );
                }
                let (kind, expr) = match (&c.json, &c.regexp, &c.header) {
                    (Some(j), None, None) => ("json", j.clone()),
                    (None, Some(r), None) => ("regexp", r.clone()),
                    (None, None, Some(h)) => ("header", h.clone()),
                    _ => return Err(format!("{cat}: one of json, regexp or header").into()),
                };
                let default = match c.strict {
                    Some(false) => ", default = \"\"",
                    _ => "",
                };
                caps.push(format!(
                    "{{ {kind} = {}, as = {}{default} }}",
                    quoted(&template(&expr, l)?),
                    quoted(&c.var)
                ));
            }
            let _ = writeln!(out, "capture = [{}]", caps.join(", "));
        }
        if let Some(e) = &r.expect {
            let list = match e {
                Yaml::Sequence(s) => s.clone(),
                other => vec![other.clone()],
            };
            let mut checks = Vec::new();
            for (k, e) in list.iter().enumerate() {
                let eat = format!("{at}.expect[{k}]");
                let Yaml::Mapping(m) = e else {
                    return Err(format!("{eat}: an expectation, as statusCode: 200").into());
                };
                for (kind, v) in m {
                    let kind = kind.as_str().unwrap_or_default();
                    let line = match kind {
                        "statusCode" => {
                            let codes = match v {
                                Yaml::Sequence(s) => s.iter().filter_map(text_of).collect::<Vec<_>>(),
                                other => text_of(other).into_iter().collect(),
                            };
                            if codes.is_empty() {
                                return Err(format!("{eat}.statusCode: a status or a list of them").into());
                            }
                            format!("status {}", codes.join(","))
                        }
                        "contentType" => {
                            let t = text_of(v).ok_or_else(|| format!("{eat}.contentType: a text"))?;
                            if t == "json" {
                                "header Content-Type contains json".into()
                            } else {
                                format!("header Content-Type == {t}")
                            }
                        }
                        "hasProperty" => {
                            let p = text_of(v).ok_or_else(|| format!("{eat}.hasProperty: a property's path"))?;
                            format!("json $.{p} exists")
                        }
                        "hasHeader" => {
                            let h = text_of(v).ok_or_else(|| format!("{eat}.hasHeader: a header's name"))?;
                            format!("header {h}")
                        }
                        "headerEquals" => {
                            let pair = match v {
                                Yaml::Sequence(s) if s.len() == 2 => (text_of(&s[0]), text_of(&s[1])),
                                _ => (None, None),
                            };
                            let (Some(h), Some(val)) = pair else {
                                return Err(format!("{eat}.headerEquals: [NAME, VALUE]").into());
                            };
                            if val.contains("{{") {
                                return refuse(&format!("{eat}.headerEquals"), "a header is compared with a value of its own, not a template");
                            }
                            format!("header {h} == {val}")
                        }
                        other => {
                            return refuse(
                                &format!("{eat}.{other}"),
                                "the expectations run are statusCode, contentType, hasProperty, hasHeader and headerEquals",
                            )
                        }
                    };
                    self.expectations.insert(line.clone(), kind.to_string());
                    checks.push(quoted(&line));
                }
            }
            let _ = writeln!(out, "check = [{}]", checks.join(", "));
        }
        Ok(())
    }
}

/// The phases as Gatling injection steps.
fn phases(raw: &[RawPhase]) -> Result<Vec<String>, Invalid> {
    if raw.is_empty() {
        return Err("config.phases: none; give one at least (duration and arrivalRate)".into());
    }
    let mut steps = Vec::new();
    for (i, p) in raw.iter().enumerate() {
        let at = format!("config.phases[{i}]");
        if p.max_vusers.is_some() {
            return refuse(
                &format!("{at}.maxVusers"),
                "users arrive as the phase says; cap the run with -d",
            );
        }
        let secs = |d: Duration| format!("{} milliseconds", d.as_millis());
        if let Some(pause) = &p.pause {
            let d = seconds(pause, &format!("{at}.pause"))?;
            steps.push(format!("nothingFor({})", secs(d)));
            continue;
        }
        let d = seconds(
            p.duration
                .as_ref()
                .ok_or_else(|| format!("{at}.duration: how long the phase lasts"))?,
            &format!("{at}.duration"),
        )?;
        if d.is_zero() {
            return Err(format!("{at}.duration: 0; a phase lasts a while").into());
        }
        let step = match (p.arrival_rate, p.ramp_to, p.arrival_count) {
            (Some(r), None, None) => format!("constantUsersPerSec({r}) during({})", secs(d)),
            (Some(r), Some(to), None) => {
                format!("rampUsersPerSec({r}) to({to}) during({})", secs(d))
            }
            (None, None, Some(n)) => format!("rampUsers({n}) during({})", secs(d)),
            (None, Some(to), None) => format!("rampUsersPerSec(0) to({to}) during({})", secs(d)),
            _ => {
                return Err(format!(
                    "{at}: arrivalRate (with rampTo if it ramps) or arrivalCount, with duration"
                )
                .into())
            }
        };
        steps.push(step);
    }
    Ok(steps)
}

#[cfg(test)]
mod tests;
