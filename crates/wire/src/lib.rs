//! The wire formats shared by both ends stampede plays: the load engine's client
//! connections and the reference server's.
//!
//! [`frame`] holds the frame layout (RFC 9113 §4 and §6): types, flags, settings and
//! error codes, and writers for the frames both sides send; [`block`] assembles header
//! blocks from HEADERS and CONTINUATION frames. [`hpack`] is header compression (RFC
//! 7541): a decoder that keeps the dynamic table in step with the peer's encoder,
//! integer and literal encoding, and an [`hpack::Encoder`] for responses that indexes
//! the fields a connection repeats. [`percent`] is strict percent-decoding for URLs and
//! request paths; [`date`] is HTTP's date format; [`sse`] parses server-sent event
//! streams; [`grpc`] is gRPC's message framing, statuses and headers; [`h3`] is HTTP/3's framing (RFC 9114) and its QPACK field compression
//! (RFC 9204); [`ws`] is WebSocket's framing and handshake keys (RFC 6455); [`stamp`] is the
//! send stamp a pushed message may carry to be timed on arrival; [`schema`] guards a
//! `.proto` file's text (nesting, imports) before it is compiled; [`status`] names
//! HTTP's status codes; [`clock`] is the time an event loop reads, the machine's or a
//! test's. None of them does I/O; the connection state machines live with their
//! users.
#![forbid(unsafe_code)]

pub mod block;
pub mod clock;
pub mod date;
pub mod frame;
pub mod grpc;
pub mod h3;
pub mod hpack;
pub mod percent;
pub mod schema;
pub mod sse;
pub mod stamp;
pub mod status;
pub mod ws;
