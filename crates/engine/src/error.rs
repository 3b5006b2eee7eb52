//! Error types of the engine.
//!
//! Two different things are called "errors" in a load test and they are kept apart here:
//! [`SpecError`]/[`RunError`] stop a run before or while it starts (bad URL, unreachable
//! target, too few file descriptors), while [`ErrorKind`] classifies the failure of one
//! request inside a run. Request failures are data: they are counted per kind, never
//! carried around as strings.

use serde::{Deserialize, Serialize};

/// Why a load specification could not be built.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// The URL could not be parsed; the message says which part is wrong.
    #[error("invalid URL {url:?}: {reason}")]
    Url {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The host name did not resolve to any address.
    #[error("could not resolve {host:?}: {reason}")]
    Resolve {
        /// The host name.
        host: String,
        /// The resolver's message.
        reason: String,
    },
    /// A part of the request holds a byte that would change its framing on the wire
    /// (CR, LF or NUL in a header value; whitespace or controls in a method, target or
    /// header name), so it would be sent as extra headers or requests.
    #[error("the request's {part} {value:?} contains {what}; it would be sent as extra header lines or requests")]
    Request {
        /// Which part: "method", "target", "header name", "header value".
        part: &'static str,
        /// The value as given.
        value: String,
        /// What is wrong in it, e.g. "a line break (CR or LF)".
        what: &'static str,
    },
    /// A value of the specification is out of range.
    #[error("{field}: {reason}")]
    Invalid {
        /// Which field (named as the user knows it).
        field: &'static str,
        /// What is wrong.
        reason: String,
    },
}

/// Why a run could not be carried out at all.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The process cannot open enough sockets for the requested connections.
    #[error("the run needs about {needed} file descriptors but the limit is {limit}; raise it with `ulimit -n {needed}` or use fewer connections")]
    FdLimit {
        /// Descriptors the run needs.
        needed: u64,
        /// The soft limit after trying to raise it.
        limit: u64,
    },
    /// A worker's event loop could not be made, or failed while running.
    #[error("the event loop failed: {0}")]
    Poll(#[source] std::io::Error),
    /// A worker thread could not be started.
    #[error("could not start a worker thread: {0}")]
    Thread(#[source] std::io::Error),
    /// A worker thread panicked; this is a bug.
    #[error("a worker thread panicked")]
    WorkerPanicked,
    /// Stopped (Ctrl-C) while waiting for a shared start: nothing was sent.
    #[error("stopped before the shared start (--start-at): nothing was sent")]
    Stopped,
    /// `--io io_uring` was asked for where io_uring cannot carry the run.
    #[error("{0}")]
    Io(String),
    /// The parts of a run over several servers could not be merged; this is a bug.
    #[error("could not merge the servers' parts of the run: {0}")]
    Merge(String),
}

/// The class of a failed request. Counted, never logged one by one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The server refused the connection (nothing listening).
    ConnectRefused,
    /// The connection was not established within the connect timeout.
    ConnectTimeout,
    /// No file descriptor for a new socket (EMFILE/ENFILE: the open-files limit).
    FdUnavailable,
    /// No local address or port left for a new connection (EADDRNOTAVAIL).
    AddrUnavailable,
    /// Any other failure to connect (unreachable network, …).
    ConnectOther,
    /// The connection was reset by the peer while a request was outstanding.
    Reset,
    /// The server closed the connection before the response was complete.
    Closed,
    /// No complete response arrived within the request timeout.
    Timeout,
    /// The response broke the HTTP/1.x protocol (garbage status line, bad chunk, …).
    Protocol,
    /// Writing the request failed (broken pipe and friends).
    Write,
    /// Any other socket error while reading.
    Read,
    /// TLS: a certificate was refused (the server's: unknown issuer, expired, wrong
    /// name; or ours, by a server asking for one).
    TlsCertificate,
    /// TLS: the handshake failed otherwise (no common version or cipher, an alert, a
    /// malformed message, a server that does not speak TLS).
    TlsHandshake,
    /// HTTP/2: the server reset the request's stream (RST_STREAM).
    H2StreamReset,
    /// HTTP/2: the server went away (GOAWAY) before processing the request's stream.
    H2GoAway,
    /// The proxy did not open a tunnel to the server: it answered CONNECT with
    /// anything but 2xx, or closed instead of answering.
    ProxyRefused,
    /// A watched response's stream broke its format: a server-sent event (or one of
    /// its lines) over the size limit, or an OpenAI stream's event that is not a
    /// chunk object (an `error` object included).
    StreamEvent,
    /// A watched response sent no event for the run's event timeout.
    StreamStall,
    /// HTTP/3: the server reset the request's stream.
    H3StreamReset,
    /// HTTP/3: the server went away (GOAWAY) before processing the request's stream.
    H3GoAway,
    /// HTTP/3: the connection broke HTTP/3 or QPACK (closed with an HTTP/3 error code,
    /// by either end).
    H3Protocol,
    /// QUIC: the connection was closed with a transport error (by either end).
    QuicTransport,
    /// QUIC: nothing came from the server for the idle timeout.
    QuicIdleTimeout,
    /// QUIC: the server speaks no QUIC version this end does (Version Negotiation).
    QuicVersion,
    /// gRPC: an answer's messages broke their framing (a length prefix over the size
    /// limit, a flag byte neither 0 nor 1, a body that ended inside a message).
    GrpcMessage,
    /// gRPC: an answer ended without a `grpc-status` (its trailers never came).
    GrpcNoStatus,
    /// WebSocket: the server refused the upgrade (the message that waited for it is
    /// answered with the refusal's status; those behind it fail as this).
    WsUpgrade,
    /// WebSocket: the server's 101 broke the handshake (a wrong or missing
    /// `Sec-WebSocket-Accept`, no `Upgrade: websocket`, an extension or subprotocol
    /// that was not offered).
    WsHandshake,
    /// WebSocket: permessage-deflate was asked for and the server's 101 declined it
    /// (named no extension).
    WsDeflateDeclined,
    /// WebSocket: the server's frames broke RFC 6455 (masked, reserved bits or
    /// opcodes, bad control frames or fragments, a close code that may not be sent);
    /// the connection was closed with 1002.
    WsProtocol,
    /// WebSocket: a text message that is not UTF-8 (closed with 1007).
    WsInvalidText,
    /// WebSocket: a message over the size limit (closed with 1009).
    WsTooBig,
    /// WebSocket: the server closed (a close frame) while messages were unanswered.
    WsClosed,
}

