//! The coordinator of a fleet run: one loop that holds the start barrier, merges the
//! seconds as they come, stops every segment when the caller's judgement says so, and
//! gives up on a segment that never became ready, stalled or died — each named, none
//! holding the run past its deadlines. The segments reach it over a [`Channel`]: each
//! one's process started over ssh with its standard input kept open
//! ([`Channel::ssh`]), or processes started by anything else that connect to a socket
//! ([`super::collect`]); a reader per segment turns what it sends into events.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
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
    /// Connections refused before they were a segment's (a wrong token, a segment not
    /// theirs or taken, a malformed hello); none over ssh.
    pub refused_joins: u64,
}

/// What the caller decides on each merged second.
pub enum Decision {
    Go,
    /// Stop every segment now.
    Stop,
}

/// What a segment's reader tells the loop.
pub(crate) enum Event {
    Frame(usize, Frame),
    Refused(usize, String),
    /// Its output ended: what it held besides frames, and its last error line.
    Ended(usize, Vec<u8>, String),
    /// What started it saw it fail (a pod that failed or was evicted): why.
    Lost(usize, String),
}

/// Tells the loop that a segment has failed, as what started it saw (a pod's
/// status); one that has already ended is left as it ended.
#[derive(Clone)]
pub struct Lost(Sender<Event>, usize);

impl Lost {
    /// Segment `k` (1-based) has failed, for this reason.
    pub fn lost(&self, k: usize, why: String) {
        if (1..=self.1).contains(&k) {
            let _ = self.0.send(Event::Lost(k - 1, why));
        }
    }
}

/// One segment's end of the channel, as the loop drives it.
pub trait Link: Send {
    /// Writes an order to the segment; one that has gone is left alone.
    fn say(&mut self, line: &str);
    /// Ends the segment now; whether the end of its output is still to come (false for
    /// one that never joined).
    fn kill(&mut self) -> bool;
    /// Once its output has ended: whether it ended well, or why not (its last error
    /// line given).
    fn finish(&mut self, stderr: String) -> Result<(), String>;
}

/// The segments' links and the events their readers send.
pub struct Channel {
    pub(crate) links: Vec<Box<dyn Link>>,
    pub(crate) events: Receiver<Event>,
    /// A sender of the events, for [`Channel::lost`].
    pub(crate) sender: Sender<Event>,
    /// Connections refused before they were a segment's.
    pub(crate) refused_joins: Arc<AtomicU64>,
}

impl Channel {
    /// What tells the loop of a segment lost outside the channel.
    pub fn lost(&self) -> Lost {
        Lost(self.sender.clone(), self.links.len())
    }

    /// Starts segment K of N on each host (`words_for(K, N)`, given `--fleet`), its
    /// standard input and output the channel.
    pub fn ssh(
        hosts: &Hosts,
        words_for: impl Fn(usize, usize) -> Vec<String>,
    ) -> Result<Channel, RemoteError> {
        let n = hosts.hosts.len();
        let (tx, events) = mpsc::channel();
        let mut links: Vec<Box<dyn Link>> = Vec::with_capacity(n);
        for (i, host) in hosts.hosts.iter().enumerate() {
            let mut child = hosts.spawn_open(host, &words_for(i + 1, n))?;
            let stdin = child.stdin.take();
            let (out, err) = (child.stdout.take(), child.stderr.take());
            read_segment(i, out, err, tx.clone());
            links.push(Box::new(Process { child, stdin }));
        }
        Ok(Channel {
            links,
            events,
            sender: tx,
            refused_joins: Arc::default(),
        })
    }
}

/// A segment's process started over ssh.
struct Process {
    child: Child,
    stdin: Option<ChildStdin>,
}

impl Link for Process {
    fn say(&mut self, line: &str) {
        if let Some(w) = self.stdin.as_mut() {
            if w.write_all(line.as_bytes())
                .and_then(|_| w.flush())
                .is_err()
            {
                self.stdin = None;
            }
        }
    }

