//! HTTP/1.x for the server: the request side of one connection as a sans-IO state
//! machine, beside the HTTP/2 one in [`crate::h2`].
//!
//! The event loop hands [`H1Conn::answer`] the bytes it holds; the connection parses
//! every complete (pipelined) request at their start, routes each, and appends the
//! answers to the output it is given, until one must wait: a deferred answer (a delay,
//! a computation), a generated body longer than one chunk (made as the client reads,
//! [`H1Conn::fill_tail`]), output past its limit, or a request that ends the
//! connection. It owns HTTP/1's rules at the server: `100 Continue` once per awaited
//! body; a request that is refused or closes the connection is the last one parsed
//! (what follows may hide a smuggled request). No socket, no clock: the loop times the
//! partial head it is told about and writes the bytes.

use crate::request::{self, Limits, Method, Parsed};
use std::time::Instant;

use crate::routes::{
    self, Ctx, Deferred, Feed, Http1, Lines, Pattern, Persist, Routed, BODY_CHUNK,
};

/// The server side of one HTTP/1.x connection.
#[derive(Debug)]
pub struct H1Conn {
    /// Nothing parsed yet: HTTP/2's preface may still come.
    pub fresh: bool,
    /// `100 Continue` went out for the request whose body is awaited.
    continued: bool,
    /// Waiting for a deferred answer: how the connection persists after it, and
    /// whether it answers HEAD (no body).
    blocked: Option<(Persist, bool)>,
    /// The rest of a generated body, made as the client takes it; requests behind it
    /// wait, as they do behind a deferred answer.
    tail: Option<Pattern>,
    /// The static file the tail's bytes come from, when it is one.
    tail_file: Option<std::sync::Arc<[u8]>>,
    /// A streamed answer under way (the connection is blocked until it ends): what
    /// it sends, its next event, and when that is due once the loop has said.
    feed: Option<(Feed, u32, Option<Instant>)>,
}

/// What [`H1Conn::feed_next`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fed {
    /// An event went out; the next is due then.
    Next(Instant),
    /// The stream ended; the connection closes after it if `close`.
    Done { close: bool },
}

/// What one pass of [`H1Conn::answer`] needs from the event loop.
pub struct Answering<'a> {
    /// Where answers go.
    pub out: &'a mut Vec<u8>,
    /// The router's per-loop state.
    pub ctx: &'a mut Ctx,
    /// Request size limits.
    pub limits: &'a Limits,
    /// The `Date` and `Server` header lines.
    pub lines: Lines<'a>,
    /// The server is stopping: every answer is the connection's last.
    pub draining: bool,
    /// Output already waiting for the client; no request is answered once it and
    /// `out` reach `max_output`.
    pub waiting_output: usize,
    pub max_output: usize,
}

/// How a pass over the input ended.
#[derive(Debug)]
pub struct Answered {
    /// Input bytes used (all of it once the connection is to close: nothing after a
    /// closing or refused request is parsed).
    pub used: usize,
    /// The connection closes once the answers are out.
    pub close: bool,
    /// An answer that comes later; the connection waits for it.
    pub deferred: Option<Deferred>,
    /// Stopped at a generated body (see [`H1Conn::fill_tail`]).
    pub tail: bool,
    /// Input is left that is not a complete request yet (a head to time).
    pub partial: bool,
    /// A WebSocket handshake was answered with `101`: the connection speaks
    /// WebSocket from `used` on.
    pub upgraded: Option<Box<crate::ws::WsConn>>,
}

impl Default for H1Conn {
    fn default() -> Self {
        H1Conn::new()
    }
}

impl H1Conn {
    /// A new connection: nothing parsed yet.
    pub fn new() -> H1Conn {
        H1Conn {
            fresh: true,
            continued: false,
            blocked: None,
            tail: None,
            tail_file: None,
            feed: None,
        }
    }

    /// Whether a streamed answer is under way.
    #[inline]
    pub fn feeding(&self) -> bool {
        self.feed.is_some()
    }

    /// The streamed answer's first event is due at `at`.
    pub fn feed_from(&mut self, at: Instant) {
        if let Some(f) = &mut self.feed {
            f.2 = Some(at);
        }
    }

