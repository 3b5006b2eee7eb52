//! The lab: plans, target processes, verification, runner, statistics and the store.

pub mod plan;
pub mod stats;
