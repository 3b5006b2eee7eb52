//! Recordings read into journeys: what is kept, what is correlated, and what is
//! refused.

use super::*;
use serde_json::json;

fn entry(
    method: &str,
    url: &str,
    headers: Value,
    body: Option<&str>,
    status: i64,
    answer: Value,
) -> Value {
    let mut req =
        json!({"method": method, "url": url, "headers": headers, "httpVersion": "HTTP/1.1"});
    if let Some(b) = body {
        req["postData"] = json!({"mimeType": "application/json", "text": b});
    }
    json!({
        "startedDateTime": "2026-11-29T10:00:00.000Z",
        "time": 12.5,
        "request": req,
        "response": answer_of(status, answer),
    })
}

fn answer_of(status: i64, answer: Value) -> Value {
    match answer {
        Value::String(html) => {
            json!({"status": status, "headers": [], "content": {"mimeType": "text/html", "text": html}})
        }
        Value::Null => {
            json!({"status": status, "headers": [], "content": {"mimeType": "text/plain"}})
        }
        v => {
            json!({"status": status, "headers": [{"name": "Content-Type", "value": "application/json"}, {"name": "X-Request-Id", "value": "req-12345678"}], "content": {"mimeType": "application/json", "text": v.to_string()}})
        }
    }
}

fn har(entries: Vec<Value>) -> Vec<u8> {
    json!({"log": {"version": "1.2", "creator": {"name": "a browser"}, "entries": entries}})
        .to_string()
        .into_bytes()
}

