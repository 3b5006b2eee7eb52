//! Golden-file tests: each renderer's output for a fixed result, byte for byte.
//! Run with `UPDATE_GOLDEN=1` to rewrite the files after an intended change, then
//! review the diff.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::json;
use stampede_engine::result::{Bytes, Counts, Histograms, Interval, RunSettings, SCHEMA};
use stampede_engine::result::{OpenStats, SessionStats};
use stampede_engine::{ErrorKind, RequestRecord};
use stampede_engine::{Hist, LatencyStats, RunResult};
use stampede_report::ghz::{
    ghz_csv, ghz_influx_details, ghz_influx_summary, ghz_json, ghz_summary, GhzInfo,
};
use stampede_report::{
    ab_csv, ab_report, gatling_report, h2load_preamble, h2load_report, httperf_report, summary,
    wrk_report, AbInfo, GatlingBounds, H2loadInfo, HttperfInfo, WrkInfo,
};

fn hist(values: impl Iterator<Item = u64>) -> Hist {
    let mut h = Hist::default();
    for v in values {
        h.0.record(v).unwrap();
    }
    h
}

/// A deterministic result: 10,000 requests, a long tail, a few errors and 404s.
fn fixture() -> RunResult {
    let lat = |i: u64| 180 + (i * 7919) % 900 + if i.is_multiple_of(500) { 40_000 + i } else { 0 };
    let latency = hist((0..10_000).map(lat));
    let connect = hist((0..10_000).map(|i| if i < 100 { 60 + i } else { 0 }));
    let waiting = hist((0..10_000).map(|i| lat(i) - 20));
    let processing = hist((0..10_000).map(|i| lat(i) - if i < 100 { 60 + i } else { 0 }));
    let intervals = (0..5u32)
        .map(|t| {
            let h = hist((0..2_000).map(|i| lat(i + t as u64 * 2000)));
            Interval {
                t,
                completed: 2_000,
                failed: 1,
                bytes_read: 2_000 * 151,
                latency: h.stats(),
                histogram: h.to_base64(),
                histogram_uncorrected: h.to_base64(),
                connections: 4,
                in_flight: 4,
                users: 0,
                events: 0,
            }
        })
        .collect();
    RunResult {
        schema: SCHEMA.into(),
        version: "0.1.0".into(),
        started_unix_ms: 1_795_000_000_000,
        duration_s: 5.0,
        settings: RunSettings {
            url: "http://127.0.0.1:8080/pong".into(),
            address: "127.0.0.1:8080".into(),
            method: "GET".into(),
            request_bytes: 82,
            connections: 64,
            threads: 2,
            keepalive: true,
            pipeline: 1,
            requests: Some(10_005),
            duration_s: None,
            timeout_s: Some(30.0),
            shape: "closed".into(),
            http2: false,
            http3: false,
            redirects: 0,
        },
        requests: Counts {
            started: 10_005,
            completed: 10_000,
            failed: 5,
            abandoned: 0,
            keepalive: 10_000,
            length_mismatch: 7,
        },
        throughput_rps: 2_000.0,
        statuses: BTreeMap::from([(200, 9_990), (404, 10)]),
        errors: BTreeMap::from([("connect_refused".into(), 2), ("timeout".into(), 3)]),
        bytes: Bytes {
            read: 1_510_000,
            body: 40_000,
            written: 820_410,
            headers_compressed: 0,
            headers_decoded: 0,
        },
        connections_opened: 66,
        server_software: Some("nginx/1.22.1".into()),
        document_length: Some(4),
        latency: latency.stats(),
        latency_uncorrected: latency.stats(),
        histograms: Histograms {
            latency,
            uncorrected: Hist::default(),
            connect,
            waiting,
            processing,
            send_lag: Hist::default(),
            ok: Hist::default(),
            ko: Hist::default(),
            session: Hist::default(),
            tls_handshake: Hist::default(),
            first_byte: Hist::default(),
            per_connection: Hist::default(),
            redirect: Hist::default(),
            ws_upgrade: Hist::default(),
            stream: None,
        },
        intervals,
        open: None,
        sessions: None,
        origin: Default::default(),
        limit: None,
        capacity: None,
        interrupted: false,
        fleet: None,
        targets: Vec::new(),
        server: None,
        protocols: Default::default(),
    }
}

