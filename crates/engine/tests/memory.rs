//! The client's protocol state machines against the server's, joined in memory: no
//! socket, no thread, no clock but a simulated one. Bytes go from one end's output to the other's input in
//! pieces of a chosen size, so every split of the stream is a case.

use std::sync::Arc;

use stampede_engine::h1::H1Conn as Client1;
use std::time::Duration;

use stampede_engine::h2::{Event, H2Conn as Client2, H2Request, Response};
use stampede_engine::ws::WsClient;
use stampede_engine::{RequestBuilder, Target, WsLoad};
use stampede_server::h1::{Answering, H1Conn as Server1};
use stampede_server::h2::{H2Conn as Server2, H2Respond};
use stampede_server::request::{parse, Limits, Parsed};
use stampede_server::routes::{Ctx, Lines, Routed};
use stampede_server::store::Store;
use stampede_server::ws::Handshake;

fn ctx() -> Ctx {
    Ctx::new(Arc::new(Store::generate()), None, 0)
}

/// Moves `bytes` to `feed` `piece` bytes at a time.
fn deliver(bytes: &[u8], piece: usize, mut feed: impl FnMut(&[u8])) {
    for chunk in bytes.chunks(piece.max(1)) {
        feed(chunk);
    }
}

/// The server end of an HTTP/1 connection: buffers what is not yet a whole request,
/// as the event loop does, and answers the rest.
struct Server1End {
    conn: Server1,
    pending: Vec<u8>,
    ctx: Ctx,
    limits: Limits,
}

impl Server1End {
    fn new() -> Server1End {
        Server1End {
            conn: Server1::new(),
            pending: Vec::new(),
            ctx: ctx(),
            limits: Limits::default(),
        }
    }

    /// Takes bytes from the client; returns the answers they complete.
    fn input(&mut self, data: &[u8]) -> Vec<u8> {
        self.pending.extend_from_slice(data);
        let mut out = Vec::new();
        while self.answer(&mut out) {}
        out
    }

    /// One pass over the input; true when it stopped at a generated body, which is
    /// then made whole so that the requests behind it can go on.
    fn answer(&mut self, out: &mut Vec<u8>) -> bool {
        let answered = self.conn.answer(
            &self.pending,
            &mut Answering {
                out,
                ctx: &mut self.ctx,
                limits: &self.limits,
                lines: Lines {
                    date: b"Date: Thu, 01 Jan 1970 00:00:00 GMT\r\n",
                    server: b"Server: memory\r\n",
                },
                draining: false,
                waiting_output: 0,
                max_output: 1 << 20,
            },
        );
        self.pending.drain(..answered.used);
        // A generated body is made as the client reads: here, all at once.
        while self.conn.has_tail() {
            self.conn.fill_tail(out);
        }
        answered.tail && !self.pending.is_empty()
    }
}

/// Runs `n` pipelined requests for `path` over HTTP/1, delivering `piece` bytes at a
/// time each way; returns the client's responses.
fn h1_exchange(path: &str, n: u32, piece: usize, keepalive: bool) -> Vec<Response> {
    let target = Target::parse(&format!("http://127.0.0.1:9{path}")).unwrap();
    let one = RequestBuilder::native(&target, "GET", keepalive)
        .build()
        .unwrap();
    let bytes = one.repeated(n as usize);
    let mut client = Client1::new(false, keepalive);
    client.queue(n);
    client.send(0..bytes.len());
    let mut server = Server1End::new();
    let mut answers = Vec::new();
    while client.has_output() {
        let out = client.output(&bytes).to_vec();
        client.wrote(out.len());
        deliver(&out, piece, |b| answers.extend(server.input(b)));
    }
    let mut events = Vec::new();
    deliver(&answers, piece, |b| client.feed(b, &mut events).unwrap());
    events
        .into_iter()
        .map(|e| match e {
            Event::Response(r) => r,
            other => panic!("{other:?}"),
        })
        .collect()
}

#[test]
fn http1_pipelined_requests_every_split() {
    for piece in [1, 2, 7, 64, 4096] {
        let got = h1_exchange("/pong", 3, piece, true);
        assert_eq!(got.len(), 3, "piece {piece}");
        for r in &got {
            assert_eq!(
                (r.status, r.body, r.close),
                (200, 4, false),
                "piece {piece}"
            );
        }
    }
}

