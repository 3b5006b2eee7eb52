//! `stampede vegeta attack|report|encode|plot`'s command lines: vegeta's flags, an
//! attack's translated into a run of stampede's engine.
//!
//! `attack` reads vegeta's targets (its `http` format, or `json` lines) from `-targets`
//! or standard input and sends them in turn at `-rate` for `-duration`; what it writes
//! is stampede's result (the JSON `--json` writes, one line per attack), not vegeta's
//! gob stream: the histograms are exact and merge across attacks and machines. `report`
//! reads one or more of them (standard input by default), merged, and prints vegeta's
//! `text`, `json`, `hist[…]` or `hdrplot` report; `encode -to json` writes the results
//! again, `-to csv` their per-second series; `plot` writes stampede's HTML report of
//! them. vegeta's flags are Go's, one dash each; flags stampede cannot honour are
//! refused with why and what to use instead.

use std::time::Duration;

use clap::{ArgAction, Parser};
use stampede_engine::arrivals::Gaps;
use stampede_engine::input::{self, Input};
use stampede_engine::{LoadSpec, Shape};

use crate::args as common;
use crate::dialect::{Dialect, Inert, Refused};
use crate::CommandLine;
use crate::FlagError;
use stampede_inputs::targets;

/// A `-flag=false` bool of Go's: given alone it is true.
fn go_bool(s: &str) -> Result<bool, crate::BadValue> {
    match s {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(false),
        _ => Err(crate::BadValue(format!(
            "{s:?} is not a bool; write true or false"
        ))),
    }
}

/// A Go duration: `10s`, `1m30s`, `1.5h`, `250ms`, `0`.
pub fn parse_go_duration(s: &str) -> Result<Duration, crate::BadValue> {
    let t = s.trim();
    if t == "0" {
        return Ok(Duration::ZERO);
    }
    let bad = || format!("{s:?} is not a duration; write forms like 10s, 1m30s, 250ms");
    let mut total = 0f64;
    let mut rest = t;
    if rest.is_empty() {
        return Err(crate::BadValue(bad()));
    }
    while !rest.is_empty() {
        let n = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        let v: f64 = rest[..n].parse().map_err(|_| bad())?;
        let tail = &rest[n..];
        let u = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let mult = match &tail[..u] {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(crate::BadValue(bad())),
        };
        total += v * mult;
        rest = &tail[u..];
    }
    if !(total.is_finite() && total <= 1e9) {
        return Err(crate::BadValue(bad()));
    }
    Ok(Duration::from_secs_f64(total))
}

/// vegeta's `-rate`: `N/DURATION` (`50/1s`, `100/s`, `1/10ms`) or `N` per second; 0 is
/// as fast as the workers go.
fn parse_rate(s: &str) -> Result<f64, crate::BadValue> {
    let bad = || format!("{s:?} is not a rate; write forms like 50/1s, 100/s, 1/10ms or 0");
    let (n, per) = s.split_once('/').unwrap_or((s, "1s"));
    let n: f64 = n.trim().parse().map_err(|_| bad())?;
    let per = per.trim();
    let per = if per.starts_with(|c: char| c.is_ascii_digit()) {
        parse_go_duration(per)?
    } else {
        parse_go_duration(&format!("1{per}"))?
    };
    if !(n.is_finite() && n >= 0.0) || per.is_zero() {
        return Err(crate::BadValue(bad()));
    }
    Ok(n / per.as_secs_f64())
}

/// How long an attack of `-duration 0` (until stopped) may last.
const FOREVER: Duration = Duration::from_secs(365 * 86_400);

