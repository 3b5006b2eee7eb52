//! The reference server's WebSocket rooms over real sockets on 127.0.0.1:0, with two
//! server threads so that members sit on both: each message reaches every member of
//! its room once, the sender included, and no other room; a member that leaves is
//! written no more; one that does not read is closed with 1008 rather than buffered
//! without end.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use stampede_server::{Config, Running};
use stampede_wire::ws::{self, Event, Reader, ReaderOptions};

use crate::common::connect;

/// A client upgraded to `path` (the 101's head read), with what came after it.
pub fn member(srv: &Running, path: &str) -> (TcpStream, Vec<u8>) {
    let mut s = connect(srv);
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let end = loop {
        if let Some(i) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = match s.read(&mut buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            r => r.unwrap(),
        };
        assert!(n > 0, "closed before the head");
        got.extend_from_slice(&buf[..n]);
    };
    assert!(
        got.starts_with(b"HTTP/1.1 101 "),
        "{}",
        String::from_utf8_lossy(&got)
    );
    (s, got.split_off(end))
}

fn send(s: &mut TcpStream, text: &[u8]) {
    let mut f = Vec::new();
    ws::frame(&mut f, (true, false), ws::TEXT, text, Some([3, 1, 4, 1]));
    s.write_all(&f).unwrap();
}

/// Reads frames until `n` messages came (or a close): the messages' text, and the
/// close's code if one came.
fn read(s: &mut TcpStream, early: &mut Vec<u8>, n: usize) -> (Vec<String>, Option<u16>) {
    let mut r = Reader::new(ReaderOptions {
        peer_is_client: false,
        max_message: 1 << 24,
        keep: true,
    });
    let mut msgs = Vec::new();
    let mut close = None;
    let mut input = std::mem::take(early);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        r.feed(&input, &mut |e| match e {
            Event::Message { data, .. } => {
                msgs.push(String::from_utf8_lossy(&data[..data.len().min(32)]).into_owned())
            }
            Event::Close { code, .. } => close = code,
            _ => {}
        })
        .unwrap();
        if msgs.len() >= n || close.is_some() {
            return (msgs, close);
        }
        let k = s.read(&mut buf).unwrap();
        assert!(k > 0, "closed after {} messages", msgs.len());
        input = buf[..k].to_vec();
    }
}

#[test]
fn a_rooms_messages_reach_each_member_once_and_no_other_room() {
    let srv = Running::local(Config {
        threads: 2,
        ..Config::default()
    })
    .unwrap();
    let mut members: Vec<_> = (0..8).map(|_| member(&srv, "/ws/room?name=t")).collect();
    let (mut other, mut other_early) = member(&srv, "/ws/room?name=u");
    send(&mut members[0].0, b"hello");
    send(&mut members[5].0, b"from five");
    for (i, (s, early)) in members.iter_mut().enumerate() {
        let (got, close) = read(s, early, 2);
        let got: BTreeSet<String> = got.into_iter().collect();
        assert_eq!(close, None, "member {i}");
        assert_eq!(
            got,
            BTreeSet::from(["hello".to_string(), "from five".to_string()]),
            "member {i}"
        );
    }
    // The other room's member was written nothing: its first message is its own.
    send(&mut other, b"mine");
    assert_eq!(read(&mut other, &mut other_early, 1).0, ["mine"]);
    // A member that leaves is written no more; the rest still get each message.
    let (gone, _) = members.pop().unwrap();
    drop(gone);
    send(&mut members[1].0, b"after");
    for (i, (s, early)) in members.iter_mut().enumerate() {
        assert_eq!(read(s, early, 1).0, ["after"], "member {i}");
    }
    srv.stop().unwrap();
}

#[test]
fn a_member_that_does_not_read_is_closed_with_1008() {
    let srv = Running::local(Config {
        threads: 1,
        ..Config::default()
    })
    .unwrap();
    let (mut slow, mut slow_early) = member(&srv, "/ws/room?name=flood");
    let (mut fast, fast_early) = member(&srv, "/ws/room?name=flood");
    // The sender reads its own copies as they come; the slow member reads nothing
    // until 24 messages of 1 MiB were sent, more than its socket and the 4 MiB the
    // server holds for it.
    let mut reader = fast.try_clone().unwrap();
    let drain = std::thread::spawn(move || {
        let mut early = fast_early;
        read(&mut reader, &mut early, 24).0.len()
    });
    let big = vec![b'x'; 1 << 20];
    for _ in 0..24 {
        send(&mut fast, &big);
    }
    assert_eq!(drain.join().unwrap(), 24);
    let (got, close) = read(&mut slow, &mut slow_early, usize::MAX);
    assert_eq!(close, Some(1008), "after {} messages", got.len());
    assert!(got.len() < 24, "{}", got.len());
    // A message over the room's limit of 1 MiB is refused with 1009.
    let (mut big_sender, mut early) = member(&srv, "/ws/room?name=flood");
    // Only the frame's head goes: the refusal comes from it, and no unread payload
    // is left for the server's close to reset the connection over.
    let mut f = Vec::new();
    ws::frame(
        &mut f,
        (true, false),
        ws::TEXT,
        &vec![b'y'; (1 << 20) + 1],
        Some([3, 1, 4, 1]),
    );
    big_sender.write_all(&f[..14]).unwrap();
    let (_, close) = read(&mut big_sender, &mut early, usize::MAX);
    assert_eq!(close, Some(1009));
    srv.stop().unwrap();
}

#[test]
fn a_room_name_is_a_short_token() {
    let srv = Running::local(Config {
        threads: 1,
        ..Config::default()
    })
    .unwrap();
    for (path, said) in [
        ("/ws/room?name=a%20b", "name is 1 to 64"),
        ("/ws/room?topic=x", "the one setting is name"),
    ] {
        let mut s = connect(&srv);
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        .unwrap();
        let mut got = String::new();
        let _ = s.read_to_string(&mut got);
        assert!(
            got.starts_with("HTTP/1.1 400 ") && got.contains(said),
            "{path}: {got}"
        );
    }
    // No name: the lobby.
    let (mut s, mut early) = member(&srv, "/ws/room");
    send(&mut s, b"anyone?");
    assert_eq!(read(&mut s, &mut early, 1).0, ["anyone?"]);
    srv.stop().unwrap();
}
