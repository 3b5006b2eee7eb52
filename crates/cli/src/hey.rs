//! `stampede hey`'s run and report: hey's summary, histogram, distribution, details and
//! statuses, or with `-o csv` one line per answered request; its flags are
//! [`stampede_flags::hey`]'s.

use stampede_engine::{LoadSpec, Run};
use stampede_report::{hey_csv, hey_report};

use crate::common::{self, Exit, ProgressOptions};
use crate::contract::{self, Tool};
use stampede_flags::hey::*;

pub fn main(args: &[String]) -> Result<(), Exit> {
    contract::run::<Hey>(args)
}

impl Tool for Hey {
    type State = Self::Info;

    fn execute(_a: &HeyArgs, spec: LoadSpec, _info: &mut ()) -> Result<Run, Exit> {
        common::execute(spec, ProgressOptions::default())
    }

    fn report(a: &HeyArgs, run: &mut Run, _info: &mut ()) -> Result<(), Exit> {
        match a.output.as_deref() {
            Some(_) => common::out(&hey_csv(run.requests.as_deref().unwrap_or_default())),
            None => common::out(&hey_report(&run.result)),
        }
        Ok(())
    }
}
