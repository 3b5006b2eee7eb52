//! HTTP/2 for the load engine: the client side of one connection as a sans-IO state
//! machine, framing and flow control included.
//!
//! A worker hands [`H2Conn`] requests (each becomes a new stream) and the bytes it
//! reads; the connection answers with [`Event`]s (a response complete, a stream reset,
//! a GOAWAY) and leaves the frames to write in [`H2Conn::out`]. Requests are the
//! engine's HTTP/1.1 bytes translated once ([`H2Request::from_http1`]), so every
//! request source (native, ab, wrk, scripts) works over HTTP/2 unchanged. A connection
//! that sends one request over and over (as h2load does) inserts its fields into the
//! server's HPACK table with the first block and sends indexes after that, unless the
//! server shrinks its table; varied requests (session scripts) go as literals without
//! indexing. Responses are decoded with HPACK's dynamic table
//! ([`stampede_wire::hpack`]). Windows are
//! opened wide at the start (1 GiB for the connection and each stream) so that flow
//! control never paces a benchmark, and refilled as data is consumed; request bodies
//! respect the server's windows and frame size. What the client offers the server
//! (its SETTINGS and windows) is `settings`' [`H2Settings`].

use std::collections::VecDeque;

pub use crate::error::TranslateError;
pub use crate::proto::event::{Event, Response};
use crate::proto::watch::{StreamMode, Watch};

/// Streams a server is taken to allow before its SETTINGS arrive (RFC 9113 advises
/// servers to allow no fewer).
pub const ASSUMED_MAX_STREAMS: usize = 100;

use stampede_wire::block::{Assembler, BlockError, Bounds};
pub use stampede_wire::frame::PREFACE;
use stampede_wire::frame::{
    self, head as frame_head, Head, ACK, CONTINUATION, DATA, DEFAULT_MAX_FRAME as MAX_FRAME,
    END_HEADERS, END_STREAM, GOAWAY, HEADERS, PING, PUSH_PROMISE, RST_STREAM, SETTINGS,
    SETTINGS_ENABLE_PUSH, SETTINGS_HEADER_TABLE_SIZE, SETTINGS_INITIAL_WINDOW_SIZE,
    SETTINGS_MAX_CONCURRENT_STREAMS, SETTINGS_MAX_FRAME_SIZE, WINDOW_UPDATE,
};

mod request;
mod send;
pub use request::H2Request;

mod settings;
pub use settings::H2Settings;
use settings::{DEFAULT_TABLE, INITIAL_WINDOW};

/// The largest response header block accepted, HEADERS and CONTINUATIONs together.
const MAX_HEADER_BLOCK: usize = 256 * 1024;
/// The most CONTINUATION frames one header block may take (empty ones cost nothing in
/// size but still have to be parsed).
const MAX_CONTINUATIONS: u32 = 1024;
/// Output queued for a server beyond which its PING and SETTINGS are no longer
/// answered but end the connection: a server that sends them without reading the
/// answers would otherwise grow the client without bound.
pub const MAX_QUEUED_OUTPUT: usize = 4 * 1024 * 1024;

/// What a connection that keeps responses holds: every final response's header fields
/// (pseudo-headers included) and body bytes, in arrival order, all streams together.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Kept {
    /// Header fields, as decoded.
    pub headers: Vec<(String, String)>,
    /// Body bytes, [`crate::MAX_KEPT_BODY`] at most.
    pub body: Vec<u8>,
    /// Some of the body was left out, past the most kept.
    pub cut: bool,
}

/// A connection-level error: the connection must close.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum H2Error {
    /// The server answered the connection preface in HTTP/1.x.
    #[error("the server answered HTTP/1.x to HTTP/2's connection preface: it does not speak h2c (prior knowledge)")]
    Http1Answer,
    /// The server broke HTTP/2's rules; the text says how.
    #[error("{0}")]
    Protocol(String),
}

