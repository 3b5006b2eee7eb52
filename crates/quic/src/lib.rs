//! QUIC and HTTP/3's connection-wide streams for stampede's event loops, both ends.
//!
//! QUIC itself is quinn-proto's: a deterministic state machine that takes datagrams
//! and the time, and gives datagrams to send and the instant it next needs to be
//! woken. Nothing here owns a socket or a thread; the client's worker and the
//! server's loop move the datagrams and keep the timers on their own waits. What this
//! crate adds is what both ends of HTTP/3 share: the QUIC configurations made from
//! the TLS ones stampede already builds ([`client_config`], [`server_config`]), a
//! client's endpoint paired with its one connection ([`Client`]), HTTP/3's
//! unidirectional streams — the control stream and QPACK's encoder and decoder
//! streams, each end's own and the peer's ([`Session`]) — writes that wait for a
//! stream's flow control ([`Outbox`]), and the socket's side of the datagrams with
//! the kernel's offloads ([`udp`]).

pub mod congestion;
pub mod session;
pub mod udp;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use quinn_proto;
use quinn_proto::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use quinn_proto::{
    Connection, ConnectionHandle, DatagramEvent, Endpoint, EndpointConfig, StreamId,
    TransportConfig, VarInt,
};
pub use session::{read_stream, Outbox, Read, Session};

/// HTTP/3's ALPN protocol identifier.
pub const ALPN: &[u8] = b"h3";

/// Why QUIC could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum QuicError {
    #[error("HTTP/3 needs TLS 1.3, which the TLS settings leave out")]
    NoTls13,
    #[error("a UDP payload size of {0} is outside 1200..=65527")]
    PayloadSize(u16),
    #[error("an idle timeout past QUIC's range")]
    IdleTimeout,
    #[error("{0}")]
    Connect(#[from] quinn_proto::ConnectError),
}

/// The most a datagram stampede sends or takes may hold (IPv4's UDP payload limit).
pub const MAX_DATAGRAM: usize = 65_527;

/// What either end may tune of its QUIC transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transport {
    /// Request streams the peer may have open at once (the server's offer; a client
    /// accepts none).
    pub streams: u32,
    /// The largest UDP payload this end sends (1200 to 65527): QUIC's path MTU
    /// discovery searches no higher.
    pub max_udp_payload: u16,
    /// A connection with nothing received for this long is over.
    pub idle_timeout: Duration,
    /// Several datagrams per send where the kernel offers it (see [`udp`]): QUIC
    /// then readies up to [`udp::MAX_SEGMENTS`] at a time.
    pub gso: bool,
}

impl Default for Transport {
    fn default() -> Transport {
        Transport {
            streams: 100,
            max_udp_payload: 1452,
            idle_timeout: Duration::from_secs(30),
            gso: true,
        }
    }
}

impl Transport {
    /// quinn-proto's transport settings for one end: the client opens request
    /// streams and accepts only unidirectional ones (control and QPACK's, and a
    /// few of the peer's reserved ones).
    fn config(&self, server: bool) -> Result<TransportConfig, QuicError> {
        if !(1200..=MAX_DATAGRAM as u32).contains(&(self.max_udp_payload as u32)) {
            return Err(QuicError::PayloadSize(self.max_udp_payload));
        }
        let mut t = TransportConfig::default();
        t.max_concurrent_bidi_streams(VarInt::from_u32(if server { self.streams } else { 0 }))
            .max_concurrent_uni_streams(VarInt::from_u32(16))
            .initial_mtu(1200.min(self.max_udp_payload))
            .enable_segmentation_offload(self.gso);
        let mut mtu = quinn_proto::MtuDiscoveryConfig::default();
        mtu.upper_bound(self.max_udp_payload);
        t.mtu_discovery_config(Some(mtu));
        let idle = quinn_proto::IdleTimeout::try_from(self.idle_timeout)
            .map_err(|_| QuicError::IdleTimeout)?;
        t.max_idle_timeout(Some(idle));
        Ok(t)
    }
}

/// A client's QUIC configuration from its TLS one (TLS 1.3 must be among its
/// versions): ALPN `h3`, early data allowed where a resumed session offers it. With
/// `limited`, the connections made with it add the time congestion control held them
/// back there ([`congestion`]).
pub fn client_config(
    tls: &rustls::ClientConfig,
    transport: &Transport,
    limited: Option<Arc<congestion::LimitedTime>>,
) -> Result<quinn_proto::ClientConfig, QuicError> {
    let mut tls = tls.clone();
    tls.alpn_protocols = vec![ALPN.to_vec()];
    tls.enable_early_data = true;
    let tls = Arc::new(tls);
    // QUIC's TLS is 1.3 alone: a trial session says whether the settings allow it
    // (quinn-proto's own session start would fail where no error can be returned).
    let name = rustls::pki_types::ServerName::try_from("localhost").expect("a valid name");
    rustls::quic::ClientConnection::new(tls.clone(), rustls::quic::Version::V1, name, Vec::new())
        .map_err(|_| QuicError::NoTls13)?;
    let crypto = QuicClientConfig::try_from(tls).map_err(|_| QuicError::NoTls13)?;
    let mut c = quinn_proto::ClientConfig::new(Arc::new(crypto));
    let mut t = transport.config(false)?;
    if let Some(total) = limited {
        t.congestion_controller_factory(Arc::new(congestion::Watching::new(total)));
    }
    c.transport_config(Arc::new(t));
    Ok(c)
}

