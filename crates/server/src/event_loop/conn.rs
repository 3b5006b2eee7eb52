//! A server connection's input and output: reading within a budget, handing the
//! bytes to the connection's protocol (HTTP/1.x or HTTP/2), writing the answers and
//! keeping what the client has not taken, and closing once it is done.

use std::io::{self, Read, Write};
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::{EventLoop, IO_BUF, LINGER, LINGER_TIMER, READS_PER_WAKE};
use crate::proto::{Finished, Head, Then, MAX_PENDING_OUTPUT};
use crate::transport::Io;

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
            let pushes = c.proto.pushes();
            if pushes
                && !c.wbuf.is_empty()
                && self.held.total.load(Ordering::Relaxed) > self.config.output_budget
            {
                // Its answers wait while the server's budget for them is spent.
                self.shed(ci);
                return;
            }
            if c.rbuf.len() > self.config.limits.max_head + self.config.limits.max_body
                || c.proto.output_limit().is_some_and(|l| c.wbuf.len() >= l)
            {
                // Queued behind a deferred answer or a full output buffer: read later.
                c.paused = true;
                return;
            }
            match c.stream.read(&mut self.ibuf) {
                Ok(0) => {
                    c.peer_closed = true;
                    if c.proto.answer_holds_connection()
                        || (c.rbuf.is_empty() && c.wbuf.is_empty() && !c.proto.blocked())
                    {
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
        let alpn_h2 = || matches!(&c.stream, Io::Tls(t) if t.alpn() == Some(b"h2"));
        let h2c = self.config.http2;
        let input = c.proto.input(data, (h2c, alpn_h2), || env!(self, c));
        c.close_after |= input.close;
        c.head_since = match input.head {
            Head::Whole => None,
            Head::Partial => c.head_since.or(Some(now)),
            Head::Unchanged => c.head_since,
        };
        if !self.later.is_empty() {
            self.defer_later(ci, now);
        }
        match input.then {
            Then::Written => {
                self.write_out(ci);
                (input.used, false)
            }
            Then::Upgraded => {
                self.upgraded(ci, now);
                (input.used, true)
            }
            Then::Tail => {
                self.write_out(ci);
                self.pump_tail(ci);
                let done = self.conns[ci]
                    .as_ref()
                    .is_some_and(|c| !c.proto.has_tail() && !c.close_after && c.wbuf.is_empty());
                (input.used, done)
            }
        }
    }

    /// A WebSocket handshake was answered: the connection speaks WebSocket from here
    /// (its pushes on the timers, its room joined), and the frames after the
    /// handshake go to it at once. Out of line: HTTP/1.1's requests do not carry it.
    #[cold]
    #[inline(never)]
    fn upgraded(&mut self, ci: usize, now: Instant) {
        let Some(c) = self.conns[ci].as_mut() else {
            return;
        };
        if let Some(at) = c.proto.upgraded(now) {
            self.timers
                .heap
                .push(std::cmp::Reverse((at, ci, c.generation, 0)));
        }
        if let Some(room) = c.proto.room() {
            self.room.registry.join(room, self.index, ci, c.generation);
        }
        self.write_out(ci);
    }

    /// Schedules the answers the connection's last pass left to come later.
    #[cold]
    pub(super) fn defer_later(&mut self, ci: usize, now: Instant) {
        let generation = self.conns[ci].as_ref().map_or(0, |c| c.generation);
        for (d, stream) in std::mem::take(&mut self.later) {
            self.defer(d, ci, generation, stream, now);
        }
    }

    /// A push's next message is due; the one after it goes on the timers.
    pub(super) fn push_next(&mut self, ci: usize, now: Instant) {
        let Some(c) = self.conns[ci].as_mut() else {
            return;
        };
        if c.peer_closed {
            // The client went away: the rest is for nobody.
            self.close(ci);
            return;
        }
        let over = self.held.total.load(Ordering::Relaxed) > self.config.output_budget;
        if !c.wbuf.is_empty() && over {
            // A client that does not read while the server's budget for waiting
            // answers is spent: it goes, rather than hold the memory.
            self.shed(ci);
            return;
        }
        if c.proto.output_limit().is_some_and(|l| c.wbuf.len() >= l) {
            // A client that does not read: the message waits a tick rather than pile up.
            let g = c.generation;
            self.timers.heap.push(std::cmp::Reverse((
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
        if let Some(at) = c.proto.push_next(&mut self.out) {
            let g = c.generation;
            self.timers.heap.push(std::cmp::Reverse((at, ci, g, 0)));
        } else if c.proto.closing() {
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
            if !c.proto.has_tail() {
                return;
            }
            self.out.clear();
            c.proto.fill_tail(&mut self.out);
            self.write_out(ci);
        }
    }

    /// Routes the requests a connection has ready while its output has room
    /// (HTTP/2's streams), then writes `self.out` (which may already hold control
    /// frames).
    pub(super) fn route(&mut self, ci: usize, now: Instant) {
        if let Some(c) = self.conns[ci].as_mut() {
            c.proto.route(env!(self, c));
        }
        if !self.later.is_empty() {
            self.defer_later(ci, now);
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
            self.held.total.fetch_add(self.out.len(), Ordering::Relaxed);
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
            c.wrote_at = self.config.clock.now();
            c.wbuf.extend_from_slice(&self.out[off..]);
            self.held
                .total
                .fetch_add(self.out.len() - off, Ordering::Relaxed);
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
        self.held.total.fetch_sub(off, Ordering::Relaxed);
        if c.wbuf.is_empty() && c.wbuf.capacity() > IO_BUF {
            c.wbuf = Vec::new();
        }
        if off > 0 {
            c.last_active = now;
            c.wrote_at = now;
            let paused = std::mem::take(&mut c.paused);
            // Room again: the rest of a generated body, then requests that waited.
            self.pump_tail(ci);
            self.process_buffered(ci, now);
            self.out.clear();
            self.route(ci, now);
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
        let streams = c.proto.open_streams() > 0 && !c.close_after;
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
        let linger = c.close_after && !c.peer_closed && !self.draining && c.proto.lingers();
        if !linger {
            if c.close_after {
                c.stream.shutdown_write();
            }
            return self.close(ci);
        }
        if !c.lingering {
            c.lingering = true;
            c.stream.shutdown_write();
            self.timers.heap.push(std::cmp::Reverse((
                now + LINGER,
                ci,
                c.generation,
                LINGER_TIMER,
            )));
        }
    }

    /// A deferred answer (always `200 text/plain`) is ready for the request on
    /// connection `ci` (on `stream`, where requests have streams), unless the
    /// connection is gone.
    pub(super) fn finish_deferred(
        &mut self,
        ci: usize,
        generation: u32,
        stream: u32,
        body: &[u8],
        now: Instant,
    ) {
        let Some(c) = self.conns[ci].as_mut() else {
            return;
        };
        if c.generation != generation {
            return;
        }
        match c.proto.finish_deferred(stream, body, env!(self, c)) {
            Finished::Nothing => {}
            Finished::Routed => {
                if !self.later.is_empty() {
                    self.defer_later(ci, now);
                }
                self.write_out(ci);
                self.after_io(ci, now);
            }
            Finished::Unblocked { close } => {
                c.close_after |= close;
                self.unblocked(ci, now);
            }
        }
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
