//! `--out otlp=URL`: the run's figures pushed each second with OpenTelemetry's OTLP/HTTP
//! (an `ExportMetricsServiceRequest` protobuf POSTed to `/v1/metrics`, or to the URL's
//! own path when it has one), cumulative since the run's start.
//!
//! Semantic-convention names where a figure has one: `http.client.request.duration`
//! (a histogram in seconds with the advised bucket bounds, from each request's send,
//! labelled with `http.request.method`, `server.address`, `server.port` and
//! `url.scheme`), `http.client.active_requests`, `process.cpu.time` and
//! `process.memory.usage`; the rest under `stampede.`: responses by
//! `http.response.status_code`, failures by `error.type`, and the corrected latency and
//! send lag as summaries. The resource names the service `stampede` and the host.
//!
//! The messages are the published schema's (opentelemetry-proto's `metrics.proto`,
//! `common.proto`, `resource.proto`), field for field, written out here with prost's
//! derive rather than generated at build time.

use std::time::{SystemTime, UNIX_EPOCH};

use prost::{Message, Oneof};

use super::post::Endpoint;
use super::prom::QUANTILES;
use super::{RunInfo, Totals};
use stampede_engine::LatencyStats;

/// `http.client.request.duration`'s bucket bounds, in seconds, as the semantic
/// conventions advise.
pub const DURATION_BOUNDS: [f64; 14] = [
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
];

