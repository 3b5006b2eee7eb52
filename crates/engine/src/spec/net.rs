//! How a connection's socket is made, beyond the target's address: the local address
//! it connects from (one of several in turn), its kernel buffers, how it closes ([`SocketOptions`]: ab's `-B`
//! and `-b`, httperf's buffers and `--close-with-reset`), and the HTTP proxy it goes
//! through ([`Proxy`]: ab's `-X`/`-P`, curl's and oha's `-x`).
//!
//! Through a proxy a plain-http request names its whole URL (`GET http://host/path`,
//! the absolute form of RFC 9112 3.2.2) and carries the proxy's credentials; an https
//! connection first asks the proxy for a tunnel (`CONNECT host:port`) and speaks TLS to
//! the server inside it once the proxy answers 2xx. Everything here happens once per
//! connection, never per request.

use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::time::Duration;

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use socket2::{Domain, Protocol, SockRef, Socket, Type};

use crate::error::{SocketError, SpecError, TranslateError};
use crate::spec::target::Target;

/// Options of every connection's socket; the defaults leave the kernel's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SocketOptions {
    /// Connect from these local addresses, each connection from the next in turn
    /// (any free port). One source address gives a server at most one connection per
    /// local port (~28,000 by Linux's default range, and the kernel's search for a
    /// free one slows past half of them): several spread the connections. A spec may
    /// give one address or a list.
    #[serde(
        default,
        deserialize_with = "one_or_many",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub local: Vec<IpAddr>,
    /// `SO_SNDBUF`, bytes (the kernel doubles it for its bookkeeping).
    pub send_buffer: Option<usize>,
    /// `SO_RCVBUF`, bytes; set before connecting, so the TCP window follows it.
    pub recv_buffer: Option<usize>,
    /// Close with a reset (RST, `SO_LINGER` 0) instead of FIN (httperf's
    /// `--close-with-reset`).
    pub reset_on_close: bool,
    /// Which of the kernel's interfaces carries the connections (`--io`).
    #[serde(default, skip_serializing_if = "IoBackend::is_auto")]
    pub io: IoBackend,
}

pub use stampede_ring::{IoBackend, RingError};

/// A spec's `local`: absent, null, one address, or a list of them.
fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<IpAddr>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Local {
        One(IpAddr),
        Many(Vec<IpAddr>),
    }
    Ok(match Option::<Local>::deserialize(d)? {
        None => Vec::new(),
        Some(Local::One(ip)) => vec![ip],
        Some(Local::Many(list)) => list,
    })
}

/// Connections from one source address to one server before a run to a loopback
/// server spreads its connections over several (see [`SocketOptions::spread`]):
/// well under the half of Linux's default port range where `connect()`'s search for
/// a free port starts to walk the used ones.
pub const PER_SOURCE: usize = 10_000;

/// The most local addresses a run connects from.
pub const MAX_LOCAL: usize = 256;

impl SocketOptions {
    /// The local address connection `n` (counted from 0) connects from, if any.
    pub fn local_for(&self, n: u64) -> Option<IpAddr> {
        match self.local.len() {
            0 => None,
            k => Some(self.local[(n % k as u64) as usize]),
        }
    }

    /// With no local address given, `connections` (at most, over the run) to a
    /// server at `to` (all IPv4 loopback) past [`PER_SOURCE`] come from 127.0.0.1, 127.0.0.2, … — one more
    /// source address per [`PER_SOURCE`] connections, every one of them this
    /// machine's (the whole of 127.0.0.0/8 is) — so that a run of tens of thousands
    /// of connections to one loopback server is not held back by the ports of one
    /// source. Anything else is left as it is.
    pub fn spread(&mut self, to: &[SocketAddr], connections: usize) {
        let loopback = !to.is_empty()
            && to.iter().all(|a| match a.ip() {
                IpAddr::V4(v4) => v4.is_loopback(),
                IpAddr::V6(_) => false,
            });
        if !self.local.is_empty() || !loopback || connections <= PER_SOURCE {
            return;
        }
        let k = connections.div_ceil(PER_SOURCE).min(MAX_LOCAL) as u32;
        self.local = (1..=k)
            .map(|i| IpAddr::V4(std::net::Ipv4Addr::from(0x7f00_0000 + i)))
            .collect();
    }

