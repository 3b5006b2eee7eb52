//! The command lines stampede speaks besides its own: ab's, wrk's, httperf's, h2load's,
//! oha's, hey's, vegeta's, ghz's, `vllm bench serve`'s, `aiperf profile`'s and GuideLLM's flags, each parsed with its
//! tool's rules ([`dialect::Dialect`]: refused flags named with what to use instead,
//! inert ones noted, getopt's prefixes, Go's one-dash long options) and translated into
//! a stampede run ([`stampede_engine::LoadSpec`]) by a [`CommandLine`]: first what
//! the flags point at is read (the target resolved, files read), then a pure
//! translation that resolves no name and reads no file, so that each flag's meaning is
//! tested here without a network. Running the spec and printing the tool's report are
//! the binary's.

pub mod ab;
pub mod aiperf;
pub mod args;
pub mod dialect;
mod error;
pub mod ghz;
pub mod guidellm;
pub mod h2load;
pub mod hey;
pub mod httperf;
pub mod oha;
pub mod tls;
pub mod vegeta;
pub mod vllm;
pub mod wrk;

pub use error::{BadValue, FlagError, EXIT_FAIL, EXIT_USAGE};

use stampede_engine::LoadSpec;

/// One dialect's command line, from its words to the run they ask for.
pub trait CommandLine {
    /// The dialect's arguments, as clap parses them.
    type Args: clap::CommandFactory + clap::FromArgMatches;
    /// What the flags point at, read before translating: the resolved target, files.
    type Inputs;
    /// What the report needs besides the result, carried from the translation
    /// through the run to the report.
    type Info;

    /// The dialect's command line: its refusals and inert flags.
    const DIALECT: &'static dialect::Dialect;

    /// Where the result's JSON goes (`--json`).
    fn result_file(a: &Self::Args) -> &args::ResultFile;

    /// The share of a run this process takes (`--segment`, `--start-at`).
    fn segments(a: &Self::Args) -> &args::SegmentArgs;

    /// Resolves the target and reads the files the flags name.
    fn inputs(a: &Self::Args) -> Result<Self::Inputs, FlagError>;

    /// The run the flags ask for. Pure: it resolves no name and reads no file.
    fn translate(a: &Self::Args, inputs: Self::Inputs)
        -> Result<(LoadSpec, Self::Info), FlagError>;
}
