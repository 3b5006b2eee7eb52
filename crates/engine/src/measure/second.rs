//! One finished second of one worker, as the recorder hands it over: its counts, its
//! latency histograms (serialised), and the highest levels seen. The live view merges
//! them as they come; the run's result merges them at the end.

/// One finished second of one worker. Its histogram is kept serialised (sparse V2,
/// typically a few hundred bytes) so that memory does not grow with the run's length.
#[derive(Debug, Clone)]
pub(crate) struct RawInterval {
    pub t: u32,
    pub completed: u64,
    pub failed: u64,
    pub bytes_read: u64,
    /// Events of watched streams that arrived in the second.
    pub events: u64,
    pub hist: Vec<u8>,
    pub hist_uncorrected: Vec<u8>,
    pub gauges: Gauges,
    /// What only a live watcher reads; `None` in the seconds a result keeps.
    pub extra: Option<Box<LiveExtra>>,
}

/// A watched second's breakdown for live outputs (metrics): responses by status,
/// failures by kind, and the send lag's histogram (serialised), each counting only
/// the second. Worked out when the second is filed, from the worker's running totals,
/// so the requests themselves pay nothing for it.
#[derive(Debug, Clone, Default)]
pub(crate) struct LiveExtra {
    /// (status, responses) for each status seen in the second.
    pub statuses: Vec<(u16, u64)>,
    /// (kind's index, failures) for each kind seen in the second.
    pub errors: Vec<(usize, u64)>,
    /// The second's send lags, µs, as a V2 histogram; empty when there were none.
    pub send_lag: Vec<u8>,
    /// For a run of several requests (a journey's steps, a targets file), each one
    /// answered or failed in the second.
    pub targets: Vec<TargetDelta>,
}

/// One request's figures in one watched second.
#[derive(Debug, Clone, Default)]
pub(crate) struct TargetDelta {
    /// Its slot in the run's figures per target.
    pub slot: u32,
    pub completed: u64,
    pub failed: u64,
    /// Its latencies in the second, µs, as a V2 histogram; empty when none.
    pub latency: Vec<u8>,
}

/// Levels that go up and down during a run: each interval keeps the highest seen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Gauges {
    /// Sockets held (connecting or open).
    pub connections: u64,
    /// Requests sent and not yet answered.
    pub in_flight: u64,
    /// Sessions in progress (session shapes).
    pub users: u64,
}

impl Gauges {
    pub(crate) fn raise(&mut self, now: Gauges) {
        self.connections = self.connections.max(now.connections);
        self.in_flight = self.in_flight.max(now.in_flight);
        self.users = self.users.max(now.users);
    }

    pub(crate) fn any(&self) -> bool {
        self.connections + self.in_flight + self.users > 0
    }
}
