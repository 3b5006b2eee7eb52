//! Benchmark plans: what to start, what to send, how to verify it and how often.
//!
//! A plan is TOML (documented field by field in docs/plan.md). Every error names the
//! file, the line and the field: serde errors carry toml's span, and values the plan
//! parser checks itself (durations, injection steps, headers, load shapes) are read as
//! `toml::Spanned` so their line is known too.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use stampede_engine::arrivals::Period;
use stampede_engine::inject::Profile;
use stampede_engine::{Session, Shape};
use toml::Spanned;

/// A plan error: where it is and what is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}:{line}: {field}: {message}")]
pub struct PlanError {
    /// The plan file.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// The field (dotted path) or `plan`.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

/// How runs are repeated.
#[derive(Debug, Clone, PartialEq)]
pub struct Runs {
    /// Send one request first to wake the target (JIT, caches, connection setup).
    pub primer: bool,
    /// Warm-up runs, discarded ("all results are from the second run").
    pub warmup: u32,
    /// Measured runs.
    pub repetitions: u32,
    /// Pause between runs.
    pub pause: Duration,
}

/// A server under test.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// Name used in tables.
    pub name: String,
    /// How to reach or start it.
    pub kind: TargetKind,
    /// Readiness check path (GET must answer).
    pub ready_path: String,
    /// How long to wait for readiness.
    pub ready_timeout: Duration,
    /// Command whose output is the target's version.
    pub version: Option<String>,
    /// CPUs to pin the target to.
    pub cpus: Vec<usize>,
    /// A fixed port for a started target (default: a free port chosen per start).
    pub port: Option<u16>,
    /// Speak HTTPS to it, verifying its certificate as said.
    pub tls: Option<TargetTls>,
    /// Line of the `[[target]]` table.
    pub line: usize,
}

/// How the lab checks an HTTPS target's certificate.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TargetTls {
    /// Accept any certificate (typical for a self-signed one).
    pub insecure: bool,
    /// Trust only this CA file (PEM); relative paths are relative to the plan.
    pub cacert: Option<PathBuf>,
}

/// Started by the lab, or already running elsewhere.
#[derive(Debug, Clone, PartialEq)]
pub enum TargetKind {
    /// A command run through `sh -c`; `{port}` and `{stampede}` are substituted.
    Command {
        /// The command line.
        start: String,
        /// Extra environment.
        env: BTreeMap<String, String>,
        /// Working directory.
        cwd: Option<PathBuf>,
        /// SIGTERM, then SIGKILL after this long.
        stop_grace: Duration,
    },
    /// An external server, not started or stopped: `http://host:port` or
    /// `https://host:port`.
    External {
        /// Base URL.
        url: String,
    },
}

/// What verification failure does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnFailure {
    /// The target is not measured on that scenario.
    Fail,
    /// Measured, and flagged.
    Warn,
}

/// Checks made on one response before any load.
#[derive(Debug, Clone, PartialEq)]
pub struct Verify {
    /// Expected status.
    pub status: u16,
    /// Content-Type must contain this.
    pub content_type: Option<String>,
    /// Body must equal this.
    pub body: Option<String>,
    /// Body must contain this.
    pub body_contains: Option<String>,
    /// Body length must be this.
    pub body_length: Option<usize>,
    /// The body must be a JSON object with this key.
    pub json_key: Option<String>,
    /// Headers that must be present.
    pub headers: Vec<String>,
    /// A second request a second later must carry a different Date.
    pub date_fresh: bool,
    /// What a failed check does.
    pub on_failure: OnFailure,
}

impl Default for Verify {
    fn default() -> Self {
        Verify {
            status: 200,
            content_type: None,
            body: None,
            body_contains: None,
            body_length: None,
            json_key: None,
            headers: vec!["Server".into(), "Date".into()],
            date_fresh: false,
            on_failure: OnFailure::Fail,
        }
    }
}

/// Request format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// stampede's HTTP/1.1 request.
    Native,
    /// ab's HTTP/1.0 request.
    Ab,
}

/// One request of a scenario's list (`[[scenario.steps]]`): what a virtual user or
/// session sends, in order, with a pause after each response.
#[derive(Debug, Clone)]
pub struct Step {
    /// Method.
    pub method: String,
    /// Path and query.
    pub path: String,
    /// Extra headers (after the scenario's).
    pub headers: Vec<(String, String)>,
    /// Body.
    pub body: Option<Vec<u8>>,
    /// Pause after the response.
    pub pause: Duration,
    /// Checks for this step's response (default: the scenario's).
    pub verify: Option<Verify>,
}

/// One workload.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Name used in tables.
    pub name: String,
    /// Method.
    pub method: String,
    /// Path and query.
    pub path: String,
    /// Extra headers.
    pub headers: Vec<(String, String)>,
    /// Body.
    pub body: Option<Vec<u8>>,
    /// Request format.
    pub style: Style,
    /// Load shape.
    pub shape: Shape,
    /// Per-session scenario (session shapes).
    pub session: Session,
    /// Pool connections.
    pub connections: usize,
    /// Request count bound.
    pub requests: Option<u64>,
    /// Duration bound.
    pub duration: Option<Duration>,
    /// Keep-alive.
    pub keepalive: bool,
    /// Pipelining depth; over HTTP/2, the streams kept open per connection.
    pub pipeline: usize,
    /// Speak HTTP/2 (h2c with prior knowledge, or ALPN h2 over TLS).
    pub http2: bool,
    /// A list of requests each session makes in order (session shapes); empty: every
    /// call sends the scenario's one request.
    pub steps: Vec<Step>,
    /// Request timeout.
    pub timeout: Duration,
    /// Verification.
    pub verify: Verify,
    /// Assertions checked on every measured run.
    pub asserts: Vec<stampede_engine::assert::Assertion>,
    /// Line of the `[[scenario]]` table.
    pub line: usize,
}