/// `vegeta attack`'s refusals and inert flags.
pub const ATTACK: Dialect = Dialect {
    tool: "vegeta attack",
    refused: &[
        Refused {
            flag: "-resolvers",
            why: "names are resolved once, by the system, before the attack",
            instead: "-connect-to HOST:PORT:IP:PORT",
        },
        Refused {
            flag: "-chunked",
            why: "bodies are sent with a Content-Length",
            instead: "leave it out",
        },
        Refused {
            flag: "-proxy-header",
            why: "no proxy is spoken to here",
            instead: "leave it out",
        },
        Refused {
            flag: "-prometheus-addr",
            why: "no metrics endpoint during the attack",
            instead: "report the results after it",
        },
    ],
    inert: &[
        Inert {
            id: "connections_idle",
            flag: "-connections",
            why: "every connection here is kept open, none idles out",
        },
        Inert {
            id: "lazy",
            flag: "-lazy",
            why: "the targets are read before the attack (a list of at most 256 MiB)",
        },
        Inert {
            id: "max_body",
            flag: "-max-body",
            why: "bodies are counted, not kept",
        },
        Inert {
            id: "dns_ttl",
            flag: "-dns-ttl",
            why: "names are resolved once, before the attack",
        },
        Inert {
            id: "name",
            flag: "-name",
            why: "results are named by their URL",
        },
    ],
    prefixes: false,
    go: true,
};

/// `vegeta attack`'s command line.
#[derive(Parser, Debug)]
#[command(
    name = "stampede vegeta attack",
    about = "vegeta's attack: targets at a rate; writes stampede's result (JSON) for `vegeta report`"
)]
pub struct AttackArgs {
    /// Requests per time unit (50/1s, 100/s, 1/10ms); 0 as fast as the workers go
    #[arg(long = "rate", value_name = "RATE", default_value = "50/1s", value_parser = parse_rate)]
    pub rate: f64,
    /// Duration of the attack; 0 until stopped (Ctrl-C)
    #[arg(long = "duration", value_name = "DURATION", default_value = "0", value_parser = parse_go_duration)]
    pub duration: Duration,
    /// Targets file (- or stdin for standard input)
    #[arg(long = "targets", value_name = "FILE", default_value = "stdin")]
    pub targets: String,
    /// Targets format: http or json
    #[arg(long = "format", value_name = "FORMAT", default_value = "http")]
    pub format: String,
    /// Initial number of workers (connections)
    #[arg(long = "workers", value_name = "N", default_value_t = 10)]
    pub workers: usize,
    /// The most workers (connections) [default: enough for answers within 100 ms at
    /// the rate, at least -workers, at most 10000]
    #[arg(long = "max-workers", value_name = "N")]
    pub max_workers: Option<usize>,
    /// Max open idle connections per target host
    #[arg(long = "connections", id = "connections_idle", value_name = "N")]
    pub connections: Option<usize>,
    /// Max connections per target host (caps the workers)
    #[arg(long = "max-connections", value_name = "N")]
    pub max_connections: Option<usize>,
    /// Requests timeout
    #[arg(long = "timeout", value_name = "DURATION", default_value = "30s", value_parser = parse_go_duration)]
    pub timeout: Duration,
    /// Request header, repeated as needed
    #[arg(long = "header", value_name = "HEADER", action = ArgAction::Append)]
    pub headers: Vec<String>,
    /// Requests body file (for targets without their own)
    #[arg(long = "body", value_name = "FILE")]
    pub body: Option<String>,
    /// Use persistent connections
    #[arg(long = "keepalive", value_name = "BOOL", default_value = "true", default_missing_value = "true", num_args = 0..=1, require_equals = true, value_parser = go_bool)]
    pub keepalive: bool,
    /// Send HTTP/2 requests when the server supports them (https)
    #[arg(long = "http2", value_name = "BOOL", default_value = "true", default_missing_value = "true", num_args = 0..=1, require_equals = true, value_parser = go_bool)]
    pub http2: bool,
    /// Send HTTP/2 requests without TLS (h2c)
    #[arg(long = "h2c")]
    pub h2c: bool,
    /// Ignore invalid server TLS certificates
    #[arg(long = "insecure")]
    pub insecure: bool,
    /// TLS client PEM encoded certificate file
    #[arg(long = "cert", value_name = "FILE", requires = "key")]
    pub cert: Option<std::path::PathBuf>,
    /// TLS client PEM encoded private key file
    #[arg(long = "key", value_name = "FILE", requires = "cert")]
    pub key: Option<std::path::PathBuf>,
    /// TLS root certificate file (one)
    #[arg(long = "root-certs", value_name = "FILE")]
    pub root_certs: Option<std::path::PathBuf>,
    /// Resume TLS sessions with session tickets
    #[arg(long = "session-tickets")]
    pub session_tickets: bool,
    /// Redirects to follow; -1 and 0 take a 3xx as the answer
    #[arg(
        long = "redirects",
        value_name = "N",
        default_value_t = 10,
        allow_negative_numbers = true
    )]
    pub redirects: i64,
    /// Connect over a Unix socket instead of the targets' host
    #[arg(long = "unix-socket", value_name = "PATH")]
    pub unix_socket: Option<String>,
    /// Local IP address
    #[arg(long = "laddr", value_name = "IP")]
    pub laddr: Option<std::net::IpAddr>,
    /// HOST:PORT:TARGET_HOST:TARGET_PORT: connect elsewhere for the targets' host
    #[arg(long = "connect-to", value_name = "MAPPING")]
    pub connect_to: Option<String>,
    /// Attack name
    #[arg(long = "name", value_name = "NAME")]
    pub name: Option<String>,
    /// Output file
    #[arg(long = "output", value_name = "FILE", default_value = "stdout")]
    pub output: String,
    /// Read targets lazily
    #[arg(long = "lazy")]
    pub lazy: bool,
    /// Response bytes to capture
    #[arg(long = "max-body", value_name = "BYTES", allow_negative_numbers = true)]
    pub max_body: Option<i64>,
    /// DNS cache TTL
    #[arg(long = "dns-ttl", value_name = "DURATION")]
    pub dns_ttl: Option<String>,
    #[command(flatten)]
    pub segments: crate::args::SegmentArgs,
    #[command(flatten)]
    pub result: crate::args::ResultFile,
}

