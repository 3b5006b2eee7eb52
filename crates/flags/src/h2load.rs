//! `stampede h2load`'s command line: h2load's flags, translated into a run of
//! stampede's engine.
//!
//! HTTP/2 by default (h2c with prior knowledge for http://, ALPN for https://, with no
//! certificate verification, as h2load); `--h1`, `-p http/1.1` or `--npn-list
//! http/1.1` for HTTP/1.1, where `-m` is the pipelining depth as in h2load (1 when `-d`
//! posts a body). Several URIs (or `-i FILE`) are used in turn by every client with the
//! scheme, host and port of the first, or of `-B` (which may be `unix:PATH`);
//! `--connect-to` connects elsewhere and keeps the URI's authority. `-n` requests over
//! `-c` clients and `-t` threads, or `-D` after `--warm-up-time`; `--rps` a rate per
//! client; `-r` clients created per `--rate-period`, each making its share of `-n`;
//! `--timing-script-file` each client's requests at the script's offsets from its
//! start; `-N` how long a request may go unanswered. The report is h2load's: requests by outcome,
//! status classes, traffic with header compression, and the min/max/mean/sd table for
//! request time, connect time, time to first byte and per-client req/s. Flags stampede
//! cannot honour are refused with why and what to use instead ([`DIALECT`]).

use stampede_engine::input::{self, Input};
use std::time::Duration;

use clap::{ArgAction, Parser};
use stampede_engine::arrivals::Period;
use stampede_engine::h2::H2Settings;
use stampede_engine::inject::{self, Profile};
use stampede_engine::target::Address;
use stampede_engine::{LoadSpec, Request, RequestBuilder, Shape, Step, Target};
use stampede_report::H2loadInfo;

use crate::args as common;
use crate::dialect::{Dialect, Refused};
use crate::CommandLine;
use crate::FlagError;
use stampede_inputs::targets;

/// h2load's flags that stampede refuses.
pub const DIALECT: Dialect = Dialect {
    tool: "h2load",
    refused: &[
        Refused {
            flag: "--ciphers",
            why: "TLS is rustls with its own suites (TLS 1.3, and 1.2's ECDHE AEAD suites); OpenSSL cipher lists are not applied",
            instead: "leave it out",
        },
        Refused {
            flag: "--tls13-ciphers",
            why: "TLS is rustls with its own TLS 1.3 suites; OpenSSL cipher lists are not applied",
            instead: "leave it out",
        },
        Refused {
            flag: "--groups",
            why: "TLS is rustls with its own key-exchange groups (X25519, P-256, P-384)",
            instead: "leave it out",
        },
        Refused {
            flag: "--ktls",
            why: "TLS runs in user space (rustls), not in the kernel",
            instead: "leave it out",
        },
        Refused {
            flag: "--qlog-file-base",
            why: "QUIC's events are not written as qlog; the run's QUIC figures are in its result (--json)",
            instead: "leave it out",
        },
    ],
    inert: &[],
    prefixes: false,
    go: false,
};

