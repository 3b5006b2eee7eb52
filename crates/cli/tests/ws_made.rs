//! `stampede load ws://… --ws-message TEMPLATE`: each message made for its call from
//! call data templates, against the reference server's echo on 127.0.0.1:0, and the
//! templates that cannot apply refused by name before the run.

use serde_json::Value;

use crate::common::recorder::{stampede, text};

/// The bytes of `{"n":0}` … `{"n":<n-1>}`.
fn numbered(n: u64) -> u64 {
    (0..n).map(|i| 6 + i.to_string().len() as u64).sum()
}

#[test]
fn each_message_is_made_from_the_template_for_its_call() {
    let s = crate::common::srv();
    let url = format!("ws://{}/ws/echo", s.addr());
    // Plain, pipelined (the first batch made before the upgrade is answered), and
    // compressed: every message echoed at the length made for it.
    for extra in [&[][..], &["--pipeline", "4"], &["--ws-deflate"]] {
        let mut args = vec![
            "load",
            &url,
            "-n",
            "300",
            "-c",
            "3",
            "-t",
            "1",
            "--ws-message",
            r#"{"n":{{.RequestNumber}}}"#,
            "--json",
            "-",
        ];
        args.extend_from_slice(extra);
        let out = stampede(&args);
        let got = text(&out.stdout);
        assert!(
            out.status.success(),
            "{extra:?}: {got}{}",
            text(&out.stderr)
        );
        let v: Value = serde_json::from_str(&got).unwrap();
        assert_eq!(v["requests"]["completed"], 300, "{extra:?}: {v}");
        assert_eq!(v["requests"]["failed"], 0, "{extra:?}: {v}");
        // The same message 300 times would be 2,100 bytes: these are 2,590.
        assert_eq!(v["bytes"]["body"], numbered(300), "{extra:?}: {v}");
        assert_eq!(crate::common::schema_errors(&v), Vec::<String>::new());
    }
}

