//! WebSocket over HTTP/2 (RFC 8441): an extended CONNECT with `:protocol websocket`
//! opens a WebSocket on its stream, whose DATA frames carry the WebSocket's frames
//! both ways.
//!
//! The server says it takes them (SETTINGS_ENABLE_CONNECT_PROTOCOL, in its first
//! SETTINGS). Such a stream is routed as it opens, as a live gRPC call is: the
//! endpoint is opened by the same code as an HTTP/1.1 upgrade ([`crate::ws::over_h2`]),
//! answered `200` with the subprotocol and permessage-deflate's answer, and from then
//! on each DATA frame's bytes go to the WebSocket and its answers go back as DATA on
//! the stream, within the client's windows. The close ends our side of the stream
//! with it (END_STREAM), and when the client still had its own open the stream is
//! reset with NO_ERROR after it (RFC 9113 8.1: the answer is whole); the client
//! ending its side (END_STREAM) without a close ends ours too. A push's messages go
//! on the loop's timers as a streamed answer's events do. A client that leaves its
//! answers unread past [`MAX_HELD`] has its stream reset, as a live call is ended.

use super::{frame, H2Conn, State};
use crate::routes::{Deferred, Routed};

/// What an extended CONNECT asked to tunnel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tunnel {
    /// An ordinary request.
    None,
    /// `:protocol websocket`.
    WebSocket,
    /// Another protocol, which this server does not tunnel (`501`).
    Other,
}

/// The most answer bytes held on a connection for a client that does not read them
/// before the stream that adds to them is reset.
const MAX_HELD: usize = 16 << 20;
/// The most bytes a WebSocket field may hold, and the most
/// `sec-websocket-extensions` fields taken.
const MAX_FIELD: usize = 4096;
const MAX_EXTENSIONS: usize = 8;

/// An extended CONNECT's WebSocket fields, kept until it is routed.
#[derive(Debug, Default)]
pub(super) struct Ask {
    version: Vec<u8>,
    protocols: Vec<u8>,
    extensions: Vec<Vec<u8>>,
}

impl Ask {
    /// Takes a `sec-websocket-*` field; false when there are too many or one is too
    /// long (the request is then malformed).
    pub(super) fn field(&mut self, name: &[u8], value: &[u8]) -> bool {
        if value.len() > MAX_FIELD {
            return false;
        }
        match name {
            b"sec-websocket-version" => self.version = value.to_vec(),
            b"sec-websocket-protocol" if self.protocols.is_empty() => {
                self.protocols = value.to_vec()
            }
            b"sec-websocket-extensions" if self.extensions.len() < MAX_EXTENSIONS => {
                self.extensions.push(value.to_vec())
            }
            b"sec-websocket-extensions" => return false,
            _ => {}
        }
        true
    }
}

impl H2Conn {
    /// The stream `s` opened by an extended CONNECT asks to tunnel `t`, with `ask`'s
    /// WebSocket fields: it is routed as it opens, as a live call is, its bytes
    /// coming as they are sent. Out of line: every other request passes it by.
    #[cold]
    pub(super) fn tunnel_opens(&mut self, s: &mut super::Stream, t: Tunnel, ask: Option<Ask>) {
        s.tunnel = t;
        s.live = true;
        if t == Tunnel::WebSocket {
            self.asks.push((s.id, ask.unwrap_or_default()));
        }
    }

    /// Opens the tunnel asked for on `stream` to `target` (routed, its head not
    /// sent): a WebSocket answered `200`, then fed `early`, the bytes that came
    /// before it was routed; or a refusal with its status. A push's first message
    /// goes on the loop's timers (`Later`).
    pub(super) fn open_socket(
        &mut self,
        out: &mut Vec<u8>,
        (stream, tunnel): (u32, Tunnel),
        target: &[u8],
        early: &[u8],
        (date, server): (&[u8], &[u8]),
    ) -> Routed {
        let ask = match self.asks.iter().position(|a| a.0 == stream) {
            Some(k) => self.asks.swap_remove(k).1,
            None => Ask::default(),
        };
        let opened = match tunnel {
            Tunnel::WebSocket => {
                crate::ws::over_h2(target, &ask.version, &ask.protocols, &ask.extensions)
            }
            Tunnel::Other | Tunnel::None => Err((
                501,
                "this server tunnels WebSocket (:protocol websocket) only\n",
            )),
        };
        let opened = match opened {
            Ok(o) => o,
            Err((status, why)) => {
                if let Some(s) = self.streams.iter_mut().find(|s| s.id == stream) {
                    // The client's side is open: reset once the refusal is out.
                    s.early = !s.ended;
                }
                let answer = super::Answer {
                    status,
                    ctype: "text/plain",
                    len: why.len(),
                    body: why.as_bytes(),
                    more: None,
                    file: None,
                };
                self.respond(out, stream, answer, date, server);
                return Routed::Written;
            }
        };
        let Some(i) =
            (self.streams.iter()).position(|s| s.id == stream && s.state == State::Waiting)
        else {
            return Routed::Written;
        };
        let at = out.len();
        frame::head(out, 0, frame::HEADERS, 0, stream);
        let e = &mut self.encoder;
        e.begin(out);
        e.indexed(out, 8);
        e.field(out, 54, server, true);
        e.field(out, 33, date, true);
        if let Some(p) = opened.protocol {
            e.literal(out, b"sec-websocket-protocol", p);
        }
        if let Some(x) = &opened.extension {
            e.literal(out, b"sec-websocket-extensions", x.as_bytes());
        }
        let block = out.len() - at - 9;
        out[at..at + 3].copy_from_slice(&(block as u32).to_be_bytes()[1..]);
        out[at + 4] = frame::END_HEADERS;
        let s = &mut self.streams[i];
        s.state = State::Sending;
        s.pending.clear();
        s.sent = 0;
        let mut conn = opened.conn;
        let push = conn.push_from(std::time::Instant::now()).is_some();
        self.sockets.push((stream, conn));
        self.socket_data(stream, early, out);
        if push && self.pushing(stream) {
            Routed::Later(Deferred::Delay(0))
        } else {
            Routed::Written
        }
    }

