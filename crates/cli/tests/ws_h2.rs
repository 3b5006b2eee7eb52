//! WebSocket over HTTP/2 (RFC 8441) end to end: `stampede load ws://… --http2`
//! against the reference server and Hypercorn (another implementation), and the h2
//! library with wsproto (others again) against the reference server.

use std::process::Command;

use serde_json::Value;

use crate::common::recorder::{stampede, text};

const PEER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/peers/ws_h2_peer.py");

/// A run's JSON result (the run must have exited 0).
fn run(args: &[&str]) -> Value {
    let out = stampede(&[args, &["-q", "--json", "-"]].concat());
    let stdout = text(&out.stdout);
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}{}", text(&out.stderr)))
}

#[test]
fn load_times_round_trips_over_http2_streams() {
    let s = crate::common::srv();
    let url = format!("ws://{}/ws/echo", s.addr());
    // Closed model, messages made for each call, and pipelined ones.
    for extra in [
        &["--ws-message", "{\"n\":{{.RequestNumber}}}"][..],
        &["--pipeline", "4"][..],
        &["--ws-deflate", "--ws-protocol", "chat"][..],
    ] {
        let v = run(&[
            &["load", &url, "--http2", "-n", "600", "-c", "3", "-t", "1"][..],
            extra,
        ]
        .concat());
        assert_eq!(v["requests"]["completed"], 600, "{extra:?}: {v}");
        assert_eq!(v["requests"]["failed"], 0, "{extra:?}: {v}");
        assert_eq!(v["websocket"]["upgrade"]["count"], 3, "{extra:?}: {v}");
        if extra[0] == "--ws-message" {
            // Each message its own: 0..599 as JSON, echoed whole.
            let bytes: usize = (0..600).map(|n: usize| 6 + n.to_string().len()).sum();
            assert_eq!(v["bytes"]["body"], bytes, "{v}");
        }
    }
    // A fixed rate over the streams, and a push stream timed per message.
    let v = run(&[
        "load", &url, "--http2", "-R", "400", "-d", "1s", "-c", "4", "-t", "1",
    ]);
    assert!(v["requests"]["completed"].as_u64().unwrap() >= 380, "{v}");
    assert_eq!(v["requests"]["failed"], 0, "{v}");
    let push = format!("ws://{}/ws/push?interval_ms=5&count=6&stamp=1", s.addr());
    let v = run(&[
        "load", &push, "--http2", "--stream", "-n", "4", "-c", "2", "-t", "1",
    ]);
    assert_eq!(v["requests"]["completed"], 4, "{v}");
    assert_eq!(v["bytes"]["body"], 4 * 6 * 43, "{v}");
    // A room is not served over HTTP/2: each CONNECT refused with its status.
    let room = format!("ws://{}/ws/room", s.addr());
    let v = run(&["load", &room, "--http2", "-n", "3", "-c", "1", "-t", "1"]);
    assert_eq!(v["requests"]["completed"], 0, "{v}");
    assert_eq!(v["errors"]["ws_upgrade"], 3, "{v}");
    assert_eq!(v["websocket"]["refused"]["501"], 3, "{v}");
}

#[test]
fn a_server_without_extended_connect_fails_each_connection_as_a_handshake() {
    // An HTTP/1.1-only server answers the preface as no HTTP/2 server does.
    let plain = crate::common::srv_with(stampede_server::Config {
        threads: 1,
        http2: false,
        ..stampede_server::Config::default()
    });
    let url = format!("ws://{}/ws/echo", plain.addr());
    let out = stampede(&[
        "load", &url, "--http2", "-n", "3", "-c", "1", "-t", "1", "-q", "--json", "-",
    ]);
    let stdout = text(&out.stdout);
    let err = text(&out.stderr);
    // Either the preflight says it before a run, or each connection fails by kind.
    match serde_json::from_str::<Value>(&stdout) {
        Ok(v) => {
            assert_eq!(v["requests"]["completed"], 0, "{v}");
            assert!(v["errors"]["ws_handshake"].as_u64().unwrap_or(0) > 0, "{v}");
        }
        Err(_) => assert!(err.contains("h2c"), "{err}"),
    }
}

