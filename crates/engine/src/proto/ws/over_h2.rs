//! WebSocket over HTTP/2 (RFC 8441) on a client connection: the connection speaks
//! HTTP/2 from its first byte (h2c with prior knowledge, or TLS whose ALPN chose
//! `h2`), opens one stream with an extended CONNECT (`:protocol websocket`) once the
//! server's SETTINGS said it takes them, and from the `200` on carries the
//! WebSocket's frames in that stream's DATA both ways.
//!
//! [`Tunnel`] is HTTP/2's part only: it answers the server's SETTINGS and PINGs,
//! opens the windows as the WebSocket takes what it reads, frames what the
//! WebSocket writes as DATA within the server's windows (the rest waits in the
//! WebSocket's own output until they open), and says what each frame the server
//! sent means for the WebSocket ([`Read`]). [`super::WsClient`] keeps the
//! WebSocket's part as it does over HTTP/1.1: its messages, the reader, the close.
//! The stream's end without a close, its reset, or a GOAWAY that leaves it
//! unprocessed end the WebSocket abnormally; HTTP/2 that breaks its rules ends the
//! connection.

use stampede_wire::block::{Assembler, Bounds};
use stampede_wire::frame::{self, Head};
use stampede_wire::hpack;

/// The stream the WebSocket is carried on: the connection's first.
pub const STREAM: u32 = 1;
/// Our receive window, the stream's and the connection's.
const RECV_WINDOW: u32 = 1 << 20;
/// The largest answer header block taken (fields decoded, and bytes over frames).
const MAX_BLOCK: usize = 64 * 1024;
/// Output waiting past this takes no more acknowledgements: a server that sends
/// PINGs or SETTINGS without reading is a flood, which ends the connection.
pub const MAX_OWED: usize = 64 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Our preface is out; the server's SETTINGS are awaited.
    Settings,
    /// The extended CONNECT is sent; its answer is awaited.
    Connecting,
    /// The `200` came: DATA carries the WebSocket.
    Open,
}

/// What a frame the server sent means for the WebSocket.
#[derive(Debug, PartialEq, Eq)]
pub enum Read<'a> {
    /// Nothing (HTTP/2's own frames, answered here).
    Nothing,
    /// The answer to the CONNECT: its status, and (for a `200`) the subprotocol and
    /// extension fields it carried.
    Answer {
        status: u16,
        protocol: Option<Vec<u8>>,
        extensions: Vec<Vec<u8>>,
    },
    /// WebSocket bytes; `end`: the server ended its side of the stream with them.
    Data { bytes: &'a [u8], end: bool },
    /// The server ended its side of the stream.
    End,
    /// The stream was reset, or left unprocessed by a GOAWAY.
    Reset,
}

/// HTTP/2's part of a WebSocket over HTTP/2 (see the module's description).
pub struct Tunnel {
    out: Vec<u8>,
    written: usize,
    /// A frame the last read cut, kept until it is whole.
    partial: Vec<u8>,
    phase: Phase,
    /// The CONNECT's header block, sent once the server's SETTINGS allow it.
    connect: Vec<u8>,
    decoder: hpack::Decoder,
    blocks: Assembler,
    peer_max_frame: usize,
    peer_initial_window: i64,
    send_window: i64,
    stream_window: i64,
    /// DATA bytes taken since our windows were last opened.
    recv_unacked: u32,
    /// Our END_STREAM is sent: nothing more goes on the stream.
    ended: bool,
}

/// Why the tunnel could not go on: the connection ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failed {
    /// The server does not take extended CONNECT (no SETTINGS_ENABLE_CONNECT_PROTOCOL).
    NoConnect,
    /// The server broke HTTP/2's rules (or sent GOAWAY with an error).
    Protocol,
    /// The server's first bytes were not HTTP/2's SETTINGS: it does not speak
    /// HTTP/2 here (an HTTP/1.1 server's error page, a TLS server whose ALPN chose
    /// otherwise).
    NotH2,
    /// The CONNECT was answered `200` with the stream's end: no WebSocket opened.
    Unopened,
}

