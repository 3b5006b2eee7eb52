//! Batches built per connection (by the script, from the run's requests in turn or
//! by the run's walk, with a session's cookie) and the script's say over the loop:
//! what it is shown of each write, its delay before a batch, and its stop.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::drive::Drive;
use super::Worker;
use crate::run::hooks::Flow;

impl Worker<'_> {
    /// Shows the script the requests connection `ci` is about to write.
    #[cold]
    pub(super) fn show_sent(&mut self, ci: usize, base: usize, len: usize) {
        let bytes = if self.prep.dynamic {
            &self.conns[ci].own
        } else {
            &self.prep.batch
        };
        if let Some(h) = self.script.hooks.as_mut() {
            h.sent(ci, &bytes[base..base + len]);
        }
    }

    /// Tells the script that the requests still unanswered on `ci` are gone.
    #[cold]
    pub(super) fn show_gone(&mut self, ci: usize) {
        if let Some(h) = self.script.hooks.as_mut() {
            h.gone(ci);
        }
    }

    /// The script, or the run's requests in turn, build the batch of `claimed`
    /// requests of connection `ci` into its own buffer. Returns the bytes' length, or
    /// `None` when the script stopped the thread or the run.
    pub(super) fn build_request(&mut self, ci: usize, claimed: usize) -> Option<usize> {
        let variety = &self.cfg.sends.variety;
        if !variety.is_empty() {
            let c = &mut self.conns[ci];
            c.own.clear();
            // HTTP/2 takes its turns as streams open.
            if c.proto.multiplexed() {
                return Some(0);
            }
            if let Some(walk) = self.cfg.sends.walk {
                let first = self
                    .shared
                    .calls
                    .fetch_add(claimed as u64, Ordering::Relaxed);
                if walk.once && first + claimed as u64 > variety.len() as u64 {
                    // Through the list once: the run ends, as httperf's does.
                    self.script.stopped = true;
                    self.shared.control.stop();
                    return None;
                }
                let pick = |j: usize| walk.index(first + j as u64, variety.len());
                c.proto.set_head_request(variety[pick(0)].is_head());
                // The claimed requests are the last pending; each notes its target.
                let from = c.pending.len().saturating_sub(claimed);
                for j in 0..claimed {
                    let i = pick(j);
                    c.own.extend_from_slice(&variety[i].bytes);
                    if let Some(p) = c.pending.get_mut(from + j) {
                        p.target = i as u32;
                    }
                }
                return Some(c.own.len());
            }
            c.proto.set_head_request(variety[c.turn].is_head());
            let from = c.pending.len().saturating_sub(claimed);
            for j in 0..claimed {
                c.own.extend_from_slice(&variety[c.turn].bytes);
                if let Some(p) = c.pending.get_mut(from + j) {
                    p.target = c.turn as u32;
                }
                c.turn = (c.turn + 1) % variety.len();
            }
            return Some(c.own.len());
        }
        let Some(hooks) = self.script.hooks.as_mut() else {
            // The run's one request, in the connection's own buffer (where a redirect
            // writes the request that follows it).
            let c = &mut self.conns[ci];
            c.own.clear();
            c.own
                .extend_from_slice(&self.prep.batch[..claimed * self.prep.req_len]);
            return Some(c.own.len());
        };
        let c = &mut self.conns[ci];
        c.own.clear();
        let flow = hooks.request(ci, &mut c.own);
        let target = hooks.target(ci);
        if !self.settle_flow(flow) {
            return None;
        }
        let c = &mut self.conns[ci];
        if target > 0 {
            let from = c.pending.len().saturating_sub(claimed);
            for p in c.pending.iter_mut().skip(from) {
                p.target = target;
            }
        }
        c.proto.set_head_request(c.own.starts_with(b"HEAD "));
        Some(c.own.len())
    }

    /// Requests claimed for a batch the script did not build go back unsent (the
    /// thread or the run is stopping).
    pub(super) fn drop_claimed(&mut self, ci: usize) {
        self.conns[ci].pending.clear();
        self.make_idle(ci);
    }

    /// Acts on what a script's hook asked. Returns false when this thread is to stop.
    pub(super) fn settle_flow(&mut self, flow: Flow) -> bool {
        match flow {
            Flow::Go => true,
            Flow::StopThread => {
                self.script.stopped = true;
                false
            }
            Flow::StopRun => {
                self.script.stopped = true;
                self.shared.control.stop();
                false
            }
        }
    }

    /// Connection `ci` waits out the script's delay before its next batch.
    pub(super) fn delay(&mut self, ci: usize, now: Instant) {
        let Some(h) = self.script.hooks.as_mut() else {
            return self.make_idle(ci);
        };
        let (d, flow) = h.delay(ci);
        if !self.settle_flow(flow) || d.is_zero() {
            return self.make_idle(ci);
        }
        if let Drive::Pool(pool) = &mut self.drive {
            pool.delay(ci, now + d);
        }
    }

    /// What the driver had waiting is due: pool connections whose delay is over take
    /// requests again; timed session steps go out, and sessions whose pause ended
    /// send their next burst.
    #[inline(never)]
    pub(super) fn release_due(&mut self, now: Instant) {
        if let Drive::Pool(pool) = &mut self.drive {
            return pool.release(now);
        }
        while let Drive::Sessions(sess) = &mut self.drive {
            let Some(ci) = sess.fell_due(now) else {
                break;
            };
            self.send_due(ci, now);
        }
        // Pauses that ended: their sessions go on now, each timed from its pause's end.
        while let Drive::Sessions(sess) = &mut self.drive {
            let Some(ci) = sess.think_ended(now) else {
                return;
            };
            self.think_over(ci, now);
        }
    }
}
