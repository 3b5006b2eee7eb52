//! The ring's sockets end to end over socket pairs and loopback TCP: bytes both ways
//! past the buffers and the output queue, the peer's end and a reset, slots freed and
//! reused, a multishot accept and its stop, a nap and the arrival stamps read after
//! it, and what is left without a ring.

use super::*;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;

fn wait_for(s: &mut Socket, want: usize) -> Vec<u8> {
    let mut got = Vec::new();
    let mut out = Vec::new();
    let end = Instant::now() + Duration::from_secs(5);
    let mut b = vec![0u8; 4096];
    while got.len() < want && Instant::now() < end {
        wait(Duration::from_millis(10), &mut out).unwrap();
        loop {
            match s.read(&mut b) {
                Ok(0) => return got,
                Ok(n) => got.extend_from_slice(&b[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("{e}"),
            }
        }
    }
    got
}

#[test]
fn a_probe_answers_either_way_and_says_why_when_refused() {
    // Where io_uring is refused the reason names what failed.
    if let Err(why) = probe() {
        assert!(why.to_string().starts_with("io_uring"), "{why}");
    }
}

/// A thread that asked whether io_uring works goes on with blocking I/O of its own: a
/// read with a timeout, begun at once after the probe, waits for its bytes rather than
/// failing with EINTR when the probe's ring is torn down.
#[test]
fn a_probe_leaves_its_thread_s_blocking_reads_alone() {
    for _ in 0..5 {
        let _ = probe();
        let (mut a, mut b) = UnixStream::pair().unwrap();
        a.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        // The read must already be blocked when the bytes come: the writer waits
        // until the kernel shows this thread asleep.
        let reader = unsafe { libc::gettid() };
        let writer = std::thread::spawn(move || {
            let stat = format!("/proc/self/task/{reader}/stat");
            let until = std::time::Instant::now() + Duration::from_secs(5);
            while !asleep(&stat) {
                assert!(
                    std::time::Instant::now() < until,
                    "the reader never blocked"
                );
                std::thread::yield_now();
            }
            b.write_all(b"late").unwrap();
            b
        });
        let mut got = [0u8; 4];
        let n = a.read(&mut got).expect("a blocking read after a probe");
        assert_eq!(&got[..n], b"late");
        writer.join().unwrap();
    }
}

/// Whether the thread whose `/proc/…/stat` is at `stat` is asleep (state `S`, as in a
/// blocking read).
fn asleep(stat: &str) -> bool {
    let s = std::fs::read_to_string(stat).unwrap_or_default();
    s.rsplit_once(')')
        .is_some_and(|(_, rest)| rest.trim_start().starts_with('S'))
}

/// A socket on the ring with a loopback peer, written to until its queue is full
/// (the kernel's buffers first): the socket, the peer, and the bytes written.
fn filled() -> (Socket, std::net::TcpStream, usize) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let ours = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (peer, _) = listener.accept().unwrap();
    ours.set_nonblocking(true).unwrap();
    let mut s = Socket::adopt(OwnedFd::from(ours), 3, false).unwrap();
    let chunk = vec![7u8; 256 << 10];
    let mut written = 0;
    let mut out = Vec::new();
    let end = Instant::now() + Duration::from_secs(5);
    while Instant::now() < end {
        match s.write(&chunk) {
            Ok(n) => written += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) => panic!("{e}"),
        }
        wait(Duration::from_millis(5), &mut out).unwrap();
    }
    (s, peer, written)
}

/// Waits on the ring until `done` or 5 s have passed.
fn wait_until(mut done: impl FnMut() -> bool) {
    let mut out = Vec::new();
    let end = Instant::now() + Duration::from_secs(5);
    while !done() && Instant::now() < end {
        wait(Duration::from_millis(5), &mut out).unwrap();
    }
}

/// Output a peer leaves unread is counted while it waits in the process, and leaves
/// the count as the kernel takes it; an aborted socket's is dropped (its send in
/// flight cancelled) though the peer never reads, and its close resets the connection.
#[test]
fn output_waiting_for_a_peer_is_counted_until_it_goes_or_is_dropped() {
    if probe().is_err() {
        return;
    }
    let _ring = install(-1).unwrap();
    assert_eq!(queued(), 0);
    // A peer that reads everything: the count goes back to nothing.
    let (s, mut peer, written) = filled();
    let held = queued();
    assert!(
        held >= OUTBOX_LIMIT && held <= written,
        "{held} of {written}"
    );
    let reader = std::thread::spawn(move || {
        let mut b = vec![0u8; written];
        peer.read_exact(&mut b).unwrap();
        peer
    });
    wait_until(|| queued() == 0);
    assert_eq!(queued(), 0);
    // And the buffers that held it give their memory back.
    let kept = s.output_capacity();
    assert!(kept <= 2 * KEPT_CAPACITY, "{kept} bytes kept");
    drop((s, reader.join().unwrap()));
    // A peer that never reads: aborted, nothing is left waiting.
    let (mut s, mut peer, _) = filled();
    assert!(queued() >= OUTBOX_LIMIT, "{}", queued());
    s.abort();
    wait_until(|| queued() == 0);
    assert_eq!(queued(), 0);
    drop(s);
    peer.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut b = vec![0u8; 64 << 10];
    let err = loop {
        match peer.read(&mut b) {
            Ok(0) => panic!("an orderly close, not a reset"),
            Ok(_) => wait(Duration::ZERO, &mut Vec::new()).unwrap(),
            Err(e) => break e,
        }
    };
    assert_eq!(err.kind(), io::ErrorKind::ConnectionReset, "{err}");
}

