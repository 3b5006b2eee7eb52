//! Renderers: a [`stampede_engine::RunResult`] in, text out.
//!
//! Each dialect prints the report shape of the tool it imitates, line for line, so
//! scripts that scrape ab's or wrk's output keep working; the numbers behind them come
//! from stampede's histograms. Renderers only read results: nothing here measures.
#![forbid(unsafe_code)]

pub mod ab;
pub mod aiperf;
pub mod artillery;
pub mod bench;
pub mod capacity;
pub mod dashboard;
pub mod exchange;
pub mod files;
pub mod gatling;
pub mod ghz;
pub mod guidellm;
pub mod h2load;
pub mod hey;
pub mod history;
pub mod html;
pub mod httperf;
pub mod native;
pub mod oha;
pub mod server;
pub mod svg;
pub mod units;
pub mod vegeta;
pub mod vllm;
pub mod wrk;

pub use ab::{ab_csv, ab_gnuplot, ab_html, ab_report, AbInfo, HtmlAttrs};
pub use bench::{bench_markdown, bench_table, changes_table};
pub use capacity::{capacity_html, capacity_line, capacity_report};
pub use dashboard::{dashboard_page, live_fragment, LiveStatus};
pub use files::{hgrm, hlog, junit, series_csv, shown_seconds, sliver, targets_csv, JunitCase};
pub use gatling::{gatling_report, GatlingBounds};
pub use h2load::{h2load_log, h2load_preamble, h2load_report, H2loadInfo};
pub use hey::{hey_csv, hey_report};
pub use history::{history_html, history_text};
pub use html::{bench_html, run_html};
pub use httperf::{httperf_report, HttperfInfo};
pub use native::{interrupted_line, summary, summary_with};
pub use oha::{oha_csv, oha_json, oha_report, OhaInfo};
pub use wrk::{wrk_report, WrkInfo};

use stampede_engine::RunResult;

/// A WebSocket run's upgrades in one line: `64 upgrades, each p50 610µs p99 771µs
/// max 771µs (from the open connection to the 101)`.
pub fn ws_upgrade_line(u: &stampede_engine::LatencyStats) -> String {
    format!(
        "{} upgrades, each p50 {} p99 {} max {} (from the open connection to the 101)",
        units::thousands(u.count),
        units::human_us(u.at(50.0).unwrap_or(0) as f64),
        units::human_us(u.at(99.0).unwrap_or(0) as f64),
        units::human_us(u.max_us as f64)
    )
}

/// The TLS side of a run in one line: `TLSv1_3 TLS13_AES_256_GCM_SHA384, ALPN
/// http/1.1; 64 handshakes (0 resumed), p50 1.17ms p99 2.30ms`.
pub fn tls_line(t: &stampede_engine::TlsStats) -> String {
    let p = |q: f64| units::human_us(t.handshake.at(q).unwrap_or(0) as f64);
    format!(
        "{}{}{}; {} handshakes ({} resumed), p50 {} p99 {}{}",
        t.version.as_deref().unwrap_or("no handshake finished"),
        t.cipher
            .as_deref()
            .map_or(String::new(), |c| format!(" {c}")),
        t.alpn
            .as_deref()
            .map_or(String::new(), |a| format!(", ALPN {a}")),
        units::thousands(t.handshakes),
        units::thousands(t.resumed),
        p(50.0),
        p(99.0),
        if t.http1_fallback > 0 {
            format!(
                "; HTTP/2 offered, HTTP/1.1 chosen on {} connections",
                units::thousands(t.http1_fallback)
            )
        } else {
            String::new()
        }
    )
}

