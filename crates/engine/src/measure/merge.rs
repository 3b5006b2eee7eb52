//! Exact merges of results: the segments of one run (from several processes or
//! machines), or whole runs taken together.
//!
//! Nothing is approximated: histograms are added bucket by bucket (HdrHistogram's
//! addition), counters, statuses and errors by kind are summed, and per-second
//! intervals are aligned by wall-clock second — each result's second `t` is second
//! `t + (its start − the earliest start)` of the merge, not its own second 0 — before
//! they are added. The merged run spans the union of the windows, and its rates are
//! taken over that span. A result merged with itself keeps every percentile and
//! doubles every count.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::error::HistError;
use crate::measure::result::{
    decode_base64, Hist, Histograms, Interval, LatencyStats, OpenStats, Origin, RunResult,
    SessionStats, StreamStats, TlsStats, WsStats,
};

/// Why results cannot be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// No result was given.
    #[error("nothing to merge")]
    Empty,
    /// The results describe different runs.
    #[error("result {index} differs from the first in {what}: {theirs:?} against {first:?}; these are not parts of one run (merge anyway with --force)")]
    Mismatch {
        /// 1-based position of the differing result.
        index: usize,
        /// What differs (`url`, `method`, `shape`, `stampede version`).
        what: &'static str,
        /// The first result's value.
        first: String,
        /// This result's value.
        theirs: String,
    },
    /// The same segment twice.
    #[error("segment {segment} is given twice (results {first} and {again}); merge each segment once (or anyway with --force)")]
    Repeated {
        /// The segment, `K/N`.
        segment: String,
        /// 1-based positions of the two results.
        first: usize,
        again: usize,
    },
    /// An encoded histogram did not decode.
    #[error(transparent)]
    Hist(#[from] HistError),
    /// An interval log (.hlog) did not parse.
    #[error("not an HdrHistogram interval log: {0}")]
    Hlog(String),
}

/// The URL an interval log's result is given: interval logs name no target, so they
/// merge with each other (and with results only when forced).
pub const HLOG_URL: &str = "(an HdrHistogram interval log)";

