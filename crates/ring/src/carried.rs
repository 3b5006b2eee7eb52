//! A socket on either backend, for the layers that sit on a socket rather than on a
//! connection's transport — TLS above all: its records are read from and written to
//! a [`Carried`] socket, which is a socket of the thread's epoll instance (read and
//! written with a system call each) until it is adopted by the thread's ring, and one
//! of the ring's from then on. The layer above keeps one type and one code path.

use std::io;
use std::os::fd::OwnedFd;

use crate::Socket;

/// A socket watched by the thread's epoll instance, or one adopted by its ring.
pub enum Carried<S> {
    /// Watched by epoll; each read and write is a system call on `S`.
    Epoll(S),
    /// Adopted by the thread's ring: reads take from its inbox, writes queue sends.
    Ring(Socket),
}

impl<S> Carried<S> {
    /// The epoll socket, while it is one.
    pub fn epoll(&mut self) -> Option<&mut S> {
        match self {
            Carried::Epoll(s) => Some(s),
            Carried::Ring(_) => None,
        }
    }

    /// The epoll socket, while it is one (shared).
    pub fn epoll_ref(&self) -> Option<&S> {
        match self {
            Carried::Epoll(s) => Some(s),
            Carried::Ring(_) => None,
        }
    }

    /// Whether the ring carries it.
    pub fn on_ring(&self) -> bool {
        matches!(self, Carried::Ring(_))
    }

    /// Hands an epoll socket to the thread's ring (see [`Socket::adopt`]; `into_fd`
    /// and `from_fd` move its descriptor out of `S` and back); a socket already on
    /// the ring, or one a thread without a ring gives back, stays as it is.
    pub fn onto_ring(
        self,
        token: usize,
        watched: bool,
        into_fd: impl FnOnce(S) -> OwnedFd,
        from_fd: impl FnOnce(OwnedFd) -> S,
    ) -> Carried<S> {
        match self {
            Carried::Epoll(s) => match Socket::adopt(into_fd(s), token, watched) {
                Ok(r) => Carried::Ring(r),
                Err(fd) => Carried::Epoll(from_fd(fd)),
            },
            ring => ring,
        }
    }
}

impl<S: io::Read> io::Read for Carried<S> {
    #[inline]
    fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        match self {
            Carried::Epoll(s) => s.read(b),
            Carried::Ring(s) => s.read(b),
        }
    }
}

impl<S: io::Write> io::Write for Carried<S> {
    #[inline]
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        match self {
            Carried::Epoll(s) => s.write(b),
            Carried::Ring(s) => s.write(b),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Carried::Epoll(s) => s.flush(),
            Carried::Ring(_) => Ok(()),
        }
    }
}
