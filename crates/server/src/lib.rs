//! stampede's reference server: every endpoint of the reference experiments, built to
//! be fast per core and safe on any input.
//!
//! [`Server::bind`] opens one `SO_REUSEPORT` listener per thread and address (so the
//! kernel spreads connections and threads share nothing), and [`Server::run`] runs one
//! event loop per thread until a [`Shutdown`] is triggered, then drains. Tests bind
//! `127.0.0.1:0` and run it in-process:
//!
//! ```no_run
//! use stampede_server::{Config, Server, Shutdown};
//! let server = Server::bind(&["127.0.0.1:0".parse().unwrap()], Config::default()).unwrap();
//! let addr = server.local_addrs()[0];
//! let shutdown = Shutdown::new();
//! let handle = { let s = shutdown.clone(); std::thread::spawn(move || server.run(s)) };
//! // … send requests to addr …
//! shutdown.trigger();
//! handle.join().unwrap().unwrap();
//! ```
//!
//! Each loop reads every ready byte into one per-thread buffer, parses every complete
//! (pipelined) request in it, writes all their answers with one `write`, and keeps
//! per-connection buffers only for the rare partial request or unfinished write; an idle
//! connection costs a few hundred bytes, which is what keeps 10,000 connections cheap.
#![forbid(unsafe_code)]

pub mod date;
pub mod h2;
pub mod request;
pub mod routes;
pub mod store;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token, Waker};

use date::DateCache;
use h2::{H2Conn, H2Respond};
pub use request::Limits;
use request::{Parsed, Request};
use routes::{Ctx, Deferred, Http1, Pattern, Persist, Respond, Routed, BODY_CHUNK};
use stampede_tls::TlsStream;
use store::Store;

/// Server settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// Event-loop threads (one listener per thread and address).
    pub threads: usize,
    /// Serve `/static/…` and `/FiringGeometry.png` from this directory instead of the
    /// built-in file.
    pub static_dir: Option<PathBuf>,
    /// Request size limits.
    pub limits: Limits,
    /// A request head not complete this long after its first byte closes the connection
    /// (slowloris).
    pub head_timeout: Duration,
    /// An idle keep-alive connection is closed after this long.
    pub idle_timeout: Duration,
    /// Open connections at most (spread over the threads); more are answered 503.
    pub max_connections: usize,
    /// How long a shutdown waits for in-flight requests.
    pub drain_timeout: Duration,
    /// Serve HTTPS with this configuration (`stampede_tls::server_config`) instead of
    /// plain HTTP.
    pub tls: Option<Arc<stampede_tls::rustls::ServerConfig>>,
    /// Answer HTTP/2 as well: a connection that opens with the HTTP/2 preface (h2c
    /// prior knowledge, or TLS after ALPN chose `h2`) speaks HTTP/2.
    pub http2: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            threads: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            static_dir: None,
            limits: Limits::default(),
            head_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            max_connections: 100_000,
            drain_timeout: Duration::from_secs(10),
            tls: None,
            http2: true,
        }
    }
}

/// Stops a running server: it stops accepting, finishes what is in flight, and returns.
#[derive(Clone, Default)]
pub struct Shutdown {
    inner: Arc<ShutdownInner>,
}

#[derive(Default)]
struct ShutdownInner {
    flag: AtomicBool,
    wakers: Mutex<Vec<Arc<Waker>>>,
}

impl Shutdown {
    /// A shutdown switch, not yet triggered.
    pub fn new() -> Shutdown {
        Shutdown::default()
    }

    /// Triggers the shutdown and wakes every event loop.
    pub fn trigger(&self) {
        self.inner.flag.store(true, Ordering::SeqCst);
        for w in self
            .inner
            .wakers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            let _ = w.wake();
        }
    }

    /// Whether the shutdown was triggered.
    pub fn is_triggered(&self) -> bool {
        self.inner.flag.load(Ordering::SeqCst)
    }

    fn add_waker(&self, w: Arc<Waker>) {
        self.inner
            .wakers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(w);
        if self.is_triggered() {
            let _ = self.inner.wakers.lock().map(|v| v.last().map(|w| w.wake()));
        }
    }
}

/// A bound server, ready to run.
pub struct Server {
    per_thread: Vec<Vec<TcpListener>>,
    local: Vec<SocketAddr>,
    config: Config,
}

fn listener(addr: SocketAddr) -> io::Result<std::net::TcpListener> {
    use socket2::{Domain, Protocol, Socket, Type};
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    s.set_reuse_address(true)?;
    s.set_reuse_port(true)?;
    if addr.is_ipv6() {
        s.set_only_v6(true)?;
    }
    s.set_nonblocking(true)?;
    s.bind(&addr.into())?;
    s.listen(4096)?;
    Ok(s.into())
}

