//! The worker's wait policy: between two passes of its loop, how long to wait and on
//! what, as a pure function of the loop's state.
//!
//! A pass sends what is due and reads what came; then the loop waits. It may take
//! what the sockets already hold without sleeping (data left over from a read budget,
//! or just back from a nap), wait on the sockets until the next start or the next
//! timer tick, or nap to the next start without waking for each response meanwhile
//! (open shapes over plain TCP: the responses are read after it by the kernel's
//! arrival stamps). Every choice here is decided by [`next_wait`] from a [`WaitState`]
//! the loop fills in, so it is tested in simulated time below, the nap's end and the
//! timer path included, without a socket or a clock.

use std::time::{Duration, Instant};

/// The longest nap to a due start: a response is left unread (and its connection
/// unusable) for at most this long, and a rate of 1,000 a second or more needs no
/// wake-up but the starts' own.
pub(crate) const NAP_LIMIT: Duration = Duration::from_millis(1);

/// Naps need at least one connection in this many idle, so that responses held
/// unread a while cannot leave the pool short when the server slows.
pub(crate) const IDLE_SHARE: usize = 2;

/// What the loop knows when it is about to wait.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WaitState {
    pub now: Instant,
    /// The wait ends by then whatever happens: the next timer tick or the run's end.
    pub deadline: Instant,
    /// When the next start is due (a scheduled request, a session, a delayed batch).
    pub due: Option<Instant>,
    /// Whether the wait counts in nanoseconds (`epoll_pwait2`); without it the wait
    /// counts in milliseconds and a timerfd marks a start's instant.
    pub precise: bool,
    /// Connections whose read budget ran out with data left (epoll is edge-triggered:
    /// no event comes for them again).
    pub reread: bool,
    /// A nap just ended: what came meanwhile is taken at once, by its arrival stamps.
    pub stamped: bool,
    /// The run may nap at all (open shapes over plain TCP, nothing waiting on a
    /// response to send its next request).
    pub nap: bool,
    /// A read of the last pass left a response half received.
    pub partial: bool,
    /// Connections idle, and connections in all.
    pub idle: usize,
    pub conns: usize,
}

/// What the loop does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Take what the sockets hold without sleeping.
    Drain,
    /// Sleep this long (to the due start) without waiting on the sockets; the pass
    /// after it reads by the kernel's arrival stamps.
    Nap(Duration),
    /// Wait on the sockets until `until`. With `timer`, the wait counts in
    /// milliseconds and a timerfd is to be armed for that instant (see [`arm`]).
    Sockets {
        until: Instant,
        timer: Option<Instant>,
    },
}

/// The loop's next wait.
#[inline]
pub(crate) fn next_wait(s: &WaitState) -> Wait {
    if s.reread || s.stamped {
        // Data left to read, or back from a nap with what fell due sent: take what is
        // there without sleeping.
        return Wait::Drain;
    }
    let due = s.due.filter(|&w| w <= s.deadline);
    if let Some(w) = due {
        let nap = w.saturating_duration_since(s.now);
        // The next start is close: sleep to it (not to the wait's own timeout, which
        // with a timerfd runs to the tick) without a wake-up for each response
        // meanwhile, unless a long body is arriving or the pool is short.
        if s.nap
            && !nap.is_zero()
            && nap <= NAP_LIMIT
            && !s.partial
            && s.idle * IDLE_SHARE >= s.conns
        {
            return Wait::Nap(nap);
        }
    }
    match due.filter(|&w| w < s.deadline) {
        Some(w) if s.precise => Wait::Sockets {
            until: w,
            timer: None,
        },
        // epoll counts in milliseconds here; the timerfd wakes the wait on time.
        Some(w) => Wait::Sockets {
            until: s.deadline,
            timer: Some(w),
        },
        None => Wait::Sockets {
            until: s.deadline,
            timer: None,
        },
    }
}