/// h2load's command line: one field per flag it accepts (hence over twenty).
#[derive(Parser, Debug)]
#[command(
    name = "stampede h2load",
    version,
    about = "h2load-compatible load test (h2load's flags and report)",
    disable_version_flag = true
)]
pub struct H2loadArgs {
    /// Number of requests across all clients [default: 1] (with --timing-script-file:
    /// each client's, at most the script's lines, which are the default)
    #[arg(short = 'n', long = "requests", value_name = "N", value_parser = common::parse_metric)]
    pub requests: Option<u64>,
    /// Number of concurrent clients (with -r, the most connections made)
    #[arg(short = 'c', long = "clients", value_name = "N", default_value = "1", value_parser = common::parse_metric)]
    pub clients: u64,
    /// Number of native threads
    #[arg(short = 't', long = "threads", value_name = "N", default_value = "1", value_parser = common::parse_metric)]
    pub threads: u64,
    /// URIs from this file, one per line ('-': standard input), instead of the command
    /// line's
    #[arg(short = 'i', long = "input-file", value_name = "PATH")]
    pub input_file: Option<String>,
    /// Each client sends the script's requests at their offsets from its start: lines
    /// of milliseconds and a URI, tab-separated ('-': standard input)
    #[arg(long = "timing-script-file", value_name = "PATH")]
    pub timing_script: Option<String>,
    /// Max concurrent streams per client (HTTP/1.1: requests pipelined)
    #[arg(short = 'm', long = "max-concurrent-streams", value_name = "N", default_value = "1", value_parser = common::parse_metric)]
    pub streams: u64,
    /// Largest frame payload this client reads (16K to 16M-1)
    #[arg(short = 'f', long = "max-frame-size", value_name = "SIZE", value_parser = parse_size)]
    pub max_frame_size: Option<u64>,
    /// Each stream's receive window, 2^N-1 bytes (1 to 30; default about 1 GiB)
    #[arg(short = 'w', long = "window-bits", value_name = "N")]
    pub window_bits: Option<u32>,
    /// The connection's receive window, 2^N-1 bytes (1 to 30; default about 1 GiB)
    #[arg(short = 'W', long = "connection-window-bits", value_name = "N")]
    pub connection_window_bits: Option<u32>,
    /// Add or override a header of the requests
    #[arg(short = 'H', long = "header", value_name = "HEADER", action = ArgAction::Append)]
    pub headers: Vec<String>,
    /// Protocol for http:// URIs: h2c (the default) or http/1.1
    #[arg(short = 'p', long = "no-tls-proto", value_name = "PROTOID")]
    pub no_tls_proto: Option<String>,
    /// POST this file's contents (HTTP/1.1: one request in flight per client)
    #[arg(short = 'd', long = "data", value_name = "PATH")]
    pub data: Option<String>,
    /// Clients created per --rate-period, up to -c; each makes its share of -n
    #[arg(short = 'r', long = "rate", value_name = "N", default_value_t = 0)]
    pub rate: u64,
    /// The period of -r
    #[arg(long = "rate-period", value_name = "DURATION", default_value = "1s", value_parser = common::positive_duration)]
    pub rate_period: Duration,
    /// Run for this long instead of a request count (-n is then ignored)
    #[arg(short = 'D', long = "duration", value_name = "DURATION", value_parser = common::parse_duration)]
    pub duration: Option<Duration>,
    /// With -D: run this long first, unmeasured
    #[arg(long = "warm-up-time", value_name = "DURATION", value_parser = common::parse_duration)]
    pub warm_up: Option<Duration>,
    /// A request unanswered for this long fails (h2load's connection inactivity timeout)
    #[arg(short = 'N', long = "connection-inactivity-timeout", value_name = "DURATION", value_parser = common::positive_duration)]
    pub inactivity: Option<Duration>,
    /// Once a client has sent its last request, what it still waits for fails this long after (h2load's connection active timeout)
    #[arg(short = 'T', long = "connection-active-timeout", value_name = "DURATION", value_parser = common::positive_duration)]
    pub active: Option<Duration>,
    /// Scheme, host and port for every request (or unix:PATH, a Unix socket)
    #[arg(short = 'B', long = "base-uri", value_name = "URI")]
    pub base_uri: Option<String>,
    /// ALPN protocols for https://, comma-separated: h2 (h2-16, h2-14) and http/1.1,
    /// or h3 first for HTTP/3 over QUIC
    #[arg(long = "npn-list", visible_alias = "alpn-list", value_name = "LIST")]
    pub npn_list: Option<String>,
    /// HTTP/3: the largest UDP payload sent, 1200 to 65527 bytes
    #[arg(long = "max-udp-payload-size", value_name = "SIZE", value_parser = parse_size)]
    pub max_udp_payload_size: Option<u64>,
    /// HTTP/3: no UDP generic segmentation offload (each datagram is sent with a
    /// system call of its own)
    #[arg(long = "no-udp-gso")]
    pub no_udp_gso: bool,
    /// Use HTTP/1.1
    #[arg(long = "h1")]
    pub h1: bool,
    /// Decoder header table size: how much the server may index for responses
    #[arg(long = "header-table-size", value_name = "SIZE", value_parser = parse_size)]
    pub header_table_size: Option<u64>,
    /// Encoder header table size: request fields that do not fit go as literals
    #[arg(long = "encoder-header-table-size", value_name = "SIZE", value_parser = parse_size)]
    pub encoder_header_table_size: Option<u64>,
    /// Connect to `HOST[:PORT]` instead of the URI's authority (kept in the requests)
    #[arg(long = "connect-to", value_name = "HOST[:PORT]")]
    pub connect_to: Option<String>,
    /// Requests per second for each client
    #[arg(long = "rps", value_name = "N")]
    pub rps: Option<f64>,
    /// A line per request after the run: start (µs since the epoch), status (-1: failed)
    /// and µs to the end of its response, tab-separated; kept in memory until the run
    /// ends, 48 bytes per request
    #[arg(long = "log-file", value_name = "PATH")]
    pub log_file: Option<String>,
    /// Print the requests before the run
    #[arg(short = 'v', long = "verbose")]
    pub verbose: bool,
    /// Print version details
    #[arg(long = "version", action = ArgAction::Version)]
    pub _version: Option<bool>,
    /// The URIs, used in turn by every client
    #[arg(value_name = "URI")]
    pub uris: Vec<String>,
    #[command(flatten)]
    pub segments: crate::args::SegmentArgs,
    #[command(flatten)]
    pub result: crate::args::ResultFile,
}

