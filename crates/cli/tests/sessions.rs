//! httperf's session workloads end to end against a server that records what it
//! received: session logs (`--wsesslog`), a status that fails a session
//! (`--failure-status`), retried calls (`--retry-on-failure`), the cap on pipelined
//! calls (`--max-piped-calls`), cookies carried by sessions (`--session-cookies`) and
//! the printers (`--print-request`, `--print-reply`).

use std::time::Duration;

use crate::common::recorder::{stampede, tempdir, text, Recorder, Seen};

/// Each connection's requests as `METHOD path`, connections in the order accepted.
fn by_connection(seen: &[Seen]) -> Vec<Vec<&Seen>> {
    let mut conns: Vec<usize> = seen.iter().map(|s| s.conn).collect();
    conns.sort();
    conns.dedup();
    conns
        .iter()
        .map(|c| seen.iter().filter(|s| s.conn == *c).collect())
        .collect()
}

fn httperf(rec: &Recorder, more: &[&str]) -> String {
    let port = rec.port.to_string();
    let mut args = vec![
        "httperf",
        "--server",
        "127.0.0.1",
        "--port",
        &port,
        "--timeout",
        "5",
    ];
    args.extend_from_slice(more);
    let out = stampede(&args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn a_session_log_is_replayed_session_by_session_with_its_bursts_and_think_times() {
    let rec = Recorder::start();
    let dir = tempdir::Dir::new();
    let log = dir.0.join("sessions.log");
    std::fs::write(
        &log,
        "# two sessions\n/a think=0.25\n\t/b\n\t/c\n/e\n\n\n/d method=POST contents='x y'\n/f method=HEAD\n",
    )
    .unwrap();
    let arg = format!("--wsesslog=4,0,{}", log.display());
    let o = httperf(&rec, &[&arg, "--rate", "20"]);
    assert!(o.contains("Session rate [sess/s]: avg"), "{o}");
    assert!(o.contains("(4 completed, 0 failed, 4 total)"), "{o}");
    let seen = rec.seen();
    let conns = by_connection(&seen);
    assert_eq!(conns.len(), 4, "{seen:?}");
    for (k, reqs) in conns.iter().enumerate() {
        let lines: Vec<String> = reqs
            .iter()
            .map(|s| format!("{} {}", s.method, s.path))
            .collect();
        if k % 2 == 0 {
            assert_eq!(lines, ["GET /a", "GET /b", "GET /c", "GET /e"]);
            // /e waits out /a's think time after the burst of /b and /c.
            let gap = reqs[3].at - reqs[2].at;
            assert!(gap >= Duration::from_millis(230), "{gap:?}");
            assert!(reqs[1].at - reqs[0].at < Duration::from_millis(200));
        } else {
            assert_eq!(lines, ["POST /d", "HEAD /f"]);
            assert_eq!(reqs[0].body, b"x y");
        }
    }
}

#[test]
fn a_failure_status_fails_the_session_unless_its_calls_are_retried() {
    let rec = Recorder::start();
    // Every call answered 503: each session fails at its first call.
    let o = httperf(
        &rec,
        &[
            "--wsess",
            "3,4,0",
            "--uri",
            "/status/503",
            "--failure-status",
            "503",
        ],
    );
    assert!(o.contains("(0 completed, 3 failed, 3 total)"), "{o}");
    assert!(
        o.contains("Reply status: 1xx=0 2xx=0 3xx=0 4xx=0 5xx=3"),
        "{o}"
    );
    assert_eq!(rec.seen().len(), 3);
    // /flaky answers 503 and 200 in turn: retried, every session completes its four
    // calls; each 503 costs one more request.
    let rec = Recorder::start();
    let o = httperf(
        &rec,
        &[
            "--wsess",
            "3,4,0",
            "--uri",
            "/flaky",
            "--failure-status",
            "503",
            "--retry-on-failure",
        ],
    );
    assert!(o.contains("(3 completed, 0 failed, 3 total)"), "{o}");
    assert!(o.contains("2xx=12 3xx=0 4xx=0 5xx=12"), "{o}");
    assert_eq!(rec.seen().len(), 24);
    // Without the flag a 503 is a reply like another.
    let rec = Recorder::start();
    let o = httperf(&rec, &["--wsess", "2,2,0", "--uri", "/status/503"]);
    assert!(o.contains("(2 completed, 0 failed, 2 total)"), "{o}");
}

#[test]
fn a_burst_is_pipelined_at_most_max_piped_calls_at_a_time() {
    let rec = Recorder::start();
    let o = httperf(
        &rec,
        &[
            "--wsess",
            "2,6,0",
            "--burst-length",
            "6",
            "--max-piped-calls",
            "2",
            "--max-connections",
            "1",
        ],
    );
    assert!(o.contains("(2 completed, 0 failed, 2 total)"), "{o}");
    let seen = rec.seen();
    let conns = by_connection(&seen);
    assert_eq!(conns.len(), 2);
    assert!(conns.iter().all(|c| c.len() == 6));
}

/// `--session-cookies`: a cookie a reply sets goes with the session's later calls,
/// the last one set replacing the one before; sessions do not share them.
#[test]
fn a_session_sends_back_the_cookie_its_replies_set() {
    let dir = tempdir::Dir::new();
    let log = dir.0.join("cookies.log");
    std::fs::write(&log, "/cookie/a=1\n/x\n/cookie/b=2\n/y\n").unwrap();
    let arg = format!("--wsesslog=2,0,{}", log.display());
    let rec = Recorder::start();
    httperf(&rec, &[&arg, "--session-cookies"]);
    let seen = rec.seen();
    let conns = by_connection(&seen);
    assert_eq!(conns.len(), 2, "{seen:?}");
    for c in &conns {
        let got: Vec<(&str, Option<&str>)> = c
            .iter()
            .map(|s| (s.path.as_str(), s.headers.get("Cookie").map(|v| v.as_str())))
            .collect();
        assert_eq!(
            got,
            [
                ("/cookie/a=1", None),
                ("/x", Some("a=1")),
                ("/cookie/b=2", Some("a=1")),
                ("/y", Some("b=2")),
            ]
        );
    }
    // Without the flag no cookie is sent back.
    let rec = Recorder::start();
    httperf(&rec, &[&arg]);
    let seen = rec.seen();
    assert_eq!(seen.len(), 8);
    assert!(
        seen.iter().all(|s| !s.headers.contains_key("Cookie")),
        "{seen:?}"
    );
}

/// `--print-request` and `--print-reply`: every call's lines carry its number, and a
/// reply's number is its request's, pipelined bursts and sessions included.
#[test]
fn the_printers_number_every_call_and_its_reply() {
    let rec = Recorder::start();
    let o = httperf(
        &rec,
        &[
            "--uri",
            "/p",
            "--num-conns",
            "2",
            "--num-calls",
            "3",
            "--print-request",
            "--print-reply=header",
        ],
    );
    for n in 0..6 {
        let has = |prefix: &str| o.lines().filter(|l| l.starts_with(prefix)).count();
        assert_eq!(has(&format!("SH{n}:GET /p HTTP/1.1")), 1, "{o}");
        assert_eq!(has(&format!("SS{n}: header ")), 1, "{o}");
        assert_eq!(has(&format!("RH{n}:HTTP/1.1 200 X")), 1, "{o}");
        assert_eq!(has(&format!("RS{n}: header ")), 1, "{o}");
        assert_eq!(has(&format!("RB{n}:")), 0, "{o}");
    }
    assert!(!o.contains("SH6:"), "{o}");
    // The report follows the printed lines.
    assert!(
        o.contains("Total: connections 2 requests 6 replies 6"),
        "{o}"
    );

    // Sessions with pipelined bursts; the body alone.
    let rec = Recorder::start();
    let o = httperf(
        &rec,
        &[
            "--wsess",
            "2,4,0",
            "--burst-length",
            "2",
            "--uri",
            "/p",
            "--print-reply=body",
        ],
    );
    for n in 0..8 {
        assert_eq!(
            o.lines().filter(|l| *l == format!("RB{n}:PONG")).count(),
            1,
            "{o}"
        );
    }
    assert!(!o.contains("RH0:") && !o.contains("SH0:"), "{o}");
}

/// `--wset=N,X`: one walk over the run's calls through N files, each taken 1/X times
/// in a row, named as httperf names them.
#[test]
fn a_working_set_is_walked_through_over_the_runs_calls() {
    let rec = Recorder::start();
    httperf(
        &rec,
        &[
            "--uri",
            "/w",
            "--wset",
            "4,0.5",
            "--num-conns",
            "2",
            "--num-calls",
            "4",
        ],
    );
    let paths: Vec<String> = rec.seen().iter().map(|s| s.path.clone()).collect();
    assert_eq!(
        paths,
        [
            "/w/0.html",
            "/w/1.html",
            "/w/1.html",
            "/w/2.html",
            "/w/2.html",
            "/w/3.html",
            "/w/3.html",
            "/w/0.html"
        ]
    );
}

/// httperf's `--wlog=B,FILE`: the run's calls take the file's URIs in order; `y` goes
/// round again, `n` ends the run once they are used up.
#[test]
fn a_uri_log_is_replayed_in_order_and_ends_the_run_when_told() {
    let rec = Recorder::start();
    let dir = tempdir::Dir::new();
    let log = dir.0.join("uris.log");
    std::fs::write(&log, "/a\0/b\0/c\0").unwrap();
    let paths = |from: usize| -> Vec<String> {
        (rec.seen()[from..].iter())
            .map(|s| s.path.clone())
            .collect()
    };
    let arg = format!("--wlog=y,{}", log.display());
    httperf(&rec, &["--num-conns", "2", "--num-calls", "4", &arg]);
    assert_eq!(paths(0), ["/a", "/b", "/c", "/a", "/b", "/c", "/a", "/b"]);
    // n: three calls, then the run ends though 8 were asked for.
    let arg = format!("--wlog=n,{}", log.display());
    let port = rec.port.to_string();
    let out = stampede(&[
        "httperf",
        "--server",
        "127.0.0.1",
        "--port",
        &port,
        "--num-conns",
        "2",
        "--num-calls",
        "4",
        &arg,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(paths(8), ["/a", "/b", "/c"]);
    let o = text(&out.stdout);
    assert!(
        o.contains("Total: connections 1 requests 3 replies 3"),
        "{o}"
    );
    assert!(
        text(&out.stderr).contains("the log's 3 URIs were used up before the 8 calls asked for"),
        "{}",
        text(&out.stderr)
    );
}
