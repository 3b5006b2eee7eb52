//! `stampede h2load`: h2load's common flags and report, measured with stampede's engine.
//!
//! HTTP/2 by default (h2c with prior knowledge for http://, ALPN for https://, with no
//! certificate verification, as h2load), `--h1` for HTTP/1.1 where `-m` is the
//! pipelining depth, as in h2load. `-n` requests over `-c` clients and `-t` threads,
//! or `-D` seconds; `-H` headers and `-d` a body file (POST). The report is h2load's:
//! requests by outcome, status classes, traffic with header compression, and the
//! min/max/mean/sd table for request time, connect time, time to first byte and
//! per-client req/s.

use clap::{ArgAction, Parser};
use stampede_engine::{LoadSpec, RequestBuilder, Target};
use stampede_report::{h2load_preamble, h2load_report, loud_warnings, H2loadInfo};

use crate::ab::clap_exit;
use crate::common::{self, Exit, ProgressOptions};

#[derive(Parser, Debug)]
#[command(
    name = "stampede h2load",
    version,
    about = "h2load-compatible load test (h2load's common flags and report)",
    disable_version_flag = true
)]
pub struct H2loadArgs {
    /// Number of requests across all clients
    #[arg(short = 'n', long = "requests", value_name = "N", default_value = "1", value_parser = common::parse_metric)]
    requests: u64,
    /// Number of concurrent clients
    #[arg(short = 'c', long = "clients", value_name = "N", default_value = "1", value_parser = common::parse_metric)]
    clients: u64,
    /// Number of native threads
    #[arg(short = 't', long = "threads", value_name = "N", default_value = "1", value_parser = common::parse_metric)]
    threads: u64,
    /// Max concurrent streams per client (HTTP/1.1: requests pipelined)
    #[arg(short = 'm', long = "max-concurrent-streams", value_name = "N", default_value = "1", value_parser = common::parse_metric)]
    streams: u64,
    /// Run for this long instead of a request count (-n is then ignored)
    #[arg(short = 'D', long = "duration", value_name = "T", value_parser = common::parse_duration)]
    duration: Option<std::time::Duration>,
    /// Add a header to the requests
    #[arg(short = 'H', long = "header", value_name = "HEADER", action = ArgAction::Append)]
    headers: Vec<String>,
    /// POST this file's contents
    #[arg(short = 'd', long = "data", value_name = "PATH")]
    data: Option<String>,
    /// Use HTTP/1.1
    #[arg(long = "h1")]
    h1: bool,
    /// Print version details
    #[arg(long = "version", action = ArgAction::Version)]
    _version: Option<bool>,
    /// The URL to load
    #[arg(value_name = "URI")]
    url: String,
    #[command(flatten)]
    pub segments: crate::common::SegmentArgs,
    #[command(flatten)]
    pub result: crate::common::ResultFile,
}

pub fn main(args: &[String]) -> Result<(), Exit> {
    let a = H2loadArgs::try_parse_from(
        std::iter::once("stampede h2load".to_string()).chain(args.iter().cloned()),
    )
    .map_err(clap_exit)?;
    a.result.claim_stdout();
    let target = common::resolve(&a.url, None)?;
    let body = a.data.as_deref().map(common::read_body).transpose()?;
    let (mut spec, info) = translate(&a, target, body)?;
    a.segments.apply(&mut spec)?;
    let http2 = spec.http2;
    common::out(&h2load_preamble(&info));
    let run = common::execute(
        spec,
        ProgressOptions {
            quiet: false,
            deciles: true,
            ..Default::default()
        },
    )?;
    let r = &run.result;
    let info = H2loadInfo {
        // ALPN may have chosen HTTP/1.1.
        protocol: match &r.tls {
            Some(t) if http2 => t.alpn.clone().unwrap_or(info.protocol.clone()),
            _ => info.protocol.clone(),
        },
        ..info
    };
    common::out(&h2load_report(r, &info));
    a.result.write(r)?;
    for w in loud_warnings(r) {
        eprintln!("stampede: {w}");
    }
    Ok(())
}

