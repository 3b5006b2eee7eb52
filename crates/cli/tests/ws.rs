//! The reference server's WebSocket endpoints: its handshake and frames over a real
//! socket, and Python's websockets (another implementation) talking to it.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use stampede_wire::ws::{self, deflate, Event, Reader, ReaderOptions};

use crate::common::missing_peer;

const PEER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/peers/ws_peer.py");

/// Sends `bytes` to a new connection and reads until the server closes it (within
/// 10 s).
fn exchange(addr: std::net::SocketAddr, bytes: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(bytes).unwrap();
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    got
}

fn handshake(path: &str, extra: &str) -> String {
    format!(
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: keep-alive, Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n{extra}\r\n"
    )
}

/// The frames after the response head in `got`, read as a client reads them.
fn frames(got: &[u8]) -> Vec<String> {
    let at = got.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let mut r = Reader::new(ReaderOptions {
        peer_is_client: false,
        max_message: 1 << 20,
        keep: true,
    });
    let mut seen = Vec::new();
    r.feed(&got[at..], &mut |e| {
        seen.push(match e {
            Event::Message { data, .. } => format!("message {}", String::from_utf8_lossy(data)),
            Event::Pong(p) => format!("pong {}", String::from_utf8_lossy(p)),
            Event::Ping(_) => "ping".into(),
            Event::Close { code, reason } => format!("close {code:?} {reason}"),
        })
    })
    .unwrap();
    seen
}

#[test]
fn frames_sent_with_the_handshake_are_echoed_and_the_close_answered() {
    let s = crate::common::srv();
    let mut req = handshake("/ws/echo", "Sec-WebSocket-Version: 13\r\n").into_bytes();
    let k = Some([7, 7, 7, 7]);
    ws::frame(&mut req, (false, false), ws::TEXT, b"frag", k);
    ws::frame(&mut req, (true, false), ws::PING, b"p", k);
    ws::frame(&mut req, (true, false), ws::CONTINUATION, b"mented", k);
    ws::close(&mut req, Some(ws::NORMAL), "bye", k);
    let got = exchange(s.addr(), &req);
    let head =
        String::from_utf8_lossy(&got[..got.windows(4).position(|w| w == b"\r\n\r\n").unwrap()]);
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    assert!(
        head.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo="),
        "{head}"
    );
    assert_eq!(
        frames(&got),
        ["pong p", "message fragmented", "close Some(1000) "]
    );
}

#[test]
fn refused_handshakes_get_their_status_and_the_connection_closes() {
    let s = crate::common::srv();
    let got = exchange(
        s.addr(),
        handshake("/ws/echo", "Sec-WebSocket-Version: 8\r\n").as_bytes(),
    );
    let text = String::from_utf8_lossy(&got);
    assert!(
        text.starts_with("HTTP/1.1 426 ") && text.contains("Sec-WebSocket-Version: 13"),
        "{text}"
    );
    let got = exchange(
        s.addr(),
        handshake("/nowhere", "Sec-WebSocket-Version: 13\r\n").as_bytes(),
    );
    assert!(String::from_utf8_lossy(&got).starts_with("HTTP/1.1 404 "));
    // A client that sends unmasked frames is told so (1002) and let go.
    let mut req = handshake("/ws/echo", "Sec-WebSocket-Version: 13\r\n").into_bytes();
    ws::frame(&mut req, (true, false), ws::TEXT, b"unmasked", None);
    let got = exchange(s.addr(), &req);
    let seen = frames(&got);
    assert!(seen[0].starts_with("close Some(1002)"), "{seen:?}");
}

