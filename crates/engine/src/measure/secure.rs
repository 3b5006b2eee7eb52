//! The figures of a run's secure transports in its result: what TLS settled on and
//! what its handshakes cost, and what QUIC's connections did (their ends and stream
//! resets by name, bounded).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::result::LatencyStats;

/// What the first TLS handshake of a run settled on.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct TlsSession {
    pub version: Option<String>,
    pub cipher: Option<String>,
    pub alpn: Option<String>,
}

/// The TLS side of an https run: what was negotiated and what handshakes cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TlsStats {
    /// Protocol version, as `TLSv1_3`.
    pub version: Option<String>,
    /// Cipher suite, as `TLS13_AES_128_GCM_SHA256`.
    pub cipher: Option<String>,
    /// The protocol ALPN settled on, if any.
    pub alpn: Option<String>,
    /// Handshakes completed.
    pub handshakes: u64,
    /// Of those, how many resumed an earlier session.
    pub resumed: u64,
    /// Connections where HTTP/2 was offered and ALPN chose HTTP/1.1 instead.
    #[serde(default)]
    pub http1_fallback: u64,
    /// Handshake time, µs.
    pub handshake: LatencyStats,
}

/// QUIC's own figures of an HTTP/3 run, summed over its connections as each closed
/// (or as the run ended).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct QuicStats {
    /// Connections whose figures are counted.
    pub connections: u64,
    /// Packets sent, lost (declared lost by loss detection, then sent again as
    /// needed), and the bytes they held.
    pub packets_sent: u64,
    pub packets_lost: u64,
    pub bytes_lost: u64,
    /// Congestion events: times a loss cut a connection's congestion window.
    pub congestion_events: u64,
    /// Connections whose 0-RTT data the server accepted.
    pub zero_rtt: u64,
    /// Each connection's smoothed round-trip time at its end, µs: least, mean, most.
    pub rtt_min_us: u64,
    pub rtt_mean_us: f64,
    pub rtt_max_us: u64,
    /// Time the connections' congestion windows were full (summed over
    /// connections), µs: the sender waited on acknowledgements, not on the run.
    #[serde(default)]
    pub congestion_limited_us: u64,
    /// Connections whose server asked for a Retry (to validate this end's address)
    /// before it went on with the handshake.
    #[serde(default)]
    pub retried: u64,
    /// Connections that ended other than by this end's orderly close, by how (the
    /// server's or this end's error code by name, `idle timeout`, `stateless reset`…).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub ends: BTreeMap<String, u64>,
    /// Streams the server reset, by HTTP/3 error code name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resets: BTreeMap<String, u64>,
}

/// At most this many distinct names are kept in [`QuicStats::ends`] and
/// [`QuicStats::resets`]; later ones are counted under `other`.
const MAX_NAMES: usize = 64;

/// Counts `n` under `name` in `map`, or under `other` once the map is full.
fn count_name(map: &mut BTreeMap<String, u64>, name: &str, n: u64) {
    if let Some(v) = map.get_mut(name) {
        *v += n;
    } else if map.len() < MAX_NAMES {
        map.insert(name.to_string(), n);
    } else {
        *map.entry("other".to_string()).or_default() += n;
    }
}

impl QuicStats {
    /// Adds one connection's figures.
    pub fn add(&mut self, f: &crate::h3::QuicFigures) {
        let n = self.connections as f64;
        self.rtt_mean_us = (self.rtt_mean_us * n + f.rtt_us as f64) / (n + 1.0);
        self.rtt_min_us = if self.connections == 0 {
            f.rtt_us
        } else {
            self.rtt_min_us.min(f.rtt_us)
        };
        self.rtt_max_us = self.rtt_max_us.max(f.rtt_us);
        self.connections += 1;
        self.packets_sent += f.packets_sent;
        self.packets_lost += f.packets_lost;
        for &(code, n) in &f.resets.by_code {
            count_name(&mut self.resets, &stampede_wire::h3::Code(code).name(), n);
        }
        if f.resets.other > 0 {
            count_name(&mut self.resets, "other", f.resets.other);
        }
        self.bytes_lost += f.bytes_lost;
        self.congestion_events += f.congestion_events;
        self.zero_rtt += u64::from(f.zero_rtt);
        self.retried += u64::from(f.retried);
        if let Some(end) = &f.end {
            count_name(&mut self.ends, end, 1);
        }
    }

    /// Joins another part's figures (exactly: sums, extremes, a mean by connections).
    pub fn join(&mut self, o: &QuicStats) {
        if o.connections == 0 {
            return;
        }
        let (a, b) = (self.connections as f64, o.connections as f64);
        self.rtt_mean_us = (self.rtt_mean_us * a + o.rtt_mean_us * b) / (a + b);
        self.rtt_min_us = if self.connections == 0 {
            o.rtt_min_us
        } else {
            self.rtt_min_us.min(o.rtt_min_us)
        };
        self.rtt_max_us = self.rtt_max_us.max(o.rtt_max_us);
        self.connections += o.connections;
        self.packets_sent += o.packets_sent;
        self.packets_lost += o.packets_lost;
        self.bytes_lost += o.bytes_lost;
        self.congestion_events += o.congestion_events;
        self.zero_rtt += o.zero_rtt;
        self.congestion_limited_us += o.congestion_limited_us;
        self.retried += o.retried;
        for (k, v) in &o.ends {
            count_name(&mut self.ends, k, *v);
        }
        for (k, v) in &o.resets {
            count_name(&mut self.resets, k, *v);
        }
    }
}
