//! HTTP/3's wire format (RFC 9114) as both ends read and write it: QUIC's variable-
//! length integers, the frames and their types, unidirectional stream types, settings,
//! and HTTP/3's error codes; [`qpack`] is its field compression (RFC 9204), and
//! [`message`] reads request, response and control streams with HTTP/3's rules.
//!
//! Reading is incremental and bounded: [`FrameReader`] takes a stream's bytes as they
//! come and gives whole frames, holding at most the payload limit it was made with
//! (a DATA frame's payload is handed over piece by piece and never held), and every
//! violation is an [`H3Error`] carrying the code the connection closes or the stream
//! resets with. Nothing here does I/O: the QUIC connection and the request state live
//! with their users.

pub mod message;
pub mod qpack;

/// An HTTP/3 or QPACK error code (RFC 9114 §8.1, RFC 9204 §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Code(pub u64);

impl Code {
    pub const NO_ERROR: Code = Code(0x100);
    pub const GENERAL_PROTOCOL_ERROR: Code = Code(0x101);
    pub const INTERNAL_ERROR: Code = Code(0x102);
    pub const STREAM_CREATION_ERROR: Code = Code(0x103);
    pub const CLOSED_CRITICAL_STREAM: Code = Code(0x104);
    pub const FRAME_UNEXPECTED: Code = Code(0x105);
    pub const FRAME_ERROR: Code = Code(0x106);
    pub const EXCESSIVE_LOAD: Code = Code(0x107);
    pub const ID_ERROR: Code = Code(0x108);
    pub const SETTINGS_ERROR: Code = Code(0x109);
    pub const MISSING_SETTINGS: Code = Code(0x10a);
    pub const REQUEST_REJECTED: Code = Code(0x10b);
    pub const REQUEST_CANCELLED: Code = Code(0x10c);
    pub const REQUEST_INCOMPLETE: Code = Code(0x10d);
    pub const MESSAGE_ERROR: Code = Code(0x10e);
    pub const CONNECT_ERROR: Code = Code(0x10f);
    pub const VERSION_FALLBACK: Code = Code(0x110);
    pub const QPACK_DECOMPRESSION_FAILED: Code = Code(0x200);
    pub const QPACK_ENCODER_STREAM_ERROR: Code = Code(0x201);
    pub const QPACK_DECODER_STREAM_ERROR: Code = Code(0x202);

    /// The code's name as the RFCs write it (`H3_FRAME_ERROR`), or its number.
    pub fn name(self) -> String {
        let known = match self.0 {
            0x100 => "H3_NO_ERROR",
            0x101 => "H3_GENERAL_PROTOCOL_ERROR",
            0x102 => "H3_INTERNAL_ERROR",
            0x103 => "H3_STREAM_CREATION_ERROR",
            0x104 => "H3_CLOSED_CRITICAL_STREAM",
            0x105 => "H3_FRAME_UNEXPECTED",
            0x106 => "H3_FRAME_ERROR",
            0x107 => "H3_EXCESSIVE_LOAD",
            0x108 => "H3_ID_ERROR",
            0x109 => "H3_SETTINGS_ERROR",
            0x10a => "H3_MISSING_SETTINGS",
            0x10b => "H3_REQUEST_REJECTED",
            0x10c => "H3_REQUEST_CANCELLED",
            0x10d => "H3_REQUEST_INCOMPLETE",
            0x10e => "H3_MESSAGE_ERROR",
            0x10f => "H3_CONNECT_ERROR",
            0x110 => "H3_VERSION_FALLBACK",
            0x200 => "QPACK_DECOMPRESSION_FAILED",
            0x201 => "QPACK_ENCODER_STREAM_ERROR",
            0x202 => "QPACK_DECODER_STREAM_ERROR",
            _ => return format!("0x{:x}", self.0),
        };
        known.to_string()
    }
}

/// A violation of HTTP/3 or QPACK: the code to close (or reset) with, and what was
/// wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct H3Error {
    pub code: Code,
    pub why: &'static str,
}

impl H3Error {
    pub fn new(code: Code, why: &'static str) -> H3Error {
        H3Error { code, why }
    }

