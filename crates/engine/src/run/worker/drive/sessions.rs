//! The session driver: what each session of a session shape does next, decided
//! without a socket or a clock.
//!
//! Each start of a session shape is a session on a slot of its own. It makes its calls
//! in bursts (or its script's steps, in order or at their offsets), pauses, retries
//! what a failure status asked for, carries its cookie, and ends. This type keeps every
//! session's progress and answers the worker's questions (a session began; its batch
//! is answered; its think time is over; a timed step fell due; a response carried the
//! failure status) with what to send or whether the session is over. The worker puts
//! those answers on connections (`session.rs`); the tests below drive sessions through
//! their lives in simulated time.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;

use crate::spec::plan::{SessionSteps, SessionWork};
use crate::spec::Step;

/// A session in progress on a slot.
#[derive(Clone)]
struct SessionState {
    /// Calls not yet sent (retries aside).
    calls_left: u32,
    /// Next step of the script (script sessions), and where this session's steps end.
    step: u32,
    end: u32,
    /// Calls of the current burst not yet sent (a burst goes out in groups of at most
    /// `max_piped`).
    burst_left: u32,
    started: Instant,
    /// Waiting out the think time until then.
    think_until: Option<Instant>,
    /// Calls answered with the failure status, to send again once the connection's
    /// batch is answered: script steps (0 for sessions without a script).
    retry: Vec<u32>,
    /// The step the batch in flight sends again, when it is a retry.
    resending: Option<u32>,
    /// The cookie a reply set (`name=value`), sent with the session's later requests
    /// (session cookies; empty: none yet).
    cookie: Vec<u8>,
    /// Timed steps: when the next step is due, once it is on the driver's `due` heap
    /// (so that it goes there once).
    queued: Option<Instant>,
    /// The slot's responses before this session began (the session's own are those
    /// after).
    answered_before: u64,
}

/// Calls a session sends now, back to back: script steps `step..step + k`, or the
/// run's request `k` times when there is no script.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Calls {
    pub step: usize,
    pub k: usize,
}

/// What a session does once its connection's batch is answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum After {
    /// Every call is answered: the session ends.
    End,
    /// Timed steps: send what is due (see [`Sessions::due_steps`]).
    Due,
    /// Send these calls now (the rest of a burst, a retry, or the next burst).
    Send(Calls),
    /// Think first (see [`Sessions::thought`]); nothing goes out now.
    Think,
}

/// What a response with the failure status does to its session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The call is sent again once the batch is answered.
    Retry,
    /// The session fails; the calls pipelined behind it are given up.
    GiveUp,
}

/// A session that ended.
pub(crate) struct Ended {
    pub started: Instant,
    /// The slot's responses before the session began.
    pub answered_before: u64,
}

/// Session shapes' state: every session's progress, and the slots they run on.
pub(crate) struct Sessions<'a> {
    work: SessionWork,
    /// The spec's script (empty: every call sends the run's request).
    script: &'a [Step],
    /// The session on each slot, if one runs there.
    slots: Vec<Option<SessionState>>,
    /// Slots that can take a new session.
    free: Vec<usize>,
    /// Sessions in progress.
    active: usize,
    /// Where each session's steps begin and end in the script, and the one this
    /// worker's next session takes.
    scripts: Vec<(u32, u32)>,
    next_script: usize,
    /// Sessions of the run between two of this worker's: each takes the script of its
    /// place in the run's sequence of arrivals.
    script_stride: usize,
    /// Requests given up with the session a failure status ended (pipelined behind
    /// it): counted as abandoned, as at the run's end.
    given_up: u64,
    /// Timed steps due later, soonest first (entries whose session moved on are
    /// stale and skipped).
    due: BinaryHeap<Reverse<(Instant, usize)>>,
    /// When each thinking session's pause ends (entries of sessions that ended or
    /// were held anew are stale, and dropped when they come up).
    thinking: BinaryHeap<Reverse<(Instant, usize)>>,
}

/// Where each session's steps begin and end in a script (a step marked
/// `new_session` begins another).
fn script_ranges(script: &[Step]) -> Vec<(u32, u32)> {
    let mut ranges: Vec<(u32, u32)> = Vec::new();
    for (i, st) in script.iter().enumerate() {
        let i = i as u32;
        match ranges.last_mut() {
            Some(r) if !st.new_session => r.1 = i + 1,
            _ => ranges.push((i, i + 1)),
        }
    }
    ranges
}

