//! A journey run on the engine's connections: each connection of a closed (or
//! fixed-rate) HTTP/1.1 run is a user walking the journey, step after step, again
//! and again. Before each request the user's step is rendered with its variables and
//! cookies; after its answer the step's captures and checks run, the cookies it sets
//! are stored, and the user thinks before the next step. A capture that finds
//! nothing (with no default), an answer that never comes, or a step that cannot be
//! rendered ends the user's journey as failed, and it begins again from the first
//! step with a new row of data.
//!
//! The engine times every request under its step's name (the run's per-request
//! figures); this adds each step's failed checks and missed captures to them and the
//! journeys' counts and durations as the run's sessions ([`JourneyRun::annotate`]).

use std::io::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use stampede_engine::result::{LatencyStats, RunResult, SessionStats};
use stampede_engine::{Flow, Hooks, Reply as EngineReply, Target, ThreadHooks, ThreadHooksSource};

use crate::cookies::Jar;
use crate::journey::{Constant, Exhausted, Journey, Step};
use crate::reply::Reply;
use crate::template::{Draw, Unrendered};
use crate::vars::{Value, Vars};
use crate::walk::Cursor;
use crate::Invalid;

/// A journey ready to run against one target (a clone is the same run).
#[derive(Clone)]
pub struct JourneyRun {
    shared: Arc<Shared>,
}

struct Shared {
    journey: Journey,
    /// `Host` as requests send it, and the target's parts cookies are matched on.
    authority: String,
    host: String,
    secure: bool,
    origin: String,
    seed: u64,
    threads: u64,
    /// Rows taken from the feeder, over the run.
    rows_taken: AtomicU64,
    /// Users begun, over the run.
    users: AtomicU64,
    /// `$seq`'s next number, over the run.
    seq: Arc<AtomicU64>,
    /// A unique feeder's rows were used up (and the run stopped, or went round).
    exhausted: AtomicBool,
    /// Why the run was stopped from here, if it was.
    stopped: Mutex<Option<String>>,
    tally: Mutex<Tally>,
}

impl JourneyRun {
    /// The journey run against `target` by `threads` worker threads, drawing from
    /// `seed`.
    pub fn new(journey: Journey, target: &Target, seed: u64, threads: usize) -> JourneyRun {
        let origin = format!(
            "{}://{}",
            if target.tls { "https" } else { "http" },
            target.authority
        );
        JourneyRun::begin(
            journey,
            target.authority.clone(),
            target.host.trim_matches(['[', ']']).to_string(),
            (target.tls, origin),
            seed,
            threads.max(1) as u64,
        )
    }

    /// The same journey against the same target, its figures and data begun anew:
    /// for a run after this one (each step of a capacity search) that counts only
    /// its own users.
    pub fn fresh(&self) -> JourneyRun {
        let s = &self.shared;
        JourneyRun::begin(
            s.journey.clone(),
            s.authority.clone(),
            s.host.clone(),
            (s.secure, s.origin.clone()),
            s.seed,
            s.threads,
        )
    }

    fn begin(
        journey: Journey,
        authority: String,
        host: String,
        (secure, origin): (bool, String),
        seed: u64,
        threads: u64,
    ) -> JourneyRun {
        let (steps, routes) = (journey.figures.len(), journey.routes.len());
        JourneyRun {
            shared: Arc::new(Shared {
                journey,
                authority,
                host,
                secure,
                origin,
                seed,
                threads,
                rows_taken: AtomicU64::new(0),
                users: AtomicU64::new(0),
                seq: Arc::new(AtomicU64::new(0)),
                exhausted: AtomicBool::new(false),
                stopped: Mutex::new(None),
                tally: Mutex::new(Tally::new(steps, routes)),
            }),
        }
    }

    /// How many journeys its file holds (one, or the journeys of a mix).
    pub fn journeys(&self) -> usize {
        self.shared.journey.routes.len()
    }

    /// The hooks that run it, for the spec.
    pub fn hooks(&self) -> Hooks {
        Hooks(Arc::new(Source(self.shared.clone())))
    }

    /// Why the journey stopped the run, if it did (a unique feeder used up, a step
    /// that cannot be rendered for a new user).
    pub fn stopped(&self) -> Option<String> {
        self.shared.stopped.lock().expect("not poisoned").clone()
    }

