//! `stampede httperf`'s command line: httperf's flags, translated into a run of
//! stampede's engine.
//!
//! Connections (or `--wsess` sessions) are created at `--rate` per second, or by a
//! `--period` distribution, or one after another when no rate is given; each makes
//! `--num-calls` requests in pipelined bursts of `--burst-length`, waiting for a burst's
//! replies before the next. The request is httperf's (`User-Agent: httperf/0.9.0`, then
//! `Host` without the port), so request sizes equal httperf's.

use stampede_engine::input::{self, Input};
use std::time::Duration;

use clap::{ArgAction, Parser};
use stampede_engine::arrivals::Period;
use stampede_engine::{LoadSpec, RequestBuilder, Session, Shape, Target};
use stampede_report::HttperfInfo;

use crate::args as common;
use crate::dialect::{Dialect, Inert, Refused};
use crate::CommandLine;
use crate::FlagError;
use stampede_inputs::sesslog;
use stampede_report::exchange::Parts;

/// httperf's options that stampede refuses or accepts without effect; long options
/// may be shortened to a unique prefix, as httperf's getopt_long allows.
pub const DIALECT: Dialect = Dialect {
    tool: "httperf",
    refused: &[
        Refused {
            flag: "--ssl-ciphers",
            why: "TLS is rustls with its own suites; OpenSSL cipher lists are not applied",
            instead: "leave it out",
        },
        Refused {
            flag: "--ssl-no-reuse",
            why: "TLS sessions are not resumed in any case: each connection makes a full handshake",
            instead: "leave it out",
        },
    ],
    inert: &[
        Inert {
            id: "_max_connections",
            flag: "--max-connections",
            why: "each session makes its calls on one connection, its bursts pipelined on it (--max-piped-calls caps them): within any cap; accepted",
        },
        Inert {
            id: "_debug",
            flag: "--debug",
            why: "httperf's debug levels trace its own internals (in a build made with them); the run's progress is on stderr a line a second, and --print-request/--print-reply show every call; accepted, no effect",
        },
        Inert {
            id: "_hog",
            flag: "--hog",
            why: "stampede always uses as many local ports as it needs; accepted, no effect",
        },
        Inert {
            id: "_client",
            flag: "--client",
            why: "this process is the whole run (split one with --segment K/N); accepted, no effect",
        },
        Inert {
            id: "_think_timeout",
            flag: "--think-timeout",
            why: "--timeout applies to each reply; accepted, no effect",
        },
        Inert {
            id: "_verbose",
            flag: "--verbose",
            why: "the run's progress is on stderr in any case; accepted, no effect",
        },
    ],
    prefixes: true,
    go: false,
};

