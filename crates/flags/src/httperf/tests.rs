//! httperf's flags as the sessions they make, every documented option taken or refused by name.

use super::*;

fn spec_of(args: &[&str]) -> Result<LoadSpec, FlagError> {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let (a, _) = DIALECT.parse::<HttperfArgs>(&args)?;
    let (url, uri) = url_of(&a)?;
    let inputs = (Target::parse(&url).unwrap(), uri, Files::read(&a)?);
    Httperf::translate(&a, inputs).map(|(spec, _)| spec)
}

#[test]
fn flags_become_the_sessions_httperf_would_make() {
    let s = spec_of(&[
        "--server",
        "127.0.0.1",
        "--port",
        "9",
        "--uri",
        "/p",
        "--num-conns",
        "20",
        "--num-calls",
        "4",
        "--burst-length",
        "2",
        "--rate",
        "50",
    ])
    .unwrap();
    assert!(matches!(
        s.load.shape,
        Shape::Sessions { count: 20, period: Some(Period::Deterministic(p)) } if p == 0.02
    ));
    assert_eq!((s.load.session.calls, s.load.session.burst), (4, 2));
    assert_eq!(
        String::from_utf8(s.load.request.bytes).unwrap(),
        "GET /p HTTP/1.1\r\nUser-Agent: httperf/0.9.0\r\nHost: 127.0.0.1\r\n\r\n"
    );
    // --wsess N1,N2,X: N1 sessions of N2 calls, X seconds of think time.
    let s = spec_of(&["--server", "127.0.0.1", "--port", "9", "--wsess", "5,3,0.5"]).unwrap();
    assert!(matches!(s.load.shape, Shape::Sessions { count: 5, .. }));
    assert_eq!(s.load.session.calls, 3);
    assert_eq!(s.load.session.think, Duration::from_millis(500));
}

#[test]
fn impossible_values_name_the_flag() {
    for (args, flag) in [
        (&["--num-conns", "0"][..], "--num-conns"),
        (&["--rate=-1"], "--rate"),
        (&["--http-version", "2"], "--http-version"),
    ] {
        let e = spec_of(args).unwrap_err();
        assert!(e.message.contains(flag), "{args:?}: {}", e.message);
    }
}

