//! ghz's step and line load schedules as the steps of a paced run.

use std::time::Duration;

use super::GhzArgs;
use crate::FlagError;

/// The most steps a step schedule is made of.
const MAX_STEPS: usize = 1_000;

/// How long the last rate of a schedule holds when the run has no duration (it ends
/// at -n's count).
const HOLD: Duration = Duration::from_secs(1_000_000);

/// ghz's step and line load schedules as the rates of a paced run: `step` starts at
/// `--load-start` and adds `--load-step` every `--load-step-duration`, `line` changes
/// the rate by `--load-step` each second, each until `--load-end` or for
/// `--load-max-duration`, then holds its last rate (until -z, or -n's count). `None`
/// for `const`.
pub(super) fn load_schedule(
    a: &GhzArgs,
) -> Result<Option<stampede_engine::inject::Profile>, FlagError> {
    use stampede_engine::inject::{InjectionStep, Profile, MAX_RATE};
    let kind = a.load_schedule.as_str();
    match kind {
        "const" => return Ok(None),
        "step" | "line" => {}
        other => {
            return Err(FlagError::usage(format!(
                "--load-schedule {other}: the schedules are const, step and line"
            )))
        }
    }
    if a.rps > 0 {
        return Err(FlagError::usage(format!(
            "-r is the const schedule's rate; --load-schedule {kind} starts at --load-start"
        )));
    }
    if a.load_step == 0 {
        return Err(FlagError::usage(format!(
            "--load-schedule {kind}: give --load-step, the change of the rate"
        )));
    }
    let (start, step, end) = (a.load_start as f64, a.load_step as f64, a.load_end as f64);
    if a.load_end > 0 && (end - start) * step < 0.0 {
        return Err(FlagError::usage(format!(
            "--load-end {}: a --load-step of {} never reaches it from --load-start {}",
            a.load_end, a.load_step, a.load_start
        )));
    }
    // How long the rate changes: up to --load-max-duration, or the run's time.
    let run = [a.duration, a.max_duration]
        .into_iter()
        .find(|d| !d.is_zero());
    let changing = [Some(a.load_max_duration).filter(|d| !d.is_zero()), run]
        .into_iter()
        .flatten()
        .min();
    let rate = |r: f64| {
        let r = if a.load_end > 0 {
            if step > 0.0 {
                r.min(end)
            } else {
                r.max(end)
            }
        } else {
            r
        };
        r.clamp(0.0, MAX_RATE)
    };
    let at = |r: f64, during: Duration| {
        if r > 0.0 {
            InjectionStep::ConstantRate {
                rate: r,
                during,
                randomized: false,
            }
        } else {
            InjectionStep::NothingFor(during)
        }
    };
    let mut steps = Vec::new();
    let mut elapsed = Duration::ZERO;
    let last = if kind == "step" {
        let d = a.load_step_duration;
        if d.is_zero() {
            return Err(FlagError::usage(
                "--load-schedule step: give --load-step-duration, how long each step lasts",
            ));
        }
        let mut r = rate(start);
        loop {
            let left = changing.map(|c| c.saturating_sub(elapsed));
            let reached = a.load_end > 0 && r == rate(end);
            if left.is_some_and(|l| l.is_zero()) || reached || r <= 0.0 && step < 0.0 {
                break r;
            }
            if steps.len() == MAX_STEPS || r >= MAX_RATE {
                break r;
            }
            let during = left.map_or(d, |l| l.min(d));
            steps.push(at(r, during));
            elapsed += during;
            r = rate(r + step);
        }
    } else {
        // The time to reach the end rate, or zero, or the most a rate may be.
        let goal = if a.load_end > 0 {
            end
        } else if step > 0.0 {
            MAX_RATE
        } else {
            0.0
        };
        let mut secs = (goal - start) / step;
        if let Some(c) = changing {
            secs = secs.min(c.as_secs_f64());
        }
        let during = Duration::from_secs_f64(secs.max(0.0));
        let to = rate(start + step * during.as_secs_f64());
        if !during.is_zero() {
            steps.push(InjectionStep::RampRate {
                from: rate(start),
                to,
                during,
                randomized: false,
            });
        }
        elapsed = during;
        to
    };
    // The last rate holds until the run ends.
    let hold = match run {
        Some(r) => r.saturating_sub(elapsed),
        None => HOLD,
    };
    if !hold.is_zero() {
        steps.push(at(last, hold));
    }
    if steps
        .iter()
        .all(|s| matches!(s, InjectionStep::NothingFor(_)))
    {
        return Err(FlagError::usage(format!(
            "--load-schedule {kind}: every rate of it is 0; give --load-start or a rising --load-step"
        )));
    }
    Ok(Some(Profile { steps }))
}
