//! The protocol value's own part, on bytes alone: what it reports as events for
//! every protocol, so that the worker never asks which one spoke.

use super::h2::tests::{block, frame, get, settled};
use super::ws::tests::{answer, key_of, load, REQUEST};
use super::ws::WsClient;
use super::{Event, Proto};
use stampede_wire::frame::{END_HEADERS, END_STREAM, HEADERS, PING};

/// Through the connection's protocol value, a response's header bytes come as an
/// event of their own, once for what each feed brought.
#[test]
fn header_sizes_come_as_an_event() {
    let mut p = Proto::H2(Box::new(settled()));
    let Some(h) = p.h2() else { unreachable!() };
    assert_eq!(h.request(&get(), false), 1);
    let hb = block(&[(b":status", b"200"), (b"server", b"test")]);
    let input = frame(HEADERS, END_HEADERS | END_STREAM, 1, &hb);
    let mut ev = Vec::new();
    p.feed(&input, &[], std::time::Instant::now(), &mut ev)
        .unwrap();
    let sizes: Vec<_> = (ev.iter())
        .filter(|e| matches!(e, Event::HeaderSizes { .. }))
        .collect();
    let decoded = (":status".len() + 3 + "server".len() + 4) as u64;
    assert_eq!(
        sizes,
        [&Event::HeaderSizes {
            compressed: hb.len() as u64,
            decoded
        }]
    );
    ev.clear();
    p.feed(
        &frame(PING, 0, 0, &[0; 8]),
        &[],
        std::time::Instant::now(),
        &mut ev,
    )
    .unwrap();
    assert!(ev.is_empty(), "{ev:?}");
}

/// Through the connection's protocol value, the upgrade and the messages that
/// answered nothing are events, the upgrade before what the same bytes brought.
#[test]
fn the_upgrade_and_unmatched_messages_come_as_events_upgrade_first() {
    let mut l = load();
    l.expect = Some(std::sync::Arc::from(&b"id=7"[..]));
    let c = WsClient::seeded(&l, REQUEST, 7, false);
    let key = key_of(c.unwritten());
    let mut p = Proto::Ws(Box::new(c));
    let mut bytes = answer(&key, "");
    // A text message "hi" from the server, unmasked, that is not the answer awaited.
    bytes.extend_from_slice(&[0x81, 2, b'h', b'i']);
    let mut ev = Vec::new();
    p.feed(&bytes, &[], std::time::Instant::now(), &mut ev)
        .unwrap();
    assert_eq!(ev, [Event::Upgraded, Event::Unmatched { count: 1 }]);
    ev.clear();
    p.feed(&[0x81, 1, b'x'], &[], std::time::Instant::now(), &mut ev)
        .unwrap();
    assert_eq!(
        ev,
        [Event::Unmatched { count: 1 }],
        "the upgrade is said once"
    );
}
