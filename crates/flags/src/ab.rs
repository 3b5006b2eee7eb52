//! `stampede ab`'s command line: ApacheBench's flags, translated into a run of
//! stampede's engine.
//!
//! Requests are written the way ab writes them (HTTP/1.0, its header order, its
//! User-Agent), so byte counts equal ab's against the same server. Two things differ on
//! purpose: all cores are used by default (`--threads` to change), and any non-2xx
//! response or failed request is reported loudly, because ab's silence about error pages
//! has produced published benchmarks of 404 pages.

use clap::{ArgAction, Parser};
use stampede_engine::{AbRequest, LoadSpec, Target};
use stampede_report::AbInfo;

use crate::args as common;
use crate::dialect::{Dialect, Refused};
use crate::CommandLine;
use crate::FlagError;

/// ab's flags that stampede refuses, with why and what instead.
pub const DIALECT: Dialect = Dialect {
    tool: "ab",
    refused: &[
        Refused {
            flag: "-f",
            why:
                "TLS is rustls, which speaks TLS 1.2 and 1.3 only; older protocols cannot be chosen",
            instead: "leave it out",
        },
        Refused {
            flag: "-Z",
            why: "TLS is rustls with its own suites; OpenSSL cipher names are not applied",
            instead: "leave it out",
        },
        Refused {
            flag: "-E",
            why: "a client certificate is given with the native interface",
            instead: "`stampede load URL --cert FILE --key FILE`",
        },
        Refused {
            flag: "-I",
            why: "SNI is always sent for a host name, as TLS clients do",
            instead: "leave it out",
        },
    ],
    inert: &[],
    prefixes: false,
    go: false,
};

/// ab's maximum request count when only a time limit is given.
const AB_MAX_REQUESTS: u64 = 50_000;

/// ab's command line: one field per flag it accepts (hence over twenty).
#[derive(Parser, Debug)]
#[command(
    name = "stampede ab",
    version,
    about = "ApacheBench-compatible load test (ab's flags and report)",
    disable_help_flag = true,
    disable_version_flag = true
)]
pub struct AbArgs {
    /// Number of requests to perform
    #[arg(short = 'n', value_name = "requests")]
    pub requests: Option<u64>,
    /// Number of multiple requests to make at a time
    #[arg(short = 'c', value_name = "concurrency", default_value_t = 1)]
    pub concurrency: u64,
    /// Seconds to max. to spend on benchmarking (implies -n 50000)
    #[arg(short = 't', value_name = "timelimit")]
    pub timelimit: Option<f64>,
    /// Seconds to max. wait for each response
    #[arg(short = 's', value_name = "timeout", default_value_t = 30.0)]
    pub timeout: f64,
    /// Use HTTP KeepAlive feature
    #[arg(short = 'k')]
    pub keepalive: bool,
    /// Add arbitrary header line, eg. 'Accept-Encoding: gzip' (repeatable)
    #[arg(short = 'H', value_name = "attribute", action = ArgAction::Append)]
    pub headers: Vec<String>,
    /// Add cookie, eg. 'Apache=1234' (repeatable)
    #[arg(short = 'C', value_name = "attribute", action = ArgAction::Append)]
    pub cookies: Vec<String>,
    /// Add Basic WWW Authentication, the attributes are a colon separated username and password
    #[arg(short = 'A', value_name = "attribute")]
    pub auth: Option<String>,
    /// File containing data to POST. Remember also to set -T
    #[arg(short = 'p', value_name = "postfile")]
    pub postfile: Option<String>,
    /// File containing data to PUT. Remember also to set -T
    #[arg(short = 'u', value_name = "putfile")]
    pub putfile: Option<String>,
    /// Content-type header to use for POST/PUT data
    #[arg(short = 'T', value_name = "content-type", default_value = "text/plain")]
    pub content_type: String,
    /// Method name
    #[arg(short = 'm', value_name = "method")]
    pub method: Option<String>,
    /// Use HEAD instead of GET
    #[arg(short = 'i')]
    pub head: bool,
    /// Accept variable document length (use this for dynamic pages)
    #[arg(short = 'l')]
    pub variable_length: bool,
    /// Do not show progress when doing more than 150 requests
    #[arg(short = 'q')]
    pub quiet: bool,
    /// Output CSV file with percentages served
    #[arg(short = 'e', value_name = "filename")]
    pub csv: Option<String>,
    /// Output collected data to gnuplot format file
    #[arg(short = 'g', value_name = "filename")]
    pub gnuplot: Option<String>,
    /// Don't exit on socket receive errors (stampede never does; accepted for compatibility)
    #[arg(short = 'r')]
    pub _recv_ok: bool,
    /// How much troubleshooting info to print: 2 the request and replies other than 2xx, 3 every reply's code, 4 every reply's head too
    #[arg(short = 'v', value_name = "verbosity", default_value_t = 0)]
    pub verbosity: u32,
    /// Do not show percentiles served table
    #[arg(short = 'd')]
    pub no_percentiles: bool,
    /// Do not show confidence estimators and warnings
    #[arg(short = 'S')]
    pub no_confidence: bool,
    /// Print out results in HTML tables
    #[arg(short = 'w')]
    pub html: bool,
    /// String to insert as table attributes
    #[arg(short = 'x', value_name = "attributes")]
    pub table_attrs: Option<String>,
    /// String to insert as tr attributes
    #[arg(short = 'y', value_name = "attributes")]
    pub tr_attrs: Option<String>,
    /// String to insert as td or th attributes
    #[arg(short = 'z', value_name = "attributes")]
    pub td_attrs: Option<String>,
    /// Proxyserver and port number to use
    #[arg(short = 'X', value_name = "proxy:port")]
    pub proxy: Option<String>,
    /// Add Basic Proxy Authentication, the attributes are a colon separated username
    /// and password
    #[arg(short = 'P', value_name = "attribute")]
    pub proxy_auth: Option<String>,
    /// Address to bind to when making outgoing connections
    #[arg(short = 'B', value_name = "address")]
    pub local_address: Option<std::net::IpAddr>,
    /// Size of TCP send/receive buffer, in bytes
    #[arg(short = 'b', value_name = "windowsize")]
    pub window: Option<usize>,
    /// Worker threads (stampede only; default: all cores)
    #[arg(long = "threads", value_name = "N")]
    pub threads: Option<usize>,
    /// Connect to this Unix socket instead of the URL's host (stampede only)
    #[arg(long = "unix-socket", value_name = "PATH")]
    pub unix_socket: Option<String>,
    /// Display version number and exit
    #[arg(short = 'V', action = ArgAction::Version)]
    pub _version: Option<bool>,
    /// Display usage information (this message)
    #[arg(short = 'h', action = ArgAction::Help)]
    pub _help: Option<bool>,
    #[arg(value_name = "URL", help = "http[s]://hostname[:port]/path")]
    pub url: String,
    #[command(flatten)]
    pub segments: crate::args::SegmentArgs,
    #[command(flatten)]
    pub result: crate::args::ResultFile,
}

