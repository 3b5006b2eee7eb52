//! gRPC call data templates, as ghz writes them: `{{.RequestNumber}}`, `{{.UUID}}`,
//! `{{randomInt 1 9}}`, … in the request data and metadata, each call getting values
//! of its own.
//!
//! A template is parsed once, before the run; what is the same for every call (the
//! method's names, whether it streams) is put in its text then. A template with no
//! action left is the run's one request, built once as any other; one with actions
//! is rendered by the engine's workers for each call ([`stampede_engine::made`]):
//! the values written, the JSON read into the method's input message and encoded,
//! framed (and compressed where asked), the metadata's fields encoded beside it.
//! Call 0 is made before the run, so data that does not fit the message is said
//! then; a later call that does not fit (a number past its field's range) stops the
//! run, and the call and why are said.

use std::cell::Cell;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use prost_reflect::MethodDescriptor;
use stampede_engine::arrivals::Rng;
use stampede_engine::made::{Call, CallMaker};

use crate::GrpcError;

/// The templates taken, as said when another is given.
const TAKEN: &str = ".WorkerID, .RequestNumber, .FullyQualifiedName, .MethodName, .ServiceName, .InputName, .OutputName, .IsClientStreaming, .IsServerStreaming, .Timestamp, .TimestampUnix, .TimestampUnixMilli, .TimestampUnixNano, .UUID, newUUID, randomString N, randomInt MIN MAX";
/// The templates taken in a text sent without a method (a WebSocket message).
const TAKEN_TEXT: &str = ".WorkerID, .RequestNumber, .Timestamp, .TimestampUnix, .TimestampUnixMilli, .TimestampUnixNano, .UUID, newUUID, randomString N, randomInt MIN MAX";

/// The longest string `randomString` makes.
const MAX_RANDOM_STRING: i64 = 1 << 20;

/// What an action writes, call by call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    WorkerId,
    RequestNumber,
    Timestamp,
    TimestampUnix,
    TimestampUnixMilli,
    TimestampUnixNano,
    /// The call's UUID: the same wherever the call's templates use it.
    Uuid,
    /// A new UUID at each use.
    NewUuid,
    /// Letters and digits: this many, or 2 to 16 when 0.
    RandomString(usize),
    /// From the first up to the second, excluded.
    RandomInt(i64, i64),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Action(Action),
}

/// A text with call data templates, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pieces: Vec<Piece>,
}

impl Template {
    /// `text`'s templates for a call of `method`; `what` names the text in errors.
    pub fn parse(text: &str, method: &MethodDescriptor, what: &str) -> Result<Template, GrpcError> {
        Template::parse_for(text, Some(method), what)
    }

    /// `text`'s templates for a message sent without a method (a WebSocket message):
    /// the method's names are not taken.
    pub fn parse_text(text: &str, what: &str) -> Result<Template, GrpcError> {
        Template::parse_for(text, None, what)
    }