/// h2load's flags as a run and the report's preamble. Pure: the caller resolves the
/// target and reads the `--data` file.
fn translate(
    a: &H2loadArgs,
    target: Target,
    body: Option<Vec<u8>>,
) -> Result<(LoadSpec, H2loadInfo), Exit> {
    if a.clients == 0 || a.threads == 0 || a.streams == 0 {
        return Err(Exit::usage("-c, -t and -m must be at least 1"));
    }
    if a.clients < a.threads {
        return Err(Exit::usage(
            "-c, --clients: the number of clients must be greater than or equal to the number of threads (-t)",
        ));
    }
    if a.duration.is_none() && a.requests < a.clients {
        return Err(Exit::usage(
            "-n, --requests: the number of requests must be greater than or equal to the number of clients (-c)",
        ));
    }
    let method = if body.is_some() { "POST" } else { "GET" };
    let mut b = RequestBuilder::native(&target, method, true);
    for h in &a.headers {
        let (n, v) = common::header_arg(h)?;
        b = b.set_header(&n, &v);
    }
    if let Some(body) = body {
        b = b.body(body);
    }
    let http2 = !a.h1;
    let mut spec = LoadSpec::new(
        target.clone(),
        b.build().map_err(|e| Exit::usage(e.to_string()))?,
    );
    spec.tls = crate::tls::TlsArgs::dialect(&target, http2)?;
    spec.http2 = http2;
    spec.pipeline = a.streams as usize;
    spec.connections = a.clients as usize;
    spec.threads = a.threads as usize;
    match a.duration {
        Some(d) => spec.duration = Some(d),
        None => spec.requests = Some(a.requests),
    }
    let info = H2loadInfo {
        threads: a.threads,
        clients: a.clients,
        requests: a.duration.is_none().then_some(a.requests),
        protocol: match (http2, target.tls) {
            (false, _) => "http/1.1".into(),
            (true, false) => "h2c".into(),
            (true, true) => "h2".into(),
        },
    };
    Ok((spec, info))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn spec_of(args: &[&str]) -> Result<(LoadSpec, H2loadInfo), Exit> {
        let a = H2loadArgs::try_parse_from(std::iter::once("h2load").chain(args.iter().copied()))
            .map_err(clap_exit)?;
        let target = Target::parse(&a.url).unwrap();
        translate(&a, target, None)
    }

    #[test]
    fn flags_become_the_run_h2load_would_make() {
        let (s, info) = spec_of(&[
            "-n",
            "100",
            "-c",
            "4",
            "-m",
            "10",
            "-t",
            "2",
            "http://127.0.0.1:9/p",
        ])
        .unwrap();
        assert!(s.http2);
        assert_eq!(
            (s.requests, s.connections, s.pipeline, s.threads),
            (Some(100), 4, 10, 2)
        );
        assert_eq!(info.protocol, "h2c");
        let (s, info) = spec_of(&["--h1", "-D", "2", "http://127.0.0.1:9/"]).unwrap();
        assert!(!s.http2 && s.requests.is_none());
        assert_eq!(s.duration, Some(Duration::from_secs(2)));
        assert_eq!((info.protocol.as_str(), info.requests), ("http/1.1", None));
    }

    #[test]
    fn impossible_combinations_name_the_flag() {
        for (args, flag) in [
            (&["-c", "1", "-t", "2", "http://127.0.0.1:9/"][..], "-c"),
            (&["-n", "2", "-c", "4", "http://127.0.0.1:9/"], "-n"),
            (&["-m", "0", "http://127.0.0.1:9/"], "-m"),
        ] {
            let Err(e) = spec_of(args) else {
                panic!("{args:?} accepted")
            };
            assert!(e.message.contains(flag), "{args:?}: {}", e.message);
        }
    }
}
