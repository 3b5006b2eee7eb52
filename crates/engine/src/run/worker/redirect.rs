//! Following redirects (see [`crate::Load::redirects`]): a 3xx answer with a
//! Location on the run's own origin sends the request it points to on the same
//! connection, as the same arrival. Each hop is timed on its own; the request's
//! latency runs from its intended start to the last answer. A Location elsewhere, a
//! chain past the limit or a 3xx without one is the request's answer.

use std::time::Instant;

use super::{Pending, State, Worker};
use crate::measure::recorder::micros;
use crate::spec::request::request_target;
use crate::spec::target::{Address, Target};

impl Worker<'_> {
    /// Follows the answer on `ci` to `p` when it is a redirect that may be followed:
    /// returns whether the connection is still open, or `None` when the answer is
    /// the request's last (counted as usual by the caller).
    #[cold]
    #[inline(never)]
    pub(super) fn follow(
        &mut self,
        ci: usize,
        status: u16,
        close: bool,
        mut p: Pending,
        now: Instant,
    ) -> Option<bool> {
        let c = &mut self.conns[ci];
        if c.proto.multiplexed() {
            return None;
        }
        let kept = c.proto.take_response().unwrap_or_default();
        if !matches!(status, 301 | 302 | 303 | 307 | 308)
            || u32::from(p.hops) >= self.prep.redirects
        {
            return None;
        }
        let location = kept.headers.get("location")?;
        let current = request_target(&c.own)?;
        let path = same_origin(location, &self.cfg.net.target, current)?;
        let next = redirected(&c.own, status, &path)?;
        c.own = next;
        p.hops += 1;
        self.rec
            .hist
            .redirect
            .0
            .saturating_record(micros(c.write_done.max(p.sent), now));
        self.first_response(ci, now);
        if close {
            self.drop_socket(ci);
        }
        let c = &mut self.conns[ci];
        c.proto.set_head_request(c.own.starts_with(b"HEAD "));
        // The same arrival goes on: its intended start and first send are kept, and
        // its hops counted.
        c.pending.push_back(p);
        c.proto.send(0..c.own.len());
        c.proto.queue(1);
        match c.link.state() {
            State::Open => {
                self.write(ci, now);
                Some(self.conns[ci].link.state() == State::Open)
            }
            _ => {
                self.connect(ci, now);
                Some(false)
            }
        }
    }
}

/// The path and query a Location points to when it is on `target`'s origin (same
/// scheme, host and port), resolved against `current` (the request's own target) as
/// a relative reference; `None` for another origin or a value that cannot go in a
/// request line.
fn same_origin(location: &str, target: &Target, current: &str) -> Option<String> {
    let loc = location.trim();
    let loc = loc.split('#').next().unwrap_or("");
    if loc.is_empty() || loc.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return None;
    }
    let url = match loc.strip_prefix("//") {
        Some(rest) => format!("{}://{rest}", if target.tls { "https" } else { "http" }),
        None if loc.contains("://") => loc.to_string(),
        None => return Some(without_dot_segments(&relative(loc, current))),
    };
    // The run's own URL parser, without looking the host up.
    let to = Target::parse_at(&url, Some(Address::Tcp(Vec::new()))).ok()?;
    let same = matches!(to.address, Address::Tcp(_))
        && to.tls == target.tls
        && to.host.eq_ignore_ascii_case(&target.host)
        && to.port == target.port;
    same.then(|| without_dot_segments(&to.path))
}

/// RFC 3986's remove_dot_segments on the path of `target` (its query kept as it is):
/// `/a/b/../../x` is `/x`, and a `..` above the root stays at the root.
fn without_dot_segments(target: &str) -> String {
    let (path, query) = match target.find('?') {
        Some(i) => target.split_at(i),
        None => (target, ""),
    };
    if !path.split('/').any(|s| s == "." || s == "..") {
        return target.to_string();
    }
    let mut out: Vec<&str> = Vec::new();
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    for (i, s) in segments.iter().enumerate() {
        let last = i + 1 == segments.len();
        match *s {
            "." | ".." => {
                if *s == ".." {
                    out.pop();
                }
                // A trailing dot segment leaves the path ending in '/'.
                if last {
                    out.push("");
                }
            }
            s => out.push(s),
        }
    }
    format!("/{}{query}", out.join("/"))
}

/// A relative reference (`/x`, `x`, `?q`) merged with the request target `current`
/// (RFC 3986's merge; [`without_dot_segments`] then removes its dot segments, as a
/// browser does before it asks).
fn relative(loc: &str, current: &str) -> String {
    if loc.starts_with('/') {
        return loc.to_string();
    }
    let path = current.split('?').next().unwrap_or("/");
    if loc.starts_with('?') {
        return format!("{path}{loc}");
    }
    let dir = &path[..path.rfind('/').map_or(0, |i| i + 1)];
    if dir.is_empty() {
        format!("/{loc}")
    } else {
        format!("{dir}{loc}")
    }
}

