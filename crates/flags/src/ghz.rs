//! `stampede ghz`'s command line: ghz's flags, translated into gRPC calls made by
//! stampede's HTTP/2 engine.
//!
//! ghz's long flags take two dashes (`--call`, `--load-schedule`), `=` or a space before
//! the value. The host is `HOST:PORT`; `--insecure` speaks h2c, otherwise TLS with ALPN
//! `h2` (`--cacert`, `--cert`/`--key`, `--cname`, `--skipTLS`). `-c` calls in flight
//! spread evenly over `--connections` connections (HTTP/2 streams on each), `-n` calls
//! in all or `-z` a duration (`-x` a bound on `-n`'s), `-r` a fixed rate or
//! `--load-schedule step|line` one that changes, calls timed from their intended
//! start. The schema comes from `--proto` (with `-i`), `--protoset`, or the server's
//! reflection service; the messages from `-d`/`-D` (JSON, `@` for standard input,
//! ghz's templates that are the same for every call rendered) or `-b`/`-B` (binary),
//! the metadata from `-m`/`-M`; `-e` compresses them with gzip. The report is ghz's
//! (`-O summary|csv|json|pretty|influx-summary|influx-details`, `-o FILE`). What ghz
//! does that is not offered here is refused by name, with why and what to use instead.

use std::time::Duration;

use clap::Parser;
use serde_json::{Map, Value};
use stampede_engine::arrivals::Gaps;
use stampede_engine::input::{self, Input};
use stampede_engine::{LoadSpec, Shape, Target};
use stampede_report::ghz::GhzInfo;

use crate::args as common;
use crate::dialect::{Dialect, Inert, Refused};
use crate::vegeta::parse_go_duration;
use crate::CommandLine;
use crate::FlagError;
use stampede_grpc::calldata::{self, string_map};
use stampede_grpc::calls as grpc;

/// ghz's command line: what is not taken, and what changes nothing.
pub const DIALECT: Dialect = Dialect {
    tool: "ghz",
    refused: &[
        Refused {
            flag: "--config",
            why: "settings come from the command line here",
            instead: "give the config file's settings as flags",
        },
        Refused {
            flag: "--stream-dynamic-messages",
            why: "messages are built once before the run; none is rendered per call",
            instead: "write the values in -d",
        },
        Refused {
            flag: "--skipFirst",
            why: "every call of the run is counted here",
            instead: "a first, short run to warm the server",
        },
        Refused {
            flag: "--lb-strategy",
            why: "the calls go to the one address the host names",
            instead: "one run per server, or stampede load --targets",
        },
    ],
    inert: &[
        Inert {
            id: "keepalive",
            flag: "--keepalive",
            why: "connections stay open for the whole run here; no keepalive pings are sent",
        },
        Inert {
            id: "debug",
            flag: "--debug",
            why: "no debug log is written; the result's JSON (--json) has the run's figures",
        },
        Inert {
            id: "async_calls",
            flag: "--async",
            why: "with -r calls go out at their intended times whenever one of the -c streams is free, and a call that waits is timed from its intended start",
        },
    ],
    prefixes: false,
    go: false,
};

/// The output formats ghz writes.
const FORMATS: &[&str] = &[
    "summary",
    "csv",
    "json",
    "pretty",
    "influx-summary",
    "influx-details",
];

