//! The run's series in one model — families of counters, gauges and summaries with
//! their labels — and that model in Prometheus's text exposition format (0.0.4), as
//! `/metrics` serves it. Remote write and OTLP encode the same families, so every
//! output names the same figures the same way.

use std::fmt::Write as _;

use stampede_engine::LatencyStats;

use super::{RunInfo, Totals};

/// The quantiles each summary gives.
pub const QUANTILES: [f64; 5] = [0.5, 0.9, 0.99, 0.999, 1.0];

/// The latency histogram's bucket bounds, seconds: 100 µs to a minute, three a
/// decade, so that `histogram_quantile` over `sum by (le)` of many machines' buckets
/// reads the fleet's percentiles within a bucket's width.
pub const LATENCY_BOUNDS: [f64; 18] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0, 30.0, 60.0,
];

/// What a family is, in Prometheus's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Summary,
    Histogram,
}

/// One sample: the suffix it adds to the family's name (`_sum`, `_count`, or none),
/// its labels and its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub suffix: &'static str,
    pub labels: Vec<(&'static str, String)>,
    pub value: f64,
}

/// A metric family.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    pub name: &'static str,
    pub help: &'static str,
    pub kind: Kind,
    /// The unit of a summary's values and sum (`s`), or of the counter (`By`), in
    /// UCUM as OpenTelemetry writes it; empty for plain counts.
    pub unit: &'static str,
    pub samples: Vec<Sample>,
}

fn one(value: f64) -> Vec<Sample> {
    vec![Sample {
        suffix: "",
        labels: Vec::new(),
        value,
    }]
}

/// A classic histogram's samples: a cumulative `_bucket` per bound and `+Inf`, the
/// sum and the count.
fn histogram(b: &crate::Buckets) -> Vec<Sample> {
    let mut out = Vec::with_capacity(b.buckets.len() + 3);
    let mut acc = 0;
    for (i, bound) in LATENCY_BOUNDS.iter().enumerate() {
        acc += b.buckets.get(i).copied().unwrap_or(0);
        out.push(Sample {
            suffix: "_bucket",
            labels: vec![("le", format_value(*bound))],
            value: acc as f64,
        });
    }
    out.push(Sample {
        suffix: "_bucket",
        labels: vec![("le", "+Inf".into())],
        value: b.count as f64,
    });
    out.push(Sample {
        suffix: "_sum",
        labels: Vec::new(),
        value: b.sum_s,
    });
    out.push(Sample {
        suffix: "_count",
        labels: Vec::new(),
        value: b.count as f64,
    });
    out
}

/// A summary of a histogram of µs, in seconds: the quantiles (the report's own
/// percentiles, the maximum as quantile 1), the sum and the count.
fn summary(stats: &LatencyStats) -> Vec<Sample> {
    let mut out: Vec<Sample> = QUANTILES
        .iter()
        .map(|&q| Sample {
            suffix: "",
            labels: vec![("quantile", format_value(q))],
            value: match (stats.count, q) {
                (0, _) => f64::NAN,
                (_, 1.0) => stats.max_us as f64 / 1e6,
                _ => stats.at(q * 100.0).unwrap_or(0) as f64 / 1e6,
            },
        })
        .collect();
    out.push(Sample {
        suffix: "_sum",
        labels: Vec::new(),
        value: stats.mean_us * stats.count as f64 / 1e6,
    });
    out.push(Sample {
        suffix: "_count",
        labels: Vec::new(),
        value: stats.count as f64,
    });
    out
}

/// This process's CPU time (user and system) and resident memory, from /proc.
pub(super) fn process() -> Option<(f64, f64)> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command's closing parenthesis: state is field 3, utime 14,
    // stime 15, rss 24 (in pages).
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = clock_ticks();
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    let rss: f64 = f.get(21)?.parse().ok()?;
    Some(((utime + stime) / tick, rss * page_size()))
}

