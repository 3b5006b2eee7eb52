//! `stampede wrk`'s command line: wrk's and wrk2's flags, translated into a run of
//! stampede's engine.
//!
//! The request is wrk's default (`GET path HTTP/1.1` with a Host header and any `-H`
//! headers); `--latency` prints wrk2's HdrHistogram distribution. `-R` is wrk2's fixed
//! rate, exact from the first request (no calibration period), and `-U` adds the
//! uncorrected distribution. `-s script.lua` runs a wrk Lua script (arguments after
//! `--` go to its `init`) through `stampede-script`: its request replaces the flags'
//! one, its hooks run on the worker threads, and its `done` after the report.

use stampede_engine::input::{self, Input};

use clap::{ArgAction, Parser};
use stampede_engine::{LoadSpec, RequestBuilder, Shape, Target};
use stampede_report::WrkInfo;

use crate::args as common;
use crate::dialect::Dialect;
use crate::CommandLine;
use crate::FlagError;

/// wrk's and wrk2's command line: every flag of their usage is taken.
pub const DIALECT: Dialect = Dialect {
    tool: "wrk",
    refused: &[],
    inert: &[],
    prefixes: false,
    go: false,
};

#[derive(Parser, Debug)]
#[command(
    name = "stampede wrk",
    version,
    about = "wrk-compatible load test (wrk's flags and report)",
    disable_version_flag = true
)]
pub struct WrkArgs {
    /// Connections to keep open
    #[arg(short = 'c', long = "connections", value_name = "N", default_value = "10", value_parser = common::parse_metric)]
    pub connections: u64,
    /// Duration of test
    #[arg(short = 'd', long = "duration", value_name = "T", default_value = "10s", value_parser = common::parse_duration)]
    pub duration: std::time::Duration,
    /// Number of threads to use
    #[arg(short = 't', long = "threads", value_name = "N", default_value = "2", value_parser = common::parse_metric)]
    pub threads: u64,
    /// Load Lua script file
    #[arg(short = 's', long = "script", value_name = "S")]
    pub script: Option<String>,
    /// Add header to request
    #[arg(short = 'H', long = "header", value_name = "H", action = ArgAction::Append)]
    pub headers: Vec<String>,
    /// Print latency statistics
    #[arg(short = 'L', long = "latency")]
    pub latency: bool,
    /// Socket/request timeout
    #[arg(short = 'T', long = "timeout", value_name = "T", default_value = "2s", value_parser = common::parse_duration)]
    pub timeout: std::time::Duration,
    /// wrk2's constant throughput: requests/s for the whole run, latency corrected for
    /// coordinated omission
    #[arg(short = 'R', long = "rate", value_name = "R", value_parser = common::parse_metric)]
    pub rate: Option<u64>,
    /// wrk2's batch latency: with --pipeline, time each batch once, at its last
    /// response (the others are counted, not timed)
    #[arg(short = 'B', long = "batch_latency")]
    pub batch_latency: bool,
    /// wrk2's uncorrected latency histogram
    #[arg(short = 'U', long = "u_latency")]
    pub u_latency: bool,
    /// Requests per pipelined write (stampede; replaces wrk's pipeline.lua)
    #[arg(long = "pipeline", value_name = "N", default_value_t = 1)]
    pub pipeline: usize,
    /// Request body from a file (stampede; replaces scripts that set wrk.body)
    #[arg(long = "body-file", value_name = "FILE")]
    pub body_file: Option<String>,
    /// Request method (stampede; replaces scripts that set wrk.method)
    #[arg(short = 'm', long = "method", value_name = "M", default_value = "GET")]
    pub method: String,
    /// Print version details
    #[arg(short = 'v', long = "version", action = ArgAction::Version)]
    pub _version: Option<bool>,
    /// The URL to load
    #[arg(value_name = "URL")]
    pub url: String,
    /// Arguments for the script's init(args), after `--`
    #[arg(last = true, value_name = "ARGS")]
    pub script_args: Vec<String>,
    #[command(flatten)]
    pub segments: crate::args::SegmentArgs,
    #[command(flatten)]
    pub result: crate::args::ResultFile,
}

/// What wrk's report and script need from the translation.
pub struct WrkRun {
    pub info: WrkInfo,
    /// The body file's bytes and the script's source, for the script's `wrk` table.
    pub body: Option<Vec<u8>>,
    pub source: Option<String>,
}

/// wrk's place in the dialects' run contract.
pub struct Wrk;

impl CommandLine for Wrk {
    type Args = WrkArgs;
    type Inputs = (Target, Option<Vec<u8>>, Option<String>);
    type Info = WrkRun;
    const DIALECT: &'static Dialect = &DIALECT;

    fn result_file(a: &WrkArgs) -> &crate::args::ResultFile {
        &a.result
    }

    fn segments(a: &WrkArgs) -> &crate::args::SegmentArgs {
        &a.segments
    }

    fn inputs(a: &WrkArgs) -> Result<Self::Inputs, FlagError> {
        let target = common::resolve(&a.url, None)?;
        let body = a.body_file.as_deref().map(common::read_body).transpose()?;
        let source = match &a.script {
            Some(path) => Some(
                input::read_text(path, "-s/--script", Input::Config)
                    .map_err(|e| FlagError::usage(e.to_string()))?,
            ),
            None => None,
        };
        Ok((target, body, source))
    }

    fn translate(
        a: &WrkArgs,
        (target, body, source): Self::Inputs,
    ) -> Result<(LoadSpec, WrkRun), FlagError> {
        let spec = translate(a, target, body.clone())?;
        let info = WrkInfo {
            url: a.url.clone(),
            threads: a.threads,
            connections: a.connections,
            duration_s: a.duration.as_secs_f64(),
            latency: a.latency || a.u_latency,
            uncorrected: a.u_latency,
            wrk2: a.rate.is_some(),
        };
        Ok((spec, WrkRun { info, body, source }))
    }
}

