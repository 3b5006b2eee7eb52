//! Multi-turn chats on the engine's connections: each user holds a conversation
//! with an OpenAI-compatible chat endpoint, turn after turn, every request carrying
//! the history so far — the shared system prompt, each earlier user turn and the
//! model's own answer to it, read from the streamed reply — so that what a server's
//! prefix cache saves, and what a growing context costs, is what the run measures.
//!
//! Conversations are taken in turn from a list (ShareGPT's, or drawn); a user
//! begins the next when its conversation ends. Between turns a user waits the turn
//! delay (drawn within its bounds). Each turn's requests are counted under their own
//! figure (`turn 1`, `turn 2`, …), with the time to first token per turn when the
//! answers are streamed. A history that outgrows `max_context` tokens is cut as
//! asked: its oldest exchanges dropped, or the conversation ended there. An answer
//! that is not a success ends its conversation as failed; a history past
//! [`MAX_HISTORY_BYTES`] ends it whatever the limit.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};
use stampede_engine::result::{LatencyStats, RunResult, SessionStats};
use stampede_engine::{Flow, Hooks, Reply, ThreadHooks, ThreadHooksSource, TokenCounter};

/// The most bytes one conversation's history may hold.
pub const MAX_HISTORY_BYTES: usize = 8 << 20;

/// Turns given figures of their own; later turns share the last.
pub const MAX_TURN_FIGURES: usize = 100;

/// One user turn: its text and the tokens it asks for (0: the model decides).
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    pub prompt: String,
    pub max_tokens: u32,
}

/// A conversation's user turns, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    pub turns: Vec<Turn>,
}

/// What happens to a history that outgrows the context limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overflow {
    /// Its oldest exchanges are dropped until the request fits.
    DropOldest,
    /// The conversation ends before the turn that would not fit.
    End,
}

impl std::str::FromStr for Overflow {
    type Err = String;
    fn from_str(s: &str) -> Result<Overflow, String> {
        match s {
            "drop-oldest" => Ok(Overflow::DropOldest),
            "end" => Ok(Overflow::End),
            other => Err(format!("{other}: drop-oldest or end")),
        }
    }
}

/// A chat run's settings.
#[derive(Debug, Clone)]
pub struct Chat {
    pub conversations: Vec<Conversation>,
    /// The system prompt every conversation begins with (a prefix shared by all).
    pub system: Option<String>,
    pub model: String,
    /// The endpoint's path (`/v1/chat/completions`) and the `Host` sent.
    pub path: String,
    pub authority: String,
    /// Header lines sent with every request.
    pub headers: Vec<(String, String)>,
    /// Fields added to every body (sampling parameters, `ignore_eos`).
    pub extra: Map<String, Value>,
    /// Ask for streamed answers.
    pub stream: bool,
    /// The wait before each turn after the first, drawn uniformly in this range.
    pub delay: (Duration, Duration),
    /// The most tokens a request's messages may hold, and what a longer history
    /// does.
    pub max_context: Option<u32>,
    pub overflow: Overflow,
    /// Counts tokens (else words).
    pub tokenizer: Option<TokenCounter>,
    pub seed: u64,
}

/// What the conversations did, over the run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatFigures {
    pub started: u64,
    pub completed: u64,
    pub failed: u64,
    /// Ended at the context limit (`Overflow::End`) or past [`MAX_HISTORY_BYTES`].
    pub ended_at_limit: u64,
    /// Exchanges dropped from histories to fit the limit.
    pub exchanges_dropped: u64,
    /// Turns whose answer was taken into the history.
    pub turns_answered: u64,
    /// The largest request, in tokens of its messages.
    pub max_context_sent: u32,
}

struct Shared {
    chat: Chat,
    turns: usize,
    next: AtomicU64,
    figures: Mutex<ChatFigures>,
    lifetimes: Mutex<hdrhistogram::Histogram<u64>>,
}

/// A chat run: its hooks for the spec, its figures after.
#[derive(Clone)]
pub struct ChatRun {
    shared: Arc<Shared>,
}

