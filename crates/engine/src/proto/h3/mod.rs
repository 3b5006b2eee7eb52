//! The client's HTTP/3 connection: QUIC (quinn-proto, through [`stampede_quic`])
//! carrying a request per bidirectional stream, answered as RFC 9114 says.
//!
//! Like HTTP/2 it takes requests while others are unanswered and reports the same
//! [`Event`]s; unlike it, what it writes and reads are whole datagrams, and QUIC has
//! timers of its own (loss detection, acknowledgements, the idle timeout) that the
//! worker keeps on its wait: [`H3Conn::next_timeout`] says when, [`H3Conn::timeout`]
//! is called then. Time comes from the caller, never from a clock read here, so a
//! connection runs the same in simulated time (see the tests, which pair it with the
//! server's connection in memory).
//!
//! A request's field section is QPACK without the dynamic table (the static table
//! and literals, prepared once per request); the server's sections may use a table
//! of up to the capacity this end advertises (0 unless asked, as h2load's
//! `--header-table-size`).

use std::time::Instant;

use quinn_proto::{ConnectionError, Dir, StreamEvent, StreamId, VarInt};
use stampede_quic::session::Role;
use stampede_quic::{read_stream, request_number, Client, Outbox, Read, Session};
use stampede_wire::h3::message::{ControlEvent, Message, Part, Side};
use stampede_wire::h3::{kind, Code, H3Error};

use crate::error::ErrorKind;
use crate::proto::h2::H2Request;
use crate::proto::watch::{StreamMode, Watch};
use crate::proto::{Broken, Event, Response};

/// The largest field section the server may send (SETTINGS_MAX_FIELD_SECTION_SIZE).
pub const MAX_FIELD_SECTION: usize = 64 * 1024;

/// The largest dynamic table the server's field sections may use.
pub const MAX_TABLE: u32 = 1 << 20;

/// What the client's side of each HTTP/3 connection sets: the largest UDP payload it
/// sends (h2load's `--max-udp-payload-size`) and the QPACK table the server may fill
/// for responses (h2load's `--header-table-size`; 0, QPACK's default, unless asked).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct H3Settings {
    /// 1200 to 65527 bytes.
    pub max_udp_payload: u16,
    /// 0 to [`MAX_TABLE`] bytes.
    pub header_table: u32,
    /// Several datagrams per system call where the kernel offers it (GSO; h2load's
    /// `--no-udp-gso` turns it off).
    #[serde(default = "yes")]
    pub gso: bool,
}

fn yes() -> bool {
    true
}

impl Default for H3Settings {
    fn default() -> H3Settings {
        H3Settings {
            max_udp_payload: stampede_quic::Transport::default().max_udp_payload,
            header_table: 0,
            gso: true,
        }
    }
}

impl H3Settings {
    /// Why the settings cannot be used, if they cannot.
    pub fn check(&self) -> Result<(), crate::error::SpecError> {
        let bad = |reason: String| crate::error::SpecError::Invalid {
            field: "http3",
            reason,
        };
        if !(1200..=stampede_quic::MAX_DATAGRAM as u32).contains(&u32::from(self.max_udp_payload)) {
            return Err(bad(format!(
                "a UDP payload size of {} is outside 1200 to 65527",
                self.max_udp_payload
            )));
        }
        if self.header_table > MAX_TABLE {
            return Err(bad(format!(
                "a QPACK table of {} bytes is over the {MAX_TABLE} this end keeps",
                self.header_table
            )));
        }
        Ok(())
    }

    /// The QUIC transport these settings ask for.
    pub fn transport(&self) -> stampede_quic::Transport {
        stampede_quic::Transport {
            max_udp_payload: self.max_udp_payload,
            gso: self.gso,
            ..Default::default()
        }
    }
}

/// One request stream.
struct Stream {
    id: StreamId,
    number: u32,
    msg: Message,
    /// The final status, once its head came (0 before).
    status: u16,
    body: u64,
    watch: Option<Box<Watch>>,
}

