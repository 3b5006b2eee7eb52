//! Per-request records streamed out while the run goes (`--raw FILE`): one line per
//! request — intended start, send, first byte, end, status, body bytes, failure kind,
//! connection, worker and target — as CSV or NDJSON.
//!
//! Each worker formats its records into a buffer of its own ([`BUFFER`] bytes) and
//! hands a full one to a writer thread through a channel that holds at most
//! [`QUEUED`] buffers, so memory stays flat however long the run: a disk slower
//! than the run holds the worker up (and the limit verdict shows it) rather than
//! buffering without bound. Nothing is kept in memory past its buffer, and a run
//! without records pays one predictable branch per request.

use std::io::Write;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::time::Instant;

use crate::error::ErrorKind;

/// Bytes a worker gathers before handing them to the writer.
pub const BUFFER: usize = 64 * 1024;

/// Full buffers waiting for the writer, all workers together.
pub const QUEUED: usize = 16;

/// How the records are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RawFormat {
    /// A header line, then one comma-separated line per request; an empty field where
    /// a value is absent (no send, no first byte, no failure).
    Csv,
    /// One JSON object per line; `null` where a value is absent.
    Ndjson,
}

impl RawFormat {
    /// The format a file's name asks for: `.ndjson`/`.jsonl`/`.json` or CSV.
    pub fn for_path(path: &str) -> RawFormat {
        let p = path.to_ascii_lowercase();
        if p.ends_with(".ndjson") || p.ends_with(".jsonl") || p.ends_with(".json") {
            RawFormat::Ndjson
        } else {
            RawFormat::Csv
        }
    }
}

/// The CSV header.
pub const CSV_HEADER: &str =
    "start_unix_us,send_us,first_byte_us,end_us,status,bytes,error,connection,worker,target\n";

/// Where the workers' records go: hand one to the run with [`crate::Control::record_to`].
#[derive(Debug)]
pub struct RawOut {
    pub(crate) tx: SyncSender<Vec<u8>>,
    pub(crate) format: RawFormat,
}

/// The writer thread's end: join it once the run has ended.
pub struct RawWriter {
    thread: std::thread::JoinHandle<std::io::Result<u64>>,
}

impl RawWriter {
    /// Waits for the last records to be written; returns the bytes written.
    pub fn finish(self) -> std::io::Result<u64> {
        self.thread
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the records' writer panicked")))
    }
}

/// Starts a writer thread that writes the records to `out` (the CSV header first).
pub fn writer(
    mut out: Box<dyn Write + Send>,
    format: RawFormat,
) -> std::io::Result<(RawOut, RawWriter)> {
    let (tx, rx): (SyncSender<Vec<u8>>, Receiver<Vec<u8>>) = sync_channel(QUEUED);
    let thread = std::thread::Builder::new()
        .name("stampede-raw".into())
        .spawn(move || {
            let mut written = 0u64;
            if format == RawFormat::Csv {
                out.write_all(CSV_HEADER.as_bytes())?;
                written += CSV_HEADER.len() as u64;
            }
            // Ends when every worker's sender and the run's are gone.
            for buf in rx {
                out.write_all(&buf)?;
                written += buf.len() as u64;
            }
            out.flush()?;
            Ok(written)
        })?;
    Ok((RawOut { tx, format }, RawWriter { thread }))
}

/// One request's facts, as the worker knows them when it ends.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Facts {
    pub intended: Instant,
    /// When it was written; `None` for one that failed before it was sent.
    pub sent: Option<Instant>,
    pub first_byte: Option<Instant>,
    pub end: Instant,
    /// 0 when it failed.
    pub status: u16,
    pub bytes: u64,
    pub error: Option<ErrorKind>,
    pub connection: u64,
    pub target: u32,
}

/// A worker's end of the records.
pub(crate) struct RawSink {
    buf: Vec<u8>,
    tx: Option<SyncSender<Vec<u8>>>,
    format: RawFormat,
    worker: u32,
    /// Each request's place in the whole list, when the run is one server's part of
    /// several; empty when its requests are the list.
    places: Vec<u32>,
    start: Instant,
    start_unix_us: u64,
    /// Records lost because the writer had gone (its file failed).
    pub lost: u64,
}

