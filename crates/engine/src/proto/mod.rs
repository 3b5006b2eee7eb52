//! One protocol value per client connection: HTTP/1.1 ([`H1Conn`]), HTTP/2
//! ([`H2Conn`]), HTTP/3 ([`h3::H3Conn`]) or WebSocket ([`ws::WsClient`]), driven the
//! same way.
//!
//! The worker queues requests on a connection's `Proto`, writes what
//! `Proto::output` holds, feeds what it reads, and handles the [`Event`]s that come
//! back without asking which protocol produced them. What differs between the two
//! stays here: HTTP/1 answers in order on one connection at a time and sends the
//! worker's prepared bytes; HTTP/2 opens a stream per request within the server's
//! limit and writes frames of its own; HTTP/3 does the same over QUIC, whose output
//! and input are datagrams and whose timers the worker keeps on its wait. WebSocket
//! answers in order as HTTP/1 does, each request a message, and writes frames of its
//! own.

pub(crate) mod connector;
pub(crate) mod event;
pub mod h1;
pub mod h2;
pub mod h3;
pub(crate) mod watch;
pub mod ws;

pub use crate::proto::event::{Event, Note, Response};
use crate::proto::h1::H1Conn;
use crate::proto::h2::{H2Conn, H2Request, H2Settings};
use crate::proto::h3::H3Conn;

/// The most of an answer's body a connection keeps for whoever reads answers (a
/// journey's captures and checks, a script): the rest is counted as received, not
/// kept, and the kept answer says it was cut.
pub const MAX_KEPT_BODY: usize = 16 * 1024 * 1024;

/// Adds `data` to a kept body, up to [`MAX_KEPT_BODY`]; true when some was left out.
#[inline]
pub(crate) fn keep_body(body: &mut Vec<u8>, data: &[u8]) -> bool {
    let room = MAX_KEPT_BODY.saturating_sub(body.len());
    body.extend_from_slice(&data[..data.len().min(room)]);
    data.len() > room
}

/// A connection's protocol.
pub(crate) enum Proto {
    /// HTTP/1.1 (also while TLS's ALPN has not decided yet).
    H1(H1Conn),
    /// HTTP/2: h2c with prior knowledge, or h2 once ALPN chose it.
    H2(Box<H2Conn>),
    /// HTTP/3 over QUIC.
    H3(Box<H3Conn>),
    /// WebSocket, on an HTTP/1.1 connection it upgrades.
    Ws(Box<ws::WsClient>),
}

/// A connection that carries requests on streams of their own (HTTP/2, HTTP/3): what
/// the worker asks of it when it hands out requests.
pub(crate) trait Multiplexed {
    /// Streams the server allows open at once, as far as known.
    fn stream_limit(&self) -> usize;
    /// Streams open now.
    fn open_streams(&self) -> usize;
    /// Sends `req` on a new stream; its number, or 0 when none could open yet.
    fn request(&mut self, req: &H2Request, repeat: bool) -> u32;
}

impl Multiplexed for H2Conn {
    fn stream_limit(&self) -> usize {
        H2Conn::stream_limit(self)
    }
    fn open_streams(&self) -> usize {
        H2Conn::open_streams(self)
    }
    fn request(&mut self, req: &H2Request, repeat: bool) -> u32 {
        H2Conn::request(self, req, repeat)
    }
}

impl Multiplexed for H3Conn {
    fn stream_limit(&self) -> usize {
        H3Conn::stream_limit(self)
    }
    fn open_streams(&self) -> usize {
        H3Conn::open_streams(self)
    }
    fn request(&mut self, req: &H2Request, _repeat: bool) -> u32 {
        H3Conn::request(self, req)
    }
}