fn shop() -> Vec<u8> {
    let o = "http://127.0.0.1:8080";
    har(vec![
        entry(
            "POST",
            &format!("{o}/shop/login"),
            json!([
                {"name": "Host", "value": "127.0.0.1:8080"},
                {"name": "User-Agent", "value": "Browser/1.0"},
                {"name": "sec-fetch-mode", "value": "cors"},
                {"name": "Cookie", "value": "seen=1"}
            ]),
            Some(r#"{"user":"ann","password":"pw-ann"}"#),
            200,
            json!({"user": "ann", "token": "t.ann.0123456789abcdef"}),
        ),
        entry(
            "GET",
            &format!("{o}/app.js"),
            json!([]),
            None,
            200,
            Value::Null,
        ),
        entry(
            "GET",
            "https://cdn.example/font.woff2",
            json!([]),
            None,
            200,
            Value::Null,
        ),
        entry(
            "GET",
            &format!("{o}/shop/items"),
            json!([
                {"name": "Authorization", "value": "Bearer t.ann.0123456789abcdef"}
            ]),
            None,
            200,
            json!({"items": [{"id": 101, "name": "tea"}, {"id": 102, "name": "coffee"}]}),
        ),
        entry(
            "POST",
            &format!("{o}/shop/cart"),
            json!([
                {"name": "Authorization", "value": "Bearer t.ann.0123456789abcdef"},
                {"name": "X-Trace", "value": "req-12345678"}
            ]),
            Some(r#"{"item": 102, "qty": 1, "note": "{{ literal }}"}"#),
            200,
            json!({"user": "ann", "item": 102, "qty": 1}),
        ),
        entry(
            "GET",
            &format!("{o}/shop/items/102?from=1101"),
            json!([
                {"name": "Authorization", "value": "Bearer t.ann.0123456789abcdef"}
            ]),
            None,
            200,
            json!({"id": 102}),
        ),
    ])
}

#[test]
fn values_answers_hand_out_become_captures_and_templates_and_the_rest_is_left_out() {
    let r = convert("shop.har", &shop(), &HarOptions::default()).unwrap();
    assert_eq!(r.origin, "http://127.0.0.1:8080");
    let j = Journey::parse("j.toml", &r.toml, |_| unreachable!()).unwrap();
    let names: Vec<&str> = j.steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "POST /shop/login",
            "GET /shop/items",
            "POST /shop/cart",
            "GET /shop/items/102"
        ]
    );
    let t = &r.toml;
    // The token from the login's answer, sent back by every later step.
    assert!(
        t.contains(r#"capture = [{ json = "$.token", as = "token" }]"#),
        "{t}"
    );
    assert_eq!(
        t.matches(r#""Authorization" = "Bearer {{ token }}""#)
            .count(),
        3,
        "{t}"
    );
    // The id from the list's answer, in the cart's body and the item's path; "1101"
    // holds 101 but not standing alone, and ann was sent before any answer gave it.
    assert!(
        t.contains(r#"{ json = "$.items[1].id", as = "id" }"#),
        "{t}"
    );
    assert!(
        t.contains(r#"url = "/shop/items/{{ id }}?from=1101""#),
        "{t}"
    );
    assert!(t.contains(r#""item": {{ id }}"#), "{t}");
    assert!(t.contains(r#"{"user":"ann","password":"pw-ann"}"#), "{t}");
    // A header of the server's own, sent back in a request header.
    assert!(
        t.contains(r#"{ header = "X-Request-Id", as = "x_request_id" }"#),
        "{t}"
    );
    assert!(t.contains(r#""X-Trace" = "{{ x_request_id }}""#), "{t}");
    // A recorded {{ is sent as it was, not read as a placeholder.
    assert!(t.contains(r#""note": "\{{ literal }}""#), "{t}");
    let steps = &t[t.find("[[step]]").unwrap()..];
    assert!(
        !steps.contains("User-Agent") && !steps.contains("sec-fetch") && !steps.contains("seen=1"),
        "{t}"
    );
    assert!(t.contains(r#"check = ["status 200"]"#));
    let notes = r.notes.join("\n");
    for says in [
        "left out 1 request to https://cdn.example",
        "left out 1 static asset",
        "request headers not sent as recorded: cookie, host, sec-fetch-mode, user-agent",
        "step 2 (\"GET /shop/items\") sends {{ token }}: captured from step 1's answer (json $.token)",
        "step 3 (\"POST /shop/cart\") sends {{ id }}: captured from step 2's answer (json $.items[1].id)",
    ] {
        assert!(notes.contains(says), "wanted {says:?} in:\n{notes}");
    }
    // Kept when asked: the static asset is a step.
    let all = convert(
        "shop.har",
        &shop(),
        &HarOptions {
            include_static: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(all.toml.contains("name = \"GET /app.js\""));
}

#[test]
fn a_hidden_form_field_is_captured_by_a_regular_expression_and_pauses_become_think_times() {
    let o = "https://shop.test";
    let mut form = entry(
        "GET",
        &format!("{o}/checkout"),
        json!([]),
        None,
        200,
        json!(
            r#"<form><input type="hidden" name="csrf_token" value="c5rf-9f8e7d"><input name="q" value="free"></form>"#
        ),
    );
    form["startedDateTime"] = json!("2026-11-29T10:00:00.000Z");
    let mut post = entry(
        "POST",
        &format!("{o}/checkout"),
        json!([]),
        Some("csrf_token=c5rf-9f8e7d&q=free"),
        302,
        Value::Null,
    );
    post["startedDateTime"] = json!("2026-11-29T10:00:01.500Z");
    let r = convert(
        "f.har",
        &har(vec![form, post]),
        &HarOptions {
            think: true,
            ..Default::default()
        },
    )
    .unwrap();
    let t = &r.toml;
    assert!(
        t.contains(
            r#"capture = [{ regexp = 'name="csrf_token"[^>]*value="([^"]*)"', as = "csrf_token" }]"#
        ),
        "{t}"
    );
    assert!(
        t.contains(r#"body = "csrf_token={{ csrf_token }}&q=free""#),
        "{t}"
    );
    assert!(t.contains("think = \"1488ms\""), "{t}");
    assert!(t.contains(r#"check = ["status 302"]"#));
    let j = Journey::parse("j.toml", t, |_| unreachable!()).unwrap();
    // The capture reads the field from the page as the regular expression says.
    let html = r#"<input type="hidden" name="csrf_token" value="live-1"/>"#;
    let reply = crate::reply::Reply::new(200, &[], html.as_bytes(), std::time::Duration::ZERO);
    let mut vars = crate::vars::Vars::new(j.width());
    j.steps[0].captures[0].apply(&reply, &mut vars).unwrap();
    let slot = j.steps[0].captures[0].slot();
    assert_eq!(
        vars.get(slot),
        Some(&crate::vars::Value::Text("live-1".into()))
    );
}

#[test]
fn a_recording_that_cannot_be_replayed_is_refused_with_why() {
    let o = "http://a.test";
    for (bytes, says) in [
        (
            b"{\"log\": {\"entries\": [}".to_vec(),
            "line 1, column 22: not a HAR file",
        ),
        (
            b"{\"entries\": []}".to_vec(),
            "not a HAR file: missing field `log`",
        ),
        (har(vec![]), "log.entries is empty"),
        (
            har(vec![entry(
                "GET",
                "ftp://a.test/x",
                json!([]),
                None,
                200,
                Value::Null,
            )]),
            "log.entries[0].request.url \"ftp://a.test/x\" is not an http:// or https:// URL",
        ),
        (
            har(vec![entry(
                "GET",
                &format!("{o}/logo.png"),
                json!([]),
                None,
                200,
                Value::Null,
            )]),
            "no request to http://a.test is left to replay",
        ),
        (
            har((0..101)
                .map(|i| {
                    entry(
                        "GET",
                        &format!("{o}/p/{i}"),
                        json!([]),
                        None,
                        200,
                        Value::Null,
                    )
                })
                .collect()),
            "101 requests to http://a.test; a journey takes at most 100",
        ),
    ] {
        let e = convert("x.har", &bytes, &HarOptions::default()).unwrap_err();
        assert_eq!(e.file, "x.har");
        assert!(e.reason.contains(says), "wanted {says:?} in {}", e.reason);
    }
    let e = convert(
        "x.har",
        &shop(),
        &HarOptions {
            origin: Some("a.test".into()),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(
        e.reason
            .contains("--origin \"a.test\" is not an http:// or https:// URL"),
        "{}",
        e.reason
    );
}

#[test]
fn a_value_stands_alone_or_is_left_as_it_was() {
    let mut r = Rewritten::new("id=101&x=1101&y=101a&z=(101)");
    assert!(r.holds("101"));
    assert!(r.replace("101", "id"));
    assert_eq!(r.template(), "id={{ id }}&x=1101&y=101a&z=({{ id }})");
    assert!(!r.holds("101"));
    assert_eq!(var_name("X-Request-Id"), "x_request_id");
    assert_eq!(var_name("2fa"), "v_2fa");
    let mut used = vec!["id".to_string()];
    assert_eq!(unique("id", &mut used), "id_2");
}
