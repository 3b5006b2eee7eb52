//! Responses on HTTP/2 streams: the router's answers as HEADERS and DATA frames, the
//! body sent as far as the client's windows allow.

use super::Ready;
use super::{frame, Answer, H2Conn, State, Stream};
use crate::request::{split_target, Method, Request};
use std::time::Instant;

use crate::h1::Fed;
use crate::routes::{self, Ctx, Feed, Pattern, Respond, Routed, BODY_CHUNK};

/// What a response's HEADERS frame says: `length` is its Content-Length (none for a
/// streamed answer).
struct Fields<'a> {
    status: u16,
    ctype: &'a str,
    length: Option<usize>,
    date: &'a [u8],
    server: &'a [u8],
}

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

pub(crate) fn three_digits(status: u16) -> [u8; 3] {
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
    fn stream_head(&mut self, ctype: &str) -> bool {
        self.conn.stream_head(
            self.out,
            self.stream,
            ctype,
            self.head,
            (self.date, self.server),
        );
        !self.head
    }

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
    pub fn route(
        &mut self,
        ready: &Ready,
        (target, authorization): (&[u8], &[u8]),
        body: &[u8],
        ctx: &mut Ctx,
    ) -> Routed {
        self.stream = ready.stream;
        self.head = ready.method == Method::Head;
        if let Some(status) = ready.refuse {
            self.respond(status, "text/plain", b"request refused\n");
            return Routed::Written;
        }
        if ready.tunnel != super::Tunnel::None {
            let at = (self.date, self.server);
            return (self.conn).open_socket(
                self.out,
                (ready.stream, ready.tunnel),
                target,
                body,
                at,
            );
        }
        let (path, query) = split_target(target);
        // A gRPC call to a method the server does not have is answered as gRPC's
        // (UNIMPLEMENTED), not with an HTTP error page.
        if ready.live {
            let at = (self.date, self.server);
            (self.conn).open_call(self.out, (ready.stream, path), ready.encoding, body, at);
            return Routed::Written;
        }
        if ready.method == Method::Post && (ready.grpc || crate::grpc::is_call(path)) {
            return self.grpc(path, body, ready.encoding);
        }
        let req = Request {
            method: ready.method,
            path,
            query,
            keep_alive: true,
            http10: false,
            body,
            upgrade: false,
            authorization,
        };
        routes::route(&req, ctx, self)
    }
}

impl H2Respond<'_> {
    /// Answers a gRPC call (see [`crate::grpc`]): its messages and trailers now, or
    /// its head now and its messages on timers. Out of line, so that routing every
    /// other request stays as small as it was.
    #[inline(never)]
    fn grpc(&mut self, path: &[u8], body: &[u8], encoding: crate::grpc::Encoding) -> Routed {
        match crate::grpc::answer(path, body, encoding) {
            crate::grpc::Reply::Now {
                messages,
                status,
                message,
            } => {
                let at = (self.date, self.server);
                (self.conn).grpc_answer(self.out, self.stream, &messages, (status, message), at);
                Routed::Written
            }
            crate::grpc::Reply::Later(feed) => {
                self.stream_head(stampede_wire::grpc::CONTENT_TYPE);
                Routed::Later(routes::Deferred::Feed(feed))
            }
        }
    }
}