/// A result holding what an HdrHistogram interval log (`.hlog`: stampede's `--hlog`,
/// or any other tool's) records: each interval's latency histogram (tag `corrected`,
/// or untagged; `uncorrected` kept apart), its time, and their sums. Counts other than
/// the histograms' (errors, bytes, statuses) are not in a log, so they are zero.
///
/// Long on purpose: the log's lines read in one pass (comments, the base time, the
/// start time, each interval), each kind a few lines, every size checked before use.
pub fn from_hlog(log: &[u8]) -> Result<RunResult, MergeError> {
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    let (mut start, mut base) = (None, None);
    let mut entries = Vec::new();
    for e in IntervalLogIterator::new(log) {
        match e.map_err(|e| MergeError::Hlog(format!("{e:?}")))? {
            LogEntry::StartTime(t) => start = Some(t),
            LogEntry::BaseTime(t) => base = Some(t),
            LogEntry::Interval(h) => entries.push((
                h.tag().map(|t| t.as_str().to_string()),
                h.start_timestamp(),
                h.duration(),
                h.encoded_histogram().to_string(),
            )),
        }
    }
    if entries.is_empty() {
        return Err(MergeError::Hlog("it holds no interval".into()));
    }
    // Interval times count from BaseTime when there is one, else from the epoch. A
    // time past what a clock can hold (u64 seconds) is refused, not wrapped.
    let origin = base.unwrap_or_default();
    let overflow = || {
        MergeError::Hlog(
            "an interval's time (BaseTime plus its start and length) is past any clock".into(),
        )
    };
    let mut first: Option<Duration> = None;
    for e in &entries {
        let at = origin.checked_add(e.1).ok_or_else(overflow)?;
        at.checked_add(e.2).ok_or_else(overflow)?;
        first = Some(first.map_or(at, |f| f.min(at)));
    }
    let first = first.unwrap_or_default();
    let start = start.unwrap_or(first).min(first);
    let mut histograms = Histograms::default();
    let mut seconds = EncodedSeconds::new();
    let mut counts: BTreeMap<i64, u64> = BTreeMap::new();
    let mut end = start;
    for (tag, at, len, encoded) in &entries {
        let at = origin + *at;
        end = end.max(at + *len);
        let t = (at.saturating_sub(start).as_secs_f64())
            .round()
            .min(u32::MAX as f64) as i64;
        let uncorrected = tag.as_deref() == Some("uncorrected");
        // Decoded once, added to its second and to the whole run's.
        let h = decode_base64(encoded)?;
        seconds.add(t, usize::from(uncorrected), &h)?;
        if uncorrected {
            histograms.uncorrected.add_checked(&h)?;
        } else {
            histograms.latency.add_checked(&h)?;
            let n = counts.entry(t).or_default();
            *n = n.saturating_add(h.len());
        }
    }
    let duration_s = (end - start).as_secs_f64();
    let completed = histograms.latency.0.len();
    let intervals = seconds
        .finish()?
        .into_iter()
        .map(
            |(t, (latency, [histogram, histogram_uncorrected]))| Interval {
                t: t as u32,
                completed: counts.get(&t).copied().unwrap_or(0),
                failed: 0,
                bytes_read: 0,
                events: 0,
                latency,
                histogram,
                histogram_uncorrected,
                connections: 0,
                in_flight: 0,
                users: 0,
            },
        )
        .collect();
    Ok(RunResult {
        schema: crate::measure::result::SCHEMA.to_string(),
        version: String::new(),
        started_unix_ms: start.as_millis() as u64,
        duration_s,
        settings: crate::measure::result::RunSettings {
            url: HLOG_URL.into(),
            address: String::new(),
            method: String::new(),
            request_bytes: 0,
            connections: 0,
            threads: 0,
            keepalive: true,
            pipeline: 1,
            requests: None,
            duration_s: Some(duration_s),
            timeout_s: None,
            shape: "interval log".into(),
            http2: false,
            http3: false,
            redirects: 0,
        },
        requests: crate::measure::result::Counts {
            started: completed,
            completed,
            ..Default::default()
        },
        throughput_rps: rate(completed, duration_s),
        statuses: BTreeMap::new(),
        errors: BTreeMap::new(),
        bytes: Default::default(),
        connections_opened: 0,
        server_software: None,
        document_length: None,
        latency: histograms.latency.stats(),
        latency_uncorrected: histograms.uncorrected.stats(),
        histograms,
        intervals,
        open: None,
        sessions: None,
        targets: Vec::new(),
        server: None,
        protocols: Default::default(),
        origin: Origin {
            host: "unknown".into(),
            clock: "realtime".into(),
            ..Origin::default()
        },
        limit: None,
        capacity: None,
        interrupted: false,
        fleet: None,
    })
}

/// Merges `parts` into one result. Unless `force`, they must be of one URL, method,
/// workload shape and stampede version, and segments must not repeat.
pub fn merge(parts: &[RunResult], force: bool) -> Result<RunResult, MergeError> {
    let mut m = Merger::new(force);
    for p in parts {
        m.add(p)?;
    }
    m.finish()
}

/// A merge in progress, one result at a time: what it holds does not grow with the
/// number of results (their histograms are added as they come), so thousands of
/// segment results merge in bounded memory.
pub struct Merger {
    force: bool,
    /// The first result, its histograms and counters emptied: the merged result grows
    /// from it.
    out: Option<RunResult>,
    count: usize,
    /// Whether every result so far is a segment.
    segmented: bool,
    segments: BTreeMap<String, usize>,
    /// Each result's start and span, and starts and opens for the rates.
    windows: Vec<(u64, f64)>,
    open: Vec<(OpenStats, f64)>,
    sessions: Vec<SessionStats>,
    tls: Vec<TlsStats>,
    quic: Option<crate::result::QuicStats>,
    /// The figures per target so far, merged by name.
    targets: Vec<crate::measure::targets::TargetStats>,
    origins: Vec<Origin>,
    /// Each part's limit figures (a few numbers per worker thread).
    limits: Vec<crate::verdict::limit::Limit>,
    /// Seconds by whole seconds from the first result's start (may be negative).
    seconds: BTreeMap<i64, Second>,
    /// Their histograms, kept encoded.
    hists: EncodedSeconds,
    /// Whole runs' settings, summed.
    connections: u64,
    requests: Option<u64>,
}

