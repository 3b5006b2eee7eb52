//! GuideLLM's `--data`: synthetic text (`kind=synthetic_text,prompt_tokens=…,
//! output_tokens=…` with their `_stdev`, `_min`, `_max` and `samples`, or the older
//! bare `prompt_tokens=256,output_tokens=128`) drawn with the seed, or prompts from a
//! local file — `text_file` (a prompt a line), `json_file` (a JSON list of objects,
//! or JSONL) and `csv_file` (a header row) — whose prompt column is found by
//! GuideLLM's usual names and whose `output_tokens_count` column, when there, sets
//! what each asks for. A file that is too large, not UTF-8 or of the wrong shape is
//! refused with its line and field.

use std::time::Duration;

use serde_json::{Map, Value};
use stampede_engine::input::{self, Input};
use stampede_engine::TokenCounter;

use stampede_journey::feeder::{Feeder, Format};

use super::kv::{self, Fields};
use crate::aiperf::normal;
use crate::vllm::datasets::{Rng, Sample, MAX_LEN};
use crate::FlagError;

/// The columns a prompt is read from, in GuideLLM's order of preference.
const PROMPT_COLUMNS: [&str; 7] = [
    "prompt",
    "text",
    "instruction",
    "question",
    "input",
    "content",
    "query",
];

/// The columns an answer's length is read from.
const OUTPUT_COLUMNS: [&str; 3] = ["output_tokens_count", "output_tokens", "max_tokens"];

/// Synthetic samples drawn when `samples` is not given (GuideLLM's default).
const DEFAULT_SAMPLES: u64 = 1000;

/// Conversations of several turns: their count per conversation and the wait
/// before each turn after the first (uniform within the bounds).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Turns {
    pub turns: usize,
    pub delay: (Duration, Duration),
}

/// The samples `--data` gives (conversations' turns in order, `Turns::turns` a
/// conversation), its turns, and its fields as the JSON's config echoes them.
pub fn read(
    data: &[String],
    seed: u64,
    tokenizer: Option<&TokenCounter>,
) -> Result<(Vec<Sample>, Turns, Value), FlagError> {
    let [one] = data else {
        return Err(FlagError::usage(if data.is_empty() {
            "--data: needed, e.g. --data kind=synthetic_text,prompt_tokens=256,output_tokens=128"
        } else {
            "--data: one source is offered here"
        }));
    };
    let m = if one.trim_start().starts_with('{') || one.contains('=') {
        let mut m = kv::parse("--data", one)?;
        if !m.contains_key("kind") {
            let kind = if m.contains_key("path") {
                kind_of_path(m["path"].as_str().unwrap_or(""))
            } else {
                "synthetic_text"
            };
            m.insert("kind".into(), kind.into());
        }
        m
    } else {
        let mut m = Map::new();
        m.insert("kind".into(), kind_of_path(one).into());
        m.insert("path".into(), one.clone().into());
        m
    };
    let echo = Value::Object(m.clone());
    let mut f = Fields::from_map("--data", m, "synthetic_text");
    let mut turns = Turns {
        turns: 1,
        delay: (Duration::ZERO, Duration::ZERO),
    };
    let samples = match f.kind() {
        "synthetic_text" => synthetic(&mut f, seed, tokenizer, &mut turns)?,
        "text_file" | "json_file" | "csv_file" => {
            let path = f.string("path")?.ok_or_else(|| {
                FlagError::usage(format!("--data kind={}: path=FILE is needed", f.kind()))
            })?;
            let kind = f.kind().to_string();
            f.done(&["path"])?;
            file(&kind, &path)?
        }
        other => {
            return Err(FlagError::usage(format!(
                "--data kind={other}: synthetic_text, text_file, json_file or csv_file (Hugging Face datasets are downloaded, and nothing is downloaded here; media kinds are not offered)"
            )))
        }
    };
    Ok((samples, turns, echo))
}

fn kind_of_path(p: &str) -> &'static str {
    let p = p.to_ascii_lowercase();
    if p.ends_with(".json") || p.ends_with(".jsonl") {
        "json_file"
    } else if p.ends_with(".csv") {
        "csv_file"
    } else {
        "text_file"
    }
}

