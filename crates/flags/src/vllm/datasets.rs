//! `vllm bench serve`'s datasets that need no network: each read from its local file
//! (or drawn) into the prompts a run sends, each with the completion tokens it asks
//! for, sampled as vLLM samples them — shuffled with `--seed` unless
//! `--disable-shuffle`, filtered as vLLM filters them, and oversampled (drawn again at
//! random) when a file holds fewer than `--num-prompts` unless `--no-oversample`.
//!
//! Lengths are counted with the model's tokenizer where one is given, else in words
//! (the unit the mock LLM counts in). Prompts are sent as written: no chat template
//! is applied on this side (the server applies its own to chat requests), so a
//! completions prompt's count is its text's.
//!
//! Every file is bounded before it is read: ShareGPT's JSON (hundreds of MB as
//! published) is read as a stream, keeping only each conversation's first turns;
//! the others are read whole within [`Input::List`]'s bound. A file of the wrong
//! shape, or not UTF-8, is refused with its line and the field at fault.

use std::path::Path;

use stampede_engine::input::{self, Input};
use stampede_engine::openai::{filler, MAX_PROMPTS};
use stampede_engine::TokenCounter;

use crate::FlagError;

/// Most bytes of a ShareGPT file (read as a stream, so memory holds only the turns
/// kept).
pub const MAX_SHAREGPT_FILE: u64 = 4 << 30;

/// Most tokens one prompt or completion may ask for.
pub const MAX_LEN: u32 = 1_000_000;

/// A prompt and the completion tokens it asks for.
pub type Sample = (String, u32);

/// How a dataset is sampled: how many, in what order, counted how.
pub struct Ask<'a> {
    pub count: usize,
    pub seed: u64,
    /// Shuffle the file's entries with the seed before taking them (vLLM's default).
    pub shuffle: bool,
    pub tokenizer: Option<&'a TokenCounter>,
}

impl Ask<'_> {
    /// `text`'s length: tokens by the tokenizer, else words.
    pub fn len(&self, text: &str) -> u32 {
        match self.tokenizer {
            Some(t) => t.count(text),
            None => text.split_whitespace().count() as u32,
        }
    }

    fn rng(&self, salt: u64) -> Rng {
        Rng(self.seed ^ salt)
    }
}

/// splitmix64, the engine's: the samples follow the seed exactly.
pub use stampede_engine::openai::Rng;

/// Shuffles `items` in a fixed order for `seed` (Fisher–Yates).
pub fn shuffle<T>(items: &mut [T], seed: u64) {
    let mut r = Rng(seed ^ 0x2545_f491_4f6c_dd1d);
    for i in (1..items.len()).rev() {
        let j = r.below(i + 1);
        items.swap(i, j);
    }
}

/// Fills `samples` up to `count` by drawing from them again at random, as vLLM
/// oversamples, unless `no_oversample`; the note says what was done.
pub fn oversample(
    samples: &mut Vec<Sample>,
    count: usize,
    seed: u64,
    no_oversample: bool,
) -> Option<String> {
    let have = samples.len();
    if have >= count || have == 0 {
        samples.truncate(count);
        return None;
    }
    if no_oversample {
        return Some(format!(
            "the dataset gave {have} prompts of the {count} asked; {have} are sent (--no-oversample)"
        ));
    }
    let mut r = Rng(seed ^ 0x6f76_6572);
    for _ in have..count {
        let pick = samples[r.below(have)].clone();
        samples.push(pick);
    }
    Some(format!(
        "the dataset gave {have} prompts of the {count} asked; {} more are drawn again from them at random (--no-oversample sends the {have})",
        count - have
    ))
}

fn bad(path: &str, line: usize, why: impl std::fmt::Display) -> FlagError {
    bad_at(path, "line", line, why)
}

/// [`bad`], at a `unit` other than a line (a row of a JSON list or a Parquet file).
fn bad_at(path: &str, unit: &str, n: usize, why: impl std::fmt::Display) -> FlagError {
    FlagError::usage(format!("--dataset-path {path}, {unit} {n}: {why}"))
}

fn checked_len(flag: &str, n: u32) -> Result<u32, FlagError> {
    if n == 0 || n > MAX_LEN {
        return Err(FlagError::usage(format!("{flag} {n}: 1 to {MAX_LEN}")));
    }
    Ok(n)
}

