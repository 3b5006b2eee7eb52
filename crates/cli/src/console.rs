//! The process's console: exit codes and the error that carries one, standard output
//! written without panicking on a closed pipe, and the Ctrl-C / SIGTERM state a run
//! polls. Below everything else in the
//! command line (the live view and the commands use it; it uses none of them).

use std::sync::atomic::{AtomicBool, Ordering};

pub use stampede_flags::{EXIT_FAIL, EXIT_USAGE};

/// An error that carries its exit code.
#[derive(Debug)]
pub struct Exit {
    pub code: i32,
    pub message: String,
}

impl Exit {
    pub fn usage(message: impl std::fmt::Display) -> Exit {
        Exit {
            code: EXIT_USAGE,
            message: message.to_string(),
        }
    }
    pub fn fail(message: impl std::fmt::Display) -> Exit {
        Exit {
            code: EXIT_FAIL,
            message: message.to_string(),
        }
    }
}

impl From<stampede_flags::FlagError> for Exit {
    fn from(e: stampede_flags::FlagError) -> Exit {
        Exit {
            code: e.code,
            message: e.message,
        }
    }
}

impl From<stampede_grpc::GrpcError> for Exit {
    fn from(e: stampede_grpc::GrpcError) -> Exit {
        match e.usage {
            true => Exit::usage(e.message),
            false => Exit::fail(e.message),
        }
    }
}

impl From<stampede_metrics::MetricsError> for Exit {
    fn from(e: stampede_metrics::MetricsError) -> Exit {
        use stampede_metrics::MetricsError as E;
        match e {
            E::Url { .. } => Exit::usage(format!("--out {e}")),
            E::Thread(_) => Exit::fail(format!("--out: {e}")),
            E::Listen { .. } => Exit::usage(e),
            E::Start { .. } => Exit::fail(e),
        }
    }
}

impl From<stampede_lab::fanout::FanoutError> for Exit {
    fn from(e: stampede_lab::fanout::FanoutError) -> Exit {
        match e.usage {
            true => Exit::usage(e.message),
            false => Exit::fail(e.message),
        }
    }
}

impl From<stampede_inputs::InputError> for Exit {
    fn from(e: stampede_inputs::InputError) -> Exit {
        Exit::usage(e)
    }
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    if INTERRUPTED.swap(true, Ordering::SeqCst) {
        // Second Ctrl-C: give up at once.
        // SAFETY: _exit is async-signal-safe and takes no pointers.
        unsafe { libc::_exit(130) };
    }
}

/// Installs the Ctrl-C handler: the first press stops the run and reports what was
/// measured, the second exits at once.
pub fn install_sigint() {
    // SAFETY: the handler only touches an atomic and calls the async-signal-safe _exit.
    unsafe {
        libc::signal(
            libc::SIGINT,
            on_sigint as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
        libc::signal(
            libc::SIGTERM,
            on_sigint as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
    }
}

/// Whether SIGINT or SIGTERM arrived.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// Set when standard output carries the result as JSON (`--json -`): reports then go
/// to standard error, so that what a pipe (ssh, a pod's log) reads is the JSON alone.
static REPORT_TO_STDERR: AtomicBool = AtomicBool::new(false);

/// From now on [`out`] writes to standard error; [`out_data`] keeps standard output.
pub fn reports_to_stderr() {
    REPORT_TO_STDERR.store(true, Ordering::Relaxed);
}

/// Writes a report to standard output (standard error after [`reports_to_stderr`]);
/// a closed pipe (`stampede … | head`) ends the program quietly instead of
/// panicking. SIGPIPE stays ignored so that sockets report EPIPE.
pub fn out(s: &str) {
    if REPORT_TO_STDERR.load(Ordering::Relaxed) {
        use std::io::Write;
        let _ = std::io::stderr().lock().write_all(s.as_bytes());
        return;
    }
    out_data(s);
}

/// Writes data (a result as JSON) to standard output, whatever [`out`] does.
pub fn out_data(s: &str) {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_all(s.as_bytes()).and_then(|_| o.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("stampede: could not write to standard output: {e}");
        std::process::exit(EXIT_FAIL);
    }
}
