//! Request variety end to end: `load --targets` (vegeta's format), `--body-lines`,
//! oha's spellings, and h2load's several URIs, against the recording server on
//! 127.0.0.1:0, checking what each connection received in order. Every run is bounded
//! by a request count.

use crate::common::recorder::{stampede, tempdir, text, Recorder, Seen};

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

#[test]
fn h2loads_uris_are_used_in_turn_by_every_client() {
    let srv = Recorder::start();
    let first = srv.url("/a");
    let out = stampede(&[
        "h2load",
        "--h1",
        "-n",
        "12",
        "-c",
        "2",
        "-m",
        "2",
        &first,
        "/b?x=1",
        "http://elsewhere:1/c",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("12 succeeded"),
        "{}",
        text(&out.stdout)
    );
    assert_in_turn(&srv.seen(), &["GET /a", "GET /b?x=1", "GET /c"], 12);

    // -B names the server for URIs written as paths; --connect-to connects elsewhere
    // and keeps the URI's authority.
    let srv = Recorder::start();
    let base = srv.url("");
    let out = stampede(&[
        "h2load",
        "--h1",
        "-n",
        "2",
        "-B",
        &base,
        "http://example.test/p",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let to = format!("127.0.0.1:{}", srv.port);
    let out = stampede(&[
        "h2load",
        "--h1",
        "-n",
        "2",
        "--connect-to",
        &to,
        "http://example.test:8/q",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let seen = srv.seen();
    let got: Vec<(&str, &str)> = (seen.iter())
        .map(|s| (s.path.as_str(), s.headers["Host"].as_str()))
        .collect();
    let own = format!("127.0.0.1:{}", srv.port);
    assert_eq!(
        got,
        [
            ("/p", own.as_str()),
            ("/p", own.as_str()),
            ("/q", "example.test:8"),
            ("/q", "example.test:8")
        ]
    );
}

#[test]
fn dialects_name_refused_and_inert_flags() {
    let out = stampede(&["help", "h2load"]);
    assert!(out.status.success());
    let help = text(&out.stdout);
    assert!(
        help.contains("--connect-to") && help.contains("--ciphers: TLS is rustls"),
        "{help}"
    );
    let out = stampede(&["h2load", "--ciphers", "X", "http://127.0.0.1:9/"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).starts_with("stampede: --ciphers: "),
        "{}",
        text(&out.stderr)
    );
    let out = stampede(&["h2load", "--clinets", "2", "http://127.0.0.1:9/"]);
    assert!(
        text(&out.stderr).contains("--clinets: not a flag of h2load; did you mean --clients?"),
        "{}",
        text(&out.stderr)
    );
    // httperf: an inert flag is said in the run's output.
    let srv = Recorder::start();
    let port = srv.port.to_string();
    let out = stampede(&[
        "httperf",
        "--hog",
        "--server",
        "127.0.0.1",
        "--port",
        &port,
        "--num-co",
        "2",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("stampede httperf: --hog: "),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(srv.seen().len(), 2);
}

#[test]
fn rand_regex_url_draws_a_new_path_for_every_request() {
    let rec = Recorder::start();
    let pattern = format!(r"http://127\.0\.0\.1:{}/i/[a-z]{{3}}(\?v=[0-9])?", rec.port);
    let out = stampede(&[
        "load",
        "--rand-regex-url",
        &pattern,
        "-n",
        "60",
        "-c",
        "3",
        "-q",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let seen = rec.seen();
    assert_eq!(seen.len(), 60);
    let mut paths: Vec<&str> = seen.iter().map(|s| s.path.as_str()).collect();
    for p in &paths {
        let (path, query) = p.split_once('?').unwrap_or((p, ""));
        let name = path.strip_prefix("/i/").unwrap_or("");
        assert!(
            name.len() == 3 && name.bytes().all(|b| b.is_ascii_lowercase()),
            "{p}"
        );
        assert!(
            query.is_empty() || (query.len() == 3 && query.starts_with("v=")),
            "{p}"
        );
    }
    paths.sort();
    paths.dedup();
    assert!(paths.len() > 50, "{paths:?}");
    // The origin must be fixed text; the message says how to write it.
    let out = stampede(&[
        "load",
        "--rand-regex-url",
        "http://127.0.0.1:[0-9]+/",
        "-n",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("escape each dot"),
        "{}",
        text(&out.stderr)
    );
}

/// `load --redirects N`: a 3xx with a Location on the run's origin is followed on the
/// same connection, up to N hops, each timed; the request's answer is the last one.
/// 303 (and 301/302 after a POST) asks again with GET and no body; 307/308 repeat the
/// method and body. A Location elsewhere is not followed.
#[test]
fn redirects_are_followed_to_the_limit_each_hop_timed() {
    let srv = Recorder::start();
    let dir = tempdir::Dir::new();
    let json = dir.0.join("r.json");
    let json_s = json.to_string_lossy().into_owned();
    let run = |url: &str, more: &[&str]| -> serde_json::Value {
        let mut args = vec![
            "load", url, "-c", "1", "-t", "1", "-n", "2", "--json", &json_s,
        ];
        args.extend_from_slice(more);
        let out = stampede(&args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
    };
    let chain = srv.url("/to/301?/to/302?/end");
    let r = run(&chain, &["--redirects", "5"]);
    assert_eq!(r["requests"]["completed"], 2);
    assert_eq!(r["statuses"]["200"], 2, "{}", r["statuses"]);
    assert_eq!(r["settings"]["redirects"], 5);
    let hops =
        stampede_engine::Hist::from_base64(r["histograms"]["redirect"].as_str().unwrap()).unwrap();
    assert_eq!(hops.0.len(), 4);
    let conns = by_connection(&srv.seen());
    assert_eq!(
        conns,
        [[
            "GET /to/301?/to/302?/end",
            "GET /to/302?/end",
            "GET /end",
            "GET /to/301?/to/302?/end",
            "GET /to/302?/end",
            "GET /end"
        ]]
    );
    // A new connection per request: each hop reconnects.
    let r = run(&chain, &["--redirects", "5", "--no-keepalive"]);
    assert_eq!(r["statuses"]["200"], 2, "{}", r["statuses"]);
    assert_eq!(r["connections_opened"], 6);
    // The summary says so.
    let out = stampede(&["load", &chain, "-c", "1", "-n", "2", "--redirect", "1"]);
    let o = text(&out.stdout);
    assert!(
        o.contains("redirects   2 followed (at most 1 per request)")
            && o.contains("2 answers were 3xx"),
        "{o}"
    );
    assert!(o.contains("302 × 2"), "{o}");
    // Without the flag a 3xx is the answer; elsewhere is not followed.
    let before = srv.seen().len();
    let r = run(&chain, &[]);
    assert_eq!(r["statuses"]["301"], 2);
    let r = run(
        &srv.url("/to/302?http://127.0.0.2:1/x"),
        &["--redirects", "3"],
    );
    assert_eq!(r["statuses"]["302"], 2);
    assert_eq!(srv.seen().len(), before + 4);
    // POST: 303 asks again with GET and no body, 307 repeats the POST and its body.
    let body = dir.0.join("body.txt");
    std::fs::write(&body, "hello").unwrap();
    let body = body.to_string_lossy().into_owned();
    for (code, method, sent) in [("303", "GET", ""), ("307", "POST", "hello")] {
        let before = srv.seen().len();
        let url = srv.url(&format!("/to/{code}?done"));
        run(
            &url,
            &["--redirects", "1", "-m", "POST", "--body-file", &body],
        );
        let seen = &srv.seen()[before..];
        assert_eq!(seen.len(), 4);
        let last = &seen[1];
        assert_eq!(
            (last.method.as_str(), last.path.as_str()),
            (method, "/to/done")
        );
        assert_eq!(String::from_utf8_lossy(&last.body), sent);
        assert_eq!(
            last.headers.contains_key("Content-Length"),
            !sent.is_empty()
        );
    }
    // What cannot follow is refused by name.
    for more in [
        &["--redirects", "2", "--pipeline", "2"][..],
        &["--redirects", "101"],
    ] {
        let mut args = vec!["load", &chain, "-n", "2"];
        args.extend_from_slice(more);
        let out = stampede(&args);
        assert_eq!(out.status.code(), Some(2));
        assert!(
            text(&out.stderr).contains("redirects:"),
            "{}",
            text(&out.stderr)
        );
    }
}
