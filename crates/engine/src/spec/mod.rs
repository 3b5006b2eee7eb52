//! What to run: the validated, plain description of a load test.
//!
//! A [`LoadSpec`] is what every front end (the `ab`, `wrk` and native dialects, plans)
//! produces and the only thing the engine reads. It holds no clap or terminal types.
//!
//! Its parts live beside it: `target` (the URL and its addresses), `request` (the
//! bytes sent), `net` (socket options and proxies), `arrivals` and `inject` (when
//! starts are due), `segment` (a share of a run), `servers` (a run's requests to
//! several servers, split), `portable` (the spec saved as JSON) and `input` (reading
//! files and standard input within limits).

pub mod arrivals;
pub mod config;
pub mod inject;
pub mod input;
pub mod net;
pub mod openai;
pub mod plan;
pub mod portable;
pub mod request;
pub(crate) mod segment;
pub mod servers;
pub mod target;
pub mod tokenizer;
mod validate;
mod ws_load;

pub use ws_load::WsLoad;

use crate::error::SyntaxError;
pub use crate::proto::watch::StreamMode;
use crate::spec::segment::Segment;
use std::sync::Arc;
use std::time::Duration;

use crate::error::SpecError;
use crate::spec::arrivals::Period;
use crate::spec::inject::Profile;
use crate::spec::request::Request;
use crate::spec::target::Target;

/// How load is offered.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub enum Shape {
    /// A pool of connections, each sending its next request as soon as it is free.
    Closed,
    /// A pool of connections; requests arrive at `rate` per second (evenly, as a
    /// Poisson process or with gamma gaps) and go out on the first free connection.
    /// Latency counts from the arrival, so a backlog shows up in it (wrk2's `-R`).
    Rate {
        /// Requests per second, for the whole run (all threads).
        rate: f64,
        /// How the gaps between arrivals are drawn.
        gaps: crate::arrivals::Gaps,
    },
    /// A pool of connections; requests arrive as an open injection profile's users
    /// would, at a rate that steps or ramps over the run (ghz's step and line load
    /// schedules), and go out on the first free connection, each timed from its
    /// arrival as under [`Shape::Rate`].
    Paced(Profile),
    /// Gatling injection: each arriving user opens its own connection, runs the session
    /// and closes it (open steps); or the profile's number of users is kept active
    /// (closed steps).
    Users(Profile),
    /// httperf: `count` sessions (connections) arriving by `period`, or one after
    /// another when there is none.
    Sessions {
        /// Interarrival times of sessions; `None` starts each when the previous ends.
        period: Option<Period>,
        /// Sessions in all.
        count: u64,
    },
}

