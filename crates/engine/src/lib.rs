//! stampede's load-generation engine, usable from Rust without the command line.
//!
//! Data goes one way: a validated [`LoadSpec`] goes in, a [`RunResult`] comes out.
//! [`run`] starts one worker thread per requested thread, each with its own event loop
//! and connections; every request records its latency into that worker's HdrHistograms,
//! merged by addition at the end, so memory does not grow with the number of requests.
//! Live counters and the stop switch are in [`Control`].
//!
//! ```no_run
//! use std::sync::Arc;
//! use stampede_engine::{run, Control, LoadSpec, RequestBuilder, Target};
//!
//! let target = Target::parse("http://127.0.0.1:8080/pong").unwrap();
//! let request = RequestBuilder::native(&target, "GET", true).build().unwrap();
//! let mut spec = LoadSpec::new(target, request);
//! spec.connections = 64;
//! spec.threads = 2;
//! spec.requests = Some(100_000);
//! spec.validate().unwrap();
//! let out = run(&spec, Arc::new(Control::default())).unwrap();
//! println!("{:.0} req/s, p99 {} µs", out.result.throughput_rps,
//!          out.result.latency.at(99.0).unwrap());
//! ```

pub mod arrivals;
pub mod assert;
pub mod capacity;
mod control;
pub mod error;
mod event;
pub mod h1;
pub mod h2;
pub mod hooks;
pub mod http1;
pub mod inject;
pub mod input;
mod io;
pub mod limit;
pub mod limits;
pub mod live;
pub mod math;
pub mod merge;
pub mod net;
pub mod portable;
pub mod proto;
pub mod recorder;
pub mod request;
pub mod result;
pub mod schedule;
mod second;
pub mod segment;
pub mod spec;
pub mod target;
mod worker;

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub use control::Control;
pub use error::{
    ErrorKind, HistError, RequestsError, RunError, SavedSpecError, SocketError, SpecError,
    SyntaxError, TranslateError,
};
pub use hooks::{Flow, Hooks, Reply, ThreadHooks, ThreadHooksSource};
pub use live::Live;
pub use recorder::RequestRecord;
pub use request::{AbRequest, Request, RequestBuilder, Version};
pub use result::{
    decode_checked, value_at_percentile, Hist, LatencyStats, Origin, RunResult, TlsStats,
};
pub use schedule::{Budget, Closed, Next, Schedule};
pub use segment::Segment;
pub use spec::{LoadSpec, Session, Shape, Step, Walk};
pub use target::{Address, Target};

use recorder::Recorder;
pub use result::Interval;
use result::{Bytes, Counts, OpenStats, RunSettings, SessionStats, SCHEMA};
use worker::{Shared, Worker};

/// What [`run`] returns: the result, and per-request records if the spec asked for them.
#[derive(Debug)]
pub struct Run {
    /// The measurements.
    pub result: RunResult,
    /// One record per request, answered or failed, when `spec.record_requests` was set.
    pub requests: Option<Vec<RequestRecord>>,
}

