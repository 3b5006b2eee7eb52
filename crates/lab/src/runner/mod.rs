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

mod bench;
mod scenario;

/// Why a target could not be reached, or a run of it could not be made: said in the
/// bench's status for the target or its scenario.
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    /// The scenario's load does not make a valid specification.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// A file the run needs could not be read.
    #[error(transparent)]
    Input(#[from] stampede_engine::input::InputError),
    /// The plan's hosts could not be reached or gave no result.
    #[error(transparent)]
    Remote(#[from] crate::remote::RemoteError),
    /// The load generator could not run.
    #[error(transparent)]
    Run(#[from] stampede_engine::RunError),
    /// The client hosts' results do not merge.
    #[error(transparent)]
    Merge(#[from] stampede_engine::merge::MergeError),
    /// One client host's part failed.
    #[error("client host {host}: {reason}")]
    Host {
        /// The host.
        host: String,
        /// What failed there.
        reason: Box<RunnerError>,
    },
    /// The system clock reads before 1970, so no shared start can be given.
    #[error("the system clock is before 1970")]
    Clock,
    /// A target's address resolves to nothing.
    #[error("{0} resolves to no address")]
    NoAddress(String),
    /// A target's URL is not a TCP address.
    #[error("{0} is not a TCP address")]
    NotTcp(String),
    /// A target's host name does not resolve.
    #[error("cannot resolve {host}: {source}")]
    Resolve {
        /// The host name.
        host: String,
        /// The resolver's error.
        source: std::io::Error,
    },
    /// The bench was interrupted.
    #[error("interrupted")]
    Interrupted,
    /// The started target exited.
    #[error("the target died: {0}")]
    Died(String),
    /// A capacity search measured no step.
    #[error("the capacity search measured no step")]
    NoStep,
}
use bench::*;
use scenario::*;
pub use scenario::{check_scenarios, scenario_request, scenario_spec};

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
        /// The step's offered rate, in `per`'s unit.
        rate: u64,
        /// What the rate counts.
        per: stampede_engine::capacity::Per,
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
        journey: None,
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
fn socket_addr(url: &str) -> Result<(SocketAddr, String), RunnerError> {
    let t = stampede_engine::Target::parse(url)?;
    match t.address {
        Address::Tcp(a) => a
            .first()
            .copied()
            .map(|a| (a, t.host.clone()))
            .ok_or_else(|| RunnerError::NoAddress(url.to_string())),
        Address::Unix(_) => Err(RunnerError::NotTcp(url.to_string())),
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
) -> Result<stampede_engine::RunResult, RunnerError> {
    use stampede_engine::portable::{PortableSpec, TlsSettings};
    let tls = match &t.tls {
        None => None,
        Some(tls) => Some(TlsSettings {
            insecure: tls.insecure,
            ca_pem: match &tls.cacert {
                Some(p) => Some(stampede_engine::input::read_text(
                    &p.display().to_string(),
                    "cacert",
                    stampede_engine::input::Input::Config,
                )?),
                None => None,
            },
            resume: false,
            version: None,
        }),
    };
    let text = PortableSpec::of(spec, tls).to_json();
    let program = copies.program(remote, &remote.hosts)?;
    let at = (std::time::SystemTime::now() + HOSTS_START_IN)
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(|_| RunnerError::Clock)?
        .as_secs_f64();
    let outcomes = remote.run_segments(
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
        hosts_deadline(spec.load.duration),
    )?;
    let mut merger = stampede_engine::merge::Merger::new(false);
    for (host, r) in outcomes {
        let on_host = |reason: RunnerError| RunnerError::Host {
            host: host.clone(),
            reason: Box::new(reason),
        };
        let r = r.map_err(|e| on_host(e.into()))?;
        merger.add(&r).map_err(|e| on_host(e.into()))?;
    }
    Ok(merger.finish()?)
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
fn started_at(t: &Target, port: u16) -> Result<(SocketAddr, String), RunnerError> {
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
        .map_err(|source| RunnerError::Resolve {
            host: host.clone(),
            source,
        })?
        .next()
        .ok_or_else(|| RunnerError::NoAddress(host.clone()))?;
    Ok((addr, bare))
}

/// The stampede program `{stampede}` names on a target's host: the plan's (copied
/// there once with `[ssh] copy`).
fn stampede_on(
    host: &str,
    remote: &crate::remote::Hosts,
    copies: &mut crate::remote::Copies,
) -> Result<std::path::PathBuf, RunnerError> {
    Ok(copies
        .program(remote, &[host.to_string()])
        .map(std::path::PathBuf::from)?)
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
            let (addr, host) = socket_addr(url).map_err(|e| Box::new((e.to_string(), None)))?;
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
            let (addr, name) = started_at(t, port).map_err(|e| Box::new((e.to_string(), None)))?;
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
                    let exe = stampede_on(h, remote, copies)
                        .map_err(|e| Box::new((e.to_string(), None)))?;
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
