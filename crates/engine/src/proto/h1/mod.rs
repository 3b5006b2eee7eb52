//! HTTP/1.1 for the load engine: the client side of one connection as a sans-IO state
//! machine, shaped like [`crate::proto::h2::H2Conn`].
//!
//! A worker queues requests (answered in order), points the connection at the
//! request bytes to send (a range of the worker's one prepared copy, never copied per
//! connection), writes what [`H1Conn::output`] returns and reports it with
//! [`H1Conn::wrote`], and feeds what it reads; the connection answers with
//! [`Event`]s: responses complete, in request order, each saying whether its first
//! byte came in the bytes just fed. It
//! owns the rules a pipelined HTTP/1 client must keep: bytes that no request asked
//! for, or a second answer to one request, break the connection; a response that ends
//! the connection (`Connection: close`, HTTP/1.0 without keep-alive, a close-delimited
//! body, or keep-alive turned off) is the last one read. No socket, no clock.

pub mod parse;

use std::collections::VecDeque;
use std::ops::Range;

use crate::proto::event::{Event, Response};
use crate::proto::h1::parse::{Kept, ParseError, ResponseParser};

/// The client side of one HTTP/1.1 connection.
#[derive(Debug)]
pub struct H1Conn {
    parser: ResponseParser,
    /// Whether responses may keep the connection open (`--no-keepalive` says not).
    keepalive: bool,
    /// The request bytes to send, as a range of the caller's buffer, and how much of
    /// it is written.
    out: Range<usize>,
    written: usize,
    /// Requests queued and not yet answered.
    unanswered: u32,
    /// The last response ended the connection: nothing more is read.
    ended: bool,
    /// Responses completed and kept whole, oldest first (see [`H1Conn::keep_responses`]).
    kept: Option<VecDeque<Kept>>,
}

impl H1Conn {
    /// A connection whose responses answer requests of the given kind (HEAD responses
    /// carry no body); `keepalive` false ends it after each response.
    pub fn new(head_request: bool, keepalive: bool) -> H1Conn {
        H1Conn {
            parser: ResponseParser::new(head_request),
            keepalive,
            out: 0..0,
            written: 0,
            unanswered: 0,
            ended: false,
            kept: None,
        }
    }

    /// Keeps every response's header fields and body from now on, one
    /// [`H1Conn::take_response`] per [`Event::Response`] (for a script that reads
    /// them; otherwise bodies are only counted).
    pub(crate) fn watch(
        &mut self,
        mode: crate::proto::watch::StreamMode,
        counter: Option<crate::TokenCounter>,
    ) {
        self.parser.watch(mode, counter);
    }

    pub fn keep_responses(&mut self) {
        self.parser.keep_responses();
        self.kept.get_or_insert_with(VecDeque::new);
    }

    /// The oldest kept response not yet taken.
    pub fn take_response(&mut self) -> Option<Kept> {
        self.kept.as_mut()?.pop_front()
    }

    /// A taken response its reader is done with, its room kept for the next.
    pub fn recycle(&mut self, done: Kept) {
        self.parser.recycle(done);
    }

    /// Queues `n` requests, answered in order after those queued before. Their bytes
    /// are part of what [`H1Conn::send`] points at.
    #[inline]
    pub fn queue(&mut self, n: u32) {
        self.unanswered += n;
    }

    /// Requests queued and not yet answered.
    #[inline]
    pub fn unanswered(&self) -> u32 {
        self.unanswered
    }

    /// The bytes of the queued requests: `range` of the buffer later given to
    /// [`H1Conn::output`].
    #[inline]
    pub fn send(&mut self, range: Range<usize>) {
        self.out = range;
        self.written = 0;
    }

