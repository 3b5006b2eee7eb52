//! The pushers' HTTP client: POSTs a body to one endpoint over HTTP/1.1, on one
//! connection kept open between pushes, over TLS for `https://` (the system's roots)
//! with the URL's user and password as Basic authentication. Every step has a
//! timeout and every answer a size limit, so a receiver that stalls or floods costs a
//! failed push, never a stuck or growing process.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use stampede_tls::rustls;

/// Connect, read and write timeout of one push.
pub const TIMEOUT: Duration = Duration::from_secs(5);

/// The most of an answer read: its head and body together.
const MAX_ANSWER: usize = 64 * 1024;

/// Why a push URL does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    #[error("{0:?}: the URL must start with http:// or https://")]
    Scheme(String),
    #[error("{0:?}: an IPv6 address needs its closing ]")]
    Ipv6(String),
    #[error("{url:?}: bad port {port:?}")]
    Port { url: String, port: String },
    #[error("{url:?}: unexpected {tail:?} after the address")]
    Trailing { url: String, tail: String },
    #[error("{0:?}: no host")]
    NoHost(String),
}

/// Why a push failed, in the words a report gives it.
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    /// The host name did not resolve.
    #[error("{host}: {source}")]
    Resolve {
        host: String,
        source: std::io::Error,
    },
    /// The host name resolved to nothing.
    #[error("{0}: no address")]
    NoAddress(String),
    /// A step of the exchange failed (`step` names it: an address, "sending", "reading
    /// the answer"); one the receiver did not let finish within [`TIMEOUT`] is named as
    /// a stall, where the system would say "Resource temporarily unavailable".
    #[error("{step}: {}", stalled_or(source))]
    Io {
        step: String,
        source: std::io::Error,
    },
    /// The socket's timeouts could not be set.
    #[error("{0}")]
    Socket(std::io::Error),
    /// TLS could not be set up for the host.
    #[error("{0}")]
    Tls(Box<dyn std::error::Error + Send + Sync>),
    /// The receiver answered with a status other than 2xx; `text` is the start of its
    /// body.
    #[error("HTTP {status}{}", if text.is_empty() { String::new() } else { format!(": {text}") })]
    Status { status: u16, text: String },
    #[error("the answer ended early")]
    EndedEarly,
    #[error("a malformed answer: {0}")]
    Malformed(httparse::Error),
    #[error("an answer's head over {MAX_ANSWER} bytes")]
    HeadTooLong,
    #[error("the connection closed without an answer")]
    Closed,
    /// A GET's answer was longer than asked for.
    #[error("an answer over {0} bytes")]
    TooLarge(usize),
}

/// An I/O error in words: a timeout is the receiver's stall.
fn stalled_or(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => format!(
            "the receiver did not answer within {} s (stalled)",
            TIMEOUT.as_secs()
        ),
        _ => e.to_string(),
    }
}

/// Where pushes go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub tls: bool,
    pub host: String,
    pub port: u16,
    /// Path and query, at least `/`.
    pub path: String,
    /// `Basic …` from the URL's user and password, if it had them.
    pub auth: Option<String>,
}

impl Endpoint {
    /// Parses `http[s]://[user:pass@]host[:port][/path][?query]`.
    pub fn parse(url: &str) -> Result<Endpoint, UrlError> {
        let (tls, rest) = if let Some(r) = url.strip_prefix("http://") {
            (false, r)
        } else if let Some(r) = url.strip_prefix("https://") {
            (true, r)
        } else {
            return Err(UrlError::Scheme(url.to_string()));
        };
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let path = if path.starts_with('?') {
            format!("/{path}")
        } else {
            path.to_string()
        };
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        let default = if tls { 443 } else { 80 };
        let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
            let (h, tail) = v6
                .split_once(']')
                .ok_or_else(|| UrlError::Ipv6(url.to_string()))?;
            let port = match tail.strip_prefix(':') {
                Some(p) => p.parse().map_err(|_| UrlError::Port {
                    url: url.to_string(),
                    port: p.to_string(),
                })?,
                None if tail.is_empty() => default,
                None => {
                    return Err(UrlError::Trailing {
                        url: url.to_string(),
                        tail: tail.to_string(),
                    })
                }
            };
            (h.to_string(), port)
        } else {
            match hostport.rsplit_once(':') {
                Some((h, p)) => (
                    h.to_string(),
                    p.parse().map_err(|_| UrlError::Port {
                        url: url.to_string(),
                        port: p.to_string(),
                    })?,
                ),
                None => (hostport.to_string(), default),
            }
        };
        if host.is_empty() {
            return Err(UrlError::NoHost(url.to_string()));
        }
        let auth = userinfo.map(|u| {
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(u.as_bytes())
            )
        });
        Ok(Endpoint {
            tls,
            host,
            port,
            path,
            auth,
        })
    }

    fn authority(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        match (self.tls, self.port) {
            (false, 80) | (true, 443) => host,
            _ => format!("{host}:{}", self.port),
        }
    }
}