#[test]
fn bytes_go_both_ways_in_order_beyond_the_buffers_and_the_queue() {
    if probe().is_err() {
        return;
    }
    let _ring = install(-1).unwrap();
    let (a, mut peer) = UnixStream::pair().unwrap();
    let mut s = Socket::adopt(OwnedFd::from(a), 7, false).unwrap();
    // 3 MiB each way: more than the provided buffers, the inbox's pause and the
    // output queue hold, so receives pause and resume and writes block.
    let data: Vec<u8> = (0..3 << 20).map(|i| (i % 251) as u8).collect();
    let echo = std::thread::spawn(move || {
        let mut all = vec![0u8; 3 << 20];
        peer.read_exact(&mut all).unwrap();
        peer.write_all(&all).unwrap();
        peer
    });
    let mut written = 0;
    let mut got = Vec::new();
    let mut out = Vec::new();
    let mut b = vec![0u8; 65536];
    let end = Instant::now() + Duration::from_secs(20);
    let mut writable_seen = false;
    while got.len() < data.len() && Instant::now() < end {
        while written < data.len() {
            match s.write(&data[written..]) {
                Ok(n) => written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("{e}"),
            }
        }
        wait(Duration::from_millis(20), &mut out).unwrap();
        for ev in &out {
            // epoll_event is packed: its fields are copied out, not borrowed.
            let (token, bits) = (ev.u64, ev.events);
            assert_eq!(token, 7);
            writable_seen |= bits & OUT != 0;
        }
        loop {
            match s.read(&mut b) {
                Ok(0) => panic!("closed early"),
                Ok(n) => got.extend_from_slice(&b[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("{e}"),
            }
        }
    }
    assert!(
        got == data,
        "{} of {} bytes, in order",
        got.len(),
        data.len()
    );
    assert!(
        writable_seen,
        "a blocked write is told when the queue has room"
    );
    let peer = echo.join().unwrap();
    drop(s);
    drop(peer);
}

#[test]
fn the_peer_closing_is_read_as_the_end_and_a_closed_socket_frees_its_slot() {
    if probe().is_err() {
        return;
    }
    let _ring = install(-1).unwrap();
    let (a, mut peer) = UnixStream::pair().unwrap();
    let mut s = Socket::adopt(OwnedFd::from(a), 1, false).unwrap();
    peer.write_all(b"last words").unwrap();
    drop(peer);
    assert_eq!(wait_for(&mut s, 100), b"last words");
    assert_eq!(s.read(&mut [0u8; 8]).unwrap(), 0);
    drop(s);
    // The slot is freed once its receive has ended, and reused by the next socket.
    let mut out = Vec::new();
    for _ in 0..10 {
        wait(Duration::from_millis(5), &mut out).unwrap();
    }
    let (c, mut peer2) = UnixStream::pair().unwrap();
    let mut s2 = Socket::adopt(OwnedFd::from(c), 2, false).unwrap();
    assert_eq!(s2.slot, 0, "the slot was reused");
    s2.write_all(b"hello").unwrap();
    wait(Duration::from_millis(5), &mut out).unwrap();
    let mut five = [0u8; 5];
    peer2.read_exact(&mut five).unwrap();
    assert_eq!(&five, b"hello");
    // A socket closed by us shows the peer the end of the stream.
    drop(s2);
    wait(Duration::from_millis(5), &mut out).unwrap();
    let mut rest = Vec::new();
    peer2.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty());
}

#[test]
fn a_reset_is_an_error_event_then_the_error_on_read() {
    if probe().is_err() {
        return;
    }
    let _ring = install(-1).unwrap();
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (srv, _) = l.accept().unwrap();
    let mut s = Socket::adopt(OwnedFd::from(c), 3, false).unwrap();
    socket2::SockRef::from(&srv)
        .set_linger(Some(Duration::ZERO))
        .unwrap();
    drop(srv);
    let mut out = Vec::new();
    let end = Instant::now() + Duration::from_secs(5);
    let mut bits = 0;
    while bits == 0 && Instant::now() < end {
        wait(Duration::from_millis(10), &mut out).unwrap();
        bits = out.iter().fold(0, |b, e| b | e.events);
    }
    assert_ne!(bits & IN, 0);
    let e = s.read(&mut [0u8; 8]).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ECONNRESET), "{e}");
}

#[test]
fn without_a_ring_a_socket_is_given_back_and_reads_fail_cleanly() {
    let (a, _b) = UnixStream::pair().unwrap();
    let raw = a.as_raw_fd();
    let back = Socket::adopt(OwnedFd::from(a), 0, false).err().unwrap();
    assert_eq!(back.as_raw_fd(), raw);
    let mut s = Socket { slot: 0, gen: 0 };
    assert!(s.read(&mut [0u8; 4]).is_err());
    std::mem::forget(s);
}

