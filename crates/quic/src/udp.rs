//! QUIC's datagrams through a UDP socket with the kernel's offloads (quinn-udp):
//! several datagrams of one connection sent with one system call (GSO: one buffer
//! the kernel cuts into equal segments), several received with one (GRO: the
//! kernel hands over datagrams of one flow joined, each `stride` bytes, and
//! `recvmmsg` fills several buffers at once), and the ECN bits both ways, so that
//! QUIC's congestion control sees what the path marked.
//!
//! Where the kernel or the interface refuses GSO, sends fall back to a datagram a
//! call on their own (quinn-udp finds that out on the first refused send); a
//! refused send is a lost datagram, which QUIC's loss recovery sends again, never
//! an error of the run. Errors that mean the peer is unreachable (ICMP's port
//! unreachable, seen on a connected socket) are returned.

use std::io::{self, IoSliceMut};
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsFd;

use quinn_proto::EcnCodepoint;
pub use quinn_udp::RecvMeta;
use quinn_udp::{Transmit, UdpSockRef, UdpSocketState};

/// The most datagrams one send carries: ten, as QUIC stacks commonly batch (a
/// larger burst buys little more and is more likely to overflow a queue).
pub const MAX_SEGMENTS: usize = 10;

/// The largest buffer a GRO receive fills (a joined run of datagrams is at most
/// one IP packet's worth).
pub const GRO_BUFFER: usize = 64 * 1024;

/// One UDP socket's offload state (what the kernel allows, found when set up and
/// on refused sends).
#[derive(Debug)]
pub struct Udp {
    state: UdpSocketState,
    gso: bool,
}

impl Udp {
    /// Sets the socket up for QUIC: GRO and the ECN bits on receive, no IP
    /// fragmentation; `gso` allows several datagrams per send where the kernel
    /// offers it. The socket must be bound.
    pub fn new<S: AsFd>(socket: &S, gso: bool) -> io::Result<Udp> {
        Ok(Udp {
            state: UdpSocketState::new(UdpSockRef::from(socket))?,
            gso,
        })
    }

    /// How many datagrams one send may carry now (1 without GSO).
    #[inline]
    pub fn segments(&self) -> usize {
        if self.gso {
            self.state.max_gso_segments().min(MAX_SEGMENTS)
        } else {
            1
        }
    }

    /// Sends `bytes` to `to`: one datagram, or several of `segment` bytes each (the
    /// last may be shorter) when `segment` is less than the length. `Ok` when sent
    /// or dropped as UDP drops (see the module's note); `WouldBlock` when the
    /// socket's buffer is full (nothing was sent).
    pub fn send<S: AsFd>(
        &self,
        socket: &S,
        to: SocketAddr,
        bytes: &[u8],
        segment: usize,
        ecn: Option<EcnCodepoint>,
    ) -> io::Result<()> {
        self.send_from(socket, to, None, bytes, segment, ecn)
    }

    /// [`Udp::send`] from the local address `from` (a socket bound to every
    /// address answers from the one the peer wrote to).
    pub fn send_from<S: AsFd>(
        &self,
        socket: &S,
        to: SocketAddr,
        from: Option<IpAddr>,
        bytes: &[u8],
        segment: usize,
        ecn: Option<EcnCodepoint>,
    ) -> io::Result<()> {
        let t = Transmit {
            destination: to,
            ecn: ecn.and_then(|e| quinn_udp::EcnCodepoint::from_bits(e as u8)),
            contents: bytes,
            segment_size: (segment != 0 && segment < bytes.len()).then_some(segment),
            src_ip: from,
        };
        match self.state.try_send(UdpSockRef::from(socket), &t) {
            Ok(()) => Ok(()),
            Err(e) => match e.raw_os_error() {
                // Too large for the path (an MTU probe), or an offload the interface
                // refused (quinn-udp stops using it): lost, and sent again by QUIC.
                Some(libc::EMSGSIZE | libc::EIO | libc::EINVAL) => Ok(()),
                // The socket's buffer is full of datagrams of this flow: the same.
                Some(libc::ENOBUFS) => Ok(()),
                _ => Err(e),
            },
        }
    }

