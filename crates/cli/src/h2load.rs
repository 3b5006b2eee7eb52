//! `stampede h2load`'s run and report: h2load's preamble, report and `--log-file`;
//! its flags are [`stampede_flags::h2load`]'s.

use stampede_engine::{LoadSpec, Request, Run};
use stampede_report::{h2load_log, h2load_preamble, h2load_report, H2loadInfo};

use crate::common::{self, Exit, ProgressOptions};
use crate::contract::{self, Tool};
use stampede_flags::h2load::*;

pub fn main(args: &[String]) -> Result<(), Exit> {
    contract::run::<H2load>(args)
}

/// How h2load's runs show their progress: the latency deciles as they go.
fn progress() -> ProgressOptions {
    ProgressOptions {
        quiet: false,
        deciles: true,
        ..Default::default()
    }
}

impl Tool for H2load {
    type State = Self::Info;

    fn execute(a: &H2loadArgs, spec: LoadSpec, info: &mut H2loadInfo) -> Result<Run, Exit> {
        if a.verbose {
            let reqs: Vec<&Request> = if !spec.load.script.is_empty() {
                spec.load.script.iter().map(|s| &s.request).collect()
            } else if spec.load.variety.is_empty() {
                vec![&spec.load.request]
            } else {
                spec.load.variety.iter().collect()
            };
            for r in reqs {
                eprintln!("{}", String::from_utf8_lossy(&r.bytes).trim_end());
            }
        }
        let http2 = spec.load.protocol.http2;
        common::out(&h2load_preamble(info));
        if let Some(w) = a.warm_up {
            let mut warm = spec.clone();
            warm.load.duration = Some(w);
            for t in 0..info.threads {
                common::out(&format!("Warm-up started for thread #{t}.\n"));
            }
            common::execute(
                warm,
                ProgressOptions {
                    quiet: true,
                    ..progress()
                },
            )?;
            for t in 0..info.threads {
                common::out(&format!(
                    "Warm-up phase is over for thread #{t}.\nMain benchmark duration is started for thread #{t}.\n"
                ));
            }
        }
        let run = common::execute(spec, progress())?;
        // ALPN may have chosen HTTP/1.1.
        if let (Some(t), true) = (&run.result.protocols.tls, http2) {
            if let Some(alpn) = &t.alpn {
                info.protocol = alpn.clone();
            }
        }
        Ok(run)
    }

    fn report(a: &H2loadArgs, run: &mut Run, info: &mut H2loadInfo) -> Result<(), Exit> {
        common::out(&h2load_report(&run.result, info));
        if let (Some(path), Some(records)) = (&a.log_file, run.requests.as_deref()) {
            common::write_file(path, &h2load_log(records))?;
        }
        Ok(())
    }
}
