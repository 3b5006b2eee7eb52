//! Connections of the worker: connecting (TCP, then TLS and its ALPN choice),
//! writing what a connection's protocol has queued, and closing, with the failures
//! each step can end in.

use std::io::{self, Read, Write};
use std::time::{Duration, Instant};

use mio::Token;

use super::{fresh_proto, State, Worker};
use crate::error::ErrorKind;
use crate::measure::recorder::micros;
use crate::measure::result::TlsSession;
use crate::proto::h2::H2Conn;
use crate::proto::Proto;
use crate::run::io::Stream;
use crate::spec::net::TunnelReply;

impl Worker<'_> {
    /// Starts a connection for the slot's waiting requests.
    pub(super) fn connect(&mut self, ci: usize, now: Instant) {
        let c = &mut self.conns[ci];
        c.connect_started = now;
        c.awaiting_first = true;
        c.handshake_started = None;
        c.first_byte = None;
        // The protocol is fresh (a new slot, or reset when the last socket went).
        c.alpn_pending = self.spec.load.http2 && self.spec.tls.is_some();
        let tls = self
            .spec
            .tls
            .as_ref()
            .map(|cfg| (cfg, self.spec.target.host.as_str()));
        let address = self
            .dial
            .address
            .as_ref()
            .unwrap_or(&self.spec.target.address);
        match Stream::connect(
            address,
            tls,
            &self.spec.load.socket,
            self.dial.tunnel.is_some(),
        ) {
            Ok(mut s) => {
                if self.pace.nap && !s.stamp_arrivals() {
                    // Without arrival stamps a late read would time late: no naps.
                    self.pace.nap = false;
                }
                if let Err(e) = s.register(self.poll.registry(), Token(ci)) {
                    self.connect_failed(ci, now, &e);
                    return;
                }
                c.stream = Some(s);
                c.state = State::Connecting;
                self.rec.connections_opened += 1;
                self.sockets += 1;
            }
            Err(e) => self.connect_failed(ci, now, &e),
        }
    }

    /// The socket became writable while connecting: connected, or failed.
    pub(super) fn on_connecting(&mut self, ci: usize, now: Instant) {
        let c = &mut self.conns[ci];
        let Some(s) = &c.stream else { return };
        match s.connected() {
            Ok(false) => {}
            Ok(true) if self.dial.tunnel.is_some() => {
                c.state = State::Tunnel(0);
                c.reply.clear();
                let mut buf = [0u8; 0];
                self.on_tunnel(ci, &mut buf, now);
            }
            Ok(true) => self.opened(ci, now),
            Err(e) => self.connect_failed(ci, now, &e),
        }
    }

    /// The connection reached the server (directly, or through the proxy's tunnel):
    /// its requests go out, after the TLS handshake when there is one.
    fn opened(&mut self, ci: usize, now: Instant) {
        let c = &mut self.conns[ci];
        c.state = State::Open;
        c.failures = 0;
        c.connect_us = micros(c.connect_started, now);
        if matches!(c.stream, Some(Stream::Tls(_))) {
            c.handshake_started = Some(now);
        }
        for p in c.pending.iter_mut() {
            p.sent = now;
        }
        // Requests that lost their stream with the last socket get one now.
        self.open_streams(ci);
        self.write(ci, now);
        if self.sess.timed && self.conns[ci].state == State::Open {
            // Timed steps that fell due while connecting.
            self.send_due(ci, now);
        }
    }

    /// Connected to the proxy: writes the rest of CONNECT, then reads the proxy's
    /// answer into the connection's `reply` (`buf` is scratch; empty right after the
    /// connect, when nothing can have been answered). 2xx starts TLS to the server;
    /// anything else fails the connect as refused by the proxy.
    pub(super) fn on_tunnel(&mut self, ci: usize, buf: &mut [u8], now: Instant) {
        let request = self.dial.tunnel.as_deref().unwrap_or_default();
        let c = &mut self.conns[ci];
        let (State::Tunnel(mut written), Some(s)) = (c.state, &mut c.stream) else {
            return;
        };
        while written < request.len() {
            match s.write(&request[written..]) {
                Ok(n) => written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.connect_failed(ci, now, &e),
            }
        }
        c.state = State::Tunnel(written);
        if written < request.len() || buf.is_empty() {
            return;
        }
        loop {
            let c = &mut self.conns[ci];
            let Some(s) = &mut c.stream else { return };
            match s.read(buf) {
                Ok(0) => return self.connect_failed_as(ci, now, ErrorKind::ProxyRefused),
                Ok(n) => {
                    c.reply.extend_from_slice(&buf[..n]);
                    match crate::spec::net::tunnel_reply(&c.reply) {
                        TunnelReply::Partial => {}
                        TunnelReply::Refused(_) => {
                            return self.connect_failed_as(ci, now, ErrorKind::ProxyRefused)
                        }
                        TunnelReply::Open => {
                            c.reply = Vec::new();
                            let tls = self.spec.tls.as_ref().expect("https has TLS settings");
                            let tcp = c.stream.take().expect("checked above");
                            match tcp.start_tls(tls, &self.spec.target.host) {
                                Ok(t) => c.stream = Some(t),
                                Err(e) => {
                                    // The TCP socket closed with the failed stream.
                                    self.sockets -= 1;
                                    return self.connect_failed(ci, now, &e);
                                }
                            }
                            return self.opened(ci, now);
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.connect_failed(ci, now, &e),
            }
        }
    }

    pub(super) fn connect_failed(&mut self, ci: usize, now: Instant, e: &io::Error) {
        self.connect_failed_as(ci, now, ErrorKind::from_connect_error(e));
    }

    /// A connection that could not be established (TCP or TLS): its requests fail with
    /// `kind`, and the slot backs off before trying again.
    pub(super) fn connect_failed_as(&mut self, ci: usize, now: Instant, kind: ErrorKind) {
        self.drop_socket(ci);
        if self.conns[ci].session.is_some() {
            return self.fail_pending(ci, now, kind);
        }
        let c = &mut self.conns[ci];
        c.failures += 1;
        // Back off briefly so a dead server does not turn the worker into a spin loop.
        let backoff = Duration::from_millis((1u64 << c.failures.min(7)).min(100));
        c.state = State::Backoff(now + backoff);
        self.fail_pending(ci, now, kind);
    }

    /// Writes what the connection's protocol has queued until it is all written or
    /// the socket would block (the next writable edge goes on); TLS records the
    /// socket did not take go out then too.
    pub(super) fn write(&mut self, ci: usize, now: Instant) {
        let c = &mut self.conns[ci];
        let Some(s) = &mut c.stream else { return };
        if c.alpn_pending {
            // Only the handshake goes out until ALPN says which protocol to speak.
            if let Some(t) = s.tls() {
                if let Err(e) = t.flush_pending() {
                    return self.io_failed(ci, now, &e, ErrorKind::from_write_error(&e));
                }
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
            match s.write(out) {
                Ok(0) => {
                    let e = io::ErrorKind::WriteZero.into();
                    return self.io_failed(ci, now, &e, ErrorKind::from_write_error(&e));
                }
                Ok(n) => {
                    c.proto.wrote(n);
                    self.rec.bytes_written += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.io_failed(ci, now, &e, ErrorKind::from_write_error(&e)),
            }
        }
        if let Some(t) = s.tls() {
            // Ciphertext the socket did not take goes out on the next writable edge.
            if let Err(e) = t.flush_pending() {
                return self.io_failed(ci, now, &e, ErrorKind::from_write_error(&e));
            }
        }
        c.write_done = now;
    }

    /// A socket error: during a TLS handshake it is a failed connect (counted by TLS
    /// kind, with back-off); afterwards the connection closes and its requests fail
    /// with `kind`, or as a certificate failure when the server refused ours after
    /// its side of the handshake (TLS 1.3 checks client certificates last).
    pub(super) fn io_failed(&mut self, ci: usize, now: Instant, e: &io::Error, kind: ErrorKind) {
        if self.conns[ci].handshake_started.is_some() {
            return self.connect_failed_as(ci, now, ErrorKind::from_handshake_error(e));
        }
        let kind = match stampede_tls::classify(e) {
            Some(stampede_tls::Failure::Certificate) => ErrorKind::TlsCertificate,
            _ => kind,
        };
        self.fail_and_close(ci, now, kind)
    }

    /// Records the handshake's duration once it is over.
    #[inline]
    pub(super) fn check_handshake(&mut self, ci: usize, now: Instant) {
        let c = &mut self.conns[ci];
        let Some(started) = c.handshake_started else {
            return;
        };
        let Some(t) = c.stream.as_mut().and_then(Stream::tls) else {
            return;
        };
        if !t.is_handshaking() {
            c.handshake_started = None;
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
            self.rec.handshake(micros(started, now), resumed);
            if c.alpn_pending {
                // ALPN decided: HTTP/2, or HTTP/1.1 as the server prefers (fallback).
                c.alpn_pending = false;
                if h2 {
                    // HTTP/2 from now on: the requests queued get streams of it.
                    c.proto = Proto::H2(Box::new(H2Conn::with(self.spec.load.h2)));
                    for p in c.pending.iter_mut() {
                        p.stream = 0;
                    }
                    self.open_streams(ci);
                } else {
                    self.rec.h1_fallback += 1;
                }
                self.write(ci, now);
            }
        }
    }

    pub(super) fn fail_pending(&mut self, ci: usize, now: Instant, kind: ErrorKind) {
        if self.script.watch_sends && !self.conns[ci].pending.is_empty() {
            self.show_gone(ci);
        }
        while let Some(p) = self.conns[ci].pending.pop_front() {
            self.in_flight -= 1;
            self.rec.fail(now, kind, p.intended);
        }
        if self.conns[ci].session.is_some() {
            return self.end_session(ci, now, false);
        }
        if !matches!(self.conns[ci].state, State::Backoff(_)) {
            self.conns[ci].state = State::Closed;
            self.make_idle(ci);
        }
    }

    /// Closes the slot's socket; its protocol starts afresh for the next one, and
    /// requests still queued lose their streams.
    pub(super) fn drop_socket(&mut self, ci: usize) {
        let c = &mut self.conns[ci];
        if let Some(mut s) = c.stream.take() {
            s.deregister(self.poll.registry());
            // Closing with a reset: no FIN first (the descriptor's close sends RST).
            if !self.spec.load.socket.reset_on_close {
                s.shutdown();
            }
            self.sockets -= 1;
        }
        match &mut c.proto {
            Proto::H1(h) if !self.spec.load.http2 => h.reset(),
            _ => c.proto = fresh_proto(self.spec),
        }
        for p in c.pending.iter_mut() {
            p.stream = 0;
        }
        c.first_byte = None;
        c.reply.clear();
        c.state = State::Closed;
    }

    /// Closes the connection; anything still pending fails with `kind`.
    pub(super) fn fail_and_close(&mut self, ci: usize, now: Instant, kind: ErrorKind) {
        let was_idle = self.conns[ci].pending.is_empty();
        self.drop_socket(ci);
        if !was_idle {
            self.fail_pending(ci, now, kind);
        } else if self.conns[ci].session.is_some() {
            // A session between bursts whose connection went away: the next burst
            // reconnects.
        } else {
            self.make_idle(ci);
        }
    }
}
