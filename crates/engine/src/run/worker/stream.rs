//! Streamed responses timed as they arrive (runs with [`crate::LoadStreams::stream`]): the
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
    /// When its first and its last event came, once one has.
    first: Option<Instant>,
    last: Option<Instant>,
    events: u32,
    /// It sent `[DONE]`.
    done: bool,
    /// OpenAI streams: the completion's tokens, as its usage chunk said.
    tokens: Option<u32>,
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
        // A WebSocket message's send stamp, taken with its event whatever follows.
        let stamp = match p.stamped {
            true => c.proto.take_stamp(),
            false => None,
        };
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
                    first: None,
                    last: None,
                    events: 0,
                    done: false,
                    tokens: None,
                });
                if p.bytes > 0 {
                    self.rec.stream_first_byte(intended, sent, at);
                }
                c.clocks.len() - 1
            }
        };
        if let Some(s) = stamp {
            self.rec.stream_delivery(s, at);
        }
        let c = &mut self.conns[ci];
        let k = &mut c.clocks[i];
        if p.events > 0 {
            self.rec
                .stream_events((intended, sent), k.last, at, p.events);
            k.first.get_or_insert(at);
            k.last = Some(at);
            k.events = k.events.saturating_add(p.events);
        }
        k.done |= p.done;
        k.tokens = p.tokens.or(k.tokens);
    }

    /// Whether a watched response on `ci` has carried more than `max` events.
    #[cold]
    pub(super) fn past_events(&self, ci: usize, max: u32) -> bool {
        self.conns[ci].clocks.iter().any(|k| k.events > max)
    }

    /// Whether a watched response on `ci` has had no event for `limit`: since its
    /// last event, or since its send before the first.
    #[cold]
    pub(super) fn stalled(&self, ci: usize, now: Instant, limit: std::time::Duration) -> bool {
        let c = &self.conns[ci];
        let multiplexed = c.proto.multiplexed();
        c.pending
            .iter()
            .take(if multiplexed { usize::MAX } else { 1 })
            .filter(|p| !multiplexed || p.stream != 0)
            .any(|p| {
                let key = if multiplexed { p.stream } else { 0 };
                let since = (c.clocks.iter())
                    .find(|k| k.stream == key)
                    .and_then(|k| k.last)
                    .unwrap_or(p.sent);
                now.saturating_duration_since(since) >= limit
            })
    }

    /// The watched response on `stream` of `ci` completed at `at`: its events are
    /// counted, and an OpenAI stream's tokens (the usage chunk's count, else the
    /// events that carried text) with its time per output token after the first.
    #[cold]
    pub(super) fn stream_complete(
        &mut self,
        ci: usize,
        stream: u32,
        intended: Instant,
        at: Instant,
        target: u32,
    ) {
        let c = &mut self.conns[ci];
        let k = match c.clocks.iter().position(|k| k.stream == stream) {
            Some(i) => c.clocks.swap_remove(i),
            None => StreamClock {
                stream,
                first: None,
                last: None,
                events: 0,
                done: false,
                tokens: None,
            },
        };
        self.rec.stream_response(u64::from(k.events), k.done);
        if let Some(first) = k.first {
            let us = first.saturating_duration_since(intended).as_micros() as u64;
            self.rec.target_first_event(target, us);
        }
        if self.cfg.watch.stream == Some(crate::StreamMode::Openai) {
            let tokens = k.tokens.unwrap_or(k.events);
            // A chunk may carry several tokens, never less than one: usage below the
            // events that carried text contradicts them.
            self.rec.streams.usage_short += u64::from(k.tokens.is_some_and(|t| t < k.events));
            let tpot = match k.first {
                Some(first) if tokens > 1 => {
                    let span = at.saturating_duration_since(first).as_micros() as u64;
                    Some(span / u64::from(tokens - 1))
                }
                _ => None,
            };
            let us = |d: std::time::Duration| d.as_micros() as u64;
            let e2el = us(at.saturating_duration_since(intended));
            self.rec.stream_tokens(tokens, tpot, e2el);
            if let Some(slo) = &self.cfg.watch.slo {
                let ttft = k.first.map(|f| us(f.saturating_duration_since(intended)));
                self.rec.streams.good += u64::from(slo.met(ttft, tpot, e2el));
            }
        }
    }
}
