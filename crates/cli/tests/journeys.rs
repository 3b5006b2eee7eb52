//! `stampede load --journey`: a journey walked end to end against an in-process
//! recording server on 127.0.0.1:0 — what each user sent at each step (its feeder
//! row, the token its login handed out, the cookie a step set), the figures by step
//! with their failed checks, the journeys as the run's sessions, and bad journeys
//! refused before anything runs. Every run is bounded by a request count.

use crate::common::recorder::{stampede, tempdir, text, Recorder};
use crate::common::schema_errors;

const SHOP: &str = r#"
[feeder]
file = "users.csv"

[[step]]
name = "login"
method = "POST"
url = "/authenticate"
json = { user = "{{ user }}" }
capture = [{ header = "X-Token", as = "token" }]
check = ["status 200", "body contains PONG"]

[[step]]
name = "session"
url = "/cookie/sid={{ user }}"
check = ["status 2xx"]

[[step]]
name = "resource"
url = "/resource/{{ user }}?n={{ $seq }}"
headers = { "X-Token" = "{{ token }}" }
check = ["status 200", "json $.ok exists"]
"#;

fn files(journey: &str) -> (tempdir::Dir, String) {
    let dir = tempdir::Dir::new();
    std::fs::write(dir.0.join("users.csv"), "user\nann\nbob\ncy\n").unwrap();
    let path = dir.0.join("shop.toml");
    std::fs::write(&path, journey).unwrap();
    let p = path.to_string_lossy().into_owned();
    (dir, p)
}

/// A scratch directory holding the docs' shop example (`shop.toml`, `users.csv`), for
/// a run against the reference server.
pub(crate) fn shop_example() -> tempdir::Dir {
    let dir = tempdir::Dir::new();
    let docs = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/journeys/");
    for f in ["shop.toml", "users.csv"] {
        std::fs::copy(format!("{docs}{f}"), dir.0.join(f)).unwrap();
    }
    dir
}

/// Walks `journey` against `srv` with `flags`, its result's JSON in `dir`.
fn walk(
    srv: &Recorder,
    dir: &tempdir::Dir,
    journey: &str,
    flags: &[&str],
) -> (std::process::Output, serde_json::Value) {
    let json = dir.0.join("r.json");
    let url = srv.url("/");
    let base = [
        "load",
        &url,
        "--journey",
        journey,
        "--json",
        json.to_str().unwrap(),
    ];
    let out = stampede(&[&base[..], flags].concat());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    (out, r)
}

