//! Deferred answers: what a route answers later rather than at once — after a delay,
//! as a feed of events on timers, or when a worker thread has computed it — scheduled
//! on the loop's timers and written out when due, to a connection still there.

use std::cmp::Reverse;
use std::time::{Duration, Instant};

use super::{EventLoop, Proto, LINGER_TIMER};
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
            Deferred::Delay(ms) => self.delays.push(Reverse((
                Instant::now().max(now) + Duration::from_millis(ms),
                ci,
                generation,
                stream,
            ))),
            // Its events go out on timers; the first is due `first_ms` after the
            // request, counted as a delay's is.
            Deferred::Feed(f) => {
                let at = Instant::now().max(now) + f.first;
                match self.conns[ci].as_mut().map(|c| &mut c.proto) {
                    Some(Proto::H1(h)) => h.feed_from(at),
                    Some(Proto::H2(h)) => h.feed_from(stream, f, at),
                    Some(Proto::Ws(_)) | None => {}
                }
                self.delays.push(Reverse((at, ci, generation, stream)));
            }
            Deferred::Biteq(id) => {
                let _ = self.jobs.send(Job {
                    id,
                    conn: ci,
                    generation,
                    stream,
                    reply: self.done_tx.clone(),
                    waker: self.waker.clone(),
                });
            }
        }
    }

    pub(super) fn finish_biteq(&mut self, d: Done, now: Instant) {
        self.finish_deferred(d.conn, d.generation, d.stream, &d.body, now);
    }

    pub(super) fn finish_delay(&mut self, ci: usize, generation: u32, stream: u32, now: Instant) {
        let (feeding, ws) = match self.conns[ci]
            .as_ref()
            .filter(|c| c.generation == generation)
        {
            Some(c) => match &c.proto {
                Proto::H1(h) => (h.feeding(), false),
                Proto::H2(h) => (h.feeding(stream), false),
                Proto::Ws(_) => (false, true),
            },
            None => (false, false),
        };
        if ws && stream == LINGER_TIMER {
            // The client did not close its side in time.
            return self.close(ci);
        }
        if ws {
            return self.push_ws(ci, now);
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
        if c.peer_closed && !c.proto.is_h2() {
            // The client went away mid-stream: the rest is for nobody.
            self.close(ci);
            return;
        }
        self.out.clear();
        let h1 = match &mut c.proto {
            Proto::H1(h1) => h1,
            Proto::Ws(_) => return,
            Proto::H2(h2) => {
                if let crate::h1::Fed::Next(at) = h2.feed_next(&mut self.out, stream) {
                    let g = c.generation;
                    self.delays.push(Reverse((at, ci, g, stream)));
                }
                // A stream that ended makes room for requests that waited.
                self.route_h2(ci, now);
                self.after_io(ci, now);
                return;
            }
        };
        match h1.feed_next(&mut self.out, self.draining) {
            crate::h1::Fed::Next(at) => {
                let g = c.generation;
                self.delays.push(Reverse((at, ci, g, 0)));
                self.write_out(ci);
            }
            crate::h1::Fed::Done { close } => {
                c.close_after |= close;
                self.unblocked(ci, now);
            }
        }
    }
}
