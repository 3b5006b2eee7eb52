//! Which side was the limit of a run: the server, the client, or the network.
//!
//! A load generator that fills its own core measures itself, not the server. Every
//! run therefore carries a [`Limit`]: each worker thread's CPU busy share and its wait
//! for a CPU (from the scheduler's own accounting in `/proc/<tid>/schedstat`, read
//! when the thread starts and ends and sampled each second for the busiest second),
//! the offered against the achieved rate of an open model and whether it fell behind
//! its schedule (from the send lag), how often every connection was busy when a
//! request was due, the link's use where the target is across a network interface, and — filled in by the lab where it started the
//! target — the target's CPU against the cores it may use. [`Limit::judge`] turns them
//! into a verdict with the figures that decided it.
//!
//! A thread that was running or waiting to run for 90 % of the run had no time to
//! spare: whatever the server could do, this client could not ask faster. Waiting
//! counts as busy on purpose: a client that shares its core with another busy process
//! is just as much the limit as one that fills the core itself. So does any time the
//! thread was not idle (blocked on its sockets or a due time with nothing to do, as
//! the worker counts it): the scheduler charges the thread neither the interrupts its
//! sends cause nor a virtual machine's stolen time, which can be a tenth of a core.

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// A thread's share of one core at or above which it is taken as saturated.
pub const SATURATED: f64 = 0.9;

/// The side that limited a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The server set the pace: the figures describe it.
    ServerBound,
    /// The client had no time to spare: the figures describe stampede as much as the
    /// server.
    ClientBound,
    /// The network link between them was nearly full.
    NetworkBound,
    /// Neither side shows a limit (a held rate with time to spare on both sides, or
    /// too little data to judge).
    Undetermined,
}

impl Verdict {
    /// The name used in reports, JSON and the store.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::ServerBound => "server-bound",
            Verdict::ClientBound => "client-bound",
            Verdict::NetworkBound => "network-bound",
            Verdict::Undetermined => "undetermined",
        }
    }
}

/// One worker thread's load over the run, each as a share of one core.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ThreadLoad {
    /// Time on a CPU over the thread's wall time.
    pub busy: f64,
    /// Time runnable but waiting for a CPU over its wall time.
    pub waiting: f64,
    /// The highest [`ThreadLoad::demand`] of any whole second (0 when the run was
    /// shorter than a second).
    pub peak: f64,
    /// Time blocked with nothing to do (waiting on its sockets, or for the next
    /// request's due time) over its wall time; absent where it was not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle: Option<f64>,
}

impl ThreadLoad {
    /// How much of the run the thread wanted a CPU: busy plus waiting, or the time it
    /// was not idle where that is more. The scheduler charges neither interrupt
    /// handling (a loopback send's receive path runs on the sender's CPU) nor a
    /// virtual machine's stolen time to the thread, so a thread that never idled can
    /// read 85 % busy; the time it was not idle catches that.
    pub fn demand(&self) -> f64 {
        let scheduled = self.busy + self.waiting;
        match self.idle {
            Some(idle) => scheduled.max(1.0 - idle),
            None => scheduled,
        }
    }
}

/// The network interface a TCP target is reached through.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Network {
    /// Interface name, e.g. `eth0`.
    pub interface: String,
    /// Its link speed in megabits per second, as the kernel reports it.
    pub speed_mbps: f64,
    /// The busier direction's use over the run, in megabits per second.
    pub used_mbps: f64,
}

/// The target's CPU use, where the lab started and sampled it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetLoad {
    /// Cores' worth of CPU time over the measured run (user + system).
    pub busy_cores: f64,
    /// Cores it may run on (its pinning, or the machine's).
    pub cores: f64,
    /// The busiest of its threads as a share of one core, where known.
    pub busiest_thread: Option<f64>,
}

