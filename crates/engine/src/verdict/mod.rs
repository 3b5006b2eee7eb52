//! What a run's figures mean: which side limited it (the client, the server, the
//! network), whether its assertions hold, and the capacity search's steps and answer.

pub mod assert;
pub mod capacity;
pub mod limit;
