//! `stampede oha`'s command line: oha's flags, translated into a run of stampede's
//! engine.
//!
//! `-n` requests (200 by default) or `-z` a duration over `-c` connections (50), `-p`
//! HTTP/2 streams on each; `-q` a rate for the whole run, `--burst-rate` requests every
//! `--burst-delay` otherwise; `--rand-regex-url` a path drawn per request, or
//! `--urls-from-file` the URLs of a file in turn (one server). The report is oha's
//! summary, histogram and distribution (`--output-format text`), its JSON object
//! (`json`, or older oha's `-j`), its CSV of one line per request (`csv`) or nothing
//! (`quiet`); `-o` writes it to a file. Latencies run from the actual send, as oha's do;
//! with `--latency-correction` and `-q` from each request's intended start. oha's
//! live view is stampede's progress (`--no-tui` turns it off). Flags stampede cannot
//! honour are refused with why and what to use instead ([`DIALECT`]).

use std::time::Duration;

use clap::{ArgAction, Parser, ValueEnum};
use stampede_engine::arrivals::Gaps;
use stampede_engine::input::{self, Input};
use stampede_engine::target::Address;
use stampede_engine::{LoadSpec, Request, RequestBuilder, Shape, Target};
use stampede_report::oha::TimeUnit;
use stampede_report::OhaInfo;

use crate::args as common;
use crate::dialect::{Dialect, Inert, Refused};
use crate::CommandLine;
use crate::FlagError;
use stampede_inputs::randurl;
use stampede_inputs::targets;

/// oha's flags that stampede refuses, and those that change nothing here.
pub const DIALECT: Dialect = Dialect {
    tool: "oha",
    refused: &[
        Refused {
            flag: "-w",
            why: "a run bounded by -z ends at -z; what is still in flight then is counted as \"aborted due to deadline\" in the error distribution",
            instead: "-n N (a count waits for every answer) or a longer -z",
        },
        Refused {
            flag: "-F",
            why: "multipart forms are not built here",
            instead: "-D FILE with the encoded form and -T 'multipart/form-data; boundary=…'",
        },
        Refused {
            flag: "--aws-session",
            why: "requests are not signed here",
            instead: "-H 'Authorization: …' with a precomputed signature",
        },
        Refused {
            flag: "--aws-sigv4",
            why: "requests are not signed here",
            instead: "-H 'Authorization: …' with a precomputed signature",
        },
        Refused {
            flag: "--proxy-header",
            why: "the proxy's CONNECT carries only the proxy's credentials",
            instead: "--proxy-user USER:PASSWORD",
        },
        Refused {
            flag: "--proxy-http-version",
            why: "proxies are spoken to in HTTP/1.1",
            instead: "leave it out",
        },
        Refused {
            flag: "--proxy-http2",
            why: "proxies are spoken to in HTTP/1.1",
            instead: "leave it out",
        },
        Refused {
            flag: "--stats-success-breakdown",
            why: "the text report has one distribution",
            instead: "--json FILE: stampede's result has the ok and ko histograms",
        },
        Refused {
            flag: "--db-url",
            why: "no SQLite output",
            instead: "--output-format csv (one line per request)",
        },
        Refused {
            flag: "--debug",
            why: "no single-request dump",
            instead: "-n 1 --output-format csv for the request's figures",
        },
    ],
    inert: &[
        Inert {
            id: "fps",
            flag: "--fps",
            why: "the live view here is stampede's progress line",
        },
        Inert {
            id: "no_color",
            flag: "--no-color",
            why: "oha's report is printed without colour here",
        },
        Inert {
            id: "no_pre_lookup",
            flag: "--no-pre-lookup",
            why: "the name is resolved once, before the run",
        },
        Inert {
            id: "disable_compression",
            flag: "--disable-compression",
            why: "requests here send no Accept-Encoding; bodies are counted as sent",
        },
    ],
    prefixes: false,
    go: false,
};

/// oha's `--output-format`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    Text,
    Json,
    Csv,
    Quiet,
}

/// oha's `--http-version`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum HttpVersion {
    #[value(name = "0.9")]
    V09,
    #[value(name = "1.0")]
    V10,
    #[value(name = "1.1")]
    V11,
    #[value(name = "2")]
    V2,
    #[value(name = "3")]
    V3,
}