fn clock_ticks() -> f64 {
    // SAFETY: sysconf reads a constant of the system and has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

fn page_size() -> f64 {
    // SAFETY: sysconf reads a constant of the system and has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as f64
    } else {
        4096.0
    }
}

/// Every family of the run so far.
pub fn families(info: &RunInfo, t: &Totals, done: bool) -> Vec<Family> {
    let mut f = vec![
        Family {
            name: "stampede_run_info",
            help: "The run: its method and URL (always 1).",
            kind: Kind::Gauge,
            unit: "",
            samples: vec![Sample {
                suffix: "",
                labels: vec![("method", info.method.clone()), ("url", info.url.clone())],
                value: 1.0,
            }],
        },
        Family {
            name: "stampede_run_start_time_seconds",
            help: "When the run started, seconds since the Unix epoch.",
            kind: Kind::Gauge,
            unit: "s",
            samples: one(info.start_unix_ms as f64 / 1000.0),
        },
        Family {
            name: "stampede_run_finished",
            help: "1 once the run has ended and these are its final figures.",
            kind: Kind::Gauge,
            unit: "",
            samples: one(if done { 1.0 } else { 0.0 }),
        },
        Family {
            name: "stampede_requests_total",
            help: "Requests answered, by the response's status code.",
            kind: Kind::Counter,
            unit: "",
            samples: t
                .statuses
                .iter()
                .map(|(code, n)| Sample {
                    suffix: "",
                    labels: vec![("status", code.to_string())],
                    value: *n as f64,
                })
                .collect(),
        },
        Family {
            name: "stampede_request_failures_total",
            help: "Requests that got no response, by kind of failure.",
            kind: Kind::Counter,
            unit: "",
            samples: t
                .errors
                .iter()
                .map(|(kind, n)| Sample {
                    suffix: "",
                    labels: vec![("kind", kind.to_string())],
                    value: *n as f64,
                })
                .collect(),
        },
        Family {
            name: "stampede_received_bytes_total",
            help: "Bytes received, headers and bodies.",
            kind: Kind::Counter,
            unit: "By",
            samples: one(t.bytes_read as f64),
        },
        Family {
            name: "stampede_stream_events_total",
            help: "Events of streamed responses received (runs that time streams).",
            kind: Kind::Counter,
            unit: "",
            samples: one(t.events as f64),
        },
        Family {
            name: "stampede_connections",
            help: "Connections held, the most in the last second.",
            kind: Kind::Gauge,
            unit: "",
            samples: one(t.connections as f64),
        },
        Family {
            name: "stampede_requests_in_flight",
            help: "Requests sent and not yet answered, the most in the last second.",
            kind: Kind::Gauge,
            unit: "",
            samples: one(t.in_flight as f64),
        },
        Family {
            name: "stampede_users",
            help: "Sessions in progress, the most in the last second.",
            kind: Kind::Gauge,
            unit: "",
            samples: one(t.users as f64),
        },
        Family {
            name: "stampede_latency_seconds",
            help: "Response time from each request's intended start (corrected for coordinated omission), since the run started.",
            kind: Kind::Summary,
            unit: "s",
            samples: summary(&t.latency),
        },
        Family {
            name: "stampede_latency_histogram_seconds",
            help: "Response time from each request's intended start (corrected for coordinated omission), since the run started, in buckets: sum by (le) over machines and histogram_quantile give the fleet's percentiles.",
            kind: Kind::Histogram,
            unit: "s",
            samples: histogram(&t.latency_buckets),
        },
        Family {
            name: "stampede_latency_uncorrected_seconds",
            help: "Response time from each request's send, since the run started.",
            kind: Kind::Summary,
            unit: "s",
            samples: summary(&t.uncorrected),
        },
        Family {
            name: "stampede_send_lag_seconds",
            help: "How late each request was sent after its intended start (a client falling behind its schedule).",
            kind: Kind::Summary,
            unit: "s",
            samples: summary(&t.send_lag),
        },
    ];
    if !t.steps.is_empty() {
        let each = |value: &dyn Fn(&crate::StepTotals) -> f64| {
            (t.steps.iter())
                .map(|st| Sample {
                    suffix: "",
                    labels: vec![("step", st.name.clone())],
                    value: value(st),
                })
                .collect()
        };
        f.push(Family {
            name: "stampede_step_requests_total",
            help: "Requests answered, by the run's request: a journey's step, a targets file's request.",
            kind: Kind::Counter,
            unit: "",
            samples: each(&|st| st.completed as f64),
        });
        f.push(Family {
            name: "stampede_step_request_failures_total",
            help: "Requests that got no response, by the run's request.",
            kind: Kind::Counter,
            unit: "",
            samples: each(&|st| st.failed as f64),
        });
        f.push(Family {
            name: "stampede_step_latency_seconds",
            help: "Response time from each request's intended start, by the run's request, since the run started.",
            kind: Kind::Summary,
            unit: "s",
            samples: (t.steps.iter())
                .flat_map(|st| {
                    summary(&st.latency).into_iter().map(|mut x| {
                        x.labels.insert(0, ("step", st.name.clone()));
                        x
                    })
                })
                .collect(),
        });
    }
    if !t.server.is_empty() {
        f.push(Family {
            name: "stampede_server_metric",
            help: "The server's own series as last scraped (--server-metrics), by their name.",
            kind: Kind::Gauge,
            unit: "",
            samples: (t.server.iter())
                .map(|(n, v)| Sample {
                    suffix: "",
                    labels: vec![("name", n.clone())],
                    value: *v,
                })
                .collect(),
        });
    }
    if let Some(j) = &t.journeys {
        f.push(Family {
            name: "stampede_journeys_started_total",
            help: "Journeys begun by the run's users.",
            kind: Kind::Counter,
            unit: "",
            samples: one(j.started as f64),
        });
        f.push(Family {
            name: "stampede_journeys_total",
            help: "Journeys that ended, by outcome: completed (every step answered, every check passed) or failed.",
            kind: Kind::Counter,
            unit: "",
            samples: [("completed", j.completed), ("failed", j.failed)]
                .into_iter()
                .map(|(outcome, n)| Sample {
                    suffix: "",
                    labels: vec![("outcome", outcome.to_string())],
                    value: n as f64,
                })
                .collect(),
        });
        f.push(Family {
            name: "stampede_step_checks_failed_total",
            help: "A journey's failed checks and missed captures, by step and check.",
            kind: Kind::Counter,
            unit: "",
            samples: (j.checks_failed.iter())
                .map(|(step, check, n)| Sample {
                    suffix: "",
                    labels: vec![("step", step.clone()), ("check", check.clone())],
                    value: *n as f64,
                })
                .collect(),
        });
    }
    if let Some(rate) = info.offered_rate {
        f.push(Family {
            name: "stampede_offered_rate",
            help: "The rate the run offers, requests per second.",
            kind: Kind::Gauge,
            unit: "",
            samples: one(rate),
        });
    }
    if let Some((cpu, rss)) = process() {
        f.push(Family {
            name: "process_cpu_seconds_total",
            help: "CPU time stampede has used, user and system.",
            kind: Kind::Counter,
            unit: "s",
            samples: one(cpu),
        });
        f.push(Family {
            name: "process_resident_memory_bytes",
            help: "stampede's resident memory.",
            kind: Kind::Gauge,
            unit: "By",
            samples: one(rss),
        });
    }
    f
}

