//! HTTP/2 end to end against a scripted server on 127.0.0.1:0 (h2c, or h2 over TLS
//! with ALPN): the closed and open models with several streams per connection, streams
//! reset by the server, GOAWAY mid-run, and a server that only speaks HTTP/1.1. Every
//! run is bounded in count and time.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common::go;
use stampede_engine::h2::PREFACE;
use stampede_engine::{LoadSpec, RequestBuilder, Shape, Target};

/// What the scripted server does with the n-th stream of a connection (from 0).
#[derive(Clone, Copy)]
enum Script {
    /// Answer every stream 200 "PONG".
    Answer,
    /// Reset every stream whose number is a multiple of 5.
    ResetEveryFifth,
    /// After answering 30 streams, send GOAWAY naming the last one answered and close.
    GoAwayAfter30,
}

pub(crate) fn frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
}

pub(crate) fn read_frame(s: &mut impl Read) -> Option<(u8, u8, u32, Vec<u8>)> {
    let mut h = [0u8; 9];
    s.read_exact(&mut h).ok()?;
    let len = u32::from_be_bytes([0, h[0], h[1], h[2]]) as usize;
    let mut p = vec![0u8; len];
    s.read_exact(&mut p).ok()?;
    let id = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
    Some((h[3], h[4], id, p))
}

/// Serves one HTTP/2 connection by the script.
fn serve_h2(mut s: impl Read + Write, script: Script, streams: Arc<AtomicU64>) {
    let mut preface = [0u8; 24];
    if s.read_exact(&mut preface).is_err() || preface != PREFACE {
        return;
    }
    let mut out = Vec::new();
    frame(&mut out, 4, 0, 0, &[0, 3, 0, 0, 0, 100]); // SETTINGS: 100 streams
    if s.write_all(&out).is_err() {
        return;
    }
    let mut n = 0u64;
    while let Some((kind, flags, id, _)) = read_frame(&mut s) {
        out.clear();
        match kind {
            4 if flags & 1 == 0 => frame(&mut out, 4, 1, 0, &[]),
            1 => {
                streams.fetch_add(1, Ordering::Relaxed);
                let k = n;
                n += 1;
                match script {
                    Script::ResetEveryFifth if k.is_multiple_of(5) => {
                        frame(&mut out, 3, 0, id, &8u32.to_be_bytes()); // CANCEL
                    }
                    Script::GoAwayAfter30 if k >= 30 => {
                        let mut p = (id - 2).to_be_bytes().to_vec();
                        p.extend_from_slice(&0u32.to_be_bytes());
                        frame(&mut out, 7, 0, 0, &p);
                        let _ = s.write_all(&out);
                        return;
                    }
                    _ => {
                        // :status 200 (static index 8), then the body.
                        frame(&mut out, 1, 4, id, &[0x88]);
                        frame(&mut out, 0, 1, id, b"PONG");
                    }
                }
            }
            _ => continue,
        }
        if s.write_all(&out).is_err() {
            return;
        }
    }
}

/// Starts the scripted server; with `tls`, it speaks TLS offering ALPN h2 only.
fn h2_server(script: Script, tls: bool) -> (String, Arc<AtomicU64>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let streams = Arc::new(AtomicU64::new(0));
    let counted = streams.clone();
    let config = tls.then(|| {
        stampede_tls::server_config(
            &stampede_tls::ServerCert::SelfSigned(vec!["127.0.0.1".into()]),
            vec![b"h2".to_vec()],
            None,
        )
        .unwrap()
    });
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { continue };
            let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
            let _ = s.set_nodelay(true);
            let streams = counted.clone();
            let config = config.clone();
            std::thread::spawn(move || match config {
                None => serve_h2(s, script, streams),
                Some(c) => {
                    let mut t = stampede_tls::TlsStream::server(s, c).unwrap();
                    if t.handshake().is_ok() {
                        serve_h2(t, script, streams)
                    }
                }
            });
        }
    });
    let scheme = if tls { "https" } else { "http" };
    (format!("{scheme}://{addr}/pong"), streams)
}

fn spec(url: &str, streams: usize, n: u64) -> LoadSpec {
    let target = Target::parse(url).unwrap();
    let req = RequestBuilder::native(&target, "GET", true)
        .build()
        .unwrap();
    let tls = target.tls;
    let mut s = LoadSpec::new(target, req);
    s.load.protocol.http2 = true;
    s.load.pipeline = streams;
    s.load.connections = 2;
    s.load.threads = 1;
    s.load.requests = Some(n);
    s.load.timeout = Some(Duration::from_secs(5));
    if tls {
        s.tls = Some(
            stampede_tls::client_config(&stampede_tls::ClientOptions {
                insecure: true,
                alpn: vec![b"h2".to_vec(), b"http/1.1".to_vec()],
                ..Default::default()
            })
            .unwrap(),
        );
    }
    s
}