/// A connection whose requests' bodies go message by message after their headers,
/// each call's made for it (gRPC's request streams and call templates): what the
/// worker asks of it when it opens and feeds such calls.
pub(crate) trait MessageStreams: Multiplexed {
    /// Which connection this is, of all the process made: a stream remembered by its
    /// number belongs to the connection of the same epoch only.
    fn epoch(&self) -> u64;
    /// Sends `req` with `body` and header `fields` made for this call, its send side
    /// ended; the stream's number.
    fn request_made(&mut self, req: &H2Request, body: &[u8], fields: &[u8]) -> u32;
    /// Sends `req` with the first of its body, `body`; the rest follows by
    /// [`MessageStreams::send_more`]. The stream's number.
    fn request_open(&mut self, req: &H2Request, repeat: bool, body: &[u8], fields: &[u8]) -> u32;
    /// More of stream `id`'s body (`last` ends it); false when the stream is over.
    fn send_more(&mut self, id: u32, body: &[u8], last: bool) -> bool;
    /// Bytes of stream `id`'s body waiting on flow control.
    fn queued(&self, id: u32) -> usize;
}

impl MessageStreams for H2Conn {
    fn epoch(&self) -> u64 {
        self.epoch
    }
    fn request_made(&mut self, req: &H2Request, body: &[u8], fields: &[u8]) -> u32 {
        H2Conn::request_made(self, req, body, fields)
    }
    fn request_open(&mut self, req: &H2Request, repeat: bool, body: &[u8], fields: &[u8]) -> u32 {
        H2Conn::request_open(self, req, repeat, body, fields)
    }
    fn send_more(&mut self, id: u32, body: &[u8], last: bool) -> bool {
        H2Conn::send_more(self, id, body, last)
    }
    fn queued(&self, id: u32) -> usize {
        H2Conn::queued(self, id)
    }
}

/// Why a connection's input broke it: the kind its requests fail with.
#[derive(Debug)]
pub struct Broken(pub crate::error::ErrorKind);

impl Proto {
    /// The protocol a new connection starts with.
    pub(crate) fn new(http2: Option<H2Settings>, head_request: bool, keepalive: bool) -> Proto {
        if let Some(settings) = http2 {
            Proto::H2(Box::new(H2Conn::with(settings)))
        } else {
            Proto::H1(H1Conn::new(head_request, keepalive))
        }
    }

    /// Whether this connection speaks HTTP/2.
    #[cfg(test)]
    pub(crate) fn speaks_http2(&self) -> bool {
        matches!(self, Proto::H2(_))
    }

    /// Queues `n` requests whose bytes [`Proto::send`] set: HTTP/1 sends them as they
    /// are and answers them in order. HTTP/2 gives requests streams of its own (see
    /// [`Proto::h2`]).
    #[inline]
    pub(crate) fn queue(&mut self, n: usize) {
        match self {
            Proto::H1(h) => h.queue(n as u32),
            Proto::Ws(w) => w.queue(n),
            Proto::H2(_) | Proto::H3(_) => {}
        }
    }

    /// Whether it takes new requests while others are unanswered (HTTP/2, HTTP/3).
    /// HTTP/1 sends a pipeline's batch and takes the next once all of it is answered.
    #[inline]
    pub(crate) fn multiplexed(&self) -> bool {
        matches!(self, Proto::H2(_) | Proto::H3(_))
    }

    /// The server said it is going away (a GOAWAY).
    #[inline]
    pub(crate) fn going_away(&self) -> bool {
        match self {
            Proto::H1(_) | Proto::Ws(_) => false,
            Proto::H2(h) => h.goaway,
            Proto::H3(h) => h.goaway,
        }
    }

    /// The connection's streams whose bodies go message by message (HTTP/2's).
    #[inline]
    pub(crate) fn message_streams(&mut self) -> Option<&mut dyn MessageStreams> {
        match self {
            Proto::H2(h) => Some(&mut **h),
            _ => None,
        }
    }

    /// Queues a message made for its call (`body`, and `fields` its expected
    /// answer), where requests are messages on the connection (WebSocket's); false
    /// where they are not.
    pub(crate) fn queue_made(&mut self, body: &[u8], fields: &[u8]) -> bool {
        match self {
            Proto::Ws(w) => {
                w.queue_made(body, fields);
                true
            }
            _ => false,
        }
    }

    /// Whether queued requests take messages made one by one ([`Proto::queue_made`])
    /// rather than the worker's bytes.
    pub(crate) fn takes_made(&self) -> bool {
        matches!(self, Proto::Ws(_))
    }

