//! The endpoint's turns: which connections send next and when the loop must wake
//! for their timers. A connection given input, a timer or a write joins a ready queue
//! and is marked touched; the sends visit the queue only, each connection leaving it
//! once it has nothing to send, and before the loop waits the touched connections'
//! QUIC timers are read again onto a heap. A wake-up costs what the connections it
//! touched cost, not what the endpoint holds.

use std::cmp::Reverse;
use std::time::Instant;

use quinn_proto::{StreamId, VarInt};

use super::{H3Endpoint, Out};

impl H3Endpoint {
    /// Connection `i` was given input, a timer or a write: it joins the ready queue,
    /// and its QUIC timer is read again before the loop next waits.
    pub(super) fn wake(&mut self, i: usize) {
        let Some(c) = self.conns.get_mut(i).and_then(|c| c.as_mut()) else {
            return;
        };
        if !c.queued {
            c.queued = true;
            self.ready.push_back(i);
        }
        self.touch(i);
    }

    /// Connection `i`'s QUIC timer is read again before the loop next waits.
    fn touch(&mut self, i: usize) {
        if let Some(c) = self.conns.get_mut(i).and_then(|c| c.as_mut()) {
            if !c.touched {
                c.touched = true;
                self.touched.push(i);
            }
        }
    }

    /// Reads again the QUIC timer of each connection touched since. One that came
    /// earlier than its entry on the heap gets a new entry; one that went later keeps
    /// the entry it has, which then wakes the loop early once, to be read again (most
    /// moves are later — every packet pushes the idle timer on — and cost nothing).
    /// Entries left behind by earlier ones are dropped when the heap outgrows the
    /// connections twice over, so it stays as large as they are.
    fn rearm(&mut self) {
        for k in 0..self.touched.len() {
            let i = self.touched[k];
            let Some(c) = self.conns.get_mut(i).and_then(|c| c.as_mut()) else {
                continue;
            };
            c.touched = false;
            if let Some(t) = c.conn.poll_timeout() {
                if c.armed.is_none_or(|a| t < a) {
                    c.armed = Some(t);
                    self.quic_timers.push(Reverse((t, i)));
                }
            }
        }
        self.touched.clear();
        if self.quic_timers.len() > 2 * self.conns.len() + 64 {
            self.quic_timers = (self.conns.iter().enumerate())
                .filter_map(|(i, c)| Some(Reverse((c.as_ref()?.armed?, i))))
                .collect();
        }
    }

    /// The next datagrams to send (into `buf`: one, or up to `segments` of one
    /// connection) and where, if any: the endpoint's own answers first, then the ready
    /// connections in turn, each leaving the queue once it has nothing to send.
    pub fn transmit(&mut self, now: Instant, buf: &mut Vec<u8>, segments: usize) -> Option<Out> {
        if let Some((out, d)) = self.answers.pop_front() {
            buf.clear();
            buf.extend_from_slice(&d);
            return Some(out);
        }
        while let Some(i) = self.ready.pop_front() {
            let Some(c) = self.conns[i].as_mut() else {
                continue;
            };
            buf.clear();
            match c.conn.poll_transmit(now, segments.max(1), buf) {
                Some(t) => {
                    buf.truncate(t.size);
                    self.ready.push_back(i);
                    self.touch(i);
                    self.endpoint_events(i);
                    return Some(Out::of(&t));
                }
                None => c.queued = false,
            }
        }
        None
    }

    /// When the endpoint next needs [`H3Endpoint::timeout`]: the earliest of the
    /// connections' QUIC timers (a heap, each touched connection's read again) and
    /// the deferred answers'.
    pub fn next_timeout(&mut self) -> Option<Instant> {
        self.rearm();
        while let Some(&Reverse((t, i))) = self.quic_timers.peek() {
            if (self.conns.get(i).and_then(|c| c.as_ref())).is_some_and(|c| c.armed == Some(t)) {
                break;
            }
            self.quic_timers.pop();
        }
        let quic = self.quic_timers.peek().map(|t| t.0 .0);
        let deferred = self.timers.peek().map(|t| t.0 .0);
        match (quic, deferred) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Timers due at `now`: QUIC's and the deferred answers'.
    pub fn timeout(&mut self, now: Instant) {
        while let Some(&Reverse((t, i))) = self.quic_timers.peek() {
            if t > now {
                break;
            }
            self.quic_timers.pop();
            let Some(c) = self.conns.get_mut(i).and_then(|c| c.as_mut()) else {
                continue;
            };
            if c.armed != Some(t) {
                continue;
            }
            c.armed = None;
            if c.conn.poll_timeout().is_some_and(|t| t <= now) {
                c.conn.handle_timeout(now);
                self.drive(now, i);
            } else {
                // Its timer went later since: read again, it goes back on the heap.
                self.touch(i);
            }
        }
        while let Some(Reverse((at, ci, id))) = self.timers.peek().copied() {
            if at > now {
                break;
            }
            self.timers.pop();
            self.deferred(
                ci,
                StreamId::from(VarInt::from_u64(id).unwrap_or(VarInt::MAX)),
            );
            self.drive(now, ci);
        }
    }
}