/// httperf's command line: one field per flag it accepts (hence over twenty).
#[derive(Parser, Debug)]
#[command(
    name = "stampede httperf",
    version,
    about = "httperf-compatible load test (httperf's flags and report)",
    disable_version_flag = true
)]
pub struct HttperfArgs {
    /// Server host name or address
    #[arg(long = "server", value_name = "S", default_value = "localhost")]
    pub server: String,
    /// Server port (default 80, or 443 with --ssl)
    #[arg(long = "port", value_name = "N")]
    pub port: Option<u16>,
    /// Speak TLS (certificates are not verified, as httperf does not)
    #[arg(long = "ssl")]
    pub ssl: bool,
    /// URI to request
    #[arg(long = "uri", value_name = "S", default_value = "/")]
    pub uri: String,
    /// Connections to create
    #[arg(long = "num-conns", value_name = "N", default_value_t = 1)]
    pub num_conns: u64,
    /// Requests per connection
    #[arg(long = "num-calls", value_name = "N", default_value_t = 1)]
    pub num_calls: u32,
    /// Requests pipelined per burst
    #[arg(long = "burst-length", value_name = "N", default_value_t = 1)]
    pub burst_length: u32,
    /// Connections (sessions) created per second; 0 creates each when the previous ends
    #[arg(long = "rate", value_name = "X", default_value_t = 0.0)]
    pub rate: f64,
    #[arg(
        long = "period",
        value_name = "[d|e|u|v]T1[,T2]",
        help = "Interarrival time of connections: d<T>, e<T>, u<T1>,<T2> or v<T1>,<D1>,… (seconds)"
    )]
    pub period: Option<String>,
    /// Seconds to wait for a reply before giving up (client-timo)
    #[arg(long = "timeout", value_name = "X")]
    pub timeout: Option<f64>,
    /// Seconds between the calls of a session's bursts are allowed on top of --timeout
    /// (accepted; stampede applies --timeout to each reply)
    #[arg(long = "think-timeout", value_name = "X")]
    pub _think_timeout: Option<f64>,
    /// Use as many TCP ports as needed (stampede always does)
    #[arg(long = "hog")]
    pub _hog: bool,
    /// Extra request header line(s); "\n" separates several
    #[arg(long = "add-header", value_name = "S", action = ArgAction::Append)]
    pub add_header: Vec<String>,
    /// Request method
    #[arg(long = "method", value_name = "S", default_value = "GET")]
    pub method: String,
    /// Sessions: N1 sessions of N2 calls with X seconds of think time between bursts
    #[arg(long = "wsess", value_name = "N1,N2,X")]
    pub wsess: Option<String>,
    /// Sessions from a session log: N sessions, X seconds of think time by default,
    /// the file F (its sessions taken in turn)
    #[arg(long = "wsesslog", value_name = "N,X,F")]
    pub wsesslog: Option<String>,
    /// A working set: N files walked through at rate X (0.25: each four times in a
    /// row), as --uri/0/1/0/3.html and so on (a digit per level of a 10-ary tree)
    #[arg(long = "wset", value_name = "N,X")]
    pub wset: Option<String>,
    /// URIs from FILE, separated by NUL bytes, taken in order by the run's calls; y
    /// goes round again at the end, n ends the run there
    #[arg(long = "wlog", value_name = "y|n,FILE")]
    pub wlog: Option<String>,
    /// Sessions: a reply with this status fails its session
    #[arg(long = "failure-status", value_name = "N")]
    pub failure_status: Option<u16>,
    /// Sessions: a call answered with --failure-status is sent again instead of
    /// failing its session
    #[arg(long = "retry-on-failure")]
    pub retry_on_failure: bool,
    /// Sessions: at most N calls of a burst pipelined at once
    #[arg(long = "max-piped-calls", value_name = "N")]
    pub max_piped_calls: Option<u32>,
    /// Sessions: a cookie a reply sets is sent with the session's later calls (one per
    /// session; the last set replaces any before; the man page's --session-cookie is a
    /// prefix of it)
    #[arg(long = "session-cookies")]
    pub session_cookies: bool,
    /// Sessions: at most N connections each (a session uses one)
    #[arg(long = "max-connections", value_name = "N")]
    pub _max_connections: Option<u32>,
    /// HTTP version of requests (1.0 or 1.1)
    #[arg(long = "http-version", value_name = "S", default_value = "1.1")]
    pub http_version: String,
    /// Client id and count, I/N (accepted for compatibility; one client)
    #[arg(long = "client", value_name = "I/N")]
    pub _client: Option<String>,
    /// Socket send buffer size, bytes (the kernel's when not given)
    #[arg(long = "send-buffer", value_name = "N")]
    pub send_buffer: Option<usize>,
    /// Socket receive buffer size, bytes (the kernel's when not given)
    #[arg(long = "recv-buffer", value_name = "N")]
    pub recv_buffer: Option<usize>,
    /// Close connections with a TCP RST instead of FIN
    #[arg(long = "close-with-reset")]
    pub close_with_reset: bool,
    /// The name in every request's Host header (default: --server's)
    #[arg(long = "server-name", value_name = "S")]
    pub server_name: Option<String>,
    /// Do not send a Host header
    #[arg(long = "no-host-hdr")]
    pub no_host_hdr: bool,
    /// Worker threads (stampede only; default: all cores)
    #[arg(long = "threads", value_name = "N")]
    pub threads: Option<usize>,
    /// Print version details
    #[arg(short = 'V', long = "version", action = ArgAction::Version)]
    pub _version: Option<bool>,
    /// More output (accepted)
    #[arg(short = 'v', long = "verbose")]
    pub _verbose: bool,
    /// Debug level (accepted; see below)
    #[arg(short = 'd', long = "debug", value_name = "N")]
    pub _debug: Option<u32>,
    /// Print each request as sent: header lines (SH), body lines (SB) and sizes (SS),
    /// each with the call's number; =header or =body prints that part alone
    #[arg(long = "print-request", value_name = "header|body", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    pub print_request: Option<String>,
    /// Print each reply: header lines (RH), body lines (RB) and sizes (RS), each with
    /// the call's number; =header or =body prints that part alone
    #[arg(long = "print-reply", value_name = "header|body", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    pub print_reply: Option<String>,
    #[command(flatten)]
    pub segments: crate::args::SegmentArgs,
    #[command(flatten)]
    pub result: crate::args::ResultFile,
}

