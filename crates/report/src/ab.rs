//! ApacheBench's report, CSV (`-e`) and gnuplot (`-g`) files.
//!
//! The layout follows ab 2.3's `output_results` line for line, including its rounding
//! (microseconds to milliseconds as `(t + 500) / 1000`) and its sanity warnings. The
//! connection-time table and percentiles come from stampede's histograms rather than a
//! sorted array of every request, which is why `-n 10000000` costs no more memory than
//! `-n 10000`.

use stampede_wire::date::civil_from_days;
use std::fmt::Write as _;

use hdrhistogram::Histogram;
use stampede_engine::{value_at_percentile, ErrorKind, RequestRecord, RunResult};

/// What ab prints that is not in the result: how the user invoked it.
#[derive(Debug, Clone)]
pub struct AbInfo {
    /// Host name as given in the URL.
    pub hostname: String,
    /// Port.
    pub port: u16,
    /// Document path (with query).
    pub path: String,
    /// `-c`.
    pub concurrency: u64,
    /// `-k`.
    pub keepalive: bool,
    /// `-l`: the document length may vary.
    pub variable_length: bool,
    /// A body was sent (`-p`/`-u`).
    pub sent_body: bool,
    /// `-S` not given: print mean, sd and median.
    pub confidence: bool,
    /// `-d` not given: print the percentage table.
    pub percentiles: bool,
}

/// ab's `ap_round_ms`.
fn round_ms(us: u64) -> u64 {
    (us + 500) / 1000
}

struct Row {
    min: u64,
    mean: u64,
    sd: f64,
    median: u64,
    max: u64,
}

fn row_of(h: &Histogram<u64>) -> Row {
    if h.is_empty() {
        return Row {
            min: 0,
            mean: 0,
            sd: 0.0,
            median: 0,
            max: 0,
        };
    }
    Row {
        min: round_ms(h.min()),
        mean: round_ms(h.mean() as u64),
        sd: h.stdev() / 1000.0,
        median: round_ms(value_at_percentile(h, 50.0)),
        max: round_ms(h.max()),
    }
}

/// ab's failed requests by its kinds (`Failed requests:` and the line under it).
struct Failed {
    connect: u64,
    receive: u64,
    length: u64,
    exceptions: u64,
    write_errors: u64,
    /// All of them: failed requests and length mismatches.
    bad: u64,
}

impl Failed {
    fn of(r: &RunResult) -> Failed {
        let connect: u64 = ErrorKind::ALL
            .iter()
            .filter(|k| k.is_connect())
            .map(|&k| r.errors_of(k))
            .sum();
        let write_errors = r.errors_of(ErrorKind::Write);
        let exceptions = r.errors_of(ErrorKind::Timeout);
        Failed {
            connect,
            receive: r.requests.failed - connect - write_errors - exceptions,
            length: r.requests.length_mismatch,
            exceptions,
            write_errors,
            bad: r.requests.failed + r.requests.length_mismatch,
        }
    }
}

/// The attributes of ab's HTML tables (`-x`, `-y`, `-z`).
#[derive(Debug, Clone)]
pub struct HtmlAttrs {
    /// `<table>`'s (`-x`).
    pub table: String,
    /// `<tr>`'s (`-y`).
    pub tr: String,
    /// `<td>`'s and `<th>`'s (`-z`).
    pub td: String,
}

impl Default for HtmlAttrs {
    /// ab's: none on tables and rows, `bgcolor=white` on cells.
    fn default() -> HtmlAttrs {
        HtmlAttrs {
            table: String::new(),
            tr: String::new(),
            td: "bgcolor=white".into(),
        }
    }
}

