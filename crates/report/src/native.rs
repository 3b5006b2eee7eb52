//! stampede's own compact summary: throughput, latency percentiles, statuses, errors
//! by kind and bytes, in a handful of aligned lines.

use std::fmt::Write as _;

use stampede_engine::RunResult;

use crate::units::{human_bytes, human_us, thousands};

/// The mark of a run stopped by Ctrl-C or SIGTERM: `! INTERRUPTED after 2.25s of
/// 10s: …`, so that a partial run is never read as a whole one.
pub fn interrupted_line(r: &RunResult) -> String {
    let asked = match (r.settings.requests, r.settings.duration_s) {
        (Some(n), _) => format!(" of {} requests", thousands(n)),
        (None, Some(d)) => format!(" of {d:.0}s"),
        _ => String::new(),
    };
    format!(
        "  ! INTERRUPTED after {:.2}s{asked}: the figures below cover only the part that ran",
        r.duration_s
    )
}

/// The summary printed by `stampede load`, its limit in one short line.
pub fn summary(r: &RunResult) -> String {
    summary_with(r, false)
}

/// The load's shape as the summary shows it: a whole rate with thousands separators
/// (`rate 50,000/s, Poisson arrivals`); anything else as recorded.
fn shape_shown(shape: &str) -> String {
    let rate = (shape.strip_prefix("rate "))
        .and_then(|r| r.split_once("/s"))
        .and_then(|(n, rest)| Some((n.parse::<u64>().ok()?, rest)));
    match rate {
        Some((n, rest)) => format!("rate {}/s{rest}", thousands(n)),
        None => shape.to_string(),
    }
}

/// What a verdict means for the figures, in a few words.
fn limit_gist(v: stampede_engine::limit::Verdict) -> &'static str {
    use stampede_engine::limit::Verdict;
    match v {
        Verdict::ServerBound => "the server set the pace; the figures describe it",
        Verdict::ClientBound => {
            "stampede had no time to spare; the figures describe it as much as the server"
        }
        Verdict::NetworkBound => "the network link was nearly full",
        Verdict::Undetermined => "neither side shows a limit",
    }
}

