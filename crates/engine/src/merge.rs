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

use crate::error::HistError;
use crate::result::{
    Hist, Histograms, Interval, LatencyStats, OpenStats, Origin, RunResult, SessionStats, TlsStats,
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
}

/// Merges `parts` into one result. Unless `force`, they must be of one URL, method,
/// workload shape and stampede version, and segments must not repeat.
pub fn merge(parts: &[RunResult], force: bool) -> Result<RunResult, MergeError> {
    let first = parts.first().ok_or(MergeError::Empty)?;
    if !force {
        check_alike(parts)?;
    }
    // Segments of one run carry the whole run's settings; whole runs add up.
    let segmented = parts.iter().all(|p| p.origin.segment.is_some());
    let base_ms = parts.iter().map(|p| p.started_unix_ms).min().unwrap_or(0);
    // The union of the windows: from the earliest start to the latest end.
    let duration_s = parts
        .iter()
        .map(|p| (p.started_unix_ms - base_ms) as f64 / 1e3 + p.duration_s)
        .fold(0.0, f64::max);
    let mut out = first.clone();
    out.started_unix_ms = base_ms;
    out.duration_s = duration_s;
    out.histograms = Histograms::default();
    out.requests = Default::default();
    out.statuses = BTreeMap::new();
    out.errors = BTreeMap::new();
    out.bytes = Default::default();
    out.connections_opened = 0;
    out.settings.threads = 0;
    if !segmented {
        out.settings.connections = 0;
        out.settings.requests = None;
    }
    for p in parts {
        add_histograms(&mut out.histograms, &p.histograms)?;
        let (c, pc) = (&mut out.requests, &p.requests);
        c.started += pc.started;
        c.completed += pc.completed;
        c.failed += pc.failed;
        c.abandoned += pc.abandoned;
        c.keepalive += pc.keepalive;
        c.length_mismatch += pc.length_mismatch;
        for (s, n) in &p.statuses {
            *out.statuses.entry(*s).or_default() += n;
        }
        for (e, n) in &p.errors {
            *out.errors.entry(e.clone()).or_default() += n;
        }
        let (b, pb) = (&mut out.bytes, &p.bytes);
        b.read += pb.read;
        b.body += pb.body;
        b.written += pb.written;
        b.headers_compressed += pb.headers_compressed;
        b.headers_decoded += pb.headers_decoded;
        out.connections_opened += p.connections_opened;
        out.settings.threads += p.settings.threads;
        if !segmented {
            out.settings.connections += p.settings.connections;
            out.settings.requests = match (out.settings.requests, p.settings.requests) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            };
        }
        out.server_software = out.server_software.or_else(|| p.server_software.clone());
        out.document_length = out.document_length.or(p.document_length);
    }
    out.latency = out.histograms.latency.stats();
    out.latency_uncorrected = out.histograms.uncorrected.stats();
    out.throughput_rps = rate(out.requests.completed, duration_s);
    out.intervals = merge_intervals(parts, base_ms)?;
    out.open = merge_open(parts, &out.histograms, duration_s, segmented);
    out.sessions = merge_sessions(parts, &out.histograms);
    out.tls = merge_tls(parts, &out.histograms);
    out.origin = merge_origin(parts);
    Ok(out)
}

fn rate(n: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        n as f64 / secs
    } else {
        0.0
    }
}

