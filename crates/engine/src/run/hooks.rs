//! Script hooks: what a worker thread asks a per-thread script at fixed points of a
//! request's life, so that a scripting language (wrk's Lua) can shape requests
//! without becoming a second engine.
//!
//! A [`LoadSpec`](crate::LoadSpec) may carry [`Hooks`]: one [`ThreadHooks`] is taken
//! for each worker thread before it starts and lives on that thread. The worker calls
//! it only where the script said it would act — [`ThreadHooks::builds_requests`]
//! (a new request for each batch, in a buffer of the connection's own),
//! [`ThreadHooks::wants_responses`] (each response's status, headers and body, which
//! the connection then keeps), [`ThreadHooks::has_delay`] (a pause before each
//! batch) and [`ThreadHooks::address`] (where this thread connects). A script that
//! does none of these costs nothing per request: the prepared request is sent as with
//! no script. No scripting type appears here; the script's errors stay in the
//! script's own object, which answers [`Flow::StopRun`] to end the run.
//!
//! A source whose requests may go over any protocol ([`ThreadHooksSource::any_protocol`],
//! a journey's) also drives session shapes: each arriving session is a user on a
//! connection of its own, sending what the script builds, one request at a time,
//! pausing as [`ThreadHooks::delay`] says, until [`ThreadHooks::finished`].
//!
//! Hooks that only watch — responses, and with [`ThreadHooks::watches_sends`] the
//! requests as they are written — shape nothing; a source that says so
//! ([`ThreadHooksSource::observes_only`]) may watch any HTTP/1.1 run, sessions
//! included (ab's `-v 4`, httperf's `--print-reply`).

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::error::RequestsError;

/// What the worker does after a hook returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Carry on.
    Go,
    /// Stop this worker thread (wrk's `thread:stop()`); the others go on. Requests in
    /// flight on it are abandoned, as at the run's end.
    StopThread,
    /// Stop the whole run: the script failed (its object holds the error).
    StopRun,
}

/// A complete response, as the hooks see it.
#[derive(Debug, Clone, Copy)]
pub struct Reply<'a> {
    /// The worker's slot of the connection it came on (requests and responses of one
    /// slot pair up in order; see [`ThreadHooks::gone`]).
    pub conn: usize,
    /// Its status.
    pub status: u16,
    /// The head as received: status line, header lines and the blank line.
    pub head: &'a [u8],
    /// Header fields, in order.
    pub headers: &'a crate::proto::h1::parse::Fields,
    /// The body, chunk framing removed: its first
    /// [`crate::MAX_KEPT_BODY`] bytes.
    pub body: &'a [u8],
    /// The body was longer than what is kept: `body` is its beginning.
    pub cut: bool,
}

/// One worker thread's script. Called on that thread only.
pub trait ThreadHooks: Send {
    /// Whether [`ThreadHooks::request`] builds every batch of requests (otherwise the
    /// spec's prepared request is sent and `request` is never called).
    fn builds_requests(&self) -> bool;
    /// Whether [`ThreadHooks::response`] wants every response.
    fn wants_responses(&self) -> bool;
    /// Whether [`ThreadHooks::delay`] says how long to wait before each batch.
    fn has_delay(&self) -> bool;
    /// The address this thread connects to instead of the target's, if the script
    /// chose one.
    fn address(&self) -> Option<SocketAddr>;
    /// Writes the next batch's request bytes for connection slot `conn` into `out`
    /// (cleared by the caller): as many requests as the spec's `pipeline`, back to
    /// back.
    fn request(&mut self, conn: usize, out: &mut Vec<u8>) -> Flow;
    /// The figure the request just built for slot `conn` is counted under: an index
    /// of [`ThreadHooksSource::targets`] (0 when the source names none).
    fn target(&self, _conn: usize) -> u32 {
        0
    }
    /// A response is complete.
    fn response(&mut self, reply: &Reply) -> Flow;
    /// How long connection slot `conn` waits before sending its next batch.
    fn delay(&mut self, conn: usize) -> (Duration, Flow);
    /// Whether [`ThreadHooks::sent`] sees every batch of requests written.
    fn watches_sends(&self) -> bool {
        false
    }
    /// Connection slot `conn` is writing `requests` (whole requests, back to back).
    fn sent(&mut self, _conn: usize, _requests: &[u8]) {}
    /// Requests on slot `conn` still unanswered will not be (they failed, or were given
    /// up); the slot's next response answers a request sent after this.
    fn gone(&mut self, _conn: usize) {}
    /// Whether the user on slot `conn` is done: asked in session shapes once its
    /// request is answered, and its session (and connection) then ends. Otherwise its
    /// next request follows after [`ThreadHooks::delay`].
    fn finished(&mut self, _conn: usize) -> bool {
        false
    }
}

