//! HTTP/3's connection-wide streams (RFC 9114 §6.2, RFC 9204 §4.2), the same at
//! both ends: this end's control stream with its SETTINGS, its QPACK decoder stream
//! when its table is not empty, and the peer's unidirectional streams read by type —
//! the control stream, QPACK's encoder stream (into the connection's decoder), the
//! decoder stream (this end inserts nothing, so its bytes are only bounded), and
//! reserved or unknown types, refused with STOP_SENDING and dropped. A second
//! critical stream, a critical stream's end, a push stream (no push is ever allowed)
//! are the connection's errors, each with HTTP/3's code.
//!
//! [`Outbox`] holds what a stream's flow control did not take yet, for any stream.

use quinn_proto::{Connection, Dir, StreamId, VarInt};
use stampede_wire::h3::message::{Control, ControlEvent};
use stampede_wire::h3::qpack::Decoder;
use stampede_wire::h3::{put_varint, stream, varint, Code, H3Error, Settings};

/// How far a read of a stream went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Read {
    /// All that came was taken; more may come.
    Blocked,
    /// The stream ended (its FIN) after what was taken.
    Ended,
    /// The peer reset it with this code.
    Reset(u64),
    /// What `on` refused.
    Failed(H3Error),
}

/// Reads what stream `id` holds, in order, handing each piece to `on` until it
/// refuses one; a stream already gone reads as blocked.
pub fn read_stream(
    conn: &mut Connection,
    id: StreamId,
    on: &mut dyn FnMut(&[u8]) -> Result<(), H3Error>,
) -> Read {
    let mut rs = conn.recv_stream(id);
    let Ok(mut chunks) = rs.read(true) else {
        return Read::Blocked;
    };
    let r = loop {
        match chunks.next(usize::MAX) {
            Ok(Some(chunk)) => {
                if let Err(e) = on(&chunk.bytes) {
                    break Read::Failed(e);
                }
            }
            Ok(None) => break Read::Ended,
            Err(quinn_proto::ReadError::Blocked) => break Read::Blocked,
            Err(quinn_proto::ReadError::Reset(code)) => break Read::Reset(code.into_inner()),
        }
    };
    let _ = chunks.finalize();
    r
}

/// Which end this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Client,
    Server,
}

/// What one of the peer's unidirectional streams turned out to be.
#[derive(Debug)]
enum Kind {
    /// Its type is still being read (`n` bytes of the varint so far).
    Typing {
        head: [u8; 8],
        n: usize,
    },
    Control(Box<Control>),
    Encoder,
    Decoder,
    /// Refused (an unknown or reserved type): whatever comes is dropped.
    Ignored,
}

/// HTTP/3's connection-wide state at one end (see the module's note).
#[derive(Debug)]
pub struct Session {
    role: Role,
    /// Decodes the peer's field sections; fed by its encoder stream.
    pub decoder: Decoder,
    settings: Settings,
    /// The peer's unidirectional streams.
    incoming: Vec<(StreamId, Kind)>,
    seen_control: bool,
    seen_encoder: bool,
    seen_decoder: bool,
    /// This end's decoder stream (only with a dynamic table).
    decoder_stream: Option<StreamId>,
    /// The peer's SETTINGS, once they came.
    pub peer: Option<Settings>,
    /// The peer's last GOAWAY: no request stream at or past this ID is served.
    pub goaway: Option<u64>,
    /// Bytes the peer's decoder stream brought (bounded: nothing is kept).
    pub decoder_bytes: u64,
    /// The peer's decoder instructions, read (see `DecoderInstructions`).
    instructions: stampede_wire::h3::qpack::DecoderInstructions,
}

/// The most a peer's decoder stream may send while this end inserts nothing.
const MAX_DECODER_BYTES: u64 = 64 * 1024;

impl Session {
    /// The state of a new connection whose decoder refuses field sections over
    /// `max_section` bytes and keeps a dynamic table of up to `table` bytes.
    pub fn new(role: Role, max_section: usize, table: usize) -> Session {
        Session {
            role,
            decoder: Decoder::with_table(max_section, table),
            settings: Settings {
                qpack_max_table_capacity: table as u64,
                max_field_section_size: Some(max_section as u64),
                qpack_blocked_streams: 0,
            },
            incoming: Vec::new(),
            seen_control: false,
            seen_encoder: false,
            seen_decoder: false,
            decoder_stream: None,
            peer: None,
            goaway: None,
            decoder_bytes: 0,
            instructions: Default::default(),
        }
    }