/// The summary; `verbose` gives the limit's reasons with their figures (the JSON's
/// `limit` has them all).
///
/// Long on purpose: it prints the summary top to bottom, block by block, in the order it
/// reads.
pub fn summary_with(r: &RunResult, verbose: bool) -> String {
    let mut o = String::new();
    let s = &r.settings;
    let mut parts = Vec::new();
    let count = |n: u64, one: &str| format!("{n} {one}{}", if n == 1 { "" } else { "s" });
    if r.sessions.is_some() {
        parts.push(s.shape.clone());
        parts.push(count(s.threads, "thread"));
    } else {
        if s.shape != "closed" {
            parts.push(shape_shown(&s.shape));
        }
        parts.push(count(s.connections, "connection"));
        parts.push(count(s.threads, "thread"));
        parts.push(
            if s.keepalive {
                "keep-alive"
            } else {
                "new connection per request"
            }
            .into(),
        );
        let streams = match s.pipeline {
            1 => "1 stream per connection".to_string(),
            n => format!("{n} streams per connection"),
        };
        if s.http3 {
            parts.push(format!("HTTP/3, {streams}"));
        } else if s.http2 {
            parts.push(format!("HTTP/2, {streams}"));
        } else if s.pipeline > 1 {
            parts.push(format!("pipeline {}", s.pipeline));
        }
    }
    match (s.requests, s.duration_s) {
        (Some(n), _) => parts.push(format!("{} requests", thousands(n))),
        (None, Some(d)) => parts.push(format!("{d:.0}s")),
        _ => {}
    }
    let _ = writeln!(o, "{} {} — {}", s.method, s.url, parts.join(", "));
    if r.interrupted {
        let _ = writeln!(o, "{}", interrupted_line(r));
    }
    let q = &r.requests;
    let abandoned = match q.abandoned {
        0 => String::new(),
        n => format!(
            "; {} in flight at the end (abandoned, not failed)",
            thousands(n)
        ),
    };
    let _ = writeln!(
        o,
        "  requests    {} completed in {} = {} req/s; {} failed{abandoned}",
        thousands(q.completed),
        human_us(r.duration_s * 1e6),
        thousands(r.throughput_rps.round() as u64),
        thousands(q.failed),
    );
    let l = &r.latency;
    let p = |x: f64| human_us(l.at(x).unwrap_or(0) as f64);
    let _ = writeln!(
        o,
        "  latency     p50 {}  p90 {}  p99 {}  p99.9 {}  max {}  (mean {} ± {})",
        p(50.0),
        p(90.0),
        p(99.0),
        p(99.9),
        human_us(l.max_us as f64),
        human_us(l.mean_us),
        human_us(l.stdev_us)
    );
    if let Some(op) = &r.open {
        let lag = &op.send_lag;
        let per_s = |v: f64| thousands(v.round() as u64);
        let target = op
            .target_rate
            .map(|t| format!("target {}/s, ", per_s(t)))
            .unwrap_or_default();
        let censored = match op.censored {
            0 => String::new(),
            n => format!(
                " (in the latency as censored: from their intended start to the end, {} of {})",
                thousands(n),
                thousands(l.count)
            ),
        };
        let _ = writeln!(
            o,
            "  schedule    {target}achieved {}/s; send lag p50 {} p99 {} max {}; {} never sent{censored}",
            per_s(op.achieved_rate),
            human_us(lag.at(50.0).unwrap_or(0) as f64),
            human_us(lag.at(99.0).unwrap_or(0) as f64),
            human_us(lag.max_us as f64),
            thousands(op.never_sent)
        );
        let u = &r.latency_uncorrected;
        let _ = writeln!(
            o,
            "  uncorrected p50 {}  p90 {}  p99 {}  max {}  (latency from the actual send)",
            human_us(u.at(50.0).unwrap_or(0) as f64),
            human_us(u.at(90.0).unwrap_or(0) as f64),
            human_us(u.at(99.0).unwrap_or(0) as f64),
            human_us(u.max_us as f64)
        );
    }
    if let Some(st) = &r.protocols.stream {
        stream_lines(&mut o, st, r.duration_s);
    }
    if let Some(s) = &r.sessions {
        let _ = writeln!(
            o,
            "  sessions    {} started, {} completed ({}/s), {} failed ({}/s); at most {} at once; lifetime p50 {} p99 {}",
            thousands(s.started),
            thousands(s.completed),
            per_second(s.completed, r.duration_s),
            thousands(s.failed),
            per_second(s.failed, r.duration_s),
            s.max_concurrent,
            human_us(s.lifetime.at(50.0).unwrap_or(0) as f64),
            human_us(s.lifetime.at(99.0).unwrap_or(0) as f64)
        );
    }
    let statuses: Vec<String> = r
        .statuses
        .iter()
        .map(|(c, n)| format!("{c} × {}", thousands(*n)))
        .collect();
    let _ = writeln!(
        o,
        "  statuses    {}",
        if statuses.is_empty() {
            "none".to_string()
        } else {
            statuses.join(", ")
        }
    );
    if let Some(g) = &r.protocols.grpc {
        let codes: Vec<String> = (g.iter())
            .map(|(c, n)| format!("{c} × {}", thousands(*n)))
            .collect();
        let _ = writeln!(o, "  grpc        {}", codes.join(", "));
        // The messages failing calls came with, the most frequent few.
        for m in r.protocols.grpc_messages.iter().take(5) {
            let _ = writeln!(
                o,
                "              {} {:?} × {}",
                m.status,
                m.message,
                thousands(m.count)
            );
        }
    }
    let errors: Vec<String> = r
        .errors
        .iter()
        .map(|(k, n)| format!("{k} × {}", thousands(*n)))
        .collect();
    let _ = writeln!(
        o,
        "  errors      {}",
        if errors.is_empty() {
            "none".to_string()
        } else {
            errors.join(", ")
        }
    );
    targets_block(&mut o, &r.targets);
    if q.length_mismatch > 0 {
        let _ = writeln!(
            o,
            "  length      {} responses differ in body length from the first",
            thousands(q.length_mismatch)
        );
    }
    let t = r.duration_s.max(f64::MIN_POSITIVE);
    let _ = writeln!(
        o,
        "  bytes       {} read ({}/s), {} written; {} opened",
        human_bytes(r.bytes.read as f64),
        human_bytes(r.bytes.read as f64 / t),
        human_bytes(r.bytes.written as f64),
        match r.connections_opened {
            1 => "1 connection".to_string(),
            n => format!("{} connections", thousands(n)),
        }
    );
    if s.redirects > 0 {
        let hops = &r.histograms.redirect.0;
        let at = |q: f64| human_us(hops.value_at_quantile(q) as f64);
        let kept: u64 = (r.statuses.range(300..400)).map(|(_, n)| n).sum();
        let _ = writeln!(
            o,
            "  redirects   {} followed (at most {} per request), each p50 {} p99 {} max {}; {} answers were 3xx (not followed)",
            thousands(hops.len()),
            s.redirects,
            at(0.5),
            at(0.99),
            human_us(hops.max() as f64),
            thousands(kept)
        );
    }
    if let Some(tls) = &r.protocols.tls {
        let _ = writeln!(o, "  tls         {}", crate::tls_line(tls));
    }
    if let Some(q) = &r.protocols.quic {
        let _ = writeln!(o, "  quic        {}", crate::quic_line(q));
    }
    if let Some(u) = r
        .protocols
        .websocket
        .as_ref()
        .and_then(|w| w.upgrade.as_ref())
    {
        let _ = writeln!(o, "  websocket   {}", crate::ws_upgrade_line(u));
    }
    if let Some(n) = r
        .protocols
        .websocket
        .as_ref()
        .map(|w| w.unmatched)
        .filter(|&n| n > 0)
    {
        let _ = writeln!(
            o,
            "              {} messages read were no answer (not holding what was expected)",
            thousands(n)
        );
    }
    if let Some(m) = &r.server {
        let text = crate::server::lines(m, "              ");
        let _ = write!(o, "  server{}", &text[8..]);
    }
    if let Some(l) = &r.limit {
        let _ = writeln!(
            o,
            "  limit       {}: {}",
            l.verdict.name(),
            limit_gist(l.verdict)
        );
        if verbose {
            let _ = writeln!(o, "              {}", l.reason);
        }
    }
    if verbose && !r.origin.io.is_empty() {
        let io = r.origin.io.replace(',', " and ");
        let _ = match &r.origin.io_note {
            Some(why) => writeln!(o, "  io          {io} ({why})"),
            None => writeln!(o, "  io          {io}"),
        };
    }
    o
}