trait Stream: Read + Write + Send {}
impl<T: Read + Write + Send> Stream for T {}

/// One endpoint's connection, opened when first needed and again after a failure.
pub struct Client {
    endpoint: Endpoint,
    conn: Option<Box<dyn Stream>>,
    tls: Option<Arc<rustls::ClientConfig>>,
    /// Connect, read and write timeout ([`TIMEOUT`] unless set).
    pub timeout: Duration,
}

impl Client {
    pub fn new(endpoint: Endpoint) -> Client {
        Client {
            endpoint,
            conn: None,
            tls: None,
            timeout: TIMEOUT,
        }
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    fn connect(&mut self) -> Result<Box<dyn Stream>, PushError> {
        let e = &self.endpoint;
        let addr = (e.host.as_str(), e.port)
            .to_socket_addrs()
            .map_err(|source| PushError::Resolve {
                host: e.host.clone(),
                source,
            })?
            .next()
            .ok_or_else(|| PushError::NoAddress(e.host.clone()))?;
        let tcp = TcpStream::connect_timeout(&addr, self.timeout)
            .map_err(|err| io_step(&addr.to_string(), err))?;
        let _ = tcp.set_nodelay(true);
        tcp.set_read_timeout(Some(self.timeout))
            .map_err(PushError::Socket)?;
        tcp.set_write_timeout(Some(self.timeout))
            .map_err(PushError::Socket)?;
        if !e.tls {
            return Ok(Box::new(tcp));
        }
        let config = match &self.tls {
            Some(c) => c.clone(),
            None => {
                let c = stampede_tls::client_config(&stampede_tls::ClientOptions {
                    alpn: vec![b"http/1.1".to_vec()],
                    ..Default::default()
                })
                .map_err(|e| PushError::Tls(e.into()))?;
                self.tls = Some(c.clone());
                c
            }
        };
        let name = rustls::pki_types::ServerName::try_from(e.host.clone()).map_err(|err| {
            PushError::Io {
                step: e.host.clone(),
                source: std::io::Error::new(std::io::ErrorKind::InvalidInput, err),
            }
        })?;
        let conn =
            rustls::ClientConnection::new(config, name).map_err(|e| PushError::Tls(e.into()))?;
        Ok(Box::new(rustls::StreamOwned::new(conn, tcp)))
    }

    /// POSTs `body` to `path`; `Ok` on a 2xx answer. A failure closes the connection,
    /// so the next push starts on a fresh one.
    pub fn post(
        &mut self,
        path: &str,
        content_type: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<(), PushError> {
        let result = self.try_post(path, content_type, headers, body);
        if !matches!(result, Ok(true)) {
            self.conn = None;
        }
        result.map(|_| ())
    }

    /// GETs the endpoint's path on a new connection (closed after): the body of a
    /// 2xx answer of at most `max` bytes, with a length or chunked, or until close.
    pub fn get(&mut self, max: usize) -> Result<Vec<u8>, PushError> {
        let mut conn = self.connect()?;
        let head = format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: stampede/{}\r\nAccept: text/plain\r\nConnection: close\r\n{}\r\n",
            self.endpoint.path,
            self.endpoint.authority(),
            env!("CARGO_PKG_VERSION"),
            self.endpoint
                .auth
                .as_ref()
                .map_or(String::new(), |a| format!("Authorization: {a}\r\n"))
        );
        conn.write_all(head.as_bytes())
            .and_then(|_| conn.flush())
            .map_err(|e| io_step("sending", e))?;
        let mut all = Vec::with_capacity(16 * 1024);
        let mut chunk = [0u8; 16 * 1024];
        loop {
            let n = conn
                .read(&mut chunk)
                .map_err(|e| io_step("reading the answer", e))?;
            if n == 0 {
                break;
            }
            all.extend_from_slice(&chunk[..n]);
            if all.len() > max + 16 * 1024 {
                return Err(PushError::TooLarge(max));
            }
        }
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut res = httparse::Response::new(&mut headers);
        let head_len = match res.parse(&all) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) if all.is_empty() => return Err(PushError::Closed),
            Ok(httparse::Status::Partial) => return Err(PushError::EndedEarly),
            Err(e) => return Err(PushError::Malformed(e)),
        };
        let status = res.code.unwrap_or(0);
        let chunked = res.headers.iter().any(|h| {
            h.name.eq_ignore_ascii_case("transfer-encoding")
                && String::from_utf8_lossy(h.value)
                    .to_ascii_lowercase()
                    .contains("chunked")
        });
        let raw = &all[head_len..];
        let body = if chunked {
            dechunk(raw).ok_or(PushError::EndedEarly)?
        } else {
            raw.to_vec()
        };
        if !(200..300).contains(&status) {
            let text: String = String::from_utf8_lossy(&body)
                .trim()
                .chars()
                .take(200)
                .collect();
            return Err(PushError::Status { status, text });
        }
        if body.len() > max {
            return Err(PushError::TooLarge(max));
        }
        Ok(body)
    }

    /// Returns whether the connection may be used again.
    fn try_post(
        &mut self,
        path: &str,
        content_type: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<bool, PushError> {
        let mut head = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nUser-Agent: stampede/{}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n",
            self.endpoint.authority(),
            env!("CARGO_PKG_VERSION"),
            body.len()
        );
        if let Some(a) = &self.endpoint.auth {
            head.push_str(&format!("Authorization: {a}\r\n"));
        }
        for (n, v) in headers {
            head.push_str(&format!("{n}: {v}\r\n"));
        }
        head.push_str("\r\n");
        let mut request = head.into_bytes();
        request.extend_from_slice(body);
        let mut conn = match self.conn.take() {
            Some(c) => c,
            None => self.connect()?,
        };
        if conn.write_all(&request).and_then(|_| conn.flush()).is_err() {
            // A kept connection the receiver closed meanwhile: once more, on a new one.
            conn = self.connect()?;
            conn.write_all(&request)
                .and_then(|_| conn.flush())
                .map_err(|e| io_step("sending", e))?;
        }
        let (status, reusable, text) = read_answer(&mut conn)?;
        if !(200..300).contains(&status) {
            let text = text.trim();
            let text: String = text.chars().take(200).collect();
            return Err(PushError::Status { status, text });
        }
        if reusable {
            self.conn = Some(conn);
        }
        Ok(reusable)
    }
}