/// QUIC's own figures of a connection, taken when it closes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QuicFigures {
    pub packets_sent: u64,
    pub packets_lost: u64,
    pub bytes_lost: u64,
    pub congestion_events: u64,
    pub rtt_us: u64,
    /// The server accepted 0-RTT data.
    pub zero_rtt: bool,
    /// How it ended, when not by this end's orderly close (see [`H3Conn::end`]).
    pub end: Option<String>,
    /// The server asked for a Retry before it went on with the handshake.
    pub retried: bool,
    /// Streams the server reset, by error code.
    pub resets: Resets,
}

/// Streams reset, counted by error code: at most [`Resets::CODES`] codes told apart
/// on one connection, the rest counted together.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resets {
    /// (code, count), in the order the codes first came.
    pub by_code: Vec<(u64, u64)>,
    /// Resets with a code beyond the first [`Resets::CODES`].
    pub other: u64,
}

impl Resets {
    /// The most codes told apart.
    pub const CODES: usize = 64;

    /// Counts a reset with `code`.
    fn count(&mut self, code: u64) {
        let full = self.by_code.len() >= Self::CODES;
        match self.by_code.iter_mut().find(|r| r.0 == code) {
            Some(r) => r.1 += 1,
            None if !full => self.by_code.push((code, 1)),
            None => self.other += 1,
        }
    }
}

/// An HTTP/3 client connection (see the module's note).
pub struct H3Conn {
    quic: Client,
    session: Session,
    outbox: Outbox,
    streams: Vec<Stream>,
    /// The datagrams to write next (empty: none ready), `segment` bytes each but
    /// the last, marked with `ecn`.
    out: Vec<u8>,
    segment: usize,
    ecn: Option<quinn_proto::EcnCodepoint>,
    /// The most datagrams one write may carry (the socket's offload allows).
    segments: usize,
    /// The ECN bits of the datagrams fed next, and their size (0: one datagram).
    rx_ecn: Option<quinn_proto::EcnCodepoint>,
    rx_stride: usize,
    scratch: Vec<u8>,
    /// The latest time the caller gave (never goes back).
    now: Instant,
    /// Whether QUIC may have datagrams to send that `out` does not hold yet.
    more: bool,
    started: Instant,
    connected: bool,
    /// The handshake's length in µs and whether it resumed a session, until taken.
    handshake: Option<(u64, bool)>,
    answered: u64,
    /// The server's stream limit is reached: no stream opens until it allows more.
    blocked: bool,
    watch: Option<(StreamMode, Option<crate::TokenCounter>)>,
    /// Response field sections received, compressed and decoded.
    headers_compressed: u64,
    headers_decoded: u64,
    /// The server is going away: no new streams.
    pub goaway: bool,
    /// 0-RTT data was accepted on this connection.
    pub zero_rtt: bool,
    /// How the connection ended, when it did other than by this end's orderly
    /// close: `closed by the server: H3_…` or a transport code, `closed here: …` (an
    /// error this end found), `idle timeout`, `handshake timeout` (`… after a Retry`
    /// when the server asked for one), `version negotiation`, `stateless reset`.
    pub end: Option<String>,
    /// Streams the server reset, by code (see [`QuicFigures::resets`]).
    resets: Resets,
    /// Response fields and bodies kept whole, when asked for with
    /// [`H3Conn::keep_responses`]: the latest final head's fields (and trailers) and
    /// the body bytes since — one response's where a connection has one stream at a
    /// time, as the runs that keep them do.
    pub kept: Option<crate::proto::h2::Kept>,
}

