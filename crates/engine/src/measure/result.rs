//! The outcome of a run: a plain, versioned, serde-serialisable record.
//!
//! [`RunResult`] is the contract between the engine and everything downstream (reports,
//! the lab's store, other machines). Its JSON form is described by
//! `schema/run-result.v1.json` and checked by a test against real output. Latency
//! histograms travel inside it as base64 of HdrHistogram's compressed V2 encoding, so
//! results from several workers or machines merge by adding histograms, exactly, and
//! any percentile can be recomputed later.

use std::collections::BTreeMap;

use crate::error::HistError;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

pub use crate::measure::fleet::{FleetMissing, FleetStop, FleetSummary};
pub use crate::measure::hist::{
    decode_base64, decode_checked, new_histogram, percentile_linear, value_at_percentile, Hist,
    MAX_COUNT, MAX_ENCODED_HIST, MAX_HIST_COUNTERS, MAX_INFLATED_HIST, MAX_TRACKABLE_US,
};
pub(crate) use crate::measure::secure::TlsSession;
pub use crate::measure::secure::{QuicStats, TlsStats};
pub use crate::measure::server::{QueueGrowth, ServerMetrics};
pub use crate::measure::stream::{DeliveryStats, StreamHistograms, StreamStats, TokenStats};

/// The schema identifier written into every result.
pub const SCHEMA: &str = "stampede.run/1";

/// One percentile of a distribution.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Percentile {
    /// The percentile, 0–100.
    pub p: f64,
    /// Its value in microseconds.
    pub us: u64,
}

/// Summary of a latency distribution, in microseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyStats {
    /// Number of samples.
    pub count: u64,
    /// Smallest sample.
    pub min_us: u64,
    /// Arithmetic mean.
    pub mean_us: f64,
    /// Standard deviation.
    pub stdev_us: f64,
    /// Largest sample.
    pub max_us: u64,
    /// p50, p75, p90, p99, p99.9, p99.99.
    pub percentiles: Vec<Percentile>,
}

impl LatencyStats {
    /// The percentiles listed in every summary.
    pub const LISTED: [f64; 6] = [50.0, 75.0, 90.0, 99.0, 99.9, 99.99];

    /// Computes the summary of a histogram.
    pub fn of(h: &Histogram<u64>) -> LatencyStats {
        let n = h.len();
        LatencyStats {
            count: n,
            min_us: if n == 0 { 0 } else { h.min() },
            mean_us: if n == 0 { 0.0 } else { h.mean() },
            stdev_us: if n == 0 { 0.0 } else { h.stdev() },
            max_us: if n == 0 { 0 } else { h.max() },
            percentiles: Self::LISTED
                .iter()
                .map(|&p| Percentile {
                    p,
                    us: value_at_percentile(h, p),
                })
                .collect(),
        }
    }

    /// The value of a listed percentile.
    pub fn at(&self, p: f64) -> Option<u64> {
        self.percentiles
            .iter()
            .find(|x| (x.p - p).abs() < 1e-9)
            .map(|x| x.us)
    }
}

/// The settings a run was made with, as recorded next to its numbers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSettings {
    /// The URL as given.
    pub url: String,
    /// The address connected to (`ip:port` or `unix:/path`).
    pub address: String,
    /// Request method.
    pub method: String,
    /// Size of one encoded request in bytes.
    pub request_bytes: u64,
    /// Concurrent connections.
    pub connections: u64,
    /// Worker threads.
    pub threads: u64,
    /// Whether connections were reused.
    pub keepalive: bool,
    /// Requests in flight per connection.
    pub pipeline: u64,
    /// Request budget, if the run was bounded by count.
    pub requests: Option<u64>,
    /// Duration bound in seconds, if the run was bounded by time.
    pub duration_s: Option<f64>,
    /// Per-request timeout in seconds, if any.
    pub timeout_s: Option<f64>,
    /// How load was offered: `closed`, `rate 50000/s`, `users rampUsers(…)…`, `… sessions …`.
    pub shape: String,
    /// HTTP/2 was asked for (h2c, or h2 over TLS where ALPN chose it); `pipeline` is
    /// then the streams per connection.
    #[serde(default)]
    pub http2: bool,
    /// HTTP/3 was asked for; `pipeline` is then the streams per connection.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub http3: bool,
    /// Redirects followed per request at most (0: none followed).
    #[serde(default, skip_serializing_if = "crate::form::is_zero")]
    pub redirects: u32,
}

