//! Journey files read into steps and places: templates over what came before, groups,
//! loops, conditions and a mix, think times, and what is refused with its place.

use super::*;
use crate::feeder::Format;

const SHOP: &str = r#"
think = "10ms"
[feeder]
file = "users.csv"
order = "unique"
[variables]
shop = "main"
[[step]]
name = "login"
method = "post"
url = "/login"
json = { user = "{{ user }}", password = "{{ password }}" }
capture = [{ json = "$.token", as = "token" }]
check = ["status 200"]
[[step]]
name = "items"
url = "/items?shop={{ shop }}"
headers = { Authorization = "Bearer {{ token }}" }
capture = [{ json = "$.items[0].id", as = "item", default = "0" }]
think = { uniform = ["50ms", "150ms"] }
"#;

fn users(_: &str) -> Result<Feeder, FeederError> {
    Feeder::parse("users.csv", b"user,password\nann,pw1\n", Format::Csv)
}

#[test]
fn a_journey_reads_into_steps_whose_templates_use_what_came_before() {
    let j = Journey::parse("shop.toml", SHOP, users).unwrap();
    assert_eq!(j.steps.len(), 2);
    let login = &j.steps[0];
    assert_eq!(
        (login.name.as_str(), login.method.as_str()),
        ("login", "POST")
    );
    assert_eq!(login.headers[0].0, "Content-Type");
    assert_eq!(login.think, Think::Fixed(Duration::from_millis(10)));
    assert_eq!(
        j.steps[1].think,
        Think::Uniform(Duration::from_millis(50), Duration::from_millis(150))
    );
    assert_eq!(j.feed.as_ref().unwrap().order, Order::Unique);
    assert_eq!(
        j.constants,
        [(Slot(2), Constant::OneOf(vec!["main".into()]))]
    );
    // Feeder columns, variables, then captures in order.
    let names: Vec<&str> = (0..j.routes[0].scope.len())
        .map(|i| j.routes[0].scope.name(Slot(i as u16)))
        .collect();
    assert_eq!(names, ["user", "password", "shop", "token", "item"]);
}

#[test]
fn what_is_wrong_is_refused_with_its_step_field_or_line() {
    for (edit, says) in [
        (
            SHOP.replace("Bearer {{ token }}", "Bearer {{ item }}"),
            "step 2 (\"items\"), headers.Authorization: {{ item }}: no variable \"item\"",
        ),
        (
            SHOP.replace("url = \"/login\"", "url = \"/login/{{ token }}\""),
            "step 1 (\"login\"), url: {{ token }}: no variable",
        ),
        (
            SHOP.replace(
                "check = [\"status 200\"]",
                "check = [\"status 200\"]\nretries = 3",
            ),
            "line 15: unknown field `retries`",
        ),
        (
            SHOP.replace("status 200", "status 999"),
            "step 1 (\"login\"), check: check \"status 999\"",
        ),
        (
            SHOP.replace("name = \"items\"", "name = \"login\""),
            "step 2 (\"login\"): another step of this journey has this name",
        ),
        (
            SHOP.replace(
                "json = \"$.token\", as",
                "header = \"X\", json = \"$.token\", as",
            ),
            "one of json, regexp, header or cookie",
        ),
        (
            SHOP.replace("order = \"unique\"", "order = \"shuffled\""),
            "feeder.order: \"shuffled\"",
        ),
        (
            SHOP.replace("method = \"post\"", "method = \"PO ST\""),
            "method: \"PO ST\" is not a method",
        ),
        (
            SHOP.replace("headers = {", "headers = { Host = \"x\", "),
            "headers: Host is set by stampede",
        ),
        (
            SHOP.replace("\"50ms\", \"150ms\"", "\"150ms\", \"50ms\""),
            "the shorter time comes first",
        ),
        ("think = \"1s\"\n".to_string(), "no [[step]]"),
    ] {
        let e = Journey::parse("shop.toml", &edit, users).unwrap_err();
        assert!(e.to_string().starts_with("shop.toml: "), "{e}");
        assert!(e.reason.contains(says), "wanted {says:?} in: {}", e.reason);
    }
    let e = Journey::parse("shop.toml", SHOP, |_| {
        Err(FeederError {
            place: "users.csv:3".into(),
            reason: "1 fields; the header names 2".into(),
        })
    })
    .unwrap_err();
    assert_eq!(
        e.reason,
        "feeder: users.csv:3: 1 fields; the header names 2"
    );
}

