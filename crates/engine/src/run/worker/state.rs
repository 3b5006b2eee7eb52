//! The worker's state grouped by job, each group a type of its own: where
//! connections are made ([`Dial`]), the requests prepared once ([`Prepared`]), the
//! loop's pacing ([`Pace`]), the thread's script ([`Script`]) and the progress not
//! yet published ([`Published`]). The loop in `mod.rs` holds one of each, beside its
//! driver (see `drive`).

use std::time::{Duration, Instant};

use crate::proto::h2::H2Request;
use crate::run::control::Control;
use crate::run::hooks::ThreadHooks;
use crate::run::io::TimerFd;
use crate::spec::config::Config;
use crate::spec::plan::{Plan, PoolRequests, SessionSteps};
use crate::spec::target::Address;
use std::sync::atomic::Ordering;

impl Prepared {
    /// The plan's requests as this worker sends them: HTTP/1 bytes (`depth` copies of
    /// the request, or every step of the script) and their HTTP/2 translations.
    pub(super) fn new(plan: &Plan, hooks: &Option<Box<dyn ThreadHooks>>) -> Prepared {
        let cfg = plan.config();
        let script = &cfg.sends.script;
        let (pool, sessions) = (plan.workload().pool(), plan.workload().sessions());
        let redirects = pool.map_or(0, |p| p.redirects);
        let cookies = sessions.is_some_and(|s| s.session.cookies);
        // Responses are kept whole for session cookies, redirects and scripts that
        // read them.
        let respond =
            cookies || redirects > 0 || hooks.as_ref().is_some_and(|h| h.wants_responses());
        Prepared {
            batch: if script.is_empty() {
                cfg.sends
                    .request
                    .repeated(cfg.size.pipeline.max(cfg.arrivals.session.burst as usize))
            } else {
                script
                    .iter()
                    .flat_map(|s| s.request.bytes.iter().copied())
                    .collect()
            },
            req_len: cfg.sends.request.bytes.len(),
            offsets: script
                .iter()
                .scan(0, |at, s| {
                    let start = *at;
                    *at += s.request.bytes.len();
                    Some(start)
                })
                .chain(std::iter::once(
                    script.iter().map(|s| s.request.bytes.len()).sum(),
                ))
                .collect(),
            h2_requests: plan.h2_requests().to_vec(),
            dynamic: match (pool, sessions) {
                (Some(p), _) => {
                    matches!(p.requests, PoolRequests::Turns | PoolRequests::Walk(_))
                        || p.redirects > 0
                }
                (None, Some(s)) => matches!(s.steps, SessionSteps::Walk(_)) || cookies,
                (None, None) => false,
            } || hooks.as_ref().is_some_and(|h| h.builds_requests()),
            respond,
            redirects,
            batch_latency: cfg.watch.batch_latency,
            made: None,
            paced: cfg.sends.send.map(super::paced::Paced::new),
            unusual: cfg.watch.batch_latency
                || sessions.is_some_and(|s| s.session.fail_status.is_some()),
        }
    }
}

/// Where and how this worker's connections are made.
pub(super) struct Dial {
    /// Where this thread connects: the proxy's address, or the one the script chose;
    /// `None`: the target's.
    pub(super) address: Option<Address>,
    /// The CONNECT request that opens each connection's tunnel (https via a proxy).
    pub(super) tunnel: Option<Vec<u8>>,
    /// HTTP/2: a connection with at most this many streams open takes new requests.
    pub(super) h2_refill_at: usize,
    /// Where the thread's turns over the local addresses start (its index), so that
    /// threads with few connections each do not all take the first.
    pub(super) first_local: u64,
    /// Open TCP and Unix sockets go onto the thread's io_uring ring.
    pub(super) ring: bool,
}

impl Dial {
    /// Where the run's connections go (its proxy's address, the script's choice, or
    /// the target's) and how HTTP/2 connections refill their streams, for worker
    /// `index`.
    pub(super) fn new(cfg: &Config, hooks: &Option<Box<dyn ThreadHooks>>, index: usize) -> Dial {
        Dial {
            address: match &cfg.net.proxy {
                Some(p) => Some(Address::Tcp(p.address.clone())),
                None => (hooks.as_ref())
                    .and_then(|h| h.address())
                    .map(|a| Address::Tcp(vec![a])),
            },
            tunnel: (cfg.net.proxy.as_ref())
                .filter(|_| cfg.net.target.tls)
                .map(|p| p.connect_request(&cfg.net.target)),
            // Closed load refills a connection's streams once half are free, so that
            // requests go out in batches (one write, one server read for many); open
            // load refills at once, so that no arrival waits for a batch.
            h2_refill_at: if matches!(cfg.arrivals.shape, crate::spec::Shape::Closed) {
                cfg.size.pipeline / 2
            } else {
                cfg.size.pipeline - 1
            },
            first_local: index as u64,
            ring: false,
        }
    }
}

/// What the run still needs from the first connection that can tell it.
pub(super) struct Once {
    /// The server's name (its `Server` header) is not noted yet.
    pub(super) server: bool,
    /// The first TLS session is not noted yet.
    pub(super) tls: bool,
}

