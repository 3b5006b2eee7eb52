//! Requests to an OpenAI-compatible completion server (`load --openai`, `vllm bench
//! serve`, a plan's `openai` scenarios): the prompts a run sends and the JSON bodies
//! that carry them.
//!
//! Prompts are drawn before the run (so the run itself only sends them): random ones
//! of a given length in words, each length drawn uniformly within a range ratio of it
//! as vLLM's random dataset does, from a fixed vocabulary by the run's seed (with the
//! model's tokenizer: of exactly that many of its tokens, drawn from its vocabulary);
//! or read from a JSONL file, one `{"prompt": …}` object per line (`output_tokens` on
//! a line sets that prompt's maximum). Each becomes a streamed request asking for its
//! usage, so tokens are counted from the server's own figure.

use crate::input::{self, Input, InputError};

/// Why a run's prompts or their requests could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    /// A value of the run's settings is out of range; `flag` names it.
    #[error("{flag}: {reason}")]
    Setting {
        /// The flag (or plan field) as the user wrote it, e.g. `--input-tokens`.
        flag: &'static str,
        /// What is wrong, with the accepted range.
        reason: String,
    },
    /// The prompts file could not be read.
    #[error(transparent)]
    Input(#[from] InputError),
    /// A line of the prompts file is not a prompt.
    #[error("{what} {file}, line {line}: {reason}")]
    Line {
        /// What the file was given as (`--prompts`, a plan's `prompts`).
        what: String,
        /// The path as given.
        file: String,
        /// 1-based.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// The prompts file holds no prompt.
    #[error("{what} {file}: no prompts in it")]
    Empty {
        /// What the file was given as.
        what: String,
        /// The path as given.
        file: String,
    },
    /// A request could not be built.
    #[error(transparent)]
    Request(#[from] crate::error::SpecError),
}

impl PromptError {
    fn setting(flag: &'static str, reason: String) -> PromptError {
        PromptError::Setting { flag, reason }
    }
}

/// Which API the requests use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Api {
    /// `/v1/completions`: `prompt`, `max_tokens`.
    Completions,
    /// `/v1/chat/completions`: `messages`, `max_completion_tokens`.
    Chat,
}

impl std::str::FromStr for Api {
    type Err = crate::error::SyntaxError;
    fn from_str(s: &str) -> Result<Api, Self::Err> {
        match s {
            "chat" => Ok(Api::Chat),
            "completions" => Ok(Api::Completions),
            _ => Err(crate::error::SyntaxError(format!(
                "{s:?} is not an OpenAI API here; use chat or completions"
            ))),
        }
    }
}

/// What a request's body holds beyond its prompt (the JSON around it), at most, as
/// counted toward the bodies' bound.
const BODY_OVERHEAD: u64 = 256;

/// Most prompts one run draws or reads.
pub const MAX_PROMPTS: usize = 1_000_000;

/// The most events a streamed completion of `drawn` (each prompt with the tokens it
/// asks for) may carry before it counts as broken: twice the largest ask and 16 more
/// (a text event carries one token or more; the slack covers servers that split a
/// token's text over events), so a stream without end cannot hold a counted run.
pub fn max_events(drawn: &[(String, u32)]) -> u32 {
    let most = drawn.iter().map(|(_, n)| *n).max().unwrap_or(0);
    most.saturating_mul(2).saturating_add(16)
}

/// Most words in a drawn prompt.
pub const MAX_WORDS: u32 = 1_000_000;

/// What the prompts are and what each asks for.
pub struct Prompts<'a> {
    pub api: Api,
    pub model: &'a str,
    /// Random prompts of this many words (±`range_ratio`), or a JSONL file.
    pub input_words: u32,
    pub output_tokens: u32,
    pub range_ratio: f64,
    pub file: Option<&'a str>,
    /// What names the file in messages: `--prompts`, or a plan's field.
    pub what: &'a str,
    pub count: usize,
    pub seed: u64,
    /// Ask the server to ignore its end-of-sequence token (vLLM's `ignore_eos`), so
    /// every completion has its maximum.
    pub ignore_eos: bool,
    /// The model's tokenizer: drawn prompts are of its tokens, and a prompt's input
    /// tokens are counted by it (else they are its words).
    pub tokenizer: Option<&'a crate::TokenCounter>,
}

