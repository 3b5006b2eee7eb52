//! Gatling's injection steps: parsing their DSL, and turning a profile into arrivals
//! (open steps) or a target concurrency over time (closed steps).
//!
//! Both spellings Gatling has used are accepted — `rampUsers(100).during(60)` and
//! `rampUsers(100) over (1 minute)`, `constantUsersPerSec(20) during (15 seconds)` — so
//! an injection profile can be pasted from an old simulation. The arithmetic follows
//! Gatling: users of a ramp are spread evenly, `.randomized` is a Poisson process
//! (thinned for ramps), `stressPeakUsers` follows the smoothed Heaviside curve, and the
//! `increment…` staircases expand into levels and ramps.

use crate::error::SyntaxError;
use crate::math::erfinv;
use std::time::Duration;

use crate::spec::arrivals::Rng;

/// One injection step.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum InjectionStep {
    /// `nothingFor(d)`: no arrivals for `d`.
    NothingFor(Duration),
    /// `atOnceUsers(n)`: `n` users at once.
    AtOnce(u64),
    /// `rampUsers(n).during(d)`: `n` users spread evenly over `d`.
    Ramp { users: u64, during: Duration },
    /// `constantUsersPerSec(r).during(d)` (`randomized`: Poisson arrivals).
    ConstantRate {
        rate: f64,
        during: Duration,
        randomized: bool,
    },
    /// `rampUsersPerSec(r1).to(r2).during(d)`: the arrival rate goes linearly from r1 to r2.
    RampRate {
        from: f64,
        to: f64,
        during: Duration,
        randomized: bool,
    },
    /// `stressPeakUsers(n).during(d)`: `n` users along a smoothed step.
    StressPeak { users: u64, during: Duration },
    /// `constantConcurrentUsers(n).during(d)` (closed model).
    ConstantConcurrent { users: u64, during: Duration },
    /// `rampConcurrentUsers(a).to(b).during(d)` (closed model).
    RampConcurrent {
        from: u64,
        to: u64,
        during: Duration,
    },
}

impl InjectionStep {
    /// True for the closed-model steps.
    pub fn is_closed(&self) -> bool {
        matches!(
            self,
            InjectionStep::ConstantConcurrent { .. } | InjectionStep::RampConcurrent { .. }
        )
    }

    /// How long the step lasts.
    pub fn duration(&self) -> Duration {
        match *self {
            InjectionStep::NothingFor(d) => d,
            InjectionStep::AtOnce(_) => Duration::ZERO,
            InjectionStep::Ramp { during, .. }
            | InjectionStep::ConstantRate { during, .. }
            | InjectionStep::RampRate { during, .. }
            | InjectionStep::StressPeak { during, .. }
            | InjectionStep::ConstantConcurrent { during, .. }
            | InjectionStep::RampConcurrent { during, .. } => during,
        }
    }
}

fn fmt_d(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0}s")
    } else {
        format!("{}ms", d.as_millis())
    }
}

impl std::fmt::Display for InjectionStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let r = |randomized: bool| if randomized { ".randomized" } else { "" };
        match *self {
            InjectionStep::NothingFor(d) => write!(f, "nothingFor({})", fmt_d(d)),
            InjectionStep::AtOnce(n) => write!(f, "atOnceUsers({n})"),
            InjectionStep::Ramp { users, during } => {
                write!(f, "rampUsers({users}).during({})", fmt_d(during))
            }
            InjectionStep::ConstantRate {
                rate,
                during,
                randomized,
            } => {
                write!(
                    f,
                    "constantUsersPerSec({rate}).during({}){}",
                    fmt_d(during),
                    r(randomized)
                )
            }
            InjectionStep::RampRate {
                from,
                to,
                during,
                randomized,
            } => write!(
                f,
                "rampUsersPerSec({from}).to({to}).during({}){}",
                fmt_d(during),
                r(randomized)
            ),
            InjectionStep::StressPeak { users, during } => {
                write!(f, "stressPeakUsers({users}).during({})", fmt_d(during))
            }
            InjectionStep::ConstantConcurrent { users, during } => {
                write!(
                    f,
                    "constantConcurrentUsers({users}).during({})",
                    fmt_d(during)
                )
            }
            InjectionStep::RampConcurrent { from, to, during } => {
                write!(
                    f,
                    "rampConcurrentUsers({from}).to({to}).during({})",
                    fmt_d(during)
                )
            }
        }
    }
}

