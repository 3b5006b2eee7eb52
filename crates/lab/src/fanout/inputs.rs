//! The files a fanned-out command reads, found from its flags, checked and bounded
//! before anything starts, and shipped with the run: each read once here, digested
//! (SHA-256), and the command's words rewritten to where the copy will be on the
//! hosts or in the pods. What is shipped is what was read and checked, and each
//! host checks the digests of what it received before its segment starts, so a file
//! that changes here after the check, or arrives damaged, never runs.
//!
//! Which flags name inputs is said per command in a table here (outputs such as
//! `--json` or `-o` are never shipped). A flag whose value is `-` (standard input)
//! is refused: nothing travels on a fan-out's standard input. A tokenizer flag may
//! name a model instead of a path; it is shipped only when a file or directory of
//! that name is here.

use std::path::{Path, PathBuf};

use super::FanoutError;

/// How a flag's value names its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A file that must be here.
    File,
    /// A file or a directory (of files, at most [`MAX_DEPTH`] deep) that must be here.
    Path,
    /// A path when one of that name is here, else a name (a tokenizer's model).
    PathOrName,
    /// Directories separated by commas (ghz's import paths).
    Dirs,
    /// The file after the last comma (httperf's `--wsesslog N,X,FILE`).
    LastOfCommas,
}

/// The flags that name inputs, per command (as [`super::COMMANDS`] names them).
const FLAGS: &[(&str, &[(&str, Kind)])] = &[
    (
        "load",
        &[
            ("--targets", Kind::File),
            ("--body-file", Kind::File),
            ("--body-lines", Kind::File),
            ("--journey", Kind::File),
            ("--feeder", Kind::File),
            ("--spec", Kind::File),
            ("--ws-steps", Kind::File),
            ("--prompts", Kind::File),
            ("--conversations", Kind::File),
            ("--tokenizer", Kind::PathOrName),
            ("--proto", Kind::File),
            ("--protoset", Kind::File),
            ("--import-paths", Kind::Dirs),
            ("--data-file", Kind::File),
            ("--cacert", Kind::File),
            ("--cert", Kind::File),
            ("--key", Kind::File),
        ],
    ),
    ("ab", &[("-p", Kind::File), ("-u", Kind::File)]),
    (
        "wrk",
        &[
            ("-s", Kind::File),
            ("--script", Kind::File),
            ("--body-file", Kind::File),
        ],
    ),
    (
        "httperf",
        &[
            ("--wsesslog", Kind::LastOfCommas),
            ("--wlog", Kind::LastOfCommas),
        ],
    ),
    (
        "h2load",
        &[
            ("-i", Kind::File),
            ("--input-file", Kind::File),
            ("--timing-script-file", Kind::File),
            ("-d", Kind::File),
            ("--data", Kind::File),
        ],
    ),
    (
        "oha",
        &[
            ("-D", Kind::File),
            ("-Z", Kind::File),
            ("--cacert", Kind::File),
            ("--cert", Kind::File),
            ("--key", Kind::File),
        ],
    ),
    (
        "hey",
        &[
            ("-D", Kind::File),
            ("--cacert", Kind::File),
            ("--cert", Kind::File),
            ("--key", Kind::File),
        ],
    ),
    (
        "ghz",
        &[
            ("--proto", Kind::File),
            ("--protoset", Kind::File),
            ("-i", Kind::Dirs),
            ("--import-paths", Kind::Dirs),
            ("--cacert", Kind::File),
            ("--cert", Kind::File),
            ("--key", Kind::File),
            ("-D", Kind::File),
            ("--data-file", Kind::File),
            ("-B", Kind::File),
            ("--binary-file", Kind::File),
            ("-M", Kind::File),
            ("--metadata-file", Kind::File),
        ],
    ),
    (
        "vegeta attack",
        &[
            ("-targets", Kind::File),
            ("--targets", Kind::File),
            ("-body", Kind::File),
            ("--body", Kind::File),
            ("-cert", Kind::File),
            ("--cert", Kind::File),
            ("-key", Kind::File),
            ("--key", Kind::File),
            ("-root-certs", Kind::File),
            ("--root-certs", Kind::File),
        ],
    ),
    (
        "vllm bench serve",
        &[
            ("--dataset-path", Kind::Path),
            ("--tokenizer", Kind::PathOrName),
        ],
    ),
];

/// Most files one run ships (a directory's count each of its files).
pub const MAX_FILES: usize = 256;

/// Most bytes one run ships over ssh, all files together.
pub const MAX_BYTES: u64 = 256 << 20;

/// How deep a shipped directory is followed.
const MAX_DEPTH: usize = 4;

/// One file shipped: where it is here, and its name in the shipped directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shipped {
    /// The flag that named it (or its directory).
    pub flag: String,
    /// Where it was read.
    pub local: PathBuf,
    /// Its path in the shipped directory (`2-t.txt`, `3-tok/tokenizer.json`).
    pub name: String,
    /// Its bytes as read and checked.
    pub bytes: Vec<u8>,
    /// Their SHA-256, in hex.
    pub sha256: String,
}