/// Most files `--wset` takes: each file's request is prepared before the run.
const MAX_WSET: u64 = 1_000_000;

/// `--wlog=B,FILE`: whether to go round again (`y`) or end the run (`n`) at the end of
/// the file's URIs, and the file.
fn parse_wlog(s: &str) -> Result<(bool, &str), FlagError> {
    match s.split_once(',') {
        Some(("y" | "Y", f)) => Ok((true, f)),
        Some(("n" | "N", f)) => Ok((false, f)),
        _ => Err(FlagError::usage(format!(
            "--wlog: {s:?} is not B,FILE: y (go round again) or n (end the run) at the end of the URIs, a comma and the file, e.g. y,uris.log"
        ))),
    }
}

/// `--wlog`'s URIs in `bytes`, the file `file` (separated by NUL bytes; empty ones
/// skipped).
fn wlog_uris(file: &str, bytes: &[u8]) -> Result<Vec<String>, FlagError> {
    let mut uris = Vec::new();
    for (i, u) in bytes.split(|&b| b == 0).enumerate() {
        let u = std::str::from_utf8(u)
            .map_err(|_| FlagError::usage(format!("--wlog: {file}: URI {} is not UTF-8", i + 1)))?;
        let u = u.trim();
        if !u.is_empty() {
            uris.push(u.to_string());
        }
    }
    if uris.is_empty() {
        return Err(FlagError::usage(format!(
            "--wlog: {file} has no URIs; write them separated by NUL bytes, e.g. printf '/a\\0/b\\0'"
        )));
    }
    if uris.len() as u64 > MAX_WSET {
        return Err(FlagError::usage(format!(
            "--wlog: {file} has {} URIs; at most {MAX_WSET} (each request is prepared before the run)",
            uris.len()
        )));
    }
    Ok(uris)
}

/// What httperf's flags name outside the command line: the session log's text
/// (`--wsesslog`) and the URI log's bytes (`--wlog`), read once the flags that name
/// them are known to be consistent.
#[derive(Default)]
pub struct Files {
    pub wsesslog: Option<String>,
    pub wlog: Option<Vec<u8>>,
}

impl Files {
    fn read(a: &HttperfArgs) -> Result<Files, FlagError> {
        check_flags(a)?;
        let wsesslog = match (&a.wsess, &a.wsesslog) {
            (None, Some(w)) => {
                let (_, _, file) = parse_wsesslog(w)?;
                Some(
                    input::read_text(&file, "--wsesslog", Input::List)
                        .map_err(|e| FlagError::usage(e.to_string()))?,
                )
            }
            _ => None,
        };
        let wlog = match &a.wlog {
            Some(w) => {
                let (_, file) = parse_wlog(w)?;
                Some(
                    input::read(file, "--wlog", Input::List)
                        .map_err(|e| FlagError::usage(e.to_string()))?,
                )
            }
            None => None,
        };
        Ok(Files { wsesslog, wlog })
    }
}