#[derive(Debug)]
struct Stream {
    id: u32,
    status: u16,
    body: u64,
    /// Received since our last WINDOW_UPDATE for this stream.
    unacked: u32,
    /// Body bytes still to send, from this offset.
    send_from: Option<usize>,
    /// The send side stays open once those are sent: more is to come
    /// ([`H2Conn::send_more`]).
    more: bool,
    /// The server's window for this stream.
    send_window: i64,
    /// Its response body watched as it arrives (runs that time streams).
    watch: Option<Box<Watch>>,
}

/// The client side of one HTTP/2 connection. Over twenty fields because RFC 9113's
/// connection state is that wide (settings both ways, windows, streams, GOAWAY,
/// CONTINUATION, HPACK both ways); it owns no socket and is tested byte by byte.
pub struct H2Conn {
    /// Frames to write, in order (see [`H2Conn::unwritten`]).
    pub out: Vec<u8>,
    /// How much of `out` is written.
    written: usize,
    /// Responses completed on this connection.
    answered: u64,
    decoder: stampede_wire::hpack::Decoder,
    inbuf: Vec<u8>,
    next_id: u32,
    streams: VecDeque<Stream>,
    /// Header blocks over HEADERS and CONTINUATION frames.
    blocks: Assembler,
    conn_unacked: u32,
    /// Bytes still to be received before WINDOW_UPDATEs for the connection resume: a
    /// connection window below the initial 65,535 is reached by withholding them.
    conn_withheld: u32,
    /// Received bytes at which the connection's and a stream's windows are refilled:
    /// half of each (at least 1).
    conn_refill_at: u32,
    stream_refill_at: u32,
    /// Our receive windows, the largest frame we read, and how much of the server's
    /// HPACK table the request's fields may take.
    settings: H2Settings,
    conn_send_window: i64,
    peer_initial_window: i64,
    peer_max_frame: usize,
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS, when it sent one.
    pub peer_max_streams: Option<u32>,
    /// The server's GOAWAY, once received: no new streams on this connection.
    pub goaway: bool,
    /// Response header blocks received, compressed and decoded (names and values).
    headers_compressed: u64,
    headers_decoded: u64,
    /// Response headers and bodies kept whole, when asked for with
    /// [`H2Conn::keep_responses`] (a check of the answers, not a load run).
    pub kept: Option<Kept>,
    /// The server's connection preface (its first SETTINGS) has arrived.
    settled: bool,
    /// Runs that time streams: how each stream's body is watched, and the tokenizer
    /// that counts an OpenAI completion without usage.
    watch: Option<(StreamMode, Option<crate::TokenCounter>)>,
    /// gRPC calls: each answer's `grpc-status` is read, and one without it fails.
    grpc: bool,
    /// gRPC calls: the `grpc-status` each open stream's header blocks brought.
    grpc_status: Vec<(u32, u8)>,
    /// gRPC calls: the `grpc-message` of an open stream's failing status, decoded.
    grpc_message: Vec<(u32, Box<str>)>,
    /// gRPC calls answered with a failing status and a message, for the worker to
    /// count ([`H2Conn::take_grpc_messages`]).
    failed_messages: Vec<(u8, Box<str>)>,
    /// Calls made one by one ([`H2Conn::request_made`]): the body bytes each stream
    /// still has to send once the windows open (beside the streams: rarely any).
    owned: Vec<(u32, Vec<u8>)>,
    /// Where a header block with parts (a call's own fields, a table size update)
    /// is put together, reused stream to stream.
    block_buf: Vec<u8>,
    /// Whether the request's fields are in the server's dynamic table yet, or must
    /// not be used (the server shrank its table).
    indexing: Indexing,
    /// Which connection of the process this is (stream ids start again on each).
    pub(crate) epoch: u64,
}

/// The connections made so far ([`H2Conn::epoch`]).
static EPOCHS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Indexing {
    /// Nothing sent yet: the first block inserts the fields.
    Fresh,
    /// Inserted: blocks are indexes.
    Inserted,
    /// The server shrank its table: a size update to 0 goes first, then literals.
    ShrinkThenOff,
    /// Literals only.
    Off,
}

impl Default for H2Conn {
    fn default() -> Self {
        H2Conn::new()
    }
}