    /// Receives into `bufs` (one receive per buffer, several in one call where the
    /// kernel has `recvmmsg`); `meta[i]` says how many bytes buffer `i` holds, from
    /// whom, and its datagrams' `stride`. Returns how many buffers were filled.
    pub fn recv<S: AsFd>(
        &self,
        socket: &S,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> io::Result<usize> {
        self.state.recv(UdpSockRef::from(socket), bufs, meta)
    }
}

/// The datagrams of one receive (`stride` bytes each but the last; 0: one
/// datagram), as QUIC takes them: each a share of one buffer made for the whole run,
/// which QUIC keeps as long as it holds stream data from any of them — one
/// allocation and one copy a receive, not a datagram.
pub fn split(received: &[u8], stride: usize) -> impl Iterator<Item = bytes::BytesMut> {
    let mut all = bytes::BytesMut::from(received);
    let stride = if stride == 0 { received.len() } else { stride };
    std::iter::from_fn(move || (!all.is_empty()).then(|| all.split_to(stride.min(all.len()))))
}

/// The bytes a receive's buffer holds (`meta.len`, within the buffer).
#[inline]
pub fn received<'a>(buf: &'a [u8], meta: &RecvMeta) -> &'a [u8] {
    &buf[..meta.len.min(buf.len())]
}

/// The ECN bits of a received datagram, as QUIC takes them.
#[inline]
pub fn ecn(meta: &RecvMeta) -> Option<EcnCodepoint> {
    meta.ecn.and_then(|e| EcnCodepoint::from_bits(e as u8))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;

    fn pair(gso: bool) -> (UdpSocket, Udp, UdpSocket, Udp) {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        let (ua, ub) = (Udp::new(&a, gso).unwrap(), Udp::new(&b, true).unwrap());
        (a, ua, b, ub)
    }

    /// Waits until `b` is readable (5 s at most: the test waits on readiness).
    fn readable(b: &UdpSocket) {
        use std::os::fd::AsRawFd;
        let mut p = libc::pollfd {
            fd: b.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd for the duration of the call.
        let n = unsafe { libc::poll(&mut p, 1, 5_000) };
        assert_eq!(n, 1, "datagrams within 5 s");
    }

    /// Receives until `count` datagrams came; returns them and the receive calls made.
    fn take(b: &UdpSocket, ub: &Udp, count: usize) -> (Vec<Vec<u8>>, usize) {
        let mut got = Vec::new();
        let mut calls = 0;
        let mut bufs = vec![vec![0u8; GRO_BUFFER]; 4];
        let mut meta = [RecvMeta::default(); 4];
        while got.len() < count {
            let mut slices: Vec<IoSliceMut<'_>> =
                bufs.iter_mut().map(|b| IoSliceMut::new(b)).collect();
            readable(b);
            let n = match ub.recv(b, &mut slices, &mut meta) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => panic!("{e}"),
            };
            calls += 1;
            for (buf, m) in bufs.iter().zip(&meta).take(n) {
                got.extend(split(received(buf, m), m.stride).map(|d| d.to_vec()));
            }
        }
        (got, calls)
    }

    fn payloads() -> Vec<Vec<u8>> {
        // Four full segments and a shorter last one, each told apart by its bytes.
        (0..5u8)
            .map(|i| vec![i + 1; if i == 4 { 700 } else { 1200 }])
            .collect()
    }

    #[test]
    fn datagrams_sent_together_arrive_whole_and_in_order() {
        for gso in [true, false] {
            let (a, ua, b, ub) = pair(gso);
            let to = b.local_addr().unwrap();
            let sent = payloads();
            let segments = ua.segments();
            assert!((1..=MAX_SEGMENTS).contains(&segments));
            if !gso {
                assert_eq!(segments, 1, "no GSO: a datagram a send");
            }
            // As QUIC readies them: up to `segments` equal datagrams in one buffer.
            for group in sent.chunks(segments) {
                let joined = group.concat();
                ua.send(&a, to, &joined, group[0].len(), None).unwrap();
            }
            let (got, calls) = take(&b, &ub, sent.len());
            assert_eq!(got, sent, "gso {gso}: every datagram whole, in order");
            if segments > 1 && ub.state.gro_segments() > 1 {
                // Sent together over loopback and received with GRO: they come
                // joined, fewer receives than datagrams.
                assert!(calls < sent.len(), "gso {gso}: {calls} receives");
            }
        }
    }

    #[test]
    fn a_send_too_large_for_the_path_is_a_lost_datagram_not_an_error() {
        let (a, ua, b, _) = pair(false);
        // Over UDP's 65,507-byte limit: the kernel refuses it with EMSGSIZE.
        let big = vec![0u8; 70_000];
        assert!(ua.send(&a, b.local_addr().unwrap(), &big, 0, None).is_ok());
    }
}