impl H3Conn {
    /// Starts a connection to `remote` (`server_name` for SNI and the certificate)
    /// whose decoder keeps a dynamic table of up to `table` bytes.
    pub fn connect(
        endpoint: std::sync::Arc<quinn_proto::EndpointConfig>,
        config: quinn_proto::ClientConfig,
        remote: std::net::SocketAddr,
        server_name: &str,
        table: usize,
        now: Instant,
    ) -> Result<H3Conn, stampede_quic::QuicError> {
        let quic = Client::connect(endpoint, config, remote, server_name, now)?;
        let mut c = H3Conn {
            quic,
            session: Session::new(Role::Client, MAX_FIELD_SECTION, table),
            outbox: Outbox::default(),
            streams: Vec::new(),
            out: Vec::with_capacity(stampede_quic::MAX_DATAGRAM),
            segment: 0,
            ecn: None,
            segments: 1,
            rx_ecn: None,
            rx_stride: 0,
            scratch: Vec::new(),
            now,
            more: true,
            started: now,
            connected: false,
            handshake: None,
            answered: 0,
            blocked: false,
            watch: None,
            headers_compressed: 0,
            headers_decoded: 0,
            kept: None,
            goaway: false,
            zero_rtt: false,
            end: None,
            resets: Resets::default(),
        };
        c.fill();
        Ok(c)
    }

    /// Watches each response body as it arrives from now on.
    /// Keeps response fields and bodies in [`H3Conn::kept`] from now on.
    pub fn keep_responses(&mut self) {
        self.kept = Some(crate::proto::h2::Kept::default());
    }

    pub(crate) fn watch(&mut self, mode: StreamMode, counter: Option<crate::TokenCounter>) {
        self.watch = Some((mode, counter));
    }

    fn advance(&mut self, now: Instant) {
        self.now = self.now.max(now);
    }

    /// Puts the next datagram QUIC has to send in `out`, if `out` is free.
    fn fill(&mut self) {
        if !self.out.is_empty() || !self.more {
            return;
        }
        match (self.quic.conn).poll_transmit(self.now, self.segments, &mut self.out) {
            Some(t) => {
                self.out.truncate(t.size);
                self.segment = t.segment_size.unwrap_or(t.size);
                self.ecn = t.ecn;
            }
            None => {
                self.out.clear();
                self.more = false;
            }
        }
    }

    /// The datagrams to write next (empty: nothing to send now): one, or several of
    /// [`H3Conn::segment`] bytes each but the last.
    #[inline]
    pub fn unwritten(&self) -> &[u8] {
        &self.out
    }

    /// The size of each datagram in [`H3Conn::unwritten`] (its last may be shorter).
    #[inline]
    pub fn segment(&self) -> usize {
        self.segment
    }

    /// The ECN bits the datagrams to write are to carry.
    #[inline]
    pub fn ecn(&self) -> Option<quinn_proto::EcnCodepoint> {
        self.ecn
    }

    /// How many datagrams one write may carry from now on (1: a datagram a write).
    pub fn set_segments(&mut self, n: usize) {
        self.segments = n.max(1);
    }

    /// What the socket said of the bytes fed next: their ECN bits, and that they
    /// are datagrams of `stride` bytes each but the last (joined by the kernel; 0:
    /// one datagram).
    #[inline]
    pub fn set_received(&mut self, ecn: Option<quinn_proto::EcnCodepoint>, stride: usize) {
        self.rx_ecn = ecn;
        self.rx_stride = stride;
    }

    /// Whether a datagram is ready or may be.
    #[inline]
    pub fn has_output(&self) -> bool {
        !self.out.is_empty() || self.more
    }

    /// Readies output at `now` (the worker's time before it writes).
    #[inline]
    pub fn prepare(&mut self, now: Instant) {
        self.advance(now);
        self.fill();
    }

    /// The datagrams were sent (`n` is their length: datagrams go whole or not at
    /// all); the next ones are readied.
    #[inline]
    pub fn wrote(&mut self, _n: usize) {
        self.out.clear();
        self.more = true;
        self.fill();
    }

