//! The validated plan of a run: what [`LoadSpec::plan`] makes of a spec once every
//! check has passed, and the only thing [`crate::run`] takes.
//!
//! A [`LoadSpec`] is the flags' plain description, and many of its combinations are
//! refused (redirects are followed by a pool of connections, cookies are carried by
//! sessions, a script builds a pool's requests, not a session's). The [`Workload`] a
//! plan holds says which of the two kinds of run it is and carries only what that kind
//! can use, so a refused combination cannot be written in it; the worker reads the
//! workload instead of re-deriving it from the spec's flags, and the spec's parts as
//! the run's [`Config`], with the protocol chosen once. The plan also holds what
//! validation computed once for every worker (the requests translated for HTTP/2).

use crate::proto::h2::H2Request;
use crate::spec::config::Config;
use crate::spec::{LoadSpec, Session, Walk};
use crate::SpecError;

/// A spec that passed every check, with the workload it runs.
#[derive(Debug, Clone)]
pub struct Plan {
    config: Config,
    workload: Workload,
    h2_requests: Vec<H2Request>,
}

/// Which kind of run a plan is, with what only that kind uses.
#[derive(Debug, Clone, PartialEq)]
pub enum Workload {
    /// A pool of connections held for the whole run, each sending its next request
    /// when it is free (closed load) or when the schedule says (a fixed or Poisson
    /// rate).
    Pool(Pool),
    /// Each start is a session on a connection of its own (Gatling's users, httperf's
    /// sessions, h2load's timed clients).
    Sessions(SessionWork),
}

/// A pool's requests and what it does with their answers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pool {
    /// What each call sends.
    pub requests: PoolRequests,
    /// Redirects followed per request, at most (0: a 3xx is the answer).
    pub redirects: u32,
}

/// Where a pool's calls take their request from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PoolRequests {
    /// The spec's one request, prepared once.
    One,
    /// The spec's several requests, in turn per connection.
    Turns,
    /// The spec's several requests, by one walk over the run's calls.
    Walk(Walk),
    /// The spec's request, and a script that shapes the run: its hooks may build
    /// each batch, delay it or choose the address (hooks that only watch leave a
    /// pool's requests as they are).
    Script,
    /// The spec's request with a body and fields made for each call (see
    /// [`crate::made`]), on HTTP/2 streams.
    Made,
}

/// What each session does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SessionWork {
    /// Calls, bursts, think time, the failure status and retries.
    pub session: Session,
    /// What a session's calls send.
    pub steps: SessionSteps,
}

/// What a session's calls send.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SessionSteps {
    /// The spec's request, `session.calls` times in bursts.
    Calls,
    /// The spec's several requests, by one walk over the run's calls.
    Walk(Walk),
    /// The spec's steps in order, each session taking the next script.
    Script,
    /// The spec's steps, each at its offset from the session's start.
    Timed,
}

impl Plan {
    /// Checks `spec` (see [`LoadSpec::validate`]) and plans it.
    pub(crate) fn of(mut spec: LoadSpec) -> Result<Plan, SpecError> {
        spec.validate()?;
        if let (crate::spec::target::Address::Tcp(to), None, None) =
            (&spec.target.address, &spec.proxy, &spec.load.protocol.http3)
        {
            // Tens of thousands of connections to a loopback server: several sources.
            // Sessions each take a connection of their own (and leave its port in
            // TIME_WAIT when they close it): as many as they may be in all.
            let most = match &spec.load.shape {
                crate::Shape::Users(p) => usize::try_from(p.most_users()).unwrap_or(usize::MAX),
                crate::Shape::Sessions { count, .. } => {
                    usize::try_from(*count).unwrap_or(usize::MAX)
                }
                _ => spec.load.connections,
            };
            spec.load.socket.spread(to, most);
        }
        let shaping = spec.hooks.as_ref().is_some_and(|h| !h.0.observes_only());
        let workload = if spec.load.shape.has_sessions() {
            Workload::Sessions(SessionWork {
                session: spec.load.session,
                steps: match (spec.load.walk, spec.load.script.first()) {
                    (Some(w), None) => SessionSteps::Walk(w),
                    (_, Some(first)) if first.at.is_some() => SessionSteps::Timed,
                    (_, Some(_)) => SessionSteps::Script,
                    (None, None) => SessionSteps::Calls,
                },
            })
        } else {
            Workload::Pool(Pool {
                requests: match (shaping, spec.load.walk, spec.load.variety.is_empty()) {
                    _ if spec.calls.is_some() => PoolRequests::Made,
                    (true, _, _) => PoolRequests::Script,
                    (false, Some(w), _) => PoolRequests::Walk(w),
                    (false, None, false) => PoolRequests::Turns,
                    (false, None, true) => PoolRequests::One,
                },
                redirects: spec.load.redirects,
            })
        };
        let config = Config::of(spec);
        // HTTP/2 and HTTP/3 send each request as a stream: translated once here.
        let h2_requests = if config.protocol.has_streams() {
            let scheme = config.net.target.scheme();
            (config.requests().into_iter())
                .map(|r| H2Request::from_http1(&r.bytes, scheme))
                .collect::<Result<_, _>>()
                .map_err(|e| SpecError::Invalid {
                    field: "http2",
                    reason: format!("the request cannot be sent over HTTP/2: {e}"),
                })?
        } else {
            Vec::new()
        };
        Ok(Plan {
            config,
            workload,
            h2_requests,
        })
    }

