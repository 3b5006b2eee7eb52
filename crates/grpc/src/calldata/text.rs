//! Messages made from a template without a method: a WebSocket run's
//! `--ws-message` with call data actions (`{{.RequestNumber}}`, `{{.UUID}}`,
//! `{{randomString 8}}`, …), each message rendered for its call by the engine's
//! workers ([`stampede_engine::made`]).
//!
//! The most a template can make is known from its actions before the run: one that
//! could make more than a message may hold is refused then, so no message made is
//! ever over the limit and nothing is rendered only to be thrown away.

use std::time::{SystemTime, UNIX_EPOCH};

use stampede_engine::made::{Call, CallMaker};
use stampede_engine::WsLoad;

use super::{Action, Piece, Template, Values, MAX_RANDOM_STRING};
use crate::GrpcError;

impl Template {
    /// The most bytes a rendering can make.
    fn most(&self) -> usize {
        (self.pieces.iter())
            .map(|p| match p {
                Piece::Text(t) => t.len(),
                Piece::Action(a) => match a {
                    // "g", "c" and two numbers (no prefix without a method).
                    Action::WorkerId => 2 + 2 * 20,
                    Action::RequestNumber | Action::TimestampUnix => 20,
                    Action::TimestampUnixMilli | Action::TimestampUnixNano => 40,
                    Action::Timestamp => 32,
                    Action::Uuid | Action::NewUuid => 36,
                    Action::RandomString(0) => 16,
                    Action::RandomString(n) => *n,
                    Action::RandomInt(..) => 20,
                },
            })
            .fold(0usize, usize::saturating_add)
    }
}

/// Makes each message from a template (see the module's description), and what its
/// answer must hold from another, with the same values; it always can, so a run it
/// makes for never stops for it.
pub struct TextMaker {
    template: Template,
    expect: Option<Template>,
}

impl TextMaker {
    /// A maker of `template`'s messages, each at most `limit` bytes, and of
    /// `expect`'s expectations (at most [`WsLoad::MAX_EXPECT`]); a template that could
    /// make more is refused, the message's named by `what`.
    pub fn new(
        template: Template,
        expect: Option<Template>,
        what: &str,
        limit: usize,
    ) -> Result<TextMaker, GrpcError> {
        let most = template.most();
        if most > limit {
            return Err(GrpcError::usage(format!(
                "{what}: its templates can make a message of {most} bytes; a message is at most {limit} (randomString makes at most {MAX_RANDOM_STRING} characters, each one byte)"
            )));
        }
        if let Some(most) = expect.as_ref().map(Template::most) {
            if most > WsLoad::MAX_EXPECT {
                return Err(GrpcError::usage(format!(
                    "--ws-expect: its templates can make {most} bytes; an expectation is at most {}",
                    WsLoad::MAX_EXPECT
                )));
            }
        }
        Ok(TextMaker { template, expect })
    }

    /// Call 0's message and expectation (on worker 0, connection 0): the run's as
    /// its spec carries them.
    pub fn first(&self) -> (Vec<u8>, Vec<u8>) {
        let (mut body, mut expect) = (Vec::new(), Vec::new());
        let call = Call {
            number: 0,
            worker: 0,
            conn: 0,
        };
        self.render(call, &mut body, &mut expect);
        (body, expect)
    }

    /// Renders `call`'s message into `body` and its expectation into `expect` (both
    /// come empty), reusing their room.
    fn render(&self, call: Call, body: &mut Vec<u8>, expect: &mut Vec<u8>) {
        let mut values = Values {
            call,
            prefix: "",
            now: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default(),
            uuid: None,
        };
        // An empty buffer is valid UTF-8: the text takes its room and gives it back.
        for (t, out) in [(Some(&self.template), body), (self.expect.as_ref(), expect)] {
            if let Some(t) = t {
                let mut text = String::from_utf8(std::mem::take(out)).unwrap_or_default();
                t.render(&mut values, &mut text);
                *out = text.into_bytes();
            }
        }
    }
}

