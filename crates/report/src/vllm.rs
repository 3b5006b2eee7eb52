//! `stampede vllm bench serve`'s outputs, in vLLM's layout: its "Serving Benchmark
//! Result" ([`report`]) and its JSON result ([`result_json`]: the summary's keys,
//! each metric's mean, median, standard deviation and percentiles in ms, without the
//! per-request lists), for generating backends and for embeddings (whose requests
//! have no tokens to time: E2EL only). TTFT and E2EL are timed from each request's
//! intended start; what vLLM would print, timed from the send, is given beside them.
//! The peaks are per second of the run: output tokens (the stream events that
//! carried text) and requests in flight.

use stampede_engine::{percentile_linear, Hist, RunResult};

/// The metrics the report can give percentiles of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    Ttft,
    Tpot,
    Itl,
    E2el,
}

impl Metric {
    pub fn name(self) -> &'static str {
        match self {
            Metric::Ttft => "ttft",
            Metric::Tpot => "tpot",
            Metric::Itl => "itl",
            Metric::E2el => "e2el",
        }
    }

    pub fn header(self) -> &'static str {
        match self {
            Metric::Ttft => "Time to First Token",
            Metric::Tpot => "Time per Output Token (excl. 1st token)",
            Metric::Itl => "Inter-token Latency",
            Metric::E2el => "End-to-end Latency",
        }
    }
}

/// What the report needs besides the result: the run as vLLM's flags set it.
pub struct Info {
    pub backend: String,
    pub label: String,
    pub model: String,
    pub tokenizer: String,
    pub num_prompts: usize,
    pub rate: Option<f64>,
    pub burstiness: f64,
    pub max_concurrency: Option<usize>,
    pub input_tokens: u64,
    pub metrics: Vec<Metric>,
    pub percentiles: Vec<f64>,
    /// An embeddings backend: requests answered whole, no tokens timed.
    pub pooling: bool,
    /// The ramp-up, when the flags asked for one.
    pub ramp: Option<RampInfo>,
    /// `--metadata`'s pairs, written into the JSON result.
    pub metadata: Vec<(String, String)>,
}

/// A ramp-up of the request rate, as the JSON result tells it.
pub struct RampInfo {
    /// `linear` or `exponential`.
    pub strategy: String,
    pub start: f64,
    pub end: f64,
    /// Each whole rate reached and when, seconds from the start.
    pub changes: Vec<(u64, f64)>,
}

/// `h`'s value at percentile `p`, in ms, as vLLM computes it (numpy's linear
/// interpolation between ranks; its median is the 50th).
fn ms_at(h: &Hist, p: f64) -> f64 {
    percentile_linear(&h.0, p) / 1000.0
}

/// The metric's histograms: from the intended start, and (TTFT, E2EL) from the send.
fn hists(r: &RunResult, m: Metric) -> (Hist, Option<Hist>) {
    let s = r.histograms.stream.clone().unwrap_or_default();
    match m {
        Metric::Ttft => (s.first_event, Some(s.first_event_uncorrected)),
        Metric::Tpot => (s.tpot, None),
        Metric::Itl => (s.gap, None),
        Metric::E2el => (
            r.histograms.latency.clone(),
            Some(r.histograms.uncorrected.clone()),
        ),
    }
}

/// The counts and rates the report and the JSON result share.
struct Totals {
    completed: u64,
    output: u64,
    duration: f64,
    goodput: Option<f64>,
    /// The most output tokens (events that carried text) in one second of the run.
    peak_tokens: u64,
    /// The most requests in flight at once.
    peak_in_flight: u64,
}

fn totals(r: &RunResult) -> Totals {
    let tokens = r.protocols.stream.as_ref().and_then(|s| s.tokens.as_ref());
    Totals {
        completed: r.statuses.range(200..300).map(|(_, n)| n).sum(),
        output: tokens.map_or(0, |t| t.total),
        duration: r.duration_s,
        goodput: tokens.and_then(|t| t.goodput_rps),
        peak_tokens: r.intervals.iter().map(|i| i.events).max().unwrap_or(0),
        peak_in_flight: r.intervals.iter().map(|i| i.in_flight).max().unwrap_or(0),
    }
}

