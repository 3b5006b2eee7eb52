//! `--dashboard`: a small web server that shows a run live in a browser.
//!
//! `GET /` is the page; `GET /events` a server-sent-event stream that carries each
//! finished second (an HTML fragment of cards and charts, drawn by the report crate)
//! and, at the end, the final report, which the page then shows in place of itself. A
//! browser that connects late gets the latest second at once. `GET /report` serves the
//! final report while the process is still up; `GET /metrics` the figures in
//! Prometheus's text format. `--metrics-listen` runs the same server with
//! `/metrics` alone. The server runs on its own threads; a
//! slow or vanished browser costs the run at most a second's write timeout, never a
//! measurement.
//!
//! It holds at most [`MAX_REQUESTS`] requests being read and [`MAX_STREAMS`] event
//! streams at once (more are answered 503 and closed at once, so idle connections
//! cannot take the run's descriptors), and it answers only requests whose Host names it
//! by address, `localhost` or this machine's name: a page of another site whose name
//! was rebound to this address (DNS rebinding) gets 421 and never sees the run's URL.
//! `/metrics` is for scrapers, which name the machine however they are configured:
//! it answers any Host from a client that is not a browser, and a browser's request
//! (one that carries `Origin` or the `Sec-Fetch-` headers every current browser sends)
//! only under the names the page answers to — so a rebound name cannot read the run's
//! figures from a page either.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Requests being read at once (each on its own thread, for at most five seconds).
pub const MAX_REQUESTS: usize = 16;

/// Browsers following the run at once (`/events` streams).
pub const MAX_STREAMS: usize = 32;

use crate::{Hub, MetricsError};

/// Where the dashboard listens when `--dashboard` has no address.
pub const DEFAULT_ADDR: &str = "127.0.0.1:8089";

/// A running dashboard.
pub struct Dashboard {
    url: String,
    /// The page; `None` where only `/metrics` is served.
    page: Option<String>,
    metrics: Option<Arc<Hub>>,
    state: Mutex<State>,
    /// The port it listens on, for the Host check.
    port: u16,
    /// Requests being read now.
    reading: AtomicUsize,
}

#[derive(Default)]
struct State {
    /// The last second shown, if any.
    shown: Option<u32>,
    fragment: Option<String>,
    clients: Vec<TcpStream>,
    report: Option<String>,
}

/// One server-sent event; every line of `data` gets its own `data:` field.
fn event(name: &str, data: &str) -> Vec<u8> {
    let mut o = format!("event: {name}\n");
    for line in data.split('\n') {
        o.push_str("data: ");
        o.push_str(line.trim_end_matches('\r'));
        o.push('\n');
    }
    o.push('\n');
    o.into_bytes()
}

impl Dashboard {
    /// Listens on `addr` and serves the page for a run of `what` (method and URL), and
    /// `/metrics` from `metrics`.
    pub fn start(
        addr: &str,
        page: String,
        metrics: Option<Arc<Hub>>,
    ) -> Result<Arc<Dashboard>, MetricsError> {
        Dashboard::listen("--dashboard", addr, Some(page), metrics)
    }

    /// Listens on `addr` for `/metrics` alone (`--metrics-listen`).
    pub fn metrics_only(addr: &str, metrics: Arc<Hub>) -> Result<Arc<Dashboard>, MetricsError> {
        Dashboard::listen("--metrics-listen", addr, None, Some(metrics))
    }

    fn listen(
        flag: &'static str,
        addr: &str,
        page: Option<String>,
        metrics: Option<Arc<Hub>>,
    ) -> Result<Arc<Dashboard>, MetricsError> {
        let listener = TcpListener::bind(addr).map_err(|reason| MetricsError::Listen {
            flag,
            addr: addr.to_string(),
            reason,
        })?;
        let local =
            (listener.local_addr()).map_err(|reason| MetricsError::Start { flag, reason })?;
        let d = Arc::new(Dashboard {
            url: format!("http://{local}/"),
            page,
            metrics,
            state: Mutex::new(State::default()),
            port: local.port(),
            reading: AtomicUsize::new(0),
        });
        let server = d.clone();
        std::thread::Builder::new()
            .name("stampede-dashboard".into())
            .spawn(move || {
                for mut stream in listener.incoming().flatten() {
                    if server.reading.fetch_add(1, Ordering::SeqCst) >= MAX_REQUESTS {
                        server.reading.fetch_sub(1, Ordering::SeqCst);
                        let _ = stream.set_write_timeout(Some(Duration::from_millis(100)));
                        respond(
                            &mut stream,
                            "503 Service Unavailable",
                            "text/plain",
                            b"busy\n",
                        );
                        continue;
                    }
                    let d = server.clone();
                    let spawned = std::thread::Builder::new()
                        .name("stampede-dashboard-conn".into())
                        .spawn(move || {
                            d.serve(stream);
                        });
                    if spawned.is_err() {
                        server.reading.fetch_sub(1, Ordering::SeqCst);
                    }
                }
            })
            .map_err(|reason| MetricsError::Start { flag, reason })?;
        Ok(d)
    }

