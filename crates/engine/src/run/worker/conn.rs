//! A connection slot: its transport (a [`Link`]), the protocol value it holds, the
//! requests it has in flight, and what the run times on it (first byte, responses).
//! The loop owns the slots; this is what one of them is.

use std::collections::VecDeque;
use std::time::Instant;

use crate::error::ErrorKind;
use crate::measure::raw::Facts;
use crate::measure::recorder::Recorder;
use crate::proto::Proto;
use crate::run::link::Link;
pub(super) use crate::run::link::State;

use super::stream::StreamClock;

#[derive(Clone, Copy)]
pub(super) struct Pending {
    pub(super) intended: Instant,
    pub(super) sent: Instant,
    /// HTTP/2: the stream carrying it (0 until its HEADERS are queued).
    pub(super) stream: u32,
    /// HTTP/2: times the server refused its stream unprocessed (REFUSED_STREAM).
    pub(super) refused: u8,
    /// Redirects followed for it so far (see [`Worker::follow`]).
    pub(super) hops: u8,
    /// Which of the run's requests it is: its place in the list of requests taken in
    /// turn, or its session step (0 for a run of one request).
    pub(super) target: u32,
}

impl Facts {
    /// The record of pending request `p` that failed with `kind` at `now` on
    /// connection `serial` (never written when the connection was never made).
    #[cold]
    pub(super) fn failed(p: &Pending, kind: ErrorKind, now: Instant, serial: u64) -> Facts {
        Facts {
            intended: p.intended,
            sent: (!kind.is_connect()).then_some(p.sent),
            first_byte: None,
            end: now,
            status: 0,
            bytes: 0,
            error: Some(kind),
            connection: serial,
            target: p.target,
        }
    }
}

impl Pending {
    /// A request meant to start at `intended`, sent at `sent`, without a stream yet.
    #[inline]
    pub(super) fn new(intended: Instant, sent: Instant) -> Pending {
        Pending {
            intended,
            sent,
            stream: 0,
            refused: 0,
            hops: 0,
            target: 0,
        }
    }
}

pub(super) struct Conn {
    /// The transport: socket, dial, handshake, back-off.
    pub(super) link: Link,
    /// HTTP/1.1 or HTTP/2: what to write, and what the bytes read mean.
    pub(super) proto: Proto,
    pub(super) pending: VecDeque<Pending>,
    /// When the last write of requests finished.
    pub(super) write_done: Instant,
    /// Connect time to charge to the next completed request (0 once charged).
    pub(super) connect_us: u64,
    /// TLS with HTTP/2 offered: nothing is written until ALPN has decided.
    pub(super) alpn_pending: bool,
    /// When the response being read began, if the protocol says (HTTP/1).
    pub(super) first_byte: Option<Instant>,
    /// Responses completed on this slot over the run.
    pub(super) completed_total: u64,
    /// No response yet since the last connect (for the time to first byte).
    pub(super) awaiting_first: bool,
    /// The batch's request bytes when a script builds them or several requests take
    /// turns (empty otherwise: the worker's prepared copy is sent).
    pub(super) own: Vec<u8>,
    /// Several requests in turn: the one this connection sends next.
    pub(super) turn: usize,
    /// The worker's count of connections opened when this slot's socket was (which
    /// connection a request went on, in its record).
    pub(super) serial: u64,
    /// Runs that time streams: the watched responses in progress (empty otherwise).
    pub(super) clocks: Vec<StreamClock>,
    /// When its protocol's timer is set on the worker's (`None`: not set).
    pub(super) timer_due: Option<Instant>,
}

impl Conn {
    pub(super) fn new(proto: Proto, pipeline: usize, start: Instant) -> Conn {
        Conn {
            link: Link::new(start),
            proto,
            pending: VecDeque::with_capacity(pipeline),
            write_done: start,
            connect_us: 0,
            alpn_pending: false,
            first_byte: None,
            completed_total: 0,
            awaiting_first: false,
            own: Vec::new(),
            turn: 0,
            serial: 0,
            clocks: Vec::new(),
            timer_due: None,
        }
    }

    /// Whether an open connection has bytes waiting for the socket: request bytes,
    /// HTTP/2 frames, or TLS records.
    pub(super) fn has_output(&mut self) -> bool {
        self.link.state() == State::Open && (self.proto.has_output() || self.link.tls_wants_write())
    }

    /// Before the socket goes, the protocol's goodbye goes out, as far as the socket
    /// takes it now: QUIC's close; WebSocket's due close (answering the server's close
    /// or broken rule) or, with `goodbye`, 1000 from an open connection (a session's
    /// end, the run's). What the connection counted of its own joins `rec`.
    #[cold]
    pub(super) fn part(&mut self, goodbye: bool, now: Instant, rec: &mut Recorder) {
        let open = self.link.state() == State::Open;
        if self.proto.part(goodbye && open, now) {
            match self.proto.datagrams() {
                Some((segment, ecn)) => {
                    let _ = self
                        .link
                        .send_datagrams(self.proto.output(&[]), segment, ecn);
                }
                None if open => {
                    let _ = self.link.write(self.proto.output(&[]));
                    let _ = self.link.flush_tls();
                }
                None => {}
            }
        }
        self.proto.add_figures(rec);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::connector::Connector;
    use crate::spec::config::Config;
    use crate::{RequestBuilder, Target};

    #[test]
    fn a_slot_starts_closed_and_idle_of_work() {
        let t = Target::parse("http://127.0.0.1:9/").unwrap();
        let spec = crate::LoadSpec::new(
            t.clone(),
            RequestBuilder::native(&t, "GET", true).build().unwrap(),
        );
        let connector = Connector::new(&Config::of(spec.clone()));
        let now = Instant::now();
        let mut c = Conn::new(connector.fresh(), 4, now);
        assert!(c.link.state() == State::Closed && !c.link.connected());
        assert!(c.pending.is_empty());
        assert!(!c.proto.speaks_http2());
        // Nothing to write until it is open.
        c.proto.send(0..10);
        c.proto.queue(1);
        assert!(!c.has_output());
        let p = Pending::new(now, now);
        assert_eq!((p.stream, p.refused, p.hops), (0, 0, 0));
        // h2c speaks HTTP/2 from the first byte; over TLS it waits for ALPN.
        let mut h2c = spec.clone();
        h2c.load.protocol.http2 = true;
        let connector = Connector::new(&Config::of(h2c));
        assert!(Conn::new(connector.fresh(), 4, now).proto.speaks_http2());
    }
}