#[test]
fn templates_that_cannot_apply_are_refused_by_name() {
    let big = "{{randomString 1048576}}".repeat(17);
    let cases: [(&[&str], &str); 5] = [
        (
            &["load", "ws://127.0.0.1:9/", "--ws-ping", "--ws-message", "{{.RequestNumber}}"],
            "--ws-ping: a ping carries the same message each time",
        ),
        (
            &["load", "ws://127.0.0.1:9/", "--ws-message", "{{.MethodName}}"],
            "--ws-message: {{.MethodName}}: not a call data template taken here (taken: .WorkerID,",
        ),
        (
            &["load", "ws://127.0.0.1:9/", "--ws-message", "{{.RequestNumber"],
            "goes in a file given with --body-file",
        ),
        (
            &["load", "ws://127.0.0.1:9/", "--ws-message", &big],
            "--ws-message: its templates can make a message of 17825792 bytes; a message is at most 16777216",
        ),
        (
            &[
                "load",
                "ws://127.0.0.1:9/",
                "--ws-message",
                "{{.UUID}}",
                "--save-spec",
                "-",
            ],
            "--save-spec: the call data's templates make each call's message as it is sent",
        ),
    ];
    for (args, said) in cases {
        let out = stampede(args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{said}: {err}");
        assert!(err.contains(said), "{said}: {err}");
    }
}

#[test]
fn body_lines_are_messages_sent_in_turn() {
    let s = crate::common::srv();
    let url = format!("ws://{}/ws/echo", s.addr());
    let dir = std::env::temp_dir().join(format!("stampede-ws-lines-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("messages.txt");
    // Three messages (a blank line is skipped), the connection sending them in turn:
    // 90 round trips, one at a time, are thirty of each.
    std::fs::write(&file, "a\r\n\nbb\nccc\n").unwrap();
    let file = file.to_str().unwrap();
    let lines = |tail: &[&str]| {
        let mut args = vec![
            "load",
            &url,
            "-n",
            "90",
            "-c",
            "1",
            "-t",
            "1",
            "--body-lines",
            file,
        ];
        args.extend_from_slice(tail);
        stampede(&args)
    };
    let out = lines(&["--json", "-"]);
    let got = text(&out.stdout);
    assert!(out.status.success(), "{got}{}", text(&out.stderr));
    let v: Value = serde_json::from_str(&got).unwrap();
    assert_eq!(v["requests"]["completed"], 90, "{v}");
    assert_eq!(v["bytes"]["body"], 30 * (1 + 2 + 3), "{v}");
    // The lines travel in a saved spec, and run from it the same.
    let spec = dir.join("spec.json");
    let spec = spec.to_str().unwrap();
    let out = lines(&["--save-spec", spec]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = stampede(&["load", "--spec", spec, "--json", "-"]);
    let v: Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    assert_eq!(v["bytes"]["body"], 30 * (1 + 2 + 3), "{v}");
    // Lines that cannot be messages are named by line.
    std::fs::write(dir.join("bad.txt"), b"ok\n\xff\xfe\n").unwrap();
    let bad = dir.join("bad.txt");
    let out = stampede(&["load", &url, "--body-lines", bad.to_str().unwrap()]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("bad.txt:2: not UTF-8 text"), "{err}");
    let out = stampede(&["load", &url, "--body-lines", file, "--ws-ping"]);
    let err = text(&out.stderr);
    assert!(
        err.contains("--body-lines: not for ws:// or wss:// URLs: each line is a data message"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs `load` with `args` against `path` on `s`, as JSON.
fn run(s: &stampede_server::Running, path: &str, args: &[&str]) -> Value {
    let url = format!("ws://{}{path}", s.addr());
    let mut all = vec!["load", &url, "-t", "1", "--json", "-"];
    all.extend_from_slice(args);
    let out = stampede(&all);
    let got = text(&out.stdout);
    serde_json::from_str(&got).unwrap_or_else(|e| panic!("{e}: {got}{}", text(&out.stderr)))
}

#[test]
fn each_answer_is_known_by_what_it_holds() {
    let s = crate::common::srv();
    // Two members of a room: each message reaches both, and each member's answer is
    // its own message, known by its UUID — the other's are read and let go.
    let v = run(
        &s,
        "/ws/room?name=expect",
        &[
            "-n",
            "200",
            "-c",
            "2",
            "--ws-message",
            r#"{"from":"{{.UUID}}","n":{{.RequestNumber}}}"#,
            "--ws-expect",
            r#""from":"{{.UUID}}""#,
        ],
    );
    assert_eq!(v["requests"]["completed"], 200, "{v}");
    assert_eq!(v["requests"]["failed"], 0, "{v}");
    let unmatched = v["websocket"]["unmatched"].as_u64().unwrap_or(0);
    assert!((1..=200).contains(&unmatched), "{unmatched}: {v}");
    assert_eq!(crate::common::schema_errors(&v), Vec::<String>::new());
    // A fixed expectation: the echo holds it, and nothing else came.
    let v = run(
        &s,
        "/ws/echo",
        &[
            "-n",
            "50",
            "-c",
            "1",
            "--ws-message",
            "ok 1",
            "--ws-expect",
            "ok",
        ],
    );
    assert_eq!(v["requests"]["completed"], 50, "{v}");
    assert!(v["websocket"].get("unmatched").is_none(), "{v}");
    // One that no answer holds: each message times out, its echo counted as no answer.
    let v = run(
        &s,
        "/ws/echo",
        &[
            "-n",
            "3",
            "-c",
            "1",
            "--timeout",
            "300ms",
            "--ws-expect",
            "never",
        ],
    );
    assert_eq!(v["requests"]["completed"], 0, "{v}");
    assert_eq!(v["errors"]["timeout"], 3, "{v}");
    assert_eq!(v["websocket"]["unmatched"], 3, "{v}");
    // Refused where it cannot apply.
    for (args, said) in [
        (&["--ws-ping", "--ws-expect", "x"][..], "--ws-expect"),
        (&["--stream", "--ws-expect", "x"][..], "--ws-expect"),
        (
            &["--ws-expect", "{{.UUID}}"][..],
            "give the message with --ws-message",
        ),
    ] {
        let mut all = vec!["load", "ws://127.0.0.1:9/"];
        all.extend_from_slice(args);
        let out = stampede(&all);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(said), "{args:?}: {err}");
    }
}

/// `--ws-steps FILE`: a session's send/expect steps from the command line, sent in
/// turn with each answer known by its step's text; a step whose answer never holds
/// it times out; a line that is not a step is named with its fault.
#[test]
fn steps_from_a_file_are_sent_in_turn_and_answered_by_their_text() {
    let s = crate::common::srv();
    let dir = std::env::temp_dir().join(format!("stampede-ws-steps-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let steps = dir.join("steps.jsonl");
    std::fs::write(
        &steps,
        "{\"send\": \"join\", \"expect\": \"join\"}\n\n{\"send\": \"say hi\"}\r\n{\"send\": \"leave\", \"expect\": \"leave\"}\n",
    )
    .unwrap();
    let file = steps.to_str().unwrap();
    for extra in [&[][..], &["--http2"]] {
        let v = run(
            &s,
            "/ws/echo",
            &[&["-n", "30", "-c", "1", "--ws-steps", file][..], extra].concat(),
        );
        assert_eq!(v["requests"]["completed"], 30, "{extra:?}: {v}");
        assert_eq!(v["requests"]["failed"], 0, "{v}");
        // The connection goes through join, say hi, leave in turn, ten times: 4 + 6
        // + 5 bytes each time.
        assert_eq!(v["bytes"]["body"], 150, "{v}");
    }
    // An answer that never holds its step's text: timed out, the echo counted
    // unmatched.
    let never = dir.join("never.jsonl");
    std::fs::write(&never, "{\"send\": \"ping\", \"expect\": \"pong\"}\n").unwrap();
    let v = run(
        &s,
        "/ws/echo",
        &[
            "-n",
            "2",
            "-c",
            "1",
            "--timeout",
            "300ms",
            "--ws-steps",
            never.to_str().unwrap(),
        ],
    );
    assert_eq!(v["requests"]["completed"], 0, "{v}");
    assert_eq!(v["errors"]["timeout"], 2, "{v}");
    assert_eq!(v["websocket"]["unmatched"], 2, "{v}");
    // Lines that are not steps, named by file and line.
    for (body, says) in [
        (
            "{\"send\": \"a\"}\n{\"sned\": \"b\"}\n",
            ":2: \"sned\" is not a step's",
        ),
        ("{\"send\": 3}\n", ":1: \"send\" must be a string"),
        ("[\"a\"]\n", ":1: not an object"),
        (
            "{\"send\": \"a\", \"expect\": 1}\n",
            ":1: \"expect\" must be a string",
        ),
        ("send a\n", ":1: not JSON"),
        ("\n\n", "no steps"),
    ] {
        let bad = dir.join("bad.jsonl");
        std::fs::write(&bad, body).unwrap();
        let url = format!("ws://{}/ws/echo", s.addr());
        let out = stampede(&["load", &url, "-n", "1", "--ws-steps", bad.to_str().unwrap()]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{body:?}: {err}");
        assert!(err.contains(says), "{body:?}: {err}");
    }
    // Not with the flags it replaces.
    let url = format!("ws://{}/ws/echo", s.addr());
    let out = stampede(&["load", &url, "--ws-steps", file, "--ws-message", "x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--ws-message"),
        "{}",
        text(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
