//! `--raw`: one record per request streamed to a file while the run goes, in CSV or
//! NDJSON, agreeing with the run's result request for request.

use std::process::Command;

use serde_json::Value;

use crate::common::recorder::tempdir::Dir;
use crate::common::srv;

const BIN: &str = env!("CARGO_BIN_EXE_stampede");

#[test]
fn every_request_has_its_record_with_its_target() {
    let s = srv();
    let tmp = Dir::new();
    let dir = &tmp.0;
    let targets = dir.join("targets.txt");
    std::fs::write(
        &targets,
        format!("GET {}\n\nGET {}\n", s.url("/pong"), s.url("/json")),
    )
    .unwrap();
    let raw = dir.join("records.csv");
    let json = dir.join("result.json");
    let out = Command::new(BIN)
        .args(["load", "--targets"])
        .arg(&targets)
        .args(["-n", "2000", "-c", "4", "-q", "--raw"])
        .arg(&raw)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let text = std::fs::read_to_string(&raw).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("start_unix_us,send_us,first_byte_us,end_us,status,bytes,error,connection,worker,target")
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(
        rows.len() as u64,
        r["requests"]["completed"].as_u64().unwrap()
    );
    let started = r["started_unix_ms"].as_u64().unwrap() * 1000;
    let (mut pong, mut json_n) = (0, 0);
    for row in &rows {
        assert_eq!(row.len(), 10, "{row:?}");
        let start: u64 = row[0].parse().unwrap();
        assert!(start + 1_000_000 > started, "{start} vs {started}");
        let send: u64 = row[1].parse().unwrap();
        let end: u64 = row[3].parse().unwrap();
        assert!(send <= end, "{row:?}");
        if !row[2].is_empty() {
            let first: u64 = row[2].parse().unwrap();
            assert!(first <= end, "{row:?}");
        }
        assert_eq!((row[4], row[6]), ("200", ""), "{row:?}");
        // The /pong body is 4 bytes; /json's 27.
        match (row[9], row[5]) {
            ("0", "4") => pong += 1,
            ("1", "27") => json_n += 1,
            other => panic!("target and body do not match: {other:?}"),
        }
        let worker: u32 = row[8].parse().unwrap();
        assert!(worker < 4);
        assert!(row[7].parse::<u64>().unwrap() >= 1);
    }
    // Each connection takes the list in turn: the two are sent as often, give or take
    // one per connection.
    assert!(
        (pong as i64 - json_n as i64).abs() <= 4,
        "{pong} vs {json_n}"
    );
}

#[test]
fn ndjson_records_failures_with_their_kind() {
    let s = srv();
    let out = Command::new(BIN)
        .args(["load", &s.url("/delay/300"), "-n", "3", "-c", "1", "-q"])
        .args(["--timeout", "50ms", "--raw", "-", "--raw-format", "ndjson"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 3, "{text}");
    for r in &records {
        assert_eq!(r["error"], "timeout", "{r}");
        assert_eq!(r["status"], 0);
        assert_eq!(r["first_byte_us"], Value::Null);
        let end = r["end_us"].as_u64().unwrap();
        assert!((50_000..300_000).contains(&end), "{r}");
    }
    // The summary went to standard error, out of the records' way.
    assert!(String::from_utf8_lossy(&out.stderr).contains("failed"));
}

#[test]
fn a_file_that_cannot_be_written_is_said_and_the_run_still_reports() {
    let s = srv();
    let out = Command::new(BIN)
        .args([
            "load",
            &s.url("/pong"),
            "-n",
            "20000",
            "-c",
            "2",
            "-q",
            "--raw",
            "/dev/full",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--raw /dev/full:") && err.contains("lost"),
        "{err}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("20,000 completed"));
    let both = Command::new(BIN)
        .args([
            "load",
            &s.url("/pong"),
            "-n",
            "1",
            "--raw",
            "-",
            "--json",
            "-",
        ])
        .output()
        .unwrap();
    assert_eq!(both.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&both.stderr).contains("both want standard output"));
}