#[test]
fn http1_generated_bodies_and_closing_requests() {
    // /bytes/N is made a chunk at a time by the server; the client counts it whole.
    let got = h1_exchange("/bytes/300000", 2, 1000, true);
    assert_eq!(got.iter().map(|r| r.body).collect::<Vec<_>>(), [300_000; 2]);
    // Keep-alive off: one request, answered with Connection: close.
    let got = h1_exchange("/pong", 1, 5, false);
    assert_eq!(got.len(), 1);
    assert!(got[0].close && !got[0].reused);
    // An unknown path is answered, not dropped.
    assert_eq!(h1_exchange("/nowhere", 1, 3, true)[0].status, 404);
}

/// The server end of an HTTP/2 connection, routing as the event loop does.
struct Server2End {
    conn: Option<Server2>,
    pending: Vec<u8>,
    ctx: Ctx,
    path: Vec<u8>,
    body: Vec<u8>,
}

impl Server2End {
    fn input(&mut self, data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let conn = self
            .conn
            .get_or_insert_with(|| Server2::new(Limits::default(), &mut out));
        self.pending.extend_from_slice(data);
        let used = conn.feed(&self.pending, &mut out).unwrap();
        self.pending.drain(..used);
        let (mut request, mut authorization) = (Vec::new(), Vec::new());
        while let Some(ready) = conn.next_ready(&mut self.path, &mut request) {
            conn.authorization(ready.stream, &mut authorization);
            let mut resp = H2Respond {
                conn,
                out: &mut out,
                stream: ready.stream,
                head: false,
                date: b"Thu, 01 Jan 1970 00:00:00 GMT",
                server: b"memory",
                body: &mut self.body,
            };
            let target = (&self.path[..], &authorization[..]);
            let routed = resp.route(&ready, target, &request, &mut self.ctx);
            assert!(matches!(routed, Routed::Written));
        }
        out
    }
}

#[test]
fn http2_streams_every_split() {
    let target = Target::parse("http://127.0.0.1:9/pong").unwrap();
    let bytes = RequestBuilder::native(&target, "GET", true)
        .build()
        .unwrap()
        .bytes;
    let req = H2Request::from_http1(&bytes, "http").unwrap();
    for piece in [1, 3, 9, 100, 16_384] {
        let mut client = Client2::new();
        let streams: Vec<u32> = (0..5).map(|_| client.request(&req, true)).collect();
        let mut server = Server2End {
            conn: None,
            pending: Vec::new(),
            ctx: ctx(),
            path: Vec::new(),
            body: Vec::new(),
        };
        let mut events = Vec::new();
        // A few round trips: requests, then SETTINGS acknowledgements both ways.
        for _ in 0..4 {
            let to_server = client.unwritten().to_vec();
            client.wrote(to_server.len());
            let mut to_client = Vec::new();
            deliver(&to_server, piece, |b| to_client.extend(server.input(b)));
            deliver(&to_client, piece, |b| {
                client.feed(b, &[], &mut events).unwrap()
            });
        }
        let mut answered: Vec<u32> = events
            .iter()
            .map(|e| match e {
                Event::Response(r) => {
                    assert_eq!((r.status, r.body), (200, 4), "piece {piece}");
                    r.stream
                }
                other => panic!("{other:?}"),
            })
            .collect();
        answered.sort_unstable();
        assert_eq!(answered, streams, "piece {piece}");
        assert_eq!(client.open_streams(), 0);
    }
}

const WS_ECHO: &[u8] = b"GET /ws/echo HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n";

/// The server's side of a WebSocket upgrade: reads the request whole (as the event
/// loop does), answers it, and hands over the connection.
fn ws_upgrade(request: &[u8], out: &mut Vec<u8>) -> Box<stampede_server::ws::WsConn> {
    let Parsed::Complete(req, len) = parse(request, &Limits::default()) else {
        panic!(
            "a whole upgrade request: {}",
            String::from_utf8_lossy(request)
        )
    };
    let lines = Lines {
        date: b"Date: Thu, 01 Jan 1970 00:00:00 GMT\r\n",
        server: b"Server: memory\r\n",
    };
    match stampede_server::ws::handshake(&req, &request[..len], out, lines) {
        Handshake::Upgraded(conn) => conn,
        Handshake::Refused => panic!("refused: {}", String::from_utf8_lossy(out)),
    }
}

