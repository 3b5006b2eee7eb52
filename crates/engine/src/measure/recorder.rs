//! Per-worker measurement: histograms and counters, merged by addition at the end.
//!
//! Each worker owns one `Recorder`; nothing is shared on the hot path. Memory is
//! bounded by the histograms' fixed size and one compact interval record per second,
//! so ten million requests cost what ten thousand do. Only the outputs that list every
//! request (ab's `-g`, h2load's `--log-file`, oha's and hey's CSV) ask for one record
//! per request (48 bytes each), and then at most [`MAX_RECORDS`] of them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::serialization::{Serializer, V2Serializer};
use hdrhistogram::Histogram;

use crate::error::ErrorKind;
use crate::measure::figures::{Grpc, Headers, Records, Sessions, Streams, Tally, Tls};
use crate::measure::result::{new_histogram, Histograms};
pub(crate) use crate::measure::second::{Gauges, LiveExtra, RawInterval};
use crate::run::control::Control;

/// The most per-request records a run keeps, all workers together (48 bytes each:
/// 384 MiB); the requests past it are counted, not recorded.
pub const MAX_RECORDS: usize = 8 << 20;

/// One request, for outputs that list every request (ab's `-g`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestRecord {
    /// Intended start, microseconds since the Unix epoch.
    pub start_unix_us: u64,
    /// Connect time, µs.
    pub connect_us: u64,
    /// Total time, µs.
    pub total_us: u64,
    /// Time from the end of the write to the first response byte, µs.
    pub waiting_us: u64,
    /// The response's status; 0 for a request that failed without one (its total is
    /// then the time to the failure).
    pub status: u16,
    /// The response body's bytes (0 for a failed request).
    pub body_bytes: u64,
    /// A gRPC call's `grpc-status` (0 to 16), for a call that was answered.
    pub grpc: Option<u8>,
    /// Why a request that got no response failed.
    pub error: Option<ErrorKind>,
}

// What the outputs that list every request say it costs.
const _: () = assert!(std::mem::size_of::<RequestRecord>() == 48);

/// How a kept request ended besides its status: a gRPC answer's code, or a failure's
/// kind.
#[derive(Clone, Copy)]
struct Outcome {
    grpc: Option<u8>,
    error: Option<ErrorKind>,
}

/// The second being recorded.
struct Current {
    t: u32,
    completed: u64,
    failed: u64,
    bytes_read: u64,
    events: u64,
    hist: Histogram<u64>,
    uncorrected: Histogram<u64>,
    peaks: Gauges,
}

/// Timings of one completed request, µs.
pub(crate) struct Timing {
    pub total_us: u64,
    pub uncorrected_us: u64,
    pub connect_us: u64,
    pub waiting_us: u64,
}

/// A worker's measurements: the histograms, the responses by status and the
/// failures by kind, and the counters grouped by what counts them (see
/// [`crate::measure::figures`]); merged group by group.
pub(crate) struct Recorder {
    pub hist: Histograms,
    pub statuses: Vec<u64>,
    pub errors: [u64; ErrorKind::ALL.len()],
    /// What every run counts: requests, bytes, connections, the pool.
    pub tally: Tally,
    pub sessions: Sessions,
    pub tls: Tls,
    /// HTTP/2 response headers: compressed and decoded bytes.
    pub headers: Headers,
    /// HTTP/3: QUIC's figures of the connections closed so far.
    pub quic: crate::result::QuicStats,
    /// Runs that time streams.
    pub streams: Streams,
    pub grpc: Grpc,
    /// WebSocket runs: upgrades refused and the server's closes.
    pub ws: crate::result::WsStats,
    pub intervals: Vec<RawInterval>,
    /// Per-request records, when an output lists every request.
    pub records: Records,
    /// Figures per target, for a run of several requests.
    pub targets: crate::measure::targets::Targets,
    /// The records streamed out (`--raw`), when they are, and those lost to a failed
    /// file.
    pub raw: Option<crate::measure::raw::RawSink>,
    pub raw_lost: u64,
    start: Instant,
    start_unix_us: u64,
    cur: Current,
    /// Where each finished second is also sent while someone watches the run live.
    live: Option<Watched>,
}

