use super::*;

/// A result whose streams are known: `n` requests, each 100 ms to its first token
/// and 10 tokens 10 ms apart.
fn result(n: u64) -> RunResult {
    let mut r: RunResult =
        serde_json::from_str(include_str!("../../../engine/tests/data/small-result.json"))
            .expect("fixture");
    r.statuses.clear();
    r.intervals.clear();
    r.requests.failed = 0;
    r.requests.abandoned = 0;
    r.histograms.latency.0.reset();
    r.duration_s = 10.0;
    r.started_unix_ms = 1_796_024_337_000;
    r.requests.completed = n;
    r.requests.started = n;
    r.statuses.insert(200, n);
    let mut s = stampede_engine::StreamHistograms::default();
    for i in 0..n {
        s.first_event.0.record(100_000 + i).unwrap();
        s.tpot.0.record(10_000).unwrap();
        s.tokens.0.record(10).unwrap();
        s.per_token.0.record(19_000).unwrap();
        s.events.0.record(11).unwrap();
        r.histograms.latency.0.record(190_000).unwrap();
    }
    r.protocols.stream = Some(stampede_engine::StreamStats::of(
        stampede_engine::StreamMode::Openai,
        (11 * n, n, 10 * n, None, 0),
        10.0,
        &s,
    ));
    r.histograms.stream = Some(s);
    r
}

fn report(n: u64) -> Report {
    Report {
        spec: serde_json::json!({"profile": {"kind": "concurrent", "streams": [4]}}),
        labels: Default::default(),
        benchmarks: vec![Benchmark {
            label: "concurrent@4".into(),
            strategy: serde_json::json!({"type_": "concurrent", "streams": 4}),
            concurrency: 4,
            result: result(n),
        }],
        conclusion: None,
        isl: vec![64; n as usize],
    }
}

#[test]
fn the_json_has_guidellms_keys_and_units() {
    let v = json(&report(100));
    let m = &v["benchmarks"][0]["metrics"];
    let ttft = &m["time_to_first_token_ms"]["successful"];
    assert!(
        (ttft["percentiles"]["p50"].as_f64().unwrap() - 100.05).abs() < 0.2,
        "{ttft}"
    );
    assert_eq!(ttft["count"], 100);
    assert!(
        (m["request_latency"]["successful"]["mean"].as_f64().unwrap() - 0.19).abs() < 0.001,
        "seconds"
    );
    assert!(
        (m["inter_token_latency_ms"]["successful"]["mean"]
            .as_f64()
            .unwrap()
            - 10.0)
            .abs()
            < 0.05
    );
    assert!(
        (m["time_per_output_token_ms"]["successful"]["median"]
            .as_f64()
            .unwrap()
            - 19.0)
            .abs()
            < 0.05
    );
    assert_eq!(m["request_totals"]["successful"], 100);
    assert_eq!(m["output_token_count"]["successful"]["total_sum"], 1000.0);
    assert_eq!(m["prompt_token_count"]["successful"]["mean"], 64.0);
    assert!(
        (m["requests_per_second"]["successful"]["mean"]
            .as_f64()
            .unwrap()
            - 10.0)
            .abs()
            < 1e-9
    );
    for k in [
        "p001", "p01", "p05", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "p999",
    ] {
        assert!(ttft["percentiles"][k].is_number(), "{k}");
    }
    assert_eq!(v["benchmarks"][0]["config"]["strategy"]["streams"], 4);
}

#[test]
fn the_csv_has_three_header_rows_and_a_row_a_benchmark() {
    let c = csv::csv(&report(10));
    let lines: Vec<&str> = c.lines().collect();
    assert_eq!(lines.len(), 4);
    let n = lines[0].split(',').count();
    assert!(lines[0].starts_with("Run Info,Benchmark,Benchmark,Timings"));
    assert!(lines[0].contains("Time to First Token"), "{}", lines[0]);
    assert!(lines[2].contains("Percentiles"), "{}", lines[2]);
    assert!(lines[3].contains("concurrent@4"));
    assert!(lines[3].contains("2026-11-30 07:38:57"), "{}", lines[3]);
    assert!(n > 40);
}

#[test]
fn the_console_prints_guidellms_tables() {
    let t = console::report(&report(10));
    for want in [
        "Run Summary Info",
        "Request Latency Statistics",
        "Server Throughput Statistics",
        "concurrent@4",
        "generated 1 benchmark(s)",
    ] {
        assert!(t.contains(want), "{want}\n{t}");
    }
}
