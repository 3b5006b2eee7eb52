//! The bench runner: for each target, start it, wait until it answers, verify every
//! scenario's response, prime, warm up, measure N times, and stop it.
//!
//! Every measured run goes to the store the moment it finishes, so an interrupted or
//! crashed bench keeps what it measured. A target that will not start, or dies during a
//! run, is recorded with the tail of its stderr and the bench goes on with the next.
//! Progress is reported through an [`Observer`], so the runner knows nothing of
//! terminals.

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use stampede_engine::request::AB_CONTENT_TYPE;
use stampede_engine::{AbRequest, Address, Control, LoadSpec, Request, RequestBuilder, SpecError};

use crate::environment::{Environment, TargetEnv};
use crate::plan::{OnFailure, Plan, Scenario, Style, Target, TargetKind};
use crate::process::{self, Running};
use crate::record::{AssertionOutcome, Outcome, RunNote, RunRecord, TargetStatus, Verification};
use crate::store::{Store, StoreError};
use crate::verify;

/// Which run of a scenario is going.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Warm-up run `k` of `n`, discarded.
    Warmup(u32, u32),
    /// Measured run `k` of `n`.
    Measured(u32, u32),
    /// A step of the capacity search that is measured run `run` of `runs`.
    Step {
        /// The measured run the search is.
        run: u32,
        /// Measured runs in all.
        runs: u32,
        /// 1-based step of this search.
        step: u32,
        /// The step's offered rate, req/s.
        rate: u64,
        /// The step's discarded warm-up, not the step itself.
        warmup: bool,
    },
}

/// What the runner reports as it goes.
#[derive(Debug)]
pub enum BenchEvent<'a> {
    /// A target is being started (or, if external, checked).
    TargetStarting {
        /// Its name.
        target: &'a str,
    },
    /// A target answers its readiness check.
    TargetReady {
        /// Its name.
        target: &'a str,
        /// Its base URL.
        url: &'a str,
        /// Its version, when a version command was given.
        version: Option<&'a str>,
    },
    /// A target could not be measured at all, or died; the bench goes on.
    TargetFailed {
        /// Its name.
        target: &'a str,
        /// Why, with the tail of its stderr when there is one.
        reason: &'a str,
    },
    /// A scenario's response was checked.
    Verified {
        /// Target name.
        target: &'a str,
        /// Scenario name.
        scenario: &'a str,
        /// What the checks found.
        outcome: &'a Verification,
    },
    /// A run starts; `control` carries its live counters.
    RunStarted {
        /// Target name.
        target: &'a str,
        /// Scenario name.
        scenario: &'a str,
        /// Warm-up or measured, k of n.
        phase: Phase,
        /// Live counters of the run.
        control: &'a Arc<Control>,
    },
    /// A run ended.
    RunFinished {
        /// Target name.
        target: &'a str,
        /// Scenario name.
        scenario: &'a str,
        /// Warm-up or measured, k of n.
        phase: Phase,
        /// Completed responses per second.
        rps: f64,
        /// Failed requests.
        failed: u64,
        /// Completed responses that were not 2xx.
        non_2xx: u64,
    },
    /// A measured run's capacity search ended.
    Searched {
        /// Target name.
        target: &'a str,
        /// Scenario name.
        scenario: &'a str,
        /// The measured run the search was.
        run: u32,
        /// What it found.
        capacity: &'a stampede_engine::capacity::Capacity,
    },
}

/// Receives [`BenchEvent`]s.
pub trait Observer {
    /// Called for each event, on the runner's thread.
    fn event(&mut self, e: BenchEvent<'_>);
}

/// How the runner is set up, beyond the plan.
#[derive(Debug, Clone)]
pub struct Options {
    /// The stampede executable, substituted for `{stampede}` in start commands.
    pub stampede: PathBuf,
    /// Polled between and during runs: true stops the bench (Ctrl-C, SIGTERM).
    pub interrupted: fn() -> bool,
}

/// Everything a bench produced (also in the store).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BenchOutcome {
    /// The bench's id in the store.
    pub bench_id: i64,
    /// The plan's name.
    pub plan: String,
    /// Where and with what it ran.
    pub environment: Environment,
    /// Targets in plan order.
    pub targets: Vec<TargetStatus>,
    /// Verification outcomes.
    pub verifications: Vec<Verification>,
    /// Measured runs, in the order they ran.
    pub runs: Vec<RunRecord>,
    /// The scenarios' assertions, checked on every measured run.
    pub assertions: Vec<AssertionOutcome>,
    /// What the runner decided per target × scenario (automatic repetitions).
    pub notes: Vec<RunNote>,
    /// True when the bench was stopped early.
    pub interrupted: bool,
}