    /// Whether the protocol stamps its messages with their requests' intended starts
    /// (WebSocket's `--stamp`), given by [`Proto::due`].
    #[inline]
    pub(crate) fn stamping(&self) -> bool {
        matches!(self, Proto::Ws(w) if w.stamping())
    }

    /// Requests just queued were due at `intended` (see [`Proto::stamping`]).
    pub(crate) fn due(&mut self, intended: impl Iterator<Item = std::time::Instant>) {
        if let Proto::Ws(w) = self {
            w.due(intended);
        }
    }

    /// The send stamp of the message whose answer just came, where messages carry
    /// them.
    pub(crate) fn take_stamp(&mut self) -> Option<stampede_wire::stamp::Stamp> {
        match self {
            Proto::Ws(w) => w.take_stamp(),
            _ => None,
        }
    }

    /// The socket is about to go: the protocol's goodbye is readied for
    /// [`Proto::output`] — QUIC's close always (so that the server lets the
    /// connection go at once); with `goodbye`, WebSocket's close 1000 from an open
    /// connection, and otherwise the close that is due (answering the server's).
    /// True when there is a goodbye to write.
    pub(crate) fn part(&mut self, goodbye: bool, now: std::time::Instant) -> bool {
        match self {
            Proto::H3(h) => {
                h.close(now);
                true
            }
            Proto::Ws(w) => {
                if goodbye && w.open() {
                    w.goodbye(stampede_wire::ws::NORMAL);
                }
                !w.unwritten().is_empty()
            }
            Proto::H1(_) | Proto::H2(_) => false,
        }
    }

    /// Adds what the connection counted of its own to the run's figures (QUIC's,
    /// once its connection is over).
    pub(crate) fn add_figures(&self, rec: &mut crate::measure::recorder::Recorder) {
        if let Proto::H3(h) = self {
            rec.quic.add(&h.figures());
        }
    }

    /// HTTP/1: notes the `Server` header of the next response (reported as
    /// [`Note::Server`]); the others do not look.
    pub(crate) fn capture_server(&mut self) {
        if let Proto::H1(h) = self {
            h.capture_server();
        }
    }

    /// Keeps each response whole, for [`Proto::take_response`] (cookies, redirects,
    /// scripts that read responses). HTTP/2 and HTTP/3 keep what their streams bring,
    /// which is one response's where a connection has one stream at a time.
    pub(crate) fn keep_responses(&mut self) {
        match self {
            Proto::H1(h) => h.keep_responses(),
            Proto::H2(h) => h.keep_responses(),
            Proto::H3(h) => h.keep_responses(),
            Proto::Ws(_) => {}
        }
    }

    /// A response from [`Proto::take_response`] its reader is done with: HTTP/1.1
    /// keeps its room for the next (no allocation a response).
    pub(crate) fn recycle(&mut self, done: h1::parse::Kept) {
        if let Proto::H1(h) = self {
            h.recycle(done);
        }
    }

    /// The last response kept whole, if responses are kept: HTTP/2's and HTTP/3's
    /// fields without their pseudo-fields, written as header lines.
    pub(crate) fn take_response(&mut self) -> Option<h1::parse::Kept> {
        let k = match self {
            Proto::H1(h) => return h.take_response(),
            Proto::H2(h) => std::mem::take(h.kept.as_mut()?),
            Proto::H3(h) => std::mem::take(h.kept.as_mut()?),
            Proto::Ws(_) => return None,
        };
        let (headers, body, cut) = (k.headers, k.body, k.cut);
        Some(h1::parse::Kept {
            headers: h1::parse::Fields::from_pairs(
                (headers.iter())
                    .filter(|(n, _)| !n.starts_with(':'))
                    .map(|(n, v)| (n.as_str(), v.as_str())),
            ),
            body,
            cut,
        })
    }

    /// The requests sent next are HEAD requests (their answers carry no body), or
    /// not: HTTP/1.1 frames answers by it; the others by their own framing.
    pub(crate) fn set_head_request(&mut self, head: bool) {
        if let Proto::H1(h) = self {
            h.set_head_request(head);
        }
    }

    /// What came with the datagram about to be fed: its ECN bits and, where several
    /// came joined (GRO), each one's size.
    pub(crate) fn set_received(&mut self, ecn: Option<quinn_proto::EcnCodepoint>, stride: usize) {
        if let Proto::H3(h) = self {
            h.set_received(ecn, stride);
        }
    }

