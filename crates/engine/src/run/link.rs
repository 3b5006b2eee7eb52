//! A connection's transport, from dial to close: the socket (TCP, a Unix socket,
//! TLS over TCP, a proxy's CONNECT tunnel before TLS), where it stands (closed,
//! connecting, tunnelling, open, backing off), what its setup took, and the handshake
//! it is in.
//!
//! A [`Link`] knows nothing of requests, protocols or the run: each step reports what
//! happened ([`Dialled`], a handshake's length, whether a socket was held) and the
//! worker decides what that means for its requests and figures. That is the seam a
//! new transport comes in by: a datagram endpoint or an upgraded connection is
//! another way to reach [`State::Open`] and carry bytes, and a completion-driven
//! backend reports the same steps from its completions instead of readiness.

use std::io::{self, Read, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::{Registry, Token};
use stampede_tls::rustls::ClientConfig;

use crate::error::ErrorKind;
use crate::measure::recorder::micros;
use crate::run::io::Stream;
use crate::spec::net::{tunnel_reply, SocketOptions, TunnelReply};
use crate::spec::target::Address;

/// Where a link stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    /// No socket: ready to dial.
    Closed,
    /// Connect under way.
    Connecting,
    /// Connected to the proxy; CONNECT's first `.0` bytes written, its answer awaited.
    Tunnel(usize),
    /// Connected (a TLS handshake may still be under way: see [`Link::handshaking`]).
    Open,
    /// Waiting until then before dialling again after a failed or timed-out dial.
    Backoff(Instant),
}

/// How a worker's links are dialled: the same for every one of them.
#[derive(Clone, Copy)]
pub(crate) struct Dialer<'a> {
    /// Where to connect (the target, its proxy, or the address a script chose).
    pub(crate) address: &'a Address,
    /// TLS to the target: its configuration and the server name.
    pub(crate) tls: Option<(&'a Arc<ClientConfig>, &'a str)>,
    /// Options of every socket.
    pub(crate) socket: &'a SocketOptions,
    /// The CONNECT request that opens a tunnel through the proxy (https via a proxy).
    pub(crate) tunnel: Option<&'a [u8]>,
    /// Datagrams to the target (QUIC) instead of a stream.
    pub(crate) datagrams: bool,
    /// Several datagrams per send where the kernel allows it.
    pub(crate) gso: bool,
    /// Which of the worker's connections this is, from 0 (it picks the local
    /// address when the socket options give several).
    pub(crate) nth: u64,
}

/// What a step of a dial came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialled {
    /// Still under way: the next readiness event goes on with it.
    Waiting,
    /// Open, this many µs after the dial began (TLS may still be shaking hands).
    Open(u64),
    /// Failed, as this kind.
    Failed(ErrorKind),
}

/// One connection's transport (see the module's note).
pub(crate) struct Link {
    stream: Option<Stream>,
    state: State,
    /// When the last dial began.
    dialled: Instant,
    /// When the TLS handshake began, until it ends.
    handshake: Option<Instant>,
    /// The proxy's answer to CONNECT, read so far (empty but while tunnelling).
    reply: Vec<u8>,
    /// Failed dials in a row.
    failures: u32,
    /// The socket was asked to stamp arrivals when dialled, and does.
    stamped: bool,
}

impl Link {
    /// A closed link.
    pub(crate) fn new(now: Instant) -> Link {
        Link {
            stream: None,
            state: State::Closed,
            dialled: now,
            handshake: None,
            reply: Vec::new(),
            failures: 0,
            stamped: false,
        }
    }

    /// Where it stands.
    #[inline]
    pub(crate) fn state(&self) -> State {
        self.state
    }

    /// The datagram socket, on a datagram link.
    #[inline]
    pub(crate) fn datagrams(&mut self) -> Option<&mut super::io::Datagrams> {
        self.stream.as_mut().and_then(Stream::datagram)
    }

    /// Whether it holds a socket (connecting, tunnelling or open).
    #[inline]
    pub(crate) fn connected(&self) -> bool {
        self.stream.is_some()
    }

