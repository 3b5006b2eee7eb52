//! `stampede wrk`: wrk's flags and report, measured with stampede's engine.
//!
//! The request is wrk's default (`GET path HTTP/1.1` with a Host header and any `-H`
//! headers); `--latency` prints wrk2's HdrHistogram distribution. `-R` is wrk2's fixed
//! rate, exact from the first request (no calibration period), and `-U` adds the
//! uncorrected distribution. Lua scripts (`-s`) are not supported: the native flags
//! cover what scripts are mostly used for.

use clap::{ArgAction, Parser};
use stampede_engine::{LoadSpec, RequestBuilder, Shape, Target};
use stampede_report::{loud_warnings, wrk_report, WrkInfo};

use crate::ab::clap_exit;
use crate::common::{self, Exit, ProgressOptions};

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
    connections: u64,
    /// Duration of test
    #[arg(short = 'd', long = "duration", value_name = "T", default_value = "10s", value_parser = common::parse_duration)]
    duration: std::time::Duration,
    /// Number of threads to use
    #[arg(short = 't', long = "threads", value_name = "N", default_value = "2", value_parser = common::parse_metric)]
    threads: u64,
    /// Load Lua script file (not supported)
    #[arg(short = 's', long = "script", value_name = "S")]
    script: Option<String>,
    /// Add header to request
    #[arg(short = 'H', long = "header", value_name = "H", action = ArgAction::Append)]
    headers: Vec<String>,
    /// Print latency statistics
    #[arg(short = 'L', long = "latency")]
    latency: bool,
    /// Socket/request timeout
    #[arg(short = 'T', long = "timeout", value_name = "T", default_value = "2s", value_parser = common::parse_duration)]
    timeout: std::time::Duration,
    /// wrk2's constant throughput: requests/s for the whole run, latency corrected for
    /// coordinated omission
    #[arg(short = 'R', long = "rate", value_name = "R", value_parser = common::parse_metric)]
    rate: Option<u64>,
    /// wrk2's uncorrected latency histogram
    #[arg(short = 'U', long = "u_latency")]
    u_latency: bool,
    /// Requests per pipelined write (stampede; replaces wrk's pipeline.lua)
    #[arg(long = "pipeline", value_name = "N", default_value_t = 1)]
    pipeline: usize,
    /// Request body from a file (stampede; replaces scripts that set wrk.body)
    #[arg(long = "body-file", value_name = "FILE")]
    body_file: Option<String>,
    /// Request method (stampede; replaces scripts that set wrk.method)
    #[arg(short = 'm', long = "method", value_name = "M", default_value = "GET")]
    method: String,
    /// Print version details
    #[arg(short = 'v', long = "version", action = ArgAction::Version)]
    _version: Option<bool>,
    /// The URL to load
    #[arg(value_name = "URL")]
    url: String,
    #[command(flatten)]
    pub segments: crate::common::SegmentArgs,
    #[command(flatten)]
    pub result: crate::common::ResultFile,
}

pub fn main(args: &[String]) -> Result<(), Exit> {
    let a = WrkArgs::try_parse_from(
        std::iter::once("stampede wrk".to_string()).chain(args.iter().cloned()),
    )
    .map_err(clap_exit)?;
    a.result.claim_stdout();
    let target = common::resolve(&a.url, None)?;
    let body = a.body_file.as_deref().map(common::read_body).transpose()?;
    let mut spec = translate(&a, target, body)?;
    a.segments.apply(&mut spec)?;
    let run = common::execute(
        spec,
        ProgressOptions {
            quiet: false,
            heartbeat: None,
            ..Default::default()
        },
    )?;
    let info = WrkInfo {
        url: a.url.clone(),
        threads: a.threads,
        connections: a.connections,
        duration_s: a.duration.as_secs_f64(),
        latency: a.latency || a.u_latency,
        uncorrected: a.u_latency,
    };
    common::out(&wrk_report(&run.result, &info));
    a.result.write(&run.result)?;
    for w in loud_warnings(&run.result) {
        eprintln!("stampede: {w}");
    }
    Ok(())
}
/// wrk's (and wrk2's) flags as a run. Pure: the caller resolves the target and reads
/// the body file, so that each flag's meaning can be checked without a network.
fn translate(a: &WrkArgs, target: Target, body: Option<Vec<u8>>) -> Result<LoadSpec, Exit> {
    if a.script.is_some() {
        return Err(Exit::usage(
            "-s/--script: Lua scripts are not supported; use the native flags instead: --pipeline N (pipeline.lua), -H 'Name: value' (headers), -m METHOD and --body-file FILE (post.lua)",
        ));
    }
    if a.rate == Some(0) {
        return Err(Exit::usage(
            "-R/--rate: the rate must be at least 1 request per second",
        ));
    }
    if a.connections == 0 || a.threads == 0 {
        return Err(Exit::usage("-c and -t must be at least 1"));
    }
    if a.connections < a.threads {
        return Err(Exit::usage("number of connections must be >= threads"));
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
        b.build().map_err(|e| Exit::usage(e.to_string()))?,
    );
    // wrk does not verify certificates.
    spec.tls = crate::tls::TlsArgs::dialect(&target, false)?;
    spec.connections = a.connections as usize;
    spec.threads = a.threads as usize;
    spec.duration = Some(a.duration);
    spec.timeout = Some(a.timeout);
    spec.pipeline = a.pipeline;
    if let Some(rate) = a.rate {
        spec.shape = Shape::Rate {
            rate: rate as f64,
            poisson: false,
        };
    }
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn spec_of(args: &[&str]) -> Result<LoadSpec, Exit> {
        let a = WrkArgs::try_parse_from(std::iter::once("wrk").chain(args.iter().copied()))
            .map_err(clap_exit)?;
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
        assert_eq!((s.threads, s.connections), (2, 10));
        assert_eq!(s.duration, Some(Duration::from_secs(3)));
        assert_eq!(
            String::from_utf8(s.request.bytes).unwrap(),
            "GET /p HTTP/1.1\r\nX-A: 1\r\nHost: 127.0.0.1:9\r\n\r\n"
        );
        assert!(matches!(s.shape, Shape::Closed));
        // wrk2's -R: a fixed rate.
        let s = spec_of(&["-R", "500", "http://127.0.0.1:9/"]).unwrap();
        assert!(matches!(s.shape, Shape::Rate { rate, poisson: false } if rate == 500.0));
    }

    #[test]
    fn impossible_combinations_name_the_flag() {
        for (args, flag) in [
            (
                &["-c", "1", "-t", "2", "http://127.0.0.1:9/"][..],
                "connections",
            ),
            (&["-R", "0", "http://127.0.0.1:9/"], "-R"),
            (&["-s", "x.lua", "http://127.0.0.1:9/"], "-s"),
        ] {
            let e = spec_of(args).unwrap_err();
            assert!(e.message.contains(flag), "{args:?}: {}", e.message);
        }
    }
}