/// ab's `-w` report: its results as one HTML table with the rows and order of ab's
/// `output_html_results` (the connection-time rows as min, mean and max), values
/// escaped for HTML.
pub fn ab_html(r: &RunResult, info: &AbInfo, a: &HtmlAttrs) -> String {
    let (tr, td) = (&a.tr, &a.td);
    let mut o = format!("\n\n<table {}>\n", a.table);
    let mut row = |name: &str, value: String| {
        let _ = writeln!(
            o,
            "<tr {tr}><th colspan=2 {td}>{name}</th><td colspan=2 {td}>{}</td></tr>",
            crate::svg::esc(&value)
        );
    };
    let t = r.duration_s;
    let done = r.requests.completed;
    let f = Failed::of(r);
    let bytes = |n: u64| format!("{n} bytes");
    row(
        "Server Software:",
        r.server_software.clone().unwrap_or_default(),
    );
    row("Server Hostname:", info.hostname.clone());
    row("Server Port:", info.port.to_string());
    row("Document Path:", info.path.clone());
    row(
        "Document Length:",
        match info.variable_length {
            true => "Variable".into(),
            false => bytes(r.document_length.unwrap_or(0)),
        },
    );
    row("Concurrency Level:", info.concurrency.to_string());
    row("Time taken for tests:", format!("{t:.3} seconds"));
    row("Complete requests:", done.to_string());
    row("Failed requests:", f.bad.to_string());
    if f.bad > 0 {
        // ab's one row without a heading: the kinds of failure.
        row(
            "",
            format!(
                "(Connect: {}, Receive: {}, Length: {}, Exceptions: {})",
                f.connect, f.receive, f.length, f.exceptions
            ),
        );
    }
    if f.write_errors > 0 {
        row("Write errors:", f.write_errors.to_string());
    }
    if r.non_2xx() > 0 {
        row("Non-2xx responses:", r.non_2xx().to_string());
    }
    if info.keepalive {
        row("Keep-Alive requests:", r.requests.keepalive.to_string());
    }
    row("Total transferred:", bytes(r.bytes.read));
    if info.sent_body {
        row("Total body sent:", r.bytes.written.to_string());
    }
    row("HTML transferred:", bytes(r.bytes.body));
    if t > 0.0 && done > 0 {
        let rate = |n: u64, what: &str| format!("{:.2} kb/s {what}", n as f64 / 1024.0 / t);
        row("Requests per second:", format!("{:.2}", done as f64 / t));
        row("Transfer rate:", rate(r.bytes.read, "received"));
        if info.sent_body {
            row("&nbsp;", rate(r.bytes.written, "sent"));
            row("&nbsp;", rate(r.bytes.read + r.bytes.written, "total"));
        }
    }
    if done > 0 {
        let h = &r.histograms;
        let _ = writeln!(
            o,
            "<tr {tr}><th {td} colspan=4>Connection Times (ms)</th></tr>"
        );
        let _ = writeln!(
            o,
            "<tr {tr}><th {td}>&nbsp;</th> <th {td}>min</th>   <th {td}>avg</th>   <th {td}>max</th></tr>"
        );
        for (name, x) in [
            ("Connect:", row_of(&h.connect.0)),
            ("Processing:", row_of(&h.processing.0)),
            ("Total:", row_of(&h.latency.0)),
        ] {
            let _ = writeln!(
                o,
                "<tr {tr}><th {td}>{name}</th><td {td}>{:5}</td><td {td}>{:5}</td><td {td}>{:5}</td></tr>",
                x.min, x.mean, x.max
            );
        }
    }
    let _ = writeln!(o, "</table>");
    o
}

