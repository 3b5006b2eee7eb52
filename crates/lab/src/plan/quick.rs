//! `stampede bench PLAN --quick`: the same plan scaled down to run in about a minute, so
//! that a user (or CI) can see every target start, verify, take load and stop before
//! committing to the full run.
//!
//! What makes a workload what it is stays: the targets, the paths and checks, the
//! connection count, the rate, the pipelining and burst depths, the injection steps'
//! forms. What only makes it long goes: no warm-up runs, one measured run, requests
//! timed out after [`TIMEOUT_S`] at most, and each run bounded by a request budget and a
//! time budget — request counts cut to
//! [`REQUESTS`] (never below one per connection, so a c10k scenario still opens its
//! 10,000 connections), durations to [`SECONDS`], sessions to the budget's worth of
//! calls, injection profiles squeezed in time with their user counts cut in proportion
//! (their arrival rates kept), and a capacity search's steps shortened.

use std::time::Duration;

use stampede_engine::inject::{InjectionStep as Inject, Profile};
use stampede_engine::Shape;

use super::{Plan, Scenario};

/// Most requests in one run of a counted scenario (or session scenario).
pub const REQUESTS: u64 = 5_000;

/// Longest run of a timed scenario, and longest injection profile, in seconds.
pub const SECONDS: f64 = 1.0;

/// Longest request timeout, in seconds: a server that stalls costs seconds, not minutes.
pub const TIMEOUT_S: u64 = 5;

impl Plan {
    /// This plan scaled down (see the module's note); its name says so, so that quick
    /// benches are never taken for full ones in `compare` and `history`.
    pub fn quick(mut self) -> Plan {
        self.name = format!("{} (quick)", self.name);
        self.runs.warmup = 0;
        self.runs.repetitions = 1;
        self.runs.auto = None;
        self.runs.pause = self.runs.pause.min(Duration::from_millis(200));
        for s in &mut self.scenarios {
            quick(s);
        }
        self
    }
}

fn quick(s: &mut Scenario) {
    let limit = Duration::from_secs_f64(SECONDS);
    s.duration = s.duration.map(|d| d.min(limit));
    s.timeout = s.timeout.min(Duration::from_secs(TIMEOUT_S));
    s.requests = s
        .requests
        .map(|n| n.min(REQUESTS.max(s.connections as u64)));
    match &mut s.shape {
        Shape::Sessions { count, .. } => {
            let calls = u64::from(s.session.calls.max(1));
            *count = (*count).min((REQUESTS / calls).max(1));
        }
        Shape::Users(profile) | Shape::Paced(profile) => squeeze(profile, SECONDS),
        Shape::Closed | Shape::Rate { .. } => {}
    }
    if let Some(search) = &mut s.search {
        search.step = search.step.min(Duration::from_millis(500));
        search.warmup = search.warmup.min(Duration::from_millis(200));
        search.max_steps = search.max_steps.min(8);
    }
}

/// Squeezes a profile into at most `seconds`: every step's time by one factor, and the
/// users a step adds by the same factor (at least one), so arrival rates are kept.
fn squeeze(p: &mut Profile, seconds: f64) {
    let total = p.duration().as_secs_f64();
    if total <= seconds {
        return;
    }
    let f = seconds / total;
    let time = |d: &mut Duration| *d = Duration::from_secs_f64(d.as_secs_f64() * f);
    let users = |n: &mut u64| *n = ((*n as f64 * f).round() as u64).max(1);
    for step in &mut p.steps {
        match step {
            Inject::NothingFor(d) => time(d),
            Inject::AtOnce(n) => users(n),
            Inject::Ramp { users: n, during } | Inject::StressPeak { users: n, during } => {
                users(n);
                time(during);
            }
            Inject::ConstantRate { during, .. }
            | Inject::RampRate { during, .. }
            | Inject::ConstantConcurrent { during, .. }
            | Inject::RampConcurrent { during, .. } => time(during),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: &str = r#"
name = "full"
[runs]
warmup = 2
repetitions = "auto"
pause = "5s"
[[target]]
name = "a"
url = "http://127.0.0.1:1"
[[scenario]]
name = "c10k"
path = "/perf"
connections = 10000
requests = 20000
[[scenario]]
name = "many"
path = "/"
connections = 100
requests = 300000
[[scenario]]
name = "open"
path = "/"
rate = 50000.0
duration = "60s"
[[scenario]]
name = "sessions"
path = "/pong"
sessions = { count = 1000, rate = 1000 }
calls = 1000
burst = 20
[[scenario]]
name = "users"
path = "/"
inject = ["nothingFor(2 seconds)", "rampUsers(1000) during (60 seconds)", "constantUsersPerSec(100) during (38 seconds)"]
[[scenario]]
name = "search"
path = "/"
search = { max_rate = 1000, step = "5s", warmup = "1s" }
"#;

    fn s_timeouts_at_most(p: &Plan, d: Duration) -> bool {
        p.scenarios.iter().all(|s| s.timeout <= d)
    }

    #[test]
    fn keeps_the_shapes_and_bounds_the_lengths() {
        let p = Plan::parse(PLAN, "p.toml").unwrap().quick();
        assert_eq!(p.name, "full (quick)");
        assert_eq!((p.runs.warmup, p.runs.repetitions), (0, 1));
        assert!(s_timeouts_at_most(&p, Duration::from_secs(TIMEOUT_S)));
        assert!(p.runs.auto.is_none());
        assert_eq!(p.runs.pause, Duration::from_millis(200));
        let s = &p.scenarios;
        // c10k keeps its 10,000 connections, each with a request.
        assert_eq!((s[0].connections, s[0].requests), (10_000, Some(10_000)));
        assert_eq!(s[1].requests, Some(REQUESTS));
        assert!(matches!(s[2].shape, Shape::Rate { rate, .. } if rate == 50_000.0));
        assert_eq!(s[2].duration, Some(Duration::from_secs(1)));
        // Sessions keep their calls and bursts; fewer of them.
        assert!(matches!(s[3].shape, Shape::Sessions { count: 5, .. }));
        assert_eq!((s[3].session.calls, s[3].session.burst), (1000, 20));
        // The profile lasts a second; rates kept, users cut in proportion.
        let Shape::Users(prof) = &s[4].shape else {
            panic!("not users")
        };
        assert!((prof.duration().as_secs_f64() - 1.0).abs() < 1e-9);
        assert!(matches!(prof.steps[1], Inject::Ramp { users: 10, .. }));
        assert!(matches!(prof.steps[2], Inject::ConstantRate { rate, .. } if rate == 100.0));
        let search = s[5].search.as_ref().unwrap();
        assert_eq!(
            (search.step, search.warmup, search.max_steps),
            (Duration::from_millis(500), Duration::from_millis(200), 8)
        );
    }
}
