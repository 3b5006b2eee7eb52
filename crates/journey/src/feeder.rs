//! Feeders: the rows of data users take their variables from, read from a CSV file
//! with a header row (RFC 4180: quoted fields, `""` inside them, line breaks within
//! quotes) or a JSONL file (one flat object a line), and the order users take them
//! in: in sequence, at random, or each row once.
//!
//! A file is read whole before the run, within [`MAX_BYTES`]: one that is larger,
//! not UTF-8, with a row of another width than its header, or with no row at all is
//! refused with its line. The cells live in one string, so a feeder of a million
//! rows costs its text and two numbers a cell.

use std::io::Read;
use std::path::Path;

use crate::template::{Draw, Scope, Slot, TemplateError};
use crate::vars::{Value, Vars};
use crate::Invalid;

/// The largest feeder file read.
pub const MAX_BYTES: u64 = 256 * 1024 * 1024;
/// The most columns a feeder has.
pub const MAX_COLUMNS: usize = 256;

/// A feeder that cannot be used: where (`file:line`, or the file), and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{place}: {reason}")]
pub struct FeederError {
    pub place: String,
    pub reason: String,
}

impl FeederError {
    fn at(file: &str, line: usize, reason: impl std::fmt::Display) -> FeederError {
        FeederError {
            place: format!("{file}:{line}"),
            reason: reason.to_string(),
        }
    }

    fn of(file: &str, reason: impl std::fmt::Display) -> FeederError {
        FeederError {
            place: file.to_string(),
            reason: reason.to_string(),
        }
    }
}

/// How a feeder's file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Comma-separated, the first row naming the columns.
    Csv,
    /// One JSON object a line; the first line's keys are the columns.
    Jsonl,
}

impl Format {
    /// The format a file's name says (`.jsonl`, `.ndjson`: JSONL; anything else CSV).
    pub fn of_path(path: &str) -> Format {
        let p = path.to_ascii_lowercase();
        match p.ends_with(".jsonl") || p.ends_with(".ndjson") {
            true => Format::Jsonl,
            false => Format::Csv,
        }
    }
}

/// The order users take a feeder's rows in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Row after row, starting over after the last.
    Sequence,
    /// A row drawn at random each time.
    Random,
    /// Each row once: there are no more once the last is taken.
    Unique,
}

impl std::str::FromStr for Order {
    type Err = Invalid;
    fn from_str(s: &str) -> Result<Order, Invalid> {
        match s {
            "sequence" | "sequential" | "in-order" => Ok(Order::Sequence),
            "random" => Ok(Order::Random),
            "unique" | "once" => Ok(Order::Unique),
            _ => Err(Invalid(format!(
                "{s:?}: the orders are sequence, random and unique"
            ))),
        }
    }
}

/// A feeder's rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Feeder {
    columns: Vec<String>,
    text: String,
    /// Each cell's span of `text`, row after row.
    cells: Vec<(u32, u32)>,
}

impl Feeder {
    /// Reads the feeder at `path`, in the format its name says.
    pub fn read_file(path: &str) -> Result<Feeder, FeederError> {
        Feeder::read_within(path, MAX_BYTES)
    }

    /// [`Feeder::read_file`] with at most `max` bytes read.
    fn read_within(path: &str, max: u64) -> Result<Feeder, FeederError> {
        let f = std::fs::File::open(Path::new(path))
            .map_err(|e| FeederError::of(path, format!("cannot be read: {e}")))?;
        if let Ok(m) = f.metadata() {
            if m.is_file() && m.len() > max {
                return Err(too_large(path, Some(m.len()), max));
            }
        }
        let mut bytes = Vec::new();
        f.take(max + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| FeederError::of(path, format!("cannot be read: {e}")))?;
        if bytes.len() as u64 > max {
            return Err(too_large(path, None, max));
        }
        Feeder::parse(path, &bytes, Format::of_path(path))
    }

    /// Reads a feeder from `bytes`; `file` names it in errors.
    pub fn parse(file: &str, bytes: &[u8], format: Format) -> Result<Feeder, FeederError> {
        if bytes.len() as u64 > MAX_BYTES {
            return Err(too_large(file, Some(bytes.len() as u64), MAX_BYTES));
        }
        let text = match std::str::from_utf8(bytes) {
            Ok(t) => t,
            Err(e) => {
                let line = 1 + bytes[..e.valid_up_to()]
                    .iter()
                    .filter(|&&b| b == b'\n')
                    .count();
                return Err(FeederError::at(file, line, "not UTF-8"));
            }
        };
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let f = match format {
            Format::Csv => csv(file, text)?,
            Format::Jsonl => jsonl(file, text)?,
        };
        if f.rows() == 0 {
            return Err(FeederError::of(file, "no rows after the columns' names"));
        }
        Ok(f)
    }

