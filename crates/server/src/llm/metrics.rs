//! The mock LLM's `/metrics`, under vLLM's names: the batching engines' gauges
//! (requests running and waiting, KV-cache use), counters (tokens, preemptions,
//! finished requests, prefix-cache queries and hits) and histograms (time to first
//! token, in the queue, prefilling, decoding, end to end), summed over the server's
//! threads (an engine each) in Prometheus's text format.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// vLLM's latency buckets, seconds.
const BUCKETS: [f64; 22] = [
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
    20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
];

/// A Prometheus histogram of durations, lock-free.
#[derive(Debug, Default)]
struct Histogram {
    buckets: [AtomicU64; BUCKETS.len()],
    count: AtomicU64,
    sum_us: AtomicU64,
}

impl Histogram {
    fn observe(&self, d: Duration) {
        let s = d.as_secs_f64();
        if let Some(i) = BUCKETS.iter().position(|b| s <= *b) {
            self.buckets[i].fetch_add(1, Relaxed);
        }
        self.count.fetch_add(1, Relaxed);
        self.sum_us.fetch_add(d.as_micros() as u64, Relaxed);
    }

    fn render(&self, o: &mut String, name: &str, help: &str) {
        let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} histogram");
        let mut acc = 0;
        for (b, n) in BUCKETS.iter().zip(&self.buckets) {
            acc += n.load(Relaxed);
            let _ = writeln!(o, "{name}_bucket{{{LABEL},le=\"{b}\"}} {acc}");
        }
        let count = self.count.load(Relaxed);
        let _ = writeln!(o, "{name}_bucket{{{LABEL},le=\"+Inf\"}} {count}");
        let sum = self.sum_us.load(Relaxed) as f64 / 1e6;
        let _ = writeln!(
            o,
            "{name}_sum{{{LABEL}}} {sum}\n{name}_count{{{LABEL}}} {count}"
        );
    }
}

const LABEL: &str = "model_name=\"stampede-mock\"";

/// Every engine's figures, summed.
#[derive(Debug, Default)]
pub struct Metrics {
    running: AtomicI64,
    waiting: AtomicI64,
    kv_used: AtomicI64,
    kv_capacity: AtomicI64,
    prompt_tokens: AtomicU64,
    generation_tokens: AtomicU64,
    preemptions: AtomicU64,
    success: AtomicU64,
    prefix_queries: AtomicU64,
    prefix_hits: AtomicU64,
    ttft: Histogram,
    queue: Histogram,
    prefill: Histogram,
    decode: Histogram,
    e2e: Histogram,
    /// Each finished request's own times, where asked for.
    truth: Option<super::truth::TruthLog>,
}

/// A copy of the counters and gauges (tests read the engine's true figures so).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Snapshot {
    pub running: i64,
    pub waiting: i64,
    pub kv_used: i64,
    pub preemptions: u64,
    pub prompt_tokens: u64,
    pub generation_tokens: u64,
    pub success: u64,
    pub prefix_queries: u64,
    pub prefix_hits: u64,
}

/// An engine's gauges as it last published them: what it adds to the sums.
#[derive(Debug, Default, Clone, Copy)]
pub struct Published {
    running: i64,
    waiting: i64,
    kv_used: i64,
    kv_capacity: i64,
}

impl Metrics {
    /// Figures that also append each finished request to `log`.
    pub fn with_truth(log: super::truth::TruthLog) -> Metrics {
        Metrics {
            truth: Some(log),
            ..Metrics::default()
        }
    }

    /// The log of each request's times, where one was asked for.
    pub fn truth(&self) -> Option<&super::truth::TruthLog> {
        self.truth.as_ref()
    }

    /// An engine's gauges now: the sums move by the change since its last.
    pub fn gauges(
        &self,
        was: &mut Published,
        running: u64,
        waiting: u64,
        kv_used: u32,
        kv_capacity: u32,
    ) {
        let now = Published {
            running: running as i64,
            waiting: waiting as i64,
            kv_used: i64::from(kv_used),
            kv_capacity: i64::from(kv_capacity),
        };
        self.running.fetch_add(now.running - was.running, Relaxed);
        self.waiting.fetch_add(now.waiting - was.waiting, Relaxed);
        self.kv_used.fetch_add(now.kv_used - was.kv_used, Relaxed);
        self.kv_capacity
            .fetch_add(now.kv_capacity - was.kv_capacity, Relaxed);
        *was = now;
    }

    pub fn prompt_tokens(&self, n: u32) {
        self.prompt_tokens.fetch_add(u64::from(n), Relaxed);
    }

    pub fn generated(&self, n: u64) {
        self.generation_tokens.fetch_add(n, Relaxed);
    }

