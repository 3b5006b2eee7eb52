//! `stampede artillery run`: an Artillery 2 script run against the reference server
//! on 127.0.0.1:0 (users arriving as its phases say, each walking its scenario once),
//! the summary report in Artillery's layout and its JSON report, expectations that
//! fail giving Artillery's exit status, what cannot run refused by name — and the
//! same script run by Artillery itself (STAMPEDE_ARTILLERY: its `artillery` launcher),
//! whose counters must be stampede's. Every run is bounded by its phases.

use crate::common::recorder::{stampede, tempdir, text};

/// Twelve users in one second, each logging in with its row (one row in four has a
/// wrong password), listing the items, adding two to its cart and looking at the
/// second item it was shown.
fn script(url: &str) -> String {
    format!(
        r#"config:
  target: "{url}"
  phases:
    - duration: 1
      arrivalCount: 12
  payload:
    path: "users.csv"
    fields: ["user", "password"]
    order: sequence
  plugins:
    expect: {{}}
scenarios:
  - name: buyer
    flow:
      - post:
          url: "/shop/login"
          json:
            user: "{{{{ user }}}}"
            password: "{{{{ password }}}}"
          capture:
            - json: "$.token"
              as: token
          expect:
            - statusCode: 200
      - get:
          url: "/shop/items"
          headers:
            Authorization: "Bearer {{{{ token }}}}"
          capture:
            - json: "$.items[1].id"
              as: second
          expect:
            - statusCode: 200
            - contentType: json
      - loop:
          - post:
              url: "/shop/cart"
              headers:
                Authorization: "Bearer {{{{ token }}}}"
              json:
                item: "{{{{ $loopElement }}}}"
                qty: 2
        over:
          - 101
          - 103
      - get:
          url: "/shop/items/{{{{ second }}}}"
          headers:
            Authorization: "Bearer {{{{ token }}}}"
          expect:
            - hasProperty: price
"#
    )
}

fn files(url: &str) -> (tempdir::Dir, String) {
    let dir = tempdir::Dir::new();
    std::fs::write(
        dir.0.join("users.csv"),
        "ann,pw-ann\nbob,pw-bob\ncy,pw-cy\ndee,wrong\n",
    )
    .unwrap();
    let path = dir.0.join("shop.yml");
    std::fs::write(&path, script(url)).unwrap();
    (dir, path.to_string_lossy().into_owned())
}

/// The counters both tools must agree on.
const SHARED: [&str; 9] = [
    "vusers.created",
    "vusers.completed",
    "vusers.failed",
    "http.requests",
    "http.codes.200",
    "http.codes.401",
    "plugins.expect.ok",
    "plugins.expect.failed",
    "errors.Failed capture or match",
];