/// h2load's SIZE: an integer with an optional K, M or G (powers of 1024).
fn parse_size(s: &str) -> Result<u64, crate::BadValue> {
    let (num, shift) = match s.as_bytes().last() {
        Some(b'K' | b'k') => (&s[..s.len() - 1], 10),
        Some(b'M' | b'm') => (&s[..s.len() - 1], 20),
        Some(b'G' | b'g') => (&s[..s.len() - 1], 30),
        _ => (s, 0),
    };
    num.parse::<u64>()
        .map(|n| n << shift)
        .map_err(|_| format!("{s:?} is not a size; write 4096, 4K or 1M").into())
}

/// h2load's place in the dialects' run contract.
pub struct H2load;

impl CommandLine for H2load {
    type Args = H2loadArgs;
    type Inputs = (Target, Vec<String>, Vec<Duration>, Option<Vec<u8>>);
    type Info = H2loadInfo;
    const DIALECT: &'static Dialect = &DIALECT;

    fn result_file(a: &H2loadArgs) -> &crate::args::ResultFile {
        &a.result
    }

    fn segments(a: &H2loadArgs) -> &crate::args::SegmentArgs {
        &a.segments
    }

    fn inputs(a: &H2loadArgs) -> Result<Self::Inputs, FlagError> {
        let (uris, timing) = uris(a)?;
        let body = a.data.as_deref().map(common::read_body).transpose()?;
        check_flags(a, &timing)?;
        let target = resolve_target(a, &uris)?;
        Ok((target, uris, timing, body))
    }

    fn translate(
        a: &H2loadArgs,
        (target, uris, timing, body): Self::Inputs,
    ) -> Result<(LoadSpec, H2loadInfo), FlagError> {
        translate(a, target, &uris, &timing, body)
    }
}

/// The URIs: `-i`'s file or the timing script's (standard input for `-`), or the
/// command line's; and the timing script's offsets (empty without one).
fn uris(a: &H2loadArgs) -> Result<(Vec<String>, Vec<Duration>), FlagError> {
    let (flag, path) = match (&a.input_file, &a.timing_script) {
        (None, None) => return Ok((a.uris.clone(), Vec::new())),
        (Some(_), Some(_)) => {
            return Err(FlagError::usage(
                "-i, --input-file and --timing-script-file both give the URIs; give one",
            ))
        }
        (Some(p), None) => ("-i, --input-file", p),
        (None, Some(p)) => ("--timing-script-file", p),
    };
    let text =
        input::read_text(path, flag, Input::List).map_err(|e| FlagError::usage(e.to_string()))?;
    if !a.uris.is_empty() {
        eprintln!(
            "stampede h2load: {flag} {path}: the URIs on the command line are not used, as in h2load"
        );
    }
    if a.timing_script.is_some() {
        let (at, uris) = timing_script(&text)
            .map_err(|e| FlagError::usage(format!("--timing-script-file {path}: {e}")))?;
        return Ok((uris, at));
    }
    let uris = (text.lines().map(str::trim))
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect();
    Ok((uris, Vec::new()))
}

