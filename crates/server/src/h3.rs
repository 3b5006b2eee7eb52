//! HTTP/3 for the reference server: one QUIC endpoint's connections as a sans-IO
//! value ([`H3Endpoint`]) — datagrams and the time in, datagrams out, the next
//! instant it must be woken — serving the same routes as HTTP/1.1 and HTTP/2.
//!
//! QUIC is quinn-proto's; HTTP/3's streams and QPACK are stampede-wire's. A request
//! stream is read to its end with RFC 9114's rules (a malformed one is answered
//! with H3_MESSAGE_ERROR on its stream, the connection going on), then routed:
//! whole answers, `/bytes` and files as the stream's flow control takes them, delayed
//! and streamed answers on the endpoint's own timers, `/biteq` hashed at once. The
//! connection-wide streams, a broken control stream or a QPACK encoder stream out
//! of bounds close the connection with HTTP/3's code. Address validation: with
//! [`H3Endpoint::retry_above`] set, a new connection beyond that many open first
//! proves its address with a Retry; QUIC's amplification limit (three times what a
//! client sent until its address is valid) is quinn-proto's. Nothing here reads a
//! clock: the loop (or a test in simulated time) gives every instant.
//! With [`H3Endpoint::retry_handshaking`] set, a new connection while that many
//! handshakes are in progress proves its address first too, so Initials that never
//! complete hold no more than that many connections' state.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use quinn_proto::{
    Connection, ConnectionHandle, DatagramEvent, Dir, Endpoint, Event, StreamEvent, StreamId,
    VarInt,
};
use stampede_quic::session::Role;
use stampede_quic::{read_stream, Outbox, Read, Session};
use stampede_wire::h3::message::{Message, Part, Side};
use stampede_wire::h3::{data_head, Code, H3Error};

use crate::request::{split_target, Method, Request};
use crate::routes::{self, Ctx, Deferred, Feed, Pattern, Respond, Routed, BODY_CHUNK};

mod respond;
mod turns;
use respond::{H3Respond, Heads};

/// Datagrams the endpoint itself answers (Version Negotiation, Retry, stateless
/// resets, refusals) waiting to go out, at most.
const MAX_ANSWERS: usize = 1024;

/// What a request stream is doing.
enum Answer {
    /// Its request is still arriving.
    Reading,
    /// Its answer is written (the outbox may still hold some of it).
    Done,
    /// A body made a chunk at a time as the stream's window takes it.
    Body {
        pattern: Pattern,
        file: Option<Arc<[u8]>>,
    },
    /// A delayed answer, due on the endpoint's timers.
    Delayed,
    /// A streamed answer: piece `next` of `feed` is due on the timers.
    Feeding { feed: Feed, next: u32, at: Instant },
}

struct ReqStream {
    id: StreamId,
    msg: Message,
    method: Option<Method>,
    target: Vec<u8>,
    body: Vec<u8>,
    /// The request's `authorization` value (empty when none).
    authorization: Vec<u8>,
    answer: Answer,
}

struct Conn {
    conn: Connection,
    session: Session,
    outbox: Outbox,
    streams: Vec<ReqStream>,
    /// In the endpoint's ready queue: it may have datagrams to send.
    queued: bool,
    /// Among the connections whose QUIC timer is read again before the next wait.
    touched: bool,
    /// The QUIC timer this connection has on the endpoint's heap, as last read.
    armed: Option<Instant>,
    /// This end's control stream is open (once the client's limits allow it).
    opened: bool,
}

/// Counters of what the endpoint did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct H3Stats {
    pub connections: u64,
    pub retries: u64,
    pub refused: u64,
    pub requests: u64,
    /// Connections closed for breaking HTTP/3 or QPACK.
    pub h3_errors: u64,
    /// Streams answered with an error instead of a response (malformed requests).
    pub stream_errors: u64,
}

impl H3Stats {
    /// Adds another endpoint's counters.
    pub fn add(&mut self, o: &H3Stats) {
        self.connections += o.connections;
        self.retries += o.retries;
        self.refused += o.refused;
        self.requests += o.requests;
        self.h3_errors += o.h3_errors;
        self.stream_errors += o.stream_errors;
    }
}

