//! Watching a response body as it arrives, for runs that time streams.
//!
//! With `--stream` or `--sse` every response body is watched: its payload bytes (chunk
//! framing removed) are counted and its events found, so that the worker can time the
//! first body byte, the first event and the gaps between events as they arrive. An
//! event is a piece of the body as the server framed it: an HTTP/1.1 chunk, an HTTP/2
//! DATA frame, or the bytes of one read for a body sent without framing (`Chunks`);
//! or a server-sent event (`Sse`), parsed by [`stampede_wire::sse`] in bounded memory,
//! a `data: [DONE]` event marking the end rather than counting as one; or a gRPC
//! message (`Grpc`), found by [`stampede_wire::grpc::MessageReader`] without keeping
//! its bytes. Without any of these no watch exists and nothing here runs. (A WebSocket
//! push stream, `Messages`, is watched by its connection, which reads the frames.)

use serde::{Deserialize, Serialize};
use stampede_wire::grpc::MessageReader;
use stampede_wire::sse::{SseError, SseItem, SseParser};

use crate::TokenCounter;

/// How a run times response bodies as they arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StreamMode {
    /// Each piece of the body as the server framed it is an event.
    Chunks,
    /// The body is `text/event-stream`: each server-sent event is an event.
    Sse,
    /// The body is an OpenAI-compatible completion stream: server-sent events whose
    /// data are chunk objects. Each event carrying text (a completion's `text`, a
    /// chat's `delta.content` or `delta.reasoning_content`) is an event, so the first
    /// is the first token; the usage chunk gives the completion's tokens. Data that
    /// is not a chunk object, or an `error` object, breaks the stream.
    Openai,
    /// The body is a gRPC answer: each length-prefixed message is an event (so a
    /// server stream's messages are timed one by one); a prefix that lies breaks it.
    Grpc,
    /// The connection is a WebSocket one (`ws://`, `wss://`) and each message the
    /// server sends is an event: a push stream, timed message by message, the
    /// messages' send stamps read where they carry one ([`stampede_wire::stamp`]).
    Messages,
}

impl StreamMode {
    /// The name the flags and the result use.
    pub fn name(self) -> &'static str {
        match self {
            StreamMode::Chunks => "chunks",
            StreamMode::Sse => "sse",
            StreamMode::Openai => "openai",
            StreamMode::Grpc => "grpc",
            StreamMode::Messages => "messages",
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
    /// OpenAI streams: the completion's tokens, as its usage chunk said.
    pub tokens: Option<u32>,
    /// WebSocket messages: the message began with a send stamp, which its connection
    /// holds for the worker ([`crate::proto::ws::WsClient::take_stamp`]; kept out of
    /// the event, which every response of every run passes through).
    pub stamped: bool,
}

/// A watched body broke its format: an event over the size limit, or (OpenAI
/// streams) an event that is not a chunk object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadEvent;

/// An OpenAI-compatible stream's chunk object, as far as it is read.
#[derive(serde::Deserialize)]
struct Chunk<'a> {
    #[serde(default, borrow)]
    choices: Vec<Choice<'a>>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<serde::de::IgnoredAny>,
}

#[derive(serde::Deserialize)]
struct Choice<'a> {
    #[serde(default, borrow)]
    text: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
}

#[derive(serde::Deserialize)]
struct Delta<'a> {
    #[serde(default, borrow)]
    content: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning_content: Option<std::borrow::Cow<'a, str>>,
}

#[derive(serde::Deserialize)]
struct Usage {
    completion_tokens: u64,
}

/// The most of a completion's text kept to count its tokens (a stream with a tokenizer
/// and no usage); a longer one is counted by its events.
pub const MAX_TEXT: usize = 4 << 20;

/// What one OpenAI event's data says: whether it carries text, and the completion's
/// tokens if it is the usage chunk; the text is appended to `keep` when given.
/// `None`: not a chunk object, or an error.
fn openai_event(data: &[u8], keep: Option<&mut String>) -> Option<(bool, Option<u32>)> {
    let c: Chunk<'_> = serde_json::from_slice(data).ok()?;
    if c.error.is_some() {
        return None;
    }
    let filled = |s: &Option<std::borrow::Cow<'_, str>>| s.as_ref().is_some_and(|t| !t.is_empty());
    let text = c.choices.iter().any(|ch| {
        filled(&ch.text)
            || ch
                .delta
                .as_ref()
                .is_some_and(|d| filled(&d.content) || filled(&d.reasoning_content))
    });
    if let (true, Some(keep)) = (text, keep) {
        for ch in &c.choices {
            let d = ch.delta.as_ref();
            let parts = [
                ch.text.as_ref(),
                d.and_then(|d| d.content.as_ref()),
                d.and_then(|d| d.reasoning_content.as_ref()),
            ];
            for t in parts.into_iter().flatten() {
                keep.push_str(t);
            }
        }
    }
    let tokens = match c.usage {
        // A count no model emits in one answer is a server's lie (2^64 − 1, say),
        // not a figure to clamp and sum: the event is broken.
        Some(u) if u.completion_tokens > MAX_USAGE_TOKENS => return None,
        Some(u) => Some(u.completion_tokens as u32),
        None => None,
    };
    Some((text, tokens))
}

