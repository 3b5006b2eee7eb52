//! What a client connection's protocol reports back, the same for every protocol:
//! responses complete, a watched body's progress, streams reset or malformed, the
//! server going away, an upgrade or a handshake done ([`Event`]); and, seldom, what
//! carries data of its own (the server's name, a gRPC message, why a WebSocket
//! ended: [`Note`]).

/// What a client connection reports back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A response is complete.
    Response(Response),
    /// A watched response's body brought bytes or events (runs that time streams;
    /// see [`crate::StreamMode`]). It comes before the response's completion when
    /// both came in the same bytes.
    Progress {
        /// The request's stream (HTTP/2), or 0: the oldest request queued (HTTP/1).
        stream: u32,
        /// What arrived.
        progress: crate::proto::watch::Progress,
    },
    /// A watched HTTP/2 response's stream broke its format (an event over the size
    /// limit, a gRPC message that lies): the stream was reset with CANCEL, the
    /// connection goes on.
    StreamBroken {
        /// The stream.
        stream: u32,
        /// How it broke: [`crate::ErrorKind::StreamEvent`], or a gRPC kind.
        kind: crate::ErrorKind,
    },
    /// The answer on `stream` came whole but failed as `kind` (a gRPC answer without
    /// `grpc-status`, or ended inside a message).
    Failed {
        /// The stream.
        stream: u32,
        /// How it failed.
        kind: crate::ErrorKind,
    },
    /// The response on `stream` was malformed (no valid `:status` in its first
    /// header block); the stream was reset with PROTOCOL_ERROR (RFC 9113 8.1.1).
    Malformed {
        /// The stream.
        stream: u32,
    },
    /// The server reset `stream` with this error code.
    Reset {
        /// The stream.
        stream: u32,
        /// RST_STREAM's (or HTTP/3's RESET_STREAM's) error code.
        code: u32,
        /// The code says the request was refused unprocessed: safe to send again.
        refused: bool,
        /// What the stream's request fails as otherwise.
        kind: crate::ErrorKind,
    },
    /// The WebSocket upgrade was answered (101): the connection's set-up ends here,
    /// and the messages that waited for it go out now. It comes before anything else
    /// the same bytes brought.
    Upgraded,
    /// WebSocket messages arrived that answered no message sent (counted, not timed).
    Unmatched {
        /// How many.
        count: u64,
    },
    /// Response header bytes that arrived: compressed on the wire and decoded (HTTP/2's
    /// HPACK, HTTP/3's QPACK).
    HeaderSizes {
        /// Header block bytes as received.
        compressed: u64,
        /// Their fields' names and values once decoded.
        decoded: u64,
    },
    /// The server is going away: streams above `last_stream` will not be answered.
    GoAway {
        /// The highest stream the server may still answer.
        last_stream: u32,
        /// GOAWAY's error code.
        code: u32,
        /// What the requests on the streams above fail as.
        kind: crate::ErrorKind,
    },
    /// The protocol's own handshake (QUIC's) finished: in `us` from the connection's
    /// start, resumed from an earlier session or not.
    Handshake {
        /// Its time, µs.
        us: u64,
        /// A resumed session.
        resumed: bool,
    },
}

/// What a connection reports beside its events, seldom and with data of its own (so
/// that an [`Event`] stays small): taken by the worker after the events of a read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// The server's name, from the first response's `Server` header (once asked for
    /// with [`crate::proto::Proto::capture_server`]).
    Server(String),
    /// A gRPC answer's `grpc-message`, with its status.
    GrpcMessage {
        /// The answer's `grpc-status`.
        code: u8,
        /// The message.
        message: Box<str>,
    },
    /// A WebSocket connection broke: the upgrade refused with this status, or the
    /// server's close with this code (`None`: a close without one).
    WsEnded {
        /// The upgrade's answer when it was not 101.
        refused: Option<u16>,
        /// The server's close frame, when it sent one.
        close: Option<Option<u16>>,
    },
}

/// A complete response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    /// The request's stream (HTTP/2), or 0: the oldest request queued (HTTP/1, which
    /// answers in order).
    pub stream: u32,
    /// Its final status.
    pub status: u16,
    /// Body bytes: as on the wire for HTTP/1 (chunk framing included, as ab counts),
    /// DATA payload without padding for HTTP/2.
    pub body: u64,
    /// The connection ends with this response (HTTP/1's `Connection: close`).
    pub close: bool,
    /// It counts as a keep-alive request: HTTP/1 when the connection stays open after
    /// it, HTTP/2 when it was not the connection's first answer.
    pub reused: bool,
    /// HTTP/1: its first byte came in the bytes just fed (otherwise in earlier ones;
    /// see [`crate::proto::h1::H1Conn::mid_response`]). The server's waiting time ends with that byte.
    pub fresh: bool,
    /// gRPC calls: the answer's `grpc-status` (0 to 16; others are `UNKNOWN`).
    pub grpc: Option<u8>,
}

#[cfg(test)]
mod tests {
    /// Every response of every run passes through an event: what one feature needs
    /// (a WebSocket message's stamp, say) is held beside it, not in it.
    #[test]
    fn an_event_stays_small() {
        assert!(std::mem::size_of::<super::Event>() <= 32);
    }
}
