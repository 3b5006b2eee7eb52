//! ghz's flags as the run they make, without a network.

use super::*;

fn proto(name: &str) -> String {
    format!("{}/../../proto/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn args(argv: &[&str]) -> Result<GhzArgs, FlagError> {
    let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
    DIALECT.parse::<GhzArgs>(&argv).map(|(a, _)| a)
}

/// The run of `flags` calling `call` of `file` at 127.0.0.1:9, plaintext unless the
/// flags leave `--insecure` out (`tls`).
fn run_of(
    file: &str,
    call: &str,
    flags: &[&str],
    tls: bool,
) -> Result<(LoadSpec, Info), FlagError> {
    let p = proto(file);
    let mut argv = vec!["--proto", &p, "--call", call];
    if !tls {
        argv.push("--insecure");
    }
    argv.extend_from_slice(flags);
    argv.push("127.0.0.1:9");
    let a = args(&argv)?;
    let inputs = Ghz::inputs(&a)?;
    translate(&a, inputs)
}

fn hello(flags: &[&str]) -> Result<LoadSpec, FlagError> {
    run_of(
        "helloworld.proto",
        "helloworld.Greeter.SayHello",
        flags,
        false,
    )
    .map(|r| r.0)
}

fn wire(r: &stampede_engine::Request) -> String {
    String::from_utf8_lossy(&r.bytes).into_owned()
}

#[test]
fn defaults_are_ghzs() {
    let s = hello(&[]).unwrap();
    // 50 calls in flight on one connection, 200 in all, a 20 s deadline.
    assert_eq!((s.load.connections, s.load.pipeline), (1, 50));
    assert_eq!((s.load.requests, s.load.duration), (Some(200), None));
    assert_eq!(s.load.threads, 1);
    assert_eq!(s.load.timeout, Some(Duration::from_secs(20)));
    assert_eq!(s.load.connect_timeout, Duration::from_secs(10));
    assert!(s.load.protocol.http2 && s.tls.is_none());
    assert_eq!(
        s.load.streams.stream,
        Some(stampede_engine::StreamMode::Grpc)
    );
    assert!(matches!(s.load.shape, Shape::Closed));
    assert!(!s.record_requests);
    assert_eq!(
        s.target.url,
        "http://127.0.0.1:9/helloworld.Greeter/SayHello"
    );
    let w = wire(&s.load.request).to_ascii_lowercase();
    assert!(w.starts_with("post /helloworld.greeter/sayhello "), "{w}");
    assert!(w.contains("grpc-timeout: 20000000u\r\n"), "{w}");
    assert!(w.contains("content-type: application/grpc\r\n"), "{w}");
    // An empty message: the prefix alone.
    assert!(s
        .load
        .request
        .bytes
        .ends_with(b"\r\n\r\n\x00\x00\x00\x00\x00"));
}

#[test]
fn every_documented_flag_is_taken_or_refused_by_name() {
    type Check = fn(&LoadSpec);
    let taken: Vec<(Vec<&str>, Check)> = vec![
        (vec!["-c", "60", "--connections", "3"], |s| {
            assert_eq!((s.load.connections, s.load.pipeline), (3, 20))
        }),
        (vec!["-c=4", "--connections=2", "--cpus", "8"], |s| {
            // At most a thread per connection.
            assert_eq!(s.load.threads, 2)
        }),
        (vec!["-n", "1000", "-x", "2s"], |s| {
            assert_eq!(
                (s.load.requests, s.load.duration),
                (Some(1000), Some(Duration::from_secs(2)))
            )
        }),
        (vec!["-z", "1m30s", "-n", "5"], |s| {
            assert_eq!(
                (s.load.requests, s.load.duration),
                (None, Some(Duration::from_secs(90)))
            )
        }),
        (vec!["-r", "200"], |s| {
            assert!(matches!(s.load.shape, Shape::Rate { rate, gaps: Gaps::Even } if rate == 200.0))
        }),
        (vec!["-t", "0"], |s| {
            assert_eq!(s.load.timeout, None);
            assert!(!wire(&s.load.request).contains("grpc-timeout"));
        }),
        (vec!["-t", "250ms"], |s| {
            assert!(wire(&s.load.request).contains("grpc-timeout: 250000u\r\n"))
        }),
        (vec!["--connect-timeout", "3s"], |s| {
            assert_eq!(s.load.connect_timeout, Duration::from_secs(3))
        }),
        (
            vec!["-m", r#"{"x-id": "7", "trace": "{{.MethodName}}"}"#],
            |s| {
                let w = wire(&s.load.request);
                assert!(
                    w.contains("x-id: 7\r\n") && w.contains("trace: SayHello\r\n"),
                    "{w}"
                );
            },
        ),
        (
            vec!["-d", r#"{"name": "{{ .MethodName }} of {{.ServiceName}}"}"#],
            |s| {
                assert!(s
                    .load
                    .request
                    .bytes
                    .ends_with(b"\x0a\x13SayHello of Greeter"))
            },
        ),
        (
            vec![
                "-d",
                r#"{"name": "{{.RequestNumber}}"}"#,
                "-m",
                r#"{"id": "{{.UUID}}"}"#,
            ],
            |s| {
                // Made call by call: one request without a body or its length.
                assert!(s.calls.is_some() && s.load.variety.is_empty());
                let w = wire(&s.load.request);
                assert!(
                    w.ends_with("\r\n\r\n") && !w.contains("content-length"),
                    "{w}"
                );
            },
        ),
        (vec!["-d", r#"[{"name": "a"}, {"name": "b"}]"#], |s| {
            // Unary calls take the messages in turn.
            assert_eq!(s.load.variety.len(), 2);
            assert!(s.load.variety[1].bytes.ends_with(b"\x0a\x01b"));
        }),
        (vec!["-e"], |s| {
            let w = wire(&s.load.request);
            assert!(w.contains("grpc-encoding: gzip\r\n"), "{w}");
            let body = &s.load.request.bytes[w.find("\r\n\r\n").unwrap() + 4..];
            // Flagged compressed; a gzip member follows the prefix.
            assert_eq!(&body[..1], b"\x01");
            assert_eq!(&body[5..7], b"\x1f\x8b");
        }),
        (vec!["--authority", "greeter.example"], |s| {
            assert!(wire(&s.load.request).contains("Host: greeter.example\r\n"))
        }),
        (vec!["-O", "csv"], |s| assert!(s.record_requests)),
        (vec!["-O", "json"], |s| assert!(s.record_requests)),
        (vec!["-O", "influx-summary"], |s| {
            assert!(!s.record_requests)
        }),
        (
            vec!["--async", "--keepalive", "30s", "--debug", "d.log"],
            |_| {},
        ),
        (
            vec!["--count-errors", "--name", "n", "--tags", r#"{"a": "b"}"#],
            |_| {},
        ),
        (
            vec![
                "--load-schedule",
                "const",
                "--concurrency-schedule",
                "const",
            ],
            |_| {},
        ),
    ];
    for (flags, check) in taken {
        let s = hello(&flags).unwrap_or_else(|e| panic!("{flags:?}: {}", e.message));
        check(&s);
    }
    let refused: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["-c", "50", "--connections", "3"],
            "multiple of --connections (e.g. 48)",
        ),
        (vec!["-c", "2", "--connections", "3"], "below --connections"),
        (
            vec!["--load-schedule", "step", "--load-step", "5"],
            "--load-step-duration",
        ),
        (vec!["--load-schedule", "line"], "give --load-step"),
        (
            vec!["--load-schedule", "line", "--load-step", "5", "-r", "9"],
            "-r is the const",
        ),
        (
            vec![
                "--load-schedule",
                "line",
                "--load-start",
                "9",
                "--load-step",
                "-1",
                "--load-end",
                "20",
            ],
            "never reaches it",
        ),
        (
            vec!["--load-schedule", "line", "--load-step", "-1"],
            "every rate of it is 0",
        ),
        (
            vec!["--concurrency-schedule", "line"],
            "calls in flight that change",
        ),
        (vec!["--load-schedule", "zigzag"], "const, step and line"),
        (vec!["-O", "html"], "stampede report --html"),
        (vec!["-O", "prometheus"], "--metrics-listen ADDR"),
        (
            vec!["-O", "xml"],
            "the formats are summary, csv, json, pretty",
        ),
        (vec!["--duration-stop", "wait"], "use close"),
        (
            vec!["-d", r#"{"name": "{{.RequestNumbr}}"}"#],
            "{{.RequestNumbr}}: not a call data template taken here",
        ),
        (vec!["-d", r#"{"name": "{{.UUID}}"}"#, "-b"], "give one"),
        (
            vec!["-B", "/dev/null", "-m", r#"{"id": "{{.UUID}}"}"#],
            "go with JSON call data",
        ),
        (vec!["-d", r#"{"name": "{{.MethodName"}"#], "never closed"),
        (vec!["-d", r#"{"nme": "x"}"#], "nme"),
        (vec!["-d", "{}", "-D", "f.json"], "give one"),
        (vec!["-m", r#"{"n": 1}"#], "-m: n's value 1 is not a string"),
        (vec!["-m", "[]"], "a JSON object of strings"),
        (
            vec!["--stream-call-count", "3"],
            "applies to client and bidirectional streams",
        ),
        (
            vec!["--skipTLS"],
            "--skipTLS applies to TLS, and --insecure asks for plaintext",
        ),
        (vec!["--config", "c.json"], "--config"),
        (
            vec!["--stream-interval", "10ms"],
            "applies to client and bidirectional",
        ),
        (
            vec!["--stream-call-duration", "1s"],
            "applies to client and bidirectional",
        ),
        (
            vec!["--reflect-metadata", "{}"],
            "goes with the reflection call",
        ),
        (vec!["--skipFirst", "10"], "every call"),
        (vec!["-n", "0"], "-n 0"),
    ];
    for (flags, want) in refused {
        let e = match hello(&flags) {
            Ok(_) => panic!("{flags:?} was taken"),
            Err(e) => e.message,
        };
        assert!(e.contains(want), "{flags:?}: {e}");
    }
}

#[test]
fn streams_tls_and_the_schema() {
    // A client stream sends --stream-call-count messages, the data's in turn.
    let (s, _) = run_of(
        "echo.proto",
        "stampede.v1.Echo/ClientStream",
        &[
            "-d",
            r#"[{"size": 1}, {"size": 2}]"#,
            "--stream-call-count",
            "3",
        ],
        false,
    )
    .unwrap();
    let w = &s.load.request.bytes;
    let body = &w[w.windows(4).position(|x| x == b"\r\n\r\n").unwrap() + 4..];
    assert_eq!(
        body,
        b"\x00\x00\x00\x00\x02\x10\x01\x00\x00\x00\x00\x02\x10\x02\x00\x00\x00\x00\x02\x10\x01"
    );
    // TLS unless --insecure; --cname is the name the certificate is checked against.
    let (s, _) = run_of(
        "helloworld.proto",
        "helloworld.Greeter.SayHello",
        &["--cname", "greeter.test", "--skipTLS"],
        true,
    )
    .unwrap();
    assert!(s.tls.is_some() && s.target.tls);
    assert_eq!(s.target.host, "greeter.test");
    assert!(s.target.url.starts_with("https://127.0.0.1:9/"));
    // No schema (the server's reflection asked, and nothing listens), a method that
    // is not there, a URL for a host.
    let e = args(&["--call", "a.B.C", "--insecure", "127.0.0.1:9"])
        .and_then(|a| Ghz::inputs(&a).map(|_| ()))
        .unwrap_err();
    assert!(
        e.message
            .contains("reflection at 127.0.0.1:9: cannot connect"),
        "{}",
        e.message
    );
    let e = run_of("helloworld.proto", "helloworld.Greeter.Nope", &[], false).unwrap_err();
    assert!(
        e.message.contains("helloworld.Greeter/SayHello"),
        "{}",
        e.message
    );
    let p = proto("helloworld.proto");
    let e = args(&[
        "--proto",
        &p,
        "--call",
        "helloworld.Greeter.SayHello",
        "http://h:1",
    ])
    .and_then(|a| Ghz::inputs(&a).map(|_| ()))
    .unwrap_err();
    assert!(e.message.contains("HOST:PORT"), "{}", e.message);
}

#[test]
fn binary_data_is_one_message_or_several_each_after_its_length() {
    let p = proto("helloworld.proto");
    let pool = grpc::Schema {
        protos: &[p],
        protoset: None,
        import_paths: &[],
    }
    .load()
    .unwrap();
    let m = grpc::method(&pool, "helloworld.Greeter/SayHello").unwrap();
    // name = "ab" and name = "c", each after its length.
    let two = b"\x04\x0a\x02ab\x03\x0a\x01c";
    let framed = grpc::binary_messages(&m, two, "-b").unwrap();
    assert_eq!(
        framed,
        vec![
            b"\x00\x00\x00\x00\x04\x0a\x02ab".to_vec(),
            b"\x00\x00\x00\x00\x03\x0a\x01c".to_vec()
        ]
    );
    // One message as it is.
    let one = b"\x0a\x02ab";
    let framed = grpc::binary_messages(&m, one, "-b").unwrap();
    assert_eq!(framed, vec![b"\x00\x00\x00\x00\x04\x0a\x02ab".to_vec()]);
    // Not a message at all.
    let e = grpc::binary_messages(&m, b"\x0a\x09ab", "-B f").unwrap_err();
    assert!(
        e.message
            .contains("-B f: neither one helloworld.HelloRequest"),
        "{}",
        e.message
    );
}

/// The steps of a paced run, as text.
fn paced(flags: &[&str]) -> Vec<String> {
    let s = hello(flags).unwrap_or_else(|e| panic!("{flags:?}: {}", e.message));
    match s.load.shape {
        Shape::Paced(p) => p.steps.iter().map(|s| s.to_string()).collect(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn step_and_line_schedules_are_rates_that_change() {
    // Up by 10 a second to 30, then held to the end of -z.
    let steps = [
        "--load-schedule",
        "step",
        "--load-start",
        "10",
        "--load-step",
        "10",
    ];
    let s = paced(
        &[
            &steps[..],
            &["--load-step-duration", "1s", "--load-end", "30", "-z", "5s"],
        ]
        .concat(),
    );
    assert_eq!(
        s,
        [
            "constantUsersPerSec(10).during(1s)",
            "constantUsersPerSec(20).during(1s)",
            "constantUsersPerSec(30).during(3s)"
        ]
    );
    // For --load-max-duration, then the last rate until -n's calls are made.
    let s = paced(
        &[
            &steps[..],
            &["--load-step-duration", "500ms", "--load-max-duration", "1s"],
        ]
        .concat(),
    );
    assert_eq!(s.len(), 3, "{s:?}");
    assert_eq!(s[1], "constantUsersPerSec(20).during(500ms)");
    assert!(s[2].starts_with("constantUsersPerSec(30).during("), "{s:?}");
    // Down to nothing: no arrivals after it.
    let down = [
        "--load-schedule",
        "step",
        "--load-start",
        "2",
        "--load-step",
        "-1",
    ];
    let s = paced(&[&down[..], &["--load-step-duration", "1s", "-z", "4s"]].concat());
    assert_eq!(
        s,
        [
            "constantUsersPerSec(2).during(1s)",
            "constantUsersPerSec(1).during(1s)",
            "nothingFor(2s)"
        ]
    );
    // A line: 50 more each second from 100 to 200, then 200 held.
    let line = [
        "--load-schedule",
        "line",
        "--load-start",
        "100",
        "--load-step",
        "50",
    ];
    let s = paced(&[&line[..], &["--load-end", "200", "-z", "5s"]].concat());
    assert_eq!(
        s,
        [
            "rampUsersPerSec(100).to(200).during(2s)",
            "constantUsersPerSec(200).during(3s)"
        ]
    );
}
