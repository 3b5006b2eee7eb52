//! The server's own metrics during a run (`--server-metrics URL`): a thread of its
//! own GETs the server's Prometheus endpoint every interval and keeps, second by
//! second, the series that say why a serving engine slows — vLLM's, SGLang's and
//! TGI's names are known, any other is kept by name when asked for. A label set's
//! values are summed by metric name (every model, every engine).
//!
//! The run never waits on it: each scrape has a timeout below its interval (2 s at
//! most), an answer past [`MAX_BODY`] is refused unread beyond that, the series and
//! samples kept are bounded ([`MAX_SERIES`], [`MAX_SAMPLES`]); after the run one
//! scrape more takes the final figures, waited for no longer than its timeout and
//! the one under way. Failures are counted by why, and shown with the result.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use stampede_engine::result::ServerMetrics;

use crate::post::{Client, Endpoint, PushError, UrlError};

/// The most bytes of one answer read.
pub const MAX_BODY: usize = 8 << 20;
/// The most series kept.
pub const MAX_SERIES: usize = 64;
/// The most samples kept per series (a day at one a second).
pub const MAX_SAMPLES: usize = 86_400;

/// The series kept without being asked for: vLLM's, SGLang's and TGI's engines'
/// queues, batches, caches, tokens and phase times.
pub const KNOWN: &[&str] = &[
    "vllm:num_requests_running",
    "vllm:num_requests_waiting",
    "vllm:kv_cache_usage_perc",
    "vllm:gpu_cache_usage_perc",
    "vllm:num_preemptions_total",
    "vllm:prompt_tokens_total",
    "vllm:generation_tokens_total",
    "vllm:request_success_total",
    "vllm:prefix_cache_queries_total",
    "vllm:prefix_cache_hits_total",
    "vllm:time_to_first_token_seconds_sum",
    "vllm:time_to_first_token_seconds_count",
    "vllm:request_queue_time_seconds_sum",
    "vllm:request_queue_time_seconds_count",
    "vllm:request_prefill_time_seconds_sum",
    "vllm:request_prefill_time_seconds_count",
    "vllm:request_decode_time_seconds_sum",
    "vllm:request_decode_time_seconds_count",
    "sglang:num_running_reqs",
    "sglang:num_queue_reqs",
    "sglang:num_used_tokens",
    "sglang:token_usage",
    "sglang:cache_hit_rate",
    "sglang:gen_throughput",
    "sglang:prompt_tokens_total",
    "sglang:generation_tokens_total",
    "tgi_queue_size",
    "tgi_batch_current_size",
    "tgi_batch_current_max_tokens",
    "tgi_request_count",
    "tgi_request_success",
    "tgi_request_queue_duration_sum",
    "tgi_request_queue_duration_count",
];

/// What to scrape and how often.
#[derive(Clone)]
pub struct ScrapeSpec {
    pub url: String,
    pub every: Duration,
    /// Series kept besides [`KNOWN`].
    pub names: Vec<String>,
    /// Handed each scrape's values as they come (the live outputs, see
    /// [`crate::Hub::server_sample`]).
    pub forward: Option<Forward>,
}

/// Where each scrape's values go as they come.
pub type Forward = Arc<dyn Fn(Vec<(String, f64)>) + Send + Sync>;

impl std::fmt::Debug for ScrapeSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScrapeSpec")
            .field("url", &self.url)
            .field("every", &self.every)
            .field("names", &self.names)
            .field("forward", &self.forward.is_some())
            .finish()
    }
}

/// A scrape under way for the length of a run.
pub struct Scraper {
    state: Arc<Mutex<ServerMetrics>>,
    stop: Arc<AtomicBool>,
    /// Told when the last scrape (the one after the run) is kept.
    done: std::sync::mpsc::Receiver<()>,
    timeout: Duration,
}

