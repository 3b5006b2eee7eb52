//! Segments of one run in separate processes against the reference server: a shared
//! start, each its exact share, and every result saying which segment it was.

use std::process::{Child, Command, Output, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

fn spawn(args: &[String]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_stampede"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn stampede(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_stampede"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn three_segments_share_one_fixed_rate_run() {
    let srv = crate::common::srv();
    let dir = std::env::temp_dir().join(format!("stampede-segments-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let at = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        + 1.0;
    let children: Vec<(Child, std::path::PathBuf)> = (1..=3)
        .map(|k| {
            let json = dir.join(format!("{k}.json"));
            let hlog = dir.join(format!("{k}.hlog"));
            let args = [
                "load",
                "-q",
                "--rate",
                "900",
                "-d",
                "2s",
                "-c",
                "7",
                "-t",
                "1",
                "--segment",
                &format!("{k}/3"),
                "--start-at",
                &format!("{at:.3}"),
                "--json",
                json.to_str().unwrap(),
                "--hlog",
                hlog.to_str().unwrap(),
                &srv.url("/pong"),
            ]
            .map(String::from);
            (spawn(&args), json)
        })
        .collect();
    let mut completed = 0;
    let mut starts = Vec::new();
    for (k, (child, json)) in children.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        assert_eq!(r["origin"]["segment"], format!("{}/3", k + 1));
        assert_eq!(r["origin"]["shared_start"], true);
        assert_eq!(r["origin"]["clock"], "realtime");
        // 7 connections over 3 segments: 3, 2, 2.
        let conns = r["connections_opened"].as_u64().unwrap();
        assert!(
            conns <= [3, 2, 2][k],
            "segment {}: {conns} connections",
            k + 1
        );
        completed += r["requests"]["completed"].as_u64().unwrap();
        starts.push(r["started_unix_ms"].as_u64().unwrap());
    }
    // One schedule: 900/s for 2 s, every arrival owned by one segment.
    assert!((1790..=1800).contains(&completed), "{completed}");
    // Every segment dates its start to the shared instant.
    assert!(starts.iter().all(|&s| s == starts[0]), "{starts:?}");
    let at_ms = (format!("{at:.3}").parse::<f64>().unwrap() * 1000.0).round() as i64;
    assert!(
        (starts[0] as i64 - at_ms).abs() <= 1,
        "{starts:?} vs {at_ms}"
    );
    // Merged: one result of the whole run, valid against the schema, its assertions
    // checked, every dialect's report written from it.
    let files: Vec<String> = (1..=3)
        .map(|k| dir.join(format!("{k}.json")).to_string_lossy().into_owned())
        .collect();
    let merged = dir.join("merged.json");
    let mut args: Vec<&str> = vec!["merge"];
    args.extend(files.iter().map(String::as_str));
    args.extend([
        "--json",
        merged.to_str().unwrap(),
        "--assert",
        "errors == 0",
    ]);
    let out = stampede(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m: serde_json::Value = serde_json::from_slice(&std::fs::read(&merged).unwrap()).unwrap();
    assert_eq!(m["requests"]["completed"].as_u64().unwrap(), completed);
    assert_eq!(m["origin"]["parts"].as_array().unwrap().len(), 3);
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../../schema/run-result.v1.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&m).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    for format in ["ab", "wrk", "httperf", "h2load", "gatling", "text"] {
        let mut args: Vec<&str> = vec!["merge", "--format", format];
        args.extend(files.iter().map(String::as_str));
        let out = stampede(&args);
        assert!(
            out.status.success(),
            "{format}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.stdout.is_empty(), "{format}");
    }
    // Their interval logs merge too: the same latencies, counted once each.
    let logs: Vec<String> = (1..=3)
        .map(|k| dir.join(format!("{k}.hlog")).to_string_lossy().into_owned())
        .collect();
    let from_logs = dir.join("logs.json");
    let mut args: Vec<&str> = vec!["merge", "--json", from_logs.to_str().unwrap()];
    args.extend(logs.iter().map(String::as_str));
    let out = stampede(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let l: serde_json::Value = serde_json::from_slice(&std::fs::read(&from_logs).unwrap()).unwrap();
    assert_eq!(l["latency"]["count"], m["latency"]["count"]);
    assert_eq!(l["latency"]["percentiles"], m["latency"]["percentiles"]);
    // A segment given twice is refused, naming both.
    let out = stampede(&["merge", &files[0], &files[0]]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("given twice (results 1 and 2)"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_segments_and_starts_say_what_is_accepted() {
    for (args, says) in [
        (&["--segment", "5/4"][..], "from 1 to 4"),
        (&["--segment", "0/4"], "from 1 to 4"),
        (&["--segment", "1/0"], "at least 1"),
        (&["--start-at", "soon"], "RFC 3339"),
        (&["--start-at", "1000", "--start-strict"], "passed"),
        (&["--segment", "3/3", "-c", "2", "-n", "10"], "gets none"),
    ] {
        let mut all = vec!["load", "-q"];
        all.extend_from_slice(args);
        all.push("http://127.0.0.1:9/");
        let out = stampede(&all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}
