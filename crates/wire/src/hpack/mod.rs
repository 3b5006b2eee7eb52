//! HPACK (RFC 7541): integers, the static and dynamic tables, Huffman-coded strings,
//! and the encoding both ends of stampede use.
//!
//! [`Decoder`] decodes every header block (its dynamic table must stay in step with the
//! peer's encoder) and hands names and values to a callback as slices; nothing is
//! allocated per header except entries added to the dynamic table. Huffman strings are
//! decoded through a table built once per process that consumes four bits per step.
//! [`Encoder`] writes response blocks: a field the connection has sent before is one
//! index, others are literals (never Huffman-coded: a few bytes more on the wire, no
//! encoding work).

mod huffman;

use std::collections::VecDeque;

pub use huffman::huffman_decode;

/// Why a header block could not be decoded (a connection error in HTTP/2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HpackError(pub &'static str);

impl std::fmt::Display for HpackError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

/// RFC 7541 Appendix A: the static table, indices 1 to 61.
pub const STATIC: [(&[u8], &[u8]); 61] = [
    (b":authority", b""),
    (b":method", b"GET"),
    (b":method", b"POST"),
    (b":path", b"/"),
    (b":path", b"/index.html"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"200"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"304"),
    (b":status", b"400"),
    (b":status", b"404"),
    (b":status", b"500"),
    (b"accept-charset", b""),
    (b"accept-encoding", b"gzip, deflate"),
    (b"accept-language", b""),
    (b"accept-ranges", b""),
    (b"accept", b""),
    (b"access-control-allow-origin", b""),
    (b"age", b""),
    (b"allow", b""),
    (b"authorization", b""),
    (b"cache-control", b""),
    (b"content-disposition", b""),
    (b"content-encoding", b""),
    (b"content-language", b""),
    (b"content-length", b""),
    (b"content-location", b""),
    (b"content-range", b""),
    (b"content-type", b""),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"expect", b""),
    (b"expires", b""),
    (b"from", b""),
    (b"host", b""),
    (b"if-match", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"if-range", b""),
    (b"if-unmodified-since", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"max-forwards", b""),
    (b"proxy-authenticate", b""),
    (b"proxy-authorization", b""),
    (b"range", b""),
    (b"referer", b""),
    (b"refresh", b""),
    (b"retry-after", b""),
    (b"server", b""),
    (b"set-cookie", b""),
    (b"strict-transport-security", b""),
    (b"transfer-encoding", b""),
    (b"user-agent", b""),
    (b"vary", b""),
    (b"via", b""),
    (b"www-authenticate", b""),
];

