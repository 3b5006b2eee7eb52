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
    let reader: Box<dyn Read> = if path == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(std::fs::File::open(path).map_err(fail)?)
    };
    reader.take(limit + 1).read_to_end(&mut out).map_err(fail)?;
    if out.len() as u64 > limit {
        return Err(InputError::TooLarge {
            what: what.to_string(),
            path: path.to_string(),
            kind,
        });
    }
    Ok(out)
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
}