    /// The streamed answer's next event is due: appends it to `out` (and the stream's
    /// end after its last), on the schedule's clock. `last` makes the connection close
    /// after the stream (the server is stopping).
    pub fn feed_next(
        &mut self,
        out: &mut Vec<u8>,
        last: bool,
        pacer: &mut dyn crate::feed::Pacer,
        now: Instant,
    ) -> Fed {
        let Some((feed, next, Some(due))) = self.feed else {
            return Fed::Done { close: false };
        };
        if next < feed.n {
            if let Some(at) = pacer.ready(&feed, next, now) {
                self.feed = Some((feed, next, Some(at)));
                return Fed::Next(at);
            }
            feed.chunk_piece(next, out);
            let at = pacer.next(&feed, next + 1, due, now);
            if next + 1 < feed.n {
                self.feed = Some((feed, next + 1, Some(at)));
                return Fed::Next(at);
            }
        }
        feed.chunk_end(out);
        self.feed = None;
        let (persist, _) = self.blocked.take().unwrap_or((Persist::Keep, false));
        Fed::Done {
            close: last || persist == Persist::Close,
        }
    }

    /// Waiting for a deferred answer.
    #[inline]
    pub fn blocked(&self) -> bool {
        self.blocked.is_some()
    }

    /// A generated body is still being made.
    #[inline]
    pub fn has_tail(&self) -> bool {
        self.tail.is_some()
    }

    /// Answers the complete requests at the start of `data` until one must wait. A
    /// call here costs every request its frame, so it is inlined into the loop.
    #[inline(always)]
    pub fn answer(&mut self, data: &[u8], a: &mut Answering<'_>) -> Answered {
        self.fresh = false;
        let mut pos = 0;
        let mut close = false;
        let mut deferred = None;
        let mut upgraded = None;
        while pos < data.len() && a.waiting_output + a.out.len() < a.max_output {
            match request::parse(&data[pos..], a.limits) {
                Parsed::Partial(waiting) => {
                    if waiting.is_some_and(|w| w.expects_continue) && !self.continued {
                        self.continued = true;
                        a.out.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
                    }
                    break;
                }
                Parsed::Rejected(r) => {
                    routes::respond(
                        a.out,
                        a.lines,
                        r.status(),
                        "text/plain",
                        b"request refused\n",
                        Persist::Close,
                        Method::Get,
                    );
                    close = true;
                    break;
                }
                Parsed::Complete(req, len) => {
                    let at = pos;
                    pos += len;
                    self.continued = false;
                    // In place: a copy of the whole request costs a dozen
                    // instructions a request.
                    let mut req = req;
                    req.keep_alive &= !a.draining;
                    if req.upgrade {
                        // A WebSocket handshake: what follows it is frames, or nothing.
                        match crate::ws::handshake(&req, &data[at..pos], a.out, a.lines) {
                            crate::ws::Handshake::Upgraded(w) => upgraded = Some(w),
                            crate::ws::Handshake::Refused => close = true,
                        }
                        break;
                    }
                    let persist = Persist::of(&req);
                    let mut resp = Http1 {
                        out: a.out,
                        lines: a.lines,
                        persist,
                        method: req.method,
                        tail: None,
                        tail_file: &mut self.tail_file,
                    };
                    if let Routed::Later(d) = routes::route(&req, a.ctx, &mut resp) {
                        self.blocked = Some((persist, req.method == Method::Head));
                        if let Deferred::Feed(f) = d {
                            self.feed = Some((f, 0, None));
                        }
                        deferred = Some(d);
                    }
                    self.tail = resp.tail;
                    close = !req.keep_alive;
                    if close || deferred.is_some() || self.tail.is_some() {
                        break;
                    }
                }
            }
        }
        if close && deferred.is_none() {
            // Nothing after a closing or refused request is answered.
            pos = data.len();
        }
        Answered {
            used: pos,
            close,
            partial: pos < data.len() && deferred.is_none() && self.tail.is_none(),
            deferred,
            tail: self.tail.is_some(),
            upgraded,
        }
    }

    /// Appends the next chunk of a generated body to `out`; true once it is whole.
    pub fn fill_tail(&mut self, out: &mut Vec<u8>) -> bool {
        let Some(t) = self.tail.as_mut() else {
            return true;
        };
        match &self.tail_file {
            Some(f) => t.fill_from(f, out, BODY_CHUNK),
            None => t.fill(out, BODY_CHUNK),
        };
        if t.left() == 0 {
            self.tail = None;
            self.tail_file = None;
        }
        self.tail.is_none()
    }