/// Where the request goes: the URL's path, or `/v1/metrics` when it has none.
pub fn path(e: &Endpoint) -> String {
    if e.path == "/" {
        "/v1/metrics".into()
    } else {
        e.path.clone()
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct ExportMetricsServiceRequest {
    #[prost(message, repeated, tag = "1")]
    pub resource_metrics: Vec<ResourceMetrics>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ResourceMetrics {
    #[prost(message, optional, tag = "1")]
    pub resource: Option<Resource>,
    #[prost(message, repeated, tag = "2")]
    pub scope_metrics: Vec<ScopeMetrics>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Resource {
    #[prost(message, repeated, tag = "1")]
    pub attributes: Vec<KeyValue>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ScopeMetrics {
    #[prost(message, optional, tag = "1")]
    pub scope: Option<InstrumentationScope>,
    #[prost(message, repeated, tag = "2")]
    pub metrics: Vec<Metric>,
}

#[derive(Clone, PartialEq, Message)]
pub struct InstrumentationScope {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub version: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct KeyValue {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<AnyValue>,
}

#[derive(Clone, PartialEq, Message)]
pub struct AnyValue {
    #[prost(oneof = "Value", tags = "1, 3")]
    pub value: Option<Value>,
}

#[derive(Clone, PartialEq, Oneof)]
pub enum Value {
    #[prost(string, tag = "1")]
    StringValue(String),
    #[prost(int64, tag = "3")]
    IntValue(i64),
}

#[derive(Clone, PartialEq, Message)]
pub struct Metric {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub description: String,
    #[prost(string, tag = "3")]
    pub unit: String,
    #[prost(oneof = "Data", tags = "5, 7, 9, 11")]
    pub data: Option<Data>,
}

#[derive(Clone, PartialEq, Oneof)]
pub enum Data {
    #[prost(message, tag = "5")]
    Gauge(Gauge),
    #[prost(message, tag = "7")]
    Sum(Sum),
    #[prost(message, tag = "9")]
    Histogram(Histogram),
    #[prost(message, tag = "11")]
    Summary(Summary),
}

#[derive(Clone, PartialEq, Message)]
pub struct Gauge {
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<NumberDataPoint>,
}

/// AGGREGATION_TEMPORALITY_CUMULATIVE.
pub const CUMULATIVE: i32 = 2;

#[derive(Clone, PartialEq, Message)]
pub struct Sum {
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<NumberDataPoint>,
    #[prost(int32, tag = "2")]
    pub aggregation_temporality: i32,
    #[prost(bool, tag = "3")]
    pub is_monotonic: bool,
}

#[derive(Clone, PartialEq, Message)]
pub struct Histogram {
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<HistogramDataPoint>,
    #[prost(int32, tag = "2")]
    pub aggregation_temporality: i32,
}

#[derive(Clone, PartialEq, Message)]
pub struct Summary {
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<SummaryDataPoint>,
}

#[derive(Clone, PartialEq, Message)]
pub struct NumberDataPoint {
    #[prost(message, repeated, tag = "7")]
    pub attributes: Vec<KeyValue>,
    #[prost(fixed64, tag = "2")]
    pub start_time_unix_nano: u64,
    #[prost(fixed64, tag = "3")]
    pub time_unix_nano: u64,
    #[prost(oneof = "Number", tags = "4, 6")]
    pub value: Option<Number>,
}

#[derive(Clone, PartialEq, Oneof)]
pub enum Number {
    #[prost(double, tag = "4")]
    AsDouble(f64),
    #[prost(sfixed64, tag = "6")]
    AsInt(i64),
}

#[derive(Clone, PartialEq, Message)]
pub struct HistogramDataPoint {
    #[prost(message, repeated, tag = "9")]
    pub attributes: Vec<KeyValue>,
    #[prost(fixed64, tag = "2")]
    pub start_time_unix_nano: u64,
    #[prost(fixed64, tag = "3")]
    pub time_unix_nano: u64,
    #[prost(fixed64, tag = "4")]
    pub count: u64,
    #[prost(double, optional, tag = "5")]
    pub sum: Option<f64>,
    #[prost(fixed64, repeated, tag = "6")]
    pub bucket_counts: Vec<u64>,
    #[prost(double, repeated, tag = "7")]
    pub explicit_bounds: Vec<f64>,
    #[prost(double, optional, tag = "11")]
    pub min: Option<f64>,
    #[prost(double, optional, tag = "12")]
    pub max: Option<f64>,
}

#[derive(Clone, PartialEq, Message)]
pub struct SummaryDataPoint {
    #[prost(message, repeated, tag = "7")]
    pub attributes: Vec<KeyValue>,
    #[prost(fixed64, tag = "2")]
    pub start_time_unix_nano: u64,
    #[prost(fixed64, tag = "3")]
    pub time_unix_nano: u64,
    #[prost(fixed64, tag = "4")]
    pub count: u64,
    #[prost(double, tag = "5")]
    pub sum: f64,
    #[prost(message, repeated, tag = "6")]
    pub quantile_values: Vec<ValueAtQuantile>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ValueAtQuantile {
    #[prost(double, tag = "1")]
    pub quantile: f64,
    #[prost(double, tag = "2")]
    pub value: f64,
}

fn text(key: &str, v: &str) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue {
            value: Some(Value::StringValue(v.into())),
        }),
    }
}

fn int(key: &str, v: i64) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue {
            value: Some(Value::IntValue(v)),
        }),
    }
}

/// The points' times: the run's start and now, ns since the Unix epoch.
struct Times {
    start: u64,
    now: u64,
}

impl Times {
    fn point(&self, attributes: Vec<KeyValue>, value: Number) -> NumberDataPoint {
        NumberDataPoint {
            attributes,
            start_time_unix_nano: self.start,
            time_unix_nano: self.now,
            value: Some(value),
        }
    }
}

fn metric(name: &str, description: &str, unit: &str, data: Data) -> Metric {
    Metric {
        name: name.into(),
        description: description.into(),
        unit: unit.into(),
        data: Some(data),
    }
}

fn counter(points: Vec<NumberDataPoint>, monotonic: bool) -> Data {
    Data::Sum(Sum {
        data_points: points,
        aggregation_temporality: CUMULATIVE,
        is_monotonic: monotonic,
    })
}

fn summary(times: &Times, l: &LatencyStats) -> Data {
    Data::Summary(Summary {
        data_points: vec![summary_point(times, Vec::new(), l)],
    })
}

fn summary_point(times: &Times, attributes: Vec<KeyValue>, l: &LatencyStats) -> SummaryDataPoint {
    let quantile_values = if l.count == 0 {
        Vec::new()
    } else {
        QUANTILES
            .iter()
            .map(|&q| ValueAtQuantile {
                quantile: q,
                value: if q == 1.0 {
                    l.max_us as f64 / 1e6
                } else {
                    l.at(q * 100.0).unwrap_or(0) as f64 / 1e6
                },
            })
            .collect()
    };
    SummaryDataPoint {
        attributes,
        start_time_unix_nano: times.start,
        time_unix_nano: times.now,
        count: l.count,
        sum: l.mean_us * l.count as f64 / 1e6,
        quantile_values,
    }
}

/// The request for the figures so far.
pub fn request(info: &RunInfo, t: &Totals) -> ExportMetricsServiceRequest {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let times = Times {
        start: info.start_unix_ms * 1_000_000,
        now,
    };
    let http = vec![
        text("http.request.method", &info.method),
        text("server.address", &info.server_address),
        int("server.port", i64::from(info.server_port)),
        text("url.scheme", &info.scheme),
    ];
    let d = &t.duration;
    let mut metrics = vec![
        metric(
            "http.client.request.duration",
            "Duration of HTTP client requests, from each request's send.",
            "s",
            Data::Histogram(Histogram {
                data_points: vec![HistogramDataPoint {
                    attributes: http.clone(),
                    start_time_unix_nano: times.start,
                    time_unix_nano: times.now,
                    count: d.count,
                    sum: Some(d.sum_s),
                    bucket_counts: d.buckets.clone(),
                    explicit_bounds: DURATION_BOUNDS.to_vec(),
                    min: (d.count > 0).then_some(d.min_s),
                    max: (d.count > 0).then_some(d.max_s),
                }],
                aggregation_temporality: CUMULATIVE,
            }),
        ),
        metric(
            "http.client.active_requests",
            "Requests sent and not yet answered, the most in the last second.",
            "{request}",
            counter(
                vec![times.point(http.clone(), Number::AsInt(t.in_flight as i64))],
                false,
            ),
        ),
        metric(
            "stampede.requests",
            "Requests answered, by the response's status code.",
            "{request}",
            counter(
                t.statuses
                    .iter()
                    .map(|(code, n)| {
                        let mut a = http.clone();
                        a.push(int("http.response.status_code", i64::from(*code)));
                        times.point(a, Number::AsInt(*n as i64))
                    })
                    .collect(),
                true,
            ),
        ),
        metric(
            "stampede.request.failures",
            "Requests that got no response, by kind of failure.",
            "{request}",
            counter(
                t.errors
                    .iter()
                    .map(|(kind, n)| {
                        let mut a = http.clone();
                        a.push(text("error.type", kind));
                        times.point(a, Number::AsInt(*n as i64))
                    })
                    .collect(),
                true,
            ),
        ),
        metric(
            "stampede.received",
            "Bytes received, headers and bodies.",
            "By",
            counter(
                vec![times.point(Vec::new(), Number::AsInt(t.bytes_read as i64))],
                true,
            ),
        ),
        metric(
            "stampede.connections",
            "Connections held, the most in the last second.",
            "{connection}",
            Data::Gauge(Gauge {
                data_points: vec![times.point(Vec::new(), Number::AsInt(t.connections as i64))],
            }),
        ),
        metric(
            "stampede.latency",
            "Response time from each request's intended start (corrected for coordinated omission).",
            "s",
            summary(&times, &t.latency),
        ),
        metric(
            "stampede.send_lag",
            "How late each request was sent after its intended start.",
            "s",
            summary(&times, &t.send_lag),
        ),
    ];
    if !t.steps.is_empty() {
        let step = |name: &str| vec![text("stampede.step", name)];
        let each = |value: &dyn Fn(&crate::StepTotals) -> u64| {
            (t.steps.iter())
                .map(|st| times.point(step(&st.name), Number::AsInt(value(st) as i64)))
                .collect()
        };
        metrics.push(metric(
            "stampede.step.requests",
            "Requests answered, by the run's request: a journey's step, a targets file's request.",
            "{request}",
            counter(each(&|st| st.completed), true),
        ));
        metrics.push(metric(
            "stampede.step.request.failures",
            "Requests that got no response, by the run's request.",
            "{request}",
            counter(each(&|st| st.failed), true),
        ));
        metrics.push(metric(
            "stampede.step.latency",
            "Response time from each request's intended start, by the run's request.",
            "s",
            Data::Summary(Summary {
                data_points: (t.steps.iter())
                    .map(|st| summary_point(&times, step(&st.name), &st.latency))
                    .collect(),
            }),
        ));
    }
    if !t.server.is_empty() {
        metrics.push(metric(
            "stampede.server.metric",
            "The server's own series as last scraped (--server-metrics), by their name.",
            "1",
            Data::Gauge(Gauge {
                data_points: (t.server.iter())
                    .map(|(n, v)| times.point(vec![text("stampede.name", n)], Number::AsDouble(*v)))
                    .collect(),
            }),
        ));
    }
    if let Some(j) = &t.journeys {
        metrics.push(metric(
            "stampede.journeys",
            "Journeys that ended, by outcome: completed (every step answered, every check passed) or failed.",
            "{journey}",
            counter(
                [("completed", j.completed), ("failed", j.failed)]
                    .into_iter()
                    .map(|(o, n)| {
                        times.point(vec![text("stampede.outcome", o)], Number::AsInt(n as i64))
                    })
                    .collect(),
                true,
            ),
        ));
        metrics.push(metric(
            "stampede.step.checks_failed",
            "A journey's failed checks and missed captures, by step and check.",
            "{check}",
            counter(
                (j.checks_failed.iter())
                    .map(|(st, check, n)| {
                        let a = vec![text("stampede.step", st), text("stampede.check", check)];
                        times.point(a, Number::AsInt(*n as i64))
                    })
                    .collect(),
                true,
            ),
        ));
    }
    if let Some((cpu, rss)) = super::prom::process() {
        metrics.push(metric(
            "process.cpu.time",
            "CPU time stampede has used, user and system.",
            "s",
            counter(vec![times.point(Vec::new(), Number::AsDouble(cpu))], true),
        ));
        metrics.push(metric(
            "process.memory.usage",
            "stampede's resident memory.",
            "By",
            counter(
                vec![times.point(Vec::new(), Number::AsInt(rss as i64))],
                false,
            ),
        ));
    }
    ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(Resource {
                attributes: vec![
                    text("service.name", "stampede"),
                    text("service.version", env!("CARGO_PKG_VERSION")),
                    text("host.name", &info.host),
                ],
            }),
            scope_metrics: vec![ScopeMetrics {
                scope: Some(InstrumentationScope {
                    name: "stampede".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                }),
                metrics,
            }],
        }],
    }
}

