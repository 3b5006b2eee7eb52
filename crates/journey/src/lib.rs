//! What a user's journey carries from one request to the next: [`template`]s over
//! the user's variables ([`vars`]) and values drawn for each use, [`feeder`]s that
//! hand each user its rows of data, [`extract`]ions that take values from an answer
//! for later requests, [`check`]s an answer must pass, and the user's [`cookies`].
//! Everything here is checked before a run (a template naming a variable nothing
//! sets, a feeder with a ragged row, a check that does not parse are refused with
//! where they are) and works without a socket or a clock, on the [`reply::Reply`]
//! the engine hands it. A [`journey::Journey`] file puts them together as steps —
//! in groups that [`walk`] loops over and [`cond`]itions skip, and in a weighted mix
//! of journeys — and [`run::JourneyRun`] walks them on the engine's HTTP/1.1
//! connections, one user a connection; [`chat`] holds multi-turn conversations with an
//! LLM chat endpoint the same way, each request carrying the history so far.

pub mod around;
pub mod artillery;
pub mod chat;
pub mod check;
pub mod cond;
pub mod cookies;
pub mod extract;
pub mod feeder;
pub mod har;
pub mod journey;
pub mod path;
pub mod reply;
pub mod run;
pub mod template;
pub mod vars;
pub mod walk;

/// Reads the file at `path` within `kind`'s ceiling (a pipe or a device that never
/// ends is read no further than it): the bytes, or why not, said without the path
/// (`noun` says what it is read as).
pub(crate) fn read_bounded(
    path: &str,
    kind: stampede_engine::input::Input,
    noun: &str,
) -> Result<Vec<u8>, Invalid> {
    use stampede_engine::input::{read, size, InputError};
    read(path, "", kind).map_err(|e| {
        Invalid(match e {
            InputError::Read { source, .. } => format!("cannot be read: {source}"),
            InputError::TooLarge { kind, .. } => format!(
                "larger than {}, the most stampede reads as {noun}",
                size(kind.limit())
            ),
            InputError::NotText { source, .. } => format!("not UTF-8: {source}"),
        })
    })
}

/// What is wrong with a piece of a journey (a path, a check, a placeholder, a
/// value), said for the user who wrote it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Invalid(pub String);

impl From<String> for Invalid {
    fn from(s: String) -> Invalid {
        Invalid(s)
    }
}

impl From<&str> for Invalid {
    fn from(s: &str) -> Invalid {
        Invalid(s.to_string())
    }
}
