//! Standard input wherever a file is read: a targets list, a body, a result to merge or
//! to report, so that runs chain as shell pipelines do.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::common::srv;

const BIN: &str = env!("CARGO_BIN_EXE_stampede");

/// Runs stampede with `args`, `input` on its standard input.
fn piped(args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn targets_results_and_reports_flow_through_standard_input() {
    let s = srv();
    let targets = format!("GET {}\n\nGET {}\n", s.url("/pong"), s.url("/bytes/100"));
    let run = piped(
        &[
            "load",
            "--targets",
            "-",
            "-n",
            "200",
            "-c",
            "2",
            "-q",
            "--json",
            "-",
        ],
        targets.as_bytes(),
    );
    let r: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(r["requests"]["completed"], 200, "{r}");
    let merged = piped(&["merge", "-", "--json", "-"], &run.stdout);
    let m: Value = serde_json::from_slice(&merged.stdout).unwrap();
    assert_eq!(m["requests"]["completed"], 200);
    assert_eq!(
        m["histograms"], r["histograms"],
        "a merge of one is the run"
    );
    let html = piped(&["report", "-", "-o", "-"], &merged.stdout);
    let html = String::from_utf8(html.stdout).unwrap();
    assert!(
        html.starts_with("<!DOCTYPE html>") && html.contains("200"),
        "{}",
        &html[..200.min(html.len())]
    );
}

#[test]
fn a_body_comes_from_standard_input() {
    let rec = crate::common::recorder::Recorder::start();
    piped(
        &[
            "load",
            &rec.url("/in"),
            "-m",
            "POST",
            "--body-file",
            "-",
            "-n",
            "3",
            "-c",
            "1",
            "-q",
        ],
        b"0123456789",
    );
    let seen = rec.seen();
    assert_eq!(seen.len(), 3);
    assert!(seen
        .iter()
        .all(|r| r.method == "POST" && r.body == b"0123456789"));
}

#[test]
fn a_report_of_something_that_is_neither_names_both_forms() {
    let out = Command::new(BIN).args(["report", "nope"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("neither a bench id") && err.contains("'-' for standard input"),
        "{err}"
    );
}
