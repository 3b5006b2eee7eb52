//! `stampede merge`: the results of a run's segments (or of whole runs) as one result,
//! exactly, and every output a run can write from it.
//!
//! Inputs are `--json` results, or HdrHistogram interval logs (`.hlog`), whose latency
//! histograms and seconds merge with each other's (they hold no other counts). The
//! merge itself is `stampede_engine::merge`: histograms
//! added, counters summed, seconds aligned by wall clock, rates over the union of the
//! windows. Results that are not parts of one run (another URL, method, load shape or
//! stampede version, or a segment given twice) are refused unless `--force`.

use clap::{Args, ValueEnum};
use stampede_engine::assert::Assertion;
use stampede_engine::merge::{from_hlog, Merger};
use stampede_engine::RunResult;
use stampede_report::{
    ab_report, gatling_report, h2load_report, httperf_report, loud_warnings, summary, wrk_report,
    AbInfo, GatlingBounds, H2loadInfo, HttperfInfo, WrkInfo,
};

use crate::colour::{paint, Stream};
use crate::common::{self, Exit};

/// The report printed for the merged result.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Report {
    /// stampede's summary.
    Text,
    /// ApacheBench's report.
    Ab,
    /// wrk's report (with its latency distribution).
    Wrk,
    /// httperf's report.
    Httperf,
    /// h2load's report.
    H2load,
    /// Gatling's console summary.
    Gatling,
}

/// Arguments of `stampede merge`.
#[derive(Args, Debug)]
pub struct MergeArgs {
    /// Results to merge: the `--json` files of a run's segments (or of whole runs), or
    /// interval logs (`.hlog`, stampede's `--hlog` or another tool's) with each other
    #[arg(value_name = "FILE", required = true, num_args = 1..)]
    pub files: Vec<String>,
    /// Merge even results of different URLs, methods, load shapes or versions
    #[arg(long = "force")]
    pub force: bool,
    /// The report printed: stampede's summary or a dialect's
    #[arg(long = "format", value_enum, default_value = "text")]
    pub format: Report,
    #[command(flatten)]
    pub out: common::Outputs,
}

/// Reads, merges, reports.
pub fn main(a: MergeArgs) -> Result<(), Exit> {
    let asserts = a.out.assertions()?;
    a.out.check_paths()?;
    // One file at a time: memory does not grow with the number of results.
    let mut merger = Merger::new(a.force);
    for f in &a.files {
        merger
            .add(&read(f)?)
            .map_err(|e| Exit::usage(format!("{f}: {e}")))?;
    }
    let r = merger.finish().map_err(|e| Exit::usage(e.to_string()))?;
    eprintln!(
        "stampede: merged {} result(s){}",
        a.files.len(),
        if r.origin.parts.len() <= 8 {
            format!(": {}", r.origin.parts.join(", "))
        } else {
            String::new()
        }
    );
    emit(&r, a.format, &a.out, &asserts)
}

/// Prints a merged result in `format` (or, with `--json -`, the result itself), writes
/// every file `out` asks for, and checks the assertions.
pub fn emit(
    r: &RunResult,
    format: Report,
    out: &common::Outputs,
    asserts: &[Assertion],
) -> Result<(), Exit> {
    emit_with(r, |r| print(r, format), out, asserts)
}

/// Prints `r` as `format` reports it.
pub fn print(r: &RunResult, format: Report) -> Result<(), Exit> {
    common::out(&paint(&report(r, format), Stream::Out));
    Ok(())
}