#[test]
fn a_script_runs_as_artillery_runs_it_and_reports_in_its_layout() {
    let (_server, url) = crate::common::serve(&[]);
    let url = url.trim_end_matches('/').to_string();
    let (dir, path) = files(&url);
    let report = dir.0.join("report.json");
    let out = stampede(&[
        "artillery",
        "run",
        &path,
        "--output",
        report.to_str().unwrap(),
    ]);
    // Three logins answered 401 fail their expectation: Artillery's exit status 21.
    assert_eq!(out.status.code(), Some(21), "{}", text(&out.stderr));
    let printed = text(&out.stdout);
    // A report every ten seconds of the clock while it runs (one or two for this
    // second of arrivals), then the summary; the periods add up to the whole.
    let (periods, summary) = printed
        .split_once("All VUs finished.")
        .unwrap_or_else(|| panic!("{printed}"));
    assert!(periods.contains("Metrics for period to: "), "{printed}");
    // And a line as its one phase starts and as it completes, in that order.
    let started = periods.find("Phase started: unnamed (index: 0, duration: 1s) ");
    let completed = periods.find("Phase completed: unnamed (index: 0, duration: 1s) ");
    assert!(
        started.zip(completed).is_some_and(|(s, c)| s < c),
        "{periods}"
    );
    let total = |name: &str| -> u64 {
        (periods.lines())
            .filter_map(|l| l.strip_prefix(&format!("{name}: ")))
            .map(|v| v.trim_start_matches('.').trim().parse::<u64>().unwrap())
            .sum()
    };
    assert_eq!(total("http.requests"), 48, "{periods}");
    assert_eq!(total("vusers.created"), 12, "{periods}");
    assert_eq!(total("http.codes.401"), 3, "{periods}");
    for line in [
        "Summary report @ ",
        "vusers.created: ................................................................ 12\n",
        "vusers.completed: .............................................................. 9\n",
        "vusers.failed: ................................................................. 3\n",
        "http.codes.401: ................................................................ 3\n",
        "http.codes.200: ................................................................ 45\n",
        "http.requests: ................................................................. 48\n",
        "plugins.expect.failed.statusCode: .............................................. 3\n",
        "errors.Failed capture or match: ................................................ 3\n",
        "http.response_time:\n  min: ....",
        "vusers.session_length:\n",
        "Log file: ",
    ] {
        assert!(summary.contains(line), "wanted {line:?} in:\n{summary}");
    }
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let c = &r["aggregate"]["counters"];
    assert_eq!(c["plugins.expect.ok"], 9 + 2 * 9 + 9, "{c}");
    assert_eq!(c["plugins.expect.ok.contentType"], 9);
    assert_eq!(c["vusers.created_by_name.buyer"], 12);
    let rt = &r["aggregate"]["summaries"]["http.response_time"];
    assert_eq!(rt["count"], 48);
    assert!(rt["p99"].as_f64().unwrap() >= rt["median"].as_f64().unwrap());
    assert!(!r["intermediate"].as_array().unwrap().is_empty());

    // The journey file the script became, with its payload beside it, runs as any
    // journey does: closed here, each user walking it again and again.
    let journey = dir.0.join("shop.toml");
    let out = stampede(&[
        "artillery",
        "run",
        &path,
        "--journey-out",
        journey.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(dir.0.join("users.journey.csv").exists());
    let json = dir.0.join("closed.json");
    let out = stampede(&[
        "load",
        &url,
        "--journey",
        journey.to_str().unwrap(),
        "-c",
        "2",
        "-t",
        "1",
        "-n",
        "40",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let closed: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let statuses = closed["statuses"].as_object().unwrap();
    assert!(
        statuses.keys().all(|k| k == "200" || k == "401"),
        "{statuses:?}"
    );

    // The same script run by Artillery itself: the same users, requests and answers.
    let Some(artillery) = std::env::var_os("STAMPEDE_ARTILLERY") else {
        crate::common::missing_peer("Artillery 2 (STAMPEDE_ARTILLERY: its launcher)");
        return;
    };
    let theirs = dir.0.join("theirs.json");
    let run = std::process::Command::new(artillery)
        .args(["run", &path, "--output", theirs.to_str().unwrap()])
        .env("ARTILLERY_DISABLE_TELEMETRY", "true")
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(21), "{}", text(&run.stderr));
    let t: serde_json::Value = serde_json::from_slice(&std::fs::read(&theirs).unwrap()).unwrap();
    for k in SHARED {
        assert_eq!(
            c[k], t["aggregate"]["counters"][k],
            "{k}: ours {c}, Artillery's {}",
            t["aggregate"]["counters"]
        );
    }
}

#[test]
fn what_a_script_asks_that_cannot_run_is_refused_before_any_load() {
    let (dir, path) = files("http://127.0.0.1:9");
    let bad = dir.0.join("bad.yml");
    for (edit, says) in [
        (
            script("http://127.0.0.1:9")
                .replace("  plugins:\n", "  processor: \"./hooks.js\"\n  plugins:\n"),
            "config.processor: not run by stampede; JavaScript functions do not run here",
        ),
        (
            script("http://127.0.0.1:9").replace(
                "      arrivalCount: 12",
                "      arrivalCount: 12\n      arivalRate: 2",
            ),
            "bad.yml: line 6, column 7: config.phases[0]: unknown field `arivalRate`",
        ),
    ] {
        std::fs::write(&bad, edit).unwrap();
        let out = stampede(&["artillery", "run", bad.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2));
        assert!(text(&out.stderr).contains(says), "{}", text(&out.stderr));
    }
    let out = stampede(&["artillery", "run", &path, "--environment", "staging"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--environment: not taken by stampede"),
        "{}",
        text(&out.stderr)
    );
    let out = stampede(&["artillery", "launch", &path]);
    assert_eq!(out.status.code(), Some(2));
}
