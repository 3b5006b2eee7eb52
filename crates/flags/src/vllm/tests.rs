//! `vllm bench serve`'s flags and datasets, checked without a server: each dataset's
//! file read (and refused with its line where it is malformed), sampled with the
//! seed and oversampled, and the flags' bodies, headers and shapes.

use super::datasets::{self, oversample, shuffle, Ask};
use super::*;

fn dir() -> std::path::PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let d = std::env::temp_dir().join(format!(
        "stampede-vllm-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn file(name: &str, text: &str) -> String {
    let p = dir().join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

fn ask(count: usize) -> Ask<'static> {
    Ask {
        count,
        seed: 3,
        shuffle: true,
        tokenizer: None,
    }
}

fn words(n: usize, w: &str) -> String {
    vec![w; n].join(" ")
}

fn parse(args: &[&str]) -> VllmArgs {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    DIALECT.parse::<VllmArgs>(&args).map(|(a, _)| a).unwrap()
}

fn run(args: &[&str]) -> Result<(LoadSpec, Info), FlagError> {
    let a = parse(args);
    let inputs = Inputs {
        target: Target::parse_at("http://127.0.0.1:9/v1/completions", None).unwrap(),
        model: a.model.clone().unwrap_or_default(),
        tokenizer: None,
        samples: samples(&a, Backend::of(&a.backend)?, None)?,
        api_key: Some("k".into()),
    };
    translate(&a, inputs)
}

fn body(spec: &LoadSpec, i: usize) -> (String, serde_json::Value) {
    let bytes = &spec.load.variety[i].bytes;
    let text = String::from_utf8_lossy(bytes).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    (head.to_string(), serde_json::from_str(body).unwrap())
}

#[test]
fn a_seeded_shuffle_is_a_permutation_fixed_by_its_seed() {
    let order: Vec<u32> = (0..50).collect();
    let mut a = order.clone();
    shuffle(&mut a, 0);
    let mut b = order.clone();
    shuffle(&mut b, 0);
    assert_eq!(a, b);
    assert_ne!(a, order);
    let mut sorted = a.clone();
    sorted.sort();
    assert_eq!(sorted, order);
    let mut c = order.clone();
    shuffle(&mut c, 1);
    assert_ne!(a, c);
}

#[test]
fn fewer_samples_than_asked_are_drawn_again_unless_told_not_to() {
    let base: Vec<datasets::Sample> = (0..4).map(|i| (format!("p{i}"), 8)).collect();
    let mut s = base.clone();
    let note = oversample(&mut s, 10, 1, false).unwrap();
    assert_eq!(s.len(), 10);
    assert!(s.iter().all(|x| base.contains(x)));
    assert!(
        note.contains("gave 4 prompts of the 10 asked; 6 more"),
        "{note}"
    );
    let mut s = base.clone();
    assert!(oversample(&mut s, 10, 1, true)
        .unwrap()
        .contains("4 are sent"));
    assert_eq!(s.len(), 4);
    let mut s = base.clone();
    assert!(oversample(&mut s, 2, 1, false).is_none());
    assert_eq!(s.len(), 2);
}

#[test]
fn sharegpt_is_read_as_a_stream_and_filtered_as_vllm_filters_it() {
    let conv = |q: &str, r: &str| {
        format!(
            r#"{{"id":"x","conversations":[{{"from":"human","value":"{q}"}},{{"from":"gpt","value":"{r}"}},{{"from":"human","value":"more"}}]}}"#
        )
    };
    let text = format!(
        "[{},{},{},{},{{\"id\":\"lone\",\"conversations\":[]}}]",
        conv(&words(6, "q"), &words(9, "r")),
        conv("too short", &words(9, "r")),
        conv(&words(5, "q"), "r"),
        conv(&words(1100, "q"), &words(9, "r")),
    );
    let f = file("sg.json", &text);
    let s = datasets::sharegpt(&f, None, &ask(10)).unwrap();
    assert_eq!(s, vec![(words(6, "q"), 9)]);
    // A fixed output length lifts the reply's bounds, not the prompt's.
    let s = datasets::sharegpt(&f, Some(3), &ask(10)).unwrap();
    assert_eq!(s.len(), 2, "{s:?}");
    assert!(s.iter().all(|(_, n)| *n == 3));
    // The wrong shape is refused with its line.
    let bad = file("bad.json", "[\n{\"conversations\": [{\"value\": 5}]}\n]");
    let e = datasets::sharegpt(&bad, None, &ask(1))
        .unwrap_err()
        .to_string();
    assert!(e.contains("bad.json, line 2"), "{e}");
    let notlist = file("obj.json", "{\"a\": 1}");
    assert!(datasets::sharegpt(&notlist, None, &ask(1)).is_err());
    let latin1 = dir().join("l1.json");
    std::fs::write(&latin1, b"[{\"conversations\":[{\"value\":\"caf\xe9\"}]}]").unwrap();
    let e = datasets::sharegpt(&latin1.to_string_lossy(), None, &ask(1))
        .unwrap_err()
        .to_string();
    assert!(e.contains("line 1"), "{e}");
}

#[test]
fn sonnet_prompts_share_the_first_lines_and_stay_within_the_input_length() {
    let poem: String = (0..40)
        .map(|i| format!("line {i} of the poem here\n"))
        .collect();
    let f = file("sonnet.txt", &poem);
    let s = datasets::sonnet(&f, 60, 20, 25, &ask(30)).unwrap();
    assert_eq!(s.len(), 30);
    for (p, n) in &s {
        assert!(p.starts_with("Pick as many lines as you can from these poem lines:\nline 0 of"));
        assert!(p.split_whitespace().count() <= 60, "{p}");
        assert_eq!(*n, 20);
    }
    assert!(datasets::sonnet(&f, 5, 20, 0, &ask(1))
        .unwrap_err()
        .to_string()
        .contains("--sonnet-input-len 5"));
}

#[test]
fn burstgpt_takes_gpt4_rows_that_were_answered() {
    let csv = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n\
               1,ChatGPT,10,20,30,Conversation log\n\
               2,GPT-4,7,5,12,Conversation log\n\
               3,GPT-4,9,0,9,Conversation log\n\
               4,GPT-4,3,4,7,API log\n";
    let f = file("burst.csv", csv);
    let mut s = datasets::burstgpt(&f, &ask(2)).unwrap();
    s.sort_by_key(|(p, _)| p.split_whitespace().count());
    let shape: Vec<(usize, u32)> = s
        .iter()
        .map(|(p, n)| (p.split_whitespace().count(), *n))
        .collect();
    assert_eq!(shape, [(3, 4), (7, 5)]);
    assert_eq!(datasets::burstgpt(&f, &ask(5)).unwrap().len(), 5);
    let bad = file(
        "bad.csv",
        "Timestamp,Model,Request tokens,Response tokens\n1,GPT-4,x,3\n",
    );
    let e = datasets::burstgpt(&bad, &ask(1)).unwrap_err().to_string();
    assert!(
        e.contains("line 2") && e.contains("\"Request tokens\""),
        "{e}"
    );
    let nohead = file("nohead.csv", "a,b\n");
    assert!(datasets::burstgpt(&nohead, &ask(1))
        .unwrap_err()
        .to_string()
        .contains("\"Model\""));
}

#[test]
fn custom_spec_bench_and_hf_files_are_read_by_their_layouts() {
    let f = file(
        "c.jsonl",
        "{\"prompt\": \"a b c\"}\n\n{\"prompt\": \"d\", \"output_tokens\": 4}\n",
    );
    let mut s = datasets::custom(
        &f,
        9,
        &Ask {
            shuffle: false,
            ..ask(10)
        },
    )
    .unwrap();
    assert_eq!(s, vec![("a b c".to_string(), 9), ("d".to_string(), 4)]);
    let bad = file("c2.jsonl", "{\"prompt\": \"x\"}\n{\"text\": \"y\"}\n");
    let e = datasets::custom(&bad, 9, &ask(1)).unwrap_err().to_string();
    assert!(e.contains("c2.jsonl, line 2: no \"prompt\""), "{e}");
    s.clear();

    let sb = file(
        "q.jsonl",
        "{\"category\": \"math\", \"turns\": [\"one plus one\", \"again\"]}\n{\"category\": \"writing\", \"turns\": [\"a poem\"]}\n",
    );
    let s = datasets::spec_bench(&sb, Some("math"), 7, &ask(5)).unwrap();
    assert_eq!(s, vec![("one plus one".to_string(), 7)]);
    assert!(datasets::spec_bench(&sb, Some("none"), 7, &ask(5)).is_err());

    let rows = file(
        "rows.json",
        r#"[{"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi there"}, {"role": "assistant", "content": "hello to you"}]},
            {"instruction": "sum", "input": "1 2", "output": "3"},
            {"question": "why", "answer": "because so"}]"#,
    );
    let mut s = datasets::hf(&rows, None, "train", None, &ask(10)).unwrap();
    s.sort();
    assert_eq!(
        s,
        vec![
            ("hi there".to_string(), 3),
            ("sum\n1 2".to_string(), 1),
            ("why".to_string(), 2)
        ]
    );
    let noreply = file("nr.jsonl", "{\"prompt\": \"p\"}\n");
    assert!(datasets::hf(&noreply, None, "train", None, &ask(1))
        .unwrap_err()
        .to_string()
        .contains("--hf-output-len"));
    assert_eq!(
        datasets::hf(&noreply, None, "train", Some(5), &ask(1)).unwrap()[0].1,
        5
    );
    let unknown = file("u.jsonl", "{\"x\": 1}\n");
    let e = datasets::hf(&unknown, None, "train", Some(5), &ask(1))
        .unwrap_err()
        .to_string();
    assert!(e.contains("line 1") && e.contains("fields: x"), "{e}");
    // A directory: the split's files, under the subset.
    let d = dir();
    std::fs::create_dir_all(d.join("sub")).unwrap();
    std::fs::write(
        d.join("sub/train-0.jsonl"),
        "{\"prompt\": \"t\", \"completion\": \"c\"}\n",
    )
    .unwrap();
    std::fs::write(d.join("sub/test-0.jsonl"), "{\"prompt\": \"u\"}\n").unwrap();
    let path = d.to_string_lossy().into_owned();
    assert_eq!(
        datasets::hf(&path, Some("sub"), "train", None, &ask(3)).unwrap()[0].0,
        "t"
    );
    std::fs::write(d.join("sub/train-1.parquet"), b"PAR1").unwrap();
    let e = datasets::hf(&path, Some("sub"), "train", None, &ask(3))
        .unwrap_err()
        .to_string();
    assert!(e.contains("train-1.parquet: not a Parquet file"), "{e}");
}

