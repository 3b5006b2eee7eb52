//! A fleet channel over TCP, for segments that something other than the coordinator
//! starts (a Kubernetes Job's pods, a scheduler, a script): each process connects,
//! says the run's token and its segment in a [`Hello`] line, and from then on the
//! connection carries what ssh's standard input and output would — its frames and
//! result one way, the start and a stop the other.
//!
//! Only the run's own processes are taken: a wrong token, a segment outside the run
//! or one already taken, a hello that is malformed, too long or too slow is answered
//! `refused WHY`, closed and counted. Connections still saying hello are bounded, so a
//! flood of them cannot grow the coordinator.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::run::{read_segment, Channel, Event, Link};
use super::{Hello, PREFIX};

/// Most bytes of a hello line.
pub const MAX_HELLO: u64 = 1024;

/// How long a connection has to say hello.
pub const HELLO_WITHIN: Duration = Duration::from_secs(5);

/// Most connections saying hello at once.
const MAX_PENDING: usize = 64;

/// The token processes give to join a run: 128 random bits, in hex.
pub fn token() -> std::io::Result<String> {
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut b)?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// A segment's place: empty until its process joins; closed once the loop has given
/// up on it (a later join is refused).
#[derive(Default)]
struct Slot {
    stream: Option<TcpStream>,
    closed: bool,
}

/// A segment that joins over the socket.
struct Joined(Arc<Mutex<Slot>>);

impl Link for Joined {
    fn say(&mut self, line: &str) {
        let mut slot = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = slot.stream.as_mut() {
            if s.write_all(line.as_bytes()).is_err() {
                slot.stream = None;
            }
        }
    }

    fn kill(&mut self) -> bool {
        let mut slot = self.0.lock().unwrap_or_else(|e| e.into_inner());
        slot.closed = true;
        match slot.stream.take() {
            // Its reader sees the end; the process, its standard input gone, stops.
            Some(s) => {
                let _ = s.shutdown(Shutdown::Both);
                true
            }
            None => false,
        }
    }

    fn finish(&mut self, stderr: String) -> Result<(), String> {
        let mut slot = self.0.lock().unwrap_or_else(|e| e.into_inner());
        slot.stream = None;
        slot.closed = true;
        match stderr.is_empty() {
            true => Ok(()),
            false => Err(stderr),
        }
    }
}

/// Takes the `n` segments of a run from `listener`: each connection that gives
/// `token` and a segment K/`n` not yet taken becomes segment K.
pub fn listen(listener: TcpListener, token: String, n: usize) -> Channel {
    let (tx, events) = mpsc::channel();
    let slots: Vec<Arc<Mutex<Slot>>> = (0..n).map(|_| Arc::default()).collect();
    let refused_joins = Arc::new(AtomicU64::new(0));
    let links = (slots.iter())
        .map(|s| Box::new(Joined(s.clone())) as Box<dyn Link>)
        .collect();
    let refused = refused_joins.clone();
    let sender = tx.clone();
    let pending = Arc::new(AtomicUsize::new(0));
    let token = Arc::new(token);
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { continue };
            if pending.fetch_add(1, Ordering::AcqRel) >= MAX_PENDING {
                pending.fetch_sub(1, Ordering::AcqRel);
                refused.fetch_add(1, Ordering::Relaxed);
                drop(conn);
                continue;
            }
            let (slots, tx, refused, pending, token) = (
                slots.clone(),
                tx.clone(),
                refused.clone(),
                pending.clone(),
                token.clone(),
            );
            std::thread::spawn(move || {
                if let Err(why) = join(conn, &token, &slots, tx, &refused) {
                    eprintln!("stampede: refused a connection: {why}");
                }
                pending.fetch_sub(1, Ordering::AcqRel);
            });
        }
    });
    Channel {
        links,
        events,
        sender,
        refused_joins,
    }
}