/// The request that follows `status` from the request `bytes`, to `path`: 303, and
/// 301 or 302 after a POST, become a GET without the body (as browsers do); 307 and
/// 308 repeat the method and body. `None` when `bytes` is not one whole request head.
fn redirected(bytes: &[u8], status: u16, path: &str) -> Option<Vec<u8>> {
    let head_end = bytes.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let line_end = bytes.windows(2).position(|w| w == b"\r\n")?;
    let line = std::str::from_utf8(&bytes[..line_end]).ok()?;
    let mut words = line.split(' ');
    let (method, _, version) = (words.next()?, words.next()?, words.next()?);
    let get = match status {
        303 => method != "HEAD",
        301 | 302 => method == "POST",
        _ => false,
    };
    let method = if get { "GET" } else { method };
    let mut out = Vec::with_capacity(bytes.len() + path.len());
    out.extend_from_slice(format!("{method} {path} {version}\r\n").as_bytes());
    for field in bytes[line_end + 2..head_end - 2].split_inclusive(|&b| b == b'\n') {
        let name = field.split(|&b| b == b':').next().unwrap_or_default();
        let body_field = [
            &b"content-length"[..],
            b"content-type",
            b"transfer-encoding",
        ]
        .iter()
        .any(|n| name.eq_ignore_ascii_case(n));
        if !(get && body_field) {
            out.extend_from_slice(field);
        }
    }
    out.extend_from_slice(b"\r\n");
    if !get {
        out.extend_from_slice(&bytes[head_end..]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_location_is_followed_only_on_the_runs_origin() {
        let t = Target::parse("http://127.0.0.1:8080/a/b?x=1").unwrap();
        let at = |loc: &str| same_origin(loc, &t, "/a/b?x=1");
        assert_eq!(at("/c").as_deref(), Some("/c"));
        assert_eq!(at("c?y=2").as_deref(), Some("/a/c?y=2"));
        assert_eq!(at("?y=2").as_deref(), Some("/a/b?y=2"));
        assert_eq!(at("http://127.0.0.1:8080/d#frag").as_deref(), Some("/d"));
        assert_eq!(at("HTTP://127.0.0.1:8080").as_deref(), Some("/"));
        assert_eq!(at("//127.0.0.1:8080/e?q").as_deref(), Some("/e?q"));
        assert_eq!(at("http://127.0.0.1:8080?q").as_deref(), Some("/?q"));
        for elsewhere in [
            "http://127.0.0.2:8080/",
            "http://127.0.0.1:8081/",
            "http://127.0.0.1/",
            "https://127.0.0.1:8080/",
            "//example.com/x",
            "/x\r\nX-Smuggled: 1",
            "/a b",
            "",
        ] {
            assert_eq!(at(elsewhere), None, "{elsewhere:?}");
        }
        let t = Target::parse("https://[::1]/").unwrap();
        assert_eq!(
            same_origin("https://[::1]:443/v6", &t, "/").as_deref(),
            Some("/v6")
        );
        assert_eq!(same_origin("/x", &t, "/").as_deref(), Some("/x"));
        assert_eq!(relative("y", "/"), "/y");
        assert_eq!(relative("y", "x"), "/y");
        // Dot segments are removed as RFC 3986 resolves a reference.
        let t = Target::parse("http://127.0.0.1:8/").unwrap();
        for (loc, current, to) in [
            ("../../x", "/a/b/c", "/x"),
            ("../../../../x?q=1", "/a/b", "/x?q=1"),
            ("./y/.", "/a/b", "/a/y/"),
            ("/p/./q/../r", "/", "/p/r"),
            ("http://127.0.0.1:8/a/../b", "/", "/b"),
            ("..", "/a/b/c", "/a/"),
            ("?q=../x", "/a/b", "/a/b?q=../x"),
        ] {
            assert_eq!(
                same_origin(loc, &t, current).as_deref(),
                Some(to),
                "{loc} from {current}"
            );
        }
    }

    #[test]
    fn a_redirect_keeps_or_drops_the_method_and_body_as_browsers_do() {
        let post = b"POST /form HTTP/1.1\r\nHost: h\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nX-A: 1\r\n\r\nhi";
        let text = |v: Vec<u8>| String::from_utf8(v).unwrap();
        for status in [301, 302, 303] {
            assert_eq!(
                text(redirected(post, status, "/done").unwrap()),
                "GET /done HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n\r\n",
                "{status}"
            );
        }
        for status in [307, 308] {
            assert_eq!(
                text(redirected(post, status, "/again").unwrap()),
                "POST /again HTTP/1.1\r\nHost: h\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nX-A: 1\r\n\r\nhi"
            );
        }
        let head = b"HEAD /h HTTP/1.1\r\nHost: h\r\n\r\n";
        assert_eq!(
            text(redirected(head, 303, "/i").unwrap()),
            "HEAD /i HTTP/1.1\r\nHost: h\r\n\r\n"
        );
        assert_eq!(
            text(redirected(head, 301, "/i").unwrap()),
            "HEAD /i HTTP/1.1\r\nHost: h\r\n\r\n"
        );
        assert!(redirected(b"GET / HTTP/1.1\r\nHost: h\r\n", 302, "/").is_none());
        assert_eq!(request_target(post), Some("/form"));
    }
}
