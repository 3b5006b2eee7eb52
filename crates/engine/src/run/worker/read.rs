//! Input of the worker's connections: reading the socket within a budget, handing
//! the bytes to the connection's protocol, and settling the events it reports —
//! responses timed and recorded, streams refused, reset or cut off by a GOAWAY.

use std::io;
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::drive::Drive;
use super::{State, Worker, READS_PER_WAKE};
use crate::error::ErrorKind;
use crate::measure::raw::Facts;
use crate::measure::recorder::{micros, Timing};
use crate::proto::{Event, Note, Response};

impl Worker<'_> {
    /// Reads the connections whose read budget ran out last time (rare: out of line, so
    /// the loop's own code stays small).
    #[inline(never)]
    pub(super) fn read_again(&mut self, buf: &mut [u8]) {
        for (ci, closing) in std::mem::take(&mut self.reread) {
            if self.conns[ci].link.state() == State::Open {
                self.on_readable(ci, buf, self.shared.control.clock().now(), closing);
            }
        }
    }

    /// Reads until the socket is drained, or up to [`READS_PER_WAKE`] reads, after
    /// which the connection is queued to be read again. `closing` says the peer's FIN
    /// or RST arrived with this wake-up: then the end of stream must be read too, since
    /// no further edge will announce it.
    #[inline]
    pub(super) fn on_readable(&mut self, ci: usize, buf: &mut [u8], now: Instant, closing: bool) {
        if self.connector.datagrams() {
            return self.on_datagrams(ci, buf, now);
        }
        for _ in 0..READS_PER_WAKE {
            let r = if self.pace.stamped {
                if !self.conns[ci].link.connected() {
                    return;
                }
                self.read_stamped(ci, buf, now)
            } else {
                match self.conns[ci].link.read(buf) {
                    Some(r) => r,
                    None => return,
                }
            };
            if !self.check_handshake(ci, now) {
                return;
            }
            match r {
                Ok(0) if self.conns[ci].link.handshaking() => {
                    // Closed during the handshake: not a TLS server, or it refused us.
                    return self.connect_failed_as(ci, now, ErrorKind::TlsHandshake);
                }
                Ok(0) => return self.on_eof(ci, now),
                Ok(n) => {
                    self.rec.read_bytes(now, n);
                    if !self.consume(ci, &buf[..n], now) {
                        return;
                    }
                    if n < buf.len() && !closing {
                        // A short read drained the socket (epoll(7)); no need to see EAGAIN.
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.io_failed(ci, now, &e, ErrorKind::from_read_error(&e)),
            }
        }
        // Budget spent with data still coming: read on after the loop's own checks.
        self.reread.push((ci, closing));
    }

    /// HTTP/3: reads datagrams until the socket has none left, or up to
    /// [`READS_PER_WAKE`] reads (the rest are read after the loop's checks). A read
    /// takes one datagram whole, or several of the connection's joined by the
    /// kernel (GRO), each handed to QUIC in turn.
    #[cold]
    #[inline(never)]
    fn on_datagrams(&mut self, ci: usize, buf: &mut [u8], now: Instant) {
        let mut took = false;
        for _ in 0..READS_PER_WAKE {
            let Some(d) = self.conns[ci].link.datagrams() else {
                return;
            };
            match d.recv(buf) {
                Ok(meta) => {
                    self.rec.read_bytes(now, meta.len);
                    let c = &mut self.conns[ci];
                    c.proto
                        .set_received(stampede_quic::udp::ecn(&meta), meta.stride);
                    if !self.take_input(ci, stampede_quic::udp::received(buf, &meta), now) {
                        return;
                    }
                    took = true;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if took {
                        self.after_input(ci, now);
                    }
                    return;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // The server's port answered with ICMP: nothing listens on UDP there.
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                    return self.broken(ci, now, ErrorKind::ConnectRefused);
                }
                Err(e) => return self.broken(ci, now, ErrorKind::from_read_error(&e)),
            }
        }
        if took && !self.after_input(ci, now) {
            return;
        }
        self.reread.push((ci, false));
    }

    /// A read after a nap: with it, when its bytes arrived (`arrived`, for what they
    /// complete), the kernel's stamp placed on the monotonic clock by the clocks read
    /// together after the nap; never after `now`.
    #[cold]
    #[inline(never)]
    fn read_stamped(&mut self, ci: usize, buf: &mut [u8], now: Instant) -> io::Result<usize> {
        let (n, stamp) = self.conns[ci].link.read_stamped(buf)?;
        let (mono, wall) = self.pace.clock;
        self.pace.arrived = stamp.map(|rx| {
            let at = if rx >= wall {
                mono + (rx - wall)
            } else {
                mono.checked_sub(wall - rx).unwrap_or(mono)
            };
            // Never after the read itself (the pass's `now` may predate bytes that
            // came during it: clamping to it would time them early).
            at.min(Instant::now().max(now))
        });
        Ok(n)
    }

    /// Hands what was read to the connection's protocol and settles what it reports.
    /// Returns false when the connection was closed.
    pub(super) fn consume(&mut self, ci: usize, data: &[u8], now: Instant) -> bool {
        self.take_input(ci, data, now) && self.after_input(ci, now)
    }

    /// [`Worker::consume`] without what follows the input (new requests, the
    /// write): a datagram link takes every datagram of a wake-up first, so that its
    /// answers and acknowledgements go out together. Returns false when the
    /// connection was closed.
    fn take_input(&mut self, ci: usize, data: &[u8], now: Instant) -> bool {
        let mut events = std::mem::take(&mut self.events);
        events.clear();
        let body = self
            .prep
            .h2_requests
            .get(self.request_index(ci))
            .map_or(&[][..], |r| &r.body[..]);
        let c = &mut self.conns[ci];
        if self.once.server {
            c.proto.capture_server();
        }
        let fed = c.proto.feed(data, body, now, &mut events, &mut self.notes);
        let open = self.settle(ci, &events, now);
        self.events = events;
        if !self.notes.is_empty() {
            self.take_notes();
        }
        let c = &mut self.conns[ci];
        if open && c.first_byte.is_none() && c.proto.mid_response() {
            // The response still being read began in these bytes.
            c.first_byte = Some(self.pace.arrived.unwrap_or(now));
        }
        if open && self.pace.nap && c.proto.receiving() {
            self.pace.streaming = true;
        }
        if let Err(broken) = fed {
            if open {
                self.broken(ci, now, broken.0);
            }
            return false;
        }
        open
    }
    /// What the connection noted beside its events: the server's name, gRPC
    /// messages, why a WebSocket ended.
    #[cold]
    #[inline(never)]
    fn take_notes(&mut self) {
        let mut notes = std::mem::take(&mut self.notes);
        for note in notes.drain(..) {
            match note {
                Note::Server(server) => {
                    if self.once.server {
                        self.once.server = false;
                        let mut g = self.shared.server.lock().unwrap_or_else(|e| e.into_inner());
                        g.get_or_insert(server);
                    }
                }
                Note::GrpcMessage { code, message } => self.rec.grpc_message(code, &message),
                Note::WsEnded { refused, close } => {
                    let ws = &mut self.rec.ws;
                    if let Some(status) = refused {
                        *ws.refused.entry(status).or_default() += 1;
                    }
                    if let Some(code) = close {
                        *ws.closes.entry(code.unwrap_or(1005)).or_default() += 1;
                    }
                }
            }
        }
        self.notes = notes;
    }

    /// The protocol's own handshake (QUIC's) finished on `ci`.
    #[cold]
    fn handshaken(&mut self, ci: usize, us: u64, resumed: bool) {
        self.rec.handshake(us, resumed);
        if self.once.tls {
            if let Some(info) = self.conns[ci].proto.own_tls() {
                self.once.tls = false;
                let mut g = self.shared.tls.lock().unwrap_or_else(|e| e.into_inner());
                g.get_or_insert(info);
            }
        }
    }

    /// Handles a connection's events in order. Returns false when the connection was
    /// closed.
    #[inline]
    pub(super) fn settle(&mut self, ci: usize, events: &[Event], now: Instant) -> bool {
        for ev in events {
            match *ev {
                Event::Response(r) => {
                    if !self.complete(ci, r, now) {
                        return false;
                    }
                }
                Event::Progress { stream, progress } => self.on_progress(ci, stream, progress, now),
                Event::Upgraded => {
                    // The connection's set-up ends now, and the messages that waited
                    // for it go out now.
                    let c = &mut self.conns[ci];
                    let open_us = c.connect_us;
                    c.connect_us = micros(c.link.dialled_at(), now);
                    self.rec.upgraded(c.connect_us.saturating_sub(open_us));
                    for p in c.pending.iter_mut() {
                        p.sent = now;
                    }
                }
                Event::Unmatched { count } => self.rec.ws.unmatched += count,
                Event::HeaderSizes {
                    compressed,
                    decoded,
                } => {
                    self.rec.headers.compressed += compressed;
                    self.rec.headers.decoded += decoded;
                }
                Event::Malformed { stream } => {
                    self.fail_streams(ci, now, ErrorKind::Protocol, |s| s == stream)
                }
                Event::StreamBroken { stream, kind } | Event::Failed { stream, kind } => {
                    self.fail_streams(ci, now, kind, |s| s == stream)
                }
                Event::Reset {
                    stream,
                    refused,
                    kind,
                    ..
                } => {
                    // Refused unprocessed: safe to send again.
                    if refused && self.retry(ci, stream) {
                        continue;
                    }
                    self.fail_streams(ci, now, kind, |s| s == stream)
                }
                // Streams above last_stream were never processed.
                Event::GoAway {
                    last_stream, kind, ..
                } => self.fail_streams(ci, now, kind, |s| s > last_stream),
                Event::Handshake { us, resumed } => self.handshaken(ci, us, resumed),
            }
        }
        true
    }

    /// After the events of a read: a connection going away hands its waiting requests
    /// to a new one; output the input caused (HTTP/2 acknowledgements, streams that now
    /// fit) is written; a connection with nothing pending finishes its batch, and a
    /// multiplexed one with room takes new requests. Returns false when the
    /// connection was closed.
    pub(super) fn after_input(&mut self, ci: usize, now: Instant) -> bool {
        // Streams that ended make room for requests waiting on the server's limit.
        self.open_streams(ci);
        let c = &mut self.conns[ci];
        let going = c.proto.going_away();
        if going && c.pending.iter().all(|p| p.stream == 0) {
            // The server is going away: a new connection replaces this one and takes
            // the requests that were still waiting for a stream.
            self.drop_socket(ci);
            if self.conns[ci].pending.is_empty() {
                self.batch_done(ci, now);
            } else {
                self.connect(ci, now);
            }
            return false;
        }
        if c.proto.has_output() {
            self.write(ci, now);
        }
        let c = &self.conns[ci];
        if c.link.state() != State::Open {
            return false;
        }
        if c.pending.is_empty() {
            self.batch_done(ci, now);
        } else if c.proto.multiplexed()
            && matches!(self.drive, Drive::Pool(_))
            && !going
            && c.pending.len() <= self.dial.h2_refill_at
            && self.room(ci) > 0
        {
            // Room for more streams: the connection can take new requests now.
            self.make_idle(ci);
        } else if self.drive.timed() {
            // A response made room for a timed step kept waiting.
            self.send_due(ci, now);
        }
        true
    }

    /// Records a completed response. Returns false when the connection was closed.
    #[inline]
    pub(super) fn complete(&mut self, ci: usize, r: Response, now: Instant) -> bool {
        let c = &mut self.conns[ci];
        let p = if r.stream == 0 {
            c.pending.pop_front()
        } else {
            let i = c.pending.iter().position(|p| p.stream == r.stream);
            i.and_then(|i| c.pending.remove(i))
        };
        let Some(p) = p else {
            return true;
        };
        if self.cfg.watch.stream.is_some() {
            let at = match self.pace.arrived {
                Some(a) if self.pace.stamped => a.max(p.sent),
                _ => now,
            };
            self.stream_complete(ci, r.stream, p.intended, at, p.target);
            // gRPC runs watch every answer: its status is counted with it.
            if let Some(code) = r.grpc {
                self.rec.grpc_status(code);
            }
        }
        let c = &mut self.conns[ci];
        let c = if self.prep.redirects > 0 {
            if let Some(open) = self.follow(ci, r.status, r.close, p, now) {
                return open;
            }
            &mut self.conns[ci]
        } else {
            c
        };
        self.in_flight -= 1;
        if r.reused {
            self.rec.tally.keepalive += 1;
        }

        // HTTP/1 says when the response began: the server's waiting time runs from the
        // end of the request's write to then. HTTP/2 streams share the connection's
        // writes, so theirs runs from the send to the end.
        // Read after a nap: timed by its arrival (never before its send).
        let now = match self.pace.arrived {
            Some(a) if self.pace.stamped => a.max(p.sent),
            _ => now,
        };
        let first = if r.fresh {
            Some(now)
        } else {
            c.first_byte.take()
        };
        let waiting_us = match first {
            Some(first) => micros(c.write_done.max(p.sent), first),
            None => micros(p.sent, now),
        };
        let timing = Timing {
            total_us: micros(p.intended, now),
            uncorrected_us: micros(p.sent, now),
            connect_us: std::mem::take(&mut c.connect_us),
            waiting_us,
        };
        self.first_response(ci, first.unwrap_or(now));
        self.check_length(r.body);
        if self.rec.raw.is_some() {
            let connection = self.conns[ci].serial;
            self.rec.raw(Facts {
                intended: p.intended,
                sent: Some(p.sent),
                first_byte: first,
                end: now,
                status: r.status,
                bytes: r.body,
                error: None,
                connection,
                target: p.target,
            });
        }
        if !self.prep.unusual {
            self.rec.complete(
                now,
                (p.intended, p.target),
                (r.status, r.grpc),
                r.body,
                timing,
            );
        } else if !self.record_unusual(ci, r.status, r.body, (p.intended, p.target), timing, now) {
            return false;
        }
        if self.prep.respond {
            self.script_response(ci, r.status);
        }
        if r.close {
            if !self.conns[ci].pending.is_empty() {
                // Requests pipelined behind a response that closes the connection are
                // lost.
                self.fail_and_close(ci, now, ErrorKind::Closed);
                return false;
            }
            self.drop_socket(ci);
            self.batch_done(ci, now);
            return false;
        }
        true
    }

    /// Records a response of a run that times only batches (wrk2's `-B`) or fails
    /// sessions at a status (httperf's `--failure-status`). Returns false when the
    /// session, and its connection, ended.
    #[inline(never)]
    fn record_unusual(
        &mut self,
        ci: usize,
        status: u16,
        body: u64,
        (intended, target): (Instant, u32),
        timing: Timing,
        now: Instant,
    ) -> bool {
        if self.prep.batch_latency && !self.conns[ci].pending.is_empty() {
            self.rec.count_only(now, (status, target), body);
        } else {
            self.rec
                .complete(now, (intended, target), (status, None), body, timing);
        }
        if matches!(&self.drive, Drive::Sessions(s) if s.fail_status() == status) {
            self.failure_status(ci, now);
            return self.drive.session_on(ci);
        }
        true
    }

    /// Reads a kept response: the cookie it sets for its session (session cookies), and
    /// the thread's script sees it.
    #[inline(never)]
    fn script_response(&mut self, ci: usize, status: u16) {
        let kept = self.conns[ci].proto.take_response().unwrap_or_default();
        if let Drive::Sessions(s) = &mut self.drive {
            if s.cookies() {
                // One cookie per session: the last one set replaces any before it.
                let set =
                    (kept.headers.iter().rev()).find(|(n, _)| n.eq_ignore_ascii_case("set-cookie"));
                if let Some((_, v)) = set {
                    s.keep_cookie(ci, v.split(';').next().unwrap_or("").trim());
                }
            }
        }
        if let Some(h) = self.script.hooks.as_mut() {
            let flow = h.response(&crate::run::hooks::Reply {
                conn: ci,
                status,
                head: kept.head(),
                headers: &kept.headers,
                body: &kept.body,
                cut: kept.cut,
            });
            self.settle_flow(flow);
        }
        self.conns[ci].proto.recycle(kept);
    }

    /// Counts a response on the slot; the first since a connect gives the connection's
    /// time to first byte (`first_byte`: when its first byte arrived).
    pub(super) fn first_response(&mut self, ci: usize, first_byte: Instant) {
        let c = &mut self.conns[ci];
        c.completed_total += 1;
        if c.awaiting_first {
            c.awaiting_first = false;
            self.rec
                .hist
                .first_byte
                .0
                .saturating_record(micros(c.link.dialled_at(), first_byte));
        }
    }

    /// ab's `Length` check: a body whose length differs from the first response's.
    pub(super) fn check_length(&mut self, body: u64) {
        if !self.cfg.watch.check_length {
            return;
        }
        let first = self.shared.doc_len.load(Ordering::Relaxed);
        if first == u64::MAX {
            let _ = self.shared.doc_len.compare_exchange(
                u64::MAX,
                body,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        } else if first != body {
            self.rec.tally.length_mismatch += 1;
        }
    }

    /// A stream the server refused unprocessed (RFC 9113 §8.7: safe to retry) goes
    /// back to wait for a stream, up to three times. Returns false when it has had
    /// its tries and must fail.
    pub(super) fn retry(&mut self, ci: usize, stream: u32) -> bool {
        let Some(p) = self.conns[ci]
            .pending
            .iter_mut()
            .find(|p| p.stream == stream)
        else {
            return true;
        };
        if p.refused >= 3 {
            return false;
        }
        p.refused += 1;
        p.stream = 0;
        true
    }

    /// Fails the connection's requests whose stream `which` picks (requests still
    /// waiting for a stream are not among them).
    pub(super) fn fail_streams(
        &mut self,
        ci: usize,
        now: Instant,
        kind: ErrorKind,
        which: impl Fn(u32) -> bool,
    ) {
        let c = &mut self.conns[ci];
        let mut i = 0;
        while i < c.pending.len() {
            if c.pending[i].stream != 0 && which(c.pending[i].stream) {
                let p = c.pending.remove(i).expect("present");
                c.clocks.retain(|k| k.stream() != p.stream);
                self.in_flight -= 1;
                self.rec.fail(now, kind, (p.intended, p.target));
                if self.rec.raw.is_some() {
                    self.rec.raw(Facts::failed(&p, kind, now, c.serial));
                }
            } else {
                i += 1;
            }
        }
    }

    /// The peer closed the connection: a close-delimited response is complete;
    /// anything still pending fails as closed.
    pub(super) fn on_eof(&mut self, ci: usize, now: Instant) {
        let mut events = std::mem::take(&mut self.events);
        events.clear();
        self.conns[ci].proto.eof(&mut events);
        let open = self.settle(ci, &events, now);
        self.events = events;
        if open {
            self.fail_and_close(ci, now, ErrorKind::Closed);
        }
    }
}
