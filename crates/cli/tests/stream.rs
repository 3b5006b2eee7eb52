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
        summary.contains(
            "stream      sse: 100 events, 10 streams ended with [DONE]; per response p50 10 max 10"
        ),
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
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        // The run's reachability probe connects and closes first: the request comes
        // on a later connection.
        let mut c = loop {
            let (mut c, _) = l.accept().unwrap();
            let mut buf = [0u8; 4096];
            if c.read(&mut buf).is_ok_and(|n| n > 0) {
                break c;
            }
        };
        let mut out = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        let line = [b"data: ".as_slice(), &vec![b'x'; 2 << 20]].concat();
        out.extend_from_slice(format!("{:x}\r\n", line.len()).as_bytes());
        out.extend_from_slice(&line);
        // The client closes once it has seen too much; what is left unsent is moot.
        let _ = c.write_all(&out);
    });
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
