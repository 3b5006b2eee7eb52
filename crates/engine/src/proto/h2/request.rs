//! A request translated for HTTP/2 once, from the engine's HTTP/1.1 bytes: its header
//! block as literals (any stream, any connection), the blocks of a connection that
//! repeats it (fields inserted into the server's table, then indexes), and its body.

use stampede_wire::hpack::{integer_encode as integer, literal};

use super::DEFAULT_TABLE;
use crate::error::TranslateError;

/// A request translated for HTTP/2: its header block and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct H2Request {
    /// HPACK block: literals without indexing, so it can be sent on any stream.
    pub block: Vec<u8>,
    /// The first block of a connection that sends only this request: fields not in the
    /// static table are added to the server's dynamic table. Empty when they would not
    /// fit in the default 4,096-byte table.
    pub block_first: Vec<u8>,
    /// Every later block on that connection: each field an index, a few bytes in all.
    pub block_indexed: Vec<u8>,
    /// The request body.
    pub body: Vec<u8>,
    /// What `block_first` inserts into the server's table, in HPACK's measure (each
    /// field's name and value plus 32).
    pub table_bytes: usize,
    /// The same fields as an HTTP/3 field section: QPACK's static table and
    /// literals, usable on any stream of any connection.
    pub section: Vec<u8>,
    /// HTTP/3's frames of the request whole (HEADERS of `section`, then DATA of the
    /// body), shared by every stream that sends it; empty when the request is over
    /// 16 KiB (its frames are then made as it is sent).
    pub h3_frames: bytes::Bytes,
    /// A HEAD request (its response has no content, whatever it says).
    pub head: bool,
}

/// The largest request (field section and body) kept as HTTP/3 frames ready to send.
pub const H3_SHARED_MAX: usize = 16 * 1024;

/// Headers that mean nothing in HTTP/2 (RFC 9113 §8.2.2) or become pseudo-headers.
const DROPPED: [&str; 6] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
    "host",
];

impl H2Request {
    /// Translates an HTTP/1.x request (as the engine encodes it) for `scheme`.
    pub fn from_http1(bytes: &[u8], scheme: &str) -> Result<H2Request, TranslateError> {
        let mut hs = [httparse::EMPTY_HEADER; 64];
        let mut r = httparse::Request::new(&mut hs);
        let n = match r.parse(bytes) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => return Err(TranslateError::Incomplete),
            Err(e) => return Err(TranslateError::Malformed(e.to_string())),
        };
        let method = r.method.unwrap_or("GET");
        let path = r.path.unwrap_or("/");
        let authority = r
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case("host"))
            .map(|h| h.value)
            .unwrap_or(b"");
        let mut fields: Vec<(Vec<u8>, Vec<u8>)> = vec![
            (b":method".to_vec(), method.as_bytes().to_vec()),
            (b":scheme".to_vec(), scheme.as_bytes().to_vec()),
            (b":authority".to_vec(), authority.to_vec()),
            (b":path".to_vec(), path.as_bytes().to_vec()),
        ];
        for h in r.headers.iter() {
            let name = h.name.to_ascii_lowercase();
            if DROPPED.contains(&name.as_str()) {
                continue;
            }
            if name == "te" && !h.value.eq_ignore_ascii_case(b"trailers") {
                continue;
            }
            fields.push((name.into_bytes(), h.value.to_vec()));
        }
        let mut block = Vec::new();
        for (n, v) in &fields {
            literal(&mut block, n, v);
        }
        let (block_first, block_indexed, table_bytes) = indexed_blocks(&fields);
        let mut section = Vec::new();
        stampede_wire::h3::qpack::encode(
            &mut section,
            fields.iter().map(|(n, v)| (&n[..], &v[..])),
        );
        let body = &bytes[n..];
        let mut h3_frames = Vec::new();
        if section.len() + body.len() <= H3_SHARED_MAX {
            use stampede_wire::h3::{data_head, frame, kind};
            frame(&mut h3_frames, kind::HEADERS, &section);
            if !body.is_empty() {
                data_head(&mut h3_frames, body.len() as u64);
                h3_frames.extend_from_slice(body);
            }
        }
        Ok(H2Request {
            block,
            block_first,
            block_indexed,
            body: body.to_vec(),
            table_bytes,
            section,
            h3_frames: h3_frames.into(),
            head: method == "HEAD",
        })
    }
}

/// The first and later header blocks for a connection that repeats one request: exact
/// static matches are indexed; other fields are inserted into the dynamic table by the
/// first block and indexed by the rest (the entry inserted last sits at 62). Also
/// returns the table bytes the first block takes.
fn indexed_blocks(fields: &[(Vec<u8>, Vec<u8>)]) -> (Vec<u8>, Vec<u8>, usize) {
    use stampede_wire::hpack::STATIC;
    let exact = |n: &[u8], v: &[u8]| STATIC.iter().position(|&(sn, sv)| sn == n && sv == v);
    let by_name = |n: &[u8]| STATIC.iter().position(|&(sn, _)| sn == n);
    let inserted: Vec<usize> = (0..fields.len())
        .filter(|&i| exact(&fields[i].0, &fields[i].1).is_none())
        .collect();
    let size: usize = inserted
        .iter()
        .map(|&i| fields[i].0.len() + fields[i].1.len() + 32)
        .sum();
    if size > DEFAULT_TABLE as usize {
        return (Vec::new(), Vec::new(), 0);
    }
    let (mut first, mut rest) = (Vec::new(), Vec::new());
    for (i, (n, v)) in fields.iter().enumerate() {
        if let Some(s) = exact(n, v) {
            integer(&mut first, 0x80, 7, s + 1);
            integer(&mut rest, 0x80, 7, s + 1);
            continue;
        }
        match by_name(n) {
            Some(s) => integer(&mut first, 0x40, 6, s + 1),
            None => {
                first.push(0x40);
                integer(&mut first, 0, 7, n.len());
                first.extend_from_slice(n);
            }
        }
        integer(&mut first, 0, 7, v.len());
        first.extend_from_slice(v);
        let j = inserted.iter().position(|&k| k == i).expect("inserted");
        integer(&mut rest, 0x80, 7, 62 + (inserted.len() - 1 - j));
    }
    (first, rest, size)
}
