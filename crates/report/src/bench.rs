//! Bench reports: the scenarios × targets table (mean ± σ of req/s, like the
//! five-framework summary of the reference runs), the verdicts against the baseline,
//! the details per cell (with the stream figures of streaming scenarios), and
//! comparisons between two benches; as terminal text and as Markdown.

use stampede_lab::stats::{Comparison, Shift, Summary, Test};
use stampede_lab::summary::{BenchSummary, Cell, Change, Metric, StreamCell};

use crate::units::{human_bytes, thousands};

fn mean_sd(s: &Option<Summary>) -> String {
    match s {
        Some(s) if s.n > 1 => format!(
            "{} ± {}",
            thousands(s.mean.round() as u64),
            thousands(s.sd.round() as u64)
        ),
        Some(s) => thousands(s.mean.round() as u64),
        None => "—".into(),
    }
}

fn ms(s: &Option<Summary>) -> String {
    s.as_ref().map_or("—".into(), ms_of)
}

/// A mean in ms, to a precision that suits its size.
pub(crate) fn ms_of(s: &Summary) -> String {
    if s.mean >= 100.0 {
        format!("{:.0} ms", s.mean)
    } else if s.mean >= 1.0 {
        format!("{:.2} ms", s.mean)
    } else {
        format!("{:.3} ms", s.mean)
    }
}

/// `1.92× faster (geometric means, 95% CI 1.85–1.99, Welch p=0.001)`: the ratio, its
/// interval and the test all by one method (see `stampede_lab::stats`), named.
pub fn verdict(c: &Comparison, higher: &str, lower: &str) -> String {
    let word = match c.verdict {
        Shift::Higher => higher,
        Shift::Lower => lower,
        Shift::NoDifference => "no significant difference",
        Shift::Withheld => {
            let why = c.withheld.as_deref().unwrap_or(
                "a compared run was client-bound (the figures describe the load generator)",
            );
            return format!("{:.2}×, NO VERDICT: {why}; {}", c.ratio, ratio_interval(c));
        }
    };
    let (estimate, test) = match c.test {
        Test::Welch => ("geometric means", "Welch"),
        Test::MannWhitney => ("Hodges-Lehmann", "Mann-Whitney"),
    };
    if c.test == Test::Welch && c.ratio_ci95.is_none() {
        // One run on a side: no spread, so no test, and no p-value to print.
        return format!(
            "{:.2}×, no test: one run on a side has no spread to test against (run each at least twice)",
            c.ratio
        );
    }
    let bound = match &c.at_least {
        Some(why) => format!(" at least, {why}"),
        None => String::new(),
    };
    format!(
        "{:.2}× {word}{bound} ({estimate}, {}, {test} p={:.3})",
        c.ratio,
        ratio_interval(c),
        c.p_value
    )
}

/// `95% CI 1.85–1.99`, or why there is none.
pub fn ratio_interval(c: &Comparison) -> String {
    match c.ratio_ci95 {
        Some((lo, hi)) => format!("95% CI {lo:.2}–{hi:.2}"),
        None => "too few runs for an interval".into(),
    }
}

/// A verdict in words where "better" depends on the metric: more req/s, or a lower p99.
fn metric_verdict(c: &Comparison, metric: Metric) -> String {
    match metric {
        Metric::Rps => verdict(c, "faster", "slower"),
        Metric::P99Ms => format!("p99 {}", verdict(c, "higher (worse)", "lower (better)")),
        Metric::MaxRate => format!(
            "capacity {}",
            verdict(c, "higher (better)", "lower (worse)")
        ),
    }
}

/// Whether a verdict means the cell did better than the baseline on `metric`.
pub(crate) fn better(v: Shift, metric: Metric) -> bool {
    match v {
        Shift::Higher => metric.higher_is_better(),
        Shift::Lower => !metric.higher_is_better(),
        Shift::NoDifference | Shift::Withheld => false,
    }
}

/// The row's figure for a cell: req/s, or p99 for open load.
fn figure(c: &Cell, (metric, per): (Metric, stampede_engine::capacity::Per)) -> String {
    match metric {
        Metric::Rps => mean_sd(&c.rps),
        Metric::P99Ms => match &c.p99_ms {
            Some(s) if s.n > 1 => format!("p99 {:.2} ± {:.2} ms", s.mean, s.sd),
            Some(s) => format!("p99 {:.2} ms", s.mean),
            None => "—".into(),
        },
        Metric::MaxRate => match &c.max_rate {
            Some(_) => format!("max {} {}", mean_sd(&c.max_rate), per.unit()),
            None => "—".into(),
        },
    }
}

