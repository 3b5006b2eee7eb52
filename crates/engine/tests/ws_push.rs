//! WebSocket push streams (`stream = messages`) against the reference server's
//! `/ws/push` and `/ws/echo` on 127.0.0.1:0: a subscription is a request, each message
//! the server pushes an event of it, stamped messages timed from when they were due,
//! the server's close with 1000 the subscription's end. Every run is bounded by a
//! count or a duration and short timeouts.

use std::time::Duration;

use stampede_engine::{LoadSpec, RequestBuilder, StreamMode, Target, WsLoad};

use crate::common::go;
use crate::ws::server;

/// A push-stream run of `url`: `n` subscriptions (none: until `-d`) over `c`
/// connections, each asking with `message` (empty: with its upgrade alone).
fn spec(url: &str, n: Option<u64>, c: usize, message: &str) -> LoadSpec {
    let mut s = crate::ws::spec(url, 0, c);
    s.load.protocol.ws = Some(WsLoad::text(message));
    s.load.streams.stream = Some(StreamMode::Messages);
    s.load.requests = n;
    s.load.timeout = None;
    s.load.streams.event_timeout = Some(Duration::from_secs(3));
    s
}

#[test]
fn each_subscription_is_a_request_and_each_pushed_message_an_event() {
    let srv = server();
    let url = format!(
        "ws://{}/ws/push?interval_ms=5&size=64&count=10&text=1&stamp=1",
        srv.addr()
    );
    let r = go(spec(&url, Some(6), 3, ""));
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(r.requests.completed, 6);
    assert_eq!(r.statuses.get(&101), Some(&6));
    // Each subscription ends with the server's close: a connection each.
    assert_eq!(r.connections_opened, 6);
    assert_eq!(r.bytes.body, 6 * 10 * 64);
    let st = r.protocols.stream.as_ref().expect("stream figures");
    assert_eq!(st.mode, StreamMode::Messages);
    assert_eq!(st.events, 60);
    assert_eq!(st.events_per_response.max_us, 10);
    assert_eq!(st.first_event.count, 6);
    assert_eq!(st.gap.count, 54);
    assert!(st.first_event.min_us >= st.first_event_uncorrected.min_us);
    // Every message carried the server's stamp: timed from its due time, which is
    // never after its send.
    let d = st.delivery.as_ref().expect("stamped messages");
    assert_eq!((d.stamped, d.early), (60, 0));
    assert_eq!(d.latency.count, 60);
    assert!(d.latency.max_us >= d.latency_uncorrected.max_us, "{d:?}");
    assert!(d.latency.max_us < 3_000_000, "{d:?}");
    let none = r.protocols.websocket.as_ref().unwrap();
    assert!(none.closes.is_empty(), "a stream's end is not a failure");

    // Two runs merge exactly: twice the stamped messages, the same worst.
    let mut m = stampede_engine::merge::Merger::new(false);
    m.add(&r).unwrap();
    m.add(&r).unwrap();
    let both = m.finish().unwrap();
    let bd = both.protocols.stream.unwrap().delivery.unwrap();
    assert_eq!(bd.stamped, 120);
    assert_eq!(bd.latency.max_us, d.latency.max_us);
}

#[test]
fn unstamped_messages_are_timed_by_their_gaps_alone() {
    let srv = server();
    let url = format!("ws://{}/ws/push?interval_ms=2&count=3", srv.addr());
    let r = go(spec(&url, Some(4), 2, ""));
    assert_eq!(r.requests.completed, 4, "{:?}", r.errors);
    let st = r.protocols.stream.unwrap();
    assert_eq!((st.events, st.gap.count), (12, 8));
    assert!(st.delivery.is_none());
}

#[test]
fn streams_held_to_the_runs_end_count_their_messages() {
    let srv = server();
    // Pushed until closed: no subscription ends within the run, none fails, and what
    // came is counted.
    let url = format!("ws://{}/ws/push?interval_ms=10&stamp=1", srv.addr());
    let mut s = spec(&url, None, 4, "");
    s.load.duration = Some(Duration::from_millis(400));
    let r = go(s);
    assert_eq!((r.requests.completed, r.requests.failed), (0, 0));
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    let st = r.protocols.stream.unwrap();
    assert_eq!(st.first_event.count, 4);
    assert!(st.events >= 8, "{}", st.events);
    assert_eq!(st.delivery.unwrap().stamped, st.events);
}