/// `--wset=N,X`: the number of files and the rate at which new ones are taken.
fn parse_wset(s: &str) -> Result<(u64, f64), FlagError> {
    let err = || {
        FlagError::usage(format!(
            "--wset: {s:?} is not N,X (files from 1 to {MAX_WSET}, and a rate above 0 and at most 1 at which new files are taken), e.g. 1024,0.25"
        ))
    };
    let (n, x) = s.split_once(',').ok_or_else(err)?;
    let n: u64 = n.trim().parse().map_err(|_| err())?;
    let x: f64 = x.trim().parse().map_err(|_| err())?;
    if !((1..=MAX_WSET).contains(&n) && x > 0.0 && x <= 1.0) {
        return Err(err());
    }
    Ok((n, x))
}

/// File `i` of a working set of `n` under `prefix`, as httperf names it: `i` in
/// decimal with as many digits as `n - 1` has, a slash before each, then `.html`
/// (the 103rd of 1024 under /wset1024 is /wset1024/0/1/0/3.html).
fn wset_uri(prefix: &str, i: u64, n: u64) -> String {
    let mut digits = Vec::new();
    let (mut j, mut rest) = (1u64, i);
    while j < n {
        digits.push((b'0' + (rest % 10) as u8) as char);
        rest /= 10;
        j = j.saturating_mul(10);
    }
    let mut uri = prefix.trim_end_matches('/').to_string();
    for d in digits.iter().rev() {
        uri.push('/');
        uri.push(*d);
    }
    uri + ".html"
}

fn parse_wsess(s: &str) -> Result<(u64, u32, f64), FlagError> {
    let err = || {
        FlagError::usage(format!("--wsess: {s:?} is not N1,N2,X (sessions, calls per session, think seconds), e.g. 100,10,1.5"))
    };
    let p: Vec<&str> = s.split(',').map(str::trim).collect();
    if p.len() != 3 {
        return Err(err());
    }
    let n1 = p[0].parse().map_err(|_| err())?;
    let n2 = p[1].parse().map_err(|_| err())?;
    let x: f64 = p[2].parse().map_err(|_| err())?;
    if n1 == 0 || n2 == 0 || !(x.is_finite() && x >= 0.0) {
        return Err(err());
    }
    Ok((n1, n2, x))
}

/// `--wsesslog=N,X,F`: sessions, default think seconds, the session log's path.
fn parse_wsesslog(s: &str) -> Result<(u64, f64, String), FlagError> {
    let err = || {
        FlagError::usage(format!(
            "--wsesslog: {s:?} is not N,X,F (sessions, default think seconds, session log file), e.g. 100,1.5,sessions.log"
        ))
    };
    let mut p = s.splitn(3, ',');
    let (Some(n), Some(x), Some(f)) = (p.next(), p.next(), p.next()) else {
        return Err(err());
    };
    let n: u64 = n.trim().parse().map_err(|_| err())?;
    let x: f64 = x.trim().parse().map_err(|_| err())?;
    if n == 0 || !(x.is_finite() && x >= 0.0) || f.is_empty() {
        return Err(err());
    }
    Ok((n, x, f.to_string()))
}

/// What `--print-request` and `--print-reply` ask to see of each call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Printed {
    pub request: Parts,
    pub reply: Parts,
}

/// `--print-request` and `--print-reply`, read.
fn printed(a: &HttperfArgs) -> Result<Printed, FlagError> {
    let parts = |flag: &str, v: &Option<String>| match v {
        Some(v) => parse_parts(flag, v),
        None => Ok(Parts::default()),
    };
    Ok(Printed {
        request: parts("--print-request", &a.print_request)?,
        reply: parts("--print-reply", &a.print_reply)?,
    })
}

