//! A figure per request for a run of several: counts, statuses, failures and
//! percentiles of each, in the summary, the JSON (checked against the schema), the
//! CSV and the HTML report, and added up exactly by `merge`.

use std::process::Command;

use serde_json::Value;

use crate::common::recorder::tempdir::Dir;
use crate::common::{schema_errors, srv};

const BIN: &str = env!("CARGO_BIN_EXE_stampede");

#[test]
fn each_request_of_a_targets_file_gets_its_figures_everywhere() {
    let s = srv();
    let tmp = Dir::new();
    let dir = &tmp.0;
    let list = dir.join("targets.txt");
    std::fs::write(
        &list,
        format!(
            "GET {}\n\nGET {}\n\nGET {}\n",
            s.url("/pong"),
            s.url("/json"),
            s.url("/not-here")
        ),
    )
    .unwrap();
    let run = |json: &str, segment: &str| {
        let out = Command::new(BIN)
            .args(["load", "--targets"])
            .arg(&list)
            .args([
                "-n",
                "3000",
                "-c",
                "3",
                "-t",
                "1",
                "-q",
                "--segment",
                segment,
            ])
            .arg("--json")
            .arg(dir.join(json))
            .arg("--targets-csv")
            .arg(dir.join(format!("{json}.csv")))
            .arg("--html")
            .arg(dir.join(format!("{json}.html")))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(json)).unwrap()).unwrap();
        (v, String::from_utf8(out.stdout).unwrap())
    };
    let (a, summary) = run("a.json", "1/2");
    let errors = schema_errors(&a);
    assert!(errors.is_empty(), "{errors:#?}");
    let t = a["targets"].as_array().unwrap();
    let names: Vec<&str> = t.iter().map(|x| x["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["GET /pong", "GET /json", "GET /not-here"]);
    let completed: u64 = t.iter().map(|x| x["completed"].as_u64().unwrap()).sum();
    assert_eq!(completed, a["requests"]["completed"].as_u64().unwrap());
    // Each connection takes the three in turn: a third each, give or take one a
    // connection.
    let n = |i: usize| t[i]["completed"].as_u64().unwrap();
    assert!((0..3).all(|i| n(i).abs_diff(500) <= 3), "{t:?}");
    assert_eq!(t[0]["statuses"]["200"].as_u64(), Some(n(0)));
    assert_eq!(t[2]["statuses"]["404"].as_u64(), Some(n(2)));
    assert_eq!(t[0]["latency"]["count"].as_u64(), Some(n(0)));
    // The summary lists them.
    assert!(summary.contains("by request  GET /pong"), "{summary}");
    let line = format!("GET /not-here  {} answered, 0 failed", n(2));
    assert!(summary.contains(&line), "{summary}");
    let csv = std::fs::read_to_string(dir.join("a.json.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows.len(), 4, "{csv}");
    let row = format!("GET /not-here,{},0,", n(2));
    let codes = format!(",404:{},", n(2));
    assert!(
        rows[3].starts_with(&row) && rows[3].ends_with(&codes),
        "{csv}"
    );
    let html = std::fs::read_to_string(dir.join("a.json.html")).unwrap();
    assert!(html.contains("<h2>By request</h2>") && html.contains("GET /not-here"));
    // The other half of the run, merged: each request's figures add up exactly.
    let (b, _) = run("b.json", "2/2");
    let merged = Command::new(BIN)
        .args(["merge", "--json", "-"])
        .arg(dir.join("a.json"))
        .arg(dir.join("b.json"))
        .output()
        .unwrap();
    assert!(
        merged.status.success(),
        "{}",
        String::from_utf8_lossy(&merged.stderr)
    );
    let m: Value = serde_json::from_slice(&merged.stdout).unwrap();
    for (i, x) in m["targets"].as_array().unwrap().iter().enumerate() {
        let sum = |v: &Value, k: &str| v["targets"][i][k].as_u64().unwrap();
        assert_eq!(
            x["completed"].as_u64().unwrap(),
            sum(&a, "completed") + sum(&b, "completed")
        );
        assert_eq!(
            x["latency"]["count"].as_u64().unwrap(),
            a["targets"][i]["latency"]["count"].as_u64().unwrap()
                + b["targets"][i]["latency"]["count"].as_u64().unwrap()
        );
    }
}

#[test]
fn a_run_of_one_request_has_no_figures_per_target() {
    let s = srv();
    let out = Command::new(BIN)
        .args(["load", &s.url("/pong"), "-n", "100", "-q", "--json", "-"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v.get("targets").is_none(), "{v}");
}
