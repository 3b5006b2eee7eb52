//! Request encoding, done once before the run.
//!
//! Workers never format a request: a [`Request`] holds the exact bytes to write (one
//! copy, or `depth` copies back to back for pipelining), so the hot path is a single
//! `write` of a prepared slice. The builder lets each dialect reproduce its tool's wire
//! format byte for byte (ab's HTTP/1.0 request with its header order, wrk's minimal
//! HTTP/1.1 one), so byte counts compare fairly against the original tools.

use crate::error::SpecError;
use crate::spec::target::Target;

/// The HTTP version written in the request line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// `HTTP/1.0` (what ab sends).
    Http10,
    /// `HTTP/1.1`.
    Http11,
}

/// A request ready to be written.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Request {
    /// Upper-case method, for framing decisions (HEAD has no response body).
    pub method: String,
    /// The encoded request (head and body); hex in a portable spec, as a body may be
    /// any bytes.
    #[serde(with = "crate::form::hex")]
    pub bytes: Vec<u8>,
}

impl Request {
    /// True when responses to this request carry no body (HEAD).
    pub fn is_head(&self) -> bool {
        self.method.eq_ignore_ascii_case("HEAD")
    }

    /// `depth` copies back to back, for pipelined writes.
    pub fn repeated(&self, depth: usize) -> Vec<u8> {
        self.bytes.repeat(depth.max(1))
    }

    /// Its request target: `/path?query` (absolute form when sent to a proxy).
    pub fn target(&self) -> &str {
        request_target(&self.bytes).unwrap_or_default()
    }
}

/// The request target of the request at the start of `bytes`: its request line's
/// second word, or `None` when there is no such line.
pub fn request_target(bytes: &[u8]) -> Option<&str> {
    let line = bytes.split(|&b| b == b'\r').next()?;
    std::str::from_utf8(line).ok()?.split(' ').nth(1)
}

/// ApacheBench's request, the one source for `stampede ab` and plans with
/// `style = "ab"`: what ab 2.3 writes, in its order.
#[derive(Debug, Clone, Default)]
pub struct AbRequest<'a> {
    /// Upper-case method.
    pub method: &'a str,
    /// `-k`: `Connection: Keep-Alive`.
    pub keepalive: bool,
    /// `-C`: one `Cookie` header each.
    pub cookies: &'a [String],
    /// `-A user:password`: HTTP Basic.
    pub auth: Option<&'a str>,
    /// `-p`/`-u` with `-T`: the body and its type.
    pub body: Option<(&'a [u8], &'a str)>,
    /// `-H`: each header, before the Host, User-Agent and Accept ab adds when they are
    /// not given.
    pub headers: &'a [(String, String)],
}

/// ab's default `Content-type` for a body (`-T`).
pub const AB_CONTENT_TYPE: &str = "text/plain";

impl AbRequest<'_> {
    /// The request ab sends for `target`: `METHOD path HTTP/1.0`, keep-alive, cookies,
    /// authorization, `Content-length` and `Content-type` with a body, the `-H` headers,
    /// then `Host`, `User-Agent: ApacheBench/2.3` and `Accept: */*` unless given.
    pub fn build(&self, target: &Target) -> Result<Request, SpecError> {
        use base64::Engine as _;
        let mut b = RequestBuilder::new(self.method, &target.path)
            .version(Version::Http10)
            .without_content_length();
        if self.keepalive {
            b = b.header("Connection", "Keep-Alive");
        }
        for c in self.cookies {
            b = b.header("Cookie", c);
        }
        if let Some(auth) = self.auth {
            let enc = base64::engine::general_purpose::STANDARD.encode(auth.as_bytes());
            b = b.header("Authorization", &format!("Basic {enc}"));
        }
        if let Some((body, ctype)) = self.body {
            b = b
                .header("Content-length", &body.len().to_string())
                .header("Content-type", ctype);
        }
        for (n, v) in self.headers {
            b = b.header(n, v);
        }
        for (name, value) in [
            ("Host", target.authority.as_str()),
            ("User-Agent", "ApacheBench/2.3"),
            ("Accept", "*/*"),
        ] {
            if !self
                .headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case(name))
            {
                b = b.header(name, value);
            }
        }
        if let Some((body, _)) = self.body {
            b = b.body(body.to_vec());
        }
        b.build()
    }
}

/// Builds a [`Request`] from parts. Headers keep the order they are added in.
#[derive(Debug, Clone)]
pub struct RequestBuilder {
    method: String,
    target: String,
    version: Version,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    content_length: bool,
}