    /// Whether the error is the stream's alone (RFC 9114 §4.1.2: a malformed or
    /// oversized message, a request cancelled or rejected), the stream being reset
    /// and the connection going on; every other error is the connection's (frames
    /// out of order, a broken frame, a QPACK failure, §4.1, §7.1, RFC 9204 §2.2).
    pub fn is_stream_error(&self) -> bool {
        matches!(
            self.code,
            Code::MESSAGE_ERROR
                | Code::EXCESSIVE_LOAD
                | Code::REQUEST_CANCELLED
                | Code::REQUEST_REJECTED
                | Code::REQUEST_INCOMPLETE
        )
    }
}

impl std::fmt::Display for H3Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code.name(), self.why)
    }
}

impl std::error::Error for H3Error {}

/// The largest value a variable-length integer holds (2^62 - 1).
pub const VARINT_MAX: u64 = (1 << 62) - 1;

/// Reads a QUIC variable-length integer (RFC 9000 §16) at the start of `buf`: the
/// value and its length, or `None` when `buf` ends inside it.
pub fn varint(buf: &[u8]) -> Option<(u64, usize)> {
    let first = *buf.first()?;
    let len = 1usize << (first >> 6);
    let bytes = buf.get(..len)?;
    let mut v = u64::from(first & 0x3f);
    for b in &bytes[1..] {
        v = (v << 8) | u64::from(*b);
    }
    Some((v, len))
}

/// Writes `v` as a variable-length integer in its shortest form. Values past
/// [`VARINT_MAX`] cannot be written: they are a caller's error, written as the maximum.
pub fn put_varint(out: &mut Vec<u8>, v: u64) {
    let v = v.min(VARINT_MAX);
    if v < 1 << 6 {
        out.push(v as u8);
    } else if v < 1 << 14 {
        out.extend_from_slice(&((v as u16) | 0x4000).to_be_bytes());
    } else if v < 1 << 30 {
        out.extend_from_slice(&((v as u32) | 0x8000_0000).to_be_bytes());
    } else {
        out.extend_from_slice(&(v | 0xc000_0000_0000_0000).to_be_bytes());
    }
}

/// Frame types (RFC 9114 §7.2).
pub mod kind {
    pub const DATA: u64 = 0x0;
    pub const HEADERS: u64 = 0x1;
    pub const CANCEL_PUSH: u64 = 0x3;
    pub const SETTINGS: u64 = 0x4;
    pub const PUSH_PROMISE: u64 = 0x5;
    pub const GOAWAY: u64 = 0x7;
    pub const MAX_PUSH_ID: u64 = 0xd;
}

/// Unidirectional stream types (RFC 9114 §6.2, RFC 9204 §4.2).
pub mod stream {
    pub const CONTROL: u64 = 0x0;
    pub const PUSH: u64 = 0x1;
    pub const QPACK_ENCODER: u64 = 0x2;
    pub const QPACK_DECODER: u64 = 0x3;
}

/// Settings identifiers (RFC 9114 §7.2.4.1, RFC 9204 §5).
pub mod setting {
    pub const QPACK_MAX_TABLE_CAPACITY: u64 = 0x1;
    pub const MAX_FIELD_SECTION_SIZE: u64 = 0x6;
    pub const QPACK_BLOCKED_STREAMS: u64 = 0x7;
}

/// Whether `t` is a reserved ("grease") type or identifier, `0x1f * N + 0x21`: sent to
/// exercise the peer, ignored on receipt.
pub fn is_grease(t: u64) -> bool {
    t >= 0x21 && (t - 0x21).is_multiple_of(0x1f)
}

/// A peer's SETTINGS, as far as HTTP/3 and QPACK define them; unknown ones ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Settings {
    pub qpack_max_table_capacity: u64,
    /// `None`: no limit was given.
    pub max_field_section_size: Option<u64>,
    pub qpack_blocked_streams: u64,
}

/// The most settings one SETTINGS frame may carry before it counts as excessive.
const MAX_SETTINGS: usize = 64;

