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
//! let request = RequestBuilder::native(&target, "GET", true).build();
//! let mut spec = LoadSpec::new(target, request);
//! spec.connections = 64;
//! spec.threads = 2;
//! spec.requests = Some(100_000);
//! spec.validate().unwrap();
//! let out = run(&spec, Arc::new(Control::default())).unwrap();
//! println!("{:.0} req/s, p99 {} µs", out.result.throughput_rps,
//!          out.result.latency.at(99.0).unwrap());
//! ```

pub mod error;
pub mod http1;
pub mod limits;
pub mod recorder;
pub mod request;
pub mod result;
pub mod schedule;
pub mod spec;
pub mod target;
mod worker;

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub use error::{ErrorKind, RunError, SpecError};
pub use recorder::RequestRecord;
pub use request::{Request, RequestBuilder, Version};
pub use result::{Hist, LatencyStats, RunResult};
pub use schedule::{Budget, Closed, Next, Schedule};
pub use spec::LoadSpec;
pub use target::{Address, Target};
pub use worker::Control;

use recorder::Recorder;
use result::{Bytes, Counts, Interval, RunSettings, SCHEMA};
use worker::{Shared, Worker};

/// What [`run`] returns: the result, and per-request records if the spec asked for them.
#[derive(Debug)]
pub struct Run {
    /// The measurements.
    pub result: RunResult,
    /// One record per completed request, when `spec.record_requests` was set.
    pub requests: Option<Vec<RequestRecord>>,
}

/// Runs a closed-model load test described by `spec` (call [`LoadSpec::validate`] first).
pub fn run(spec: &LoadSpec, control: Arc<Control>) -> Result<Run, RunError> {
    let needed = limits::fds_needed(spec.connections, spec.threads);
    let limit = limits::raise_nofile(needed);
    if limit < needed {
        return Err(RunError::FdLimit { needed, limit });
    }
    let budget = Arc::new(Budget::new(spec.requests));
    let shared = Shared {
        control,
        doc_len: AtomicU64::new(u64::MAX),
        server: Mutex::new(None),
    };
    let start = Instant::now();
    let start_unix_us = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0);
    let end = spec.duration.map(|d| start + d);
    let threads = spec.threads.max(1);
    let outputs = std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(threads);
        for i in 0..threads {
            let conns = spec.connections / threads + usize::from(i < spec.connections % threads);
            let schedule = Box::new(Closed::new(budget.clone(), end));
            let worker = Worker::new(spec, &shared, schedule, conns, start, start_unix_us)
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
    let mut rec: Option<Recorder> = None;
    for o in outputs {
        abandoned += o.abandoned;
        match &mut rec {
            None => rec = Some(o.recorder),
            Some(r) => r.merge(o.recorder),
        }
    }
    let rec = rec.expect("at least one worker");
    let doc_len = shared.doc_len.load(std::sync::atomic::Ordering::Relaxed);
    let server = shared
        .server
        .into_inner()
        .unwrap_or_else(|e| e.into_inner());
    Ok(build_result(
        spec,
        rec,
        abandoned,
        elapsed,
        start_unix_us,
        server,
        (doc_len != u64::MAX).then_some(doc_len),
    ))
}

fn build_result(
    spec: &LoadSpec,
    rec: Recorder,
    abandoned: u64,
    elapsed: Duration,
    start_unix_us: u64,
    server: Option<String>,
    doc_len: Option<u64>,
) -> Run {
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
    let intervals = merge_intervals(rec.intervals);
    let result = RunResult {
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
        },
        connections_opened: rec.connections_opened,
        server_software: server,
        document_length: doc_len,
        latency: rec.hist.latency.stats(),
        latency_uncorrected: rec.hist.uncorrected.stats(),
        histograms: rec.hist,
        intervals,
    };
    Run {
        result,
        requests: rec.requests,
    }
}

/// Combines the workers' seconds: counters add, histograms are decoded and added one
/// second at a time, summarised, and stored encoded.
fn merge_intervals(mut raw: Vec<recorder::RawInterval>) -> Vec<Interval> {
    use hdrhistogram::serialization::Deserializer;
    raw.sort_by_key(|r| r.t);
    let mut out: Vec<Interval> = Vec::new();
    let mut hist = result::new_histogram();
    let mut de = Deserializer::new();
    let mut i = 0;
    while i < raw.len() {
        let t = raw[i].t;
        let (mut completed, mut failed, mut bytes_read) = (0, 0, 0);
        hist.reset();
        while i < raw.len() && raw[i].t == t {
            let r = &raw[i];
            completed += r.completed;
            failed += r.failed;
            bytes_read += r.bytes_read;
            let h: hdrhistogram::Histogram<u64> = de
                .deserialize(&mut &r.hist[..])
                .expect("a histogram this process serialised");
            hist.add(&h).expect("same bounds");
            i += 1;
        }
        let h = Hist(hist.clone());
        out.push(Interval {
            t,
            completed,
            failed,
            bytes_read,
            latency: LatencyStats::of(&hist),
            histogram: h.to_base64(),
        });
    }
    out
}

/// Opens one connection to the target and closes it: tells "unreachable" apart from
/// "slow" before a run starts.
pub fn probe(target: &Target, timeout: Duration) -> std::io::Result<()> {
    match &target.address {
        Address::Tcp(addrs) => {
            let mut last = None;
            for a in addrs {
                match std::net::TcpStream::connect_timeout(a, timeout) {
                    Ok(_) => return Ok(()),
                    Err(e) => last = Some(e),
                }
            }
            Err(last.unwrap_or_else(|| std::io::Error::other("no address")))
        }
        Address::Unix(p) => std::os::unix::net::UnixStream::connect(p).map(|_| ()),
    }
}