impl ChatRun {
    /// A run of `chat`, or why its conversations cannot be held.
    pub fn new(chat: Chat) -> Result<ChatRun, crate::Invalid> {
        if chat.conversations.is_empty() || chat.conversations.iter().any(|c| c.turns.is_empty()) {
            return Err(crate::Invalid("every conversation needs a turn".into()));
        }
        let turns = chat
            .conversations
            .iter()
            .map(|c| c.turns.len())
            .max()
            .unwrap_or(1);
        Ok(ChatRun {
            shared: Arc::new(Shared {
                chat,
                turns,
                next: AtomicU64::new(0),
                figures: Mutex::new(ChatFigures::default()),
                lifetimes: Mutex::new(
                    hdrhistogram::Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("bounds"),
                ),
            }),
        })
    }

    pub fn hooks(&self) -> Hooks {
        Hooks(Arc::new(Source(self.shared.clone())))
    }

    /// The most turns a conversation has.
    pub fn turns(&self) -> usize {
        self.shared.turns
    }

    pub fn figures(&self) -> ChatFigures {
        self.shared.figures.lock().expect("not poisoned").clone()
    }

    /// The conversations as the run's sessions (call once the run is over).
    pub fn annotate(&self, result: &mut RunResult) {
        let f = self.figures();
        let l = self.shared.lifetimes.lock().expect("not poisoned");
        let mut h = stampede_engine::Hist::default();
        let _ = h.0.add(&*l);
        result.histograms.session = h;
        result.sessions = Some(SessionStats {
            started: f.started,
            completed: f.completed,
            failed: f.failed,
            max_concurrent: (result.sessions.as_ref())
                .map_or(result.settings.connections, |s| s.max_concurrent),
            lifetime: LatencyStats::of(&l),
            calls: self.shared.turns as u32,
            burst: 1,
        });
    }
}

struct Source(Arc<Shared>);

impl ThreadHooksSource for Source {
    fn thread(&self, index: usize) -> Box<dyn ThreadHooks> {
        Box::new(Talker {
            shared: self.0.clone(),
            talks: Vec::new(),
            draw: self.0.chat.seed ^ (index as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
            figures: ChatFigures::default(),
        })
    }

    fn any_protocol(&self) -> bool {
        true
    }

    fn targets(&self) -> Vec<String> {
        (1..=self.0.turns.min(MAX_TURN_FIGURES))
            .map(|t| format!("turn {t}"))
            .collect()
    }
}

/// One user's conversation in progress.
struct Talk {
    conv: usize,
    turn: usize,
    /// (user text, its tokens, answer text, its tokens), oldest first.
    history: Vec<(usize, u32, String, u32)>,
    bytes: usize,
    active: bool,
    started: Instant,
    wait: Duration,
}

struct Talker {
    shared: Arc<Shared>,
    talks: Vec<Option<Talk>>,
    draw: u64,
    figures: ChatFigures,
}

impl Drop for Talker {
    fn drop(&mut self) {
        self.flush();
    }
}

impl Talker {
    fn flush(&mut self) {
        let f = std::mem::take(&mut self.figures);
        if let Ok(mut s) = self.shared.figures.lock() {
            s.started += f.started;
            s.completed += f.completed;
            s.failed += f.failed;
            s.ended_at_limit += f.ended_at_limit;
            s.exchanges_dropped += f.exchanges_dropped;
            s.turns_answered += f.turns_answered;
            s.max_context_sent = s.max_context_sent.max(f.max_context_sent);
        }
    }

    fn count(&self, text: &str) -> u32 {
        match &self.shared.chat.tokenizer {
            Some(t) => t.count(text),
            None => text.split_whitespace().count() as u32,
        }
    }

    fn talk(&mut self, conn: usize) -> &mut Talk {
        if self.talks.len() <= conn {
            self.talks.resize_with(conn + 1, || None);
        }
        self.talks[conn].get_or_insert_with(|| Talk {
            conv: 0,
            turn: 0,
            history: Vec::new(),
            bytes: 0,
            active: false,
            started: Instant::now(),
            wait: Duration::ZERO,
        })
    }

    fn begin(&mut self, conn: usize) {
        let n = self.shared.chat.conversations.len() as u64;
        let conv = (self.shared.next.fetch_add(1, Ordering::Relaxed) % n) as usize;
        self.figures.started += 1;
        let t = self.talk(conn);
        *t = Talk {
            conv,
            turn: 0,
            history: Vec::new(),
            bytes: 0,
            active: true,
            started: Instant::now(),
            wait: Duration::ZERO,
        };
    }

