//! WebSocket on the reference server (RFC 6455): the HTTP/1.1 handshake, then the
//! connection's frames as a sans-IO state machine beside [`crate::h1`] and
//! [`crate::h2`].
//!
//! Three endpoints: `/ws/echo` sends each message back as it came (text as text, binary
//! as binary), what a round-trip load measures; `/ws/room?name=` sends each message to
//! every member of the room, the sender included (see [`room`]); `/ws/push?interval_ms=&size=&count=`
//! sends `count` messages (0: until the client closes) of `size` bytes, one every
//! `interval_ms` on the loop's timers (with `stamp=1`, each stamped with when it was
//! due and when it went out), what a server-push load times. The echo takes
//! permessage-deflate (RFC 7692, [`deflate`]) when a client offers it, inflating what
//! comes and deflating its answers; the room and the push decline it. All answer
//! pings with pongs and a close with a close. A handshake that is not one (no key, a
//! version other than 13, not a GET) is refused with the status RFC 6455 gives it,
//! and a client that breaks the framing's rules is sent the close code that answers
//! it, then the connection ends. A message is kept whole for its echo or its room,
//! within the message limit checked from its frames' heads (1 MiB in a room, whose
//! messages are copied to every member).

use std::time::{Duration, Instant};

use stampede_wire::stamp::{self, Stamp};
use stampede_wire::ws::{self, deflate, Event, Reader, ReaderOptions};

use crate::request::{has_token, Method, Request};
use crate::routes::Lines;

/// The largest message a client may send (16 MiB, the largest the Autobahn cases
/// send).
pub const MAX_MESSAGE: u64 = 16 << 20;

/// The most messages a push endpoint is asked for, its largest message, and its
/// shortest and longest interval.
const MAX_COUNT: u64 = 100_000_000;
const MAX_PUSH_SIZE: usize = 1 << 20;
const MAX_INTERVAL_MS: u64 = 3_600_000;

/// The largest message a room member may send: each is copied to every member.
pub const MAX_ROOM_MESSAGE: u64 = 1 << 20;

/// The largest message on a WebSocket over HTTP/2: a connection carries up to
/// [`crate::h2::MAX_STREAMS`] of them, each kept whole for its echo.
pub const MAX_H2_MESSAGE: u64 = 1 << 20;

/// What the connection does with the client's messages.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Route {
    Echo,
    Push(Push),
    /// A member of the named room: its messages go to every member.
    Room(Box<[u8]>),
}

/// A push endpoint's messages.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Push {
    interval: Duration,
    /// Messages in all (0: until the client closes), and sent so far.
    count: u64,
    sent: u64,
    /// The message, framed once.
    frame: Vec<u8>,
    /// Where in `frame` each message's send stamp goes (`stamp=1`), if it carries one.
    stamp: Option<usize>,
}

/// The server side of one WebSocket connection.
#[derive(Debug)]
pub struct WsConn {
    reader: Reader,
    route: Route,
    /// Our close frame is written: nothing more is sent, and the connection ends once
    /// it is out.
    closing: bool,
    /// The push's next message, once the loop has said when it is due.
    due: Option<Instant>,
    /// A room member's messages read and not yet published, framed.
    published: Vec<u8>,
    /// permessage-deflate, when negotiated (the echo's).
    deflate: Option<Box<deflate::Deflater>>,
}

/// A handshake's fields, as sent (each empty when absent).
#[derive(Debug, Default)]
struct Upgrade<'a> {
    /// `Connection` names `upgrade`.
    connection: bool,
    key: &'a [u8],
    version: &'a [u8],
    /// `Sec-WebSocket-Protocol`: the protocols offered, as listed.
    protocols: &'a [u8],
    /// permessage-deflate as the echo takes it (RFC 7692), from the
    /// `Sec-WebSocket-Extensions` offered.
    deflate: Option<(deflate::Params, String)>,
}

