//! The run's result, built from the workers' merged recorders: counts, latency, the
//! open model's lateness, sessions, and the verdict on which side set the pace.

use std::collections::BTreeMap;
use std::time::Duration;

use super::worker::Shared;
use super::Run;
use crate::measure::recorder::{merge_intervals, Recorder};
use crate::measure::result::{
    Bytes, Counts, OpenStats, RunSettings, SessionStats, StreamStats, SCHEMA,
};
use crate::spec::config::Config;
use crate::{Address, ErrorKind, Origin, RunResult, Shape, TlsStats};

/// Long on purpose: it fills the result's fields one by one from the merged recorders.
pub(super) fn build_result(
    cfg: &Config,
    mut rec: Recorder,
    (abandoned, never_sent): (u64, u64),
    elapsed: Duration,
    start_unix_us: u64,
    shared: Shared,
) -> Run {
    let doc_len = shared.doc_len.load(std::sync::atomic::Ordering::Relaxed);
    let doc_len = (doc_len != u64::MAX).then_some(doc_len);
    let server = shared
        .server
        .into_inner()
        .unwrap_or_else(|e| e.into_inner());
    let tls = shared.tls.into_inner().unwrap_or_else(|e| e.into_inner());
    let statuses: BTreeMap<u16, u64> = rec
        .statuses
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > 0)
        .map(|(s, &n)| (s as u16, n))
        .collect();
    let errors: BTreeMap<String, u64> = ErrorKind::ALL
        .iter()
        .filter(|k| rec.errors[k.index()] > 0)
        .map(|k| (k.name().to_string(), rec.errors[k.index()]))
        .collect();
    let failed: u64 = rec.errors.iter().sum();
    let secs = elapsed.as_secs_f64();
    let intervals = merge_intervals(std::mem::take(&mut rec.intervals));
    let open = open_stats(cfg, &rec, never_sent, secs);
    let starved = rec.tally.starved;
    let loads = shared.load.loads();
    let sessions = cfg.arrivals.shape.has_sessions().then(|| SessionStats {
        started: rec.sessions.started,
        completed: rec.sessions.completed,
        failed: rec.sessions.failed,
        max_concurrent: rec.sessions.max_concurrent,
        lifetime: rec.hist.session.stats(),
        calls: cfg.arrivals.session.calls,
        burst: cfg.arrivals.session.burst,
    });
    let tls = cfg.net.target.tls.then(|| {
        let s = tls.unwrap_or_default();
        TlsStats {
            version: s.version,
            cipher: s.cipher,
            alpn: s.alpn,
            handshakes: rec.hist.tls_handshake.0.len(),
            resumed: rec.tls.resumed,
            http1_fallback: rec.tls.h1_fallback,
            handshake: rec.hist.tls_handshake.stats(),
        }
    });
    let quic = cfg.protocol.http3().map(|_| rec.quic.clone());
    let stream = cfg.watch.stream.map(|mode| {
        let h = rec.hist.stream.clone().unwrap_or_default();
        let good = cfg.watch.slo.map(|_| rec.streams.good);
        let counts = (
            rec.streams.events,
            rec.streams.done,
            rec.streams.tokens,
            good,
            rec.streams.usage_short,
        );
        let mut st = StreamStats::of(mode, counts, secs, &h);
        if let Some(d) = &mut st.delivery {
            d.early = rec.streams.early;
        }
        st
    });
    let named = cfg
        .sends
        .hooks
        .as_ref()
        .map(|h| h.0.targets())
        .unwrap_or_default();
    let targets = rec.targets.stats(|i| {
        crate::measure::targets::target_name(
            i,
            &named,
            &cfg.sends.variety,
            &cfg.sends.script,
            &cfg.sends.request,
        )
    });
    let ws_upgrade = crate::result::WsStats::upgrade_of(&rec.hist);
    let mut result = RunResult {
        schema: SCHEMA.to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        started_unix_ms: start_unix_us / 1000,
        duration_s: secs,
        settings: RunSettings {
            url: cfg.net.target.url.clone(),
            address: cfg.net.target.describe_address(),
            method: cfg.sends.request.method.clone(),
            request_bytes: cfg.sends.request.bytes.len() as u64,
            connections: cfg.size.connections as u64,
            threads: cfg.size.threads as u64,
            keepalive: cfg.size.keepalive,
            pipeline: cfg.size.pipeline as u64,
            requests: cfg.ends.requests,
            duration_s: cfg.ends.duration.map(|d| d.as_secs_f64()),
            timeout_s: cfg.ends.timeout.map(|d| d.as_secs_f64()),
            shape: cfg.arrivals.shape.describe(&cfg.arrivals.session),
            http2: cfg.protocol.over_http2().is_some(),
            http3: cfg.protocol.http3().is_some(),
            redirects: cfg.sends.redirects,
        },
        requests: Counts {
            started: rec.tally.started,
            completed: rec.tally.completed,
            failed,
            abandoned,
            keepalive: rec.tally.keepalive,
            length_mismatch: rec.tally.length_mismatch,
        },
        throughput_rps: if secs > 0.0 {
            rec.tally.completed as f64 / secs
        } else {
            0.0
        },
        statuses,
        errors,
        bytes: Bytes {
            read: rec.tally.bytes_read,
            body: rec.tally.bytes_body,
            written: rec.tally.bytes_written,
            headers_compressed: rec.headers.compressed,
            headers_decoded: rec.headers.decoded,
        },
        connections_opened: rec.tally.connections_opened,
        server_software: server,
        document_length: doc_len,
        latency: rec.hist.latency.stats(),
        latency_uncorrected: rec.hist.uncorrected.stats(),
        histograms: rec.hist,
        intervals,
        open,
        sessions,
        origin: Origin::default(),
        limit: None,
        capacity: None,
        interrupted: false,
        fleet: None,
        targets,
        server: None,
        protocols: crate::result::ProtocolFigures {
            tls,
            stream,
            quic,
            grpc: (cfg.watch.stream == Some(crate::StreamMode::Grpc)).then(|| {
                (rec.grpc.statuses.iter().enumerate())
                    .filter(|(_, n)| **n > 0)
                    .map(|(code, n)| (stampede_wire::grpc::code_name(code as u8).to_string(), *n))
                    .collect()
            }),
            grpc_messages: {
                let mut m = rec.grpc.messages.clone();
                crate::result::sort_grpc_messages(&mut m);
                m
            },
            websocket: cfg
                .protocol
                .websocket()
                .is_some()
                .then(|| crate::result::WsStats {
                    upgrade: ws_upgrade,
                    ..rec.ws.clone()
                }),
        },
    };
    result.limit = Some(limit_of(cfg, &result, loads, starved));
    Run {
        result,
        requests: rec.records.kept,
        requests_dropped: rec.records.dropped,
        raw_lost: rec.raw_lost,
    }
}

