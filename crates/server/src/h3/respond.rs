//! Answers over HTTP/3: a routed response written to its request stream — the
//! HEADERS frame (kept, per status, type and length, until the `Date` changes, and
//! handed to QUIC by reference), then the content whole, a chunk at a time as the
//! stream's window takes it, or as a stream of events.

use std::sync::Arc;

use quinn_proto::Connection;
use stampede_quic::Outbox;
use stampede_wire::h3::{data_head, frame, kind, qpack};

use super::{Answer, ReqStream};
use crate::routes::{self, Pattern, Respond, BODY_CHUNK};

/// The response heads made since the `Date` last changed, as HEADERS frames ready
/// to send: an answer repeated within a second costs no encoding and no copy (QUIC
/// keeps a reference to the frame until it is acknowledged).
#[derive(Default)]
pub(super) struct Heads {
    date: Vec<u8>,
    made: Vec<(u16, Box<str>, Option<usize>, bytes::Bytes)>,
}

/// Heads kept at most (beyond, the list starts over).
const MAX_HEADS: usize = 32;

impl Heads {
    pub(super) fn set_date(&mut self, date: &[u8]) {
        if self.date != date {
            self.date.clear();
            self.date.extend_from_slice(date);
            self.made.clear();
        }
    }

    /// The HEADERS frame of a response (`len`: its content-length, none for a
    /// streamed answer).
    fn get(&mut self, status: u16, ctype: &str, len: Option<usize>) -> bytes::Bytes {
        if let Some(h) = (self.made.iter()).find(|h| h.0 == status && h.2 == len && *h.1 == *ctype)
        {
            return h.3.clone();
        }
        let mut section = Vec::with_capacity(96);
        let st = crate::h2::three_digits(status);
        let mut digits = [0u8; 20];
        let length = len.map(|l| routes::decimal(l as u64, &mut digits).to_vec());
        let server = crate::SERVER.as_bytes();
        let mut fields: Vec<(&[u8], &[u8])> = vec![
            (b":status", &st),
            (b"server", server),
            (b"date", &self.date),
            (b"content-type", ctype.as_bytes()),
        ];
        if let Some(l) = &length {
            fields.push((b"content-length", l));
        }
        if status == 405 {
            fields.push((b"allow", b"GET, HEAD"));
        }
        qpack::encode(&mut section, fields);
        let mut out = Vec::with_capacity(section.len() + 4);
        frame(&mut out, kind::HEADERS, &section);
        let out = bytes::Bytes::from(out);
        if self.made.len() >= MAX_HEADS {
            self.made.clear();
        }
        self.made.push((status, ctype.into(), len, out.clone()));
        out
    }
}

/// Hands a routed response to an HTTP/3 stream.
pub(super) struct H3Respond<'a> {
    pub(super) conn: &'a mut Connection,
    pub(super) outbox: &'a mut Outbox,
    pub(super) stream: &'a mut ReqStream,
    pub(super) head: bool,
    pub(super) heads: &'a mut Heads,
    pub(super) body: &'a mut Vec<u8>,
}

impl H3Respond<'_> {
    /// Writes the response's HEADERS frame (`len`: its content-length, none for a
    /// streamed answer), and the stream's end with it when `fin`.
    fn fields(&mut self, status: u16, ctype: &str, len: Option<usize>, fin: bool) {
        let head = self.heads.get(status, ctype, len);
        let _ = (self.outbox).write_shared(self.conn, self.stream.id, &head, fin);
    }

    /// A 200 answer whose body, `len` bytes of `/bytes`' pattern or of `file`, is
    /// made a chunk at a time as the stream's window takes it.
    fn respond_body(&mut self, ctype: &str, len: usize, file: Option<Arc<[u8]>>) {
        let done = self.head || len == 0;
        self.fields(200, ctype, Some(len), done);
        if done {
            self.stream.answer = Answer::Done;
            return;
        }
        let mut out = Vec::with_capacity(16);
        let mut pattern = if file.is_some() {
            Pattern::file(len)
        } else {
            Pattern::new(len)
        };
        self.body.clear();
        match &file {
            Some(f) => pattern.fill_from(f, self.body, BODY_CHUNK),
            None => pattern.fill(self.body, BODY_CHUNK),
        };
        data_head(&mut out, self.body.len() as u64);
        out.extend_from_slice(self.body);
        let last = pattern.left() == 0;
        self.stream.answer = if last {
            Answer::Done
        } else {
            Answer::Body { pattern, file }
        };
        self.send(&out, last);
    }

    fn send(&mut self, out: &[u8], fin: bool) {
        let _ = self.outbox.write(self.conn, self.stream.id, out, fin);
    }
}

impl Respond for H3Respond<'_> {
    fn respond(&mut self, status: u16, ctype: &str, body: &[u8]) {
        let len = if routes::bodyless(status) {
            0
        } else {
            body.len()
        };
        let shown = (status == 200 || !routes::bodyless(status)).then_some(len);
        let content = !self.head && len > 0;
        self.fields(status, ctype, shown, !content);
        if content {
            let out = &mut *self.body;
            out.clear();
            data_head(out, len as u64);
            out.extend_from_slice(&body[..len]);
            let _ = self.outbox.write(self.conn, self.stream.id, out, true);
        }
        self.stream.answer = Answer::Done;
    }

    fn respond_pattern(&mut self, len: usize) {
        self.respond_body("application/octet-stream", len, None);
    }

    fn respond_file(&mut self, ctype: &str, bytes: Arc<[u8]>) {
        self.respond_body(ctype, bytes.len(), Some(bytes));
    }

    fn stream_head(&mut self, ctype: &str) -> bool {
        let head = self.head;
        self.fields(200, ctype, None, head);
        if head {
            self.stream.answer = Answer::Done;
        }
        !head
    }
}