/// A chain of injection steps, all open or all closed (as Gatling requires).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Profile {
    /// The steps, in order.
    pub steps: Vec<InjectionStep>,
}

impl Profile {
    /// Parses one or more steps given as separate strings (each may itself hold several
    /// steps separated by commas at the top level).
    pub fn parse(inputs: &[String]) -> Result<Profile, SyntaxError> {
        let mut steps = Vec::new();
        for s in inputs {
            for part in split_top_level(s) {
                steps.extend(parse_step(part.trim())?);
            }
        }
        if steps.is_empty() {
            return Err("no injection step given".into());
        }
        let closed = steps[0].is_closed();
        if steps
            .iter()
            .any(|s| s.is_closed() != closed && !matches!(s, InjectionStep::NothingFor(_)))
        {
            return Err("open steps (users arriving) and closed steps (concurrent users) cannot be mixed in one profile".into());
        }
        Ok(Profile { steps })
    }

    /// True when the profile sets concurrency rather than arrivals.
    pub fn is_closed(&self) -> bool {
        self.steps.iter().any(InjectionStep::is_closed)
    }

    /// Total duration of the profile.
    pub fn duration(&self) -> Duration {
        // Saturating: a profile read from a file may add up past any clock.
        self.steps
            .iter()
            .fold(Duration::ZERO, |a, s| a.saturating_add(s.duration()))
    }

    /// Arrival offsets of an open profile, in order.
    pub fn arrivals(&self, seed: u64) -> impl Iterator<Item = Duration> + Send + 'static {
        let mut rng = Rng::new(seed);
        let mut offset = Duration::ZERO;
        let mut segments: Vec<Box<dyn Iterator<Item = Duration> + Send>> = Vec::new();
        for step in &self.steps {
            let base = offset;
            let it: Box<dyn Iterator<Item = Duration> + Send> = match *step {
                InjectionStep::NothingFor(_)
                | InjectionStep::ConstantConcurrent { .. }
                | InjectionStep::RampConcurrent { .. } => Box::new(std::iter::empty()),
                InjectionStep::AtOnce(n) => Box::new((0..n).map(move |_| base)),
                InjectionStep::Ramp { users, during } => {
                    Box::new(even(users, during).map(move |t| base + t))
                }
                InjectionStep::ConstantRate {
                    rate,
                    during,
                    randomized: false,
                } => {
                    let users = (rate * during.as_secs_f64()).round() as u64;
                    Box::new(even(users, during).map(move |t| base + t))
                }
                InjectionStep::ConstantRate {
                    rate,
                    during,
                    randomized: true,
                } => Box::new(poisson(rate, rate, during, rng.next_u64()).map(move |t| base + t)),
                InjectionStep::RampRate {
                    from,
                    to,
                    during,
                    randomized: false,
                } => Box::new(ramp_rate(from, to, during).map(move |t| base + t)),
                InjectionStep::RampRate {
                    from,
                    to,
                    during,
                    randomized: true,
                } => Box::new(poisson(from, to, during, rng.next_u64()).map(move |t| base + t)),
                InjectionStep::StressPeak { users, during } => {
                    Box::new(heaviside(users, during).map(move |t| base + t))
                }
            };
            segments.push(it);
            offset += step.duration();
        }
        segments.into_iter().flatten()
    }

    /// At most how many users it has at once: an open profile's users in all, a
    /// closed one's highest concurrency (saturating).
    pub fn most_users(&self) -> u64 {
        let during = |d: Duration| d.as_secs_f64();
        let each = self.steps.iter().map(|s| match *s {
            InjectionStep::NothingFor(_) => 0,
            InjectionStep::AtOnce(n) => n,
            InjectionStep::Ramp { users, .. } | InjectionStep::StressPeak { users, .. } => users,
            InjectionStep::ConstantRate {
                rate, during: d, ..
            } => (rate * during(d)).ceil() as u64,
            InjectionStep::RampRate {
                from,
                to,
                during: d,
                ..
            } => ((from + to) / 2.0 * during(d)).ceil() as u64,
            InjectionStep::ConstantConcurrent { users, .. } => users,
            InjectionStep::RampConcurrent { from, to, .. } => from.max(to),
        });
        if self.is_closed() {
            each.max().unwrap_or(0)
        } else {
            each.fold(0u64, u64::saturating_add)
        }
    }

    /// The highest arrival rate of its steps, per second (0 when none has one).
    pub fn peak_rate(&self) -> f64 {
        (self.steps.iter())
            .map(|s| match *s {
                InjectionStep::ConstantRate { rate, .. } => rate,
                InjectionStep::RampRate { from, to, .. } => from.max(to),
                InjectionStep::Ramp { users, during }
                | InjectionStep::StressPeak { users, during }
                    if !during.is_zero() =>
                {
                    users as f64 / during.as_secs_f64()
                }
                _ => 0.0,
            })
            .fold(0.0, f64::max)
    }

    /// Target number of concurrent users at offset `t` of a closed profile (0 after its end).
    pub fn concurrency_at(&self, t: Duration) -> u64 {
        let mut start = Duration::ZERO;
        for step in &self.steps {
            let d = step.duration();
            if t < start + d {
                let into = (t - start).as_secs_f64() / d.as_secs_f64().max(f64::MIN_POSITIVE);
                return match *step {
                    InjectionStep::ConstantConcurrent { users, .. } => users,
                    InjectionStep::RampConcurrent { from, to, .. } => {
                        (from as f64 + (to as f64 - from as f64) * into).round() as u64
                    }
                    _ => 0,
                };
            }
            start += d;
        }
        0
    }
}

