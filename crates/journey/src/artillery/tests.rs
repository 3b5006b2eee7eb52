//! Artillery scripts read into journeys: what each part of a script becomes, and
//! what is refused, by name and line.

use super::*;

const SHOP: &str = r#"
config:
  target: "http://127.0.0.1:8080"
  phases:
    - duration: 3
      arrivalRate: 5
      name: warm
    - duration: "2s"
      arrivalRate: 5
      rampTo: 10
    - pause: 1
    - duration: 1
      arrivalCount: 4
  payload:
    path: "users.csv"
    fields: ["user", "password"]
    order: sequence
  variables:
    qty: [1, 2]
    shop: main
  defaults:
    headers:
      X-Shop: "{{ shop }}"
  http:
    timeout: 5
  plugins:
    expect: {}
    metrics-by-endpoint: {}
scenarios:
  - name: buyer
    weight: 3
    flow:
      - post:
          url: "/shop/login"
          json:
            user: "{{ user }}"
            password: "{{ password }}"
          capture:
            - json: "$.token"
              as: token
          expect:
            - statusCode: 200
            - contentType: json
            - hasProperty: token
      - get:
          url: "/shop/items"
          qs:
            page: 1
            q: "tea cup"
          headers:
            Authorization: "Bearer {{ token }}"
      - think: 0.5
      - log: "user {{ user }} buys"
      - loop:
          - post:
              url: "/shop/cart"
              headers:
                Authorization: "Bearer {{ token }}"
              json:
                item: "{{ $loopElement }}"
                qty: "{{ qty }}"
        over:
          - 101
          - 103
      - loop:
          - get:
              url: "/shop/items/{{ $loopCount }}"
              ifTrue: "token exists"
        count: "101-103"
  - name: looker
    flow:
      - get:
          url: "/shop/items"
          auth:
            user: ann
            pass: pw
          cookie:
            theme: dark
            who: "{{ user }}"
"#;

fn users(_: &str) -> Result<Vec<u8>, Invalid> {
    Ok(b"ann,pw-ann\nbob,pw-bob\n".to_vec())
}

#[test]
fn a_script_becomes_journeys_injection_steps_and_checks() {
    let s = parse("shop.yml", SHOP, users).unwrap();
    assert_eq!(s.target, "http://127.0.0.1:8080");
    assert_eq!(
        s.inject,
        [
            "constantUsersPerSec(5) during(3000 milliseconds)",
            "rampUsersPerSec(5) to(10) during(2000 milliseconds)",
            "nothingFor(1000 milliseconds)",
            "rampUsers(4) during(1000 milliseconds)",
        ]
    );
    assert_eq!(s.timeout, Some(Duration::from_secs(5)));
    let phases: Vec<(Option<&str>, u64)> = (s.phases.iter())
        .map(|(n, d)| (n.as_deref(), d.as_millis() as u64))
        .collect();
    assert_eq!(
        phases,
        [
            (Some("warm"), 3000),
            (None, 2000),
            (None, 1000),
            (None, 1000)
        ]
    );
    assert!(s.expect && s.by_endpoint && !s.insecure);
    let j = &s.journey;
    let routes: Vec<(&str, u32)> = j
        .routes
        .iter()
        .map(|r| (r.name.as_str(), r.weight))
        .collect();
    assert_eq!(routes, [("buyer", 3), ("looker", 1)]);
    assert_eq!(
        j.figures,
        [
            "/shop/login",
            "/shop/items",
            "/shop/cart",
            "/shop/items/{{ $loopCount }}"
        ]
    );
    let t = &s.toml;
    assert!(t.contains(r#"url = "/shop/items?page=1&q=tea+cup""#), "{t}");
    assert!(t.contains(r#""X-Shop" = "{{ shop }}""#), "{t}");
    assert!(
        t.contains(r#"body = '{"item":{{ loop_element_1 | json }},"qty":{{ qty | json }}}'"#),
        "{t}"
    );
    assert!(
        t.contains(
            r#"loop = { over = "loop_list_1", as = "loop_element_1", index = "loop_count_1" }"#
        ),
        "{t}"
    );
    assert!(
        t.contains(r#"loop = { count = 2, index = "loop_count_2", first = 101 }"#),
        "{t}"
    );
    assert!(
        t.contains(r#"url = "/shop/items/{{ loop_count_2 }}""#),
        "{t}"
    );
    assert!(
        t.contains("think = \"500ms\"") && t.contains("log = \"user {{ user }} buys\""),
        "{t}"
    );
    assert!(t.contains(r#""Authorization" = "Basic YW5uOnB3""#), "{t}");
    // A request's own cookies: one field, which the jar's join as the user walks.
    assert!(
        t.contains(r#""Cookie" = "theme=dark; who={{ user }}""#),
        "{t}"
    );
    assert!(
        t.contains(
            r#"check = ["status 200", "header Content-Type contains json", "json $.token exists"]"#
        ),
        "{t}"
    );
    assert_eq!(s.expectations["status 200"], "statusCode");
    assert_eq!(s.expectations["json $.token exists"], "hasProperty");
    assert!(
        t.contains("[lists]\nloop_list_1 = [\"101\", \"103\"]"),
        "{t}"
    );
}

#[test]
fn what_cannot_run_is_refused_by_name_and_an_unknown_key_with_its_line() {
    for (edit, says) in [
        (
            SHOP.replace("  http:\n", "  processor: \"./f.js\"\n  http:\n"),
            "config.processor: not run by stampede; JavaScript functions do not run here",
        ),
        (
            SHOP.replace("    expect: {}", "    expect: {}\n    ensure: {}"),
            "config.plugins.ensure: not run by stampede",
        ),
        (
            SHOP.replace("  - name: looker\n", "  - name: looker\n    engine: ws\n"),
            "scenarios[1].engine: ws: not run by stampede; load a WebSocket server with stampede load ws://",
        ),
        (
            SHOP.replace("      - think: 0.5\n", "      - function: \"pick\"\n"),
            "scenarios[0].flow[2].function: not run by stampede",
        ),
        (
            SHOP.replace("            - json: \"$.token\"\n", "            - selector: \"a\"\n"),
            "scenarios[0].flow[0].post.capture[0].selector: not run by stampede; capture from HTML with a regexp",
        ),
        (
            SHOP.replace("            - hasProperty: token", "            - matchesRegexp: x"),
            "scenarios[0].flow[0].post.expect[2].matchesRegexp: not run by stampede",
        ),
        (
            SHOP.replace("      name: warm", "      name: warm\n      arivalRate: 3"),
            "line 8, column 7: config.phases[0]: unknown field `arivalRate`",
        ),
        (
            SHOP.replace("          qs:", "          query:"),
            "unknown field `query`",
        ),
        (
            SHOP.replace("      - think: 0.5\n", "      - think: soon\n"),
            "scenarios[0].flow[2].think: \"soon\" is not a duration",
        ),
        (
            SHOP.replace("  phases:\n", "  phases: []\n  old:\n"),
            "unknown field `old`",
        ),
    ] {
        let e = parse("shop.yml", &edit, users).unwrap_err();
        assert_eq!(e.file, "shop.yml");
        assert!(e.reason.contains(says), "wanted {says:?} in: {}", e.reason);
    }
    let e = parse("shop.yml", SHOP, |_| {
        Err("users.csv: cannot be read: gone".into())
    })
    .unwrap_err();
    assert!(
        e.reason
            .contains("config.payload.path: users.csv: cannot be read"),
        "{}",
        e.reason
    );
}
