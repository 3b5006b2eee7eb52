//! Percent-decoding (RFC 3986 §2.1) for both ends: the engine decodes the socket path
//! of an `http+unix://` URL, the server decodes request paths.
//!
//! Strict on purpose: an escape is `%` and exactly two hex digits, nothing else
//! (`u8::from_str_radix` would also take a sign, so `%+F` would pass as 0x0F).

/// The value of one hex digit, or `None`.
#[inline]
fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Decodes `input`; `None` when a `%` is not followed by two hex digits.
pub fn decode(input: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(input.len());
    let mut i = 0;
    while i < input.len() {
        if input[i] == b'%' {
            let hi = hex(*input.get(i + 1)?)?;
            let lo = hex(*input.get(i + 2)?)?;
            out.push(hi << 4 | lo);
            i += 3;
        } else {
            out.push(input[i]);
            i += 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::decode;

    #[test]
    fn decodes_hex_escapes_only() {
        assert_eq!(decode(b"a%20b%2Fc%2f").unwrap(), b"a b/c/");
        assert_eq!(decode(b"plain").unwrap(), b"plain");
        assert_eq!(decode(b"%00%ff").unwrap(), [0, 255]);
        for bad in [&b"%+F"[..], b"%-1", b"% 1", b"%1", b"%", b"%G0", b"%0x"] {
            assert_eq!(decode(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