/// Runs the load test `spec` describes (call [`LoadSpec::validate`] first).
pub fn run(spec: &LoadSpec, control: Arc<Control>) -> Result<Run, RunError> {
    let needed = limits::fds_needed(spec.connections, spec.threads);
    let limit = limits::raise_nofile(needed);
    if limit < needed {
        return Err(RunError::FdLimit { needed, limit });
    }
    let seg = spec.segment;
    let budget = Arc::new(Budget::new(spec.requests.map(|n| seg.share(n))));
    let seg_connections = seg.share(spec.connections as u64) as usize;
    let shared = Shared {
        control,
        doc_len: AtomicU64::new(u64::MAX),
        calls: AtomicU64::new(0),
        server: Mutex::new(None),
        tls: Mutex::new(None),
        load: limit::Sampler::default(),
    };
    let Some(Zero {
        start,
        start_unix_us,
        late,
    }) = schedule_zero(spec.start_at, &shared.control)
    else {
        // Stopped while waiting for the shared start: nothing ran.
        return Err(RunError::Stopped);
    };
    let end = spec.duration.map(|d| start + d);
    let threads = spec.threads.max(1);
    let profile = match &spec.shape {
        Shape::Users(p) => Some(Arc::new(p.clone())),
        _ => None,
    };
    let outputs = std::thread::scope(|scope| {
        let sampler = std::thread::Builder::new()
            .name("stampede-sampler".into())
            .spawn_scoped(scope, || shared.load.run())
            .map_err(RunError::Thread)?;
        // Stops the sampler however this closure ends, so that the scope can end.
        let _stop = limit::StopOnDrop::new(&shared.load, sampler.thread().clone());
        let mut handles = Vec::with_capacity(threads);
        for i in 0..threads {
            let conns = seg_connections / threads + usize::from(i < seg_connections % threads);
            let schedule = schedule_for(
                spec,
                (i, threads),
                conns,
                (start, end),
                &budget,
                profile.as_ref(),
            );
            let lane = spec.segment.lane(i, threads);
            let worker = Worker::new(
                spec,
                &shared,
                schedule,
                i,
                lane,
                conns,
                start,
                start_unix_us,
            )
            .map_err(RunError::Poll)?;
            let h = std::thread::Builder::new()
                .name(format!("stampede-worker-{i}"))
                .spawn_scoped(scope, move || worker.run())
                .map_err(RunError::Thread)?;
            handles.push(h);
        }
        let mut outs = Vec::with_capacity(threads);
        for h in handles {
            match h.join() {
                Ok(Ok(o)) => outs.push(o),
                Ok(Err(e)) => return Err(RunError::Poll(e)),
                Err(_) => return Err(RunError::WorkerPanicked),
            }
        }
        Ok(outs)
    })?;
    let mut elapsed = start.elapsed();
    if let Some(d) = spec.duration {
        // A timed run lasts its duration; the loop exits a hair after the deadline.
        if elapsed > d && spec.requests.is_none() {
            elapsed = d;
        }
    }
    let mut abandoned = 0;
    let mut never_sent = 0;
    let mut rec: Option<Recorder> = None;
    for o in outputs {
        abandoned += o.abandoned;
        never_sent += o.never_sent;
        match &mut rec {
            None => rec = Some(o.recorder),
            Some(r) => r.merge(o.recorder),
        }
    }
    let rec = rec.expect("at least one worker");
    let mut result = build_result(
        spec,
        rec,
        (abandoned, never_sent),
        elapsed,
        start_unix_us,
        shared,
    );
    result.result.origin = Origin {
        host: host_name(),
        clock: "realtime".into(),
        segment: (!spec.segment.is_whole()).then(|| spec.segment.to_string()),
        shared_start: spec.start_at.is_some(),
        late_ms: late.as_secs_f64() * 1e3,
        parts: Vec::new(),
    };
    Ok(result)
}

/// The schedule's zero: now, or the shared `--start-at` instant.
struct Zero {
    start: Instant,
    start_unix_us: u64,
    /// How long after a shared start this process began.
    late: Duration,
}

/// Waits for a shared start in the future (in steps, so that a stop is seen), or
/// dates the schedule back to one in the past; `None` when stopped while waiting.
fn schedule_zero(at: Option<SystemTime>, control: &Control) -> Option<Zero> {
    let unix_us = |t: SystemTime| {
        t.duration_since(UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(0)
    };
    let now = Instant::now();
    let wall = SystemTime::now();
    let Some(at) = at else {
        return Some(Zero {
            start: now,
            start_unix_us: unix_us(wall),
            late: Duration::ZERO,
        });
    };
    match at.duration_since(wall) {
        Ok(wait) => {
            let zero = now + wait;
            loop {
                if control.stop.load(std::sync::atomic::Ordering::Relaxed) {
                    return None;
                }
                let left = zero.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                std::thread::sleep(left.min(Duration::from_millis(50)));
            }
            Some(Zero {
                start: zero,
                start_unix_us: unix_us(at),
                late: Instant::now() - zero,
            })
        }
        Err(e) => {
            let late = e.duration();
            Some(Zero {
                start: now.checked_sub(late).unwrap_or(now),
                start_unix_us: unix_us(at),
                late,
            })
        }
    }
}

/// This machine's host name (the kernel's, so that it is known without /proc, as in
/// a minimal container), or `unknown`.
fn host_name() -> String {
    // SAFETY: uname only writes into the struct it is given; zeroed is a valid value.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return "unknown".into();
    }
    // SAFETY: uname leaves `nodename` NUL-terminated within its length.
    let name = unsafe { std::ffi::CStr::from_ptr(u.nodename.as_ptr()) };
    match name.to_string_lossy().trim() {
        "" => "unknown".into(),
        h => h.to_string(),
    }
}

