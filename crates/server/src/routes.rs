//! The endpoints of the reference experiments, and response encoding.
//!
//! The router knows endpoints, not protocols: it hands each response to a [`Respond`],
//! which is [`Http1`] (written straight into the connection's output buffer: status line
//! and `Server` header are constants, `Date` is the thread's cached line) or an HTTP/2
//! stream ([`crate::h2`]). Bodies are static bytes or formatted into a small scratch
//! buffer. `/biteq` and `/delay/<ms>` answer later: they return a [`Deferred`] that the
//! event loop completes; streamed answers are [`crate::feed`]'s.

use std::io::Write as _;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use crate::files::FileError;
use crate::request::{query_param, Method, Request};
use crate::store::{valid_id, Store};

/// The built-in PNG of the reference file test (50,991 bytes).
pub static FIRING_GEOMETRY: &[u8] = include_bytes!("../assets/FiringGeometry.png");
/// `/backend`'s 31-byte body.
pub const BACKEND: &[u8] = b"Hello from the backend service!";
/// `/chat`'s 35-byte body.
pub const CHAT: &[u8] = b"{\"message\":\"Hello from the server\"}";
/// Largest `/bytes/<n>`.
pub const MAX_BYTES: usize = 64 * 1024 * 1024;
/// How much of a generated body is made at a time: a connection holds at most this
/// much of it while the client has not taken it.
pub const BODY_CHUNK: usize = 64 * 1024;

/// A body made a chunk at a time as the client takes it, from byte `next` up to `end`:
/// `/bytes/<n>`'s 64-byte pattern, or (with the file's bytes, which the connection
/// keeps beside it) a static file's. A client that never reads a 64 MiB answer costs
/// its connection one chunk, not 64 MiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pattern {
    /// The next byte to make.
    next: u32,
    /// The body's length (32 bits keep the HTTP/2 stream state small enough to move
    /// without a call to memcpy).
    end: u32,
}

impl Pattern {
    const BYTES: &'static [u8; 64] =
        b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ\r\n";

    /// A body of `len` bytes (at most [`MAX_BYTES`]), none made yet.
    pub fn new(len: usize) -> Pattern {
        assert!(len <= MAX_BYTES, "a pattern body of {len} bytes");
        Pattern {
            next: 0,
            end: len as u32,
        }
    }

    /// A static file's body of `len` bytes (at most [`MAX_FILE`]), none sent yet; its
    /// bytes go to [`Pattern::fill_from`].
    pub fn file(len: usize) -> Pattern {
        assert!(len as u64 <= MAX_FILE, "a file of {len} bytes");
        Pattern {
            next: 0,
            end: len as u32,
        }
    }

    /// Appends the next `max` bytes at most of `file` (the body's bytes); returns how
    /// many.
    pub fn fill_from(&mut self, file: &[u8], out: &mut Vec<u8>, max: usize) -> usize {
        let n = self.left().min(max);
        let at = self.next as usize;
        out.extend_from_slice(&file[at..at + n]);
        self.next += n as u32;
        n
    }

    /// Bytes still to make.
    pub fn left(&self) -> usize {
        (self.end - self.next) as usize
    }

    /// Appends the next `max` bytes at most; returns how many.
    pub fn fill(&mut self, out: &mut Vec<u8>, max: usize) -> usize {
        let n = self.left().min(max);
        let mut at = self.next as usize;
        let stop = at + n;
        out.reserve(n);
        while at < stop {
            let i = at % 64;
            let take = (64 - i).min(stop - at);
            out.extend_from_slice(&Self::BYTES[i..i + take]);
            at += take;
        }
        self.next = stop as u32;
        n
    }
}
/// Largest static file served (32 bits count a body's bytes).
pub const MAX_FILE: u64 = u32::MAX as u64;

/// Longest `/delay/<ms>`.
pub const MAX_DELAY_MS: u64 = 60_000;

/// How the connection continues after a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Persist {
    /// HTTP/1.1 keep-alive: nothing to say.
    Keep,
    /// HTTP/1.0 keep-alive: must be confirmed with `Connection: keep-alive`.
    Keep10,
    /// `Connection: close`, then close.
    Close,
}

impl Persist {
    /// From the request's keep-alive decision.
    pub fn of(req: &Request) -> Persist {
        match (req.keep_alive, req.http10) {
            (false, _) => Persist::Close,
            (true, true) => Persist::Keep10,
            (true, false) => Persist::Keep,
        }
    }
}