impl H2Conn {
    /// A new connection with the default settings: the preface, our SETTINGS and the
    /// connection window are queued in `out`.
    pub fn new() -> H2Conn {
        H2Conn::with(H2Settings::default())
    }

    /// A new connection offering `settings` (checked by [`H2Settings::check`]).
    pub fn with(settings: H2Settings) -> H2Conn {
        let mut out = Vec::with_capacity(128);
        out.extend_from_slice(PREFACE);
        let mut pairs: Vec<(u16, u32)> = vec![
            (SETTINGS_ENABLE_PUSH, 0),
            (SETTINGS_INITIAL_WINDOW_SIZE, settings.stream_window),
        ];
        if settings.max_frame != MAX_FRAME as u32 {
            pairs.push((SETTINGS_MAX_FRAME_SIZE, settings.max_frame));
        }
        if settings.header_table != DEFAULT_TABLE {
            pairs.push((SETTINGS_HEADER_TABLE_SIZE, settings.header_table));
        }
        frame::settings(&mut out, &pairs);
        if settings.connection_window > INITIAL_WINDOW {
            frame::window_update(&mut out, 0, settings.connection_window - INITIAL_WINDOW);
        }
        let mut decoder = stampede_wire::hpack::Decoder::new();
        decoder.allow_table(settings.header_table as usize);
        H2Conn {
            out,
            written: 0,
            answered: 0,
            decoder,
            inbuf: Vec::new(),
            next_id: 1,
            streams: VecDeque::new(),
            owned: Vec::new(),
            block_buf: Vec::new(),
            epoch: EPOCHS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            blocks: Assembler::new(Bounds {
                max_bytes: MAX_HEADER_BLOCK,
                max_continuations: MAX_CONTINUATIONS,
            }),
            conn_unacked: 0,
            conn_withheld: INITIAL_WINDOW.saturating_sub(settings.connection_window),
            conn_refill_at: (settings.connection_window / 2).max(1),
            stream_refill_at: (settings.stream_window / 2).max(1),
            settings,
            conn_send_window: 65_535,
            peer_initial_window: 65_535,
            peer_max_frame: MAX_FRAME,
            peer_max_streams: None,
            goaway: false,
            headers_compressed: 0,
            headers_decoded: 0,
            indexing: Indexing::Fresh,
            kept: None,
            settled: false,
            watch: None,
            grpc: false,
            grpc_status: Vec::new(),
            grpc_message: Vec::new(),
            failed_messages: Vec::new(),
        }
    }

    /// Watches each response body as it arrives from now on: DATA frames report
    /// [`Event::Progress`].
    pub(crate) fn watch(&mut self, mode: StreamMode, counter: Option<crate::TokenCounter>) {
        self.grpc = mode == StreamMode::Grpc;
        self.watch = Some((mode, counter));
    }

    /// The frames queued and not yet written.
    #[inline]
    pub fn unwritten(&self) -> &[u8] {
        &self.out[self.written..]
    }

    /// `n` bytes of [`H2Conn::unwritten`] were written; once all are, the buffer is
    /// emptied for the next frames.
    #[inline]
    pub fn wrote(&mut self, n: usize) {
        self.written += n;
        if self.written >= self.out.len() {
            self.out.clear();
            self.written = 0;
        }
    }

    /// Whether the server's connection preface (a SETTINGS frame, the first thing it
    /// must send) has arrived.
    pub fn settled(&self) -> bool {
        self.settled
    }

    /// Keeps response headers and bodies in [`H2Conn::kept`] from now on.
    pub fn keep_responses(&mut self) {
        self.kept = Some(Kept::default());
    }

    /// The server's stream limit: its SETTINGS_MAX_CONCURRENT_STREAMS, or
    /// [`ASSUMED_MAX_STREAMS`] until it has said.
    pub fn stream_limit(&self) -> usize {
        self.peer_max_streams
            .map_or(ASSUMED_MAX_STREAMS, |m| m as usize)
    }

    /// Streams open (sent and not yet answered or reset).
    pub fn open_streams(&self) -> usize {
        self.streams.len()
    }