/// Where datagrams readied by [`H3Endpoint::transmit`] go, and how they are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Out {
    pub to: SocketAddr,
    /// Each datagram's size (the buffer holds several when it is the longer; the last
    /// may be shorter).
    pub segment: usize,
    pub ecn: Option<quinn_proto::EcnCodepoint>,
    /// The address to send from (the one the client wrote to).
    pub from: Option<std::net::IpAddr>,
}

impl Out {
    fn of(t: &quinn_proto::Transmit) -> Out {
        Out {
            to: t.destination,
            segment: t.segment_size.unwrap_or(t.size),
            ecn: t.ecn,
            from: t.src_ip,
        }
    }
}

/// One UDP socket's HTTP/3 (see the module's note).
pub struct H3Endpoint {
    endpoint: Endpoint,
    conns: Vec<Option<Conn>>,
    /// The endpoint's own answers, ready to send.
    answers: std::collections::VecDeque<(Out, Vec<u8>)>,
    /// Deferred answers: when, the connection, the stream.
    timers: BinaryHeap<Reverse<(Instant, usize, u64)>>,
    /// Each connection's QUIC timer: when, the connection. An entry whose connection
    /// has since moved its timer (or gone) is stale, and skipped.
    quic_timers: BinaryHeap<Reverse<(Instant, usize)>>,
    /// Connections that may have datagrams to send, taking turns: a wake-up visits
    /// these, not every connection.
    ready: std::collections::VecDeque<usize>,
    /// Connections touched since their QUIC timer was last read.
    touched: Vec<usize>,
    ctx: Ctx,
    heads: Heads,
    limits: crate::Limits,
    /// New connections beyond this many open must first validate their address
    /// with a Retry (`Some(0)`: every one).
    pub retry_above: Option<usize>,
    /// New connections while this many handshakes are in progress must first
    /// validate their address with a Retry: Initials that never complete (spoofed,
    /// or a flood) then cost a Retry each — no connection state, no full handshake
    /// reply — beyond this many, which bounds the memory half-open connections hold.
    pub retry_handshaking: Option<usize>,
    /// Most connections open; more are refused.
    pub max_connections: usize,
    pub stats: H3Stats,
    scratch: Vec<u8>,
    body: Vec<u8>,
}

impl H3Endpoint {
    /// An endpoint serving with `config` and routing with `ctx`, within `limits`: a
    /// request's field section up to `max_head` bytes (what it advertises as
    /// SETTINGS_MAX_FIELD_SECTION_SIZE, as RFC 9114 §4.2.2 counts them), its body up
    /// to `max_body`.
    pub fn new(
        config: quinn_proto::ServerConfig,
        transport: &stampede_quic::Transport,
        ctx: Ctx,
        limits: crate::Limits,
    ) -> H3Endpoint {
        H3Endpoint {
            endpoint: Endpoint::new(
                stampede_quic::endpoint_config(transport),
                Some(Arc::new(config)),
                true,
                None,
            ),
            conns: Vec::new(),
            answers: Default::default(),
            timers: BinaryHeap::new(),
            quic_timers: BinaryHeap::new(),
            ready: Default::default(),
            touched: Vec::new(),
            ctx,
            heads: Heads::default(),
            limits,
            retry_above: None,
            retry_handshaking: None,
            max_connections: 100_000,
            stats: H3Stats::default(),
            scratch: Vec::new(),
            body: Vec::new(),
        }
    }

    /// The `Date` value answers carry from now on.
    pub fn set_date(&mut self, date: &[u8]) {
        self.heads.set_date(date);
    }

    /// Closes every connection with H3_NO_ERROR (the server is stopping); their
    /// CONNECTION_CLOSE frames are the next datagrams.
    pub fn close_all(&mut self, now: Instant) {
        for i in 0..self.conns.len() {
            if let Some(c) = self.conns[i].as_mut() {
                let code = VarInt::from_u64(Code::NO_ERROR.0).unwrap_or(VarInt::MAX);
                c.conn.close(now, code, bytes::Bytes::new());
                self.wake(i);
            }
        }
    }

    /// Request streams held over all connections (being read, or with an answer still
    /// to make or to hand to QUIC).
    pub fn streams(&self) -> usize {
        self.conns.iter().flatten().map(|c| c.streams.len()).sum()
    }

