//! stampede's reference server: every endpoint of the reference experiments, built to
//! be fast per core and safe on any input.
//!
//! [`Server::bind`] opens one `SO_REUSEPORT` listener per thread and address (so the
//! kernel spreads connections and threads share nothing) on an address no other socket
//! listens on: reuse-port is for the server's own threads, never a way to split load
//! with another server — a program attached to each group (`steer`) picks among the
//! server's sockets alone, so one another process adds later gets nothing — and
//! [`Server::run`] runs one
//! event loop per thread until a [`Shutdown`] is triggered, then drains. Tests (this
//! crate's, the engine's and the CLI's) run it in-process on `127.0.0.1:0` with
//! [`Running`], which stops it when dropped:
//!
//! ```no_run
//! use stampede_server::{Config, Running};
//! let server = Running::local(Config::default()).unwrap();
//! let url = server.url("/pong");
//! // … send requests to url …
//! server.stop().unwrap();
//! ```
//!
//! Each loop reads every ready byte into one per-thread buffer, parses every complete
//! (pipelined) request in it, writes all their answers with one `write`, and keeps
//! per-connection buffers only for the rare partial request or unfinished write; an idle
//! connection costs a few hundred bytes, which is what keeps 10,000 connections cheap.
//!
//! The pieces: `event_loop` (accepting, timers, draining; connection I/O in its
//! `conn`), the transport (TCP or TLS), and one sans-IO protocol value per connection,
//! [`h1::H1Conn`] or [`h2::H2Conn`], which parse input and append answers that the
//! [`routes`] produce, or [`ws::WsConn`] once an HTTP/1.1 connection upgraded to
//! WebSocket.
#![forbid(unsafe_code)]

pub mod date;
mod event_loop;
pub mod feed;
pub mod files;
pub mod grpc;
pub mod h1;
pub mod h2;
pub mod h3;
pub mod llm;
mod proto;
pub mod reflection;
pub mod request;
pub mod routes;
pub mod shop;
mod steer;
pub mod store;
mod transport;
pub mod ws;

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mio::net::TcpListener;
use mio::Waker;

use event_loop::EventLoop;
pub use request::Limits;
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
    /// (slowloris); so does a TLS handshake not done this long after the accept.
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
    /// How the mock LLM endpoints answer (see [`llm`]).
    pub llm: llm::LlmConfig,
    /// The mock LLM's batching engines' figures (`/metrics`), shared by the threads.
    pub llm_metrics: Arc<llm::metrics::Metrics>,
    /// Answer HTTP/3 too (with `tls`): QUIC on a UDP socket per thread on each
    /// address's port, the same routes and limits.
    pub http3: bool,
    /// The `Alt-Svc` value HTTP/1.1 and HTTP/2 answers carry (set by
    /// [`Server::bind`] when it serves HTTP/3: `h3=":PORT"; ma=86400`).
    pub alt_svc: Option<String>,
    /// Answer gRPC server reflection (v1 and v1alpha) from these files; without them a
    /// reflection call is answered UNIMPLEMENTED.
    pub reflection: Option<Arc<reflection::Reflection>>,
    /// How the TCP connections talk to the kernel (`--io`): io_uring where allowed
    /// and the connections are plain TCP, by default (see [`Server::io`]).
    pub io: stampede_ring::IoBackend,
    /// Bytes of answers waiting for clients that do not read them, over every
    /// connection of every thread, past which a WebSocket connection that adds to them
    /// is closed (1013, try again later) rather than held: clients that stop reading
    /// cannot take the server's memory however many they are.
    pub output_budget: usize,
    /// The time the loops read: the machine's, or a test's manual clock (see
    /// [`stampede_wire::clock`]) whose moves drive the timeouts above.
    pub clock: stampede_wire::clock::Clock,
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
            llm: llm::LlmConfig::default(),
            llm_metrics: Arc::default(),
            http3: false,
            alt_svc: None,
            reflection: None,
            io: stampede_ring::IoBackend::Auto,
            output_budget: 64 << 20,
            clock: stampede_wire::clock::Clock::real(),
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
    /// HTTP/3: each thread's UDP sockets, one per address.
    udp: Vec<Vec<std::net::UdpSocket>>,
    /// HTTP/3's counters, summed over the threads as each stops.
    h3_stats: Arc<Mutex<h3::H3Stats>>,
    local: Vec<SocketAddr>,
    config: Config,
    /// The connections go on io_uring; why not, when `auto` chose epoll.
    ring: bool,
    io_note: Option<String>,
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

