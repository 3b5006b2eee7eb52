//! `stampede load`: the native interface to the engine, with a compact summary and JSON.

use clap::{ArgAction, Args};
use stampede_engine::{LoadSpec, RequestBuilder};
use stampede_report::{loud_warnings, summary};

use crate::common::{self, Exit, ProgressOptions};

/// Arguments of `stampede load`.
#[derive(Args, Debug)]
pub struct LoadArgs {
    /// The URL to load: http://host:port/path or http+unix://%2Fpath%2Fto.sock/path
    #[arg(value_name = "URL")]
    pub url: String,
    /// Concurrent connections
    #[arg(
        short = 'c',
        long = "connections",
        value_name = "N",
        default_value_t = 64
    )]
    pub connections: usize,
    /// Stop after N requests
    #[arg(short = 'n', long = "requests", value_name = "N")]
    pub requests: Option<u64>,
    /// Stop after this long (10s, 500ms, 2m); default 10s when -n is not given
    #[arg(short = 'd', long = "duration", value_name = "T", value_parser = common::parse_duration)]
    pub duration: Option<std::time::Duration>,
    /// Worker threads (default: all cores)
    #[arg(short = 't', long = "threads", value_name = "N")]
    pub threads: Option<usize>,
    /// Requests written back to back per connection
    #[arg(long = "pipeline", value_name = "N", default_value_t = 1)]
    pub pipeline: usize,
    /// Reuse connections (the default)
    #[arg(long = "keepalive", overrides_with = "no_keepalive")]
    pub keepalive: bool,
    /// Open a new connection for every request
    #[arg(long = "no-keepalive")]
    pub no_keepalive: bool,
    /// Add a header, 'Name: value' (repeatable)
    #[arg(short = 'H', long = "header", value_name = "H", action = ArgAction::Append)]
    pub headers: Vec<String>,
    /// Request method
    #[arg(short = 'm', long = "method", value_name = "M", default_value = "GET")]
    pub method: String,
    /// Request body from a file
    #[arg(long = "body-file", value_name = "FILE")]
    pub body_file: Option<String>,
    /// Per-request timeout
    #[arg(long = "timeout", value_name = "T", default_value = "30s", value_parser = common::parse_duration)]
    pub timeout: std::time::Duration,
    /// Connect to this Unix socket, keeping the URL's host and path for the request
    #[arg(long = "unix-socket", value_name = "PATH")]
    pub unix_socket: Option<String>,
    /// Write the result as JSON to FILE ('-' for standard output, replacing the summary)
    #[arg(long = "json", value_name = "FILE")]
    pub json: Option<String>,
    /// No progress line
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
}

pub fn main(a: LoadArgs) -> Result<(), Exit> {
    let target = common::resolve(&a.url, a.unix_socket.as_deref())?;
    let keepalive = !a.no_keepalive;
    let mut b = RequestBuilder::native(&target, &a.method, keepalive);
    for h in &a.headers {
        let (n, v) = stampede_engine::request::parse_header_arg(h)
            .ok_or_else(|| Exit::usage(format!("-H: {h:?} is not a header; use 'Name: value'")))?;
        b = b.set_header(&n, &v);
    }
    if let Some(f) = &a.body_file {
        b = b.body(common::read_body(f)?);
    }
    let mut spec = LoadSpec::new(target, b.build());
    spec.connections = a.connections;
    spec.threads = a.threads.unwrap_or_else(common::cpus);
    spec.requests = a.requests;
    spec.duration = match (a.requests, a.duration) {
        (None, None) => Some(std::time::Duration::from_secs(10)),
        (_, d) => d,
    };
    spec.keepalive = keepalive;
    spec.pipeline = a.pipeline;
    spec.timeout = Some(a.timeout);
    let run = common::execute(
        spec,
        ProgressOptions {
            quiet: a.quiet,
            heartbeat: None,
        },
    )?;
    let r = &run.result;
    match a.json.as_deref() {
        Some("-") => common::out(&(r.to_json() + "\n")),
        Some(path) => {
            common::write_file(path, &(r.to_json() + "\n"))?;
            common::out(&summary(r));
        }
        None => common::out(&summary(r)),
    }
    for w in loud_warnings(r) {
        eprintln!("stampede: {w}");
    }
    Ok(())
}