/// A length drawn around `mean`, kept within `min..=max`.
fn length(r: &mut Rng, mean: f64, stdev: Option<f64>, min: Option<u64>, max: Option<u64>) -> u32 {
    let n = normal(r, mean, stdev.unwrap_or(0.0));
    let lo = min.unwrap_or(1).max(1) as u32;
    let hi = max.map_or(MAX_LEN, |m| (m as u32).clamp(lo, MAX_LEN));
    n.clamp(lo, hi)
}

/// GuideLLM's think time between turns (seconds: `delay` with `_stdev`, `_min`,
/// `_max`) as uniform bounds: its min and max when given, else the mean ± √3 × the
/// standard deviation (the same spread), within 0.
fn delay(f: &mut Fields) -> Result<(Duration, Duration), FlagError> {
    let mean = f.number("delay")?;
    let (sd, lo, hi) = (
        f.number("delay_stdev")?,
        f.number("delay_min")?,
        f.number("delay_max")?,
    );
    let Some(mean) = mean else {
        return Ok((Duration::ZERO, Duration::ZERO));
    };
    let half = sd.unwrap_or(0.0) * 3f64.sqrt();
    let lo = lo.unwrap_or(mean - half).max(0.0);
    let hi = hi.unwrap_or(mean + half).max(lo);
    if !(mean >= 0.0 && hi <= 86_400.0) {
        return Err(FlagError::usage(
            "--data kind=synthetic_text: delay is seconds from 0 to a day",
        ));
    }
    Ok((Duration::from_secs_f64(lo), Duration::from_secs_f64(hi)))
}

fn synthetic(
    f: &mut Fields,
    seed: u64,
    tokenizer: Option<&TokenCounter>,
    turns: &mut Turns,
) -> Result<Vec<Sample>, FlagError> {
    let pt = f
        .positive("prompt_tokens")?
        .ok_or_else(|| FlagError::usage("--data kind=synthetic_text: prompt_tokens=N is needed"))?;
    let (ps, pmin, pmax) = (
        f.number("prompt_tokens_stdev")?,
        f.count("prompt_tokens_min", 1)?,
        f.count("prompt_tokens_max", 1)?,
    );
    let ot = f.positive("output_tokens")?;
    let (os, omin, omax) = (
        f.number("output_tokens_stdev")?,
        f.count("output_tokens_min", 1)?,
        f.count("output_tokens_max", 1)?,
    );
    let n = f.count("samples", 1)?.unwrap_or(DEFAULT_SAMPLES);
    let t = f.count("turns", 1)?.unwrap_or(1).min(1000) as usize;
    let first_p = f.positive("first_prompt_tokens")?;
    let first_o = f.positive("first_output_tokens")?;
    *turns = Turns {
        turns: t,
        delay: delay(f)?,
    };
    for unused in [
        "source",
        "prefix_buckets",
        "branches",
        "tool_call_turns",
        "tools",
    ] {
        if f.take(unused).is_some() {
            return Err(FlagError::usage(format!(
                "--data kind=synthetic_text: {unused} is not offered; prompt_tokens, output_tokens (each with _stdev, _min, _max) and samples are"
            )));
        }
    }
    f.take("load_kwargs");
    f.done(&[
        "prompt_tokens",
        "prompt_tokens_stdev",
        "prompt_tokens_min",
        "prompt_tokens_max",
        "output_tokens",
        "output_tokens_stdev",
        "output_tokens_min",
        "output_tokens_max",
        "samples",
        "turns",
        "first_prompt_tokens",
        "first_output_tokens",
        "delay",
        "delay_stdev",
        "delay_min",
        "delay_max",
    ])?;
    // `samples` conversations of `turns` turns each.
    let n = n.saturating_mul(t as u64);
    if n as usize > stampede_engine::openai::MAX_PROMPTS {
        return Err(FlagError::usage(format!(
            "--data kind=synthetic_text: samples={n}: at most {}",
            stampede_engine::openai::MAX_PROMPTS
        )));
    }
    if ps.is_some_and(|s| s < 0.0) || os.is_some_and(|s| s < 0.0) {
        return Err(FlagError::usage(
            "--data kind=synthetic_text: a _stdev is 0 or more",
        ));
    }
    let mut r = Rng(seed ^ 0x6775_6964);
    Ok((0..n)
        .map(|i| {
            // A conversation's first turn may have lengths of its own.
            let first = i % t as u64 == 0;
            let len = match first_p.filter(|_| first) {
                Some(p) => length(&mut r, p, None, None, None),
                None => length(&mut r, pt, ps, pmin, pmax),
            };
            let out = match first_o.filter(|_| first) {
                Some(o) => length(&mut r, o, None, None, None),
                None => ot.map_or(0, |m| length(&mut r, m, os, omin, omax)),
            };
            (
                stampede_engine::openai::filler(len, tokenizer, &mut || r.draw()),
                out,
            )
        })
        .collect())
}