    /// Bytes of the WebSocket on `stream`: its answers go out as DATA; its close, or
    /// the client's side ended, ends the stream. Before it is opened they are kept
    /// for it, within the body limit; after its close they are dropped.
    pub(super) fn socket_data(&mut self, stream: u32, bytes: &[u8], out: &mut Vec<u8>) {
        let Some((ended, state)) = (self.streams.iter())
            .find(|s| s.id == stream)
            .map(|s| (s.ended, s.state))
        else {
            return;
        };
        let Some(k) = self.sockets.iter().position(|c| c.0 == stream) else {
            if state == State::Sending {
                // Our close is out (its stream ends once it is sent): what the client
                // still sends is not read.
                return;
            }
            return self.keep_early(stream, bytes, out);
        };
        let mut answers = std::mem::take(&mut self.socket_out);
        answers.clear();
        let closing = self.sockets[k].1.feed(bytes, &mut answers);
        self.answer_socket(out, (stream, k), &answers, closing || ended);
        self.socket_out = answers;
    }

    /// Sends `answers` on the WebSocket `k` of `stream`; `last` ends it (the
    /// socket is let go, the stream ends once they are out).
    fn answer_socket(
        &mut self,
        out: &mut Vec<u8>,
        (stream, k): (u32, usize),
        answers: &[u8],
        last: bool,
    ) {
        if last {
            self.sockets.swap_remove(k);
            if let Some(s) = self.streams.iter_mut().find(|s| s.id == stream) {
                s.early = !s.ended;
            }
        }
        self.piece(out, stream, answers, last);
        if !last && self.held > MAX_HELD {
            frame::rst_stream(out, stream, frame::ENHANCE_YOUR_CALM);
            self.remove(stream);
        }
    }

    /// Keeps bytes that came on `stream` before it was routed, within the body
    /// limit (past it the stream is reset).
    pub(super) fn keep_early(&mut self, stream: u32, bytes: &[u8], out: &mut Vec<u8>) {
        if bytes.is_empty() {
            return;
        }
        let kept = match self.posted.iter_mut().find(|p| p.0 == stream) {
            Some((_, b)) => {
                b.extend_from_slice(bytes);
                b.len()
            }
            None => {
                self.posted.push((stream, bytes.to_vec()));
                bytes.len()
            }
        };
        if kept > self.limits.max_body {
            frame::rst_stream(out, stream, frame::ENHANCE_YOUR_CALM);
            self.remove(stream);
        }
    }

    /// Whether `stream` carries a WebSocket push whose next message is due.
    pub(super) fn pushing(&self, stream: u32) -> bool {
        (self.sockets.iter()).any(|c| c.0 == stream && c.1.pushes())
    }

    /// The push on `stream` has its next message due: it goes out, and the one after
    /// it is due at the time returned; after the last, its close ends the stream.
    pub(super) fn push_next(&mut self, out: &mut Vec<u8>, stream: u32) -> crate::h1::Fed {
        let Some(k) = self.sockets.iter().position(|c| c.0 == stream) else {
            return crate::h1::Fed::Done { close: false };
        };
        let mut message = std::mem::take(&mut self.socket_out);
        message.clear();
        let next = self.sockets[k].1.push_next(&mut message);
        self.answer_socket(out, (stream, k), &message, next.is_none());
        self.socket_out = message;
        match next.filter(|_| self.sockets.iter().any(|c| c.0 == stream)) {
            Some(at) => crate::h1::Fed::Next(at),
            None => crate::h1::Fed::Done { close: false },
        }
    }

    /// The server is stopping: every WebSocket is sent its close (1001).
    #[cold]
    pub(super) fn sockets_going_away(&mut self, out: &mut Vec<u8>) {
        let mut close = Vec::new();
        while let Some((stream, mut conn)) = self.sockets.pop() {
            close.clear();
            conn.going_away(&mut close);
            if let Some(s) = self.streams.iter_mut().find(|s| s.id == stream) {
                s.early = !s.ended;
            }
            self.piece(out, stream, &close, true);
        }
    }
}

#[cfg(test)]
mod tests;
