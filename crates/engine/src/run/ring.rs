//! Which kernel interface carries a run's connections: `--io auto|epoll|io_uring`
//! and `STAMPEDE_IO` weighed against what the run's transport can use and what this
//! machine's kernel allows (probed once a process; see [`stampede_ring`]).

use crate::spec::net::IoBackend;

/// Whether a run's connections go on io_uring, and why not when `auto` chose epoll;
/// an error (naming the reason) when io_uring was asked for and cannot carry the run.
pub(crate) fn choose(
    cfg: &crate::spec::config::Config,
) -> Result<(bool, Option<String>), stampede_ring::RingError> {
    let transport = cfg
        .protocol
        .http3()
        .is_some()
        .then_some("HTTP/3's UDP sockets are carried by epoll");
    // Where the open model naps between starts (plain TCP, no follow-ups) both
    // backends nap and time late reads by the kernel's arrival stamps, at the same CPU
    // a request; at 50,000 a second io_uring's send lag p99 came out higher in three
    // runs of five (once by five times), equal and lower in the others (bench/io.sh):
    // until it is shown no worse, auto keeps epoll there.
    let naps = matches!(
        cfg.arrivals.shape,
        crate::spec::Shape::Rate { .. } | crate::spec::Shape::Paced(_)
    ) && cfg.sends.redirects == 0
        && cfg.sends.hooks.is_none()
        && cfg.net.tls.is_none()
        && matches!(cfg.net.target.address, crate::spec::target::Address::Tcp(_));
    // A thread with one connection has nothing to batch: each request is a wait of
    // its own, and io_uring's costs more than epoll's there (bench/floor.sh at one
    // connection), where it costs less from four.
    let alone = cfg.size.connections <= cfg.size.threads.max(1);
    let auto = transport.is_none() && cfg.net.socket.io.or_env()? == IoBackend::Auto;
    if auto && naps {
        let why = "the open model naps on epoll until io_uring's send lag at high rates \
                   is shown no worse";
        return Ok((false, Some(why.into())));
    }
    if auto && alone {
        let why = "one connection a thread has nothing to batch";
        return Ok((false, Some(why.into())));
    }
    cfg.net.socket.io.decide(transport)
}