impl Shape {
    /// A one-line description, recorded with the result.
    pub fn describe(&self, session: &Session) -> String {
        let per = || {
            let mut s = format!(
                "{} call{} per session",
                session.calls,
                if session.calls == 1 { "" } else { "s" }
            );
            if session.burst > 1 {
                s += &format!(" in bursts of {}", session.burst);
            }
            if !session.think.is_zero() {
                s += &format!(", {:?} think time", session.think);
            }
            s
        };
        match self {
            Shape::Closed => "closed".into(),
            Shape::Rate { rate, gaps } => format!("rate {rate}/s{}", gaps.describe()),
            Shape::Paced(p) => {
                // A long staircase is told by its ends.
                let text = |s: &[crate::spec::inject::InjectionStep]| {
                    s.iter()
                        .map(|s| s.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                let n = p.steps.len();
                if n <= 6 {
                    format!("paced {}", text(&p.steps))
                } else {
                    format!(
                        "paced {}, … {} steps in all, …, {}",
                        text(&p.steps[..3]),
                        n,
                        text(&p.steps[n - 2..])
                    )
                }
            }
            Shape::Users(p) => {
                let steps: Vec<String> = p.steps.iter().map(|s| s.to_string()).collect();
                format!("users {}; {}", steps.join(", "), per())
            }
            Shape::Sessions { period, count } => match period {
                Some(p) => format!("{count} sessions, period {p}; {}", per()),
                None => format!("{count} sessions one after another; {}", per()),
            },
        }
    }

    /// True for the shapes where every arrival is a session on its own connection.
    pub fn has_sessions(&self) -> bool {
        matches!(self, Shape::Users(_) | Shape::Sessions { .. })
    }
}

/// What one session (a Gatling user, an httperf connection) does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Session {
    /// Requests in the session.
    pub calls: u32,
    /// Requests written back to back before waiting for their responses.
    pub burst: u32,
    /// Pause after each burst's responses before the next burst.
    pub think: Duration,
    /// A response with this status fails its session, as a timeout would (httperf's
    /// `--failure-status`); the response itself is counted by its status.
    #[serde(default)]
    pub fail_status: Option<u16>,
    /// A call answered with `fail_status` is sent again once its batch is answered,
    /// instead of failing the session (httperf's `--retry-on-failure`).
    #[serde(default)]
    pub retry: bool,
    /// At most this many of a burst's calls are pipelined at once; the rest follow as
    /// each group is answered, with no think time between (httperf's
    /// `--max-piped-calls`). 0: the whole burst at once.
    #[serde(default)]
    pub max_piped: u32,
    /// A cookie a reply sets is sent in the session's later requests: one cookie per
    /// session, the last set replacing any before (httperf's `--session-cookie`).
    #[serde(default)]
    pub cookies: bool,
}

impl Default for Session {
    fn default() -> Self {
        Session {
            calls: 1,
            burst: 1,
            think: Duration::ZERO,
            fail_status: None,
            retry: false,
            max_piped: 0,
            cookies: false,
        }
    }
}

/// One step of a session's script: a request, and the pause after its response before
/// the next step (Gatling's `exec(http(…)).pause(…)`). Steps may be grouped into
/// bursts sent back to back (httperf's session logs), and a script may hold several
/// sessions' steps, taken by new sessions in turn.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Step {
    /// The request.
    pub request: Request,
    /// Pause after the response (of a burst: after the burst's last response, given
    /// on its last step).
    pub pause: Duration,
    /// Sent in the same burst as the step before it, pipelined on the connection.
    #[serde(default)]
    pub follows: bool,
    /// Begins the steps of another session (the first step always begins one):
    /// sessions take the scripts so delimited in turn.
    #[serde(default)]
    pub new_session: bool,
    /// Sent this long after its session began, whether or not the steps before it are
    /// answered (h2load's timing scripts), within the connection's room (streams, or
    /// the pipeline): a step kept waiting by it counts the wait in its latency. Either
    /// every step of a script has an offset or none has; a timed script's steps carry
    /// no pause and do not follow one another in bursts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<Duration>,
}

impl Step {
    /// A step sent on its own, `pause` after its response.
    pub fn new(request: Request, pause: Duration) -> Step {
        Step {
            request,
            pause,
            follows: false,
            new_session: false,
            at: None,
        }
    }

    /// A step sent `at` after its session began (see [`Step::at`]).
    pub fn timed(request: Request, at: Duration) -> Step {
        Step {
            at: Some(at),
            ..Step::new(request, Duration::ZERO)
        }
    }
}

/// The most redirects [`Load::redirects`] may follow per request.
pub const MAX_REDIRECTS: u32 = 100;

/// A complete description of a load test: where it goes (the target, resolved, and a
/// proxy), what this process contributes (its segment, the shared start, a script's
/// hooks), the TLS configuration, and the [`Load`] itself.
#[derive(Debug, Clone)]
pub struct LoadSpec {
    /// Where to send the load.
    pub target: Target,
    /// An HTTP proxy every connection goes through: plain-http requests are sent to it
    /// in absolute form (`validate` rewrites them), https connections tunnel with
    /// CONNECT.
    pub proxy: Option<crate::spec::net::Proxy>,
    /// TLS client settings for an https target (`stampede_tls::client_config`).
    pub tls: Option<Arc<stampede_tls::rustls::ClientConfig>>,
    /// This process's share of a run several carry out together (the whole run by
    /// default). Connections, counts and arrivals in [`Load`] are the whole run's.
    pub segment: Segment,
    /// The wall-clock instant the schedule starts from (`--start-at`), shared by every
    /// segment; `None` starts now.
    pub start_at: Option<std::time::SystemTime>,
    /// A script's per-thread hooks (wrk's Lua), HTTP/1.1 only: hooks that shape
    /// requests drive pool shapes only, hooks that only watch may watch sessions too
    /// (see [`crate::hooks`]). `None` sends `request` as prepared.
    pub hooks: Option<crate::run::hooks::Hooks>,
    /// Each call's body and header fields made as it is sent (call templates; see
    /// [`crate::made`]): HTTP/2 streams of a pool's one request, or a WebSocket run's
    /// data messages (each made in place of [`crate::WsLoad::message`], the fields
    /// its answer's expectation when the run has one). `None` sends `request` (and
    /// the message) as prepared.
    pub calls: Option<crate::run::made::MadeCalls>,
    /// Keep one record per request, answered or failed (ab's `-g`, h2load's `--log-file`);
    /// costs 48 bytes per request.
    pub record_requests: bool,
    /// What load to put on the target: plain data, the same on every machine, and
    /// what a saved spec holds (see [`portable`]).
    pub load: Load,
}

