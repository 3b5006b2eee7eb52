//! The client's HTTP/3 connection against the server's endpoint in memory: datagrams
//! moved between them by hand, time simulated, no socket.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use stampede_server::h3::H3Endpoint;
use stampede_server::routes::Ctx;
use stampede_server::store::Store;

use super::H3Conn;
use crate::proto::h2::H2Request;
use crate::proto::{Broken, Event};

const SERVER: &str = "127.0.0.1:4433";
const CLIENT: &str = "127.0.0.1:50000";

/// A client and a server joined by a lossless wire, and the simulated clock.
struct Pair {
    client: H3Conn,
    server: H3Endpoint,
    now: Instant,
    events: Vec<Event>,
    /// Datagrams the client sent.
    sent: usize,
    /// Drop every n-th datagram the server sends (0: none).
    drop_every: usize,
    from_server: usize,
}

fn pair(retry: bool) -> Pair {
    let names = vec!["localhost".to_string()];
    let tls = stampede_tls::server_config(
        &stampede_tls::ServerCert::SelfSigned(names),
        vec![b"h3".to_vec()],
        None,
    )
    .unwrap();
    let transport = stampede_quic::Transport::default();
    let sc = stampede_quic::server_config(&tls, &transport).unwrap();
    let ctx = Ctx::new(Arc::new(Store::generate()), None, 0);
    let mut server = H3Endpoint::new(sc, &transport, ctx, stampede_server::Limits::default());
    if retry {
        server.retry_above = Some(0);
    }
    let ctls = stampede_tls::client_config(&stampede_tls::ClientOptions {
        insecure: true,
        ..Default::default()
    })
    .unwrap();
    let cc = stampede_quic::client_config(&ctls, &transport, None).unwrap();
    let now = Instant::now();
    let client = H3Conn::connect(
        stampede_quic::endpoint_config(&transport),
        cc,
        SERVER.parse().unwrap(),
        "localhost",
        0,
        now,
    )
    .unwrap();
    Pair {
        client,
        server,
        now,
        events: Vec::new(),
        sent: 0,
        drop_every: 0,
        from_server: 0,
    }
}

impl Pair {
    /// Runs up to `steps` rounds, which must end with the client's connection
    /// broken (`why` otherwise); the kind its requests fail with.
    fn broken(&mut self, steps: usize, why: &str) -> crate::error::ErrorKind {
        match self.run(steps, |_| false) {
            Err(Broken(kind)) => kind,
            Ok(()) => panic!("{why}"),
        }
    }

    /// Moves datagrams both ways until neither has any, then lets time pass to the
    /// next timer; `steps` rounds at most. Returns the client's error, if any.
    fn run(&mut self, steps: usize, until: impl Fn(&Pair) -> bool) -> Result<(), Broken> {
        let client_addr: SocketAddr = CLIENT.parse().unwrap();
        let mut buf = Vec::new();
        for _ in 0..steps {
            let mut moved = false;
            self.client.prepare(self.now);
            while !self.client.unwritten().is_empty() {
                let d = self.client.unwritten().to_vec();
                self.client.wrote(d.len());
                self.sent += 1;
                self.server.handle(self.now, client_addr, None, None, &d, 0);
                moved = true;
            }
            // A wire of 50 µs each way.
            self.now += Duration::from_micros(50);
            while let Some(out) = self.server.transmit(self.now, &mut buf, 1) {
                assert_eq!(out.to, client_addr);
                self.from_server += 1;
                moved = true;
                if self.drop_every > 0 && self.from_server.is_multiple_of(self.drop_every) {
                    continue;
                }
                self.client.feed(&buf, self.now, &mut self.events)?;
            }
            if until(self) {
                return Ok(());
            }
            if !moved {
                // Nothing on the wire: time passes to the next timer of either end.
                let next = [self.client.next_timeout(), self.server.next_timeout()]
                    .into_iter()
                    .flatten()
                    .min();
                let Some(next) = next else {
                    return Ok(());
                };
                self.now = self.now.max(next);
                self.client.timeout(self.now, &mut self.events)?;
                self.server.timeout(self.now);
            } else {
                self.now += Duration::from_micros(50);
            }
        }
        Ok(())
    }
}