impl ErrorKind {
    /// Every kind, in report order.
    pub const ALL: [ErrorKind; 33] = [
        ErrorKind::ConnectRefused,
        ErrorKind::ConnectTimeout,
        ErrorKind::FdUnavailable,
        ErrorKind::AddrUnavailable,
        ErrorKind::ConnectOther,
        ErrorKind::Reset,
        ErrorKind::Closed,
        ErrorKind::Timeout,
        ErrorKind::Protocol,
        ErrorKind::Write,
        ErrorKind::Read,
        ErrorKind::TlsCertificate,
        ErrorKind::TlsHandshake,
        ErrorKind::H2StreamReset,
        ErrorKind::H2GoAway,
        ErrorKind::ProxyRefused,
        ErrorKind::StreamEvent,
        ErrorKind::StreamStall,
        ErrorKind::H3StreamReset,
        ErrorKind::H3GoAway,
        ErrorKind::H3Protocol,
        ErrorKind::QuicTransport,
        ErrorKind::QuicIdleTimeout,
        ErrorKind::QuicVersion,
        ErrorKind::GrpcMessage,
        ErrorKind::GrpcNoStatus,
        ErrorKind::WsUpgrade,
        ErrorKind::WsHandshake,
        ErrorKind::WsDeflateDeclined,
        ErrorKind::WsProtocol,
        ErrorKind::WsInvalidText,
        ErrorKind::WsTooBig,
        ErrorKind::WsClosed,
    ];