/// The load a spec puts on its target: the request, the workload model, counts and
/// limits, protocol and socket settings. Plain data with one serde form, which the
/// saved spec ([`portable::PortableSpec`]) writes as it is: the flags' form, a field
/// per setting, the protocol's and the streams' in groups of their own (their keys
/// written among the load's). The worker reads the checked [`plan::Plan`] made of it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Load {
    /// The request to send, encoded.
    pub request: Request,
    /// Concurrent connections.
    pub connections: usize,
    /// Worker threads (each owns `connections / threads` connections).
    pub threads: usize,
    /// Stop after this many requests have been started and finished.
    pub requests: Option<u64>,
    /// Stop sending after this long; requests still in flight are abandoned.
    pub duration: Option<Duration>,
    /// Reuse connections (otherwise one connection per request).
    pub keepalive: bool,
    /// Requests written back to back on a connection before waiting for responses.
    pub pipeline: usize,
    /// A request without a complete response after this long fails as a timeout.
    pub timeout: Option<Duration>,
    /// A connection not established after this long fails as a connect timeout.
    pub connect_timeout: Duration,
    /// Once a connection has sent its last request (the run's count is spent, or its
    /// session's calls are all sent), what it still waits for fails as a timeout this
    /// long after that last send, and it closes (h2load's `-T`). `None`: it waits as
    /// `timeout` allows.
    #[serde(default)]
    pub last_wait: Option<Duration>,
    /// Once `duration` is over, wait up to this long for the requests in flight to
    /// end (none more is started), counting each as it ends; what is still in flight
    /// then is abandoned (vegeta's wait). `None`: they are abandoned at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drain: Option<Duration>,
    /// Count responses whose body length differs from the first one (ab's `Length`).
    pub check_length: bool,
    /// How load is offered.
    pub shape: Shape,
    /// What each session does (session shapes only).
    pub session: Session,
    /// Session shapes: the requests each session makes in order, one at a time, with a
    /// pause after each (`session.calls`, `burst` and `think` then follow from it).
    /// Empty: every call sends `request`.
    pub script: Vec<Step>,
    /// Several requests used in turn (h2load's several URIs, a targets file, a body
    /// per line): each connection sends them in order from the first, starting over
    /// after the last, unless `walk` picks them. Empty: `request` only. Pool shapes
    /// (closed or fixed-rate load), and sessions with a `walk`; `validate` makes
    /// `request` the first of them.
    #[serde(default)]
    pub variety: Vec<Request>,
    /// Seed of random arrival processes, so a run can be repeated exactly.
    pub seed: u64,
    /// The protocol spoken and its settings, as the flags give them (the plan makes
    /// one protocol value of them).
    #[serde(flatten)]
    pub protocol: LoadProtocol,
    /// Options of every connection's socket (local address, buffers, closing with a
    /// reset); the defaults leave the kernel's.
    #[serde(default)]
    pub socket: crate::spec::net::SocketOptions,
    /// Time each pipelined batch once, at its last response (wrk2's `-B`): the other
    /// responses are counted without a latency sample.
    #[serde(default)]
    pub batch_latency: bool,
    /// Calls choose among `variety` by one walk over the run's calls instead of in
    /// turn per connection (httperf's working set); sessions may then use `variety`.
    #[serde(default)]
    pub walk: Option<Walk>,
    /// Follow up to this many redirects per request (301, 302, 303, 307, 308 with a
    /// Location on the same origin), on the same connection: each hop is timed on its
    /// own (the run's redirect histogram) and the request's latency runs to the last
    /// answer. 0: a 3xx is the answer. HTTP/1.1 pool shapes without pipelining.
    #[serde(default, skip_serializing_if = "crate::form::is_zero")]
    pub redirects: u32,
    /// Open shapes: a start due within this of the moment the loop is awake goes out
    /// then, up to this early, and is timed from its send; one wake-up sends all
    /// that fall due in the next moments instead of one wake-up each. Below `1 /
    /// horizon` starts a second each still has its own. Zero: every start at its time.
    /// A fixed rate uses less where this much would tie up more than a quarter of the
    /// connections. Written in µs, and only where it is not the default.
    #[serde(
        rename = "horizon_us",
        default = "default_horizon",
        skip_serializing_if = "is_default_horizon",
        with = "crate::form::micros"
    )]
    pub horizon: Duration,
    /// Streamed bodies: how they are timed and bounded, and a request stream's pace.
    #[serde(flatten)]
    pub streams: LoadStreams,
}