#[test]
fn a_multishot_accept_hands_over_each_connection_until_told_to_stop() {
    if probe().is_err() {
        return;
    }
    let _ring = install(-1).unwrap();
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let addr = l.local_addr().unwrap();
    listen(0, l.as_raw_fd(), 9).unwrap();
    let clients: Vec<std::net::TcpStream> = (0..20)
        .map(|_| std::net::TcpStream::connect(addr).unwrap())
        .collect();
    let mut got = Vec::new();
    let mut told = false;
    let mut out = Vec::new();
    let end = Instant::now() + Duration::from_secs(5);
    while got.len() < clients.len() && Instant::now() < end {
        wait(Duration::from_millis(10), &mut out).unwrap();
        told |= out.iter().any(|e| {
            let token = e.u64;
            token == 9
        });
        while let Some(c) = accept(0) {
            got.push(c.unwrap());
        }
    }
    assert_eq!(got.len(), 20, "every connection handed over once");
    assert!(told, "the listener's token is reported readable");
    // Each is a connected socket: what the client sends arrives.
    let mut first = std::net::TcpStream::from(got.remove(0));
    (&clients[0]).write_all(b"x").unwrap();
    first.set_nonblocking(false).unwrap();
    let mut one = [0u8; 1];
    first.read_exact(&mut one).unwrap();
    // Stopped: a later connection waits in the backlog, untaken.
    unlisten(0);
    for _ in 0..5 {
        wait(Duration::from_millis(5), &mut out).unwrap();
    }
    let _late = std::net::TcpStream::connect(addr).unwrap();
    for _ in 0..5 {
        wait(Duration::from_millis(5), &mut out).unwrap();
    }
    assert!(accept(0).is_none());
}

/// The wall clock, as the kernel's arrival stamps read it.
fn wall() -> Duration {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
}

/// Reads what `s` has, waiting on the ring (5 s at most) until it has something; the
/// waits' events are added to `out`.
fn read_stamped_soon(
    s: &mut Socket,
    got: &mut [u8],
    out: &mut Vec<libc::epoll_event>,
) -> (usize, Option<Duration>) {
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        wait(Duration::ZERO, out).unwrap();
        match s.read_stamped(got) {
            Ok(r) => return r,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && Instant::now() < end => {
                wait(Duration::from_millis(10), out).unwrap();
            }
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn a_nap_sends_what_was_written_sleeps_through_the_answer_and_the_stamp_says_when_it_came() {
    if probe().is_err() {
        return;
    }
    let _ring = install(-1).unwrap();
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let client = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (mut peer, _) = l.accept().unwrap();
    let fd = OwnedFd::from(client);
    let on = 1i32;
    // SAFETY: sets an int option on a descriptor we own, from a live int.
    let set = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const i32).cast(),
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    };
    assert_eq!(set, 0);
    let mut s = Socket::adopt_stamped(fd, 3, false).unwrap();
    let mut got = [0u8; 16];
    let mut out = Vec::new();
    // The kernel turns its receive stamps on a moment after the first socket asks:
    // bytes go over until one comes stamped, so that the answer below is too.
    let stamped = (0..1000).any(|_| {
        peer.write_all(b"p").unwrap();
        let (n, at) = read_stamped_soon(&mut s, &mut got, &mut out);
        assert_eq!(&got[..n], b"p");
        at.is_some()
    });
    assert!(stamped, "no stamp after 1,000 reads");
    // The peer answers at once what it is sent.
    let echo = std::thread::spawn(move || {
        let mut b = [0u8; 4];
        peer.read_exact(&mut b).unwrap();
        peer.write_all(b"pong").unwrap();
        let mut rest = Vec::new();
        // Until the socket is closed.
        peer.read_to_end(&mut rest).unwrap();
    });
    s.write_all(b"ping").unwrap();
    let before = wall();
    let napped = Instant::now();
    // The nap is what submits the send; the answer, back within it, does not end it.
    nap(Duration::from_millis(300)).unwrap();
    assert!(napped.elapsed() >= Duration::from_millis(300));
    out.clear();
    let (n, at) = read_stamped_soon(&mut s, &mut got, &mut out);
    assert_eq!(&got[..n], b"pong");
    assert!(out.iter().any(|e| e.u64 == 3));
    // Stamped when it came, not when it was read: well before the nap's end.
    let at = at.expect("an arrival stamp");
    assert!(at >= before - Duration::from_millis(5), "{at:?} {before:?}");
    assert!(at < wall() - Duration::from_millis(100), "{at:?}");
    // The end of the stream comes through the stamped receive too.
    s.shutdown(std::net::Shutdown::Write);
    echo.join().unwrap();
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        wait(Duration::from_millis(10), &mut out).unwrap();
        match s.read_stamped(&mut got) {
            Ok((0, _)) => break,
            Ok((n, _)) => panic!("{n} bytes after the answer"),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && Instant::now() < end => {}
            Err(e) => panic!("{e}"),
        }
    }
}