#[derive(Default)]
struct Second {
    completed: u64,
    failed: u64,
    bytes_read: u64,
    events: u64,
    connections: u64,
    in_flight: u64,
    users: u64,
}

/// The per-second histograms of a merge (corrected and uncorrected), kept as their
/// compressed encoding (a few hundred bytes to a few KiB a second) rather than as
/// histograms (about 190 KiB each): a merge's memory then follows the size of what it
/// writes, not the length of the run times the histograms' full width. One second at a
/// time is open for addition; a result's seconds come in order, so each is decoded and
/// encoded once per result.
struct EncodedSeconds {
    filed: BTreeMap<i64, [String; 2]>,
    open: Option<i64>,
    hists: [Hist; 2],
}

impl EncodedSeconds {
    fn new() -> EncodedSeconds {
        EncodedSeconds {
            filed: BTreeMap::new(),
            open: None,
            hists: [Hist::default(), Hist::default()],
        }
    }

    /// Adds a histogram to second `t`: `which` 0 is the corrected one, 1 the
    /// uncorrected.
    fn add(&mut self, t: i64, which: usize, h: &Histogram<u64>) -> Result<(), MergeError> {
        if self.open != Some(t) {
            self.file();
            if let Some(both) = self.filed.remove(&t) {
                for (h, e) in self.hists.iter_mut().zip(&both) {
                    h.add_base64(e)?;
                }
            }
            self.open = Some(t);
        }
        Ok(self.hists[which].add_checked(h)?)
    }

    fn file(&mut self) {
        if let Some(t) = self.open.take() {
            let both = [self.hists[0].to_base64(), self.hists[1].to_base64()];
            self.hists[0].0.reset();
            self.hists[1].0.reset();
            self.filed.insert(t, both);
        }
    }

    /// Every second's two encoded histograms, with the corrected one's figures.
    fn finish(mut self) -> Result<BTreeMap<i64, (LatencyStats, [String; 2])>, MergeError> {
        self.file();
        let mut h = Hist::default();
        let mut out = BTreeMap::new();
        for (t, both) in self.filed {
            h.0.reset();
            h.add_base64(&both[0])?;
            out.insert(t, (h.stats(), both));
        }
        Ok(out)
    }
}

impl Merger {
    /// An empty merge; `force` merges results that are not parts of one run.
    pub fn new(force: bool) -> Merger {
        Merger {
            force,
            out: None,
            count: 0,
            segmented: true,
            segments: BTreeMap::new(),
            windows: Vec::new(),
            open: Vec::new(),
            sessions: Vec::new(),
            tls: Vec::new(),
            quic: None,
            targets: Vec::new(),
            origins: Vec::new(),
            limits: Vec::new(),
            seconds: BTreeMap::new(),
            hists: EncodedSeconds::new(),
            connections: 0,
            requests: None,
        }
    }

