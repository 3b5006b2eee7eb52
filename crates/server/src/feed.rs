//! Answers that go out over time: `/sse/<n>` and `/stream/<n>`'s events, the mock
//! LLM's completions and gRPC server streams, each a [`Feed`] of pieces on the
//! server's timers, with how each piece is written (and as HTTP/1.1 chunks) and
//! when ([`Pace`]: on a fixed schedule, or as the mock LLM's batching engine makes
//! the tokens).

use std::io::Write as _;
use std::time::Instant;

/// Most events of `/sse/<n>` and `/stream/<n>`.
pub const MAX_EVENTS: u64 = 1_000_000;

/// What a streamed answer sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeedKind {
    /// Server-sent events, `data: <i>` each, then `data: [DONE]`.
    Sse,
    /// Plain text, `event <i>` and a newline each.
    Chunks,
    /// The mock LLM's completion (see [`crate::llm`]).
    Llm(crate::llm::Asked),
    /// A gRPC server stream (see [`crate::grpc`]): `EchoReply` messages of `size`
    /// bytes, numbered from 1, then trailers with `status`.
    Grpc { size: u32, status: u8 },
}

/// A streamed answer (`/sse/<n>`, `/stream/<n>`, the mock LLM's completions): `n`
/// pieces, the first `first` after the request, each next `gap` after the one before,
/// on the server's clock (a late loop catches up; it never drifts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Feed {
    pub kind: FeedKind,
    pub n: u32,
    pub gap: std::time::Duration,
    pub first: std::time::Duration,
    /// The answer's number (the mock LLM's completion ids).
    pub id: u32,
    /// What times the pieces.
    pub pace: Pace,
}

/// What times a feed's pieces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pace {
    /// The first `first` after the request, each next `gap` after the one before.
    Fixed,
    /// The mock LLM's batching engine (see [`crate::llm::engine`]): piece `i` of a
    /// stream goes once its sequence `seq` has made token `i + 1`; a whole answer,
    /// once it has made them all.
    Engine { seq: u32 },
}

/// When a feed's pieces are due: [`Pace::Fixed`] feeds on their schedule, engine
/// feeds as their engine says.
pub trait Pacer {
    /// Piece `i` of `f`'s timer fired at `now`: `None` when it goes now, else when to
    /// look again.
    fn ready(&mut self, f: &Feed, i: u32, now: Instant) -> Option<Instant>;
    /// When to wake for piece `i`, the one before it due at `due`.
    fn next(&mut self, f: &Feed, i: u32, due: Instant, now: Instant) -> Instant;
}

/// The pacer of fixed feeds only.
pub struct Fixed;

impl Pacer for Fixed {
    fn ready(&mut self, _: &Feed, _: u32, _: Instant) -> Option<Instant> {
        None
    }
    fn next(&mut self, f: &Feed, _: u32, due: Instant, _: Instant) -> Instant {
        due + f.gap
    }
}

impl Pacer for Option<crate::llm::engine::Engine> {
    fn ready(&mut self, f: &Feed, i: u32, now: Instant) -> Option<Instant> {
        match (f.pace, self) {
            (Pace::Engine { seq }, Some(e)) => e.poll(seq, f.tokens_for(i), now),
            _ => None,
        }
    }
    fn next(&mut self, f: &Feed, i: u32, due: Instant, now: Instant) -> Instant {
        match (f.pace, self) {
            (Pace::Engine { seq }, Some(e)) => e.poll(seq, f.tokens_for(i), now).unwrap_or(now),
            _ => due + f.gap,
        }
    }
}

impl Feed {
    /// The tokens made before piece `i` goes: its own for a stream, all for a whole
    /// answer.
    fn tokens_for(&self, i: u32) -> u32 {
        match self.kind {
            FeedKind::Llm(a) if !a.stream => a.max_tokens,
            _ => i + 1,
        }
    }

    /// Appends piece `i`'s bytes to `out`.
    pub fn piece(&self, i: u32, out: &mut Vec<u8>) {
        let last = i + 1 == self.n;
        let _ = match self.kind {
            FeedKind::Grpc { size, .. } => {
                crate::grpc::echo_reply(out, None, size, i + 1);
                Ok(())
            }
            FeedKind::Sse => write!(out, "data: {i}\n\n"),
            FeedKind::Chunks => writeln!(out, "event {i}"),
            FeedKind::Llm(asked) if !asked.stream => {
                crate::llm::whole(out, &asked, self.id);
                Ok(())
            }
            FeedKind::Llm(asked) => {
                if i == 0 && asked.api == crate::llm::Api::Chat {
                    crate::llm::role_event(out, self.id);
                }
                crate::llm::chunk_event(out, &asked, self.id, Some(" tok"), last);
                Ok(())
            }
        };
    }

    /// Appends what ends the answer after its last piece: `data: [DONE]` for
    /// server-sent events (after the usage chunk when a streamed completion asks).
    pub fn end(&self, out: &mut Vec<u8>) {
        match self.kind {
            FeedKind::Sse => out.extend_from_slice(b"data: [DONE]\n\n"),
            FeedKind::Chunks | FeedKind::Grpc { .. } => {}
            FeedKind::Llm(asked) if !asked.stream => {}
            FeedKind::Llm(asked) => {
                if asked.usage {
                    crate::llm::chunk_event(out, &asked, self.id, None, false);
                }
                out.extend_from_slice(b"data: [DONE]\n\n");
            }
        }
    }

    /// Appends piece `i` to `out` as an HTTP/1.1 chunk.
    pub fn chunk_piece(&self, i: u32, out: &mut Vec<u8>) {
        in_chunk(out, |out| self.piece(i, out));
    }

    /// Appends the answer's end to `out` as HTTP/1.1 chunks, the last one included.
    pub fn chunk_end(&self, out: &mut Vec<u8>) {
        in_chunk(out, |out| self.end(out));
        out.extend_from_slice(b"0\r\n\r\n");
    }
}

/// Appends what `write` appends to `out` as one HTTP/1.1 chunk, written in place: the
/// size goes first as eight hex digits (leading zeros are allowed, RFC 9112 7.1) and
/// is filled in after; nothing at all when `write` appends nothing.
fn in_chunk(out: &mut Vec<u8>, write: impl FnOnce(&mut Vec<u8>)) {
    let at = out.len();
    out.extend_from_slice(b"00000000\r\n");
    write(out);
    let len = out.len() - at - 10;
    if len == 0 {
        out.truncate(at);
        return;
    }
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for (k, b) in out[at..at + 8].iter_mut().enumerate() {
        *b = HEX[(len >> (28 - 4 * k)) & 0xf];
    }
    out.extend_from_slice(b"\r\n");
}
