//! Hugging Face datasets saved as Parquet, read as rows of JSON for the layouts the
//! `hf` dataset knows. Before a page is decoded, the file's footer and every page
//! header are checked against bounds: a file over the lists' limit is refused unread,
//! and no page may claim more than [`MAX_PAGE`] bytes once decompressed nor all of
//! them together more than [`MAX_UNCOMPRESSED`], so a crafted header cannot make the
//! decoder allocate what the file does not hold.

use bytes::Bytes;
use parquet::file::reader::{FileReader, SerializedFileReader};
use stampede_engine::input::{self, size, Input};
use stampede_engine::openai::MAX_PROMPTS;

use crate::FlagError;

/// The most bytes one page may take decompressed.
pub const MAX_PAGE: u64 = 64 << 20;

/// The most bytes a file's pages may take decompressed, all together.
pub const MAX_UNCOMPRESSED: u64 = 1 << 30;

/// How deep a page header's structures may nest (the format's own go three deep).
const MAX_DEPTH: usize = 16;

/// The rows of the Parquet file at `path`, each as a JSON object and numbered from 1,
/// at most [`MAX_PROMPTS`] of them.
pub fn rows(path: &str) -> Result<Vec<(usize, serde_json::Value)>, FlagError> {
    let data = input::read(path, "--dataset-path", Input::List)
        .map_err(|e| FlagError::usage(e.to_string()))?;
    let refuse = |why: String| FlagError::usage(format!("--dataset-path {path}: {why}"));
    if data.len() < 12 || !data.starts_with(b"PAR1") || !data.ends_with(b"PAR1") {
        return Err(refuse(
            "not a Parquet file (it neither begins nor ends with PAR1)".into(),
        ));
    }
    let data = Bytes::from(data);
    let reader = SerializedFileReader::new(data.clone())
        .map_err(|e| refuse(format!("its footer cannot be read: {e}")))?;
    check_pages(&data, reader.metadata()).map_err(refuse)?;
    let iter = (reader.get_row_iter(None))
        .map_err(|e| refuse(format!("its schema cannot be read as rows: {e}")))?;
    let mut out = Vec::new();
    for (i, row) in iter.enumerate() {
        if out.len() == MAX_PROMPTS {
            break;
        }
        let row = row.map_err(|e| refuse(format!("row {}: cannot be decoded: {e}", i + 1)))?;
        out.push((i + 1, row.to_json_value()));
    }
    Ok(out)
}

/// Walks every column chunk's page headers, refusing a chunk that lies outside the
/// file, a header that cannot be read, a page whose stored size overruns its chunk,
/// and decompressed sizes past [`MAX_PAGE`] or, together, [`MAX_UNCOMPRESSED`].
fn check_pages(data: &[u8], meta: &parquet::file::metadata::ParquetMetaData) -> Result<(), String> {
    let mut total = 0u64;
    for (g, group) in meta.row_groups().iter().enumerate() {
        for column in group.columns() {
            let name = column.column_path().string();
            let (start, len) = column.byte_range();
            let end = start.checked_add(len).filter(|&e| e <= data.len() as u64);
            let Some(end) = end else {
                return Err(format!(
                    "row group {}, column {name}: its pages ({len} bytes from {start}) lie outside the file",
                    g + 1
                ));
            };
            let mut at = start as usize;
            while at < end as usize {
                let chunk = &data[at..end as usize];
                let page = PageSizes::read(chunk).map_err(|why| {
                    format!(
                        "row group {}, column {name}: a page header at byte {at}: {why}",
                        g + 1
                    )
                })?;
                let stored = page.header_len as u64 + page.compressed;
                if stored > chunk.len() as u64 {
                    return Err(format!(
                        "row group {}, column {name}: the page at byte {at} claims {} bytes; its chunk has {} left",
                        g + 1,
                        page.compressed,
                        chunk.len() - page.header_len
                    ));
                }
                if page.uncompressed > MAX_PAGE {
                    return Err(format!(
                        "row group {}, column {name}: the page at byte {at} takes {} bytes decompressed; at most {} a page",
                        g + 1,
                        page.uncompressed,
                        size(MAX_PAGE)
                    ));
                }
                total += page.uncompressed;
                if total > MAX_UNCOMPRESSED {
                    return Err(format!(
                        "its pages take more than {} decompressed",
                        size(MAX_UNCOMPRESSED)
                    ));
                }
                at += stored as usize;
            }
        }
    }
    Ok(())
}

/// What [`check_pages`] needs of a page header (Thrift's compact protocol: field 2 the
/// decompressed size, field 3 the stored size), and the header's own length.
#[derive(Debug, PartialEq)]
struct PageSizes {
    header_len: usize,
    uncompressed: u64,
    compressed: u64,
}

