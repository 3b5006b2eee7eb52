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
