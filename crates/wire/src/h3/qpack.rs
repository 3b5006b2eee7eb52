//! QPACK (RFC 9204), HTTP/3's field compression, for both ends: the static table,
//! literals and Huffman-coded strings (HPACK's code), and on the decoding side the
//! dynamic table the peer's encoder fills.
//!
//! [`Decoder`] keeps the table up to the capacity this end advertised (0, QPACK's
//! default, unless asked: then the encoder stream may only set a capacity of 0, and a
//! reference to the table is the peer's error), applies the encoder stream's
//! instructions as their bytes come, decodes each field section or says it is blocked
//! until the insertions it needs arrive, and writes the decoder stream's
//! acknowledgments and increments. [`encode`] writes sections that need no table: a
//! field of the static table is its index, a name there is a reference with a literal
//! value, anything else a literal. Decoding is bounded: a section's size as RFC 9114
//! §4.2.2 counts it (each field's name and value plus 32) may not pass its limit, a
//! table entry may not pass the table's capacity, both checked from a string's length
//! before it is copied or waited for.

use super::{Code, H3Error};
use crate::hpack::huffman_decode;

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

fn enc_error(why: &'static str) -> H3Error {
    H3Error::new(Code::QPACK_ENCODER_STREAM_ERROR, why)
}

/// The per-field overhead RFC 9114 §4.2.2 counts toward a section's size, and the
/// per-entry overhead RFC 9204 §3.2.1 counts toward the table's.
const FIELD_OVERHEAD: usize = 32;

/// Reads an integer with an `n`-bit prefix at `buf[*at]`: `None` when `buf` ends
/// inside it (`at` is then left as it was), an error past 2^62.
fn int(buf: &[u8], at: &mut usize, n: u32) -> Result<Option<u64>, ()> {
    let mut i = *at;
    let Some(first) = buf.get(i) else {
        return Ok(None);
    };
    let max = (1u64 << n) - 1;
    let mut v = u64::from(*first) & max;
    i += 1;
    if v == max {
        let mut shift = 0u32;
        loop {
            let Some(b) = buf.get(i) else {
                return Ok(None);
            };
            i += 1;
            if shift > 56 {
                return Err(());
            }
            v = v.checked_add(u64::from(b & 0x7f) << shift).ok_or(())?;
            shift += 7;
            if b & 0x80 == 0 {
                break;
            }
        }
    }
    *at = i;
    Ok(Some(v))
}

/// Reads a string with its H bit above an `n`-bit length: the raw bytes and whether
/// they are Huffman-coded; `None` when `buf` ends inside it. A string that must
/// decode to more than `limit` bytes is refused before its bytes are waited for.
fn raw_string<'a>(
    buf: &'a [u8],
    at: &mut usize,
    n: u32,
    limit: usize,
    too_long: H3Error,
) -> Result<Option<(&'a [u8], bool)>, H3Error> {
    let mut i = *at;
    let Some(first) = buf.get(i) else {
        return Ok(None);
    };
    let huffman = first & (1 << n) != 0;
    let Some(len) = int(buf, &mut i, n).map_err(|_| too_long.clone())? else {
        return Ok(None);
    };
    // Huffman codes are 5 to 30 bits long: a string decodes to at least 8/30 of its
    // length in bytes. One that must come out longer than `limit` is refused here;
    // the decoded length is checked again once known.
    let least = if huffman {
        len.saturating_mul(8) / 30
    } else {
        len
    };
    if least > limit as u64 {
        return Err(too_long);
    }
    let len = len as usize;
    let Some(raw) = buf.get(i..i + len) else {
        return Ok(None);
    };
    *at = i + len;
    Ok(Some((raw, huffman)))
}

/// `raw` as the string it codes, into `out`, refused past `limit`.
fn string_into(
    raw: &[u8],
    huffman: bool,
    out: &mut Vec<u8>,
    limit: usize,
    too_long: H3Error,
) -> Result<(), H3Error> {
    out.clear();
    if huffman {
        // A bad code in a field section fails its decompression (RFC 9204 §2.2.3), the
        // connection's error; on the encoder stream it is that stream's error.
        let bad = match too_long.code {
            Code::EXCESSIVE_LOAD => Code::QPACK_DECOMPRESSION_FAILED,
            code => code,
        };
        huffman_decode(raw, out).map_err(|_| H3Error::new(bad, "a bad Huffman string"))?;
    } else {
        out.extend_from_slice(raw);
    }
    if out.len() > limit {
        return Err(too_long);
    }
    Ok(())
}

