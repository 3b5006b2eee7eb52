//! The `Date` header, formatted once a second per thread rather than once a response.

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

/// RFC 9110 IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`.
pub fn http_date(unix_s: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = (unix_s / 86_400) as i64;
    let rem = unix_s % 86_400;
    // Howard Hinnant's days-to-civil.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{}, {:02} {} {} {:02}:{:02}:{:02} GMT",
        DAYS[(days % 7) as usize],
        d,
        MONTHS[(m - 1) as usize],
        y,
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
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