/// ShareGPT's JSON: a list of conversations, each `{"conversations": [{"from",
/// "value"}, …]}`. A conversation's first turn is the prompt, its second the reply,
/// whose length (or `output_len`) is what the prompt asks for. Shuffled, then taken
/// in order, skipping as vLLM does prompts or replies under 4 tokens and prompts over
/// 1024 or with their reply over 2048 (the reply's bounds not with `output_len`).
pub fn sharegpt(path: &str, output_len: Option<u32>, ask: &Ask) -> Result<Vec<Sample>, FlagError> {
    let pairs = sharegpt_pairs(path)?;
    let mut order: Vec<usize> = (0..pairs.len()).collect();
    if ask.shuffle {
        shuffle(&mut order, ask.seed);
    }
    let mut out = Vec::new();
    for i in order {
        if out.len() == ask.count {
            break;
        }
        let (q, r) = &pairs[i];
        let prompt_len = ask.len(q);
        let reply = match output_len {
            Some(n) => n,
            None => ask.len(r),
        };
        let short = prompt_len < 4 || (output_len.is_none() && reply < 4);
        let long = prompt_len > 1024 || (output_len.is_none() && prompt_len + reply > 2048);
        if short || long {
            continue;
        }
        out.push((q.clone(), reply.clamp(1, MAX_LEN)));
    }
    if out.is_empty() {
        return Err(FlagError::usage(format!(
            "--dataset-path {path}: no conversation with a prompt of 4 to 1024 tokens and a reply (ShareGPT's layout: a list of {{\"conversations\": [{{\"from\": \"human\", \"value\": …}}, {{\"from\": \"gpt\", \"value\": …}}]}})"
        )));
    }
    Ok(out)
}

/// Each conversation's first two turns' texts, read as a stream.
fn sharegpt_pairs(path: &str) -> Result<Vec<(String, String)>, FlagError> {
    let all = sharegpt_conversations(path, "--dataset-path", 1)?;
    Ok(all
        .into_iter()
        .filter_map(|c| c.into_iter().next())
        .collect())
}

/// ShareGPT's conversations read as a stream (`flag` names the file in errors): of
/// each, its first `turns` exchanges as (the user's text, the reply's), turns
/// alternating from the first; conversations whose first text is empty are left out.
pub fn sharegpt_conversations(
    path: &str,
    flag: &str,
    turns: usize,
) -> Result<Vec<Vec<(String, String)>>, FlagError> {
    use serde::de::{Deserializer as _, IgnoredAny, SeqAccess, Visitor};
    #[derive(serde::Deserialize)]
    struct Turn {
        #[serde(default)]
        value: Option<String>,
    }
    #[derive(serde::Deserialize)]
    struct Conversation {
        #[serde(default)]
        conversations: Vec<Turn>,
    }
    struct Talks(usize);
    impl<'de> Visitor<'de> for Talks {
        type Value = Vec<Vec<(String, String)>>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a list of conversations")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while out.len() < MAX_PROMPTS {
                let Some(c) = seq.next_element::<Conversation>()? else {
                    return Ok(out);
                };
                let mut texts = c.conversations.into_iter().map(|t| t.value);
                let mut talk = Vec::new();
                while talk.len() < self.0 {
                    match (texts.next(), texts.next()) {
                        (Some(Some(q)), Some(Some(r))) if !q.trim().is_empty() => talk.push((q, r)),
                        _ => break,
                    }
                }
                if !talk.is_empty() {
                    out.push(talk);
                }
            }
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(out)
        }
    }
    let f = std::fs::File::open(path)
        .map_err(|e| FlagError::usage(format!("{flag}: cannot read {path}: {e}")))?;
    let size = f.metadata().map(|m| m.len()).unwrap_or(0);
    if size > MAX_SHAREGPT_FILE {
        return Err(FlagError::usage(format!(
            "{flag} {path}: larger than {}, the most read as a ShareGPT file",
            input::size(MAX_SHAREGPT_FILE)
        )));
    }
    let mut de =
        serde_json::Deserializer::from_reader(std::io::BufReader::with_capacity(1 << 20, f));
    let talks = (&mut de)
        .deserialize_seq(Talks(turns.max(1)))
        .and_then(|p| de.end().map(|_| p));
    talks.map_err(|e| {
        FlagError::usage(format!(
            "{flag} {path}, line {}: column {}: not ShareGPT's JSON ({e})",
            e.line(),
            e.column()
        ))
    })
}

