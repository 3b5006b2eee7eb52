//! The request side of an HTTP/2 connection: each stream's header block (the
//! request's literals, or its fields indexed in the server's table when the
//! connection repeats one request, with a call's own fields after them) and its body,
//! sent as far as the server's windows allow; a made call's body kept per stream
//! until they open.

use super::{frame_head, H2Conn, H2Request, Indexing, Stream, Watch};
use super::{CONTINUATION, DATA, END_HEADERS, END_STREAM, HEADERS};

impl H2Conn {
    /// Opens a stream for `req`; returns its id. Its frames go to `out`. `repeat`
    /// says the connection sends only this request, so its fields can be indexed in
    /// the server's dynamic table (h2load does the same).
    pub fn request(&mut self, req: &H2Request, repeat: bool) -> u32 {
        let body = !req.body.is_empty();
        let id = self.headers_out(req, repeat, &[], body);
        if body {
            self.pump(&req.body);
        }
        id
    }

    /// Opens a stream for `req` with a body and header fields of its own (HPACK
    /// field lines, sent after the request's, whose fields are indexed as a repeated
    /// request's are): a call made for itself (see [`crate::made`]). The body goes
    /// as far as the windows allow; the rest is kept for this stream until they open.
    pub fn request_made(&mut self, req: &H2Request, body: &[u8], fields: &[u8]) -> u32 {
        let has_body = !body.is_empty();
        let id = self.headers_out(req, true, fields, has_body);
        if has_body {
            self.send_own(self.streams.len() - 1, body);
        }
        id
    }

    /// Opens a stream for `req` whose send side stays open after `body`: the rest of
    /// the request follows by [`H2Conn::send_more`]. Otherwise as
    /// [`H2Conn::request_made`] (`repeat` as for [`H2Conn::request`]).
    pub fn request_open(
        &mut self,
        req: &H2Request,
        repeat: bool,
        body: &[u8],
        fields: &[u8],
    ) -> u32 {
        let id = self.headers_out(req, repeat, fields, true);
        let at = self.streams.len() - 1;
        self.streams[at].more = true;
        self.send_own(at, body);
        id
    }

    /// Sends `body` on stream `id`, opened by [`H2Conn::request_open`], after what it
    /// has sent; `last` ends its send side with it (an empty `body` then sends an empty
    /// DATA frame with END_STREAM). False: the stream is over (answered, reset, or
    /// never opened here), and nothing is sent.
    pub fn send_more(&mut self, id: u32, body: &[u8], last: bool) -> bool {
        let Some(at) = self.streams.iter().position(|s| s.id == id && s.more) else {
            return false;
        };
        let s = &mut self.streams[at];
        s.more = !last;
        if s.send_from.is_some() {
            // Still waiting on a window: queued after what waits.
            match self.owned.iter_mut().find(|o| o.0 == id) {
                Some(own) => own.1.extend_from_slice(body),
                None => unreachable!("an open-ended stream sends owned bytes"),
            }
        } else if body.is_empty() {
            if last {
                frame_head(&mut self.out, 0, DATA, END_STREAM, id);
            }
        } else {
            self.send_own(at, body);
        }
        true
    }

    /// Opens the next stream with `req`'s header block (the one [`H2Conn::block_for`]
    /// chooses) and `fields` after it; returns its id. The block is written as it is,
    /// or put together in a buffer reused stream to stream when it has parts.
    fn headers_out(&mut self, req: &H2Request, repeat: bool, fields: &[u8], body: bool) -> u32 {
        let id = self.next_id;
        self.next_id += 2;
        let (prefix, block): (&[u8], &[u8]) = match self.block_for(req, repeat) {
            Block::Plain => (&[], &req.block),
            Block::First => (&[], &req.block_first),
            Block::Indexed => (&[], &req.block_indexed),
            // A table size update to 0 first (the server shrank its table).
            Block::ShrinkThenPlain => (&[0x20], &req.block),
        };
        if prefix.is_empty() && fields.is_empty() {
            write_headers(&mut self.out, id, block, body, self.peer_max_frame);
        } else {
            let mut whole = std::mem::take(&mut self.block_buf);
            whole.clear();
            whole.extend_from_slice(prefix);
            whole.extend_from_slice(block);
            whole.extend_from_slice(fields);
            write_headers(&mut self.out, id, &whole, body, self.peer_max_frame);
            self.block_buf = whole;
        }
        self.open(id, body);
        id
    }

