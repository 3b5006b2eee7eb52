//! What the peers' command lines read and draw their requests from, as stampede's
//! engine takes it: httperf's session logs ([`sesslog`]), oha's random URL
//! patterns ([`randurl`]), and lists of requests ([`targets`]: vegeta's targets
//! files, a body per line, several URLs). Each is parsed within its limits before the run, and what
//! is wrong is said with its place (the file and line, or the flag and pattern).

pub mod randurl;
pub mod sesslog;
pub mod targets;

/// What is wrong with an input: where (`file:line`, a file, or a flag and its value),
/// and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{place}: {reason}")]
pub struct InputError {
    /// Where: `file:line`, a file, or a flag and its value.
    pub place: String,
    /// What is wrong there.
    pub reason: String,
}

impl InputError {
    /// At line `line` (from 1) of `file`.
    pub fn at(file: &str, line: usize, reason: impl std::fmt::Display) -> InputError {
        InputError {
            place: format!("{file}:{line}"),
            reason: reason.to_string(),
        }
    }

    /// In `place` as a whole (a file, a flag and its value).
    pub fn of(place: impl std::fmt::Display, reason: impl std::fmt::Display) -> InputError {
        InputError {
            place: place.to_string(),
            reason: reason.to_string(),
        }
    }
}