/// A watched worker's link to the watcher, and its running totals as they stood when
/// the last second was filed (what a second's breakdown is worked out from).
struct Watched {
    control: Arc<Control>,
    statuses: Vec<u64>,
    errors: [u64; ErrorKind::ALL.len()],
    send_lag: Histogram<u64>,
    targets: crate::measure::targets::Reported,
}

impl Watched {
    /// The breakdown of the second since the last call, from the running totals.
    fn second(
        &mut self,
        statuses: &[u64],
        errors: &[u64; ErrorKind::ALL.len()],
        send_lag: &Histogram<u64>,
        targets: &crate::measure::targets::Targets,
    ) -> LiveExtra {
        let mut extra = LiveExtra {
            targets: targets.since(&mut self.targets),
            ..LiveExtra::default()
        };
        for (code, (now, then)) in statuses.iter().zip(&mut self.statuses).enumerate() {
            if *now > *then {
                extra.statuses.push((code as u16, *now - *then));
                *then = *now;
            }
        }
        for (kind, (now, then)) in errors.iter().zip(&mut self.errors).enumerate() {
            if *now > *then {
                extra.errors.push((kind, *now - *then));
                *then = *now;
            }
        }
        if send_lag.len() > self.send_lag.len() {
            let mut diff = send_lag.clone();
            // The running total only ever grows past its earlier copy.
            if diff.subtract(&self.send_lag).is_ok() {
                V2Serializer::new()
                    .serialize(&diff, &mut extra.send_lag)
                    .expect("serialising to memory cannot fail");
            }
            self.send_lag.clone_from(send_lag);
        }
        extra
    }
}

impl Recorder {
    pub fn new(
        start: Instant,
        start_unix_us: u64,
        keep: usize,
        live: Option<Arc<Control>>,
    ) -> Recorder {
        Recorder {
            hist: Histograms::default(),
            statuses: vec![0; 1000],
            errors: [0; ErrorKind::ALL.len()],
            tally: Tally::default(),
            sessions: Sessions::default(),
            tls: Tls::default(),
            headers: Headers::default(),
            quic: Default::default(),
            streams: Streams::default(),
            grpc: Grpc::default(),
            ws: Default::default(),
            intervals: Vec::new(),
            records: Records::new(keep),
            targets: Default::default(),
            raw: None,
            raw_lost: 0,
            start,
            start_unix_us,
            cur: Current {
                t: 0,
                completed: 0,
                failed: 0,
                bytes_read: 0,
                events: 0,
                hist: new_histogram(),
                uncorrected: new_histogram(),
                peaks: Gauges::default(),
            },
            live: live.map(|control| Watched {
                control,
                statuses: vec![0; 1000],
                errors: [0; ErrorKind::ALL.len()],
                send_lag: new_histogram(),
                targets: Default::default(),
            }),
        }
    }

    /// Switches to the interval that contains `now`, filing the current one. Time only
    /// goes forward here: an event stamped before the current second began (a
    /// response timed by its arrival, read after a nap that crossed the second) counts
    /// in the current second, so that no second is filed twice.
    #[inline]
    pub fn roll(&mut self, now: Instant) {
        let t = now.saturating_duration_since(self.start).as_secs() as u32;
        if t > self.cur.t {
            self.file_interval(t);
        }
    }

    fn file_interval(&mut self, next_t: u32) {
        let c = &mut self.cur;
        let active = c.completed + c.failed + c.bytes_read > 0;
        // A live watcher gets every second, empty ones too: it waits for each worker's.
        if active || c.peaks.any() || self.live.is_some() {
            let (mut hist, mut hist_uncorrected) = (Vec::new(), Vec::new());
            let mut ser = V2Serializer::new();
            ser.serialize(&c.hist, &mut hist)
                .expect("serialising to memory cannot fail");
            ser.serialize(&c.uncorrected, &mut hist_uncorrected)
                .expect("serialising to memory cannot fail");
            let raw = RawInterval {
                t: c.t,
                completed: c.completed,
                failed: c.failed,
                bytes_read: c.bytes_read,
                events: c.events,
                hist,
                hist_uncorrected,
                gauges: c.peaks,
                extra: None,
            };
            if let Some(live) = &mut self.live {
                let extra = live.second(
                    &self.statuses,
                    &self.errors,
                    &self.hist.send_lag.0,
                    &self.targets,
                );
                live.control.publish_second(RawInterval {
                    extra: Some(Box::new(extra)),
                    ..raw.clone()
                });
            }
            // A second with connections held but nothing answered is a stall: kept.
            if active || c.peaks.any() {
                self.intervals.push(raw);
            }
            c.hist.reset();
            c.uncorrected.reset();
        }
        self.cur.t = next_t;
        self.cur.completed = 0;
        self.cur.failed = 0;
        self.cur.bytes_read = 0;
        self.cur.events = 0;
        self.cur.peaks = Gauges::default();
    }

