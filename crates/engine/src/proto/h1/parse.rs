//! Incremental HTTP/1.x response parsing, in place.
//!
//! Workers read into one shared buffer per thread and feed slices of it to a
//! [`ResponseParser`], which keeps per-connection state only: the framing of the body
//! being read and, rarely, the bytes of a response head split across two reads. Bodies
//! are counted, never copied. The parser handles Content-Length, chunked (with
//! extensions and trailers) and close-delimited bodies, HTTP/1.0 replies, interim 1xx
//! responses, HEAD and 204/304; anything else is a [`ParseError`], never a panic.
//! For a check of the answers rather than a load run, [`ResponseParser::keep_responses`]
//! keeps the final response's headers and its body, de-chunked.

use crate::proto::watch::{Progress, StreamMode, Watch};

/// Largest response head accepted (status line plus headers).
pub const MAX_HEAD: usize = 64 * 1024;
const MAX_HEADERS: usize = 96;

/// Why a response broke the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The status line or a header line is malformed.
    #[error("malformed response head")]
    Head,
    /// The head is larger than [`MAX_HEAD`] or has too many headers.
    #[error("response head too large")]
    HeadTooLarge,
    /// Content-Length is not a number, or appears twice with different values.
    #[error("invalid Content-Length")]
    ContentLength,
    /// A chunk size line or chunk delimiter is malformed.
    #[error("malformed chunked body")]
    Chunk,
    /// The server answered 101 Switching Protocols, which was not asked for.
    #[error("unexpected protocol switch")]
    Upgrade,
    /// Bytes came that no request asked for, or a second answer to one request.
    #[error("a response no request asked for")]
    Unsolicited,
    /// A watched body broke its format: a server-sent event (or one of its lines)
    /// over the size limit, or an OpenAI stream's event that is not a chunk object
    /// (see [`crate::StreamMode`]).
    #[error("a streamed event over the size limit or malformed")]
    Event,
}

/// A response read to its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completed {
    /// The final status code (interim 1xx responses are skipped).
    pub status: u16,
    /// Bytes of the response head(s), 1xx heads included.
    pub head_bytes: u64,
    /// Bytes after the head, as on the wire (chunk framing included, as ab counts).
    pub body_bytes: u64,
    /// Whether the connection may carry another request.
    pub keep_alive: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    Size { value: u64, digits: u8 },
    Ext,
    Data(u64),
    DataCr,
    DataLf,
    Trailer { line: u32 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Head,
    Length(u64),
    Chunked(Chunk),
    UntilClose,
}

/// Per-connection parser state.
#[derive(Debug)]
pub struct ResponseParser {
    state: State,
    partial: Vec<u8>,
    head_request: bool,
    status: u16,
    keep_alive: bool,
    head_bytes: u64,
    body_bytes: u64,
    capture_server: bool,
    server: Option<String>,
    chunk_size: u64,
    /// The last response's headers and body, when asked for.
    kept: Option<Box<Kept>>,
    /// Each final response's body watched as it arrives, when the run times streams.
    watch: Option<Box<Watch>>,
}

/// A response's header fields and body bytes, kept whole (see
/// [`ResponseParser::keep_responses`]).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Kept {
    /// Header fields of the final response, in order, with the head they were read
    /// from.
    pub headers: Fields,
    /// The body, chunk framing removed, [`crate::MAX_KEPT_BODY`] at most.
    pub body: Vec<u8>,
    /// Some of the body was left out, past the most kept.
    pub cut: bool,
}

impl Kept {
    /// The final response's head as received: status line, header lines and the
    /// blank line that ends them (HTTP/2's and HTTP/3's fields as header lines).
    pub fn head(&self) -> &[u8] {
        self.headers.text.as_bytes()
    }
}

