//! One size policy for every file stampede reads: each kind of input has a ceiling,
//! checked while reading (a file is never read past its ceiling, so `/dev/zero` or a
//! pipe that never ends costs no more than the ceiling), and the error names the file,
//! what it was read as and the ceiling.
//!
//! | kind | ceiling | read as |
//! |---|---|---|
//! | [`Input::Config`] | 16 MiB | a saved spec, a plan, a Lua script, a certificate or key |
//! | [`Input::List`] | 256 MiB | a targets file, h2load's `-i`, a timing script, httperf's `--wlog`/`--wsesslog`, `--body-lines` |
//! | [`Input::Body`] | 256 MiB | one request body (`@file`, `-p`/`-u`, `--body`) |
//! | [`Input::Result`] | 1 GiB | a result or an interval log given to `merge` |
//! | [`Input::Tokenizer`] | 64 MiB | a model's `tokenizer.json` (`--tokenizer`) |
//!
//! What a file becomes in memory is bounded as well where it grows past the file's
//! size: the requests built from a targets file or `--body-lines` together take at most
//! [`MAX_BUILT_REQUESTS`] bytes.

use std::io::Read;

/// What an input is read as, and so its ceiling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// A saved spec, a plan, a script, a certificate or key.
    Config,
    /// A list of requests, URLs or sessions.
    List,
    /// One request body.
    Body,
    /// A result (JSON) or an interval log.
    Result,
    /// A model's `tokenizer.json`.
    Tokenizer,
}

impl Input {
    /// The most bytes read for this kind of input.
    pub const fn limit(self) -> u64 {
        match self {
            Input::Config => 16 << 20,
            Input::List | Input::Body => 256 << 20,
            Input::Result => 1 << 30,
            Input::Tokenizer => 64 << 20,
        }
    }
}

/// The most bytes the requests built from one list (a targets file's or
/// `--body-lines`') may take together.
pub const MAX_BUILT_REQUESTS: u64 = 1 << 30;

/// `n` bytes in MiB or GiB for a message: `256 MiB`.
pub fn size(n: u64) -> String {
    if n >= 1 << 30 && n.is_multiple_of(1 << 30) {
        format!("{} GiB", n >> 30)
    } else {
        format!("{} MiB", n.div_ceil(1 << 20))
    }
}

/// Why an input could not be read. Its message begins with what the input was read
/// as (`--targets: …`), so that it names the flag.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The file could not be opened or read.
    #[error("{what}: cannot read {path}: {source}")]
    Read {
        /// What it was read as (`--targets`, `plan`).
        what: String,
        /// The path as given.
        path: String,
        /// The system's error.
        source: std::io::Error,
    },
    /// Longer than its kind's ceiling.
    #[error("{what}: {path} is larger than {}, the most stampede reads as a {}", size(kind.limit()), kind.noun())]
    TooLarge {
        /// What it was read as.
        what: String,
        /// The path as given.
        path: String,
        /// Its kind, and so its ceiling.
        kind: Input,
    },
    /// Not UTF-8 where text was expected.
    #[error("{what}: {path} is not UTF-8 text: {source}")]
    NotText {
        /// What it was read as.
        what: String,
        /// The path as given.
        path: String,
        /// Where the text stops being UTF-8.
        source: std::string::FromUtf8Error,
    },
}

impl Input {
    fn noun(self) -> &'static str {
        match self {
            Input::Config => "configuration file",
            Input::List => "list",
            Input::Body => "request body",
            Input::Result => "result",
            Input::Tokenizer => "tokenizer",
        }
    }
}

/// Reads `path` (`-` is standard input) as `kind`; `what` names it in errors (`--targets
/// file`, `plan`).
pub fn read(path: &str, what: &str, kind: Input) -> Result<Vec<u8>, InputError> {
    let limit = kind.limit();
    let mut out = Vec::new();
    let fail = |source: std::io::Error| InputError::Read {
        what: what.to_string(),
        path: path.to_string(),
        source,
    };
    let too_large = || InputError::TooLarge {
        what: what.to_string(),
        path: path.to_string(),
        kind,
    };
    let (reader, size): (Box<dyn Read>, Option<u64>) = if path == "-" {
        (Box::new(std::io::stdin().lock()), None)
    } else {
        let f = std::fs::File::open(path).map_err(fail)?;
        let size = (f.metadata().ok()).filter(|m| m.is_file()).map(|m| m.len());
        (Box::new(f), size)
    };
    let mut reader = reader.take(limit + 1);
    match size {
        // A regular file says its size: over the ceiling it is refused unread; within
        // it, it is read into a buffer of that size.
        Some(n) if n > limit => return Err(too_large()),
        Some(n) => {
            out.reserve_exact(n as usize + 1);
            reader.read_to_end(&mut out).map_err(fail)?;
        }
        // A pipe or a device says nothing: it is read in fixed chunks, so that memory
        // never passes the ceiling by more than a chunk (a growing buffer would double
        // past it, and hold the old one while copying).
        None => match read_chunked(&mut reader, limit).map_err(fail)? {
            Some(all) => out = all,
            None => return Err(too_large()),
        },
    }
    if out.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(out)
}

