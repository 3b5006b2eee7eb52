//! The flags the command lines share, and the readers of their values: durations,
//! counts with metric suffixes, headers, the target's URL, a body file, `--connect-to`
//! mappings, a proxy, local addresses and socket buffers, `--segment` and
//! `--start-at`, the result file. Each bad value is an [`FlagError`] that names the flag
//! and the accepted forms.

use stampede_engine::error::SocketError;
use stampede_engine::{LoadSpec, Target};

use crate::FlagError;

/// Durations in flags are read as plans read them.
pub use stampede_engine::parse_duration;

/// A duration that must be longer than zero (timeouts).
pub fn positive_duration(s: &str) -> Result<std::time::Duration, crate::BadValue> {
    match parse_duration(s) {
        Ok(d) if d.is_zero() => Err("must be longer than zero".into()),
        Ok(d) => Ok(d),
        Err(e) => Err(crate::BadValue(e.to_string())),
    }
}

/// Parses a count with wrk's metric suffixes: `100`, `1k`, `2M`.
pub fn parse_metric(s: &str) -> Result<u64, crate::BadValue> {
    let t = s.trim();
    let (num, mult) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1_000),
        Some('M') => (&t[..t.len() - 1], 1_000_000),
        Some('G') => (&t[..t.len() - 1], 1_000_000_000),
        _ => (t, 1),
    };
    num.parse::<u64>()
        .map(|n| n * mult)
        .map_err(|_| format!("{s:?} is not a count; use forms like 100, 1k, 2M").into())
}

/// Number of CPUs this process may run on.
pub fn cpus() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// A `-H 'Name: value'` argument, or a usage error naming the flag.
pub fn header_arg(h: &str) -> Result<(String, String), FlagError> {
    stampede_engine::request::parse_header_arg(h)
        .ok_or_else(|| FlagError::usage(format!("-H: {h:?} is not a header; use 'Name: value'")))
}

/// Resolves the URL (not its host when a Unix socket is given).
pub fn resolve(url: &str, unix_socket: Option<&str>) -> Result<Target, FlagError> {
    let at = unix_socket.map(|p| stampede_engine::target::Address::Unix(p.into()));
    Target::parse_at(url, at).map_err(|e| match e {
        // The URL is fine but its host is unknown here: the run could not be made.
        stampede_engine::SpecError::Resolve { .. } => FlagError::fail(e.to_string()),
        _ => FlagError::usage(e.to_string()),
    })
}

/// `--connect-to HOST[:PORT]` resolved (`[v6]:port` too); the URI's port by default.
pub fn connect_to(to: &str, port: u16) -> Result<Vec<std::net::SocketAddr>, FlagError> {
    let bad = |why: String| {
        FlagError::usage(format!(
            "--connect-to {to}: {why}; write HOST[:PORT], e.g. 127.0.0.1:8080 or [::1]:8080"
        ))
    };
    let (host, p) = match to.strip_prefix('[') {
        Some(v6) => {
            let (h, rest) = v6
                .split_once(']')
                .ok_or_else(|| bad("no closing ]".into()))?;
            (h, rest.strip_prefix(':'))
        }
        None => match to.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') => (h, Some(p)),
            _ => (to, None),
        },
    };
    let port = match p {
        Some(p) => p
            .parse::<u16>()
            .map_err(|_| bad(format!("{p:?} is not a port")))?,
        None => port,
    };
    let addrs: Vec<_> = std::net::ToSocketAddrs::to_socket_addrs(&(host, port))
        .map_err(|e| FlagError::fail(format!("--connect-to {to}: {e}")))?
        .collect();
    if addrs.is_empty() {
        return Err(FlagError::fail(format!("--connect-to {to}: no address")));
    }
    Ok(addrs)
}

