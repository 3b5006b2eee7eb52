//! Machine-readable outputs of one run: HdrHistogram's percentile distribution text
//! (`.hgrm`), its interval log (`.hlog`, format 1.3), and the per-second series as CSV.
//!
//! The interval log is what lets runs from many machines be merged later: each second
//! is one line per tag (`corrected`: latency from the intended start; `uncorrected`:
//! from the actual send) holding the base64 of a compressed V2 histogram, as the Java
//! reference implementation's `HistogramLogWriter` writes them.

use std::fmt::Write as _;

use stampede_engine::RunResult;

use crate::wrk::percentile_table;

/// The corrected latency's percentile distribution in milliseconds, in the classic
/// HdrHistogram text form that wrk2 prints and HdrHistogram's plotter reads.
pub fn hgrm(r: &RunResult) -> String {
    percentile_table(&r.histograms.latency.0, 1000.0)
}

/// The interval log: one line per second and tag. Values are microseconds;
/// `Interval_Max` is in milliseconds.
pub fn hlog(r: &RunResult) -> String {
    let start = r.started_unix_ms as f64 / 1000.0;
    let mut o = String::new();
    let _ = writeln!(o, "#[Histogram log format version 1.3]");
    let _ = writeln!(o, "#[StartTime: {start:.3} (seconds since epoch)]");
    let _ = writeln!(o, "#[BaseTime: {start:.3} (seconds since epoch)]");
    let _ = writeln!(
        o,
        "#[stampede {}: {} against {}; values in microseconds, Interval_Max in milliseconds; tags: corrected = from the intended start, uncorrected = from the actual send]",
        r.version, r.settings.shape, r.settings.url
    );
    let _ = writeln!(
        o,
        "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\""
    );
    for iv in &r.intervals {
        let len = (r.duration_s - iv.t as f64).clamp(0.001, 1.0);
        for (tag, enc, max) in [
            ("corrected", &iv.histogram, iv.latency.max_us),
            (
                "uncorrected",
                &iv.histogram_uncorrected,
                iv.decode_uncorrected().map_or(0, |h| h.0.max()),
            ),
        ] {
            let _ = writeln!(
                o,
                "Tag={tag},{:.3},{len:.3},{:.3},{enc}",
                iv.t as f64,
                max as f64 / 1000.0
            );
        }
    }
    o
}

/// The per-second series: completions, failures, bytes, latency percentiles
/// (corrected, µs) and the most connections, requests in flight and users at once.
pub fn series_csv(r: &RunResult) -> String {
    let mut o =
        String::from("second,completed,failed,bytes_read,p50_us,p90_us,p99_us,p999_us,max_us,connections,in_flight,users\n");
    for iv in &r.intervals {
        let p = |q: f64| iv.latency.at(q).unwrap_or(0);
        let _ = writeln!(
            o,
            "{},{},{},{},{},{},{},{},{},{},{},{}",
            iv.t,
            iv.completed,
            iv.failed,
            iv.bytes_read,
            p(50.0),
            p(90.0),
            p(99.0),
            p(99.9),
            iv.latency.max_us,
            iv.connections,
            iv.in_flight,
            iv.users
        );
    }
    o
}

/// One JUnit test case: a suite-level class name, the case's name, and a failure
/// message when it failed.
pub struct JunitCase {
    /// Groups cases (the target and scenario, or the URL).
    pub class: String,
    /// The assertion as written.
    pub name: String,
    /// `None` when it passed; what was measured when it failed.
    pub failure: Option<String>,
}

fn xml_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => {}
            c => o.push(c),
        }
    }
    o
}

/// JUnit XML, as CI systems read it: one `<testsuite>` of assertions.
pub fn junit(suite: &str, cases: &[JunitCase]) -> String {
    let failures = cases.iter().filter(|c| c.failure.is_some()).count();
    let mut o = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        o,
        "<testsuites tests=\"{}\" failures=\"{failures}\">\n  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\">",
        cases.len(),
        xml_escape(suite),
        cases.len()
    );
    for c in cases {
        let _ = write!(
            o,
            "    <testcase classname=\"{}\" name=\"{}\"",
            xml_escape(&c.class),
            xml_escape(&c.name)
        );
        match &c.failure {
            None => o.push_str("/>\n"),
            Some(f) => {
                let _ = writeln!(
                    o,
                    ">\n      <failure message=\"{}\">{}</failure>\n    </testcase>",
                    xml_escape(f),
                    xml_escape(f)
                );
            }
        }
    }
    o.push_str("  </testsuite>\n</testsuites>\n");
    o
}
