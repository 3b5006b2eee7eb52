//! GuideLLM's `benchmarks.csv`: three header rows (group, metric, statistic) and one
//! row per benchmark, each distribution as its mean, median, standard deviation and
//! percentile list, under GuideLLM's column names.

use super::{Dist, Figures, Report};

/// A CSV field, quoted when it must be.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Which distribution of a benchmark's figures a column group shows.
type Pick = fn(&Figures) -> &Dist;

/// The CSV text.
pub fn csv(r: &Report) -> String {
    let mut head: Vec<[String; 3]> = Vec::new();
    let mut rows: Vec<Vec<String>> = vec![Vec::new(); r.benchmarks.len()];
    let figs: Vec<Figures> = r
        .benchmarks
        .iter()
        .map(|b| Figures::of(b, &r.isl))
        .collect();
    let mut col = |g: &str, n: &str, s: &str, v: &dyn Fn(usize, &Figures) -> String| {
        head.push([g.into(), n.into(), s.into()]);
        for (i, f) in figs.iter().enumerate() {
            rows[i].push(v(i, f));
        }
    };
    col("Run Info", "Run Index", "", &|i, _| i.to_string());
    col("Benchmark", "Type", "", &|_, _| {
        "generative_benchmark".into()
    });
    col("Benchmark", "Strategy", "", &|i, _| {
        r.benchmarks[i].label.clone()
    });
    col("Timings", "Start Time", "", &|_, f| {
        super::console_time(f.start)
    });
    col("Timings", "End Time", "", &|_, f| {
        super::console_time(f.end)
    });
    col("Timings", "Duration", "Sec", &|_, f| f.duration.to_string());
    col("Request Counts", "Successful", "", &|_, f| {
        f.successful.to_string()
    });
    col("Request Counts", "Incomplete", "", &|_, f| {
        f.incomplete.to_string()
    });
    col("Request Counts", "Errored", "", &|_, f| {
        f.errored.to_string()
    });
    col("Request Counts", "Total", "", &|_, f| {
        (f.successful + f.incomplete + f.errored).to_string()
    });
    let dists: [(&str, &str, Pick); 9] = [
        ("Request Latency", "Successful Sec", |f| {
            &f.request_latency_s
        }),
        ("Streaming Iterations", "Successful Count", |f| {
            &f.iterations
        }),
        ("Time to First Token", "Successful ms", |f| &f.ttft_ms),
        ("Time per Output Token", "Successful ms", |f| &f.tpot_ms),
        ("Inter Token Latency", "Successful ms", |f| &f.itl_ms),
        ("Server Throughput", "Successful Requests/Sec", |f| {
            &f.requests_per_second
        }),
        ("Server Throughput", "Successful Concurrency", |f| {
            &f.concurrency
        }),
        ("Token Metrics", "Successful Output Tokens", |f| {
            &f.output_tokens
        }),
        ("Token Throughput", "Successful Output Tokens/Sec", |f| {
            &f.output_tokens_per_second
        }),
    ];
    for (g, n, d) in dists {
        col(g, n, "Mean", &|_, f| d(f).mean.to_string());
        col(g, n, "Median", &|_, f| d(f).median.to_string());
        col(g, n, "Std Dev", &|_, f| d(f).std_dev.to_string());
        col(g, n, "Percentiles", &|_, f| {
            format!(
                "[{}]",
                d(f).p
                    .iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        });
    }
    let mut o = String::new();
    for k in 0..3 {
        o += &head
            .iter()
            .map(|h| field(&h[k]))
            .collect::<Vec<_>>()
            .join(",");
        o += "\n";
    }
    for row in rows {
        o += &row.iter().map(|c| field(c)).collect::<Vec<_>>().join(",");
        o += "\n";
    }
    o
}