    /// Connections open.
    pub fn open(&self) -> usize {
        self.conns.iter().filter(|c| c.is_some()).count()
    }

    /// Connections whose handshake is in progress.
    pub fn handshaking(&self) -> usize {
        (self.conns.iter().flatten())
            .filter(|c| c.conn.is_handshaking())
            .count()
    }

    /// Takes what one receive brought from `from`, sent to `local` (when the socket
    /// says), with the ECN bits it carried: one datagram, or several of `stride`
    /// bytes each but the last (0: one). Returns how many datagrams it held.
    pub fn handle(
        &mut self,
        now: Instant,
        from: SocketAddr,
        local: Option<std::net::IpAddr>,
        ecn: Option<quinn_proto::EcnCodepoint>,
        received: &[u8],
        stride: usize,
    ) -> usize {
        let mut n = 0;
        for d in stampede_quic::udp::split(received, stride) {
            self.datagram(now, from, local, ecn, d);
            n += 1;
        }
        n
    }

    /// Takes one datagram.
    fn datagram(
        &mut self,
        now: Instant,
        from: SocketAddr,
        local: Option<std::net::IpAddr>,
        ecn: Option<quinn_proto::EcnCodepoint>,
        data: bytes::BytesMut,
    ) {
        let mut buf = std::mem::take(&mut self.scratch);
        buf.clear();
        match self.endpoint.handle(now, from, local, ecn, data, &mut buf) {
            Some(DatagramEvent::ConnectionEvent(h, ev)) => {
                if let Some(c) = self.conns.get_mut(h.0).and_then(|c| c.as_mut()) {
                    c.conn.handle_event(ev);
                }
                self.drive(now, h.0);
            }
            Some(DatagramEvent::NewConnection(incoming)) => {
                let open = self.open();
                if open >= self.max_connections {
                    self.stats.refused += 1;
                    let t = self.endpoint.refuse(incoming, &mut buf);
                    self.answer(t, &buf);
                } else if incoming.may_retry()
                    && (self.retry_above.is_some_and(|n| open >= n)
                        || self
                            .retry_handshaking
                            .is_some_and(|n| self.handshaking() >= n))
                {
                    self.stats.retries += 1;
                    if let Ok(t) = self.endpoint.retry(incoming, &mut buf) {
                        self.answer(t, &buf);
                    }
                } else {
                    match self.endpoint.accept(incoming, now, &mut buf, None) {
                        Ok((h, conn)) => {
                            self.stats.connections += 1;
                            if self.conns.len() <= h.0 {
                                self.conns.resize_with(h.0 + 1, || None);
                            }
                            let c = Conn {
                                conn,
                                session: Session::new(Role::Server, self.limits.max_head, 0),
                                outbox: Outbox::default(),
                                streams: Vec::new(),
                                queued: false,
                                touched: false,
                                armed: None,
                                opened: false,
                            };
                            self.conns[h.0] = Some(c);
                            self.drive(now, h.0);
                        }
                        Err(e) => {
                            if let Some(t) = e.response {
                                self.answer(t, &buf);
                            }
                        }
                    }
                }
            }
            Some(DatagramEvent::Response(t)) => self.answer(t, &buf),
            None => {}
        }
        self.scratch = buf;
    }

    fn answer(&mut self, t: quinn_proto::Transmit, buf: &[u8]) {
        if self.answers.len() < MAX_ANSWERS {
            self.answers
                .push_back((Out::of(&t), buf[..t.size].to_vec()));
        }
    }

    /// Passes the connection's endpoint events, and forgets it once drained.
    fn endpoint_events(&mut self, i: usize) {
        let Some(c) = self.conns[i].as_mut() else {
            return;
        };
        while let Some(ev) = c.conn.poll_endpoint_events() {
            let drained = ev.is_drained();
            if let Some(back) = self.endpoint.handle_event(ConnectionHandle(i), ev) {
                c.conn.handle_event(back);
            }
            if drained {
                self.conns[i] = None;
                return;
            }
        }
    }