impl Settings {
    /// Reads a SETTINGS frame's payload: a duplicate identifier, one of HTTP/2's that
    /// HTTP/3 reserves (0x2 to 0x5), a truncated pair or too many are errors.
    pub fn parse(mut p: &[u8]) -> Result<Settings, H3Error> {
        let mut s = Settings::default();
        let mut seen: Vec<u64> = Vec::new();
        while !p.is_empty() {
            let bad = || H3Error::new(Code::FRAME_ERROR, "a setting is cut short");
            let (id, a) = varint(p).ok_or_else(bad)?;
            let (value, b) = varint(&p[a..]).ok_or_else(bad)?;
            p = &p[a + b..];
            if (0x2..=0x5).contains(&id) {
                return Err(H3Error::new(
                    Code::SETTINGS_ERROR,
                    "an HTTP/2 setting in HTTP/3's SETTINGS",
                ));
            }
            if seen.contains(&id) {
                return Err(H3Error::new(Code::SETTINGS_ERROR, "a setting given twice"));
            }
            if seen.len() == MAX_SETTINGS {
                return Err(H3Error::new(Code::EXCESSIVE_LOAD, "too many settings"));
            }
            seen.push(id);
            match id {
                setting::QPACK_MAX_TABLE_CAPACITY => s.qpack_max_table_capacity = value,
                setting::MAX_FIELD_SECTION_SIZE => s.max_field_section_size = Some(value),
                setting::QPACK_BLOCKED_STREAMS => s.qpack_blocked_streams = value,
                _ => {}
            }
        }
        Ok(s)
    }

    /// Writes a SETTINGS frame of these settings (a limit or capacity of 0, the
    /// default, is left out), with one reserved setting to exercise the peer.
    pub fn write(&self, out: &mut Vec<u8>) {
        let mut p = Vec::with_capacity(24);
        for (id, v) in [
            (
                setting::QPACK_MAX_TABLE_CAPACITY,
                self.qpack_max_table_capacity,
            ),
            (setting::QPACK_BLOCKED_STREAMS, self.qpack_blocked_streams),
        ] {
            if v > 0 {
                put_varint(&mut p, id);
                put_varint(&mut p, v);
            }
        }
        if let Some(v) = self.max_field_section_size {
            put_varint(&mut p, setting::MAX_FIELD_SECTION_SIZE);
            put_varint(&mut p, v);
        }
        put_varint(&mut p, 0x21);
        put_varint(&mut p, 0);
        frame(out, kind::SETTINGS, &p);
    }
}

/// Writes a whole frame of type `t` with `payload`.
pub fn frame(out: &mut Vec<u8>, t: u64, payload: &[u8]) {
    put_varint(out, t);
    put_varint(out, payload.len() as u64);
    out.extend_from_slice(payload);
}

/// Writes the head of a DATA frame whose `len` bytes of payload follow.
pub fn data_head(out: &mut Vec<u8>, len: u64) {
    put_varint(out, kind::DATA);
    put_varint(out, len);
}

/// What a [`FrameReader`] gives.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A piece of a DATA frame's payload (a frame may come in several); `end` when it
    /// completes the frame.
    Data { bytes: &'a [u8], end: bool },
    /// A whole frame of another type (HEADERS, SETTINGS, GOAWAY, …, or one this does
    /// not know, which its user ignores): its type and payload.
    Other { kind: u64, payload: &'a [u8] },
}

/// Where a reader is in the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum At {
    /// Between frames (the head is gathered in `head`).
    Head,
    /// In a DATA payload, this much of it left.
    Data(u64),
    /// In another frame's payload, gathered in `held`.
    Payload { kind: u64, len: usize },
}

/// Reads one stream's frames incrementally, in bounded memory: a frame other than
/// DATA is held until whole, up to `limit` bytes; DATA is handed over as it comes.
#[derive(Debug)]
pub struct FrameReader {
    limit: usize,
    at: At,
    head: [u8; 16],
    head_len: usize,
    held: Vec<u8>,
}

impl FrameReader {
    /// A reader that refuses (with H3_EXCESSIVE_LOAD) any frame but DATA whose
    /// payload is over `limit` bytes.
    pub fn new(limit: usize) -> FrameReader {
        FrameReader {
            limit,
            at: At::Head,
            head: [0; 16],
            head_len: 0,
            held: Vec::new(),
        }
    }

    /// Whether the stream is between frames (a stream may end only there).
    pub fn at_boundary(&self) -> bool {
        self.at == At::Head && self.head_len == 0
    }

