//! permessage-deflate (RFC 7692) for both ends: the extension's negotiation in the
//! handshake (a client's offer, the server's choice among a client's offers, the
//! client's check of the server's answer) and the per-message codec — a message's
//! payload deflated with a sync flush and its trailing `00 00 ff ff` dropped, inflated
//! with those four bytes put back, each side's LZ77 context kept from message to
//! message unless the negotiation says it is reset.
//!
//! The compression itself is flate2's on the zlib-rs backend (which takes window
//! sizes). A window of 2^8 bytes, which zlib cannot deflate with, is honoured by
//! sending that side's messages uncompressed, as the extension allows any message to
//! go. Inflating is bounded: its output is handed on in pieces, so the reader checks
//! the size limit and the text's UTF-8 as it grows, and a compressed message never
//! costs more memory than the limit it is held to.

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

use super::{broke, WsError, INVALID_DATA};

/// The extension's name.
pub const NAME: &str = "permessage-deflate";

/// What a client offers: the extension, with leave for the server to narrow the
/// client's window (the client deflates with any window it is given).
pub const OFFER: &str = "permessage-deflate; client_max_window_bits";

/// The bytes a sync flush ends with, dropped from each compressed message.
const TAIL: [u8; 4] = [0, 0, 0xff, 0xff];

/// The output inflated per step (kept on the stack).
const STEP: usize = 8 * 1024;

/// The parameters both ends agreed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// The server resets its context after each message.
    pub server_no_context_takeover: bool,
    /// The client resets its context after each message.
    pub client_no_context_takeover: bool,
    /// The server's window is at most 2^n bytes (8 to 15).
    pub server_max_window_bits: u8,
    /// The client's window is at most 2^n bytes (8 to 15).
    pub client_max_window_bits: u8,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            server_no_context_takeover: false,
            client_no_context_takeover: false,
            server_max_window_bits: 15,
            client_max_window_bits: 15,
        }
    }
}

impl Params {
    /// The deflater for what `server` (or the client) sends.
    pub fn deflater(&self, server: bool) -> Deflater {
        if server {
            Deflater::new(self.server_max_window_bits, self.server_no_context_takeover)
        } else {
            Deflater::new(self.client_max_window_bits, self.client_no_context_takeover)
        }
    }

    /// Whether the peer of `server` (or of the client) resets its context after each
    /// message: the inflater must too.
    pub fn peer_resets(&self, server: bool) -> bool {
        if server {
            self.client_no_context_takeover
        } else {
            self.server_no_context_takeover
        }
    }
}

/// The server's choice among the offers in a handshake's `Sec-WebSocket-Extensions`
/// values: the first permessage-deflate offer whose parameters are all known, each
/// once, with a value in range — the parameters and the header value that accepts
/// it. `None`: no offer it can take (the extension is then declined).
pub fn accept<'a>(values: impl IntoIterator<Item = &'a [u8]>) -> Option<(Params, String)> {
    for value in values {
        for element in split(value, b',') {
            let Some(offer) = parse(element, true) else {
                continue;
            };
            let p = offer.params;
            let mut answer = String::from(NAME);
            if p.server_no_context_takeover {
                answer.push_str("; server_no_context_takeover");
            }
            if p.client_no_context_takeover {
                answer.push_str("; client_no_context_takeover");
            }
            if offer.server_bits {
                answer.push_str(&format!(
                    "; server_max_window_bits={}",
                    p.server_max_window_bits
                ));
            }
            // The client's window is left as it offered: this end inflates with the
            // largest, which reads any smaller one.
            return Some((p, answer));
        }
    }
    None
}

/// A client's check of the server's answer to [`OFFER`] (its
/// `Sec-WebSocket-Extensions` values): `Ok(None)` when the server declined (no
/// extension named), the parameters when it accepted, `Err` when it named anything
/// else, more than one extension, or a parameter unknown, repeated or out of range.
pub fn accepted<'a>(
    values: impl IntoIterator<Item = &'a [u8]>,
) -> Result<Option<Params>, NotOffered> {
    let mut found = None;
    for value in values {
        for element in split(value, b',') {
            if found.is_some() {
                return Err(NotOffered);
            }
            found = Some(parse(element, false).ok_or(NotOffered)?.params);
        }
    }
    Ok(found)
}