    /// Index into per-kind counter arrays.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The snake_case name used in JSON and reports.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::ConnectRefused => "connect_refused",
            ErrorKind::ConnectTimeout => "connect_timeout",
            ErrorKind::FdUnavailable => "fd_unavailable",
            ErrorKind::AddrUnavailable => "addr_unavailable",
            ErrorKind::ConnectOther => "connect_other",
            ErrorKind::Reset => "reset",
            ErrorKind::Closed => "closed",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Write => "write",
            ErrorKind::Read => "read",
            ErrorKind::TlsCertificate => "tls_certificate",
            ErrorKind::TlsHandshake => "tls_handshake",
            ErrorKind::H2StreamReset => "h2_stream_reset",
            ErrorKind::H2GoAway => "h2_goaway",
            ErrorKind::ProxyRefused => "proxy_refused",
            ErrorKind::StreamEvent => "stream_event",
            ErrorKind::StreamStall => "stream_stall",
            ErrorKind::H3StreamReset => "h3_stream_reset",
            ErrorKind::H3GoAway => "h3_goaway",
            ErrorKind::H3Protocol => "h3_protocol",
            ErrorKind::QuicTransport => "quic_transport",
            ErrorKind::QuicIdleTimeout => "quic_idle_timeout",
            ErrorKind::QuicVersion => "quic_version",
            ErrorKind::GrpcMessage => "grpc_message",
            ErrorKind::GrpcNoStatus => "grpc_no_status",
            ErrorKind::WsUpgrade => "ws_upgrade",
            ErrorKind::WsHandshake => "ws_handshake",
            ErrorKind::WsDeflateDeclined => "ws_deflate_declined",
            ErrorKind::WsProtocol => "ws_protocol",
            ErrorKind::WsInvalidText => "ws_invalid_text",
            ErrorKind::WsTooBig => "ws_too_big",
            ErrorKind::WsClosed => "ws_closed",
        }
    }

    /// True for failures to establish a connection, TLS handshakes included (as wrk
    /// and ab count them).
    pub fn is_connect(self) -> bool {
        matches!(
            self,
            ErrorKind::ConnectRefused
                | ErrorKind::ConnectTimeout
                | ErrorKind::FdUnavailable
                | ErrorKind::AddrUnavailable
                | ErrorKind::ConnectOther
                | ErrorKind::TlsCertificate
                | ErrorKind::TlsHandshake
                | ErrorKind::ProxyRefused
                | ErrorKind::QuicVersion
        )
    }

    /// Classifies an error seen during a TLS handshake.
    pub fn from_handshake_error(e: &std::io::Error) -> ErrorKind {
        match stampede_tls::classify(e) {
            Some(stampede_tls::Failure::Certificate) => ErrorKind::TlsCertificate,
            Some(stampede_tls::Failure::Other) => ErrorKind::TlsHandshake,
            // The peer closed or reset instead of answering the handshake.
            None => match ErrorKind::from_read_error(e) {
                ErrorKind::Read => ErrorKind::TlsHandshake,
                k => k,
            },
        }
    }

    /// Classifies an I/O error seen while reading a response.
    pub fn from_read_error(e: &std::io::Error) -> ErrorKind {
        use std::io::ErrorKind as K;
        match e.kind() {
            K::ConnectionReset | K::ConnectionAborted => ErrorKind::Reset,
            K::BrokenPipe | K::UnexpectedEof => ErrorKind::Closed,
            K::TimedOut => ErrorKind::Timeout,
            _ => ErrorKind::Read,
        }
    }

    /// Classifies an I/O error seen while connecting.
    pub fn from_connect_error(e: &std::io::Error) -> ErrorKind {
        use std::io::ErrorKind as K;
        match e.raw_os_error() {
            Some(libc::EMFILE | libc::ENFILE) => return ErrorKind::FdUnavailable,
            Some(libc::EADDRNOTAVAIL) => return ErrorKind::AddrUnavailable,
            _ => {}
        }
        match e.kind() {
            K::ConnectionRefused => ErrorKind::ConnectRefused,
            K::TimedOut => ErrorKind::ConnectTimeout,
            _ => ErrorKind::ConnectOther,
        }
    }

    /// Classifies an I/O error seen while writing a request.
    pub fn from_write_error(e: &std::io::Error) -> ErrorKind {
        use std::io::ErrorKind as K;
        match e.kind() {
            K::ConnectionReset | K::ConnectionAborted => ErrorKind::Reset,
            _ => ErrorKind::Write,
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_errors_are_classified_by_errno() {
        let e = |n| std::io::Error::from_raw_os_error(n);
        assert_eq!(
            ErrorKind::from_connect_error(&e(libc::EMFILE)),
            ErrorKind::FdUnavailable
        );
        assert_eq!(
            ErrorKind::from_connect_error(&e(libc::ENFILE)),
            ErrorKind::FdUnavailable
        );
        assert_eq!(
            ErrorKind::from_connect_error(&e(libc::EADDRNOTAVAIL)),
            ErrorKind::AddrUnavailable
        );
        assert_eq!(
            ErrorKind::from_connect_error(&e(libc::ECONNREFUSED)),
            ErrorKind::ConnectRefused
        );
        assert_eq!(
            ErrorKind::from_connect_error(&e(libc::ETIMEDOUT)),
            ErrorKind::ConnectTimeout
        );
        assert_eq!(
            ErrorKind::from_connect_error(&e(libc::ENETUNREACH)),
            ErrorKind::ConnectOther
        );
        for (i, k) in ErrorKind::ALL.iter().enumerate() {
            assert_eq!(k.index(), i);
        }
    }
}

/// Text that does not parse: a duration, an arrival period, an injection profile, an
/// assertion. The message says what was wrong and what is accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SyntaxError(pub String);

impl From<String> for SyntaxError {
    fn from(s: String) -> SyntaxError {
        SyntaxError(s)
    }
}

impl From<SyntaxError> for String {
    fn from(e: SyntaxError) -> String {
        e.0
    }
}

impl From<&str> for SyntaxError {
    fn from(s: &str) -> SyntaxError {
        SyntaxError(s.to_string())
    }
}

/// Why an encoded histogram (base64 of HdrHistogram's V2 format) does not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HistError {
    /// Not base64.
    #[error("histogram is not base64: {0}")]
    Base64(String),
    /// Not a V2 histogram.
    #[error("histogram does not decode: {0}")]
    Format(String),
    /// Values beyond the engine's histograms' range.
    #[error("histogram out of range: {0}")]
    Range(String),
    /// Past a size or count limit (checked before anything is allocated for it).
    #[error("histogram refused: {0}")]
    Limit(String),
}

