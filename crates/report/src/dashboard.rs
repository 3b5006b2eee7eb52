//! The live dashboard's page and the fragment it shows each second.
//!
//! The page is the HTML report's style plus a dozen lines of script: it subscribes to
//! the run's server-sent events, swaps in each second's fragment (cards and the same
//! SVG charts the final report draws, rendered here), and at the end replaces itself
//! with the final report, which arrives whole in the last event. Drawing on this side
//! keeps one chart renderer for live and final views, and the page needs no library.

use std::fmt::Write as _;

use stampede_engine::Interval;

use crate::html::{card, document, ms, over_time};
use crate::svg::esc;
use crate::units::thousands;

/// Counters of the run so far, beside its finished seconds.
#[derive(Debug, Clone, Default)]
pub struct LiveStatus {
    /// Seconds since the run started.
    pub elapsed_s: f64,
    /// Share of the run done, 0 to 1, when it is bounded.
    pub progress: Option<f64>,
    /// Responses so far.
    pub completed: u64,
    /// Failed requests so far.
    pub failed: u64,
    /// Whether the shape has sessions (users), to chart them.
    pub users: bool,
}

const SCRIPT: &str = r#"(function(){
var live=document.getElementById('live'),state=document.getElementById('state');
var es=new EventSource('events');
es.addEventListener('second',function(e){live.innerHTML=e.data;state.textContent='running';});
es.addEventListener('report',function(e){es.close();document.open();document.write(e.data);document.close();});
es.onerror=function(){state.textContent=es.readyState===EventSource.CLOSED?'disconnected':'waiting for the run…';};
})();"#;

/// The dashboard page for a run of `what` (method and URL), before any second is in.
pub fn dashboard_page(what: &str) -> String {
    let body = format!(
        "<h1>stampede live</h1><p class=\"muted\">{} — <span id=\"state\">connecting…</span></p><div id=\"live\"><p class=\"muted\">The first second is on its way.</p></div>",
        esc(what)
    );
    document(&format!("live: {what}"), &body, SCRIPT)
}

/// What the page shows after `intervals` (every finished second so far, in order).
pub fn live_fragment(intervals: &[Interval], s: &LiveStatus) -> String {
    let mut o = String::new();
    let last = intervals.last();
    let t = last.map_or(0, |i| i.t + 1);
    let _ = write!(
        o,
        "<div class=\"cards\" data-second=\"{t}\" data-completed=\"{}\">",
        s.completed
    );
    let progress = s
        .progress
        .map_or(String::new(), |p| format!(" · {:.0} %", p * 100.0));
    card(
        &mut o,
        "elapsed",
        &format!("{:.0} s{progress}", s.elapsed_s),
    );
    let lat = |p: f64| last.map_or("—".into(), |i| ms(i.latency.at(p).unwrap_or(0) as f64));
    card(
        &mut o,
        "req/s, last second",
        &thousands(last.map_or(0, |i| i.completed)),
    );
    card(&mut o, "p50, last second", &lat(50.0));
    card(&mut o, "p99, last second", &lat(99.0));
    card(
        &mut o,
        "errors, last second / all",
        &format!(
            "{} / {}",
            thousands(last.map_or(0, |i| i.failed)),
            thousands(s.failed)
        ),
    );
    card(
        &mut o,
        if s.users { "users" } else { "connections" },
        &thousands(last.map_or(0, |i| if s.users { i.users } else { i.connections })),
    );
    o.push_str("</div><h2>Over time</h2><div class=\"grid2\">");
    over_time(&mut o, intervals, t as f64, s.users);
    o.push_str("</div>");
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use stampede_engine::{Hist, LatencyStats};

    fn second(t: u32, completed: u64) -> Interval {
        let mut h = Hist::default();
        for v in [100, 200, 300, 4000] {
            h.0.record(v).unwrap();
        }
        Interval {
            t,
            completed,
            failed: 1,
            bytes_read: 10,
            latency: LatencyStats::of(&h.0),
            histogram: String::new(),
            histogram_uncorrected: String::new(),
            connections: 8,
            in_flight: 3,
            users: 0,
            events: 0,
        }
    }

    #[test]
    fn the_fragment_shows_the_last_second_and_every_chart() {
        let secs = [second(0, 900), second(1, 1200)];
        let f = live_fragment(
            &secs,
            &LiveStatus {
                elapsed_s: 2.3,
                progress: Some(0.46),
                completed: 2100,
                failed: 2,
                users: false,
            },
        );
        assert!(f.contains("data-second=\"2\""));
        assert!(f.contains("<b>1,200</b>"), "{f}");
        assert!(f.contains("2 s · 46 %"));
        assert!(f.contains("<b>1 / 2</b>"));
        assert!(f.contains("data-completed=\"2100\""));
        assert_eq!(f.matches("<svg class=\"chart\"").count(), 4);
        assert!(f.contains("Active connections"));
    }

    #[test]
    fn the_page_subscribes_and_shows_the_final_report() {
        let p = dashboard_page("GET http://127.0.0.1/<x>");
        assert!(p.contains("new EventSource('events')"));
        assert!(p.contains("document.write(e.data)"));
        assert!(p.contains("GET http://127.0.0.1/&lt;x&gt;"));
    }
}