/// A text file's lines (vLLM's sonnet): each prompt is an instruction, the file's
/// first lines as a prefix shared by all (`prefix_len` tokens' worth), and lines
/// drawn at random up to `input_len` tokens in all; a draw that comes out longer is
/// drawn again.
pub fn sonnet(
    path: &str,
    input_len: u32,
    output_len: u32,
    prefix_len: u32,
    ask: &Ask,
) -> Result<Vec<Sample>, FlagError> {
    const BASE: &str = "Pick as many lines as you can from these poem lines:\n";
    let input_len = checked_len("--sonnet-input-len", input_len)?;
    let output_len = checked_len("--sonnet-output-len", output_len)?;
    let text = read(path, Input::List)?;
    let lines: Vec<String> = (text.split_inclusive('\n'))
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            if l.ends_with('\n') {
                l.to_string()
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    if lines.is_empty() {
        return Err(FlagError::usage(format!(
            "--dataset-path {path}: no lines in it"
        )));
    }
    let avg = lines.iter().map(|l| f64::from(ask.len(l))).sum::<f64>() / lines.len() as f64;
    let base = ask.len(BASE);
    if input_len <= base {
        return Err(FlagError::usage(format!(
            "--sonnet-input-len {input_len}: must be more than the instruction's {base} tokens"
        )));
    }
    let per_line = avg.max(1.0);
    let inputs = ((f64::from(input_len - base)) / per_line).round() as usize;
    let prefixes = ((f64::from(prefix_len) - f64::from(base)) / per_line)
        .round()
        .max(0.0) as usize;
    let prefixes = prefixes.min(lines.len()).min(inputs);
    let prefix: String = lines[..prefixes].concat();
    let mut r = ask.rng(0x736f_6e6e);
    let mut out = Vec::with_capacity(ask.count);
    let mut tries = 0usize;
    while out.len() < ask.count {
        tries += 1;
        if tries > ask.count.saturating_mul(100).max(1000) {
            return Err(FlagError::usage(format!(
                "--dataset-path {path}: no draw of its lines came within --sonnet-input-len {input_len} tokens; ask for more"
            )));
        }
        let mut p = String::from(BASE);
        p.push_str(&prefix);
        for _ in prefixes..inputs {
            p.push_str(&lines[r.below(lines.len())]);
        }
        if ask.len(&p) <= input_len {
            out.push((p, output_len));
        }
    }
    Ok(out)
}

/// BurstGPT's CSV (`Timestamp,Model,Request tokens,Response tokens,…`): its GPT-4
/// rows that got an answer give each prompt's length and what it asks for; the
/// prompt itself is drawn of that many tokens. Rows are sampled with the seed, with
/// repeats only when the file holds fewer than asked.
pub fn burstgpt(path: &str, ask: &Ask) -> Result<Vec<Sample>, FlagError> {
    let text = read(path, Input::List)?;
    let mut lines = text.lines().enumerate();
    let Some((_, header)) = lines.next() else {
        return Err(FlagError::usage(format!("--dataset-path {path}: empty")));
    };
    let cols: Vec<&str> = header.split(',').map(str::trim).collect();
    let col = |name: &str| {
        cols.iter().position(|c| *c == name).ok_or_else(|| {
            bad(
                path,
                1,
                format!("no {name:?} column (BurstGPT's header: Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type)"),
            )
        })
    };
    let (model, req, resp) = (
        col("Model")?,
        col("Request tokens")?,
        col("Response tokens")?,
    );
    let mut rows: Vec<(u32, u32)> = Vec::new();
    for (i, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        let field = |c: usize, name: &str| -> Result<u32, FlagError> {
            let v = f
                .get(c)
                .ok_or_else(|| bad(path, i + 1, format!("no {name:?} field")))?;
            v.parse::<u32>()
                .map_err(|_| bad(path, i + 1, format!("{name:?} is {v:?}, not a count")))
        };
        if f.get(model).copied() != Some("GPT-4") {
            continue;
        }
        let (q, r) = (
            field(req, "Request tokens")?,
            field(resp, "Response tokens")?,
        );
        if r > 0 && q > 0 && rows.len() < MAX_PROMPTS {
            rows.push((q.min(MAX_LEN), r.min(MAX_LEN)));
        }
    }
    if rows.is_empty() {
        return Err(FlagError::usage(format!(
            "--dataset-path {path}: no GPT-4 row with response tokens (the rows vLLM takes)"
        )));
    }
    let mut r = ask.rng(0x6275_7273);
    let picked: Vec<(u32, u32)> = if ask.count <= rows.len() {
        let mut order: Vec<usize> = (0..rows.len()).collect();
        shuffle(&mut order, ask.seed);
        order[..ask.count].iter().map(|&i| rows[i]).collect()
    } else {
        (0..ask.count).map(|_| rows[r.below(rows.len())]).collect()
    };
    Ok(picked
        .into_iter()
        .map(|(q, out)| (filler(q, ask.tokenizer, &mut || r.draw()), out))
        .collect())
}

/// Lines of a JSONL file as JSON values, each with its line number; a line that is
/// not JSON is refused with its number.
fn jsonl(path: &str, text: &str) -> Result<Vec<(usize, serde_json::Value)>, FlagError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        if out.len() == MAX_PROMPTS {
            return Err(bad(path, i + 1, format!("more than {MAX_PROMPTS} entries")));
        }
        let v =
            serde_json::from_str(line).map_err(|e| bad(path, i + 1, format!("not JSON ({e})")))?;
        out.push((i + 1, v));
    }
    if out.is_empty() {
        return Err(FlagError::usage(format!(
            "--dataset-path {path}: no entries in it"
        )));
    }
    Ok(out)
}