    /// Opens this end's control stream (with SETTINGS) and, with a dynamic table,
    /// its decoder stream. The connection must allow three unidirectional streams,
    /// as HTTP/3 requires (RFC 9114 §6.2).
    pub fn open(&mut self, conn: &mut Connection, out: &mut Outbox) -> Result<(), H3Error> {
        let refused = || {
            H3Error::new(
                Code::STREAM_CREATION_ERROR,
                "the peer allows too few unidirectional streams",
            )
        };
        let control = conn.streams().open(Dir::Uni).ok_or_else(refused)?;
        let mut bytes = Vec::with_capacity(32);
        put_varint(&mut bytes, stream::CONTROL);
        self.settings.write(&mut bytes);
        let _ = out.write(conn, control, &bytes, false);
        if self.settings.qpack_max_table_capacity > 0 {
            let d = conn.streams().open(Dir::Uni).ok_or_else(refused)?;
            let _ = out.write(conn, d, &[stream::QPACK_DECODER as u8], false);
            self.decoder_stream = Some(d);
        }
        Ok(())
    }

    /// Acknowledges a field section of request stream `id` that used `required`
    /// insertions, and tells the encoder of insertions it has not heard of.
    pub fn ack(&mut self, conn: &mut Connection, out: &mut Outbox, id: StreamId, required: u64) {
        if let Some(d) = self.decoder_stream {
            let mut b = Vec::with_capacity(8);
            self.decoder.ack(&mut b, u64::from(id), required);
            let _ = out.write(conn, d, &b, false);
        }
    }

    /// Reads what one of the peer's unidirectional streams brought; control stream
    /// events go to `on`. An error is the connection's.
    pub fn read(
        &mut self,
        conn: &mut Connection,
        out: &mut Outbox,
        id: StreamId,
        on: &mut dyn FnMut(ControlEvent),
    ) -> Result<(), H3Error> {
        let at = match self.incoming.iter().position(|(s, _)| *s == id) {
            Some(i) => i,
            None => {
                self.incoming
                    .push((id, Kind::Typing { head: [0; 8], n: 0 }));
                self.incoming.len() - 1
            }
        };
        let mut stop = false;
        let (ended, result) = match read_stream(conn, id, &mut |b| self.take(at, b, on, &mut stop))
        {
            Read::Blocked => (false, Ok(())),
            Read::Ended | Read::Reset(_) => (true, Ok(())),
            Read::Failed(e) => (false, Err(e)),
        };
        result?;
        let critical = matches!(
            self.incoming[at].1,
            Kind::Control(_) | Kind::Encoder | Kind::Decoder
        );
        let encoder = matches!(self.incoming[at].1, Kind::Encoder);
        if stop {
            let _ = conn
                .recv_stream(id)
                .stop(VarInt::from_u64(Code::STREAM_CREATION_ERROR.0).unwrap_or(VarInt::MAX));
        }
        if ended {
            self.incoming.swap_remove(at);
            if critical {
                return Err(H3Error::new(
                    Code::CLOSED_CRITICAL_STREAM,
                    "a control or QPACK stream was closed",
                ));
            }
        }
        if let (Some(d), true) = (self.decoder_stream, encoder) {
            // Insertions the encoder may now reference without blocking a stream.
            let mut b = Vec::new();
            self.decoder.increment(&mut b);
            if !b.is_empty() {
                let _ = out.write(conn, d, &b, false);
            }
        }
        Ok(())
    }

    /// Takes a chunk of the peer's unidirectional stream `incoming[at]`.
    fn take(
        &mut self,
        at: usize,
        mut bytes: &[u8],
        on: &mut dyn FnMut(ControlEvent),
        stop: &mut bool,
    ) -> Result<(), H3Error> {
        if let Kind::Typing { head, n } = &mut self.incoming[at].1 {
            while *n < 8 && !bytes.is_empty() {
                head[*n] = bytes[0];
                *n += 1;
                bytes = &bytes[1..];
                if let Some((t, _)) = varint(&head[..*n]) {
                    let kind = self.kind(t)?;
                    *stop = matches!(kind, Kind::Ignored);
                    self.incoming[at].1 = kind;
                    break;
                }
            }
        }
        if bytes.is_empty() {
            return Ok(());
        }
        match &mut self.incoming[at].1 {
            Kind::Typing { .. } | Kind::Ignored => Ok(()),
            Kind::Control(c) => {
                let (peer, goaway) = (&mut self.peer, &mut self.goaway);
                c.feed(bytes, &mut |ev| {
                    match ev {
                        ControlEvent::Settings(s) => *peer = Some(s),
                        ControlEvent::Goaway(g) => *goaway = Some(g),
                    }
                    on(ev)
                })
            }
            Kind::Encoder => self.decoder.encoder_stream(bytes),
            Kind::Decoder => {
                self.decoder_bytes += bytes.len() as u64;
                if self.decoder_bytes > MAX_DECODER_BYTES {
                    return Err(H3Error::new(
                        Code::QPACK_DECODER_STREAM_ERROR,
                        "decoder instructions for a table this end never filled",
                    ));
                }
                self.instructions.feed(bytes)
            }
        }
    }

