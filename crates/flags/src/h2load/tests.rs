//! h2load's flags as the run and report they make, without a network.

use super::*;

fn args(args: &[&str]) -> Result<H2loadArgs, FlagError> {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    DIALECT.parse::<H2loadArgs>(&args).map(|(a, _)| a)
}

/// The translation as the run contract makes it: flags checked, the target
/// resolved, then translated.
fn tr(
    a: &H2loadArgs,
    uris: &[String],
    timing: &[Duration],
    body: Option<Vec<u8>>,
) -> Result<(LoadSpec, H2loadInfo), FlagError> {
    check_flags(a, timing)?;
    translate(a, resolve_target(a, uris)?, uris, timing, body)
}

fn spec_of(argv: &[&str]) -> Result<(LoadSpec, H2loadInfo), FlagError> {
    let a = args(argv)?;
    tr(&a, &a.uris, &[], None)
}

#[test]
fn flags_become_the_run_h2load_would_make() {
    let (s, info) = spec_of(&[
        "-n",
        "100",
        "-c",
        "4",
        "-m",
        "10",
        "-t",
        "2",
        "http://127.0.0.1:9/p",
    ])
    .unwrap();
    assert!(s.load.protocol.http2);
    assert_eq!(
        (
            s.load.requests,
            s.load.connections,
            s.load.pipeline,
            s.load.threads
        ),
        (Some(100), 4, 10, 2)
    );
    assert_eq!(info.protocol, "h2c");
    let (s, info) = spec_of(&["--h1", "-D", "2", "http://127.0.0.1:9/"]).unwrap();
    assert!(!s.load.protocol.http2 && s.load.requests.is_none());
    assert_eq!(s.load.duration, Some(Duration::from_secs(2)));
    assert_eq!((info.protocol.as_str(), info.requests), ("http/1.1", None));
}

#[test]
fn impossible_combinations_name_the_flag() {
    for (args, flag) in [
        (&["-c", "1", "-t", "2", "http://127.0.0.1:9/"][..], "-c"),
        (&["-n", "2", "-c", "4", "http://127.0.0.1:9/"], "-n"),
        (&["-m", "0", "http://127.0.0.1:9/"], "-m"),
        (&["-r", "2", "-D", "3", "http://127.0.0.1:9/"], "-r"),
        (
            &["-r", "2", "-n", "5", "-c", "2", "http://127.0.0.1:9/"],
            "-r",
        ),
        (&["-p", "spdy", "http://127.0.0.1:9/"], "-p"),
        (&["--npn-list", "h4", "https://127.0.0.1:9/"], "--npn-list"),
        (
            &[
                "--alpn-list",
                "h3",
                "--max-udp-payload-size",
                "900",
                "https://127.0.0.1:9/",
            ],
            "--max-udp-payload-size 900",
        ),
        (&["--no-udp-gso", "http://127.0.0.1:9/"], "--no-udp-gso"),
        (&["-w", "0", "http://127.0.0.1:9/"], "-w"),
        (&["-w", "31", "http://127.0.0.1:9/"], "-w"),
        (&["-W", "0", "http://127.0.0.1:9/"], "-W"),
        (&["-f", "1K", "http://127.0.0.1:9/"], "-f"),
        (&["-f", "16M", "http://127.0.0.1:9/"], "-f"),
        (
            &["--header-table-size", "4G", "http://127.0.0.1:9/"],
            "--header-table-size",
        ),
        (
            &["--connect-to", "[::1", "http://127.0.0.1:9/"],
            "--connect-to",
        ),
        (
            &["--warm-up-time", "1", "http://127.0.0.1:9/"],
            "--warm-up-time",
        ),
        (&[][..], "URI"),
    ] {
        let Err(e) = spec_of(args) else {
            panic!("{args:?} accepted")
        };
        assert!(e.message.contains(flag), "{args:?}: {}", e.message);
    }
}

#[test]
fn a_timing_script_names_the_line_it_cannot_read() {
    let (at, uris) = timing_script("0\thttp://h:1/a\r\n\n0.001\t /b \n1500\t/c\n").unwrap();
    let us = Duration::from_micros;
    assert_eq!(at, [us(0), us(1), us(1_500_000)]);
    assert_eq!(uris, ["http://h:1/a", "/b", "/c"]);
    for (text, says) in [
        ("0\t/a\n5 /b\n", "line 2: no tab"),
        ("x\t/a\n", "line 1: offset \"x\" is not a number"),
        ("-1\t/a\n", "line 1: offset \"-1\""),
        ("inf\t/a\n", "line 1: offset"),
        (
            "10\t/a\n\n5\t/b\n",
            "line 3: offset 5 ms comes before the line above's (10.000 ms)",
        ),
        ("0\t\n", "line 1: no URI"),
        ("\n\n", "no lines"),
    ] {
        let e = timing_script(text).unwrap_err();
        assert!(e.0.starts_with(says), "{text:?}: {e}");
    }
}

