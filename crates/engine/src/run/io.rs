//! The engine's I/O pieces below the protocols: the connection's transport
//! ([`Stream`]: TCP, Unix socket, TLS, or a connected UDP socket for QUIC, one
//! `Read`/`Write` for all four; QUIC's socket also sends several datagrams a call
//! and receives runs of them joined by the kernel, see [`Datagrams`]), the
//! worker's wait for readiness ([`Waiter`]: epoll with a nanosecond timeout) and its
//! precise timer for kernels without one ([`TimerFd`]).
//!
//! The protocol state machines (`h1`, `h2`) never see these: the worker moves bytes
//! between a `Stream` and a connection's protocol, and sleeps until the next instant
//! something is due.

use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::time::Duration;

use mio::net::{TcpStream, UdpSocket, UnixStream};
use mio::{Interest, Registry, Token};
use stampede_ring::Carried;
use stampede_tls::rustls::ClientConfig;
use stampede_tls::TlsStream;

use crate::spec::net::SocketOptions;
use crate::spec::target::Address;

/// A client connection's transport: TCP, a Unix socket, TLS over TCP, or a UDP
/// socket connected to the server (QUIC's datagrams; TLS is inside QUIC).
pub(crate) enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
    Tls(Box<Tls>),
    Udp(Box<Datagrams>),
    /// An open TCP or Unix socket carried by the thread's io_uring ring.
    Ring(stampede_ring::Socket),
}

/// TLS over a TCP socket on either backend: on epoll while it connects, on the
/// thread's ring once open when the run is on io_uring.
pub(crate) type Tls = TlsStream<Carried<TcpStream>>;

/// The TCP socket's descriptor, taken out of `mio`'s stream (for the ring) ...
fn tcp_fd(s: TcpStream) -> OwnedFd {
    s.into()
}

/// ... and put back into one (a thread without a ring gives it back).
fn tcp_from(fd: OwnedFd) -> TcpStream {
    TcpStream::from_std(fd.into())
}

