//! A user walking a journey through the hooks, answered by hand: what each request
//! carries, what each answer leaves behind, and what is counted.

use super::*;
use crate::feeder::{Feeder, Format};

const SHOP: &str = r#"
[feeder]
file = "users.csv"
order = "unique"
[[step]]
name = "login"
method = "POST"
url = "/login"
json = { user = "{{ user }}" }
capture = [{ json = "$.token", as = "token" }]
check = ["status 200"]
[[step]]
name = "items"
url = "http://127.0.0.1:9/items/{{ token }}"
headers = { Authorization = "Bearer {{ token }}" }
check = ["status 200", "body contains ok"]
think = "25ms"
"#;

fn run(rows: &'static str) -> (JourneyRun, Box<dyn ThreadHooks>) {
    let j = Journey::parse("shop.toml", SHOP, |_| {
        Feeder::parse("users.csv", rows.as_bytes(), Format::Csv)
    })
    .unwrap();
    let target = Target::parse("http://127.0.0.1:9/").unwrap();
    let run = JourneyRun::new(j, &target, 1, 1);
    let hooks = run.hooks().0.thread(0);
    (run, hooks)
}

fn request(h: &mut Box<dyn ThreadHooks>, conn: usize) -> String {
    let mut out = Vec::new();
    assert_eq!(h.request(conn, &mut out), Flow::Go);
    String::from_utf8(out).unwrap()
}

fn answer(
    h: &mut Box<dyn ThreadHooks>,
    conn: usize,
    status: u16,
    headers: &[(&str, &str)],
    body: &str,
) {
    let headers: Vec<(String, String)> = headers
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    let flow = h.response(&EngineReply {
        conn,
        status,
        head: b"",
        headers: &headers,
        body: body.as_bytes(),
    });
    assert_eq!(flow, Flow::Go);
}

#[test]
fn a_user_carries_its_row_its_captures_and_its_cookies_from_step_to_step() {
    let (run, mut h) = run("user\nann\nbob\n");
    assert!(h.builds_requests() && h.wants_responses() && h.has_delay());
    let login = request(&mut h, 0);
    assert_eq!(
        login,
        "POST /login HTTP/1.1\r\nHost: 127.0.0.1:9\r\nContent-Type: application/json\r\nContent-Length: 14\r\n\r\n{\"user\":\"ann\"}"
    );
    assert_eq!(h.target(0), 0);
    answer(
        &mut h,
        0,
        200,
        &[("Set-Cookie", "sid=s1; Path=/")],
        r#"{"token": "t-ann"}"#,
    );
    assert_eq!(h.delay(0).0, Duration::ZERO);
    let items = request(&mut h, 0);
    assert_eq!(
        items,
        "GET /items/t-ann HTTP/1.1\r\nHost: 127.0.0.1:9\r\nAuthorization: Bearer t-ann\r\nCookie: sid=s1\r\n\r\n"
    );
    assert_eq!(h.target(0), 1);
    answer(&mut h, 0, 200, &[], "all ok");
    assert_eq!(h.delay(0).0, Duration::from_millis(25));
    // The next journey takes the next row, with no cookie or token from the last.
    let again = request(&mut h, 0);
    assert!(
        again.contains("{\"user\":\"bob\"}") && !again.contains("Cookie"),
        "{again}"
    );
    assert_eq!(h.target(0), 0);
    drop(h);
    let t = run.shared.tally.lock().unwrap();
    assert_eq!((t.started, t.completed, t.failed), (2, 1, 0));
    assert_eq!(t.lifetime.len(), 1);
}

#[test]
fn misses_failed_checks_and_lost_answers_are_counted_by_step_and_end_the_journey() {
    let (run, mut h) = run("user\nann\nbob\ncy\n");
    request(&mut h, 0);
    // No token in the answer: counted, and the journey ends (the next step needs it).
    answer(&mut h, 0, 500, &[], r#"{"error": "down"}"#);
    let next = request(&mut h, 0);
    assert!(
        next.starts_with("POST /login") && next.contains("bob"),
        "{next}"
    );
    answer(&mut h, 0, 200, &[], r#"{"token": "t-bob"}"#);
    request(&mut h, 0);
    // A failed check is counted; the journey goes on but is failed.
    answer(&mut h, 0, 404, &[], "missing");
    // A user on another connection whose answer never comes.
    request(&mut h, 1);
    h.gone(1);
    drop(h);
    let t = run.shared.tally.lock().unwrap();
    assert_eq!((t.started, t.completed, t.failed), (3, 0, 3));
    assert_eq!(t.missed[0].get("token: no match"), Some(&1));
    assert_eq!(t.checks[0].get("status 200"), Some(&1));
    assert_eq!(t.checks[1].get("status 200"), Some(&1));
    assert_eq!(t.checks[1].get("body contains ok"), Some(&1));
    assert_eq!(run.shared.users.load(Ordering::Relaxed), 2);
}

#[test]
fn a_unique_feeder_used_up_stops_the_run_and_says_why() {
    let (run, mut h) = run("user\nann\n");
    request(&mut h, 0);
    answer(&mut h, 0, 200, &[], r#"{"token": "x"}"#);
    request(&mut h, 0);
    answer(&mut h, 0, 200, &[], "ok");
    let mut out = Vec::new();
    assert_eq!(h.request(0, &mut out), Flow::StopRun);
    assert!(out.is_empty());
    assert!(run.exhausted());
    assert!(
        run.stopped()
            .unwrap()
            .contains("1 rows were each taken once"),
        "{:?}",
        run.stopped()
    );
}

#[test]
fn a_value_that_would_break_the_request_fails_the_journey_not_the_request() {
    let (run, mut h) = run("user\nann\n");
    request(&mut h, 0);
    answer(&mut h, 0, 200, &[], r#"{"token": "a b"}"#);
    // The token holds a space: the URL cannot carry it, so the journey fails and the
    // next user begins, here out of rows.
    let mut out = Vec::new();
    assert_eq!(h.request(0, &mut out), Flow::StopRun);
    drop(h);
    let t = run.shared.tally.lock().unwrap();
    assert_eq!(
        t.missed[1].get("url: holds a space or a control character"),
        Some(&1)
    );
    assert_eq!(t.failed, 1);
}