/// vLLM's custom dataset: JSONL, one `{"prompt": …}` a line (an `output_tokens` on
/// a line sets that prompt's, else `output_len`), shuffled unless asked not to.
pub fn custom(path: &str, output_len: u32, ask: &Ask) -> Result<Vec<Sample>, FlagError> {
    let output_len = checked_len("--custom-output-len", output_len)?;
    let text = read(path, Input::List)?;
    let mut out = Vec::new();
    for (line, v) in jsonl(path, &text)? {
        let Some(p) = v.get("prompt").and_then(|p| p.as_str()) else {
            return Err(bad(
                path,
                line,
                "no \"prompt\" string (the custom dataset: {\"prompt\": …} a line)",
            ));
        };
        let n = match v.get("output_tokens") {
            None | Some(serde_json::Value::Null) => output_len,
            Some(n) => match n.as_u64() {
                Some(n) if (1..=u64::from(MAX_LEN)).contains(&n) => n as u32,
                _ => {
                    return Err(bad(
                        path,
                        line,
                        format!("\"output_tokens\" must be 1 to {MAX_LEN}"),
                    ))
                }
            },
        };
        out.push((p.to_string(), n));
    }
    if ask.shuffle {
        shuffle(&mut out, ask.seed);
    }
    out.truncate(ask.count);
    Ok(out)
}

/// Spec-Bench's `question.jsonl`: each line's first of `turns` is a prompt, of the
/// `category` asked (all without one).
pub fn spec_bench(
    path: &str,
    category: Option<&str>,
    output_len: u32,
    ask: &Ask,
) -> Result<Vec<Sample>, FlagError> {
    let output_len = checked_len("--spec-bench-output-len", output_len)?;
    let text = read(path, Input::List)?;
    let mut out = Vec::new();
    for (line, v) in jsonl(path, &text)? {
        let Some(first) = v
            .get("turns")
            .and_then(|t| t.get(0))
            .and_then(|t| t.as_str())
        else {
            return Err(bad(
                path,
                line,
                "no \"turns\" list of strings (Spec-Bench's layout)",
            ));
        };
        if category.is_some_and(|c| v.get("category").and_then(|x| x.as_str()) != Some(c)) {
            continue;
        }
        out.push((first.to_string(), output_len));
    }
    if out.is_empty() {
        return Err(FlagError::usage(format!(
            "--spec-bench-category {}: no entry of it in {path}",
            category.unwrap_or("")
        )));
    }
    if ask.shuffle {
        shuffle(&mut out, ask.seed);
    }
    out.truncate(ask.count);
    Ok(out)
}