/// A UDP socket connected to the server, with what its kernel allows of sending
/// and receiving several datagrams a call (see [`stampede_quic::udp`]).
pub(crate) struct Datagrams {
    socket: UdpSocket,
    udp: stampede_quic::udp::Udp,
    peer: std::net::SocketAddr,
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
        nth: u64,
    ) -> io::Result<Stream> {
        Ok(match addr {
            Address::Tcp(a) => {
                let s = crate::spec::net::connect_tcp(a[0], opts, nth)?;
                s.set_nodelay(true)?;
                match tls {
                    Some((config, host)) if !tunnel => Stream::Tcp(s).start_tls(config, host)?,
                    _ => Stream::Tcp(s),
                }
            }
            Address::Unix(p) => {
                let s = UnixStream::connect(p)?;
                crate::spec::net::apply_unix(&s, opts)?;
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
                Carried::Epoll(s),
                config.clone(),
                host,
            )?))),
            // A proxy's tunnel the ring already carries.
            Stream::Ring(s) => Ok(Stream::Tls(Box::new(TlsStream::client(
                Carried::Ring(s),
                config.clone(),
                host,
            )?))),
            other => Ok(other),
        }
    }

    /// A UDP socket connected to `to` (QUIC: every datagram of the connection goes
    /// there, and only its datagrams come back). Its buffers are the socket options'
    /// when they set some; otherwise 2 MiB each way, so that a burst of datagrams
    /// does not overflow the default. With `gso`, several datagrams go out per call
    /// where the kernel allows it.
    pub(crate) fn datagrams(
        to: std::net::SocketAddr,
        opts: &SocketOptions,
        gso: bool,
    ) -> io::Result<Stream> {
        let any: std::net::SocketAddr = match opts.local.first().copied() {
            Some(ip) => (ip, 0).into(),
            None if to.is_ipv4() => ([0, 0, 0, 0], 0).into(),
            None => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
        };
        let s = socket2::Socket::new(
            socket2::Domain::for_address(to),
            socket2::Type::DGRAM.nonblocking().cloexec(),
            None,
        )?;
        let _ = s.set_recv_buffer_size(2 << 20);
        let _ = s.set_send_buffer_size(2 << 20);
        opts.apply(socket2::SockRef::from(&s))?;
        s.bind(&any.into())?;
        s.connect(&to.into())?;
        let socket = UdpSocket::from_std(s.into());
        let udp = stampede_quic::udp::Udp::new(&socket, gso)?;
        Ok(Stream::Udp(Box::new(Datagrams {
            socket,
            udp,
            peer: to,
        })))
    }

    /// The datagram socket, if this is one.
    pub(crate) fn datagram(&mut self) -> Option<&mut Datagrams> {
        match self {
            Stream::Udp(d) => Some(d),
            _ => None,
        }
    }

    /// The TLS stream, if this is one.
    pub(crate) fn tls(&mut self) -> Option<&mut Tls> {
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
            Stream::Tls(t) => match t.io.epoll_ref() {
                Some(s) => (s.take_error()?, s.peer_addr().map(|_| ())),
                None => (None, Ok(())),
            },
            // Connected when made: there is no handshake below QUIC's.
            Stream::Udp(d) => (d.socket.take_error()?, Ok(())),
            // Adopted once connected; its errors come with its reads.
            Stream::Ring(_) => (None, Ok(())),
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
            Stream::Tls(s) => match s.io.epoll() {
                Some(s) => r.register(s, t, i),
                None => Ok(()),
            },
            Stream::Udp(d) => r.register(&mut d.socket, t, i),
            Stream::Ring(_) => Ok(()),
        }
    }

    pub(crate) fn deregister(&mut self, r: &Registry) {
        let _ = match self {
            Stream::Tcp(s) => r.deregister(s),
            Stream::Unix(s) => r.deregister(s),
            Stream::Tls(s) => match s.io.epoll() {
                Some(s) => r.deregister(s),
                None => Ok(()),
            },
            Stream::Udp(d) => r.deregister(&mut d.socket),
            Stream::Ring(_) => Ok(()),
        };
    }

    pub(crate) fn shutdown(&mut self) {
        let _ = match self {
            Stream::Tcp(s) => s.shutdown(Shutdown::Both),
            Stream::Unix(s) => s.shutdown(Shutdown::Both),
            Stream::Tls(s) => {
                s.close_notify();
                match &mut s.io {
                    Carried::Epoll(s) => s.shutdown(Shutdown::Both),
                    Carried::Ring(s) => {
                        s.shutdown(Shutdown::Both);
                        Ok(())
                    }
                }
            }
            // QUIC says goodbye in a datagram of its own, written before this.
            Stream::Udp(_) => Ok(()),
            Stream::Ring(s) => {
                s.shutdown(Shutdown::Both);
                Ok(())
            }
        };
    }

    /// Hands an open TCP or Unix socket, or TLS's socket, to the thread's io_uring
    /// ring, its events then reported under `token` (see [`stampede_ring`]; with
    /// `stamped`, a TCP socket asked to stamp arrivals keeps its stamps there); a
    /// datagram socket, or any stream of a thread without a ring, stays as it is.
    pub(crate) fn onto_ring(self, token: usize, stamped: bool) -> Stream {
        let (fd, unix): (OwnedFd, bool) = match self {
            Stream::Tcp(s) => (s.into(), false),
            Stream::Unix(s) => (s.into(), true),
            Stream::Tls(t) => {
                let t = t.map_io(|s| s.onto_ring(token, true, tcp_fd, tcp_from));
                return Stream::Tls(Box::new(t));
            }
            other => return other,
        };
        let adopted = match stamped && !unix {
            true => stampede_ring::Socket::adopt_stamped(fd, token, true),
            false => stampede_ring::Socket::adopt(fd, token, true),
        };
        match adopted {
            Ok(s) => Stream::Ring(s),
            Err(fd) if unix => Stream::Unix(UnixStream::from_std(fd.into())),
            Err(fd) => Stream::Tcp(tcp_from(fd)),
        }
    }
}

impl Stream {
    /// Asks the kernel to stamp each received segment with its arrival time (plain TCP
    /// only; see [`Stream::read_stamped`]). Returns whether it will.
    pub(crate) fn stamp_arrivals(&self) -> bool {
        let Stream::Tcp(s) = self else { return false };
        crate::spec::net::switch_on(s.as_raw_fd(), libc::SOL_SOCKET, libc::SO_TIMESTAMPNS)
    }