/// ab's place in the dialects' run contract.
pub struct Ab;

impl CommandLine for Ab {
    type Args = AbArgs;
    type Inputs = (Target, Option<Vec<u8>>);
    type Info = AbInfo;
    const DIALECT: &'static Dialect = &DIALECT;

    fn result_file(a: &AbArgs) -> &crate::args::ResultFile {
        &a.result
    }

    fn segments(a: &AbArgs) -> &crate::args::SegmentArgs {
        &a.segments
    }

    fn inputs(a: &AbArgs) -> Result<Self::Inputs, FlagError> {
        // As ab: the scheme is part of the URL, and a URL without one is refused.
        if !a.url.contains("://") {
            return Err(FlagError::usage(format!(
                "ab: invalid URL {:?}: it needs its scheme, e.g. http://{}",
                a.url,
                if a.url.contains('/') {
                    a.url.clone()
                } else {
                    format!("{}/", a.url)
                }
            )));
        }
        let target = common::resolve(&a.url, a.unix_socket.as_deref())?;
        let body = match (&a.postfile, &a.putfile) {
            (Some(p), None) | (None, Some(p)) => Some(common::read_body(p)?),
            _ => None,
        };
        Ok((target, body))
    }

    fn translate(
        a: &AbArgs,
        (target, body): Self::Inputs,
    ) -> Result<(LoadSpec, AbInfo), FlagError> {
        translate(a, target, body)
    }
}

