//! The reference server over HTTP/2 (h2c prior knowledge) on 127.0.0.1:0, spoken to
//! frame by frame: every endpoint answers as over HTTP/1.1, deferred answers do not
//! hold other streams back, flow control holds data until the client's window opens,
//! limits answer with their status, stream errors reset only their stream, connection
//! errors send GOAWAY with their code, and a shutdown sends GOAWAY and still answers
//! what was opened. Responses are decoded with an independent HPACK implementation.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use stampede_server::Config;
use stampede_wire::frame::{self, Head};
use stampede_wire::hpack;

use crate::common::connect;
use stampede_server::Running;

fn server() -> Running {
    Running::local(Config {
        threads: 1,
        ..Config::default()
    })
    .unwrap()
}

#[derive(Debug, Default, Clone)]
struct Resp {
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    ended: bool,
    reset: Option<u32>,
}

impl Resp {
    fn status(&self) -> u16 {
        self.header(":status")
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    }
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A client that writes frames by hand and keeps what comes back.
struct Client {
    s: TcpStream,
    buf: Vec<u8>,
    dec: loona_hpack::Decoder<'static>,
    streams: BTreeMap<u32, Resp>,
    /// Stream ids in the order their responses ended.
    ended: Vec<u32>,
    goaway: Option<(u32, u32)>,
    /// PING acknowledgements received.
    pings: usize,
    closed: bool,
}

impl Client {
    /// Connects as clients do: the preface, `settings`, and a connection window of
    /// 1 GiB.
    fn connect(srv: &Running, settings: &[(u16, u32)]) -> Client {
        let mut c = Client::connect_with_default_window(srv, settings);
        let mut wu = Vec::new();
        frame::window_update(&mut wu, 0, 1 << 30);
        c.send(&wu);
        c
    }