impl RequestBuilder {
    /// A request for `path` (or an absolute URL, for proxies) with no headers yet.
    pub fn new(method: &str, path: &str) -> RequestBuilder {
        RequestBuilder {
            method: method.to_ascii_uppercase(),
            target: path.to_string(),
            version: Version::Http11,
            headers: Vec::new(),
            body: Vec::new(),
            content_length: true,
        }
    }

    /// stampede's own default request: HTTP/1.1 with Host, User-Agent and Accept, and
    /// `Connection: close` when keep-alive is off.
    pub fn native(target: &Target, method: &str, keepalive: bool) -> RequestBuilder {
        let mut b = RequestBuilder::new(method, &target.path)
            .header("Host", &target.authority)
            .header(
                "User-Agent",
                concat!("stampede/", env!("CARGO_PKG_VERSION")),
            )
            .header("Accept", "*/*");
        if let Some(u) = &target.userinfo {
            use base64::Engine as _;
            let token = base64::engine::general_purpose::STANDARD.encode(u);
            b = b.header("Authorization", &format!("Basic {token}"));
        }
        if !keepalive {
            b = b.header("Connection", "close");
        }
        b
    }

    /// Sets the request-line version.
    pub fn version(mut self, v: Version) -> Self {
        self.version = v;
        self
    }

    /// Appends a header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// Replaces every header of that name (case-insensitive) with one, or appends it.
    pub fn set_header(mut self, name: &str, value: &str) -> Self {
        if let Some(pos) = self.position(name) {
            self.headers[pos].1 = value.to_string();
            self.headers
                .retain_with_index(|i, (n, _)| i == pos || !n.eq_ignore_ascii_case(name));
            self
        } else {
            self.header(name, value)
        }
    }

    /// True when a header of that name was added.
    pub fn has_header(&self, name: &str) -> bool {
        self.position(name).is_some()
    }

    fn position(&self, name: &str) -> Option<usize> {
        self.headers
            .iter()
            .position(|(n, _)| n.eq_ignore_ascii_case(name))
    }

    /// Sets the body; a Content-Length header is added at encoding unless one was given
    /// or [`RequestBuilder::without_content_length`] was called.
    pub fn body(mut self, body: Vec<u8>) -> Self {
        self.body = body;
        self
    }

    /// Do not add Content-Length automatically (the caller wrote it, or wants none).
    pub fn without_content_length(mut self) -> Self {
        self.content_length = false;
        self
    }

