//! One protocol value per server connection — HTTP/1.x, HTTP/2 or WebSocket, each a
//! sans-IO state machine — and the verbs the event loop drives every one of them by.
//!
//! The loop owns the sockets, the buffers, the timers and the rooms; it hands a
//! connection's input to [`Proto::input`] with its buffers lent as an [`Env`], writes
//! what lands in `out`, schedules what comes back as deferred, and asks the value
//! what it is waiting for ([`Proto::busy`], [`Proto::output_limit`], …) without
//! asking which protocol it is. What differs stays here: HTTP/1.x answers in order and
//! may become HTTP/2 (its preface, or TLS's ALPN) or WebSocket (a `101`); HTTP/2
//! routes each stream's request while the output has room; WebSocket answers
//! messages, pushes on timers and joins rooms.

use std::time::Instant;

use crate::date::DateCache;
use crate::h1::{Answering, Fed, H1Conn};
use crate::h2::{self, Answer, H2Conn, H2Respond};
use crate::request;
use crate::routes::{Deferred, Routed};
use crate::ws::WsConn;
use crate::{Config, SERVER};

/// Output buffered for a connection beyond which its further requests wait.
pub(crate) const MAX_PENDING_OUTPUT: usize = 4 * 1024 * 1024;
/// The same for a WebSocket connection: past it, an echo stops reading, a push waits
/// and a room member is closed as too slow. Lower than HTTP's, as a WebSocket client
/// may hold its connection open without reading for as long as it likes.
pub(crate) const WS_MAX_PENDING: usize = 1024 * 1024;
/// A generated HTTP/2 body buffer larger than this is let go after use.
const BODY_KEEP: usize = 64 * 1024;

/// A connection's protocol.
pub(crate) enum Proto {
    /// HTTP/1.x (until HTTP/2's preface comes, where it may).
    H1(H1Conn),
    H2(Box<H2Conn>),
    /// After an HTTP/1.1 handshake's `101`.
    Ws(Box<WsConn>),
}

/// What the loop lends a connection's protocol for one call: HTTP/1.x's answering
/// state as it takes it (where output goes, the router's state, the header lines,
/// the output waiting), the settings, and where answers that come later and room
/// messages are left for the loop.
pub(crate) struct Env<'a> {
    pub a: Answering<'a>,
    pub config: &'a Config,
    pub date: &'a DateCache,
    /// The connection ends after what was answered: nothing more is routed.
    pub close_after: bool,
    /// Reused buffers: an HTTP/2 request's path, its body and a generated body.
    pub scratch: &'a mut Scratch,
    /// Answers that come later, with their HTTP/2 stream (0 for HTTP/1.x).
    pub later: &'a mut Vec<(Deferred, u32)>,
    /// WebSocket room messages sent in this wake-up, by room.
    pub publish: &'a mut Vec<(Box<[u8]>, Vec<u8>)>,
}

/// Buffers an HTTP/2 connection's routing reuses.
#[derive(Default)]
pub(crate) struct Scratch {
    path: Vec<u8>,
    authorization: Vec<u8>,
    body: Vec<u8>,
    request: Vec<u8>,
}

/// How a pass over a connection's input left its request head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Head {
    /// Input is left that is not a whole request (or frame) yet: to be timed.
    Partial,
    /// Nothing is left part way.
    Whole,
    /// As it was.
    Unchanged,
}

/// What one pass over a connection's input did.
pub(crate) struct Input {
    /// Input bytes used.
    pub used: usize,
    /// The connection closes once its answers are out.
    pub close: bool,
    pub head: Head,
    /// What follows the answers written.
    pub then: Then,
}

/// What follows a pass's answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Then {
    /// Nothing: they are written.
    Written,
    /// It became a WebSocket connection (see [`Proto::upgraded`]).
    Upgraded,
    /// It stopped at a generated body (see [`Proto::fill_tail`]).
    Tail,
}

impl Input {
    fn used(used: usize, head: Head) -> Input {
        Input {
            used,
            close: false,
            head,
            then: Then::Written,
        }
    }
}