/// ab's flags as a run: the load and what the report says of it. Pure: the caller
/// resolves the target and reads the body file (`-p`/`-u`), so that each flag's
/// meaning can be checked without a network or a file.
fn translate(
    a: &AbArgs,
    target: Target,
    body: Option<Vec<u8>>,
) -> Result<(LoadSpec, AbInfo), FlagError> {
    if a.concurrency == 0 {
        return Err(FlagError::usage("-c: concurrency must be at least 1"));
    }
    let requests = match (a.requests, a.timelimit) {
        (Some(n), _) => n,
        (None, Some(_)) => AB_MAX_REQUESTS,
        (None, None) => 1,
    };
    if requests == 0 {
        return Err(FlagError::usage(
            "-n: the number of requests must be at least 1",
        ));
    }
    if a.concurrency > requests {
        return Err(FlagError::usage(format!(
            "-c: cannot use concurrency level greater than total number of requests ({} > {requests})",
            a.concurrency
        )));
    }
    for (flag, given) in [
        ("-x", &a.table_attrs),
        ("-y", &a.tr_attrs),
        ("-z", &a.td_attrs),
    ] {
        if given.is_some() && !a.html {
            return Err(FlagError::usage(format!(
                "{flag}: HTML attributes apply to -w's tables; add -w"
            )));
        }
    }
    if a.proxy_auth.is_some() && a.proxy.is_none() {
        return Err(FlagError::usage(
            "-P: proxy credentials need a proxy; add -X proxy:port",
        ));
    }
    if a.postfile.is_some() && a.putfile.is_some() {
        return Err(FlagError::usage(
            "-p and -u cannot be combined: choose POST or PUT",
        ));
    }
    let body_method = match (&a.postfile, &a.putfile) {
        (Some(_), _) => "POST",
        (_, Some(_)) => "PUT",
        _ => "GET",
    };
    let method = match (&a.method, a.head) {
        (Some(m), _) => m.to_ascii_uppercase(),
        (None, true) => "HEAD".to_string(),
        (None, false) => body_method.to_string(),
    };

    let headers = a
        .headers
        .iter()
        .map(|h| common::header_arg(h))
        .collect::<Result<Vec<_>, _>>()?;
    let request = AbRequest {
        method: &method,
        keepalive: a.keepalive,
        cookies: &a.cookies,
        auth: a.auth.as_deref(),
        body: body.as_deref().map(|b| (b, a.content_type.as_str())),
        headers: &headers,
    }
    .build(&target)
    .map_err(|e| FlagError::usage(e.to_string()))?;
    let sent_body = a.postfile.is_some() || a.putfile.is_some();
    let mut spec = LoadSpec::new(target.clone(), request);
    // ab does not verify certificates.
    spec.tls = crate::tls::TlsArgs::dialect(&target, false)?;
    spec.load.connections = a.concurrency as usize;
    spec.load.threads = a.threads.unwrap_or_else(common::cpus);
    spec.load.requests = Some(requests);
    spec.load.duration = a
        .timelimit
        .map(|t| std::time::Duration::from_secs_f64(t.max(0.001)));
    spec.load.keepalive = a.keepalive;
    spec.load.timeout = Some(std::time::Duration::from_secs_f64(a.timeout.max(0.001)));
    spec.load.check_length = !a.variable_length;
    spec.record_requests = a.gnuplot.is_some();
    spec.load.socket.local = a.local_address.into_iter().collect();
    spec.load.socket.send_buffer = a.window;
    spec.load.socket.recv_buffer = a.window;
    common::check_socket(&spec, "-B")?;
    if let Some(p) = &a.proxy {
        spec.proxy = Some(common::proxy(p, a.proxy_auth.as_deref(), "-X")?);
    }
    let info = AbInfo {
        hostname: target.host.clone(),
        port: target.port,
        path: target.path.clone(),
        concurrency: a.concurrency,
        keepalive: a.keepalive,
        variable_length: a.variable_length,
        sent_body,
        confidence: !a.no_confidence,
        percentiles: !a.no_percentiles,
    };
    Ok((spec, info))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec_of(args: &[&str], body: Option<&[u8]>) -> Result<(LoadSpec, AbInfo), FlagError> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let (a, _) = DIALECT.parse::<AbArgs>(&args)?;
        let target = Target::parse("http://127.0.0.1:8080/x?y=1").unwrap();
        translate(&a, target, body.map(<[u8]>::to_vec))
    }

    #[test]
    fn flags_become_the_run_ab_would_make() {
        let (s, info) = spec_of(
            &[
                "-n",
                "500",
                "-c",
                "20",
                "-k",
                "-s",
                "3",
                "-l",
                "127.0.0.1:8080/x?y=1",
            ],
            None,
        )
        .unwrap();
        assert_eq!(
            (s.load.requests, s.load.connections, s.load.keepalive),
            (Some(500), 20, true)
        );
        assert_eq!(s.load.timeout, Some(std::time::Duration::from_secs(3)));
        assert!(!s.load.check_length && info.variable_length);
        assert!(String::from_utf8_lossy(&s.load.request.bytes)
            .starts_with("GET /x?y=1 HTTP/1.0\r\nConnection: Keep-Alive\r\n"));
        // -t alone: ab's 50,000-request cap with the time limit.
        let (s, _) = spec_of(&["-t", "2", "-c", "3", "u"], None).unwrap();
        assert_eq!(s.load.requests, Some(AB_MAX_REQUESTS));
        assert_eq!(s.load.duration, Some(std::time::Duration::from_secs(2)));
    }

    #[test]
    fn a_body_takes_its_method_and_type() {
        let (s, info) = spec_of(&["-p", "f", "-T", "application/json", "u"], Some(b"{}")).unwrap();
        let wire = String::from_utf8(s.load.request.bytes).unwrap();
        assert!(wire.starts_with("POST "), "{wire}");
        assert!(wire.contains("Content-length: 2\r\nContent-type: application/json\r\n"));
        assert!(wire.ends_with("\r\n\r\n{}") && info.sent_body);
        let (s, _) = spec_of(&["-u", "f", "-i", "u"], Some(b"x")).unwrap();
        assert_eq!(s.load.request.method, "HEAD");
    }

    #[test]
    fn impossible_combinations_name_the_flag() {
        for (args, flag) in [
            (&["-c", "0", "u"][..], "-c"),
            (&["-n", "0", "u"], "-n"),
            (&["-n", "5", "-c", "10", "u"], "-c"),
            (&["-p", "a", "-u", "b", "u"], "-p"),
        ] {
            let e = spec_of(args, Some(b"x")).unwrap_err();
            assert!(e.message.contains(flag), "{args:?}: {}", e.message);
        }
    }

    /// Every flag of `ab -h` (ApacheBench 2.3): parsed into the run, or refused with a
    /// message naming it.
    #[test]
    fn every_documented_flag_is_taken_or_refused_by_name() {
        let u = "127.0.0.1:8080/x?y=1";
        for argv in [
            &["-n", "10", u][..],
            &["-c", "2", "-n", "2", u],
            &["-t", "1", u],
            &["-s", "5", u],
            &["-p", "f", "-T", "application/json", u],
            &["-u", "f", u],
            &["-v", "2", u],
            &["-i", u],
            &["-C", "a=1", u],
            &["-H", "X-A: 1", u],
            &["-A", "user:pass", u],
            &["-k", u],
            &["-d", u],
            &["-S", u],
            &["-q", u],
            &["-l", u],
            &["-g", "out.tsv", u],
            &["-e", "out.csv", u],
            &["-r", u],
            &["-m", "PATCH", u],
            &["-w", u],
            &["-w", "-x", "border=1", "-y", "a=b", "-z", "c=d", u],
        ] {
            spec_of(argv, Some(b"x")).unwrap_or_else(|e| panic!("{argv:?}: {}", e.message));
        }
        // The connection's flags land in the spec's socket options and proxy.
        let (s, _) = spec_of(&["-B", "127.0.0.2", "-b", "65536", u], None).unwrap();
        assert_eq!(
            s.load.socket.local,
            ["127.0.0.2".parse::<std::net::IpAddr>().unwrap()]
        );
        assert_eq!(
            (s.load.socket.send_buffer, s.load.socket.recv_buffer),
            (Some(65536), Some(65536))
        );
        let (s, _) = spec_of(&["-X", "127.0.0.1:3128", "-P", "u:p", u], None).unwrap();
        let p = s.proxy.unwrap();
        assert_eq!(p.url, "http://127.0.0.1:3128");
        assert_eq!(p.authorization.as_deref(), Some("Basic dTpw"));
        // Flags that only make sense with another say so.
        for (argv, flag) in [(&["-x", "a", u][..], "-x"), (&["-P", "u:p", u], "-P")] {
            let e = spec_of(argv, None).unwrap_err();
            assert!(e.message.contains(flag), "{argv:?}: {}", e.message);
        }
        let e = spec_of(&["-B", "nowhere", u], None).unwrap_err();
        assert!(e.message.contains("-B <address>"), "{}", e.message);
        for flag in ["-I", "-Z", "-f", "-E"] {
            let argv = [flag, "v", u];
            let Err(e) = spec_of(&argv, None) else {
                panic!("{flag} accepted")
            };
            assert!(
                e.message.starts_with(&format!("{flag}: ")),
                "{flag}: {}",
                e.message
            );
            assert!(e.message.contains("not supported"), "{flag}: {}", e.message);
        }
        // -V and -h print and exit 0.
        for flag in ["-V", "-h"] {
            let e = spec_of(&[flag], None).unwrap_err();
            // The text printed is the answer: the help, or the version.
            assert_eq!(e.code, 0, "{flag}");
            assert!(
                e.message.starts_with("stampede ") || e.message.contains("Usage:"),
                "{flag}: {}",
                e.message
            );
        }
        let e = spec_of(&["-j", u], None).unwrap_err();
        assert!(
            e.message.starts_with("-j: not a flag of ab"),
            "{}",
            e.message
        );
    }
}