/// A response's header fields, kept as the head's text and where each name and value
/// lies in it: one copy of the head, read once, not two strings a field.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Fields {
    /// The head (bytes that are not UTF-8 replaced by U+FFFD).
    text: String,
    /// Each field's name and value, as byte ranges of `text`.
    spans: Vec<[u32; 4]>,
}

/// The ends of a name or value with the spaces and tabs around it left out.
fn trimmed(b: &[u8], mut from: usize, mut to: usize) -> (usize, usize) {
    while from < to && matches!(b[from], b' ' | b'\t') {
        from += 1;
    }
    while to > from && matches!(b[to - 1], b' ' | b'\t' | b'\r') {
        to -= 1;
    }
    (from, to)
}

impl Fields {
    /// The fields of a whole head (status line and header lines, as the parser
    /// accepted it), reusing this value's room; false (and no fields) when it has no
    /// status line.
    pub fn read_head(&mut self, head: &[u8]) -> bool {
        self.text.clear();
        self.spans.clear();
        match std::str::from_utf8(head) {
            Ok(s) => self.text.push_str(s),
            Err(_) => self.text.push_str(&String::from_utf8_lossy(head)),
        }
        let t = self.text.as_bytes();
        let mut lines = memchr::memchr_iter(b'\n', t);
        let Some(status_end) = lines.next() else {
            return false;
        };
        let mut at = status_end + 1;
        for end in lines.chain(std::iter::once(t.len())) {
            let (from, to) = trimmed(t, at, end);
            if from == to {
                break;
            }
            if let Some(colon) = memchr::memchr(b':', &t[from..to]) {
                let (n0, n1) = trimmed(t, from, from + colon);
                let (v0, v1) = trimmed(t, from + colon + 1, to);
                self.spans
                    .push([n0 as u32, n1 as u32, v0 as u32, v1 as u32]);
            }
            at = end + 1;
        }
        true
    }

    /// Takes the head whose fields' places the parser has just written into `spans`
    /// (read again where the head is not UTF-8, its text then being another length).
    fn adopt_head(&mut self, head: &[u8]) -> bool {
        match std::str::from_utf8(head) {
            Ok(s) => {
                self.text.clear();
                self.text.push_str(s);
                true
            }
            Err(_) => self.read_head(head),
        }
    }

    /// Fields from names and values (HTTP/2's and HTTP/3's), written as header lines.
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Fields {
        let mut f = Fields::default();
        for (n, v) in pairs {
            let at = f.text.len() as u32;
            f.text.push_str(n);
            f.text.push_str(": ");
            let vat = f.text.len() as u32;
            f.text.push_str(v);
            f.text.push_str("\r\n");
            f.spans
                .push([at, at + n.len() as u32, vat, vat + v.len() as u32]);
        }
        f
    }

    /// Each field's name and value, in order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&str, &str)> + '_ {
        let t = self.text.as_str();
        (self.spans.iter()).map(move |&[n0, n1, v0, v1]| {
            (&t[n0 as usize..n1 as usize], &t[v0 as usize..v1 as usize])
        })
    }

    /// The first value of the field `name` (any case).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    }

    /// How many fields.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }
}

struct Head {
    status: u16,
    len: usize,
    framing: State,
    keep_alive: bool,
}

impl ResponseParser {
    /// A parser for responses to requests of the given kind (HEAD responses carry no body).
    pub fn new(head_request: bool) -> ResponseParser {
        ResponseParser {
            state: State::Head,
            partial: Vec::new(),
            head_request,
            status: 0,
            keep_alive: true,
            head_bytes: 0,
            body_bytes: 0,
            capture_server: false,
            server: None,
            chunk_size: 0,
            kept: None,
            watch: None,
        }
    }

    /// Watches each final response's body as it arrives from now on (see
    /// [`ResponseParser::take_progress`]).
    pub(crate) fn watch(&mut self, mode: StreamMode, counter: Option<crate::TokenCounter>) {
        self.watch = Some(Box::new(Watch::new(mode, counter)));
    }

