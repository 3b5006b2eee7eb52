//! The worker's state grouped by job, each group a type of its own: where
//! connections are made ([`Dial`]), the requests prepared once ([`Prepared`]), the
//! loop's pacing ([`Pace`]), session shapes' state ([`Sessions`], and a session's
//! own, [`SessionState`]), the thread's script ([`Script`]) and the progress not yet
//! published ([`Published`]). The loop in `mod.rs` holds one of each.

use std::time::{Duration, Instant};

use crate::proto::h2::H2Request;
use crate::run::control::Control;
use crate::run::hooks::ThreadHooks;
use crate::run::io::TimerFd;
use crate::spec::plan::{Plan, PoolRequests, SessionSteps};
use crate::spec::target::Address;
use crate::spec::{LoadSpec, Session};
use std::sync::atomic::Ordering;

/// A session in progress on a connection.
#[derive(Clone)]
pub(super) struct SessionState {
    /// Calls not yet sent (retries aside).
    pub(super) calls_left: u32,
    /// Next step of the script (script sessions), and where this session's steps end.
    pub(super) step: u32,
    pub(super) end: u32,
    /// Calls of the current burst not yet sent (a burst goes out in groups of at most
    /// `max_piped`).
    pub(super) burst_left: u32,
    pub(super) started: Instant,
    /// Waiting out the think time until then.
    pub(super) think_until: Option<Instant>,
    /// Calls answered with the failure status, to send again once the connection's
    /// batch is answered: script steps (0 for sessions without a script).
    pub(super) retry: Vec<u32>,
    /// The step the batch in flight sends again, when it is a retry.
    pub(super) resending: Option<u32>,
    /// The cookie a reply set (`name=value`), sent with the session's later requests
    /// (session cookies; empty: none yet).
    pub(super) cookie: Vec<u8>,
    /// Timed steps: when the next step is due, once it is on the worker's `delayed`
    /// heap (so that it goes there once).
    pub(super) queued: Option<Instant>,
    /// The slot's responses before this session began (the session's own are those
    /// after).
    pub(super) answered_before: u64,
}

/// Where each session's steps begin and end in a script (a step marked
/// `new_session` begins another).
pub(super) fn script_ranges(script: &[crate::spec::Step]) -> Vec<(u32, u32)> {
    let mut ranges: Vec<(u32, u32)> = Vec::new();
    for (i, st) in script.iter().enumerate() {
        let i = i as u32;
        match ranges.last_mut() {
            Some(r) if !st.new_session => r.1 = i + 1,
            _ => ranges.push((i, i + 1)),
        }
    }
    ranges
}

