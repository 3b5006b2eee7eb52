//! gRPC request streams sent message by message (see [`crate::StreamSend`]): a call's
//! first message goes with its headers when it is sent, and the worker sends each of
//! the next ones when it falls due, on a heap of the streams still sending, earliest
//! first, that the loop's wait ends for. Each stream keeps its call's body (its
//! messages, taken in turn) in a buffer reused call to call; a stream found over
//! when its next message falls due (answered, reset, its connection gone) is dropped.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

use stampede_wire::grpc::framed_len;

use super::conn::State;
use super::Worker;
use crate::StreamSend;

/// The most bodies kept for reuse.
const SPARE: usize = 64;

/// The most messages sent in one pass: a worker far behind its streams' schedule
/// catches up over several passes, reading between them.
const PER_PASS: usize = 1024;

/// A stream whose server has not opened its window for this many bytes already
/// queued gets no more until it does: its next message waits an interval.
const QUEUED_MAX: usize = 1 << 20;

/// One stream still sending.
struct Sending {
    /// When its next message (or, by time, its end) falls due.
    due: Instant,
    /// The order streams began in: the first of equal dues goes first.
    seq: u64,
    ci: usize,
    /// The HTTP/2 connection it went on ([`crate::h2::H2Conn::epoch`]): stream ids
    /// start again on a new one.
    epoch: u64,
    stream: u32,
    /// The call's messages.
    body: Vec<u8>,
    /// Where the next message starts in `body`.
    at: usize,
    /// Messages sent so far.
    sent: u64,
    /// When the send side ends by time, if it does.
    until: Option<Instant>,
}

impl PartialEq for Sending {
    fn eq(&self, other: &Self) -> bool {
        (self.due, self.seq) == (other.due, other.seq)
    }
}

impl Eq for Sending {}

impl PartialOrd for Sending {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Sending {
    /// Reversed: the heap's top is the earliest due.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.due, other.seq).cmp(&(self.due, self.seq))
    }
}

/// A worker's paced streams.
pub(super) struct Paced {
    send: StreamSend,
    heap: BinaryHeap<Sending>,
    seq: u64,
    spare: Vec<Vec<u8>>,
}

/// What a stream does after it has sent `sent` messages (`wrapped`: all of its
/// body's at least once) with the next one due at `next`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum After {
    /// The next message, at `next`.
    Send,
    /// The send side ends with the last message sent.
    End,
    /// The send side ends by time, at `until`, before the next message.
    EndAt(Instant),
}

impl StreamSend {
    /// What a stream does after its `sent`-th message (`wrapped`: all of its body's
    /// messages were sent at least once), its next due at `next`, its send side ending
    /// at `until` if by time.
    fn after(&self, sent: u64, wrapped: bool, next: Instant, until: Option<Instant>) -> After {
        if self.count.is_some_and(|n| sent >= n) {
            return After::End;
        }
        match until {
            Some(u) if next >= u => After::EndAt(u),
            Some(_) => After::Send,
            // Neither a count nor a duration: the body's messages once.
            None if self.count.is_none() && wrapped => After::End,
            None => After::Send,
        }
    }
}

impl Paced {
    pub(super) fn new(send: StreamSend) -> Paced {
        Paced {
            send,
            heap: BinaryHeap::new(),
            seq: 0,
            spare: Vec::new(),
        }
    }

    /// When the next stream's message falls due.
    #[inline]
    pub(super) fn next_due(&self) -> Option<Instant> {
        self.heap.peek().map(|s| s.due)
    }

    /// Where a call's body's first message ends, and whether the stream goes on
    /// after it (else that message is the whole request).
    pub(super) fn first(&self, body: &[u8]) -> (usize, bool) {
        let n = framed_len(body).unwrap_or(body.len());
        let goes_on = match self.send.count {
            Some(c) => c > 1,
            None => self.send.duration().is_some() || n < body.len(),
        };
        (n, goes_on)
    }