/// The fixture as an open, session-shaped run: OK and KO split, sessions, a schedule.
fn open_fixture() -> RunResult {
    let mut r = fixture();
    let lat = |i: u64| 180 + (i * 7919) % 900 + if i.is_multiple_of(500) { 40_000 + i } else { 0 };
    // 9,990 OK responses; KO: 10 responses with status 500 and 5 failures (3 timeouts
    // after 30 s, 2 refused connections).
    r.histograms.ok = hist((0..9_990).map(lat));
    r.histograms.ko =
        hist(
            (9_990..10_000)
                .map(lat)
                .chain([30_001_000u64, 30_004_000, 30_011_000, 950, 1_300]),
        );
    r.histograms.session = hist((0..100).map(|i| 400_000 + i * 1_000));
    r.histograms.send_lag = hist((0..10_005).map(|i| 5 + i % 40));
    r.histograms.uncorrected = hist((0..10_000).map(|i| 150 + (i * 7919) % 700));
    r.latency_uncorrected = r.histograms.uncorrected.stats();
    r.statuses = BTreeMap::from([(200, 9_990), (500, 10)]);
    r.settings.shape = "100 sessions, period d0.05; 100 calls per session in bursts of 20".into();
    r.connections_opened = 100;
    r.sessions = Some(SessionStats {
        started: 100,
        completed: 98,
        failed: 2,
        max_concurrent: 12,
        lifetime: r.histograms.session.stats(),
        calls: 100,
        burst: 20,
    });
    r.open = Some(OpenStats {
        target_rate: Some(20.0),
        achieved_rate: 20.0,
        send_lag: r.histograms.send_lag.stats(),
        never_sent: 0,
        censored: 0,
        behind: false,
        cause: None,
    });
    r
}

fn check(name: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("{} is missing; run with UPDATE_GOLDEN=1", path.display()));
    if expected != actual {
        let line = expected
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(expected.lines().count().min(actual.lines().count()));
        panic!(
            "{name} differs from its golden file at line {}:\n  golden: {:?}\n  actual: {:?}\n(UPDATE_GOLDEN=1 rewrites it)",
            line + 1,
            expected.lines().nth(line),
            actual.lines().nth(line)
        );
    }
}

fn ab_info() -> AbInfo {
    AbInfo {
        hostname: "127.0.0.1".into(),
        port: 8080,
        path: "/pong".into(),
        concurrency: 64,
        keepalive: true,
        variable_length: false,
        sent_body: false,
        confidence: true,
        percentiles: true,
    }
}

#[test]
fn ab_layout() {
    check("ab.txt", &ab_report(&fixture(), &ab_info()));
}

#[test]
fn ab_layout_without_confidence_and_percentiles() {
    let info = AbInfo {
        confidence: false,
        percentiles: false,
        keepalive: false,
        variable_length: true,
        ..ab_info()
    };
    check("ab-S-d.txt", &ab_report(&fixture(), &info));
}

#[test]
fn ab_csv_file() {
    check("ab.csv", &ab_csv(&fixture()));
}

#[test]
fn wrk_layouts() {
    let info = WrkInfo {
        url: "http://127.0.0.1:8080/pong".into(),
        threads: 2,
        connections: 64,
        duration_s: 5.0,
        latency: false,
        uncorrected: false,
        wrk2: true,
    };
    check("wrk.txt", &wrk_report(&fixture(), &info));
    // wrk's own --latency (no -R): its four percentiles, no spectrum.
    let plain = wrk_report(
        &fixture(),
        &WrkInfo {
            latency: true,
            wrk2: false,
            ..info.clone()
        },
    );
    assert!(!plain.contains("Detailed Percentile spectrum"), "{plain}");
    let lines: Vec<&str> = plain.lines().collect();
    let at = lines
        .iter()
        .position(|l| *l == "  Latency Distribution")
        .expect(&plain);
    for (i, p) in ["50%", "75%", "90%", "99%"].iter().enumerate() {
        assert!(lines[at + 1 + i].trim_start().starts_with(p), "{plain}");
        assert_eq!(lines[at + 1 + i].len(), 18, "{:?}", lines[at + 1 + i]);
    }
    assert!(!lines[at + 5].contains('%'), "{plain}");
    check(
        "wrk-latency.txt",
        &wrk_report(
            &fixture(),
            &WrkInfo {
                latency: true,
                ..info
            },
        ),
    );
}

