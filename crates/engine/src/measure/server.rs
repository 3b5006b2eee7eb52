//! The server's own metrics beside the client's: the series a run scraped from the
//! server's Prometheus endpoint (`--server-metrics URL`), second by second, with
//! what became of the scrapes, and what they say about the limit — a queue in front
//! of the server that grew is why its answers slowed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The gauges that count requests waiting in front of a serving engine: vLLM's,
/// SGLang's and TGI's.
pub const QUEUES: [&str; 3] = [
    "vllm:num_requests_waiting",
    "sglang:num_queue_reqs",
    "tgi_queue_size",
];

/// What a run scraped from the server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerMetrics {
    /// The endpoint scraped.
    pub url: String,
    /// How often, in ms.
    pub every_ms: u64,
    /// Scrapes answered and read.
    pub scrapes: u64,
    /// Scrapes that failed, by why (`timeout`, `refused`, `status 404`, `too large`,
    /// `not Prometheus's text`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub failed: BTreeMap<String, u64>,
    /// Each series kept (by metric name, its label sets summed): its samples as
    /// `[seconds since the run's start, value]`.
    pub series: BTreeMap<String, Vec<[f64; 2]>>,
    /// Samples left out past the bound on series or samples kept.
    #[serde(default, skip_serializing_if = "crate::form::is_zero")]
    pub dropped: u64,
}

/// How a queue in front of the server grew over a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueGrowth {
    /// The series that counts it.
    pub series: String,
    /// Its first sample, its highest and its last.
    pub from: f64,
    pub peak: f64,
    pub last: f64,
}

/// A series' first, lowest, highest and last values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span {
    pub first: f64,
    pub min: f64,
    pub max: f64,
    pub last: f64,
}

impl ServerMetrics {
    /// A series' span of values, where it has samples.
    pub fn span(&self, name: &str) -> Option<Span> {
        let s = self.series.get(name)?;
        let (first, last) = (s.first()?[1], s.last()?[1]);
        let min = s.iter().map(|p| p[1]).fold(f64::INFINITY, f64::min);
        let max = s.iter().map(|p| p[1]).fold(f64::NEG_INFINITY, f64::max);
        Some(Span {
            first,
            min,
            max,
            last,
        })
    }

    /// The queue in front of the server, where it grew by two requests or more over
    /// the run.
    pub fn queue_growth(&self) -> Option<QueueGrowth> {
        QUEUES.iter().find_map(|q| {
            let s = self.span(q)?;
            (s.max >= s.first + 2.0).then(|| QueueGrowth {
                series: q.to_string(),
                from: s.first,
                peak: s.max,
                last: s.last,
            })
        })
    }

    /// Whether the series is a counter (it only grows: its change over the run is
    /// what it says), by Prometheus's naming.
    pub fn is_counter(name: &str) -> bool {
        name.ends_with("_total") || name.ends_with("_sum") || name.ends_with("_count")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_that_grew_is_found_by_its_name() {
        let mut m = ServerMetrics::default();
        m.series.insert(
            "vllm:num_requests_waiting".into(),
            vec![[0.0, 0.0], [1.0, 12.0], [2.0, 37.0], [3.0, 5.0]],
        );
        let q = m.queue_growth().unwrap();
        assert_eq!((q.from, q.peak, q.last), (0.0, 37.0, 5.0));
        m.series.insert(
            "vllm:num_requests_waiting".into(),
            vec![[0.0, 0.0], [1.0, 1.0]],
        );
        assert!(m.queue_growth().is_none(), "one waiting is no queue");
        assert!(ServerMetrics::is_counter("vllm:prompt_tokens_total"));
        assert!(!ServerMetrics::is_counter("vllm:kv_cache_usage_perc"));
    }
}