/// The most distinct prompts drawn with a tokenizer (each is encoded a few times to
/// make its length exact): a run that sends more takes them again in turn.
pub const MAX_DRAWN_TOKENIZED: usize = 10_000;

const VOCABULARY: [&str; 32] = [
    "the", "load", "server", "token", "stream", "answer", "quick", "model", "tail", "latency",
    "rate", "queue", "batch", "first", "every", "request", "time", "cache", "prompt", "engine",
    "thread", "socket", "byte", "event", "round", "trip", "graph", "edge", "count", "merge",
    "shape", "close",
];

/// A text of `n` tokens drawn with `next` (uniform `u64`s): of the model's tokens
/// with its tokenizer (see [`crate::TokenCounter::draw`]), else `n` words of a fixed
/// vocabulary, each a token as a word-counting client and the mock LLM count them.
pub fn filler(
    n: u32,
    tokenizer: Option<&crate::TokenCounter>,
    next: &mut dyn FnMut() -> u64,
) -> String {
    if let Some(t) = tokenizer {
        return t.draw(n, next).0;
    }
    let mut p = String::with_capacity(n as usize * 7);
    for i in 0..n {
        if i > 0 {
            p.push(' ');
        }
        p.push_str(VOCABULARY[(next() % VOCABULARY.len() as u64) as usize]);
    }
    p
}

/// A small, fast generator (splitmix64): the prompts follow the seed exactly.
pub struct Rng(pub u64);

impl Rng {
    pub fn draw(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    pub fn between(&mut self, lo: u32, hi: u32) -> u32 {
        lo + (self.draw() % u64::from(hi - lo + 1)) as u32
    }

    /// Uniform in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.draw() % n as u64) as usize
    }
}

