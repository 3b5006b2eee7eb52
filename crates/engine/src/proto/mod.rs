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

pub(crate) mod event;
pub mod h1;
pub mod h2;
pub mod h3;
pub(crate) mod watch;
pub mod ws;

pub use crate::proto::event::{Event, Response};
use crate::proto::h1::H1Conn;
use crate::proto::h2::{H2Conn, H2Request, H2Settings};
use crate::proto::h3::H3Conn;

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
    pub(crate) fn is_h2(&self) -> bool {
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

    /// HTTP/2 on this connection.
    #[inline]
    pub(crate) fn h2(&mut self) -> Option<&mut H2Conn> {
        match self {
            Proto::H2(h) => Some(h),
            _ => None,
        }
    }

    /// HTTP/3 on this connection.
    #[inline]
    pub(crate) fn h3(&mut self) -> Option<&mut H3Conn> {
        match self {
            Proto::H3(h) => Some(h),
            _ => None,
        }
    }

    /// WebSocket on this connection.
    #[inline]
    pub(crate) fn ws(&mut self) -> Option<&mut ws::WsClient> {
        match self {
            Proto::Ws(w) => Some(w),
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
    #[inline]
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

    /// Feeds bytes read (for HTTP/3, one datagram) at `now`; events are appended.
    /// `body` is the request body, for HTTP/2 streams waiting on a window. An error
    /// means the connection must close (the events appended before it stand).
    #[inline]
    pub(crate) fn feed(
        &mut self,
        data: &[u8],
        body: &[u8],
        now: std::time::Instant,
        events: &mut Vec<Event>,
    ) -> Result<(), Broken> {
        use crate::error::ErrorKind;
        match self {
            Proto::H1(h) => h.feed(data, events).map_err(|e| {
                Broken(match e {
                    h1::parse::ParseError::Event => ErrorKind::StreamEvent,
                    _ => ErrorKind::Protocol,
                })
            }),
            Proto::H2(h) => {
                let fed = h.feed(data, body, events);
                header_sizes(h.take_header_sizes(), events);
                fed.map_err(|_| Broken(ErrorKind::Protocol))
            }
            Proto::H3(h) => {
                let fed = h.feed(data, now, events);
                header_sizes(h.take_header_sizes(), events);
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

    /// HTTP/1 on this connection, for what only it has (the Server header capture,
    /// HEAD framing of script steps).
    #[inline]
    pub(crate) fn h1(&mut self) -> Option<&mut H1Conn> {
        match self {
            Proto::H1(h) => Some(h),
            _ => None,
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