impl<'a> Sessions<'a> {
    /// The sessions of the worker taking arrivals `lane.0`, `lane.0 + lane.1`, … of
    /// the run's sequence.
    pub fn new(work: SessionWork, script: &'a [Step], lane: (usize, usize)) -> Sessions<'a> {
        let scripts = script_ranges(script);
        Sessions {
            work,
            script,
            slots: Vec::new(),
            free: Vec::new(),
            active: 0,
            next_script: lane.0 % scripts.len().max(1),
            script_stride: lane.1,
            scripts,
            given_up: 0,
            due: BinaryHeap::new(),
            thinking: BinaryHeap::new(),
        }
    }

    /// Sessions in progress.
    pub fn active(&self) -> usize {
        self.active
    }

    /// Requests given up with sessions a failure status ended.
    pub fn given_up(&self) -> u64 {
        self.given_up
    }

    /// Whether steps go out at their offsets from the session's start.
    pub fn timed(&self) -> bool {
        self.work.steps == SessionSteps::Timed
    }

    /// Whether sessions carry the cookie their replies set.
    pub fn cookies(&self) -> bool {
        self.work.session.cookies
    }

    /// The status that fails a session, 0 when none.
    pub fn fail_status(&self) -> u16 {
        self.work.session.fail_status.unwrap_or(0)
    }

    /// Whether a session runs on `slot`.
    pub fn runs_on(&self, slot: usize) -> bool {
        matches!(self.slots.get(slot), Some(Some(_)))
    }

    /// A slot for the next session: a free one, or a new one numbered after every
    /// slot before it, which the worker then opens.
    pub fn slot(&mut self) -> usize {
        self.free.pop().unwrap_or_else(|| {
            self.slots.push(None);
            self.slots.len() - 1
        })
    }

    /// A session begins on `slot` (from [`Sessions::slot`]), meant to start at
    /// `intended`; the slot answered `answered_before` responses before it.
    pub fn begin(&mut self, slot: usize, intended: Instant, answered_before: u64) {
        let (step, end) = self.next_range();
        let calls_left = if end > 0 {
            end - step
        } else {
            self.work.session.calls
        };
        self.slots[slot] = Some(SessionState {
            calls_left,
            step,
            end,
            burst_left: 0,
            started: intended,
            think_until: None,
            retry: Vec::new(),
            resending: None,
            cookie: Vec::new(),
            queued: None,
            answered_before,
        });
        self.active += 1;
    }

    /// The steps the next session runs, `(first, end)` in the script (`(0, 0)` without
    /// one): scripts are taken in the order of the run's arrivals, this worker taking
    /// every `script_stride`-th.
    fn next_range(&mut self) -> (u32, u32) {
        match self.scripts.len() {
            0 => (0, 0),
            n => {
                let range = self.scripts[self.next_script];
                self.next_script = (self.next_script + self.script_stride) % n;
                range
            }
        }
    }

    /// The session on `slot` starts its next burst: its first group of calls.
    pub fn burst(&mut self, slot: usize) -> Option<Calls> {
        let s = self.slots.get_mut(slot)?.as_mut()?;
        s.think_until = None;
        s.burst_left = if self.script.is_empty() {
            self.work.session.burst.min(s.calls_left)
        } else {
            let first = s.step as usize;
            let joined = self.script[first + 1..s.end as usize]
                .iter()
                .take_while(|st| st.follows)
                .count();
            1 + joined as u32
        };
        self.group(slot)
    }

    /// As much of the current burst as may be pipelined at once.
    fn group(&mut self, slot: usize) -> Option<Calls> {
        let max = match self.work.session.max_piped {
            0 => u32::MAX,
            n => n,
        };
        let s = self.slots.get_mut(slot)?.as_mut()?;
        let k = s.burst_left.min(max);
        s.burst_left -= k;
        s.calls_left -= k;
        let step = s.step as usize;
        if !self.script.is_empty() {
            s.step += k;
        }
        Some(Calls {
            step,
            k: k as usize,
        })
    }

    /// Every response of the batch on `slot` is in, at `now`.
    pub fn after_batch(&mut self, slot: usize, now: Instant) -> After {
        let timed = self.timed();
        let Some(s) = self.slots.get_mut(slot).and_then(Option::as_mut) else {
            return After::Think;
        };
        if timed {
            return if s.calls_left == 0 {
                After::End
            } else {
                After::Due
            };
        }
        s.resending = s.retry.pop();
        if let Some(step) = s.resending {
            return After::Send(Calls {
                step: step as usize,
                k: 1,
            });
        }
        if s.burst_left > 0 {
            return self.group(slot).map_or(After::Think, After::Send);
        }
        if s.calls_left == 0 {
            return After::End;
        }
        let think = match self.script.get((s.step as usize).wrapping_sub(1)) {
            Some(step) => step.pause,
            None => self.work.session.think,
        };
        if think.is_zero() {
            return self.burst(slot).map_or(After::Think, After::Send);
        }
        s.think_until = Some(now + think);
        self.thinking.push(Reverse((now + think, slot)));
        After::Think
    }

    /// The session on `slot` waits until `until` before its next burst (a script's
    /// pause).
    pub fn hold(&mut self, slot: usize, until: Instant) {
        if let Some(s) = self.slots.get_mut(slot).and_then(Option::as_mut) {
            s.think_until = Some(until);
            self.thinking.push(Reverse((until, slot)));
        }
    }

    /// A slot whose pause ended by `now`, so that it is woken on time rather than at
    /// the next tick (stale entries dropped on the way).
    pub fn think_ended(&mut self, now: Instant) -> Option<usize> {
        while let Some(&Reverse((t, slot))) = self.thinking.peek() {
            if t > now {
                return None;
            }
            self.thinking.pop();
            if let Some(Some(s)) = self.slots.get(slot) {
                if s.think_until == Some(t) {
                    return Some(slot);
                }
            }
        }
        None
    }

    /// When the session on `slot` is thinking and its think time is over by `now`:
    /// the instant it ended (its next burst was meant to start then).
    pub fn thought(&self, slot: usize, now: Instant) -> Option<Instant> {
        let t = self.slots.get(slot)?.as_ref()?.think_until?;
        (now >= t).then_some(t)
    }

    /// Timed steps: the steps of the session on `slot` due by `now`, at most `room`
    /// of them (each meant to start at [`Sessions::step_at`]). The next step due
    /// later goes on the driver's heap, once.
    pub fn due_steps(&mut self, slot: usize, now: Instant, room: usize) -> Option<Calls> {
        let script = self.script;
        let s = self.slots.get_mut(slot)?.as_mut()?;
        let at = |i: u32| s.started + script[i as usize].at.unwrap_or_default();
        let first = s.step;
        let mut k = 0;
        while k < room as u32 && first + k < s.end && at(first + k) <= now {
            k += 1;
        }
        s.step += k;
        s.calls_left -= k;
        if s.step < s.end {
            let next = at(s.step);
            if next > now && s.queued != Some(next) {
                s.queued = Some(next);
                self.due.push(Reverse((next, slot)));
            }
        }
        Some(Calls {
            step: first as usize,
            k: k as usize,
        })
    }

    /// When timed step `step` of the session on `slot` is meant to start.
    pub fn step_at(&self, slot: usize, step: usize) -> Option<Instant> {
        let s = self.slots.get(slot)?.as_ref()?;
        Some(s.started + self.script.get(step)?.at.unwrap_or_default())
    }

    /// When the next timed step is due or the next pause ends, if one waits.
    pub fn next_due(&self) -> Option<Instant> {
        let step = self.due.peek().map(|Reverse((t, _))| *t);
        let think = self.thinking.peek().map(|Reverse((t, _))| *t);
        match (step, think) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// A slot whose timed step fell due by `now` (stale entries, whose session took
    /// the step early or ended, are dropped on the way).
    pub fn fell_due(&mut self, now: Instant) -> Option<usize> {
        while let Some(&Reverse((t, slot))) = self.due.peek() {
            if t > now {
                return None;
            }
            self.due.pop();
            if let Some(Some(s)) = self.slots.get_mut(slot) {
                if s.queued == Some(t) {
                    s.queued = None;
                    return Some(slot);
                }
            }
        }
        None
    }

    /// A response on `slot` carried the failure status while `pending` more calls
    /// were pipelined behind it.
    pub fn failed(&mut self, slot: usize, pending: usize) -> Failure {
        let Some(s) = self.slots.get_mut(slot).and_then(Option::as_mut) else {
            return Failure::Retry;
        };
        if self.work.session.retry {
            // HTTP/1.1 answers in order: the call answered is the one sent before the
            // requests still pending.
            let step = s
                .resending
                .unwrap_or_else(|| s.step.saturating_sub(1 + pending as u32));
            s.retry.push(if self.script.is_empty() { 0 } else { step });
            return Failure::Retry;
        }
        self.given_up += pending as u64;
        Failure::GiveUp
    }

    /// The session on `slot` is over: the slot is free for another.
    pub fn end(&mut self, slot: usize) -> Option<Ended> {
        let s = self.slots.get_mut(slot)?.take()?;
        self.active -= 1;
        self.free.push(slot);
        Some(Ended {
            started: s.started,
            answered_before: s.answered_before,
        })
    }

    /// Which request the session on `slot` is sending: the script step it is on (its
    /// last sent), or the run's one request.
    pub fn request_index(&self, slot: usize) -> usize {
        match self.slots.get(slot) {
            Some(Some(s)) if !self.script.is_empty() => (s.step as usize).saturating_sub(1),
            _ => 0,
        }
    }

    /// Whether the session on `slot` has sent its last call.
    pub fn sent_last(&self, slot: usize) -> bool {
        match self.slots.get(slot) {
            Some(Some(s)) => s.calls_left == 0 && s.burst_left == 0 && s.retry.is_empty(),
            _ => true,
        }
    }

    /// The cookie the session on `slot` carries (empty: none yet).
    pub fn cookie(&self, slot: usize) -> &[u8] {
        match self.slots.get(slot) {
            Some(Some(s)) => &s.cookie,
            _ => &[],
        }
    }

    /// A reply set `pair` (`name=value`): the session sends it from now on, in place
    /// of any before.
    pub fn keep_cookie(&mut self, slot: usize, pair: &str) {
        if let Some(Some(s)) = self.slots.get_mut(slot) {
            s.cookie.clear();
            s.cookie.extend_from_slice(pair.as_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Session;
    use crate::{Request, RequestBuilder, Target};
    use std::time::Duration;

    fn request() -> Request {
        let t = Target::parse("http://127.0.0.1:9/").unwrap();
        RequestBuilder::native(&t, "GET", true).build().unwrap()
    }

    fn work(session: Session, steps: SessionSteps) -> SessionWork {
        SessionWork { session, steps }
    }

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_script_splits_into_sessions_where_a_step_begins_one() {
        let step = |new_session| {
            let mut s = Step::new(request(), Duration::ZERO);
            s.new_session = new_session;
            s
        };
        assert_eq!(script_ranges(&[]), Vec::<(u32, u32)>::new());
        // The first step begins a session whether marked or not.
        let script = [
            step(false),
            step(false),
            step(true),
            step(true),
            step(false),
        ];
        assert_eq!(script_ranges(&script), vec![(0, 2), (2, 3), (3, 5)]);
    }

    #[test]
    fn sessions_take_the_scripts_of_their_places_in_the_runs_arrivals() {
        // Three scripts, this worker the second of two: it takes arrivals 1, 3, 5, …,
        // so scripts 1, 0, 2, 1, …
        let one = |new_session| {
            let mut s = Step::new(request(), Duration::ZERO);
            s.new_session = new_session;
            s
        };
        let script = [one(true), one(true), one(false), one(true)];
        let mut s = Sessions::new(
            work(Session::default(), SessionSteps::Script),
            &script,
            (1, 2),
        );
        let taken: Vec<(u32, u32)> = (0..4).map(|_| s.next_range()).collect();
        assert_eq!(taken, vec![(1, 3), (0, 1), (3, 4), (1, 3)]);
        // Without a script every session is `(0, 0)`.
        let mut s = Sessions::new(work(Session::default(), SessionSteps::Calls), &[], (0, 1));
        assert_eq!(s.next_range(), (0, 0));
    }

    #[test]
    fn a_session_makes_its_calls_in_bursts_with_think_time_between() {
        // httperf's --wsess=1,5,0.01 with --burst-length 2: bursts of 2, 2, 1, each
        // 10 ms after the last answer of the one before.
        let session = Session {
            calls: 5,
            burst: 2,
            think: 10 * MS,
            ..Session::default()
        };
        let mut s = Sessions::new(work(session, SessionSteps::Calls), &[], (0, 1));
        let t0 = Instant::now();
        let slot = s.slot();
        assert_eq!(slot, 0);
        s.begin(slot, t0, 0);
        assert_eq!(s.active(), 1);
        assert_eq!(s.burst(slot), Some(Calls { step: 0, k: 2 }));
        assert!(!s.sent_last(slot));
        // Answered at 3 ms: think until 13 ms; nothing is due at 12 ms.
        assert_eq!(s.after_batch(slot, t0 + 3 * MS), After::Think);
        assert_eq!(s.thought(slot, t0 + 12 * MS), None);
        assert_eq!(s.thought(slot, t0 + 14 * MS), Some(t0 + 13 * MS));
        assert_eq!(s.burst(slot), Some(Calls { step: 0, k: 2 }));
        // Thinking is over once the burst went out.
        assert_eq!(s.thought(slot, t0 + 20 * MS), None);
        assert_eq!(s.after_batch(slot, t0 + 20 * MS), After::Think);
        assert_eq!(s.burst(slot), Some(Calls { step: 0, k: 1 }));
        assert!(s.sent_last(slot));
        assert_eq!(s.after_batch(slot, t0 + 40 * MS), After::End);
        let ended = s.end(slot).unwrap();
        assert_eq!(ended.started, t0);
        assert_eq!(s.active(), 0);
        assert!(!s.runs_on(slot));
        // The slot is taken again by the next session, which counts its answers anew.
        assert_eq!(s.slot(), slot);
        s.begin(slot, t0 + 50 * MS, 5);
        assert_eq!(s.end(slot).unwrap().answered_before, 5);
        assert!(s.end(slot).is_none());
    }

    #[test]
    fn a_burst_goes_out_in_groups_of_max_piped() {
        let session = Session {
            calls: 5,
            burst: 5,
            max_piped: 2,
            ..Session::default()
        };
        let mut s = Sessions::new(work(session, SessionSteps::Calls), &[], (0, 1));
        let t0 = Instant::now();
        let slot = s.slot();
        s.begin(slot, t0, 0);
        assert_eq!(s.burst(slot), Some(Calls { step: 0, k: 2 }));
        // The rest of the burst follows each answered group with no think time.
        for k in [2, 1] {
            assert_eq!(s.after_batch(slot, t0), After::Send(Calls { step: 0, k }));
        }
        assert_eq!(s.after_batch(slot, t0), After::End);
    }

    #[test]
    fn a_script_session_sends_its_steps_in_order_following_ones_together() {
        // Steps 0 and 1 in one burst (1 follows 0), then 2 after its pause.
        let mut script = vec![
            Step::new(request(), Duration::ZERO),
            Step::new(request(), 5 * MS),
            Step::new(request(), Duration::ZERO),
        ];
        script[1].follows = true;
        let mut s = Sessions::new(
            work(Session::default(), SessionSteps::Script),
            &script,
            (0, 1),
        );
        let t0 = Instant::now();
        let slot = s.slot();
        s.begin(slot, t0, 0);
        assert_eq!(s.burst(slot), Some(Calls { step: 0, k: 2 }));
        assert_eq!(s.request_index(slot), 1);
        // The pause is the last step's of the burst, and its end is due: the loop
        // wakes for it, not at its next tick.
        assert_eq!(s.after_batch(slot, t0 + MS), After::Think);
        assert_eq!(s.next_due(), Some(t0 + 6 * MS));
        assert_eq!(s.think_ended(t0 + 5 * MS), None);
        assert_eq!(s.think_ended(t0 + 6 * MS), Some(slot));
        assert_eq!(s.thought(slot, t0 + 6 * MS), Some(t0 + 6 * MS));
        assert_eq!(s.burst(slot), Some(Calls { step: 2, k: 1 }));
        assert_eq!(s.after_batch(slot, t0 + 7 * MS), After::End);
    }

    #[test]
    fn a_failure_status_retries_the_call_or_gives_the_session_up() {
        let session = Session {
            calls: 3,
            burst: 3,
            fail_status: Some(503),
            retry: true,
            ..Session::default()
        };
        let mut s = Sessions::new(work(session, SessionSteps::Calls), &[], (0, 1));
        assert_eq!(s.fail_status(), 503);
        let t0 = Instant::now();
        let slot = s.slot();
        s.begin(slot, t0, 0);
        s.burst(slot);
        // The first of three answered 503: it goes again once the batch is in, alone.
        assert_eq!(s.failed(slot, 2), Failure::Retry);
        assert!(!s.sent_last(slot));
        assert_eq!(
            s.after_batch(slot, t0),
            After::Send(Calls { step: 0, k: 1 })
        );
        assert_eq!(s.after_batch(slot, t0), After::End);
        // Without retries the session fails and the two behind it are given up.
        let session = Session {
            retry: false,
            ..session
        };
        let mut s = Sessions::new(work(session, SessionSteps::Calls), &[], (0, 1));
        let slot = s.slot();
        s.begin(slot, t0, 0);
        s.burst(slot);
        assert_eq!(s.failed(slot, 2), Failure::GiveUp);
        assert_eq!(s.given_up(), 2);
    }

    #[test]
    fn timed_steps_go_out_at_their_offsets_within_the_room() {
        // h2load's timing script: steps at 0, 10 and 10 ms, then 30 ms.
        let script: Vec<Step> = [0, 10, 10, 30]
            .iter()
            .map(|&ms| Step::timed(request(), ms * MS))
            .collect();
        let mut s = Sessions::new(
            work(Session::default(), SessionSteps::Timed),
            &script,
            (0, 1),
        );
        assert!(s.timed());
        let t0 = Instant::now();
        let slot = s.slot();
        s.begin(slot, t0, 0);
        // At the start, the first step; the next is queued for 10 ms, once.
        assert_eq!(s.due_steps(slot, t0, 8), Some(Calls { step: 0, k: 1 }));
        assert_eq!(s.step_at(slot, 0), Some(t0));
        assert_eq!(s.next_due(), Some(t0 + 10 * MS));
        assert_eq!(s.due_steps(slot, t0 + MS, 8), Some(Calls { step: 1, k: 0 }));
        assert_eq!(s.due.len(), 1);
        assert_eq!(s.fell_due(t0 + 9 * MS), None);
        assert_eq!(s.fell_due(t0 + 10 * MS), Some(slot));
        // Room for one only: the second due step waits for room, timed from 10 ms.
        assert_eq!(
            s.due_steps(slot, t0 + 10 * MS, 1),
            Some(Calls { step: 1, k: 1 })
        );
        assert_eq!(s.after_batch(slot, t0 + 12 * MS), After::Due);
        assert_eq!(
            s.due_steps(slot, t0 + 12 * MS, 1),
            Some(Calls { step: 2, k: 1 })
        );
        assert_eq!(s.step_at(slot, 2), Some(t0 + 10 * MS));
        assert_eq!(s.next_due(), Some(t0 + 30 * MS));
        // The session took its last step early (room came at 30 ms by a response):
        // the heap's entry is stale once it ends.
        assert_eq!(
            s.due_steps(slot, t0 + 30 * MS, 1),
            Some(Calls { step: 3, k: 1 })
        );
        assert_eq!(s.after_batch(slot, t0 + 31 * MS), After::End);
        s.end(slot);
        assert_eq!(s.fell_due(t0 + 40 * MS), None);
        assert_eq!(s.next_due(), None);
    }

    #[test]
    fn a_session_keeps_the_last_cookie_set() {
        let session = Session {
            cookies: true,
            ..Session::default()
        };
        let mut s = Sessions::new(work(session, SessionSteps::Calls), &[], (0, 1));
        assert!(s.cookies());
        let slot = s.slot();
        s.begin(slot, Instant::now(), 0);
        assert_eq!(s.cookie(slot), b"");
        s.keep_cookie(slot, "a=1");
        s.keep_cookie(slot, "b=2");
        assert_eq!(s.cookie(slot), b"b=2");
        // A new session on the slot starts without one.
        s.end(slot);
        let again = s.slot();
        s.begin(again, Instant::now(), 1);
        assert_eq!(s.cookie(again), b"");
    }
}