/// oha's command line: one field per flag it takes (hence over thirty).
#[derive(Parser, Debug)]
#[command(
    name = "stampede oha",
    version,
    about = "oha-compatible load test (oha's flags and reports)",
    disable_version_flag = true
)]
pub struct OhaArgs {
    /// Target URL (with --urls-from-file: a file of URLs, one per line)
    #[arg(value_name = "URL")]
    pub url: Option<String>,
    /// Number of requests to run (10k, 1m) [default: 200]
    #[arg(short = 'n', value_name = "N_REQUESTS", value_parser = common::parse_metric)]
    pub requests: Option<u64>,
    /// Number of connections to run concurrently
    #[arg(short = 'c', value_name = "N_CONNECTIONS", default_value_t = 50)]
    pub connections: usize,
    /// Parallel requests on each HTTP/2 connection (streams)
    #[arg(short = 'p', value_name = "N_HTTP2_PARALLEL", default_value_t = 1)]
    pub parallel: usize,
    /// Duration of the run (10s, 3m); requests in flight at its end are "aborted due
    /// to deadline"
    #[arg(short = 'z', value_name = "DURATION", value_parser = common::positive_duration)]
    pub duration: Option<Duration>,
    /// Rate for the whole run, in requests per second
    #[arg(short = 'q', value_name = "QUERY_PER_SECOND")]
    pub qps: Option<f64>,
    /// Delay between bursts of --burst-rate requests (ignored with -q)
    #[arg(long = "burst-delay", value_name = "BURST_DURATION", value_parser = common::positive_duration)]
    pub burst_delay: Option<Duration>,
    /// Requests per burst [default: 1]
    #[arg(long = "burst-rate", value_name = "BURST_REQUESTS")]
    pub burst_rate: Option<u32>,
    /// The URL is a regular expression; each request's path is drawn from it
    #[arg(long = "rand-regex-url")]
    pub rand_regex_url: bool,
    /// The URL argument is a file of URLs (one server), used in turn
    #[arg(long = "urls-from-file")]
    pub urls_from_file: bool,
    /// The most extra repetitions of *, + and {n,} in --rand-regex-url
    #[arg(long = "max-repeat", value_name = "MAX_REPEAT", default_value_t = 4)]
    pub max_repeat: u32,
    /// Print this many URLs drawn by --rand-regex-url, and send nothing
    #[arg(long = "dump-urls", value_name = "DUMP_URLS")]
    pub dump_urls: Option<u64>,
    /// With -q: latencies from each request's intended start (coordinated omission
    /// corrected), not from its actual send
    #[arg(long = "latency-correction")]
    pub latency_correction: bool,
    /// No live view
    #[arg(long = "no-tui")]
    pub no_tui: bool,
    /// Frames per second of oha's live view
    #[arg(long = "fps", value_name = "FPS")]
    pub fps: Option<u32>,
    /// HTTP method
    #[arg(
        short = 'm',
        long = "method",
        value_name = "METHOD",
        default_value = "GET"
    )]
    pub method: String,
    /// Custom HTTP header, e.g. -H "foo: bar"
    #[arg(short = 'H', value_name = "HEADERS", action = ArgAction::Append)]
    pub headers: Vec<String>,
    /// Timeout for each request [default here: 30s]
    #[arg(short = 't', value_name = "TIMEOUT", value_parser = common::positive_duration)]
    pub timeout: Option<Duration>,
    /// Timeout for establishing a new connection
    #[arg(long = "connect-timeout", value_name = "CONNECT_TIMEOUT", default_value = "5s", value_parser = common::positive_duration)]
    pub connect_timeout: Duration,
    /// HTTP Accept header
    #[arg(short = 'A', value_name = "ACCEPT_HEADER")]
    pub accept: Option<String>,
    /// HTTP request body
    #[arg(short = 'd', value_name = "BODY_STRING", conflicts_with_all = ["body_path", "body_lines"])]
    pub body: Option<String>,
    /// HTTP request body from a file
    #[arg(short = 'D', value_name = "BODY_PATH", conflicts_with = "body_lines")]
    pub body_path: Option<String>,
    /// HTTP request bodies from a file, one per line, used in turn
    #[arg(short = 'Z', value_name = "BODY_PATH_LINES")]
    pub body_lines: Option<String>,
    /// Content-Type
    #[arg(short = 'T', value_name = "CONTENT_TYPE")]
    pub content_type: Option<String>,
    /// Basic authentication, username:password
    #[arg(short = 'a', value_name = "BASIC_AUTH")]
    pub basic_auth: Option<String>,
    /// HTTP version: 1.1, 2 or 3 (3 needs an https:// URL)
    #[arg(long = "http-version", value_name = "HTTP_VERSION")]
    pub http_version: Option<HttpVersion>,
    /// Use HTTP/2 (--http-version 2)
    #[arg(long = "http2", conflicts_with = "http_version")]
    pub http2: bool,
    /// HTTP Host header
    #[arg(long = "host", value_name = "HOST")]
    pub host: Option<String>,
    /// Disable compression
    #[arg(long = "disable-compression")]
    pub disable_compression: bool,
    /// Follow up to this many redirects (HTTP/1.1)
    #[arg(
        short = 'r',
        long = "redirect",
        value_name = "REDIRECT",
        default_value_t = 0
    )]
    pub redirect: u32,
    /// A new connection for every request
    #[arg(long = "disable-keepalive")]
    pub disable_keepalive: bool,
    /// Resolve once before the run (as here always)
    #[arg(long = "no-pre-lookup")]
    pub no_pre_lookup: bool,
    /// Connect to IPv6 addresses only
    #[arg(long = "ipv6", conflicts_with = "ipv4")]
    pub ipv6: bool,
    /// Connect to IPv4 addresses only
    #[arg(long = "ipv4")]
    pub ipv4: bool,
    /// Connect elsewhere: HOST:PORT:TARGET_HOST:TARGET_PORT, for the URL's host and port
    #[arg(long = "connect-to", value_name = "CONNECT_TO")]
    pub connect_to: Option<String>,
    /// Disable the colour scheme
    #[arg(long = "no-color")]
    pub no_color: bool,
    /// Connect to a Unix socket instead of the URL's host (http:// URLs)
    #[arg(long = "unix-socket", value_name = "UNIX_SOCKET")]
    pub unix_socket: Option<String>,
    /// Write the report to this file instead of standard output
    #[arg(short = 'o', long = "output", value_name = "OUTPUT")]
    pub output: Option<String>,
    /// The report's form
    #[arg(
        long = "output-format",
        value_name = "OUTPUT_FORMAT",
        default_value = "text"
    )]
    pub output_format: OutputFormat,
    /// The report as JSON (older oha's spelling of --output-format json)
    #[arg(short = 'j', long = "json-output", conflicts_with = "output_format")]
    pub json_report: bool,
    /// The text report's time unit [default: chosen from the slowest response]
    #[arg(short = 'u', long = "time-unit", value_name = "TIME_UNIT", value_parser = time_unit)]
    pub time_unit: Option<TimeUnit>,
    /// Worker threads [default: the CPUs this process may use]
    #[arg(long = "worker-threads", value_name = "WORKER_THREADS")]
    pub worker_threads: Option<usize>,
    #[command(flatten)]
    pub tls: crate::tls::TlsArgs,
    #[command(flatten)]
    pub net: crate::args::NetArgs,
    #[command(flatten)]
    pub segments: crate::args::SegmentArgs,
    #[command(flatten)]
    pub result: crate::args::ResultFile,
}

