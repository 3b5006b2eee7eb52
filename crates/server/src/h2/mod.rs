//! HTTP/2 for the reference server: the server side of one connection as a sans-IO
//! state machine, for h2c (prior knowledge) and for TLS connections that chose `h2`.
//!
//! The event loop hands [`H2Conn::feed`] the bytes it reads; complete frames are
//! handled at once (SETTINGS, PING, WINDOW_UPDATE, RST_STREAM, GOAWAY), and a stream
//! whose request is complete joins a queue the loop drains with [`H2Conn::next_ready`]
//! when its output has room. Each request is routed by the same code as HTTP/1.1,
//! through [`H2Respond`]; deferred endpoints (`/delay`, `/biteq`) leave their stream
//! waiting while the others go on. Response headers are HPACK-encoded with a mirrored
//! dynamic table, so on a busy connection a response head is a handful of bytes; DATA
//! is sent as far as the client's windows allow and the rest kept until they open.
//!
//! Anything that breaks the protocol is answered as RFC 9113 says: a stream error
//! resets the stream (`RST_STREAM`), a connection error sends `GOAWAY` with its code,
//! after which the connection is closed. Every count a client controls is bounded:
//! streams at once ([`MAX_STREAMS`]), header list and body sizes (the server's
//! [`Limits`]), and frame size.

use std::collections::VecDeque;

use stampede_wire::block::{Assembler, BlockError, Bounds};
pub use stampede_wire::frame;
use stampede_wire::frame::Head;
pub use stampede_wire::frame::PREFACE;
use stampede_wire::hpack;

mod calls;
use calls::Call;
mod data;
mod fields;
mod respond;
mod socket;
use socket::Tunnel;

use fields::{declared_length, field_ok};
pub(crate) use respond::three_digits;
pub use respond::H2Respond;

use crate::request::{Limits, Method};
use crate::routes::Pattern;

/// Streams a client may have open at once (advertised in SETTINGS).
pub const MAX_STREAMS: usize = 128;
/// Our receive window for each stream and for the connection.
const RECV_WINDOW: u32 = 1 << 20;
/// CONTINUATION frames one header block may take: empty ones add nothing to its
/// size, so without a count a client could send them for ever.
const MAX_CONTINUATIONS: u32 = 256;

/// How much of a request header block is held before it ends: the header-list limit
/// and a frame of slack.
fn block_bounds(limits: &Limits) -> Bounds {
    Bounds {
        max_bytes: limits.max_head + frame::DEFAULT_MAX_FRAME,
        max_continuations: MAX_CONTINUATIONS,
    }
}
/// A malformed field was added to the HPACK table: later blocks could refer to it by
/// index, where fields are not checked again, so the connection ends (RFC 9113 5.4.1
/// lets a stream error be treated as a connection error).
const POISONED: &str = "a malformed field added to the header table";
/// How far past the header-list limit a block may decode before the connection is
/// given up on (up to the limit it is answered 431): one large table entry referenced
/// thousands of times decodes to megabytes from a few kilobytes.
const DECODE_SLACK: usize = 4;

/// A connection error: `GOAWAY` with this code, then close.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnError {
    /// The RFC 9113 error code.
    pub code: u32,
    /// What was wrong, for logs and tests.
    pub reason: &'static str,
}

fn fail<T>(code: u32, reason: &'static str) -> Result<T, ConnError> {
    Err(ConnError { code, reason })
}

