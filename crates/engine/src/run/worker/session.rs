//! The worker's side of session shapes: it puts the session driver's answers (see
//! [`super::drive::Sessions`]) on connections. Each start opens a session on a slot
//! of its own; its calls are queued and written as the driver says, with the cookie
//! its replies set, and its connection closes when it ends. Pool shapes never come
//! here.

use std::time::Instant;

use super::conn::{Conn, Pending, State};
use super::drive::{After, Calls, Drive, Failure};
use super::{Worker, SESSIONS_PER_WAKE};
use crate::run::schedule::Next;

impl Worker<'_> {
    pub(super) fn dispatch_sessions(&mut self, now: Instant) {
        for _ in 0..SESSIONS_PER_WAKE {
            let Drive::Sessions(sess) = &mut self.drive else {
                return;
            };
            match self.schedule.next(now, sess.active()) {
                Next::Send { intended } => {
                    self.rec.lag(intended, now);
                    let intended = intended.min(now);
                    let ci = sess.slot();
                    if ci == self.conns.len() {
                        let mut proto = self.connector.fresh();
                        if self.prep.respond {
                            proto.keep_responses();
                        }
                        self.conns
                            .push(Conn::new(proto, self.cfg.size.pipeline, now));
                    }
                    sess.begin(ci, intended, self.conns[ci].completed_total);
                    self.rec.sessions.started += 1;
                    self.rec.sessions.max_concurrent =
                        self.rec.sessions.max_concurrent.max(sess.active() as u64);
                    if sess.timed() {
                        self.start_timed(ci, now);
                    } else {
                        let calls = sess.burst(ci);
                        self.send_calls(ci, calls, intended, now);
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

    /// The batch of the session on `ci` is answered: what the driver says comes next.
    pub(super) fn session_batch_done(&mut self, ci: usize, now: Instant) {
        if self.script.sessions_built {
            return self.built_session_answered(ci, now);
        }
        let Drive::Sessions(sess) = &mut self.drive else {
            return;
        };
        match sess.after_batch(ci, now) {
            After::End => self.end_session(ci, now, true),
            After::Due => self.send_due(ci, now),
            After::Send(calls) => self.send_calls(ci, Some(calls), now, now),
            After::Think => {}
        }
    }

    /// A session the script drives had its request answered: it ends when the
    /// script's user is done, or sends its next request after the script's pause
    /// (timed from the pause's end).
    #[cold]
    fn built_session_answered(&mut self, ci: usize, now: Instant) {
        let Some(h) = self.script.hooks.as_mut() else {
            return;
        };
        if h.finished(ci) {
            return self.end_session(ci, now, true);
        }
        let (pause, flow) = h.delay(ci);
        if !self.settle_flow(flow) {
            return self.end_session(ci, now, false);
        }
        let Drive::Sessions(sess) = &mut self.drive else {
            return;
        };
        if pause.is_zero() {
            let calls = sess.burst(ci);
            self.send_calls(ci, calls, now, now);
        } else {
            sess.hold(ci, now + pause);
        }
    }

    /// Sessions whose think time is over by `now` start their next burst, timed from
    /// when it ended.
    pub(super) fn think_over(&mut self, ci: usize, now: Instant) {
        let Drive::Sessions(sess) = &mut self.drive else {
            return;
        };
        if let Some(t) = sess.thought(ci, now) {
            let calls = sess.burst(ci);
            self.send_calls(ci, calls, t, now);
        }
    }

    /// A timed session begins: it connects at once (as h2load's clients do before
    /// their first step), and sends what is due.
    #[cold]
    fn start_timed(&mut self, ci: usize, now: Instant) {
        self.send_due(ci, now);
        if self.drive.session_on(ci) && self.conns[ci].link.state() == State::Closed {
            self.connect(ci, now);
        }
    }

    /// Timed steps: sends the session's steps that are due, as many as the connection
    /// has room for, each timed from its offset (a due step kept waiting for room goes
    /// out when a response makes some). HTTP/1.1 sends only when the bytes before are
    /// written, and not while the connection is being made (it sends then).
    #[cold]
    pub(super) fn send_due(&mut self, ci: usize, now: Instant) {
        let room = self.room(ci);
        let c = &mut self.conns[ci];
        let ready = match c.link.state() {
            State::Open => c.proto.multiplexed() || !c.proto.has_output(),
            State::Closed => true,
            _ => false,
        };
        let Drive::Sessions(sess) = &mut self.drive else {
            return;
        };
        let Some(calls) = sess.due_steps(ci, now, if ready { room } else { 0 }) else {
            return;
        };
        // A script's steps are the run's targets; without one, every call is the run's
        // one request.
        let steps = !self.cfg.sends.script.is_empty();
        for step in calls.step..calls.step + calls.k {
            let intended = sess.step_at(ci, step).unwrap_or(now);
            self.rec.lag(intended, now);
            c.pending.push_back(Pending {
                target: if steps { step as u32 } else { 0 },
                ..Pending::new(intended, now)
            });
        }
        if calls.k > 0 {
            self.send_steps(ci, calls.step, calls.k, now);
        }
    }

    /// Queues `calls` on `ci`, meant to start at `intended`, and sends them.
    fn send_calls(&mut self, ci: usize, calls: Option<Calls>, intended: Instant, now: Instant) {
        let Some(Calls { step, k }) = calls else {
            return;
        };
        let steps = !self.cfg.sends.script.is_empty();
        let c = &mut self.conns[ci];
        for j in 0..k {
            c.pending.push_back(Pending {
                target: if steps { (step + j) as u32 } else { 0 },
                ..Pending::new(intended, now)
            });
        }
        self.send_steps(ci, step, k, now);
    }

    /// Sends a session's next `k` calls, back to back: script steps `step..step + k`,
    /// or the run's request `k` times when there is no script.
    fn send_steps(&mut self, ci: usize, step: usize, k: usize, now: Instant) {
        if !self.cfg.sends.variety.is_empty() || self.script.sessions_built {
            // The run's walk over its requests (validate allows no other list here), or
            // the request the script builds for its user.
            let Some(len) = self.build_request(ci, k) else {
                // The walk ended the run: these calls are not sent.
                let c = &mut self.conns[ci];
                c.pending.truncate(c.pending.len().saturating_sub(k));
                return;
            };
            return self.start_batch(ci, k, 0, len, now);
        }
        let (base, end) = if self.cfg.sends.script.is_empty() {
            (0, k * self.prep.req_len)
        } else {
            let head = self.cfg.sends.script[step].request.is_head();
            self.conns[ci].proto.set_head_request(head);
            (self.prep.offsets[step], self.prep.offsets[step + k])
        };
        if matches!(&self.drive, Drive::Sessions(s) if s.cookies()) {
            let len = self.with_cookie(ci, base, end);
            return self.start_batch(ci, k, 0, len, now);
        }
        self.start_batch(ci, k, base, end - base, now);
    }

    /// Copies the requests `base..end` of the prepared bytes into the connection's own
    /// buffer, each with the session's cookie (if a reply set one) as its last header.
    /// Returns their length.
    #[cold]
    fn with_cookie(&mut self, ci: usize, base: usize, end: usize) -> usize {
        let batch = &self.prep.batch[base..end];
        let c = &mut self.conns[ci];
        c.own.clear();
        let cookie = match &self.drive {
            Drive::Sessions(s) => s.cookie(ci),
            Drive::Pool(_) => &[],
        };
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
        let Drive::Sessions(sess) = &mut self.drive else {
            return;
        };
        let behind = self.conns[ci].pending.len();
        if sess.failed(ci, behind) == Failure::Retry {
            return;
        }
        self.conns[ci].pending.clear();
        if self.script.watch_sends {
            self.show_gone(ci);
        }
        self.in_flight -= behind as u64;
        self.end_session(ci, now, false);
    }

    /// The session on `ci` is over: close its connection and free the slot.
    pub(super) fn end_session(&mut self, ci: usize, now: Instant, ok: bool) {
        let Drive::Sessions(sess) = &mut self.drive else {
            return;
        };
        let Some(s) = sess.end(ci) else {
            return;
        };
        self.drop_socket(ci);
        self.rec.session_end(s.started, now, ok);
        // Responses per session, as the pool's per connection (h2load's per client).
        let answered = self.conns[ci].completed_total - s.answered_before;
        self.rec.hist.per_connection.0.saturating_record(answered);
        // A closed-model schedule may start a replacement at once.
        self.pace.wake_at = None;
    }
}
