//! Every check of a spec, in one place: what [`LoadSpec::validate`] refuses (each
//! refusal names the field as the user knows it and says what to do instead), and the
//! few values it settles (threads clamped to connections, a script's calls per
//! session, plain-http requests rewritten for a proxy).

use std::time::Duration;

use super::{
    LoadSpec, Shape, MAX_BATCH_BYTES, MAX_HORIZON, MAX_PIPELINE, MAX_REDIRECTS, MAX_SPEC_DURATION,
};
use crate::error::SpecError;

impl LoadSpec {
    /// Checks the spec and clamps `threads` to `connections`.
    ///
    /// Long on purpose: every check of a spec in one place, each a few lines, so that none
    /// is missed on a path.
    pub fn validate(&mut self) -> Result<(), SpecError> {
        let bad = |field, reason: &str| {
            Err(SpecError::Invalid {
                field,
                reason: reason.to_string(),
            })
        };
        if self.load.connections == 0 {
            return bad("connections", "must be at least 1");
        }
        // Every time of the spec, wherever it came from (a saved spec is JSON anyone can
        // write), within what a clock can add to the run's start.
        let long = |d: Duration| d > MAX_SPEC_DURATION;
        let times = [
            ("duration", self.load.duration),
            ("timeout", self.load.timeout),
            ("connect-timeout", Some(self.load.connect_timeout)),
            ("last-wait", self.load.last_wait),
            ("think", Some(self.load.session.think)),
        ];
        for (field, d) in times {
            if d.is_some_and(long) {
                return bad(
                    field,
                    "is longer than 31 years (1e9 s), the longest time a spec holds",
                );
            }
        }
        if self
            .load
            .script
            .iter()
            .any(|s| long(s.pause) || s.at.is_some_and(long))
        {
            return bad(
                "steps",
                "a step's pause or time is longer than 31 years (1e9 s)",
            );
        }
        if let Shape::Users(p) | Shape::Paced(p) = &self.load.shape {
            if long(p.duration()) {
                return bad("inject", "its steps last longer than 31 years (1e9 s)");
            }
        }
        if self.load.threads == 0 {
            return bad("threads", "must be at least 1");
        }
        if self.load.pipeline == 0 {
            return bad("pipeline", "must be at least 1");
        }
        if self.load.horizon > MAX_HORIZON {
            return bad(
                "send-horizon",
                "is at most 10ms: a start sent further ahead of its time is another schedule",
            );
        }
        if self.load.pipeline > MAX_PIPELINE {
            return bad(
                "pipeline",
                &format!(
                    "{} is more than {MAX_PIPELINE} requests in flight per connection",
                    self.load.pipeline
                ),
            );
        }
        if let Err(e) = self.load.socket.check() {
            return bad("socket", &e.to_string());
        }
        self.load.h2.check()?;
        self.check_http3()?;
        if let Some(w) = self.load.walk {
            if !(w.rate > 0.0 && w.rate <= 1.0) {
                return bad("walk", "its rate must be above 0 and at most 1");
            }
            if self.load.variety.is_empty() {
                return bad("walk", "a walk goes over a list of requests; give several");
            }
            if self.load.http2 && w.once {
                return bad(
                    "walk",
                    "a walk that ends the run at the list's end drives HTTP/1.1 requests; use HTTP/1.1, or let it go round",
                );
            }
        }
        if self.load.last_wait.is_some_and(|d| d.is_zero()) {
            return bad("last_wait", "must be longer than zero");
        }
        if let Some(proxy) = &self.proxy {
            if matches!(self.target.address, crate::spec::target::Address::Unix(_)) {
                return bad(
                    "proxy",
                    "a Unix socket is reached directly, not through a proxy",
                );
            }
            if !self.target.tls {
                if self.load.http2 {
                    return bad(
                        "proxy",
                        "HTTP/2 without TLS (h2c) cannot go through an HTTP proxy; use https:// (tunnelled with CONNECT) or HTTP/1.1",
                    );
                }
                if self.hooks.as_ref().is_some_and(|h| !h.0.observes_only()) {
                    return bad(
                        "proxy",
                        "a script's requests cannot be forwarded by a proxy over plain http; use an https:// target (tunnelled with CONNECT)",
                    );
                }
                // Plain http: each request names its URL and carries the credentials.
                let steps = self.load.script.iter_mut().map(|s| &mut s.request);
                for r in std::iter::once(&mut self.load.request)
                    .chain(steps)
                    .chain(self.load.variety.iter_mut())
                {
                    match proxy.forward_form(&self.target, &r.bytes) {
                        Ok(b) => r.bytes = b,
                        Err(e) => {
                            return bad("proxy", &format!("a request cannot be forwarded: {e}"))
                        }
                    }
                }
            }
        }
        if let Some(first) = self.load.variety.first() {
            self.load.request = first.clone();
        }
        let longest = (self.load.variety.iter())
            .map(|r| r.bytes.len())
            .max()
            .unwrap_or(self.load.request.bytes.len());
        let batch = longest.saturating_mul(self.load.pipeline);
        if batch > MAX_BATCH_BYTES {
            return bad(
                "pipeline",
                &format!(
                    "{} requests of {} bytes make {} MiB to hold per batch; at most {} MiB",
                    self.load.pipeline,
                    longest,
                    batch >> 20,
                    MAX_BATCH_BYTES >> 20
                ),
            );
        }
        if self.load.pipeline > 1 && !self.load.keepalive {
            return bad("pipeline", "pipelining needs keep-alive connections");
        }
        if self.target.tls && matches!(self.target.address, crate::spec::target::Address::Unix(_)) {
            return bad("tls", "TLS over a Unix socket is not supported");
        }
        if self.load.stream == Some(crate::StreamMode::Grpc)
            && (!self.load.http2 || self.load.http3.is_some())
        {
            return bad(
                "stream",
                "gRPC calls go over HTTP/2 (h2c or TLS with ALPN h2)",
            );
        }
        if self.load.http2 && self.load.batch_latency {
            return bad(
                "batch_latency",
                "batch latency times HTTP/1.1's pipelined batches; HTTP/2 streams are timed one by one",
            );
        }
        if self.load.http2 {
            if !self.load.keepalive {
                return bad(
                    "http2",
                    "HTTP/2 connections are persistent; a new connection per request does not apply",
                );
            }
            let steps = self.load.script.iter().map(|s| &s.request);
            // A WebSocket's upgrade is made a CONNECT of its own (RFC 8441).
            let request = self.load.ws.is_none().then_some(&self.load.request);
            for r in request.into_iter().chain(steps).chain(&self.load.variety) {
                if let Err(e) =
                    crate::proto::h2::H2Request::from_http1(&r.bytes, self.target.scheme())
                {
                    return bad(
                        "http2",
                        &format!("the request cannot be sent over HTTP/2: {e}"),
                    );
                }
            }
        }
        if self.calls.is_some() {
            self.check_made_calls()?;
        }
        if let Some(send) = &self.load.send {
            self.check_stream_send(send)?;
        }
        if let Some(ws) = &self.load.ws {
            self.check_ws(ws)?;
        } else if self.load.stream == Some(crate::StreamMode::Messages) {
            return bad(
                "stream",
                "messages: each message a WebSocket server sends is an event; the target is a ws:// or wss:// URL",
            );
        } else if self.target.websocket {
            return bad("ws", "a ws:// or wss:// target needs the message to send");
        }
        let shaping = self.hooks.as_ref().is_some_and(|h| !h.0.observes_only());
        if self.hooks.is_some() && self.load.http2 {
            return bad("hooks", "scripts drive HTTP/1.1 connections only");
        }
        if shaping {
            if self.load.shape.has_sessions() {
                return bad(
                    "hooks",
                    "scripts drive a pool of connections (closed or fixed-rate load), not sessions",
                );
            }
            if self.load.pipeline > 1
                && (!matches!(self.load.shape, Shape::Closed) || self.load.requests.is_some())
            {
                return bad(
                    "hooks",
                    "a script whose request() returns several pipelined requests runs closed-loop for a duration: each write must carry them all",
                );
            }
        }
        if !self.load.variety.is_empty() {
            if shaping {
                return bad(
                    "variety",
                    "a script builds its own requests; a list of requests does not apply",
                );
            }
            if self.load.shape.has_sessions()
                && (self.load.walk.is_none() || !self.load.script.is_empty())
            {
                return bad(
                    "variety",
                    "sessions take their requests from steps; a list of requests used in turn is for a pool of connections (or a walk over the run's calls)",
                );
            }
            if self.load.session.cookies && self.load.shape.has_sessions() {
                return bad(
                    "variety",
                    "session cookies are added to a session's own requests; a list of requests walked over the run's calls does not carry them",
                );
            }
            let heads = self.load.variety.iter().filter(|r| r.is_head()).count();
            let piped = self.load.pipeline > 1
                || (self.load.shape.has_sessions() && self.load.session.burst > 1);
            if piped && heads > 0 && heads < self.load.variety.len() {
                return bad(
                    "variety",
                    "HEAD requests mixed with others cannot be pipelined over HTTP/1.1 (a HEAD response has no body to delimit); use a pipeline of 1",
                );
            }
        }
        if self.load.redirects > 0 {
            let why = if self.load.redirects > MAX_REDIRECTS {
                Some("follow at most 100 redirects per request")
            } else if self.load.http2 {
                Some("redirects are followed over HTTP/1.1; use HTTP/1.1")
            } else if self.load.shape.has_sessions() {
                Some("redirects are followed by a pool of connections (closed or fixed-rate load), not sessions")
            } else if self.load.pipeline > 1 {
                Some("a redirect is followed before the connection's next request; use a pipeline of 1")
            } else if shaping {
                Some("a script builds its own requests; its response() sees the 3xx and may follow it")
            } else if self.proxy.is_some() && !self.target.tls {
                Some("requests forwarded by a plain-http proxy are not followed; use an https:// target (tunnelled with CONNECT)")
            } else {
                None
            };
            if let Some(why) = why {
                return bad("redirects", why);
            }
        }
        if self.target.tls && self.tls.is_none() {
            return bad(
                "tls",
                "an https:// target needs TLS client settings (stampede_tls::client_config)",
            );
        }
        match &self.load.shape {
            Shape::Rate { rate, .. } if !(rate.is_finite() && *rate > 0.0) => {
                return bad("rate", "must be a positive number of requests per second");
            }
            Shape::Rate { rate, .. } if *rate > crate::spec::inject::MAX_RATE => {
                return bad(
                    "rate",
                    &format!(
                        "{rate} requests/s is beyond what one load generator can send (at most {:e}); split the load over machines",
                        crate::spec::inject::MAX_RATE
                    ),
                );
            }
            Shape::Sessions { count: 0, .. } => return bad("sessions", "must be at least 1"),
            Shape::Users(p) if p.duration().is_zero() && p.is_closed() => {
                return bad("inject", "a closed profile needs a duration");
            }
            Shape::Paced(p) if p.is_closed() => {
                return bad(
                    "paced",
                    "requests arrive at its rates; steps of concurrent users have no place in it",
                );
            }
            Shape::Paced(p) if p.duration().is_zero() => {
                return bad("paced", "its steps need a duration");
            }
            _ => {}
        }
        if !self.load.script.is_empty() {
            if !self.load.shape.has_sessions() {
                return bad(
                    "steps",
                    "a list of requests needs a session shape (injection steps or sessions)",
                );
            }
            // Calls per session: with several session scripts, their mean.
            let scripts = 1 + self.load.script[1..]
                .iter()
                .filter(|s| s.new_session)
                .count();
            self.load.session.calls =
                (self.load.script.len() as f64 / scripts as f64).round() as u32;
            self.load.session.burst = 1;
            self.load.session.think = Duration::ZERO;
            if self.load.script[0].follows {
                return bad("steps", "the first step cannot follow another in a burst");
            }
            if self.load.script.iter().any(|s| s.at.is_some()) {
                self.check_timed()?;
            }
            for w in self.load.script.windows(2) {
                if w[1].follows && w[1].new_session {
                    return bad(
                        "steps",
                        "a step that begins a session cannot follow another in a burst",
                    );
                }
                if w[1].follows && w[0].request.is_head() != w[1].request.is_head() {
                    return bad(
                        "steps",
                        "a burst cannot mix HEAD requests with others; give the HEAD request a line of its own",
                    );
                }
            }
        }
        let s = &self.load.session;
        if self.load.http2
            && (s.retry || s.max_piped > 0 || self.load.script.iter().any(|s| s.follows))
        {
            return bad(
                "http2",
                "bursts of a session's steps, retried calls and --max-piped-calls pipeline HTTP/1.1; use HTTP/1.1",
            );
        }
        if self.load.http2 && s.cookies {
            return bad(
                "http2",
                "session cookies are carried in HTTP/1.1 requests; use HTTP/1.1",
            );
        }
        if s.retry && s.fail_status.is_none() {
            return bad(
                "retry",
                "retrying needs a failure status: the calls retried are those answered with it",
            );
        }
        if (s.fail_status.is_some() || s.retry || s.max_piped > 0 || s.cookies)
            && !self.load.shape.has_sessions()
        {
            return bad(
                "session",
                "a failure status, retries, a cap on pipelined calls and session cookies apply to sessions",
            );
        }
        if self.load.session.calls == 0 || self.load.session.burst == 0 {
            return bad(
                "calls",
                "sessions need at least one call and a burst of at least 1",
            );
        }
        if let Shape::Sessions { count, .. } = self.load.shape {
            if self.segment.share(count) == 0 {
                return bad(
                    "segment",
                    &format!(
                        "segment {} gets none of the run's {count} session(s); use fewer segments",
                        self.segment
                    ),
                );
            }
        }
        if self.load.shape.has_sessions() {
            // Sessions end the run by themselves; their connections are their own.
            self.load.threads = self.load.threads.max(1);
            if let Shape::Sessions { period: None, .. } = self.load.shape {
                self.load.threads = 1;
            }
            return Ok(());
        }
        // A paced run ends with its steps.
        let endless = !matches!(self.load.shape, Shape::Paced(_));
        if endless && self.load.requests.is_none() && self.load.duration.is_none() {
            return bad("requests", "give a request count or a duration");
        }
        if self.load.requests == Some(0) {
            return bad("requests", "must be at least 1");
        }
        if self.load.duration.is_some_and(|d| d.is_zero()) {
            return bad("duration", "must be longer than zero");
        }
        if self.load.timeout.is_some_and(|d| d.is_zero()) {
            return bad("timeout", "must be longer than zero");
        }
        if let Some(n) = self.load.requests {
            // No point in more connections than requests.
            self.load.connections = self.load.connections.min(n as usize);
        }
        let seg = self.segment;
        let mine = seg.share(self.load.connections as u64) as usize;
        if mine == 0 {
            return bad(
                "segment",
                &format!(
                    "segment {seg} gets none of the run's {} connection(s); use at least {} connections (one per segment)",
                    self.load.connections,
                    seg.n()
                ),
            );
        }
        self.load.threads = self.load.threads.min(mine);
        Ok(())
    }

