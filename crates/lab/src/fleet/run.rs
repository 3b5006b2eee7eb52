//! The coordinator of a fleet run over ssh: every segment's process started with its
//! standard input kept open, a reader per segment turning its output into events,
//! and one loop that holds the start barrier, merges the seconds as they come, stops
//! every segment when the caller's judgement says so, and gives up on a segment that
//! never became ready, stalled or died — each named, none holding the run past its
//! deadlines.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin};
use std::sync::mpsc::{self, Sender};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use stampede_engine::RunResult;

use super::{start_line, Frame, LiveMerge, STOP_LINE};
use crate::remote::{parse_result, Hosts, RemoteError};

/// How the coordinator waits.
#[derive(Debug, Clone, Copy)]
pub struct Waits {
    /// For every segment to say ready, from the launch.
    pub ready: Duration,
    /// Between the last ready (or the ready deadline) and the shared start.
    pub lead: Duration,
    /// A running segment that sends no second for this long is stopped and missing.
    pub stall: Duration,
    /// From the start, for every segment to end.
    pub deadline: Duration,
}

/// What became of one segment.
#[derive(Debug)]
pub struct Segment {
    pub host: String,
    /// `K/N`.
    pub segment: String,
    /// Its result, or why there is none.
    pub result: Result<RunResult, String>,
}

/// A fleet run's end: each segment's outcome, in order, and what the loop saw.
#[derive(Debug)]
pub struct Outcome {
    pub segments: Vec<Segment>,
    /// The shared start given, Unix seconds (none when no segment became ready).
    pub start_unix_s: Option<f64>,
    /// Frames refused, all segments.
    pub refused: u64,
}

/// What the caller decides on each merged second.
pub enum Decision {
    Go,
    /// Stop every segment now.
    Stop,
}

enum Event {
    Frame(usize, Frame),
    Refused(usize, String),
    /// Its output ended: what it held besides frames, and its last error line.
    Ended(usize, Vec<u8>, String),
}

struct Running {
    child: Child,
    stdin: Option<ChildStdin>,
    ready: bool,
    ended: bool,
    /// Why it is missing, once it is.
    failed: Option<String>,
    last_second: Instant,
    output: Option<Vec<u8>>,
    stderr: String,
    /// A frame of its was refused (said once).
    refused_any: bool,
}

/// Runs segment K of N on each host (`words_for(K, N)`, given `--fleet`), holds the
/// barrier, merges the seconds into `merge`, calls `on_second` with each whole
/// second (and the merge so far), and returns each segment's outcome.
pub fn run(
    hosts: &Hosts,
    words_for: impl Fn(usize, usize) -> Vec<String>,
    waits: Waits,
    merge: &mut LiveMerge,
    mut on_second: impl FnMut(&super::FleetSecond, &LiveMerge) -> Decision,
) -> Result<Outcome, RemoteError> {
    let n = hosts.hosts.len();
    let (tx, rx) = mpsc::channel();
    let mut procs = Vec::with_capacity(n);
    for (i, host) in hosts.hosts.iter().enumerate() {
        let mut child = hosts.spawn_open(host, &words_for(i + 1, n))?;
        let stdin = child.stdin.take();
        let (out, err) = (child.stdout.take(), child.stderr.take());
        read_segment(i, out, err, tx.clone());
        procs.push(Running {
            child,
            stdin,
            ready: false,
            ended: false,
            failed: None,
            last_second: Instant::now(),
            output: None,
            stderr: String::new(),
            refused_any: false,
        });
    }
    drop(tx);
    let mut refused = 0u64;
    // The barrier: every segment ready, or the ready deadline.
    let launched = Instant::now();
    while procs.iter().any(|p| !p.ready && !p.ended) && launched.elapsed() < waits.ready {
        let left = waits.ready.saturating_sub(launched.elapsed());
        match rx.recv_timeout(left.min(Duration::from_millis(200))) {
            Ok(e) => handle(e, &mut procs, merge, &mut refused),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    for p in procs.iter_mut().filter(|p| !p.ready && p.failed.is_none()) {
        let why = match (p.ended, p.stderr.is_empty()) {
            (true, true) => "ended before it was ready".to_string(),
            (true, false) => format!("ended before it was ready: {}", p.stderr),
            (false, _) => format!("not ready within {:.1} s", waits.ready.as_secs_f64()),
        };
        p.failed = Some(why);
        let _ = p.child.kill();
    }
    let start_unix_s = procs
        .iter()
        .any(|p| p.ready && p.failed.is_none())
        .then(|| {
            let at = SystemTime::now() + waits.lead;
            at.duration_since(UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64())
        });
    if let Some(at) = start_unix_s {
        for p in procs.iter_mut().filter(|p| p.failed.is_none()) {
            say(p, &start_line(at));
            p.last_second = Instant::now() + waits.lead;
        }
    }
    // The run: seconds merged as they come, stalls and the deadline watched.
    let started = Instant::now() + waits.lead;
    let mut stopping = false;
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(e) => handle(e, &mut procs, merge, &mut refused),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {}
        }
        let now = Instant::now();
        for p in procs.iter_mut() {
            if !p.ended && p.failed.is_none() && now > p.last_second + waits.stall {
                p.failed = Some(format!(
                    "stalled: no figures for {:.0} s; stopped",
                    waits.stall.as_secs_f64()
                ));
                let _ = p.child.kill();
            }
            if !p.ended && now > started + waits.deadline {
                p.failed.get_or_insert_with(|| {
                    format!(
                        "still running {:.0} s after the start; stopped",
                        waits.deadline.as_secs_f64()
                    )
                });
                let _ = p.child.kill();
            }
        }
        let running: Vec<usize> = (0..procs.len())
            .filter(|&i| !procs[i].ended && procs[i].failed.is_none())
            .collect();
        let all_ended = procs.iter().all(|p| p.ended);
        for s in merge.ready(&running, all_ended) {
            if let (Decision::Stop, false) = (on_second(&s, merge), stopping) {
                stopping = true;
                for p in procs.iter_mut().filter(|p| !p.ended) {
                    say(p, STOP_LINE);
                }
            }
        }
        if all_ended {
            break;
        }
    }
    let segments = procs
        .into_iter()
        .enumerate()
        .map(|(i, mut p)| {
            let status = p.child.wait();
            let result = match (p.failed, p.output, status) {
                (Some(why), ..) => Err(why),
                (None, Some(out), Ok(s)) if s.success() => {
                    parse_result(&out).map_err(|e| e.to_string())
                }
                (None, _, Ok(s)) => Err(RemoteError::Exit {
                    code: s.code(),
                    stderr: p.stderr,
                }
                .to_string()),
                (None, _, Err(e)) => Err(e.to_string()),
            };
            Segment {
                host: hosts.hosts[i].clone(),
                segment: format!("{}/{n}", i + 1),
                result,
            }
        })
        .collect();
    Ok(Outcome {
        segments,
        start_unix_s,
        refused,
    })
}

