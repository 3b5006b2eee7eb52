//! Checking a target's answers before measuring them, TechEmpower-style.
//!
//! One request per scenario (two when the Date header must move) on a fresh connection
//! with `Connection: close`; the response is read whole and checked: status,
//! Content-Type, body (exact, contained, length, JSON key), the headers every server
//! should send (Server, Date, and a Content-Length or Transfer-Encoding), and that Date
//! is not frozen. A benchmark of error pages is caught here, before any load.
//!
//! A scenario measured over HTTP/2 is verified over HTTP/2: the same request goes out
//! on stream 1 of a fresh connection (h2c with prior knowledge, or TLS where ALPN may
//! still choose HTTP/1.1, as the load would), so a server that answers differently, or
//! not at all, over HTTP/2 is caught too.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use stampede_tls::rustls::ClientConfig;
use stampede_tls::TlsStream;

use serde::{Deserialize, Serialize};
use stampede_engine::h1::parse::ResponseParser;

use crate::plan::Verify;

/// A response read for verification.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// Status code.
    pub status: u16,
    /// Headers, in order.
    pub headers: Vec<(String, String)>,
    /// Body (chunked bodies decoded).
    pub body: Vec<u8>,
    /// Read over HTTP/2 (where END_STREAM, not a length, ends the body).
    pub http2: bool,
}

impl Fetched {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Where verification requests go.
#[derive(Clone)]
pub struct Endpoint {
    /// The server's address.
    pub addr: SocketAddr,
    /// For HTTPS: the client settings and the server name to ask for.
    pub tls: Option<(Arc<ClientConfig>, String)>,
    /// Ask over HTTP/2 (h2c, or ALPN `h2` first over TLS).
    pub http2: bool,
}

/// Why a fetch failed.
#[derive(Debug, Clone)]
pub struct FetchError {
    /// What happened, for people.
    pub message: String,
    /// A TLS failure (a refused certificate, no common protocol): trying again will
    /// not help, unlike a server that is not listening yet.
    pub tls: bool,
}

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl<S: Into<String>> From<S> for FetchError {
    fn from(message: S) -> FetchError {
        FetchError {
            message: message.into(),
            tls: false,
        }
    }
}

fn io_error(what: &str, e: std::io::Error) -> FetchError {
    let tls = stampede_tls::classify(&e).is_some();
    FetchError {
        message: if tls {
            format!("TLS: {e}")
        } else {
            format!("{what}: {e}")
        },
        tls,
    }
}

/// Sends `request` (which must ask for `Connection: close`) and reads the response.
pub fn fetch(ep: &Endpoint, request: &[u8], timeout: Duration) -> Result<Fetched, FetchError> {
    let addr = ep.addr;
    let s = TcpStream::connect_timeout(&addr, timeout)
        .map_err(|e| io_error(&format!("connect to {addr}"), e))?;
    s.set_read_timeout(Some(timeout)).ok();
    s.set_write_timeout(Some(timeout)).ok();
    match &ep.tls {
        None if ep.http2 => exchange_h2(s, request, "http"),
        None => exchange(s, request),
        Some((config, host)) => {
            let mut t = TlsStream::client(s, config.clone(), host)
                .map_err(|e| io_error(&format!("TLS to {host}"), e))?;
            if ep.http2 {
                t.handshake()
                    .map_err(|e| io_error(&format!("TLS to {host}"), e))?;
                if t.alpn() == Some(b"h2") {
                    return exchange_h2(t, request, "https");
                }
            }
            exchange(t, request)
        }
    }
}

/// Sends `request` (HTTP/1.x bytes, translated as the load engine does) on a new
/// HTTP/2 connection, driven by the engine's own connection state machine, and reads
/// the response: headers (pseudo-headers left out) and body.
fn exchange_h2<S: Read + Write>(
    mut s: S,
    request: &[u8],
    scheme: &str,
) -> Result<Fetched, FetchError> {
    use stampede_engine::h2::{Event, H2Conn, H2Request};
    let req = H2Request::from_http1(request, scheme)
        .map_err(|e| format!("the request cannot be sent over HTTP/2: {e}"))?;
    let mut conn = H2Conn::new();
    conn.keep_responses();
    let id = conn.request(&req, false);
    let (mut chunk, mut events) = ([0u8; 16384], Vec::new());
    loop {
        if !conn.out.is_empty() {
            s.write_all(&conn.out).map_err(|e| io_error("write", e))?;
            conn.out.clear();
        }
        let n = match s.read(&mut chunk) {
            Ok(0) => return Err("the connection closed before a complete HTTP/2 response".into()),
            Ok(n) => n,
            Err(e) => return Err(io_error("read", e)),
        };
        conn.feed(&chunk[..n], &req.body, &mut events)
            .map_err(|e| format!("HTTP/2: {e}"))?;
        let kept = conn.kept.as_mut().expect("kept");
        if kept.body.len() > 16 << 20 {
            return Err("response larger than 16 MiB".into());
        }
        for ev in events.drain(..) {
            match ev {
                Event::Response(r) if r.stream == id => {
                    let kept = std::mem::take(kept);
                    return Ok(Fetched {
                        status: r.status,
                        headers: kept
                            .headers
                            .into_iter()
                            .filter(|(n, _)| !n.starts_with(':'))
                            .collect(),
                        body: kept.body,
                        http2: true,
                    });
                }
                Event::Reset { code, .. } => {
                    return Err(format!("the server reset the stream (error code {code})").into())
                }
                Event::GoAway {
                    last_stream, code, ..
                } if last_stream < id => {
                    return Err(format!(
                        "the server sent GOAWAY (error code {code}) before answering"
                    )
                    .into())
                }
                _ => {}
            }
        }
    }
}

/// Writes the request and reads the response until it is complete or the server
/// closes, with the engine's own HTTP/1 parser (the one the load runs with): answers
/// to HEAD, 1xx, 204 and 304 have no body whatever their headers say, and a body
/// without length or chunking ends with the connection.
fn exchange<S: Read + Write>(mut s: S, request: &[u8]) -> Result<Fetched, FetchError> {
    s.write_all(request).map_err(|e| io_error("write", e))?;
    let mut parser = ResponseParser::new(request.starts_with(b"HEAD "));
    parser.keep_responses();
    let mut chunk = [0u8; 16384];
    let mut read = 0usize;
    let done = 'read: loop {
        let n = match s.read(&mut chunk) {
            Ok(0) => match parser.eof() {
                Some(done) => break 'read done,
                None => return Err("the connection closed before a complete response".into()),
            },
            Ok(n) => n,
            Err(e) => return Err(io_error("read", e)),
        };
        read += n;
        if read > 16 << 20 {
            return Err("response larger than 16 MiB".into());
        }
        let mut data = &chunk[..n];
        while !data.is_empty() {
            let (used, done) = parser
                .feed(data)
                .map_err(|e| format!("malformed response: {e}"))?;
            data = &data[used..];
            if let Some(done) = done {
                break 'read done;
            }
        }
    };
    let kept = parser.take_kept().unwrap_or_default();
    Ok(Fetched {
        status: done.status,
        headers: (kept.headers.iter())
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
        body: kept.body,
        http2: false,
    })
}

