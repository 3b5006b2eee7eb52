//! WebSocket's framing (RFC 6455) for both ends: the handshake's accept key, frame
//! heads and masking for what a side sends, and a [`Reader`] that takes a peer's bytes
//! however they are cut and reports whole messages, pings, pongs and the close, or the
//! rule the peer broke with the close code that answers it.
//!
//! The reader checks what RFC 6455 requires of a peer: masking by role (a client masks
//! every frame, a server none), no reserved bits without an extension that gives them
//! meaning (permessage-deflate's RSV1 on a message's first frame, when negotiated:
//! the message is then inflated as it comes, see [`deflate`]),
//! known opcodes, control frames whole and at most 125 bytes, continuations only
//! inside a fragmented message, close codes that may be sent, and text that is UTF-8,
//! checked as it arrives so that a bad sequence fails at once. A message's size is
//! checked against the limit from its frames' heads, before anything is kept. It keeps
//! a message's bytes only when asked (the server's echo needs them; a load client that
//! counts need not), and never more than one message.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

pub mod deflate;

use deflate::Inflater;

/// The GUID RFC 6455 appends to a handshake's key.
pub const GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// Opcodes.
pub const CONTINUATION: u8 = 0x0;
pub const TEXT: u8 = 0x1;
pub const BINARY: u8 = 0x2;
pub const CLOSE: u8 = 0x8;
pub const PING: u8 = 0x9;
pub const PONG: u8 = 0xA;

/// Close codes (RFC 6455 §7.4.1).
pub const NORMAL: u16 = 1000;
pub const GOING_AWAY: u16 = 1001;
pub const PROTOCOL_ERROR: u16 = 1002;
pub const UNSUPPORTED: u16 = 1003;
/// No code in the close frame (never sent).
pub const NO_STATUS: u16 = 1005;
/// The connection closed without a close frame (never sent).
pub const ABNORMAL: u16 = 1006;
pub const INVALID_DATA: u16 = 1007;
pub const POLICY: u16 = 1008;
pub const TOO_BIG: u16 = 1009;
pub const INTERNAL: u16 = 1011;

/// The longest control frame payload.
pub const MAX_CONTROL: usize = 125;

/// The longest frame head: 2 bytes, an 8-byte length, a 4-byte mask.
pub const MAX_HEAD: usize = 14;

/// `Sec-WebSocket-Accept` for a handshake's `Sec-WebSocket-Key`.
pub fn accept_key(key: &[u8]) -> String {
    let mut h = sha1_smol::Sha1::new();
    h.update(key);
    h.update(GUID.as_bytes());
    STANDARD.encode(h.digest().bytes())
}

/// Whether `key` is a valid `Sec-WebSocket-Key`: 16 bytes in base64.
pub fn valid_key(key: &[u8]) -> bool {
    key.len() == 24 && STANDARD.decode(key).is_ok_and(|k| k.len() == 16)
}

/// Appends a frame head: `fin`, RSV1 (`compressed`), `opcode`, the payload's `len`,
/// and `mask` when the sender is a client.
pub fn head(
    out: &mut Vec<u8>,
    (fin, compressed): (bool, bool),
    opcode: u8,
    len: usize,
    mask: Option<[u8; 4]>,
) {
    out.push(u8::from(fin) << 7 | u8::from(compressed) << 6 | opcode);
    let m = if mask.is_some() { 0x80 } else { 0 };
    match len {
        0..=125 => out.push(m | len as u8),
        126..=0xffff => {
            out.push(m | 126);
            out.extend_from_slice(&(len as u16).to_be_bytes());
        }
        _ => {
            out.push(m | 127);
            out.extend_from_slice(&(len as u64).to_be_bytes());
        }
    }
    if let Some(k) = mask {
        out.extend_from_slice(&k);
    }
}

/// Appends a whole frame of `payload` (masked with `mask` when given).
pub fn frame(
    out: &mut Vec<u8>,
    (fin, compressed): (bool, bool),
    opcode: u8,
    payload: &[u8],
    mask: Option<[u8; 4]>,
) {
    head(out, (fin, compressed), opcode, payload.len(), mask);
    let at = out.len();
    out.extend_from_slice(payload);
    if let Some(k) = mask {
        apply_mask(&mut out[at..], k, 0);
    }
}