/// `n` offsets spread evenly over `d`: i·d/n.
fn even(n: u64, d: Duration) -> impl Iterator<Item = Duration> + Send {
    let d = d.as_secs_f64();
    (0..n).map(move |i| Duration::from_secs_f64(i as f64 * d / n as f64))
}

/// Deterministic arrivals whose rate goes linearly from `r1` to `r2` over `d`: arrival
/// k is where the cumulative count r1·t + (r2−r1)·t²/(2d) reaches k.
fn ramp_rate(r1: f64, r2: f64, d: Duration) -> impl Iterator<Item = Duration> + Send {
    let ds = d.as_secs_f64();
    let users = ((r1 + (r2 - r1) / 2.0) * ds).floor() as u64;
    let a = (r2 - r1) / (2.0 * ds);
    (0..users).map(move |k| {
        let k = k as f64;
        let t = if a.abs() < 1e-12 {
            k / r1
        } else {
            (-r1 + (r1 * r1 + 4.0 * a * k).sqrt()) / (2.0 * a)
        };
        Duration::from_secs_f64(t.clamp(0.0, ds))
    })
}

/// A Poisson process whose rate goes linearly from `r1` to `r2` over `d` (Lewis and
/// Shedler's thinning, as Gatling's `randomized`).
fn poisson(r1: f64, r2: f64, d: Duration, seed: u64) -> impl Iterator<Item = Duration> + Send {
    let ds = d.as_secs_f64();
    let max = r1.max(r2);
    let mut rng = Rng::new(seed);
    let mut t = 0.0;
    std::iter::from_fn(move || {
        if max <= 0.0 {
            return None;
        }
        loop {
            t += rng.exp(1.0 / max);
            if t >= ds {
                return None;
            }
            let rate = r1 + (r2 - r1) * t / ds;
            if rng.unit() <= rate / max {
                return Some(Duration::from_secs_f64(t));
            }
        }
    })
}

/// Gatling's `stressPeakUsers`: user i arrives at k·(erf⁻¹(2i/(n+2) − 1) + t0).
fn heaviside(n: u64, d: Duration) -> impl Iterator<Item = Duration> + Send {
    let inv = move |u: u64| erfinv(2.0 * (u as f64 / (n as f64 + 2.0)) - 1.0);
    let t0 = inv(1).abs();
    let k = d.as_secs_f64() / (2.0 * t0);
    (1..=n).map(move |i| Duration::from_secs_f64((k * (inv(i) + t0)).clamp(0.0, d.as_secs_f64())))
}

fn split_top_level(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out.into_iter().filter(|p| !p.trim().is_empty()).collect()
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Num(f64),
    Open,
    Close,
    Comma,
    Dot,
}

