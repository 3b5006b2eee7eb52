//! `stampede serve`: runs the reference server until SIGINT or SIGTERM, then drains.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{ArgAction, Args};
use stampede_server::{Config, Limits, Server, Shutdown};

use crate::common::{self, Exit};

/// Arguments of `stampede serve`.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on, ADDR:PORT (repeatable)
    #[arg(short = 'l', long = "listen", value_name = "ADDR:PORT", action = ArgAction::Append)]
    pub listen: Vec<String>,
    /// Event-loop threads (default: all cores)
    #[arg(short = 't', long = "threads", value_name = "N")]
    pub threads: Option<usize>,
    /// How the TCP connections talk to the kernel: io_uring (a wake-up's sends and
    /// receives in one system call), epoll, or auto: io_uring where the kernel allows
    /// it, epoll otherwise (said when it starts; STAMPEDE_IO sets auto's)
    #[arg(long = "io", value_name = "auto|epoll|io_uring", value_parser = common::parse_io, default_value = "auto")]
    pub io: stampede_engine::net::IoBackend,
    #[arg(
        long = "static",
        value_name = "DIR",
        help = "Serve /static/<file> and /FiringGeometry.png from this directory"
    )]
    pub static_dir: Option<PathBuf>,
    /// Largest request head in bytes (431 beyond)
    #[arg(help_heading = "Limits", long = "max-head", value_name = "BYTES", default_value_t = 16 * 1024)]
    pub max_head: usize,
    /// Largest request body in bytes (413 beyond)
    #[arg(help_heading = "Limits", long = "max-body", value_name = "BYTES", default_value_t = 1024 * 1024)]
    pub max_body: usize,
    /// Close a connection whose request head is not complete after this long
    #[arg(help_heading = "Limits", long = "head-timeout", value_name = "T", default_value = "10s", value_parser = common::parse_duration)]
    pub head_timeout: Duration,
    /// Close idle keep-alive connections after this long
    #[arg(help_heading = "Limits", long = "idle-timeout", value_name = "T", default_value = "60s", value_parser = common::parse_duration)]
    pub idle_timeout: Duration,
    /// Most open connections; more are answered 503
    #[arg(
        help_heading = "Limits",
        long = "max-connections",
        value_name = "N",
        default_value_t = 100_000
    )]
    pub max_connections: usize,
    /// Most MiB of answers waiting for clients that do not read them, over every
    /// connection; past it a WebSocket connection that adds to them is closed (1013)
    #[arg(
        help_heading = "Limits",
        long = "output-budget",
        value_name = "MIB",
        default_value_t = 64
    )]
    pub output_budget: usize,
    /// Serve HTTPS with this certificate chain (PEM); needs --tls-key
    #[arg(
        help_heading = "TLS and protocols",
        long = "tls-cert",
        value_name = "FILE",
        requires = "tls_key",
        conflicts_with = "tls_self_signed"
    )]
    pub tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM)
    #[arg(
        help_heading = "TLS and protocols",
        long = "tls-key",
        value_name = "FILE",
        requires = "tls_cert"
    )]
    pub tls_key: Option<PathBuf>,
    /// Serve HTTPS with a certificate generated now for localhost, 127.0.0.1, ::1 and
    /// the listen addresses; its PEM is written to FILE if given, for clients' --cacert
    #[arg(help_heading = "TLS and protocols", long = "tls-self-signed", value_name = "FILE", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    pub tls_self_signed: Option<String>,
    /// Require clients to present a certificate issued by a CA in FILE (mutual TLS)
    #[arg(
        help_heading = "TLS and protocols",
        long = "tls-client-ca",
        value_name = "FILE"
    )]
    pub tls_client_ca: Option<PathBuf>,
    /// Speak HTTP/1.1 only: no h2c, and TLS's ALPN offers only http/1.1 (HTTP/2 is
    /// otherwise served on every listener, as h2c and over TLS)
    #[arg(help_heading = "TLS and protocols", long = "no-http2")]
    pub no_http2: bool,
    /// Answer HTTP/3 too (with --tls-cert or --tls-self-signed): QUIC on UDP at each
    /// listener's port, the same endpoints and limits; HTTP/1.1 and HTTP/2 answers
    /// then carry Alt-Svc
    #[arg(help_heading = "TLS and protocols", long = "http3")]
    pub http3: bool,
    /// The mock LLM (/v1/completions, /v1/chat/completions): time to the first token
    #[arg(help_heading = "The mock LLM server", long = "llm-ttft", value_name = "T", default_value = "50ms", value_parser = common::parse_duration)]
    pub llm_ttft: Duration,
    /// The mock LLM: time from one token to the next
    #[arg(help_heading = "The mock LLM server", long = "llm-itl", value_name = "T", default_value = "10ms", value_parser = common::parse_duration)]
    pub llm_itl: Duration,
    /// The mock LLM: streams a thread serves at full speed; with K under way, each new
    /// one's time to first token and inter-token latency are ceil(K / N) times longer
    /// (0: never slower)
    #[arg(
        help_heading = "The mock LLM server",
        long = "llm-batch",
        value_name = "N",
        default_value_t = 0
    )]
    pub llm_batch: u32,
    /// The mock LLM: tokens answered when a request names no max_tokens
    #[arg(help_heading = "The mock LLM server", long = "llm-max-tokens", value_name = "N", default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub llm_max_tokens: u32,
    /// The mock LLM: every K-th completion a thread begins has its first token T
    /// later, as a stalled prefill would, e.g. 20:400ms
    #[arg(help_heading = "The mock LLM server", long = "llm-stall", value_name = "K:T", value_parser = parse_stall)]
    pub llm_stall: Option<(u32, Duration)>,
    /// The mock LLM serves as a continuous-batching engine does, a GPU per thread
    /// (instead of --llm-ttft and --llm-itl): steps of --llm-step plus the costs
    /// below, a token budget, a KV cache that preempts, vLLM's /metrics
    #[arg(help_heading = "The mock LLM's batching engine", long = "llm-engine")]
    pub llm_engine: bool,
    /// A step's fixed cost
    #[arg(help_heading = "The mock LLM's batching engine", long = "llm-step", value_name = "T", default_value = "10ms", value_parser = common::parse_duration)]
    pub llm_step: Duration,
    /// Added to a step per sequence it decodes
    #[arg(help_heading = "The mock LLM's batching engine", long = "llm-per-seq", value_name = "T", default_value = "20us", value_parser = common::parse_duration)]
    pub llm_per_seq: Duration,
    /// Added to a step per prompt token it prefills
    #[arg(help_heading = "The mock LLM's batching engine", long = "llm-prefill-per-token", value_name = "T", default_value = "50us", value_parser = common::parse_duration)]
    pub llm_prefill_per_token: Duration,
    /// Tokens one step schedules at most (max_num_batched_tokens)
    #[arg(help_heading = "The mock LLM's batching engine", long = "llm-token-budget", value_name = "N", default_value_t = 2048, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub llm_token_budget: u32,
    /// Sequences running at once at most (max_num_seqs)
    #[arg(help_heading = "The mock LLM's batching engine", long = "llm-max-seqs", value_name = "N", default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=65_536))]
    pub llm_max_seqs: u32,
    /// Tokens the KV cache holds; a decode that finds it full preempts
    #[arg(help_heading = "The mock LLM's batching engine", long = "llm-kv-tokens", value_name = "N", default_value_t = 262_144, value_parser = clap::value_parser!(u32).range(1..=1_000_000_000))]
    pub llm_kv_tokens: u32,
    /// Tokens per KV block, the prefix cache's unit
    #[arg(help_heading = "The mock LLM's batching engine", long = "llm-block", value_name = "N", default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub llm_block: u32,
    /// Reuse prompts' computed blocks across requests
    #[arg(
        help_heading = "The mock LLM's batching engine",
        long = "llm-prefix-cache"
    )]
    pub llm_prefix_cache: bool,
    /// Append each completion the engine finishes to FILE, a JSON line with its
    /// time to first token, its end and every gap between its tokens (emptied at
    /// the start; a benchmark compares a client's percentiles with these)
    #[arg(
        help_heading = "The mock LLM's batching engine",
        long = "llm-truth",
        value_name = "FILE",
        requires = "llm_engine"
    )]
    pub llm_truth: Option<std::path::PathBuf>,
}