    /// What the run reads: the checked spec's parts, with the protocol chosen.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The kind of run.
    pub fn workload(&self) -> &Workload {
        &self.workload
    }

    /// HTTP/2: the request (or each of the several requests, or each script step)
    /// translated once; empty over HTTP/1.1.
    pub(crate) fn h2_requests(&self) -> &[H2Request] {
        &self.h2_requests
    }
}

impl Workload {
    /// Session shapes: what each session does.
    pub fn sessions(&self) -> Option<&SessionWork> {
        match self {
            Workload::Sessions(s) => Some(s),
            Workload::Pool(_) => None,
        }
    }

    /// Pool shapes: the pool's requests and redirects.
    pub fn pool(&self) -> Option<&Pool> {
        match self {
            Workload::Pool(p) => Some(p),
            Workload::Sessions(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::{RequestBuilder, Shape, Step, Target};

    fn spec() -> LoadSpec {
        let t = Target::parse("http://127.0.0.1:9/").unwrap();
        let r = RequestBuilder::native(&t, "GET", true).build().unwrap();
        let mut s = LoadSpec::new(t, r);
        s.load.requests = Some(10);
        s
    }

    #[test]
    fn many_connections_to_a_loopback_server_come_from_several_sources() {
        let sources = |s: LoadSpec| s.plan().unwrap().config().net.socket.local.len();
        let mut s = spec();
        s.load.requests = Some(100_000);
        s.load.connections = 25_000;
        s.load.threads = 2;
        assert_eq!(sources(s.clone()), 3);
        s.load.connections = 64;
        assert_eq!(sources(s.clone()), 0);
        // Users take a connection each: the profile's users in all count.
        s.load.requests = None;
        s.load.shape =
            Shape::Users(crate::inject::Profile::parse(&["atOnceUsers(19000)".into()]).unwrap());
        assert_eq!(sources(s), 2);
    }

    #[test]
    fn each_spec_plans_to_the_workload_it_runs() {
        let p = spec().plan().unwrap();
        assert_eq!(
            p.workload(),
            &Workload::Pool(Pool {
                requests: PoolRequests::One,
                redirects: 0
            })
        );
        let mut turns = spec();
        turns.load.variety = vec![turns.load.request.clone(), turns.load.request.clone()];
        turns.load.redirects = 3;
        let p = turns.plan().unwrap();
        assert_eq!(
            p.workload().pool(),
            Some(&Pool {
                requests: PoolRequests::Turns,
                redirects: 3
            })
        );
        let mut sessions = spec();
        sessions.load.shape = Shape::Sessions {
            count: 2,
            period: None,
        };
        let p = sessions.clone().plan().unwrap();
        assert_eq!(
            p.workload().sessions().map(|s| s.steps),
            Some(SessionSteps::Calls)
        );
        assert!(p.workload().pool().is_none());
        sessions.load.script = vec![
            Step::timed(sessions.load.request.clone(), Duration::ZERO),
            Step::timed(sessions.load.request.clone(), Duration::from_millis(5)),
        ];
        let p = sessions.plan().unwrap();
        assert_eq!(
            p.workload().sessions().map(|s| s.steps),
            Some(SessionSteps::Timed)
        );
    }

    #[test]
    fn a_refused_spec_has_no_plan_and_keeps_its_message() {
        let mut s = spec();
        s.load.redirects = 2;
        s.load.shape = Shape::Sessions {
            count: 1,
            period: None,
        };
        let e = s.plan().unwrap_err().to_string();
        assert!(e.starts_with("redirects: "), "{e}");
        // HTTP/2: every request is translated once, here, for every worker.
        let mut h2 = spec();
        h2.load.protocol.http2 = true;
        assert_eq!(h2.plan().unwrap().h2_requests().len(), 1);
    }
}