fn us(from: Instant, to: Instant) -> u64 {
    to.saturating_duration_since(from).as_micros() as u64
}

impl RawSink {
    pub(crate) fn new(
        out: &RawOut,
        worker: u32,
        places: &[u32],
        start: Instant,
        start_unix_us: u64,
    ) -> RawSink {
        RawSink {
            buf: Vec::with_capacity(BUFFER),
            tx: Some(out.tx.clone()),
            format: out.format,
            worker,
            places: places.to_vec(),
            start,
            start_unix_us,
            lost: 0,
        }
    }

    /// Adds one request's record.
    pub(crate) fn record(&mut self, f: &Facts) {
        let start_unix_us = self.start_unix_us + us(self.start, f.intended);
        let mut n = itoa::Buffer::new();
        let b = &mut self.buf;
        let opt = |b: &mut Vec<u8>, n: &mut itoa::Buffer, v: Option<u64>, none: &[u8]| match v {
            Some(v) => b.extend_from_slice(n.format(v).as_bytes()),
            None => b.extend_from_slice(none),
        };
        let send = f.sent.map(|s| us(f.intended, s));
        let first = f.first_byte.map(|s| us(f.intended, s));
        let end = us(f.intended, f.end);
        let target = match self.places.get(f.target as usize) {
            Some(&place) => place,
            None => f.target,
        };
        match self.format {
            RawFormat::Csv => {
                b.extend_from_slice(n.format(start_unix_us).as_bytes());
                b.push(b',');
                opt(b, &mut n, send, b"");
                b.push(b',');
                opt(b, &mut n, first, b"");
                b.push(b',');
                b.extend_from_slice(n.format(end).as_bytes());
                b.push(b',');
                b.extend_from_slice(n.format(f.status).as_bytes());
                b.push(b',');
                b.extend_from_slice(n.format(f.bytes).as_bytes());
                b.push(b',');
                if let Some(e) = f.error {
                    b.extend_from_slice(e.name().as_bytes());
                }
                b.push(b',');
                b.extend_from_slice(n.format(f.connection).as_bytes());
                b.push(b',');
                b.extend_from_slice(n.format(self.worker).as_bytes());
                b.push(b',');
                b.extend_from_slice(n.format(target).as_bytes());
                b.push(b'\n');
            }
            RawFormat::Ndjson => {
                b.extend_from_slice(b"{\"start_unix_us\":");
                b.extend_from_slice(n.format(start_unix_us).as_bytes());
                b.extend_from_slice(b",\"send_us\":");
                opt(b, &mut n, send, b"null");
                b.extend_from_slice(b",\"first_byte_us\":");
                opt(b, &mut n, first, b"null");
                b.extend_from_slice(b",\"end_us\":");
                b.extend_from_slice(n.format(end).as_bytes());
                b.extend_from_slice(b",\"status\":");
                b.extend_from_slice(n.format(f.status).as_bytes());
                b.extend_from_slice(b",\"bytes\":");
                b.extend_from_slice(n.format(f.bytes).as_bytes());
                b.extend_from_slice(b",\"error\":");
                match f.error {
                    // Kind names are lower-case words and dashes: nothing to escape.
                    Some(e) => {
                        b.push(b'"');
                        b.extend_from_slice(e.name().as_bytes());
                        b.push(b'"');
                    }
                    None => b.extend_from_slice(b"null"),
                }
                b.extend_from_slice(b",\"connection\":");
                b.extend_from_slice(n.format(f.connection).as_bytes());
                b.extend_from_slice(b",\"worker\":");
                b.extend_from_slice(n.format(self.worker).as_bytes());
                b.extend_from_slice(b",\"target\":");
                b.extend_from_slice(n.format(target).as_bytes());
                b.extend_from_slice(b"}\n");
            }
        }
        if self.buf.len() >= BUFFER - 256 {
            self.flush();
        }
    }