/// The port as written in the URL, if any (wrk's `wrk.port` is nil without one).
pub fn explicit_port(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let after_host = match host_port.strip_prefix('[') {
        Some(v6) => v6.split_once(']').map_or("", |(_, r)| r),
        None => host_port,
    };
    after_host
        .rsplit_once(':')
        .map(|(_, p)| p.to_string())
        .filter(|p| !p.is_empty())
}

/// wrk's (and wrk2's) flags as a run. Pure: the caller resolves the target and reads
/// the body file, so that each flag's meaning can be checked without a network.
fn translate(a: &WrkArgs, target: Target, body: Option<Vec<u8>>) -> Result<LoadSpec, FlagError> {
    if a.rate == Some(0) {
        return Err(FlagError::usage(
            "-R/--rate: the rate must be at least 1 request per second",
        ));
    }
    if a.connections == 0 || a.threads == 0 {
        return Err(FlagError::usage("-c and -t must be at least 1"));
    }
    if a.connections < a.threads {
        return Err(FlagError::usage("number of connections must be >= threads"));
    }
    let mut b = RequestBuilder::new(&a.method, &target.path);
    let mut has_host = false;
    for h in &a.headers {
        let (n, v) = common::header_arg(h)?;
        has_host |= n.eq_ignore_ascii_case("host");
        b = b.header(&n, &v);
    }
    if !has_host {
        b = b.header("Host", &target.authority);
    }
    if let Some(body) = body {
        b = b.body(body);
    }
    let mut spec = LoadSpec::new(
        target.clone(),
        b.build().map_err(|e| FlagError::usage(e.to_string()))?,
    );
    // wrk does not verify certificates.
    spec.tls = crate::tls::TlsArgs::dialect(&target, false)?;
    spec.load.connections = a.connections as usize;
    spec.load.threads = a.threads as usize;
    spec.load.duration = Some(a.duration);
    spec.load.timeout = Some(a.timeout);
    spec.load.pipeline = a.pipeline;
    spec.load.batch_latency = a.batch_latency;
    if let Some(rate) = a.rate {
        spec.load.shape = Shape::Rate {
            rate: rate as f64,
            gaps: stampede_engine::arrivals::Gaps::Even,
        };
    }
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn spec_of(args: &[&str]) -> Result<LoadSpec, FlagError> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let (a, _) = DIALECT.parse::<WrkArgs>(&args)?;
        let target = Target::parse(&a.url).unwrap();
        translate(&a, target, None)
    }

    #[test]
    fn flags_become_the_run_wrk_would_make() {
        let s = spec_of(&[
            "-t2",
            "-c10",
            "-d3s",
            "-H",
            "X-A: 1",
            "http://127.0.0.1:9/p",
        ])
        .unwrap();
        assert_eq!((s.load.threads, s.load.connections), (2, 10));
        assert_eq!(s.load.duration, Some(Duration::from_secs(3)));
        assert_eq!(
            String::from_utf8(s.load.request.bytes).unwrap(),
            "GET /p HTTP/1.1\r\nX-A: 1\r\nHost: 127.0.0.1:9\r\n\r\n"
        );
        assert!(matches!(s.load.shape, Shape::Closed));
        // wrk2's -R: a fixed rate.
        let s = spec_of(&["-R", "500", "http://127.0.0.1:9/"]).unwrap();
        assert!(
            matches!(s.load.shape, Shape::Rate { rate, gaps: stampede_engine::arrivals::Gaps::Even } if rate == 500.0)
        );
    }

    #[test]
    fn impossible_combinations_name_the_flag() {
        for (args, flag) in [
            (
                &["-c", "1", "-t", "2", "http://127.0.0.1:9/"][..],
                "connections",
            ),
            (&["-R", "0", "http://127.0.0.1:9/"], "-R"),
        ] {
            let e = spec_of(args).unwrap_err();
            assert!(e.message.contains(flag), "{args:?}: {}", e.message);
        }
    }

    /// Every flag of wrk's and wrk2's usage: parsed into the run, or refused with a
    /// message naming it.
    #[test]
    fn every_documented_flag_is_taken_or_refused_by_name() {
        let u = "http://127.0.0.1:9/";
        for argv in [
            &["-c", "4", u][..],
            &["--connections", "4", u],
            &["-d", "2s", u],
            &["--duration", "2s", u],
            &["-t", "1", u],
            &["--threads", "1", u],
            &["-H", "X-A: 1", u],
            &["--header", "X-A: 1", u],
            &["-L", u],
            &["--latency", u],
            &["-U", "-R", "10", u],
            &["--u_latency", "--rate", "10", u],
            &["-T", "1s", u],
            &["--timeout", "1s", u],
        ] {
            spec_of(argv).unwrap_or_else(|e| panic!("{argv:?}: {}", e.message));
        }
        for flag in ["-B", "--batch_latency"] {
            let s = spec_of(&[flag, "--pipeline", "4", u]).unwrap();
            assert!(s.load.batch_latency && s.load.pipeline == 4, "{flag}");
        }
        // -s/--script reads its file (tested end to end with the scripts); -v prints.
        for flag in ["-v", "--version"] {
            let e = spec_of(&[flag]).unwrap_err();
            assert_eq!(e.code, 0, "{flag}");
        }
        let e = spec_of(&["--conections", "4", u]).unwrap_err();
        assert!(
            e.message
                .starts_with("--conections: not a flag of wrk; did you mean --connections?"),
            "{}",
            e.message
        );
    }
}
