//! Request variety end to end: `load --targets` (vegeta's format), `--body-lines`,
//! oha's spellings, and h2load's several URIs, against the recording server on
//! 127.0.0.1:0, checking what each connection received in order. Every run is bounded
//! by a request count.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::common::recorder::{tempdir, Recorder, Seen};

fn stampede(args: &[&str]) -> Output {
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_stampede"))
        .args(args)
        .output()
        .expect("the binary runs");
    assert!(started.elapsed() < Duration::from_secs(30));
    out
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Each connection's requests, `method path`, in the order received.
fn by_connection(seen: &[Seen]) -> Vec<Vec<String>> {
    let mut conns: Vec<usize> = seen.iter().map(|s| s.conn).collect();
    conns.sort();
    conns.dedup();
    (conns.iter())
        .map(|c| {
            (seen.iter().filter(|s| s.conn == *c))
                .map(|s| format!("{} {}", s.method, s.path))
                .collect()
        })
        .collect()
}

fn assert_in_turn(seen: &[Seen], list: &[&str], total: usize) {
    let conns = by_connection(seen);
    for c in &conns {
        for (i, got) in c.iter().enumerate() {
            assert_eq!(got, list[i % list.len()], "{conns:?}");
        }
    }
    assert_eq!(seen.len(), total, "{conns:?}");
}

#[test]
fn a_targets_file_sends_each_request_in_turn_with_its_headers_and_body() {
    let srv = Recorder::start();
    let dir = tempdir::Dir::new();
    let body = dir.0.join("thing.json");
    std::fs::write(&body, "{\"thing\":1}").unwrap();
    let file = dir.0.join("targets.txt");
    std::fs::write(
        &file,
        format!(
            "# vegeta's format\nGET {a}\nX-Account-ID: 8675309\n\nPOST {b}\nContent-Type: application/json\n@{body}\n\nHEAD {c}\n",
            a = srv.url("/a?x=1"),
            b = srv.url("/things"),
            c = srv.url("/h"),
            body = body.display()
        ),
    )
    .unwrap();
    let f = file.to_string_lossy();
    let out = stampede(&[
        "load",
        "-q",
        "-c",
        "2",
        "-t",
        "1",
        "-n",
        "30",
        "-H",
        "X-Run: 7",
        "--targets",
        &f,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let seen = srv.seen();
    assert_in_turn(&seen, &["GET /a?x=1", "POST /things", "HEAD /h"], 30);
    for s in &seen {
        assert_eq!(s.headers["X-Run"], "7");
        match s.path.as_str() {
            "/a?x=1" => assert_eq!(s.headers["X-Account-ID"], "8675309"),
            "/things" => {
                assert_eq!(s.body, b"{\"thing\":1}");
                assert_eq!(s.headers["Content-Type"], "application/json");
            }
            _ => assert!(s.body.is_empty() && !s.headers.contains_key("X-Account-ID")),
        }
    }
    // The summary names 30 completed requests, none failed.
    assert!(
        text(&out.stdout).contains("30 completed"),
        "{}",
        text(&out.stdout)
    );

    // A line that is not a request is named with its file and line.
    std::fs::write(&file, format!("GET {}\nnot a header\n", srv.url("/"))).unwrap();
    let out = stampede(&["load", "-n", "1", "--targets", &f]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains(&format!("{f}:2: \"not a header\"")),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_body_per_line_and_ohas_spellings() {
    let srv = Recorder::start();
    let dir = tempdir::Dir::new();
    let file = dir.0.join("bodies.txt");
    std::fs::write(&file, "{\"n\":1}\n{\"n\":2}\n\n{\"n\":3}\n").unwrap();
    let f = file.to_string_lossy();
    let url = srv.url("/in");
    let out = stampede(&[
        "load",
        "-q",
        "-c",
        "1",
        "-n",
        "6",
        "-m",
        "POST",
        "--body-lines",
        &f,
        &url,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let bodies: Vec<String> = srv.seen().iter().map(|s| text(&s.body)).collect();
    assert_eq!(
        bodies,
        [
            "{\"n\":1}",
            "{\"n\":2}",
            "{\"n\":3}",
            "{\"n\":1}",
            "{\"n\":2}",
            "{\"n\":3}"
        ]
    );

    // oha's -z (duration), -D (body file) and --disable-keepalive.
    let srv = Recorder::start();
    let url = srv.url("/z");
    let out = stampede(&[
        "load",
        "-q",
        "-c",
        "1",
        "-z",
        "200ms",
        "-D",
        &f,
        "--disable-keepalive",
        "-m",
        "PUT",
        &url,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let seen = srv.seen();
    assert!(seen.len() > 5, "{}", seen.len());
    assert!(seen.iter().all(|s| s.method == "PUT" && s.body.len() == 25));
    // A new connection for each request.
    assert_eq!(by_connection(&seen).len(), seen.len());

    // oha's -q N is named, not read as quiet and a URL.
    let out = stampede(&["load", "-q", "100", &url]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("-q 100") && err.contains("-R/--rate 100"),
        "{err}"
    );
}
