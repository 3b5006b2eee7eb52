//! A server connection's input and output: reading within a budget, handing the
//! bytes to the connection's protocol (HTTP/1.x or HTTP/2), writing the answers and
//! keeping what the client has not taken, and closing once it is done.

use std::io::{self, Read, Write};
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::{
    EventLoop, Proto, IO_BUF, LINGER, LINGER_TIMER, MAX_PENDING_OUTPUT, READS_PER_WAKE,
    WS_MAX_PENDING,
};
use crate::h1::Answering;
use crate::h2::{self, Answer, H2Conn, H2Respond};
use crate::request;
use crate::routes::{Lines, Routed};
use crate::transport::Io;
use crate::SERVER;

impl EventLoop {
    pub(super) fn on_readable(&mut self, ci: usize, now: Instant, closing: bool) {
        for reads in 0.. {
            let Some(c) = self.conns[ci].as_mut() else {
                return;
            };
            if reads == READS_PER_WAKE {
                self.reread.push((ci, c.generation, closing));
                break;
            }
            let ws = matches!(c.proto, Proto::Ws(_));
            let over = self.held.load(Ordering::Relaxed) > self.config.output_budget;
            if ws && !c.wbuf.is_empty() && over {
                // Its answers wait while the server's budget for them is spent.
                self.shed(ci);
                return;
            }
            if c.rbuf.len() > self.config.limits.max_head + self.config.limits.max_body
                || (ws && c.wbuf.len() >= WS_MAX_PENDING)
                || (matches!(c.proto, Proto::H2(_)) && c.wbuf.len() >= MAX_PENDING_OUTPUT)
            {
                // Queued behind a deferred answer or a full output buffer: read later.
                c.paused = true;
                return;
            }
            match c.stream.read(&mut self.ibuf) {
                Ok(0) => {
                    c.peer_closed = true;
                    let feeding = matches!(&c.proto, super::Proto::H1(h) if h.feeding());
                    if feeding || (c.rbuf.is_empty() && c.wbuf.is_empty() && !c.proto.blocked()) {
                        // A streamed answer's client went away: the rest is for nobody.
                        self.close(ci);
                        return;
                    }
                    break;
                }
                Ok(n) => {
                    c.last_active = now;
                    let full = n == self.ibuf.len();
                    if c.rbuf.is_empty()
                        && !c.proto.blocked()
                        && !c.proto.has_tail()
                        && c.wbuf.len() < MAX_PENDING_OUTPUT
                    {
                        // Fast path: parse straight from the thread's buffer.
                        let ibuf = std::mem::take(&mut self.ibuf);
                        let used = self.process(ci, &ibuf[..n], now);
                        if let Some(c) = self.conns[ci].as_mut() {
                            c.rbuf.extend_from_slice(&ibuf[used..n]);
                        }
                        self.ibuf = ibuf;
                    } else {
                        c.rbuf.extend_from_slice(&self.ibuf[..n]);
                        self.process_buffered(ci, now);
                    }
                    if self.conns[ci].is_none() {
                        return;
                    }
                    if !full && !closing {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.close(ci);
                    return;
                }
            }
        }
        self.after_io(ci, now);
    }

    /// Parses what the connection has buffered.
    pub(super) fn process_buffered(&mut self, ci: usize, now: Instant) {
        let Some(c) = self.conns[ci].as_mut() else {
            return;
        };
        if c.proto.blocked() || c.proto.has_tail() || c.rbuf.is_empty() {
            return;
        }
        let rbuf = std::mem::take(&mut c.rbuf);
        let used = self.process(ci, &rbuf, now);
        if let Some(c) = self.conns[ci].as_mut() {
            let mut rest = rbuf;
            rest.drain(..used);
            // Anything that arrived meanwhile stays after what was already queued.
            rest.append(&mut c.rbuf);
            c.rbuf = rest;
        }
    }

    /// Answers every complete request at the start of `data`; returns the bytes used.
    pub(super) fn process(&mut self, ci: usize, data: &[u8], now: Instant) -> usize {
        let mut pos = 0;
        loop {
            let (used, resume) = self.process_once(ci, &data[pos..], now);
            pos += used;
            // A generated body went out whole at once: the requests behind it go on.
            if !resume || pos == data.len() {
                return pos;
            }
        }
    }

    /// Answers complete requests at the start of `data` until one must wait; returns
    /// the bytes used, and whether it stopped at a generated body that has since gone
    /// out whole (so the requests after it can be answered now). Inlined into
    /// [`EventLoop::process`], whose loop is one function frame on the hot path.
    #[inline(always)]
    pub(super) fn process_once(&mut self, ci: usize, data: &[u8], now: Instant) -> (usize, bool) {
        let Some(c) = self.conns[ci].as_mut() else {
            return (0, false);
        };
        if c.close_after {
            // The connection ends after what was answered: whatever follows a refused
            // or closing request is never parsed (it may hide a smuggled request).
            return (data.len(), false);
        }
        let h1 = match &mut c.proto {
            Proto::H2(_) => return (self.process_h2(ci, data, now), false),
            Proto::Ws(_) => return (self.process_ws(ci, data), false),
            Proto::H1(h1) => h1,
        };
        if h1.fresh && matches!(&c.stream, Io::Tls(t) if t.alpn() == Some(b"h2")) {
            // ALPN chose HTTP/2: whatever comes must be its preface.
            return (self.process_h2(ci, data, now), false);
        }
        if h1.fresh && self.config.http2 {
            let n = data.len().min(h2::PREFACE.len());
            if data[..n] == h2::PREFACE[..n] {
                if n < h2::PREFACE.len() {
                    c.head_since = c.head_since.or(Some(now));
                    return (0, false);
                }
                return (self.process_h2(ci, data, now), false);
            }
        }
        self.out.clear();
        let answered = h1.answer(
            data,
            &mut Answering {
                out: &mut self.out,
                ctx: &mut self.ctx,
                limits: &self.config.limits,
                lines: Lines {
                    date: self.date.line(),
                    server: &self.server_line,
                },
                draining: self.draining,
                waiting_output: c.wbuf.len(),
                max_output: MAX_PENDING_OUTPUT,
            },
        );
        c.close_after |= answered.close;
        c.head_since = if answered.partial {
            c.head_since.or(Some(now))
        } else {
            None
        };
        if let Some(w) = answered.upgraded {
            self.upgrade(ci, w, now);
            return (answered.used, true);
        }
        if let Some(d) = answered.deferred {
            let g = c.generation;
            self.defer(d, ci, g, 0, now);
        }
        self.write_out(ci);
        if !answered.tail {
            return (answered.used, false);
        }
        self.pump_tail(ci);
        let done = self.conns[ci]
            .as_ref()
            .is_some_and(|c| !c.proto.has_tail() && !c.close_after && c.wbuf.is_empty());
        (answered.used, done)
    }

    /// A WebSocket handshake was answered: the connection speaks WebSocket from here,
    /// and the frames after the handshake go to it at once. Out of line, as the
    /// WebSocket paths below: HTTP/1.1's requests do not carry them.
    #[cold]
    #[inline(never)]
    fn upgrade(&mut self, ci: usize, mut w: Box<crate::ws::WsConn>, now: Instant) {
        let Some(c) = self.conns[ci].as_mut() else {
            return;
        };
        if let Some(at) = w.push_from(now) {
            self.delays
                .push(std::cmp::Reverse((at, ci, c.generation, 0)));
        }
        if let Some(room) = w.room() {
            self.rooms.join(room, self.index, ci, c.generation);
        }
        c.proto = Proto::Ws(w);
        self.write_out(ci);
    }

    /// WebSocket: takes the client's frames in `data` (all of it), writing what they
    /// ask for; the connection ends once that is out when either side closed.
    #[cold]
    #[inline(never)]
    pub(super) fn process_ws(&mut self, ci: usize, data: &[u8]) -> usize {
        let Some(c) = self.conns[ci].as_mut() else {
            return data.len();
        };
        let Proto::Ws(w) = &mut c.proto else {
            return 0;
        };
        self.out.clear();
        c.close_after |= w.feed(data, &mut self.out);
        if let Some((room, frames)) = w.take_published().filter(|(_, f)| !f.is_empty()) {
            // A room's messages go out at the wake-up's end, to every member at once.
            match self.publish.iter_mut().find(|(r, _)| r[..] == *room) {
                Some((_, all)) => all.extend_from_slice(&frames),
                None => self.publish.push((room.into(), frames)),
            }
        }
        self.write_out(ci);
        data.len()
    }

    /// WebSocket: a push endpoint's next message is due; the one after it goes on the
    /// timers.
    pub(super) fn push_ws(&mut self, ci: usize, now: Instant) {
        let Some(c) = self.conns[ci].as_mut() else {
            return;
        };
        let Proto::Ws(w) = &mut c.proto else {
            return;
        };
        if c.peer_closed {
            // The client went away: the rest is for nobody.
            self.close(ci);
            return;
        }
        let over = self.held.load(Ordering::Relaxed) > self.config.output_budget;
        if !c.wbuf.is_empty() && over {
            // A client that does not read while the server's budget for waiting
            // answers is spent: it goes, rather than hold the memory.
            self.shed(ci);
            return;
        }
        if c.wbuf.len() >= WS_MAX_PENDING {
            // A client that does not read: the message waits a tick rather than pile up.
            let g = c.generation;
            self.delays.push(std::cmp::Reverse((
                now + std::time::Duration::from_millis(10),
                ci,
                g,
                0,
            )));
            return;
        }
        self.out.clear();
        // Sending counts as activity: a push the client only reads is not idle.
        c.last_active = now;
        if let Some(at) = w.push_next(&mut self.out) {
            let g = c.generation;
            self.delays.push(std::cmp::Reverse((at, ci, g, 0)));
        } else if w.closing() {
            c.close_after = true;
        }
        self.write_out(ci);
        self.after_io(ci, now);
    }

    /// Makes and writes the rest of a generated body while the socket takes it whole;
    /// what it does not take waits in `wbuf` for the next writable event.
    pub(super) fn pump_tail(&mut self, ci: usize) {
        while let Some(c) = self.conns[ci].as_mut() {
            if !c.wbuf.is_empty() {
                return;
            }
            let Proto::H1(h1) = &mut c.proto else { return };
            if !h1.has_tail() {
                return;
            }
            self.out.clear();
            h1.fill_tail(&mut self.out);
            self.write_out(ci);
        }
    }

    /// HTTP/2: handles the frames at the start of `data`, answers what is ready;
    /// returns the bytes used.
    pub(super) fn process_h2(&mut self, ci: usize, data: &[u8], now: Instant) -> usize {
        self.out.clear();
        let Some(c) = self.conns[ci].as_mut() else {
            return 0;
        };
        if !c.proto.is_h2() {
            let mut h2 = H2Conn::new(self.config.limits.clone(), &mut self.out);
            if let Some(v) = &self.config.alt_svc {
                h2.advertise(v.as_bytes());
            }
            h2.reflection = self.config.reflection.clone();
            c.proto = Proto::H2(Box::new(h2));
        }
        let Proto::H2(h) = &mut c.proto else {
            unreachable!("just made HTTP/2")
        };
        let used = match h.feed(data, &mut self.out) {
            Ok(n) => n,
            Err(e) => {
                h2::frame::goaway(&mut self.out, h.last_stream(), e.code);
                c.close_after = true;
                data.len()
            }
        };
        // A partial frame, or a header block still open, must be finished within the
        // head timeout, as an HTTP/1 request head must.
        let open = c.proto.h2().is_some_and(|h| h.in_header_block());
        c.head_since = if used < data.len() || open {
            c.head_since.or(Some(now))
        } else {
            None
        };
        self.route_h2(ci, now);
        used
    }

    /// Routes the HTTP/2 requests that are complete while the output has room, then
    /// writes `self.out` (which may already hold control frames).
    pub(super) fn route_h2(&mut self, ci: usize, now: Instant) {
        let (date, server) = (self.date.value(), SERVER.as_bytes());
        let mut later = Vec::new();
        let generation = self.conns[ci].as_ref().map_or(0, |c| c.generation);
        while let Some(c) = self.conns[ci].as_mut() {
            let Some(h) = c.proto.h2_mut() else { break };
            if c.close_after || c.wbuf.len() + self.out.len() + h.held() >= MAX_PENDING_OUTPUT {
                break;
            }
            let Some(ready) = h.next_ready(&mut self.h2_path, &mut self.h2_req) else {
                break;
            };
            let mut resp = H2Respond {
                conn: h,
                out: &mut self.out,
                stream: ready.stream,
                head: false,
                date,
                server,
                body: &mut self.h2_body,
            };
            if let Routed::Later(d) = resp.route(&ready, &self.h2_path, &self.h2_req, &mut self.ctx)
            {
                later.push((d, ready.stream));
            }
        }
        if self.h2_body.capacity() > IO_BUF {
            self.h2_body = Vec::new();
        }
        for (d, stream) in later {
            self.defer(d, ci, generation, stream, now);
        }
        self.write_out(ci);
    }

    /// Writes `self.out` to the connection, keeping what the socket does not take.
    pub(super) fn write_out(&mut self, ci: usize) {
        if self.out.is_empty() {
            return;
        }
        let Some(c) = self.conns[ci].as_mut() else {
            return;
        };
        if !c.wbuf.is_empty() {
            c.wbuf.extend_from_slice(&self.out);
            self.held.fetch_add(self.out.len(), Ordering::Relaxed);
            self.out.clear();
            return;
        }
        let mut off = 0;
        while off < self.out.len() {
            match c.stream.write(&self.out[off..]) {
                Ok(0) => break,
                Ok(n) => off += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(_) => {
                    // The client is gone (reset, or its end shut): nothing more goes
                    // out, and the connection closes once this wake-up is done with
                    // it. Kept as output to send, it would wait for a writable edge
                    // that a dead socket never gives.
                    c.close_after = true;
                    self.out.clear();
                    return;
                }
            }
        }
        if off < self.out.len() {
            // Output starts to wait for the client: its progress is timed from now.
            c.wrote_at = Instant::now();
            c.wbuf.extend_from_slice(&self.out[off..]);
            self.held.fetch_add(self.out.len() - off, Ordering::Relaxed);
        }
        self.out.clear();
    }

    pub(super) fn flush(&mut self, ci: usize, now: Instant) {
        let Some(c) = self.conns[ci].as_mut() else {
            return;
        };
        if c.stream.flush_pending().is_err() {
            self.close(ci);
            return;
        }
        let mut off = 0;
        while off < c.wbuf.len() {
            match c.stream.write(&c.wbuf[off..]) {
                Ok(0) => break,
                Ok(n) => off += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.close(ci);
                    return;
                }
            }
        }
        c.wbuf.drain(..off);
        self.held.fetch_sub(off, Ordering::Relaxed);
        if c.wbuf.is_empty() && c.wbuf.capacity() > IO_BUF {
            c.wbuf = Vec::new();
        }
        if off > 0 {
            c.last_active = now;
            c.wrote_at = now;
            let (h2, paused) = (c.proto.is_h2(), std::mem::take(&mut c.paused));
            // Room again: the rest of a generated body, then requests that waited.
            self.pump_tail(ci);
            self.process_buffered(ci, now);
            if h2 {
                self.out.clear();
                self.route_h2(ci, now);
            }
            if paused {
                // Bytes may have been left in the socket meanwhile.
                self.on_readable(ci, now, false);
                return;
            }
        }
        self.after_io(ci, now);
    }

