//! httperf's report: totals, connection, request and reply statistics, the client's
//! CPU time, network I/O and both error lines with every class.
//!
//! Error classes map from stampede's kinds: client-timo (no reply within `--timeout`),
//! socket-timo (connect timeout), connrefused, connreset (reset or premature close),
//! fd-unavail (no descriptor: EMFILE/ENFILE), addrunavail (no local port:
//! EADDRNOTAVAIL); ftab-full is httperf's own descriptor table, which stampede does
//! not have, so it is always 0. httperf counts errors per connection; stampede counts
//! every request that got no reply.

use std::fmt::Write as _;

use stampede_engine::{value_at_percentile, ErrorKind, RunResult};

/// What httperf prints that is not in the result.
#[derive(Debug, Clone)]
pub struct HttperfInfo {
    /// The normalised command line, echoed first as httperf does.
    pub command: String,
    /// Client CPU time, user and system seconds; `None` where it was not measured
    /// (a merged result: each segment's own report has its share).
    pub cpu: Option<(f64, f64)>,
    /// `--wsess` was used: print session statistics.
    pub sessions: bool,
}

/// The report httperf prints at the end of a run.
///
/// Long on purpose: it prints httperf's report line for line in httperf's order, which
/// scripts scrape.
pub fn httperf_report(r: &RunResult, info: &HttperfInfo) -> String {
    let mut o = String::new();
    let t = r.duration_s.max(f64::MIN_POSITIVE);
    let q = &r.requests;
    let s = r.sessions.clone();
    // httperf counts the connections it opened: a session that never got a
    // descriptor (fd-unavail) or a local port (addrunavail) is not one.
    let conns = r.connections_opened;
    let _ = writeln!(o, "{}", info.command);
    let _ = writeln!(o, "Maximum connect burst length: 1\n");
    let _ = writeln!(
        o,
        "Total: connections {conns} requests {} replies {} test-duration {t:.3} s\n",
        q.started, q.completed
    );
    let conn_rate = conns as f64 / t;
    let max_conc = s
        .as_ref()
        .map_or(r.settings.connections, |s| s.max_concurrent);
    let _ = writeln!(
        o,
        "Connection rate: {conn_rate:.1} conn/s ({:.1} ms/conn, <={max_conc} concurrent connections)",
        if conn_rate > 0.0 { 1000.0 / conn_rate } else { 0.0 }
    );
    let life = &r.histograms.session.0;
    let msf = |us: f64| us / 1000.0;
    if life.is_empty() {
        let _ = writeln!(
            o,
            "Connection time [ms]: min 0.0 avg 0.0 max 0.0 median 0.0 stddev 0.0"
        );
    } else {
        let _ = writeln!(
            o,
            "Connection time [ms]: min {:.1} avg {:.1} max {:.1} median {:.1} stddev {:.1}",
            msf(life.min() as f64),
            msf(life.mean()),
            msf(life.max() as f64),
            msf(value_at_percentile(life, 50.0) as f64),
            msf(life.stdev())
        );
    }
    // Connect time averaged over the connections that had one.
    let c = &r.histograms.connect.0;
    let with_connect = c.len() - c.count_at(0);
    let connect_avg = if with_connect > 0 {
        c.mean() * c.len() as f64 / with_connect as f64
    } else {
        0.0
    };
    let _ = writeln!(o, "Connection time [ms]: connect {:.1}", msf(connect_avg));
    let _ = writeln!(
        o,
        "Connection length [replies/conn]: {:.3}\n",
        if conns > 0 {
            q.completed as f64 / conns as f64
        } else {
            0.0
        }
    );
    let req_rate = q.started as f64 / t;
    let _ = writeln!(
        o,
        "Request rate: {req_rate:.1} req/s ({:.1} ms/req)",
        if req_rate > 0.0 {
            1000.0 / req_rate
        } else {
            0.0
        }
    );
    let _ = writeln!(
        o,
        "Request size [B]: {:.1}\n",
        r.settings.request_bytes as f64
    );
    // Reply rate sampled over 5 s windows, as httperf does.
    let mut windows: Vec<u64> = Vec::new();
    for iv in &r.intervals {
        let w = (iv.t / 5) as usize;
        if windows.len() <= w {
            windows.resize(w + 1, 0);
        }
        windows[w] += iv.completed;
    }
    let full = (t / 5.0).floor() as usize;
    let samples: Vec<f64> = windows.iter().take(full).map(|n| *n as f64 / 5.0).collect();
    let (mn, avg, mx, sd) = if samples.is_empty() {
        (0.0, 0.0, 0.0, 0.0)
    } else {
        let n = samples.len() as f64;
        let avg = samples.iter().sum::<f64>() / n;
        let sd = if samples.len() > 1 {
            (samples.iter().map(|x| (x - avg).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
        } else {
            0.0
        };
        (
            samples.iter().cloned().fold(f64::INFINITY, f64::min),
            avg,
            samples.iter().cloned().fold(0.0, f64::max),
            sd,
        )
    };
    let _ = writeln!(
        o,
        "Reply rate [replies/s]: min {mn:.1} avg {avg:.1} max {mx:.1} stddev {sd:.1} ({} samples)",
        samples.len()
    );
    let w = &r.histograms.waiting.0;
    let u = &r.histograms.uncorrected.0;
    let response = if w.is_empty() { 0.0 } else { w.mean() };
    let transfer = if u.is_empty() {
        0.0
    } else {
        (u.mean() - response).max(0.0)
    };
    let _ = writeln!(
        o,
        "Reply time [ms]: response {:.1} transfer {:.1}",
        msf(response),
        msf(transfer)
    );
    let n = q.completed.max(1) as f64;
    let header = (r.bytes.read - r.bytes.body) as f64 / n;
    let content = r.bytes.body as f64 / n;
    let _ = writeln!(
        o,
        "Reply size [B]: header {header:.1} content {content:.1} footer 0.0 (total {:.1})",
        header + content
    );
    let class = |c: u16| -> u64 {
        r.statuses
            .iter()
            .filter(|(s, _)| **s / 100 == c)
            .map(|(_, n)| n)
            .sum()
    };
    let _ = writeln!(
        o,
        "Reply status: 1xx={} 2xx={} 3xx={} 4xx={} 5xx={}\n",
        class(1),
        class(2),
        class(3),
        class(4),
        class(5)
    );
    if info.sessions {
        if let Some(s) = &s {
            let l = &s.lifetime;
            let _ = writeln!(
                o,
                "Session rate [sess/s]: avg {:.2} ({} completed, {} failed, {} total)",
                s.completed as f64 / t,
                s.completed,
                s.failed,
                s.started
            );
            let _ = writeln!(o, "Session: avg 1.00 connections/session");
            let _ = writeln!(o, "Session lifetime [s]: {:.1}", l.mean_us / 1e6);
            let _ = writeln!(o, "Session length [calls]: {}\n", s.calls);
        }
    }
    match info.cpu {
        Some((user, system)) => {
            let _ = writeln!(
                o,
                "CPU time [s]: user {user:.2} system {system:.2} (user {:.1}% system {:.1}% total {:.1}%)",
                100.0 * user / t,
                100.0 * system / t,
                100.0 * (user + system) / t
            );
        }
        None => {
            let _ = writeln!(
                o,
                "CPU time [s]: not in a merged result (each segment's own report has its share)"
            );
        }
    }
    let bytes = (r.bytes.read + r.bytes.written) as f64;
    let _ = writeln!(
        o,
        "Net I/O: {:.1} KB/s ({:.1}*10^6 bps)\n",
        bytes / 1024.0 / t,
        bytes * 8.0 / 1e6 / t
    );
    let e = |k: ErrorKind| r.errors_of(k);
    let client_timo = e(ErrorKind::Timeout);
    let socket_timo = e(ErrorKind::ConnectTimeout);
    let refused = e(ErrorKind::ConnectRefused);
    let reset = e(ErrorKind::Reset) + e(ErrorKind::Closed);
    let fd = e(ErrorKind::FdUnavailable);
    let addr = e(ErrorKind::AddrUnavailable);
    let other = q.failed - client_timo - socket_timo - refused - reset - fd - addr;
    let _ = writeln!(
        o,
        "Errors: total {} client-timo {client_timo} socket-timo {socket_timo} connrefused {refused} connreset {reset}",
        q.failed
    );
    let _ = writeln!(
        o,
        "Errors: fd-unavail {fd} addrunavail {addr} ftab-full 0 other {other}"
    );
    o
}