/// The limit verdict and the figures behind it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Limit {
    /// The verdict.
    pub verdict: Verdict,
    /// Why, in one sentence with the deciding figures.
    pub reason: String,
    /// Each worker thread's load (every segment's, after a merge).
    pub client_threads: Vec<ThreadLoad>,
    /// Cores the client process may run on.
    pub client_cores: f64,
    /// The open model's offered rate (req/s or sessions/s).
    pub offered_rps: Option<f64>,
    /// Completed responses per second.
    pub achieved_rps: f64,
    /// Open model: moments a request was due with every connection busy, per request
    /// started.
    pub pool_saturation: Option<f64>,
    /// Link use, where the target is across a network interface of known speed.
    pub network: Option<Network>,
    /// The target's CPU, where the lab sampled it.
    pub target: Option<TargetLoad>,
    /// The queue in front of the server, where its metrics were scraped and it grew.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_queue: Option<crate::measure::server::QueueGrowth>,
}

/// What [`Limit::judge`] needs besides the figures kept in the limit.
#[derive(Debug, Clone, Copy)]
pub struct Context {
    /// The run's length in seconds.
    pub duration_s: f64,
    /// Whether the run was a closed model (connections wait on their answers).
    pub closed: bool,
    /// Whether the open model fell behind its schedule (see `OpenStats::behind`).
    pub behind: bool,
    /// Requests whose connection could not be opened (refused, timed out, out of
    /// descriptors or ports, the TLS handshake), and requests started in all.
    pub unconnected: (u64, u64),
}

impl Limit {
    /// The busiest client thread, with its index.
    pub fn busiest_client(&self) -> Option<(usize, ThreadLoad)> {
        self.client_threads
            .iter()
            .copied()
            .enumerate()
            .max_by(|a, b| a.1.demand().total_cmp(&b.1.demand()))
    }

    /// Sets the verdict and its reason from the figures.
    pub fn judge(&mut self, cx: Context) {
        let (verdict, reason) = self.decide(cx);
        self.verdict = verdict;
        self.reason = reason;
    }

    fn decide(&self, cx: Context) -> (Verdict, String) {
        let pct = |x: f64| format!("{:.0} %", x * 100.0);
        if cx.duration_s < 0.5 {
            return (
                Verdict::Undetermined,
                format!("the run lasted {:.2} s, too short to judge", cx.duration_s),
            );
        }
        // Connections that could not be opened say nothing of the server's pace: the
        // kernel's queues, the client's ports or descriptors, or the server's backlog
        // may have refused them, and the answers that came are the few that got in.
        // Unless the server was seen to be saturated, no side is named.
        let (unconnected, started) = cx.unconnected;
        if unconnected * 10 > started && self.target_saturation().is_none() {
            return (
                Verdict::Undetermined,
                format!(
                    "{unconnected} of {started} requests could not open their connection: the limit may be the kernel's queues or the client's sockets as well as the server's backlog, and the figures are those of the connections that got in"
                ),
            );
        }
        let Some((i, busiest)) = self.busiest_client() else {
            return (
                Verdict::Undetermined,
                "no CPU figures for the client's threads".to_string(),
            );
        };
        let threads = self.client_threads.len();
        let client_saturated = busiest.demand() >= SATURATED;
        let thread = if threads == 1 {
            "the client's one worker thread".to_string()
        } else {
            format!("client worker thread {} of {threads}", i + 1)
        };
        let client_figure = match busiest.idle {
            Some(idle) => format!(
                "{thread} used {} of a core, waited for a CPU {} of the time and spent {} of it in its waits (idle, or the kernel at work for its sockets)",
                pct(busiest.busy),
                pct(busiest.waiting),
                pct(idle)
            ),
            None => format!(
                "{thread} used {} of a core and waited for a CPU {} of the time",
                pct(busiest.busy),
                pct(busiest.waiting)
            ),
        };
        if client_saturated {
            let also = match self.target_saturation() {
                Some(t) => format!(" (the target was saturated too: {t})"),
                None => String::new(),
            };
            return (
                Verdict::ClientBound,
                format!("{client_figure}: it had no time to spare{also}"),
            );
        }
        if let Some(n) = &self.network {
            if n.speed_mbps > 0.0 && n.used_mbps >= SATURATED * n.speed_mbps {
                return (
                    Verdict::NetworkBound,
                    format!(
                        "{} carried {:.0} of its {:.0} Mbit/s",
                        n.interface, n.used_mbps, n.speed_mbps
                    ),
                );
            }
        }
        if let Some(t) = self.target_saturation() {
            return (
                Verdict::ServerBound,
                format!("the target was saturated ({t}) while {client_figure}"),
            );
        }
        if let Some(q) = &self.server_queue {
            return (
                Verdict::ServerBound,
                format!(
                    "the queue in front of the server grew from {} to {} ({}) while {client_figure}",
                    q.from, q.peak, q.series
                ),
            );
        }
        if cx.closed {
            return (
                Verdict::ServerBound,
                format!(
                    "every connection waited on the server's answers while {client_figure}{}",
                    self.target_spare()
                ),
            );
        }
        let offered = self.offered_rps.unwrap_or(0.0);
        let starved = self.pool_saturation.unwrap_or(0.0);
        let held = offered <= 0.0 || self.achieved_rps >= 0.99 * offered;
        if cx.behind || !held || starved > 0.01 {
            let what = if offered > 0.0 && !held {
                format!(
                    "the server answered {:.0} of the {:.0} req/s offered",
                    self.achieved_rps, offered
                )
            } else {
                "the open model fell behind its schedule".to_string()
            };
            return (
                Verdict::ServerBound,
                format!(
                    "{what}, every connection busy at {:.1} % of the requests' due times, while {client_figure}",
                    starved * 100.0
                ),
            );
        }
        (
            Verdict::Undetermined,
            format!(
                "the offered rate was the limit: it was held while {client_figure}, so the latencies are the server's at that rate, not its capacity{}",
                self.target_spare()
            ),
        )
    }