    /// Stream `stream` on connection `ci` (`epoch`) was sent at `sent` with its
    /// body's first message (`first` bytes); its next falls due an interval later.
    pub(super) fn begin(
        &mut self,
        (ci, epoch, stream): (usize, u64, u32),
        body: &[u8],
        first: usize,
        sent: Instant,
    ) {
        let mut own = self.spare.pop().unwrap_or_default();
        own.clear();
        own.extend_from_slice(body);
        let until = self.send.duration().map(|d| sent + d);
        let next = sent + self.send.interval;
        let wrapped = first >= own.len();
        let due = match self.send.after(1, wrapped, next, until) {
            After::EndAt(u) => u,
            _ => next,
        };
        self.seq += 1;
        self.heap.push(Sending {
            due,
            seq: self.seq,
            ci,
            epoch,
            stream,
            body: own,
            at: if wrapped { 0 } else { first },
            sent: 1,
            until,
        });
    }
}

impl Worker<'_> {
    /// Opens streams for the connection's calls that have none yet, as far as the
    /// server's stream limit allows, each with its first message (its body made for it
    /// when calls are made one by one); a stream with more to send joins the heap.
    pub(super) fn open_paced_streams(&mut self, ci: usize) {
        let Some(mut paced) = self.prep.paced.take() else {
            return;
        };
        let c = &mut self.conns[ci];
        if let Some(h2) = c.proto.message_streams() {
            let free = h2.stream_limit().saturating_sub(h2.open_streams());
            let req = &self.prep.h2_requests[0];
            for p in c.pending.iter_mut().filter(|p| p.stream == 0).take(free) {
                let (body, fields): (&[u8], &[u8]) = match self.prep.made.as_mut() {
                    Some(made) => {
                        let number = self.shared.calls.fetch_add(1, Relaxed);
                        if !made.make(number, ci) {
                            self.shared.control.stop();
                            break;
                        }
                        (&made.body, &made.fields)
                    }
                    None => (&req.body, &[]),
                };
                let (first, goes_on) = paced.first(body);
                if goes_on {
                    p.stream = h2.request_open(req, true, &body[..first], fields);
                    paced.begin((ci, h2.epoch(), p.stream), body, first, p.sent);
                } else {
                    p.stream = h2.request_made(req, &body[..first], fields);
                }
            }
        }
        self.prep.paced = Some(paced);
    }

    /// Sends the messages of paced streams that fell due by `now`, and the ends of
    /// those whose time ran out.
    #[cold]
    pub(super) fn send_paced(&mut self, now: Instant) {
        let Some(mut paced) = self.prep.paced.take() else {
            return;
        };
        let mut touched: Vec<usize> = Vec::new();
        let mut sent = 0;
        while let Some(top) = paced.heap.peek() {
            if top.due > now || sent == PER_PASS {
                break;
            }
            sent += 1;
            let mut s = paced.heap.pop().expect("peeked");
            let c = &mut self.conns[s.ci];
            let open = c.link.state() == State::Open && !c.alpn_pending;
            let Some(h2) = (c.proto.message_streams()).filter(|h| h.epoch() == s.epoch) else {
                // Its connection is gone, and the call with it.
                paced.recycle(s.body);
                continue;
            };
            if !open || h2.queued(s.stream) >= QUEUED_MAX {
                // Still connecting, or the server takes nothing: the message waits an
                // interval from now (not from when it was due, which would only
                // bring it back at once).
                s.due = now + paced.send.interval;
                paced.heap.push(s);
                continue;
            }
            let ending = s.until.is_some_and(|u| s.due >= u);
            let went = if ending {
                h2.send_more(s.stream, &[], true)
            } else {
                let n = framed_len(&s.body[s.at..]).unwrap_or(s.body.len() - s.at);
                let next = s.due + paced.send.interval;
                let at = s.at + n;
                let wrapped = at >= s.body.len();
                let after = paced.send.after(s.sent + 1, wrapped, next, s.until);
                let last = after == After::End;
                let went = h2.send_more(s.stream, &s.body[s.at..at], last);
                s.sent += 1;
                s.at = if at >= s.body.len() { 0 } else { at };
                match after {
                    After::Send => s.due = next,
                    After::EndAt(u) => s.due = u,
                    After::End => {}
                }
                went && !last
            };
            if !touched.contains(&s.ci) {
                touched.push(s.ci);
            }
            if went && !ending {
                paced.heap.push(s);
            } else {
                paced.recycle(s.body);
            }
        }
        self.prep.paced = Some(paced);
        for ci in touched {
            self.write(ci, now);
        }
    }
}

