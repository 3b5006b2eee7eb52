//! `stampede load`: the native interface to the engine, with a compact summary and JSON.

use crate::colour::{paint, Stream};
use stampede_engine::inject::Profile;
use stampede_engine::input::{self, Input};
use stampede_engine::portable::PortableSpec;
use stampede_engine::{LoadSpec, RequestBuilder, Session, Shape};
use stampede_report::units::{human_us, thousands};
use stampede_report::{gatling_report, loud_warnings, summary_with, GatlingBounds};

mod args;
mod chat;
mod journey;
mod ws;

pub use args::{precheck, Format, LoadArgs};

use crate::common::{self, Exit, ProgressOptions};
use journey::{feeder, journey, split_origin};
use stampede_inputs::randurl;
use stampede_inputs::targets;
use stampede_journey::run::JourneyRun;
use stampede_metrics::dashboard::Dashboard;

/// `--openai`'s requests: a POST of each prompt's JSON body (see [`stampede_engine::openai`]),
/// as many as the run sends (`-n`), or a thousand in turn for a run bounded by time.
fn openai_requests(
    a: &LoadArgs,
    api: stampede_engine::openai::Api,
    target: &stampede_engine::Target,
    headers: &[(String, String)],
    keepalive: bool,
    tokenizer: Option<&stampede_engine::TokenCounter>,
) -> Result<(Vec<stampede_engine::Request>, u32), Exit> {
    let count = a.requests.map_or(1000, |n| {
        n.min(stampede_engine::openai::MAX_PROMPTS as u64 + 1) as usize
    });
    let prompts = stampede_engine::openai::Prompts {
        api,
        model: &a.model,
        input_words: a.input_tokens,
        output_tokens: a.output_tokens,
        range_ratio: a.range_ratio,
        file: a.prompts.as_deref(),
        what: "--prompts",
        count,
        seed: a.seed,
        ignore_eos: a.ignore_eos,
        tokenizer,
    };
    let drawn = prompts.prompts().map_err(Exit::usage)?;
    let requests = (prompts.requests(target, headers, keepalive, &drawn)).map_err(Exit::usage)?;
    Ok((requests, stampede_engine::openai::max_events(&drawn)))
}

/// `--tokenizer`'s tokenizer, loaded.
fn tokenizer(a: &LoadArgs) -> Result<Option<stampede_engine::TokenCounter>, Exit> {
    (a.tokenizer.as_deref())
        .map(|t| stampede_engine::TokenCounter::load(t, "--tokenizer"))
        .transpose()
        .map_err(Exit::usage)
}

/// How the run times streams: `--stream`, `--sse`, `--openai` or a gRPC `--call`,
/// with the event timeout and the service levels; `--openai`'s prompts each once in
/// turn.
fn streams(a: &LoadArgs, spec: &mut LoadSpec) -> Result<(), Exit> {
    spec.load.streams.stream = match (a.stream, a.sse, a.openai) {
        _ if a.grpc.call.is_some() => Some(stampede_engine::StreamMode::Grpc),
        (_, _, Some(_)) => Some(stampede_engine::StreamMode::Openai),
        (_, true, None) => Some(stampede_engine::StreamMode::Sse),
        (true, false, None) if spec.load.protocol.ws.is_some() => {
            Some(stampede_engine::StreamMode::Messages)
        }
        (true, false, None) => Some(stampede_engine::StreamMode::Chunks),
        (false, false, None) => None,
    };
    if a.event_timeout.is_some() && spec.load.streams.stream.is_none() {
        return Err(Exit::usage(
            "--event-timeout: times the events of streams; add --stream, --sse or --openai",
        ));
    }
    spec.load.streams.event_timeout = a.event_timeout;
    spec.load.streams.slo = stampede_flags::vllm::goodput(&a.goodput)?;
    if a.openai.is_some() && spec.load.variety.len() > 1 {
        // Each prompt once in turn over the run's calls, whichever connection sends
        // (one prompt is the run's one request).
        spec.load.walk = Some(stampede_engine::Walk {
            rate: 1.0,
            once: false,
        });
    }
    Ok(())
}

