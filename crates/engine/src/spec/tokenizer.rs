//! A model's own tokenizer (its `tokenizer.json`), for OpenAI runs that count tokens
//! exactly: random prompts of exactly the asked-for number of the model's tokens, the
//! prompts' input tokens, and a completion's output tokens from its text where the
//! server's stream carries no usage.
//!
//! Without one, a prompt's tokens are its words and a completion's are its usage
//! chunk's count, else its events carrying text. The file is found by path, as the
//! directory holding it, or by a model's name in the local Hugging Face cache (where a
//! server that ran the model keeps it); nothing is downloaded.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::input::{self, Input};

/// A loaded tokenizer, shared by the threads of a run.
#[derive(Clone)]
pub struct TokenCounter {
    inner: Arc<tokenizers::Tokenizer>,
    /// Where it came from, for reports.
    source: Arc<str>,
    /// The ids a drawn prompt takes, ascending (the model's vocabulary, no special
    /// or added tokens), so that a seed draws the same prompts every time.
    ids: Arc<[u32]>,
}

impl std::fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TokenCounter({})", self.source)
    }
}

impl PartialEq for TokenCounter {
    fn eq(&self, other: &TokenCounter) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

/// Where a model's name is looked for: the Hugging Face cache's directories, as its
/// own tools find them.
fn hub_caches() -> Vec<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let mut out = Vec::new();
    if let Some(p) = var("HF_HUB_CACHE").or_else(|| var("HUGGINGFACE_HUB_CACHE")) {
        out.push(p);
    }
    if let Some(h) = var("HF_HOME") {
        out.push(h.join("hub"));
    } else if let Some(x) = var("XDG_CACHE_HOME") {
        out.push(x.join("huggingface/hub"));
    } else if let Some(home) = var("HOME") {
        out.push(home.join(".cache/huggingface/hub"));
    }
    out
}

/// The `tokenizer.json` of `model` (`org/name`) in a cache, the snapshot the cache's
/// `refs/main` names first, else any snapshot holding one.
fn in_cache(cache: &Path, model: &str) -> Option<PathBuf> {
    let dir = cache.join(format!("models--{}", model.replace('/', "--")));
    let snapshots = dir.join("snapshots");
    if let Ok(rev) = std::fs::read_to_string(dir.join("refs/main")) {
        let p = snapshots.join(rev.trim()).join("tokenizer.json");
        if p.is_file() {
            return Some(p);
        }
    }
    let mut all: Vec<PathBuf> = std::fs::read_dir(&snapshots)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("tokenizer.json")))
        .filter(|p| p.is_file())
        .collect();
    all.sort();
    all.pop()
}

/// Where `arg` names a tokenizer: the file, a directory holding `tokenizer.json`, or
/// a model in the cache. `None`: none of these.
pub fn locate(arg: &str) -> Option<PathBuf> {
    let p = Path::new(arg);
    if p.is_file() {
        return Some(p.to_path_buf());
    }
    if p.is_dir() {
        let f = p.join("tokenizer.json");
        return f.is_file().then_some(f);
    }
    if arg.is_empty() || arg.starts_with('/') || arg.starts_with('.') || arg.contains("..") {
        return None;
    }
    hub_caches().iter().find_map(|c| in_cache(c, arg))
}

/// Why a tokenizer could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    /// Nothing the argument names holds a tokenizer.
    #[error("{what}: {arg:?} is neither a tokenizer.json file, nor a directory holding one, nor a model in the local Hugging Face cache (nothing is downloaded): give the path of the model's tokenizer.json")]
    NotFound {
        /// The flag or key that named it.
        what: String,
        /// The argument as given.
        arg: String,
    },
    /// The file could not be read (or is too large).
    #[error(transparent)]
    Input(#[from] input::InputError),
    /// The file is not a tokenizer this reads.
    #[error("{what}: {path} is not a tokenizer.json this reads: {reason}")]
    Unreadable {
        /// The flag or key that named it.
        what: String,
        /// The file.
        path: String,
        /// The tokenizer library's message.
        reason: String,
    },
    /// Every token of it is a special one.
    #[error("{what}: {path} has no tokens outside its special ones")]
    NoTokens {
        /// The flag or key that named it.
        what: String,
        /// The file.
        path: String,
    },
}

impl TokenCounter {
    /// Loads the tokenizer `arg` names (see [`locate`]); `what` names the flag or key
    /// in errors.
    pub fn load(arg: &str, what: &str) -> Result<TokenCounter, TokenizerError> {
        let Some(path) = locate(arg) else {
            return Err(TokenizerError::NotFound {
                what: what.to_string(),
                arg: arg.to_string(),
            });
        };
        let shown = path.display().to_string();
        let bytes = input::read(&shown, what, Input::Tokenizer)?;
        let t =
            tokenizers::Tokenizer::from_bytes(&bytes).map_err(|e| TokenizerError::Unreadable {
                what: what.to_string(),
                path: shown.clone(),
                reason: e.to_string(),
            })?;
        let mut ids: Vec<u32> = t.get_vocab(false).into_values().collect();
        let special = t.get_added_tokens_decoder();
        ids.retain(|id| !special.contains_key(id));
        ids.sort_unstable();
        ids.dedup();
        if ids.is_empty() {
            return Err(TokenizerError::NoTokens {
                what: what.to_string(),
                path: shown,
            });
        }
        Ok(TokenCounter {
            inner: Arc::new(t),
            source: shown.into(),
            ids: ids.into(),
        })
    }

