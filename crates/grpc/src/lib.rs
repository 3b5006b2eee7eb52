//! gRPC calls for a run, without generated code: the schema from `.proto` files
//! compiled at run time, from a protoset, or asked of the server's reflection service
//! ([`reflect`]); the method found by its full name; the request messages built from
//! JSON once, before the run ([`calls`]); or, with ghz's call data templates, each
//! call's made as it is sent ([`calldata`]).
//!
//! Everything here is checked before any load and says what is wrong in the terms the
//! command line uses (the flag, the file and line, the field); [`GrpcError`] tells a
//! wrong input (usage) from a failure to reach or read what was named.

pub mod calldata;
pub mod calls;
pub mod reflect;

/// What went wrong, and whether it was the input's fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct GrpcError {
    /// The input was wrong (a flag, a file, the data): the command's usage.
    pub usage: bool,
    /// What went wrong, naming the flag, file or field.
    pub message: String,
}

impl GrpcError {
    /// The input was wrong.
    pub fn usage(message: impl std::fmt::Display) -> GrpcError {
        GrpcError {
            usage: true,
            message: message.to_string(),
        }
    }

    /// Something named could not be reached or read.
    pub fn fail(message: impl std::fmt::Display) -> GrpcError {
        GrpcError {
            usage: false,
            message: message.to_string(),
        }
    }
}
