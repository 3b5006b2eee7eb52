//! Streamed responses timed as they arrive (runs with [`crate::Load::stream`]): the
//! worker's side of a watched body. Each response in progress has a clock on its
//! connection, kept only in such runs, with when its last event came and how many
//! came; the first body byte and the first event are timed from the request's
//! intended start and from its send, every later event from the one before. Bytes
//! read after a nap are timed by the kernel's arrival stamps, as responses are.

use std::time::Instant;

use super::Worker;
use crate::proto::watch::Progress;

/// A watched response in progress on a connection.
#[derive(Debug, Clone, Copy)]
pub(super) struct StreamClock {
    /// Its stream (HTTP/2), or 0 (HTTP/1: the oldest request's).
    stream: u32,
    /// When its last event came, once one has.
    last: Option<Instant>,
    events: u32,
    /// It sent `[DONE]`.
    done: bool,
}

impl StreamClock {
    /// The response's stream (0 for HTTP/1).
    pub(super) fn stream(&self) -> u32 {
        self.stream
    }
}

impl Worker<'_> {
    /// A watched body on `ci` brought bytes or events.
    #[cold]
    pub(super) fn on_progress(&mut self, ci: usize, stream: u32, p: Progress, now: Instant) {
        let at = match self.pace.arrived {
            Some(a) if self.pace.stamped => a,
            _ => now,
        };
        let c = &mut self.conns[ci];
        let pending = if stream == 0 {
            c.pending.front()
        } else {
            c.pending.iter().find(|q| q.stream == stream)
        };
        let Some(q) = pending else {
            return;
        };
        let (intended, sent) = (q.intended, q.sent);
        let at = at.max(sent);
        let i = match c.clocks.iter().position(|k| k.stream == stream) {
            Some(i) => i,
            None => {
                c.clocks.push(StreamClock {
                    stream,
                    last: None,
                    events: 0,
                    done: false,
                });
                if p.bytes > 0 {
                    self.rec.stream_first_byte(intended, sent, at);
                }
                c.clocks.len() - 1
            }
        };
        let k = &mut c.clocks[i];
        if p.events > 0 {
            self.rec
                .stream_events((intended, sent), k.last, at, p.events);
            k.last = Some(at);
            k.events = k.events.saturating_add(p.events);
        }
        k.done |= p.done;
    }

    /// The watched response on `stream` of `ci` completed: its events are counted.
    #[cold]
    pub(super) fn stream_complete(&mut self, ci: usize, stream: u32) {
        let c = &mut self.conns[ci];
        let (events, done) = match c.clocks.iter().position(|k| k.stream == stream) {
            Some(i) => {
                let k = c.clocks.swap_remove(i);
                (k.events, k.done)
            }
            None => (0, false),
        };
        self.rec.stream_response(u64::from(events), done);
    }
}