    /// How the target was saturated, if it was: its busiest thread filled a core, or
    /// its threads together filled its cores.
    fn target_saturation(&self) -> Option<String> {
        let t = self.target.as_ref()?;
        if let Some(b) = t.busiest_thread.filter(|&b| b >= SATURATED) {
            return Some(format!(
                "its busiest thread used {:.0} % of a core",
                b * 100.0
            ));
        }
        (t.cores > 0.0 && t.busy_cores >= SATURATED * t.cores).then(|| {
            format!(
                "it used {:.2} of the {:.0} cores it may run on",
                t.busy_cores, t.cores
            )
        })
    }

    fn target_spare(&self) -> String {
        match &self.target {
            Some(t) => format!(
                "; the target used {:.2} of its {:.0} cores",
                t.busy_cores, t.cores
            ),
            None => String::new(),
        }
    }

    /// The limit of a result merged from several: every part's threads, rates added,
    /// judged again.
    pub fn merged(parts: &[&Limit], achieved_rps: f64) -> Limit {
        let offered: Vec<f64> = parts.iter().filter_map(|l| l.offered_rps).collect();
        let pool: Vec<f64> = parts.iter().filter_map(|l| l.pool_saturation).collect();
        Limit {
            verdict: Verdict::Undetermined,
            reason: String::new(),
            client_threads: parts
                .iter()
                .flat_map(|l| l.client_threads.iter().copied())
                .collect(),
            client_cores: parts.iter().map(|l| l.client_cores).sum(),
            offered_rps: (!offered.is_empty()).then(|| offered.iter().sum()),
            achieved_rps,
            pool_saturation: (!pool.is_empty())
                .then(|| pool.iter().sum::<f64>() / pool.len() as f64),
            network: None,
            target: None,
            server_queue: None,
        }
    }
}

