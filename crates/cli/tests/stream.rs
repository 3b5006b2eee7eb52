//! Streamed responses end to end: `load --sse` and `--stream` against the reference
//! server's `/sse/<n>` and `/stream/<n>`, whose events come on known timers, so the
//! figures have true answers; and a server whose event is over the size limit. Every
//! run is bounded by a request count and a timeout.

use std::io::{Read, Write};
use std::net::TcpListener;

use crate::common::recorder::{stampede, tempdir, text};
use crate::common::srv;

fn run_json(args: &[&str]) -> (serde_json::Value, String) {
    let dir = tempdir::Dir::new();
    let json = dir.0.join("r.json");
    let json_s = json.to_string_lossy().into_owned();
    let mut all = args.to_vec();
    all.extend_from_slice(&["--json", &json_s]);
    let out = stampede(&all);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (r, text(&out.stdout))
}

/// A server on 127.0.0.1:0 that answers one request with `answer` and ends (the
/// run's reachability probe connects and closes first: the request comes on a later
/// connection). Its thread ends once it has answered.
fn answer_once(answer: Vec<u8>) -> (std::net::SocketAddr, std::thread::JoinHandle<()>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let server = std::thread::spawn(move || loop {
        let (mut c, _) = l.accept().unwrap();
        let mut buf = [0u8; 8192];
        if c.read(&mut buf).is_ok_and(|n| n > 0) {
            // A client that closes once it has seen too much leaves the rest moot.
            let _ = c.write_all(&answer);
            return;
        }
    });
    (addr, server)
}

/// An HTTP/1.1 answer whose body is `body` as a server-sent event stream, the
/// connection closed after it.
fn event_stream(body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The reference server's mock LLM on one thread: first token after `ttft` ms, the
/// next each `itl` ms, slowed past `batch` streams at once, `max_tokens` by default.
fn mock_llm(ttft: u64, itl: u64, batch: u32, max_tokens: u32) -> stampede_server::Running {
    crate::common::srv_with(stampede_server::Config {
        threads: 1,
        llm: stampede_server::llm::LlmConfig {
            ttft: std::time::Duration::from_millis(ttft),
            itl: std::time::Duration::from_millis(itl),
            batch,
            max_tokens,
            stall: None,
            engine: None,
        },
        ..stampede_server::Config::default()
    })
}

/// A word-level tokenizer.json in `dir` (each word of its vocabulary, and each
/// punctuation mark, a token); returns its path.
fn tokenizer_in(dir: &std::path::Path) -> String {
    let json = r#"{"version": "1.0", "truncation": null, "padding": null,
      "added_tokens": [{"id": 0, "content": "[UNK]", "single_word": false, "lstrip": false,
        "rstrip": false, "normalized": false, "special": true}],
      "normalizer": null, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": null,
      "decoder": {"type": "WordPiece", "prefix": "--", "cleanup": false},
      "model": {"type": "WordLevel", "unk_token": "[UNK]",
        "vocab": {"[UNK]": 0, "tok": 1, "a": 2, "b": 3, "c": 4, ".": 5, "hello": 6}}}"#;
    let path = dir.join("tokenizer.json");
    std::fs::write(&path, json).unwrap();
    path.to_string_lossy().into_owned()
}

/// Runs stampede with `args`, which it must refuse as a usage error saying `says`.
fn refused(args: &[&str], says: &str) {
    let out = stampede(args);
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    let e = text(&out.stderr);
    assert!(e.contains(says), "{args:?}: {e}");
}

fn ms(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap() / 1000.0
}

