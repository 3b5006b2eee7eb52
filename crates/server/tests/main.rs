//! The server's integration tests, one binary: the server in-process on
//! 127.0.0.1:0 ([`stampede_server::Running`]), driven over real sockets.

mod common;
mod h2;
mod server;
mod ws_close;
mod ws_room;