/// Writes an order to a segment (one that has gone is left alone).
fn say(p: &mut Running, line: &str) {
    if let Some(w) = p.stdin.as_mut() {
        if w.write_all(line.as_bytes())
            .and_then(|_| w.flush())
            .is_err()
        {
            p.stdin = None;
        }
    }
}

fn handle(e: Event, procs: &mut [Running], merge: &mut LiveMerge, refused: &mut u64) {
    match e {
        Event::Frame(i, Frame::Ready { .. }) => procs[i].ready = true,
        Event::Frame(i, Frame::Second(iv)) => {
            procs[i].last_second = Instant::now();
            if procs[i].failed.is_none() {
                if let Err(why) = merge.add(i, &iv) {
                    refuse(i, &mut procs[i], refused, &why.to_string());
                }
            }
        }
        Event::Frame(i, Frame::Missed { late_s }) => {
            procs[i].failed.get_or_insert_with(|| {
                format!("got the start {late_s:.3} s late and started nothing")
            });
        }
        Event::Refused(i, why) => refuse(i, &mut procs[i], refused, &why),
        Event::Ended(i, out, stderr) => {
            let p = &mut procs[i];
            p.ended = true;
            p.output = Some(out);
            p.stderr = stderr;
            p.stdin = None;
        }
    }
}

/// Counts a refused frame, saying the first of each segment's.
fn refuse(i: usize, p: &mut Running, refused: &mut u64, why: &str) {
    *refused += 1;
    if !p.refused_any {
        p.refused_any = true;
        eprintln!(
            "stampede: segment {}: refused a frame ({why}); its later ones are counted",
            i + 1
        );
    }
}

/// Reads a segment's output on threads of its own: frames as events, the rest (its
/// result) kept, at most a result's bound; its standard error's last line.
fn read_segment(
    i: usize,
    out: Option<std::process::ChildStdout>,
    err: Option<std::process::ChildStderr>,
    tx: Sender<Event>,
) {
    let errs = std::thread::spawn(move || {
        let mut e = Vec::new();
        if let Some(err) = err {
            let _ = err.take(1 << 20).read_to_end(&mut e);
        }
        let text = String::from_utf8_lossy(&e);
        text.trim().lines().last().unwrap_or("").to_string()
    });
    std::thread::spawn(move || {
        let limit = stampede_engine::input::Input::Result.limit();
        let mut rest = Vec::new();
        if let Some(out) = out {
            let mut r = BufReader::new(out.take(limit));
            loop {
                let mut line = Vec::new();
                match r.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                match Frame::parse(line.trim_ascii_end()) {
                    Some(Ok(f)) => {
                        let _ = tx.send(Event::Frame(i, f));
                    }
                    Some(Err(why)) => {
                        let _ = tx.send(Event::Refused(i, why.to_string()));
                    }
                    None => rest.extend_from_slice(&line),
                }
            }
        }
        let stderr = errs.join().unwrap_or_default();
        let _ = tx.send(Event::Ended(i, rest, stderr));
    });
}
