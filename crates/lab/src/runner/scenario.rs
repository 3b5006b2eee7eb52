//! A scenario as the engine runs it: its request in its style (stampede's HTTP/1.1
//! or ab's HTTP/1.0), the checks made before its load, the script its sessions run,
//! and its load spec, validated as the engine validates it.

use super::*;

/// The load a scenario of `plan` puts on `target`, validated as the engine validates
/// it; `stampede bench --check` builds it too (against a stand-in address), so that
/// whatever a run would refuse is found before any target starts.
pub fn scenario_spec(
    plan: &Plan,
    s: &Scenario,
    target: stampede_engine::Target,
    tls: Option<std::sync::Arc<stampede_tls::rustls::ClientConfig>>,
    script: Vec<stampede_engine::Step>,
) -> Result<LoadSpec, SpecError> {
    let request = match &s.ws {
        Some(ws) => ws.upgrade_request(&target, &s.headers)?,
        None => scenario_request(s, &target, s.keepalive)?,
    };
    let mut spec = LoadSpec::new(target, request);
    spec.load.protocol.ws = s.ws.clone();
    spec.tls = tls;
    spec.load.protocol.http2 = s.http2;
    spec.load.connections = s.connections;
    spec.load.threads = plan
        .client_threads
        .unwrap_or(if plan.client_cpus.is_empty() {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            plan.client_cpus.len()
        });
    spec.load.requests = s.requests;
    spec.load.duration = s.duration;
    spec.load.keepalive = s.keepalive;
    spec.load.pipeline = s.pipeline;
    spec.load.timeout = Some(s.timeout);
    spec.load.shape = s.shape.clone();
    spec.load.session = s.session;
    spec.load.script = script;
    if let Some(st) = &s.stream {
        spec.load.streams.stream = Some(st.mode);
        spec.load.streams.event_timeout = st.event_timeout;
    }
    if let Some(o) = s.stream.as_ref().and_then(|st| st.openai.as_ref()) {
        // Each prompt's completion in turn, whichever connection sends.
        spec.load.streams.slo = o.slo;
        spec.load.streams.tokenizer = o.tokenizer.clone();
        spec.load.variety = (o.bodies.iter())
            .map(|b| {
                build_request(
                    s.style,
                    "POST",
                    &spec.target,
                    &s.headers,
                    Some(b),
                    s.keepalive,
                )
            })
            .collect::<Result<_, _>>()?;
        spec.load.walk = Some(stampede_engine::Walk {
            rate: 1.0,
            once: false,
        });
    }
    if let Some(search) = &s.search {
        // Its first step; the search sets each step's rate.
        spec.load.shape = stampede_engine::Shape::Rate {
            rate: search.spec().start_rate,
            gaps: search.gaps,
        };
        spec.load.duration = Some(search.step);
    }
    spec.validate()?;
    Ok(spec)
}

/// Each scenario's load checked as [`scenario_spec`] builds it, against a stand-in
/// address: what a run would refuse only once its target is up, found before any
/// starts.
pub fn check_scenarios(plan: &Plan) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for s in &plan.scenarios {
        let url = scenario_url("http://127.0.0.1:9", s);
        let built = stampede_engine::Target::parse(&url).and_then(|target| {
            let (_, script) = checks_and_script(s, "http://127.0.0.1:9", &target)?;
            scenario_spec(plan, s, target, None, script)
        });
        if let Err(e) = built {
            found.push((s.line, format!("scenario {:?}: {e}", s.name)));
        }
    }
    found
}

/// The URL a scenario loads on the target at `base` (`http://host:port`, or https):
/// its path there, with the scheme of WebSocket for a `ws` scenario.
pub fn scenario_url(base: &str, s: &Scenario) -> String {
    let base = match (&s.ws, base.split_once("://")) {
        (Some(_), Some(("https", rest))) => format!("wss://{rest}"),
        (Some(_), Some((_, rest))) => format!("ws://{rest}"),
        _ => base.to_string(),
    };
    format!("{base}{}", s.path)
}

/// What a `ws` scenario is verified with before its load: messages on one
/// connection, each to be answered.
pub const WS_CHECKS: u64 = 3;

/// Verifies a `ws` scenario by its load on a small scale: [`WS_CHECKS`] messages on
/// one connection, each within the scenario's timeout. Returns what went wrong
/// (nothing when every message was answered).
pub fn verify_ws(spec: &LoadSpec) -> Vec<String> {
    let mut check = spec.clone();
    check.load.connections = 1;
    check.load.threads = 1;
    check.load.requests = Some(WS_CHECKS);
    check.load.duration = None;
    check.load.shape = stampede_engine::Shape::Closed;
    check.load.session = Default::default();
    let plan = match check.plan() {
        Ok(p) => p,
        Err(e) => return vec![e.to_string()],
    };
    let control = std::sync::Arc::new(stampede_engine::Control::default());
    let r = match stampede_engine::run(&plan, control) {
        Ok(run) => run.result,
        Err(e) => return vec![e.to_string()],
    };
    if r.requests.completed == WS_CHECKS && r.errors.is_empty() {
        return Vec::new();
    }
    let mut failures = vec![format!(
        "{WS_CHECKS} messages on one connection: {} answered",
        r.requests.completed
    )];
    failures.extend(r.errors.iter().map(|(k, n)| format!("{k} × {n}")));
    if let Some(w) = &r.protocols.websocket {
        failures.extend(
            w.refused
                .iter()
                .map(|(s, n)| format!("upgrade refused with {s} × {n}")),
        );
        failures.extend(
            w.closes
                .iter()
                .map(|(c, n)| format!("closed by the server with {c} × {n}")),
        );
    }
    failures
}

