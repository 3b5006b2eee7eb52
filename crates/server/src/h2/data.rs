//! A request's DATA frames: checked against its stream's state and declared length,
//! counted against both receive windows (given back as half of each is taken), and
//! handed to a live stream's call or WebSocket tunnel, or kept for the router (a
//! POST's body, within the body limit; past it the request is answered 413 at once).

use stampede_wire::frame::{self, Head};

use super::{fail, ConnError, H2Conn, State, Tunnel, RECV_WINDOW};
use crate::request::Method;

impl H2Conn {
    pub(super) fn data(
        &mut self,
        h: Head,
        payload: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), ConnError> {
        if h.stream == 0 {
            return fail(frame::PROTOCOL_ERROR, "DATA on stream 0");
        }
        let len = payload.len() as u32;
        self.recv_window -= len as i64;
        if self.recv_window < 0 {
            return fail(
                frame::FLOW_CONTROL_ERROR,
                "DATA beyond the connection window",
            );
        }
        self.recv_unacked += len;
        if self.recv_unacked >= RECV_WINDOW / 2 {
            frame::window_update(out, 0, self.recv_unacked);
            self.recv_window += self.recv_unacked as i64;
            self.recv_unacked = 0;
        }
        let body = frame::unpad(h.flags, payload).or_else(|e| fail(frame::PROTOCOL_ERROR, e))?;
        let max_body = self.limits.max_body;
        let Some(s) = self.streams.iter_mut().find(|s| s.id == h.stream) else {
            if h.stream > self.last_stream {
                return fail(frame::PROTOCOL_ERROR, "DATA on an idle stream");
            }
            frame::rst_stream(out, h.stream, frame::STREAM_CLOSED);
            return Ok(());
        };
        if s.early {
            // Refused already; the rest of the body is not read.
            return Ok(());
        }
        let live = s.live && !s.ended;
        if s.state != State::Receiving && !live {
            frame::rst_stream(out, h.stream, frame::STREAM_CLOSED);
            self.remove(h.stream);
            return Ok(());
        }
        s.recv_window -= len as i64;
        if s.recv_window < 0 {
            frame::rst_stream(out, h.stream, frame::FLOW_CONTROL_ERROR);
            self.remove(h.stream);
            return Ok(());
        }
        let end = h.flags & frame::END_STREAM != 0;
        if live {
            s.recv_unacked += len;
            if !end && s.recv_unacked >= RECV_WINDOW / 2 {
                frame::window_update(out, s.id, s.recv_unacked);
                s.recv_window += s.recv_unacked as i64;
                s.recv_unacked = 0;
            }
            s.ended = end;
            if s.tunnel == Tunnel::WebSocket {
                self.socket_data(h.stream, body, out);
            } else {
                self.call_data(h.stream, body, out);
            }
            return Ok(());
        }
        s.body_len += body.len();
        if s.method == Method::Post && s.body_len <= max_body {
            // Kept for the router (the mock LLM reads it), within the body limit.
            let id = s.id;
            match self.posted.iter_mut().find(|(p, _)| *p == id) {
                Some((_, b)) => b.extend_from_slice(body),
                None => self.posted.push((id, body.to_vec())),
            }
        }
        if s.declared
            .is_some_and(|d| s.body_len > d || (end && s.body_len != d))
        {
            // DATA that does not add up to content-length: malformed (RFC 9113 8.1.1).
            frame::rst_stream(out, h.stream, frame::PROTOCOL_ERROR);
            self.remove(h.stream);
            return Ok(());
        }
        if s.body_len > max_body {
            s.refuse = Some(413);
        }
        s.recv_unacked += len;
        if !end && s.recv_unacked >= RECV_WINDOW / 2 {
            frame::window_update(out, s.id, s.recv_unacked);
            s.recv_window += s.recv_unacked as i64;
            s.recv_unacked = 0;
        }
        if end || s.refuse.is_some() {
            // A body over the limit is answered now; the rest of it is not read.
            s.early = !end;
            s.state = State::Queued;
            self.ready.push_back(h.stream);
        }
        Ok(())
    }
}