/// Why a bench could not run at all (a target failing is not such a reason).
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Runs `plan`, storing into `store`.
pub fn run_bench(
    plan: &Plan,
    store: &Store,
    opts: &Options,
    obs: &mut dyn Observer,
) -> Result<BenchOutcome, BenchError> {
    let env = Environment::capture(&plan.client_cpus);
    let started = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let bench_id = store.begin_bench(started, &plan.name, &plan.source, &env_json(&env))?;
    let out = BenchOutcome {
        bench_id,
        plan: plan.name.clone(),
        environment: env.clone(),
        targets: Vec::new(),
        verifications: Vec::new(),
        runs: Vec::new(),
        assertions: Vec::new(),
        notes: Vec::new(),
        interrupted: false,
    };
    let mut b = Bench {
        plan,
        store,
        opts,
        obs,
        out,
        env,
        copies: Default::default(),
    };
    for t in &plan.targets {
        if (opts.interrupted)() {
            break;
        }
        let status = b.run_target(t)?;
        store.add_target_info(
            bench_id,
            &status.name,
            status.version.as_deref(),
            match &t.kind {
                TargetKind::Command { start, .. } => Some(start.as_str()),
                TargetKind::External { url } => Some(url.as_str()),
            },
            &status.status,
            status.stderr_tail.as_deref(),
        )?;
        b.out.targets.push(status);
        store.set_environment(bench_id, &env_json(&b.env))?;
    }
    let Bench { mut out, env, .. } = b;
    out.interrupted = (opts.interrupted)();
    out.environment = env;
    store.end_bench(
        bench_id,
        if out.interrupted {
            "interrupted"
        } else {
            "complete"
        },
    )?;
    Ok(out)
}

fn env_json(env: &Environment) -> String {
    serde_json::to_string(env).expect("the environment serialises")
}

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
    let request = scenario_request(s, &target, s.keepalive)?;
    let mut spec = LoadSpec::new(target, request);
    spec.tls = tls;
    spec.http2 = s.http2;
    spec.connections = s.connections;
    spec.threads = plan
        .client_threads
        .unwrap_or(if plan.client_cpus.is_empty() {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            plan.client_cpus.len()
        });
    spec.requests = s.requests;
    spec.duration = s.duration;
    spec.keepalive = s.keepalive;
    spec.pipeline = s.pipeline;
    spec.timeout = Some(s.timeout);
    spec.shape = s.shape.clone();
    spec.session = s.session;
    spec.script = script;
    if let Some(search) = &s.search {
        // Its first step; the search sets each step's rate.
        spec.shape = stampede_engine::Shape::Rate {
            rate: search.spec().start_rate,
            poisson: search.poisson,
        };
        spec.duration = Some(search.step);
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
        let url = format!("http://127.0.0.1:9{}", s.path);
        let built = stampede_engine::Target::parse(&url)
            .map_err(|e| e.to_string())
            .and_then(|target| {
                let (_, script) = checks_and_script(s, "http://127.0.0.1:9", &target)?;
                scenario_spec(plan, s, target, None, script).map_err(|e| e.to_string())
            });
        if let Err(e) = built {
            found.push((s.line, format!("scenario {:?}: {e}", s.name)));
        }
    }
    found
}

/// What the discarded warm-up's figure `w` says against the measured runs' figures: a
/// warm-up effect (a JIT, caches, pools) is named only where the difference passes
/// 10 % and the warm-up lies outside the 95 % prediction interval of the measured runs
/// (where one more run like them would fall: mean ± t·sd·√(1 + 1/n)), that is beyond
/// their own spread; a difference their spread covers is said to be that.
fn warmup_verdict(w: f64, measured: &[f64], higher_is_better: bool) -> String {
    let s = crate::stats::summarize(measured);
    let m = s.mean;
    let better = if higher_is_better { m / w } else { w / m };
    if !(better.is_finite() && better > 0.0) {
        return "nothing to compare (a figure of zero)".to_string();
    }
    let words = if better > 1.0 { "better" } else { "worse" };
    let pct = (better - 1.0).abs() * 100.0;
    if (better - 1.0).abs() <= 0.1 {
        return "within 10 %: no warm-up effect to speak of".to_string();
    }
    if s.n < 2 {
        return format!(
            "the measured run did {pct:.0} % {words}; with one measured run their spread is unknown, so no warm-up effect can be told from noise"
        );
    }
    let n = s.n as f64;
    let reach = crate::stats::t_quantile(0.975, n - 1.0) * s.sd * (1.0 + 1.0 / n).sqrt();
    let spread = reach / m * 100.0;
    if (w - m).abs() <= reach {
        format!(
            "the measured runs did {pct:.0} % {words} on average, but a run like them may land anywhere within ±{spread:.0} % of their mean: no warm-up effect can be told from noise"
        )
    } else if better > 1.0 {
        format!(
            "the measured runs did {pct:.0} % better, beyond their own spread (±{spread:.0} %): how a JIT, caches or pools still warming up in the discarded run show"
        )
    } else {
        format!(
            "the measured runs did {pct:.0} % worse than the discarded one, beyond their own spread (±{spread:.0} %)"
        )
    }
}

/// How long client hosts may take over a run's segment before they are stopped: the
/// shared start, the run's duration (an hour for a run bounded by a count), and a
/// minute for starting and sending results back.
fn hosts_deadline(duration: Option<Duration>) -> Duration {
    HOSTS_START_IN + duration.unwrap_or(Duration::from_secs(3600)) + Duration::from_secs(60)
}

/// A free TCP port on 127.0.0.1, as the kernel hands one out.
fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn substitute(cmd: &str, port: u16, stampede: &std::path::Path) -> String {
    cmd.replace("{port}", &port.to_string())
        .replace("{stampede}", &shell_quote(&stampede.display().to_string()))
}

fn shell_quote(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// The first line a target's version command prints; run on the target's host when
/// it has one.
fn version_of(
    cmd: &str,
    port: u16,
    stampede: &std::path::Path,
    on: Option<(&crate::remote::Hosts, &str)>,
) -> Option<String> {
    let line = substitute(cmd, port, stampede);
    let mut c = match on {
        Some((hosts, host)) => {
            let mut c = hosts.base("ssh");
            c.arg(host).arg(line);
            c
        }
        None => {
            let mut c = std::process::Command::new("sh");
            c.arg("-c").arg(line);
            c
        }
    };
    let o = c.stdin(std::process::Stdio::null()).output().ok()?;
    let text = if o.stdout.is_empty() {
        o.stderr
    } else {
        o.stdout
    };
    let s = String::from_utf8_lossy(&text);
    s.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_string)
}