/// Every option of httperf's usage (0.9.0): parsed into the run (also as a unique
/// prefix), accepted with a note, or refused with a message naming it.
#[test]
fn every_documented_option_is_taken_or_refused_by_name() {
    let base = ["--server", "127.0.0.1", "--port", "9"];
    let run = |more: &[&str]| {
        let mut argv: Vec<&str> = base.to_vec();
        argv.extend_from_slice(more);
        let args: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        let (a, notes) = DIALECT.parse::<HttperfArgs>(&args)?;
        let (url, uri) = url_of(&a)?;
        let inputs = (Target::parse(&url).unwrap(), uri, Files::read(&a)?);
        Httperf::translate(&a, inputs).map(|(s, _)| (s, notes))
    };
    for argv in [
        &["--add-header", "X-A: 1\n"][..],
        &["--burst-length", "2", "--num-calls", "4"],
        &["--http-version", "1.0"],
        &["--method", "POST"],
        &["--no-host-hdr"],
        &["--num-calls=3"],
        &["--num-conns", "5"],
        &["--period", "e0.01"],
        &["--rate", "100"],
        &["--ssl"],
        &["--timeout", "2"],
        &["--uri", "/x"],
        &["--wsess", "10,5,0.5"],
        &["--send-buffer", "4096", "--recv-buffer", "16384"],
        &["--close-with-reset"],
        &["--server-name", "example.test"],
        // Unique prefixes, as httperf's getopt_long takes them.
        &["--num-co", "5", "--bur=2", "--ti", "2", "--wsess", "3,4,0"],
    ] {
        run(argv).unwrap_or_else(|e| panic!("{argv:?}: {}", e.message));
    }
    let (s, _) = run(&["--num-co", "5", "--ra=50"]).unwrap();
    assert!(matches!(s.load.shape, Shape::Sessions { count: 5, .. }));
    assert!(s.load.socket.is_default());
    let (s, _) = run(&["--send-buf=4096", "--recv-buffer", "16384", "--close-w"]).unwrap();
    assert_eq!(
        (s.load.socket.send_buffer, s.load.socket.recv_buffer),
        (Some(4096), Some(16384))
    );
    assert!(s.load.socket.reset_on_close);
    let (s, _) = run(&[
        "--wsess",
        "4,6,0",
        "--burst-length",
        "3",
        "--failure-status",
        "503",
        "--retry-on-failure",
        "--max-piped-calls",
        "2",
    ])
    .unwrap();
    assert_eq!(
        (
            s.load.session.fail_status,
            s.load.session.retry,
            s.load.session.max_piped
        ),
        (Some(503), true, 2)
    );
    // --wset: a file per request, walked over the run's calls, sessions included.
    for more in [&[][..], &["--wsess", "2,2,0"]] {
        let mut argv = vec!["--uri", "/ws/", "--wset", "1024,0.25"];
        argv.extend_from_slice(more);
        let (s, _) = run(&argv).unwrap();
        assert_eq!(s.load.variety.len(), 1024);
        assert!(s.load.variety[103]
            .bytes
            .starts_with(b"GET /ws/0/1/0/3.html HTTP/1.1\r\n"));
        assert_eq!(
            s.load.walk,
            Some(stampede_engine::Walk {
                rate: 0.25,
                once: false
            })
        );
    }
    // --wlog: the file's URIs (NUL-separated), call i sending the i-th.
    let wlog = std::env::temp_dir().join(format!("stampede-wlog-{}", std::process::id()));
    std::fs::write(&wlog, "/a\0/b?x=1\0\0/c\0").unwrap();
    for (b, once) in [("y", false), ("n", true)] {
        let arg = format!("--wlog={b},{}", wlog.display());
        let (s, _) = run(&[&arg]).unwrap();
        let walk = s.load.walk.unwrap();
        assert_eq!((walk.rate, walk.once), (1.0, once));
        let sent: Vec<String> = (0..4)
            .map(|i| {
                s.load.variety[walk.index(i, s.load.variety.len())]
                    .target()
                    .to_string()
            })
            .collect();
        assert_eq!(sent, ["/a", "/b?x=1", "/c", "/a"]);
    }
    std::fs::write(&wlog, "\0\0").unwrap();
    let arg = format!("--wlog=n,{}", wlog.display());
    assert!(run(&[&arg]).unwrap_err().message.contains("has no URIs"));
    let _ = std::fs::remove_file(&wlog);
    assert_eq!(wset_uri("/w", 0, 1), "/w.html");
    assert_eq!(wset_uri("/w", 9, 10), "/w/9.html");
    assert_eq!(wset_uri("/w", 10, 11), "/w/1/0.html");
    for flag in ["--session-cookies", "--session-cookie"] {
        let (s, _) = run(&[flag, "--wsess", "2,2,0"]).unwrap();
        assert!(s.load.session.cookies, "{flag}");
    }
    let log = std::env::temp_dir().join(format!("stampede-sesslog-{}", std::process::id()));
    std::fs::write(
        &log,
        "/a think=1\n  /b\n  /c\n\n/d method=POST contents='x'\n",
    )
    .unwrap();
    let arg = format!("--wsesslog=7,0.5,{}", log.display());
    let (s, _) = run(&[&arg, "--rate", "10"]).unwrap();
    assert!(matches!(s.load.shape, Shape::Sessions { count: 7, .. }));
    let lines: Vec<String> = (s.load.script.iter())
        .map(|st| {
            let text = String::from_utf8_lossy(&st.request.bytes).into_owned();
            text.lines().next().unwrap().to_string()
        })
        .collect();
    assert_eq!(
        lines,
        [
            "GET /a HTTP/1.1",
            "GET /b HTTP/1.1",
            "GET /c HTTP/1.1",
            "POST /d HTTP/1.1"
        ]
    );
    assert!(String::from_utf8_lossy(&s.load.script[3].request.bytes).ends_with("\r\n\r\nx"));
    assert!(s.load.script[3].new_session && s.load.script[2].follows && !s.load.script[1].follows);
    let bad = format!("--wsesslog=1,0,{}", log.with_extension("missing").display());
    let Err(e) = run(&[&bad]) else {
        panic!("a missing file read")
    };
    assert!(
        e.message.starts_with("--wsesslog: cannot read"),
        "{}",
        e.message
    );
    let _ = std::fs::remove_file(&log);
    // The printers' flags say what to print (the binary's hooks print it); without
    // them nothing is.
    let printed = |more: &[&str]| {
        let mut argv: Vec<String> = base.iter().map(|s| s.to_string()).collect();
        argv.extend(more.iter().map(|s| s.to_string()));
        let (a, _) = DIALECT.parse::<HttperfArgs>(&argv).unwrap();
        printed(&a).unwrap_or_else(|e| panic!("{more:?}: {}", e.message))
    };
    let p = printed(&["--print-req"]);
    assert!(p.request.header && p.request.body && !p.reply.any());
    let p = printed(&["--print-reply=header"]);
    assert!(p.reply.header && !p.reply.body && !p.request.any());
    let p = printed(&["--print-request=body", "--wsess", "2,2,0"]);
    assert!(!p.request.header && p.request.body);
    assert_eq!(printed(&[]), Printed::default());
    let (s, _) = run(&["--server-name", "example.test"]).unwrap();
    assert!(String::from_utf8_lossy(&s.load.request.bytes).contains("\r\nHost: example.test\r\n"));
    for (argv, note) in [
        (&["--hog"][..], "--hog: "),
        (&["--client", "0/1"], "--client: "),
        (&["--think-timeout", "1"], "--think-timeout: "),
        (&["--verbose"], "--verbose: "),
        (&["--debug", "1"], "--debug: "),
        (&["-d", "2"], "--debug: "),
        (&["-v"], "--verbose: "),
        (
            &["--max-connections", "4", "--wsess", "2,2,0"],
            "--max-connections: ",
        ),
    ] {
        let (_, notes) = run(argv).unwrap_or_else(|e| panic!("{argv:?}: {}", e.message));
        assert!(
            notes.len() == 1 && notes[0].starts_with(note),
            "{argv:?}: {notes:?}"
        );
    }
    for (argv, flag) in [
        (
            &["--failure-status", "500"][..],
            "--failure-status applies to session",
        ),
        (
            &["--max-connections", "4"],
            "--max-connections applies to session",
        ),
        (
            &["--max-piped-calls", "4"],
            "--max-piped-calls applies to session",
        ),
        (
            &["--max-piped-calls", "0", "--wsess", "1,1,0"],
            "--max-piped-calls and",
        ),
        (
            &["--retry-on-failure", "--wsess", "1,1,0"],
            "--retry-on-failure retries the calls answered with --failure-status",
        ),
        (
            &["--wsess", "1,1,0", "--wsesslog", "1,0,f"],
            "--wsess and --wsesslog",
        ),
        (
            &["--wsesslog", "1,x,f"],
            "--wsesslog: \"1,x,f\" is not N,X,F",
        ),
        // httperf's optional values follow an '=', as getopt_long reads them.
        (
            &["--print-reply", "header"],
            "\"header\": one argument too many",
        ),
        (
            &["--print-reply=all"],
            "--print-reply: \"all\" is not a part",
        ),
        (
            &["--session-cookies"],
            "--session-cookies applies to session",
        ),
        (&["--ssl-ciphers", "x"], "--ssl-ciphers"),
        (&["--ssl-no-reuse"], "--ssl-no-reuse"),
        (&["--wlog", "x,f"], "--wlog: \"x,f\" is not B,FILE"),
        (&["--wlog", "y,/nonexistent/log"], "--wlog: cannot read"),
        (
            &["--wlog", "y,f", "--wset", "10,0.5"],
            "--wlog gives the URIs",
        ),
        (&["--wset", "0,0.5"], "--wset: \"0,0.5\" is not N,X"),
        (&["--wset", "10,1.5"], "--wset: \"10,1.5\" is not N,X"),
        (&["--wset", "10"], "--wset: \"10\" is not N,X"),
        (
            &["--wset", "10,0.5", "--wsesslog", "1,0,f"],
            "--wset walks through generated URIs",
        ),
        (&["--num", "1"], "--num: ambiguous"),
    ] {
        let Err(e) = run(argv) else {
            panic!("{argv:?} accepted")
        };
        assert!(e.message.starts_with(flag), "{argv:?}: {}", e.message);
    }
    for flag in ["-V", "--version", "-h", "--help"] {
        let Err(e) = run(&[flag]) else {
            panic!("{flag} ran")
        };
        assert_eq!(e.code, 0, "{flag}");
    }
}

#[test]
fn parts_are_read_as_httperf_reads_them() {
    let both = Parts {
        header: true,
        body: true,
    };
    assert_eq!(parse_parts("--print-reply", "").unwrap(), both);
    assert!(parse_parts("--print-reply", "header").unwrap().header);
    assert!(!parse_parts("--print-reply", "body").unwrap().header);
    let e = parse_parts("--print-reply", "all").unwrap_err();
    assert!(
        e.message.starts_with("--print-reply: \"all\""),
        "{}",
        e.message
    );
}