/// Every flag of `h2load --help` (nghttp2 1.52): parsed into the run, or refused
/// with a message naming it.
#[test]
fn every_documented_flag_is_taken_or_refused_by_name() {
    let dir = std::env::temp_dir().join(format!("stampede-h2load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let list = dir.join("uris.txt");
    std::fs::write(&list, "http://127.0.0.1:9/a\n/b?x=1\n\nhttp://other:1/c\n").unwrap();
    let list = list.to_string_lossy().into_owned();
    let u = "http://127.0.0.1:9/p";
    type Check = fn(&LoadSpec);
    let taken: Vec<(Vec<&str>, Check)> = vec![
        (vec!["-n", "7", u], |s| assert_eq!(s.load.requests, Some(7))),
        (vec!["--requests=7", u], |s| {
            assert_eq!(s.load.requests, Some(7))
        }),
        (vec!["-c", "3", "-n", "9", u], |s| {
            assert_eq!(s.load.connections, 3)
        }),
        (vec!["--clients", "3", "-n", "3", u], |s| {
            assert_eq!(s.load.connections, 3)
        }),
        (vec!["-t", "2", "-c", "2", "-n", "2", u], |s| {
            assert_eq!(s.load.threads, 2)
        }),
        (vec!["--threads", "1", u], |s| assert_eq!(s.load.threads, 1)),
        (vec!["-m", "8", u], |s| assert_eq!(s.load.pipeline, 8)),
        (vec!["--max-concurrent-streams", "8", u], |s| {
            assert_eq!(s.load.pipeline, 8)
        }),
        (vec!["-f", "32K", u], |s| {
            assert_eq!(s.load.protocol.h2.max_frame, 32 << 10)
        }),
        (vec!["--max-frame-size", "16384", u], |s| {
            assert_eq!(s.load.protocol.h2.max_frame, 16384)
        }),
        (vec!["-w", "16", u], |s| {
            assert_eq!(s.load.protocol.h2.stream_window, 65535)
        }),
        (vec!["--window-bits", "30", u], |s| {
            assert_eq!(s.load.protocol.h2.stream_window, (1 << 30) - 1)
        }),
        (vec!["-W", "14", u], |s| {
            assert_eq!(s.load.protocol.h2.connection_window, 16383)
        }),
        (vec!["--connection-window-bits", "20", u], |s| {
            assert_eq!(s.load.protocol.h2.connection_window, (1 << 20) - 1)
        }),
        (vec!["--log-file", "l.txt", u], |s| {
            assert!(s.record_requests)
        }),
        (vec!["-H", "X-A: 1", u], |s| {
            assert!(String::from_utf8_lossy(&s.load.request.bytes).contains("X-A: 1\r\n"))
        }),
        (vec!["--header", "user-agent: h2load", u], |s| {
            let w = String::from_utf8_lossy(&s.load.request.bytes).into_owned();
            assert!(
                w.contains("User-Agent: h2load\r\n") && !w.contains("stampede/"),
                "{w}"
            )
        }),
        (vec!["-p", "http/1.1", u], |s| {
            assert!(!s.load.protocol.http2)
        }),
        (vec!["--no-tls-proto=h2c", u], |s| {
            assert!(s.load.protocol.http2)
        }),
        (vec!["-r", "2", "-c", "4", "-n", "8", u], |s| {
            assert!(
                matches!(s.load.shape, Shape::Sessions { count: 4, period: Some(Period::Deterministic(p)) } if p == 0.5)
            );
            assert_eq!(s.load.session.calls, 2);
        }),
        (vec!["--rate", "1", "--rate-period", "100ms", u], |s| {
            assert!(
                matches!(s.load.shape, Shape::Sessions { count: 1, period: Some(Period::Deterministic(p)) } if (p - 0.1).abs() < 1e-9)
            )
        }),
        (vec!["-D", "3", u], |s| {
            assert_eq!(s.load.duration, Some(Duration::from_secs(3)))
        }),
        (
            vec!["--duration", "500ms", "--warm-up-time", "1s", u],
            |s| assert_eq!(s.load.duration, Some(Duration::from_millis(500))),
        ),
        (vec!["-N", "2s", u], |s| {
            assert_eq!(s.load.timeout, Some(Duration::from_secs(2)))
        }),
        (vec!["--connection-inactivity-timeout", "250ms", u], |s| {
            assert_eq!(s.load.timeout, Some(Duration::from_millis(250)))
        }),
        (vec!["-T", "5", u], |s| {
            assert_eq!(s.load.last_wait, Some(Duration::from_secs(5)))
        }),
        (vec!["--connection-active-timeout", "300ms", u], |s| {
            assert_eq!(s.load.last_wait, Some(Duration::from_millis(300)))
        }),
        (vec!["-B", "http://127.0.0.1:10", u], |s| {
            assert_eq!((s.target.port, s.target.path.as_str()), (10, "/p"))
        }),
        (vec!["--base-uri", "unix:/tmp/x.sock", u], |s| {
            assert_eq!(s.target.address, Address::Unix("/tmp/x.sock".into()));
            assert!(
                String::from_utf8_lossy(&s.load.request.bytes).contains("Host: 127.0.0.1:9\r\n")
            );
        }),
        (
            vec!["--npn-list", "http/1.1", "https://127.0.0.1:9/"],
            |s| assert!(!s.load.protocol.http2),
        ),
        (
            vec!["--npn-list", "h2,http/1.1", "https://127.0.0.1:9/"],
            |s| assert!(s.load.protocol.http2),
        ),
        (vec!["--h1", u], |s| assert!(!s.load.protocol.http2)),
        (vec!["--header-table-size", "8K", u], |s| {
            assert_eq!(s.load.protocol.h2.header_table, 8192)
        }),
        (vec!["--encoder-header-table-size", "0", u], |s| {
            assert_eq!(s.load.protocol.h2.encoder_table, 0)
        }),
        (vec!["--connect-to", "127.0.0.2:7", u], |s| {
            assert_eq!(
                s.target.address,
                Address::Tcp(vec!["127.0.0.2:7".parse().unwrap()])
            );
            assert!(
                String::from_utf8_lossy(&s.load.request.bytes).contains("Host: 127.0.0.1:9\r\n")
            );
        }),
        (vec!["--rps", "5", "-c", "2", "-n", "2", u], |s| {
            assert!(matches!(s.load.shape, Shape::Rate { rate, .. } if rate == 10.0))
        }),
        (vec!["-v", u], |s| assert!(s.load.protocol.http2)),
        (
            vec!["--verbose", u, "/second", "http://elsewhere:1/third?q"],
            |s| {
                let paths: Vec<&str> = s.load.variety.iter().map(|r| r.target()).collect();
                assert_eq!(paths, ["/p", "/second", "/third?q"]);
            },
        ),
    ];
    for (argv, check) in taken {
        let (s, _) = spec_of(&argv).unwrap_or_else(|e| panic!("{argv:?}: {}", e.message));
        check(&s);
    }
    // -i and --input-file: the file's URIs in turn, the command line's unused.
    for flag in ["-i", "--input-file"] {
        let a = args(&[flag, &list, "http://127.0.0.1:9/unused"]).unwrap();
        let (u, at) = uris(&a).unwrap();
        assert!(at.is_empty());
        let (s, _) = tr(&a, &u, &at, None).unwrap();
        assert_eq!(s.load.variety.len(), 3);
        assert!(s.load.variety[1].bytes.starts_with(b"GET /b?x=1 "));
    }
    // --timing-script-file: a session per client, all at once (or at -r's rate),
    // each sending the script's lines at their offsets; -n lines of it.
    let script = dir.join("timing.txt");
    std::fs::write(&script, "0\thttp://127.0.0.1:9/a\n2.5\t/b\n2.5\t/c\n").unwrap();
    let script = script.to_string_lossy().into_owned();
    let timed = |argv: &[&str]| {
        let a = args(argv).unwrap();
        let (u, at) = uris(&a)?;
        tr(&a, &u, &at, None)
    };
    let (s, info) = timed(&["--timing-script-file", &script, "-c", "3"]).unwrap();
    let at: Vec<_> = s.load.script.iter().map(|st| st.at).collect();
    let us = Duration::from_micros;
    assert_eq!(at, [Some(us(0)), Some(us(2500)), Some(us(2500))]);
    assert!(s.load.script[1].request.bytes.starts_with(b"GET /b "));
    assert!(
        matches!(&s.load.shape, Shape::Users(p) if p.steps == [inject::InjectionStep::AtOnce(3)])
    );
    assert_eq!((s.load.requests, info.requests), (None, Some(9)));
    let (s, info) = timed(&["--timing-script-file", &script, "-n", "2", "-r", "1"]).unwrap();
    assert_eq!(s.load.script.len(), 2);
    assert!(matches!(s.load.shape, Shape::Sessions { count: 1, .. }));
    assert_eq!(info.requests, Some(2));
    for (argv, says) in [
        (vec!["-D", "2"], "-D, --duration"),
        (vec!["--rps", "5"], "--rps"),
        (vec!["-i", "x.txt"], "-i, --input-file"),
    ] {
        let mut argv = argv;
        argv.extend(["--timing-script-file", &script]);
        let e = timed(&argv)
            .err()
            .unwrap_or_else(|| panic!("{argv:?} accepted"));
        assert!(
            e.message.contains(says) && e.message.contains("--timing-script-file"),
            "{argv:?}: {}",
            e.message
        );
    }
    // -d and --data: POST, and over HTTP/1.1 one request in flight.
    for flag in ["-d", "--data"] {
        let a = args(&[flag, "f", "--h1", "-m", "8", u]).unwrap();
        let (s, _) = tr(&a, &a.uris, &[], Some(b"x".to_vec())).unwrap();
        assert_eq!(
            (s.load.request.method.as_str(), s.load.pipeline),
            ("POST", 1)
        );
        let a = args(&[flag, "f", "-m", "8", u]).unwrap();
        let (s, _) = tr(&a, &a.uris, &[], Some(b"x".to_vec())).unwrap();
        assert_eq!(s.load.pipeline, 8);
    }
    for (argv, flag) in [
        (
            vec!["--ciphers", "ECDHE-RSA-AES128-GCM-SHA256", u],
            "--ciphers",
        ),
        (
            vec!["--tls13-ciphers=TLS_AES_128_GCM_SHA256", u],
            "--tls13-ciphers",
        ),
        (vec!["--qlog-file-base", "q", u], "--qlog-file-base"),
        (vec!["--groups", "X25519", u], "--groups"),
        (vec!["--ktls", u], "--ktls"),
        (
            vec!["--clinets", "2", u],
            "--clinets: not a flag of h2load; did you mean --clients?",
        ),
    ] {
        let Err(e) = spec_of(&argv) else {
            panic!("{argv:?} accepted")
        };
        assert!(e.message.starts_with(flag), "{argv:?}: {}", e.message);
    }
    // --version and -h/--help print and exit 0.
    for flag in ["--version", "-h", "--help"] {
        let e = args(&[flag]).unwrap_err();
        // The text printed is the answer: the help, or the version.
        assert_eq!(e.code, 0, "{flag}");
        assert!(
            e.message.starts_with("stampede ") || e.message.contains("Usage:"),
            "{flag}: {}",
            e.message
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn h3_first_in_the_alpn_list_speaks_http3_with_its_udp_settings() {
    let u = "https://127.0.0.1:1/";
    let (s, info) = spec_of(&[
        "--alpn-list",
        "h3,h2",
        "--max-udp-payload-size",
        "1350",
        "--header-table-size",
        "4096",
        "--no-udp-gso",
        "-m",
        "8",
        u,
    ])
    .unwrap();
    let h3 = s.load.protocol.http3.expect("HTTP/3");
    assert_eq!((h3.max_udp_payload, h3.header_table), (1350, 4096));
    assert!(!h3.gso, "--no-udp-gso sends a datagram a call");
    assert!(!s.load.protocol.http2);
    assert_eq!(s.load.pipeline, 8);
    assert_eq!(info.protocol, "h3");
    // h3 later in the list: HTTP/2 over TCP, as h2load chooses by the first.
    let (s, _) = spec_of(&["--alpn-list", "h3", u]).unwrap();
    assert!(
        s.load.protocol.http3.expect("HTTP/3").gso,
        "GSO unless refused"
    );
    let (s, info) = spec_of(&["--npn-list", "h2,h3", u]).unwrap();
    assert!(s.load.protocol.http2 && s.load.protocol.http3.is_none());
    assert_eq!(info.protocol, "h2");
}
