//! `stampede httperf`: httperf's flags and report, measured with stampede's engine.
//!
//! Connections (or `--wsess` sessions) are created at `--rate` per second, or by a
//! `--period` distribution, or one after another when no rate is given; each makes
//! `--num-calls` requests in pipelined bursts of `--burst-length`, waiting for a burst's
//! replies before the next. The request is httperf's (`User-Agent: httperf/0.9.0`, then
//! `Host` without the port), so request sizes equal httperf's.

use std::time::Duration;

use clap::{ArgAction, Parser};
use stampede_engine::arrivals::Period;
use stampede_engine::{LoadSpec, RequestBuilder, Session, Shape, Target};
use stampede_report::{httperf_report, loud_warnings, HttperfInfo};

use crate::ab::clap_exit;
use crate::common::{self, Exit, ProgressOptions};

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
    server: String,
    /// Server port (default 80, or 443 with --ssl)
    #[arg(long = "port", value_name = "N")]
    port: Option<u16>,
    /// Speak TLS (certificates are not verified, as httperf does not)
    #[arg(long = "ssl")]
    ssl: bool,
    /// URI to request
    #[arg(long = "uri", value_name = "S", default_value = "/")]
    uri: String,
    /// Connections to create
    #[arg(long = "num-conns", value_name = "N", default_value_t = 1)]
    num_conns: u64,
    /// Requests per connection
    #[arg(long = "num-calls", value_name = "N", default_value_t = 1)]
    num_calls: u32,
    /// Requests pipelined per burst
    #[arg(long = "burst-length", value_name = "N", default_value_t = 1)]
    burst_length: u32,
    /// Connections (sessions) created per second; 0 creates each when the previous ends
    #[arg(long = "rate", value_name = "X", default_value_t = 0.0)]
    rate: f64,
    #[arg(
        long = "period",
        value_name = "[d|e|u|v]T1[,T2]",
        help = "Interarrival time of connections: d<T>, e<T>, u<T1>,<T2> or v<T1>,<D1>,… (seconds)"
    )]
    period: Option<String>,
    /// Seconds to wait for a reply before giving up (client-timo)
    #[arg(long = "timeout", value_name = "X")]
    timeout: Option<f64>,
    /// Seconds between the calls of a session's bursts are allowed on top of --timeout
    /// (accepted; stampede applies --timeout to each reply)
    #[arg(long = "think-timeout", value_name = "X")]
    _think_timeout: Option<f64>,
    /// Use as many TCP ports as needed (stampede always does)
    #[arg(long = "hog")]
    _hog: bool,
    /// Extra request header line(s); "\n" separates several
    #[arg(long = "add-header", value_name = "S", action = ArgAction::Append)]
    add_header: Vec<String>,
    /// Request method
    #[arg(long = "method", value_name = "S", default_value = "GET")]
    method: String,
    /// Sessions: N1 sessions of N2 calls with X seconds of think time between bursts
    #[arg(long = "wsess", value_name = "N1,N2,X")]
    wsess: Option<String>,
    /// HTTP version of requests (1.0 or 1.1)
    #[arg(long = "http-version", value_name = "S", default_value = "1.1")]
    http_version: String,
    /// Client id and count, I/N (accepted for compatibility; one client)
    #[arg(long = "client", value_name = "I/N")]
    _client: Option<String>,
    /// Socket send buffer size (accepted for compatibility)
    #[arg(long = "send-buffer", value_name = "N")]
    _send_buffer: Option<u64>,
    /// Socket receive buffer size (accepted for compatibility)
    #[arg(long = "recv-buffer", value_name = "N")]
    _recv_buffer: Option<u64>,
    /// Do not send a Host header
    #[arg(long = "no-host-hdr")]
    no_host_hdr: bool,
    /// Worker threads (stampede only; default: all cores)
    #[arg(long = "threads", value_name = "N")]
    threads: Option<usize>,
    /// Print version details
    #[arg(short = 'V', long = "version", action = ArgAction::Version)]
    _version: Option<bool>,
    /// More output (accepted)
    #[arg(short = 'v', long = "verbose")]
    _verbose: bool,
    #[command(flatten)]
    pub segments: crate::common::SegmentArgs,
    #[command(flatten)]
    pub result: crate::common::ResultFile,
}

