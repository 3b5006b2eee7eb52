//! The checks of what a run carries beyond HTTP/1.1 and HTTP/2 requests: HTTP/3's
//! (what QUIC streams can and cannot do of the rest), calls made one by one (gRPC
//! and WebSocket messages built for each call), WebSocket runs' bounds, and bodies
//! streamed after the request head.

use std::time::Duration;

use crate::error::SpecError;
use crate::spec::LoadSpec;

impl LoadSpec {
    /// HTTP/3: QUIC to an https target's host and port, directly, with streams as
    /// HTTP/2 has them — what HTTP/2 refuses it refuses too, and what only HTTP/1.1
    /// connections do (scripts, redirects, bursts, cookies) it leaves to them.
    pub(super) fn check_http3(&self) -> Result<(), SpecError> {
        let Some(h3) = &self.load.protocol.http3 else {
            return Ok(());
        };
        h3.check()?;
        let s = &self.load.session;
        let http1_only =
            s.retry || s.max_piped > 0 || s.cookies || self.load.script.iter().any(|s| s.follows);
        let why = if !self.target.tls {
            Some("HTTP/3 runs over QUIC, which is always encrypted: give an https:// URL")
        } else if matches!(self.target.address, crate::spec::target::Address::Unix(_)) {
            Some("HTTP/3 goes over UDP to a host and port, not a Unix socket")
        } else if self.load.protocol.http2 {
            Some("choose HTTP/2 or HTTP/3, not both")
        } else if self.proxy.is_some() {
            Some(
                "HTTP/3 cannot go through an HTTP proxy (CONNECT tunnels TCP); leave the proxy out",
            )
        } else if self.tls.is_none() {
            Some("HTTP/3 needs the TLS settings of an https target")
        } else if !self.load.keepalive {
            Some("HTTP/3 connections are persistent; a new connection per request does not apply")
        } else if self.load.socket.io == crate::spec::net::IoBackend::IoUring {
            Some("HTTP/3's UDP sockets are carried by epoll: leave out --io io_uring")
        } else if self.load.batch_latency {
            Some("batch latency times HTTP/1.1's pipelined batches; HTTP/3 streams are timed one by one")
        } else if let Some(why) = self.streams_for_hooks() {
            Some(why)
        } else if self.load.redirects > 0 {
            Some("redirects are followed over HTTP/1.1; use HTTP/1.1")
        } else if self.load.walk.is_some_and(|w| w.once) {
            Some("a walk that ends the run at the list's end drives HTTP/1.1 requests; let it go round")
        } else if http1_only {
            Some("bursts of a session's steps, retried calls, --max-piped-calls and session cookies are HTTP/1.1's; use HTTP/1.1")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(SpecError::Invalid {
                field: "http3",
                reason: why.into(),
            });
        }
        if let Some(tls) = &self.tls {
            stampede_quic::client_config(tls, &h3.transport(), None).map_err(|e| {
                SpecError::Invalid {
                    field: "http3",
                    reason: e.to_string(),
                }
            })?;
        }
        let steps = self.load.script.iter().map(|s| &s.request);
        for r in std::iter::once(&self.load.request)
            .chain(steps)
            .chain(&self.load.variety)
        {
            if let Err(e) = crate::proto::h2::H2Request::from_http1(&r.bytes, "https") {
                return Err(SpecError::Invalid {
                    field: "http3",
                    reason: format!("the request cannot be sent over HTTP/3: {e}"),
                });
            }
        }
        Ok(())
    }
}

impl LoadSpec {
    /// Calls made one by one (see [`crate::made`]): HTTP/2 streams of a pool sending
    /// the one request, whose fields every call shares, or a WebSocket run's data
    /// messages; nothing else builds requests.
    pub(super) fn check_made_calls(&self) -> Result<(), SpecError> {
        if let Some(ws) = &self.load.protocol.ws {
            // The upgrade is the run's request; each message is made for its call.
            let why = if ws.ping {
                "a ping carries the run's message; messages made one by one are data messages"
            } else if !ws.messages.is_empty() {
                "each message is made for its call; a list of messages used in turn does not apply"
            } else {
                return Ok(());
            };
            return Err(SpecError::Invalid {
                field: "calls",
                reason: why.to_string(),
            });
        }
        let why = if !self.load.protocol.http2 || self.load.protocol.http3.is_some() {
            Some("calls made one by one go over HTTP/2 or WebSocket")
        } else if self.load.shape.has_sessions() {
            Some("calls made one by one go on a pool of connections, not sessions")
        } else if !self.load.variety.is_empty()
            || !self.load.script.is_empty()
            || self.load.walk.is_some()
        {
            Some("each call's body is made for it; a list of requests, steps or a walk does not apply")
        } else if self.hooks.is_some() {
            Some("a script builds its own requests; calls made one by one do not take one")
        } else if self.load.redirects > 0 {
            Some("calls made one by one are answered where they go; redirects do not apply")
        } else if has_content_length(&self.load.request.bytes) {
            Some("each call's body has a length of its own: the request must not declare one")
        } else {
            None
        };
        match why {
            Some(reason) => Err(SpecError::Invalid {
                field: "calls",
                reason: reason.to_string(),
            }),
            None => Ok(()),
        }
    }
}

