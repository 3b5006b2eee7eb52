//! Every check of a spec, in one place: what [`LoadSpec::validate`] refuses (each
//! refusal names the field as the user knows it and says what to do instead), and the
//! few values it settles (threads clamped to connections, a script's calls per
//! session, plain-http requests rewritten for a proxy). The checks particular to
//! HTTP/3, calls made one by one, WebSocket runs and streamed bodies, which
//! [`LoadSpec::validate`] calls in turn, are in `protocols`.

use std::time::Duration;

use super::{
    LoadSpec, Shape, MAX_BATCH_BYTES, MAX_HORIZON, MAX_PIPELINE, MAX_REDIRECTS, MAX_SPEC_DURATION,
};
use crate::error::SpecError;

mod protocols;

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
            ("drain", self.load.drain),
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
        self.load.protocol.h2.check()?;
        self.check_http3()?;
        if let Some(w) = self.load.walk {
            if !(w.rate > 0.0 && w.rate <= 1.0) {
                return bad("walk", "its rate must be above 0 and at most 1");
            }
            if self.load.variety.is_empty() {
                return bad("walk", "a walk goes over a list of requests; give several");
            }
            if self.load.protocol.http2 && w.once {
                return bad(
                    "walk",
                    "a walk that ends the run at the list's end drives HTTP/1.1 requests; use HTTP/1.1, or let it go round",
                );
            }
        }
        if self.load.last_wait.is_some_and(|d| d.is_zero()) {
            return bad("last_wait", "must be longer than zero");
        }
        if self.load.drain.is_some() && self.load.duration.is_none() {
            return bad(
                "drain",
                "waits for the requests in flight once the duration is over; give a duration",
            );
        }
        if let Some(proxy) = &self.proxy {
            if matches!(self.target.address, crate::spec::target::Address::Unix(_)) {
                return bad(
                    "proxy",
                    "a Unix socket is reached directly, not through a proxy",
                );
            }
            if !self.target.tls {
                if self.load.protocol.http2 {
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
        if self.load.streams.stream == Some(crate::StreamMode::Grpc)
            && (!self.load.protocol.http2 || self.load.protocol.http3.is_some())
        {
            return bad(
                "stream",
                "gRPC calls go over HTTP/2 (h2c or TLS with ALPN h2)",
            );
        }
        if self.load.protocol.http2 && self.load.batch_latency {
            return bad(
                "batch_latency",
                "batch latency times HTTP/1.1's pipelined batches; HTTP/2 streams are timed one by one",
            );
        }
        if self.load.protocol.http2 {
            if !self.load.keepalive {
                return bad(
                    "http2",
                    "HTTP/2 connections are persistent; a new connection per request does not apply",
                );
            }
            let steps = self.load.script.iter().map(|s| &s.request);
            // A WebSocket's upgrade is made a CONNECT of its own (RFC 8441).
            let request = self
                .load
                .protocol
                .ws
                .is_none()
                .then_some(&self.load.request);
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
        if let Some(send) = &self.load.streams.send {
            self.check_stream_send(send)?;
        }
        if let Some(ws) = &self.load.protocol.ws {
            self.check_ws(ws)?;
        } else if self.load.streams.stream == Some(crate::StreamMode::Messages) {
            return bad(
                "stream",
                "messages: each message a WebSocket server sends is an event; the target is a ws:// or wss:// URL",
            );
        } else if self.target.websocket {
            return bad("ws", "a ws:// or wss:// target needs the message to send");
        }
        let shaping = self.hooks.as_ref().is_some_and(|h| !h.0.observes_only());
        if self.hooks.is_some() && self.load.protocol.http2 {
            if let Some(why) = self.streams_for_hooks() {
                return bad("hooks", why);
            }
        }
        if shaping {
            let users = self.hooks.as_ref().is_some_and(|h| h.0.any_protocol());
            if self.load.shape.has_sessions() && !users {
                return bad(
                    "hooks",
                    "scripts drive a pool of connections (closed or fixed-rate load), not sessions",
                );
            }
            if self.load.shape.has_sessions() {
                let s = &self.load.session;
                if !self.load.script.is_empty() {
                    return bad(
                        "hooks",
                        "a script's users send what it builds, not a session's steps",
                    );
                }
                if s.burst > 1 || s.max_piped > 0 {
                    return bad(
                        "hooks",
                        "a script's user sends one request at a time: no bursts",
                    );
                }
                if s.cookies || s.fail_status.is_some() || s.retry {
                    return bad(
                        "hooks",
                        "a script's user keeps its own cookies and judges its own answers: no session cookie, failure status or retry",
                    );
                }
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
            } else if self.load.protocol.http2 {
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
        if self.load.protocol.http2
            && (s.retry || s.max_piped > 0 || self.load.script.iter().any(|s| s.follows))
        {
            return bad(
                "http2",
                "bursts of a session's steps, retried calls and --max-piped-calls pipeline HTTP/1.1; use HTTP/1.1",
            );
        }
        if self.load.protocol.http2 && s.cookies {
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
    /// Why the spec's script cannot drive HTTP/2 or HTTP/3 connections, if it cannot:
    /// only a script whose requests may go as streams does, one request at a time on
    /// a connection.
    pub(super) fn streams_for_hooks(&self) -> Option<&'static str> {
        let h = self.hooks.as_ref()?;
        if !h.0.any_protocol() {
            Some("scripts drive HTTP/1.1 connections only")
        } else if self.load.pipeline > 1 {
            Some("a script's requests go one at a time on a connection: one stream each (--streams 1)")
        } else {
            None
        }
    }

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
