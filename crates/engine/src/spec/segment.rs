//! Execution segments: one process's exact share of a run that several processes (on
//! one machine or many) carry out together.
//!
//! Segment K of N takes every N-th arrival of the run's global schedule starting at the
//! K-th (fixed and Poisson rates, injection profiles and httperf's session arrivals all
//! come from one global sequence, seeded alike everywhere), and an even share of every
//! count: connections, the request budget, closed-model users and sessions, remainders
//! to the first segments. Within a segment its worker threads split their share the
//! same way, so segment K's worker W of T owns lane `K - 1 + N × W` of `N × T`: the
//! union of every segment's lanes is the unsegmented run, arrival for arrival.

use std::fmt;
use std::str::FromStr;

use crate::error::SyntaxError;

/// Segment `index + 1` of `count`. The whole run is segment 1/1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    index: u32,
    count: u32,
}

impl Default for Segment {
    fn default() -> Self {
        Segment::WHOLE
    }
}

impl Segment {
    /// The whole run.
    pub const WHOLE: Segment = Segment { index: 0, count: 1 };

    /// Segment `k` (from 1) of `n`.
    pub fn new(k: u32, n: u32) -> Result<Segment, SyntaxError> {
        if n == 0 {
            return Err(SyntaxError(format!(
                "segment {k}/{n}: the number of segments must be at least 1"
            )));
        }
        if k == 0 || k > n {
            return Err(SyntaxError(format!(
                "segment {k}/{n}: K must be from 1 to {n} (segments count from 1)"
            )));
        }
        Ok(Segment {
            index: k - 1,
            count: n,
        })
    }

    /// K, from 1.
    pub fn k(&self) -> u32 {
        self.index + 1
    }

    /// N.
    pub fn n(&self) -> u32 {
        self.count
    }

    /// Whether this is the whole run.
    pub fn is_whole(&self) -> bool {
        self.count == 1
    }

    /// This segment's share of `total` things: as even as possible, one more for each
    /// of the first `total % N` segments.
    pub fn share(&self, total: u64) -> u64 {
        let n = u64::from(self.count);
        total / n + u64::from(u64::from(self.index) < total % n)
    }

    /// The global lane of worker `w` of `workers` in this segment, and how many lanes
    /// the whole run has: `(K - 1 + N × w, N × workers)`.
    pub fn lane(&self, w: usize, workers: usize) -> (usize, usize) {
        let n = self.count as usize;
        (self.index as usize + n * w, n * workers.max(1))
    }
}

impl fmt::Display for Segment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.k(), self.n())
    }
}

impl FromStr for Segment {
    type Err = SyntaxError;

