//! Printing what a run sends and receives as it happens, as ab's `-v 2`…`-v 4` and
//! httperf's `--print-request`/`--print-reply` do. The printers are hooks that only
//! watch (see `stampede_engine::hooks`): the requests, their pacing and the report are
//! those of the same run without them. Each event's lines go to stdout in one write,
//! so lines from several worker threads never interleave within an event.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use stampede_engine::hooks::request_spans;
use stampede_engine::{Flow, Hooks, Reply, ThreadHooks, ThreadHooksSource};

use crate::common::Exit;

/// Which parts of a request or reply httperf prints.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Parts {
    pub header: bool,
    pub body: bool,
}

impl Parts {
    /// httperf's `--print-request[=header|body]` (no value: both), for `flag`.
    pub fn parse(flag: &str, value: &str) -> Result<Parts, Exit> {
        match value {
            "" => Ok(Parts {
                header: true,
                body: true,
            }),
            "header" => Ok(Parts {
                header: true,
                body: false,
            }),
            "body" => Ok(Parts {
                header: false,
                body: true,
            }),
            v => Err(Exit::usage(format!(
                "{flag}: {v:?} is not a part; write {flag} (header and body), {flag}=header or {flag}=body"
            ))),
        }
    }

    fn any(self) -> bool {
        self.header || self.body
    }
}

/// What is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// ab's verbosity: from 2, replies other than 2xx; from 3, every reply's code;
    /// from 4, every reply's head too.
    Ab(u32),
    /// httperf's printers, each call numbered: request lines `SH`/`SB` and summary
    /// `SS`, reply lines `RH`/`RB` and summary `RS`.
    Httperf { request: Parts, reply: Parts },
}

/// The hooks that print, or `None` when the style prints nothing.
pub fn hooks(style: Style) -> Option<Hooks> {
    let prints = match style {
        Style::Ab(v) => v >= 2,
        Style::Httperf { request, reply } => request.any() || reply.any(),
    };
    prints.then(|| {
        Hooks(Arc::new(Watch {
            style,
            serial: Arc::new(AtomicU64::new(0)),
        }))
    })
}

struct Watch {
    style: Style,
    /// httperf's call numbers, shared by every thread.
    serial: Arc<AtomicU64>,
}

impl ThreadHooksSource for Watch {
    fn thread(&self, _index: usize) -> Box<dyn ThreadHooks> {
        Box::new(ThreadWatch {
            style: self.style,
            serial: self.serial.clone(),
            calls: Vec::new(),
        })
    }

    fn observes_only(&self) -> bool {
        true
    }
}

struct ThreadWatch {
    style: Style,
    serial: Arc<AtomicU64>,
    /// For each connection slot, the numbers of its calls not yet answered, in order.
    calls: Vec<VecDeque<u64>>,
}

impl ThreadWatch {
    fn slot(&mut self, conn: usize) -> &mut VecDeque<u64> {
        if self.calls.len() <= conn {
            self.calls.resize_with(conn + 1, VecDeque::new);
        }
        &mut self.calls[conn]
    }
}

impl ThreadHooks for ThreadWatch {
    fn builds_requests(&self) -> bool {
        false
    }
    fn wants_responses(&self) -> bool {
        // Replies are kept (head and body copied) only when some part is printed.
        match self.style {
            Style::Ab(_) => true,
            Style::Httperf { reply, .. } => reply.any(),
        }
    }
    fn has_delay(&self) -> bool {
        false
    }
    fn address(&self) -> Option<std::net::SocketAddr> {
        None
    }
    fn request(&mut self, _out: &mut Vec<u8>) -> Flow {
        Flow::Go
    }
    fn response(&mut self, reply: &Reply) -> Flow {
        let out = match self.style {
            Style::Ab(v) => ab_reply(v, reply.status, reply.head, reply.body),
            Style::Httperf { reply: parts, .. } => {
                let Some(id) = self.slot(reply.conn).pop_front() else {
                    return Flow::Go;
                };
                httperf_reply(parts, id, reply)
            }
        };
        emit(&out);
        Flow::Go
    }
    fn delay(&mut self) -> (Duration, Flow) {
        (Duration::ZERO, Flow::Go)
    }
    fn watches_sends(&self) -> bool {
        matches!(self.style, Style::Httperf { .. })
    }
    fn sent(&mut self, conn: usize, requests: &[u8]) {
        let Style::Httperf {
            request: parts,
            reply,
        } = self.style
        else {
            return;
        };
        // The engine writes whole requests it built itself; a batch it could not split
        // is still numbered as one call so replies keep their numbers.
        let spans = request_spans(requests).unwrap_or_else(|_| vec![(requests.len(), 0)]);
        let mut out = Vec::new();
        let mut at = 0;
        for (head, body) in spans {
            let id = self.serial.fetch_add(1, Ordering::Relaxed);
            // A reply takes its call's number only when replies are printed.
            if reply.any() {
                self.slot(conn).push_back(id);
            }
            if parts.any() {
                httperf_request(
                    parts,
                    id,
                    &requests[at..at + head],
                    &requests[at + head..at + head + body],
                    &mut out,
                );
            }
            at += head + body;
        }
        emit(&out);
    }
    fn gone(&mut self, conn: usize) {
        self.slot(conn).clear();
    }
}