/// Refuses an address another socket already listens on. `SO_REUSEPORT` would let the
/// server join a listener of the same user (a second server, or a stale one from an
/// earlier run) and split the load with it; a plain bind of the address, without
/// reuse-port, fails whenever anything listens there, whatever its options.
fn exclusive(addr: SocketAddr) -> io::Result<()> {
    use socket2::{Domain, Protocol, Socket, Type};
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    // Address reuse lets the bind pass over connections of an earlier run left in
    // TIME_WAIT, never over a listener.
    s.set_reuse_address(true)?;
    if addr.is_ipv6() {
        s.set_only_v6(true)?;
    }
    match s.bind(&addr.into()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AddrInUse => Err(io::Error::new(
            io::ErrorKind::AddrInUse,
            format!(
                "cannot listen on {addr}: the address is already in use (another server, \
                 or one left from an earlier run, listens there; stampede serve does not \
                 share a port)"
            ),
        )),
        Err(e) => Err(io::Error::new(
            e.kind(),
            format!("cannot listen on {addr}: {e}"),
        )),
    }
}

/// A UDP socket for HTTP/3 on `addr`, shared with the server's other threads
/// (reuse-port: the kernel keeps each client's datagrams on one of them).
fn datagram_socket(addr: SocketAddr) -> io::Result<std::net::UdpSocket> {
    use socket2::{Domain, Protocol, Socket, Type};
    let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    s.set_reuse_port(true)?;
    if addr.is_ipv6() {
        s.set_only_v6(true)?;
    }
    let _ = s.set_recv_buffer_size(4 << 20);
    let _ = s.set_send_buffer_size(4 << 20);
    s.set_nonblocking(true)?;
    s.bind(&addr.into())?;
    Ok(s.into())
}

/// Refuses a UDP address another socket is bound to, as [`exclusive`] does for TCP.
fn exclusive_udp(addr: SocketAddr) -> io::Result<()> {
    use socket2::{Domain, Protocol, Socket, Type};
    let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    if addr.is_ipv6() {
        s.set_only_v6(true)?;
    }
    s.bind(&addr.into()).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot serve HTTP/3 on UDP {addr}: {e} (another program uses that UDP port)"),
        )
    })
}

/// HTTP/3 handshakes in progress a thread holds before new ones must prove their
/// address with a Retry.
const HALF_OPEN: usize = 128;

/// How many times the kernel picks a port for TCP and UDP both (see [`Server::bind`]).
const PICKS: u32 = 16;

/// `bind`'s result, bound again while the port was `picked` by the kernel and found
/// in use (at most `picks` times in all).
fn pick_again<T>(
    picked: bool,
    picks: u32,
    mut bind: impl FnMut() -> io::Result<T>,
) -> io::Result<T> {
    let mut tries = 1;
    loop {
        match bind() {
            Err(e) if picked && e.kind() == io::ErrorKind::AddrInUse && tries < picks => tries += 1,
            r => return r,
        }
    }
}

impl Server {
    /// Binds every address once per thread. Port 0 picks a free port, shared by the
    /// threads' listeners. An address something already listens on is an error
    /// (`AddrInUse`, naming it), even where that listener allows reuse-port.
    ///
    /// With HTTP/3 the UDP port is the TCP one: a port the kernel picked is free for
    /// TCP, not necessarily for UDP, so when every port was left to the kernel and
    /// the UDP one is taken, the kernel picks again (up to 16 times).
    pub fn bind(addrs: &[SocketAddr], config: Config) -> io::Result<Server> {
        let picked = config.http3 && addrs.iter().all(|a| a.port() == 0);
        pick_again(picked, PICKS, || Server::bind_once(addrs, config.clone()))
    }