fn per_s(n: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        n as f64 / secs
    } else {
        0.0
    }
}

fn percent_word(p: f64) -> String {
    if p.fract() == 0.0 {
        format!("{}", p as u64)
    } else {
        format!("{p}")
    }
}

/// vLLM's "Serving Benchmark Result", in its layout and units.
pub fn report(r: &RunResult, info: &Info) -> String {
    use std::fmt::Write as _;
    let t = totals(r);
    let mut o = String::new();
    let line = |o: &mut String, k: &str, v: String| {
        let _ = writeln!(o, "{k:<40} {v:<10}");
    };
    let _ = writeln!(o, "{:=^50}", " Serving Benchmark Result ");
    line(&mut o, "Successful requests:", t.completed.to_string());
    if r.requests.failed > 0 {
        line(&mut o, "Failed requests:", r.requests.failed.to_string());
    }
    if let Some(c) = info.max_concurrency {
        line(&mut o, "Maximum request concurrency:", c.to_string());
    }
    if let Some(rate) = info.rate {
        line(
            &mut o,
            "Request rate configured (RPS):",
            format!("{rate:.2}"),
        );
    }
    line(
        &mut o,
        "Benchmark duration (s):",
        format!("{:.2}", t.duration),
    );
    line(&mut o, "Total input tokens:", info.input_tokens.to_string());
    if !info.pooling {
        line(&mut o, "Total generated tokens:", t.output.to_string());
    }
    line(
        &mut o,
        "Request throughput (req/s):",
        format!("{:.2}", per_s(t.completed, t.duration)),
    );
    if let Some(g) = t.goodput {
        line(&mut o, "Request goodput (req/s):", format!("{g:.2}"));
    }
    if !info.pooling {
        line(
            &mut o,
            "Output token throughput (tok/s):",
            format!("{:.2}", per_s(t.output, t.duration)),
        );
        line(
            &mut o,
            "Peak output token throughput (tok/s):",
            format!("{:.2}", t.peak_tokens as f64),
        );
        line(
            &mut o,
            "Peak concurrent requests:",
            format!("{:.2}", t.peak_in_flight as f64),
        );
    }
    line(
        &mut o,
        "Total token throughput (tok/s):",
        format!("{:.2}", per_s(t.output + info.input_tokens, t.duration)),
    );
    for &m in &info.metrics {
        let name = m.name().to_uppercase();
        let (h, sent) = hists(r, m);
        let _ = writeln!(o, "{:-^50}", m.header());
        line(
            &mut o,
            &format!("Mean {name} (ms):"),
            format!("{:.2}", h.0.mean() / 1000.0),
        );
        line(
            &mut o,
            &format!("Median {name} (ms):"),
            format!("{:.2}", ms_at(&h, 50.0)),
        );
        for &p in &info.percentiles {
            line(
                &mut o,
                &format!("P{} {name} (ms):", percent_word(p)),
                format!("{:.2}", ms_at(&h, p)),
            );
        }
        if let Some(s) = sent {
            // What vLLM would print: timed from the send, not from the intended start.
            line(
                &mut o,
                &format!("Mean {name} from the send (ms):"),
                format!("{:.2}", s.0.mean() / 1000.0),
            );
            for &p in &info.percentiles {
                line(
                    &mut o,
                    &format!("P{} {name} from the send (ms):", percent_word(p)),
                    format!("{:.2}", ms_at(&s, p)),
                );
            }
        }
    }
    let _ = writeln!(o, "{}", "=".repeat(50));
    if let Some(m) = &r.server {
        let _ = writeln!(o, "{:-^50}", "The server's metrics");
        o.push_str(&crate::server::lines(m, ""));
        if let Some(l) = r.limit.as_ref().filter(|l| l.server_queue.is_some()) {
            let _ = writeln!(o, "Limit: {}", l.reason);
        }
    }
    o
}

