//! What the server's end-to-end tests share beyond [`stampede_server::Running`] (the
//! one in-process harness of every crate's tests): a client socket with a timeout, and
//! a way to know that a one-thread server has seen what was sent and the time moved.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use stampede_server::Running;

/// A connection to `srv` with a 5-second read timeout.
pub fn connect(srv: &Running) -> TcpStream {
    let s = TcpStream::connect(srv.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s
}

/// Two requests, one after the other, each on a connection of its own, each answered
/// before the next goes: by then a one-thread server's loop has ended a whole pass
/// begun after the call — it has read what every socket held when it was called, and
/// read its clock at least once since (a manual clock's move is seen, and the timers
/// it made due have been met).
pub fn settle(srv: &Running) {
    for _ in 0..2 {
        let mut s = connect(srv);
        s.write_all(b"GET /pong HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut got = Vec::new();
        s.read_to_end(&mut got).unwrap();
        assert!(got.starts_with(b"HTTP/1.1 200"), "{got:?}");
    }
}
