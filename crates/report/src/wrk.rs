//! wrk's report, and wrk2's HdrHistogram latency distribution for `--latency`.
//!
//! The layout and unit scaling follow wrk's `main.c` and `units.c`; the `--latency`
//! section is wrk's four percentiles, or with wrk2's `-R` wrk2's `print_hdr_latency`
//! with HdrHistogram's classic percentile table, as each tool prints it.
//! One difference is stated in the header line of Req/Sec: its samples are per second
//! and per thread (wrk samples every 100 ms per thread).

use std::fmt::Write as _;

use hdrhistogram::Histogram;
use stampede_engine::{value_at_percentile, ErrorKind, RunResult};

use crate::units::{wrk_binary, wrk_metric, wrk_time_s, wrk_time_us, wrk_units};

/// What wrk prints that is not in the result.
#[derive(Debug, Clone)]
pub struct WrkInfo {
    /// The URL as given.
    pub url: String,
    /// `-t`.
    pub threads: u64,
    /// `-c`.
    pub connections: u64,
    /// `-d` in seconds.
    pub duration_s: f64,
    /// `--latency`.
    pub latency: bool,
    /// wrk2's `-U`: also print the uncorrected latency distribution.
    pub uncorrected: bool,
    /// wrk2's `-R` was given: `--latency` prints wrk2's HdrHistogram distribution and
    /// spectrum; without it, wrk's four percentiles.
    pub wrk2: bool,
}

fn stats_row(o: &mut String, name: &str, mean: String, sd: String, max: String, within: f64) {
    let _ = writeln!(
        o,
        "    {name:<10}{}{}{}{within:8.2}%",
        wrk_units(&mean, 8),
        wrk_units(&sd, 10),
        wrk_units(&max, 9)
    );
}

/// Percentage of samples within one standard deviation of the mean.
pub(crate) fn within_stdev(h: &Histogram<u64>) -> f64 {
    if h.is_empty() {
        return 0.0;
    }
    let (m, s) = (h.mean(), h.stdev());
    let lo = (m - s).max(0.0).ceil() as u64;
    let hi = (m + s).floor() as u64;
    if hi < lo {
        return 0.0;
    }
    let n = h.count_between(lo, hi);
    100.0 * n as f64 / h.len() as f64
}

/// wrk's report for a finished run.
///
/// Long on purpose: it prints wrk's report line for line in wrk's order, which scripts
/// scrape.
pub fn wrk_report(r: &RunResult, info: &WrkInfo) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "Running {} test @ {}",
        wrk_time_s(info.duration_s),
        info.url
    );
    let _ = writeln!(
        o,
        "  {} threads and {} connections",
        info.threads, info.connections
    );
    let lat = &r.histograms.latency.0;
    let _ = writeln!(
        o,
        "  Thread Stats{:>6}{:>11}{:>8}{:>12}",
        "Avg", "Stdev", "Max", "+/- Stdev"
    );
    if lat.is_empty() {
        stats_row(
            &mut o,
            "Latency",
            "0.00us".into(),
            "0.00us".into(),
            "0.00us".into(),
            0.0,
        );
    } else {
        stats_row(
            &mut o,
            "Latency",
            wrk_time_us(lat.mean()),
            wrk_time_us(lat.stdev()),
            wrk_time_us(lat.max() as f64),
            within_stdev(lat),
        );
    }
    let samples = req_sec_samples(r, info.threads);
    let (mean, sd, max, within) = sample_stats(&samples);
    stats_row(
        &mut o,
        "Req/Sec",
        wrk_metric(mean),
        wrk_metric(sd),
        wrk_metric(max),
        within,
    );
    if info.latency && !info.wrk2 {
        // wrk's own `--latency`: four percentiles.
        let _ = writeln!(o, "  Latency Distribution");
        for p in [50.0, 75.0, 90.0, 99.0f64] {
            let v = value_at_percentile(lat, p);
            let _ = writeln!(o, "{p:7.0}%{}", wrk_units(&wrk_time_us(v as f64), 10));
        }
    } else if info.latency {
        hdr_latency(&mut o, lat, "Recorded Latency");
        let _ = writeln!(
            o,
            "----------------------------------------------------------"
        );
        if info.uncorrected {
            hdr_latency(
                &mut o,
                &r.histograms.uncorrected.0,
                "Uncorrected Latency (measured without taking delayed starts into account)",
            );
            let _ = writeln!(
                o,
                "----------------------------------------------------------"
            );
        }
    }
    let _ = writeln!(
        o,
        "  {} requests in {}, {}B read",
        r.requests.completed,
        wrk_time_us(r.duration_s * 1e6),
        wrk_binary(r.bytes.read as f64)
    );
    let [connect, read, write, timeout] = socket_errors(r);
    if connect + read + write + timeout > 0 {
        let _ = writeln!(
            o,
            "  Socket errors: connect {connect}, read {read}, write {write}, timeout {timeout}"
        );
    }
    let status = r.non_2xx_3xx();
    if status > 0 {
        let _ = writeln!(o, "  Non-2xx or 3xx responses: {status}");
    }
    let t = r.duration_s.max(f64::MIN_POSITIVE);
    let _ = writeln!(o, "Requests/sec: {:9.2}", r.requests.completed as f64 / t);
    let _ = writeln!(
        o,
        "Transfer/sec: {:>10}B",
        wrk_binary(r.bytes.read as f64 / t)
    );
    o
}