/// What a handshake request came to.
pub enum Handshake {
    /// `101 Switching Protocols` is written; the connection speaks WebSocket now.
    Upgraded(Box<WsConn>),
    /// A refusal is written; the connection closes after it.
    Refused,
}

/// Answers a request that asked to upgrade to WebSocket (`head`: its bytes, read
/// again here for the handshake's fields, which the parser does not keep for every
/// request): the `101` and the connection that follows it, or the refusal (`400` for
/// a handshake that is not one, `426` with the version spoken for another version,
/// `404` for a path without an endpoint).
pub fn handshake(req: &Request<'_>, head: &[u8], out: &mut Vec<u8>, lines: Lines<'_>) -> Handshake {
    let mut fields = [httparse::EMPTY_HEADER; crate::request::MAX_HEADERS];
    let mut r = httparse::Request::new(&mut fields);
    let mut up = Upgrade::default();
    if let Ok(httparse::Status::Complete(_)) = r.parse(head) {
        let offers = (r.headers.iter())
            .filter(|h| h.name.eq_ignore_ascii_case("sec-websocket-extensions"))
            .map(|h| h.value);
        up.deflate = deflate::accept(offers);
        for h in r.headers.iter() {
            let v = h.value.trim_ascii();
            let is = |name: &str| h.name.eq_ignore_ascii_case(name);
            if is("connection") {
                up.connection |= has_token(h.value, b"upgrade");
            } else if is("sec-websocket-key") {
                up.key = v;
            } else if is("sec-websocket-version") {
                up.version = v;
            } else if is("sec-websocket-protocol") && up.protocols.is_empty() {
                up.protocols = v;
            }
        }
    }
    if req.method != Method::Get || req.http10 || !up.connection || !ws::valid_key(up.key) {
        return refuse(
            out,
            lines,
            400,
            "a WebSocket handshake is an HTTP/1.1 GET with Connection: Upgrade and a Sec-WebSocket-Key of 16 bytes in base64\n",
            "",
        );
    }
    if up.version != b"13" {
        return refuse(
            out,
            lines,
            426,
            "this server speaks WebSocket version 13\n",
            "Sec-WebSocket-Version: 13\r\n",
        );
    }
    let opened = match open(req.path, req.query, up.protocols, up.deflate, MAX_MESSAGE) {
        Ok(o) => o,
        Err((status, why)) => return refuse(out, lines, status, why, ""),
    };
    out.extend_from_slice(b"HTTP/1.1 101 Switching Protocols\r\n");
    out.extend_from_slice(lines.server);
    out.extend_from_slice(lines.date);
    out.extend_from_slice(b"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ");
    out.extend_from_slice(ws::accept_key(up.key).as_bytes());
    if let Some(p) = opened.protocol {
        out.extend_from_slice(b"\r\nSec-WebSocket-Protocol: ");
        out.extend_from_slice(p);
    }
    if let Some(answer) = &opened.extension {
        out.extend_from_slice(b"\r\nSec-WebSocket-Extensions: ");
        out.extend_from_slice(answer.as_bytes());
    }
    out.extend_from_slice(b"\r\n\r\n");
    Handshake::Upgraded(opened.conn)
}

/// A connection opened, however it was asked for (an HTTP/1.1 upgrade, an HTTP/2
/// extended CONNECT), and what its answer names: the subprotocol taken and the
/// extension's answer.
pub struct Opened<'a> {
    pub conn: Box<WsConn>,
    pub protocol: Option<&'a [u8]>,
    pub extension: Option<String>,
}