    /// True when nothing differs from the kernel's defaults.
    pub fn is_default(&self) -> bool {
        *self == SocketOptions::default()
    }

    /// Sets the options that apply to any connected or unconnected socket.
    pub(crate) fn apply(&self, s: SockRef<'_>) -> io::Result<()> {
        if let Some(n) = self.send_buffer {
            s.set_send_buffer_size(n)?;
        }
        if let Some(n) = self.recv_buffer {
            s.set_recv_buffer_size(n)?;
        }
        if self.reset_on_close {
            s.set_linger(Some(Duration::ZERO))?;
        }
        Ok(())
    }

    /// Checks that the local address is one of this machine's, by binding a socket to
    /// it (the kernel's answer, `EADDRNOTAVAIL`, names the problem).
    pub fn check(&self) -> Result<(), SocketError> {
        if self.local.len() > MAX_LOCAL {
            return Err(SocketError::TooManyLocal(self.local.len()));
        }
        for &ip in &self.local {
            let s = Socket::new(
                Domain::for_address(SocketAddr::new(ip, 0)),
                Type::STREAM,
                None,
            )
            .map_err(SocketError::Socket)?;
            s.bind(&SocketAddr::new(ip, 0).into())
                .map_err(|source| SocketError::LocalAddress { ip, source })?;
        }
        for (name, v) in [
            ("send buffer", self.send_buffer),
            ("receive buffer", self.recv_buffer),
        ] {
            if v == Some(0) {
                return Err(SocketError::ZeroBuffer(name));
            }
        }
        Ok(())
    }
}

/// A TCP socket for `to` with `opts` set and bound to the local address of
/// connection `n`, not yet connected.
fn tcp_socket(to: SocketAddr, opts: &SocketOptions, n: u64) -> io::Result<Socket> {
    let s = Socket::new(Domain::for_address(to), Type::STREAM, Some(Protocol::TCP))?;
    opts.apply(SockRef::from(&s))?;
    if let Some(ip) = opts.local_for(n) {
        // The port is chosen at connect(), unique for the whole address pair, rather
        // than at bind(), unique for the local address alone: a source address then
        // serves as many servers as it has ports each.
        no_port_at_bind(&s);
        s.bind(&SocketAddr::new(ip, 0).into())?;
    }
    Ok(s)
}

/// Sets `IP_BIND_ADDRESS_NO_PORT` (Linux 4.2 and later); where it is refused, bind()
/// picks the port as before.
fn no_port_at_bind(s: &Socket) {
    use std::os::fd::AsRawFd;
    let _ = switch_on(
        s.as_raw_fd(),
        libc::IPPROTO_IP,
        libc::IP_BIND_ADDRESS_NO_PORT,
    );
}

/// Turns on the socket option `name` of `level` (an int option) on `fd`, an open
/// socket; says whether the kernel took it.
pub(crate) fn switch_on(fd: std::os::fd::RawFd, level: libc::c_int, name: libc::c_int) -> bool {
    let on: libc::c_int = 1;
    // SAFETY: `fd` is a socket open for the call (the caller's); the option's value is
    // a c_int that outlives the call, and its size is passed with it.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    r == 0
}

/// A non-blocking TCP connect to `to` with `opts`, as connection `n` of its worker
/// (which picks its local address); the connect completes later (the socket turns
/// writable).
pub(crate) fn connect_tcp(
    to: SocketAddr,
    opts: &SocketOptions,
    n: u64,
) -> io::Result<mio::net::TcpStream> {
    if opts.is_default() {
        return mio::net::TcpStream::connect(to);
    }
    let s = tcp_socket(to, opts, n)?;
    s.set_nonblocking(true)?;
    s.set_cloexec(true)?;
    match s.connect(&to.into()) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(e),
    }
    Ok(mio::net::TcpStream::from_std(s.into()))
}