impl Prepared {
    /// The plan's requests as this worker sends them: HTTP/1 bytes (`depth` copies of
    /// the request, or every step of the script) and their HTTP/2 translations.
    pub(super) fn new(plan: &Plan, hooks: &Option<Box<dyn ThreadHooks>>) -> Prepared {
        let spec = plan.spec();
        let script = &spec.load.script;
        let (pool, sessions) = (plan.workload().pool(), plan.workload().sessions());
        let redirects = pool.map_or(0, |p| p.redirects);
        let cookies = sessions.is_some_and(|s| s.session.cookies);
        // Responses are kept whole for session cookies, redirects and scripts that
        // read them.
        let respond =
            cookies || redirects > 0 || hooks.as_ref().is_some_and(|h| h.wants_responses());
        Prepared {
            batch: if script.is_empty() {
                spec.load
                    .request
                    .repeated(spec.load.pipeline.max(spec.load.session.burst as usize))
            } else {
                script
                    .iter()
                    .flat_map(|s| s.request.bytes.iter().copied())
                    .collect()
            },
            req_len: spec.load.request.bytes.len(),
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
            batch_latency: spec.load.batch_latency,
            unusual: spec.load.batch_latency
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
}

impl Dial {
    /// Where `spec`'s connections go (its proxy's address, the script's choice, or
    /// the target's) and how HTTP/2 connections refill their streams.
    pub(super) fn new(spec: &LoadSpec, hooks: &Option<Box<dyn ThreadHooks>>) -> Dial {
        Dial {
            address: match &spec.proxy {
                Some(p) => Some(Address::Tcp(p.address.clone())),
                None => (hooks.as_ref())
                    .and_then(|h| h.address())
                    .map(|a| Address::Tcp(vec![a])),
            },
            tunnel: (spec.proxy.as_ref())
                .filter(|_| spec.target.tls)
                .map(|p| p.connect_request(&spec.target)),
            // Closed load refills a connection's streams once half are free, so that
            // requests go out in batches (one write, one server read for many); open
            // load refills at once, so that no arrival waits for a batch.
            h2_refill_at: if matches!(spec.load.shape, crate::spec::Shape::Closed) {
                spec.load.pipeline / 2
            } else {
                spec.load.pipeline - 1
            },
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
    /// When the run ends, if it has a duration.
    pub(super) end: Option<Instant>,
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

/// Session shapes' state: each start is a session on a slot of its own.
pub(super) struct Sessions {
    /// What each session does; `None` for pool shapes.
    pub(super) plan: Option<Session>,
    /// Slots that can take a new session.
    pub(super) free: Vec<usize>,
    /// Sessions in progress.
    pub(super) active: usize,
    /// Session scripts: where each session's steps begin and end in `spec.load.script`,
    /// and the one this worker's next session takes.
    pub(super) scripts: Vec<(u32, u32)>,
    pub(super) next_script: usize,
    /// Sessions of the run between two of this worker's: each takes the script of its
    /// place in the run's sequence of arrivals.
    pub(super) script_stride: usize,
    /// The status that fails a session (`session.fail_status`), 0 when none.
    pub(super) fail_status: u16,
    /// Requests given up with the session a failure status ended (pipelined behind
    /// it): counted as abandoned, as at the run's end.
    pub(super) given_up: u64,
    /// Steps are sent at their offsets (see [`crate::spec::Step::at`]).
    pub(super) timed: bool,
    /// Sessions carry the cookie their replies set.
    pub(super) cookies: bool,
}

impl Sessions {
    /// The steps the next session runs, `(first, end)` in the script (`(0, 0)` without
    /// one): scripts are taken in the order of the run's arrivals, this worker taking
    /// every `script_stride`-th.
    pub(super) fn next_range(&mut self) -> (u32, u32) {
        match self.scripts.len() {
            0 => (0, 0),
            n => {
                let range = self.scripts[self.next_script];
                self.next_script = (self.next_script + self.script_stride) % n;
                range
            }
        }
    }
}

/// The thread's script (see [`crate::hooks`]).
pub(super) struct Script {
    pub(super) hooks: Option<Box<dyn ThreadHooks>>,
    /// The script sees every batch of requests written.
    pub(super) watch_sends: bool,
    /// The script delays each batch (see `Worker::delayed`).
    pub(super) delays: bool,
    /// The script stopped this thread.
    pub(super) stopped: bool,
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
    use crate::{Request, RequestBuilder, Step, Target};

    fn request() -> Request {
        let t = Target::parse("http://127.0.0.1:9/").unwrap();
        RequestBuilder::native(&t, "GET", true).build().unwrap()
    }

    #[test]
    fn a_script_splits_into_sessions_where_a_step_begins_one() {
        let step = |new_session| {
            let mut s = Step::new(request(), Duration::ZERO);
            s.new_session = new_session;
            s
        };
        assert_eq!(script_ranges(&[]), Vec::<(u32, u32)>::new());
        // The first step begins a session whether marked or not.
        let script = [
            step(false),
            step(false),
            step(true),
            step(true),
            step(false),
        ];
        assert_eq!(script_ranges(&script), vec![(0, 2), (2, 3), (3, 5)]);
    }

    #[test]
    fn sessions_take_the_scripts_of_their_places_in_the_runs_arrivals() {
        // Three scripts, this worker the second of two: it takes arrivals 1, 3, 5, …,
        // so scripts 1, 0, 2, 1, …
        let mut s = Sessions {
            plan: None,
            free: Vec::new(),
            active: 0,
            scripts: vec![(0, 1), (1, 3), (3, 4)],
            next_script: 1,
            script_stride: 2,
            fail_status: 0,
            given_up: 0,
            timed: false,
            cookies: false,
        };
        let taken: Vec<(u32, u32)> = (0..4).map(|_| s.next_range()).collect();
        assert_eq!(taken, vec![(1, 3), (0, 1), (3, 4), (1, 3)]);
        // Without a script every session is `(0, 0)`.
        s.scripts.clear();
        assert_eq!(s.next_range(), (0, 0));
    }

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