fn parse_wsess(s: &str) -> Result<(u64, u32, f64), Exit> {
    let err = || {
        Exit::usage(format!("--wsess: {s:?} is not N1,N2,X (sessions, calls per session, think seconds), e.g. 100,10,1.5"))
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

pub fn main(args: &[String]) -> Result<(), Exit> {
    for a in args {
        for flag in [
            "--wsesslog",
            "--wset",
            "--wlog",
            "--print-reply",
            "--print-request",
            "--session-cookie",
            "--retry-on-failure",
            "--close-with-reset",
        ] {
            if a == flag || a.starts_with(&format!("{flag}=")) {
                return Err(Exit::usage(format!(
                    "httperf's {flag} is not supported by stampede httperf; supported: --server --port --uri --num-conns --num-calls --burst-length --rate --period --timeout --think-timeout --hog --add-header --method --wsess --http-version"
                )));
            }
        }
    }
    let a = HttperfArgs::try_parse_from(
        std::iter::once("stampede httperf".to_string()).chain(args.iter().cloned()),
    )
    .map_err(clap_exit)?;
    a.result.claim_stdout();
    let (url, uri) = url_of(&a)?;
    let target = common::resolve(&url, None)?;
    let mut spec = translate(&a, target, &uri)?;
    a.segments.apply(&mut spec)?;
    let (count, calls) = match spec.shape {
        Shape::Sessions { count, .. } => (count, spec.session.calls),
        _ => unreachable!("httperf runs sessions"),
    };
    let command = normalized(&a, &uri);
    eprintln!(
        "stampede httperf: {count} connections of {calls} calls each to {}; the report follows at the end",
        spec.target.url
    );
    let before = stampede_engine::limits::self_cpu();
    let run = common::execute(
        spec,
        ProgressOptions {
            quiet: false,
            heartbeat: None,
            // httperf is silent until its report; stampede says how the run goes on
            // stderr, a line a second when that is not a terminal, so stdout stays
            // httperf's report alone.
            lines: true,
            ..Default::default()
        },
    )?;
    let after = stampede_engine::limits::self_cpu();
    let info = HttperfInfo {
        command,
        cpu: Some((after.user - before.user, after.system - before.system)),
        sessions: a.wsess.is_some(),
    };
    common::out(&httperf_report(&run.result, &info));
    a.result.write(&run.result)?;
    for w in loud_warnings(&run.result) {
        eprintln!("stampede: {w}");
    }
    Ok(())
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
    match &a.wsess {
        Some(w) => s += &format!(" --wsess={w} --burst-length={}", a.burst_length),
        None => {
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
fn url_of(a: &HttperfArgs) -> Result<(String, String), Exit> {
    if a.num_conns == 0 || a.num_calls == 0 || a.burst_length == 0 {
        return Err(Exit::usage(
            "--num-conns, --num-calls and --burst-length must be at least 1",
        ));
    }
    if !(a.rate.is_finite() && a.rate >= 0.0) {
        return Err(Exit::usage(
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

/// httperf's flags as a run: sessions of calls in bursts (`--wsess` or
/// `--num-conns`/`--num-calls`), at a rate or a period. Pure: the caller resolves the
/// target.
fn translate(a: &HttperfArgs, target: Target, uri: &str) -> Result<LoadSpec, Exit> {
    let tls = crate::tls::TlsArgs::dialect(&target, false)?;
    let version = match a.http_version.as_str() {
        "1.1" => stampede_engine::Version::Http11,
        "1.0" => stampede_engine::Version::Http10,
        other => {
            return Err(Exit::usage(format!(
                "--http-version: {other:?} is not 1.0 or 1.1"
            )))
        }
    };
    let mut b = RequestBuilder::new(&a.method, uri)
        .version(version)
        .header("User-Agent", "httperf/0.9.0");
    if !a.no_host_hdr {
        b = b.header("Host", &a.server);
    }
    for h in &a.add_header {
        for line in h
            .replace("\\n", "\n")
            .lines()
            .filter(|l| !l.trim().is_empty())
        {
            let (n, v) = stampede_engine::request::parse_header_arg(line).ok_or_else(|| {
                Exit::usage(format!("--add-header: {line:?} is not 'Name: value'"))
            })?;
            b = b.header(&n, &v);
        }
    }
    let (count, calls, think) = match &a.wsess {
        Some(w) => {
            let (n1, n2, x) = parse_wsess(w)?;
            (n1, n2, Duration::from_secs_f64(x))
        }
        None => (a.num_conns, a.num_calls, Duration::ZERO),
    };
    let period = match (&a.period, a.rate) {
        (Some(p), _) => Some(Period::parse(p).map_err(|e| Exit::usage(format!("--period: {e}")))?),
        (None, r) if r > 0.0 => Some(Period::Deterministic(1.0 / r)),
        _ => None,
    };
    let mut spec = LoadSpec::new(target, b.build().map_err(|e| Exit::usage(e.to_string()))?);
    spec.tls = tls;
    spec.shape = Shape::Sessions { period, count };
    spec.session = Session {
        calls,
        burst: a.burst_length.min(calls),
        think,
    };
    spec.threads = a.threads.unwrap_or_else(common::cpus);
    // httperf waits for replies indefinitely unless told; bound it at 5 minutes.
    spec.timeout = Some(Duration::from_secs_f64(
        a.timeout.unwrap_or(300.0).max(0.001),
    ));
    spec.connect_timeout = spec
        .timeout
        .unwrap_or(Duration::from_secs(10))
        .min(Duration::from_secs(60));
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec_of(args: &[&str]) -> Result<LoadSpec, Exit> {
        let a = HttperfArgs::try_parse_from(std::iter::once("httperf").chain(args.iter().copied()))
            .map_err(clap_exit)?;
        let (url, uri) = url_of(&a)?;
        translate(&a, Target::parse(&url).unwrap(), &uri)
    }

    #[test]
    fn flags_become_the_sessions_httperf_would_make() {
        let s = spec_of(&[
            "--server",
            "127.0.0.1",
            "--port",
            "9",
            "--uri",
            "/p",
            "--num-conns",
            "20",
            "--num-calls",
            "4",
            "--burst-length",
            "2",
            "--rate",
            "50",
        ])
        .unwrap();
        assert!(matches!(
            s.shape,
            Shape::Sessions { count: 20, period: Some(Period::Deterministic(p)) } if p == 0.02
        ));
        assert_eq!((s.session.calls, s.session.burst), (4, 2));
        assert_eq!(
            String::from_utf8(s.request.bytes).unwrap(),
            "GET /p HTTP/1.1\r\nUser-Agent: httperf/0.9.0\r\nHost: 127.0.0.1\r\n\r\n"
        );
        // --wsess N1,N2,X: N1 sessions of N2 calls, X seconds of think time.
        let s = spec_of(&["--server", "127.0.0.1", "--port", "9", "--wsess", "5,3,0.5"]).unwrap();
        assert!(matches!(s.shape, Shape::Sessions { count: 5, .. }));
        assert_eq!(s.session.calls, 3);
        assert_eq!(s.session.think, Duration::from_millis(500));
    }

    #[test]
    fn impossible_values_name_the_flag() {
        for (args, flag) in [
            (&["--num-conns", "0"][..], "--num-conns"),
            (&["--rate=-1"], "--rate"),
            (&["--http-version", "2"], "--http-version"),
        ] {
            let e = spec_of(args).unwrap_err();
            assert!(e.message.contains(flag), "{args:?}: {}", e.message);
        }
    }
}
