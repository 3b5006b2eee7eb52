//! `stampede vllm bench serve` and `stampede aiperf profile` end to end against the
//! reference server's mock LLM: a file dataset with its result appended, warm-ups
//! kept out of the figures, a ramp-up's schedule, embeddings timed end to end, a
//! ready check that gives up on time, the batching engine's truth, the server's
//! queue as the limit, and AIPerf's table and exports. Every run is bounded by its
//! prompt count.

use crate::common::recorder::{stampede, tempdir, text};

fn mock(ttft: u64, itl: u64) -> stampede_server::Running {
    crate::common::srv_with(stampede_server::Config {
        threads: 1,
        llm: stampede_server::llm::LlmConfig {
            ttft: std::time::Duration::from_millis(ttft),
            itl: std::time::Duration::from_millis(itl),
            batch: 0,
            max_tokens: 16,
            stall: None,
            engine: None,
        },
        ..stampede_server::Config::default()
    })
}

fn vllm(base: &str, args: &[&str]) -> (bool, String, String) {
    let mut all = vec![
        "vllm",
        "bench",
        "serve",
        "--base-url",
        base,
        "--model",
        "stampede-mock",
    ];
    all.extend_from_slice(args);
    let out = stampede(&all);
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

/// The custom dataset, oversampled to the count asked, its result appended a line a
/// run with the metadata given; warm-up requests are not among the counted.
#[test]
fn a_custom_dataset_runs_and_its_results_are_appended() {
    let s = mock(5, 2);
    let dir = tempdir::Dir::new();
    let data = dir.0.join("p.jsonl");
    std::fs::write(
        &data,
        "{\"prompt\": \"a b c d\"}\n{\"prompt\": \"e f\", \"output_tokens\": 2}\n",
    )
    .unwrap();
    let d = dir.0.to_string_lossy().into_owned();
    let data = data.to_string_lossy().into_owned();
    for _ in 0..2 {
        let (ok, o, e) = vllm(
            &s.url(""),
            &[
                "--dataset-name",
                "custom",
                "--dataset-path",
                &data,
                "--num-prompts",
                "5",
                "--custom-output-len",
                "3",
                "--num-warmups",
                "3",
                "--max-concurrency",
                "2",
                "--append-result",
                "--result-dir",
                &d,
                "--result-filename",
                "all.jsonl",
                "--metadata",
                "tp=4",
                "run=a",
            ],
        );
        assert!(ok, "{o}{e}");
        for want in [
            "Initial test run completed.",
            "Warming up with 3 requests...",
            "Warmup run completed.",
            "Successful requests:                     5 ",
            "Peak concurrent requests:",
        ] {
            assert!(o.contains(want), "{want}: {o}");
        }
        assert!(e.contains("gave 2 prompts of the 5 asked; 3 more"), "{e}");
    }
    let lines = std::fs::read_to_string(dir.0.join("all.jsonl")).unwrap();
    let runs: Vec<serde_json::Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(runs.len(), 2);
    for v in runs {
        assert_eq!(v["completed"], 5, "the warm-ups are not counted: {v}");
        assert_eq!(v["tp"], "4");
        assert_eq!(v["run"], "a");
        let out = v["total_output_tokens"].as_u64().unwrap();
        assert!((10..=15).contains(&out), "{out}: each asks 3, or 2");
        assert!(v["max_concurrent_requests"].as_u64().unwrap() <= 2, "{v}");
    }
}

/// A linear ramp: every request sent, the result saying how the rate rose.
#[test]
fn a_ramp_up_sends_every_request_and_tells_its_rates() {
    let s = mock(2, 1);
    let dir = tempdir::Dir::new();
    let d = dir.0.to_string_lossy().into_owned();
    let (ok, o, e) = vllm(
        &s.url(""),
        &[
            "--num-prompts",
            "30",
            "--random-input-len",
            "4",
            "--random-output-len",
            "2",
            "--ramp-up-strategy",
            "linear",
            "--ramp-up-start-rps",
            "20",
            "--ramp-up-end-rps",
            "60",
            "--save-result",
            "--result-dir",
            &d,
            "--label",
            "ramp",
        ],
    );
    assert!(ok, "{o}{e}");
    let name = std::fs::read_dir(&dir.0)
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .file_name();
    let name = name.to_string_lossy().into_owned();
    assert!(
        name.starts_with("ramp-ramp-up-linear-20qps-60qps-stampede-mock-"),
        "{name}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.0.join(&name)).unwrap()).unwrap();
    assert_eq!(v["completed"], 30);
    assert_eq!(v["ramp_up_strategy"], "linear");
    let events = v["rps_change_events"].as_array().unwrap();
    assert_eq!(events.first().unwrap()["rps"], 20);
    assert_eq!(events.last().unwrap()["rps"], 60);
    // 30 requests rising from 20/s to 60/s take about 0.8 s, not 30/60 = 0.5 s.
    let took = v["duration"].as_f64().unwrap();
    assert!((0.4..3.0).contains(&took), "{took}");
}

/// Embeddings: requests answered whole, E2EL reported, no token figures.
#[test]
fn embeddings_are_timed_end_to_end() {
    let s = mock(5, 2);
    let (ok, o, e) = vllm(
        &s.url(""),
        &[
            "--backend",
            "openai-embeddings",
            "--endpoint",
            "/v1/embeddings",
            "--num-prompts",
            "6",
            "--random-input-len",
            "5",
            "--random-batch-size",
            "2",
            "--max-concurrency",
            "2",
        ],
    );
    assert!(ok, "{o}{e}");
    assert!(
        o.contains("Successful requests:                     6 "),
        "{o}"
    );
    assert!(
        o.contains("Total input tokens:                      60 "),
        "{o}"
    );
    assert!(o.contains("P99 E2EL (ms):"), "{o}");
    assert!(
        !o.contains("TTFT") && !o.contains("generated tokens"),
        "{o}"
    );
}

/// Nothing listening: the ready check asks again each second and gives up when its
/// time is out, saying so.
#[test]
fn the_ready_check_gives_up_on_time() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let started = std::time::Instant::now();
    let (ok, o, e) = vllm(
        &format!("http://127.0.0.1:{port}"),
        &[
            "--num-prompts",
            "2",
            "--random-input-len",
            "2",
            "--ready-check-timeout-sec",
            "2",
        ],
    );
    assert!(!ok, "{o}");
    assert!(
        e.contains("not ready within --ready-check-timeout-sec 2"),
        "{e}"
    );
    let took = started.elapsed().as_secs_f64();
    assert!((1.5..15.0).contains(&took), "{took}");
    // SIGTERM while it waits (600 s by default) ends it at once, nothing measured.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_stampede"))
        .args([
            "vllm",
            "bench",
            "serve",
            "--model",
            "m",
            "--num-prompts",
            "2",
        ])
        .args([
            "--random-input-len",
            "2",
            "--base-url",
            &format!("http://127.0.0.1:{port}"),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Once it says it asks for the first prompt, it is in the ready check.
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while !line.contains("Starting initial single prompt test run") {
        line.clear();
        let n = std::io::BufRead::read_line(&mut out, &mut line).unwrap();
        assert!(n > 0, "it ended before its ready check");
    }
    let asked = std::time::Instant::now();
    // SAFETY: a plain kill(2) of the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let deadline = asked + std::time::Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("still waiting 20 s after SIGTERM");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(130));
    let mut e = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut e).unwrap();
    assert!(e.contains("interrupted before the benchmark's run"), "{e}");
}

/// The mock LLM as a batching engine: steps of 10 ms, 0.1 ms a prompt token, at
/// most `max_seqs` sequences at once.
pub(crate) fn engine_mock(max_seqs: u32) -> stampede_server::Running {
    engine_mock_with(max_seqs, std::sync::Arc::default())
}

/// [`engine_mock`], its figures kept in `metrics` (which may log each request).
fn engine_mock_with(
    max_seqs: u32,
    metrics: std::sync::Arc<stampede_server::llm::metrics::Metrics>,
) -> stampede_server::Running {
    use std::time::Duration;
    crate::common::srv_with(stampede_server::Config {
        llm_metrics: metrics,
        threads: 1,
        llm: stampede_server::llm::LlmConfig {
            engine: Some(stampede_server::llm::engine::EngineConfig {
                step: Duration::from_millis(10),
                per_seq: Duration::ZERO,
                per_prefill_token: Duration::from_micros(100),
                token_budget: 4096,
                max_seqs,
                kv_tokens: 1 << 20,
                block: 16,
                prefix_cache: false,
            }),
            ..stampede_server::llm::LlmConfig::default()
        },
        ..stampede_server::Config::default()
    })
}

/// `GET path` on `addr`, the body of its answer.
pub(crate) fn get(addr: std::net::SocketAddr, path: &str) -> String {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    write!(
        c,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut all = String::new();
    c.read_to_string(&mut all).unwrap();
    all.split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default()
}

fn series(metrics: &str, name: &str) -> f64 {
    let line = (metrics.lines())
        .find(|l| l.starts_with(name) && l.as_bytes().get(name.len()) == Some(&b'{'))
        .unwrap_or_else(|| panic!("{name} in\n{metrics}"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

/// Against the batching engine the figures are its model's: one request at a time
/// waits 10 ms + 100 × 0.1 ms for its first token and 10 ms for each next; four at
/// a time share steps (an arrival that finds a step under way waits for its end), so
/// their times to first token lie between one prefill alone and four together, and
/// the client's mean is the engine's own (its /metrics, under vLLM's names).
#[test]
fn the_batching_engine_times_tokens_as_its_model_says() {
    let dir = tempdir::Dir::new();
    let truth = dir.0.join("truth.jsonl");
    let log = stampede_server::llm::truth::TruthLog::create(&truth).unwrap();
    let s = engine_mock_with(
        64,
        std::sync::Arc::new(stampede_server::llm::metrics::Metrics::with_truth(log)),
    );
    let d = dir.0.to_string_lossy().into_owned();
    let mut medians = Vec::new();
    let mut means = Vec::new();
    for cap in ["1", "4"] {
        let name = format!("c{cap}.json");
        let (ok, o, e) = vllm(
            &s.url(""),
            &[
                "--num-prompts",
                "8",
                "--random-input-len",
                "100",
                "--random-output-len",
                "5",
                "--max-concurrency",
                cap,
                "--percentile-metrics",
                "ttft,itl,e2el",
                "--metric-percentiles",
                "50",
                "--save-result",
                "--result-dir",
                &d,
                "--result-filename",
                &name,
            ],
        );
        assert!(ok, "{o}{e}");
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.0.join(&name)).unwrap()).unwrap();
        let ms = |k: &str| v[k].as_f64().unwrap();
        medians.push((
            ms("median_ttft_ms"),
            ms("median_itl_ms"),
            ms("median_e2el_ms"),
        ));
        means.push(ms("mean_ttft_ms"));
    }
    let (ttft, itl, e2el) = medians[0];
    assert!((20.0..30.0).contains(&ttft), "{medians:?}");
    assert!((8.0..13.0).contains(&itl), "{medians:?}");
    assert!((60.0..75.0).contains(&e2el), "{medians:?}");
    let (ttft, _, _) = medians[1];
    assert!((20.0..80.0).contains(&ttft), "{medians:?}");
    let m = get(s.addr(), "/metrics");
    // 16 counted and 2 ready checks of 5 tokens each.
    assert_eq!(series(&m, "vllm:request_success_total"), 18.0, "{m}");
    assert_eq!(series(&m, "vllm:generation_tokens_total"), 90.0, "{m}");
    assert_eq!(series(&m, "vllm:prompt_tokens_total"), 1800.0, "{m}");
    assert_eq!(series(&m, "vllm:num_requests_running"), 0.0, "{m}");
    assert_eq!(
        series(&m, "vllm:time_to_first_token_seconds_count"),
        18.0,
        "{m}"
    );
    assert!(
        m.contains(
            "vllm:time_to_first_token_seconds_bucket{model_name=\"stampede-mock\",le=\"0.1\"} 18"
        ),
        "{m}"
    );
    // The engine's TTFTs, less the two ready checks' (20 ms each), are the client's.
    let engine_ms = series(&m, "vllm:time_to_first_token_seconds_sum") * 1000.0 - 40.0;
    let client_ms = 8.0 * (means[0] + means[1]);
    assert!(
        (client_ms - engine_ms).abs() < 16.0 * 2.0,
        "{client_ms} {engine_ms}"
    );
    // `--llm-truth`'s log: a line a completion, ready checks included, whose times
    // add up to the exported sums (each to the microsecond).
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&truth)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 18);
    assert!(lines
        .iter()
        .all(|l| l["tokens"] == 5 && l["itl_ms"].as_array().unwrap().len() == 4));
    let sum = |k: &str| lines.iter().map(|l| l[k].as_f64().unwrap()).sum::<f64>();
    let exported = series(&m, "vllm:time_to_first_token_seconds_sum") * 1000.0;
    assert!(
        (sum("ttft_ms") - exported).abs() < 0.01,
        "{} {exported}",
        sum("ttft_ms")
    );
    let exported = series(&m, "vllm:e2e_request_latency_seconds_sum") * 1000.0;
    assert!(
        (sum("e2e_ms") - exported).abs() < 0.01,
        "{} {exported}",
        sum("e2e_ms")
    );
}

/// `--server-metrics`: an engine of four sequences offered three times what it
/// serves: the scrapes see its queue grow, the report shows them beside the client's
/// figures, and the limit's verdict says the queue is why.
#[test]
fn the_servers_queue_is_scraped_and_named_as_the_limit() {
    let s = engine_mock(4);
    let dir = tempdir::Dir::new();
    let json = dir.0.join("r.json").to_string_lossy().into_owned();
    let metrics = s.url("/metrics");
    let (ok, o, e) = vllm(
        &s.url(""),
        &[
            "--num-prompts",
            "60",
            "--random-input-len",
            "100",
            "--random-output-len",
            "20",
            "--request-rate",
            "60",
            "--server-metrics",
            &metrics,
            "--server-metrics-every",
            "100ms",
            "--json",
            &json,
        ],
    );
    assert!(ok, "{o}{e}");
    assert!(
        o.contains("--------------The server's metrics---------------"),
        "{o}"
    );
    assert!(o.contains("vllm:num_requests_waiting"), "{o}");
    assert!(
        o.contains("Limit: the queue in front of the server grew from 0 to"),
        "{o}"
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r["limit"]["verdict"], "server-bound", "{}", r["limit"]);
    let waiting = r["server"]["series"]["vllm:num_requests_waiting"]
        .as_array()
        .unwrap();
    let peak = waiting
        .iter()
        .map(|p| p[1].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert!(peak >= 10.0, "{waiting:?}");
    assert!(
        r["server"]["scrapes"].as_u64().unwrap() >= 10,
        "{}",
        r["server"]
    );
    // The last scrape, after the run, counts every completion.
    let done = r["server"]["series"]["vllm:request_success_total"]
        .as_array()
        .unwrap();
    let delta = done.last().unwrap()[1].as_f64().unwrap() - done[0][1].as_f64().unwrap();
    assert_eq!(delta, 60.0, "{done:?}");
    // The engine ran at most four at once, as the scrapes saw.
    let running = r["server"]["series"]["vllm:num_requests_running"]
        .as_array()
        .unwrap();
    assert!(
        running.iter().all(|p| p[1].as_f64().unwrap() <= 4.0),
        "{running:?}"
    );
    // A URL that is no URL is refused by its flag.
    let (ok, _, e) = vllm(
        &s.url(""),
        &[
            "--num-prompts",
            "1",
            "--server-metrics",
            "localhost:1/metrics",
        ],
    );
    assert!(
        !ok && e.contains("--server-metrics localhost:1/metrics: an http:// or https:// URL"),
        "{e}"
    );
}

/// `aiperf profile`: AIPerf's table and its exports in the artifact directory, the
/// figures those of the mock (30 ms to the first token, 5 ms between tokens), the
/// server's metrics scraped from the URL's /metrics as AIPerf does.
#[test]
fn aiperf_profile_writes_its_table_and_exports() {
    let s = mock(30, 5);
    let dir = tempdir::Dir::new();
    let art = dir.0.join("art").to_string_lossy().into_owned();
    let json = dir.0.join("r.json").to_string_lossy().into_owned();
    let base = s.url("");
    let out = stampede(&[
        "aiperf",
        "profile",
        "-m",
        "stampede-mock",
        "--url",
        base.trim_end_matches('/'),
        "--endpoint-type",
        "chat",
        "--streaming",
        "--concurrency",
        "4",
        "--request-count",
        "20",
        "--isl",
        "16",
        "--osl",
        "8",
        "--artifact-dir",
        &art,
        "--ui",
        "none",
        "--random-seed",
        "1",
        "--warmup-request-count",
        "2",
        "--json",
        &json,
    ]);
    let (o, e) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{o}{e}");
    for want in [
        "Metric ┃    avg ┃    min ┃    max ┃    p99 ┃    p90 ┃    p50 ┃  std ┃",
        "Time to First Token (ms) │",
        "Time to First Token, from the send (ms) │",
        "Inter Token Latency (ms) │",
        "Request Count (requests) │  20.00 │    N/A │",
        "JSON Export: ",
    ] {
        assert!(o.contains(want), "{want}: {o}");
    }
    let v: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.0.join("art/profile_export_aiperf.json")).unwrap(),
    )
    .unwrap();
    let ttft = &v["time_to_first_token"];
    assert_eq!(ttft["unit"], "ms");
    assert_eq!(ttft["count"], 20, "the warm-ups are not counted");
    let p50 = ttft["p50"].as_f64().unwrap();
    assert!((30.0..45.0).contains(&p50), "{ttft}");
    let itl = v["inter_token_latency"]["p50"].as_f64().unwrap();
    assert!((4.0..8.0).contains(&itl), "{itl}");
    assert_eq!(v["output_sequence_length"]["avg"], 8.0);
    assert_eq!(v["input_sequence_length"]["avg"], 16.0);
    assert_eq!(v["request_count"]["avg"], 20.0);
    assert_eq!(v["input_config"]["endpoint"]["streaming"], true);
    let csv = std::fs::read_to_string(dir.0.join("art/profile_export_aiperf.csv")).unwrap();
    assert!(
        csv.starts_with("Metric,avg,min,max,sum,p1,p5,p10,p25,p50,p75,p90,p95,p99,std\n"),
        "{csv}"
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(
        r["server"]["scrapes"].as_u64().unwrap() >= 1,
        "{}",
        r["server"]
    );
    // Flags it does not take are named.
    let out = stampede(&[
        "aiperf",
        "profile",
        "-m",
        "m",
        "--public-dataset",
        "sharegpt",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--public-dataset"),
        "{}",
        text(&out.stderr)
    );
}

/// Without `--model`, the server's first model is asked for, as vLLM does.
#[test]
fn without_a_model_the_servers_first_is_used() {
    let s = mock(5, 2);
    let dir = tempdir::Dir::new();
    let d = dir.0.to_string_lossy().into_owned();
    let base = s.url("");
    let out = stampede(&[
        "vllm",
        "bench",
        "serve",
        "--base-url",
        base.trim_end_matches('/'),
        "--num-prompts",
        "2",
        "--random-input-len",
        "3",
        "--random-output-len",
        "2",
        "--save-result",
        "--result-dir",
        &d,
        "--result-filename",
        "r.json",
    ]);
    let e = text(&out.stderr);
    assert!(out.status.success(), "{e}");
    assert!(
        e.contains("note: --model not given: the server's first model, stampede-mock"),
        "{e}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.0.join("r.json")).unwrap()).unwrap();
    assert_eq!(v["model_id"], "stampede-mock");
    assert_eq!(v["completed"], 2);
}