/// A server's QUIC configuration from its TLS one: ALPN `h3` only, 0-RTT accepted.
pub fn server_config(
    tls: &rustls::ServerConfig,
    transport: &Transport,
) -> Result<quinn_proto::ServerConfig, QuicError> {
    let mut tls = tls.clone();
    tls.alpn_protocols = vec![ALPN.to_vec()];
    tls.max_early_data_size = u32::MAX;
    let tls = Arc::new(tls);
    rustls::quic::ServerConnection::new(tls.clone(), rustls::quic::Version::V1, Vec::new())
        .map_err(|_| QuicError::NoTls13)?;
    let crypto = QuicServerConfig::try_from(tls).map_err(|_| QuicError::NoTls13)?;
    let mut s = quinn_proto::ServerConfig::with_crypto(Arc::new(crypto));
    s.transport_config(Arc::new(transport.config(true)?));
    Ok(s)
}

/// An endpoint configuration whose datagrams are within `transport`'s payload size.
pub fn endpoint_config(transport: &Transport) -> Arc<EndpointConfig> {
    let mut e = EndpointConfig::default();
    // Within 1200..=65527, checked by `Transport::config` before any endpoint exists.
    let _ = e.max_udp_payload_size(transport.max_udp_payload.max(1200));
    Arc::new(e)
}

/// A client's endpoint and its one connection (a connection has a socket of its own,
/// so an endpoint per connection: what comes in is that connection's or nothing).
pub struct Client {
    endpoint: Endpoint,
    handle: ConnectionHandle,
    /// The connection, for its streams and figures.
    pub conn: Connection,
    /// Where the connection's datagrams go.
    pub remote: SocketAddr,
    /// Retry packets the server sent (it asked this end to prove its address).
    pub retries: u32,
}

/// Whether a datagram is a QUIC version 1 Retry packet (RFC 9000 §17.2.5: a long
/// header of type 3; a Retry is never coalesced with other packets).
pub fn is_retry(datagram: &[u8]) -> bool {
    datagram.len() > 5
        && datagram[0] & 0x80 != 0
        && (datagram[0] >> 4) & 0x3 == 3
        && datagram[1..5] == [0, 0, 0, 1]
}

impl Client {
    /// Starts a connection to `remote` (`server_name` for SNI and the certificate).
    pub fn connect(
        endpoint: Arc<EndpointConfig>,
        config: quinn_proto::ClientConfig,
        remote: SocketAddr,
        server_name: &str,
        now: Instant,
    ) -> Result<Client, QuicError> {
        let mut endpoint = Endpoint::new(endpoint, None, false, None);
        let (handle, conn) = endpoint.connect(now, config, remote, server_name)?;
        Ok(Client {
            endpoint,
            handle,
            conn,
            remote,
            retries: 0,
        })
    }

    /// Takes a datagram that came from the server (with the ECN bits it carried).
    /// A datagram that is not the connection's (a stateless reset for another,
    /// garbage) is dropped by the endpoint; what it would answer to one is not sent
    /// (a client never answers stray packets).
    pub fn handle(
        &mut self,
        now: Instant,
        data: bytes::BytesMut,
        ecn: Option<quinn_proto::EcnCodepoint>,
        scratch: &mut Vec<u8>,
    ) {
        scratch.clear();
        if is_retry(&data) {
            self.retries += 1;
        }
        if let Some(DatagramEvent::ConnectionEvent(_, ev)) =
            self.endpoint
                .handle(now, self.remote, None, ecn, data, scratch)
        {
            self.conn.handle_event(ev);
        }
        self.endpoint_events();
    }

    /// The connection's timer fell due.
    pub fn timeout(&mut self, now: Instant) {
        self.conn.handle_timeout(now);
        self.endpoint_events();
    }

    /// Passes what the connection tells its endpoint (new connection IDs, retired
    /// ones, the end) and the endpoint's answers back.
    pub fn endpoint_events(&mut self) {
        while let Some(ev) = self.conn.poll_endpoint_events() {
            if let Some(back) = self.endpoint.handle_event(self.handle, ev) {
                self.conn.handle_event(back);
            }
        }
    }
}

/// Stream IDs as the engine numbers requests: a client-initiated bidirectional
/// stream's index plus one (never 0, which means no stream yet).
pub fn request_number(id: StreamId) -> u32 {
    (id.index() % u64::from(u32::MAX)) as u32 + 1
}