/// A `HOST:PORT:TARGET_HOST:TARGET_PORT` mapping (oha's and vegeta's `connect-to`):
/// when the URL's host and port are the first pair, the run connects to the second,
/// the URL unchanged; otherwise the mapping changes nothing, said on standard error.
pub fn connect_mapped(
    tool: &str,
    flag: &str,
    to: &str,
    target: &mut Target,
) -> Result<(), FlagError> {
    let bad = || {
        FlagError::usage(format!(
            "{flag} {to}: write HOST:PORT:TARGET_HOST:TARGET_PORT, e.g. example.org:443:127.0.0.1:8443"
        ))
    };
    let ((host, port), (th, tp)) = split_pair(to).ok_or_else(bad)?;
    let port: u16 = port.parse().map_err(|_| bad())?;
    let same_host = host.trim_matches(['[', ']']) == target.host.trim_matches(['[', ']']);
    if same_host && port == target.port {
        let addr = if th.contains(':') && !th.starts_with('[') {
            format!("[{th}]:{tp}")
        } else {
            format!("{th}:{tp}")
        };
        target.address = stampede_engine::target::Address::Tcp(connect_to(&addr, target.port)?);
    } else {
        eprintln!(
            "stampede {tool}: {flag} {to}: the URL is {}:{}, so it changes nothing",
            target.host, target.port
        );
    }
    Ok(())
}

/// A host and a port, as written.
type HostPort<'a> = (&'a str, &'a str);

/// `a:1:b:2` as ((a, 1), (b, 2)); hosts may be bracketed IPv6 addresses.
pub fn split_pair(s: &str) -> Option<(HostPort<'_>, HostPort<'_>)> {
    fn host_port(s: &str) -> Option<((&str, &str), &str)> {
        let (host, rest) = match s.strip_prefix('[') {
            Some(v6) => {
                let end = v6.find(']')?;
                (&s[..end + 2], &v6[end + 1..])
            }
            None => {
                let i = s.find(':')?;
                (&s[..i], &s[i..])
            }
        };
        let rest = rest.strip_prefix(':')?;
        let (port, tail) = rest.split_once(':').unwrap_or((rest, ""));
        Some(((host, port), tail))
    }
    let (from, rest) = host_port(s)?;
    let (dest, tail) = host_port(rest)?;
    (tail.is_empty() && !from.0.is_empty() && !dest.0.is_empty()).then_some((from, dest))
}

/// Reads a body file (at most 256 MiB: `/dev/zero` or a wrong path must not eat the
/// memory), naming it in the error.
pub fn read_body(path: &str) -> Result<Vec<u8>, FlagError> {
    stampede_engine::input::read(path, "body file", stampede_engine::input::Input::Body)
        .map_err(|e| FlagError::usage(e.to_string()))
}

/// Refuses `path` (given with `flag`) when it cannot be written: its directory is
/// missing or closed, or it is a directory. A file the check creates is removed, so
/// a run that then fails leaves nothing behind.
pub fn check_writable(flag: &str, path: &str) -> Result<(), FlagError> {
    if path == "-" {
        return Ok(());
    }
    let existed = std::fs::symlink_metadata(path).is_ok();
    match std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
    {
        Ok(_) => {
            if !existed {
                let _ = std::fs::remove_file(path);
            }
            Ok(())
        }
        Err(e) => Err(FlagError::usage(format!(
            "{flag} {path}: cannot be written ({e}); nothing was run"
        ))),
    }
}

/// A finished run's files, written one by one: one that fails is named on standard
/// A dialect's machine-readable result, beside the tool's own report.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ResultFile {
    /// Also write the result as stampede's JSON (what `stampede merge` reads); `-`
    /// writes it to standard output and the dialect's report to standard error
    #[arg(long = "json", value_name = "FILE")]
    pub json: Option<String>,
}

impl ResultFile {
    /// Refuses, before the run, a `--json` path that cannot be written.
    pub fn check_path(&self) -> Result<(), FlagError> {
        match &self.json {
            Some(p) => check_writable("--json", p),
            None => Ok(()),
        }
    }
}