/// The outcome of verifying one target on one scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// Every check passed.
    pub passed: bool,
    /// What failed, one line per check.
    pub failures: Vec<String>,
}

/// Checks one response against the scenario's expectations.
pub fn check(f: &Fetched, v: &Verify) -> Vec<String> {
    let mut out = Vec::new();
    if f.status != v.status {
        out.push(format!("status {} (expected {})", f.status, v.status));
    }
    if let Some(ct) = &v.content_type {
        match f.header("content-type") {
            Some(h) if h.to_ascii_lowercase().contains(&ct.to_ascii_lowercase()) => {}
            Some(h) => out.push(format!("Content-Type {h:?} (expected {ct:?})")),
            None => out.push(format!("no Content-Type (expected {ct:?})")),
        }
    }
    let body = String::from_utf8_lossy(&f.body);
    if let Some(b) = &v.body {
        if body != *b {
            out.push(format!("body {:?} (expected {b:?})", truncate(&body)));
        }
    }
    if let Some(c) = &v.body_contains {
        if !body.contains(c.as_str()) {
            out.push(format!("body does not contain {c:?}"));
        }
    }
    if let Some(n) = v.body_length {
        if f.body.len() != n {
            out.push(format!("body length {} (expected {n})", f.body.len()));
        }
    }
    if let Some(k) = &v.json_key {
        match serde_json::from_slice::<serde_json::Value>(&f.body) {
            Ok(serde_json::Value::Object(m)) if m.contains_key(k) => {}
            Ok(_) => out.push(format!("JSON body has no key {k:?}")),
            Err(e) => out.push(format!("body is not JSON: {e}")),
        }
    }
    for h in &v.headers {
        if f.header(h).is_none() {
            out.push(format!("no {h} header"));
        }
    }
    if f.header("content-length").is_none() && f.header("transfer-encoding").is_none() && !f.http2 {
        out.push("neither Content-Length nor Transfer-Encoding".into());
    }
    out
}

