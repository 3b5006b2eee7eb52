//! `stampede ab`'s run and report: ab's report, `-e` CSV, `-g` gnuplot and `-w` HTML,
//! `-v`'s exchange lines; its flags are [`stampede_flags::ab`]'s.

use stampede_engine::{LoadSpec, Run};
use stampede_report::{ab_csv, ab_gnuplot, ab_html, ab_report, AbInfo, HtmlAttrs};

use crate::common::{self, Exit, ProgressOptions};
use crate::contract::{self, Tool};
use stampede_flags::ab::*;

use crate::watch::{self, Style};

pub fn main(args: &[String]) -> Result<(), Exit> {
    contract::run::<Ab>(args)
}

impl Tool for Ab {
    type State = Self::Info;

    fn execute(a: &AbArgs, mut spec: LoadSpec, _info: &mut AbInfo) -> Result<Run, Exit> {
        spec.hooks = watch::hooks(Style::Ab(a.verbosity));
        let requests = spec.load.requests.unwrap_or(1);
        let banner = format!(
            "This is stampede ab, version {} (ApacheBench 2.3 flags and report)",
            env!("CARGO_PKG_VERSION")
        );
        common::out(&if a.html {
            // ab's -w banner: a paragraph, and one left open for the lines that follow.
            format!("<p>\n {banner}<br>\n</p>\n<p>\n")
        } else {
            format!("{banner}\n\n")
        });
        let heartbeat = (requests > 150 && a.timelimit.is_none()).then(|| (requests / 10).max(100));
        common::out(&format!(
            "Benchmarking {} (be patient){}",
            spec.target.host,
            if heartbeat.is_some() && !a.quiet {
                "\n"
            } else {
                "..."
            }
        ));
        // ab shows its request once the benchmark has begun.
        if a.verbosity >= 2 {
            common::out(&format!(
                "INFO: {} header == \n---\n{}\n---\n",
                spec.load.request.method,
                String::from_utf8_lossy(&spec.load.request.bytes)
            ));
        }
        let run = common::execute(
            spec,
            ProgressOptions {
                quiet: a.quiet,
                heartbeat,
                ..Default::default()
            },
        )
        .inspect_err(|_| {
            // The error goes on a line of its own, not after "(be patient)...".
            if heartbeat.is_none() || a.quiet {
                common::out("\n");
            }
        })?;
        if heartbeat.is_some() && !a.quiet {
            eprintln!("Finished {} requests", run.result.requests.completed);
        } else {
            common::out("..done\n");
        }
        Ok(run)
    }

    fn report(a: &AbArgs, run: &mut Run, info: &mut AbInfo) -> Result<(), Exit> {
        let r = &run.result;
        if a.html {
            let d = HtmlAttrs::default();
            let attrs = HtmlAttrs {
                table: a.table_attrs.clone().unwrap_or(d.table),
                tr: a.tr_attrs.clone().unwrap_or(d.tr),
                td: a.td_attrs.clone().unwrap_or(d.td),
            };
            common::out(&ab_html(r, info, &attrs));
        } else {
            common::out(&ab_report(r, info));
        }
        if let Some(p) = &a.csv {
            common::write_file(p, &ab_csv(r))?;
        }
        if let (Some(p), Some(recs)) = (&a.gnuplot, run.requests.as_mut()) {
            common::write_file(p, &ab_gnuplot(recs))?;
        }
        Ok(())
    }
}
