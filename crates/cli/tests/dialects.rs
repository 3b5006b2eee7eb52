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