#[test]
fn one_request_is_a_journey_of_one_step_over_the_feeders_columns() {
    let rows = users("").unwrap();
    let headers = [("X-User".to_string(), "{{ user }}".to_string())];
    let j = Journey::single(
        "POST",
        "/login/{{ user }}",
        &headers,
        Some(r#"{"pw": "{{ password }}", "n": {{ $seq }}}"#),
        Some((rows, Order::Random, Exhausted::Stop)),
        ["URL", "-H", "--body-file"],
    )
    .unwrap();
    assert_eq!(j.steps.len(), 1);
    assert_eq!(j.steps[0].name, "POST /login/{{ user }}");
    assert_eq!(j.feed.as_ref().unwrap().order, Order::Random);
    let e = Journey::single(
        "GET",
        "/",
        &[("X-A".into(), "{{ nope }}".into())],
        None,
        None,
        ["URL", "-H", "--body-file"],
    )
    .unwrap_err();
    assert_eq!(e.field, "-H X-A");
    assert!(
        e.reason.contains("no variable \"nope\" (declared: none"),
        "{}",
        e.reason
    );
}

const LOOPS: &str = r#"
[[journey]]
name = "buy"
weight = 2
[[journey.step]]
name = "list"
url = "/items"
capture = [{ json = "$.items[*].id", as = "ids", all = true }]
[[journey.step]]
if = "ids exists"
loop = { over = "ids", as = "id", index = "i" }
[[journey.step.step]]
name = "add"
url = "/cart/{{ id }}?at={{ i }}"
[[journey.step.step]]
name = "again"
url = "/cart"
loop = { count = 2 }
[[journey]]
name = "look"
[[journey.step]]
name = "home"
url = "/"
"#;

#[test]
fn groups_loops_conditions_and_a_mix_read_into_places() {
    let j = Journey::parse("loops.toml", LOOPS, users).unwrap();
    let names: Vec<&str> = j.steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["list", "add", "again", "home"]);
    assert_eq!(j.figures, names);
    // A step of another journey with a name already used is counted with it.
    let shared = Journey::parse("l.toml", &LOOPS.replace("\"home\"", "\"list\""), users).unwrap();
    assert_eq!(shared.figures, ["list", "add", "again"]);
    assert_eq!(shared.steps[3].figure, 0);
    assert_eq!(j.routes.len(), 2);
    assert_eq!((j.routes[0].name.as_str(), j.routes[0].weight), ("buy", 2));
    assert_eq!((j.routes[1].name.as_str(), j.routes[1].weight), ("look", 1));
    let ops = &j.routes[0].ops;
    assert_eq!(ops.len(), 7);
    assert!(matches!(
        ops[0],
        Op::Step {
            step: 0,
            when: None
        }
    ));
    assert!(matches!(
        &ops[1],
        Op::Enter { when: Some(c), repeat: Repeat::Over { .. }, index: Some(_), leave: 6 } if c.line == "ids exists"
    ));
    assert!(matches!(ops[2], Op::Step { step: 1, .. }));
    assert!(matches!(
        ops[3],
        Op::Enter {
            repeat: Repeat::Count(2),
            leave: 5,
            ..
        }
    ));
    assert!(matches!(ops[4], Op::Step { step: 2, .. }));
    assert!(matches!(ops[5], Op::Leave { enter: 3 }));
    assert!(matches!(ops[6], Op::Leave { enter: 1 }));
    // Each journey has its own names: "look" cannot use what "buy" captures.
    assert!(j.routes[1].scope.slot("ids").is_none());
    assert_eq!(j.width(), 3);
    let mut d = Draw::new(1, (0, 1));
    let buy = (0..3000).filter(|_| j.pick(&mut d) == 0).count();
    assert!((1850..2150).contains(&buy), "{buy}");
}