    /// When QUIC next needs [`H3Conn::timeout`].
    pub fn next_timeout(&mut self) -> Option<Instant> {
        self.quic.conn.poll_timeout()
    }

    /// QUIC's timer fell due: loss detection, acknowledgements, the idle timeout.
    pub fn timeout(&mut self, now: Instant, events: &mut Vec<Event>) -> Result<(), Broken> {
        self.advance(now);
        self.quic.timeout(self.now);
        self.more = true;
        let r = self.process(events);
        self.fill();
        r
    }

    /// The response header bytes received since the last call: compressed and
    /// decoded.
    #[inline]
    pub fn take_header_sizes(&mut self) -> (u64, u64) {
        (
            std::mem::take(&mut self.headers_compressed),
            std::mem::take(&mut self.headers_decoded),
        )
    }

    /// Takes the server's datagrams (one, or several as [`H3Conn::set_received`]
    /// said); events are appended. An error means the connection is over (the
    /// events appended before it stand).
    pub fn feed(
        &mut self,
        datagrams: &[u8],
        now: Instant,
        events: &mut Vec<Event>,
    ) -> Result<(), Broken> {
        self.advance(now);
        for d in stampede_quic::udp::split(datagrams, self.rx_stride) {
            self.quic
                .handle(self.now, d, self.rx_ecn, &mut self.scratch);
        }
        self.more = true;
        // What to send is asked for at the write, after every datagram that came.
        self.process(events)
    }

    /// Whether the handshake has ended.
    pub fn connected(&self) -> bool {
        self.connected
    }

    /// The handshake's length (µs) and whether it resumed a session, once, when it
    /// has ended.
    pub fn take_handshake(&mut self) -> Option<(u64, bool)> {
        self.handshake.take()
    }

    /// The server's stream limit as far as known: QUIC's stream credit is not
    /// counted ahead, so no limit while streams open, and the streams open now once
    /// one was refused (until the server grants more).
    pub fn stream_limit(&self) -> usize {
        if self.blocked || self.goaway {
            self.streams.len()
        } else {
            usize::MAX
        }
    }

    /// Streams open (sent and not yet answered or reset).
    pub fn open_streams(&self) -> usize {
        self.streams.len()
    }

    /// Whether a response is part way in.
    pub fn receiving(&self) -> bool {
        self.streams.iter().any(|s| s.status != 0)
    }

    /// Opens a stream for `req` and sends it whole (what flow control holds back
    /// follows as the server allows); returns its number, or 0 when the server's
    /// stream limit leaves no room yet (the request waits).
    pub fn request(&mut self, req: &H2Request) -> u32 {
        if self.blocked || self.goaway {
            return 0;
        }
        let Some(id) = self.quic.conn.streams().open(Dir::Bi) else {
            self.blocked = true;
            return 0;
        };
        let conn = &mut self.quic.conn;
        if !req.h3_frames.is_empty() {
            // QUIC keeps a reference to the request's frames, made once, on each
            // stream that sends them.
            let _ = self.outbox.write_shared(conn, id, &req.h3_frames, true);
        } else {
            let body = !req.body.is_empty();
            // The frames' heads go through the scratch buffer, reused request to request.
            let head = &mut self.scratch;
            head.clear();
            stampede_wire::h3::frame(head, kind::HEADERS, &req.section);
            if body {
                stampede_wire::h3::data_head(head, req.body.len() as u64);
            }
            let _ = self.outbox.write(conn, id, head, !body);
            if body {
                let _ = self.outbox.write(conn, id, &req.body, true);
            }
        }
        let number = request_number(id);
        let msg = Message::new(Side::Response);
        self.streams.push(Stream {
            id,
            number,
            msg: if req.head {
                msg.for_head_request()
            } else {
                msg
            },
            status: 0,
            body: 0,
            watch: (self.watch.as_ref()).map(|(m, c)| Box::new(Watch::new(*m, c.clone()))),
        });
        self.more = true;
        number
    }