/// Reads `(ns on a CPU, ns waiting for one)` from a schedstat file.
fn schedstat(path: &str) -> Option<(u64, u64)> {
    let s = std::fs::read_to_string(path).ok()?;
    let mut it = s.split_ascii_whitespace();
    let run = it.next()?.parse().ok()?;
    let wait = it.next()?.parse().ok()?;
    Some((run, wait))
}

fn own_times() -> (u64, u64) {
    // Without schedstat (a kernel built without it), the thread's own CPU time and no
    // wait.
    schedstat("/proc/thread-self/schedstat")
        .unwrap_or_else(|| ((crate::run::process::thread_cpu().total() * 1e9) as u64, 0))
}

/// One worker thread's accounting.
#[derive(Debug, Clone)]
struct Slot {
    tid: i32,
    begin: Instant,
    first: (u64, u64),
    /// When it was last sampled: `(at, (on a CPU, waiting), idle)`, in nanoseconds.
    last: Option<(Instant, (u64, u64), u64)>,
    peak: f64,
    idle: Arc<AtomicU64>,
    load: Option<ThreadLoad>,
}

/// A registered thread's part of a [`Sampler`]: its slot, and the count of the time
/// it spent idle, which only it adds to.
#[derive(Debug)]
pub struct Registered {
    slot: usize,
    idle: Arc<AtomicU64>,
}

impl Registered {
    /// Counts `d` as time the thread spent blocked with nothing to do.
    pub fn idle(&self, d: Duration) {
        self.idle
            .fetch_add(d.as_nanos().min(u64::MAX as u128) as u64, Ordering::Relaxed);
    }
}

/// Collects every worker thread's CPU accounting: threads register when they start
/// and finish when they end; [`Sampler::sample`], called about once a second from
/// another thread, keeps the busiest second.
#[derive(Debug, Default)]
pub struct Sampler {
    slots: Mutex<Vec<Slot>>,
    done: AtomicBool,
}

impl Sampler {
    /// Registers the calling thread.
    pub fn register(&self) -> Registered {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        let now = Instant::now();
        let first = own_times();
        let idle = Arc::new(AtomicU64::new(0));
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots.push(Slot {
            tid,
            begin: now,
            first,
            last: Some((now, first, 0)),
            peak: 0.0,
            idle: idle.clone(),
            load: None,
        });
        Registered {
            slot: slots.len() - 1,
            idle,
        }
    }

    /// Records the calling thread's totals (call from the thread that registered).
    pub fn finish(&self, me: &Registered) {
        let now = Instant::now();
        let end = own_times();
        let idle = me.idle.load(Ordering::Relaxed);
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        let s = &mut slots[me.slot];
        let wall = (now - s.begin).as_nanos().max(1) as f64;
        s.load = Some(ThreadLoad {
            busy: (end.0.saturating_sub(s.first.0) as f64 / wall).min(1.0),
            waiting: (end.1.saturating_sub(s.first.1) as f64 / wall).min(1.0),
            peak: s.peak,
            idle: Some((idle as f64 / wall).min(1.0)),
        });
        s.last = None;
    }

    /// Reads every running thread's schedstat and keeps each one's busiest interval
    /// since the last sample.
    pub fn sample(&self) {
        let now = Instant::now();
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        for s in slots.iter_mut() {
            let Some((t0, (r0, w0), i0)) = s.last else {
                continue;
            };
            let path = format!("/proc/self/task/{}/schedstat", s.tid);
            let Some((r, w)) = schedstat(&path) else {
                continue;
            };
            let i = s.idle.load(Ordering::Relaxed);
            let wall = (now - t0).as_nanos() as f64;
            if wall >= 0.5e9 {
                let second = ThreadLoad {
                    busy: r.saturating_sub(r0) as f64 / wall,
                    waiting: w.saturating_sub(w0) as f64 / wall,
                    peak: 0.0,
                    idle: Some((i.saturating_sub(i0) as f64 / wall).min(1.0)),
                };
                s.peak = s.peak.max(second.demand().min(1.0));
            }
            s.last = Some((now, (r, w), i));
        }
    }