    /// The conversation on `conn` is over.
    fn end(&mut self, conn: usize, ok: bool) {
        let Some(t) = self.talks.get_mut(conn).and_then(Option::as_mut) else {
            return;
        };
        if !t.active {
            return;
        }
        t.active = false;
        t.history = Vec::new();
        t.wait = Duration::ZERO;
        if ok {
            self.figures.completed += 1;
            let us = t.started.elapsed().as_micros().max(1) as u64;
            if let Ok(mut l) = self.shared.lifetimes.lock() {
                l.saturating_record(us);
            }
        } else {
            self.figures.failed += 1;
        }
    }

    /// Fits the history of `conn` under the context limit for its next turn: the
    /// tokens its request will hold, or `None` when the conversation ends here.
    fn fit(&mut self, conn: usize) -> Option<u32> {
        let shared = self.shared.clone();
        let chat = &shared.chat;
        let sys = chat.system.as_deref().map_or(0, |s| self.count(s));
        let t = self.talks[conn].as_ref().expect("a talk");
        let prompt = &chat.conversations[t.conv].turns[t.turn].prompt;
        let now = self.count(prompt);
        let t = self.talks[conn].as_mut().expect("a talk");
        let mut total = sys + now + t.history.iter().map(|h| h.1 + h.3).sum::<u32>();
        if let Some(max) = chat.max_context {
            while total > max {
                match chat.overflow {
                    Overflow::DropOldest if !t.history.is_empty() => {
                        let (ub, un, a, an) = t.history.remove(0);
                        total -= un + an;
                        t.bytes -= ub + a.len();
                        self.figures.exchanges_dropped += 1;
                    }
                    // Nothing left to drop: the turn goes as it is.
                    Overflow::DropOldest => break,
                    Overflow::End => return None,
                }
            }
        }
        Some(total)
    }

    /// The request of the turn on `conn`, written into `out`.
    fn render(&self, conn: usize, out: &mut Vec<u8>) {
        let chat = &self.shared.chat;
        let t = self.talks[conn].as_ref().expect("a talk");
        let conv = &chat.conversations[t.conv];
        let mut messages = Vec::with_capacity(2 * t.history.len() + 2);
        if let Some(s) = &chat.system {
            messages.push(json!({"role": "system", "content": s}));
        }
        for (i, (_, _, answer, _)) in t.history.iter().enumerate() {
            // The history keeps what was asked by its turn's place: turn i's prompt.
            let at = t.turn - t.history.len() + i;
            messages.push(json!({"role": "user", "content": conv.turns[at].prompt}));
            messages.push(json!({"role": "assistant", "content": answer}));
        }
        let turn = &conv.turns[t.turn];
        messages.push(json!({"role": "user", "content": turn.prompt}));
        let mut body = json!({"model": chat.model, "messages": messages});
        if turn.max_tokens > 0 {
            body["max_completion_tokens"] = turn.max_tokens.into();
        }
        if chat.stream {
            body["stream"] = true.into();
            body["stream_options"] = json!({"include_usage": true});
        }
        for (k, v) in &chat.extra {
            body[k] = v.clone();
        }
        let body = serde_json::to_vec(&body).expect("a JSON value serialises");
        out.extend_from_slice(b"POST ");
        out.extend_from_slice(chat.path.as_bytes());
        out.extend_from_slice(b" HTTP/1.1\r\nHost: ");
        out.extend_from_slice(chat.authority.as_bytes());
        out.extend_from_slice(b"\r\nContent-Type: application/json\r\n");
        for (n, v) in &chat.headers {
            out.extend_from_slice(format!("{n}: {v}\r\n").as_bytes());
        }
        out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
        out.extend_from_slice(&body);
    }