/// Why bytes are not whole HTTP/1.1 requests back to back (a script's requests, a
/// batch a cookie is added to). Requests are counted from 1.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestsError {
    /// No bytes at all.
    #[error("the request is empty")]
    Empty,
    /// A request's head is cut short.
    #[error("request {0} is incomplete")]
    Incomplete(usize),
    /// A request's head does not parse.
    #[error("request {index} is malformed: {reason}")]
    Malformed {
        /// Which request.
        index: usize,
        /// The parser's word for it.
        reason: String,
    },
    /// A Content-Length that is not a number.
    #[error("request {0} has a bad Content-Length")]
    ContentLength(usize),
    /// A chunked body, whose length the bytes would have to be parsed for.
    #[error("request {0} uses Transfer-Encoding; give its body a Content-Length")]
    Chunked(usize),
    /// Fewer body bytes than the Content-Length says.
    #[error("request {0}'s body is shorter than its Content-Length")]
    ShortBody(usize),
}

/// Why a saved spec (`--save-spec`'s JSON) cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SavedSpecError {
    /// Not JSON.
    #[error("not JSON: {0}")]
    Json(String),
    /// Another format, or another version's.
    #[error("format {found:?}, not {expected:?} (written by another stampede version)")]
    Format {
        /// The file's format.
        found: String,
        /// This version's.
        expected: &'static str,
    },
    /// No format at all.
    #[error("no \"format\": not a {0} file")]
    NoFormat(&'static str),
    /// The fields do not fit.
    #[error("{0}")]
    Fields(String),
}

/// Why the socket options cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SocketError {
    /// The local address is not one of this machine's.
    #[error("cannot connect from {ip}: {source}")]
    LocalAddress {
        /// The address asked for.
        ip: std::net::IpAddr,
        /// The kernel's answer.
        source: std::io::Error,
    },
    /// No socket to check it with.
    #[error("cannot open a socket: {0}")]
    Socket(#[source] std::io::Error),
    /// A buffer size of 0.
    #[error("the {0} must be at least 1 byte")]
    ZeroBuffer(&'static str),
    /// More local addresses than a run connects from.
    #[error("{0} local addresses; a run connects from at most {max}", max = crate::spec::net::MAX_LOCAL)]
    TooManyLocal(usize),
}

/// Why an HTTP/1 request cannot be sent over HTTP/2.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TranslateError {
    /// The request head is not complete.
    #[error("the request head is incomplete")]
    Incomplete,
    /// The request does not parse as HTTP/1.
    #[error("the request does not parse: {0}")]
    Malformed(String),
}