impl Server {
    /// Binds every address once per thread. Port 0 picks a free port, shared by the
    /// threads' listeners.
    pub fn bind(addrs: &[SocketAddr], mut config: Config) -> io::Result<Server> {
        if addrs.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "no address to listen on",
            ));
        }
        config.threads = config.threads.max(1);
        let mut local = Vec::new();
        let mut per_thread: Vec<Vec<TcpListener>> =
            (0..config.threads).map(|_| Vec::new()).collect();
        for &addr in addrs {
            let first = listener(addr)
                .map_err(|e| io::Error::new(e.kind(), format!("cannot listen on {addr}: {e}")))?;
            let bound = first.local_addr()?;
            local.push(bound);
            per_thread[0].push(TcpListener::from_std(first));
            for t in per_thread.iter_mut().skip(1) {
                t.push(TcpListener::from_std(listener(bound)?));
            }
        }
        Ok(Server {
            per_thread,
            local,
            config,
        })
    }

    /// The addresses actually bound (with the ports picked for port 0).
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.local
    }

    /// Runs until `shutdown` is triggered and in-flight requests are answered.
    pub fn run(self, shutdown: Shutdown) -> io::Result<()> {
        let store = Arc::new(Store::generate());
        let (job_tx, job_rx) = mpsc::channel::<Job>();
        let compute = std::thread::Builder::new()
            .name("stampede-compute".into())
            .spawn(move || compute_loop(job_rx))?;
        let threads = self.per_thread.len();
        let per_thread_max = (self.config.max_connections / threads).max(1);
        let mut handles = Vec::new();
        for (i, listeners) in self.per_thread.into_iter().enumerate() {
            let lp = EventLoop::new(
                i,
                listeners,
                self.config.clone(),
                store.clone(),
                job_tx.clone(),
                per_thread_max,
            )?;
            shutdown.add_waker(lp.waker.clone());
            let sd = shutdown.clone();
            handles.push(
                std::thread::Builder::new()
                    .name(format!("stampede-serve-{i}"))
                    .spawn(move || lp.run(sd))?,
            );
        }
        drop(job_tx);
        let mut result = Ok(());
        for h in handles {
            match h.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => result = Err(e),
                Err(_) => result = Err(io::Error::other("a server thread panicked")),
            }
        }
        let _ = compute.join();
        result
    }
}

/// Binds `addrs` and serves until `shutdown` is triggered.
pub fn run(addrs: &[SocketAddr], config: Config, shutdown: Shutdown) -> io::Result<()> {
    Server::bind(addrs, config)?.run(shutdown)
}

/// A `/biteq` computation handed to the compute thread.
struct Job {
    id: [u8; 14],
    conn: usize,
    generation: u32,
    /// The HTTP/2 stream, or 0.
    stream: u32,
    reply: Sender<Done>,
    waker: Arc<Waker>,
}

/// A finished computation, back on its event loop.
struct Done {
    conn: usize,
    generation: u32,
    stream: u32,
    body: [u8; 27],
}

fn compute_loop(rx: Receiver<Job>) {
    while let Ok(first) = rx.recv() {
        // Take everything queued, answer it, wake each loop once.
        let mut batch = vec![first];
        batch.extend(rx.try_iter());
        let mut woken: Vec<*const Waker> = Vec::new();
        for job in &batch {
            let body = routes::biteq_body(&job.id);
            let _ = job.reply.send(Done {
                conn: job.conn,
                generation: job.generation,
                stream: job.stream,
                body,
            });
        }
        for job in &batch {
            let p = Arc::as_ptr(&job.waker);
            if !woken.contains(&p) {
                woken.push(p);
                let _ = job.waker.wake();
            }
        }
    }
}

/// The `Server` header's value, and its HTTP/1 line.
const SERVER: &str = concat!("stampede/", env!("CARGO_PKG_VERSION"));
const SERVER_LINE: &str = concat!("Server: stampede/", env!("CARGO_PKG_VERSION"), "\r\n");

const WAKE: Token = Token(usize::MAX);
const LISTENER_BASE: usize = usize::MAX / 2;
/// Output buffered for a connection beyond which its further requests wait.
const MAX_PENDING_OUTPUT: usize = 4 * 1024 * 1024;
const IO_BUF: usize = 64 * 1024;
/// Reads of one connection per wake-up: a client that sends without pause (a flood
/// of frames) gets its turn and then waits for the others' (epoll is edge-triggered,
/// so it is queued to be read again).
const READS_PER_WAKE: usize = 16;
/// How long accepting pauses when the process is out of descriptors.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// A connection's transport: plain TCP, or TLS over it.
enum Io {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl Io {
    fn socket(&mut self) -> &mut TcpStream {
        match self {
            Io::Plain(s) => s,
            Io::Tls(t) => &mut t.io,
        }
    }