impl Paced {
    fn recycle(&mut self, body: Vec<u8>) {
        if self.spare.len() < SPARE {
            self.spare.push(body);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn send(interval_ms: u64, count: Option<u64>, duration_ms: Option<u64>) -> StreamSend {
        StreamSend {
            interval: Duration::from_millis(interval_ms),
            count,
            duration_us: duration_ms.map(|d| d * 1000),
        }
    }

    fn framed(messages: &[&[u8]]) -> Vec<u8> {
        let mut b = Vec::new();
        for m in messages {
            stampede_wire::grpc::frame(&mut b, false, m);
        }
        b
    }

    #[test]
    fn a_stream_ends_after_its_count_its_time_or_its_body_once() {
        let t = Instant::now();
        let ms = |n| t + Duration::from_millis(n);
        // A count: so many messages, the body's again and again.
        let s = send(10, Some(3), None);
        assert_eq!(s.after(2, true, ms(30), None), After::Send);
        assert_eq!(s.after(3, false, ms(40), None), After::End);
        // A duration: messages until the next would fall at or after the end.
        let s = send(10, None, Some(25));
        assert_eq!(s.after(2, true, ms(20), Some(ms(25))), After::Send);
        assert_eq!(s.after(3, true, ms(30), Some(ms(25))), After::EndAt(ms(25)));
        // Both: whichever comes first.
        let s = send(10, Some(2), Some(100));
        assert_eq!(s.after(2, false, ms(20), Some(ms(100))), After::End);
        // Neither: the body's messages once.
        let s = send(10, None, None);
        assert_eq!(s.after(1, false, ms(10), None), After::Send);
        assert_eq!(s.after(2, true, ms(20), None), After::End);
    }

    #[test]
    fn the_first_message_is_cut_at_its_prefix() {
        let body = framed(&[b"one", b"two"]);
        let p = Paced::new(send(10, None, None));
        assert_eq!(p.first(&body), (8, true));
        assert_eq!(p.first(&body[..8]), (8, false));
        // One message asked for: it is the whole request.
        assert_eq!(Paced::new(send(10, Some(1), None)).first(&body), (8, false));
        // A duration keeps even one message's stream going.
        assert_eq!(
            Paced::new(send(10, None, Some(50))).first(&body[..8]),
            (8, true)
        );
    }

    #[test]
    fn streams_fall_due_earliest_first_and_in_order_of_start() {
        let t = Instant::now();
        let body = framed(&[b"a", b"b"]);
        let mut p = Paced::new(send(10, None, None));
        p.begin((0, 1, 3), &body, 6, t + Duration::from_millis(5));
        p.begin((1, 1, 1), &body, 6, t);
        p.begin((2, 1, 1), &body, 6, t);
        assert_eq!(p.next_due(), Some(t + Duration::from_millis(10)));
        let order: Vec<usize> = std::iter::from_fn(|| p.heap.pop().map(|s| s.ci)).collect();
        assert_eq!(order, vec![1, 2, 0]);
    }

    #[test]
    fn a_duration_shorter_than_the_interval_ends_the_stream_at_its_time() {
        let t = Instant::now();
        let body = framed(&[b"a"]);
        let mut p = Paced::new(send(50, None, Some(20)));
        p.begin((0, 1, 1), &body, 6, t);
        assert_eq!(p.next_due(), Some(t + Duration::from_millis(20)));
    }
}