#[test]
fn h2c_closed_model_with_streams() {
    let (url, streams) = h2_server(Script::Answer, false);
    let r = go(spec(&url, 8, 3000));
    assert_eq!(r.requests.completed, 3000, "{:?}", r.errors);
    assert_eq!(r.statuses.get(&200), Some(&3000));
    assert_eq!(r.bytes.body, 3000 * 4);
    assert_eq!(r.connections_opened, 2);
    assert_eq!(streams.load(Ordering::Relaxed), 3000);
    assert!(r.settings.http2);
}

#[test]
fn h2_over_tls_via_alpn_and_the_open_model() {
    let (url, _) = h2_server(Script::Answer, true);
    let r = go(spec(&url, 4, 500));
    assert_eq!(r.requests.completed, 500, "{:?}", r.errors);
    let tls = r.protocols.tls.unwrap();
    assert_eq!(tls.alpn.as_deref(), Some("h2"));
    assert_eq!(tls.http1_fallback, 0);

    let (url, _) = h2_server(Script::Answer, false);
    let mut s = spec(&url, 4, 0);
    s.load.requests = None;
    s.load.shape = Shape::Rate {
        rate: 1000.0,
        gaps: stampede_engine::arrivals::Gaps::Even,
    };
    s.load.duration = Some(Duration::from_secs(1));
    let r = go(s);
    let open = r.open.unwrap();
    assert_eq!(r.requests.started + open.never_sent, 1000);
    assert!(r.requests.completed >= 990, "{}", r.requests.completed);
    assert_eq!(r.requests.failed, 0);
}

#[test]
fn reset_streams_are_counted_by_kind() {
    let (url, _) = h2_server(Script::ResetEveryFifth, false);
    let r = go(spec(&url, 5, 1000));
    let reset = r.errors.get("h2_stream_reset").copied().unwrap_or(0);
    assert_eq!(r.requests.completed + reset, 1000, "{:?}", r.errors);
    assert_eq!(r.errors.len(), 1, "{:?}", r.errors);
    // Every fifth stream of each connection: about a fifth of the requests.
    assert!((190..=210).contains(&reset), "{reset}");
}

#[test]
fn goaway_mid_run_fails_the_unprocessed_streams_and_reconnects() {
    let (url, _) = h2_server(Script::GoAwayAfter30, false);
    let r = go(spec(&url, 4, 400));
    let goaway = r.errors.get("h2_goaway").copied().unwrap_or(0);
    assert!(goaway > 0, "{:?}", r.errors);
    assert_eq!(
        r.requests.completed + r.requests.failed,
        400,
        "{:?}",
        r.errors
    );
    assert!(r.connections_opened > 2, "reconnected after each GOAWAY");
    assert!(r.requests.completed >= 300, "{}", r.requests.completed);
}

#[test]
fn an_http11_server_asked_for_h2c_is_a_protocol_error() {
    // A plain HTTP/1.1 server answers the preface with 400 and closes.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf);
            let _ = s.write_all(
                b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });
    let url = format!("http://{addr}/pong");
    let r = go(spec(&url, 2, 20));
    assert_eq!(r.requests.completed, 0);
    assert_eq!(
        r.errors.keys().collect::<Vec<_>>(),
        ["protocol"],
        "{:?}",
        r.errors
    );
    let mut probe = LoadSpec::new(
        Target::parse(&url).unwrap(),
        RequestBuilder::new("GET", "/").build().unwrap(),
    );
    probe.load.protocol.http2 = true;
    probe.load.requests = Some(1);
    probe.load.connect_timeout = Duration::from_secs(2);
    let e = stampede_engine::probe(&probe.plan().unwrap()).unwrap_err();
    assert!(e.to_string().contains("does not speak h2c"), "{e}");
    let _ = TcpStream::connect(addr);
}

