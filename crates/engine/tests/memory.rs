//! The client's protocol state machines against the server's, joined in memory: no
//! socket, no thread, no clock. Bytes go from one end's output to the other's input in
//! pieces of a chosen size, so every split of the stream is a case.

use std::sync::Arc;

use stampede_engine::h1::H1Conn as Client1;
use stampede_engine::h2::{Event, H2Conn as Client2, H2Request, Response};
use stampede_engine::{RequestBuilder, Target};
use stampede_server::h1::{Answering, H1Conn as Server1};
use stampede_server::h2::{H2Conn as Server2, H2Respond};
use stampede_server::request::Limits;
use stampede_server::routes::{Ctx, Lines, Routed};
use stampede_server::store::Store;

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
        let mut request = Vec::new();
        while let Some(ready) = conn.next_ready(&mut self.path, &mut request) {
            let mut resp = H2Respond {
                conn,
                out: &mut out,
                stream: ready.stream,
                head: false,
                date: b"Thu, 01 Jan 1970 00:00:00 GMT",
                server: b"memory",
                body: &mut self.body,
            };
            let routed = resp.route(&ready, &self.path, &request, &mut self.ctx);
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
