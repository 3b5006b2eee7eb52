//! TLS for stampede's non-blocking event loops, on rustls with the ring provider.
//!
//! The load engine and the reference server both run their own edge-triggered epoll
//! loops, so neither can use an async TLS wrapper. [`TlsStream`] puts a rustls
//! connection over a non-blocking socket and keeps a plain socket's contract: `read`
//! returns fewer bytes than asked only when both the socket and rustls are drained
//! (so "a short read means drained" still holds), `write` takes plaintext and pushes
//! ciphertext until the socket would block, and [`TlsStream::flush_pending`] finishes
//! the push on the next writable edge. Handshakes happen inside those calls.
//!
//! [`client_config`] builds the client side (system roots or a CA file, `insecure`,
//! client certificates for mutual TLS, TLS 1.2 or 1.3 only, ALPN, resumption on or
//! off); [`server_config`] the server side from PEM files or a certificate generated
//! on the spot ([`self_signed`]). [`classify`] tells certificate failures from other
//! TLS failures so that a load run can count them by kind.
#![forbid(unsafe_code)]

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use rustls;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::Resumption;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::ServerSessionMemoryCache;
use rustls::{
    AlertDescription, ClientConfig, ClientConnection, Connection, DigitallySignedStruct,
    RootCertStore, ServerConfig, ServerConnection, SignatureScheme, SupportedProtocolVersion,
};

/// A configuration that could not be built; the message names the file or option.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A certificate or key file could not be read or parsed.
    #[error("{path}: {reason}")]
    File {
        /// The file as given.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The options do not make a valid configuration.
    #[error("{0}")]
    Config(String),
}

/// Which TLS versions a client offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Versions {
    /// TLS 1.3 and 1.2, 1.3 preferred.
    #[default]
    Both,
    /// TLS 1.2 only.
    Tls12,
    /// TLS 1.3 only.
    Tls13,
}

static ONLY_12: [&SupportedProtocolVersion; 1] = [&rustls::version::TLS12];
static ONLY_13: [&SupportedProtocolVersion; 1] = [&rustls::version::TLS13];

impl Versions {
    fn list(self) -> &'static [&'static SupportedProtocolVersion] {
        match self {
            Versions::Both => rustls::DEFAULT_VERSIONS,
            Versions::Tls12 => &ONLY_12,
            Versions::Tls13 => &ONLY_13,
        }
    }
}

/// How a client verifies the server and presents itself.
#[derive(Debug, Clone, Default)]
pub struct ClientOptions {
    /// Accept any server certificate (handshake signatures are still checked).
    pub insecure: bool,
    /// Trust only the certificates in this PEM file instead of the system's roots.
    pub ca_file: Option<PathBuf>,
    /// Client certificate chain (PEM) for mutual TLS; needs `key_file`.
    pub cert_file: Option<PathBuf>,
    /// The client certificate's private key (PEM).
    pub key_file: Option<PathBuf>,
    /// Resume sessions on new connections (tickets or session IDs); off by default so
    /// that every new connection pays a full handshake.
    pub resume: bool,
    /// Versions offered.
    pub versions: Versions,
    /// ALPN protocols offered, most wanted first (e.g. `b"http/1.1"`).
    pub alpn: Vec<Vec<u8>>,
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn file_err(path: &Path, reason: impl ToString) -> TlsError {
    TlsError::File {
        path: path.display().to_string(),
        reason: reason.to_string(),
    }
}

/// Every certificate in a PEM file; an error if there is none.
pub fn load_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| file_err(path, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| file_err(path, e))?;
    if certs.is_empty() {
        return Err(file_err(path, "no CERTIFICATE block in the file"));
    }
    Ok(certs)
}

/// The first private key (PKCS#8, PKCS#1 or SEC1) in a PEM file.
pub fn load_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| file_err(path, e))
}

/// The ALPN protocol list an HTTP endpoint offers, most preferred first: `h2` then
/// `http/1.1` when it speaks HTTP/2, `http/1.1` alone when not.
pub fn alpn(http2: bool) -> Vec<Vec<u8>> {
    if http2 {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    } else {
        vec![b"http/1.1".to_vec()]
    }
}

/// A client configuration from the options.
pub fn client_config(o: &ClientOptions) -> Result<Arc<ClientConfig>, TlsError> {
    let provider = provider();
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(o.versions.list())
        .map_err(|e| TlsError::Config(e.to_string()))?;
    let builder = if o.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider)))
    } else {
        let mut roots = RootCertStore::empty();
        match &o.ca_file {
            Some(f) => {
                for c in load_certs(f)? {
                    roots.add(c).map_err(|e| file_err(f, e))?;
                }
            }
            None => {
                let found = rustls_native_certs::load_native_certs();
                let (added, _) = roots.add_parsable_certificates(found.certs);
                if added == 0 {
                    return Err(TlsError::Config(
                        "no trusted root certificates found on this system; give a CA file (--cacert) or --insecure".into(),
                    ));
                }
            }
        }
        builder.with_root_certificates(roots)
    };
    let mut cfg = match (&o.cert_file, &o.key_file) {
        (Some(c), Some(k)) => builder
            .with_client_auth_cert(load_certs(c)?, load_key(k)?)
            .map_err(|e| TlsError::Config(format!("client certificate: {e}")))?,
        (None, None) => builder.with_no_client_auth(),
        _ => {
            return Err(TlsError::Config(
                "a client certificate needs both the certificate and its key".into(),
            ))
        }
    };
    cfg.alpn_protocols = o.alpn.clone();
    cfg.resumption = if o.resume {
        Resumption::in_memory_sessions(4096)
    } else {
        Resumption::disabled()
    };
    Ok(Arc::new(cfg))
}