/// `-u`'s units.
fn time_unit(s: &str) -> Result<TimeUnit, crate::BadValue> {
    TimeUnit::ALL
        .into_iter()
        .find(|u| u.name() == s)
        .ok_or_else(|| format!("{s:?} is not a time unit; give ns, us, ms, s, m or h").into())
}

/// oha's place in the dialects' run contract.
pub struct Oha;

/// What the flags point at: the target, the URLs' requests, the body, the bodies.
pub struct Inputs {
    pub target: Target,
    /// `--urls-from-file`'s URLs, or `-Z`'s bodies: requests in turn.
    pub variety: Vec<Request>,
    pub body: Option<Vec<u8>>,
    pub pattern: Option<randurl::UrlPattern>,
    /// The flags' headers, read once (`-a` checked there).
    pub headers: Vec<(String, String)>,
}

impl CommandLine for Oha {
    type Args = OhaArgs;
    type Inputs = Inputs;
    type Info = OhaInfo;
    const DIALECT: &'static Dialect = &DIALECT;

    fn result_file(a: &OhaArgs) -> &crate::args::ResultFile {
        &a.result
    }

    fn segments(a: &OhaArgs) -> &crate::args::SegmentArgs {
        &a.segments
    }

    fn inputs(a: &OhaArgs) -> Result<Inputs, FlagError> {
        let Some(url) = &a.url else {
            return Err(FlagError::usage(
                "give a URL, e.g. stampede oha -n 1000 http://127.0.0.1:8080/",
            ));
        };
        let body = match (&a.body, &a.body_path) {
            (Some(s), _) => Some(s.clone().into_bytes()),
            (None, Some(p)) => Some(common::read_body(p)?),
            (None, None) => None,
        };
        let headers = headers(a)?;
        let keepalive = !a.disable_keepalive;
        if a.urls_from_file {
            if a.rand_regex_url {
                return Err(FlagError::usage(
                    "--urls-from-file and --rand-regex-url both say what the URL is; give one",
                ));
            }
            let text = input::read_text(url, "--urls-from-file", Input::List)
                .map_err(|e| FlagError::usage(e.to_string()))?;
            let entries: Vec<targets::Entry> = (text.lines().enumerate())
                .filter(|(_, l)| !l.trim().is_empty())
                .map(|(i, l)| targets::Entry {
                    line: i + 1,
                    method: a.method.clone(),
                    url: l.trim().to_string(),
                    headers: Vec::new(),
                    body: None,
                    data: None,
                })
                .collect();
            if entries.is_empty() {
                return Err(FlagError::usage(format!(
                    "{url}: no URLs; write one per line"
                )));
            }
            let shared = targets::Common {
                headers: &headers,
                keepalive,
                body: body.as_deref(),
            };
            let groups = targets::requests(url, &entries, a.unix_socket.as_deref(), &shared)?;
            let targets::Group {
                mut target,
                requests: variety,
                ..
            } = targets::one_server(url, "oha's --urls-from-file", groups)?;
            connect_elsewhere(a, &mut target)?;
            return Ok(Inputs {
                target,
                variety,
                body,
                pattern: None,
                headers,
            });
        }
        let pattern = if a.rand_regex_url {
            Some(randurl::UrlPattern::parse(url, a.max_repeat)?)
        } else {
            None
        };
        let at = match &pattern {
            Some(p) => format!("{}/", p.origin),
            None => url.clone(),
        };
        let mut target = common::resolve(&at, a.unix_socket.as_deref())?;
        if pattern.is_some() {
            target.url = url.clone();
        }
        connect_elsewhere(a, &mut target)?;
        let variety = match &a.body_lines {
            Some(file) => {
                let build = |b: Vec<u8>| request(a, &target, &headers, Some(b));
                targets::body_lines(file, &common::read_body(file)?, &build)?
            }
            None => Vec::new(),
        };
        Ok(Inputs {
            target,
            variety,
            body,
            pattern,
            headers,
        })
    }