impl PageSizes {
    fn read(buf: &[u8]) -> Result<PageSizes, String> {
        let mut r = Compact { buf, at: 0 };
        let (mut uncompressed, mut compressed) = (None, None);
        let mut id = 0i16;
        loop {
            let head = r.byte()?;
            if head == 0 {
                break;
            }
            let kind = head & 0x0f;
            id = match head >> 4 {
                0 => r.zigzag()? as i16,
                delta => id.wrapping_add(delta as i16),
            };
            match (id, kind) {
                (2, 5) => uncompressed = Some(r.zigzag()?),
                (3, 5) => compressed = Some(r.zigzag()?),
                _ => r.skip(kind, 0)?,
            }
        }
        let size = |v: Option<i64>, what: &str| match v {
            Some(n) if n >= 0 => Ok(n as u64),
            Some(n) => Err(format!("its {what} size is {n}")),
            None => Err(format!("it has no {what} size")),
        };
        Ok(PageSizes {
            header_len: r.at,
            uncompressed: size(uncompressed, "decompressed")?,
            compressed: size(compressed, "stored")?,
        })
    }
}

/// A reader of Thrift's compact protocol, enough to skip what it does not need.
struct Compact<'a> {
    buf: &'a [u8],
    at: usize,
}

impl Compact<'_> {
    fn byte(&mut self) -> Result<u8, String> {
        let b = *self.buf.get(self.at).ok_or("it ends early")?;
        self.at += 1;
        Ok(b)
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut v = 0u64;
        for shift in (0..70).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift.min(63);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err("a number runs past ten bytes".into())
    }

    fn zigzag(&mut self) -> Result<i64, String> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    fn advance(&mut self, n: u64) -> Result<(), String> {
        let left = (self.buf.len() - self.at) as u64;
        if n > left {
            return Err("it ends early".into());
        }
        self.at += n as usize;
        Ok(())
    }

    /// Skips one value of compact type `kind`, `depth` structures deep.
    fn skip(&mut self, kind: u8, depth: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!("it nests more than {MAX_DEPTH} deep"));
        }
        match kind {
            1 | 2 => Ok(()),
            3 => self.advance(1),
            4..=6 => self.varint().map(drop),
            7 => self.advance(8),
            8 => {
                let n = self.varint()?;
                self.advance(n)
            }
            9 | 10 => {
                let head = self.byte()?;
                let n = match head >> 4 {
                    15 => self.varint()?,
                    n => u64::from(n),
                };
                self.items(n, &[head & 0x0f], depth)
            }
            11 => {
                let n = self.varint()?;
                if n == 0 {
                    return Ok(());
                }
                let kinds = self.byte()?;
                self.items(n, &[kinds >> 4, kinds & 0x0f], depth)
            }
            12 => loop {
                let head = self.byte()?;
                if head == 0 {
                    return Ok(());
                }
                if head >> 4 == 0 {
                    self.zigzag()?;
                }
                self.skip(head & 0x0f, depth + 1)?;
            },
            k => Err(format!("an unknown type {k}")),
        }
    }

    /// Skips `n` items of a list, set or map, each of `kinds` in turn. A list's
    /// booleans take a byte each; every item takes at least one byte, so a count
    /// beyond what is left is refused before the loop.
    fn items(&mut self, n: u64, kinds: &[u8], depth: usize) -> Result<(), String> {
        if n > (self.buf.len() - self.at) as u64 {
            return Err(format!("a list of {n} items overruns it"));
        }
        for _ in 0..n {
            for &k in kinds {
                match k {
                    1 | 2 => self.advance(1)?,
                    k => self.skip(k, depth + 1)?,
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_header_gives_its_sizes_and_length() {
        // type=DATA_PAGE (0), uncompressed 300, compressed 120, then a data page
        // header struct {num_values 10, encoding 0, def 3, rep 3} and stop.
        let header = [
            0x15, 0x00, 0x15, 0xd8, 0x04, 0x15, 0xf0, 0x01, 0x2c, 0x15, 0x14, 0x15, 0x00, 0x15,
            0x06, 0x15, 0x06, 0x00, 0x00,
        ];
        let mut with_body = header.to_vec();
        with_body.extend_from_slice(&[0xaa; 4]);
        assert_eq!(
            PageSizes::read(&with_body),
            Ok(PageSizes {
                header_len: header.len(),
                uncompressed: 300,
                compressed: 120
            })
        );
    }

    #[test]
    fn a_broken_page_header_is_named() {
        assert_eq!(
            PageSizes::read(&[0x15, 0x00, 0x15]),
            Err("it ends early".to_string())
        );
        assert_eq!(
            PageSizes::read(&[0x15, 0x00, 0x15, 0x03, 0x15, 0x02, 0x00]).unwrap_err(),
            "its decompressed size is -2"
        );
        assert_eq!(
            PageSizes::read(&[0x15, 0x00, 0x00]).unwrap_err(),
            "it has no decompressed size"
        );
        // A list header claiming a billion items in a five-byte buffer.
        assert!(PageSizes::read(&[0x19, 0xf5, 0x80, 0x94, 0xeb, 0xdc, 0x03])
            .unwrap_err()
            .contains("overruns"));
        // Structures nested past the bound.
        let deep: Vec<u8> = std::iter::repeat_n(0x1c, 40).collect();
        assert!(PageSizes::read(&deep).unwrap_err().contains("nests"));
    }
}