/// Request outcome counters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    /// Requests written to a connection (or attempted: failed connects count).
    pub started: u64,
    /// Responses received completely (any status).
    pub completed: u64,
    /// Requests that got no complete response (sum of `errors`).
    pub failed: u64,
    /// Requests still in flight when a timed run ended (neither completed nor failed).
    pub abandoned: u64,
    /// Completed responses that left the connection open for reuse.
    pub keepalive: u64,
    /// Completed responses whose body length differed from the first response's (ab's
    /// `Length` failures); they are also counted in `completed`.
    pub length_mismatch: u64,
}

impl std::ops::AddAssign<&Counts> for Counts {
    /// Adds another part's counts (a merge of segments), saturating at `u64::MAX`.
    fn add_assign(&mut self, o: &Counts) {
        self.started = self.started.saturating_add(o.started);
        self.completed = self.completed.saturating_add(o.completed);
        self.failed = self.failed.saturating_add(o.failed);
        self.abandoned = self.abandoned.saturating_add(o.abandoned);
        self.keepalive = self.keepalive.saturating_add(o.keepalive);
        self.length_mismatch = self.length_mismatch.saturating_add(o.length_mismatch);
    }
}

/// Byte counters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Bytes {
    /// Everything read from the server: heads and bodies.
    pub read: u64,
    /// Body bytes (after the head, as on the wire).
    pub body: u64,
    /// Everything written to the server.
    pub written: u64,
    /// HTTP/2: response header blocks as sent (HPACK-compressed).
    #[serde(default)]
    pub headers_compressed: u64,
    /// HTTP/2: the same headers decoded (names and values).
    #[serde(default)]
    pub headers_decoded: u64,
}

impl std::ops::AddAssign<&Bytes> for Bytes {
    /// Adds another part's bytes (a merge of segments), saturating at `u64::MAX`.
    fn add_assign(&mut self, o: &Bytes) {
        self.read = self.read.saturating_add(o.read);
        self.body = self.body.saturating_add(o.body);
        self.written = self.written.saturating_add(o.written);
        self.headers_compressed = self.headers_compressed.saturating_add(o.headers_compressed);
        self.headers_decoded = self.headers_decoded.saturating_add(o.headers_decoded);
    }
}

/// One second of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Seconds since the start of the run (this interval covers `[t, t+1)`).
    pub t: u32,
    /// Responses completed in the interval.
    pub completed: u64,
    /// Requests failed in the interval.
    pub failed: u64,
    /// Bytes read in the interval.
    pub bytes_read: u64,
    /// Events of watched streams that arrived in the interval (runs that time
    /// streams; an OpenAI stream's events are those that carried text).
    #[serde(default, skip_serializing_if = "crate::form::is_zero")]
    pub events: u64,
    /// Latency of the interval's responses.
    pub latency: LatencyStats,
    /// The interval's latency histogram, encoded as [`Hist::to_base64`] does (decode
    /// with [`Interval::decode_histogram`]); kept encoded so that a long run's result
    /// stays small in memory.
    pub histogram: String,
    /// The interval's histogram of latency from the actual send (uncorrected), encoded
    /// the same way.
    pub histogram_uncorrected: String,
    /// Most sockets held at once (connecting or open) during the interval. Summed over
    /// the workers' own peaks, so an upper bound when workers peak at different moments.
    #[serde(default)]
    pub connections: u64,
    /// Most requests in flight at once during the interval (same summing).
    #[serde(default)]
    pub in_flight: u64,
    /// Most sessions (users) in progress at once during the interval; 0 for shapes
    /// without sessions.
    #[serde(default)]
    pub users: u64,
}