    /// Connects leaving the connection window at 65,535 bytes.
    fn connect_with_default_window(srv: &Running, settings: &[(u16, u32)]) -> Client {
        let mut s = connect(srv);
        s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        let mut out = frame::PREFACE.to_vec();
        frame::settings(&mut out, settings);
        s.write_all(&out).unwrap();
        Client {
            s,
            buf: Vec::new(),
            dec: loona_hpack::Decoder::new(),
            streams: BTreeMap::new(),
            ended: Vec::new(),
            goaway: None,
            pings: 0,
            closed: false,
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        self.s.write_all(bytes).unwrap();
    }

    fn frame(&mut self, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
        self.send(&raw(kind, flags, stream, payload));
    }

    /// Opens `stream` with `method` of `path`.
    fn request(&mut self, stream: u32, method: &str, path: &str, end_stream: bool) {
        self.send(&request(stream, method, path, end_stream));
    }

    /// Reads frames until `done` holds or five seconds pass.
    fn until(&mut self, done: impl Fn(&Client) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut chunk = [0u8; 65536];
        while !done(self) && !self.closed {
            if Instant::now() >= deadline {
                let state: Vec<_> = self
                    .streams
                    .iter()
                    .map(|(id, r)| (id, r.status(), r.body.len(), r.ended, r.reset))
                    .collect();
                panic!("timed out; (stream, status, body, ended, reset): {state:?}");
            }
            match self.s.read(&mut chunk) {
                Ok(0) => self.closed = true,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => self.closed = true,
            }
            while let Some(h) = Head::parse(&self.buf) {
                if self.buf.len() < 9 + h.len {
                    break;
                }
                let payload = self.buf[9..9 + h.len].to_vec();
                self.buf.drain(..9 + h.len);
                self.handle(h, &payload);
            }
        }
    }

    /// Reads whatever arrives for `d`.
    fn wait(&mut self, d: Duration) {
        let end = Instant::now() + d;
        self.until(|_| Instant::now() >= end);
    }

    fn handle(&mut self, h: Head, payload: &[u8]) {
        match h.kind {
            frame::HEADERS => {
                assert_ne!(
                    h.flags & frame::END_HEADERS,
                    0,
                    "one HEADERS frame per head"
                );
                let fields = self.dec.decode(payload).expect("a valid HPACK block");
                let r = self.streams.entry(h.stream).or_default();
                for (n, v) in fields {
                    r.headers
                        .push((String::from_utf8(n).unwrap(), String::from_utf8(v).unwrap()));
                }
            }
            frame::DATA => {
                let r = self.streams.entry(h.stream).or_default();
                assert!(!r.headers.is_empty(), "DATA before HEADERS");
                r.body.extend_from_slice(payload);
            }
            frame::RST_STREAM => {
                self.streams.entry(h.stream).or_default().reset = frame::u32_payload(payload);
            }
            frame::PING if h.flags & frame::ACK != 0 => self.pings += 1,
            frame::GOAWAY => {
                let last = u32::from_be_bytes(payload[..4].try_into().unwrap());
                let code = u32::from_be_bytes(payload[4..8].try_into().unwrap());
                self.goaway = Some((last, code));
            }
            _ => {}
        }
        if matches!(h.kind, frame::HEADERS | frame::DATA) && h.flags & frame::END_STREAM != 0 {
            let r = self.streams.entry(h.stream).or_default();
            assert!(!r.ended, "stream {} ended twice", h.stream);
            r.ended = true;
            self.ended.push(h.stream);
        }
    }

    fn response(&mut self, stream: u32) -> Resp {
        self.until(|c| {
            c.streams
                .get(&stream)
                .is_some_and(|r| r.ended || r.reset.is_some())
        });
        assert!(
            self.streams.contains_key(&stream),
            "stream {stream}: closed {} goaway {:?}",
            self.closed,
            self.goaway
        );
        self.streams[&stream].clone()
    }
}

/// A header block of literals without indexing.
fn block(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut b = Vec::new();
    for (n, v) in fields {
        hpack::literal(&mut b, n.as_bytes(), v.as_bytes());
    }
    b
}

/// The same request over HTTP/1.1: (status, content type, body).
fn http1(srv: &Running, method: &str, path: &str) -> (u16, String, Vec<u8>) {
    let mut s = TcpStream::connect(srv.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap();
    let mut hs = [httparse::EMPTY_HEADER; 16];
    let mut r = httparse::Response::new(&mut hs);
    let n = r.parse(&all).unwrap().unwrap();
    let ctype = r
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("content-type"))
        .map(|h| String::from_utf8_lossy(h.value).into_owned())
        .unwrap_or_default();
    (r.code.unwrap(), ctype, all[n..].to_vec())
}

#[test]
fn every_endpoint_answers_as_over_http11() {
    let srv = server();
    let mut c = Client::connect(&srv, &[(frame::SETTINGS_INITIAL_WINDOW_SIZE, 1 << 30)]);
    // The slow one first: it must not hold back the streams opened after it.
    c.request(1, "GET", "/delay/300", true);
    let paths = [
        ("GET", "/pong"),
        ("GET", "/plaintext"),
        ("GET", "/json"),
        ("GET", "/backend"),
        ("GET", "/chat"),
        ("GET", "/quacker?i=b9ogpt96K0NmkI"),
        ("GET", "/quacker?i=bad"),
        ("GET", "/quacker"),
        ("GET", "/biteq?i=b9ogpt96K0NmkI"),
        ("GET", "/FiringGeometry.png"),
        ("GET", "/bytes/100000"),
        ("GET", "/bytes/0"),
        ("GET", "/status/201"),
        ("GET", "/status/503"),
        ("GET", "/static/nothing"),
        ("GET", "/nope"),
        ("HEAD", "/pong"),
        ("HEAD", "/bytes/1000"),
        ("POST", "/pong"),
        ("DELETE", "/json"),
    ];
    for (i, (m, p)) in paths.iter().enumerate() {
        c.request(3 + 2 * i as u32, m, p, true);
    }
    let last = 3 + 2 * (paths.len() as u32 - 1);
    c.until(|c| c.streams.get(&1).is_some_and(|r| r.ended));
    assert_eq!(c.ended.last(), Some(&1), "the delayed answer came last");
    let delayed = c.response(1);
    assert_eq!(
        (delayed.status(), &delayed.body[..]),
        (200, &b"delayed\n"[..])
    );
    for (i, (m, p)) in paths.iter().enumerate() {
        let r = c.response(3 + 2 * i as u32);
        let (status, ctype, body) = http1(&srv, m, p);
        assert_eq!(r.status(), status, "{m} {p}");
        assert_eq!(r.header("content-type"), Some(ctype.as_str()), "{m} {p}");
        assert_eq!(r.body, body, "{m} {p}");
        let len: usize = r.header("content-length").unwrap().parse().unwrap();
        if *m == "HEAD" {
            let (_, _, get) = http1(&srv, "GET", p);
            assert_eq!(len, get.len(), "{m} {p}");
        } else {
            assert_eq!(len, body.len(), "{m} {p}");
        }
        assert!(r.header("date").is_some_and(|d| d.ends_with(" GMT")));
        assert!(r
            .header("server")
            .is_some_and(|s| s.starts_with("stampede/")));
        assert_eq!(r.header("connection"), None, "no HTTP/1 connection header");
    }
    assert_eq!(c.response(last - 2).header("allow"), Some("GET, HEAD"));
    assert_eq!(c.streams.len(), paths.len() + 1);
    assert!(c.streams.values().all(|r| r.reset.is_none()));
    assert!(!c.closed && c.goaway.is_none());
}

#[test]
fn flow_control_holds_data_until_the_window_opens() {
    let srv = server();
    // Each stream may receive 1,000 bytes until we say more.
    let mut c = Client::connect(&srv, &[(frame::SETTINGS_INITIAL_WINDOW_SIZE, 1000)]);
    c.request(1, "GET", "/bytes/5000", true);
    c.request(3, "GET", "/pong", true);
    c.response(3);
    c.wait(Duration::from_millis(200));
    assert_eq!(c.streams[&1].body.len(), 1000);
    assert!(!c.streams[&1].ended);
    let mut wu = Vec::new();
    frame::window_update(&mut wu, 1, 2500);
    c.send(&wu);
    c.wait(Duration::from_millis(200));
    assert_eq!(c.streams[&1].body.len(), 3500);
    // A larger initial window applies to open streams too.
    let mut s = Vec::new();
    frame::settings(&mut s, &[(frame::SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20)]);
    c.send(&s);
    let r = c.response(1);
    assert_eq!(r.body, http1(&srv, "GET", "/bytes/5000").2);

    // The connection window (65,535 until we say otherwise) holds a large body too.
    let mut c = Client::connect_with_default_window(
        &srv,
        &[(frame::SETTINGS_INITIAL_WINDOW_SIZE, 1 << 24)],
    );
    c.request(1, "GET", "/bytes/200000", true);
    c.wait(Duration::from_millis(200));
    assert_eq!(c.streams[&1].body.len(), 65_535);
    let mut wu = Vec::new();
    frame::window_update(&mut wu, 0, 1 << 20);
    c.send(&wu);
    assert_eq!(c.response(1).body.len(), 200_000);
}

#[test]
fn a_window_that_never_opens_ends_the_connection_after_the_idle_timeout() {
    let srv = Running::local(Config {
        threads: 1,
        idle_timeout: Duration::from_secs(1),
        ..Config::default()
    })
    .unwrap();
    // Stream windows of 0: the whole body is held.
    let mut c = Client::connect(&srv, &[(frame::SETTINGS_INITIAL_WINDOW_SIZE, 0)]);
    c.request(1, "GET", "/bytes/100000", true);
    let start = Instant::now();
    // PINGs keep the connection active; they are not progress.
    while !c.closed && start.elapsed() < Duration::from_secs(4) {
        // (The server may close between two PINGs: a failed write is not an error.)
        let _ = c.s.write_all(&raw(frame::PING, 0, 0, b"stampede"));
        c.wait(Duration::from_millis(200));
    }
    assert!(c.closed, "still open after {:?}", start.elapsed());
    assert_eq!(c.goaway, Some((1, frame::NO_ERROR)));
    assert_eq!(c.streams[&1].status(), 200);
    assert!(c.streams[&1].body.is_empty());
    assert!(start.elapsed() >= Duration::from_millis(900));
}

#[test]
fn limits_and_stream_errors_reset_or_refuse_only_their_stream() {
    let srv = Running::local(Config {
        threads: 1,
        limits: stampede_server::Limits {
            max_head: 1024,
            max_body: 1000,
        },
        ..Config::default()
    })
    .unwrap();
    let mut c = Client::connect(&srv, &[]);
    // No :path: malformed, reset.
    let b = block(&[(":method", "GET"), (":scheme", "http")]);
    c.frame(
        frame::HEADERS,
        frame::END_HEADERS | frame::END_STREAM,
        1,
        &b,
    );
    // An upper-case header name: malformed, reset.
    let b = block(&[
        (":method", "GET"),
        (":scheme", "http"),
        (":path", "/pong"),
        ("X-Big", "1"),
    ]);
    c.frame(
        frame::HEADERS,
        frame::END_HEADERS | frame::END_STREAM,
        3,
        &b,
    );
    // A header list over the limit: 431.
    let long = "x".repeat(2000);
    let b = block(&[
        (":method", "GET"),
        (":scheme", "http"),
        (":path", "/pong"),
        ("x-long", &long),
    ]);
    c.frame(
        frame::HEADERS,
        frame::END_HEADERS | frame::END_STREAM,
        5,
        &b,
    );
    // A body over the limit: 413 before the body ends, then the stream is reset.
    c.request(7, "POST", "/pong", false);
    c.frame(frame::DATA, 0, 7, &[b'a'; 800]);
    c.frame(frame::DATA, 0, 7, &[b'a'; 800]);
    // A body within the limit reaches the router (405 for POST).
    c.request(9, "POST", "/pong", false);
    c.frame(frame::DATA, frame::END_STREAM, 9, &[b'a'; 500]);
    // A stream the client resets before its answer gets none.
    c.request(11, "GET", "/delay/200", true);
    c.frame(frame::RST_STREAM, 0, 11, &frame::CANCEL.to_be_bytes());
    c.request(13, "GET", "/pong", true);
    // DATA that does not add up to the declared content-length: malformed.
    let b = block(&[
        (":method", "POST"),
        (":scheme", "http"),
        (":path", "/pong"),
        ("content-length", "10"),
    ]);
    c.frame(frame::HEADERS, frame::END_HEADERS, 21, &b);
    c.frame(frame::DATA, frame::END_STREAM, 21, b"short");
    // A stream that depends on itself (RFC 9113 5.3.1).
    let mut prio = 23u32.to_be_bytes().to_vec();
    prio.push(16);
    c.request(23, "GET", "/delay/100", true);
    c.frame(frame::PRIORITY, 0, 23, &prio);
    // HEADERS on a stream whose request already ended: STREAM_CLOSED.
    c.request(25, "GET", "/delay/100", true);
    c.request(25, "GET", "/pong", true);
    // A content-length that is not digits only (as over HTTP/1.1): malformed.
    let b = block(&[
        (":method", "GET"),
        (":scheme", "http"),
        (":path", "/pong"),
        ("content-length", "+0"),
    ]);
    c.frame(
        frame::HEADERS,
        frame::END_HEADERS | frame::END_STREAM,
        27,
        &b,
    );

    assert_eq!(c.response(1).reset, Some(frame::PROTOCOL_ERROR));
    assert_eq!(c.response(3).reset, Some(frame::PROTOCOL_ERROR));
    assert_eq!(c.response(5).status(), 431);
    let r = c.response(7);
    assert_eq!(r.status(), 413);
    assert_eq!(c.response(9).status(), 405);
    assert_eq!(c.response(13).body, b"PONG");
    assert_eq!(c.response(21).reset, Some(frame::PROTOCOL_ERROR));
    assert_eq!(c.response(23).reset, Some(frame::PROTOCOL_ERROR));
    assert_eq!(c.response(25).reset, Some(frame::STREAM_CLOSED));
    assert_eq!(c.response(27).reset, Some(frame::PROTOCOL_ERROR));
    c.wait(Duration::from_millis(400));
    assert_eq!(c.streams[&7].reset, Some(frame::NO_ERROR));
    assert!(!c.streams.contains_key(&11), "{:?}", c.streams.get(&11));
    assert!(!c.closed && c.goaway.is_none());

    // Streams beyond the advertised limit are refused; the others are answered.
    let mut c = Client::connect(&srv, &[]);
    let n = stampede_server::h2::MAX_STREAMS as u32;
    for i in 0..=n {
        c.request(1 + 2 * i, "GET", "/delay/300", true);
    }
    let over = 1 + 2 * n;
    assert_eq!(c.response(over).reset, Some(frame::REFUSED_STREAM));
    c.until(|c| c.ended.len() == n as usize);
    assert!(c
        .streams
        .values()
        .filter(|r| r.ended)
        .all(|r| r.status() == 200));
}

#[test]
fn connection_errors_send_goaway_with_their_code_and_close() {
    let srv = server();
    let cases: Vec<(&str, Vec<u8>, u32)> = vec![
        (
            "a frame over 16,384 bytes",
            raw(frame::DATA, 0, 1, &[0; 16_385]),
            frame::FRAME_SIZE_ERROR,
        ),
        (
            "HEADERS on an even stream",
            request(2, "GET", "/pong", true),
            frame::PROTOCOL_ERROR,
        ),
        (
            "an index beyond the HPACK tables",
            raw(frame::HEADERS, frame::END_HEADERS, 1, &[0xbf, 0x7f]),
            frame::COMPRESSION_ERROR,
        ),
        (
            "CONTINUATION without HEADERS",
            raw(frame::CONTINUATION, frame::END_HEADERS, 1, &[0x82]),
            frame::PROTOCOL_ERROR,
        ),
        (
            "a window increment of 0",
            raw(frame::WINDOW_UPDATE, 0, 0, &[0; 4]),
            frame::PROTOCOL_ERROR,
        ),
        (
            "SETTINGS of 5 bytes",
            raw(frame::SETTINGS, 0, 0, &[0; 5]),
            frame::FRAME_SIZE_ERROR,
        ),
        (
            "DATA on an idle stream",
            raw(frame::DATA, 0, 41, b"x"),
            frame::PROTOCOL_ERROR,
        ),
        (
            "HEADERS reopening a closed stream",
            request(1, "GET", "/pong", true),
            frame::STREAM_CLOSED,
        ),
        (
            "a table size update after a field",
            raw(
                frame::HEADERS,
                frame::END_HEADERS | frame::END_STREAM,
                3,
                &[0x82, 0x3f, 0xe1, 0x1f],
            ),
            frame::COMPRESSION_ERROR,
        ),
        (
            "PUSH_PROMISE from a client",
            raw(frame::PUSH_PROMISE, frame::END_HEADERS, 1, &[0, 0, 0, 2]),
            frame::PROTOCOL_ERROR,
        ),
    ];
    for (what, bytes, code) in cases {
        let mut c = Client::connect(&srv, &[]);
        c.request(1, "GET", "/pong", true);
        c.response(1);
        c.send(&bytes);
        c.until(|c| c.closed);
        assert_eq!(c.goaway, Some((1, code)), "{what}");
    }
    // A client's GOAWAY (with an unknown code) triggers nothing: what is open is
    // answered, PINGs still are, and closing is the client's to do (closing first would
    // reset the connection under frames still in flight).
    let mut c = Client::connect(&srv, &[]);
    c.request(1, "GET", "/delay/100", true);
    let mut goaway = 0u32.to_be_bytes().to_vec();
    goaway.extend_from_slice(&0xff_u32.to_be_bytes());
    c.send(&raw(frame::GOAWAY, 0, 0, &goaway));
    assert_eq!(c.response(1).status(), 200);
    c.send(&raw(frame::PING, 0, 0, b"stampede"));
    c.until(|c| c.pings == 1);
    assert!(!c.closed && c.goaway.is_none());
}

#[test]
fn shutdown_sends_goaway_and_answers_open_streams() {
    let srv = server();
    let mut c = Client::connect(&srv, &[]);
    c.request(1, "GET", "/delay/300", true);
    c.request(3, "GET", "/pong", true);
    c.response(3);
    srv.shutdown().trigger();
    c.until(|c| c.goaway.is_some());
    assert_eq!(c.goaway, Some((3, frame::NO_ERROR)));
    assert!(c.streams.get(&1).is_none_or(|r| !r.ended));
    assert_eq!(c.response(1).body, b"delayed\n");
    c.until(|c| c.closed);
    srv.stop().unwrap();
}

#[test]
fn a_server_without_http2_answers_the_preface_as_http11() {
    let srv = Running::local(Config {
        threads: 1,
        http2: false,
        ..Config::default()
    })
    .unwrap();
    let mut s = TcpStream::connect(srv.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(frame::PREFACE).unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap();
    assert!(
        all.starts_with(b"HTTP/1.1 400 "),
        "{}",
        String::from_utf8_lossy(&all)
    );
}

fn raw(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    frame::head(&mut f, payload.len(), kind, flags, stream);
    f.extend_from_slice(payload);
    f
}

/// A HEADERS frame opening `stream` with `method` of `path`.
fn request(stream: u32, method: &str, path: &str, end_stream: bool) -> Vec<u8> {
    let block = block(&[
        (":method", method),
        (":scheme", "http"),
        (":authority", "localhost"),
        (":path", path),
    ]);
    let flags = frame::END_HEADERS | if end_stream { frame::END_STREAM } else { 0 };
    raw(frame::HEADERS, flags, stream, &block)
}

#[test]
fn malformed_field_names_and_values_reset_their_stream() {
    let srv = server();
    let mut c = Client::connect(&srv, &[]);
    let bad: [(&str, &str); 7] = [
        ("x-a", "1\r\nx-injected: 1"),
        ("x-a", "1\nx"),
        ("x-a", "1\0"),
        ("", "empty name"),
        ("x a", "spaced name"),
        ("x-a", " leading space"),
        ("x-a", "trailing tab\t"),
    ];
    for (i, (n, v)) in bad.iter().enumerate() {
        let b = block(&[
            (":method", "GET"),
            (":scheme", "http"),
            (":path", "/pong"),
            (n, v),
        ]);
        c.frame(
            frame::HEADERS,
            frame::END_HEADERS | frame::END_STREAM,
            1 + 2 * i as u32,
            &b,
        );
    }
    let b = block(&[
        (":method", "GET"),
        (":scheme", "http"),
        (":path", "/pong\r\n"),
    ]);
    c.frame(
        frame::HEADERS,
        frame::END_HEADERS | frame::END_STREAM,
        15,
        &b,
    );
    c.request(17, "GET", "/pong", true);
    for i in 0..8u32 {
        assert_eq!(
            c.response(1 + 2 * i).reset,
            Some(frame::PROTOCOL_ERROR),
            "stream {}",
            1 + 2 * i
        );
    }
    assert_eq!(c.response(17).body, b"PONG");
    assert!(!c.closed && c.goaway.is_none());

    // Added to the HPACK table, a malformed field could come back by index, where
    // fields are not checked again: the connection ends instead.
    let mut c = Client::connect(&srv, &[]);
    let mut b = block(&[(":method", "GET"), (":scheme", "http"), (":path", "/pong")]);
    b.push(0x40);
    hpack_string(&mut b, b"x-a");
    hpack_string(&mut b, b"1\r\nx-injected: 1");
    c.frame(
        frame::HEADERS,
        frame::END_HEADERS | frame::END_STREAM,
        1,
        &b,
    );
    c.until(|c| c.goaway.is_some());
    assert_eq!(c.goaway, Some((0, frame::PROTOCOL_ERROR)));
}

#[test]
fn continuation_floods_open_header_blocks_and_hpack_bombs_end_the_connection() {
    let srv = Running::local(Config {
        threads: 1,
        head_timeout: Duration::from_secs(1),
        ..Config::default()
    })
    .unwrap();
    // Empty CONTINUATION frames without end.
    let mut c = Client::connect(&srv, &[]);
    let b = block(&[(":method", "GET"), (":scheme", "http"), (":path", "/pong")]);
    let mut flood = raw(frame::HEADERS, 0, 1, &b);
    flood.extend(raw(frame::CONTINUATION, 0, 1, b"").repeat(5000));
    c.send(&flood);
    c.until(|c| c.goaway.is_some());
    assert_eq!(c.goaway, Some((0, frame::ENHANCE_YOUR_CALM)));

    // A header block left open is cut off at the head timeout.
    let mut c = Client::connect(&srv, &[]);
    let t = Instant::now();
    c.frame(frame::HEADERS, 0, 1, &b);
    c.until(|c| c.closed);
    assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());

    // One 4,000-byte table entry referenced 16,000 times: 64 MB from 16 KB.
    let mut c = Client::connect(&srv, &[]);
    let mut first = Vec::new();
    for (n, v) in [(":method", "GET"), (":scheme", "http"), (":path", "/pong")] {
        hpack::literal(&mut first, n.as_bytes(), v.as_bytes());
    }
    // A literal with incremental indexing (0x40), a new name: table index 62.
    first.push(0x40);
    hpack_string(&mut first, b"x-bomb");
    hpack_string(&mut first, &[b'b'; 4000]);
    c.frame(
        frame::HEADERS,
        frame::END_HEADERS | frame::END_STREAM,
        1,
        &first,
    );
    assert_eq!(c.response(1).status(), 200);
    let mut bomb = Vec::new();
    for (n, v) in [(":method", "GET"), (":scheme", "http"), (":path", "/pong")] {
        hpack::literal(&mut bomb, n.as_bytes(), v.as_bytes());
    }
    bomb.extend(std::iter::repeat_n(0x80 | 62, 16_000));
    let t = Instant::now();
    c.frame(
        frame::HEADERS,
        frame::END_HEADERS | frame::END_STREAM,
        3,
        &bomb,
    );
    c.until(|c| c.goaway.is_some());
    assert_eq!(c.goaway, Some((1, frame::ENHANCE_YOUR_CALM)));
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
}

/// An HPACK string literal, not Huffman-coded (RFC 7541 5.1 and 5.2).
fn hpack_string(out: &mut Vec<u8>, s: &[u8]) {
    if s.len() < 127 {
        out.push(s.len() as u8);
    } else {
        out.push(127);
        let mut v = s.len() - 127;
        while v >= 128 {
            out.push((v % 128) as u8 | 0x80);
            v /= 128;
        }
        out.push(v as u8);
    }
    out.extend_from_slice(s);
}

#[test]
fn a_flooding_connection_does_not_hold_the_event_loop() {
    let srv = server();
    let mut flood = connect(&srv);
    let mut start = frame::PREFACE.to_vec();
    frame::settings(&mut start, &[]);
    flood.write_all(&start).unwrap();
    let mut drain = flood.try_clone().unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = std::thread::spawn(move || {
        let mut b = [0u8; 65536];
        while matches!(drain.read(&mut b), Ok(n) if n > 0) {}
    });
    let sent = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let writer = {
        let (stop, sent) = (stop.clone(), sent.clone());
        std::thread::spawn(move || {
            let block = raw(frame::PING, 0, 0, b"12345678").repeat(4096);
            let until = Instant::now() + Duration::from_secs(10);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) && Instant::now() < until {
                if flood.write_all(&block).is_err() {
                    break;
                }
                sent.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            let _ = flood.shutdown(std::net::Shutdown::Both);
        })
    };
    // The flood is under way once the server has taken a few of its blocks.
    let until = Instant::now() + Duration::from_secs(5);
    while sent.load(std::sync::atomic::Ordering::Relaxed) < 8 {
        assert!(Instant::now() < until, "the flood did not start");
        std::thread::yield_now();
    }
    let mut slowest = Duration::ZERO;
    for _ in 0..5 {
        let t = Instant::now();
        let (status, _, body) = http1(&srv, "GET", "/pong");
        slowest = slowest.max(t.elapsed());
        assert_eq!((status, body.as_slice()), (200, &b"PONG"[..]));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    reader.join().unwrap();
    // A loop held by the flood would answer only once the flood ends (10 s); one
    // that takes turns answers at once, up to a busy machine's scheduling delays.
    assert!(slowest < Duration::from_secs(3), "{slowest:?}");
}

#[test]
fn a_static_file_larger_than_a_chunk_comes_whole_over_h2_and_head_has_its_length() {
    let dir = std::env::temp_dir().join(format!("stampede-h2static-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file: Vec<u8> = (0..200_000u32).map(|i| (i % 253) as u8).collect();
    std::fs::write(dir.join("f.bin"), &file).unwrap();
    let srv = Running::local(Config {
        threads: 1,
        static_dir: Some(dir.clone()),
        ..Config::default()
    })
    .unwrap();
    let mut c = Client::connect(&srv, &[(frame::SETTINGS_INITIAL_WINDOW_SIZE, 1 << 30)]);
    c.request(1, "GET", "/static/f.bin", true);
    c.request(3, "HEAD", "/static/f.bin", true);
    c.request(5, "GET", "/static/f.bin", true);
    c.until(|c| {
        [1, 3, 5]
            .iter()
            .all(|s| c.streams.get(s).is_some_and(|r| r.ended))
    });
    for s in [1, 5] {
        let r = c.response(s);
        assert_eq!(r.status(), 200);
        assert!(r.body == file, "stream {s}: {} bytes", r.body.len());
    }
    let head = c.response(3);
    assert_eq!(head.header("content-length"), Some("200000"));
    assert!(head.body.is_empty());
    srv.stop().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
