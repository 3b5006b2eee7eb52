//! HTTP/3's streams as both ends read them (RFC 9114 §4, §6.2.1): a request or a
//! response on a bidirectional stream, and the peer's control stream.
//!
//! [`Message`] reads one request or response stream's frames in order — a field
//! section (HEADERS), the content in DATA frames, optional trailers — decoding the
//! fields with the connection's QPACK [`Decoder`] and refusing what RFC 9114 §4.1.2
//! and §4.3 make malformed: DATA before the head, frames after the trailers,
//! pseudo-header fields missing, repeated, after regular ones or of the other side,
//! uppercase or connection-specific field names, content that does not add up to its
//! content-length. Informational (1xx) responses come before the final one. This end
//! advertises no blocked streams (SETTINGS_QPACK_BLOCKED_STREAMS 0), so a section that
//! would wait for insertions is the peer's error. [`Control`] reads the control
//! stream: SETTINGS first and once, no message frames, GOAWAY IDs that never grow.
//! Every violation is an [`H3Error`] with the code RFC 9114 gives it.

use super::qpack::{Decoded, Decoder};
use super::{goaway_id, kind, Code, Frame, FrameReader, H3Error, Settings};

/// Which side sent the message being read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// A request (the server reads it).
    Request,
    /// A response (the client reads it).
    Response,
}

/// What a message stream brought.
#[derive(Debug, PartialEq, Eq)]
pub enum Part<'a> {
    /// A request's head began: its method and its path (`:authority` for CONNECT).
    Request { method: &'a [u8], path: &'a [u8] },
    /// A response's head began: its status (an informational one is followed by
    /// another head).
    Status(u16),
    /// A regular field of the head or of the trailers.
    Field { name: &'a [u8], value: &'a [u8] },
    /// The head ended (`trailers`: the trailers did, and the message with them).
    HeadEnd { trailers: bool },
    /// Content bytes.
    Data(&'a [u8]),
}

/// Where a message stream is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the final head (informational heads may come first).
    Head,
    /// After the final head: DATA, then trailers.
    Body,
    /// After the trailers: nothing more.
    Done,
}

/// The most a field section's frame may hold, before QPACK decoding.
pub const MAX_SECTION_FRAME: usize = 256 * 1024;

/// One request or response stream, read as its bytes come.
#[derive(Debug)]
pub struct Message {
    side: Side,
    frames: FrameReader,
    state: State,
    /// The content-length the head gave, and the DATA bytes so far.
    length: Option<u64>,
    received: u64,
    /// A HEAD request's response has no content, whatever its content-length says.
    head_request: bool,
    /// A field section used the dynamic table: the insertions to acknowledge.
    ack: Option<u64>,
}

fn malformed(why: &'static str) -> H3Error {
    H3Error::new(Code::MESSAGE_ERROR, why)
}

impl Message {
    /// A stream carrying a message from `side`.
    pub fn new(side: Side) -> Message {
        Message {
            side,
            frames: FrameReader::new(MAX_SECTION_FRAME),
            state: State::Head,
            length: None,
            received: 0,
            head_request: false,
            ack: None,
        }
    }

    /// The response to a HEAD request: a content-length describes no content here.
    pub fn for_head_request(mut self) -> Message {
        self.head_request = true;
        self
    }