/// `vegeta report`'s refusals.
pub const REPORT: Dialect = Dialect {
    tool: "vegeta report",
    refused: &[Refused {
        flag: "-every",
        why: "results are read once the attack has written them",
        instead: "report after the attack, or run shorter attacks",
    }],
    inert: &[],
    prefixes: false,
    go: true,
};

/// `vegeta encode`'s command line: its flags are taken.
pub const ENCODE: Dialect = Dialect {
    tool: "vegeta encode",
    refused: &[],
    inert: &[],
    prefixes: false,
    go: true,
};

/// `vegeta plot`'s inert flag.
pub const PLOT: Dialect = Dialect {
    tool: "vegeta plot",
    refused: &[],
    inert: &[Inert {
        id: "threshold",
        flag: "-threshold",
        why: "the plot draws each second's figures, never too many points",
    }],
    prefixes: false,
    go: true,
};

/// Where `report`, `encode` and `plot` read and write.
#[derive(clap::Args, Debug)]
pub struct Reading {
    /// Output file
    #[arg(long = "output", value_name = "FILE", default_value = "stdout")]
    pub output: String,
    /// Results files [default: standard input]
    #[arg(value_name = "FILE")]
    pub files: Vec<String>,
}

/// `vegeta report`.
#[derive(Parser, Debug)]
#[command(
    name = "stampede vegeta report",
    about = "vegeta's report of attack results"
)]
pub struct ReportArgs {
    #[arg(
        long = "type",
        value_name = "TYPE",
        default_value = "text",
        help = "Report type: text, json, hist[BUCKETS] or hdrplot"
    )]
    pub kind: String,
    #[arg(
        long = "buckets",
        value_name = "BUCKETS",
        help = "Histogram buckets for -type=hist, e.g. \"[0,1ms,10ms]\""
    )]
    pub buckets: Option<String>,
    #[command(flatten)]
    pub io: Reading,
}

/// `vegeta encode`.
#[derive(Parser, Debug)]
#[command(
    name = "stampede vegeta encode",
    about = "attack results as JSON or per-second CSV"
)]
pub struct EncodeArgs {
    /// Output encoding: json (the results) or csv (their per-second series)
    #[arg(long = "to", value_name = "FORMAT", default_value = "json")]
    pub to: String,
    #[command(flatten)]
    pub io: Reading,
}

