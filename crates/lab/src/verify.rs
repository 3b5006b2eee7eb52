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
                Event::Response { stream, status, .. } if stream == id => {
                    let kept = std::mem::take(kept);
                    return Ok(Fetched {
                        status,
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
                Event::GoAway { last_stream, code } if last_stream < id => {
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
/// closes.
fn exchange<S: Read + Write>(mut s: S, request: &[u8]) -> Result<Fetched, FetchError> {
    s.write_all(request).map_err(|e| io_error("write", e))?;
    // Responses to HEAD carry a length but no body.
    let head = request.starts_with(b"HEAD ");
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16384];
    loop {
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                if buf.len() > 16 << 20 {
                    return Err("response larger than 16 MiB".into());
                }
                if let Some(f) = complete(&buf, false, head)? {
                    return Ok(f);
                }
            }
            Err(e) => return Err(io_error("read", e)),
        }
    }
    complete(&buf, true, head)?
        .ok_or_else(|| "the connection closed before a complete response".into())
}

/// Parses a complete response from `buf`, or `None` if more is needed; at EOF a body
/// without length or chunking ends with the data. Answers to HEAD, 1xx, 204 and 304
/// have no body whatever their headers say.
fn complete(buf: &[u8], at_eof: bool, head: bool) -> Result<Option<Fetched>, String> {
    let mut hs = [httparse::EMPTY_HEADER; 64];
    let mut r = httparse::Response::new(&mut hs);
    let n = match r.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(format!("malformed response: {e}")),
    };
    let headers: Vec<(String, String)> = r
        .headers
        .iter()
        .map(|h| {
            (
                h.name.to_string(),
                String::from_utf8_lossy(h.value).into_owned(),
            )
        })
        .collect();
    let status = r.code.unwrap_or(0);
    let f = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    let rest = &buf[n..];
    let body = if head || status < 200 || status == 204 || status == 304 {
        Vec::new()
    } else if f("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked")) {
        match dechunk(rest)? {
            Some(b) => b,
            None => return Ok(None),
        }
    } else if let Some(len) = f("content-length") {
        let len: usize = len
            .trim()
            .parse()
            .map_err(|_| "bad Content-Length".to_string())?;
        if rest.len() < len {
            return Ok(None);
        }
        rest[..len].to_vec()
    } else if at_eof {
        rest.to_vec()
    } else {
        return Ok(None);
    };
    Ok(Some(Fetched {
        status,
        headers,
        body,
        http2: false,
    }))
}

fn dechunk(mut b: &[u8]) -> Result<Option<Vec<u8>>, String> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = b.windows(2).position(|w| w == b"\r\n") else {
            return Ok(None);
        };
        let line = std::str::from_utf8(&b[..eol]).map_err(|_| "bad chunk size")?;
        let size = usize::from_str_radix(line.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| "bad chunk size")?;
        b = &b[eol + 2..];
        if size == 0 {
            return Ok(Some(out));
        }
        if b.len() < size + 2 {
            return Ok(None);
        }
        out.extend_from_slice(&b[..size]);
        b = &b[size + 2..];
    }
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

    fn fetched(raw: &[u8]) -> Fetched {
        complete(raw, false, false).unwrap().unwrap()
    }

    #[test]
    fn parses_length_and_chunked_responses() {
        let f = fetched(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nPONG");
        assert_eq!(f.body, b"PONG");
        let c = fetched(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nPO\r\n2\r\nNG\r\n0\r\n\r\n",
        );
        assert_eq!(c.body, b"PONG");
        assert!(complete(
            b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nPO",
            false,
            false
        )
        .unwrap()
        .is_none());
        let close = b"HTTP/1.0 200 OK\r\n\r\nuntil close";
        assert!(complete(close, false, false).unwrap().is_none());
        assert_eq!(
            complete(close, true, false).unwrap().unwrap().body,
            b"until close"
        );
        let head = b"HTTP/1.1 200 OK\r\nContent-Length: 35\r\n\r\n";
        assert!(complete(head, false, true)
            .unwrap()
            .unwrap()
            .body
            .is_empty());
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