/// Users a journey scenario is verified with, for each journey of its file: they
/// arrive at once, each on its connection, and walk it once.
pub const JOURNEY_CHECKS: u64 = 4;

/// Verifies a `journey` scenario by walking it: [`JOURNEY_CHECKS`] users for each of
/// its journeys, each within the scenario's `timeout` a step. Returns what went wrong
/// (nothing when every step was answered, every capture found and every check
/// passed).
pub fn verify_journey(
    spec: &LoadSpec,
    journey: &stampede_journey::run::JourneyRun,
    timeout: Duration,
) -> Vec<String> {
    use stampede_engine::inject::{InjectionStep, Profile};
    let users = JOURNEY_CHECKS * journey.journeys() as u64;
    let walk = journey.fresh();
    let mut check = spec.clone();
    check.hooks = Some(walk.hooks());
    check.load.threads = 1;
    check.load.requests = None;
    check.load.shape = stampede_engine::Shape::Users(Profile {
        steps: vec![InjectionStep::AtOnce(users)],
    });
    check.load.session = stampede_engine::Session {
        calls: u32::MAX,
        ..Default::default()
    };
    // Think times and all: a bound, not a schedule.
    check.load.duration = Some(timeout.max(Duration::from_secs(30)));
    let plan = match check.plan() {
        Ok(p) => p,
        Err(e) => return vec![e.to_string()],
    };
    let control = std::sync::Arc::new(stampede_engine::Control::default());
    let mut r = match stampede_engine::run(&plan, control) {
        Ok(run) => run.result,
        Err(e) => return vec![e.to_string()],
    };
    walk.annotate(&mut r);
    let mut failures = Vec::new();
    if let Some(why) = walk.stopped() {
        failures.push(why);
    }
    let (completed, failed) = r
        .sessions
        .as_ref()
        .map_or((0, 0), |s| (s.completed, s.failed));
    if failed > 0 || completed < users {
        failures.push(format!(
            "{users} users walking it: {completed} completed, {failed} failed"
        ));
    }
    for t in &r.targets {
        failures.extend(
            t.errors
                .iter()
                .map(|(k, n)| format!("{}: {k} × {n}", t.name)),
        );
        failures.extend(
            (t.checks_failed.iter().chain(&t.captures_missed))
                .map(|(c, n)| format!("{}: {c} × {n}", t.name)),
        );
    }
    failures
}

/// The request a scenario sends, in its style.
pub fn scenario_request(
    s: &Scenario,
    target: &stampede_engine::Target,
    keepalive: bool,
) -> Result<Request, SpecError> {
    build_request(
        s.style,
        &s.method,
        target,
        &s.headers,
        s.body.as_deref(),
        keepalive,
    )
}

/// A request in a style: stampede's HTTP/1.1 one, or ab's exact HTTP/1.0 one.
pub(super) fn build_request(
    style: Style,
    method: &str,
    target: &stampede_engine::Target,
    headers: &[(String, String)],
    body: Option<&[u8]>,
    keepalive: bool,
) -> Result<Request, SpecError> {
    match style {
        Style::Native => {
            let mut b = RequestBuilder::native(target, method, keepalive);
            for (n, v) in headers {
                b = b.set_header(n, v);
            }
            if let Some(body) = body {
                b = b.body(body.to_vec());
            }
            b.build()
        }
        Style::Ab => {
            // A Content-Type among the headers is ab's -T; the rest are its -H.
            let ctype = headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case("content-type"))
                .map_or(AB_CONTENT_TYPE, |(_, v)| v.as_str());
            let rest: Vec<(String, String)> = headers
                .iter()
                .filter(|(n, _)| !n.eq_ignore_ascii_case("content-type"))
                .cloned()
                .collect();
            AbRequest {
                method,
                keepalive,
                body: body.map(|b| (b, ctype)),
                headers: &rest,
                ..AbRequest::default()
            }
            .build(target)
        }
    }
}

/// One request to check before a scenario's load: a label for messages, the request
/// (asking the server to close), and what its response must look like.
pub(super) struct Check<'a> {
    pub(super) label: Option<String>,
    pub(super) request: Request,
    pub(super) verify: &'a crate::plan::Verify,
}

/// The checks of a scenario (one per step for a list of requests), and the script its
/// sessions run (empty for a single request).
#[allow(clippy::type_complexity)]
pub(super) fn checks_and_script<'a>(
    s: &'a Scenario,
    base_url: &str,
    target: &stampede_engine::Target,
) -> Result<(Vec<Check<'a>>, Vec<stampede_engine::Step>), SpecError> {
    if s.steps.is_empty() {
        let check = Check {
            label: None,
            request: scenario_request(s, target, false)?,
            verify: &s.verify,
        };
        return Ok((vec![check], Vec::new()));
    }
    let mut checks = Vec::new();
    let mut script = Vec::new();
    for st in &s.steps {
        let t = stampede_engine::Target::parse(&format!("{base_url}{}", st.path))?;
        let headers: Vec<(String, String)> = s.headers.iter().chain(&st.headers).cloned().collect();
        let req = |keepalive| {
            build_request(
                s.style,
                &st.method,
                &t,
                &headers,
                st.body.as_deref(),
                keepalive,
            )
        };
        checks.push(Check {
            label: Some(format!("{} {}", st.method, st.path)),
            request: req(false)?,
            verify: st.verify.as_ref().unwrap_or(&s.verify),
        });
        script.push(stampede_engine::Step::new(req(s.keepalive)?, st.pause));
    }
    Ok((checks, script))
}