/// A blocking connect with `opts` (the probe before a run).
pub(crate) fn connect_blocking(
    to: SocketAddr,
    opts: &SocketOptions,
    timeout: Duration,
) -> io::Result<std::net::TcpStream> {
    let s = tcp_socket(to, opts, 0)?;
    s.connect_timeout(&to.into(), timeout)?;
    Ok(s.into())
}

/// Applies the options to a Unix socket after it connected (buffers and the reset).
pub(crate) fn apply_unix(s: &mio::net::UnixStream, opts: &SocketOptions) -> io::Result<()> {
    opts.apply(SockRef::from(s))
}

/// An HTTP proxy every connection goes through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proxy {
    /// `http://host:port` (without credentials), for messages and spec files.
    pub url: String,
    /// Where the proxy listens, resolved before the run; the first is used.
    pub address: Vec<SocketAddr>,
    /// The `Proxy-Authorization` value (HTTP Basic), when credentials were given.
    pub authorization: Option<String>,
}

/// The port of a proxy URL without one (curl's default).
pub const DEFAULT_PROXY_PORT: u16 = 1080;

impl Proxy {
    /// Parses and resolves `http://[user:password@]host[:port][/]`, or `host:port` as
    /// ab's `-X` writes it.
    pub fn parse(url: &str) -> Result<Proxy, SpecError> {
        let err = |reason: &str| SpecError::Url {
            url: url.to_string(),
            reason: reason.to_string(),
        };
        let rest = match url.split_once("://") {
            Some((s, r)) if s.eq_ignore_ascii_case("http") => r,
            Some(_) => {
                return Err(err(
                    "a proxy is spoken to in plain HTTP: http://host:port (https targets are tunnelled through it with CONNECT)",
                ))
            }
            None => url,
        };
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.contains(['/', '?', '#']) {
            return Err(err("a proxy URL has no path: http://host:port"));
        }
        let (credentials, authority) = match rest.rsplit_once('@') {
            Some((c, a)) => (Some(c), a),
            None => (None, rest),
        };
        let probe = format!("http://{authority}/");
        let t = Target::parse_at(&probe, Some(crate::spec::target::Address::Tcp(Vec::new())))
            .map_err(|e| match e {
                SpecError::Url { reason, .. } => err(&reason),
                e => e,
            })?;
        let port = if authority.ends_with(']') || !authority.contains(':') {
            DEFAULT_PROXY_PORT
        } else {
            t.port
        };
        let address: Vec<SocketAddr> = (t.host.as_str(), port)
            .to_socket_addrs()
            .map_err(|e| SpecError::Resolve {
                host: t.host.clone(),
                reason: e.to_string(),
            })?
            .collect();
        if address.is_empty() {
            return Err(SpecError::Resolve {
                host: t.host,
                reason: "no addresses".into(),
            });
        }
        let mut p = Proxy {
            url: format!("http://{}", host_port(&t.host, port)),
            address,
            authorization: None,
        };
        if let Some(c) = credentials {
            let c = stampede_wire::percent::decode(c.as_bytes())
                .and_then(|v| String::from_utf8(v).ok())
                .ok_or_else(|| err("bad percent-encoding in the credentials"))?;
            p = p.with_credentials(&c);
        }
        Ok(p)
    }

    /// Sends `user:password` to the proxy (HTTP Basic, ab's `-P`).
    pub fn with_credentials(mut self, user_password: &str) -> Proxy {
        let token = base64::engine::general_purpose::STANDARD.encode(user_password);
        self.authorization = Some(format!("Basic {token}"));
        self
    }

