//! WebSocket on a client connection (RFC 6455): the upgrade, then one data message
//! per request and the next data message the server sends as its answer — an echo
//! server's copy, a round trip.
//!
//! The worker drives it as it drives HTTP/1.1: requests are queued, answered in
//! order, and what is to be written is read from [`WsClient::unwritten`]. The
//! connection's first bytes are the upgrade request (the run's request with the
//! upgrade's headers and a fresh key); messages queued before the server's 101 wait
//! for it and go out together once it came, each masked with a key of its own. The
//! 101 is checked as a client must (status, `Upgrade`, `Connection`, the accept key,
//! no extension or subprotocol that was not offered); anything else fails the
//! connection by kind ([`crate::ErrorKind`]'s `ws_*`). The server's frames go through
//! [`stampede_wire::ws::Reader`], which checks every rule a server must keep; a ping
//! is answered with a pong, the server's close with a close, a broken rule with the
//! close code that names it. Message bytes are counted, never kept. With
//! [`WsLoad::deflate`] permessage-deflate is offered and must be taken: each message
//! sent is compressed, each compressed one read is inflated as it comes (counted,
//! limited and checked as text on what it inflates to).
//!
//! In ping mode ([`WsLoad::ping`]) each request is a ping carrying the message and
//! its answer the pong that follows: a connection held with heartbeats, the server's
//! data messages read and let go.
//!
//! In push mode (a run timing [`crate::StreamMode::Messages`]) a request is a
//! subscription: the message is sent once if there is one (what a feed asks to be
//! subscribed with), and every data message the server sends is an event of it
//! ([`Event::Progress`]; the message's send stamp, when it begins with one, is held
//! for the worker to take with it). The
//! server's close with 1000 ends the subscription whole; the connection then closes.

use std::sync::atomic::{AtomicU64, Ordering};

use stampede_wire::stamp::{self, Stamp};
use stampede_wire::ws::{self, deflate, Event as WsEvent, Reader, ReaderOptions};

use crate::error::ErrorKind;
use crate::proto::watch::Progress;
use crate::proto::{Broken, Event, Response};
use crate::WsLoad;

pub mod over_h2;

/// The longest upgrade answer head read (its status line and headers).
const MAX_HEAD: usize = 16 * 1024;
/// The most header fields read in the upgrade's answer.
const MAX_FIELDS: usize = 64;
/// The 101's status, also each round trip's: the messages travel on the upgrade.
pub const UPGRADED: u16 = 101;
/// Output waiting past this takes no more pongs: a server that pings without
/// reading cannot grow the client's memory (a pong may answer only the latest ping,
/// RFC 6455 §5.5.3, and the next one goes once the output is taken).
pub const MAX_QUEUED_PONGS: usize = 64 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// The upgrade request is sent or going out; its answer's head is read.
    Upgrading,
    /// Messages go both ways.
    Open,
    /// A close was sent or read: nothing more is taken.
    Closed,
}