#[test]
fn each_user_carries_its_row_token_and_cookie_and_each_step_has_its_figures() {
    let srv = Recorder::start();
    let (dir, journey) = files(SHOP);
    let (out, r) = walk(&srv, &dir, &journey, &["-c", "2", "-t", "1", "-n", "30"]);
    let seen = srv.seen();
    assert_eq!(seen.len(), 30);
    // Each connection is a user walking login, session, resource, again and again.
    let mut conns: Vec<usize> = seen.iter().map(|r| r.conn).collect();
    conns.dedup();
    conns.sort();
    conns.dedup();
    assert_eq!(conns.len(), 2, "{conns:?}");
    for conn in conns {
        let mine: Vec<_> = seen.iter().filter(|r| r.conn == conn).collect();
        // How the 30 requests split between the users is the machine's to decide.
        assert!(!mine.is_empty());
        for walk in mine.chunks(3).filter(|w| w.len() == 3) {
            let (login, session, resource) = (walk[0], walk[1], walk[2]);
            assert_eq!(
                (login.method.as_str(), login.path.as_str()),
                ("POST", "/authenticate")
            );
            let body: serde_json::Value = serde_json::from_slice(&login.body).unwrap();
            let user = body["user"].as_str().unwrap().to_string();
            assert!(["ann", "bob", "cy"].contains(&user.as_str()), "{user}");
            assert_eq!(login.headers["Content-Type"], "application/json");
            assert_eq!(session.path, format!("/cookie/sid={user}"));
            assert!(
                !session.headers.contains_key("Cookie"),
                "a new journey's jar is empty"
            );
            assert!(
                resource.path.starts_with(&format!("/resource/{user}?n=")),
                "{}",
                resource.path
            );
            assert_eq!(resource.headers["X-Token"], "s3cret");
            assert_eq!(resource.headers["Cookie"], format!("sid={user}"));
        }
    }
    // Rows are taken in sequence over the run, whichever user takes the next.
    let mut taken = std::collections::BTreeMap::new();
    for r in seen.iter().filter(|r| r.path == "/authenticate") {
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        *taken
            .entry(v["user"].as_str().unwrap().to_string())
            .or_insert(0) += 1;
    }
    let counts: Vec<u32> = taken.values().copied().collect();
    assert_eq!(taken.len(), 3, "{taken:?}");
    assert!(
        counts.iter().max().unwrap() - counts.iter().min().unwrap() <= 1,
        "{taken:?}"
    );
    // $seq hands out each number once.
    let mut seqs: Vec<u64> = (seen.iter())
        .filter_map(|r| r.path.split_once("?n=").map(|(_, n)| n.parse().unwrap()))
        .collect();
    seqs.sort();
    assert_eq!(seqs, (0..seqs.len() as u64).collect::<Vec<_>>());

    assert_eq!(schema_errors(&r), Vec::<String>::new());
    let targets = r["targets"].as_array().unwrap();
    let names: Vec<&str> = targets
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["login", "session", "resource"]);
    assert_eq!(
        targets
            .iter()
            .map(|t| t["completed"].as_u64().unwrap())
            .sum::<u64>(),
        30
    );
    assert!(targets[0].get("checks_failed").is_none(), "{}", targets[0]);
    // PONG is not JSON: every resource answer failed that check, and no other.
    let resource = &targets[2];
    assert_eq!(
        resource["checks_failed"]["json $.ok exists"],
        resource["completed"]
    );
    assert!(resource["checks_failed"].get("status 200").is_none());
    // The journeys are the run's sessions: every finished one failed that check.
    let s = &r["sessions"];
    assert_eq!(s["completed"], 0);
    assert_eq!(s["failed"], resource["completed"]);
    assert_eq!(s["max_concurrent"], 2);
    assert_eq!(s["calls"], 3);
    let summary = text(&out.stdout);
    assert!(summary.contains("failed: json $.ok exists ×"), "{summary}");
}

#[test]
fn a_capture_that_misses_ends_the_journey_and_is_counted() {
    let srv = Recorder::start();
    let journey = SHOP.replace("header = \"X-Token\"", "header = \"X-Missing\"");
    let (dir, journey) = files(&journey);
    let (_, r) = walk(&srv, &dir, &journey, &["-c", "1", "-n", "5"]);
    // Only logins: each misses its token, so no user goes further.
    assert!(srv.seen().iter().all(|r| r.path == "/authenticate"));
    let login = &r["targets"][0];
    assert_eq!(login["captures_missed"]["token: no match"], 5);
    assert_eq!(r["sessions"]["failed"], 5);
}

