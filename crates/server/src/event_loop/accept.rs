//! Accepting: each listener's new connections taken (one at a time from the ring's
//! multishot accept, or until `accept` would block on epoll), counted against the
//! connection limit (answered 503 and closed beyond it), paused when the process is
//! out of descriptors, and given a slot, TLS when configured, and the loop's events.

use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::time::Instant;

use mio::net::TcpStream;
use mio::{Interest, Token};
use stampede_ring::Carried;
use stampede_tls::TlsStream;

use super::{Conn, EventLoop, Proto, ACCEPT_BACKOFF};
use crate::transport::Io;

impl EventLoop {
    pub(super) fn accept(&mut self, li: usize, now: Instant) {
        loop {
            let Some(l) = self.listeners.get(li) else {
                return;
            };
            let next = match self.ring {
                // What the ring's multishot accept took, one at a time.
                Some(_) => match stampede_ring::accept(li as u32) {
                    Some(got) => got.map(|fd| TcpStream::from_std(fd.into())),
                    None => Err(io::ErrorKind::WouldBlock.into()),
                },
                None => l.accept().map(|(s, _)| s),
            };
            match next {
                Ok(mut stream) => {
                    if self.open >= self.max_open {
                        if self.config.tls.is_some() {
                            // A TLS client cannot read a plain answer; just close.
                            continue;
                        }
                        let _ = stream.write(
                            b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                        );
                        continue;
                    }
                    let _ = stream.set_nodelay(true);
                    let ci = self.free.pop().unwrap_or_else(|| {
                        self.conns.push(None);
                        self.conns.len() - 1
                    });
                    // The connection goes onto the ring (when the loop has one), TLS
                    // or not; one the ring gives back is watched by epoll.
                    let carried = match self.ring {
                        Some(_) => {
                            Carried::Epoll(stream).onto_ring(ci, false, OwnedFd::from, |fd| {
                                TcpStream::from_std(fd.into())
                            })
                        }
                        None => Carried::Epoll(stream),
                    };
                    let mut stream = match (carried, &self.config.tls) {
                        (Carried::Ring(s), None) => Io::Ring(s),
                        (Carried::Epoll(s), None) => Io::Plain(s),
                        (s, Some(cfg)) => match TlsStream::server(s, cfg.clone()) {
                            Ok(t) => Io::Tls(Box::new(t)),
                            Err(_) => {
                                self.free.push(ci);
                                continue;
                            }
                        },
                    };
                    if let Some(s) = stream.socket() {
                        let interest = Interest::READABLE | Interest::WRITABLE;
                        if self
                            .poll
                            .registry()
                            .register(s, Token(ci), interest)
                            .is_err()
                        {
                            self.free.push(ci);
                            continue;
                        }
                    }
                    self.generation = self.generation.wrapping_add(1);
                    self.conns[ci] = Some(Conn {
                        stream,
                        rbuf: Vec::new(),
                        wbuf: Vec::new(),
                        close_after: false,
                        head_since: None,
                        last_active: now,
                        generation: self.generation,
                        peer_closed: false,
                        proto: Proto::new(),
                        paused: false,
                        wrote_at: now,
                        held: (0, now),
                        accepted: now,
                        lingering: false,
                    });
                    self.open += 1;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
                    ) =>
                {
                    // Out of descriptors or memory: back off, then accept again
                    // whether or not another connection arrives meanwhile.
                    self.accept_retry = Some(now + ACCEPT_BACKOFF);
                    return;
                }
                // A connection reset or refused before it was accepted: take the next.
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::ECONNABORTED | libc::EPROTO | libc::EPERM)
                    ) => {}
                // Anything else: try again shortly rather than spin or give up.
                Err(_) => {
                    self.accept_retry = Some(now + ACCEPT_BACKOFF);
                    return;
                }
            }
        }
    }
}