/// What a streamed answer's next event did (see [`Proto::feed_next`]).
pub(crate) enum FedNext {
    /// An event went out; the next is due then.
    Next(Instant),
    /// HTTP/1.x's stream ended; the connection takes requests again (or closes).
    Done { close: bool },
    /// HTTP/2's stream went on (its next event due then) or ended, and the other
    /// streams were routed.
    Routed(Option<Instant>),
    /// Nothing was under way.
    Nothing,
}

/// What a deferred answer's arrival did (see [`Proto::finish_deferred`]).
pub(crate) enum Finished {
    /// HTTP/1.x's waiting answer went out; the connection takes requests again (or
    /// closes).
    Unblocked { close: bool },
    /// HTTP/2's stream was answered, and the others routed.
    Routed,
    /// Nothing waited for it (a stream reset meanwhile, a connection that moved on).
    Nothing,
}

impl Proto {
    /// A new connection: HTTP/1.x until its first bytes say otherwise.
    pub(crate) fn new() -> Proto {
        Proto::H1(H1Conn::new())
    }

    /// Answers the complete requests (frames, messages) at the start of `data`,
    /// writing to the `env` it makes; `h2c` says whether HTTP/2 may begin with its
    /// preface (prior knowledge), `alpn_h2` whether TLS's ALPN chose HTTP/2 (asked
    /// only of a connection that has parsed nothing yet). Inlined into the
    /// loop's input pass, which is one function frame on HTTP/1.1's path.
    #[inline(always)]
    pub(crate) fn input<'e>(
        &mut self,
        data: &[u8],
        (h2c, alpn_h2): (bool, impl Fn() -> bool),
        env: impl FnOnce() -> Env<'e>,
    ) -> Input {
        let h1 = match self {
            Proto::H2(_) => return self.input_h2(data, env()),
            Proto::Ws(w) => return input_ws(w, data, env()),
            Proto::H1(h1) => h1,
        };
        if h1.fresh && alpn_h2() {
            // ALPN chose HTTP/2: whatever comes must be its preface.
            return self.input_h2(data, env());
        }
        if h1.fresh && h2c {
            let n = data.len().min(h2::PREFACE.len());
            if data[..n] == h2::PREFACE[..n] {
                if n < h2::PREFACE.len() {
                    return Input::used(0, Head::Partial);
                }
                return self.input_h2(data, env());
            }
        }
        // Made here, on HTTP/1.x's own path: its parts stay in registers.
        let mut env = env();
        env.a.out.clear();
        let answered = h1.answer(data, &mut env.a);
        if let Some(d) = answered.deferred {
            env.later.push((d, 0));
        }
        let then = match answered.upgraded {
            Some(w) => {
                *self = Proto::Ws(w);
                Then::Upgraded
            }
            None if answered.tail => Then::Tail,
            None => Then::Written,
        };
        Input {
            used: answered.used,
            close: answered.close,
            head: if answered.partial {
                Head::Partial
            } else {
                Head::Whole
            },
            then,
        }
    }

    /// HTTP/2: handles the frames at the start of `data` (the connection becomes
    /// HTTP/2 first where it is not yet) and routes what is ready.
    fn input_h2(&mut self, data: &[u8], env: Env<'_>) -> Input {
        env.a.out.clear();
        if !matches!(self, Proto::H2(_)) {
            let mut h2 = H2Conn::new(env.config.limits.clone(), env.a.out);
            if let Some(v) = &env.config.alt_svc {
                h2.advertise(v.as_bytes());
            }
            h2.reflection = env.config.reflection.clone();
            *self = Proto::H2(Box::new(h2));
        }
        let Proto::H2(h) = self else {
            unreachable!("just made HTTP/2")
        };
        let (used, close) = match h.feed(data, env.a.out) {
            Ok(n) => (n, false),
            Err(e) => {
                h2::frame::goaway(env.a.out, h.last_stream(), e.code);
                (data.len(), true)
            }
        };
        // A partial frame, or a header block still open, must be finished within the
        // head timeout, as an HTTP/1 request head must.
        let head = if used < data.len() || h.in_header_block() {
            Head::Partial
        } else {
            Head::Whole
        };
        if !close {
            self.route(env);
        }
        Input {
            used,
            close,
            head,
            then: Then::Written,
        }
    }

    /// HTTP/2: routes the requests that are complete while the output has room
    /// (`env.a.out` may already hold control frames); answers that come later go to
    /// `env.later`. The others have nothing waiting to be routed.
    pub(crate) fn route(&mut self, env: Env<'_>) {
        let Proto::H2(h) = self else {
            return;
        };
        if env.close_after {
            return;
        }
        let (date, server) = (env.date.value(), SERVER.as_bytes());
        let s = env.scratch;
        while env.a.waiting_output + env.a.out.len() + h.held() < MAX_PENDING_OUTPUT {
            let Some(ready) = h.next_ready(&mut s.path, &mut s.request) else {
                break;
            };
            h.authorization(ready.stream, &mut s.authorization);
            let mut resp = H2Respond {
                conn: h,
                out: env.a.out,
                stream: ready.stream,
                head: false,
                date,
                server,
                body: &mut s.body,
            };
            let target = (&s.path[..], &s.authorization[..]);
            if let Routed::Later(d) = resp.route(&ready, target, &s.request, env.a.ctx) {
                env.later.push((d, ready.stream));
            }
        }
        if s.body.capacity() > BODY_KEEP {
            s.body = Vec::new();
        }
    }

    /// It became a WebSocket connection: when its first push is due (from `now`).
    pub(crate) fn upgraded(&mut self, now: Instant) -> Option<Instant> {
        match self {
            Proto::Ws(w) => w.push_from(now),
            _ => None,
        }
    }

    /// The room the connection is a member of (WebSocket's).
    pub(crate) fn room(&self) -> Option<&[u8]> {
        match self {
            Proto::Ws(w) => w.room(),
            _ => None,
        }
    }

    /// Writes a room's `frames` to a member, or, when it is `too_slow`, its close
    /// instead; whether the connection then closes. `None`: not a member taking
    /// messages (not a WebSocket, or closing).
    pub(crate) fn room_frames(
        &mut self,
        frames: &[u8],
        too_slow: bool,
        out: &mut Vec<u8>,
    ) -> Option<bool> {
        let Proto::Ws(w) = self else {
            return None;
        };
        if w.closing() {
            return None;
        }
        if too_slow {
            w.too_slow(out);
            return Some(true);
        }
        out.extend_from_slice(frames);
        Some(false)
    }

    /// Answers flow without requests (WebSocket's pushes and rooms): its reading
    /// stops at [`Proto::output_limit`], and it is shed when the server's budget for
    /// waiting output is spent while its own waits.
    #[inline]
    pub(crate) fn pushes(&self) -> bool {
        matches!(self, Proto::Ws(_))
    }

    /// Output waiting for the client past which the connection's reading stops
    /// (HTTP/1.x stops at its own queue of unanswered requests instead).
    #[inline]
    pub(crate) fn output_limit(&self) -> Option<usize> {
        match self {
            Proto::H1(_) => None,
            Proto::H2(_) => Some(MAX_PENDING_OUTPUT),
            Proto::Ws(_) => Some(WS_MAX_PENDING),
        }
    }

    /// HTTP/1.x waiting for a deferred answer (HTTP/2 streams wait on their own).
    #[inline]
    pub(crate) fn blocked(&self) -> bool {
        matches!(self, Proto::H1(h) if h.blocked())
    }

    /// HTTP/1.x making a generated body as the client reads.
    #[inline]
    pub(crate) fn has_tail(&self) -> bool {
        matches!(self, Proto::H1(h) if h.has_tail())
    }

    /// More of a generated body, into `out`.
    pub(crate) fn fill_tail(&mut self, out: &mut Vec<u8>) {
        if let Proto::H1(h) = self {
            h.fill_tail(out);
        }
    }

    /// Streams answered in part or not yet (HTTP/2's).
    #[inline]
    pub(crate) fn open_streams(&self) -> usize {
        match self {
            Proto::H2(h) => h.open_streams(),
            _ => 0,
        }
    }

    /// Something is under way that the connection's buffers do not show: an answer
    /// waited for, a generated body, streams open.
    #[inline]
    pub(crate) fn busy(&self) -> bool {
        self.blocked() || self.has_tail() || self.open_streams() > 0
    }

    /// Body bytes held for the client's flow-control windows (HTTP/2's).
    pub(crate) fn held(&self) -> usize {
        match self {
            Proto::H2(h) => h.held(),
            _ => 0,
        }
    }

    /// A streamed answer under way holds the whole connection (HTTP/1.x's): when the
    /// client goes, the rest is for nobody.
    pub(crate) fn answer_holds_connection(&self) -> bool {
        matches!(self, Proto::H1(h) if h.feeding())
    }

    /// Answers go on streams of their own (HTTP/2's), which the client's end of the
    /// connection closing does not end.
    #[inline]
    pub(crate) fn multiplexed(&self) -> bool {
        matches!(self, Proto::H2(_))
    }

    /// Whether a streamed answer is under way (on `stream`, for HTTP/2).
    pub(crate) fn feeding(&self, stream: u32) -> bool {
        match self {
            Proto::H1(h) => h.feeding(),
            Proto::H2(h) => h.feeding(stream),
            Proto::Ws(_) => false,
        }
    }

    /// A streamed answer's first event is due `at`.
    pub(crate) fn feed_from(&mut self, stream: u32, feed: crate::feed::Feed, at: Instant) {
        match self {
            Proto::H1(h) => h.feed_from(at),
            Proto::H2(h) => h.feed_from(stream, feed, at),
            Proto::Ws(_) => {}
        }
    }

    /// A streamed answer's next event is due: it goes to `env.a.out`.
    pub(crate) fn feed_next(&mut self, stream: u32, env: Env<'_>, now: Instant) -> FedNext {
        env.a.out.clear();
        let pacer = &mut env.a.ctx.engine;
        match self {
            Proto::H1(h) => match h.feed_next(env.a.out, env.a.draining, pacer, now) {
                Fed::Next(at) => FedNext::Next(at),
                Fed::Done { close } => FedNext::Done { close },
            },
            Proto::H2(h) => {
                let next = h.feed_next(env.a.out, stream, pacer, now);
                // A stream that ended makes room for requests that waited.
                self.route(env);
                FedNext::Routed(match next {
                    Fed::Next(at) => Some(at),
                    Fed::Done { .. } => None,
                })
            }
            Proto::Ws(_) => FedNext::Nothing,
        }
    }

    /// A deferred answer (always `200 text/plain`) is ready for the request waiting
    /// (on `stream`, for HTTP/2): it goes to `env.a.out`.
    pub(crate) fn finish_deferred(&mut self, stream: u32, body: &[u8], env: Env<'_>) -> Finished {
        env.a.out.clear();
        match self {
            Proto::H2(h) => {
                // The client may have reset the stream meanwhile.
                let Some(method) = h.waiting(stream) else {
                    return Finished::Nothing;
                };
                let sent = if method == request::Method::Head {
                    &[][..]
                } else {
                    body
                };
                let answer = Answer {
                    status: 200,
                    ctype: "text/plain",
                    len: body.len(),
                    body: sent,
                    more: None,
                    file: None,
                };
                h.respond(
                    env.a.out,
                    stream,
                    answer,
                    env.date.value(),
                    SERVER.as_bytes(),
                );
                self.route(env);
                Finished::Routed
            }
            Proto::H1(h1) => {
                // The server is stopping: this answer is the connection's last.
                match h1.finish_deferred(env.a.out, env.a.lines, body, env.a.draining) {
                    Some(close) => Finished::Unblocked { close },
                    None => Finished::Nothing,
                }
            }
            Proto::Ws(_) => Finished::Nothing,
        }
    }

    /// A push's next message is due: it goes to `out`; when the one after it is
    /// due, or `None` (then [`Proto::closing`] says whether the push is over).
    pub(crate) fn push_next(&mut self, out: &mut Vec<u8>) -> Option<Instant> {
        match self {
            Proto::Ws(w) => w.push_next(out),
            _ => None,
        }
    }

    /// Its close is out or under way (WebSocket's).
    pub(crate) fn closing(&self) -> bool {
        matches!(self, Proto::Ws(w) if w.closing())
    }

    /// Once its close is out, the connection waits a while for the client's end
    /// before closing (WebSocket's: see the connection's `lingering`).
    pub(crate) fn lingers(&self) -> bool {
        matches!(self, Proto::Ws(_))
    }

    /// The server is stopping: the protocol's goodbye goes to `out` — HTTP/2's GOAWAY
    /// (streams opened so far are answered), WebSocket's close (going away, after
    /// which the connection closes: `Some(true)`). `None`: it has none (HTTP/1.x's
    /// last answer says `Connection: close`).
    pub(crate) fn go_away(&mut self, out: &mut Vec<u8>) -> Option<bool> {
        match self {
            Proto::H2(h) => {
                h.go_away(out);
                Some(false)
            }
            Proto::Ws(w) => {
                w.going_away(out);
                Some(true)
            }
            Proto::H1(_) => None,
        }
    }

    /// The connection is ended for a head not finished in time (`timed_out`) or for
    /// idling: what it says first goes to `bye` — HTTP/2's GOAWAY, HTTP/1.x's `408`
    /// for a late head.
    pub(crate) fn timed_out(&self, timed_out: bool, bye: &mut Vec<u8>) {
        match self {
            Proto::H2(h) => h2::frame::goaway(bye, h.last_stream(), h2::frame::NO_ERROR),
            Proto::H1(_) if timed_out => bye.extend_from_slice(
                b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            ),
            Proto::H1(_) | Proto::Ws(_) => {}
        }
    }
}