/// Opens the endpoint at `path` with its `query`, the subprotocols offered and
/// permessage-deflate as offered, messages up to `max_message`; `Err`: the status
/// and text that refuse it (`404` for a path without an endpoint, `400` for
/// settings that are not its own).
fn open<'a>(
    path: &[u8],
    query: &[u8],
    protocols: &'a [u8],
    offered: Option<(deflate::Params, String)>,
    max_message: u64,
) -> Result<Opened<'a>, (u16, &'static str)> {
    let route = match path {
        b"/ws/echo" => Route::Echo,
        b"/ws/push" => Route::Push(push(query).map_err(|why| (400, why))?),
        b"/ws/room" => Route::Room(room_name(query).map_err(|why| (400, why))?.into()),
        _ => {
            return Err((
                404,
                "WebSocket endpoints here: /ws/echo, /ws/push, /ws/room\n",
            ))
        }
    };
    // The first subprotocol offered, if any: the endpoints speak whatever the client
    // names.
    let protocol = (protocols.split(|&b| b == b','))
        .map(|p| p.trim_ascii())
        .find(|p| !p.is_empty() && p.iter().all(|&b| b.is_ascii_graphic()));
    // Only the echo compresses: a room's and a push's messages are framed once for
    // every member and message, so there the extension is declined.
    let (deflate, extension) = match offered.filter(|_| route == Route::Echo) {
        Some((p, answer)) => (Some(p), Some(answer)),
        None => (None, None),
    };
    let mut reader = Reader::new(ReaderOptions {
        peer_is_client: true,
        max_message: if matches!(route, Route::Room(_)) {
            MAX_ROOM_MESSAGE.min(max_message)
        } else {
            max_message
        },
        keep: matches!(route, Route::Echo | Route::Room(_)),
    });
    if let Some(p) = deflate {
        reader.inflate(p.peer_resets(true));
    }
    let conn = Box::new(WsConn {
        reader,
        route,
        closing: false,
        due: None,
        published: Vec::new(),
        deflate: deflate.map(|p| Box::new(p.deflater(true))),
    });
    Ok(Opened {
        conn,
        protocol,
        extension,
    })
}

/// Opens a WebSocket asked for by an HTTP/2 extended CONNECT (RFC 8441) to `target`
/// (path and query) with its `sec-websocket-version`, `-protocol` and `-extensions`
/// fields: its answer is a `200` naming what [`Opened`] names. Over HTTP/2 a
/// connection carries the echo and the push; a room's members join over HTTP/1.1
/// (`501`), and a message is at most [`MAX_H2_MESSAGE`] (a connection may carry
/// [`crate::h2::MAX_STREAMS`] of them at once). `Err`: the status and text that
/// refuse it.
pub fn over_h2<'a>(
    target: &[u8],
    version: &[u8],
    protocols: &'a [u8],
    extensions: &[Vec<u8>],
) -> Result<Opened<'a>, (u16, &'static str)> {
    if version.trim_ascii() != b"13" {
        return Err((400, "this server speaks WebSocket version 13\n"));
    }
    let (path, query) = crate::request::split_target(target);
    if path == b"/ws/room" {
        return Err((
            501,
            "a room's members join over HTTP/1.1 here; over HTTP/2: /ws/echo, /ws/push\n",
        ));
    }
    let offered = deflate::accept(extensions.iter().map(|e| &e[..]));
    open(path, query, protocols, offered, MAX_H2_MESSAGE)
}

/// A room's name from its endpoint's query: `name` (default `lobby`), 1 to 64
/// letters, digits, `.`, `_` or `-`.
fn room_name(query: &[u8]) -> Result<&[u8], &'static str> {
    let mut name: &[u8] = b"lobby";
    for pair in query.split(|&b| b == b'&').filter(|p| !p.is_empty()) {
        match pair.strip_prefix(b"name=") {
            Some(v) if room::valid_name(v) => name = v,
            Some(_) => return Err("/ws/room: name is 1 to 64 letters, digits, '.', '_' or '-'\n"),
            None => return Err("/ws/room: the one setting is name\n"),
        }
    }
    Ok(name)
}

