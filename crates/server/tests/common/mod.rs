//! What the server's end-to-end tests share beyond [`stampede_server::Running`] (the
//! one in-process harness of every crate's tests): a client socket with a timeout.

use std::net::TcpStream;
use std::time::Duration;

use stampede_server::Running;

/// A connection to `srv` with a 5-second read timeout.
pub fn connect(srv: &Running) -> TcpStream {
    let s = TcpStream::connect(srv.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s
}