/// Appends a close frame with `code` and `reason` (cut to fit 125 bytes at a character
/// boundary); `code` `None` sends none.
pub fn close(out: &mut Vec<u8>, code: Option<u16>, reason: &str, mask: Option<[u8; 4]>) {
    let mut payload = [0u8; MAX_CONTROL];
    let n = match code {
        None => 0,
        Some(c) => {
            payload[..2].copy_from_slice(&c.to_be_bytes());
            let mut end = reason.len().min(MAX_CONTROL - 2);
            while !reason.is_char_boundary(end) {
                end -= 1;
            }
            payload[2..2 + end].copy_from_slice(&reason.as_bytes()[..end]);
            2 + end
        }
    };
    frame(out, (true, false), CLOSE, &payload[..n], mask);
}

/// XORs `buf` with the mask `key`, `buf[0]` being byte `offset` of the payload (so a
/// payload may be unmasked in pieces).
pub fn apply_mask(buf: &mut [u8], key: [u8; 4], offset: usize) {
    let mut k = key;
    k.rotate_left(offset % 4);
    let wide = u64::from_ne_bytes([k[0], k[1], k[2], k[3], k[0], k[1], k[2], k[3]]);
    let mut chunks = buf.chunks_exact_mut(8);
    for c in &mut chunks {
        let v = u64::from_ne_bytes(c.try_into().expect("8 bytes")) ^ wide;
        c.copy_from_slice(&v.to_ne_bytes());
    }
    for (i, b) in chunks.into_remainder().iter_mut().enumerate() {
        *b ^= k[i % 4];
    }
}

/// Whether a close frame may carry `code` (RFC 6455 §7.4: the defined codes a peer
/// sends, and those for libraries and applications).
pub fn sendable_code(code: u16) -> bool {
    matches!(code, 1000..=1003 | 1007..=1011 | 3000..=4999)
}

/// A rule the peer broke: the close code that answers it, and what happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WsError {
    pub code: u16,
    pub why: &'static str,
}

impl std::fmt::Display for WsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (close code {})", self.why, self.code)
    }
}

impl std::error::Error for WsError {}

fn broke(code: u16, why: &'static str) -> WsError {
    WsError { code, why }
}