    fn parse_for(
        text: &str,
        method: Option<&MethodDescriptor>,
        what: &str,
    ) -> Result<Template, GrpcError> {
        let taken = if method.is_some() { TAKEN } else { TAKEN_TEXT };
        let mut pieces = Vec::new();
        let mut lit = String::new();
        let mut rest = text;
        while let Some(open) = rest.find("{{") {
            lit.push_str(&rest[..open]);
            let after = &rest[open + 2..];
            let close = after.find("}}").ok_or_else(|| {
                GrpcError::usage(format!(
                    "{what}: a template opened with {{{{ is never closed"
                ))
            })?;
            let inside = after[..close].trim();
            let words: Vec<&str> = inside.split_whitespace().collect();
            let fixed = |b: bool| if b { "true" } else { "false" };
            match (words.as_slice(), method) {
                ([".FullyQualifiedName"], Some(m)) => lit.push_str(m.full_name()),
                ([".MethodName"], Some(m)) => lit.push_str(m.name()),
                ([".ServiceName"], Some(m)) => lit.push_str(m.parent_service().name()),
                ([".InputName"], Some(m)) => lit.push_str(m.input().name()),
                ([".OutputName"], Some(m)) => lit.push_str(m.output().name()),
                ([".IsClientStreaming"], Some(m)) => lit.push_str(fixed(m.is_client_streaming())),
                ([".IsServerStreaming"], Some(m)) => lit.push_str(fixed(m.is_server_streaming())),
                _ => {
                    let action = action(&words, taken).map_err(|why| {
                        GrpcError::usage(format!("{what}: {{{{{inside}}}}}: {why}"))
                    })?;
                    if !lit.is_empty() {
                        pieces.push(Piece::Text(std::mem::take(&mut lit)));
                    }
                    pieces.push(Piece::Action(action));
                }
            }
            rest = &after[close + 2..];
        }
        lit.push_str(rest);
        if !lit.is_empty() {
            pieces.push(Piece::Text(lit));
        }
        Ok(Template { pieces })
    }

    /// The text, when it is the same for every call.
    pub fn constant(&self) -> Option<&str> {
        match self.pieces.as_slice() {
            [] => Some(""),
            [Piece::Text(t)] => Some(t),
            _ => None,
        }
    }

    /// Appends the text with `values` written in.
    fn render(&self, values: &mut Values, out: &mut String) {
        for p in &self.pieces {
            match p {
                Piece::Text(t) => out.push_str(t),
                Piece::Action(a) => values.write(*a, out),
            }
        }
    }
}

/// The action `words` name (ghz's fields and functions), or why none.
fn action(words: &[&str], taken: &str) -> Result<Action, GrpcError> {
    let number = |w: &str| {
        w.parse::<i64>()
            .map_err(|_| GrpcError::usage(format!("{w:?} is not a whole number")))
    };
    Ok(match words {
        [".WorkerID"] => Action::WorkerId,
        [".RequestNumber"] => Action::RequestNumber,
        [".Timestamp"] => Action::Timestamp,
        [".TimestampUnix"] => Action::TimestampUnix,
        [".TimestampUnixMilli"] => Action::TimestampUnixMilli,
        [".TimestampUnixNano"] => Action::TimestampUnixNano,
        [".UUID"] => Action::Uuid,
        ["newUUID"] => Action::NewUuid,
        ["randomString", n] => {
            let n = number(n)?;
            if n > MAX_RANDOM_STRING {
                return Err(GrpcError::usage(format!(
                    "at most {MAX_RANDOM_STRING} characters"
                )));
            }
            Action::RandomString(n.max(0) as usize)
        }
        ["randomInt", min, max] => {
            // As ghz reads them: a minimum below 0 is 0, a maximum of 0 or less is 1.
            let min = number(min)?.max(0);
            let max = number(max)?;
            let max = if max <= 0 { 1 } else { max };
            if max <= min {
                return Err(GrpcError::usage(format!(
                    "randomInt draws from MIN up to MAX, excluded: {max} is not above {min}"
                )));
            }
            Action::RandomInt(min, max)
        }
        _ => {
            return Err(GrpcError::usage(format!(
                "not a call data template taken here (taken: {taken})"
            )))
        }
    })
}

thread_local! {
    /// Each thread's random generator, seeded from the clock and the thread.
    static RNG: Cell<Option<Rng>> = const { Cell::new(None) };
}

/// The next 64 random bits of this thread's generator.
fn random() -> u64 {
    RNG.with(|cell| {
        let mut rng = cell.take().unwrap_or_else(|| {
            let clock = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos() as u64;
            let here = &clock as *const u64 as u64;
            Rng::new(clock ^ here.rotate_left(32))
        });
        let v = rng.next_u64();
        cell.set(Some(rng));
        v
    })
}