fn get(path: &str) -> H2Request {
    let raw = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nUser-Agent: t\r\n\r\n");
    H2Request::from_http1(raw.as_bytes(), "https").unwrap()
}

fn responses(events: &[Event]) -> Vec<(u32, u16, u64)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Response(r) => Some((r.stream, r.status, r.body)),
            _ => None,
        })
        .collect()
}

#[test]
fn requests_are_answered_over_a_handshake_in_memory() {
    let mut p = pair(false);
    let first = p.client.request(&get("/pong"));
    // Before the handshake the server's stream limit is unknown: the request waits.
    assert_eq!(first, 0);
    p.run(200, |p| p.client.connected).unwrap();
    let (us, resumed) = p.client.take_handshake().expect("the handshake ended");
    assert!(us > 0 && !resumed);
    let mut numbers = Vec::new();
    for path in ["/pong", "/bytes/100000", "/json", "/nothing-here"] {
        let n = p.client.request(&get(path));
        assert!(n > 0);
        numbers.push(n);
    }
    p.run(2000, |p| responses(&p.events).len() == 4).unwrap();
    let mut got = responses(&p.events);
    got.sort();
    assert_eq!(got.len(), 4, "{:?}", p.events);
    let by = |n: u32| got.iter().find(|r| r.0 == n).copied().unwrap();
    assert_eq!(by(numbers[0]).1, 200);
    assert_eq!(by(numbers[1]), (numbers[1], 200, 100_000));
    assert_eq!(by(numbers[3]).1, 404);
    assert_eq!(p.server.stats.requests, 4);
    // Answered streams are forgotten: nothing per request stays behind.
    assert_eq!(p.server.streams(), 0);
    assert!(p.client.figures().packets_sent > 0);
    assert!(!p.client.figures().retried);
    // A polite close reaches the server, which forgets the connection.
    p.client.close(p.now);
    p.run(200, |p| p.server.open() == 0).unwrap();
    assert_eq!(p.server.open(), 0);
}

#[test]
fn a_retry_validates_the_address_first_and_losses_are_recovered() {
    let mut p = pair(true);
    p.drop_every = 7;
    p.run(400, |p| p.client.connected).unwrap();
    assert!(p.client.take_handshake().is_some());
    assert_eq!(p.server.stats.retries, 1);
    assert!(p.client.figures().retried, "the client saw the Retry");
    for _ in 0..20 {
        assert!(p.client.request(&get("/bytes/20000")) > 0);
    }
    p.run(20_000, |p| responses(&p.events).len() == 20).unwrap();
    let got = responses(&p.events);
    assert_eq!(got.len(), 20);
    assert!(got.iter().all(|r| r.1 == 200 && r.2 == 20_000));
    assert_eq!(p.server.streams(), 0);
    assert!(p.client.figures().packets_lost + p.client.figures().packets_sent > 0);
}

#[test]
fn a_streamed_answer_reports_its_events_on_the_servers_timers() {
    let mut p = pair(false);
    p.client.watch(crate::proto::watch::StreamMode::Sse, None);
    p.run(200, |p| p.client.connected).unwrap();
    let n = p.client.request(&get("/sse/5?gap_ms=10"));
    assert!(n > 0);
    let started = p.now;
    p.run(5000, |p| !responses(&p.events).is_empty()).unwrap();
    assert_eq!(responses(&p.events).len(), 1);
    let events: u32 = p
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Progress { progress, .. } => Some(progress.events),
            _ => None,
        })
        .sum();
    assert_eq!(events, 5);
    // Five events 10 ms apart: the answer took at least 40 ms of simulated time.
    assert!(p.now - started >= Duration::from_millis(40));
}

