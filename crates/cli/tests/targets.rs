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

/// `load --targets FILE` with its arguments and `extra`; (exit code, stdout, stderr).
fn load_list(list: &std::path::Path, extra: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .args(["load", "--targets"])
        .arg(list)
        .args(extra)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn a_list_naming_two_servers_gives_each_its_pool_and_share() {
    let (a, b) = (srv(), srv());
    let tmp = Dir::new();
    let dir = &tmp.0;
    let list = dir.join("targets.txt");
    std::fs::write(
        &list,
        format!(
            "GET {}\n\nGET {}\n\nGET {}\n",
            a.url("/pong"),
            b.url("/json"),
            a.url("/not-here")
        ),
    )
    .unwrap();
    let json = dir.join("r.json");
    let raw = dir.join("r.csv");
    let (code, _, err) = load_list(
        &list,
        &[
            "-n",
            "3000",
            "-c",
            "6",
            "-t",
            "2",
            "-q",
            "--json",
            json.to_str().unwrap(),
            "--raw",
            raw.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let errors = schema_errors(&r);
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(r["requests"]["completed"], 3000, "{}", r["requests"]);
    assert_eq!(r["settings"]["connections"], 6);
    assert_eq!(r["settings"]["requests"], 3000);
    // Each request named with its server; the first server has two of the three
    // entries, so two thirds of the count, taken in turn.
    let t = r["targets"].as_array().unwrap();
    let name = |i: usize| t[i]["name"].as_str().unwrap().to_string();
    let n = |i: usize| t[i]["completed"].as_u64().unwrap();
    assert_eq!(name(0), format!("GET {}", a.url("/pong")));
    assert_eq!(name(1), format!("GET {}", a.url("/not-here")));
    assert_eq!(name(2), format!("GET {}", b.url("/json")));
    assert_eq!(n(0) + n(1), 2000, "{t:?}");
    assert!(n(0).abs_diff(1000) <= 3, "{t:?}");
    assert_eq!(n(2), 1000, "{t:?}");
    assert_eq!(t[1]["statuses"]["404"].as_u64(), Some(n(1)));
    assert_eq!(r["statuses"]["404"].as_u64(), Some(n(1)));
    // Records name each request by its place in the file.
    let csv = std::fs::read_to_string(&raw).unwrap();
    let mut by_place = [0u64; 3];
    for row in csv.lines().skip(1) {
        let place: usize = row.rsplit(',').next().unwrap().parse().unwrap();
        by_place[place] += 1;
    }
    assert_eq!(by_place, [n(0), n(2), n(1)], "{csv:.300}");

    // At a rate: the servers share it in the same proportion, one schedule's worth.
    let (code, out, err) = load_list(
        &list,
        &["-R", "600", "-d", "2s", "-c", "6", "-q", "--json", "-"],
    );
    assert_eq!(code, 0, "{err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(r["open"]["target_rate"], 600.0, "{}", r["open"]);
    let shape = r["settings"]["shape"].as_str().unwrap();
    assert!(shape.contains("600"), "{shape}");
    let done = r["requests"]["completed"].as_u64().unwrap();
    assert!(done.abs_diff(1200) <= 60, "{done}");
    let t = r["targets"].as_array().unwrap();
    let second = t[2]["completed"].as_u64().unwrap();
    assert!(second.abs_diff(400) <= 30, "{t:?}");

    // Segments of such a run carry the whole run's settings and merge back into it.
    let half = |k: &str| {
        let path = dir.join(format!("{k}.json"));
        let seg = format!("{k}/2");
        let args = ["-n", "3000", "-c", "6", "-q", "--segment", &seg, "--json"];
        let (code, _, err) = load_list(&list, &[&args[..], &[path.to_str().unwrap()]].concat());
        assert_eq!(code, 0, "{err}");
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(v["origin"]["segment"], seg.as_str());
        assert_eq!(v["settings"]["connections"], 6);
        assert_eq!(v["requests"]["completed"], 1500, "{}", v["requests"]);
        path
    };
    let (one, two) = (half("1"), half("2"));
    let merged = Command::new(BIN)
        .args(["merge", "--json", "-"])
        .args([&one, &two])
        .output()
        .unwrap();
    let m: Value = serde_json::from_slice(&merged.stdout).unwrap();
    assert_eq!(m["requests"]["completed"], 3000);
    let t = m["targets"].as_array().unwrap();
    assert_eq!(
        t[2]["name"].as_str(),
        Some(&*format!("GET {}", b.url("/json")))
    );
    assert_eq!(t[2]["completed"], 1000);
}

/// Two reference servers and a targets file naming `/pong` on the first and `second`
/// on the other.
fn two_servers(
    second: &str,
) -> (
    stampede_server::Running,
    stampede_server::Running,
    Dir,
    std::path::PathBuf,
) {
    let (a, b) = (srv(), srv());
    let tmp = Dir::new();
    let list = tmp.0.join("two.txt");
    std::fs::write(
        &list,
        format!("GET {}\n\nGET {}\n", a.url("/pong"), b.url(second)),
    )
    .unwrap();
    (a, b, tmp, list)
}

#[test]
fn what_cannot_share_a_list_of_servers_is_refused_by_name() {
    let (a, b, tmp, list) = two_servers("/pong");
    let file = list.to_str().unwrap();
    let (code, _, err) = load_list(&list, &["-n", "10", "-c", "1"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(file) && err.contains("1 connections for 2 servers"),
        "{err}"
    );
    let (code, _, err) = load_list(&list, &["-n", "10", "--save-spec", "/dev/null"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--save-spec") && err.contains("2 servers"),
        "{err}"
    );
    // oha's list of URLs sends to one server.
    let urls = tmp.0.join("urls.txt");
    std::fs::write(&urls, format!("{}\n{}\n", a.url("/pong"), b.url("/pong"))).unwrap();
    let out = Command::new(BIN)
        .args(["oha", "--urls-from-file", "-n", "10"])
        .arg(&urls)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("names 2 servers"), "{err}");
}

#[test]
fn vegeta_attack_shares_its_rate_among_the_servers_of_its_targets() {
    let (a, b, _tmp, list) = two_servers("/json");
    let out = Command::new(BIN)
        .args([
            "vegeta",
            "attack",
            "-rate",
            "400/s",
            "-duration",
            "1s",
            "-targets",
        ])
        .arg(&list)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["open"]["target_rate"], 400.0, "{}", r["open"]);
    let t = r["targets"].as_array().unwrap();
    let names: Vec<&str> = t.iter().map(|x| x["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            format!("GET {}", a.url("/pong")),
            format!("GET {}", b.url("/json"))
        ]
    );
    for x in t {
        let n = x["completed"].as_u64().unwrap();
        assert!(n.abs_diff(200) <= 20, "{t:?}");
    }
}

#[test]
fn a_list_of_one_request_runs_in_every_shape() {
    let s = srv();
    let tmp = Dir::new();
    let list = tmp.0.join("one.txt");
    std::fs::write(&list, format!("GET {}\n", s.url("/pong"))).unwrap();
    // Sessions take their requests from steps, not from a list: one entry is the run's
    // one request.
    let args = ["--inject", "rampUsers(4) during(1s)", "-q", "--json", "-"];
    let (code, out, err) = load_list(&list, &args);
    assert_eq!(code, 0, "{err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(r["sessions"]["completed"], 4, "{}", r["sessions"]);
    assert_eq!(r["statuses"]["200"], 4);
}