#[test]
fn pythons_websockets_talks_to_the_reference_server() {
    let Some(python) =
        crate::common::python_with("STAMPEDE_WS_PYTHON", &["websockets"], "websockets")
    else {
        return;
    };
    let s = crate::common::srv();
    let run = |args: &[&str]| -> Value {
        let out = Command::new(&python).arg(PEER).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let url = format!("ws://{}/ws/echo", s.addr());
    let v = run(&["echo", &url, "20"]);
    assert_eq!(v["text"], 20, "{v}");
    assert_eq!(v["binary"], 20, "{v}");
    assert_eq!(v["pong"], true, "{v}");
    assert_eq!(v["subprotocol"], "chat.v2", "{v}");
    assert_eq!(
        v["extensions"],
        serde_json::json!(["permessage-deflate"]),
        "{v}"
    );
    assert_eq!(v["close_code"], 1000, "{v}");
    let url = format!("ws://{}/ws/push?interval_ms=5&count=7&size=32", s.addr());
    let v = run(&["push", &url]);
    assert_eq!(v["messages"], 7, "{v}");
    assert_eq!(v["close_code"], 1000, "{v}");
}

/// stampede's load client against Python's websockets echo server: with
/// permessage-deflate taken, every round trip compressed both ways and the messages
/// counted whole; with a server that does not take it, each connection failing as
/// declined.
#[test]
fn load_compresses_against_pythons_websockets_server() {
    let Some(python) =
        crate::common::python_with("STAMPEDE_WS_PYTHON", &["websockets"], "websockets")
    else {
        return;
    };
    // The plain offer, one asking the server for parameters of its own (which it
    // honours in its answer), and a server without the extension.
    let asks = "server_no_context_takeover; server_max_window_bits=10";
    for (mode, params, completed) in [
        ("deflate", "", 300),
        ("deflate", asks, 300),
        ("plain", "", 0),
    ] {
        let (mut server, port) = crate::common::python_server(&python, PEER, &["serve", mode]);
        let url = format!("ws://127.0.0.1:{port}/");
        let message = "{\"op\":\"order\",\"side\":\"buy\",\"qty\":100} ".repeat(30);
        let mut args = vec![
            "load",
            &url,
            "-n",
            "300",
            "-c",
            "3",
            "-t",
            "1",
            "--ws-deflate",
            "--ws-message",
            &message,
            "--timeout",
            "10s",
            "--json",
            "-",
        ];
        if !params.is_empty() {
            args.extend_from_slice(&["--ws-deflate-params", params]);
        }
        let out = crate::common::recorder::stampede(&args);
        drop(server.stdin.take());
        let _ = server.wait();
        let text = crate::common::recorder::text(&out.stdout);
        let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| {
            panic!("{e}: {text}{}", crate::common::recorder::text(&out.stderr))
        });
        assert_eq!(
            v["requests"]["completed"], completed,
            "{mode} {params}: {v}"
        );
        if completed > 0 {
            assert_eq!(v["requests"]["failed"], 0, "{v}");
            assert_eq!(v["bytes"]["body"], 300 * message.len(), "{v}");
            let read = v["bytes"]["read"].as_u64().unwrap();
            assert!(
                read < 300 * message.len() as u64 / 10,
                "{read} bytes read: {v}"
            );
        } else {
            assert!(
                v["errors"]["ws_deflate_declined"].as_u64().unwrap() > 0,
                "{v}"
            );
        }
    }
}

/// Autobahn|Testsuite's server cases ([`autobahn_cases`]) against the reference
/// server's echo, permessage-deflate's among them.
#[test]
fn the_autobahn_server_cases_pass() {
    let Ok(wstest) = std::env::var("STAMPEDE_AUTOBAHN") else {
        return missing_peer("Autobahn|Testsuite's wstest (STAMPEDE_AUTOBAHN=PATH naming it; `pip install autobahntestsuite==25.10.1` under Python 2.7, as .ci/run does)");
    };
    let s = crate::common::srv();
    let tmp = crate::common::recorder::tempdir::Dir::new();
    let report = tmp.0.join("report");
    let spec = serde_json::json!({
        "outdir": report,
        "servers": [{"agent": "stampede", "url": format!("ws://{}/ws/echo", s.addr())}],
        "cases": autobahn_cases(),
        "exclude-cases": [],
        "exclude-agent-cases": {},
    });
    let spec_file = tmp.0.join("spec.json");
    std::fs::write(&spec_file, spec.to_string()).unwrap();
    let out = Command::new(&wstest)
        .args(["-m", "fuzzingclient", "-s"])
        .arg(&spec_file)
        .current_dir(&tmp.0)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (cases, failed, _) = autobahn_report(&report);
    assert_eq!(cases, 325, "{cases} cases");
    assert!(failed.is_empty(), "{failed:?}");
}