fn cell_verdict(c: &Cell, baseline: &str, metric: Metric) -> String {
    match &c.vs_baseline {
        Some(v) => match &c.cpu_vs_baseline {
            Some(cpu) => format!(
                "{}; the server's CPU per request, which the client's pace does not set: {}",
                metric_verdict(v, metric),
                cpu_verdict(cpu)
            ),
            None => metric_verdict(v, metric),
        },
        None if c.target == baseline => "baseline".into(),
        None => "—".into(),
    }
}

/// The server's CPU per request against the baseline's, in words (lower is better).
pub(crate) fn cpu_verdict(c: &Comparison) -> String {
    verdict(c, "higher (costlier)", "lower (cheaper)")
}

/// A streaming cell's figures in a line: means over the runs.
fn stream_line(st: &StreamCell) -> String {
    let mut line = format!(
        "TTFT p50 {} p99 {}, ITL p50 {} p99 {}",
        ms_of(&st.ttft_p50_ms),
        ms_of(&st.ttft_p99_ms),
        ms_of(&st.itl_p50_ms),
        ms_of(&st.itl_p99_ms),
    );
    if let Some(t) = &st.tokens_per_s {
        line += &format!(", {:.1} tokens/s", t.mean);
    }
    if let Some(g) = &st.goodput_rps {
        line += &format!(", goodput {:.2} req/s", g.mean);
    }
    line
}

/// The Markdown report's table of the streaming scenarios (none: nothing).
fn streams_markdown(s: &BenchSummary) -> String {
    let mut out = String::new();
    for r in &s.rows {
        for c in &r.cells {
            let Some(st) = &c.stream else { continue };
            if out.is_empty() {
                out += "\n## Streams\n\nMeans over the runs; the first event is an OpenAI stream's first token (TTFT), the gaps between events its inter-token latency (ITL), both from each request's intended start.\n\n| scenario | target | TTFT p50 | TTFT p99 | ITL p50 | ITL p99 | tokens/s | goodput req/s |\n|---|---|---:|---:|---:|---:|---:|---:|\n";
            }
            out += &format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
                md(&r.scenario),
                md(&c.target),
                ms_of(&st.ttft_p50_ms),
                ms_of(&st.ttft_p99_ms),
                ms_of(&st.itl_p50_ms),
                ms_of(&st.itl_p99_ms),
                st.tokens_per_s
                    .as_ref()
                    .map_or("—".into(), |t| format!("{:.1}", t.mean)),
                st.goodput_rps
                    .as_ref()
                    .map_or("—".into(), |g| format!("{:.2}", g.mean)),
            );
        }
    }
    out
}

fn pad(s: &str, w: usize) -> String {
    let n = s.chars().count();
    if n >= w {
        s.to_string()
    } else {
        format!("{s}{}", " ".repeat(w - n))
    }
}

fn opt_f(v: Option<f64>) -> String {
    v.map_or("—".into(), |x| format!("{x:.1}"))
}

fn rss(v: Option<u64>) -> String {
    v.map_or("—".into(), |kb| human_bytes(kb as f64 * 1024.0))
}