/// The Parquet files `testdata/make.py` wrote with pyarrow, each as a path.
fn parquet(name: &str, bytes: &[u8]) -> String {
    let d = dir().join("pq");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join(name), bytes).unwrap();
    d.join(name).to_string_lossy().into_owned()
}

const SHAREGPT: &[u8] = include_bytes!("testdata/sharegpt.parquet");
const ALPACA: &[u8] = include_bytes!("testdata/alpaca.parquet");
const TRAIN: &[u8] = include_bytes!("testdata/train-00000-of-00001.parquet");

#[test]
fn hf_reads_parquet_of_every_compression_and_nesting() {
    let noshuffle = Ask {
        shuffle: false,
        ..ask(10)
    };
    // Snappy, conversations as a list of structures; the row without a user turn
    // passed over, the system turn before the user's skipped.
    let s = datasets::hf(
        &parquet("s.parquet", SHAREGPT),
        None,
        "train",
        None,
        &noshuffle,
    );
    assert_eq!(
        s.unwrap(),
        vec![
            ("Name three rivers of Europe.".to_string(), 7),
            ("What is two and two?".to_string(), 1)
        ]
    );
    // Zstandard, dictionary-encoded, data pages of version 2, a null input.
    let a = datasets::hf(
        &parquet("a.parquet", ALPACA),
        None,
        "train",
        None,
        &noshuffle,
    );
    assert_eq!(
        a.unwrap(),
        vec![
            ("Translate to French.\ngood morning".to_string(), 1),
            ("Add the numbers.\n3 and 4".to_string(), 1),
            ("Translate to French.".to_string(), 4)
        ]
    );
    // Gzip over three row groups, found in a directory by its split.
    let t = parquet("train-00000-of-00001.parquet", TRAIN);
    let d = std::path::Path::new(&t).parent().unwrap().to_string_lossy();
    let rows = datasets::hf(
        &d,
        None,
        "train",
        None,
        &Ask {
            count: 100,
            ..noshuffle
        },
    )
    .unwrap();
    assert_eq!(rows.len(), 40);
    assert_eq!(rows[39], ("prompt number 39".to_string(), 5));
}