impl Tunnel {
    /// A tunnel for the WebSocket upgrade `request` (an HTTP/1.1 GET ending with its
    /// blank line, the upgrade's fields in it): our preface, SETTINGS and window go
    /// first, the CONNECT made from the request (`https` for `tls`) once the server's
    /// SETTINGS came.
    pub fn new(request: &[u8], tls: bool) -> Tunnel {
        let mut out = Vec::with_capacity(128);
        out.extend_from_slice(frame::PREFACE);
        frame::settings(
            &mut out,
            &[
                (frame::SETTINGS_ENABLE_PUSH, 0),
                (frame::SETTINGS_INITIAL_WINDOW_SIZE, RECV_WINDOW),
            ],
        );
        frame::window_update(&mut out, 0, RECV_WINDOW - frame::DEFAULT_WINDOW as u32);
        Tunnel {
            out,
            written: 0,
            partial: Vec::new(),
            phase: Phase::Settings,
            connect: connect_block(request, tls),
            decoder: hpack::Decoder::new(),
            blocks: Assembler::new(Bounds {
                max_bytes: MAX_BLOCK,
                max_continuations: 64,
            }),
            peer_max_frame: frame::DEFAULT_MAX_FRAME,
            peer_initial_window: frame::DEFAULT_WINDOW,
            send_window: frame::DEFAULT_WINDOW,
            stream_window: frame::DEFAULT_WINDOW,
            recv_unacked: 0,
            ended: false,
        }
    }

    /// Bytes still to write.
    #[inline]
    pub fn unwritten(&self) -> &[u8] {
        &self.out[self.written..]
    }

    /// `n` bytes of [`Tunnel::unwritten`] were written.
    #[inline]
    pub fn wrote(&mut self, n: usize) {
        self.written += n;
        if self.written == self.out.len() {
            self.out.clear();
            self.written = 0;
        }
    }

    /// Whether the CONNECT was answered `200`: WebSocket bytes may go.
    #[inline]
    pub fn open(&self) -> bool {
        self.phase == Phase::Open
    }

    /// Frames as much of `bytes` (the WebSocket's output) as the windows allow as
    /// DATA; `end` ends our side with the last of them once all are framed. Returns
    /// how many were framed.
    pub fn send(&mut self, bytes: &[u8], end: bool) -> usize {
        if self.phase != Phase::Open || self.ended {
            return 0;
        }
        let room = self.send_window.min(self.stream_window).max(0) as usize;
        let n = bytes.len().min(room);
        let end = end && n == bytes.len();
        let mut at = 0;
        while at < n || (end && at == 0 && n == 0) {
            let k = (n - at).min(self.peer_max_frame);
            let last = at + k == n;
            let flags = if end && last { frame::END_STREAM } else { 0 };
            frame::head(&mut self.out, k, frame::DATA, flags, STREAM);
            self.out.extend_from_slice(&bytes[at..at + k]);
            at += k;
            if last {
                break;
            }
        }
        self.send_window -= n as i64;
        self.stream_window -= n as i64;
        self.ended |= end;
        n
    }