    /// What is left to write, out of `bytes` (the buffer [`H1Conn::send`] points into).
    #[inline]
    pub fn output<'b>(&self, bytes: &'b [u8]) -> &'b [u8] {
        &bytes[self.out.start + self.written..self.out.end]
    }

    /// Whether request bytes are still to be written.
    #[inline]
    pub fn has_output(&self) -> bool {
        self.out.start + self.written < self.out.end
    }

    /// `n` bytes of [`H1Conn::output`] were written.
    #[inline]
    pub fn wrote(&mut self, n: usize) {
        self.written += n;
    }

    /// Sets whether the next responses answer HEAD requests (session scripts change
    /// the request from one step to the next).
    pub fn set_head_request(&mut self, head: bool) {
        self.parser.set_head_request(head);
    }

    /// Keeps the Server header of the next response (see [`H1Conn::take_server`]).
    #[inline]
    pub fn capture_server(&mut self) {
        self.parser.capture_server();
    }

    /// The Server header captured, if any.
    #[inline]
    pub fn take_server(&mut self) -> Option<String> {
        self.parser.take_server()
    }

    /// The socket is gone: forgets the partial response, the unanswered requests and
    /// unwritten bytes. Requests queued afterwards start a new connection.
    pub fn reset(&mut self) {
        self.parser.reset();
        self.out = 0..0;
        self.written = 0;
        self.unanswered = 0;
        self.ended = false;
        if let Some(k) = &mut self.kept {
            k.clear();
        }
    }

    /// Consumes bytes read from the server, appending an [`Event::Response`] for each
    /// response completed. An error means the connection must close; the events
    /// appended before it stand.
    #[inline]
    pub fn feed(&mut self, mut data: &[u8], events: &mut Vec<Event>) -> Result<(), ParseError> {
        // Whether the response being parsed began in these bytes.
        let mut fresh = false;
        while !data.is_empty() && !self.ended {
            if self.unanswered() == 0 {
                // Bytes nobody asked for: the server is broken.
                return Err(ParseError::Unsolicited);
            }
            fresh |= self.parser.at_response_start();
            let (n, done) = self.parser.feed(data)?;
            data = &data[n..];
            if let Some(progress) = self.parser.take_progress() {
                events.push(Event::Progress {
                    stream: 0,
                    progress,
                });
            }
            if let Some(done) = done {
                self.unanswered -= 1;
                if self.unanswered == 0 && !data.is_empty() {
                    // More follows the answer to the last request sent: a second
                    // response to one request. Neither counts as an answer.
                    return Err(ParseError::Unsolicited);
                }
                self.respond(done, fresh, events);
                fresh = false;
            }
        }
        Ok(())
    }

    /// A response has begun and is not complete yet.
    #[inline]
    pub fn mid_response(&self) -> bool {
        !self.parser.at_response_start()
    }

    /// The server closed the connection: completes a close-delimited body (appending
    /// its [`Event::Response`]); otherwise an unanswered request stays unanswered.
    pub fn eof(&mut self, events: &mut Vec<Event>) {
        if self.unanswered() == 0 || self.ended {
            return;
        }
        if let Some(done) = self.parser.eof() {
            self.unanswered -= 1;
            self.respond(done, false, events);
        }
    }

    #[inline]
    fn respond(
        &mut self,
        done: crate::proto::h1::parse::Completed,
        fresh: bool,
        events: &mut Vec<Event>,
    ) {
        let close = !(done.keep_alive && self.keepalive);
        self.ended = close;
        if self.kept.is_some() {
            self.keep_response();
        }
        events.push(Event::Response(Response {
            // In order: the oldest request queued.
            stream: 0,
            status: done.status,
            body: done.body_bytes,
            close,
            reused: !close,
            fresh,
            grpc: None,
        }));
    }
}