impl From<BlockError> for ConnError {
    fn from(e: BlockError) -> ConnError {
        ConnError {
            code: e.code(),
            reason: e.reason(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Headers or body still arriving.
    Receiving,
    /// The request is complete and queued to be routed.
    Queued,
    /// Routed: its answer is being made (a deferred one waits here).
    Waiting,
    /// The response head is sent; body bytes wait for the client's windows.
    Sending,
}

#[derive(Debug)]
struct Stream {
    id: u32,
    state: State,
    method: Method,
    /// `:path`, query included.
    path: Vec<u8>,
    /// The request refused before routing (too large): answer with this status.
    refuse: Option<u16>,
    /// Answered before the client finished sending: reset (NO_ERROR) once answered.
    early: bool,
    /// The request's content-length, which its DATA must add up to.
    declared: Option<usize>,
    body_len: usize,
    recv_window: i64,
    recv_unacked: u32,
    send_window: i64,
    /// Response body not yet sent, from `sent`.
    pending: Vec<u8>,
    sent: usize,
    /// `grpc-encoding`: how the request's gRPC messages are compressed.
    encoding: crate::grpc::Encoding,
    /// A gRPC call: its content-type is `application/grpc` or one of its kinds.
    grpc: bool,
    /// A generated body's part not made yet (none when empty): made into `pending` a
    /// chunk at a time.
    more: Pattern,
    /// A gRPC call answered message by message (see [`crate::grpc::live`]): it is
    /// routed when it opens and keeps receiving while it sends.
    live: bool,
    /// The client ended its side (END_STREAM) of a live call.
    ended: bool,
    /// What an extended CONNECT (RFC 8441) asked to tunnel, if it is one.
    tunnel: Tunnel,
}

/// The server side of one HTTP/2 connection. Over twenty fields because RFC 9113's
/// connection state is that wide (settings both ways, windows, streams, GOAWAY,
/// CONTINUATION, HPACK both ways, gRPC calls); it owns no socket and is tested byte by
/// byte.
pub struct H2Conn {
    /// The Alt-Svc value every answer carries, if any.
    alt_svc: Option<Vec<u8>>,
    decoder: hpack::Decoder,
    encoder: hpack::Encoder,
    limits: Limits,
    /// Bytes of the client preface still expected.
    preface_left: usize,
    streams: Vec<Stream>,
    spare: Vec<Stream>,
    /// The static files whose bytes streams are sending, by stream: kept beside the
    /// streams (rarely any), so that a stream stays small enough to move cheaply.
    files: Vec<(u32, std::sync::Arc<[u8]>)>,
    /// POST requests' bodies, by stream, until routed (kept beside the streams for the
    /// same reason).
    posted: Vec<(u32, Vec<u8>)>,
    /// Requests' `authorization` values, by stream, until routed (few requests carry
    /// one: a benchmark's streams pay nothing for it).
    authorizations: Vec<(u32, Vec<u8>)>,
    /// Streamed answers under way, by stream: what each sends, its next event and
    /// when that is due (kept beside the streams for the same reason).
    feeds: Vec<(u32, crate::routes::Feed, u32, std::time::Instant)>,
    /// gRPC answers whose trailers (status, message) go once their held messages are
    /// out, by stream (beside the streams for the same reason).
    trailers: Vec<(u32, u8, &'static str)>,
    /// Live gRPC calls under way, by stream (beside the streams for the same reason).
    calls: Vec<(u32, Call)>,
    /// WebSockets open on streams (RFC 8441), by stream, and what the extended
    /// CONNECTs not yet routed asked of theirs (beside the streams for the same
    /// reason); `socket_out` is where a socket's answers are framed.
    sockets: Vec<(u32, Box<crate::ws::WsConn>)>,
    asks: Vec<(u32, socket::Ask)>,
    socket_out: Vec<u8>,
    /// What gRPC server reflection answers from, if the server offers it.
    pub reflection: Option<std::sync::Arc<crate::reflection::Reflection>>,
    ready: VecDeque<u32>,
    /// Header blocks over HEADERS and CONTINUATION frames.
    blocks: Assembler,
    last_stream: u32,
    peer_max_frame: usize,
    peer_initial_window: i64,
    send_window: i64,
    recv_window: i64,
    recv_unacked: u32,
    /// Bytes of response bodies held for the client's windows.
    held: usize,
    /// We sent GOAWAY (draining).
    pub goaway_sent: bool,
}

/// An answer to a stream: status, type, Content-Length, the body bytes to send now
/// (empty for HEAD) and the rest of a generated body, made as the client takes it.
pub struct Answer<'a> {
    pub status: u16,
    pub ctype: &'a str,
    pub len: usize,
    pub body: &'a [u8],
    pub more: Option<Pattern>,
    /// The static file `more` sends the rest of, when it is one.
    pub file: Option<&'a std::sync::Arc<[u8]>>,
}

/// A complete request, ready to route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ready {
    pub stream: u32,
    pub method: Method,
    /// A status to answer with instead of routing: the request broke a limit.
    pub refuse: Option<u16>,
    /// How its gRPC messages are compressed (`grpc-encoding`).
    pub encoding: crate::grpc::Encoding,
    /// Whether it is a gRPC call (`content-type: application/grpc…`).
    pub grpc: bool,
    /// A live gRPC call, routed as it opens: its request messages are still coming.
    pub live: bool,
    /// An extended CONNECT (RFC 8441), routed as it opens: a WebSocket, or another
    /// protocol this server does not tunnel.
    pub tunnel: Tunnel,
}

impl H2Conn {
    /// A connection whose first bytes were the client preface (not yet consumed); our
    /// SETTINGS and connection window go to `out`.
    pub fn new(limits: Limits, out: &mut Vec<u8>) -> H2Conn {
        frame::settings(
            out,
            &[
                (frame::SETTINGS_MAX_CONCURRENT_STREAMS, MAX_STREAMS as u32),
                (frame::SETTINGS_INITIAL_WINDOW_SIZE, RECV_WINDOW),
                (frame::SETTINGS_MAX_HEADER_LIST_SIZE, limits.max_head as u32),
                // WebSocket over HTTP/2 (RFC 8441).
                (frame::SETTINGS_ENABLE_CONNECT_PROTOCOL, 1),
            ],
        );
        frame::window_update(out, 0, RECV_WINDOW - frame::DEFAULT_WINDOW as u32);
        H2Conn {
            blocks: Assembler::new(block_bounds(&limits)),
            decoder: hpack::Decoder::new(),
            encoder: hpack::Encoder::new(),
            limits,
            preface_left: frame::PREFACE.len(),
            streams: Vec::new(),
            spare: Vec::new(),
            files: Vec::new(),
            feeds: Vec::new(),
            trailers: Vec::new(),
            calls: Vec::new(),
            sockets: Vec::new(),
            asks: Vec::new(),
            socket_out: Vec::new(),
            reflection: None,
            posted: Vec::new(),
            authorizations: Vec::new(),
            ready: VecDeque::new(),
            last_stream: 0,
            peer_max_frame: frame::DEFAULT_MAX_FRAME,
            peer_initial_window: frame::DEFAULT_WINDOW,
            send_window: frame::DEFAULT_WINDOW,
            recv_window: RECV_WINDOW as i64,
            recv_unacked: 0,
            held: 0,
            goaway_sent: false,
            alt_svc: None,
        }
    }

    /// Every answer carries `Alt-Svc: value` from now on (HTTP/3 served beside).
    pub fn advertise(&mut self, value: &[u8]) {
        self.alt_svc = Some(value.to_vec());
    }

    /// Streams open (receiving, waiting for an answer, or sending).
    pub fn open_streams(&self) -> usize {
        self.streams.len()
    }

    /// Response body bytes held until the client's windows open.
    pub fn held(&self) -> usize {
        self.held
    }

    /// A header block is open (HEADERS without END_HEADERS, CONTINUATIONs to come): it
    /// must end within the head timeout, as an HTTP/1 request head must.
    pub fn in_header_block(&self) -> bool {
        self.blocks.in_block()
    }

    /// The highest stream the client opened.
    pub fn last_stream(&self) -> u32 {
        self.last_stream
    }

    /// Sends GOAWAY (no error): streams already opened are still answered.
    pub fn go_away(&mut self, out: &mut Vec<u8>) {
        if !self.goaway_sent {
            self.goaway_sent = true;
            frame::goaway(out, self.last_stream, frame::NO_ERROR);
            if !self.sockets.is_empty() {
                self.sockets_going_away(out);
            }
        }
    }

    /// Handles the complete frames at the start of `data`, writing control frames to
    /// `out`; returns the bytes used (a partial frame is left for the next read).
    pub fn feed(&mut self, data: &[u8], out: &mut Vec<u8>) -> Result<usize, ConnError> {
        let mut at = 0;
        if self.preface_left > 0 {
            let from = frame::PREFACE.len() - self.preface_left;
            let n = self.preface_left.min(data.len());
            if data[..n] != frame::PREFACE[from..from + n] {
                return fail(frame::PROTOCOL_ERROR, "not the HTTP/2 client preface");
            }
            self.preface_left -= n;
            at = n;
            if self.preface_left > 0 {
                return Ok(at);
            }
        }
        while let Some(h) = Head::parse(&data[at..]) {
            if h.len > frame::DEFAULT_MAX_FRAME {
                return fail(frame::FRAME_SIZE_ERROR, "a frame larger than 16,384 bytes");
            }
            if data.len() < at + 9 + h.len {
                break;
            }
            let payload = &data[at + 9..at + 9 + h.len];
            at += 9 + h.len;
            self.frame(h, payload, out)?;
        }
        Ok(at)
    }

    fn frame(&mut self, h: Head, payload: &[u8], out: &mut Vec<u8>) -> Result<(), ConnError> {
        self.blocks.check(h.kind)?;
        match h.kind {
            frame::DATA => self.data(h, payload, out)?,
            frame::HEADERS | frame::CONTINUATION => {
                if let Some(block) = self.blocks.frame(h, payload)? {
                    let opening = Opening {
                        stream: block.stream,
                        end_stream: block.end_stream,
                        // A stream cannot depend on itself (RFC 9113 5.3.1).
                        self_dependent: block.depends_on == Some(block.stream),
                    };
                    self.headers(opening, &block.fields, out)?;
                }
            }
            frame::PRIORITY => {
                if h.stream == 0 {
                    return fail(frame::PROTOCOL_ERROR, "PRIORITY on stream 0");
                }
                if payload.len() != 5 {
                    frame::rst_stream(out, h.stream, frame::FRAME_SIZE_ERROR);
                    self.remove(h.stream);
                } else if depends_on(payload) == Some(h.stream) {
                    // A stream cannot depend on itself (RFC 9113 5.3.1).
                    frame::rst_stream(out, h.stream, frame::PROTOCOL_ERROR);
                    self.remove(h.stream);
                }
            }
            frame::RST_STREAM => {
                if h.stream == 0 {
                    return fail(frame::PROTOCOL_ERROR, "RST_STREAM on stream 0");
                }
                if payload.len() != 4 {
                    return fail(frame::FRAME_SIZE_ERROR, "RST_STREAM of the wrong size");
                }
                if h.stream > self.last_stream {
                    return fail(frame::PROTOCOL_ERROR, "RST_STREAM on an idle stream");
                }
                self.remove(h.stream);
            }
            frame::SETTINGS => self.settings(h, payload, out)?,
            frame::PING => {
                if h.stream != 0 {
                    return fail(frame::PROTOCOL_ERROR, "PING on a stream");
                }
                if payload.len() != 8 {
                    return fail(frame::FRAME_SIZE_ERROR, "PING of the wrong size");
                }
                if h.flags & frame::ACK == 0 {
                    frame::head(out, 8, frame::PING, frame::ACK, 0);
                    out.extend_from_slice(payload);
                }
            }
            frame::GOAWAY => {
                if h.stream != 0 {
                    return fail(frame::PROTOCOL_ERROR, "GOAWAY on a stream");
                }
                // A client's GOAWAY limits streams we would open (none); the connection
                // goes on until the client closes it, its code triggering nothing.
                if payload.len() < 8 {
                    return fail(frame::FRAME_SIZE_ERROR, "GOAWAY too short");
                }
            }
            frame::WINDOW_UPDATE => {
                let Some(inc) = frame::u32_payload(payload) else {
                    return fail(frame::FRAME_SIZE_ERROR, "WINDOW_UPDATE of the wrong size");
                };
                let inc = (inc & 0x7fff_ffff) as i64;
                if h.stream == 0 {
                    if inc == 0 {
                        return fail(frame::PROTOCOL_ERROR, "a window increment of 0");
                    }
                    self.send_window += inc;
                    if self.send_window > frame::MAX_WINDOW {
                        return fail(frame::FLOW_CONTROL_ERROR, "the window passed 2^31-1");
                    }
                } else if let Some(s) = self.streams.iter_mut().find(|s| s.id == h.stream) {
                    s.send_window += inc;
                    if inc == 0 || s.send_window > frame::MAX_WINDOW {
                        let code = if inc == 0 {
                            frame::PROTOCOL_ERROR
                        } else {
                            frame::FLOW_CONTROL_ERROR
                        };
                        frame::rst_stream(out, h.stream, code);
                        self.remove(h.stream);
                    }
                } else if h.stream > self.last_stream {
                    return fail(frame::PROTOCOL_ERROR, "WINDOW_UPDATE on an idle stream");
                }
                self.pump(out);
            }
            frame::PUSH_PROMISE => {
                return fail(frame::PROTOCOL_ERROR, "PUSH_PROMISE from a client");
            }
            // Unknown frame types are ignored, as the protocol asks.
            _ => {}
        }
        Ok(())
    }

    fn settings(&mut self, h: Head, payload: &[u8], out: &mut Vec<u8>) -> Result<(), ConnError> {
        if h.stream != 0 {
            return fail(frame::PROTOCOL_ERROR, "SETTINGS on a stream");
        }
        if h.flags & frame::ACK != 0 {
            return if payload.is_empty() {
                Ok(())
            } else {
                fail(frame::FRAME_SIZE_ERROR, "a SETTINGS ack with a payload")
            };
        }
        let Some(pairs) = frame::settings_pairs(payload) else {
            return fail(frame::FRAME_SIZE_ERROR, "SETTINGS of the wrong size");
        };
        for (key, v) in pairs {
            match key {
                frame::SETTINGS_HEADER_TABLE_SIZE => self.encoder.set_peer_table_size(v as usize),
                frame::SETTINGS_ENABLE_PUSH if v > 1 => {
                    return fail(frame::PROTOCOL_ERROR, "SETTINGS_ENABLE_PUSH above 1");
                }
                frame::SETTINGS_INITIAL_WINDOW_SIZE => {
                    if v as i64 > frame::MAX_WINDOW {
                        return fail(frame::FLOW_CONTROL_ERROR, "an initial window above 2^31-1");
                    }
                    let delta = v as i64 - self.peer_initial_window;
                    self.peer_initial_window = v as i64;
                    for st in self.streams.iter_mut() {
                        st.send_window += delta;
                        if st.send_window > frame::MAX_WINDOW {
                            return fail(frame::FLOW_CONTROL_ERROR, "a window passed 2^31-1");
                        }
                    }
                }
                frame::SETTINGS_MAX_FRAME_SIZE => {
                    if !(frame::DEFAULT_MAX_FRAME as u32..1 << 24).contains(&v) {
                        return fail(
                            frame::PROTOCOL_ERROR,
                            "SETTINGS_MAX_FRAME_SIZE out of range",
                        );
                    }
                    self.peer_max_frame = v as usize;
                }
                _ => {}
            }
        }
        frame::head(out, 0, frame::SETTINGS, frame::ACK, 0);
        self.pump(out);
        Ok(())
    }

    /// Long on purpose: one pass over a request's header block checking each field as RFC
    /// 9113 8.2 requires; it runs for every request, so it stays one frame.
    fn headers(
        &mut self,
        opening: Opening,
        block: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), ConnError> {
        let Opening {
            stream: id,
            end_stream,
            self_dependent,
        } = opening;
        // Every block is decoded, even a refused one's: the table must stay in step.
        let existing = self.streams.iter().position(|s| s.id == id);
        let mut s = match existing {
            Some(i) => {
                // Trailers: they must end the stream and carry no pseudo-header; a
                // stream whose request ended takes no more headers.
                let mut bad = !end_stream || self_dependent;
                let mut poisoned = false;
                let decoded = self
                    .decoder
                    .decode_bounded(block, self.limits.max_head * DECODE_SLACK, |n, v, from| {
                        bad |= n.first() == Some(&b':');
                        if from != hpack::Source::Table && !field_ok(n, v) {
                            bad = true;
                            poisoned |= from == hpack::Source::Inserted;
                        }
                    })
                    .or_else(|e| fail(frame::COMPRESSION_ERROR, e.0))?;
                if decoded == hpack::Decoded::Stopped {
                    return fail(frame::ENHANCE_YOUR_CALM, "a header list far past the limit");
                }
                if poisoned {
                    return fail(frame::PROTOCOL_ERROR, POISONED);
                }
                let st = &mut self.streams[i];
                if st.live && !st.ended && !bad && st.tunnel == Tunnel::None {
                    // Trailers end the client's side of a live call.
                    st.ended = true;
                    self.call_data(id, &[], out);
                } else if st.state != State::Receiving {
                    frame::rst_stream(out, id, frame::STREAM_CLOSED);
                    self.remove(id);
                } else if bad || st.declared.is_some_and(|d| d != st.body_len) {
                    frame::rst_stream(out, id, frame::PROTOCOL_ERROR);
                    self.remove(id);
                } else {
                    self.streams[i].state = State::Queued;
                    self.ready.push_back(id);
                }
                return Ok(());
            }
            None => self.spare.pop().unwrap_or_else(|| Stream {
                id: 0,
                state: State::Receiving,
                method: Method::Get,
                path: Vec::new(),
                refuse: None,
                early: false,
                declared: None,
                body_len: 0,
                recv_window: 0,
                recv_unacked: 0,
                send_window: 0,
                pending: Vec::new(),
                sent: 0,
                encoding: crate::grpc::Encoding::Identity,
                grpc: false,
                more: Pattern::default(),
                live: false,
                ended: false,
                tunnel: Tunnel::None,
            }),
        };
        s.path.clear();
        s.encoding = crate::grpc::Encoding::Identity;
        s.grpc = false;
        let mut method = None;
        let (mut scheme, mut pseudo_done, mut malformed) = (false, false, self_dependent);
        // An extended CONNECT's `:protocol` (RFC 8441), and its WebSocket fields.
        let (mut connect, mut protocol) = (false, None);
        let mut ask: Option<socket::Ask> = None;
        let mut declared: Option<usize> = None;
        let mut poisoned = false;
        let mut authorization: Option<Vec<u8>> = None;
        let decoded = self
            .decoder
            .decode_bounded(block, self.limits.max_head * DECODE_SLACK, |n, v, from| {
                // A field from the table was checked when it went in: only new bytes
                // are looked at.
                if from != hpack::Source::Table && !field_ok(n, v) {
                    malformed = true;
                    poisoned |= from == hpack::Source::Inserted;
                }
                if let Some(p) = n.strip_prefix(b":") {
                    if pseudo_done {
                        malformed = true;
                    }
                    match p {
                        b"method" if method.is_none() => {
                            method = Some(match v {
                                b"GET" => Method::Get,
                                b"HEAD" => Method::Head,
                                b"POST" => Method::Post,
                                _ => {
                                    connect = v == b"CONNECT";
                                    Method::Other
                                }
                            })
                        }
                        b"protocol" if protocol.is_none() => {
                            protocol = Some(if v == b"websocket" {
                                Tunnel::WebSocket
                            } else {
                                Tunnel::Other
                            })
                        }
                        b"path" if s.path.is_empty() && !v.is_empty() => {
                            s.path.extend_from_slice(v)
                        }
                        b"scheme" if !scheme => scheme = true,
                        b"authority" => {}
                        _ => malformed = true,
                    }
                } else {
                    pseudo_done = true;
                    if matches!(
                        n,
                        b"connection"
                            | b"keep-alive"
                            | b"proxy-connection"
                            | b"upgrade"
                            | b"transfer-encoding"
                    ) || (n == b"te" && v != b"trailers")
                    {
                        malformed = true;
                    }
                    if n == b"grpc-encoding" {
                        s.encoding = crate::grpc::Encoding::of(v);
                    }
                    if n == b"authorization" {
                        authorization = Some(v.to_vec());
                    }
                    if n == b"content-type" {
                        s.grpc = v.starts_with(b"application/grpc");
                    }
                    if protocol.is_some() && n.starts_with(b"sec-websocket-") {
                        malformed |= !ask.get_or_insert_with(Default::default).field(n, v);
                    }
                    if n == b"content-length" {
                        let len = declared_length(v);
                        if len.is_none() || declared.is_some_and(|d| Some(d) != len) {
                            malformed = true;
                        }
                        declared = len;
                    }
                }
            })
            .or_else(|e| fail(frame::COMPRESSION_ERROR, e.0))?;
        let hpack::Decoded::Whole { list: size } = decoded else {
            return fail(frame::ENHANCE_YOUR_CALM, "a header list far past the limit");
        };
        if poisoned {
            return fail(frame::PROTOCOL_ERROR, POISONED);
        }
        if id.is_multiple_of(2) {
            return fail(frame::PROTOCOL_ERROR, "HEADERS opening an even stream");
        }
        if id <= self.last_stream {
            return fail(frame::STREAM_CLOSED, "HEADERS on a closed stream");
        }
        // A request that ends here declares no body, or is malformed.
        malformed |= end_stream && declared.is_some_and(|d| d != 0);
        if protocol.is_some() {
            // `:protocol` only on a CONNECT, which then stays open for what it tunnels.
            malformed |= !connect || end_stream;
        }
        self.last_stream = id;
        let refused = self.streams.len() >= MAX_STREAMS || self.goaway_sent;
        if refused || malformed || method.is_none() || !scheme || s.path.is_empty() {
            let code = if refused {
                frame::REFUSED_STREAM
            } else {
                frame::PROTOCOL_ERROR
            };
            frame::rst_stream(out, id, code);
            self.spare.push(s);
            return Ok(());
        }
        if let Some(a) = authorization {
            self.authorizations.push((id, a));
        }
        s.id = id;
        s.method = method.unwrap_or(Method::Other);
        s.refuse = (size > self.limits.max_head).then_some(431);
        s.early = s.refuse.is_some() && !end_stream;
        s.declared = declared;
        s.body_len = 0;
        s.recv_window = RECV_WINDOW as i64;
        s.recv_unacked = 0;
        s.send_window = self.peer_initial_window;
        s.pending.clear();
        s.sent = 0;
        s.more = Pattern::default();
        // A live gRPC call is routed now: its answers go as its requests come.
        s.live = s.method == Method::Post
            && !end_stream
            && s.refuse.is_none()
            && crate::grpc::live(&s.path).is_some();
        s.tunnel = Tunnel::None;
        if let Some(t) = protocol {
            self.tunnel_opens(&mut s, t, ask);
        }
        s.ended = false;
        s.state = if end_stream || s.refuse.is_some() || s.live {
            self.ready.push_back(id);
            State::Queued
        } else {
            State::Receiving
        };
        self.streams.push(s);
        Ok(())
    }

    fn remove(&mut self, id: u32) {
        if let Some(i) = self.streams.iter().position(|s| s.id == id) {
            let mut s = self.streams.swap_remove(i);
            self.held -= std::mem::take(&mut s.more).left();
            if !self.files.is_empty() {
                self.files.retain(|(f, _)| *f != id);
            }
            if !self.authorizations.is_empty() {
                self.authorizations.retain(|(a, _)| *a != id);
            }
            if !self.feeds.is_empty() {
                self.feeds.retain(|f| f.0 != id);
            }
            if !self.trailers.is_empty() {
                self.trailers.retain(|t| t.0 != id);
            }
            if !self.posted.is_empty() {
                self.posted.retain(|p| p.0 != id);
            }
            if !self.calls.is_empty() {
                self.calls.retain(|c| c.0 != id);
            }
            if s.tunnel != Tunnel::None {
                self.sockets.retain(|c| c.0 != id);
                self.asks.retain(|c| c.0 != id);
            }
            if s.state == State::Queued {
                // A stream reset before it was routed leaves the queue too, so that a
                // client opening and resetting streams while routing waits cannot
                // grow it.
                self.ready.retain(|&r| r != id);
            }
            self.held -= s.pending.len() - s.sent;
            if s.pending.capacity() > 64 * 1024 {
                s.pending = Vec::new();
            }
            self.spare.push(s);
        }
    }
}

/// What a HEADERS frame says of its header block beyond the block itself.
#[derive(Debug, Clone, Copy)]
struct Opening {
    stream: u32,
    /// END_STREAM: the request has no body.
    end_stream: bool,
    /// Its priority names the stream itself, which RFC 9113 5.3.1 forbids.
    self_dependent: bool,
}

/// The stream a priority block (HEADERS' or PRIORITY's first 5 bytes) depends on.
fn depends_on(priority: &[u8]) -> Option<u32> {
    let b = priority.get(..4)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]) & 0x7fff_ffff)
}

#[cfg(test)]
mod tests;
