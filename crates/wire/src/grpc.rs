//! gRPC's wire protocol over HTTP/2 (the gRPC project's "gRPC over HTTP2" document),
//! the parts both ends share: length-prefixed messages, status codes and their names,
//! the `grpc-timeout` header, and `grpc-message`'s percent-encoding.
//!
//! A call is an HTTP/2 POST to `/package.Service/Method` with `content-type:
//! application/grpc` and `te: trailers`; each message in either direction is a
//! compressed flag (0 or 1), a four-byte big-endian length and that many bytes. The
//! answer's `grpc-status` (and `grpc-message`) come in trailers, or in the only header
//! block of a trailers-only answer. [`MessageReader`] finds the messages of a body as
//! its bytes arrive, in bounded memory: a message over its limit is an error before
//! any of it is kept.

use std::time::Duration;

/// The bytes before each message: the compressed flag and the length.
pub const PREFIX: usize = 5;

/// The content type of a call and of its answer.
pub const CONTENT_TYPE: &str = "application/grpc";

/// The largest message received by default, as gRPC's own implementations default.
pub const DEFAULT_MAX_MESSAGE: usize = 4 << 20;

/// The status codes by number (0 to 16).
pub const CODES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// `UNKNOWN`: what a code outside the table is taken as.
pub const UNKNOWN: u8 = 2;

/// A code's name; codes outside the table are `UNKNOWN`, as the protocol asks.
pub fn code_name(code: u8) -> &'static str {
    CODES.get(code as usize).copied().unwrap_or("UNKNOWN")
}

/// A code's number from its name (`UNAVAILABLE`, any case) or its digits.
pub fn code_of(name: &str) -> Option<u8> {
    if let Ok(n) = name.parse::<u8>() {
        return (usize::from(n) < CODES.len()).then_some(n);
    }
    CODES
        .iter()
        .position(|c| c.eq_ignore_ascii_case(name))
        .map(|i| i as u8)
}

/// `grpc-status`'s value: decimal digits; a code past the table (or too long to be
/// one) is `UNKNOWN`. `None` when it is not a number at all.
pub fn parse_status(value: &[u8]) -> Option<u8> {
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n = value
        .iter()
        .take(4)
        .fold(0u32, |n, d| n * 10 + u32::from(d - b'0'));
    Some(match (value.len() <= 3, u8::try_from(n)) {
        (true, Ok(n)) if usize::from(n) < CODES.len() => n,
        _ => UNKNOWN,
    })
}

/// Appends one message with its prefix.
pub fn frame(out: &mut Vec<u8>, compressed: bool, message: &[u8]) {
    out.push(u8::from(compressed));
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
}

/// The length, prefix included, of the whole message `data` starts with; `None`
/// when `data` holds less than one whole message.
pub fn framed_len(data: &[u8]) -> Option<usize> {
    let head: [u8; 4] = data.get(1..PREFIX)?.try_into().ok()?;
    let whole = PREFIX.checked_add(u32::from_be_bytes(head) as usize)?;
    (whole <= data.len()).then_some(whole)
}

/// `grpc-timeout`'s value for `d`: at most eight digits and the finest unit that
/// holds it (rounded up, so that a deadline is never shorter than asked).
pub fn timeout(d: Duration) -> String {
    const MAX: u128 = 99_999_999;
    let ns = d.as_nanos();
    for (unit, per) in [
        ('n', 1u128),
        ('u', 1_000),
        ('m', 1_000_000),
        ('S', 1_000_000_000),
        ('M', 60_000_000_000),
        ('H', 3_600_000_000_000),
    ] {
        let v = ns.div_ceil(per);
        if v <= MAX {
            return format!("{v}{unit}");
        }
    }
    format!("{MAX}H")
}

/// A `grpc-timeout` value: one to eight digits and a unit (`H`, `M`, `S`, `m`, `u`,
/// `n`).
pub fn parse_timeout(value: &[u8]) -> Option<Duration> {
    let (&unit, digits) = value.split_last()?;
    if digits.is_empty() || digits.len() > 8 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let v = digits
        .iter()
        .fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
    Some(match unit {
        b'H' => Duration::from_secs(v * 3600),
        b'M' => Duration::from_secs(v * 60),
        b'S' => Duration::from_secs(v),
        b'm' => Duration::from_millis(v),
        b'u' => Duration::from_micros(v),
        b'n' => Duration::from_nanos(v),
        _ => return None,
    })
}