    /// What a stream of type `t` is, or the connection's error.
    fn kind(&mut self, t: u64) -> Result<Kind, H3Error> {
        let twice = |seen: &mut bool| {
            if std::mem::replace(seen, true) {
                Err(H3Error::new(
                    Code::STREAM_CREATION_ERROR,
                    "a second control or QPACK stream",
                ))
            } else {
                Ok(())
            }
        };
        Ok(match t {
            stream::CONTROL => {
                twice(&mut self.seen_control)?;
                Kind::Control(Box::default())
            }
            stream::QPACK_ENCODER => {
                twice(&mut self.seen_encoder)?;
                Kind::Encoder
            }
            stream::QPACK_DECODER => {
                twice(&mut self.seen_decoder)?;
                Kind::Decoder
            }
            stream::PUSH if self.role == Role::Client => {
                return Err(H3Error::new(
                    Code::ID_ERROR,
                    "a push stream though no push was allowed",
                ))
            }
            stream::PUSH => {
                return Err(H3Error::new(
                    Code::STREAM_CREATION_ERROR,
                    "a push stream from a client",
                ))
            }
            _ => Kind::Ignored,
        })
    }
}

/// Bytes written to streams whose flow control did not take them all yet, with the
/// end of stream (FIN) to send after them.
#[derive(Debug, Default)]
pub struct Outbox {
    waiting: Vec<(StreamId, Vec<u8>, bool)>,
}

/// Writes as much of `bytes` as the stream takes; returns how much. Writes until
/// quinn-proto says it is blocked, since only that (not a short write) has it wake
/// the stream with `Writable` once the peer's window opens.
fn write_all(s: &mut quinn_proto::SendStream<'_>, bytes: &[u8]) -> Result<usize, Gone> {
    let mut at = 0;
    while at < bytes.len() {
        match s.write(&bytes[at..]) {
            Ok(n) => at += n,
            Err(quinn_proto::WriteError::Blocked) => break,
            Err(_) => return Err(Gone),
        }
    }
    Ok(at)
}

/// A stream that cannot be written any more: the peer stopped it, or it is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gone;

impl Outbox {
    /// Writes `bytes` to stream `id`, then its end when `fin`; what the stream's
    /// window does not take now waits for [`Outbox::flush`]. Returns `Err(Gone)`
    /// when the stream cannot be written (the peer stopped it).
    pub fn write(
        &mut self,
        conn: &mut Connection,
        id: StreamId,
        bytes: &[u8],
        fin: bool,
    ) -> Result<(), Gone> {
        if let Some(w) = self.waiting.iter_mut().find(|w| w.0 == id) {
            w.1.extend_from_slice(bytes);
            w.2 |= fin;
            return Ok(());
        }
        let mut s = conn.send_stream(id);
        let n = write_all(&mut s, bytes)?;
        self.after_write(&mut s, id, &bytes[n..], fin);
        Ok(())
    }

    /// Ends the stream when all of it went and it is to end (`fin`), or keeps what
    /// the window did not take (`rest`) for [`Outbox::flush`].
    fn after_write(
        &mut self,
        s: &mut quinn_proto::SendStream<'_>,
        id: StreamId,
        rest: &[u8],
        fin: bool,
    ) {
        if !rest.is_empty() {
            self.waiting.push((id, rest.to_vec(), fin));
        } else if fin {
            let _ = s.finish();
        }
    }

    /// [`Outbox::write`] of bytes held in a shared buffer: QUIC keeps a reference to
    /// them until they are acknowledged rather than a copy (a request sent over and
    /// over costs no allocation).
    pub fn write_shared(
        &mut self,
        conn: &mut Connection,
        id: StreamId,
        bytes: &bytes::Bytes,
        fin: bool,
    ) -> Result<(), Gone> {
        if self.waiting.iter().any(|w| w.0 == id) {
            return self.write(conn, id, bytes, fin);
        }
        let mut s = conn.send_stream(id);
        let mut chunk = [bytes.clone()];
        let n = match s.write_chunks(&mut chunk) {
            Ok(w) => w.bytes,
            Err(quinn_proto::WriteError::Blocked) => 0,
            Err(_) => return Err(Gone),
        };
        self.after_write(&mut s, id, &bytes[n..], fin);
        Ok(())
    }

    /// Writes what stream `id` still owes, as far as its window allows now.
    pub fn flush(&mut self, conn: &mut Connection, id: StreamId) -> Result<(), Gone> {
        let Some(i) = self.waiting.iter().position(|w| w.0 == id) else {
            return Ok(());
        };
        let mut s = conn.send_stream(id);
        let w = &mut self.waiting[i];
        match write_all(&mut s, &w.1) {
            Ok(n) => {
                w.1.drain(..n);
            }
            Err(Gone) => {
                self.waiting.swap_remove(i);
                return Err(Gone);
            }
        }
        if w.1.is_empty() {
            if w.2 {
                let _ = s.finish();
            }
            self.waiting.swap_remove(i);
        }
        Ok(())
    }

    /// Whether stream `id` still has bytes waiting.
    pub fn owes(&self, id: StreamId) -> bool {
        self.waiting.iter().any(|w| w.0 == id)
    }

    /// Forgets stream `id`'s waiting bytes (it was reset or stopped).
    pub fn drop_stream(&mut self, id: StreamId) {
        self.waiting.retain(|w| w.0 != id);
    }
}