/// httperf's `--print-request[=header|body]` (no value: both), for `flag`.
pub fn parse_parts(flag: &str, value: &str) -> Result<Parts, FlagError> {
    match value {
        "" => Ok(Parts {
            header: true,
            body: true,
        }),
        "header" => Ok(Parts {
            header: true,
            body: false,
        }),
        "body" => Ok(Parts {
            header: false,
            body: true,
        }),
        v => Err(FlagError::usage(format!(
            "{flag}: {v:?} is not a part; write {flag} (header and body), {flag}=header or {flag}=body"
        ))),
    }
}

/// httperf's place in the dialects' run contract.
pub struct Httperf;

/// What httperf's report needs: its settings echoed, and the CPU time the run took.
pub struct HttperfRun {
    pub info: HttperfInfo,
    /// What `--print-request` and `--print-reply` ask to see of each call.
    pub print: Printed,
    /// `--wlog n` with fewer URIs than the run's calls: the log's URIs and the calls
    /// asked for (the run ends when the log does).
    pub short_log: Option<(u64, u64)>,
}

impl CommandLine for Httperf {
    type Args = HttperfArgs;
    type Inputs = (Target, String, Files);
    type Info = HttperfRun;
    const DIALECT: &'static Dialect = &DIALECT;

    fn result_file(a: &HttperfArgs) -> &crate::args::ResultFile {
        &a.result
    }

    fn segments(a: &HttperfArgs) -> &crate::args::SegmentArgs {
        &a.segments
    }

    fn inputs(a: &HttperfArgs) -> Result<Self::Inputs, FlagError> {
        let (url, uri) = url_of(a)?;
        let target = common::resolve(&url, None)?;
        Ok((target, uri, Files::read(a)?))
    }

    fn translate(
        a: &HttperfArgs,
        (target, uri, files): Self::Inputs,
    ) -> Result<(LoadSpec, HttperfRun), FlagError> {
        let spec = translate(a, target, &uri, files)?;
        let info = HttperfInfo {
            command: normalized(a, &uri),
            cpu: None,
            sessions: a.wsess.is_some() || a.wsesslog.is_some(),
        };
        Ok((
            spec,
            HttperfRun {
                info,
                print: printed(a)?,
                short_log: None,
            },
        ))
    }
}

/// The run's settings echoed the way httperf echoes its own.
fn normalized(a: &HttperfArgs, uri: &str) -> String {
    let mut s = format!(
        "stampede httperf --server={} --port={} --uri={uri} --rate={}",
        a.server,
        a.port.unwrap_or(if a.ssl { 443 } else { 80 }),
        a.rate
    );
    if a.ssl {
        s += " --ssl";
    }
    if let Some(p) = &a.period {
        s += &format!(" --period={p}");
    }
    match (&a.wsess, &a.wsesslog) {
        (Some(w), _) => s += &format!(" --wsess={w} --burst-length={}", a.burst_length),
        (None, Some(w)) => s += &format!(" --wsesslog={w}"),
        (None, None) => {
            s += &format!(
                " --num-conns={} --num-calls={} --burst-length={}",
                a.num_conns, a.num_calls, a.burst_length
            )
        }
    }
    if let Some(t) = a.timeout {
        s += &format!(" --timeout={t}");
    }
    s
}

/// The URL httperf's flags name (`--server`, `--port`, `--uri`, `--ssl`), and the
/// request-target; checks the flags that need no target.
fn url_of(a: &HttperfArgs) -> Result<(String, String), FlagError> {
    if a.num_conns == 0 || a.num_calls == 0 || a.burst_length == 0 {
        return Err(FlagError::usage(
            "--num-conns, --num-calls and --burst-length must be at least 1",
        ));
    }
    if !(a.rate.is_finite() && a.rate >= 0.0) {
        return Err(FlagError::usage(
            "--rate must be a non-negative number of connections per second",
        ));
    }
    let host = if a.server.contains(':') && !a.server.starts_with('[') {
        format!("[{}]", a.server)
    } else {
        a.server.clone()
    };
    let uri = if a.uri.starts_with('/') {
        a.uri.clone()
    } else {
        format!("/{}", a.uri)
    };
    let (scheme, default_port) = if a.ssl { ("https", 443) } else { ("http", 80) };
    let url = format!("{scheme}://{host}:{}{uri}", a.port.unwrap_or(default_port));
    Ok((url, uri))
}