/// `vegeta plot`.
#[derive(Parser, Debug)]
#[command(
    name = "stampede vegeta plot",
    about = "an HTML report of attack results"
)]
pub struct PlotArgs {
    /// Title of the page
    #[arg(long = "title", value_name = "TITLE", default_value = "Vegeta Plot")]
    pub title: String,
    /// Points drawn before downsampling
    #[arg(long = "threshold", value_name = "N")]
    pub threshold: Option<u64>,
    #[command(flatten)]
    pub io: Reading,
}

/// `attack`'s place in the dialects' run contract.
pub struct Attack;

/// What the flags point at: the targets' requests, by server.
pub struct Inputs {
    pub groups: Vec<targets::Group>,
}

/// The servers to share the attack among when the targets name several (else none).
pub type Servers = Vec<stampede_engine::Server>;

impl CommandLine for Attack {
    type Args = AttackArgs;
    type Inputs = Inputs;
    type Info = Servers;
    const DIALECT: &'static Dialect = &ATTACK;

    fn result_file(a: &AttackArgs) -> &crate::args::ResultFile {
        &a.result
    }

    fn segments(a: &AttackArgs) -> &crate::args::SegmentArgs {
        &a.segments
    }

    fn inputs(a: &AttackArgs) -> Result<Inputs, FlagError> {
        let path = if a.targets == "stdin" {
            "-"
        } else {
            a.targets.as_str()
        };
        let text = input::read_text(path, "-targets", Input::List)
            .map_err(|e| FlagError::usage(e.to_string()))?;
        let entries = match a.format.as_str() {
            "http" => targets::parse(&a.targets, &text)?,
            "json" => json_targets(&a.targets, &text)?,
            f => {
                return Err(FlagError::usage(format!(
                    "-format {f}: targets are written as http or json"
                )))
            }
        };
        let headers = (a.headers.iter())
            .map(|h| common::header_arg(h))
            .collect::<Result<Vec<_>, _>>()?;
        let body = a.body.as_deref().map(common::read_body).transpose()?;
        let shared = targets::Common {
            headers: &headers,
            keepalive: a.keepalive,
            body: body.as_deref(),
        };
        let groups = targets::requests(&a.targets, &entries, a.unix_socket.as_deref(), &shared)?;
        let mut groups = groups;
        if let Some(to) = &a.connect_to {
            for g in &mut groups {
                common::connect_mapped("vegeta", "-connect-to", to, &mut g.target)?;
            }
        }
        Ok(Inputs { groups })
    }

    fn translate(a: &AttackArgs, inputs: Inputs) -> Result<(LoadSpec, Servers), FlagError> {
        translate(a, inputs)
    }
}

/// vegeta's JSON targets: one object per line with `method`, `url`, optional
/// `header` (name to a list of values) and `body` (base64).
fn json_targets(file: &str, text: &str) -> Result<Vec<targets::Entry>, FlagError> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Line {
        method: String,
        url: String,
        #[serde(default)]
        header: std::collections::BTreeMap<String, Vec<String>>,
        #[serde(default)]
        body: Option<String>,
    }
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        let at = |what: String| FlagError::usage(format!("{file}:{}: {what}", i + 1));
        let t: Line = serde_json::from_str(l).map_err(|e| {
            at(format!(
                "not a JSON target ({e}); write {{\"method\":\"GET\",\"url\":\"http://…\"}}"
            ))
        })?;
        let body = match t.body {
            Some(b) => {
                use base64::Engine as _;
                Some(
                    base64::engine::general_purpose::STANDARD
                        .decode(b.as_bytes())
                        .map_err(|e| at(format!("body: not base64 ({e})")))?,
                )
            }
            None => None,
        };
        let headers = (t.header.into_iter())
            .flat_map(|(n, vs)| vs.into_iter().map(move |v| (n.clone(), v)))
            .collect();
        out.push(targets::Entry {
            line: i + 1,
            method: t.method,
            url: t.url,
            headers,
            body: None,
            data: body,
        });
    }
    if out.is_empty() {
        return Err(FlagError::usage(format!("{file}: no targets")));
    }
    Ok(out)
}