/// Decodes an integer with an `n`-bit prefix at `buf[*at]`, advancing `at`.
pub(crate) fn integer(buf: &[u8], at: &mut usize, n: u32) -> Result<usize, HpackError> {
    let max = (1usize << n) - 1;
    let first = *buf.get(*at).ok_or(HpackError("truncated integer"))? as usize & max;
    *at += 1;
    if first < max {
        return Ok(first);
    }
    let mut v = max;
    let mut shift = 0;
    loop {
        let b = *buf.get(*at).ok_or(HpackError("truncated integer"))? as usize;
        *at += 1;
        if shift > 28 {
            return Err(HpackError("integer too large"));
        }
        v += (b & 0x7f) << shift;
        shift += 7;
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
}

/// Writes an integer with an `n`-bit prefix, the prefix's other bits set to `flags`.
pub fn integer_encode(out: &mut Vec<u8>, flags: u8, n: u32, mut v: usize) {
    let max = (1usize << n) - 1;
    if v < max {
        out.push(flags | v as u8);
        return;
    }
    out.push(flags | max as u8);
    v -= max;
    while v >= 128 {
        out.push((v % 128) as u8 | 0x80);
        v /= 128;
    }
    out.push(v as u8);
}

/// Writes a string literal, not Huffman-coded.
fn string_encode(out: &mut Vec<u8>, s: &[u8]) {
    integer_encode(out, 0, 7, s.len());
    out.extend_from_slice(s);
}

/// Writes a header as "literal without indexing, new name", strings not Huffman-coded.
pub fn literal(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.push(0x00);
    string_encode(out, name);
    string_encode(out, value);
}

/// The encoder of one connection's header blocks.
///
/// It mirrors the dynamic table the peer's decoder keeps: a field already in it is sent
/// as its index, a new one (when asked and it fits) is inserted with "incremental
/// indexing", anything else is a literal without indexing. The table is used up to
/// 4,096 bytes or the peer's SETTINGS_HEADER_TABLE_SIZE when smaller; a change is
/// signalled at the start of the next block, as RFC 7541 §4.2 requires.
#[derive(Debug)]
pub struct Encoder {
    table: VecDeque<(Vec<u8>, Vec<u8>)>,
    size: usize,
    max_size: usize,
    /// Size updates owed to the peer: the smallest since the last block, and the last.
    update: Option<(usize, usize)>,
}

impl Default for Encoder {
    fn default() -> Self {
        Encoder::new()
    }
}

impl Encoder {
    /// An encoder with HTTP/2's default table size.
    pub fn new() -> Encoder {
        Encoder {
            table: VecDeque::new(),
            size: 0,
            max_size: DEFAULT_TABLE,
            update: None,
        }
    }

    /// The peer's SETTINGS_HEADER_TABLE_SIZE.
    pub fn set_peer_table_size(&mut self, peer: usize) {
        let new = peer.min(DEFAULT_TABLE);
        if new == self.max_size {
            return;
        }
        self.max_size = new;
        while self.size > self.max_size {
            let (n, v) = self.table.pop_back().expect("a non-empty table");
            self.size -= n.len() + v.len() + 32;
        }
        self.update = Some(match self.update {
            Some((lo, _)) => (lo.min(new), new),
            None => (new, new),
        });
    }

    /// Starts a header block (writes any table size update owed).
    pub fn begin(&mut self, out: &mut Vec<u8>) {
        if let Some((lo, last)) = self.update.take() {
            if lo < last {
                integer_encode(out, 0x20, 5, lo);
            }
            integer_encode(out, 0x20, 5, last);
        }
    }

    /// Writes the static table's entry `index` (1-based).
    pub fn indexed(&mut self, out: &mut Vec<u8>, index: usize) {
        integer_encode(out, 0x80, 7, index);
    }

    /// Writes a field whose name is the static table's entry `name_index` (1-based):
    /// its index when the dynamic table holds it, else a literal that is inserted when
    /// `index` is set and it fits.
    pub fn field(&mut self, out: &mut Vec<u8>, name_index: usize, value: &[u8], index: bool) {
        let name = STATIC[name_index - 1].0;
        if let Some(i) = self
            .table
            .iter()
            .position(|(n, v)| n.as_slice() == name && v.as_slice() == value)
        {
            integer_encode(out, 0x80, 7, 62 + i);
            return;
        }
        let entry = name.len() + value.len() + 32;
        if index && entry <= self.max_size {
            integer_encode(out, 0x40, 6, name_index);
            string_encode(out, value);
            self.size += entry;
            self.table.push_front((name.to_vec(), value.to_vec()));
            while self.size > self.max_size {
                let (n, v) = self.table.pop_back().expect("a non-empty table");
                self.size -= n.len() + v.len() + 32;
            }
        } else {
            integer_encode(out, 0x00, 4, name_index);
            string_encode(out, value);
        }
    }
}

impl Encoder {
    /// Writes a field whose name is not in the static table, as a literal without
    /// indexing (a field sent on every answer but rare among peers: Alt-Svc).
    pub fn literal(&mut self, out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
        out.push(0x00);
        string_encode(out, name);
        string_encode(out, value);
    }
}

/// Where a decoded field came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// An index into the static table or the dynamic one: bytes seen before (the
    /// static table's, or a field inserted earlier on this connection).
    Table,
    /// A literal not added to the table: bytes seen once.
    Literal,
    /// A literal added to the dynamic table: later blocks may refer to it by index.
    Inserted,
}

/// How far [`Decoder::decode_bounded`] went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoded {
    /// Every field of the block was decoded; `list` is the header list's size as RFC
    /// 9113 6.5.2 counts it.
    Whole {
        /// Names and values, plus 32 a field.
        list: usize,
    },
    /// The header list passed its bound; decoding stopped there.
    Stopped,
}

/// The decoder of one connection.
pub struct Decoder {
    table: VecDeque<(Vec<u8>, Vec<u8>)>,
    size: usize,
    max_size: usize,
    /// The largest table the peer may ask for (what our SETTINGS_HEADER_TABLE_SIZE
    /// said; 4,096 unless [`Decoder::allow_table`]).
    limit: usize,
    /// Scratch space for Huffman-decoded names and values.
    name: Vec<u8>,
    value: Vec<u8>,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder::new()
    }
}

/// The most a server may size its table without our saying otherwise (RFC 9113).
const DEFAULT_TABLE: usize = 4096;

impl Decoder {
    /// A decoder with HTTP/2's default table size.
    pub fn new() -> Decoder {
        Decoder {
            table: VecDeque::new(),
            size: 0,
            max_size: DEFAULT_TABLE,
            limit: DEFAULT_TABLE,
            name: Vec::new(),
            value: Vec::new(),
        }
    }

    /// Lets the peer's table updates go up to `limit` bytes (we announced it in
    /// SETTINGS_HEADER_TABLE_SIZE). A limit below 4,096 is taken as 4,096 until the
    /// peer shrinks its table: it may use the default until it has our SETTINGS.
    pub fn allow_table(&mut self, limit: usize) {
        self.limit = limit.max(DEFAULT_TABLE);
    }

