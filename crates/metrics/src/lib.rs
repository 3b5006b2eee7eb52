//! Live metrics out of a running `load`: the run's figures where monitoring systems
//! look — Prometheus's text format at `/metrics` (`--metrics-listen`, or beside
//! `--dashboard`), and pushed each second with `--out`: Prometheus remote write,
//! InfluxDB's line protocol and OpenTelemetry's OTLP/HTTP.
//!
//! [`dashboard`] serves a run live to a browser (a page, a second at a time, then the
//! report), and `/metrics` beside it or alone.
//!
//! Every output reads one [`Hub`]. The watcher thread feeds it each second as the
//! engine releases it (all workers merged, as the final result merges them), so the
//! totals an output shows once the run ends are the result's own: responses by status,
//! failures by kind, bytes, and the corrected and uncorrected latency and send lag as
//! exact histograms since the start. Pushes run on their own threads and never hold
//! up the run: a slow or refusing receiver costs a counted, reported failure, and the
//! seconds waiting for it are bounded ([`MAX_BACKLOG`]).

pub mod dashboard;
pub mod influx;
pub mod otlp;
pub mod post;
pub mod prom;
pub mod remote_write;
pub mod scrape;

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use stampede_engine::{Hist, LatencyStats, LiveSecond, LoadSpec, Shape};

/// Why the live outputs could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    /// A pusher's URL does not parse; `kind` names its output.
    #[error("{kind}: {reason}")]
    Url {
        /// The output's kind (`influxdb`, …).
        kind: &'static str,
        /// What is wrong with the URL.
        reason: post::UrlError,
    },
    /// A pusher's thread could not be started.
    #[error("{0}")]
    Thread(std::io::Error),
    /// A server's address (given with `flag`) could not be listened on.
    #[error(
        "{flag}: cannot listen on {addr:?}: {reason} (give HOST:PORT, e.g. {flag}=127.0.0.1:9000)"
    )]
    Listen {
        flag: &'static str,
        addr: String,
        reason: std::io::Error,
    },
    /// The server `flag` asks for could not be started.
    #[error("{flag}: {reason}")]
    Start {
        flag: &'static str,
        reason: std::io::Error,
    },
}

/// Why an output's `KIND=URL` is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OutError {
    /// No `=`.
    #[error("--out {0:?}: expected KIND=URL, KIND one of prometheus-rw, influxdb, otlp")]
    Form(String),
    /// The URL is not http:// or https://.
    #[error("--out {0:?}: the URL must start with http:// or https://")]
    Scheme(String),
    /// A kind no output has.
    #[error("--out {0:?}: unknown output (prometheus-rw=URL, influxdb=URL, otlp=URL; files are --json, --csv, --hlog, --raw)")]
    Kind(String),
}

/// Seconds kept for a pusher that falls behind; older ones are dropped and counted.
pub const MAX_BACKLOG: usize = 600;

/// How long the end of a run waits for the pushers' last writes: a receiver that
/// stalls holds the exit no longer, and what it did not take is said.
pub const FINAL_PUSH: Duration = Duration::from_secs(2);

/// One `--out KIND=URL`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Out {
    /// Prometheus remote write 1.0 (protobuf, snappy).
    PrometheusRw(String),
    /// InfluxDB 1.x line protocol: `http://HOST:8086/DATABASE`, as k6 takes it.
    Influxdb(String),
    /// OTLP/HTTP metrics (protobuf): `http://HOST:4318` or the full `/v1/metrics`.
    Otlp(String),
}

impl Out {
    /// Parses one `--out` value.
    pub fn parse(s: &str) -> Result<Out, OutError> {
        let (kind, url) = s
            .split_once('=')
            .ok_or_else(|| OutError::Form(s.to_string()))?;
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(OutError::Scheme(s.to_string()));
        }
        let url = url.to_string();
        match kind {
            "prometheus-rw" | "experimental-prometheus-rw" => Ok(Out::PrometheusRw(url)),
            "influxdb" => Ok(Out::Influxdb(url)),
            "otlp" | "opentelemetry" => Ok(Out::Otlp(url)),
            other => Err(OutError::Kind(other.to_string())),
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Out::PrometheusRw(_) => "prometheus-rw",
            Out::Influxdb(_) => "influxdb",
            Out::Otlp(_) => "otlp",
        }
    }
}