fn parse_stall(s: &str) -> Result<(u32, Duration), String> {
    let bad = || format!("{s:?} is not K:T, a count from 1 and a duration, e.g. 20:400ms");
    let (k, t) = s.split_once(':').ok_or_else(bad)?;
    let k: u32 = k.trim().parse().map_err(|_| bad())?;
    let t = common::parse_duration(t.trim()).map_err(|_| bad())?;
    if k == 0 || t > Duration::from_secs(3600) {
        return Err(bad());
    }
    Ok((k, t))
}

fn parse_addr(s: &str) -> Result<SocketAddr, Exit> {
    s.to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| {
            Exit::usage(format!(
                "--listen: {s:?} is not ADDR:PORT (for example 127.0.0.1:8080 or [::1]:8080)"
            ))
        })
}

/// The TLS configuration asked for, if any. A self-signed certificate is made from the
/// PEM written out, so the file holds exactly what the server presents.
fn tls_config(
    a: &ServeArgs,
    addrs: &[SocketAddr],
) -> Result<Option<std::sync::Arc<stampede_tls::rustls::ServerConfig>>, Exit> {
    use stampede_tls::ServerCert;
    let alpn = stampede_tls::alpn(!a.no_http2);
    let cert = match (&a.tls_cert, &a.tls_key, &a.tls_self_signed) {
        (Some(cert), Some(key), _) => ServerCert::Files {
            cert: cert.clone(),
            key: key.clone(),
        },
        (_, _, Some(out)) => {
            let mut names = vec!["localhost".to_string(), "127.0.0.1".into(), "::1".into()];
            for addr in addrs {
                let ip = addr.ip().to_string();
                if !addr.ip().is_unspecified() && !names.contains(&ip) {
                    names.push(ip);
                }
            }
            if out.is_empty() {
                ServerCert::SelfSigned(names)
            } else {
                let (cert, key) = stampede_tls::self_signed(&names)
                    .map_err(|e| Exit::fail(format!("--tls-self-signed: {e}")))?;
                let key_path = format!("{out}.key");
                common::write_file(out, &cert)?;
                common::write_file(&key_path, &key)?;
                ServerCert::Files {
                    cert: out.into(),
                    key: key_path.into(),
                }
            }
        }
        _ if a.tls_client_ca.is_some() => {
            return Err(Exit::usage(
                "--tls-client-ca needs --tls-cert/--tls-key or --tls-self-signed",
            ))
        }
        _ => return Ok(None),
    };
    stampede_tls::server_config(&cert, alpn, a.tls_client_ca.as_deref())
        .map(Some)
        .map_err(|e| Exit::usage(format!("TLS: {e}")))
}

