//! `stampede load ws://…`: WebSocket runs' flags — the message, binary or text or a
//! ping, the subprotocols offered, permessage-deflate, `--stream` for a push stream — the upgrade request
//! built from the URL and `-H`, and the flags that do not apply refused by name.

use std::sync::Arc;

use stampede_engine::made::MadeCalls;
use stampede_engine::{Request, Target, WsLoad};

use super::LoadArgs;
use crate::common::Exit;

/// The message sent when none is given.
const DEFAULT_MESSAGE: &str = "stampede";

/// The WebSocket flags given with an http(s) URL, or flags that do not apply given
/// with a ws(s) URL: each refused by name, with what to do instead.
pub(super) fn check_flags(a: &LoadArgs, target: &Target) -> Result<(), Exit> {
    if !target.websocket {
        let given = [
            ("--ws-message", a.ws_message.is_some()),
            ("--ws-binary", a.ws_binary),
            ("--ws-protocol", !a.ws_protocols.is_empty()),
            ("--ws-ping", a.ws_ping),
            ("--ws-stamp", a.ws_stamp),
            ("--ws-deflate", a.ws_deflate),
            ("--ws-expect", a.ws_expect.is_some()),
            ("--ws-steps", a.ws_steps.is_some()),
        ];
        if let Some((flag, _)) = given.iter().find(|(_, on)| *on) {
            return Err(Exit::usage(format!(
                "{flag}: WebSocket messages go to a ws:// or wss:// URL (this run's is {})",
                target.url
            )));
        }
        return Ok(());
    }
    let refused = [
        (
            "--targets",
            a.targets.is_some(),
            "a WebSocket run sends one message to one URL",
        ),
        (
            "--body-lines",
            a.body_lines.is_some() && (a.ws_ping || a.ws_message.is_some()),
            "each line is a data message sent in turn: not with --ws-ping or --ws-message",
        ),
        (
            "--http3",
            a.http3,
            "WebSocket connections are upgraded HTTP/1.1 ones, or HTTP/2 streams with --http2",
        ),
        (
            "--call",
            a.grpc.call.is_some(),
            "gRPC calls go to an http:// or https:// URL",
        ),
        (
            "--openai",
            a.openai.is_some(),
            "completions go to an http:// or https:// URL",
        ),
        (
            "--sse",
            a.sse,
            "a message's answer is timed as a round trip (--stream times what the server pushes)",
        ),
        (
            "--rand-regex-url",
            a.rand_regex_url,
            "a WebSocket run upgrades one URL",
        ),
        (
            "--redirects",
            a.redirects > 0,
            "an upgrade is not redirected",
        ),
        (
            "--no-keepalive",
            a.no_keepalive,
            "each connection is upgraded once and keeps sending; use --connections and --rate",
        ),
        ("-m", a.method != "GET", "the upgrade is a GET"),
        (
            "--streams",
            a.streams.is_some(),
            "a connection carries one WebSocket (on one stream with --http2); use --connections, and --pipeline for messages in flight",
        ),
    ];
    if let Some((flag, _, why)) = refused.iter().find(|(_, on, _)| *on) {
        return Err(Exit::usage(format!(
            "{flag}: not for ws:// or wss:// URLs: {why}"
        )));
    }
    if a.stream && a.ws_ping {
        return Err(Exit::usage(
            "--ws-ping: --stream times the messages the server pushes; pings are round trips of their own",
        ));
    }
    if a.stream && a.ws_stamp && a.ws_message.is_none() && a.body_file.is_none() {
        return Err(Exit::usage(
            "--ws-stamp: with --stream only the subscription's message is sent; give it with --ws-message",
        ));
    }
    if a.stream && a.pipeline > 1 {
        return Err(Exit::usage(
            "--pipeline: with --stream a connection holds one push stream at a time",
        ));
    }
    Ok(())
}

/// A WebSocket run's upgrade, its load, and — when --ws-message's templates make
/// each message its own — the maker of its messages.
pub(super) struct Upgrade {
    pub request: Request,
    pub load: WsLoad,
    pub made: Option<MadeCalls>,
}