    /// A watched body begins (out of line: only runs that time streams come here).
    #[cold]
    #[inline(never)]
    fn start_watch(&mut self) {
        if let Some(w) = &mut self.watch {
            w.start();
        }
    }

    /// What the body being read brought since the last call (when watching).
    #[inline]
    pub(crate) fn take_progress(&mut self) -> Option<Progress> {
        self.watch.as_mut()?.take()
    }

    /// Keeps each final response's headers and body from now on, for
    /// [`ResponseParser::take_kept`] once it completes.
    pub fn keep_responses(&mut self) {
        self.kept = Some(Box::default());
    }

    /// The headers and body of the response completed last (when keeping).
    pub fn take_kept(&mut self) -> Option<Kept> {
        self.kept.as_mut().map(|k| std::mem::take(&mut **k))
    }

    /// A kept response its reader is done with: its room is used for the next one,
    /// unless the next has begun in room of its own.
    pub fn recycle(&mut self, mut done: Kept) {
        let Some(k) = self.kept.as_mut() else {
            return;
        };
        let fresh = k.headers.text.capacity() == 0
            && k.headers.spans.capacity() == 0
            && k.body.capacity() == 0;
        if fresh {
            done.headers.text.clear();
            done.headers.spans.clear();
            done.body.clear();
            done.cut = false;
            **k = done;
        }
    }

    /// Sets whether the next responses answer HEAD requests (no body), for connections
    /// whose requests change from one to the next (session scripts).
    pub fn set_head_request(&mut self, head_request: bool) {
        self.head_request = head_request;
    }

    /// Asks the parser to keep the value of the next response's Server header.
    pub fn capture_server(&mut self) {
        self.capture_server = true;
    }

    /// The Server header captured after [`ResponseParser::capture_server`], if any.
    pub fn take_server(&mut self) -> Option<String> {
        self.server.take()
    }

    /// True when no byte of the next response has been seen yet.
    pub fn at_response_start(&self) -> bool {
        self.state == State::Head && self.partial.is_empty() && self.head_bytes == 0
    }

    /// Forgets any partial response (the connection is being closed).
    pub fn reset(&mut self) {
        self.state = State::Head;
        self.partial.clear();
        self.head_bytes = 0;
        self.body_bytes = 0;
    }

    /// Feeds bytes; returns how many were consumed and the response they completed, if
    /// any. Call again with the rest while bytes remain (pipelined responses).
    #[inline]
    pub fn feed(&mut self, data: &[u8]) -> Result<(usize, Option<Completed>), ParseError> {
        match self.state {
            State::Head => self.feed_head(data),
            State::Length(rem) => {
                let take = rem.min(data.len() as u64);
                self.body_bytes += take;
                if let Some(k) = &mut self.kept {
                    k.cut |= crate::proto::keep_body(&mut k.body, &data[..take as usize]);
                }
                if let Some(w) = &mut self.watch {
                    watched(w, &data[..take as usize])?;
                }
                let rem = rem - take;
                if rem == 0 {
                    Ok((take as usize, Some(self.finish())))
                } else {
                    self.state = State::Length(rem);
                    Ok((take as usize, None))
                }
            }
            State::UntilClose => {
                self.body_bytes += data.len() as u64;
                if let Some(k) = &mut self.kept {
                    k.cut |= crate::proto::keep_body(&mut k.body, data);
                }
                if let Some(w) = &mut self.watch {
                    watched(w, data)?;
                }
                Ok((data.len(), None))
            }
            State::Chunked(c) => self.feed_chunked(c, data),
        }
    }

    /// The peer closed the connection: completes a close-delimited body, or reports
    /// `Ok(None)` when the response was incomplete (the caller counts it as closed).
    pub fn eof(&mut self) -> Option<Completed> {
        if self.state == State::UntilClose {
            self.keep_alive = false;
            Some(self.finish())
        } else {
            None
        }
    }

