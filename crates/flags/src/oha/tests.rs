//! oha's flags as the run and report they make, without a network.

use super::*;

fn args(argv: &[&str]) -> Result<OhaArgs, FlagError> {
    let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
    DIALECT.parse::<OhaArgs>(&argv).map(|(a, _)| a)
}

/// The translation as the run contract makes it: inputs read, then translated.
fn spec_of(argv: &[&str]) -> Result<(LoadSpec, OhaInfo), FlagError> {
    let a = args(argv)?;
    let inputs = Oha::inputs(&a)?;
    translate(&a, inputs)
}

fn request_text(s: &LoadSpec) -> String {
    String::from_utf8_lossy(&s.load.request.bytes).into_owned()
}

#[test]
fn defaults_are_oha_s() {
    let (s, info) = spec_of(&["http://127.0.0.1:9/p"]).unwrap();
    assert_eq!(
        (s.load.requests, s.load.duration, s.load.connections),
        (Some(200), None, 50)
    );
    assert!(matches!(s.load.shape, Shape::Closed));
    assert_eq!(
        (s.load.pipeline, s.load.protocol.http2, s.load.redirects),
        (1, false, 0)
    );
    assert_eq!(s.load.connect_timeout, Duration::from_secs(5));
    assert_eq!(s.load.timeout, Some(Duration::from_secs(30)));
    assert!(!info.corrected && info.unit.is_none() && !s.record_requests);
}