    /// Adds one result.
    pub fn add(&mut self, p: &RunResult) -> Result<(), MergeError> {
        self.count += 1;
        let index = self.count;
        if let Some(first) = &self.out {
            if !self.force {
                check_alike(first, p, index)?;
            }
        }
        if let Some(s) = &p.origin.segment {
            if let Some(j) = self.segments.insert(s.clone(), index) {
                if !self.force {
                    return Err(MergeError::Repeated {
                        segment: s.clone(),
                        first: j,
                        again: index,
                    });
                }
            }
        } else {
            self.segmented = false;
        }
        let out = self.out.get_or_insert_with(|| {
            let mut o = p.clone();
            o.histograms = Histograms::default();
            o.requests = Default::default();
            o.statuses = BTreeMap::new();
            o.errors = BTreeMap::new();
            o.bytes = Default::default();
            o.connections_opened = 0;
            o.settings.threads = 0;
            o.protocols.grpc = o.protocols.grpc.as_ref().map(|_| BTreeMap::new());
            o.protocols.grpc_messages = Vec::new();
            o.protocols.websocket = o.protocols.websocket.as_ref().map(|_| Default::default());
            o.intervals = Vec::new();
            if let Some(s) = &mut o.protocols.stream {
                s.events = 0;
                s.done = 0;
                if let Some(d) = &mut s.delivery {
                    d.early = 0;
                }
                if let Some(t) = &mut s.tokens {
                    t.total = 0;
                    t.good = t.good.map(|_| 0);
                    t.usage_short = 0;
                }
            }
            o
        });
        add_histograms(&mut out.histograms, &p.histograms)?;
        out.requests += &p.requests;
        for (s, n) in &p.statuses {
            let c = out.statuses.entry(*s).or_default();
            *c = c.saturating_add(*n);
        }
        for (e, n) in &p.errors {
            let c = out.errors.entry(e.clone()).or_default();
            *c = c.saturating_add(*n);
        }
        out.bytes += &p.bytes;
        if let Some(g) = &p.protocols.grpc {
            let sum = out.protocols.grpc.get_or_insert_with(BTreeMap::new);
            for (code, n) in g {
                let c = sum.entry(code.clone()).or_default();
                *c = c.saturating_add(*n);
            }
        }
        for m in &p.protocols.grpc_messages {
            crate::result::add_grpc_message(
                &mut out.protocols.grpc_messages,
                &m.status,
                &m.message,
                m.count,
            );
        }
        crate::result::sort_grpc_messages(&mut out.protocols.grpc_messages);
        if let Some(w) = &p.protocols.websocket {
            out.protocols
                .websocket
                .get_or_insert_with(Default::default)
                .add(w);
        }
        out.connections_opened += p.connections_opened;
        out.settings.threads += p.settings.threads;
        out.server_software = out
            .server_software
            .take()
            .or_else(|| p.server_software.clone());
        out.document_length = out.document_length.or(p.document_length);
        out.interrupted |= p.interrupted;
        match (&mut out.protocols.stream, &p.protocols.stream) {
            (Some(s), Some(ps)) => {
                s.events = s.events.saturating_add(ps.events);
                s.done = s.done.saturating_add(ps.done);
                match (&mut s.delivery, &ps.delivery) {
                    (Some(d), Some(pd)) => d.early = d.early.saturating_add(pd.early),
                    (None, Some(pd)) => s.delivery = Some(pd.clone()),
                    (_, None) => {}
                }
                if let (Some(t), Some(pt)) = (&mut s.tokens, &ps.tokens) {
                    t.total = t.total.saturating_add(pt.total);
                    t.usage_short = t.usage_short.saturating_add(pt.usage_short);
                    t.good = match (t.good, pt.good) {
                        (Some(a), Some(b)) => Some(a.saturating_add(b)),
                        (a, b) => a.or(b),
                    };
                }
            }
            (None, Some(ps)) => out.protocols.stream = Some(ps.clone()),
            (_, None) => {}
        }
        self.connections = self.connections.saturating_add(p.settings.connections);
        self.requests = match (self.requests, p.settings.requests) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            (a, b) => a.or(b),
        };
        // Whole seconds from the first result's start, by wall clock.
        let anchor = self.windows.first().map_or(p.started_unix_ms, |w| w.0);
        let shift = ((p.started_unix_ms as f64 - anchor as f64) / 1e3).round() as i64;
        for iv in &p.intervals {
            let t = i64::from(iv.t) + shift;
            let s = self.seconds.entry(t).or_default();
            s.completed = s.completed.saturating_add(iv.completed);
            s.failed = s.failed.saturating_add(iv.failed);
            s.bytes_read = s.bytes_read.saturating_add(iv.bytes_read);
            s.events = s.events.saturating_add(iv.events);
            s.connections = s.connections.saturating_add(iv.connections);
            s.in_flight = s.in_flight.saturating_add(iv.in_flight);
            s.users = s.users.saturating_add(iv.users);
            self.hists.add(t, 0, &decode_base64(&iv.histogram)?)?;
            self.hists
                .add(t, 1, &decode_base64(&iv.histogram_uncorrected)?)?;
        }
        self.windows.push((p.started_unix_ms, p.duration_s));
        if let Some(o) = &p.open {
            self.open.push((o.clone(), p.duration_s));
        }
        self.sessions.extend(p.sessions.clone());
        self.tls.extend(p.protocols.tls.clone());
        if let Some(q) = &p.protocols.quic {
            self.quic.get_or_insert_with(Default::default).join(q);
        }
        if !p.targets.is_empty() {
            self.targets = crate::measure::targets::merge_targets(&[&self.targets, &p.targets])?;
        }
        self.origins.push(p.origin.clone());
        self.limits.extend(p.limit.clone());
        Ok(())
    }

    /// The merged result.
    pub fn finish(self) -> Result<RunResult, MergeError> {
        let mut out = self.out.ok_or(MergeError::Empty)?;
        let base_ms = self.windows.iter().map(|w| w.0).min().unwrap_or(0);
        // The union of the windows: from the earliest start to the latest end.
        let duration_s = self
            .windows
            .iter()
            .map(|&(start, d)| (start - base_ms) as f64 / 1e3 + d)
            .fold(0.0, f64::max);
        out.started_unix_ms = base_ms;
        out.duration_s = duration_s;
        // Segments of one run carry the whole run's settings; whole runs add up.
        if !self.segmented {
            out.settings.connections = self.connections;
            out.settings.requests = self.requests;
        }
        out.latency = out.histograms.latency.stats();
        out.latency_uncorrected = out.histograms.uncorrected.stats();
        out.throughput_rps = rate(out.requests.completed, duration_s);
        let first = self.seconds.keys().next().copied().unwrap_or(0);
        let mut hists = self.hists.finish()?;
        out.intervals = self
            .seconds
            .into_iter()
            .map(|(t, s)| {
                let (latency, [histogram, histogram_uncorrected]) =
                    hists.remove(&t).expect("every second has its histograms");
                Interval {
                    t: u32::try_from(t - first).unwrap_or(u32::MAX),
                    completed: s.completed,
                    failed: s.failed,
                    bytes_read: s.bytes_read,
                    events: s.events,
                    latency,
                    histogram,
                    histogram_uncorrected,
                    connections: s.connections,
                    in_flight: s.in_flight,
                    users: s.users,
                }
            })
            .collect();
        out.open = merge_open(&self.open, &out.histograms, duration_s, self.segmented);
        out.sessions = merge_sessions(&self.sessions, &out.histograms);
        out.protocols.tls = merge_tls(&self.tls, &out.histograms);
        if let Some(w) = &mut out.protocols.websocket {
            w.upgrade = WsStats::upgrade_of(&out.histograms);
        }
        out.protocols.quic = self.quic.clone();
        out.targets = self.targets.clone();
        if let Some(s) = &out.protocols.stream {
            let h = out.histograms.stream.clone().unwrap_or_default();
            let tokens = s.tokens.as_ref().map_or(0, |t| t.total);
            let good = s.tokens.as_ref().and_then(|t| t.good);
            let short = s.tokens.as_ref().map_or(0, |t| t.usage_short);
            let early = s.delivery.as_ref().map_or(0, |d| d.early);
            let mut merged = StreamStats::of(
                s.mode,
                (s.events, s.done, tokens, good, short),
                duration_s,
                &h,
            );
            if let Some(d) = &mut merged.delivery {
                d.early = early;
            }
            out.protocols.stream = Some(merged);
        }
        out.origin = merge_origin(&self.origins);
        out.limit = (!self.limits.is_empty()).then(|| {
            let parts: Vec<&crate::verdict::limit::Limit> = self.limits.iter().collect();
            crate::verdict::limit::Limit::merged(&parts, out.throughput_rps)
        });
        out.rejudge_limit();
        Ok(out)
    }
}