/// A whole plan.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Name.
    pub name: String,
    /// What the plan compares and how to read it, printed with its reports.
    pub description: Option<String>,
    /// Repetition settings.
    pub runs: Runs,
    /// CPUs for the load generator.
    pub client_cpus: Vec<usize>,
    /// Load generator threads (default: one per client CPU).
    pub client_threads: Option<usize>,
    /// Targets, compared in this order (the first is the baseline).
    pub targets: Vec<Target>,
    /// Scenarios.
    pub scenarios: Vec<Scenario>,
    /// The plan's source text, stored with results.
    pub source: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPlan {
    name: Option<String>,
    description: Option<String>,
    runs: Option<RawRuns>,
    client: Option<RawClient>,
    #[serde(default, rename = "target")]
    targets: Vec<Spanned<RawTarget>>,
    #[serde(default, rename = "scenario")]
    scenarios: Vec<Spanned<RawScenario>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRuns {
    primer: Option<bool>,
    warmup: Option<u32>,
    repetitions: Option<Spanned<u32>>,
    pause: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClient {
    cpus: Option<Vec<usize>>,
    threads: Option<Spanned<usize>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTarget {
    name: Spanned<String>,
    start: Option<String>,
    url: Option<Spanned<String>>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<String>,
    ready: Option<Spanned<String>>,
    ready_timeout: Option<Spanned<String>>,
    version: Option<String>,
    #[serde(default)]
    cpus: Vec<usize>,
    port: Option<Spanned<u16>>,
    stop_grace: Option<Spanned<String>>,
    tls: Option<bool>,
    insecure: Option<Spanned<bool>>,
    cacert: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSessions {
    count: u64,
    rate: Option<f64>,
    period: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVerify {
    status: Option<u16>,
    content_type: Option<String>,
    body: Option<String>,
    body_contains: Option<String>,
    body_length: Option<usize>,
    json_key: Option<String>,
    headers: Option<Vec<String>>,
    date_fresh: Option<bool>,
    on_failure: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    path: Spanned<String>,
    method: Option<Spanned<String>>,
    #[serde(default)]
    headers: Vec<Spanned<String>>,
    body: Option<String>,
    pause: Option<Spanned<String>>,
    verify: Option<RawVerify>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: Spanned<String>,
    path: Option<Spanned<String>>,
    method: Option<Spanned<String>>,
    #[serde(default)]
    headers: Vec<Spanned<String>>,
    body: Option<String>,
    style: Option<Spanned<String>>,
    connections: Option<Spanned<usize>>,
    requests: Option<Spanned<u64>>,
    duration: Option<Spanned<String>>,
    keepalive: Option<Spanned<bool>>,
    pipeline: Option<Spanned<usize>>,
    http2: Option<bool>,
    streams: Option<Spanned<usize>>,
    rate: Option<f64>,
    poisson: Option<bool>,
    inject: Option<Spanned<Vec<String>>>,
    sessions: Option<RawSessions>,
    calls: Option<Spanned<u32>>,
    burst: Option<Spanned<u32>>,
    think: Option<Spanned<String>>,
    timeout: Option<Spanned<String>>,
    verify: Option<RawVerify>,
    steps: Option<Spanned<Vec<RawStep>>>,
    #[serde(default, rename = "assert")]
    asserts: Vec<Spanned<String>>,
}

struct Ctx<'a> {
    file: &'a str,
    src: &'a str,
}

impl Ctx<'_> {
    fn line(&self, offset: usize) -> usize {
        self.src[..offset.min(self.src.len())].matches('\n').count() + 1
    }

    fn err(&self, offset: usize, field: &str, message: impl Into<String>) -> PlanError {
        PlanError {
            file: self.file.to_string(),
            line: self.line(offset),
            field: field.to_string(),
            message: message.into(),
        }
    }

    fn duration(&self, v: &Spanned<String>, field: &str) -> Result<Duration, PlanError> {
        stampede_engine::spec::parse_duration(v.get_ref())
            .map_err(|m| self.err(v.span().start, field, m))
    }
}

impl Plan {
    /// Parses a plan; `file` names it in errors.
    pub fn parse(src: &str, file: &str) -> Result<Plan, PlanError> {
        let cx = Ctx { file, src };
        let raw: RawPlan = toml::from_str(src).map_err(|e| {
            let offset = e.span().map_or(0, |s| s.start);
            let msg = e.message().to_string();
            let field = match msg.split('`').nth(1).filter(|_| msg.contains("field")) {
                // "unknown field `x`" and "missing field `x`" name it; within its table.
                Some(name) => match table_at(src, offset) {
                    Some(t) => format!("{t}.{name}"),
                    None => name.to_string(),
                },
                // A wrong type or value: the key written where the error points.
                None => field_at(src, offset).unwrap_or_else(|| "plan".into()),
            };
            cx.err(offset, &field, msg)
        })?;
        let runs = match raw.runs {
            None => Runs {
                primer: true,
                warmup: 1,
                repetitions: 3,
                pause: Duration::from_secs(1),
            },
            Some(r) => {
                let repetitions = match r.repetitions {
                    Some(n) if *n.get_ref() == 0 => {
                        return Err(cx.err(
                            n.span().start,
                            "runs.repetitions",
                            "must be at least 1",
                        ))
                    }
                    Some(n) => *n.get_ref(),
                    None => 3,
                };
                Runs {
                    primer: r.primer.unwrap_or(true),
                    warmup: r.warmup.unwrap_or(1),
                    repetitions,
                    pause: match &r.pause {
                        Some(p) => cx.duration(p, "runs.pause")?,
                        None => Duration::from_secs(1),
                    },
                }
            }
        };
        if raw.targets.is_empty() {
            return Err(cx.err(src.len(), "target", "the plan has no [[target]]"));
        }
        if raw.scenarios.is_empty() {
            return Err(cx.err(src.len(), "scenario", "the plan has no [[scenario]]"));
        }
        let mut targets = Vec::new();
        for t in &raw.targets {
            let at = t.span().start;
            let t = t.get_ref();
            let name = t.name.get_ref().trim().to_string();
            if name.is_empty() {
                return Err(cx.err(t.name.span().start, "target.name", "must not be empty"));
            }
            if targets.iter().any(|x: &Target| x.name == name) {
                return Err(cx.err(
                    t.name.span().start,
                    "target.name",
                    format!("{name:?} is used twice"),
                ));
            }
            let kind = match (&t.start, &t.url) {
                (Some(start), None) => TargetKind::Command {
                    start: start.clone(),
                    env: t.env.clone(),
                    cwd: t.cwd.as_ref().map(PathBuf::from),
                    stop_grace: match &t.stop_grace {
                        Some(g) => cx.duration(g, "target.stop_grace")?,
                        None => Duration::from_secs(5),
                    },
                },
                (None, Some(url)) => {
                    let u = url.get_ref().trim_end_matches('/').to_string();
                    if !u.starts_with("http://") && !u.starts_with("https://") {
                        return Err(cx.err(
                            url.span().start,
                            "target.url",
                            "must start with http:// or https://",
                        ));
                    }
                    if u.starts_with("http://") && t.tls == Some(true) {
                        return Err(cx.err(
                            url.span().start,
                            "target.url",
                            "tls = true needs an https:// url",
                        ));
                    }
                    TargetKind::External { url: u }
                }
                _ => {
                    return Err(cx.err(
                        at,
                        "target.start",
                        format!("target {name:?} needs exactly one of start (a command, with {{port}}) or url (a running server)"),
                    ))
                }
            };
            let https = t.tls == Some(true)
                || t.url
                    .as_ref()
                    .is_some_and(|u| u.get_ref().starts_with("https://"));
            let tls = match (&t.insecure, &t.cacert) {
                (Some(i), Some(_)) if *i.get_ref() => {
                    return Err(cx.err(
                        i.span().start,
                        "target.insecure",
                        "insecure and cacert exclude each other",
                    ))
                }
                (Some(i), _) if !https => {
                    return Err(cx.err(
                        i.span().start,
                        "target.insecure",
                        "applies to HTTPS targets: add tls = true",
                    ))
                }
                (_, Some(c)) if !https => {
                    return Err(cx.err(
                        c.span().start,
                        "target.cacert",
                        "applies to HTTPS targets: add tls = true",
                    ))
                }
                _ if !https => None,
                (i, c) => Some(TargetTls {
                    insecure: i.as_ref().is_some_and(|i| *i.get_ref()),
                    cacert: c.as_ref().map(|c| PathBuf::from(c.get_ref())),
                }),
            };
            targets.push(Target {
                name,
                tls,
                kind,
                ready_path: match &t.ready {
                    Some(r) => {
                        check_request(&cx, "target.ready", r.span().start, "GET", r.get_ref())?;
                        r.get_ref().clone()
                    }
                    None => "/".into(),
                },
                ready_timeout: match &t.ready_timeout {
                    Some(d) => cx.duration(d, "target.ready_timeout")?,
                    None => Duration::from_secs(20),
                },
                version: t.version.clone(),
                cpus: t.cpus.clone(),
                port: match (&t.port, &t.url) {
                    (Some(p), Some(_)) => {
                        return Err(cx.err(
                            p.span().start,
                            "target.port",
                            "a target given by url has its port in the url",
                        ))
                    }
                    (Some(p), None) if *p.get_ref() == 0 => {
                        return Err(cx.err(p.span().start, "target.port", "must be 1 to 65535"))
                    }
                    (p, _) => p.as_ref().map(|p| *p.get_ref()),
                },
                line: cx.line(at),
            });
        }
        let mut scenarios: Vec<Scenario> = Vec::new();
        for s in &raw.scenarios {
            let sc = scenario(&cx, s)?;
            if scenarios.iter().any(|x| x.name == sc.name) {
                return Err(cx.err(
                    s.get_ref().name.span().start,
                    "scenario.name",
                    format!("{:?} is used twice", sc.name),
                ));
            }
            scenarios.push(sc);
        }
        let client = raw.client.unwrap_or(RawClient {
            cpus: None,
            threads: None,
        });
        if let Some(t) = client.threads.as_ref().filter(|t| *t.get_ref() == 0) {
            return Err(cx.err(t.span().start, "client.threads", "must be at least 1"));
        }
        Ok(Plan {
            name: raw.name.unwrap_or_else(|| file.to_string()),
            description: raw.description,
            runs,
            client_cpus: client.cpus.unwrap_or_default(),
            client_threads: client.threads.map(Spanned::into_inner),
            targets,
            scenarios,
            source: src.to_string(),
        })
    }

    /// Reads and parses a plan file.
    pub fn load(path: &std::path::Path) -> Result<Plan, PlanError> {
        let file = path.display().to_string();
        let src = std::fs::read_to_string(path).map_err(|e| PlanError {
            file: file.clone(),
            line: 0,
            field: "plan".into(),
            message: format!("cannot read: {e}"),
        })?;
        let mut plan = Plan::parse(&src, &file)?;
        // A relative working directory is relative to the plan, wherever bench runs.
        let base = path.parent().unwrap_or(std::path::Path::new("."));
        for t in &mut plan.targets {
            if let TargetKind::Command { cwd: Some(d), .. } = &mut t.kind {
                if d.is_relative() {
                    *d = base.join(&*d);
                }
            }
            if let Some(TargetTls {
                cacert: Some(c), ..
            }) = &mut t.tls
            {
                if c.is_relative() {
                    *c = base.join(&*c);
                }
            }
        }
        Ok(plan)
    }
}

/// The table (`scenario`, `runs`, …) whose header is the last one at or before `offset`.
fn table_at(src: &str, offset: usize) -> Option<String> {
    let upto = &src[..src[offset.min(src.len())..]
        .find('\n')
        .map_or(src.len(), |i| offset + i)];
    upto.lines().rev().find_map(|l| {
        let l = l.trim();
        l.starts_with('[')
            .then(|| l.trim_matches(|c| c == '[' || c == ']').trim().to_string())
    })
}

/// The dotted field at `offset`: its table, then the keys of any inline tables the
/// offset is inside, then the key being assigned (`scenario.sessions.count`).
fn field_at(src: &str, offset: usize) -> Option<String> {
    let offset = offset.min(src.len());
    let line_start = src[..offset].rfind('\n').map_or(0, |i| i + 1);
    let prefix = &src[line_start..offset];
    let (mut stack, mut key, mut pending) = (Vec::new(), String::new(), None::<String>);
    let mut quote = None;
    for c in prefix.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '=') => pending = Some(std::mem::take(&mut key)),
            (None, '{') => stack.extend(pending.take()),
            (None, '}') => {
                stack.pop();
            }
            (None, ',') => key.clear(),
            (None, c) if c.is_alphanumeric() || c == '_' || c == '-' => key.push(c),
            (None, '.') => key.push('.'),
            _ => {}
        }
    }
    let last = pending?;
    let mut parts: Vec<String> = table_at(src, offset).into_iter().collect();
    parts.extend(stack);
    parts.push(last);
    Some(parts.join("."))
}