/// The Autobahn cases run, each way: every case of RFC 6455 (categories 1 to 10), and
/// of permessage-deflate's 216 (each 1,000 messages, up to 128 KiB each, which take
/// the suite's Python a quarter of an hour) every kind of payload (12.1 to 12.5) at 16
/// and 4,096 bytes and every parameter offered and accepted (13.1 to 13.7) at 16
/// bytes and at 8 KiB fragmented into 256-byte frames. (The suite reads a pattern
/// with `*` as a regular expression matched from the start, `12.*.1` taking 12.1.10
/// too, so those cases are named one by one.)
fn autobahn_cases() -> Vec<String> {
    let mut cases: Vec<String> = (1..=10)
        .filter(|c| *c != 8)
        .map(|c| format!("{c}.*"))
        .collect();
    cases.extend((1..=5).flat_map(|k| [format!("12.{k}.1"), format!("12.{k}.5")]));
    cases.extend((1..=7).flat_map(|k| [format!("13.{k}.1"), format!("13.{k}.11")]));
    cases
}

/// What an Autobahn report in `dir` says of agent `stampede`: its cases, those that
/// failed in behaviour or in the close (with both verdicts), and those strictly OK.
fn autobahn_report(dir: &std::path::Path) -> (usize, Vec<String>, usize) {
    let index: Value =
        serde_json::from_slice(&std::fs::read(dir.join("index.json")).unwrap()).unwrap();
    let cases = index["stampede"].as_object().unwrap();
    let passed = ["OK", "NON-STRICT", "INFORMATIONAL"];
    let failed: Vec<String> = cases
        .iter()
        .filter(|(_, v)| {
            !passed.contains(&v["behavior"].as_str().unwrap_or(""))
                || !passed.contains(&v["behaviorClose"].as_str().unwrap_or(""))
        })
        .map(|(k, v)| format!("{k}: {} / {}", v["behavior"], v["behaviorClose"]))
        .collect();
    let strict = cases.values().filter(|v| v["behavior"] == "OK").count();
    (cases.len(), failed, strict)
}

/// `stampede load ws://…` with no other flag: echo round trips of a small text
/// message in the closed model, each counted as a request, the JSON within the
/// result schema.
#[test]
fn load_times_echo_round_trips_as_requests() {
    let s = crate::common::srv();
    let url = format!("ws://{}/ws/echo", s.addr());
    let out = crate::common::recorder::stampede(&[
        "load", &url, "-n", "300", "-c", "3", "-t", "1", "--json", "-",
    ]);
    let text = crate::common::recorder::text(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        crate::common::recorder::text(&out.stderr)
    );
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["requests"]["completed"], 300, "{v}");
    assert_eq!(v["requests"]["failed"], 0, "{v}");
    assert_eq!(v["statuses"]["101"], 300, "{v}");
    assert_eq!(v["bytes"]["body"], 300 * "stampede".len(), "{v}");
    assert_eq!(v["websocket"]["refused"], serde_json::json!({}), "{v}");
    assert_eq!(v["websocket"]["closes"], serde_json::json!({}), "{v}");
    assert_eq!(v["websocket"]["upgrade"]["count"], 3, "{v}");
    assert!(
        v["settings"]["url"].as_str().unwrap().starts_with("ws://"),
        "{v}"
    );
    assert_eq!(crate::common::schema_errors(&v), Vec::<String>::new());
    // A message of its own, binary, with a subprotocol; the summary says nothing is wrong.
    let out = crate::common::recorder::stampede(&[
        "load",
        &url,
        "-n",
        "50",
        "-c",
        "1",
        "-t",
        "1",
        "--ws-message",
        "ping-pong",
        "--ws-binary",
        "--ws-protocol",
        "chat",
    ]);
    let summary =
        crate::common::recorder::text(&out.stdout) + &crate::common::recorder::text(&out.stderr);
    assert!(out.status.success(), "{summary}");
    assert!(summary.contains("50 completed"), "{summary}");
    assert!(
        summary.contains("websocket   1 upgrades, each p50 "),
        "{summary}"
    );
    assert!(!summary.contains("WARNING"), "{summary}");
    // A refused upgrade is said, with its status.
    let nowhere = format!("ws://{}/nowhere", s.addr());
    let out =
        crate::common::recorder::stampede(&["load", &nowhere, "-n", "4", "-c", "1", "-t", "1"]);
    let summary =
        crate::common::recorder::text(&out.stdout) + &crate::common::recorder::text(&out.stderr);
    assert!(
        summary.contains("refused 4 WebSocket upgrades (answered 404: 4)"),
        "{summary}"
    );
}

