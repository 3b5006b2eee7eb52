//! What the kernel hands back: each completion turned into the slot's state (bytes
//! into its inbox, a send's progress, the end or an error) and into the events a wait
//! reports; the one `io_uring_enter` a pass makes, which submits what the pass queued
//! and waits (or naps); and the teardown, which waits for every operation to end
//! before anything the kernel may touch is freed.

use std::io;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use io_uring::{cqueue, opcode, types};

use crate::{
    stamps, trim, user_data, Core, ERR, IN, INBOX_LIMIT, OP_ACCEPT, OP_CANCEL, OP_POLL, OP_RECV,
    OP_SEND, OUT, OUTBOX_LIMIT, RDHUP, TEARDOWN,
};

impl Core {
    /// One completion.
    fn complete(&mut self, ud: u64, res: i32, flags: u32) {
        let op = ud & 7;
        let more = cqueue::more(flags);
        if op == OP_POLL {
            // The poll on the epoll instance (user data OP_POLL), or its cancel's answer.
            let poll = ud == OP_POLL;
            if !more {
                self.epoll_armed &= !poll;
                self.in_flight -= 1;
            }
            self.epoll_ready |= poll && self.epfd >= 0;
            return;
        }
        let slot = ((ud >> 3) & 0x1fff_ffff) as u32;
        let gen = (ud >> 32) as u32;
        if op == OP_ACCEPT {
            return self.accepted(slot, gen, res, more);
        }
        let Some(s) = self.slots.get_mut(slot as usize) else {
            return;
        };
        let current = s.gen == gen && s.open;
        match op {
            OP_RECV => {
                let mut bits = 0;
                if let Some(bid) = cqueue::buffer_select(flags) {
                    if current && res > 0 {
                        let got = self.bufs.bytes(bid, res as usize);
                        let s = &mut self.slots[slot as usize];
                        if !s.stamps {
                            s.inbox.extend_from_slice(got);
                            bits |= IN;
                        } else {
                            match stamps::parse(got, &self.stamped) {
                                // The end of the stream: a receive of nothing.
                                Some((b"", _)) => {
                                    s.eof = true;
                                    bits |= IN | RDHUP;
                                }
                                Some((payload, at)) => {
                                    s.inbox.extend_from_slice(payload);
                                    s.arrived = at;
                                    bits |= IN;
                                }
                                None => {
                                    s.error = Some(libc::EPROTO);
                                    bits |= IN | ERR;
                                }
                            }
                        }
                    }
                    self.bufs.give_back(bid);
                } else if current && res == 0 {
                    self.slots[slot as usize].eof = true;
                    bits |= IN | RDHUP;
                } else if current && res < 0 && res != -libc::ENOBUFS && res != -libc::ECANCELED {
                    self.slots[slot as usize].error = Some(-res);
                    bits |= IN | ERR;
                }
                let s = &mut self.slots[slot as usize];
                if !more {
                    s.recv = false;
                    s.cancelling = false;
                    s.ops -= 1;
                    self.in_flight -= 1;
                    let unread = s.inbox.len() - s.read_at;
                    if current && !s.eof && s.error.is_none() && unread < INBOX_LIMIT {
                        self.arm_recv(slot);
                    }
                } else if current && s.inbox.len() - s.read_at >= INBOX_LIMIT {
                    self.cancel_recv(slot);
                }
                if bits != 0 {
                    self.mark(slot, bits);
                }
            }
            OP_SEND => {
                s.send = false;
                s.ops -= 1;
                self.in_flight -= 1;
                if s.aborted {
                    // Cancelled, or done before the cancel reached it: nothing more
                    // goes, and its bytes left the count when it was aborted.
                    s.sending.clear();
                    s.outbox.clear();
                    s.sent = 0;
                } else if res < 0 {
                    self.queued -= s.sending.len() - s.sent + s.outbox.len();
                    s.sending.clear();
                    s.outbox.clear();
                    s.sent = 0;
                    if current {
                        s.error = Some(-res);
                        self.mark(slot, IN | ERR);
                    }
                } else {
                    s.sent += res as usize;
                    if s.sent < s.sending.len() && res > 0 {
                        self.queued -= res as usize;
                        self.start_send(slot);
                    } else {
                        // All of it sent, or the rest refused (a send of nothing).
                        self.queued -= (s.sending.len() + res as usize) - s.sent;
                        trim(&mut s.sending);
                        s.sent = 0;
                        if !s.outbox.is_empty() {
                            std::mem::swap(&mut s.sending, &mut s.outbox);
                            self.start_send(slot);
                        }
                    }
                }
                let s = &mut self.slots[slot as usize];
                if let (false, Some(how)) = (s.send, s.shut) {
                    s.shut = None;
                    if let Some(fd) = &s.fd {
                        // SAFETY: a plain call on a descriptor this slot owns.
                        unsafe { libc::shutdown(fd.as_raw_fd(), how) };
                    }
                }
                if s.blocked && s.outbox.len() < OUTBOX_LIMIT {
                    s.blocked = false;
                    self.mark(slot, OUT);
                }
            }
            _ => {
                s.ops -= 1;
                self.in_flight -= 1;
            }
        }
        self.settle(slot);
    }