/// A client's offer asking for parameters of its own — `asks` is what follows the
/// extension's name, e.g. `server_no_context_takeover; server_max_window_bits=10` —
/// as its header value, with what it asks. The client's window is offered as
/// [`OFFER`] offers it unless `asks` names it. `Err`: why `asks` is not an offer
/// (a parameter unknown, repeated, or out of range).
pub fn offer_with(asks: &str) -> Result<(String, Asked), BadParams> {
    if asks.len() > 256 {
        return Err(BadParams::TooLong(asks.len()));
    }
    let value = match asks.trim() {
        "" => return Ok((OFFER.to_string(), Asked::default())),
        a => format!("{NAME}; {a}"),
    };
    let Some(p) = parse(value.as_bytes(), true) else {
        return Err(BadParams::Unknown(asks.to_string()));
    };
    let names_client =
        split(asks.as_bytes(), b';').any(|part| part.starts_with(b"client_max_window_bits"));
    let header = match names_client {
        true => value,
        false => format!("{value}; client_max_window_bits"),
    };
    let asked = Asked {
        params: p.params,
        server_bits: p.server_bits,
    };
    Ok((header, asked))
}

/// Why parameters cannot be asked in an offer ([`offer_with`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BadParams {
    /// More than 256 bytes of them.
    TooLong(usize),
    /// Not permessage-deflate's parameters, each once and in range.
    Unknown(String),
}

impl std::fmt::Display for BadParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BadParams::TooLong(n) => write!(f, "{n} bytes of parameters; at most 256"),
            BadParams::Unknown(asks) => write!(
                f,
                "{asks:?}: not permessage-deflate's parameters (server_no_context_takeover, client_no_context_takeover, server_max_window_bits=8..15, client_max_window_bits[=8..15], each once)"
            ),
        }
    }
}

impl std::error::Error for BadParams {}

/// What a client's offer asked for beyond [`OFFER`] (see [`offer_with`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Asked {
    params: Params,
    server_bits: bool,
}

impl Asked {
    /// `answer` (the server's, as [`accepted`] read it) held to what was asked (RFC
    /// 7692 §7.1): the server's no-context-takeover and window as asked (a window
    /// no larger), and the client's own asks kept whatever the answer says. `None`:
    /// the answer does not honour the offer, and the connection must fail.
    pub fn hold(&self, answer: Params) -> Option<Params> {
        let a = &self.params;
        let honoured = (!a.server_no_context_takeover || answer.server_no_context_takeover)
            && (!self.server_bits || answer.server_max_window_bits <= a.server_max_window_bits);
        honoured.then(|| Params {
            client_no_context_takeover: answer.client_no_context_takeover
                || a.client_no_context_takeover,
            client_max_window_bits: answer.client_max_window_bits.min(a.client_max_window_bits),
            ..answer
        })
    }
}

/// A server's answer to [`OFFER`] that names what was not offered (see [`accepted`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotOffered;

impl std::fmt::Display for NotOffered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an extension answer that permessage-deflate's offer does not allow")
    }
}

impl std::error::Error for NotOffered {}

/// An element parsed: its parameters, and whether it named the server's window.
struct Parsed {
    params: Params,
    server_bits: bool,
}