    /// The TLS session settled on by the protocol's own handshake (QUIC's), where it
    /// has one: TLS 1.3, its protocol named; the cipher suite stays inside QUIC.
    pub(crate) fn own_tls(&self) -> Option<crate::measure::result::TlsSession> {
        match self {
            Proto::H3(_) => Some(crate::measure::result::TlsSession {
                version: Some("TLSv1_3".into()),
                cipher: None,
                alpn: Some("h3".into()),
            }),
            _ => None,
        }
    }

    /// The connection's streams, when it opens one per request within the server's
    /// limit and has not been told to go away (HTTP/1 has no streams to open).
    #[inline]
    pub(crate) fn mux(&mut self) -> Option<&mut dyn Multiplexed> {
        match self {
            Proto::H1(_) | Proto::Ws(_) => None,
            Proto::H2(h) if h.goaway => None,
            Proto::H2(h) => Some(&mut **h),
            Proto::H3(h) if h.goaway => None,
            Proto::H3(h) => Some(&mut **h),
        }
    }

    /// Readies output at `now` before a write (HTTP/3 asks QUIC for its next
    /// datagram then; the others' output is always ready).
    #[inline]
    pub(crate) fn prepare(&mut self, now: std::time::Instant) {
        if let Proto::H3(h) = self {
            h.prepare(now);
        }
    }

    /// HTTP/1: the request bytes to write, as a range of the worker's buffer.
    #[inline]
    pub(crate) fn send(&mut self, range: std::ops::Range<usize>) {
        if let Proto::H1(h) = self {
            h.send(range);
        }
    }

    /// What is left to write (`batch`: the worker's request bytes, for HTTP/1).
    #[inline(always)]
    pub(crate) fn output<'a>(&'a self, batch: &'a [u8]) -> &'a [u8] {
        match self {
            Proto::H1(h) => h.output(batch),
            Proto::H2(h) => h.unwritten(),
            Proto::H3(h) => h.unwritten(),
            Proto::Ws(w) => w.unwritten(),
        }
    }

    /// HTTP/3: the size of each datagram in [`Proto::output`] and their ECN bits
    /// (the others write a byte stream: `None`).
    #[inline]
    pub(crate) fn datagrams(&self) -> Option<(usize, Option<quinn_proto::EcnCodepoint>)> {
        match self {
            Proto::H3(h) => Some((h.segment(), h.ecn())),
            _ => None,
        }
    }

    /// Whether anything is left to write.
    #[inline]
    pub(crate) fn has_output(&self) -> bool {
        match self {
            Proto::H1(h) => h.has_output(),
            Proto::H2(h) => !h.unwritten().is_empty(),
            Proto::H3(h) => h.has_output(),
            Proto::Ws(w) => !w.unwritten().is_empty(),
        }
    }

    /// `n` bytes of [`Proto::output`] were written.
    #[inline]
    pub(crate) fn wrote(&mut self, n: usize) {
        match self {
            Proto::H1(h) => h.wrote(n),
            Proto::H2(h) => h.wrote(n),
            Proto::H3(h) => h.wrote(n),
            Proto::Ws(w) => w.wrote(n),
        }
    }