#[test]
fn a_broken_parquet_file_is_refused_with_what_broke() {
    let run = |name: &str, bytes: &[u8]| {
        datasets::hf(&parquet(name, bytes), None, "train", Some(4), &ask(3))
            .unwrap_err()
            .to_string()
    };
    // A page claiming more bytes than its column chunk holds: found before decoding.
    let mut overrun = TRAIN.to_vec();
    assert_eq!(
        &overrun[4..12],
        &[0x15, 0x04, 0x15, 0xec, 0x04, 0x15, 0xac, 0x01]
    );
    overrun[10..12].copy_from_slice(&[0xfe, 0x7f]);
    let e = run("o.parquet", &overrun);
    assert!(
        e.contains("o.parquet: row group 1, column prompt: the page at byte 4 claims 8191 bytes"),
        "{e}"
    );
    // A footer cut short.
    let mut cut = SHAREGPT[..SHAREGPT.len() - 20].to_vec();
    cut.extend_from_slice(b"PAR1");
    let e = run("c.parquet", &cut);
    assert!(e.contains("c.parquet: its footer cannot be read"), "{e}");
    // Not Parquet at all.
    let e = run("n.parquet", b"{\"prompt\": \"x\"}\n");
    assert!(e.contains("n.parquet: not a Parquet file"), "{e}");
}