    fn finish(&mut self) -> Completed {
        let c = Completed {
            status: self.status,
            head_bytes: self.head_bytes,
            body_bytes: self.body_bytes,
            keep_alive: self.keep_alive,
        };
        self.state = State::Head;
        self.head_bytes = 0;
        self.body_bytes = 0;
        c
    }

    #[inline]
    fn feed_head(&mut self, data: &[u8]) -> Result<(usize, Option<Completed>), ParseError> {
        if self.partial.is_empty() {
            let kept = self.kept.as_deref_mut();
            match parse_head_kept(data, self.head_request, self.capture_server, kept)? {
                Some((head, server)) if self.kept.is_some() => {
                    self.keep_head(&data[..head.len]);
                    let used = head.len;
                    Ok((used, self.accept_head(head, server)))
                }
                Some((head, server)) => {
                    let used = head.len;
                    Ok((used, self.accept_head(head, server)))
                }
                None if data.len() >= MAX_HEAD => Err(ParseError::HeadTooLarge),
                None => {
                    self.partial.extend_from_slice(data);
                    Ok((data.len(), None))
                }
            }
        } else {
            let before = self.partial.len();
            let take = data.len().min(MAX_HEAD + 1 - before.min(MAX_HEAD));
            self.partial.extend_from_slice(&data[..take]);
            let partial = std::mem::take(&mut self.partial);
            let kept = self.kept.as_deref_mut();
            let parsed = parse_head_kept(&partial, self.head_request, self.capture_server, kept);
            self.partial = partial;
            match parsed? {
                Some((head, server)) => {
                    let used = head.len - before;
                    if self.kept.is_some() {
                        let partial = std::mem::take(&mut self.partial);
                        self.keep_head(&partial[..head.len]);
                        self.partial = partial;
                    }
                    self.partial.clear();
                    Ok((used, self.accept_head(head, server)))
                }
                None if self.partial.len() > MAX_HEAD => Err(ParseError::HeadTooLarge),
                None => Ok((take, None)),
            }
        }
    }

    /// Keeps the header fields of a complete head (an interim 1xx head's are replaced
    /// by the final one's), and starts its body afresh.
    #[cold]
    fn keep_head(&mut self, head: &[u8]) {
        if let Some(k) = self.kept.as_mut() {
            if k.headers.adopt_head(head) {
                k.body.clear();
                k.cut = false;
            }
        }
    }

    /// Takes a parsed head; returns the response if it has no body.
    #[inline]
    fn accept_head(&mut self, head: Head, server: Option<String>) -> Option<Completed> {
        self.head_bytes += head.len as u64;
        if (100..200).contains(&head.status) {
            // Interim response: its bytes count, the final response follows.
            return None;
        }
        if server.is_some() || self.capture_server {
            self.server = server;
            self.capture_server = false;
        }
        self.status = head.status;
        self.keep_alive = head.keep_alive;
        self.body_bytes = 0;
        if self.watch.is_some() {
            self.start_watch();
        }
        self.state = head.framing;
        match head.framing {
            State::Head | State::Length(0) => {
                self.state = State::Head;
                Some(self.finish())
            }
            _ => None,
        }
    }

