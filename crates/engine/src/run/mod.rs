//! The run itself: [`run`] checks the process's limits, builds each worker's
//! schedule, starts one worker thread per requested thread at a shared instant, and
//! merges what they recorded into the run's result ([`outcome`]).
//!
//! `worker` holds the event loop each thread runs; `schedule` when each start is due;
//! `control` and `live` the run's stop switch and the live view; `hooks` what a script
//! may do to a run; `io` the sockets and the wait; `process` the process's limits and
//! CPU time; `probe` the check that a target answers before a run.

pub(crate) mod control;
pub mod hooks;
pub(crate) mod io;
pub(crate) mod link;
pub(crate) mod live;
pub mod made;
mod outcome;
mod probe;
pub mod process;
pub(crate) mod ring;
pub(crate) mod schedule;
pub(crate) mod worker;

pub use probe::probe;

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::measure::recorder::Recorder;
use crate::spec::config::Config;
use crate::{
    Budget, Closed, Control, Origin, Plan, RequestRecord, RunError, RunResult, Schedule, Shape,
};
use outcome::build_result;
use worker::{Shared, Worker, WorkerOutput};

/// What [`run`] returns: the result, and per-request records if the spec asked for them.
#[derive(Debug)]
pub struct Run {
    /// The measurements.
    pub result: RunResult,
    /// One record per request, answered or failed, when `cfg.record_requests` was set
    /// (the first [`crate::measure::recorder::MAX_RECORDS`]).
    pub requests: Option<Vec<RequestRecord>>,
    /// Requests past the records' limit, counted but not recorded.
    pub requests_dropped: u64,
    /// Records streamed out ([`Control::record_to`]) that were lost to a failed file.
    pub raw_lost: u64,
}

/// Runs the load test `plan` describes (see [`crate::LoadSpec::plan`]).
pub fn run(plan: &Plan, control: Arc<Control>) -> Result<Run, RunError> {
    let mut runs = run_each(&[(plan, &[])], control)?;
    Ok(runs.pop().expect("one run per part"))
}

/// Runs a load test over several servers (see [`crate::LoadSpec::split`]): every part's
/// workers start from one instant under one control (its progress, live figures and
/// records cover them all), and the parts' results merge exactly into the run's, each
/// request's figures named with its server.
pub fn run_parts(parts: &[crate::Part], control: Arc<Control>) -> Result<Run, RunError> {
    let each: Vec<(&Plan, &[u32])> = parts.iter().map(|p| (&p.plan, &p.places[..])).collect();
    let runs = run_each(&each, control)?;
    if runs.len() == 1 {
        return Ok(runs.into_iter().next().expect("one run"));
    }
    let mut merger = crate::merge::Merger::new(true);
    let mut requests: Option<Vec<RequestRecord>> = None;
    let (mut requests_dropped, mut raw_lost) = (0, 0);
    let mut origin = None;
    for (run, part) in runs.into_iter().zip(parts) {
        let mut r = run.result;
        let t = &part.plan.config().net.target;
        let server = format!("{}://{}", if t.tls { "https" } else { "http" }, t.authority);
        for target in &mut r.targets {
            // "GET /path" becomes "GET http://host:port/path".
            if let Some((method, path)) = target.name.split_once(' ') {
                target.name = format!("{method} {server}{path}");
            }
        }
        if let Some(cause) = r.open.as_mut().and_then(|o| o.cause.as_mut()) {
            *cause = format!("{server}: {cause}");
        }
        origin.get_or_insert_with(|| r.origin.clone());
        // The servers' parts add up as whole runs do, even in a segment of a run.
        r.origin.segment = None;
        merger.add(&r).map_err(|e| RunError::Merge(e.to_string()))?;
        if let Some(list) = run.requests {
            requests.get_or_insert_with(Vec::new).extend(list);
        }
        requests_dropped += run.requests_dropped;
        raw_lost += run.raw_lost;
    }
    let mut r = merger
        .finish()
        .map_err(|e| RunError::Merge(e.to_string()))?;
    // One process on one machine, not parts from several.
    r.origin = origin.expect("at least two parts");
    let first = parts[0].plan.config();
    let mut shape = first.arrivals.shape.clone();
    if let Shape::Rate { rate, .. } = &mut shape {
        *rate = r.open.as_ref().and_then(|o| o.target_rate).unwrap_or(*rate);
    }
    r.settings.shape = shape.describe(&first.arrivals.session);
    if let Some(l) = &mut r.limit {
        l.client_cores = crate::limit::cores_allowed();
    }
    r.rejudge_limit();
    Ok(Run {
        result: r,
        requests,
        requests_dropped,
        raw_lost,
    })
}

