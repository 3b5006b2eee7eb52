//! The mock LLM's batching engine (`serve --llm-engine`): a deterministic model of
//! how a continuous-batching server (vLLM's scheduler) serves completions, so that
//! tests and benchmarks know the true time to first token and between tokens under
//! load, and the metrics a real server exports have true values.
//!
//! The engine runs in steps. Each step is formed at the previous one's end from what
//! has arrived by then: every running sequence whose prompt is in decodes one token
//! (one of the step's token budget each), sequences part-way through their prompt
//! prefill their next chunk, then waiting requests are admitted in arrival order
//! while the budget, the sequence cap and the KV cache allow (chunked prefill: a
//! prompt longer than the budget left is prefilled over several steps). A step
//! lasts `step + per_seq × decodes + per_prefill_token × prefilled tokens`; at its
//! end every decoding sequence has one more token, and a sequence whose prompt is
//! all in has its first. The KV cache holds each running sequence's prompt and
//! output tokens: a decode that finds it full preempts the latest admitted sequence,
//! which waits again at the head of the queue and recomputes its prompt and output
//! when readmitted. With the prefix cache, a prompt's leading blocks already
//! computed (by their words' hash) are not prefilled again.
//!
//! Nothing runs on its own: the engine is advanced to "now" whenever the event loop
//! asks it something, so one engine per event-loop thread (a GPU each) costs nothing
//! while idle. A completion whose client went away runs to its end.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use super::metrics::{Metrics, Published};

/// The engine's shape and costs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineConfig {
    /// A step's fixed cost.
    pub step: Duration,
    /// Added per sequence decoded in a step.
    pub per_seq: Duration,
    /// Added per prompt token prefilled in a step.
    pub per_prefill_token: Duration,
    /// Tokens one step schedules at most (vLLM's `max_num_batched_tokens`).
    pub token_budget: u32,
    /// Sequences running at once at most (`max_num_seqs`).
    pub max_seqs: u32,
    /// Tokens the KV cache holds.
    pub kv_tokens: u32,
    /// Tokens per KV block: the prefix cache's unit.
    pub block: u32,
    /// Reuse computed prompt blocks across requests.
    pub prefix_cache: bool,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            step: Duration::from_millis(10),
            per_seq: Duration::from_micros(20),
            per_prefill_token: Duration::from_micros(50),
            token_budget: 2048,
            max_seqs: 256,
            kv_tokens: 262_144,
            block: 16,
            prefix_cache: false,
        }
    }
}

/// Most block hashes the prefix cache keeps (the oldest go first).
const MAX_CACHED_BLOCKS: usize = 1 << 16;

/// Most sequences admitted and not finished: a request past it is refused (429).
pub const MAX_SEQS: usize = 65_536;

#[derive(Debug)]
struct Seq {
    arrived: Instant,
    prompt: u32,
    max: u32,
    /// Output tokens made so far.
    produced: u32,
    /// Tokens of the prompt (and, after a preemption, of the output made) now in the
    /// KV cache; the sequence decodes once this reaches `target`.
    prefilled: u32,
    target: u32,
    /// The prompt's blocks' hashes (each of the words up to its end).
    blocks: Vec<u64>,
    scheduled: Option<Instant>,
    first: Option<Instant>,
    /// KV tokens held.
    kv: u32,
    /// When its last token was made, and the gaps between its tokens so far (kept
    /// only for the truth log).
    last: Option<Instant>,
    gaps: Vec<Duration>,
}

/// What one step does for a sequence.
#[derive(Debug, Clone, Copy)]
enum Work {
    Decode,
    Prefill(u32),
}

#[derive(Debug)]
struct Step {
    end: Instant,
    work: Vec<(u32, Work)>,
}

