//! Header blocks over HEADERS and CONTINUATION frames (RFC 9113 §4.3, §6.2, §6.10),
//! assembled one way for both ends.
//!
//! A block opens with HEADERS and, without END_HEADERS, goes on in CONTINUATION
//! frames on the same stream with nothing between them. [`Assembler`] takes those two
//! frame types, strips padding and the priority fields, checks the sequence, and
//! hands back each complete block; it bounds what a peer can make it hold (bytes, and
//! frames, since empty CONTINUATIONs cost nothing in size but still have to be read).
//! What the fields mean is the connection's business.

use std::borrow::Cow;
use std::fmt;

use crate::frame::{
    self, Head, CONTINUATION, END_HEADERS, END_STREAM, ENHANCE_YOUR_CALM, FRAME_SIZE_ERROR,
    HEADERS, PRIORITY_FLAG, PROTOCOL_ERROR,
};

/// How much one block may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Bytes a block may grow to while it is not yet complete.
    pub max_bytes: usize,
    /// CONTINUATION frames one block may take.
    pub max_continuations: u32,
}

/// A complete header block.
#[derive(Debug, PartialEq, Eq)]
pub struct Block<'a> {
    /// Its stream.
    pub stream: u32,
    /// The HEADERS frame had END_STREAM: no body follows.
    pub end_stream: bool,
    /// The stream the priority fields name as its parent, if HEADERS carried them.
    pub depends_on: Option<u32>,
    /// The field block, padding and priority removed (borrowed from a lone HEADERS
    /// frame, owned once CONTINUATIONs were joined).
    pub fields: Cow<'a, [u8]>,
}

/// Why a frame breaks the header-block rules: a connection error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockError {
    /// A frame other than CONTINUATION came while a block was open.
    Interrupted,
    /// HEADERS on stream 0.
    StreamZero,
    /// CONTINUATION with no block open.
    NoHeaders,
    /// CONTINUATION on another stream than the block's.
    OtherStream,
    /// The padding is malformed.
    Padding(&'static str),
    /// HEADERS too short for the priority fields its flag announces.
    ShortPriority,
    /// The block grew past [`Bounds::max_bytes`] without ending.
    TooLarge(usize),
    /// The block took more than [`Bounds::max_continuations`] CONTINUATION frames.
    TooManyFrames(u32),
}

impl BlockError {
    /// What was wrong, in words that name no figure (for a fixed log line).
    pub fn reason(&self) -> &'static str {
        match self {
            BlockError::Interrupted => "a header block was interrupted",
            BlockError::StreamZero => "HEADERS on stream 0",
            BlockError::NoHeaders => "CONTINUATION without HEADERS",
            BlockError::OtherStream => "CONTINUATION on another stream",
            BlockError::Padding(why) => why,
            BlockError::ShortPriority => "a HEADERS frame too short for its priority",
            BlockError::TooLarge(_) => "a header block beyond the limit",
            BlockError::TooManyFrames(_) => "a header block of too many CONTINUATION frames",
        }
    }

    /// The error code a GOAWAY for it carries.
    pub fn code(&self) -> u32 {
        match self {
            BlockError::ShortPriority => FRAME_SIZE_ERROR,
            BlockError::TooManyFrames(_) => ENHANCE_YOUR_CALM,
            _ => PROTOCOL_ERROR,
        }
    }
}

impl fmt::Display for BlockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BlockError::Interrupted => f.write_str("a header block was interrupted"),
            BlockError::StreamZero => f.write_str("HEADERS on stream 0"),
            BlockError::NoHeaders => f.write_str("CONTINUATION without HEADERS"),
            BlockError::OtherStream => f.write_str("CONTINUATION on another stream"),
            BlockError::Padding(why) => f.write_str(why),
            BlockError::ShortPriority => f.write_str("a HEADERS frame too short for its priority"),
            BlockError::TooLarge(max) => {
                write!(f, "a header block past {} KiB", max / 1024)
            }
            BlockError::TooManyFrames(max) => {
                write!(f, "a header block of more than {max} CONTINUATION frames")
            }
        }
    }
}