impl Scraper {
    /// Starts scraping now; the URL's error names what is wrong with it.
    pub fn start(spec: &ScrapeSpec) -> Result<Scraper, UrlError> {
        let endpoint = Endpoint::parse(&spec.url)?;
        let mut client = Client::new(endpoint);
        client.timeout =
            (spec.every * 8 / 10).clamp(Duration::from_millis(100), Duration::from_secs(2));
        let state = Arc::new(Mutex::new(ServerMetrics {
            url: spec.url.clone(),
            every_ms: spec.every.as_millis() as u64,
            ..Default::default()
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let (every, names) = (
            spec.every.max(Duration::from_millis(100)),
            spec.names.clone(),
        );
        let forward = spec.forward.clone();
        let (s, st) = (state.clone(), stop.clone());
        let (done_tx, done) = std::sync::mpsc::channel();
        let timeout = client.timeout;
        std::thread::Builder::new()
            .name("stampede-scrape".into())
            .spawn(move || {
                let t0 = Instant::now();
                loop {
                    // Once told to stop, one scrape more: the run's last figures.
                    let last = st.load(Ordering::Relaxed);
                    let began = Instant::now();
                    let got = client.get(MAX_BODY);
                    let at = (began - t0).as_secs_f64();
                    let got = got
                        .map_err(|e| Failure::of(&e))
                        .and_then(|b| parse(&b, &names));
                    if let (Ok(values), Some(f)) = (&got, &forward) {
                        f(values.iter().map(|(k, v)| (k.clone(), *v)).collect());
                    }
                    let mut m = s.lock().unwrap_or_else(|p| p.into_inner());
                    match got {
                        Ok(values) => {
                            m.scrapes += 1;
                            keep(&mut m, at, values);
                        }
                        Err(why) => *m.failed.entry(why.to_string()).or_default() += 1,
                    }
                    drop(m);
                    if last {
                        let _ = done_tx.send(());
                        return;
                    }
                    let next = began + every;
                    while Instant::now() < next && !st.load(Ordering::Relaxed) {
                        std::thread::sleep(Duration::from_millis(20).min(every));
                    }
                }
            })
            .map_err(|_| UrlError::NoHost(spec.url.clone()))?;
        Ok(Scraper {
            state,
            stop,
            done,
            timeout,
        })
    }

    /// Stops scraping after one scrape more (the figures at the run's end), waited
    /// for no longer than a scrape's timeout and the one under way, and hands over
    /// what was scraped.
    pub fn finish(self) -> ServerMetrics {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self
            .done
            .recv_timeout(self.timeout * 2 + Duration::from_millis(50));
        let m = self.state.lock().unwrap_or_else(|p| p.into_inner());
        m.clone()
    }
}

/// Why a scrape failed, in a word or two (the result counts them by these words).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum Failure {
    #[error("timeout")]
    Timeout,
    #[error("refused")]
    Refused,
    #[error("connection failed")]
    Connection,
    #[error("status {0}")]
    Status(u16),
    #[error("too large")]
    TooLarge,
    #[error("unresolved")]
    Unresolved,
    #[error("malformed answer")]
    Malformed,
    #[error("not Prometheus's text")]
    NotText,
}

impl Failure {
    fn of(e: &PushError) -> Failure {
        match e {
            PushError::Io { source, .. } => match source.kind() {
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => Failure::Timeout,
                std::io::ErrorKind::ConnectionRefused => Failure::Refused,
                _ => Failure::Connection,
            },
            PushError::Status { status, .. } => Failure::Status(*status),
            PushError::TooLarge(_) => Failure::TooLarge,
            PushError::Resolve { .. } | PushError::NoAddress(_) => Failure::Unresolved,
            _ => Failure::Malformed,
        }
    }
}

/// Appends one scrape's values at `at` seconds, within the bounds.
fn keep(m: &mut ServerMetrics, at: f64, values: BTreeMap<String, f64>) {
    let at = (at * 1000.0).round() / 1000.0;
    for (name, v) in values {
        let full = m.series.len() >= MAX_SERIES && !m.series.contains_key(&name);
        let s = m.series.entry(name);
        match s {
            std::collections::btree_map::Entry::Occupied(mut o) if o.get().len() < MAX_SAMPLES => {
                o.get_mut().push([at, v])
            }
            std::collections::btree_map::Entry::Vacant(e) if !full => {
                e.insert(vec![[at, v]]);
            }
            _ => m.dropped += 1,
        }
    }
}

/// The wanted series of a Prometheus text exposition, each summed over its label
/// sets; an answer with no sample line at all is not one.
fn parse(body: &[u8], names: &[String]) -> Result<BTreeMap<String, f64>, Failure> {
    let text = std::str::from_utf8(body).map_err(|_| Failure::NotText)?;
    let mut out = BTreeMap::new();
    let mut samples = 0usize;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let name_end = line.find(['{', ' ', '\t']).unwrap_or(line.len());
        let name = &line[..name_end];
        let rest = &line[name_end..];
        let rest = match rest.strip_prefix('{') {
            Some(r) => match label_end(r) {
                Some(i) => &r[i + 1..],
                None => continue,
            },
            None => rest,
        };
        let Some(v) = rest
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<f64>().ok())
        else {
            continue;
        };
        samples += 1;
        if !v.is_finite() || !(KNOWN.contains(&name) || names.iter().any(|n| n == name)) {
            continue;
        }
        *out.entry(name.to_string()).or_insert(0.0) += v;
    }
    if samples == 0 {
        return Err(Failure::NotText);
    }
    Ok(out)
}