    /// Reads what the socket holds into `buf` (TLS: the plaintext); `None` without a
    /// socket. The worker reads and writes through the link only, so that another
    /// transport (a completion queue, a datagram endpoint) changes this type, not the
    /// loop.
    #[inline]
    pub(crate) fn read(&mut self, buf: &mut [u8]) -> Option<io::Result<usize>> {
        self.stream.as_mut().map(|s| s.read(buf))
    }

    /// Reads as [`Link::read`] does, with the kernel's arrival stamp of the bytes
    /// when the socket gives one; nothing without a socket.
    pub(crate) fn read_stamped(&mut self, buf: &mut [u8]) -> io::Result<(usize, Option<Duration>)> {
        match self.stream.as_mut() {
            Some(s) => s.read_stamped(buf),
            None => Ok((0, None)),
        }
    }

    /// Writes what it can of `bytes` (TLS: encrypts them).
    #[inline]
    pub(crate) fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        match self.stream.as_mut() {
            Some(s) => s.write(bytes),
            None => Err(io::ErrorKind::NotConnected.into()),
        }
    }

    /// Sends datagrams of `segment` bytes each but the last (QUIC's; all or none).
    pub(crate) fn send_datagrams(
        &mut self,
        bytes: &[u8],
        segment: usize,
        ecn: Option<quinn_proto::EcnCodepoint>,
    ) -> io::Result<usize> {
        match self.datagrams() {
            Some(d) => d.send(bytes, segment, ecn),
            None => Err(io::ErrorKind::NotConnected.into()),
        }
    }

    /// TLS: sends records the socket did not take yet (nothing to do without TLS).
    #[inline]
    pub(crate) fn flush_tls(&mut self) -> io::Result<()> {
        match self.stream.as_mut().and_then(Stream::tls) {
            Some(t) => t.flush_pending().map(|_| ()),
            None => Ok(()),
        }
    }

    /// The TLS session, on a TLS link.
    pub(crate) fn tls(&mut self) -> Option<&mut crate::run::io::Tls> {
        self.stream.as_mut().and_then(Stream::tls)
    }

    /// When the last dial began.
    #[inline]
    pub(crate) fn dialled_at(&self) -> Instant {
        self.dialled
    }

    /// Whether a TLS handshake is under way on the open socket.
    #[inline]
    pub(crate) fn handshaking(&self) -> bool {
        self.handshake.is_some()
    }

    /// Whether TLS holds records the socket did not take yet.
    pub(crate) fn tls_wants_write(&mut self) -> bool {
        self.stream
            .as_mut()
            .and_then(Stream::tls)
            .is_some_and(|t| t.wants_write())
    }

    /// Starts a non-blocking connect, registered for readiness under `token`. With
    /// `stamp`, the socket is asked to stamp each arrival; the answer says whether it
    /// does (false when not asked).
    pub(crate) fn dial(
        &mut self,
        d: &Dialer,
        registry: &Registry,
        token: Token,
        stamp: bool,
        now: Instant,
    ) -> Result<bool, ErrorKind> {
        self.dialled = now;
        self.handshake = None;
        let failed = |e: io::Error| ErrorKind::from_connect_error(&e);
        let mut s = match d.address {
            Address::Tcp(a) if d.datagrams => Stream::datagrams(a[0], d.socket, d.gso),
            _ => Stream::connect(d.address, d.tls, d.socket, d.tunnel.is_some(), d.nth),
        }
        .map_err(failed)?;
        let stamped = stamp && s.stamp_arrivals();
        s.register(registry, token).map_err(failed)?;
        self.stream = Some(s);
        self.stamped = stamped;
        self.state = State::Connecting;
        Ok(stamped)
    }

    /// A readiness event while dialling: the connect's outcome, then (through a
    /// proxy) the rest of CONNECT written and the proxy's answer read into the link
    /// (`buf` is scratch), and TLS started once the tunnel is open.
    pub(crate) fn advance(&mut self, d: &Dialer, buf: &mut [u8], now: Instant) -> Dialled {
        match self.state {
            State::Connecting => {
                let Some(s) = &self.stream else {
                    return Dialled::Waiting;
                };
                match s.connected() {
                    Ok(false) => Dialled::Waiting,
                    Ok(true) if d.tunnel.is_some() => {
                        self.state = State::Tunnel(0);
                        self.reply.clear();
                        // Nothing can have been answered yet: only CONNECT is written.
                        self.tunnel(d, &mut [], now)
                    }
                    Ok(true) => self.open(now),
                    Err(e) => Dialled::Failed(ErrorKind::from_connect_error(&e)),
                }
            }
            State::Tunnel(_) => self.tunnel(d, buf, now),
            State::Closed | State::Open | State::Backoff(_) => Dialled::Waiting,
        }
    }

    /// Writes what is left of CONNECT, then reads the proxy's answer: 2xx starts TLS
    /// to the server, anything else fails the dial as refused by the proxy.
    fn tunnel(&mut self, d: &Dialer, buf: &mut [u8], now: Instant) -> Dialled {
        let request = d.tunnel.unwrap_or_default();
        let (State::Tunnel(mut written), Some(s)) = (self.state, &mut self.stream) else {
            return Dialled::Waiting;
        };
        let failed = |e: &io::Error| Dialled::Failed(ErrorKind::from_connect_error(e));
        while written < request.len() {
            match s.write(&request[written..]) {
                Ok(n) => written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return failed(&e),
            }
        }
        self.state = State::Tunnel(written);
        if written < request.len() || buf.is_empty() {
            return Dialled::Waiting;
        }
        loop {
            let Some(s) = &mut self.stream else {
                return Dialled::Waiting;
            };
            match s.read(buf) {
                Ok(0) => return Dialled::Failed(ErrorKind::ProxyRefused),
                Ok(n) => {
                    self.reply.extend_from_slice(&buf[..n]);
                    match tunnel_reply(&self.reply) {
                        TunnelReply::Partial => {}
                        TunnelReply::Refused(_) => return Dialled::Failed(ErrorKind::ProxyRefused),
                        TunnelReply::Open => {
                            self.reply = Vec::new();
                            let (config, host) = d.tls.expect("a tunnel is for https, with TLS");
                            let tcp = self.stream.take().expect("read above");
                            // A failed start closes the TCP socket with it; the link
                            // still counts as holding one until it is closed.
                            match tcp.start_tls(config, host) {
                                Ok(t) => self.stream = Some(t),
                                Err(e) => return failed(&e),
                            }
                            return self.open(now);
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Dialled::Waiting,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return failed(&e),
            }
        }
    }

    /// Hands an open TCP or Unix socket to the thread's io_uring ring, which then
    /// reports its events under `token`, its arrival stamps kept when it was dialled
    /// with them (TLS's socket too; datagram sockets stay on epoll).
    pub(crate) fn onto_ring(&mut self, token: usize) {
        if self.state == State::Open {
            let stamped = self.stamped;
            self.stream = self.stream.take().map(|s| s.onto_ring(token, stamped));
        }
    }

    /// Reached the server (directly, or through the tunnel).
    fn open(&mut self, now: Instant) -> Dialled {
        self.state = State::Open;
        self.failures = 0;
        if matches!(self.stream, Some(Stream::Tls(_))) {
            self.handshake = Some(now);
        }
        Dialled::Open(micros(self.dialled, now))
    }

    /// The TLS handshake's length in µs, once, when it has just ended (the session is
    /// then at [`Link::stream`]'s TLS stream).
    #[inline]
    pub(crate) fn handshake_done(&mut self, now: Instant) -> Option<u64> {
        let started = self.handshake?;
        let t = self.stream.as_mut().and_then(Stream::tls)?;
        if t.is_handshaking() {
            return None;
        }
        self.handshake = None;
        Some(micros(started, now))
    }

    /// Closes the socket (with a FIN, or with a reset when `reset`) and the link;
    /// says whether it held a socket, dialled and not yet closed.
    pub(crate) fn close(&mut self, registry: &Registry, reset: bool) -> bool {
        let held = matches!(
            self.state,
            State::Connecting | State::Tunnel(_) | State::Open
        );
        if let Some(mut s) = self.stream.take() {
            s.deregister(registry);
            // Closing with a reset: no FIN first (the descriptor's close sends RST).
            if !reset {
                s.shutdown();
            }
        }
        self.reply.clear();
        self.handshake = None;
        self.state = State::Closed;
        held
    }

    /// The run is over: the socket is let go as it is, without a FIN first.
    pub(crate) fn release(&mut self, registry: &Registry) {
        if let Some(mut s) = self.stream.take() {
            s.deregister(registry);
        }
    }

    /// After a failed dial: waits before the next, longer after each failure in a row
    /// (2 ms doubling to 100 ms), so that a dead server does not turn the worker into
    /// a spin loop.
    pub(crate) fn back_off(&mut self, now: Instant) {
        self.failures += 1;
        let wait = Duration::from_millis((1u64 << self.failures.min(7)).min(100));
        self.state = State::Backoff(now + wait);
    }

    /// Waits until `at` before the next dial.
    pub(crate) fn hold_until(&mut self, at: Instant) {
        self.state = State::Backoff(at);
    }

    /// Closed and ready to dial, unless backing off; says which.
    pub(crate) fn settle(&mut self) -> bool {
        if matches!(self.state, State::Backoff(_)) {
            return false;
        }
        self.state = State::Closed;
        true
    }

    /// Whether a back-off has ended by `now`; the link is then closed, ready to dial.
    pub(crate) fn retry_due(&mut self, now: Instant) -> bool {
        match self.state {
            State::Backoff(t) if now >= t => {
                self.state = State::Closed;
                true
            }
            _ => false,
        }
    }

    /// Whether a dial under way has taken `limit` or longer by `now`.
    pub(crate) fn dial_expired(&self, now: Instant, limit: Duration) -> bool {
        matches!(self.state, State::Connecting | State::Tunnel(_))
            && now.saturating_duration_since(self.dialled) >= limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{SocketAddr, TcpListener};

    /// Polls until `link`'s dial settles (5 s at most), feeding it each event.
    fn settle(link: &mut Link, d: &Dialer, poll: &mut mio::Poll) -> Dialled {
        let mut events = mio::Events::with_capacity(4);
        let mut buf = [0u8; 512];
        let until = Instant::now() + Duration::from_secs(5);
        loop {
            let left = until.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "the dial did not settle");
            poll.poll(&mut events, Some(left)).unwrap();
            if events.is_empty() {
                continue;
            }
            match link.advance(d, &mut buf, Instant::now()) {
                Dialled::Waiting => {}
                done => return done,
            }
        }
    }

    fn dialer<'a>(address: &'a Address, socket: &'a SocketOptions) -> Dialer<'a> {
        Dialer {
            address,
            tls: None,
            socket,
            tunnel: None,
            datagrams: false,
            gso: false,
            nth: 0,
        }
    }

    #[test]
    fn a_dial_opens_closes_once_and_times_its_connect() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = Address::Tcp(vec![l.local_addr().unwrap()]);
        let socket = SocketOptions::default();
        let d = dialer(&address, &socket);
        let mut poll = mio::Poll::new().unwrap();
        let t0 = Instant::now();
        let mut link = Link::new(t0);
        assert_eq!(link.state(), State::Closed);
        assert_eq!(
            link.dial(&d, poll.registry(), Token(3), false, t0),
            Ok(false)
        );
        assert_eq!(link.state(), State::Connecting);
        let Dialled::Open(us) = settle(&mut link, &d, &mut poll) else {
            panic!("not open")
        };
        assert!(us < 5_000_000, "{us}");
        assert_eq!(link.state(), State::Open);
        assert!(!link.handshaking() && link.connected());
        // Plain TCP has no handshake to time.
        assert_eq!(link.handshake_done(Instant::now()), None);
        assert!(link.close(poll.registry(), false));
        assert!(!link.close(poll.registry(), false), "closed once");
        assert_eq!(link.state(), State::Closed);
        // The server saw the connection and its FIN.
        let (mut server, _) = l.accept().unwrap();
        assert_eq!(server.read(&mut [0u8; 8]).unwrap(), 0);
    }

    #[test]
    fn a_refused_dial_fails_and_backs_off_longer_each_time() {
        // A port just freed: nothing listens there.
        let addr: SocketAddr = {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        let address = Address::Tcp(vec![addr]);
        let socket = SocketOptions::default();
        let d = dialer(&address, &socket);
        let mut poll = mio::Poll::new().unwrap();
        let t0 = Instant::now();
        let mut link = Link::new(t0);
        let failed = match link.dial(&d, poll.registry(), Token(1), false, t0) {
            Err(kind) => kind,
            Ok(_) => match settle(&mut link, &d, &mut poll) {
                Dialled::Failed(kind) => kind,
                other => panic!("{other:?}"),
            },
        };
        assert_eq!(failed, ErrorKind::ConnectRefused);
        // The worker closes it (it held a socket while connecting), then backs off.
        link.close(poll.registry(), false);
        let mut waits = Vec::new();
        for _ in 0..9 {
            link.back_off(t0);
            let State::Backoff(at) = link.state() else {
                panic!("not backing off")
            };
            waits.push((at - t0).as_millis());
            assert!(!link.settle(), "a back-off stays");
            assert!(!link.retry_due(at - Duration::from_nanos(1)));
        }
        assert_eq!(waits, [2, 4, 8, 16, 32, 64, 100, 100, 100]);
        assert!(link.retry_due(t0 + Duration::from_millis(100)));
        assert_eq!(link.state(), State::Closed);
        // A dial that takes too long has expired; a closed link has nothing to expire.
        assert!(!link.dial_expired(t0 + Duration::from_secs(60), Duration::from_secs(1)));
        link.hold_until(t0);
        assert!(link.retry_due(t0));
    }

    #[test]
    fn a_proxy_that_refuses_the_tunnel_fails_the_dial_as_refused_by_it() {
        use std::io::BufRead;
        let proxy = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = Address::Tcp(vec![proxy.local_addr().unwrap()]);
        let socket = SocketOptions::default();
        let connect = b"CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\n";
        let config = stampede_tls::client_config(&stampede_tls::ClientOptions {
            insecure: true,
            ..Default::default()
        })
        .unwrap();
        let d = Dialer {
            address: &address,
            tls: Some((&config, "example.test")),
            socket: &socket,
            tunnel: Some(connect),
            datagrams: false,
            gso: false,
            nth: 0,
        };
        // The proxy reads CONNECT whole, then refuses it.
        let answered = std::thread::spawn(move || {
            let (s, _) = proxy.accept().unwrap();
            let mut r = std::io::BufReader::new(s);
            let mut head = Vec::new();
            loop {
                let mut line = String::new();
                r.read_line(&mut line).unwrap();
                let end = line == "\r\n" || line.is_empty();
                head.push(line);
                if end {
                    break;
                }
            }
            r.get_mut()
                .write_all(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
                .unwrap();
            head.concat()
        });
        let mut poll = mio::Poll::new().unwrap();
        let mut link = Link::new(Instant::now());
        link.dial(&d, poll.registry(), Token(2), false, Instant::now())
            .unwrap();
        assert_eq!(
            settle(&mut link, &d, &mut poll),
            Dialled::Failed(ErrorKind::ProxyRefused)
        );
        assert!(matches!(link.state(), State::Tunnel(n) if n == connect.len()));
        assert_eq!(answered.join().unwrap().as_bytes(), connect);
        assert!(link.close(poll.registry(), true));
    }
}