/// ghz's command line: one field per flag of its usage that is taken.
#[derive(Parser, Debug)]
#[command(
    name = "stampede ghz",
    version,
    about = "ghz-compatible gRPC load test (ghz's flags and reports)",
    disable_version_flag = true
)]
pub struct GhzArgs {
    /// The Protocol Buffer .proto file
    #[arg(long = "proto", value_name = "FILE")]
    pub proto: Option<String>,
    /// The compiled protoset file (protoc --include_imports -o); --proto takes
    /// precedence
    #[arg(long = "protoset", value_name = "FILE")]
    pub protoset: Option<String>,
    /// A fully-qualified method name, 'package.Service/Method' or
    /// 'package.Service.Method'
    #[arg(long = "call", value_name = "METHOD")]
    pub call: Option<String>,
    /// Comma-separated proto import paths (the .proto's directory and the current
    /// one are added)
    #[arg(
        short = 'i',
        long = "import-paths",
        value_name = "DIRS",
        value_delimiter = ','
    )]
    pub import_paths: Vec<String>,
    /// File of trusted root certificates for verifying the server
    #[arg(long = "cacert", value_name = "FILE")]
    pub cacert: Option<std::path::PathBuf>,
    /// Client certificate to present to the server (needs --key)
    #[arg(long = "cert", value_name = "FILE", requires = "key")]
    pub cert: Option<std::path::PathBuf>,
    /// The client certificate's private key (needs --cert)
    #[arg(long = "key", value_name = "FILE", requires = "cert")]
    pub key: Option<std::path::PathBuf>,
    /// Server name the TLS certificate is checked against, instead of the host's
    #[arg(long = "cname", value_name = "NAME")]
    pub cname: Option<String>,
    /// Skip TLS verification of the server's certificate chain and host name
    #[arg(long = "skipTLS")]
    pub skip_tls: bool,
    /// Plaintext: HTTP/2 without TLS (h2c)
    #[arg(long = "insecure")]
    pub insecure: bool,
    /// The :authority pseudo-header's value
    #[arg(long = "authority", value_name = "AUTHORITY")]
    pub authority: Option<String>,
    /// Send without waiting for answers (see the note it prints)
    #[arg(long = "async")]
    pub async_calls: bool,
    /// Requests per second for the const load schedule (0: no limit)
    #[arg(short = 'r', long = "rps", value_name = "RPS", default_value_t = 0)]
    pub rps: u64,
    /// The load schedule: const (-r), step (--load-step every --load-step-duration)
    /// or line (--load-step each second)
    #[arg(
        long = "load-schedule",
        value_name = "SCHEDULE",
        default_value = "const"
    )]
    pub load_schedule: String,
    /// Start rate of the step and line schedules
    #[arg(long = "load-start", value_name = "RPS", default_value_t = 0)]
    pub load_start: u64,
    /// Step (or slope) of the step and line schedules
    #[arg(
        long = "load-step",
        value_name = "RPS",
        default_value_t = 0,
        allow_negative_numbers = true
    )]
    pub load_step: i64,
    /// End rate of the step and line schedules
    #[arg(long = "load-end", value_name = "RPS", default_value_t = 0)]
    pub load_end: u64,
    /// How long each step lasts
    #[arg(long = "load-step-duration", value_name = "DURATION", default_value = "0", value_parser = parse_go_duration)]
    pub load_step_duration: Duration,
    /// How long the schedule changes the rate
    #[arg(long = "load-max-duration", value_name = "DURATION", default_value = "0", value_parser = parse_go_duration)]
    pub load_max_duration: Duration,
    /// Calls in flight at once, spread evenly over the connections
    #[arg(
        short = 'c',
        long = "concurrency",
        value_name = "N",
        default_value_t = 50
    )]
    pub concurrency: u64,
    /// The concurrency schedule: const (step and line are refused, with why)
    #[arg(
        long = "concurrency-schedule",
        value_name = "SCHEDULE",
        default_value = "const"
    )]
    pub concurrency_schedule: String,
    /// Start concurrency of the step and line schedules
    #[arg(long = "concurrency-start", value_name = "N", default_value_t = 0)]
    pub concurrency_start: u64,
    /// End concurrency of the step and line schedules
    #[arg(long = "concurrency-end", value_name = "N", default_value_t = 0)]
    pub concurrency_end: u64,
    /// Step (or slope) of the step and line concurrency schedules
    #[arg(long = "concurrency-step", value_name = "N", default_value_t = 1)]
    pub concurrency_step: u64,
    /// How long each concurrency step lasts
    #[arg(long = "concurrency-step-duration", value_name = "DURATION", default_value = "0", value_parser = parse_go_duration)]
    pub concurrency_step_duration: Duration,
    /// How long the concurrency schedule changes
    #[arg(long = "concurrency-max-duration", value_name = "DURATION", default_value = "0", value_parser = parse_go_duration)]
    pub concurrency_max_duration: Duration,
    /// Calls to make in all
    #[arg(short = 'n', long = "total", value_name = "N", default_value_t = 200)]
    pub total: u64,
    /// Each call's timeout, sent as its deadline (0: none)
    #[arg(short = 't', long = "timeout", value_name = "DURATION", default_value = "20s", value_parser = parse_go_duration)]
    pub timeout: Duration,
    /// How long to send calls; -n is then ignored
    #[arg(short = 'z', long = "duration", value_name = "DURATION", default_value = "0", value_parser = parse_go_duration)]
    pub duration: Duration,
    /// The most -n's calls may take
    #[arg(short = 'x', long = "max-duration", value_name = "DURATION", default_value = "0", value_parser = parse_go_duration)]
    pub max_duration: Duration,
    /// What a timed run does with calls in flight at its end: close (counted as
    /// Canceled) or ignore (left out)
    #[arg(long = "duration-stop", value_name = "HOW", default_value = "close")]
    pub duration_stop: String,
    /// The call data as JSON ('@': from standard input)
    #[arg(short = 'd', long = "data", value_name = "JSON")]
    pub data: Option<String>,
    /// The call data's JSON from a file
    #[arg(short = 'D', long = "data-file", value_name = "FILE")]
    pub data_file: Option<String>,
    /// The call data as a serialized message, or count-prefixed messages, on
    /// standard input
    #[arg(short = 'b', long = "binary")]
    pub binary: bool,
    /// The call data as a serialized message, or count-prefixed messages, in a file
    #[arg(short = 'B', long = "binary-file", value_name = "FILE")]
    pub binary_file: Option<String>,
    /// Metadata as a JSON object of strings
    #[arg(short = 'm', long = "metadata", value_name = "JSON")]
    pub metadata: Option<String>,
    /// Metadata's JSON from a file
    #[arg(short = 'M', long = "metadata-file", value_name = "FILE")]
    pub metadata_file: Option<String>,
    /// Metadata sent with the reflection call (a JSON object of strings), which asks
    /// the server for the schema when neither --proto nor --protoset is given
    #[arg(long = "reflect-metadata", value_name = "JSON")]
    pub reflect_metadata: Option<String>,
    /// Messages each client or bidirectional stream sends before it closes (0: the
    /// data's messages once)
    #[arg(long = "stream-call-count", value_name = "N", default_value_t = 0)]
    pub stream_call_count: u64,
    /// Time between two messages of a client or bidirectional stream (0: all at once)
    #[arg(long = "stream-interval", value_name = "DURATION", default_value = "0", value_parser = parse_go_duration)]
    pub stream_interval: Duration,
    /// Close each client or bidirectional stream's sending side this long after the
    /// call began, its messages sent in turn until then (with --stream-interval)
    #[arg(long = "stream-call-duration", value_name = "DURATION", default_value = "0", value_parser = parse_go_duration)]
    pub stream_call_duration: Duration,
    /// Write the report to FILE instead of standard output
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<String>,
    /// The report's format: summary, csv, json, pretty, influx-summary, influx-details
    #[arg(
        short = 'O',
        long = "format",
        value_name = "FORMAT",
        default_value = "summary"
    )]
    pub format: String,
    /// Count calls that failed in the latency figures too
    #[arg(long = "count-errors")]
    pub count_errors: bool,
    /// Connections to spread the calls over
    #[arg(long = "connections", value_name = "N", default_value_t = 1)]
    pub connections: u64,
    /// Timeout of each connection's set-up
    #[arg(long = "connect-timeout", value_name = "DURATION", default_value = "10s", value_parser = parse_go_duration)]
    pub connect_timeout: Duration,
    /// Keepalive ping interval (see the note it prints)
    #[arg(long = "keepalive", value_name = "DURATION", value_parser = parse_go_duration)]
    pub keepalive: Option<Duration>,
    /// A name for the run, in its report
    #[arg(long = "name", value_name = "NAME")]
    pub name: Option<String>,
    /// Tags for the run as a JSON object of strings, in its report
    #[arg(long = "tags", value_name = "JSON")]
    pub tags: Option<String>,
    /// CPU cores to use (worker threads, at most one per connection)
    #[arg(long = "cpus", value_name = "N")]
    pub cpus: Option<usize>,
    /// A debug log's path (see the note it prints)
    #[arg(long = "debug", value_name = "FILE")]
    pub debug: Option<String>,
    /// Compress the messages with gzip (grpc-encoding: gzip)
    #[arg(short = 'e', long = "enable-compression")]
    pub enable_compression: bool,
    /// Print the version
    #[arg(short = 'v', long = "version")]
    pub version: bool,
    /// The server, HOST:PORT
    #[arg(value_name = "HOST")]
    pub host: Option<String>,
    #[command(flatten)]
    pub segments: crate::args::SegmentArgs,
    #[command(flatten)]
    pub result: crate::args::ResultFile,
}