#[test]
fn a_bad_journey_is_refused_before_the_run_with_its_step_and_field() {
    let srv = Recorder::start();
    for (journey, says) in [
        (
            SHOP.replace("{{ token }}", "{{ tokn }}"),
            "step 3 (\"resource\"), headers.X-Token: {{ tokn }}: no variable \"tokn\"",
        ),
        (
            SHOP.replace("[feeder]", "[feeder]\nshuffle = true"),
            "line 3: unknown field `shuffle`",
        ),
        (
            SHOP.replace("status 2xx", "status 9xx"),
            "check \"status 9xx\"",
        ),
    ] {
        let (_dir, path) = files(&journey);
        let out = stampede(&["load", &srv.url("/"), "--journey", &path, "-n", "3"]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
        let err = text(&out.stderr);
        assert!(
            err.contains("shop.toml: ") && err.contains(says),
            "{says}: {err}"
        );
    }
    assert!(srv.seen().is_empty());
    let (_dir, path) = files(SHOP);
    let out = stampede(&[
        "load",
        &srv.url("/"),
        "--journey",
        &path,
        "--inject",
        "atOnceUsers(2)",
        "--think",
        "1s",
    ]);
    // The journey says what each user does: --inject's per-user flags do not apply.
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("'--journey <FILE>' cannot be used with '--think <T>'"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_feeder_gives_each_plain_request_its_row_and_a_unique_one_stops_the_run() {
    let srv = Recorder::start();
    let dir = tempdir::Dir::new();
    std::fs::write(dir.0.join("ids.csv"), "id,name\n7,ann\n8,\"b o b\"\n9,cy\n").unwrap();
    std::fs::write(
        dir.0.join("body.json"),
        "{\"id\": {{ id }}, \"n\": {{ $seq }}}",
    )
    .unwrap();
    let feeder = dir.0.join("ids.csv");
    let body = dir.0.join("body.json");
    let url = srv.url("/items/{{ id }}?u={{ $uuid }}");
    let args = |order: &str, n: &str| {
        let a = [
            "load",
            &url,
            "-m",
            "post",
            "--feeder",
            feeder.to_str().unwrap(),
            "--feeder-order",
            order,
            "-H",
            "X-Name: {{ name }}",
            "--body-file",
            body.to_str().unwrap(),
            "-c",
            "1",
            "-n",
            n,
        ];
        a.map(str::to_string)
    };
    let run = |order: &str, n: &str| {
        let a = args(order, n);
        stampede(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    // In sequence the rows go round; every request is rendered afresh.
    let out = run("sequence", "5");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let seen = srv.seen();
    let ids: Vec<&str> = seen
        .iter()
        .map(|r| r.path.split('?').next().unwrap())
        .collect();
    assert_eq!(
        ids,
        ["/items/7", "/items/8", "/items/9", "/items/7", "/items/8"]
    );
    let names: Vec<&str> = seen.iter().map(|r| r.headers["X-Name"].as_str()).collect();
    assert_eq!(names, ["ann", "b o b", "cy", "ann", "b o b"]);
    for (i, r) in seen.iter().enumerate() {
        assert_eq!(r.method, "POST");
        let b: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(b["n"], i as u64, "{}", String::from_utf8_lossy(&r.body));
        assert_eq!(
            r.path.split("?u=").nth(1).map(str::len),
            Some(36),
            "{}",
            r.path
        );
    }
    let uuids: std::collections::BTreeSet<&str> = seen
        .iter()
        .filter_map(|r| r.path.split("?u=").nth(1))
        .collect();
    assert_eq!(uuids.len(), 5);
    // Each row once: the run stops when they are used up, and says so.
    let srv = Recorder::start();
    let url = srv.url("/items/{{ id }}?u={{ $uuid }}");
    let a = [
        "load",
        &url,
        "--feeder",
        feeder.to_str().unwrap(),
        "--feeder-order",
        "unique",
        "-c",
        "1",
        "-n",
        "50",
    ];
    let out = stampede(&a);
    assert_eq!(srv.seen().len(), 3, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("--feeder: the feeder's 3 rows were each taken once"),
        "{}",
        text(&out.stderr)
    );
    // A name the feeder does not have is refused before anything is sent.
    let a = [
        "load",
        &url,
        "--feeder",
        feeder.to_str().unwrap(),
        "-H",
        "X-A: {{ nam }}",
        "-n",
        "1",
    ];
    let out = stampede(&a);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("-H X-A: {{ nam }}: no variable \"nam\" (declared: id, name"),
        "{}",
        text(&out.stderr)
    );
    assert!(srv.seen().len() == 3);
}

#[test]
fn the_shop_example_walks_the_reference_server_with_a_mix_loops_and_conditions() {
    let (_server, url) = crate::common::serve(&[]);
    let dir = shop_example();
    let journey = dir.0.join("shop.toml");
    let (json, html) = (dir.0.join("r.json"), dir.0.join("r.html"));
    let out = stampede(&[
        "load",
        &url,
        "--journey",
        journey.to_str().unwrap(),
        "-c",
        "4",
        "-t",
        "1",
        "-n",
        "600",
        "--json",
        json.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(schema_errors(&r), Vec::<String>::new());
    let t = |name: &str| {
        (r["targets"].as_array().unwrap().iter())
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {}", r["targets"]))
            .clone()
    };
    let n = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
    let (login, items, add, item) = (t("login"), t("items"), t("add"), t("item"));
    // Both journeys' logins are one figure; one row in four has a wrong password.
    assert!(n(&login["statuses"]["200"]) > 0 && n(&login["statuses"]["401"]) > 0);
    assert_eq!(
        login["captures_missed"]["token: no match"],
        login["statuses"]["401"]
    );
    assert!(login["checks_failed"]["status 200"] == login["statuses"]["401"]);
    // Every other step carried a token the login handed out: no 401 anywhere else.
    for step in [&items, &add, &item] {
        assert_eq!(step["statuses"].as_object().unwrap().len(), 1, "{step}");
        assert!(step.get("checks_failed").is_none(), "{step}");
    }
    // The loop adds the first three of the five items: three adds per item list, but
    // for the journeys the request count cut short.
    let (lists, adds) = (n(&items["completed"]), n(&add["completed"]));
    assert!(
        lists > 10 && adds <= 3 * lists && adds + 12 >= 3 * lists,
        "{lists} lists, {adds} adds"
    );
    // A mix of three buyers to one looker (the looker's item step, once a journey).
    let looks = n(&item["completed"]);
    assert!(looks > 0 && looks < lists, "{looks} looks, {lists} lists");
    let s = &r["sessions"];
    assert!(n(&s["completed"]) > 0 && n(&s["failed"]) > 0, "{s}");
    // The report's table by step names each failed check and missed capture, and its
    // chart draws each step's percentiles.
    let page = std::fs::read_to_string(&html).unwrap();
    let refused = n(&login["statuses"]["401"]);
    for want in [
        format!("check status 200 × {refused}"),
        format!("capture token: no match × {refused}"),
        "Latency by request".to_string(),
    ] {
        assert!(page.contains(&want), "no {want:?} in the report");
    }
}

#[test]
fn a_recording_becomes_a_journey_whose_handed_out_values_are_captured_and_it_replays_clean() {
    use serde_json::json;
    let (_server, url) = crate::common::serve(&[]);
    let origin = url.trim_end_matches('/').to_string();
    // Recorded on another day: the token it shows is not one the shop hands out now,
    // so only a journey that captures it again gets past the login.
    let stale = "t.ann.0000000000000000";
    let auth = json!([{"name": "Authorization", "value": format!("Bearer {stale}")}]);
    let e = |method: &str,
             path: &str,
             headers: serde_json::Value,
             body: Option<&str>,
             answer: &str| {
        let mut req =
            json!({"method": method, "url": format!("{origin}{path}"), "headers": headers});
        if let Some(b) = body {
            req["postData"] = json!({"mimeType": "application/json", "text": b});
        }
        json!({"startedDateTime": "2026-11-29T10:00:00Z", "time": 5, "request": req,
               "response": {"status": 200, "headers": [], "content": {"mimeType": "application/json", "text": answer}}})
    };
    let har = json!({"log": {"version": "1.2", "entries": [
        e("POST", "/shop/login", json!([{"name": "User-Agent", "value": "Browser"}]),
          Some(r#"{"user":"ann","password":"pw-ann"}"#), &format!(r#"{{"user":"ann","token":"{stale}"}}"#)),
        e("GET", "/shop/items", auth.clone(), None,
          r#"{"items":[{"id":101,"name":"tea"},{"id":102,"name":"coffee"},{"id":103,"name":"cocoa"}]}"#),
        e("GET", "/favicon.ico", json!([]), None, ""),
        e("POST", "/shop/cart", auth.clone(), Some(r#"{"item": 103, "qty": 2}"#),
          r#"{"user":"ann","item":103,"qty":2,"total":10.00}"#),
        e("GET", "/shop/items/103", auth, None, r#"{"id":103,"name":"cocoa","price":5.00}"#),
    ]}});
    let dir = tempdir::Dir::new();
    let (recording, journey) = (dir.0.join("shop.har"), dir.0.join("shop.toml"));
    std::fs::write(&recording, har.to_string()).unwrap();
    let out = stampede(&[
        "har",
        recording.to_str().unwrap(),
        "-o",
        journey.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stderr);
    assert!(
        said.contains("sends {{ token }}: captured from step 1's answer (json $.token)"),
        "{said}"
    );
    assert!(
        said.contains("sends {{ id }}: captured from step 2's answer (json $.items[2].id)"),
        "{said}"
    );
    assert!(said.contains("left out 1 static asset"), "{said}");
    assert!(
        said.contains(&format!("stampede load {origin}/ --journey")),
        "{said}"
    );
    // Written once: a second run does not overwrite it.
    let again = stampede(&[
        "har",
        recording.to_str().unwrap(),
        "-o",
        journey.to_str().unwrap(),
    ]);
    assert_eq!(again.status.code(), Some(2));
    assert!(text(&again.stderr).contains("the file exists"));

    let json = dir.0.join("r.json");
    let run = stampede(&[
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
    assert!(run.status.success(), "{}", text(&run.stderr));
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let targets = r["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 4);
    for t in targets {
        assert_eq!(
            t["statuses"]
                .as_object()
                .unwrap()
                .keys()
                .collect::<Vec<_>>(),
            ["200"],
            "{t}"
        );
        assert!(
            t.get("checks_failed").is_none() && t.get("captures_missed").is_none(),
            "{t}"
        );
    }
    assert!(
        r["sessions"]["completed"].as_u64().unwrap() >= 8,
        "{}",
        r["sessions"]
    );
    assert_eq!(r["sessions"]["failed"], 0);

    let bad = dir.0.join("bad.har");
    std::fs::write(&bad, "{\"log\": 1}").unwrap();
    let refused = stampede(&["har", bad.to_str().unwrap()]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        text(&refused.stderr).contains("bad.har: line 1, column 9: not a HAR file"),
        "{}",
        text(&refused.stderr)
    );
}

#[test]
fn a_journey_or_a_recording_that_never_ends_is_read_no_further_than_its_ceiling() {
    for (args, says) in [
        (
            &[
                "load",
                "http://127.0.0.1:9/",
                "--journey",
                "/dev/zero",
                "-n",
                "1",
            ][..],
            "/dev/zero: larger than 16 MiB, the most stampede reads as a journey",
        ),
        (
            &["har", "/dev/zero"][..],
            "/dev/zero: larger than 256 MiB, the most stampede reads as a recording",
        ),
    ] {
        let out = stampede(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            text(&out.stderr).contains(says),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}

#[test]
fn injected_users_arrive_on_connections_of_their_own_and_each_walks_the_journey_once() {
    let (_server, url) = crate::common::serve(&[]);
    let dir = shop_example();
    let (journey, json) = (dir.0.join("shop.toml"), dir.0.join("r.json"));
    let out = stampede(&[
        "load",
        &url,
        "--journey",
        journey.to_str().unwrap(),
        "--inject",
        "rampUsers(40) during(1 second)",
        "-t",
        "1",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(schema_errors(&r), Vec::<String>::new());
    let n = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
    let t = |name: &str| {
        (r["targets"].as_array().unwrap().iter())
            .find(|t| t["name"] == name)
            .map_or(0, |t| n(&t["completed"]))
    };
    // Forty users, each its own journey from login to its end: every fourth takes the
    // row with the wrong password and stops at the login; each buyer lists the items
    // and adds three, each looker looks at one.
    let s = &r["sessions"];
    assert_eq!(
        (n(&s["started"]), n(&s["completed"]), n(&s["failed"])),
        (40, 30, 10),
        "{s}"
    );
    assert_eq!(t("login"), 40);
    assert_eq!(t("items") + t("item"), 30);
    assert_eq!(t("add"), 3 * t("items"));
    assert_eq!(n(&r["connections_opened"]), 40, "one connection a user");
    let summary = text(&out.stdout);
    assert!(
        summary.contains(
            "users rampUsers(40).during(1s), each walking shop.toml (buyer 3 : looker 1) once"
        ),
        "{summary}"
    );
}

#[test]
fn a_capacity_search_on_a_journey_offers_users_and_counts_journeys() {
    let (_server, url) = crate::common::serve(&[]);
    let dir = shop_example();
    let (journey, json) = (dir.0.join("shop.toml"), dir.0.join("r.json"));
    let search = |condition: &str, steps: &str| {
        stampede(&[
            "load",
            &url,
            "--journey",
            journey.to_str().unwrap(),
            "--find-max",
            condition,
            "--max-rate",
            "40",
            "--start-rate",
            "20",
            "--step-duration",
            "500ms",
            "--max-steps",
            steps,
            "-t",
            "1",
            "--json",
            json.to_str().unwrap(),
        ])
    };
    // A quarter of the example's users fail at their login: a search that allows
    // that many runs its steps; each step's figures are journeys, not requests
    // (three to six a journey).
    let out = search("journeys_failed < 40%", "3");
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(schema_errors(&r), Vec::<String>::new());
    let c = &r["capacity"];
    assert_eq!(c["per"], "journey", "{c}");
    let steps = c["steps"].as_array().unwrap();
    assert!(!steps.is_empty());
    for s in steps {
        let (rate, achieved) = (
            s["rate"].as_f64().unwrap(),
            s["achieved_rps"].as_f64().unwrap(),
        );
        assert!(achieved <= rate * 1.2, "{s}");
    }
    assert!(
        r["sessions"]["started"].as_u64().unwrap() >= 5,
        "{}",
        r["sessions"]
    );
    let said = text(&out.stdout);
    assert!(said.contains("journeys/s"), "{said}");
    // One that allows none fails its steps (20 and 10 journeys/s, ten and five users
    // in their half second), whatever the machine: every fourth user's login is
    // refused.
    let out = search("journeys_failed < 1%", "2");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let first = &r["capacity"]["steps"][0];
    assert_eq!(first["passed"], false);
    assert!(
        first["why"]
            .as_str()
            .unwrap()
            .contains("journeys_failed < 1%"),
        "{first}"
    );
}

#[test]
fn live_metrics_give_each_step_its_figures_and_failed_checks() {
    use std::io::{BufRead, BufReader, Read, Write};
    let (_server, url) = crate::common::serve(&[]);
    let dir = shop_example();
    let (journey, json) = (dir.0.join("shop.toml"), dir.0.join("r.json"));
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_stampede"))
        .args(["load", &url, "--journey", journey.to_str().unwrap()])
        .args(["-c", "2", "-t", "1", "-n", "400", "-q"])
        .args(["--metrics-listen", "127.0.0.1:0", "--metrics-linger", "30s"])
        .arg("--json")
        .arg(&json)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The address it listens on, from its first line.
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let addr = line
        .trim()
        .strip_prefix("stampede: metrics at http://")
        .and_then(|a| a.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("{line}"))
        .to_string();
    let scrape = || {
        let mut s = std::net::TcpStream::connect(&addr).ok()?;
        s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .ok()?;
        write!(
            s,
            "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
        )
        .ok()?;
        let mut text = String::new();
        s.read_to_string(&mut text).ok()?;
        Some(text)
    };
    // The final figures, once the run has ended (the last scrape it waits for).
    let text = crate::common::eventually(
        "the final figures",
        std::time::Duration::from_secs(20),
        || scrape().filter(|t| t.contains("\nstampede_run_finished 1\n")),
    );
    let status = child.wait().unwrap();
    let mut rest = String::new();
    err.read_to_string(&mut rest).unwrap();
    assert!(status.success(), "{rest}");
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let value = |series: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("no {series} in {text}"))
    };
    // Each step's answers and failed checks are the result's.
    for t in r["targets"].as_array().unwrap() {
        let step = t["name"].as_str().unwrap();
        let answered = value(&format!("stampede_step_requests_total{{step=\"{step}\"}}"));
        assert_eq!(answered, t["completed"].as_f64().unwrap(), "{step}");
        let count = value(&format!(
            "stampede_step_latency_seconds_count{{step=\"{step}\"}}"
        ));
        assert_eq!(count, answered, "{step}: every answer timed");
        for (check, n) in t["checks_failed"].as_object().into_iter().flatten() {
            let series =
                format!("stampede_step_checks_failed_total{{step=\"{step}\",check=\"{check}\"}}");
            assert_eq!(value(&series), n.as_f64().unwrap(), "{series}");
        }
    }
    // The example's fourth user is refused at login.
    let login = value("stampede_step_checks_failed_total{step=\"login\",check=\"status 200\"}");
    assert!(login > 0.0, "{text}");
    let s = &r["sessions"];
    assert_eq!(
        value("stampede_journeys_total{outcome=\"failed\"}"),
        s["failed"].as_f64().unwrap()
    );
    assert_eq!(
        value("stampede_journeys_total{outcome=\"completed\"}"),
        s["completed"].as_f64().unwrap()
    );
}

#[test]
fn segments_of_a_journey_run_merge_into_its_whole() {
    let (_server, url) = crate::common::serve(&[]);
    let dir = shop_example();
    let journey = dir.0.join("shop.toml");
    let part = |k: u32| {
        let json = dir.0.join(format!("part{k}.json"));
        let out = stampede(&[
            "load",
            &url,
            "--journey",
            journey.to_str().unwrap(),
            "-c",
            "4",
            "-t",
            "1",
            "-n",
            "400",
            "--segment",
            &format!("{k}/2"),
            "-q",
            "--json",
            json.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        (json, r)
    };
    let (a, ra) = part(1);
    let (b, rb) = part(2);
    let merged = dir.0.join("merged.json");
    let out = stampede(&[
        "merge",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--json",
        merged.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let m: serde_json::Value = serde_json::from_slice(&std::fs::read(&merged).unwrap()).unwrap();
    let n = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
    assert_eq!(n(&m["requests"]["completed"]), 400);
    // The journeys, their lifetimes and each step's figures and checks add up.
    for k in ["started", "completed", "failed"] {
        assert_eq!(
            n(&m["sessions"][k]),
            n(&ra["sessions"][k]) + n(&rb["sessions"][k]),
            "{k}"
        );
    }
    assert_eq!(
        n(&m["sessions"]["lifetime"]["count"]),
        n(&m["sessions"]["completed"]),
        "every completed journey's lifetime kept: {}",
        m["sessions"]
    );
    let step = |r: &serde_json::Value, name: &str| {
        (r["targets"].as_array().unwrap().iter())
            .find(|t| t["name"] == name)
            .cloned()
            .unwrap_or_default()
    };
    let (la, lb, lm) = (step(&ra, "login"), step(&rb, "login"), step(&m, "login"));
    assert_eq!(
        n(&lm["completed"]),
        n(&la["completed"]) + n(&lb["completed"])
    );
    assert_eq!(
        n(&lm["checks_failed"]["status 200"]),
        n(&la["checks_failed"]["status 200"]) + n(&lb["checks_failed"]["status 200"])
    );
    assert_eq!(n(&lm["latency"]["count"]), n(&lm["completed"]));
}

#[test]
fn an_answer_past_the_kept_ceiling_is_counted_too_large_not_buffered() {
    let (_server, url) = crate::common::serve(&[]);
    let dir = tempdir::Dir::new();
    // 20 MB answers: past the 16 MiB an answer's body is kept to.
    let journey = dir.0.join("big.toml");
    std::fs::write(
        &journey,
        "[[step]]\nname = \"big\"\nurl = \"/bytes/20000000\"\ncapture = [{ json = \"$.x\", as = \"x\" }]\n",
    )
    .unwrap();
    let json = dir.0.join("r.json");
    let out = stampede(&[
        "load",
        &url,
        "--journey",
        journey.to_str().unwrap(),
        "-c",
        "1",
        "-t",
        "1",
        "-n",
        "3",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let big = &r["targets"][0];
    assert_eq!(big["completed"], 3, "{big}");
    let missed = big["captures_missed"].as_object().unwrap();
    assert_eq!(missed.len(), 1, "{missed:?}");
    let (why, n) = missed.iter().next().unwrap();
    assert!(why.starts_with("x: ") && why.contains("large"), "{why}");
    assert_eq!(n, 3);
    // Each answer read whole all the same: 60 MB of bodies received.
    assert!(
        r["bytes"]["body"].as_u64().unwrap() >= 60_000_000,
        "{}",
        r["bytes"]
    );
}