/// The limit verdict of a finished run from its workers' CPU accounting.
fn limit_of(
    cfg: &Config,
    r: &RunResult,
    client_threads: Vec<crate::limit::ThreadLoad>,
    starved: u64,
) -> crate::limit::Limit {
    let secs = r.duration_s;
    let network = match &cfg.net.target.address {
        Address::Tcp(addrs) if secs > 0.0 => addrs.first().and_then(|&a| {
            let (interface, speed_mbps) = crate::limit::link_to(a)?;
            let busier = r.bytes.read.max(r.bytes.written) as f64;
            Some(crate::limit::Network {
                interface,
                speed_mbps,
                used_mbps: busier * 8.0 / secs / 1e6,
            })
        }),
        _ => None,
    };
    let mut l = crate::limit::Limit {
        verdict: crate::limit::Verdict::Undetermined,
        reason: String::new(),
        client_threads,
        client_cores: crate::limit::cores_allowed(),
        offered_rps: r.open.as_ref().and_then(|o| o.target_rate),
        achieved_rps: r.throughput_rps,
        pool_saturation: r
            .open
            .as_ref()
            .map(|_| starved as f64 / r.requests.started.max(1) as f64),
        network,
        target: None,
        server_queue: None,
    };
    l.judge(r.limit_context());
    l
}

/// Whether an open-model run offered the load it was asked to, and if not, why.
fn open_stats(cfg: &Config, rec: &Recorder, never_sent: u64, secs: f64) -> Option<OpenStats> {
    let (target, started) = match &cfg.arrivals.shape {
        Shape::Closed => return None,
        Shape::Rate { rate, .. } => (Some(*rate), rec.tally.started),
        Shape::Paced(_) => (None, rec.tally.started),
        Shape::Users(p) if p.is_closed() => (None, rec.sessions.started),
        Shape::Users(_) => (None, rec.sessions.started),
        Shape::Sessions { period, .. } => (
            match period {
                Some(crate::arrivals::Period::Deterministic(t)) if *t > 0.0 => Some(1.0 / t),
                Some(crate::arrivals::Period::Exponential(t)) if *t > 0.0 => Some(1.0 / t),
                _ => None,
            },
            rec.sessions.started,
        ),
    };
    let lag = rec.hist.send_lag.stats();
    let behind = OpenStats::fell_behind(&rec.hist.send_lag, started, never_sent, target);
    let cause = behind.then(|| {
        if cfg.arrivals.shape.has_sessions() {
            "the generator could not start sessions on time: its threads were busy (CPU) or out of sockets; raise --threads or lower the rate".to_string()
        } else if rec.tally.starved > 0 {
            format!(
                "all {} connections were busy when requests were due: the server answers more slowly than the rate asks, or there are too few connections (raise -c)",
                cfg.size.connections
            )
        } else if (cfg.size.threads as f64) < crate::verdict::limit::cores_allowed() {
            "the generator's threads could not keep up (CPU): raise --threads or lower the rate".to_string()
        } else {
            format!(
                "the generator's {} threads, one a core already, were not given the CPU on time: other work on the machine, or more than one machine can offer; lower the rate, quiet the machine, or split the run over machines (--segment)",
                cfg.size.threads
            )
        }
    });
    Some(OpenStats {
        target_rate: target,
        achieved_rate: if secs > 0.0 {
            started as f64 / secs
        } else {
            0.0
        },
        send_lag: lag,
        never_sent,
        censored: rec.tally.censored,
        behind,
        cause,
    })
}
