//! The latency histogram every figure is kept in ([`Hist`]: 1 µs to an hour, three
//! significant digits), its percentiles ranked as HdrHistogram's reference
//! implementations rank them, and its encoding: base64 of the compressed V2 form,
//! written into results and read back through one checked decoder whose claimed sizes
//! are held to limits before anything is allocated.

use crate::error::HistError;
use crate::measure::result::LatencyStats;

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Highest latency a histogram tracks, in microseconds (one hour).
pub const MAX_TRACKABLE_US: u64 = 3_600_000_000;

/// Creates an empty latency histogram: 1 µs to one hour, three significant digits.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_TRACKABLE_US, 3).expect("valid histogram bounds")
}

/// The value at percentile `p` (0 to 100) the way HdrHistogram's reference
/// implementations find it: the smallest recorded value (highest equivalent) that at
/// least `p` % of the values do not exceed. `p` is stepped down one ulp before scaling,
/// as the Java implementation does, because `99.9 / 100.0 * 6000.0` comes out at
/// 5994.000000000001 and would round up to the 5,995th value instead of the 5,994th.
pub fn value_at_percentile(h: &Histogram<u64>, p: f64) -> u64 {
    if h.is_empty() {
        return 0;
    }
    if p <= 0.0 {
        return h.value_at_quantile(0.0);
    }
    h.value_at_quantile((p.min(100.0).next_down() / 100.0).max(0.0))
}

/// The value at percentile `p` (0 to 100) as numpy's default method defines it (the
/// `linear` one, which vLLM's benchmark reports): the recorded values taken in order,
/// the value at rank `(n − 1) · p / 100` (from 0), interpolated between the two
/// nearest ranks. Each recorded value is its bucket's highest equivalent, as in
/// [`value_at_percentile`]. With 80 values, p99 lies between the 79th and the 80th
/// rather than at the largest.
pub fn percentile_linear(h: &Histogram<u64>, p: f64) -> f64 {
    let n = h.len();
    if n == 0 {
        return 0.0;
    }
    let pos = (n - 1) as f64 * p.clamp(0.0, 100.0) / 100.0;
    let lo = (pos.floor() as u64).min(n - 1);
    let hi = (lo + 1).min(n - 1);
    let frac = pos - lo as f64;
    // The values at ranks lo and hi, in one walk over the recorded buckets.
    let (mut a, mut b) = (None, None);
    let mut seen = 0u64;
    for v in h.iter_recorded() {
        seen += v.count_at_value();
        let value = v.value_iterated_to();
        if a.is_none() && seen > lo {
            a = Some(value);
        }
        if seen > hi {
            b = Some(value);
            break;
        }
    }
    let a = a.unwrap_or_else(|| h.max()) as f64;
    let b = b.unwrap_or_else(|| h.max()) as f64;
    a + (b - a) * frac
}

/// A latency histogram in microseconds that serialises as base64 compressed V2.
#[derive(Clone)]
pub struct Hist(pub Histogram<u64>);

impl std::fmt::Debug for Hist {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let h = &self.0;
        write!(
            f,
            "Hist(count {}, min {}, max {})",
            h.len(),
            h.min(),
            h.max()
        )
    }
}

impl Default for Hist {
    fn default() -> Self {
        Hist(new_histogram())
    }
}

impl PartialEq for Hist {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl Hist {
    /// Adds another histogram's counts.
    pub fn add(&mut self, other: &Hist) {
        self.0.add(&other.0).expect("histograms share bounds");
    }

    /// Summary statistics of the histogram.
    pub fn stats(&self) -> LatencyStats {
        LatencyStats::of(&self.0)
    }

    /// Encodes as base64 of the compressed V2 format (what HdrHistogram's logs hold).
    pub fn to_base64(&self) -> String {
        let mut buf = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&self.0, &mut buf)
            .expect("serialising to memory cannot fail");
        base64::engine::general_purpose::STANDARD.encode(buf)
    }

    /// Decodes [`Hist::to_base64`]'s output (compressed or plain V2), checked as
    /// [`decode_checked`] checks it.
    pub fn from_base64(s: &str) -> Result<Hist, HistError> {
        let mut out = Hist::default();
        out.add_base64(s)?;
        Ok(out)
    }

    /// Adds an encoded histogram (base64 of V2, compressed or plain) to this one. The
    /// sum's count must stay within [`MAX_COUNT`]; nothing is added otherwise.
    pub fn add_base64(&mut self, s: &str) -> Result<(), HistError> {
        self.add_checked(&decode_base64(s)?)
    }