#[test]
fn every_documented_flag_is_taken_or_refused_by_name() {
    let dir = std::env::temp_dir().join(format!("stampede-oha-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_string_lossy().into_owned()
    };
    let body = path("body.json", "{\"a\":1}");
    let lines = path("lines.txt", "one\ntwo\n\nthree\n");
    let urls = path(
        "urls.txt",
        "http://127.0.0.1:9/a\nhttp://127.0.0.1:9/b?x=1\n\n",
    );
    let u = "http://127.0.0.1:9/p";
    type Check = fn(&LoadSpec, &OhaInfo);
    let taken: Vec<(Vec<&str>, Check)> = vec![
        (vec!["-n", "10k", u], |s, _| {
            assert_eq!(s.load.requests, Some(10_000))
        }),
        (vec!["-c", "7", u], |s, _| assert_eq!(s.load.connections, 7)),
        (vec!["-p", "8", "--http2", u], |s, _| {
            assert_eq!((s.load.pipeline, s.load.protocol.http2), (8, true))
        }),
        (vec!["-p", "8", u], |s, _| assert_eq!(s.load.pipeline, 1)),
        (vec!["-z", "3s", u], |s, _| {
            assert_eq!(
                (s.load.duration, s.load.requests),
                (Some(Duration::from_secs(3)), None)
            )
        }),
        (vec!["-z", "3s", "-n", "50", u], |s, _| {
            assert_eq!(s.load.requests, Some(50))
        }),
        (vec!["-q", "250", u], |s, i| {
            assert!(
                matches!(s.load.shape, Shape::Rate { rate, gaps: Gaps::Even } if rate == 250.0)
            );
            assert!(!i.corrected);
        }),
        (vec!["-q", "250", "--latency-correction", u], |_, i| {
            assert!(i.corrected)
        }),
        (vec!["--latency-correction", u], |_, i| {
            assert!(!i.corrected)
        }),
        (
            vec!["--burst-delay", "100ms", "--burst-rate", "5", u],
            |s, _| {
                assert!(
                    matches!(s.load.shape, Shape::Rate { rate, gaps: Gaps::Burst(5) } if (rate - 50.0).abs() < 1e-9)
                )
            },
        ),
        (vec!["--burst-delay", "2s", u], |s, _| {
            assert!(
                matches!(s.load.shape, Shape::Rate { rate, gaps: Gaps::Burst(1) } if rate == 0.5)
            )
        }),
        (vec!["-q", "10", "--burst-delay", "2s", u], |s, _| {
            assert!(matches!(s.load.shape, Shape::Rate { rate, gaps: Gaps::Even } if rate == 10.0))
        }),
        (
            vec![
                "--rand-regex-url",
                "--max-repeat",
                "2",
                "http://127\\.0\\.0\\.1:9/[a-z]{3}",
            ],
            |s, _| {
                assert!(s.hooks.is_some());
                assert_eq!(s.target.url, "http://127\\.0\\.0\\.1:9/[a-z]{3}");
            },
        ),
        (vec!["--no-tui", "--fps", "30", u], |_, _| {}),
        (vec!["-m", "POST", u], |s, _| {
            assert!(request_text(s).starts_with("POST /p HTTP/1.1\r\n"))
        }),
        (vec!["--method", "PUT", u], |s, _| {
            assert!(request_text(s).starts_with("PUT /p "))
        }),
        (vec!["-H", "X-A: 1", "-H", "X-B: 2", u], |s, _| {
            let w = request_text(s);
            assert!(w.contains("X-A: 1\r\n") && w.contains("X-B: 2\r\n"), "{w}")
        }),
        (vec!["-t", "2s", u], |s, _| {
            assert_eq!(s.load.timeout, Some(Duration::from_secs(2)))
        }),
        (vec!["--connect-timeout", "1s", u], |s, _| {
            assert_eq!(s.load.connect_timeout, Duration::from_secs(1))
        }),
        (vec!["-A", "text/plain", u], |s, _| {
            assert!(request_text(s).contains("Accept: text/plain\r\n"))
        }),
        (vec!["-d", "hello", u], |s, _| {
            let w = request_text(s);
            assert!(
                w.ends_with("\r\n\r\nhello") && w.contains("Content-Length: 5\r\n"),
                "{w}"
            )
        }),
        (vec!["-T", "application/json", u], |s, _| {
            assert!(request_text(s).contains("Content-Type: application/json\r\n"))
        }),
        (vec!["-a", "user:pw", u], |s, _| {
            // base64("user:pw")
            assert!(request_text(s).contains("Authorization: Basic dXNlcjpwdw==\r\n"))
        }),
        (vec!["--http-version", "2", u], |s, _| {
            assert!(s.load.protocol.http2)
        }),
        (vec!["--http-version", "1.1", u], |s, _| {
            assert!(!s.load.protocol.http2)
        }),
        (
            vec!["--http-version", "3", "-p", "4", "https://127.0.0.1:9/"],
            |s, _| {
                assert!(s.load.protocol.http3.is_some() && !s.load.protocol.http2);
                assert_eq!(s.load.pipeline, 4);
            },
        ),
        (vec!["--host", "example.test", u], |s, _| {
            let w = request_text(s);
            assert!(
                w.contains("Host: example.test\r\n") && !w.contains("127.0.0.1"),
                "{w}"
            )
        }),
        (vec!["--disable-compression", u], |s, _| {
            assert!(!request_text(s).contains("Accept-Encoding"))
        }),
        (vec!["-r", "3", u], |s, _| assert_eq!(s.load.redirects, 3)),
        (vec!["--redirect", "3", "--http2", u], |s, _| {
            assert_eq!(s.load.redirects, 0)
        }),
        (vec!["--disable-keepalive", u], |s, _| {
            assert!(!s.load.keepalive);
            assert!(request_text(s).contains("Connection: close\r\n"));
        }),
        (vec!["--no-pre-lookup", u], |_, _| {}),
        (vec!["--ipv4", u], |s, _| {
            let Address::Tcp(a) = &s.target.address else {
                panic!()
            };
            assert!(a.iter().all(|a| a.is_ipv4()));
        }),
        (
            vec!["--connect-to", "127.0.0.1:9:127.0.0.2:7070", u],
            |s, _| {
                let Address::Tcp(a) = &s.target.address else {
                    panic!()
                };
                assert_eq!(a[0].to_string(), "127.0.0.2:7070");
                assert!(request_text(s).contains("Host: 127.0.0.1:9\r\n"));
            },
        ),
        (vec!["--no-color", u], |_, _| {}),
        (vec!["--unix-socket", "/tmp/s.sock", u], |s, _| {
            assert!(matches!(s.target.address, Address::Unix(_)))
        }),
        (vec!["--output-format", "csv", u], |s, _| {
            assert!(s.record_requests)
        }),
        (
            vec!["--output-format", "json", "-o", "r.json", u],
            |s, _| assert!(!s.record_requests),
        ),
        (vec!["-j", u], |_, _| {}),
        (vec!["-u", "ms", u], |_, i| {
            assert_eq!(i.unit, Some(TimeUnit::Ms))
        }),
        (vec!["--time-unit", "s", u], |_, i| {
            assert_eq!(i.unit, Some(TimeUnit::S))
        }),
        (vec!["--worker-threads", "3", u], |s, _| {
            assert_eq!(s.load.threads, 3)
        }),
        (vec!["--insecure", "https://127.0.0.1:9/"], |s, _| {
            assert!(s.tls.is_some())
        }),
        (vec!["-x", "http://127.0.0.1:3128", u], |s, _| {
            assert!(s.proxy.is_some())
        }),
    ];
    for (argv, check) in &taken {
        let (s, info) = spec_of(argv).unwrap_or_else(|e| panic!("{argv:?}: {}", e.message));
        check(&s, &info);
    }
    // The ones that read files.
    let (s, _) = spec_of(&["-D", &body, "-m", "POST", u]).unwrap();
    assert!(request_text(&s).ends_with("\r\n\r\n{\"a\":1}"));
    let (s, _) = spec_of(&["-Z", &lines, "-m", "POST", u]).unwrap();
    let bodies: Vec<String> = (s.load.variety.iter())
        .map(|r| {
            request_text_of(r)
                .rsplit("\r\n\r\n")
                .next()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(bodies, ["one", "two", "three"]);
    let (s, _) = spec_of(&["--urls-from-file", "-d", "x", &urls]).unwrap();
    let lines: Vec<String> = (s.load.variety.iter())
        .map(|r| request_text_of(r).lines().next().unwrap().to_string())
        .collect();
    assert_eq!(lines, ["GET /a HTTP/1.1", "GET /b?x=1 HTTP/1.1"]);
    assert!(s
        .load
        .variety
        .iter()
        .all(|r| request_text_of(r).ends_with("\r\n\r\nx")));

    for (argv, flag) in [
        (vec!["-w", "-z", "1s", u], "-w"),
        (vec!["-F", "a=b", u], "-F"),
        (vec!["--aws-sigv4", "aws:amz:eu:s3", u], "--aws-sigv4"),
        (vec!["--aws-session", "t", u], "--aws-session"),
        (vec!["--proxy-header", "a: b", u], "--proxy-header"),
        (vec!["--proxy-http-version", "2", u], "--proxy-http-version"),
        (vec!["--proxy-http2", u], "--proxy-http2"),
        (
            vec!["--stats-success-breakdown", u],
            "--stats-success-breakdown",
        ),
        (vec!["--db-url", "t.db", u], "--db-url"),
        (vec!["--debug", u], "--debug"),
        (vec!["--http-version", "1.0", u], "--http-version 1.0"),
        (vec!["--http-version", "3", u], "--http-version 3"),
        (vec!["-c", "0", u], "-c 0"),
        (vec!["-q", "0", u], "-q 0"),
        (vec!["-a", "nocolon", u], "-a"),
        (vec!["--connect-to", "a:b", u], "--connect-to"),
        (vec!["-u", "weeks", u], "--time-unit"),
        (vec!["--output-format", "xml", u], "--output-format"),
        (
            vec!["--concurency", "2", u],
            "--concurency: not a flag of oha",
        ),
        (vec![], "give a URL"),
    ] {
        let Err(e) = spec_of(&argv) else {
            panic!("{argv:?} accepted")
        };
        assert!(e.message.contains(flag), "{argv:?}: {}", e.message);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn request_text_of(r: &Request) -> String {
    String::from_utf8_lossy(&r.bytes).into_owned()
}

#[test]
fn inert_flags_are_said() {
    let argv: Vec<String> = ["--fps", "10", "--no-pre-lookup", "http://127.0.0.1:9/"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let (_, notes) = DIALECT.parse::<OhaArgs>(&argv).unwrap();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(notes[0].starts_with("--fps: "), "{notes:?}");
}

#[test]
fn connect_to_pairs_split_with_brackets() {
    assert_eq!(
        common::split_pair("example.org:443:localhost:8443"),
        Some((("example.org", "443"), ("localhost", "8443")))
    );
    assert_eq!(
        common::split_pair("[::1]:80:[::2]:81"),
        Some((("[::1]", "80"), ("[::2]", "81")))
    );
    assert_eq!(common::split_pair("a:1:b"), None);
    assert_eq!(common::split_pair("a:1:b:2:c"), None);
}
