//! Artillery's `config.phases` as Gatling injection steps (`arrivalRate` →
//! `constantUsersPerSec`, `rampTo` → `rampUsersPerSec`, `arrivalCount` → `rampUsers`,
//! `pause` → `nothingFor`), with each phase's name and length for the run's phase
//! lines.

use super::*;

/// The phases as Gatling injection steps, and each one's name and length.
pub(super) type Phases = (Vec<String>, Vec<(Option<String>, Duration)>);

pub(super) fn phases(raw: &[RawPhase]) -> Result<Phases, Invalid> {
    if raw.is_empty() {
        return Err("config.phases: none; give one at least (duration and arrivalRate)".into());
    }
    let (mut steps, mut lengths) = (Vec::new(), Vec::new());
    for (i, p) in raw.iter().enumerate() {
        let at = format!("config.phases[{i}]");
        if p.max_vusers.is_some() {
            return refuse(
                &format!("{at}.maxVusers"),
                "users arrive as the phase says; cap the run with -d",
            );
        }
        let secs = |d: Duration| format!("{} milliseconds", d.as_millis());
        if let Some(pause) = &p.pause {
            let d = seconds(pause, &format!("{at}.pause"))?;
            steps.push(format!("nothingFor({})", secs(d)));
            lengths.push((p.name.clone(), d));
            continue;
        }
        let d = seconds(
            p.duration
                .as_ref()
                .ok_or_else(|| format!("{at}.duration: how long the phase lasts"))?,
            &format!("{at}.duration"),
        )?;
        if d.is_zero() {
            return Err(format!("{at}.duration: 0; a phase lasts a while").into());
        }
        let step = match (p.arrival_rate, p.ramp_to, p.arrival_count) {
            (Some(r), None, None) => format!("constantUsersPerSec({r}) during({})", secs(d)),
            (Some(r), Some(to), None) => {
                format!("rampUsersPerSec({r}) to({to}) during({})", secs(d))
            }
            (None, None, Some(n)) => format!("rampUsers({n}) during({})", secs(d)),
            (None, Some(to), None) => format!("rampUsersPerSec(0) to({to}) during({})", secs(d)),
            _ => {
                return Err(format!(
                    "{at}: arrivalRate (with rampTo if it ramps) or arrivalCount, with duration"
                )
                .into())
            }
        };
        steps.push(step);
        lengths.push((p.name.clone(), d));
    }
    Ok((steps, lengths))
}