/// QUIC's side of an HTTP/3 run in one line: `64 connections, 12,345 packets sent,
/// 3 lost (0.02 %, 2.1 KiB), 1 congestion event, RTT 95µs (41µs – 1.20ms)`.
pub fn quic_line(q: &stampede_engine::result::QuicStats) -> String {
    use crate::units::{human_us, thousands};
    let share = if q.packets_sent > 0 {
        q.packets_lost as f64 * 100.0 / q.packets_sent as f64
    } else {
        0.0
    };
    let mut line = format!(
        "{} connections, {} packets sent, {} lost ({share:.2} %, {} bytes), {} congestion events, RTT {} ({} – {})",
        thousands(q.connections),
        thousands(q.packets_sent),
        thousands(q.packets_lost),
        thousands(q.bytes_lost),
        thousands(q.congestion_events),
        human_us(q.rtt_mean_us),
        human_us(q.rtt_min_us as f64),
        human_us(q.rtt_max_us as f64),
    );
    if q.zero_rtt > 0 {
        line.push_str(&format!("; 0-RTT accepted on {}", thousands(q.zero_rtt)));
    }
    if q.retried > 0 {
        line.push_str(&format!("; Retry asked on {}", thousands(q.retried)));
    }
    if q.congestion_limited_us > 0 {
        line.push_str(&format!(
            "; congestion window full for {} (over all connections)",
            human_us(q.congestion_limited_us as f64)
        ));
    }
    let named = |m: &std::collections::BTreeMap<String, u64>| {
        m.iter()
            .map(|(k, v)| format!("{k} ×{}", thousands(*v)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !q.ends.is_empty() {
        line.push_str(&format!("; connections ended: {}", named(&q.ends)));
    }
    if !q.resets.is_empty() {
        line.push_str(&format!("; streams reset: {}", named(&q.resets)));
    }
    line
}

/// Warnings a user must not miss: error pages and failures make the numbers meaningless.
/// Empty when every request got a 2xx response.
pub fn loud_warnings(r: &RunResult) -> Vec<String> {
    use crate::units::{human_us, thousands};
    let mut out = Vec::new();
    let non2xx = r.non_2xx();
    // A result read from an interval log (`merge` of .hlog files) has no statuses: its
    // responses are of unknown status, not error pages.
    if non2xx > 0 && !r.statuses.is_empty() {
        let mut by: Vec<String> = r
            .statuses
            .iter()
            .filter(|(s, _)| !(200..300).contains(*s) && **s != 101)
            .map(|(s, n)| format!("{s}: {}", thousands(*n)))
            .collect();
        by.truncate(6);
        out.push(format!(
            "WARNING: {} of {} responses were not 2xx ({}). This is a benchmark of error pages, not of the page you asked for.",
            thousands(non2xx),
            thousands(r.requests.completed),
            by.join(", ")
        ));
    }
    if let Some(g) = &r.protocols.grpc {
        let not_ok: Vec<String> = (g.iter())
            .filter(|(c, _)| *c != "OK")
            .map(|(c, n)| format!("{c}: {}", thousands(*n)))
            .collect();
        let count: u64 = (g.iter()).filter(|(c, _)| *c != "OK").map(|(_, n)| n).sum();
        if count > 0 {
            out.push(format!(
                "WARNING: {} of {} calls were answered with a status other than OK ({}). This is a benchmark of errors, not of the call you asked for.",
                thousands(count),
                thousands(g.values().sum()),
                not_ok.join(", ")
            ));
        }
    }
    if let Some(w) = &r.protocols.websocket {
        let by = |m: &std::collections::BTreeMap<u16, u64>| -> (u64, String) {
            let list: Vec<String> = m
                .iter()
                .map(|(k, n)| format!("{k}: {}", thousands(*n)))
                .collect();
            (m.values().sum(), list.join(", "))
        };
        let (refused, statuses) = by(&w.refused);
        if refused > 0 {
            out.push(format!(
                "WARNING: the server refused {} WebSocket upgrades (answered {statuses}): no message went on them.",
                thousands(refused)
            ));
        }
        let (closes, codes) = by(&w.closes);
        if closes > 0 {
            out.push(format!(
                "WARNING: the server closed {} WebSocket connections during the run (close codes {codes}).",
                thousands(closes)
            ));
        }
    }
    if r.requests.failed > 0 {
        let kinds: Vec<String> = r
            .errors
            .iter()
            .map(|(k, n)| format!("{k}: {}", thousands(*n)))
            .collect();
        out.push(format!(
            "WARNING: {} of {} requests failed ({}).",
            thousands(r.requests.failed),
            thousands(r.requests.started),
            kinds.join(", ")
        ));
    }
    if let Some(op) = r.open.as_ref().filter(|o| o.behind) {
        out.push(format!(
            "WARNING: the load was not offered as asked (send lag p99 {}, {} arrivals never sent): {}. Latencies still count from the intended start.",
            human_us(op.send_lag.at(99.0).unwrap_or(0) as f64),
            thousands(op.never_sent),
            op.cause.as_deref().unwrap_or("cause unknown")
        ));
    }
    if let Some(why) = r.client_limit() {
        out.push(format!(
            "WARNING: client-bound: {why}. These figures describe this client as much as the server; give it more threads or cores, or run it on other machines (--segment, stampede ssh)."
        ));
    }
    // A push stream held to the run's end completes no request and still measures.
    if r.requests.completed == 0 && r.protocols.stream.as_ref().is_none_or(|s| s.events == 0) {
        out.push("WARNING: no request completed; there is nothing to measure.".to_string());
    }
    out
}