fn emit(bytes: &[u8]) {
    if bytes.is_empty() {
        return;
    }
    let mut o = std::io::stdout().lock();
    // A closed stdout (a pager quit early) must not stop the run.
    let _ = o.write_all(bytes);
    let _ = o.flush();
}

/// What ab's read buffer holds at most (`CBUFFSIZE` less its terminating NUL): at
/// `-v 4` it prints the reply's first bytes up to this many.
const AB_BUFFER: usize = 8191;

/// ab's lines for a reply: at `-v 4` what its buffer held when the head was complete
/// (the head and the body's first bytes, as a C string), then from `-v 2` a warning
/// for a code other than 2xx, or from `-v 3` the 2xx code.
fn ab_reply(verbosity: u32, status: u16, head: &[u8], body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    if verbosity >= 4 {
        out.extend_from_slice(b"LOG: header received:\n");
        let held = head.iter().chain(body).take(AB_BUFFER);
        out.extend(held.take_while(|&&b| b != 0));
        out.push(b'\n');
    }
    if !(200..300).contains(&status) {
        out.extend_from_slice(format!("WARNING: Response code not 2xx ({status})\n").as_bytes());
    } else if verbosity >= 3 {
        out.extend_from_slice(format!("LOG: Response code = {status}\n").as_bytes());
    }
    out
}

/// httperf's lines for one request: its head's lines (`SH`), its body's (`SB`), then
/// the summary (`SS`).
fn httperf_request(parts: Parts, id: u64, head: &[u8], body: &[u8], out: &mut Vec<u8>) {
    if parts.header {
        lines(b"SH", id, head, out);
    }
    if parts.body {
        lines(b"SB", id, body, out);
    }
    out.extend_from_slice(
        format!("SS{id}: header {} content {}\n", head.len(), body.len()).as_bytes(),
    );
}

/// httperf's lines for one reply: its head's lines (`RH`), its body's (`RB`), then
/// the summary (`RS`).
fn httperf_reply(parts: Parts, id: u64, reply: &Reply) -> Vec<u8> {
    let mut out = Vec::new();
    if parts.header {
        lines(b"RH", id, reply.head, &mut out);
    }
    if parts.body {
        lines(b"RB", id, reply.body, &mut out);
    }
    out.extend_from_slice(
        format!(
            "RS{id}: header {} content {} footer 0\n",
            reply.head.len(),
            reply.body.len()
        )
        .as_bytes(),
    );
    out
}

