//! The counters a worker keeps beside its histograms, grouped by what counts them:
//! the run's own tally (requests, bytes, connections, the pool's misses), sessions, TLS, each
//! protocol's figures (HTTP/2's header compression, gRPC's statuses, streams' events
//! and tokens; QUIC's and WebSocket's live in the result's own types) and the
//! per-request records. Each group adds another worker's field by field, so a protocol
//! that brings figures of its own brings one type here and one line to the merge.

use crate::measure::recorder::RequestRecord;
use crate::result::{add_grpc_message, GrpcMessage};

/// What every run counts, whatever it speaks.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tally {
    pub started: u64,
    pub completed: u64,
    /// Requests sent on a connection that had already carried one.
    pub keepalive: u64,
    /// Responses whose body length differed from the first's (ab's "Length").
    pub length_mismatch: u64,
    pub bytes_read: u64,
    pub bytes_body: u64,
    pub bytes_written: u64,
    pub connections_opened: u64,
    /// Times an arrival was due while every connection of the pool was busy.
    pub starved: u64,
    /// Arrivals never sent, counted in the corrected latency as censored values.
    pub censored: u64,
}

impl Tally {
    pub fn add(&mut self, o: &Tally) {
        self.started += o.started;
        self.completed += o.completed;
        self.keepalive += o.keepalive;
        self.length_mismatch += o.length_mismatch;
        self.bytes_read += o.bytes_read;
        self.bytes_body += o.bytes_body;
        self.bytes_written += o.bytes_written;
        self.connections_opened += o.connections_opened;
        self.starved += o.starved;
        self.censored += o.censored;
    }
}

/// Sessions (users) started, how they ended, and the most active at once.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sessions {
    pub started: u64,
    pub completed: u64,
    pub failed: u64,
    /// Each worker's peak; their sum after a merge.
    pub max_concurrent: u64,
}

impl Sessions {
    pub fn add(&mut self, o: &Sessions) {
        self.started += o.started;
        self.completed += o.completed;
        self.failed += o.failed;
        // Workers peak at different moments; their sum bounds the true peak from above.
        self.max_concurrent += o.max_concurrent;
    }
}

/// TLS: handshakes that resumed a session, and connections where HTTP/2 was offered
/// and ALPN chose HTTP/1.1.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tls {
    pub resumed: u64,
    pub h1_fallback: u64,
}

impl Tls {
    pub fn add(&mut self, o: &Tls) {
        self.resumed += o.resumed;
        self.h1_fallback += o.h1_fallback;
    }
}

/// HTTP/2's response headers: their compressed and decoded bytes.
#[derive(Debug, Clone, Default)]
pub(crate) struct Headers {
    pub compressed: u64,
    pub decoded: u64,
}

impl Headers {
    pub fn add(&mut self, o: &Headers) {
        self.compressed += o.compressed;
        self.decoded += o.decoded;
    }
}

/// Runs that time streams (SSE, OpenAI streams, stamped messages).
#[derive(Debug, Clone, Default)]
pub(crate) struct Streams {
    /// Events received.
    pub events: u64,
    /// Streams that sent `[DONE]`.
    pub done: u64,
    /// OpenAI streams: completion tokens of completed responses.
    pub tokens: u64,
    /// OpenAI streams: completions that met the run's service levels.
    pub good: u64,
    /// OpenAI streams: completions whose usage counted fewer tokens than the events
    /// that carried text.
    pub usage_short: u64,
    /// Stamped messages whose stamp said they were sent after they arrived.
    pub early: u64,
}

impl Streams {
    pub fn add(&mut self, o: &Streams) {
        self.events += o.events;
        self.done += o.done;
        self.tokens += o.tokens;
        self.good += o.good;
        self.usage_short += o.usage_short;
        self.early += o.early;
    }
}

/// gRPC: calls answered by `grpc-status` (0 to 16), and the failed ones by status
/// and `grpc-message` (bounded; see [`crate::result::MAX_GRPC_MESSAGES`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct Grpc {
    pub statuses: [u64; 17],
    pub messages: Vec<GrpcMessage>,
}

impl Grpc {
    pub fn add(&mut self, o: &Grpc) {
        for (a, b) in self.statuses.iter_mut().zip(o.statuses) {
            *a += b;
        }
        for m in &o.messages {
            add_grpc_message(&mut self.messages, &m.status, &m.message, m.count);
        }
    }
}

/// The per-request records of the outputs that list every request, when asked for:
/// at most `at_most` kept by this worker, the rest counted.
#[derive(Debug, Clone, Default)]
pub(crate) struct Records {
    pub kept: Option<Vec<RequestRecord>>,
    pub at_most: usize,
    pub dropped: u64,
}

impl Records {
    /// Records of up to `at_most` requests; none are kept when it is 0.
    pub fn new(at_most: usize) -> Records {
        Records {
            kept: (at_most > 0).then(Vec::new),
            at_most,
            dropped: 0,
        }
    }

    pub fn add(&mut self, o: Records) {
        if let (Some(a), Some(b)) = (&mut self.kept, o.kept) {
            a.extend(b);
        }
        self.dropped += o.dropped;
    }
}