    /// The gRPC calls answered since the last take with a failing status and a
    /// `grpc-message`: each status and message.
    pub(crate) fn take_grpc_messages(&mut self) -> std::vec::Drain<'_, (u8, Box<str>)> {
        self.failed_messages.drain(..)
    }

    /// Whether a response is part way in: a frame half read, or a stream whose head
    /// came without its end.
    pub fn receiving(&self) -> bool {
        !self.inbuf.is_empty() || self.streams.iter().any(|s| s.status != 0)
    }

    fn stream(&mut self, id: u32) -> Option<&mut Stream> {
        self.streams.iter_mut().find(|s| s.id == id)
    }

    fn finish(&mut self, id: u32, events: &mut Vec<Event>) {
        if let Some(i) = self.streams.iter().position(|s| s.id == id) {
            let s = self.streams.remove(i).expect("present");
            self.answered += 1;
            if s.more || s.send_from.is_some() {
                // Answered before the request ended: the rest is not sent, and the
                // stream is closed on our side too (RFC 9113, section 8.1).
                frame::rst_stream(&mut self.out, id, frame::CANCEL);
                self.owned.retain(|o| o.0 != id);
            }
            let mut grpc = None;
            if self.grpc {
                let at = self.grpc_status.iter().position(|g| g.0 == id);
                grpc = at.map(|k| self.grpc_status.swap_remove(k).1);
                if let Some(k) = self.grpc_message.iter().position(|g| g.0 == id) {
                    let (_, message) = self.grpc_message.swap_remove(k);
                    if let Some(code) = grpc.filter(|&c| c != 0) {
                        self.failed_messages.push((code, message));
                    }
                }
                // A gRPC answer is whole with its status, between messages.
                let kind = match (&s.watch, grpc) {
                    (Some(w), _) if w.end().is_err() => Some(w.broken_kind()),
                    (_, None) => Some(crate::ErrorKind::GrpcNoStatus),
                    _ => None,
                };
                if let Some(kind) = kind {
                    events.push(Event::Failed { stream: id, kind });
                    return;
                }
            }
            events.push(Event::Response(Response {
                stream: id,
                status: s.status,
                body: s.body,
                close: false,
                reused: self.answered > 1,
                fresh: false,
                grpc,
            }));
        }
    }

    /// The response header bytes received since the last call: compressed and
    /// decoded.
    #[inline]
    pub fn take_header_sizes(&mut self) -> (u64, u64) {
        (
            std::mem::take(&mut self.headers_compressed),
            std::mem::take(&mut self.headers_decoded),
        )
    }

    /// Consumes bytes read from the server. Complete frames are handled and their
    /// events appended; a partial frame waits for more. `body` is the request body,
    /// for streams that wait on a window.
    pub fn feed(
        &mut self,
        data: &[u8],
        body: &[u8],
        events: &mut Vec<Event>,
    ) -> Result<(), H2Error> {
        if self.inbuf.is_empty() {
            let used = self.frames(data, body, events)?;
            self.inbuf.extend_from_slice(&data[used..]);
        } else {
            // A frame was split across reads: join, parse, keep the remainder (the
            // buffer's allocation is reused from read to read).
            let mut joined = std::mem::take(&mut self.inbuf);
            joined.extend_from_slice(data);
            let used = self.frames(&joined, body, events);
            joined.drain(..*used.as_ref().unwrap_or(&0));
            self.inbuf = joined;
            used?;
        }
        Ok(())
    }

    /// Half the connection's window has been received since its last WINDOW_UPDATE:
    /// the bytes still withheld (a window below the initial 65,535) are taken off
    /// first, and the rest is given back.
    #[cold]
    fn refill_connection(&mut self) {
        let withheld = self.conn_unacked.min(self.conn_withheld);
        self.conn_withheld -= withheld;
        self.conn_unacked -= withheld;
        if self.conn_unacked >= self.conn_refill_at {
            frame::window_update(&mut self.out, 0, self.conn_unacked);
            self.conn_unacked = 0;
        }
    }

    /// Handles the complete frames at the start of `buf`; returns the bytes used.
    fn frames(
        &mut self,
        buf: &[u8],
        body: &[u8],
        events: &mut Vec<Event>,
    ) -> Result<usize, H2Error> {
        let mut at = 0;
        while let Some(h) = Head::parse(&buf[at..]) {
            if !self.settled {
                // The server's preface is a SETTINGS frame; anything else (an HTTP/1.x
                // status line above all) means it does not speak HTTP/2 here.
                if buf[at..].starts_with(b"HTTP/") {
                    return Err(H2Error::Http1Answer);
                }
                if h.kind != SETTINGS || h.flags & ACK != 0 {
                    return Err(H2Error::Protocol(format!(
                        "the server's first HTTP/2 frame is of type {}, not SETTINGS",
                        h.kind
                    )));
                }
            }
            if h.len > self.settings.max_frame as usize {
                return Err(H2Error::Protocol(format!(
                    "a frame of {} bytes exceeds the {} we accept",
                    h.len, self.settings.max_frame
                )));
            }
            let Some(payload) = buf.get(at + 9..at + 9 + h.len) else {
                break;
            };
            self.frame(h, payload, body, events)?;
            self.settled = true;
            at += 9 + h.len;
        }
        Ok(at)
    }

    /// Long on purpose: one match over the frame types as RFC 9113 §6 lists them, on the
    /// path of every response.
    fn frame(
        &mut self,
        h: Head,
        payload: &[u8],
        body: &[u8],
        events: &mut Vec<Event>,
    ) -> Result<(), H2Error> {
        self.blocks.check(h.kind).map_err(block_error)?;
        let (flags, id) = (h.flags, h.stream);
        match h.kind {
            DATA => {
                if id == 0 {
                    return Err(H2Error::Protocol("DATA on stream 0".into()));
                }
                let total = payload.len() as u32;
                let data = unpad(flags, payload)?;
                self.conn_unacked += total;
                if self.conn_unacked >= self.conn_refill_at {
                    self.refill_connection();
                }
                if let Some(k) = self.kept.as_mut() {
                    k.cut |= crate::proto::keep_body(&mut k.body, data);
                }
                let mut update = None;
                let refill_at = self.stream_refill_at;
                let mut broken = false;
                let mut kind = crate::ErrorKind::StreamEvent;
                if let Some(s) = self.stream(id) {
                    s.body += data.len() as u64;
                    s.unacked += total;
                    if s.unacked >= refill_at && flags & END_STREAM == 0 {
                        update = Some(s.unacked);
                        s.unacked = 0;
                    }
                    if let Some(w) = &mut s.watch {
                        broken = watch_data(w, id, data, events);
                        kind = w.broken_kind();
                    }
                }
                if broken {
                    // The stream's format broke (an event over the size limit): it
                    // is cancelled, the connection goes on.
                    frame::rst_stream(&mut self.out, id, frame::CANCEL);
                    if let Some(i) = self.streams.iter().position(|s| s.id == id) {
                        self.streams.remove(i);
                    }
                    events.push(Event::StreamBroken { stream: id, kind });
                    return Ok(());
                }
                if let Some(n) = update {
                    frame::window_update(&mut self.out, id, n);
                }
                if flags & END_STREAM != 0 {
                    self.finish(id, events);
                }
            }
            HEADERS | CONTINUATION => {
                if let Some(block) = self.blocks.frame(h, payload).map_err(block_error)? {
                    self.headers(block.stream, &block.fields, block.end_stream, events)?;
                }
            }
            RST_STREAM => {
                let code = frame::u32_payload(payload)
                    .ok_or_else(|| H2Error::Protocol("RST_STREAM of the wrong size".into()))?;
                if let Some(i) = self.streams.iter().position(|s| s.id == id) {
                    self.streams.remove(i);
                    events.push(Event::Reset {
                        stream: id,
                        code,
                        refused: code == stampede_wire::frame::REFUSED_STREAM,
                        kind: crate::ErrorKind::H2StreamReset,
                    });
                }
            }
            SETTINGS => {
                if flags & ACK != 0 {
                    return Ok(());
                }
                let pairs = frame::settings_pairs(payload)
                    .ok_or_else(|| H2Error::Protocol("SETTINGS of the wrong size".into()))?;
                for (key, v) in pairs {
                    match key {
                        SETTINGS_MAX_CONCURRENT_STREAMS => self.peer_max_streams = Some(v),
                        SETTINGS_HEADER_TABLE_SIZE if v < 4096 => {
                            self.indexing = match self.indexing {
                                Indexing::Fresh => Indexing::Off,
                                _ => Indexing::ShrinkThenOff,
                            }
                        }
                        SETTINGS_INITIAL_WINDOW_SIZE => {
                            let delta = v as i64 - self.peer_initial_window;
                            self.peer_initial_window = v as i64;
                            for st in self.streams.iter_mut() {
                                st.send_window += delta;
                            }
                        }
                        SETTINGS_MAX_FRAME_SIZE => {
                            self.peer_max_frame = (v as usize).clamp(MAX_FRAME, 1 << 24)
                        }
                        _ => {}
                    }
                }
                self.room_for_answers()?;
                frame_head(&mut self.out, 0, SETTINGS, ACK, 0);
                self.pump(body);
            }
            PING if flags & ACK == 0 => {
                if payload.len() != 8 {
                    return Err(H2Error::Protocol("PING of the wrong size".into()));
                }
                self.room_for_answers()?;
                frame_head(&mut self.out, 8, PING, ACK, 0);
                self.out.extend_from_slice(payload);
            }
            GOAWAY => {
                if payload.len() < 8 {
                    return Err(H2Error::Protocol("GOAWAY too short".into()));
                }
                let last = u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]])
                    & 0x7fff_ffff;
                let code = u32::from_be_bytes([payload[4], payload[5], payload[6], payload[7]]);
                self.goaway = true;
                events.push(Event::GoAway {
                    last_stream: last,
                    code,
                    kind: crate::ErrorKind::H2GoAway,
                });
            }
            WINDOW_UPDATE => {
                let inc = frame::u32_payload(payload)
                    .ok_or_else(|| H2Error::Protocol("WINDOW_UPDATE of the wrong size".into()))?
                    & 0x7fff_ffff;
                if id == 0 {
                    self.conn_send_window += inc as i64;
                } else if let Some(s) = self.stream(id) {
                    s.send_window += inc as i64;
                }
                self.pump(body);
            }
            PUSH_PROMISE => {
                return Err(H2Error::Protocol(
                    "PUSH_PROMISE although push is disabled".into(),
                ));
            }
            // PRIORITY and unknown frame types are ignored, as the protocol asks.
            _ => {}
        }
        Ok(())
    }

    /// Whether another answer to the server's PING or SETTINGS may be queued.
    fn room_for_answers(&self) -> Result<(), H2Error> {
        if self.out.len() >= MAX_QUEUED_OUTPUT {
            return Err(H2Error::Protocol(format!(
                "the server sends PING or SETTINGS without reading the answers ({} MiB queued)",
                MAX_QUEUED_OUTPUT >> 20
            )));
        }
        Ok(())
    }

    fn headers(
        &mut self,
        id: u32,
        block: &[u8],
        end_stream: bool,
        events: &mut Vec<Event>,
    ) -> Result<(), H2Error> {
        let mut status = 0u16;
        let mut grpc = None;
        let mut grpc_message: Option<Box<str>> = None;
        let watch_grpc = self.grpc;
        let mut decoded = 0u64;
        self.headers_compressed += block.len() as u64;
        let mut kept = self
            .kept
            .as_mut()
            .map(|k| (k.headers.len(), &mut k.headers));
        self.decoder
            .decode(block, |name, value| {
                decoded += (name.len() + value.len()) as u64;
                if let Some((_, h)) = kept.as_mut() {
                    h.push((
                        String::from_utf8_lossy(name).into_owned(),
                        String::from_utf8_lossy(value).into_owned(),
                    ));
                }
                // By length first: most fields are neither.
                match name.len() {
                    7 if name == b":status" => {
                        // Three digits, 100 to 599 (RFC 9110 15); anything else is none.
                        status = match value {
                            [a @ b'1'..=b'5', b @ b'0'..=b'9', c @ b'0'..=b'9'] => {
                                (a - b'0') as u16 * 100 + (b - b'0') as u16 * 10 + (c - b'0') as u16
                            }
                            _ => 0,
                        };
                    }
                    11 if watch_grpc && name == b"grpc-status" => {
                        grpc = stampede_wire::grpc::parse_status(value);
                    }
                    12 if watch_grpc && name == b"grpc-message" && !value.is_empty() => {
                        grpc_message = Some(grpc_message_text(value));
                    }
                    _ => {}
                }
            })
            .map_err(|e| H2Error::Protocol(format!("HPACK: {e}")))?;
        if let Some((before, h)) = kept {
            // An interim (1xx) head is not the response's.
            if (100..200).contains(&status) {
                h.truncate(before);
            }
        }
        self.headers_decoded += decoded;
        if let Some(s) = self.stream(id) {
            // 1xx responses precede the final one; trailers (after it) carry no status.
            let first = s.status < 200;
            if first && status == 0 {
                // A response head without a valid :status is malformed: this stream
                // fails as a protocol error, the connection goes on.
                frame::rst_stream(&mut self.out, id, frame::PROTOCOL_ERROR);
                if let Some(i) = self.streams.iter().position(|s| s.id == id) {
                    self.streams.remove(i);
                }
                events.push(Event::Malformed { stream: id });
                return Ok(());
            }
            if status >= 200 {
                s.status = status;
            }
            if let Some(code) = grpc {
                // Kept beside the streams (gRPC runs only), so that a stream stays
                // as small to move as it was.
                match self.grpc_status.iter_mut().find(|g| g.0 == id) {
                    Some(g) => g.1 = code,
                    None => self.grpc_status.push((id, code)),
                }
                if self.grpc_status.len() > self.streams.len() {
                    // Streams reset or broken after their status came: forgotten.
                    let streams = &self.streams;
                    (self.grpc_status).retain(|g| streams.iter().any(|s| s.id == g.0));
                    (self.grpc_message).retain(|g| streams.iter().any(|s| s.id == g.0));
                }
                if let Some(m) = grpc_message.filter(|_| code != 0) {
                    match self.grpc_message.iter_mut().find(|g| g.0 == id) {
                        Some(g) => g.1 = m,
                        None => self.grpc_message.push((id, m)),
                    }
                }
            }
        }
        if end_stream {
            self.finish(id, events);
        }
        Ok(())
    }
}