/// httperf's request for `method` and `uri`: its User-Agent, the Host header
/// (`--server-name`, `--no-host-hdr`) and `--add-header`'s lines.
fn builder(
    a: &HttperfArgs,
    version: stampede_engine::Version,
    method: &str,
    uri: &str,
) -> Result<RequestBuilder, FlagError> {
    let mut b = RequestBuilder::new(method, uri)
        .version(version)
        .header("User-Agent", "httperf/0.9.0");
    if !a.no_host_hdr {
        b = b.header("Host", a.server_name.as_deref().unwrap_or(&a.server));
    }
    for h in &a.add_header {
        for line in h
            .replace("\\n", "\n")
            .lines()
            .filter(|l| !l.trim().is_empty())
        {
            let (n, v) = stampede_engine::request::parse_header_arg(line).ok_or_else(|| {
                FlagError::usage(format!("--add-header: {line:?} is not 'Name: value'"))
            })?;
            b = b.header(&n, &v);
        }
    }
    Ok(b)
}

/// The flags that cannot go together, or out of range, refused before any file they
/// name is read.
fn check_flags(a: &HttperfArgs) -> Result<(), FlagError> {
    let sessions = a.wsess.is_some() || a.wsesslog.is_some();
    for (given, flag) in [
        (a.failure_status.is_some(), "--failure-status"),
        (a.retry_on_failure, "--retry-on-failure"),
        (a.max_piped_calls.is_some(), "--max-piped-calls"),
        (a.session_cookies, "--session-cookies"),
        (a._max_connections.is_some(), "--max-connections"),
    ] {
        if given && !sessions {
            return Err(FlagError::usage(format!(
                "{flag} applies to session workloads, as in httperf: give --wsess or --wsesslog"
            )));
        }
    }
    if a.retry_on_failure && a.failure_status.is_none() {
        return Err(FlagError::usage(
            "--retry-on-failure retries the calls answered with --failure-status: give it too",
        ));
    }
    if a.wset.is_some() && a.wsesslog.is_some() {
        return Err(FlagError::usage(
            "--wset walks through generated URIs; --wsesslog's sessions name their own: give one",
        ));
    }
    if a.wlog.is_some() && (a.wset.is_some() || a.wsesslog.is_some()) {
        return Err(FlagError::usage(
            "--wlog gives the URIs; --wset and --wsesslog give their own: give one",
        ));
    }
    if a.wsess.is_some() && a.wsesslog.is_some() {
        return Err(FlagError::usage(
            "--wsess and --wsesslog both define the sessions; give one",
        ));
    }
    if a.max_piped_calls == Some(0) || a._max_connections == Some(0) {
        return Err(FlagError::usage(
            "--max-piped-calls and --max-connections must be at least 1",
        ));
    }
    Ok(())
}