    /// What the users did, for reports that count it another way than the run's
    /// sessions (call once the run is over).
    pub fn figures(&self) -> JourneyFigures {
        let t = self.shared.tally.lock().expect("not poisoned");
        let j = &self.shared.journey;
        JourneyFigures {
            by_journey: (j.routes.iter().map(|r| r.name.clone()))
                .zip(t.by_route.iter().copied())
                .collect(),
            checks_made: (j.figures.iter().cloned())
                .zip(t.checked.iter().cloned())
                .collect(),
            broken: t.broken,
            walked: t.walked.clone(),
        }
    }

    /// The users and each step's failed checks and missed captures as they stand,
    /// for live outputs: each thread's counts as of its last journey to end after a
    /// second since the one before (the final figures come with the run's end).
    pub fn live(&self) -> LiveJourneys {
        let t = self.shared.tally.lock().expect("not poisoned");
        let mut failed = Vec::new();
        for (i, step) in self.shared.journey.figures.iter().enumerate() {
            for (check, n) in t.checks[i].iter().chain(&t.missed[i]) {
                failed.push((step.clone(), check.clone(), *n));
            }
        }
        LiveJourneys {
            started: t.started,
            completed: t.completed,
            failed: t.failed,
            broken: t.broken,
            checks_failed: failed,
        }
    }

    /// Whether a unique feeder's rows were all taken.
    pub fn exhausted(&self) -> bool {
        self.shared.exhausted.load(Ordering::Relaxed)
    }

    /// Adds the journey's figures to the run's result (call once the run is over):
    /// each step's failed checks and missed captures to its figures, the journeys as
    /// the run's sessions.
    pub fn annotate(&self, result: &mut RunResult) {
        let t = self.shared.tally.lock().expect("not poisoned");
        for (i, name) in self.shared.journey.figures.iter().enumerate() {
            if let Some(f) = result.targets.iter_mut().find(|f| f.name == *name) {
                f.checks_failed = t.checks[i].clone();
                f.captures_missed = t.missed[i].clone();
            }
        }
        if self.shared.journey.file.is_some() {
            let s = &mut result.settings;
            s.method = "journey".into();
            s.shape = match s.shape.strip_prefix("users ") {
                // --inject: its steps, each user walking one journey.
                Some(steps) => format!(
                    "users {}, each walking {} once",
                    steps.split("; ").next().unwrap_or(steps),
                    self.shared.journey.describe()
                ),
                None => format!(
                    "{} users walking {}",
                    s.connections,
                    self.shared.journey.describe()
                ),
            };
        }
        // The lifetimes' histogram too, so that segments' results merge exactly.
        let mut lifetimes = stampede_engine::Hist::default();
        let _ = lifetimes.0.add(&t.lifetime);
        result.histograms.session = lifetimes;
        result.sessions = Some(SessionStats {
            started: t.started,
            completed: t.completed,
            failed: t.failed,
            // Session shapes count the users active at once themselves; otherwise
            // each connection is one user for the whole run.
            max_concurrent: (result.sessions.as_ref())
                .map_or(self.shared.users.load(Ordering::Relaxed), |s| {
                    s.max_concurrent
                }),
            lifetime: LatencyStats::of(&t.lifetime),
            calls: self.shared.journey.figures.len() as u32,
            burst: 1,
        });
    }
}

/// What the engine asks for each worker thread's hooks.
struct Source(Arc<Shared>);

impl ThreadHooksSource for Source {
    fn thread(&self, index: usize) -> Box<dyn ThreadHooks> {
        let s = &self.0;
        let steps = &s.journey.steps;
        Box::new(ThreadJourney {
            responds: steps.len() > 1
                || s.journey.routes.iter().any(|r| r.ops.len() > 1)
                || steps
                    .iter()
                    .any(|st| !st.captures.is_empty() || !st.checks.is_empty()),
            stop_reason: None,
            draw: Draw::new(s.seed, (index as u64, s.threads)).with_sequence(s.seq.clone()),
            tally: Tally::new(s.journey.figures.len(), s.journey.routes.len()),
            checks: steps
                .iter()
                .map(|st| vec![(0, 0); st.checks.len()])
                .collect(),
            flushed: Instant::now(),
            users: Vec::new(),
            shared: s.clone(),
        })
    }