/// The spec the request and load flags describe: one request, or several in turn
/// (`--targets`, `--body-lines`); with the servers to share it among when a targets
/// file names several (else none).
fn build(a: &LoadArgs) -> Result<(LoadSpec, Vec<targets::Group>), Exit> {
    a.gaps()?;
    let keepalive = !a.no_keepalive;
    let headers = (a.headers.iter())
        .map(|h| common::header_arg(h))
        .collect::<Result<Vec<_>, _>>()?;
    let pattern = match (&a.url, a.rand_regex_url) {
        (Some(url), true) => Some(randurl::UrlPattern::parse(url, a.max_repeat)?),
        _ => None,
    };
    let (target, variety, servers) = match (&a.targets, &a.url) {
        (Some(file), _) => {
            let text = input::read_text(file, "--targets", Input::List)
                .map_err(|e| Exit::usage(e.to_string()))?;
            let entries = targets::parse(file, &text)?;
            let shared = targets::Common {
                headers: &headers,
                keepalive,
                body: None,
            };
            let mut groups = targets::requests(file, &entries, a.unix_socket.as_deref(), &shared)?;
            if groups.len() > 1 {
                // The spec takes the first server's; split shares it among them all.
                let first = &groups[0];
                (first.target.clone(), first.requests.clone(), groups)
            } else {
                let g = groups.pop().expect("a list has requests");
                (g.target, g.requests, Vec::new())
            }
        }
        // With a feeder the path is a template: the run's target is the URL's origin.
        (None, Some(url)) if a.feeder.is_some() => {
            let (origin, _) = split_origin(url);
            let mut t = common::resolve(&format!("{origin}/"), a.unix_socket.as_deref())?;
            t.url = url.clone();
            (t, Vec::new(), Vec::new())
        }
        (None, Some(url)) => match &pattern {
            // The fixed origin is resolved; the report names the pattern.
            Some(p) => {
                let mut t = common::resolve(&format!("{}/", p.origin), a.unix_socket.as_deref())?;
                t.url = url.clone();
                (t, Vec::new(), Vec::new())
            }
            None => (
                common::resolve(url, a.unix_socket.as_deref())?,
                Vec::new(),
                Vec::new(),
            ),
        },
        (None, None) => return Err(Exit::usage("give a URL, --targets FILE or --spec FILE")),
    };
    ws::check_flags(a, &target)?;
    let request = |body: Option<Vec<u8>>| {
        let mut b = RequestBuilder::native(&target, &a.method, keepalive);
        for (n, v) in &headers {
            b = b.set_header(n, v);
        }
        if let Some(body) = body {
            b = b.body(body);
        }
        b.build().map_err(|e| Exit::usage(e.to_string()))
    };
    let mut body = a.body_file.as_deref().map(common::read_body).transpose()?;
    let variety = match &a.body_lines {
        Some(file) if !variety.is_empty() => {
            return Err(Exit::usage(format!(
                "--body-lines {file}: with --targets, give each request its body with @path in the targets file"
            )))
        }
        // A WebSocket run's lines are its messages (see ws::upgrade).
        Some(_) if target.websocket => variety,
        Some(file) => targets::body_lines(file, &common::read_body(file)?, &|b| request(Some(b)))?,
        None => variety,
    };
    let tokenizer = tokenizer(a)?;
    if a.openai.is_some() && !servers.is_empty() {
        return Err(Exit::usage(format!(
            "--openai: the targets file names {} servers; the prompts go to one",
            servers.len()
        )));
    }
    let mut made = None;
    let mut send = None;
    let mut max_events = None;
    let variety = match (a.openai, &a.grpc.call) {
        (Some(api), _) => {
            let (requests, max) =
                openai_requests(a, api, &target, &headers, keepalive, tokenizer.as_ref())?;
            max_events = Some(max);
            requests
        }
        (None, Some(_)) => {
            let calls = a.grpc.calls(&target, a.tls.config(&target, true)?)?;
            made = calls.engine_calls();
            send = calls.send;
            calls.requests
        }
        (None, None) => variety,
    };
    let mut ws = None;
    let first = match variety.first() {
        Some(r) => r.clone(),
        None if target.websocket => {
            let up = ws::upgrade(a, &target, &headers, body.take())?;
            ws = Some(up.load);
            made = up.made;
            up.request
        }
        None => request(body)?,
    };
    let mut target = target;
    if a.grpc.call.is_some() {
        // The run is named by the method's URL.
        target.url = format!("{}{}", target.url.trim_end_matches('/'), first.target());
    }
    // A list of one (a targets file, body lines, gRPC messages) is the run's one
    // request, as any other run's, so that every shape takes it.
    let variety = if variety.len() == 1 {
        Vec::new()
    } else {
        variety
    };
    let tls = a.tls.config(&target, a.http2 || a.grpc.call.is_some())?;
    let mut spec = LoadSpec::new(target, first);
    spec.load.variety = variety;
    spec.load.streams.max_events = max_events;
    spec.calls = made;
    spec.tls = tls;
    spec.load.streams.send = send;
    spec.load.protocol.ws = ws;
    spec.load.connections = a.connections;
    spec.load.threads = a.threads.unwrap_or_else(common::cpus);
    spec.load.requests = a.requests;
    spec.load.keepalive = keepalive;
    spec.load.pipeline = a.streams.unwrap_or(a.pipeline);
    // gRPC goes over HTTP/2, each answer's messages watched.
    spec.load.protocol.http2 = a.http2 || a.grpc.call.is_some();
    if a.http3 {
        let mut h3 = stampede_engine::h3::H3Settings {
            gso: !a.no_udp_gso,
            ..Default::default()
        };
        if let Some(n) = a.max_udp_payload {
            h3.max_udp_payload = n;
        }
        if let Some(n) = a.qpack_table {
            h3.header_table = n;
        }
        spec.load.protocol.http3 = Some(h3);
    }
    spec.load.redirects = a.redirects;
    streams(a, &mut spec)?;
    spec.load.streams.tokenizer = tokenizer;
    if let Some(h) = a.send_horizon {
        spec.load.horizon = h;
    }
    spec.load.timeout = Some(a.timeout.unwrap_or(std::time::Duration::from_secs(30)));
    if spec.load.streams.stream == Some(stampede_engine::StreamMode::Messages)
        && a.timeout.is_none()
    {
        // A push stream is held until the server ends it or the run does; a stall is
        // --event-timeout's.
        spec.load.timeout = None;
    }
    if !a.inject.is_empty() {
        let profile =
            Profile::parse(&a.inject).map_err(|e| Exit::usage(format!("--inject: {e}")))?;
        spec.load.shape = Shape::Users(profile);
        spec.load.session = Session {
            calls: a.calls,
            burst: a.burst,
            think: a.think,
            ..Default::default()
        };
        // -d caps the run, as Gatling's maxDuration; otherwise it ends when the users do.
        spec.load.duration = a.duration;
        if spec.load.timeout.is_some() {
            spec.load.timeout = Some(a.timeout.unwrap_or(std::time::Duration::from_secs(60)));
        }
    } else if !a.rate_steps.is_empty() {
        let profile =
            Profile::parse(&a.rate_steps).map_err(|e| Exit::usage(format!("--rate-steps: {e}")))?;
        if profile.is_closed() {
            return Err(Exit::usage(
                "--rate-steps: give arrival steps (constantUsersPerSec, rampUsersPerSec, …); concurrent users are --inject's",
            ));
        }
        spec.load.shape = Shape::Paced(profile);
        // -d caps the run; otherwise it ends when the steps do.
        spec.load.duration = a.duration;
    } else {
        if let Some(rate) = a.rate {
            spec.load.shape = Shape::Rate {
                rate,
                gaps: a.gaps()?,
            };
        }
        spec.load.duration = match (a.requests, a.duration) {
            (None, None) => Some(std::time::Duration::from_secs(10)),
            (_, d) => d,
        };
    }
    spec.load.seed = a.seed;
    a.net.apply(&mut spec)?;
    if let Some(p) = pattern {
        if spec.proxy.is_some() && !spec.target.tls {
            return Err(Exit::usage(
                "--rand-regex-url with --proxy: drawn paths go through a proxy's tunnel only; use an https:// URL",
            ));
        }
        spec.hooks = Some(randurl::RandomPaths::hooks(
            p,
            &spec.load.request,
            spec.load.pipeline,
            a.seed,
        ));
    }
    Ok((spec, servers))
}

