//! The lab: plans, target processes, verification, runner, statistics and the store,
//! and runs fanned out over machines (over ssh, or as a Kubernetes Job).

pub mod environment;
pub mod fanout;
pub mod fleet;
pub mod guard;
pub mod history;
pub mod plan;
pub mod preflight;
pub mod process;
pub mod record;
pub mod remote;
#[cfg(feature = "store")]
pub mod runner;
pub mod stats;
#[cfg(feature = "store")]
pub mod store;
pub mod summary;
#[cfg(test)]
mod testing;
pub mod verify;