    fn entry(&self, index: usize) -> Result<(&[u8], &[u8]), HpackError> {
        match index {
            0 => Err(HpackError("index 0")),
            1..=61 => Ok(STATIC[index - 1]),
            _ => self
                .table
                .get(index - 62)
                .map(|(n, v)| (&n[..], &v[..]))
                .ok_or(HpackError("index beyond the dynamic table")),
        }
    }

    fn evict(&mut self) {
        while self.size > self.max_size {
            let (n, v) = self.table.pop_back().expect("a non-empty table");
            self.size -= n.len() + v.len() + 32;
        }
    }

    fn insert(&mut self, name: Vec<u8>, value: Vec<u8>) {
        self.size += name.len() + value.len() + 32;
        self.table.push_front((name, value));
        self.evict();
    }

    /// Reads a string literal at `buf[*at]` into `dst` when Huffman-coded; returns
    /// where the raw bytes are otherwise.
    fn string<'b>(
        buf: &'b [u8],
        at: &mut usize,
        dst: &mut Vec<u8>,
    ) -> Result<Option<&'b [u8]>, HpackError> {
        let huff = *buf.get(*at).ok_or(HpackError("truncated string"))? & 0x80 != 0;
        let len = integer(buf, at, 7)?;
        let raw = buf
            .get(*at..*at + len)
            .ok_or(HpackError("truncated string"))?;
        *at += len;
        if huff {
            huffman_decode(raw, dst)?;
            Ok(None)
        } else {
            Ok(Some(raw))
        }
    }

    /// Decodes a header block, calling `cb(name, value)` for each header in order.
    pub fn decode(
        &mut self,
        buf: &[u8],
        mut cb: impl FnMut(&[u8], &[u8]),
    ) -> Result<(), HpackError> {
        match self.decode_bounded(buf, usize::MAX, |n, v, _| cb(n, v))? {
            Decoded::Whole { .. } => Ok(()),
            Decoded::Stopped => unreachable!("an unbounded list is never stopped"),
        }
    }

    /// Decodes like [`Decoder::decode`], but stops once the header list's size (each
    /// field's name and value plus 32, as RFC 9113 6.5.2 counts it) passes `max_list`:
    /// a block of many references to one large table entry decodes to far more than
    /// its own size. After [`Decoded::Stopped`] the table may be out of step with the
    /// peer's, so the connection cannot go on. The callback is told where each field
    /// came from ([`Source`]), so that a caller that checks fields can check each table
    /// entry once, when it is inserted.
    pub fn decode_bounded(
        &mut self,
        buf: &[u8],
        max_list: usize,
        mut cb: impl FnMut(&[u8], &[u8], Source),
    ) -> Result<Decoded, HpackError> {
        let mut at = 0;
        let mut field_seen = false;
        let mut list = 0usize;
        let mut over = |n: &[u8], v: &[u8]| {
            list = list.saturating_add(n.len() + v.len() + 32);
            list > max_list
        };
        while at < buf.len() {
            let b = buf[at];
            if b & 0x80 != 0 {
                // Indexed field.
                field_seen = true;
                let i = integer(buf, &mut at, 7)?;
                let (n, v) = self.entry(i)?;
                if over(n, v) {
                    return Ok(Decoded::Stopped);
                }
                cb(n, v, Source::Table);
            } else if b & 0xe0 == 0x20 {
                // Dynamic table size update: only before the block's first field.
                if field_seen {
                    return Err(HpackError("a table size update after a header field"));
                }
                let size = integer(buf, &mut at, 5)?;
                if size > self.limit {
                    return Err(HpackError("table size beyond what our SETTINGS allowed"));
                }
                self.max_size = size;
                self.evict();
            } else {
                // Literal: with incremental indexing (01), without (0000) or never (0001).
                field_seen = true;
                let indexing = b & 0x40 != 0;
                let i = integer(buf, &mut at, if indexing { 6 } else { 4 })?;
                let mut name = std::mem::take(&mut self.name);
                let mut value = std::mem::take(&mut self.value);
                let r = (|| {
                    let name_ref: Vec<u8>;
                    let n: &[u8] = if i == 0 {
                        match Self::string(buf, &mut at, &mut name)? {
                            Some(raw) => raw,
                            None => &name,
                        }
                    } else {
                        name_ref = self.entry(i)?.0.to_vec();
                        &name_ref
                    };
                    let v: &[u8] = match Self::string(buf, &mut at, &mut value)? {
                        Some(raw) => raw,
                        None => &value,
                    };
                    if over(n, v) {
                        return Ok(None);
                    }
                    cb(
                        n,
                        v,
                        if indexing {
                            Source::Inserted
                        } else {
                            Source::Literal
                        },
                    );
                    Ok::<_, HpackError>(Some(indexing.then(|| (n.to_vec(), v.to_vec()))))
                })();
                self.name = name;
                self.value = value;
                match r? {
                    None => return Ok(Decoded::Stopped),
                    Some(Some((n, v))) => self.insert(n, v),
                    Some(None) => {}
                }
            }
        }
        Ok(Decoded::Whole { list })
    }
}

#[cfg(test)]
mod tests;
