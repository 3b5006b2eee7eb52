//! Checks of request header fields, run for every field of every HTTP/2 request:
//! what RFC 9113 8.2.1 allows in a name and a value, and a content-length's value.

use crate::request::content_length_value;

/// A field that may stand in a request (RFC 9113 8.2.1): a name of lower-case token
/// characters (a pseudo-header's after its colon), and a value without CR, LF or NUL
/// and without whitespace at either end. Out of line, like [`declared_length`]: it runs
/// for every field.
#[inline(never)]
pub(super) fn field_ok(name: &[u8], value: &[u8]) -> bool {
    let name = name.strip_prefix(b":").unwrap_or(name);
    if name.is_empty() || !name.iter().all(|&b| NAME[b as usize]) {
        return false;
    }
    if let (Some(&first), Some(&last)) = (value.first(), value.last()) {
        if matches!(first, b' ' | b'\t') || matches!(last, b' ' | b'\t') {
            return false;
        }
    }
    !has_line_break_or_nul(value)
}

/// Whether `v` holds CR, LF or NUL: eight bytes at a time, each word looked at byte by
/// byte only when one of its bytes is below 0x0e.
pub(super) fn has_line_break_or_nul(v: &[u8]) -> bool {
    let bad = |&b: &u8| b == b'\r' || b == b'\n' || b == 0;
    let mut words = v.chunks_exact(8);
    for w in &mut words {
        let x = u64::from_le_bytes(w.try_into().expect("eight bytes"));
        if x.wrapping_sub(0x0e0e_0e0e_0e0e_0e0e) & !x & 0x8080_8080_8080_8080 != 0
            && w.iter().any(bad)
        {
            return true;
        }
    }
    words.remainder().iter().any(bad)
}

/// The characters of a field name in HTTP/2 (RFC 9110 5.6.2's token characters, upper
/// case excluded by RFC 9113 8.2.1), by byte.
const NAME: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        t[i] = b.is_ascii_lowercase()
            || b.is_ascii_digit()
            || matches!(
                b,
                b'!' | b'#'
                    | b'$'
                    | b'%'
                    | b'&'
                    | b'\''
                    | b'*'
                    | b'+'
                    | b'-'
                    | b'.'
                    | b'^'
                    | b'_'
                    | b'`'
                    | b'|'
                    | b'~'
            );
        i += 1;
    }
    t
};

/// A content-length field's value, by the HTTP/1.1 parser's rule, kept out of line:
/// inlined into the header callback, which runs for every field, it made every call
/// save more registers (+25 instructions per request under callgrind) for a branch
/// that most requests never take.
#[inline(never)]
pub(super) fn declared_length(v: &[u8]) -> Option<usize> {
    content_length_value(v)
}