    /// The columns' names, in order.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// How many rows there are.
    pub fn rows(&self) -> usize {
        self.cells.len() / self.columns.len().max(1)
    }

    /// The cell of `row` in column `col`.
    pub fn cell(&self, row: usize, col: usize) -> &str {
        let (a, b) = self.cells[row * self.columns.len() + col];
        &self.text[a as usize..b as usize]
    }

    /// The row call `call` (counted over the run, from 0) takes: `None` when a
    /// unique feeder has no row left.
    pub fn pick(&self, order: Order, call: u64, draw: &mut Draw) -> Option<usize> {
        let n = self.rows() as u64;
        match order {
            Order::Sequence => Some((call % n) as usize),
            Order::Random => Some(draw.below(n) as usize),
            Order::Unique => (call < n).then_some(call as usize),
        }
    }

    /// Declares every column in `scope`: the slots a row's cells go to.
    pub fn declare(&self, scope: &mut Scope) -> Result<Vec<Slot>, TemplateError> {
        self.columns.iter().map(|c| scope.declare(c)).collect()
    }

    /// Sets `row`'s cells in `vars`, at the slots [`Feeder::declare`] gave.
    pub fn fill(&self, row: usize, slots: &[Slot], vars: &mut Vars) {
        for (col, slot) in slots.iter().enumerate() {
            vars.set(*slot, Value::Text(self.cell(row, col).to_string()));
        }
    }
}

/// A feeder over `max` bytes: `len` when its size is known, else it was read up to
/// the limit.
fn too_large(file: &str, len: Option<u64>, max: u64) -> FeederError {
    let what = match len {
        Some(len) => format!("{len} bytes"),
        None => format!("more than {max} bytes"),
    };
    FeederError::of(
        file,
        format!("{what}; a feeder is read whole, at most {max} bytes"),
    )
}

/// Checks the columns' names: present, names a template can use, none twice.
fn columns(file: &str, names: Vec<String>) -> Result<Vec<String>, FeederError> {
    if names.len() > MAX_COLUMNS {
        return Err(FeederError::at(
            file,
            1,
            format!("more than {MAX_COLUMNS} columns"),
        ));
    }
    let mut scope = Scope::default();
    for (i, n) in names.iter().enumerate() {
        if n.is_empty() {
            return Err(FeederError::at(
                file,
                1,
                format!("column {} has no name", i + 1),
            ));
        }
        if scope.slot(n).is_some() {
            return Err(FeederError::at(
                file,
                1,
                format!("column {n:?} is named twice"),
            ));
        }
        scope
            .declare(n)
            .map_err(|e| FeederError::at(file, 1, format!("column {}: {}", i + 1, e.reason)))?;
    }
    Ok(names)
}

/// RFC 4180, with LF or CRLF line ends; blank lines are skipped.
fn csv(file: &str, text: &str) -> Result<Feeder, FeederError> {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut cells: Vec<(u32, u32)> = Vec::new();
    let mut header: Option<Vec<String>> = None;
    let mut row: Vec<(u32, u32)> = Vec::new();
    let mut i = 0usize;
    let mut line = 1usize;
    let mut row_line = 1usize;
    while i < b.len() {
        // One field.
        let start = out.len() as u32;
        if b[i] == b'"' {
            i += 1;
            loop {
                match b.get(i) {
                    None => {
                        return Err(FeederError::at(
                            file,
                            row_line,
                            "a quoted field is not closed",
                        ))
                    }
                    Some(b'"') if b.get(i + 1) == Some(&b'"') => {
                        out.push('"');
                        i += 2;
                    }
                    Some(b'"') => {
                        i += 1;
                        break;
                    }
                    Some(_) => {
                        let ch = text[i..].chars().next().expect("on a char boundary");
                        if ch == '\n' {
                            line += 1;
                        }
                        out.push(ch);
                        i += ch.len_utf8();
                    }
                }
            }
            if !matches!(b.get(i), None | Some(b',' | b'\n' | b'\r')) {
                return Err(FeederError::at(
                    file,
                    line,
                    "text after a quoted field's closing quote (write \"\" for a quote inside it)",
                ));
            }
        } else {
            let end = (b[i..].iter())
                .position(|&c| matches!(c, b',' | b'\n' | b'\r'))
                .map_or(b.len(), |p| i + p);
            let field = &text[i..end];
            if field.contains('"') {
                return Err(FeederError::at(
                    file,
                    line,
                    "a quote inside an unquoted field (quote the field and double the quote)",
                ));
            }
            out.push_str(field);
            i = end;
        }
        row.push((start, out.len() as u32));
        match b.get(i) {
            Some(b',') => {
                i += 1;
                continue;
            }
            Some(b'\r') if b.get(i + 1) == Some(&b'\n') => i += 2,
            Some(b'\r' | b'\n') => i += 1,
            None => {}
            Some(_) => unreachable!("a field ends at a comma, a line end or the end"),
        }
        // End of a row.
        let blank = row.len() == 1 && row[0].0 == row[0].1;
        if !blank {
            match &header {
                None => {
                    let names = row
                        .iter()
                        .map(|&(a, z)| out[a as usize..z as usize].to_string())
                        .collect();
                    header = Some(columns(file, names)?);
                    out.clear();
                }
                Some(h) if row.len() != h.len() => {
                    return Err(FeederError::at(
                        file,
                        row_line,
                        format!("{} fields; the header names {}", row.len(), h.len()),
                    ));
                }
                Some(_) => cells.extend_from_slice(&row),
            }
        }
        row.clear();
        line += 1;
        row_line = line;
    }
    let Some(columns) = header else {
        return Err(FeederError::of(
            file,
            "empty: the first row names the columns",
        ));
    };
    Ok(Feeder {
        columns,
        text: out,
        cells,
    })
}