/// Where a server's certificate comes from.
#[derive(Debug, Clone)]
pub enum ServerCert {
    /// A certificate chain and its key, PEM files.
    Files {
        /// The chain, leaf first.
        cert: PathBuf,
        /// The private key.
        key: PathBuf,
    },
    /// A certificate generated now, valid for these names (DNS names or IP addresses).
    SelfSigned(Vec<String>),
}

/// A self-signed certificate and its key for `names`, both PEM.
pub fn self_signed(names: &[String]) -> Result<(String, String), TlsError> {
    let ck = rcgen::generate_simple_self_signed(names.to_vec())
        .map_err(|e| TlsError::Config(format!("generating a certificate: {e}")))?;
    Ok((ck.cert.pem(), ck.signing_key.serialize_pem()))
}

/// A server configuration offering `alpn` (most preferred first). With `client_ca`,
/// clients must present a certificate issued by a CA in that PEM file (mutual TLS).
pub fn server_config(
    c: &ServerCert,
    alpn: Vec<Vec<u8>>,
    client_ca: Option<&Path>,
) -> Result<Arc<ServerConfig>, TlsError> {
    let (certs, key) = match c {
        ServerCert::Files { cert, key } => (load_certs(cert)?, load_key(key)?),
        ServerCert::SelfSigned(names) => {
            let ck = rcgen::generate_simple_self_signed(names.clone())
                .map_err(|e| TlsError::Config(format!("generating a certificate: {e}")))?;
            let key = PrivateKeyDer::try_from(ck.signing_key.serialize_der())
                .map_err(|e| TlsError::Config(e.to_string()))?;
            (vec![ck.cert.der().clone()], key)
        }
    };
    let builder = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?;
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(f) => {
            let mut roots = RootCertStore::empty();
            for c in load_certs(f)? {
                roots.add(c).map_err(|e| file_err(f, e))?;
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider(),
            )
            .build()
            .map_err(|e| file_err(f, e))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut cfg = builder
        .with_single_cert(certs, key)
        .map_err(|e| TlsError::Config(format!("certificate and key: {e}")))?;
    cfg.alpn_protocols = alpn;
    cfg.session_storage = ServerSessionMemoryCache::new(16_384);
    Ok(Arc::new(cfg))
}

/// Accepts any certificate; still checks that the server owns the key it presents.
#[derive(Debug)]
struct AcceptAnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The kind of a TLS failure, for counting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The peer's certificate was refused, or ours was (unknown issuer, expired,
    /// wrong name, none presented where one is required).
    Certificate,
    /// Any other TLS failure: no common version or cipher, a bad record, an alert.
    Other,
}

/// Whether an I/O error from a [`TlsStream`] is a TLS failure, and of which kind.
pub fn classify(e: &io::Error) -> Option<Failure> {
    let tls = e.get_ref()?.downcast_ref::<rustls::Error>()?;
    Some(match tls {
        rustls::Error::InvalidCertificate(_)
        | rustls::Error::NoCertificatesPresented
        | rustls::Error::AlertReceived(
            AlertDescription::BadCertificate
            | AlertDescription::UnsupportedCertificate
            | AlertDescription::CertificateRevoked
            | AlertDescription::CertificateExpired
            | AlertDescription::CertificateUnknown
            | AlertDescription::UnknownCA
            | AlertDescription::CertificateRequired,
        ) => Failure::Certificate,
        _ => Failure::Other,
    })
}

/// Whether a TLS failure says the peer does not speak TLS at all: its first bytes
/// were no TLS record (a plaintext HTTP or h2c server on the port).
pub fn peer_not_tls(e: &io::Error) -> bool {
    let Some(tls) = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) else {
        return false;
    };
    matches!(
        tls,
        rustls::Error::InvalidMessage(
            rustls::InvalidMessage::InvalidContentType
                | rustls::InvalidMessage::UnknownProtocolVersion
        )
    )
}

/// A rustls connection over a non-blocking socket, with a plain socket's contract.
pub struct TlsStream<S> {
    /// The socket.
    pub io: S,
    /// The TLS state.
    pub conn: Connection,
    eof: bool,
}