/// A literal string as it reads: the section's own bytes when it is not Huffman
/// coded (no copy), else decoded into `out`; longer than `limit`, `too_long`.
fn plain_or<'a>(
    raw: &'a [u8],
    huffman: bool,
    out: &'a mut Vec<u8>,
    limit: usize,
    too_long: &H3Error,
) -> Result<&'a [u8], H3Error> {
    if !huffman {
        return if raw.len() > limit {
            Err(too_long.clone())
        } else {
            Ok(raw)
        };
    }
    string_into(raw, true, out, limit, too_long.clone())?;
    Ok(out)
}

/// Reads the instructions a peer's decoder sends to this end's encoder (RFC 9204
/// §4.4), for an encoder that never inserts into the dynamic table (as [`encode`]):
/// Stream Cancellations are taken; an Insert Count Increment (zero, or any, since no
/// insertion was ever sent) and a Section Acknowledgment (no section ever needed the
/// table) are QPACK_DECODER_STREAM_ERROR. An instruction cut between two reads waits
/// for the rest, within a few bytes.
#[derive(Debug, Default)]
pub struct DecoderInstructions {
    pending: Vec<u8>,
}

impl DecoderInstructions {
    /// Takes the next bytes of the peer's decoder stream.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<(), H3Error> {
        let bad = |why| H3Error::new(Code::QPACK_DECODER_STREAM_ERROR, why);
        self.pending.extend_from_slice(bytes);
        let buf = std::mem::take(&mut self.pending);
        let mut i = 0;
        while let Some(&b) = buf.get(i) {
            let mut at = i;
            let (prefix, what) = match b {
                b if b & 0x80 != 0 => (7, 0),
                b if b & 0x40 != 0 => (6, 1),
                _ => (6, 2),
            };
            let Some(v) = int(&buf, &mut at, prefix).map_err(|_| bad("an oversized integer"))?
            else {
                break;
            };
            match (what, v) {
                (0, _) => {
                    return Err(bad(
                        "a Section Acknowledgment, though no section used the dynamic table",
                    ))
                }
                (2, 0) => return Err(bad("an Insert Count Increment of zero")),
                (2, _) => {
                    return Err(bad(
                        "an Insert Count Increment past the insertions sent (none)",
                    ))
                }
                _ => {}
            }
            i = at;
        }
        if buf.len() - i > 16 {
            return Err(bad("an instruction longer than any integer"));
        }
        self.pending = buf[i..].to_vec();
        Ok(())
    }
}

/// A dynamic table's entry: its name and value.
type Field = (Box<[u8]>, Box<[u8]>);

/// What decoding a field section came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoded {
    /// Its fields were handed over. `required`: the insertions it used; above 0, the
    /// decoder stream owes the encoder a Section Acknowledgment ([`Decoder::ack`]).
    Fields { required: u64 },
    /// It needs insertions the encoder stream has not brought yet: decode it again
    /// once [`Decoder::inserted`] reaches `needs`. Nothing was handed over.
    Blocked { needs: u64 },
}

/// Decodes field sections for one connection: the dynamic table the peer's encoder
/// fills, up to the capacity this end advertised (0: none; QPACK's default), kept in
/// step by the encoder stream's instructions ([`Decoder::encoder_stream`]). Reuses its
/// buffers: nothing is allocated per field once they have grown.
#[derive(Debug)]
pub struct Decoder {
    /// The most a section may hold (names, values and 32 per field).
    max_section: usize,
    /// The capacity advertised (SETTINGS_QPACK_MAX_TABLE_CAPACITY), and the one the
    /// encoder set within it.
    max_capacity: usize,
    capacity: usize,
    /// The table, oldest first; `dropped` entries were evicted before it.
    table: std::collections::VecDeque<Field>,
    size: usize,
    dropped: u64,
    /// Insertions the encoder has told the decoder stream's peer about (by section
    /// acknowledgments and increments).
    known: u64,
    /// Encoder-stream bytes that end inside an instruction.
    pending: Vec<u8>,
    name: Vec<u8>,
    value: Vec<u8>,
    /// The last section decoded that used no dynamic table, and its fields (names and
    /// values one after another, and their lengths): such a section is a function of
    /// its bytes alone, so the same bytes again (a server answering alike) are handed
    /// over from here without decoding.
    last: Vec<u8>,
    last_fields: Vec<u8>,
    last_lengths: Vec<(u32, u32)>,
}

/// A field line's name or whole field, found in a table.
#[derive(Clone, Copy)]
enum Entry {
    Static(usize),
    Dynamic(u64),
}