/// Where a label set's closing brace is, quotes and escapes respected.
fn label_end(s: &str) -> Option<usize> {
    let mut quoted = false;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            '}' if !quoted => return Some(i),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_summed_over_label_sets_and_the_unwanted_left_out() {
        let text = "# HELP vllm:num_requests_waiting Waiting.\n\
            # TYPE vllm:num_requests_waiting gauge\n\
            vllm:num_requests_waiting{model_name=\"a\",engine=\"0\"} 3\n\
            vllm:num_requests_waiting{model_name=\"b}\\\"x\",engine=\"1\"} 4 1700000000000\n\
            other_metric 9\n\
            my_own{x=\"1\"} 2.5\n\
            vllm:kv_cache_usage_perc{model_name=\"a\"} NaN\n";
        let m = parse(text.as_bytes(), &["my_own".into()]).unwrap();
        assert_eq!(m.get("vllm:num_requests_waiting"), Some(&7.0));
        assert_eq!(m.get("my_own"), Some(&2.5));
        assert!(!m.contains_key("other_metric") && !m.contains_key("vllm:kv_cache_usage_perc"));
        assert_eq!(parse(b"<html>hello</html>", &[]), Err(Failure::NotText));
        assert_eq!(parse(&[0xff, 0xfe], &[]), Err(Failure::NotText));
    }

    #[test]
    fn series_and_samples_are_bounded() {
        let mut m = ServerMetrics::default();
        for i in 0..(MAX_SERIES + 5) {
            keep(&mut m, 0.0, BTreeMap::from([(format!("s{i}"), 1.0)]));
        }
        assert_eq!(m.series.len(), MAX_SERIES);
        assert_eq!(m.dropped, 5);
    }

    /// An endpoint that never answers costs failed scrapes, not a wait: finishing
    /// takes what was scraped at once.
    #[test]
    fn a_silent_endpoint_is_counted_and_never_waited_for() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/metrics", l.local_addr().unwrap());
        let held = std::thread::spawn(move || {
            let c = l.accept().map(|(c, _)| c);
            std::thread::sleep(Duration::from_secs(3));
            drop(c);
        });
        let s = Scraper::start(&ScrapeSpec {
            url,
            every: Duration::from_millis(200),
            names: Vec::new(),
            forward: None,
        })
        .unwrap();
        std::thread::sleep(Duration::from_millis(700));
        let t = Instant::now();
        let m = s.finish();
        // At most the scrape under way and the last one, 160 ms each.
        assert!(
            t.elapsed() < Duration::from_millis(600),
            "{:?}",
            t.elapsed()
        );
        assert_eq!(m.scrapes, 0);
        assert!(m.failed.get("timeout").copied().unwrap_or(0) >= 1, "{m:?}");
        held.join().unwrap();
    }
}
