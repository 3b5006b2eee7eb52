//! Dispatch: what the worker starts when the schedule says a request (or, in session
//! shapes, a session) is due — which free connection takes it, how many requests a
//! connection takes at once (a batch of pipelined requests, or HTTP/2 streams up to
//! the server's limit), and how connections rejoin the free list when they are idle.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::conn::{Pending, State};
use super::drive::Drive;
use super::Worker;
use crate::error::ErrorKind;
use crate::run::schedule::Next;

impl Worker<'_> {
    /// Starts what the schedule says is due: requests on free connections (pool
    /// shapes) or new sessions (session shapes).
    pub(super) fn dispatch(&mut self, now: Instant) {
        if self.pace.sending_done {
            return;
        }
        if self
            .pace
            .wake_at
            .is_some_and(|w| now + self.pace.horizon < w)
        {
            return;
        }
        self.pace.wake_at = None;
        if let Drive::Sessions(_) = self.drive {
            return self.dispatch_sessions(now);
        }
        while let Some(ci) = self.next_free() {
            let mut claimed = 0;
            // HTTP/1: an idle connection has nothing pending. HTTP/2: refill the streams.
            let room = self.room(ci);
            if room == 0 {
                // HTTP/2 at the server's stream limit: it rejoins when a stream ends.
                self.take_free();
                continue;
            }
            while claimed < room {
                match self.schedule.next(now, 0) {
                    Next::Send { intended } => {
                        self.rec.lag(intended, now);
                        // One sent ahead of its time (within the horizon) is timed
                        // from its send.
                        self.conns[ci]
                            .pending
                            .push_back(Pending::new(intended.min(now), now));
                        claimed += 1;
                    }
                    Next::Wait(t) => {
                        self.pace.wake_at = Some(t);
                        break;
                    }
                    Next::Done => {
                        self.pace.sending_done = true;
                        break;
                    }
                }
            }
            if claimed == 0 {
                return;
            }
            self.take_free();
            let len = if self.prep.dynamic {
                match self.build_request(ci, claimed) {
                    Some(len) => len,
                    None => return self.drop_claimed(ci),
                }
            } else {
                claimed * self.prep.req_len
            };
            self.start_batch(ci, claimed, 0, len, now);
            if self.pace.sending_done || self.pace.wake_at.is_some() {
                if self.pace.wake_at.is_some() && self.spare_streams(ci) {
                    // Streams to spare: the next start goes on this connection when it
                    // falls due, not once an answer comes (with one connection, a start
                    // would otherwise wait for the server).
                    self.make_idle(ci);
                }
                return;
            }
        }
        // Every connection is busy: if an arrival is already due, the pool is the limit.
        if self.schedule.is_due(now) {
            self.rec.tally.starved += 1;
        }
    }

    /// Writes (or connects for) `claimed` requests just queued on `ci`: `len` bytes of
    /// the request bytes from `base` (HTTP/1; HTTP/2 writes frames of its own).
    pub(super) fn start_batch(
        &mut self,
        ci: usize,
        claimed: usize,
        base: usize,
        len: usize,
        now: Instant,
    ) {
        if self.script.watch_sends {
            self.show_sent(ci, base, len);
        }
        self.in_flight += claimed as u64;
        self.rec.tally.started += claimed as u64;
        self.gauge();
        let c = &mut self.conns[ci];
        c.proto.send(base..base + len);
        if c.proto.stamping() {
            // Stamped messages carry their requests' intended starts.
            let from = c.pending.len().saturating_sub(claimed);
            c.proto.due(c.pending.range(from..).map(|p| p.intended));
        }
        match c.proto.takes_made() && self.prep.made.is_some() {
            true => self.queue_made_messages(ci, claimed),
            false => c.proto.queue(claimed),
        }
        self.open_streams(ci);
        match self.conns[ci].link.state() {
            State::Open => self.write(ci, now),
            State::Closed => self.connect(ci, now),
            State::Connecting | State::Tunnel(_) | State::Backoff(_) => {
                unreachable!("only open or closed connections start a batch")
            }
        }
    }

    /// WebSocket messages made one by one, numbered over the run's calls, queued on
    /// `ci`; a maker that cannot make one stops the run.
    #[cold]
    pub(super) fn queue_made_messages(&mut self, ci: usize, claimed: usize) {
        let Some(made) = self.prep.made.as_mut() else {
            return;
        };
        for _ in 0..claimed {
            let number = self.shared.calls.fetch_add(1, Ordering::Relaxed);
            if !made.make(number, ci) {
                self.shared.control.stop();
                return;
            }
            self.conns[ci].proto.queue_made(&made.body, &made.fields);
        }
    }

    /// All responses of the connection's batch are in: a pool's connection is free
    /// again (after the script's delay, if it has one); a session goes on.
    pub(super) fn batch_done(&mut self, ci: usize, now: Instant) {
        if let Drive::Sessions(_) = self.drive {
            return self.session_batch_done(ci, now);
        }
        if self.script.delays {
            return self.delay(ci, now);
        }
        self.make_idle(ci)
    }

    /// Requests the connection can take now: HTTP/1 an idle connection takes a
    /// pipeline's worth; HTTP/2 up to `--streams`, within the server's
    /// SETTINGS_MAX_CONCURRENT_STREAMS (100 assumed until it says, as RFC 9113 advises,
    /// and while TLS's ALPN has not yet chosen).
    pub(super) fn room(&self, ci: usize) -> usize {
        let c = &self.conns[ci];
        let limit = self.connector.room(&c.proto, self.cfg.size.pipeline);
        limit.saturating_sub(c.pending.len())
    }

    /// Whether `ci` is an open multiplexed connection with room for more streams.
    pub(super) fn spare_streams(&self, ci: usize) -> bool {
        let c = &self.conns[ci];
        c.proto.multiplexed() && c.link.state() == State::Open && self.room(ci) > 0
    }

    /// Which request the connection is sending: the script step its session is on, or
    /// the run's one request.
    pub(super) fn request_index(&self, ci: usize) -> usize {
        match &self.drive {
            Drive::Sessions(s) => s.request_index(ci),
            Drive::Pool(_) => 0,
        }
    }

    /// HTTP/2 and HTTP/3: sends the connection's requests that have no stream yet,
    /// as far as the server's stream limit allows; the rest wait for streams to end
    /// (their latency counts the wait: it is the client's queue). HTTP/1 has no
    /// streams: its requests go out as queued.
    #[inline(always)]
    pub(super) fn open_streams(&mut self, ci: usize) {
        if self.conns[ci].proto.multiplexed() {
            self.open_mux_streams(ci);
        }
    }

    pub(super) fn open_mux_streams(&mut self, ci: usize) {
        let mut index = self.request_index(ci);
        // A session's script steps: the requests still without a stream are the last
        // sent, steps `step - waiting ..` in order.
        let steps = self.drive.session_on(ci) && !self.cfg.sends.script.is_empty();
        let c = &mut self.conns[ci];
        if steps {
            let waiting = c.pending.iter().filter(|p| p.stream == 0).count();
            index = (index + 1).saturating_sub(waiting);
        }
        if self.prep.paced.is_some() {
            return self.open_paced_streams(ci);
        }
        if self.script.streams_built {
            return self.open_built_stream(ci);
        }
        if let Some(made) = self.prep.made.as_mut() {
            // Calls made one by one: each its own body and fields, numbered over the
            // run's calls.
            let Some(h2) = c.proto.message_streams() else {
                return;
            };
            let free = h2.stream_limit().saturating_sub(h2.open_streams());
            let req = &self.prep.h2_requests[0];
            for p in c.pending.iter_mut().filter(|p| p.stream == 0).take(free) {
                let number = self.shared.calls.fetch_add(1, Ordering::Relaxed);
                if !made.make(number, ci) {
                    self.shared.control.stop();
                    return;
                }
                p.stream = h2.request_made(req, &made.body, &made.fields);
            }
            return;
        }
        let Some(h2) = c.proto.mux() else {
            return;
        };
        let repeat = self.prep.h2_requests.len() == 1;
        let turns = !self.cfg.sends.variety.is_empty();
        let free = h2.stream_limit().saturating_sub(h2.open_streams());
        // One request for every stream (the pool's common case): looked up once.
        let one = &self.prep.h2_requests[index.min(self.prep.h2_requests.len() - 1)];
        let walk = self.cfg.sends.walk.filter(|_| turns);
        for p in c.pending.iter_mut().filter(|p| p.stream == 0).take(free) {
            if let Some(w) = walk {
                // One walk over the run's calls, as HTTP/1.1's batches take it (a walk
                // here goes round: validation refuses one that ends the run).
                let call = self.shared.calls.fetch_add(1, Ordering::Relaxed);
                let all = &self.prep.h2_requests;
                let i = w.index(call, all.len());
                p.stream = h2.request(&all[i], false);
                p.target = i as u32;
            } else if turns {
                p.stream = h2.request(&self.prep.h2_requests[c.turn], false);
                p.target = c.turn as u32;
                c.turn = (c.turn + 1) % self.prep.h2_requests.len();
            } else if steps {
                p.stream = h2.request(&self.prep.h2_requests[index], repeat);
                p.target = index as u32;
                index += 1;
            } else {
                p.stream = h2.request(one, repeat);
            }
        }
    }

    /// The request the script wrote for `ci` (one at a time on a connection) goes as a
    /// stream of its own once one can open; one that is not a request the connection
    /// can send stops the run, saying why.
    #[cold]
    fn open_built_stream(&mut self, ci: usize) {
        let scheme = self.cfg.net.target.scheme();
        let c = &mut self.conns[ci];
        if c.own.is_empty() {
            return;
        }
        let Some(p) = c.pending.iter_mut().find(|p| p.stream == 0) else {
            return;
        };
        let Some(mux) = c.proto.mux() else {
            return;
        };
        if mux.open_streams() >= mux.stream_limit() {
            return;
        }
        match crate::proto::h2::H2Request::from_http1(&c.own, scheme) {
            Ok(req) => {
                p.stream = mux.request(&req, false);
                if p.stream != 0 {
                    c.own.clear();
                }
            }
            Err(_) => {
                // The script wrote what HTTP/2 cannot carry (a connection-specific
                // header): the request fails as the protocol's, and the script hears
                // its request is gone.
                c.own.clear();
                let now = self.shared.control.clock().now();
                self.fail_and_close(ci, now, ErrorKind::Protocol);
            }
        }
    }

    /// A pool's connection `ci` can take requests (sessions' slots are theirs).
    #[inline]
    pub(super) fn make_idle(&mut self, ci: usize) {
        if let Drive::Pool(pool) = &mut self.drive {
            pool.free(ci);
        }
    }

    /// The pool's connection to fill next, if one is free.
    #[inline]
    pub(super) fn next_free(&self) -> Option<usize> {
        match &self.drive {
            Drive::Pool(pool) => pool.next_free(),
            Drive::Sessions(_) => None,
        }
    }

    /// The connection [`Worker::next_free`] named is busy now.
    #[inline]
    pub(super) fn take_free(&mut self) {
        if let Drive::Pool(pool) = &mut self.drive {
            pool.take();
        }
    }

    /// Whether connection `ci` has sent its last request: its session's calls are all
    /// sent, or (pool shapes) the schedule has nothing more to start.
    pub(super) fn sent_last(&self, ci: usize) -> bool {
        match &self.drive {
            Drive::Sessions(s) => s.sent_last(ci),
            Drive::Pool(_) => self.pace.sending_done || self.schedule.spent(),
        }
    }
}