fn p50(stats: &serde_json::Value) -> f64 {
    let p = stats["percentiles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["p"] == 50.0)
        .unwrap();
    ms(&p["us"])
}

/// Ten events 20 ms apart, the first 30 ms after the request: every stream counts
/// ten events and its `[DONE]`, the first event comes no sooner than 30 ms, the whole
/// answer no sooner than 210 ms, and the gaps are 20 ms at the median.
#[test]
fn server_sent_events_are_counted_and_timed_from_the_start() {
    let s = srv();
    let url = s.url("/sse/10?gap=20&first=30");
    let (r, summary) = run_json(&["load", &url, "--sse", "-c", "2", "-t", "1", "-n", "10"]);
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../../schema/run-result.v1.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&r)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let st = &r["stream"];
    assert_eq!(st["mode"], "sse", "{st}");
    assert_eq!(st["events"], 100);
    assert_eq!(st["done"], 10);
    assert_eq!(st["events_per_response"]["min_us"], 10);
    assert_eq!(st["events_per_response"]["max_us"], 10);
    assert_eq!(st["first_event"]["count"], 10);
    assert!(ms(&st["first_event"]["min_us"]) >= 30.0, "{st}");
    assert!(ms(&st["first_byte"]["min_us"]) >= 30.0, "{st}");
    assert!(ms(&r["latency"]["min_us"]) >= 210.0, "{}", r["latency"]);
    assert_eq!(st["gap"]["count"], 90);
    let gap = p50(&st["gap"]);
    assert!((15.0..=25.0).contains(&gap), "gap p50 {gap} ms");
    // From the send it is never longer than from the intended start.
    assert!(
        st["first_event_uncorrected"]["max_us"].as_u64() <= st["first_event"]["max_us"].as_u64()
    );
    assert!(
        summary.contains("stream      sse: 100 events = ")
            && summary.contains("/s, 10 streams ended with [DONE]; per response p50 10 max 10"),
        "{summary}"
    );
    assert!(
        summary.contains("  first event p50 ") && summary.contains("  event gap   p50 "),
        "{summary}"
    );
    // Two runs merge into one: their events add up, the figures come from the merged
    // histograms.
    let dir = tempdir::Dir::new();
    let (a, b) = (dir.0.join("a.json"), dir.0.join("b.json"));
    std::fs::write(&a, r.to_string()).unwrap();
    std::fs::write(&b, r.to_string()).unwrap();
    let out = stampede(&[
        "merge",
        &a.to_string_lossy(),
        &b.to_string_lossy(),
        "--json",
        "-",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let m: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(m["stream"]["events"], 200);
    assert_eq!(m["stream"]["done"], 20);
    assert_eq!(m["stream"]["gap"]["count"], 180);
    assert_eq!(
        m["stream"]["first_event"]["min_us"],
        st["first_event"]["min_us"]
    );
    // Over HTTP/2 the same events come as DATA frames.
    let (h2, _) = run_json(&[
        "load", &url, "--sse", "--http2", "-c", "1", "-t", "1", "-n", "4",
    ]);
    assert_eq!(h2["stream"]["events"], 40, "{}", h2["stream"]);
    assert_eq!(h2["stream"]["done"], 4);
    assert!(ms(&h2["latency"]["min_us"]) >= 210.0);
    // Without the flag nothing about streams is measured.
    let (plain, summary) = run_json(&["load", &url, "-c", "2", "-t", "1", "-n", "2"]);
    assert!(plain.get("stream").is_none(), "{plain}");
    assert!(!summary.contains("stream "), "{summary}");
}

/// `--stream` counts the pieces the server framed: each chunk of a chunked answer,
/// each read of one with a Content-Length (a short one: one read).
#[test]
fn chunks_are_the_events_of_a_plain_stream() {
    let s = srv();
    let (r, _) = run_json(&[
        "load",
        &s.url("/stream/5?gap=5"),
        "--stream",
        "-c",
        "1",
        "-t",
        "1",
        "-n",
        "3",
    ]);
    let st = &r["stream"];
    assert_eq!(st["mode"], "chunks");
    assert_eq!(st["events"], 15);
    assert_eq!(st["events_per_response"]["max_us"], 5);
    assert_eq!(st["done"], 0);
    let (r, _) = run_json(&[
        "load",
        &s.url("/pong"),
        "--stream",
        "-c",
        "1",
        "-t",
        "1",
        "-n",
        "4",
    ]);
    assert_eq!(r["stream"]["events"], 4, "{}", r["stream"]);
    assert_eq!(r["stream"]["first_byte"]["count"], 4);
    // The flags are one or the other, and a bad stream is refused by the server.
    let out = stampede(&["load", &s.url("/pong"), "--stream", "--sse", "-n", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("--sse"), "{}", text(&out.stderr));
    let (r, _) = run_json(&[
        "load",
        &s.url("/sse/2?gap=0"),
        "-c",
        "1",
        "-t",
        "1",
        "-n",
        "1",
    ]);
    assert_eq!(r["statuses"]["400"], 1);
}

/// An event over the size limit (1 MiB) fails its request as `stream_event`; the
/// connection is closed and nothing grows with the server's bytes.
#[test]
fn an_event_over_the_limit_fails_its_request_by_kind() {
    let mut out =
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
            .to_vec();
    let line = [b"data: ".as_slice(), &vec![b'x'; 2 << 20]].concat();
    out.extend_from_slice(format!("{:x}\r\n", line.len()).as_bytes());
    out.extend_from_slice(&line);
    let (addr, server) = answer_once(out);
    let url = format!("http://{addr}/");
    let (r, _) = run_json(&[
        "load",
        &url,
        "--sse",
        "-c",
        "1",
        "-t",
        "1",
        "-n",
        "1",
        "--timeout",
        "10s",
    ]);
    assert_eq!(r["requests"]["failed"], 1, "{}", r["requests"]);
    assert_eq!(r["errors"]["stream_event"], 1, "{}", r["errors"]);
    server.join().unwrap();
}

/// `--openai` against the mock LLM with known timing (30 ms to the first token, 10 ms
/// between tokens, 8 tokens each): the tokens are the usage chunks' counts, TTFT no
/// sooner than 30 ms, ITL and TPOT 10 ms at the median, every stream ends with
/// `[DONE]`; both APIs, over HTTP/1.1 and HTTP/2.
#[test]
fn openai_completions_are_timed_by_their_tokens() {
    let s = mock_llm(30, 10, 0, 16);
    for (api, path, more) in [
        ("chat", "/v1/chat/completions", None),
        ("completions", "/v1/completions", Some("--http2")),
    ] {
        let url = s.url(path);
        let mut args = vec![
            "load",
            &url,
            "--openai",
            api,
            "--input-tokens",
            "20",
            "--output-tokens",
            "8",
            "-c",
            "2",
            "-t",
            "1",
            "-n",
            "10",
        ];
        args.extend(more);
        let (r, summary) = run_json(&args);
        assert_eq!(r["statuses"]["200"], 10, "{api}: {}", r["statuses"]);
        let st = &r["stream"];
        assert_eq!(st["mode"], "openai");
        assert_eq!(st["done"], 10, "{api}: {st}");
        assert_eq!(st["events"], 80, "{api}: {st}");
        let t = &st["tokens"];
        assert_eq!(t["total"], 80, "{api}: {t}");
        assert_eq!(t["per_response"]["min_us"], 8);
        assert_eq!(t["per_response"]["max_us"], 8);
        assert!(ms(&st["first_event"]["min_us"]) >= 30.0, "{api}: {st}");
        assert!(
            ms(&r["latency"]["min_us"]) >= 100.0,
            "{api}: {}",
            r["latency"]
        );
        assert_eq!(st["gap"]["count"], 70);
        let itl = p50(&st["gap"]);
        let tpot = p50(&t["tpot"]);
        assert!((7.0..=13.0).contains(&itl), "{api}: itl p50 {itl} ms");
        assert!((7.0..=13.0).contains(&tpot), "{api}: tpot p50 {tpot} ms");
        assert!(summary.contains("  ttft        p50 "), "{summary}");
        assert!(
            summary.contains("  tokens      80 completion tokens = "),
            "{summary}"
        );
        // The prompts go to one endpoint: one request, no figure per prompt.
        assert!(!summary.contains("by request"), "{summary}");
        assert!(
            r.get("targets").is_none_or(|t| t.is_null()),
            "{}",
            r["targets"]
        );
    }
    // The run report's stream section, and the tokens each second in the intervals.
    let dir = tempdir::Dir::new();
    let page = dir.0.join("r.html");
    let url = s.url("/v1/completions");
    let (r, _) = run_json(&[
        "load",
        &url,
        "--openai",
        "completions",
        "--output-tokens",
        "5",
        "-c",
        "2",
        "-t",
        "1",
        "-n",
        "6",
        "--html",
        &page.to_string_lossy(),
    ]);
    let per_second: u64 = r["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["events"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(per_second, 30, "{}", r["intervals"]);
    let html = std::fs::read_to_string(&page).unwrap();
    for part in [
        "<h2>Streams</h2>",
        "time to first token (TTFT), from the intended start",
        "Spectrum: inter-token latency (ITL)",
        "tokens (events carrying text) per second",
    ] {
        assert!(html.contains(part), "the report lacks {part:?}");
    }
    // Goodput: every completion meets generous levels, none a TTFT of 1 ms.
    let run = |levels: &[&str]| {
        let mut args = vec![
            "load",
            &url,
            "--openai",
            "completions",
            "--output-tokens",
            "4",
            "-c",
            "2",
            "-t",
            "1",
            "-n",
            "6",
            "--goodput",
        ];
        args.extend_from_slice(levels);
        run_json(&args)
    };
    let (r, summary) = run(&["ttft:2000", "tpot:2000", "e2el:5000"]);
    assert_eq!(r["stream"]["tokens"]["good"], 6, "{}", r["stream"]);
    assert!(r["stream"]["tokens"]["goodput_rps"].as_f64().unwrap() > 0.0);
    assert!(summary.contains("6 met the service levels"), "{summary}");
    let (r, _) = run(&["ttft:1"]);
    assert_eq!(r["stream"]["tokens"]["good"], 0, "{}", r["stream"]);
}

/// The mock LLM's other answers: the model list, a completion not streamed (one JSON
/// answer with usage), a request that is not one (400, OpenAI's error object), and a
/// GET of a completion (405).
#[test]
fn the_mock_llm_answers_as_an_openai_server_does() {
    let s = srv();
    let ask = |req: String| -> String {
        let mut c = std::net::TcpStream::connect(s.addr()).unwrap();
        c.write_all(req.as_bytes()).unwrap();
        let mut out = String::new();
        c.read_to_string(&mut out).unwrap();
        out
    };
    let post = |path: &str, body: &str| {
        ask(format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ))
    };
    let models = ask("GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".into());
    assert!(models.contains("\"id\":\"stampede-mock\""), "{models}");
    let whole = post(
        "/v1/completions",
        r#"{"model":"stampede-mock","prompt":"one two three","max_tokens":3}"#,
    );
    assert!(whole.starts_with("HTTP/1.1 200 OK\r\n"), "{whole}");
    assert!(whole.contains("Content-Type: application/json"), "{whole}");
    // Chunked: the JSON is the one chunk's data.
    let json = whole
        .split("\r\n\r\n")
        .nth(1)
        .unwrap()
        .lines()
        .nth(1)
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    assert_eq!(v["choices"][0]["text"], " tok tok tok");
    assert_eq!(v["usage"]["prompt_tokens"], 3);
    assert_eq!(v["usage"]["completion_tokens"], 3);
    let bad = post("/v1/chat/completions", r#"{"prompt":"no messages"}"#);
    assert!(bad.starts_with("HTTP/1.1 400 "), "{bad}");
    assert!(bad.contains("invalid_request_error"), "{bad}");
    let get = ask("GET /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".into());
    assert!(get.starts_with("HTTP/1.1 405 "), "{get}");
    // POST elsewhere is still refused.
    assert!(post("/pong", "{}").starts_with("HTTP/1.1 405 "));
}

/// A stream that stalls past `--event-timeout` fails as `stream_stall` (long before
/// the request timeout); the flag needs a stream to time.
#[test]
fn a_stream_that_stalls_fails_at_the_event_timeout() {
    let s = srv();
    let url = s.url("/sse/5?gap=5000");
    let started = std::time::Instant::now();
    let (r, _) = run_json(&[
        "load",
        &url,
        "--sse",
        "--event-timeout",
        "300ms",
        "-c",
        "1",
        "-t",
        "1",
        "-n",
        "1",
    ]);
    assert_eq!(r["errors"]["stream_stall"], 1, "{}", r["errors"]);
    assert_eq!(r["stream"]["events"], 1, "{}", r["stream"]);
    assert!(started.elapsed() < std::time::Duration::from_secs(4));
    let out = stampede(&["load", &url, "--event-timeout", "1s", "-n", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--event-timeout"),
        "{}",
        text(&out.stderr)
    );
}

/// Assertions on stream figures: met ones pass, a missed one fails the run (exit 3)
/// saying the figure, one on a figure the run does not time is refused before it
/// starts. (`--find-max` on stream figures, which judges rates on the real clock, is
/// tested in the limits binary, alone.)
#[test]
fn stream_figures_are_asserted_and_searched_on() {
    let s = mock_llm(20, 5, 2, 4);
    let sse = s.url("/sse/4?gap=10&first=20");
    let base = ["load", &sse, "--sse", "-c", "2", "-t", "1", "-n", "6"];
    let with = |more: &[&str]| {
        let mut all = base.to_vec();
        all.extend_from_slice(more);
        stampede(&all)
    };
    let out = with(&["--assert", "ttft_p50 >= 20ms", "--assert", "itl_p99 < 2s"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = with(&["--assert", "first_event_max < 1ms"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let all = text(&out.stdout) + &text(&out.stderr);
    assert!(all.contains("first_event_max < 1ms"), "{all}");
    // Refused before the run, each naming what to add.
    for (args, says) in [
        (vec!["--sse", "--assert", "tpot_p99 < 1s"], "--openai"),
        (vec!["--burstiness", "2"], "add --rate"),
        (vec!["--assert", "ttft_p99 < 1s"], "--sse"),
    ] {
        let mut all = vec!["load", sse.as_str(), "-n", "2"];
        all.extend(args);
        refused(&all, says);
    }
}

/// A server whose usage counts fewer tokens than the events that carried text: the
/// contradiction is counted, the usage's figure is the completion's tokens.
#[test]
fn a_usage_below_the_text_events_is_counted() {
    let mut body = String::new();
    for t in [" a", " b", " c"] {
        body += &format!("data: {{\"choices\":[{{\"index\":0,\"text\":\"{t}\"}}]}}\n\n");
    }
    body += "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":2,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n";
    let answer = event_stream(&body);
    let (addr, server) = answer_once(answer);
    let url = format!("http://{addr}/v1/completions");
    let (r, _) = run_json(&[
        "load",
        &url,
        "--openai",
        "completions",
        "-c",
        "1",
        "-t",
        "1",
        "-n",
        "1",
    ]);
    let t = &r["stream"]["tokens"];
    assert_eq!(t["usage_short"], 1, "{t}");
    assert_eq!(t["total"], 1, "{t}");
    assert_eq!(r["stream"]["events"], 3);
    server.join().unwrap();
}

/// `--tokenizer`: a completion whose stream carries no usage is counted from its text
/// by the model's tokenizer (two tokens an event here), not by its events; a path that
/// is no tokenizer is refused naming the flag.
#[test]
fn a_tokenizer_counts_completions_without_usage() {
    let mut body = String::new();
    for t in [" a b", " c.", " hello tok"] {
        body += &format!("data: {{\"choices\":[{{\"index\":0,\"text\":\"{t}\"}}]}}\n\n");
    }
    body += "data: [DONE]\n\n";
    let answer = event_stream(&body);
    let dir = tempdir::Dir::new();
    let tok = tokenizer_in(&dir.0);
    for (with, tokens) in [(false, 3), (true, 6)] {
        let (addr, server) = answer_once(answer.clone());
        let url = format!("http://{addr}/v1/completions");
        let mut args = vec![
            "load",
            &url,
            "--openai",
            "completions",
            "-c",
            "1",
            "-t",
            "1",
            "-n",
            "1",
        ];
        if with {
            args.extend(["--tokenizer", &tok]);
        }
        let (r, _) = run_json(&args);
        let t = &r["stream"]["tokens"];
        assert_eq!(t["total"], tokens, "tokenizer {with}: {t}");
        assert_eq!(r["stream"]["events"], 3);
        server.join().unwrap();
    }
    refused(
        &[
            "load",
            "http://127.0.0.1:9/v1/completions",
            "--openai",
            "completions",
            "--tokenizer",
            "/nonexistent/tokenizer.json",
        ],
        "--tokenizer: \"/nonexistent/tokenizer.json\" is neither",
    );
}

/// `stampede vllm bench serve` against the mock LLM: vLLM's report in its layout, its
/// JSON result, our figures beside the ones it would print, and its flags' errors.
#[test]
fn vllm_bench_serve_prints_its_report_and_its_result() {
    let s = mock_llm(30, 10, 0, 16);
    let dir = tempdir::Dir::new();
    let d = dir.0.to_string_lossy().into_owned();
    let tok = tokenizer_in(&dir.0);
    let base = s.url("");
    let out = stampede(&[
        "vllm",
        "bench",
        "serve",
        "--backend",
        "openai-chat",
        "--base-url",
        &base,
        "--endpoint",
        "/v1/chat/completions",
        "--model",
        "stampede-mock",
        "--tokenizer",
        &tok,
        "--num-prompts",
        "12",
        "--random-input-len",
        "16",
        "--random-output-len",
        "6",
        "--max-concurrency",
        "4",
        "--percentile-metrics",
        "ttft,tpot,itl,e2el",
        "--metric-percentiles",
        "50,99",
        "--goodput",
        "ttft:2000",
        "tpot:2000",
        "--save-result",
        "--result-dir",
        &d,
        "--result-filename",
        "r.json",
        "--label",
        "mine",
        "--trust-remote-code",
    ]);
    let (o, e) = (text(&out.stdout), text(&out.stderr));
    assert!(
        e.contains("--trust-remote-code: the tokenizer is read"),
        "{e}"
    );
    assert!(out.status.success(), "{e}");
    for want in [
        "============ Serving Benchmark Result ============\n",
        "Successful requests:                     12 ",
        "Maximum request concurrency:             4 ",
        "Total input tokens:                      192 ",
        "Total generated tokens:                  72 ",
        "Request goodput (req/s):",
        "---------------Time to First Token----------------\n",
        "-----Time per Output Token (excl. 1st token)------\n",
        "P50 TTFT (ms):",
        "P99 ITL (ms):",
        "Mean E2EL from the send (ms):",
        "P99 TTFT from the send (ms):",
        "==================================================\n",
    ] {
        assert!(o.contains(want), "{want:?} in\n{o}");
    }
    assert!(!e.contains("note: no tokenizer.json"), "{e}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.0.join("r.json")).unwrap()).unwrap();
    assert_eq!(v["completed"], 12);
    assert_eq!(v["total_output_tokens"], 72);
    assert_eq!(v["total_input_tokens"], 192);
    assert_eq!(v["max_concurrency"], 4);
    assert_eq!(v["tokenizer_id"], tok.as_str());
    assert_eq!(v["label"], "mine");
    assert!(v["mean_ttft_ms"].as_f64().unwrap() >= 30.0, "{v}");
    let itl = v["median_itl_ms"].as_f64().unwrap();
    assert!((7.0..=13.0).contains(&itl), "{itl}");
    assert!(v["request_goodput"].as_f64().unwrap() > 0.0, "{v}");
    assert!(v["p99_ttft_ms_from_send"].as_f64().unwrap() <= v["p99_ttft_ms"].as_f64().unwrap());
    // Flags it cannot honour are refused by name, with what to do instead.
    for (args, want) in [
        (
            vec!["--burstiness", "0"],
            "--burstiness: 0 is not a burstiness factor",
        ),
        (vec!["--backend", "tgi"], "--backend tgi"),
        (vec!["--dataset-name", "sonnet"], "--dataset-name sonnet"),
        (vec!["--goodput", "ttft"], "--goodput ttft"),
        (vec!["--profile"], "--profile"),
        (
            vec!["--tokenizer", "no/such-model"],
            "--tokenizer: \"no/such-model\" is neither a tokenizer.json file",
        ),
    ] {
        let mut all = vec![
            "vllm",
            "bench",
            "serve",
            "--model",
            "m",
            "--base-url",
            &base,
        ];
        all.extend(args);
        refused(&all, want);
    }
    let out = stampede(&["vllm", "serve", "--model", "m"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("bench serve"),
        "{}",
        text(&out.stderr)
    );
}

/// A server whose completions never end: each connection is answered with OpenAI
/// chunks, one token each, until the client goes (at most 30 s).
fn endless_llm() -> (String, std::thread::JoinHandle<()>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let h = std::thread::spawn(move || {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
        // Blocks in accept until a client comes; ends with the test process.
        for mut s in l.incoming().take(8).flatten() {
            std::thread::spawn(move || {
                let mut head = [0u8; 65536];
                let _ = s.read(&mut head);
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n");
                let event = b"data: {\"choices\":[{\"index\":0,\"text\":\" x\"}]}\n\n";
                let chunk = [format!("{:x}\r\n", event.len()).as_bytes(), event, b"\r\n"].concat();
                while std::time::Instant::now() < until && s.write_all(&chunk).is_ok() {}
            });
        }
    });
    (url, h)
}

/// `vllm bench serve` against completions that never end: each is broken once it
/// streams past what it asked for, and the run ends with them counted.
#[test]
fn a_completion_that_never_ends_is_broken_not_waited_for() {
    let (url, server) = endless_llm();
    let started = std::time::Instant::now();
    let out = stampede(&[
        "vllm",
        "bench",
        "serve",
        "--base-url",
        &url,
        "--model",
        "m",
        "--num-prompts",
        "3",
        "--random-input-len",
        "4",
        "--random-output-len",
        "8",
        "--max-concurrency",
        "1",
        "--ready-check-timeout-sec",
        "0",
    ]);
    let (o, e) = (text(&out.stdout), text(&out.stderr));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{o}{e}"
    );
    assert!(
        o.contains("Failed requests:                         3"),
        "{o}{e}"
    );
    drop(server);
}