impl Prompts<'_> {
    /// Every request body of the run, in order.
    #[cfg(test)]
    fn bodies(&self) -> Result<Vec<Vec<u8>>, PromptError> {
        let prompts = self.prompts()?;
        Ok(self.bodies_of(&prompts))
    }

    /// The prompts and their maximums: drawn, or read from the file.
    pub fn prompts(&self) -> Result<Vec<(String, u32)>, PromptError> {
        if self.count == 0 || self.count > MAX_PROMPTS {
            return Err(PromptError::setting(
                "--openai",
                format!(
                    "the run sends 1 to {MAX_PROMPTS} prompts (-n), not {}",
                    self.count
                ),
            ));
        }
        match self.file {
            Some(file) => {
                let prompts = self.read(file)?;
                // Every request's body is built before the run: bounded before building.
                let n = prompts.len() as u64;
                let one_round: u64 = prompts
                    .iter()
                    .map(|(p, _)| p.len() as u64 + BODY_OVERHEAD)
                    .sum();
                let count = self.count as u64;
                let partial: u64 = (prompts.iter().take((count % n) as usize))
                    .map(|(p, _)| p.len() as u64 + BODY_OVERHEAD)
                    .sum();
                self.fits(one_round.saturating_mul(count / n).saturating_add(partial))?;
                Ok(prompts)
            }
            None => {
                let longest =
                    (f64::from(self.input_words) * (1.0 + self.range_ratio)).ceil() as u64;
                let per_word = if self.tokenizer.is_some() { 32 } else { 8 };
                let one = longest.saturating_mul(per_word) + BODY_OVERHEAD;
                self.fits(one.saturating_mul(self.count as u64))?;
                self.draw()
            }
        }
    }

    /// Refuses a run whose request bodies would take more than
    /// [`MAX_BUILT_REQUESTS`](crate::input::MAX_BUILT_REQUESTS) together.
    fn fits(&self, bytes: u64) -> Result<(), PromptError> {
        use crate::input::{size, MAX_BUILT_REQUESTS};
        if bytes > MAX_BUILT_REQUESTS {
            return Err(PromptError::setting("--openai", format!(
                "{} requests of these prompts would build about {:.1} GiB of request bodies, more than the {} stampede builds before a run; send fewer (-n) or shorter prompts",
                self.count,
                bytes as f64 / f64::from(1u32 << 30),
                size(MAX_BUILT_REQUESTS)
            )));
        }
        Ok(())
    }

    /// A prompt's input tokens: by the tokenizer, else its words.
    pub fn input_tokens(&self, prompt: &str) -> u64 {
        match self.tokenizer {
            Some(t) => u64::from(t.count(prompt)),
            None => prompt.split_whitespace().count() as u64,
        }
    }

    /// The bodies of `prompts`, in turn, as many as the run sends.
    pub fn bodies_of(&self, prompts: &[(String, u32)]) -> Vec<Vec<u8>> {
        (prompts.iter().cycle().take(self.count))
            .map(|(p, out)| self.body(p, *out))
            .collect()
    }

    /// The run's requests: a POST of each prompt's body to `target`, with `headers`.
    pub fn requests(
        &self,
        target: &crate::Target,
        headers: &[(String, String)],
        keepalive: bool,
        prompts: &[(String, u32)],
    ) -> Result<Vec<crate::Request>, PromptError> {
        (self.bodies_of(prompts).into_iter())
            .map(|body| {
                let mut b = crate::RequestBuilder::native(target, "POST", keepalive)
                    .set_header("Content-Type", "application/json");
                for (n, v) in headers {
                    b = b.set_header(n, v);
                }
                Ok(b.body(body).build()?)
            })
            .collect()
    }

    /// Random prompts (see the module's comment).
    pub fn draw(&self) -> Result<Vec<(String, u32)>, PromptError> {
        if !(0.0..1.0).contains(&self.range_ratio) {
            return Err(PromptError::setting(
                "--range-ratio",
                format!("{} is not in [0, 1)", self.range_ratio),
            ));
        }
        if self.input_words == 0 || self.input_words > MAX_WORDS {
            return Err(PromptError::setting(
                "--input-tokens",
                format!("1 to {MAX_WORDS}, not {}", self.input_words),
            ));
        }
        let spread = |n: u32| {
            let lo = ((f64::from(n) * (1.0 - self.range_ratio)).floor() as u32).max(1);
            let hi = ((f64::from(n) * (1.0 + self.range_ratio)).ceil() as u32).max(lo);
            (lo, hi)
        };
        let mut rng = Rng(self.seed);
        let (ilo, ihi) = spread(self.input_words);
        let (olo, ohi) = spread(self.output_tokens);
        let count = match self.tokenizer {
            Some(_) => self.count.min(MAX_DRAWN_TOKENIZED),
            None => self.count,
        };
        Ok((0..count)
            .map(|_| {
                let n = rng.between(ilo, ihi);
                let out = rng.between(olo, ohi);
                (filler(n, self.tokenizer, &mut || rng.draw()), out)
            })
            .collect())
    }

    fn read(&self, file: &str) -> Result<Vec<(String, u32)>, PromptError> {
        let text = input::read_text(file, self.what, Input::List)?;
        let mut prompts = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let bad = |why: &str| PromptError::Line {
                what: self.what.to_string(),
                file: file.to_string(),
                line: i + 1,
                reason: why.to_string(),
            };
            let v: serde_json::Value =
                serde_json::from_str(line).map_err(|e| bad(&format!("not JSON ({e})")))?;
            let Some(prompt) = v["prompt"].as_str() else {
                return Err(bad("no \"prompt\" string"));
            };
            let out = match &v["output_tokens"] {
                serde_json::Value::Null => self.output_tokens,
                n => match n.as_u64() {
                    Some(n) if (1..=100_000).contains(&n) => n as u32,
                    _ => return Err(bad("\"output_tokens\" must be 1 to 100000")),
                },
            };
            if prompts.len() == MAX_PROMPTS {
                return Err(bad(&format!("more than {MAX_PROMPTS} prompts")));
            }
            prompts.push((prompt.to_string(), out));
        }
        if prompts.is_empty() {
            return Err(PromptError::Empty {
                what: self.what.to_string(),
                file: file.to_string(),
            });
        }
        Ok(prompts)
    }

    /// The JSON body asking for `prompt`'s completion of at most `out` tokens,
    /// streamed, with its usage.
    fn body(&self, prompt: &str, out: u32) -> Vec<u8> {
        let mut v = match self.api {
            Api::Completions => serde_json::json!({
                "model": self.model,
                "prompt": prompt,
                "max_tokens": out,
            }),
            Api::Chat => serde_json::json!({
                "model": self.model,
                "messages": [{"role": "user", "content": prompt}],
                "max_completion_tokens": out,
            }),
        };
        v["stream"] = true.into();
        v["stream_options"] = serde_json::json!({"include_usage": true});
        if self.ignore_eos {
            v["ignore_eos"] = true.into();
        }
        serde_json::to_vec(&v).expect("a JSON value serialises")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompts(count: usize) -> Prompts<'static> {
        Prompts {
            api: Api::Chat,
            model: "m",
            input_words: 10,
            output_tokens: 4,
            range_ratio: 0.5,
            file: None,
            what: "--prompts",
            count,
            seed: 7,
            ignore_eos: false,
            tokenizer: None,
        }
    }

    #[test]
    fn with_a_tokenizer_prompts_are_of_its_tokens_and_counted_by_it() {
        let t = crate::spec::tokenizer::tests::words();
        let mut p = prompts(30);
        p.tokenizer = Some(&t);
        let drawn = p.prompts().unwrap();
        assert_eq!(drawn, p.prompts().unwrap(), "the seed decides");
        for (text, _) in &drawn {
            let n = p.input_tokens(text);
            assert!((5..=15).contains(&n), "{n}: {text:?}");
            assert_eq!(u64::from(t.count(text)), n);
        }
        // Punctuation is a token of its own here, not a word: the counts differ.
        let words: u64 = drawn
            .iter()
            .map(|(s, _)| s.split_whitespace().count() as u64)
            .sum();
        let tokens: u64 = drawn.iter().map(|(s, _)| p.input_tokens(s)).sum();
        assert!(tokens >= words, "{tokens} {words}");
        // More prompts than are drawn with a tokenizer go round in turn.
        p.count = MAX_DRAWN_TOKENIZED + 5;
        p.input_words = 1;
        p.range_ratio = 0.0;
        let drawn = p.prompts().unwrap();
        assert_eq!(drawn.len(), MAX_DRAWN_TOKENIZED);
        assert_eq!(p.bodies_of(&drawn).len(), MAX_DRAWN_TOKENIZED + 5);
    }

    #[test]
    fn drawn_prompts_follow_the_seed_and_stay_in_range() {
        let a = prompts(50).bodies().unwrap();
        assert_eq!(a, prompts(50).bodies().unwrap());
        for b in &a {
            let v: serde_json::Value = serde_json::from_slice(b).unwrap();
            let words = v["messages"][0]["content"]
                .as_str()
                .unwrap()
                .split_whitespace()
                .count();
            assert!((5..=15).contains(&words), "{words}");
            let out = v["max_completion_tokens"].as_u64().unwrap();
            assert!((2..=6).contains(&out), "{out}");
            assert_eq!(v["stream_options"]["include_usage"], true);
        }
        let mut other = prompts(50);
        other.seed = 8;
        assert_ne!(a, other.bodies().unwrap());
    }

    /// A run's bodies are bounded before they are built: a million prompts of a
    /// hundred thousand words, or a file's one long prompt sent a million times.
    #[test]
    fn bodies_past_the_bound_are_refused_before_they_are_built() {
        let mut p = prompts(1_000_000);
        p.input_words = 100_000;
        let e = p.prompts().unwrap_err().to_string();
        assert!(
            e.contains("about 1117.8 GiB of request bodies, more than the 1 GiB"),
            "{e}"
        );
        let dir = std::env::temp_dir().join(format!("stampede-prompts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("p.jsonl");
        let long = "w ".repeat(300_000);
        std::fs::write(&f, format!("{{\"prompt\": \"{long}\"}}\n")).unwrap();
        let path = f.to_string_lossy().into_owned();
        let mut p = prompts(1_000);
        p.file = Some(&path);
        assert_eq!(p.prompts().unwrap().len(), 1);
        p.count = 10_000;
        assert!(p
            .prompts()
            .unwrap_err()
            .to_string()
            .contains("send fewer (-n)"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_counts_and_ratios_are_refused_by_flag() {
        assert!(prompts(0).bodies().is_err());
        let mut p = prompts(1);
        p.range_ratio = 1.0;
        assert!(p.bodies().is_err());
        let mut p = prompts(1);
        p.input_words = 0;
        assert!(p.bodies().is_err());
    }
}
