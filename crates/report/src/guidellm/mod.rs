//! `stampede guidellm`'s outputs, in GuideLLM's layout (its release 0.8.1): the
//! report object written as `benchmarks.json` — `benchmarks[].metrics.<metric>.
//! {successful,errored,incomplete,total}` distributions with GuideLLM's fields
//! (`mean`, `median`, `mode`, `variance`, `std_dev`, `min`, `max`, `count`,
//! `total_sum`, `percentiles.p001` … `p999`), in its units (request latency in
//! seconds, token timings in ms) — its CSV ([`csv`]) and its console tables
//! ([`console`]).
//!
//! The figures are stampede's: latencies and time to first token from each
//! request's intended start, so a queue in front of the server is in them. Only the
//! successful requests' timings are known per request; the errored and incomplete
//! groups carry their counts.

pub mod console;
pub mod csv;

use serde_json::{json, Map, Value};
use stampede_engine::{percentile_linear, Hist, RunResult};

/// One benchmark of the run: its strategy as GuideLLM names it and its result.
pub struct Benchmark {
    /// `concurrent@4`, `constant@2.00`, `synchronous`…
    pub label: String,
    /// GuideLLM's strategy object (`type_`, `streams`, `rate`, `max_concurrency`).
    pub strategy: Value,
    /// Requests in flight at most.
    pub concurrency: usize,
    pub result: RunResult,
}

/// The whole run, as the outputs need it.
pub struct Report {
    /// The run's arguments, echoed as GuideLLM's `config.spec`.
    pub spec: Value,
    pub labels: Map<String, Value>,
    pub benchmarks: Vec<Benchmark>,
    /// What the profile concluded (a knee's fit, a goodput search's probes).
    pub conclusion: Option<Value>,
    /// Each prompt's length in tokens, in the order they were sent.
    pub isl: Vec<u32>,
}

/// GuideLLM's percentiles: their keys and where they lie (percent).
const PERCENTILES: [(&str, f64); 11] = [
    ("p001", 0.1),
    ("p01", 1.0),
    ("p05", 5.0),
    ("p10", 10.0),
    ("p25", 25.0),
    ("p50", 50.0),
    ("p75", 75.0),
    ("p90", 90.0),
    ("p95", 95.0),
    ("p99", 99.0),
    ("p999", 99.9),
];

/// A distribution's figures, in its unit.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Dist {
    pub mean: f64,
    pub median: f64,
    pub mode: f64,
    pub std_dev: f64,
    pub min: f64,
    pub max: f64,
    pub count: u64,
    pub total_sum: f64,
    /// At GuideLLM's percentiles: p0.1, p1, p5, p10, p25, p50, p75, p90, p95, p99,
    /// p99.9.
    pub p: [f64; 11],
}

impl Dist {
    /// A histogram's, divided by `scale` (1000: µs to ms).
    pub fn of_hist(h: &Hist, scale: f64) -> Dist {
        let h = &h.0;
        if h.is_empty() {
            return Dist::default();
        }
        let mode = (h.iter_recorded())
            .max_by_key(|v| v.count_at_value())
            .map_or(0.0, |v| h.highest_equivalent(v.value_iterated_to()) as f64);
        Dist {
            mean: h.mean() / scale,
            median: percentile_linear(h, 50.0) / scale,
            mode: mode / scale,
            std_dev: h.stdev() / scale,
            min: h.min() as f64 / scale,
            max: h.max() as f64 / scale,
            count: h.len(),
            total_sum: h.mean() * h.len() as f64 / scale,
            p: PERCENTILES.map(|(_, q)| percentile_linear(h, q) / scale),
        }
    }