/// The spec in `--spec FILE`, its TLS configuration built here.
fn read_spec(path: &str) -> Result<LoadSpec, Exit> {
    let text =
        input::read_text(path, "--spec", Input::Config).map_err(|e| Exit::usage(e.to_string()))?;
    let portable =
        PortableSpec::from_json(&text).map_err(|e| Exit::usage(format!("--spec {path}: {e}")))?;
    let settings = portable.header.tls.clone();
    let mut spec = portable
        .into_spec()
        .map_err(|e| Exit::fail(e.to_string()))?;
    if let Some(t) = settings {
        spec.tls = crate::tls::from_settings(&t, &spec.target, spec.load.protocol.http2)?;
    }
    Ok(spec)
}

/// Long on purpose: the command's steps in the order they happen (target, spec, run,
/// outputs, assertions).
pub fn main(a: LoadArgs) -> Result<(), Exit> {
    let bounds = parse_bounds(&a.gatling_bounds)?;
    let asserts = a.out.assertions()?;
    let (mut spec, servers) = match &a.spec {
        Some(path) => (read_spec(path)?, Vec::new()),
        None => build(&a)?,
    };
    let journey = match journey(&a, &mut spec, servers.len())? {
        Some(j) => Some(j),
        None => feeder(&a, &mut spec, servers.len())?,
    };
    let chat = chat::chat(&a, &mut spec)?;
    if chat.is_some() && (!a.find_max.is_empty() || !servers.is_empty() || a.save_spec.is_some()) {
        return Err(Exit::usage(
            "--turns: conversations run against one server in one run (--find-max, a targets file and --save-spec are not offered with them)",
        ));
    }
    let several = |flag: &str, why: &str| {
        Exit::usage(format!(
            "{flag}: the targets file names {} servers; {why}",
            servers.len()
        ))
    };
    if let Some(path) = &a.save_spec {
        if !servers.is_empty() {
            return Err(several("--save-spec", "a saved spec sends to one server"));
        }
        if spec.calls.is_some() {
            return Err(Exit::usage(
                "--save-spec: the call data's templates make each call's message as it is sent; a saved spec carries requests built once (write the values in the data)",
            ));
        }
        spec.validate().map_err(|e| Exit::usage(e.to_string()))?;
        let tls = a.tls.settings(&spec.target)?;
        return common::write_file(path, &(PortableSpec::of(&spec, tls).to_json() + "\n"));
    }
    a.segments.apply(&mut spec)?;
    a.out.check_paths()?;
    measured(&spec, asserts.iter().map(|x| ("--assert", x)))?;
    a.live
        .check(a.out.json.as_deref() == Some("-"), !a.find_max.is_empty())?;
    if a.segments.in_fleet() && !a.find_max.is_empty() {
        return Err(Exit::usage(
            "--find-max runs one search on one machine; a fleet's segments run one load",
        ));
    }
    crate::fleet::barrier(&a.segments, &mut spec)?;
    if !a.find_max.is_empty() {
        if !servers.is_empty() {
            return Err(several(
                "--find-max",
                "a capacity search runs over one server",
            ));
        }
        return find_max(&a, spec, journey.as_ref(), &asserts);
    }
    let parts = match servers.is_empty() {
        true => vec![stampede_engine::Part {
            plan: spec
                .clone()
                .plan()
                .map_err(|e| Exit::usage(e.to_string()))?,
            places: Vec::new(),
        }],
        false => {
            let servers = (servers.into_iter())
                .map(|g| {
                    let tls = a.tls.config(&g.target, a.http2)?;
                    Ok(g.server(tls))
                })
                .collect::<Result<Vec<_>, Exit>>()?;
            let file = a.targets.as_deref().unwrap_or("--targets");
            (spec.split(servers)).map_err(|e| Exit::usage(format!("{file}: {e}")))?
        }
    };
    let made = spec.calls.clone();
    let mut live = a.live.start(&spec, a.dashboard.is_some())?;
    if let (Some(hub), Some(j)) = (&live.hub, &journey) {
        if a.feeder.is_none() {
            let j = j.clone();
            hub.watch_journeys(Box::new(move || {
                let l = j.live();
                stampede_metrics::JourneyTotals {
                    started: l.started,
                    completed: l.completed,
                    failed: l.failed,
                    checks_failed: l.checks_failed,
                }
            }));
        }
    }
    let dashboard = match &a.dashboard {
        Some(addr) => {
            let what = format!("{} {}", spec.load.request.method, spec.target.url);
            let d = Dashboard::start(
                addr,
                stampede_report::dashboard_page(&what),
                live.hub.clone(),
            )?;
            eprintln!("stampede: live dashboard at {}", d.url());
            Some(d)
        }
        None => None,
    };
    let records = live.records.take();
    let run = common::execute_parts(
        &parts,
        ProgressOptions {
            quiet: a.quiet,
            lines: true,
            dashboard: dashboard.clone(),
            metrics: live.hub.clone(),
            scrape: (a.server.scrape()?).map(|(url, every, names)| {
                stampede_metrics::scrape::ScrapeSpec {
                    url,
                    every,
                    names,
                    forward: None,
                }
            }),
            ..Default::default()
        },
        records,
    );
    live.end(run.as_ref().map_or(0, |r| r.raw_lost));
    let mut run = run?;
    if let Some(j) = &journey {
        j.annotate(&mut run.result);
        if a.feeder.is_some() {
            // Each request was a journey of one step: no sessions to speak of.
            run.result.sessions = None;
        }
        if let Some(why) = j.stopped() {
            let flag = if a.feeder.is_some() {
                "--feeder"
            } else {
                "--journey"
            };
            eprintln!("stampede: {flag}: {why}");
        } else if j.exhausted() {
            eprintln!(
                "stampede: --journey: the feeder's rows were each taken once and then again from the first (exhausted = \"again\")"
            );
        }
    }
    if let Some(c) = &chat {
        c.annotate(&mut run.result);
        let f = c.figures();
        eprintln!(
            "stampede: --turns: {} conversations begun, {} completed, {} failed, {} ended at the context limit; {} turns answered, {} exchanges dropped from histories, largest request {} tokens",
            f.started, f.completed, f.failed, f.ended_at_limit, f.turns_answered, f.exchanges_dropped, f.max_context_sent
        );
    }
    if let Some(why) = made.and_then(|m| m.0.failure()) {
        return Err(Exit::fail(format!("--call: the run stopped: {why}")));
    }
    let r = &run.result;
    let text = || match a.format {
        Format::Text => summary_with(r, a.verbose),
        Format::Gatling => gatling_report(r, bounds),
    };
    let written = report(&a, r, &text(), dashboard);
    let asserted = common::check_assertions(&asserts, r, &r.settings.url, a.out.junit.as_deref());
    written.and(asserted)
}

