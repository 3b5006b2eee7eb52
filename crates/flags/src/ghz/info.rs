//! What ghz's reports echo of a run: its options as ghz's JSON report gives them and
//! the tags of its InfluxDB lines.

use std::time::Duration;

use serde_json::{json, Map, Value};
use stampede_report::ghz::GhzInfo;

use super::{Data, GhzArgs, Inputs};

/// What the run decided that the report says.
pub(super) struct Run {
    pub threads: usize,
    /// `normal`, or `timeout` for a run of `-z`.
    pub end_reason: &'static str,
    /// `--duration-stop close`.
    pub cut_as_canceled: bool,
}

/// The report's info for the run `a` and `i` describe.
pub(super) fn report(a: &GhzArgs, i: &Inputs, run: Run) -> GhzInfo {
    let m = &i.method;
    let host = a.host.clone().unwrap_or_default();
    let data = match &i.data {
        Data::Json(t) => serde_json::from_str::<Value>(t).unwrap_or(Value::String(t.clone())),
        Data::Binary(_) => Value::Null,
    };
    // As given, templates unrendered, as ghz reports it.
    let pairs = (i.metadata.as_ref())
        .and_then(|(t, flag)| stampede_grpc::calldata::string_map(t, flag).ok());
    let metadata: Map<String, Value> = (pairs.unwrap_or_default().into_iter())
        .map(|(k, v)| (k, Value::String(v)))
        .collect();
    let mut options = json!({
        "call": m.full_name(),
        "host": host,
        "proto": a.proto.clone().unwrap_or_default(),
        "protoset": a.protoset.clone().unwrap_or_default(),
        "import-paths": a.import_paths,
        "insecure": a.insecure,
        "skipTLS": a.skip_tls,
        "async": a.async_calls,
        "rps": a.rps,
        "load-schedule": a.load_schedule,
        "load-start": a.load_start,
        "load-end": a.load_end,
        "load-step": a.load_step,
        "load-step-duration": nanos(a.load_step_duration),
        "load-max-duration": nanos(a.load_max_duration),
        "concurrency": a.concurrency,
        "concurrency-schedule": a.concurrency_schedule,
        "concurrency-start": a.concurrency_start,
        "concurrency-end": a.concurrency_end,
        "concurrency-step": a.concurrency_step,
        "concurrency-step-duration": nanos(a.concurrency_step_duration),
        "concurrency-max-duration": nanos(a.concurrency_max_duration),
        "total": a.total,
        "timeout": nanos(a.timeout),
        "duration": nanos(a.duration),
        "max-duration": nanos(a.max_duration),
        "connections": a.connections,
        "dial-timeout": nanos(a.connect_timeout),
        "data": data,
        "binary": matches!(i.data, Data::Binary(_)),
        "CPUs": run.threads,
        "count-errors": a.count_errors,
        "enable-compression": a.enable_compression,
        "metadata": metadata,
        "stream-interval": nanos(a.stream_interval),
        "stream-call-duration": nanos(a.stream_call_duration),
        "stream-call-count": a.stream_call_count,
    });
    if let (Some(o), Some(n)) = (options.as_object_mut(), &a.name) {
        o.insert("name".into(), json!(n));
    }
    let secs = |d: Duration| d.as_secs().to_string();
    let influx_tags = vec![
        (
            "proto",
            a.proto.clone().or(a.protoset.clone()).unwrap_or_default(),
        ),
        ("call", m.full_name().to_string()),
        ("host", host),
        ("n", a.total.to_string()),
        ("c", a.concurrency.to_string()),
        ("rps", a.rps.to_string()),
        ("z", secs(a.duration)),
        ("timeout", secs(a.timeout)),
        ("dial_timeout", secs(a.connect_timeout)),
        ("keepalive", secs(a.keepalive.unwrap_or_default())),
        (
            "data",
            match &i.data {
                Data::Json(t) => compact(t),
                Data::Binary(_) => String::new(),
            },
        ),
        (
            "metadata",
            a.metadata.as_deref().map(compact).unwrap_or_default(),
        ),
        ("tags", a.tags.as_deref().map(compact).unwrap_or_default()),
    ];
    GhzInfo {
        name: a.name.clone(),
        count_errors: a.count_errors,
        cut_as_canceled: run.cut_as_canceled,
        end_reason: run.end_reason,
        options,
        tags: i.tags.clone(),
        influx_tags,
    }
}

/// A duration as ghz's JSON options give it: nanoseconds.
fn nanos(d: Duration) -> u64 {
    d.as_nanos().min(u128::from(u64::MAX)) as u64
}

/// JSON written without spaces, as ghz's tags carry it (the text as given when it is
/// not JSON).
fn compact(text: &str) -> String {
    serde_json::from_str::<Value>(text).map_or_else(|_| text.to_string(), |v| v.to_string())
}
