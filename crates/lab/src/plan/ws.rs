//! A scenario that loads a WebSocket server: `ws = { message = "…", binary = true,
//! ping = true, stamp = true, deflate = true, protocols = ["chat.v2"] }` (or
//! `messages = ["…", "…"]`, sent in turn; `expect = "…"`, what each answer holds;
//! `steps = [{ send = "…", expect = "…" }, …]`, a session's steps) upgrades each
//! connection with the
//! scenario's GET (its path and headers) and times each message's round trip, as
//! `stampede load ws://…` does — over the same pool, sessions and rates as any
//! scenario. Read here with the line of each value; the keys that do not apply to
//! messages are refused.

use super::*;
use stampede_engine::WsLoad;

/// `ws = {…}` as the plan writes it.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWs {
    message: Option<Spanned<String>>,
    messages: Option<Vec<Spanned<String>>>,
    expect: Option<Spanned<String>>,
    steps: Option<Vec<Spanned<RawWsStep>>>,
    binary: Option<bool>,
    ping: Option<bool>,
    stamp: Option<bool>,
    deflate: Option<bool>,
    deflate_params: Option<Spanned<String>>,
    #[serde(default)]
    protocols: Vec<Spanned<String>>,
}

/// One of `ws.steps`: a message, and what its answer holds.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWsStep {
    send: String,
    expect: Option<String>,
}

/// The message each connection sends when the plan gives none.
const DEFAULT_MESSAGE: &str = "stampede";

/// The scenario's WebSocket load; `None` when it has no `ws` table.
pub(super) fn ws_plan(cx: &Ctx, s: &RawScenario, name: &str) -> Result<Option<WsLoad>, PlanError> {
    let Some(raw) = &s.ws else {
        return Ok(None);
    };
    let here = raw.span().start;
    let w = raw.get_ref();
    let not_get = (s.method.as_ref()).is_some_and(|m| !m.get_ref().eq_ignore_ascii_case("GET"));
    // A WebSocket scenario is verified by its messages: only on_failure applies.
    let http_checks = s.verify.as_ref().is_some_and(RawVerify::checks_http);
    let refused = [
        (
            s.body.is_some(),
            "scenario.body",
            "the message is ws.message",
        ),
        (
            http_checks,
            "scenario.verify",
            "it is verified by messages answered (only on_failure applies)",
        ),
        (not_get, "scenario.method", "the upgrade is a GET"),
        (
            s.streams.is_some(),
            "scenario.streams",
            "a connection carries one WebSocket (on one stream with http2 = true)",
        ),
        (
            s.steps.is_some(),
            "scenario.steps",
            "a WebSocket session's steps are ws.steps = [{ send, expect }, …]",
        ),
        (
            s.stream.is_some() || s.openai.is_some() || s.event_timeout.is_some(),
            "scenario.stream",
            "a message's answer is timed as a round trip",
        ),
        (
            s.style.as_ref().is_some_and(|x| x.get_ref() == "ab"),
            "scenario.style",
            "the upgrade is stampede's HTTP/1.1 GET",
        ),
        (
            s.keepalive.as_ref().is_some_and(|k| !*k.get_ref()),
            "scenario.keepalive",
            "each connection is upgraded once and keeps sending",
        ),
    ];
    refuse_beside(cx, (here, name, "ws"), &refused)?;
    let (steps, expects) = steps(cx, w, here)?;
    let mut messages = messages(cx, w, here)?;
    if !steps.is_empty() {
        messages = steps;
    }
    let message = match (&w.message, messages.first()) {
        (Some(m), _) => m.get_ref().as_str(),
        (None, Some(first)) => first,
        (None, None) => DEFAULT_MESSAGE,
    };
    let message_at = w.message.as_ref().map_or(here, |m| m.span().start);
    let ping = w.ping.unwrap_or(false);
    if ping && !expects.is_empty() {
        return Err(cx.err(
            here,
            "scenario.ws.steps",
            "a ping's answer is its pong; steps send data messages",
        ));
    }
    if ping && !messages.is_empty() {
        return Err(cx.err(
            here,
            "scenario.ws.messages",
            "a ping carries the one message; give it with message",
        ));
    }
    if let Some(e) = &w.expect {
        let why = if ping {
            Some("a ping's answer is its pong; drop expect".to_string())
        } else if e.get_ref().len() > WsLoad::MAX_EXPECT {
            Some(format!("at most {} KiB", WsLoad::MAX_EXPECT >> 10))
        } else {
            None
        };
        if let Some(why) = why {
            return Err(cx.err(e.span().start, "scenario.ws.expect", why));
        }
    }
    if let Some(p) = &w.deflate_params {
        let why = match (w.deflate, WsLoad::check_deflate_params(p.get_ref())) {
            (Some(true), Ok(_)) => None,
            (Some(true), Err(why)) => Some(why.to_string()),
            _ => Some("parameters of permessage-deflate's offer; add deflate = true".into()),
        };
        if let Some(why) = why {
            return Err(cx.err(p.span().start, "scenario.ws.deflate_params", why));
        }
    }
    if ping && w.binary == Some(true) {
        return Err(cx.err(
            here,
            "scenario.ws.binary",
            "a ping carries the message's bytes as they are; drop binary",
        ));
    }
    let stamp = w.stamp.unwrap_or(false);
    if ping && stamp {
        return Err(cx.err(
            here,
            "scenario.ws.stamp",
            "a ping is a round trip of its own; stamps go on data messages",
        ));
    }
    if ping && message.len() > WsLoad::MAX_PING {
        return Err(cx.err(
            message_at,
            "scenario.ws.message",
            format!(
                "a ping carries at most {} bytes, and the message is {}",
                WsLoad::MAX_PING,
                message.len()
            ),
        ));
    }
    if message.len() > WsLoad::MAX_SEND {
        return Err(cx.err(
            message_at,
            "scenario.ws.message",
            format!(
                "{} bytes; a message is at most {} MiB",
                message.len(),
                WsLoad::MAX_SEND >> 20
            ),
        ));
    }
    let mut protocols = Vec::new();
    for p in &w.protocols {
        protocols.push(p.get_ref().clone());
        // Named at the first that makes the list one that may not be offered.
        if !WsLoad::valid_protocols(&protocols) {
            return Err(cx.err(
                p.span().start,
                "scenario.ws.protocols",
                "at most 32 subprotocols, each a token (letters, digits and !#$%&'*+-.^_`|~)",
            ));
        }
    }
    Ok(Some(WsLoad {
        message: message.as_bytes().into(),
        messages: (messages.iter()).map(|m| m.as_bytes().into()).collect(),
        expect: (w.expect.as_ref()).map(|e| e.get_ref().as_bytes().into()),
        expects,
        binary: w.binary.unwrap_or(false),
        protocols,
        max_message: WsLoad::MAX_MESSAGE,
        ping,
        stamp,
        deflate: w.deflate.unwrap_or(false),
        deflate_params: (w.deflate_params.as_ref())
            .map_or_else(String::new, |p| p.get_ref().clone()),
    }))
}

