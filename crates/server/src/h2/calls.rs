//! Live gRPC calls on an HTTP/2 connection: a call routed as it opens, each request
//! message answered as it arrives while the client goes on sending, the trailers
//! once the client's side has ended (or at the first request that fails). This is
//! what a client that waits for each answer before its next request needs (a
//! reflection client, a ping-pong bidi stream), and what times each message of a
//! bidi stream truly.

use super::{H2Conn, State};
use crate::grpc::{self, Encoding, Live};
use stampede_wire::grpc::{GrpcError, MessageReader, CONTENT_TYPE, DEFAULT_MAX_MESSAGE};

/// A live gRPC call under way: its requests read as they come.
#[derive(Debug)]
pub(super) struct Call {
    kind: crate::grpc::Live,
    reader: stampede_wire::grpc::MessageReader,
    encoding: crate::grpc::Encoding,
    /// Requests answered so far.
    seq: u32,
}

/// The most answer bytes a live call holds for a client that does not read them
/// before the call is ended (RESOURCE_EXHAUSTED).
const LIVE_HELD: usize = 16 << 20;

impl H2Conn {
    /// Opens the live call on `stream` (routed, its head not sent): its head goes now
    /// with `date` and `server`, then the answers to `body`, the requests that came
    /// before it was routed.
    pub fn open_call(
        &mut self,
        out: &mut Vec<u8>,
        (stream, path): (u32, &[u8]),
        encoding: Encoding,
        body: &[u8],
        (date, server): (&[u8], &[u8]),
    ) {
        let Some(kind) = grpc::live(path) else {
            return;
        };
        if kind == Live::Reflection && self.reflection.is_none() {
            self.cut_short(stream);
            let no = (12, "this server has no reflection service");
            return self.grpc_answer(out, stream, &[], no, (date, server));
        }
        self.stream_head(out, stream, CONTENT_TYPE, false, (date, server));
        if !self
            .streams
            .iter()
            .any(|s| s.id == stream && s.state == State::Sending)
        {
            return;
        }
        let call = Call {
            kind,
            reader: MessageReader::new(DEFAULT_MAX_MESSAGE.min(self.limits.max_body), true),
            encoding,
            seq: 0,
        };
        self.calls.push((stream, call));
        self.call_data(stream, body, out);
    }

    /// Request bytes of the live call on `stream`, after those before them: each
    /// message they complete is answered; the call ends when a request fails or
    /// when the client's side has ended. Before the call is routed they are kept for
    /// it, within the body limit.
    pub(super) fn call_data(&mut self, stream: u32, bytes: &[u8], out: &mut Vec<u8>) {
        let Some(ended) = self
            .streams
            .iter()
            .find(|s| s.id == stream)
            .map(|s| s.ended)
        else {
            return;
        };
        let Some(k) = self.calls.iter().position(|c| c.0 == stream) else {
            return self.keep_early(stream, bytes, out);
        };
        let reflection = self.reflection.as_deref();
        let Call {
            kind,
            reader,
            encoding,
            seq,
        } = &mut self.calls[k].1;
        let (kind, encoding) = (*kind, *encoding);
        let mut replies = Vec::new();
        let mut refusal = None;
        let fed = reader.feed(bytes, &mut |m| {
            if refusal.is_none() {
                *seq += 1;
                let asked = (m.bytes, m.compressed);
                if let Err(e) =
                    grpc::live_reply(kind, asked, (encoding, *seq), reflection, &mut replies)
                {
                    refusal = Some(e);
                }
            }
        });
        if let Err(e) = fed {
            refusal.get_or_insert(match e {
                GrpcError::TooLarge { .. } => (8, "a message over the server's limit"),
                _ => (13, "the request's messages break their framing"),
            });
        }
        if ended && !reader.between() {
            refusal.get_or_insert((13, "the request ended inside a message"));
        }
        if !replies.is_empty() {
            self.piece(out, stream, &replies, false);
        }
        // This call's own answers waiting for the client's windows (a download on
        // another stream of the connection is not this call's to answer for).
        let waiting = (self.streams.iter())
            .find(|s| s.id == stream)
            .map_or(0, |s| s.pending.len() - s.sent);
        if waiting > LIVE_HELD {
            refusal.get_or_insert((8, "answers held for a client that reads none"));
        }
        match refusal {
            Some((status, message)) => {
                if !ended {
                    self.cut_short(stream);
                }
                self.end_call(out, stream, status, message);
            }
            None if ended => self.end_call(out, stream, 0, ""),
            None => {}
        }
    }

    /// The call on `stream` ends while the client still sends: the stream is reset
    /// (NO_ERROR) once its answer is out.
    fn cut_short(&mut self, stream: u32) {
        if let Some(s) = self.streams.iter_mut().find(|s| s.id == stream) {
            s.early = true;
        }
    }

    /// Ends the live call on `stream` with `(status, message)`.
    fn end_call(&mut self, out: &mut Vec<u8>, stream: u32, status: u8, message: &'static str) {
        self.calls.retain(|c| c.0 != stream);
        self.end_grpc(out, stream, status, message);
    }

    /// Ends the gRPC answer on `stream` with trailers carrying `(status, message)`:
    /// now, or once the answer bytes it holds are out.
    pub(super) fn end_grpc(
        &mut self,
        out: &mut Vec<u8>,
        stream: u32,
        status: u8,
        message: &'static str,
    ) {
        let i = self.streams.iter().position(|s| s.id == stream);
        match i.map(|i| &self.streams[i]) {
            Some(s) if s.pending.len() > s.sent => {
                self.trailers.push((stream, status, message));
            }
            Some(_) => {
                self.trailers(out, stream, status, message);
                self.finish(out, i.expect("found"));
            }
            None => {}
        }
    }
}
