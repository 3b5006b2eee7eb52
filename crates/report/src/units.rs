//! Number formatting shared by the renderers, including wrk's unit scaling rules.

/// wrk's `format_units`: divides by `scale` while the value is at least 85 % of it,
/// never reaching the last unit of the list (wrk's own quirk, kept for fidelity).
fn format_units(n: f64, scale: f64, base: &str, units: &[&str], precision: usize) -> String {
    let mut amt = n;
    let mut unit = base;
    let threshold = scale * 0.85;
    let mut i = 0;
    while i + 1 < units.len() && amt >= threshold {
        amt /= scale;
        unit = units[i];
        i += 1;
    }
    format!("{amt:.precision$}{unit}")
}

/// wrk's `format_time_us`: microseconds as `614.53us`, `1.34ms`, `5.50s`, `2.00m`.
pub fn wrk_time_us(us: f64) -> String {
    if us >= 1_000_000.0 {
        format_units(us / 1_000_000.0, 60.0, "s", &["m", "h"], 2)
    } else {
        format_units(us, 1000.0, "us", &["ms", "s"], 2)
    }
}

/// wrk's `format_time_s` with no decimals: `10s`, `2m`.
pub fn wrk_time_s(s: f64) -> String {
    format_units(s, 60.0, "s", &["m", "h"], 0)
}

/// wrk's `format_metric`: `52.13k`.
pub fn wrk_metric(n: f64) -> String {
    format_units(n, 1000.0, "", &["k", "M", "G", "T", "P"], 2)
}

/// wrk's `format_binary`: `150.41M` (callers append `B`).
pub fn wrk_binary(n: f64) -> String {
    format_units(n, 1024.0, "", &["K", "M", "G", "T", "P"], 2)
}

/// wrk's `print_units`: right-aligns in `width`, padding unit-less values so columns line up.
pub fn wrk_units(msg: &str, width: usize) -> String {
    let b = msg.as_bytes();
    let mut pad = 2usize;
    if b.last().is_some_and(|c| c.is_ascii_alphabetic()) {
        pad -= 1;
    }
    if b.len() >= 2 && b[b.len() - 2].is_ascii_alphabetic() {
        pad -= 1;
    }
    let w = width - pad;
    let shown: String = msg.chars().take(w).collect();
    format!("{shown:>w$}{}", &"  "[..pad])
}

/// A duration in µs scaled for reading: the value and its unit's place in
/// (µs, ms, s).
pub fn scale_us(us: f64) -> (f64, usize) {
    if us < 1000.0 {
        (us, 0)
    } else if us < 1_000_000.0 {
        (us / 1000.0, 1)
    } else {
        (us / 1_000_000.0, 2)
    }
}

/// `n` divided by 1024 while it is at least 1024, at most `max` times: the value and
/// how many times.
pub fn scale_binary(n: f64, max: usize) -> (f64, usize) {
    let (mut v, mut i) = (n, 0);
    while v >= 1024.0 && i < max {
        v /= 1024.0;
        i += 1;
    }
    (v, i)
}

/// A latency in µs for humans: `584µs`, `1.34ms`, `2.10s`.
pub fn human_us(us: f64) -> String {
    match scale_us(us) {
        (v, 0) => format!("{v:.0}µs"),
        (v, 1) => format!("{v:.2}ms"),
        (v, _) => format!("{v:.2}s"),
    }
}

/// A byte count for humans: `150.4 MiB`.
pub fn human_bytes(n: f64) -> String {
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    match scale_binary(n, U.len() - 1) {
        (v, 0) => format!("{v:.0} B"),
        (v, i) => format!("{v:.1} {}", U[i]),
    }
}

/// An integer with thousands separators: `1,037,498`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrk_units_match_wrk() {
        assert_eq!(wrk_time_us(614.53), "614.53us");
        assert_eq!(wrk_time_us(1340.0), "1.34ms");
        assert_eq!(wrk_time_us(5_500_000.0), "5.50s");
        assert_eq!(wrk_time_us(780_020.0), "780.02ms");
        assert_eq!(wrk_time_us(120_000_000.0), "2.00m");
        assert_eq!(wrk_metric(7990.0), "7.99k");
        assert_eq!(wrk_metric(55.01), "55.01");
        assert_eq!(wrk_binary(2.52 * 1024.0 * 1024.0 * 1024.0), "2.52G");
        assert_eq!(wrk_time_s(20.0), "20s");
        assert_eq!(wrk_time_s(120.0), "2m");
        assert_eq!(wrk_units("5.50s", 8), "  5.50s ");
        assert_eq!(wrk_units("55.01", 10), "   55.01  ");
        assert_eq!(thousands(1037498), "1,037,498");
        assert_eq!(human_us(584.4), "584µs");
        assert_eq!(human_us(1340.0), "1.34ms");
        assert_eq!(human_us(2_100_000.0), "2.10s");
        assert_eq!(human_bytes(512.0), "512 B");
        assert_eq!(human_bytes(157_702_554.0), "150.4 MiB");
        assert_eq!(human_bytes(3.0 * 1024f64.powi(5)), "3072.0 TiB");
        assert_eq!(thousands(12), "12");
    }
}
