//! The run's protocol at the connection level: what each new connection starts
//! speaking, what it becomes once its transport is open (QUIC's connection on a UDP
//! socket) or once TLS's ALPN has chosen, and what every connection of a thread
//! shares (QUIC's endpoint and client configuration).
//!
//! A worker makes one [`Connector`] from the run's [`Config`] and asks it for every
//! connection's protocol value; it never builds a [`Proto`] variant itself, so a new
//! protocol is a variant of [`crate::spec::config::Protocol`], its connection type,
//! and its arms here and in [`Proto`].

use std::time::Instant;

use crate::error::ErrorKind;
use crate::proto::h2::H2Conn;
use crate::proto::h3::H3Conn;
use crate::proto::Proto;
use crate::spec::config::{Config, Protocol};

/// What every HTTP/3 connection of a thread is made with.
struct Quic {
    endpoint: std::sync::Arc<quinn_proto::EndpointConfig>,
    config: quinn_proto::ClientConfig,
    /// The QPACK table the server may fill.
    table: usize,
    /// Where the connections add the time congestion control held them back.
    limited: std::sync::Arc<stampede_quic::congestion::LimitedTime>,
}

impl Quic {
    /// From the run's HTTP/3 settings and TLS (checked when it was planned).
    fn new(cfg: &Config) -> Option<Quic> {
        let h3 = cfg.protocol.http3()?;
        let transport = h3.transport();
        let limited = std::sync::Arc::new(stampede_quic::congestion::LimitedTime::default());
        let config =
            stampede_quic::client_config(cfg.net.tls.as_ref()?, &transport, Some(limited.clone()))
                .ok()?;
        Some(Quic {
            limited,
            endpoint: stampede_quic::endpoint_config(&transport),
            config,
            table: h3.header_table as usize,
        })
    }
}

/// What TLS's ALPN choice did to a connection's protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Alpn {
    /// It speaks the protocol offered (HTTP/2) from now on: the requests queued get
    /// streams of it.
    Switched,
    /// It goes on as it was.
    Kept,
    /// The server preferred HTTP/1.1 to the HTTP/2 offered.
    FellBack,
}

/// Makes a thread's connections' protocol values.
pub(crate) struct Connector {
    protocol: Protocol,
    /// HTTP/1's framing of the run's one request (a HEAD's answer has no body).
    head_request: bool,
    keepalive: bool,
    tls: bool,
    /// HTTP/2 is spoken over TCP (plain, or a WebSocket over it).
    over_http2: bool,
    watch: Option<(crate::StreamMode, Option<crate::TokenCounter>)>,
    /// The run's request: a WebSocket's upgrade is made from it.
    request: Vec<u8>,
    quic: Option<Quic>,
    /// Each connection keeps its responses whole for the worker to read (cookies,
    /// redirects, scripts that read answers), whichever protocol it comes to speak.
    pub(crate) keep: bool,
}

impl Connector {
    /// For the run `cfg` describes.
    pub(crate) fn new(cfg: &Config) -> Connector {
        Connector {
            protocol: cfg.protocol.clone(),
            head_request: cfg.sends.request.is_head(),
            keepalive: cfg.size.keepalive,
            tls: cfg.net.tls.is_some(),
            over_http2: cfg.protocol.over_http2().is_some(),
            watch: cfg.watch.stream.map(|m| (m, cfg.watch.tokenizer.clone())),
            request: match cfg.protocol {
                Protocol::WebSocket { .. } => cfg.sends.request.bytes.clone(),
                _ => Vec::new(),
            },
            quic: Quic::new(cfg),
            keep: false,
        }
    }

    /// The protocol a new connection starts with: HTTP/2 from the first byte for
    /// h2c; WebSocket's upgrade for ws:// and wss:// (over HTTP/2 where asked);
    /// HTTP/1.1 otherwise, also over TLS while ALPN has not chosen, and over UDP until
    /// the socket is open ([`Connector::opened`]).
    pub(crate) fn fresh(&self) -> Proto {
        let h2c = match &self.protocol {
            Protocol::WebSocket { ws, h2 } => {
                // Upgraded with the run's request: its first bytes are the handshake
                // (over HTTP/2, the CONNECT made from it).
                let push = self.watch.as_ref().map(|w| w.0) == Some(crate::StreamMode::Messages);
                return Proto::Ws(Box::new(match h2 {
                    Some(_) => {
                        crate::proto::ws::WsClient::over_h2(ws, &self.request, push, self.tls)
                    }
                    None => crate::proto::ws::WsClient::new(ws, &self.request, push),
                }));
            }
            Protocol::Http2(settings) if !self.tls => Some(*settings),
            Protocol::Http1 | Protocol::Http2(_) | Protocol::Http3(_) => None,
        };
        let mut proto = Proto::new(h2c, self.head_request, self.keepalive);
        self.watch_on(&mut proto);
        proto
    }