    fn kill(&mut self) -> bool {
        let _ = self.child.kill();
        true
    }

    fn finish(&mut self, stderr: String) -> Result<(), String> {
        self.stdin = None;
        match self.child.wait() {
            Ok(s) if s.success() => Ok(()),
            Ok(s) => Err(RemoteError::Exit {
                code: s.code(),
                stderr,
            }
            .to_string()),
            Err(e) => Err(e.to_string()),
        }
    }
}

struct Running {
    link: Box<dyn Link>,
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

/// Drives the segments of `channel` (named by `names`, in order): holds the barrier,
/// merges the seconds into `merge`, calls `on_second` with each whole second (and the
/// merge so far), and returns each segment's outcome.
pub fn run(
    channel: Channel,
    names: &[String],
    waits: Waits,
    merge: &mut LiveMerge,
    mut on_second: impl FnMut(&super::FleetSecond, &LiveMerge) -> Decision,
) -> Outcome {
    let n = channel.links.len();
    let rx = channel.events;
    // Only the readers (and what a Lost holds) send from here on.
    drop(channel.sender);
    let mut procs = Vec::with_capacity(n);
    for link in channel.links {
        procs.push(Running {
            link,
            ready: false,
            ended: false,
            failed: None,
            last_second: Instant::now(),
            output: None,
            stderr: String::new(),
            refused_any: false,
        });
    }
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
        kill(p);
    }
    let start_unix_s = procs
        .iter()
        .any(|p| p.ready && p.failed.is_none())
        .then(|| {
            let at = SystemTime::now() + waits.lead;
            at.duration_since(UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64())
        });
    merge.start_unix_s = start_unix_s;
    if let Some(at) = start_unix_s {
        for p in procs.iter_mut().filter(|p| p.failed.is_none()) {
            p.link.say(&start_line(at));
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
                kill(p);
            }
            if !p.ended && now > started + waits.deadline {
                p.failed.get_or_insert_with(|| {
                    format!(
                        "still running {:.0} s after the start; stopped",
                        waits.deadline.as_secs_f64()
                    )
                });
                kill(p);
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
                    p.link.say(STOP_LINE);
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
            let ended = p.link.finish(std::mem::take(&mut p.stderr));
            let result = match (p.failed, p.output, ended) {
                (Some(why), ..) => Err(why),
                (None, Some(out), Ok(())) => parse_result(&out).map_err(|e| e.to_string()),
                (None, None, Ok(())) => Err("ended without a result".to_string()),
                (None, _, Err(why)) => Err(why),
            };
            Segment {
                host: names[i].clone(),
                segment: format!("{}/{n}", i + 1),
                result,
            }
        })
        .collect();
    Outcome {
        segments,
        start_unix_s,
        refused,
        refused_joins: channel.refused_joins.load(Ordering::Relaxed),
    }
}

/// Ends a segment; one whose output will never end (it never joined) counts as ended.
fn kill(p: &mut Running) {
    if !p.link.kill() {
        p.ended = true;
    }
}

fn handle(e: Event, procs: &mut [Running], merge: &mut LiveMerge, refused: &mut u64) {
    match e {
        Event::Frame(i, Frame::Ready { run, .. }) => {
            procs[i].ready = true;
            if let Some(r) = run {
                merge.runs.insert(i, r);
            }
        }
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
        Event::Frame(i, Frame::Failed { why }) => {
            procs[i].failed.get_or_insert(why);
        }
        Event::Refused(i, why) => refuse(i, &mut procs[i], refused, &why),
        Event::Lost(i, why) => {
            let p = &mut procs[i];
            if !p.ended && p.failed.is_none() {
                p.failed = Some(why);
                kill(p);
            }
        }
        Event::Ended(i, out, stderr) => {
            let p = &mut procs[i];
            p.ended = true;
            p.output = Some(out);
            p.stderr = stderr;
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
pub(crate) fn read_segment(
    i: usize,
    out: Option<impl Read + Send + 'static>,
    err: Option<impl Read + Send + 'static>,
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