/// Work that answers later.
#[derive(Debug, Clone, Copy)]
pub enum Deferred {
    /// Answer after this many milliseconds.
    Delay(u64),
    /// Hash the ID on the compute thread, then answer.
    Biteq([u8; 14]),
    /// A streamed answer: its head is written, its events follow on their timers.
    Feed(Feed),
}

pub use crate::feed::{Feed, FeedKind, Pace, MAX_EVENTS};

/// What the router did with a request.
pub enum Routed {
    /// The response is in the buffer.
    Written,
    /// The response comes later.
    Later(Deferred),
}

/// What the router keeps per event loop: the shared store, the static root, and the
/// loop's counter and scratch buffer, reused from request to request.
pub struct Ctx {
    pub store: Arc<Store>,
    pub static_dir: Option<PathBuf>,
    pub thread: usize,
    pub counter: u64,
    pub scratch: Vec<u8>,
    /// The mock LLM's timing, and the streams this loop has under way.
    pub llm: crate::llm::LlmConfig,
    pub batch: crate::llm::Batch,
    /// The mock LLM's batching engine, with `--llm-engine` (this loop's own).
    pub engine: Option<crate::llm::engine::Engine>,
    /// The engines' figures, the server's `/metrics`.
    pub llm_metrics: Arc<crate::llm::metrics::Metrics>,
}

impl Ctx {
    /// The context of event loop `thread`, with a fresh counter.
    pub fn new(store: Arc<Store>, static_dir: Option<PathBuf>, thread: usize) -> Ctx {
        Ctx {
            store,
            static_dir,
            thread,
            counter: 0,
            scratch: Vec::with_capacity(128),
            llm: crate::llm::LlmConfig::default(),
            batch: crate::llm::Batch::default(),
            engine: None,
            llm_metrics: Arc::default(),
        }
    }
}

/// Where a response goes. The body is left out for HEAD and for statuses that have
/// none; `Content-Length` is always the body's.
pub trait Respond {
    /// A whole response.
    fn respond(&mut self, status: u16, ctype: &str, body: &[u8]);
    /// A 200 `application/octet-stream` response whose body is `/bytes`' pattern of
    /// `len` bytes, made a chunk at a time as the client takes it.
    fn respond_pattern(&mut self, len: usize);
    /// A 200 response whose body is a static file's bytes (shared with every response
    /// sending them), sent a chunk at a time as the client takes it.
    fn respond_file(&mut self, ctype: &str, bytes: Arc<[u8]>);
    /// The head of a streamed 200 response (chunked, not cached). Returns whether its
    /// events are to follow: not for HEAD, and not where streams are not served (the
    /// answer is then complete).
    fn stream_head(&mut self, ctype: &str) -> bool;
}

/// The `Server` and `Date` header lines every HTTP/1.x response carries (name, value
/// and CRLF), made once per loop tick.
#[derive(Debug, Clone, Copy)]
pub struct Lines<'a> {
    pub date: &'a [u8],
    pub server: &'a [u8],
}

/// An HTTP/1.x response, appended to the connection's output.
pub struct Http1<'a> {
    pub out: &'a mut Vec<u8>,
    pub lines: Lines<'a>,
    pub persist: Persist,
    pub method: Method,
    /// Set by [`Respond::respond_pattern`] when the body is longer than its first
    /// chunk: the rest, for the connection to make as the client reads.
    pub tail: Option<Pattern>,
    /// Where the file whose bytes the tail sends goes, when it is a static file's (the
    /// connection's own slot, so that other responses pay nothing for it).
    pub tail_file: &'a mut Option<Arc<[u8]>>,
}