/// Reads a connection's hello and makes it its segment's, or refuses it: counted in
/// `refused` first, then told why (when it can still hear).
fn join(
    mut conn: TcpStream,
    token: &str,
    slots: &[Arc<Mutex<Slot>>],
    tx: Sender<Event>,
    refused: &AtomicU64,
) -> Result<(), String> {
    let peer = conn
        .peer_addr()
        .map_or_else(|_| "?".to_string(), |a| a.to_string());
    let refuse = |conn: &mut TcpStream, why: String| {
        refused.fetch_add(1, Ordering::Relaxed);
        let _ = conn.write_all(format!("refused {why}\n").as_bytes());
        let _ = conn.shutdown(Shutdown::Both);
        Err(format!("{peer}: {why}"))
    };
    let _ = conn.set_read_timeout(Some(HELLO_WITHIN));
    // The reader keeps what came after the hello (the first frames may share its
    // packet).
    let mut reader = match conn.try_clone() {
        Ok(c) => BufReader::new(c),
        Err(e) => return refuse(&mut conn, e.to_string()),
    };
    let mut line = Vec::new();
    let read = (&mut reader)
        .take(MAX_HELLO)
        .read_until(b'\n', &mut line)
        .map_err(|e| e.to_string());
    if let Err(e) = read {
        return refuse(&mut conn, format!("no hello within {HELLO_WITHIN:?}: {e}"));
    }
    if !line.ends_with(b"\n") {
        return refuse(
            &mut conn,
            format!("a hello must be one line of at most {MAX_HELLO} bytes"),
        );
    }
    let hello: Hello = match line
        .trim_ascii_end()
        .strip_prefix(PREFIX.as_bytes())
        .map(serde_json::from_slice)
    {
        Some(Ok(h)) => h,
        _ => return refuse(&mut conn, "a malformed hello".to_string()),
    };
    if !same(hello.token.as_bytes(), token.as_bytes()) {
        return refuse(&mut conn, "not this run's token".to_string());
    }
    let n = slots.len();
    let k = match hello.segment.split_once('/') {
        Some((k, m)) if m.parse() == Ok(n) => {
            k.parse::<usize>().ok().filter(|k| (1..=n).contains(k))
        }
        _ => None,
    };
    let Some(k) = k else {
        return refuse(
            &mut conn,
            format!(
                "segment {:?} is not one of this run's 1/{n} … {n}/{n}",
                hello.segment
            ),
        );
    };
    let _ = reader.get_ref().set_read_timeout(None);
    {
        let mut slot = slots[k - 1].lock().unwrap_or_else(|e| e.into_inner());
        if slot.closed || slot.stream.is_some() {
            let why = match slot.closed {
                true => format!("segment {k}/{n} was given up on"),
                false => format!("segment {k}/{n} is taken"),
            };
            drop(slot);
            return refuse(&mut conn, why);
        }
        slot.stream = Some(conn);
    }
    read_segment(k - 1, Some(reader), None::<std::io::Empty>, tx);
    Ok(())
}