/// The figures of a run that timed streams: events, then the first byte, the first
/// event and the gaps between events, from the intended start (the uncorrected p99
/// beside them).
fn stream_lines(o: &mut String, st: &stampede_engine::StreamStats, secs: f64) {
    let at = |l: &stampede_engine::LatencyStats, q: f64| human_us(l.at(q).unwrap_or(0) as f64);
    let per = &st.events_per_response;
    let done = match st.mode {
        stampede_engine::StreamMode::Sse | stampede_engine::StreamMode::Openai => {
            format!(", {} streams ended with [DONE]", thousands(st.done))
        }
        stampede_engine::StreamMode::Chunks
        | stampede_engine::StreamMode::Grpc
        | stampede_engine::StreamMode::Messages => String::new(),
    };
    let openai = st.mode == stampede_engine::StreamMode::Openai;
    // gRPC and WebSocket streams carry messages.
    let grpc = matches!(
        st.mode,
        stampede_engine::StreamMode::Grpc | stampede_engine::StreamMode::Messages
    );
    let rate = if secs > 0.0 {
        format!(" = {:.1}/s", st.events as f64 / secs)
    } else {
        String::new()
    };
    // Streams held to the run's end (a push stream's) completed none.
    let per = if per.count > 0 {
        format!(
            "; per response p50 {} max {}",
            per.at(50.0).unwrap_or(0),
            per.max_us
        )
    } else {
        "; none ended within the run".to_string()
    };
    let _ = writeln!(
        o,
        "  stream      {}: {} {}{rate}{done}{per}",
        st.mode.name(),
        thousands(st.events),
        if grpc { "messages" } else { "events" },
    );
    let first_event = match (openai, grpc) {
        (true, _) => "ttft       ",
        (_, true) => "first msg  ",
        _ => "first event",
    };
    let spread = |l: &stampede_engine::LatencyStats| {
        format!(
            "p50 {}  p90 {}  p99 {}  max {}",
            at(l, 50.0),
            at(l, 90.0),
            at(l, 99.0),
            human_us(l.max_us as f64)
        )
    };
    for (name, c, u) in [
        ("first byte ", &st.first_byte, &st.first_byte_uncorrected),
        (first_event, &st.first_event, &st.first_event_uncorrected),
    ] {
        let _ = writeln!(
            o,
            "  {name} {}  (from the send: p99 {})",
            spread(c),
            at(u, 99.0)
        );
    }
    let g = &st.gap;
    let _ = writeln!(
        o,
        "  {}   p50 {}  p90 {}  p99 {}  p99.9 {}  max {}",
        match (openai, grpc) {
            (true, _) => "itl      ",
            (_, true) => "msg gap  ",
            _ => "event gap",
        },
        at(g, 50.0),
        at(g, 90.0),
        at(g, 99.0),
        at(g, 99.9),
        human_us(g.max_us as f64)
    );
    if let Some(d) = &st.delivery {
        let l = &d.latency;
        let early = if d.early > 0 {
            format!("; {} stamped after they came", thousands(d.early))
        } else {
            String::new()
        };
        let _ = writeln!(
            o,
            "  delivery    {}  (from when due, {} stamped; from the send: p99 {}{early})",
            spread(l),
            thousands(d.stamped),
            at(&d.latency_uncorrected, 99.0)
        );
    }
    if let Some(t) = &st.tokens {
        let _ = writeln!(
            o,
            "  tpot        {}  (per output token after the first)",
            spread(&t.tpot)
        );
        let good = match (t.good, t.goodput_rps) {
            (Some(g), Some(rps)) => {
                format!(
                    "; {} met the service levels = {rps:.2} req/s goodput",
                    thousands(g)
                )
            }
            _ => String::new(),
        };
        let _ = writeln!(
            o,
            "  tokens      {} completion tokens = {:.1} tokens/s; per response p50 {} max {}{good}",
            thousands(t.total),
            t.per_second,
            t.per_response.at(50.0).unwrap_or(0),
            t.per_response.max_us
        );
        if t.usage_short > 0 {
            let _ = writeln!(
                o,
                "  ! usage     {} completions' usage counted fewer tokens than their text events",
                thousands(t.usage_short)
            );
        }
    }
}

