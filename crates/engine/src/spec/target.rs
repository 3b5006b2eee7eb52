//! Where the load goes: URL parsing and address resolution.
//!
//! A [`Target`] is resolved once, before the run, so workers never touch DNS. The URL
//! forms accepted: `http://host[:port]/path` and `https://host[:port]/path` (IPv4, IPv6
//! in brackets, or a name), `ws://` and `wss://` (WebSocket: the same over an upgraded
//! connection), `http+unix://<percent-encoded socket path>/path`, and an
//! `http://` or `https://` URL combined with [`Target::with_unix_socket`] (curl's
//! `--unix-socket`).

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

use crate::error::SpecError;

/// The transport address of a target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Address {
    /// TCP, with every resolved address; the first is used.
    Tcp(Vec<SocketAddr>),
    /// A Unix domain stream socket.
    Unix(PathBuf),
}

/// A resolved HTTP target: where to connect and what to put in the request line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Where to connect.
    pub address: Address,
    /// The host name as written in the URL (without brackets for IPv6).
    pub host: String,
    /// The port (80, or 443 for https, when the URL gives none).
    pub port: u16,
    /// Whether the URL is https: connections speak TLS, with `host` as the server name.
    pub tls: bool,
    /// The value of the Host header: `host` or `host:port` as written in the URL.
    pub authority: String,
    /// Path and query, always starting with `/`.
    pub path: String,
    /// The URL as given, its scheme in lower case and any credentials left out (so
    /// that reports never print a password).
    pub url: String,
    /// `user:password` from the URL (`http://user:pw@host/`), percent-decoded: sent
    /// as HTTP Basic authentication, as curl and vegeta send it.
    pub userinfo: Option<String>,
    /// The URL is `ws://` or `wss://`: each connection is upgraded to WebSocket.
    pub websocket: bool,
}

impl Target {
    /// Parses and resolves an `http://`, `https://`, `ws://`, `wss://` or
    /// `http+unix://` URL.
    pub fn parse(url: &str) -> Result<Target, SpecError> {
        Target::parse_at(url, None)
    }

    /// Parses a URL for its host, port and path, connecting to `address` when given
    /// (a Unix socket, curl's `--unix-socket`; another host, h2load's `--connect-to`):
    /// the URL's host is then not looked up. An empty TCP list is filled by the
    /// caller.
    pub fn parse_at(url: &str, address: Option<Address>) -> Result<Target, SpecError> {
        let err = |reason: &str| SpecError::Url {
            url: url.to_string(),
            reason: reason.to_string(),
        };
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| err("expected a scheme, as in http://127.0.0.1:8080/path"))?;
        let (unix, tls, websocket) = match scheme.to_ascii_lowercase().as_str() {
            "http" => (false, false, false),
            "https" => (false, true, false),
            "ws" => (false, false, true),
            "wss" => (false, true, true),
            "http+unix" | "unix" => (true, false, false),
            _ => {
                return Err(err(
                    "the scheme must be http://, https://, ws://, wss:// or http+unix://",
                ))
            }
        };
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], rest[i..].to_string()),
            Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
            None => (rest, "/".to_string()),
        };
        let path = match path.find('#') {
            Some(i) => path[..i].to_string(),
            None => path,
        };
        // Credentials before the host: kept apart, and out of the URL reports show.
        let (userinfo, authority) = match authority.rsplit_once('@') {
            Some((u, a)) => (
                Some(
                    percent_decode(u)
                        .ok_or_else(|| err("bad percent-encoding in user:password"))?,
                ),
                a,
            ),
            None => (None, authority),
        };
        if authority.is_empty() {
            return Err(err("the host is missing"));
        }
        let shown = format!(
            "{}://{authority}{}",
            scheme.to_ascii_lowercase(),
            &rest[rest.find(['/', '?']).unwrap_or(rest.len())..]
        );
        if unix {
            let socket = percent_decode(authority)
                .ok_or_else(|| err("bad percent-encoding in the socket path"))?;
            return Ok(Target {
                address: Address::Unix(PathBuf::from(socket)),
                host: "localhost".into(),
                port: 80,
                tls: false,
                authority: "localhost".into(),
                path,
                url: shown,
                userinfo,
                websocket,
            });
        }
        let (host, port) = split_host_port(authority, if tls { 443 } else { 80 }, &err)?;
        let address = match address {
            Some(a) => a,
            None => {
                let addrs: Vec<SocketAddr> = (host.as_str(), port)
                    .to_socket_addrs()
                    .map_err(|e| SpecError::Resolve {
                        host: host.clone(),
                        reason: e.to_string(),
                    })?
                    .collect();
                if addrs.is_empty() {
                    return Err(SpecError::Resolve {
                        host,
                        reason: "no addresses".into(),
                    });
                }
                Address::Tcp(addrs)
            }
        };
        Ok(Target {
            address,
            host,
            port,
            tls,
            authority: authority.to_string(),
            path,
            url: shown,
            userinfo,
            websocket,
        })
    }

    /// Keeps the URL's host, port and path for the request but connects to a Unix socket.
    pub fn with_unix_socket(mut self, path: impl Into<PathBuf>) -> Target {
        self.address = Address::Unix(path.into());
        self
    }

    /// The scheme requests carry (HTTP/2's `:scheme`): `https` over TLS, else `http`.
    pub fn scheme(&self) -> &'static str {
        if self.tls {
            "https"
        } else {
            "http"
        }
    }

    /// A short description of the address for messages.
    pub fn describe_address(&self) -> String {
        match &self.address {
            Address::Tcp(a) => a[0].to_string(),
            Address::Unix(p) => format!("unix:{}", p.display()),
        }
    }
}

