//! The floor under an HTTP/1.1 keep-alive load generator on this kernel.
//!
//! Two clients that do nothing but the network exchange — send a fixed GET, read until
//! the response's Content-Length is complete, send again — on N connections for S
//! seconds: one on epoll with one `send` and one `recv` per request (the syscall shape
//! stampede's engine has), one on io_uring, where every wake-up submits all the sends
//! and receives it has gathered in a single `io_uring_enter` (single issuer, deferred
//! task running, registered files). Neither parses more than the head's end and
//! Content-Length, records latency or keeps counters by kind, so the CPU they spend
//! per request is what the kernel charges for the exchange itself. bench/floor.sh runs
//! them beside stampede and wrk to show how close the engine is to that floor, and
//! whether io_uring lowers it.
//!
//!   stampede-probe epoll|uring HOST:PORT CONNECTIONS SECONDS

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::ExitCode;
use std::time::{Duration, Instant};

const BUF: usize = 16 * 1024;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mode, addr, conns, secs) = match parse(&args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("stampede-probe: {e}\nusage: stampede-probe epoll|uring HOST:PORT CONNECTIONS SECONDS");
            return ExitCode::from(2);
        }
    };
    let streams = match (0..conns)
        .map(|_| {
            let s = TcpStream::connect(&addr)?;
            s.set_nodelay(true)?;
            Ok(s)
        })
        .collect::<io::Result<Vec<_>>>()
    {
        Ok(s) => s,
        Err(e) => {
            eprintln!("stampede-probe: connect {addr}: {e}");
            return ExitCode::from(1);
        }
    };
    let request = format!("GET /pong HTTP/1.1\r\nHost: {addr}\r\n\r\n").into_bytes();
    let duration = Duration::from_secs_f64(secs);
    let started = Instant::now();
    let result = match mode.as_str() {
        "epoll" => epoll(streams, &request, duration),
        _ => uring(streams, &request, duration),
    };
    match result {
        Ok(done) => {
            let wall = started.elapsed().as_secs_f64();
            println!(
                "{mode} {done} requests in {wall:.2}s, {:.0} req/s",
                done as f64 / wall
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("stampede-probe: {e}");
            ExitCode::from(1)
        }
    }
}

fn parse(args: &[String]) -> Result<(String, String, usize, f64), String> {
    let [mode, addr, conns, secs] = args else {
        return Err(format!("expected 4 arguments, got {}", args.len()));
    };
    if mode != "epoll" && mode != "uring" {
        return Err(format!("mode {mode:?}: expected epoll or uring"));
    }
    let conns: usize = conns.parse().ok().filter(|&c| c > 0).ok_or(format!(
        "CONNECTIONS {conns:?}: expected a positive integer"
    ))?;
    let secs: f64 = secs
        .parse()
        .ok()
        .filter(|&s: &f64| s > 0.0 && s.is_finite())
        .ok_or(format!("SECONDS {secs:?}: expected a positive number"))?;
    Ok((mode.clone(), addr.clone(), conns, secs))
}

/// How long the response at the start of `buf` is, once its head is complete.
fn response_len(buf: &[u8]) -> io::Result<Option<usize>> {
    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
        return Ok(None);
    };
    let head = &buf[..end];
    let length = head
        .split(|&b| b == b'\n')
        .filter_map(|line| {
            let line = std::str::from_utf8(line).ok()?.trim_end_matches('\r');
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())?
        })
        .next()
        .ok_or_else(|| io::Error::other("response without Content-Length"))?;
    Ok(Some(end + 4 + length))
}

/// Accounts `n` new bytes on a connection; true when its response is complete.
fn advance(buf: &[u8], have: &mut usize, n: usize) -> io::Result<bool> {
    *have += n;
    match response_len(&buf[..*have])? {
        Some(len) if len == *have => {
            *have = 0;
            Ok(true)
        }
        Some(len) if len < *have => Err(io::Error::other("more bytes than one response")),
        _ if *have == buf.len() => Err(io::Error::other("response larger than the buffer")),
        _ => Ok(false),
    }
}