/// The upgrade request (the URL's GET with `headers` and the upgrade's own, but the
/// key, which each connection draws) and what each connection sends: `body` (from
/// --body-file), --ws-message's text (made for each message where it has call data
/// templates), --body-lines' lines in turn, or the default message.
pub(super) fn upgrade(
    a: &LoadArgs,
    target: &Target,
    headers: &[(String, String)],
    body: Option<Vec<u8>>,
) -> Result<Upgrade, Exit> {
    let (messages, expects) = match (&a.body_lines, &a.ws_steps) {
        (Some(file), _) => (
            lines(file, &crate::common::read_body(file)?, a.ws_binary)?,
            Vec::new(),
        ),
        (None, Some(file)) => steps(file, &crate::common::read_body(file)?)?,
        (None, None) => (Vec::new(), Vec::new()),
    };
    let body = body.or_else(|| messages.first().map(|m| m.to_vec()));
    if let Some(n) = WsLoad::own_header(headers) {
        return Err(Exit::usage(format!(
            "-H {n}: the upgrade sets it (each connection its own key; subprotocols with --ws-protocol; permessage-deflate with --ws-deflate)"
        )));
    }
    let parse = |text: &Option<String>, flag: &str, hint: &str| {
        text.as_deref()
            .map(|t| {
                stampede_grpc::calldata::Template::parse_text(t, flag)
                    .map_err(|e| Exit::usage(format!("{} ({hint})", e.message)))
            })
            .transpose()
    };
    if let Some(p) = &a.ws_deflate_params {
        WsLoad::check_deflate_params(p)
            .map_err(|e| Exit::usage(format!("--ws-deflate-params: {e}")))?;
    }
    let template = parse(
        &a.ws_message,
        "--ws-message",
        "a message sent as written, braces and all, goes in a file given with --body-file",
    )?;
    let expect = parse(
        &a.ws_expect,
        "--ws-expect",
        "call data templates are taken here",
    )?;
    let templated = |t: &Option<stampede_grpc::calldata::Template>| {
        t.as_ref().is_some_and(|t| t.constant().is_none())
    };
    let made = if templated(&template) || templated(&expect) {
        if a.ws_ping {
            return Err(Exit::usage(
                "--ws-ping: a ping carries the same message each time; --ws-message's templates make data messages",
            ));
        }
        if expect.is_some() && template.is_none() {
            return Err(Exit::usage(
                "--ws-expect: its templates are made with each message's values; give the message with --ws-message",
            ));
        }
        let room = WsLoad::MAX_SEND
            - if a.ws_stamp {
                stampede_wire::stamp::LEN
            } else {
                0
            };
        let message = template.expect("a message to make");
        Some(stampede_grpc::calldata::TextMaker::new(
            message,
            expect,
            "--ws-message",
            room,
        )?)
    } else {
        None
    };
    let message = match (body, &a.ws_message) {
        (Some(b), _) => b,
        // A templated message's is the first made.
        (None, Some(t)) => match &made {
            Some(m) => m.first().0,
            None => t.clone().into_bytes(),
        },
        // A push stream sends nothing unless asked to subscribe with a message.
        (None, None) if a.stream => Vec::new(),
        (None, None) => DEFAULT_MESSAGE.as_bytes().to_vec(),
    };
    if !a.ws_binary && std::str::from_utf8(&message).is_err() {
        return Err(Exit::usage(
            "--body-file: the file is not UTF-8 text; send it as binary messages with --ws-binary",
        ));
    }
    if a.ws_ping && message.len() > stampede_wire::ws::MAX_CONTROL {
        return Err(Exit::usage(format!(
            "--ws-ping: a ping carries at most {} bytes, and the message is {}",
            stampede_wire::ws::MAX_CONTROL,
            message.len()
        )));
    }
    if message.len() > WsLoad::MAX_SEND {
        return Err(Exit::usage(format!(
            "--body-file: {} bytes; a message is at most {} MiB",
            message.len(),
            WsLoad::MAX_SEND >> 20
        )));
    }
    let load = WsLoad {
        message: message.into(),
        messages,
        expect: (a.ws_expect.as_ref()).map(|e| match &made {
            // Each message's own is made beside it; the spec holds the first.
            Some(m) => m.first().1.into(),
            None => e.as_bytes().into(),
        }),
        expects,
        binary: a.ws_binary,
        protocols: a.ws_protocols.clone(),
        max_message: WsLoad::MAX_MESSAGE,
        ping: a.ws_ping,
        stamp: a.ws_stamp,
        deflate: a.ws_deflate,
        deflate_params: a.ws_deflate_params.clone().unwrap_or_default(),
    };
    let request =
        (load.upgrade_request(target, headers)).map_err(|e| Exit::usage(e.to_string()))?;
    Ok(Upgrade {
        request,
        load,
        made: made.map(|m| MadeCalls(Arc::new(m))),
    })
}