/// A DATA frame's payload for a watched stream: reports what it brought. Returns
/// true when the stream's format broke.
#[inline(never)]
fn watch_data(w: &mut Watch, stream: u32, data: &[u8], events: &mut Vec<Event>) -> bool {
    if data.is_empty() {
        return false;
    }
    if w.payload(data).is_err() {
        return true;
    }
    w.piece();
    if let Some(progress) = w.take() {
        events.push(Event::Progress { stream, progress });
    }
    false
}

/// A header-block error as the connection reports it.
fn block_error(e: BlockError) -> H2Error {
    H2Error::Protocol(e.to_string())
}

fn unpad(flags: u8, payload: &[u8]) -> Result<&[u8], H2Error> {
    stampede_wire::frame::unpad(flags, payload).map_err(|e| H2Error::Protocol(e.into()))
}

/// A `grpc-message` value as kept: percent-decoded, cut to
/// [`crate::result::MAX_GRPC_MESSAGE_LEN`] bytes on a character.
fn grpc_message_text(value: &[u8]) -> Box<str> {
    let cap = crate::result::MAX_GRPC_MESSAGE_LEN;
    let value = &value[..value.len().min(cap * 3)];
    let mut text = stampede_wire::grpc::decode_message(value);
    if text.len() > cap {
        let mut at = cap;
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        text.truncate(at);
    }
    text.into_boxed_str()
}

#[cfg(test)]
pub(super) mod tests;