/// One engine: its queue, its running batch, its cache, its step under way.
#[derive(Debug)]
pub struct Engine {
    cfg: EngineConfig,
    seqs: HashMap<u32, Seq>,
    waiting: VecDeque<u32>,
    /// In admission order: the last is preempted first.
    running: Vec<u32>,
    step: Option<Step>,
    kv_used: u32,
    cached: HashSet<u64>,
    cached_order: VecDeque<u64>,
    next_id: u32,
    metrics: std::sync::Arc<Metrics>,
    published: Published,
    /// The truth log's lines of the step being completed.
    truth: String,
}

impl Engine {
    pub fn new(cfg: EngineConfig, metrics: std::sync::Arc<Metrics>) -> Engine {
        let mut e = Engine {
            cfg,
            seqs: HashMap::new(),
            waiting: VecDeque::new(),
            running: Vec::new(),
            step: None,
            kv_used: 0,
            cached: HashSet::new(),
            cached_order: VecDeque::new(),
            next_id: 0,
            metrics,
            published: Published::default(),
            truth: String::new(),
        };
        e.publish();
        e
    }

    /// A request arrives at `now` with a prompt of `prompt` tokens (`blocks`: its
    /// whole blocks' hashes) asking for `max` tokens; `None` when the engine holds
    /// [`MAX_SEQS`] already.
    pub fn admit(&mut self, now: Instant, prompt: u32, max: u32, blocks: Vec<u64>) -> Option<u32> {
        self.advance(now);
        if self.seqs.len() >= MAX_SEQS {
            return None;
        }
        self.next_id = self.next_id.wrapping_add(1);
        let id = self.next_id;
        let prompt = prompt.max(1);
        self.seqs.insert(
            id,
            Seq {
                arrived: now,
                prompt,
                max: max.max(1),
                produced: 0,
                prefilled: 0,
                target: prompt,
                blocks,
                scheduled: None,
                first: None,
                kv: 0,
                last: None,
                gaps: Vec::new(),
            },
        );
        self.waiting.push_back(id);
        self.metrics.prompt_tokens(prompt);
        if self.step.is_none() {
            self.form(now);
        }
        self.publish();
        Some(id)
    }

    /// Whether sequence `id` has made `need` tokens by `now`: `None` when it has
    /// (or has finished and gone), else when to ask again (the step's end).
    pub fn poll(&mut self, id: u32, need: u32, now: Instant) -> Option<Instant> {
        self.advance(now);
        match self.seqs.get(&id) {
            Some(s) if s.produced < need => Some(self.step.as_ref().map_or(now, |st| st.end)),
            _ => None,
        }
    }

    /// Runs every step that has ended by `now`.
    pub fn advance(&mut self, now: Instant) {
        while let Some(end) = self.step.as_ref().map(|s| s.end).filter(|e| *e <= now) {
            self.complete(end);
            self.form(end);
        }
        self.publish();
    }

    /// The step ending at `at` is done: tokens made, finished sequences gone.
    fn complete(&mut self, at: Instant) {
        let Some(step) = self.step.take() else {
            return;
        };
        let mut made = 0u64;
        let logged = self.metrics.truth().is_some();
        for (id, work) in step.work {
            let Some(s) = self.seqs.get_mut(&id) else {
                continue;
            };
            let token = match work {
                Work::Decode => true,
                Work::Prefill(n) => {
                    s.prefilled += n;
                    s.prefilled >= s.target
                }
            };
            if !token {
                continue;
            }
            if s.produced == 0 {
                if s.prefilled >= s.target && self.cfg.prefix_cache {
                    for &h in &s.blocks {
                        if self.cached.insert(h) {
                            self.cached_order.push_back(h);
                        }
                    }
                }
                s.first = Some(at);
                let sched = s.scheduled.unwrap_or(at);
                self.metrics.first_token(at - s.arrived, at - sched);
            }
            s.produced += 1;
            made += 1;
            if logged {
                if let Some(last) = s.last {
                    s.gaps.push(at - last);
                }
                s.last = Some(at);
            }
            if s.produced >= s.max {
                self.kv_used -= s.kv;
                let s = self.seqs.remove(&id).expect("present");
                self.running.retain(|r| *r != id);
                let first = s.first.unwrap_or(at);
                self.metrics.finished(at - s.arrived, at - first);
                if logged {
                    super::truth::line(&mut self.truth, first - s.arrived, at - s.arrived, &s.gaps);
                }
            }
        }
        if let (Some(log), false) = (self.metrics.truth(), self.truth.is_empty()) {
            log.append(&self.truth);
            self.truth.clear();
        }
        while self.cached_order.len() > MAX_CACHED_BLOCKS {
            if let Some(h) = self.cached_order.pop_front() {
                self.cached.remove(&h);
            }
        }
        self.metrics.generated(made);
    }