/// The terminal table: req/s (mean ± σ) per scenario × target, then one line per
/// cell with latency, failures, resources and the verdict.
pub fn bench_table(s: &BenchSummary) -> String {
    let mut out = String::new();
    out += &format!(
        "Plan: {}  (bench {})\nMachine: {}\n",
        s.plan, s.bench_id, s.machine
    );
    if let Some(d) = &s.description {
        out += &format!("Note: {d}\n");
    }
    out += "\n";
    let names: Vec<&str> = s.targets.iter().map(|t| t.name.as_str()).collect();
    const HEADER: &str = "req/s mean ± sd (open: p99)";
    let w0 = s
        .rows
        .iter()
        .map(|r| r.scenario.chars().count())
        .max()
        .unwrap_or(8)
        .max(HEADER.chars().count())
        + 2;
    let cols: Vec<usize> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            s.rows
                .iter()
                .map(|r| figure(&r.cells[i], (r.metric, r.per)).chars().count() + 2)
                .max()
                .unwrap_or(0)
                .max(n.chars().count())
                + 3
        })
        .collect();
    out += &pad(HEADER, w0);
    for (n, w) in names.iter().zip(&cols) {
        out += &pad(n, *w);
    }
    out = out.trim_end().to_string() + "\n";
    for r in &s.rows {
        out += &pad(&r.scenario, w0);
        for (c, w) in r.cells.iter().zip(&cols) {
            let mut v = figure(c, (r.metric, r.per));
            if !c.notes.is_empty() {
                v += " !";
            }
            out += &pad(&v, *w);
        }
        out = out.trim_end().to_string() + "\n";
    }
    // The marks explained where they are first seen: under the table.
    let flagged = s
        .rows
        .iter()
        .any(|r| r.cells.iter().any(|c| !c.notes.is_empty()));
    let noted = s
        .rows
        .iter()
        .any(|r| r.cells.iter().any(|c| !c.info.is_empty()));
    if flagged {
        out += "  ! a flag: something in the cell's runs may make its figures mislead (below)\n";
    }
    if noted {
        out += "  · a note: what was seen, for reading the figures (below)\n";
    }
    out += "\n";
    for r in &s.rows {
        out += &format!("{}\n", r.scenario);
        for c in &r.cells {
            out += &format!(
                "  {}  median {} req/s  mean p50 {}  mean p99 {}  failed {}  non-2xx {}  target CPU {} µs/req  peak RSS {}  limit {}  {}\n",
                pad(&c.target, names.iter().map(|n| n.len()).max().unwrap_or(0)),
                c.rps.as_ref().map_or("—".into(), |s| thousands(s.median.round() as u64)),
                ms(&c.p50_ms),
                ms(&c.p99_ms),
                c.failed,
                c.non_2xx,
                opt_f(c.target_cpu_us_per_req),
                rss(c.target_peak_rss_kb),
                md(c.limit.as_deref().unwrap_or("—")),
                md(&cell_verdict(c, &s.baseline, r.metric)),
            );
            if let Some(st) = &c.stream {
                out += &format!("      streams: {}\n", stream_line(st));
            }
            if !c.outlier_runs.is_empty() {
                out += &format!("      outlier runs: {:?}\n", c.outlier_runs);
            }
            for n in &c.notes {
                out += &format!("      ! {n}\n");
            }
            for n in &c.info {
                out += &format!("      · {n}\n");
            }
        }
    }
    for t in s.targets.iter().filter(|t| !t.ok) {
        out += &format!("\n! target {}: {}\n", t.name, t.status);
        if let Some(tail) = &t.stderr_tail {
            for l in tail
                .lines()
                .rev()
                .take(5)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
            {
                out += &format!("    {l}\n");
            }
        }
    }
    if s.interrupted {
        out += "\n! the bench was interrupted; the runs above are those that finished\n";
    }
    out
}

/// The Markdown report: the same table and details, the targets and the environment.
///
/// Long on purpose: the Markdown report top to bottom, section by section.
/// Text from outside the report (a server's Content-Type or body excerpt in a note, a
/// version, a status, a name) as Markdown shows it literally: HTML's special
/// characters as entities (a `<script>` stays text), `|` escaped so a table keeps its
/// columns, backticks and line breaks made harmless, control characters dropped.
pub fn md(text: &str) -> String {
    let mut o = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '|' => o.push_str("\\|"),
            '`' => o.push_str("&#96;"),
            '\n' | '\r' | '\t' => o.push(' '),
            c if c.is_control() => {}
            c => o.push(c),
        }
    }
    o
}

