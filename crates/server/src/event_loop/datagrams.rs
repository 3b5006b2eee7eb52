//! The datagram side of a server thread's loop: its UDP sockets, registered on the
//! same poll as its TCP connections, each with the endpoint answering on it (a
//! [`DatagramEndpoint`]). A wake-up that finds datagrams reads them (up to a budget;
//! several buffers a system call, each holding one datagram or a run of one client's
//! joined by the kernel); then the endpoint's timers that fell due run, and what it
//! readied is sent — up to ten datagrams of a connection a call, where the kernel
//! segments them — until the socket would block (the rest goes when it is writable
//! again). The loop's wait ends at the endpoint's next timer. At shutdown the
//! endpoint closes every connection.
use std::io::{self, IoSliceMut};
use std::time::Instant;

use mio::net::UdpSocket;
use mio::{Interest, Registry, Token};

use crate::proto::{Datagram, DatagramEndpoint, Received};

/// Datagrams read per wake-up and socket before the loop's other work gets its turn.
const READS_PER_WAKE: usize = 256;
/// Buffers one receive call fills at most.
const RECV_BUFFERS: usize = 8;

/// One UDP socket and its endpoint.
pub(crate) struct Datagrams {
    socket: UdpSocket,
    udp: stampede_quic::udp::Udp,
    endpoint: Box<dyn DatagramEndpoint>,
    /// Datagrams the socket did not take, sent first once it is writable.
    held: Option<(Datagram, Vec<u8>)>,
    /// Read, or writable, since the endpoint last ran: it has work.
    touched: bool,
    /// The read budget ran out with datagrams left (the socket is edge-triggered).
    more: bool,
    /// The endpoint's next timer, as of its last turn (only a turn moves it).
    next: Option<Instant>,
}

/// The receive and send buffers a loop's sockets share.
pub(super) struct Buffers {
    bufs: [Vec<u8>; RECV_BUFFERS],
    meta: [stampede_quic::udp::RecvMeta; RECV_BUFFERS],
    out: Vec<u8>,
}

impl Buffers {
    pub(super) fn new() -> Box<Buffers> {
        Box::new(Buffers {
            bufs: std::array::from_fn(|_| vec![0u8; stampede_quic::udp::GRO_BUFFER]),
            meta: [stampede_quic::udp::RecvMeta::default(); RECV_BUFFERS],
            out: Vec::with_capacity(stampede_quic::udp::GRO_BUFFER),
        })
    }
}

impl Datagrams {
    pub(crate) fn new(
        socket: std::net::UdpSocket,
        endpoint: Box<dyn DatagramEndpoint>,
    ) -> io::Result<Datagrams> {
        socket.set_nonblocking(true)?;
        let socket = UdpSocket::from_std(socket);
        let udp = stampede_quic::udp::Udp::new(&socket, true)?;
        Ok(Datagrams {
            socket,
            udp,
            endpoint,
            held: None,
            touched: false,
            more: false,
            next: None,
        })
    }

    pub(super) fn register(&mut self, registry: &Registry, token: Token) -> io::Result<()> {
        registry.register(
            &mut self.socket,
            token,
            Interest::READABLE | Interest::WRITABLE,
        )
    }

    /// Whether the loop must not wait: datagrams are left to read.
    pub(super) fn more(&self) -> bool {
        self.more
    }

    /// The endpoint's next timer.
    pub(super) fn next_timeout(&self) -> Option<Instant> {
        self.next
    }

    /// The socket became writable: what waited goes on the next turn.
    pub(super) fn writable(&mut self) {
        self.touched = true;
    }

