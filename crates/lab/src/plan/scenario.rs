//! Reading one `[[scenario]]` of a plan: its request (or steps), load shape, sessions,
//! verification and assertions, each value checked with the line it came from.

use super::*;

/// Refuses a method or path that would change the request's framing on the wire (CR,
/// LF, whitespace, controls), by the engine's own check.
pub(super) fn check_request(
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

/// Long on purpose: it reads the scenario's fields in the order docs/plan.md lists them, a
/// few lines each, and the checks across fields need them all at hand.
pub(super) fn scenario(cx: &Ctx, s: &Spanned<RawScenario>) -> Result<Scenario, PlanError> {
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
        Some(p) if *p.get_ref() > stampede_engine::MAX_PIPELINE => {
            return Err(cx.err(
                p.span().start,
                field,
                format!(
                    "at most {} requests in flight per connection",
                    stampede_engine::MAX_PIPELINE
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
    if let (Some(b), None, None) = (&s.burstiness, s.rate, &s.search) {
        return Err(cx.err(
            b.span().start,
            "scenario.burstiness",
            format!("scenario {name:?}: burstiness shapes the gaps of a rate's arrivals; add rate or search"),
        ));
    }
    let session = Session {
        calls: calls.unwrap_or(1),
        burst: burst.unwrap_or(1),
        think: think.unwrap_or_default(),
        ..Default::default()
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
            gaps: gaps(cx, s)?,
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
    let search = s
        .search
        .as_ref()
        .map(|raw| search(cx, raw, &name, s))
        .transpose()?;
    if search.is_none() && !shape.has_sessions() && requests.is_none() && duration.is_none() {
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
            steps.push(ScenarioStep {
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
    let asserts = assertions(cx, &s.asserts, "scenario.assert")?;
    let stream = super::stream::stream_plan(cx, s, &name, requests)?;
    let ws = super::ws::ws_plan(cx, s, &name)?;
    let journey = super::journey::journey_plan(cx, s, &name)?;
    let timed = stream.as_ref().map(|st| st.mode);
    let search_at = s.search.as_ref().map_or(at, |x| x.span().start);
    let checked = (asserts.iter().zip(&s.asserts))
        .map(|(a, raw)| (a, raw.span().start, "scenario.assert"))
        .chain(
            (search.iter().flat_map(|x| &x.conditions))
                .map(|a| (a, search_at, "scenario.search.conditions")),
        );
    for (a, at, field) in checked {
        let wrong = if a.needs_tokens() && timed != Some(stampede_engine::StreamMode::Openai) {
            "completion tokens are counted in openai scenarios"
        } else if a.needs_stream() && timed.is_none() {
            "stream figures are timed with stream or openai"
        } else {
            continue;
        };
        return Err(cx.err(at, field, format!("{:?}: {wrong}", a.text)));
    }
    let mut path = match steps.first() {
        Some(st) => st.path.clone(),
        None => path,
    };
    let (mut method, mut headers, mut body) =
        (method, headers, s.body.clone().map(String::into_bytes));
    if let Some(o) = stream.as_ref().and_then(|st| st.openai.as_ref()) {
        // The scenario's request is the first completion: what its checks send.
        if s.path.is_none() {
            path = match o.api {
                stampede_engine::openai::Api::Chat => "/v1/chat/completions".into(),
                stampede_engine::openai::Api::Completions => "/v1/completions".into(),
            };
        }
        method = "POST".into();
        headers.push(("Content-Type".into(), "application/json".into()));
        body = o.bodies.first().cloned();
    }
    Ok(Scenario {
        name,
        method,
        path,
        headers,
        body,
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
        search,
        stream,
        ws,
        journey,
        line: cx.line(at),
    })
}

/// Conditions in the `--assert` grammar, each error at its own line.
fn assertions(
    cx: &Ctx,
    raw: &[Spanned<String>],
    field: &str,
) -> Result<Vec<stampede_engine::assert::Assertion>, PlanError> {
    raw.iter()
        .map(|a| {
            stampede_engine::assert::Assertion::parse(a.get_ref())
                .map_err(|e| cx.err(a.span().start, field, e))
        })
        .collect()
}

/// `search = {…}`: the capacity search's conditions, bounds and step lengths. The search
/// sets each step's rate and length, so the fields that set them otherwise are refused.
fn search(
    cx: &Ctx,
    raw: &Spanned<RawSearch>,
    name: &str,
    s: &RawScenario,
) -> Result<Search, PlanError> {
    let at = raw.span().start;
    let r = raw.get_ref();
    let clash = [
        ("scenario.rate", s.rate.is_some()),
        ("scenario.inject", s.inject.is_some()),
        ("scenario.sessions", s.sessions.is_some()),
        ("scenario.requests", s.requests.is_some()),
        ("scenario.duration", s.duration.is_some()),
    ];
    if let Some((field, _)) = clash.iter().find(|(_, set)| *set) {
        return Err(cx.err(
            at,
            field,
            format!("scenario {name:?}: a search sets each step's rate and length (search.step); drop {}", field.trim_start_matches("scenario.")),
        ));
    }
    let conditions = assertions(cx, &r.conditions, "scenario.search.conditions")?;
    let Some(max) = &r.max_rate else {
        return Err(cx.err(
            at,
            "scenario.search.max_rate",
            "is required: the highest rate the search may offer, e.g. max_rate = 50000",
        ));
    };
    let max_rate = *max.get_ref();
    if !(max_rate.is_finite() && (1.0..=stampede_engine::inject::MAX_RATE).contains(&max_rate)) {
        return Err(cx.err(
            max.span().start,
            "scenario.search.max_rate",
            format!(
                "must be a rate from 1 to {:e} req/s",
                stampede_engine::inject::MAX_RATE
            ),
        ));
    }
    let start_rate = match &r.start_rate {
        Some(v)
            if !(v.get_ref().is_finite() && *v.get_ref() >= 1.0 && *v.get_ref() <= max_rate) =>
        {
            return Err(cx.err(
                v.span().start,
                "scenario.search.start_rate",
                format!("must be at least 1 and at most max_rate ({max_rate})"),
            ))
        }
        v => v.as_ref().map(|v| *v.get_ref()),
    };
    let length = |v: &Option<Spanned<String>>, field: &str, default: Duration| {
        v.as_ref().map_or(Ok(default), |d| cx.duration(d, field))
    };
    let step = length(&r.step, "scenario.search.step", Duration::from_secs(5))?;
    if step < Duration::from_millis(100) {
        return Err(cx.err(
            r.step.as_ref().map_or(at, |d| d.span().start),
            "scenario.search.step",
            "must be at least 100ms (a step needs time to settle)",
        ));
    }
    let warmup = length(&r.warmup, "scenario.search.warmup", Duration::from_secs(1))?;
    let precision = match &r.precision {
        Some(p) => cx.percent(p, "scenario.search.precision", "5%")?,
        None => 0.05,
    };
    let max_steps = at_least_one(cx, &r.max_steps, "scenario.search.max_steps")?.unwrap_or(16);
    Ok(Search {
        conditions,
        max_rate,
        start_rate,
        step,
        warmup,
        precision,
        max_steps,
        gaps: gaps(cx, s)?,
    })
}

/// How a rate's arrivals are spaced: `poisson = true`, or `burstiness = F` for gamma
/// gaps (1 is a Poisson process), or evenly.
fn gaps(cx: &Ctx, s: &RawScenario) -> Result<Gaps, PlanError> {
    let burstiness = match &s.burstiness {
        Some(b) => Some(
            Gaps::check_burstiness(*b.get_ref())
                .map_err(|e| cx.err(b.span().start, "scenario.burstiness", e))?,
        ),
        None => None,
    };
    Ok(Gaps::of(s.poisson.unwrap_or(false), burstiness))
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