    /// Notes the current levels; each second keeps its highest.
    #[inline]
    pub fn gauge(&mut self, now: Gauges) {
        self.cur.peaks.raise(now);
    }

    /// Files the last, partial interval.
    pub fn finish(&mut self) {
        let t = self.cur.t;
        self.file_interval(t + 1);
        if let Some(live) = &self.live {
            live.control.retire(t);
        }
    }

    #[inline]
    pub fn read_bytes(&mut self, now: Instant, n: usize) {
        self.roll(now);
        self.tally.bytes_read += n as u64;
        self.cur.bytes_read += n as u64;
    }

    #[inline(always)]
    pub fn complete(
        &mut self,
        now: Instant,
        (intended, target): (Instant, u32),
        (status, grpc): (u16, Option<u8>),
        body: u64,
        timing: Timing,
    ) {
        if self.targets.is_on() {
            self.targets.complete(target, status, timing.total_us);
        }
        self.roll(now);
        self.tally.completed += 1;
        self.cur.completed += 1;
        self.tally.bytes_body += body;
        if let Some(s) = self.statuses.get_mut(status as usize) {
            *s += 1;
        }
        // A gRPC call is good when answered OK, whatever its HTTP status; a
        // WebSocket message's answer comes on the upgrade (101).
        let good = match grpc {
            Some(code) => code == 0,
            None => (200..300).contains(&status) || status == 304 || status == 101,
        };
        let h = &mut self.hist;
        h.latency.0.saturating_record(timing.total_us);
        h.uncorrected.0.saturating_record(timing.uncorrected_us);
        h.connect.0.saturating_record(timing.connect_us);
        h.waiting.0.saturating_record(timing.waiting_us);
        h.processing
            .0
            .saturating_record(timing.total_us.saturating_sub(timing.connect_us));
        if good {
            h.ok.0.saturating_record(timing.total_us);
        } else {
            h.ko.0.saturating_record(timing.total_us);
        }
        self.cur.hist.saturating_record(timing.total_us);
        self.cur
            .uncorrected
            .saturating_record(timing.uncorrected_us);
        if self.records.kept.is_some() {
            self.keep(
                intended,
                timing.connect_us,
                timing.total_us,
                timing.waiting_us,
                (status, body, Outcome { grpc, error: None }),
            );
        }
    }

    /// An arrival never sent, `waited` from its intended start to the run's end: its
    /// latency is at least that (right-censored), and counted so in the corrected
    /// latency — leaving it out would make a saturated open-model run look faster.
    /// One due in the last moments before the end (less than [`crate::measure::result::LATE`]) went unsent
    /// because the run ended, not because the generator was late: its bound says
    /// nothing and is not recorded.
    #[cold]
    pub fn censor(&mut self, waited: std::time::Duration) {
        if waited < crate::measure::result::LATE {
            return;
        }
        let us = u64::try_from(waited.as_micros()).unwrap_or(u64::MAX);
        self.hist.latency.0.saturating_record(us);
        self.tally.censored += 1;
    }

    /// A gRPC answer came with `grpc-status` `code`.
    #[inline]
    pub fn grpc_status(&mut self, code: u8) {
        self.grpc.statuses[usize::from(code).min(16)] += 1;
    }

    /// A gRPC call failed with status `code` and `grpc-message` `message`.
    #[inline(never)]
    pub fn grpc_message(&mut self, code: u8, message: &str) {
        let name = stampede_wire::grpc::code_name(code);
        crate::result::add_grpc_message(&mut self.grpc.messages, name, message, 1);
    }

