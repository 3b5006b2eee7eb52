//! A run whose requests go to several servers (a targets file naming several origins,
//! as vegeta's may): each server gets a pool of its own, and the run's connections,
//! threads, request count and rate are shared among the servers in proportion to how
//! many of the list's requests name each, as a list taken in turn would send them.
//!
//! [`LoadSpec::split`] makes one checked [`Part`] per server; [`crate::run_parts`]
//! runs them together from one start, under one control, and merges their results
//! exactly (each request's figures named with its server).

use std::sync::Arc;

use crate::spec::{LoadSpec, Shape};
use crate::{Plan, Request, SpecError, Target};

/// The most servers one run sends to: each has a pool and a worker thread of its own.
pub const MAX_SERVERS: usize = 32;

/// One server of a run over several, with the requests the list sends it.
#[derive(Debug, Clone)]
pub struct Server {
    /// The server (its URL is the first of its requests').
    pub target: Target,
    /// TLS client settings for an https server.
    pub tls: Option<Arc<stampede_tls::rustls::ClientConfig>>,
    /// Its requests, in the list's order.
    pub requests: Vec<Request>,
    /// Each of its requests' place in the whole list (from 0), which the per-request
    /// records and figures name.
    pub places: Vec<u32>,
}

/// One server's share of a run, checked.
#[derive(Debug, Clone)]
pub struct Part {
    /// The share as a run of its own.
    pub plan: Plan,
    /// Each of its requests' place in the whole list.
    pub places: Vec<u32>,
}

/// `total` shared in proportion to `weights` by largest remainders (ties to the
/// first), then at least one each, taken from the largest (the caller checks
/// `total >= weights.len()`).
fn shares(total: u64, weights: &[u64]) -> Vec<u64> {
    let sum = u128::from(weights.iter().sum::<u64>().max(1));
    let exact = |w: u64| u128::from(total) * u128::from(w);
    let mut out: Vec<u64> = weights.iter().map(|&w| (exact(w) / sum) as u64).collect();
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(exact(weights[i]) % sum));
    let left = total.saturating_sub(out.iter().sum()) as usize;
    for &i in order.iter().take(left) {
        out[i] += 1;
    }
    while let Some(empty) = out.iter().position(|&x| x == 0) {
        let (largest, _) = (out.iter().enumerate())
            .max_by_key(|&(i, x)| (*x, std::cmp::Reverse(i)))
            .expect("not empty");
        if out[largest] <= 1 {
            break;
        }
        out[largest] -= 1;
        out[empty] = 1;
    }
    out
}

