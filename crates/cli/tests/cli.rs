//! The `stampede` binary end to end: real processes, real sockets, the reference server
//! running in-process on 127.0.0.1:0. Every run is bounded by a request count or a
//! short duration.

use std::process::{Command, Output};

fn stampede(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_stampede"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn line_value<'a>(out: &'a str, key: &str) -> &'a str {
    out.lines()
        .find(|l| l.starts_with(key))
        .unwrap_or_else(|| panic!("no line {key:?} in\n{out}"))[key.len()..]
        .trim()
}

#[test]
fn load_json_validates_against_the_committed_schema() {
    let srv = crate::common::srv();
    let out = stampede(&[
        "load",
        &srv.url("/chat"),
        "-n",
        "500",
        "-c",
        "4",
        "-t",
        "2",
        "--json",
        "-",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let errors = crate::common::schema_errors(&value);
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(value["requests"]["completed"], 500);
    assert_eq!(value["statuses"]["200"], 500);
    assert_eq!(value["bytes"]["body"], 500 * 35);
    // The schema rejects what it should.
    let mut broken = value.clone();
    broken["errors"]["made_up_kind"] = serde_json::json!(1);
    assert!(!crate::common::schema_errors(&broken).is_empty());
}

#[test]
fn ab_report_counts_bytes_like_ab() {
    let srv = crate::common::srv();
    let out = stampede(&["ab", "-n", "300", "-c", "5", "-k", &srv.url("/backend")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let o = text(&out.stdout);
    assert_eq!(line_value(&o, "Document Length:"), "31 bytes");
    assert_eq!(line_value(&o, "Complete requests:"), "300");
    assert_eq!(line_value(&o, "Failed requests:"), "0");
    assert_eq!(line_value(&o, "Keep-Alive requests:"), "300");
    assert_eq!(line_value(&o, "HTML transferred:"), "9300 bytes");
    assert!(line_value(&o, "Server Software:").starts_with("stampede/"));
    for l in [
        "Connection Times (ms)",
        "Percentage of the requests served",
        " 100% ",
    ] {
        assert!(o.contains(l), "missing {l:?} in\n{o}");
    }
    // When ab is installed, its byte counts must equal ours against the same server.
    match Command::new("ab")
        .args(["-n", "300", "-c", "5", "-k", &srv.url("/backend")])
        .output()
    {
        Ok(ab) => {
            let a = text(&ab.stdout);
            for key in [
                "Total transferred:",
                "HTML transferred:",
                "Document Length:",
                "Keep-Alive requests:",
            ] {
                assert_eq!(line_value(&a, key), line_value(&o, key), "{key}");
            }
        }
        Err(_) => crate::common::missing_peer("ab (`apt-get install apache2-utils`)"),
    }
}

#[test]
fn ab_without_keepalive_and_csv_and_gnuplot_files() {
    let srv = crate::common::srv();
    let dir = std::env::temp_dir().join(format!("stampede-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let csv = dir.join("p.csv");
    let gp = dir.join("g.tsv");
    let out = stampede(&[
        "ab",
        "-q",
        "-n",
        "200",
        "-c",
        "10",
        "-e",
        csv.to_str().unwrap(),
        "-g",
        gp.to_str().unwrap(),
        &srv.url("/pong"),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let o = text(&out.stdout);
    assert_eq!(line_value(&o, "Complete requests:"), "200");
    assert!(!o.contains("Keep-Alive requests:"));
    let csv = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 102);
    assert_eq!(lines[0], "Percentage served,Time in ms");
    assert!(lines[101].starts_with("100,"));
    let gp = std::fs::read_to_string(&gp).unwrap();
    assert_eq!(gp.lines().count(), 201);
    assert!(gp.starts_with("starttime\tseconds\tctime\tdtime\tttime\twait\n"));
    assert_eq!(gp.lines().nth(1).unwrap().split('\t').count(), 6);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn error_pages_are_reported_loudly() {
    let srv = crate::common::srv();
    let out = stampede(&["ab", "-n", "40", "-c", "4", &srv.url("/missing")]);
    assert!(out.status.success());
    assert_eq!(line_value(&text(&out.stdout), "Non-2xx responses:"), "40");
    let err = text(&out.stderr);
    assert!(
        err.contains("40 of 40 responses were not 2xx (404: 40)"),
        "{err}"
    );
    assert!(err.contains("benchmark of error pages"), "{err}");
}

#[test]
fn perf_length_failures_like_ab() {
    let srv = crate::common::srv();
    // /perf's body grows by a digit at request 10 and 100: those count as Length failures.
    let out = stampede(&[
        "ab",
        "-n",
        "120",
        "-c",
        "1",
        "--threads",
        "1",
        &srv.url("/perf"),
    ]);
    let o = text(&out.stdout);
    assert_eq!(line_value(&o, "Failed requests:"), "111");
    assert!(
        o.contains("(Connect: 0, Receive: 0, Length: 111, Exceptions: 0)"),
        "{o}"
    );
    let out = stampede(&["ab", "-l", "-n", "50", "-c", "1", &srv.url("/perf")]);
    let o = text(&out.stdout);
    assert_eq!(line_value(&o, "Document Length:"), "Variable");
    assert_eq!(line_value(&o, "Failed requests:"), "0");
}

#[test]
fn wrk_layout_with_latency_as_wrk_and_as_wrk2() {
    let srv = crate::common::srv();
    let url = srv.url("/pong");
    let common = [
        "Running 1s test @ ",
        "  2 threads and 8 connections",
        "  Thread Stats   Avg      Stdev     Max   +/- Stdev",
        "    Latency ",
        "    Req/Sec ",
        " requests in ",
        "Requests/sec: ",
        "Transfer/sec: ",
    ];
    // wrk's flags: wrk's four percentiles.
    let out = stampede(&["wrk", "-t", "2", "-c", "8", "-d", "1s", "--latency", &url]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let o = text(&out.stdout);
    for l in common
        .iter()
        .chain(&["  Latency Distribution\n     50%", "\n     99%"])
    {
        assert!(o.contains(l), "missing {l:?} in\n{o}");
    }
    assert!(!o.contains("Detailed Percentile spectrum"), "{o}");
    // With wrk2's -R: wrk2's distribution and spectrum.
    let out = stampede(&[
        "wrk",
        "-t",
        "2",
        "-c",
        "8",
        "-d",
        "1s",
        "-R",
        "500",
        "--latency",
        &url,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let o = text(&out.stdout);
    for l in common.iter().chain(&[
        "  Latency Distribution (HdrHistogram - Recorded Latency)",
        " 50.000%",
        "100.000%",
        "  Detailed Percentile spectrum:",
        "       Value   Percentile   TotalCount 1/(1-Percentile)",
        "#[Mean    =",
        "#[Buckets =",
    ]) {
        assert!(o.contains(l), "missing {l:?} in\n{o}");
    }
}

#[test]
fn wrong_flags_name_the_flag_and_exit_2() {
    let cases: [(&[&str], &str); 13] = [
        (&["ab", "-n", "abc", "http://127.0.0.1:9/"], "-n"),
        (&["ab", "-Z", "RC4", "http://127.0.0.1:9/"], "-Z"),
        (&["ab", "-n", "5", "-c", "10", "http://127.0.0.1:9/"], "-c"),
        (
            &["wrk", "-s", "/nonexistent/x.lua", "http://127.0.0.1:9/"],
            "-s/--script: cannot read /nonexistent/x.lua",
        ),
        (&["wrk", "-R", "fast", "http://127.0.0.1:9/"], "--rate"),
        (&["load", "-d", "10parsecs", "http://127.0.0.1:9/"], "unit"),
        (&["load", "ftp://127.0.0.1/", "-n", "1"], "scheme"),
        (
            &[
                "load",
                "--pipeline",
                "4294967296",
                "-n",
                "1",
                "http://127.0.0.1:9/",
            ],
            "requests in flight per connection",
        ),
        (
            &["load", "--rate", "1e10", "-d", "1s", "http://127.0.0.1:9/"],
            "beyond what one load generator can send",
        ),
        (
            &[
                "wrk",
                "-R",
                "1000000000000",
                "-d",
                "1s",
                "http://127.0.0.1:9/",
            ],
            "beyond what one load generator can send",
        ),
        (
            &[
                "load",
                "--inject",
                "atOnceUsers(100000000000000000000)",
                "http://127.0.0.1:9/",
            ],
            "at most 100000000",
        ),
        (
            &[
                "load",
                "--inject",
                "rampUsers(10) over (1 fortnight)",
                "http://127.0.0.1:9/",
            ],
            "unknown time unit \"fortnight\"",
        ),
        (
            &[
                "load",
                "--body-file",
                "/dev/zero",
                "-n",
                "1",
                "http://127.0.0.1:9/",
            ],
            "larger than 256 MiB",
        ),
    ];
    for (args, needle) in cases {
        let out = stampede(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn line_breaks_in_any_request_part_are_refused_in_every_dialect() {
    let url = "http://127.0.0.1:9/";
    let evil = "X-A: 1\r\nX-Injected: 1";
    let cases: [&[&str]; 10] = [
        &["load", "-H", evil, "-n", "1", url],
        &["load", "-m", "GET / HTTP/1.1\r\nX: y", "-n", "1", url],
        &["load", "-n", "1", "http://127.0.0.1:9/a\r\nX-Injected: 1"],
        &["ab", "-n", "1", "-H", evil, url],
        &["wrk", "-d", "1s", "-H", evil, url],
        &["h2load", "-n", "1", "-H", evil, url],
        &[
            "httperf",
            "--server",
            "127.0.0.1",
            "--port",
            "9",
            "--uri",
            "/a\r\nX: 1",
        ],
        &[
            "httperf",
            "--server",
            "127.0.0.1",
            "--port",
            "9",
            "--add-header",
            "X-A: 1\rX-B: 2",
        ],
        &[
            "httperf",
            "--server",
            "127.0.0.1",
            "--port",
            "9",
            "--method",
            "GET /x",
        ],
        &["wrk", "-d", "1s", "-H", "X-A: 1\nX-B: 2", url],
    ];
    for args in cases {
        // Refused before any connection: nothing listens on port 9, which would be exit 1.
        let out = stampede(args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("line break") || err.contains("not allowed in a method"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn an_unknown_host_could_not_run_and_a_closed_stderr_is_no_panic() {
    let out = stampede(&["load", "-n", "1", "http://no-such-host.invalid/"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("could not resolve"));
    // Standard error (and output) closed before stampede writes its error.
    let mut child = Command::new(env!("CARGO_BIN_EXE_stampede"))
        .args(["load", "-n", "1", "http://127.0.0.1:9/"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stderr.take());
    drop(child.stdout.take());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1), "{status:?}");
}

#[test]
fn unreachable_target_exits_1() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = stampede(&["load", &format!("http://127.0.0.1:{port}/"), "-n", "10"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("could not connect"),
        "{}",
        text(&out.stderr)
    );
}

/// An output path that cannot be written is refused before anything runs; one that
/// fails only when written (a full device) is named, and the summary and every other
/// output are still there.
#[test]
fn an_unwritable_output_is_refused_first_and_never_takes_the_others() {
    let srv = crate::common::srv();
    let dir = crate::common::recorder::tempdir::Dir::new();
    let html = dir.0.join("ok.html");
    let html = html.to_str().unwrap();
    let url = srv.url("/pong");
    let out = stampede(&[
        "load",
        &url,
        "-n",
        "50",
        "--json",
        "/proc/nope/x.json",
        "--html",
        html,
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("--json /proc/nope/x.json: cannot be written"),
        "{err}"
    );
    assert!(out.stdout.is_empty() && !std::path::Path::new(html).exists());
    for flag in ["--csv", "--hgrm", "--html"] {
        let out = stampede(&["load", &url, "-n", "5", flag, "/proc/nope/x"]);
        assert_eq!(out.status.code(), Some(2), "{flag}: {}", text(&out.stderr));
    }
    let csv = dir.0.join("s.csv");
    let csv = csv.to_str().unwrap();
    let out = stampede(&[
        "load",
        &url,
        "-n",
        "50",
        "--json",
        "/dev/full",
        "--html",
        html,
        "--csv",
        csv,
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("could not write /dev/full") && err.contains("other outputs were written"),
        "{err}"
    );
    assert!(
        text(&out.stdout).contains("50 completed"),
        "{}",
        text(&out.stdout)
    );
    assert!(std::fs::read_to_string(html).unwrap().contains("<html"));
    assert!(std::fs::metadata(csv).unwrap().len() > 0);
    // The check leaves nothing behind for a path it created.
    let fresh = dir.0.join("never.json");
    let out = stampede(&[
        "load",
        "http://127.0.0.1:1/",
        "-n",
        "1",
        "--json",
        fresh.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(!fresh.exists());
}

/// A timed run's last, partial second (the answers that came after its end) is no
/// second of the run: the progress lines and the CSV series stop at its duration.
#[test]
fn a_timed_run_shows_no_phantom_last_second() {
    let srv = crate::common::srv();
    let dir = crate::common::recorder::tempdir::Dir::new();
    let csv = dir.0.join("s.csv");
    let out = stampede(&[
        "load",
        &srv.url("/pong"),
        "-d",
        "2s",
        "-c",
        "2",
        "--csv",
        csv.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    let seconds: Vec<&str> = err.lines().filter(|l| l.starts_with("[")).collect();
    assert!(seconds.iter().all(|l| !l.starts_with("[   3s]")), "{err}");
    assert!(seconds.iter().any(|l| l.starts_with("[   2s]")), "{err}");
    assert!(
        seconds
            .iter()
            .all(|l| l.ends_with("max in flight") || l.contains("max in flight  ")),
        "{err}"
    );
    let series = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<&str> = series
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap())
        .collect();
    assert_eq!(rows, ["0", "1"], "{series}");
}

/// `--help` prints the help everywhere, every dialect and subcommand (Go's `-help`
/// too), exit 0; the top-level help lists every dialect.
#[test]
fn help_is_answered_by_every_dialect() {
    for args in [
        &["ab", "--help"][..],
        &["wrk", "--help"],
        &["hey", "--help"],
        &["hey", "-help"],
        &["oha", "--help"],
        &["h2load", "--help"],
        &["httperf", "--help"],
        &["ghz", "--help"],
        &["vegeta", "attack", "--help"],
        &["vegeta", "attack", "-help"],
        &["vegeta", "report", "--help"],
        &["vegeta", "encode", "--help"],
        &["vegeta", "plot", "--help"],
        &["vllm", "--help"],
        &["vllm", "bench", "--help"],
        &["vllm", "bench", "serve", "--help"],
    ] {
        let out = stampede(args);
        let o = text(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(o.contains("Usage: stampede"), "{args:?}: {o}");
    }
    // load's -h is a screenful of the common flags; --help has them all.
    let short = text(&stampede(&["load", "-h"]).stdout);
    assert!(short.lines().count() <= 60, "{short}");
    assert!(
        short.contains("--connections") && short.contains("--rate"),
        "{short}"
    );
    assert!(
        short.contains("stampede load --help shows them all"),
        "{short}"
    );
    assert!(!short.contains("--find-max"), "{short}");
    let long = text(&stampede(&["load", "--help"]).stdout);
    assert!(long.contains("--find-max") && long.lines().count() > 200);
    let top = text(&stampede(&["--help"]).stdout);
    for d in [
        "`ab`",
        "`wrk`",
        "`httperf`",
        "`h2load`",
        "`oha`",
        "`hey`",
        "`vegeta`",
        "`ghz`",
        "`vllm bench serve`",
    ] {
        assert!(top.contains(d), "{d} in {top}");
    }
}

/// A saturated open-model run: the arrivals never sent count in the corrected
/// latency as censored values (at least their wait to the run's end), said so in the
/// summary and the JSON, so the percentiles are not those of the few that went out.
#[test]
fn arrivals_never_sent_count_in_the_latency_as_censored() {
    let srv = crate::common::srv();
    let out = stampede(&[
        "load",
        &srv.url("/delay/200"),
        "-c",
        "1",
        "-t",
        "1",
        "--rate",
        "50",
        "-d",
        "1s",
        "--json",
        "-",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let open = &v["open"];
    let never = open["never_sent"].as_u64().unwrap();
    assert!(never >= 20, "{open}");
    assert_eq!(open["censored"].as_u64(), Some(never), "{open}");
    let completed = v["requests"]["completed"].as_u64().unwrap();
    assert_eq!(v["latency"]["count"].as_u64(), Some(completed + never));
    // Half the run's arrivals waited most of it: the median is no 200 ms answer.
    let p50 = v["latency"]["percentiles"]
        .as_array()
        .and_then(|a| a.iter().find(|p| p["p"] == 50.0))
        .and_then(|p| p["us"].as_u64())
        .unwrap_or_else(|| panic!("{}", v["latency"]));
    assert!(p50 > 300_000, "{}", v["latency"]);
}

/// More connections becoming ready at once than one wait's buffer holds (3,000
/// connects on one thread): each is taken by a later wait, none left to time out.
/// On io_uring the epoll instance's leftover events once waited for a wake-up that
/// never came, and every connection past the first 1,024 timed out.
#[test]
fn thousands_of_connects_at_once_all_complete() {
    let srv = crate::common::srv();
    let out = stampede(&[
        "load",
        &srv.url("/pong"),
        "-c",
        "3000",
        "-n",
        "3000",
        "-t",
        "1",
        "--no-keepalive",
        "--timeout",
        "5s",
        "--json",
        "-",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["requests"]["completed"], 3000,
        "{} {}",
        v["requests"], v["errors"]
    );
    assert_eq!(v["requests"]["failed"], 0, "{}", v["errors"]);
}

#[test]
fn load_summary_and_pipelining() {
    let srv = crate::common::srv();
    let out = stampede(&[
        "load",
        &srv.url("/pong"),
        "-n",
        "2000",
        "-c",
        "4",
        "--pipeline",
        "8",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let o = text(&out.stdout);
    assert!(o.contains("2,000 completed"), "{o}");
    assert!(o.contains("200 × 2,000"), "{o}");
    assert!(o.contains("errors      none"), "{o}");
}

#[test]
fn wrk_fixed_rate_prints_both_distributions() {
    let srv = crate::common::srv();
    let out = stampede(&[
        "wrk",
        "-t",
        "2",
        "-c",
        "8",
        "-d",
        "1s",
        "-R",
        "2000",
        "-U",
        &srv.url("/pong"),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let o = text(&out.stdout);
    assert!(o.contains("(HdrHistogram - Recorded Latency)"), "{o}");
    assert!(o.contains("(HdrHistogram - Uncorrected Latency (measured without taking delayed starts into account))"), "{o}");
    let rps: f64 = line_value(&o, "Requests/sec:").parse().unwrap();
    assert!((1900.0..=2010.0).contains(&rps), "{rps}");
}

#[test]
fn load_rate_json_reports_the_schedule() {
    let srv = crate::common::srv();
    let out = stampede(&[
        "load",
        &srv.url("/pong"),
        "--rate",
        "500",
        "-d",
        "1s",
        "-c",
        "4",
        "--json",
        "-",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["open"]["target_rate"], 500.0);
    let sent =
        v["requests"]["started"].as_u64().unwrap() + v["open"]["never_sent"].as_u64().unwrap();
    assert_eq!(sent, 500);
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../../schema/run-result.v1.json")).unwrap();
    assert!(jsonschema::validator_for(&schema).unwrap().is_valid(&v));
}

#[test]
fn rate_steps_change_the_rate_over_the_pool() {
    let srv = crate::common::srv();
    let out = stampede(&[
        "load",
        &srv.url("/pong"),
        "--rate-steps",
        "constantUsersPerSec(100) during(1s)",
        "--rate-steps",
        "constantUsersPerSec(400) during(1s)",
        "-c",
        "4",
        "--json",
        "-",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // Every arrival a request on the pool of four; the run ends with the steps.
    let sent =
        v["requests"]["started"].as_u64().unwrap() + v["open"]["never_sent"].as_u64().unwrap();
    assert_eq!(sent, 500, "{}", v["requests"]);
    assert!(v["connections_opened"].as_u64().unwrap() <= 4);
    let second = |t: usize| v["intervals"][t]["completed"].as_u64().unwrap_or(0);
    assert!(second(0).abs_diff(100) <= 10, "{}", v["intervals"]);
    assert!(second(1).abs_diff(400) <= 40, "{}", v["intervals"]);
    assert!(
        v["settings"]["shape"]
            .as_str()
            .unwrap()
            .starts_with("paced constantUsersPerSec(100)"),
        "{}",
        v["settings"]["shape"]
    );
    // Steps of concurrent users are --inject's.
    let out = stampede(&[
        "load",
        &srv.url("/pong"),
        "--rate-steps",
        "constantConcurrentUsers(5) during(1s)",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--inject"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_fixed_rate_times_each_response_by_its_arrival_however_early_it_was_sent() {
    // Answers take 20 ms. With or without sending ahead, and with naps between starts
    // (responses read late, by their arrival stamps), none may time under 20 ms, and
    // none much over: on epoll, and on io_uring (whose receives carry the stamps).
    // At 2,000 a second the starts are under the nap's limit apart: the loop naps
    // between every two.
    let srv = crate::common::srv();
    let mut cases = vec![
        ("epoll", "0", 200, "16"),
        ("epoll", "200us", 200, "16"),
        ("epoll", "10ms", 200, "16"),
        ("epoll", "0", 2_000, "100"),
    ];
    if stampede_ring::probe().is_ok() {
        cases.extend([
            ("io_uring", "0", 200, "16"),
            ("io_uring", "0", 2_000, "100"),
        ]);
    }
    for (io, horizon, rate, conns) in cases {
        let out = stampede(&[
            "load",
            "--io",
            io,
            &srv.url("/delay/20"),
            "--rate",
            &rate.to_string(),
            "-d",
            "1s",
            "-c",
            conns,
            "--send-horizon",
            horizon,
            "--json",
            "-",
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let pct = |p: f64| {
            v["latency"]["percentiles"]
                .as_array()
                .unwrap()
                .iter()
                .find(|x| x["p"] == p)
                .unwrap()["us"]
                .as_u64()
                .unwrap()
        };
        let min = v["latency"]["min_us"].as_u64().unwrap();
        assert!(min >= 20_000, "{io} {horizon}: min {min} µs");
        assert!(pct(50.0) < 30_000, "{io} {horizon}: p50 {} µs", pct(50.0));
        let sent =
            v["requests"]["started"].as_u64().unwrap() + v["open"]["never_sent"].as_u64().unwrap();
        assert_eq!(sent, rate, "{io} {horizon}");
        assert_eq!(v["requests"]["failed"], 0, "{io} {horizon}");
        assert_eq!(v["origin"]["io"], io);
    }
    let out = stampede(&[
        "load",
        &srv.url("/pong"),
        "--rate",
        "10",
        "-d",
        "1s",
        "--send-horizon",
        "11ms",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let e = text(&out.stderr);
    assert!(e.contains("send-horizon") && e.contains("10ms"), "{e}");
}

#[test]
fn gatling_injection_and_report() {
    let srv = crate::common::srv();
    let out = stampede(&[
        "load",
        &srv.url("/chat"),
        "--inject",
        "atOnceUsers(10)",
        "--inject",
        "rampUsers(20) over (1 seconds)",
        "--calls",
        "2",
        "--format",
        "gatling",
        "-q",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let o = text(&out.stdout);
    assert!(
        o.contains(
            "> request count                                         60 (OK=60     KO=0     )"
        ),
        "{o}"
    );
    assert!(o.contains("---- Response Time Distribution ----"), "{o}");
    assert!(
        o.contains("> failed                                                 0 (  0%)"),
        "{o}"
    );
    let bad = stampede(&["load", &srv.url("/"), "--inject", "rampUsers(10)"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        text(&bad.stderr).contains("needs .during(duration)"),
        "{}",
        text(&bad.stderr)
    );
}

#[test]
fn httperf_report_matches_httperf_counts() {
    let srv = crate::common::srv();
    let args = [
        "--server",
        "127.0.0.1",
        "--port",
        &srv.addr().port().to_string(),
        "--uri",
        "/pong",
        "--num-conns",
        "20",
        "--num-calls",
        "10",
        "--burst-length",
        "5",
        "--rate",
        "50",
    ]
    .map(String::from);
    let mut ours = vec!["httperf".to_string(), "--hog".into()];
    ours.extend(args.iter().cloned());
    let out = stampede(&ours.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let o = text(&out.stdout);
    assert!(
        o.contains("Total: connections 20 requests 200 replies 200 test-duration"),
        "{o}"
    );
    for key in [
        "Connection rate:",
        "Connection time [ms]: connect",
        "Reply rate [replies/s]:",
        "CPU time [s]:",
        "Net I/O:",
    ] {
        assert!(o.contains(key), "missing {key} in\n{o}");
    }
    assert_eq!(
        line_value(&o, "Reply status:"),
        "1xx=0 2xx=200 3xx=0 4xx=0 5xx=0"
    );
    assert_eq!(
        line_value(&o, "Errors: total"),
        "0 client-timo 0 socket-timo 0 connrefused 0 connreset 0"
    );
    match Command::new("httperf").arg("--hog").args(&args).output() {
        Ok(h) => {
            let h = text(&h.stdout);
            for key in [
                "Request size [B]:",
                "Reply size [B]:",
                "Reply status:",
                "Connection length [replies/conn]:",
            ] {
                assert_eq!(line_value(&h, key), line_value(&o, key), "{key}");
            }
            assert_eq!(
                line_value(&h, "Total:").split(" test-duration").next(),
                line_value(&o, "Total:").split(" test-duration").next()
            );
        }
        Err(_) => crate::common::missing_peer("httperf (`apt-get install httperf`)"),
    }
}

#[test]
fn httperf_counts_fd_unavailable_and_says_how_the_run_goes() {
    let srv = crate::common::srv();
    // 40 descriptors, with each connection held 500 ms: most sessions find none.
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -n 40; exec {} httperf --server 127.0.0.1 --port {} --uri /delay/500 --num-conns 150 --rate 100 --timeout 5",
            env!("CARGO_BIN_EXE_stampede"),
            srv.addr().port()
        ))
        .output()
        .unwrap();
    let (o, e) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{e}");
    let fd: u64 = line_value(&o, "Errors: fd-unavail")
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let conns: u64 = line_value(&o, "Total: connections")
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(fd > 0, "{o}");
    assert_eq!(
        conns + fd,
        150,
        "connections opened plus those without a descriptor\n{o}"
    );
    assert!(e.contains("stampede httperf: 150 connections"), "{e}");
    assert!(e.contains("[   1s] "), "a line a second on stderr: {e}");
    assert!(!o.contains("[   1s]"), "stdout is the report alone: {o}");
}

#[test]
fn httperf_sessions_with_think_time() {
    let srv = crate::common::srv();
    let port = srv.addr().port().to_string();
    let out = stampede(&[
        "httperf",
        "--server",
        "127.0.0.1",
        "--port",
        &port,
        "--uri",
        "/pong",
        "--wsess",
        "6,4,0.05",
        "--burst-length",
        "2",
        "--rate",
        "20",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let o = text(&out.stdout);
    assert!(
        o.contains("Total: connections 6 requests 24 replies 24"),
        "{o}"
    );
    assert!(o.contains("Session rate [sess/s]:"), "{o}");
    assert!(o.contains("(6 completed, 0 failed, 6 total)"), "{o}");
    let bad = stampede(&[
        "httperf",
        "--server",
        "127.0.0.1",
        "--port",
        &port,
        "--wsess",
        "6,4",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        text(&bad.stderr).contains("--wsess"),
        "{}",
        text(&bad.stderr)
    );
}

#[test]
fn hdr_files_csv_and_assertions_with_junit() {
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use hdrhistogram::serialization::Deserializer;
    let srv = crate::common::srv();
    let dir = std::env::temp_dir().join(format!("stampede-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = |n: &str| dir.join(n).to_str().unwrap().to_string();
    let out = stampede(&[
        "load",
        &srv.url("/pong"),
        "--rate",
        "2000",
        // Not a whole or half second: the last second (1 s to 1.8 s, and the answers
        // of the 0.2 s after) is a second of the run's, never a sliver that the
        // CSV leaves out, so the rows add up to every completion.
        "-d",
        "1800ms",
        "-c",
        "4",
        "-t",
        "1",
        "-q",
        "--json",
        &f("r.json"),
        "--hgrm",
        &f("r.hgrm"),
        "--hlog",
        &f("r.hlog"),
        "--csv",
        &f("r.csv"),
        "--assert",
        "p99 < 10s",
        "--assert",
        "errors < 0.1%",
        "--assert",
        "rps > 1M",
        "--junit",
        &f("junit.xml"),
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("PASS p99 < 10s") && err.contains("FAIL rps > 1M"),
        "{err}"
    );
    assert!(err.contains("1 of 3 assertions failed"), "{err}");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(f("r.json")).unwrap()).unwrap();
    let completed = r["requests"]["completed"].as_u64().unwrap();
    assert!(completed > 2500);

    let junit = std::fs::read_to_string(f("junit.xml")).unwrap();
    assert!(junit.contains("tests=\"3\" failures=\"1\""), "{junit}");
    assert!(
        junit.contains("<failure message=\"rps &gt; 1M: measured"),
        "{junit}"
    );

    // The interval log reads back with HdrHistogram's own parser; each tag's counts add
    // up to the completed requests.
    let log = std::fs::read(f("r.hlog")).unwrap();
    assert!(log.starts_with(b"#[Histogram log format version 1.3]\n"));
    let mut counts = std::collections::BTreeMap::new();
    let mut de = Deserializer::new();
    for e in IntervalLogIterator::new(&log) {
        if let LogEntry::Interval(h) = e.unwrap() {
            use base64::Engine as _;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(h.encoded_histogram())
                .unwrap();
            let hist: hdrhistogram::Histogram<u64> = de.deserialize(&mut &bytes[..]).unwrap();
            *counts
                .entry(h.tag().unwrap().as_str().to_string())
                .or_insert(0) += hist.len();
            assert!(h.duration().as_secs_f64() <= 1.0);
        }
    }
    assert_eq!(counts.get("corrected"), Some(&completed), "{counts:?}");
    assert_eq!(counts.get("uncorrected"), Some(&completed), "{counts:?}");

    let hgrm = std::fs::read_to_string(f("r.hgrm")).unwrap();
    assert!(
        hgrm.contains("1/(1-Percentile)")
            && hgrm.contains(&format!("Total count    = {completed:>12}")),
        "{hgrm}"
    );
    let csv = std::fs::read_to_string(f("r.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert!(rows[0].starts_with("second,completed,failed"));
    let sum: u64 = rows[1..]
        .iter()
        .map(|l| l.split(',').nth(1).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(sum, completed);

    let bad = stampede(&["load", &srv.url("/pong"), "-n", "1", "--assert", "p99 < 5"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("--assert: \"p99 < 5\": \"5\" needs a unit"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn h2load_dialect_prints_h2loads_layout() {
    let srv = crate::common::srv();
    let out = stampede(&[
        "h2load",
        "--h1",
        "-n",
        "1000",
        "-c",
        "4",
        "-m",
        "2",
        "-t",
        "2",
        &srv.url("/pong"),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let o = text(&out.stdout);
    for line in [
        "starting benchmark...",
        "spawning thread #0: 2 total client(s). 500 total requests",
        "spawning thread #1: 2 total client(s). 500 total requests",
        "Application protocol: http/1.1",
        "progress: 100% done",
        "requests: 1000 total, 1000 started, 1000 done, 1000 succeeded, 0 failed, 0 errored, 0 timeout",
        "status codes: 1000 2xx, 0 3xx, 0 4xx, 0 5xx",
        "(space savings 0.00%), 3.91KB (4000) data",
        "                     min         max         mean         sd        +/- sd",
    ] {
        assert!(o.contains(line), "{line:?} in\n{o}");
    }
    assert_eq!(o.matches("progress: ").count(), 10, "{o}");
    for row in [
        "time for request:",
        "time for connect:",
        "time to 1st byte:",
        "req/s           :",
    ] {
        assert!(
            o.lines().any(|l| l.starts_with(row) && l.ends_with('%')),
            "{row}\n{o}"
        );
    }
    let bad = stampede(&["h2load", "-c", "1", "-t", "2", &srv.url("/pong")]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("-c, --clients"));
}

#[test]
fn load_prints_a_plain_line_per_second_when_stderr_is_not_a_terminal() {
    let srv = crate::common::srv();
    let url = srv.url("/pong");
    let args = ["load", url.as_str(), "-d", "2300ms", "-c", "2", "-t", "1"];
    let out = stampede(&args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("[   ")).collect();
    assert!(lines.len() >= 2, "{err}");
    for (i, l) in lines.iter().enumerate() {
        assert!(l.starts_with(&format!("[   {}s] ", i + 1)), "{l}");
        for part in [" req/s  p50 ", "  p99 ", "  errors 0 (0 total)  2 conns"] {
            assert!(l.contains(part), "{part:?} in {l}");
        }
    }
    let quiet = stampede(&[&args[..], &["-q"]].concat());
    assert!(!text(&quiet.stderr).contains("req/s  p50"));
}

#[test]
fn a_fixed_rate_prints_each_second_once_and_the_last_one_too() {
    let srv = crate::common::srv();
    let url = srv.url("/pong");
    for d in ["1s", "3s"] {
        let out = stampede(&[
            "load", &url, "--rate", "400", "-t", "1", "-d", d, "--json", "-",
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let err = text(&out.stderr);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        // Every second the JSON has, printed once, in order, with its count.
        let lines: Vec<(u64, u64)> = err
            .lines()
            .filter_map(|l| l.strip_prefix('['))
            .map(|l| {
                let (t, rest) = l.split_once("s] ").unwrap();
                let n = rest.split(" req/s").next().unwrap().replace(',', "");
                (t.trim().parse().unwrap(), n.parse().unwrap())
            })
            .collect();
        let json: Vec<(u64, u64)> = v["intervals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                (
                    i["t"].as_u64().unwrap() + 1,
                    i["completed"].as_u64().unwrap(),
                )
            })
            .collect();
        assert!(!lines.is_empty(), "{d}: no line:\n{err}");
        assert_eq!(lines, json, "{d}:\n{err}");
        let total: u64 = lines.iter().map(|l| l.1).sum();
        assert_eq!(total, v["requests"]["completed"].as_u64().unwrap(), "{err}");
    }
}

#[test]
fn an_interrupted_run_is_marked_partial_and_exits_130() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let srv = crate::common::srv();
    let url = srv.url("/pong");
    let dir = std::env::temp_dir().join(format!("stampede-int-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("r.json");
    let runs: [(&[&str], &str); 2] = [
        (
            &[
                "load",
                &url,
                "-d",
                "30s",
                "-c",
                "2",
                "-t",
                "1",
                "--json",
                json.to_str().unwrap(),
            ],
            "INT",
        ),
        (&["ab", "-c", "2", "-t", "30", &url], "TERM"),
    ];
    for (args, signal) in runs {
        let mut child = Command::new(env!("CARGO_BIN_EXE_stampede"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Ready once the run is under way: load prints its first second, ab its
        // "Benchmarking" line.
        let deadline = Instant::now() + Duration::from_secs(20);
        let (mut out, mut err) = (
            BufReader::new(child.stdout.take().unwrap()),
            BufReader::new(child.stderr.take().unwrap()),
        );
        let (ready, first): (&mut dyn BufRead, _) = match args[0] {
            "load" => (&mut err, "[   1s]"),
            _ => (&mut out, "(be patient)"),
        };
        // Up to the marker, which need not end a line (ab's does not).
        let mut seen = Vec::new();
        while !String::from_utf8_lossy(&seen).contains(first) {
            let chunk = ready.fill_buf().unwrap();
            assert!(!chunk.is_empty(), "ended before {first:?}");
            seen.extend_from_slice(chunk);
            let n = chunk.len();
            ready.consume(n);
            assert!(Instant::now() < deadline);
        }
        let rest = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::io::Read::read_to_string(&mut out, &mut s);
            let _ = std::io::copy(&mut err, &mut std::io::sink());
            s
        });
        let killed = Command::new("kill")
            .args([&format!("-{signal}"), &child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let status = child.wait().unwrap();
        let stdout = rest.join().unwrap();
        assert_eq!(status.code(), Some(130), "{args:?}: {stdout}");
        if args[0] == "load" {
            let v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
            assert_eq!(v["interrupted"], true);
            assert!(v["duration_s"].as_f64().unwrap() < 25.0);
            assert!(stdout.contains("! INTERRUPTED after "), "{stdout}");
            assert!(
                stdout.contains(" of 30s: the figures below cover only"),
                "{stdout}"
            );
        } else {
            assert!(
                stdout.contains("Requests per second:"),
                "the partial report: {stdout}"
            );
        }
    }
    // A run that ends by itself says nothing of the kind.
    let whole = stampede(&["load", &url, "-n", "50", "--json", "-"]);
    assert_eq!(whole.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&whole.stdout).unwrap();
    assert!(v.get("interrupted").is_none());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_server_accepts_again_after_running_out_of_descriptors() {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::time::Duration;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -n 40; exec {} serve --listen 127.0.0.1:{port} --threads 1 --no-http2",
            env!("CARGO_BIN_EXE_stampede")
        ))
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    crate::common::listening(&mut server);
    // More connections than the server has descriptors: the rest wait in its backlog.
    let held: Vec<TcpStream> = (0..60)
        .map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap())
        .collect();
    let mut queued: Vec<TcpStream> = (0..3)
        .map(|_| {
            let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
            s.write_all(b"GET /pong HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .unwrap();
            s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
            s
        })
        .collect();
    // The server has taken connections up to its limit of 40 descriptors.
    let fds = format!("/proc/{}/fd", server.id());
    crate::common::eventually(
        "the server runs out of descriptors",
        Duration::from_secs(5),
        || (std::fs::read_dir(&fds).map_or(0, |d| d.count()) >= 36).then_some(()),
    );
    drop(held);
    let answers: Vec<String> = queued
        .iter_mut()
        .map(|s| {
            let mut got = Vec::new();
            let _ = s.read_to_end(&mut got);
            String::from_utf8_lossy(&got).into_owned()
        })
        .collect();
    let _ = server.kill();
    let _ = server.wait();
    for a in &answers {
        assert!(a.starts_with("HTTP/1.1 200 OK"), "{answers:?}");
    }
}

/// h2load's flow-control and table flags shape each connection (small windows make
/// the server wait for WINDOW_UPDATEs, yet every byte arrives), and `--log-file` keeps
/// a line per request: start, status (-1 for a failure) and time to its end.
#[test]
fn h2load_windows_tables_and_log_file() {
    let srv = crate::common::srv();
    let dir = std::env::temp_dir().join(format!("stampede-h2log-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("log.tsv");
    let log_s = log.to_string_lossy().into_owned();
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64;
    let out = stampede(&[
        "h2load",
        "-n",
        "60",
        "-c",
        "2",
        "-m",
        "4",
        "-w",
        "12",
        "-W",
        "14",
        "-f",
        "32K",
        "--header-table-size",
        "8K",
        "--encoder-header-table-size",
        "0",
        "--log-file",
        &log_s,
        &srv.url("/bytes/100000"),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let o = text(&out.stdout);
    assert!(
        o.contains("requests: 60 total, 60 started, 60 done, 60 succeeded"),
        "{o}"
    );
    assert!(o.contains("(6000000) data"), "{o}");
    let lines = std::fs::read_to_string(&log).unwrap();
    assert_eq!(lines.lines().count(), 60, "{lines}");
    let mut last_end = 0;
    for l in lines.lines() {
        let f: Vec<u64> = l.split('\t').map(|v| v.parse().unwrap()).collect();
        assert_eq!((f.len(), f[1]), (3, 200), "{l}");
        assert!(f[0] >= before && f[2] < 60_000_000, "{l}");
        assert!(
            f[0] + f[2] >= last_end,
            "rows in the order requests ended: {l}"
        );
        last_end = f[0] + f[2];
    }
    // Requests left unanswered past -N fail, logged with status -1.
    let out = stampede(&[
        "h2load",
        "-n",
        "8",
        "-c",
        "1",
        "-m",
        "8",
        "-N",
        "300ms",
        "--log-file",
        &log_s,
        &srv.url("/pong"),
        &srv.url("/delay/5000"),
    ]);
    let o = text(&out.stdout);
    assert!(
        o.contains("requests: 8 total, 8 started, 8 done, 4 succeeded, 4 failed"),
        "{o}"
    );
    let lines = std::fs::read_to_string(&log).unwrap();
    let statuses: Vec<&str> = lines
        .lines()
        .map(|l| l.split('\t').nth(1).unwrap())
        .collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == "200").count(),
        4,
        "{lines}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == "-1").count(),
        4,
        "{lines}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// ab's `-v`: from 2 a warning for each reply other than 2xx, from 3 each 2xx code,
/// at 4 each reply's head (and body's first bytes) too; the report is unchanged.
#[test]
fn ab_verbosity_prints_codes_and_heads_as_they_arrive() {
    let srv = crate::common::srv();
    let count = |o: &str, what: &str| o.matches(what).count();
    let out = stampede(&[
        "ab",
        "-v",
        "4",
        "-n",
        "3",
        "-c",
        "1",
        &srv.url("/status/404"),
    ]);
    let o = text(&out.stdout);
    assert_eq!(
        count(&o, "LOG: header received:\nHTTP/1.1 404 Not Found\r\n"),
        3,
        "{o}"
    );
    assert_eq!(
        count(&o, "WARNING: Response code not 2xx (404)\n"),
        3,
        "{o}"
    );
    assert!(o.contains("Non-2xx responses:      3"), "{o}");
    assert!(
        o.contains("INFO: GET header == \n---\nGET /status/404 HTTP/1.0\r\n"),
        "{o}"
    );
    let out = stampede(&["ab", "-v", "3", "-n", "2", "-k", &srv.url("/pong")]);
    let o = text(&out.stdout);
    assert_eq!(count(&o, "LOG: Response code = 200\n"), 2, "{o}");
    assert_eq!(count(&o, "header received"), 0, "{o}");
    let out = stampede(&["ab", "-v", "2", "-n", "2", &srv.url("/pong")]);
    let o = text(&out.stdout);
    assert_eq!(count(&o, "LOG: "), 0, "{o}");
    assert!(o.contains("Complete requests:      2"), "{o}");
}

/// h2load's `-T`: once a client has sent its last request, what it still waits for
/// fails that long after, and the run ends then rather than when the server answers.
#[test]
fn h2load_active_timeout_fails_what_is_left_after_the_last_request() {
    let srv = crate::common::srv();
    let started = std::time::Instant::now();
    let out = stampede(&[
        "h2load",
        "-n",
        "8",
        "-c",
        "1",
        "-m",
        "8",
        "-T",
        "300ms",
        &srv.url("/pong"),
        &srv.url("/delay/5000"),
    ]);
    let took = started.elapsed();
    let o = text(&out.stdout);
    assert!(
        o.contains("requests: 8 total, 8 started, 8 done, 4 succeeded, 4 failed"),
        "{o}"
    );
    assert!(o.contains("4 timeout"), "{o}");
    assert!(took < std::time::Duration::from_secs(4), "{took:?}");
    // Without -T the client waits for the slow answers.
    let started = std::time::Instant::now();
    let out = stampede(&[
        "h2load",
        "-n",
        "2",
        "-c",
        "1",
        "-m",
        "2",
        &srv.url("/pong"),
        &srv.url("/delay/600"),
    ]);
    let o = text(&out.stdout);
    assert!(o.contains("2 succeeded, 0 failed"), "{o}");
    assert!(started.elapsed() >= std::time::Duration::from_millis(600));
}

/// h2load's `--timing-script-file`: every client sends the script's requests in
/// order at their offsets from its start, never early, whether or not the ones before
/// are answered; `-n` takes the first lines of it.
#[test]
fn h2load_timing_script_sends_each_clients_requests_at_their_offsets() {
    use crate::common::recorder::{tempdir, Recorder};
    let rec = Recorder::start();
    let dir = tempdir::Dir::new();
    let script = dir.0.join("timing.txt");
    std::fs::write(
        &script,
        format!("0\t{}\n150.5\t/b\n\n300\t/c?x=1\n", rec.url("/a")),
    )
    .unwrap();
    let script = script.to_string_lossy().into_owned();
    let out = stampede(&[
        "h2load",
        "--h1",
        "-c",
        "2",
        "-m",
        "1",
        "--timing-script-file",
        &script,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let o = text(&out.stdout);
    assert!(
        o.contains("requests: 6 total, 6 started, 6 done, 6 succeeded"),
        "{o}"
    );
    let seen = rec.seen();
    let mut conns: Vec<usize> = seen.iter().map(|s| s.conn).collect();
    conns.sort();
    conns.dedup();
    assert_eq!(conns.len(), 2, "a connection per client: {seen:?}");
    for c in conns {
        let mine: Vec<_> = seen.iter().filter(|s| s.conn == c).collect();
        let paths: Vec<&str> = mine.iter().map(|s| s.path.as_str()).collect();
        assert_eq!(paths, ["/a", "/b", "/c?x=1"]);
        // Offsets count from the client's start: never early, late only by the
        // machine's scheduling. The first request goes out once connected, and the
        // server notes it after its accept loop (which naps 2 ms when idle) and a new
        // thread, so on a busy machine the first gap may look shorter by that much
        // (40 ms once, with a build running beside the tests).
        for (w, (want, slack)) in mine.windows(2).zip([(150.5, 60.0), (149.5, 5.0)]) {
            let gap = (w[1].at - w[0].at).as_secs_f64() * 1e3;
            assert!(
                gap > want - slack && gap < want + 250.0,
                "{gap} ms: {paths:?}"
            );
        }
    }
    // -n takes the first lines; more than the script has is clamped, with a note.
    let out = stampede(&["h2load", "--h1", "-n", "2", "--timing-script-file", &script]);
    assert!(text(&out.stdout).contains("requests: 2 total, 2 started, 2 done"));
    let out = stampede(&["h2load", "--h1", "-n", "9", "--timing-script-file", &script]);
    assert!(text(&out.stdout).contains("requests: 3 total, 3 started, 3 done"));
    assert!(text(&out.stderr).contains("-n 9 is more than the timing script's 3 lines"));
    // A malformed line is named, and nothing runs.
    std::fs::write(dir.0.join("bad.txt"), "0\t/a\n20 /b\n").unwrap();
    let bad = dir.0.join("bad.txt").to_string_lossy().into_owned();
    let out = stampede(&["h2load", "--timing-script-file", &bad]);
    assert_eq!(out.status.code(), Some(2));
    let e = text(&out.stderr);
    assert!(
        e.contains("--timing-script-file") && e.contains("line 2: no tab"),
        "{e}"
    );
}

/// Over HTTP/2 a scripted request goes out at its offset while an earlier one is
/// unanswered; with one stream allowed it waits, and its time counts from its offset.
#[test]
fn h2load_timing_script_does_not_wait_for_answers_but_counts_the_wait_for_room() {
    let srv = crate::common::srv();
    let dir = crate::common::recorder::tempdir::Dir::new();
    let script = dir.0.join("timing.txt");
    std::fs::write(
        &script,
        format!("0\t{}\n100\t/pong\n", srv.url("/delay/500")),
    )
    .unwrap();
    let log = dir.0.join("log.txt");
    let (script, log_s) = (
        script.to_string_lossy().into_owned(),
        log.to_string_lossy().into_owned(),
    );
    // The log's rows: start (µs since the epoch) and µs to the end, by status.
    let rows = |m: &str| -> Vec<(u64, u64)> {
        let out = stampede(&[
            "h2load",
            "-m",
            m,
            "--log-file",
            &log_s,
            "--timing-script-file",
            &script,
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let o = text(&out.stdout);
        assert!(o.contains("2 succeeded, 0 failed"), "{o}");
        let lines = std::fs::read_to_string(&log).unwrap();
        let mut rows: Vec<(u64, u64)> = (lines.lines())
            .map(|l| {
                let f: Vec<u64> = l.split('\t').map(|v| v.parse().unwrap()).collect();
                (f[0], f[2])
            })
            .collect();
        rows.sort();
        assert_eq!(rows.len(), 2, "{lines}");
        rows
    };
    // Two streams: /pong starts 100 ms after /delay/500 and is answered at once,
    // long before the delayed one.
    let r = rows("2");
    let offset = r[1].0 - r[0].0;
    assert!((99_000..300_000).contains(&offset), "{r:?}");
    assert!(r[1].1 < 200_000 && r[0].1 >= 500_000, "{r:?}");
    assert!(r[0].0 + r[0].1 > r[1].0 + r[1].1, "{r:?}");
    // One stream: /pong waits for /delay/500's, and its time counts the wait from
    // its offset.
    let r = rows("1");
    let offset = r[1].0 - r[0].0;
    assert!((99_000..300_000).contains(&offset), "{r:?}");
    assert!(r[1].1 >= 390_000, "{r:?}");
}

/// wrk2's `-B`: with pipelining, one latency sample per batch (its last response);
/// every response is still counted.
#[test]
fn wrk_batch_latency_times_each_pipelined_batch_once() {
    let srv = crate::common::srv();
    let url = srv.url("/pong");
    let run = |batch: bool| {
        let mut args = vec!["wrk", "-t1", "-c2", "-d", "400ms", "--pipeline", "4"];
        if batch {
            args.push("-B");
        }
        args.extend(["--json", "-", url.as_str()]);
        let out = stampede(&args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (
            v["requests"]["completed"].as_u64().unwrap(),
            v["latency"]["count"].as_u64().unwrap(),
        )
    };
    let (completed, samples) = run(false);
    assert!(
        completed > 100 && samples == completed,
        "{completed} {samples}"
    );
    let (completed, samples) = run(true);
    // Batches cut short by the run's end may have answered some of their four.
    assert!(samples > 25, "{completed} {samples}");
    assert!(
        samples * 4 <= completed && completed <= samples * 4 + 2 * 3,
        "{completed} responses, {samples} samples"
    );
}

#[test]
fn ab_refuses_a_url_without_its_scheme_and_puts_an_error_on_its_own_line() {
    let bare = stampede(&["ab", "-n", "1", "127.0.0.1:9/x"]);
    assert_eq!(bare.status.code(), Some(2));
    let e = text(&bare.stderr);
    assert!(
        e.contains("invalid URL") && e.contains("http://127.0.0.1:9/x"),
        "{e}"
    );
    // A port nothing listens on: the failure is not glued to "(be patient)...".
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let refused = stampede(&["ab", "-n", "1", &format!("http://127.0.0.1:{port}/")]);
    assert_eq!(refused.status.code(), Some(1));
    let o = text(&refused.stdout);
    assert!(o.ends_with("(be patient)...\n"), "{o:?}");
}

#[test]
fn merge_of_an_hour_long_result_keeps_its_memory_to_the_size_of_what_it_writes() {
    let srv = crate::common::srv();
    let one = stampede(&[
        "load",
        &srv.url("/pong"),
        "-n",
        "200",
        "-c",
        "2",
        "--json",
        "-",
    ]);
    assert!(one.status.success(), "{}", text(&one.stderr));
    let mut v: serde_json::Value = serde_json::from_slice(&one.stdout).unwrap();
    // An hour of seconds, each holding the run's first second.
    let first = v["intervals"][0].clone();
    v["intervals"] = (0..3600)
        .map(|t| {
            let mut i = first.clone();
            i["t"] = t.into();
            i
        })
        .collect();
    let dir = std::env::temp_dir().join(format!("stampede-mm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (a, out) = (dir.join("a.json"), dir.join("m.json"));
    std::fs::write(&a, v.to_string()).unwrap();
    // Each second's histograms held whole would take 3600 × 2 × 190 KiB = 1.3 GB; the
    // address space is held to 700 MB.
    let run = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v 700000 && exec {} merge --force {a} {a} --json {out}",
            env!("CARGO_BIN_EXE_stampede"),
            a = a.display(),
            out = out.display()
        ))
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", text(&run.stderr));
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let ivs = m["intervals"].as_array().unwrap();
    assert_eq!(ivs.len(), 3600);
    assert_eq!(
        ivs[3599]["completed"],
        first["completed"].as_u64().unwrap() * 2
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_file_input_stops_at_its_ceiling_and_names_the_file() {
    let cases: [&[&str]; 8] = [
        &["load", "--targets", "/dev/zero", "-n", "1"],
        &["load", "--spec", "/dev/zero"],
        &[
            "load",
            "http://127.0.0.1:9/",
            "-m",
            "POST",
            "--body-lines",
            "/dev/zero",
        ],
        &["wrk", "-s", "/dev/zero", "http://127.0.0.1:9/"],
        &["h2load", "-i", "/dev/zero"],
        &[
            "httperf",
            "--server",
            "127.0.0.1",
            "--port",
            "9",
            "--wlog=y,/dev/zero",
        ],
        &["bench", "/dev/zero", "--check"],
        &["merge", "/dev/zero"],
    ];
    for args in cases {
        let out = stampede(args);
        let e = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {e}");
        assert!(
            e.contains("/dev/zero is larger than") && e.contains("the most stampede reads"),
            "{args:?}: {e}"
        );
    }
}

#[test]
fn a_saved_spec_with_a_time_past_any_clock_is_refused_not_a_panic() {
    let dir = std::env::temp_dir().join(format!("stampede-spec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let spec = dir.join("s.json");
    let saved = stampede(&[
        "load",
        "http://127.0.0.1:9/",
        "-d",
        "2s",
        "--save-spec",
        spec.to_str().unwrap(),
    ]);
    assert!(saved.status.success(), "{}", text(&saved.stderr));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&spec).unwrap()).unwrap();
    for (field, name) in [("duration", "duration"), ("timeout", "timeout")] {
        let mut w = v.clone();
        w[field] = serde_json::json!({"secs": u64::MAX - 1, "nanos": 999_999_999});
        std::fs::write(&spec, w.to_string()).unwrap();
        let out = stampede(&["load", "--spec", spec.to_str().unwrap()]);
        let e = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{e}");
        assert!(
            e.contains(name) && e.contains("longer than 31 years"),
            "{e}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `stampede completions SHELL` for every shell clap knows, the bash script loaded by
/// bash itself and completing the dialects' own flags; `stampede man [SUBCOMMAND]`
/// rendered by man(1) when the machine has it, and a subcommand that is none refused
/// with the list.
#[test]
fn completions_and_man_pages_cover_every_subcommand_and_dialect() {
    let dir = std::env::temp_dir().join(format!("stampede-completions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("stampede.bash");
    let out = stampede(&["completions", "bash"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    std::fs::write(&script, &out.stdout).unwrap();
    let bash = text(&out.stdout);
    // load's, vllm bench serve's, ab's, h2load's, oha's and hey's own flags complete.
    for flag in [
        "--burstiness",
        "--dataset-name",
        "--wsesslog",
        "--latency",
        "--max-concurrent-streams",
        "--latency-correction",
        "--disable-redirects",
        "--max-workers",
    ] {
        assert!(bash.contains(flag), "{flag} is not completed");
    }
    let loaded = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "source {} && complete -p stampede",
            script.display()
        ))
        .output()
        .unwrap();
    assert!(
        text(&loaded.stdout).contains("-F _stampede stampede"),
        "{}{}",
        text(&loaded.stdout),
        text(&loaded.stderr)
    );
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let out = stampede(&["completions", shell]);
        assert!(out.status.success(), "{shell}: {}", text(&out.stderr));
        assert!(text(&out.stdout).contains("completions"), "{shell}");
    }
    let out = stampede(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("bash"), "{}", text(&out.stderr));

    for (sub, says) in [
        (None, "stampede-load(1)"),
        (Some("load"), "--connections"),
        (Some("wrk"), "--latency"),
        (Some("vllm"), "--max-concurrency"),
        (Some("oha"), "--latency-correction"),
        (Some("vegeta"), "--max-workers"),
    ] {
        let mut args = vec!["man"];
        args.extend(sub);
        let out = stampede(&args);
        assert!(out.status.success(), "{sub:?}: {}", text(&out.stderr));
        let roff = text(&out.stdout);
        let title = format!(
            ".TH {}",
            sub.map_or("stampede".into(), |s| format!("stampede-{s}"))
        );
        assert!(
            roff.starts_with(".ie") && roff.contains(&title),
            "{sub:?}: {roff}"
        );
        let page = dir.join("page.1");
        std::fs::write(&page, &out.stdout).unwrap();
        match Command::new("man")
            .arg("-l")
            .arg(&page)
            .env("MANWIDTH", "100")
            .output()
        {
            Ok(m) => {
                assert!(m.status.success(), "{sub:?}: {}", text(&m.stderr));
                let shown = text(&m.stdout).replace('\u{2010}', "-");
                assert!(shown.contains(says), "{sub:?} lacks {says}: {shown}");
            }
            Err(_) => eprintln!("SKIPPED rendering {sub:?}: man is not installed"),
        }
    }
    let out = stampede(&["man", "nosuch"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("one of load, serve"),
        "{}",
        text(&out.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `load --help` puts the common flags first and the rest under headings, in the
/// order a newcomer needs them (`-h` shows the first and names the headings).
#[test]
fn load_help_puts_the_common_flags_first_and_groups_the_rest() {
    let out = stampede(&["load", "--help"]);
    assert!(out.status.success());
    let help = text(&out.stdout);
    let at = |s: &str| {
        help.find(s)
            .unwrap_or_else(|| panic!("{s:?} missing:\n{help}"))
    };
    let order = [
        "\nOptions:",
        "\n  -c, --connections",
        "\n  -n, --requests",
        "\n  -d, --duration",
        "\n  -q, --quiet",
        "\nWhat to load:",
        "\n      --targets ",
        "\nHTTP/2:",
        "\nStreams and LLM serving:",
        "\n      --openai ",
        "\nThe open model:",
        "\n  -R, --rate",
        "\nCapacity search:",
        "\n      --find-max ",
        "\nOutputs:",
        "\n      --json ",
        "\nConnections and TLS:",
        "\n      --insecure\n",
        "\nDistributed runs:",
        "\n      --segment ",
    ];
    for w in order.windows(2) {
        assert!(at(w[0]) < at(w[1]), "{:?} before {:?}:\n{help}", w[0], w[1]);
    }
}

/// The allocator asks the kernel for no transparent huge pages. On a kernel whose THP
/// mode is `madvise` (Debian's), a process that advises them gets 2 MiB resident for
/// each region of its heap it touches: the client's and the server's memory doubled
/// that way. Elsewhere (THP always or never) the advice changes nothing, and this
/// says so and checks nothing.
#[test]
fn the_allocator_asks_for_no_huge_pages() {
    let mode =
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    if !mode.contains("[madvise]") {
        eprintln!(
            "skipped: the kernel's THP mode is not madvise ({})",
            mode.trim()
        );
        return;
    }
    let (serving, url) = crate::common::serve(&[]);
    let out = stampede(&[
        "load",
        &format!("{url}/pong"),
        "-n",
        "2000",
        "-c",
        "8",
        "-q",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rollup = std::fs::read_to_string(format!("/proc/{}/smaps_rollup", serving.pid()))
        .expect("the server's memory map");
    let huge = line_value(&rollup, "AnonHugePages:");
    assert_eq!(huge, "0 kB", "{rollup}");
}