impl H1Conn {
    /// Queues the response just completed for [`H1Conn::take_response`] (out of line:
    /// only a script that reads responses asks for them).
    #[cold]
    #[inline(never)]
    fn keep_response(&mut self) {
        let kept = self.parser.take_kept().unwrap_or_default();
        if let Some(k) = &mut self.kept {
            k.push_back(kept);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nPONG";

    #[test]
    fn pipelined_answers_come_in_request_order() {
        let mut c = H1Conn::new(false, true);
        c.queue(3);
        let bytes = b"GET / HTTP/1.1\r\n\r\n".repeat(3);
        c.send(0..bytes.len());
        assert_eq!(c.output(&bytes), &bytes[..]);
        c.wrote(10);
        assert_eq!(c.output(&bytes).len(), bytes.len() - 10);
        c.wrote(bytes.len() - 10);
        assert!(!c.has_output());
        let wire = OK.repeat(3);
        let mut ev = Vec::new();
        // Split mid-way: the second response's first byte comes in the first read.
        c.feed(&wire[..OK.len() + 3], &mut ev).unwrap();
        assert!(c.mid_response());
        c.feed(&wire[OK.len() + 3..], &mut ev).unwrap();
        assert!(!c.mid_response());
        let fresh: Vec<bool> = ev
            .iter()
            .map(|e| match e {
                Event::Response(r) => r.fresh,
                _ => panic!("{e:?}"),
            })
            .collect();
        // The first began and ended in the first read; the second began there and
        // ended in the next; the third came whole in the next.
        assert_eq!(fresh, [true, false, true]);
        assert_eq!(c.unanswered(), 0);
    }

    #[test]
    fn unsolicited_bytes_and_double_answers_break_the_connection() {
        let mut c = H1Conn::new(false, true);
        assert_eq!(c.feed(OK, &mut Vec::new()), Err(ParseError::Unsolicited));
        let mut c = H1Conn::new(false, true);
        c.queue(1);
        let mut ev = Vec::new();
        assert_eq!(c.feed(&OK.repeat(2), &mut ev), Err(ParseError::Unsolicited));
        assert!(!ev.iter().any(|e| matches!(e, Event::Response(_))));
    }

    #[test]
    fn a_closing_response_is_the_last_read() {
        let close = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx";
        let mut c = H1Conn::new(false, true);
        c.queue(2);
        let mut ev = Vec::new();
        c.feed(&[&close[..], OK].concat(), &mut ev).unwrap();
        assert!(matches!(
            ev.last(),
            Some(Event::Response(Response {
                close: true,
                reused: false,
                ..
            }))
        ));
        assert_eq!(c.unanswered(), 1);
        // Keep-alive off: every response ends the connection.
        let mut c = H1Conn::new(false, false);
        c.queue(1);
        let mut ev = Vec::new();
        c.feed(OK, &mut ev).unwrap();
        assert!(matches!(
            ev.last(),
            Some(Event::Response(Response { close: true, .. }))
        ));
    }

    #[test]
    fn a_watched_body_reports_its_pieces_however_it_is_split() {
        use crate::proto::watch::StreamMode;
        // Two chunks, then a Content-Length answer read whole: three pieces; split
        // anywhere in the chunked one, the chunks still count two, the bytes add up
        // the same, and each comes before its response ends.
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n1;x\r\n!\r\n0\r\n\r\n";
        for split in 1..=chunked.len() {
            let mut c = H1Conn::new(false, true);
            c.watch(StreamMode::Chunks, None);
            c.queue(2);
            let mut ev = Vec::new();
            for part in chunked.chunks(split) {
                c.feed(part, &mut ev).unwrap();
            }
            c.feed(OK, &mut ev).unwrap();
            let (mut bytes, mut events, mut order) = (0, 0, Vec::new());
            for e in &ev {
                match e {
                    Event::Progress { progress, .. } => {
                        bytes += progress.bytes;
                        events += progress.events;
                        order.push('p');
                    }
                    Event::Response(_) => order.push('r'),
                    _ => panic!("{e:?}"),
                }
            }
            assert_eq!((bytes, events), (10, 3), "split {split}");
            // A piece of an unframed body is what one read brought.
            assert_eq!(order.iter().filter(|&&o| o == 'r').count(), 2);
            assert_eq!(order.last(), Some(&'r'));
        }
        // Unwatched, nothing but responses.
        let mut c = H1Conn::new(false, true);
        c.queue(1);
        let mut ev = Vec::new();
        c.feed(chunked, &mut ev).unwrap();
        assert_eq!(ev.len(), 1);
        // An event over the limit breaks the connection with its own error.
        let mut c = H1Conn::new(false, true);
        c.watch(StreamMode::Sse, None);
        c.queue(1);
        let big = [
            &b"HTTP/1.1 200 OK\r\nContent-Length: 2000000\r\n\r\ndata: "[..],
            &vec![b'x'; crate::proto::watch::MAX_EVENT],
        ]
        .concat();
        assert_eq!(c.feed(&big, &mut Vec::new()), Err(ParseError::Event));
    }

    #[test]
    fn a_close_delimited_body_ends_with_the_connection() {
        let mut c = H1Conn::new(false, true);
        c.queue(1);
        let mut ev = Vec::new();
        c.feed(b"HTTP/1.0 200 OK\r\n\r\nhello", &mut ev).unwrap();
        assert!(!ev.iter().any(|e| matches!(e, Event::Response(_))));
        c.eof(&mut ev);
        assert!(matches!(
            ev.last(),
            Some(Event::Response(Response {
                status: 200,
                body: 5,
                close: true,
                ..
            }))
        ));
        // A truncated Content-Length body is no answer.
        let mut c = H1Conn::new(false, true);
        c.queue(1);
        let mut ev = Vec::new();
        c.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nab", &mut ev)
            .unwrap();
        c.eof(&mut ev);
        assert!(!ev.iter().any(|e| matches!(e, Event::Response(_))));
    }

    #[test]
    fn reset_forgets_the_old_socket() {
        let mut c = H1Conn::new(false, true);
        c.queue(1);
        c.feed(
            b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nab",
            &mut Vec::new(),
        )
        .unwrap();
        c.reset();
        assert_eq!(c.unanswered(), 0);
        c.queue(1);
        let mut ev = Vec::new();
        c.feed(OK, &mut ev).unwrap();
        assert!(matches!(ev.last(), Some(Event::Response(r)) if r.stream == 0));
    }
}