fn truncate(s: &str) -> String {
    if s.chars().count() > 60 {
        format!("{}…", s.chars().take(60).collect::<String>())
    } else {
        s.to_string()
    }
}

/// Verifies: fetches, checks, and (if asked) fetches again a second later to see Date move.
pub fn verify(ep: &Endpoint, request: &[u8], v: &Verify, timeout: Duration) -> Outcome {
    let first = match fetch(ep, request, timeout) {
        Ok(f) => f,
        Err(e) => {
            return Outcome {
                passed: false,
                failures: vec![e.to_string()],
            }
        }
    };
    let mut failures = check(&first, v);
    if v.date_fresh {
        std::thread::sleep(Duration::from_millis(1100));
        match fetch(ep, request, timeout) {
            Ok(second)
                if second.header("date").is_some()
                    && second.header("date") == first.header("date") =>
            {
                failures.push("Date did not change in 1.1 s (frozen or cached forever)".into())
            }
            Ok(_) => {}
            Err(e) => failures.push(format!("second request: {e}")),
        }
    }
    Outcome {
        passed: failures.is_empty(),
        failures,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server that answers with canned bytes, a few at a time, then closes.
    struct Canned<'a> {
        answer: &'a [u8],
        sent: Vec<u8>,
    }

    impl Read for Canned<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.answer.len().min(buf.len()).min(7);
            buf[..n].copy_from_slice(&self.answer[..n]);
            self.answer = &self.answer[n..];
            Ok(n)
        }
    }

    impl Write for Canned<'_> {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.sent.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn ask(request: &[u8], answer: &[u8]) -> Result<Fetched, FetchError> {
        exchange(
            Canned {
                answer,
                sent: Vec::new(),
            },
            request,
        )
    }

    fn fetched(raw: &[u8]) -> Fetched {
        ask(b"GET / HTTP/1.1\r\n\r\n", raw).unwrap()
    }

    #[test]
    fn parses_length_and_chunked_responses() {
        let f = fetched(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nPONG");
        assert_eq!(f.body, b"PONG");
        let c = fetched(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nPO\r\n2\r\nNG\r\n0\r\n\r\n",
        );
        assert_eq!(c.body, b"PONG");
        assert_eq!(c.header("transfer-encoding"), Some("chunked"));
        let short = ask(
            b"GET / HTTP/1.1\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nPO",
        );
        assert!(short.is_err());
        let close = fetched(b"HTTP/1.0 200 OK\r\n\r\nuntil close");
        assert_eq!(close.body, b"until close");
        let head = ask(
            b"HEAD / HTTP/1.1\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 35\r\n\r\n",
        )
        .unwrap();
        assert!(head.body.is_empty());
        // A chunk size with a sign is malformed, not 5.
        let signed = ask(
            b"GET / HTTP/1.1\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n+5\r\nhello\r\n0\r\n\r\n",
        );
        assert!(signed.is_err());
    }

    #[test]
    fn every_check_reports_what_it_saw() {
        let f = fetched(b"HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nContent-Length: 9\r\n\r\nnot found");
        let v = Verify {
            status: 200,
            content_type: Some("application/json".into()),
            body: Some("{}".into()),
            body_contains: Some("hello".into()),
            body_length: Some(31),
            json_key: Some("message".into()),
            headers: vec!["Server".into(), "Date".into()],
            ..Verify::default()
        };
        let fails = check(&f, &v);
        assert_eq!(fails.len(), 8, "{fails:#?}");
        assert!(fails[0].contains("status 404"));
        assert!(fails.iter().any(|x| x.contains("not JSON")));
        let ok = fetched(b"HTTP/1.1 200 OK\r\nServer: s\r\nDate: d\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n{\"message\":\"x\"}");
        let v = Verify {
            json_key: Some("message".into()),
            body_length: Some(15),
            content_type: Some("application/json".into()),
            ..Verify::default()
        };
        assert!(check(&ok, &v).is_empty());
    }
}