    /// Handles what connection `i` reports after input or a timer.
    fn drive(&mut self, now: Instant, i: usize) {
        self.wake(i);
        loop {
            let Some(c) = self.conns[i].as_mut() else {
                return;
            };
            let Some(ev) = c.conn.poll() else {
                break;
            };
            let r = match ev {
                Event::Connected | Event::Stream(StreamEvent::Available { dir: Dir::Uni })
                    if !c.opened =>
                {
                    // The control stream opens as soon as the client's stream limit is
                    // known; a client that allows none yet is waited for.
                    match c.session.open(&mut c.conn, &mut c.outbox) {
                        Ok(()) => {
                            c.opened = true;
                            Ok(())
                        }
                        Err(_) if matches!(ev, Event::Connected) => Ok(()),
                        Err(e) => Err(e),
                    }
                }
                Event::Stream(StreamEvent::Opened { dir: Dir::Uni }) => {
                    let mut r = Ok(());
                    while let Some(id) = c.conn.streams().accept(Dir::Uni) {
                        r = r.and(c.session.read(&mut c.conn, &mut c.outbox, id, &mut |_| {}));
                    }
                    r
                }
                Event::Stream(StreamEvent::Opened { dir: Dir::Bi }) => {
                    let mut opened = Vec::new();
                    while let Some(id) = c.conn.streams().accept(Dir::Bi) {
                        c.streams.push(ReqStream {
                            id,
                            msg: Message::new(Side::Request),
                            method: None,
                            target: Vec::new(),
                            authorization: Vec::new(),
                            body: Vec::new(),
                            answer: Answer::Reading,
                        });
                        opened.push(id);
                    }
                    for id in opened {
                        self.read_request(now, i, id);
                    }
                    Ok(())
                }
                Event::Stream(StreamEvent::Readable { id }) if id.dir() == Dir::Uni => {
                    c.session.read(&mut c.conn, &mut c.outbox, id, &mut |_| {})
                }
                Event::Stream(StreamEvent::Readable { id }) => {
                    self.read_request(now, i, id);
                    Ok(())
                }
                Event::Stream(StreamEvent::Writable { id }) => {
                    let _ = c.outbox.flush(&mut c.conn, id);
                    self.more_body(i, id);
                    self.reap(i, id);
                    Ok(())
                }
                Event::Stream(StreamEvent::Stopped { id, .. }) => {
                    c.outbox.drop_stream(id);
                    c.streams.retain(|s| s.id != id);
                    Ok(())
                }
                _ => Ok(()),
            };
            if let Err(e) = r {
                self.stats.h3_errors += 1;
                if let Some(c) = self.conns[i].as_mut() {
                    close(&mut c.conn, now, &e);
                }
            }
        }
        self.endpoint_events(i);
    }

