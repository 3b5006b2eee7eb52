//! Request-head parsing with the server's limits.
//!
//! Everything a client sends is checked before it is acted on: the head's size and
//! syntax (httparse), Content-Length (digits only, no conflicting duplicates, not
//! together with Transfer-Encoding), and the body's size. A violation becomes a
//! [`Reject`] with the status to answer and the connection is closed after it.

/// Limits on what a client may send.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest request head (request line and headers), bytes; larger → 431.
    pub max_head: usize,
    /// Largest request body, bytes; larger → 413.
    pub max_body: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_head: 16 * 1024,
            max_body: 1024 * 1024,
        }
    }
}

/// Methods the endpoints distinguish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// GET.
    Get,
    /// HEAD: same headers as GET, no body.
    Head,
    /// POST (the mock LLM's completions; answered 405 elsewhere).
    Post,
    /// Anything else (answered 405).
    Other,
}

/// A parsed request; slices point into the read buffer.
#[derive(Debug)]
pub struct Request<'a> {
    /// The method.
    pub method: Method,
    /// Path without the query.
    pub path: &'a [u8],
    /// Query string without `?` (empty if none).
    pub query: &'a [u8],
    /// Whether the connection stays open after the response.
    pub keep_alive: bool,
    /// HTTP/1.0 request (keep-alive must then be confirmed in the response).
    pub http10: bool,
    /// The request's body (within the body limit).
    pub body: &'a [u8],
    /// The request asked to upgrade to WebSocket (`Upgrade: websocket`): its head is
    /// read again, whole, by the handshake ([`crate::ws::handshake`]).
    pub upgrade: bool,
    /// The `Authorization` header's value (empty when none).
    pub authorization: &'a [u8],
}

/// Parses a request's head only: what a server must know before its body has come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Waiting {
    /// The client sent `Expect: 100-continue` and waits for a `100 Continue` before
    /// sending the body (RFC 9110 10.1.1).
    pub expects_continue: bool,
}

/// Why a request is refused; the connection is closed after the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reject {
    /// Malformed request line, header or length → 400.
    BadRequest,
    /// Head larger than the limit, or too many headers → 431.
    HeadTooLarge,
    /// Body larger than the limit → 413.
    BodyTooLarge,
    /// A transfer coding the server does not implement → 501.
    NotImplemented,
}

impl Reject {
    /// The status code to answer with.
    pub fn status(self) -> u16 {
        match self {
            Reject::BadRequest => 400,
            Reject::HeadTooLarge => 431,
            Reject::BodyTooLarge => 413,
            Reject::NotImplemented => 501,
        }
    }
}

/// Result of parsing the start of a buffer.
#[derive(Debug)]
pub enum Parsed<'a> {
    /// A complete request (head and body) of `len` bytes.
    Complete(Request<'a>, usize),
    /// More bytes are needed: of the head, or (`Some`) of a body whose head was accepted.
    Partial(Option<Waiting>),
    /// The request is refused.
    Rejected(Reject),
}

pub(crate) const MAX_HEADERS: usize = 64;

pub(crate) fn has_token(value: &[u8], token: &[u8]) -> bool {
    value
        .split(|&b| b == b',')
        .any(|t| t.trim_ascii().eq_ignore_ascii_case(token))
}

