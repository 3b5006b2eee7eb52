//! What the coordinator of a fleet run (`stampede ssh`, `stampede k8s --apply`) adds
//! to the merged result: the segments merged, those missing and why, and the
//! condition that stopped the fleet.

use serde::{Deserialize, Serialize};

/// What the coordinator of a fleet run says of it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FleetSummary {
    /// Segments the run was split into.
    pub segments: u32,
    /// Segments whose results are merged here.
    pub merged: u32,
    /// Segments that are not, each with its host and why.
    pub missing: Vec<FleetMissing>,
    /// The `--abort-on` condition that stopped every segment, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<FleetStop>,
    /// Frames refused (malformed, oversized, repeated or out of bounds), all segments.
    pub refused_frames: u64,
    /// Connections refused before they were a segment's (`stampede collect`: a wrong
    /// token, a segment not in the run or already taken, a malformed hello).
    #[serde(default, skip_serializing_if = "crate::form::is_zero")]
    pub refused_connections: u64,
}

/// A segment missing from a fleet's merged result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetMissing {
    /// `K/N`.
    pub segment: String,
    pub host: String,
    pub why: String,
}

/// What stopped a fleet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetStop {
    /// The condition as written.
    pub condition: String,
    /// When, seconds from the shared start (the end of the second that failed it).
    pub at_s: f64,
    /// The measured value then.
    pub actual: String,
}