/// The host and port of a URL's authority; `err` makes the URL's error of a reason.
fn split_host_port(
    authority: &str,
    default_port: u16,
    err: &dyn Fn(&str) -> SpecError,
) -> Result<(String, u16), SpecError> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let end = rest
            .find(']')
            .ok_or_else(|| err("an IPv6 address must be closed with ]"))?;
        let host = &rest[..end];
        let after = &rest[end + 1..];
        let port = match after.strip_prefix(':') {
            Some(p) => Some(p),
            None if after.is_empty() => None,
            None => return Err(err("unexpected text after the IPv6 address")),
        };
        (host.to_string(), port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (authority.to_string(), None),
        }
    };
    let port = match port {
        None => default_port,
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|&p| p != 0)
            .ok_or_else(|| err(&format!("the port {p:?} is not a number from 1 to 65535")))?,
    };
    if host.is_empty() {
        return Err(err("the host is missing"));
    }
    Ok((host, port))
}

fn percent_decode(s: &str) -> Option<String> {
    String::from_utf8(stampede_wire::percent::decode(s.as_bytes())?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ipv4_with_port_and_query() {
        let t = Target::parse("http://127.0.0.1:8080/quacker?i=abc").unwrap();
        assert_eq!(t.port, 8080);
        assert_eq!(t.host, "127.0.0.1");
        assert_eq!(t.authority, "127.0.0.1:8080");
        assert_eq!(t.path, "/quacker?i=abc");
        assert_eq!(
            t.address,
            Address::Tcp(vec!["127.0.0.1:8080".parse().unwrap()])
        );
    }

    #[test]
    fn credentials_are_kept_apart_and_the_scheme_is_lowered() {
        let t = Target::parse("HTTP://us%40er:p%3Aw@127.0.0.1:8080/x?y=@").unwrap();
        assert_eq!(t.userinfo.as_deref(), Some("us@er:p:w"));
        assert_eq!(t.url, "http://127.0.0.1:8080/x?y=@");
        assert_eq!(
            (t.authority.as_str(), t.path.as_str()),
            ("127.0.0.1:8080", "/x?y=@")
        );
        assert!(Target::parse("http://u:p@/x").is_err(), "no host");
        assert!(Target::parse("http://u:%zz@127.0.0.1/").is_err());
        let plain = Target::parse("http://127.0.0.1/").unwrap();
        assert_eq!(plain.userinfo, None);
    }

    #[test]
    fn parses_ipv6_and_defaults() {
        let t = Target::parse("http://[::1]").unwrap();
        assert_eq!(t.port, 80);
        assert_eq!(t.path, "/");
        assert_eq!(t.host, "::1");
        let t = Target::parse("http://[::1]:9000?x=1").unwrap();
        assert_eq!(t.path, "/?x=1");
        assert_eq!(t.port, 9000);
    }

    #[test]
    fn https_defaults_to_443_and_tls() {
        let t = Target::parse("https://127.0.0.1/x").unwrap();
        assert!(t.tls);
        assert_eq!(t.port, 443);
        assert!(!Target::parse("http://127.0.0.1/").unwrap().tls);
    }

    #[test]
    fn websocket_urls_are_http_upgraded() {
        let t = Target::parse("WS://127.0.0.1/chat?room=1").unwrap();
        assert!(t.websocket && !t.tls);
        assert_eq!((t.port, t.path.as_str()), (80, "/chat?room=1"));
        assert_eq!(t.url, "ws://127.0.0.1/chat?room=1");
        let t = Target::parse("wss://127.0.0.1:8443/").unwrap();
        assert!(t.websocket && t.tls && t.port == 8443);
        assert!(!Target::parse("https://127.0.0.1/").unwrap().websocket);
    }

    #[test]
    fn parses_unix_socket_urls() {
        let t = Target::parse("http+unix://%2Ftmp%2Fs.sock/chat").unwrap();
        assert_eq!(t.address, Address::Unix("/tmp/s.sock".into()));
        assert_eq!(t.path, "/chat");
    }

    #[test]
    fn rejects_bad_urls_with_reasons() {
        for (url, needle) in [
            ("127.0.0.1:80/", "scheme"),
            ("ftp://x/", "scheme"),
            ("http://127.0.0.1:0/", "port"),
            ("http://127.0.0.1:99999/", "port"),
            ("http:///x", "host"),
        ] {
            let e = Target::parse(url).unwrap_err().to_string();
            assert!(e.contains(needle), "{url}: {e}");
        }
    }
}