impl Respond for Http1<'_> {
    #[inline]
    fn respond(&mut self, status: u16, ctype: &str, body: &[u8]) {
        respond(
            self.out,
            self.lines,
            status,
            ctype,
            body,
            self.persist,
            self.method,
        );
    }

    fn respond_pattern(&mut self, len: usize) {
        head(
            self.out,
            self.lines,
            200,
            "application/octet-stream",
            len,
            self.persist,
        );
        if self.method != Method::Head {
            let mut p = Pattern::new(len);
            p.fill(self.out, BODY_CHUNK);
            self.tail = (p.left() > 0).then_some(p);
        }
    }

    fn stream_head(&mut self, ctype: &str) -> bool {
        self.out.extend_from_slice(b"HTTP/1.1 200 OK\r\n");
        self.out.extend_from_slice(self.lines.server);
        self.out.extend_from_slice(self.lines.date);
        self.out.extend_from_slice(b"Content-Type: ");
        self.out.extend_from_slice(ctype.as_bytes());
        self.out
            .extend_from_slice(b"\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked");
        self.out.extend_from_slice(match self.persist {
            Persist::Keep => b"\r\n\r\n",
            Persist::Keep10 => &b"\r\nConnection: keep-alive\r\n\r\n"[..],
            Persist::Close => b"\r\nConnection: close\r\n\r\n",
        });
        self.method != Method::Head
    }

    fn respond_file(&mut self, ctype: &str, bytes: Arc<[u8]>) {
        head(self.out, self.lines, 200, ctype, bytes.len(), self.persist);
        if self.method != Method::Head {
            let mut p = Pattern::file(bytes.len());
            p.fill_from(&bytes, self.out, BODY_CHUNK);
            if p.left() > 0 {
                self.tail = Some(p);
                *self.tail_file = Some(bytes);
            }
        }
    }
}

/// Statuses whose responses carry no body.
pub fn bodyless(status: u16) -> bool {
    status == 204 || status == 304 || (100..200).contains(&status)
}

/// The status line's reason phrase ("Status" for an unregistered code).
fn reason(status: u16) -> &'static str {
    stampede_wire::status::reason(status).unwrap_or("Status")
}

/// Writes a response head; `len` is the Content-Length.
pub fn head(
    out: &mut Vec<u8>,
    lines: Lines<'_>,
    status: u16,
    ctype: &str,
    len: usize,
    persist: Persist,
) {
    match status {
        200 => out.extend_from_slice(b"HTTP/1.1 200 OK\r\n"),
        _ => {
            let _ = write!(out, "HTTP/1.1 {status} {}\r\n", reason(status));
        }
    }
    out.extend_from_slice(lines.server);
    out.extend_from_slice(lines.date);
    if status == 405 {
        out.extend_from_slice(b"Allow: GET, HEAD\r\n");
    }
    out.extend_from_slice(b"Content-Type: ");
    out.extend_from_slice(ctype.as_bytes());
    if status == 200 || !bodyless(status) {
        // RFC 9110 8.6: no Content-Length in a 1xx or 204, and none needed in a 304.
        out.extend_from_slice(b"\r\nContent-Length: ");
        push_decimal(out, len as u64);
    }
    match persist {
        Persist::Keep => out.extend_from_slice(b"\r\n\r\n"),
        Persist::Keep10 => out.extend_from_slice(b"\r\nConnection: keep-alive\r\n\r\n"),
        Persist::Close => out.extend_from_slice(b"\r\nConnection: close\r\n\r\n"),
    }
}

/// Appends `n` in decimal without allocating.
#[inline]
fn push_decimal(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(decimal(n, &mut [0u8; 20]));
}

/// `n` in decimal, written at the end of `buf`.
#[inline]
pub(crate) fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &buf[i..]
}

/// Writes a whole response (the body is left out for HEAD).
pub fn respond(
    out: &mut Vec<u8>,
    lines: Lines<'_>,
    status: u16,
    ctype: &str,
    body: &[u8],
    persist: Persist,
    method: Method,
) {
    let bodyless = bodyless(status);
    head(
        out,
        lines,
        status,
        ctype,
        if bodyless { 0 } else { body.len() },
        persist,
    );
    if method != Method::Head && !bodyless {
        out.extend_from_slice(body);
    }
}