/// The attack the flags ask for, with the servers to share it among when the targets
/// name several. Pure: it resolves no name and reads no file.
fn translate(a: &AttackArgs, Inputs { groups }: Inputs) -> Result<(LoadSpec, Servers), FlagError> {
    if a.workers == 0 {
        return Err(FlagError::usage("-workers 0: give at least one worker"));
    }
    let first = groups
        .first()
        .ok_or_else(|| FlagError::usage(format!("-targets {}: no requests", a.targets)))?;
    let target = first.target.clone();
    let http2 = if target.tls { a.http2 } else { a.h2c };
    let tls_args = crate::tls::TlsArgs {
        insecure: a.insecure,
        cacert: a.root_certs.clone(),
        cert: a.cert.clone(),
        key: a.key.clone(),
        resume: a.session_tickets,
        version: None,
    };
    let tls = tls_args.config(&target, http2)?;
    let mut spec = LoadSpec::new(target, first.requests[0].clone());
    spec.load.variety = first.requests.clone();
    let servers = match groups.len() {
        1 => Vec::new(),
        _ => (groups.into_iter())
            .map(|g| {
                let tls = tls_args.config(&g.target, http2)?;
                Ok(g.server(tls))
            })
            .collect::<Result<Servers, FlagError>>()?,
    };
    spec.tls = tls;
    spec.load.protocol.http2 = http2;
    spec.load.keepalive = a.keepalive;
    spec.load.timeout = (!a.timeout.is_zero()).then_some(a.timeout);
    // vegeta waits for the answers in flight when the attack ends (its report's
    // `wait`), as long as a request may take; with no timeout, 30 s at most.
    if !a.duration.is_zero() {
        spec.load.drain = Some(spec.load.timeout.unwrap_or(Duration::from_secs(30)));
    }
    spec.load.redirects = a.redirects.clamp(0, 100) as u32;
    spec.load.duration = Some(if a.duration.is_zero() {
        FOREVER
    } else {
        a.duration
    });
    let connections = match (a.rate, a.max_workers) {
        (_, Some(m)) => m.max(1),
        (r, None) if r > 0.0 => ((r * 0.1).ceil() as usize).clamp(a.workers, 10_000),
        _ => a.workers,
    };
    spec.load.connections = a
        .max_connections
        .map_or(connections, |c| connections.min(c.max(1)));
    spec.load.threads = common::cpus().min(spec.load.connections);
    if a.rate > 0.0 {
        spec.load.shape = Shape::Rate {
            rate: a.rate,
            gaps: Gaps::Even,
        };
    }
    crate::args::NetArgs {
        local_address: a
            .laddr
            .map(|ip| vec![common::LocalAddresses(vec![ip])])
            .unwrap_or_default(),
        ..Default::default()
    }
    .apply(&mut spec)?;
    Ok((spec, servers))
}

/// The most buckets a histogram report takes.
pub const MAX_BUCKETS: usize = 1000;

/// `hist[0,1ms,10ms]`'s bucket list (the part in brackets) as µs bounds, ascending.
pub fn parse_buckets(s: &str) -> Result<Vec<u64>, crate::BadValue> {
    let inner = (s.trim().strip_prefix('['))
        .and_then(|x| x.strip_suffix(']'))
        .ok_or_else(|| format!("{s:?}: write the buckets in brackets, e.g. [0,1ms,10ms]"))?;
    let mut out = Vec::new();
    for b in inner.split(',') {
        if out.len() == MAX_BUCKETS {
            return Err(crate::BadValue(format!("at most {MAX_BUCKETS} buckets")));
        }
        let d = parse_go_duration(b.trim()).map_err(|e| format!("bucket {:?}: {e}", b.trim()))?;
        let v = d.as_micros() as u64;
        if out.last().is_some_and(|l| *l >= v) {
            return Err(crate::BadValue(format!(
                "{s:?}: the buckets must be in ascending order"
            )));
        }
        out.push(v);
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
