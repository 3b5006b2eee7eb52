//! Calls made one by one ([`stampede_engine::made`]) against the reference server's
//! gRPC echo and WebSocket echo on 127.0.0.1:0: each call's body (or message) its
//! own, and a maker that fails stopping the run. Every run is bounded in count and
//! time.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use stampede_engine::made::{Call, CallMaker, MadeCalls};
use stampede_engine::{LoadSpec, RequestBuilder, StreamMode, Target};
use stampede_server::{Config, Running};

/// Asks for the status `number % 17` in each call; fails at call `fail_at`.
struct Statuses {
    fail_at: Option<u64>,
    failed: Mutex<Option<String>>,
}

impl CallMaker for Statuses {
    fn make(&self, call: Call, body: &mut Vec<u8>, fields: &mut Vec<u8>) -> bool {
        if Some(call.number) == self.fail_at {
            *self.failed.lock().unwrap() = Some(format!("call {} refused", call.number));
            return false;
        }
        // EchoRequest's status: field 6, a varint.
        let status = (call.number % 17) as u8;
        let message: &[u8] = if status == 0 { &[] } else { &[0x30, status] };
        stampede_wire::grpc::frame(body, false, message);
        stampede_wire::hpack::literal(fields, b"x-call", call.number.to_string().as_bytes());
        true
    }

    fn failure(&self) -> Option<String> {
        self.failed.lock().unwrap().clone()
    }
}

fn spec(srv: &Running, maker: Arc<Statuses>, n: u64) -> LoadSpec {
    let target = Target::parse(&srv.url("/stampede.v1.Echo/Unary")).unwrap();
    let req = RequestBuilder::native(&target, "POST", true)
        .set_header("content-type", "application/grpc")
        .set_header("te", "trailers")
        .without_content_length()
        .build()
        .unwrap();
    let mut s = LoadSpec::new(target, req);
    s.calls = Some(MadeCalls(maker));
    s.load.protocol.http2 = true;
    s.load.streams.stream = Some(StreamMode::Grpc);
    s.load.pipeline = 4;
    s.load.connections = 2;
    s.load.threads = 2;
    s.load.requests = Some(n);
    s.load.timeout = Some(Duration::from_secs(5));
    s
}

/// Runs `s`, a run of 100,000 calls whose maker fails early: it stops within 20 s,
/// before 100 calls are answered.
fn stopped_early(mut s: LoadSpec) {
    s.validate().unwrap();
    let started = std::time::Instant::now();
    let r = stampede_engine::run(
        &s.plan().unwrap(),
        Arc::new(stampede_engine::Control::default()),
    )
    .unwrap()
    .result;
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(r.requests.completed < 100, "{:?}", r.requests);
}

fn server() -> Running {
    Running::local(Config {
        threads: 1,
        ..Config::default()
    })
    .unwrap()
}

#[test]
fn each_call_sends_the_body_made_for_it() {
    let srv = server();
    let maker = Arc::new(Statuses {
        fail_at: None,
        failed: Mutex::new(None),
    });
    let r = crate::common::go(spec(&srv, maker.clone(), 170));
    assert_eq!(r.requests.completed, 170, "{:?}", r.errors);
    // Calls 0..170 each asked for their number's status: every code ten times.
    let grpc = r.protocols.grpc.unwrap();
    assert_eq!(grpc.len(), 17, "{grpc:?}");
    assert!(grpc.values().all(|&n| n == 10), "{grpc:?}");
    assert!(maker.failure().is_none());
}

#[test]
fn a_call_that_cannot_be_made_stops_the_run() {
    let srv = server();
    let maker = Arc::new(Statuses {
        fail_at: Some(40),
        failed: Mutex::new(None),
    });
    stopped_early(spec(&srv, maker.clone(), 100_000));
    assert_eq!(maker.failure().as_deref(), Some("call 40 refused"));
}

#[test]
fn made_calls_go_on_http2_pools_of_one_request_without_a_length() {
    let srv = server();
    let maker = Arc::new(Statuses {
        fail_at: None,
        failed: Mutex::new(None),
    });
    let why = |mut s: LoadSpec| s.validate().unwrap_err().to_string();
    let mut s = spec(&srv, maker.clone(), 10);
    s.load.protocol.http2 = false;
    s.load.streams.stream = None;
    assert!(why(s).contains("go over HTTP/2"));
    let mut s = spec(&srv, maker.clone(), 10);
    s.load.variety = vec![s.load.request.clone(), s.load.request.clone()];
    assert!(why(s).contains("a list of requests"));
    let mut s = spec(&srv, maker, 10);
    let target = s.target.clone();
    s.load.request = RequestBuilder::native(&target, "POST", true)
        .body(b"x".to_vec())
        .build()
        .unwrap();
    assert!(why(s).contains("must not declare one"));
}

/// Each message `m<number>`, and a record of the numbers made; fails at `fail_at`.
struct Messages {
    fail_at: Option<u64>,
    made: Mutex<Vec<u64>>,
}

impl CallMaker for Messages {
    fn make(&self, call: Call, body: &mut Vec<u8>, fields: &mut Vec<u8>) -> bool {
        if Some(call.number) == self.fail_at {
            return false;
        }
        assert!(body.is_empty() && fields.is_empty(), "buffers come empty");
        body.extend_from_slice(format!("m{}", call.number).as_bytes());
        self.made.lock().unwrap().push(call.number);
        true
    }
}

fn ws_spec(srv: &Running, maker: Arc<Messages>, n: u64) -> LoadSpec {
    let mut s = crate::ws::spec(&format!("ws://{}/ws/echo", srv.addr()), n, 3);
    s.calls = Some(MadeCalls(maker));
    s
}

/// The bytes of messages `m0` … `m{n-1}`.
fn made_bytes(n: u64) -> u64 {
    (0..n).map(|i| 1 + i.to_string().len() as u64).sum()
}

#[test]
fn each_websocket_message_is_made_for_its_call() {
    let srv = server();
    // One at a time, pipelined (the first batch waits for the upgrade), and in the
    // open model: every message made once, echoed at its own length.
    for (pipeline, rate) in [(1, None), (4, None), (1, Some(2000.0))] {
        let maker = Arc::new(Messages {
            fail_at: None,
            made: Mutex::new(Vec::new()),
        });
        let mut s = ws_spec(&srv, maker.clone(), 500);
        s.load.pipeline = pipeline;
        if let Some(rate) = rate {
            s.load.shape = stampede_engine::Shape::Rate {
                rate,
                gaps: stampede_engine::arrivals::Gaps::Even,
            };
        }
        let r = crate::common::go(s);
        let what = format!("pipeline {pipeline}, rate {rate:?}");
        assert_eq!(r.requests.completed, 500, "{what}: {:?}", r.errors);
        let mut made = maker.made.lock().unwrap().clone();
        made.sort_unstable();
        assert_eq!(made, (0..500).collect::<Vec<_>>(), "{what}");
        assert_eq!(r.bytes.body, made_bytes(500), "{what}");
    }
}

#[test]
fn a_websocket_message_that_cannot_be_made_stops_the_run() {
    let srv = server();
    let maker = Arc::new(Messages {
        fail_at: Some(60),
        made: Mutex::new(Vec::new()),
    });
    stopped_early(ws_spec(&srv, maker.clone(), 100_000));
    // A ping carries the run's message: none is made for it.
    let mut s = ws_spec(&srv, maker, 10);
    s.load.protocol.ws.as_mut().unwrap().ping = true;
    let why = s.validate().unwrap_err().to_string();
    assert!(why.contains("a ping carries the run's message"), "{why}");
}