impl CallMaker for TextMaker {
    fn make(&self, call: Call, body: &mut Vec<u8>, fields: &mut Vec<u8>) -> bool {
        self.render(call, body, fields);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(number: u64) -> Call {
        Call {
            number,
            worker: 1,
            conn: 3,
        }
    }

    fn made(maker: &TextMaker, number: u64) -> String {
        let mut body = Vec::new();
        assert!(maker.make(call(number), &mut body, &mut Vec::new()));
        String::from_utf8(body).unwrap()
    }

    #[test]
    fn each_message_gets_its_calls_values() {
        let t = Template::parse_text(
            r#"{"n":{{.RequestNumber}},"w":"{{.WorkerID}}","id":"{{.UUID}}","again":"{{.UUID}}","r":{{randomInt 5 6}},"s":"{{randomString 8}}"}"#,
            "--ws-message",
        )
        .unwrap();
        let maker = TextMaker::new(t, None, "--ws-message", 1 << 20).unwrap();
        let a = made(&maker, 7);
        let v: serde_json::Value = serde_json::from_str(&a).unwrap();
        assert_eq!(v["n"], 7);
        assert_eq!(v["w"], "g1c3");
        assert_eq!(v["r"], 5);
        // The call's UUID is the same wherever it is used in the call.
        assert_eq!(v["id"], v["again"]);
        assert_eq!(v["id"].as_str().unwrap().len(), 36);
        assert_eq!(v["s"].as_str().unwrap().len(), 8);
        let b: serde_json::Value = serde_json::from_str(&made(&maker, 8)).unwrap();
        assert_eq!(b["n"], 8);
        assert_ne!(b["id"], v["id"], "each call its own UUID");
    }

    #[test]
    fn a_template_that_could_make_too_much_is_refused_before_the_run() {
        let t = Template::parse_text("{{randomString 1000}}{{randomString 1000}}", "-x").unwrap();
        assert_eq!(t.most(), 2000);
        let e = TextMaker::new(t.clone(), None, "--ws-message", 1999)
            .err()
            .unwrap();
        assert!(
            e.message.contains("can make a message of 2000 bytes"),
            "{}",
            e.message
        );
        let maker = TextMaker::new(t, None, "--ws-message", 2000).unwrap();
        assert_eq!(made(&maker, 0).len(), 2000);
        // Every action's longest rendering is within its bound.
        for (text, n) in [
            ("{{.WorkerID}}", u64::MAX),
            ("{{.RequestNumber}}", u64::MAX),
            ("{{.Timestamp}}", 0),
            ("{{.TimestampUnixNano}}", 0),
            ("{{newUUID}}", 0),
            ("{{randomString 0}}", 0),
            ("{{randomInt 0 9223372036854775807}}", 0),
        ] {
            let t = Template::parse_text(text, "-x").unwrap();
            let most = t.most();
            let maker = TextMaker::new(t, None, "-x", most).unwrap();
            let mut body = Vec::new();
            let c = Call {
                number: n,
                worker: usize::MAX,
                conn: usize::MAX,
            };
            assert!(maker.make(c, &mut body, &mut Vec::new()));
            assert!(body.len() <= most, "{text}: {} > {most}", body.len());
        }
    }

    #[test]
    fn a_methods_names_are_not_taken_without_one() {
        let e = Template::parse_text("{{.MethodName}}", "--ws-message").unwrap_err();
        assert!(e.message.starts_with("--ws-message: {{.MethodName}}: not a call data template taken here (taken: .WorkerID,"), "{}", e.message);
        assert!(!e.message.contains("FullyQualifiedName"), "{}", e.message);
        let e = Template::parse_text("{{.RequestNumber", "--ws-message").unwrap_err();
        assert!(e.message.contains("never closed"), "{}", e.message);
    }
}