fn refuse(out: &mut Vec<u8>, lines: Lines<'_>, status: u16, body: &str, extra: &str) -> Handshake {
    let _ = std::io::Write::write_fmt(
        out,
        format_args!(
            "HTTP/1.1 {status} {}\r\n",
            match status {
                400 => "Bad Request",
                404 => "Not Found",
                _ => "Upgrade Required",
            }
        ),
    );
    out.extend_from_slice(lines.server);
    out.extend_from_slice(lines.date);
    out.extend_from_slice(extra.as_bytes());
    let _ = std::io::Write::write_fmt(
        out,
        format_args!(
            "Content-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    );
    Handshake::Refused
}

/// A push endpoint's settings from its query: `interval_ms` (default 1000), `size`
/// (default 16 bytes), `count` (default 0: until the client closes), `text` (1: text
/// messages of `x`, else binary), `stamp` (1: each message begins with the send
/// stamp of [`stampede_wire::stamp`], its time due on the schedule and its send;
/// the size is then at least the stamp's, and the stamp's by default).
fn push(query: &[u8]) -> Result<Push, &'static str> {
    let (mut interval, mut size, mut count, mut text) = (1000u64, None, 0u64, false);
    let mut stamped = false;
    for pair in query.split(|&b| b == b'&').filter(|p| !p.is_empty()) {
        let (k, v) = match pair.iter().position(|&b| b == b'=') {
            Some(i) => (&pair[..i], &pair[i + 1..]),
            None => (pair, &b""[..]),
        };
        let n = std::str::from_utf8(v)
            .ok()
            .and_then(|v| v.parse::<u64>().ok());
        match (k, n) {
            (b"interval_ms", Some(n)) if (1..=MAX_INTERVAL_MS).contains(&n) => interval = n,
            (b"size", Some(n)) if n as usize <= MAX_PUSH_SIZE => size = Some(n as usize),
            (b"count", Some(n)) if n <= MAX_COUNT => count = n,
            (b"text", Some(n)) if n <= 1 => text = n == 1,
            (b"stamp", Some(n)) if n <= 1 => stamped = n == 1,
            (b"interval_ms", _) => return Err("/ws/push: interval_ms is from 1 to 3600000\n"),
            (b"size", _) => return Err("/ws/push: size is at most 1048576 bytes\n"),
            (b"count", _) => {
                return Err("/ws/push: count is at most 100000000 (0: until closed)\n")
            }
            (b"text", _) => return Err("/ws/push: text is 0 or 1\n"),
            (b"stamp", _) => return Err("/ws/push: stamp is 0 or 1\n"),
            _ => {
                return Err("/ws/push: the settings are interval_ms, size, count, text and stamp\n")
            }
        }
    }
    let size = match (size, stamped) {
        (Some(n), true) if n < stamp::LEN => {
            return Err("/ws/push: a stamped message is at least 43 bytes (size=43)\n")
        }
        (Some(n), _) => n,
        (None, true) => stamp::LEN,
        (None, false) => 16,
    };
    let mut frame = Vec::with_capacity(size + ws::MAX_HEAD);
    let payload = vec![if text { b'x' } else { 0 }; size];
    ws::frame(
        &mut frame,
        (true, false),
        if text { ws::TEXT } else { ws::BINARY },
        &payload,
        None,
    );
    Ok(Push {
        interval: Duration::from_millis(interval),
        count,
        sent: 0,
        stamp: stamped.then(|| frame.len() - size),
        frame,
    })
}

impl WsConn {
    /// Takes the client's bytes, writing the answers (echoes, pongs, the close) to
    /// `out`. True: the connection ends once `out` is written.
    pub fn feed(&mut self, data: &[u8], out: &mut Vec<u8>) -> bool {
        if self.closing {
            // After our close, what the client sends is not read.
            return true;
        }
        let echo = self.route == Route::Echo;
        let room = matches!(self.route, Route::Room(_));
        let mut close: Option<Option<u16>> = None;
        let deflate = &mut self.deflate;
        let r = self.reader.feed(data, &mut |e| match e {
            Event::Message { text, data, .. } if echo => {
                let opcode = if text { ws::TEXT } else { ws::BINARY };
                match deflate {
                    Some(d) => d.frame(out, opcode, data, None),
                    None => ws::frame(out, (true, false), opcode, data, None),
                }
            }
            Event::Message { text, data, .. } if room => ws::frame(
                &mut self.published,
                (true, false),
                if text { ws::TEXT } else { ws::BINARY },
                data,
                None,
            ),
            Event::Message { .. } | Event::Pong(_) => {}
            Event::Ping(p) => ws::frame(out, (true, false), ws::PONG, p, None),
            Event::Close { code, .. } => close = Some(code),
        });
        match (r, close) {
            (Err(e), _) => {
                ws::close(out, Some(e.code), e.why, None);
                self.closing = true;
            }
            (Ok(()), Some(code)) => {
                // The client's close is answered with its code (none with none).
                ws::close(out, code, "", None);
                self.closing = true;
            }
            (Ok(()), None) => {}
        }
        self.closing
    }

    /// The push's first message is due at `at` (the loop's clock): the time it was
    /// upgraded. `None`: the endpoint pushes nothing.
    pub fn push_from(&mut self, at: Instant) -> Option<Instant> {
        matches!(self.route, Route::Push(_)).then(|| {
            self.due = Some(at);
            at
        })
    }

    /// The push's next message is due: it goes to `out`, and the one after it falls
    /// due then (on the schedule's clock, not the send's). After the last, a close
    /// (1000) goes out, and `None` comes back.
    pub fn push_next(&mut self, out: &mut Vec<u8>) -> Option<Instant> {
        let (Route::Push(p), Some(due), false) = (&mut self.route, self.due, self.closing) else {
            return None;
        };
        let at = out.len();
        out.extend_from_slice(&p.frame);
        if let Some(off) = p.stamp {
            let s = Stamp {
                due_ns: stamp::unix_ns(due),
                sent_ns: stamp::unix_ns(Instant::now()),
            };
            out[at + off..at + off + stamp::LEN].copy_from_slice(&s.encode());
        }
        p.sent += 1;
        if p.count > 0 && p.sent >= p.count {
            ws::close(out, Some(ws::NORMAL), "pushed every message", None);
            self.closing = true;
            self.due = None;
            return None;
        }
        let next = due + p.interval;
        self.due = Some(next);
        Some(next)
    }

    /// Whether the connection is a push whose next message is due on a timer.
    pub fn pushes(&self) -> bool {
        matches!(self.route, Route::Push(_)) && self.due.is_some() && !self.closing
    }

    /// Whether the connection is ending (our close is written).
    pub fn closing(&self) -> bool {
        self.closing
    }

    /// The room the connection is a member of, if it is one.
    pub fn room(&self) -> Option<&[u8]> {
        match &self.route {
            Route::Room(name) => Some(name),
            _ => None,
        }
    }

    /// A room member's room and the messages it sent since the last call, framed for
    /// the members (empty: none); `None` for a connection in no room.
    pub fn take_published(&mut self) -> Option<(&[u8], Vec<u8>)> {
        match &self.route {
            Route::Room(name) => Some((name, std::mem::take(&mut self.published))),
            _ => None,
        }
    }

    /// A room member that leaves its messages unread past the output limit: a close
    /// (1008, policy) goes out, rather than the room's messages piling up.
    pub fn too_slow(&mut self, out: &mut Vec<u8>) {
        if !self.closing {
            ws::close(out, Some(1008), "too slow to read the room", None);
            self.closing = true;
        }
    }

    /// The server is stopping: a close (1001, going away) goes out.
    pub fn going_away(&mut self, out: &mut Vec<u8>) {
        if !self.closing {
            ws::close(out, Some(ws::GOING_AWAY), "the server is stopping", None);
            self.closing = true;
        }
    }
}

pub mod room;
#[cfg(test)]
mod tests;