    /// A response counted without a latency sample: with wrk2's batch latency only a
    /// pipelined batch's last response is timed.
    #[inline(never)]
    pub fn count_only(&mut self, now: Instant, (status, target): (u16, u32), body: u64) {
        if self.targets.is_on() {
            self.targets.count(target, status);
        }
        self.roll(now);
        self.tally.completed += 1;
        self.cur.completed += 1;
        self.tally.bytes_body += body;
        if let Some(s) = self.statuses.get_mut(status as usize) {
            *s += 1;
        }
    }

    /// Keeps one request's record (ab's `-g`, h2load's `--log-file`).
    #[cold]
    fn keep(
        &mut self,
        intended: Instant,
        connect_us: u64,
        total_us: u64,
        waiting_us: u64,
        (status, body_bytes, outcome): (u16, u64, Outcome),
    ) {
        let offset = intended.saturating_duration_since(self.start).as_micros() as u64;
        if let Some(reqs) = &mut self.records.kept {
            if reqs.len() >= self.records.at_most {
                self.records.dropped += 1;
                return;
            }
            reqs.push(RequestRecord {
                start_unix_us: self.start_unix_us + offset,
                connect_us,
                total_us,
                waiting_us,
                status,
                body_bytes,
                grpc: outcome.grpc,
                error: outcome.error,
            });
        }
    }

    /// A request that got no response: counted by kind, its time to failure is KO.
    #[inline]
    pub fn fail(&mut self, now: Instant, kind: ErrorKind, (intended, target): (Instant, u32)) {
        if self.targets.is_on() {
            self.targets.fail(target, kind);
        }
        self.roll(now);
        self.errors[kind.index()] += 1;
        self.cur.failed += 1;
        let total_us = micros(intended, now);
        self.hist.ko.0.saturating_record(total_us);
        if self.records.kept.is_some() {
            let outcome = Outcome {
                grpc: None,
                error: Some(kind),
            };
            self.keep(intended, 0, total_us, 0, (0, 0, outcome));
        }
    }

    /// A request or session started `lag` after its intended time.
    #[inline]
    pub fn lag(&mut self, intended: Instant, now: Instant) {
        self.hist
            .send_lag
            .0
            .saturating_record(micros(intended, now));
    }

    /// A WebSocket upgrade was answered `us` µs after its connection opened.
    pub fn upgraded(&mut self, us: u64) {
        self.hist.ws_upgrade.0.saturating_record(us);
    }

    /// A TLS handshake finished after `us` µs.
    pub fn handshake(&mut self, us: u64, resumed: bool) {
        self.hist.tls_handshake.0.saturating_record(us);
        self.tls.resumed += u64::from(resumed);
    }

    /// The first body byte of a watched response (sent at `sent`, meant to start at
    /// `intended`) arrived at `at`.
    #[cold]
    pub fn stream_first_byte(&mut self, intended: Instant, sent: Instant, at: Instant) {
        let s = self.hist.stream.get_or_insert_with(Default::default);
        s.first_byte.0.saturating_record(micros(intended, at));
        s.first_byte_uncorrected
            .0
            .saturating_record(micros(sent, at));
    }

    /// `n` events (at least one) of a watched response arrived together at `at`;
    /// `last` is when its previous event came, if one did. The first of a response
    /// is timed from its start; every other is a gap (those that came together, 0).
    pub fn stream_events(
        &mut self,
        (intended, sent): (Instant, Instant),
        last: Option<Instant>,
        at: Instant,
        n: u32,
    ) {
        if n == 0 {
            return;
        }
        let s = self.hist.stream.get_or_insert_with(Default::default);
        match last {
            None => {
                s.first_event.0.saturating_record(micros(intended, at));
                s.first_event_uncorrected
                    .0
                    .saturating_record(micros(sent, at));
            }
            Some(last) => s.gap.0.saturating_record(micros(last, at)),
        }
        if n > 1 {
            s.gap.0.saturating_record_n(0, u64::from(n - 1));
        }
        self.streams.events += u64::from(n);
        self.cur.events += u64::from(n);
    }