    /// Takes bytes read, calling `each` with what each frame means for the
    /// WebSocket; `each`'s error stops the reading and is returned.
    pub fn feed<E>(
        &mut self,
        data: &[u8],
        mut each: impl FnMut(Read<'_>) -> Result<(), E>,
        failed: impl Fn(Failed) -> E,
    ) -> Result<(), E> {
        let mut held = std::mem::take(&mut self.partial);
        let from_held = !held.is_empty();
        if from_held {
            held.extend_from_slice(data);
        }
        let input: &[u8] = if from_held { &held } else { data };
        let mut at = 0;
        let mut result = Ok(());
        while let Some(h) = Head::parse(&input[at..]) {
            if h.len > frame::DEFAULT_MAX_FRAME
                || (self.phase == Phase::Settings && h.kind != frame::SETTINGS)
            {
                // Larger than we allow (we never raise SETTINGS_MAX_FRAME_SIZE); or
                // not the server preface's SETTINGS.
                let f = if self.phase == Phase::Settings {
                    Failed::NotH2
                } else {
                    Failed::Protocol
                };
                result = Err(failed(f));
                break;
            }
            if input.len() < at + 9 + h.len {
                break;
            }
            let payload = &input[at + 9..at + 9 + h.len];
            at += 9 + h.len;
            let r = match self.frame(h, payload) {
                Ok(read) => each(read),
                Err(f) => Err(failed(f)),
            };
            if r.is_err() {
                result = r;
                break;
            }
        }
        if result.is_ok() {
            let rest = input.len() - at;
            if from_held {
                held.drain(..at);
            } else {
                held.clear();
                held.extend_from_slice(&data[data.len() - rest..]);
            }
            self.partial = held;
        }
        result
    }

    /// One whole frame from the server.
    fn frame<'a>(&mut self, h: Head, payload: &'a [u8]) -> Result<Read<'a>, Failed> {
        if matches!(h.kind, frame::PING | frame::SETTINGS) && self.unwritten().len() > MAX_OWED {
            return Err(Failed::Protocol);
        }
        self.blocks.check(h.kind).map_err(|_| Failed::Protocol)?;
        match h.kind {
            frame::SETTINGS => self.settings(h, payload),
            frame::HEADERS | frame::CONTINUATION => {
                let block = self
                    .blocks
                    .frame(h, payload)
                    .map_err(|_| Failed::Protocol)?;
                match block {
                    Some(b) => self.headers(b.stream, &b.fields, b.end_stream),
                    None => Ok(Read::Nothing),
                }
            }
            frame::DATA => self.data(h, payload),
            frame::PING if h.stream == 0 && payload.len() == 8 => {
                if h.flags & frame::ACK == 0 {
                    frame::head(&mut self.out, 8, frame::PING, frame::ACK, 0);
                    self.out.extend_from_slice(payload);
                }
                Ok(Read::Nothing)
            }
            frame::PING => Err(Failed::Protocol),
            frame::WINDOW_UPDATE => {
                let inc = frame::u32_payload(payload).ok_or(Failed::Protocol)? & 0x7fff_ffff;
                let w = if h.stream == 0 {
                    &mut self.send_window
                } else if h.stream == STREAM {
                    &mut self.stream_window
                } else {
                    return Ok(Read::Nothing);
                };
                *w += i64::from(inc);
                if inc == 0 || *w > frame::MAX_WINDOW {
                    return Err(Failed::Protocol);
                }
                Ok(Read::Nothing)
            }
            frame::RST_STREAM if h.stream == STREAM => Ok(Read::Reset),
            frame::GOAWAY => {
                let last = frame::u32_payload(payload.get(..4).ok_or(Failed::Protocol)?)
                    .ok_or(Failed::Protocol)?
                    & 0x7fff_ffff;
                let code = payload.get(4..8).and_then(frame::u32_payload);
                if code.is_some_and(|c| c != frame::NO_ERROR) {
                    return Err(Failed::Protocol);
                }
                // A stream the server did not process will not be answered.
                Ok(if last < STREAM && self.phase != Phase::Settings {
                    Read::Reset
                } else {
                    Read::Nothing
                })
            }
            // We ask for no pushes: one is a connection error.
            frame::PUSH_PROMISE => Err(Failed::Protocol),
            _ => Ok(Read::Nothing),
        }
    }

    fn settings<'a>(&mut self, h: Head, payload: &[u8]) -> Result<Read<'a>, Failed> {
        if h.stream != 0 {
            return Err(Failed::Protocol);
        }
        if h.flags & frame::ACK != 0 {
            return Ok(Read::Nothing);
        }
        let mut connect = false;
        for (key, v) in frame::settings_pairs(payload).ok_or(Failed::Protocol)? {
            match key {
                frame::SETTINGS_ENABLE_CONNECT_PROTOCOL => connect = v == 1,
                frame::SETTINGS_INITIAL_WINDOW_SIZE => {
                    if i64::from(v) > frame::MAX_WINDOW {
                        return Err(Failed::Protocol);
                    }
                    self.stream_window += i64::from(v) - self.peer_initial_window;
                    self.peer_initial_window = i64::from(v);
                }
                frame::SETTINGS_MAX_FRAME_SIZE => {
                    if !(frame::DEFAULT_MAX_FRAME as u32..1 << 24).contains(&v) {
                        return Err(Failed::Protocol);
                    }
                    self.peer_max_frame = v as usize;
                }
                _ => {}
            }
        }
        frame::head(&mut self.out, 0, frame::SETTINGS, frame::ACK, 0);
        if self.phase == Phase::Settings {
            // The server's first SETTINGS say whether it takes extended CONNECT (RFC
            // 8441 §3: not before they came).
            if !connect {
                return Err(Failed::NoConnect);
            }
            let len = self.connect.len();
            frame::head(
                &mut self.out,
                len,
                frame::HEADERS,
                frame::END_HEADERS,
                STREAM,
            );
            self.out.extend_from_slice(&self.connect);
            self.connect = Vec::new();
            self.phase = Phase::Connecting;
        }
        Ok(Read::Nothing)
    }

    fn headers<'a>(&mut self, stream: u32, block: &[u8], end: bool) -> Result<Read<'a>, Failed> {
        let mut status = None;
        let mut protocol = None;
        let mut extensions = Vec::new();
        let decoded = self
            .decoder
            .decode_bounded(block, MAX_BLOCK, |n, v, _| match n {
                b":status" => status = std::str::from_utf8(v).ok().and_then(|s| s.parse().ok()),
                b"sec-websocket-protocol" => protocol = Some(v.to_vec()),
                b"sec-websocket-extensions" if extensions.len() < 16 => extensions.push(v.to_vec()),
                _ => {}
            })
            .map_err(|_| Failed::Protocol)?;
        if decoded == hpack::Decoded::Stopped {
            return Err(Failed::Protocol);
        }
        if stream != STREAM {
            // No other stream is ours: a server may not open one.
            return Err(Failed::Protocol);
        }
        match (self.phase, status) {
            (Phase::Connecting, Some(100..=199)) if !end => Ok(Read::Nothing),
            // A 200 that ends the stream with it opened nothing.
            (Phase::Connecting, Some(200)) if end => Err(Failed::Unopened),
            (Phase::Connecting, Some(status)) => {
                if status == 200 {
                    self.phase = Phase::Open;
                }
                Ok(Read::Answer {
                    status,
                    protocol,
                    extensions,
                })
            }
            (Phase::Connecting, None) => Err(Failed::Protocol),
            // Trailers end the stream.
            (Phase::Open, None) if end => Ok(Read::End),
            _ => Err(Failed::Protocol),
        }
    }

    fn data<'a>(&mut self, h: Head, payload: &'a [u8]) -> Result<Read<'a>, Failed> {
        if h.stream != STREAM || self.phase != Phase::Open {
            return Err(Failed::Protocol);
        }
        let body = frame::unpad(h.flags, payload).map_err(|_| Failed::Protocol)?;
        // Taken as it comes: the windows open again once half is used.
        self.recv_unacked += payload.len() as u32;
        if self.recv_unacked >= RECV_WINDOW / 2 {
            frame::window_update(&mut self.out, 0, self.recv_unacked);
            if h.flags & frame::END_STREAM == 0 {
                frame::window_update(&mut self.out, STREAM, self.recv_unacked);
            }
            self.recv_unacked = 0;
        }
        let end = h.flags & frame::END_STREAM != 0;
        Ok(if end && body.is_empty() {
            Read::End
        } else {
            Read::Data { bytes: body, end }
        })
    }
}

