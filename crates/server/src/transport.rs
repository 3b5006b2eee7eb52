//! A server connection's transport: plain TCP (on epoll, or carried by the thread's
//! io_uring ring), or TLS over either, behind one `Read` and `Write`. The protocol
//! state machines (`h1`, `h2`) never see it.

use std::io::{self, Read, Write};

use mio::net::TcpStream;
use stampede_ring::Carried;
use stampede_tls::TlsStream;

/// A connection's transport: plain TCP, or TLS over a TCP socket on either backend.
pub(crate) enum Io {
    Plain(TcpStream),
    Tls(Box<TlsStream<Carried<TcpStream>>>),
    /// Plain TCP whose sends and receives go through the thread's io_uring ring.
    Ring(stampede_ring::Socket),
}

impl Io {
    /// The socket registered with the loop's epoll instance (none on io_uring).
    pub(crate) fn socket(&mut self) -> Option<&mut TcpStream> {
        match self {
            Io::Plain(s) => Some(s),
            Io::Tls(t) => t.io.epoll(),
            Io::Ring(_) => None,
        }
    }

    /// Whether TLS output is still waiting for the socket.
    pub(crate) fn wants_write(&self) -> bool {
        matches!(self, Io::Tls(t) if t.wants_write())
    }

    /// Pushes pending TLS output; an error means the connection is gone.
    pub(crate) fn flush_pending(&mut self) -> io::Result<()> {
        match self {
            Io::Plain(_) | Io::Ring(_) => Ok(()),
            Io::Tls(t) => t.flush_pending().map(|_| ()),
        }
    }

    /// Gives up on a client that does not read: output still waiting (in the
    /// process on io_uring, in the kernel on epoll) is dropped and the close that
    /// follows resets the connection.
    pub(crate) fn abort(&mut self) {
        use std::os::fd::AsRawFd;
        match self {
            Io::Ring(s) => s.abort(),
            Io::Tls(t) => match &mut t.io {
                Carried::Ring(s) => s.abort(),
                other => {
                    if let Some(s) = other.epoll() {
                        stampede_ring::linger_zero(s.as_raw_fd());
                    }
                }
            },
            Io::Plain(s) => stampede_ring::linger_zero(s.as_raw_fd()),
        }
    }

    /// Ends our side: close_notify first for TLS.
    pub(crate) fn shutdown_write(&mut self) {
        if let Io::Tls(t) = self {
            t.close_notify();
        }
        match self {
            Io::Ring(s) => s.shutdown(std::net::Shutdown::Write),
            Io::Tls(t) if t.io.on_ring() => {
                if let Carried::Ring(s) = &mut t.io {
                    s.shutdown(std::net::Shutdown::Write)
                }
            }
            _ => {
                if let Some(s) = self.socket() {
                    let _ = s.shutdown(std::net::Shutdown::Write);
                }
            }
        }
    }
}

impl Read for Io {
    #[inline]
    fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        match self {
            Io::Plain(s) => s.read(b),
            Io::Tls(t) => t.read(b),
            Io::Ring(s) => s.read(b),
        }
    }
}

impl Write for Io {
    #[inline]
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        match self {
            Io::Plain(s) => s.write(b),
            Io::Tls(t) => t.write(b),
            Io::Ring(s) => s.write(b),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        self.flush_pending()
    }
}
