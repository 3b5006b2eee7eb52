//! The stream adapter over an in-memory non-blocking pipe (a bounded buffer each way
//! that answers WouldBlock like a socket), and the configurations end to end.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use super::*;

type Buf = Rc<RefCell<VecDeque<u8>>>;

/// One end of a socket pair: reads `rx`, writes `tx` up to `cap` bytes in flight.
struct End {
    rx: Buf,
    tx: Buf,
    cap: usize,
}

impl Read for End {
    fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        let mut q = self.rx.borrow_mut();
        if q.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = b.len().min(q.len());
        for (d, s) in b.iter_mut().zip(q.drain(..n)) {
            *d = s;
        }
        Ok(n)
    }
}

impl Write for End {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        let mut q = self.tx.borrow_mut();
        let room = self.cap.saturating_sub(q.len());
        if room == 0 {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = room.min(b.len());
        q.extend(&b[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn pair(cap: usize) -> (End, End) {
    let (a, b): (Buf, Buf) = Default::default();
    (
        End {
            rx: a.clone(),
            tx: b.clone(),
            cap,
        },
        End { rx: b, tx: a, cap },
    )
}

/// A test's file, removed when dropped.
struct Gone(PathBuf);

impl Drop for Gone {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn self_signed_server() -> (Arc<ServerConfig>, PathBuf) {
    let (cert, key) = self_signed(&["localhost".into()]).unwrap();
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("stampede-tls-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (c, k) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&c, cert).unwrap();
    std::fs::write(&k, key).unwrap();
    let cfg = server_config(
        &ServerCert::Files {
            cert: c.clone(),
            key: k,
        },
        vec![b"http/1.1".to_vec()],
        None,
    )
    .unwrap();
    (cfg, c)
}

/// Sends `msg` from client to server and back, driving both sides by hand; returns
/// what each side read, or the first error.
fn exchange(
    client: &mut TlsStream<End>,
    server: &mut TlsStream<End>,
    msg: &[u8],
) -> io::Result<(Vec<u8>, Vec<u8>)> {
    let (mut at_server, mut at_client) = (Vec::new(), Vec::new());
    let (mut sent, mut echoed) = (0, 0);
    let mut buf = vec![0u8; 4096];
    for _ in 0..100_000 {
        if sent < msg.len() {
            match client.write(&msg[sent..]) {
                Ok(n) => sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
        client.flush_pending()?;
        loop {
            match server.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    at_server.extend_from_slice(&buf[..n]);
                    if n < buf.len() {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        if echoed < at_server.len() {
            match server.write(&at_server[echoed..]) {
                Ok(n) => echoed += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
        server.flush_pending()?;
        loop {
            match client.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    at_client.extend_from_slice(&buf[..n]);
                    if n < buf.len() {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        if at_client.len() == msg.len() {
            return Ok((at_server, at_client));
        }
    }
    panic!("no progress: {} sent, {} echoed", sent, echoed);
}

fn client_with(o: ClientOptions, end: End) -> TlsStream<End> {
    TlsStream::client(end, client_config(&o).unwrap(), "localhost").unwrap()
}

#[test]
fn a_large_message_goes_both_ways_through_a_small_pipe() {
    let (server_cfg, ca) = self_signed_server();
    let (a, b) = pair(1500);
    let mut client = client_with(
        ClientOptions {
            ca_file: Some(ca),
            alpn: vec![b"http/1.1".to_vec()],
            ..Default::default()
        },
        a,
    );
    let mut server = TlsStream::server(b, server_cfg).unwrap();
    let msg: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let (s, c) = exchange(&mut client, &mut server, &msg).unwrap();
    assert_eq!(s, msg);
    assert_eq!(c, msg);
    assert!(!client.is_handshaking());
    assert_eq!(client.alpn(), Some(&b"http/1.1"[..]));
}

#[test]
fn an_unknown_issuer_is_a_certificate_failure_and_insecure_accepts_it() {
    let (server_cfg, _) = self_signed_server();
    let (other_ca, _) = self_signed(&["elsewhere".into()]).unwrap();
    let f = std::env::temp_dir().join(format!("stampede-tls-other-{}.pem", std::process::id()));
    std::fs::write(&f, other_ca).unwrap();
    let _gone = Gone(f.clone());
    let (a, b) = pair(1 << 16);
    let mut client = client_with(
        ClientOptions {
            ca_file: Some(f),
            ..Default::default()
        },
        a,
    );
    let mut server = TlsStream::server(b, server_cfg.clone()).unwrap();
    let e = exchange(&mut client, &mut server, b"GET").unwrap_err();
    assert_eq!(classify(&e), Some(Failure::Certificate), "{e}");

    let (a, b) = pair(1 << 16);
    let mut client = client_with(
        ClientOptions {
            insecure: true,
            versions: Versions::Tls12,
            ..Default::default()
        },
        a,
    );
    let mut server = TlsStream::server(b, server_cfg).unwrap();
    exchange(&mut client, &mut server, b"GET / HTTP/1.1\r\n\r\n").unwrap();
    assert_eq!(
        client.conn.protocol_version(),
        Some(rustls::ProtocolVersion::TLSv1_2)
    );
}

#[test]
fn bad_files_name_the_file() {
    let missing = PathBuf::from("/nonexistent/ca.pem");
    let e = client_config(&ClientOptions {
        ca_file: Some(missing),
        ..Default::default()
    })
    .unwrap_err();
    assert!(e.to_string().starts_with("/nonexistent/ca.pem: "), "{e}");
    let empty = std::env::temp_dir().join(format!("stampede-tls-empty-{}", std::process::id()));
    std::fs::write(&empty, "not a certificate\n").unwrap();
    let _gone = Gone(empty.clone());
    let e = load_certs(&empty).unwrap_err();
    assert!(e.to_string().contains("no CERTIFICATE block"), "{e}");
    let e = client_config(&ClientOptions {
        cert_file: Some(empty),
        ..Default::default()
    })
    .unwrap_err();
    assert!(e.to_string().contains("both the certificate and its key"));
}

#[test]
fn a_read_on_a_blocking_socket_returns_what_arrived_without_waiting_for_more() {
    // A server that answers and keeps the connection open (as HTTP/2 does): the
    // client's read must come back with the answer, not wait for the read timeout.
    let (server_cfg, ca) = self_signed_server();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let server = std::thread::spawn(move || {
        let (s, _) = listener.accept().unwrap();
        let mut t = TlsStream::server(s, server_cfg).unwrap();
        t.handshake().unwrap();
        let mut b = [0u8; 5];
        let mut got = 0;
        while got < 5 {
            got += t.read(&mut b[got..]).unwrap();
        }
        t.write_all(b"hello").unwrap();
        t.flush_pending().unwrap();
        let _ = done_rx.recv_timeout(std::time::Duration::from_secs(10));
    });
    let s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let cfg = client_config(&ClientOptions {
        ca_file: Some(ca),
        ..Default::default()
    })
    .unwrap();
    let mut t = TlsStream::client(s, cfg, "localhost").unwrap();
    t.handshake().unwrap();
    t.write_all(b"hi ok").unwrap();
    let start = std::time::Instant::now();
    let mut buf = [0u8; 4096];
    let mut got = Vec::new();
    while got.len() < 5 {
        let n = t.read(&mut buf).unwrap();
        assert!(n > 0);
        got.extend_from_slice(&buf[..n]);
    }
    assert_eq!(got, b"hello");
    assert!(
        start.elapsed() < std::time::Duration::from_secs(2),
        "the read waited {:?}",
        start.elapsed()
    );
    done_tx.send(()).unwrap();
    server.join().unwrap();
}