/// The CONNECT's header block (literals, no table) from the upgrade request: its
/// path, its `Host` as `:authority`, and its other fields lowercased but those
/// HTTP/2 forbids and those of the HTTP/1.1 upgrade.
fn connect_block(request: &[u8], tls: bool) -> Vec<u8> {
    let mut fields = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut fields);
    let _ = req.parse(request);
    let mut b = Vec::with_capacity(request.len());
    hpack::literal(&mut b, b":method", b"CONNECT");
    hpack::literal(&mut b, b":protocol", b"websocket");
    hpack::literal(&mut b, b":scheme", if tls { b"https" } else { b"http" });
    hpack::literal(&mut b, b":path", req.path.unwrap_or("/").as_bytes());
    let host = req
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("host"));
    hpack::literal(&mut b, b":authority", host.map_or(&b""[..], |h| h.value));
    let mut name = Vec::new();
    for h in req.headers.iter() {
        name.clear();
        name.extend(h.name.bytes().map(|c| c.to_ascii_lowercase()));
        let dropped = matches!(
            &name[..],
            b"host"
                | b"connection"
                | b"upgrade"
                | b"keep-alive"
                | b"proxy-connection"
                | b"transfer-encoding"
                | b"te"
                | b"sec-websocket-key"
        );
        if !dropped {
            hpack::literal(&mut b, &name, h.value);
        }
    }
    b
}

#[cfg(test)]
mod tests;
