use super::*;

fn chat(turns: &[&[&str]], max_context: Option<u32>, overflow: Overflow) -> Chat {
    Chat {
        conversations: turns
            .iter()
            .map(|c| Conversation {
                turns: c
                    .iter()
                    .map(|p| Turn {
                        prompt: p.to_string(),
                        max_tokens: 4,
                    })
                    .collect(),
            })
            .collect(),
        system: Some("be brief".into()),
        model: "m".into(),
        path: "/v1/chat/completions".into(),
        authority: "127.0.0.1:9".into(),
        headers: vec![("x-team".into(), "a".into())],
        extra: Map::new(),
        stream: true,
        delay: (Duration::from_millis(5), Duration::from_millis(5)),
        max_context,
        overflow,
        tokenizer: None,
        seed: 1,
    }
}

/// The request `h` builds on `conn`: its messages, as (role, content).
fn ask(h: &mut Box<dyn ThreadHooks>, conn: usize) -> Vec<(String, String)> {
    let mut out = Vec::new();
    assert_eq!(h.request(conn, &mut out), Flow::Go);
    let text = String::from_utf8(out).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(
        head.starts_with("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:9\r\n"),
        "{head}"
    );
    assert!(
        head.contains("x-team: a") && head.contains(&format!("Content-Length: {}", body.len()))
    );
    let v: Value = serde_json::from_str(body).unwrap();
    assert_eq!(
        (v["stream"].as_bool(), v["max_completion_tokens"].as_u64()),
        (Some(true), Some(4))
    );
    (v["messages"].as_array().unwrap().iter())
        .map(|m| {
            (
                m["role"].as_str().unwrap().into(),
                m["content"].as_str().unwrap().into(),
            )
        })
        .collect()
}

fn sse(words: &[&str]) -> String {
    let mut s = String::new();
    for w in words {
        s += &format!(
            "data: {}\n\n",
            json!({"choices": [{"delta": {"content": w}}]})
        );
    }
    s + "data: [DONE]\n\n"
}

fn reply(h: &mut Box<dyn ThreadHooks>, conn: usize, status: u16, body: &str) {
    let headers = stampede_engine::Fields::from_pairs(std::iter::empty());
    let flow = h.response(&Reply {
        conn,
        status,
        head: b"",
        headers: &headers,
        body: body.as_bytes(),
        cut: false,
    });
    assert_eq!(flow, Flow::Go);
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[test]
fn each_turn_carries_the_history_with_the_models_answers() {
    let run = ChatRun::new(chat(
        &[&["hi there", "and then", "bye now"]],
        None,
        Overflow::End,
    ))
    .unwrap();
    assert_eq!(run.hooks().0.targets(), ["turn 1", "turn 2", "turn 3"]);
    let mut h = run.hooks().0.thread(0);
    assert_eq!(
        ask(&mut h, 0),
        pairs(&[("system", "be brief"), ("user", "hi there")])
    );
    assert_eq!(h.target(0), 0);
    reply(&mut h, 0, 200, &sse(&["hello", " you"]));
    assert_eq!(h.delay(0).0, Duration::from_millis(5), "the turn delay");
    assert!(!h.finished(0));
    assert_eq!(
        ask(&mut h, 0),
        pairs(&[
            ("system", "be brief"),
            ("user", "hi there"),
            ("assistant", "hello you"),
            ("user", "and then")
        ])
    );
    assert_eq!(h.target(0), 1);
    reply(&mut h, 0, 200, &sse(&["ok"]));
    let third = ask(&mut h, 0);
    assert_eq!(third.len(), 6);
    assert_eq!(third[4], ("assistant".into(), "ok".into()));
    reply(&mut h, 0, 200, &sse(&["bye"]));
    assert!(h.finished(0), "three turns: the conversation is over");
    drop(h);
    let f = run.figures();
    assert_eq!(
        (f.started, f.completed, f.failed, f.turns_answered),
        (1, 1, 0, 3)
    );
}

#[test]
fn a_history_past_the_limit_is_cut_as_asked() {
    // Each exchange: a 2-word prompt, a 3-word answer; the system prompt 2 words.
    let turns: &[&str] = &["a b", "c d", "e f", "g h"];
    let run = ChatRun::new(chat(&[turns], Some(12), Overflow::DropOldest)).unwrap();
    let mut h = run.hooks().0.thread(0);
    for _ in 0..3 {
        ask(&mut h, 0);
        reply(&mut h, 0, 200, &sse(&["x y z"]));
    }
    // 2 + 3 × 5 + 2 = 19 > 12: the two oldest exchanges go (2 + 5 + 2 = 9).
    let m = ask(&mut h, 0);
    assert_eq!(
        m,
        pairs(&[
            ("system", "be brief"),
            ("user", "e f"),
            ("assistant", "x y z"),
            ("user", "g h")
        ])
    );
    drop(h);
    assert_eq!(run.figures().exchanges_dropped, 2);

    let run = ChatRun::new(chat(&[turns, &["solo"]], Some(12), Overflow::End)).unwrap();
    let mut h = run.hooks().0.thread(0);
    for _ in 0..2 {
        ask(&mut h, 0);
        reply(&mut h, 0, 200, &sse(&["x y z"]));
    }
    // The third turn would hold 2 + 10 + 2 = 14: the conversation ends, the next begins.
    assert_eq!(
        ask(&mut h, 0),
        pairs(&[("system", "be brief"), ("user", "solo")])
    );
    drop(h);
    let f = run.figures();
    assert_eq!((f.ended_at_limit, f.completed, f.started), (1, 1, 2));
}

#[test]
fn a_failed_answer_or_a_lost_request_ends_the_conversation_as_failed() {
    let run = ChatRun::new(chat(&[&["a", "b"]], None, Overflow::End)).unwrap();
    let mut h = run.hooks().0.thread(0);
    ask(&mut h, 0);
    reply(&mut h, 0, 503, "busy");
    assert!(h.finished(0));
    ask(&mut h, 1);
    h.gone(1);
    assert!(h.finished(1));
    drop(h);
    let f = run.figures();
    assert_eq!((f.started, f.failed, f.completed), (2, 2, 0));
    assert!(ChatRun::new(chat(&[&[]], None, Overflow::End)).is_err());
}

#[test]
fn answers_are_read_from_streams_and_whole_replies() {
    assert_eq!(answer_text(sse(&["a", "b c"]).as_bytes()), "ab c");
    let whole = json!({"choices": [{"message": {"role": "assistant", "content": "all of it"}}]});
    assert_eq!(answer_text(whole.to_string().as_bytes()), "all of it");
    assert_eq!(answer_text(b"data: {broken\n\ndata: [DONE]\n"), "");
}