    fn feed_chunked(
        &mut self,
        mut c: Chunk,
        data: &[u8],
    ) -> Result<(usize, Option<Completed>), ParseError> {
        let mut i = 0;
        while i < data.len() {
            let b = data[i];
            match c {
                Chunk::Data(rem) => {
                    let take = rem.min((data.len() - i) as u64);
                    if let Some(k) = &mut self.kept {
                        let piece = &data[i..i + take as usize];
                        k.cut |= crate::proto::keep_body(&mut k.body, piece);
                    }
                    let rem = rem - take;
                    if let Some(w) = &mut self.watch {
                        w.payload(&data[i..i + take as usize])
                            .map_err(|_| ParseError::Event)?;
                        if rem == 0 {
                            w.piece();
                        }
                    }
                    i += take as usize;
                    c = if rem == 0 {
                        Chunk::DataCr
                    } else {
                        Chunk::Data(rem)
                    };
                    continue;
                }
                Chunk::Size { value, digits } => {
                    let d = match b {
                        b'0'..=b'9' => Some(b - b'0'),
                        b'a'..=b'f' => Some(b - b'a' + 10),
                        b'A'..=b'F' => Some(b - b'A' + 10),
                        _ => None,
                    };
                    c = match (d, b) {
                        (Some(d), _) => {
                            if digits >= 15 {
                                return Err(ParseError::Chunk);
                            }
                            Chunk::Size {
                                value: value * 16 + d as u64,
                                digits: digits + 1,
                            }
                        }
                        (None, _) if digits == 0 => return Err(ParseError::Chunk),
                        (None, b';' | b' ' | b'\t' | b'\r') => {
                            self.chunk_size = value;
                            Chunk::Ext
                        }
                        (None, b'\n') => size_done(value),
                        _ => return Err(ParseError::Chunk),
                    };
                }
                Chunk::Ext => {
                    if b == b'\n' {
                        c = size_done(self.chunk_size);
                    }
                }
                Chunk::DataCr => {
                    c = match b {
                        b'\r' => Chunk::DataLf,
                        b'\n' => Chunk::Size {
                            value: 0,
                            digits: 0,
                        },
                        _ => return Err(ParseError::Chunk),
                    }
                }
                Chunk::DataLf => {
                    if b != b'\n' {
                        return Err(ParseError::Chunk);
                    }
                    c = Chunk::Size {
                        value: 0,
                        digits: 0,
                    };
                }
                Chunk::Trailer { line } => {
                    c = match b {
                        b'\n' if line == 0 => {
                            i += 1;
                            self.body_bytes += i as u64;
                            return Ok((i, Some(self.finish())));
                        }
                        b'\n' => Chunk::Trailer { line: 0 },
                        b'\r' => Chunk::Trailer { line },
                        _ if line as usize >= MAX_HEAD => return Err(ParseError::HeadTooLarge),
                        _ => Chunk::Trailer { line: line + 1 },
                    }
                }
            }
            i += 1;
        }
        self.body_bytes += i as u64;
        self.state = State::Chunked(c);
        Ok((i, None))
    }
}

/// Unframed body bytes (a Content-Length or close-delimited body) for the watch: the
/// bytes of one read are one piece.
#[inline(never)]
fn watched(w: &mut Watch, bytes: &[u8]) -> Result<(), ParseError> {
    if !bytes.is_empty() {
        w.payload(bytes).map_err(|_| ParseError::Event)?;
        w.piece();
    }
    Ok(())
}

fn size_done(size: u64) -> Chunk {
    if size == 0 {
        Chunk::Trailer { line: 0 }
    } else {
        Chunk::Data(size)
    }
}

fn has_token(value: &[u8], token: &str) -> bool {
    value
        .split(|&b| b == b',')
        .any(|t| t.trim_ascii().eq_ignore_ascii_case(token.as_bytes()))
}

/// Parses a complete head at the start of `data`, or returns `Ok(None)` if more bytes
/// are needed.
/// Where a parsed head's fields' places go: nowhere, for a load run's answers, or a
/// kept response's list. Chosen at compile time, so the load path pays nothing a
/// field for the places it does not keep.
trait FieldPlaces {
    fn clear(&mut self);
    fn push(&mut self, place: [u32; 4]);
}

impl FieldPlaces for () {
    #[inline(always)]
    fn clear(&mut self) {}
    #[inline(always)]
    fn push(&mut self, _: [u32; 4]) {}
}