pub fn main(a: ServeArgs) -> Result<(), Exit> {
    let listen = if a.listen.is_empty() {
        vec!["127.0.0.1:8080".to_string()]
    } else {
        a.listen.clone()
    };
    let addrs = listen
        .iter()
        .map(|s| parse_addr(s))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(dir) = &a.static_dir {
        if !dir.is_dir() {
            return Err(Exit::usage(format!(
                "--static: {} is not a directory",
                dir.display()
            )));
        }
    }
    if a.threads == Some(0) {
        return Err(Exit::usage("--threads must be at least 1"));
    }
    let tls = tls_config(&a, &addrs)?;
    if a.http3 && tls.is_none() {
        return Err(Exit::usage(
            "--http3 is served over TLS: add --tls-cert/--tls-key or --tls-self-signed",
        ));
    }
    let (scheme, protocols) = match (tls.is_some(), a.no_http2, a.http3) {
        (true, false, false) => ("https", "HTTP/1.1 and HTTP/2 by ALPN"),
        (true, false, true) => ("https", "HTTP/1.1 and HTTP/2 by ALPN, HTTP/3 on UDP"),
        (true, true, false) => ("https", "HTTP/1.1"),
        (true, true, true) => ("https", "HTTP/1.1, HTTP/3 on UDP"),
        (false, false, _) => ("http", "HTTP/1.1 and h2c"),
        (false, true, _) => ("http", "HTTP/1.1"),
    };
    let config = Config {
        threads: a.threads.unwrap_or_else(common::cpus),
        static_dir: a.static_dir.clone(),
        limits: Limits {
            max_head: a.max_head,
            max_body: a.max_body,
        },
        head_timeout: a.head_timeout,
        idle_timeout: a.idle_timeout,
        max_connections: a.max_connections.max(1),
        output_budget: a.output_budget.saturating_mul(1 << 20),
        tls,
        http2: !a.no_http2,
        http3: a.http3,
        llm: stampede_server::llm::LlmConfig {
            ttft: a.llm_ttft,
            itl: a.llm_itl,
            batch: a.llm_batch,
            max_tokens: a.llm_max_tokens,
            stall: a.llm_stall,
            engine: a
                .llm_engine
                .then_some(stampede_server::llm::engine::EngineConfig {
                    step: a.llm_step,
                    per_seq: a.llm_per_seq,
                    per_prefill_token: a.llm_prefill_per_token,
                    token_budget: a.llm_token_budget,
                    max_seqs: a.llm_max_seqs,
                    kv_tokens: a.llm_kv_tokens,
                    block: a.llm_block,
                    prefix_cache: a.llm_prefix_cache,
                }),
        },
        reflection: Some(Arc::new(crate::served::reflection()?)),
        llm_metrics: match &a.llm_truth {
            Some(path) => Arc::new(stampede_server::llm::metrics::Metrics::with_truth(
                stampede_server::llm::truth::TruthLog::create(path)
                    .map_err(|e| Exit::usage(format!("--llm-truth {}: {e}", path.display())))?,
            )),
            None => Arc::default(),
        },
        io: a.io,
        ..Config::default()
    };
    let threads = match config.threads {
        1 => "1 thread".to_string(),
        n => format!("{n} threads"),
    };
    stampede_engine::process::raise_nofile(a.max_connections as u64 + 64);
    let server_llm_metrics = config.llm_metrics.clone();
    let server = Server::bind(&addrs, config).map_err(|e| match e.kind() {
        std::io::ErrorKind::Unsupported => Exit::usage(format!("--io: {e}")),
        _ => Exit::fail(e.to_string()),
    })?;
    let io = match server.io() {
        (io, Some(why)) => format!("{io}: {why}"),
        (io, None) => io.to_string(),
    };
    for addr in server.local_addrs() {
        eprintln!("stampede serve: listening on {scheme}://{addr} ({threads}; {protocols}; {io})");
    }
    let shutdown = Shutdown::new();
    common::install_sigint();
    {
        let s = shutdown.clone();
        std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_millis(50));
            if common::interrupted() {
                s.trigger();
                return;
            }
        });
    }
    let h3 = server.h3_stats();
    let llm = server_llm_metrics.clone();
    server
        .run(shutdown)
        .map_err(|e| Exit::fail(e.to_string()))?;
    if a.http3 {
        let s = *h3.lock().unwrap_or_else(|e| e.into_inner());
        eprintln!(
            "stampede serve: stopped; HTTP/3: {} connections, {} requests, {} Retries, {} refused, {} closed for HTTP/3 errors, {} malformed requests",
            s.connections, s.requests, s.retries, s.refused, s.h3_errors, s.stream_errors
        );
    } else {
        eprintln!("stampede serve: stopped");
    }
    if let Some(n) = (llm.truth().map(|t| t.failed())).filter(|n| *n > 0) {
        eprintln!("stampede serve: --llm-truth: {n} writes failed; its file lacks their lines");
    }
    Ok(())
}