impl LoadSpec {
    /// WebSocket runs: a `ws://` or `wss://` target, its run's one message sent on
    /// upgraded HTTP/1.1 connections (a pool's, or each session's own) or HTTP/2
    /// streams opened with an extended CONNECT, within bounds.
    pub(super) fn check_ws(&self, ws: &crate::WsLoad) -> Result<(), SpecError> {
        let why = if !self.target.websocket {
            "WebSocket messages go to a ws:// or wss:// URL".to_string()
        } else if self.load.protocol.http3.is_some() {
            "WebSocket connections are upgraded HTTP/1.1 ones, or HTTP/2 streams: not HTTP/3"
                .to_string()
        } else if self.load.protocol.http2 && self.proxy.is_some() {
            "a WebSocket over HTTP/2 goes to the server directly, not through a proxy".to_string()
        } else if ws.ping
            && (self.load.pipeline > 1
                || (self.load.shape.has_sessions() && self.load.session.burst > 1))
        {
            "pings go one at a time on a connection (a pong may answer only the latest ping): not pipelined or in bursts".to_string()
        } else if ws.ping && ws.message.len() > stampede_wire::ws::MAX_CONTROL {
            format!(
                "message: a ping carries at most {} bytes, not {}",
                stampede_wire::ws::MAX_CONTROL,
                ws.message.len()
            )
        } else if !self.load.variety.is_empty()
            || !self.load.script.is_empty()
            || self.load.walk.is_some()
            || self.hooks.is_some()
        {
            "a WebSocket run sends its one message (or one made for each call); a list of requests, steps or a script do not apply".to_string()
        } else if self.load.streams.send.is_some()
            || self
                .load
                .streams
                .stream
                .is_some_and(|m| m != crate::StreamMode::Messages)
        {
            "WebSocket messages are timed as round trips, or (stream = messages) as a push stream; no other stream timing applies".to_string()
        } else if self.load.streams.stream.is_some() && ws.ping {
            "a push stream is timed by the server's messages; pings are round trips of their own"
                .to_string()
        } else if self.load.streams.stream.is_some() && self.load.pipeline > 1 {
            "a connection holds one push stream at a time: not pipelined".to_string()
        } else if self.load.redirects > 0 {
            "a WebSocket upgrade is not redirected".to_string()
        } else if !self.load.request.bytes.starts_with(b"GET ")
            || !self.load.request.bytes.ends_with(b"\r\n\r\n")
        {
            "the upgrade is a GET without a body (the message is sent after it)".to_string()
        } else if ws.stamp && ws.ping {
            "stamp: a ping is a round trip of its own; stamps go on data messages".to_string()
        } else if ws.stamp && self.load.streams.stream.is_some() && ws.message.is_empty() {
            "stamp: a subscription that sends nothing has nothing to stamp".to_string()
        } else if ws.message.len()
            + if ws.stamp {
                stampede_wire::stamp::LEN
            } else {
                0
            }
            > crate::WsLoad::MAX_SEND
        {
            format!(
                "message: {} bytes (with its stamp, if stamped) is more than {} MiB",
                ws.message.len(),
                crate::WsLoad::MAX_SEND >> 20
            )
        } else if !ws.binary && std::str::from_utf8(&ws.message).is_err() {
            "message: a text message must be UTF-8 (send it as binary)".to_string()
        } else if let Some(why) = Self::ws_messages(ws) {
            why
        } else if ws.expecting() && ws.ping {
            "expect: a ping's answer is its pong; expectations are for data messages".to_string()
        } else if !ws.expects.is_empty()
            && (ws.expects.len() != ws.messages.len() || ws.expect.is_some())
        {
            format!(
                "expects: one for each of the messages in turn ({} of them), instead of expect; {} given",
                ws.messages.len(),
                ws.expects.len()
            )
        } else if let Some(i) =
            (ws.expects.iter()).position(|e| e.len() > crate::WsLoad::MAX_EXPECT)
        {
            format!(
                "expects[{i}]: at most {} KiB",
                crate::WsLoad::MAX_EXPECT >> 10
            )
        } else if ws.expecting() && self.load.streams.stream.is_some() {
            "expect: every message of a push stream is an event of it; expectations are for round trips".to_string()
        } else if ws
            .expect
            .as_ref()
            .is_some_and(|e| e.len() > crate::WsLoad::MAX_EXPECT)
        {
            format!("expect: at most {} KiB", crate::WsLoad::MAX_EXPECT >> 10)
        } else if !ws.deflate_params.is_empty() && !ws.deflate {
            "deflate_params: parameters of permessage-deflate's offer; set deflate".to_string()
        } else if let Err(why) = stampede_wire::ws::deflate::offer_with(&ws.deflate_params) {
            format!("deflate_params: {why}")
        } else if ws.max_message == 0 || ws.max_message > 1 << 30 {
            "max_message: from 1 byte to 1 GiB".to_string()
        } else if !crate::WsLoad::valid_protocols(&ws.protocols) {
            "protocols: at most 32 subprotocols, each a token (letters, digits and !#$%&'*+-.^_`|~)"
                .to_string()
        } else {
            return Ok(());
        };
        Err(SpecError::Invalid {
            field: "ws",
            reason: why,
        })
    }

