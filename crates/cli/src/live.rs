//! The live view of a run: a progress bar with the last second's req/s, p50, p99,
//! errors and connections on a terminal; one plain line per second when stderr is not
//! a terminal (`load` only, so the dialects keep their tools' output); ab's heartbeat
//! lines; the web dashboard's updates; and the live metrics outputs' seconds.
//!
//! Seconds come from the engine's [`Live`] view, released once every worker has
//! finished them, so what is shown live is what the final report will say.

use std::io::IsTerminal;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use stampede_engine::{Control, Interval, Live};
use stampede_report::units::{human_us, thousands};
use stampede_report::{live_fragment, LiveStatus};

use crate::console::interrupted;
use stampede_metrics::dashboard::Dashboard;
use stampede_metrics::Hub;

/// How progress is shown while a run goes.
#[derive(Default)]
pub struct ProgressOptions {
    /// No progress at all (`-q`).
    pub quiet: bool,
    /// ab's "Completed N requests" lines every this many requests.
    pub heartbeat: Option<u64>,
    /// h2load's "progress: N% done" lines on stdout, every tenth of the requests.
    pub deciles: bool,
    /// One plain line per second when stderr is not a terminal.
    pub lines: bool,
    /// The web dashboard, when one was asked for.
    pub dashboard: Option<Arc<Dashboard>>,
    /// The live metrics outputs, when one was asked for.
    pub metrics: Option<Arc<Hub>>,
    /// Called with each second as the workers finish it (a dialect's periodic report).
    pub each_second: Option<EachSecond>,
    /// The server's Prometheus endpoint, scraped during the run (`--server-metrics`).
    pub scrape: Option<stampede_metrics::scrape::ScrapeSpec>,
    /// Stop the run once this many requests have failed (GuideLLM's `max_errors`).
    pub max_failures: Option<u64>,
}

/// What is called with each second of a watched run.
pub type EachSecond = Box<dyn FnMut(&stampede_engine::LiveSecond) + Send>;

impl ProgressOptions {
    /// Whether anything shows per-second figures: the terminal bar, the plain lines,
    /// or the dashboard.
    pub fn shows_seconds(&self) -> bool {
        self.dashboard.is_some()
            || self.metrics.is_some()
            || self.each_second.is_some()
            || (!self.quiet && (self.lines || std::io::stderr().is_terminal()))
    }
}

/// What the view needs to know about the run.
pub struct RunShape {
    total: Option<u64>,
    duration: Option<Duration>,
    threads: usize,
    users: bool,
}

impl RunShape {
    /// The shape of a run of these parts (one, or one per server).
    pub fn of(parts: &[stampede_engine::Part]) -> RunShape {
        let first = parts[0].plan.config();
        let each = || parts.iter().map(|p| p.plan.config());
        RunShape {
            total: each().map(|c| c.ends.requests).sum(),
            duration: first.ends.duration,
            threads: each().map(|c| c.size.threads).sum(),
            users: first.arrivals.shape.has_sessions(),
        }
    }

    /// Share of the run done, when it is bounded.
    fn progress(&self, done: u64, elapsed: Duration) -> Option<f64> {
        match (self.total, self.duration) {
            (Some(n), _) if n > 0 => Some((done as f64 / n as f64).min(1.0)),
            (None, Some(d)) if !d.is_zero() => {
                Some((elapsed.as_secs_f64() / d.as_secs_f64()).min(1.0))
            }
            _ => None,
        }
    }
}

/// The last second in a few words: `152,340 req/s  p50 412µs  p99 1.20ms  …`, ending
/// with the requests still outstanding (a stall shows as 0 req/s with them held).
fn second_line(i: &Interval, failed_total: u64, users: bool) -> String {
    let p = |q: f64| human_us(i.latency.at(q).unwrap_or(0) as f64);
    let level = if users {
        format!("{} users", thousands(i.users))
    } else {
        format!("{} conns", thousands(i.connections))
    };
    format!(
        "{} req/s  p50 {}  p99 {}  errors {} ({} total)  {level}  {} max in flight",
        thousands(i.completed),
        p(50.0),
        p(99.0),
        thousands(i.failed),
        thousands(failed_total),
        thousands(i.in_flight)
    )
}

/// One second as a plain line for a log: `[   3s] 1,000 req/s  p50 …  100%`.
fn plain_line(i: &Interval, failed_total: u64, users: bool, progress: Option<f64>) -> String {
    let pct = progress.map_or(String::new(), |p| format!("  {:.0}%", p * 100.0));
    format!(
        "[{:>4}s] {}{pct}",
        i.t + 1,
        second_line(i, failed_total, users)
    )
}