/// Flags that do not apply to message round trips are refused by name, and the
/// WebSocket flags with an http:// URL.
#[test]
fn load_refuses_what_does_not_apply_to_websocket() {
    const LONG: &str = concat!(
        "0123456789012345678901234567890123456789012345678901234567890123456789",
        "01234567890123456789012345678901234567890123456789012345"
    );
    let cases: [(&[&str], &str); 11] = [
        (
            &[
                "load",
                "ws://127.0.0.1:9/",
                "--ws-deflate",
                "--ws-deflate-params",
                "level=9",
            ],
            "--ws-deflate-params: \"level=9\": not permessage-deflate's parameters",
        ),
        (
            &[
                "load",
                "ws://127.0.0.1:9/",
                "--ws-deflate-params",
                "server_no_context_takeover",
            ],
            "--ws-deflate",
        ),
        (
            &["load", "ws://127.0.0.1:9/", "--http3"],
            "--http3: not for ws:// or wss:// URLs",
        ),
        (
            &["load", "ws://127.0.0.1:9/", "-m", "POST"],
            "-m: not for ws:// or wss:// URLs",
        ),
        (
            &["load", "ws://127.0.0.1:9/", "--sse"],
            "--sse: not for ws:// or wss:// URLs",
        ),
        (
            &["load", "ws://127.0.0.1:9/", "-H", "Sec-WebSocket-Key: x"],
            "-H Sec-WebSocket-Key: the upgrade sets it",
        ),
        (
            &["load", "http://127.0.0.1:9/", "--ws-message", "x"],
            "--ws-message: WebSocket messages go to a ws:// or wss:// URL",
        ),
        (
            &["load", "http://127.0.0.1:9/", "--ws-ping"],
            "--ws-ping: WebSocket messages go to a ws:// or wss:// URL",
        ),
        (
            &["load", "http://127.0.0.1:9/", "--ws-deflate"],
            "--ws-deflate: WebSocket messages go to a ws:// or wss:// URL",
        ),
        (
            &[
                "load",
                "ws://127.0.0.1:9/",
                "-H",
                "Sec-WebSocket-Extensions: permessage-deflate",
            ],
            "permessage-deflate with --ws-deflate",
        ),
        (
            &[
                "load",
                "ws://127.0.0.1:9/",
                "--ws-ping",
                "--ws-message",
                LONG,
            ],
            "--ws-ping: a ping carries at most 125 bytes, and the message is 126",
        ),
    ];
    for (args, said) in cases {
        let out = crate::common::recorder::stampede(args);
        let err = crate::common::recorder::text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(said), "{args:?}: {err}");
    }
}

