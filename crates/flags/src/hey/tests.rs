//! hey's flags as the run they make, without a network.

use super::*;
use stampede_engine::target::Address;

fn args(argv: &[&str]) -> Result<HeyArgs, FlagError> {
    let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
    DIALECT.parse::<HeyArgs>(&argv).map(|(a, _)| a)
}

fn spec_of(argv: &[&str]) -> Result<LoadSpec, FlagError> {
    let a = args(argv)?;
    let inputs = Hey::inputs(&a)?;
    translate(&a, inputs.0, inputs.1)
}

fn request_text(s: &LoadSpec) -> String {
    String::from_utf8_lossy(&s.load.request.bytes).into_owned()
}

#[test]
fn defaults_are_heys() {
    let s = spec_of(&["http://127.0.0.1:9/p"]).unwrap();
    assert_eq!((s.load.requests, s.load.connections), (Some(200), 50));
    assert_eq!((s.load.redirects, s.load.keepalive), (10, true));
    assert_eq!(s.load.timeout, Some(Duration::from_secs(20)));
    assert!(matches!(s.load.shape, Shape::Closed));
    assert!(request_text(&s).contains("Content-Type: text/html\r\n"));
}

#[test]
fn every_documented_flag_is_taken_or_refused_by_name() {
    let u = "http://127.0.0.1:9/p";
    let dir = std::env::temp_dir().join(format!("stampede-hey-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let body = dir.join("b.txt");
    std::fs::write(&body, "from file").unwrap();
    let body = body.to_string_lossy().into_owned();
    type Check = fn(&LoadSpec);
    let taken: Vec<(Vec<&str>, Check)> = vec![
        (vec!["-n", "1000", "-c", "30", u], |s| {
            // Each of the 30 workers makes 1000/30 = 33.
            assert_eq!((s.load.requests, s.load.connections), (Some(990), 30))
        }),
        (vec!["-n=10", "-c=2", u], |s| {
            assert_eq!(s.load.requests, Some(10))
        }),
        (vec!["-q", "5", "-c", "4", "-n", "8", u], |s| {
            assert!(matches!(s.load.shape, Shape::Rate { rate, gaps: Gaps::Even } if rate == 20.0))
        }),
        (vec!["-z", "2s", u], |s| {
            assert_eq!(
                (s.load.duration, s.load.requests),
                (Some(Duration::from_secs(2)), None)
            )
        }),
        (vec!["-o", "csv", u], |s| assert!(s.record_requests)),
        (vec!["-m", "PUT", u], |s| {
            assert!(request_text(s).starts_with("PUT /p "))
        }),
        (vec!["-H", "X-A: 1", "-H", "X-B: 2", u], |s| {
            let w = request_text(s);
            assert!(w.contains("X-A: 1\r\n") && w.contains("X-B: 2\r\n"))
        }),
        (vec!["-t", "3", u], |s| {
            assert_eq!(s.load.timeout, Some(Duration::from_secs(3)))
        }),
        (vec!["-t", "0", u], |s| assert_eq!(s.load.timeout, None)),
        (vec!["-A", "application/json", u], |s| {
            assert!(request_text(s).contains("Accept: application/json\r\n"))
        }),
        (vec!["-d", "abc", "-m", "POST", u], |s| {
            assert!(request_text(s).ends_with("\r\n\r\nabc"))
        }),
        (vec!["-T", "application/xml", u], |s| {
            let w = request_text(s);
            assert!(w.contains("Content-Type: application/xml\r\n") && !w.contains("text/html"))
        }),
        (vec!["-U", "hey/0.0.1", u], |s| {
            let w = request_text(s);
            assert!(
                w.contains("User-Agent: hey/0.0.1\r\n") && !w.contains("stampede/"),
                "{w}"
            )
        }),
        (vec!["-a", "u:p", u], |s| {
            assert!(request_text(s).contains("Authorization: Basic dTpw\r\n"))
        }),
        (vec!["-x", "127.0.0.1:3128", u], |s| {
            assert_eq!(
                s.proxy.as_ref().map(|p| p.url.as_str()),
                Some("http://127.0.0.1:3128")
            )
        }),
        (vec!["-h2", u], |s| {
            assert!(s.load.protocol.http2 && s.load.redirects == 0)
        }),
        (vec!["--h2", u], |s| assert!(s.load.protocol.http2)),
        (vec!["-host", "example.test", u], |s| {
            assert!(request_text(s).contains("Host: example.test\r\n"))
        }),
        (vec!["-disable-compression", u], |s| {
            assert!(!request_text(s).contains("Accept-Encoding"))
        }),
        (vec!["-disable-keepalive", u], |s| {
            assert!(!s.load.keepalive)
        }),
        (vec!["-disable-redirects", u], |s| {
            assert_eq!(s.load.redirects, 0)
        }),
        (vec!["-cpus", "3", u], |s| assert_eq!(s.load.threads, 3)),
        (vec!["-cpus=1", u], |s| assert_eq!(s.load.threads, 1)),
    ];
    for (argv, check) in &taken {
        let s = spec_of(argv).unwrap_or_else(|e| panic!("{argv:?}: {}", e.message));
        check(&s);
    }
    let s = spec_of(&["-D", &body, u]).unwrap();
    assert!(request_text(&s).ends_with("\r\n\r\nfrom file"));
    let s = spec_of(&["-host", "a.test", "http://127.0.0.1:9/"]).unwrap();
    assert!(matches!(&s.target.address, Address::Tcp(a) if a[0].port() == 9));
    for (argv, msg) in [
        (
            vec!["-n", "5", "-c", "10", u],
            "-n 5 cannot be less than -c 10",
        ),
        (vec!["-c", "0", u], "-c cannot be smaller than 1"),
        (vec!["-o", "json", u], "-o json: csv is the only"),
        (vec!["-q", "-1", u], "-q -1"),
        (
            vec!["-cpuss", "2", u],
            "-cpuss: not a flag of hey; did you mean -cpus?",
        ),
        (vec!["-n100", u], "-n100: not a flag of hey"),
        (vec!["-a", "nocolon", u], "-a \"nocolon\""),
    ] {
        let Err(e) = spec_of(&argv) else {
            panic!("{argv:?} accepted")
        };
        assert!(e.message.starts_with(msg), "{argv:?}: {}", e.message);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