/// A second as the outputs need it: the merged interval's figures, its breakdown,
/// and when it began.
#[derive(Debug, Clone)]
pub struct Second {
    /// The second's start, ms since the Unix epoch.
    pub unix_ms: u64,
    pub completed: u64,
    pub failed: u64,
    pub bytes_read: u64,
    pub events: u64,
    pub latency: LatencyStats,
    pub connections: u64,
    pub in_flight: u64,
    pub users: u64,
    pub statuses: Vec<(u16, u64)>,
    pub errors: Vec<(&'static str, u64)>,
    pub send_lag: LatencyStats,
    /// For a run of several requests: each one that moved in the second, by name,
    /// with its answers, failures and latencies in the second.
    pub steps: Vec<(String, u64, u64, LatencyStats)>,
    /// The server's own series as last scraped by then (`--server-metrics`).
    pub server: Vec<(String, f64)>,
}

/// What the run is, for labels and the info series.
#[derive(Debug, Clone)]
pub struct RunInfo {
    pub method: String,
    pub url: String,
    /// The server's host, port and the URL's scheme, for OpenTelemetry's attributes.
    pub server_address: String,
    pub server_port: u16,
    pub scheme: String,
    /// The open model's rate, when the run has one.
    pub offered_rate: Option<f64>,
    /// The run's start, ms since the Unix epoch.
    pub start_unix_ms: u64,
    /// This machine's name, for the pushed series' `instance`.
    pub host: String,
}

impl RunInfo {
    /// A run whose target is not known yet (a fleet's, before its segments say).
    pub fn unknown() -> RunInfo {
        RunInfo {
            method: String::new(),
            url: String::new(),
            server_address: String::new(),
            server_port: 0,
            scheme: String::new(),
            offered_rate: None,
            start_unix_ms: unix_ms(SystemTime::now()),
            host: this_host(),
        }
    }

    pub fn of(spec: &LoadSpec) -> RunInfo {
        let offered_rate = match &spec.load.shape {
            Shape::Rate { rate, .. } => Some(*rate),
            _ => None,
        };
        RunInfo {
            method: spec.load.request.method.clone(),
            url: spec.target.url.clone(),
            server_address: spec.target.host.clone(),
            server_port: spec.target.port,
            scheme: if spec.target.tls { "https" } else { "http" }.into(),
            offered_rate,
            start_unix_ms: unix_ms(SystemTime::now()),
            host: this_host(),
        }
    }
}

/// This machine's name, for the pushed series' `instance`.
fn this_host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// The run's totals since its start.
#[derive(Debug, Clone)]
pub struct Totals {
    pub statuses: BTreeMap<u16, u64>,
    pub errors: BTreeMap<&'static str, u64>,
    pub bytes_read: u64,
    pub events: u64,
    /// The histograms' summaries (kept up to date from the hub's histograms).
    pub latency: LatencyStats,
    pub uncorrected: LatencyStats,
    pub send_lag: LatencyStats,
    /// The uncorrected latency in OpenTelemetry's buckets.
    pub duration: Buckets,
    /// The corrected latency since the start in [`prom::LATENCY_BOUNDS`]' buckets.
    pub latency_buckets: Buckets,
    /// The last second's levels.
    pub connections: u64,
    pub in_flight: u64,
    pub users: u64,
    /// For a run of several requests (a journey's steps, a targets file's requests),
    /// each one's figures since the start, in the order they were first answered.
    pub steps: Vec<StepTotals>,
    /// A journey's users and their failed checks, as its hooks count them.
    pub journeys: Option<JourneyTotals>,
    /// The server's own series as last scraped (`--server-metrics`), by name.
    pub server: Vec<(String, f64)>,
}

/// One request's figures since the start (a journey's step).
#[derive(Debug, Clone)]
pub struct StepTotals {
    pub name: String,
    pub completed: u64,
    pub failed: u64,
    pub latency: LatencyStats,
}

/// A journey's users so far, and each step's failed checks and captures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JourneyTotals {
    pub started: u64,
    pub completed: u64,
    pub failed: u64,
    /// (step, check or capture, failures).
    pub checks_failed: Vec<(String, String, u64)>,
}