/// The most completion tokens one answer's usage may claim (far past any model's
/// output limit); a larger count breaks the stream as a bad event.
pub const MAX_USAGE_TOKENS: u64 = 10_000_000;

/// One body's watch: what it counted since the last [`Watch::take`].
#[derive(Debug)]
pub(crate) struct Watch {
    mode: StreamMode,
    sse: Option<SseParser>,
    grpc: Option<MessageReader>,
    seen: Progress,
    /// OpenAI streams with a tokenizer: the completion's text so far (at most
    /// [`MAX_TEXT`]; `None` past it), counted at `[DONE]` if no usage came.
    counter: Option<TokenCounter>,
    text: Option<String>,
    usage: bool,
}

impl Watch {
    pub(crate) fn new(mode: StreamMode, counter: Option<TokenCounter>) -> Watch {
        let counter = counter.filter(|_| mode == StreamMode::Openai);
        Watch {
            mode,
            sse: matches!(mode, StreamMode::Sse | StreamMode::Openai)
                .then(|| SseParser::new(MAX_EVENT)),
            grpc: (mode == StreamMode::Grpc)
                .then(|| MessageReader::new(stampede_wire::grpc::DEFAULT_MAX_MESSAGE, false)),
            seen: Progress::default(),
            text: counter.as_ref().map(|_| String::new()),
            counter,
            usage: false,
        }
    }

    /// A new body begins (a final response's head was read).
    pub(crate) fn start(&mut self) {
        if let Some(p) = &mut self.sse {
            p.reset();
        }
        if let Some(r) = &mut self.grpc {
            r.reset();
        }
        self.seen = Progress::default();
        self.usage = false;
        if self.counter.is_some() {
            self.text = Some(self.text.take().unwrap_or_default());
            if let Some(t) = &mut self.text {
                t.clear();
            }
        }
    }

    /// Payload bytes of the body arrived.
    pub(crate) fn payload(&mut self, bytes: &[u8]) -> Result<(), BadEvent> {
        self.seen.bytes = self.seen.bytes.saturating_add(bytes.len() as u32);
        if let Some(r) = &mut self.grpc {
            let seen = &mut self.seen;
            // The calls never offer an encoding (no grpc-accept-encoding), so a message
            // flagged compressed is the server's error: INTERNAL in gRPC's terms, a
            // broken message here, never a call counted OK.
            let mut compressed = false;
            let fed = r.feed(bytes, &mut |m| {
                compressed |= m.compressed;
                seen.events += 1;
            });
            return match (fed, compressed) {
                (Ok(()), false) => Ok(()),
                _ => Err(BadEvent),
            };
        }
        let Some(p) = &mut self.sse else {
            return Ok(());
        };
        let openai = self.mode == StreamMode::Openai;
        let seen = &mut self.seen;
        let (text, usage, counter) = (&mut self.text, &mut self.usage, &self.counter);
        let mut bad = false;
        let fed: Result<(), SseError> = p.feed(bytes, &mut |item| {
            let SseItem::Event { data, .. } = item else {
                return;
            };
            if data == b"[DONE]" {
                seen.done = true;
                // No usage came: the tokenizer counts the text.
                if let (Some(c), Some(t), false) = (counter, text.as_ref(), *usage) {
                    seen.tokens = Some(c.count(t));
                }
            } else if !openai {
                seen.events += 1;
            } else {
                match openai_event(data, text.as_mut()) {
                    Some((carries, tokens)) => {
                        seen.events += u32::from(carries);
                        *usage |= tokens.is_some();
                        seen.tokens = tokens.or(seen.tokens);
                        if text.as_ref().is_some_and(|t| t.len() > MAX_TEXT) {
                            *text = None;
                        }
                    }
                    None => bad = true,
                }
            }
        });
        if fed.is_err() || bad {
            return Err(BadEvent);
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

    /// The body ended: whether it ended whole (a gRPC answer not inside a message).
    pub(crate) fn end(&self) -> Result<(), BadEvent> {
        match &self.grpc {
            Some(r) => r.finish().map_err(|_| BadEvent),
            None => Ok(()),
        }
    }

    /// The failure a broken body counts as.
    pub(crate) fn broken_kind(&self) -> crate::ErrorKind {
        match self.mode {
            StreamMode::Grpc => crate::ErrorKind::GrpcMessage,
            _ => crate::ErrorKind::StreamEvent,
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
        let mut w = Watch::new(StreamMode::Chunks, None);
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
                done: false,
                tokens: None,
                stamped: false
            })
        );
        assert_eq!(w.take(), None);
        let mut w = Watch::new(StreamMode::Sse, None);
        w.payload(b"data: a\n").unwrap();
        w.piece();
        assert_eq!(
            w.take(),
            Some(Progress {
                bytes: 8,
                events: 0,
                done: false,
                tokens: None,
                stamped: false
            })
        );
    }