/// The protocol a [`Load`] speaks, as its flags give it: HTTP/1.1 unless one of these
/// says otherwise (the plan checks the combination and makes one
/// protocol value of it). Written among the load's own keys.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct LoadProtocol {
    /// Speak HTTP/2: with prior knowledge (h2c) over plain TCP; over TLS when ALPN
    /// chooses h2 (offer `h2` in the TLS settings), HTTP/1.1 otherwise. `pipeline`
    /// is then the streams kept open per connection (h2load's `-m`).
    pub http2: bool,
    /// What HTTP/2 connections offer the server: receive windows, frame size, HPACK
    /// tables (the defaults open windows wide).
    #[serde(default)]
    pub h2: crate::proto::h2::H2Settings,
    /// Speak HTTP/3 over QUIC (an https target; UDP to its port), with these
    /// settings; `pipeline` is then the streams kept open per connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http3: Option<crate::proto::h3::H3Settings>,
    /// WebSocket runs (`ws://`, `wss://`): each connection is upgraded, and each
    /// request is one message whose answer is the next message the server sends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ws: Option<WsLoad>,
}

/// How a [`Load`] watches streamed bodies and paces request streams. Written among
/// the load's own keys.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct LoadStreams {
    /// Time each response body as it arrives: its first byte, its events (the pieces
    /// the server framed, or server-sent events) and the gaps between them. `None`:
    /// bodies are counted, not watched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<StreamMode>,
    /// OpenAI streams: the service levels a completion must meet to count toward
    /// goodput (vLLM's `--goodput`), each timed as the run times it: the time to first
    /// token and the whole response from the intended start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo: Option<Slo>,
    /// Runs that time streams: a response with no event for this long (since its
    /// last event, or its send before the first) fails as a stalled stream, and its
    /// connection closes (a token that never comes is not waited for until
    /// `timeout`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_timeout: Option<Duration>,
    /// Runs that time streams: a response that carries more events than this fails
    /// as a broken stream (`stream_event`) and its connection closes — an OpenAI
    /// completion streaming past the tokens it was asked for, or a stream without
    /// end, cannot hold a run bounded by a request count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_events: Option<u32>,
    /// OpenAI streams: the model's tokenizer, which counts a completion's tokens from
    /// its text where its stream carries no usage. Held in memory only: a spec sent to
    /// other machines goes without it, and they count as without one.
    #[serde(skip)]
    pub tokenizer: Option<crate::TokenCounter>,
    /// gRPC request streams sent message by message (ghz's `--stream-interval`):
    /// each call's first message goes with its headers, the next ones this far apart.
    /// `None`: a call's messages go out together with its headers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send: Option<StreamSend>,
}

/// How a gRPC call's request stream is paced: its messages (the call's body, cut at
/// gRPC's length prefixes, taken in turn and again from the first once all are sent)
/// one every `interval_us` from the call's send, until `count` are sent or
/// `duration_us` has passed since the send (then the stream's send side ends with an
/// empty frame, as ghz's `--stream-call-duration` closes it). Neither set: the body's
/// messages once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamSend {
    #[serde(rename = "interval_us", with = "crate::form::micros")]
    pub interval: Duration,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_us: Option<u64>,
}

impl StreamSend {
    /// The longest interval and duration taken (an hour).
    pub const MAX_SPAN: Duration = Duration::from_secs(3600);
    /// The most messages one stream is asked to send.
    pub const MAX_COUNT: u64 = 1 << 32;

    /// When the stream's send side ends, if by time.
    pub fn duration(&self) -> Option<Duration> {
        self.duration_us.map(Duration::from_micros)
    }
}