fn rate(n: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        n as f64 / secs
    } else {
        0.0
    }
}

/// The checks that tell parts of one run from unrelated results.
fn check_alike(first: &RunResult, p: &RunResult, index: usize) -> Result<(), MergeError> {
    let fields: [(&'static str, &str, &str); 4] = [
        ("url", &first.settings.url, &p.settings.url),
        ("method", &first.settings.method, &p.settings.method),
        ("shape", &first.settings.shape, &p.settings.shape),
        ("stampede version", &first.version, &p.version),
    ];
    for (what, a, b) in fields {
        if a != b {
            return Err(MergeError::Mismatch {
                index,
                what,
                first: a.to_string(),
                theirs: b.to_string(),
            });
        }
    }
    Ok(())
}

fn add_histograms(into: &mut Histograms, from: &Histograms) -> Result<(), MergeError> {
    let pairs: [(&mut Hist, &Hist); 14] = [
        (&mut into.latency, &from.latency),
        (&mut into.uncorrected, &from.uncorrected),
        (&mut into.connect, &from.connect),
        (&mut into.waiting, &from.waiting),
        (&mut into.processing, &from.processing),
        (&mut into.send_lag, &from.send_lag),
        (&mut into.ok, &from.ok),
        (&mut into.ko, &from.ko),
        (&mut into.session, &from.session),
        (&mut into.tls_handshake, &from.tls_handshake),
        (&mut into.first_byte, &from.first_byte),
        (&mut into.per_connection, &from.per_connection),
        (&mut into.redirect, &from.redirect),
        (&mut into.ws_upgrade, &from.ws_upgrade),
    ];
    for (a, b) in pairs {
        a.add_checked(&b.0)?;
    }
    match (&mut into.stream, &from.stream) {
        (Some(a), Some(b)) => a.add(b)?,
        (None, Some(b)) => into.stream = Some(b.clone()),
        (_, None) => {}
    }
    Ok(())
}

fn merge_open(
    opens: &[(OpenStats, f64)],
    h: &Histograms,
    duration_s: f64,
    segmented: bool,
) -> Option<OpenStats> {
    let first = &opens.first()?.0;
    // Each part's starts, recovered from its own rate and span.
    let started: f64 = opens.iter().map(|(o, d)| o.achieved_rate * d).sum();
    let started = started.round() as u64;
    let opens: Vec<&OpenStats> = opens.iter().map(|(o, _)| o).collect();
    let never_sent: u64 = opens.iter().map(|o| o.never_sent).sum();
    let send_lag = h.send_lag.stats();
    // Segments each ask for the whole run's rate; whole runs add up.
    let target_rate = if segmented {
        first.target_rate
    } else {
        opens.iter().map(|o| o.target_rate).sum()
    };
    let behind = OpenStats::fell_behind(&h.send_lag, started, never_sent, target_rate)
        || opens.iter().any(|o| o.behind);
    Some(OpenStats {
        target_rate,
        achieved_rate: rate(started, duration_s),
        send_lag,
        never_sent,
        censored: opens.iter().map(|o| o.censored).sum(),
        behind,
        cause: behind
            .then(|| opens.iter().find_map(|o| o.cause.clone()))
            .flatten(),
    })
}

fn merge_sessions(all: &[SessionStats], h: &Histograms) -> Option<SessionStats> {
    let first = all.first()?;
    Some(SessionStats {
        started: all.iter().map(|s| s.started).sum(),
        completed: all.iter().map(|s| s.completed).sum(),
        failed: all.iter().map(|s| s.failed).sum(),
        // Each part's own peak: their sum bounds the merged run's from above.
        max_concurrent: all.iter().map(|s| s.max_concurrent).sum(),
        lifetime: h.session.stats(),
        calls: first.calls,
        burst: first.burst,
    })
}

fn merge_tls(all: &[TlsStats], h: &Histograms) -> Option<TlsStats> {
    let first = all.first()?;
    Some(TlsStats {
        version: first.version.clone(),
        cipher: first.cipher.clone(),
        alpn: first.alpn.clone(),
        handshakes: all.iter().map(|t| t.handshakes).sum(),
        resumed: all.iter().map(|t| t.resumed).sum(),
        http1_fallback: all.iter().map(|t| t.http1_fallback).sum(),
        handshake: h.tls_handshake.stats(),
    })
}

fn merge_origin(parts: &[Origin]) -> Origin {
    let mut hosts: Vec<&str> = parts.iter().map(|p| p.host.as_str()).collect();
    hosts.sort_unstable();
    hosts.dedup();
    Origin {
        host: hosts.join(","),
        clock: parts[0].clock.clone(),
        segment: None,
        shared_start: parts.iter().all(|p| p.shared_start),
        late_ms: parts.iter().map(|p| p.late_ms).fold(0.0, f64::max),
        io: {
            let mut io: Vec<&str> = (parts.iter())
                .flat_map(|p| p.io.split(','))
                .filter(|s| !s.is_empty())
                .collect();
            io.sort_unstable();
            io.dedup();
            io.join(",")
        },
        io_note: parts.iter().find_map(|p| p.io_note.clone()),
        parts: parts
            .iter()
            .map(|p| match &p.segment {
                Some(s) => format!("{s} on {}", p.host),
                None => format!("a whole run on {}", p.host),
            })
            .collect(),
    }
}