    #[test]
    fn server_sent_events_count_and_done_ends_without_counting() {
        let mut w = Watch::new(StreamMode::Sse, None);
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

    #[test]
    fn grpc_messages_are_events_and_a_lying_prefix_breaks_the_body() {
        let mut w = Watch::new(StreamMode::Grpc, None);
        let mut body = Vec::new();
        stampede_wire::grpc::frame(&mut body, false, b"one");
        stampede_wire::grpc::frame(&mut body, false, b"two!");
        w.start();
        w.payload(&body[..7]).unwrap();
        assert_eq!(w.take().map(|p| p.events), Some(0));
        w.payload(&body[7..]).unwrap();
        assert_eq!(w.take().map(|p| (p.events, p.bytes)), Some((2, 10)));
        assert!(w.end().is_ok());
        // A body that ends inside a message, or a prefix over the limit.
        w.start();
        w.payload(&[0, 0, 0, 0, 9, 1]).unwrap();
        assert_eq!(w.end(), Err(BadEvent));
        w.start();
        assert_eq!(w.payload(&[0, 0xff, 0, 0, 0]), Err(BadEvent));
        assert_eq!(w.broken_kind(), crate::ErrorKind::GrpcMessage);
        // A message flagged compressed, when the call offered no encoding.
        w.start();
        let mut body = Vec::new();
        stampede_wire::grpc::frame(&mut body, true, b"zz");
        assert_eq!(w.payload(&body), Err(BadEvent));
    }

    #[test]
    fn openai_streams_count_text_events_and_take_usage() {
        let mut w = Watch::new(StreamMode::Openai, None);
        // A chat stream: the role chunk has no text; two tokens; the usage chunk.
        let stream = concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" a\\\"b\"}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"text\":\" c\",\"finish_reason\":\"length\"}]}\n\n",
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}\n\n",
            "data: [DONE]\n\n"
        );
        w.payload(stream.as_bytes()).unwrap();
        let p = w.take().unwrap();
        assert_eq!((p.events, p.tokens, p.done), (2, Some(2), true));
        // Data that is not a chunk object, or an error object, breaks the stream.
        w.start();
        assert_eq!(w.payload(b"data: not json\n\n"), Err(BadEvent));
        w.start();
        assert_eq!(
            w.payload(b"data: {\"error\":{\"message\":\"overloaded\"}}\n\n"),
            Err(BadEvent)
        );
    }

    #[test]
    fn a_tokenizer_counts_a_completion_without_usage_from_its_text() {
        let t = crate::spec::tokenizer::tests::words();
        let mut w = Watch::new(StreamMode::Openai, Some(t));
        // Two events of two tokens each (and a reasoning one of one), no usage.
        let stream = concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" a b\"}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\" c\"}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"text\":\" tok.\"}]}\n\n",
        );
        w.start();
        w.payload(stream.as_bytes()).unwrap();
        w.payload(b"data: [DONE]\n\n").unwrap();
        let p = w.take().unwrap();
        assert_eq!((p.events, p.tokens, p.done), (3, Some(5), true));
        // With usage, the server's count stands, and the next body starts afresh.
        w.start();
        w.payload(stream.as_bytes()).unwrap();
        w.payload(
            b"data: {\"choices\":[],\"usage\":{\"completion_tokens\":9}}\n\ndata: [DONE]\n\n",
        )
        .unwrap();
        assert_eq!(w.take().unwrap().tokens, Some(9));
        w.start();
        w.payload(b"data: {\"choices\":[{\"text\":\"hello\"}]}\n\ndata: [DONE]\n\n")
            .unwrap();
        assert_eq!(w.take().unwrap().tokens, Some(1));
        // A usage count no answer can have is a broken event, not a clamped figure.
        w.start();
        let lie = format!(
            "data: {{\"choices\":[],\"usage\":{{\"completion_tokens\":{}}}}}\n\n",
            u64::MAX
        );
        assert_eq!(w.payload(lie.as_bytes()), Err(BadEvent));
        w.start();
        let most = format!(
            "data: {{\"choices\":[],\"usage\":{{\"completion_tokens\":{MAX_USAGE_TOKENS}}}}}\n\n"
        );
        w.payload(most.as_bytes()).unwrap();
        assert_eq!(w.take().unwrap().tokens, Some(MAX_USAGE_TOKENS as u32));
    }
}