fn content_type(path: &Path) -> &'static str {
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(|e| e.to_ascii_lowercase())
        .as_deref()
    {
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("svg") => "image/svg+xml",
        Some("html" | "htm") => "text/html; charset=utf-8",
        Some("css") => "text/css",
        Some("js") => "text/javascript",
        Some("json") => "application/json",
        Some("txt") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// Percent-decodes a path; `None` for bad escapes, NUL, or an encoded `/` or `\`
/// (which would let `..%2f` pass a segment check).
fn decode_path(p: &[u8]) -> Option<String> {
    let mut out = Vec::with_capacity(p.len());
    for (i, segment) in p.split(|&b| b == b'/').enumerate() {
        let decoded = stampede_wire::percent::decode(segment)?;
        if decoded.iter().any(|&b| b == b'/' || b == b'\\' || b == 0) {
            return None;
        }
        if i > 0 {
            out.push(b'/');
        }
        out.extend_from_slice(&decoded);
    }
    String::from_utf8(out).ok()
}

/// Resolves `/static/<rel>` under `dir`; `None` for anything that could leave it.
pub fn resolve_static(dir: &Path, rel: &[u8]) -> Option<PathBuf> {
    let rel = decode_path(rel)?;
    let rel_path = Path::new(&rel);
    if rel.is_empty()
        || rel_path
            .components()
            .any(|c| !matches!(c, Component::Normal(_)))
    {
        return None;
    }
    let full = dir.join(rel_path);
    // Symbolic links inside the directory must not lead out of it either.
    let canon = full.canonicalize().ok()?;
    let root = dir.canonicalize().ok()?;
    (canon.starts_with(&root) && canon.is_file()).then_some(canon)
}

/// Longest `/cpu/<us>` busy time: one second.
pub const MAX_CPU_US: u64 = 1_000_000;

/// Keeps the thread busy for `d`, so that `/cpu/<us>` costs the server a known
/// amount of CPU per answer: a server of known capacity (one thread at `/cpu/200`
/// answers at most 5,000 req/s) for checking capacity searches and limit verdicts.
/// It spins on the monotonic clock: on a core of its own, as such a server is run,
/// that is its CPU time.
fn spin(d: std::time::Duration) {
    let end = std::time::Instant::now() + d;
    while std::time::Instant::now() < end {
        std::hint::spin_loop();
    }
}

fn digits(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 12 || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s.iter().fold(0u64, |a, &d| a * 10 + (d - b'0') as u64))
}

/// `/shop/…`: the journeys' shop ([`crate::shop`]).
#[inline(never)]
fn shop(req: &Request, rest: &[u8], ctx: &mut Ctx, out: &mut impl Respond) -> Routed {
    let status = crate::shop::answer(req, rest, &mut ctx.scratch);
    out.respond(status, "application/json", &ctx.scratch);
    Routed::Written
}