/// Parses one request at the start of `buf`. Inlined into the event loop, as it was
/// while it was smaller: a call here costs every request its frame.
#[inline]
pub fn parse<'a>(buf: &'a [u8], limits: &Limits) -> Parsed<'a> {
    // Left uninitialised: httparse fills what it uses (zeroing 64 headers is a 2 KiB
    // memset per request).
    let mut headers = [const { std::mem::MaybeUninit::uninit() }; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut []);
    let head_len = match req.parse_with_uninit_headers(buf, &mut headers) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => {
            return if buf.len() > limits.max_head {
                Parsed::Rejected(Reject::HeadTooLarge)
            } else {
                Parsed::Partial(None)
            };
        }
        Err(httparse::Error::TooManyHeaders) => return Parsed::Rejected(Reject::HeadTooLarge),
        Err(_) => return Parsed::Rejected(Reject::BadRequest),
    };
    if head_len > limits.max_head {
        return Parsed::Rejected(Reject::HeadTooLarge);
    }
    let http10 = req.version == Some(0);
    let mut content_length: Option<usize> = None;
    let mut close = false;
    let mut keep_alive = false;
    let mut has_te = false;
    let mut hosts = 0;
    let mut expects_continue = false;
    let mut upgrade = false;
    let mut authorization: &[u8] = &[];
    for h in req.headers.iter() {
        let n = h.name.as_bytes();
        // By length first: most headers are none of these and cost one compare.
        match n.len() {
            4 if is_name(n, b"host") => hosts += 1,
            6 if is_name(n, b"expect") => {
                expects_continue |= h.value.trim_ascii().eq_ignore_ascii_case(b"100-continue")
            }
            7 if is_name(n, b"upgrade") => upgrade = has_token(h.value, b"websocket"),
            10 if is_name(n, b"connection") => {
                close |= has_token(h.value, b"close");
                keep_alive |= has_token(h.value, b"keep-alive");
            }
            13 if is_name(n, b"authorization") => authorization = h.value,
            14 if is_name(n, b"content-length") => {
                let Some(len) = content_length_value(h.value) else {
                    return Parsed::Rejected(Reject::BadRequest);
                };
                if content_length.is_some_and(|c| c != len) {
                    return Parsed::Rejected(Reject::BadRequest);
                }
                content_length = Some(len);
            }
            17 if is_name(n, b"transfer-encoding") => has_te = true,
            _ => {}
        }
    }
    // RFC 9112 3.2: an HTTP/1.1 request has exactly one Host; none has two.
    if hosts > 1 || (hosts == 0 && !http10) {
        return Parsed::Rejected(Reject::BadRequest);
    }
    if has_te {
        // Both framings at once is a request-smuggling vector; refuse it outright.
        if content_length.is_some() {
            return Parsed::Rejected(Reject::BadRequest);
        }
        return Parsed::Rejected(Reject::NotImplemented);
    }
    let body = content_length.unwrap_or(0);
    if body > limits.max_body {
        return Parsed::Rejected(Reject::BodyTooLarge);
    }
    if buf.len() < head_len + body {
        return Parsed::Partial(Some(Waiting {
            expects_continue: expects_continue && !http10 && buf.len() == head_len,
        }));
    }
    let target = req.path.unwrap_or("/").as_bytes();
    let target = if target.first() == Some(&b'/') {
        target
    } else {
        match origin_form(target) {
            Some(t) => t,
            None => return Parsed::Rejected(Reject::BadRequest),
        }
    };
    let (path, query) = split_target(target);
    let method = match req.method.unwrap_or("") {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        "POST" => Method::Post,
        _ => Method::Other,
    };
    Parsed::Complete(
        Request {
            method,
            path,
            query,
            keep_alive: if http10 { keep_alive && !close } else { !close },
            http10,
            body: &buf[head_len..head_len + body],
            upgrade,
            authorization,
        },
        head_len + body,
    )
}

/// Whether header name `n` (token characters, as httparse checked) is `lower` in any
/// case: setting bit 0x20 folds a letter to lower case and leaves `-` as it is.
#[inline]
fn is_name(n: &[u8], lower: &[u8]) -> bool {
    if n.len() != lower.len() {
        return false;
    }
    // Eight bytes at a time, then four, then one.
    let (mut a, mut b) = (n, lower);
    while a.len() >= 8 {
        let x = u64::from_le_bytes(a[..8].try_into().expect("eight bytes"));
        let y = u64::from_le_bytes(b[..8].try_into().expect("eight bytes"));
        if x | 0x2020_2020_2020_2020 != y {
            return false;
        }
        (a, b) = (&a[8..], &b[8..]);
    }
    if a.len() >= 4 {
        let x = u32::from_le_bytes(a[..4].try_into().expect("four bytes"));
        let y = u32::from_le_bytes(b[..4].try_into().expect("four bytes"));
        if x | 0x2020_2020 != y {
            return false;
        }
        (a, b) = (&a[4..], &b[4..]);
    }
    a.iter().zip(b).all(|(&x, &y)| x | 0x20 == y)
}