impl Interval {
    /// Decodes the interval's histogram.
    pub fn decode_histogram(&self) -> Result<Hist, HistError> {
        Hist::from_base64(&self.histogram)
    }

    /// Decodes the interval's uncorrected histogram.
    pub fn decode_uncorrected(&self) -> Result<Hist, HistError> {
        Hist::from_base64(&self.histogram_uncorrected)
    }
}

/// All histograms of a run, in microseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Histograms {
    /// Latency from the intended start (corrected for coordinated omission).
    pub latency: Hist,
    /// Latency from the actual send.
    pub uncorrected: Hist,
    /// Time to connect (0 for requests on a reused connection), ab's "Connect".
    pub connect: Hist,
    /// From the end of the write to the first response byte, ab's "Waiting".
    pub waiting: Hist,
    /// Latency minus connect time, ab's "Processing".
    pub processing: Hist,
    /// How late requests or sessions started against their intended time.
    pub send_lag: Hist,
    /// Latency of responses with an OK status (2xx, 304), Gatling's "OK".
    pub ok: Hist,
    /// Latency of non-OK responses and time to failure of failed requests, Gatling's "KO".
    pub ko: Hist,
    /// Lifetime of completed sessions (session shapes), httperf's "Connection time".
    pub session: Hist,
    /// TLS handshakes, from the connected socket to the finished handshake (https).
    #[serde(default)]
    pub tls_handshake: Hist,
    /// Per connection: from the start of its connect to the first response byte
    /// (h2load's "time to 1st byte").
    #[serde(default)]
    pub first_byte: Hist,
    /// Responses completed by each connection slot over the run (pool shapes), or by
    /// each session (session shapes): h2load's per-client req/s is this over the
    /// duration.
    #[serde(default)]
    pub per_connection: Hist,
    /// Each redirect followed: from its request's write to its 3xx answer (the run
    /// followed redirects; see [`crate::Load::redirects`]).
    #[serde(default)]
    pub redirect: Hist,
    /// WebSocket runs: each upgrade, from the open connection (TCP, and TLS for
    /// wss://) to the server's 101.
    #[serde(default)]
    pub ws_upgrade: Hist,
    /// Runs that time streams (see [`crate::LoadStreams::stream`]): each body's first byte and
    /// events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<StreamHistograms>,
}

/// The result of one run: the versioned JSON form (see the schema), the figures of
/// each protocol grouped in [`ProtocolFigures`]. Data, written once and read by
/// renderers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// The engine's version.
    pub version: String,
    /// Start of the run, milliseconds since the Unix epoch.
    pub started_unix_ms: u64,
    /// From the first request to the last response (or the end of the time bound), seconds.
    pub duration_s: f64,
    /// How the run was set up.
    pub settings: RunSettings,
    /// Request outcomes.
    pub requests: Counts,
    /// Completed responses per second over the run.
    pub throughput_rps: f64,
    /// Completed responses by status code.
    pub statuses: BTreeMap<u16, u64>,
    /// Failed requests by kind (snake_case names of [`crate::ErrorKind`]).
    pub errors: BTreeMap<String, u64>,
    /// Bytes moved.
    pub bytes: Bytes,
    /// Connections opened.
    pub connections_opened: u64,
    /// The Server header of the first response, if any.
    pub server_software: Option<String>,
    /// Body length of the first complete response.
    pub document_length: Option<u64>,
    /// Summary of `histograms.latency`.
    pub latency: LatencyStats,
    /// Summary of `histograms.uncorrected`.
    pub latency_uncorrected: LatencyStats,
    /// The histograms themselves.
    pub histograms: Histograms,
    /// Per-second series.
    pub intervals: Vec<Interval>,
    /// For open shapes (fixed rate, injection, sessions): whether the load was offered
    /// as asked.
    pub open: Option<OpenStats>,
    /// For session shapes: what became of the sessions.
    pub sessions: Option<SessionStats>,
    /// Where and against what clock it ran, and its share of a segmented run.
    #[serde(default)]
    pub origin: Origin,
    /// Which side was the limit, and the figures that decided it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<crate::verdict::limit::Limit>,
    /// The capacity search this run ended, when it was the best step of one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<crate::verdict::capacity::Capacity>,
    /// Stopped before its bound by Ctrl-C or SIGTERM: the figures cover only the part
    /// that ran (`duration_s` of the asked `settings.duration_s`). Written only when
    /// true.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// A fleet run's coordinator (`stampede ssh`): the segments merged, those missing
    /// and why, and the condition that stopped the fleet, if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet: Option<FleetSummary>,
    /// The server's own metrics, scraped during the run (`--server-metrics`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<crate::measure::server::ServerMetrics>,
    /// A run of several requests: each one's figures (see [`crate::TargetStats`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<crate::measure::targets::TargetStats>,
    /// The figures of the protocols the run spoke, each in its own type; written
    /// among the result's own keys, as they always were.
    #[serde(flatten)]
    pub protocols: ProtocolFigures,
}