    /// Samples once a second until [`Sampler::stop`].
    pub fn run(&self) {
        while !self.done.load(Ordering::Acquire) {
            std::thread::park_timeout(Duration::from_secs(1));
            if self.done.load(Ordering::Acquire) {
                break;
            }
            self.sample();
        }
    }

    /// Ends [`Sampler::run`] (unpark its thread after this).
    pub fn stop(&self) {
        self.done.store(true, Ordering::Release);
    }

    /// Every finished thread's load, in registration order.
    pub fn loads(&self) -> Vec<ThreadLoad> {
        let slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots.iter().filter_map(|s| s.load).collect()
    }
}

/// Stops a [`Sampler::run`] on another thread when dropped.
pub struct StopOnDrop<'a> {
    sampler: &'a Sampler,
    thread: std::thread::Thread,
}

impl<'a> StopOnDrop<'a> {
    /// Stops `sampler`, running on `thread`, when this is dropped.
    pub fn new(sampler: &'a Sampler, thread: std::thread::Thread) -> Self {
        StopOnDrop { sampler, thread }
    }
}

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.sampler.stop();
        self.thread.unpark();
    }
}

/// Cores this process may run on (its CPU affinity), at least 1.
pub fn cores_allowed() -> f64 {
    crate::run::process::allowed_cpus().len().max(1) as f64
}

/// Cores of this machine that are online (whatever this process's affinity).
pub fn cores_allowed_machine() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    n.max(1) as f64
}

/// The interface a TCP target at `addr` is reached through and its link speed in
/// Mbit/s, or `None` for loopback or where the kernel does not know the speed.
pub fn link_to(addr: SocketAddr) -> Option<(String, f64)> {
    if addr.ip().is_loopback() {
        return None;
    }
    let bind: SocketAddr = match addr {
        SocketAddr::V4(_) => "0.0.0.0:0".parse().ok()?,
        SocketAddr::V6(_) => "[::]:0".parse().ok()?,
    };
    // A UDP "connection" sends nothing; it only asks the kernel for the route's source.
    let s = UdpSocket::bind(bind).ok()?;
    s.connect(addr).ok()?;
    let local = s.local_addr().ok()?.ip();
    if local.is_loopback() {
        return None;
    }
    let name = interface_of(local)?;
    let speed: f64 = std::fs::read_to_string(format!("/sys/class/net/{name}/speed"))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    (speed > 0.0).then_some((name, speed))
}

/// The name of the interface holding address `ip`.
fn interface_of(ip: IpAddr) -> Option<String> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs writes a list head we free below.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return None;
    }
    let mut found = None;
    let mut p = head;
    while !p.is_null() {
        // SAFETY: `p` is a node of the list getifaddrs returned.
        let ifa = unsafe { &*p };
        p = ifa.ifa_next;
        if ifa.ifa_addr.is_null() {
            continue;
        }
        // SAFETY: ifa_addr is non-null and points at a sockaddr of its family.
        let family = unsafe { (*ifa.ifa_addr).sa_family } as i32;
        let addr = match family {
            libc::AF_INET => {
                // SAFETY: an AF_INET address is a sockaddr_in.
                let a = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in) };
                IpAddr::from(u32::from_be(a.sin_addr.s_addr).to_be_bytes())
            }
            libc::AF_INET6 => {
                // SAFETY: an AF_INET6 address is a sockaddr_in6.
                let a = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in6) };
                IpAddr::from(a.sin6_addr.s6_addr)
            }
            _ => continue,
        };
        if addr == ip {
            // SAFETY: ifa_name is a NUL-terminated string owned by the list.
            let name = unsafe { std::ffi::CStr::from_ptr(ifa.ifa_name) };
            found = Some(name.to_string_lossy().into_owned());
            break;
        }
    }
    // SAFETY: `head` came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(head) };
    found
}

#[cfg(test)]
mod tests;