#[test]
fn injection_and_sessions_over_http2() {
    use stampede_engine::arrivals::Period;
    use stampede_engine::inject::Profile;
    use stampede_engine::Session;
    let (url, streams) = h2_server(Script::Answer, false);
    // Gatling users, three calls each in bursts of three streams on their connection.
    let profile = Profile::parse(&[
        "atOnceUsers(5)".into(),
        "rampUsers(10).during(300 ms)".into(),
    ])
    .unwrap();
    let mut s = spec(&url, 3, 0);
    s.load.requests = None;
    s.load.shape = Shape::Users(profile);
    s.load.session = Session {
        calls: 6,
        burst: 3,
        think: Duration::from_millis(5),
        ..Default::default()
    };
    let r = go(s);
    let sess = r.sessions.unwrap();
    assert_eq!((sess.started, sess.completed, sess.failed), (15, 15, 0));
    assert_eq!(r.requests.completed, 90, "{:?}", r.errors);
    assert_eq!(r.connections_opened, 15);
    assert_eq!(streams.load(Ordering::Relaxed), 90);

    // httperf sessions at a fixed period.
    let mut s = spec(&url, 1, 0);
    s.load.requests = None;
    s.load.shape = Shape::Sessions {
        period: Some(Period::Deterministic(0.01)),
        count: 20,
    };
    s.load.session = Session {
        calls: 2,
        burst: 1,
        think: Duration::ZERO,
        ..Default::default()
    };
    let r = go(s);
    assert_eq!(r.requests.completed, 40, "{:?}", r.errors);
    assert_eq!(r.sessions.unwrap().completed, 20);
}

/// An h2c server that advertises a limit of `limit` streams, holds the streams it
/// receives and answers them all once none arrived for 20 ms, and refuses
/// (RST_STREAM REFUSED_STREAM) any stream beyond the limit. Returns the URL and how
/// many streams it refused.
fn limited_server(limit: u32) -> (String, Arc<AtomicU64>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let refused = Arc::new(AtomicU64::new(0));
    let counted = refused.clone();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            let refused = counted.clone();
            std::thread::spawn(move || {
                let _ = s.set_nodelay(true);
                let _ = s.set_read_timeout(Some(Duration::from_millis(20)));
                let mut out = Vec::new();
                frame(
                    &mut out,
                    4,
                    0,
                    0,
                    &[&[0u8, 3][..], &limit.to_be_bytes()].concat(),
                );
                let _ = s.write_all(&out);
                let (mut buf, mut held) = (Vec::new(), Vec::new());
                let mut chunk = [0u8; 65536];
                let mut idle_rounds = 0;
                while idle_rounds < 250 {
                    match s.read(&mut chunk) {
                        Ok(0) => return,
                        Ok(n) => {
                            buf.extend_from_slice(&chunk[..n]);
                            idle_rounds = 0;
                        }
                        Err(_) => {
                            // Quiet for 20 ms: answer what is held.
                            idle_rounds += 1;
                            out.clear();
                            for id in held.drain(..) {
                                frame(&mut out, 1, 4, id, &[0x88]);
                                frame(&mut out, 0, 1, id, b"PONG");
                            }
                            if !out.is_empty() && s.write_all(&out).is_err() {
                                return;
                            }
                            continue;
                        }
                    }
                    let mut at = if buf.starts_with(PREFACE) {
                        PREFACE.len()
                    } else {
                        0
                    };
                    out.clear();
                    while buf.len() >= at + 9 {
                        let len =
                            u32::from_be_bytes([0, buf[at], buf[at + 1], buf[at + 2]]) as usize;
                        if buf.len() < at + 9 + len {
                            break;
                        }
                        let (kind, flags) = (buf[at + 3], buf[at + 4]);
                        let id = u32::from_be_bytes([
                            buf[at + 5],
                            buf[at + 6],
                            buf[at + 7],
                            buf[at + 8],
                        ]);
                        match kind {
                            4 if flags & 1 == 0 => frame(&mut out, 4, 1, 0, &[]),
                            1 if held.len() as u32 >= limit => {
                                refused.fetch_add(1, Ordering::Relaxed);
                                frame(&mut out, 3, 0, id, &7u32.to_be_bytes());
                            }
                            1 => held.push(id),
                            _ => {}
                        }
                        at += 9 + len;
                    }
                    buf.drain(..at);
                    if !out.is_empty() && s.write_all(&out).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (format!("http://{addr}/pong"), refused)
}

#[test]
fn streams_stay_within_the_servers_limit() {
    // More streams asked for than the server allows: past its SETTINGS the surplus
    // waits for streams to end; streams it refused before (unprocessed) are retried.
    let (url, refused) = limited_server(5);
    let mut s = spec(&url, 40, 400);
    s.load.connections = 1;
    let r = go(s);
    assert_eq!(r.requests.completed, 400, "{:?}", r.errors);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    // Before the server's SETTINGS arrive 100 streams are allowed (RFC 9113) and the
    // first burst goes out at once: the 35 above the limit are refused, then retried.
    let refused = refused.load(Ordering::Relaxed);
    assert!((1..=35).contains(&refused), "{refused}");
}