    /// Reads like [`Read::read`], and with it, on a TCP stream asked to stamp arrivals,
    /// when the last segment read reached the socket (`CLOCK_REALTIME`, since the
    /// epoch): what the bytes' arrival is timed by when the worker reads them a while
    /// after they came. On the ring the stamp came with the receive.
    #[inline]
    pub(crate) fn read_stamped(&mut self, b: &mut [u8]) -> io::Result<(usize, Option<Duration>)> {
        let s = match self {
            Stream::Tcp(s) => s,
            Stream::Ring(s) => return s.read_stamped(b),
            _ => return self.read(b).map(|n| (n, None)),
        };
        let mut iov = libc::iovec {
            iov_base: b.as_mut_ptr().cast(),
            iov_len: b.len(),
        };
        // Room for one control message holding a timespec, aligned for cmsghdr.
        let mut control = [0u64; 8];
        // SAFETY: an all-zero msghdr is valid; its pointers are set below.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        // SAFETY: the iovec points into `b`, the control buffer is ours, and both
        // outlive the call.
        let n = unsafe { libc::recvmsg(s.as_raw_fd(), &mut msg, 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut stamp = None;
        // SAFETY: the kernel filled `msg`'s control part; the CMSG_* macros walk it
        // within `msg_controllen`.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                    let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                    if ts.tv_sec > 0 {
                        stamp = Some(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32));
                    }
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        Ok((n as usize, stamp))
    }
}