/// h2load's timing script: per line, an offset in milliseconds (fractions to the
/// microsecond) and a URI, separated by a tab; blank lines are skipped. Offsets may
/// not go back, since each client sends the lines in order.
fn timing_script(text: &str) -> Result<(Vec<Duration>, Vec<String>), crate::BadValue> {
    let (mut at, mut uris): (Vec<Duration>, Vec<String>) = (Vec::new(), Vec::new());
    for (n, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let n = n + 1;
        let Some((ms, uri)) = line.split_once('\t') else {
            return Err(crate::BadValue(format!(
                "line {n}: no tab; write the offset in milliseconds, a tab and the URI, e.g. 12.5<TAB>/index.html"
            )));
        };
        let offset = ms
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0 && *v < 1e12)
            .ok_or_else(|| {
                format!("line {n}: offset {ms:?} is not a number of milliseconds (0 or more)")
            })?;
        let offset = Duration::from_nanos((offset * 1e6).round() as u64);
        if let Some(&last) = at.last() {
            if offset < last {
                return Err(crate::BadValue(format!(
                    "line {n}: offset {ms} ms comes before the line above's ({:.3} ms); each client sends the lines in order",
                    last.as_secs_f64() * 1e3
                )));
            }
        }
        let uri = uri.trim();
        if uri.is_empty() {
            return Err(crate::BadValue(format!("line {n}: no URI after the tab")));
        }
        at.push(offset);
        uris.push(uri.to_string());
    }
    if at.is_empty() {
        return Err("no lines; write one per request: milliseconds, a tab, the URI".into());
    }
    Ok((at, uris))
}

/// The path and query of a URI (`http://h:p/x?y` or `/x?y`), or `None`.
fn path_of(uri: &str) -> Option<String> {
    match targets::split_url(uri) {
        Some((_, _, path)) => Some(path),
        None => uri.starts_with('/').then(|| uri.to_string()),
    }
}

/// The run's target: the first URI's (or `-B`'s) scheme, host and port with the first
/// path; `-B unix:PATH` and `--connect-to` change only where it connects.
fn target_of(a: &H2loadArgs, first: &str, path: &str) -> Result<Target, FlagError> {
    let origin = |uri: &str| -> Result<String, FlagError> {
        let (scheme, authority, _) = targets::split_url(uri).ok_or_else(|| {
            FlagError::usage(format!(
                "{uri}: the first URI needs a scheme and host, e.g. http://127.0.0.1:8080/"
            ))
        })?;
        Ok(format!("{scheme}://{authority}"))
    };
    let (origin, unix) = match a.base_uri.as_deref() {
        Some(b) if b.starts_with("unix:") => (origin(first)?, Some(&b[5..])),
        Some(b) => (
            origin(b).map_err(|e| FlagError::usage(format!("-B, --base-uri: {}", e.message)))?,
            None,
        ),
        None => (origin(first)?, None),
    };
    let url = format!("{origin}{path}");
    let Some(to) = &a.connect_to else {
        return common::resolve(&url, unix);
    };
    let mut target = Target::parse_at(&url, Some(Address::Tcp(Vec::new())))
        .map_err(|e| FlagError::usage(e.to_string()))?;
    target.address = Address::Tcp(common::connect_to(to, target.port)?);
    Ok(target)
}

/// The protocol a run speaks, from --h1, -p and --npn-list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Speaks {
    Http1,
    Http2,
    /// h3 first in the ALPN list: HTTP/3 over QUIC, as h2load built with ngtcp2.
    Http3,
}

fn speaks(a: &H2loadArgs, tls: bool) -> Result<Speaks, FlagError> {
    if a.h1 {
        return Ok(Speaks::Http1);
    }
    if !tls {
        return match a.no_tls_proto.as_deref() {
            None | Some("h2c") => Ok(Speaks::Http2),
            Some("http/1.1") => Ok(Speaks::Http1),
            Some(p) => Err(FlagError::usage(format!(
                "-p, --no-tls-proto: {p:?} is not a protocol for http:// URIs; h2c or http/1.1"
            ))),
        };
    }
    let Some(list) = &a.npn_list else {
        return Ok(Speaks::Http2);
    };
    let ids: Vec<&str> = list.split(',').collect();
    if let Some(bad) = ids
        .iter()
        .find(|p| !["h3", "h2", "h2-16", "h2-14", "http/1.1"].contains(p))
    {
        return Err(FlagError::usage(format!(
            "--npn-list, --alpn-list: {bad:?} is not spoken; the list may name h3, h2 (h2-16, h2-14) and http/1.1"
        )));
    }
    Ok(if ids[0] == "h3" {
        Speaks::Http3
    } else if ids.iter().any(|p| p.starts_with("h2")) {
        Speaks::Http2
    } else {
        Speaks::Http1
    })
}