/// A command's inputs, and the command with their places on the far side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inputs {
    pub files: Vec<Shipped>,
    /// The command's words, each input's value replaced by `{inputs}/NAME` (see
    /// [`Inputs::command_at`]).
    words: Vec<String>,
}

/// The placeholder for the shipped directory in [`Inputs`]' words.
const AT: &str = "{inputs}";

impl Inputs {
    /// The command as run where the shipped directory is `dir`.
    pub fn command_at(&self, dir: &str) -> Vec<String> {
        (self.words.iter()).map(|w| w.replace(AT, dir)).collect()
    }

    /// Bytes shipped, all files together.
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.bytes.len() as u64).sum()
    }

    /// A digest of every file's name and digest: the shipped directory's name, so
    /// that runs of the same inputs share it and runs of others never do.
    pub fn digest(&self) -> String {
        let mut all = String::new();
        for f in &self.files {
            all.push_str(&f.name);
            all.push('\0');
            all.push_str(&f.sha256);
            all.push('\n');
        }
        hex(ring::digest::digest(&ring::digest::SHA256, all.as_bytes()).as_ref())
    }

    /// `sha256sum -c`'s input for the shipped files.
    pub fn sums(&self) -> String {
        (self.files.iter())
            .map(|f| format!("{}  {}\n", f.sha256, f.name))
            .collect()
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// How much may travel, and by what way (said when the inputs are too large).
#[derive(Debug, Clone, Copy)]
pub struct Bound {
    pub bytes: u64,
    pub way: &'static str,
}

/// Over ssh: [`MAX_BYTES`].
pub const OVER_SSH: Bound = Bound {
    bytes: MAX_BYTES,
    way: "over ssh",
};

/// Finds, reads, bounds and digests the inputs of `command` (one of
/// [`super::COMMANDS`]): at most [`MAX_FILES`] files and `bound.bytes` together.
pub fn find(command: &[String], bound: Bound) -> Result<Inputs, FanoutError> {
    let n = super::command_words(command).unwrap_or(1);
    let name = command[..n.min(command.len())].join(" ");
    let flags = (FLAGS.iter())
        .find(|(c, _)| *c == name)
        .map_or(&[][..], |(_, f)| *f);
    let mut words = command.to_vec();
    let mut files: Vec<Shipped> = Vec::new();
    // Each path shipped is numbered, so that two of one base name never meet.
    let mut serial = 0usize;
    let mut i = n;
    while i < words.len() {
        if words[i] == "--" {
            break;
        }
        // `--flag VALUE` or `--flag=VALUE`.
        let (flag, value, inline) = match words[i].split_once('=') {
            Some((f, v)) if f.starts_with('-') => (f.to_string(), v.to_string(), true),
            _ => (
                words[i].clone(),
                words.get(i + 1).cloned().unwrap_or_default(),
                false,
            ),
        };
        let Some(&(_, kind)) = flags.iter().find(|(f, _)| *f == flag) else {
            i += 1;
            continue;
        };
        let new = ship(&flag, &value, kind, &mut serial, &mut files, bound)?;
        let at = if inline { i } else { i + 1 };
        if let Some(v) = new {
            words[at] = if inline { format!("{flag}={v}") } else { v };
        }
        i = at + 1;
    }
    Ok(Inputs { files, words })
}

/// Ships what `flag`'s `value` names (adding to `files`); the value as the far side
/// will give it, or `None` when it is left as it is (a tokenizer named by its model).
fn ship(
    flag: &str,
    value: &str,
    kind: Kind,
    serial: &mut usize,
    files: &mut Vec<Shipped>,
    bound: Bound,
) -> Result<Option<String>, FanoutError> {
    let mut add = |path: &str, dirs: bool| {
        *serial += 1;
        add(flag, Path::new(path), *serial, files, bound, dirs)
    };
    let refuse = |why: String| FanoutError::usage(format!("{flag} {value}: {why}"));
    if value.is_empty() {
        return Err(refuse("no value given".into()));
    }
    if value == "-" {
        return Err(refuse(
            "standard input does not travel to the hosts or pods; name a file".into(),
        ));
    }
    match kind {
        Kind::LastOfCommas => {
            let (head, path) = match value.rsplit_once(',') {
                Some((h, p)) => (format!("{h},"), p),
                None => (String::new(), value),
            };
            let name = add(path, false)?;
            Ok(Some(format!("{head}{AT}/{name}")))
        }
        Kind::Dirs => {
            let mut out = Vec::new();
            for d in value.split(',') {
                let name = add(d, true)?;
                out.push(format!("{AT}/{name}"));
            }
            Ok(Some(out.join(",")))
        }
        Kind::PathOrName if !Path::new(value).exists() => Ok(None),
        Kind::File => Ok(Some(format!("{AT}/{}", add(value, false)?))),
        Kind::Path | Kind::PathOrName => Ok(Some(format!("{AT}/{}", add(value, true)?))),
    }
}

/// Reads `path` (a file, or a directory's files where `dirs`) into `files` under the
/// name `PLACE-BASENAME`; returns that name.
fn add(
    flag: &str,
    path: &Path,
    place: usize,
    files: &mut Vec<Shipped>,
    bound: Bound,
    dirs: bool,
) -> Result<String, FanoutError> {
    let shown = path.display();
    let refuse = |why: String| FanoutError::usage(format!("{flag} {shown}: {why}"));
    let meta = std::fs::metadata(path).map_err(|e| {
        refuse(format!(
            "{e}; a fan-out reads every input here and ships it with the run"
        ))
    })?;
    let base = (path.file_name()).map_or("input".into(), |n| clean(&n.to_string_lossy()));
    let name = format!("{place}-{base}");
    if meta.is_dir() {
        if !dirs {
            return Err(refuse("a directory; this flag takes a file".into()));
        }
        let mut stack = vec![(path.to_path_buf(), name.clone(), 0)];
        while let Some((dir, rel, depth)) = stack.pop() {
            let mut entries: Vec<_> = (std::fs::read_dir(&dir))
                .map_err(|e| refuse(format!("cannot read {}: {e}", dir.display())))?
                .flatten()
                .collect();
            entries.sort_by_key(|e| e.file_name());
            for e in entries {
                let child = e.path();
                let child_rel = format!("{rel}/{}", clean(&e.file_name().to_string_lossy()));
                if child.is_dir() {
                    if depth + 1 >= MAX_DEPTH {
                        return Err(refuse(format!(
                            "{} is more than {MAX_DEPTH} directories deep",
                            child.display()
                        )));
                    }
                    stack.push((child, child_rel, depth + 1));
                } else {
                    read_one(flag, &child, child_rel, files, bound)?;
                }
            }
        }
    } else {
        read_one(flag, path, name.clone(), files, bound)?;
    }
    Ok(name)
}

/// A file name as shipped: letters, digits, `.`, `_` and `-`, anything else `_`.
fn clean(name: &str) -> String {
    (name.chars())
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Reads one file within the bounds (checked on its size before reading).
fn read_one(
    flag: &str,
    path: &Path,
    name: String,
    files: &mut Vec<Shipped>,
    bound: Bound,
) -> Result<(), FanoutError> {
    let max_bytes = bound.bytes;
    let refuse = |why: String| FanoutError::usage(format!("{flag} {}: {why}", path.display()));
    if files.len() == MAX_FILES {
        return Err(refuse(format!(
            "more than {MAX_FILES} files would be shipped"
        )));
    }
    if name.len() > 100 || !name.is_ascii() {
        return Err(refuse(format!(
            "its shipped name {name:?} is over 100 bytes or not ASCII; give a shorter path"
        )));
    }
    let so_far: u64 = files.iter().map(|f| f.bytes.len() as u64).sum();
    let size = std::fs::metadata(path)
        .map_err(|e| refuse(e.to_string()))?
        .len();
    if so_far + size > max_bytes {
        return Err(refuse(format!(
            "{size} bytes would make the shipped inputs {} bytes; at most {max_bytes} travel {}",
            so_far + size,
            bound.way
        )));
    }
    let bytes = std::fs::read(path).map_err(|e| refuse(e.to_string()))?;
    if so_far + bytes.len() as u64 > max_bytes {
        return Err(refuse(format!("it grew past {max_bytes} bytes while read")));
    }
    let sha256 = hex(ring::digest::digest(&ring::digest::SHA256, &bytes).as_ref());
    files.push(Shipped {
        flag: flag.to_string(),
        local: path.to_path_buf(),
        name,
        bytes,
        sha256,
    });
    Ok(())
}

/// A POSIX tar archive (ustar) of the files under their names, for one `tar -x` on
/// each host.
pub fn tar(files: &[Shipped], sums: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let mut entry = |name: &str, bytes: &[u8]| {
        let mut h = [0u8; 512];
        h[..name.len()].copy_from_slice(name.as_bytes());
        let octal = |h: &mut [u8], at: usize, len: usize, v: u64| {
            let s = format!("{v:0width$o}\0", width = len - 1);
            h[at..at + len].copy_from_slice(s.as_bytes());
        };
        octal(&mut h, 100, 8, 0o644);
        octal(&mut h, 108, 8, 0);
        octal(&mut h, 116, 8, 0);
        octal(&mut h, 124, 12, bytes.len() as u64);
        octal(&mut h, 136, 12, 0);
        h[148..156].copy_from_slice(b"        ");
        h[156] = b'0';
        h[257..263].copy_from_slice(b"ustar\0");
        h[263..265].copy_from_slice(b"00");
        let sum: u64 = h.iter().map(|b| u64::from(*b)).sum();
        let s = format!("{sum:06o}\0 ");
        h[148..156].copy_from_slice(s.as_bytes());
        out.extend_from_slice(&h);
        out.extend_from_slice(bytes);
        out.resize(out.len().div_ceil(512) * 512, 0);
    };
    for f in files {
        entry(&f.name, &f.bytes);
    }
    entry("SHA256SUMS", sums.as_bytes());
    out.extend_from_slice(&[0u8; 1024]);
    out
}

#[cfg(test)]
mod tests;
