//! Several requests for one run: a targets file in vegeta's format (`load --targets`),
//! a body per line (`load --body-lines`), and several URLs on one server (h2load's
//! URIs and `-i`). Each becomes the engine's list of requests used in turn
//! (`Load::variety`).
//!
//! vegeta's format: a request is a line `METHOD URL`, then its header lines
//! `Name: value`, then optionally `@path` for a body read from that file; blank lines
//! separate requests and lines starting with `#` are comments. The requests are
//! grouped by server (scheme, host and port): `load` gives each server a pool of its
//! own (see [`stampede_engine::servers`]), the dialects that send to one server
//! refuse a second; what is wrong is named with the file and line.

use stampede_engine::input::{self, size, Input, MAX_BUILT_REQUESTS};
use stampede_engine::servers::MAX_SERVERS;
use stampede_engine::{Request, RequestBuilder, Target};

use crate::InputError;

/// One request of a targets file, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The line it starts on (from 1).
    pub line: usize,
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    /// The `@path` of its body, if any.
    pub body: Option<String>,
    /// Its body given inline (vegeta's JSON targets), if any.
    pub data: Option<Vec<u8>>,
}

/// Reads vegeta's target format; `file` names the file in errors.
pub fn parse(file: &str, text: &str) -> Result<Vec<Entry>, InputError> {
    let mut out: Vec<Entry> = Vec::new();
    let mut open = false;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        let at = |what: String| InputError::at(file, i + 1, what);
        if line.is_empty() {
            open = false;
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        if open {
            let e = out.last_mut().expect("open means one was started");
            if let Some(path) = line.strip_prefix('@') {
                if e.body.is_some() {
                    return Err(at("a second @body for the same request".into()));
                }
                e.body = Some(path.trim().to_string());
                continue;
            }
            if e.body.is_some() {
                return Err(at(format!(
                    "{line:?} after the request's @body; headers come before it, and a blank line starts the next request"
                )));
            }
            // vegeta allows the next request without a blank line.
            if let Some(e) = request_line(line) {
                out.push(Entry { line: i + 1, ..e });
                continue;
            }
            let h = stampede_engine::request::parse_header_arg(line).ok_or_else(|| {
                at(format!(
                    "{line:?} is neither a header ('Name: value'), an @body nor a request ('METHOD URL')"
                ))
            })?;
            e.headers.push(h);
            continue;
        }
        let e = request_line(line).ok_or_else(|| {
            at(format!(
                "{line:?} is not a request; write 'METHOD URL', e.g. 'GET http://127.0.0.1:8080/path'"
            ))
        })?;
        out.push(Entry { line: i + 1, ..e });
        open = true;
    }
    if out.is_empty() {
        return Err(InputError::of(
            file,
            "no requests; write one per block, 'METHOD URL' then its headers",
        ));
    }
    Ok(out)
}

fn request_line(line: &str) -> Option<Entry> {
    let (method, url) = line.split_once(char::is_whitespace)?;
    let url = url.trim();
    let token = !method.is_empty() && method.bytes().all(|b| b.is_ascii_alphabetic());
    (token && url.contains("://") && !url.contains(char::is_whitespace)).then(|| Entry {
        line: 0,
        method: method.to_ascii_uppercase(),
        url: url.to_string(),
        headers: Vec::new(),
        body: None,
        data: None,
    })
}

/// A URL's scheme, authority and request-target (`/` when it has none, a leading
/// `/` before a bare query); `None` without `://`.
pub fn split_url(url: &str) -> Option<(&str, &str, String)> {
    let (scheme, rest) = url.split_once("://")?;
    let at = rest.find(['/', '?']).unwrap_or(rest.len());
    let path = &rest[at..];
    let path = match path.as_bytes().first() {
        None => "/".into(),
        Some(b'?') => format!("/{path}"),
        Some(_) => path.to_string(),
    };
    Some((scheme, &rest[..at], path))
}

/// What every request of a list shares: the flags' headers, keep-alive and body.
#[derive(Default)]
pub struct Common<'a> {
    /// `-H` headers, set on every request (a request's own headers override them).
    pub headers: &'a [(String, String)],
    pub keepalive: bool,
    /// The body of every request that has no `@body` of its own.
    pub body: Option<&'a [u8]>,
}