/// What each HTTP/3 connection sets, from --max-udp-payload-size, --no-udp-gso and
/// --header-table-size (QPACK's table for the server's sections).
fn h3_settings(a: &H2loadArgs) -> Result<stampede_engine::h3::H3Settings, FlagError> {
    let mut s = stampede_engine::h3::H3Settings {
        gso: !a.no_udp_gso,
        ..Default::default()
    };
    if let Some(v) = a.max_udp_payload_size {
        s.max_udp_payload = u16::try_from(v)
            .ok()
            .filter(|v| *v >= 1200 && u32::from(*v) <= 65_527)
            .ok_or_else(|| {
                FlagError::usage(format!(
                    "--max-udp-payload-size {v}: give a size from 1200 to 65527 bytes"
                ))
            })?;
    }
    if let Some(v) = a.header_table_size {
        s.header_table = u32::try_from(v)
            .ok()
            .filter(|v| *v <= stampede_engine::h3::MAX_TABLE)
            .ok_or_else(|| {
                FlagError::usage(format!(
                    "--header-table-size {v}: HTTP/3's QPACK table is kept up to {} bytes",
                    stampede_engine::h3::MAX_TABLE
                ))
            })?;
    }
    Ok(s)
}

/// What each HTTP/2 connection offers the server, from `-w`, `-W`, `-f` and the
/// header table sizes; flags left out keep stampede's defaults (1 GiB windows, which
/// h2load's default of 2^30-1 matches within a byte).
fn h2_settings(a: &H2loadArgs) -> Result<H2Settings, FlagError> {
    let mut s = H2Settings::default();
    let bits = |flag: &str, n: u32| -> Result<u32, FlagError> {
        match n {
            1..=30 => Ok((1u32 << n) - 1),
            0 => Err(FlagError::usage(format!(
                "{flag} 0: a window of 2^0-1 = 0 bytes lets no response body through; give 1 to 30"
            ))),
            _ => Err(FlagError::usage(format!(
                "{flag} {n}: give an integer from 1 to 30 (a window of 2^N-1 bytes)"
            ))),
        }
    };
    if let Some(n) = a.window_bits {
        s.stream_window = bits("-w, --window-bits", n)?;
    }
    if let Some(n) = a.connection_window_bits {
        s.connection_window = bits("-W, --connection-window-bits", n)?;
    }
    if let Some(f) = a.max_frame_size {
        if !(16_384..=16_777_215).contains(&f) {
            return Err(FlagError::usage(format!(
                "-f, --max-frame-size {f}: give a size from 16K to 16777215 (RFC 9113's range)"
            )));
        }
        s.max_frame = f as u32;
    }
    let table = |flag: &str, v: u64| -> Result<u32, FlagError> {
        u32::try_from(v).map_err(|_| {
            FlagError::usage(format!(
                "{flag} {v}: give a size below 4G (HTTP/2 sends it in 32 bits)"
            ))
        })
    };
    if let Some(v) = a.header_table_size {
        s.header_table = table("--header-table-size", v)?;
    }
    if let Some(v) = a.encoder_header_table_size {
        s.encoder_table = table("--encoder-header-table-size", v)?;
    }
    Ok(s)
}