/// What the peer sent, as the reader completes it.
#[derive(Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// A whole data message: text or binary, compressed (RSV1, permessage-deflate),
    /// its length (inflated, when compressed), and its bytes when the reader keeps
    /// them (else its first bytes as far as [`Reader::keep_prefix`] asks, or none),
    /// inflated.
    Message {
        text: bool,
        compressed: bool,
        len: u64,
        data: &'a [u8],
    },
    Ping(&'a [u8]),
    Pong(&'a [u8]),
    /// The peer's close: its code (`None`: the frame had none) and reason.
    Close {
        code: Option<u16>,
        reason: &'a str,
    },
}

/// How a reader takes the peer's frames.
#[derive(Debug, Clone, Copy)]
pub struct ReaderOptions {
    /// The peer is a client: its frames must be masked (a server's must not be).
    pub peer_is_client: bool,
    /// The most bytes one message may hold (all its frames).
    pub max_message: u64,
    /// Keep each message's bytes for [`Event::Message`].
    pub keep: bool,
}

/// The frame being read.
#[derive(Debug, Clone, Copy)]
struct Frame {
    fin: bool,
    opcode: u8,
    mask: Option<[u8; 4]>,
    /// Payload bytes still to come, and those read.
    left: u64,
    read: u64,
}

/// A data message under way (over its frames).
#[derive(Debug, Clone, Copy)]
struct Message {
    text: bool,
    compressed: bool,
    /// Payload bytes as sent.
    len: u64,
}

/// Reads a peer's frames (see the module's description).
#[derive(Debug)]
pub struct Reader {
    opts: ReaderOptions,
    head: [u8; MAX_HEAD],
    have: usize,
    frame: Option<Frame>,
    message: Option<Message>,
    control: Vec<u8>,
    data: Vec<u8>,
    utf8: Utf8,
    /// Unmasked text for the UTF-8 check when the bytes are not kept.
    scratch: Vec<u8>,
    closed: bool,
    /// Bytes of each message kept for [`Event::Message`] when the rest is not (see
    /// [`Reader::keep_prefix`]).
    prefix: usize,
    /// permessage-deflate was negotiated: RSV1 marks a message this inflates, and
    /// the bytes the one under way inflated to so far.
    inflate: Option<Box<Inflater>>,
    inflated: u64,
}

/// Kept message buffers over this are given back after their message.
const KEEP_CAPACITY: usize = 1 << 20;

impl Reader {
    pub fn new(opts: ReaderOptions) -> Reader {
        Reader {
            opts,
            head: [0; MAX_HEAD],
            have: 0,
            frame: None,
            message: None,
            control: Vec::new(),
            data: Vec::new(),
            utf8: Utf8::default(),
            scratch: Vec::new(),
            closed: false,
            prefix: 0,
            inflate: None,
            inflated: 0,
        }
    }

    /// permessage-deflate was negotiated ([`deflate`]): a message whose first frame
    /// sets RSV1 is inflated as it comes, its size limit and UTF-8 checked on what it
    /// inflates to, and the context reset after each message when the peer resets
    /// its own (`peer_resets`).
    pub fn inflate(&mut self, peer_resets: bool) {
        self.inflate = Some(Box::new(Inflater::new(peer_resets)));
    }

    /// Keeps each message's first `n` bytes for [`Event::Message`] when its bytes are
    /// not kept (a stamp at its start, say), the rest counted and let go.
    pub fn keep_prefix(&mut self, n: usize) {
        self.prefix = n;
    }

    /// Whether the peer's close has been read (nothing after it is taken).
    pub fn closed(&self) -> bool {
        self.closed
    }

    /// Whether a frame or a fragmented message is part read.
    pub fn partial(&self) -> bool {
        self.have > 0 || self.frame.is_some() || self.message.is_some()
    }

    /// Takes `input`, reporting each message, ping, pong and close to `on` as it
    /// completes. An error is the rule the peer broke; the connection is then to be
    /// closed with its code, and the reader takes nothing more.
    pub fn feed(
        &mut self,
        mut input: &[u8],
        on: &mut impl FnMut(Event<'_>),
    ) -> Result<(), WsError> {
        while !input.is_empty() && !self.closed {
            let Some(f) = self.frame else {
                let used = self.take_head(input)?;
                input = &input[used..];
                if let Some(f) = self.frame.filter(|f| f.left == 0) {
                    self.frame_done(f, on)?;
                }
                continue;
            };
            let n = (f.left.min(input.len() as u64)) as usize;
            self.payload(f, &input[..n])?;
            input = &input[n..];
            let f = self.frame.as_mut().expect("a frame");
            f.left -= n as u64;
            f.read += n as u64;
            if f.left == 0 {
                let f = *f;
                self.frame_done(f, on)?;
            }
        }
        Ok(())
    }

    /// Takes head bytes from `input`; once the head is whole it is checked and its
    /// frame begun. Returns the bytes used.
    fn take_head(&mut self, input: &[u8]) -> Result<usize, WsError> {
        let mut used = 0;
        loop {
            let need = head_len(&self.head[..self.have]);
            if self.have == need {
                break;
            }
            let Some(&b) = input.get(used) else {
                return Ok(used);
            };
            self.head[self.have] = b;
            self.have += 1;
            used += 1;
        }
        let h = self.head;
        self.have = 0;
        let fin = h[0] & 0x80 != 0;
        let rsv1 = h[0] & 0x40 != 0;
        let opcode = h[0] & 0x0f;
        let masked = h[1] & 0x80 != 0;
        if h[0] & 0x30 != 0 {
            return Err(broke(
                PROTOCOL_ERROR,
                "a frame with RSV2 or RSV3 set, no extension giving them meaning",
            ));
        }
        let (len, at) = match h[1] & 0x7f {
            126 => (u64::from(u16::from_be_bytes([h[2], h[3]])), 4),
            127 => {
                let l = u64::from_be_bytes(h[2..10].try_into().expect("8 bytes"));
                if l >> 63 != 0 {
                    return Err(broke(PROTOCOL_ERROR, "a frame length with its top bit set"));
                }
                (l, 10)
            }
            l => (u64::from(l), 2),
        };
        if masked != self.opts.peer_is_client {
            return Err(broke(
                PROTOCOL_ERROR,
                if self.opts.peer_is_client {
                    "a client's frame not masked"
                } else {
                    "a server's frame masked"
                },
            ));
        }
        let mask = masked.then(|| [h[at], h[at + 1], h[at + 2], h[at + 3]]);
        match opcode {
            CLOSE | PING | PONG => {
                if !fin {
                    return Err(broke(PROTOCOL_ERROR, "a fragmented control frame"));
                }
                if len > MAX_CONTROL as u64 {
                    return Err(broke(PROTOCOL_ERROR, "a control frame over 125 bytes"));
                }
                if rsv1 {
                    return Err(broke(PROTOCOL_ERROR, "a control frame with RSV1 set"));
                }
            }
            TEXT | BINARY => {
                if self.message.is_some() {
                    return Err(broke(
                        PROTOCOL_ERROR,
                        "a new message before the fragmented one ended",
                    ));
                }
                if rsv1 && self.inflate.is_none() {
                    return Err(broke(
                        PROTOCOL_ERROR,
                        "a frame with RSV1 set, permessage-deflate not negotiated",
                    ));
                }
                self.message = Some(Message {
                    text: opcode == TEXT,
                    compressed: rsv1,
                    len: 0,
                });
                self.utf8 = Utf8::default();
            }
            CONTINUATION => {
                if self.message.is_none() {
                    return Err(broke(
                        PROTOCOL_ERROR,
                        "a continuation frame outside a fragmented message",
                    ));
                }
                if rsv1 {
                    return Err(broke(PROTOCOL_ERROR, "a continuation frame with RSV1 set"));
                }
            }
            _ => return Err(broke(PROTOCOL_ERROR, "a frame with a reserved opcode")),
        }
        if let Some(m) = &self.message {
            if opcode < CLOSE && m.len.saturating_add(len) > self.opts.max_message {
                return Err(broke(TOO_BIG, "a message over the size limit"));
            }
        }
        self.frame = Some(Frame {
            fin,
            opcode,
            mask,
            left: len,
            read: 0,
        });
        Ok(used)
    }

    /// A piece of frame `f`'s payload.
    fn payload(&mut self, f: Frame, bytes: &[u8]) -> Result<(), WsError> {
        if f.opcode >= CLOSE {
            let at = self.control.len();
            self.control.extend_from_slice(bytes);
            if let Some(k) = f.mask {
                apply_mask(&mut self.control[at..], k, f.read as usize);
            }
            return Ok(());
        }
        let m = self.message.as_mut().expect("a message under way");
        m.len += bytes.len() as u64;
        if m.compressed {
            let text = m.text;
            let mut scratch = std::mem::take(&mut self.scratch);
            let input = match f.mask {
                Some(k) => {
                    scratch.clear();
                    scratch.extend_from_slice(bytes);
                    apply_mask(&mut scratch, k, f.read as usize);
                    &scratch[..]
                }
                None => bytes,
            };
            let r = self.inflate_into(text, Some(input));
            self.scratch = scratch;
            return r;
        }
        let check = m.text;
        if self.opts.keep {
            let at = self.data.len();
            self.data.extend_from_slice(bytes);
            if let Some(k) = f.mask {
                apply_mask(&mut self.data[at..], k, f.read as usize);
            }
            if check && !self.utf8.push(&self.data[at..]) {
                return Err(broke(INVALID_DATA, "text that is not UTF-8"));
            }
        } else if check {
            let ok = match f.mask {
                Some(k) => {
                    self.scratch.clear();
                    self.scratch.extend_from_slice(bytes);
                    apply_mask(&mut self.scratch, k, f.read as usize);
                    self.utf8.push(&self.scratch)
                }
                None => self.utf8.push(bytes),
            };
            if !ok {
                return Err(broke(INVALID_DATA, "text that is not UTF-8"));
            }
        }
        if self.prefix != 0 && !self.opts.keep && self.data.len() < self.prefix {
            let at = self.data.len();
            let n = bytes.len().min(self.prefix - at);
            self.data.extend_from_slice(&bytes[..n]);
            if let Some(k) = f.mask {
                apply_mask(&mut self.data[at..], k, f.read as usize);
            }
        }
        Ok(())
    }

    /// Inflates `input` of the compressed message under way (`text` or not; its end,
    /// the dropped tail put back, when `None`).
    #[cold]
    fn inflate_into(&mut self, text: bool, input: Option<&[u8]>) -> Result<(), WsError> {
        let Reader {
            opts,
            prefix,
            data,
            utf8,
            inflate,
            inflated: size,
            ..
        } = self;
        let inflater = inflate.as_mut().expect("RSV1 taken only when negotiated");
        let mut on = |piece: &[u8]| inflated(*opts, *prefix, text, size, data, utf8, piece);
        match input {
            Some(input) => inflater.feed(input, &mut on),
            None => inflater.finish(&mut on),
        }
    }

    /// Frame `f` is whole.
    fn frame_done(&mut self, f: Frame, on: &mut impl FnMut(Event<'_>)) -> Result<(), WsError> {
        self.frame = None;
        match f.opcode {
            CLOSE => {
                let p = &self.control;
                let (code, reason) = match p.len() {
                    0 => (None, ""),
                    1 => return Err(broke(PROTOCOL_ERROR, "a close frame of one byte")),
                    _ => {
                        let code = u16::from_be_bytes([p[0], p[1]]);
                        if !sendable_code(code) {
                            return Err(broke(PROTOCOL_ERROR, "a close code that may not be sent"));
                        }
                        let Ok(reason) = std::str::from_utf8(&p[2..]) else {
                            return Err(broke(INVALID_DATA, "a close reason that is not UTF-8"));
                        };
                        (Some(code), reason)
                    }
                };
                self.closed = true;
                on(Event::Close { code, reason });
            }
            PING => on(Event::Ping(&self.control)),
            PONG => on(Event::Pong(&self.control)),
            _ if f.fin => {
                let mut m = self.message.take().expect("a message under way");
                if m.compressed {
                    self.inflate_into(m.text, None)?;
                    m.len = std::mem::take(&mut self.inflated);
                }
                if m.text && !self.utf8.end() {
                    return Err(broke(
                        INVALID_DATA,
                        "text that ends inside a UTF-8 sequence",
                    ));
                }
                on(Event::Message {
                    text: m.text,
                    compressed: m.compressed,
                    len: m.len,
                    data: &self.data,
                });
                self.data.clear();
                if self.data.capacity() > KEEP_CAPACITY {
                    self.data = Vec::new();
                }
            }
            _ => {}
        }
        if f.opcode >= CLOSE {
            self.control.clear();
        }
        Ok(())
    }
}

/// A piece of a compressed message inflated (`size` so far): counted against the
/// limit, checked as text, kept as far as the reader keeps messages.
fn inflated(
    opts: ReaderOptions,
    prefix: usize,
    text: bool,
    size: &mut u64,
    data: &mut Vec<u8>,
    utf8: &mut Utf8,
    piece: &[u8],
) -> Result<(), WsError> {
    *size += piece.len() as u64;
    if *size > opts.max_message {
        return Err(broke(
            TOO_BIG,
            "a message over the size limit once inflated",
        ));
    }
    if text && !utf8.push(piece) {
        return Err(broke(INVALID_DATA, "text that is not UTF-8"));
    }
    if opts.keep {
        data.extend_from_slice(piece);
    } else if data.len() < prefix {
        data.extend_from_slice(&piece[..piece.len().min(prefix - data.len())]);
    }
    Ok(())
}

/// The length of the frame head that begins with `h` (2 until its second byte is
/// known).
fn head_len(h: &[u8]) -> usize {
    let Some(&b) = h.get(1) else {
        return 2;
    };
    let ext = match b & 0x7f {
        126 => 2,
        127 => 8,
        _ => 0,
    };
    2 + ext + if b & 0x80 != 0 { 4 } else { 0 }
}

/// UTF-8 checked piece by piece: a sequence cut between pieces is carried over.
#[derive(Debug, Default, Clone, Copy)]
pub struct Utf8 {
    carry: [u8; 4],
    n: usize,
}

impl Utf8 {
    /// Takes the next piece; false once the text is not UTF-8 (a sequence cut at the
    /// piece's end is not yet wrong).
    pub fn push(&mut self, mut bytes: &[u8]) -> bool {
        if self.n > 0 {
            // Finish the carried sequence first, a byte at a time.
            let width = match self.carry[0] {
                0xc2..=0xdf => 2,
                0xe0..=0xef => 3,
                0xf0..=0xf4 => 4,
                _ => return false,
            };
            while self.n < width {
                let Some((&b, rest)) = bytes.split_first() else {
                    return self.check_carry();
                };
                self.carry[self.n] = b;
                self.n += 1;
                bytes = rest;
                if !self.check_carry() {
                    return false;
                }
            }
            self.n = 0;
        }
        match std::str::from_utf8(bytes) {
            Ok(_) => true,
            Err(e) if e.error_len().is_none() => {
                let tail = &bytes[e.valid_up_to()..];
                self.carry[..tail.len()].copy_from_slice(tail);
                self.n = tail.len();
                true
            }
            Err(_) => false,
        }
    }

    /// Whether the carried bytes can still begin a valid sequence.
    fn check_carry(&self) -> bool {
        match std::str::from_utf8(&self.carry[..self.n]) {
            Ok(_) => true,
            Err(e) => e.error_len().is_none(),
        }
    }

    /// Whether the text ended at a character's end.
    pub fn end(&self) -> bool {
        self.n == 0
    }
}

#[cfg(test)]
mod tests;