/// The source of every worker thread's script.
pub trait ThreadHooksSource: Send + Sync {
    /// The script of worker thread `index` (0-based), taken once, before it starts.
    fn thread(&self, index: usize) -> Box<dyn ThreadHooks>;
    /// Whether every thread's hooks only watch: they build no request, add no delay
    /// and choose no address, so they may watch any HTTP/1.1 run, sessions included.
    fn observes_only(&self) -> bool {
        false
    }
    /// The names of the figures the requests are counted under, when the hooks build
    /// requests of several kinds (a journey's steps); empty: the run's one request.
    fn targets(&self) -> Vec<String> {
        Vec::new()
    }
    /// Whether the requests it builds may go over HTTP/2 and HTTP/3 as well: each a
    /// whole HTTP/1.1 request that the connection sends as a stream of its own, one
    /// request at a time on a connection (its `request` is asked for one), with each
    /// answer's fields and body handed back as HTTP/1.1's are.
    fn any_protocol(&self) -> bool {
        false
    }
}

/// A run's script hooks, shared by its spec's clones.
#[derive(Clone)]
pub struct Hooks(pub Arc<dyn ThreadHooksSource>);

impl fmt::Debug for Hooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Hooks")
    }
}

/// How many complete HTTP/1.1 requests `bytes` holds back to back, or why it is not
/// a sequence of whole requests (wrk counts a script's requests the same way, to know
/// how many responses one write asks for).
pub fn count_requests(bytes: &[u8]) -> Result<usize, RequestsError> {
    request_spans(bytes).map(|spans| spans.len())
}

/// The length of each request's head and body in `bytes` (whole HTTP/1.1 requests
/// back to back), or why they are not.
pub fn request_spans(bytes: &[u8]) -> Result<Vec<(usize, usize)>, RequestsError> {
    let mut at = 0;
    let mut spans = Vec::new();
    while at < bytes.len() {
        let n = spans.len();
        let mut headers = [httparse::EMPTY_HEADER; 128];
        let mut req = httparse::Request::new(&mut headers);
        let head = match req.parse(&bytes[at..]) {
            Ok(httparse::Status::Complete(len)) => len,
            Ok(httparse::Status::Partial) => {
                return Err(RequestsError::Incomplete(n + 1));
            }
            Err(e) => {
                return Err(RequestsError::Malformed {
                    index: n + 1,
                    reason: e.to_string(),
                })
            }
        };
        let mut body = 0usize;
        for h in req.headers.iter() {
            if h.name.eq_ignore_ascii_case("content-length") {
                body = std::str::from_utf8(h.value)
                    .ok()
                    .and_then(|v| v.trim().parse().ok())
                    .ok_or(RequestsError::ContentLength(n + 1))?;
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                return Err(RequestsError::Chunked(n + 1));
            }
        }
        if at + head + body > bytes.len() {
            return Err(RequestsError::ShortBody(n + 1));
        }
        at += head + body;
        spans.push((head, body));
    }
    if spans.is_empty() {
        return Err(RequestsError::Empty);
    }
    Ok(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_counted_as_a_server_would_read_them() {
        let get = b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n";
        let post = b"POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc";
        assert_eq!(count_requests(get), Ok(1));
        assert_eq!(count_requests(&[&get[..], post, get].concat()), Ok(3));
        assert_eq!(
            request_spans(&[&get[..], post].concat()),
            Ok(vec![(get.len(), 0), (post.len() - 3, 3)])
        );
        assert_eq!(count_requests(b""), Err(RequestsError::Empty));
        assert_eq!(
            count_requests(&[&get[..], b"GET / HTTP/1.1\r\n"].concat()),
            Err(RequestsError::Incomplete(2))
        );
        let short = count_requests(b"POST / HTTP/1.1\r\nContent-Length: 9\r\n\r\nab");
        assert_eq!(short, Err(RequestsError::ShortBody(1)));
        assert!(short.unwrap_err().to_string().contains("shorter"));
        assert!(matches!(
            count_requests(b"GET\x01 / HTTP/1.1\r\n\r\n"),
            Err(RequestsError::Malformed { index: 1, .. })
        ));
        assert_eq!(
            count_requests(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"),
            Err(RequestsError::Chunked(1))
        );
    }
}