    /// Reads request stream `id` of connection `i` as far as it came; a complete
    /// request is answered.
    fn read_request(&mut self, now: Instant, i: usize, id: StreamId) {
        let Some(c) = self.conns[i].as_mut() else {
            return;
        };
        let Some(si) = c.streams.iter().position(|s| s.id == id) else {
            return;
        };
        let s = &mut c.streams[si];
        let decoder = &mut c.session.decoder;
        let (max_body, max_head) = (self.limits.max_body, self.limits.max_head);
        let mut too_big = false;
        let (method, target, body, msg) = (&mut s.method, &mut s.target, &mut s.body, &mut s.msg);
        let authorization = &mut s.authorization;
        let read = read_stream(&mut c.conn, id, &mut |bytes| {
            msg.feed(bytes, decoder, &mut |p| match p {
                Part::Request { method: m, path } => {
                    *method = Some(match m {
                        b"GET" => Method::Get,
                        b"HEAD" => Method::Head,
                        b"POST" => Method::Post,
                        _ => Method::Other,
                    });
                    target.extend_from_slice(&path[..path.len().min(max_head)]);
                }
                Part::Field { name, value } if name == b"authorization" => {
                    authorization.clear();
                    authorization.extend_from_slice(&value[..value.len().min(max_head)]);
                }
                Part::Data(d) => {
                    if body.len() + d.len() > max_body {
                        too_big = true;
                    } else {
                        body.extend_from_slice(d);
                    }
                }
                _ => {}
            })
        });
        let (ended, failure, reset) = match read {
            Read::Blocked => (false, None, false),
            Read::Ended => (true, None, false),
            Read::Reset(_) => (false, None, true),
            Read::Failed(e) => (false, Some(e), false),
        };
        if reset {
            c.outbox.drop_stream(id);
            c.streams.swap_remove(si);
            return;
        }
        if let Some(e) = failure {
            self.stats.stream_errors += 1;
            if !e.is_stream_error() {
                self.stats.h3_errors += 1;
                return close(&mut c.conn, now, &e);
            }
            let code = VarInt::from_u64(e.code.0).unwrap_or(VarInt::MAX);
            let _ = c.conn.recv_stream(id).stop(code);
            let _ = c.conn.send_stream(id).reset(code);
            c.outbox.drop_stream(id);
            c.streams.swap_remove(si);
            return;
        }
        if !ended || !matches!(c.streams[si].answer, Answer::Reading) {
            return;
        }
        let finished = c.streams[si].msg.finish();
        if let Err(e) = &finished {
            // A frame cut by the stream's end is the connection's error (RFC 9114
            // §7.1), as every error that is not the message's alone.
            if !e.is_stream_error() {
                self.stats.stream_errors += 1;
                self.stats.h3_errors += 1;
                return close(&mut c.conn, now, e);
            }
        }
        if finished.is_err() || c.streams[si].method.is_none() {
            self.stats.stream_errors += 1;
            let code = VarInt::from_u64(Code::MESSAGE_ERROR.0).unwrap_or(VarInt::MAX);
            let _ = c.conn.send_stream(id).reset(code);
            c.streams.swap_remove(si);
            return;
        }
        self.stats.requests += 1;
        self.route(now, i, si, too_big);
    }

    /// Answers the complete request on stream `si` of connection `i`.
    fn route(&mut self, now: Instant, i: usize, si: usize, too_big: bool) {
        let Some(c) = self.conns[i].as_mut() else {
            return;
        };
        let s = &mut c.streams[si];
        let method = s.method.unwrap_or(Method::Other);
        let target = std::mem::take(&mut s.target);
        let body = std::mem::take(&mut s.body);
        let authorization = std::mem::take(&mut s.authorization);
        let id = s.id;
        let mut r = H3Respond {
            conn: &mut c.conn,
            outbox: &mut c.outbox,
            stream: s,
            head: method == Method::Head,
            heads: &mut self.heads,
            body: &mut self.body,
        };
        if too_big {
            r.respond(413, "text/plain", b"request refused\n");
            return;
        }
        let (path, query) = split_target(&target);
        let req = Request {
            method,
            path,
            query,
            keep_alive: true,
            http10: false,
            body: &body,
            upgrade: false,
            authorization: &authorization,
        };
        match routes::route(&req, &mut self.ctx, &mut r) {
            Routed::Written => {
                self.more_body(i, id);
                self.reap(i, id);
            }
            Routed::Later(Deferred::Delay(ms)) => {
                r.stream.answer = Answer::Delayed;
                self.timers
                    .push(Reverse((now + Duration::from_millis(ms), i, u64::from(id))));
            }
            Routed::Later(Deferred::Feed(f)) => {
                let at = now + f.first;
                r.stream.answer = Answer::Feeding {
                    feed: f,
                    next: 0,
                    at,
                };
                self.timers.push(Reverse((at, i, u64::from(id))));
            }
            Routed::Later(Deferred::Biteq(key)) => {
                let b = routes::biteq_body(&key);
                r.respond(200, "text/plain", &b);
            }
        }
    }