    fn translate(a: &OhaArgs, inputs: Inputs) -> Result<(LoadSpec, OhaInfo), FlagError> {
        translate(a, inputs)
    }
}

/// The report's form: `-j` is `--output-format json`.
pub fn format(a: &OhaArgs) -> OutputFormat {
    if a.json_report {
        OutputFormat::Json
    } else {
        a.output_format
    }
}

/// The request headers the flags give: `-H`, then `-A`, `-T`, `-a` and `--host`.
fn headers(a: &OhaArgs) -> Result<Vec<(String, String)>, FlagError> {
    let mut out = (a.headers.iter())
        .map(|h| common::header_arg(h))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(v) = &a.accept {
        out.push(("Accept".into(), v.clone()));
    }
    if let Some(v) = &a.content_type {
        out.push(("Content-Type".into(), v.clone()));
    }
    if let Some(v) = &a.basic_auth {
        out.push(("Authorization".into(), basic(v, "-a")?));
    }
    if let Some(v) = &a.host {
        out.push(("Host".into(), v.clone()));
    }
    Ok(out)
}

/// The Authorization header's value for `user:password` given with `flag`.
pub fn basic(credentials: &str, flag: &str) -> Result<String, FlagError> {
    if !credentials.contains(':') {
        return Err(FlagError::usage(format!(
            "{flag} {credentials:?}: write the credentials as username:password"
        )));
    }
    use base64::Engine as _;
    let token = base64::engine::general_purpose::STANDARD.encode(credentials);
    Ok(format!("Basic {token}"))
}

/// One request to `target` with the flags' method, headers and `body`.
fn request(
    a: &OhaArgs,
    target: &Target,
    headers: &[(String, String)],
    body: Option<Vec<u8>>,
) -> Result<Request, FlagError> {
    let mut b = RequestBuilder::native(target, &a.method, !a.disable_keepalive);
    for (n, v) in headers {
        b = b.set_header(n, v);
    }
    if let Some(body) = body {
        b = b.body(body);
    }
    b.build().map_err(|e| FlagError::usage(e.to_string()))
}