impl Read for Stream {
    #[inline]
    fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(b),
            Stream::Unix(s) => s.read(b),
            Stream::Tls(s) => s.read(b),
            Stream::Udp(d) => d.socket.recv(b),
            Stream::Ring(s) => s.read(b),
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
            Stream::Udp(d) => d.socket.send(b),
            Stream::Ring(s) => s.write(b),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Waits on an epoll instance (the worker's `mio::Poll`, whose registrations it reads
/// back as they were made: the token in the event's data) until a socket is ready or a
/// timeout in nanoseconds runs out, with `epoll_pwait2` (Linux 5.11). The sleep to
/// the next due arrival is then the wait itself: no timer to arm and read per wake-up,
/// two system calls fewer than a timerfd beside `epoll_wait` needs. On a kernel
/// without it the timeout counts in milliseconds, rounded up, and [`Waiter::precise`]
/// says so: the worker then arms a [`TimerFd`] for finer wake-ups.
///
/// On io_uring ([`Waiter::on_ring`]) the wait is the thread's ring's instead: it
/// submits the wake-up's sends and receives, waits with a nanosecond timeout, and
/// reports the completions as the same events, with the epoll instance's own (see
/// [`stampede_ring`]).
pub(crate) struct Waiter {
    events: Vec<libc::epoll_event>,
    len: usize,
    precise: bool,
    ring: bool,
}

/// One readiness event, read as `mio` reads its own.
#[derive(Clone, Copy)]
pub(crate) struct Ready {
    bits: u32,
    token: u64,
}

impl Ready {
    pub(crate) fn token(self) -> usize {
        self.token as usize
    }
    pub(crate) fn is_readable(self) -> bool {
        self.bits & (libc::EPOLLIN | libc::EPOLLPRI) as u32 != 0
    }
    pub(crate) fn is_writable(self) -> bool {
        self.bits & libc::EPOLLOUT as u32 != 0
    }
    pub(crate) fn is_error(self) -> bool {
        self.bits & libc::EPOLLERR as u32 != 0
    }
    /// The peer shut its side (or the connection is gone).
    pub(crate) fn is_read_closed(self) -> bool {
        let rdhup = (libc::EPOLLIN | libc::EPOLLRDHUP) as u32;
        self.bits & libc::EPOLLHUP as u32 != 0 || self.bits & rdhup == rdhup
    }
}

impl Waiter {
    /// Room for `capacity` events per wait.
    pub(crate) fn new(capacity: usize) -> Waiter {
        Waiter {
            events: vec![libc::epoll_event { events: 0, u64: 0 }; capacity.max(1)],
            len: 0,
            precise: true,
            ring: false,
        }
    }

    /// Waits on the thread's io_uring ring from now on (installed by the caller).
    pub(crate) fn on_ring(&mut self) {
        self.ring = true;
    }

    /// Whether a wait's timeout is kept to the nanosecond (until the kernel turned
    /// `epoll_pwait2` down).
    pub(crate) fn precise(&self) -> bool {
        self.precise
    }

    /// Sleeps for `d` without waiting on the sockets (the open model's nap to its next
    /// start). On the ring the sleep also submits the sends queued since the last
    /// wait, and the receives that complete meanwhile do not end it.
    pub(crate) fn nap(&mut self, d: Duration) -> io::Result<()> {
        if !self.ring {
            std::thread::sleep(d);
            return Ok(());
        }
        stampede_ring::nap(d).map_err(|e| io::Error::new(e.kind(), format!("io_uring: {e}")))
    }

    /// Waits at most `timeout` for events on `epfd`.
    pub(crate) fn wait(&mut self, epfd: RawFd, timeout: Duration) -> io::Result<()> {
        self.len = 0;
        if self.ring {
            return match stampede_ring::wait(timeout, &mut self.events) {
                Ok(()) => {
                    self.len = self.events.len();
                    Ok(())
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => Err(e),
                // The run ends with the reason rather than going on without its ring.
                Err(e) => Err(io::Error::new(e.kind(), format!("io_uring: {e}"))),
            };
        }
        let cap = self.events.len().min(i32::MAX as usize) as libc::c_int;
        if self.precise {
            let ts = libc::timespec {
                tv_sec: timeout.as_secs().min(i32::MAX as u64) as libc::time_t,
                tv_nsec: timeout.subsec_nanos() as libc::c_long,
            };
            // SAFETY: the event buffer holds `cap` entries and outlives the call; the
            // timespec is valid; no signal mask is given (null, size 0).
            let n = unsafe {
                libc::syscall(
                    libc::SYS_epoll_pwait2,
                    epfd,
                    self.events.as_mut_ptr(),
                    cap,
                    &ts as *const libc::timespec,
                    std::ptr::null::<libc::sigset_t>(),
                    0usize,
                )
            };
            if n >= 0 {
                self.len = n as usize;
                return Ok(());
            }
            let e = io::Error::last_os_error();
            // ENOSYS: an older kernel; EPERM: a seccomp filter that does not know the
            // call. Either way the millisecond wait below does the job.
            match e.raw_os_error() {
                Some(libc::ENOSYS) | Some(libc::EPERM) => self.precise = false,
                _ => return Err(e),
            }
        }
        let ms = timeout.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as libc::c_int;
        // SAFETY: as above, a buffer of `cap` events that outlives the call.
        let n = unsafe { libc::epoll_wait(epfd, self.events.as_mut_ptr(), cap, ms) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        self.len = n as usize;
        Ok(())
    }

    /// The events of the last wait.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The `i`-th event of the last wait.
    pub(crate) fn get(&self, i: usize) -> Ready {
        let e = self.events[i];
        Ready {
            bits: e.events,
            token: e.u64,
        }
    }
}

/// A timerfd: wakes the poll at a precise instant where the wait itself cannot (see
/// [`Waiter`]).
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

impl Datagrams {
    /// The server's address.
    pub(crate) fn peer(&self) -> std::net::SocketAddr {
        self.peer
    }

    /// How many datagrams one send may carry now.
    pub(crate) fn segments(&self) -> usize {
        self.udp.segments()
    }

    /// Receives into `buf`: one datagram, or several of one flow joined (GRO), each
    /// `stride` bytes but the last.
    pub(crate) fn recv(&mut self, buf: &mut [u8]) -> io::Result<stampede_quic::udp::RecvMeta> {
        let mut meta = [stampede_quic::udp::RecvMeta::default()];
        let mut bufs = [io::IoSliceMut::new(buf)];
        self.udp.recv(&self.socket, &mut bufs, &mut meta)?;
        Ok(meta[0])
    }

    /// Sends `bytes`, datagrams of `segment` bytes each but the last, with the ECN
    /// bits `ecn`; all of them or none (`WouldBlock`).
    pub(crate) fn send(
        &mut self,
        bytes: &[u8],
        segment: usize,
        ecn: Option<quinn_proto::EcnCodepoint>,
    ) -> io::Result<usize> {
        (self.udp).send(&self.socket, self.peer, bytes, segment, ecn)?;
        Ok(bytes.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Instant, SystemTime, UNIX_EPOCH};

    fn pair() -> (std::net::TcpStream, Stream) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        c.set_nonblocking(true).unwrap();
        (s, Stream::Tcp(TcpStream::from_std(c)))
    }

    fn wall() -> Duration {
        SystemTime::now().duration_since(UNIX_EPOCH).unwrap()
    }

    #[test]
    fn the_waiter_reports_ready_sockets_by_token_and_keeps_its_timeout() {
        let poll = mio::Poll::new().unwrap();
        let (mut server, mut client) = pair();
        client.register(poll.registry(), Token(7)).unwrap();
        let mut w = Waiter::new(8);
        // The connect's writable edge first; then nothing, for at least the timeout.
        w.wait(poll.as_raw_fd(), Duration::from_millis(100))
            .unwrap();
        assert!(w.len() >= 1 && w.get(0).token() == 7 && w.get(0).is_writable());
        let t = Instant::now();
        w.wait(poll.as_raw_fd(), Duration::from_micros(2500))
            .unwrap();
        assert_eq!(w.len(), 0);
        assert!(
            t.elapsed() >= Duration::from_micros(2500),
            "{:?}",
            t.elapsed()
        );
        server.write_all(b"x").unwrap();
        w.wait(poll.as_raw_fd(), Duration::from_secs(5)).unwrap();
        let ev = w.get(0);
        assert!(ev.token() == 7 && ev.is_readable() && !ev.is_read_closed() && !ev.is_error());
        drop(server);
        w.wait(poll.as_raw_fd(), Duration::from_secs(5)).unwrap();
        assert!(w.get(0).is_read_closed());
    }

    /// Waits (5 s at most) until `s` has bytes to read.
    fn readable(s: &Stream) {
        let Stream::Tcp(t) = s else {
            panic!("a TCP stream")
        };
        let mut p = libc::pollfd {
            fd: t.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd for the length of the call.
        let n = unsafe { libc::poll(&mut p, 1, 5000) };
        assert_eq!(n, 1, "nothing to read within 5 s");
    }

    #[test]
    fn a_stamped_read_says_when_the_bytes_arrived_not_when_they_were_read() {
        let (mut server, mut client) = pair();
        assert!(client.stamp_arrivals());
        let mut buf = [0u8; 16];
        // The kernel turns its receive stamps on a moment after the first socket
        // asks: bytes are sent until one comes stamped.
        let mut stamped = false;
        for _ in 0..1000 {
            server.write_all(b"p").unwrap();
            readable(&client);
            if client.read_stamped(&mut buf).unwrap().1.is_some() {
                stamped = true;
                break;
            }
        }
        assert!(stamped, "no stamp after 1,000 reads");
        let before = wall();
        server.write_all(b"hello").unwrap();
        // The gap between arrival and read is what the stamp must show: a sleep, since
        // the stamp is the kernel's clock, which no simulated time moves.
        std::thread::sleep(Duration::from_millis(30));
        let read_at = wall();
        let (n, stamp) = client.read_stamped(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"hello");
        let stamp = stamp.expect("a stamp");
        // Arrived within moments of the write, well before the read.
        assert!(
            stamp + Duration::from_millis(1) >= before,
            "{stamp:?} {before:?}"
        );
        assert!(
            stamp + Duration::from_millis(20) <= read_at,
            "{stamp:?} {read_at:?}"
        );
        // Nothing left: would block, as a plain read.
        let e = client.read_stamped(&mut buf).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
        // A stream not asked to stamp reads without one.
        let (mut server, mut plain) = pair();
        server.write_all(b"x").unwrap();
        readable(&plain);
        assert!(matches!(plain.read_stamped(&mut buf), Ok((1, None))));
    }
}
