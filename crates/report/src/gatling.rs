//! Gatling's console summary: Global Information with OK and KO columns, the response
//! time distribution, and errors with counts and percentages — 80 columns wide, with
//! Gatling's padding and wrapping.

use std::fmt::Write as _;

use hdrhistogram::Histogram;
use stampede_engine::{value_at_percentile, ErrorKind, RunResult};

/// Bounds of the "Response Time Distribution" section, milliseconds (Gatling's
/// defaults are 800 and 1200).
#[derive(Debug, Clone, Copy)]
pub struct GatlingBounds {
    /// Lower bound.
    pub lower_ms: u64,
    /// Upper bound.
    pub higher_ms: u64,
}

impl Default for GatlingBounds {
    fn default() -> Self {
        GatlingBounds {
            lower_ms: 800,
            higher_ms: 1200,
        }
    }
}

const WIDTH: usize = 80;

fn rule(o: &mut String, title: &str) {
    let head = format!("---- {title} ");
    let _ = writeln!(
        o,
        "{head}{}",
        "-".repeat(WIDTH.saturating_sub(head.chars().count()))
    );
}

/// `> name … total (OK=… KO=…)`: name padded to 48, total to 7, OK and KO to 6.
fn counters(o: &mut String, name: &str, total: &str, ok: &str, ko: &str) {
    let _ = writeln!(o, "> {name:<48} {total:>7} (OK={ok:<6} KO={ko:<6})");
}