/// A Content-Length value: ASCII digits only (at most 18, around them optional
/// whitespace); `None` for anything else, a sign included.
pub fn content_length_value(v: &[u8]) -> Option<usize> {
    let v = v.trim_ascii();
    if v.is_empty() || v.len() > 18 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(v.iter().fold(0usize, |a, &d| a * 10 + (d - b'0') as usize))
}

/// A request target in origin form (`/path?query`): an absolute-form target
/// (`http://host/path`, RFC 9112 3.2.2) gives its path, `/` when it has none; `*` and
/// anything else not starting with `/` is `None`.
#[inline(never)]
fn origin_form(target: &[u8]) -> Option<&[u8]> {
    if target.first() == Some(&b'/') {
        return Some(target);
    }
    let scheme = target.iter().position(|&b| b == b':')?;
    let name = &target[..scheme];
    if !(name.eq_ignore_ascii_case(b"http") || name.eq_ignore_ascii_case(b"https")) {
        return None;
    }
    let rest = target[scheme + 1..].strip_prefix(b"//")?;
    let authority = rest
        .iter()
        .position(|&b| b == b'/' || b == b'?')
        .unwrap_or(rest.len());
    if authority == 0 {
        return None;
    }
    match rest.get(authority) {
        Some(b'/') => Some(&rest[authority..]),
        // `http://host?q` and `http://host` both mean the root.
        _ => Some(b"/"),
    }
}

/// A request target split at its first `?` into path and query (empty without one).
pub fn split_target(target: &[u8]) -> (&[u8], &[u8]) {
    match target.iter().position(|&b| b == b'?') {
        Some(i) => (&target[..i], &target[i + 1..]),
        None => (target, &target[target.len()..]),
    }
}