#[test]
fn flags_that_do_not_fit_a_websocket_over_http2_are_refused_by_name() {
    let out = stampede(&[
        "load",
        "ws://127.0.0.1:9/ws/echo",
        "--http2",
        "--streams",
        "4",
        "-n",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("--streams"), "{err}");
    let out = stampede(&["load", "ws://127.0.0.1:9/ws/echo", "--http3", "-n", "1"]);
    let err = text(&out.stderr);
    assert!(err.contains("--http3") && err.contains("--http2"), "{err}");
}

#[test]
fn the_h2_library_opens_websockets_on_the_reference_servers_streams() {
    let Some(python) =
        crate::common::python_with("STAMPEDE_WS_PYTHON", &["h2", "wsproto"], "h2 wsproto")
    else {
        return;
    };
    let s = crate::common::srv();
    let (host, port) = (s.addr().ip().to_string(), s.addr().port().to_string());
    let out = Command::new(&python)
        .args([PEER, "client", &host, &port, "/ws/echo", "20"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["enable_connect"], true, "{v}");
    assert_eq!(v["status"], "200", "{v}");
    assert_eq!(v["subprotocol"], "chat.v2", "{v}");
    assert_eq!(v["extensions"], "permessage-deflate", "{v}");
    // Binary messages up to 67 KB: past the first window, so flow control carried
    // them both ways.
    assert_eq!(v["text"], 20, "{v}");
    assert_eq!(v["binary"], 20, "{v}");
    assert_eq!(v["pong"], true, "{v}");
    assert_eq!(v["close_code"], 1000, "{v}");
    assert_eq!(v["stream_ended"], true, "{v}");
    // A path without an endpoint: refused with its status.
    let out = Command::new(&python)
        .args([PEER, "client", &host, &port, "/ws/nowhere", "1"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "404", "{v}");
}

#[test]
fn load_opens_websockets_over_http2_against_hypercorn() {
    let Some(python) =
        crate::common::python_with("STAMPEDE_WS_PYTHON", &["hypercorn", "h2"], "hypercorn h2")
    else {
        return;
    };
    let (mut server, port) = crate::common::python_server(&python, PEER, &["serve"]);
    let base = format!("ws://127.0.0.1:{port}");
    let echo = format!("{base}/echo");
    let message = "{\"op\":\"quote\",\"symbol\":\"ACME\",\"bid\":101.25} ".repeat(8);
    let mut read = Vec::new();
    for deflate in [false, true] {
        let mut args = vec![
            "load",
            &echo,
            "--http2",
            "-n",
            "300",
            "-c",
            "3",
            "-t",
            "1",
            "--ws-protocol",
            "chat",
            "--ws-message",
            &message,
            "--timeout",
            "10s",
        ];
        if deflate {
            args.push("--ws-deflate");
        }
        let v = run(&args);
        assert_eq!(v["requests"]["completed"], 300, "deflate {deflate}: {v}");
        assert_eq!(v["requests"]["failed"], 0, "{v}");
        assert_eq!(v["bytes"]["body"], 300 * message.len(), "{v}");
        read.push(v["bytes"]["read"].as_u64().unwrap());
    }
    // Compressed, the same messages read in far fewer bytes.
    assert!(read[1] < read[0] / 4, "{read:?}");
    // A path the application closes before accepting: refused with Hypercorn's status.
    let v = run(&[
        "load",
        &format!("{base}/nowhere"),
        "--http2",
        "-n",
        "2",
        "-c",
        "1",
        "-t",
        "1",
    ]);
    assert_eq!(v["requests"]["completed"], 0, "{v}");
    assert_eq!(v["websocket"]["refused"]["403"], 2, "{v}");
    drop(server.stdin.take());
    let _ = server.wait();
}