    /// Which of `req`'s header blocks the next stream sends (see [`Indexing`]);
    /// `repeat`: the connection sends only this request.
    fn block_for(&mut self, req: &H2Request, repeat: bool) -> Block {
        if !repeat
            || req.block_first.is_empty()
            || req.table_bytes > self.settings.encoder_table as usize
        {
            return Block::Plain;
        }
        match self.indexing {
            Indexing::Fresh => {
                self.indexing = Indexing::Inserted;
                Block::First
            }
            Indexing::Inserted => Block::Indexed,
            Indexing::ShrinkThenOff => {
                self.indexing = Indexing::Off;
                Block::ShrinkThenPlain
            }
            Indexing::Off => Block::Plain,
        }
    }

    /// A new stream `id`, whose request has a body to send (or none).
    fn open(&mut self, id: u32, body: bool) {
        self.streams.push_back(Stream {
            id,
            status: 0,
            body: 0,
            unacked: 0,
            send_from: body.then_some(0),
            more: false,
            send_window: self.peer_initial_window,
            watch: (self.watch.as_ref()).map(|(m, c)| Box::new(Watch::new(*m, c.clone()))),
        });
    }

    /// Sends request body bytes as far as the server's windows allow.
    pub fn pump(&mut self, body: &[u8]) {
        for s in self.streams.iter_mut() {
            let Some(from) = s.send_from else {
                continue;
            };
            // A made call's stream sends its own body.
            let body = match self.owned.iter().find(|o| o.0 == s.id) {
                Some((_, own)) => &own[..],
                None => body,
            };
            let (out, window) = (&mut self.out, &mut self.conn_send_window);
            let from = send_body(out, s, body, from, window, self.peer_max_frame);
            s.send_from = (from < body.len()).then_some(from);
        }
        if !self.owned.is_empty() {
            let streams = &self.streams;
            self.owned
                .retain(|o| streams.iter().any(|s| s.id == o.0 && s.send_from.is_some()));
        }
    }

    /// Body bytes stream `id` has queued for the server's windows (at most: what was
    /// queued, some of it perhaps sent since).
    pub fn queued(&self, id: u32) -> usize {
        (self.owned.iter())
            .find(|o| o.0 == id)
            .map_or(0, |o| o.1.len())
    }

    /// Sends stream `at`'s own body as far as the windows allow; the rest is kept for
    /// it until they open.
    fn send_own(&mut self, at: usize, body: &[u8]) {
        let s = &mut self.streams[at];
        let (out, window) = (&mut self.out, &mut self.conn_send_window);
        let from = send_body(out, s, body, 0, window, self.peer_max_frame);
        if from < body.len() {
            self.owned.push((s.id, body[from..].to_vec()));
            s.send_from = Some(0);
        } else {
            s.send_from = None;
        }
    }
}

/// Which of a request's header blocks a stream sends.
enum Block {
    /// Literals only.
    Plain,
    /// Literals that insert the fields into the server's table.
    First,
    /// Indexes of the fields inserted.
    Indexed,
    /// A table size update to 0 (the server's table shrank), then literals.
    ShrinkThenPlain,
}

/// Writes a request's header block on stream `id`: HEADERS, then CONTINUATION
/// frames for a block over the server's frame size; END_STREAM when it has no body.
fn write_headers(out: &mut Vec<u8>, id: u32, block: &[u8], body: bool, max_frame: usize) {
    let mut at = 0;
    let mut first = true;
    loop {
        let n = (block.len() - at).min(max_frame);
        let last = at + n == block.len();
        let flags =
            if last { END_HEADERS } else { 0 } | if first && !body { END_STREAM } else { 0 };
        frame_head(
            out,
            n,
            if first { HEADERS } else { CONTINUATION },
            flags,
            id,
        );
        out.extend_from_slice(&block[at..at + n]);
        at += n;
        first = false;
        if last {
            break;
        }
    }
}

/// Sends `body` from `from` on stream `s` as DATA frames, as far as its window and
/// the connection's allow (END_STREAM with the last byte, unless the stream has more
/// to come); returns where it stopped.
fn send_body(
    out: &mut Vec<u8>,
    s: &mut Stream,
    body: &[u8],
    mut from: usize,
    conn_window: &mut i64,
    max_frame: usize,
) -> usize {
    while from < body.len() {
        let room = s.send_window.min(*conn_window);
        if room <= 0 {
            break;
        }
        let n = (body.len() - from).min(max_frame).min(room as usize);
        // An open-ended stream's send side stays open after its bytes so far.
        let end = from + n == body.len() && !s.more;
        frame_head(out, n, DATA, if end { END_STREAM } else { 0 }, s.id);
        out.extend_from_slice(&body[from..from + n]);
        from += n;
        s.send_window -= n as i64;
        *conn_window -= n as i64;
    }
    from
}
