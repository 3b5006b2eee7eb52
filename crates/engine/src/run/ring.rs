//! Which kernel interface carries a run's connections: `--io auto|epoll|io_uring`
//! and `STAMPEDE_IO` weighed against what the run's transport can use and what this
//! machine's kernel allows (probed once a process; see [`stampede_ring`]).

/// Whether a run's connections go on io_uring, and why not when `auto` chose epoll;
/// an error (naming the reason) when io_uring was asked for and cannot carry the run.
pub(crate) fn choose(spec: &crate::spec::LoadSpec) -> Result<(bool, Option<String>), String> {
    let transport = if spec.tls.is_some() {
        Some("TLS connections are carried by epoll")
    } else if spec.load.http3.is_some() {
        Some("HTTP/3's UDP sockets are carried by epoll")
    } else {
        None
    };
    spec.load.socket.io.decide(transport)
}