/// Refuses a method or path that would change the request's framing on the wire (CR,
/// LF, whitespace, controls), by the engine's own check.
fn check_request(
    cx: &Ctx,
    field: &str,
    at: usize,
    method: &str,
    path: &str,
) -> Result<(), PlanError> {
    stampede_engine::RequestBuilder::new(method, path)
        .check()
        .map_err(|e| cx.err(at, field, e.to_string()))
}

/// A count that must not be zero.
fn at_least_one<T: Copy + Default + PartialEq>(
    cx: &Ctx,
    v: &Option<Spanned<T>>,
    field: &str,
) -> Result<Option<T>, PlanError> {
    match v {
        Some(n) if *n.get_ref() == T::default() => {
            Err(cx.err(n.span().start, field, "must be at least 1"))
        }
        Some(n) => Ok(Some(*n.get_ref())),
        None => Ok(None),
    }
}

fn scenario(cx: &Ctx, s: &Spanned<RawScenario>) -> Result<Scenario, PlanError> {
    let at = s.span().start;
    let s = s.get_ref();
    let name = s.name.get_ref().trim().to_string();
    if name.is_empty() {
        return Err(cx.err(s.name.span().start, "scenario.name", "must not be empty"));
    }
    let path = match &s.path {
        Some(p) if !p.get_ref().starts_with('/') => {
            return Err(cx.err(p.span().start, "scenario.path", "must start with /"))
        }
        Some(p) => p.get_ref().clone(),
        None => "/".into(),
    };
    let method = request_method(cx, &s.method, "scenario.method")?;
    if let Some(p) = &s.path {
        check_request(cx, "scenario.path", p.span().start, &method, &path)?;
    }
    let headers = parse_headers(cx, &s.headers, "scenario.headers")?;
    let style = match s.style.as_ref().map(|x| x.get_ref().as_str()) {
        None | Some("native") => Style::Native,
        Some("ab") => Style::Ab,
        Some(other) => {
            return Err(cx.err(
                s.style.as_ref().map_or(at, |x| x.span().start),
                "scenario.style",
                format!("{other:?} is not native or ab"),
            ))
        }
    };
    let duration = s
        .duration
        .as_ref()
        .map(|d| cx.duration(d, "scenario.duration"))
        .transpose()?;
    let think = s
        .think
        .as_ref()
        .map(|d| cx.duration(d, "scenario.think"))
        .transpose()?;
    let timeout = s
        .timeout
        .as_ref()
        .map(|d| cx.duration(d, "scenario.timeout"))
        .transpose()?;
    if let (Some(t), Some(d)) = (timeout, &s.timeout) {
        if t.is_zero() {
            return Err(cx.err(d.span().start, "scenario.timeout", "must be longer than 0"));
        }
    }
    let requests = at_least_one(cx, &s.requests, "scenario.requests")?;
    let connections = at_least_one(cx, &s.connections, "scenario.connections")?;
    let calls = at_least_one(cx, &s.calls, "scenario.calls")?;
    let burst = at_least_one(cx, &s.burst, "scenario.burst")?;
    let http2 = s.http2.unwrap_or(false);
    let keepalive = s.keepalive.as_ref().is_none_or(|k| *k.get_ref());
    let (pipeline, field) = match (http2, &s.streams, &s.pipeline) {
        (false, Some(st), _) => {
            return Err(cx.err(
                st.span().start,
                "scenario.streams",
                format!("scenario {name:?}: streams needs http2 = true"),
            ))
        }
        (true, _, Some(p)) => {
            return Err(cx.err(
                p.span().start,
                "scenario.pipeline",
                format!("scenario {name:?}: HTTP/2 does not pipeline; use streams"),
            ))
        }
        (true, st, None) => (st.as_ref(), "scenario.streams"),
        (false, None, p) => (p.as_ref(), "scenario.pipeline"),
    };
    if let (true, Some(k)) = (http2 && !keepalive, &s.keepalive) {
        return Err(cx.err(
            k.span().start,
            "scenario.keepalive",
            format!("scenario {name:?}: HTTP/2 connections are persistent; keepalive = false does not apply"),
        ));
    }
    let pipeline = match pipeline {
        Some(p) if *p.get_ref() == 0 => {
            return Err(cx.err(p.span().start, field, "must be at least 1"))
        }
        Some(p) if *p.get_ref() > stampede_engine::spec::MAX_PIPELINE => {
            return Err(cx.err(
                p.span().start,
                field,
                format!(
                    "at most {} requests in flight per connection",
                    stampede_engine::spec::MAX_PIPELINE
                ),
            ))
        }
        Some(p) => *p.get_ref(),
        None => 1,
    };
    let shapes = [s.rate.is_some(), s.inject.is_some(), s.sessions.is_some()];
    if shapes.iter().filter(|x| **x).count() > 1 {
        return Err(cx.err(
            at,
            "scenario.rate",
            format!("scenario {name:?}: choose one of rate, inject or sessions"),
        ));
    }
    let session = Session {
        calls: calls.unwrap_or(1),
        burst: burst.unwrap_or(1),
        think: think.unwrap_or_default(),
    };
    let shape = if let Some(rate) = s.rate {
        if !(rate.is_finite() && rate > 0.0 && rate <= stampede_engine::inject::MAX_RATE) {
            return Err(cx.err(
                at,
                "scenario.rate",
                format!(
                    "must be a positive number of requests per second, at most {:e}",
                    stampede_engine::inject::MAX_RATE
                ),
            ));
        }
        Shape::Rate {
            rate,
            poisson: s.poisson.unwrap_or(false),
        }
    } else if let Some(inject) = &s.inject {
        let profile = Profile::parse(inject.get_ref())
            .map_err(|e| cx.err(inject.span().start, "scenario.inject", e))?;
        Shape::Users(profile)
    } else if let Some(sess) = &s.sessions {
        let period = match (&sess.period, sess.rate) {
            (Some(p), _) => Some(
                Period::parse(p.get_ref())
                    .map_err(|e| cx.err(p.span().start, "scenario.sessions.period", e))?,
            ),
            (None, Some(r)) if r > 0.0 => Some(Period::Deterministic(1.0 / r)),
            _ => None,
        };
        if sess.count == 0 {
            return Err(cx.err(at, "scenario.sessions.count", "must be at least 1"));
        }
        Shape::Sessions {
            period,
            count: sess.count,
        }
    } else {
        Shape::Closed
    };
    if !shape.has_sessions() && requests.is_none() && duration.is_none() {
        return Err(cx.err(
            at,
            "scenario.requests",
            format!("scenario {name:?} needs requests or duration"),
        ));
    }
    let verify = match &s.verify {
        None => Verify::default(),
        Some(v) => parse_verify(cx, v, at, "scenario.verify")?,
    };
    let mut steps = Vec::new();
    if let Some(list) = &s.steps {
        let here = list.span().start;
        if !shape.has_sessions() {
            return Err(cx.err(
                here,
                "scenario.steps",
                format!("scenario {name:?}: a list of requests needs inject or sessions (each user or session makes them in order)"),
            ));
        }
        if s.path.is_some() {
            return Err(cx.err(
                here,
                "scenario.steps",
                format!("scenario {name:?}: give path or steps, not both"),
            ));
        }
        if list.get_ref().is_empty() {
            return Err(cx.err(here, "scenario.steps", "must hold at least one request"));
        }
        for st in list.get_ref() {
            if !st.path.get_ref().starts_with('/') {
                return Err(cx.err(
                    st.path.span().start,
                    "scenario.steps.path",
                    "must start with /",
                ));
            }
            let method = request_method(cx, &st.method, "scenario.steps.method")?;
            check_request(
                cx,
                "scenario.steps.path",
                st.path.span().start,
                &method,
                st.path.get_ref(),
            )?;
            steps.push(Step {
                method,
                path: st.path.get_ref().clone(),
                headers: parse_headers(cx, &st.headers, "scenario.steps.headers")?,
                body: st.body.clone().map(String::into_bytes),
                pause: st
                    .pause
                    .as_ref()
                    .map(|d| cx.duration(d, "scenario.steps.pause"))
                    .transpose()?
                    .unwrap_or_default(),
                verify: st
                    .verify
                    .as_ref()
                    .map(|v| parse_verify(cx, v, st.path.span().start, "scenario.steps.verify"))
                    .transpose()?,
            });
        }
    }
    let asserts = s
        .asserts
        .iter()
        .map(|a| {
            stampede_engine::assert::Assertion::parse(a.get_ref())
                .map_err(|e| cx.err(a.span().start, "scenario.assert", e))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let path = match steps.first() {
        Some(st) => st.path.clone(),
        None => path,
    };
    Ok(Scenario {
        name,
        method,
        path,
        headers,
        body: s.body.clone().map(String::into_bytes),
        style,
        shape,
        session,
        connections: connections.unwrap_or(64),
        requests,
        duration,
        keepalive,
        pipeline,
        http2,
        steps,
        timeout: timeout.unwrap_or(if s.inject.is_some() {
            Duration::from_secs(60)
        } else {
            Duration::from_secs(30)
        }),
        verify,
        asserts,
        line: cx.line(at),
    })
}

fn parse_headers(
    cx: &Ctx,
    raw: &[Spanned<String>],
    field: &str,
) -> Result<Vec<(String, String)>, PlanError> {
    raw.iter()
        .map(|h| {
            let at = h.span().start;
            let (n, v) =
                stampede_engine::request::parse_header_arg(h.get_ref()).ok_or_else(|| {
                    cx.err(at, field, format!("{:?} is not 'Name: value'", h.get_ref()))
                })?;
            stampede_engine::RequestBuilder::new("GET", "/")
                .header(&n, &v)
                .check()
                .map_err(|e| cx.err(at, field, e.to_string()))?;
            Ok((n, v))
        })
        .collect()
}

/// A request's method, upper-cased (GET when not given), checked like a request line.
fn request_method(
    cx: &Ctx,
    raw: &Option<Spanned<String>>,
    field: &str,
) -> Result<String, PlanError> {
    let Some(m) = raw else {
        return Ok("GET".into());
    };
    let method = m.get_ref().to_ascii_uppercase();
    check_request(cx, field, m.span().start, &method, "/")?;
    Ok(method)
}

fn parse_verify(cx: &Ctx, v: &RawVerify, at: usize, field: &str) -> Result<Verify, PlanError> {
    Ok(Verify {
        status: v.status.unwrap_or(200),
        content_type: v.content_type.clone(),
        body: v.body.clone(),
        body_contains: v.body_contains.clone(),
        body_length: v.body_length,
        json_key: v.json_key.clone(),
        headers: v
            .headers
            .clone()
            .unwrap_or_else(|| Verify::default().headers),
        date_fresh: v.date_fresh.unwrap_or(false),
        on_failure: match v.on_failure.as_ref().map(|x| x.get_ref().as_str()) {
            None | Some("fail") => OnFailure::Fail,
            Some("warn") => OnFailure::Warn,
            Some(o) => {
                return Err(cx.err(
                    v.on_failure.as_ref().map_or(at, |x| x.span().start),
                    &format!("{field}.on_failure"),
                    format!("{o:?} is not fail or warn"),
                ))
            }
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
name = "two servers"

[runs]
warmup = 1
repetitions = 2
pause = "100ms"

[client]
cpus = [0]

[[target]]
name = "a"
start = "{stampede} serve --listen 127.0.0.1:{port}"
ready = "/pong"
cpus = [1]

[[target]]
name = "b"
url = "http://127.0.0.1:9"

[[scenario]]
name = "backend"
path = "/backend"
connections = 10
requests = 1000
verify = { body_length = 31, content_type = "text/plain" }

[[scenario]]
name = "users"
path = "/pong"
inject = ["rampUsers(10) over (1 seconds)"]
calls = 2

[[scenario]]
name = "bursts"
sessions = { count = 10, rate = 100 }
calls = 10
burst = 5
"#;

    #[test]
    fn parses_a_full_plan() {
        let p = Plan::parse(GOOD, "p.toml").unwrap();
        assert_eq!(p.name, "two servers");
        assert_eq!(p.runs.repetitions, 2);
        assert_eq!(p.runs.pause, Duration::from_millis(100));
        assert_eq!(p.targets.len(), 2);
        assert_eq!(p.targets[0].cpus, vec![1]);
        assert_eq!(p.targets[0].line, 12);
        assert!(matches!(p.targets[1].kind, TargetKind::External { .. }));
        assert_eq!(p.scenarios[0].verify.body_length, Some(31));
        assert!(matches!(p.scenarios[1].shape, Shape::Users(_)));
        assert_eq!(p.scenarios[1].timeout, Duration::from_secs(60));
        assert!(matches!(
            p.scenarios[2].shape,
            Shape::Sessions {
                count: 10,
                period: Some(_)
            }
        ));
    }

    fn err(src: &str) -> PlanError {
        Plan::parse(src, "bad.toml").unwrap_err()
    }

    #[test]
    fn zero_counts_duplicates_wrong_types_and_line_breaks_are_refused_with_their_field() {
        let base =
            "[[target]]\nname = \"a\"\nurl = \"http://127.0.0.1:1\"\n[[scenario]]\nname = \"s\"\n";
        let cases: [(&str, usize, &str, &str); 19] = [
            ("requests = 0\n", 6, "scenario.requests", "at least 1"),
            (
                "requests = 1\npipeline = 4294967296\n",
                7,
                "scenario.pipeline",
                "at most 65536",
            ),
            (
                "duration = \"1s\"\nrate = 1e10\n",
                4,
                "scenario.rate",
                "at most 1e7",
            ),
            (
                "requests = 1\nconnections = 0\n",
                7,
                "scenario.connections",
                "at least 1",
            ),
            (
                "inject = [\"atOnceUsers(1)\"]\ncalls = 0\n",
                7,
                "scenario.calls",
                "at least 1",
            ),
            (
                "inject = [\"atOnceUsers(1)\"]\nburst = 0\n",
                7,
                "scenario.burst",
                "at least 1",
            ),
            (
                "requests = 1\ntimeout = \"0s\"\n",
                7,
                "scenario.timeout",
                "longer than 0",
            ),
            (
                "requests = 1\n[client]\nthreads = 0\n",
                8,
                "client.threads",
                "at least 1",
            ),
            (
                "requests = 1\n[[scenario]]\nname = \"s\"\nrequests = 1\n",
                8,
                "scenario.name",
                "used twice",
            ),
            (
                "requests = \"many\"\n",
                6,
                "scenario.requests",
                "invalid type",
            ),
            (
                "requests = 1\nkeepalive = 3\n",
                7,
                "scenario.keepalive",
                "invalid type",
            ),
            (
                "sessions = { count = \"x\" }\n",
                6,
                "scenario.sessions.count",
                "invalid type",
            ),
            (
                "requests = 1\n[runs]\nwarmup = -1\n",
                8,
                "runs.warmup",
                "invalid value",
            ),
            (
                "requests = 1\nheaders = [\"X-A: 1\\r\\nX-Evil: 1\"]\n",
                7,
                "scenario.headers",
                "line break",
            ),
            (
                "requests = 1\nheaders = [\"X-A: 1\\u0000\"]\n",
                7,
                "scenario.headers",
                "NUL",
            ),
            (
                "requests = 1\nmethod = \"GET / HTTP/1.1\\r\\nX: y\"\n",
                7,
                "scenario.method",
                "line break",
            ),
            (
                "requests = 1\npath = \"/a HTTP/1.1\\r\\n\\r\\nGET /b\"\n",
                7,
                "scenario.path",
                "line break",
            ),
            (
                "requests = 1\npath = \"/a b\"\n",
                7,
                "scenario.path",
                "whitespace",
            ),
            (
                "inject = [\"atOnceUsers(1)\"]\nsteps = [{ path = \"/a\", method = \"G T\" }]\n",
                7,
                "scenario.steps.method",
                "not allowed",
            ),
        ];
        for (tail, line, field, msg) in cases {
            let e = err(&format!("{base}{tail}"));
            assert_eq!((e.line, e.field.as_str()), (line, field), "{tail:?}: {e}");
            assert!(e.message.contains(msg), "{tail:?}: {e}");
        }
        // The flags' spellings of durations hold in plans too.
        let p = Plan::parse(&format!("{base}duration = \"10sec\"\n"), "ok.toml").unwrap();
        assert_eq!(p.scenarios[0].duration, Some(Duration::from_secs(10)));
        let e = err("[[target]]\nname = \"a\"\nurl = \"http://127.0.0.1:1\"\nready = \"/\\r\\nX: 1\"\n[[scenario]]\nname = \"s\"\nrequests = 1\n");
        assert_eq!((e.line, e.field.as_str()), (4, "target.ready"), "{e}");
    }

    #[test]
    fn errors_name_file_line_and_field() {
        let base = "[[target]]\nname = \"a\"\nurl = \"http://127.0.0.1:1\"\n";
        let cases: [(String, usize, &str, &str); 8] = [
            (format!("{base}[[scenario]]\nname = \"s\"\nrequests = 5\nconections = 3\n"), 7, "scenario.conections", "unknown field"),
            (format!("{base}[[scenario]]\nname = \"s\"\nduration = \"10 parsecs\"\n"), 6, "scenario.duration", "unknown unit"),
            (format!("{base}[[scenario]]\nname = \"s\"\n"), 4, "scenario.requests", "needs requests or duration"),
            (format!("{base}[[scenario]]\nname = \"s\"\nrate = 10.0\ninject = [\"atOnceUsers(1)\"]\n"), 4, "scenario.rate", "choose one"),
            (format!("{base}[[scenario]]\nname = \"s\"\ninject = [\"rampUsers(1)\"]\n"), 6, "scenario.inject", "needs .during"),
            (format!("{base}[[scenario]]\nname = \"s\"\nrequests = 1\npath = \"x\"\n"), 7, "scenario.path", "must start with /"),
            (format!("{base}[[scenario]]\nname = \"s\"\nrequests = 1\nheaders = [\"bad\"]\n"), 7, "scenario.headers", "Name: value"),
            ("[[target]]\nname = \"a\"\n[[scenario]]\nname = \"s\"\nrequests = 1\n".to_string(), 1, "target.start", "exactly one of"),
        ];
        for (src, line, field, msg) in cases {
            let e = err(&src);
            assert_eq!((e.line, e.field.as_str()), (line, field), "{e}");
            assert!(e.message.contains(msg), "{e}");
            assert!(
                e.to_string().starts_with(&format!("bad.toml:{line}: ")),
                "{e}"
            );
        }
        let steps = [
            (format!("{base}[[scenario]]\nname = \"s\"\nrequests = 1\nsteps = [{{ path = \"/a\" }}]\n"), 7, "scenario.steps", "needs inject or sessions"),
            (format!("{base}[[scenario]]\nname = \"s\"\ninject = [\"atOnceUsers(1)\"]\npath = \"/a\"\nsteps = [{{ path = \"/b\" }}]\n"), 8, "scenario.steps", "not both"),
            (format!("{base}[[scenario]]\nname = \"s\"\ninject = [\"atOnceUsers(1)\"]\nsteps = [\n {{ path = \"/b\" }},\n {{ path = \"/c\", pause = \"1 jiffy\" }},\n]\n"), 9, "scenario.steps.pause", "unknown unit"),
            (format!("{base}[[scenario]]\nname = \"s\"\ninject = [\"atOnceUsers(1)\"]\nsteps = [{{ path = \"b\" }}]\n"), 7, "scenario.steps.path", "must start with /"),
        ];
        for (src, line, field, msg) in steps {
            let e = err(&src);
            assert_eq!((e.line, e.field.as_str()), (line, field), "{e}");
            assert!(e.message.contains(msg), "{e}");
        }
        let ok = format!("{base}[[scenario]]\nname = \"s\"\ninject = [\"atOnceUsers(1)\"]\nsteps = [{{ path = \"/b\", pause = \"1s\", method = \"post\", body = \"x\", verify = {{ status = 201 }} }}, {{ path = \"/c\" }}]\n");
        let p = Plan::parse(&ok, "ok.toml").unwrap();
        let st = &p.scenarios[0].steps;
        assert_eq!(
            (st.len(), st[0].method.as_str(), st[0].pause),
            (2, "POST", Duration::from_secs(1))
        );
        assert_eq!(st[0].verify.as_ref().unwrap().status, 201);
        assert_eq!(p.scenarios[0].path, "/b");
        let scen = "[[scenario]]\nname = \"s\"\nrequests = 1\n";
        let tls = [
            (
                "url = \"http://127.0.0.1:1\"\ninsecure = true\n",
                4,
                "target.insecure",
                "add tls = true",
            ),
            (
                "url = \"http://127.0.0.1:1\"\ncacert = \"ca.pem\"\n",
                4,
                "target.cacert",
                "add tls = true",
            ),
            (
                "url = \"http://127.0.0.1:1\"\ntls = true\n",
                3,
                "target.url",
                "needs an https:// url",
            ),
            (
                "url = \"https://127.0.0.1:1\"\ninsecure = true\ncacert = \"ca.pem\"\n",
                4,
                "target.insecure",
                "exclude each other",
            ),
            (
                "url = \"ftp://127.0.0.1:1\"\n",
                3,
                "target.url",
                "http:// or https://",
            ),
        ];
        for (t, line, field, msg) in tls {
            let e = err(&format!("[[target]]\nname = \"a\"\n{t}{scen}"));
            assert_eq!((e.line, e.field.as_str()), (line, field), "{e}");
            assert!(e.message.contains(msg), "{e}");
        }
        let p = Plan::parse(
            &format!("[[target]]\nname = \"a\"\nurl = \"https://127.0.0.1:1\"\ncacert = \"ca.pem\"\n{scen}"),
            "ok.toml",
        )
        .unwrap();
        assert_eq!(
            p.targets[0].tls,
            Some(TargetTls {
                insecure: false,
                cacert: Some("ca.pem".into())
            })
        );
        let p = Plan::parse(
            &format!("[[target]]\nname = \"a\"\nstart = \"x {{port}}\"\n{scen}"),
            "ok.toml",
        )
        .unwrap();
        assert_eq!(p.targets[0].tls, None);
        let e = err("[[target]\n");
        assert_eq!(e.line, 1);
        let e = err(base);
        assert_eq!(e.field, "scenario");
    }
}