/// One server's requests of a list: the server (its first entry's URL, resolved),
/// its requests and their places in the list (from 0).
pub struct Group {
    pub target: Target,
    pub requests: Vec<Request>,
    pub places: Vec<u32>,
}

impl Group {
    /// The engine's form of this server's share of a run over several.
    pub fn server(self, tls: Option<TlsConfig>) -> stampede_engine::Server {
        stampede_engine::Server {
            target: self.target,
            tls,
            requests: self.requests,
            places: self.places,
        }
    }
}

type TlsConfig = std::sync::Arc<stampede_tls::rustls::ClientConfig>;

/// One request per entry, grouped by server (scheme, host and port as written), the
/// servers in the order they first appear; `unix_socket` as `--unix-socket` (one
/// server only). An `@body` file is read within the engine's limit for bodies.
pub fn requests(
    file: &str,
    entries: &[Entry],
    unix_socket: Option<&str>,
    common: &Common,
) -> Result<Vec<Group>, InputError> {
    let mut groups: Vec<Group> = Vec::new();
    let mut budget = Budget::new();
    for (place, e) in entries.iter().enumerate() {
        let at = |what: String| InputError::at(file, e.line, what);
        // Read once, resolving nothing: its server is one seen before, or a new one.
        let read_as = Some(stampede_engine::Address::Tcp(Vec::new()));
        let parsed = Target::parse_at(&e.url, read_as).map_err(|x| at(x.to_string()))?;
        let known = (groups.iter())
            .position(|g| g.target.tls == parsed.tls && g.target.authority == parsed.authority);
        let gi = match known {
            Some(gi) => gi,
            None => {
                if let (Some(sock), Some(g)) = (unix_socket, groups.first()) {
                    return Err(at(format!(
                        "{} is not on {}: --unix-socket {sock} sends every request to one server",
                        e.url, g.target.url
                    )));
                }
                if groups.len() == MAX_SERVERS {
                    return Err(at(format!(
                        "{} would be server {}; a run sends to at most {MAX_SERVERS}",
                        e.url,
                        MAX_SERVERS + 1
                    )));
                }
                let sock = unix_socket.map(|p| stampede_engine::target::Address::Unix(p.into()));
                let target = Target::parse_at(&e.url, sock).map_err(|x| at(x.to_string()))?;
                groups.push(Group {
                    target,
                    requests: Vec::new(),
                    places: Vec::new(),
                });
                groups.len() - 1
            }
        };
        let group = &mut groups[gi];
        let mut t = group.target.clone();
        t.path = parsed.path;
        t.userinfo = parsed.userinfo;
        let mut b = RequestBuilder::native(&t, &e.method, common.keepalive);
        for (n, v) in common.headers {
            b = b.set_header(n, v);
        }
        // The entry's own headers replace the flags' ones; a name repeated in the entry
        // is sent once per value.
        for (i, (n, v)) in e.headers.iter().enumerate() {
            let again = e.headers[..i]
                .iter()
                .any(|(m, _)| m.eq_ignore_ascii_case(n));
            b = if again {
                b.header(n, v)
            } else {
                b.set_header(n, v)
            };
        }
        if let Some(p) = &e.body {
            let body = input::read(p, "body file", Input::Body);
            b = b.body(body.map_err(|x| at(format!("@{p}: {x}")))?);
        } else if let Some(d) = &e.data {
            b = b.body(d.clone());
        } else if let Some(body) = common.body {
            b = b.body(body.to_vec());
        }
        let r = b.build().map_err(|x| at(x.to_string()))?;
        budget.take(&r).map_err(|e| at(e.to_string()))?;
        group.requests.push(r);
        group.places.push(place as u32);
    }
    Ok(groups)
}

/// The one server of a list, with its requests; `what` names the command that
/// sends to one server only.
pub fn one_server(file: &str, what: &str, mut groups: Vec<Group>) -> Result<Group, InputError> {
    if groups.len() > 1 {
        return Err(InputError::of(
            file,
            format!(
                "names {} servers ({} and {}); {what} sends to one server (`stampede load --targets` sends to several)",
                groups.len(),
                groups[0].target.url,
                groups[1].target.url
            ),
        ));
    }
    groups
        .pop()
        .ok_or_else(|| InputError::of(file, "no requests"))
}

