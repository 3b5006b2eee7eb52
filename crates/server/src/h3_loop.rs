//! The HTTP/3 side of one server thread: a UDP socket, the QUIC endpoint answering
//! on it ([`H3Endpoint`]), and the time. Each wake-up reads every datagram waiting
//! (up to a budget; several buffers a system call, each holding one datagram or a
//! run of one client's joined by the kernel), runs the timers that fell due, and
//! sends what the endpoint readied — up to ten datagrams of a connection a call,
//! where the kernel segments them — until the socket would block (the rest goes
//! when it is writable again).
//! The wait ends at the endpoint's next timer or when the shutdown wakes it; on
//! shutdown every connection is closed with H3_NO_ERROR before the thread ends.

use std::io::{self, IoSliceMut};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::net::UdpSocket;
use mio::{Events, Interest, Poll, Token, Waker};

use crate::date::DateCache;
use crate::h3::{H3Endpoint, Out};
use crate::Shutdown;

const SOCKET: Token = Token(0);
const WAKE: Token = Token(1);
/// Datagrams read per wake-up before timers and sends get their turn.
const READS_PER_WAKE: usize = 256;
/// Buffers one receive call fills at most.
const RECV_BUFFERS: usize = 8;
/// The longest wait without a timer due (the date and the shutdown are looked at).
const IDLE_WAIT: Duration = Duration::from_millis(500);

pub(crate) struct UdpLoop {
    poll: Poll,
    pub(crate) waker: Arc<Waker>,
    socket: UdpSocket,
    udp: stampede_quic::udp::Udp,
    endpoint: H3Endpoint,
    date: DateCache,
    /// Datagrams the socket did not take, sent first once it is writable.
    held: Option<(Out, Vec<u8>)>,
    /// Where the endpoint's counters go when the loop stops.
    totals: Arc<std::sync::Mutex<crate::h3::H3Stats>>,
}

impl UdpLoop {
    pub(crate) fn new(
        socket: std::net::UdpSocket,
        endpoint: H3Endpoint,
        totals: Arc<std::sync::Mutex<crate::h3::H3Stats>>,
    ) -> io::Result<UdpLoop> {
        let poll = Poll::new()?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKE)?);
        socket.set_nonblocking(true)?;
        let mut socket = UdpSocket::from_std(socket);
        let udp = stampede_quic::udp::Udp::new(&socket, true)?;
        poll.registry()
            .register(&mut socket, SOCKET, Interest::READABLE | Interest::WRITABLE)?;
        Ok(UdpLoop {
            poll,
            waker,
            socket,
            udp,
            endpoint,
            date: DateCache::new(),
            held: None,
            totals,
        })
    }

    pub(crate) fn run(mut self, shutdown: Shutdown) -> io::Result<()> {
        let mut events = Events::with_capacity(16);
        let mut bufs: [Vec<u8>; RECV_BUFFERS] =
            std::array::from_fn(|_| vec![0u8; stampede_quic::udp::GRO_BUFFER]);
        let mut meta = [stampede_quic::udp::RecvMeta::default(); RECV_BUFFERS];
        let mut out = Vec::with_capacity(stampede_quic::udp::GRO_BUFFER);
        loop {
            let now = Instant::now();
            if shutdown.is_triggered() {
                self.endpoint.close_all(now);
                self.send(now, &mut out);
                let mut t = self.totals.lock().unwrap_or_else(|e| e.into_inner());
                t.add(&self.endpoint.stats);
                return Ok(());
            }
            self.date.refresh();
            self.endpoint.set_date(self.date.value());
            let mut read = 0;
            while read < READS_PER_WAKE {
                let mut slices = bufs.each_mut().map(|b| IoSliceMut::new(b));
                match self.udp.recv(&self.socket, &mut slices, &mut meta) {
                    Ok(n) => {
                        for (b, m) in bufs.iter().zip(&meta).take(n) {
                            let ecn = stampede_quic::udp::ecn(m);
                            let d = stampede_quic::udp::received(b, m);
                            read += (self.endpoint).handle(now, m.addr, m.dst_ip, ecn, d, m.stride);
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    // ICMP errors of earlier sends (a client gone): nothing to do.
                    Err(_) => {}
                }
            }
            self.endpoint.timeout(now);
            self.send(now, &mut out);
            let wait = match self.endpoint.next_timeout() {
                Some(t) => t.saturating_duration_since(Instant::now()).min(IDLE_WAIT),
                None => IDLE_WAIT,
            };
            match self.poll.poll(&mut events, Some(wait)) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
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
    fn send_one(&self, out: &Out, d: &[u8]) -> bool {
        let r = (self.udp).send_from(&self.socket, out.to, out.from, d, out.segment, out.ecn);
        // Sent, or refused for good (a client gone): QUIC recovers or lets go.
        matches!(r, Err(e) if e.kind() == io::ErrorKind::WouldBlock)
    }
}
