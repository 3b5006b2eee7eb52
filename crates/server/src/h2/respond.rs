//! Responses on HTTP/2 streams: the router's answers as HEADERS and DATA frames, the
//! body sent as far as the client's windows allow.

use super::Ready;
use super::{frame, Answer, H2Conn, Stream};
use crate::request::{split_target, Method, Request};
use crate::routes::{self, Ctx, Pattern, Respond, Routed, BODY_CHUNK};

/// Writes DATA frames for as much of `body` as the windows allow; the last carries
/// END_STREAM. Returns the bytes sent.
/// Sends as much of `body` as the windows allow; END_STREAM goes with its end when it
/// is the `last` of the response.
pub(super) fn send_data(
    out: &mut Vec<u8>,
    s: &mut Stream,
    body: &[u8],
    last: bool,
    conn_window: &mut i64,
    max_frame: usize,
) -> usize {
    let mut at = 0;
    while at < body.len() {
        let room = s.send_window.min(*conn_window);
        if room <= 0 {
            break;
        }
        let n = (body.len() - at).min(max_frame).min(room as usize);
        let end = last && at + n == body.len();
        frame::head(
            out,
            n,
            frame::DATA,
            if end { frame::END_STREAM } else { 0 },
            s.id,
        );
        out.extend_from_slice(&body[at..at + n]);
        at += n;
        s.send_window -= n as i64;
        *conn_window -= n as i64;
    }
    at
}

pub(super) fn three_digits(status: u16) -> [u8; 3] {
    let s = status.min(999);
    [
        b'0' + (s / 100) as u8,
        b'0' + (s / 10 % 10) as u8,
        b'0' + (s % 10) as u8,
    ]
}

/// Hands a routed response to an HTTP/2 stream.
pub struct H2Respond<'a> {
    pub conn: &'a mut H2Conn,
    pub out: &'a mut Vec<u8>,
    pub stream: u32,
    pub head: bool,
    /// The `Date` and `Server` values (no name, no line end).
    pub date: &'a [u8],
    pub server: &'a [u8],
    /// Where generated bodies are built.
    pub body: &'a mut Vec<u8>,
}

impl Respond for H2Respond<'_> {
    fn respond(&mut self, status: u16, ctype: &str, body: &[u8]) {
        let len = if routes::bodyless(status) {
            0
        } else {
            body.len()
        };
        let sent = if self.head { &[][..] } else { &body[..len] };
        let answer = Answer {
            status,
            ctype,
            len,
            body: sent,
            more: None,
            file: None,
        };
        self.conn
            .respond(self.out, self.stream, answer, self.date, self.server);
    }

    fn respond_pattern(&mut self, len: usize) {
        self.body.clear();
        let mut p = Pattern::new(if self.head { 0 } else { len });
        p.fill(self.body, BODY_CHUNK);
        let answer = Answer {
            status: 200,
            ctype: "application/octet-stream",
            len,
            body: self.body,
            more: Some(p),
            file: None,
        };
        self.conn
            .respond(self.out, self.stream, answer, self.date, self.server);
    }

    fn respond_file(&mut self, ctype: &str, bytes: std::sync::Arc<[u8]>) {
        self.body.clear();
        let len = bytes.len();
        let mut p = Pattern::file(if self.head { 0 } else { len });
        p.fill_from(&bytes, self.body, BODY_CHUNK);
        let answer = Answer {
            status: 200,
            ctype,
            len,
            body: self.body,
            more: Some(p),
            file: Some(&bytes),
        };
        self.conn
            .respond(self.out, self.stream, answer, self.date, self.server);
    }
}

impl H2Respond<'_> {
    /// Answers the complete request `ready`, whose request-target is `target`: one
    /// refused for a limit with its status, any other through the router (which may
    /// defer it). Sets the stream and HEAD-ness of this responder from it.
    pub fn route(&mut self, ready: &Ready, target: &[u8], ctx: &mut Ctx) -> Routed {
        self.stream = ready.stream;
        self.head = ready.method == Method::Head;
        if let Some(status) = ready.refuse {
            self.respond(status, "text/plain", b"request refused\n");
            return Routed::Written;
        }
        let (path, query) = split_target(target);
        let req = Request {
            method: ready.method,
            path,
            query,
            keep_alive: true,
            http10: false,
        };
        routes::route(&req, ctx, self)
    }
}