    /// What is wrong with `ws`'s messages used in turn, if anything.
    pub(super) fn ws_messages(ws: &crate::WsLoad) -> Option<String> {
        if ws.messages.is_empty() {
            return None;
        }
        let stamp = if ws.stamp {
            stampede_wire::stamp::LEN
        } else {
            0
        };
        let total: usize = ws.messages.iter().map(|m| m.len()).sum();
        let at = |i: usize| format!("messages[{i}]");
        Some(if ws.ping {
            "messages: a ping carries the run's one message; messages used in turn are data messages".to_string()
        } else if ws.messages.len() > crate::WsLoad::MAX_MESSAGES {
            format!(
                "messages: {} of them; at most {} are used in turn",
                ws.messages.len(),
                crate::WsLoad::MAX_MESSAGES
            )
        } else if total > crate::WsLoad::MAX_MESSAGES_BYTES {
            format!(
                "messages: {total} bytes together; at most {} MiB",
                crate::WsLoad::MAX_MESSAGES_BYTES >> 20
            )
        } else if let Some(i) =
            (ws.messages.iter()).position(|m| m.len() + stamp > crate::WsLoad::MAX_SEND)
        {
            format!(
                "{}: {} bytes (with its stamp, if stamped) is more than {} MiB",
                at(i),
                ws.messages[i].len(),
                crate::WsLoad::MAX_SEND >> 20
            )
        } else if let Some(i) =
            (ws.messages.iter()).position(|m| !ws.binary && std::str::from_utf8(m).is_err())
        {
            format!(
                "{}: a text message must be UTF-8 (send them as binary)",
                at(i)
            )
        } else {
            return None;
        })
    }

    /// Request streams sent message by message: gRPC calls of the run's one request
    /// on a pool of connections, paced within bounds, whose body (unless each call
    /// makes its own) is whole length-prefixed messages.
    pub(super) fn check_stream_send(&self, send: &crate::StreamSend) -> Result<(), SpecError> {
        let span = |d: Duration| !d.is_zero() && d <= crate::StreamSend::MAX_SPAN;
        let why = if self.load.streams.stream != Some(crate::StreamMode::Grpc) {
            "request streams are sent message by message in gRPC calls only".to_string()
        } else if self.load.shape.has_sessions() {
            "paced request streams go on a pool of connections, not sessions".to_string()
        } else if !self.load.variety.is_empty()
            || !self.load.script.is_empty()
            || self.load.walk.is_some()
        {
            "a paced stream sends the run's one call; a list of requests, steps or a walk does not apply".to_string()
        } else if !span(send.interval) {
            format!(
                "interval_us {}: from 1 µs to an hour",
                send.interval.as_micros()
            )
        } else if send.duration().is_some_and(|d| !span(d)) {
            "duration_us: from 1 µs to an hour".to_string()
        } else if send
            .count
            .is_some_and(|n| n == 0 || n > crate::StreamSend::MAX_COUNT)
        {
            format!("count: from 1 to {} messages", crate::StreamSend::MAX_COUNT)
        } else if self.calls.is_none() && !whole_messages(&self.load.request.bytes) {
            "the request's body must be one or more whole gRPC messages (each length-prefixed)"
                .to_string()
        } else {
            return Ok(());
        };
        Err(SpecError::Invalid {
            field: "send",
            reason: why,
        })
    }
}

/// Whether the body of the HTTP/1 request `bytes` is one or more whole gRPC
/// messages.
fn whole_messages(bytes: &[u8]) -> bool {
    let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") else {
        return false;
    };
    let mut body = &bytes[end + 4..];
    if body.is_empty() {
        return false;
    }
    while !body.is_empty() {
        match stampede_wire::grpc::framed_len(body) {
            Some(n) => body = &body[n..],
            None => return false,
        }
    }
    true
}

/// Whether the head of the HTTP/1 request `bytes` has a Content-Length field.
fn has_content_length(bytes: &[u8]) -> bool {
    let head = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(bytes, |end| &bytes[..end]);
    head.split(|&b| b == b'\n')
        .skip(1)
        .any(|line| line.len() > 15 && line[..15].eq_ignore_ascii_case(b"content-length:"))
}