    /// Hands the buffer to the writer (waiting while the writer is [`QUEUED`] behind).
    pub(crate) fn flush(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let full = std::mem::replace(&mut self.buf, Vec::with_capacity(BUFFER));
        let lines = |b: &[u8]| b.iter().filter(|&&c| c == b'\n').count() as u64;
        match &self.tx {
            Some(tx) => {
                if let Err(back) = tx.send(full) {
                    // The writer stopped on an error of its file: counted, not kept.
                    self.lost += lines(&back.0);
                    self.tx = None;
                }
            }
            None => self.lost += lines(&full),
        }
    }
}

impl Drop for RawSink {
    fn drop(&mut self) {
        self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    /// A writer into shared memory, to read what was written.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn facts(start: Instant, i: u64) -> Facts {
        let intended = start + Duration::from_micros(1_000 * i);
        let ok = i.is_multiple_of(2);
        Facts {
            intended,
            sent: Some(intended + Duration::from_micros(5)),
            first_byte: ok.then(|| intended + Duration::from_micros(40)),
            end: intended + Duration::from_micros(50),
            status: if ok { 200 } else { 0 },
            bytes: if ok { 4 } else { 0 },
            error: (!ok).then_some(ErrorKind::Timeout),
            connection: 3,
            target: (i % 3) as u32,
        }
    }

    #[test]
    fn records_come_out_whole_and_in_order_in_both_formats() {
        for format in [RawFormat::Csv, RawFormat::Ndjson] {
            let out = Shared::default();
            let (raw, w) = writer(Box::new(out.clone()), format).unwrap();
            let start = Instant::now();
            // Enough records to fill several buffers.
            let n = 3 * BUFFER as u64 / 60;
            {
                let mut sink = RawSink::new(&raw, 7, &[], start, 1_000_000);
                for i in 0..n {
                    sink.record(&facts(start, i));
                }
            }
            drop(raw);
            w.finish().unwrap();
            let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            match format {
                RawFormat::Csv => {
                    assert_eq!(lines[0], CSV_HEADER.trim_end());
                    assert_eq!(lines.len() as u64, n + 1);
                    assert_eq!(lines[1], "1000000,5,40,50,200,4,,3,7,0");
                    assert_eq!(lines[2], "1001000,5,,50,0,0,timeout,3,7,1");
                }
                RawFormat::Ndjson => {
                    assert_eq!(lines.len() as u64, n);
                    let v: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
                    assert_eq!(v["start_unix_us"], 1_001_000);
                    assert_eq!(v["first_byte_us"], serde_json::Value::Null);
                    assert_eq!(v["error"], "timeout");
                    assert_eq!(v["worker"], 7);
                    for l in &lines {
                        serde_json::from_str::<serde_json::Value>(l).unwrap();
                    }
                }
            }
        }
    }

    #[test]
    fn a_failed_file_loses_records_counted_not_kept() {
        struct Broken;
        impl Write for Broken {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other("disk full"))
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let (raw, w) = writer(Box::new(Broken), RawFormat::Ndjson).unwrap();
        let start = Instant::now();
        let mut sink = RawSink::new(&raw, 0, &[], start, 0);
        drop(raw);
        // The writer fails on the first buffer and goes; buffers it had not taken
        // yet go with it, and every later one is counted as lost.
        let mut i = 0;
        while sink.lost == 0 {
            assert!(i < 1_000_000, "the writer's failure was never noticed");
            sink.record(&facts(start, i));
            i += 1;
        }
        drop(sink);
        let e = w.finish().unwrap_err();
        assert_eq!(e.to_string(), "disk full");
    }

    #[test]
    fn the_format_follows_the_name() {
        assert_eq!(RawFormat::for_path("a.csv"), RawFormat::Csv);
        assert_eq!(RawFormat::for_path("a.NDJSON"), RawFormat::Ndjson);
        assert_eq!(RawFormat::for_path("a.jsonl"), RawFormat::Ndjson);
        assert_eq!(RawFormat::for_path("-"), RawFormat::Csv);
    }
}
