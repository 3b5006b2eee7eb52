//! The send stamp a message may begin with, so that whoever receives it can time it
//! from when it was due and from when it went out — a pushed or broadcast message,
//! which answers no request, timed one by one.
//!
//! A stamp is 43 ASCII bytes (so a text message stays UTF-8): `stampede:`, the time
//! the message was due and the time it was sent, each as nanoseconds since the Unix
//! epoch in 16 lowercase hex digits, separated by `:` and followed by a space:
//! `stampede:18a3f0c2b4d5e6f7:18a3f0c2b4d5f001 `. The times are the sender's clock:
//! on one machine sender and receiver read the same one; across machines the
//! figures hold as far as the clocks agree. Each process reads the Unix time once
//! ([`unix_ns`]) and counts from it on the monotonic clock, so a step of the wall
//! clock during a run moves no stamp.

use std::sync::OnceLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// A stamp's length in bytes.
pub const LEN: usize = 43;
/// What every stamp begins with.
pub const TAG: &[u8; 9] = b"stampede:";

/// When a stamped message was due and when it was sent, ns since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stamp {
    pub due_ns: u64,
    pub sent_ns: u64,
}

impl Stamp {
    /// The stamp's bytes.
    pub fn encode(self) -> [u8; LEN] {
        let mut out = [0u8; LEN];
        out[..TAG.len()].copy_from_slice(TAG);
        hex16(&mut out[9..25], self.due_ns);
        out[25] = b':';
        hex16(&mut out[26..42], self.sent_ns);
        out[42] = b' ';
        out
    }

    /// The stamp `data` begins with, if it begins with one.
    pub fn read(data: &[u8]) -> Option<Stamp> {
        let s = data.get(..LEN)?;
        if &s[..9] != TAG || s[25] != b':' || s[42] != b' ' {
            return None;
        }
        Some(Stamp {
            due_ns: unhex16(&s[9..25])?,
            sent_ns: unhex16(&s[26..42])?,
        })
    }
}

fn hex16(out: &mut [u8], v: u64) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for (i, b) in out.iter_mut().enumerate() {
        *b = DIGITS[((v >> (60 - 4 * i)) & 0xf) as usize];
    }
}

fn unhex16(s: &[u8]) -> Option<u64> {
    s.iter().try_fold(0u64, |v, &b| {
        let d = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            _ => return None,
        };
        Some(v << 4 | u64::from(d))
    })
}

/// The Unix time of `at`, in ns: the process's first reading of the wall clock, moved
/// by the monotonic clock's difference (an instant before that reading counts back
/// from it).
pub fn unix_ns(at: Instant) -> u64 {
    static ANCHOR: OnceLock<(Instant, u64)> = OnceLock::new();
    let (then, ns) = *ANCHOR.get_or_init(|| {
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        (Instant::now(), wall)
    });
    match at.checked_duration_since(then) {
        Some(d) => ns.saturating_add(d.as_nanos() as u64),
        None => ns.saturating_sub(then.duration_since(at).as_nanos() as u64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_reads_back_and_anything_else_is_not_one() {
        let s = Stamp {
            due_ns: 1_790_000_000_123_456_789,
            sent_ns: u64::MAX,
        };
        let b = s.encode();
        assert_eq!(&b[..], b"stampede:18d75b842b4ecd15:ffffffffffffffff ");
        assert_eq!(Stamp::read(&b), Some(s));
        let mut longer = b.to_vec();
        longer.extend_from_slice(b"payload");
        assert_eq!(Stamp::read(&longer), Some(s));
        assert_eq!(Stamp::read(&b[..LEN - 1]), None);
        for at in [0, 9, 20, 25, 30, 42] {
            let mut bad = b;
            bad[at] = b'G';
            assert_eq!(Stamp::read(&bad), None, "byte {at} spoilt");
        }
        assert!(std::str::from_utf8(&b).is_ok());
    }

    #[test]
    fn the_clock_counts_on_from_one_reading() {
        let a = Instant::now();
        let ns = unix_ns(a);
        let later = a + std::time::Duration::from_millis(5);
        assert_eq!(unix_ns(later) - ns, 5_000_000);
        let earlier = a.checked_sub(std::time::Duration::from_millis(3));
        if let Some(e) = earlier {
            assert_eq!(ns - unix_ns(e), 3_000_000);
        }
        // Within a few seconds of the wall clock now.
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        assert!(wall.abs_diff(unix_ns(Instant::now())) < 5_000_000_000);
    }
}