/// The memory the requests built from one list may take together
/// ([`MAX_BUILT_REQUESTS`]): each request's bytes and its own bookkeeping.
struct Budget {
    used: u64,
}

impl Budget {
    fn new() -> Budget {
        Budget { used: 0 }
    }

    fn take(&mut self, r: &Request) -> Result<(), Spent> {
        let cost = (std::mem::size_of::<Request>() + r.method.len() + r.bytes.len()) as u64;
        self.used += cost;
        match self.used > MAX_BUILT_REQUESTS {
            true => Err(Spent),
            false => Ok(()),
        }
    }
}

/// A list's requests took more than [`MAX_BUILT_REQUESTS`].
#[derive(Debug)]
struct Spent;

impl std::fmt::Display for Spent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the requests built so far take more than {} together, the most a list may build; use fewer or smaller requests",
            size(MAX_BUILT_REQUESTS)
        )
    }
}

/// The non-empty lines of `text`, each without its line ending, with its line
/// number (from 1).
pub fn lines(text: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    (text.split(|b| *b == b'\n'))
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .enumerate()
        .filter(|(_, l)| !l.is_empty())
        .map(|(i, l)| (i + 1, l))
}

/// One request per non-empty line of `text`, the line (without its line ending) as
/// the body of the request `build` makes (the run's method and headers); what is
/// wrong with the list is said as `--body-lines FILE:LINE`.
pub fn body_lines<E: From<InputError>>(
    file: &str,
    text: &[u8],
    build: &dyn Fn(Vec<u8>) -> Result<Request, E>,
) -> Result<Vec<Request>, E> {
    let mut budget = Budget::new();
    let mut out = Vec::new();
    for (n, l) in lines(text) {
        let r = build(l.to_vec())?;
        budget
            .take(&r)
            .map_err(|e| InputError::at(&format!("--body-lines {file}"), n, e))?;
        out.push(r);
    }
    if out.is_empty() {
        return Err(InputError::of(
            format!("--body-lines {file}"),
            "no lines; one request body per line",
        )
        .into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "\
# a comment
GET http://127.0.0.1:9/a?x=1
X-Account-ID: 8675309

DELETE http://127.0.0.1:9/b
Confirmation-Token: 90215
Authorization: Token DEADBEEF
POST http://127.0.0.1:9/things
Content-Type: application/json
@body.json

get http://127.0.0.1:9
";

    #[test]
    fn vegetas_format_reads_as_written() {
        let e = parse("t.txt", FILE).unwrap();
        assert_eq!(e.len(), 4);
        assert_eq!((e[0].line, e[0].method.as_str()), (2, "GET"));
        assert_eq!(e[0].headers, [("X-Account-ID".into(), "8675309".into())]);
        assert_eq!(e[1].headers.len(), 2);
        // The next request may follow its predecessor's headers without a blank line.
        assert_eq!((e[2].line, e[2].method.as_str()), (8, "POST"));
        assert_eq!(e[2].body.as_deref(), Some("body.json"));
        assert_eq!(e[3].method, "GET");
    }

    #[test]
    fn requests_take_their_headers_and_bodies() {
        let mut e = parse("t.txt", FILE).unwrap();
        let body =
            std::env::temp_dir().join(format!("stampede-targets-{}.json", std::process::id()));
        std::fs::write(&body, b"{\"a\":1}").unwrap();
        e[2].body = Some(body.display().to_string());
        let h = [("X-Run".to_string(), "7".to_string())];
        let common = Common {
            headers: &h,
            keepalive: true,
            body: None,
        };
        let groups = requests("t.txt", &e, None, &common);
        let _ = std::fs::remove_file(&body);
        let mut groups = groups.unwrap();
        assert_eq!(groups.len(), 1);
        let Group {
            target: t,
            requests: r,
            places,
        } = groups.pop().unwrap();
        assert_eq!(t.port, 9);
        assert_eq!(places, [0, 1, 2, 3]);
        let wire: Vec<String> = (r.iter())
            .map(|r| String::from_utf8_lossy(&r.bytes).into_owned())
            .collect();
        assert!(
            wire[0].starts_with("GET /a?x=1 HTTP/1.1\r\n"),
            "{}",
            wire[0]
        );
        assert!(wire[0].contains("X-Run: 7\r\n") && wire[0].contains("X-Account-ID: 8675309\r\n"));
        assert!(
            wire[1].starts_with("DELETE /b ")
                && wire[1].contains("Authorization: Token DEADBEEF\r\n")
        );
        assert!(
            wire[2].contains("Content-Length: 7\r\n") && wire[2].ends_with("\r\n\r\n{\"a\":1}")
        );
        assert!(wire[3].starts_with("GET / HTTP/1.1\r\n"), "{}", wire[3]);
    }

    #[test]
    fn mistakes_name_the_file_and_line() {
        let common = Common {
            keepalive: true,
            ..Common::default()
        };
        for (text, want) in [
            ("GET http://127.0.0.1:9/\nnot a header\n", "t.txt:2:"),
            ("/just/a/path\n", "t.txt:1:"),
            (
                "GET http://127.0.0.1:9/\n@a\n@b\n",
                "t.txt:3: a second @body",
            ),
            ("GET http://127.0.0.1:9/\n@a\nX: 1\n", "t.txt:3:"),
            ("# only a comment\n", "t.txt: no requests"),
        ] {
            let e = parse("t.txt", text).unwrap_err();
            assert!(e.to_string().starts_with(want), "{text:?}: {e}");
        }
        let two = "GET http://127.0.0.1:9/\n\nGET http://127.0.0.1:10/\n";
        let e = parse("t.txt", two).unwrap();
        let err = requests("t.txt", &e, Some("/tmp/s.sock"), &common)
            .err()
            .unwrap();
        assert!(
            err.to_string()
                .starts_with("t.txt:3: http://127.0.0.1:10/ is not on")
                && err.to_string().contains("--unix-socket"),
            "{err}"
        );
        let many: String = (0..=MAX_SERVERS)
            .map(|i| format!("GET http://127.0.0.1:{}/\n\n", 1000 + i))
            .collect();
        let e = parse("t.txt", &many).unwrap();
        let err = requests("t.txt", &e, None, &common).err().unwrap();
        let line = format!("t.txt:{}: ", 2 * MAX_SERVERS + 1);
        assert!(
            err.to_string().starts_with(&line) && err.to_string().contains("at most 32"),
            "{err}"
        );
    }

    #[test]
    fn requests_are_grouped_by_server_with_their_places() {
        let common = Common {
            keepalive: true,
            ..Common::default()
        };
        let e = parse(
            "t.txt",
            "GET http://127.0.0.1:9/a\nGET https://127.0.0.1:9/b\nGET http://127.0.0.1:9/c\nGET HTTP://127.0.0.1:10/d\n",
        )
        .unwrap();
        let groups = requests("t.txt", &e, None, &common).unwrap();
        let seen: Vec<(bool, u16, Vec<u32>)> = (groups.iter())
            .map(|g| (g.target.tls, g.target.port, g.places.clone()))
            .collect();
        assert_eq!(
            seen,
            [
                (false, 9, vec![0, 2]),
                (true, 9, vec![1]),
                (false, 10, vec![3])
            ]
        );
        assert_eq!(groups[0].requests[1].target(), "/c");
        let err = one_server("t.txt", "vegeta attack", groups).err().unwrap();
        assert!(
            err.to_string().starts_with("t.txt: names 3 servers (http://127.0.0.1:9/a and https://127.0.0.1:9/b); vegeta attack"),
            "{err}"
        );
    }

    #[test]
    fn a_body_per_line() {
        let t = Target::parse("http://127.0.0.1:9/in").unwrap();
        let build = |b: Vec<u8>| -> Result<Request, InputError> {
            Ok(RequestBuilder::native(&t, "POST", true)
                .body(b)
                .build()
                .unwrap())
        };
        let r = body_lines("b.txt", b"{\"n\":1}\r\n\n{\"n\":22}\n", &build).unwrap();
        assert_eq!(r.len(), 2);
        assert!(r[1].bytes.ends_with(b"Content-Length: 8\r\n\r\n{\"n\":22}"));
        assert!(body_lines("b.txt", b"\n\n", &build)
            .unwrap_err()
            .to_string()
            .contains("no lines"));
    }
}
