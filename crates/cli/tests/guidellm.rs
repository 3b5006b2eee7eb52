//! `stampede guidellm` end to end against the reference server's batching mock: a
//! knee profile whose token rate flattens where the engine's sequence cap lies,
//! written as GuideLLM's JSON and CSV; the older `benchmark` form's rates. Every
//! benchmark is bounded by its request count.

use crate::common::recorder::{stampede, tempdir, text};

/// The batching engine of the vLLM tests: steps of 10 ms, at most `max_seqs`
/// sequences at once.
fn engine(max_seqs: u32) -> stampede_server::Running {
    crate::vllm::engine_mock(max_seqs)
}

/// The engine runs 8 sequences at most: the output token rate rises with the
/// concurrency up to 8 and is flat past it, so the knee lies there.
#[test]
fn the_knee_profile_finds_the_engines_sequence_cap() {
    let s = engine(8);
    let dir = tempdir::Dir::new();
    let json = dir.0.join("b.json").to_string_lossy().into_owned();
    let csv = dir.0.join("b.csv").to_string_lossy().into_owned();
    let out = stampede(&[
        "guidellm",
        "run",
        "--backend",
        &format!("kind=openai_http,target={},model=stampede-mock", s.url("")),
        "--profile",
        "kind=knee,initial_streams=[2,4,6,8,12,16,24]",
        "--constraint",
        "kind=max_requests,count=48",
        "--data",
        "kind=synthetic_text,prompt_tokens=20,output_tokens=6",
        "--output",
        &format!("kind=json,path={json}"),
        "--output",
        &format!("kind=csv,path={csv}"),
        "--output",
        "kind=console",
    ]);
    let (o, e) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{o}\n{e}");
    assert!(
        o.contains("Request Latency Statistics") && o.contains("concurrent@24"),
        "{o}"
    );
    assert!(
        o.contains("Knee: output token throughput stops rising near concurrency"),
        "{o}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let b = v["benchmarks"].as_array().unwrap();
    assert_eq!(b.len(), 7);
    for x in b {
        let m = &x["metrics"];
        assert_eq!(m["request_totals"]["successful"], 48);
        assert_eq!(
            m["output_token_count"]["successful"]["total_sum"],
            48.0 * 6.0
        );
        let p50 = m["time_to_first_token_ms"]["successful"]["percentiles"]["p50"]
            .as_f64()
            .unwrap();
        assert!(p50 >= 10.0, "a first token takes a step at least: {p50}");
    }
    let knee = v["conclusions"][0]["knee"]["knee"].as_f64().unwrap();
    assert!((5.0..=13.0).contains(&knee), "{knee}\n{o}");
    let c = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(c.lines().count(), 3 + 7);
}

/// The older form: `--rate-type constant --rate 20,40` is two benchmarks at those
/// rates, its report to `--output-path`.
#[test]
fn the_benchmark_form_runs_each_rate() {
    let s = engine(64);
    let dir = tempdir::Dir::new();
    let json = dir.0.join("old.json").to_string_lossy().into_owned();
    let out = stampede(&[
        "guidellm",
        "benchmark",
        "--target",
        &s.url(""),
        "--rate-type",
        "constant",
        "--rate",
        "20,40",
        "--max-requests",
        "20",
        "--data",
        "prompt_tokens=10,output_tokens=3",
        "--output-path",
        &json,
        "--disable-console",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).is_empty(),
        "--disable-console prints nothing"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let rates: Vec<f64> = (v["benchmarks"].as_array().unwrap().iter())
        .map(|b| b["config"]["strategy"]["rate"].as_f64().unwrap())
        .collect();
    assert_eq!(rates, [20.0, 40.0]);
    assert_eq!(
        v["config"]["spec"]["backend"]["model"], "stampede-mock",
        "the server's first"
    );
}