impl FieldPlaces for Vec<[u32; 4]> {
    fn clear(&mut self) {
        Vec::clear(self);
    }
    fn push(&mut self, place: [u32; 4]) {
        Vec::push(self, place);
    }
}

/// `parse_head` writing the places where `kept` says: into its fields' list when a
/// response is kept.
fn parse_head_kept(
    data: &[u8],
    head_request: bool,
    capture_server: bool,
    kept: Option<&mut Kept>,
) -> Result<Option<(Head, Option<String>)>, ParseError> {
    match kept {
        Some(k) => parse_head(data, head_request, capture_server, &mut k.headers.spans),
        None => parse_head(data, head_request, capture_server, &mut ()),
    }
}

fn parse_head<P: FieldPlaces>(
    data: &[u8],
    head_request: bool,
    capture_server: bool,
    places: &mut P,
) -> Result<Option<(Head, Option<String>)>, ParseError> {
    // Left uninitialised: httparse fills what it uses, and zeroing 96 headers would
    // cost every response a 3 KiB memset.
    let mut headers = [const { std::mem::MaybeUninit::uninit() }; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut []);
    let parsed = httparse::ParserConfig::default().parse_response_with_uninit_headers(
        &mut resp,
        data,
        &mut headers,
    );
    let len = match parsed {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(ParseError::HeadTooLarge),
        Err(_) => return Err(ParseError::Head),
    };
    let status = resp.code.ok_or(ParseError::Head)?;
    if status == 101 {
        return Err(ParseError::Upgrade);
    }
    let http11 = resp.version == Some(1);
    let mut content_length: Option<u64> = None;
    let mut chunked = false;
    let mut has_te = false;
    let mut close = false;
    let mut keep_alive_token = false;
    let mut server = None;
    places.clear();
    let base = data.as_ptr() as usize;
    for h in resp.headers.iter() {
        let name = h.name.as_bytes();
        // Where the field lies in the head, for a response kept whole.
        let (n, v) = (
            h.name.as_ptr() as usize - base,
            h.value.as_ptr() as usize - base,
        );
        places.push([
            n as u32,
            (n + name.len()) as u32,
            v as u32,
            (v + h.value.len()) as u32,
        ]);
        if name.eq_ignore_ascii_case(b"content-length") {
            let v = std::str::from_utf8(h.value)
                .ok()
                .map(str::trim)
                .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|v| v.parse::<u64>().ok())
                .ok_or(ParseError::ContentLength)?;
            if content_length.is_some_and(|c| c != v) {
                return Err(ParseError::ContentLength);
            }
            content_length = Some(v);
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            has_te = true;
            // Only the last coding decides whether the body is chunked.
            chunked = h
                .value
                .rsplit(|&b| b == b',')
                .next()
                .is_some_and(|t| t.trim_ascii().eq_ignore_ascii_case(b"chunked"));
        } else if name.eq_ignore_ascii_case(b"connection") {
            close |= has_token(h.value, "close");
            keep_alive_token |= has_token(h.value, "keep-alive");
        } else if capture_server && name.eq_ignore_ascii_case(b"server") {
            server = Some(String::from_utf8_lossy(h.value).into_owned());
        }
    }
    let keep_alive = if http11 {
        !close
    } else {
        keep_alive_token && !close
    };
    let bodyless = head_request || (100..200).contains(&status) || status == 204 || status == 304;
    let (framing, keep_alive) = if bodyless {
        (State::Head, keep_alive)
    } else if has_te {
        if chunked {
            (
                State::Chunked(Chunk::Size {
                    value: 0,
                    digits: 0,
                }),
                keep_alive,
            )
        } else {
            (State::UntilClose, false)
        }
    } else if let Some(n) = content_length {
        (State::Length(n), keep_alive)
    } else {
        (State::UntilClose, false)
    };
    Ok(Some((
        Head {
            status,
            len,
            framing,
            keep_alive,
        },
        server,
    )))
}

#[cfg(test)]
mod tests;