pub fn bench_markdown(s: &BenchSummary) -> String {
    let mut out = format!(
        "# {}\n\nBench {} — {}\n\n",
        md(&s.plan),
        s.bench_id,
        md(&s.machine)
    );
    if let Some(d) = &s.description {
        out += &format!("{d}\n\n");
    }
    out += &format!(
        "Req/s, mean ± standard deviation over the measured runs (for open load, where the schedule sets the rate, p99 latency from the intended start instead; for a capacity search, the highest rate that met its conditions); verdicts against **{}** by {} on the runs' logarithms at the 5 % level with a {:.0} % noise threshold (the ratio, its 95 % interval and the p-value by that one method).\n\n",
        s.baseline,
        match s.test {
            Test::Welch => "Welch's t-test (ratios of geometric means)",
            Test::MannWhitney => "the Mann-Whitney U test (Hodges-Lehmann ratios)",
        },
        s.noise * 100.0
    );
    out += "| scenario |";
    for t in &s.targets {
        out += &format!(" {} |", md(&t.name));
    }
    out += "\n|---|";
    out += &"---:|".repeat(s.targets.len());
    out += "\n";
    for r in &s.rows {
        out += &format!("| {} |", md(&r.scenario));
        for c in &r.cells {
            let v = match &c.vs_baseline {
                Some(v) => format!(
                    " ({:.2}×{})",
                    v.ratio,
                    match (v.verdict, r.metric) {
                        (Shift::NoDifference, _) => "",
                        (Shift::Withheld, _) => match c.cpu_vs_baseline.as_ref().map(|c| c.verdict)
                        {
                            Some(Shift::Lower) => " no verdict: client-bound; server CPU/req lower",
                            Some(Shift::Higher) =>
                                " no verdict: client-bound; server CPU/req higher",
                            Some(_) => " no verdict: client-bound; server CPU/req the same",
                            None => " no verdict: client-bound",
                        },
                        (v, m) if better(v, m) => " better",
                        _ => " worse",
                    }
                ),
                None => String::new(),
            };
            out += &format!(
                " {}{}{} |",
                figure(c, (r.metric, r.per)),
                v,
                if c.notes.is_empty() { "" } else { " ⚠" }
            );
        }
        out += "\n";
    }
    if s.rows
        .iter()
        .any(|r| r.cells.iter().any(|c| !c.notes.is_empty()))
    {
        out += "\n⚠ a flag on the cell: something in its runs may make its figures mislead; see Flags.\n";
    }
    out += "\n## Details\n\n| scenario | target | runs | req/s median | 95 % CI | p50 | p99 | failed | non-2xx | target CPU µs/req | target peak RSS | client CPU µs/req | limit | vs baseline |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n";
    for r in &s.rows {
        for c in &r.cells {
            let (med, ci) = match &c.rps {
                Some(x) => (
                    thousands(x.median.round() as u64),
                    format!(
                        "{}–{}",
                        thousands(x.ci95.0.max(0.0).round() as u64),
                        thousands(x.ci95.1.round() as u64)
                    ),
                ),
                None => ("—".into(), "—".into()),
            };
            out += &format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                md(&r.scenario),
                md(&c.target),
                c.runs,
                med,
                ci,
                ms(&c.p50_ms),
                ms(&c.p99_ms),
                c.failed,
                c.non_2xx,
                opt_f(c.target_cpu_us_per_req),
                rss(c.target_peak_rss_kb),
                opt_f(c.client_cpu_us_per_req),
                md(c.limit.as_deref().unwrap_or("—")),
                md(&cell_verdict(c, &s.baseline, r.metric))
            );
        }
    }
    out += &streams_markdown(s);
    let notes: Vec<String> = s.flags().iter().map(|f| format!("- {}", md(f))).collect();
    if !notes.is_empty() {
        out += "\n## Flags\n\n";
        out += &notes.join("\n");
        out += "\n";
    }
    let info: Vec<String> = s.infos().iter().map(|n| format!("- {}", md(n))).collect();
    if !info.is_empty() {
        out += "\n## Notes\n\n";
        out += &info.join("\n");
        out += "\n";
    }
    out += "\n## Targets\n\n| target | version | status |\n|---|---|---|\n";
    for t in &s.targets {
        out += &format!(
            "| {} | {} | {} |\n",
            md(&t.name),
            md(t.version.as_deref().unwrap_or("—")),
            md(&t.status)
        );
    }
    out += "\n## Environment\n\n```json\n";
    out += &serde_json::to_string_pretty(&s.environment).unwrap_or_default();
    out += "\n```\n";
    if s.interrupted {
        out += "\nThe bench was interrupted; the figures are those of the runs that finished.\n";
    }
    out
}

