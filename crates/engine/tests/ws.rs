//! WebSocket runs against the reference server's `/ws/echo` and against scripted
//! servers that misbehave on purpose, on 127.0.0.1:0: round trips counted as
//! requests in each load model, and each failure counted by its kind. Every run is
//! bounded by a count and short timeouts.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use stampede_engine::{LoadSpec, RequestBuilder, RunResult, Shape, Target, WsLoad};
use stampede_server::{Config, Running};

use crate::common::{find, go};

/// A round-trip run of `url`: `n` messages over `c` connections, on two threads.
pub fn spec(url: &str, n: u64, c: usize) -> LoadSpec {
    let target = Target::parse(url).unwrap();
    let req = RequestBuilder::native(&target, "GET", true)
        .set_header("Upgrade", "websocket")
        .set_header("Connection", "Upgrade")
        .set_header("Sec-WebSocket-Version", "13")
        .build()
        .unwrap();
    let mut s = LoadSpec::new(target, req);
    s.load.protocol.ws = Some(WsLoad::text("hello, echo"));
    s.load.requests = Some(n);
    s.load.connections = c;
    s.load.threads = 2;
    s.load.timeout = Some(Duration::from_millis(1500));
    s.load.connect_timeout = Duration::from_secs(2);
    s
}

/// The reference server on one thread.
pub fn server() -> Running {
    Running::local(Config {
        threads: 1,
        ..Config::default()
    })
    .unwrap()
}

fn ws_url(srv: &Running, path: &str) -> String {
    format!("ws://{}{path}", srv.addr())
}

fn errors(r: &RunResult) -> Vec<(String, u64)> {
    r.errors.iter().map(|(k, v)| (k.clone(), *v)).collect()
}

#[test]
fn echo_round_trips_are_the_runs_requests() {
    let srv = server();
    let r = go(spec(&ws_url(&srv, "/ws/echo"), 600, 4));
    assert_eq!(r.requests.completed, 600, "{:?}", r.errors);
    assert_eq!(r.statuses.get(&101), Some(&600));
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(r.non_2xx(), 0, "round trips are good answers");
    assert_eq!(r.bytes.body, 600 * 11);
    assert!((1..=4).contains(&r.connections_opened));
    assert_eq!(r.latency.count, 600);
    // Each connection's upgrade is timed on its own, and within its set-up.
    let up = r
        .protocols
        .websocket
        .as_ref()
        .unwrap()
        .upgrade
        .clone()
        .expect("upgrades");
    assert_eq!(up.count, r.connections_opened);
    assert!(up.max_us <= r.histograms.connect.0.max(), "{up:?}");
    // Two runs' results merge into one with both runs' upgrades.
    let mut m = stampede_engine::merge::Merger::new(false);
    m.add(&r).unwrap();
    m.add(&r).unwrap();
    let both = m.finish().unwrap();
    let up2 = both
        .protocols
        .websocket
        .unwrap()
        .upgrade
        .expect("merged upgrades");
    assert_eq!(up2.count, 2 * up.count);
    assert_eq!(up2.max_us, up.max_us);
}

#[test]
fn pipelined_messages_and_a_fixed_rate() {
    let srv = server();
    let mut s = spec(&ws_url(&srv, "/ws/echo"), 400, 2);
    s.load.pipeline = 8;
    let r = go(s);
    assert_eq!(r.requests.completed, 400, "{:?}", r.errors);
    // 300 messages at 1,000 a second: timed from their intended sends.
    let mut s = spec(&ws_url(&srv, "/ws/echo"), 300, 2);
    s.load.shape = Shape::Rate {
        rate: 1000.0,
        gaps: stampede_engine::arrivals::Gaps::Even,
    };
    let r = go(s);
    assert_eq!(r.requests.completed, 300, "{:?}", r.errors);
    assert!(
        r.duration_s >= 0.25,
        "{} s for 300 at 1,000/s",
        r.duration_s
    );
}