/// Whether two tokens are the same, in a time that does not depend on where they
/// differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::run::{run, Decision, Waits};
    use crate::fleet::{Frame, LiveMerge};
    use std::io::BufRead;

    const TOKEN: &str = "0123456789abcdef0123456789abcdef";

    fn collector(n: usize) -> (Channel, std::net::SocketAddr) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let at = l.local_addr().unwrap();
        (listen(l, TOKEN.to_string(), n), at)
    }

    /// Connects and says `hello`; the collector's first answer line, if any.
    fn hello(at: std::net::SocketAddr, hello: &[u8]) -> (TcpStream, String) {
        let mut c = TcpStream::connect(at).unwrap();
        c.write_all(hello).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut answer = String::new();
        let _ = BufReader::new(c.try_clone().unwrap()).read_line(&mut answer);
        (c, answer)
    }

    fn line(token: &str, segment: &str) -> Vec<u8> {
        Hello {
            token: token.into(),
            segment: segment.into(),
        }
        .line()
        .into_bytes()
    }

    #[test]
    fn only_the_runs_own_processes_join() {
        let (ch, at) = collector(2);
        let refused = |h: &[u8]| hello(at, h).1;
        assert_eq!(
            refused(&line("ffff", "1/2")),
            "refused not this run's token\n"
        );
        assert!(refused(&line(TOKEN, "3/2")).starts_with("refused segment \"3/2\" is not one"));
        assert!(refused(&line(TOKEN, "1/3")).starts_with("refused segment \"1/3\" is not one"));
        assert!(refused(&line(TOKEN, "0/2")).starts_with("refused segment"));
        assert_eq!(refused(b"hello\n"), "refused a malformed hello\n");
        let mut long = PREFIX.as_bytes().to_vec();
        long.resize(MAX_HELLO as usize + 10, b'x');
        assert!(refused(&long).starts_with("refused a hello must be one line"));
        // Segment 1 joins (no answer until the start); a second claim on it is refused.
        let mut first = TcpStream::connect(at).unwrap();
        first.write_all(&line(TOKEN, "1/2")).unwrap();
        first
            .write_all(
                Frame::Ready {
                    segment: "1/2".into(),
                    run: None,
                }
                .line()
                .as_bytes(),
            )
            .unwrap();
        match ch.events.recv_timeout(Duration::from_secs(10)).unwrap() {
            Event::Frame(0, Frame::Ready { .. }) => {}
            _ => panic!("segment 1's ready"),
        }
        assert_eq!(
            refused(&line(TOKEN, "1/2")),
            "refused segment 1/2 is taken\n"
        );
        assert_eq!(ch.refused_joins.load(Ordering::Relaxed), 7);
    }

    #[test]
    fn a_connection_that_says_nothing_is_dropped_and_flood_is_bounded() {
        let (ch, at) = collector(1);
        // More silent connections than are taken at once: the extra ones are closed
        // at once, the others after the hello's time.
        let silent: Vec<TcpStream> = (0..MAX_PENDING + 8)
            .map(|_| TcpStream::connect(at).unwrap())
            .collect();
        let deadline = std::time::Instant::now() + HELLO_WITHIN + Duration::from_secs(10);
        while ch.refused_joins.load(Ordering::Relaxed) < (MAX_PENDING + 8) as u64 {
            assert!(
                std::time::Instant::now() < deadline,
                "silent connections kept"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        drop(silent);
        // The collector still takes its segment.
        let (mut c, _) = (TcpStream::connect(at).unwrap(), ());
        c.write_all(&line(TOKEN, "1/1")).unwrap();
        c.write_all(
            Frame::Ready {
                segment: "1/1".into(),
                run: None,
            }
            .line()
            .as_bytes(),
        )
        .unwrap();
        assert!(matches!(
            ch.events.recv_timeout(Duration::from_secs(10)).unwrap(),
            Event::Frame(0, Frame::Ready { .. })
        ));
    }

    #[test]
    fn a_segment_that_never_joins_is_missing_once_the_ready_time_is_up() {
        let (ch, at) = collector(2);
        // Segment 2 joins, says ready, gets the start, fails and says why.
        let seg = std::thread::spawn(move || {
            let mut c = TcpStream::connect(at).unwrap();
            c.write_all(&line(TOKEN, "2/2")).unwrap();
            c.write_all(
                Frame::Ready {
                    segment: "2/2".into(),
                    run: None,
                }
                .line()
                .as_bytes(),
            )
            .unwrap();
            let mut order = String::new();
            BufReader::new(c.try_clone().unwrap())
                .read_line(&mut order)
                .unwrap();
            let why = Frame::Failed {
                why: "its target refused".into(),
            };
            c.write_all(why.line().as_bytes()).unwrap();
            order
        });
        let waits = Waits {
            ready: Duration::from_millis(1500),
            lead: Duration::from_millis(100),
            stall: Duration::from_secs(10),
            deadline: Duration::from_secs(20),
        };
        let names = ["a".to_string(), "b".to_string()];
        let began = std::time::Instant::now();
        let out = run(ch, &names, waits, &mut LiveMerge::default(), |_, _| {
            Decision::Go
        });
        assert!(began.elapsed() < Duration::from_secs(10));
        assert!(seg.join().unwrap().starts_with("start "));
        assert_eq!(
            out.segments[0].result.as_ref().unwrap_err(),
            "not ready within 1.5 s"
        );
        assert_eq!(
            out.segments[1].result.as_ref().unwrap_err(),
            "its target refused"
        );
        assert!(out.start_unix_s.is_some());
    }
}