/// flags; the dialects map their own spellings onto the same spec fields).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct NetArgs {
    /// Send every request through this HTTP proxy: `http://[user:password@]host[:port]`
    /// (port 1080 when none); plain-http requests are forwarded, https is tunnelled
    /// with CONNECT (-x as curl and oha)
    #[arg(short = 'x', long = "proxy", value_name = "URL")]
    pub proxy: Option<String>,
    /// Credentials for the proxy, user:password (HTTP Basic; curl's --proxy-user)
    #[arg(long = "proxy-user", value_name = "USER:PASSWORD", requires = "proxy")]
    pub proxy_user: Option<String>,
    /// Connect from this local address (one of this machine's; any free port), or
    /// from several in turn: a list 'IP,IP', a range 'IP-IP', or the flag repeated.
    /// Runs of more than 10,000 connections to a 127.x server spread over 127.0.0.1,
    /// 127.0.0.2, … by themselves
    #[arg(long = "local-address", value_name = "IP[-IP][,…]", value_parser = parse_local, action = clap::ArgAction::Append)]
    pub local_address: Vec<LocalAddresses>,
    /// Each socket's send buffer, in bytes (SO_SNDBUF; the kernel's size by default)
    #[arg(long = "send-buffer", value_name = "BYTES")]
    pub send_buffer: Option<usize>,
    /// Each socket's receive buffer, in bytes (SO_RCVBUF, set before connecting so
    /// TCP's window follows it)
    #[arg(long = "recv-buffer", value_name = "BYTES")]
    pub recv_buffer: Option<usize>,
    /// How connections talk to the kernel: io_uring (a wake-up's sends and receives
    /// in one system call), epoll, or auto: io_uring where the kernel allows it and
    /// the connections are TCP (plain or TLS) or Unix sockets, epoll otherwise (the
    /// choice is in the result and -v; STAMPEDE_IO sets auto's)
    #[arg(long = "io", value_name = "auto|epoll|io_uring", value_parser = parse_io)]
    pub io: Option<stampede_engine::net::IoBackend>,
}

/// `--io`'s value.
pub fn parse_io(
    s: &str,
) -> Result<stampede_engine::net::IoBackend, stampede_engine::net::RingError> {
    s.parse()
}

impl NetArgs {
    /// Sets the spec's proxy and socket options from the flags.
    pub fn apply(&self, spec: &mut LoadSpec) -> Result<(), FlagError> {
        if !self.local_address.is_empty() {
            let all: Vec<std::net::IpAddr> = (self.local_address.iter())
                .flat_map(|l| l.0.iter().copied())
                .collect();
            if all.len() > stampede_engine::net::MAX_LOCAL {
                return Err(FlagError::usage(format!(
                    "--local-address: {} addresses; a run connects from at most {}",
                    all.len(),
                    stampede_engine::net::MAX_LOCAL
                )));
            }
            spec.load.socket.local = all;
        }
        spec.load.socket.send_buffer = self.send_buffer.or(spec.load.socket.send_buffer);
        spec.load.socket.recv_buffer = self.recv_buffer.or(spec.load.socket.recv_buffer);
        spec.load.socket.io = self.io.unwrap_or(spec.load.socket.io);
        check_socket(spec, "--local-address")?;
        if let Some(url) = &self.proxy {
            spec.proxy = Some(proxy(url, self.proxy_user.as_deref(), "--proxy")?);
        }
        Ok(())
    }
}

/// `--local-address`'s value: the addresses it names, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalAddresses(pub Vec<std::net::IpAddr>);

/// Parses `IP`, `IP-IP` (every address from the first to the last, one family) and
/// lists of them joined with commas, at most [`stampede_engine::net::MAX_LOCAL`]
/// addresses, counted before any is made.
pub fn parse_local(s: &str) -> Result<LocalAddresses, crate::BadValue> {
    use std::net::IpAddr;
    let max = stampede_engine::net::MAX_LOCAL as u128;
    let ip = |t: &str| -> Result<IpAddr, crate::BadValue> {
        t.trim().parse().map_err(|_| {
            format!(
                "'{}' is not an IP address (e.g. 127.0.0.2 or ::1)",
                t.trim()
            )
            .into()
        })
    };
    let mut out = Vec::new();
    for part in s.split(',') {
        let Some((a, b)) = part.split_once('-') else {
            out.push(ip(part)?);
            continue;
        };
        let (from, to) = match (ip(a)?, ip(b)?) {
            (IpAddr::V4(x), IpAddr::V4(y)) => (u128::from(u32::from(x)), u128::from(u32::from(y))),
            (IpAddr::V6(x), IpAddr::V6(y)) => (u128::from(x), u128::from(y)),
            _ => {
                return Err(crate::BadValue(format!(
                    "'{part}': a range's ends are of one family"
                )))
            }
        };
        if to < from {
            return Err(crate::BadValue(format!(
                "'{part}': a range goes from the lower address up"
            )));
        }
        if to - from + 1 + out.len() as u128 > max {
            return Err(crate::BadValue(format!(
                "'{part}': more than {max} addresses"
            )));
        }
        let v4 = a.trim().parse::<std::net::Ipv4Addr>().is_ok();
        out.extend((from..=to).map(|n| match v4 {
            true => IpAddr::V4(std::net::Ipv4Addr::from(n as u32)),
            false => IpAddr::V6(std::net::Ipv6Addr::from(n)),
        }));
    }
    if out.len() as u128 > max {
        return Err(crate::BadValue(format!("more than {max} addresses")));
    }
    Ok(LocalAddresses(out))
}