    /// The file it came from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The tokens of `text`, without special ones added (as a prompt or a completion
    /// is counted); text it cannot encode counts 0.
    pub fn count(&self, text: &str) -> u32 {
        self.inner
            .encode_fast(text, false)
            .map_or(0, |e| e.len() as u32)
    }

    fn decode(&self, ids: &[u32]) -> String {
        self.inner.decode(ids, true).unwrap_or_default()
    }

    /// A prompt of `n` tokens drawn with `next` (uniform `u64`s): random tokens of the
    /// vocabulary, decoded to text, re-encoded, and cut or lengthened until the text
    /// encodes to `n` tokens, as vLLM's random dataset makes its prompts. Where a
    /// tokenizer merges across the seam so that no text of exactly `n` comes within a
    /// few tries, the closest is kept; its count is returned with it.
    pub fn draw(&self, n: u32, next: &mut dyn FnMut() -> u64) -> (String, u32) {
        let pick =
            |next: &mut dyn FnMut() -> u64| self.ids[(next() % self.ids.len() as u64) as usize];
        let mut ids: Vec<u32> = (0..n).map(|_| pick(next)).collect();
        let mut best = (String::new(), 0u32);
        for _ in 0..8 {
            let text = self.decode(&ids);
            let got = match self.inner.encode_fast(text.as_str(), false) {
                Ok(e) => e.get_ids().to_vec(),
                Err(_) => Vec::new(),
            };
            let count = got.len() as u32;
            if count.abs_diff(n) < best.1.abs_diff(n) || best.0.is_empty() {
                best = (text, count);
            }
            if count == n {
                break;
            }
            ids = got;
            if count > n {
                ids.truncate(n as usize);
            } else {
                ids.extend((count..n).map(|_| pick(next)));
            }
        }
        best
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A word-level tokenizer: each whitespace-separated word of its vocabulary (and
    /// each punctuation mark) a token, anything else `[UNK]`.
    pub(crate) const WORDS: &str = r###"{
      "version": "1.0",
      "truncation": null,
      "padding": null,
      "added_tokens": [
        {"id": 0, "content": "[UNK]", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}
      ],
      "normalizer": null,
      "pre_tokenizer": {"type": "Whitespace"},
      "post_processor": null,
      "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": false},
      "model": {"type": "WordLevel", "vocab": {"[UNK]": 0, "tok": 1, "a": 2, "b": 3, "c": 4, ".": 5, "hello": 6}, "unk_token": "[UNK]"}
    }"###;

    pub(crate) fn words() -> TokenCounter {
        // A directory of this call's own (tests load it at once), removed once loaded.
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("stampede-tok-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("tokenizer.json");
        std::fs::write(&f, WORDS).unwrap();
        let counter = TokenCounter::load(dir.to_str().unwrap(), "--tokenizer").unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        counter
    }

    #[test]
    fn counts_and_draws_exact_lengths() {
        let t = words();
        assert!(t.source().ends_with("tokenizer.json"));
        assert_eq!(t.count("hello a.b tok"), 5);
        assert_eq!(t.count(""), 0);
        // [UNK] is special: never drawn.
        assert_eq!(&t.ids[..], &[1, 2, 3, 4, 5, 6]);
        let mut s = 7u64;
        let mut next = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            s >> 33
        };
        for n in [1, 7, 64] {
            let (p, count) = t.draw(n, &mut next);
            assert_eq!((count, t.count(&p)), (n, n), "{p:?}");
        }
    }

    #[test]
    fn what_is_not_a_tokenizer_is_named() {
        let e = TokenCounter::load("/nonexistent/tok", "--tokenizer").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("--tokenizer: \"/nonexistent/tok\" is neither"),
            "{e}"
        );
        let dir = std::env::temp_dir().join(format!("stampede-tok-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("tokenizer.json");
        std::fs::write(&f, "{\"model\": 1}").unwrap();
        let e = TokenCounter::load(f.to_str().unwrap(), "--tokenizer").unwrap_err();
        assert!(
            e.to_string().contains("is not a tokenizer.json this reads"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_model_is_found_in_the_hub_cache_by_name() {
        let cache = std::env::temp_dir().join(format!("stampede-hub-{}", std::process::id()));
        let snap = cache.join("models--org--m/snapshots/abc");
        std::fs::create_dir_all(&snap).unwrap();
        std::fs::create_dir_all(cache.join("models--org--m/refs")).unwrap();
        std::fs::write(cache.join("models--org--m/refs/main"), "abc\n").unwrap();
        std::fs::write(snap.join("tokenizer.json"), WORDS).unwrap();
        assert_eq!(in_cache(&cache, "org/m"), Some(snap.join("tokenizer.json")));
        assert_eq!(in_cache(&cache, "org/other"), None);
        std::fs::remove_dir_all(&cache).unwrap();
    }
}
