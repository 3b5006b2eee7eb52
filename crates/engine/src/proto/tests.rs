//! The protocol value's own part, on bytes alone: what it reports as events for
//! every protocol, so that the worker never asks which one spoke.

use super::h2::tests::{block, frame, get, settled};
use super::ws::tests::{answer, key_of, load, REQUEST};
use super::ws::WsClient;
use super::{Event, Note, Proto};
use stampede_wire::frame::{END_HEADERS, END_STREAM, HEADERS, PING};

/// Through the connection's protocol value, a response's header bytes come as an
/// event of their own, once for what each feed brought.
#[test]
fn header_sizes_come_as_an_event() {
    let mut p = Proto::H2(Box::new(settled()));
    let Some(h) = p.mux() else { unreachable!() };
    assert_eq!(h.request(&get(), false), 1);
    let hb = block(&[(b":status", b"200"), (b"server", b"test")]);
    let input = frame(HEADERS, END_HEADERS | END_STREAM, 1, &hb);
    let mut ev = Vec::new();
    p.feed(
        &input,
        &[],
        std::time::Instant::now(),
        &mut ev,
        &mut Vec::new(),
    )
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
        &mut Vec::new(),
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
    p.feed(
        &bytes,
        &[],
        std::time::Instant::now(),
        &mut ev,
        &mut Vec::new(),
    )
    .unwrap();
    assert_eq!(ev, [Event::Upgraded, Event::Unmatched { count: 1 }]);
    ev.clear();
    p.feed(
        &[0x81, 1, b'x'],
        &[],
        std::time::Instant::now(),
        &mut ev,
        &mut Vec::new(),
    )
    .unwrap();
    assert_eq!(
        ev,
        [Event::Unmatched { count: 1 }],
        "the upgrade is said once"
    );
}

/// What carries data of its own comes beside the events as a note: the server's name
/// once asked for, and why a WebSocket's upgrade failed.
#[test]
fn the_server_name_and_a_refused_upgrade_come_as_notes() {
    let mut p = Proto::new(None, false, true);
    p.send(0..0);
    p.queue(1);
    p.capture_server();
    let (mut ev, mut notes) = (Vec::new(), Vec::new());
    let answer = b"HTTP/1.1 200 OK\r\nServer: tiny/1\r\nContent-Length: 2\r\n\r\nok";
    p.feed(answer, &[], std::time::Instant::now(), &mut ev, &mut notes)
        .unwrap();
    assert!(
        matches!(ev[..], [Event::Response(r)] if r.status == 200),
        "{ev:?}"
    );
    assert_eq!(notes, [Note::Server("tiny/1".into())]);
    // Not asked for again: no note.
    notes.clear();
    p.queue(1);
    p.feed(answer, &[], std::time::Instant::now(), &mut ev, &mut notes)
        .unwrap();
    assert!(notes.is_empty(), "{notes:?}");

    let mut c = WsClient::seeded(&load(), REQUEST, 3, false);
    c.queue(1);
    let mut p = Proto::Ws(Box::new(c));
    notes.clear();
    let refused = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
    assert!(p
        .feed(refused, &[], std::time::Instant::now(), &mut ev, &mut notes)
        .is_err());
    assert_eq!(
        notes,
        [Note::WsEnded {
            refused: Some(404),
            close: None
        }]
    );
}

/// A stream reset says itself whether its request may go again and what it fails
/// as, so that the worker need not know whose codes they are.
#[test]
fn a_reset_says_whether_it_refused_and_what_it_fails_as() {
    let mut p = Proto::H2(Box::new(settled()));
    let Some(h) = p.mux() else { unreachable!() };
    let (one, two) = (h.request(&get(), false), h.request(&get(), false));
    let mut input = frame(
        stampede_wire::frame::RST_STREAM,
        0,
        one,
        &7u32.to_be_bytes(),
    );
    input.extend(frame(
        stampede_wire::frame::RST_STREAM,
        0,
        two,
        &2u32.to_be_bytes(),
    ));
    let (mut ev, mut notes) = (Vec::new(), Vec::new());
    p.feed(&input, &[], std::time::Instant::now(), &mut ev, &mut notes)
        .unwrap();
    let kind = crate::ErrorKind::H2StreamReset;
    assert_eq!(
        ev,
        [
            Event::Reset {
                stream: one,
                code: 7,
                refused: true,
                kind
            },
            Event::Reset {
                stream: two,
                code: 2,
                refused: false,
                kind
            }
        ]
    );
}
