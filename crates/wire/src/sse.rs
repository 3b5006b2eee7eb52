//! Server-sent events (`text/event-stream`, the WHATWG HTML standard's event stream
//! format), parsed as bytes arrive, in bounded memory.
//!
//! A stream is lines ended by CRLF, LF or CR. A blank line dispatches the event the
//! lines before it built: `data:` lines append to its data (joined by LF), `event:`
//! names its type, `id:` and unknown fields are ignored, `retry:` with digits only
//! sets the reconnection time, and a line starting with `:` is a comment. An event
//! with no `data:` line dispatches nothing. A byte order mark at the start is
//! skipped. The parser keeps the line being read and the event being built, each at
//! most the size it was given: a longer one is an error, not memory. It does no I/O;
//! the client feeds it a response body's bytes (chunk framing removed) and the
//! server's streams are checked against it in tests.

/// What a stream's bytes dispatched, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SseItem<'a> {
    /// An event: its type (empty: the default, `message`) and its data.
    Event { kind: &'a [u8], data: &'a [u8] },
    /// A comment line (often sent to keep a connection alive).
    Comment,
    /// A `retry:` field: the reconnection time the server asks for, in ms.
    Retry(u64),
}

/// Why a stream cannot be parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SseError {
    /// A line or an event's data grew past the parser's limit.
    TooLarge,
}

impl std::fmt::Display for SseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SseError::TooLarge => f.write_str("an event or a line over the size limit"),
        }
    }
}

impl std::error::Error for SseError {}

/// One event stream's parser state.
#[derive(Debug, Clone)]
pub struct SseParser {
    /// The line read so far when it spans several feeds.
    line: Vec<u8>,
    /// The event being built: its data and its type.
    data: Vec<u8>,
    kind: Vec<u8>,
    has_data: bool,
    /// The last byte fed was CR: an LF first in the next feed belongs to it.
    cr: bool,
    /// Bytes of a byte order mark still possible at the start (3 before any byte).
    bom: u8,
    /// The most a line, or an event's data, may hold.
    max: usize,
}

const BOM: &[u8; 3] = b"\xEF\xBB\xBF";

impl SseParser {
    /// A parser for one stream whose lines and events hold at most `max` bytes.
    pub fn new(max: usize) -> SseParser {
        SseParser {
            line: Vec::new(),
            data: Vec::new(),
            kind: Vec::new(),
            has_data: false,
            cr: false,
            bom: 0,
            max,
        }
    }

    /// Ready for another stream (buffers kept for reuse).
    pub fn reset(&mut self) {
        self.line.clear();
        self.data.clear();
        self.kind.clear();
        self.has_data = false;
        self.cr = false;
        self.bom = 0;
    }

    /// Whether bytes of an event not yet dispatched were read (a stream that ends
    /// here was cut mid-event).
    pub fn mid_event(&self) -> bool {
        self.has_data || !self.line.is_empty()
    }