/// `--connect-to HOST:PORT:TARGET_HOST:TARGET_PORT` (for the URL's host and port),
/// `--ipv4` and `--ipv6`: where the run connects, the URL unchanged.
fn connect_elsewhere(a: &OhaArgs, target: &mut Target) -> Result<(), FlagError> {
    if let Some(to) = &a.connect_to {
        common::connect_mapped("oha", "--connect-to", to, target)?;
    }
    if a.ipv4 || a.ipv6 {
        if let Address::Tcp(addrs) = &mut target.address {
            addrs.retain(|s| s.is_ipv4() == a.ipv4);
            if addrs.is_empty() {
                return Err(FlagError::fail(format!(
                    "{}: no {} address",
                    target.host,
                    if a.ipv4 { "IPv4" } else { "IPv6" }
                )));
            }
        }
    }
    Ok(())
}

/// The run the flags ask for. Pure: it resolves no name and reads no file.
fn translate(a: &OhaArgs, inputs: Inputs) -> Result<(LoadSpec, OhaInfo), FlagError> {
    let Inputs {
        target,
        variety,
        body,
        pattern,
        headers,
    } = inputs;
    if a.connections == 0 {
        return Err(FlagError::usage("-c 0: give at least one connection"));
    }
    if a.parallel == 0 {
        return Err(FlagError::usage(
            "-p 0: give at least one request per connection",
        ));
    }
    let (http2, http3) = match (a.http2, a.http_version) {
        (true, _) | (_, Some(HttpVersion::V2)) => (true, false),
        (_, Some(HttpVersion::V3)) => (false, true),
        (_, Some(v @ (HttpVersion::V09 | HttpVersion::V10))) => {
            return Err(FlagError::usage(format!(
                "--http-version {}: requests here are HTTP/1.1, 2 or 3",
                if v == HttpVersion::V09 { "0.9" } else { "1.0" }
            )))
        }
        _ => (false, false),
    };
    if http3 && !target.tls {
        return Err(FlagError::usage(
            "--http-version 3: HTTP/3 runs over QUIC, with TLS; give an https:// URL",
        ));
    }
    let first = match variety.first() {
        Some(r) => r.clone(),
        None => request(a, &target, &headers, body)?,
    };
    let tls = a.tls.config(&target, http2)?;
    let mut spec = LoadSpec::new(target, first);
    spec.load.variety = variety;
    spec.tls = tls;
    spec.load.connections = a.connections;
    spec.load.threads = a.worker_threads.unwrap_or_else(common::cpus).max(1);
    spec.load.keepalive = !a.disable_keepalive;
    spec.load.protocol.http2 = http2;
    if http3 {
        spec.load.protocol.http3 = Some(stampede_engine::h3::H3Settings::default());
    }
    spec.load.pipeline = if http2 || http3 { a.parallel } else { 1 };
    spec.load.timeout = Some(a.timeout.unwrap_or(Duration::from_secs(30)));
    spec.load.connect_timeout = a.connect_timeout;
    // oha follows redirects on HTTP/1 only.
    spec.load.redirects = if http2 || http3 { 0 } else { a.redirect };
    let (requests, duration) = match (a.requests, a.duration) {
        (n, Some(d)) => (n, Some(d)),
        (n, None) => (Some(n.unwrap_or(200)), None),
    };
    spec.load.requests = requests;
    spec.load.duration = duration;
    spec.load.shape = match (a.qps, a.burst_delay) {
        (Some(q), _) if !(q.is_finite() && q > 0.0) => {
            return Err(FlagError::usage(format!(
                "-q {q}: give a rate above 0 requests per second"
            )))
        }
        (Some(rate), _) => Shape::Rate {
            rate,
            gaps: Gaps::Even,
        },
        (None, Some(delay)) => {
            let n = a.burst_rate.unwrap_or(1).max(1);
            Shape::Rate {
                rate: f64::from(n) / delay.as_secs_f64(),
                gaps: Gaps::Burst(n),
            }
        }
        (None, None) => Shape::Closed,
    };
    a.net.apply(&mut spec)?;
    if let Some(p) = pattern {
        if spec.proxy.is_some() && !spec.target.tls {
            return Err(FlagError::usage(
                "--rand-regex-url with -x: drawn paths go through a proxy's tunnel only; use an https:// URL",
            ));
        }
        spec.hooks = Some(randurl::RandomPaths::hooks(
            p,
            &spec.load.request,
            spec.load.pipeline,
            spec.load.seed,
        ));
    }
    spec.record_requests = format(a) == OutputFormat::Csv;
    let info = OhaInfo {
        corrected: a.latency_correction && a.qps.is_some(),
        unit: a.time_unit,
    };
    Ok((spec, info))
}

#[cfg(test)]
mod tests;
