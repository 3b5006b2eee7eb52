//! How long connections were held back by congestion control: QUIC's own
//! controller (Cubic, quinn-proto's default) wrapped so that it also keeps the time
//! during which the bytes in flight fill its window — the sender then has to wait
//! for acknowledgements before it may send more, whatever the application has ready.
//!
//! The bytes in flight are the controller's view: set exactly at the end of each
//! acknowledgement's processing, raised by each send, lowered by what a congestion
//! event declared lost. A window counts as full when less than one datagram of it is
//! left. The time is added to a [`LimitedTime`] shared by the connections made with
//! the configuration, so a run reads one total (connection-time, as the sum of each
//! connection's).

use std::any::Any;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use quinn_proto::congestion::{Controller, ControllerFactory, ControllerMetrics, CubicConfig};
use quinn_proto::RttEstimator;

/// Congestion-limited time of the connections that share it, in µs.
#[derive(Debug, Default)]
pub struct LimitedTime(AtomicU64);

impl LimitedTime {
    /// The total so far, µs.
    pub fn micros(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    fn add(&self, from: Instant, to: Instant) {
        let us = to.saturating_duration_since(from).as_micros() as u64;
        self.0.fetch_add(us, Ordering::Relaxed);
    }
}

/// Makes each connection's controller: the default one, watched.
pub(crate) struct Watching {
    inner: Arc<CubicConfig>,
    total: Arc<LimitedTime>,
}

impl Watching {
    pub(crate) fn new(total: Arc<LimitedTime>) -> Watching {
        Watching {
            inner: Arc::new(CubicConfig::default()),
            total,
        }
    }
}

impl ControllerFactory for Watching {
    fn build(self: Arc<Self>, now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        Box::new(Watched {
            inner: self.inner.clone().build(now, current_mtu),
            in_flight: 0,
            mtu: u64::from(current_mtu),
            since: None,
            last: now,
            total: self.total.clone(),
        })
    }
}

/// One connection's controller and the time its window was full.
struct Watched {
    inner: Box<dyn Controller>,
    in_flight: u64,
    mtu: u64,
    /// When the window last filled, while it is full.
    since: Option<Instant>,
    /// The latest time the connection gave.
    last: Instant,
    total: Arc<LimitedTime>,
}

impl Watched {
    fn check(&mut self, now: Instant) {
        self.last = self.last.max(now);
        let full = self.in_flight + self.mtu >= self.inner.window();
        match (full, self.since) {
            (true, None) => self.since = Some(now),
            (false, Some(from)) => {
                self.total.add(from, now);
                self.since = None;
            }
            _ => {}
        }
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        // Still full when the connection went: counted to the last time it knew.
        if let Some(from) = self.since {
            self.total.add(from, self.last);
        }
    }
}

impl Controller for Watched {
    fn on_sent(&mut self, now: Instant, bytes: u64, last_packet_number: u64) {
        self.inner.on_sent(now, bytes, last_packet_number);
        self.in_flight += bytes;
        self.check(now);
    }

    fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        app_limited: bool,
        rtt: &RttEstimator,
    ) {
        self.inner.on_ack(now, sent, bytes, app_limited, rtt);
    }

    fn on_end_acks(
        &mut self,
        now: Instant,
        in_flight: u64,
        app_limited: bool,
        largest_packet_num_acked: Option<u64>,
    ) {
        self.inner
            .on_end_acks(now, in_flight, app_limited, largest_packet_num_acked);
        self.in_flight = in_flight;
        self.check(now);
    }

    fn on_congestion_event(
        &mut self,
        now: Instant,
        sent: Instant,
        is_persistent_congestion: bool,
        lost_bytes: u64,
    ) {
        self.inner
            .on_congestion_event(now, sent, is_persistent_congestion, lost_bytes);
        self.in_flight = self.in_flight.saturating_sub(lost_bytes);
        self.check(now);
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        self.inner.on_mtu_update(new_mtu);
        self.mtu = u64::from(new_mtu);
    }

    fn window(&self) -> u64 {
        self.inner.window()
    }

    fn metrics(&self) -> ControllerMetrics {
        self.inner.metrics()
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(Watched {
            inner: self.inner.clone_box(),
            in_flight: self.in_flight,
            mtu: self.mtu,
            since: None,
            last: self.last,
            total: self.total.clone(),
        })
    }

    fn initial_window(&self) -> u64 {
        self.inner.initial_window()
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn time_with_the_window_full_is_counted_until_acknowledgements_free_it() {
        let total = Arc::new(LimitedTime::default());
        let t0 = Instant::now();
        let mut c = Arc::new(Watching::new(total.clone())).build(t0, 1200);
        let window = c.window();
        // Half the window in flight: not limited.
        c.on_sent(t0, window / 2, 1);
        c.on_end_acks(t0 + Duration::from_millis(1), window / 2, false, None);
        assert_eq!(total.micros(), 0);
        // Filled at 2 ms, freed by the acknowledgements at 7 ms: 5 ms.
        c.on_sent(t0 + Duration::from_millis(2), window, 2);
        c.on_end_acks(t0 + Duration::from_millis(7), 0, false, Some(2));
        assert_eq!(total.micros(), 5_000);
        // Full again at 8 ms and the connection goes at its last known time, 10 ms.
        c.on_sent(t0 + Duration::from_millis(8), window, 3);
        c.on_end_acks(t0 + Duration::from_millis(10), window, false, Some(2));
        drop(c);
        assert_eq!(total.micros(), 7_000);
    }
}