    /// The request that opens a tunnel to `target` (an https target).
    pub fn connect_request(&self, target: &Target) -> Vec<u8> {
        let to = host_port(&target.host, target.port);
        let mut r = format!("CONNECT {to} HTTP/1.1\r\nHost: {to}\r\n");
        if let Some(a) = &self.authorization {
            r += &format!("Proxy-Authorization: {a}\r\n");
        }
        r += "\r\n";
        r.into_bytes()
    }

    /// `request` as sent to the proxy for a plain-http `target`: its request-target
    /// in absolute form, and the proxy's credentials. A request already in absolute
    /// form, or already carrying credentials, keeps them (so this may be applied
    /// twice).
    pub fn forward_form(&self, target: &Target, request: &[u8]) -> Result<Vec<u8>, TranslateError> {
        let line_end = request
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or(TranslateError::Incomplete)?;
        let line = &request[..line_end];
        let sp = line
            .iter()
            .position(|&b| b == b' ')
            .ok_or_else(|| TranslateError::Malformed("its request line has no target".into()))?;
        let mut out = Vec::with_capacity(request.len() + 96);
        out.extend_from_slice(&line[..=sp]);
        if line.get(sp + 1) == Some(&b'/') {
            out.extend_from_slice(format!("http://{}", target.authority).as_bytes());
        }
        out.extend_from_slice(&line[sp + 1..]);
        out.extend_from_slice(b"\r\n");
        let head_end = request
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .ok_or(TranslateError::Incomplete)?;
        let fields = &request[line_end + 2..head_end + 2];
        out.extend_from_slice(fields);
        if let Some(a) = &self.authorization {
            let has = fields
                .split(|&b| b == b'\n')
                .any(|l| l.to_ascii_lowercase().starts_with(b"proxy-authorization:"));
            if !has {
                out.extend_from_slice(format!("Proxy-Authorization: {a}\r\n").as_bytes());
            }
        }
        out.extend_from_slice(&request[head_end + 2..]);
        Ok(out)
    }
}

/// `host:port`, with brackets around an IPv6 address.
fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// What the proxy answered to CONNECT, read so far.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum TunnelReply {
    /// The head is not complete yet.
    Partial,
    /// 2xx: the tunnel is open (and nothing came after the head).
    Open,
    /// Anything else: the proxy's status line, for the error.
    Refused(String),
}

/// Reads the proxy's answer to CONNECT from the bytes received so far.
pub(crate) fn tunnel_reply(bytes: &[u8]) -> TunnelReply {
    let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") else {
        return if bytes.len() > 16 * 1024 {
            TunnelReply::Refused("an answer to CONNECT longer than 16 KiB".into())
        } else {
            TunnelReply::Partial
        };
    };
    let line_end = bytes.windows(2).position(|w| w == b"\r\n").unwrap_or(end);
    // The proxy's words reach a terminal: its control characters (escape sequences)
    // are shown escaped, never sent to it.
    let line: String = String::from_utf8_lossy(&bytes[..line_end.min(512)])
        .chars()
        .flat_map(|c| {
            let shown: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            shown
        })
        .collect();
    let status = line
        .strip_prefix("HTTP/1.")
        .and_then(|r| r.get(2..5))
        .and_then(|s| s.parse::<u16>().ok());
    match status {
        Some(200..=299) if end + 4 == bytes.len() => TunnelReply::Open,
        Some(200..=299) => TunnelReply::Refused(format!(
            "{line}, then {} bytes before the client spoke",
            bytes.len() - end - 4
        )),
        _ => TunnelReply::Refused(line),
    }
}

