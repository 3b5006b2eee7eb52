//! `stampede hey`'s command line: hey's flags, translated into a run of stampede's
//! engine.
//!
//! hey's flags are Go's, one dash each (`-disable-keepalive`, `-h2`); two dashes are
//! taken too. `-n` requests (200) over `-c` workers (50), each making `n/c` of them as
//! hey's workers do; `-z` a duration instead; `-q` a rate per worker. Redirects are
//! followed (up to ten, as Go's client) unless `-disable-redirects`; `Content-Type:
//! text/html` is sent unless `-T` says otherwise, as hey does. The report is hey's
//! summary, histogram, distribution, details and statuses; `-o csv` one line per
//! answered request. Latencies run from the actual send, as hey's do.

use std::time::Duration;

use clap::{ArgAction, Parser};
use stampede_engine::arrivals::Gaps;
use stampede_engine::{LoadSpec, RequestBuilder, Shape, Target};

use crate::args as common;
use crate::dialect::{Dialect, Inert};
use crate::CommandLine;
use crate::FlagError;

/// hey's command line: every flag of its usage is taken.
pub const DIALECT: Dialect = Dialect {
    tool: "hey",
    refused: &[],
    inert: &[Inert {
        id: "disable_compression",
        flag: "-disable-compression",
        why: "requests here send no Accept-Encoding; bodies are counted as sent",
    }],
    prefixes: false,
    go: true,
};

/// hey's command line: one field per flag of its usage.
#[derive(Parser, Debug)]
#[command(
    name = "stampede hey",
    version,
    about = "hey-compatible load test (hey's flags and report; Go's one-dash long flags)",
    disable_version_flag = true
)]
pub struct HeyArgs {
    /// Number of requests to run
    #[arg(short = 'n', value_name = "N", default_value_t = 200)]
    pub requests: u64,
    /// Number of workers to run concurrently (connections)
    #[arg(short = 'c', value_name = "C", default_value_t = 50)]
    pub workers: u64,
    /// Rate limit per worker, in requests per second
    #[arg(short = 'q', value_name = "QPS")]
    pub qps: Option<f64>,
    /// Duration of the run (10s, 3m); -n is then ignored
    #[arg(short = 'z', value_name = "DURATION", value_parser = common::positive_duration)]
    pub duration: Option<Duration>,
    /// Output type: csv for one line per request (a summary otherwise)
    #[arg(short = 'o', value_name = "OUTPUT")]
    pub output: Option<String>,
    /// HTTP method
    #[arg(short = 'm', value_name = "METHOD", default_value = "GET")]
    pub method: String,
    /// Custom HTTP header, repeated as needed
    #[arg(short = 'H', value_name = "HEADER", action = ArgAction::Append)]
    pub headers: Vec<String>,
    /// Timeout for each request in seconds; 0 for none
    #[arg(short = 't', value_name = "SECONDS", default_value_t = 20)]
    pub timeout: u64,
    /// HTTP Accept header
    #[arg(short = 'A', value_name = "ACCEPT")]
    pub accept: Option<String>,
    /// HTTP request body
    #[arg(short = 'd', value_name = "BODY", conflicts_with = "body_file")]
    pub body: Option<String>,
    /// HTTP request body from a file
    #[arg(short = 'D', value_name = "FILE")]
    pub body_file: Option<String>,
    /// Content-Type
    #[arg(short = 'T', value_name = "TYPE", default_value = "text/html")]
    pub content_type: String,
    /// User-Agent [default: stampede's]
    #[arg(short = 'U', value_name = "AGENT")]
    pub user_agent: Option<String>,
    /// Basic authentication, username:password
    #[arg(short = 'a', value_name = "AUTH")]
    pub basic_auth: Option<String>,
    /// HTTP proxy address as host:port
    #[arg(short = 'x', value_name = "PROXY")]
    pub proxy: Option<String>,
    /// Enable HTTP/2
    #[arg(long = "h2")]
    pub h2: bool,
    /// HTTP Host header
    #[arg(long = "host", value_name = "HOST")]
    pub host: Option<String>,
    /// Disable compression
    #[arg(long = "disable-compression")]
    pub disable_compression: bool,
    /// Disable keep-alive: a new connection for every request
    #[arg(long = "disable-keepalive")]
    pub disable_keepalive: bool,
    /// Disable following of HTTP redirects
    #[arg(long = "disable-redirects")]
    pub disable_redirects: bool,
    /// Number of CPU cores used (worker threads)
    #[arg(long = "cpus", value_name = "N")]
    pub cpus: Option<usize>,
    /// The URL to load
    #[arg(value_name = "URL")]
    pub url: String,
    #[command(flatten)]
    pub tls: crate::tls::TlsArgs,
    #[command(flatten)]
    pub segments: crate::args::SegmentArgs,
    #[command(flatten)]
    pub result: crate::args::ResultFile,
}

