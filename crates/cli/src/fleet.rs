//! A segment's side of a fleet run (`--fleet`, which `stampede ssh` gives each
//! segment, or `--fleet-connect` to a `stampede collect`): the start barrier — say
//! ready once the run is planned, wait for the coordinator's shared start, and start
//! nothing when it comes too late — then each second's figures sent as frames ahead of
//! the result, and a `stop` (or the coordinator going away) ending the run early; a
//! run that fails says why before it ends. The frames and orders are
//! [`stampede_lab::fleet`]'s; over a socket, the connection, once joined, takes the
//! place of standard input and output, so that both channels carry the same bytes.

use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use stampede_engine::{LiveSecond, LoadSpec};
use stampede_flags::args::SegmentArgs;
use stampede_lab::fleet::{Frame, Hello, Order, RunLabel, SegmentSecond, START_TOLERANCE_S};

use crate::common::Exit;

/// This process is a fleet's segment.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// The coordinator asked for a stop, or went away.
static STOP: AtomicBool = AtomicBool::new(false);

/// How long a segment waits for the start after saying ready.
const WAIT_FOR_START: Duration = Duration::from_secs(600);

/// Most bytes of one order line.
const MAX_ORDER: u64 = 256;

/// How long a segment keeps trying to reach its collector.
const CONNECT_WITHIN: Duration = Duration::from_secs(30);

/// Where a segment finds its run's token for `--fleet-connect`.
pub const TOKEN_VAR: &str = "STAMPEDE_FLEET_TOKEN";

/// Whether this process is a fleet's segment.
pub fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// Whether the coordinator has stopped the fleet.
pub fn stop_asked() -> bool {
    STOP.load(Ordering::Relaxed)
}

fn send(f: &Frame) {
    let mut out = std::io::stdout().lock();
    // The coordinator gone: its stop is seen on standard input.
    let _ = out.write_all(f.line().as_bytes());
    let _ = out.flush();
}

/// Sends one second of the run.
pub fn second(s: &LiveSecond) {
    send(&Frame::Second(SegmentSecond {
        interval: s.interval.clone(),
        statuses: s.statuses.clone(),
        errors: (s.errors.iter())
            .filter(|(_, n)| *n > 0)
            .map(|(k, n)| (k.name().to_string(), *n))
            .collect(),
    }));
}

/// Says why the run ends without a result (a fleet's segment only).
pub fn failed(why: &str) {
    if active() {
        send(&Frame::Failed {
            why: why.to_string(),
        });
    }
}

/// Joins the collector at `addr` as segment `segment`, then puts the connection in
/// the place of standard input and output.
fn join(addr: &str, segment: &str) -> Result<(), Exit> {
    use std::net::{TcpStream, ToSocketAddrs};
    use std::os::fd::AsRawFd;
    let flag = |e: String| Exit::fail(format!("--fleet-connect {addr}: {e}"));
    let token = std::env::var(TOKEN_VAR).map_err(|_| {
        flag(format!(
            "the run's token is read from ${TOKEN_VAR}, which is not set"
        ))
    })?;
    let given = std::time::Instant::now();
    let conn = loop {
        // Resolved each time: a pod may start before its collector's name does.
        let tried = addr
            .to_socket_addrs()
            .map_err(|e| e.to_string())
            .and_then(|mut a| a.next().ok_or_else(|| "no address".to_string()))
            .and_then(|a| {
                TcpStream::connect_timeout(&a, Duration::from_secs(5)).map_err(|e| e.to_string())
            });
        match tried {
            Ok(c) => break c,
            Err(e) if given.elapsed() >= CONNECT_WITHIN => {
                return Err(flag(format!(
                    "not reached within {} s: {e}",
                    CONNECT_WITHIN.as_secs()
                )))
            }
            Err(_) => std::thread::sleep(Duration::from_millis(250)),
        }
    };
    let _ = conn.set_nodelay(true);
    let hello = Hello {
        token,
        segment: segment.to_string(),
    };
    (&conn)
        .write_all(hello.line().as_bytes())
        .map_err(|e| flag(e.to_string()))?;
    std::io::stdout().flush().map_err(|e| flag(e.to_string()))?;
    for fd in [0, 1] {
        // SAFETY: dup2 on a socket this process owns and a standard descriptor; the
        // socket stays open through `conn` until the copies are made.
        if unsafe { libc::dup2(conn.as_raw_fd(), fd) } < 0 {
            return Err(flag(std::io::Error::last_os_error().to_string()));
        }
    }
    Ok(())
}

/// With `--fleet` or `--fleet-connect`: joins, says ready, waits for the shared
/// start and sets it as the spec's; later orders (a stop) are read on from then on. A
/// start that comes more than [`START_TOLERANCE_S`] late is refused: nothing is sent.
pub fn barrier(seg: &SegmentArgs, spec: &mut LoadSpec) -> Result<(), Exit> {
    if !seg.in_fleet() {
        return Ok(());
    }
    let segment = format!("{}/{}", spec.segment.k(), spec.segment.n());
    if let Some(addr) = &seg.fleet_connect {
        join(addr, &segment)?;
    }
    ACTIVE.store(true, Ordering::Relaxed);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        loop {
            let mut line = String::new();
            match std::io::Read::take(&mut stdin, MAX_ORDER).read_line(&mut line) {
                Ok(0) | Err(_) => {
                    STOP.store(true, Ordering::Relaxed);
                    return;
                }
                Ok(_) => match Order::parse(&line) {
                    Some(o) => {
                        if matches!(o, Order::Stop | Order::Refused(_)) {
                            STOP.store(true, Ordering::Relaxed);
                        }
                        // Once the run has started nobody waits on these.
                        let _ = tx.send(o);
                    }
                    None => eprintln!("stampede: --fleet: not an order: {:?}", line.trim()),
                },
            }
        }
    });
    let info = stampede_metrics::RunInfo::of(spec);
    send(&Frame::Ready {
        segment,
        run: Some(RunLabel {
            method: info.method,
            url: info.url,
            host: info.server_address,
            port: info.server_port,
            scheme: info.scheme,
            rate: info.offered_rate,
        }),
    });
    let at = match rx.recv_timeout(WAIT_FOR_START) {
        Ok(Order::Start(at)) => at,
        Ok(Order::Refused(why)) => {
            // Nobody is listening for more.
            ACTIVE.store(false, Ordering::Relaxed);
            return Err(Exit::fail(format!(
                "the collector refused this process: {why}"
            )));
        }
        Ok(Order::Stop) => return Err(Exit::fail("--fleet: stopped before the start")),
        Err(_) if stop_asked() => {
            return Err(Exit::fail("--fleet: stopped before the start"));
        }
        Err(_) => {
            return Err(Exit::fail(format!(
                "--fleet: no start within {} s of being ready",
                WAIT_FOR_START.as_secs()
            )))
        }
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    if now > at + START_TOLERANCE_S {
        let late_s = now - at;
        send(&Frame::Missed { late_s });
        return Err(Exit::fail(format!(
            "--fleet: the start came {late_s:.3} s late (more than {START_TOLERANCE_S} s); started nothing, so that no backlog is fired"
        )));
    }
    spec.start_at = Some(UNIX_EPOCH + Duration::from_secs_f64(at.max(0.0)));
    Ok(())
}
