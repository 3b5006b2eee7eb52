//! `--io auto|epoll|io_uring`: the choice a run or a server makes, read from its flag
//! or from `STAMPEDE_IO`, and weighed against what its connections can use and what
//! this machine's kernel allows (probed once a process).

use crate::probe;

/// How a program's connections talk to the kernel (`--io`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IoBackend {
    /// io_uring where the kernel offers it and the connections can use it (plain TCP
    /// and Unix sockets), epoll otherwise; `STAMPEDE_IO` may name either instead.
    #[default]
    Auto,
    /// Readiness with epoll: a system call per send and per receive.
    Epoll,
    /// Completions with io_uring: a wake-up's sends and receives in one system call;
    /// refused with the reason where the kernel does not allow it.
    IoUring,
}

impl IoBackend {
    /// The accepted spellings, for errors.
    pub const FORMS: &'static str = "auto, epoll or io_uring";

    /// Whether this is `auto` (the default, left out of saved specs).
    pub fn is_auto(&self) -> bool {
        *self == IoBackend::Auto
    }

    /// Its name, as `--io` takes it and results record it.
    pub fn name(self) -> &'static str {
        match self {
            IoBackend::Auto => "auto",
            IoBackend::Epoll => "epoll",
            IoBackend::IoUring => "io_uring",
        }
    }

    /// What `auto` means here: `STAMPEDE_IO`'s choice when it names one, else `self`
    /// (an error names the variable and the accepted forms).
    pub fn or_env(self) -> Result<IoBackend, RingError> {
        if self != IoBackend::Auto {
            return Ok(self);
        }
        match std::env::var("STAMPEDE_IO") {
            Ok(v) => v.parse().map_err(|_| RingError::Unknown {
                value: v,
                env: true,
            }),
            Err(_) => Ok(self),
        }
    }

    /// Whether io_uring carries the connections, given that they can use it when
    /// `usable` is `None` (else its reason why not): `Ok((true, None))` for io_uring,
    /// `Ok((false, why))` for epoll, with `auto`'s reason for choosing it; an error
    /// when io_uring was asked for and cannot be had. The machine is probed once a
    /// process.
    pub fn decide(self, usable: Option<&str>) -> Result<(bool, Option<String>), RingError> {
        static PROBE: std::sync::OnceLock<Result<(), RingError>> = std::sync::OnceLock::new();
        let asked = self.or_env()?;
        if asked == IoBackend::Epoll {
            return Ok((false, None));
        }
        let why = match usable {
            Some(t) => Err(RingError::Refused(t.to_string())),
            None => PROBE.get_or_init(probe).clone(),
        };
        match (why, asked) {
            (Ok(()), _) => Ok((true, None)),
            (Err(why), IoBackend::IoUring) => Err(RingError::Refused(format!(
                "io_uring: {why}; use --io auto or --io epoll"
            ))),
            (Err(why), _) => Ok((false, Some(why.to_string()))),
        }
    }
}

impl std::str::FromStr for IoBackend {
    type Err = RingError;
    fn from_str(s: &str) -> Result<IoBackend, RingError> {
        match s {
            "auto" => Ok(IoBackend::Auto),
            "epoll" => Ok(IoBackend::Epoll),
            "io_uring" | "io-uring" | "uring" => Ok(IoBackend::IoUring),
            _ => Err(RingError::Unknown {
                value: s.to_string(),
                env: false,
            }),
        }
    }
}

/// Why io_uring cannot carry a program's connections, or why a value for `--io` is
/// refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RingError {
    /// A value `--io` does not take (`env`: given by `STAMPEDE_IO`).
    Unknown { value: String, env: bool },
    /// io_uring cannot be had here, or cannot carry these connections: why.
    Refused(String),
}

impl std::fmt::Display for RingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RingError::Unknown { value, env } => {
                let by = if *env { "STAMPEDE_IO=" } else { "" };
                write!(f, "{by}{value:?}: expected {}", IoBackend::FORMS)
            }
            RingError::Refused(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for RingError {}

impl From<String> for RingError {
    fn from(why: String) -> RingError {
        RingError::Refused(why)
    }
}
