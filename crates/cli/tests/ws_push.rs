//! `stampede load ws://… --stream`: a WebSocket push stream timed message by message
//! against the reference server's `/ws/push` and `/ws/room`, stamped messages from
//! when they were due, through the JSON result (checked against its schema), the
//! summary and the HTML report; and the flags that do not apply refused by name.

use serde_json::Value;

use crate::common::recorder::{stampede, text};

#[test]
fn load_times_a_push_stream_message_by_message() {
    let s = crate::common::srv();
    let url = format!(
        "ws://{}/ws/push?interval_ms=5&size=64&count=5&text=1&stamp=1",
        s.addr()
    );
    let dir = crate::common::recorder::tempdir::Dir::new();
    let html = dir.0.join("push.html");
    let html = html.to_str().unwrap();
    let out = stampede(&[
        "load", &url, "--stream", "-n", "4", "-c", "2", "-t", "1", "--json", "-", "--html", html,
    ]);
    let json = text(&out.stdout);
    assert!(out.status.success(), "{json}{}", text(&out.stderr));
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["requests"]["completed"], 4, "{v}");
    assert_eq!(v["requests"]["failed"], 0, "{v}");
    assert_eq!(v["bytes"]["body"], 4 * 5 * 64, "{v}");
    let st = &v["stream"];
    assert_eq!(st["mode"], "messages", "{v}");
    assert_eq!(st["events"], 20, "{v}");
    assert_eq!(st["delivery"]["stamped"], 20, "{v}");
    assert_eq!(st["delivery"]["early"], 0, "{v}");
    assert!(v["histograms"]["stream"]["delivery"].is_string(), "{v}");
    assert_eq!(crate::common::schema_errors(&v), Vec::<String>::new());
    let page = std::fs::read_to_string(html).unwrap();
    assert!(page.contains("stamped message, from when it was due"));
    assert!(page.contains("between messages"));

    // The summary: the messages, their gaps, and their delivery from when due.
    let out = stampede(&["load", &url, "--stream", "-n", "2", "-c", "1", "-t", "1"]);
    let summary = text(&out.stdout) + &text(&out.stderr);
    assert!(out.status.success(), "{summary}");
    for said in [
        "stream      messages: 10 messages",
        "first msg   p50 ",
        "msg gap     p50 ",
        "delivery    p50 ",
        "(from when due, 10 stamped; from the send: p99 ",
    ] {
        assert!(summary.contains(said), "{said}: {summary}");
    }
    assert!(!summary.contains("WARNING"), "{summary}");
}

#[test]
fn a_held_push_stream_runs_to_the_end_without_a_timeout() {
    // Pushed until closed, held to the run's end: messages counted, nothing failed
    // (no request timeout applies unless --timeout is given).
    let s = crate::common::srv();
    let url = format!("ws://{}/ws/push?interval_ms=20&stamp=1", s.addr());
    let out = stampede(&[
        "load", &url, "--stream", "-c", "3", "-d", "600ms", "-t", "1", "--json", "-",
    ]);
    let json = text(&out.stdout);
    assert!(out.status.success(), "{json}{}", text(&out.stderr));
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["requests"]["failed"], 0, "{v}");
    assert!(v["stream"]["events"].as_u64().unwrap() >= 30, "{v}");
    assert_eq!(
        v["stream"]["delivery"]["stamped"], v["stream"]["events"],
        "{v}"
    );
    // The summary says so, and does not call the run empty.
    let out = stampede(&[
        "load", &url, "--stream", "-c", "2", "-d", "300ms", "-t", "1",
    ]);
    let summary = text(&out.stdout) + &text(&out.stderr);
    assert!(out.status.success(), "{summary}");
    assert!(summary.contains("; none ended within the run"), "{summary}");
    assert!(!summary.contains("WARNING"), "{summary}");
}

#[test]
fn stamped_messages_in_a_room_are_timed_by_its_members() {
    // Each subscriber asks with a stamped message that the room sends to every
    // member: each hears its own at least, every message timed from its stamp.
    let s = crate::common::srv();
    let url = format!("ws://{}/ws/room?name=cli", s.addr());
    let out = stampede(&[
        "load",
        &url,
        "--stream",
        "--ws-stamp",
        "--ws-message",
        "hi",
        "-c",
        "3",
        "-d",
        "300ms",
        "-t",
        "1",
        "--json",
        "-",
    ]);
    let json = text(&out.stdout);
    assert!(out.status.success(), "{json}{}", text(&out.stderr));
    let v: Value = serde_json::from_str(&json).unwrap();
    let events = v["stream"]["events"].as_u64().unwrap();
    assert!((3..=9).contains(&events), "{v}");
    assert_eq!(v["stream"]["delivery"]["stamped"], events, "{v}");
    assert_eq!(crate::common::schema_errors(&v), Vec::<String>::new());
}

#[test]
fn load_refuses_what_does_not_apply_to_a_push_stream() {
    let cases: [(&[&str], &str); 5] = [
        (
            &["load", "ws://127.0.0.1:9/", "--stream", "--ws-ping"],
            "--ws-ping: --stream times the messages the server pushes",
        ),
        (
            &["load", "ws://127.0.0.1:9/", "--stream", "--pipeline", "2"],
            "--pipeline: with --stream a connection holds one push stream at a time",
        ),
        (&["load", "ws://127.0.0.1:9/", "--stream", "--sse"], "--sse"),
        (
            &["load", "ws://127.0.0.1:9/", "--stream", "--ws-stamp"],
            "--ws-stamp: with --stream only the subscription's message is sent",
        ),
        (
            &["load", "http://127.0.0.1:9/", "--ws-stamp"],
            "--ws-stamp: WebSocket messages go to a ws:// or wss:// URL",
        ),
    ];
    for (args, said) in cases {
        let out = stampede(args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(said), "{args:?}: {err}");
    }
}