    /// Closes the connection if it is done.
    pub(super) fn after_io(&mut self, ci: usize, now: Instant) {
        let Some(c) = self.conns[ci].as_ref() else {
            return;
        };
        let streams = c
            .proto
            .h2()
            .is_some_and(|h| h.open_streams() > 0 && !c.close_after);
        let done = c.wbuf.is_empty()
            && !c.proto.blocked()
            && !c.proto.has_tail()
            && !c.stream.wants_write()
            && !streams;
        if done
            && (c.close_after
                || (c.peer_closed && c.rbuf.is_empty())
                || (self.draining && c.rbuf.is_empty()))
        {
            self.done_with(ci, now);
        }
    }

    /// The connection is done: closed, after shutting its write side when it ended
    /// on purpose — or, for WebSocket, the write side shut and the connection left to
    /// wait for the client's end (see the connection's `lingering`), at most
    /// [`LINGER`]. Out of line: every I/O of a live connection passes the test that
    /// leads here.
    #[cold]
    #[inline(never)]
    fn done_with(&mut self, ci: usize, now: Instant) {
        let Some(c) = self.conns[ci].as_mut() else {
            return;
        };
        let linger =
            c.close_after && !c.peer_closed && !self.draining && matches!(c.proto, Proto::Ws(_));
        if !linger {
            if c.close_after {
                c.stream.shutdown_write();
            }
            return self.close(ci);
        }
        if !c.lingering {
            c.lingering = true;
            c.stream.shutdown_write();
            self.delays.push(std::cmp::Reverse((
                now + LINGER,
                ci,
                c.generation,
                LINGER_TIMER,
            )));
        }
    }