#[test]
fn binary_messages_with_a_subprotocol() {
    let srv = server();
    let mut s = spec(&ws_url(&srv, "/ws/echo"), 50, 1);
    let mut ws = WsLoad::text("");
    ws.message = std::sync::Arc::from(&[0u8, 0xff, 0x80, 7][..]);
    ws.binary = true;
    ws.protocols = vec!["chat".into()];
    s.load.protocol.ws = Some(ws);
    let r = go(s);
    assert_eq!(r.requests.completed, 50, "{:?}", r.errors);
    assert_eq!(r.bytes.body, 200);
}

#[test]
fn several_messages_go_in_turn_on_each_connection() {
    let srv = server();
    let mut s = spec(&ws_url(&srv, "/ws/echo"), 100, 1);
    s.load.threads = 1;
    s.load.pipeline = 3;
    let mut ws = WsLoad::text("");
    ws.messages = vec![
        Arc::from(&b"a"[..]),
        Arc::from(&b"bb"[..]),
        Arc::from(&b"cccc"[..]),
    ];
    s.load.protocol.ws = Some(ws.clone());
    let r = go(s.clone());
    assert_eq!(r.requests.completed, 100, "{:?}", r.errors);
    // 34 + 33 + 33 of them, in turn from the first.
    assert_eq!(r.bytes.body, 34 + 33 * 2 + 33 * 4);
    // Each is a message within bounds, text ones UTF-8; not a ping's, nor beside
    // messages made one by one.
    let why = |ws: WsLoad| {
        let mut s = s.clone();
        s.load.pipeline = 1;
        s.load.protocol.ws = Some(ws);
        s.validate().unwrap_err().to_string()
    };
    let mut bad = ws.clone();
    bad.messages[2] = Arc::from(&[0xffu8][..]);
    assert!(why(bad.clone()).contains("messages[2]: a text message must be UTF-8"));
    bad.binary = true;
    let mut ok = s.clone();
    ok.load.protocol.ws = Some(bad);
    ok.validate().unwrap();
    let mut ping = ws.clone();
    ping.ping = true;
    assert!(why(ping).contains("a ping carries the run's one message"));
    let mut big = ws;
    big.messages = vec![Arc::from(vec![b'x'; WsLoad::MAX_SEND + 1])];
    assert!(why(big).contains("messages[0]: 16777217 bytes"));
}

#[test]
fn steps_send_in_turn_and_wait_for_what_each_answer_holds() {
    let srv = server();
    let steps = |expects: [&[u8]; 2]| {
        let mut ws = WsLoad::text("");
        ws.messages = vec![Arc::from(&b"join room"[..]), Arc::from(&b"say hi"[..])];
        ws.expects = expects.iter().map(|e| Arc::from(*e)).collect();
        let mut s = spec(&ws_url(&srv, "/ws/echo"), 4, 1);
        s.load.threads = 1;
        s.load.timeout = Some(Duration::from_millis(300));
        s.load.protocol.ws = Some(ws);
        s
    };
    let r = go(steps([b"join", b""]));
    assert_eq!(r.requests.completed, 4, "{:?}", r.errors);
    assert_eq!(r.bytes.body, 2 * (9 + 6));
    assert_eq!(r.protocols.websocket.as_ref().unwrap().unmatched, 0);
    // The second step's answer never holds what it waits for: it times out, its echo
    // let go, and the next connection starts the steps again.
    let r = go(steps([b"join", b"nope"]));
    assert_eq!(r.requests.completed, 2, "{:?}", r.errors);
    assert_eq!(errors(&r), [("timeout".to_string(), 2)]);
    assert_eq!(r.protocols.websocket.as_ref().unwrap().unmatched, 2);
    // One expectation for each message, not beside expect.
    let mut s = steps([b"a", b"b"]);
    s.load.protocol.ws.as_mut().unwrap().expects.pop();
    assert!(s
        .validate()
        .unwrap_err()
        .to_string()
        .contains("one for each of the messages in turn"));
}