/// ghz's place in the dialects' run contract.
pub struct Ghz;

/// What the flags point at, read: the target, the method, the messages' source and
/// the metadata.
pub struct Inputs {
    pub target: Target,
    pub method: prost_reflect::MethodDescriptor,
    pub data: Data,
    /// The metadata's text (a JSON object, perhaps with templates) and its flag.
    pub metadata: Option<(String, &'static str)>,
    pub tags: Option<Map<String, Value>>,
}

/// Where the messages come from.
pub enum Data {
    Json(String),
    Binary(Vec<u8>),
}

/// What the report needs: ghz's info and the format.
#[derive(Debug)]
pub struct Info {
    pub ghz: GhzInfo,
}

impl CommandLine for Ghz {
    type Args = GhzArgs;
    type Inputs = Inputs;
    type Info = Info;
    const DIALECT: &'static Dialect = &DIALECT;

    fn result_file(a: &GhzArgs) -> &crate::args::ResultFile {
        &a.result
    }

    fn segments(a: &GhzArgs) -> &crate::args::SegmentArgs {
        &a.segments
    }

    fn inputs(a: &GhzArgs) -> Result<Inputs, FlagError> {
        let host = a.host.as_deref().ok_or_else(|| {
            FlagError::usage("give the server as HOST:PORT (e.g. 127.0.0.1:50051)")
        })?;
        let mut target = common::resolve(&url_of(host, a.insecure)?, None)?;
        if let Some(name) = &a.cname {
            // The certificate is checked against this name; the address stays the host's.
            target.host = name.clone();
        }
        if let Some(auth) = &a.authority {
            target.authority = auth.clone();
        }
        let call = a.call.as_deref().ok_or_else(|| {
            FlagError::usage("--call: give the method, e.g. --call helloworld.Greeter.SayHello")
        })?;
        // --proto takes precedence over --protoset, as in ghz.
        let protos: Vec<String> = a.proto.iter().cloned().collect();
        let protoset = if protos.is_empty() {
            a.protoset.as_deref()
        } else {
            None
        };
        let pool = if protos.is_empty() && protoset.is_none() {
            let metadata = match &a.reflect_metadata {
                Some(m) => string_map(m, "--reflect-metadata")?,
                None => Vec::new(),
            };
            stampede_grpc::reflect::Reflect {
                target: &target,
                tls: tls_of(a, &target)?,
                metadata: &metadata,
                timeout: a.connect_timeout + Duration::from_secs(10),
            }
            .schema(grpc::service_of(call)?)?
        } else {
            if a.reflect_metadata.is_some() {
                return Err(FlagError::usage(
                    "--reflect-metadata goes with the reflection call, made when neither --proto nor --protoset is given",
                ));
            }
            grpc::Schema {
                protos: &protos,
                protoset,
                import_paths: &a.import_paths,
            }
            .load()?
        };
        let method = grpc::method(&pool, call)?;
        let read = |path: &str, flag: &str| {
            input::read(path, flag, Input::Body).map_err(|e| FlagError::usage(e.to_string()))
        };
        let text = |path: &str, flag: &str| {
            input::read_text(path, flag, Input::Body).map_err(|e| FlagError::usage(e.to_string()))
        };
        let data = match (&a.data, &a.data_file, a.binary, &a.binary_file) {
            (Some(d), None, false, None) if d == "@" => Data::Json(text("-", "-d @")?),
            (Some(d), None, false, None) => Data::Json(d.clone()),
            (None, Some(f), false, None) => Data::Json(text(f, "-D")?),
            (None, None, true, None) => Data::Binary(read("-", "-b")?),
            (None, None, false, Some(f)) => Data::Binary(read(f, "-B")?),
            (None, None, false, None) => Data::Json("{}".into()),
            _ => {
                return Err(FlagError::usage(
                    "-d, -D, -b and -B each give the call data; give one",
                ))
            }
        };
        let metadata_text = match (&a.metadata, &a.metadata_file) {
            (Some(_), Some(_)) => {
                return Err(FlagError::usage(
                    "-m and -M both give the metadata; give one",
                ))
            }
            (Some(m), None) => Some((m.clone(), "-m")),
            (None, Some(f)) => Some((text(f, "-M")?, "-M")),
            (None, None) => None,
        };
        let metadata = match metadata_text {
            // Read as a JSON object now when it has no templates, so that what is
            // wrong with it is said before anything else.
            Some((t, flag)) => {
                let parsed = calldata::Template::parse(&t, &method, flag)?;
                if let Some(fixed) = parsed.constant() {
                    string_map(fixed, flag)?;
                }
                Some((t, flag))
            }
            None => None,
        };
        let tags = match &a.tags {
            Some(t) => Some(
                string_map(t, "--tags")?
                    .into_iter()
                    .map(|(k, v)| (k, Value::String(v)))
                    .collect(),
            ),
            None => None,
        };
        Ok(Inputs {
            target,
            method,
            data,
            metadata,
            tags,
        })
    }