/// The figures a run has by protocol (TLS, timed streams, QUIC, gRPC, WebSocket),
/// each present only where the run spoke it. Flattened into [`RunResult`]'s JSON.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProtocolFigures {
    /// For https targets: the negotiated protocol and the handshakes' cost.
    #[serde(default)]
    pub tls: Option<TlsStats>,
    /// Runs that time streams: the bodies' first bytes and events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<StreamStats>,
    /// HTTP/3 runs: QUIC's own figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quic: Option<QuicStats>,
    /// gRPC runs: the calls answered, by `grpc-status` name (`OK`, `UNAVAILABLE`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc: Option<std::collections::BTreeMap<String, u64>>,
    /// gRPC runs: the messages (`grpc-message`) calls that failed were answered
    /// with, most frequent first; at most [`MAX_GRPC_MESSAGES`] of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grpc_messages: Vec<GrpcMessage>,
    /// WebSocket runs: upgrades refused and the server's closes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub websocket: Option<WsStats>,
}

/// What a WebSocket run's connections met besides its messages' answers.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WsStats {
    /// The upgrades' times, from the open connection to the 101 (from
    /// [`Histograms::ws_upgrade`]; a run's `connect` figure holds them too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade: Option<LatencyStats>,
    /// Upgrades the server refused, by the status it answered with (a 200 page is
    /// a refusal too: no message was sent on it).
    #[serde(default)]
    pub refused: BTreeMap<u16, u64>,
    /// The server's close frames read, by code (1005: a close without one).
    #[serde(default)]
    pub closes: BTreeMap<u16, u64>,
    /// Data messages read that did not contain what the answer was to
    /// ([`crate::WsLoad::expect`]), let go.
    #[serde(default, skip_serializing_if = "crate::form::is_zero")]
    pub unmatched: u64,
}

impl WsStats {
    /// Adds `other`'s counts.
    pub fn add(&mut self, other: &WsStats) {
        self.unmatched = self.unmatched.saturating_add(other.unmatched);
        for (mine, theirs) in [
            (&mut self.refused, &other.refused),
            (&mut self.closes, &other.closes),
        ] {
            for (k, n) in theirs {
                let c = mine.entry(*k).or_default();
                *c = c.saturating_add(*n);
            }
        }
    }

    /// The upgrades' figures from the run's histograms, when one was answered.
    pub fn upgrade_of(h: &Histograms) -> Option<LatencyStats> {
        (!h.ws_upgrade.0.is_empty()).then(|| h.ws_upgrade.stats())
    }
}

/// The most distinct `grpc-message`s a run lists; calls answered with others are
/// counted by their status only.
pub const MAX_GRPC_MESSAGES: usize = 32;

/// The longest `grpc-message` kept, in bytes (a longer one is cut, on a character).
pub const MAX_GRPC_MESSAGE_LEN: usize = 256;

/// Failed gRPC calls answered with one status and message.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrpcMessage {
    /// The status name (`UNAVAILABLE`, …).
    pub status: String,
    /// The `grpc-message`, percent-decoded.
    pub message: String,
    /// Calls answered with both.
    pub count: u64,
}

