//! Requests made call by call: a run whose every call sends a body (and header
//! fields) of its own, rendered from templates that change from call to call — ghz's
//! call data (`{{.RequestNumber}}`, `{{.UUID}}`, …) — over HTTP/2, or a WebSocket
//! run's every message.
//!
//! A [`LoadSpec`](crate::LoadSpec) may carry [`MadeCalls`]: each worker asks its
//! [`CallMaker`] for every call's body and extra fields as it opens the call's stream
//! (or queues the call's message), into buffers of its own reused call to call. The
//! spec's request gives everything else (method, path, the fields every call shares),
//! sent as literals on any stream; a WebSocket message is the body, and what its
//! answer must hold ([`crate::WsLoad::expect`]), when the run expects one, the fields. A run without it sends the request prepared once, and pays nothing here.
//! A maker that cannot make a call says so by returning false; the run stops, and the
//! maker keeps why for whoever started it.

use std::fmt;
use std::sync::Arc;

/// What a call is, for the maker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Call {
    /// The call's number in the run, from 0 (each number made once).
    pub number: u64,
    /// The worker thread making it (0-based).
    pub worker: usize,
    /// The worker's connection slot it goes out on.
    pub conn: usize,
}

/// Makes each call's body and header fields.
pub trait CallMaker: Send + Sync {
    /// Writes `call`'s body into `body` and the header fields of its own into `fields`
    /// as HPACK field lines (literals without indexing, sent after the request's);
    /// both come empty. False: the call cannot be made, and the run stops.
    fn make(&self, call: Call, body: &mut Vec<u8>, fields: &mut Vec<u8>) -> bool;
    /// Why a call could not be made, once one could not.
    fn failure(&self) -> Option<String> {
        None
    }
}

/// A run's call maker, shared by its spec's clones.
#[derive(Clone)]
pub struct MadeCalls(pub Arc<dyn CallMaker>);

impl fmt::Debug for MadeCalls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MadeCalls")
    }
}

/// One worker's maker and the buffers it makes calls in.
pub(crate) struct Maker {
    pub(crate) calls: MadeCalls,
    pub(crate) worker: usize,
    pub(crate) body: Vec<u8>,
    pub(crate) fields: Vec<u8>,
}

impl Maker {
    pub(crate) fn new(calls: &MadeCalls, worker: usize) -> Maker {
        Maker {
            calls: calls.clone(),
            worker,
            body: Vec::new(),
            fields: Vec::new(),
        }
    }

    /// Makes call `number` on slot `conn` into the buffers; false when the maker
    /// could not.
    pub(crate) fn make(&mut self, number: u64, conn: usize) -> bool {
        self.body.clear();
        self.fields.clear();
        let call = Call {
            number,
            worker: self.worker,
            conn,
        };
        self.calls.0.make(call, &mut self.body, &mut self.fields)
    }
}