/// The value of query parameter `name`, undecoded.
pub fn query_param<'a>(query: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    query.split(|&b| b == b'&').find_map(|kv| {
        let (k, v) = match kv.iter().position(|&b| b == b'=') {
            Some(i) => (&kv[..i], &kv[i + 1..]),
            None => (kv, &kv[kv.len()..]),
        };
        (k == name).then_some(v)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &[u8]) -> Parsed<'_> {
        parse(s, &Limits::default())
    }

    #[test]
    fn parses_pipelined_and_keepalive_rules() {
        let two = b"GET /pong HTTP/1.1\r\nHost: x\r\n\r\nGET /a?i=1 HTTP/1.0\r\n\r\n";
        let Parsed::Complete(r, n) = p(two) else {
            panic!()
        };
        assert_eq!(r.path, b"/pong");
        assert!(r.keep_alive);
        let Parsed::Complete(r, _) = p(&two[n..]) else {
            panic!()
        };
        assert_eq!(r.query, b"i=1");
        assert!(!r.keep_alive && r.http10);
        let Parsed::Complete(r, _) = p(b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n") else {
            panic!()
        };
        assert!(r.keep_alive);
        let Parsed::Complete(r, _) = p(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        else {
            panic!()
        };
        assert!(!r.keep_alive);
    }

    #[test]
    fn bodies_wait_for_their_length() {
        assert!(matches!(
            p(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nab"),
            Parsed::Partial(Some(Waiting {
                expects_continue: false
            }))
        ));
        let Parsed::Complete(_, n) =
            p(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nabcdeX")
        else {
            panic!()
        };
        assert_eq!(n, 52);
        assert!(matches!(p(b"GET / HTTP/1.1\r\nHo"), Parsed::Partial(None)));
    }

    #[test]
    fn a_continue_is_wanted_only_before_any_body_byte() {
        let head =
            b"PUT / HTTP/1.1\r\nHost: x\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\n";
        let waits = |buf: &[u8]| match p(buf) {
            Parsed::Partial(Some(w)) => w.expects_continue,
            other => panic!("{other:?}"),
        };
        assert!(waits(head));
        assert!(!waits(&[&head[..], b"a"].concat()));
        assert!(!waits(
            b"PUT / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n"
        ));
    }

    #[test]
    fn host_must_appear_once_in_http11() {
        let status = |req: &[u8]| match p(req) {
            Parsed::Rejected(r) => r.status(),
            Parsed::Complete(..) => 200,
            Parsed::Partial(_) => 0,
        };
        assert_eq!(status(b"GET / HTTP/1.1\r\n\r\n"), 400);
        assert_eq!(status(b"GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n"), 400);
        assert_eq!(status(b"GET / HTTP/1.0\r\nHost: a\r\nHost: a\r\n\r\n"), 400);
        assert_eq!(status(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"), 200);
        assert_eq!(status(b"GET / HTTP/1.0\r\n\r\n"), 200);
    }

    #[test]
    fn absolute_form_targets_mean_their_path() {
        let path = |target: &str| {
            let req = format!("GET {target} HTTP/1.1\r\nHost: h\r\n\r\n");
            match p(req.as_bytes()) {
                Parsed::Complete(r, _) => Some((
                    String::from_utf8(r.path.to_vec()).unwrap(),
                    String::from_utf8(r.query.to_vec()).unwrap(),
                )),
                _ => None,
            }
        };
        let pq = |a: &str, b: &str| Some((a.to_string(), b.to_string()));
        assert_eq!(path("http://h:8080/pong?x=1"), pq("/pong", "x=1"));
        assert_eq!(path("HTTPS://h/a"), pq("/a", ""));
        assert_eq!(path("http://h"), pq("/", ""));
        assert_eq!(path("http://h?q"), pq("/", ""));
        assert_eq!(path("/plain"), pq("/plain", ""));
        assert_eq!(path("ftp://h/a"), None);
        assert_eq!(path("http:///a"), None);
        assert_eq!(path("*"), None);
    }

    #[test]
    fn rejects_with_the_right_status() {
        let cases: [(&[u8], u16); 7] = [
            (b"GARBAGE\r\n\r\n", 400),
            (b"GET / HTTP/1.0\r\nContent-Length: -1\r\n\r\n", 400),
            (b"GET / HTTP/1.1\r\nContent-Length: 12a\r\n\r\n", 400),
            (
                b"GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                400,
            ),
            (
                b"POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
                400,
            ),
            (b"POST / HTTP/1.0\r\nContent-Length: 99999999\r\n\r\n", 413),
            (
                b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
                501,
            ),
        ];
        for (req, status) in cases {
            match p(req) {
                Parsed::Rejected(r) => {
                    assert_eq!(r.status(), status, "{:?}", String::from_utf8_lossy(req))
                }
                other => panic!("{other:?} for {:?}", String::from_utf8_lossy(req)),
            }
        }
        let big = [b"GET / HTTP/1.1\r\nX: ".as_slice(), &[b'a'; 17000]].concat();
        assert!(matches!(p(&big), Parsed::Rejected(Reject::HeadTooLarge)));
    }

    #[test]
    fn content_length_values_are_digits_only() {
        assert_eq!(content_length_value(b"0"), Some(0));
        assert_eq!(content_length_value(b" 1234 "), Some(1234));
        assert_eq!(
            content_length_value(b"999999999999999999"),
            Some(999_999_999_999_999_999)
        );
        for bad in [
            &b""[..],
            b"+5",
            b"-1",
            b"12a",
            b"1 2",
            b"0x10",
            b"1234567890123456789",
        ] {
            assert_eq!(content_length_value(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn targets_split_at_the_first_question_mark() {
        assert_eq!(split_target(b"/a?b=1?c"), (&b"/a"[..], &b"b=1?c"[..]));
        assert_eq!(split_target(b"/a"), (&b"/a"[..], &b""[..]));
        assert_eq!(split_target(b"/a?"), (&b"/a"[..], &b""[..]));
    }

    #[test]
    fn query_params() {
        assert_eq!(query_param(b"a=1&i=xyz", b"i"), Some(&b"xyz"[..]));
        assert_eq!(query_param(b"a=1", b"i"), None);
        assert_eq!(query_param(b"i", b"i"), Some(&b""[..]));
    }
}
