//! The engine's I/O pieces below the protocols: the connection's transport
//! ([`Stream`]: TCP, Unix socket or TLS, one `Read`/`Write` for all three) and the
//! worker's precise timer ([`TimerFd`]).
//!
//! The protocol state machines (`h1`, `h2`) never see these: the worker moves bytes
//! between a `Stream` and a connection's protocol, and arms the timer for the next
//! instant something is due.

use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::time::Duration;

use mio::net::{TcpStream, UnixStream};
use mio::{Interest, Registry, Token};
use stampede_tls::rustls::ClientConfig;
use stampede_tls::TlsStream;

use crate::net::SocketOptions;
use crate::target::Address;

/// A client connection's transport: TCP, a Unix socket, or TLS over TCP.
pub(crate) enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl Stream {
    /// Starts a connect with the socket options; with `tls`, the handshake starts once
    /// the socket connects. Through a proxy tunnel (`tunnel`) the stream stays plain
    /// TCP until the proxy has answered CONNECT (see [`Stream::start_tls`]).
    pub(crate) fn connect(
        addr: &Address,
        tls: Option<(&Arc<ClientConfig>, &str)>,
        opts: &SocketOptions,
        tunnel: bool,
    ) -> io::Result<Stream> {
        Ok(match addr {
            Address::Tcp(a) => {
                let s = crate::net::connect_tcp(a[0], opts)?;
                s.set_nodelay(true)?;
                match tls {
                    Some((config, host)) if !tunnel => Stream::Tcp(s).start_tls(config, host)?,
                    _ => Stream::Tcp(s),
                }
            }
            Address::Unix(p) => {
                let s = UnixStream::connect(p)?;
                crate::net::apply_unix(&s, opts)?;
                Stream::Unix(s)
            }
        })
    }

    /// Turns a TCP stream into TLS to `host`: at once for https, or once a proxy's
    /// tunnel has opened (the socket's registration with the poll is the descriptor's
    /// and stays).
    pub(crate) fn start_tls(self, config: &Arc<ClientConfig>, host: &str) -> io::Result<Stream> {
        match self {
            Stream::Tcp(s) => Ok(Stream::Tls(Box::new(TlsStream::client(
                s,
                config.clone(),
                host,
            )?))),
            other => Ok(other),
        }
    }

    /// The TLS stream, if this is one.
    pub(crate) fn tls(&mut self) -> Option<&mut TlsStream<TcpStream>> {
        match self {
            Stream::Tls(t) => Some(t),
            _ => None,
        }
    }

    /// Ok(true) once connected, Ok(false) while the connect is still under way.
    pub(crate) fn connected(&self) -> io::Result<bool> {
        let (err, peer) = match self {
            Stream::Tcp(s) => (s.take_error()?, s.peer_addr().map(|_| ())),
            Stream::Unix(s) => (s.take_error()?, s.peer_addr().map(|_| ())),
            Stream::Tls(t) => (t.io.take_error()?, t.io.peer_addr().map(|_| ())),
        };
        if let Some(e) = err {
            return Err(e);
        }
        match peer {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(false),
            Err(e) => Err(e),
        }
    }

    pub(crate) fn register(&mut self, r: &Registry, t: Token) -> io::Result<()> {
        let i = Interest::READABLE | Interest::WRITABLE;
        match self {
            Stream::Tcp(s) => r.register(s, t, i),
            Stream::Unix(s) => r.register(s, t, i),
            Stream::Tls(s) => r.register(&mut s.io, t, i),
        }
    }

    pub(crate) fn deregister(&mut self, r: &Registry) {
        let _ = match self {
            Stream::Tcp(s) => r.deregister(s),
            Stream::Unix(s) => r.deregister(s),
            Stream::Tls(s) => r.deregister(&mut s.io),
        };
    }

    pub(crate) fn shutdown(&mut self) {
        let _ = match self {
            Stream::Tcp(s) => s.shutdown(Shutdown::Both),
            Stream::Unix(s) => s.shutdown(Shutdown::Both),
            Stream::Tls(s) => {
                s.close_notify();
                s.io.shutdown(Shutdown::Both)
            }
        };
    }
}

impl Read for Stream {
    #[inline]
    fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(b),
            Stream::Unix(s) => s.read(b),
            Stream::Tls(s) => s.read(b),
        }
    }
}

impl Write for Stream {
    #[inline]
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(b),
            Stream::Unix(s) => s.write(b),
            Stream::Tls(s) => s.write(b),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A timerfd: wakes the poll at a precise instant (epoll's own timeout counts in
/// milliseconds).
pub(crate) struct TimerFd(OwnedFd);

impl TimerFd {
    /// A non-blocking monotonic timer; also asks the kernel to let this thread's
    /// timers fire 1 µs late at most rather than the default 50 µs.
    pub(crate) fn new() -> io::Result<TimerFd> {
        // SAFETY: timerfd_create takes no pointers; the result is checked below.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a descriptor just created and owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: PR_SET_TIMERSLACK takes plain integers. Failing only leaves the
        // default slack, which costs precision, not correctness, so it is not an error.
        let _ = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1u64, 0, 0, 0) };
        Ok(TimerFd(fd))
    }

    /// The descriptor, to register with the poll.
    pub(crate) fn raw(&self) -> RawFd {
        self.0.as_raw_fd()
    }

    /// Fires once after `after` (at least 1 µs).
    pub(crate) fn arm(&self, after: Duration) -> io::Result<()> {
        let after = after.max(Duration::from_micros(1));
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: after.as_secs() as libc::time_t,
                tv_nsec: after.subsec_nanos() as libc::c_long,
            },
        };
        // SAFETY: a descriptor this struct owns and a valid itimerspec; the old value
        // is not asked for (null).
        let r = unsafe { libc::timerfd_settime(self.raw(), 0, &spec, std::ptr::null_mut()) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Reads the expiry count so that the descriptor stops being readable.
    pub(crate) fn clear(&self) {
        let mut buf = [0u8; 8];
        // SAFETY: reads at most 8 bytes into an 8-byte buffer. EAGAIN (nothing
        // expired yet) is the only expected failure and means there is nothing to clear.
        let _ = unsafe { libc::read(self.raw(), buf.as_mut_ptr().cast(), 8) };
    }
}