    /// `K/N`, K from 1 to N.
    fn from_str(s: &str) -> Result<Segment, SyntaxError> {
        let bad = || {
            SyntaxError(format!(
                "{s:?} is not a segment; use K/N with K from 1 to N (e.g. 2/4)"
            ))
        };
        let (k, n) = s.trim().split_once('/').ok_or_else(bad)?;
        let k: u32 = k.trim().parse().map_err(|_| bad())?;
        let n: u32 = n.trim().parse().map_err(|_| bad())?;
        Segment::new(k, n)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use super::*;
    use crate::run::schedule::{Budget, Next, Schedule};
    use crate::spec::inject::Profile;
    use crate::{LoadSpec, RequestBuilder, Shape, Target};

    fn spec(shape: Shape, connections: usize, segment: Segment) -> LoadSpec {
        let t = Target::parse("http://127.0.0.1:9/").unwrap();
        let mut s = LoadSpec::new(t, RequestBuilder::new("GET", "/").build().unwrap());
        s.load.shape = shape;
        s.load.connections = connections;
        s.load.duration = Some(Duration::from_secs(10));
        s.segment = segment;
        s.load.seed = 42;
        s
    }

    /// Every start the spec's schedules (`threads` workers) make in simulated time,
    /// as offsets from the start, sorted. Sessions are taken to end at once.
    fn starts(spec: &LoadSpec, threads: usize) -> Vec<Duration> {
        let cfg = crate::spec::config::Config::of(spec.clone());
        let start = Instant::now();
        let end = spec.load.duration.map(|d| start + d);
        let budget = Arc::new(Budget::new(
            spec.load.requests.map(|n| spec.segment.share(n)),
        ));
        let profile = match &spec.load.shape {
            Shape::Users(p) | Shape::Paced(p) => Some(Arc::new(p.clone())),
            _ => None,
        };
        let mut out = Vec::new();
        for w in 0..threads {
            let mut s = crate::run::schedule_for(
                &cfg,
                (w, threads),
                spec.load.connections,
                (start, end),
                &budget,
                profile.as_ref(),
            );
            let mut now = start;
            loop {
                match s.next(now, 0) {
                    Next::Send { intended } => out.push(intended - start),
                    Next::Wait(t) if end.is_some_and(|e| t >= e) => break,
                    Next::Wait(t) => now = t.max(now),
                    Next::Done => break,
                }
                if out.len() > 1_000_000 {
                    panic!("runaway schedule");
                }
            }
        }
        out.sort_unstable();
        out
    }

    #[test]
    fn the_segments_together_are_the_whole_schedule() {
        let shapes = [
            Shape::Rate {
                rate: 997.0,
                gaps: crate::arrivals::Gaps::Even,
            },
            Shape::Rate {
                rate: 1500.0,
                gaps: crate::arrivals::Gaps::Poisson,
            },
            Shape::Users(
                Profile::parse(&[
                    "rampUsers(300).during(5), constantUsersPerSec(40).during(3)".into(),
                ])
                .unwrap(),
            ),
            Shape::Paced(
                Profile::parse(&[
                    "constantUsersPerSec(100).during(2), rampUsersPerSec(100).to(900).during(3)"
                        .into(),
                ])
                .unwrap(),
            ),
            Shape::Sessions {
                period: Some(crate::spec::arrivals::Period::parse("e0.01").unwrap()),
                count: 701,
            },
            Shape::Sessions {
                period: None,
                count: 37,
            },
        ];
        for shape in shapes {
            let whole = starts(&spec(shape.clone(), 64, Segment::WHOLE), 1);
            assert!(whole.len() > 30, "{shape:?}");
            for n in [2u32, 3, 4, 7] {
                for threads in [1, 3] {
                    // Sequential sessions run on one thread (validate sees to it).
                    let threads = match shape {
                        Shape::Sessions { period: None, .. } => 1,
                        _ => threads,
                    };
                    let mut union = Vec::new();
                    for k in 1..=n {
                        let seg = Segment::new(k, n).unwrap();
                        union.extend(starts(&spec(shape.clone(), 64, seg), threads));
                    }
                    union.sort_unstable();
                    if let Shape::Sessions { period: None, .. } = shape {
                        // Sequential sessions start as the previous ends: only the count
                        // is the schedule's.
                        assert_eq!(union.len(), whole.len(), "{shape:?} {n}");
                    } else {
                        assert_eq!(union, whole, "{shape:?} over {n} segments × {threads}");
                    }
                }
            }
        }
    }

    #[test]
    fn closed_users_and_budgets_split_exactly() {
        let profile =
            Arc::new(Profile::parse(&["rampConcurrentUsers(0).to(50).during(10)".into()]).unwrap());
        for n in [2u32, 3, 5] {
            for secs in [1u64, 4, 9] {
                let t = Duration::from_secs(secs);
                let mut total = 0;
                for k in 1..=n {
                    let (w, lanes) = Segment::new(k, n).unwrap().lane(0, 2);
                    for lane in [w, w + n as usize] {
                        let start = Instant::now();
                        let mut s = crate::run::schedule::ClosedUsers::new(
                            start,
                            profile.clone(),
                            lane,
                            lanes,
                        );
                        // Count how many users this lane starts at time t.
                        let mut active = 0;
                        while let Next::Send { .. } = s.next(start + t, active) {
                            active += 1;
                        }
                        total += active as u64;
                    }
                }
                assert_eq!(total, profile.concurrency_at(t), "{n} segments at {secs}s");
            }
        }
        // A request budget of 1001 over 4 segments: 251, 250, 250, 250.
        let shares: Vec<u64> = (1..=4)
            .map(|k| Segment::new(k, 4).unwrap().share(1001))
            .collect();
        assert_eq!(shares, [251, 250, 250, 250]);
    }

    #[test]
    fn shares_add_up_and_lanes_partition() {
        for n in 1..=7u32 {
            for total in [0u64, 1, 5, 64, 1001] {
                let sum: u64 = (1..=n)
                    .map(|k| Segment::new(k, n).unwrap().share(total))
                    .sum();
                assert_eq!(sum, total, "{total} over {n}");
            }
            for workers in 1..=3 {
                let mut lanes: Vec<usize> = (1..=n)
                    .flat_map(|k| {
                        let s = Segment::new(k, n).unwrap();
                        (0..workers).map(move |w| s.lane(w, workers))
                    })
                    .map(|(l, of)| {
                        assert_eq!(of, n as usize * workers);
                        l
                    })
                    .collect();
                lanes.sort_unstable();
                assert_eq!(lanes, (0..n as usize * workers).collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn bad_segments_say_what_is_accepted() {
        assert_eq!("2/4".parse::<Segment>().unwrap().to_string(), "2/4");
        for (bad, says) in [
            ("5/4", "from 1 to 4"),
            ("0/4", "from 1 to 4"),
            ("1/0", "at least 1"),
            ("x", "K/N"),
            ("1/", "K/N"),
            ("-1/2", "K/N"),
        ] {
            let e = bad.parse::<Segment>().unwrap_err();
            assert!(e.0.contains(says), "{bad}: {e}");
        }
    }
}