/// Adds `count` calls answered with `(status, message)` to `list`, within
/// [`MAX_GRPC_MESSAGES`] distinct pairs.
pub fn add_grpc_message(list: &mut Vec<GrpcMessage>, status: &str, message: &str, count: u64) {
    if let Some(m) = (list.iter_mut()).find(|m| m.status == status && m.message == message) {
        m.count = m.count.saturating_add(count);
    } else if list.len() < MAX_GRPC_MESSAGES {
        list.push(GrpcMessage {
            status: status.to_string(),
            message: message.to_string(),
            count,
        });
    }
}

/// Orders `list` most frequent first (then by status and message).
pub fn sort_grpc_messages(list: &mut [GrpcMessage]) {
    list.sort_by(|a, b| {
        (b.count.cmp(&a.count))
            .then_with(|| a.status.cmp(&b.status))
            .then_with(|| a.message.cmp(&b.message))
    });
}

/// Where a run (or a segment of one) ran: what makes results from several processes
/// comparable and mergeable.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Origin {
    /// The machine's host name.
    pub host: String,
    /// The clock the schedule's zero was read from: `realtime` (wall clock, to which
    /// `started_unix_ms` refers; the schedule itself runs on the monotonic clock).
    pub clock: String,
    /// `K/N` when this was one segment of a run, absent for a whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segment: Option<String>,
    /// Whether the start was a shared `--start-at` instant.
    #[serde(default)]
    pub shared_start: bool,
    /// How late this process began after a shared start, in milliseconds (the
    /// arrivals due meanwhile count as send lag).
    #[serde(default)]
    pub late_ms: f64,
    /// Which kernel interface carried the connections: `epoll` or `io_uring` (for a
    /// merged result, each its parts used, joined by commas).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub io: String,
    /// Why `--io auto` chose epoll, or why some threads fell back to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_note: Option<String>,
    /// For a merged result: each part, as `K/N on HOST` or `a whole run on HOST`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<String>,
}

/// How late a send may go out against its intended start before it counts as late
/// (and an arrival left unsent at the end, as censored): 5 ms.
pub const LATE: std::time::Duration = std::time::Duration::from_millis(5);

/// How well an open-model run held its schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpenStats {
    /// Requests (or sessions) per second asked for, when the shape has one rate.
    pub target_rate: Option<f64>,
    /// Requests (or sessions) started per second.
    pub achieved_rate: f64,
    /// How late starts were against their intended time.
    pub send_lag: LatencyStats,
    /// Arrivals that were due before the end but never started.
    pub never_sent: u64,
    /// Of the corrected latency's values, those of arrivals never sent: each counted as
    /// the time from its intended start to the run's end, a lower bound of what its
    /// latency would have been (right-censored), so that a saturated run's percentiles
    /// are not understated.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub censored: u64,
    /// True when the generator fell behind (see [`OpenStats::fell_behind`]); `cause`
    /// then says why it most likely did.
    pub behind: bool,
    /// The likely cause when `behind`.
    pub cause: Option<String>,
}

impl OpenStats {
    /// The rule for `behind`: more than 1 % of the sends (and two at least) late, or
    /// more than 0.1 % of the arrivals never sent. Late is judged against the rate:
    /// over 5 ms, or over half the mean gap between arrivals when that is longer (at
    /// 10/s a send 20 ms late still goes out long before the next one is due, and a
    /// busy machine's scheduler delays that much are no failure to offer the load).
    /// Two at least, because below a hundred sends 1 % is less than one: the first
    /// arrival of a run, which waits for the pool's connections, would alone make a
    /// slow-rate run "behind".
    pub fn fell_behind(send_lag: &Hist, started: u64, never_sent: u64, rate: Option<f64>) -> bool {
        let h = &send_lag.0;
        let half_gap = rate
            .filter(|r| *r > 0.0)
            .map_or(0, |r| (0.5e6 / r).min(1e9) as u64);
        let late = h
            .len()
            .saturating_sub(h.count_between(0, half_gap.max(LATE.as_micros() as u64)));
        (late >= 2 && late * 100 > h.len()) || never_sent * 1000 > started + never_sent
    }
}