/// Writes a finished run's report, JSON, files and HTML as the flags ask.
fn report(
    a: &LoadArgs,
    r: &stampede_engine::RunResult,
    text: &str,
    dashboard: Option<std::sync::Arc<Dashboard>>,
) -> Result<(), Exit> {
    // With the records on standard output, the summary goes to standard error.
    let summary = |text: &str| match a.live.raw.as_deref() {
        Some("-") => eprint!("{}", paint(text, Stream::Err)),
        _ => common::out(&paint(text, Stream::Out)),
    };
    let mut w = common::Writes::default();
    match a.out.json.as_deref() {
        Some("-") => common::out(&(r.to_json() + "\n")),
        Some(path) => {
            summary(text);
            w.file(path, &(r.to_json() + "\n"));
        }
        None => summary(text),
    }
    for w in loud_warnings(r) {
        eprintln!("stampede: {w}");
    }
    a.out.write_files(r, &mut w);
    if a.out.html.is_some() || dashboard.is_some() {
        let env = serde_json::to_value(stampede_lab::environment::Environment::capture(&[]))
            .unwrap_or_default();
        let title = format!("{} {}", r.settings.method, r.settings.url);
        let html = stampede_report::run_html(r, &title, Some(&env));
        if let Some(p) = &a.out.html {
            w.file(p, &html);
        }
        if let Some(d) = dashboard {
            d.finish(html);
        }
    }
    w.done()
}

