//! Whether a target answers before a run starts: a connection (and, for h2c, HTTP/2's
//! preface and SETTINGS exchanged; for HTTP/3, QUIC's handshake), so that an
//! unreachable target is named at once rather than as a run of connect errors.

use std::time::Duration;

use crate::spec::config::Config;
use crate::Address;

/// Sends HTTP/2's connection preface and our SETTINGS; the server must answer with its
/// own SETTINGS, which the connection's state machine checks (an HTTP/1.x answer means
/// it does not speak h2c).
fn probe_h2c(mut s: std::net::TcpStream, timeout: Duration) -> std::io::Result<()> {
    use std::io::{Read, Write};
    s.set_read_timeout(Some(timeout))?;
    let mut conn = crate::h2::H2Conn::new();
    s.write_all(&conn.out)?;
    let (mut buf, mut events) = ([0u8; 512], Vec::new());
    while !conn.settled() {
        let n = s.read(&mut buf).map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("no answer to HTTP/2's connection preface: {e}"),
            )
        })?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the server closed the connection after HTTP/2's connection preface",
            ));
        }
        conn.feed(&buf[..n], &[], &mut events)
            .map_err(|e| match e {
                crate::h2::H2Error::Http1Answer => std::io::Error::other(format!(
                    "{e}; drop --http2, or use https:// so that ALPN can choose"
                )),
                crate::h2::H2Error::Protocol(_) => std::io::Error::other(e.to_string()),
            })?;
    }
    Ok(())
}

/// Makes one QUIC connection and its handshake, over a blocking UDP socket, within
/// `timeout`: a server without HTTP/3 there (nothing on UDP, or no answer) or one that
/// refuses the handshake is named before the run.
fn probe_h3(cfg: &Config, to: std::net::SocketAddr, timeout: Duration) -> std::io::Result<()> {
    use std::time::Instant;
    let (Some(h3), Some(tls)) = (&cfg.protocol.http3(), &cfg.net.tls) else {
        return Ok(());
    };
    let transport = h3.transport();
    let config =
        stampede_quic::client_config(tls, &transport, None).map_err(std::io::Error::other)?;
    let any: std::net::SocketAddr = match cfg.net.socket.local.first().copied() {
        Some(ip) => (ip, 0).into(),
        None if to.is_ipv4() => ([0, 0, 0, 0], 0).into(),
        None => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let socket = std::net::UdpSocket::bind(any)?;
    socket.connect(to)?;
    let start = Instant::now();
    let deadline = start + timeout;
    let mut conn = crate::h3::H3Conn::connect(
        stampede_quic::endpoint_config(&transport),
        config,
        to,
        &cfg.net.target.host,
        0,
        start,
    )
    .map_err(std::io::Error::other)?;
    let mut buf = vec![0u8; stampede_quic::MAX_DATAGRAM + 1];
    let mut events = Vec::new();
    let no_h3 = |why: &str| {
        std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!(
                "no HTTP/3 answer on UDP port {} ({why}); is HTTP/3 served there?",
                to.port()
            ),
        )
    };
    // An untrusted certificate is said as the TCP probe says it: with what to do.
    let untrusted = "QUIC's handshake failed: the server's certificate is not trusted (trust its CA with --cacert FILE, or skip verification with --insecure)";
    let broken = |k: crate::ErrorKind| match k {
        crate::ErrorKind::ConnectTimeout => no_h3("QUIC's handshake got no answer"),
        crate::ErrorKind::TlsCertificate => std::io::Error::other(untrusted),
        k => std::io::Error::other(format!("QUIC's handshake failed: {}", k.name())),
    };
    while !conn.connected() {
        let now = Instant::now();
        if now >= deadline {
            return Err(no_h3(&format!("nothing within {timeout:?}")));
        }
        conn.prepare(now);
        while !conn.unwritten().is_empty() {
            socket.send(conn.unwritten())?;
            let n = conn.unwritten().len();
            conn.wrote(n);
        }
        let wake = conn.next_timeout().unwrap_or(deadline).min(deadline);
        let wait = wake.saturating_duration_since(Instant::now());
        socket.set_read_timeout(Some(wait.max(Duration::from_millis(1))))?;
        match socket.recv(&mut buf) {
            Ok(n) => conn
                .feed(&buf[..n], Instant::now(), &mut events)
                .map_err(|b| broken(b.0))?,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                conn.timeout(Instant::now(), &mut events)
                    .map_err(|b| broken(b.0))?
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                return Err(no_h3("the port is closed to UDP"));
            }
            Err(e) => return Err(e),
        }
    }
    conn.close(Instant::now());
    let _ = socket.send(conn.unwritten());
    Ok(())
}

/// Opens one connection as the spec's connections will (from its local address,
/// through its proxy, with a TLS handshake for https) and closes it: tells
/// "unreachable", "slow", "the proxy refused" and "refuses our TLS" apart before a run.
pub fn probe(plan: &crate::Plan) -> std::io::Result<()> {
    let cfg = plan.config();
    let (target, tls, timeout) = (
        &cfg.net.target,
        cfg.net.tls.as_ref(),
        cfg.ends.connect_timeout,
    );
    let addrs = match (&cfg.net.proxy, &target.address) {
        (Some(p), Address::Tcp(_)) => &p.address,
        (_, Address::Tcp(a)) => a,
        (_, Address::Unix(p)) => {
            return std::os::unix::net::UnixStream::connect(p).map(|_| ());
        }
    };
    if cfg.protocol.http3().is_some() {
        return probe_h3(cfg, addrs[0], timeout);
    }
    let mut last = None;
    for a in addrs {
        match crate::net::connect_blocking(*a, &cfg.net.socket, timeout) {
            Ok(mut s) => {
                s.set_read_timeout(Some(timeout))?;
                s.set_write_timeout(Some(timeout))?;
                if let (Some(p), true) = (&cfg.net.proxy, target.tls) {
                    crate::net::tunnel_blocking(&mut s, p, target)?;
                }
                if cfg.protocol.over_http2().is_some() && tls.is_none() {
                    return probe_h2c(s, timeout);
                }
                if let Some(cfg) = tls {
                    let mut t = stampede_tls::TlsStream::client(s, cfg.clone(), &target.host)?;
                    t.handshake()?;
                    t.close_notify();
                }
                return Ok(());
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no address")))
}
