//! Connections of the worker: dialling each slot's link (see [`crate::run::link`])
//! and what its outcome means for the slot's requests, TLS's ALPN choice, writing what
//! a connection's protocol has queued, and closing, with the failures each step can
//! end in.

use std::io;
use std::time::Instant;

use mio::Token;

use super::state::Dial;
use super::{State, Worker};
use crate::error::ErrorKind;
use crate::measure::raw::Facts;
use crate::measure::result::TlsSession;
use crate::proto::connector::Alpn;
use crate::run::link::{Dialer, Dialled};
use crate::spec::config::Config;

/// How `cfg`'s links are dialled by a worker with `dial`'s address and tunnel, for
/// its connection `nth`.
fn dialer<'a>(cfg: &'a Config, dial: &'a Dial, datagrams: bool, nth: u64) -> Dialer<'a> {
    Dialer {
        address: dial.address.as_ref().unwrap_or(&cfg.net.target.address),
        tls: (cfg.net.tls.as_ref()).map(|tls| (tls, cfg.net.target.host.as_str())),
        socket: &cfg.net.socket,
        tunnel: dial.tunnel.as_deref(),
        datagrams,
        gso: cfg.protocol.http3().is_some_and(|h| h.gso),
        nth,
    }
}

impl Worker<'_> {
    /// Starts a connection for the slot's waiting requests.
    pub(super) fn connect(&mut self, ci: usize, now: Instant) {
        let c = &mut self.conns[ci];
        c.awaiting_first = true;
        c.first_byte = None;
        // The protocol is fresh (a new slot, or reset when the last socket went).
        c.alpn_pending = self.connector.alpn_decides();
        let nth = self.dial.first_local + self.rec.tally.connections_opened;
        let d = dialer(self.cfg, &self.dial, self.connector.datagrams(), nth);
        match c
            .link
            .dial(&d, self.poll.registry(), Token(ci), self.pace.nap, now)
        {
            Ok(stamped) => {
                if self.pace.nap && !stamped {
                    // Without arrival stamps a late read would time late: no naps.
                    self.pace.nap = false;
                }
                self.rec.tally.connections_opened += 1;
                self.conns[ci].serial = self.rec.tally.connections_opened;
                self.sockets += 1;
                // A protocol with a handshake of its own (QUIC's) begins it with the
                // socket: its first datagram goes out once the socket is writable.
                let c = &mut self.conns[ci];
                let peer = c.link.datagrams().map(|d| (d.peer(), d.segments()));
                let host = &self.cfg.net.target.host;
                if let Err(kind) = self.connector.opened(&mut c.proto, peer, host, now) {
                    self.connect_failed_as(ci, now, kind);
                }
            }
            Err(kind) => self.connect_failed_as(ci, now, kind),
        }
    }

    /// A readiness event while the slot's link dials (connecting, or tunnelling
    /// through a proxy; `buf` is scratch): opened, failed, or still under way.
    pub(super) fn on_dial(&mut self, ci: usize, buf: &mut [u8], now: Instant) {
        // The socket is made: which connection this is no longer matters.
        let d = dialer(self.cfg, &self.dial, self.connector.datagrams(), 0);
        match self.conns[ci].link.advance(&d, buf, now) {
            Dialled::Waiting => {}
            Dialled::Open(us) => self.opened(ci, us, now),
            Dialled::Failed(kind) => self.connect_failed_as(ci, now, kind),
        }
    }

    /// The connection reached the server (directly, or through the proxy's tunnel),
    /// `us` after its dial began: its requests go out, after the TLS handshake when
    /// there is one.
    fn opened(&mut self, ci: usize, us: u64, now: Instant) {
        let c = &mut self.conns[ci];
        if self.dial.ring {
            c.link.onto_ring(ci);
        }
        c.connect_us = us;
        for p in c.pending.iter_mut() {
            p.sent = now;
        }
        // Requests that lost their stream with the last socket get one now.
        self.open_streams(ci);
        self.write(ci, now);
        if self.drive.timed() && self.conns[ci].link.state() == State::Open {
            // Timed steps that fell due while connecting.
            self.send_due(ci, now);
        }
    }

    /// A connection that could not be established (TCP, the proxy's tunnel or TLS):
    /// its requests fail with `kind`, and the slot backs off before trying again.
    pub(super) fn connect_failed_as(&mut self, ci: usize, now: Instant, kind: ErrorKind) {
        self.drop_socket(ci);
        if self.drive.session_on(ci) {
            return self.fail_pending(ci, now, kind);
        }
        self.conns[ci].link.back_off(now);
        self.fail_pending(ci, now, kind);
    }

    /// Writes what the connection's protocol has queued until it is all written or
    /// the socket would block (the next writable edge goes on); TLS records the
    /// socket did not take go out then too.
    pub(super) fn write(&mut self, ci: usize, now: Instant) {
        self.write_out(ci, now);
        if self.connector.timed() {
            self.rearm(ci);
        }
    }

    /// Puts the connection's next protocol timer, if it has one, on the worker's.
    #[inline]
    fn rearm(&mut self, ci: usize) {
        let c = &mut self.conns[ci];
        let next = c.proto.next_timeout();
        if next != c.timer_due {
            c.timer_due = next;
            if let Some(t) = next {
                self.protocol_timers.push(std::cmp::Reverse((t, ci)));
            }
        }
    }

    /// The protocols' timers that fell due: each connection's is handled, and what
    /// it readied (QUIC's acknowledgements, retransmissions, its close) written.
    pub(super) fn timeouts(&mut self, now: Instant) {
        while let Some(&std::cmp::Reverse((t, ci))) = self.protocol_timers.peek() {
            if t > now {
                return;
            }
            self.protocol_timers.pop();
            if self.conns[ci].timer_due != Some(t) {
                // Replaced by a later timer since it was set.
                continue;
            }
            self.conns[ci].timer_due = None;
            let mut events = std::mem::take(&mut self.events);
            events.clear();
            let r = self.conns[ci].proto.timeout(now, &mut events);
            let open = self.settle(ci, &events, now);
            self.events = events;
            match r {
                Err(broken) if open => self.broken(ci, now, broken.0),
                Err(_) => {}
                Ok(()) if open => {
                    let _ = self.after_input(ci, now);
                    self.rearm(ci);
                }
                Ok(()) => {}
            }
        }
    }

    /// A connection its protocol found broken: before the protocol's own handshake
    /// finished (QUIC's) that is a failed connect, with back-off; afterwards its
    /// requests fail with `kind`, after the close that is due goes out.
    pub(super) fn broken(&mut self, ci: usize, now: Instant, kind: ErrorKind) {
        if self.conns[ci].proto.handshaken() {
            // The close that is due goes out as the socket is dropped.
            self.fail_and_close(ci, now, kind)
        } else {
            self.connect_failed_as(ci, now, kind)
        }
    }

    fn write_out(&mut self, ci: usize, now: Instant) {
        let c = &mut self.conns[ci];
        if !c.link.connected() {
            return;
        }
        c.proto.prepare(now);
        if c.alpn_pending {
            // Only the handshake goes out until ALPN says which protocol to speak.
            if let Err(e) = c.link.flush_tls() {
                return self.io_failed(ci, now, &e, ErrorKind::from_write_error(&e));
            }
            return;
        }
        loop {
            let bytes = if self.prep.dynamic {
                &c.own
            } else {
                &self.prep.batch
            };
            let out = c.proto.output(bytes);
            if out.is_empty() {
                break;
            }
            let written = match c.proto.datagrams() {
                Some((segment, ecn)) => c.link.send_datagrams(out, segment, ecn),
                None => c.link.write(out),
            };
            match written {
                Ok(0) => {
                    let e = io::ErrorKind::WriteZero.into();
                    return self.io_failed(ci, now, &e, ErrorKind::from_write_error(&e));
                }
                Ok(n) => {
                    c.proto.wrote(n);
                    self.rec.tally.bytes_written += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.io_failed(ci, now, &e, ErrorKind::from_write_error(&e)),
            }
        }
        // Ciphertext the socket did not take goes out on the next writable edge.
        if let Err(e) = c.link.flush_tls() {
            return self.io_failed(ci, now, &e, ErrorKind::from_write_error(&e));
        }
        c.write_done = now;
    }

    /// A socket error: during a TLS handshake it is a failed connect (counted by TLS
    /// kind, with back-off); afterwards the connection closes and its requests fail
    /// with `kind`, or as a certificate failure when the server refused ours after
    /// its side of the handshake (TLS 1.3 checks client certificates last).
    pub(super) fn io_failed(&mut self, ci: usize, now: Instant, e: &io::Error, kind: ErrorKind) {
        if self.conns[ci].link.handshaking() {
            return self.connect_failed_as(ci, now, ErrorKind::from_handshake_error(e));
        }
        let kind = match stampede_tls::classify(e) {
            Some(stampede_tls::Failure::Certificate) => ErrorKind::TlsCertificate,
            _ => kind,
        };
        self.fail_and_close(ci, now, kind)
    }

    /// Records the handshake's duration once it is over. False: ALPN's choice ended
    /// the connection (a WebSocket over HTTP/2 to a server that chose otherwise).
    #[inline]
    pub(super) fn check_handshake(&mut self, ci: usize, now: Instant) -> bool {
        let c = &mut self.conns[ci];
        let Some(us) = c.link.handshake_done(now) else {
            return true;
        };
        if let Some(t) = c.link.tls() {
            let resumed = matches!(
                t.conn.handshake_kind(),
                Some(stampede_tls::rustls::HandshakeKind::Resumed)
            );
            if self.once.tls {
                self.once.tls = false;
                let info = TlsSession {
                    version: t.conn.protocol_version().map(|v| format!("{v:?}")),
                    cipher: t
                        .conn
                        .negotiated_cipher_suite()
                        .map(|s| format!("{:?}", s.suite())),
                    alpn: t.alpn().map(|a| String::from_utf8_lossy(a).into_owned()),
                };
                let mut g = self.shared.tls.lock().unwrap_or_else(|e| e.into_inner());
                g.get_or_insert(info);
            }
            let h2 = t.alpn() == Some(b"h2");
            self.rec.handshake(us, resumed);
            if c.alpn_pending {
                // ALPN decided: HTTP/2, or HTTP/1.1 as the server prefers (fallback).
                c.alpn_pending = false;
                match self.connector.alpn_chose(&mut c.proto, h2) {
                    Err(kind) => {
                        self.fail_and_close(ci, now, kind);
                        return false;
                    }
                    Ok(Alpn::Switched) => {
                        // The requests queued get streams of the new protocol.
                        for p in c.pending.iter_mut() {
                            p.stream = 0;
                        }
                        self.open_streams(ci);
                    }
                    Ok(Alpn::Kept) => {}
                    Ok(Alpn::FellBack) => self.rec.tls.h1_fallback += 1,
                }
                self.write(ci, now);
            }
        }
        true
    }

    pub(super) fn fail_pending(&mut self, ci: usize, now: Instant, kind: ErrorKind) {
        if self.script.watch_sends && !self.conns[ci].pending.is_empty() {
            self.show_gone(ci);
        }
        while let Some(p) = self.conns[ci].pending.pop_front() {
            self.in_flight -= 1;
            self.rec.fail(now, kind, (p.intended, p.target));
            if self.rec.raw.is_some() {
                let serial = self.conns[ci].serial;
                self.rec.raw(Facts::failed(&p, kind, now, serial));
            }
        }
        if self.drive.session_on(ci) {
            return self.end_session(ci, now, false);
        }
        if self.conns[ci].link.settle() {
            self.make_idle(ci);
        }
    }

    /// Closes the slot's socket; its protocol starts afresh for the next one, and
    /// requests still queued lose their streams.
    pub(super) fn drop_socket(&mut self, ci: usize) {
        let c = &mut self.conns[ci];
        c.timer_due = None;
        // The protocol's goodbye: QUIC's, so that the server lets the connection go
        // at once; WebSocket's at a session's end or a connection the worker closes.
        c.part(true, self.shared.control.clock().now(), &mut self.rec);
        if c.link
            .close(self.poll.registry(), self.cfg.net.socket.reset_on_close)
        {
            self.sockets -= 1;
        }
        self.connector.reset(&mut c.proto);
        for p in c.pending.iter_mut() {
            p.stream = 0;
        }
        c.first_byte = None;
        c.clocks.clear();
    }

    /// Closes the connection; anything still pending fails with `kind`.
    pub(super) fn fail_and_close(&mut self, ci: usize, now: Instant, kind: ErrorKind) {
        let was_idle = self.conns[ci].pending.is_empty();
        self.drop_socket(ci);
        if !was_idle {
            self.fail_pending(ci, now, kind);
        } else if self.drive.session_on(ci) {
            // A session between bursts whose connection went away: the next burst
            // reconnects.
        } else {
            self.make_idle(ci);
        }
    }
}