    /// Feeds bytes read (for HTTP/3, one datagram) at `now`; events are appended,
    /// and notes (seldom: see [`Note`]). `body` is the request body, for HTTP/2
    /// streams waiting on a window. An error means the connection must close (the
    /// events appended before it stand).
    #[inline]
    pub(crate) fn feed(
        &mut self,
        data: &[u8],
        body: &[u8],
        now: std::time::Instant,
        events: &mut Vec<Event>,
        notes: &mut Vec<Note>,
    ) -> Result<(), Broken> {
        use crate::error::ErrorKind;
        match self {
            Proto::H1(h) => {
                let fed = h.feed(data, events).map_err(|e| {
                    Broken(match e {
                        h1::parse::ParseError::Event => ErrorKind::StreamEvent,
                        _ => ErrorKind::Protocol,
                    })
                });
                if let Some(server) = h.take_server() {
                    notes.push(Note::Server(server));
                }
                fed
            }
            Proto::H2(h) => {
                let fed = h.feed(data, body, events);
                header_sizes(h.take_header_sizes(), events);
                for (code, message) in h.take_grpc_messages() {
                    notes.push(Note::GrpcMessage { code, message });
                }
                fed.map_err(|_| Broken(ErrorKind::Protocol))
            }
            Proto::H3(h) => {
                let fed = h.feed(data, now, events);
                header_sizes(h.take_header_sizes(), events);
                if let Some((us, resumed)) = h.take_handshake() {
                    events.push(Event::Handshake { us, resumed });
                }
                fed
            }
            Proto::Ws(w) => {
                let fed = w.feed(data, events);
                if w.take_upgraded() {
                    // Before the messages the same bytes answered: they are timed from
                    // the upgrade.
                    events.insert(0, Event::Upgraded);
                }
                let count = w.take_unmatched();
                if count > 0 {
                    events.push(Event::Unmatched { count });
                }
                if fed.is_err() {
                    // What ended the connection, counted whatever waited on it.
                    notes.push(Note::WsEnded {
                        refused: w.refused(),
                        close: w.close_code(),
                    });
                }
                fed
            }
        }
    }

    /// Watches each response body as it arrives (runs that time streams).
    pub(crate) fn watch(&mut self, mode: watch::StreamMode, counter: Option<crate::TokenCounter>) {
        match self {
            Proto::H1(h) => h.watch(mode, counter),
            Proto::H2(h) => h.watch(mode, counter),
            Proto::H3(h) => h.watch(mode, counter),
            // Validation keeps stream timing off WebSocket runs.
            Proto::Ws(_) => {}
        }
    }

    /// HTTP/1: a response has begun and is not complete (the caller notes when its
    /// first byte came). HTTP/2 and HTTP/3 do not time first bytes: always false.
    #[inline]
    pub(crate) fn mid_response(&self) -> bool {
        match self {
            Proto::H1(h) => h.mid_response(),
            _ => false,
        }
    }

    /// Whether a response is part way in (HTTP/2: on any stream).
    pub(crate) fn receiving(&self) -> bool {
        match self {
            Proto::H1(h) => h.mid_response(),
            Proto::H2(h) => h.receiving(),
            Proto::H3(h) => h.receiving(),
            Proto::Ws(w) => w.receiving(),
        }
    }

    /// When the protocol next needs waking with nothing read (QUIC's loss, ack and
    /// idle timers), if it does. The worker keeps one timer heap for every
    /// connection's.
    #[inline]
    pub(crate) fn next_timeout(&mut self) -> Option<std::time::Instant> {
        match self {
            Proto::H3(h) => h.next_timeout(),
            Proto::H1(_) | Proto::H2(_) | Proto::Ws(_) => None,
        }
    }

    /// Its timer fell due at `now`: what that readied is reported as events (and
    /// left to write); a connection the timer ended is broken.
    pub(crate) fn timeout(
        &mut self,
        now: std::time::Instant,
        events: &mut Vec<Event>,
    ) -> Result<(), Broken> {
        match self {
            Proto::H3(h) => h.timeout(now, events),
            Proto::H1(_) | Proto::H2(_) | Proto::Ws(_) => Ok(()),
        }
    }

    /// Whether the protocol's own handshake is done (QUIC's); one carried by TCP
    /// starts on a connection already open.
    pub(crate) fn handshaken(&self) -> bool {
        match self {
            Proto::H3(h) => h.connected(),
            Proto::H1(_) | Proto::H2(_) | Proto::Ws(_) => true,
        }
    }

    /// The server closed the connection: a close-delimited HTTP/1 body is complete.
    pub(crate) fn eof(&mut self, events: &mut Vec<Event>) {
        if let Proto::H1(h) = self {
            h.eof(events);
        }
    }
}

/// Reports the header bytes a feed brought, if it brought any.
fn header_sizes((compressed, decoded): (u64, u64), events: &mut Vec<Event>) {
    if compressed > 0 || decoded > 0 {
        events.push(Event::HeaderSizes {
            compressed,
            decoded,
        });
    }
}

#[cfg(test)]
mod tests;