/// Messages sent in turn, or what their answers hold.
type Messages = Vec<Arc<[u8]>>;

/// `--ws-steps FILE`'s steps: one JSON object per non-empty line, `send` (a string)
/// and `expect` (a string, or left out), each send within a message's bound and each
/// expectation within its own, all within the list's: the messages in turn and what
/// each one's answer holds (empty: any message). A line that is not a step is named
/// with what is wrong in it.
fn steps(file: &str, text: &[u8]) -> Result<(Messages, Messages), Exit> {
    let (mut sends, mut expects) = (Vec::new(), Vec::new());
    let mut total = 0;
    for (n, l) in stampede_inputs::targets::lines(text) {
        let at = |why: String| Exit::usage(format!("--ws-steps {file}:{n}: {why}"));
        if sends.len() == WsLoad::MAX_MESSAGES {
            return Err(at(format!("at most {} steps", WsLoad::MAX_MESSAGES)));
        }
        total += l.len();
        if l.len() > WsLoad::MAX_SEND || total > WsLoad::MAX_MESSAGES_BYTES {
            return Err(at(format!(
                "a step is at most {} MiB, and the steps together {} MiB",
                WsLoad::MAX_SEND >> 20,
                WsLoad::MAX_MESSAGES_BYTES >> 20
            )));
        }
        let shape = r#"a step is {"send": "…", "expect": "…"} ("expect" may be left out)"#;
        let v: serde_json::Value =
            serde_json::from_slice(l).map_err(|e| at(format!("not JSON ({e}); {shape}")))?;
        let Some(step) = v.as_object() else {
            return Err(at(format!("not an object; {shape}")));
        };
        if let Some(k) = step.keys().find(|k| *k != "send" && *k != "expect") {
            return Err(at(format!("{k:?} is not a step's; {shape}")));
        }
        let Some(send) = step.get("send").and_then(|s| s.as_str()) else {
            return Err(at(format!("\"send\" must be a string; {shape}")));
        };
        let expect = match step.get("expect") {
            None => "",
            Some(e) => e
                .as_str()
                .ok_or_else(|| at(format!("\"expect\" must be a string; {shape}")))?,
        };
        if expect.len() > WsLoad::MAX_EXPECT {
            return Err(at(format!(
                "\"expect\" is at most {} KiB",
                WsLoad::MAX_EXPECT >> 10
            )));
        }
        sends.push(Arc::from(send.as_bytes()));
        expects.push(Arc::from(expect.as_bytes()));
    }
    if sends.is_empty() {
        return Err(Exit::usage(format!(
            "--ws-steps {file}: no steps; one JSON object a line"
        )));
    }
    Ok((sends, expects))
}

/// `--body-lines FILE`'s messages: one per non-empty line, each within a message's
/// bound (text ones UTF-8), all within the list's; a line that is not is named.
fn lines(file: &str, text: &[u8], binary: bool) -> Result<Vec<Arc<[u8]>>, Exit> {
    let mut out = Vec::new();
    let mut total = 0;
    for (n, l) in stampede_inputs::targets::lines(text) {
        let at = |why: String| Exit::usage(format!("--body-lines {file}:{n}: {why}"));
        total += l.len();
        if out.len() == WsLoad::MAX_MESSAGES {
            return Err(at(format!(
                "at most {} messages are sent in turn",
                WsLoad::MAX_MESSAGES
            )));
        }
        if l.len() > WsLoad::MAX_SEND || total > WsLoad::MAX_MESSAGES_BYTES {
            return Err(at(format!(
                "a message is at most {} MiB, and the messages together {} MiB",
                WsLoad::MAX_SEND >> 20,
                WsLoad::MAX_MESSAGES_BYTES >> 20
            )));
        }
        if !binary && std::str::from_utf8(l).is_err() {
            return Err(at(
                "not UTF-8 text; send the lines as binary messages with --ws-binary".into(),
            ));
        }
        out.push(Arc::from(l));
    }
    if out.is_empty() {
        return Err(Exit::usage(format!(
            "--body-lines {file}: no lines; one message per line"
        )));
    }
    Ok(out)
}
