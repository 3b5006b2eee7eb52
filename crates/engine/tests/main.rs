//! The engine's integration tests, one binary: runs against scripted servers on
//! 127.0.0.1:0 (`common`), misbehaving ones, the reference server, and the client
//! and server protocol state machines joined in memory (`memory`).

mod backend;
mod common;
mod endless;
mod h2;
mod live;
mod made;
mod memory;
mod merge;
mod misbehaving;
mod open;
mod variety;
mod ws;
mod ws_push;