/// A random (version 4) UUID, as text.
fn uuid4(out: &mut String) {
    let (a, b) = (random(), random());
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&a.to_be_bytes());
    bytes[8..].copy_from_slice(&b.to_be_bytes());
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    for (i, b) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push('-');
        }
        let _ = write!(out, "{b:02x}");
    }
}

/// The values of one call.
struct Values<'a> {
    call: Call,
    /// ghz's `--name`, which its worker IDs begin with.
    prefix: &'a str,
    now: Duration,
    uuid: Option<String>,
}

impl Values<'_> {
    fn write(&mut self, a: Action, out: &mut String) {
        let _ = match a {
            Action::WorkerId => write!(
                out,
                "{}g{}c{}",
                self.prefix, self.call.worker, self.call.conn
            ),
            Action::RequestNumber => write!(out, "{}", self.call.number),
            Action::Timestamp => {
                let s = self.now.as_secs();
                let (y, m, d) = stampede_wire::date::civil_from_days((s / 86_400) as i64);
                let t = s % 86_400;
                write!(
                    out,
                    "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
                    t / 3600,
                    t / 60 % 60,
                    t % 60
                )
            }
            Action::TimestampUnix => write!(out, "{}", self.now.as_secs()),
            Action::TimestampUnixMilli => write!(out, "{}", self.now.as_millis()),
            Action::TimestampUnixNano => write!(out, "{}", self.now.as_nanos()),
            Action::Uuid => {
                let u = self.uuid.get_or_insert_with(|| {
                    let mut u = String::with_capacity(36);
                    uuid4(&mut u);
                    u
                });
                out.push_str(u);
                Ok(())
            }
            Action::NewUuid => {
                uuid4(out);
                Ok(())
            }
            Action::RandomString(n) => {
                const CHARSET: &[u8] =
                    b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
                let n = if n == 0 {
                    2 + (random() % 15) as usize
                } else {
                    n
                };
                for _ in 0..n {
                    out.push(CHARSET[(random() % CHARSET.len() as u64) as usize] as char);
                }
                Ok(())
            }
            Action::RandomInt(min, max) => {
                let span = (max - min) as u64;
                write!(out, "{}", min + (random() % span) as i64)
            }
        };
    }
}

/// How a call's metadata is given.
pub enum Metadata {
    /// A JSON object of strings (ghz's `-m`), templated as a whole.
    Json(Template),
    /// `name: value` fields, each value templated (`load --metadata`).
    Fields(Vec<(String, Template)>),
}

/// Makes each call's messages and metadata from the templates.
pub struct Maker {
    pub method: MethodDescriptor,
    pub data: Template,
    /// The data's flag, for errors.
    pub what: String,
    /// Client and bidirectional streams: messages sent per call (the data's in
    /// turn); 0 sends the data's messages once.
    pub stream_count: usize,
    /// Messages are gzip-compressed.
    pub gzip: bool,
    /// Metadata made per call, if any is templated.
    pub metadata: Option<Metadata>,
    /// What worker IDs begin with (ghz's `--name` and a colon), or nothing.
    pub prefix: String,
    failed: Mutex<Option<String>>,
}

impl Maker {
    /// A maker of `method`'s calls from `data`'s templates.
    pub fn new(method: MethodDescriptor, data: Template, what: &str) -> Maker {
        Maker {
            method,
            data,
            what: what.to_string(),
            stream_count: 0,
            gzip: false,
            metadata: None,
            prefix: String::new(),
            failed: Mutex::new(None),
        }
    }

    /// Makes call 0 (on worker 0, connection 0): data or metadata that does not fit
    /// is said before the run.
    pub fn check(&self) -> Result<(), GrpcError> {
        let call = Call {
            number: 0,
            worker: 0,
            conn: 0,
        };
        self.build(call, &mut Vec::new(), &mut Vec::new())
            .map_err(GrpcError::usage)
    }