    /// A message stamped `s` arrived at `at`: timed from when it was due and from its
    /// send, on the Unix time both stamps count in.
    pub fn stream_delivery(&mut self, s: stampede_wire::stamp::Stamp, at: Instant) {
        let at = stampede_wire::stamp::unix_ns(at);
        let h = self.hist.stream.get_or_insert_with(Default::default);
        h.delivery
            .0
            .saturating_record(at.saturating_sub(s.due_ns) / 1000);
        h.delivery_uncorrected
            .0
            .saturating_record(at.saturating_sub(s.sent_ns) / 1000);
        self.streams.early += u64::from(s.sent_ns > at);
    }

    /// A watched response completed with `events` events; `done` if it sent `[DONE]`.
    pub fn stream_response(&mut self, events: u64, done: bool) {
        let s = self.hist.stream.get_or_insert_with(Default::default);
        s.events.0.saturating_record(events);
        self.streams.done += u64::from(done);
    }

    /// A streamed answer to `target` brought its first event `us` after its intended
    /// start (kept per target when the run names several).
    pub fn target_first_event(&mut self, target: u32, us: u64) {
        if self.targets.is_on() {
            self.targets.first_event(target, us);
        }
    }

    /// An OpenAI stream's completion had `tokens` tokens and took `e2el_us` from its
    /// intended start; `tpot_us` is its time per output token after the first (two
    /// tokens or more).
    pub fn stream_tokens(&mut self, tokens: u32, tpot_us: Option<u64>, e2el_us: u64) {
        let s = self.hist.stream.get_or_insert_with(Default::default);
        s.tokens.0.saturating_record(u64::from(tokens));
        if let Some(t) = tpot_us {
            s.tpot.0.saturating_record(t);
        }
        if tokens > 0 {
            s.per_token.0.saturating_record(e2el_us / u64::from(tokens));
        }
        self.streams.tokens += u64::from(tokens);
    }

    /// A session ended; `ok` if it made all its calls.
    pub fn session_end(&mut self, started: Instant, now: Instant, ok: bool) {
        if ok {
            self.sessions.completed += 1;
            self.hist.session.0.saturating_record(micros(started, now));
        } else {
            self.sessions.failed += 1;
        }
    }

    /// Merges another worker's measurements into this one.
    pub fn merge(&mut self, other: Recorder) {
        let h = &mut self.hist;
        h.latency.add(&other.hist.latency);
        h.uncorrected.add(&other.hist.uncorrected);
        h.connect.add(&other.hist.connect);
        h.waiting.add(&other.hist.waiting);
        h.processing.add(&other.hist.processing);
        h.send_lag.add(&other.hist.send_lag);
        h.ok.add(&other.hist.ok);
        h.ko.add(&other.hist.ko);
        h.session.add(&other.hist.session);
        h.tls_handshake.add(&other.hist.tls_handshake);
        h.ws_upgrade.add(&other.hist.ws_upgrade);
        self.tls.add(&other.tls);
        self.quic.join(&other.quic);
        self.headers.add(&other.headers);
        self.streams.add(&other.streams);
        self.grpc.add(&other.grpc);
        self.ws.add(&other.ws);
        match (&mut h.stream, other.hist.stream) {
            (Some(a), Some(b)) => {
                // One run's workers stay far within the format's counts.
                let _ = a.add(&b);
            }
            (None, b) => h.stream = b,
            (Some(_), None) => {}
        }
        h.first_byte.add(&other.hist.first_byte);
        h.per_connection.add(&other.hist.per_connection);
        self.sessions.add(&other.sessions);
        self.tally.add(&other.tally);
        for (a, b) in self.statuses.iter_mut().zip(&other.statuses) {
            *a += b;
        }
        for (a, b) in self.errors.iter_mut().zip(&other.errors) {
            *a += b;
        }
        // Seconds are combined when the result is built, one histogram at a time.
        self.intervals.extend(other.intervals);
        self.records.add(other.records);
        self.raw_lost += other.raw_lost;
        self.targets.merge(other.targets);
    }

    /// Streams one request's record, when records are streamed out.
    #[cold]
    pub fn raw(&mut self, facts: crate::measure::raw::Facts) {
        if let Some(r) = &mut self.raw {
            r.record(&facts);
        }
    }

