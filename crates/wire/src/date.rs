//! Calendar dates for the wire: HTTP's IMF-fixdate (RFC 9110 5.6.7) for the server's
//! `Date` header, and the civil date of a Unix day that other date formats (ab's
//! report) are written from.

/// The proleptic Gregorian (year, month 1–12, day 1–31) of day `z` since 1970-01-01
/// (Howard Hinnant's days-to-civil).
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// RFC 9110 IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`.
pub fn http_date(unix_s: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = (unix_s / 86_400) as i64;
    let rem = unix_s % 86_400;
    let (y, m, d) = civil_from_days(days);
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

/// An instant in ms since the epoch as RFC 3339 in UTC: `2026-11-23T09:30:00.250Z`.
pub fn rfc3339_ms(unix_ms: u64) -> String {
    let s = unix_ms / 1000;
    let (y, m, d) = civil_from_days((s / 86_400) as i64);
    let rem = s % 86_400;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        unix_ms % 1000
    )
}

/// Day number since 1970-01-01 of a proleptic Gregorian date (the inverse of
/// [`civil_from_days`]).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Seconds since the epoch (with fraction) of an RFC 3339 date-time:
/// `2026-11-23T09:30:00Z`, `2026-11-23T10:30:00.250+01:00`.
pub fn rfc3339(s: &str) -> Option<f64> {
    let b = s.trim().as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = b.get(r)?;
        if t.iter().all(u8::is_ascii_digit) {
            std::str::from_utf8(t).ok()?.parse().ok()
        } else {
            None
        }
    };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut i = 19;
    let mut frac = 0.0;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        i = start;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return None;
        }
        frac = format!("0.{}", std::str::from_utf8(&b[start..i]).ok()?)
            .parse()
            .ok()?;
    }
    let offset = match b.get(i..)? {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), rest @ ..] if rest.len() == 5 && rest[2] == b':' => {
            let oh = num(i + 1..i + 3)?;
            let om = num(i + 4..i + 6)?;
            let o = oh * 3600 + om * 60;
            if *sign == b'+' {
                o
            } else {
                -o
            }
        }
        _ => return None,
    };
    let days = days_from_civil(y, mo as u32, d as u32);
    Some((days * 86_400 + h * 3600 + mi * 60 + sec - offset) as f64 + frac)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_read_back() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(http_date(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT");
        for z in [-800_000i64, -1, 0, 11_016, 20_415, 3_000_000] {
            let (y, m, d) = civil_from_days(z);
            assert_eq!(days_from_civil(y, m, d), z);
        }
    }

    #[test]
    fn rfc3339_written_and_read_back() {
        assert_eq!(rfc3339_ms(1_795_426_200_250), "2026-11-23T09:30:00.250Z");
        assert_eq!(
            rfc3339(&rfc3339_ms(1_795_426_200_250)),
            Some(1_795_426_200.25)
        );
        assert_eq!(rfc3339_ms(0), "1970-01-01T00:00:00.000Z");
    }

    #[test]
    fn rfc3339_reads_zones_and_fractions() {
        assert_eq!(rfc3339("1994-11-06T08:49:37Z"), Some(784_111_777.0));
        assert_eq!(rfc3339("1994-11-06T09:49:37+01:00"), Some(784_111_777.0));
        assert_eq!(rfc3339("1994-11-06T08:19:37-00:30"), Some(784_111_777.0));
        assert_eq!(rfc3339("1994-11-06T08:49:37.25Z"), Some(784_111_777.25));
        for bad in [
            "1994-11-06 08:49",
            "1994-13-06T08:49:37Z",
            "1994-11-06T08:49:37",
            "1994-11-06T08:49:37.Z",
            "1994-11-06T08:49:37+0100",
            "yesterday",
        ] {
            assert_eq!(rfc3339(bad), None, "{bad}");
        }
    }
}