#[test]
fn h2load_layout() {
    let mut r = fixture();
    r.settings.http2 = true;
    r.bytes.headers_compressed = 120_000;
    r.bytes.headers_decoded = 400_000;
    let mut per = Hist::default();
    per.0.record_n(156, 32).unwrap();
    per.0.record_n(157, 32).unwrap();
    r.histograms.per_connection = per;
    let mut first = Hist::default();
    for v in [900, 1100, 1300, 2400] {
        first.0.record(v).unwrap();
    }
    r.histograms.first_byte = first;
    r.histograms.uncorrected = r.histograms.latency.clone();
    let info = H2loadInfo {
        threads: 2,
        clients: 64,
        requests: Some(10_005),
        protocol: "h2c".into(),
    };
    check(
        "h2load.txt",
        &(h2load_preamble(&info) + &h2load_report(&r, &info)),
    );
}

#[test]
fn gatling_layout() {
    check(
        "gatling.txt",
        &gatling_report(&open_fixture(), GatlingBounds::default()),
    );
}

#[test]
fn httperf_layout() {
    let info = HttperfInfo {
        command: "stampede httperf --server=localhost --port=8080 --uri=/pong --rate=20 --num-conns=100 --num-calls=100 --burst-length=20".into(),
        cpu: Some((0.5, 1.25)),
        sessions: false,
    };
    check("httperf.txt", &httperf_report(&open_fixture(), &info));
}

#[test]
fn a_session_run_s_html_report_counts_sessions_and_connections_opened() {
    let mut r = open_fixture();
    r.settings.connections = 64;
    let html = stampede_report::run_html(&r, "run", None);
    assert!(
        html.contains("100 sessions started, 100 connections opened, 2 threads"),
        "{}",
        &html[..html.len().min(600)]
    );
    assert!(!html.contains("64 connections"));
}

#[test]
fn gatling_divides_by_the_seconds_the_run_touched() {
    // 10,005 requests in 60.3 s starting half-way through a second touch 61 seconds:
    // Gatling prints 10005 / 61, not 10005 / 60.3.
    let mut r = open_fixture();
    r.started_unix_ms = 1_795_000_000_500;
    r.duration_s = 60.3;
    let out = gatling_report(&r, GatlingBounds::default());
    let line = out
        .lines()
        .find(|l| l.starts_with("> mean requests/sec"))
        .unwrap();
    assert!(line.contains(" 164.016 (OK=163.77 "), "{line}");
}

#[test]
fn httperf_counts_opened_connections_and_every_error_class() {
    // 100 sessions: 3 found no descriptor, 1 no local port; 96 connections opened.
    let mut r = open_fixture();
    r.errors.insert("fd_unavailable".into(), 3);
    r.errors.insert("addr_unavailable".into(), 1);
    r.requests.failed += 4;
    r.requests.started += 4;
    r.connections_opened = 96;
    let info = HttperfInfo {
        command: "stampede httperf --server=localhost --port=8080 --uri=/pong --rate=20 --num-conns=100 --num-calls=100 --burst-length=20".into(),
        cpu: Some((0.5, 1.25)),
        sessions: false,
    };
    let out = httperf_report(&r, &info);
    let line = |start: &str| {
        out.lines()
            .filter(|l| l.starts_with(start))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        line("Total: connections"),
        ["Total: connections 96 requests 10009 replies 10000 test-duration 5.000 s"]
    );
    assert_eq!(
        line("Errors: "),
        [
            "Errors: total 9 client-timo 3 socket-timo 0 connrefused 2 connreset 0",
            "Errors: fd-unavail 3 addrunavail 1 ftab-full 0 other 0"
        ]
    );
}

#[test]
fn native_summary_of_an_open_run() {
    check("summary-open.txt", &summary(&open_fixture()));
}