    /// Forms the step that begins at `at` (none when there is nothing to do).
    fn form(&mut self, at: Instant) {
        let cfg = self.cfg;
        let mut budget = cfg.token_budget.max(1);
        let mut work = Vec::new();
        let (mut decodes, mut prefilled) = (0u32, 0u32);
        // Decodes first, each needing a KV slot for its token: a full cache preempts
        // the latest admitted sequence (this one, when it is the latest).
        let mut i = 0;
        while i < self.running.len() && budget > 0 {
            let id = self.running[i];
            let ready = self.seqs.get(&id).is_some_and(|s| s.prefilled >= s.target);
            if !ready {
                i += 1;
                continue;
            }
            while self.kv_used + 1 > cfg.kv_tokens && i < self.running.len() {
                let last = *self.running.last().expect("running");
                self.preempt(last);
            }
            if i >= self.running.len() {
                break;
            }
            if let Some(s) = self.seqs.get_mut(&id) {
                s.kv += 1;
            }
            self.kv_used += 1;
            work.push((id, Work::Decode));
            decodes += 1;
            budget -= 1;
            i += 1;
        }
        // Prompts part-way in go on.
        for &id in &self.running {
            if budget == 0 {
                break;
            }
            let Some(s) = self.seqs.get(&id) else {
                continue;
            };
            if s.prefilled < s.target {
                let n = (s.target - s.prefilled).min(budget);
                work.push((id, Work::Prefill(n)));
                prefilled += n;
                budget -= n;
            }
        }
        // Then the queue, in order, while there is room.
        while budget > 0 && (self.running.len() as u32) < cfg.max_seqs {
            let Some(&id) = self.waiting.front() else {
                break;
            };
            let s = self.seqs.get_mut(&id).expect("waiting");
            let hit = if cfg.prefix_cache && s.produced == 0 {
                let blocks = (s.blocks.iter())
                    .take_while(|h| self.cached.contains(h))
                    .count() as u32;
                // Whole blocks, short of the last token, which a server computes to
                // sample the first.
                blocks.min((s.target - 1) / cfg.block.max(1)) * cfg.block
            } else {
                0
            };
            let need = s.target;
            if self.kv_used + need > cfg.kv_tokens {
                if self.running.is_empty() && need > cfg.kv_tokens {
                    // It can never fit: it is answered as the cache allows.
                    s.target = cfg.kv_tokens.max(1);
                    continue;
                }
                break;
            }
            self.waiting.pop_front();
            if s.produced == 0 && self.cfg.prefix_cache {
                self.metrics.prefix(s.prompt, hit);
            }
            s.prefilled = hit;
            s.kv = need;
            s.scheduled.get_or_insert(at);
            self.kv_used += need;
            self.running.push(id);
            let n = (need - hit).min(budget);
            work.push((id, Work::Prefill(n)));
            prefilled += n;
            budget -= n;
        }
        if work.is_empty() {
            return;
        }
        let took = cfg.step + cfg.per_seq * decodes + cfg.per_prefill_token * prefilled;
        self.step = Some(Step {
            end: at + took,
            work,
        });
    }

