//! Benchmark plans: what to start, what to send, how to verify it and how often.
//!
//! A plan is TOML (documented field by field in docs/plan.md). Every error names the
//! file, the line and the field: serde errors carry toml's span, and values the plan
//! parser checks itself (durations, injection steps, headers, load shapes) are read as
//! `toml::Spanned` so their line is known too.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use stampede_engine::arrivals::{Gaps, Period};
use stampede_engine::inject::Profile;
use stampede_engine::input::Input;
use stampede_engine::{Session, Shape};
use toml::Spanned;

mod journey;
mod quick;
mod raw;
mod scenario;
mod stream;
mod ws;
pub use stream::{OpenaiPlan, StreamPlan};

use raw::*;
use scenario::{check_request, scenario};

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
    /// Measured runs (with `auto`, the fewest).
    pub repetitions: u32,
    /// `repetitions = "auto"`: repeat until the answer is settled, within bounds.
    pub auto: Option<Auto>,
    /// Pause between runs.
    pub pause: Duration,
}

/// How `repetitions = "auto"` decides it has measured enough (see
/// [`crate::stats::settled`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Auto {
    /// Never fewer measured runs (at least 2).
    pub min: u32,
    /// Never more.
    pub max: u32,
    /// Stop when the 95 % interval of the compared figure's mean is within ± this
    /// fraction of the mean.
    pub precision: f64,
}