/// Hugging Face datasets saved as local files: JSON (a list of rows, or `{"rows":
/// [{"row": …}]}` as its server answers, or `{"data": […]}`), JSONL or Parquet, or a
/// directory holding them (the files of `split` — under `subset` where given). The
/// layouts known: conversations (`conversations`, `conversation`, `messages`; turns
/// of `from`/`value` or `role`/`content`), `turns` (a list of strings), `prompt`,
/// `question`, `problem`, `instruction` (with its `input`), and `text`; each row's
/// reply (the next turn, `completion`, `response`, `answer`, `solution`, `output`)
/// sizes its completion unless `output_len` does.
pub fn hf(
    path: &str,
    subset: Option<&str>,
    split: &str,
    output_len: Option<u32>,
    ask: &Ask,
) -> Result<Vec<Sample>, FlagError> {
    let files = hf_files(path, subset, split)?;
    let mut out = Vec::new();
    for file in &files {
        // Where a row is found in its file: a line of JSONL, a place in a JSON list
        // or a Parquet file's rows.
        let unit = if file.ends_with(".jsonl") {
            "line"
        } else {
            "row"
        };
        let rows: Vec<(usize, serde_json::Value)> = if file.ends_with(".parquet") {
            super::parquet::rows(file)?
        } else if file.ends_with(".jsonl") {
            let text = read(file, Input::List)?;
            jsonl(file, &text)?
        } else {
            let text = read(file, Input::List)?;
            let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
                bad(
                    file,
                    e.line(),
                    format!("column {}: not JSON ({e})", e.column()),
                )
            })?;
            let list = match v {
                serde_json::Value::Array(a) => a,
                serde_json::Value::Object(mut o) => match (o.remove("rows"), o.remove("data")) {
                    (Some(serde_json::Value::Array(rows)), _) => (rows.into_iter())
                        .map(|mut r| r.get_mut("row").map(|x| x.take()).unwrap_or(r))
                        .collect(),
                    (_, Some(serde_json::Value::Array(data))) => data,
                    _ => return Err(bad(
                        file,
                        1,
                        "a JSON dataset is a list of rows, or an object with \"rows\" or \"data\"",
                    )),
                },
                _ => return Err(bad(file, 1, "a JSON dataset is a list of rows")),
            };
            // A JSON file's rows are numbered by their place in its list.
            list.into_iter()
                .enumerate()
                .map(|(i, r)| (i + 1, r))
                .collect()
        };
        for (line, row) in rows {
            let found = hf_row(&row).ok_or_else(|| {
                let keys: Vec<String> = row
                    .as_object()
                    .map(|o| o.keys().cloned().collect())
                    .unwrap_or_default();
                bad_at(file, unit, line, format!(
                    "no prompt in a layout known here (fields: {}); known: conversations, messages, turns, prompt, question, problem, instruction, text",
                    keys.join(", ")
                ))
            })?;
            let Some((prompt, reply)) = found else {
                continue;
            };
            let n = match (output_len, reply) {
                (Some(n), _) => n,
                (None, Some(r)) => ask.len(&r).max(1),
                (None, None) => {
                    return Err(bad_at(
                        file,
                        unit,
                        line,
                        "no reply to size its completion by; give --hf-output-len N",
                    ))
                }
            };
            if out.len() < MAX_PROMPTS && !prompt.trim().is_empty() {
                out.push((prompt, n.min(MAX_LEN)));
            }
        }
    }
    if out.is_empty() {
        return Err(FlagError::usage(format!(
            "--dataset-path {path}: no rows with a prompt"
        )));
    }
    if ask.shuffle {
        shuffle(&mut out, ask.seed);
    }
    out.truncate(ask.count);
    Ok(out)
}

/// The files of a local Hugging Face dataset: the file named, or in a directory the
/// JSON and JSONL files whose names begin with `split` (under `subset/` where given).
fn hf_files(path: &str, subset: Option<&str>, split: &str) -> Result<Vec<String>, FlagError> {
    let p = Path::new(path);
    if !p.is_dir() {
        return Ok(vec![path.to_string()]);
    }
    let dir = match subset {
        Some(s) => p.join(s),
        None => p.to_path_buf(),
    };
    let mut found = Vec::new();
    let mut stack = vec![(dir.clone(), 0)];
    while let Some((d, depth)) = stack.pop() {
        let entries = std::fs::read_dir(&d).map_err(|e| {
            FlagError::usage(format!("--dataset-path: cannot read {}: {e}", d.display()))
        })?;
        for e in entries.flatten() {
            let f = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if f.is_dir() && depth < 3 {
                stack.push((f, depth + 1));
            } else if (name.starts_with(split) || d.file_name().is_some_and(|n| n == split))
                && [".json", ".jsonl", ".parquet"]
                    .iter()
                    .any(|x| name.ends_with(x))
            {
                found.push(f.to_string_lossy().into_owned());
            }
        }
    }
    found.sort();
    if found.is_empty() {
        return Err(FlagError::usage(format!(
            "--dataset-path {}: no JSON, JSONL or Parquet file of split {split:?} in it (--hf-split names another)",
            dir.display()
        )));
    }
    Ok(found)
}

