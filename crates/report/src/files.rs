//! Machine-readable outputs of one run: HdrHistogram's percentile distribution text
//! (`.hgrm`), its interval log (`.hlog`, format 1.3), and the per-second series as CSV.
//!
//! The interval log is what lets runs from many machines be merged later: each second
//! is one line per tag (`corrected`: latency from the intended start; `uncorrected`:
//! from the actual send) holding the base64 of a compressed V2 histogram, as the Java
//! reference implementation's `HistogramLogWriter` writes them; the hdrhistogram
//! crate's interval-log writer writes it.

use std::fmt::Write as _;
use std::time::{Duration, UNIX_EPOCH};

use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use stampede_engine::RunResult;

use crate::wrk::percentile_table;

/// The corrected latency's percentile distribution in milliseconds, in the classic
/// HdrHistogram text form that wrk2 prints and HdrHistogram's plotter reads.
pub fn hgrm(r: &RunResult) -> String {
    percentile_table(&r.histograms.latency.0, 1000.0)
}

/// The interval log: one line per second and tag, written by the hdrhistogram crate's
/// interval-log writer. Values are microseconds; `Interval_Max` is in milliseconds
/// (the writer's max-value divisor, which it notes in the header).
pub fn hlog(r: &RunResult) -> String {
    let start = UNIX_EPOCH + Duration::from_millis(r.started_unix_ms);
    let mut out = Vec::new();
    let mut serializer = V2DeflateSerializer::new();
    let mut header = IntervalLogWriterBuilder::new();
    header
        .add_comment("[Histogram log format version 1.3]")
        .add_comment(&format!(
            "[stampede {}: {} against {}; values in microseconds, Interval_Max in milliseconds; tags: corrected = from the intended start, uncorrected = from the actual send]",
            r.version, r.settings.shape, r.settings.url
        ))
        .with_start_time(start)
        .with_base_time(start)
        .with_max_value_divisor(1000.0);
    header
        .begin_log_with(&mut out, &mut serializer)
        .expect("writing to memory cannot fail");
    // The column legend, as Java's HistogramLogWriter writes it (readers skip it).
    out.extend_from_slice(
        b"\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n",
    );
    let mut log = IntervalLogWriterBuilder::new()
        .begin_log_with(&mut out, &mut serializer)
        .expect("writing to memory cannot fail");
    for iv in &r.intervals {
        let len = Duration::from_secs_f64((r.duration_s - iv.t as f64).clamp(0.001, 1.0));
        let at = Duration::from_secs(u64::from(iv.t));
        for (tag, hist) in [
            ("corrected", iv.decode_histogram()),
            ("uncorrected", iv.decode_uncorrected()),
        ] {
            // Intervals are this process's own encoding: they decode.
            let Ok(hist) = hist else { continue };
            log.write_histogram(&hist.0, at, len, Tag::new(tag))
                .expect("writing to memory cannot fail");
        }
    }
    String::from_utf8(out).expect("the log is ASCII")
}

/// The seconds a per-second view shows: all of them but a last one that covers less
/// than half a second of a run of `duration_s` (the answers that came after the run's
/// end, or a sliver of one), which says little per second and is no second of the
/// run. The JSON and the totals keep it; the terminal's lines, the CSV series and the
/// HTML charts leave it out alike.
pub fn shown_seconds(
    intervals: &[stampede_engine::Interval],
    duration_s: f64,
) -> &[stampede_engine::Interval] {
    match intervals.split_last() {
        Some((last, rest)) if !rest.is_empty() && sliver(last.t, duration_s) => rest,
        _ => intervals,
    }
}

/// Whether second `t` of a run `duration_s` long begins less than half a second
/// before its end: the answers that came after it, no second of the run.
pub fn sliver(t: u32, duration_s: f64) -> bool {
    duration_s - f64::from(t) < 0.5
}
/// The per-second series: completions, failures, bytes, latency percentiles
/// (corrected, µs) and the most connections, requests in flight and users at once.
pub fn series_csv(r: &RunResult) -> String {
    let mut o =
        String::from("second,completed,failed,bytes_read,p50_us,p90_us,p99_us,p999_us,max_us,connections,in_flight,users\n");
    for iv in shown_seconds(&r.intervals, r.duration_s) {
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

/// A CSV field, quoted when it holds a comma, a quote or a line break.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The figures per target as CSV: one row per request of the run, its statuses and
/// failures as `code:count` lists separated by spaces. Only a header for a run of one
/// request.
pub fn targets_csv(r: &RunResult) -> String {
    let mut o = String::from(
        "request,completed,failed,p50_us,p90_us,p99_us,p999_us,max_us,mean_us,statuses,errors\n",
    );
    for t in &r.targets {
        let l = &t.latency;
        let p = |q: f64| l.at(q).unwrap_or(0);
        let list = |items: Vec<String>| items.join(" ");
        let _ = writeln!(
            o,
            "{},{},{},{},{},{},{},{},{:.0},{},{}",
            csv_field(&t.name),
            t.completed,
            t.failed,
            p(50.0),
            p(90.0),
            p(99.0),
            p(99.9),
            l.max_us,
            l.mean_us,
            list(t.statuses.iter().map(|(c, n)| format!("{c}:{n}")).collect()),
            list(t.errors.iter().map(|(k, n)| format!("{k}:{n}")).collect()),
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