    /// Checks that every part keeps the request's framing: a method and header names
    /// made of token characters, a target without whitespace or controls, header values
    /// without CR, LF or NUL (RFC 9110 5.5). Anything else would put extra header lines
    /// or requests on the wire.
    pub fn check(&self) -> Result<(), SpecError> {
        let bad = |part: &'static str, value: &str, what: &'static str| {
            Err(SpecError::Request {
                part,
                value: value.to_string(),
                what,
            })
        };
        let breaks = |v: &str| v.bytes().any(|b| b == b'\r' || b == b'\n');
        const BREAK: &str = "a line break (CR or LF)";
        if self.method.is_empty() || !self.method.bytes().all(is_tchar) {
            let what = if breaks(&self.method) {
                BREAK
            } else {
                "a character that is not allowed in a method (letters, digits and !#$%&'*+-.^_`|~ are)"
            };
            return bad("method", &self.method, what);
        }
        if breaks(&self.target) {
            return bad("target", &self.target, BREAK);
        }
        if self.target.is_empty() || self.target.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return bad(
                "target",
                &self.target,
                "whitespace or a control character (percent-encode it, e.g. %20 for a space)",
            );
        }
        for (n, v) in &self.headers {
            if n.is_empty() || !n.bytes().all(is_tchar) {
                let what = if breaks(n) {
                    BREAK
                } else {
                    "a character that is not allowed in a header name"
                };
                return bad("header name", n, what);
            }
            if breaks(v) {
                return bad("header value", v, BREAK);
            }
            if v.bytes().any(|b| b == 0) {
                return bad("header value", v, "a NUL byte");
            }
        }
        Ok(())
    }

    /// Encodes the request, after [`RequestBuilder::check`].
    pub fn build(self) -> Result<Request, SpecError> {
        self.check()?;
        let mut out = Vec::with_capacity(128 + self.body.len());
        out.extend_from_slice(self.method.as_bytes());
        out.push(b' ');
        out.extend_from_slice(self.target.as_bytes());
        out.extend_from_slice(match self.version {
            Version::Http10 => b" HTTP/1.0\r\n",
            Version::Http11 => b" HTTP/1.1\r\n",
        });
        for (n, v) in &self.headers {
            out.extend_from_slice(n.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(v.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        if self.content_length
            && (!self.body.is_empty() || matches!(self.method.as_str(), "POST" | "PUT" | "PATCH"))
            && self.position("Content-Length").is_none()
            && self.position("Transfer-Encoding").is_none()
        {
            out.extend_from_slice(format!("Content-Length: {}\r\n", self.body.len()).as_bytes());
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&self.body);
        Ok(Request {
            method: self.method,
            bytes: out,
        })
    }
}

/// A token character (RFC 9110 5.6.2): what methods and header names are made of.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

trait RetainWithIndex<T> {
    fn retain_with_index(&mut self, f: impl FnMut(usize, &T) -> bool);
}

impl<T> RetainWithIndex<T> for Vec<T> {
    fn retain_with_index(&mut self, mut f: impl FnMut(usize, &T) -> bool) {
        let mut i = 0;
        self.retain(|x| {
            let keep = f(i, x);
            i += 1;
            keep
        });
    }
}

/// Splits a `Name: value` header as given on a command line.
pub fn parse_header_arg(s: &str) -> Option<(String, String)> {
    let (n, v) = s.split_once(':')?;
    let n = n.trim();
    if n.is_empty() || n.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return None;
    }
    Some((n.to_string(), v.trim().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ab_request_bytes_in_abs_order() {
        let t = Target::parse("http://127.0.0.1:8080/echo?x=1").unwrap();
        let headers = vec![("X-A".to_string(), "1".to_string())];
        let cookies = vec!["k=v".to_string()];
        let r = AbRequest {
            method: "POST",
            keepalive: true,
            cookies: &cookies,
            auth: Some("u:p"),
            body: Some((b"hello", AB_CONTENT_TYPE)),
            headers: &headers,
        }
        .build(&t)
        .unwrap();
        assert_eq!(
            String::from_utf8(r.bytes).unwrap(),
            "POST /echo?x=1 HTTP/1.0\r\nConnection: Keep-Alive\r\nCookie: k=v\r\n\
             Authorization: Basic dTpw\r\nContent-length: 5\r\nContent-type: text/plain\r\n\
             X-A: 1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: ApacheBench/2.3\r\nAccept: */*\r\n\r\nhello"
        );
        let given = vec![("user-agent".to_string(), "me".to_string())];
        let r = AbRequest {
            method: "GET",
            headers: &given,
            ..AbRequest::default()
        }
        .build(&t)
        .unwrap();
        assert_eq!(
            String::from_utf8(r.bytes).unwrap(),
            "GET /echo?x=1 HTTP/1.0\r\nuser-agent: me\r\nHost: 127.0.0.1:8080\r\nAccept: */*\r\n\r\n"
        );
    }

    #[test]
    fn native_request_bytes() {
        let t = Target::parse("http://127.0.0.1:8080/x?y=1").unwrap();
        let r = RequestBuilder::native(&t, "get", false).build().unwrap();
        let s = String::from_utf8(r.bytes).unwrap();
        assert!(s.starts_with("GET /x?y=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"));
        assert!(s.ends_with("Connection: close\r\n\r\n"));
        let t = Target::parse("http://u:p@127.0.0.1:8080/").unwrap();
        let r = RequestBuilder::native(&t, "GET", true).build().unwrap();
        let s = String::from_utf8(r.bytes).unwrap();
        assert!(s.contains("Authorization: Basic dTpw\r\n"), "{s}");
    }

    #[test]
    fn body_gets_content_length_and_set_header_replaces() {
        let r = RequestBuilder::new("POST", "/p")
            .header("A", "1")
            .header("a", "2")
            .set_header("A", "3")
            .body(b"hello".to_vec())
            .build()
            .unwrap();
        assert_eq!(
            String::from_utf8(r.bytes).unwrap(),
            "POST /p HTTP/1.1\r\nA: 3\r\nContent-Length: 5\r\n\r\nhello"
        );
    }

    #[test]
    fn header_args() {
        assert_eq!(
            parse_header_arg("X-A:  b c "),
            Some(("X-A".into(), "b c".into()))
        );
        assert_eq!(parse_header_arg("no colon"), None);
        assert_eq!(parse_header_arg("bad name: x"), None);
    }
}