/// A different arrival sequence for each part, so that their random gaps do not
/// coincide.
fn part_seed(seed: u64, i: usize) -> u64 {
    seed ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

impl LoadSpec {
    /// This spec's load shared among `servers`: each part is this spec with a
    /// server's target, TLS settings and requests, and its share (in proportion to its
    /// number of requests, at least one each) of the connections, threads and request
    /// count, and of the rate. The closed model and fixed, Poisson or gamma rates
    /// split; sessions, injection profiles and scripts run over one server.
    pub fn split(&self, servers: Vec<Server>) -> Result<Vec<Part>, SpecError> {
        let bad = |reason: String| {
            Err(SpecError::Invalid {
                field: "targets",
                reason,
            })
        };
        let n = servers.len();
        if n == 0 || n > MAX_SERVERS {
            return bad(format!(
                "{n} servers; a run sends to at least one and at most {MAX_SERVERS}"
            ));
        }
        if !matches!(self.load.shape, Shape::Closed | Shape::Rate { .. }) {
            return bad(format!(
                "requests to {n} servers run in the closed model or at a rate; {} runs over one server",
                self.load.shape.describe(&self.load.session)
            ));
        }
        if self.hooks.is_some() {
            return bad(format!(
                "a script's hooks run over one server; this list names {n}"
            ));
        }
        if self.load.connections < n {
            return bad(format!(
                "{} connections for {n} servers: each server needs a connection of its own; give at least {n}",
                self.load.connections
            ));
        }
        if let Some(r) = self.load.requests.filter(|&r| r < n as u64) {
            return bad(format!(
                "{r} requests for {n} servers: each server gets at least one; give at least {n}"
            ));
        }
        let weights: Vec<u64> = servers.iter().map(|s| s.requests.len() as u64).collect();
        let total: u64 = weights.iter().sum();
        let connections = shares(self.load.connections as u64, &weights);
        let threads = shares(self.load.threads.max(n) as u64, &weights);
        let requests = self.load.requests.map(|r| shares(r, &weights));
        let mut parts = Vec::with_capacity(n);
        for (i, s) in servers.into_iter().enumerate() {
            if s.requests.is_empty() || s.requests.len() != s.places.len() {
                return bad(format!(
                    "server {} has {} requests and {} places; each request needs its place",
                    s.target.url,
                    s.requests.len(),
                    s.places.len()
                ));
            }
            let mut spec = self.clone();
            spec.target = s.target;
            spec.tls = s.tls;
            spec.load.request = s.requests[0].clone();
            spec.load.variety = s.requests;
            spec.load.connections = connections[i] as usize;
            spec.load.threads = threads[i] as usize;
            spec.load.requests = requests.as_ref().map(|r| r[i]);
            spec.load.seed = part_seed(self.load.seed, i);
            if let Shape::Rate { rate, .. } = &mut spec.load.shape {
                *rate *= weights[i] as f64 / total as f64;
            }
            parts.push(Part {
                plan: spec.plan()?,
                places: s.places,
            });
        }
        Ok(parts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RequestBuilder;

    fn server(url: &str, places: &[u32]) -> Server {
        let target = Target::parse(url).unwrap();
        let requests = places
            .iter()
            .map(|p| {
                let mut t = target.clone();
                t.path = format!("/{p}");
                RequestBuilder::native(&t, "GET", true).build().unwrap()
            })
            .collect();
        Server {
            target,
            tls: None,
            requests,
            places: places.to_vec(),
        }
    }

    fn whole() -> LoadSpec {
        let a = server("http://127.0.0.1:9/", &[0]);
        LoadSpec::new(a.target, a.requests[0].clone())
    }

    #[test]
    fn shares_follow_the_weights_and_add_up() {
        assert_eq!(shares(10, &[1, 1]), vec![5, 5]);
        assert_eq!(shares(10, &[3, 1]), vec![8, 2]);
        assert_eq!(shares(3, &[100, 1, 1]), vec![1, 1, 1]);
        assert_eq!(shares(7, &[1, 1, 1]), vec![3, 2, 2]);
        assert_eq!(shares(1000, &[2, 1]), vec![667, 333]);
        for (total, w) in [
            (64u64, vec![5u64, 2, 9]),
            (1000, vec![1, 999]),
            (5, vec![2, 3]),
        ] {
            let s = shares(total, &w);
            assert_eq!(s.iter().sum::<u64>(), total, "{total} over {w:?}: {s:?}");
            assert!(s.iter().all(|&x| x >= 1));
        }
    }

    #[test]
    fn each_server_gets_its_requests_and_its_share() {
        let mut spec = whole();
        spec.load.connections = 8;
        spec.load.threads = 2;
        spec.load.requests = Some(1000);
        spec.load.shape = Shape::Rate {
            rate: 900.0,
            gaps: crate::arrivals::Gaps::Poisson,
        };
        let parts = spec
            .split(vec![
                server("http://127.0.0.1:9/", &[0, 2]),
                server("http://127.0.0.2:9/", &[1]),
            ])
            .unwrap();
        let a = parts[0].plan.config();
        let b = parts[1].plan.config();
        assert_eq!(a.net.target.authority, "127.0.0.1:9");
        assert_eq!(b.net.target.authority, "127.0.0.2:9");
        assert_eq!(a.sends.variety.len(), 2);
        assert_eq!(b.sends.request.target(), "/1");
        assert_eq!(parts[0].places, vec![0, 2]);
        assert_eq!((a.size.connections, b.size.connections), (5, 3));
        assert_eq!((a.size.threads, b.size.threads), (1, 1));
        assert_eq!((a.ends.requests, b.ends.requests), (Some(667), Some(333)));
        let rate = |s: &crate::spec::config::Config| match s.arrivals.shape {
            Shape::Rate { rate, .. } => rate,
            _ => 0.0,
        };
        assert_eq!((rate(a), rate(b)), (600.0, 300.0));
        assert_ne!(a.arrivals.seed, b.arrivals.seed);
    }

    #[test]
    fn too_few_connections_or_requests_and_sessions_are_refused() {
        let two = || {
            vec![
                server("http://127.0.0.1:9/", &[0]),
                server("http://127.0.0.2:9/", &[1]),
            ]
        };
        let mut spec = whole();
        spec.load.connections = 1;
        let e = spec.split(two()).unwrap_err().to_string();
        assert!(e.contains("1 connections for 2 servers"), "{e}");
        let mut spec = whole();
        spec.load.connections = 2;
        spec.load.requests = Some(1);
        let e = spec.split(two()).unwrap_err().to_string();
        assert!(e.contains("give at least 2"), "{e}");
        let mut spec = whole();
        spec.load.connections = 2;
        spec.load.shape = Shape::Sessions {
            period: None,
            count: 4,
        };
        let e = spec.split(two()).unwrap_err().to_string();
        assert!(e.contains("runs over one server"), "{e}");
    }
}