/// The proxy at `url` with `credentials` (user:password), or a usage error naming
/// `flag`.
pub fn proxy(
    url: &str,
    credentials: Option<&str>,
    flag: &str,
) -> Result<stampede_engine::net::Proxy, FlagError> {
    let p = stampede_engine::net::Proxy::parse(url).map_err(|e| match e {
        stampede_engine::SpecError::Resolve { .. } => FlagError::fail(format!("{flag}: {e}")),
        _ => FlagError::usage(format!("{flag}: {e}")),
    })?;
    Ok(match credentials {
        Some(c) => p.with_credentials(c),
        None => p,
    })
}

/// Checks the spec's socket options now, naming `flag` (the local address's) when the
/// address is not one of this machine's.
pub fn check_socket(spec: &LoadSpec, flag: &str) -> Result<(), FlagError> {
    spec.load.socket.check().map_err(|e| match e {
        SocketError::LocalAddress { ip, .. } => FlagError::usage(format!("{flag} {ip}: {e}")),
        _ => FlagError::usage(e.to_string()),
    })
}

/// Running one share of a run that several processes carry out together.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct SegmentArgs {
    /// Run segment K of N of the whole run: connections, counts and arrivals split
    /// exactly; merge the N results with `stampede merge`. `env:NAME/N` takes K from
    /// the 0-based index in $NAME (Kubernetes' JOB_COMPLETION_INDEX)
    #[arg(long = "segment", value_name = "K/N")]
    pub segment: Option<String>,
    /// Start the schedule at this wall-clock instant, the same for every segment:
    /// RFC 3339 (2026-11-23T09:30:00Z) or Unix seconds (1795426200.5)
    #[arg(long = "start-at", value_name = "TIME")]
    pub start_at: Option<String>,
    /// Refuse a --start-at that has passed, instead of starting at once and counting
    /// the arrivals due since as send lag
    #[arg(long = "start-strict")]
    pub start_strict: bool,
    /// Run as one of a fleet's segments for `stampede ssh`: say ready on standard
    /// output and wait for the start on standard input, send each second's figures
    /// ahead of the result, stop when told
    #[arg(long = "fleet", hide = true, conflicts_with = "start_at")]
    pub fleet: bool,
    /// Run as one of a fleet's segments for `stampede collect` at HOST:PORT: join it
    /// with the run's token ($STAMPEDE_FLEET_TOKEN) and this --segment, start when it
    /// says, send each second's figures and the result to it, stop when told
    #[arg(
        long = "fleet-connect",
        value_name = "HOST:PORT",
        conflicts_with_all = ["start_at", "fleet"],
        requires = "segment"
    )]
    pub fleet_connect: Option<String>,
}

impl SegmentArgs {
    /// Whether this process is one of a fleet's segments (over ssh or a socket).
    pub fn in_fleet(&self) -> bool {
        self.fleet || self.fleet_connect.is_some()
    }

    /// Sets the spec's segment and shared start; a start that has passed is said on
    /// stderr (or refused with --start-strict).
    pub fn apply(&self, spec: &mut LoadSpec) -> Result<(), FlagError> {
        if let Some(s) = &self.segment {
            spec.segment =
                segment_arg(s).map_err(|e| FlagError::usage(format!("--segment: {e}")))?;
        }
        let Some(at) = &self.start_at else {
            if self.start_strict {
                return Err(FlagError::usage("--start-strict needs --start-at TIME"));
            }
            return Ok(());
        };
        let at = start_time(at)?;
        if let Ok(ago) = std::time::SystemTime::now().duration_since(at) {
            let ago = ago.as_secs_f64();
            if self.start_strict {
                return Err(FlagError::usage(format!(
                    "--start-at: that instant passed {ago:.3} s ago (--start-strict refuses a late start)"
                )));
            }
            eprintln!(
                "stampede: --start-at passed {ago:.3} s ago; starting at once, the arrivals due since count as send lag"
            );
        }
        spec.start_at = Some(at);
        Ok(())
    }
}