/// Routes one request, handing its response to `out` unless it is deferred.
pub fn route(req: &Request, ctx: &mut Ctx, out: &mut impl Respond) -> Routed {
    let text = "text/plain";
    let json = "application/json";
    let mut send = |status: u16, ctype: &str, body: &[u8]| {
        out.respond(status, ctype, body);
        Routed::Written
    };
    if req.method == Method::Other || (req.method == Method::Post && !req.path.starts_with(b"/v1/"))
    {
        if let Some(rest) = req.path.strip_prefix(b"/shop/") {
            return shop(req, rest, ctx, out);
        }
        return send(405, text, b"method not allowed\n");
    }
    match req.path {
        b"/v1/models" => send(200, json, crate::llm::MODELS),
        // An OpenAI-compatible server's liveness probe, as vLLM answers it.
        b"/health" => send(200, json, b""),
        b"/v1/completions" | b"/v1/chat/completions" => llm(req, ctx, out),
        b"/metrics" => {
            let body = ctx.llm_metrics.render();
            send(200, "text/plain; version=0.0.4", body.as_bytes())
        }
        b"/v1/embeddings" => {
            let (status, body) = match crate::llm::embeddings(req.body) {
                Ok(b) => (200, b),
                Err(why) => (
                    400,
                    format!("{{\"error\":{{\"message\":\"{why}\",\"type\":\"invalid_request_error\"}}}}")
                        .into_bytes(),
                ),
            };
            send(status, json, &body)
        }
        b"/pong" => send(200, text, b"PONG"),
        b"/plaintext" => send(200, text, b"Hello, World!"),
        b"/json" => send(200, json, b"{\"message\":\"Hello, World!\"}"),
        b"/backend" => send(200, text, BACKEND),
        b"/chat" => send(200, json, CHAT),
        b"/perf" => {
            ctx.counter += 1;
            ctx.scratch.clear();
            let _ = write!(
                ctx.scratch,
                "{{\"endpoint\":\"perf\",\"thread\":{},\"request\":{},\"message\":\"stampede reference server\"}}",
                ctx.thread, ctx.counter
            );
            send(200, json, &ctx.scratch)
        }
        b"/quacker" => match query_param(req.query, b"i") {
            None => send(400, text, b"missing query parameter i\n"),
            Some(id) => match ctx.store.lookup(id) {
                None => send(404, text, b"unknown user id\n"),
                Some(u) => {
                    ctx.scratch.clear();
                    ctx.scratch.extend_from_slice(b"{\"id\":\"");
                    ctx.scratch.extend_from_slice(id);
                    let _ = write!(ctx.scratch, "\",\"n\":{}}}", u.quacks);
                    send(200, json, &ctx.scratch)
                }
            },
        },
        b"/biteq" => match query_param(req.query, b"i") {
            None => send(400, text, b"missing query parameter i\n"),
            Some(id) if !valid_id(id) => send(404, text, b"unknown user id\n"),
            Some(id) => {
                let mut key = [0u8; 14];
                key.copy_from_slice(id);
                Routed::Later(Deferred::Biteq(key))
            }
        },
        b"/FiringGeometry.png" => serve_file(ctx, out, b"FiringGeometry.png"),
        p if p.starts_with(b"/static/") => serve_file(ctx, out, &p[8..]),
        p if p.starts_with(b"/delay/") => match digits(&p[7..]) {
            Some(ms) if ms <= MAX_DELAY_MS => Routed::Later(Deferred::Delay(ms)),
            _ => send(400, text, b"delay must be 0 to 60000 ms\n"),
        },
        p if p.starts_with(b"/sse/") || p.starts_with(b"/stream/") => {
            let sse = p.starts_with(b"/sse/");
            let n = digits(&p[if sse { 5 } else { 8 }..]);
            let param = |name: &[u8], default: u64| match query_param(req.query, name) {
                None => Some(default),
                Some(v) => digits(v),
            };
            match (n, param(b"gap", 10), param(b"first", 0)) {
                (Some(n), Some(gap), Some(first))
                    if n <= MAX_EVENTS
                        && (1..=MAX_DELAY_MS).contains(&gap)
                        && first <= MAX_DELAY_MS =>
                {
                    if req.http10 {
                        return send(400, text, b"streams are chunked: HTTP/1.1 only\n");
                    }
                    let ctype = if sse {
                        "text/event-stream"
                    } else {
                        "text/plain"
                    };
                    if !out.stream_head(ctype) {
                        return Routed::Written;
                    }
                    ctx.counter += 1;
                    Routed::Later(Deferred::Feed(Feed {
                        kind: if sse { FeedKind::Sse } else { FeedKind::Chunks },
                        n: n as u32,
                        gap: std::time::Duration::from_millis(gap),
                        first: std::time::Duration::from_millis(first),
                        id: ctx.counter as u32,
                        pace: crate::feed::Pace::Fixed,
                    }))
                }
                _ => send(
                    400,
                    text,
                    b"stream: 0 to 1000000 events, gap 1 to 60000 ms, first 0 to 60000 ms\n",
                ),
            }
        }
        p if p.starts_with(b"/cpu/") => match digits(&p[5..]) {
            Some(us) if us <= MAX_CPU_US => {
                spin(std::time::Duration::from_micros(us));
                send(200, text, b"PONG")
            }
            _ => send(400, text, b"cpu must be 0 to 1000000 us\n"),
        },
        p if p.starts_with(b"/bytes/") => match digits(&p[7..]) {
            Some(n) if n as usize <= MAX_BYTES => {
                out.respond_pattern(n as usize);
                Routed::Written
            }
            _ => send(400, text, b"bytes must be 0 to 67108864\n"),
        },
        p if p.starts_with(b"/status/") => match digits(&p[8..]) {
            Some(code) if (200..=599).contains(&code) => {
                let body = format!("status {code}\n");
                send(code as u16, text, body.as_bytes())
            }
            _ => send(400, text, b"status must be 200 to 599\n"),
        },
        p if p.starts_with(b"/shop/") => shop(req, &p[6..], ctx, out),
        _ => send(404, text, b"not found\n"),
    }
}