/// A WebSocket client connection (see the module's description).
pub struct WsClient {
    load: WsLoad,
    phase: Phase,
    /// The upgrade's key, base64 (what the accept key is computed from).
    key: [u8; 24],
    out: Vec<u8>,
    written: usize,
    /// The upgrade answer's head so far (while upgrading).
    head: Vec<u8>,
    /// Messages queued before the upgrade was answered.
    deferred: u32,
    /// Of those, the ones made for their calls ([`WsClient::queue_made`]), in order:
    /// the first `deferred - made.len()` send the run's message.
    made: std::collections::VecDeque<Box<[u8]>>,
    /// Of [`WsLoad::messages`], the one sent next.
    turn: usize,
    /// What the answers to the messages sent must contain, in order, when each
    /// message's is made with it ([`WsClient::queue_made`]).
    expects: std::collections::VecDeque<Box<[u8]>>,
    /// Data messages read that did not contain what the answer was to, since last
    /// taken.
    unmatched: u64,
    reader: Reader,
    /// Draws the keys: masks, and the upgrade's.
    rng: u64,
    /// The 101 came since [`WsClient::take_upgraded`] was last asked.
    upgraded: bool,
    /// Answers read on this connection.
    answered: u64,
    /// The code of the server's close, once read (`Some(None)`: one without a code).
    close: Option<Option<u16>>,
    /// The status of an answer that refused the upgrade.
    refused: Option<u16>,
    /// Pings sent and not yet answered (ping mode).
    pings: u32,
    /// Push mode's state (see [`Push`]).
    push: Option<Box<Push>>,
    /// Stamped messages ([`WsLoad::stamp`]): when each queued one is due, and the
    /// stamp and message put together.
    dues: std::collections::VecDeque<std::time::Instant>,
    stamped: Vec<u8>,
    /// permessage-deflate, once the server took it ([`WsLoad::deflate`]): what
    /// compresses the messages sent.
    deflate: Option<Box<deflate::Deflater>>,
    /// What the offer asked of the server's answer ([`WsLoad::deflate_params`]).
    asked: deflate::Asked,
    /// Over HTTP/2 (RFC 8441), the stream's connection: `out` then holds the
    /// WebSocket's bytes not yet framed as its DATA (from `written`).
    tunnel: Option<Box<over_h2::Tunnel>>,
}

/// Push mode: each message is an event of the subscription, whose bytes so far are
/// counted here, with the stamps of the messages of the last bytes fed, in order,
/// each taken by the worker with its event.
#[derive(Default)]
struct Push {
    bytes: u64,
    received: std::collections::VecDeque<Stamp>,
}

impl Push {
    /// A message of `len` bytes beginning with `data` came: an event.
    #[cold]
    fn message(&mut self, events: &mut Vec<Event>, len: u64, data: &[u8]) {
        self.bytes += len;
        let stamp = Stamp::read(data);
        self.received.extend(stamp);
        events.push(Event::Progress {
            stream: 0,
            progress: Progress {
                bytes: u32::try_from(len).unwrap_or(u32::MAX),
                events: 1,
                stamped: stamp.is_some(),
                ..Progress::default()
            },
        });
    }
}

/// A seed unlike any other connection's: the process's random hash keys, over a
/// count.
fn seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(NEXT.fetch_add(1, Ordering::Relaxed));
    h.finish()
}

/// An answer of `len` bytes read: the next round trip completes (kept in line: it is
/// every message's path).
#[inline(always)]
fn answer(events: &mut Vec<Event>, answered: &mut u64, len: u64) {
    events.push(Event::Response(Response {
        stream: 0,
        status: UPGRADED,
        body: len,
        close: false,
        reused: *answered > 0,
        fresh: true,
        grpc: None,
    }));
    *answered += 1;
}

/// A message of `len` bytes, `data`, read by a run that knows its answers by their
/// content: the next round trip completes if it contains what the waiting one's
/// answer must (`expects`' first when each message's is made, else `expect`);
/// otherwise it is counted and let go.
#[cold]
fn expected(
    events: &mut Vec<Event>,
    answered: &mut u64,
    unmatched: &mut u64,
    expects: &mut std::collections::VecDeque<Box<[u8]>>,
    expect: &[u8],
    len: u64,
    data: &[u8],
) {
    let want = expects.front().map_or(expect, |e| &e[..]);
    let found = want.is_empty() || data.windows(want.len()).any(|w| w == want);
    if found {
        expects.pop_front();
        answer(events, answered, len);
    } else {
        *unmatched += 1;
    }
}