/// Parses one extension element as permessage-deflate (`offer`: a client's, where
/// `client_max_window_bits` may come without a value). `None`: another extension,
/// or a parameter unknown, repeated, or without its value or out of range.
fn parse(element: &[u8], offer: bool) -> Option<Parsed> {
    let mut parts = split(element, b';');
    let name = parts.next()?;
    if !name.eq_ignore_ascii_case(NAME.as_bytes()) {
        return None;
    }
    let mut params = Params::default();
    let (mut seen, mut server_bits) = ([false; 4], false);
    for part in parts {
        let (key, value) = match part.iter().position(|&b| b == b'=') {
            Some(i) => (part[..i].trim_ascii(), Some(part[i + 1..].trim_ascii())),
            None => (part, None),
        };
        let which = match key {
            b"server_no_context_takeover" => 0,
            b"client_no_context_takeover" => 1,
            b"server_max_window_bits" => 2,
            b"client_max_window_bits" => 3,
            _ => return None,
        };
        if std::mem::replace(&mut seen[which], true) {
            return None;
        }
        match (which, value) {
            (0, None) => params.server_no_context_takeover = true,
            (1, None) => params.client_no_context_takeover = true,
            (2, Some(v)) => {
                params.server_max_window_bits = bits(v)?;
                server_bits = true;
            }
            (3, Some(v)) => params.client_max_window_bits = bits(v)?,
            // A client's offer may name its window without a value: it can take one.
            (3, None) if offer => {}
            _ => return None,
        }
    }
    Some(Parsed {
        params,
        server_bits,
    })
}

/// A window's bits, 8 to 15, from a token or a quoted string of digits.
fn bits(v: &[u8]) -> Option<u8> {
    let v = match v {
        [b'"', inner @ .., b'"'] => inner,
        _ => v,
    };
    let mut n: u32 = 0;
    let mut digits = 0;
    let mut escaped = false;
    for &b in v {
        if b == b'\\' && !escaped {
            escaped = true;
            continue;
        }
        escaped = false;
        if !b.is_ascii_digit() || digits == 2 {
            return None;
        }
        n = n * 10 + u32::from(b - b'0');
        digits += 1;
    }
    (digits > 0 && !escaped && (8..=15).contains(&n) && v[0] != b'0').then_some(n as u8)
}

/// `value` split at `sep` outside quoted strings, each piece trimmed, empty ones left
/// out.
fn split(value: &[u8], sep: u8) -> impl Iterator<Item = &[u8]> {
    let mut rest = value;
    std::iter::from_fn(move || loop {
        if rest.is_empty() {
            return None;
        }
        let (mut quoted, mut escaped, mut end) = (false, false, rest.len());
        for (i, &b) in rest.iter().enumerate() {
            match b {
                _ if escaped => escaped = false,
                b'\\' if quoted => escaped = true,
                b'"' => quoted = !quoted,
                _ if b == sep && !quoted => {
                    end = i;
                    break;
                }
                _ => {}
            }
        }
        let piece = rest[..end].trim_ascii();
        rest = rest.get(end + 1..).unwrap_or_default();
        if !piece.is_empty() {
            return Some(piece);
        }
    })
}

/// Deflates one side's messages (see the module's description). The compressor (its
/// window and tables, about 256 KiB at 2^15) is made for the first message, so a
/// connection that sends none (held with pings) does not pay for it.
pub struct Deflater {
    c: Option<Compress>,
    /// The window's bits; 8: messages go uncompressed.
    bits: u8,
    reset: bool,
    /// The payload [`Deflater::frame`] makes before framing it.
    payload: Vec<u8>,
}

/// A payload buffer over this is given back after its message.
const PAYLOAD_CAPACITY: usize = 1 << 20;

impl std::fmt::Debug for Deflater {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deflater")
            .field("bits", &self.bits)
            .field("reset", &self.reset)
            .finish()
    }
}

impl Deflater {
    /// A deflater with a window of 2^`bits` bytes (8 to 15; 8 sends messages
    /// uncompressed), resetting its context after each message when `reset`.
    pub fn new(bits: u8, reset: bool) -> Deflater {
        Deflater {
            c: None,
            bits: bits.clamp(8, 15),
            reset,
            payload: Vec::new(),
        }
    }

    /// Appends `data` to `out` as one whole data message (`opcode`), deflated when
    /// the window allows (RSV1 set), masked with `mask` when the sender is a client.
    pub fn frame(&mut self, out: &mut Vec<u8>, opcode: u8, data: &[u8], mask: Option<[u8; 4]>) {
        let mut payload = std::mem::take(&mut self.payload);
        payload.clear();
        let compressed = self.message(data, &mut payload);
        super::frame(out, (true, compressed), opcode, &payload, mask);
        if payload.capacity() <= PAYLOAD_CAPACITY {
            self.payload = payload;
        }
    }

