//! A `ws = {…}` scenario read from a plan: its load, and each refusal named with its
//! field and line.

use crate::plan::Plan;

#[test]
fn websocket_scenarios_parse_and_their_errors_name_the_field_and_line() {
    let head = "[[target]]\nname = \"a\"\nurl = \"http://127.0.0.1:1\"\n[[scenario]]\nname = \"s\"\nrequests = 8\npath = \"/ws/echo\"\n";
    let p = Plan::parse(
        &format!("{head}ws = {{ message = \"hi\", binary = true, protocols = [\"chat\"] }}\n"),
        "p.toml",
    )
    .unwrap();
    let ws = p.scenarios[0].ws.as_ref().unwrap();
    assert_eq!(&ws.message[..], b"hi");
    assert!(ws.binary && !ws.ping);
    assert_eq!(ws.protocols, ["chat"]);
    let p = Plan::parse(&format!("{head}ws = {{ ping = true }}\n"), "p.toml").unwrap();
    let ws = p.scenarios[0].ws.as_ref().unwrap();
    assert!(ws.ping && !ws.stamp && &ws.message[..] == b"stampede");
    let p = Plan::parse(&format!("{head}ws = {{ stamp = true }}\n"), "p.toml").unwrap();
    assert!(p.scenarios[0].ws.as_ref().unwrap().stamp);
    let p = Plan::parse(&format!("{head}ws = {{ deflate = true }}\n"), "p.toml").unwrap();
    let ws = p.scenarios[0].ws.as_ref().unwrap();
    assert!(ws.deflate && !ws.stamp);
    let p = Plan::parse(
        &format!(
            "{head}ws = {{ deflate = true, deflate_params = \"server_max_window_bits=10\" }}\n"
        ),
        "p.toml",
    )
    .unwrap();
    assert_eq!(
        p.scenarios[0].ws.as_ref().unwrap().deflate_params,
        "server_max_window_bits=10"
    );
    let p = Plan::parse(
        &format!("{head}ws = {{ messages = [\"a\", \"bb\"] }}\n"),
        "p.toml",
    )
    .unwrap();
    let ws = p.scenarios[0].ws.as_ref().unwrap();
    assert_eq!(ws.messages.len(), 2);
    assert_eq!(
        (&ws.messages[1][..], &ws.message[..]),
        (&b"bb"[..], &b"a"[..])
    );
    let p = Plan::parse(&format!("{head}ws = {{ expect = \"ok\" }}\n"), "p.toml").unwrap();
    assert_eq!(
        p.scenarios[0].ws.as_ref().unwrap().expect.as_deref(),
        Some(&b"ok"[..])
    );
    let p = Plan::parse(
        &format!(
            "{head}ws = {{ steps = [{{ send = \"join\", expect = \"joined\" }}, {{ send = \"hi\" }}] }}\n"
        ),
        "p.toml",
    )
    .unwrap();
    let ws = p.scenarios[0].ws.as_ref().unwrap();
    assert_eq!(
        (&ws.messages[0][..], &ws.messages[1][..]),
        (&b"join"[..], &b"hi"[..])
    );
    assert_eq!(
        (&ws.expects[0][..], &ws.expects[1][..]),
        (&b"joined"[..], &b""[..])
    );
    assert!(ws.expect.is_none());
    let long = "x".repeat(126);
    for (tail, field, says) in [
        (
            "http2 = true\nstreams = 4\nws = {}\n",
            "scenario.streams",
            "one WebSocket",
        ),
        (
            "method = \"POST\"\nws = {}\n",
            "scenario.method",
            "the upgrade is a GET",
        ),
        ("body = \"x\"\nws = {}\n", "scenario.body", "ws.message"),
        (
            "stream = \"sse\"\nws = {}\n",
            "scenario.stream",
            "round trip",
        ),
        (
            "verify = { status = 101 }\nws = {}\n",
            "scenario.verify",
            "only on_failure",
        ),
        (
            "ws = { ping = true, stamp = true }\n",
            "scenario.ws.stamp",
            "stamps go on data messages",
        ),
        (
            "ws = { ping = true, binary = true }\n",
            "scenario.ws.binary",
            "drop binary",
        ),
        (
            &format!("ws = {{ ping = true, message = \"{long}\" }}\n"),
            "scenario.ws.message",
            "at most 125 bytes",
        ),
        (
            "ws = { protocols = [\"a b\"] }\n",
            "scenario.ws.protocols",
            "each a token",
        ),
        (
            "ws = { message = \"a\", messages = [\"b\"] }\n",
            "scenario.ws.messages",
            "not both",
        ),
        (
            "ws = { messages = [] }\n",
            "scenario.ws.messages",
            "from 1 to",
        ),
        (
            "ws = { ping = true, messages = [\"a\"] }\n",
            "scenario.ws.messages",
            "a ping carries the one message",
        ),
        (
            "ws = { ping = true, expect = \"x\" }\n",
            "scenario.ws.expect",
            "a ping's answer is its pong",
        ),
        (
            "ws = { message = \"m\", steps = [{ send = \"a\" }] }\n",
            "scenario.ws.steps",
            "not with message, messages or expect",
        ),
        (
            "ws = { steps = [{ expect = \"a\" }] }\n",
            "scenario.ws.steps.send",
            "missing field `send`",
        ),
        (
            "ws = { ping = true, steps = [{ send = \"a\" }] }\n",
            "scenario.ws.steps",
            "a ping's answer is its pong",
        ),
        (
            "ws = { deflate_params = \"server_no_context_takeover\" }\n",
            "scenario.ws.deflate_params",
            "add deflate = true",
        ),
        (
            "ws = { deflate = true, deflate_params = \"level=9\" }\n",
            "scenario.ws.deflate_params",
            "not permessage-deflate's parameters",
        ),
        (
            "ws = { compress = true }\n",
            "scenario.ws.compress",
            "unknown field",
        ),
    ] {
        let e = Plan::parse(&format!("{head}{tail}"), "p.toml").unwrap_err();
        assert_eq!(e.field, field, "{tail}: {e}");
        assert!(e.message.contains(says), "{tail}: {e}");
        assert!(e.line >= 8, "{tail}: {e}");
    }
}