fn epoll(mut streams: Vec<TcpStream>, request: &[u8], duration: Duration) -> io::Result<u64> {
    // SAFETY: a plain syscall; a valid result is a new descriptor that only `ep` owns
    // (closed when it drops, on every return).
    let ep = match unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) } {
        fd if fd < 0 => return Err(io::Error::last_os_error()),
        // SAFETY: `fd` was just created and nothing else owns it.
        fd => unsafe { OwnedFd::from_raw_fd(fd) },
    };
    for (i, s) in streams.iter_mut().enumerate() {
        s.set_nonblocking(true)?;
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: i as u64,
        };
        // SAFETY: ev outlives the call; the fd is open.
        if unsafe { libc::epoll_ctl(ep.as_raw_fd(), libc::EPOLL_CTL_ADD, s.as_raw_fd(), &mut ev) }
            < 0
        {
            return Err(io::Error::last_os_error());
        }
        s.write_all(request)?;
    }
    let mut bufs = vec![vec![0u8; BUF]; streams.len()];
    let mut have = vec![0usize; streams.len()];
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 1024];
    let end = Instant::now() + duration;
    let (mut done, mut in_flight) = (0u64, streams.len());
    while in_flight > 0 {
        // SAFETY: events has room for the count passed.
        let n = unsafe {
            libc::epoll_wait(
                ep.as_raw_fd(),
                events.as_mut_ptr(),
                events.len() as i32,
                1000,
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n == 0 {
            return Err(io::Error::other("no response for a second"));
        }
        let sending = Instant::now() < end;
        for ev in &events[..n as usize] {
            let i = ev.u64 as usize;
            let got = match streams[i].read(&mut bufs[i][have[i]..]) {
                Ok(0) => return Err(io::Error::other("server closed a connection")),
                Ok(got) => got,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(e),
            };
            if advance(&bufs[i], &mut have[i], got)? {
                done += 1;
                if sending {
                    // A request this small fits the empty socket buffer in one send.
                    if streams[i].write(request)? != request.len() {
                        return Err(io::Error::other("short send"));
                    }
                } else {
                    in_flight -= 1;
                }
            }
        }
    }
    Ok(done)
}

fn uring(streams: Vec<TcpStream>, request: &[u8], duration: Duration) -> io::Result<u64> {
    use io_uring::{opcode, squeue, types, IoUring};
    let mut ring: IoUring<squeue::Entry> = IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .build(4096)?;
    let fds: Vec<i32> = streams.iter().map(|s| s.as_raw_fd()).collect();
    ring.submitter().register_files(&fds)?;
    let mut bufs = vec![vec![0u8; BUF]; streams.len()];
    let mut have = vec![0usize; streams.len()];
    // user_data: connection index × 2, +1 for a receive.
    let send = |i: usize| {
        opcode::Send::new(
            types::Fixed(i as u32),
            request.as_ptr(),
            request.len() as u32,
        )
        .build()
        .user_data(2 * i as u64)
    };
    let recv = |i: usize, buf: &mut [u8], from: usize| {
        // SAFETY (for the kernel's write): the buffer stays alive and unmoved until
        // its completion is reaped; bufs is never resized.
        let p = unsafe { buf.as_mut_ptr().add(from) };
        opcode::Recv::new(types::Fixed(i as u32), p, (buf.len() - from) as u32)
            .build()
            .user_data(2 * i as u64 + 1)
    };
    let mut queue: Vec<squeue::Entry> = Vec::with_capacity(4 * streams.len());
    for (i, buf) in bufs.iter_mut().enumerate() {
        queue.push(send(i));
        queue.push(recv(i, buf, 0));
    }
    let end = Instant::now() + duration;
    let (mut done, mut in_flight) = (0u64, streams.len());
    let mut reaped: Vec<(u64, i32)> = Vec::with_capacity(4 * streams.len());
    while in_flight > 0 {
        {
            let mut sq = ring.submission();
            for e in queue.drain(..) {
                // SAFETY: every entry's buffers outlive its completion (see recv).
                unsafe { sq.push(&e) }.map_err(|_| io::Error::other("submission queue full"))?;
            }
        }
        ring.submitter()
            .submit_with_args(
                1,
                &types::SubmitArgs::new().timespec(&types::Timespec::new().sec(1)),
            )
            .or_else(|e| {
                if e.raw_os_error() == Some(libc::ETIME) {
                    Ok(0)
                } else {
                    Err(e)
                }
            })?;
        reaped.clear();
        reaped.extend(ring.completion().map(|c| (c.user_data(), c.result())));
        if reaped.is_empty() {
            return Err(io::Error::other("no completion for a second"));
        }
        let sending = Instant::now() < end;
        for &(ud, res) in &reaped {
            let i = (ud / 2) as usize;
            if res < 0 {
                return Err(io::Error::from_raw_os_error(-res));
            }
            if ud % 2 == 0 {
                if res as usize != request.len() {
                    return Err(io::Error::other("short send"));
                }
                continue;
            }
            if res == 0 {
                return Err(io::Error::other("server closed a connection"));
            }
            if advance(&bufs[i], &mut have[i], res as usize)? {
                done += 1;
                if sending {
                    queue.push(send(i));
                    queue.push(recv(i, &mut bufs[i], 0));
                } else {
                    in_flight -= 1;
                }
            } else {
                let from = have[i];
                queue.push(recv(i, &mut bufs[i], from));
            }
        }
    }
    Ok(done)
}
