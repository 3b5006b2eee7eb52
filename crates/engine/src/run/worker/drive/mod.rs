//! The drivers over a worker's connections: what the run's shape does with them.
//!
//! A worker's connections are the same machinery whatever the shape; what differs
//! is who decides what they send. A pool ([`Pool`]) holds its connections for the
//! run and fills the free ones from the schedule; sessions ([`Sessions`]) take a slot
//! per start and follow each session's calls, think times and steps. Both are plain
//! state with no socket and no clock of their own, each tested on its own; the worker
//! holds one of them as its [`Drive`] and puts its answers on connections.

mod pool;
mod sessions;

pub(crate) use pool::Pool;
pub(crate) use sessions::{After, Calls, Failure, Sessions};

use std::time::Instant;

/// The driver a worker runs: its shape's kind.
pub(crate) enum Drive<'a> {
    Pool(Pool),
    Sessions(Sessions<'a>),
}

impl Drive<'_> {
    /// Sessions in progress (none for a pool: its users are its connections).
    #[inline]
    pub fn active(&self) -> usize {
        match self {
            Drive::Pool(_) => 0,
            Drive::Sessions(s) => s.active(),
        }
    }

    /// When the driver next has something due of its own: a delay ending (pool) or
    /// a timed step (sessions).
    #[inline]
    pub fn next_due(&self) -> Option<Instant> {
        match self {
            Drive::Pool(p) => p.next_release(),
            Drive::Sessions(s) => s.next_due(),
        }
    }

    /// Requests given up with sessions a failure status ended.
    pub fn given_up(&self) -> u64 {
        match self {
            Drive::Pool(_) => 0,
            Drive::Sessions(s) => s.given_up(),
        }
    }

    /// Whether a session runs on `slot`.
    #[inline]
    pub fn session_on(&self, slot: usize) -> bool {
        matches!(self, Drive::Sessions(s) if s.runs_on(slot))
    }

    /// Timed session steps: some step may wait for room on a connection.
    #[inline]
    pub fn timed(&self) -> bool {
        matches!(self, Drive::Sessions(s) if s.timed())
    }

    /// Free pool connections (0 for sessions).
    #[inline]
    pub fn free_count(&self) -> usize {
        match self {
            Drive::Pool(p) => p.free_count(),
            Drive::Sessions(_) => 0,
        }
    }
}