#[test]
fn a_subscription_asks_with_its_message_once() {
    // The echo answers the one message each subscription sends: one event each,
    // then nothing until the run ends.
    let srv = server();
    let url = format!("ws://{}/ws/echo", srv.addr());
    let mut s = spec(&url, None, 3, "{\"subscribe\":\"ticks\"}");
    s.load.duration = Some(Duration::from_millis(300));
    let r = go(s);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    let st = r.protocols.stream.unwrap();
    assert_eq!(st.events, 3);
    assert_eq!(r.connections_opened, 3);
}

#[test]
fn a_stalled_stream_fails_as_one() {
    let srv = server();
    // One message a minute: the stall limit of 200 ms fails each subscription after
    // its first.
    let url = format!("ws://{}/ws/push?interval_ms=60000", srv.addr());
    let mut s = spec(&url, Some(2), 2, "");
    s.load.streams.event_timeout = Some(Duration::from_millis(200));
    let r = go(s);
    assert_eq!(r.requests.failed, 2, "{:?}", r.errors);
    assert_eq!(r.errors.get("stream_stall"), Some(&2), "{:?}", r.errors);
}

#[test]
fn push_streams_refuse_what_does_not_apply() {
    let url = "ws://127.0.0.1:9/ws/push";
    let mut s = spec(url, Some(1), 1, "");
    s.load.pipeline = 2;
    let e = s.validate().unwrap_err().to_string();
    assert!(e.contains("one push stream at a time"), "{e}");
    let mut s = spec(url, Some(1), 1, "beat");
    s.load.protocol.ws.as_mut().unwrap().ping = true;
    let e = s.validate().unwrap_err().to_string();
    assert!(e.contains("pings are round trips"), "{e}");
    let mut s = spec(url, Some(1), 1, "");
    s.load.streams.stream = Some(StreamMode::Sse);
    let e = s.validate().unwrap_err().to_string();
    assert!(e.contains("no other stream timing"), "{e}");
    // Messages are a WebSocket server's.
    let t = Target::parse("http://127.0.0.1:9/").unwrap();
    let mut s = LoadSpec::new(
        t.clone(),
        RequestBuilder::native(&t, "GET", true).build().unwrap(),
    );
    s.load.streams.stream = Some(StreamMode::Messages);
    let e = s.validate().unwrap_err().to_string();
    assert!(e.contains("ws:// or wss://"), "{e}");
}

#[test]
fn stamped_sends_are_timed_by_a_rooms_members() {
    // Each subscriber asks with a stamped message, which the room sends to every
    // member: each hears at least its own, every one stamped and timed from its
    // request's intended start.
    let srv = server();
    let url = format!("ws://{}/ws/room?name=stamps", srv.addr());
    let mut s = spec(&url, None, 4, "hello, room");
    s.load.protocol.ws.as_mut().unwrap().stamp = true;
    s.load.duration = Some(Duration::from_millis(400));
    let r = go(s);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    let st = r.protocols.stream.unwrap();
    assert!((4..=16).contains(&st.events), "{}", st.events);
    let d = st.delivery.unwrap();
    assert_eq!((d.stamped, d.early), (st.events, 0));
    assert!(d.latency.max_us < 3_000_000, "{d:?}");

    // A publisher alone in its room: each message's copy is its round trip, and the
    // stamp rides in front of the message.
    let url = format!("ws://{}/ws/room?name=alone", srv.addr());
    let mut s = spec(&url, Some(50), 1, "tick");
    s.load.streams.stream = None;
    s.load.timeout = Some(Duration::from_secs(2));
    s.load.protocol.ws.as_mut().unwrap().stamp = true;
    let r = go(s);
    assert_eq!(r.requests.completed, 50, "{:?}", r.errors);
    assert_eq!(r.bytes.body, 50 * (stampede_wire::stamp::LEN + 4) as u64);
    // Stamps go on data messages only.
    let mut s = spec(&url, Some(1), 1, "beat");
    s.load.streams.stream = None;
    let w = s.load.protocol.ws.as_mut().unwrap();
    (w.stamp, w.ping) = (true, true);
    let e = s.validate().unwrap_err().to_string();
    assert!(e.contains("stamps go on data messages"), "{e}");
}