    /// Whether TLS output is still waiting for the socket.
    fn wants_write(&self) -> bool {
        matches!(self, Io::Tls(t) if t.wants_write())
    }

    /// Pushes pending TLS output; an error means the connection is gone.
    fn flush_pending(&mut self) -> io::Result<()> {
        match self {
            Io::Plain(_) => Ok(()),
            Io::Tls(t) => t.flush_pending().map(|_| ()),
        }
    }

    /// Ends our side: close_notify first for TLS.
    fn shutdown_write(&mut self) {
        if let Io::Tls(t) = self {
            t.close_notify();
        }
        let _ = self.socket().shutdown(std::net::Shutdown::Write);
    }
}

impl Read for Io {
    #[inline]
    fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        match self {
            Io::Plain(s) => s.read(b),
            Io::Tls(t) => t.read(b),
        }
    }
}

impl Write for Io {
    #[inline]
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        match self {
            Io::Plain(s) => s.write(b),
            Io::Tls(t) => t.write(b),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        self.flush_pending()
    }
}

struct Conn {
    stream: Io,
    /// Unparsed input (a partial request, or requests queued behind a deferred one).
    rbuf: Vec<u8>,
    /// Output not yet written.
    wbuf: Vec<u8>,
    close_after: bool,
    /// Waiting for a deferred answer: `(persist, head)`.
    blocked: Option<(Persist, bool)>,
    head_since: Option<Instant>,
    last_active: Instant,
    generation: u32,
    /// The peer sent FIN: answer what was asked, then close.
    peer_closed: bool,
    /// Nothing parsed yet: the HTTP/2 preface may come.
    fresh: bool,
    /// Speaking HTTP/2.
    h2: Option<Box<H2Conn>>,
    /// Reading stopped while output waits for the client.
    paused: bool,
    /// `100 Continue` was sent for the request whose body is awaited.
    continued: bool,
    /// The rest of a generated body, made as the client takes it; requests behind it
    /// wait, as they do behind a deferred answer.
    tail: Option<Pattern>,
    /// When output last made progress: output that makes none for the idle timeout
    /// ends the connection.
    wrote_at: Instant,
    /// HTTP/2 body bytes held for the client's windows, and since when that count.
    held: (usize, Instant),
}

struct EventLoop {
    poll: Poll,
    waker: Arc<Waker>,
    listeners: Vec<TcpListener>,
    config: Config,
    jobs: Sender<Job>,
    done_tx: Sender<Done>,
    done_rx: Receiver<Done>,
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    open: usize,
    max_open: usize,
    date: DateCache,
    /// Deferred answers due: (when, connection, generation, HTTP/2 stream or 0).
    delays: BinaryHeap<Reverse<(Instant, usize, u32, u32)>>,
    ibuf: Vec<u8>,
    out: Vec<u8>,
    ctx: Ctx,
    /// An HTTP/2 request's path, and a generated body, reused.
    h2_path: Vec<u8>,
    h2_body: Vec<u8>,
    generation: u32,
    draining: bool,
    /// Connections whose read budget ran out with data left: (connection, its
    /// generation, whether the peer had closed).
    reread: Vec<(usize, u32, bool)>,
    /// Out of descriptors: accepting is tried again then. The listener is
    /// edge-triggered, so connections already waiting in its backlog would otherwise
    /// wait for another to arrive, and with a full backlog none ever does.
    accept_retry: Option<Instant>,
}