/// `--ws-deflate`: the echo's round trips compressed both ways — the messages' bytes
/// counted as inflated, far fewer crossing the wire — and a server endpoint that
/// declines the extension failing each connection by name.
#[test]
fn load_compresses_messages_with_permessage_deflate() {
    let s = crate::common::srv();
    let message =
        "{\"op\":\"quote\",\"symbol\":\"ACME\",\"fields\":[\"bid\",\"ask\",\"last\"]} ".repeat(20);
    let run = |path: &str, extra: &[&str]| -> Value {
        let url = format!("ws://{}{path}", s.addr());
        let mut args = vec![
            "load",
            &url,
            "-n",
            "400",
            "-c",
            "4",
            "-t",
            "1",
            "--ws-deflate",
            "--ws-message",
            &message,
            "--json",
            "-",
        ];
        args.extend_from_slice(extra);
        let out = crate::common::recorder::stampede(&args);
        let text = crate::common::recorder::text(&out.stdout);
        serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{e}: {text}{}", crate::common::recorder::text(&out.stderr)))
    };
    let v = run("/ws/echo", &[]);
    assert_eq!(v["requests"]["completed"], 400, "{v}");
    assert_eq!(v["requests"]["failed"], 0, "{v}");
    assert_eq!(v["bytes"]["body"], 400 * message.len(), "{v}");
    // The same text again and again, each side's context kept: a few bytes a message
    // each way once the upgrade is done.
    let read = v["bytes"]["read"].as_u64().unwrap();
    let written = v["bytes"]["written"].as_u64().unwrap();
    assert!(read < 400 * 40 + 4 * 512, "{read} bytes read: {v}");
    assert!(written < 400 * 50 + 4 * 512, "{written} bytes written: {v}");
    assert_eq!(crate::common::schema_errors(&v), Vec::<String>::new());
    // Asked to reset its context after each message, the server compresses each
    // message alone: more bytes a message than with the context kept.
    let alone = run(
        "/ws/echo",
        &[
            "--ws-deflate-params",
            "server_no_context_takeover; server_max_window_bits=9",
        ],
    );
    assert_eq!(alone["requests"]["completed"], 400, "{alone}");
    let read_alone = alone["bytes"]["read"].as_u64().unwrap();
    assert!(read_alone > 400 * 60, "{read_alone} bytes read: {alone}");
    assert!(
        read_alone < 400 * message.len() as u64,
        "{read_alone} bytes read: {alone}"
    );
    // The room declines the extension: each connection fails as declined.
    let v = run("/ws/room", &[]);
    assert_eq!(v["requests"]["completed"], 0, "{v}");
    assert!(
        v["errors"]["ws_deflate_declined"].as_u64().unwrap() > 0,
        "{v}"
    );
    assert_eq!(crate::common::schema_errors(&v), Vec::<String>::new());
}

/// `--inject` with a ws:// URL: each user upgrades a connection of its own, sends its
/// calls with the think time between, and closes it; `--ws-ping` makes each call a
/// ping answered by its pong (connections held with heartbeats).
#[test]
fn load_runs_websocket_users_holding_connections_with_pings() {
    let s = crate::common::srv();
    let url = format!("ws://{}/ws/echo", s.addr());
    for extra in [&[][..], &["--ws-ping"][..]] {
        let mut args = vec![
            "load",
            &url,
            "--inject",
            "atOnceUsers(30)",
            "--calls",
            "3",
            "--think",
            "20ms",
            "-t",
            "1",
            "--json",
            "-",
        ];
        args.extend_from_slice(extra);
        let out = crate::common::recorder::stampede(&args);
        let text = crate::common::recorder::text(&out.stdout);
        assert!(
            out.status.success(),
            "{extra:?}: {text}{}",
            crate::common::recorder::text(&out.stderr)
        );
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["requests"]["completed"], 90, "{extra:?}: {v}");
        assert_eq!(v["sessions"]["completed"], 30, "{extra:?}: {v}");
        assert_eq!(v["connections_opened"], 30, "{extra:?}: {v}");
        assert_eq!(v["statuses"]["101"], 90, "{extra:?}: {v}");
        assert_eq!(crate::common::schema_errors(&v), Vec::<String>::new());
    }
}

