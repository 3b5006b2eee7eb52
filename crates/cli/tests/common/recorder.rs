//! A recording HTTP/1.1 server for end-to-end tests on 127.0.0.1:0: it answers every
//! request (pipelined ones in order) and keeps what it received (connection, arrival
//! time, method, path, headers, body), so a test checks what the load generator sent,
//! not only what it printed. Also the binary run with a bound on its time, its output
//! as text, and a temporary directory removed when dropped.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A request as the server read it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub conn: usize,
    /// The client's address and port.
    pub peer: std::net::SocketAddr,
    pub at: Instant,
    pub method: String,
    pub path: String,
    pub headers: HashMap<String, String>,
    pub body: Vec<u8>,
}

/// A recording HTTP/1.1 server: answers `PONG` (no body to HEAD; a token on
/// /authenticate; the status N on /status/N; a cookie set on /cookie/NAME=VALUE; the
/// status N with `Location: L` on /to/N?L; 503 then 200 in turn on /flaky, counted
/// over the whole server), pipelined requests in order; stops when dropped.
pub struct Recorder {
    pub port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
    stop: Arc<AtomicBool>,
}

impl Recorder {
    pub fn start() -> Recorder {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, st) = (seen.clone(), stop.clone());
        let flaky = Arc::new(std::sync::atomic::AtomicU64::new(0));
        std::thread::spawn(move || {
            let mut conn = 0;
            // Blocking accepts; the drop wakes the last one with a connection.
            while let Ok((sock, peer)) = listener.accept() {
                if st.load(Ordering::Relaxed) {
                    break;
                }
                conn += 1;
                let (s, st, id, f) = (s.clone(), st.clone(), conn, flaky.clone());
                std::thread::spawn(move || serve(sock, id, peer, &s, &st, &f));
            }
        });
        Recorder { port, seen, stop }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = std::net::TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn serve(
    mut sock: TcpStream,
    conn: usize,
    peer: std::net::SocketAddr,
    seen: &Mutex<Vec<Seen>>,
    stop: &AtomicBool,
    flaky: &std::sync::atomic::AtomicU64,
) {
    sock.set_read_timeout(Some(Duration::from_millis(50))).ok();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16384];
    while !stop.load(Ordering::Relaxed) {
        match sock.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue
            }
            Err(_) => return,
        }
        let mut out = Vec::new();
        loop {
            let mut hs = [httparse::EMPTY_HEADER; 64];
            let mut req = httparse::Request::new(&mut hs);
            let Ok(httparse::Status::Complete(head)) = req.parse(&buf) else {
                break;
            };
            let headers: HashMap<String, String> = req
                .headers
                .iter()
                .map(|h| {
                    (
                        h.name.to_string(),
                        String::from_utf8_lossy(h.value).into_owned(),
                    )
                })
                .collect();
            let len: usize = headers
                .get("Content-Length")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            if buf.len() < head + len {
                break;
            }
            let path = req.path.unwrap_or("").to_string();
            let method = req.method.unwrap_or("").to_string();
            let body = if method == "HEAD" { "" } else { "PONG" };
            let r = Seen {
                conn,
                peer,
                at: Instant::now(),
                method,
                path: path.clone(),
                headers,
                body: buf[head..head + len].to_vec(),
            };
            seen.lock().unwrap().push(r);
            buf.drain(..head + len);
            let extra = if path == "/authenticate" {
                "X-Token: s3cret\r\n".to_string()
            } else if let Some(c) = path.strip_prefix("/cookie/") {
                format!("Set-Cookie: {c}; Path=/\r\n")
            } else if let Some((_, to)) = path.strip_prefix("/to/").and_then(|r| r.split_once('?'))
            {
                format!("Location: {to}\r\n")
            } else {
                String::new()
            };
            let code = (path.strip_prefix("/status/")).or_else(|| {
                path.strip_prefix("/to/")
                    .map(|r| r.split('?').next().unwrap_or(""))
            });
            let status = match code {
                Some(n) => n.parse().unwrap_or(400),
                None if path == "/flaky"
                    && flaky.fetch_add(1, Ordering::Relaxed).is_multiple_of(2) =>
                {
                    503
                }
                None => 200,
            };
            out.extend_from_slice(
                format!(
                    "HTTP/1.1 {status} X\r\nServer: rec\r\n{extra}Content-Length: 4\r\n\r\n{body}"
                )
                .as_bytes(),
            );
        }
        if !out.is_empty() && sock.write_all(&out).is_err() {
            return;
        }
    }
}

/// A directory removed when dropped.
pub mod tempdir {
    /// A directory of its own under the system's temporary one, removed with what it
    /// holds when dropped.
    pub struct Dir(pub std::path::PathBuf);
    impl std::ops::Deref for Dir {
        type Target = std::path::Path;
        fn deref(&self) -> &std::path::Path {
            &self.0
        }
    }
    impl AsRef<std::path::Path> for Dir {
        fn as_ref(&self) -> &std::path::Path {
            &self.0
        }
    }
    impl Dir {
        /// `stampede-PREFIX-PID-NAME`, emptied first.
        pub fn named(prefix: &str, name: &str) -> Dir {
            let p = std::env::temp_dir()
                .join(format!("stampede-{prefix}-{}-{name}", std::process::id()));
            let _ = std::fs::remove_dir_all(&p);
            std::fs::create_dir_all(&p).unwrap();
            Dir(p)
        }

        pub fn new() -> Dir {
            use std::sync::atomic::{AtomicUsize, Ordering};
            static N: AtomicUsize = AtomicUsize::new(0);
            let p = std::env::temp_dir().join(format!(
                "stampede-test-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&p).unwrap();
            Dir(p)
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Runs `stampede ARGS`; asserts it ended within 30 s.
pub fn stampede(args: &[&str]) -> Output {
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_stampede"))
        .args(args)
        .output()
        .expect("the binary runs");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the run took {:?}",
        started.elapsed()
    );
    out
}

/// Output bytes as text.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}