/// Runs each part (a plan, and its requests' places in the whole list, or none when
/// they are the list) from one start: one result each.
fn run_each(parts: &[(&Plan, &[u32])], control: Arc<Control>) -> Result<Vec<Run>, RunError> {
    let needed = parts
        .iter()
        .map(|(p, _)| {
            crate::process::fds_needed(p.config().size.connections, p.config().size.threads)
        })
        .sum();
    let limit = crate::process::raise_nofile(needed);
    if limit < needed {
        return Err(RunError::FdLimit { needed, limit });
    }
    let first = parts[0].0.config();
    let Some(Zero {
        start,
        start_unix_us,
        late,
    }) = schedule_zero(first.start_at, &control)
    else {
        // Stopped while waiting for the shared start: nothing ran.
        return Err(RunError::Stopped);
    };
    let end = first.ends.duration.map(|d| start + d);
    let shared: Vec<Shared> = (parts.iter())
        .map(|(p, _)| {
            let (ring, note) = ring::choose(p.config()).map_err(|e| RunError::Io(e.to_string()))?;
            Ok(Shared {
                control: control.clone(),
                doc_len: AtomicU64::new(u64::MAX),
                calls: AtomicU64::new(0),
                server: Mutex::new(None),
                tls: Mutex::new(None),
                load: crate::limit::Sampler::default(),
                ring,
                ring_required: p.config().net.socket.io == crate::spec::net::IoBackend::IoUring,
                io_note: Mutex::new(note),
                fell_back: std::sync::atomic::AtomicBool::new(false),
            })
        })
        .collect::<Result<_, RunError>>()?;
    let budgets: Vec<Arc<Budget>> = (parts.iter())
        .map(|(p, _)| {
            let cfg = p.config();
            Arc::new(Budget::new(cfg.ends.requests.map(|n| cfg.segment.share(n))))
        })
        .collect();
    let profiles: Vec<Option<Arc<crate::inject::Profile>>> = (parts.iter())
        .map(|(p, _)| match &p.config().arrivals.shape {
            Shape::Users(profile) | Shape::Paced(profile) => Some(Arc::new(profile.clone())),
            _ => None,
        })
        .collect();
    let outputs = std::thread::scope(|scope| {
        let mut handles = Vec::new();
        let mut stops = Vec::with_capacity(parts.len());
        // Worker indices run on across the parts: records and hooks tell them apart.
        let mut index = 0;
        for (k, &(plan, places)) in parts.iter().enumerate() {
            let cfg = plan.config();
            let shared = &shared[k];
            let sampler = std::thread::Builder::new()
                .name("stampede-sampler".into())
                .spawn_scoped(scope, || shared.load.run())
                .map_err(RunError::Thread)?;
            // Stops the sampler however this closure ends, so that the scope can end.
            stops.push(crate::limit::StopOnDrop::new(
                &shared.load,
                sampler.thread().clone(),
            ));
            let threads = cfg.size.threads.max(1);
            let seg_connections = cfg.segment.share(cfg.size.connections as u64) as usize;
            for i in 0..threads {
                let conns = seg_connections / threads + usize::from(i < seg_connections % threads);
                let schedule = schedule_for(
                    cfg,
                    (i, threads),
                    conns,
                    (start, end),
                    &budgets[k],
                    profiles[k].as_ref(),
                );
                let lane = cfg.segment.lane(i, threads);
                let worker = Worker::new(
                    plan,
                    shared,
                    schedule,
                    (index, places),
                    lane,
                    conns,
                    start,
                    start_unix_us,
                )
                .map_err(RunError::Poll)?;
                let h = std::thread::Builder::new()
                    .name(format!("stampede-worker-{index}"))
                    .spawn_scoped(scope, move || worker.run())
                    .map_err(RunError::Thread)?;
                handles.push((k, h));
                index += 1;
            }
        }
        let mut outs: Vec<Vec<WorkerOutput>> = parts.iter().map(|_| Vec::new()).collect();
        for (k, h) in handles {
            match h.join() {
                Ok(Ok(o)) => outs[k].push(o),
                Ok(Err(e)) => return Err(RunError::Poll(e)),
                Err(_) => return Err(RunError::WorkerPanicked),
            }
        }
        Ok(outs)
    })?;
    let mut elapsed = control.clock().now().saturating_duration_since(start);
    if let Some(d) = first.ends.duration {
        // A timed run lasts its duration; the loop exits a hair after the deadline.
        // One that drains lasts until its last answer (or the drain's end).
        if elapsed > d && first.ends.requests.is_none() && first.ends.drain.is_none() {
            elapsed = d;
        }
    }
    let mut runs = Vec::with_capacity(parts.len());
    for ((outs, shared), &(plan, _)) in outputs.into_iter().zip(shared).zip(parts) {
        let cfg = plan.config();
        let mut abandoned = 0;
        let mut never_sent = 0;
        let mut rec: Option<Recorder> = None;
        for o in outs {
            abandoned += o.abandoned;
            never_sent += o.never_sent;
            match &mut rec {
                None => rec = Some(o.recorder),
                Some(r) => r.merge(o.recorder),
            }
        }
        let rec = rec.expect("at least one worker");
        let io = match (
            shared.ring,
            shared.fell_back.load(std::sync::atomic::Ordering::Relaxed),
        ) {
            (true, false) => "io_uring",
            (true, true) => "epoll,io_uring",
            (false, _) => "epoll",
        };
        let io_note = (shared.io_note.lock())
            .map(|mut n| n.take())
            .unwrap_or_else(|e| e.into_inner().take());
        let mut result = build_result(
            cfg,
            rec,
            (abandoned, never_sent),
            elapsed,
            start_unix_us,
            shared,
        );
        result.result.origin = Origin {
            host: host_name(),
            clock: "realtime".into(),
            segment: (!cfg.segment.is_whole()).then(|| cfg.segment.to_string()),
            shared_start: cfg.start_at.is_some(),
            late_ms: late.as_secs_f64() * 1e3,
            io: io.into(),
            io_note,
            parts: Vec::new(),
        };
        runs.push(result);
    }
    Ok(runs)
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
    let now = control.clock().now();
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
                let left = zero.saturating_duration_since(control.clock().now());
                if left.is_zero() {
                    break;
                }
                std::thread::sleep(control.clock().bound(left.min(Duration::from_millis(50))));
            }
            Some(Zero {
                start: zero,
                start_unix_us: unix_us(at),
                late: control.clock().now() - zero,
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
    cfg: &'a Config,
    (w, workers): (usize, usize),
    pool: usize,
    (start, end): (Instant, Option<Instant>),
    budget: &Arc<Budget>,
    profile: Option<&Arc<crate::inject::Profile>>,
) -> Box<dyn Schedule + 'a> {
    use crate::arrivals::{Bursts, Fixed, Gamma, Gaps, Poisson, Stride};
    use schedule::{ClosedUsers, Open, Sequential};
    let (w, n) = cfg.segment.lane(w, workers);
    let horizon = match cfg.arrivals.shape {
        // What one wake-up sends ahead takes at most a quarter of the worker's pool
        // (`pool` connections, each `pipeline` requests deep), so that responses read a
        // nap late and a slow moment of the server still find room.
        Shape::Rate { rate, .. } if rate > 0.0 => {
            let room = (pool * cfg.size.pipeline.max(1)) as f64 * n as f64 / (4.0 * rate);
            cfg.arrivals
                .horizon
                .min(Duration::from_secs_f64(room.min(1.0)))
        }
        // The same room at the profile's highest rate.
        Shape::Paced(ref p) if p.peak_rate() > 0.0 => {
            let room = (pool * cfg.size.pipeline.max(1)) as f64 * n as f64 / (4.0 * p.peak_rate());
            cfg.arrivals
                .horizon
                .min(Duration::from_secs_f64(room.min(1.0)))
        }
        _ => cfg.arrivals.horizon,
    };
    match &cfg.arrivals.shape {
        Shape::Closed => Box::new(Closed::new(budget.clone(), end)),
        Shape::Rate {
            rate,
            gaps: Gaps::Even,
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
            gaps: Gaps::Poisson,
        } => Box::new(
            Open::new(
                start,
                end,
                Stride::new(Poisson::new(*rate, cfg.arrivals.seed), w, n),
                budget.clone(),
            )
            .with_horizon(horizon),
        ),
        // Gamma gaps likewise: one renewal process dealt out by lane.
        Shape::Rate {
            rate,
            gaps: Gaps::Gamma(b),
        } => Box::new(
            Open::new(
                start,
                end,
                Stride::new(Gamma::new(*rate, *b, cfg.arrivals.seed), w, n),
                budget.clone(),
            )
            .with_horizon(horizon),
        ),
        // Groups sent together: one schedule for the run, dealt out by lane.
        Shape::Rate {
            rate,
            gaps: Gaps::Burst(b),
        } => Box::new(
            Open::new(
                start,
                end,
                Stride::new(Bursts::new(*rate, *b), w, n),
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
        Shape::Users(_) | Shape::Paced(_) => {
            let arr = profile.expect("profile").arrivals(cfg.arrivals.seed);
            Box::new(
                Open::new(start, end, Stride::new(arr, w, n), budget.clone()).with_horizon(horizon),
            )
        }
        Shape::Sessions {
            period: None,
            count,
        } => Box::new(Sequential::new(cfg.segment.share(*count))),
        Shape::Sessions {
            period: Some(p),
            count,
        } => {
            let arr = p.arrivals(cfg.arrivals.seed).take(*count as usize);
            Box::new(
                Open::new(start, end, Stride::new(arr, w, n), budget.clone()).with_horizon(horizon),
            )
        }
    }
}