/// The address of an external target's URL, and its host name (for TLS).
fn socket_addr(url: &str) -> Result<(SocketAddr, String), String> {
    let t = stampede_engine::Target::parse(url).map_err(|e| e.to_string())?;
    match t.address {
        Address::Tcp(a) => a
            .first()
            .copied()
            .map(|a| (a, t.host.clone()))
            .ok_or_else(|| format!("{url} resolves to no address")),
        Address::Unix(_) => Err(format!("{url} is not a TCP address")),
    }
}

/// How long before the shared start the client hosts are given: time for ssh to
/// connect to each and stampede to start there.
const HOSTS_START_IN: Duration = Duration::from_secs(2);

/// One run as segments on the plan's client hosts (one each, over ssh, all from one
/// shared start), merged exactly; any host that fails fails the run, naming it.
fn measure_on_hosts(
    remote: &crate::remote::Hosts,
    copies: &mut crate::remote::Copies,
    spec: &LoadSpec,
    t: &Target,
) -> Result<stampede_engine::RunResult, String> {
    use stampede_engine::portable::{PortableSpec, TlsSettings};
    let tls = match &t.tls {
        None => None,
        Some(tls) => Some(TlsSettings {
            insecure: tls.insecure,
            ca_pem: match &tls.cacert {
                Some(p) => Some(
                    stampede_engine::input::read_text(
                        &p.display().to_string(),
                        "cacert",
                        stampede_engine::input::Input::Config,
                    )
                    .map_err(|e| e.to_string())?,
                ),
                None => None,
            },
            resume: false,
            version: None,
        }),
    };
    let text = PortableSpec::of(spec, tls).to_json();
    let program = copies
        .program(remote, &remote.hosts)
        .map_err(|e| e.to_string())?;
    let at = (std::time::SystemTime::now() + HOSTS_START_IN)
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(|e| e.to_string())?
        .as_secs_f64();
    let outcomes = remote
        .run_segments(
            |k, n| {
                [
                    program.as_str(),
                    "load",
                    "-q",
                    "--spec",
                    "-",
                    "--segment",
                    &format!("{k}/{n}"),
                    "--start-at",
                    &format!("{at:.3}"),
                    "--json",
                    "-",
                ]
                .map(String::from)
                .to_vec()
            },
            Some(text.as_bytes()),
            hosts_deadline(spec.duration),
        )
        .map_err(|e| e.to_string())?;
    let mut merger = stampede_engine::merge::Merger::new(false);
    for (host, r) in outcomes {
        let r = r.map_err(|e| format!("client host {host}: {e}"))?;
        merger
            .add(&r)
            .map_err(|e| format!("client host {host}: {e}"))?;
    }
    merger.finish().map_err(|e| e.to_string())
}

/// A started (or external) target while it is being measured.
struct Live {
    url: String,
    ep: verify::Endpoint,
    process: Option<Running>,
}

impl Live {
    /// `Some(status)` when the started process has exited.
    fn died(&mut self) -> Option<String> {
        self.process
            .as_mut()
            .and_then(|p| p.poll_exit())
            .map(|e| e.status)
    }

    fn stderr_tail(&self) -> Option<String> {
        self.process
            .as_ref()
            .map(|p| p.stderr_tail())
            .filter(|s| !s.trim().is_empty())
    }
}

fn failed(
    name: &str,
    status: String,
    version: Option<String>,
    live: Option<&Live>,
) -> TargetStatus {
    TargetStatus {
        name: name.to_string(),
        ok: false,
        status,
        version,
        stderr_tail: live.and_then(Live::stderr_tail),
    }
}

/// Why a target did not come up, and the process if one was started (for its stderr).
type StartFailure = Box<(String, Option<Live>)>;