impl Decoder {
    /// A decoder of table capacity 0 refusing sections over `max_section` bytes (as
    /// RFC 9114 §4.2.2 counts them), what this end advertises as
    /// SETTINGS_MAX_FIELD_SECTION_SIZE.
    pub fn new(max_section: usize) -> Decoder {
        Decoder::with_table(max_section, 0)
    }

    /// A decoder whose dynamic table may hold up to `capacity` bytes (what this end
    /// advertises as SETTINGS_QPACK_MAX_TABLE_CAPACITY).
    pub fn with_table(max_section: usize, capacity: usize) -> Decoder {
        Decoder {
            max_section,
            max_capacity: capacity,
            capacity: 0,
            table: std::collections::VecDeque::new(),
            size: 0,
            dropped: 0,
            known: 0,
            pending: Vec::new(),
            name: Vec::new(),
            value: Vec::new(),
            last: Vec::new(),
            last_fields: Vec::new(),
            last_lengths: Vec::new(),
        }
    }

    /// Insertions received so far (the table's Insert Count).
    pub fn inserted(&self) -> u64 {
        self.dropped + self.table.len() as u64
    }

    /// The entry at absolute index `i`, if the table holds it.
    fn entry(&self, i: u64) -> Option<&Field> {
        self.table.get(i.checked_sub(self.dropped)? as usize)
    }

    /// Evicts the oldest entries until `room` more bytes fit within `cap`.
    fn evict(&mut self, cap: usize, room: usize) -> bool {
        while self.size + room > cap {
            let Some((n, v)) = self.table.pop_front() else {
                return false;
            };
            self.size -= n.len() + v.len() + FIELD_OVERHEAD;
            self.dropped += 1;
        }
        true
    }

    fn insert(&mut self, name: &[u8], value: &[u8]) -> Result<(), H3Error> {
        let need = name.len() + value.len() + FIELD_OVERHEAD;
        if need > self.capacity || !self.evict(self.capacity, need) {
            return Err(enc_error("an entry larger than the table's capacity"));
        }
        self.table.push_back((name.into(), value.into()));
        self.size += need;
        Ok(())
    }

    /// Takes the peer's encoder-stream bytes as they come: table capacity changes
    /// (within the one advertised), insertions and duplicates. An instruction cut
    /// short waits for the rest, held in at most the capacity's worth of bytes.
    pub fn encoder_stream(&mut self, bytes: &[u8]) -> Result<(), H3Error> {
        let mut buf = std::mem::take(&mut self.pending);
        buf.extend_from_slice(bytes);
        let mut at = 0;
        let r = loop {
            match self.instruction(&buf, &mut at) {
                Ok(true) => {}
                Ok(false) => break Ok(()),
                Err(e) => break Err(e),
            }
        };
        buf.drain(..at);
        // A Huffman-coded entry of the whole capacity takes up to 30/8 of it.
        if buf.len() > self.max_capacity * 4 + 64 {
            return Err(enc_error("an instruction larger than the table"));
        }
        self.pending = buf;
        r
    }