    fn delay_draw(&mut self) -> Duration {
        let (lo, hi) = self.shared.chat.delay;
        if hi <= lo {
            return lo;
        }
        self.draw = self.draw.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.draw;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        let u = ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64;
        lo + (hi - lo).mul_f64(u)
    }
}

/// The answer's text: a streamed reply's `delta.content` pieces joined, or a whole
/// reply's `message.content`.
pub fn answer_text(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let mut out = String::new();
    let mut streamed = false;
    for line in text.lines() {
        let Some(data) = line.strip_prefix("data:") else {
            continue;
        };
        streamed = true;
        let Ok(v) = serde_json::from_str::<Value>(data.trim()) else {
            continue;
        };
        let c = &v["choices"][0];
        if let Some(s) = c["delta"]["content"].as_str().or(c["text"].as_str()) {
            out.push_str(s);
        }
    }
    if !streamed {
        if let Ok(v) = serde_json::from_str::<Value>(&text) {
            let c = &v["choices"][0];
            if let Some(s) = c["message"]["content"].as_str().or(c["text"].as_str()) {
                out.push_str(s);
            }
        }
    }
    out
}

impl ThreadHooks for Talker {
    fn builds_requests(&self) -> bool {
        true
    }

    fn wants_responses(&self) -> bool {
        true
    }

    fn has_delay(&self) -> bool {
        !self.shared.chat.delay.1.is_zero()
    }

    fn address(&self) -> Option<std::net::SocketAddr> {
        None
    }

    fn watches_sends(&self) -> bool {
        true
    }

    fn request(&mut self, conn: usize, out: &mut Vec<u8>) -> Flow {
        // A conversation that cannot fit its first turn ends; a few in a row stop
        // looking and send the turn as it is.
        for _ in 0..4 {
            if !self.talk(conn).active {
                self.begin(conn);
            }
            match self.fit(conn) {
                Some(tokens) => {
                    self.figures.max_context_sent = self.figures.max_context_sent.max(tokens);
                    self.render(conn, out);
                    return Flow::Go;
                }
                None => {
                    self.figures.ended_at_limit += 1;
                    let first = self.talk(conn).turn == 0;
                    // Ended at its limit: the turns it had are its whole.
                    self.end(conn, !first);
                }
            }
        }
        self.begin(conn);
        self.render(conn, out);
        Flow::Go
    }

    fn target(&self, conn: usize) -> u32 {
        (self.talks.get(conn).and_then(Option::as_ref))
            .map_or(0, |t| t.turn.min(MAX_TURN_FIGURES - 1) as u32)
    }

    fn response(&mut self, reply: &Reply<'_>) -> Flow {
        let conn = reply.conn;
        let Some(t) = self.talks.get(conn).and_then(Option::as_ref) else {
            return Flow::Go;
        };
        if !t.active {
            return Flow::Go;
        }
        if !(200..300).contains(&reply.status) || reply.cut {
            self.end(conn, false);
            return Flow::Go;
        }
        let answer = answer_text(reply.body);
        let tokens = self.count(&answer);
        let shared = self.shared.clone();
        let t = self.talks[conn].as_ref().expect("a talk");
        let prompt = &shared.chat.conversations[t.conv].turns[t.turn].prompt;
        let user_tokens = self.count(prompt);
        self.figures.turns_answered += 1;
        let t = self.talks[conn].as_mut().expect("a talk");
        t.bytes += prompt.len() + answer.len();
        t.history.push((prompt.len(), user_tokens, answer, tokens));
        t.turn += 1;
        let over = t.bytes > MAX_HISTORY_BYTES;
        if t.turn == shared.chat.conversations[t.conv].turns.len() {
            self.end(conn, true);
        } else if over {
            self.figures.ended_at_limit += 1;
            self.end(conn, true);
        } else {
            let d = self.delay_draw();
            self.talks[conn].as_mut().expect("a talk").wait = d;
        }
        Flow::Go
    }

    fn delay(&mut self, conn: usize) -> (Duration, Flow) {
        let d = (self.talks.get_mut(conn).and_then(Option::as_mut))
            .map_or(Duration::ZERO, |t| std::mem::take(&mut t.wait));
        (d, Flow::Go)
    }

    fn finished(&mut self, conn: usize) -> bool {
        let done = self
            .talks
            .get(conn)
            .and_then(Option::as_ref)
            .is_none_or(|t| !t.active);
        if done {
            if let Some(t) = self.talks.get_mut(conn) {
                *t = None;
            }
        }
        done
    }

    fn gone(&mut self, conn: usize) {
        self.end(conn, false);
    }
}

#[cfg(test)]
mod tests;
