//! Several requests used in turn (`Load::variety`): servers on 127.0.0.1:0 record
//! the paths each connection received, over HTTP/1.1 (pipelined or not, closed or at a
//! fixed rate) and HTTP/2, and the spec's refusals. Every run is bounded in count and
//! time.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{find, go};
use crate::h2::{frame, read_frame};
use stampede_engine::h2::PREFACE;
use stampede_engine::{LoadSpec, Request, RequestBuilder, Shape, Target};

/// The paths received, one list per connection in the order accepted.
type Seen = Arc<Mutex<Vec<Vec<String>>>>;

/// Serves each connection to a listener on 127.0.0.1:0 on a thread of its own with
/// `serve`, which hands `record` each request it reads (`method path`); returns the
/// URL and the requests seen, per connection.
fn recorder(serve: fn(TcpStream, &dyn Fn(String))) -> (String, Seen) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", l.local_addr().unwrap());
    let seen: Seen = Arc::default();
    let all = seen.clone();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { continue };
            let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
            let me = {
                let mut v = all.lock().unwrap();
                v.push(Vec::new());
                v.len() - 1
            };
            let all = all.clone();
            std::thread::spawn(move || serve(s, &|r| all.lock().unwrap()[me].push(r)));
        }
    });
    (url, seen)
}

/// HTTP/1.1: records each request line's path; answers 200 with the path as the body
/// (HEAD: no body).
fn h1_recorder() -> (String, Seen) {
    recorder(|mut s, record| {
        let (mut buf, mut chunk) = (Vec::new(), [0u8; 4096]);
        loop {
            let mut out = Vec::new();
            while let Some(end) = find(&buf, b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&buf[..end]).into_owned();
                buf.drain(..end + 4);
                let mut words = head.split(' ');
                let (method, path) = (words.next().unwrap(), words.next().unwrap());
                record(format!("{method} {path}"));
                let body = if method == "HEAD" { "" } else { path };
                out.extend_from_slice(
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                        path.len()
                    )
                    .as_bytes(),
                );
            }
            if !out.is_empty() && s.write_all(&out).is_err() {
                return;
            }
            match s.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(k) => buf.extend_from_slice(&chunk[..k]),
            }
        }
    })
}

/// h2c: records each stream's `:method :path`; answers 200 "ok".
fn h2_recorder() -> (String, Seen) {
    recorder(|mut s, record| {
        let mut preface = [0u8; 24];
        if s.read_exact(&mut preface).is_err() || preface != PREFACE {
            return;
        }
        let mut out = Vec::new();
        frame(&mut out, 4, 0, 0, &[0, 3, 0, 0, 0, 100]);
        let _ = s.write_all(&out);
        let mut dec = loona_hpack::Decoder::new();
        while let Some((kind, flags, id, p)) = read_frame(&mut s) {
            out.clear();
            match kind {
                4 if flags & 1 == 0 => frame(&mut out, 4, 1, 0, &[]),
                1 => {
                    let (mut method, mut path) = (String::new(), String::new());
                    dec.decode_with_cb(&p, |n, v| {
                        let v = String::from_utf8_lossy(&v).into_owned();
                        match &n[..] {
                            b":method" => method = v,
                            b":path" => path = v,
                            _ => {}
                        }
                    })
                    .unwrap();
                    record(format!("{method} {path}"));
                    frame(&mut out, 1, 4, id, &[0x88]);
                    frame(&mut out, 0, 1, id, b"ok");
                }
                _ => continue,
            }
            if s.write_all(&out).is_err() {
                return;
            }
        }
    })
}

fn request(target: &Target, method: &str, path: &str) -> Request {
    let mut t = target.clone();
    t.path = path.into();
    RequestBuilder::native(&t, method, true).build().unwrap()
}

fn spec(url: &str, methods_paths: &[(&str, &str)]) -> LoadSpec {
    let target = Target::parse(url).unwrap();
    let variety: Vec<Request> = (methods_paths.iter())
        .map(|(m, p)| request(&target, m, p))
        .collect();
    let mut s = LoadSpec::new(target, variety[0].clone());
    s.load.variety = variety;
    s.load.connections = 2;
    s.load.threads = 1;
    s.load.timeout = Some(Duration::from_secs(5));
    s
}

/// The body bytes the recorder answered: each GET's path.
fn bodies(seen: &Seen) -> u64 {
    let seen = seen.lock().unwrap();
    (seen.iter().flatten())
        .filter(|r| !r.starts_with("HEAD "))
        .map(|r| r.split(' ').nth(1).unwrap().len() as u64)
        .sum()
}

/// Each connection's paths are the list in turn from the first.
fn assert_in_turn(seen: &Seen, list: &[&str], total: usize) {
    let seen = seen.lock().unwrap();
    let mut n = 0;
    for conn in seen.iter() {
        for (i, got) in conn.iter().enumerate() {
            assert_eq!(
                got,
                list[i % list.len()],
                "connection's request {i}: {seen:?}"
            );
        }
        n += conn.len();
    }
    assert_eq!(n, total, "{seen:?}");
}

