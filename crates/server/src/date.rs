//! The `Date` header, formatted once a second per thread rather than once a response.

pub use stampede_wire::date::http_date;
use std::time::{SystemTime, UNIX_EPOCH};

/// A cached `Date: …\r\n` line.
pub struct DateCache {
    second: u64,
    line: Vec<u8>,
}

impl Default for DateCache {
    fn default() -> Self {
        DateCache::new()
    }
}

impl DateCache {
    /// A cache holding the current second's line.
    pub fn new() -> DateCache {
        let mut d = DateCache {
            second: u64::MAX,
            line: Vec::with_capacity(40),
        };
        d.refresh();
        d
    }

    /// Re-formats the line if the wall-clock second changed.
    pub fn refresh(&mut self) {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        if now != self.second {
            self.second = now;
            self.line.clear();
            self.line.extend_from_slice(b"Date: ");
            self.line.extend_from_slice(http_date(now).as_bytes());
            self.line.extend_from_slice(b"\r\n");
        }
    }

    /// The current `Date: …\r\n` line.
    pub fn line(&self) -> &[u8] {
        &self.line
    }

    /// The current date alone (HTTP/2 sends fields, not lines).
    pub fn value(&self) -> &[u8] {
        &self.line[b"Date: ".len()..self.line.len() - 2]
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn formats_rfc_example() {
        assert_eq!(
            super::http_date(784_111_777),
            "Sun, 06 Nov 1994 08:49:37 GMT"
        );
        assert_eq!(super::http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
    }
}