/// Shows progress until the run ends (signalled through `control.stop`).
///
/// Long on purpose: the watcher's loop, one tick a time: read the counters, draw, publish.
pub fn watch(control: Arc<Control>, run: RunShape, mut opts: ProgressOptions) {
    let start = Instant::now();
    let tty = std::io::stderr().is_terminal() && !opts.quiet;
    let lines = opts.lines && !opts.quiet && !std::io::stderr().is_terminal();
    let mut live = Live::new(run.threads);
    let mut bar: Option<indicatif::ProgressBar> = None;
    let mut next_beat = opts.heartbeat.filter(|_| !opts.quiet);
    let mut next_decile = 1u64;
    let mut last: Option<Interval> = None;
    // The dashboard redraws every chart from every second so far; it needs no histograms.
    let mut seconds: Vec<Interval> = Vec::new();
    loop {
        // A tick at most 50 ms long, ended early by a second the workers finish: the
        // counters are redrawn on every tick, a second shown as soon as it is whole.
        let mut came = live.wait(&control, Duration::from_millis(50));
        if interrupted()
            || crate::fleet::stop_asked()
            || opts
                .max_failures
                .is_some_and(|n| control.failed.load(Ordering::Relaxed) >= n)
        {
            control.stop();
        }
        let done = control.completed.load(Ordering::Relaxed);
        let failed = control.failed.load(Ordering::Relaxed);
        let finished = control.stop.load(Ordering::Relaxed);
        if let (Some(step), Some(beat)) = (opts.heartbeat, next_beat.as_mut()) {
            while done + failed >= *beat && run.total.is_none_or(|t| *beat <= t) {
                let line = format!("Completed {beat} requests");
                match &bar {
                    Some(b) => b.println(line),
                    None => eprintln!("{line}"),
                }
                *beat += step;
            }
        }
        if let (true, Some(total)) = (opts.deciles && !opts.quiet, run.total) {
            while next_decile <= 10 && (done + failed) * 10 >= next_decile * total {
                crate::console::out(&format!("progress: {}% done\n", next_decile * 10));
                next_decile += 1;
            }
        }
        // The run has ended (every worker filed its last, partial second before
        // `stop` was set): what came since the last tick is printed — every second
        // left, a worker that filed nothing for it waited for no longer — then the
        // view ends.
        came.extend(match finished {
            true => live.finish(&control),
            false => live.poll(&control),
        });
        let fresh: Vec<Interval> = came
            .into_iter()
            .map(|s| {
                if let Some(m) = &opts.metrics {
                    m.second(&s);
                }
                if let Some(f) = opts.each_second.as_mut() {
                    f(&s);
                }
                s.interval
            })
            .collect();
        let elapsed = start.elapsed();
        let progress = run.progress(done + failed, elapsed);
        if finished {
            if let Some(b) = bar.take() {
                b.finish_and_clear();
            }
            if lines {
                // A last second under half a second long is no second of the run (the
                // CSV and the HTML leave it out too); the totals keep its counts.
                // A timed run lasts its duration (the result says so too); the
                // watcher's own clock started before the run's first connection.
                let secs = run
                    .duration
                    .map_or(elapsed, |d| d.min(elapsed))
                    .as_secs_f64();
                let only = last.is_none() && fresh.len() == 1;
                let n = fresh.len();
                let shown = (fresh.iter().enumerate())
                    .filter(|(k, i)| k + 1 < n || only || !stampede_report::sliver(i.t, secs));
                for (_, i) in shown {
                    eprintln!("{}", plain_line(i, failed, run.users, progress));
                }
            }
            return;
        }
        for mut i in fresh {
            // A timed run's last sliver of a second (its answers after the end) may
            // be filed before the end is seen here: no line for it either.
            let sliver = (run.duration)
                .is_some_and(|d| i.t > 0 && stampede_report::sliver(i.t, d.as_secs_f64()));
            if lines && !sliver {
                eprintln!("{}", plain_line(&i, failed, run.users, progress));
            }
            if opts.dashboard.is_some() {
                i.histogram = String::new();
                i.histogram_uncorrected = String::new();
                seconds.push(i.clone());
            }
            last = Some(i);
        }
        if let Some(d) = &opts.dashboard {
            if seconds.last().map(|i| i.t) != d.shown() {
                let status = LiveStatus {
                    elapsed_s: elapsed.as_secs_f64(),
                    progress,
                    completed: done,
                    failed,
                    users: run.users,
                };
                d.second(
                    seconds.last().map(|i| i.t),
                    live_fragment(&seconds, &status),
                );
            }
        }
        if tty && bar.is_none() && elapsed >= Duration::from_secs(1) {
            // Shown from the first second on (a shorter run leaves no bar behind), its
            // clock counting from the run's start; the figures are cut at the
            // terminal's width rather than wrapped onto a second line.
            let b = match (run.total, run.duration) {
                (Some(n), _) => indicatif::ProgressBar::new(n),
                (None, Some(d)) => indicatif::ProgressBar::new(d.as_millis() as u64),
                _ => indicatif::ProgressBar::new_spinner(),
            }
            .with_elapsed(elapsed);
            b.set_style(
                indicatif::ProgressStyle::with_template(
                    "{elapsed_precise} [{bar:24}] {percent:>3}% {wide_msg}",
                )
                .expect("valid template")
                .progress_chars("=> "),
            );
            b.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            bar = Some(b);
        }
        if let Some(b) = &bar {
            match run.total {
                Some(_) => b.set_position(done + failed),
                None => b.set_position(elapsed.as_millis() as u64),
            }
            b.set_message(match &last {
                Some(i) => second_line(i, failed, run.users),
                None => format!("{} done, {} failed", thousands(done), thousands(failed)),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stampede_engine::{Hist, LatencyStats};

    #[test]
    fn a_second_in_a_few_words() {
        let mut h = Hist::default();
        for v in [300, 400, 500, 2500] {
            h.0.record(v).unwrap();
        }
        let i = Interval {
            t: 3,
            completed: 152_340,
            failed: 2,
            bytes_read: 0,
            latency: LatencyStats::of(&h.0),
            histogram: String::new(),
            histogram_uncorrected: String::new(),
            connections: 64,
            in_flight: 64,
            users: 0,
            events: 0,
        };
        assert_eq!(
            second_line(&i, 5, false),
            "152,340 req/s  p50 400µs  p99 2.50ms  errors 2 (5 total)  64 conns  64 max in flight"
        );
    }
}