/// WebSocket: takes the client's frames in `data` (all of it), writing what they ask
/// for; a room's messages are left for the loop to publish at the wake-up's end. Out
/// of line: HTTP/1.1's requests do not carry it.
#[cold]
#[inline(never)]
fn input_ws(w: &mut WsConn, data: &[u8], env: Env<'_>) -> Input {
    env.a.out.clear();
    let close = w.feed(data, env.a.out);
    if let Some((room, frames)) = w.take_published().filter(|(_, f)| !f.is_empty()) {
        match env.publish.iter_mut().find(|(r, _)| r[..] == *room) {
            Some((_, all)) => all.extend_from_slice(&frames),
            None => env.publish.push((room.into(), frames)),
        }
    }
    Input {
        used: data.len(),
        close,
        head: Head::Unchanged,
        then: Then::Written,
    }
}

/// Where a protocol that answers over datagrams sends one: the address, the size of
/// each datagram in the buffer, ECN, and the local address to send from.
pub(crate) use crate::h3::Out as Datagram;

/// What one receive brought: from whom, to which local address (when the socket
/// says), the ECN bits it carried, and one datagram or several of `stride` bytes each
/// but the last (0: one).
pub(crate) struct Received<'a> {
    pub from: std::net::SocketAddr,
    pub local: Option<std::net::IpAddr>,
    pub ecn: Option<quinn_proto::EcnCodepoint>,
    pub data: &'a [u8],
    pub stride: usize,
}

/// A protocol that answers over datagrams — HTTP/3's QUIC endpoint, one per UDP
/// socket — as the loop drives it: datagrams and the time in, datagrams out, the next
/// instant it must be woken. The loop's UDP side names no protocol: it holds one of
/// these.
pub(crate) trait DatagramEndpoint: Send {
    /// Takes what one receive brought; returns how many datagrams it held.
    fn handle(&mut self, now: Instant, r: Received<'_>) -> usize;
    /// The `Date` value answers carry from now on.
    fn set_date(&mut self, date: &[u8]);
    /// Runs the timers due at `now`.
    fn timeout(&mut self, now: Instant);
    /// The next datagrams to send (into `buf`: one, or up to `segments` of one
    /// connection) and where, if any.
    fn transmit(&mut self, now: Instant, buf: &mut Vec<u8>, segments: usize) -> Option<Datagram>;
    /// When [`DatagramEndpoint::timeout`] is next needed.
    fn next_timeout(&mut self) -> Option<Instant>;
    /// The server is stopping: every connection is closed (what that sends is the next
    /// datagrams), and the endpoint's counters go to the server's.
    fn close_all(&mut self, now: Instant);
}
