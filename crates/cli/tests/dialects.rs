//! oha's, hey's and vegeta's command lines run end to end against the reference
//! server: each prints its tool's layout, and what the flags ask for reaches the
//! server.

use crate::common::recorder::{stampede, text, Recorder};

/// The lines of `o` after the line `head`, up to the next blank line.
fn section<'a>(o: &'a str, head: &str) -> Vec<&'a str> {
    o.lines()
        .skip_while(|l| *l != head)
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect()
}

#[test]
fn oha_prints_its_summary_histogram_and_distribution() {
    let srv = crate::common::srv();
    let out = stampede(&["oha", "-n", "500", "-c", "4", "--no-tui", &srv.url("/pong")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let o = text(&out.stdout);
    assert!(
        o.starts_with("Summary:\n  Success rate:\t100.00%\n  Total:\t"),
        "{o}"
    );
    for key in [
        "Slowest:",
        "Fastest:",
        "Average:",
        "Requests/sec:",
        "Total data:\t1.95 KiB",
        "Size/request:\t4 B",
        "Size/sec:",
    ] {
        assert!(o.contains(&format!("  {key}")), "{key} in\n{o}");
    }
    let hist = section(&o, "Response time histogram:");
    assert_eq!(hist.len(), 11, "{o}");
    let counted: u64 = (hist.iter())
        .map(|l| {
            let n = &l[l.find('[').unwrap() + 1..l.find(']').unwrap()];
            n.parse::<u64>().unwrap()
        })
        .sum();
    assert_eq!(counted, 500, "{o}");
    assert!(hist.iter().any(|l| l.ends_with(&"■".repeat(32))), "{o}");
    let dist = section(&o, "Response time distribution:");
    assert_eq!(dist.len(), 9, "{o}");
    assert!(dist[0].starts_with("  10.00% in ") && dist[8].starts_with("  99.99% in "));
    assert!(o.contains("Details (average, fastest, slowest):\n  DNS+dialup:\t"));
    assert!(
        o.contains("Status code distribution:\n  [200] 500 responses\n"),
        "{o}"
    );
    assert!(!o.contains("Error distribution"), "{o}");
}

#[test]
fn oha_json_csv_quiet_and_output_file() {
    let srv = crate::common::srv();
    let url = srv.url("/pong");
    let out = stampede(&[
        "oha",
        "-n",
        "50",
        "-c",
        "2",
        "--output-format",
        "json",
        &url,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["summary"]["successRate"], 1.0);
    assert_eq!(v["summary"]["totalData"], 200);
    assert_eq!(v["statusCodeDistribution"]["200"], 50);
    let hist: u64 = (v["responseTimeHistogram"].as_object().unwrap().values())
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(hist, 50);
    assert!(v["latencyPercentiles"]["p99.99"].as_f64().unwrap() > 0.0);
    assert!(v["details"]["DNSDialup"]["fastest"].as_f64().unwrap() > 0.0);
    // Older oha's -j.
    let out = stampede(&["oha", "-n", "5", "-c", "1", "-j", &url]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["statusCodeDistribution"]["200"], 5);

    let out = stampede(&["oha", "-n", "20", "-c", "1", "--output-format", "csv", &url]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let o = text(&out.stdout);
    let lines: Vec<&str> = o.lines().collect();
    assert_eq!(lines.len(), 21, "{o}");
    assert_eq!(
        lines[0],
        "request-start,DNS,DNS+dialup,Response-delay,request-duration,bytes,status"
    );
    assert!(lines[1].starts_with("0,0,"), "{o}");
    assert!(lines[1..].iter().all(|l| l.ends_with(",4,200")), "{o}");
    // Only the first request opened the connection.
    assert!(
        lines[2..].iter().all(|l| l.split(',').nth(2) == Some("0")),
        "{o}"
    );

    let out = stampede(&["oha", "-n", "5", "--output-format", "quiet", &url]);
    assert!(
        out.status.success() && out.stdout.is_empty(),
        "{}",
        text(&out.stdout)
    );

    let dir = crate::common::recorder::tempdir::Dir::new();
    let file = dir.0.join("r.txt").to_string_lossy().into_owned();
    let out = stampede(&["oha", "-n", "5", "-o", &file, &url]);
    assert!(out.status.success() && out.stdout.is_empty());
    assert!(std::fs::read_to_string(&file)
        .unwrap()
        .starts_with("Summary:\n"));
}

#[test]
fn oha_dumps_drawn_urls_without_sending() {
    let out = stampede(&[
        "oha",
        "--rand-regex-url",
        "--dump-urls",
        "3",
        r"http://127\.0\.0\.1:9/item/[a-c]{2}",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let o = text(&out.stdout);
    let lines: Vec<&str> = o.lines().collect();
    assert_eq!(lines.len(), 3, "{o}");
    for l in lines {
        let tail = l
            .strip_prefix("http://127.0.0.1:9/item/")
            .unwrap_or_else(|| panic!("{o}"));
        assert!(
            tail.len() == 2 && tail.chars().all(|c| ('a'..='c').contains(&c)),
            "{o}"
        );
    }
    let out = stampede(&["oha", "--dump-urls", "3", "http://127.0.0.1:9/"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("add --rand-regex-url"));
}

#[test]
fn oha_flags_reach_the_server() {
    let rec = Recorder::start();
    let out = stampede(&[
        "oha",
        "-n",
        "3",
        "-c",
        "1",
        "-m",
        "POST",
        "-d",
        "hi",
        "-T",
        "text/plain",
        "-a",
        "user:pw",
        "-A",
        "*/*",
        "-H",
        "X-Test: 1",
        "--no-tui",
        &rec.url("/x"),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let seen = rec.seen();
    assert_eq!(seen.len(), 3);
    let r = &seen[0];
    assert_eq!(
        (r.method.as_str(), r.path.as_str(), r.body.as_slice()),
        ("POST", "/x", &b"hi"[..])
    );
    for (name, value) in [
        ("Content-Type", "text/plain"),
        ("Authorization", "Basic dXNlcjpwdw=="),
        ("Accept", "*/*"),
        ("X-Test", "1"),
    ] {
        assert_eq!(
            r.headers.get(name).map(String::as_str),
            Some(value),
            "{name} in {r:?}"
        );
    }
}

#[test]
fn oha_counts_what_the_deadline_cuts_off() {
    let srv = crate::common::srv();
    // Every answer takes 2 s; the run lasts 300 ms: both requests are cut off.
    let out = stampede(&[
        "oha",
        "-z",
        "300ms",
        "-c",
        "2",
        "--no-tui",
        &srv.url("/delay/2000"),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let o = text(&out.stdout);
    assert!(o.contains("  Success rate:\t0.00%"), "{o}");
    assert!(
        o.contains("Error distribution:\n  [2] aborted due to deadline\n"),
        "{o}"
    );
}

#[test]
fn hey_prints_its_report_and_csv() {
    let srv = crate::common::srv();
    let url = srv.url("/pong");
    let out = stampede(&["hey", "-n", "300", "-c", "3", "-disable-keepalive", &url]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let o = text(&out.stdout);
    assert!(o.starts_with("\nSummary:\n  Total:\t"), "{o}");
    assert!(
        o.contains("  Requests/sec:\t")
            && o.contains("  \n  Total data:\t1200 bytes\n  Size/request:\t4 bytes\n"),
        "{o}"
    );
    let hist = section(&o, "Response time histogram:");
    assert_eq!(hist.len(), 11, "{o}");
    assert!(hist.iter().any(|l| l.ends_with(&"■".repeat(40))), "{o}");
    let dist = section(&o, "Latency distribution:");
    assert_eq!(dist.len(), 7, "{o}");
    assert!(
        dist[0].starts_with("  10% in ")
            && dist[6].starts_with("  99% in ")
            && dist[6].ends_with(" secs")
    );
    let details = section(&o, "Details (average, fastest, slowest):");
    assert_eq!(details.len(), 3, "{o}");
    assert!(details[0].starts_with("  DNS+dialup:\t"), "{o}");
    assert!(
        o.contains("Status code distribution:\n  [200]\t300 responses\n"),
        "{o}"
    );

    let out = stampede(&["hey", "-n", "4", "-c", "2", "-o", "csv", &url]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let o = text(&out.stdout);
    let lines: Vec<&str> = o.lines().collect();
    assert_eq!(lines.len(), 5, "{o}");
    assert!(lines[0].starts_with("response-time,DNS+dialup,DNS,"));
    assert!(
        lines[1..]
            .iter()
            .all(|l| l.split(',').nth(6) == Some("200")),
        "{o}"
    );
}

#[test]
fn hey_flags_reach_the_server() {
    let rec = Recorder::start();
    let out = stampede(&[
        "hey",
        "-n",
        "2",
        "-c",
        "1",
        "-m",
        "PUT",
        "-d",
        "b",
        "-U",
        "hey/0.0.1",
        "-host",
        "h.test",
        "-a",
        "u:p",
        &rec.url("/y"),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let seen = rec.seen();
    assert_eq!(seen.len(), 2);
    let r = &seen[1];
    assert_eq!((r.method.as_str(), r.body.as_slice()), ("PUT", &b"b"[..]));
    for (name, value) in [
        ("Content-Type", "text/html"),
        ("User-Agent", "hey/0.0.1"),
        ("Host", "h.test"),
        ("Authorization", "Basic dTpw"),
    ] {
        assert_eq!(
            r.headers.get(name).map(String::as_str),
            Some(value),
            "{name} in {r:?}"
        );
    }
}

/// `stampede ARGS` with `input` on standard input.
fn stampede_fed(args: &[&str], input: &[u8]) -> std::process::Output {
    use std::io::Write as _;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_stampede"))
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

/// vegeta waits for the answers in flight when the attack ends: each slow answer
/// is counted as it comes (the report's `wait`), none as a failure.
#[test]
fn vegeta_waits_for_the_answers_in_flight_when_the_attack_ends() {
    let srv = crate::common::srv();
    let targets = format!("GET {}\n", srv.url("/delay/200"));
    let out = stampede_fed(
        &["vegeta", "attack", "-rate", "50", "-duration", "1s"],
        targets.as_bytes(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = stampede_fed(&["vegeta", "report"], &out.stdout);
    let o = text(&out.stdout);
    let line = |name: &str| o.lines().find(|l| l.starts_with(name)).unwrap_or_default();
    assert!(line("Success").ends_with("100.00%"), "{o}");
    let codes: Vec<&str> = line("Status Codes").split_whitespace().skip(3).collect();
    assert!(codes.len() == 1 && codes[0].starts_with("200:"), "{o}");
    assert!(!o.contains("still in flight"), "{o}");
    // [total, attack, wait]: the wait is the last answers' 200 ms, give or take.
    let wait = line("Duration").rsplit(", ").next().unwrap_or_default();
    assert!(wait.ends_with("ms") && !wait.starts_with("0s"), "{o}");
    let ms: f64 = wait
        .trim_end_matches("ms")
        .parse()
        .unwrap_or_else(|_| panic!("{o}"));
    assert!((100.0..=1000.0).contains(&ms), "{o}");
}

#[test]
fn vegeta_attack_then_report_encode_and_plot() {
    let srv = crate::common::srv();
    let dir = crate::common::recorder::tempdir::Dir::new();
    let targets = format!(
        "GET {}\n\nGET {}\n",
        srv.url("/pong"),
        srv.url("/status/404")
    );
    // Targets on standard input, results on standard output: vegeta's pipeline.
    let out = stampede_fed(
        &["vegeta", "attack", "-rate", "200/s", "-duration", "500ms"],
        targets.as_bytes(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let results = out.stdout;
    let first: serde_json::Value = serde_json::from_slice(&results).unwrap();
    assert_eq!(first["schema"], "stampede.run/1");

    let out = stampede_fed(&["vegeta", "report"], &results);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let o = text(&out.stdout);
    let line = |name: &str| {
        o.lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_default()
            .to_string()
    };
    let requests = line("Requests");
    let total: u64 = (requests.strip_prefix("Requests      [total, rate, throughput]         "))
        .and_then(|v| v.split(',').next()?.parse().ok())
        .unwrap_or_else(|| panic!("{o}"));
    // 200/s for 500 ms: 100 arrivals, every one counted (a busy machine may leave the
    // last few unsent, and says so).
    assert!((50..=100).contains(&total), "{o}");
    assert!(
        line("Latencies").contains("[min, mean, 50, 90, 95, 99, max]  "),
        "{o}"
    );
    // The two targets in turn: both statuses, together every request.
    let codes: Vec<(u16, u64)> = (line("Status Codes").split_whitespace().skip(3))
        .map(|c| {
            let (s, n) = c.split_once(':').unwrap();
            (s.parse().unwrap(), n.parse().unwrap())
        })
        .collect();
    assert_eq!(codes.iter().map(|c| c.1).sum::<u64>(), total, "{o}");
    let ok = codes.iter().find(|c| c.0 == 200).map_or(0, |c| c.1);
    assert!(ok > 0 && codes.iter().any(|c| c.0 == 404), "{o}");
    let success = format!("{:.2}%", 100.0 * ok as f64 / total as f64);
    assert!(line("Success").ends_with(&success), "{o}");
    // vegeta names a status outside 200–399 in its error set by its status line.
    assert!(o.ends_with("Error Set:\n404 Not Found\n"), "{o}");

    // Two attacks in one report, one from a file: merged.
    let file = dir.0.join("a.json").to_string_lossy().into_owned();
    std::fs::write(&file, &results).unwrap();
    let out = stampede_fed(&["vegeta", "report", "-type=json", &file, &file], b"");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["requests"].as_u64(), Some(2 * total));
    assert_eq!(v["status_codes"]["200"].as_u64(), Some(2 * ok));

    let out = stampede_fed(&["vegeta", "report", "-type", "hist[0,1ms,1s]", &file], b"");
    let o = text(&out.stdout);
    let rows: Vec<&str> = o.lines().collect();
    assert_eq!(rows.len(), 4, "{o}");
    assert!(
        rows[0].starts_with("Bucket") && rows[3].starts_with("[1s,"),
        "{o}"
    );
    let counted: u64 = rows[1..]
        .iter()
        .map(|r| r.split_whitespace().nth(2).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(
        counted,
        ok + codes.iter().find(|c| c.0 == 404).map_or(0, |c| c.1),
        "{o}"
    );

    let out = stampede_fed(&["vegeta", "report", "-type=hdrplot", &file], b"");
    assert!(text(&out.stdout).starts_with("Value(ms)  Percentile  TotalCount  1/(1-Percentile)\n"));

    let out = stampede_fed(&["vegeta", "encode", "-to", "csv", &file], b"");
    assert!(
        text(&out.stdout).starts_with("second,completed,failed,"),
        "{}",
        text(&out.stdout)
    );
    let out = stampede_fed(&["vegeta", "encode", &file], b"");
    let again: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(again["requests"], first["requests"]);

    let html = dir.0.join("plot.html").to_string_lossy().into_owned();
    let out = stampede_fed(
        &[
            "vegeta", "plot", "-title", "Attack", "-output", &html, &file,
        ],
        b"",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<html") && page.contains("Attack"));

    for (args, says) in [
        (vec!["vegeta", "report", "-every", "1s"], "-every: "),
        (vec!["vegeta", "report", "-type", "pie"], "-type pie"),
        (vec!["vegeta", "encode", "-to", "gob"], "-to gob"),
        (vec!["vegeta", "fire"], "vegeta fire: not a command"),
    ] {
        let out = stampede_fed(&args, &results);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            text(&out.stderr).contains(says),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    let out = stampede_fed(&["vegeta", "report"], b"not json");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("standard input: not the results of stampede vegeta attack"));
}

#[test]
fn credentials_in_a_url_are_sent_as_basic_auth_and_never_shown() {
    let rec = Recorder::start();
    let url = rec.url("/a").replace("http://", "HTTP://user:s%40cret@");
    // vegeta's targets take them, as vegeta does.
    let out = stampede_fed(
        &["vegeta", "attack", "-rate", "20/s", "-duration", "200ms"],
        format!("GET {url}\n").as_bytes(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let results = text(&out.stdout);
    assert!(
        !results.contains("cret") && results.contains("\"url\": \"http://127.0.0.1:"),
        "{results}"
    );
    // So does load, whose summary shows the URL without them.
    let out = stampede(&["load", "-q", "-n", "2", "-c", "1", &url]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let o = text(&out.stdout);
    assert!(
        o.starts_with("GET http://127.0.0.1:") && !o.contains("cret"),
        "{o}"
    );
    let seen = rec.seen();
    assert!(seen.len() >= 3, "{}", seen.len());
    for r in &seen {
        // base64("user:s@cret")
        assert_eq!(
            r.headers.get("Authorization").map(String::as_str),
            Some("Basic dXNlcjpzQGNyZXQ=")
        );
    }
}