/// The text ab prints after "Benchmarking …": from "Server Software:" to the
/// percentage table.
///
/// Long on purpose: it prints ab's report line for line in ab's order, which scripts
/// scrape.
pub fn ab_report(r: &RunResult, info: &AbInfo) -> String {
    let mut o = String::new();
    let t = r.duration_s;
    let done = r.requests.completed;
    let _ = writeln!(o, "\n");
    let _ = writeln!(
        o,
        "Server Software:        {}",
        r.server_software.as_deref().unwrap_or("")
    );
    let _ = writeln!(o, "Server Hostname:        {}", info.hostname);
    let _ = writeln!(o, "Server Port:            {}", info.port);
    let _ = writeln!(o);
    let _ = writeln!(o, "Document Path:          {}", info.path);
    if info.variable_length {
        let _ = writeln!(o, "Document Length:        Variable");
    } else {
        let _ = writeln!(
            o,
            "Document Length:        {} bytes",
            r.document_length.unwrap_or(0)
        );
    }
    let _ = writeln!(o);
    let _ = writeln!(o, "Concurrency Level:      {}", info.concurrency);
    let _ = writeln!(o, "Time taken for tests:   {t:.3} seconds");
    let _ = writeln!(o, "Complete requests:      {done}");
    let Failed {
        connect,
        receive,
        length,
        exceptions,
        write_errors,
        bad,
    } = Failed::of(r);
    let _ = writeln!(o, "Failed requests:        {bad}");
    if bad > 0 {
        let _ = writeln!(
            o,
            "   (Connect: {connect}, Receive: {receive}, Length: {length}, Exceptions: {exceptions})"
        );
    }
    if write_errors > 0 {
        let _ = writeln!(o, "Write errors:           {write_errors}");
    }
    let non2xx = r.non_2xx();
    if non2xx > 0 {
        let _ = writeln!(o, "Non-2xx responses:      {non2xx}");
    }
    if info.keepalive {
        let _ = writeln!(o, "Keep-Alive requests:    {}", r.requests.keepalive);
    }
    let _ = writeln!(o, "Total transferred:      {} bytes", r.bytes.read);
    if info.sent_body {
        let _ = writeln!(o, "Total body sent:        {}", r.bytes.written);
    }
    let _ = writeln!(o, "HTML transferred:       {} bytes", r.bytes.body);
    if t > 0.0 && done > 0 {
        let _ = writeln!(
            o,
            "Requests per second:    {:.2} [#/sec] (mean)",
            done as f64 / t
        );
        let _ = writeln!(
            o,
            "Time per request:       {:.3} [ms] (mean)",
            info.concurrency as f64 * t * 1000.0 / done as f64
        );
        let _ = writeln!(
            o,
            "Time per request:       {:.3} [ms] (mean, across all concurrent requests)",
            t * 1000.0 / done as f64
        );
        let _ = writeln!(
            o,
            "Transfer rate:          {:.2} [Kbytes/sec] received",
            r.bytes.read as f64 / 1024.0 / t
        );
        if info.sent_body {
            let _ = writeln!(
                o,
                "                        {:.2} kb/s sent",
                r.bytes.written as f64 / 1024.0 / t
            );
            let _ = writeln!(
                o,
                "                        {:.2} kb/s total",
                (r.bytes.read + r.bytes.written) as f64 / 1024.0 / t
            );
        }
    }
    if done == 0 {
        return o;
    }
    let h = &r.histograms;
    let rows = [
        ("Connect:    ", row_of(&h.connect.0)),
        ("Processing: ", row_of(&h.processing.0)),
        ("Waiting:    ", row_of(&h.waiting.0)),
        ("Total:      ", row_of(&h.latency.0)),
    ];
    let _ = writeln!(o, "\nConnection Times (ms)");
    if info.confidence {
        let _ = writeln!(o, "              min  mean[+/-sd] median   max");
        for (name, x) in &rows {
            let _ = writeln!(
                o,
                "{name}{:5} {:4} {:5.1} {:6} {:7}",
                x.min, x.mean, x.sd, x.median, x.max
            );
        }
        let what = [
            "the initial connection time",
            "the processing time",
            "the waiting time",
            "the total time",
        ];
        for ((_, x), what) in rows.iter().zip(what) {
            let d = (x.mean as f64 - x.median as f64).abs();
            if d > 2.0 * x.sd {
                let _ = writeln!(o, "ERROR: The median and mean for {what} are more than twice the standard\n       deviation apart. These results are NOT reliable.");
            } else if d > x.sd {
                let _ = writeln!(o, "WARNING: The median and mean for {what} are not within a normal deviation\n        These results are probably not that reliable.");
            }
        }
    } else {
        let _ = writeln!(o, "              min   avg   max");
        for (name, x) in &rows {
            let _ = writeln!(o, "{name}{:5} {:5}{:5}", x.min, x.mean, x.max);
        }
    }
    if info.percentiles && done > 1 {
        let total = &h.latency.0;
        let _ = writeln!(
            o,
            "\nPercentage of the requests served within a certain time (ms)"
        );
        for p in [50u32, 66, 75, 80, 90, 95, 98, 99] {
            let v = round_ms(value_at_percentile(total, p as f64));
            let _ = writeln!(o, "  {p}%  {v:5}");
        }
        let _ = writeln!(o, " 100%  {:5} (longest request)", round_ms(total.max()));
    }
    o
}

/// ab's `-e` file: the time within which each whole percentage of requests was served.
pub fn ab_csv(r: &RunResult) -> String {
    let h = &r.histograms.latency.0;
    let mut o = String::from("Percentage served,Time in ms\n");
    for i in 0..=100u32 {
        let us = if h.is_empty() {
            0
        } else if i == 0 {
            h.min()
        } else if i == 100 {
            h.max()
        } else {
            value_at_percentile(h, i as f64)
        };
        let _ = writeln!(o, "{i},{:.3}", us as f64 / 1000.0);
    }
    o
}

/// ab's `-g` file: one line per answered request, sorted by total time as ab leaves
/// them (ab keeps no line for a request that got no response).
pub fn ab_gnuplot(records: &mut [RequestRecord]) -> String {
    records.sort_by_key(|r| r.total_us);
    let mut o = String::from("starttime\tseconds\tctime\tdtime\tttime\twait\n");
    for r in records.iter().filter(|r| r.status != 0) {
        let secs = r.start_unix_us / 1_000_000;
        let _ = writeln!(
            o,
            "{}\t{}\t{}\t{}\t{}\t{}",
            ctime(secs),
            secs,
            round_ms(r.connect_us),
            round_ms(r.total_us.saturating_sub(r.connect_us)),
            round_ms(r.total_us),
            round_ms(r.waiting_us)
        );
    }
    o
}

/// `apr_ctime`'s format in UTC: `Sun Nov 22 10:04:05 2026`.
fn ctime(unix_s: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = unix_s / 86_400;
    let rem = unix_s % 86_400;
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{} {} {:2} {:02}:{:02}:{:02} {}",
        DAYS[(days % 7) as usize],
        MONTHS[(m - 1) as usize],
        d,
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        y
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctime_matches_c() {
        assert_eq!(ctime(0), "Thu Jan  1 00:00:00 1970");
        assert_eq!(ctime(1_795_000_000), "Wed Nov 18 11:06:40 2026");
    }

    #[test]
    fn ab_rounding() {
        assert_eq!(round_ms(499), 0);
        assert_eq!(round_ms(500), 1);
        assert_eq!(round_ms(1_877_600), 1878);
    }
}