/// The counts and rates that cannot go together, refused before any name is
/// resolved.
fn check_flags(a: &H2loadArgs, timing: &[Duration]) -> Result<(), FlagError> {
    if a.clients == 0 || a.threads == 0 || a.streams == 0 {
        return Err(FlagError::usage("-c, -t and -m must be at least 1"));
    }
    if a.clients < a.threads {
        return Err(FlagError::usage(
            "-c, --clients: the number of clients must be greater than or equal to the number of threads (-t)",
        ));
    }
    let requests = a.requests.unwrap_or(1);
    if !timing.is_empty() {
        check_timing(a)?;
    } else if a.duration.is_none() && requests < a.clients {
        return Err(FlagError::usage(
            "-n, --requests: the number of requests must be greater than or equal to the number of clients (-c)",
        ));
    }
    if a.warm_up.is_some() && a.duration.is_none() {
        return Err(FlagError::usage(
            "--warm-up-time: needs -D, --duration (a timed run), as in h2load",
        ));
    }
    if a.rate > 0 && a.duration.is_some() {
        return Err(FlagError::usage(
            "-r, --rate and -D, --duration are mutually exclusive",
        ));
    }
    if a.rate > 0 && a.rps.is_some() {
        return Err(FlagError::usage(
            "-r, --rate and --rps: give the rate of new clients or of each client's requests, not both",
        ));
    }
    if a.rate > 0 && timing.is_empty() && !requests.is_multiple_of(a.clients) {
        return Err(FlagError::usage(format!(
            "-r, --rate: each client makes -n / -c requests; {} is not a multiple of {} clients",
            requests, a.clients
        )));
    }
    if let Some(r) = a.rps.filter(|r| !(r.is_finite() && *r > 0.0)) {
        return Err(FlagError::usage(format!(
            "--rps: {r} is not a rate; give requests per second per client, e.g. --rps 100"
        )));
    }
    Ok(())
}

/// The target the first URI names (or `-B, --base-uri`'s origin), resolved, or
/// reached at `--connect-to`'s address.
fn resolve_target(a: &H2loadArgs, uris: &[String]) -> Result<Target, FlagError> {
    let Some(first) = uris.first() else {
        return Err(FlagError::usage(
            "no URI: give one or more (http://host:port/path), or -i FILE",
        ));
    };
    let path = path_of(first).ok_or_else(|| {
        FlagError::usage(format!(
            "{first}: not a URI; write http://host:port/path (or /path after the first)"
        ))
    })?;
    target_of(a, first, &path)
}