/// Refuses, before the run, an assertion on a stream figure the run will not time.
fn measured<'a>(
    spec: &LoadSpec,
    mut asserts: impl Iterator<Item = (&'a str, &'a stampede_engine::assert::Assertion)>,
) -> Result<(), Exit> {
    use stampede_engine::StreamMode;
    let stream = spec.load.streams.stream;
    let wrong = asserts.find_map(|(flag, x)| {
        if x.needs_tokens() && stream != Some(StreamMode::Openai) {
            Some(format!(
                "{flag} {:?}: completion tokens are counted with --openai",
                x.text
            ))
        } else if x.needs_stream() && stream.is_none() {
            Some(format!(
                "{flag} {:?}: stream figures are timed with --stream, --sse or --openai",
                x.text
            ))
        } else {
            None
        }
    });
    wrong.map_or(Ok(()), |m| Err(Exit::usage(m)))
}

/// `--find-max`: a capacity search with open-model steps of the spec's request and
/// connections; the report is the search's curve and the best step's summary.
fn find_max(
    a: &LoadArgs,
    spec: LoadSpec,
    journey: Option<&JourneyRun>,
    asserts: &[stampede_engine::assert::Assertion],
) -> Result<(), Exit> {
    use stampede_engine::arrivals::Gaps;
    use stampede_engine::assert::Assertion;
    use stampede_engine::capacity::{search, Per, SearchSpec};
    let conditions = a
        .find_max
        .iter()
        .map(|c| Assertion::parse(c).map_err(|e| Exit::usage(format!("--find-max {c:?}: {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    measured(&spec, conditions.iter().map(|x| ("--find-max", x)))?;
    let max_rate = a.max_rate.unwrap_or(0.0);
    if !(max_rate.is_finite() && max_rate >= 1.0) {
        return Err(Exit::usage(format!(
            "--max-rate: {max_rate} is not a rate; give at least 1 req/s, e.g. --max-rate 50000"
        )));
    }
    if !(a.precision > 0.0 && a.precision < 100.0) {
        return Err(Exit::usage(format!(
            "--precision: {} is not a percentage between 0 and 100, e.g. --precision 5",
            a.precision
        )));
    }
    let mut s = SearchSpec::new(conditions, max_rate);
    // A journey's search offers users arriving at the rate, each walking it once; a
    // feeder's, requests with its rows, as any search.
    if journey.is_some() && a.feeder.is_none() {
        s.per = Per::Journey;
        if spec.load.shape.has_sessions() {
            return Err(Exit::usage(
                "--find-max: the search sets the users' arrivals itself; drop --inject",
            ));
        }
    }
    let unit = s.per.unit();
    if let Some(r) = a.start_rate {
        if !(r.is_finite() && r >= 1.0 && r <= max_rate) {
            return Err(Exit::usage(format!(
                "--start-rate: {r} must be at least 1 and at most --max-rate ({max_rate})"
            )));
        }
        s.start_rate = r;
    }
    s.precision = a.precision / 100.0;
    s.max_steps = a.max_steps.max(1);
    let gaps = a.gaps()?;
    if s.per == Per::Journey && !matches!(gaps, Gaps::Even | Gaps::Poisson) {
        return Err(Exit::usage(
            "--burstiness: a journey's search has its users arrive evenly or, with --poisson, as a Poisson process",
        ));
    }
    // Each step's run, and the journey's own figures counted afresh for it.
    let step_spec = |rate: f64, d: std::time::Duration| {
        let mut sp = spec.clone();
        s.per.step(&mut sp, rate, d, gaps);
        let run = journey.map(|j| {
            let run = j.fresh();
            sp.hooks = Some(run.hooks());
            run
        });
        (sp, run)
    };
    let finish = |r: &mut stampede_engine::RunResult, run: Option<JourneyRun>| {
        if let Some(j) = run {
            j.annotate(r);
            if a.feeder.is_some() {
                r.sessions = None;
            }
        }
    };
    let quiet = || ProgressOptions {
        quiet: true,
        ..Default::default()
    };
    let mut n = 0;
    let (capacity, best) = search(&s, |rate| {
        n += 1;
        if !a.quiet {
            eprintln!(
                "stampede: step {n}: {} {unit}",
                thousands(rate.round() as u64)
            );
        }
        if !a.step_warmup.is_zero() {
            common::execute(step_spec(rate, a.step_warmup).0, quiet())?;
        }
        let (sp, journeys) = step_spec(rate, a.step_duration);
        let mut run = common::execute(sp, quiet())?;
        finish(&mut run.result, journeys);
        if !a.quiet {
            let r = &run.result;
            let answered = match (s.per, &r.sessions) {
                (Per::Journey, Some(j)) => format!(
                    "{} journeys completed, {} failed",
                    thousands(j.completed),
                    thousands(j.failed)
                ),
                _ => format!("{} answered", thousands(r.throughput_rps.round() as u64)),
            };
            eprintln!(
                "stampede: step {n}: {} {unit} offered, {answered}, p99 {}",
                thousands(rate.round() as u64),
                human_us(r.latency.at(99.0).unwrap_or(0) as f64)
            );
        }
        Ok::<_, Exit>(run.result)
    })?;
    let Some(mut r) = best else {
        return Err(Exit::fail("the capacity search measured no step"));
    };
    r.capacity = Some(capacity);
    let c = r.capacity.as_ref().expect("set above");
    let text = format!(
        "{}\nBest step ({}):\n{}",
        stampede_report::capacity_report(c),
        if c.max_rate.is_some() {
            "the highest rate that passed"
        } else {
            "none passed; the last step"
        },
        summary_with(&r, a.verbose)
    );
    report(a, &r, &text, None)?;
    if r.capacity.as_ref().is_some_and(|c| c.max_rate.is_none()) {
        return Err(Exit::fail("no rate met the --find-max conditions"));
    }
    common::check_assertions(asserts, &r, &r.settings.url, a.out.junit.as_deref())
}

fn parse_bounds(s: &str) -> Result<GatlingBounds, Exit> {
    let err = || {
        Exit::usage(format!(
            "--gatling-bounds: {s:?} is not LOW,HIGH in ms with LOW < HIGH, e.g. 800,1200"
        ))
    };
    let (lo, hi) = s.split_once(',').ok_or_else(err)?;
    let lo: u64 = lo.trim().parse().map_err(|_| err())?;
    let hi: u64 = hi.trim().parse().map_err(|_| err())?;
    if lo >= hi {
        return Err(err());
    }
    Ok(GatlingBounds {
        lower_ms: lo,
        higher_ms: hi,
    })
}
