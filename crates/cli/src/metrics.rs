//! The live outputs' flags and their life around a run: `--metrics-listen`, `--out`
//! and `--raw` parsed and checked, the metrics hub ([`stampede_metrics::Hub`]) and
//! its `/metrics` listener started before the run, and everything flushed, said and
//! stopped after it.

use std::sync::Arc;
use std::time::Duration;

use stampede_engine::LoadSpec;
use stampede_metrics::{Hub, Out};

use crate::common::Exit;

/// The flags of the live outputs.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct LiveArgs {
    #[command(flatten)]
    pub push: PushArgs,
    /// Write one record per request to FILE while the run goes: intended start, send,
    /// first byte, end, status, bytes, error, connection, worker, target (CSV; NDJSON
    /// for a name ending .ndjson, .jsonl or .json; '-' for standard output)
    #[arg(long = "raw", value_name = "FILE")]
    pub raw: Option<String>,
    /// The records' format, whatever the file's name
    #[arg(long = "raw-format", value_name = "FORMAT", value_parser = ["csv", "ndjson"], requires = "raw")]
    pub raw_format: Option<String>,
}

/// The flags of the figures served and pushed while a run goes (a run's own, or a
/// fleet's merged by its coordinator).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct PushArgs {
    /// Serve the run's figures in Prometheus's text format at http://ADDR/metrics (also
    /// at the dashboard's address with --dashboard)
    #[arg(long = "metrics-listen", value_name = "ADDR")]
    pub metrics_listen: Option<String>,
    /// After the run, keep /metrics up until a scrape has read the final figures, or
    /// this long at most
    #[arg(long = "metrics-linger", value_name = "T", value_parser = crate::common::parse_duration, default_value = "0s")]
    pub metrics_linger: Duration,
    /// Push the figures each second: prometheus-rw=URL (remote write),
    /// influxdb=URL (InfluxDB 1.x line protocol; the URL's path names the database),
    /// otlp=URL (OpenTelemetry OTLP/HTTP) (repeatable)
    #[arg(long = "out", value_name = "KIND=URL", action = clap::ArgAction::Append, value_parser = Out::parse)]
    pub out: Vec<Out>,
}

impl PushArgs {
    /// Whether any figure is served or pushed.
    pub fn any(&self) -> bool {
        self.metrics_listen.is_some() || !self.out.is_empty()
    }

    /// The `/metrics` listener for `hub`, when asked for.
    pub fn serve(
        &self,
        hub: &Arc<Hub>,
    ) -> Result<Option<Arc<stampede_metrics::dashboard::Dashboard>>, Exit> {
        match &self.metrics_listen {
            Some(addr) => {
                let d = stampede_metrics::dashboard::Dashboard::metrics_only(addr, hub.clone())?;
                eprintln!("stampede: metrics at {}metrics", d.url());
                Ok(Some(d))
            }
            None => Ok(None),
        }
    }

    /// The pushers send what is left, `/metrics` lingers as asked, what failed is said.
    pub fn end(&self, hub: &Hub) {
        for line in hub.finish(self.metrics_linger) {
            eprintln!("stampede: {line}");
        }
    }
}

impl LiveArgs {
    /// Refuses, before anything starts, what cannot go with the run's other flags:
    /// `--raw -` beside `--json -` (`json_stdout`), any of them with `--find-max`.
    pub fn check(&self, json_stdout: bool, find_max: bool) -> Result<(), Exit> {
        if self.raw.as_deref() == Some("-") && json_stdout {
            return Err(Exit::usage(
                "--raw - and --json - both want standard output: give one of them a file",
            ));
        }
        let any = self.push.any() || self.raw.is_some();
        if find_max && any {
            return Err(Exit::usage(
                "--find-max runs many short runs: --out, --metrics-listen and --raw follow one run; leave them out, or run each rate with --rate",
            ));
        }
        Ok(())
    }

    /// Starts what the flags ask for a run of `spec`: the hub (also for a dashboard),
    /// the `/metrics` listener, the records' writer.
    pub fn start(&self, spec: &LoadSpec, dashboard: bool) -> Result<LiveOutputs, Exit> {
        let wanted = dashboard || self.push.any();
        let hub = match wanted {
            true => Some(Hub::new(spec, &self.push.out)?),
            false => None,
        };
        let server = match &hub {
            Some(h) => self.push.serve(h)?,
            None => None,
        };
        let (records, writer) = raw_records(self)?.unzip();
        Ok(LiveOutputs {
            hub,
            _server: server,
            records,
            writer,
            raw: self.raw.clone(),
            linger: self.push.metrics_linger,
        })
    }
}

/// A run's live outputs, from before it starts to after it ends.
pub struct LiveOutputs {
    /// What the metrics outputs (and a dashboard) read.
    pub hub: Option<Arc<Hub>>,
    /// `--metrics-listen`'s server, up while this lives.
    _server: Option<Arc<stampede_metrics::dashboard::Dashboard>>,
    /// The workers' end of `--raw`, for the run to take.
    pub records: Option<stampede_engine::RawOut>,
    writer: Option<stampede_engine::RawWriter>,
    raw: Option<String>,
    linger: Duration,
}

impl LiveOutputs {
    /// The run has ended (`raw_lost`: the records it counted as lost): the records'
    /// writer finishes, the pushers send what is left, `/metrics` lingers as asked,
    /// and what failed is said.
    pub fn end(mut self, raw_lost: u64) {
        if let (Some(w), Some(path)) = (self.writer.take(), &self.raw) {
            if let Err(e) = w.finish() {
                eprintln!(
                    "stampede: --raw {path}: {e}; the records from then on were lost ({raw_lost} counted as lost, and those already handed to the writer)"
                );
            }
        }
        if let Some(h) = &self.hub {
            for line in h.finish(self.linger) {
                eprintln!("stampede: {line}");
            }
        }
    }
}

/// `--raw`: the records' writer, started before the run.
fn raw_records(
    a: &LiveArgs,
) -> Result<Option<(stampede_engine::RawOut, stampede_engine::RawWriter)>, Exit> {
    use stampede_engine::RawFormat;
    let Some(path) = &a.raw else {
        return Ok(None);
    };
    let format = match a.raw_format.as_deref() {
        Some("ndjson") => RawFormat::Ndjson,
        Some(_) => RawFormat::Csv,
        None => RawFormat::for_path(path),
    };
    let out: Box<dyn std::io::Write + Send> = if path == "-" {
        Box::new(std::io::BufWriter::with_capacity(
            256 * 1024,
            std::io::stdout(),
        ))
    } else {
        let f =
            std::fs::File::create(path).map_err(|e| Exit::usage(format!("--raw {path}: {e}")))?;
        Box::new(std::io::BufWriter::with_capacity(256 * 1024, f))
    };
    stampede_engine::raw_writer(out, format)
        .map(Some)
        .map_err(|e| Exit::fail(format!("--raw: {e}")))
}
