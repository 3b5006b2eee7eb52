//! The session driver: each start of a session shape is a session on a slot of its
//! own, making its calls in bursts (or its script's steps, in order or at their
//! offsets), pausing, retrying what a failure status asked for, carrying its cookie,
//! and closing. Pool shapes never come here.

use std::cmp::Reverse;
use std::time::Instant;

use super::conn::{fresh_proto, Conn, Pending, State};
use super::state::SessionState;
use super::{Worker, SESSIONS_PER_WAKE};
use crate::run::schedule::Next;

impl Worker<'_> {
    pub(super) fn dispatch_sessions(&mut self, now: Instant) {
        for _ in 0..SESSIONS_PER_WAKE {
            match self.schedule.next(now, self.sess.active) {
                Next::Send { intended } => {
                    self.rec.lag(intended, now);
                    let intended = intended.min(now);
                    let ci = match self.sess.free.pop() {
                        Some(ci) => ci,
                        None => {
                            let mut proto = fresh_proto(self.spec);
                            if let (true, Some(h1)) = (self.prep.respond, proto.h1()) {
                                h1.keep_responses();
                            }
                            self.conns
                                .push(Conn::new(proto, self.spec.load.pipeline, now));
                            self.conns.len() - 1
                        }
                    };
                    let (step, end) = self.sess.next_range();
                    let calls = if end > 0 {
                        end - step
                    } else {
                        self.spec.load.session.calls
                    };
                    self.conns[ci].session = Some(SessionState {
                        calls_left: calls,
                        step,
                        end,
                        burst_left: 0,
                        started: intended,
                        think_until: None,
                        retry: Vec::new(),
                        resending: None,
                        cookie: Vec::new(),
                        queued: None,
                        answered_before: self.conns[ci].completed_total,
                    });
                    self.sess.active += 1;
                    self.rec.sessions_started += 1;
                    self.rec.max_concurrent = self.rec.max_concurrent.max(self.sess.active as u64);
                    if self.sess.timed {
                        self.start_timed(ci, now);
                    } else {
                        self.next_burst(ci, intended, now);
                    }
                }
                Next::Wait(t) => {
                    self.pace.wake_at = Some(t);
                    return;
                }
                Next::Done => {
                    self.pace.sending_done = true;
                    return;
                }
            }
        }
        // More may be due at once (atOnceUsers): the loop checks the stop switch, the
        // end and the sockets first, then comes straight back.
        self.pace.wake_at = Some(now);
    }

    /// Starts the session's next burst; its requests were meant to start at
    /// `intended`.
    pub(super) fn next_burst(&mut self, ci: usize, intended: Instant, now: Instant) {
        let Some(s) = self.conns[ci].session.as_mut() else {
            return;
        };
        s.think_until = None;
        s.burst_left = if self.spec.load.script.is_empty() {
            self.spec.load.session.burst.min(s.calls_left)
        } else {
            let first = s.step as usize;
            let joined = self.spec.load.script[first + 1..s.end as usize]
                .iter()
                .take_while(|st| st.follows)
                .count();
            1 + joined as u32
        };
        self.send_group(ci, intended, now);
    }

    /// A timed session begins: it connects at once (as h2load's clients do before
    /// their first step), and sends what is due.
    #[cold]
    pub(super) fn start_timed(&mut self, ci: usize, now: Instant) {
        self.send_due(ci, now);
        let c = &self.conns[ci];
        if c.session.is_some() && c.link.state() == State::Closed {
            self.connect(ci, now);
        }
    }

    /// Timed steps: sends the session's steps that are due, as many as the connection
    /// has room for, each timed from its offset; then puts the session on the
    /// `delayed` heap for its next step (a due step kept waiting for room goes out
    /// when a response makes some). HTTP/1.1 sends only when the bytes before are
    /// written, and not while the connection is being made (it sends then).
    #[cold]
    pub(super) fn send_due(&mut self, ci: usize, now: Instant) {
        let room = self.room(ci);
        let c = &mut self.conns[ci];
        let Some(s) = c.session.as_mut() else { return };
        let ready = match c.link.state() {
            State::Open => c.proto.is_h2() || !c.proto.has_output(),
            State::Closed => true,
            _ => false,
        };
        let script = &self.spec.load.script;
        let at = |i: u32| s.started + script[i as usize].at.unwrap_or_default();
        let first = s.step;
        let mut k = 0;
        while ready && k < room as u32 && first + k < s.end && at(first + k) <= now {
            let intended = at(first + k);
            self.rec.lag(intended, now);
            c.pending.push_back(Pending::new(intended, now));
            k += 1;
        }
        s.step += k;
        s.calls_left -= k;
        if s.step < s.end {
            let next = at(s.step);
            if next > now && s.queued != Some(next) {
                s.queued = Some(next);
                self.delayed.push(Reverse((next, ci)));
            }
        }
        if k > 0 {
            self.send_steps(ci, first as usize, k as usize, now);
        }
    }

    /// Sends as much of the current burst as may be pipelined at once.
    pub(super) fn send_group(&mut self, ci: usize, intended: Instant, now: Instant) {
        let max = match self.spec.load.session.max_piped {
            0 => u32::MAX,
            n => n,
        };
        let c = &mut self.conns[ci];
        let Some(s) = c.session.as_mut() else { return };
        let k = s.burst_left.min(max);
        s.burst_left -= k;
        s.calls_left -= k;
        for _ in 0..k {
            c.pending.push_back(Pending::new(intended, now));
        }
        let step = s.step as usize;
        if !self.spec.load.script.is_empty() {
            s.step += k;
        }
        self.send_steps(ci, step, k as usize, now);
    }

    /// Sends a session's next `k` calls, back to back: script steps `step..step + k`,
    /// or the run's request `k` times when there is no script.
    pub(super) fn send_steps(&mut self, ci: usize, step: usize, k: usize, now: Instant) {
        if !self.spec.load.variety.is_empty() {
            // The run's walk over its requests (validate allows no other list here).
            let Some(len) = self.build_request(ci, k) else {
                // The walk ended the run: these calls are not sent.
                let c = &mut self.conns[ci];
                c.pending.truncate(c.pending.len().saturating_sub(k));
                return;
            };
            return self.start_batch(ci, k, 0, len, now);
        }
        let (base, end) = if self.spec.load.script.is_empty() {
            (0, k * self.prep.req_len)
        } else {
            if let Some(h1) = self.conns[ci].proto.h1() {
                h1.set_head_request(self.spec.load.script[step].request.is_head());
            }
            (self.prep.offsets[step], self.prep.offsets[step + k])
        };
        if self.sess.cookies {
            let len = self.with_cookie(ci, base, end);
            return self.start_batch(ci, k, 0, len, now);
        }
        self.start_batch(ci, k, base, end - base, now);
    }

    /// Copies the requests `base..end` of the prepared bytes into the connection's own
    /// buffer, each with the session's cookie (if a reply set one) as its last header.
    /// Returns their length.
    #[cold]
    pub(super) fn with_cookie(&mut self, ci: usize, base: usize, end: usize) -> usize {
        let batch = &self.prep.batch[base..end];
        let c = &mut self.conns[ci];
        c.own.clear();
        let cookie = c.session.as_ref().map_or(&[][..], |s| &s.cookie[..]);
        // Requests the engine built have a Content-Length when they have a body.
        match crate::run::hooks::request_spans(batch) {
            Ok(spans) if !cookie.is_empty() => {
                let mut at = 0;
                for (head, body) in spans {
                    c.own.extend_from_slice(&batch[at..at + head - 2]);
                    c.own.extend_from_slice(b"Cookie: ");
                    c.own.extend_from_slice(cookie);
                    c.own.extend_from_slice(b"\r\n\r\n");
                    c.own.extend_from_slice(&batch[at + head..at + head + body]);
                    at += head + body;
                }
            }
            _ => c.own.extend_from_slice(batch),
        }
        c.own.len()
    }

    /// A response carried the failure status: the call is sent again once the
    /// connection's batch is answered, or the session fails (requests pipelined
    /// behind it are given up).
    #[cold]
    pub(super) fn failure_status(&mut self, ci: usize, now: Instant) {
        let c = &mut self.conns[ci];
        let Some(s) = c.session.as_mut() else { return };
        if self.spec.load.session.retry {
            // HTTP/1.1 answers in order: the call answered is the one sent before the
            // requests still pending.
            let step = s
                .resending
                .unwrap_or_else(|| s.step.saturating_sub(1 + c.pending.len() as u32));
            s.retry.push(if self.spec.load.script.is_empty() {
                0
            } else {
                step
            });
            return;
        }
        let behind = c.pending.len() as u64;
        c.pending.clear();
        if self.script.watch_sends {
            self.show_gone(ci);
        }
        self.in_flight -= behind;
        self.sess.given_up += behind;
        self.end_session(ci, now, false);
    }

    /// The session on `ci` is over: close its connection and free the slot.
    pub(super) fn end_session(&mut self, ci: usize, now: Instant, ok: bool) {
        let Some(s) = self.conns[ci].session.take() else {
            return;
        };
        self.drop_socket(ci);
        self.rec.session_end(s.started, now, ok);
        // Responses per session, as the pool's per connection (h2load's per client).
        let answered = self.conns[ci].completed_total - s.answered_before;
        self.rec.hist.per_connection.0.saturating_record(answered);
        self.sess.active -= 1;
        self.sess.free.push(ci);
        // A closed-model schedule may start a replacement at once.
        self.pace.wake_at = None;
    }
}