    /// Closes the connection politely (H3_NO_ERROR); its CONNECTION_CLOSE is the next
    /// datagram.
    pub fn close(&mut self, now: Instant) {
        self.advance(now);
        let code = VarInt::from_u64(Code::NO_ERROR.0).unwrap_or(VarInt::MAX);
        self.quic.conn.close(self.now, code, bytes::Bytes::new());
        self.out.clear();
        self.more = true;
        self.fill();
    }

    /// QUIC's figures so far.
    pub fn figures(&self) -> QuicFigures {
        let s = self.quic.conn.stats();
        QuicFigures {
            packets_sent: s.path.sent_packets,
            packets_lost: s.path.lost_packets,
            bytes_lost: s.path.lost_bytes,
            congestion_events: s.path.congestion_events,
            rtt_us: s.path.rtt.as_micros() as u64,
            zero_rtt: self.zero_rtt,
            end: self.end.clone(),
            retried: self.quic.retries > 0,
            resets: self.resets.clone(),
        }
    }

    /// Closes the connection with an HTTP/3 error (its CONNECTION_CLOSE is readied).
    fn fail(&mut self, e: &H3Error) -> Broken {
        self.end = Some(format!("closed here: {}", e.code.name()));
        let code = VarInt::from_u64(e.code.0).unwrap_or(VarInt::MAX);
        self.quic
            .conn
            .close(self.now, code, bytes::Bytes::from_static(e.why.as_bytes()));
        self.out.clear();
        self.more = true;
        Broken(ErrorKind::H3Protocol)
    }

    /// Handles what QUIC reports after input or a timer.
    fn process(&mut self, events: &mut Vec<Event>) -> Result<(), Broken> {
        while let Some(ev) = self.quic.conn.poll() {
            match ev {
                quinn_proto::Event::Connected => {
                    self.connected = true;
                    let us = self.now.saturating_duration_since(self.started).as_micros() as u64;
                    // QUIC's TLS says no more of a resumption than that 0-RTT data
                    // was accepted, which only a resumed session can send.
                    self.zero_rtt = self.quic.conn.accepted_0rtt();
                    self.handshake = Some((us, self.zero_rtt));
                    self.blocked = false;
                    if let Err(e) = self.session.open(&mut self.quic.conn, &mut self.outbox) {
                        return Err(self.fail(&e));
                    }
                }
                quinn_proto::Event::ConnectionLost { reason } => {
                    self.end = ending(&reason, self.connected, self.quic.retries > 0);
                    return Err(Broken(lost(&reason, self.connected)));
                }
                quinn_proto::Event::Stream(se) => self.stream_event(se, events)?,
                _ => {}
            }
        }
        Ok(())
    }

    fn stream_event(&mut self, se: StreamEvent, events: &mut Vec<Event>) -> Result<(), Broken> {
        match se {
            StreamEvent::Opened { dir: Dir::Uni } => {
                while let Some(id) = self.quic.conn.streams().accept(Dir::Uni) {
                    self.read_uni(id, events)?;
                }
            }
            StreamEvent::Readable { id } if id.dir() == Dir::Uni => self.read_uni(id, events)?,
            StreamEvent::Readable { id } => self.read_request(id, events)?,
            StreamEvent::Writable { id } => {
                let _ = self.outbox.flush(&mut self.quic.conn, id);
            }
            StreamEvent::Available { dir: Dir::Bi } => self.blocked = false,
            StreamEvent::Stopped { id, .. } => self.outbox.drop_stream(id),
            _ => {}
        }
        Ok(())
    }