    /// A deferred answer on stream `id` of connection `ci` is due.
    fn deferred(&mut self, ci: usize, id: StreamId) {
        let Some(c) = self.conns.get_mut(ci).and_then(|c| c.as_mut()) else {
            return;
        };
        let Some(s) = c.streams.iter_mut().find(|s| s.id == id) else {
            return;
        };
        match &mut s.answer {
            Answer::Delayed => {
                let head = s.method == Some(Method::Head);
                let mut r = H3Respond {
                    conn: &mut c.conn,
                    outbox: &mut c.outbox,
                    stream: s,
                    head,
                    heads: &mut self.heads,
                    body: &mut self.body,
                };
                r.respond(200, "text/plain", b"delayed\n");
            }
            Answer::Feeding { feed, next, at } => {
                let f = *feed;
                let mut piece = Vec::new();
                f.piece(*next, &mut piece);
                *next += 1;
                let last = *next >= f.n;
                if last {
                    f.end(&mut piece);
                }
                let mut out = Vec::with_capacity(piece.len() + 8);
                if !piece.is_empty() {
                    data_head(&mut out, piece.len() as u64);
                    out.extend_from_slice(&piece);
                }
                if last {
                    s.answer = Answer::Done;
                } else {
                    // On the server's clock from the first: a late loop catches up.
                    *at += f.gap;
                    self.timers.push(Reverse((*at, ci, u64::from(id))));
                }
                let _ = c.outbox.write(&mut c.conn, id, &out, last);
            }
            _ => {}
        }
        self.reap(ci, id);
    }

    /// Forgets stream `id` of connection `i` once its answer is whole and handed to
    /// QUIC (which keeps what is unacknowledged): an answered stream costs nothing.
    fn reap(&mut self, i: usize, id: StreamId) {
        let Some(c) = self.conns.get_mut(i).and_then(|c| c.as_mut()) else {
            return;
        };
        if c.outbox.owes(id) {
            return;
        }
        if let Some(k) = c.streams.iter().position(|s| s.id == id) {
            if matches!(c.streams[k].answer, Answer::Done) {
                c.streams.swap_remove(k);
            }
        }
    }

    /// Stream `id` of connection `i` may take more of a body made as it goes: chunks
    /// go out until its window holds one back (the next is made once that one is
    /// taken).
    fn more_body(&mut self, i: usize, id: StreamId) {
        let Some(c) = self.conns[i].as_mut() else {
            return;
        };
        while !c.outbox.owes(id) {
            let Some(s) = c.streams.iter_mut().find(|s| s.id == id) else {
                return;
            };
            let Answer::Body { pattern, file } = &mut s.answer else {
                return;
            };
            self.body.clear();
            match file {
                Some(f) => pattern.fill_from(f, &mut self.body, BODY_CHUNK),
                None => pattern.fill(&mut self.body, BODY_CHUNK),
            };
            let last = pattern.left() == 0;
            let mut out = Vec::with_capacity(self.body.len() + 8);
            data_head(&mut out, self.body.len() as u64);
            out.extend_from_slice(&self.body);
            if last {
                s.answer = Answer::Done;
            }
            if c.outbox.write(&mut c.conn, id, &out, last).is_err() {
                c.streams.retain(|s| s.id != id);
                return;
            }
        }
    }
}

/// Closes `conn` with an HTTP/3 error.
fn close(conn: &mut Connection, now: Instant, e: &H3Error) {
    let code = VarInt::from_u64(e.code.0).unwrap_or(VarInt::MAX);
    conn.close(now, code, bytes::Bytes::from_static(e.why.as_bytes()));
}

/// An endpoint the server's loop drives, with the server's counters its own are added
/// to when it closes.
pub(crate) struct Served {
    pub endpoint: H3Endpoint,
    pub totals: Arc<std::sync::Mutex<H3Stats>>,
}

impl crate::proto::DatagramEndpoint for Served {
    fn handle(&mut self, now: Instant, r: crate::proto::Received<'_>) -> usize {
        (self.endpoint).handle(now, r.from, r.local, r.ecn, r.data, r.stride)
    }

    fn set_date(&mut self, date: &[u8]) {
        self.endpoint.set_date(date);
    }

    fn timeout(&mut self, now: Instant) {
        self.endpoint.timeout(now);
    }

    fn transmit(&mut self, now: Instant, buf: &mut Vec<u8>, segments: usize) -> Option<Out> {
        self.endpoint.transmit(now, buf, segments)
    }

    fn next_timeout(&mut self) -> Option<Instant> {
        self.endpoint.next_timeout()
    }

    fn close_all(&mut self, now: Instant) {
        self.endpoint.close_all(now);
        let mut t = self.totals.lock().unwrap_or_else(|e| e.into_inner());
        t.add(&self.endpoint.stats);
    }
}