    /// Feeds the stream's bytes, handing what they bring to `on` in order.
    pub fn feed(
        &mut self,
        input: &[u8],
        qpack: &mut Decoder,
        on: &mut dyn FnMut(Part<'_>),
    ) -> Result<(), H3Error> {
        let (side, head_request) = (self.side, self.head_request);
        let (state, length, received) = (&mut self.state, &mut self.length, &mut self.received);
        let ack = &mut self.ack;
        self.frames.feed(input, &mut |f| match f {
            Frame::Data { bytes, .. } => {
                if *state != State::Body {
                    return Err(H3Error::new(
                        Code::FRAME_UNEXPECTED,
                        "DATA before the head or after the trailers",
                    ));
                }
                *received += bytes.len() as u64;
                if length.is_some_and(|l| *received > l) && !head_request {
                    return Err(malformed("more content than its content-length"));
                }
                if !bytes.is_empty() {
                    on(Part::Data(bytes));
                }
                Ok(())
            }
            Frame::Other {
                kind: kind::HEADERS,
                payload,
            } => {
                if *state == State::Done {
                    return Err(H3Error::new(
                        Code::FRAME_UNEXPECTED,
                        "a field section after the trailers",
                    ));
                }
                if *state == State::Body && !head_request && length.is_some_and(|l| *received != l)
                {
                    return Err(malformed("content short of its content-length"));
                }
                let (next, required) = section(side, *state, payload, qpack, length, on)?;
                *state = next;
                if required > 0 {
                    *ack = Some(ack.map_or(required, |a| a.max(required)));
                }
                Ok(())
            }
            Frame::Other { kind: t, .. } => match t {
                kind::SETTINGS | kind::GOAWAY | kind::MAX_PUSH_ID | kind::CANCEL_PUSH => {
                    Err(H3Error::new(
                        Code::FRAME_UNEXPECTED,
                        "a control frame on a message stream",
                    ))
                }
                kind::PUSH_PROMISE if side == Side::Request => Err(H3Error::new(
                    Code::FRAME_UNEXPECTED,
                    "a PUSH_PROMISE from a client",
                )),
                // This end never sends MAX_PUSH_ID: no push may be promised.
                kind::PUSH_PROMISE => Err(H3Error::new(
                    Code::ID_ERROR,
                    "a PUSH_PROMISE though no push was allowed",
                )),
                // Unknown and reserved frame types are ignored.
                _ => Ok(()),
            },
        })
    }

    /// The insertions a field section read since the last call used, if it used the
    /// dynamic table: the decoder stream then owes the encoder a Section
    /// Acknowledgment for this stream ([`Decoder::ack`]).
    pub fn take_ack(&mut self) -> Option<u64> {
        self.ack.take()
    }

    /// The stream ended (its FIN): an error unless the message is whole.
    pub fn finish(&self) -> Result<(), H3Error> {
        if !self.frames.at_boundary() {
            return Err(H3Error::new(
                Code::FRAME_ERROR,
                "a frame cut short by the stream's end",
            ));
        }
        match self.state {
            State::Head => Err(H3Error::new(
                Code::REQUEST_INCOMPLETE,
                "the stream ended before its head",
            )),
            State::Body
                if !self.head_request && self.length.is_some_and(|l| self.received != l) =>
            {
                Err(malformed("content short of its content-length"))
            }
            _ => Ok(()),
        }
    }
}

/// Whether `name` may not appear in HTTP/3 (RFC 9114 §4.2: connection-specific).
fn connection_specific(name: &[u8]) -> bool {
    matches!(
        name,
        b"connection" | b"keep-alive" | b"proxy-connection" | b"transfer-encoding" | b"upgrade"
    )
}

/// Decodes one field section and checks it as the head or the trailers it is; the
/// state after it, and the insertions the section used.
fn section(
    side: Side,
    state: State,
    payload: &[u8],
    qpack: &mut Decoder,
    length: &mut Option<u64>,
    on: &mut dyn FnMut(Part<'_>),
) -> Result<(State, u64), H3Error> {
    let trailers = state == State::Body;
    // Fields are checked as they come; the pseudo-header fields are gathered first
    // (they precede the rest) and the head announced once they end.
    let mut method: Option<Vec<u8>> = None;
    let mut path: Option<Vec<u8>> = None;
    let mut scheme = false;
    let mut authority: Option<Vec<u8>> = None;
    let mut status: Option<u16> = None;
    let mut regular = false;
    let mut fault: Option<H3Error> = None;
    let mut announced = false;
    let mut content_length: Option<u64> = None;
    let mut interim = false;
    let decoded = qpack.decode(payload, &mut |name, value| {
        if fault.is_some() {
            return;
        }
        let r = (|| -> Result<(), H3Error> {
            if name.iter().any(|b| b.is_ascii_uppercase()) || name.is_empty() {
                return Err(malformed("a field name with uppercase letters, or empty"));
            }
            if let Some(pseudo) = name.strip_prefix(b":") {
                if regular || trailers {
                    return Err(malformed("a pseudo-header field after regular fields"));
                }
                let slot: &mut Option<Vec<u8>> = match (side, pseudo) {
                    (Side::Request, b"method") => &mut method,
                    (Side::Request, b"path") => &mut path,
                    (Side::Request, b"authority") => &mut authority,
                    (Side::Request, b"scheme") => {
                        if scheme {
                            return Err(malformed("a pseudo-header field given twice"));
                        }
                        scheme = true;
                        return Ok(());
                    }
                    (Side::Response, b"status") => {
                        if status.is_some() {
                            return Err(malformed("a pseudo-header field given twice"));
                        }
                        let s = std::str::from_utf8(value)
                            .ok()
                            .filter(|s| s.len() == 3)
                            .and_then(|s| s.parse::<u16>().ok())
                            .filter(|s| (100..=599).contains(s))
                            .ok_or(malformed("a :status that is not three digits"))?;
                        status = Some(s);
                        return Ok(());
                    }
                    _ => return Err(malformed("a pseudo-header field this side may not send")),
                };
                if slot.is_some() {
                    return Err(malformed("a pseudo-header field given twice"));
                }
                *slot = Some(value.to_vec());
                return Ok(());
            }
            if !regular && !trailers {
                regular = true;
                announce(side, &method, &path, &authority, scheme, status, on)?;
                announced = true;
                interim = status.is_some_and(|s| s < 200);
            }
            regular = true;
            if connection_specific(name) || (name == b"te" && value != b"trailers") {
                return Err(malformed("a connection-specific field"));
            }
            if name == b"content-length" && !trailers && !interim {
                let n = std::str::from_utf8(value)
                    .ok()
                    .and_then(|v| v.parse::<u64>().ok())
                    .ok_or(malformed("a content-length that is not a number"))?;
                if content_length.is_some_and(|c| c != n) {
                    return Err(malformed("two content-lengths that differ"));
                }
                content_length = Some(n);
            }
            on(Part::Field { name, value });
            Ok(())
        })();
        if let Err(e) = r {
            fault = Some(e);
        }
    })?;
    if let Some(e) = fault {
        return Err(e);
    }
    let required = match decoded {
        Decoded::Fields { required } => required,
        Decoded::Blocked { .. } => {
            return Err(H3Error::new(
                Code::QPACK_DECOMPRESSION_FAILED,
                "a section that would block, with no blocked streams allowed",
            ))
        }
    };
    if trailers {
        on(Part::HeadEnd { trailers: true });
        return Ok((State::Done, required));
    }
    if !announced {
        announce(side, &method, &path, &authority, scheme, status, on)?;
        interim = status.is_some_and(|s| s < 200);
    }
    on(Part::HeadEnd { trailers: false });
    if interim {
        return Ok((State::Head, required));
    }
    *length = content_length;
    Ok((State::Body, required))
}

/// Checks the head's pseudo-header fields and hands over its first part.
fn announce(
    side: Side,
    method: &Option<Vec<u8>>,
    path: &Option<Vec<u8>>,
    authority: &Option<Vec<u8>>,
    scheme: bool,
    status: Option<u16>,
    on: &mut dyn FnMut(Part<'_>),
) -> Result<(), H3Error> {
    match side {
        Side::Response => {
            let s = status.ok_or(malformed("a response without :status"))?;
            on(Part::Status(s));
        }
        Side::Request => {
            let m = method
                .as_deref()
                .ok_or(malformed("a request without :method"))?;
            if m == b"CONNECT" {
                let a = authority
                    .as_deref()
                    .ok_or(malformed("a CONNECT without :authority"))?;
                if scheme || path.is_some() {
                    return Err(malformed("a CONNECT with :scheme or :path"));
                }
                on(Part::Request { method: m, path: a });
            } else {
                let p = path.as_deref().filter(|p| !p.is_empty());
                let p = p.ok_or(malformed("a request without :path"))?;
                if !scheme {
                    return Err(malformed("a request without :scheme"));
                }
                on(Part::Request { method: m, path: p });
            }
        }
    }
    Ok(())
}

/// The peer's control stream (after its type byte): its SETTINGS, then GOAWAY and
/// frames this end ignores.
#[derive(Debug)]
pub struct Control {
    frames: FrameReader,
    settings: Option<Settings>,
    goaway: Option<u64>,
}

/// What a control stream brought.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlEvent {
    /// The peer's settings (once, first).
    Settings(Settings),
    /// The peer is going away: no stream (or push) at or past this ID will be served.
    Goaway(u64),
}

impl Default for Control {
    fn default() -> Control {
        Control::new()
    }
}

impl Control {
    pub fn new() -> Control {
        Control {
            frames: FrameReader::new(16 * 1024),
            settings: None,
            goaway: None,
        }
    }

    /// The peer's settings, once they came.
    pub fn settings(&self) -> Option<Settings> {
        self.settings
    }

    /// Feeds the stream's bytes.
    pub fn feed(&mut self, input: &[u8], on: &mut dyn FnMut(ControlEvent)) -> Result<(), H3Error> {
        let (settings, goaway) = (&mut self.settings, &mut self.goaway);
        self.frames.feed(input, &mut |f| {
            let t = match f {
                Frame::Data { .. } => kind::DATA,
                Frame::Other { kind, .. } => kind,
            };
            if settings.is_none() && t != kind::SETTINGS {
                return Err(H3Error::new(
                    Code::MISSING_SETTINGS,
                    "a control stream that does not begin with SETTINGS",
                ));
            }
            match (t, f) {
                (kind::SETTINGS, Frame::Other { payload, .. }) => {
                    if settings.is_some() {
                        return Err(H3Error::new(Code::FRAME_UNEXPECTED, "a second SETTINGS"));
                    }
                    let s = Settings::parse(payload)?;
                    *settings = Some(s);
                    on(ControlEvent::Settings(s));
                    Ok(())
                }
                (kind::GOAWAY, Frame::Other { payload, .. }) => {
                    let id = goaway_id(payload)?;
                    if goaway.is_some_and(|g| id > g) {
                        return Err(H3Error::new(Code::ID_ERROR, "a GOAWAY whose ID grew"));
                    }
                    *goaway = Some(id);
                    on(ControlEvent::Goaway(id));
                    Ok(())
                }
                (kind::DATA | kind::HEADERS | kind::PUSH_PROMISE, _) => Err(H3Error::new(
                    Code::FRAME_UNEXPECTED,
                    "a message frame on the control stream",
                )),
                // MAX_PUSH_ID, CANCEL_PUSH (no push is used) and unknown types.
                _ => Ok(()),
            }
        })
    }

    /// The control stream ended: it may not (RFC 9114 §6.2.1).
    pub fn closed() -> H3Error {
        H3Error::new(
            Code::CLOSED_CRITICAL_STREAM,
            "the control stream was closed",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::qpack::encode;
    use super::super::{data_head, frame};
    use super::*;

    fn headers(out: &mut Vec<u8>, fields: &[(&str, &str)]) {
        let mut block = Vec::new();
        encode(
            &mut block,
            fields.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())),
        );
        frame(out, kind::HEADERS, &block);
    }

    fn read(side: Side, wire: &[u8], split: usize) -> Result<Vec<String>, H3Error> {
        let mut m = Message::new(side);
        let mut q = Decoder::new(16 * 1024);
        let mut seen = Vec::new();
        for piece in wire.chunks(split.max(1)) {
            m.feed(piece, &mut q, &mut |p| {
                seen.push(match p {
                    Part::Request { method, path } => format!(
                        "{} {}",
                        String::from_utf8_lossy(method),
                        String::from_utf8_lossy(path)
                    ),
                    Part::Status(s) => format!("status {s}"),
                    Part::Field { name, value } => format!(
                        "{}: {}",
                        String::from_utf8_lossy(name),
                        String::from_utf8_lossy(value)
                    ),
                    Part::HeadEnd { trailers } => format!("end {trailers}"),
                    Part::Data(d) => format!("data {}", d.len()),
                })
            })?;
        }
        m.finish()?;
        Ok(seen)
    }

    #[test]
    fn a_request_and_a_response_read_the_same_however_they_are_split() {
        let mut req = Vec::new();
        headers(
            &mut req,
            &[
                (":method", "POST"),
                (":scheme", "https"),
                (":authority", "a.example"),
                (":path", "/up"),
                ("content-length", "5"),
            ],
        );
        data_head(&mut req, 5);
        req.extend_from_slice(b"hello");
        frame(&mut req, 0x21, b"grease is ignored");
        for split in [1, 3, req.len()] {
            let seen = read(Side::Request, &req, split).unwrap();
            let data: usize = (seen.iter())
                .filter_map(|s| s.strip_prefix("data ").map(|n| n.parse::<usize>().unwrap()))
                .sum();
            assert_eq!(&seen[..3], ["POST /up", "content-length: 5", "end false"]);
            assert_eq!(data, 5, "{seen:?}");
        }
        // A response with an informational head first, content and trailers.
        let mut resp = Vec::new();
        headers(&mut resp, &[(":status", "103"), ("link", "</s.css>")]);
        headers(
            &mut resp,
            &[(":status", "200"), ("content-type", "text/plain")],
        );
        data_head(&mut resp, 2);
        resp.extend_from_slice(b"ok");
        headers(&mut resp, &[("x-checksum", "1")]);
        let seen = read(Side::Response, &resp, 2).unwrap();
        assert_eq!(
            seen.iter()
                .filter(|s| !s.starts_with("data"))
                .collect::<Vec<_>>(),
            [
                "status 103",
                "link: </s.css>",
                "end false",
                "status 200",
                "content-type: text/plain",
                "end false",
                "x-checksum: 1",
                "end true"
            ]
        );
    }

    #[test]
    fn malformed_messages_have_their_codes() {
        let code = |side: Side, build: &dyn Fn(&mut Vec<u8>)| {
            let mut w = Vec::new();
            build(&mut w);
            read(side, &w, w.len()).unwrap_err().code
        };
        let get = [(":method", "GET"), (":scheme", "https"), (":path", "/")];
        // DATA before HEADERS.
        assert_eq!(
            code(Side::Request, &|w| {
                data_head(w, 1);
                w.push(b'x');
            }),
            Code::FRAME_UNEXPECTED
        );
        for fields in [
            &[(":method", "GET"), (":path", "/")][..],
            &[
                (":method", "GET"),
                (":scheme", "https"),
                (":path", "/"),
                (":path", "/"),
            ],
            &[
                (":method", "GET"),
                ("x", "1"),
                (":scheme", "https"),
                (":path", "/"),
            ],
            &[
                (":method", "GET"),
                (":scheme", "https"),
                (":path", "/"),
                (":status", "200"),
            ],
            &[
                (":method", "GET"),
                (":scheme", "https"),
                (":path", "/"),
                ("Upper", "1"),
            ],
            &[
                (":method", "GET"),
                (":scheme", "https"),
                (":path", "/"),
                ("connection", "close"),
            ],
            &[
                (":method", "GET"),
                (":scheme", "https"),
                (":path", "/"),
                ("te", "gzip"),
            ],
        ] {
            assert_eq!(
                code(Side::Request, &|w| headers(w, fields)),
                Code::MESSAGE_ERROR,
                "{fields:?}"
            );
        }
        // Content that does not add up to the content-length, either way.
        for body in [3usize, 7] {
            assert_eq!(
                code(Side::Request, &|w| {
                    let mut f = get.to_vec();
                    f.push(("content-length", "5"));
                    headers(w, &f);
                    data_head(w, body as u64);
                    w.extend(std::iter::repeat_n(b'x', body));
                }),
                Code::MESSAGE_ERROR,
                "{body}"
            );
        }
        // A response's bad status, a control frame, a push promise, a cut stream.
        assert_eq!(
            code(Side::Response, &|w| headers(w, &[(":status", "2000")])),
            Code::MESSAGE_ERROR
        );
        assert_eq!(
            code(Side::Response, &|w| frame(w, kind::SETTINGS, &[])),
            Code::FRAME_UNEXPECTED
        );
        assert_eq!(
            code(Side::Response, &|w| frame(w, kind::PUSH_PROMISE, &[0])),
            Code::ID_ERROR
        );
        assert_eq!(code(Side::Request, &|_| {}), Code::REQUEST_INCOMPLETE);
        assert_eq!(
            code(Side::Request, &|w| {
                headers(w, &get);
                w.extend_from_slice(&[0x00, 0x05, b'a']);
            }),
            Code::FRAME_ERROR
        );
        // Trailers, then anything.
        assert_eq!(
            code(Side::Request, &|w| {
                headers(w, &get);
                headers(w, &[("x-t", "1")]);
                data_head(w, 1);
                w.push(b'x');
            }),
            Code::FRAME_UNEXPECTED
        );
        // A HEAD request's response may say a length it does not send.
        let mut w = Vec::new();
        headers(&mut w, &[(":status", "200"), ("content-length", "100")]);
        let mut m = Message::new(Side::Response).for_head_request();
        m.feed(&w, &mut Decoder::new(4096), &mut |_| {}).unwrap();
        m.finish().unwrap();
    }

    /// A response whose head uses the dynamic table (entries the encoder stream
    /// inserted first) reads through it and asks for its acknowledgment; one that would
    /// wait for insertions is the peer's error, as no blocked streams are allowed.
    #[test]
    fn a_head_from_the_dynamic_table_is_acknowledged_and_none_may_block() {
        let mut q = Decoder::with_table(16 * 1024, 256);
        // Capacity 256; insert ":status: 299" (name from static 24) and "x-a: b".
        let mut set = Vec::new();
        crate::hpack::integer_encode(&mut set, 0x20, 5, 256);
        q.encoder_stream(&set).unwrap();
        q.encoder_stream(&[
            0xc0 | 24,
            0x03,
            b'2',
            b'9',
            b'9',
            0x43,
            b'x',
            b'-',
            b'a',
            0x01,
            b'b',
        ])
        .unwrap();
        // Required Insert Count 2 (encoded 3 with 8 entries), base 2: relative 1 and 0.
        let mut w = Vec::new();
        frame(&mut w, kind::HEADERS, &[0x03, 0x00, 0x81, 0x80]);
        let mut m = Message::new(Side::Response);
        let mut seen = Vec::new();
        m.feed(&w, &mut q, &mut |p| seen.push(format!("{p:?}")))
            .unwrap();
        assert_eq!(seen[0], "Status(299)");
        assert_eq!(m.take_ack(), Some(2));
        assert_eq!(m.take_ack(), None);
        // Required Insert Count 3: not yet inserted.
        let mut w = Vec::new();
        frame(&mut w, kind::HEADERS, &[0x04, 0x00, 0x80]);
        let e = Message::new(Side::Response)
            .feed(&w, &mut q, &mut |_| {})
            .unwrap_err();
        assert_eq!(e.code, Code::QPACK_DECOMPRESSION_FAILED);
    }

    #[test]
    fn the_control_stream_begins_with_settings_and_its_goaway_never_grows() {
        let mut wire = Vec::new();
        Settings {
            max_field_section_size: Some(8192),
            ..Settings::default()
        }
        .write(&mut wire);
        frame(&mut wire, kind::GOAWAY, &[0x08]);
        frame(&mut wire, kind::MAX_PUSH_ID, &[0x00]);
        frame(&mut wire, kind::GOAWAY, &[0x04]);
        let mut c = Control::new();
        let mut seen = Vec::new();
        for b in &wire {
            c.feed(std::slice::from_ref(b), &mut |e| seen.push(e))
                .unwrap();
        }
        assert_eq!(seen.len(), 3);
        assert_eq!(c.settings().unwrap().max_field_section_size, Some(8192));
        assert_eq!(seen[2], ControlEvent::Goaway(4));
        let code = |w: &[u8]| Control::new().feed(w, &mut |_| {}).unwrap_err().code;
        assert_eq!(code(&[0x07, 0x01, 0x00]), Code::MISSING_SETTINGS);
        assert_eq!(code(&[0x04, 0x00, 0x04, 0x00]), Code::FRAME_UNEXPECTED);
        assert_eq!(code(&[0x04, 0x00, 0x01, 0x00]), Code::FRAME_UNEXPECTED);
        assert_eq!(
            code(&[0x04, 0x00, 0x07, 0x01, 0x04, 0x07, 0x01, 0x08]),
            Code::ID_ERROR
        );
        assert_eq!(Control::closed().code, Code::CLOSED_CRITICAL_STREAM);
    }
}
