//! Calls made one by one ([`stampede_engine::made`]) against the reference server's
//! gRPC echo on 127.0.0.1:0: each call's body its own (the status it asks for), and a
//! maker that fails stopping the run. Every run is bounded in count and time.

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
    s.load.http2 = true;
    s.load.stream = Some(StreamMode::Grpc);
    s.load.pipeline = 4;
    s.load.connections = 2;
    s.load.threads = 2;
    s.load.requests = Some(n);
    s.load.timeout = Some(Duration::from_secs(5));
    s
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
    let grpc = r.grpc.unwrap();
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
    let mut s = spec(&srv, maker.clone(), 100_000);
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
    s.load.http2 = false;
    s.load.stream = None;
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
