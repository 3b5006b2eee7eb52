//! The run report's section for runs that time streams (`--stream`, `--sse`,
//! `--openai`): the token figures as cards, the first byte, the first event (TTFT),
//! the gaps (ITL), TPOT and stamped messages' delivery as a table from the intended
//! start (or due time) and from the send, their
//! percentile spectra, and the events (tokens) that arrived each second.

use std::fmt::Write as _;

use stampede_engine::{Interval, LatencyStats, RunResult, StreamMode};

use super::{card, figure, ms, spectrum};
use crate::svg::{line_chart, LineChart, Scale, Series};
use crate::units::thousands;

/// Appends the section, when `r` timed streams.
pub(crate) fn stream_section(o: &mut String, r: &RunResult) {
    let (Some(st), Some(h)) = (&r.protocols.stream, &r.histograms.stream) else {
        return;
    };
    let openai = st.mode == StreamMode::Openai;
    let (first, gap) = match st.mode {
        StreamMode::Openai => ("time to first token (TTFT)", "inter-token latency (ITL)"),
        StreamMode::Messages | StreamMode::Grpc => ("first message", "between messages"),
        _ => ("first event", "between events"),
    };
    o.push_str("<h2>Streams</h2><div class=\"cards\">");
    card(o, "events", &thousands(st.events));
    if st.done > 0 {
        card(o, "ended with [DONE]", &thousands(st.done));
    }
    card(
        o,
        "events per response, p50",
        &thousands(st.events_per_response.at(50.0).unwrap_or(0)),
    );
    if let Some(t) = &st.tokens {
        card(o, "completion tokens", &thousands(t.total));
        card(o, "tokens/s", &format!("{:.1}", t.per_second));
        if let (Some(good), Some(rps)) = (t.good, t.goodput_rps) {
            card(o, "met the service levels", &thousands(good));
            card(o, "goodput", &format!("{rps:.2} req/s"));
        }
    }
    o.push_str("</div><div class=\"scroll\"><table><tr><th></th><th>count</th><th>min</th><th>mean</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th></tr>");
    let mut rows: Vec<(String, &LatencyStats)> = vec![
        (format!("{first}, from the intended start"), &st.first_event),
        (
            format!("{first}, from the send"),
            &st.first_event_uncorrected,
        ),
        (
            "first body byte, from the intended start".into(),
            &st.first_byte,
        ),
        (
            "first body byte, from the send".into(),
            &st.first_byte_uncorrected,
        ),
        (gap.into(), &st.gap),
    ];
    if let Some(t) = &st.tokens {
        rows.push(("time per output token (TPOT)".into(), &t.tpot));
    }
    if let Some(d) = &st.delivery {
        rows.push(("stamped message, from when it was due".into(), &d.latency));
        rows.push((
            "stamped message, from its send".into(),
            &d.latency_uncorrected,
        ));
    }
    for (name, l) in rows {
        let _ = write!(
            o,
            "<tr><td>{name}</td><td>{}</td><td>{}</td><td>{}</td>",
            thousands(l.count),
            ms(l.min_us as f64),
            ms(l.mean_us)
        );
        for p in [50.0, 90.0, 99.0, 99.9] {
            let _ = write!(o, "<td>{}</td>", ms(l.at(p).unwrap_or(0) as f64));
        }
        let _ = write!(o, "<td>{}</td></tr>", ms(l.max_us as f64));
    }
    o.push_str("</table></div><div class=\"grid2\">");
    let series = |name: &str, h: &stampede_engine::Hist| Series {
        name: name.into(),
        points: spectrum(h),
    };
    figure(
        o,
        &format!("Spectrum: {first}"),
        &line_chart(&LineChart {
            title: first,
            x_label: "percentile",
            y_label: "ms (log)",
            x_scale: Scale::Percentile,
            y_scale: Scale::Log,
            series: vec![
                series("from the intended start", &h.first_event),
                series("from the send", &h.first_event_uncorrected),
            ],
        }),
    );
    let mut gaps = vec![series(gap, &h.gap)];
    if openai {
        gaps.push(series("TPOT", &h.tpot));
    }
    if st.delivery.is_some() {
        gaps.push(series("stamped, from when due", &h.delivery));
    }
    figure(
        o,
        &format!("Spectrum: {gap}"),
        &line_chart(&LineChart {
            title: gap,
            x_label: "percentile",
            y_label: "ms (log)",
            x_scale: Scale::Percentile,
            y_scale: Scale::Log,
            series: gaps,
        }),
    );
    per_second(o, &r.intervals, r.duration_s, openai);
    o.push_str("</div>");
}

/// The events (an OpenAI stream's: tokens) that arrived each second.
fn per_second(o: &mut String, intervals: &[Interval], duration_s: f64, openai: bool) {
    let points = intervals
        .iter()
        .filter(|i| duration_s - (i.t as f64) >= 0.5 || intervals.len() == 1)
        .map(|i| {
            let span = (duration_s - i.t as f64).clamp(0.05, 1.0);
            (i.t as f64, i.events as f64 / span)
        })
        .collect();
    let what = if openai {
        "tokens (events carrying text) per second"
    } else {
        "events per second"
    };
    figure(
        o,
        &format!("Stream {what}"),
        &line_chart(&LineChart {
            title: what,
            x_label: "second",
            y_label: "per second",
            x_scale: Scale::Linear,
            y_scale: Scale::Linear,
            series: vec![Series {
                name: "arrived".into(),
                points,
            }],
        }),
    );
}
