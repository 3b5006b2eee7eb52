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
    let headers = stampede_engine::Fields::from_pairs(headers.iter().copied());
    let flow = h.response(&EngineReply {
        conn,
        status,
        head: b"",
        headers: &headers,
        body: body.as_bytes(),
        cut: false,
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

const MIX: &str = r#"
[[journey]]
name = "shopper"
weight = 3
[[journey.step]]
name = "list"
url = "/items"
capture = [{ json = "$.items[*].id", as = "ids", all = true }]
[[journey.step]]
name = "add"
loop = { over = "ids", as = "id", index = "n" }
method = "POST"
url = "/cart/{{ id }}?n={{ n }}"
[[journey.step]]
name = "pay"
if = "ids > 1"
method = "POST"
url = "/pay"

[[journey]]
name = "browser"
[[journey.step]]
name = "home"
url = "/"
[[journey.step]]
loop = { count = 2 }
[[journey.step.step]]
name = "page"
url = "/page/{{ $randomNumber(1, 9) }}"
[[journey.step.step]]
name = "look"
url = "/look"
"#;

fn mix() -> (JourneyRun, Box<dyn ThreadHooks>) {
    let j = Journey::parse("mix.toml", MIX, |_| unreachable!()).unwrap();
    let target = Target::parse("http://127.0.0.1:9/").unwrap();
    let run = JourneyRun::new(j, &target, 3, 1);
    let hooks = run.hooks().0.thread(0);
    (run, hooks)
}

/// Walks one journey on `conn` answering each request with `body`; the request
/// lines in order.
fn walk(h: &mut Box<dyn ThreadHooks>, conn: usize, body: &str) -> Vec<String> {
    let mut lines = Vec::new();
    loop {
        let r = request(h, conn);
        let line = r.lines().next().unwrap().to_string();
        if !lines.is_empty() && (line == "GET /items HTTP/1.1" || line == "GET / HTTP/1.1") {
            return lines;
        }
        lines.push(line);
        answer(h, conn, 200, &[], body);
        assert!(lines.len() < 20);
    }
}

#[test]
fn users_take_journeys_by_weight_loop_over_what_they_captured_and_skip_by_condition() {
    let (run, mut h) = mix();
    let body = r#"{"items": [{"id": 7}, {"id": 9}]}"#;
    let (mut shoppers, mut browsers) = (0, 0);
    // Each walk ends at the next journey's first request, which begins the next walk
    // (its answer is the walk's first).
    let mut first = request(&mut h, 0);
    for _ in 0..200 {
        answer(&mut h, 0, 200, &[], body);
        let mut lines = vec![first.lines().next().unwrap().to_string()];
        loop {
            let r = request(&mut h, 0);
            let line = r.lines().next().unwrap().to_string();
            if line == "GET /items HTTP/1.1" || line == "GET / HTTP/1.1" {
                first = r;
                break;
            }
            lines.push(line);
            answer(&mut h, 0, 200, &[], body);
        }
        if lines[0] == "GET /items HTTP/1.1" {
            shoppers += 1;
            assert_eq!(
                lines,
                [
                    "GET /items HTTP/1.1",
                    "POST /cart/7?n=0 HTTP/1.1",
                    "POST /cart/9?n=1 HTTP/1.1",
                    "POST /pay HTTP/1.1"
                ]
            );
        } else {
            browsers += 1;
            assert_eq!(lines.len(), 5, "{lines:?}");
            assert!(lines[1].starts_with("GET /page/") && lines[2] == "GET /look HTTP/1.1");
            assert!(lines[3].starts_with("GET /page/") && lines[4] == "GET /look HTTP/1.1");
        }
    }
    assert!(
        (120..180).contains(&shoppers),
        "{shoppers} shoppers, {browsers} browsers"
    );
    // One item: the loop turns once, and the condition skips paying.
    let one = r#"{"items": [{"id": 5}]}"#;
    let mut lines = Vec::new();
    while lines.first().is_none_or(|l| l != "GET /items HTTP/1.1") {
        lines = walk(&mut h, 1, one);
    }
    assert_eq!(lines, ["GET /items HTTP/1.1", "POST /cart/5?n=0 HTTP/1.1"]);
    drop(h);
    let t = run.shared.tally.lock().unwrap();
    assert_eq!(t.failed, 0);
    assert!(t.completed >= 201, "{}", t.completed);
}

#[test]
fn a_journey_whose_conditions_skip_every_step_stops_the_run_and_says_why() {
    let j = Journey::parse(
        "skip.toml",
        "[variables]\nmode = \"off\"\n[[step]]\nname = \"a\"\nurl = \"/\"\nif = \"mode == on\"\n",
        |_| unreachable!(),
    )
    .unwrap();
    let target = Target::parse("http://127.0.0.1:9/").unwrap();
    let run = JourneyRun::new(j, &target, 3, 1);
    let mut h = run.hooks().0.thread(0);
    let mut out = Vec::new();
    assert_eq!(h.request(0, &mut out), Flow::StopRun);
    assert!(out.is_empty());
    assert_eq!(
        run.stopped().as_deref(),
        Some("four new journeys in a row had no step to send: its conditions skipped every step")
    );
}

#[test]
fn in_session_shapes_a_user_is_finished_with_its_journey_and_the_next_is_a_new_user() {
    let (run, mut h) = run("user\nann\nbob\n");
    assert!(run.hooks().0.any_protocol());
    request(&mut h, 0);
    answer(
        &mut h,
        0,
        200,
        &[("Set-Cookie", "sid=s1")],
        r#"{"token": "t"}"#,
    );
    assert!(!h.finished(0), "one step of two walked");
    request(&mut h, 0);
    answer(&mut h, 0, 200, &[], "ok");
    assert!(h.finished(0));
    // The next session on the slot: a new user (its own number, no cookie), the next row.
    let next = request(&mut h, 0);
    assert!(next.contains("bob") && !next.contains("Cookie"), "{next}");
    drop(h);
    assert_eq!(run.shared.users.load(Ordering::Relaxed), 2);
    let t = run.shared.tally.lock().unwrap();
    assert_eq!((t.started, t.completed), (2, 1));
}

#[test]
fn pauses_add_to_think_times_log_lines_are_written_and_whole_placeholders_keep_their_type() {
    let j = Journey::parse(
        "p.toml",
        r#"
[[step]]
name = "list"
url = "/items"
capture = [{ json = "$.ids[*]", as = "ids", all = true }, { json = "$.n", as = "n" }]
think = "10ms"
[[step]]
think = "5ms"
[[step]]
log = "got {{ n }}"
[[step]]
loop = { over = "ids", as = "id", index = "k", first = 1 }
name = "add"
method = "POST"
url = "/cart?k={{ k }}"
json = { item = "{{ id }}", n = "{{ n }}", note = "n={{ n }}", all = "{{ ids }}" }
"#,
        |_| unreachable!(),
    )
    .unwrap();
    let target = Target::parse("http://127.0.0.1:9/").unwrap();
    let run = JourneyRun::new(j, &target, 1, 1);
    let mut h = run.hooks().0.thread(0);
    request(&mut h, 0);
    answer(&mut h, 0, 200, &[], r#"{"ids": [7, "x y"], "n": 3}"#);
    assert_eq!(
        h.delay(0).0,
        Duration::from_millis(15),
        "the step's think and the pause"
    );
    let add = request(&mut h, 0);
    assert!(add.starts_with("POST /cart?k=1 "), "{add}");
    assert!(
        add.ends_with(r#"{"all":["7","x y"],"item":7,"n":3,"note":"n=3"}"#),
        "{add}"
    );
    answer(&mut h, 0, 200, &[], "");
    assert!(request(&mut h, 0).starts_with("POST /cart?k=2 "));
    let e = Journey::parse(
        "p.toml",
        "[[step]]\nthink = \"1s\"\n[[step]]\nname = \"a\"\nurl = \"/\"\n",
        |_| unreachable!(),
    )
    .unwrap_err();
    assert!(
        e.reason.contains("step 1: a journey begins with a request"),
        "{}",
        e.reason
    );
    // A pause alone, with no step's think time, is still a delay the engine asks for.
    let paused = Journey::parse(
        "p.toml",
        "[[step]]\nname = \"a\"\nurl = \"/\"\n[[step]]\nthink = \"1s\"\n[[step]]\nname = \"b\"\nurl = \"/\"\n",
        |_| unreachable!(),
    )
    .unwrap();
    let run = JourneyRun::new(paused, &Target::parse("http://127.0.0.1:9/").unwrap(), 1, 1);
    assert!(run.hooks().0.thread(0).has_delay());
}

#[test]
fn a_step_s_own_cookies_and_the_jar_s_go_in_one_field() {
    let text = r#"
[variables]
who = "ann"
[[step]]
name = "first"
url = "/a"
[[step]]
name = "second"
url = "/b"
headers = { Cookie = "theme={{ who }}", X-Other = "1", cookie = "lang=en" }
"#;
    let j = Journey::parse("c.toml", text, |_| unreachable!("no feeder")).unwrap();
    let target = Target::parse("http://127.0.0.1:9/").unwrap();
    let run = JourneyRun::new(j, &target, 1, 1);
    let mut h = run.hooks().0.thread(0);
    let first = request(&mut h, 0);
    assert!(!first.contains("Cookie"), "{first}");
    answer(&mut h, 0, 200, &[("Set-Cookie", "sid=s1; Path=/")], "ok");
    let second = request(&mut h, 0);
    assert_eq!(
        second,
        "GET /b HTTP/1.1\r\nHost: 127.0.0.1:9\r\nX-Other: 1\r\nCookie: theme=ann; lang=en; sid=s1\r\n\r\n"
    );
}