fn tokenize(s: &str) -> Result<Vec<Tok>, SyntaxError> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    while i < b.len() {
        let c = b[i];
        match c {
            b' ' | b'\t' => i += 1,
            b'(' => {
                out.push(Tok::Open);
                i += 1
            }
            b')' => {
                out.push(Tok::Close);
                i += 1
            }
            b',' => {
                out.push(Tok::Comma);
                i += 1
            }
            b'.' => {
                out.push(Tok::Dot);
                i += 1
            }
            b'0'..=b'9' => {
                let start = i;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                // A fraction only if a digit follows the dot (10.seconds is 10 . seconds).
                if i + 1 < b.len() && b[i] == b'.' && b[i + 1].is_ascii_digit() {
                    i += 1;
                    while i < b.len() && b[i].is_ascii_digit() {
                        i += 1;
                    }
                }
                // Scala literals: 10L, 10d.
                let num = s[start..i]
                    .parse()
                    .map_err(|_| format!("bad number {:?}", &s[start..i]))?;
                if i < b.len()
                    && matches!(b[i], b'L' | b'l' | b'D' | b'd')
                    && !(i + 1 < b.len() && b[i + 1].is_ascii_alphabetic())
                {
                    i += 1;
                }
                out.push(Tok::Num(num));
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                out.push(Tok::Ident(s[start..i].to_string()));
            }
            _ => return Err(format!("unexpected character {:?}", c as char).into()),
        }
    }
    Ok(out)
}

fn unit_secs(u: &str) -> Option<f64> {
    Some(match u {
        "ms" | "milli" | "millis" | "millisecond" | "milliseconds" => 1e-3,
        "s" | "sec" | "secs" | "second" | "seconds" => 1.0,
        "m" | "min" | "mins" | "minute" | "minutes" => 60.0,
        "h" | "hour" | "hours" => 3600.0,
        _ => return None,
    })
}

#[derive(Debug, Clone, Copy)]
struct Value {
    num: f64,
    unit: Option<f64>,
}

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }
    fn bump(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += 1;
        t
    }
    fn value(&mut self) -> Result<Value, SyntaxError> {
        match self.bump() {
            Some(Tok::Open) => {
                let v = self.value()?;
                match self.bump() {
                    Some(Tok::Close) => Ok(v),
                    _ => Err("missing )".into()),
                }
            }
            Some(Tok::Num(num)) => {
                let mut unit = None;
                match (self.toks.get(self.pos), self.toks.get(self.pos + 1)) {
                    (Some(Tok::Ident(u)), _) if unit_secs(u).is_some() => {
                        unit = unit_secs(u);
                        self.pos += 1;
                    }
                    (Some(Tok::Dot), Some(Tok::Ident(u))) if unit_secs(u).is_some() => {
                        unit = unit_secs(u);
                        self.pos += 2;
                    }
                    // A word after a number that is no modifier (`during 60 randomized`):
                    // a unit we lack.
                    (Some(Tok::Ident(u)), Some(Tok::Close) | None)
                    | (Some(Tok::Dot), Some(Tok::Ident(u)))
                        if !MODIFIERS.contains(&u.as_str()) =>
                    {
                        return Err(format!(
                            "unknown time unit {u:?} after {num}; use ms, seconds, minutes or hours (30 seconds, 2.minutes, 500 ms)"
                        ).into())
                    }
                    _ => {}
                }
                Ok(Value { num, unit })
            }
            other => Err(format!("expected a number, found {other:?}").into()),
        }
    }
    /// `name(args)`, `name value` (infix) or a bare `name`.
    fn segment(&mut self) -> Result<Option<(String, Vec<Value>)>, SyntaxError> {
        while self.peek() == Some(&Tok::Dot) {
            self.pos += 1;
        }
        let name = match self.bump() {
            None => return Ok(None),
            Some(Tok::Ident(n)) => n,
            Some(t) => return Err(format!("expected a step or modifier name, found {t:?}").into()),
        };
        let mut args = Vec::new();
        match self.peek() {
            Some(Tok::Open) => {
                self.pos += 1;
                if self.peek() == Some(&Tok::Close) {
                    self.pos += 1;
                } else {
                    loop {
                        args.push(self.value()?);
                        match self.bump() {
                            Some(Tok::Comma) => {}
                            Some(Tok::Close) => break,
                            _ => {
                                return Err(
                                    format!("missing ) after the arguments of {name}").into()
                                )
                            }
                        }
                    }
                }
            }
            Some(Tok::Num(_)) => args.push(self.value()?),
            _ => {}
        }
        Ok(Some((name, args)))
    }
}