/// The chunks [`read_chunked`] reads in.
const CHUNK: usize = 1 << 20;

/// Everything `r` yields, read in [`CHUNK`]-sized pieces and joined once at the end,
/// each piece freed as it is copied: at most the total and a chunk at once. `None`
/// when it yields more than `limit` bytes (found before anything is joined).
fn read_chunked(r: &mut impl Read, limit: u64) -> std::io::Result<Option<Vec<u8>>> {
    let mut chunks: Vec<Vec<u8>> = Vec::new();
    let mut total = 0usize;
    loop {
        let mut chunk = vec![0u8; CHUNK];
        let mut filled = 0;
        while filled < CHUNK {
            match r.read(&mut chunk[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        chunk.truncate(filled);
        total += filled;
        let last = filled < CHUNK;
        if filled > 0 {
            chunks.push(chunk);
        }
        if total as u64 > limit {
            return Ok(None);
        }
        if last {
            break;
        }
    }
    if chunks.len() == 1 {
        return Ok(chunks.pop());
    }
    let mut out = Vec::with_capacity(total);
    for c in chunks.drain(..) {
        out.extend_from_slice(&c);
    }
    Ok(Some(out))
}

/// [`read`], as UTF-8 text.
pub fn read_text(path: &str, what: &str, kind: Input) -> Result<String, InputError> {
    String::from_utf8(read(path, what, kind)?).map_err(|source| InputError::NotText {
        what: what.to_string(),
        path: path.to_string(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_file_is_read_to_its_ceiling_and_refused_by_name() {
        let e = read("/dev/zero", "--targets file", Input::Config)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "--targets file: /dev/zero is larger than 16 MiB, the most stampede reads as a configuration file"
        );
        let e = read_text("/nonexistent/x", "plan", Input::Config)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("plan: cannot read /nonexistent/x: "), "{e}");
        let dir = std::env::temp_dir().join(format!("stampede-input-{}", std::process::id()));
        std::fs::write(&dir, b"GET /\n").unwrap();
        assert_eq!(
            read_text(dir.to_str().unwrap(), "x", Input::List).unwrap(),
            "GET /\n"
        );
        std::fs::write(&dir, [0xff, 0xfe]).unwrap();
        assert!(read_text(dir.to_str().unwrap(), "x", Input::List)
            .unwrap_err()
            .to_string()
            .contains("is not UTF-8"));
        let _ = std::fs::remove_file(&dir);
        assert_eq!(size(256 << 20), "256 MiB");
        assert_eq!(size(1 << 30), "1 GiB");
    }

    /// What an input costs in memory is its size (a regular file's, said by the
    /// file) or its size and a chunk (a pipe's), never a doubled buffer.
    #[test]
    fn inputs_are_read_into_buffers_of_their_size() {
        let n = 3 * CHUNK + 5;
        let v = read_chunked(&mut std::io::repeat(7).take(n as u64), u64::MAX)
            .unwrap()
            .unwrap();
        assert_eq!(v.len(), n);
        assert!(v.iter().all(|b| *b == 7));
        assert_eq!(v.capacity(), n, "joined once, exactly");
        let v = read_chunked(&mut std::io::empty(), 10).unwrap().unwrap();
        assert!(v.is_empty());
        let v = read_chunked(&mut std::io::repeat(1).take(CHUNK as u64), CHUNK as u64);
        assert_eq!(v.unwrap().unwrap().len(), CHUNK);
        let over = read_chunked(&mut std::io::repeat(1).take(CHUNK as u64 + 1), CHUNK as u64);
        assert!(over.unwrap().is_none());
        let file = std::env::temp_dir().join(format!("stampede-input-size-{}", std::process::id()));
        std::fs::write(&file, vec![b'x'; 5 << 20]).unwrap();
        let v = read(file.to_str().unwrap(), "x", Input::Body).unwrap();
        assert_eq!(v.len(), 5 << 20);
        assert!(v.capacity() <= v.len() + 1, "{}", v.capacity());
        let _ = std::fs::remove_file(&file);
        // A pipe past its ceiling is refused after a ceiling's worth, not two.
        let e = read("/dev/zero", "--body-file", Input::Config).unwrap_err();
        assert!(matches!(e, InputError::TooLarge { .. }));
    }
}