impl std::error::Error for BlockError {}

/// A block waiting for its CONTINUATIONs.
#[derive(Debug)]
struct Open {
    stream: u32,
    end_stream: bool,
    depends_on: Option<u32>,
    fields: Vec<u8>,
    continuations: u32,
}

/// One connection's header-block state.
#[derive(Debug)]
pub struct Assembler {
    bounds: Bounds,
    open: Option<Open>,
}

impl Assembler {
    /// An assembler that holds blocks within `bounds`.
    pub fn new(bounds: Bounds) -> Assembler {
        Assembler { bounds, open: None }
    }

    /// A block is open: only CONTINUATION on its stream may come next.
    #[inline]
    pub fn in_block(&self) -> bool {
        self.open.is_some()
    }

    /// Checks a frame of any type against an open block: call it first for every
    /// frame. HEADERS and CONTINUATION then go to [`Assembler::frame`].
    #[inline]
    pub fn check(&self, kind: u8) -> Result<(), BlockError> {
        if self.open.is_some() && kind != CONTINUATION {
            return Err(BlockError::Interrupted);
        }
        Ok(())
    }

    /// Takes a HEADERS or CONTINUATION frame; returns the block it completes, if any.
    #[inline]
    pub fn frame<'a>(
        &mut self,
        h: Head,
        payload: &'a [u8],
    ) -> Result<Option<Block<'a>>, BlockError> {
        self.check(h.kind)?;
        if h.kind == HEADERS {
            self.headers(h, payload)
        } else {
            self.continuation(h, payload)
        }
    }

    #[inline]
    fn headers<'a>(&mut self, h: Head, payload: &'a [u8]) -> Result<Option<Block<'a>>, BlockError> {
        if h.stream == 0 {
            return Err(BlockError::StreamZero);
        }
        let mut fields = frame::unpad(h.flags, payload).map_err(BlockError::Padding)?;
        let mut depends_on = None;
        if h.flags & PRIORITY_FLAG != 0 {
            let dep = fields.get(..4).ok_or(BlockError::ShortPriority)?;
            depends_on = Some(u32::from_be_bytes([dep[0], dep[1], dep[2], dep[3]]) & 0x7fff_ffff);
            fields = fields.get(5..).ok_or(BlockError::ShortPriority)?;
        }
        let end_stream = h.flags & END_STREAM != 0;
        if h.flags & END_HEADERS != 0 {
            return Ok(Some(Block {
                stream: h.stream,
                end_stream,
                depends_on,
                fields: Cow::Borrowed(fields),
            }));
        }
        if fields.len() > self.bounds.max_bytes {
            return Err(BlockError::TooLarge(self.bounds.max_bytes));
        }
        self.open = Some(Open {
            stream: h.stream,
            end_stream,
            depends_on,
            fields: fields.to_vec(),
            continuations: 0,
        });
        Ok(None)
    }

    #[cold]
    #[inline(never)]
    fn continuation<'a>(
        &mut self,
        h: Head,
        payload: &'a [u8],
    ) -> Result<Option<Block<'a>>, BlockError> {
        let open = self.open.as_mut().ok_or(BlockError::NoHeaders)?;
        if open.stream != h.stream {
            return Err(BlockError::OtherStream);
        }
        open.fields.extend_from_slice(payload);
        open.continuations += 1;
        if h.flags & END_HEADERS != 0 {
            let open = self.open.take().expect("open");
            return Ok(Some(Block {
                stream: open.stream,
                end_stream: open.end_stream,
                depends_on: open.depends_on,
                fields: Cow::Owned(open.fields),
            }));
        }
        if open.fields.len() > self.bounds.max_bytes {
            return Err(BlockError::TooLarge(self.bounds.max_bytes));
        }
        if open.continuations >= self.bounds.max_continuations {
            return Err(BlockError::TooManyFrames(self.bounds.max_continuations));
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{PADDED, PRIORITY};

    const BOUNDS: Bounds = Bounds {
        max_bytes: 100,
        max_continuations: 3,
    };

    fn head(kind: u8, flags: u8, stream: u32, len: usize) -> Head {
        Head {
            len,
            kind,
            flags,
            stream,
        }
    }

    #[test]
    fn a_lone_headers_frame_is_a_block() {
        let mut a = Assembler::new(BOUNDS);
        // Padded, with priority naming stream 7.
        let payload = [&[2u8][..], &[0, 0, 0, 7, 16], b"abc", &[0, 0]].concat();
        let b = a
            .frame(
                head(
                    HEADERS,
                    END_HEADERS | END_STREAM | PADDED | PRIORITY_FLAG,
                    3,
                    0,
                ),
                &payload,
            )
            .unwrap()
            .unwrap();
        assert_eq!(
            b,
            Block {
                stream: 3,
                end_stream: true,
                depends_on: Some(7),
                fields: Cow::Borrowed(&b"abc"[..]),
            }
        );
        assert!(!a.in_block());
    }

    #[test]
    fn continuations_join_in_order() {
        let mut a = Assembler::new(BOUNDS);
        assert_eq!(a.frame(head(HEADERS, 0, 5, 0), b"ab"), Ok(None));
        assert!(a.in_block());
        assert_eq!(a.check(PRIORITY), Err(BlockError::Interrupted));
        assert_eq!(a.frame(head(CONTINUATION, 0, 5, 0), b"cd"), Ok(None));
        let b = a
            .frame(head(CONTINUATION, END_HEADERS, 5, 0), b"e")
            .unwrap()
            .unwrap();
        assert_eq!(&b.fields[..], b"abcde");
        assert!(!b.end_stream && !a.in_block());
    }

    #[test]
    fn the_sequence_and_the_bounds_are_enforced() {
        let mut a = Assembler::new(BOUNDS);
        assert_eq!(
            a.frame(head(CONTINUATION, END_HEADERS, 1, 0), b""),
            Err(BlockError::NoHeaders)
        );
        assert_eq!(
            a.frame(head(HEADERS, END_HEADERS, 0, 0), b""),
            Err(BlockError::StreamZero)
        );
        assert_eq!(
            a.frame(head(HEADERS, PRIORITY_FLAG, 1, 0), b"abc"),
            Err(BlockError::ShortPriority)
        );
        assert_eq!(BlockError::ShortPriority.code(), FRAME_SIZE_ERROR);
        a.frame(head(HEADERS, 0, 1, 0), b"").unwrap();
        assert_eq!(
            a.frame(head(CONTINUATION, 0, 3, 0), b""),
            Err(BlockError::OtherStream)
        );
        let mut a = Assembler::new(BOUNDS);
        a.frame(head(HEADERS, 0, 1, 0), b"").unwrap();
        for _ in 0..2 {
            assert_eq!(a.frame(head(CONTINUATION, 0, 1, 0), b""), Ok(None));
        }
        let e = a.frame(head(CONTINUATION, 0, 1, 0), b"").unwrap_err();
        assert_eq!(
            (e.clone(), e.code()),
            (BlockError::TooManyFrames(3), ENHANCE_YOUR_CALM)
        );
        let mut a = Assembler::new(BOUNDS);
        a.frame(head(HEADERS, 0, 1, 0), &[0; 60]).unwrap();
        assert_eq!(
            a.frame(head(CONTINUATION, 0, 1, 0), &[0; 60]),
            Err(BlockError::TooLarge(100))
        );
        assert_eq!(
            Assembler::new(BOUNDS).frame(head(HEADERS, 0, 1, 0), &[0; 101]),
            Err(BlockError::TooLarge(100))
        );
    }
}