/// A value as Prometheus writes it.
pub fn format_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{v}")
    }
}

/// A label value escaped for the text format.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The text exposition of the run so far.
pub fn render(info: &RunInfo, t: &Totals, done: bool) -> String {
    let mut o = String::new();
    for f in families(info, t, done) {
        let kind = match f.kind {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Summary => "summary",
            Kind::Histogram => "histogram",
        };
        let _ = writeln!(o, "# HELP {} {}", f.name, f.help);
        let _ = writeln!(o, "# TYPE {} {kind}", f.name);
        for s in &f.samples {
            o.push_str(f.name);
            o.push_str(s.suffix);
            if !s.labels.is_empty() {
                o.push('{');
                for (i, (n, v)) in s.labels.iter().enumerate() {
                    if i > 0 {
                        o.push(',');
                    }
                    let _ = write!(o, "{n}=\"{}\"", escape(v));
                }
                o.push('}');
            }
            let _ = writeln!(o, " {}", format_value(s.value));
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> RunInfo {
        RunInfo {
            method: "GET".into(),
            url: "http://127.0.0.1:1/a\"b".into(),
            server_address: "127.0.0.1".into(),
            server_port: 1,
            scheme: "http".into(),
            offered_rate: Some(100.0),
            start_unix_ms: 1_700_000_000_000,
            host: "h".into(),
        }
    }

    #[test]
    fn the_text_format_has_each_family_typed_with_its_samples() {
        let mut t = Totals::default();
        t.statuses.insert(200, 7);
        t.statuses.insert(503, 2);
        t.errors.insert("timeout", 1);
        let mut h = stampede_engine::Hist::default();
        for v in [1_000, 2_000, 3_000] {
            h.0.record(v).unwrap();
        }
        t.latency = h.stats();
        t.latency_buckets = crate::Buckets::within(&h, &LATENCY_BOUNDS);
        t.server = vec![("vllm:num_requests_waiting".into(), 3.0)];
        let text = render(&info(), &t, true);
        for line in [
            "# TYPE stampede_latency_histogram_seconds histogram",
            "stampede_latency_histogram_seconds_bucket{le=\"0.0005\"} 0",
            "stampede_latency_histogram_seconds_bucket{le=\"0.001\"} 1",
            "stampede_latency_histogram_seconds_bucket{le=\"0.0025\"} 2",
            "stampede_latency_histogram_seconds_bucket{le=\"0.005\"} 3",
            "stampede_latency_histogram_seconds_bucket{le=\"60\"} 3",
            "stampede_latency_histogram_seconds_bucket{le=\"+Inf\"} 3",
            "stampede_latency_histogram_seconds_count 3",
            "# TYPE stampede_server_metric gauge",
            "stampede_server_metric{name=\"vllm:num_requests_waiting\"} 3",
            "# TYPE stampede_requests_total counter",
            "stampede_requests_total{status=\"200\"} 7",
            "stampede_requests_total{status=\"503\"} 2",
            "stampede_request_failures_total{kind=\"timeout\"} 1",
            "# TYPE stampede_latency_seconds summary",
            "stampede_latency_seconds{quantile=\"0.5\"} 0.002",
            "stampede_latency_seconds{quantile=\"1\"} 0.003001",
            "stampede_latency_seconds_count 3",
            "stampede_send_lag_seconds{quantile=\"0.99\"} NaN",
            "stampede_run_info{method=\"GET\",url=\"http://127.0.0.1:1/a\\\"b\"} 1",
            "stampede_run_finished 1",
            "stampede_offered_rate 100",
        ] {
            assert!(text.lines().any(|l| l == line), "no {line:?} in\n{text}");
        }
        let sum = text
            .lines()
            .find_map(|l| l.strip_prefix("stampede_latency_seconds_sum "))
            .unwrap();
        let sum: f64 = sum.parse().unwrap();
        assert!((sum - 0.006).abs() < 0.0001, "{sum}");
        // Every sample line belongs to the family typed just above it.
        let mut family = "";
        for l in text.lines() {
            if let Some(rest) = l.strip_prefix("# TYPE ") {
                family = rest.split(' ').next().unwrap();
            } else if !l.starts_with('#') {
                assert!(l.starts_with(family), "{l} outside {family}");
            }
        }
    }
}