/// Each line of `bytes` (split at `\n`, which is dropped; a `\r` before it stays, as
/// httperf prints it) as `PREFIX<id>:line`; a last line without `\n` is printed too.
fn lines(prefix: &[u8], id: u64, bytes: &[u8], out: &mut Vec<u8>) {
    let mut tag = prefix.to_vec();
    tag.extend_from_slice(format!("{id}:").as_bytes());
    let mut rest = bytes;
    while !rest.is_empty() {
        let end = rest.iter().position(|&b| b == b'\n');
        let line = &rest[..end.unwrap_or(rest.len())];
        out.extend_from_slice(&tag);
        out.extend_from_slice(line);
        out.push(b'\n');
        rest = match end {
            Some(e) => &rest[e + 1..],
            None => &[],
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ab_prints_by_verbosity() {
        let head = b"HTTP/1.1 200 OK\r\nServer: x\r\n\r\n";
        assert_eq!(ab_reply(2, 200, head, b"hi"), b"");
        assert_eq!(ab_reply(3, 200, head, b"hi"), b"LOG: Response code = 200\n");
        assert_eq!(
            ab_reply(4, 200, head, b"hi"),
            &b"LOG: header received:\nHTTP/1.1 200 OK\r\nServer: x\r\n\r\nhi\nLOG: Response code = 200\n"[..]
        );
        // ab's buffer: at most 8191 bytes, and a C string ends at a NUL.
        let long = vec![b'a'; 10_000];
        assert_eq!(ab_reply(4, 200, head, &long).len(), 22 + AB_BUFFER + 1 + 25);
        assert_eq!(
            ab_reply(4, 200, head, b"x\0y"),
            &b"LOG: header received:\nHTTP/1.1 200 OK\r\nServer: x\r\n\r\nx\nLOG: Response code = 200\n"[..]
        );
        let head = b"HTTP/1.1 404 Not Found\r\n\r\n";
        assert_eq!(
            ab_reply(2, 404, head, b""),
            b"WARNING: Response code not 2xx (404)\n"
        );
        assert_eq!(
            ab_reply(3, 301, b"HTTP/1.1 301 Moved\r\n\r\n", b""),
            b"WARNING: Response code not 2xx (301)\n"
        );
    }

    #[test]
    fn httperf_numbers_lines_and_sums_up() {
        let mut out = Vec::new();
        httperf_request(
            Parts {
                header: true,
                body: true,
            },
            7,
            b"POST /a HTTP/1.1\r\nContent-Length: 4\r\n\r\n",
            b"ab\ncd",
            &mut out,
        );
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "SH7:POST /a HTTP/1.1\r\nSH7:Content-Length: 4\r\nSH7:\r\nSB7:ab\nSB7:cd\nSS7: header 39 content 5\n"
        );
        let reply = Reply {
            conn: 0,
            status: 200,
            head: b"HTTP/1.1 200 OK\r\n\r\n",
            headers: &[],
            body: b"hi",
        };
        let header_only = Parts {
            header: true,
            body: false,
        };
        assert_eq!(
            String::from_utf8(httperf_reply(header_only, 3, &reply)).unwrap(),
            "RH3:HTTP/1.1 200 OK\r\nRH3:\r\nRS3: header 19 content 2 footer 0\n"
        );
    }

    #[test]
    fn replies_take_their_calls_numbers_per_connection() {
        let mut w = ThreadWatch {
            style: Style::Httperf {
                request: Parts::default(),
                reply: Parts {
                    header: true,
                    body: false,
                },
            },
            serial: Arc::new(AtomicU64::new(0)),
            calls: Vec::new(),
        };
        let get = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
        w.sent(2, &[&get[..], get].concat());
        w.sent(0, get);
        assert_eq!(w.calls[2], [0, 1]);
        assert_eq!(w.calls[0], [2]);
        w.gone(2);
        w.sent(2, get);
        assert_eq!(w.calls[2], [3]);
        assert!(w.wants_responses());
        // Requests printed alone: calls are numbered, replies neither kept nor paired.
        w.style = Style::Httperf {
            request: Parts {
                header: true,
                body: false,
            },
            reply: Parts::default(),
        };
        w.sent(1, get);
        assert!(!w.wants_responses());
        assert!(w.calls.get(1).is_none_or(|c| c.is_empty()));
        assert_eq!(w.serial.load(Ordering::Relaxed), 5);
    }

    #[test]
    fn parts_are_read_as_httperf_reads_them() {
        let both = Parts {
            header: true,
            body: true,
        };
        assert_eq!(Parts::parse("--print-reply", "").unwrap(), both);
        assert!(Parts::parse("--print-reply", "header").unwrap().header);
        assert!(!Parts::parse("--print-reply", "body").unwrap().header);
        let e = Parts::parse("--print-reply", "all").unwrap_err();
        assert!(
            e.message.starts_with("--print-reply: \"all\""),
            "{}",
            e.message
        );
        assert!(hooks(Style::Ab(1)).is_none());
        assert!(hooks(Style::Ab(2)).is_some());
    }
}
