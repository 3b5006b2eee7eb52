//! Watching a response body as it arrives, for runs that time streams.
//!
//! With `--stream` or `--sse` every response body is watched: its payload bytes (chunk
//! framing removed) are counted and its events found, so that the worker can time the
//! first body byte, the first event and the gaps between events as they arrive. An
//! event is a piece of the body as the server framed it: an HTTP/1.1 chunk, an HTTP/2
//! DATA frame, or the bytes of one read for a body sent without framing (`Chunks`);
//! or a server-sent event (`Sse`), parsed by [`stampede_wire::sse`] in bounded memory,
//! a `data: [DONE]` event marking the end rather than counting as one. Without either
//! flag no watch exists and nothing here runs.

use serde::{Deserialize, Serialize};
use stampede_wire::sse::{SseError, SseItem, SseParser};

/// How a run times response bodies as they arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StreamMode {
    /// Each piece of the body as the server framed it is an event.
    Chunks,
    /// The body is `text/event-stream`: each server-sent event is an event.
    Sse,
}

impl StreamMode {
    /// The name the flags and the result use.
    pub fn name(self) -> &'static str {
        match self {
            StreamMode::Chunks => "chunks",
            StreamMode::Sse => "sse",
        }
    }
}

/// The most a server-sent event (or one of its lines) may hold.
pub const MAX_EVENT: usize = 1 << 20;

/// What a watched body brought since it was last asked: payload bytes and events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Progress {
    pub bytes: u32,
    pub events: u32,
    /// The stream's `[DONE]` event came.
    pub done: bool,
}

/// One body's watch: what it counted since the last [`Watch::take`].
#[derive(Debug)]
pub(crate) struct Watch {
    mode: StreamMode,
    sse: Option<SseParser>,
    seen: Progress,
}

impl Watch {
    pub(crate) fn new(mode: StreamMode) -> Watch {
        Watch {
            mode,
            sse: (mode == StreamMode::Sse).then(|| SseParser::new(MAX_EVENT)),
            seen: Progress::default(),
        }
    }

    /// A new body begins (a final response's head was read).
    pub(crate) fn start(&mut self) {
        if let Some(p) = &mut self.sse {
            p.reset();
        }
        self.seen = Progress::default();
    }

    /// Payload bytes of the body arrived.
    pub(crate) fn payload(&mut self, bytes: &[u8]) -> Result<(), SseError> {
        self.seen.bytes = self.seen.bytes.saturating_add(bytes.len() as u32);
        if let Some(p) = &mut self.sse {
            let (events, done) = (&mut self.seen.events, &mut self.seen.done);
            p.feed(bytes, &mut |item| {
                if let SseItem::Event { data, .. } = item {
                    if data == b"[DONE]" {
                        *done = true;
                    } else {
                        *events += 1;
                    }
                }
            })?;
        }
        Ok(())
    }

    /// A piece of the body as the server framed it is complete (a chunk, a DATA
    /// frame, a read's bytes of an unframed body): an event when counting pieces.
    pub(crate) fn piece(&mut self) {
        if self.mode == StreamMode::Chunks {
            self.seen.events += 1;
        }
    }

    /// What arrived since the last call, if anything did.
    pub(crate) fn take(&mut self) -> Option<Progress> {
        let p = std::mem::take(&mut self.seen);
        (p != Progress::default()).then_some(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_count_as_events_only_when_counting_pieces() {
        let mut w = Watch::new(StreamMode::Chunks);
        assert_eq!(w.take(), None);
        w.payload(b"hello").unwrap();
        w.piece();
        w.payload(b"!").unwrap();
        w.piece();
        assert_eq!(
            w.take(),
            Some(Progress {
                bytes: 6,
                events: 2,
                done: false
            })
        );
        assert_eq!(w.take(), None);
        let mut w = Watch::new(StreamMode::Sse);
        w.payload(b"data: a\n").unwrap();
        w.piece();
        assert_eq!(
            w.take(),
            Some(Progress {
                bytes: 8,
                events: 0,
                done: false
            })
        );
    }

    #[test]
    fn server_sent_events_count_and_done_ends_without_counting() {
        let mut w = Watch::new(StreamMode::Sse);
        w.payload(b": hi\n\ndata: {\"t\":1}\n\ndata: {\"t\":2}\n\nda")
            .unwrap();
        assert_eq!(w.take().map(|p| p.events), Some(2));
        w.payload(b"ta: [DONE]\n\n").unwrap();
        assert_eq!(w.take().map(|p| (p.events, p.done)), Some((0, true)));
        // The next body starts afresh.
        w.payload(b"data: x").unwrap();
        w.start();
        w.payload(b"data: y\n\n").unwrap();
        assert_eq!(w.take().map(|p| (p.events, p.done)), Some((1, false)));
        // An event over the limit is an error.
        let big = vec![b'x'; MAX_EVENT + 1];
        assert!(w.payload(&big).is_err());
    }
}