    /// Submits what is queued (the pass's sends, re-armed receives, the buffers
    /// given back) and waits at most `timeout` for `want` completions; true when a
    /// signal cut the wait short.
    fn enter(&mut self, want: usize, timeout: Duration) -> io::Result<bool> {
        self.flush();
        self.bufs.publish();
        // Oldest first; what the queue cannot take yet goes in after a submission.
        while let Some(e) = self.waiting.front() {
            // SAFETY: as in `push`.
            if unsafe { self.ring.submission().push(e) }.is_err() {
                self.ring.submit()?;
            } else {
                self.waiting.pop_front();
            }
        }
        let ts = types::Timespec::new()
            .sec(timeout.as_secs())
            .nsec(timeout.subsec_nanos());
        let args = types::SubmitArgs::new().timespec(&ts);
        match self.ring.submitter().submit_with_args(want, &args) {
            Ok(_) => Ok(false),
            Err(e) => match e.raw_os_error() {
                Some(libc::ETIME) | Some(libc::EBUSY) => Ok(false),
                Some(libc::EINTR) => Ok(true),
                _ => Err(e),
            },
        }
    }

    /// Submits what is queued and waits at most `timeout` for completions; the
    /// events they come to (and the epoll instance's, when it woke) go to `out`.
    pub(super) fn wait(
        &mut self,
        timeout: Duration,
        out: &mut Vec<libc::epoll_event>,
    ) -> io::Result<()> {
        out.clear();
        // Events left in the epoll instance by the last wait (its buffer was full) are
        // taken now, without sleeping: the multishot poll on the instance fires on a
        // new wake-up only, never for events already waiting in it.
        let want = usize::from(!self.epoll_ready);
        let interrupted = self.enter(want, timeout)?;
        self.reap();
        if self.epoll_ready {
            self.epoll_ready = false;
            self.arm_epoll();
            out.reserve(256);
            let spare = out.spare_capacity_mut();
            let room = spare.len().min(4096);
            // SAFETY: `spare` has room for the count passed and outlives the call.
            let n =
                unsafe { libc::epoll_wait(self.epfd, spare.as_mut_ptr().cast(), room as i32, 0) };
            if n > 0 {
                // SAFETY: the kernel wrote `n` events at the start of the spare room.
                unsafe { out.set_len(n as usize) };
                // A full buffer: more may wait, and no wake-up will say so.
                self.epoll_ready = n as usize == room;
            }
        }
        for (token, bits) in self.marks.drain(..) {
            out.push(libc::epoll_event {
                events: bits,
                u64: token,
            });
        }
        for slot in std::mem::take(&mut self.dirty) {
            let s = &mut self.slots[slot as usize];
            if s.bits != 0 {
                out.push(libc::epoll_event {
                    events: s.bits,
                    u64: s.token,
                });
                s.bits = 0;
            }
        }
        if interrupted && out.is_empty() {
            return Err(io::ErrorKind::Interrupted.into());
        }
        Ok(())
    }

    /// Submits what is queued and sleeps for `d` without waking for completions
    /// (they are taken by the next wait; stamped receives say when their bytes came).
    pub(super) fn nap(&mut self, d: Duration) -> io::Result<()> {
        // As many completions as the queue holds: in practice the timeout ends it.
        let want = self.ring.params().cq_entries() as usize;
        self.enter(want, d).map(|_| ())
    }

    fn reap(&mut self) {
        let mut reaped = std::mem::take(&mut self.reaped);
        reaped.clear();
        reaped.extend(
            self.ring
                .completion()
                .map(|c| (c.user_data(), c.result(), c.flags())),
        );
        for &(ud, res, flags) in &reaped {
            self.complete(ud, res, flags);
        }
        self.reaped = reaped;
    }

    /// Closes every socket and waits for every operation to end, so that nothing
    /// the kernel may still touch is freed (past [`TEARDOWN`], it is leaked instead).
    pub(super) fn teardown(&mut self) {
        for slot in 0..self.slots.len() as u32 {
            let gen = self.slots[slot as usize].gen;
            self.close(slot, gen);
            let s = &mut self.slots[slot as usize];
            if s.send && !s.open {
                // Output nobody will wait for: the run is over.
                let target = user_data(slot, s.gen, OP_SEND);
                s.ops += 1;
                let e = opcode::AsyncCancel::new(target)
                    .build()
                    .user_data(user_data(slot, s.gen, OP_CANCEL));
                self.push(e);
            }
        }
        for li in 0..self.listeners.len() as u32 {
            self.unlisten(li);
        }
        if self.epoll_armed {
            self.epfd = -1;
            let e = opcode::AsyncCancel::new(OP_POLL)
                .build()
                .user_data(OP_POLL | 8);
            self.push(e);
        }
        let end = Instant::now() + TEARDOWN;
        let mut out = Vec::new();
        while self.in_flight > 0 && Instant::now() < end {
            if self.wait(Duration::from_millis(10), &mut out).is_err() {
                break;
            }
        }
        if self.in_flight > 0 {
            self.bufs.leak = true;
            std::mem::forget(std::mem::take(&mut self.slots));
            let stamped = std::mem::replace(&mut self.stamped, Box::new(stamps::header()));
            std::mem::forget(stamped);
        }
    }
}