    fn any_protocol(&self) -> bool {
        // Each user has one request in flight: its requests go as HTTP/2 and HTTP/3
        // streams as well, one at a time on the user's connection.
        true
    }

    fn targets(&self) -> Vec<String> {
        match self.0.journey.file {
            Some(_) => self.0.journey.figures.clone(),
            // `--feeder`'s one request: the run's own figures are its.
            None => Vec::new(),
        }
    }
}

/// How often a thread's counts are added to the run's while it runs.
const FLUSH_EVERY: Duration = Duration::from_secs(1);

/// One user: a connection slot walking the journey.
struct User {
    number: u64,
    iteration: u64,
    step: usize,
    vars: Vars,
    jar: Jar,
    /// Walking a journey (else it begins one with the next request).
    walking: bool,
    failed: bool,
    /// Its journey ended before its last step.
    broken: bool,
    started: Instant,
    sent: Instant,
    /// The path of the request in flight, for the cookies its answer sets.
    path: Vec<u8>,
    /// The think time before the next request.
    think: Duration,
    /// Which of the file's journeys it walks, and where it is in it.
    route: usize,
    cursor: Cursor,
}

struct ThreadJourney {
    shared: Arc<Shared>,
    draw: Draw,
    tally: Tally,
    /// Each step's checks, by the step's place and the check's: (made, failed),
    /// counted here without a name or an allocation and folded into `tally` when it
    /// is handed over.
    checks: Vec<Vec<(u64, u64)>>,
    /// When `tally` was last added to the run's, which live outputs read.
    flushed: Instant,
    users: Vec<Option<User>>,
    /// Whether answers are read: a journey of one step with nothing to capture or
    /// check (`load --feeder`) reads none, and each request begins the next.
    responds: bool,
    /// Why the last new journey had no step to send.
    stop_reason: Option<String>,
}

impl Drop for ThreadJourney {
    fn drop(&mut self) {
        self.fold_checks();
        if let Ok(mut t) = self.shared.tally.lock() {
            t.add(&self.tally);
        }
    }
}

impl ThreadJourney {
    /// The checks counted by place into `tally`, by step figure and check name.
    fn fold_checks(&mut self) {
        let steps = &self.shared.journey.steps;
        for (step, counts) in steps.iter().zip(&mut self.checks) {
            for (c, (made, failed)) in step.checks.iter().zip(counts.iter_mut()) {
                if *made > 0 {
                    *self.tally.checked[step.figure]
                        .entry(c.name.clone())
                        .or_default() += *made;
                }
                if *failed > 0 {
                    *self.tally.checks[step.figure]
                        .entry(c.name.clone())
                        .or_default() += *failed;
                }
                (*made, *failed) = (0, 0);
            }
        }
    }

    fn user(&mut self, conn: usize) -> &mut User {
        if self.users.len() <= conn {
            self.users.resize_with(conn + 1, || None);
        }
        let n = self.shared.journey.width();
        let users = &self.shared.users;
        self.users[conn].get_or_insert_with(|| User {
            number: users.fetch_add(1, Ordering::Relaxed),
            iteration: 0,
            step: 0,
            vars: Vars::new(n),
            jar: Jar::default(),
            walking: false,
            failed: false,
            broken: false,
            started: Instant::now(),
            sent: Instant::now(),
            path: Vec::new(),
            think: Duration::ZERO,
            route: 0,
            cursor: Cursor::default(),
        })
    }