    /// Applies the instruction at `buf[*at]`; `false` when `buf` ends inside it.
    fn instruction(&mut self, buf: &[u8], at: &mut usize) -> Result<bool, H3Error> {
        let Some(&b) = buf.get(*at) else {
            return Ok(false);
        };
        let mut i = *at;
        let big = || enc_error("an oversized integer");
        let long = enc_error("an entry larger than the table's capacity");
        let cap = self.capacity;
        if b & 0x80 != 0 {
            // Insert with name reference: T and a 6-bit index, then the value.
            let Some(idx) = int(buf, &mut i, 6).map_err(|_| big())? else {
                return Ok(false);
            };
            let Some((raw, h)) = raw_string(buf, &mut i, 7, cap, long.clone())? else {
                return Ok(false);
            };
            let name: Box<[u8]> = if b & 0x40 != 0 {
                STATIC
                    .get(idx as usize)
                    .ok_or(enc_error("a static index past 98"))?
                    .0
                    .into()
            } else {
                let abs = self
                    .inserted()
                    .checked_sub(idx + 1)
                    .ok_or(enc_error("a relative index past the table"))?;
                self.entry(abs)
                    .ok_or(enc_error("a name evicted or never inserted"))?
                    .0
                    .clone()
            };
            let mut value = std::mem::take(&mut self.value);
            string_into(raw, h, &mut value, cap, long)?;
            let r = self.insert(&name, &value);
            self.value = value;
            r?;
        } else if b & 0x40 != 0 {
            // Insert with literal name: H and a 5-bit length, then the value.
            let Some((raw_n, hn)) = raw_string(buf, &mut i, 5, cap, long.clone())? else {
                return Ok(false);
            };
            let Some((raw_v, hv)) = raw_string(buf, &mut i, 7, cap, long.clone())? else {
                return Ok(false);
            };
            let (mut name, mut value) = (
                std::mem::take(&mut self.name),
                std::mem::take(&mut self.value),
            );
            let r = string_into(raw_n, hn, &mut name, cap, long.clone())
                .and_then(|_| string_into(raw_v, hv, &mut value, cap, long))
                .and_then(|_| self.insert(&name, &value));
            (self.name, self.value) = (name, value);
            r?;
        } else if b & 0x20 != 0 {
            // Set Dynamic Table Capacity.
            let Some(c) = int(buf, &mut i, 5).map_err(|_| big())? else {
                return Ok(false);
            };
            if c > self.max_capacity as u64 {
                return Err(enc_error("a table capacity above the one advertised"));
            }
            self.capacity = c as usize;
            self.evict(self.capacity, 0);
        } else {
            // Duplicate: a 5-bit relative index.
            let Some(idx) = int(buf, &mut i, 5).map_err(|_| big())? else {
                return Ok(false);
            };
            let abs = self
                .inserted()
                .checked_sub(idx + 1)
                .ok_or(enc_error("a relative index past the table"))?;
            let (n, v) = self
                .entry(abs)
                .ok_or(enc_error("an entry evicted or never inserted"))?
                .clone();
            self.insert(&n, &v)?;
        }
        *at = i;
        Ok(true)
    }

    /// Writes a Section Acknowledgment for `stream` to the decoder stream (after a
    /// section that [`Decoded::Fields`] said to acknowledge).
    pub fn ack(&mut self, out: &mut Vec<u8>, stream: u64, required: u64) {
        crate::hpack::integer_encode(out, 0x80, 7, stream as usize);
        self.known = self.known.max(required);
    }

    /// Writes an Insert Count Increment for insertions the encoder has not heard of
    /// (none: nothing), so that it may reference them without blocking.
    pub fn increment(&mut self, out: &mut Vec<u8>) {
        let n = self.inserted() - self.known;
        if n > 0 {
            crate::hpack::integer_encode(out, 0x00, 6, n as usize);
            self.known = self.inserted();
        }
    }

    /// The Required Insert Count a section's prefix encodes (RFC 9204 §4.5.1.1).
    fn required(&self, encoded: u64) -> Result<u64, H3Error> {
        if encoded == 0 {
            return Ok(0);
        }
        let max_entries = (self.max_capacity / 32) as u64;
        let full = 2 * max_entries;
        if encoded > full {
            return Err(failed("a Required Insert Count past the table's range"));
        }
        let max_value = self.inserted() + max_entries;
        let mut req = max_value / full * full + encoded - 1;
        if req > max_value {
            if req <= full {
                return Err(failed("a Required Insert Count past the table's range"));
            }
            req -= full;
        }
        if req == 0 {
            return Err(failed("a Required Insert Count of 0 encoded as another"));
        }
        Ok(req)
    }