/// Targets the summary lists; the rest are in the JSON, HTML and CSV outputs.
pub const SUMMARY_TARGETS: usize = 20;

/// A run of several requests: a line for each (its name cut to 40 characters) with its
/// counts, percentiles and statuses.
fn targets_block(o: &mut String, targets: &[stampede_engine::TargetStats]) {
    let name = |t: &stampede_engine::TargetStats| -> String {
        if t.name.chars().count() > 40 {
            t.name.chars().take(39).chain(['…']).collect()
        } else {
            t.name.clone()
        }
    };
    let width = targets
        .iter()
        .take(SUMMARY_TARGETS)
        .map(|t| name(t).chars().count())
        .max()
        .unwrap_or(0);
    for (i, t) in targets.iter().take(SUMMARY_TARGETS).enumerate() {
        let l = &t.latency;
        let p = |x: f64| human_us(l.at(x).unwrap_or(0) as f64);
        let mut codes: Vec<String> = t
            .statuses
            .iter()
            .map(|(c, n)| format!("{c} × {}", thousands(*n)))
            .collect();
        codes.extend(
            t.errors
                .iter()
                .map(|(k, n)| format!("{k} × {}", thousands(*n))),
        );
        let _ = writeln!(
            o,
            "  {}{:<width$}  {} answered, {} failed  p50 {}  p99 {}  max {}  {}",
            if i == 0 {
                "by request  "
            } else {
                "            "
            },
            name(t),
            thousands(t.completed),
            thousands(t.failed),
            p(50.0),
            p(99.0),
            human_us(l.max_us as f64),
            codes.join(", ")
        );
        // Streamed answers (a chat's turn): their time to first token.
        if let Some(f) = &t.first_event {
            let q = |x: f64| human_us(f.at(x).unwrap_or(0) as f64);
            let _ = writeln!(
                o,
                "              {:<width$}  ttft p50 {}  p99 {}  max {}",
                "",
                q(50.0),
                q(99.0),
                human_us(f.max_us as f64)
            );
        }
        // A journey's step: what failed its checks and what its captures missed.
        let failed = (t.checks_failed.iter())
            .map(|(k, n)| format!("{k} × {}", thousands(*n)))
            .chain(
                (t.captures_missed.iter()).map(|(k, n)| format!("capture {k} × {}", thousands(*n))),
            )
            .collect::<Vec<_>>();
        if !failed.is_empty() {
            let _ = writeln!(
                o,
                "              {:<width$}  failed: {}",
                "",
                failed.join(", ")
            );
        }
    }
    if targets.len() > SUMMARY_TARGETS {
        let _ = writeln!(
            o,
            "              … and {} more requests (each in --json, --html and --targets-csv)",
            targets.len() - SUMMARY_TARGETS
        );
    }
}

/// `n` over `secs` as a rate: tenths below 100 a second, whole ones above.
fn per_second(n: u64, secs: f64) -> String {
    let rate = n as f64 / secs.max(1e-9);
    if rate < 100.0 {
        format!("{rate:.1}")
    } else {
        thousands(rate.round() as u64)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn whole_rates_get_separators() {
        assert_eq!(super::shape_shown("rate 50000/s"), "rate 50,000/s");
        assert_eq!(
            super::shape_shown("rate 1500/s, Poisson arrivals"),
            "rate 1,500/s, Poisson arrivals"
        );
        assert_eq!(super::shape_shown("rate 0.5/s"), "rate 0.5/s");
        assert_eq!(
            super::shape_shown("users rampUsers(10)"),
            "users rampUsers(10)"
        );
    }
}