/// The encoded request for the figures so far.
pub fn body(info: &RunInfo, t: &Totals) -> Vec<u8> {
    request(info, t).encode_to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> RunInfo {
        RunInfo {
            method: "GET".into(),
            url: "http://127.0.0.1:8080/".into(),
            server_address: "127.0.0.1".into(),
            server_port: 8080,
            scheme: "http".into(),
            offered_rate: None,
            start_unix_ms: 1_700_000_000_000,
            host: "m".into(),
        }
    }

    #[test]
    fn the_request_round_trips_with_its_semantic_names() {
        let info = info();
        let mut t = Totals::default();
        t.statuses.insert(200, 9);
        t.duration.count = 9;
        t.duration.buckets = vec![9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        let req = ExportMetricsServiceRequest::decode(&body(&info, &t)[..]).unwrap();
        let scope = &req.resource_metrics[0].scope_metrics[0];
        let names: Vec<&str> = scope.metrics.iter().map(|m| m.name.as_str()).collect();
        assert!(names.contains(&"http.client.request.duration"), "{names:?}");
        let Some(Data::Histogram(h)) = &scope.metrics[0].data else {
            panic!("not a histogram")
        };
        let p = &h.data_points[0];
        assert_eq!(p.bucket_counts.len(), p.explicit_bounds.len() + 1);
        assert_eq!(p.count, p.bucket_counts.iter().sum::<u64>());
        let Some(Data::Sum(s)) = &scope.metrics[2].data else {
            panic!("not a sum")
        };
        assert!(s.is_monotonic);
        assert_eq!(s.data_points[0].value, Some(Number::AsInt(9)));
        let code = s.data_points[0].attributes.last().unwrap();
        assert_eq!(code.key, "http.response.status_code");
    }

    #[test]
    fn a_journey_s_steps_and_checks_are_points_with_their_names() {
        let info = info();
        let mut h = stampede_engine::Hist::default();
        h.0.record_n(2_000, 4).unwrap();
        let t = Totals {
            steps: vec![crate::StepTotals {
                name: "login".into(),
                completed: 4,
                failed: 1,
                latency: h.stats(),
            }],
            journeys: Some(crate::JourneyTotals {
                started: 5,
                completed: 3,
                failed: 2,
                checks_failed: vec![("login".into(), "status 200".into(), 1)],
            }),
            ..Totals::default()
        };
        let req = ExportMetricsServiceRequest::decode(&body(&info, &t)[..]).unwrap();
        let metrics = &req.resource_metrics[0].scope_metrics[0].metrics;
        let find = |name: &str| metrics.iter().find(|m| m.name == name).unwrap();
        let Some(Data::Sum(s)) = &find("stampede.step.requests").data else {
            panic!("not a sum")
        };
        assert_eq!(s.data_points[0].value, Some(Number::AsInt(4)));
        assert_eq!(s.data_points[0].attributes[0].key, "stampede.step");
        let Some(Data::Summary(l)) = &find("stampede.step.latency").data else {
            panic!("not a summary")
        };
        assert_eq!(l.data_points[0].count, 4);
        assert!((l.data_points[0].sum - 0.008).abs() < 1e-4);
        let Some(Data::Sum(c)) = &find("stampede.step.checks_failed").data else {
            panic!("not a sum")
        };
        let keys: Vec<&str> = (c.data_points[0].attributes.iter())
            .map(|a| a.key.as_str())
            .collect();
        assert_eq!(keys, ["stampede.step", "stampede.check"]);
        let Some(Data::Sum(j)) = &find("stampede.journeys").data else {
            panic!("not a sum")
        };
        assert_eq!(j.data_points[1].value, Some(Number::AsInt(2)));
    }
}
