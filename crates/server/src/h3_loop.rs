//! The HTTP/3 side of one server thread: a UDP socket, the QUIC endpoint answering
//! on it ([`H3Endpoint`]), and the time. Each wake-up reads every datagram waiting
//! (up to a budget), runs the timers that fell due, and sends what the endpoint
//! readied until the socket would block (the rest goes when it is writable again).
//! The wait ends at the endpoint's next timer or when the shutdown wakes it; on
//! shutdown every connection is closed with H3_NO_ERROR before the thread ends.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::net::UdpSocket;
use mio::{Events, Interest, Poll, Token, Waker};

use crate::date::DateCache;
use crate::h3::H3Endpoint;
use crate::Shutdown;

const SOCKET: Token = Token(0);
const WAKE: Token = Token(1);
/// Datagrams read per wake-up before timers and sends get their turn.
const READS_PER_WAKE: usize = 256;
/// The longest wait without a timer due (the date and the shutdown are looked at).
const IDLE_WAIT: Duration = Duration::from_millis(500);

pub(crate) struct UdpLoop {
    poll: Poll,
    pub(crate) waker: Arc<Waker>,
    socket: UdpSocket,
    endpoint: H3Endpoint,
    date: DateCache,
    /// A datagram the socket did not take, sent first once it is writable.
    held: Option<(SocketAddr, Vec<u8>)>,
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
        poll.registry()
            .register(&mut socket, SOCKET, Interest::READABLE | Interest::WRITABLE)?;
        Ok(UdpLoop {
            poll,
            waker,
            socket,
            endpoint,
            date: DateCache::new(),
            held: None,
            totals,
        })
    }

    pub(crate) fn run(mut self, shutdown: Shutdown) -> io::Result<()> {
        let mut events = Events::with_capacity(16);
        let mut buf = vec![0u8; stampede_quic::MAX_DATAGRAM + 1];
        let mut out = Vec::with_capacity(stampede_quic::MAX_DATAGRAM);
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
            for _ in 0..READS_PER_WAKE {
                match self.socket.recv_from(&mut buf) {
                    // A datagram larger than QUIC allows was cut short: dropped.
                    Ok((n, _)) if n > stampede_quic::MAX_DATAGRAM => {}
                    Ok((n, from)) => self.endpoint.handle(now, from, &buf[..n]),
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
    fn send(&mut self, now: Instant, out: &mut Vec<u8>) {
        if let Some((to, d)) = self.held.take() {
            match self.socket.send_to(&d, to) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.held = Some((to, d));
                    return;
                }
                _ => {}
            }
        }
        while let Some(to) = self.endpoint.transmit(now, out) {
            match self.socket.send_to(out, to) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.held = Some((to, out.clone()));
                    return;
                }
                // Sent, or refused for good (a client gone): QUIC recovers or lets go.
                _ => {}
            }
        }
    }
}