/// What a step's answer holds.
type Expectation = std::sync::Arc<[u8]>;

/// `steps = [{ send, expect }, …]`: the messages sent in turn and what each answer
/// holds (empty: any message), within the bounds; not beside `message`, `messages`
/// or `expect`.
fn steps<'a>(
    cx: &Ctx,
    w: &'a RawWs,
    here: usize,
) -> Result<(Vec<&'a str>, Vec<Expectation>), PlanError> {
    let Some(list) = &w.steps else {
        return Ok((Vec::new(), Vec::new()));
    };
    let field = "scenario.ws.steps";
    if w.message.is_some() || w.messages.is_some() || w.expect.is_some() {
        return Err(cx.err(
            here,
            field,
            "steps give the messages and what their answers hold: not with message, messages or expect",
        ));
    }
    if list.is_empty() || list.len() > WsLoad::MAX_MESSAGES {
        return Err(cx.err(
            here,
            field,
            format!("from 1 to {} steps", WsLoad::MAX_MESSAGES),
        ));
    }
    let mut total = 0;
    let (mut sends, mut expects) = (Vec::new(), Vec::new());
    for st in list {
        let (send, expect) = (&st.get_ref().send, st.get_ref().expect.as_deref());
        total += send.len();
        let why = if send.len() > WsLoad::MAX_SEND || total > WsLoad::MAX_MESSAGES_BYTES {
            format!(
                "a message is at most {} MiB, and the steps' together {} MiB",
                WsLoad::MAX_SEND >> 20,
                WsLoad::MAX_MESSAGES_BYTES >> 20
            )
        } else if expect.is_some_and(|e| e.len() > WsLoad::MAX_EXPECT) {
            format!("expect: at most {} KiB", WsLoad::MAX_EXPECT >> 10)
        } else {
            sends.push(send.as_str());
            expects.push(expect.unwrap_or_default().as_bytes().into());
            continue;
        };
        return Err(cx.err(st.span().start, field, why));
    }
    Ok((sends, expects))
}

/// `messages = […]`, each within a message's bound and all within the list's; named
/// at the first that is not.
fn messages<'a>(cx: &Ctx, w: &'a RawWs, here: usize) -> Result<Vec<&'a str>, PlanError> {
    let Some(list) = &w.messages else {
        return Ok(Vec::new());
    };
    let field = "scenario.ws.messages";
    if w.message.is_some() {
        return Err(cx.err(
            here,
            field,
            "give message or messages (sent in turn), not both",
        ));
    }
    if list.is_empty() || list.len() > WsLoad::MAX_MESSAGES {
        return Err(cx.err(
            here,
            field,
            format!("from 1 to {} messages sent in turn", WsLoad::MAX_MESSAGES),
        ));
    }
    let mut total = 0;
    for m in list {
        let len = m.get_ref().len();
        total += len;
        if len > WsLoad::MAX_SEND || total > WsLoad::MAX_MESSAGES_BYTES {
            return Err(cx.err(
                m.span().start,
                field,
                format!(
                    "a message is at most {} MiB, and the messages together {} MiB",
                    WsLoad::MAX_SEND >> 20,
                    WsLoad::MAX_MESSAGES_BYTES >> 20
                ),
            ));
        }
    }
    Ok(list.iter().map(|m| m.get_ref().as_str()).collect())
}

#[cfg(test)]
mod tests;