/// Gatling prints rates with up to three decimals and no trailing zeros.
fn rate(x: f64) -> String {
    let s = format!("{x:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

fn ms(us: f64) -> String {
    format!("{}", (us / 1000.0).round() as u64)
}

fn stat(h: &Histogram<u64>, f: impl Fn(&Histogram<u64>) -> f64) -> String {
    if h.is_empty() {
        "-".into()
    } else {
        ms(f(h))
    }
}

/// The summary Gatling prints at the end of a simulation.
///
/// Long on purpose: it prints Gatling's report line for line in Gatling's order.
pub fn gatling_report(r: &RunResult, bounds: GatlingBounds) -> String {
    let mut o = String::new();
    let h = &r.histograms;
    let all = {
        let mut a = h.ok.0.clone();
        a.add(&h.ko.0).expect("same bounds");
        a
    };
    let (ok, ko) = (&h.ok.0, &h.ko.0);
    let _ = writeln!(o, "{}", "=".repeat(WIDTH));
    rule(&mut o, "Global Information");
    counters(
        &mut o,
        "request count",
        &all.len().to_string(),
        &ok.len().to_string(),
        &ko.len().to_string(),
    );
    type Stat = (&'static str, fn(&Histogram<u64>) -> f64);
    let stats: [Stat; 8] = [
        ("min response time", |h| h.min() as f64),
        ("max response time", |h| h.max() as f64),
        ("mean response time", |h| h.mean()),
        ("std deviation", |h| h.stdev()),
        ("response time 50th percentile", |h| {
            value_at_percentile(h, 50.0) as f64
        }),
        ("response time 75th percentile", |h| {
            value_at_percentile(h, 75.0) as f64
        }),
        ("response time 95th percentile", |h| {
            value_at_percentile(h, 95.0) as f64
        }),
        ("response time 99th percentile", |h| {
            value_at_percentile(h, 99.0) as f64
        }),
    ];
    for (name, f) in stats {
        counters(&mut o, name, &stat(&all, f), &stat(ok, f), &stat(ko, f));
    }
    let t = gatling_seconds(r);
    let per_sec = |n: u64| {
        if n == 0 {
            "-".to_string()
        } else {
            rate(n as f64 / t)
        }
    };
    counters(
        &mut o,
        "mean requests/sec",
        &rate(all.len() as f64 / t),
        &per_sec(ok.len()),
        &per_sec(ko.len()),
    );
    rule(&mut o, "Response Time Distribution");
    let total = all.len().max(1) as f64;
    let (lo, hi) = (bounds.lower_ms * 1000, bounds.higher_ms * 1000);
    let below = if ok.is_empty() {
        0
    } else {
        ok.count_between(0, lo.saturating_sub(1))
    };
    let above = if ok.is_empty() {
        0
    } else {
        ok.count_between(hi + 1, u64::MAX / 2)
    };
    let between = ok.len() - below - above;
    for (name, n) in [
        (format!("t < {} ms", bounds.lower_ms), below),
        (
            format!("{} ms < t < {} ms", bounds.lower_ms, bounds.higher_ms),
            between,
        ),
        (format!("t > {} ms", bounds.higher_ms), above),
        ("failed".to_string(), ko.len()),
    ] {
        let _ = writeln!(
            o,
            "> {name:<48} {n:>7} ({:>3.0}%)",
            100.0 * n as f64 / total
        );
    }
    let errors = error_lines(r);
    if !errors.is_empty() {
        rule(&mut o, "Errors");
        let ko_total = ko.len().max(1) as f64;
        for (msg, n) in errors {
            let pct = 100.0 * n as f64 / ko_total;
            let chars: Vec<char> = msg.chars().collect();
            let first: String = chars.iter().take(62).collect();
            let _ = writeln!(o, "> {first:<62} {n:>6} ({pct:>5.2}%)");
            for chunk in chars[62.min(chars.len())..].chunks(79) {
                let _ = writeln!(o, " {}", chunk.iter().collect::<String>());
            }
        }
    }
    let _ = writeln!(o, "{}", "=".repeat(WIDTH));
    o
}

/// KO causes in Gatling's wording: status check failures, then failures by kind.
fn error_lines(r: &RunResult) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = r
        .statuses
        .iter()
        .filter(|(s, _)| !((200..300).contains(*s) || **s == 304 || **s == 101))
        .map(|(s, n)| (format!("status.find.in([200..209], 304), found {s}"), *n))
        .collect();
    let timeout = r.settings.timeout_s.unwrap_or(0.0) * 1000.0;
    for k in ErrorKind::ALL {
        let n = r.errors_of(k);
        if n == 0 {
            continue;
        }
        let msg = match k {
            ErrorKind::Timeout => format!(
                "Request timeout to {} after {timeout:.0} ms",
                r.settings.address
            ),
            ErrorKind::ConnectRefused => format!("Connection refused: {}", r.settings.address),
            ErrorKind::ConnectTimeout => format!("Connection timed out: {}", r.settings.address),
            ErrorKind::ConnectOther => format!("Connect failed: {}", r.settings.address),
            ErrorKind::FdUnavailable => "Too many open files".into(),
            ErrorKind::AddrUnavailable => "Cannot assign requested address".into(),
            ErrorKind::Reset => "Connection reset by peer".into(),
            ErrorKind::Closed => "Premature close".into(),
            ErrorKind::Protocol => "Invalid HTTP response".into(),
            ErrorKind::Write => "Write failed".into(),
            ErrorKind::Read => "Read failed".into(),
            ErrorKind::TlsCertificate => "TLS certificate refused".into(),
            ErrorKind::TlsHandshake => "TLS handshake failed".into(),
            ErrorKind::H2StreamReset => "HTTP/2 stream reset (RST_STREAM)".into(),
            ErrorKind::H2GoAway => "HTTP/2 connection going away (GOAWAY)".into(),
            ErrorKind::ProxyRefused => "Proxy refused the tunnel (CONNECT)".into(),
            ErrorKind::StreamEvent => "Streamed event over the size limit or malformed".into(),
            ErrorKind::StreamStall => "Stream stalled past the event timeout".into(),
            ErrorKind::H3StreamReset => "HTTP/3 stream reset (RESET_STREAM)".into(),
            ErrorKind::H3GoAway => "HTTP/3 connection going away (GOAWAY)".into(),
            ErrorKind::H3Protocol => "HTTP/3 connection error".into(),
            ErrorKind::QuicTransport => "QUIC transport error".into(),
            ErrorKind::QuicIdleTimeout => "QUIC idle timeout".into(),
            ErrorKind::QuicVersion => "QUIC version negotiation failed".into(),
            ErrorKind::GrpcMessage => "gRPC message framing broken".into(),
            ErrorKind::GrpcNoStatus => "gRPC answer without grpc-status".into(),
            ErrorKind::WsUpgrade => "WebSocket upgrade refused".into(),
            ErrorKind::WsHandshake => "WebSocket handshake invalid".into(),
            ErrorKind::WsDeflateDeclined => "WebSocket compression declined".into(),
            ErrorKind::WsProtocol => "WebSocket protocol error (1002)".into(),
            ErrorKind::WsInvalidText => "WebSocket text not UTF-8 (1007)".into(),
            ErrorKind::WsTooBig => "WebSocket message over the limit (1009)".into(),
            ErrorKind::WsClosed => "WebSocket closed by the server".into(),
        };
        out.push((msg, n));
    }
    out.sort_by_key(|e| std::cmp::Reverse(e.1));
    out
}

/// Gatling's divisor for "mean requests/sec": the whole wall-clock seconds the run
/// touched, counted as its per-second buckets are (last second − first second + 1),
/// not the exact duration, so a 60.2 s run divides by 61 as Gatling's own report does.
fn gatling_seconds(r: &RunResult) -> f64 {
    let start = r.started_unix_ms;
    let end = start + (r.duration_s.max(0.0) * 1000.0) as u64;
    (end / 1000 - start / 1000 + 1) as f64
}

#[cfg(test)]
mod tests {
    #[test]
    fn rates_drop_trailing_zeros() {
        assert_eq!(super::rate(1400.0), "1400");
        assert_eq!(super::rate(838.71), "838.71");
        assert_eq!(super::rate(4590.1639), "4590.164");
    }
}