/// httperf's flags as a run: sessions of calls in bursts (`--wsess` or
/// `--num-conns`/`--num-calls`), at a rate or a period. Pure: the caller resolves the
/// target and reads the files the flags name.
///
/// Long on purpose: httperf's flags one after another, each a few lines.
fn translate(
    a: &HttperfArgs,
    target: Target,
    uri: &str,
    files: Files,
) -> Result<LoadSpec, FlagError> {
    let tls = crate::tls::TlsArgs::dialect(&target, false)?;
    let version = match a.http_version.as_str() {
        "1.1" => stampede_engine::Version::Http11,
        "1.0" => stampede_engine::Version::Http10,
        other => {
            return Err(FlagError::usage(format!(
                "--http-version: {other:?} is not 1.0 or 1.1"
            )))
        }
    };
    let b = builder(a, version, &a.method, uri)?;
    check_flags(a)?;
    let request = b
        .clone()
        .build()
        .map_err(|e| FlagError::usage(e.to_string()))?;
    let mut script = Vec::new();
    let (count, calls, think) = match (&a.wsess, &a.wsesslog) {
        (Some(w), _) => {
            let (n1, n2, x) = parse_wsess(w)?;
            (n1, n2, Duration::from_secs_f64(x))
        }
        (None, Some(w)) => {
            let (n, x, file) = parse_wsesslog(w)?;
            let text = files.wsesslog.as_deref().unwrap_or_default();
            let log = sesslog::parse(text, &file)?;
            let think = Duration::from_secs_f64(x);
            script = sesslog::steps(&log, think, |c| {
                let uri = if c.uri.starts_with('/') {
                    c.uri.clone()
                } else {
                    format!("/{}", c.uri)
                };
                let mut cb = builder(a, version, &c.method, &uri)?;
                if let Some(body) = &c.body {
                    cb = cb.body(body.clone());
                }
                cb.build()
                    .map_err(|e| FlagError::usage(format!("{file}:{}: {e}", c.line)))
            })?;
            (n, 1, think)
        }
        _ => (a.num_conns, a.num_calls, Duration::ZERO),
    };
    let period = match (&a.period, a.rate) {
        (Some(p), _) => {
            Some(Period::parse(p).map_err(|e| FlagError::usage(format!("--period: {e}")))?)
        }
        (None, r) if r > 0.0 => Some(Period::Deterministic(1.0 / r)),
        _ => None,
    };
    let mut spec = LoadSpec::new(target, request);
    if let Some(w) = &a.wset {
        let (n, x) = parse_wset(w)?;
        spec.load.variety = (0..n)
            .map(|i| {
                builder(a, version, &a.method, &wset_uri(uri, i, n))?
                    .build()
                    .map_err(|e| FlagError::usage(format!("--wset: {e}")))
            })
            .collect::<Result<_, _>>()?;
        spec.load.walk = Some(stampede_engine::Walk {
            rate: x,
            once: false,
        });
    }
    if let Some(w) = &a.wlog {
        let (again, file) = parse_wlog(w)?;
        let mut uris = wlog_uris(file, files.wlog.as_deref().unwrap_or_default())?;
        // A walk at rate 1 sends request (i + 1) mod n on call i: with the last URI
        // first, call i sends the log's URI i.
        uris.rotate_right(1);
        spec.load.variety = (uris.iter())
            .map(|u| {
                builder(a, version, &a.method, u)?
                    .build()
                    .map_err(|e| FlagError::usage(format!("--wlog: {u}: {e}")))
            })
            .collect::<Result<_, _>>()?;
        spec.load.walk = Some(stampede_engine::Walk {
            rate: 1.0,
            once: !again,
        });
    }
    spec.load.script = script;
    spec.tls = tls;
    spec.load.socket.send_buffer = a.send_buffer;
    spec.load.socket.recv_buffer = a.recv_buffer;
    spec.load.socket.reset_on_close = a.close_with_reset;
    common::check_socket(&spec, "--server")?;
    spec.load.shape = Shape::Sessions { period, count };
    spec.load.session = Session {
        calls,
        burst: a.burst_length.min(calls),
        think,
        fail_status: a.failure_status,
        retry: a.retry_on_failure,
        max_piped: a.max_piped_calls.unwrap_or(0),
        cookies: a.session_cookies,
    };
    spec.load.threads = a.threads.unwrap_or_else(common::cpus);
    // httperf waits for replies indefinitely unless told; bound it at 5 minutes.
    spec.load.timeout = Some(Duration::from_secs_f64(
        a.timeout.unwrap_or(300.0).max(0.001),
    ));
    spec.load.connect_timeout = spec
        .load
        .timeout
        .unwrap_or(Duration::from_secs(10))
        .min(Duration::from_secs(60));
    Ok(spec)
}

#[cfg(test)]
mod tests;