#[test]
fn prefix_repetition_repeats_each_prefix_over_its_share() {
    let s = datasets::prefix_repetition(4, 3, 2, 9, &ask(7)).unwrap();
    assert_eq!(s.len(), 6, "7 / 2 prompts a prefix, as vLLM divides");
    let mut prefixes: Vec<String> = s
        .iter()
        .map(|(p, _)| p.split_whitespace().take(4).collect::<Vec<_>>().join(" "))
        .collect();
    prefixes.sort();
    prefixes.dedup();
    assert!(prefixes.len() <= 2);
    assert!(s
        .iter()
        .all(|(p, n)| p.split_whitespace().count() == 7 && *n == 9));
    assert!(datasets::prefix_repetition(4, 3, 9, 9, &ask(7)).is_err());
}

#[test]
fn the_flags_make_bodies_headers_and_shapes_as_vllm_sends_them() {
    let (spec, info) = run(&[
        "--model",
        "m",
        "--backend",
        "openai-chat",
        "--num-prompts",
        "6",
        "--random-input-len",
        "5",
        "--random-output-len",
        "3",
        "--top-k",
        "5",
        "--extra-body",
        "{\"top_k\": 7, \"seed\": 1}",
        "--header",
        "x-team=a",
        "--request-id-prefix",
        "run-",
        "--lora-modules",
        "l1",
        "l2",
        "--metadata",
        "tp=2",
        "--request-rate",
        "4",
    ])
    .unwrap();
    assert_eq!(spec.load.variety.len(), 6);
    let (head, v) = body(&spec, 5);
    assert!(head.contains("x-request-id: run-5"), "{head}");
    assert!(
        head.contains("x-team: a") && head.contains("Authorization: Bearer k"),
        "{head}"
    );
    assert_eq!(v["top_k"], 7, "--extra-body wins");
    assert_eq!(v["temperature"], 0.0);
    assert_eq!(
        v["ignore_eos"], true,
        "random prompts ask for their whole length"
    );
    assert!(["l1", "l2"].contains(&v["model"].as_str().unwrap()));
    assert_eq!(
        v["messages"][0]["content"]
            .as_str()
            .unwrap()
            .split_whitespace()
            .count(),
        5
    );
    assert!(matches!(spec.load.shape, Shape::Rate { rate, .. } if rate == 4.0));
    assert_eq!(info.metadata, [("tp".to_string(), "2".to_string())]);

    // Embeddings: batches of prompts, answered whole, timed end to end.
    let (spec, info) = run(&[
        "--model",
        "e",
        "--backend",
        "openai-embeddings",
        "--endpoint",
        "/v1/embeddings",
        "--num-prompts",
        "4",
        "--random-input-len",
        "3",
        "--random-batch-size",
        "2",
    ])
    .unwrap();
    assert_eq!(spec.load.variety.len(), 4);
    let (_, v) = body(&spec, 0);
    assert_eq!(v["input"].as_array().unwrap().len(), 2);
    assert_eq!(v["truncate_prompt_tokens"], -1);
    assert!(v.get("stream").is_none() && v.get("temperature").is_none());
    assert!(spec.load.streams.stream.is_none());
    assert!(info.pooling && info.metrics == [Metric::E2el]);

    // A ramp-up: an arrival profile, and the rate changes told.
    let (spec, info) = run(&[
        "--model",
        "m",
        "--num-prompts",
        "20",
        "--random-input-len",
        "2",
        "--ramp-up-strategy",
        "linear",
        "--ramp-up-start-rps",
        "1",
        "--ramp-up-end-rps",
        "5",
    ])
    .unwrap();
    assert!(matches!(spec.load.shape, Shape::Paced(_)));
    assert_eq!(info.ramp.unwrap().changes.len(), 5);
    // --input-len and --output-len reach the dataset's own.
    let (spec, _) = run(&[
        "--model",
        "m",
        "--num-prompts",
        "2",
        "--input-len",
        "4",
        "--output-len",
        "2",
    ])
    .unwrap();
    let (_, v) = body(&spec, 1);
    assert_eq!(v["prompt"].as_str().unwrap().split_whitespace().count(), 4);
    assert_eq!(v["max_tokens"], 2);
}