/// One record's prompt and asked length, or why not.
fn record(o: &Map<String, Value>) -> Result<Sample, String> {
    let prompt = PROMPT_COLUMNS
        .iter()
        .find_map(|c| o.get(*c).and_then(Value::as_str))
        .ok_or_else(|| format!("no prompt column ({})", PROMPT_COLUMNS.join(", ")))?;
    let out = match OUTPUT_COLUMNS.iter().find_map(|c| o.get(*c)) {
        None => 0,
        Some(v) => match v
            .as_u64()
            .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
        {
            Some(n) if n <= u64::from(MAX_LEN) => n as u32,
            _ => return Err(format!("its output tokens ({v}) are not a count")),
        },
    };
    Ok((prompt.to_string(), out))
}

fn file(kind: &str, path: &str) -> Result<Vec<Sample>, FlagError> {
    let text = input::read_text(path, "--data", Input::List)
        .map_err(|e| FlagError::usage(e.to_string()))?;
    let at =
        |line: usize, why: String| FlagError::usage(format!("--data {path}, line {line}: {why}"));
    let mut out = Vec::new();
    let mut push = |s: Sample, line: usize| {
        if out.len() == stampede_engine::openai::MAX_PROMPTS {
            return Err(at(
                line,
                format!("more than {} prompts", stampede_engine::openai::MAX_PROMPTS),
            ));
        }
        out.push(s);
        Ok(())
    };
    match kind {
        "text_file" => {
            for (i, l) in text
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
            {
                push((l.to_string(), 0), i + 1)?;
            }
        }
        "json_file" if text.trim_start().starts_with('[') => {
            let v: Value =
                serde_json::from_str(&text).map_err(|e| at(e.line(), format!("not JSON ({e})")))?;
            for (i, item) in v.as_array().into_iter().flatten().enumerate() {
                let o = item
                    .as_object()
                    .ok_or_else(|| at(1, format!("entry {} is not an object", i + 1)))?;
                push(
                    record(o).map_err(|w| at(1, format!("entry {}: {w}", i + 1)))?,
                    1,
                )?;
            }
        }
        "json_file" => {
            for (i, l) in text
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
            {
                let v: Value =
                    serde_json::from_str(l).map_err(|e| at(i + 1, format!("not JSON ({e})")))?;
                let o = v
                    .as_object()
                    .ok_or_else(|| at(i + 1, "not an object".into()))?;
                push(record(o).map_err(|w| at(i + 1, w))?, i + 1)?;
            }
        }
        _ => {
            // The feeders' RFC 4180 reader: a header row, quoted fields, ragged rows
            // refused with their line.
            let f = Feeder::parse(path, text.as_bytes(), Format::Csv)
                .map_err(|e| FlagError::usage(format!("--data {e}")))?;
            for r in 0..f.rows() {
                let o: Map<String, Value> = (f.columns().iter().enumerate())
                    .map(|(c, n)| (n.clone(), Value::String(f.cell(r, c).to_string())))
                    .collect();
                let row =
                    |w: String| FlagError::usage(format!("--data {path}, row {}: {w}", r + 1));
                push(record(&o).map_err(row)?, r + 2)?;
            }
        }
    }
    if out.is_empty() {
        return Err(FlagError::usage(format!("--data {path}: no prompts in it")));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str, body: &str) -> String {
        let dir =
            std::env::temp_dir().join(format!("stampede-guidellm-data-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, body).unwrap();
        p.to_string_lossy().into_owned()
    }

    #[test]
    fn synthetic_lengths_follow_the_fields_and_the_seed() {
        let d = ["kind=synthetic_text,prompt_tokens=20,prompt_tokens_stdev=5,prompt_tokens_min=15,prompt_tokens_max=22,output_tokens=8,samples=50".to_string()];
        let (s, _, echo) = read(&d, 1, None).unwrap();
        assert_eq!(s.len(), 50);
        assert!(s
            .iter()
            .all(|(p, o)| (15..=22).contains(&p.split_whitespace().count()) && *o == 8));
        assert!(s.iter().any(|(p, _)| p.split_whitespace().count() != 20));
        assert_eq!(echo["prompt_tokens"], 20);
        assert_eq!(read(&d, 1, None).unwrap().0, s, "the seed repeats the draw");
        let (old, _, _) = read(&["prompt_tokens=4,output_tokens=2".to_string()], 1, None).unwrap();
        assert_eq!(old.len(), 1000);
        let (s, t, _) = read(
            &["kind=synthetic_text,prompt_tokens=4,first_prompt_tokens=9,output_tokens=2,turns=3,samples=5,delay=1,delay_stdev=0.5".to_string()],
            1,
            None,
        )
        .unwrap();
        assert_eq!(s.len(), 15, "five conversations of three turns");
        assert_eq!(
            s[3].0.split_whitespace().count(),
            9,
            "a first turn's own length"
        );
        assert_eq!(s[4].0.split_whitespace().count(), 4);
        assert_eq!(t.turns, 3);
        let (lo, hi) = (t.delay.0.as_secs_f64(), t.delay.1.as_secs_f64());
        assert!(
            (lo - (1.0 - 0.5 * 3f64.sqrt())).abs() < 1e-9
                && (hi - (1.0 + 0.5 * 3f64.sqrt())).abs() < 1e-9
        );
    }

    #[test]
    fn files_are_read_by_their_kind_and_refused_with_line_and_field() {
        let t = tmp("p.txt", "one\n\ntwo three\n");
        assert_eq!(
            read(&[t], 0, None).unwrap().0,
            [("one".into(), 0), ("two three".into(), 0)]
        );
        let j = tmp(
            "p.jsonl",
            "{\"prompt\":\"a b\",\"output_tokens_count\":3}\n{\"text\":\"c\"}\n",
        );
        assert_eq!(
            read(&[j], 0, None).unwrap().0,
            [("a b".into(), 3), ("c".into(), 0)]
        );
        let j = tmp(
            "l.json",
            r#"[{"question":"q1"},{"question":"q2","max_tokens":"5"}]"#,
        );
        assert_eq!(
            read(&[format!("kind=json_file,path={j}")], 0, None)
                .unwrap()
                .0,
            [("q1".into(), 0), ("q2".into(), 5)]
        );
        let c = tmp(
            "p.csv",
            "id,prompt,output_tokens_count\n1,\"hello, world\",4\n2,\"say \"\"hi\"\"\n twice\",2\n",
        );
        assert_eq!(
            read(&[c], 0, None).unwrap().0,
            [("hello, world".into(), 4), ("say \"hi\"\n twice".into(), 2)]
        );
        for (name, body, want) in [
            (
                "b.jsonl",
                "{\"prompt\":\"a\"}\n{\"nope\":1}\n",
                "line 2: no prompt column",
            ),
            (
                "c.jsonl",
                "{\"prompt\":\"a\"}\nnot json\n",
                "line 2: not JSON",
            ),
            (
                "d.csv",
                "prompt,x\na,1\nb\n",
                "d.csv:3: 1 fields; the header names 2",
            ),
            (
                "e.jsonl",
                "{\"prompt\":\"a\",\"output_tokens\":-1}\n",
                "line 1: its output tokens (-1) are not a count",
            ),
        ] {
            let e = read(&[tmp(name, body)], 0, None).unwrap_err().to_string();
            assert!(e.contains(want), "{name}: {e}");
        }
        let bin = tmp("bin.txt", "");
        std::fs::write(&bin, [0xff, 0xfe, b'\n']).unwrap();
        assert!(read(&[bin], 0, None)
            .unwrap_err()
            .to_string()
            .contains("UTF-8"));
    }
}
