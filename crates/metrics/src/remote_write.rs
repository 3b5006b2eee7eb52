//! `--out prometheus-rw=URL`: the run's series pushed with Prometheus's remote-write
//! protocol 1.0 — a `WriteRequest` protobuf, snappy-compressed (the block format),
//! POSTed each second to the receiver (Prometheus with
//! `--web.enable-remote-write-receiver` at `/api/v1/write`, Mimir, Thanos, VictoriaMetrics …).
//!
//! The series are those `/metrics` serves ([`super::prom::families`]), each labelled
//! `job="stampede"` and `instance` with this machine's name as a scrape would label
//! them, so a dashboard's queries work on either; the families' types and help go as
//! the request's metadata.

use std::time::{SystemTime, UNIX_EPOCH};

use prost::Message;

use super::prom::{families, Kind};
use super::{RunInfo, Totals};

/// The headers the protocol asks for, besides the content type.
pub const HEADERS: &[(&str, &str)] = &[
    ("Content-Encoding", "snappy"),
    ("X-Prometheus-Remote-Write-Version", "0.1.0"),
];

/// `prometheus.WriteRequest`.
#[derive(Clone, PartialEq, Message)]
pub struct WriteRequest {
    #[prost(message, repeated, tag = "1")]
    pub timeseries: Vec<TimeSeries>,
    #[prost(message, repeated, tag = "3")]
    pub metadata: Vec<MetricMetadata>,
}

/// `prometheus.TimeSeries`: its labels sorted by name, then its samples.
#[derive(Clone, PartialEq, Message)]
pub struct TimeSeries {
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<Label>,
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<Sample>,
}

/// `prometheus.Label`.
#[derive(Clone, PartialEq, Message)]
pub struct Label {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

/// `prometheus.Sample`: a value at a time in ms since the Unix epoch.
#[derive(Clone, PartialEq, Message)]
pub struct Sample {
    #[prost(double, tag = "1")]
    pub value: f64,
    #[prost(int64, tag = "2")]
    pub timestamp: i64,
}

/// `prometheus.MetricMetadata`.
#[derive(Clone, PartialEq, Message)]
pub struct MetricMetadata {
    /// COUNTER 1, GAUGE 2, SUMMARY 5.
    #[prost(int32, tag = "1")]
    pub r#type: i32,
    #[prost(string, tag = "2")]
    pub metric_family_name: String,
    #[prost(string, tag = "4")]
    pub help: String,
    #[prost(string, tag = "5")]
    pub unit: String,
}

/// The write request for the figures so far, stamped now.
pub fn request(info: &RunInfo, t: &Totals, done: bool) -> WriteRequest {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    let mut req = WriteRequest::default();
    for f in families(info, t, done) {
        req.metadata.push(MetricMetadata {
            r#type: match f.kind {
                Kind::Counter => 1,
                Kind::Gauge => 2,
                Kind::Summary => 5,
                Kind::Histogram => 3,
            },
            metric_family_name: f.name.to_string(),
            help: f.help.to_string(),
            unit: String::new(),
        });
        // A quantile of an empty summary has no value to store.
        for s in f.samples.iter().filter(|s| !s.value.is_nan()) {
            let mut labels = vec![
                Label {
                    name: "__name__".into(),
                    value: format!("{}{}", f.name, s.suffix),
                },
                Label {
                    name: "instance".into(),
                    value: info.host.clone(),
                },
                Label {
                    name: "job".into(),
                    value: "stampede".into(),
                },
            ];
            labels.extend(s.labels.iter().map(|(n, v)| Label {
                name: n.to_string(),
                value: v.clone(),
            }));
            labels.sort_by(|a, b| a.name.cmp(&b.name));
            req.timeseries.push(TimeSeries {
                labels,
                samples: vec![Sample {
                    value: s.value,
                    timestamp: now,
                }],
            });
        }
    }
    req
}

/// The compressed body of [`request`].
pub fn body(info: &RunInfo, t: &Totals, done: bool) -> Vec<u8> {
    let raw = request(info, t, done).encode_to_vec();
    snap::raw::Encoder::new()
        .compress_vec(&raw)
        .expect("a buffer of protobuf compresses")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_decompresses_to_sorted_labelled_series() {
        let info = RunInfo {
            method: "GET".into(),
            url: "http://x/".into(),
            server_address: "x".into(),
            server_port: 80,
            scheme: "http".into(),
            offered_rate: None,
            start_unix_ms: 0,
            host: "m1".into(),
        };
        let mut t = Totals::default();
        t.statuses.insert(200, 42);
        let raw = snap::raw::Decoder::new()
            .decompress_vec(&body(&info, &t, false))
            .unwrap();
        let req = WriteRequest::decode(&raw[..]).unwrap();
        let series = req
            .timeseries
            .iter()
            .find(|s| {
                s.labels
                    .iter()
                    .any(|l| l.value == "stampede_requests_total")
            })
            .unwrap();
        let names: Vec<&str> = series.labels.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["__name__", "instance", "job", "status"]);
        assert_eq!(series.samples[0].value, 42.0);
        assert!(req
            .timeseries
            .iter()
            .all(|s| s.samples.iter().all(|x| !x.value.is_nan())));
        assert!(req
            .metadata
            .iter()
            .any(|m| m.metric_family_name == "stampede_latency_seconds" && m.r#type == 5));
    }
}