#[test]
fn native_summary() {
    check("summary.txt", &summary(&fixture()));
}

#[test]
fn latency_stats_of_the_fixture_are_exact() {
    // The renderers read these; pin the histogram maths they rest on.
    let s: LatencyStats = fixture().latency;
    assert_eq!(s.count, 10_000);
    assert_eq!(s.min_us, 180);
    assert_eq!(s.at(50.0), Some(631));
    // The largest sample is 50,080 µs; at three significant digits its bucket spans 32 µs
    // and HdrHistogram reports the bucket's highest equivalent value.
    assert_eq!(s.max_us, 50_111);
    assert!(fixture().histograms.latency.0.equivalent(50_080, s.max_us));
}

#[test]
fn a_websocket_runs_refusals_and_closes_are_in_its_html_and_warnings() {
    let mut r = fixture();
    let html = stampede_report::run_html(&r, "run", None);
    assert!(!html.contains("<h2>WebSocket</h2>"));
    let upgrades = hist([450, 610, 2_000].into_iter());
    r.protocols.websocket = Some(stampede_engine::result::WsStats {
        upgrade: Some(upgrades.stats()),
        refused: BTreeMap::from([(404, 3)]),
        closes: BTreeMap::from([(1001, 2), (1011, 1_200)]),
        unmatched: 5_000,
    });
    let html = stampede_report::run_html(&r, "run", None);
    assert!(
        html.contains("3 upgrades, each p50 610µs p99 2.00ms max 2.00ms (from the open connection to the 101). Upgrades refused, by status: 404 × 3. Connections the server closed, by close code: 1001 × 2, 1011 × 1,200. Messages read that were no answer (not holding what was expected): 5,000."),
        "{}",
        &html[..html.len().min(600)]
    );
    let summary = stampede_report::summary(&r);
    assert!(
        summary.contains("  websocket   3 upgrades, each p50 610µs p99 2.00ms"),
        "{summary}"
    );
    assert!(
        summary.contains(
            "\n              5,000 messages read were no answer (not holding what was expected)\n"
        ),
        "{summary}"
    );
    let w = stampede_report::loud_warnings(&r).join("\n");
    assert!(
        w.contains("refused 3 WebSocket upgrades (answered 404: 3)"),
        "{w}"
    );
    assert!(
        w.contains(
            "closed 1,202 WebSocket connections during the run (close codes 1001: 2, 1011: 1,200)"
        ),
        "{w}"
    );
}

#[test]
fn warnings_print_figures_as_the_reports_do_and_an_interrupted_run_is_marked() {
    let mut r = open_fixture();
    r.histograms.send_lag = hist((0..1_000).map(|i| 2_897_919 + i));
    let op = r.open.as_mut().unwrap();
    op.send_lag = r.histograms.send_lag.stats();
    op.never_sent = 14_645_982;
    op.behind = true;
    op.cause = Some("the client was the limit".into());
    r.statuses = BTreeMap::from([(200, 9_990), (500, 1_234_567)]);
    let w = stampede_report::loud_warnings(&r).join("\n");
    assert!(
        w.contains("send lag p99 2.90s, 14,645,982 arrivals never sent"),
        "{w}"
    );
    assert!(w.contains("(500: 1,234,567)"), "{w}");
    // A result read from an interval log has no statuses: no error-page warning.
    r.statuses.clear();
    let w = stampede_report::loud_warnings(&r).join("\n");
    assert!(!w.contains("not 2xx"), "{w}");

    let mut r = fixture();
    assert!(!stampede_report::summary(&r).contains("INTERRUPTED"));
    r.interrupted = true;
    r.duration_s = 2.25;
    r.settings.requests = None;
    r.settings.duration_s = Some(10.0);
    let s = stampede_report::summary(&r);
    assert!(
        s.lines().nth(1).unwrap().contains(
            "! INTERRUPTED after 2.25s of 10s: the figures below cover only the part that ran"
        ),
        "{s}"
    );
    assert!(stampede_report::run_html(&r, "t", None).contains("INTERRUPTED after 2.25s"));
}