#[test]
fn a_refused_upgrade_is_a_failure_not_an_answer() {
    let srv = server();
    // The reference server answers a plain page at /pong, and 404 at an unknown
    // WebSocket path: neither is an upgrade.
    for path in ["/pong", "/ws/nothing"] {
        let r = go(spec(&ws_url(&srv, path), 20, 2));
        assert_eq!(r.requests.completed, 0, "{path}");
        assert_eq!(errors(&r), [("ws_upgrade".to_string(), 20)], "{path}");
        let refused = &r
            .protocols
            .websocket
            .as_ref()
            .expect("a WebSocket run")
            .refused;
        assert_eq!(refused.values().sum::<u64>(), 20, "{path}: {refused:?}");
        assert!(!refused.contains_key(&101), "{refused:?}");
        let upgrade = &r.protocols.websocket.as_ref().unwrap().upgrade;
        assert!(upgrade.is_none(), "no upgrade was answered: {upgrade:?}");
    }
    let r = go(spec(&ws_url(&srv, "/ws/nothing"), 5, 1));
    assert_eq!(r.protocols.websocket.unwrap().refused.get(&404), Some(&5));
}

/// Serves one scripted WebSocket server on 127.0.0.1:0: each connection's upgrade
/// is answered by `answer` (given the key), then `after` is written for each
/// message or ping read (given their count). Returns the URL.
fn scripted(answer: fn(&str) -> Vec<u8>, after: fn(u64) -> Option<Vec<u8>>) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            std::thread::spawn(move || {
                let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                let Some(key) = upgrade_key(&mut s, &mut buf) else {
                    return;
                };
                if s.write_all(&answer(&key)).is_err() {
                    return;
                }
                // The client's frames here are small (a 7-bit length, masked): each
                // data frame is answered, a pong or close passed over.
                let mut n = 0u64;
                loop {
                    while buf.len() >= 2 && buf.len() >= 6 + usize::from(buf[1] & 0x7f) {
                        let opcode = buf[0] & 0x0f;
                        let len = 6 + usize::from(buf[1] & 0x7f);
                        buf.drain(..len);
                        // Data messages and pings are answered.
                        if !matches!(opcode, 1 | 2 | 9) {
                            continue;
                        }
                        match after(n) {
                            Some(bytes) => {
                                if s.write_all(&bytes).is_err() {
                                    return;
                                }
                            }
                            None => return,
                        }
                        n += 1;
                    }
                    match s.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(k) => buf.extend_from_slice(&chunk[..k]),
                    }
                }
            });
        }
    });
    format!("ws://{addr}/")
}

/// Reads an upgrade request's head from `s` (after what `buf` holds) and returns its
/// key, leaving in `buf` what followed it; `None` if the connection ended first.
fn upgrade_key(s: &mut std::net::TcpStream, buf: &mut Vec<u8>) -> Option<String> {
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = find(buf, b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_string();
            buf.drain(..end + 4);
            let key = head
                .lines()
                .find_map(|l| l.strip_prefix("Sec-WebSocket-Key: "))
                .unwrap_or("");
            return Some(key.to_string());
        }
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(k) => buf.extend_from_slice(&chunk[..k]),
        }
    }
}

fn accept(key: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n\r\n",
        stampede_wire::ws::accept_key(key.as_bytes())
    )
    .into_bytes()
}

fn frame(opcode: u8, payload: &[u8], mask: Option<[u8; 4]>) -> Vec<u8> {
    let mut f = Vec::new();
    stampede_wire::ws::frame(&mut f, (true, false), opcode, payload, mask);
    f
}