    /// The user on `conn` begins a journey: drawn by weight, with fresh variables,
    /// cookies and a row, at its first step to send. False when the run is to stop
    /// (a unique feeder used up).
    fn begin(&mut self, conn: usize) -> Result<bool, Invalid> {
        let shared = &*self.shared;
        let j = &shared.journey;
        let row = match &j.feed {
            None => None,
            Some(f) => {
                let call = shared.rows_taken.fetch_add(1, Ordering::Relaxed);
                match f.feeder.pick(f.order, call, &mut self.draw) {
                    Some(r) => Some(r),
                    None => {
                        shared.exhausted.store(true, Ordering::Relaxed);
                        if f.exhausted == Exhausted::Stop {
                            self.stop(format!(
                                "the feeder's {} rows were each taken once (the unique order); the run stopped there",
                                f.feeder.rows()
                            ));
                            return Ok(false);
                        }
                        Some((call % f.feeder.rows() as u64) as usize)
                    }
                }
            }
        };
        let route = j.pick(&mut self.draw);
        self.tally.by_route[route] += 1;
        let (draw, users) = (&mut self.draw, &mut self.users);
        let u = users[conn].as_mut().expect("a user before it begins");
        u.vars.clear();
        u.jar.clear();
        for (slot, v) in &j.constants {
            let value = match v {
                Constant::OneOf(one) if one.len() == 1 => Value::Text(one[0].clone()),
                Constant::OneOf(many) => {
                    Value::Text(many[draw.below(many.len() as u64) as usize].clone())
                }
                Constant::List(items) => Value::List(items.clone()),
            };
            u.vars.set(*slot, value);
        }
        if let (Some(f), Some(r)) = (&j.feed, row) {
            f.feeder.fill(r, &f.slots, &mut u.vars);
        }
        u.route = route;
        u.cursor.reset();
        u.walking = true;
        u.failed = false;
        u.broken = false;
        u.started = Instant::now();
        self.tally.started += 1;
        let u = self.users[conn].as_mut().expect("begun");
        let walked = u
            .cursor
            .next(&j.routes[route].ops, &mut u.vars, &mut self.draw);
        u.think = u.cursor.take_pause();
        for line in u.cursor.take_said() {
            eprintln!("{line}");
        }
        match walked {
            Ok(Some(step)) => {
                u.step = step;
                Ok(true)
            }
            Ok(None) => Err("its conditions skipped every step".into()),
            Err(_) => Err("a loop turned without a step to send".into()),
        }
    }

    fn stop(&self, why: String) {
        let mut s = self.shared.stopped.lock().expect("not poisoned");
        s.get_or_insert(why);
    }

    /// The user's journey is over: counted, and the next request begins another.
    fn end(&mut self, conn: usize, now: Instant) {
        let Some(u) = self.users.get_mut(conn).and_then(Option::as_mut) else {
            return;
        };
        if !u.walking {
            return;
        }
        u.walking = false;
        u.iteration += 1;
        let us = now.duration_since(u.started).as_micros().max(1) as u64;
        if u.broken {
            self.tally.broken += 1;
        } else {
            self.tally.walked.saturating_record(us);
        }
        if u.failed {
            self.tally.failed += 1;
        } else {
            self.tally.completed += 1;
            self.tally.lifetime.saturating_record(us);
        }
        // What the users did reaches the run's figures about once a second while it
        // runs (for live outputs), not only when the thread ends.
        if now.saturating_duration_since(self.flushed) >= FLUSH_EVERY {
            self.flushed = now;
            self.fold_checks();
            if let Ok(mut t) = self.shared.tally.lock() {
                t.add(&self.tally);
                self.tally.clear();
            }
        }
    }