/// The modifiers a step may take after its head.
const MODIFIERS: [&str; 8] = [
    "during",
    "over",
    "to",
    "randomized",
    "times",
    "eachLevelLasting",
    "separatedByRampsLasting",
    "startingFrom",
];

/// The most users one step may start: far past what one machine can connect, and
/// small enough that counting them never takes long.
pub const MAX_USERS: u64 = 100_000_000;
/// The highest arrival rate (users or requests per second) one generator accepts.
pub const MAX_RATE: f64 = 1e7;

const FORMS: &str = "nothingFor(d), atOnceUsers(n), rampUsers(n).during(d), constantUsersPerSec(r).during(d)[.randomized], rampUsersPerSec(r1).to(r2).during(d)[.randomized], stressPeakUsers(n).during(d), incrementUsersPerSec(r).times(k).eachLevelLasting(d)[.separatedByRampsLasting(d)][.startingFrom(r0)], constantConcurrentUsers(n).during(d), rampConcurrentUsers(a).to(b).during(d), incrementConcurrentUsers(n).times(k).eachLevelLasting(d)[.separatedByRampsLasting(d)][.startingFrom(n0)]; durations as 30, 30s, 500 ms, 2.minutes or (1 minute)";

/// Parses one step into one or more [`InjectionStep`]s (staircases expand).
///
/// Long on purpose: one match over every injection step Gatling and k6 write, each arm a
/// few lines.
pub fn parse_step(s: &str) -> Result<Vec<InjectionStep>, SyntaxError> {
    let err = |why: String| SyntaxError(format!("injection step {s:?}: {why}; accepted: {FORMS}"));
    let toks = tokenize(s).map_err(|e| err(e.0))?;
    let mut p = Parser { toks, pos: 0 };
    let mut segs: Vec<(String, Vec<Value>)> = Vec::new();
    while let Some(seg) = p.segment().map_err(|e| err(e.0))? {
        segs.push(seg);
    }
    let Some((head, head_args)) = segs.first().cloned() else {
        return Err(err("empty".into()));
    };
    let get = |key: &str| {
        segs.iter()
            .skip(1)
            .find(|(n, _)| n == key)
            .map(|(_, a)| a.clone())
    };
    let num = |args: &[Value], what: &str| -> Result<f64, SyntaxError> {
        match args {
            [v] if v.num.is_finite() && v.num >= 0.0 => Ok(v.num),
            _ => Err(err(format!("{what} needs one non-negative number"))),
        }
    };
    let rate = |args: &[Value], what: &str| -> Result<f64, SyntaxError> {
        let r = num(args, what)?;
        if r > MAX_RATE {
            return Err(err(format!(
                "{what}: {r} users/s is beyond what one load generator can start (at most {MAX_RATE:e}); split the load over machines"
            )));
        }
        Ok(r)
    };
    let count = |args: &[Value], what: &str| -> Result<u64, SyntaxError> {
        let n = num(args, what)?;
        if n.fract() != 0.0 {
            return Err(err(format!("{what} needs a whole number")));
        }
        if n > MAX_USERS as f64 {
            return Err(err(format!(
                "{what}: {n} users is beyond what one load generator can run (at most {MAX_USERS}); split the load over machines"
            )));
        }
        Ok(n as u64)
    };
    let dur = |key: &str| -> Result<Duration, SyntaxError> {
        let args = get(key).ok_or_else(|| err(format!("{head} needs .{key}(duration)")))?;
        match args.as_slice() {
            [v] if v.num.is_finite() && v.num >= 0.0 => {
                Ok(Duration::from_secs_f64(v.num * v.unit.unwrap_or(1.0)))
            }
            _ => Err(err(format!("{key} needs one duration"))),
        }
    };
    let during = || {
        if get("during").is_none() && get("over").is_some() {
            dur("over")
        } else {
            dur("during")
        }
    };
    let randomized = segs.iter().skip(1).any(|(n, _)| n == "randomized");
    if let Some((n, _)) = segs
        .iter()
        .skip(1)
        .find(|(n, _)| !MODIFIERS.contains(&n.as_str()))
    {
        return Err(err(format!("unknown modifier {n:?}")));
    }
    let steps = match head.as_str() {
        "nothingFor" => match head_args.as_slice() {
            [v] => vec![InjectionStep::NothingFor(Duration::from_secs_f64(
                v.num.max(0.0) * v.unit.unwrap_or(1.0),
            ))],
            _ => return Err(err("nothingFor needs one duration".into())),
        },
        "atOnceUsers" => vec![InjectionStep::AtOnce(count(&head_args, "atOnceUsers")?)],
        "rampUsers" => vec![InjectionStep::Ramp {
            users: count(&head_args, "rampUsers")?,
            during: during()?,
        }],
        "constantUsersPerSec" => vec![InjectionStep::ConstantRate {
            rate: rate(&head_args, "constantUsersPerSec")?,
            during: during()?,
            randomized,
        }],
        "rampUsersPerSec" => vec![InjectionStep::RampRate {
            from: rate(&head_args, "rampUsersPerSec")?,
            to: rate(
                &get("to").ok_or_else(|| err("rampUsersPerSec needs .to(rate)".into()))?,
                "to",
            )?,
            during: during()?,
            randomized,
        }],
        "stressPeakUsers" => vec![InjectionStep::StressPeak {
            users: count(&head_args, "stressPeakUsers")?,
            during: during()?,
        }],
        "constantConcurrentUsers" => vec![InjectionStep::ConstantConcurrent {
            users: count(&head_args, "constantConcurrentUsers")?,
            during: during()?,
        }],
        "rampConcurrentUsers" => vec![InjectionStep::RampConcurrent {
            from: count(&head_args, "rampConcurrentUsers")?,
            to: count(
                &get("to").ok_or_else(|| err("rampConcurrentUsers needs .to(n)".into()))?,
                "to",
            )?,
            during: during()?,
        }],
        "incrementUsersPerSec" | "incrementConcurrentUsers" => {
            let incr = rate(&head_args, &head)?;
            let times = count(
                &get("times").ok_or_else(|| err(format!("{head} needs .times(k)")))?,
                "times",
            )?;
            if times > 10_000 || incr * times as f64 > MAX_RATE {
                return Err(err(format!(
                    "{head}: {times} levels of {incr} go beyond 10,000 levels or {MAX_RATE:e} users/s"
                )));
            }
            let level = dur("eachLevelLasting")?;
            let ramp = get("separatedByRampsLasting")
                .map(|_| dur("separatedByRampsLasting"))
                .transpose()?
                .unwrap_or_default();
            let start = get("startingFrom")
                .map(|a| num(&a, "startingFrom"))
                .transpose()?
                .unwrap_or(0.0);
            staircase(
                head == "incrementConcurrentUsers",
                incr,
                times,
                level,
                ramp,
                start,
            )
        }
        other => return Err(err(format!("unknown step {other:?}"))),
    };
    Ok(steps)
}

