//! The figures of runs that time streams (see [`crate::LoadStreams::stream`]): the
//! histograms every worker records and merges (the first body byte and the first
//! event from the intended start and from the send, the gaps between events, events,
//! tokens and time per output token per response, stamped messages from their due
//! time and their send), and what the result says of them.

use serde::{Deserialize, Serialize};

use crate::error::HistError;
use crate::measure::result::{Hist, LatencyStats};

/// The histograms of a run that times streams: the first body byte and the first
/// event, from the intended start (corrected) and from the send; the gaps between a
/// response's events; events per response.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamHistograms {
    pub first_byte: Hist,
    pub first_byte_uncorrected: Hist,
    pub first_event: Hist,
    pub first_event_uncorrected: Hist,
    /// From one event of a response to the next (events that arrived together are 0
    /// apart).
    pub gap: Hist,
    /// Events per completed response (a count, not µs).
    pub events: Hist,
    /// OpenAI streams: completion tokens per completed response (a count), and the
    /// time per output token after the first, µs.
    #[serde(default)]
    pub tokens: Hist,
    #[serde(default)]
    pub tpot: Hist,
    /// OpenAI streams: each completion's latency from its intended start over its
    /// tokens (GuideLLM's time per output token), µs.
    #[serde(default)]
    pub per_token: Hist,
    /// WebSocket push streams: stamped messages from when they were due and from
    /// their send to their arrival, µs (see [`stampede_wire::stamp`]).
    #[serde(default)]
    pub delivery: Hist,
    #[serde(default)]
    pub delivery_uncorrected: Hist,
}

impl StreamHistograms {
    /// Adds another run's.
    pub fn add(&mut self, other: &StreamHistograms) -> Result<(), HistError> {
        let pairs: [(&mut Hist, &Hist); 11] = [
            (&mut self.delivery, &other.delivery),
            (&mut self.per_token, &other.per_token),
            (&mut self.delivery_uncorrected, &other.delivery_uncorrected),
            (&mut self.tokens, &other.tokens),
            (&mut self.tpot, &other.tpot),
            (&mut self.first_byte, &other.first_byte),
            (
                &mut self.first_byte_uncorrected,
                &other.first_byte_uncorrected,
            ),
            (&mut self.first_event, &other.first_event),
            (
                &mut self.first_event_uncorrected,
                &other.first_event_uncorrected,
            ),
            (&mut self.gap, &other.gap),
            (&mut self.events, &other.events),
        ];
        for (a, b) in pairs {
            a.add_checked(&b.0)?;
        }
        Ok(())
    }
}

/// What a run that times streams found (see [`crate::LoadStreams::stream`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamStats {
    /// What counted as an event.
    pub mode: crate::StreamMode,
    /// Events received, over every response (failed ones' included).
    pub events: u64,
    /// Server-sent event streams that ended with a `data: [DONE]` event.
    #[serde(default)]
    pub done: u64,
    /// The first body byte, from the intended start and from the send, µs.
    pub first_byte: LatencyStats,
    pub first_byte_uncorrected: LatencyStats,
    /// The first event, from the intended start and from the send, µs.
    pub first_event: LatencyStats,
    pub first_event_uncorrected: LatencyStats,
    /// Between consecutive events of a response, µs.
    pub gap: LatencyStats,
    /// Events per completed response (counts, in the `_us` fields).
    pub events_per_response: LatencyStats,
    /// OpenAI streams: the completions' tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<TokenStats>,
    /// Messages timed by their send stamps, when any carried one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<DeliveryStats>,
}

/// Messages that began with a send stamp ([`stampede_wire::stamp`]: when the sender
/// meant to send each, and when it did), timed from it to their arrival — a pushed
/// message timed from when it was due, as a request is from its intended start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeliveryStats {
    /// Messages that carried a stamp.
    pub stamped: u64,
    /// From when each was due to its arrival, µs.
    pub latency: LatencyStats,
    /// From its send to its arrival, µs.
    pub latency_uncorrected: LatencyStats,
    /// Stamped as sent after they arrived — the sender's clock ahead of this one's —
    /// and timed as 0.
    pub early: u64,
}

/// What an OpenAI-compatible stream's completions held: their tokens (each usage
/// chunk's count, or the events that carried text where a stream sent none).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenStats {
    /// Completion tokens over every completed response.
    pub total: u64,
    /// Completion tokens per second of the run.
    pub per_second: f64,
    /// Completion tokens per response (counts, in the `_us` fields).
    pub per_response: LatencyStats,
    /// Time per output token after the first (the time from the first token to the
    /// last over the tokens after the first), per response of two tokens or more.
    pub tpot: LatencyStats,
    /// With service levels (see [`crate::Slo`]): the completions that met them, and
    /// those per second of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub good: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput_rps: Option<f64>,
    /// Completions whose usage counted fewer tokens than the events that carried text
    /// (a chunk carries one token or more, so the two contradict each other).
    #[serde(default)]
    pub usage_short: u64,
}

impl StreamStats {
    /// The figures of `h`, with the counts kept beside them; `tokens` and `secs`
    /// (the run's) make the token figures of OpenAI streams.
    pub fn of(
        mode: crate::StreamMode,
        (events, done, tokens, good, usage_short): (u64, u64, u64, Option<u64>, u64),
        secs: f64,
        h: &StreamHistograms,
    ) -> StreamStats {
        let per_second = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
        StreamStats {
            tokens: (mode == crate::StreamMode::Openai).then(|| TokenStats {
                total: tokens,
                per_second: per_second(tokens),
                per_response: h.tokens.stats(),
                tpot: h.tpot.stats(),
                good,
                goodput_rps: good.map(per_second),
                usage_short,
            }),
            mode,
            events,
            done,
            first_byte: h.first_byte.stats(),
            first_byte_uncorrected: h.first_byte_uncorrected.stats(),
            first_event: h.first_event.stats(),
            first_event_uncorrected: h.first_event_uncorrected.stats(),
            gap: h.gap.stats(),
            events_per_response: h.events.stats(),
            delivery: (!h.delivery.0.is_empty()).then(|| DeliveryStats {
                stamped: h.delivery.0.len(),
                latency: h.delivery.stats(),
                latency_uncorrected: h.delivery_uncorrected.stats(),
                early: 0,
            }),
        }
    }
}