    /// Appends the payload that carries `data` as one message to `out`: `true` when
    /// it is compressed (the message's first frame then sets RSV1), `false` when it
    /// is `data` as it is.
    pub fn message(&mut self, data: &[u8], out: &mut Vec<u8>) -> bool {
        if self.bits < 9 {
            out.extend_from_slice(data);
            return false;
        }
        let bits = self.bits;
        let c = (self.c).get_or_insert_with(|| {
            Compress::new_with_window_bits(Compression::default(), false, bits)
        });
        let start = out.len();
        let mut input = data;
        let ok = loop {
            out.reserve(input.len() / 2 + 64);
            let before = c.total_in();
            if c.compress_vec(input, out, FlushCompress::Sync).is_err() {
                break false;
            }
            input = &input[(c.total_in() - before) as usize..];
            // A sync flush is done when it left room in the output. Nothing at all
            // comes of an empty message right after a flush: it is then the one
            // byte of an empty stored block's head (RFC 7692 §7.2.3.6).
            if input.is_empty() && out.len() < out.capacity() {
                break out.len() == start || out[start..].ends_with(&TAIL);
            }
        };
        if !ok {
            // Not a state the compressor reaches with whole input; the message goes
            // as it is and the context starts again.
            out.truncate(start);
            out.extend_from_slice(data);
            c.reset();
            return false;
        }
        if out.len() > start {
            out.truncate(out.len() - TAIL.len());
        } else {
            out.push(0);
        }
        if self.reset {
            c.reset();
        }
        true
    }
}

/// Inflates the peer's compressed messages (see the module's description); its state
/// and window are made for the first compressed message.
pub struct Inflater {
    d: Option<Decompress>,
    reset: bool,
    /// The message's deflate stream ended (a final block): the rest of it is let
    /// go, and the context starts again after it.
    ended: bool,
}

impl std::fmt::Debug for Inflater {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inflater")
            .field("reset", &self.reset)
            .field("ended", &self.ended)
            .finish()
    }
}

impl Inflater {
    /// An inflater (with the largest window, which reads any), starting each message
    /// afresh when the peer resets its context (`reset`).
    pub fn new(reset: bool) -> Inflater {
        Inflater {
            d: None,
            reset,
            ended: false,
        }
    }

    /// Takes a piece of a compressed message's payload, handing what it inflates to
    /// `on` in pieces (whose error stops it).
    pub fn feed(
        &mut self,
        input: &[u8],
        on: &mut impl FnMut(&[u8]) -> Result<(), WsError>,
    ) -> Result<(), WsError> {
        self.run(input, FlushDecompress::None, on)
    }

    /// The message's payload is all fed: the dropped tail is put back and the rest
    /// inflated.
    pub fn finish(
        &mut self,
        on: &mut impl FnMut(&[u8]) -> Result<(), WsError>,
    ) -> Result<(), WsError> {
        let r = self.run(&TAIL, FlushDecompress::Sync, on);
        if self.reset || self.ended || r.is_err() {
            if let Some(d) = &mut self.d {
                d.reset(false);
            }
            self.ended = false;
        }
        r
    }

    fn run(
        &mut self,
        mut input: &[u8],
        flush: FlushDecompress,
        on: &mut impl FnMut(&[u8]) -> Result<(), WsError>,
    ) -> Result<(), WsError> {
        let mut step = [0u8; STEP];
        let d = self.d.get_or_insert_with(|| Decompress::new(false));
        while !self.ended {
            let (read, made) = (d.total_in(), d.total_out());
            let status = d
                .decompress(input, &mut step, flush)
                .map_err(|_| broke(INVALID_DATA, "a compressed message that does not inflate"))?;
            let used = (d.total_in() - read) as usize;
            let n = (d.total_out() - made) as usize;
            input = &input[used..];
            if n > 0 {
                on(&step[..n])?;
            }
            self.ended = status == Status::StreamEnd;
            // Done when the input is taken and the output had room; stuck when
            // nothing moved.
            if (input.is_empty() && n < STEP) || (used == 0 && n == 0) {
                break;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