#[test]
fn the_idle_timeout_ends_a_silent_connection() {
    let mut p = pair(false);
    p.run(200, |p| p.client.connected).unwrap();
    // The server vanishes: nothing it would send arrives any more.
    p.drop_every = 1;
    assert!(p.client.request(&get("/pong")) > 0);
    let kind = p.broken(10_000, "the connection outlived its idle timeout");
    assert_eq!(kind, crate::error::ErrorKind::QuicIdleTimeout);
    assert_eq!(p.client.figures().end.as_deref(), Some("idle timeout"));
}

#[test]
fn a_stateless_reset_from_a_server_that_forgot_the_connection_ends_it_as_one() {
    let mut p = pair(false);
    p.run(200, |p| p.client.connected).unwrap();
    // The server closes the connection and its CONNECTION_CLOSE is lost; once its
    // draining period is over it no longer knows the connection.
    p.server.close_all(p.now);
    p.drop_every = 1;
    p.run(10_000, |p| p.server.open() == 0).unwrap();
    assert_eq!(p.server.open(), 0);
    // The client's next request reaches a server that answers it with a stateless
    // reset (its token was given with the connection's IDs).
    p.drop_every = 0;
    assert!(p.client.request(&get("/pong")) > 0);
    let kind = p.broken(200, "the stateless reset went unnoticed");
    assert_eq!(kind, crate::error::ErrorKind::Reset);
    assert_eq!(p.client.figures().end.as_deref(), Some("stateless reset"));
}

#[test]
fn requests_sent_together_share_datagrams() {
    let mut p = pair(false);
    p.run(200, |p| p.client.connected).unwrap();
    // The worker opens as many streams as its limit says at once: QUIC's credit is
    // not guessed at, so the limit does not hold a batch to one request.
    assert!(p.client.stream_limit() >= 50);
    for _ in 0..50 {
        assert!(p.client.request(&get("/pong")) > 0);
    }
    p.client.prepare(p.now);
    let mut datagrams = 0;
    while !p.client.unwritten().is_empty() {
        datagrams += 1;
        let n = p.client.unwritten().len();
        p.client.wrote(n);
    }
    assert!(datagrams <= 3, "{datagrams} datagrams for 50 requests");
}

/// Initials that never complete their handshake: past the bound of handshakes in
/// progress, each new one is sent a Retry (no connection state, no full reply).
#[test]
fn half_open_handshakes_past_the_bound_are_sent_a_retry() {
    let mut p = pair(false);
    p.server.retry_handshaking = Some(4);
    let ctls = stampede_tls::client_config(&stampede_tls::ClientOptions {
        insecure: true,
        ..Default::default()
    })
    .unwrap();
    let transport = stampede_quic::Transport::default();
    for port in 0..10u16 {
        let cc = stampede_quic::client_config(&ctls, &transport, None).unwrap();
        let mut c = H3Conn::connect(
            stampede_quic::endpoint_config(&transport),
            cc,
            SERVER.parse().unwrap(),
            "localhost",
            0,
            p.now,
        )
        .unwrap();
        c.prepare(p.now);
        let from: SocketAddr = format!("127.0.0.2:{}", 40000 + port).parse().unwrap();
        // The first flight alone: the client never answers what comes back.
        let d = c.unwritten().to_vec();
        p.server.handle(p.now, from, None, None, &d, 0);
    }
    assert_eq!(p.server.stats.connections, 4, "{:?}", p.server.stats);
    assert_eq!(p.server.stats.retries, 6, "{:?}", p.server.stats);
    assert_eq!(p.server.handshaking(), 4);
    // The half-open ones time out, and their state goes with them.
    let mut buf = Vec::new();
    for _ in 0..100 {
        while p.server.transmit(p.now, &mut buf, 1).is_some() {}
        let Some(next) = p.server.next_timeout() else {
            break;
        };
        p.now = p.now.max(next);
        p.server.timeout(p.now);
        if p.server.handshaking() == 0 {
            break;
        }
    }
    assert_eq!(p.server.handshaking(), 0);
}
