//! A WebSocket run's load ([`WsLoad`]): the message each request sends, how (text,
//! binary, a ping, stamped, compressed), the subprotocols offered, and the upgrade
//! request built from the run's target and headers.

use std::sync::Arc;

use super::{Request, SpecError};

/// What a WebSocket run sends: each request one data message, masked afresh, on a
/// connection upgraded with the run's request as the handshake (its headers, with
/// the upgrade's own and a fresh key per connection).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WsLoad {
    /// The message's payload.
    #[serde(with = "crate::form::hex_shared")]
    pub message: Arc<[u8]>,
    /// Several messages used in turn (a body per line, a plan's list): each
    /// connection sends them in order from the first, starting over after the last,
    /// and `message` is not sent. Empty: `message` only.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        with = "crate::form::hex_shared_list"
    )]
    pub messages: Vec<Arc<[u8]>>,
    /// A binary message (opcode 2); otherwise text (opcode 1, the payload UTF-8).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub binary: bool,
    /// Subprotocols offered (`Sec-WebSocket-Protocol`), in order of preference.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub protocols: Vec<String>,
    /// The largest message taken from the server; a longer one fails as too big.
    pub max_message: u64,
    /// Each request is a ping carrying the message (at most 125 bytes) and its answer
    /// the pong that carries it back: connections held with heartbeats, whatever the
    /// server does with data messages (which are then read and not counted).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ping: bool,
    /// Each message begins with a send stamp ([`stampede_wire::stamp`]): when it was
    /// due (its request's intended start) and when it went out — for whoever receives
    /// it (the members of a broadcast room, a subscriber's `stream = messages` run) to
    /// time it from them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stamp: bool,
    /// The answer to each message is the next data message that contains these
    /// bytes; messages that do not are read, counted
    /// ([`crate::result::WsStats::unmatched`]) and let go — a server that sends
    /// other traffic (a room's, a feed's) between answers, or answers identified by
    /// content. With
    /// messages made one by one ([`crate::made`]) each call's own expectation is made
    /// beside its message (in the maker's fields buffer) in place of this one.
    /// Answers are taken in order.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::form::hex_shared_opt"
    )]
    pub expect: Option<Arc<[u8]>>,
    /// With [`WsLoad::messages`], what each one's answer holds, one for each in the
    /// same turn (an empty one: any message answers) — a session's send/expect
    /// steps. Empty: [`WsLoad::expect`] for every message.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        with = "crate::form::hex_shared_list"
    )]
    pub expects: Vec<Arc<[u8]>>,
    /// permessage-deflate (RFC 7692) is offered, and must be taken: messages go
    /// compressed both ways, and a server that declines fails each connection
    /// ([`crate::ErrorKind::WsDeflateDeclined`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deflate: bool,
    /// With `deflate`: parameters the offer asks for beyond the client's window
    /// (`server_no_context_takeover; server_max_window_bits=10`, say: the server's
    /// memory and compression as they would be configured), held to the server's
    /// answer — one that does not honour them fails the connection as a handshake
    /// error. Empty: the plain offer.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub deflate_params: String,
}

impl WsLoad {
    /// The default limit on a message from the server (16 MiB, as the reference
    /// server's).
    pub const MAX_MESSAGE: u64 = 16 << 20;
    /// The largest message a run may send (16 MiB).
    pub const MAX_SEND: usize = 16 << 20;
    /// The most messages used in turn.
    pub const MAX_MESSAGES: usize = 1 << 20;
    /// The most bytes the messages used in turn take together (256 MiB, a body
    /// file's most).
    pub const MAX_MESSAGES_BYTES: usize = 256 << 20;
    /// The longest expectation ([`WsLoad::expect`]).
    pub const MAX_EXPECT: usize = 64 * 1024;
    /// The largest message a ping carries (a control frame's payload).
    pub const MAX_PING: usize = stampede_wire::ws::MAX_CONTROL;

    /// Headers the upgrade sets itself (each connection its own key), in lower case.
    pub const OWN_HEADERS: [&'static str; 6] = [
        "upgrade",
        "connection",
        "sec-websocket-key",
        "sec-websocket-version",
        "sec-websocket-protocol",
        "sec-websocket-extensions",
    ];

    /// The first of `headers` the upgrade sets itself ([`WsLoad::OWN_HEADERS`]).
    pub fn own_header(headers: &[(String, String)]) -> Option<&str> {
        (headers.iter())
            .map(|(n, _)| n.as_str())
            .find(|n| WsLoad::OWN_HEADERS.contains(&n.to_ascii_lowercase().as_str()))
    }

    /// Whether `protocols` may be offered: at most 32, each a token of at most 256
    /// bytes (RFC 6455 §4.1: letters, digits and `!#$%&'*+-.^_`|~`).
    pub fn valid_protocols(protocols: &[String]) -> bool {
        protocols.len() <= 32
            && protocols.iter().all(|p| {
                !p.is_empty()
                    && p.len() <= 256
                    && (p.bytes())
                        .all(|b| b.is_ascii_graphic() && !b"()<>@,;:\\\"/[]?={}".contains(&b))
            })
    }

    /// The upgrade request for `target`: a GET of its path with `headers` and the
    /// upgrade's own, offering the subprotocols; each connection adds its key.
    /// `headers` naming one of [`WsLoad::OWN_HEADERS`] are refused.
    pub fn upgrade_request(
        &self,
        target: &crate::Target,
        headers: &[(String, String)],
    ) -> Result<Request, SpecError> {
        if let Some(n) = WsLoad::own_header(headers) {
            return Err(SpecError::Invalid {
                field: "headers",
                reason: format!(
                    "{n}: the upgrade sets it (each connection its own key; subprotocols with the protocols offered; permessage-deflate with deflate)"
                ),
            });
        }
        let mut b = crate::RequestBuilder::native(target, "GET", true);
        for (n, v) in headers {
            b = b.set_header(n, v);
        }
        b = b
            .set_header("Upgrade", "websocket")
            .set_header("Connection", "Upgrade")
            .set_header("Sec-WebSocket-Version", "13");
        if !self.protocols.is_empty() {
            b = b.set_header("Sec-WebSocket-Protocol", &self.protocols.join(", "));
        }
        if self.deflate {
            let (offer, _) =
                stampede_wire::ws::deflate::offer_with(&self.deflate_params).map_err(|reason| {
                    SpecError::Invalid {
                        field: "ws",
                        reason: format!("deflate_params: {reason}"),
                    }
                })?;
            b = b.set_header("Sec-WebSocket-Extensions", &offer);
        }
        b.build()
    }

    /// Whether answers are known by what they hold ([`WsLoad::expect`] or
    /// [`WsLoad::expects`]).
    #[inline]
    pub fn expecting(&self) -> bool {
        self.expect.is_some() || !self.expects.is_empty()
    }

    /// Why `params` cannot be asked in permessage-deflate's offer
    /// ([`WsLoad::deflate_params`]), if they cannot.
    pub fn check_deflate_params(params: &str) -> Result<(), stampede_wire::ws::deflate::BadParams> {
        stampede_wire::ws::deflate::offer_with(params).map(|_| ())
    }

    /// A text message `text`, nothing offered, the default limit.
    pub fn text(text: &str) -> WsLoad {
        WsLoad {
            message: Arc::from(text.as_bytes()),
            messages: Vec::new(),
            expect: None,
            expects: Vec::new(),
            binary: false,
            protocols: Vec::new(),
            max_message: WsLoad::MAX_MESSAGE,
            ping: false,
            stamp: false,
            deflate: false,
            deflate_params: String::new(),
        }
    }
}