/// `--segment`'s value: `K/N`, or `env:NAME/N` where the environment variable NAME
/// holds the 0-based index (Kubernetes' `JOB_COMPLETION_INDEX`), so K is it plus one.
fn segment_arg(s: &str) -> Result<stampede_engine::Segment, crate::BadValue> {
    let Some(rest) = s.trim().strip_prefix("env:") else {
        return s
            .parse()
            .map_err(|e: stampede_engine::SyntaxError| e.0.into());
    };
    let (var, n) = rest
        .split_once('/')
        .ok_or_else(|| format!("{s:?} is not env:NAME/N"))?;
    let value = std::env::var(var).map_err(|_| format!("{s:?}: ${var} is not set"))?;
    let index: u32 = value
        .trim()
        .parse()
        .map_err(|_| format!("{s:?}: ${var} is {value:?}, not a 0-based index"))?;
    format!("{}/{n}", index + 1)
        .parse()
        .map_err(|e: stampede_engine::SyntaxError| format!("{s:?} (${var}={value}): {e}").into())
}

/// `--start-at`'s value: RFC 3339, or Unix seconds with an optional fraction.
fn start_time(s: &str) -> Result<std::time::SystemTime, FlagError> {
    let secs = match s.trim().parse::<f64>() {
        Ok(v) => Some(v),
        Err(_) => stampede_wire::date::rfc3339(s),
    }
    .filter(|v| v.is_finite() && *v >= 0.0)
    .ok_or_else(|| {
        FlagError::usage(format!(
            "--start-at: {s:?} is not a time; use RFC 3339 (2026-11-23T09:30:00Z, or with an offset like +01:00) or Unix seconds (1795426200.5)"
        ))
    })?;
    Ok(std::time::UNIX_EPOCH + std::time::Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics() {
        assert_eq!(parse_metric("1k").unwrap(), 1000);
        assert_eq!(parse_metric("2M").unwrap(), 2_000_000);
        assert_eq!(parse_metric("64").unwrap(), 64);
        assert!(parse_metric("x").is_err());
    }
}

/// `--server-metrics URL`: the server's own Prometheus endpoint, scraped during the
/// run (any command that runs load against a serving engine).
#[derive(clap::Args, Debug, Clone)]
pub struct ServerMetricsArgs {
    /// Scrape the server's Prometheus endpoint during the run (vLLM's, SGLang's or
    /// TGI's /metrics): its queue, batch and cache beside the client's figures, in
    /// the report, the JSON result and the limit's verdict
    #[arg(
        help_heading = "The server's metrics",
        long = "server-metrics",
        value_name = "URL"
    )]
    pub server_metrics: Option<String>,
    /// Keep this series too, by its metric name (repeatable)
    #[arg(
        help_heading = "The server's metrics",
        long = "server-metric",
        value_name = "NAME",
        requires = "server_metrics"
    )]
    pub server_metric: Vec<String>,
    /// How often to scrape, 100ms to 60s
    #[arg(help_heading = "The server's metrics", long = "server-metrics-every", value_name = "T", default_value = "1s", value_parser = positive_duration)]
    pub server_metrics_every: std::time::Duration,
}

/// What [`ServerMetricsArgs`] ask to scrape: the URL, the interval, the series
/// asked for besides the known ones.
pub type Scrape = (String, std::time::Duration, Vec<String>);

impl ServerMetricsArgs {
    /// The scrape asked for, checked: an http(s) URL, an interval of 100 ms to 60 s,
    /// at most 64 names of at most 200 bytes.
    pub fn scrape(&self) -> Result<Option<Scrape>, FlagError> {
        let Some(url) = &self.server_metrics else {
            return Ok(None);
        };
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(FlagError::usage(format!(
                "--server-metrics {url}: an http:// or https:// URL, e.g. http://127.0.0.1:8000/metrics"
            )));
        }
        let every = self.server_metrics_every;
        if every < std::time::Duration::from_millis(100)
            || every > std::time::Duration::from_secs(60)
        {
            return Err(FlagError::usage(format!(
                "--server-metrics-every {every:?}: 100ms to 60s"
            )));
        }
        if self.server_metric.len() > 64
            || self
                .server_metric
                .iter()
                .any(|n| n.is_empty() || n.len() > 200)
        {
            return Err(FlagError::usage(
                "--server-metric: at most 64 names, each of 1 to 200 bytes",
            ));
        }
        Ok(Some((url.clone(), every, self.server_metric.clone())))
    }
}