/// hey's place in the dialects' run contract.
pub struct Hey;

impl CommandLine for Hey {
    type Args = HeyArgs;
    type Inputs = (Target, Option<Vec<u8>>);
    type Info = ();
    const DIALECT: &'static Dialect = &DIALECT;

    fn result_file(a: &HeyArgs) -> &crate::args::ResultFile {
        &a.result
    }

    fn segments(a: &HeyArgs) -> &crate::args::SegmentArgs {
        &a.segments
    }

    fn inputs(a: &HeyArgs) -> Result<Self::Inputs, FlagError> {
        let target = common::resolve(&a.url, None)?;
        let body = match (&a.body, &a.body_file) {
            (Some(s), _) => Some(s.clone().into_bytes()),
            (None, Some(p)) => Some(common::read_body(p)?),
            (None, None) => None,
        };
        Ok((target, body))
    }

    fn translate(a: &HeyArgs, (target, body): Self::Inputs) -> Result<(LoadSpec, ()), FlagError> {
        Ok((translate(a, target, body)?, ()))
    }
}

/// The run the flags ask for. Pure: it resolves no name and reads no file.
fn translate(a: &HeyArgs, target: Target, body: Option<Vec<u8>>) -> Result<LoadSpec, FlagError> {
    if a.workers == 0 {
        return Err(FlagError::usage("-c cannot be smaller than 1"));
    }
    if a.duration.is_none() && a.requests < a.workers {
        return Err(FlagError::usage(format!(
            "-n {} cannot be less than -c {}: each worker makes n/c requests",
            a.requests, a.workers
        )));
    }
    if let Some(o) = a.output.as_deref().filter(|o| *o != "csv") {
        return Err(FlagError::usage(format!(
            "-o {o}: csv is the only output type besides the summary"
        )));
    }
    let keepalive = !a.disable_keepalive;
    let mut b = RequestBuilder::native(&target, &a.method, keepalive)
        .set_header("Content-Type", &a.content_type);
    for h in &a.headers {
        let (n, v) = common::header_arg(h)?;
        b = b.set_header(&n, &v);
    }
    if let Some(v) = &a.accept {
        b = b.set_header("Accept", v);
    }
    if let Some(v) = &a.user_agent {
        b = b.set_header("User-Agent", v);
    }
    if let Some(v) = &a.basic_auth {
        b = b.set_header("Authorization", &crate::oha::basic(v, "-a")?);
    }
    if let Some(v) = &a.host {
        b = b.set_header("Host", v);
    }
    if let Some(body) = body {
        b = b.body(body);
    }
    let request = b.build().map_err(|e| FlagError::usage(e.to_string()))?;
    let tls = a.tls.config(&target, a.h2)?;
    let mut spec = LoadSpec::new(target, request);
    spec.tls = tls;
    spec.load.connections = a.workers as usize;
    spec.load.threads = a.cpus.unwrap_or_else(common::cpus).max(1);
    spec.load.keepalive = keepalive;
    spec.load.protocol.http2 = a.h2;
    spec.load.redirects = if a.disable_redirects || a.h2 { 0 } else { 10 };
    spec.load.timeout = (a.timeout > 0).then(|| Duration::from_secs(a.timeout));
    match a.duration {
        Some(d) => spec.load.duration = Some(d),
        // Each worker makes n/c requests, as hey's do.
        None => spec.load.requests = Some(a.requests / a.workers * a.workers),
    }
    if let Some(q) = a.qps {
        if !(q.is_finite() && q > 0.0) {
            return Err(FlagError::usage(format!(
                "-q {q}: give a rate above 0 requests per second per worker"
            )));
        }
        spec.load.shape = Shape::Rate {
            rate: q * a.workers as f64,
            gaps: Gaps::Even,
        };
    }
    if let Some(p) = &a.proxy {
        let net = crate::args::NetArgs {
            proxy: Some(if p.contains("://") {
                p.clone()
            } else {
                format!("http://{p}")
            }),
            ..Default::default()
        };
        net.apply(&mut spec)?;
    }
    spec.record_requests = a.output.is_some();
    Ok(spec)
}

#[cfg(test)]
mod tests;
