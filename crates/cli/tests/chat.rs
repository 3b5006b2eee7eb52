//! Multi-turn chats (`load --openai chat --turns N`) end to end against the
//! reference server's batching mock: the history each turn carries counted by the
//! engine itself, the figures per turn, and conversations arriving at a rate. Every
//! run is bounded by its request count or its arrivals.

use crate::common::recorder::{stampede, tempdir, text};

fn engine(max_seqs: u32) -> stampede_server::Running {
    crate::vllm::engine_mock(max_seqs)
}

/// The engine's counter `name` (summed over its label sets) from `/metrics`.
fn counter(s: &stampede_server::Running, name: &str) -> f64 {
    let text = crate::vllm::get(s.addr(), "/metrics");
    (text.lines())
        .filter(|l| l.starts_with(name) && l.as_bytes().get(name.len()) == Some(&b'{'))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Multi-turn chats carry their history: one connection, three conversations of
/// three turns, a 16-word system prompt, 8-word turns and 4-token answers. Turn t's
/// prompt is the system prompt, every earlier turn and answer, and its own: 24, 36
/// and 48 words, 108 a conversation; the engine counts exactly that.
#[test]
fn chat_turns_carry_the_history_and_the_answers() {
    let s = engine(8);
    let dir = tempdir::Dir::new();
    let json = dir.0.join("chat.json").to_string_lossy().into_owned();
    let out = stampede(&[
        "load",
        &s.url("/v1/chat/completions"),
        "--openai",
        "chat",
        "--turns",
        "3",
        "--system-prompt",
        "16",
        "--input-tokens",
        "8",
        "--output-tokens",
        "4",
        "--ignore-eos",
        "--turn-delay",
        "1ms-5ms",
        "-c",
        "1",
        "-n",
        "9",
        "--json",
        &json,
    ]);
    let e = text(&out.stderr);
    assert!(out.status.success(), "{e}");
    assert!(
        e.contains("3 conversations begun, 3 completed, 0 failed"),
        "{e}"
    );
    assert_eq!(counter(&s, "vllm:prompt_tokens_total"), 3.0 * 108.0);
    assert_eq!(counter(&s, "vllm:generation_tokens_total"), 9.0 * 4.0);
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let turns: Vec<(String, u64)> = (r["targets"].as_array().unwrap().iter())
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_string(),
                t["first_event"]["count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        turns,
        [
            ("turn 1".into(), 3),
            ("turn 2".into(), 3),
            ("turn 3".into(), 3)
        ]
    );
    assert_eq!(r["sessions"]["completed"], 3);
    assert!(
        text(&out.stdout).contains("ttft p50"),
        "per turn TTFT in the report"
    );
}

/// With --rate, conversations arrive at that rate, each on its own connection, and
/// go on to their last turn after the arrivals end.
#[test]
fn chat_conversations_arrive_at_the_rate() {
    let s = engine(64);
    let dir = tempdir::Dir::new();
    let json = dir.0.join("arrive.json").to_string_lossy().into_owned();
    let out = stampede(&[
        "load",
        &s.url("/v1/chat/completions"),
        "--openai",
        "chat",
        "--turns",
        "2",
        "--input-tokens",
        "6",
        "--output-tokens",
        "3",
        "--rate",
        "20",
        "-d",
        "1s",
        "--json",
        &json,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let done: Vec<u64> = (r["targets"].as_array().unwrap().iter())
        .map(|t| t["completed"].as_u64().unwrap())
        .collect();
    assert_eq!(done, [20, 20], "{}", text(&out.stderr));
    assert_eq!(r["sessions"]["completed"], 20);
}

/// GuideLLM's `turns`: a concurrent benchmark's streams hold conversations, and its
/// JSON has the figures by turn.
#[test]
fn guidellm_turns_hold_conversations() {
    let s = engine(16);
    let dir = tempdir::Dir::new();
    let json = dir.0.join("g.json").to_string_lossy().into_owned();
    let out = stampede(&[
        "guidellm",
        "run",
        "--backend",
        &format!("kind=openai_http,target={},model=stampede-mock", s.url("")),
        "--profile",
        "kind=concurrent,streams=2",
        "--constraint",
        "kind=max_requests,count=12",
        "--data",
        "kind=synthetic_text,prompt_tokens=10,output_tokens=3,turns=3,delay=0.002",
        "--output",
        &format!("kind=json,path={json}"),
    ]);
    let o = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(o.contains("Per Turn"), "{o}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let turns = v["benchmarks"][0]["metrics"]["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 3, "{turns:?}");
    assert!(
        turns.iter().all(|t| t["successful"].as_u64().unwrap() >= 3),
        "{turns:?}"
    );
    // Every turn after the first carries the history: the engine saw more prompt
    // tokens than the turns' own 12 × 10.
    let prompt = counter(&s, "vllm:prompt_tokens_total");
    assert!(prompt > 12.0 * 10.0 + 10.0, "{prompt}");
}