/// The schedule of worker `w` of `workers` for the spec's shape and segment. Arrival
/// sequences are global (one seed for every segment and thread) and split by stride
/// into lanes, so the run's arrivals depend neither on the thread count nor on how
/// many processes share it (see [`segment`]).
pub(crate) fn schedule_for<'a>(
    spec: &'a LoadSpec,
    (w, workers): (usize, usize),
    pool: usize,
    (start, end): (Instant, Option<Instant>),
    budget: &Arc<Budget>,
    profile: Option<&Arc<inject::Profile>>,
) -> Box<dyn Schedule + 'a> {
    use arrivals::{Fixed, Poisson, Stride};
    use schedule::{ClosedUsers, Open, Sequential};
    let (w, n) = spec.segment.lane(w, workers);
    let horizon = match spec.shape {
        // What one wake-up sends ahead takes at most a quarter of the worker's pool
        // (`pool` connections, each `pipeline` requests deep), so that responses read a
        // nap late and a slow moment of the server still find room.
        Shape::Rate { rate, .. } if rate > 0.0 => {
            let room = (pool * spec.pipeline.max(1)) as f64 * n as f64 / (4.0 * rate);
            spec.horizon.min(Duration::from_secs_f64(room.min(1.0)))
        }
        _ => spec.horizon,
    };
    match &spec.shape {
        Shape::Closed => Box::new(Closed::new(budget.clone(), end)),
        Shape::Rate {
            rate,
            poisson: false,
        } => Box::new(
            Open::new(
                start,
                end,
                Stride::new(Fixed::new(*rate), w, n),
                budget.clone(),
            )
            .with_horizon(horizon),
        ),
        // One Poisson process for the whole run, its arrivals dealt out by lane.
        Shape::Rate {
            rate,
            poisson: true,
        } => Box::new(
            Open::new(
                start,
                end,
                Stride::new(Poisson::new(*rate, spec.seed), w, n),
                budget.clone(),
            )
            .with_horizon(horizon),
        ),
        Shape::Users(p) if p.is_closed() => Box::new(ClosedUsers::new(
            start,
            profile.expect("profile").clone(),
            w,
            n,
        )),
        Shape::Users(_) => {
            let arr = profile.expect("profile").arrivals(spec.seed);
            Box::new(
                Open::new(start, end, Stride::new(arr, w, n), budget.clone()).with_horizon(horizon),
            )
        }
        Shape::Sessions {
            period: None,
            count,
        } => Box::new(Sequential::new(spec.segment.share(*count))),
        Shape::Sessions {
            period: Some(p),
            count,
        } => {
            let arr = p.arrivals(spec.seed).take(*count as usize);
            Box::new(
                Open::new(start, end, Stride::new(arr, w, n), budget.clone()).with_horizon(horizon),
            )
        }
    }
}

/// Long on purpose: it fills the result's fields one by one from the merged recorders.
fn build_result(
    spec: &LoadSpec,
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
    let open = open_stats(spec, &rec, never_sent, secs);
    let starved = rec.starved;
    let loads = shared.load.loads();
    let sessions = spec.shape.has_sessions().then(|| SessionStats {
        started: rec.sessions_started,
        completed: rec.sessions_completed,
        failed: rec.sessions_failed,
        max_concurrent: rec.max_concurrent,
        lifetime: rec.hist.session.stats(),
        calls: spec.session.calls,
        burst: spec.session.burst,
    });
    let tls = spec.target.tls.then(|| {
        let s = tls.unwrap_or_default();
        TlsStats {
            version: s.version,
            cipher: s.cipher,
            alpn: s.alpn,
            handshakes: rec.hist.tls_handshake.0.len(),
            resumed: rec.resumed,
            http1_fallback: rec.h1_fallback,
            handshake: rec.hist.tls_handshake.stats(),
        }
    });
    let mut result = RunResult {
        schema: SCHEMA.to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        started_unix_ms: start_unix_us / 1000,
        duration_s: secs,
        settings: RunSettings {
            url: spec.target.url.clone(),
            address: spec.target.describe_address(),
            method: spec.request.method.clone(),
            request_bytes: spec.request.bytes.len() as u64,
            connections: spec.connections as u64,
            threads: spec.threads as u64,
            keepalive: spec.keepalive,
            pipeline: spec.pipeline as u64,
            requests: spec.requests,
            duration_s: spec.duration.map(|d| d.as_secs_f64()),
            timeout_s: spec.timeout.map(|d| d.as_secs_f64()),
            shape: spec.shape.describe(&spec.session),
            http2: spec.http2,
            redirects: spec.redirects,
        },
        requests: Counts {
            started: rec.started,
            completed: rec.completed,
            failed,
            abandoned,
            keepalive: rec.keepalive,
            length_mismatch: rec.length_mismatch,
        },
        throughput_rps: if secs > 0.0 {
            rec.completed as f64 / secs
        } else {
            0.0
        },
        statuses,
        errors,
        bytes: Bytes {
            read: rec.bytes_read,
            body: rec.bytes_body,
            written: rec.bytes_written,
            headers_compressed: rec.headers_compressed,
            headers_decoded: rec.headers_decoded,
        },
        connections_opened: rec.connections_opened,
        server_software: server,
        document_length: doc_len,
        latency: rec.hist.latency.stats(),
        latency_uncorrected: rec.hist.uncorrected.stats(),
        histograms: rec.hist,
        intervals,
        open,
        sessions,
        tls,
        origin: Origin::default(),
        limit: None,
        capacity: None,
        interrupted: false,
    };
    result.limit = Some(limit_of(spec, &result, loads, starved));
    Run {
        result,
        requests: rec.requests,
    }
}