/// The requests this worker sends, prepared once, and what it does with responses.
pub(super) struct Prepared {
    /// The request bytes: `depth` copies of the request, or every step of the script.
    pub(super) batch: Vec<u8>,
    pub(super) req_len: usize,
    /// Script sessions: where each step starts in `batch` (and where the last ends).
    pub(super) offsets: Vec<usize>,
    /// HTTP/2: the request (or each script step, or each request of the variety)
    /// translated once.
    pub(super) h2_requests: Vec<H2Request>,
    /// Each batch's requests are built into [`Conn::own`]: by the script, from the
    /// run's requests in turn, with a session's cookie, or for a redirect's next hop.
    pub(super) dynamic: bool,
    /// Every response is kept and read: by the script, or for session cookies.
    pub(super) respond: bool,
    /// Redirects followed per request at most (0: none; see [`Worker::follow`]).
    pub(super) redirects: u32,
    /// Only a pipelined batch's last response is timed (wrk2's `-B`).
    pub(super) batch_latency: bool,
    /// Calls made one by one: this worker's maker (see [`crate::made`]).
    pub(super) made: Option<crate::run::made::Maker>,
    /// gRPC request streams sent message by message: those still sending.
    pub(super) paced: Option<super::paced::Paced>,
    /// Responses take the slower path of [`Worker::record_unusual`]: batch latency or
    /// a failure status.
    pub(super) unusual: bool,
}

/// The loop's pacing: when the next start is due, and what the wait policy (see
/// [`wait`]) needs to know about the last pass.
pub(super) struct Pace {
    /// The schedule has nothing more to start.
    pub(super) sending_done: bool,
    /// When the schedule's next start is due: the loop wakes then, if nothing wakes
    /// it sooner.
    pub(super) wake_at: Option<Instant>,
    /// How early a start may go out when the loop is awake anyway (see
    /// [`Schedule::horizon`]).
    pub(super) horizon: Duration,
    /// When the run ends, if it has a duration (once draining, when the drain ends).
    pub(super) end: Option<Instant>,
    /// How long to wait for the requests in flight once the duration is over
    /// ([`crate::spec::Load::drain`]); taken when the wait begins.
    pub(super) drain: Option<Duration>,
    /// The arrivals due before the duration's end that were never started, counted
    /// when a drain begins (the schedule is closed then).
    pub(super) never_sent: u64,
    /// Whether the loop may nap until the next start is due, leaving responses that
    /// arrive meanwhile to be read when it wakes (see [`wait::NAP_LIMIT`]): open
    /// shapes over plain TCP, whose sockets stamp each segment's arrival.
    pub(super) nap: bool,
    /// A read of this pass left a response half received: the loop waits on the
    /// sockets rather than napping, so a long body is not held up by the nap.
    pub(super) streaming: bool,
    /// A nap just ended: the next wait takes what came meanwhile without sleeping, and
    /// its reads take the kernel's arrival stamps (bytes read after a wake-up for them
    /// are timed as read).
    pub(super) stamped: bool,
    /// The monotonic and wall clocks read together at the start of the pass, to place
    /// a segment's arrival stamp on the monotonic clock.
    pub(super) clock: (Instant, Duration),
    /// When the bytes being settled arrived, if the kernel stamped them.
    pub(super) arrived: Option<Instant>,
    /// Marks a start's instant where the wait counts in milliseconds.
    pub(super) timer: TimerFd,
    pub(super) timer_armed: Option<Instant>,
}

/// The thread's script (see [`crate::hooks`]).
pub(super) struct Script {
    pub(super) hooks: Option<Box<dyn ThreadHooks>>,
    /// The script sees every batch of requests written.
    pub(super) watch_sends: bool,
    /// The script delays each batch (the pool driver holds the connection meanwhile).
    pub(super) delays: bool,
    /// The script stopped this thread.
    pub(super) stopped: bool,
    /// The script builds each request, and the connections send them as streams
    /// (HTTP/2, HTTP/3): each stream opens with the request the script wrote.
    pub(super) streams_built: bool,
    /// The script builds each request of session shapes' sessions, says when each
    /// pauses and when it is done.
    pub(super) sessions_built: bool,
}

/// Progress counted by the recorder and not yet added to the run's live counters.
#[derive(Default)]
pub(super) struct Published {
    pub(super) completed: u64,
    pub(super) failed: u64,
    pub(super) bytes: u64,
}

impl Published {
    /// Adds to `control`'s counters what was counted since the last call.
    pub(super) fn publish(&mut self, control: &Control, completed: u64, failed: u64, bytes: u64) {
        if self.completed != completed {
            control
                .completed
                .fetch_add(completed - self.completed, Ordering::Relaxed);
            self.completed = completed;
        }
        if self.failed != failed {
            control
                .failed
                .fetch_add(failed - self.failed, Ordering::Relaxed);
            self.failed = failed;
        }
        if self.bytes != bytes {
            control
                .bytes_read
                .fetch_add(bytes - self.bytes, Ordering::Relaxed);
            self.bytes = bytes;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_is_published_once_as_deltas() {
        let control = Control::default();
        let mut p = Published::default();
        p.publish(&control, 10, 1, 500);
        p.publish(&control, 10, 1, 500);
        p.publish(&control, 15, 1, 800);
        assert_eq!(control.completed.load(Ordering::Relaxed), 15);
        assert_eq!(control.failed.load(Ordering::Relaxed), 1);
        assert_eq!(control.bytes_read.load(Ordering::Relaxed), 800);
    }
}
