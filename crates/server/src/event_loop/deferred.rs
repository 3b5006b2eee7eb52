//! Deferred answers: what a route answers later rather than at once — after a delay,
//! as a feed of events on timers, or when a worker thread has computed it — scheduled
//! on the loop's timers and written out when due, to a connection still there.

use std::cmp::Reverse;
use std::time::{Duration, Instant};

use super::{EventLoop, LINGER_TIMER};
use crate::proto::FedNext;
use crate::routes::Deferred;
use crate::{Done, Job};

impl EventLoop {
    /// Schedules a deferred answer.
    pub(super) fn defer(
        &mut self,
        d: Deferred,
        ci: usize,
        generation: u32,
        stream: u32,
        now: Instant,
    ) {
        match d {
            // From now, not from the pass's clock: the request may have arrived after
            // the pass began, and its answer must never come sooner than asked.
            Deferred::Delay(ms) => self.timers.heap.push(Reverse((
                self.config.clock.now().max(now) + Duration::from_millis(ms),
                ci,
                generation,
                stream,
            ))),
            // Its events go out on timers; the first is due `first_ms` after the
            // request, counted as a delay's is.
            Deferred::Feed(f) => {
                let at = self.config.clock.now().max(now) + f.first;
                if let Some(c) = self.conns[ci].as_mut() {
                    c.proto.feed_from(stream, f, at);
                }
                self.timers.heap.push(Reverse((at, ci, generation, stream)));
            }
            Deferred::Biteq(id) => {
                let _ = self.compute.jobs.send(Job {
                    id,
                    conn: ci,
                    generation,
                    stream,
                    reply: self.compute.done_tx.clone(),
                    waker: self.waker.clone(),
                });
            }
        }
    }

    pub(super) fn finish_biteq(&mut self, d: Done, now: Instant) {
        self.finish_deferred(d.conn, d.generation, d.stream, &d.body, now);
    }

    pub(super) fn finish_delay(&mut self, ci: usize, generation: u32, stream: u32, now: Instant) {
        let (feeding, pushes, lingers) = match self.conns[ci]
            .as_ref()
            .filter(|c| c.generation == generation)
        {
            Some(c) => (c.proto.feeding(stream), c.proto.pushes(), c.proto.lingers()),
            None => (false, false, false),
        };
        if lingers && stream == LINGER_TIMER {
            // The client did not close its side in time.
            return self.close(ci);
        }
        if pushes {
            return self.push_next(ci, now);
        }
        if feeding {
            return self.feed_next(ci, stream, now);
        }
        self.finish_deferred(ci, generation, stream, b"delayed\n", now);
    }

    /// A streamed answer's next event is due on connection `ci`: it goes out, and the
    /// one after it goes on the timers; after the last, the connection takes requests
    /// again (or closes).
    pub(super) fn feed_next(&mut self, ci: usize, stream: u32, now: Instant) {
        let Some(c) = self.conns[ci].as_mut() else {
            return;
        };
        if c.peer_closed && !c.proto.multiplexed() {
            // The client went away mid-stream: the rest is for nobody.
            self.close(ci);
            return;
        }
        match c.proto.feed_next(stream, env!(self, c), now) {
            FedNext::Next(at) => {
                let g = c.generation;
                self.timers.heap.push(Reverse((at, ci, g, stream)));
                self.write_out(ci);
            }
            FedNext::Routed(next) => {
                if let Some(at) = next {
                    let g = c.generation;
                    self.timers.heap.push(Reverse((at, ci, g, stream)));
                }
                if !self.later.is_empty() {
                    self.defer_later(ci, now);
                }
                self.write_out(ci);
                self.after_io(ci, now);
            }
            FedNext::Done { close } => {
                c.close_after |= close;
                self.unblocked(ci, now);
            }
            FedNext::Nothing => {}
        }
    }
}
