//! `stampede ghz`'s run and report: ghz's summary, JSON, CSV, HTML, InfluxDB and
//! Prometheus outputs; its flags are [`stampede_flags::ghz`]'s.

use stampede_engine::{LoadSpec, Run};
use stampede_report::ghz::{
    ghz_csv, ghz_influx_details, ghz_influx_summary, ghz_json, ghz_summary,
};

use crate::common::{self, Exit, ProgressOptions};
use crate::contract::{self, Tool};
use stampede_flags::ghz::*;

pub fn main(args: &[String]) -> Result<(), Exit> {
    if args.iter().any(|a| a == "-v" || a == "--version") {
        common::out(&format!("stampede ghz {}\n", env!("CARGO_PKG_VERSION")));
        return Ok(());
    }
    contract::run::<Ghz>(args)
}

impl Tool for Ghz {
    type State = Self::Info;

    fn execute(_a: &GhzArgs, spec: LoadSpec, _info: &mut Info) -> Result<Run, Exit> {
        // Over TLS, the server is asked once whether it speaks HTTP/2, before any load.
        stampede_grpc::reflect::check_h2(
            &spec.target,
            spec.tls.as_ref(),
            spec.load.connect_timeout,
        )?;
        let made = spec.calls.clone();
        let run = common::execute(spec, ProgressOptions::default())?;
        if let Some(why) = made.and_then(|m| m.0.failure()) {
            return Err(Exit::fail(format!("the run stopped: {why}")));
        }
        Ok(run)
    }

    fn report(a: &GhzArgs, run: &mut Run, info: &mut Info) -> Result<(), Exit> {
        let g = &mut info.ghz;
        if run.result.interrupted {
            g.end_reason = "cancel";
        }
        let records = run.requests.as_deref().unwrap_or_default();
        let text = match a.format.as_str() {
            "csv" => ghz_csv(records),
            "json" => ghz_json(&run.result, records, g).to_string(),
            "pretty" => {
                let v = ghz_json(&run.result, records, g);
                serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
            }
            "influx-summary" => ghz_influx_summary(&run.result, g),
            "influx-details" => ghz_influx_details(records, g),
            _ => ghz_summary(&run.result, g),
        };
        match &a.output {
            Some(path) => std::fs::write(path, text)
                .map_err(|e| Exit::fail(format!("-o {path}: cannot write the report: {e}"))),
            None => {
                common::out(&text);
                Ok(())
            }
        }
    }
}