#[test]
fn a_misbehaving_server_is_counted_by_kind_and_the_run_ends_on_time() {
    type Case = (
        &'static str,
        fn(&str) -> Vec<u8>,
        fn(u64) -> Option<Vec<u8>>,
        &'static str,
    );
    let cases: [Case; 6] = [
        (
            "wrong accept key",
            |_| accept("dGhlIHNhbXBsZSBub25jZQ=="),
            |_| Some(frame(1, b"x", None)),
            "ws_handshake",
        ),
        (
            "masked frames",
            accept,
            |_| Some(frame(1, b"x", Some([1, 2, 3, 4]))),
            "ws_protocol",
        ),
        (
            "invalid UTF-8",
            accept,
            |_| Some(frame(1, &[0xc3, 0x28], None)),
            "ws_invalid_text",
        ),
        (
            "a close while a message waits",
            accept,
            |_| Some(frame(8, &1001u16.to_be_bytes(), None)),
            "ws_closed",
        ),
        (
            "a frame over the limit",
            accept,
            |_| {
                let mut h = Vec::new();
                stampede_wire::ws::head(&mut h, (true, false), 2, 1 << 40, None);
                Some(h)
            },
            "ws_too_big",
        ),
        ("never answers", accept, |_| Some(Vec::new()), "timeout"),
    ];
    for (what, answer, after, kind) in cases {
        let mut s = spec(&scripted(answer, after), 6, 2);
        s.load.timeout = Some(Duration::from_millis(300));
        let r = go(s);
        assert_eq!(r.requests.completed, 0, "{what}");
        assert_eq!(errors(&r), [(kind.to_string(), 6)], "{what}");
        let closes = &r
            .protocols
            .websocket
            .as_ref()
            .expect("a WebSocket run")
            .closes;
        if kind == "ws_closed" {
            assert_eq!(closes.get(&1001), Some(&6), "{what}");
        } else {
            assert!(closes.is_empty(), "{what}: {closes:?}");
        }
    }
}

#[test]
fn pings_are_answered_and_a_slow_echo_still_counts() {
    // Each message is answered by a ping, then the echo.
    let url = scripted(accept, |_| {
        let mut b = frame(9, b"are you there", None);
        b.extend(frame(1, b"hello, echo", None));
        Some(b)
    });
    let r = go(spec(&url, 40, 2));
    assert_eq!(r.requests.completed, 40, "{:?}", r.errors);
}

#[test]
fn pings_are_the_requests_and_their_pongs_the_answers() {
    let srv = server();
    let mut s = spec(&ws_url(&srv, "/ws/echo"), 300, 3);
    s.load.protocol.ws.as_mut().unwrap().ping = true;
    let r = go(s);
    assert_eq!(r.requests.completed, 300, "{:?}", r.errors);
    assert_eq!(r.statuses.get(&101), Some(&300));
    assert_eq!(
        r.bytes.body,
        300 * 11,
        "each pong carries the ping's payload"
    );

    // A pong that comes unasked (with the 101, while the first ping waits for it:
    // its payload is not the ping's) answers nothing, nor does a data message pushed
    // before each pong: 40 pings, 40 answers.
    let url = scripted(
        |key| {
            let mut b = accept(key);
            b.extend(frame(10, b"unasked", None));
            b
        },
        |_| {
            let mut b = frame(1, b"news", None);
            b.extend(frame(10, b"hello, echo", None));
            Some(b)
        },
    );
    let mut s = spec(&url, 40, 2);
    s.load.protocol.ws.as_mut().unwrap().ping = true;
    let r = go(s);
    assert_eq!(r.requests.completed, 40, "{:?}", r.errors);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(r.bytes.body, 40 * 11);

    // A ping is a control frame: 125 bytes at most, one at a time on a connection.
    let mut s = spec(&url, 1, 1);
    s.load.protocol.ws = Some(WsLoad::text(&"x".repeat(126)));
    s.load.protocol.ws.as_mut().unwrap().ping = true;
    let e = s.plan().unwrap_err().to_string();
    assert!(e.contains("at most 125 bytes"), "{e}");
    let mut s = spec(&url, 1, 1);
    s.load.protocol.ws.as_mut().unwrap().ping = true;
    s.load.pipeline = 2;
    let e = s.plan().unwrap_err().to_string();
    assert!(e.contains("one at a time"), "{e}");
}