/// Service levels of a completion, in µs; a level not set is not checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Slo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_us: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpot_us: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2el_us: Option<u64>,
}

impl Slo {
    /// Service levels as vLLM's `--goodput` writes them: `ttft:200`, `tpot:50`,
    /// `e2el:1000` (milliseconds); none given, none set. The error names the bad one.
    pub fn parse(levels: &[impl AsRef<str>]) -> Result<Option<Slo>, SyntaxError> {
        if levels.is_empty() {
            return Ok(None);
        }
        let mut slo = Slo::default();
        for a in levels {
            let a = a.as_ref();
            let bad = || {
                SyntaxError(format!(
                    "{a}: KEY:MS with KEY ttft, tpot or e2el and MS milliseconds above 0"
                ))
            };
            let (k, v) = a.split_once(':').ok_or_else(bad)?;
            let ms: f64 = v.parse().map_err(|_| bad())?;
            if !(ms > 0.0 && ms.is_finite() && ms <= 1e9) {
                return Err(bad());
            }
            let us = Some((ms * 1000.0).round() as u64);
            match k {
                "ttft" => slo.ttft_us = us,
                "tpot" => slo.tpot_us = us,
                "e2el" => slo.e2el_us = us,
                _ => return Err(bad()),
            }
        }
        Ok(Some(slo))
    }

    /// Whether a completion with these figures (µs; `ttft` none without a token,
    /// `tpot` none below two) meets every level set.
    pub fn met(&self, ttft: Option<u64>, tpot: Option<u64>, e2el: u64) -> bool {
        let within = |level: Option<u64>, v: Option<u64>| match (level, v) {
            (None, _) => true,
            (Some(l), Some(v)) => v <= l,
            // No first token: the level is not met.
            (Some(_), None) => false,
        };
        // A completion of one token has no time per output token: 0, as vLLM counts it.
        within(self.ttft_us, ttft)
            && within(self.tpot_us, Some(tpot.unwrap_or(0)))
            && within(self.e2el_us, Some(e2el))
    }
}

fn default_horizon() -> Duration {
    DEFAULT_HORIZON
}

fn is_default_horizon(d: &Duration) -> bool {
    *d == DEFAULT_HORIZON
}

impl Load {
    /// The keys of its serde form, its groups' among them (a saved spec's error names
    /// them where serde, reading flattened groups, cannot).
    pub const KEYS: [&'static str; 31] = [
        "request",
        "connections",
        "threads",
        "requests",
        "duration",
        "keepalive",
        "pipeline",
        "timeout",
        "connect_timeout",
        "last_wait",
        "drain",
        "check_length",
        "shape",
        "session",
        "script",
        "variety",
        "seed",
        "http2",
        "h2",
        "http3",
        "ws",
        "socket",
        "batch_latency",
        "walk",
        "redirects",
        "horizon_us",
        "stream",
        "slo",
        "event_timeout",
        "max_events",
        "send",
    ];

    /// One connection, one thread, keep-alive, no pipelining and 30 s timeouts, the
    /// closed model; set `requests` or `duration` before running.
    pub fn new(request: Request) -> Load {
        Load {
            request,
            connections: 1,
            threads: 1,
            requests: None,
            duration: None,
            keepalive: true,
            pipeline: 1,
            timeout: Some(Duration::from_secs(30)),
            connect_timeout: Duration::from_secs(10),
            last_wait: None,
            drain: None,
            check_length: false,
            shape: Shape::Closed,
            session: Session::default(),
            script: Vec::new(),
            variety: Vec::new(),
            seed: 0x5eed,
            protocol: LoadProtocol::default(),
            socket: crate::spec::net::SocketOptions::default(),
            batch_latency: false,
            walk: None,
            redirects: 0,
            horizon: DEFAULT_HORIZON,
            streams: LoadStreams::default(),
        }
    }
}

/// The default [`Load::horizon`]. A wake-up costs some 10 µs of CPU on a virtual
/// machine's loopback (the switch back in, and the server's wake-up by the first
/// send), against 5 µs for a request's own work: at most one wake-up per 400 µs keeps
/// them near 2.5 % of a core at any rate, and a rate under 2,500 a second still gives
/// every start its own. A fixed rate also caps it so that what one wake-up sends takes
/// at most a quarter of the connections (see `schedule_for`).
pub const DEFAULT_HORIZON: Duration = Duration::from_micros(400);
/// The largest [`Load::horizon`] accepted.
pub const MAX_HORIZON: Duration = Duration::from_millis(10);

