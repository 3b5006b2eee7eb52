//! What a run measured: the per-worker recorder, the finished seconds it hands over,
//! the run's result with its histograms (and a stream's, in `stream`), and exact
//! merges of results and seconds; and the per-request records streamed out (`raw`).

pub(crate) mod figures;
pub mod fleet;
pub mod hist;
pub mod merge;
pub mod raw;
pub(crate) mod recorder;
pub mod result;
pub(crate) mod second;
pub(crate) mod secure;
pub mod server;
pub mod stream;
pub mod targets;