    /// The page's address.
    pub fn url(&self) -> &str {
        &self.url
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The last second sent to the browsers.
    pub fn shown(&self) -> Option<u32> {
        self.state().shown
    }

    /// Sends the view after second `t` to every browser.
    pub fn second(&self, t: Option<u32>, fragment: String) {
        let mut s = self.state();
        let ev = event("second", &fragment);
        s.clients.retain_mut(|c| c.write_all(&ev).is_ok());
        s.shown = t;
        s.fragment = Some(fragment);
    }

    /// Sends the final report to every browser and closes their streams.
    pub fn finish(&self, report: String) {
        let mut s = self.state();
        let ev = event("report", &report);
        for mut c in s.clients.drain(..) {
            let _ = c.write_all(&ev);
            let _ = c.shutdown(Shutdown::Write);
        }
        s.report = Some(report);
    }

    /// Reads one request and answers it; the slot taken for it in `reading` is given
    /// back once the request is read.
    fn serve(&self, stream: TcpStream) {
        let read = self.read_head(stream);
        self.reading.fetch_sub(1, Ordering::SeqCst);
        if let Some((stream, head)) = read {
            self.answer(stream, &head);
        }
    }

    fn read_head(&self, mut stream: TcpStream) -> Option<(TcpStream, Vec<u8>)> {
        let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
        let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
        let _ = stream.set_nodelay(true);
        let mut head = Vec::new();
        let mut buf = [0u8; 2048];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            match stream.read(&mut buf) {
                Ok(0) | Err(_) => return None,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
            if head.len() > 16 * 1024 {
                respond(
                    &mut stream,
                    "431 Request Header Fields Too Large",
                    "text/plain",
                    b"",
                );
                return None;
            }
        }
        Some((stream, head))
    }

    fn answer(&self, mut stream: TcpStream, head: &[u8]) {
        let line =
            String::from_utf8_lossy(&head[..head.iter().position(|&b| b == b'\r').unwrap_or(0)])
                .into_owned();
        let mut parts = line.split(' ');
        let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let path = path.split('?').next().unwrap_or("");
        if method != "GET" {
            return respond(
                &mut stream,
                "405 Method Not Allowed",
                "text/plain",
                b"GET only\n",
            );
        }
        let head_text = String::from_utf8_lossy(head);
        let fields = || {
            (head_text.split("\r\n").skip(1)).filter_map(|l| {
                let (n, v) = l.split_once(':')?;
                Some((n.trim(), v.trim()))
            })
        };
        let host = fields().find_map(|(n, v)| n.eq_ignore_ascii_case("host").then_some(v));
        let host_ok = host.is_some_and(|h| host_allowed(h, self.port));
        if let ("/metrics", Some(m)) = (path, &self.metrics) {
            let browser = fields().any(|(n, _)| {
                n.eq_ignore_ascii_case("origin")
                    || n.get(..10)
                        .is_some_and(|p| p.eq_ignore_ascii_case("sec-fetch-"))
            });
            if !browser || host_ok {
                let (text, final_figures) = m.scrape();
                respond(
                    &mut stream,
                    "200 OK",
                    "text/plain; version=0.0.4; charset=utf-8",
                    text.as_bytes(),
                );
                m.delivered(final_figures);
                return;
            }
        }
        if !host_ok {
            return respond(
                &mut stream,
                "421 Misdirected Request",
                "text/plain",
                b"this dashboard answers to its address, localhost or this machine's name\n",
            );
        }
        let Some(page) = &self.page else {
            return respond(
                &mut stream,
                "404 Not Found",
                "text/plain",
                b"only /metrics here\n",
            );
        };
        match path {
            "/" | "/index.html" => respond(
                &mut stream,
                "200 OK",
                "text/html; charset=utf-8",
                page.as_bytes(),
            ),
            "/events" => self.subscribe(stream),
            // Browsers ask for an icon; there is none, and a 404 would log an error.
            "/favicon.ico" => respond(&mut stream, "204 No Content", "image/x-icon", b""),
            "/report" => match self.state().report.clone() {
                Some(r) => respond(
                    &mut stream,
                    "200 OK",
                    "text/html; charset=utf-8",
                    r.as_bytes(),
                ),
                None => respond(
                    &mut stream,
                    "404 Not Found",
                    "text/plain",
                    b"the run is still going\n",
                ),
            },
            _ => respond(&mut stream, "404 Not Found", "text/plain", b"not found\n"),
        }
    }

    fn subscribe(&self, mut stream: TcpStream) {
        let head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: keep-alive\r\n\r\nretry: 1000\n\n";
        let mut s = self.state();
        if s.clients.len() >= MAX_STREAMS {
            // Streams whose browser has gone are found by writing to them.
            s.clients.retain_mut(|c| c.write_all(b":\n\n").is_ok());
            if s.clients.len() >= MAX_STREAMS {
                drop(s);
                return respond(
                    &mut stream,
                    "503 Service Unavailable",
                    "text/plain",
                    b"too many browsers follow this run\n",
                );
            }
        }
        if stream.write_all(head).is_err() {
            return;
        }
        if let Some(r) = &s.report {
            let _ = stream.write_all(&event("report", r));
            let _ = stream.shutdown(Shutdown::Write);
            return;
        }
        if let Some(f) = &s.fragment {
            if stream.write_all(&event("second", f)).is_err() {
                return;
            }
        }
        s.clients.push(stream);
    }
}

/// Whether a request's Host names this dashboard: an IP address (its own, as the
/// browser reached it), `localhost`, or this machine's name, with the dashboard's port
/// or none. A DNS name of another site rebound to this address is none of these.
fn host_allowed(host: &str, port: u16) -> bool {
    let name = match host.rsplit_once(':') {
        Some((n, p)) if !n.ends_with(':') && (n.starts_with('[') || !n.contains(':')) => {
            if p.parse() != Ok(port) {
                return false;
            }
            n
        }
        _ => host,
    };
    let bare = name.trim_start_matches('[').trim_end_matches(']');
    bare.parse::<std::net::IpAddr>().is_ok()
        || bare.eq_ignore_ascii_case("localhost")
        || std::fs::read_to_string("/proc/sys/kernel/hostname")
            .is_ok_and(|h| !h.trim().is_empty() && bare.eq_ignore_ascii_case(h.trim()))
}

fn respond(stream: &mut TcpStream, status: &str, kind: &str, body: &[u8]) {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream
        .write_all(head.as_bytes())
        .and_then(|_| stream.write_all(body));
    let _ = stream.shutdown(Shutdown::Write);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufRead;

    /// Sends a GET; returns the status line and the reader positioned after it.
    fn get(url: &str, path: &str) -> (String, std::io::BufReader<TcpStream>) {
        let addr = url.trim_start_matches("http://").trim_end_matches('/');
        get_as(url, path, addr)
    }

    /// Sends a GET with `host` in its Host header.
    fn get_as(url: &str, path: &str, host: &str) -> (String, std::io::BufReader<TcpStream>) {
        let addr = url.trim_start_matches("http://").trim_end_matches('/');
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        write!(s, "GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n").unwrap();
        let mut r = std::io::BufReader::new(s);
        let mut status = String::new();
        r.read_line(&mut status).unwrap();
        (status, r)
    }

    #[test]
    fn serves_the_page_streams_seconds_and_the_report() {
        let d = Dashboard::start("127.0.0.1:0", "<p>page</p>".into(), None).unwrap();
        let (status, _) = get(d.url(), "/");
        assert!(status.starts_with("HTTP/1.1 200"), "{status}");
        let (status, _) = get(d.url(), "/nope");
        assert!(status.starts_with("HTTP/1.1 404"));
        let (status, _) = get(d.url(), "/report");
        assert!(status.starts_with("HTTP/1.1 404"), "not before the end");

        d.second(Some(0), "<p>one</p>".into());
        let (status, mut events) = get(d.url(), "/events");
        assert!(status.starts_with("HTTP/1.1 200"));
        // The second shown so far comes first, written under the lock that registers
        // the subscriber: once it is read, what is sent next reaches this stream.
        let mut all = String::new();
        while !all.ends_with("data: <p>one</p>\n\n") {
            assert_ne!(events.read_line(&mut all).unwrap(), 0, "{all}");
        }
        d.second(Some(1), "<p>two\nlines</p>".into());
        d.finish("<html>final</html>".into());
        events.read_to_string(&mut all).unwrap();
        assert!(all.contains("event: second\ndata: <p>one</p>\n\n"), "{all}");
        assert!(all.contains("event: second\ndata: <p>two\ndata: lines</p>\n\n"));
        assert!(all.ends_with("event: report\ndata: <html>final</html>\n\n"));
        let (status, _) = get(d.url(), "/report");
        assert!(status.starts_with("HTTP/1.1 200"));
    }

    #[test]
    fn a_busy_address_is_a_usage_error_naming_the_flag() {
        let d = Dashboard::start("127.0.0.1:0", "<p>page</p>".into(), None).unwrap();
        let busy = d.url().trim_start_matches("http://").trim_end_matches('/');
        let e = Dashboard::start(busy, "<p>page</p>".into(), None)
            .err()
            .unwrap();
        assert!(matches!(e, MetricsError::Listen { .. }), "{e}");
        assert!(
            e.to_string().starts_with("--dashboard: cannot listen on"),
            "{e}"
        );
        let e = Dashboard::start("nonsense", "<p>page</p>".into(), None)
            .err()
            .unwrap();
        assert!(e.to_string().contains("HOST:PORT"));
    }

    /// `/metrics` answers a scraper under any name, and a browser's request only
    /// under the dashboard's own names.
    #[test]
    fn metrics_answer_any_scraper_and_a_browser_only_under_its_own_names() {
        let target = stampede_engine::Target::parse("http://127.0.0.1:1/").unwrap();
        let request = stampede_engine::RequestBuilder::native(&target, "GET", true)
            .build()
            .unwrap();
        let spec = stampede_engine::LoadSpec::new(target, request);
        let hub = crate::Hub::new(&spec, &[]).unwrap();
        let d = Dashboard::metrics_only("127.0.0.1:0", hub).unwrap();
        let addr = d.url().trim_start_matches("http://").trim_end_matches('/');
        let ask = |host: &str, extra: &str| {
            let mut s = TcpStream::connect(addr).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            write!(s, "GET /metrics HTTP/1.1\r\nHost: {host}\r\n{extra}\r\n").unwrap();
            let mut status = String::new();
            std::io::BufReader::new(s).read_line(&mut status).unwrap();
            status
        };
        assert!(ask("prometheus-target.internal:9000", "").starts_with("HTTP/1.1 200"));
        assert!(ask(addr, "Sec-Fetch-Mode: cors\r\n").starts_with("HTTP/1.1 200"));
        for browser in [
            "Sec-Fetch-Site: same-origin\r\n",
            "Origin: http://rebound.example\r\n",
        ] {
            let status = ask("rebound.example:80", browser);
            assert!(status.starts_with("HTTP/1.1 421"), "{browser}: {status}");
        }
    }

    #[test]
    fn only_its_own_host_names_are_answered() {
        for ok in [
            "127.0.0.1:8089",
            "localhost:8089",
            "[::1]:8089",
            "::1",
            "10.1.2.3:8089",
        ] {
            assert!(host_allowed(ok, 8089), "{ok}");
        }
        for bad in [
            "evil.example:8089",
            "evil.example",
            "127.0.0.1:80",
            "localhost.evil:8089",
            "",
        ] {
            assert!(!host_allowed(bad, 8089), "{bad}");
        }
        let d = Dashboard::start(
            "127.0.0.1:0",
            "<title>GET http://127.0.0.1/?token=secret</title>".into(),
            None,
        )
        .unwrap();
        let (status, mut r) = get_as(d.url(), "/", "rebound.example:80");
        assert!(status.starts_with("HTTP/1.1 421"), "{status}");
        let mut rest = String::new();
        let _ = r.read_to_string(&mut rest);
        assert!(!rest.contains("secret"));
        let (status, _) = get(d.url(), "/");
        assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    }

    #[test]
    fn idle_connections_past_the_cap_are_answered_busy_at_once() {
        let d = Dashboard::start("127.0.0.1:0", "<p>page</p>".into(), None).unwrap();
        let addr = d.url().trim_start_matches("http://").trim_end_matches('/');
        // Connections that never send a request hold every reading slot.
        let idle: Vec<TcpStream> = (0..MAX_REQUESTS)
            .map(|_| TcpStream::connect(addr).unwrap())
            .collect();
        // Connections are accepted in the order they came, each taking its slot as
        // it is: the next one finds every slot taken.
        // Answered from the accepting thread at once, before any request is read
        // (so the request is not written here: the answer may already be closed).
        let mut busy = std::io::BufReader::new(TcpStream::connect(addr).unwrap());
        busy.get_ref()
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut status = String::new();
        busy.read_line(&mut status).unwrap();
        assert!(status.starts_with("HTTP/1.1 503"), "{status}");
        drop(idle);
        // The slots come back as their readers see the connections end: a request
        // is answered busy until then, and then served.
        let until = std::time::Instant::now() + Duration::from_secs(4);
        loop {
            // A busy answer may close the connection before the request is written:
            // the write or the read then fails, and that is a busy answer too.
            let mut s = TcpStream::connect(addr).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let _ = write!(s, "GET / HTTP/1.1\r\nHost: {addr}\r\n\r\n");
            let mut status = String::new();
            let _ = std::io::BufReader::new(s).read_line(&mut status);
            if status.starts_with("HTTP/1.1 200") {
                break;
            }
            assert!(
                status.is_empty() || status.starts_with("HTTP/1.1 503"),
                "{status}"
            );
            assert!(std::time::Instant::now() < until, "slots not given back");
        }
    }
}