    fn watch_on(&self, proto: &mut Proto) {
        if let Some((mode, counter)) = &self.watch {
            proto.watch(*mode, counter.clone());
        }
        if self.keep {
            proto.keep_responses();
        }
    }

    /// Whether connections go over UDP datagrams (QUIC) rather than a byte stream.
    pub(crate) fn datagrams(&self) -> bool {
        self.quic.is_some()
    }

    /// Whether the run's protocol keeps timers of its own (QUIC's loss, ack and idle
    /// timers): after each write a connection's next one goes on the worker's heap.
    /// Protocols without timers pay nothing a write.
    #[inline]
    pub(crate) fn timed(&self) -> bool {
        self.quic.is_some()
    }

    /// Whether TLS's ALPN chooses the protocol (HTTP/2 offered over TLS).
    pub(crate) fn alpn_decides(&self) -> bool {
        self.tls && self.over_http2
    }

    /// The connection's socket is open: a protocol with a handshake of its own over
    /// the socket (QUIC) begins it, to `peer` (`host` for TLS) sending `segments`
    /// datagrams a write. `Err` when it cannot begin.
    pub(crate) fn opened(
        &self,
        proto: &mut Proto,
        datagram_peer: Option<(std::net::SocketAddr, usize)>,
        host: &str,
        now: Instant,
    ) -> Result<(), ErrorKind> {
        let Some(q) = &self.quic else {
            return Ok(());
        };
        let (peer, segments) = datagram_peer.ok_or(ErrorKind::ConnectOther)?;
        let mut h3 = H3Conn::connect(
            q.endpoint.clone(),
            q.config.clone(),
            peer,
            host,
            q.table,
            now,
        )
        .map_err(|_| ErrorKind::ConnectOther)?;
        h3.set_segments(segments);
        *proto = Proto::H3(Box::new(h3));
        self.watch_on(proto);
        Ok(())
    }

    /// TLS's ALPN chose `h2` or not: a connection offered HTTP/2 speaks it from now on
    /// ([`Alpn::Switched`]), or HTTP/1.1 as the server prefers ([`Alpn::FellBack`]).
    /// A WebSocket over HTTP/2 fails where the server chose otherwise, as the
    /// upgrade's handshake: HTTP/2 is not spoken where TLS agreed on another protocol
    /// (RFC 9113 §3.2).
    pub(crate) fn alpn_chose(&self, proto: &mut Proto, h2: bool) -> Result<Alpn, ErrorKind> {
        match (&self.protocol, h2) {
            (Protocol::WebSocket { .. }, false) => Err(ErrorKind::WsHandshake),
            // It speaks HTTP/2 from its first byte: its preface goes now.
            (Protocol::WebSocket { .. }, true) => Ok(Alpn::Kept),
            (Protocol::Http2(settings), true) => {
                *proto = Proto::H2(Box::new(H2Conn::with(*settings)));
                self.watch_on(proto);
                Ok(Alpn::Switched)
            }
            (Protocol::Http2(_), false) => Ok(Alpn::FellBack),
            _ => Ok(Alpn::Kept),
        }
    }

    /// The connection's socket went: its protocol starts afresh for the next one
    /// (HTTP/1.1 keeps its buffers).
    pub(crate) fn reset(&self, proto: &mut Proto) {
        match proto {
            Proto::H1(h) if matches!(self.protocol, Protocol::Http1) => h.reset(),
            _ => *proto = self.fresh(),
        }
    }

    /// Requests one connection takes at once: `pipeline`, within the server's stream
    /// limit where requests have streams (HTTP/2's 100 assumed until it says, as RFC
    /// 9113 advises, and while TLS's ALPN has not yet chosen).
    #[inline]
    pub(crate) fn room(&self, proto: &Proto, pipeline: usize) -> usize {
        match proto {
            Proto::H2(h) => pipeline.min(h.stream_limit()),
            Proto::H1(_) if self.over_http2 => pipeline.min(crate::proto::h2::ASSUMED_MAX_STREAMS),
            // QUIC's stream limit holds requests back in their queue, not here;
            // WebSocket's messages in flight are the pipeline's.
            Proto::H1(_) | Proto::H3(_) | Proto::Ws(_) => pipeline,
        }
    }

    /// The time congestion control held the thread's QUIC connections back, µs.
    pub(crate) fn congestion_limited_us(&self) -> Option<u64> {
        self.quic.as_ref().map(|q| q.limited.micros())
    }
}