/// Gatling's staircase: from 0, (ramp, level)×k; from r0 > 0, level, (ramp, level)×(k−1).
fn staircase(
    closed: bool,
    incr: f64,
    times: u64,
    level: Duration,
    ramp: Duration,
    start: f64,
) -> Vec<InjectionStep> {
    let lvl = |rate: f64| {
        if closed {
            InjectionStep::ConstantConcurrent {
                users: rate.round() as u64,
                during: level,
            }
        } else {
            InjectionStep::ConstantRate {
                rate,
                during: level,
                randomized: false,
            }
        }
    };
    let rmp = |from: f64, to: f64| {
        if closed {
            InjectionStep::RampConcurrent {
                from: from.round() as u64,
                to: to.round() as u64,
                during: ramp,
            }
        } else {
            InjectionStep::RampRate {
                from,
                to,
                during: ramp,
                randomized: false,
            }
        }
    };
    let mut out = Vec::new();
    for i in 0..times {
        let i = i as f64;
        if ramp > Duration::ZERO && start == 0.0 {
            out.push(rmp(i * incr, (i + 1.0) * incr));
            out.push(lvl((i + 1.0) * incr));
        } else {
            let rate = start + i * incr;
            out.push(lvl(rate));
            if ramp > Duration::ZERO && (i as u64) < times - 1 {
                out.push(rmp(rate, rate + incr));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