/// The limit verdict of a finished run from its workers' CPU accounting.
fn limit_of(
    spec: &LoadSpec,
    r: &RunResult,
    client_threads: Vec<limit::ThreadLoad>,
    starved: u64,
) -> limit::Limit {
    let secs = r.duration_s;
    let network = match &spec.target.address {
        Address::Tcp(addrs) if secs > 0.0 => addrs.first().and_then(|&a| {
            let (interface, speed_mbps) = limit::link_to(a)?;
            let busier = r.bytes.read.max(r.bytes.written) as f64;
            Some(limit::Network {
                interface,
                speed_mbps,
                used_mbps: busier * 8.0 / secs / 1e6,
            })
        }),
        _ => None,
    };
    let mut l = limit::Limit {
        verdict: limit::Verdict::Undetermined,
        reason: String::new(),
        client_threads,
        client_cores: limit::cores_allowed(),
        offered_rps: r.open.as_ref().and_then(|o| o.target_rate),
        achieved_rps: r.throughput_rps,
        pool_saturation: r
            .open
            .as_ref()
            .map(|_| starved as f64 / r.requests.started.max(1) as f64),
        network,
        target: None,
    };
    l.judge(r.limit_context());
    l
}

/// Whether an open-model run offered the load it was asked to, and if not, why.
fn open_stats(spec: &LoadSpec, rec: &Recorder, never_sent: u64, secs: f64) -> Option<OpenStats> {
    let (target, started) = match &spec.shape {
        Shape::Closed => return None,
        Shape::Rate { rate, .. } => (Some(*rate), rec.started),
        Shape::Users(p) if p.is_closed() => (None, rec.sessions_started),
        Shape::Users(_) => (None, rec.sessions_started),
        Shape::Sessions { period, .. } => (
            match period {
                Some(arrivals::Period::Deterministic(t)) if *t > 0.0 => Some(1.0 / t),
                Some(arrivals::Period::Exponential(t)) if *t > 0.0 => Some(1.0 / t),
                _ => None,
            },
            rec.sessions_started,
        ),
    };
    let lag = rec.hist.send_lag.stats();
    let p99 = lag.at(99.0).unwrap_or(0);
    // Behind: a p99 send lag over 5 ms, or more than 0.1 % of arrivals never sent.
    let behind = p99 > 5_000 || never_sent * 1000 > started + never_sent;
    let cause = behind.then(|| {
        if spec.shape.has_sessions() {
            "the generator could not start sessions on time: its threads were busy (CPU) or out of sockets; raise --threads or lower the rate".to_string()
        } else if rec.starved > 0 {
            format!(
                "all {} connections were busy when requests were due: the server answers more slowly than the rate asks, or there are too few connections (raise -c)",
                spec.connections
            )
        } else {
            "the generator's threads could not keep up (CPU): raise --threads or lower the rate".to_string()
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
        behind,
        cause,
    })
}

/// Combines the workers' seconds: counters add, histograms are decoded and added one
/// second at a time, summarised, and stored encoded.
pub(crate) fn merge_intervals(mut raw: Vec<recorder::RawInterval>) -> Vec<Interval> {
    use hdrhistogram::serialization::Deserializer;
    raw.sort_by_key(|r| r.t);
    let mut out: Vec<Interval> = Vec::new();
    let mut hist = result::new_histogram();
    let mut unc = result::new_histogram();
    let mut de = Deserializer::new();
    let mut i = 0;
    while i < raw.len() {
        let t = raw[i].t;
        let (mut completed, mut failed, mut bytes_read) = (0, 0, 0);
        let mut gauges = recorder::Gauges::default();
        hist.reset();
        unc.reset();
        while i < raw.len() && raw[i].t == t {
            let r = &raw[i];
            completed += r.completed;
            failed += r.failed;
            bytes_read += r.bytes_read;
            gauges.connections += r.gauges.connections;
            gauges.in_flight += r.gauges.in_flight;
            gauges.users += r.gauges.users;
            let h: hdrhistogram::Histogram<u64> = de
                .deserialize(&mut &r.hist[..])
                .expect("a histogram this process serialised");
            hist.add(&h).expect("same bounds");
            let u: hdrhistogram::Histogram<u64> = de
                .deserialize(&mut &r.hist_uncorrected[..])
                .expect("a histogram this process serialised");
            unc.add(&u).expect("same bounds");
            i += 1;
        }
        out.push(Interval {
            t,
            completed,
            failed,
            bytes_read,
            latency: LatencyStats::of(&hist),
            histogram: Hist(hist.clone()).to_base64(),
            histogram_uncorrected: Hist(unc.clone()).to_base64(),
            connections: gauges.connections,
            in_flight: gauges.in_flight,
            users: gauges.users,
        });
    }
    out
}

/// Sends HTTP/2's connection preface and our SETTINGS; the server must answer with its
/// own SETTINGS, which the connection's state machine checks (an HTTP/1.x answer means
/// it does not speak h2c).
fn probe_h2c(mut s: std::net::TcpStream, timeout: Duration) -> std::io::Result<()> {
    use std::io::{Read, Write};
    s.set_read_timeout(Some(timeout))?;
    let mut conn = h2::H2Conn::new();
    s.write_all(&conn.out)?;
    let (mut buf, mut events) = ([0u8; 512], Vec::new());
    while !conn.settled() {
        let n = s.read(&mut buf).map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("no answer to HTTP/2's connection preface: {e}"),
            )
        })?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the server closed the connection after HTTP/2's connection preface",
            ));
        }
        conn.feed(&buf[..n], &[], &mut events)
            .map_err(|e| match e {
                h2::H2Error::Http1Answer => std::io::Error::other(format!(
                    "{e}; drop --http2, or use https:// so that ALPN can choose"
                )),
                h2::H2Error::Protocol(_) => std::io::Error::other(e.to_string()),
            })?;
    }
    Ok(())
}