    fn read_uni(&mut self, id: StreamId, events: &mut Vec<Event>) -> Result<(), Broken> {
        let mut goaway = None;
        let r = self
            .session
            .read(&mut self.quic.conn, &mut self.outbox, id, &mut |ev| {
                if let ControlEvent::Goaway(g) = ev {
                    goaway = Some(g);
                }
            });
        if let Err(e) = r {
            return Err(self.fail(&e));
        }
        if let Some(g) = goaway {
            self.goaway = true;
            // Streams at or past the ID were not processed.
            let last = (g / 4).min(u64::from(u32::MAX)) as u32;
            events.push(Event::GoAway {
                last_stream: last,
                code: 0,
                kind: crate::ErrorKind::H3GoAway,
            });
        }
        Ok(())
    }

    /// Reads a request stream's response as far as it came.
    fn read_request(&mut self, id: StreamId, events: &mut Vec<Event>) -> Result<(), Broken> {
        let Some(i) = self.streams.iter().position(|s| s.id == id) else {
            // A stream given up on: what still comes is dropped.
            return Ok(());
        };
        let s = &mut self.streams[i];
        let decoder = &mut self.session.decoder;
        let (compressed, decoded) = (&mut self.headers_compressed, &mut self.headers_decoded);
        let (status, body, watch, msg) = (&mut s.status, &mut s.body, &mut s.watch, &mut s.msg);
        let number = s.number;
        let kept = &mut self.kept;
        let read = read_stream(&mut self.quic.conn, id, &mut |bytes| {
            let mut bad_event = false;
            msg.feed(bytes, decoder, &mut |p| match p {
                Part::Status(st) if st >= 200 => {
                    *status = st;
                    if let Some(k) = kept.as_mut() {
                        k.headers.clear();
                        k.body.clear();
                    }
                    if let Some(w) = watch.as_mut() {
                        w.start();
                    }
                }
                Part::Field { name, value } => {
                    *decoded += (name.len() + value.len()) as u64;
                    if let Some(k) = kept.as_mut().filter(|_| *status >= 200) {
                        k.headers.push((
                            String::from_utf8_lossy(name).into_owned(),
                            String::from_utf8_lossy(value).into_owned(),
                        ));
                    }
                }
                Part::Data(d) => {
                    *body += d.len() as u64;
                    if let Some(k) = kept.as_mut() {
                        k.cut |= crate::proto::keep_body(&mut k.body, d);
                    }
                    if let Some(w) = watch.as_mut() {
                        if w.payload(d).is_err() {
                            bad_event = true;
                        } else {
                            w.piece();
                            if let Some(progress) = w.take() {
                                events.push(Event::Progress {
                                    stream: number,
                                    progress,
                                });
                            }
                        }
                    }
                }
                _ => {}
            })?;
            *compressed += bytes.len() as u64;
            if bad_event {
                return Err(H3Error::new(Code::REQUEST_CANCELLED, "a broken event"));
            }
            Ok(())
        });
        let (ended, reset, failure) = match read {
            Read::Blocked => (false, None, None),
            Read::Ended => (true, None, None),
            Read::Reset(code) => (false, Some(code), None),
            Read::Failed(e) => (false, None, Some(e)),
        };
        let number = self.streams[i].number;
        if let Some(e) = failure {
            // A malformed response fails its stream only (RFC 9114 §4.1.2).
            let broken_event = e.code == Code::REQUEST_CANCELLED;
            let s = self.streams.swap_remove(i);
            let code = VarInt::from_u64(e.code.0).unwrap_or(VarInt::MAX);
            let _ = self.quic.conn.recv_stream(s.id).stop(code);
            self.outbox.drop_stream(s.id);
            if !e.is_stream_error() {
                // The connection's state is in doubt: it is over.
                return Err(self.fail(&e));
            }
            events.push(if broken_event {
                Event::StreamBroken {
                    stream: number,
                    kind: crate::ErrorKind::StreamEvent,
                }
            } else {
                Event::Malformed { stream: number }
            });
            return Ok(());
        }
        if let Some(code) = reset {
            self.streams.swap_remove(i);
            self.resets.count(code);
            events.push(Event::Reset {
                stream: number,
                code: code.min(u64::from(u32::MAX)) as u32,
                refused: code == stampede_wire::h3::Code::REQUEST_REJECTED.0,
                kind: crate::ErrorKind::H3StreamReset,
            });
            return Ok(());
        }
        if let Some(required) = self.streams[i].msg.take_ack() {
            self.session
                .ack(&mut self.quic.conn, &mut self.outbox, id, required);
        }
        if ended {
            let s = self.streams.swap_remove(i);
            if s.msg.finish().is_err() || s.status == 0 {
                events.push(Event::Malformed { stream: number });
                return Ok(());
            }
            self.answered += 1;
            events.push(Event::Response(Response {
                stream: number,
                status: s.status,
                body: s.body,
                close: false,
                reused: self.answered > 1,
                fresh: false,
                grpc: None,
            }));
        }
        Ok(())
    }
}