    /// Hands the last records to the writer; counts those lost.
    pub fn close_raw(&mut self) {
        if let Some(mut r) = self.raw.take() {
            r.flush();
            self.raw_lost += r.lost;
        }
    }
}

/// Microseconds between two instants, rounded up so no sample is zero.
#[inline]
pub(crate) fn micros(from: Instant, to: Instant) -> u64 {
    let d: Duration = to.saturating_duration_since(from);
    (d.as_nanos() as u64).div_ceil(1000)
}

/// Combines the workers' seconds: counters add, histograms are decoded and added one
/// second at a time, summarised, and stored encoded.
pub(crate) fn merge_intervals(mut raw: Vec<RawInterval>) -> Vec<crate::Interval> {
    use hdrhistogram::serialization::Deserializer;
    raw.sort_by_key(|r| r.t);
    let mut out: Vec<crate::Interval> = Vec::new();
    let mut hist = crate::result::new_histogram();
    let mut unc = crate::result::new_histogram();
    let mut de = Deserializer::new();
    let mut i = 0;
    while i < raw.len() {
        let t = raw[i].t;
        let (mut completed, mut failed, mut bytes_read, mut events) = (0, 0, 0, 0);
        let mut gauges = Gauges::default();
        hist.reset();
        unc.reset();
        while i < raw.len() && raw[i].t == t {
            let r = &raw[i];
            completed += r.completed;
            failed += r.failed;
            bytes_read += r.bytes_read;
            events += r.events;
            gauges.connections += r.gauges.connections;
            gauges.in_flight += r.gauges.in_flight;
            gauges.users += r.gauges.users;
            let h: hdrhistogram::Histogram<u64> = de
                .deserialize(&mut &r.hist[..])
                .expect("a histogram this process serialised");
            hist.add(&h).expect("same bounds");
            let u: hdrhistogram::Histogram<u64> = de
                .deserialize(&mut &r.hist_uncorrected[..])
                .expect("a histogram this process serialised");
            unc.add(&u).expect("same bounds");
            i += 1;
        }
        out.push(crate::Interval {
            t,
            completed,
            failed,
            bytes_read,
            events,
            latency: crate::LatencyStats::of(&hist),
            histogram: crate::Hist(hist.clone()).to_base64(),
            histogram_uncorrected: crate::Hist(unc.clone()).to_base64(),
            connections: gauges.connections,
            in_flight: gauges.in_flight,
            users: gauges.users,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_second_is_filed_once_even_when_an_event_is_stamped_before_it() {
        let start = Instant::now();
        let control = Arc::new(Control::watched());
        let mut r = Recorder::new(start, 0, 0, Some(control.clone()));
        r.read_bytes(start + Duration::from_millis(100), 10);
        r.read_bytes(start + Duration::from_millis(2_100), 10);
        // Read after a nap that crossed into second 2, stamped in second 1.
        r.read_bytes(start + Duration::from_millis(1_900), 10);
        r.read_bytes(start + Duration::from_millis(2_200), 10);
        r.finish();
        let ts: Vec<u32> = r.intervals.iter().map(|i| i.t).collect();
        assert_eq!(ts, [0, 2], "each second filed once, in order");
        assert_eq!(r.intervals[1].bytes_read, 30);
        let published: Vec<u32> = control.take_seconds().iter().map(|i| i.t).collect();
        assert_eq!(published, [0, 2], "the live view gets each second once");
    }

    #[test]
    fn records_stop_at_their_limit_and_count_the_rest() {
        let start = Instant::now();
        let mut r = Recorder::new(start, 0, 2, None);
        for i in 0..5u64 {
            let now = start + Duration::from_millis(i);
            r.fail(now, ErrorKind::Timeout, (now, 0));
        }
        let mut other = Recorder::new(start, 0, 2, None);
        other.fail(start, ErrorKind::Reset, (start, 0));
        r.merge(other);
        assert_eq!(r.records.kept.as_ref().map(Vec::len), Some(3));
        assert_eq!(r.records.dropped, 3);
        // Without records nothing is kept or counted.
        let mut none = Recorder::new(start, 0, 0, None);
        none.fail(start, ErrorKind::Reset, (start, 0));
        assert!(none.records.kept.is_none() && none.records.dropped == 0);
    }
}