/// Opens one connection as the spec's connections will (from its local address,
/// through its proxy, with a TLS handshake for https) and closes it: tells
/// "unreachable", "slow", "the proxy refused" and "refuses our TLS" apart before a run.
pub fn probe(spec: &LoadSpec) -> std::io::Result<()> {
    let (target, tls, timeout) = (&spec.target, spec.tls.as_ref(), spec.connect_timeout);
    let addrs = match (&spec.proxy, &target.address) {
        (Some(p), Address::Tcp(_)) => &p.address,
        (_, Address::Tcp(a)) => a,
        (_, Address::Unix(p)) => {
            return std::os::unix::net::UnixStream::connect(p).map(|_| ());
        }
    };
    let mut last = None;
    for a in addrs {
        match net::connect_blocking(*a, &spec.socket, timeout) {
            Ok(mut s) => {
                s.set_read_timeout(Some(timeout))?;
                s.set_write_timeout(Some(timeout))?;
                if let (Some(p), true) = (&spec.proxy, target.tls) {
                    net::tunnel_blocking(&mut s, p, target)?;
                }
                if spec.http2 && tls.is_none() {
                    return probe_h2c(s, timeout);
                }
                if let Some(cfg) = tls {
                    let mut t = stampede_tls::TlsStream::client(s, cfg.clone(), &target.host)?;
                    t.handshake()?;
                    t.close_notify();
                }
                return Ok(());
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no address")))
}