    /// Adds `h`, refusing a sum whose count passes [`MAX_COUNT`].
    pub fn add_checked(&mut self, h: &Histogram<u64>) -> Result<(), HistError> {
        if self
            .0
            .len()
            .checked_add(h.len())
            .is_none_or(|n| n > MAX_COUNT)
        {
            return Err(HistError::Limit(format!(
                "the counts add up past {MAX_COUNT} ({} + {}), more than HdrHistogram's format can hold",
                self.0.len(),
                h.len()
            )));
        }
        self.0
            .add(h)
            .map_err(|e| HistError::Range(format!("{e:?}")))
    }
}

/// Decodes base64 of a V2 histogram (compressed or plain), checked as
/// [`decode_checked`] checks it, the text's length first.
pub fn decode_base64(s: &str) -> Result<Histogram<u64>, HistError> {
    let s = s.trim();
    if s.len() > MAX_ENCODED_HIST {
        return Err(HistError::Limit(format!(
            "{} bytes of base64; a histogram may take at most {MAX_ENCODED_HIST}",
            s.len()
        )));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(s)
        .map_err(|e| HistError::Base64(e.to_string()))?;
    decode_checked(&bytes)
}

/// Most base64 characters one encoded histogram may have (a full histogram of the
/// engine's bounds takes a few tens of KiB).
pub const MAX_ENCODED_HIST: usize = 4 << 20;

/// Most bytes a compressed histogram may inflate to.
pub const MAX_INFLATED_HIST: usize = 8 << 20;

/// Most counters a decoded histogram's bounds may need (five significant digits over
/// an hour in µs need about 2.1 million; the engine's own bounds, 23,552).
pub const MAX_HIST_COUNTERS: u64 = 1 << 22;

/// Most values a histogram may count: HdrHistogram's V2 format writes each count as a
/// signed 64-bit number, so a larger sum could not be written back.
pub const MAX_COUNT: u64 = i64::MAX as u64;

/// Decodes a V2 histogram (HdrHistogram's compressed or plain encoding) from bytes that
/// may come from anywhere: the lengths its headers claim are checked against the bytes
/// there are, the inflated size against [`MAX_INFLATED_HIST`], and the counters its
/// bounds need against [`MAX_HIST_COUNTERS`], before anything is allocated for them,
/// and its count against [`MAX_COUNT`].
pub fn decode_checked(bytes: &[u8]) -> Result<Histogram<u64>, HistError> {
    use std::io::Read as _;
    // The cookies without their word-size bits (0x10 for 8-byte counts, as written).
    const V2: u32 = 0x1c84_9303;
    const V2_COMPRESSED: u32 = 0x1c84_9304;
    let word = |b: &[u8], at: usize| -> Option<u32> {
        b.get(at..at + 4)
            .map(|w| u32::from_be_bytes(w.try_into().expect("four bytes")))
    };
    let cookie = |b: &[u8]| word(b, 0).map(|c| c & !0xf0);
    let short = || HistError::Format("it ends inside its header".into());
    let inflated;
    let plain: &[u8] = match cookie(bytes).ok_or_else(short)? {
        V2_COMPRESSED => {
            let claimed = word(bytes, 4).ok_or_else(short)? as usize;
            let payload = &bytes[8..];
            if claimed > payload.len() {
                return Err(HistError::Format(format!(
                    "its header claims {claimed} compressed bytes but {} follow",
                    payload.len()
                )));
            }
            let mut out = Vec::new();
            flate2::read::ZlibDecoder::new(&payload[..claimed])
                .take(MAX_INFLATED_HIST as u64 + 1)
                .read_to_end(&mut out)
                .map_err(|e| HistError::Format(format!("it does not inflate: {e}")))?;
            if out.len() > MAX_INFLATED_HIST {
                return Err(HistError::Limit(format!(
                    "it inflates to more than {MAX_INFLATED_HIST} bytes"
                )));
            }
            inflated = out;
            &inflated
        }
        V2 => bytes,
        other => {
            return Err(HistError::Format(format!(
                "cookie {other:#010x} is not HdrHistogram's V2 encoding"
            )))
        }
    };
    if cookie(plain) != Some(V2) {
        return Err(HistError::Format("the inflated histogram is not V2".into()));
    }
    if plain.len() < 40 {
        return Err(short());
    }
    let claimed = word(plain, 4).ok_or_else(short)? as usize;
    if claimed > plain.len() - 40 {
        return Err(HistError::Format(format!(
            "its header claims {claimed} bytes of counts but {} follow",
            plain.len() - 40
        )));
    }
    let digits = word(plain, 12).ok_or_else(short)?;
    let long = |at: usize| u64::from_be_bytes(plain[at..at + 8].try_into().expect("eight bytes"));
    let (low, high) = (long(16), long(24));
    let counters = counters_needed(low, high, digits).ok_or_else(|| {
        HistError::Format(format!(
            "bounds {low}..{high} with {digits} significant digits are not a histogram's"
        ))
    })?;
    if counters > MAX_HIST_COUNTERS {
        return Err(HistError::Limit(format!(
            "bounds {low}..{high} with {digits} significant digits need {counters} counters; at most {MAX_HIST_COUNTERS} are decoded"
        )));
    }
    if !counts_decodable(&plain[40..40 + claimed]) {
        return Err(HistError::Format(
            "a run of zeros in its counts is longer than any histogram".into(),
        ));
    }
    let h: Histogram<u64> = Deserializer::new()
        .deserialize(&mut &plain[..40 + claimed])
        .map_err(|e| HistError::Format(format!("{e:?}")))?;
    if h.len() > MAX_COUNT {
        return Err(HistError::Limit(format!(
            "it counts more than {MAX_COUNT} values"
        )));
    }
    Ok(h)
}

/// Whether the V2 counts `payload` can be decoded: each is a LEB128 number of at most
/// nine bytes (the ninth taking all eight bits), zig-zag encoded, a negative one being
/// a run of zeros. The one value whose negation overflows (-2^63) would stop the
/// decoder (checked arithmetic) instead of being refused, so it is refused here.
fn counts_decodable(payload: &[u8]) -> bool {
    let mut i = 0;
    while i < payload.len() {
        let mut v: u64 = 0;
        for k in 0..9 {
            let Some(&b) = payload.get(i) else {
                // Cut short: the decoder says so itself.
                return true;
            };
            i += 1;
            if k == 8 {
                v |= u64::from(b) << 56;
                break;
            }
            v |= u64::from(b & 0x7f) << (7 * k);
            if b & 0x80 == 0 {
                break;
            }
        }
        if v == u64::MAX {
            return false;
        }
    }
    true
}

/// How many counters HdrHistogram allocates for these bounds (its own arithmetic),
/// or `None` where it would refuse them.
fn counters_needed(low: u64, high: u64, digits: u32) -> Option<u64> {
    if low < 1 || digits > 5 || high < low.checked_mul(2)? {
        return None;
    }
    let largest_single_unit = 2 * 10u64.pow(digits);
    let sub_bucket_count_magnitude = 64 - (largest_single_unit - 1).leading_zeros();
    let sub_bucket_half_count = 1u64 << sub_bucket_count_magnitude.max(1).saturating_sub(1);
    let sub_bucket_count = sub_bucket_half_count * 2;
    let unit_magnitude = 63 - low.leading_zeros();
    if unit_magnitude + sub_bucket_count_magnitude > 63 {
        return None;
    }
    let mut smallest_untrackable = (sub_bucket_count as u128) << unit_magnitude;
    let mut buckets = 1u64;
    while smallest_untrackable <= high as u128 {
        smallest_untrackable <<= 1;
        buckets += 1;
    }
    Some((buckets + 1) * sub_bucket_half_count)
}

impl Serialize for Hist {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_base64())
    }
}

impl<'de> Deserialize<'de> for Hist {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Hist::from_base64(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod linear_tests {
    use super::{new_histogram, percentile_linear};

    #[test]
    fn percentiles_interpolate_between_ranks_as_numpy_does() {
        let mut h = new_histogram();
        for v in 1..=80 {
            h.record(v).unwrap();
        }
        // numpy.percentile(range(1, 81), q)
        assert!((percentile_linear(&h, 99.0) - 79.21).abs() < 1e-9);
        assert!((percentile_linear(&h, 50.0) - 40.5).abs() < 1e-9);
        assert_eq!(percentile_linear(&h, 0.0), 1.0);
        assert_eq!(percentile_linear(&h, 100.0), 80.0);
        // A slow last answer: p99 of 80 stays below it, as numpy's does.
        let mut h = new_histogram();
        for _ in 0..79 {
            h.record(1000).unwrap();
        }
        h.record(2000).unwrap();
        assert!((percentile_linear(&h, 99.0) - 1210.0).abs() < 1e-9);
        let mut one = new_histogram();
        one.record(7).unwrap();
        assert_eq!(percentile_linear(&one, 99.0), 7.0);
        assert_eq!(percentile_linear(&new_histogram(), 99.0), 0.0);
    }
}