    fn bind_once(addrs: &[SocketAddr], mut config: Config) -> io::Result<Server> {
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
            if addr.port() != 0 {
                exclusive(addr)?;
            }
            let first = listener(addr)
                .map_err(|e| io::Error::new(e.kind(), format!("cannot listen on {addr}: {e}")))?;
            let bound = first.local_addr()?;
            local.push(bound);
            let mut group = vec![first];
            for _ in 1..config.threads {
                group.push(listener(bound)?);
            }
            // Every thread's listener has joined: connections go to them alone.
            steer::own_group(&group[0], steer::Group::Stream, group.len())?;
            for (t, l) in per_thread.iter_mut().zip(group) {
                t.push(TcpListener::from_std(l));
            }
        }
        let mut udp = Vec::new();
        if config.http3 {
            if config.tls.is_none() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "HTTP/3 is served over TLS: give the server a certificate (or a self-signed one)",
                ));
            }
            let port = local[0].port();
            if local.iter().any(|a| a.port() != port) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "HTTP/3's Alt-Svc names one port: listen on the same port on every address",
                ));
            }
            for &addr in &local {
                exclusive_udp(addr)?;
            }
            for _ in 0..config.threads {
                let mut mine = Vec::new();
                for &addr in &local {
                    mine.push(datagram_socket(addr).map_err(|e| {
                        io::Error::new(e.kind(), format!("cannot listen on UDP {addr}: {e}"))
                    })?);
                }
                udp.push(mine);
            }
            // Each address's group: the threads' sockets alone, a client's datagrams
            // kept on one of them.
            for (k, addr) in local.iter().enumerate() {
                let group = steer::Group::Datagram { v6: addr.is_ipv6() };
                steer::own_group(&udp[0][k], group, config.threads)?;
            }
            config.alt_svc = Some(format!("h3=\":{port}\"; ma=86400"));
        }
        // TCP connections, plain or TLS, can all go on the ring (HTTP/3's UDP sockets
        // stay on epoll whichever carries them).
        let (ring, io_note) =
            (config.io.decide(None)).map_err(|e| io::Error::new(io::ErrorKind::Unsupported, e))?;
        Ok(Server {
            per_thread,
            udp,
            h3_stats: Arc::default(),
            local,
            config,
            ring,
            io_note,
        })
    }

    /// HTTP/3's counters (connections, requests, Retries, errors), filled in as
    /// each thread stops: read them after [`Server::run`] returns.
    pub fn h3_stats(&self) -> Arc<Mutex<h3::H3Stats>> {
        self.h3_stats.clone()
    }

    /// Which kernel interface carries the TCP connections (`epoll` or `io_uring`),
    /// and why `auto` chose epoll when it did.
    pub fn io(&self) -> (&'static str, Option<&str>) {
        let name = if self.ring { "io_uring" } else { "epoll" };
        (name, self.io_note.as_deref())
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
        let rooms = Arc::new(ws::room::Rooms::default());
        let held = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        // Each thread's UDP sockets (HTTP/3's), with the QUIC endpoint answering on
        // each, carried by the thread's own loop beside its TCP connections.
        let mut datagrams: Vec<Vec<event_loop::Datagrams>> = Vec::new();
        if let Some(tls) = &self.config.tls {
            // The same request streams at once as over HTTP/2.
            let transport = stampede_quic::Transport {
                streams: h2::MAX_STREAMS as u32,
                ..Default::default()
            };
            let quic = stampede_quic::server_config(tls, &transport)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
            for (i, sockets) in self.udp.into_iter().enumerate() {
                let mut mine = Vec::new();
                for socket in sockets {
                    let ctx = routes::Ctx {
                        llm: self.config.llm,
                        llm_metrics: self.config.llm_metrics.clone(),
                        ..routes::Ctx::new(store.clone(), self.config.static_dir.clone(), i)
                    };
                    let mut ep = h3::H3Endpoint::new(
                        quic.clone(),
                        &transport,
                        ctx,
                        self.config.limits.clone(),
                    );
                    ep.max_connections = per_thread_max;
                    // Address validation once the thread holds half its share, or
                    // once 128 of its handshakes are in progress (Initials that never
                    // complete cost a Retry beyond that, not a connection's state).
                    ep.retry_above = Some(per_thread_max / 2);
                    ep.retry_handshaking = Some(HALF_OPEN);
                    let served = h3::Served {
                        endpoint: ep,
                        totals: self.h3_stats.clone(),
                    };
                    mine.push(event_loop::Datagrams::new(socket, Box::new(served))?);
                }
                datagrams.push(mine);
            }
        }
        let mut datagrams = datagrams.into_iter();
        let mut handles = Vec::new();
        for (i, listeners) in self.per_thread.into_iter().enumerate() {
            let lp = EventLoop::new(
                i,
                (listeners, datagrams.next().unwrap_or_default()),
                self.config.clone(),
                store.clone(),
                job_tx.clone(),
                per_thread_max,
                (rooms.clone(), held.clone()),
            )?
            .with_ring((self.ring).then_some(self.config.io == stampede_ring::IoBackend::IoUring));
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

/// A server running on threads of its own; dropping it stops the server and waits for
/// it to drain.
pub struct Running {
    addrs: Vec<SocketAddr>,
    shutdown: Shutdown,
    handle: Option<std::thread::JoinHandle<io::Result<()>>>,
}

impl Running {
    /// Binds `127.0.0.1:0` and serves with `config` until stopped.
    pub fn local(config: Config) -> io::Result<Running> {
        let server = Server::bind(&[SocketAddr::from(([127, 0, 0, 1], 0))], config)?;
        let addrs = server.local_addrs().to_vec();
        let shutdown = Shutdown::new();
        let s = shutdown.clone();
        let handle = std::thread::Builder::new()
            .name("stampede-serve".into())
            .spawn(move || server.run(s))?;
        Ok(Running {
            addrs,
            shutdown,
            handle: Some(handle),
        })
    }

    /// The address it listens on (the first, when there are several).
    pub fn addr(&self) -> SocketAddr {
        self.addrs[0]
    }

    /// `http://ADDR{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr())
    }

    /// The switch that stops it, for a test that stops it from elsewhere.
    pub fn shutdown(&self) -> &Shutdown {
        &self.shutdown
    }

    /// Stops it and waits until it has drained; its error, if it failed.
    pub fn stop(mut self) -> io::Result<()> {
        self.shutdown.trigger();
        match self.handle.take().map(|h| h.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(io::Error::other("a server thread panicked")),
            None => Ok(()),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.shutdown.trigger();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Binds `addrs` and serves until `shutdown` is triggered.
pub fn run(addrs: &[SocketAddr], config: Config, shutdown: Shutdown) -> io::Result<()> {
    Server::bind(addrs, config)?.run(shutdown)
}

/// A `/biteq` computation handed to the compute thread.
pub(crate) struct Job {
    id: [u8; 14],
    conn: usize,
    generation: u32,
    /// The HTTP/2 stream, or 0.
    stream: u32,
    reply: Sender<Done>,
    waker: Arc<Waker>,
}

/// A finished computation, back on its event loop.
pub(crate) struct Done {
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
pub(crate) const SERVER: &str = concat!("stampede/", env!("CARGO_PKG_VERSION"));
pub(crate) const SERVER_LINE: &str =
    concat!("Server: stampede/", env!("CARGO_PKG_VERSION"), "\r\n");

#[cfg(test)]
mod pick_tests {
    use super::*;

    #[test]
    fn a_picked_port_in_use_is_picked_again_and_a_given_one_is_not() {
        let in_use = || io::Error::new(io::ErrorKind::AddrInUse, "taken");
        // Taken twice, then free: the third pick binds.
        let mut calls = 0;
        let r = pick_again(true, 16, || {
            calls += 1;
            if calls < 3 {
                Err(in_use())
            } else {
                Ok(calls)
            }
        });
        assert_eq!(r.unwrap(), 3);
        // A port the user gave is theirs: in use is the answer, at once.
        let mut calls = 0;
        let r: io::Result<()> = pick_again(false, 16, || {
            calls += 1;
            Err(in_use())
        });
        assert_eq!(
            (r.unwrap_err().kind(), calls),
            (io::ErrorKind::AddrInUse, 1)
        );
        // Other errors are not retried, and the picks are bounded.
        let mut calls = 0;
        let r: io::Result<()> = pick_again(true, 16, || {
            calls += 1;
            Err(io::Error::new(io::ErrorKind::PermissionDenied, "no"))
        });
        assert_eq!(
            (r.unwrap_err().kind(), calls),
            (io::ErrorKind::PermissionDenied, 1)
        );
        let mut calls = 0;
        let r: io::Result<()> = pick_again(true, 16, || {
            calls += 1;
            Err(in_use())
        });
        assert_eq!(
            (r.unwrap_err().kind(), calls),
            (io::ErrorKind::AddrInUse, 16)
        );
    }
}
