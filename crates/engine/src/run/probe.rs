//! Whether a target answers before a run starts: a connection (and, for h2c, HTTP/2's
//! preface and SETTINGS exchanged), so that an unreachable target is named at once
//! rather than as a run of connect errors.

use std::time::Duration;

use crate::{Address, LoadSpec};

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

/// Opens one connection as the spec's connections will (from its local address,
/// through its proxy, with a TLS handshake for https) and closes it: tells
/// "unreachable", "slow", "the proxy refused" and "refuses our TLS" apart before a run.
pub fn probe(spec: &LoadSpec) -> std::io::Result<()> {
    let (target, tls, timeout) = (&spec.target, spec.tls.as_ref(), spec.load.connect_timeout);
    let addrs = match (&spec.proxy, &target.address) {
        (Some(p), Address::Tcp(_)) => &p.address,
        (_, Address::Tcp(a)) => a,
        (_, Address::Unix(p)) => {
            return std::os::unix::net::UnixStream::connect(p).map(|_| ());
        }
    };
    let mut last = None;
    for a in addrs {
        match crate::net::connect_blocking(*a, &spec.load.socket, timeout) {
            Ok(mut s) => {
                s.set_read_timeout(Some(timeout))?;
                s.set_write_timeout(Some(timeout))?;
                if let (Some(p), true) = (&spec.proxy, target.tls) {
                    crate::net::tunnel_blocking(&mut s, p, target)?;
                }
                if spec.load.http2 && tls.is_none() {
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