/// One flat JSON object a line; blank lines are skipped. Strings are taken as they
/// are, numbers and booleans as written, null as empty, arrays and objects as JSON.
fn jsonl(file: &str, text: &str) -> Result<Feeder, FeederError> {
    let mut out = String::with_capacity(text.len());
    let mut cells = Vec::new();
    let mut names: Option<Vec<String>> = None;
    for (n, l) in text.lines().enumerate() {
        let line = n + 1;
        if l.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(l)
            .map_err(|e| FeederError::at(file, line, format!("not JSON: {e}")))?;
        let serde_json::Value::Object(map) = v else {
            return Err(FeederError::at(file, line, "not a JSON object"));
        };
        let cols = match &names {
            Some(c) => c,
            None => names.insert(columns(file, map.keys().cloned().collect())?),
        };
        if map.len() != cols.len() || !cols.iter().all(|c| map.contains_key(c)) {
            let missing: Vec<&str> = (cols.iter())
                .filter(|c| !map.contains_key(*c))
                .map(String::as_str)
                .collect();
            let extra: Vec<&str> = (map.keys())
                .filter(|k| !cols.contains(k))
                .map(String::as_str)
                .collect();
            return Err(FeederError::at(
                file,
                line,
                format!(
                    "its keys differ from the first line's (missing: {}; not in the first: {})",
                    if missing.is_empty() {
                        "none".into()
                    } else {
                        missing.join(", ")
                    },
                    if extra.is_empty() {
                        "none".into()
                    } else {
                        extra.join(", ")
                    },
                ),
            ));
        }
        for c in cols {
            let start = out.len() as u32;
            match &map[c] {
                serde_json::Value::String(s) => out.push_str(s),
                serde_json::Value::Null => {}
                other => out.push_str(&other.to_string()),
            }
            cells.push((start, out.len() as u32));
        }
    }
    let Some(columns) = names else {
        return Err(FeederError::of(file, "empty: no JSON object"));
    };
    Ok(Feeder {
        columns,
        text: out,
        cells,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(f: &Feeder) -> Vec<Vec<&str>> {
        (0..f.rows())
            .map(|r| (0..f.columns().len()).map(|c| f.cell(r, c)).collect())
            .collect()
    }

    #[test]
    fn csv_is_read_as_rfc_4180_writes_it() {
        let text =
            "user,password,note\r\nann,\"p,1\",\"said \"\"hi\"\"\"\n\nbob,x,\"two\nlines\"\ncy,,\n";
        let f = Feeder::parse("users.csv", text.as_bytes(), Format::Csv).unwrap();
        assert_eq!(f.columns(), ["user", "password", "note"]);
        assert_eq!(
            rows(&f),
            [
                vec!["ann", "p,1", "said \"hi\""],
                vec!["bob", "x", "two\nlines"],
                vec!["cy", "", ""],
            ]
        );
        // No line end after the last row, and a byte-order mark before the first.
        let f = Feeder::parse("u.csv", "\u{feff}id\n1\n2".as_bytes(), Format::Csv).unwrap();
        assert_eq!(rows(&f), [vec!["1"], vec!["2"]]);
    }

    #[test]
    fn a_bad_csv_is_refused_with_its_line() {
        for (text, says) in [
            ("a,b\n1,2\n3\n", "u.csv:3: 1 fields; the header names 2"),
            ("a,b\n1,\"2\n", "u.csv:2: a quoted field is not closed"),
            ("a\n\"x\"y\n", "u.csv:2: text after a quoted field"),
            ("a\nx\"y\n", "u.csv:2: a quote inside an unquoted field"),
            ("a,a\n1,2\n", "u.csv:1: column \"a\" is named twice"),
            ("a,\n1,2\n", "u.csv:1: column 2 has no name"),
            ("a b\n1\n", "u.csv:1: column 1: \"a b\" is not a name"),
            ("a,b\n", "u.csv: no rows"),
            ("", "u.csv: empty"),
        ] {
            let e = Feeder::parse("u.csv", text.as_bytes(), Format::Csv).unwrap_err();
            assert!(e.to_string().starts_with(says), "{text:?}: {e}");
        }
        let e = Feeder::parse("u.csv", b"a\nok\n\xff\n", Format::Csv).unwrap_err();
        assert_eq!(e.to_string(), "u.csv:3: not UTF-8");
    }

    #[test]
    fn jsonl_rows_are_flat_objects_with_the_first_lines_keys() {
        let text = "{\"id\": 7, \"name\": \"ann\", \"tags\": [1], \"x\": null}\n\n{\"name\": \"bob\", \"id\": 8.5, \"tags\": {}, \"x\": true}\n";
        let f = Feeder::parse("u.jsonl", text.as_bytes(), Format::Jsonl).unwrap();
        assert_eq!(f.columns(), ["id", "name", "tags", "x"]);
        assert_eq!(
            rows(&f),
            [
                vec!["7", "ann", "[1]", ""],
                vec!["8.5", "bob", "{}", "true"]
            ]
        );
        for (text, says) in [
            ("{\"a\":1}\n{\"b\":2}\n", "u.jsonl:2: its keys differ from the first line's (missing: a; not in the first: b)"),
            ("{\"a\":1}\n[1]\n", "u.jsonl:2: not a JSON object"),
            ("{\"a\":1\n", "u.jsonl:1: not JSON"),
            ("\n\n", "u.jsonl: empty"),
        ] {
            let e = Feeder::parse("u.jsonl", text.as_bytes(), Format::Jsonl).unwrap_err();
            assert!(e.to_string().starts_with(says), "{text:?}: {e}");
        }
        assert_eq!(Format::of_path("a/B.NDJSON"), Format::Jsonl);
        assert_eq!(Format::of_path("users.csv"), Format::Csv);
    }

    #[test]
    fn rows_are_taken_in_the_order_asked_and_a_unique_feeder_runs_out() {
        let f = Feeder::parse("u.csv", b"n\na\nb\nc\n", Format::Csv).unwrap();
        let mut d = Draw::new(3, (0, 1));
        let seq: Vec<_> = (0..5).map(|c| f.pick(Order::Sequence, c, &mut d)).collect();
        assert_eq!(seq, [Some(0), Some(1), Some(2), Some(0), Some(1)]);
        let once: Vec<_> = (0..4).map(|c| f.pick(Order::Unique, c, &mut d)).collect();
        assert_eq!(once, [Some(0), Some(1), Some(2), None]);
        let mut seen = [0; 3];
        for c in 0..300 {
            seen[f.pick(Order::Random, c, &mut d).unwrap()] += 1;
        }
        assert!(seen.iter().all(|&n| n > 50), "{seen:?}");
        assert_eq!("once".parse::<Order>(), Ok(Order::Unique));
        assert!("shuffled"
            .parse::<Order>()
            .unwrap_err()
            .0
            .contains("sequence, random and unique"));
        // A row's cells go to the columns' slots.
        let mut scope = Scope::default();
        scope.declare("token").unwrap();
        let slots = f.declare(&mut scope).unwrap();
        assert_eq!(slots, [Slot(1)]);
        let mut v = Vars::new(scope.len());
        f.fill(2, &slots, &mut v);
        assert_eq!(v.get(Slot(1)), Some(&Value::Text("c".into())));
    }

    #[test]
    fn a_file_is_read_within_the_limit() {
        let dir = std::env::temp_dir().join(format!("stampede-feeder-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("u.csv");
        std::fs::write(&p, "id\n1\n").unwrap();
        let f = Feeder::read_file(p.to_str().unwrap()).unwrap();
        assert_eq!(f.rows(), 1);
        let e = Feeder::read_file(dir.join("missing.csv").to_str().unwrap()).unwrap_err();
        assert!(e.reason.starts_with("cannot be read"), "{e}");
        // A file with no end, or one larger than the limit, is refused once the limit is
        // read (a small limit here; the same check holds the real one).
        let e = Feeder::read_within("/dev/zero", 4096).unwrap_err();
        assert!(e.reason.contains("at most 4096 bytes"), "{e}");
        let e = Feeder::read_within(p.to_str().unwrap(), 3).unwrap_err();
        assert!(e.reason.starts_with("5 bytes"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