/// [`emit`], the report printed by `show` (a dialect's own, from its command line).
pub fn emit_with(
    r: &RunResult,
    show: impl FnOnce(&RunResult) -> Result<(), Exit>,
    out: &common::Outputs,
    asserts: &[Assertion],
) -> Result<(), Exit> {
    let mut w = common::Writes::default();
    match out.json.as_deref() {
        Some("-") => common::out(&(r.to_json() + "\n")),
        Some(path) => {
            show(r)?;
            w.file(path, &(r.to_json() + "\n"));
        }
        None => show(r)?,
    }
    for w in loud_warnings(r) {
        eprintln!("stampede: {w}");
    }
    out.write_files(r, &mut w);
    if let Some(p) = &out.html {
        let title = format!("{} {} (merged)", r.settings.method, r.settings.url);
        w.file(p, &stampede_report::run_html(r, &title, None));
    }
    let asserted = common::check_assertions(asserts, r, &r.settings.url, out.junit.as_deref());
    w.done().and(asserted)
}

/// One result file (`--json`, or an interval log ending in `.hlog`), with its name in
/// any error.
pub fn read(path: &str) -> Result<RunResult, Exit> {
    let bytes = stampede_engine::input::read(path, "result", stampede_engine::input::Input::Result)
        .map_err(|e| Exit::usage(e.to_string()))?;
    if path.ends_with(".hlog") {
        return from_hlog(&bytes).map_err(|e| Exit::usage(format!("{path}: {e}")));
    }
    serde_json::from_slice(&bytes)
        .map_err(|e| Exit::usage(format!("{path} is not a stampede result (--json): {e}")))
}

/// The merged result in the chosen report's form; what a dialect's report needs that
/// a result does not hold (its command line, CPU) is said plainly instead.
fn report(r: &RunResult, format: Report) -> String {
    let (host, port, path) = url_parts(&r.settings.url);
    match format {
        Report::Text => summary(r),
        Report::Gatling => gatling_report(r, GatlingBounds::default()),
        Report::Ab => ab_report(
            r,
            &AbInfo {
                hostname: host,
                port,
                path,
                concurrency: r.settings.connections,
                keepalive: r.settings.keepalive,
                variable_length: false,
                sent_body: false,
                confidence: true,
                percentiles: true,
            },
        ),
        Report::Wrk => wrk_report(
            r,
            &WrkInfo {
                url: r.settings.url.clone(),
                threads: r.settings.threads,
                connections: r.settings.connections,
                duration_s: r.duration_s,
                latency: true,
                uncorrected: false,
                wrk2: r.open.is_some(),
            },
        ),
        Report::Httperf => httperf_report(
            r,
            &HttperfInfo {
                command: format!("stampede merge of {}", r.origin.parts.join(", ")),
                cpu: None,
                sessions: r.sessions.is_some(),
            },
        ),
        Report::H2load => h2load_report(
            r,
            &H2loadInfo {
                threads: r.settings.threads,
                clients: r.settings.connections,
                requests: r.settings.requests,
                protocol: match (&r.protocols.tls, r.settings.http2) {
                    (Some(t), true) => t.alpn.clone().unwrap_or_else(|| "h2".into()),
                    (None, true) => "h2c".into(),
                    _ => "http/1.1".into(),
                },
            },
        ),
    }
}

/// Host, port and path of a result's URL, without resolving anything.
fn url_parts(url: &str) -> (String, u16, String) {
    let (scheme, rest) = url.split_once("://").unwrap_or(("http", url));
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let default = if scheme == "https" { 443 } else { 80 };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || authority.starts_with('[') => {
            (h.to_string(), p.parse().unwrap_or(default))
        }
        _ => (authority.to_string(), default),
    };
    (host, port, path.to_string())
}

#[cfg(test)]
mod tests {
    use super::url_parts;

    #[test]
    fn urls_split_without_resolving() {
        assert_eq!(
            url_parts("http://example.test:8080/a?b=1"),
            ("example.test".into(), 8080, "/a?b=1".into())
        );
        assert_eq!(
            url_parts("https://example.test"),
            ("example.test".into(), 443, "/".into())
        );
        assert_eq!(
            url_parts("http://[::1]:9/x"),
            ("[::1]".into(), 9, "/x".into())
        );
    }
}
