//! Printing what a run sends and receives as it happens, as ab's `-v 2`…`-v 4` and
//! httperf's `--print-request`/`--print-reply` do (their lines rendered by
//! `stampede_report::exchange`). The printers are hooks that only watch (see `stampede_engine::hooks`): the requests, their pacing and the report are
//! those of the same run without them. Each event's lines go to stdout in one write,
//! so lines from several worker threads never interleave within an event.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use stampede_engine::hooks::request_spans;
use stampede_engine::{Flow, Hooks, Reply, ThreadHooks, ThreadHooksSource};
pub use stampede_report::exchange::Parts;
use stampede_report::exchange::{ab_reply, httperf_reply, httperf_request};

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
    fn request(&mut self, _conn: usize, _out: &mut Vec<u8>) -> Flow {
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
    fn delay(&mut self, _conn: usize) -> (Duration, Flow) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ab_prints_from_verbosity_two() {
        for (v, watched) in [(0, false), (1, false), (2, true), (3, true), (4, true)] {
            assert_eq!(hooks(Style::Ab(v)).is_some(), watched, "-v {v}");
        }
        let quiet = Style::Httperf {
            request: Parts::default(),
            reply: Parts::default(),
        };
        assert!(hooks(quiet).is_none());
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
}