#[test]
fn websocket_round_trips_every_split() {
    for piece in [1, 2, 7, 64, 1 << 16] {
        let load = WsLoad::text("hello");
        let mut client = WsClient::seeded(&load, WS_ECHO, 7, false);
        client.queue(5);
        // The upgrade, cut as `piece` says, gathered whole by the server.
        let up = client.unwritten().to_vec();
        client.wrote(up.len());
        let mut request = Vec::new();
        deliver(&up, piece, |b| request.extend_from_slice(b));
        let mut answer = Vec::new();
        let mut server = ws_upgrade(&request, &mut answer);
        let mut events = Vec::new();
        deliver(&answer, piece, |b| client.feed(b, &mut events).unwrap());
        assert!(client.take_upgraded() && client.open(), "piece {piece}");
        // Each message goes out, the server echoes it, the echo answers it.
        for _ in 0..10 {
            let to_server = client.unwritten().to_vec();
            if to_server.is_empty() {
                break;
            }
            client.wrote(to_server.len());
            let mut back = Vec::new();
            deliver(&to_server, piece, |b| assert!(!server.feed(b, &mut back)));
            deliver(&back, piece, |b| client.feed(b, &mut events).unwrap());
        }
        let answered: Vec<(u16, u64)> = (events.iter())
            .filter_map(|e| match e {
                Event::Response(r) => Some((r.status, r.body)),
                _ => None,
            })
            .collect();
        assert_eq!(answered, vec![(101, 5); 5], "piece {piece}: {events:?}");
        // The server going away (1001) is read, and answered with the client's close.
        let mut back = Vec::new();
        server.going_away(&mut back);
        assert!(server.closing(), "piece {piece}");
        // Its last byte ends the connection: the error the worker closes it on.
        let mut fed = Vec::new();
        deliver(&back, piece, |b| fed.push(client.feed(b, &mut events)));
        let (last, before) = fed.split_last().unwrap();
        assert!(before.iter().all(Result::is_ok), "piece {piece}: {fed:?}");
        assert_eq!(
            format!("{last:?}"),
            "Err(Broken(WsClosed))",
            "piece {piece}"
        );
        assert_eq!(client.close_code(), Some(Some(1001)), "piece {piece}");
        assert!(
            !client.open() && !client.unwritten().is_empty(),
            "piece {piece}"
        );
    }
}

/// A server push on a simulated clock: each message falls due on the push's
/// schedule, not on when the last went out, and the client reads each whole.
#[test]
fn a_websocket_push_keeps_its_schedule_in_simulated_time() {
    let request = String::from_utf8(WS_ECHO.to_vec()).unwrap().replace(
        "/ws/echo",
        "/ws/push?interval_ms=100&size=16&count=4&text=1",
    );
    let load = WsLoad::text("");
    let mut client = WsClient::seeded(&load, request.as_bytes(), 7, true);
    let up = client.unwritten().to_vec();
    client.wrote(up.len());
    let mut answer = Vec::new();
    let mut server = ws_upgrade(&up, &mut answer);
    let mut events = Vec::new();
    client.feed(&answer, &mut events).unwrap();
    assert!(client.take_upgraded() && client.open());
    let t0 = std::time::Instant::now();
    let mut due = server.push_from(t0).expect("a push");
    assert_eq!(due, t0);
    // The loop wakes late each time (30 ms, then 130 ms): the schedule holds.
    let mut dues = vec![due];
    let mut now = t0;
    for late in [30, 130, 0, 0] {
        now = now.max(due) + Duration::from_millis(late);
        let mut out = Vec::new();
        let next = server.push_next(&mut out);
        client.feed(&out, &mut events).unwrap();
        match next {
            Some(n) => {
                dues.push(n);
                due = n;
            }
            None => break,
        }
    }
    let gaps: Vec<u128> = dues.windows(2).map(|w| (w[1] - w[0]).as_millis()).collect();
    assert_eq!(gaps, [100, 100, 100], "{dues:?}");
    // Four messages of 16 bytes, each read whole as it came, then the server's close,
    // which ends the exchange with all 64 bytes.
    let got: Vec<u32> = (events.iter())
        .filter_map(|e| match e {
            Event::Progress { progress, .. } => Some(progress.bytes),
            _ => None,
        })
        .collect();
    assert_eq!(got, [16, 16, 16, 16], "{events:?}");
    assert!(
        matches!(events.last(), Some(Event::Response(r)) if (r.status, r.body, r.close) == (101, 64, true)),
        "{events:?}"
    );
    // The stream's normal end completes it (no close code kept) and is answered.
    assert!(!client.open() && !client.unwritten().is_empty());
}