/// h2load's flags as a run and the report's preamble. Pure: the caller resolves the
/// target ([`resolve_target`]), reads the URI list (and the timing script's offsets,
/// `timing`, empty without one) and the `--data` file.
///
/// Long on purpose: h2load's flags one after another, each a few lines.
fn translate(
    a: &H2loadArgs,
    target: Target,
    uris: &[String],
    timing: &[Duration],
    body: Option<Vec<u8>>,
) -> Result<(LoadSpec, H2loadInfo), FlagError> {
    let h2 = h2_settings(a)?;
    check_flags(a, timing)?;
    let requests = a.requests.unwrap_or(1);
    let paths = (uris.iter())
        .map(|u| {
            path_of(u).ok_or_else(|| {
                FlagError::usage(format!(
                    "{u}: not a URI; write http://host:port/path (or /path after the first)"
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let speaks = speaks(a, target.tls)?;
    if speaks != Speaks::Http3 && (a.max_udp_payload_size.is_some() || a.no_udp_gso) {
        return Err(FlagError::usage(
            "--max-udp-payload-size and --no-udp-gso are HTTP/3's; put h3 first in --alpn-list (an https:// URI)",
        ));
    }
    let http2 = speaks == Speaks::Http2;
    let method = if body.is_some() { "POST" } else { "GET" };
    let headers = (a.headers.iter())
        .map(|h| common::header_arg(h))
        .collect::<Result<Vec<_>, _>>()?;
    let request = |path: &str| -> Result<Request, FlagError> {
        let mut t = target.clone();
        t.path = path.into();
        let mut b = RequestBuilder::native(&t, method, true);
        for (n, v) in &headers {
            b = b.set_header(n, v);
        }
        if let Some(body) = &body {
            b = b.body(body.clone());
        }
        b.build().map_err(|e| FlagError::usage(e.to_string()))
    };
    let mut spec = LoadSpec::new(target.clone(), request(&paths[0])?);
    if !timing.is_empty() {
        let calls = per_client(a, timing.len())?;
        spec.load.script = (paths.iter().zip(timing).take(calls as usize))
            .map(|(p, at)| Ok(Step::timed(request(p)?, *at)))
            .collect::<Result<_, FlagError>>()?;
    } else if paths.len() > 1 {
        spec.load.variety = (paths.iter())
            .map(|p| request(p))
            .collect::<Result<_, _>>()?;
    }
    spec.tls = crate::tls::TlsArgs::dialect(&target, http2)?;
    spec.load.protocol.http2 = http2;
    spec.load.protocol.h2 = h2;
    if speaks == Speaks::Http3 {
        spec.load.protocol.http3 = Some(h3_settings(a)?);
    }
    spec.record_requests = a.log_file.is_some();
    // h2load's rule: an HTTP/1.1 client posting a body pipelines nothing.
    spec.load.pipeline = if !http2 && body.is_some() {
        1
    } else {
        a.streams as usize
    };
    spec.load.connections = a.clients as usize;
    spec.load.threads = a.threads as usize;
    if let Some(t) = a.inactivity {
        spec.load.timeout = Some(t);
    }
    spec.load.last_wait = a.active;
    match a.duration {
        Some(d) => spec.load.duration = Some(d),
        None => spec.load.requests = Some(requests),
    }
    if let Some(rps) = a.rps {
        spec.load.shape = Shape::Rate {
            rate: rps * a.clients as f64,
            gaps: stampede_engine::arrivals::Gaps::Even,
        };
    }
    if a.rate > 0 {
        // Each client is a session on its own connection making its share of -n.
        spec.load.shape = Shape::Sessions {
            period: Some(Period::Deterministic(
                a.rate_period.as_secs_f64() / a.rate as f64,
            )),
            count: a.clients,
        };
        spec.load.session.calls = u32::try_from(requests / a.clients)
            .map_err(|_| FlagError::usage("-n, --requests: too many requests per client"))?;
        spec.load.session.burst = spec.load.pipeline as u32;
        spec.load.requests = None;
        if spec.load.variety.len() > 1 {
            return Err(FlagError::usage(
                "-r, --rate with several URIs: clients created at a rate send one URI; give one, or leave -r out",
            ));
        }
    }
    let mut total = a.duration.is_none().then_some(requests);
    if !timing.is_empty() {
        // Every client runs the script: a session each, all at once or at -r's rate.
        if a.rate == 0 {
            spec.load.shape = Shape::Users(Profile {
                steps: vec![inject::InjectionStep::AtOnce(a.clients)],
            });
        }
        spec.load.requests = None;
        total = Some(spec.load.script.len() as u64 * a.clients);
    }
    let info = H2loadInfo {
        threads: a.threads,
        clients: a.clients,
        requests: total,
        protocol: match (speaks, target.tls) {
            (Speaks::Http3, _) => "h3".into(),
            (Speaks::Http1, _) => "http/1.1".into(),
            (Speaks::Http2, false) => "h2c".into(),
            (Speaks::Http2, true) => "h2".into(),
        },
    };
    Ok((spec, info))
}

/// What a timing script cannot be combined with, named.
fn check_timing(a: &H2loadArgs) -> Result<(), FlagError> {
    if a.duration.is_some() {
        return Err(FlagError::usage(
            "--timing-script-file and -D, --duration: the script says when each client's requests go and how many; leave -D out (-n takes fewer lines)",
        ));
    }
    if a.rps.is_some() {
        return Err(FlagError::usage(
            "--timing-script-file and --rps: the script says when each client's requests go; leave --rps out",
        ));
    }
    Ok(())
}

/// Requests per client with a timing script of `lines` lines: `-n`, at most the
/// lines (clamped with a note, as h2load does), or all of them.
fn per_client(a: &H2loadArgs, lines: usize) -> Result<u32, FlagError> {
    let lines = lines as u64;
    let n = match a.requests {
        Some(0) => return Err(FlagError::usage("-n, --requests: must be at least 1")),
        Some(n) if n > lines => {
            eprintln!(
                "stampede h2load: -n {n} is more than the timing script's {lines} lines; each client makes {lines} requests, as in h2load"
            );
            lines
        }
        Some(n) => n,
        None => lines,
    };
    u32::try_from(n).map_err(|_| FlagError::usage("--timing-script-file: too many lines"))
}

#[cfg(test)]
mod tests;
