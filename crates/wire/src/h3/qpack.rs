//! QPACK (RFC 9204), HTTP/3's field compression, without a dynamic table: the static
//! table, literals and Huffman-coded strings (HPACK's code), for both ends.
//!
//! A decoder that advertises a table capacity of 0 (SETTINGS_QPACK_MAX_TABLE_CAPACITY
//! unset, QPACK's default) never has entries to look up: [`Decoder::decode`] reads a
//! field section whose Required Insert Count is 0, and a reference to the dynamic
//! table is the peer's error (QPACK_DECOMPRESSION_FAILED), as is an encoder-stream
//! instruction that would insert into it ([`encoder_stream`]). [`encode`] writes
//! sections that need no table either: a field of the static table is its index, a
//! name there is a reference with a literal value, anything else a literal. Decoding
//! is bounded: the section's size as RFC 9114 §4.2.2 counts it (each field's name and
//! value plus 32) may not pass the limit, checked before each string is copied.

use super::{Code, H3Error};
use crate::hpack::{huffman_decode, integer};

/// RFC 9204 Appendix A: the static table, indices 0 to 98.
pub const STATIC: [(&[u8], &[u8]); 99] = [
    (b":authority", b""),
    (b":path", b"/"),
    (b"age", b"0"),
    (b"content-disposition", b""),
    (b"content-length", b"0"),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"referer", b""),
    (b"set-cookie", b""),
    (b":method", b"CONNECT"),
    (b":method", b"DELETE"),
    (b":method", b"GET"),
    (b":method", b"HEAD"),
    (b":method", b"OPTIONS"),
    (b":method", b"POST"),
    (b":method", b"PUT"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"103"),
    (b":status", b"200"),
    (b":status", b"304"),
    (b":status", b"404"),
    (b":status", b"503"),
    (b"accept", b"*/*"),
    (b"accept", b"application/dns-message"),
    (b"accept-encoding", b"gzip, deflate, br"),
    (b"accept-ranges", b"bytes"),
    (b"access-control-allow-headers", b"cache-control"),
    (b"access-control-allow-headers", b"content-type"),
    (b"access-control-allow-origin", b"*"),
    (b"cache-control", b"max-age=0"),
    (b"cache-control", b"max-age=2592000"),
    (b"cache-control", b"max-age=604800"),
    (b"cache-control", b"no-cache"),
    (b"cache-control", b"no-store"),
    (b"cache-control", b"public, max-age=31536000"),
    (b"content-encoding", b"br"),
    (b"content-encoding", b"gzip"),
    (b"content-type", b"application/dns-message"),
    (b"content-type", b"application/javascript"),
    (b"content-type", b"application/json"),
    (b"content-type", b"application/x-www-form-urlencoded"),
    (b"content-type", b"image/gif"),
    (b"content-type", b"image/jpeg"),
    (b"content-type", b"image/png"),
    (b"content-type", b"text/css"),
    (b"content-type", b"text/html; charset=utf-8"),
    (b"content-type", b"text/plain"),
    (b"content-type", b"text/plain;charset=utf-8"),
    (b"range", b"bytes=0-"),
    (b"strict-transport-security", b"max-age=31536000"),
    (
        b"strict-transport-security",
        b"max-age=31536000; includesubdomains",
    ),
    (
        b"strict-transport-security",
        b"max-age=31536000; includesubdomains; preload",
    ),
    (b"vary", b"accept-encoding"),
    (b"vary", b"origin"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-xss-protection", b"1; mode=block"),
    (b":status", b"100"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"302"),
    (b":status", b"400"),
    (b":status", b"403"),
    (b":status", b"421"),
    (b":status", b"425"),
    (b":status", b"500"),
    (b"accept-language", b""),
    (b"access-control-allow-credentials", b"FALSE"),
    (b"access-control-allow-credentials", b"TRUE"),
    (b"access-control-allow-headers", b"*"),
    (b"access-control-allow-methods", b"get"),
    (b"access-control-allow-methods", b"get, post, options"),
    (b"access-control-allow-methods", b"options"),
    (b"access-control-expose-headers", b"content-length"),
    (b"access-control-request-headers", b"content-type"),
    (b"access-control-request-method", b"get"),
    (b"access-control-request-method", b"post"),
    (b"alt-svc", b"clear"),
    (b"authorization", b""),
    (
        b"content-security-policy",
        b"script-src 'none'; object-src 'none'; base-uri 'none'",
    ),
    (b"early-data", b"1"),
    (b"expect-ct", b""),
    (b"forwarded", b""),
    (b"if-range", b""),
    (b"origin", b""),
    (b"purpose", b"prefetch"),
    (b"server", b""),
    (b"timing-allow-origin", b"*"),
    (b"upgrade-insecure-requests", b"1"),
    (b"user-agent", b""),
    (b"x-forwarded-for", b""),
    (b"x-frame-options", b"deny"),
    (b"x-frame-options", b"sameorigin"),
];