    /// A timed script (see [`Step::at`]): every step has an offset, each session's
    /// offsets never go back, and nothing is sent in bursts, after pauses or again.
    fn check_timed(&self) -> Result<(), SpecError> {
        let bad = |reason: String| {
            Err(SpecError::Invalid {
                field: "steps",
                reason,
            })
        };
        let mut last = Duration::ZERO;
        for (i, st) in self.load.script.iter().enumerate() {
            let Some(at) = st.at else {
                return bad(format!(
                    "step {} has no offset while others have one; give every step an offset, or none",
                    i + 1
                ));
            };
            if st.follows || !st.pause.is_zero() {
                return bad(format!(
                    "step {} has an offset and a burst or pause; a timed step is sent at its offset alone",
                    i + 1
                ));
            }
            if st.new_session {
                last = Duration::ZERO;
            }
            if at < last {
                return bad(format!(
                    "step {} is meant {:?} after the session began, before the step above it ({:?}); steps are sent in order",
                    i + 1,
                    at,
                    last
                ));
            }
            last = at;
        }
        if self.load.session.retry {
            return bad("timed steps are not sent again; leave retries out".into());
        }
        Ok(())
    }
}

impl LoadSpec {
    /// HTTP/3: QUIC to an https target's host and port, directly, with streams as
    /// HTTP/2 has them — what HTTP/2 refuses it refuses too, and what only HTTP/1.1
    /// connections do (scripts, redirects, bursts, cookies) it leaves to them.
    fn check_http3(&self) -> Result<(), SpecError> {
        let Some(h3) = &self.load.http3 else {
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
        } else if self.load.http2 {
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
        } else if self.hooks.is_some() {
            Some("scripts drive HTTP/1.1 connections only")
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
    fn check_made_calls(&self) -> Result<(), SpecError> {
        if let Some(ws) = &self.load.ws {
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
        let why = if !self.load.http2 || self.load.http3.is_some() {
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
    fn check_ws(&self, ws: &crate::WsLoad) -> Result<(), SpecError> {
        let why = if !self.target.websocket {
            "WebSocket messages go to a ws:// or wss:// URL".to_string()
        } else if self.load.http3.is_some() {
            "WebSocket connections are upgraded HTTP/1.1 ones, or HTTP/2 streams: not HTTP/3"
                .to_string()
        } else if self.load.http2 && self.proxy.is_some() {
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
        } else if self.load.send.is_some()
            || self
                .load
                .stream
                .is_some_and(|m| m != crate::StreamMode::Messages)
        {
            "WebSocket messages are timed as round trips, or (stream = messages) as a push stream; no other stream timing applies".to_string()
        } else if self.load.stream.is_some() && ws.ping {
            "a push stream is timed by the server's messages; pings are round trips of their own"
                .to_string()
        } else if self.load.stream.is_some() && self.load.pipeline > 1 {
            "a connection holds one push stream at a time: not pipelined".to_string()
        } else if self.load.redirects > 0 {
            "a WebSocket upgrade is not redirected".to_string()
        } else if !self.load.request.bytes.starts_with(b"GET ")
            || !self.load.request.bytes.ends_with(b"\r\n\r\n")
        {
            "the upgrade is a GET without a body (the message is sent after it)".to_string()
        } else if ws.stamp && ws.ping {
            "stamp: a ping is a round trip of its own; stamps go on data messages".to_string()
        } else if ws.stamp && self.load.stream.is_some() && ws.message.is_empty() {
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
        } else if ws.expecting() && self.load.stream.is_some() {
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
    fn ws_messages(ws: &crate::WsLoad) -> Option<String> {
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
    fn check_stream_send(&self, send: &crate::StreamSend) -> Result<(), SpecError> {
        let span = |d: Duration| !d.is_zero() && d <= crate::StreamSend::MAX_SPAN;
        let why = if self.load.stream != Some(crate::StreamMode::Grpc) {
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