#[test]
fn the_run_reports_charts_leave_out_a_sliver_of_a_last_second_and_say_what_ko_counts() {
    let mut r = fixture();
    let mut tail = r.intervals[4].clone();
    tail.t = 5;
    tail.completed = 1;
    r.intervals.push(tail);
    let html = stampede_report::run_html(&r, "t", None);
    let chart = &html[html.find("requests per second").unwrap()..];
    let line = &chart[chart.find("<polyline").unwrap()..];
    let points = line[line.find("points=\"").unwrap() + 8..]
        .split('"')
        .next()
        .unwrap();
    assert_eq!(points.split(' ').count(), 5, "{points}");
    // Legends sit above the plot (its top is y = 30), never on the lines.
    let rect = &chart[chart.find("<rect class=\"s0 fill\"").unwrap()..];
    let y: f64 = rect[rect.find(" y=\"").unwrap() + 4..]
        .split('"')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(y + 10.0 <= 30.0, "legend at y {y}");
    // The failed card counts requests without an answer; KO counts error statuses too.
    assert!(html.contains("failed (no answer)"), "card");
    let r = open_fixture();
    let g = stampede_report::run_html(&r, "t", None);
    assert!(
        g.contains("KO (error status or failed)"),
        "Gatling's ranges"
    );
}

/// A gRPC run of 7 calls in 2 s: 4 answered OK, 2 UNAVAILABLE, 1 timed out, and 2
/// in flight at the end.
fn ghz_fixture() -> RunResult {
    let mut r = fixture();
    r.duration_s = 2.0;
    r.started_unix_ms = 1_795_759_184_000;
    r.requests.completed = 6;
    r.requests.failed = 1;
    r.requests.abandoned = 2;
    r.protocols.grpc = Some(BTreeMap::from([
        ("OK".to_string(), 4),
        ("UNAVAILABLE".to_string(), 2),
    ]));
    r.errors = BTreeMap::from([("timeout".into(), 1)]);
    r.histograms.ok = hist([100, 200, 300, 400].into_iter());
    r.histograms.ko = hist([50, 20_000_000].into_iter());
    r
}

#[test]
fn ghz_summary_counts_calls_by_status_and_times_the_ok_ones() {
    let r = ghz_fixture();
    let info = GhzInfo {
        name: Some("smoke".into()),
        ..Default::default()
    };
    let s = ghz_summary(&r, &info);
    assert!(s.starts_with("\nSummary:\n  Name:\t\tsmoke\n  Count:\t7\n  Total:\t2.00 s\n"));
    assert!(s.contains("  Slowest:\t0.40 ms\n  Fastest:\t0.10 ms\n  Average:\t0.25 ms\n"));
    assert!(s.contains("  Requests/sec:\t3.50\n"));
    assert!(s.contains("  50 % in 0.20 ms \n"), "{s}");
    // Columns as Go's tabwriter sets them, the largest count first.
    assert!(s.contains("  [OK]                 4 responses   \n"), "{s}");
    assert!(s.contains("  [Unavailable]        2 responses   \n"), "{s}");
    assert!(s.contains("  [DeadlineExceeded]   1 responses   \n"), "{s}");
    assert!(s.contains("Error distribution:\n  [2]   rpc error: code = Unavailable"));
    assert!(s.contains("  [1]   rpc error: code = DeadlineExceeded desc = timeout"));
    // Eleven marks; the largest count has forty bars.
    let rows: Vec<&str> = s.lines().filter(|l| l.contains("]\t|")).collect();
    assert_eq!(rows.len(), 11, "{s}");
    // Errors counted: the failures' times join the figures; calls cut at the
    // end are counted as canceled.
    let all = GhzInfo {
        count_errors: true,
        cut_as_canceled: true,
        ..Default::default()
    };
    let s = ghz_summary(&r, &all);
    assert!(s.contains("  Count:\t9\n"), "{s}");
    assert!(
        s.contains("  Slowest:\t20.00 s\n  Fastest:\t0.05 ms\n"),
        "{s}"
    );
    assert!(s.contains("[Canceled]"), "{s}");
}