    /// A deferred answer (always `200 text/plain`) is ready for the request on
    /// connection `ci` (HTTP/2: on `stream`), unless the connection is gone.
    pub(super) fn finish_deferred(
        &mut self,
        ci: usize,
        generation: u32,
        stream: u32,
        body: &[u8],
        now: Instant,
    ) {
        let (status, ctype) = (200, "text/plain");
        let Some(c) = self.conns[ci].as_mut() else {
            return;
        };
        if c.generation != generation {
            return;
        }
        if let Some(h) = c.proto.h2_mut() {
            // The client may have reset the stream meanwhile.
            if let Some(method) = h.waiting(stream) {
                self.out.clear();
                let sent = if method == request::Method::Head {
                    &[][..]
                } else {
                    body
                };
                let answer = Answer {
                    status,
                    ctype,
                    len: body.len(),
                    body: sent,
                    more: None,
                    file: None,
                };
                h.respond(
                    &mut self.out,
                    stream,
                    answer,
                    self.date.value(),
                    SERVER.as_bytes(),
                );
                self.route_h2(ci, now);
                self.after_io(ci, now);
            }
            return;
        }
        let Proto::H1(h1) = &mut c.proto else {
            return;
        };
        self.out.clear();
        // The server is stopping: this answer is the connection's last.
        let lines = Lines {
            date: self.date.line(),
            server: &self.server_line,
        };
        let Some(close) = h1.finish_deferred(&mut self.out, lines, body, self.draining) else {
            return;
        };
        c.close_after |= close;
        self.unblocked(ci, now);
    }

    /// An HTTP/1 connection's deferred or streamed answer is out: it is written, the
    /// requests that waited behind it are answered, and bytes left in the socket
    /// meanwhile are read.
    pub(super) fn unblocked(&mut self, ci: usize, now: Instant) {
        self.write_out(ci);
        self.process_buffered(ci, now);
        if self.conns[ci]
            .as_ref()
            .is_some_and(|c| !c.proto.blocked() && !c.peer_closed)
        {
            // Bytes may have been left in the socket while blocked.
            self.on_readable(ci, now, false);
        } else {
            self.after_io(ci, now);
        }
    }
}