/// splitmix64's next value.
fn draw(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl WsClient {
    /// A connection that upgrades with `request` (an HTTP/1.1 GET ending with its
    /// blank line, the upgrade's headers in it but the key) and sends `load`'s message;
    /// with `push`, one that subscribes and times what the server pushes (see the
    /// module's description).
    pub fn new(load: &WsLoad, request: &[u8], push: bool) -> WsClient {
        WsClient::seeded(load, request, seed(), push)
    }

    /// [`WsClient::new`] with the keys drawn from `seed` (tests).
    pub fn seeded(load: &WsLoad, request: &[u8], seed: u64, push: bool) -> WsClient {
        use base64::Engine;
        let mut rng = seed;
        let mut raw = [0u8; 16];
        raw[..8].copy_from_slice(&draw(&mut rng).to_le_bytes());
        raw[8..].copy_from_slice(&draw(&mut rng).to_le_bytes());
        let mut key = [0u8; 24];
        base64::engine::general_purpose::STANDARD
            .encode_slice(raw, &mut key)
            .expect("16 bytes take 24");
        let head = request.strip_suffix(b"\r\n").unwrap_or(request);
        let mut out = Vec::with_capacity(head.len() + 48);
        out.extend_from_slice(head);
        out.extend_from_slice(b"Sec-WebSocket-Key: ");
        out.extend_from_slice(&key);
        out.extend_from_slice(b"\r\n\r\n");
        let mut reader = Reader::new(ReaderOptions {
            peer_is_client: false,
            max_message: load.max_message,
            // An answer known by its content is read whole.
            keep: load.expecting(),
        });
        if push {
            reader.keep_prefix(stamp::LEN);
        }
        WsClient {
            load: load.clone(),
            phase: Phase::Upgrading,
            key,
            out,
            written: 0,
            head: Vec::new(),
            deferred: 0,
            made: std::collections::VecDeque::new(),
            turn: 0,
            expects: std::collections::VecDeque::new(),
            unmatched: 0,
            reader,
            rng,
            upgraded: false,
            answered: 0,
            close: None,
            refused: None,
            pings: 0,
            push: push.then(Box::default),
            dues: std::collections::VecDeque::new(),
            stamped: Vec::new(),
            deflate: None,
            asked: (load.deflate)
                .then(|| deflate::offer_with(&load.deflate_params).ok())
                .flatten()
                .map(|(_, asked)| asked)
                .unwrap_or_default(),
            tunnel: None,
        }
    }

    /// A connection that opens its WebSocket over HTTP/2 (RFC 8441, see [`over_h2`]):
    /// the CONNECT is made from `request` (`https` for `tls`); the rest is
    /// [`WsClient::new`]'s.
    pub fn over_h2(load: &WsLoad, request: &[u8], push: bool, tls: bool) -> WsClient {
        let mut c = WsClient::seeded(load, request, seed(), push);
        c.out = Vec::new();
        c.tunnel = Some(Box::new(over_h2::Tunnel::new(request, tls)));
        c
    }

    /// Data messages read that did not contain what the answer was to, since the
    /// last call.
    #[inline]
    pub fn take_unmatched(&mut self) -> u64 {
        std::mem::take(&mut self.unmatched)
    }

    /// The stamp of the next stamped message of the bytes last fed (whose event
    /// says it is stamped).
    pub fn take_stamp(&mut self) -> Option<Stamp> {
        self.push.as_mut()?.received.pop_front()
    }

    /// Whether the run stamps its messages (then [`WsClient::due`] is told when each
    /// is due).
    #[inline]
    pub fn stamping(&self) -> bool {
        self.load.stamp
    }

    /// When the messages about to be queued are due (their requests' intended
    /// starts), for their stamps.
    #[cold]
    pub fn due(&mut self, intended: impl Iterator<Item = std::time::Instant>) {
        self.dues.extend(intended);
    }

    /// Queues `n` messages: sent now, or once the upgrade is answered.
    pub fn queue(&mut self, n: usize) {
        match self.phase {
            Phase::Open => {
                for _ in 0..n {
                    self.message(None);
                }
            }
            Phase::Upgrading => self.deferred += n as u32,
            Phase::Closed => {}
        }
        if self.tunnel.is_some() {
            self.seal();
        }
    }

    /// Queues a message made for its call ([`crate::made`]) in place of the run's:
    /// sent now, or kept until the upgrade is answered; when the run expects its
    /// answers' content, `expect` is this one's.
    pub fn queue_made(&mut self, message: &[u8], expect: &[u8]) {
        if self.load.expecting() && self.phase != Phase::Closed {
            self.expects.push_back(expect.into());
        }
        match self.phase {
            Phase::Open => self.message(Some(message)),
            Phase::Upgrading => {
                self.deferred += 1;
                self.made.push_back(message.into());
            }
            Phase::Closed => {}
        }
        if self.tunnel.is_some() {
            self.seal();
        }
    }

    fn mask(&mut self) -> [u8; 4] {
        (draw(&mut self.rng) as u32).to_ne_bytes()
    }

    /// Frames the next message: `made` for its call, or the run's (the next of its
    /// messages in turn, when it has several).
    #[inline(always)]
    fn message(&mut self, made: Option<&[u8]>) {
        if made.is_none() && !self.load.messages.is_empty() {
            return self.message_in_turn();
        }
        if self.push.is_some() && made.unwrap_or(&self.load.message).is_empty() {
            // A subscription that asks with nothing: the upgrade is the asking.
            return;
        }
        let opcode = if self.load.ping {
            self.pings += 1;
            ws::PING
        } else if self.load.binary {
            ws::BINARY
        } else {
            ws::TEXT
        };
        let mask = self.mask();
        let message = made.unwrap_or(&self.load.message);
        let payload: &[u8] = if self.load.stamp {
            let now = std::time::Instant::now();
            let due = self.dues.pop_front().unwrap_or(now);
            let s = Stamp {
                due_ns: stamp::unix_ns(due),
                sent_ns: stamp::unix_ns(now),
            };
            self.stamped.clear();
            self.stamped.extend_from_slice(&s.encode());
            self.stamped.extend_from_slice(message);
            &self.stamped
        } else {
            message
        };
        match &mut self.deflate {
            Some(d) if opcode != ws::PING => d.frame(&mut self.out, opcode, payload, Some(mask)),
            _ => ws::frame(&mut self.out, (true, false), opcode, payload, Some(mask)),
        }
    }

    /// Frames the next of the run's messages in turn (out of the one message's way),
    /// with what its answer holds when each has its own.
    #[cold]
    fn message_in_turn(&mut self) {
        let t = self.turn;
        self.turn = (t + 1) % self.load.messages.len();
        if let Some(e) = self.load.expects.get(t) {
            if self.phase != Phase::Closed {
                self.expects.push_back(e[..].into());
            }
        }
        let m = self.load.messages[t].clone();
        self.message(Some(&m));
    }

    /// Bytes still to write.
    #[inline]
    pub fn unwritten(&self) -> &[u8] {
        match &self.tunnel {
            Some(t) => t.unwritten(),
            None => &self.out[self.written..],
        }
    }

    /// `n` bytes of [`WsClient::unwritten`] were written.
    #[inline]
    pub fn wrote(&mut self, n: usize) {
        if let Some(t) = &mut self.tunnel {
            return t.wrote(n);
        }
        self.written += n;
        if self.written == self.out.len() {
            self.out.clear();
            self.written = 0;
        }
    }

    /// Whether the upgrade was answered and checked since the last call (the worker
    /// then times the connection's set-up and its waiting messages' sends).
    pub fn take_upgraded(&mut self) -> bool {
        std::mem::take(&mut self.upgraded)
    }

    /// Whether the connection is upgraded and not closed.
    pub fn open(&self) -> bool {
        self.phase == Phase::Open
    }

    /// The server's close code, once its close was read (`Some(None)`: without one).
    pub fn close_code(&self) -> Option<Option<u16>> {
        self.close
    }

    /// The status the server refused the upgrade with, once it did.
    pub fn refused(&self) -> Option<u16> {
        self.refused
    }

    /// Whether a message is part way in.
    pub fn receiving(&self) -> bool {
        self.phase == Phase::Open && self.reader.partial()
    }

    /// Ends the connection from this side: a close with `code` (1000 when the run
    /// ends), if it is open.
    pub fn goodbye(&mut self, code: u16) {
        if self.phase == Phase::Open {
            let mask = self.mask();
            ws::close(&mut self.out, Some(code), "", Some(mask));
            self.phase = Phase::Closed;
        }
        if self.tunnel.is_some() {
            self.seal();
        }
    }

    /// Takes bytes read; answers are appended to `events` as [`Event::Response`]s
    /// with status 101. An error means the connection must close (after writing what
    /// is left in [`WsClient::unwritten`]: the close that answers it).
    #[inline]
    pub fn feed(&mut self, data: &[u8], events: &mut Vec<Event>) -> Result<(), Broken> {
        if self.tunnel.is_some() {
            return self.feed_tunnelled(data, events);
        }
        self.feed_plain(data, events)
    }

    /// [`WsClient::feed`] of the WebSocket's own bytes (the connection's, or an HTTP/2
    /// stream's DATA).
    #[inline(always)]
    fn feed_plain(&mut self, mut data: &[u8], events: &mut Vec<Event>) -> Result<(), Broken> {
        if self.phase == Phase::Upgrading {
            match self.upgrade(data)? {
                Some(used) => data = &data[used..],
                None => return Ok(()),
            }
        }
        if self.phase != Phase::Open || data.is_empty() {
            return Ok(());
        }
        let WsClient {
            reader,
            answered,
            pings,
            load,
            push,
            expects,
            unmatched,
            ..
        } = self;
        if let Some(p) = push {
            // Those of the last bytes fed went with their events.
            p.received.clear();
        }
        let pinging = load.ping;
        // Every message answers (the common case), or only one holding what is expected.
        let plain = !pinging && !load.expecting();
        let mut ping: Option<([u8; ws::MAX_CONTROL], usize)> = None;
        let mut close = None;
        let fed = reader.feed(data, &mut |ev| match ev {
            WsEvent::Message { len, data, .. } => match push {
                Some(p) => p.message(events, len, data),
                None if plain => answer(events, answered, len),
                None if pinging => {}
                None => {
                    let e = load.expect.as_deref().unwrap_or_default();
                    expected(events, answered, unmatched, expects, e, len, data)
                }
            },
            // A pong answers the ping waiting when it carries its payload (RFC 6455
            // §5.5.3); one that comes unasked is a heartbeat and answers nothing.
            WsEvent::Pong(p) => {
                if pinging && *pings > 0 && p == &load.message[..] {
                    *pings -= 1;
                    answer(events, answered, p.len() as u64);
                }
            }
            WsEvent::Ping(p) => {
                // Answered once the bytes are read: the latest ping's payload (RFC
                // 6455 §5.5.3 lets a pong answer only the most recent).
                let mut b = [0u8; ws::MAX_CONTROL];
                b[..p.len()].copy_from_slice(p);
                ping = Some((b, p.len()));
            }
            WsEvent::Close { code, .. } => close = Some(code),
        });
        if let Some((b, n)) = ping.filter(|_| self.unwritten().len() < MAX_QUEUED_PONGS) {
            let mask = self.mask();
            ws::frame(&mut self.out, (true, false), ws::PONG, &b[..n], Some(mask));
        }
        if let Err(e) = fed {
            let mask = self.mask();
            ws::close(&mut self.out, Some(e.code), e.why, Some(mask));
            self.phase = Phase::Closed;
            return Err(Broken(match e.code {
                ws::INVALID_DATA => ErrorKind::WsInvalidText,
                ws::TOO_BIG => ErrorKind::WsTooBig,
                _ => ErrorKind::WsProtocol,
            }));
        }
        if let Some(code) = close {
            // The close answered with the code the server sent (RFC 6455 §5.5.1).
            let mask = self.mask();
            let back = code.filter(|&c| ws::sendable_code(c));
            ws::close(&mut self.out, back, "", Some(mask));
            self.phase = Phase::Closed;
            if let (Some(p), Some(ws::NORMAL)) = (&mut self.push, code) {
                // The stream's end: its subscription completes, the connection ends.
                let body = std::mem::take(&mut p.bytes);
                answer(events, &mut self.answered, body);
                if let Some(Event::Response(r)) = events.last_mut() {
                    r.close = true;
                }
                return Ok(());
            }
            self.close = Some(code);
            return Err(Broken(ErrorKind::WsClosed));
        }
        Ok(())
    }

    /// Reads the upgrade's answer. Returns the bytes of `data` its head used once it
    /// is whole and checked (`None`: more is needed).
    fn upgrade(&mut self, data: &[u8]) -> Result<Option<usize>, Broken> {
        let before = self.head.len();
        let room = MAX_HEAD - before;
        self.head.extend_from_slice(&data[..data.len().min(room)]);
        // The blank line may straddle the bytes kept and the new ones.
        let from = before.saturating_sub(3);
        let Some(end) = self.head[from..]
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map(|i| from + i + 4)
        else {
            if self.head.len() >= MAX_HEAD {
                return Err(Broken(ErrorKind::WsHandshake));
            }
            return Ok(None);
        };
        let used = end - before;
        let mut fields = [httparse::EMPTY_HEADER; MAX_FIELDS];
        let mut resp = httparse::Response::new(&mut fields);
        let status = match resp.parse(&self.head[..end]) {
            Ok(httparse::Status::Complete(_)) => resp.code.unwrap_or(0),
            _ => return Err(Broken(ErrorKind::WsHandshake)),
        };
        if status != UPGRADED {
            // Refused (a 200 included: a page is not an upgrade); the status is kept
            // for the worker to count.
            self.refused = Some(status);
            self.phase = Phase::Closed;
            return Err(Broken(ErrorKind::WsUpgrade));
        }
        let deflating = match self.accepted(resp.headers) {
            Ok(p) => p,
            Err(kind) => {
                self.phase = Phase::Closed;
                return Err(Broken(kind));
            }
        };
        self.opened(deflating);
        Ok(Some(used))
    }

    /// The upgrade was answered and checked, permessage-deflate taken with
    /// `deflating`'s parameters: messages go both ways, those that waited first.
    fn opened(&mut self, deflating: Option<deflate::Params>) {
        if let Some(p) = deflating {
            self.reader.inflate(p.peer_resets(false));
            self.deflate = Some(Box::new(p.deflater(false)));
        }
        self.head = Vec::new();
        if self.out.is_empty() {
            // The upgrade request's room is let go: a held connection keeps only what
            // its messages need.
            self.out = Vec::new();
        }
        self.phase = Phase::Open;
        self.upgraded = true;
        let n = std::mem::take(&mut self.deferred) as usize;
        let made = std::mem::take(&mut self.made);
        self.queue(n - made.len());
        for m in made {
            self.message(Some(&m));
        }
    }

    /// Frames what the WebSocket wrote as the stream's DATA, as far as HTTP/2's
    /// windows allow (the rest waits in `out` for them); a closed WebSocket's last
    /// bytes end our side of the stream.
    fn seal(&mut self) {
        let WsClient {
            tunnel: Some(t),
            out,
            written,
            phase,
            ..
        } = self
        else {
            return;
        };
        let n = t.send(&out[*written..], *phase == Phase::Closed);
        *written += n;
        if *written == out.len() {
            out.clear();
            *written = 0;
        }
    }

    /// [`WsClient::feed`] over HTTP/2: the server's frames, their DATA the
    /// WebSocket's bytes. Out of line: the plain connection's path stays as it was.
    #[inline(never)]
    fn feed_tunnelled(&mut self, data: &[u8], events: &mut Vec<Event>) -> Result<(), Broken> {
        let mut t = self.tunnel.take().expect("tunnelled");
        let fed = t.feed(
            data,
            |read| self.tunnel_read(read, events),
            |failed| {
                Broken(match failed {
                    over_h2::Failed::NoConnect
                    | over_h2::Failed::NotH2
                    | over_h2::Failed::Unopened => ErrorKind::WsHandshake,
                    over_h2::Failed::Protocol => ErrorKind::WsProtocol,
                })
            },
        );
        self.tunnel = Some(t);
        self.seal();
        fed
    }

    /// What a frame of the tunnel meant for the WebSocket.
    fn tunnel_read(
        &mut self,
        read: over_h2::Read<'_>,
        events: &mut Vec<Event>,
    ) -> Result<(), Broken> {
        use over_h2::Read;
        match read {
            Read::Nothing => Ok(()),
            Read::Answer {
                status,
                protocol,
                extensions,
            } => {
                if status != 200 {
                    // Refused, with the status kept for the worker to count.
                    self.refused = Some(status);
                    self.phase = Phase::Closed;
                    return Err(Broken(ErrorKind::WsUpgrade));
                }
                match self.negotiated(protocol.as_deref(), extensions.iter().map(|e| &e[..])) {
                    Ok(deflating) => {
                        self.opened(deflating);
                        Ok(())
                    }
                    Err(kind) => {
                        self.phase = Phase::Closed;
                        Err(Broken(kind))
                    }
                }
            }
            Read::Data { bytes, end } => {
                self.feed_plain(bytes, events)?;
                if end {
                    return self.stream_ended();
                }
                Ok(())
            }
            Read::End | Read::Reset => self.stream_ended(),
        }
    }

    /// The server ended or reset the stream: once a close was sent or read that is
    /// the end; before it, an abnormal close.
    fn stream_ended(&mut self) -> Result<(), Broken> {
        if self.phase == Phase::Closed {
            // Our close, or the server's, was sent or read already.
            return Ok(());
        }
        self.phase = Phase::Closed;
        Err(Broken(ErrorKind::WsClosed))
    }

    /// Whether a 101's headers accept this connection's upgrade (RFC 6455 §4.1), and
    /// permessage-deflate as it was offered (RFC 7692 §5): the parameters taken.
    fn accepted(
        &self,
        headers: &[httparse::Header<'_>],
    ) -> Result<Option<deflate::Params>, ErrorKind> {
        let get = |name: &str| {
            headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case(name))
                .map(|h| h.value)
        };
        let upgrade = get("upgrade").is_some_and(|v| v.eq_ignore_ascii_case(b"websocket"));
        let connection = headers
            .iter()
            .filter(|h| h.name.eq_ignore_ascii_case("connection"))
            .flat_map(|h| h.value.split(|&b| b == b','))
            .any(|t| t.trim_ascii().eq_ignore_ascii_case(b"upgrade"));
        let accept = get("sec-websocket-accept")
            .is_some_and(|v| v.trim_ascii() == ws::accept_key(&self.key).as_bytes());
        if !(upgrade && connection && accept) {
            return Err(ErrorKind::WsHandshake);
        }
        let extensions = (headers.iter())
            .filter(|h| h.name.eq_ignore_ascii_case("sec-websocket-extensions"))
            .map(|h| h.value);
        self.negotiated(get("sec-websocket-protocol"), extensions)
    }

    /// Whether the answer's subprotocol and extensions are as offered (RFC 6455
    /// §4.1, RFC 7692 §5; the same over HTTP/2, RFC 8441 §5): the parameters of
    /// permessage-deflate taken.
    fn negotiated<'a>(
        &self,
        protocol: Option<&[u8]>,
        extensions: impl Iterator<Item = &'a [u8]> + Clone,
    ) -> Result<Option<deflate::Params>, ErrorKind> {
        // A subprotocol must be one that was offered.
        let offered = protocol.is_none_or(|v| {
            self.load
                .protocols
                .iter()
                .any(|p| p.as_bytes() == v.trim_ascii())
        });
        if !offered {
            return Err(ErrorKind::WsHandshake);
        }
        // An extension only as offered: permessage-deflate, when asked for.
        if !self.load.deflate {
            return match extensions.filter(|v| !v.trim_ascii().is_empty()).count() {
                0 => Ok(None),
                _ => Err(ErrorKind::WsHandshake),
            };
        }
        match deflate::accepted(extensions) {
            // Taken as asked, or not at all (RFC 7692 §7.1).
            Ok(Some(p)) => self.asked.hold(p).map(Some).ok_or(ErrorKind::WsHandshake),
            Ok(None) => Err(ErrorKind::WsDeflateDeclined),
            Err(deflate::NotOffered) => Err(ErrorKind::WsHandshake),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