/// A WebSocket server on 127.0.0.1:0 that echoes each message, answers each ping,
/// and sends on the code of each close it is sent, answering it. Returns the URL and
/// where the codes arrive.
fn closes_kept() -> (String, std::sync::mpsc::Receiver<u16>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("ws://{}/", l.local_addr().unwrap());
    let (kept, codes) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            let codes = kept.clone();
            std::thread::spawn(move || {
                let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                let Some(key) = upgrade_key(&mut s, &mut buf) else {
                    return;
                };
                if s.write_all(&accept(&key)).is_err() {
                    return;
                }
                loop {
                    // Small masked frames: 2 bytes of head, 4 of mask, the payload.
                    while buf.len() >= 6 + usize::from(buf.get(1).map_or(0, |b| b & 0x7f)) {
                        let opcode = buf[0] & 0x0f;
                        let len = usize::from(buf[1] & 0x7f);
                        let mask = [buf[2], buf[3], buf[4], buf[5]];
                        let payload: Vec<u8> = (buf[6..6 + len].iter().enumerate())
                            .map(|(i, b)| b ^ mask[i % 4])
                            .collect();
                        buf.drain(..6 + len);
                        let reply = match opcode {
                            1 | 2 => frame(opcode, &payload, None),
                            9 => frame(10, &payload, None),
                            8 => {
                                let code = payload
                                    .get(..2)
                                    .map_or(1005, |c| u16::from_be_bytes([c[0], c[1]]));
                                let _ = codes.send(code);
                                let _ = s.write_all(&frame(8, &payload, None));
                                return;
                            }
                            _ => continue,
                        };
                        if s.write_all(&reply).is_err() {
                            return;
                        }
                    }
                    match s.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(k) => buf.extend_from_slice(&chunk[..k]),
                    }
                }
            });
        }
    });
    (url, codes)
}

#[test]
fn each_session_upgrades_its_own_connection_and_closes_it_cleanly() {
    use stampede_engine::inject::Profile;
    use stampede_engine::Session;
    let (url, codes) = closes_kept();
    // Gatling users: 12 at once and 8 over 200 ms, each with three messages 10 ms
    // apart on its own connection, which it closes with 1000.
    let profile = Profile::parse(&[
        "atOnceUsers(12)".into(),
        "rampUsers(8).during(200 ms)".into(),
    ])
    .unwrap();
    let mut s = spec(&url, 1, 2);
    s.load.requests = None;
    s.load.shape = Shape::Users(profile);
    s.load.session = Session {
        calls: 3,
        burst: 1,
        think: Duration::from_millis(10),
        ..Default::default()
    };
    let r = go(s.clone());
    let sess = r.sessions.unwrap();
    assert_eq!((sess.started, sess.completed, sess.failed), (20, 20, 0));
    assert_eq!(r.requests.completed, 60, "{:?}", r.errors);
    assert_eq!(r.connections_opened, 20);
    // The server reads each close after its last echo: each code as it comes.
    let got: Vec<u16> = (0..20)
        .map_while(|_| codes.recv_timeout(Duration::from_secs(5)).ok())
        .collect();
    assert_eq!(got, vec![1000; 20]);

    // Held with heartbeats: the sessions ping instead.
    s.load.protocol.ws.as_mut().unwrap().ping = true;
    s.load.protocol.ws.as_mut().unwrap().message = Arc::from(&b"beat"[..]);
    let r = go(s);
    assert_eq!(r.requests.completed, 60, "{:?}", r.errors);
}
