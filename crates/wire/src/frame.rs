//! HTTP/2 frames (RFC 9113 §4, §6): the 9-byte frame head, type and flag values,
//! settings and error codes, and writers for the frames both ends send.

/// What every HTTP/2 connection starts with, from the client.
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The frame size every endpoint must accept, and the largest we read.
pub const DEFAULT_MAX_FRAME: usize = 16_384;
/// A window's size before any SETTINGS or WINDOW_UPDATE.
pub const DEFAULT_WINDOW: i64 = 65_535;
/// The largest a flow-control window may grow (2^31 - 1).
pub const MAX_WINDOW: i64 = (1 << 31) - 1;

pub const DATA: u8 = 0;
pub const HEADERS: u8 = 1;
pub const PRIORITY: u8 = 2;
pub const RST_STREAM: u8 = 3;
pub const SETTINGS: u8 = 4;
pub const PUSH_PROMISE: u8 = 5;
pub const PING: u8 = 6;
pub const GOAWAY: u8 = 7;
pub const WINDOW_UPDATE: u8 = 8;
pub const CONTINUATION: u8 = 9;

pub const END_STREAM: u8 = 0x1;
pub const ACK: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;
pub const PADDED: u8 = 0x8;
/// HEADERS carries a priority (5 bytes before the block).
pub const PRIORITY_FLAG: u8 = 0x20;

pub const SETTINGS_HEADER_TABLE_SIZE: u16 = 1;
pub const SETTINGS_ENABLE_PUSH: u16 = 2;
pub const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 3;
pub const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 4;
pub const SETTINGS_MAX_FRAME_SIZE: u16 = 5;
pub const SETTINGS_MAX_HEADER_LIST_SIZE: u16 = 6;
/// RFC 8441: the sender takes extended CONNECT (a `:protocol` to tunnel, WebSocket's).
pub const SETTINGS_ENABLE_CONNECT_PROTOCOL: u16 = 8;

/// Error codes (RFC 9113 §7).
pub const NO_ERROR: u32 = 0x0;
pub const PROTOCOL_ERROR: u32 = 0x1;
pub const INTERNAL_ERROR: u32 = 0x2;
pub const FLOW_CONTROL_ERROR: u32 = 0x3;
pub const STREAM_CLOSED: u32 = 0x5;
pub const FRAME_SIZE_ERROR: u32 = 0x6;
pub const REFUSED_STREAM: u32 = 0x7;
pub const CANCEL: u32 = 0x8;
pub const COMPRESSION_ERROR: u32 = 0x9;
pub const ENHANCE_YOUR_CALM: u32 = 0xb;

/// A frame's 9-byte head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// Payload length.
    pub len: usize,
    /// Frame type.
    pub kind: u8,
    /// Flags.
    pub flags: u8,
    /// Stream identifier (the reserved bit cleared).
    pub stream: u32,
}

impl Head {
    /// Reads a head from the first 9 bytes of `b`; `None` when fewer are there.
    #[inline]
    pub fn parse(b: &[u8]) -> Option<Head> {
        let h = b.get(..9)?;
        Some(Head {
            len: u32::from_be_bytes([0, h[0], h[1], h[2]]) as usize,
            kind: h[3],
            flags: h[4],
            stream: u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff,
        })
    }
}

/// Writes a frame head.
#[inline]
pub fn head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    out.extend_from_slice(&(len as u32).to_be_bytes()[1..]);
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
}

/// Writes a SETTINGS frame with these `(identifier, value)` pairs.
pub fn settings(out: &mut Vec<u8>, values: &[(u16, u32)]) {
    head(out, values.len() * 6, SETTINGS, 0, 0);
    for (id, v) in values {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&v.to_be_bytes());
    }
}

/// The `(identifier, value)` pairs of a SETTINGS payload; `None` when its length is
/// not a multiple of six.
pub fn settings_pairs(payload: &[u8]) -> Option<impl Iterator<Item = (u16, u32)> + '_> {
    payload.len().is_multiple_of(6).then(|| {
        payload.chunks_exact(6).map(|s| {
            (
                u16::from_be_bytes([s[0], s[1]]),
                u32::from_be_bytes([s[2], s[3], s[4], s[5]]),
            )
        })
    })
}

/// Writes a WINDOW_UPDATE frame.
pub fn window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    head(out, 4, WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&increment.to_be_bytes());
}

/// Writes a RST_STREAM frame.
pub fn rst_stream(out: &mut Vec<u8>, stream: u32, code: u32) {
    head(out, 4, RST_STREAM, 0, stream);
    out.extend_from_slice(&code.to_be_bytes());
}

/// Writes a GOAWAY frame naming the last stream processed.
pub fn goaway(out: &mut Vec<u8>, last_stream: u32, code: u32) {
    head(out, 8, GOAWAY, 0, 0);
    out.extend_from_slice(&(last_stream & 0x7fff_ffff).to_be_bytes());
    out.extend_from_slice(&code.to_be_bytes());
}

/// A padded frame's payload without its pad length and padding.
pub fn unpad(flags: u8, payload: &[u8]) -> Result<&[u8], &'static str> {
    if flags & PADDED == 0 {
        return Ok(payload);
    }
    let pad = *payload
        .first()
        .ok_or("a padded frame without its pad length")? as usize;
    payload
        .get(1..payload.len().saturating_sub(pad))
        .filter(|_| pad < payload.len())
        .ok_or("padding longer than the frame")
}

/// The 4-byte value of a RST_STREAM or WINDOW_UPDATE payload.
pub fn u32_payload(payload: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(payload.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_round_trip_and_padding_is_checked() {
        let mut out = Vec::new();
        head(&mut out, 0x01_02_03, HEADERS, END_HEADERS, 0x8000_0005);
        assert_eq!(
            Head::parse(&out),
            Some(Head {
                len: 0x01_02_03,
                kind: HEADERS,
                flags: END_HEADERS,
                stream: 5
            })
        );
        assert_eq!(Head::parse(&out[..8]), None);
        assert_eq!(unpad(PADDED, &[2, b'a', 0, 0]), Ok(&b"a"[..]));
        assert_eq!(unpad(0, &[2, b'a']), Ok(&[2, b'a'][..]));
        assert!(unpad(PADDED, &[3, b'a', 0]).is_err());
        assert!(unpad(PADDED, &[]).is_err());
    }

    #[test]
    fn settings_read_back_as_written() {
        let pairs = [
            (SETTINGS_ENABLE_PUSH, 0),
            (SETTINGS_INITIAL_WINDOW_SIZE, 0x0102_0304),
        ];
        let mut out = Vec::new();
        settings(&mut out, &pairs);
        let h = Head::parse(&out).unwrap();
        assert_eq!((h.len, h.kind, h.stream), (12, SETTINGS, 0));
        let read: Vec<_> = settings_pairs(&out[9..]).unwrap().collect();
        assert_eq!(read, pairs);
        assert!(settings_pairs(&out[9..20]).is_none());
        assert_eq!(settings_pairs(&[]).unwrap().count(), 0);
    }
}