    /// Feeds `input`, handing each frame (or piece of DATA) to `on`; stops at the
    /// first error, which `on` may return too.
    pub fn feed(
        &mut self,
        mut input: &[u8],
        on: &mut dyn FnMut(Frame<'_>) -> Result<(), H3Error>,
    ) -> Result<(), H3Error> {
        loop {
            match self.at {
                At::Head => {
                    if input.is_empty() {
                        return Ok(());
                    }
                    // Gather the type and length: at most 16 bytes.
                    let take = (16 - self.head_len).min(input.len());
                    self.head[self.head_len..self.head_len + take].copy_from_slice(&input[..take]);
                    let have = self.head_len + take;
                    let parsed = varint(&self.head[..have]).and_then(|(t, a)| {
                        varint(&self.head[a..have]).map(|(len, b)| (t, len, a + b))
                    });
                    let Some((t, len, used)) = parsed else {
                        self.head_len = have;
                        return Ok(());
                    };
                    // Of the bytes taken from `input`, those past the head are payload.
                    input = &input[used - self.head_len..];
                    self.head_len = 0;
                    if t == kind::DATA {
                        self.at = At::Data(len);
                        if len == 0 {
                            self.at = At::Head;
                            on(Frame::Data {
                                bytes: &[],
                                end: true,
                            })?;
                        }
                        continue;
                    }
                    if matches!(t, 0x2 | 0x6 | 0x8 | 0x9) {
                        return Err(H3Error::new(
                            Code::FRAME_UNEXPECTED,
                            "an HTTP/2 frame type in HTTP/3",
                        ));
                    }
                    if len > self.limit as u64 {
                        return Err(H3Error::new(
                            Code::EXCESSIVE_LOAD,
                            "a frame larger than the limit",
                        ));
                    }
                    self.held.clear();
                    self.at = At::Payload {
                        kind: t,
                        len: len as usize,
                    };
                }
                At::Data(left) => {
                    if input.is_empty() {
                        return Ok(());
                    }
                    let n = (left.min(input.len() as u64)) as usize;
                    let (bytes, rest) = input.split_at(n);
                    input = rest;
                    let left = left - n as u64;
                    self.at = if left == 0 { At::Head } else { At::Data(left) };
                    on(Frame::Data {
                        bytes,
                        end: left == 0,
                    })?;
                }
                At::Payload { kind, len } => {
                    if self.held.is_empty() && input.len() >= len {
                        // Whole in this piece: handed over without a copy.
                        let (payload, rest) = input.split_at(len);
                        input = rest;
                        self.at = At::Head;
                        on(Frame::Other { kind, payload })?;
                        continue;
                    }
                    if input.is_empty() {
                        return Ok(());
                    }
                    let n = (len - self.held.len()).min(input.len());
                    self.held.extend_from_slice(&input[..n]);
                    input = &input[n..];
                    if self.held.len() == len {
                        self.at = At::Head;
                        let held = std::mem::take(&mut self.held);
                        let r = on(Frame::Other {
                            kind,
                            payload: &held,
                        });
                        self.held = held;
                        self.held.clear();
                        r?;
                    }
                }
            }
        }
    }
}

/// Reads a GOAWAY frame's payload: the stream or push ID it names.
pub fn goaway_id(payload: &[u8]) -> Result<u64, H3Error> {
    match varint(payload) {
        Some((id, n)) if n == payload.len() => Ok(id),
        _ => Err(H3Error::new(
            Code::FRAME_ERROR,
            "a GOAWAY that is not one ID",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_read_and_write_in_their_shortest_form() {
        // RFC 9000 Appendix A.1's examples.
        for (bytes, v) in [
            (
                &[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c][..],
                151_288_809_941_952_652,
            ),
            (&[0x9d, 0x7f, 0x3e, 0x7d][..], 494_878_333),
            (&[0x7b, 0xbd][..], 15_293),
            (&[0x25][..], 37),
        ] {
            assert_eq!(varint(bytes), Some((v, bytes.len())));
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(out, bytes);
        }
        // A longer form of 37 reads as 37.
        assert_eq!(varint(&[0x40, 0x25]), Some((37, 2)));
        assert_eq!(varint(&[0x9d, 0x7f]), None);
        assert_eq!(varint(&[]), None);
        let mut out = Vec::new();
        put_varint(&mut out, u64::MAX);
        assert_eq!(varint(&out), Some((VARINT_MAX, 8)));
    }

    #[test]
    fn settings_round_trip_and_their_violations_have_their_codes() {
        let s = Settings {
            qpack_max_table_capacity: 4096,
            max_field_section_size: Some(16_384),
            qpack_blocked_streams: 16,
        };
        let mut out = Vec::new();
        s.write(&mut out);
        let mut got = None;
        FrameReader::new(1024)
            .feed(&out, &mut |f| {
                let Frame::Other { kind, payload } = f else {
                    panic!("{f:?}")
                };
                assert_eq!(kind, kind::SETTINGS);
                got = Some(Settings::parse(payload)?);
                Ok(())
            })
            .unwrap();
        assert_eq!(got, Some(s));
        let code = |p: &[u8]| Settings::parse(p).unwrap_err().code;
        assert_eq!(code(&[0x06, 0x10, 0x06, 0x10]), Code::SETTINGS_ERROR);
        assert_eq!(code(&[0x03, 0x00]), Code::SETTINGS_ERROR);
        assert_eq!(code(&[0x06]), Code::FRAME_ERROR);
        let many: Vec<u8> = (0..65u8).flat_map(|i| [0x40, 0x40 + i, 0]).collect();
        assert_eq!(code(&many), Code::EXCESSIVE_LOAD);
        // Unknown and reserved settings are ignored.
        assert_eq!(
            Settings::parse(&[0x21, 0x05, 0x3f, 0x01]),
            Ok(Settings::default())
        );
        assert!(is_grease(0x21) && is_grease(0x21 + 0x1f * 7) && !is_grease(0x22));
    }

    /// Frames of every kind, fed one byte at a time and whole, come out the same.
    #[test]
    fn frames_read_the_same_however_they_are_split() {
        let mut wire = Vec::new();
        frame(&mut wire, kind::HEADERS, b"field section");
        data_head(&mut wire, 11);
        wire.extend_from_slice(b"hello world");
        frame(&mut wire, 0x21, b"grease");
        frame(&mut wire, kind::GOAWAY, &[0x40, 0x08]);
        data_head(&mut wire, 0);
        let read = |pieces: &mut dyn Iterator<Item = &[u8]>| {
            let mut r = FrameReader::new(64);
            let (mut seen, mut data) = (Vec::new(), Vec::new());
            for p in pieces {
                r.feed(p, &mut |f| {
                    match f {
                        Frame::Data { bytes, end } => {
                            data.extend_from_slice(bytes);
                            if end {
                                seen.push((kind::DATA, std::mem::take(&mut data)));
                            }
                        }
                        Frame::Other { kind, payload } => seen.push((kind, payload.to_vec())),
                    }
                    Ok(())
                })
                .unwrap();
            }
            assert!(r.at_boundary());
            seen
        };
        let whole = read(&mut std::iter::once(&wire[..]));
        assert_eq!(whole, read(&mut wire.chunks(1)));
        assert_eq!(whole, read(&mut wire.chunks(5)));
        assert_eq!(whole.len(), 5);
        assert_eq!(whole[1], (kind::DATA, b"hello world".to_vec()));
        assert_eq!(goaway_id(&whole[3].1), Ok(8));
        assert_eq!(whole[4], (kind::DATA, Vec::new()));
    }

    #[test]
    fn oversized_and_http2_frames_are_refused_before_any_is_held() {
        let mut r = FrameReader::new(64);
        // A HEADERS frame announcing 2^30 bytes: refused at its head.
        let mut wire = Vec::new();
        put_varint(&mut wire, kind::HEADERS);
        put_varint(&mut wire, 1 << 30);
        let e = r.feed(&wire, &mut |_| Ok(())).unwrap_err();
        assert_eq!(e.code, Code::EXCESSIVE_LOAD);
        assert!(r.held.capacity() == 0);
        // HTTP/2's PING (0x6) has no place in HTTP/3.
        let e = FrameReader::new(64)
            .feed(&[0x06, 0x00], &mut |_| Ok(()))
            .unwrap_err();
        assert_eq!(e.code, Code::FRAME_UNEXPECTED);
        // A stream cut inside a frame is not at a boundary.
        let mut r = FrameReader::new(64);
        r.feed(&[0x01, 0x05, b'a'], &mut |_| Ok(())).unwrap();
        assert!(!r.at_boundary());
        assert_eq!(goaway_id(&[0x40]).unwrap_err().code, Code::FRAME_ERROR);
    }
}
