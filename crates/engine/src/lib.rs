//! stampede's load-generation engine, usable from Rust without the command line.
//!
//! Data goes one way: a [`LoadSpec`], checked into a [`Plan`], goes in, a [`RunResult`]
//! comes out.
//! [`run`] starts one worker thread per requested thread, each with its own event loop
//! and connections; every request records its latency into that worker's HdrHistograms,
//! merged by addition at the end, so memory does not grow with the number of requests.
//! Live counters and the stop switch are in [`Control`].
//!
//! The crate is laid out by stage, each a folder: `spec` (the load as given, checked
//! and saved: targets, requests, arrivals, injection profiles), `proto` (HTTP/1.1 and
//! HTTP/2 as sans-IO values a connection holds), `run` (the orchestrator, the worker
//! threads and their event loop, the schedule, scripts' hooks), `measure` (the
//! recorder, the result and exact merges) and `verdict` (which side limited a run,
//! assertions, the capacity search). This file is the public face: the modules and
//! types callers use, re-exported from wherever they live.
//!
//! ```no_run
//! use std::sync::Arc;
//! use stampede_engine::{run, Control, LoadSpec, RequestBuilder, Target};
//!
//! let target = Target::parse("http://127.0.0.1:8080/pong").unwrap();
//! let request = RequestBuilder::native(&target, "GET", true).build().unwrap();
//! let mut spec = LoadSpec::new(target, request);
//! spec.load.connections = 64;
//! spec.load.threads = 2;
//! spec.load.requests = Some(100_000);
//! let plan = spec.plan().unwrap();
//! let out = run(&plan, Arc::new(Control::default())).unwrap();
//! println!("{:.0} req/s, p99 {} µs", out.result.throughput_rps,
//!          out.result.latency.at(99.0).unwrap());
//! ```

mod form;
mod measure;
mod proto;
mod run;
mod spec;
mod verdict;

pub mod error;
pub mod math;

pub use measure::{merge, result};
pub use proto::{h1, h2, h3, ws};
pub use run::{hooks, made, process};
pub use spec::tokenizer::TokenCounter;
pub use spec::{
    arrivals, inject, input, net, openai, portable, request, servers, target, tokenizer,
};
pub use verdict::{assert, capacity, limit};

pub use error::{
    ErrorKind, HistError, RequestsError, RunError, SavedSpecError, SocketError, SpecError,
    SyntaxError, TranslateError,
};
pub use hooks::{Flow, Hooks, Reply, ThreadHooks, ThreadHooksSource};
pub use measure::raw::{writer as raw_writer, RawFormat, RawOut, RawWriter};
pub use measure::recorder::{RequestRecord, MAX_RECORDS};
pub use measure::targets::{target_name, LiveTarget, TargetStats, MAX_TARGETS};
pub use proto::h1::parse::Fields;
pub use proto::MAX_KEPT_BODY;
pub use request::{AbRequest, Request, RequestBuilder, Version};
pub use result::{
    decode_checked, percentile_linear, value_at_percentile, DeliveryStats, FleetMissing, FleetStop,
    FleetSummary, Hist, Interval, LatencyStats, Origin, RunResult, StreamHistograms, StreamStats,
    TlsStats,
};
pub use run::control::Control;
pub use run::live::{Live, LiveSecond};
pub use run::schedule::{Budget, Closed, Next, Schedule};
pub use run::{probe, run, run_parts, Run};
pub use spec::plan::{Plan, Pool, PoolRequests, SessionSteps, SessionWork, Workload};
pub use spec::segment::Segment;
pub use spec::servers::{Part, Server};
pub use spec::{
    parse_duration, Load, LoadProtocol, LoadSpec, LoadStreams, Session, Shape, Step, Walk,
    DEFAULT_HORIZON, MAX_HORIZON, MAX_PIPELINE, MAX_REDIRECTS, MAX_SPEC_DURATION,
};
pub use spec::{Slo, StreamMode, StreamSend, WsLoad};
pub use target::{Address, Target};