/// Reads a journey's figures as they stand, for each scrape and push.
pub type JourneySource = Box<dyn Fn() -> JourneyTotals + Send + Sync>;

impl Default for Totals {
    fn default() -> Totals {
        let empty = Hist::default().stats();
        Totals {
            statuses: BTreeMap::new(),
            errors: BTreeMap::new(),
            bytes_read: 0,
            events: 0,
            latency: empty.clone(),
            uncorrected: empty.clone(),
            send_lag: empty,
            duration: Buckets::default(),
            latency_buckets: Buckets::default(),
            connections: 0,
            in_flight: 0,
            users: 0,
            steps: Vec::new(),
            journeys: None,
            server: Vec::new(),
        }
    }
}

/// A latency histogram in [`otlp::DURATION_BOUNDS`]' buckets, in seconds.
#[derive(Debug, Clone, Default)]
pub struct Buckets {
    pub count: u64,
    pub sum_s: f64,
    pub min_s: f64,
    pub max_s: f64,
    /// One count per bound (values at or below it, above the one before), then the
    /// values above the last.
    pub buckets: Vec<u64>,
}

impl Buckets {
    fn of(h: &Hist) -> Buckets {
        Buckets::within(h, &otlp::DURATION_BOUNDS)
    }

    /// `h` (µs) in buckets of `bounds` (seconds): each value counted in the first
    /// bucket whose bound is at or above it.
    pub(crate) fn within(h: &Hist, bounds: &[f64]) -> Buckets {
        let h = &h.0;
        let mut buckets = vec![0u64; bounds.len() + 1];
        for v in h.iter_recorded() {
            let s = h.highest_equivalent(v.value_iterated_to()) as f64 / 1e6;
            let i = bounds.partition_point(|&b| b < s);
            buckets[i] += v.count_at_value();
        }
        let n = h.len();
        Buckets {
            count: n,
            sum_s: if n == 0 {
                0.0
            } else {
                h.mean() * n as f64 / 1e6
            },
            min_s: if n == 0 { 0.0 } else { h.min() as f64 / 1e6 },
            max_s: if n == 0 { 0.0 } else { h.max() as f64 / 1e6 },
            buckets,
        }
    }
}

/// The run's histograms since its start, merged a second at a time. Kept apart from
/// [`Totals`] so that what outputs copy is their summaries, not the histograms.
#[derive(Default)]
struct Histograms {
    latency: Hist,
    uncorrected: Hist,
    send_lag: Hist,
    /// Each request's latency, as `Totals::steps` orders them.
    steps: Vec<Hist>,
}

/// A pusher's place in the stream of seconds.
struct Pusher {
    out: Out,
    /// Sequence number of the next second it has not sent.
    next: u64,
    writes: u64,
    failures: u64,
    dropped: u64,
    last_error: Option<String>,
    /// Its thread has ended.
    ended: bool,
}

struct State {
    info: RunInfo,
    totals: Totals,
    /// The run's requests by slot, as its figures per target name them.
    step_names: Vec<String>,
    /// Where each slot's figures are in `totals.steps`.
    step_at: BTreeMap<usize, usize>,
    hists: Histograms,
    /// The most recent seconds, for pushers; `first_seq` is the front's number.
    recent: VecDeque<Arc<Second>>,
    first_seq: u64,
    /// The run has ended: nothing more will come.
    done: bool,
    /// `/metrics` answered after the run ended.
    scraped_after_end: bool,
    pushers: Vec<Pusher>,
}

/// The live figures every output reads.
pub struct Hub {
    state: Mutex<State>,
    journeys: Mutex<Option<JourneySource>>,
    /// Signalled whenever the state changes: a second came, the run ended, a scrape
    /// read the figures, a pusher ended.
    changed: Condvar,
}

fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl Hub {
    /// A hub for a run of `spec`, with a pusher for each of `outs` (checked here, so a
    /// wrong URL fails before the run).
    pub fn new(spec: &LoadSpec, outs: &[Out]) -> Result<Arc<Hub>, MetricsError> {
        Hub::with_info(RunInfo::of(spec), spec.target_names(), outs)
    }

    /// A hub for a run described by `info` (a fleet's, whose segments say what they
    /// run), its requests named by `step_names`.
    pub fn with_info(
        info: RunInfo,
        step_names: Vec<String>,
        outs: &[Out],
    ) -> Result<Arc<Hub>, MetricsError> {
        for o in outs {
            let (Out::PrometheusRw(u) | Out::Influxdb(u) | Out::Otlp(u)) = o;
            post::Endpoint::parse(u).map_err(|reason| MetricsError::Url {
                kind: o.name(),
                reason,
            })?;
        }
        let hub = Arc::new(Hub {
            state: Mutex::new(State {
                info,
                totals: Totals::default(),
                step_names,
                step_at: BTreeMap::new(),
                hists: Histograms::default(),
                recent: VecDeque::new(),
                first_seq: 0,
                done: false,
                scraped_after_end: false,
                pushers: outs
                    .iter()
                    .map(|o| Pusher {
                        out: o.clone(),
                        next: 0,
                        writes: 0,
                        failures: 0,
                        dropped: 0,
                        last_error: None,
                        ended: false,
                    })
                    .collect(),
            }),
            journeys: Mutex::new(None),
            changed: Condvar::new(),
        });
        for i in 0..outs.len() {
            let h = hub.clone();
            std::thread::Builder::new()
                .name("stampede-out".into())
                .spawn(move || {
                    h.push_loop(i);
                    h.state().pushers[i].ended = true;
                    h.changed.notify_all();
                })
                .map_err(MetricsError::Thread)?;
        }
        Ok(hub)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Where a journey's users and failed checks are read from, for each scrape and
    /// push.
    pub fn watch_journeys(&self, source: JourneySource) {
        *self.journeys.lock().unwrap_or_else(|e| e.into_inner()) = Some(source);
    }

    /// The totals so far, with the journey's figures as they stand.
    fn totals(&self, t: Totals) -> Totals {
        let source = self.journeys.lock().unwrap_or_else(|e| e.into_inner());
        Totals {
            journeys: source.as_ref().map(|f| f()),
            ..t
        }
    }

    /// The server's series as just scraped: the outputs carry them from now on.
    pub fn server_sample(&self, values: Vec<(String, f64)>) {
        self.state().totals.server = values;
        self.changed.notify_all();
    }

    /// The run starts now: its seconds are stamped from here.
    pub fn begin(&self) {
        self.begin_at(unix_ms(SystemTime::now()));
    }

    /// The run started at `start_unix_ms` (a fleet's shared start).
    pub fn begin_at(&self, start_unix_ms: u64) {
        self.state().info.start_unix_ms = start_unix_ms;
    }

    /// Changes what the run is said to be (a fleet learns it as its segments say).
    pub fn relabel(&self, f: impl FnOnce(&mut RunInfo)) {
        f(&mut self.state().info);
        self.changed.notify_all();
    }

    /// Takes one second the engine released.
    pub fn second(&self, s: &LiveSecond) {
        let i = &s.interval;
        let mut st = self.state();
        let unix_ms = st.info.start_unix_ms + u64::from(i.t) * 1000;
        let second = Second {
            unix_ms,
            completed: i.completed,
            failed: i.failed,
            bytes_read: i.bytes_read,
            events: i.events,
            latency: i.latency.clone(),
            connections: i.connections,
            in_flight: i.in_flight,
            users: i.users,
            statuses: s.statuses.clone(),
            errors: s.errors.iter().map(|(k, n)| (k.name(), *n)).collect(),
            send_lag: s.send_lag.stats(),
            steps: (s.targets.iter())
                .filter_map(|t| {
                    let name = st.step_names.get(t.slot)?;
                    Some((name.clone(), t.completed, t.failed, t.latency.stats()))
                })
                .collect(),
            server: st.totals.server.clone(),
        };
        let wants_buckets = st.pushers.iter().any(|p| matches!(p.out, Out::Otlp(_)));
        let State {
            totals: t,
            hists: h,
            step_names,
            step_at,
            ..
        } = &mut *st;
        for lt in &s.targets {
            let Some(name) = step_names.get(lt.slot) else {
                continue;
            };
            let at = *step_at.entry(lt.slot).or_insert_with(|| {
                t.steps.push(StepTotals {
                    name: name.clone(),
                    completed: 0,
                    failed: 0,
                    latency: Hist::default().stats(),
                });
                h.steps.push(Hist::default());
                t.steps.len() - 1
            });
            let step = &mut t.steps[at];
            step.completed += lt.completed;
            step.failed += lt.failed;
            if !lt.latency.0.is_empty() {
                // Within the run's bounds, as every latency the engine records.
                let _ = h.steps[at].0.add(&lt.latency.0);
                step.latency = h.steps[at].stats();
            }
        }
        for (code, n) in &s.statuses {
            *t.statuses.entry(*code).or_default() += n;
        }
        for (kind, n) in &second.errors {
            *t.errors.entry(kind).or_default() += n;
        }
        t.bytes_read += i.bytes_read;
        t.events += i.events;
        // Histograms this process encoded a moment ago.
        let _ = h.latency.add_base64(&i.histogram);
        let _ = h.uncorrected.add_base64(&i.histogram_uncorrected);
        h.send_lag.add(&s.send_lag);
        t.latency = h.latency.stats();
        t.latency_buckets = Buckets::within(&h.latency, &prom::LATENCY_BOUNDS);
        t.uncorrected = h.uncorrected.stats();
        t.send_lag = h.send_lag.stats();
        if wants_buckets {
            t.duration = Buckets::of(&h.uncorrected);
        }
        t.connections = i.connections;
        t.in_flight = i.in_flight;
        t.users = i.users;
        st.recent.push_back(Arc::new(second));
        while st.recent.len() > MAX_BACKLOG {
            st.recent.pop_front();
            st.first_seq += 1;
        }
        drop(st);
        self.changed.notify_all();
    }

    /// The Prometheus text of the figures so far, for `/metrics`.
    pub fn scrape(&self) -> (String, bool) {
        let (info, totals, done) = {
            let st = self.state();
            (st.info.clone(), st.totals.clone(), st.done)
        };
        (prom::render(&info, &self.totals(totals), done), done)
    }

    /// A scrape's answer went out whole; `final_figures`: it held the run's final
    /// figures, and the end of the run need linger no longer for them. Told once the
    /// answer is written, not when it is made: a process that ended in between would
    /// cut the one scrape that carried them.
    pub fn delivered(&self, final_figures: bool) {
        if final_figures {
            self.state().scraped_after_end = true;
            self.changed.notify_all();
        }
    }

    /// Waits on `st` until `ready` holds or `until` passes; signalled by every change.
    fn wait_until<'a>(
        &self,
        mut st: MutexGuard<'a, State>,
        until: Instant,
        ready: impl Fn(&State) -> bool,
    ) -> MutexGuard<'a, State> {
        while !ready(&st) {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            st = self
                .changed
                .wait_timeout(st, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        st
    }

    /// The run has ended: the pushers send what is left (waiting at most
    /// [`FINAL_PUSH`]), and `/metrics` serves the final figures for up to `linger`, or
    /// until one scrape has read them. Returns a line for each output that failed.
    pub fn finish(&self, linger: Duration) -> Vec<String> {
        let mut st = self.state();
        st.done = true;
        self.changed.notify_all();
        let st = self.wait_until(st, Instant::now() + FINAL_PUSH, |s| {
            s.pushers.iter().all(|p| p.ended)
        });
        let unfinished: Vec<bool> = st.pushers.iter().map(|p| !p.ended).collect();
        let st = self.wait_until(st, Instant::now() + linger, |s| s.scraped_after_end);
        st.pushers
            .iter()
            .zip(unfinished)
            .filter(|(p, stuck)| {
                *stuck
                    || p.failures + p.dropped > 0
                    || p.next < st.first_seq + st.recent.len() as u64
            })
            .map(|(p, stuck)| {
                let behind = (st.first_seq + st.recent.len() as u64).saturating_sub(p.next);
                format!(
                    "--out {}: {}{} of {} writes failed{}{}{}",
                    p.out.name(),
                    if stuck {
                        format!(
                            "the last push had not finished {} s after the run's end (the receiver stalled); ",
                            FINAL_PUSH.as_secs()
                        )
                    } else {
                        String::new()
                    },
                    p.failures,
                    p.writes,
                    p.last_error
                        .as_deref()
                        .map(|e| format!(" (last: {e})"))
                        .unwrap_or_default(),
                    if p.dropped > 0 {
                        format!("; {} seconds dropped behind a slow receiver", p.dropped)
                    } else {
                        String::new()
                    },
                    if behind > 0 {
                        format!("; {behind} seconds not sent by the end")
                    } else {
                        String::new()
                    }
                )
            })
            .collect()
    }

    /// One pusher's thread: waits for seconds, sends them, until the run has ended and
    /// everything is sent (or its last try failed).
    fn push_loop(&self, i: usize) {
        let out = self.state().pushers[i].out.clone();
        let endpoint = match out {
            Out::PrometheusRw(ref u) | Out::Influxdb(ref u) | Out::Otlp(ref u) => {
                post::Endpoint::parse(u).expect("checked when the hub was made")
            }
        };
        let mut client = post::Client::new(endpoint);
        // Whether a push made after the run ended has gone out: totals that are read
        // when pushed (a journey's, which its threads hand over as they end) are final
        // only then. InfluxDB's points are the seconds themselves.
        let mut final_sent = matches!(out, Out::Influxdb(_));
        loop {
            let (info, batch, totals, done) = {
                let mut st = self.state();
                loop {
                    let end = st.first_seq + st.recent.len() as u64;
                    if st.pushers[i].next < end || st.done {
                        break;
                    }
                    st = self.changed.wait(st).unwrap_or_else(|e| e.into_inner());
                }
                let first = st.first_seq;
                let p = &mut st.pushers[i];
                if p.next < first {
                    p.dropped += first - p.next;
                    p.next = first;
                }
                let from = (p.next - first) as usize;
                let batch: Vec<Arc<Second>> = st.recent.iter().skip(from).cloned().collect();
                (st.info.clone(), batch, st.totals.clone(), st.done)
            };
            if batch.is_empty() && done && final_sent {
                return;
            }
            let totals = self.totals(totals);
            let result = match &out {
                Out::Influxdb(_) => client.post(
                    &influx::write_path(client.endpoint()),
                    "text/plain; charset=utf-8",
                    &[],
                    &influx::lines(&info, &batch),
                ),
                Out::PrometheusRw(_) => client.post(
                    &client.endpoint().path.clone(),
                    "application/x-protobuf",
                    remote_write::HEADERS,
                    &remote_write::body(&info, &totals, done),
                ),
                Out::Otlp(_) => client.post(
                    &otlp::path(client.endpoint()),
                    "application/x-protobuf",
                    &[],
                    &otlp::body(&info, &totals),
                ),
            };
            let mut st = self.state();
            let p = &mut st.pushers[i];
            p.writes += 1;
            match result {
                Ok(()) => {
                    p.next += batch.len() as u64;
                    final_sent |= done;
                }
                Err(e) => {
                    p.failures += 1;
                    p.last_error = Some(e.to_string());
                    if done {
                        // The run is over; one failed last try is reported, not retried.
                        return;
                    }
                    // A refusing receiver is tried again a second later (or at once
                    // when the run ends), not in a loop.
                    let retry = Instant::now() + Duration::from_secs(1);
                    drop(self.wait_until(st, retry, |s| s.done));
                }
            }
        }
    }
}