impl Runs {
    /// The most measured runs a target × scenario may get.
    pub fn most(&self) -> u32 {
        self.auto.map_or(self.repetitions, |a| a.max)
    }
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
    /// The address in a started target's URL (default 127.0.0.1, or the host of
    /// `host`): where the load reaches it, which the command must listen on.
    pub address: Option<String>,
    /// `expect = "refused"`: verification is expected to refuse this target (a server
    /// of error pages kept in a plan on purpose). The bench then exits 0 when every
    /// scenario's verification refuses it, and 1 when one does not.
    pub expect_refused: bool,
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
        /// Start it on this host over ssh (a destination as ssh takes it) instead of
        /// here; its CPU and memory are sampled there.
        host: Option<String>,
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
pub struct ScenarioStep {
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
    pub steps: Vec<ScenarioStep>,
    /// Request timeout.
    pub timeout: Duration,
    /// Verification.
    pub verify: Verify,
    /// Assertions checked on every measured run.
    pub asserts: Vec<stampede_engine::assert::Assertion>,
    /// A capacity search in place of runs at one load (`search = {…}`).
    pub search: Option<Search>,
    /// Responses timed as streams (`stream`, `openai`, `event_timeout`).
    pub stream: Option<StreamPlan>,
    /// A WebSocket scenario (`ws = {…}`): each connection upgraded with the scenario's
    /// GET, each request one message and its answer.
    pub ws: Option<stampede_engine::WsLoad>,
    /// A journey each user walks (`journey = "FILE"`): its steps are the requests.
    pub journey: Option<stampede_journey::journey::Journey>,
    /// Line of the `[[scenario]]` table.
    pub line: usize,
}

/// A scenario's capacity search: each measured repetition is a whole search of
/// open-model steps, and its figure is the highest rate that met every condition.
#[derive(Debug, Clone)]
pub struct Search {
    /// Conditions every passing step meets (`p99 < 10ms`).
    pub conditions: Vec<stampede_engine::assert::Assertion>,
    /// Never offer more than this, req/s.
    pub max_rate: f64,
    /// First rate of the coarse ramp (default: max_rate / 32).
    pub start_rate: Option<f64>,
    /// Length of each measured step.
    pub step: Duration,
    /// Discarded load before each step, at the step's rate.
    pub warmup: Duration,
    /// Stop bisecting when the last pass and the first failure are within this fraction.
    pub precision: f64,
    /// Most steps in one search.
    pub max_steps: usize,
    /// How each step's arrivals are spaced (the scenario's `poisson` or `burstiness`).
    pub gaps: stampede_engine::arrivals::Gaps,
}

impl Search {
    /// The engine's search for this plan entry.
    pub fn spec(&self) -> stampede_engine::capacity::SearchSpec {
        let mut s =
            stampede_engine::capacity::SearchSpec::new(self.conditions.clone(), self.max_rate);
        if let Some(r) = self.start_rate {
            s.start_rate = r;
        }
        s.precision = self.precision;
        s.max_steps = self.max_steps;
        s
    }
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
    /// Hosts that generate the load, one segment each over ssh, with the ssh options
    /// and stampede program used for them and for targets started on other hosts
    /// (`[client] hosts`, `[ssh]`); no hosts: the load comes from this process.
    pub remote: crate::remote::Hosts,
    /// Targets, compared in this order (the first is the baseline).
    pub targets: Vec<Target>,
    /// Scenarios.
    pub scenarios: Vec<Scenario>,
    /// The plan's source text, stored with results.
    pub source: String,
}

/// `[runs] repetitions` with, for `"auto"`, its bounds and precision.
fn runs_count(cx: &Ctx<'_>, r: &RawRuns) -> Result<(u32, Option<Auto>), PlanError> {
    let at = |v: &Option<Spanned<u32>>| v.as_ref().map(|x| (*x.get_ref(), x.span().start));
    let auto_only = [
        ("runs.min_repetitions", at(&r.min_repetitions).map(|x| x.1)),
        ("runs.max_repetitions", at(&r.max_repetitions).map(|x| x.1)),
        (
            "runs.precision",
            r.precision.as_ref().map(|p| p.span().start),
        ),
    ];
    match r
        .repetitions
        .as_ref()
        .map(|v| (v.get_ref(), v.span().start))
    {
        Some((RawReps::Word(w), pos)) if w == "auto" => {
            let min = at(&r.min_repetitions).unwrap_or((3, pos));
            let max = at(&r.max_repetitions).unwrap_or((20, pos));
            if min.0 < 2 {
                return Err(cx.err(
                    min.1,
                    "runs.min_repetitions",
                    "must be at least 2 (one run has no interval)",
                ));
            }
            if max.0 < min.0 || max.0 > 1000 {
                return Err(cx.err(
                    max.1,
                    "runs.max_repetitions",
                    format!("must be from min_repetitions ({}) to 1000", min.0),
                ));
            }
            let precision = match &r.precision {
                None => 0.02,
                Some(p) => cx.percent(p, "runs.precision", "2%")?,
            };
            Ok((
                min.0,
                Some(Auto {
                    min: min.0,
                    max: max.0,
                    precision,
                }),
            ))
        }
        Some((RawReps::Word(w), pos)) => Err(cx.err(
            pos,
            "runs.repetitions",
            format!("{w:?} is neither a count nor \"auto\""),
        )),
        Some((RawReps::Count(0), pos)) => {
            Err(cx.err(pos, "runs.repetitions", "must be at least 1"))
        }
        count => {
            if let Some((field, Some(pos))) = auto_only.iter().find(|(_, p)| p.is_some()) {
                return Err(cx.err(*pos, field, "only with repetitions = \"auto\""));
            }
            Ok((
                match count {
                    Some((RawReps::Count(n), _)) => *n,
                    _ => 3,
                },
                None,
            ))
        }
    }
}

impl Plan {
    /// Parses a plan; `file` names it in errors.
    ///
    /// Long on purpose: it reads the plan's tables in the order docs/plan.md documents
    /// them, each a few lines; scenarios are read apart.
    pub fn parse(src: &str, file: &str) -> Result<Plan, PlanError> {
        let cx = Ctx { file, src };
        let raw: RawPlan = toml::from_str(src).map_err(|e| {
            let offset = e.span().map_or(0, |s| s.start);
            let msg = e.message().to_string();
            let field = match msg.split('`').nth(1).filter(|_| msg.contains("field")) {
                // "unknown field `x`" and "missing field `x`" name it; within its table
                // and the inline tables the error points into.
                Some(name) => {
                    let (mut parts, _) = within(src, offset);
                    parts.push(name.to_string());
                    parts.join(".")
                }
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
                auto: None,
                pause: Duration::from_secs(1),
            },
            Some(r) => {
                let (repetitions, auto) = runs_count(&cx, &r)?;
                Runs {
                    primer: r.primer.unwrap_or(true),
                    warmup: r.warmup.unwrap_or(1),
                    repetitions,
                    auto,
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
            if let Some(k) = t
                .env
                .keys()
                .find(|k| crate::remote::check_env_name(k).is_err())
            {
                let e = crate::remote::check_env_name(k).unwrap_err();
                return Err(cx.err(t.name.span().start, "target.env", e.to_string()));
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
                    host: match &t.host {
                        Some(h) if h.get_ref().trim().is_empty() => {
                            return Err(cx.err(h.span().start, "target.host", "must not be empty"))
                        }
                        Some(h) if crate::remote::check_host(h.get_ref().trim()).is_err() => {
                            let e = crate::remote::check_host(h.get_ref().trim()).unwrap_err();
                            return Err(cx.err(h.span().start, "target.host", e.to_string()));
                        }
                        Some(h) if t.port.is_none() => {
                            return Err(cx.err(
                                h.span().start,
                                "target.host",
                                "a target started on another host needs port = N (a free port there cannot be chosen from here)",
                            ))
                        }
                        h => h.as_ref().map(|h| h.get_ref().trim().to_string()),
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
                    for (field, v) in [("target.host", &t.host), ("target.address", &t.address)] {
                        if let Some(v) = v {
                            return Err(cx.err(
                                v.span().start,
                                field,
                                "applies to a target the lab starts (start = …); a target given by url is reached at its url",
                            ));
                        }
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
            let address = match &t.address {
                Some(a) if a.get_ref().trim().is_empty() || a.get_ref().contains(['/', ' ']) => {
                    return Err(cx.err(
                        a.span().start,
                        "target.address",
                        format!("{:?} is not a host name or IP address", a.get_ref()),
                    ))
                }
                a => a.as_ref().map(|a| a.get_ref().trim().to_string()),
            };
            targets.push(Target {
                name,
                tls,
                kind,
                address,
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
                expect_refused: match &t.expect {
                    None => false,
                    Some(e) => match e.get_ref().as_str() {
                        "measured" => false,
                        "refused" => true,
                        other => {
                            return Err(cx.err(
                                e.span().start,
                                "target.expect",
                                format!("{other:?} is not \"measured\" or \"refused\""),
                            ))
                        }
                    },
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
            hosts: None,
        });
        if let Some(t) = client.threads.as_ref().filter(|t| *t.get_ref() == 0) {
            return Err(cx.err(t.span().start, "client.threads", "must be at least 1"));
        }
        let hosts = client
            .hosts
            .as_ref()
            .map_or(Vec::new(), |h| h.get_ref().clone());
        if let Some(h) = &client.hosts {
            if h.get_ref().iter().any(|x| x.trim().is_empty()) {
                return Err(cx.err(h.span().start, "client.hosts", "a host is empty"));
            }
            if let Some(e) = h
                .get_ref()
                .iter()
                .find_map(|x| crate::remote::check_host(x.trim()).err())
            {
                return Err(cx.err(h.span().start, "client.hosts", e.to_string()));
            }
            if h.get_ref().is_empty() {
                return Err(cx.err(
                    h.span().start,
                    "client.hosts",
                    "must name at least one host",
                ));
            }
            if let Some(c) = &client.cpus {
                return Err(cx.err(
                    c.span().start,
                    "client.cpus",
                    "pins the load generator here; with client.hosts the load comes from the hosts",
                ));
            }
            for t in &targets {
                check_reachable(&cx, t, h.span().start)?;
            }
            if let Some((s, raw)) =
                (scenarios.iter().zip(&raw.scenarios)).find(|(s, _)| s.journey.is_some())
            {
                return Err(cx.err(
                    raw.span().start,
                    "scenario.journey",
                    format!(
                        "scenario {:?}: a journey is walked from this machine; the client hosts run what a spec file carries, and a journey's requests are made as its users walk",
                        s.name
                    ),
                ));
            }
        }
        let ssh = raw.ssh.unwrap_or_default();
        Ok(Plan {
            // Without a name, the file's stem: a title, not a path.
            name: raw.name.unwrap_or_else(|| {
                std::path::Path::new(file)
                    .file_stem()
                    .map_or(file.to_string(), |s| s.to_string_lossy().into_owned())
            }),
            description: raw.description,
            runs,
            client_cpus: client.cpus.map(Spanned::into_inner).unwrap_or_default(),
            client_threads: client.threads.map(Spanned::into_inner),
            remote: crate::remote::Hosts {
                hosts: hosts.iter().map(|h| h.trim().to_string()).collect(),
                options: ssh.options,
                program: ssh.stampede,
                copy: ssh.copy,
            },
            targets,
            scenarios,
            source: src.to_string(),
        })
    }

    /// Reads and parses a plan file.
    pub fn load(path: &std::path::Path) -> Result<Plan, PlanError> {
        let file = path.display().to_string();
        let src =
            stampede_engine::input::read_text(&file, "plan", Input::Config).map_err(|message| {
                PlanError {
                    file: file.clone(),
                    line: 0,
                    field: "plan".into(),
                    // The field already says what was read.
                    message: message.to_string().trim_start_matches("plan: ").to_string(),
                }
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

/// With client hosts, a target must be reached at an address that means it from
/// there: not this machine's loopback.
fn check_reachable(cx: &Ctx, t: &Target, at: usize) -> Result<(), PlanError> {
    let loopback = |h: &str| {
        let h = h.trim_start_matches('[').trim_end_matches(']');
        h == "localhost" || h.parse::<std::net::IpAddr>().is_ok_and(|a| a.is_loopback())
    };
    let problem = match &t.kind {
        TargetKind::External { url } => {
            let host = url
                .split_once("://")
                .map_or(url.as_str(), |x| x.1)
                .split(['/', '?'])
                .next()
                .unwrap_or("");
            let host = host.rsplit_once(':').map_or(host, |x| x.0);
            loopback(host).then(|| format!("its url {url} is loopback, which on each client host is that host itself"))
        }
        TargetKind::Command { host: None, .. } => match &t.address {
            None => Some("it is started here and reached at 127.0.0.1: give address = \"…\" (this machine's address as the hosts reach it) and have it listen there".to_string()),
            Some(a) if loopback(a) => Some(format!("its address {a} is loopback")),
            Some(_) => None,
        },
        TargetKind::Command { host: Some(_), .. } => None,
    };
    match problem {
        Some(p) => Err(cx.err(
            at,
            "client.hosts",
            format!(
                "target {:?} cannot be reached from the client hosts: {p}",
                t.name
            ),
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests;