/// How a lost connection ended, in the words of [`H3Conn::end`]; `None` for this
/// end's own orderly close.
fn ending(reason: &ConnectionError, connected: bool, retried: bool) -> Option<String> {
    // Transport codes by their RFC 9000 names; QUIC's CRYPTO_ERROR range by TLS's
    // alert.
    let transport = |code: quinn_proto::TransportErrorCode| {
        let n = u64::from(code);
        if (0x100..0x200).contains(&n) {
            format!("CRYPTO_ERROR (TLS alert {})", n - 0x100)
        } else {
            format!("{code:?}")
        }
    };
    Some(match reason {
        ConnectionError::ApplicationClosed(c) => format!(
            "closed by the server: {}",
            Code(u64::from(c.error_code)).name()
        ),
        ConnectionError::ConnectionClosed(c) => {
            format!("closed by the server: {}", transport(c.error_code))
        }
        ConnectionError::TransportError(e) => format!("closed here: {}", transport(e.code)),
        ConnectionError::TimedOut if connected => "idle timeout".into(),
        ConnectionError::TimedOut if retried => "handshake timeout after a Retry".into(),
        ConnectionError::TimedOut => "handshake timeout".into(),
        ConnectionError::VersionMismatch => "version negotiation".into(),
        ConnectionError::Reset => "stateless reset".into(),
        ConnectionError::CidsExhausted => "connection IDs exhausted".into(),
        ConnectionError::LocallyClosed => return None,
    })
}

/// The kind a lost connection's requests fail with.
fn lost(reason: &ConnectionError, connected: bool) -> ErrorKind {
    let code = match reason {
        ConnectionError::TransportError(e) => Some(u64::from(e.code)),
        ConnectionError::ConnectionClosed(c) => Some(u64::from(c.error_code)),
        _ => None,
    };
    match reason {
        ConnectionError::TimedOut if !connected => ErrorKind::ConnectTimeout,
        ConnectionError::TimedOut => ErrorKind::QuicIdleTimeout,
        ConnectionError::VersionMismatch => ErrorKind::QuicVersion,
        // QUIC's CRYPTO_ERROR range carries TLS's alert: 42 to 48 are the
        // certificate's (bad, unsupported, revoked, expired, unknown, unknown CA).
        _ if code.is_some_and(|c| (0x100 + 42..=0x100 + 48).contains(&c)) => {
            ErrorKind::TlsCertificate
        }
        _ if code.is_some_and(|c| (0x100..0x200).contains(&c)) => ErrorKind::TlsHandshake,
        ConnectionError::TransportError(_) | ConnectionError::ConnectionClosed(_) => {
            ErrorKind::QuicTransport
        }
        ConnectionError::ApplicationClosed(_) => ErrorKind::H3Protocol,
        ConnectionError::Reset => ErrorKind::Reset,
        ConnectionError::LocallyClosed | ConnectionError::CidsExhausted => ErrorKind::Closed,
    }
}

#[cfg(test)]
mod tests;