    pub fn preempted(&self) {
        self.preemptions.fetch_add(1, Relaxed);
    }

    pub fn prefix(&self, queried: u32, hit: u32) {
        self.prefix_queries.fetch_add(u64::from(queried), Relaxed);
        self.prefix_hits.fetch_add(u64::from(hit), Relaxed);
    }

    /// A first token: `ttft` after the arrival, `prefill` after the first scheduling.
    pub fn first_token(&self, ttft: Duration, prefill: Duration) {
        self.ttft.observe(ttft);
        self.prefill.observe(prefill);
        self.queue.observe(ttft.saturating_sub(prefill));
    }

    /// A completion finished: `e2e` after its arrival, `decode` after its first token.
    pub fn finished(&self, e2e: Duration, decode: Duration) {
        self.success.fetch_add(1, Relaxed);
        self.e2e.observe(e2e);
        self.decode.observe(decode);
    }

    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            running: self.running.load(Relaxed),
            waiting: self.waiting.load(Relaxed),
            kv_used: self.kv_used.load(Relaxed),
            preemptions: self.preemptions.load(Relaxed),
            prompt_tokens: self.prompt_tokens.load(Relaxed),
            generation_tokens: self.generation_tokens.load(Relaxed),
            success: self.success.load(Relaxed),
            prefix_queries: self.prefix_queries.load(Relaxed),
            prefix_hits: self.prefix_hits.load(Relaxed),
        }
    }

    /// The exposition, as vLLM's `/metrics` writes it.
    pub fn render(&self) -> String {
        let mut o = String::with_capacity(8192);
        let s = self.snapshot();
        let cap = self.kv_capacity.load(Relaxed).max(1) as f64;
        let usage = s.kv_used as f64 / cap;
        let gauge = |o: &mut String, name: &str, help: &str, v: f64| {
            let _ = writeln!(
                o,
                "# HELP {name} {help}\n# TYPE {name} gauge\n{name}{{{LABEL}}} {v}"
            );
        };
        gauge(
            &mut o,
            "vllm:num_requests_running",
            "Number of requests in model execution batches.",
            s.running as f64,
        );
        gauge(
            &mut o,
            "vllm:num_requests_waiting",
            "Number of requests waiting to be processed.",
            s.waiting as f64,
        );
        gauge(
            &mut o,
            "vllm:kv_cache_usage_perc",
            "KV-cache usage. 1 means 100 percent usage.",
            usage,
        );
        gauge(
            &mut o,
            "vllm:gpu_cache_usage_perc",
            "GPU KV-cache usage. 1 means 100 percent usage.",
            usage,
        );
        let counter = |o: &mut String, name: &str, help: &str, v: u64, extra: &str| {
            let _ = writeln!(
                o,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name}{{{LABEL}{extra}}} {v}"
            );
        };
        counter(
            &mut o,
            "vllm:num_preemptions_total",
            "Cumulative number of preemption from the engine.",
            s.preemptions,
            "",
        );
        counter(
            &mut o,
            "vllm:prompt_tokens_total",
            "Number of prefill tokens processed.",
            s.prompt_tokens,
            "",
        );
        counter(
            &mut o,
            "vllm:generation_tokens_total",
            "Number of generation tokens processed.",
            s.generation_tokens,
            "",
        );
        counter(
            &mut o,
            "vllm:request_success_total",
            "Count of successfully processed requests.",
            s.success,
            ",finished_reason=\"length\"",
        );
        counter(
            &mut o,
            "vllm:prefix_cache_queries_total",
            "Prefix cache queries, in terms of number of queried tokens.",
            s.prefix_queries,
            "",
        );
        counter(
            &mut o,
            "vllm:prefix_cache_hits_total",
            "Prefix cache hits, in terms of number of cached tokens.",
            s.prefix_hits,
            "",
        );
        self.ttft.render(
            &mut o,
            "vllm:time_to_first_token_seconds",
            "Histogram of time to first token in seconds.",
        );
        self.queue.render(
            &mut o,
            "vllm:request_queue_time_seconds",
            "Histogram of time spent in WAITING phase for request.",
        );
        self.prefill.render(
            &mut o,
            "vllm:request_prefill_time_seconds",
            "Histogram of time spent in PREFILL phase for request.",
        );
        self.decode.render(
            &mut o,
            "vllm:request_decode_time_seconds",
            "Histogram of time spent in DECODE phase for request.",
        );
        self.e2e.render(
            &mut o,
            "vllm:e2e_request_latency_seconds",
            "Histogram of e2e request latency in seconds.",
        );
        o
    }
}
