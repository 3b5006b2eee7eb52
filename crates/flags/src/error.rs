//! How a command line fails: the exit code the process ends with (bad usage, a run
//! that could not be made, or a help text asked for) and what to say.

/// Exit code when the run could not be carried out.
pub const EXIT_FAIL: i32 = 1;
/// Exit code for bad usage (a flag or value is wrong).
pub const EXIT_USAGE: i32 = 2;

/// A command line that ends here: its exit code and its message (for code 0, the help
/// text asked for, which goes to standard output).
#[derive(Debug)]
pub struct FlagError {
    pub code: i32,
    pub message: String,
}

impl FlagError {
    /// A flag or value is wrong: exit code 2.
    pub fn usage(message: impl std::fmt::Display) -> FlagError {
        FlagError {
            code: EXIT_USAGE,
            message: message.to_string(),
        }
    }

    /// The flags are fine but what they point at is not (a name that does not
    /// resolve, a file that cannot be read as asked): exit code 1.
    pub fn fail(message: impl std::fmt::Display) -> FlagError {
        FlagError {
            code: EXIT_FAIL,
            message: message.to_string(),
        }
    }

    /// Help was asked for: `text` is printed on standard output, exit code 0.
    pub fn help(text: impl std::fmt::Display) -> FlagError {
        FlagError {
            code: 0,
            message: text.to_string(),
        }
    }
}

impl std::fmt::Display for FlagError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for FlagError {}

impl From<stampede_grpc::GrpcError> for FlagError {
    fn from(e: stampede_grpc::GrpcError) -> FlagError {
        match e.usage {
            true => FlagError::usage(e.message),
            false => FlagError::fail(e.message),
        }
    }
}

impl From<stampede_inputs::InputError> for FlagError {
    fn from(e: stampede_inputs::InputError) -> FlagError {
        FlagError::usage(e)
    }
}

/// A flag's value that cannot be read: what is wrong with it and the forms it takes
/// (clap names the flag before it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadValue(pub String);

impl std::fmt::Display for BadValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadValue {}

impl From<String> for BadValue {
    fn from(s: String) -> BadValue {
        BadValue(s)
    }
}

impl From<&str> for BadValue {
    fn from(s: &str) -> BadValue {
        BadValue(s.to_string())
    }
}