/// A row's prompt and its reply, in the layouts [`hf`] knows: `None` for a layout not
/// known, `Some(None)` for a known one without a prompt (a conversation with no user
/// turn, an empty or null list), which is passed over.
fn hf_row(row: &serde_json::Value) -> Option<Option<(String, Option<String>)>> {
    let s = |k: &str| row.get(k).and_then(|v| v.as_str()).map(str::to_string);
    for key in ["conversations", "conversation", "messages"] {
        let turns = match row.get(key) {
            Some(serde_json::Value::Array(turns)) => turns,
            Some(serde_json::Value::Null) => return Some(None),
            _ => continue,
        };
        let text = |t: &serde_json::Value| {
            (t.get("value").or_else(|| t.get("content")))
                .and_then(|v| v.as_str())
                .map(str::to_string)
        };
        let role = |t: &serde_json::Value| {
            (t.get("from").or_else(|| t.get("role")))
                .and_then(|v| v.as_str())
                .unwrap_or("")
                .to_string()
        };
        let Some(first) =
            (turns.iter()).position(|t| matches!(role(t).as_str(), "human" | "user" | ""))
        else {
            return Some(None);
        };
        let reply = turns.get(first + 1).and_then(text);
        return Some(text(&turns[first]).map(|prompt| (prompt, reply)));
    }
    if let Some(t) = row.get("turns").and_then(|t| t.as_array()) {
        return Some(
            t.first()
                .and_then(|f| f.as_str())
                .map(|f| (f.to_string(), None)),
        );
    }
    let reply = ["completion", "response", "answer", "solution", "output"]
        .iter()
        .find_map(|k| s(k));
    if let Some(i) = s("instruction") {
        let prompt = match s("input").filter(|x| !x.is_empty()) {
            Some(input) => format!("{i}\n{input}"),
            None => i,
        };
        return Some(Some((prompt, reply)));
    }
    ["prompt", "question", "problem", "text"]
        .iter()
        .find_map(|k| s(k))
        .map(|p| Some((p, reply)))
}

/// vLLM's prefix_repetition: `prefixes` prefixes of `prefix_len` tokens, each
/// followed by `count / prefixes` suffixes of `suffix_len`, shuffled unless asked not
/// to — the prompts a prefix cache is measured with.
pub fn prefix_repetition(
    prefix_len: u32,
    suffix_len: u32,
    prefixes: usize,
    output_len: u32,
    ask: &Ask,
) -> Result<Vec<Sample>, FlagError> {
    let output_len = checked_len("--prefix-repetition-output-len", output_len)?;
    let total = u64::from(prefix_len) + u64::from(suffix_len);
    if total == 0 || total > u64::from(MAX_LEN) {
        return Err(FlagError::usage(format!(
            "--prefix-repetition-prefix-len and --prefix-repetition-suffix-len: 1 to {MAX_LEN} tokens together"
        )));
    }
    if prefixes == 0 || prefixes > ask.count {
        return Err(FlagError::usage(format!(
            "--prefix-repetition-num-prefixes {prefixes}: 1 to --num-prompts ({})",
            ask.count
        )));
    }
    let mut r = ask.rng(0x7072_6566);
    let mut out = Vec::with_capacity(ask.count);
    let per = ask.count / prefixes;
    for _ in 0..prefixes {
        let prefix = filler(prefix_len, ask.tokenizer, &mut || r.draw());
        for _ in 0..per {
            let suffix = filler(suffix_len, ask.tokenizer, &mut || r.draw());
            let p = match (prefix.is_empty(), suffix.is_empty()) {
                (true, _) => suffix,
                (_, true) => prefix.clone(),
                _ => format!("{prefix} {suffix}"),
            };
            out.push((p, output_len));
        }
    }
    if ask.shuffle {
        shuffle(&mut out, ask.seed);
    }
    Ok(out)
}

/// A dataset file as text, within its kind's bound.
fn read(path: &str, kind: Input) -> Result<String, FlagError> {
    input::read_text(path, "--dataset-path", kind).map_err(|e| FlagError::usage(e.to_string()))
}