/// Where a socket wait with a timer ends: arms the timer for `at` through `arm`
/// unless it already is (`armed` is updated), and ends the wait at `at` itself when
/// the timer cannot be armed (epoll's own timeout, rounded up to the next millisecond,
/// is then the wake-up).
#[inline]
pub(crate) fn arm(
    until: Instant,
    at: Instant,
    armed: &mut Option<Instant>,
    arm: impl FnOnce() -> bool,
) -> Instant {
    if *armed != Some(at) && arm() {
        *armed = Some(at);
    }
    if *armed == Some(at) {
        until
    } else {
        at
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::run::schedule::{Budget, Next, Open, Schedule};
    use crate::spec::arrivals::Fixed;

    fn state(t0: Instant) -> WaitState {
        WaitState {
            now: t0,
            deadline: t0 + Duration::from_millis(10),
            due: None,
            precise: true,
            reread: false,
            stamped: false,
            nap: true,
            partial: false,
            idle: 4,
            conns: 4,
        }
    }

    const US: fn(u64) -> Duration = Duration::from_micros;

    #[test]
    fn leftover_data_and_the_pass_after_a_nap_take_what_is_there() {
        let t0 = Instant::now();
        let due = Some(t0 + US(300));
        for (reread, stamped) in [(true, false), (false, true), (true, true)] {
            let s = WaitState {
                due,
                reread,
                stamped,
                ..state(t0)
            };
            assert_eq!(next_wait(&s), Wait::Drain);
        }
    }

    #[test]
    fn a_close_start_is_napped_to_exactly() {
        let t0 = Instant::now();
        let s = WaitState {
            due: Some(t0 + US(300)),
            ..state(t0)
        };
        assert_eq!(next_wait(&s), Wait::Nap(US(300)));
        // The timer path naps to the start too, not to the tick the wait would run
        // to (a nap once slept the wait's 10 ms timeout there).
        let s = WaitState {
            precise: false,
            ..s
        };
        assert_eq!(next_wait(&s), Wait::Nap(US(300)));
        // At the limit still; past it, the sockets are waited on.
        let s = WaitState {
            due: Some(t0 + NAP_LIMIT),
            ..state(t0)
        };
        assert_eq!(next_wait(&s), Wait::Nap(NAP_LIMIT));
        let far = t0 + NAP_LIMIT + US(1);
        let s = WaitState {
            due: Some(far),
            ..state(t0)
        };
        assert_eq!(
            next_wait(&s),
            Wait::Sockets {
                until: far,
                timer: None
            }
        );
    }

    #[test]
    fn no_nap_without_leave_or_with_a_body_arriving_or_the_pool_short() {
        let t0 = Instant::now();
        let w = t0 + US(300);
        let sockets = Wait::Sockets {
            until: w,
            timer: None,
        };
        let base = WaitState {
            due: Some(w),
            ..state(t0)
        };
        for s in [
            WaitState { nap: false, ..base },
            WaitState {
                partial: true,
                ..base
            },
            WaitState {
                idle: 1,
                conns: 3,
                ..base
            },
        ] {
            assert_eq!(next_wait(&s), sockets, "{s:?}");
        }
        // Half idle is enough.
        let s = WaitState {
            idle: 2,
            conns: 4,
            ..base
        };
        assert_eq!(next_wait(&s), Wait::Nap(US(300)));
        // A start already due is not napped to: the pass sends it.
        let s = WaitState {
            due: Some(t0),
            ..base
        };
        assert_eq!(
            next_wait(&s),
            Wait::Sockets {
                until: t0,
                timer: None
            }
        );
    }

    #[test]
    fn the_wait_ends_at_the_deadline_or_the_start_whichever_is_first() {
        let t0 = Instant::now();
        let deadline = t0 + Duration::from_millis(10);
        let nothing = state(t0);
        assert_eq!(
            next_wait(&nothing),
            Wait::Sockets {
                until: deadline,
                timer: None
            }
        );
        // A start after the deadline waits for the deadline, timer or not.
        for precise in [true, false] {
            let s = WaitState {
                due: Some(deadline + US(1)),
                precise,
                ..state(t0)
            };
            assert_eq!(
                next_wait(&s),
                Wait::Sockets {
                    until: deadline,
                    timer: None
                }
            );
        }
        // Without nanosecond waits the tick bounds the wait and the timer marks the
        // start; if it cannot be armed, the wait ends at the start.
        let w = t0 + Duration::from_millis(4);
        let s = WaitState {
            due: Some(w),
            precise: false,
            ..state(t0)
        };
        assert_eq!(
            next_wait(&s),
            Wait::Sockets {
                until: deadline,
                timer: Some(w)
            }
        );
        let mut armed = None;
        assert_eq!(arm(deadline, w, &mut armed, || true), deadline);
        assert_eq!(armed, Some(w));
        // Already armed: not armed again.
        assert_eq!(arm(deadline, w, &mut armed, || unreachable!()), deadline);
        let mut armed = None;
        assert_eq!(arm(deadline, w, &mut armed, || false), w);
        assert_eq!(armed, None);
    }

    /// Runs a fixed rate through the policy in simulated time: each pass sends what
    /// the schedule says is due, then the clock moves by the wait (a nap exactly, a
    /// socket wait to its end, a drain by `pass`). Returns each start's lateness.
    fn simulate(precise: bool, idle: usize, rate: f64, n: u64) -> (Vec<Duration>, usize) {
        let t0 = Instant::now();
        let budget = Arc::new(Budget::new(Some(n)));
        let mut sched =
            Open::new(t0, None, Fixed::new(rate), budget).with_horizon(Duration::from_micros(50));
        let tick = Duration::from_millis(10);
        let pass = US(5);
        let (mut now, mut next_tick) = (t0, t0 + tick);
        let (mut late, mut naps, mut stamped, mut armed) = (Vec::new(), 0, false, None);
        for _ in 0..100_000 {
            if now >= next_tick {
                next_tick = now + tick;
            }
            let due = loop {
                match sched.next(now, 0) {
                    Next::Send { intended } => late.push(now.saturating_duration_since(intended)),
                    Next::Wait(t) => break Some(t),
                    Next::Done => break None,
                }
            };
            if due.is_none() {
                return (late, naps);
            }
            now += pass;
            let s = WaitState {
                now,
                deadline: next_tick,
                due,
                precise,
                reread: false,
                stamped,
                nap: true,
                partial: false,
                idle,
                conns: 4,
            };
            stamped = false;
            match next_wait(&s) {
                Wait::Drain => now += pass,
                Wait::Nap(d) => {
                    now += d;
                    naps += 1;
                    stamped = true;
                }
                Wait::Sockets { until, timer } => {
                    let until = match timer {
                        Some(at) => arm(until, at, &mut armed, || true).min(at),
                        None => until,
                    };
                    now = now.max(until);
                }
            }
        }
        unreachable!("the run ends")
    }

    #[test]
    fn in_simulated_time_every_start_goes_out_on_time() {
        // 2,000 a second: one start every 500 µs, inside the nap limit. Napping, each
        // goes out at its instant (the horizon lets one go up to 50 µs early, which
        // the worker times from its send), with or without nanosecond waits.
        for precise in [true, false] {
            let (late, naps) = simulate(precise, 4, 2_000.0, 200);
            assert_eq!(late.len(), 200);
            assert!(
                late.iter().all(|l| l.is_zero()),
                "precise {precise}: {late:?}"
            );
            // Every wait between starts is a nap, and one more to the instant the
            // schedule finds its count spent.
            assert_eq!(naps, 200, "precise {precise}");
        }
        // With the pool short nobody naps, and the socket wait still ends at each
        // start.
        let (late, naps) = simulate(true, 1, 2_000.0, 200);
        assert_eq!((late.len(), naps), (200, 0));
        assert!(late.iter().all(|l| l.is_zero()), "{late:?}");
        // 200 a second: starts 5 ms apart, past the nap limit; socket waits end at
        // each start on both paths.
        for precise in [true, false] {
            let (late, naps) = simulate(precise, 4, 200.0, 50);
            assert_eq!((late.len(), naps), (50, 0));
            assert!(late.iter().all(|l| l.is_zero()), "{late:?}");
        }
    }
}