#[test]
fn a_group_a_loop_or_a_mix_that_is_wrong_is_refused_with_its_place() {
    let nest = |depth: usize| {
        let (mut t, mut table) = (String::new(), String::from("step"));
        for _ in 0..depth {
            t.push_str(&format!("[[{table}]]\nloop = {{ count = 2 }}\n"));
            table.push_str(".step");
        }
        t.push_str(&format!("[[{table}]]\nname = \"deep\"\nurl = \"/\"\n"));
        t
    };
    for (edit, says) in [
        (
            LOOPS.replace("if = \"ids exists\"", "if = \"id exists\""),
            "journey \"buy\", step 2, if: \"id exists\": no variable \"id\" before it",
        ),
        (
            LOOPS.replace("over = \"ids\"", "over = \"idz\""),
            "journey \"buy\", step 2, loop: over \"idz\": no variable",
        ),
        (
            LOOPS.replace(", as = \"id\"", ""),
            "step 2, loop: over needs as = \"NAME\"",
        ),
        (
            LOOPS.replace("count = 2", "count = 0"),
            "step 2.2 (\"again\"), loop: count 0; a loop turns 1 to 10000 times",
        ),
        (
            LOOPS.replace("count = 2", "count = 2, over = \"ids\""),
            "step 2.2 (\"again\"), loop: { count = N } or",
        ),
        (
            LOOPS.replace("if = \"ids exists\"", "url = \"/x\""),
            "journey \"buy\", step 2, url: a group ([[step.step]]) sends no request of its own",
        ),
        (
            LOOPS.replace("name = \"again\"\n", ""),
            "journey \"buy\", step 2.2: a name is needed",
        ),
        (
            LOOPS.replace("name = \"again\"", "name = \"add\""),
            "journey \"buy\", step 2.2 (\"add\"): another step of this journey has this name",
        ),
        (
            LOOPS.replace("name = \"look\"", "name = \"buy\""),
            "journey \"buy\", another journey has this name",
        ),
        (
            LOOPS.replace("weight = 2", "weight = 0"),
            "journey \"buy\", weight: 0; a weight is 1 or more",
        ),
        (
            format!("[[step]]\nname = \"x\"\nurl = \"/\"\n{LOOPS}"),
            "[[step]] at the top and [[journey]] tables",
        ),
        (
            LOOPS.replace("loop = { count = 2 }", "loop = { count = 2, times = 3 }"),
            "unknown field `times`",
        ),
        (nest(5), "step 1.1.1.1.1 (no name)"),
    ] {
        let e = Journey::parse("loops.toml", &edit, users).unwrap_err();
        let want = says.replace(" (no name)", ": groups nest at most 4 deep");
        assert!(e.reason.contains(&want), "wanted {want:?} in: {}", e.reason);
    }
    assert!(Journey::parse("n.toml", &nest(4), users).is_ok());
}

#[test]
fn think_times_are_drawn_within_their_bounds() {
    let mut d = Draw::new(7, (0, 1));
    let u = Think::Uniform(Duration::from_millis(50), Duration::from_millis(150));
    let e = Think::Exponential(Duration::from_millis(100));
    let (mut sum, n) = (Duration::ZERO, 4000);
    for _ in 0..n {
        let t = u.draw(&mut d);
        assert!(t >= Duration::from_millis(50) && t <= Duration::from_millis(150));
        sum += e.draw(&mut d);
    }
    let mean = sum.as_secs_f64() / n as f64;
    assert!((0.09..0.11).contains(&mean), "{mean}");
}