/// A comparison of two benches, one line per target × scenario both measured.
pub fn changes_table(before: i64, after: i64, changes: &[Change]) -> String {
    let mut out = format!("Bench {after} against bench {before} (req/s, mean ± σ; p99 mean; open load is judged on p99, a capacity search on the highest rate that passed)\n\n");
    if changes.is_empty() {
        out += "The two benches have no target × scenario in common.\n";
        return out;
    }
    let w = changes
        .iter()
        .map(|c| c.target.len() + c.scenario.len() + 3)
        .max()
        .unwrap_or(0)
        + 2;
    for c in changes {
        out += &format!(
            "{}{} → {}   p99 {:.2} → {:.2} ms   {}\n",
            pad(&format!("{} / {}", c.scenario, c.target), w),
            mean_sd(&Some(c.before.clone())),
            mean_sd(&Some(c.after.clone())),
            c.p99_ms.0,
            c.p99_ms.1,
            metric_verdict(&c.comparison, c.metric)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_withheld_verdict_says_why() {
        let mut c = Comparison {
            ratio: 0.98,
            ratio_ci95: Some((0.95, 1.01)),
            p_value: 0.2,
            test: Test::Welch,
            verdict: Shift::NoDifference,
            withheld: None,
            at_least: None,
        };
        c.withhold(stampede_lab::summary::UNCONNECTED);
        let v = verdict(&c, "faster", "slower");
        assert!(
            v.starts_with("0.98×, NO VERDICT: a compared run could not open"),
            "{v}"
        );
        c.withhold(stampede_lab::summary::CLIENT_BOUND);
        assert!(verdict(&c, "faster", "slower").contains("client-bound"));
    }

    #[test]
    fn a_client_bound_cell_gives_the_server_s_cpu_verdict_beside_the_withheld_one() {
        let compare = stampede_lab::stats::compare;
        let mut rps = compare(
            &[200.0, 201.0, 199.0],
            &[215.0, 216.0, 214.0],
            0.02,
            Test::Welch,
        );
        rps.withhold(stampede_lab::summary::CLIENT_BOUND);
        let cpu = compare(&[4.9, 5.0, 4.8], &[4.5, 4.4, 4.5], 0.02, Test::Welch);
        let c = Cell {
            target: "b".into(),
            runs: 3,
            rps: None,
            p50_ms: None,
            p99_ms: None,
            max_rate: None,
            failed: 0,
            non_2xx: 0,
            completed: 3,
            target_cpu_us_per_req: Some(4.5),
            target_peak_rss_kb: None,
            client_cpu_us_per_req: None,
            vs_baseline: Some(rps),
            cpu_vs_baseline: Some(cpu),
            outlier_runs: Vec::new(),
            notes: Vec::new(),
            limit: Some("client-bound ×3".into()),
            client_bound: true,
            unconnected: false,
            info: Vec::new(),
            stream: None,
        };
        let v = cell_verdict(&c, "a", Metric::Rps);
        assert!(
            v.starts_with("1.08×, NO VERDICT: a compared run was client-bound"),
            "{v}"
        );
        assert!(
            v.contains("the server's CPU per request, which the client's pace does not set: 0.91× lower (cheaper)"),
            "{v}"
        );
    }

    #[test]
    fn text_from_a_server_stays_text_in_markdown() {
        assert_eq!(
            md("text/html; <script>alert(1)</script> | a\nb `x` & \u{1b}[31m"),
            "text/html; &lt;script&gt;alert(1)&lt;/script&gt; \\| a b &#96;x&#96; &amp; [31m"
        );
    }

    #[test]
    fn one_run_a_side_prints_no_test_and_no_p_value() {
        let one = stampede_lab::stats::compare(&[100.0], &[150.0], 0.02, Test::Welch);
        let v = verdict(&one, "faster", "slower");
        assert!(v.starts_with("1.50×, no test: one run on a side"), "{v}");
        assert!(!v.contains("p="), "{v}");
        let three = stampede_lab::stats::compare(
            &[100.0, 101.0, 99.0],
            &[150.0, 151.0, 149.0],
            0.02,
            Test::Welch,
        );
        assert!(verdict(&three, "faster", "slower").contains("Welch p="));
    }

    #[test]
    fn a_bound_says_it_is_one() {
        let mut c = stampede_lab::stats::compare(
            &[21_000.0, 21_100.0, 20_900.0],
            &[6_000.0, 6_100.0, 5_900.0],
            0.02,
            Test::Welch,
        );
        c.at_least = Some(stampede_lab::summary::AT_LEAST.into());
        let v = verdict(&c, "faster", "slower");
        assert!(
            v.starts_with("0.29× slower at least, the side ahead was client-bound"),
            "{v}"
        );
    }
}