fn failed(why: &'static str) -> H3Error {
    H3Error::new(Code::QPACK_DECOMPRESSION_FAILED, why)
}

/// The per-field overhead RFC 9114 §4.2.2 counts toward a section's size.
const FIELD_OVERHEAD: usize = 32;

/// Decodes field sections for one connection, its table capacity 0. Reuses its
/// buffers: nothing is allocated per field once they have grown.
#[derive(Debug)]
pub struct Decoder {
    /// The most a section may hold (names, values and 32 per field).
    max_section: usize,
    name: Vec<u8>,
    value: Vec<u8>,
}

/// Where a string of a field line lands: the name buffer or the value buffer.
#[derive(Clone, Copy)]
enum Slot {
    Name,
    Value,
}

impl Decoder {
    /// A decoder refusing sections over `max_section` bytes (as counted by RFC 9114
    /// §4.2.2), what this end advertises as SETTINGS_MAX_FIELD_SECTION_SIZE.
    pub fn new(max_section: usize) -> Decoder {
        Decoder {
            max_section,
            name: Vec::new(),
            value: Vec::new(),
        }
    }

    /// Decodes one field section (a HEADERS frame's payload), handing each field to
    /// `on` in order.
    pub fn decode(
        &mut self,
        block: &[u8],
        on: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<(), H3Error> {
        let mut at = 0;
        let bad = |_| failed("a truncated or oversized integer");
        // The prefix: Required Insert Count, then the sign and Delta Base.
        let ric = integer(block, &mut at, 8).map_err(bad)?;
        if ric != 0 {
            return Err(failed(
                "a section that needs the dynamic table, of capacity 0",
            ));
        }
        if at >= block.len() {
            return Err(failed("a section without its base"));
        }
        let _delta_base = integer(block, &mut at, 7).map_err(bad)?;
        let mut size = 0usize;
        while at < block.len() {
            let b = block[at];
            if b & 0x80 != 0 {
                // Indexed field line: T (static) and a 6-bit index.
                if b & 0x40 == 0 {
                    return Err(failed("a reference to the dynamic table"));
                }
                let i = integer(block, &mut at, 6).map_err(bad)?;
                let (n, v) = *STATIC.get(i).ok_or(failed("a static index past 98"))?;
                size = self.count(size, n.len(), v.len())?;
                on(n, v);
            } else if b & 0x40 != 0 {
                // Literal with name reference: N, T, a 4-bit index, then the value.
                if b & 0x10 == 0 {
                    return Err(failed("a name from the dynamic table"));
                }
                let i = integer(block, &mut at, 4).map_err(bad)?;
                let (n, _) = *STATIC.get(i).ok_or(failed("a static index past 98"))?;
                self.string(block, &mut at, 7, Slot::Value, self.room(size, n.len()))?;
                size = self.count(size, n.len(), self.value.len())?;
                on(n, &self.value);
            } else if b & 0x20 != 0 {
                // Literal with literal name: N, H and a 3-bit length, then the value.
                self.string(block, &mut at, 3, Slot::Name, self.room(size, 0))?;
                let room = self.room(size, self.name.len());
                self.string(block, &mut at, 7, Slot::Value, room)?;
                size = self.count(size, self.name.len(), self.value.len())?;
                on(&self.name, &self.value);
            } else {
                // 0001: indexed post-base; 0000: literal with post-base name reference.
                return Err(failed("a post-base reference to the dynamic table"));
            }
        }
        Ok(())
    }

    /// What is left of the limit for a string, with `taken` already in the field.
    fn room(&self, size: usize, taken: usize) -> usize {
        self.max_section
            .saturating_sub(size + FIELD_OVERHEAD + taken)
    }

    /// The section's size with one more field, refused past the limit.
    fn count(&self, size: usize, name: usize, value: usize) -> Result<usize, H3Error> {
        let size = size + name + value + FIELD_OVERHEAD;
        if size > self.max_section {
            return Err(H3Error::new(
                Code::EXCESSIVE_LOAD,
                "a field section larger than the limit",
            ));
        }
        Ok(size)
    }

    /// Reads a string whose H bit is the bit above an `n`-bit length prefix into the
    /// slot, refusing one longer than `room` before copying it.
    fn string(
        &mut self,
        block: &[u8],
        at: &mut usize,
        n: u32,
        slot: Slot,
        room: usize,
    ) -> Result<(), H3Error> {
        let first = *block.get(*at).ok_or(failed("a truncated string"))?;
        let huffman = first & (1 << n) != 0;
        let len = integer(block, at, n).map_err(|_| failed("a truncated or oversized length"))?;
        let raw = block
            .get(*at..at.saturating_add(len))
            .ok_or(failed("a string longer than its section"))?;
        *at += len;
        let over = || {
            H3Error::new(
                Code::EXCESSIVE_LOAD,
                "a field section larger than the limit",
            )
        };
        // A Huffman string decodes to at most 8/5 of its length.
        if raw.len() > room && (!huffman || raw.len() * 5 / 8 > room) {
            return Err(over());
        }
        let out = match slot {
            Slot::Name => &mut self.name,
            Slot::Value => &mut self.value,
        };
        out.clear();
        if huffman {
            huffman_decode(raw, out).map_err(|_| failed("a bad Huffman string"))?;
            if out.len() > room {
                return Err(over());
            }
        } else {
            out.extend_from_slice(raw);
        }
        Ok(())
    }
}

/// Checks what a peer's encoder stream sends a decoder of capacity 0: a capacity of 0
/// may be set (and is all there is); anything that would insert is the peer's error
/// (QPACK_ENCODER_STREAM_ERROR).
pub fn encoder_stream(bytes: &[u8]) -> Result<(), H3Error> {
    let mut at = 0;
    while at < bytes.len() {
        let b = bytes[at];
        if b & 0xe0 != 0x20 {
            return Err(H3Error::new(
                Code::QPACK_ENCODER_STREAM_ERROR,
                "an insertion into a dynamic table of capacity 0",
            ));
        }
        match integer(bytes, &mut at, 5) {
            Ok(0) => {}
            // A capacity cut short may continue in the stream's next bytes: the
            // caller keeps what is unread; here a whole one above 0 is the error.
            Ok(_) => {
                return Err(H3Error::new(
                    Code::QPACK_ENCODER_STREAM_ERROR,
                    "a table capacity above the 0 advertised",
                ))
            }
            Err(_) => return Ok(()),
        }
    }
    Ok(())
}

/// Writes a field section of `fields` that needs no dynamic table: the prefix (both
/// counts 0), then each field as its static index, a static name with a literal
/// value, or a literal name and value (never Huffman-coded: no encoding work).
pub fn encode<'a>(out: &mut Vec<u8>, fields: impl IntoIterator<Item = (&'a [u8], &'a [u8])>) {
    out.extend_from_slice(&[0, 0]);
    for (name, value) in fields {
        let mut by_name = None;
        let mut exact = None;
        for (i, (n, v)) in STATIC.iter().enumerate() {
            if *n == name {
                by_name.get_or_insert(i);
                if *v == value {
                    exact = Some(i);
                    break;
                }
            }
        }
        match (exact, by_name) {
            (Some(i), _) => crate::hpack::integer_encode(out, 0xc0, 6, i),
            (None, Some(i)) => {
                crate::hpack::integer_encode(out, 0x50, 4, i);
                crate::hpack::integer_encode(out, 0, 7, value.len());
                out.extend_from_slice(value);
            }
            (None, None) => {
                crate::hpack::integer_encode(out, 0x20, 3, name.len());
                out.extend_from_slice(name);
                crate::hpack::integer_encode(out, 0, 7, value.len());
                out.extend_from_slice(value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(d: &mut Decoder, block: &[u8]) -> Result<Vec<(String, String)>, H3Error> {
        let mut got = Vec::new();
        d.decode(block, &mut |n, v| {
            got.push((
                String::from_utf8_lossy(n).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            ))
        })?;
        Ok(got)
    }

    #[test]
    fn rfc_9204_b1_a_literal_with_a_static_name_decodes() {
        // RFC 9204 Appendix B.1: ":path: /index.html", the name from the static table.
        let block = [
            0x00, 0x00, 0x51, 0x0b, 0x2f, 0x69, 0x6e, 0x64, 0x65, 0x78, 0x2e, 0x68, 0x74, 0x6d,
            0x6c,
        ];
        let got = fields(&mut Decoder::new(4096), &block).unwrap();
        assert_eq!(got, [(":path".into(), "/index.html".into())]);
    }

    #[test]
    fn what_is_encoded_decodes_to_the_same_fields() {
        let list: Vec<(&[u8], &[u8])> = vec![
            (b":method", b"GET"),
            (b":scheme", b"https"),
            (b":authority", b"example.com:8443"),
            (b":path", b"/items/7?x=1"),
            (b"user-agent", b"stampede"),
            (b"x-request-id", b"42"),
            (b"content-type", b"application/json"),
        ];
        let mut block = Vec::new();
        encode(&mut block, list.iter().copied());
        // GET, https and the JSON content type are one byte each.
        assert_eq!(&block[..4], &[0x00, 0x00, 0xc0 | 17, 0xc0 | 23]);
        let got = fields(&mut Decoder::new(4096), &block).unwrap();
        let want: Vec<(String, String)> = (list.iter())
            .map(|(n, v)| {
                (
                    String::from_utf8_lossy(n).into_owned(),
                    String::from_utf8_lossy(v).into_owned(),
                )
            })
            .collect();
        assert_eq!(got, want);
    }

    /// A section written by an independent encoder (ls-qpack, through pylsqpack 1.0.0,
    /// its table capacity 0): static indices, static names with Huffman-coded values,
    /// and Huffman-coded literal names.
    #[test]
    fn a_section_from_another_encoder_decodes() {
        let hex = "0000d4d7508a089d5c0b8170dc79a699519563b85824e34b043d35d05498f523fc426c28e9803fee5f508942474d6590ac0170ff2df2b26c190b881c64582265690b2f5f0e8c497ca582f72d495909b0a3a7";
        let block: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        let got = fields(&mut Decoder::new(4096), &block).unwrap();
        let want = [
            (":method", "POST"),
            (":scheme", "https"),
            (":authority", "127.0.0.1:8443"),
            (":path", "/v1/chat/completions?stream=1"),
            ("content-type", "application/json"),
            ("user-agent", "stampede/0.1"),
            ("x-trace", "abc-123-def"),
            ("accept", "text/event-stream"),
        ];
        let want: Vec<(String, String)> = (want.iter())
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn huffman_strings_decode() {
        // "www.example.com" Huffman-coded (RFC 7541 C.4.1) as a literal value of
        // :authority (static index 0): 0101 0000, H=1 and length 12.
        let mut block = vec![0x00, 0x00, 0x50, 0x8c];
        block.extend_from_slice(&[
            0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff,
        ]);
        let got = fields(&mut Decoder::new(4096), &block).unwrap();
        assert_eq!(got, [(":authority".into(), "www.example.com".into())]);
    }

    #[test]
    fn dynamic_references_and_bombs_are_errors_not_memory() {
        let mut d = Decoder::new(256);
        let code = |d: &mut Decoder, b: &[u8]| fields(d, b).unwrap_err().code;
        // A Required Insert Count above 0.
        assert_eq!(
            code(&mut d, &[0x02, 0x00, 0x80]),
            Code::QPACK_DECOMPRESSION_FAILED
        );
        // Indexed from the dynamic table, post-base forms, a dynamic name.
        for b in [0x80u8, 0x10, 0x00, 0x40] {
            assert_eq!(
                code(&mut d, &[0x00, 0x00, b]),
                Code::QPACK_DECOMPRESSION_FAILED
            );
        }
        // A static index past the table, a string past the section's end.
        assert_eq!(
            code(&mut d, &[0x00, 0x00, 0xff, 0x30]),
            Code::QPACK_DECOMPRESSION_FAILED
        );
        assert_eq!(
            code(&mut d, &[0x00, 0x00, 0x51, 0x05, b'/']),
            Code::QPACK_DECOMPRESSION_FAILED
        );
        // A value announcing a gigabyte: refused from its length, nothing copied.
        let mut huge = vec![0x00, 0x00, 0x51];
        crate::hpack::integer_encode(&mut huge, 0, 7, 1 << 30);
        assert_eq!(code(&mut d, &huge), Code::QPACK_DECOMPRESSION_FAILED);
        // Many small fields that together pass the limit.
        let mut many = vec![0x00, 0x00];
        many.extend(std::iter::repeat_n(0xc0 | 17, 20));
        assert_eq!(code(&mut d, &many), Code::EXCESSIVE_LOAD);
        // One value over the limit, present in full.
        let mut big = Vec::new();
        encode(&mut big, [(&b"x-big"[..], &[b'a'; 300][..])]);
        assert_eq!(code(&mut d, &big), Code::EXCESSIVE_LOAD);
        assert!(d.value.capacity() < 300, "{}", d.value.capacity());
        // A section with no base.
        assert_eq!(code(&mut d, &[0x00]), Code::QPACK_DECOMPRESSION_FAILED);
    }

    #[test]
    fn the_encoder_stream_may_only_set_a_capacity_of_0() {
        assert_eq!(encoder_stream(&[0x20, 0x20]), Ok(()));
        assert_eq!(
            encoder_stream(&[0x3f, 0xe1, 0x1f]).unwrap_err().code,
            Code::QPACK_ENCODER_STREAM_ERROR
        );
        // Insert with name reference, with literal name, duplicate.
        for b in [0xc0u8, 0x40, 0x00] {
            assert_eq!(
                encoder_stream(&[b]).unwrap_err().code,
                Code::QPACK_ENCODER_STREAM_ERROR
            );
        }
    }
}