/// The address and host name a started target is reached at: its `address`, else the
/// host of its ssh destination, else 127.0.0.1.
fn started_at(t: &Target, port: u16) -> Result<(SocketAddr, String), String> {
    use std::net::ToSocketAddrs;
    let host = match (&t.address, &t.kind) {
        (Some(a), _) => a.clone(),
        (None, TargetKind::Command { host: Some(h), .. }) => {
            h.rsplit_once('@').map_or(h.as_str(), |x| x.1).to_string()
        }
        _ => "127.0.0.1".to_string(),
    };
    let bare = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let addr = (bare.as_str(), port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {host}: {e}"))?
        .next()
        .ok_or_else(|| format!("{host} resolves to no address"))?;
    Ok((addr, bare))
}

/// The stampede program `{stampede}` names on a target's host: the plan's (copied
/// there once with `[ssh] copy`).
fn stampede_on(
    host: &str,
    remote: &crate::remote::Hosts,
    copies: &mut crate::remote::Copies,
) -> Result<std::path::PathBuf, String> {
    copies
        .program(remote, &[host.to_string()])
        .map(std::path::PathBuf::from)
        .map_err(|e| e.to_string())
}

/// Starts the target and waits until it answers its readiness path.
fn bring_up(
    t: &Target,
    opts: &Options,
    remote: &crate::remote::Hosts,
    copies: &mut crate::remote::Copies,
) -> Result<Live, StartFailure> {
    let tls = match &t.tls {
        None => None,
        Some(tls) => Some(
            stampede_tls::client_config(&stampede_tls::ClientOptions {
                insecure: tls.insecure,
                ca_file: tls.cacert.clone(),
                alpn: stampede_tls::alpn(false),
                ..Default::default()
            })
            .map_err(|e| Box::new((format!("TLS: {e}"), None)))?,
        ),
    };
    match &t.kind {
        TargetKind::External { url } => {
            let (addr, host) = socket_addr(url).map_err(|e| Box::new((e, None)))?;
            let live = Live {
                url: url.clone(),
                ep: verify::Endpoint {
                    addr,
                    tls: tls.map(|c| (c, host)),
                    http2: false,
                },
                process: None,
            };
            wait_ready(t, live)
        }
        TargetKind::Command {
            start,
            env,
            cwd,
            stop_grace,
            host,
        } => {
            let port = match (t.port, host) {
                (Some(p), Some(_)) => p,
                (Some(p), None) => {
                    let bind = t.address.as_deref().unwrap_or("127.0.0.1");
                    if let Err(e) = TcpListener::bind((bind, p)) {
                        return Err(Box::new((
                            format!("port {p} is not free ({e}); stop whatever listens there or leave port out of the plan to use a free one"),
                            None,
                        )));
                    }
                    p
                }
                (None, _) => {
                    free_port().map_err(|e| Box::new((format!("no free port: {e}"), None)))?
                }
            };
            let (addr, name) = started_at(t, port).map_err(|e| Box::new((e, None)))?;
            let scheme = if tls.is_some() { "https" } else { "http" };
            let url = match addr {
                SocketAddr::V6(_) => format!("{scheme}://[{name}]:{port}"),
                SocketAddr::V4(_) => format!("{scheme}://{name}:{port}"),
            };
            let process = match host {
                None => {
                    let cmd = substitute(start, port, &opts.stampede);
                    let guard = process::Guard {
                        exe: &opts.stampede,
                        grace: *stop_grace,
                    };
                    Running::start(&cmd, env, cwd.as_deref(), &t.cpus, Some(guard))
                        .map_err(|e| Box::new((format!("could not run {cmd:?}: {e}"), None)))?
                }
                Some(h) => {
                    let exe = stampede_on(h, remote, copies).map_err(|e| Box::new((e, None)))?;
                    let cmd = substitute(start, port, &exe);
                    Running::start_remote(
                        remote,
                        h,
                        &cmd,
                        env,
                        cwd.as_deref(),
                        &t.cpus,
                        *stop_grace,
                    )
                    .map_err(|e| {
                        Box::new((
                            format!("could not run ssh to start {cmd:?} on {h}: {e}"),
                            None,
                        ))
                    })?
                }
            };
            wait_ready(
                t,
                Live {
                    url,
                    ep: verify::Endpoint {
                        addr,
                        tls: tls.map(|c| (c, name)),
                        http2: false,
                    },
                    process: Some(process),
                },
            )
        }
    }
}

fn wait_ready(t: &Target, mut live: Live) -> Result<Live, StartFailure> {
    let req = RequestBuilder::new("GET", &t.ready_path)
        .header("Host", &live.ep.addr.to_string())
        .header("Connection", "close")
        .build()
        .map_err(|e| Box::new((format!("ready path: {e}"), None)))?;
    let deadline = Instant::now() + t.ready_timeout;
    loop {
        if let Some(status) = live.died() {
            return Err(Box::new((
                format!("exited before it was ready ({status})"),
                Some(live),
            )));
        }
        let last = match verify::fetch(&live.ep, &req.bytes, Duration::from_secs(2)) {
            Ok(_) => return Ok(live),
            // It listens but refuses our TLS, or we its certificate: waiting will not help.
            Err(e) if e.tls => {
                return Err(Box::new((
                    format!("GET {} at {}: {e}", t.ready_path, live.url),
                    Some(live),
                )))
            }
            Err(e) => e,
        };
        if Instant::now() >= deadline {
            return Err(Box::new((
                format!(
                    "not ready within {:?}: GET {} at {}: {last}",
                    t.ready_timeout, t.ready_path, live.url
                ),
                Some(live),
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
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
fn build_request(
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
struct Check<'a> {
    label: Option<String>,
    request: Request,
    verify: &'a crate::plan::Verify,
}

/// The checks of a scenario (one per step for a list of requests), and the script its
/// sessions run (empty for a single request).
#[allow(clippy::type_complexity)]
fn checks_and_script<'a>(
    s: &'a Scenario,
    base_url: &str,
    target: &stampede_engine::Target,
) -> Result<(Vec<Check<'a>>, Vec<stampede_engine::Step>), String> {
    if s.steps.is_empty() {
        let check = Check {
            label: None,
            request: scenario_request(s, target, false).map_err(|e| e.to_string())?,
            verify: &s.verify,
        };
        return Ok((vec![check], Vec::new()));
    }
    let mut checks = Vec::new();
    let mut script = Vec::new();
    for st in &s.steps {
        let t = stampede_engine::Target::parse(&format!("{base_url}{}", st.path))
            .map_err(|e| e.to_string())?;
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
            .map_err(|e| e.to_string())
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

/// One bench in progress: the plan, where results go, and what it has produced so far.
struct Bench<'a> {
    plan: &'a Plan,
    store: &'a Store,
    opts: &'a Options,
    obs: &'a mut dyn Observer,
    out: BenchOutcome,
    env: Environment,
    /// Hosts this stampede was copied to (`[ssh] copy`).
    copies: crate::remote::Copies,
}

/// How a scenario on a target ended, for the scenarios after it.
enum Next {
    /// Go on with the next scenario.
    Go,
    /// Stop this target: interrupted (`None`), or failed with this status.
    Stop(Option<String>),
}

impl Bench<'_> {
    /// Starts target `t`, runs every scenario on it, and stops it.
    fn run_target(&mut self, t: &Target) -> Result<TargetStatus, BenchError> {
        self.obs
            .event(BenchEvent::TargetStarting { target: &t.name });
        let mut live = match bring_up(t, self.opts, &self.plan.remote, &mut self.copies) {
            Ok(l) => l,
            Err(failure) => {
                let (reason, live) = *failure;
                let s = failed(
                    &t.name,
                    format!("failed to start: {reason}"),
                    None,
                    live.as_ref(),
                );
                report_failure(self.obs, &s);
                if let Some(mut l) = live {
                    stop_live(t, &mut l);
                }
                return Ok(s);
            }
        };
        let port = live.ep.addr.port();
        let version = t.version.as_deref().and_then(|v| match &t.kind {
            TargetKind::Command { host: Some(h), .. } => {
                let exe = stampede_on(h, &self.plan.remote, &mut self.copies).ok()?;
                version_of(v, port, &exe, Some((&self.plan.remote, h)))
            }
            _ => version_of(v, port, &self.opts.stampede, None),
        });
        self.env.targets.insert(
            t.name.clone(),
            TargetEnv {
                version: version.clone(),
                command: match &t.kind {
                    TargetKind::Command { start, .. } => Some(start.clone()),
                    TargetKind::External { url } => Some(url.clone()),
                },
                cpus: t.cpus.clone(),
            },
        );
        self.obs.event(BenchEvent::TargetReady {
            target: &t.name,
            url: &live.url,
            version: version.as_deref(),
        });
        let mut status = None;
        for s in &self.plan.scenarios {
            if (self.opts.interrupted)() {
                break;
            }
            if let Next::Stop(st) = self.run_scenario(t, &mut live, s)? {
                status = st;
                break;
            }
        }
        let result = match status {
            Some(s) => {
                let st = failed(&t.name, s, version, Some(&live));
                report_failure(self.obs, &st);
                st
            }
            None => TargetStatus {
                name: t.name.clone(),
                ok: true,
                status: String::new(),
                version,
                stderr_tail: None,
            },
        };
        let stopped = stop_live(t, &mut live);
        Ok(TargetStatus {
            status: match (result.ok, stopped) {
                (true, Some(e)) => format!("stopped: {e}"),
                (true, None) => "external: not started or stopped".into(),
                _ => result.status.clone(),
            },
            ..result
        })
    }

    /// One scenario on a running target: verify its answers, then (unless that
    /// failed) prime, warm up and measure.
    fn run_scenario(
        &mut self,
        t: &Target,
        live: &mut Live,
        s: &Scenario,
    ) -> Result<Next, BenchError> {
        let stop = |e: String| Ok(Next::Stop(Some(format!("scenario {}: {e}", s.name))));
        let url = format!("{}{}", live.url, s.path);
        let target = match stampede_engine::Target::parse(&url) {
            Ok(x) => x,
            Err(e) => return stop(e.to_string()),
        };
        let (checks, script) = match checks_and_script(s, &live.url, &target) {
            Ok(x) => x,
            Err(e) => return stop(e),
        };
        // An HTTP/2 scenario is verified and measured over HTTP/2; over TLS it offers h2
        // first, and ALPN may still choose HTTP/1.1.
        let mut ep = live.ep.clone();
        if s.http2 {
            ep.http2 = true;
            if let Some((c, _)) = ep.tls.as_mut() {
                let mut h2 = (**c).clone();
                h2.alpn_protocols = stampede_tls::alpn(true);
                *c = std::sync::Arc::new(h2);
            }
        }
        let outcome = self.verify(t, s, &ep, &checks)?;
        if let Some(st) = live.died() {
            return Ok(Next::Stop(Some(format!(
                "died during verification of {}: {st}",
                s.name
            ))));
        }
        if outcome == Outcome::Fail {
            return Ok(Next::Go);
        }
        if self.plan.runs.primer {
            let _ = verify::fetch(&ep, &checks[0].request.bytes, s.timeout);
        }
        let spec = match self.spec(s, target, &ep, script) {
            Ok(spec) => spec,
            Err(e) => return stop(e),
        };
        self.repetitions(t, s, live, &spec)
    }

    /// Verifies the scenario's answers (each on a fresh connection that the server
    /// closes after the response) and records the outcome.
    fn verify(
        &mut self,
        t: &Target,
        s: &Scenario,
        ep: &verify::Endpoint,
        checks: &[Check<'_>],
    ) -> Result<Outcome, BenchError> {
        let (mut failures, mut fatal) = (Vec::new(), false);
        for c in checks {
            let outcome = verify::verify(ep, &c.request.bytes, c.verify, s.timeout);
            fatal |= !outcome.passed && c.verify.on_failure == OnFailure::Fail;
            failures.extend(outcome.failures.into_iter().map(|f| match &c.label {
                Some(l) => format!("{l}: {f}"),
                None => f,
            }));
        }
        let v = Verification {
            target: t.name.clone(),
            scenario: s.name.clone(),
            outcome: match (failures.is_empty(), fatal) {
                (true, _) => Outcome::Pass,
                (false, false) => Outcome::Warn,
                (false, true) => Outcome::Fail,
            },
            failures,
        };
        self.store.add_verification(self.out.bench_id, &v)?;
        self.obs.event(BenchEvent::Verified {
            target: &t.name,
            scenario: &s.name,
            outcome: &v,
        });
        let outcome = v.outcome;
        self.out.verifications.push(v);
        Ok(outcome)
    }

    /// The load a scenario puts on the target at `ep`.
    fn spec(
        &self,
        s: &Scenario,
        target: stampede_engine::Target,
        ep: &verify::Endpoint,
        script: Vec<stampede_engine::Step>,
    ) -> Result<LoadSpec, String> {
        let tls = ep.tls.as_ref().map(|(c, _)| c.clone());
        scenario_spec(self.plan, s, target, tls, script).map_err(|e| e.to_string())
    }

    /// Warm-up runs, then measured ones, each stored the moment it ends along with
    /// the scenario's assertions checked on it.
    fn repetitions(
        &mut self,
        t: &Target,
        s: &Scenario,
        live: &mut Live,
        spec: &LoadSpec,
    ) -> Result<Next, BenchError> {
        let runs = &self.plan.runs;
        let most = runs.most();
        // A search warms up before each of its steps instead.
        let warmups = if s.search.is_some() { 0 } else { runs.warmup };
        let mut warm = Vec::new();
        for i in 0..warmups + most {
            if (self.opts.interrupted)() {
                return Ok(Next::Stop(None));
            }
            let phase = if i < warmups {
                Phase::Warmup(i + 1, warmups)
            } else {
                Phase::Measured(i + 1 - warmups, most)
            };
            if i > 0 {
                sleep_unless_interrupted(runs.pause, self.opts);
            }
            let record = match (&s.search, phase) {
                (Some(search), Phase::Measured(k, n)) => {
                    self.search(spec, live, t, s, search, (k, n))
                }
                _ => self.measure(spec, live, t, &s.name, phase),
            };
            let record = match record {
                Ok(r) => r,
                Err(e) => {
                    let st = format!("{} run could not start: {e}", s.name);
                    return Ok(Next::Stop(Some(st)));
                }
            };
            if (self.opts.interrupted)() {
                // A run cut short measures nothing comparable: keep it out of the store.
                return Ok(Next::Stop(None));
            }
            if let Some(st) = live.died() {
                let when = match phase {
                    Phase::Warmup(k, _) => format!("warm-up {k}"),
                    Phase::Measured(k, _) | Phase::Step { run: k, .. } => format!("run {k}"),
                };
                let st = format!("died during {} {when}: {st}", s.name);
                return Ok(Next::Stop(Some(st)));
            }
            if let Phase::Warmup(..) = phase {
                warm.push(record.result);
                continue;
            }
            if let Phase::Measured(k, _) = phase {
                let record = RunRecord {
                    repetition: k,
                    ..record
                };
                self.store.add_run(self.out.bench_id, &record)?;
                for a in &s.asserts {
                    self.out.assertions.push(AssertionOutcome {
                        target: t.name.clone(),
                        scenario: s.name.clone(),
                        repetition: k,
                        checked: a.check(&record.result),
                    });
                }
                self.out.runs.push(record);
                if let Some(auto) = runs.auto {
                    if let Some(why) = self.enough(t, s, k, auto) {
                        let note = RunNote {
                            target: t.name.clone(),
                            scenario: s.name.clone(),
                            note: why,
                        };
                        self.store.add_note(self.out.bench_id, &note)?;
                        self.out.notes.push(note);
                        break;
                    }
                }
            }
        }
        if let Some(note) = self.warmup_note(t, s, &warm) {
            self.store.add_note(self.out.bench_id, &note)?;
            self.out.notes.push(note);
        }
        Ok(Next::Go)
    }

    /// The discarded warm-up runs set against the measured ones on the compared
    /// figure: a JIT or a cold cache shows as measured runs faster than the warm-up.
    fn warmup_note(
        &self,
        t: &Target,
        s: &Scenario,
        warm: &[stampede_engine::RunResult],
    ) -> Option<RunNote> {
        use crate::summary::{samples, Metric};
        let runs = &self.out.runs;
        let metric = Metric::of_runs(runs.iter().filter(|r| r.scenario == s.name));
        let measured = samples(runs, &t.name, &s.name, metric);
        if warm.is_empty() || measured.is_empty() {
            return None;
        }
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let w = mean(&warm.iter().map(|r| metric.figure(r)).collect::<Vec<_>>());
        let m = mean(&measured);
        let (unit, show): (&str, fn(f64) -> String) = match metric {
            Metric::P99Ms => ("p99", |v| format!("{v:.2} ms")),
            _ => ("req/s", |v| format!("{v:.0}")),
        };
        let verdict = warmup_verdict(w, &measured, metric.higher_is_better());
        Some(RunNote {
            target: t.name.clone(),
            scenario: s.name.clone(),
            note: format!(
                "warm-up (discarded): {unit} {} against {} measured; {verdict}",
                show(w),
                show(m)
            ),
        })
    }

    /// One measured run that is a whole capacity search: each step warmed up and
    /// measured at its rate; the record kept is the highest passing step's (the last
    /// step's when none passed), carrying the search.
    fn search(
        &mut self,
        spec: &LoadSpec,
        live: &mut Live,
        t: &Target,
        s: &Scenario,
        search: &crate::plan::Search,
        (run, runs): (u32, u32),
    ) -> Result<RunRecord, String> {
        let at = |rate: f64, length: Duration| {
            let mut sp = spec.clone();
            sp.shape = stampede_engine::Shape::Rate {
                rate,
                poisson: search.poisson,
            };
            sp.duration = Some(length);
            sp.requests = None;
            sp
        };
        let mut step = 0;
        let (capacity, best) = stampede_engine::capacity::search(&search.spec(), |rate| {
            step += 1;
            let phase = |warmup| Phase::Step {
                run,
                runs,
                step,
                rate: rate.round() as u64,
                warmup,
            };
            let check = |live: &mut Live| match live.died() {
                _ if (self.opts.interrupted)() => Err("interrupted".to_string()),
                Some(st) => Err(format!("the target died: {st}")),
                None => Ok(()),
            };
            if !search.warmup.is_zero() {
                self.measure(&at(rate, search.warmup), live, t, &s.name, phase(true))?;
                check(live)?;
            }
            let record = self.measure(&at(rate, search.step), live, t, &s.name, phase(false))?;
            check(live)?;
            Ok::<_, String>(record)
        })?;
        let mut record = best.ok_or("the capacity search measured no step")?;
        self.obs.event(BenchEvent::Searched {
            target: &t.name,
            scenario: &s.name,
            run,
            capacity: &capacity,
        });
        record.result.capacity = Some(capacity);
        Ok(record)
    }

    /// With automatic repetitions, after measured run `k`: why this target × scenario
    /// has been measured enough, or `None` to measure again.
    fn enough(&self, t: &Target, s: &Scenario, k: u32, auto: crate::plan::Auto) -> Option<String> {
        use crate::summary::{samples, Metric};
        let runs = &self.out.runs;
        let metric = Metric::of_runs(runs.iter().filter(|r| r.scenario == s.name));
        let figures = |name: &str| samples(runs, name, &s.name, metric);
        let baseline = self.plan.targets.first().map(|b| b.name.as_str());
        let base = baseline.filter(|&b| b != t.name).map(figures);
        let looks = auto.max - auto.min + 1;
        let why = if k < auto.min {
            None
        } else {
            crate::stats::settled(&figures(&t.name), base.as_deref(), auto.precision, looks)
        };
        match why {
            Some(w) => Some(format!("auto repetitions: stopped after {k} runs: {w}")),
            None if k >= auto.max => Some(format!(
                "auto repetitions: stopped at max_repetitions ({k}) unsettled: the interval is wider than ± {:.1} % and no difference from the baseline is shown",
                auto.precision * 100.0
            )),
            None => None,
        }
    }
}

fn report_failure(obs: &mut dyn Observer, s: &TargetStatus) {
    let mut reason = s.status.clone();
    if let Some(tail) = &s.stderr_tail {
        let lines: Vec<&str> = tail.lines().collect();
        let from = lines.len().saturating_sub(5);
        reason += &format!("\n  stderr: {}", lines[from..].join("\n          "));
    }
    obs.event(BenchEvent::TargetFailed {
        target: &s.name,
        reason: &reason,
    });
}

/// Stops a started target; returns how it ended.
fn stop_live(t: &Target, live: &mut Live) -> Option<String> {
    let grace = match &t.kind {
        TargetKind::Command { stop_grace, .. } => *stop_grace,
        TargetKind::External { .. } => Duration::ZERO,
    };
    live.process
        .as_mut()
        .map(|p| stopped_words(&p.stop(grace).status))
}

/// How a target ended when the lab stopped it (SIGTERM to its process group, then
/// SIGKILL after its stop grace), in words beside the raw status: `exited 130`,
/// `killed by signal 15` and `exited 0` all mean it stopped when asked.
fn stopped_words(status: &str) -> String {
    let words = match status {
        "exited 0" => "shut down cleanly when asked",
        "exited 130" | "exited 143" => "ended on the stop signal (the usual code for one)",
        "killed by signal 15" => "ended by SIGTERM, which it does not catch: a normal stop",
        "killed by signal 9" => "killed: it had not stopped within its stop grace",
        s if s.starts_with("exited ") => "the exit code it chose when asked to stop",
        _ => return status.to_string(),
    };
    format!("{status} ({words})")
}

fn sleep_unless_interrupted(d: Duration, opts: &Options) {
    let end = Instant::now() + d;
    while Instant::now() < end && !(opts.interrupted)() {
        std::thread::sleep(Duration::from_millis(20).min(end - Instant::now()));
    }
}

impl Bench<'_> {
    /// One run of `spec` for target and scenario `names`: the engine on the client
    /// CPUs, the target's tree sampled alongside.
    fn measure(
        &mut self,
        spec: &LoadSpec,
        live: &Live,
        t: &Target,
        scenario: &str,
        phase: Phase,
    ) -> Result<RunRecord, String> {
        let target = t.name.as_str();
        let (plan, opts, obs) = (self.plan, self.opts, &mut *self.obs);
        let control = Arc::new(Control::default());
        obs.event(BenchEvent::RunStarted {
            target,
            scenario,
            phase,
            control: &control,
        });
        let sampler = live.process.as_ref().map(process::Sampler::start);
        let cpu0 = stampede_engine::process::self_cpu().total();
        let result = if plan.remote.hosts.is_empty() {
            std::thread::scope(|scope| {
                let runner = {
                    let control = control.clone();
                    let cpus = plan.client_cpus.clone();
                    scope.spawn(move || {
                        // Worker threads inherit this thread's affinity.
                        if !cpus.is_empty() {
                            process::set_affinity(0, &cpus);
                        }
                        // A search's step changes the rate: each run is planned
                        // (checked) as it starts.
                        let checked = spec.clone().plan().map_err(|e| e.to_string())?;
                        stampede_engine::run(&checked, control).map_err(|e| e.to_string())
                    })
                };
                while !runner.is_finished() {
                    if (opts.interrupted)() {
                        control.stop();
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                runner
                    .join()
                    .unwrap_or(Err(stampede_engine::RunError::WorkerPanicked.to_string()))
            })
            .map(|r| r.result)
        } else {
            measure_on_hosts(&plan.remote, &mut self.copies, spec, t)
        };
        // The client's CPU is this process's only when it generated the load.
        let client_cpu = plan
            .remote
            .hosts
            .is_empty()
            .then(|| stampede_engine::process::self_cpu().total() - cpu0);
        let usage = sampler.zip(live.process.as_ref()).map(|(s, p)| s.finish(p));
        let mut result = result?;
        if let (Some(u), Some(limit)) = (usage, result.limit.as_mut()) {
            let cores = if t.cpus.is_empty() {
                // A remote target's cores are not known here.
                live.process
                    .as_ref()
                    .filter(|p| !p.is_remote())
                    .map_or(0.0, |_| stampede_engine::limit::cores_allowed_machine())
            } else {
                t.cpus.len() as f64
            };
            limit.target = Some(stampede_engine::limit::TargetLoad {
                busy_cores: (u.user_s + u.sys_s) / u.wall_s.max(1e-3),
                cores,
                busiest_thread: u.busiest_thread,
            });
            result.rejudge_limit();
        }
        obs.event(BenchEvent::RunFinished {
            target,
            scenario,
            phase,
            rps: result.throughput_rps,
            failed: result.requests.failed,
            non_2xx: result.non_2xx(),
        });
        Ok(RunRecord {
            target: target.to_string(),
            scenario: scenario.to_string(),
            repetition: 0,
            result,
            target_cpu_user_s: usage.map(|u| u.user_s),
            target_cpu_sys_s: usage.map(|u| u.sys_s),
            target_peak_rss_kb: usage.map(|u| u.peak_rss_kb),
            client_cpu_s: client_cpu,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stopped_targets_status_says_what_it_means() {
        assert_eq!(
            stopped_words("exited 0"),
            "exited 0 (shut down cleanly when asked)"
        );
        assert!(stopped_words("killed by signal 15").contains("a normal stop"));
        assert!(stopped_words("exited 130").contains("stop signal"));
        assert!(stopped_words("killed by signal 9").contains("stop grace"));
        assert_eq!(stopped_words("killed by signal 11"), "killed by signal 11");
    }

    #[test]
    fn a_warm_up_effect_is_named_only_beyond_the_runs_own_spread() {
        // 94 % better on average, but three runs of ±25 % (σ) place one more run
        // anywhere within ±124 % of their mean: no effect can be told.
        let v = warmup_verdict(1000.0, &[1455.0, 1940.0, 2425.0], true);
        assert!(
            v.contains("94 % better") && v.contains("no warm-up effect"),
            "{v}"
        );
        assert!(!v.contains("JIT"), "{v}");
        // Runs close together, the warm-up far below them: a warm-up effect.
        let v = warmup_verdict(1000.0, &[1900.0, 2000.0, 1950.0], true);
        assert!(
            v.contains("beyond their own spread") && v.contains("JIT"),
            "{v}"
        );
        // Lower is better (p99): a warm-up slower than every run.
        let v = warmup_verdict(30.0, &[10.0, 11.0, 12.0], false);
        assert!(v.starts_with("the measured runs did 173 % better"), "{v}");
        let v = warmup_verdict(1000.0, &[2000.0], true);
        assert!(v.contains("one measured run"), "{v}");
        let v = warmup_verdict(1000.0, &[1050.0, 980.0], true);
        assert!(v.starts_with("within 10 %"), "{v}");
    }

    #[test]
    fn ab_style_sends_abs_bytes() {
        let t = stampede_engine::Target::parse("http://127.0.0.1:9/echo").unwrap();
        let headers = [
            ("X-A".to_string(), "1".to_string()),
            ("Content-Type".to_string(), "application/json".to_string()),
        ];
        let r = build_request(Style::Ab, "POST", &t, &headers, Some(b"{}"), true).unwrap();
        // As `stampede ab -k -p body -T application/json -H 'X-A: 1'` (and ab) send it:
        // -H headers before the defaults, the body's length and type after the
        // connection header.
        assert_eq!(
            String::from_utf8(r.bytes).unwrap(),
            "POST /echo HTTP/1.0\r\nConnection: Keep-Alive\r\nContent-length: 2\r\n\
             Content-type: application/json\r\nX-A: 1\r\nHost: 127.0.0.1:9\r\n\
             User-Agent: ApacheBench/2.3\r\nAccept: */*\r\n\r\n{}"
        );
        let r = build_request(Style::Ab, "PUT", &t, &[], Some(b"x"), false).unwrap();
        assert!(String::from_utf8(r.bytes)
            .unwrap()
            .contains("Content-length: 1\r\nContent-type: text/plain\r\nHost:"));
    }
}