impl H2Conn {
    /// Answers the gRPC call on `stream`: the head, the framed `messages` as far as
    /// the windows allow, then trailers with `(status, message)` once they are out.
    pub fn grpc_answer(
        &mut self,
        out: &mut Vec<u8>,
        stream: u32,
        messages: &[u8],
        (status, message): (u8, &'static str),
        (date, server): (&[u8], &[u8]),
    ) {
        self.stream_head(
            out,
            stream,
            stampede_wire::grpc::CONTENT_TYPE,
            false,
            (date, server),
        );
        let Some(i) = self
            .streams
            .iter()
            .position(|s| s.id == stream && s.state == State::Sending)
        else {
            return;
        };
        let s = &mut self.streams[i];
        let sent = send_data(
            out,
            s,
            messages,
            false,
            &mut self.send_window,
            self.peer_max_frame,
        );
        if sent == messages.len() {
            self.trailers(out, stream, status, message);
            return self.finish(out, i);
        }
        s.pending.extend_from_slice(&messages[sent..]);
        self.held += messages.len() - sent;
        self.trailers.push((stream, status, message));
        self.pump(out);
    }

    /// Writes a gRPC answer's trailers, ending `stream`.
    pub(super) fn trailers(&mut self, out: &mut Vec<u8>, stream: u32, status: u8, message: &str) {
        let at = out.len();
        frame::head(out, 0, frame::HEADERS, 0, stream);
        let e = &mut self.encoder;
        e.begin(out);
        let mut digits = [0u8; 20];
        e.literal(
            out,
            b"grpc-status",
            routes::decimal(u64::from(status), &mut digits),
        );
        if !message.is_empty() {
            let text = stampede_wire::grpc::encode_message(message);
            e.literal(out, b"grpc-message", text.as_bytes());
        }
        let block = out.len() - at - 9;
        out[at..at + 3].copy_from_slice(&(block as u32).to_be_bytes()[1..]);
        out[at + 4] = frame::END_HEADERS | frame::END_STREAM;
    }

    /// The next complete request to route, if any; its `:path` (query included) is
    /// copied to `path`, and a POST request's body to `body`.
    pub fn next_ready(&mut self, path: &mut Vec<u8>, body: &mut Vec<u8>) -> Option<Ready> {
        while let Some(id) = self.ready.pop_front() {
            if let Some(s) = self
                .streams
                .iter_mut()
                .find(|s| s.id == id && s.state == State::Queued)
            {
                s.state = State::Waiting;
                path.clear();
                path.extend_from_slice(&s.path);
                body.clear();
                if s.method == Method::Post || s.tunnel != super::Tunnel::None {
                    if let Some(i) = self.posted.iter().position(|p| p.0 == id) {
                        *body = self.posted.swap_remove(i).1;
                    }
                }
                return Some(Ready {
                    stream: id,
                    method: s.method,
                    refuse: s.refuse,
                    encoding: s.encoding,
                    grpc: s.grpc,
                    live: s.live,
                    tunnel: s.tunnel,
                });
            }
        }
        None
    }

    /// Stream `id`'s `authorization` value into `out` (empty when it sent none).
    #[inline]
    pub fn authorization(&mut self, id: u32, out: &mut Vec<u8>) {
        out.clear();
        if self.authorizations.is_empty() {
            return;
        }
        if let Some(i) = self.authorizations.iter().position(|a| a.0 == id) {
            *out = self.authorizations.swap_remove(i).1;
        }
    }

    /// The method of a stream that waits for its answer (the client may have reset it).
    pub fn waiting(&self, stream: u32) -> Option<Method> {
        self.streams
            .iter()
            .find(|s| s.id == stream && s.state == State::Waiting)
            .map(|s| s.method)
    }

    /// Answers `stream`: a HEADERS frame with `date` and `server` (values only), then
    /// as much of the answer's body as the windows allow (the rest is held), then the
    /// rest of a generated body as it is taken.
    pub fn respond(
        &mut self,
        out: &mut Vec<u8>,
        stream: u32,
        answer: Answer<'_>,
        date: &[u8],
        server: &[u8],
    ) {
        let Answer {
            status,
            ctype,
            len,
            body,
            more,
            file,
        } = answer;
        let Some(i) = self
            .streams
            .iter()
            .position(|s| s.id == stream && s.state == State::Waiting)
        else {
            return;
        };
        let more = more.filter(|m| m.left() > 0);
        let no_body = body.is_empty() && more.is_none();
        let length = (status == 200 || !routes::bodyless(status)).then_some(len);
        let fields = Fields {
            status,
            ctype,
            length,
            date,
            server,
        };
        self.head(out, stream, fields, no_body);
        if no_body {
            self.finish(out, i);
            return;
        }
        let s = &mut self.streams[i];
        s.state = State::Sending;
        let last = more.is_none();
        let sent = send_data(
            out,
            s,
            body,
            last,
            &mut self.send_window,
            self.peer_max_frame,
        );
        if sent == body.len() && last {
            self.finish(out, i);
        } else {
            let s = &mut self.streams[i];
            s.pending.extend_from_slice(&body[sent..]);
            s.sent = 0;
            s.more = more.unwrap_or_default();
            self.held += body.len() - sent + s.more.left();
            if let Some(f) = file.filter(|_| s.more.left() > 0) {
                self.files.push((s.id, f.clone()));
            }
            self.pump(out);
        }
    }

    /// Writes a response's HEADERS frame on `stream`; `end` ends the stream with it.
    /// Inlined: it is on the path of every response.
    #[inline(always)]
    fn head(&mut self, out: &mut Vec<u8>, stream: u32, f: Fields<'_>, end: bool) {
        let at = out.len();
        frame::head(out, 0, frame::HEADERS, 0, stream);
        let e = &mut self.encoder;
        e.begin(out);
        match f.status {
            200 => e.indexed(out, 8),
            204 => e.indexed(out, 9),
            206 => e.indexed(out, 10),
            304 => e.indexed(out, 11),
            400 => e.indexed(out, 12),
            404 => e.indexed(out, 13),
            500 => e.indexed(out, 14),
            _ => e.field(out, 8, &three_digits(f.status), false),
        }
        e.field(out, 54, f.server, true);
        e.field(out, 33, f.date, true);
        if let Some(v) = &self.alt_svc {
            e.literal(out, b"alt-svc", v);
        }
        if f.status == 405 {
            e.field(out, 22, b"GET, HEAD", true);
        }
        e.field(out, 31, f.ctype.as_bytes(), true);
        match f.length {
            Some(len) => {
                let mut digits = [0u8; 20];
                e.field(out, 28, routes::decimal(len as u64, &mut digits), true);
            }
            // A streamed answer: no length, and no cache (24: cache-control).
            None if f.status == 200 => e.field(out, 24, b"no-cache", true),
            None => {}
        }
        let block = out.len() - at - 9;
        out[at..at + 3].copy_from_slice(&(block as u32).to_be_bytes()[1..]);
        out[at + 4] = frame::END_HEADERS | if end { frame::END_STREAM } else { 0 };
    }

    /// Begins a streamed answer on `stream`: its head now (no length), its events by
    /// [`H2Conn::feed_next`] once [`H2Conn::feed_from`] has set the first one's time.
    /// A HEAD request's answer ends with the head.
    pub fn stream_head(
        &mut self,
        out: &mut Vec<u8>,
        stream: u32,
        ctype: &str,
        head_only: bool,
        (date, server): (&[u8], &[u8]),
    ) {
        let Some(i) = self
            .streams
            .iter()
            .position(|s| s.id == stream && s.state == State::Waiting)
        else {
            return;
        };
        let fields = Fields {
            status: 200,
            ctype,
            length: None,
            date,
            server,
        };
        self.head(out, stream, fields, head_only);
        if head_only {
            return self.finish(out, i);
        }
        let s = &mut self.streams[i];
        s.state = State::Sending;
        s.pending.clear();
        s.sent = 0;
    }

    /// The streamed answer on `stream` (see [`H2Conn::stream_head`]): its first event
    /// is due at `at`.
    pub fn feed_from(&mut self, stream: u32, feed: Feed, at: Instant) {
        if self
            .streams
            .iter()
            .any(|s| s.id == stream && s.state == State::Sending)
        {
            self.feeds.push((stream, feed, 0, at));
        }
    }

    /// Whether `stream` carries a streamed answer still under way.
    pub fn feeding(&self, stream: u32) -> bool {
        self.feeds.iter().any(|f| f.0 == stream) || self.pushing(stream)
    }

    /// The streamed answer on `stream` has its next event due: it goes out as a DATA
    /// frame (held, as any body, while the client's windows are shut); after the
    /// last, the end (`data: [DONE]` for server-sent events) with END_STREAM.
    pub fn feed_next(
        &mut self,
        out: &mut Vec<u8>,
        stream: u32,
        pacer: &mut dyn crate::feed::Pacer,
        now: Instant,
    ) -> Fed {
        let Some(k) = self.feeds.iter().position(|f| f.0 == stream) else {
            return self.push_next(out, stream);
        };
        let (id, feed, next, due) = self.feeds[k];
        if next < feed.n {
            if let Some(at) = pacer.ready(&feed, next, now) {
                self.feeds[k] = (id, feed, next, at);
                return Fed::Next(at);
            }
        }
        let mut bytes = Vec::with_capacity(256);
        if next < feed.n {
            feed.piece(next, &mut bytes);
            self.piece(out, id, &bytes, false);
            if next + 1 < feed.n {
                let at = pacer.next(&feed, next + 1, due, now);
                self.feeds[k] = (id, feed, next + 1, at);
                return Fed::Next(at);
            }
        }
        self.feeds.swap_remove(k);
        if let routes::FeedKind::Grpc { status, .. } = feed.kind {
            // The stream ends with trailers, once its held messages are out.
            let message = if status == 0 { "" } else { crate::grpc::ASKED };
            self.end_grpc(out, id, status, message);
            return Fed::Done { close: false };
        }
        bytes.clear();
        feed.end(&mut bytes);
        self.piece(out, id, &bytes, true);
        Fed::Done { close: false }
    }

    /// Sends `bytes` on the streamed answer of `stream`, behind any it holds; `last`
    /// ends the stream with them.
    pub(super) fn piece(&mut self, out: &mut Vec<u8>, stream: u32, bytes: &[u8], last: bool) {
        let Some(i) = self
            .streams
            .iter()
            .position(|s| s.id == stream && s.state == State::Sending)
        else {
            return;
        };
        let s = &mut self.streams[i];
        if s.pending.len() > s.sent {
            // Bytes wait for the windows: these go behind them.
            s.pending.extend_from_slice(bytes);
            self.held += bytes.len();
            return self.pump(out);
        }
        s.pending.clear();
        s.sent = 0;
        if bytes.is_empty() {
            if last {
                frame::head(out, 0, frame::DATA, frame::END_STREAM, stream);
                self.finish(out, i);
            }
            return;
        }
        let sent = send_data(
            out,
            s,
            bytes,
            last,
            &mut self.send_window,
            self.peer_max_frame,
        );
        if sent == bytes.len() {
            if last {
                self.finish(out, i);
            }
        } else {
            s.pending.extend_from_slice(&bytes[sent..]);
            self.held += bytes.len() - sent;
        }
    }

    /// The response on stream `i` is sent: the stream closes (reset when the client
    /// was still sending a refused request).
    pub(super) fn finish(&mut self, out: &mut Vec<u8>, i: usize) {
        let s = &self.streams[i];
        if s.early {
            frame::rst_stream(out, s.id, frame::NO_ERROR);
        }
        self.remove(s.id);
    }

    /// Sends held body bytes as far as the windows now allow.
    pub(super) fn pump(&mut self, out: &mut Vec<u8>) {
        if self.held == 0 {
            return;
        }
        let mut done = Vec::new();
        for s in self.streams.iter_mut() {
            if s.state != State::Sending || self.send_window <= 0 {
                continue;
            }
            let mut pending = std::mem::take(&mut s.pending);
            let feeding = self.feeds.iter().any(|f| f.0 == s.id)
                || self.calls.iter().any(|c| c.0 == s.id)
                || self.sockets.iter().any(|c| c.0 == s.id);
            let trailed = self.trailers.iter().any(|t| t.0 == s.id);
            loop {
                let last = s.more.left() == 0 && !feeding;
                let n = send_data(
                    out,
                    s,
                    &pending[s.sent..],
                    last && !trailed,
                    &mut self.send_window,
                    self.peer_max_frame,
                );
                s.sent += n;
                self.held -= n;
                if s.sent < pending.len() {
                    break;
                }
                if last {
                    done.push(s.id);
                    break;
                }
                if feeding && s.more.left() == 0 {
                    // A streamed answer's held events are out: the next comes on its
                    // timer.
                    pending.clear();
                    s.sent = 0;
                    break;
                }
                // The chunk is out: make the next one while the windows have room.
                pending.clear();
                s.sent = 0;
                match self.files.iter().find(|(id, _)| *id == s.id) {
                    Some((_, f)) => s.more.fill_from(f, &mut pending, BODY_CHUNK),
                    None => s.more.fill(&mut pending, BODY_CHUNK),
                };
                if s.send_window.min(self.send_window) <= 0 {
                    break;
                }
            }
            s.pending = pending;
        }
        for id in done {
            if let Some(k) = self.trailers.iter().position(|t| t.0 == id) {
                let (_, status, message) = self.trailers.swap_remove(k);
                self.trailers(out, id, status, message);
            }
            if let Some(i) = self.streams.iter().position(|s| s.id == id) {
                self.finish(out, i);
            }
        }
    }
}
