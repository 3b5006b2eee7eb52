//! What a bench records, as plain data: the measured runs, the verification of each
//! target and scenario, the assertions checked, and what became of each target.
//!
//! The runner produces these, the store keeps them, the summary and the reports read
//! them; none of those depends on another to share them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use stampede_engine::{RunResult, SyntaxError};

/// One measured run, as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRecord {
    /// Target name.
    pub target: String,
    /// Scenario name.
    pub scenario: String,
    /// 1-based repetition.
    pub repetition: u32,
    /// The engine's result.
    pub result: RunResult,
    /// Target CPU time in user mode during the run (its whole process tree), seconds.
    pub target_cpu_user_s: Option<f64>,
    /// Target CPU time in kernel mode, seconds.
    pub target_cpu_sys_s: Option<f64>,
    /// Target peak resident memory (process tree), KiB.
    pub target_peak_rss_kb: Option<u64>,
    /// The load generator's CPU time, seconds.
    pub client_cpu_s: Option<f64>,
}

/// A record stands for its run where only the run is read (the capacity search judges
/// each step's record by its result).
impl std::borrow::Borrow<stampede_engine::RunResult> for RunRecord {
    fn borrow(&self) -> &stampede_engine::RunResult {
        &self.result
    }
}

/// The verification of one target on one scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verification {
    /// Target name.
    pub target: String,
    /// Scenario name.
    pub scenario: String,
    /// Whether it passed, and if not whether the scenario was measured.
    pub outcome: Outcome,
    /// One line per failed check.
    pub failures: Vec<String>,
}

/// How verifying a target on a scenario came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Every check passed.
    Pass,
    /// A check failed and the scenario is measured anyway (`on_failure = "warn"`).
    Warn,
    /// A check failed and the scenario is not measured on this target.
    Fail,
}

impl Outcome {
    /// The word used in the store, the JSON and the reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Warn => "warn",
            Outcome::Fail => "fail",
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Outcome {
    type Err = SyntaxError;
    fn from_str(s: &str) -> Result<Outcome, SyntaxError> {
        match s {
            "pass" => Ok(Outcome::Pass),
            "warn" => Ok(Outcome::Warn),
            "fail" => Ok(Outcome::Fail),
            _ => Err(SyntaxError(format!(
                "unknown verification outcome {s:?} (pass, warn or fail)"
            ))),
        }
    }
}

/// An assertion checked on one measured run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssertionOutcome {
    /// Target name.
    pub target: String,
    /// Scenario name.
    pub scenario: String,
    /// 1-based repetition.
    pub repetition: u32,
    /// The outcome.
    pub checked: stampede_engine::assert::Checked,
}

/// What became of a target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetStatus {
    /// Target name.
    pub name: String,
    /// True when every scenario it was asked for was measured or skipped by verification.
    pub ok: bool,
    /// `stopped: exited 0`, `failed to start: …`, `died during backend run 2: …`.
    pub status: String,
    /// Version command output.
    pub version: Option<String>,
    /// The last lines the target wrote to stderr, when it failed.
    pub stderr_tail: Option<String>,
}

/// A note on one target × scenario of a bench (why automatic repetitions stopped).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunNote {
    /// Target name.
    pub target: String,
    /// Scenario name.
    pub scenario: String,
    /// The note.
    pub note: String,
}