    fn translate(a: &GhzArgs, inputs: Inputs) -> Result<(LoadSpec, Info), FlagError> {
        translate(a, inputs)
    }
}

/// The TLS configuration the flags ask for (none with `--insecure`), its ALPN h2.
fn tls_of(
    a: &GhzArgs,
    target: &Target,
) -> Result<Option<std::sync::Arc<stampede_tls::rustls::ClientConfig>>, FlagError> {
    if a.insecure {
        let tls_flag = [
            ("--skipTLS", a.skip_tls),
            ("--cacert", a.cacert.is_some()),
            ("--cert", a.cert.is_some()),
            ("--cname", a.cname.is_some()),
        ]
        .into_iter()
        .find(|f| f.1);
        if let Some((flag, _)) = tls_flag {
            return Err(FlagError::usage(format!(
                "{flag} applies to TLS, and --insecure asks for plaintext; give one"
            )));
        }
        return Ok(None);
    }
    crate::tls::TlsArgs {
        insecure: a.skip_tls,
        cacert: a.cacert.clone(),
        cert: a.cert.clone(),
        key: a.key.clone(),
        resume: false,
        version: None,
    }
    .config(target, true)
}

/// The URL of `host` (`HOST:PORT`): h2c with `--insecure`, TLS otherwise.
fn url_of(host: &str, insecure: bool) -> Result<String, FlagError> {
    if host.contains("://") || host.contains('/') {
        return Err(FlagError::usage(format!(
            "{host}: give the server as HOST:PORT, without a scheme or path (--insecure for plaintext)"
        )));
    }
    Ok(format!(
        "{}://{host}/",
        if insecure { "http" } else { "https" }
    ))
}

/// The run the flags ask for. Pure: it resolves no name and reads no file.
fn translate(a: &GhzArgs, i: Inputs) -> Result<(LoadSpec, Info), FlagError> {
    if !FORMATS.contains(&a.format.as_str()) {
        let why = match a.format.as_str() {
            "html" => {
                "; for a page, write the result with --json FILE and run stampede report --html"
            }
            "prometheus" => {
                "; for Prometheus, run the call with stampede load --call and --metrics-listen ADDR (scraped while it runs) or --out prometheus-rw=URL (pushed)"
            }
            _ => "",
        };
        return Err(FlagError::usage(format!(
            "-O {}: the formats are {}{why}",
            a.format,
            FORMATS.join(", ")
        )));
    }
    match a.concurrency_schedule.as_str() {
        "const" => {}
        "step" | "line" => {
            return Err(FlagError::usage(format!(
                "--concurrency-schedule {}: calls in flight that change during the run are not offered here; use const -c, or one run per level with stampede bench",
                a.concurrency_schedule
            )))
        }
        other => {
            return Err(FlagError::usage(format!(
                "--concurrency-schedule {other}: the schedules are const, step and line"
            )))
        }
    }
    let paced = schedule::load_schedule(a)?;
    let stop_canceled = match a.duration_stop.as_str() {
        "close" => true,
        "ignore" => false,
        "wait" => {
            return Err(FlagError::usage(
                "--duration-stop wait: a timed run ends at its duration here, and calls then in flight are not waited for; use close (counted as Canceled) or ignore",
            ))
        }
        other => {
            return Err(FlagError::usage(format!(
                "--duration-stop {other}: give close, wait or ignore"
            )))
        }
    };
    if a.concurrency == 0 || a.connections == 0 {
        return Err(FlagError::usage(
            "-c and --connections must each be at least 1",
        ));
    }
    if a.concurrency < a.connections {
        return Err(FlagError::usage(format!(
            "-c {} is below --connections {}: each connection carries at least one call",
            a.concurrency, a.connections
        )));
    }
    if !a.concurrency.is_multiple_of(a.connections) {
        return Err(FlagError::usage(format!(
            "-c {} over --connections {}: each connection carries as many calls here; give -c a multiple of --connections (e.g. {})",
            a.concurrency,
            a.connections,
            a.concurrency / a.connections * a.connections
        )));
    }
    if a.duration.is_zero() && a.total == 0 {
        return Err(FlagError::usage(
            "-n 0: give a number of calls, or -z a duration",
        ));
    }
    let m = &i.method;
    let data = match &i.data {
        Data::Json(text) => Some(calldata::Template::parse(text, m, "-d")?),
        Data::Binary(_) => None,
    };
    let (metadata, made_metadata) = match &i.metadata {
        Some((text, flag)) => {
            let t = calldata::Template::parse(text, m, flag)?;
            match t.constant() {
                Some(fixed) => (string_map(fixed, flag)?, None),
                None => (Vec::new(), Some(t)),
            }
        }
        None => (Vec::new(), None),
    };
    let send = grpc::stream_send(
        m,
        grpc::Pacing {
            interval: a.stream_interval,
            duration: a.stream_call_duration,
            count: a.stream_call_count,
        },
        [
            "--stream-interval",
            "--stream-call-duration",
            "--stream-call-count",
        ],
    )?;
    // Paced streams take the data's messages in turn as they go; otherwise a count
    // makes the body of that many.
    let cycle = match send {
        Some(_) => 0,
        None => a.stream_call_count as usize,
    };
    let mut target = i.target.clone();
    let timeout = (!a.timeout.is_zero()).then_some(a.timeout);
    let headers = grpc::CallHeaders {
        metadata: &metadata,
        deadline: timeout,
        gzip: a.enable_compression,
        paced: send.is_some(),
    };
    let (mut requests, made) = match data {
        // Templates that change from call to call: each call's made as it is sent.
        Some(t) if t.constant().is_none() || made_metadata.is_some() => {
            let mut maker = calldata::Maker::new(m.clone(), t, "-d");
            maker.stream_count = cycle;
            maker.gzip = a.enable_compression;
            maker.metadata = made_metadata.map(calldata::Metadata::Json);
            if let Some(name) = a.name.as_deref().filter(|n| !n.is_empty()) {
                maker.prefix = format!("{name}:");
            }
            maker.check()?;
            let made = stampede_engine::made::MadeCalls(std::sync::Arc::new(maker));
            (vec![grpc::base_request(&target, m, &headers)?], Some(made))
        }
        _ if made_metadata.is_some() => {
            return Err(FlagError::usage(
                "-m: metadata templates that change from call to call go with JSON call data (-d or -D); with -b or -B write the metadata's values in it",
            ))
        }
        data => {
            let mut framed = match (data, &i.data) {
                (Some(t), _) => grpc::messages(m, t.constant().unwrap_or("{}"), "-d")?,
                (None, Data::Binary(bytes)) => grpc::binary_messages(m, bytes, "-b")?,
                (None, Data::Json(_)) => unreachable!("JSON data is parsed as a template"),
            };
            if cycle > 0 {
                // The data's messages in turn, as many as asked.
                framed = framed.iter().cycle().take(cycle).cloned().collect();
            }
            if a.enable_compression {
                framed = grpc::gzip_messages(framed)?;
            }
            (grpc::requests(&target, m, framed, &headers)?, None)
        }
    };
    let tls = tls_of(a, &target)?;
    target.url = format!(
        "{}{}",
        target.url.trim_end_matches('/'),
        requests[0].target()
    );
    let first = requests[0].clone();
    let mut spec = LoadSpec::new(target, first);
    if requests.len() > 1 {
        spec.load.variety = std::mem::take(&mut requests);
    }
    spec.calls = made;
    spec.tls = tls;
    spec.load.streams.send = send;
    spec.load.protocol.http2 = true;
    spec.load.streams.stream = Some(stampede_engine::StreamMode::Grpc);
    spec.load.connections = a.connections as usize;
    spec.load.pipeline = (a.concurrency / a.connections) as usize;
    spec.load.threads = a
        .cpus
        .unwrap_or_else(common::cpus)
        .clamp(1, spec.load.connections);
    spec.load.timeout = timeout;
    spec.load.connect_timeout = a.connect_timeout;
    let end_reason = if a.duration.is_zero() {
        spec.load.requests = Some(a.total);
        if !a.max_duration.is_zero() {
            spec.load.duration = Some(a.max_duration);
        }
        "normal"
    } else {
        spec.load.duration = Some(a.duration);
        "timeout"
    };
    if let Some(profile) = paced {
        spec.load.shape = Shape::Paced(profile);
    } else if a.rps > 0 {
        spec.load.shape = Shape::Rate {
            rate: a.rps as f64,
            gaps: Gaps::Even,
        };
    }
    spec.record_requests = matches!(
        a.format.as_str(),
        "csv" | "json" | "pretty" | "influx-details"
    );
    let ghz = info::report(
        a,
        &i,
        info::Run {
            threads: spec.load.threads,
            end_reason,
            cut_as_canceled: stop_canceled,
        },
    );
    Ok((spec, Info { ghz }))
}

mod info;
mod schedule;

#[cfg(test)]
mod tests;