/// A completion from the mock LLM (see [`crate::llm`]): its head now, its tokens on
/// their timers.
#[cold]
fn llm(req: &Request, ctx: &mut Ctx, out: &mut impl Respond) -> Routed {
    use crate::llm::{read_request, Api};
    if req.method != Method::Post {
        out.respond(405, "text/plain", b"completions are asked for with POST\n");
        return Routed::Written;
    }
    let api = if req.path == b"/v1/completions" {
        Api::Completions
    } else {
        Api::Chat
    };
    let asked = match read_request(api, req.body, &ctx.llm) {
        Ok(a) => a,
        Err(why) => {
            ctx.scratch.clear();
            let _ = write!(
                ctx.scratch,
                "{{\"error\":{{\"message\":\"{why}\",\"type\":\"invalid_request_error\"}}}}"
            );
            out.respond(400, "application/json", &ctx.scratch);
            return Routed::Written;
        }
    };
    let now = std::time::Instant::now();
    ctx.counter += 1;
    let n = if asked.stream { asked.max_tokens } else { 1 };
    let feed = match ctx.engine.as_mut() {
        Some(e) => {
            let blocks = match ctx.llm.engine {
                Some(c) if c.prefix_cache => crate::llm::prompt_blocks(api, req.body, c.block),
                _ => Vec::new(),
            };
            let Some(seq) = e.admit(now, asked.prompt_tokens, asked.max_tokens, blocks) else {
                out.respond(429, "application/json", b"{\"error\":{\"message\":\"the engine holds as many requests as it takes\",\"type\":\"overloaded\"}}");
                return Routed::Written;
            };
            let first = e
                .poll(seq, 1, now)
                .map_or(std::time::Duration::ZERO, |at| at - now);
            Feed {
                kind: FeedKind::Llm(asked),
                n,
                gap: std::time::Duration::ZERO,
                first,
                id: ctx.counter as u32,
                pace: Pace::Engine { seq },
            }
        }
        None => {
            let (ttft, itl) = ctx.batch.begin(&ctx.llm, asked.max_tokens, now);
            let first = if asked.stream {
                ttft
            } else {
                ttft + itl * (asked.max_tokens - 1)
            };
            Feed {
                kind: FeedKind::Llm(asked),
                n,
                gap: itl,
                first,
                id: ctx.counter as u32,
                pace: Pace::Fixed,
            }
        }
    };
    let ctype = if asked.stream {
        "text/event-stream"
    } else {
        "application/json"
    };
    if !out.stream_head(ctype) {
        return Routed::Written;
    }
    Routed::Later(Deferred::Feed(feed))
}

fn serve_file(ctx: &mut Ctx, out: &mut impl Respond, rel: &[u8]) -> Routed {
    match ctx.static_dir.as_deref() {
        None if rel == b"FiringGeometry.png" => out.respond(200, "image/png", FIRING_GEOMETRY),
        None => out.respond(404, "text/plain", b"not found\n"),
        Some(dir) => match resolve_static(dir, rel) {
            None => out.respond(404, "text/plain", b"not found\n"),
            Some(p) => match crate::files::get(&p) {
                Ok(body) => out.respond_file(content_type(&p), body),
                Err(FileError::Missing) => out.respond(404, "text/plain", b"not found\n"),
                Err(FileError::TooLarge) => {
                    out.respond(500, "text/plain", b"file too large to serve\n")
                }
            },
        },
    }
    Routed::Written
}

/// The body of a `/biteq` answer: the ID and 48 bits of its FNV-1a hash (27 bytes).
pub fn biteq_body(id: &[u8; 14]) -> [u8; 27] {
    let h = crate::store::fnv1a(id) & 0xffff_ffff_ffff;
    let mut b = [0u8; 27];
    b[..14].copy_from_slice(id);
    b[14] = b':';
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for i in 0..12 {
        b[15 + i] = HEX[((h >> (44 - 4 * i)) & 0xf) as usize];
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_match_the_reference_experiments() {
        assert_eq!(BACKEND.len(), 31);
        assert_eq!(CHAT.len(), 35);
        assert_eq!(FIRING_GEOMETRY.len(), 50_991);
        assert_eq!(&FIRING_GEOMETRY[..8], b"\x89PNG\r\n\x1a\n");
        assert_eq!(biteq_body(b"b9ogpt96K0NmkI").len(), 27);
    }

    #[test]
    fn traversal_never_escapes() {
        let dir = std::env::temp_dir().join(format!("stampede-static-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/a.txt"), b"a").unwrap();
        assert!(resolve_static(&dir, b"sub/a.txt").is_some());
        assert!(resolve_static(&dir, b"sub%2fa.txt").is_none());
        for bad in [
            &b"../etc/passwd"[..],
            b"%2e%2e/etc/passwd",
            b"%2E%2E%2Fetc%2Fpasswd",
            b"sub/../../x",
            b"/etc/passwd",
            b"..%5c..%5cx",
            b"sub/%00",
            b"sub/a%+5.txt",
            b"sub/%-1a.txt",
            b"",
        ] {
            assert!(
                resolve_static(&dir, bad).is_none(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