/// `grpc-message`'s value for `text`: bytes outside printable ASCII, and `%`,
/// percent-encoded.
pub fn encode_message(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for &b in text.as_bytes() {
        if (0x20..=0x7e).contains(&b) && b != b'%' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `grpc-message`'s text: percent-decoded, leniently (a `%` not followed by two hex
/// digits stays as it is), invalid UTF-8 replaced.
pub fn decode_message(value: &[u8]) -> String {
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::with_capacity(value.len());
    let mut i = 0;
    while i < value.len() {
        if value[i] == b'%' && i + 2 < value.len() {
            if let (Some(h), Some(l)) = (hex(value[i + 1]), hex(value[i + 2])) {
                out.push(h << 4 | l);
                i += 3;
                continue;
            }
        }
        out.push(value[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Why a body's messages cannot be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrpcError {
    /// A message's length is over the reader's limit.
    TooLarge {
        /// The length its prefix gives.
        len: u32,
        /// The limit.
        max: usize,
    },
    /// A prefix's flag byte is neither 0 nor 1.
    BadFlag(u8),
    /// The body ended inside a message (its prefix promised more bytes).
    Truncated,
}

impl std::fmt::Display for GrpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GrpcError::TooLarge { len, max } => {
                write!(f, "a message of {len} bytes, over the limit of {max} bytes")
            }
            GrpcError::BadFlag(b) => write!(
                f,
                "a message prefix with flag byte {b}, neither 0 (plain) nor 1 (compressed)"
            ),
            GrpcError::Truncated => f.write_str("the body ended inside a message"),
        }
    }
}

impl std::error::Error for GrpcError {}

/// A message found in a body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message<'a> {
    /// Its compressed flag.
    pub compressed: bool,
    /// Its length.
    pub len: u32,
    /// Its bytes, when the reader keeps them (empty otherwise).
    pub bytes: &'a [u8],
}

/// Finds the messages of one body as its bytes arrive.
#[derive(Debug, Clone)]
pub struct MessageReader {
    head: [u8; PREFIX],
    /// Bytes of the current prefix read so far.
    have: usize,
    /// Bytes of the current message still to come (after its prefix).
    left: u32,
    compressed: bool,
    len: u32,
    max: usize,
    /// Whether messages' bytes are kept and handed out.
    keep: bool,
    buf: Vec<u8>,
}

impl MessageReader {
    /// A reader of messages up to `max` bytes; `keep` hands out their bytes (a
    /// server reading requests), otherwise only their lengths (a client timing
    /// answers), which keeps nothing.
    pub fn new(max: usize, keep: bool) -> MessageReader {
        MessageReader {
            head: [0; PREFIX],
            have: 0,
            left: 0,
            compressed: false,
            len: 0,
            max,
            keep,
            buf: Vec::new(),
        }
    }

    /// Starts a new body.
    pub fn reset(&mut self) {
        self.have = 0;
        self.left = 0;
        self.buf.clear();
    }

    /// Whether the body so far ends between messages.
    pub fn between(&self) -> bool {
        self.have == 0 && self.left == 0
    }

    /// The body ended: an error if it ended inside a message.
    pub fn finish(&self) -> Result<(), GrpcError> {
        if self.between() {
            Ok(())
        } else {
            Err(GrpcError::Truncated)
        }
    }

    /// Feeds body bytes; `each` gets every message they complete, in order.
    pub fn feed(
        &mut self,
        mut data: &[u8],
        each: &mut dyn FnMut(Message<'_>),
    ) -> Result<(), GrpcError> {
        while !data.is_empty() {
            if self.left == 0 && self.have < PREFIX {
                let n = (PREFIX - self.have).min(data.len());
                self.head[self.have..self.have + n].copy_from_slice(&data[..n]);
                self.have += n;
                data = &data[n..];
                if self.have < PREFIX {
                    return Ok(());
                }
                let flag = self.head[0];
                if flag > 1 {
                    return Err(GrpcError::BadFlag(flag));
                }
                let len =
                    u32::from_be_bytes([self.head[1], self.head[2], self.head[3], self.head[4]]);
                if len as usize > self.max {
                    return Err(GrpcError::TooLarge { len, max: self.max });
                }
                self.compressed = flag == 1;
                self.len = len;
                self.left = len;
                self.buf.clear();
                if len == 0 {
                    self.have = 0;
                    each(Message {
                        compressed: self.compressed,
                        len: 0,
                        bytes: &[],
                    });
                }
                continue;
            }
            let n = (self.left as usize).min(data.len());
            if self.keep {
                self.buf.extend_from_slice(&data[..n]);
            }
            self.left -= n as u32;
            data = &data[n..];
            if self.left == 0 {
                self.have = 0;
                each(Message {
                    compressed: self.compressed,
                    len: self.len,
                    bytes: &self.buf,
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(r: &mut MessageReader, data: &[u8]) -> Result<Vec<(bool, Vec<u8>)>, GrpcError> {
        let mut out = Vec::new();
        r.feed(data, &mut |m| out.push((m.compressed, m.bytes.to_vec())))?;
        Ok(out)
    }

    #[test]
    fn a_whole_message_is_measured_and_a_part_is_not() {
        let mut body = Vec::new();
        frame(&mut body, false, b"hello");
        frame(&mut body, true, b"");
        assert_eq!(framed_len(&body), Some(10));
        assert_eq!(framed_len(&body[10..]), Some(5));
        for cut in 0..10 {
            assert_eq!(framed_len(&body[..cut]), None, "{cut} bytes");
        }
        assert_eq!(framed_len(&[0, 0xff, 0xff, 0xff, 0xff]), None);
    }

    #[test]
    fn messages_are_found_however_the_bytes_are_cut() {
        let mut body = Vec::new();
        frame(&mut body, false, b"hello");
        frame(&mut body, true, b"");
        frame(&mut body, false, &[7; 300]);
        for cut in 1..body.len() {
            let mut r = MessageReader::new(1024, true);
            let mut got = messages(&mut r, &body[..cut]).unwrap();
            got.extend(messages(&mut r, &body[cut..]).unwrap());
            assert_eq!(
                got,
                vec![
                    (false, b"hello".to_vec()),
                    (true, Vec::new()),
                    (false, vec![7; 300])
                ],
                "cut at {cut}"
            );
            assert!(r.finish().is_ok());
        }
        // Without keeping, only lengths.
        let mut r = MessageReader::new(1024, false);
        let mut lens = Vec::new();
        r.feed(&body, &mut |m| lens.push((m.len, m.bytes.len())))
            .unwrap();
        assert_eq!(lens, [(5, 0), (0, 0), (300, 0)]);
    }

    #[test]
    fn a_prefix_that_lies_or_a_message_too_large_is_an_error() {
        let mut r = MessageReader::new(10, true);
        assert_eq!(
            messages(&mut r, &[0, 0, 0, 0, 11]),
            Err(GrpcError::TooLarge { len: 11, max: 10 })
        );
        let mut r = MessageReader::new(10, true);
        assert_eq!(
            messages(&mut r, &[2, 0, 0, 0, 1]),
            Err(GrpcError::BadFlag(2))
        );
        let mut r = MessageReader::new(10, true);
        messages(&mut r, &[0, 0, 0, 0, 4, 1, 2]).unwrap();
        assert_eq!(r.finish(), Err(GrpcError::Truncated));
        r.reset();
        assert!(r.finish().is_ok());
    }

    #[test]
    fn statuses_and_their_names() {
        assert_eq!(parse_status(b"0"), Some(0));
        assert_eq!(parse_status(b"14"), Some(14));
        assert_eq!(code_name(14), "UNAVAILABLE");
        assert_eq!(parse_status(b"17"), Some(UNKNOWN));
        assert_eq!(parse_status(b"99999999999"), Some(UNKNOWN));
        assert_eq!(parse_status(b""), None);
        assert_eq!(parse_status(b"1a"), None);
        assert_eq!(code_name(200), "UNKNOWN");
        assert_eq!(code_of("unavailable"), Some(14));
        assert_eq!(code_of("4"), Some(4));
        assert_eq!(code_of("17"), None);
        assert_eq!(code_of("NOPE"), None);
    }

    #[test]
    fn timeouts_round_trip_and_never_shorten() {
        for d in [
            Duration::from_nanos(1),
            Duration::from_millis(250),
            Duration::from_secs(20),
            Duration::from_secs(400_000),
            Duration::from_nanos(123_456_789_012),
        ] {
            let v = timeout(d);
            let back = parse_timeout(v.as_bytes()).unwrap();
            assert!(back >= d, "{d:?} -> {v} -> {back:?}");
            assert!(v.len() <= 9, "{v}");
        }
        assert_eq!(timeout(Duration::from_millis(250)), "250000u");
        assert_eq!(parse_timeout(b"5S"), Some(Duration::from_secs(5)));
        assert_eq!(parse_timeout(b"S"), None);
        assert_eq!(parse_timeout(b"123456789S"), None);
        assert_eq!(parse_timeout(b"5x"), None);
    }

    #[test]
    fn messages_are_percent_encoded_and_decoded() {
        let text = "bad: 100% \u{e9}t\u{e9}\n";
        let enc = encode_message(text);
        assert_eq!(enc, "bad: 100%25 %C3%A9t%C3%A9%0A");
        assert_eq!(decode_message(enc.as_bytes()), text);
        assert_eq!(decode_message(b"50%"), "50%");
        assert_eq!(decode_message(b"%zz%4"), "%zz%4");
    }
}