/// The checks that tell parts of one run from unrelated results.
fn check_alike(parts: &[RunResult]) -> Result<(), MergeError> {
    let first = &parts[0];
    let mut seen = BTreeMap::new();
    for (i, p) in parts.iter().enumerate() {
        let fields: [(&'static str, &str, &str); 4] = [
            ("url", &first.settings.url, &p.settings.url),
            ("method", &first.settings.method, &p.settings.method),
            ("shape", &first.settings.shape, &p.settings.shape),
            ("stampede version", &first.version, &p.version),
        ];
        for (what, a, b) in fields {
            if a != b {
                return Err(MergeError::Mismatch {
                    index: i + 1,
                    what,
                    first: a.to_string(),
                    theirs: b.to_string(),
                });
            }
        }
        if let Some(s) = &p.origin.segment {
            if let Some(j) = seen.insert(s.clone(), i + 1) {
                return Err(MergeError::Repeated {
                    segment: s.clone(),
                    first: j,
                    again: i + 1,
                });
            }
        }
    }
    Ok(())
}

fn add(into: &mut Hist, from: &Hist) {
    // Both use the engine's bounds (new_histogram), so addition cannot fail.
    into.0.add(&from.0).expect("histograms of the same bounds");
}

fn add_histograms(into: &mut Histograms, from: &Histograms) -> Result<(), MergeError> {
    let pairs: [(&mut Hist, &Hist); 12] = [
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
    ];
    for (a, b) in pairs {
        add(a, b);
    }
    Ok(())
}

/// Seconds aligned by wall clock: a part that started `d` whole seconds after the
/// earliest contributes its second `t` to second `t + d`.
fn merge_intervals(parts: &[RunResult], base_ms: u64) -> Result<Vec<Interval>, MergeError> {
    struct Second {
        completed: u64,
        failed: u64,
        bytes_read: u64,
        hist: Hist,
        uncorrected: Hist,
        connections: u64,
        in_flight: u64,
        users: u64,
    }
    let mut seconds: BTreeMap<u32, Second> = BTreeMap::new();
    for p in parts {
        let shift = ((p.started_unix_ms - base_ms) as f64 / 1e3).round() as u32;
        for iv in &p.intervals {
            let s = seconds.entry(iv.t + shift).or_insert_with(|| Second {
                completed: 0,
                failed: 0,
                bytes_read: 0,
                hist: Hist::default(),
                uncorrected: Hist::default(),
                connections: 0,
                in_flight: 0,
                users: 0,
            });
            s.completed += iv.completed;
            s.failed += iv.failed;
            s.bytes_read += iv.bytes_read;
            add(&mut s.hist, &iv.decode_histogram()?);
            add(&mut s.uncorrected, &iv.decode_uncorrected()?);
            s.connections += iv.connections;
            s.in_flight += iv.in_flight;
            s.users += iv.users;
        }
    }
    Ok(seconds
        .into_iter()
        .map(|(t, s)| Interval {
            t,
            completed: s.completed,
            failed: s.failed,
            bytes_read: s.bytes_read,
            latency: LatencyStats::of(&s.hist.0),
            histogram: s.hist.to_base64(),
            histogram_uncorrected: s.uncorrected.to_base64(),
            connections: s.connections,
            in_flight: s.in_flight,
            users: s.users,
        })
        .collect())
}

fn merge_open(
    parts: &[RunResult],
    h: &Histograms,
    duration_s: f64,
    segmented: bool,
) -> Option<OpenStats> {
    let opens: Vec<&OpenStats> = parts.iter().filter_map(|p| p.open.as_ref()).collect();
    let first = opens.first()?;
    // Each part's starts, recovered from its own rate and span.
    let started: f64 = parts
        .iter()
        .filter_map(|p| p.open.as_ref().map(|o| o.achieved_rate * p.duration_s))
        .sum();
    let started = started.round() as u64;
    let never_sent: u64 = opens.iter().map(|o| o.never_sent).sum();
    let send_lag = h.send_lag.stats();
    let p99 = send_lag.at(99.0).unwrap_or(0);
    // The engine's rule: a p99 send lag over 5 ms, or over 0.1 % of arrivals unsent.
    let behind =
        p99 > 5_000 || never_sent * 1000 > started + never_sent || opens.iter().any(|o| o.behind);
    Some(OpenStats {
        // Segments each ask for the whole run's rate; whole runs add up.
        target_rate: if segmented {
            first.target_rate
        } else {
            opens.iter().map(|o| o.target_rate).sum()
        },
        achieved_rate: rate(started, duration_s),
        send_lag,
        never_sent,
        behind,
        cause: behind
            .then(|| opens.iter().find_map(|o| o.cause.clone()))
            .flatten(),
    })
}

fn merge_sessions(parts: &[RunResult], h: &Histograms) -> Option<SessionStats> {
    let all: Vec<&SessionStats> = parts.iter().filter_map(|p| p.sessions.as_ref()).collect();
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

fn merge_tls(parts: &[RunResult], h: &Histograms) -> Option<TlsStats> {
    let all: Vec<&TlsStats> = parts.iter().filter_map(|p| p.tls.as_ref()).collect();
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

fn merge_origin(parts: &[RunResult]) -> Origin {
    let mut hosts: Vec<&str> = parts.iter().map(|p| p.origin.host.as_str()).collect();
    hosts.sort_unstable();
    hosts.dedup();
    Origin {
        host: hosts.join(","),
        clock: parts[0].origin.clock.clone(),
        segment: None,
        shared_start: parts.iter().all(|p| p.origin.shared_start),
        late_ms: parts.iter().map(|p| p.origin.late_ms).fold(0.0, f64::max),
        parts: parts
            .iter()
            .map(|p| match &p.origin.segment {
                Some(s) => format!("{s} on {}", p.origin.host),
                None => format!("a whole run on {}", p.origin.host),
            })
            .collect(),
    }
}