impl<S> TlsStream<S> {
    /// The same session over another carrier of the same bytes (a socket moved to
    /// another kernel interface mid-connection): nothing rustls holds is touched.
    pub fn map_io<T>(self, f: impl FnOnce(S) -> T) -> TlsStream<T> {
        TlsStream {
            io: f(self.io),
            conn: self.conn,
            eof: self.eof,
        }
    }
}

impl<S: Read + Write> TlsStream<S> {
    /// A client connection to `host` (a DNS name, sent as SNI, or an IP address).
    pub fn client(io: S, config: Arc<ClientConfig>, host: &str) -> io::Result<TlsStream<S>> {
        let name = ServerName::try_from(host.to_string())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let conn = ClientConnection::new(config, name).map_err(io::Error::other)?;
        Ok(TlsStream {
            io,
            conn: conn.into(),
            eof: false,
        })
    }

    /// A server connection.
    pub fn server(io: S, config: Arc<ServerConfig>) -> io::Result<TlsStream<S>> {
        let conn = ServerConnection::new(config).map_err(io::Error::other)?;
        Ok(TlsStream {
            io,
            conn: conn.into(),
            eof: false,
        })
    }

    /// Whether the handshake is still under way.
    pub fn is_handshaking(&self) -> bool {
        self.conn.is_handshaking()
    }

    /// The protocol ALPN settled on, if any.
    pub fn alpn(&self) -> Option<&[u8]> {
        self.conn.alpn_protocol()
    }

    /// Whether ciphertext is waiting for the socket.
    pub fn wants_write(&self) -> bool {
        self.conn.wants_write()
    }

    /// Writes buffered ciphertext; `Ok(true)` once none is left, `Ok(false)` when the
    /// socket would block first (call again on the next writable edge).
    pub fn flush_pending(&mut self) -> io::Result<bool> {
        while self.conn.wants_write() {
            match self.conn.write_tls(&mut self.io) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// Completes the handshake on a blocking socket. Errors are classified by
    /// [`classify`] like those of `read`.
    pub fn handshake(&mut self) -> io::Result<()> {
        while self.conn.is_handshaking() {
            match self.conn.complete_io(&mut self.io) {
                Ok((0, 0)) if self.conn.is_handshaking() => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the server closed the connection during the TLS handshake",
                    ))
                }
                Ok(_) => {}
                Err(e) => {
                    let _ = self.conn.write_tls(&mut self.io);
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Queues a close_notify alert and pushes what the socket takes.
    pub fn close_notify(&mut self) {
        self.conn.send_close_notify();
        let _ = self.flush_pending();
    }
}

impl<S: Read + Write> Read for TlsStream<S> {
    /// Reads plaintext. Returns less than `buf.len()` only when the socket and rustls
    /// are both drained or the stream ended; `Ok(0)` is the end of the stream (with or
    /// without close_notify: HTTP frames its own messages). A socket read that comes
    /// back short counts as drained, so with plaintext in hand the socket is not read
    /// again: that saves an EAGAIN per call on a non-blocking socket, and on a blocking
    /// one it is what keeps a read from waiting for data that is not coming.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut n = 0;
        let mut drained = false;
        loop {
            while n < buf.len() {
                match self.conn.reader().read(&mut buf[n..]) {
                    Ok(0) => return Ok(n),
                    Ok(k) => n += k,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(n),
                    // What was read goes out first; the error comes again on the next call.
                    Err(_) if n > 0 => return Ok(n),
                    Err(e) => return Err(e),
                }
            }
            if n == buf.len() || self.eof || (drained && n > 0) {
                return Ok(n);
            }
            let mut socket = ShortRead {
                io: &mut self.io,
                short: false,
            };
            match self.conn.read_tls(&mut socket) {
                Ok(0) => self.eof = true,
                Ok(_) => drained = socket.short,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if n > 0 && e.kind() == io::ErrorKind::WouldBlock => return Ok(n),
                Err(e) => return Err(e),
            }
            if let Err(e) = self.conn.process_new_packets() {
                // Tell the peer why (the alert rustls queued), then report.
                let _ = self.conn.write_tls(&mut self.io);
                return Err(io::Error::new(io::ErrorKind::InvalidData, e));
            }
            // Handshake messages and key updates go out at once.
            self.flush_pending()?;
        }
    }
}

/// A reader that notes whether a read came back with less than was asked for.
struct ShortRead<'a, S> {
    io: &'a mut S,
    short: bool,
}

impl<S: Read> Read for ShortRead<'_, S> {
    fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        let n = self.io.read(b)?;
        self.short = n < b.len();
        Ok(n)
    }
}

impl<S: Read + Write> Write for TlsStream<S> {
    /// Takes plaintext (all of it unless rustls's buffer is full) and pushes ciphertext
    /// until the socket would block. Before the handshake ends the plaintext waits in
    /// rustls and goes out as soon as it can.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.conn.writer().write(buf)?;
        self.flush_pending()?;
        if n == 0 && !buf.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.flush_pending().map(|_| ())
    }
}

#[cfg(test)]
mod tests;