impl EventLoop {
    fn new(
        index: usize,
        listeners: Vec<TcpListener>,
        config: Config,
        store: Arc<Store>,
        jobs: Sender<Job>,
        max_open: usize,
    ) -> io::Result<EventLoop> {
        let poll = Poll::new()?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKE)?);
        let (done_tx, done_rx) = mpsc::channel();
        Ok(EventLoop {
            poll,
            waker,
            listeners,
            ctx: Ctx::new(store, config.static_dir.clone(), index),
            config,
            jobs,
            done_tx,
            done_rx,
            conns: Vec::new(),
            free: Vec::new(),
            open: 0,
            max_open,
            date: DateCache::new(),
            delays: BinaryHeap::new(),
            ibuf: vec![0; IO_BUF],
            out: Vec::with_capacity(IO_BUF),
            h2_path: Vec::with_capacity(128),
            h2_body: Vec::new(),
            generation: 0,
            draining: false,
            reread: Vec::new(),
            accept_retry: None,
        })
    }

    fn run(mut self, shutdown: Shutdown) -> io::Result<()> {
        for (i, l) in self.listeners.iter_mut().enumerate() {
            self.poll
                .registry()
                .register(l, Token(LISTENER_BASE + i), Interest::READABLE)?;
        }
        let mut events = Events::with_capacity(1024);
        let mut next_scan = Instant::now() + Duration::from_secs(1);
        let mut drain_deadline = None;
        loop {
            let now = Instant::now();
            let mut timeout = next_scan.saturating_duration_since(now);
            if let Some(Reverse((t, ..))) = self.delays.peek() {
                timeout = timeout.min(t.saturating_duration_since(now));
            }
            if !self.reread.is_empty() {
                timeout = Duration::ZERO;
            }
            if let Some(t) = self.accept_retry {
                timeout = timeout.min(t.saturating_duration_since(now));
            }
            match self.poll.poll(&mut events, Some(timeout)) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            self.date.refresh();
            let now = Instant::now();
            for ev in events.iter() {
                match ev.token() {
                    WAKE => {}
                    Token(t) if t >= LISTENER_BASE => self.accept(t - LISTENER_BASE, now),
                    Token(ci) => {
                        let closing = ev.is_read_closed() || ev.is_error();
                        if ev.is_writable() {
                            self.flush(ci, now);
                        }
                        if ev.is_readable() || closing {
                            self.on_readable(ci, now, closing);
                        }
                    }
                }
            }
            if self.accept_retry.is_some_and(|t| now >= t) {
                self.accept_retry = None;
                for li in 0..self.listeners.len() {
                    self.accept(li, now);
                }
            }
            for (ci, generation, closing) in std::mem::take(&mut self.reread) {
                if self.conns[ci]
                    .as_ref()
                    .is_some_and(|c| c.generation == generation)
                {
                    self.on_readable(ci, now, closing);
                }
            }
            while let Ok(d) = self.done_rx.try_recv() {
                self.finish_biteq(d, now);
            }
            while let Some(&Reverse((t, ci, g, stream))) = self.delays.peek() {
                if t > now {
                    break;
                }
                self.delays.pop();
                self.finish_delay(ci, g, stream, now);
            }
            if now >= next_scan {
                self.scan(now);
                next_scan = now + Duration::from_secs(1);
            }
            if shutdown.is_triggered() && !self.draining {
                self.draining = true;
                drain_deadline = Some(now + self.config.drain_timeout);
                for mut l in std::mem::take(&mut self.listeners) {
                    let _ = self.poll.registry().deregister(&mut l);
                }
                for ci in 0..self.conns.len() {
                    if let Some(c) = self.conns[ci].as_mut() {
                        if let Some(h) = c.h2.as_mut() {
                            // Streams opened so far are answered; then the close.
                            self.out.clear();
                            h.go_away(&mut self.out);
                            self.write_out(ci);
                            self.after_io(ci, now);
                            continue;
                        }
                    }
                    if self.is_idle(ci) {
                        self.close(ci);
                    }
                }
            }
            if self.draining && (self.open == 0 || drain_deadline.is_some_and(|d| now >= d)) {
                return Ok(());
            }
        }
    }

    fn accept(&mut self, li: usize, now: Instant) {
        loop {
            let Some(l) = self.listeners.get(li) else {
                return;
            };
            match l.accept() {
                Ok((mut stream, _)) => {
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
                    if self
                        .poll
                        .registry()
                        .register(
                            &mut stream,
                            Token(ci),
                            Interest::READABLE | Interest::WRITABLE,
                        )
                        .is_err()
                    {
                        self.free.push(ci);
                        continue;
                    }
                    let stream = match &self.config.tls {
                        None => Io::Plain(stream),
                        Some(cfg) => match TlsStream::server(stream, cfg.clone()) {
                            Ok(t) => Io::Tls(Box::new(t)),
                            Err(_) => {
                                self.free.push(ci);
                                continue;
                            }
                        },
                    };
                    self.generation = self.generation.wrapping_add(1);
                    self.conns[ci] = Some(Conn {
                        stream,
                        rbuf: Vec::new(),
                        wbuf: Vec::new(),
                        close_after: false,
                        blocked: None,
                        head_since: None,
                        last_active: now,
                        generation: self.generation,
                        peer_closed: false,
                        fresh: true,
                        h2: None,
                        paused: false,
                        continued: false,
                        tail: None,
                        wrote_at: now,
                        held: (0, now),
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

    fn is_idle(&self, ci: usize) -> bool {
        match &self.conns[ci] {
            Some(c) => {
                c.rbuf.is_empty()
                    && c.wbuf.is_empty()
                    && c.blocked.is_none()
                    && c.tail.is_none()
                    && !c.stream.wants_write()
                    && c.h2.as_ref().is_none_or(|h| h.open_streams() == 0)
            }
            None => false,
        }
    }

    fn close(&mut self, ci: usize) {
        if let Some(mut c) = self.conns[ci].take() {
            let _ = self.poll.registry().deregister(c.stream.socket());
            self.free.push(ci);
            self.open -= 1;
        }
    }

    fn on_readable(&mut self, ci: usize, now: Instant, closing: bool) {
        for reads in 0.. {
            let Some(c) = self.conns[ci].as_mut() else {
                return;
            };
            if reads == READS_PER_WAKE {
                self.reread.push((ci, c.generation, closing));
                break;
            }
            if c.rbuf.len() > self.config.limits.max_head + self.config.limits.max_body
                || (c.h2.is_some() && c.wbuf.len() >= MAX_PENDING_OUTPUT)
            {
                // Queued behind a deferred answer or a full output buffer: read later.
                c.paused = true;
                return;
            }
            match c.stream.read(&mut self.ibuf) {
                Ok(0) => {
                    c.peer_closed = true;
                    if c.rbuf.is_empty() && c.wbuf.is_empty() && c.blocked.is_none() {
                        self.close(ci);
                        return;
                    }
                    break;
                }
                Ok(n) => {
                    c.last_active = now;
                    let full = n == self.ibuf.len();
                    if c.rbuf.is_empty()
                        && c.blocked.is_none()
                        && c.tail.is_none()
                        && c.wbuf.len() < MAX_PENDING_OUTPUT
                    {
                        // Fast path: parse straight from the thread's buffer.
                        let ibuf = std::mem::take(&mut self.ibuf);
                        let used = self.process(ci, &ibuf[..n], now);
                        if let Some(c) = self.conns[ci].as_mut() {
                            c.rbuf.extend_from_slice(&ibuf[used..n]);
                        }
                        self.ibuf = ibuf;
                    } else {
                        c.rbuf.extend_from_slice(&self.ibuf[..n]);
                        self.process_buffered(ci, now);
                    }
                    if self.conns[ci].is_none() {
                        return;
                    }
                    if !full && !closing {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.close(ci);
                    return;
                }
            }
        }
        self.after_io(ci, now);
    }

    /// Parses what the connection has buffered.
    fn process_buffered(&mut self, ci: usize, now: Instant) {
        let Some(c) = self.conns[ci].as_mut() else {
            return;
        };
        if c.blocked.is_some() || c.tail.is_some() || c.rbuf.is_empty() {
            return;
        }
        let rbuf = std::mem::take(&mut c.rbuf);
        let used = self.process(ci, &rbuf, now);
        if let Some(c) = self.conns[ci].as_mut() {
            let mut rest = rbuf;
            rest.drain(..used);
            // Anything that arrived meanwhile stays after what was already queued.
            rest.append(&mut c.rbuf);
            c.rbuf = rest;
        }
    }

    /// Answers every complete request at the start of `data`; returns the bytes used.
    fn process(&mut self, ci: usize, data: &[u8], now: Instant) -> usize {
        let mut pos = 0;
        loop {
            let (used, resume) = self.process_once(ci, &data[pos..], now);
            pos += used;
            // A generated body went out whole at once: the requests behind it go on.
            if !resume || pos == data.len() {
                return pos;
            }
        }
    }

    /// Answers complete requests at the start of `data` until one must wait; returns
    /// the bytes used, and whether it stopped at a generated body that has since gone
    /// out whole (so the requests after it can be answered now). Inlined into
    /// [`EventLoop::process`], whose loop is one function frame on the hot path.
    #[inline(always)]
    fn process_once(&mut self, ci: usize, data: &[u8], now: Instant) -> (usize, bool) {
        if let Some(c) = self.conns[ci].as_mut() {
            if c.close_after {
                // The connection ends after what was answered: whatever follows a refused
                // or closing request is never parsed (it may hide a smuggled request).
                return (data.len(), false);
            }
            if c.h2.is_some() {
                return (self.process_h2(ci, data, now), false);
            }
            if c.fresh && matches!(&c.stream, Io::Tls(t) if t.alpn() == Some(b"h2")) {
                // ALPN chose HTTP/2: whatever comes must be its preface.
                return (self.process_h2(ci, data, now), false);
            }
            if c.fresh && self.config.http2 {
                let n = data.len().min(h2::PREFACE.len());
                if data[..n] == h2::PREFACE[..n] {
                    if n < h2::PREFACE.len() {
                        c.head_since = c.head_since.or(Some(now));
                        return (0, false);
                    }
                    return (self.process_h2(ci, data, now), false);
                }
                c.fresh = false;
            }
        }
        let mut pos = 0;
        self.out.clear();
        let mut close = false;
        let mut defer: Option<(Deferred, Persist, bool)> = None;
        let mut tail = None;
        // Whether `100 Continue` went out for the request whose body is awaited.
        let mut continued = self.conns[ci].as_ref().is_some_and(|c| c.continued);
        let (date, server) = (self.date.line(), SERVER_LINE.as_bytes());
        let pending_out = self.conns[ci].as_ref().map_or(0, |c| c.wbuf.len());
        while pos < data.len() && pending_out + self.out.len() < MAX_PENDING_OUTPUT {
            match request::parse(&data[pos..], &self.config.limits) {
                Parsed::Partial(waiting) => {
                    if waiting.is_some_and(|w| w.expects_continue) && !continued {
                        continued = true;
                        self.out.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
                    }
                    break;
                }
                Parsed::Rejected(r) => {
                    routes::respond(
                        &mut self.out,
                        date,
                        server,
                        r.status(),
                        "text/plain",
                        b"request refused\n",
                        Persist::Close,
                        request::Method::Get,
                    );
                    close = true;
                    pos = data.len();
                    break;
                }
                Parsed::Complete(req, len) => {
                    pos += len;
                    continued = false;
                    let keep = req.keep_alive && !self.draining;
                    let req = Request {
                        keep_alive: keep,
                        ..req
                    };
                    let mut resp = Http1 {
                        out: &mut self.out,
                        date,
                        server,
                        persist: Persist::of(&req),
                        method: req.method,
                        tail: None,
                    };
                    match routes::route(&req, &mut self.ctx, &mut resp) {
                        Routed::Written => {}
                        Routed::Later(d) => {
                            defer =
                                Some((d, Persist::of(&req), req.method == request::Method::Head));
                        }
                    }
                    tail = resp.tail;
                    if !req.keep_alive {
                        close = true;
                    }
                    if close || defer.is_some() || tail.is_some() {
                        break;
                    }
                }
            }
        }
        let Some(c) = self.conns[ci].as_mut() else {
            return (pos, false);
        };
        let stopped_at_tail = tail.is_some();
        c.tail = tail;
        c.continued = continued;
        if close && defer.is_none() {
            c.close_after = true;
            // Nothing after a closing request is answered.
            pos = data.len();
        }
        c.head_since = if pos < data.len() && defer.is_none() && !stopped_at_tail {
            c.head_since.or(Some(now))
        } else {
            None
        };
        if let Some((d, persist, head)) = defer {
            c.blocked = Some((persist, head));
            if close {
                c.close_after = true;
            }
            let g = c.generation;
            self.defer(d, ci, g, 0, now);
        }
        self.write_out(ci);
        if !stopped_at_tail {
            return (pos, false);
        }
        self.pump_tail(ci);
        let done = self.conns[ci]
            .as_ref()
            .is_some_and(|c| c.tail.is_none() && !c.close_after && c.wbuf.is_empty());
        (pos, done)
    }

    /// Makes and writes the rest of a generated body while the socket takes it whole;
    /// what it does not take waits in `wbuf` for the next writable event.
    fn pump_tail(&mut self, ci: usize) {
        while let Some(c) = self.conns[ci].as_mut() {
            if !c.wbuf.is_empty() {
                return;
            }
            let Some(t) = c.tail.as_mut() else { return };
            self.out.clear();
            t.fill(&mut self.out, BODY_CHUNK);
            if t.left() == 0 {
                c.tail = None;
            }
            self.write_out(ci);
        }
    }

    /// Schedules a deferred answer.
    fn defer(&mut self, d: Deferred, ci: usize, generation: u32, stream: u32, now: Instant) {
        match d {
            Deferred::Delay(ms) => self.delays.push(Reverse((
                now + Duration::from_millis(ms),
                ci,
                generation,
                stream,
            ))),
            Deferred::Biteq(id) => {
                let _ = self.jobs.send(Job {
                    id,
                    conn: ci,
                    generation,
                    stream,
                    reply: self.done_tx.clone(),
                    waker: self.waker.clone(),
                });
            }
        }
    }

    /// HTTP/2: handles the frames at the start of `data`, answers what is ready;
    /// returns the bytes used.
    fn process_h2(&mut self, ci: usize, data: &[u8], now: Instant) -> usize {
        self.out.clear();
        let Some(c) = self.conns[ci].as_mut() else {
            return 0;
        };
        c.fresh = false;
        let h = c.h2.get_or_insert_with(|| {
            Box::new(H2Conn::new(self.config.limits.clone(), &mut self.out))
        });
        let used = match h.feed(data, &mut self.out) {
            Ok(n) => n,
            Err(e) => {
                h2::frame::goaway(&mut self.out, h.last_stream(), e.code);
                c.close_after = true;
                data.len()
            }
        };
        // A partial frame, or a header block still open, must be finished within the
        // head timeout, as an HTTP/1 request head must.
        let open = c.h2.as_ref().is_some_and(|h| h.in_header_block());
        c.head_since = if used < data.len() || open {
            c.head_since.or(Some(now))
        } else {
            None
        };
        self.route_h2(ci, now);
        used
    }

    /// Routes the HTTP/2 requests that are complete while the output has room, then
    /// writes `self.out` (which may already hold control frames).
    fn route_h2(&mut self, ci: usize, now: Instant) {
        let (date, server) = (self.date.value(), SERVER.as_bytes());
        let mut later = Vec::new();
        let generation = self.conns[ci].as_ref().map_or(0, |c| c.generation);
        while let Some(c) = self.conns[ci].as_mut() {
            let Some(h) = c.h2.as_mut() else { break };
            if c.close_after || c.wbuf.len() + self.out.len() + h.held() >= MAX_PENDING_OUTPUT {
                break;
            }
            let Some(ready) = h.next_ready(&mut self.h2_path) else {
                break;
            };
            let (path, query) = request::split_target(&self.h2_path);
            let req = Request {
                method: ready.method,
                path,
                query,
                keep_alive: true,
                http10: false,
            };
            let mut resp = H2Respond {
                conn: h,
                out: &mut self.out,
                stream: ready.stream,
                head: ready.method == request::Method::Head,
                date,
                server,
                body: &mut self.h2_body,
            };
            if let Some(status) = ready.refuse {
                resp.respond(status, "text/plain", b"request refused\n");
                continue;
            }
            if let Routed::Later(d) = routes::route(&req, &mut self.ctx, &mut resp) {
                later.push((d, ready.stream));
            }
        }
        if self.h2_body.capacity() > IO_BUF {
            self.h2_body = Vec::new();
        }
        for (d, stream) in later {
            self.defer(d, ci, generation, stream, now);
        }
        self.write_out(ci);
    }

    /// Writes `self.out` to the connection, keeping what the socket does not take.
    fn write_out(&mut self, ci: usize) {
        if self.out.is_empty() {
            return;
        }
        let Some(c) = self.conns[ci].as_mut() else {
            return;
        };
        if !c.wbuf.is_empty() {
            c.wbuf.extend_from_slice(&self.out);
            self.out.clear();
            return;
        }
        let mut off = 0;
        while off < self.out.len() {
            match c.stream.write(&self.out[off..]) {
                Ok(0) => break,
                Ok(n) => off += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        if off < self.out.len() {
            // Output starts to wait for the client: its progress is timed from now.
            c.wrote_at = Instant::now();
            c.wbuf.extend_from_slice(&self.out[off..]);
        }
        self.out.clear();
    }

    fn flush(&mut self, ci: usize, now: Instant) {
        let Some(c) = self.conns[ci].as_mut() else {
            return;
        };
        if c.stream.flush_pending().is_err() {
            self.close(ci);
            return;
        }
        let mut off = 0;
        while off < c.wbuf.len() {
            match c.stream.write(&c.wbuf[off..]) {
                Ok(0) => break,
                Ok(n) => off += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.close(ci);
                    return;
                }
            }
        }
        c.wbuf.drain(..off);
        if c.wbuf.is_empty() && c.wbuf.capacity() > IO_BUF {
            c.wbuf = Vec::new();
        }
        if off > 0 {
            c.last_active = now;
            c.wrote_at = now;
            let (h2, paused) = (c.h2.is_some(), std::mem::take(&mut c.paused));
            // Room again: the rest of a generated body, then requests that waited.
            self.pump_tail(ci);
            self.process_buffered(ci, now);
            if h2 {
                self.out.clear();
                self.route_h2(ci, now);
            }
            if paused {
                // Bytes may have been left in the socket meanwhile.
                self.on_readable(ci, now, false);
                return;
            }
        }
        self.after_io(ci, now);
    }

    /// Closes the connection if it is done.
    fn after_io(&mut self, ci: usize, _now: Instant) {
        let Some(c) = self.conns[ci].as_ref() else {
            return;
        };
        let streams =
            c.h2.as_ref()
                .is_some_and(|h| h.open_streams() > 0 && !c.close_after);
        let done = c.wbuf.is_empty()
            && c.blocked.is_none()
            && c.tail.is_none()
            && !c.stream.wants_write()
            && !streams;
        if done
            && (c.close_after
                || (c.peer_closed && c.rbuf.is_empty())
                || (self.draining && c.rbuf.is_empty()))
        {
            if c.close_after {
                if let Some(c) = self.conns[ci].as_mut() {
                    c.stream.shutdown_write();
                }
            }
            self.close(ci);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn finish_deferred(
        &mut self,
        ci: usize,
        generation: u32,
        stream: u32,
        status: u16,
        ctype: &str,
        body: &[u8],
        now: Instant,
    ) {
        let Some(c) = self.conns[ci].as_mut() else {
            return;
        };
        if c.generation != generation {
            return;
        }
        if let Some(h) = c.h2.as_mut() {
            // The client may have reset the stream meanwhile.
            if let Some(method) = h.waiting(stream) {
                self.out.clear();
                let sent = if method == request::Method::Head {
                    &[][..]
                } else {
                    body
                };
                h.respond(
                    &mut self.out,
                    stream,
                    status,
                    ctype,
                    body.len(),
                    sent,
                    None,
                    self.date.value(),
                    SERVER.as_bytes(),
                );
                self.route_h2(ci, now);
                self.after_io(ci, now);
            }
            return;
        }
        let Some((mut persist, head)) = c.blocked.take() else {
            return;
        };
        if self.draining {
            // The server is stopping: this answer is the connection's last.
            persist = Persist::Close;
            c.close_after = true;
        }
        self.out.clear();
        let method = if head {
            request::Method::Head
        } else {
            request::Method::Get
        };
        routes::respond(
            &mut self.out,
            self.date.line(),
            SERVER_LINE.as_bytes(),
            status,
            ctype,
            body,
            persist,
            method,
        );
        self.write_out(ci);
        self.process_buffered(ci, now);
        if self.conns[ci]
            .as_ref()
            .is_some_and(|c| c.blocked.is_none() && !c.peer_closed)
        {
            // Bytes may have been left in the socket while blocked.
            self.on_readable(ci, now, false);
        } else {
            self.after_io(ci, now);
        }
    }

    fn finish_biteq(&mut self, d: Done, now: Instant) {
        self.finish_deferred(
            d.conn,
            d.generation,
            d.stream,
            200,
            "text/plain",
            &d.body,
            now,
        );
    }

    fn finish_delay(&mut self, ci: usize, generation: u32, stream: u32, now: Instant) {
        self.finish_deferred(ci, generation, stream, 200, "text/plain", b"delayed\n", now);
    }

    /// Once a second: slowloris and idle connections.
    fn scan(&mut self, now: Instant) {
        for ci in 0..self.conns.len() {
            let Some(c) = self.conns[ci].as_mut() else {
                continue;
            };
            let timed_out = c
                .head_since
                .is_some_and(|t| now - t >= self.config.head_timeout);
            let idle = c.rbuf.is_empty()
                && c.wbuf.is_empty()
                && c.blocked.is_none()
                && c.tail.is_none()
                && c.h2.as_ref().is_none_or(|h| h.open_streams() == 0)
                && now - c.last_active >= self.config.idle_timeout;
            // Output the client does not take is no progress: a connection whose
            // output waits for the idle timeout is ended like an idle one. So are
            // HTTP/2 bodies held for a window the client never opens (PINGs do not
            // count as progress).
            let mut stalled = !c.wbuf.is_empty() && now - c.wrote_at >= self.config.idle_timeout;
            if let Some(h) = &c.h2 {
                let held = h.held();
                if held == 0 || held != c.held.0 {
                    c.held = (held, now);
                } else {
                    stalled |= now - c.held.1 >= self.config.idle_timeout;
                }
            }
            if timed_out || idle || stalled {
                let mut bye = Vec::new();
                match (&c.h2, timed_out) {
                    (Some(h), _) => h2::frame::goaway(&mut bye, h.last_stream(), h2::frame::NO_ERROR),
                    (None, true) => bye.extend_from_slice(
                        b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    ),
                    (None, false) => {}
                }
                if !bye.is_empty() {
                    let _ = c.stream.write(&bye);
                    let _ = c.stream.flush_pending();
                }
                self.close(ci);
            }
        }
    }
}
