//! vegeta's flags as the attack they make, without a network.

use super::*;
use stampede_engine::target::Address;

struct Files(std::path::PathBuf);

impl Files {
    fn new() -> Files {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let d = std::env::temp_dir().join(format!(
            "stampede-vegeta-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&d).unwrap();
        Files(d)
    }

    fn file(&self, name: &str, text: &str) -> String {
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_string_lossy().into_owned()
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn spec_of(argv: &[&str]) -> Result<LoadSpec, FlagError> {
    let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
    let (a, _) = ATTACK.parse::<AttackArgs>(&argv)?;
    let inputs = Attack::inputs(&a)?;
    Ok(translate(&a, inputs)?.0)
}

fn text(r: &stampede_engine::Request) -> String {
    String::from_utf8_lossy(&r.bytes).into_owned()
}

#[test]
fn rates_and_go_durations_read_as_vegeta_writes_them() {
    assert_eq!(parse_rate("50/1s").unwrap(), 50.0);
    assert_eq!(parse_rate("100/s").unwrap(), 100.0);
    assert_eq!(parse_rate("1/10ms").unwrap(), 100.0);
    assert_eq!(parse_rate("30/m").unwrap(), 0.5);
    assert_eq!(parse_rate("7").unwrap(), 7.0);
    assert_eq!(parse_rate("0").unwrap(), 0.0);
    for bad in ["x/s", "5/0s", "-1/s", "5/fortnight"] {
        assert!(parse_rate(bad).is_err(), "{bad}");
    }
    let d = |s: &str| parse_go_duration(s).unwrap();
    assert_eq!(d("1m30s"), Duration::from_secs(90));
    assert_eq!(d("1.5h"), Duration::from_secs(5400));
    assert_eq!(d("250ms"), Duration::from_millis(250));
    assert_eq!(d("0"), Duration::ZERO);
    for bad in ["", "10", "5x", "1m30"] {
        assert!(parse_go_duration(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn buckets_parse_in_order_and_bounded() {
    assert_eq!(parse_buckets("[0,1ms,10ms]").unwrap(), [0, 1000, 10_000]);
    assert!(parse_buckets("[1ms,1ms]")
        .unwrap_err()
        .0
        .contains("ascending"));
    assert!(parse_buckets("0,1ms")
        .unwrap_err()
        .0
        .contains("in brackets"));
    let many = format!(
        "[{}]",
        (0..1001)
            .map(|i| format!("{i}ms"))
            .collect::<Vec<_>>()
            .join(",")
    );
    assert!(parse_buckets(&many).unwrap_err().0.contains("at most 1000"));
}

#[test]
fn every_attack_flag_is_taken_or_refused_by_name() {
    let f = Files::new();
    let t = f.file(
        "targets.txt",
        "GET http://127.0.0.1:9/a\nX-Own: 1\n\nPOST http://127.0.0.1:9/b\n",
    );
    let body = f.file("body.txt", "payload");
    type Check = fn(&LoadSpec);
    let taken: Vec<(Vec<&str>, Check)> = vec![
        (vec![], |s| {
            // vegeta's defaults: 50/s until stopped, 10 workers, 30 s timeout, keep-alive,
            // ten redirects.
            assert!(matches!(s.load.shape, Shape::Rate { rate, .. } if rate == 50.0));
            assert_eq!(s.load.duration, Some(FOREVER));
            assert_eq!(s.load.connections, 10);
            assert_eq!(s.load.timeout, Some(Duration::from_secs(30)));
            assert!(s.load.keepalive && s.load.redirects == 10 && !s.load.protocol.http2);
            assert_eq!(s.load.variety.len(), 2);
            assert!(text(&s.load.variety[0]).contains("X-Own: 1\r\n"));
            assert!(text(&s.load.variety[1]).starts_with("POST /b "));
        }),
        (vec!["-rate", "1000/s", "-duration", "5s"], |s| {
            assert!(matches!(s.load.shape, Shape::Rate { rate, .. } if rate == 1000.0));
            assert_eq!(s.load.duration, Some(Duration::from_secs(5)));
            assert_eq!(s.load.connections, 100);
        }),
        (vec!["-rate=0", "-workers", "4"], |s| {
            assert!(matches!(s.load.shape, Shape::Closed));
            assert_eq!(s.load.connections, 4);
        }),
        (vec!["-rate", "0", "-max-workers", "6"], |s| {
            assert_eq!(s.load.connections, 6)
        }),
        (vec!["-rate", "100000/s", "-max-connections", "50"], |s| {
            assert_eq!(s.load.connections, 50)
        }),
        (vec!["-connections", "100"], |_| {}),
        (vec!["-timeout", "2s"], |s| {
            assert_eq!(s.load.timeout, Some(Duration::from_secs(2)))
        }),
        (vec!["-timeout", "0"], |s| assert_eq!(s.load.timeout, None)),
        // The answers in flight at the attack's end are waited for as long as a
        // request may take; an attack without end has none to wait for.
        (vec!["-duration", "5s", "-timeout", "2s"], |s| {
            assert_eq!(s.load.drain, Some(Duration::from_secs(2)))
        }),
        (vec!["-duration", "5s", "-timeout", "0"], |s| {
            assert_eq!(s.load.drain, Some(Duration::from_secs(30)))
        }),
        (vec!["-rate", "10"], |s| assert_eq!(s.load.drain, None)),
        (vec!["-header", "X-A: 1", "-header", "X-B: 2"], |s| {
            let w = text(&s.load.variety[1]);
            assert!(w.contains("X-A: 1\r\n") && w.contains("X-B: 2\r\n"), "{w}")
        }),
        (vec!["-keepalive=false"], |s| assert!(!s.load.keepalive)),
        (vec!["-keepalive"], |s| assert!(s.load.keepalive)),
        (vec!["-h2c"], |s| assert!(s.load.protocol.http2)),
        (vec!["-http2=false"], |s| assert!(!s.load.protocol.http2)),
        (vec!["-redirects", "-1"], |s| {
            assert_eq!(s.load.redirects, 0)
        }),
        (vec!["-redirects=3"], |s| assert_eq!(s.load.redirects, 3)),
        (vec!["-unix-socket", "/tmp/v.sock"], |s| {
            assert!(matches!(s.target.address, Address::Unix(_)))
        }),
        (vec!["-laddr", "127.0.0.1"], |s| {
            assert_eq!(
                s.load.socket.local,
                ["127.0.0.1".parse::<std::net::IpAddr>().unwrap()]
            )
        }),
        (vec!["-connect-to", "127.0.0.1:9:127.0.0.3:8080"], |s| {
            let Address::Tcp(a) = &s.target.address else {
                panic!()
            };
            assert_eq!(a[0].to_string(), "127.0.0.3:8080");
        }),
        (
            vec!["-name", "big", "-lazy", "-max-body", "-1", "-dns-ttl", "1m"],
            |_| {},
        ),
        (vec!["-output", "out.json"], |_| {}),
    ];
    for (extra, check) in &taken {
        let mut argv = vec!["-targets", t.as_str()];
        argv.extend(extra.iter().copied());
        let s = spec_of(&argv).unwrap_or_else(|e| panic!("{argv:?}: {}", e.message));
        check(&s);
    }
    let s = spec_of(&["-targets", &t, "-body", &body]).unwrap();
    assert!(s
        .load
        .variety
        .iter()
        .all(|r| text(r).ends_with("\r\n\r\npayload")));
    let tls = f.file("tls.txt", "GET https://127.0.0.1:9/\n");
    let s = spec_of(&["-targets", &tls, "-session-tickets", "-insecure"]).unwrap();
    assert!(
        s.tls.is_some() && s.load.protocol.http2,
        "https offers HTTP/2 by default"
    );
    let s = spec_of(&["-targets", &tls, "-http2=false"]).unwrap();
    assert!(!s.load.protocol.http2);

    let json = f.file(
        "t.json",
        "{\"method\":\"PUT\",\"url\":\"http://127.0.0.1:9/j\",\"header\":{\"X-J\":[\"1\",\"2\"]},\"body\":\"aGk=\"}\n",
    );
    let s = spec_of(&["-format", "json", "-targets", &json]).unwrap();
    let w = text(&s.load.variety[0]);
    assert!(w.starts_with("PUT /j ") && w.ends_with("\r\n\r\nhi"), "{w}");
    assert!(w.contains("X-J: 1\r\n") && w.contains("X-J: 2\r\n"), "{w}");

    let broken = f.file("broken.json", "{\"method\":\"GET\"}\n");
    for (argv, msg) in [
        (vec!["-resolvers", "1.1.1.1:53"], "-resolvers: "),
        (vec!["-chunked"], "-chunked: "),
        (vec!["-proxy-header", "a: b"], "-proxy-header: "),
        (
            vec!["-prometheus-addr", "0.0.0.0:8880"],
            "-prometheus-addr: ",
        ),
        (vec!["-rate", "fast"], "invalid value 'fast' for '--rate"),
        (vec!["-format", "yaml"], "-format yaml"),
        (vec!["-workers", "0"], "-workers 0"),
        (
            vec!["-ratee", "5"],
            "-ratee: not a flag of vegeta attack; did you mean -rate?",
        ),
        (
            vec!["-format", "json", "-targets", &broken],
            "not a JSON target",
        ),
    ] {
        let mut full = vec!["-targets", t.as_str()];
        full.extend(argv.iter().copied());
        let Err(e) = spec_of(&full) else {
            panic!("{argv:?} accepted")
        };
        assert!(e.message.contains(msg), "{argv:?}: {}", e.message);
    }
}