#[test]
fn ghz_json_csv_and_influx_lines_carry_each_call() {
    let r = ghz_fixture();
    let rec = |total_us, grpc, error| RequestRecord {
        start_unix_us: 1_795_759_184_208_472,
        connect_us: 0,
        total_us,
        waiting_us: 0,
        status: 200,
        body_bytes: 4,
        grpc,
        error,
    };
    let records = [
        rec(170, Some(0), None),
        rec(360, Some(14), None),
        rec(20_000_000, None, Some(ErrorKind::Timeout)),
    ];
    let info = GhzInfo {
        end_reason: "normal",
        options: json!({"call": "helloworld.Greeter.SayHello"}),
        tags: Some([("env".to_string(), json!("ci"))].into_iter().collect()),
        influx_tags: vec![
            ("proto", "a b.proto".into()),
            ("n", "7".into()),
            ("data", "{\"name\":\"x\"}".into()),
        ],
        ..Default::default()
    };
    let j = ghz_json(&r, &records, &info);
    assert_eq!(j["count"], 7);
    assert_eq!(j["total"], 2_000_000_000u64);
    assert_eq!(j["fastest"], 100_000);
    assert_eq!(j["statusCodeDistribution"]["Unavailable"], 2);
    assert_eq!(j["latencyDistribution"][2]["percentage"], 50);
    assert_eq!(j["histogram"].as_array().unwrap().len(), 11);
    assert_eq!(j["details"][0]["timestamp"], "2026-11-27T05:59:44.208472Z");
    assert_eq!(j["details"][1]["status"], "Unavailable");
    assert_eq!(j["details"][2]["status"], "DeadlineExceeded");
    assert_eq!(j["details"][2]["latency"], 20_000_000_000u64);
    assert_eq!(j["tags"]["env"], "ci");
    assert_eq!(j["date"], "2026-11-27T05:59:44Z");
    let csv = ghz_csv(&records);
    assert_eq!(
        csv,
        "\nduration (ms),status,error\n0.17,OK,\n0.36,Unavailable,rpc error: code = Unavailable\n20000.00,DeadlineExceeded,rpc error: code = DeadlineExceeded desc = timeout\n"
    );
    let line = ghz_influx_summary(&r, &info);
    assert!(
        line.starts_with(
            "ghz_run,proto=\"a\\ b.proto\",n=7,data=\"{\\\"name\\\":\\\"x\\\"}\",errors=3,has_errors=true count=7,total=2000000000,"
        ),
        "{line}"
    );
    assert!(line.ends_with(" 1795759184000000000"), "{line}");
    let details = ghz_influx_details(&records, &info);
    let lines: Vec<&str> = details.lines().collect();
    assert_eq!(lines.len(), 3);
    assert!(
        lines[0].ends_with(
            ",hasError=false latency=170000,error=\"\",status=\"OK\" 1795759184208472000"
        ),
        "{}",
        lines[0]
    );
    assert!(lines[1].contains("hasError=true"));
}

fn vllm_info() -> stampede_report::vllm::Info {
    use stampede_report::vllm::Metric;
    stampede_report::vllm::Info {
        backend: "openai-chat".into(),
        label: "openai-chat".into(),
        model: "m".into(),
        tokenizer: "m".into(),
        num_prompts: 1000,
        rate: Some(50.0),
        burstiness: 1.0,
        max_concurrency: Some(8),
        input_tokens: 1024,
        metrics: vec![Metric::Ttft, Metric::E2el],
        percentiles: vec![99.0, 99.9],
        pooling: false,
        ramp: None,
        metadata: vec![("tp".into(), "2".into())],
    }
}