    /// Sequence `id` loses its KV cache: it waits again at the head of the queue,
    /// to recompute its prompt and the output made so far.
    fn preempt(&mut self, id: u32) {
        self.running.retain(|r| *r != id);
        if let Some(s) = self.seqs.get_mut(&id) {
            self.kv_used -= s.kv;
            s.kv = 0;
            s.prefilled = 0;
            s.target = s.prompt + s.produced;
        }
        self.waiting.push_front(id);
        self.metrics.preempted();
    }

    /// The gauges: requests running and waiting, the KV cache's use.
    fn publish(&mut self) {
        self.metrics.gauges(
            &mut self.published,
            self.running.len() as u64,
            self.waiting.len() as u64,
            self.kv_used,
            self.cfg.kv_tokens,
        );
    }

    /// The end of the step under way.
    pub fn step_end(&self) -> Option<Instant> {
        self.step.as_ref().map(|s| s.end)
    }
}

/// The hashes of `text`'s whole blocks of `block` words: each covers every word up
/// to its block's end, so two prompts share a block's hash only when they share all
/// the words before it.
pub fn block_hashes(text: &str, block: u32) -> Vec<u64> {
    let block = block.max(1) as usize;
    let mut out = Vec::new();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (i, w) in text.split_whitespace().enumerate() {
        for b in w.bytes().chain(std::iter::once(b' ')) {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        if (i + 1) % block == 0 {
            out.push(h);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine(cfg: EngineConfig) -> Engine {
        Engine::new(cfg, std::sync::Arc::new(Metrics::default()))
    }

    fn cfg() -> EngineConfig {
        EngineConfig {
            step: Duration::from_millis(10),
            per_seq: Duration::ZERO,
            per_prefill_token: Duration::from_micros(100),
            token_budget: 1000,
            max_seqs: 8,
            kv_tokens: 10_000,
            block: 4,
            prefix_cache: false,
        }
    }

    /// When each token of `id` is made, from `t0`: the engine polled from `from`
    /// on at each step's end.
    fn times(e: &mut Engine, id: u32, n: u32, t0: Instant) -> Vec<Duration> {
        times_from(e, id, 1..=n, t0, t0)
    }

    fn times_from(
        e: &mut Engine,
        id: u32,
        tokens: std::ops::RangeInclusive<u32>,
        t0: Instant,
        from: Instant,
    ) -> Vec<Duration> {
        let mut out = Vec::new();
        let mut now = from;
        for need in tokens {
            while let Some(at) = e.poll(id, need, now) {
                now = at;
            }
            out.push(now - t0);
        }
        out
    }

    #[test]
    fn one_request_is_prefilled_then_decoded_a_step_a_token() {
        let mut e = engine(cfg());
        let t0 = Instant::now();
        let id = e.admit(t0, 200, 3, Vec::new()).unwrap();
        let t = times(&mut e, id, 3, t0);
        // Prefill: 10 ms + 200 × 0.1 ms; then a 10 ms step a token.
        assert_eq!(t, [30, 40, 50].map(Duration::from_millis));
        assert!(e.step_end().is_none(), "idle once done");
    }

    #[test]
    fn a_long_prompt_is_prefilled_in_chunks_of_the_budget() {
        let mut e = engine(EngineConfig {
            token_budget: 100,
            ..cfg()
        });
        let t0 = Instant::now();
        let id = e.admit(t0, 250, 1, Vec::new()).unwrap();
        // Three steps: 100, 100 and 50 tokens.
        assert_eq!(
            times(&mut e, id, 1, t0),
            [Duration::from_millis(10 * 3 + 25)]
        );
    }

    #[test]
    fn a_request_arriving_mid_step_waits_for_the_next_and_slows_the_batch() {
        let mut e = engine(cfg());
        let t0 = Instant::now();
        let a = e.admit(t0, 100, 4, Vec::new()).unwrap();
        // a's prefill ends at 20 ms; b arrives at 25, joins the step formed at 30.
        assert_eq!(times(&mut e, a, 1, t0), [Duration::from_millis(20)]);
        let t25 = t0 + Duration::from_millis(25);
        let b = e.admit(t25, 100, 1, Vec::new()).unwrap();
        let ms = |n| t0 + Duration::from_millis(n);
        // Step 20–30 decodes a alone; step 30–50 decodes a and prefills b (10 ms).
        assert_eq!(e.poll(a, 2, t25), Some(ms(30)));
        assert_eq!(e.poll(a, 2, ms(30)), None);
        assert_eq!(e.poll(a, 3, ms(30)), Some(ms(50)));
        assert_eq!(e.poll(b, 1, ms(30)), Some(ms(50)));
        assert_eq!(e.poll(b, 1, ms(50)), None);
        assert_eq!(e.poll(a, 3, ms(50)), None);
        assert_eq!(e.poll(a, 4, ms(50)), Some(ms(60)));
    }

    #[test]
    fn a_full_cache_preempts_the_latest_which_recomputes() {
        let mut e = engine(EngineConfig {
            kv_tokens: 25,
            ..cfg()
        });
        let t0 = Instant::now();
        let a = e.admit(t0, 10, 6, Vec::new()).unwrap();
        let b = e.admit(t0, 10, 6, Vec::new()).unwrap();
        let ta = times(&mut e, a, 6, t0);
        let tb = times(&mut e, b, 6, t0);
        assert_eq!(ta.len(), 6);
        assert!(tb[5] > ta[5], "b was preempted and finished later");
        assert!(e.metrics.snapshot().preemptions >= 1);
        assert!(e.step_end().is_none());
        assert_eq!(e.kv_used, 0);
    }

    #[test]
    fn the_prefix_cache_skips_blocks_already_computed() {
        let mut e = engine(EngineConfig {
            prefix_cache: true,
            ..cfg()
        });
        let text = "a b c d e f g h i j k l";
        let t0 = Instant::now();
        let a = e.admit(t0, 12, 1, block_hashes(text, 4)).unwrap();
        assert_eq!(times(&mut e, a, 1, t0), [Duration::from_micros(11_200)]);
        let t1 = t0 + Duration::from_millis(100);
        let b = e.admit(t1, 12, 1, block_hashes(text, 4)).unwrap();
        // Two whole blocks cached (the last token is always computed): 4 prefilled.
        assert_eq!(times(&mut e, b, 1, t1), [Duration::from_micros(10_400)]);
        let m = e.metrics.snapshot();
        assert_eq!((m.prefix_queries, m.prefix_hits), (24, 8));
    }

    #[test]
    fn the_truth_log_has_each_request_as_the_engine_made_it() {
        let path = std::env::temp_dir().join(format!("stampede-truth-{}", std::process::id()));
        let log = crate::llm::truth::TruthLog::create(&path).unwrap();
        let mut e = Engine::new(cfg(), std::sync::Arc::new(Metrics::with_truth(log)));
        let t0 = Instant::now();
        let a = e.admit(t0, 200, 3, Vec::new()).unwrap();
        assert_eq!(times(&mut e, a, 3, t0).len(), 3);
        let b = e
            .admit(t0 + Duration::from_millis(100), 100, 2, Vec::new())
            .unwrap();
        assert_eq!(times(&mut e, b, 2, t0).len(), 2);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(
            text,
            "{\"ttft_ms\":30,\"e2e_ms\":50,\"tokens\":3,\"itl_ms\":[10,10]}\n\
             {\"ttft_ms\":20,\"e2e_ms\":30,\"tokens\":2,\"itl_ms\":[10]}\n"
        );
    }

    #[test]
    fn block_hashes_cover_every_word_before_them() {
        assert_eq!(block_hashes("a b c d e", 2).len(), 2);
        assert_eq!(
            block_hashes("a b c d", 2)[1],
            block_hashes("a b c d e f", 2)[1]
        );
        assert_ne!(block_hashes("a b c d", 2)[1], block_hashes("x b c d", 2)[1]);
    }
}
