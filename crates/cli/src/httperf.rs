//! `stampede httperf`'s run and report: httperf's report and its `--verbose`
//! exchange lines; its flags are [`stampede_flags::httperf`]'s.

use stampede_engine::{LoadSpec, Run, Shape};
use stampede_report::httperf_report;

use crate::common::{self, Exit, ProgressOptions};
use crate::contract::{self, Tool};
use crate::watch::{self, Style};
use stampede_flags::httperf::*;

pub fn main(args: &[String]) -> Result<(), Exit> {
    contract::run::<Httperf>(args)
}

impl Tool for Httperf {
    type State = Self::Info;

    fn execute(_a: &HttperfArgs, mut spec: LoadSpec, h: &mut HttperfRun) -> Result<Run, Exit> {
        spec.hooks = watch::hooks(Style::Httperf {
            request: h.print.request,
            reply: h.print.reply,
        });
        let Shape::Sessions { count, .. } = spec.load.shape else {
            unreachable!("httperf runs sessions")
        };
        let calls = spec.load.session.calls;
        let what = if spec.load.script.is_empty() {
            format!("{count} connections of {calls} calls each")
        } else {
            let defined = spec.load.script.iter().filter(|s| s.new_session).count();
            format!("{count} sessions taking the log's {defined} in turn")
        };
        eprintln!(
            "stampede httperf: {what} to {}; the report follows at the end",
            spec.target.url
        );
        // --wlog n: a log shorter than the run's calls ends it.
        let asked = count * u64::from(calls);
        h.short_log = (spec.load.walk)
            .filter(|w| w.once)
            .map(|_| (spec.load.variety.len() as u64, asked))
            .filter(|(n, asked)| n < asked);
        let before = stampede_engine::process::self_cpu();
        let run = common::execute(
            spec,
            ProgressOptions {
                quiet: false,
                heartbeat: None,
                // httperf is silent until its report; stampede says how the run goes
                // on stderr, a line a second when that is not a terminal, so stdout
                // stays httperf's report alone.
                lines: true,
                ..Default::default()
            },
        )?;
        let after = stampede_engine::process::self_cpu();
        h.info.cpu = Some((after.user - before.user, after.system - before.system));
        Ok(run)
    }

    fn report(_a: &HttperfArgs, run: &mut Run, h: &mut HttperfRun) -> Result<(), Exit> {
        common::out(&httperf_report(&run.result, &h.info));
        if let Some((n, asked)) = h.short_log {
            eprintln!(
                "stampede httperf: --wlog n: the log's {n} URIs were used up before the {asked} calls asked for; the run ended there, as httperf's does"
            );
        }
        Ok(())
    }
}