    /// Parses `bytes`, the stream's next ones, calling `on` for each item they
    /// complete. After an error the stream is broken: feed no more of it.
    pub fn feed(
        &mut self,
        mut bytes: &[u8],
        on: &mut impl FnMut(SseItem<'_>),
    ) -> Result<(), SseError> {
        while self.bom < 3 && !bytes.is_empty() {
            if bytes[0] != BOM[self.bom as usize] {
                // Not a byte order mark: the bytes that looked like one are text.
                let seen = self.bom as usize;
                self.bom = 3;
                if seen > 0 {
                    self.push_part(&BOM[..seen])?;
                }
                break;
            }
            bytes = &bytes[1..];
            self.bom += 1;
        }
        if self.cr && !bytes.is_empty() {
            self.cr = false;
            if bytes[0] == b'\n' {
                bytes = &bytes[1..];
            }
        }
        while !bytes.is_empty() {
            let Some(i) = bytes.iter().position(|&b| b == b'\n' || b == b'\r') else {
                return self.push_part(bytes);
            };
            if self.line.is_empty() {
                // A whole line within these bytes is held to the limit as one that
                // spans several feeds is.
                if i > self.max {
                    return Err(SseError::TooLarge);
                }
                self.line_done(&bytes[..i], on)?;
            } else {
                self.push_part(&bytes[..i])?;
                let line = std::mem::take(&mut self.line);
                let r = self.line_done(&line, on);
                self.line = line;
                self.line.clear();
                r?;
            }
            let cr = bytes[i] == b'\r';
            bytes = &bytes[i + 1..];
            if cr {
                match bytes.first() {
                    Some(b'\n') => bytes = &bytes[1..],
                    Some(_) => {}
                    None => self.cr = true,
                }
            }
        }
        Ok(())
    }

    fn push_part(&mut self, part: &[u8]) -> Result<(), SseError> {
        if self.line.len() + part.len() > self.max {
            return Err(SseError::TooLarge);
        }
        self.line.extend_from_slice(part);
        Ok(())
    }

    fn line_done(&mut self, line: &[u8], on: &mut impl FnMut(SseItem<'_>)) -> Result<(), SseError> {
        if line.is_empty() {
            if self.has_data {
                // The data's last LF is not part of it.
                let data = &self.data[..self.data.len() - 1];
                on(SseItem::Event {
                    kind: &self.kind,
                    data,
                });
            }
            self.data.clear();
            self.kind.clear();
            self.has_data = false;
            return Ok(());
        }
        if line[0] == b':' {
            on(SseItem::Comment);
            return Ok(());
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(c) => {
                let v = &line[c + 1..];
                (&line[..c], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &[][..]),
        };
        match field {
            b"data" => {
                if self.data.len() + value.len() + 1 > self.max {
                    return Err(SseError::TooLarge);
                }
                self.data.extend_from_slice(value);
                self.data.push(b'\n');
                self.has_data = true;
            }
            b"event" => {
                self.kind.clear();
                self.kind.extend_from_slice(value);
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                let ms = value.iter().fold(0u64, |n, d| {
                    n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
                });
                on(SseItem::Retry(ms));
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    enum Got {
        Event(String, String),
        Comment,
        Retry(u64),
    }

    fn parse_split(stream: &[u8], max: usize, split: usize) -> Result<Vec<Got>, SseError> {
        let mut p = SseParser::new(max);
        let mut got = Vec::new();
        let mut on = |item: SseItem<'_>| {
            got.push(match item {
                SseItem::Event { kind, data } => Got::Event(
                    String::from_utf8_lossy(kind).into_owned(),
                    String::from_utf8_lossy(data).into_owned(),
                ),
                SseItem::Comment => Got::Comment,
                SseItem::Retry(ms) => Got::Retry(ms),
            })
        };
        for part in stream.chunks(split.max(1)) {
            p.feed(part, &mut on)?;
        }
        Ok(got)
    }

    /// Parses `stream` whole and split at every size; every split must agree.
    fn parse(stream: &[u8]) -> Vec<Got> {
        let whole = parse_split(stream, 1 << 20, stream.len()).unwrap();
        for split in 1..stream.len() {
            assert_eq!(
                parse_split(stream, 1 << 20, split).unwrap(),
                whole,
                "split {split}"
            );
        }
        whole
    }

    fn ev(kind: &str, data: &str) -> Got {
        Got::Event(kind.into(), data.into())
    }

    #[test]
    fn events_are_dispatched_by_blank_lines_with_their_data_joined() {
        let got = parse(b"data: one\n\ndata:two\ndata: lines\n\n: ping\nevent: add\ndata: 3\n\n");
        assert_eq!(
            got,
            vec![
                ev("", "one"),
                ev("", "two\nlines"),
                Got::Comment,
                ev("add", "3")
            ]
        );
        // The type lasts for its event only.
        assert_eq!(
            parse(b"event: x\ndata: a\n\ndata: b\n\n"),
            vec![ev("x", "a"), ev("", "b")]
        );
    }

    #[test]
    fn every_line_ending_is_one_and_a_bom_is_skipped() {
        let want = vec![ev("", "a"), ev("", "b"), ev("", "c")];
        assert_eq!(parse(b"data: a\r\n\r\ndata: b\r\rdata: c\n\n"), want);
        assert_eq!(
            parse(b"\xEF\xBB\xBFdata: a\n\ndata: b\n\ndata: c\n\n"),
            want
        );
        // Bytes that only begin like a mark are text (a field nobody knows).
        assert_eq!(parse(b"\xEF\xBBdata: a\n\ndata: b\n\n"), vec![ev("", "b")]);
    }

    #[test]
    fn fields_without_data_dispatch_nothing_and_retry_takes_digits_only() {
        assert_eq!(
            parse(b"event: only\n\nid: 7\nretry: 3000\nretry: 3s\nunknown: x\ndata\n\n"),
            vec![Got::Retry(3000), ev("", "")]
        );
        // An empty data line still makes an event (of empty data); a stream cut
        // before the blank line dispatches nothing.
        let mut p = SseParser::new(64);
        let mut n = 0;
        p.feed(b"data: [DONE]\n", &mut |_| n += 1).unwrap();
        assert!(p.mid_event());
        assert_eq!(n, 0);
        p.reset();
        assert!(!p.mid_event());
    }

    #[test]
    fn a_line_or_an_event_over_the_limit_is_an_error_not_memory() {
        assert_eq!(
            parse_split(&[b'x'; 100], 64, 7).unwrap_err(),
            SseError::TooLarge
        );
        // A long line fed whole, ended in the same bytes, is held to the limit too
        // (an event type longer than it would otherwise be kept).
        let long = [b"event: ".as_slice(), &[b'x'; 100], b"\ndata: a\n\n"].concat();
        assert_eq!(
            parse_split(&long, 64, long.len()).unwrap_err(),
            SseError::TooLarge
        );
        // Many short data lines that add up past the limit.
        let stream = b"data: 0123456789\n".repeat(10);
        assert_eq!(parse_split(&stream, 64, 5).unwrap_err(), SseError::TooLarge);
        // At the limit is fine.
        assert_eq!(
            parse_split(b"data: 123456789\n\n", 16, 3).unwrap(),
            vec![ev("", "123456789")]
        );
    }
}