/// vLLM's JSON result: its summary's keys, each metric's mean, median, standard
/// deviation and percentiles in ms (from the intended start; the `_from_send`
/// keys are what vLLM would have written), without its per-request lists.
pub fn result_json(r: &RunResult, info: &Info) -> serde_json::Value {
    let t = totals(r);
    let mut v = serde_json::json!({
        "date": date_now(),
        "endpoint_type": info.backend,
        "backend": info.backend,
        "label": info.label,
        "model_id": info.model,
        "tokenizer_id": info.tokenizer,
        "num_prompts": info.num_prompts,
        "request_rate": info.rate.map_or(serde_json::Value::from("inf"), serde_json::Value::from),
        "burstiness": info.burstiness,
        "max_concurrency": info.max_concurrency,
        "duration": t.duration,
        "completed": t.completed,
        "failed": r.requests.failed,
        "total_input_tokens": info.input_tokens,
        "total_output_tokens": t.output,
        "request_throughput": per_s(t.completed, t.duration),
        "request_goodput": t.goodput,
        "output_throughput": per_s(t.output, t.duration),
        "total_token_throughput": per_s(t.output + info.input_tokens, t.duration),
        "max_output_tokens_per_s": t.peak_tokens as f64,
        "max_concurrent_requests": t.peak_in_flight,
    });
    for (k, x) in &info.metadata {
        v[k] = x.as_str().into();
    }
    if let Some(ramp) = &info.ramp {
        v["ramp_up_strategy"] = ramp.strategy.as_str().into();
        v["ramp_up_start_rps"] = ramp.start.into();
        v["ramp_up_end_rps"] = ramp.end.into();
        v["rps_change_events"] = (ramp.changes.iter())
            .map(|(rps, at)| {
                let ms = r.started_unix_ms + (at * 1000.0) as u64;
                serde_json::json!({"rps": rps, "timestamp": iso_ms(ms)})
            })
            .collect();
    }
    let pooled = [Metric::E2el];
    let all = [Metric::Ttft, Metric::Tpot, Metric::Itl, Metric::E2el];
    if info.pooling {
        for k in [
            "total_output_tokens",
            "output_throughput",
            "max_output_tokens_per_s",
            "max_concurrent_requests",
            "request_goodput",
        ] {
            if let Some(o) = v.as_object_mut() {
                o.remove(k);
            }
        }
    }
    for &m in if info.pooling { &pooled[..] } else { &all[..] } {
        let (h, sent) = hists(r, m);
        let n = m.name();
        v[format!("mean_{n}_ms")] = (h.0.mean() / 1000.0).into();
        v[format!("median_{n}_ms")] = ms_at(&h, 50.0).into();
        v[format!("std_{n}_ms")] = (h.0.stdev() / 1000.0).into();
        for &p in &info.percentiles {
            v[format!("p{}_{n}_ms", percent_word(p))] = ms_at(&h, p).into();
        }
        if let Some(s) = sent {
            v[format!("mean_{n}_ms_from_send")] = (s.0.mean() / 1000.0).into();
            for &p in &info.percentiles {
                v[format!("p{}_{n}_ms_from_send", percent_word(p))] = ms_at(&s, p).into();
            }
        }
    }
    v
}

/// `ms` since the epoch as ISO 8601 without a zone (`2026-11-30T05:01:02.345`, UTC),
/// as vLLM stamps its rate changes.
pub(crate) fn iso_ms(ms: u64) -> String {
    let mut t = stampede_wire::date::rfc3339_ms(ms);
    t.pop();
    t
}

/// Now, as vLLM names its results: `YYYYMMDD-HHMMSS` (UTC here).
pub fn date_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let (y, m, d) = stampede_wire::date::civil_from_days(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    format!(
        "{y:04}{m:02}{d:02}-{:02}{:02}{:02}",
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}
