//! What to run: the validated, plain description of a load test.
//!
//! A [`LoadSpec`] is what every front end (the `ab`, `wrk` and native dialects, plans)
//! produces and the only thing the engine reads. It holds no clap or terminal types.

use std::time::Duration;

use crate::error::SpecError;
use crate::request::Request;
use crate::target::Target;

/// A complete description of a closed-model HTTP/1.1 load test.
#[derive(Debug, Clone)]
pub struct LoadSpec {
    /// Where to send the load.
    pub target: Target,
    /// The request to send, encoded.
    pub request: Request,
    /// Concurrent connections.
    pub connections: usize,
    /// Worker threads (each owns `connections / threads` connections).
    pub threads: usize,
    /// Stop after this many requests have been started and finished.
    pub requests: Option<u64>,
    /// Stop sending after this long; requests still in flight are abandoned.
    pub duration: Option<Duration>,
    /// Reuse connections (otherwise one connection per request).
    pub keepalive: bool,
    /// Requests written back to back on a connection before waiting for responses.
    pub pipeline: usize,
    /// A request without a complete response after this long fails as a timeout.
    pub timeout: Option<Duration>,
    /// A connection not established after this long fails as a connect timeout.
    pub connect_timeout: Duration,
    /// Count responses whose body length differs from the first one (ab's `Length`).
    pub check_length: bool,
    /// Keep one record per request (for ab's `-g`); costs 32 bytes per request.
    pub record_requests: bool,
}

impl LoadSpec {
    /// A spec with one connection, one thread, keep-alive, no pipelining and 30 s timeouts;
    /// set `requests` or `duration` before running.
    pub fn new(target: Target, request: Request) -> LoadSpec {
        LoadSpec {
            target,
            request,
            connections: 1,
            threads: 1,
            requests: None,
            duration: None,
            keepalive: true,
            pipeline: 1,
            timeout: Some(Duration::from_secs(30)),
            connect_timeout: Duration::from_secs(10),
            check_length: false,
            record_requests: false,
        }
    }

    /// Checks the spec and clamps `threads` to `connections`.
    pub fn validate(&mut self) -> Result<(), SpecError> {
        let bad = |field, reason: &str| {
            Err(SpecError::Invalid {
                field,
                reason: reason.to_string(),
            })
        };
        if self.connections == 0 {
            return bad("connections", "must be at least 1");
        }
        if self.threads == 0 {
            return bad("threads", "must be at least 1");
        }
        if self.pipeline == 0 {
            return bad("pipeline", "must be at least 1");
        }
        if self.pipeline > 1 && !self.keepalive {
            return bad("pipeline", "pipelining needs keep-alive connections");
        }
        if self.requests.is_none() && self.duration.is_none() {
            return bad("requests", "give a request count or a duration");
        }
        if self.requests == Some(0) {
            return bad("requests", "must be at least 1");
        }
        if self.duration.is_some_and(|d| d.is_zero()) {
            return bad("duration", "must be longer than zero");
        }
        if self.timeout.is_some_and(|d| d.is_zero()) {
            return bad("timeout", "must be longer than zero");
        }
        if let Some(n) = self.requests {
            // No point in more connections than requests.
            self.connections = self.connections.min(n as usize);
        }
        self.threads = self.threads.min(self.connections);
        Ok(())
    }
}