    /// Why a call could not be made, if one could not (the run stopped there).
    pub fn failure(&self) -> Option<String> {
        self.failed.lock().map_or(None, |f| f.clone())
    }

    fn build(&self, call: Call, body: &mut Vec<u8>, fields: &mut Vec<u8>) -> Result<(), GrpcError> {
        let mut values = Values {
            call,
            prefix: &self.prefix,
            now: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default(),
            uuid: None,
        };
        let mut text = String::new();
        self.data.render(&mut values, &mut text);
        // The call's number goes into the message only when there is one to say.
        let said = |e: GrpcError| {
            GrpcError::fail(format!(
                "call {}: {}; the data made for it: {}",
                call.number,
                e.message,
                short(&text)
            ))
        };
        let mut framed = crate::calls::messages(&self.method, &text, &self.what).map_err(said)?;
        if self.method.is_client_streaming() {
            // The data's messages in turn, as many as asked.
            let n = match self.stream_count {
                0 => framed.len(),
                n => n,
            };
            if self.stream_count > framed.len() {
                framed = framed.iter().cycle().take(n).cloned().collect();
            } else {
                framed.truncate(n);
            }
        } else {
            // Unary and server-streaming calls take the data's messages in turn.
            let i = (call.number % framed.len() as u64) as usize;
            framed = vec![framed.swap_remove(i)];
        }
        if self.gzip {
            framed = crate::calls::gzip_messages(framed)?;
        }
        for m in &framed {
            body.extend_from_slice(m);
        }
        let mut field = |name: &str, value: &str| -> Result<(), GrpcError> {
            if value.bytes().any(|b| matches!(b, b'\r' | b'\n' | 0)) {
                return Err(GrpcError::fail(format!(
                    "call {}: the metadata {name} made for it holds a line break or NUL: {}",
                    call.number,
                    short(value)
                )));
            }
            let name = name.to_ascii_lowercase();
            stampede_wire::hpack::literal(fields, name.as_bytes(), value.as_bytes());
            Ok(())
        };
        match &self.metadata {
            Some(Metadata::Json(t)) => {
                let mut m = String::new();
                t.render(&mut values, &mut m);
                let pairs = string_map(&m, "-m")
                    .map_err(|e| GrpcError::fail(format!("call {}: {}", call.number, e.message)))?;
                for (n, v) in &pairs {
                    field(n, v)?;
                }
            }
            Some(Metadata::Fields(list)) => {
                for (n, t) in list {
                    let mut v = String::new();
                    t.render(&mut values, &mut v);
                    field(n, &v)?;
                }
            }
            None => {}
        }
        Ok(())
    }
}

/// A text cut to its first 200 characters for a message.
fn short(text: &str) -> String {
    match text.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

impl CallMaker for Maker {
    fn make(&self, call: Call, body: &mut Vec<u8>, fields: &mut Vec<u8>) -> bool {
        match self.build(call, body, fields) {
            Ok(()) => true,
            Err(why) => {
                if let Ok(mut f) = self.failed.lock() {
                    f.get_or_insert(why.message);
                }
                false
            }
        }
    }

    fn failure(&self) -> Option<String> {
        Maker::failure(self)
    }
}

mod text;
pub use text::TextMaker;

/// A JSON object of strings (ghz's `-m`, `--tags`), in its order.
pub fn string_map(text: &str, flag: &str) -> Result<Vec<(String, String)>, GrpcError> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        GrpcError::usage(format!("{flag}: not JSON ({e}); give an object of strings"))
    })?;
    let serde_json::Value::Object(m) = v else {
        return Err(GrpcError::usage(format!(
            "{flag}: give a JSON object of strings, e.g. '{{\"key\": \"value\"}}'"
        )));
    };
    m.into_iter()
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => Ok((k, s)),
            other => Err(GrpcError::usage(format!(
                "{flag}: {k}'s value {other} is not a string"
            ))),
        })
        .collect()
}

#[cfg(test)]
mod tests;