/// wrk's Req/Sec samples: each thread's rate in each full second of the run (also the
/// `requests` statistics a script's `done` gets).
pub fn req_sec_samples(r: &RunResult, threads: u64) -> Vec<f64> {
    let threads = threads.max(1) as f64;
    let full = (r.duration_s.floor() as u32).max(1);
    r.intervals
        .iter()
        .filter(|iv| iv.t < full)
        .map(|iv| iv.completed as f64 / threads)
        .collect()
}

/// wrk's socket errors of a run: connect, read, write and timeout (every failure that
/// is not a connect, write or timeout failure counts as a read error, as in wrk).
pub fn socket_errors(r: &RunResult) -> [u64; 4] {
    let connect: u64 = ErrorKind::ALL
        .iter()
        .filter(|k| k.is_connect())
        .map(|&k| r.errors_of(k))
        .sum();
    let write = r.errors_of(ErrorKind::Write);
    let timeout = r.errors_of(ErrorKind::Timeout);
    let read = r.requests.failed - connect - write - timeout;
    [connect, read, write, timeout]
}

fn sample_stats(s: &[f64]) -> (f64, f64, f64, f64) {
    if s.is_empty() {
        return (0.0, 0.0, 0.0, 0.0);
    }
    let n = s.len() as f64;
    let mean = s.iter().sum::<f64>() / n;
    let sd = if s.len() > 1 {
        (s.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    let max = s.iter().cloned().fold(0.0, f64::max);
    let within = s.iter().filter(|x| (*x - mean).abs() <= sd).count() as f64 * 100.0 / n;
    (mean, sd, max, within)
}

/// wrk2's `print_hdr_latency`: headline percentiles, then the classic HdrHistogram
/// percentile table with values in milliseconds.
pub fn hdr_latency(o: &mut String, h: &Histogram<u64>, description: &str) {
    let _ = writeln!(o, "  Latency Distribution (HdrHistogram - {description})");
    for p in [50.0, 75.0, 90.0, 99.0, 99.9, 99.99, 99.999, 100.0f64] {
        let v = value_at_percentile(h, p);
        let _ = writeln!(o, "{p:7.3}%{}", wrk_units(&wrk_time_us(v as f64), 10));
    }
    let _ = writeln!(o, "\n  Detailed Percentile spectrum:");
    o.push_str(&percentile_table(h, 1000.0));
}

/// HdrHistogram's classic percentile distribution text (`.hgrm`), five ticks per half
/// distance, values divided by `scale` (1000 turns µs into ms).
pub fn percentile_table(h: &Histogram<u64>, scale: f64) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{:>12} {:>12} {:>12} {:>12}\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    );
    let mut total = 0u64;
    if !h.is_empty() {
        for v in h.iter_quantiles(5) {
            total += v.count_since_last_iteration();
            let q = v.quantile_iterated_to();
            let value = h.highest_equivalent(v.value_iterated_to()) as f64 / scale;
            if q < 1.0 {
                let _ = writeln!(
                    o,
                    "{value:12.3} {q:12.6} {total:12} {:12.2}",
                    1.0 / (1.0 - q)
                );
            } else {
                let _ = writeln!(o, "{value:12.3} {q:12.6} {total:12} {:>12}", "inf");
            }
        }
    }
    let (mean, sd, max) = if h.is_empty() {
        (0.0, 0.0, 0.0)
    } else {
        (h.mean() / scale, h.stdev() / scale, h.max() as f64 / scale)
    };
    let _ = writeln!(o, "#[Mean    = {mean:12.3}, StdDeviation   = {sd:12.3}]");
    let _ = writeln!(
        o,
        "#[Max     = {max:12.3}, Total count    = {:12}]",
        h.len()
    );
    let _ = writeln!(
        o,
        "#[Buckets = {:12}, SubBuckets     = {:12}]",
        h.buckets(),
        2048
    );
    o
}