#[test]
fn http1_connections_send_the_requests_in_turn() {
    let list = [("GET", "/a"), ("POST", "/b"), ("GET", "/c?x=1")];
    let names = ["GET /a", "POST /b", "GET /c?x=1"];
    // One request at a time.
    let (url, seen) = h1_recorder();
    let mut s = spec(&url, &list);
    s.load.requests = Some(30);
    let r = go(s);
    assert_eq!(r.requests.completed, 30, "{:?}", r.errors);
    assert_in_turn(&seen, &names, 30);
    // The body of each answer is its path: bytes add up per request.
    assert_eq!(r.bytes.body, bodies(&seen));

    // Pipelined, 4 at a time: batches that do not divide the list keep the turn.
    let (url, seen) = h1_recorder();
    let mut s = spec(&url, &list);
    s.load.requests = Some(40);
    s.load.pipeline = 4;
    let r = go(s);
    assert_eq!(r.requests.completed, 40, "{:?}", r.errors);
    assert_in_turn(&seen, &names, 40);

    // At a fixed rate.
    let (url, seen) = h1_recorder();
    let mut s = spec(&url, &list);
    s.load.shape = Shape::Rate {
        rate: 200.0,
        gaps: stampede_engine::arrivals::Gaps::Even,
    };
    s.load.duration = Some(Duration::from_millis(500));
    let r = go(s);
    assert!(r.requests.completed >= 90, "{:?}", r.requests);
    let n = r.requests.completed as usize;
    assert_in_turn(&seen, &names, n);
}

#[test]
fn head_requests_in_turn_are_read_without_a_body() {
    let (url, seen) = h1_recorder();
    let mut s = spec(&url, &[("HEAD", "/h"), ("GET", "/g")]);
    s.load.requests = Some(20);
    let r = go(s);
    assert_eq!(r.requests.completed, 20, "{:?}", r.errors);
    assert_in_turn(&seen, &["HEAD /h", "GET /g"], 20);
    assert_eq!(r.bytes.body, bodies(&seen));
    assert!(r.bytes.body < 20 * 2);
}

#[test]
fn http2_streams_take_the_requests_in_turn() {
    let (url, seen) = h2_recorder();
    let mut s = spec(
        &url,
        &[("GET", "/one"), ("GET", "/two"), ("DELETE", "/three")],
    );
    s.load.protocol.http2 = true;
    s.load.pipeline = 8;
    s.load.requests = Some(300);
    let r = go(s);
    assert_eq!(r.requests.completed, 300, "{:?}", r.errors);
    assert_in_turn(&seen, &["GET /one", "GET /two", "DELETE /three"], 300);
}

/// A walk over the run's calls (an OpenAI run's prompts, httperf's working set) over
/// HTTP/2: the streams of every connection take one walk between them, so ten calls
/// over a list of ten send each request once, whichever connection sends it; a walk
/// that would end the run at the list's end is refused over HTTP/2.
#[test]
fn http2_streams_share_one_walk_over_the_runs_calls() {
    let (url, seen) = h2_recorder();
    let paths: Vec<String> = (0..10).map(|i| format!("/{i}")).collect();
    let list: Vec<(&str, &str)> = paths.iter().map(|p| ("GET", p.as_str())).collect();
    let mut s = spec(&url, &list);
    s.load.protocol.http2 = true;
    s.load.pipeline = 4;
    s.load.requests = Some(10);
    s.load.walk = Some(stampede_engine::Walk {
        rate: 1.0,
        once: false,
    });
    let r = go(s.clone());
    assert_eq!(r.requests.completed, 10, "{:?}", r.errors);
    let mut got: Vec<String> = seen.lock().unwrap().iter().flatten().cloned().collect();
    got.sort();
    let mut want: Vec<String> = paths.iter().map(|p| format!("GET {p}")).collect();
    want.sort();
    assert_eq!(got, want);

    s.load.walk = Some(stampede_engine::Walk {
        rate: 1.0,
        once: true,
    });
    let e = s.validate().unwrap_err().to_string();
    assert!(e.contains("walk") && e.contains("HTTP/1.1"), "{e}");
}

#[test]
fn requests_in_turn_that_cannot_work_are_refused() {
    let url = "http://127.0.0.1:9/";
    let mut s = spec(url, &[("HEAD", "/h"), ("GET", "/g")]);
    s.load.requests = Some(10);
    s.load.pipeline = 2;
    let e = s.validate().unwrap_err().to_string();
    assert!(e.contains("variety") && e.contains("HEAD"), "{e}");

    let mut s = spec(url, &[("GET", "/a"), ("GET", "/b")]);
    s.load.shape = Shape::Sessions {
        period: None,
        count: 3,
    };
    let e = s.validate().unwrap_err().to_string();
    assert!(e.contains("sessions"), "{e}");

    // validate makes the first of them the run's request.
    let mut s = spec(url, &[("GET", "/a"), ("GET", "/b")]);
    s.load.request = request(&s.target, "PUT", "/other");
    s.load.requests = Some(1);
    s.validate().unwrap();
    assert_eq!(s.load.request.method, "GET");
}