#[test]
fn flags_it_cannot_honour_are_refused_by_name() {
    for (args, want) in [
        (
            vec!["--backend", "openai-audio"],
            "--backend openai-audio: not offered here: it sends audio",
        ),
        (
            vec!["--dataset-name", "random-mm"],
            "--dataset-name random-mm: not offered",
        ),
        (
            vec!["--dataset-name", "custom"],
            "--dataset-name custom needs --dataset-path",
        ),
        (
            vec!["--dataset-path", "x.json"],
            "the random dataset draws its prompts",
        ),
        (vec!["--extra-body", "[1]"], "--extra-body: a JSON object"),
        (
            vec!["--header", "novalue"],
            "--header \"novalue\": KEY=VALUE",
        ),
        (vec!["--request-rate=-1"], "--request-rate -1"),
        (
            vec![
                "--ramp-up-strategy",
                "linear",
                "--ramp-up-start-rps",
                "1",
                "--ramp-up-end-rps",
                "2",
                "--burstiness",
                "0.5",
            ],
            "Poisson's",
        ),
    ] {
        let mut all = vec![
            "--model",
            "m",
            "--num-prompts",
            "2",
            "--random-input-len",
            "2",
        ];
        all.extend(args);
        let e = run(&all).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains(want), "{all:?}: {e}");
    }
    for flag in [
        "--save-detailed",
        "--enable-multimodal-chat",
        "--no-reranker",
    ] {
        let args: Vec<String> = ["--model", "m", flag]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let e = DIALECT.parse::<VllmArgs>(&args).err().unwrap().to_string();
        assert!(e.contains(flag) && e.contains("is not supported"), "{e}");
    }
}