    /// Reads the datagrams waiting, up to the budget, handing each to the endpoint.
    pub(super) fn read(&mut self, now: Instant, b: &mut Buffers) {
        self.touched = true;
        self.more = false;
        let mut read = 0;
        while read < READS_PER_WAKE {
            let mut slices = b.bufs.each_mut().map(|b| IoSliceMut::new(b));
            match self.udp.recv(&self.socket, &mut slices, &mut b.meta) {
                Ok(n) => {
                    for (buf, m) in b.bufs.iter().zip(&b.meta).take(n) {
                        read += self.endpoint.handle(
                            now,
                            Received {
                                from: m.addr,
                                local: m.dst_ip,
                                ecn: stampede_quic::udp::ecn(m),
                                data: stampede_quic::udp::received(buf, m),
                                stride: m.stride,
                            },
                        );
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // ICMP errors of earlier sends (a client gone): nothing to do.
                Err(_) => {}
            }
        }
        self.more = true;
    }

    /// The end of a wake-up: when the endpoint has work (datagrams read, a timer
    /// due, output waiting), its timers run and what it readied is sent.
    pub(super) fn turn(&mut self, now: Instant, date: &[u8], b: &mut Buffers) {
        let due = self.next.is_some_and(|t| t <= now);
        if !(self.touched || due) {
            return;
        }
        self.touched = false;
        self.endpoint.set_date(date);
        self.endpoint.timeout(now);
        self.send(now, &mut b.out);
        self.next = self.endpoint.next_timeout();
    }

    /// The server is stopping: the endpoint closes every connection and hands its
    /// counters to the server's; what the closes send goes out.
    pub(super) fn close(&mut self, now: Instant, registry: &Registry, b: &mut Buffers) {
        self.endpoint.close_all(now);
        self.send(now, &mut b.out);
        let _ = registry.deregister(&mut self.socket);
    }

    /// Sends what the endpoint readied until the socket would block.
    fn send(&mut self, now: Instant, buf: &mut Vec<u8>) {
        if let Some((out, d)) = self.held.take() {
            if self.send_one(&out, &d) {
                self.held = Some((out, d));
                return;
            }
        }
        while let Some(out) = self.endpoint.transmit(now, buf, self.udp.segments()) {
            if self.send_one(&out, buf) {
                self.held = Some((out, buf.clone()));
                return;
            }
        }
    }

    /// Sends datagrams; true when the socket would block (nothing went).
    fn send_one(&self, out: &Datagram, d: &[u8]) -> bool {
        let r = (self.udp).send_from(&self.socket, out.to, out.from, d, out.segment, out.ecn);
        // Sent, or refused for good (a client gone): QUIC recovers or lets go.
        matches!(r, Err(e) if e.kind() == io::ErrorKind::WouldBlock)
    }
}

/// A loop's UDP sockets, with the buffers they share.
pub(super) struct Udp {
    sockets: Vec<Datagrams>,
    bufs: Box<Buffers>,
}

impl Udp {
    /// The sockets, registered on `registry` from token `base` on.
    pub(super) fn new(
        mut sockets: Vec<Datagrams>,
        registry: &Registry,
        base: usize,
    ) -> io::Result<Udp> {
        for (k, d) in sockets.iter_mut().enumerate() {
            d.register(registry, Token(base + k))?;
        }
        Ok(Udp {
            sockets,
            bufs: Buffers::new(),
        })
    }

    /// The latest the loop may wait from `now`: zero with datagrams left to read, the
    /// endpoints' next timer otherwise.
    pub(super) fn wait_until(&mut self, now: Instant) -> Option<Instant> {
        let mut until = None::<Instant>;
        for d in &mut self.sockets {
            let t = if d.more() {
                Some(now)
            } else {
                d.next_timeout()
            };
            until = match (until, t) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        until
    }

    /// Socket `k`'s readiness.
    pub(super) fn ready(&mut self, k: usize, readable: bool, writable: bool, now: Instant) {
        let Some(d) = self.sockets.get_mut(k) else {
            return;
        };
        if writable {
            d.writable();
        }
        if readable {
            d.read(now, &mut self.bufs);
        }
    }

    /// The end of a wake-up: what is left to read is read, and each endpoint with
    /// work runs its timers and sends.
    pub(super) fn turn(&mut self, now: Instant, date: &[u8]) {
        for d in &mut self.sockets {
            if d.more() {
                d.read(now, &mut self.bufs);
            }
            d.turn(now, date, &mut self.bufs);
        }
    }

    /// The server is stopping: every endpoint's connections are closed.
    pub(super) fn close(&mut self, now: Instant, registry: &Registry) {
        for d in &mut self.sockets {
            d.close(now, registry, &mut self.bufs);
        }
    }
}