    /// Writes the user's step into `out`, or why it cannot be.
    fn render(&mut self, conn: usize, out: &mut Vec<u8>) -> Result<(), Invalid> {
        let shared = &*self.shared;
        let (draw, users) = (&mut self.draw, &mut self.users);
        let u = users[conn].as_mut().expect("a user before its request");
        let step: &Step = &shared.journey.steps[u.step];
        draw.user = u.number;
        draw.iteration = u.iteration;
        let name = |e: Unrendered| {
            let (slot, why) = match e {
                Unrendered::Unset(s) => (s, "has no value"),
                Unrendered::List(s) => (s, "holds a list"),
            };
            format!("{}: {why}", shared.journey.routes[u.route].scope.name(slot))
        };
        let mark = out.len();
        out.extend_from_slice(step.method.as_bytes());
        out.push(b' ');
        let url_at = out.len();
        step.url.render(&u.vars, draw, out).map_err(name)?;
        // An absolute URL on the target's origin is sent as its path.
        if out[url_at..].starts_with(shared.origin.as_bytes()) {
            out.drain(url_at..url_at + shared.origin.len());
            if out.len() == url_at || out[url_at] != b'/' {
                out.insert(url_at, b'/');
            }
        }
        if out.get(url_at) != Some(&b'/') {
            out.truncate(mark);
            return Err(Invalid(format!(
                "url: not a path on {} or a URL on its origin",
                shared.origin
            )));
        }
        if out[url_at..].iter().any(|&b| b <= b' ' || b == 0x7f) {
            out.truncate(mark);
            return Err("url: holds a space or a control character".into());
        }
        u.path.clear();
        u.path.extend_from_slice(&out[url_at..]);
        out.extend_from_slice(b" HTTP/1.1\r\nHost: ");
        out.extend_from_slice(shared.authority.as_bytes());
        out.extend_from_slice(b"\r\n");
        // The step's own cookies and the jar's go in one Cookie field, last (RFC
        // 6265: a request carries one).
        let mut own_cookies = false;
        for (n, v) in (step.headers.iter())
            .filter(|(n, _)| !n.eq_ignore_ascii_case("cookie"))
            .chain(
                step.headers
                    .iter()
                    .filter(|(n, _)| n.eq_ignore_ascii_case("cookie")),
            )
        {
            let cookie = n.eq_ignore_ascii_case("cookie");
            if cookie && own_cookies {
                // A second one joins the first.
                out.truncate(out.len() - 2);
                out.extend_from_slice(b"; ");
            } else {
                out.extend_from_slice(n.as_bytes());
                out.extend_from_slice(b": ");
            }
            own_cookies |= cookie;
            let at = out.len();
            v.render(&u.vars, draw, out).map_err(name)?;
            if out[at..].iter().any(|&b| b == b'\r' || b == b'\n') {
                out.truncate(mark);
                return Err(Invalid(format!("headers.{n}: holds a line break")));
            }
            out.extend_from_slice(b"\r\n");
        }
        let cookie = match u.jar.is_empty() {
            true => None,
            false => u.jar.header(
                &shared.host,
                &String::from_utf8_lossy(&u.path),
                shared.secure,
                SystemTime::now(),
            ),
        };
        if let Some(c) = cookie {
            if own_cookies {
                out.truncate(out.len() - 2);
                out.extend_from_slice(b"; ");
            } else {
                out.extend_from_slice(b"Cookie: ");
            }
            out.extend_from_slice(c.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        match &step.body {
            Some(b) => {
                // Rendered after the head, then the head's length line put before it.
                let at = out.len();
                b.render(&u.vars, draw, out).map_err(name)?;
                let mut line = [0u8; 48];
                let len = {
                    let mut w = &mut line[..];
                    let _ = write!(w, "Content-Length: {}\r\n\r\n", out.len() - at);
                    48 - w.len()
                };
                out.splice(at..at, line[..len].iter().copied());
            }
            None => out.extend_from_slice(b"\r\n"),
        }
        Ok(())
    }
}

impl ThreadHooks for ThreadJourney {
    fn builds_requests(&self) -> bool {
        true
    }

    fn wants_responses(&self) -> bool {
        self.responds
    }

    fn has_delay(&self) -> bool {
        let j = &self.shared.journey;
        j.steps.iter().any(|s| !s.think.is_zero())
            || (j.routes.iter())
                .any(|r| r.ops.iter().any(|o| matches!(o, crate::walk::Op::Pause(_))))
    }

    fn address(&self) -> Option<std::net::SocketAddr> {
        None
    }

    fn watches_sends(&self) -> bool {
        // For `gone`: a request that gets no answer fails its user's journey.
        true
    }

    fn request(&mut self, conn: usize, out: &mut Vec<u8>) -> Flow {
        if !self.responds {
            // No answer is read: the request before this one was its whole journey.
            let now = Instant::now();
            self.end(conn, now);
        }
        // A new journey may fail to render at its first step (a row with a line break
        // where a header takes it); the user then takes another row, a few times.
        for _ in 0..4 {
            if !self.user(conn).walking {
                match self.begin(conn) {
                    Ok(true) => {}
                    Ok(false) => return Flow::StopRun,
                    Err(why) => {
                        // Nothing to send: the journey is over, failed, before a step.
                        self.stop_reason = Some(why.0);
                        let u = self.user(conn);
                        u.failed = true;
                        u.broken = true;
                        self.end(conn, Instant::now());
                        continue;
                    }
                }
            }
            let mark = out.len();
            match self.render(conn, out) {
                Ok(()) => {
                    let u = self.user(conn);
                    u.sent = Instant::now();
                    return Flow::Go;
                }
                Err(why) => {
                    out.truncate(mark);
                    let step = self.user(conn).step;
                    let figure = self.shared.journey.steps[step].figure;
                    *self.tally.missed[figure].entry(why.0).or_default() += 1;
                    let u = self.user(conn);
                    u.failed = true;
                    u.broken = true;
                    self.end(conn, Instant::now());
                }
            }
        }
        if let Some(why) = self.stop_reason.take() {
            self.stop(format!(
                "four new journeys in a row had no step to send: {why}"
            ));
            return Flow::StopRun;
        }
        let at = self.user(conn).step;
        let step = &self.shared.journey.steps[at].name;
        self.stop(format!(
            "step {step:?} could not be rendered for four new users in a row (see its captures_missed)"
        ));
        Flow::StopRun
    }

    fn target(&self, conn: usize) -> u32 {
        (self.users.get(conn).and_then(Option::as_ref))
            .map_or(0, |u| self.shared.journey.steps[u.step].figure as u32)
    }

    fn response(&mut self, reply: &EngineReply<'_>) -> Flow {
        let now = Instant::now();
        let conn = reply.conn;
        let shared = &*self.shared;
        let Some(u) = self.users.get_mut(conn).and_then(Option::as_mut) else {
            return Flow::Go;
        };
        if !u.walking {
            return Flow::Go;
        }
        let step = &shared.journey.steps[u.step];
        let si = step.figure;
        let mut wall = None;
        for (n, v) in reply.headers.iter() {
            if n.eq_ignore_ascii_case("set-cookie") {
                let at = *wall.get_or_insert_with(SystemTime::now);
                let _ = (u.jar).store(v, &shared.host, &String::from_utf8_lossy(&u.path), at);
            }
        }
        let r = Reply::of_fields(
            reply.status,
            reply.headers,
            reply.body,
            now.duration_since(u.sent),
        )
        .cut(reply.cut);
        let mut missed = false;
        for c in &step.captures {
            if let Err(m) = c.apply(&r, &mut u.vars) {
                *self.tally.missed[si]
                    .entry(format!("{}: {}", c.var, m.as_str()))
                    .or_default() += 1;
                missed = true;
            }
        }
        for (c, count) in step.checks.iter().zip(&mut self.checks[u.step]) {
            count.0 += 1;
            if !c.passes(&r) {
                count.1 += 1;
                u.failed = true;
            }
        }
        u.think = step.think.draw(&mut self.draw);
        if missed {
            // What the next steps would send is missing: this journey ends here.
            u.failed = true;
            u.broken = true;
            self.end(conn, now);
        } else {
            u.cursor.advance();
            let walked = u.cursor.next(
                &shared.journey.routes[u.route].ops,
                &mut u.vars,
                &mut self.draw,
            );
            u.think += u.cursor.take_pause();
            for line in u.cursor.take_said() {
                eprintln!("{line}");
            }
            match walked {
                Ok(Some(next)) => u.step = next,
                Ok(None) => self.end(conn, now),
                Err(_) => {
                    *self.tally.missed[si]
                        .entry("loop: turned without a step to send".into())
                        .or_default() += 1;
                    u.failed = true;
                    u.broken = true;
                    self.end(conn, now);
                }
            }
        }
        Flow::Go
    }

    fn delay(&mut self, conn: usize) -> (Duration, Flow) {
        let d = (self.users.get_mut(conn).and_then(Option::as_mut))
            .map_or(Duration::ZERO, |u| std::mem::take(&mut u.think));
        (d, Flow::Go)
    }

    fn finished(&mut self, conn: usize) -> bool {
        // Each session is a user of its own: the one on this slot is done once its
        // journey ended (a journey of one unread step, once its request went), and
        // the next session there is a new user, with a number and a jar of its own.
        let Some(u) = self.users.get(conn).and_then(Option::as_ref) else {
            return true;
        };
        let done = !self.responds || !u.walking;
        if done {
            if !self.responds {
                self.end(conn, Instant::now());
            }
            self.users[conn] = None;
        }
        done
    }

    fn gone(&mut self, conn: usize) {
        if let Some(u) = self.users.get_mut(conn).and_then(Option::as_mut) {
            u.failed = true;
            u.broken = true;
            u.think = Duration::ZERO;
        }
        self.end(conn, Instant::now());
    }
}

mod tally;

use tally::Tally;
pub use tally::{JourneyFigures, LiveJourneys};

#[cfg(test)]
mod tests;