/// What became of the sessions of a session-shaped run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionStats {
    /// Sessions started.
    pub started: u64,
    /// Sessions that made all their calls.
    pub completed: u64,
    /// Sessions ended by an error.
    pub failed: u64,
    /// Most sessions in progress at once.
    pub max_concurrent: u64,
    /// Lifetime of completed sessions.
    pub lifetime: LatencyStats,
    /// Calls per session asked for (with several session scripts, their mean).
    pub calls: u32,
    /// Requests per burst.
    pub burst: u32,
}

impl RunResult {
    /// What the limit verdict needs to know of this run besides its figures.
    pub fn limit_context(&self) -> crate::verdict::limit::Context {
        crate::verdict::limit::Context {
            duration_s: self.duration_s,
            closed: self.open.is_none(),
            behind: self.open.as_ref().is_some_and(|o| o.behind),
            unconnected: (
                (self.errors.iter())
                    .filter(|(k, _)| {
                        (crate::ErrorKind::ALL.iter())
                            .any(|e| e.name() == k.as_str() && e.is_connect())
                    })
                    .map(|(_, n)| *n)
                    .sum(),
                self.requests.started,
            ),
        }
    }

    /// Whether the run's figures describe the load generator as much as the server:
    /// its limit verdict is client-bound, or its capacity search stopped on the client.
    pub fn client_bound(&self) -> bool {
        self.client_limit().is_some()
    }

    /// Why the run is client-bound, when it is: the limit's reason, or how a capacity
    /// search that stopped on the client ended.
    pub fn client_limit(&self) -> Option<&str> {
        match (&self.limit, &self.capacity) {
            (Some(l), _) if l.verdict == crate::verdict::limit::Verdict::ClientBound => {
                Some(&l.reason)
            }
            (_, Some(c)) if c.client_limited() => Some(&c.ended),
            _ => None,
        }
    }

    /// Why the run's figures cannot stand for the server's pace because connections
    /// could not be opened: more than a tenth of its requests failed to connect.
    pub fn unconnected(&self) -> Option<String> {
        let (n, started) = self.limit_context().unconnected;
        (n * 10 > started)
            .then(|| format!("{n} of {started} requests could not open their connection"))
    }

    /// Keeps what was scraped from the server and judges the limit again with it:
    /// a queue in front of the server that grew says why its answers slowed.
    pub fn attach_server(&mut self, m: crate::measure::server::ServerMetrics) {
        if let Some(l) = &mut self.limit {
            l.server_queue = m.queue_growth();
        }
        self.server = Some(m);
        self.rejudge_limit();
    }

    /// Judges the limit again, after a figure in it changed (the target's CPU filled
    /// in by the lab, or a merge).
    pub fn rejudge_limit(&mut self) {
        let cx = self.limit_context();
        if let Some(l) = &mut self.limit {
            l.judge(cx);
        }
    }

    /// Responses with a 2xx status, and WebSocket answers (101: messages on an
    /// upgraded connection; an HTTP response never completes with 101).
    pub fn ok(&self) -> u64 {
        self.statuses
            .iter()
            .filter(|(s, _)| (200..300).contains(*s) || **s == 101)
            .map(|(_, n)| n)
            .sum()
    }

    /// Completed responses whose status is not 2xx.
    pub fn non_2xx(&self) -> u64 {
        self.requests.completed - self.ok()
    }

    /// Responses with a status outside 2xx and 3xx (what wrk counts), WebSocket
    /// answers (101) aside.
    pub fn non_2xx_3xx(&self) -> u64 {
        self.statuses
            .iter()
            .filter(|(s, _)| !(200..400).contains(*s) && **s != 101)
            .map(|(_, n)| n)
            .sum()
    }

    /// Failed requests of one kind.
    pub fn errors_of(&self, kind: crate::ErrorKind) -> u64 {
        self.errors.get(kind.name()).copied().unwrap_or(0)
    }

    /// Serialises as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("results serialise")
    }
}

/// For `skip_serializing_if`: a count of zero is left out.
fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests;