    /// The deferred answer is ready: appends it, `200 text/plain`, to `out` (a HEAD
    /// request's without its body) after the `Date` and `Server` lines; `last` makes
    /// it the connection's last. Returns whether the connection closes after it, or
    /// `None` when nothing was waiting.
    pub fn finish_deferred(
        &mut self,
        out: &mut Vec<u8>,
        lines: Lines<'_>,
        body: &[u8],
        last: bool,
    ) -> Option<bool> {
        let (mut persist, head) = self.blocked.take()?;
        if last {
            persist = Persist::Close;
        }
        let method = if head { Method::Head } else { Method::Get };
        routes::respond(out, lines, 200, "text/plain", body, persist, method);
        Some(persist == Persist::Close)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::store::Store;

    /// Answers `data` on a connection as the event loop would, with no socket.
    fn answer(c: &mut H1Conn, data: &[u8], draining: bool) -> (Answered, String) {
        let mut out = Vec::new();
        let mut ctx = Ctx::new(Arc::new(Store::generate()), None, 0);
        let limits = Limits::default();
        let r = c.answer(
            data,
            &mut Answering {
                out: &mut out,
                ctx: &mut ctx,
                limits: &limits,
                lines: Lines {
                    date: b"Date: x\r\n",
                    server: b"Server: s\r\n",
                },
                draining,
                waiting_output: 0,
                max_output: 1 << 20,
            },
        );
        (r, String::from_utf8_lossy(&out).into_owned())
    }

    #[test]
    fn pipelined_requests_are_answered_in_one_pass() {
        let mut c = H1Conn::new();
        let two =
            b"GET /pong HTTP/1.1\r\nHost: a\r\n\r\nGET /pong HTTP/1.1\r\nHost: a\r\n\r\nGET /po";
        let (r, out) = answer(&mut c, two, false);
        assert_eq!(out.matches("HTTP/1.1 200 OK").count(), 2, "{out}");
        assert!(r.partial && !r.close && r.deferred.is_none());
        assert_eq!(r.used, two.len() - b"GET /po".len());
        assert!(!c.fresh);
    }

    #[test]
    fn nothing_after_a_closing_or_refused_request_is_parsed() {
        let mut c = H1Conn::new();
        let smuggle = b"GET /pong HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\nGET /pong HTTP/1.1\r\nHost: a\r\n\r\n";
        let (r, out) = answer(&mut c, smuggle, false);
        assert_eq!(out.matches("HTTP/1.1 200").count(), 1);
        assert!(r.close && !r.partial);
        assert_eq!(r.used, smuggle.len());
        let mut c = H1Conn::new();
        let bad = b"GET /pong HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nGET /pong HTTP/1.1\r\nHost: a\r\n\r\n";
        let (r, out) = answer(&mut c, bad, false);
        assert!(out.starts_with("HTTP/1.1 400"), "{out}");
        assert_eq!(out.matches("HTTP/1.1").count(), 1);
        assert!(r.close);
    }

    #[test]
    fn continue_goes_out_once_and_draining_closes() {
        let mut c = H1Conn::new();
        let head =
            b"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n";
        let (r, out) = answer(&mut c, head, false);
        assert_eq!(out, "HTTP/1.1 100 Continue\r\n\r\n");
        assert!(r.partial && r.used == 0);
        let (_, again) = answer(&mut c, head, false);
        assert!(again.is_empty(), "{again}");
        let mut c = H1Conn::new();
        let (r, out) = answer(&mut c, b"GET /pong HTTP/1.1\r\nHost: a\r\n\r\n", true);
        assert!(r.close && out.contains("Connection: close"), "{out}");
    }

    #[test]
    fn deferred_answers_wait_and_finish() {
        let mut c = H1Conn::new();
        let (r, out) = answer(
            &mut c,
            b"HEAD /delay/5 HTTP/1.1\r\nHost: a\r\n\r\nGET /pong HTTP/1.1\r\nHost: a\r\n\r\n",
            false,
        );
        assert!(out.is_empty() && r.deferred.is_some() && c.blocked());
        let mut out = Vec::new();
        let close = c.finish_deferred(
            &mut out,
            Lines {
                date: b"Date: x\r\n",
                server: b"Server: s\r\n",
            },
            b"delayed\n",
            false,
        );
        assert_eq!(close, Some(false));
        let out = String::from_utf8(out).unwrap();
        assert!(
            out.starts_with("HTTP/1.1 200") && !out.ends_with("delayed\n"),
            "{out}"
        );
        assert!(!c.blocked());
        assert_eq!(
            c.finish_deferred(
                &mut Vec::new(),
                Lines {
                    date: b"",
                    server: b""
                },
                b"",
                false
            ),
            None
        );
    }
}