/// One walk over the run's calls through `variety` (httperf's `--wset=N,X`): call `i`
/// (0-based, counted over this process's run) sends request ⌊(i + 1)·rate⌋ modulo the
/// list's length. A rate of 0.25 sends each request four times in a row, 1 a new one
/// with every call. httperf starts the walk at a random point; it starts at 0 here, so
/// that runs repeat exactly.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Walk {
    /// How far each call moves along the list, above 0 and at most 1.
    pub rate: f64,
    /// The run ends when the walk would take more calls than the list has requests
    /// (httperf's `--wlog n,FILE`), instead of going round again; a burst that would
    /// run past the end is not sent.
    #[serde(default)]
    pub once: bool,
}

impl Walk {
    /// The request call `call` sends, of `len`.
    pub fn index(&self, call: u64, len: usize) -> usize {
        (((call + 1) as f64 * self.rate).floor() as u64 % len as u64) as usize
    }
}

/// Parses a duration as flags and plans write it: `250us` (or `µs`), `500ms`, `10s`
/// (`sec`, `secs`), `2m` (`min`), `1h`, or a bare number of seconds; units in any case.
pub fn parse_duration(s: &str) -> Result<Duration, SyntaxError> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| {
            format!("{s:?} is not a duration; use forms like 10s, 500ms, 2m, 1h (units: us or µs, ms, s, sec, secs, m, min, h)")
        })?;
    let mult = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "s" | "sec" | "secs" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => {
            return Err(format!(
                "{s:?} has an unknown unit {:?}; use us (or µs), ms, s (sec, secs), m (min) or h",
                unit.trim()
            )
            .into())
        }
    };
    let secs = v * mult;
    if !secs.is_finite() || !(0.0..=1e9).contains(&secs) {
        return Err(format!("{s:?} is out of range").into());
    }
    Ok(Duration::from_secs_f64(secs))
}

/// The longest time a spec holds (a run's length, a timeout, a pause): 1e9 s, as
/// the duration parser's range, far from what adding it to a clock would overflow.
pub const MAX_SPEC_DURATION: Duration = Duration::from_secs(1_000_000_000);

/// The most requests one connection may have in flight (pipelined, or HTTP/2
/// streams).
pub const MAX_PIPELINE: usize = 65_536;
/// The most bytes of requests one connection's batch may hold (the request repeated
/// `pipeline` times).
pub const MAX_BATCH_BYTES: usize = 256 << 20;

impl LoadSpec {
    /// The names of the requests in the slots of the run's figures per target (a
    /// journey's steps, a targets file's requests), as the result will give them;
    /// empty for a run of one request.
    pub fn target_names(&self) -> Vec<String> {
        let named = (self.hooks.as_ref())
            .map(|h| h.0.targets())
            .unwrap_or_default();
        let (variety, script) = (&self.load.variety, &self.load.script);
        let n = named.len().max(variety.len()).max(script.len());
        if n <= 1 && named.is_empty() {
            return Vec::new();
        }
        (0..n.min(crate::MAX_TARGETS + 1))
            .map(|slot| {
                crate::measure::targets::target_name(
                    slot,
                    &named,
                    variety,
                    script,
                    &self.load.request,
                )
            })
            .collect()
    }

    /// A spec of `target` with [`Load::new`]'s defaults; set `requests` or
    /// `duration` before running.
    pub fn new(target: Target, request: Request) -> LoadSpec {
        LoadSpec::with_load(target, Load::new(request))
    }

    /// A spec putting `load` on `target`, the whole run, started now, with no proxy,
    /// TLS configuration or hooks.
    pub fn with_load(target: Target, load: Load) -> LoadSpec {
        LoadSpec {
            target,
            proxy: None,
            tls: None,
            segment: Segment::WHOLE,
            start_at: None,
            hooks: None,
            calls: None,
            record_requests: false,
            load,
        }
    }

    /// Checks the spec (see [`LoadSpec::validate`]) and makes it the plan of a run,
    /// what [`crate::run`] takes.
    pub fn plan(self) -> Result<plan::Plan, SpecError> {
        plan::Plan::of(self)
    }
}

#[cfg(test)]
mod tests;