/// One WebSocket client connection to Autobahn's fuzzing server at `path`, in the
/// client role of stampede's WebSocket code (the frame reader the load client feeds,
/// masked frames and closes as it writes them, permessage-deflate offered and set up
/// as the load client does): every message is echoed whole (compressed when the
/// server took the extension), every ping answered, the server's close answered with
/// its code and a broken rule with the code that names it; then the server's end of
/// the TCP connection is awaited. Returns the text messages read.
fn autobahn_client(addr: std::net::SocketAddr, path: &str) -> Vec<String> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let key = "x3JJHMbDL1EzLkh9GBhXDw==";
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Extensions: {}\r\n\r\n",
        deflate::OFFER
    )
    .unwrap();
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 1 << 16];
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0, "{path}: closed before the upgrade's answer");
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..end]).to_string();
    assert!(head.starts_with("HTTP/1.1 101"), "{path}: {head}");
    assert!(
        head.contains(&ws::accept_key(key.as_bytes())),
        "{path}: {head}"
    );
    let mut r = Reader::new(ReaderOptions {
        peer_is_client: false,
        max_message: 64 << 20,
        keep: true,
    });
    let taken = (head.split("\r\n"))
        .filter_map(|l| l.split_once(':'))
        .filter(|(n, _)| n.eq_ignore_ascii_case("sec-websocket-extensions"))
        .map(|(_, v)| v.as_bytes());
    let mut deflater = match deflate::accepted(taken) {
        Ok(Some(p)) => {
            r.inflate(p.peer_resets(false));
            Some(p.deflater(false))
        }
        Ok(None) => None,
        Err(deflate::NotOffered) => panic!("{path}: {head}"),
    };
    let mut texts = Vec::new();
    let mut seed = 0x9e37_79b9_u32;
    let mut mask = move || {
        seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        Some(seed.to_le_bytes())
    };
    let mut input = buf[end..].to_vec();
    let mut closing = false;
    loop {
        let mut out = Vec::new();
        if !closing {
            let mut close = None;
            let fed = r.feed(&input, &mut |e| match e {
                Event::Message { text, data, .. } => {
                    if text {
                        texts.push(String::from_utf8_lossy(data).to_string());
                    }
                    let op = if text { ws::TEXT } else { ws::BINARY };
                    match &mut deflater {
                        Some(d) => d.frame(&mut out, op, data, mask()),
                        None => ws::frame(&mut out, (true, false), op, data, mask()),
                    }
                }
                Event::Ping(p) => ws::frame(&mut out, (true, false), ws::PONG, p, mask()),
                Event::Pong(_) => {}
                Event::Close { code, .. } => close = Some(code),
            });
            if let Err(e) = fed {
                ws::close(&mut out, Some(e.code), e.why, mask());
                closing = true;
            } else if let Some(code) = close {
                ws::close(&mut out, code.filter(|&c| ws::sendable_code(c)), "", mask());
                closing = true;
            }
        }
        if !out.is_empty() && s.write_all(&out).is_err() {
            return texts;
        }
        // After the close: whatever comes until the server ends the connection.
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return texts,
            Ok(n) => input = chunk[..n].to_vec(),
        }
    }
}

/// Autobahn|Testsuite's client cases (its fuzzing server, [`autobahn_cases`],
/// permessage-deflate's among them): stampede's client side of RFC 6455 and RFC 7692
/// echoes what it is sent and closes as the cases expect.
#[test]
fn the_autobahn_client_cases_pass() {
    let Ok(wstest) = std::env::var("STAMPEDE_AUTOBAHN") else {
        return missing_peer("Autobahn|Testsuite's wstest (STAMPEDE_AUTOBAHN=PATH naming it; `pip install autobahntestsuite==25.10.1` under Python 2.7, as .ci/run does)");
    };
    let tmp = crate::common::recorder::tempdir::Dir::new();
    let report = tmp.0.join("report");
    // The fuzzing server takes a port, not 0: one the kernel just gave out.
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let spec = serde_json::json!({
        "url": format!("ws://{addr}"),
        "outdir": report,
        "cases": autobahn_cases(),
        "exclude-cases": [],
        "exclude-agent-cases": {},
    });
    let spec_file = tmp.0.join("spec.json");
    std::fs::write(&spec_file, spec.to_string()).unwrap();
    struct Killed(std::process::Child);
    impl Drop for Killed {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _server = Killed(
        Command::new(&wstest)
            .args(["-m", "fuzzingserver", "-s"])
            .arg(&spec_file)
            .current_dir(&tmp.0)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    crate::common::eventually(
        "the fuzzing server listens",
        Duration::from_secs(60),
        || TcpStream::connect(addr).ok(),
    );
    let count: u32 = autobahn_client(addr, "/getCaseCount")[0].parse().unwrap();
    assert_eq!(count, 325, "{count} cases");
    for case in 1..=count {
        autobahn_client(addr, &format!("/runCase?case={case}&agent=stampede"));
    }
    autobahn_client(addr, "/updateReports?agent=stampede");
    let (cases, failed, strict) = autobahn_report(&report);
    assert_eq!(cases, count as usize);
    assert!(failed.is_empty(), "{failed:?}");
    eprintln!(
        "Autobahn client cases: {} of {count} passed ({strict} OK)",
        cases - failed.len()
    );
}