    /// Plain values'.
    pub fn of_values(v: &[f64]) -> Dist {
        if v.is_empty() {
            return Dist::default();
        }
        let mut s = v.to_vec();
        s.sort_by(|a, b| a.total_cmp(b));
        let n = s.len() as f64;
        let sum: f64 = s.iter().sum();
        let mean = sum / n;
        let at = |q: f64| {
            let rank = q / 100.0 * (n - 1.0);
            let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
            s[lo] + (s[hi] - s[lo]) * (rank - lo as f64)
        };
        let mut mode = (s[0], 0usize);
        let mut i = 0;
        while i < s.len() {
            let j = s[i..].iter().take_while(|x| **x == s[i]).count();
            if j > mode.1 {
                mode = (s[i], j);
            }
            i += j;
        }
        Dist {
            mean,
            median: at(50.0),
            mode: mode.0,
            std_dev: (s.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt(),
            min: s[0],
            max: s[s.len() - 1],
            count: s.len() as u64,
            total_sum: sum,
            p: PERCENTILES.map(|(_, q)| at(q)),
        }
    }

    pub fn json(&self) -> Value {
        let p: Map<String, Value> = (PERCENTILES.iter().zip(self.p))
            .map(|((k, _), v)| (k.to_string(), v.into()))
            .collect();
        json!({
            "mean": self.mean, "median": self.median, "mode": self.mode,
            "variance": self.std_dev * self.std_dev, "std_dev": self.std_dev,
            "min": self.min, "max": self.max, "count": self.count,
            "total_sum": self.total_sum, "percentiles": p,
            "pdf": null, "mean_ci": null, "percentile_cis": null,
        })
    }

    /// The percentile at `key` (`p95`).
    pub fn at(&self, key: &str) -> f64 {
        PERCENTILES
            .iter()
            .position(|(k, _)| *k == key)
            .map_or(0.0, |i| self.p[i])
    }
}

/// A metric's four groups: the successful requests' distribution, the others' counts.
struct Groups {
    successful: Dist,
    errored: u64,
    incomplete: u64,
}

impl Groups {
    fn json(&self) -> Value {
        let counted = |n: u64| {
            let mut d = Dist::default().json();
            d["count"] = n.into();
            d
        };
        json!({
            "successful": self.successful.json(),
            "errored": counted(self.errored),
            "incomplete": counted(self.incomplete),
            "total": self.successful.json(),
        })
    }
}

/// The figures of one benchmark the outputs print.
pub struct Figures {
    pub successful: u64,
    pub errored: u64,
    pub incomplete: u64,
    pub duration: f64,
    pub start: f64,
    pub end: f64,
    pub request_latency_s: Dist,
    pub ttft_ms: Dist,
    pub itl_ms: Dist,
    pub tpot_ms: Dist,
    pub output_tokens: Dist,
    pub prompt_tokens: Dist,
    pub iterations: Dist,
    pub requests_per_second: Dist,
    pub concurrency: Dist,
    pub output_tokens_per_second: Dist,
    pub mean_rps: f64,
    pub mean_output_tps: f64,
    pub mean_prompt_tps: f64,
    /// Goodput: requests meeting the service levels among those judged.
    pub slo: Option<(u64, u64)>,
}

impl Figures {
    pub fn of(b: &Benchmark, isl: &[u32]) -> Figures {
        let r = &b.result;
        let successful: u64 = r.statuses.range(200..300).map(|(_, n)| n).sum();
        let errored = r.requests.completed - successful + r.requests.failed;
        let secs = r.duration_s.max(1e-9);
        let start = r.started_unix_ms as f64 / 1000.0;
        let stream = r.histograms.stream.as_ref();
        let dist = |f: fn(&stampede_engine::StreamHistograms) -> &Hist, scale| {
            stream.map_or_else(Dist::default, |s| Dist::of_hist(f(s), scale))
        };
        let output_tokens = dist(|s| &s.tokens, 1.0);
        let prompts: Vec<f64> = isl
            .iter()
            .take(successful as usize)
            .map(|&n| f64::from(n))
            .collect();
        let prompt_tokens = Dist::of_values(&prompts);
        let secs_v = |f: &dyn Fn(&stampede_engine::Interval) -> f64| -> Vec<f64> {
            r.intervals.iter().map(f).collect()
        };
        let tokens = r.protocols.stream.as_ref().and_then(|s| s.tokens.as_ref());
        Figures {
            successful,
            errored,
            incomplete: r.requests.abandoned,
            duration: r.duration_s,
            start,
            end: start + r.duration_s,
            request_latency_s: Dist::of_hist(&r.histograms.latency, 1e6),
            ttft_ms: dist(|s| &s.first_event, 1000.0),
            itl_ms: dist(|s| &s.tpot, 1000.0),
            tpot_ms: dist(|s| &s.per_token, 1000.0),
            iterations: dist(|s| &s.events, 1.0),
            requests_per_second: Dist::of_values(&secs_v(&|i| i.completed as f64)),
            concurrency: Dist::of_values(&secs_v(&|i| i.in_flight as f64)),
            output_tokens_per_second: Dist::of_values(&secs_v(&|i| i.events as f64)),
            mean_rps: successful as f64 / secs,
            mean_output_tps: tokens.map_or(0.0, |t| t.total as f64 / secs),
            mean_prompt_tps: prompt_tokens.total_sum / secs,
            slo: tokens.and_then(|t| t.good.map(|g| (g, output_tokens.count))),
            output_tokens,
            prompt_tokens,
        }
    }
}

fn benchmark_json(b: &Benchmark, index: usize, isl: &[u32]) -> Value {
    let f = Figures::of(b, isl);
    let g = |d: &Dist| {
        Groups {
            successful: d.clone(),
            errored: f.errored,
            incomplete: f.incomplete,
        }
        .json()
    };
    let per_s = |d: &Dist, mean: f64| {
        let mut v = g(d);
        v["successful"]["mean"] = mean.into();
        v["total"]["mean"] = mean.into();
        v
    };
    // Totals are known per request only as their parts' sums: the mean and sum.
    let total_tokens = Dist {
        mean: f.output_tokens.mean + f.prompt_tokens.mean,
        count: f.output_tokens.count,
        total_sum: f.output_tokens.total_sum + f.prompt_tokens.total_sum,
        ..Dist::default()
    };
    let (attainment, judged) = match f.slo {
        Some((met, judged)) if judged > 0 => (json!(met as f64 / judged as f64), judged),
        _ => (Value::Null, 0),
    };
    let goodput = match f.slo {
        Some((met, _)) => json!({"successful": {"mean": met as f64 / f.duration.max(1e-9)}}),
        None => Value::Null,
    };
    json!({
        "type_": "generative_benchmark",
        "config": {
            "run_index": index,
            "strategy": b.strategy,
            "constraints": {},
            "warmup": {"percent": null, "value": null, "mode": "prefer_duration"},
            "cooldown": {"percent": null, "value": null, "mode": "prefer_duration"},
        },
        "scheduler_state": {
            "start_time": f.start, "end_time": f.end,
            "created_requests": b.result.requests.started,
            "processed_requests": f.successful + f.errored,
            "successful_requests": f.successful,
            "errored_requests": f.errored,
            "cancelled_requests": f.incomplete,
        },
        "metrics": {
            "request_totals": {"successful": f.successful, "errored": f.errored, "incomplete": f.incomplete,
                "total": f.successful + f.errored + f.incomplete},
            "requests_per_second": per_s(&f.requests_per_second, f.mean_rps),
            "request_concurrency": g(&f.concurrency),
            "request_latency": g(&f.request_latency_s),
            "request_streaming_iterations_count": g(&f.iterations),
            "prompt_token_count": g(&f.prompt_tokens),
            "output_token_count": g(&f.output_tokens),
            "total_token_count": g(&total_tokens),
            "time_to_first_token_ms": g(&f.ttft_ms),
            "time_per_output_token_ms": g(&f.tpot_ms),
            "inter_token_latency_ms": g(&f.itl_ms),
            "output_tokens_per_second": per_s(&f.output_tokens_per_second, f.mean_output_tps),
            "prompt_tokens_per_second": per_s(&Dist::default(), f.mean_prompt_tps),
            "tokens_per_second": per_s(&f.output_tokens_per_second, f.mean_output_tps + f.mean_prompt_tps),
            "turns": turns_json(&b.result),
            "slo_attainment": attainment,
            "slo_determined_requests": judged,
            "request_goodput": goodput,
        },
        "start_time": f.start,
        "end_time": f.end,
        "duration": f.duration,
        "warmup_duration": 0.0,
        "cooldown_duration": 0.0,
        "stampede": {
            "timed_from": "each request's intended start",
            "time_to_first_token_ms_from_send": stream_from_send(&b.result),
            "result": b.result,
        },
    })
}

/// A multi-turn benchmark's figures by turn (its requests' figures named `turn N`):
/// requests, time to first token (ms) and request latency (s); null otherwise.
fn turns_json(r: &RunResult) -> Value {
    let turns: Vec<Value> = (r.targets.iter())
        .filter(|t| t.name.starts_with("turn "))
        .map(|t| {
            let ms = |s: &stampede_engine::result::LatencyStats| {
                json!({"mean": s.mean_us / 1000.0, "median": s.at(50.0).unwrap_or(0) as f64 / 1000.0,
                    "p90": s.at(90.0).unwrap_or(0) as f64 / 1000.0, "p99": s.at(99.0).unwrap_or(0) as f64 / 1000.0,
                    "count": s.count})
            };
            json!({
                "turn": t.name.trim_start_matches("turn ").parse::<u64>().unwrap_or(0),
                "successful": t.statuses.range(200..300).map(|(_, n)| n).sum::<u64>(),
                "errored": t.completed + t.failed - t.statuses.range(200..300).map(|(_, n)| n).sum::<u64>(),
                "time_to_first_token_ms": t.first_event.as_ref().map(ms),
                "request_latency_s": {"mean": t.latency.mean_us / 1e6, "median": t.latency.at(50.0).unwrap_or(0) as f64 / 1e6},
            })
        })
        .collect();
    if turns.is_empty() {
        Value::Null
    } else {
        Value::Array(turns)
    }
}

fn stream_from_send(r: &RunResult) -> Value {
    r.histograms.stream.as_ref().map_or(Value::Null, |s| {
        Dist::of_hist(&s.first_event_uncorrected, 1000.0).json()
    })
}

/// A Unix time as GuideLLM's CSV writes it: `2026-11-30 07:38:57` (UTC).
fn console_time(unix: f64) -> String {
    let s = stampede_wire::date::rfc3339_ms((unix.max(0.0) * 1000.0) as u64);
    s.get(..19).unwrap_or_default().replace('T', " ")
}

/// The report object `benchmarks.json` holds.
pub fn json(r: &Report) -> Value {
    json!({
        "metadata": {"version": 2, "stampede_version": env!("CARGO_PKG_VERSION")},
        "config": {"metadata": {"labels": r.labels}, "spec": r.spec},
        "benchmarks": r.benchmarks.iter().enumerate().map(|(i, b)| benchmark_json(b, i, &r.isl)).collect::<Vec<_>>(),
        "conclusions": r.conclusion.iter().cloned().collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests;
