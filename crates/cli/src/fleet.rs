//! A segment's side of a fleet run (`--fleet`, which `stampede ssh` gives each
//! segment): the start barrier — say ready once the run is planned, wait for the
//! coordinator's shared start, and start nothing when it comes too late — then each
//! second's figures sent as frames ahead of the result, and a `stop` (or the
//! coordinator going away) ending the run early. The frames and orders are
//! [`stampede_lab::fleet`]'s.

use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use stampede_engine::{Interval, LoadSpec};
use stampede_lab::fleet::{Frame, Order, START_TOLERANCE_S};

use crate::common::Exit;

/// This process is a fleet's segment.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// The coordinator asked for a stop, or went away.
static STOP: AtomicBool = AtomicBool::new(false);

/// How long a segment waits for the start after saying ready.
const WAIT_FOR_START: Duration = Duration::from_secs(600);

/// Most bytes of one order line.
const MAX_ORDER: u64 = 256;

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
pub fn second(iv: &Interval) {
    send(&Frame::Second(iv.clone()));
}

/// With `--fleet`: says ready, waits for the shared start and sets it as the spec's;
/// later orders (a stop) are read on from then on. A start that comes more than
/// [`START_TOLERANCE_S`] late is refused: nothing is sent.
pub fn barrier(fleet: bool, spec: &mut LoadSpec) -> Result<(), Exit> {
    if !fleet {
        return Ok(());
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
                        if o == Order::Stop {
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
    send(&Frame::Ready {
        segment: format!("{}/{}", spec.segment.k(), spec.segment.n()),
    });
    let at = match rx.recv_timeout(WAIT_FOR_START) {
        Ok(Order::Start(at)) => at,
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