    /// Decodes one field section (a HEADERS frame's payload), handing each field to
    /// `on` in order, unless it must wait for insertions.
    pub fn decode(
        &mut self,
        block: &[u8],
        on: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<Decoded, H3Error> {
        if !self.last.is_empty() && *block == *self.last {
            let mut at = 0;
            for &(n, v) in &self.last_lengths {
                let (n, v) = (n as usize, v as usize);
                let (name, value) = self.last_fields[at..at + n + v].split_at(n);
                on(name, value);
                at += n + v;
            }
            return Ok(Decoded::Fields { required: 0 });
        }
        let mut at = 0;
        let bad = |_| failed("a truncated or oversized integer");
        let cut = || failed("a truncated section prefix");
        // The prefix: Required Insert Count, then the sign and Delta Base.
        let encoded = int(block, &mut at, 8).map_err(bad)?.ok_or_else(cut)?;
        let required = self.required(encoded)?;
        let sign = block.get(at).ok_or_else(cut)? & 0x80 != 0;
        let delta = int(block, &mut at, 7).map_err(bad)?.ok_or_else(cut)?;
        let base = if sign {
            required
                .checked_sub(delta + 1)
                .ok_or(failed("a negative base"))?
        } else {
            required
                .checked_add(delta)
                .ok_or(failed("a base past 2^64"))?
        };
        if required > self.inserted() {
            return Ok(Decoded::Blocked { needs: required });
        }
        // A dynamic index must fall below the Required Insert Count and be held.
        let dynamic = |abs: Option<u64>| -> Result<Entry, H3Error> {
            match abs {
                Some(a) if a < required => Ok(Entry::Dynamic(a)),
                _ => Err(failed("a dynamic reference outside the section's range")),
            }
        };
        let max_section = self.max_section;
        let dropped = self.dropped;
        let Decoder {
            table,
            name: name_buf,
            value: value_buf,
            last,
            last_fields,
            last_lengths,
            ..
        } = self;
        // Only a section of the static table and literals is kept (see `last`).
        let keep = required == 0;
        last.clear();
        if keep {
            last_fields.clear();
            last_lengths.clear();
        }
        let mut size = 0usize;
        while at < block.len() {
            let b = block[at];
            let truncated = || failed("a truncated field line");
            // The field's name (and value, if indexed), from a table or as a literal.
            let (entry, whole) = if b & 0x80 != 0 {
                // Indexed field line: T and a 6-bit index.
                let i = int(block, &mut at, 6).map_err(bad)?.ok_or_else(truncated)?;
                let e = if b & 0x40 != 0 {
                    Entry::Static(i as usize)
                } else {
                    dynamic(base.checked_sub(i + 1))?
                };
                (Some(e), true)
            } else if b & 0xf0 == 0x10 {
                // Indexed field line with post-base index.
                let i = int(block, &mut at, 4).map_err(bad)?.ok_or_else(truncated)?;
                (Some(dynamic(base.checked_add(i))?), true)
            } else if b & 0x40 != 0 {
                // Literal with name reference: N, T and a 4-bit index.
                let i = int(block, &mut at, 4).map_err(bad)?.ok_or_else(truncated)?;
                let e = if b & 0x10 != 0 {
                    Entry::Static(i as usize)
                } else {
                    dynamic(base.checked_sub(i + 1))?
                };
                (Some(e), false)
            } else if b & 0x20 != 0 {
                // Literal with literal name: N, H and a 3-bit length.
                (None, false)
            } else {
                // Literal with post-base name reference: N and a 3-bit index.
                let i = int(block, &mut at, 3).map_err(bad)?.ok_or_else(truncated)?;
                (Some(dynamic(base.checked_add(i))?), false)
            };
            let over = H3Error::new(
                Code::EXCESSIVE_LOAD,
                "a field section larger than the limit",
            );
            let room = |taken: usize| max_section.saturating_sub(size + FIELD_OVERHEAD + taken);
            let (name, value): (&[u8], &[u8]) = match entry {
                Some(e) => {
                    let (n, v): (&[u8], &[u8]) = match e {
                        Entry::Static(i) => {
                            let (n, v) = STATIC.get(i).ok_or(failed("a static index past 98"))?;
                            (n, v)
                        }
                        Entry::Dynamic(a) => {
                            let held = a.checked_sub(dropped).and_then(|i| table.get(i as usize));
                            let (n, v) = held.ok_or(failed("a reference to an evicted entry"))?;
                            (n, v)
                        }
                    };
                    if whole {
                        (n, v)
                    } else {
                        let (raw, h) = raw_string(block, &mut at, 7, room(n.len()), over.clone())?
                            .ok_or_else(|| failed("a string longer than its section"))?;
                        (n, plain_or(raw, h, value_buf, room(n.len()), &over)?)
                    }
                }
                None => {
                    let (raw, h) = raw_string(block, &mut at, 3, room(0), over.clone())?
                        .ok_or_else(|| failed("a string longer than its section"))?;
                    let name = plain_or(raw, h, name_buf, room(0), &over)?;
                    let r = room(name.len());
                    let (raw, h) = raw_string(block, &mut at, 7, r, over.clone())?
                        .ok_or_else(|| failed("a string longer than its section"))?;
                    (name, plain_or(raw, h, value_buf, r, &over)?)
                }
            };
            size += name.len() + value.len() + FIELD_OVERHEAD;
            if size > max_section {
                return Err(over);
            }
            if keep {
                last_fields.extend_from_slice(name);
                last_fields.extend_from_slice(value);
                // Within the section's limit, far below 2^32.
                last_lengths.push((name.len() as u32, value.len() as u32));
            }
            on(name, value);
        }
        if keep {
            last.extend_from_slice(block);
        }
        Ok(Decoded::Fields { required })
    }
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
mod tests;