/// Opens a tunnel on a blocking stream (the probe): writes CONNECT, reads the answer.
pub(crate) fn tunnel_blocking(
    s: &mut std::net::TcpStream,
    proxy: &Proxy,
    target: &Target,
) -> io::Result<()> {
    s.write_all(&proxy.connect_request(target))?;
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        // Nothing follows the answer until the client speaks TLS, so no read can take
        // bytes of the server's.
        let n = s.read(&mut buf)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the proxy closed the connection instead of answering CONNECT",
            ));
        }
        got.extend_from_slice(&buf[..n]);
        match tunnel_reply(&got) {
            TunnelReply::Partial => {}
            TunnelReply::Open => return Ok(()),
            TunnelReply::Refused(line) => {
                return Err(io::Error::other(format!(
                    "the proxy {} refused the tunnel to {}:{}: {line}",
                    proxy.url, target.host, target.port
                )))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_addresses_are_taken_in_turn_and_spread_for_many_loopback_connections() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let mut o = SocketOptions::default();
        assert_eq!(o.local_for(3), None);
        o.local = vec![ip("127.0.0.2"), ip("127.0.0.3")];
        let seq: Vec<_> = (0..4).map(|n| o.local_for(n).unwrap()).collect();
        assert_eq!(
            seq,
            [
                ip("127.0.0.2"),
                ip("127.0.0.3"),
                ip("127.0.0.2"),
                ip("127.0.0.3")
            ]
        );

        let lo: Vec<SocketAddr> = vec!["127.0.0.1:80".parse().unwrap()];
        let spread = |to: &[SocketAddr], n: usize| {
            let mut o = SocketOptions::default();
            o.spread(to, n);
            o.local
        };
        assert!(spread(&lo, PER_SOURCE).is_empty(), "one source is enough");
        assert_eq!(
            spread(&lo, 2 * PER_SOURCE + 1),
            [ip("127.0.0.1"), ip("127.0.0.2"), ip("127.0.0.3")]
        );
        assert_eq!(spread(&lo, 10_000_000).len(), MAX_LOCAL);
        let v6: Vec<SocketAddr> = vec!["[::1]:80".parse().unwrap()];
        assert!(spread(&v6, 50_000).is_empty(), "::1 has one address");
        let far: Vec<SocketAddr> = vec!["192.0.2.1:80".parse().unwrap()];
        assert!(
            spread(&far, 50_000).is_empty(),
            "only loopback sources are sure to exist"
        );
        // Addresses given are kept as they are.
        let mut o = SocketOptions {
            local: vec![ip("127.0.0.9")],
            ..Default::default()
        };
        o.spread(&lo, 50_000);
        assert_eq!(o.local, [ip("127.0.0.9")]);
    }

    #[test]
    fn a_spec_gives_one_local_address_or_a_list() {
        let read = |json: &str| serde_json::from_str::<SocketOptions>(json).unwrap().local;
        assert!(
            read(r#"{"send_buffer":null,"recv_buffer":null,"reset_on_close":false}"#).is_empty()
        );
        assert!(read(
            r#"{"local":null,"send_buffer":null,"recv_buffer":null,"reset_on_close":false}"#
        )
        .is_empty());
        let one = read(
            r#"{"local":"127.0.0.2","send_buffer":null,"recv_buffer":null,"reset_on_close":false}"#,
        );
        assert_eq!(one, ["127.0.0.2".parse::<IpAddr>().unwrap()]);
        let two = read(
            r#"{"local":["127.0.0.2","::1"],"send_buffer":null,"recv_buffer":null,"reset_on_close":false}"#,
        );
        assert_eq!(two.len(), 2);
        let o = SocketOptions {
            local: two,
            ..Default::default()
        };
        let back: SocketOptions =
            serde_json::from_str(&serde_json::to_string(&o).unwrap()).unwrap();
        assert_eq!(back, o);
        let many = SocketOptions {
            local: vec!["127.0.0.1".parse().unwrap(); MAX_LOCAL + 1],
            ..Default::default()
        };
        assert!(matches!(many.check(), Err(SocketError::TooManyLocal(257))));
    }

    #[test]
    fn proxy_urls_in_curls_and_abs_forms() {
        let p = Proxy::parse("http://127.0.0.1:3128").unwrap();
        assert_eq!(p.url, "http://127.0.0.1:3128");
        assert_eq!(p.address, ["127.0.0.1:3128".parse().unwrap()]);
        assert_eq!(p.authorization, None);
        let p = Proxy::parse("127.0.0.1:8888").unwrap();
        assert_eq!(p.address[0].port(), 8888);
        let p = Proxy::parse("http://127.0.0.1/").unwrap();
        assert_eq!(p.address[0].port(), DEFAULT_PROXY_PORT);
        let p = Proxy::parse("http://[::1]").unwrap();
        assert_eq!(p.url, "http://[::1]:1080");
        let p = Proxy::parse("http://al%40x:open%20sesame@127.0.0.1:1").unwrap();
        // base64("al@x:open sesame")
        assert_eq!(
            p.authorization.as_deref(),
            Some("Basic YWxAeDpvcGVuIHNlc2FtZQ==")
        );
        for (bad, needle) in [
            ("https://127.0.0.1:1", "plain HTTP"),
            ("http://127.0.0.1:1/x", "no path"),
            ("http://127.0.0.1:0", "port"),
        ] {
            let e = Proxy::parse(bad).unwrap_err().to_string();
            assert!(e.contains(needle), "{bad}: {e}");
        }
    }

    #[test]
    fn requests_through_a_proxy_name_their_url_and_credentials_once() {
        let target = Target::parse("http://127.0.0.1:9/a?b=1").unwrap();
        let p = Proxy::parse("http://u:p@127.0.0.1:1").unwrap();
        let r = b"GET /a?b=1 HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n";
        let once = p.forward_form(&target, r).unwrap();
        assert_eq!(
            once,
            b"GET http://127.0.0.1:9/a?b=1 HTTP/1.1\r\nHost: 127.0.0.1:9\r\nProxy-Authorization: Basic dTpw\r\n\r\n"
        );
        assert_eq!(p.forward_form(&target, &once).unwrap(), once);
        let post = b"POST / HTTP/1.0\r\nContent-Length: 2\r\n\r\nhi";
        let f = p.forward_form(&target, post).unwrap();
        assert!(f.starts_with(b"POST http://127.0.0.1:9/ HTTP/1.0\r\n"));
        assert!(f.ends_with(b"Basic dTpw\r\n\r\nhi"));
        let t6 = Target::parse("https://[::1]/x").unwrap();
        assert_eq!(
            p.connect_request(&t6),
            b"CONNECT [::1]:443 HTTP/1.1\r\nHost: [::1]:443\r\nProxy-Authorization: Basic dTpw\r\n\r\n"
        );
    }

    #[test]
    fn answers_to_connect() {
        assert_eq!(
            tunnel_reply(b"HTTP/1.1 200 Connection"),
            TunnelReply::Partial
        );
        assert_eq!(
            tunnel_reply(b"HTTP/1.1 200 Connection established\r\n\r\n"),
            TunnelReply::Open
        );
        assert_eq!(
            tunnel_reply(b"HTTP/1.0 407 Proxy Authentication Required\r\nX: y\r\n\r\n"),
            TunnelReply::Refused("HTTP/1.0 407 Proxy Authentication Required".into())
        );
        assert!(matches!(
            tunnel_reply(b"HTTP/1.1 200 OK\r\n\r\nxx"),
            TunnelReply::Refused(_)
        ));
        assert!(matches!(
            tunnel_reply(b"SSH-2.0\r\n\r\n"),
            TunnelReply::Refused(_)
        ));
        // Escape sequences in a refusal are shown, not sent to the terminal.
        assert_eq!(
            tunnel_reply(b"HTTP/1.1 403 \x1b[2J\x1b]0;owned\x07No\r\n\r\n"),
            TunnelReply::Refused("HTTP/1.1 403 \\u{1b}[2J\\u{1b}]0;owned\\u{7}No".into())
        );
    }
}