/// A chunked body's data, or `None` where it ends before its last chunk.
fn dechunk(mut raw: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(raw.len());
    loop {
        let line = raw.windows(2).position(|w| w == b"\r\n")?;
        let size = std::str::from_utf8(&raw[..line]).ok()?;
        let size = usize::from_str_radix(size.split(';').next()?.trim(), 16).ok()?;
        raw = &raw[line + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(raw.get(..size)?);
        raw = raw.get(size + 2..)?;
    }
}

/// An I/O error of one step.
fn io_step(step: &str, source: std::io::Error) -> PushError {
    PushError::Io {
        step: step.to_string(),
        source,
    }
}

/// Reads one answer: its status, whether the connection can carry another request,
/// and its body as text (for an error's message).
fn read_answer(conn: &mut Box<dyn Stream>) -> Result<(u16, bool, String), PushError> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut res = httparse::Response::new(&mut headers);
        match res.parse(&buf) {
            Ok(httparse::Status::Complete(head_len)) => {
                let status = res.code.unwrap_or(0);
                let value = |name: &str| {
                    res.headers
                        .iter()
                        .find(|h| h.name.eq_ignore_ascii_case(name))
                        .map(|h| String::from_utf8_lossy(h.value).trim().to_ascii_lowercase())
                };
                let close = value("connection").is_some_and(|v| v == "close");
                let length = value("content-length").and_then(|v| v.parse::<usize>().ok());
                let no_body = status == 204 || status == 304 || (100..200).contains(&status);
                let length = match (no_body, length) {
                    (true, _) => 0,
                    (false, Some(n)) if n <= MAX_ANSWER => n,
                    (false, Some(n)) => {
                        return Ok((status, false, format!("({n} bytes of answer, not read)")))
                    }
                    // Chunked or until close: read what comes within the limit, then
                    // give the connection up.
                    (false, None) => {
                        let mut body = buf[head_len..].to_vec();
                        while body.len() < MAX_ANSWER {
                            match conn.read(&mut chunk) {
                                Ok(0) | Err(_) => break,
                                Ok(n) => body.extend_from_slice(&chunk[..n]),
                            }
                            if body.windows(5).any(|w| w == b"0\r\n\r\n") {
                                break;
                            }
                        }
                        return Ok((status, false, String::from_utf8_lossy(&body).into_owned()));
                    }
                };
                let mut body = buf[head_len..].to_vec();
                while body.len() < length {
                    let n = conn
                        .read(&mut chunk)
                        .map_err(|e| io_step("reading the answer", e))?;
                    if n == 0 {
                        return Err(PushError::EndedEarly);
                    }
                    body.extend_from_slice(&chunk[..n]);
                }
                return Ok((status, !close, String::from_utf8_lossy(&body).into_owned()));
            }
            Ok(httparse::Status::Partial) => {}
            Err(e) => return Err(PushError::Malformed(e)),
        }
        if buf.len() >= MAX_ANSWER {
            return Err(PushError::HeadTooLong);
        }
        let n = conn
            .read(&mut chunk)
            .map_err(|e| io_step("reading the answer", e))?;
        if n == 0 {
            return Err(PushError::Closed);
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunked_bodies_are_joined_and_a_cut_one_is_refused() {
        assert_eq!(
            dechunk(b"3\r\nabc\r\n2;x=1\r\nde\r\n0\r\n\r\n").unwrap(),
            b"abcde"
        );
        assert!(dechunk(b"5\r\nab").is_none());
    }

    #[test]
    fn endpoints_parse_with_their_defaults() {
        let e = Endpoint::parse("http://127.0.0.1:8086/k6").unwrap();
        assert_eq!(
            (e.tls, e.host.as_str(), e.port, e.path.as_str()),
            (false, "127.0.0.1", 8086, "/k6")
        );
        let e = Endpoint::parse("https://u:p@example.com?db=x").unwrap();
        assert_eq!((e.tls, e.port, e.path.as_str()), (true, 443, "/?db=x"));
        assert_eq!(e.auth.as_deref(), Some("Basic dTpw"));
        let e = Endpoint::parse("http://[::1]:9090/api/v1/write").unwrap();
        assert_eq!(
            (e.host.as_str(), e.port, e.authority()),
            ("::1", 9090, "[::1]:9090".into())
        );
        assert_eq!(
            Endpoint::parse("http://h:x/").unwrap_err().to_string(),
            r#""http://h:x/": bad port "x""#
        );
        assert!(Endpoint::parse("ftp://h/").is_err());
        assert_eq!(
            Endpoint::parse("http:///x").unwrap_err(),
            UrlError::NoHost("http:///x".into())
        );
    }

    #[test]
    fn a_refusing_receiver_is_an_error_with_its_answer() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut buf = [0u8; 4096];
            let mut got = Vec::new();
            while !got.windows(5).any(|w| w == b"hello") {
                let n = s.read(&mut buf).unwrap();
                assert!(n > 0);
                got.extend_from_slice(&buf[..n]);
            }
            s.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 12\r\n\r\nunknown db x")
                .unwrap();
            String::from_utf8(got).unwrap()
        });
        let mut c = Client::new(Endpoint::parse(&format!("http://127.0.0.1:{port}/w")).unwrap());
        let err = c
            .post("/w?db=x", "text/plain", &[("X-A", "1")], b"hello")
            .unwrap_err();
        assert_eq!(err.to_string(), "HTTP 400: unknown db x");
        let got = server.join().unwrap();
        assert!(got.starts_with("POST /w?db=x HTTP/1.1\r\n"), "{got}");
        assert!(
            got.contains("\r\nX-A: 1\r\n") && got.contains("Content-Length: 5\r\n"),
            "{got}"
        );
    }
}