#[test]
fn vllm_layout_and_json_result() {
    let r = fixture();
    let info = vllm_info();
    check("vllm.txt", &stampede_report::vllm::report(&r, &info));
    let v = stampede_report::vllm::result_json(&r, &info);
    assert_eq!(v["num_prompts"], json!(1000));
    assert_eq!(v["tp"], json!("2"));
    assert_eq!(v["endpoint_type"], json!("openai-chat"));
    assert_eq!(
        v["max_concurrent_requests"],
        json!(r.intervals.iter().map(|i| i.in_flight).max().unwrap())
    );
    assert!(v["max_output_tokens_per_s"].is_number());
    // Embeddings: E2EL only, no token figures.
    let mut pooled = vllm_info();
    pooled.pooling = true;
    pooled.metrics = vec![stampede_report::vllm::Metric::E2el];
    let text = stampede_report::vllm::report(&r, &pooled);
    assert!(text.contains("P99 E2EL (ms):"), "{text}");
    assert!(
        !text.contains("generated tokens") && !text.contains("TTFT"),
        "{text}"
    );
    let p = stampede_report::vllm::result_json(&r, &pooled);
    assert!(
        p.get("mean_ttft_ms").is_none() && p.get("total_output_tokens").is_none(),
        "{p}"
    );
    assert!(p["p99_e2el_ms"].is_number(), "{p}");
    // A ramp-up is told with its rate changes, stamped from the run's start.
    let mut ramped = vllm_info();
    ramped.ramp = Some(stampede_report::vllm::RampInfo {
        strategy: "linear".into(),
        start: 1.0,
        end: 3.0,
        changes: vec![(1, 0.0), (2, 1.5), (3, 2.25)],
    });
    let q = stampede_report::vllm::result_json(&r, &ramped);
    assert_eq!(q["ramp_up_strategy"], json!("linear"));
    assert_eq!(q["rps_change_events"].as_array().unwrap().len(), 3);
    assert_eq!(q["rps_change_events"][2]["rps"], json!(3));
    assert!(q["rps_change_events"][1]["timestamp"]
        .as_str()
        .unwrap()
        .contains('T'));
    assert_eq!(
        v["completed"],
        json!(r.statuses.range(200..300).map(|(_, n)| n).sum::<u64>())
    );
    for key in [
        "mean_e2el_ms",
        "median_e2el_ms",
        "std_e2el_ms",
        "p99_e2el_ms",
        "p99.9_e2el_ms",
        "mean_e2el_ms_from_send",
        "p99_ttft_ms",
        "mean_itl_ms",
        "p99_tpot_ms",
    ] {
        assert!(v.get(key).is_some_and(|x| x.is_number()), "{key}: {v}");
    }
    // E2EL is timed from the intended start: the corrected histogram's.
    let median = stampede_engine::percentile_linear(&r.histograms.latency.0, 50.0) / 1000.0;
    assert_eq!(v["median_e2el_ms"], json!(median));
}

/// A run that scraped the server: its queue, cache and token rates drawn under the
/// client's figures, every series in a table, and the summary's lines.
#[test]
fn the_servers_metrics_are_drawn_and_listed() {
    let mut r = fixture();
    let mut m = stampede_engine::result::ServerMetrics {
        url: "http://127.0.0.1:8000/metrics".into(),
        every_ms: 1000,
        scrapes: 3,
        ..Default::default()
    };
    m.failed.insert("timeout".into(), 1);
    for (name, values) in [
        ("vllm:num_requests_waiting", [0.0, 37.0, 4.0]),
        ("vllm:num_requests_running", [1.0, 32.0, 8.0]),
        ("vllm:kv_cache_usage_perc", [0.1, 0.9, 0.3]),
        ("vllm:generation_tokens_total", [0.0, 500.0, 1500.0]),
        ("my_own", [1.0, 2.0, 3.0]),
    ] {
        let s = values
            .iter()
            .enumerate()
            .map(|(i, v)| [i as f64, *v])
            .collect();
        m.series.insert(name.into(), s);
    }
    r.server = Some(m);
    let html = stampede_report::run_html(&r, "run", None);
    for want in [
        "<h2>The server's metrics</h2>",
        "Requests running and waiting on the server",
        "The server's KV cache",
        "Tokens the server processed",
        "<figcaption>my_own</figcaption>",
        "1 timeout",
        "<td>vllm:num_requests_waiting</td><td>0</td><td>37</td><td>4</td><td>4</td>",
    ] {
        assert!(html.contains(want), "{want}");
    }
    let text = stampede_report::native::summary_with(&r, false);
    assert!(
        text.contains(
            "  server      http://127.0.0.1:8000/metrics: 3 scrapes, 1 failed (1 timeout)"
        ),
        "{text}"
    );
    assert!(
        text.contains("vllm:num_requests_waiting                  0 → peak 37 → 4"),
        "{text}"
    );
}
