//! One exchange printed as it happens, as ab's `-v 2`…`-v 4` ([`ab_reply`]) and
//! httperf's `--print-request`/`--print-reply` ([`httperf_request`],
//! [`httperf_reply`]) print it: the lines, byte for byte, that the CLI's watching
//! hooks write for each request and reply.

use stampede_engine::Reply;

/// Which parts of a request or reply httperf prints.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Parts {
    pub header: bool,
    pub body: bool,
}

impl Parts {
    /// Whether anything is printed.
    pub fn any(self) -> bool {
        self.header || self.body
    }
}

/// What ab's read buffer holds at most (`CBUFFSIZE` less its terminating NUL): at
/// `-v 4` it prints the reply's first bytes up to this many.
pub const AB_BUFFER: usize = 8191;

/// ab's lines for a reply: at `-v 4` what its buffer held when the head was complete
/// (the head and the body's first bytes, as a C string), then from `-v 2` a warning
/// for a code other than 2xx, or from `-v 3` the 2xx code.
pub fn ab_reply(verbosity: u32, status: u16, head: &[u8], body: &[u8]) -> Vec<u8> {
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
pub fn httperf_request(parts: Parts, id: u64, head: &[u8], body: &[u8], out: &mut Vec<u8>) {
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
pub fn httperf_reply(parts: Parts, id: u64, reply: &Reply) -> Vec<u8> {
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
            headers: &stampede_engine::Fields::default(),
            body: b"hi",
            cut: false,
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
}
