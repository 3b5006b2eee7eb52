//! The batching engine's truth, request by request (`serve --llm-truth FILE`): a JSON
//! line for each completion it finishes, with the time from its arrival to its first
//! token and to its end and every gap between its tokens, as the engine scheduled
//! them. `/metrics` carries sums, counts and coarse buckets only; a benchmark that
//! compares a client's percentiles with the server's reads them here.
//!
//! Lines are gathered per engine step and appended in one write, so the engines of
//! several threads never interleave within a line. A write that fails is counted
//! (`failed`) and the serving goes on.

use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// Where the engines append their finished requests.
#[derive(Debug)]
pub struct TruthLog {
    file: std::fs::File,
    failed: AtomicU64,
}

impl TruthLog {
    /// Creates (or empties) `path` and appends to it from then on.
    pub fn create(path: &std::path::Path) -> std::io::Result<TruthLog> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(path)?;
        // Reopened to append: a reader may empty the file between runs.
        drop(file);
        let file = std::fs::OpenOptions::new().append(true).open(path)?;
        Ok(TruthLog {
            file,
            failed: AtomicU64::new(0),
        })
    }

    /// Appends `lines` whole.
    pub fn append(&self, lines: &str) {
        if (&self.file).write_all(lines.as_bytes()).is_err() {
            self.failed.fetch_add(1, Relaxed);
        }
    }

    /// Writes that failed.
    pub fn failed(&self) -> u64 {
        self.failed.load(Relaxed)
    }
}

/// One finished request's line: `{"ttft_ms":…,"e2e_ms":…,"tokens":…,"itl_ms":[…]}`,
/// milliseconds to the microsecond.
pub fn line(out: &mut String, ttft: Duration, e2e: Duration, gaps: &[Duration]) {
    let ms = |d: Duration| d.as_micros() as f64 / 1000.0;
    let _ = write!(
        out,
        "{{\"ttft_ms\":{},\"e2e_ms\":{},\"tokens\":{},\"itl_ms\":[",
        ms(ttft),
        ms(e2e),
        gaps.len() + 1
    );
    for (i, g) in gaps.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{}", ms(*g));
    }
    out.push_str("]}\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_json_in_milliseconds() {
        let mut s = String::new();
        let ms = Duration::from_micros;
        line(&mut s, ms(30_000), ms(50_250), &[ms(10_000), ms(10_250)]);
        assert_eq!(
            s,
            "{\"ttft_ms\":30,\"e2e_ms\":50.25,\"tokens\":3,\"itl_ms\":[10,10.25]}\n"
        );
        let v: serde_json::Value = serde_json::from_str(s.trim()).unwrap();
        assert_eq!(v["itl_ms"][1], 10.25);
    }
}
