//! Exact merges of real results: segments of one run, a result with itself, and
//! results that are not parts of one run.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use crate::common::{go, ok_response, serve};
use stampede_engine::merge::{merge, MergeError};
use stampede_engine::{LoadSpec, RequestBuilder, RunResult, Segment, Shape, Target};

fn pong() -> String {
    serve(
        "/",
        Arc::new(|s, _| s.write_all(&ok_response("pong")).is_ok()),
    )
}

fn rate_spec(url: &str, segment: Segment) -> LoadSpec {
    let t = Target::parse(url).unwrap();
    let mut s = LoadSpec::new(
        t.clone(),
        RequestBuilder::native(&t, "GET", true).build().unwrap(),
    );
    s.load.shape = Shape::Rate {
        rate: 600.0,
        gaps: stampede_engine::arrivals::Gaps::Even,
    };
    s.load.connections = 4;
    s.load.duration = Some(Duration::from_millis(1500));
    s.segment = segment;
    s
}

#[test]
fn segments_merge_to_the_whole_run() {
    let url = pong();
    let at = std::time::SystemTime::now() + Duration::from_millis(300);
    let parts: Vec<RunResult> = std::thread::scope(|scope| {
        let hs: Vec<_> = (1..=3)
            .map(|k| {
                let mut s = rate_spec(&url, Segment::new(k, 3).unwrap());
                s.start_at = Some(at);
                scope.spawn(move || go(s))
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let m = merge(&parts, false).unwrap();
    let completed: u64 = parts.iter().map(|p| p.requests.completed).sum();
    assert_eq!(m.requests.completed, completed);
    // 600/s for 1.5 s, each arrival owned by one segment.
    assert!((895..=900).contains(&completed), "{completed}");
    // The latency holds every answer, and any arrival left unsent past 5 ms.
    let censored = m.open.as_ref().map_or(0, |o| o.censored);
    assert_eq!(m.histograms.latency.0.len(), completed + censored);
    assert_eq!(m.statuses[&200], completed);
    assert_eq!(m.settings.connections, 4);
    assert_eq!(m.settings.threads, 3);
    let open = m.open.as_ref().unwrap();
    assert_eq!(open.target_rate, Some(600.0));
    assert!((open.achieved_rate - 600.0).abs() < 30.0, "{open:?}");
    // One wall-clock second is one merged second, all parts' requests in it.
    let per_second: u64 = m.intervals.iter().map(|i| i.completed).sum();
    assert_eq!(per_second, completed);
    assert!(m.intervals.len() <= 3, "{:?}", m.intervals.len());
    assert_eq!(m.origin.parts.len(), 3);
    assert!(m.origin.shared_start && m.origin.segment.is_none());
    // A segment twice is refused.
    let twice = [parts[0].clone(), parts[0].clone()];
    assert!(matches!(
        merge(&twice, false),
        Err(MergeError::Repeated {
            first: 1,
            again: 2,
            ..
        })
    ));
}

#[test]
fn a_result_merged_with_itself_keeps_every_percentile_and_doubles_every_count() {
    let url = pong();
    let r = go(rate_spec(&url, Segment::WHOLE));
    let m = merge(&[r.clone(), r.clone()], false).unwrap();
    assert_eq!(m.latency.percentiles, r.latency.percentiles);
    assert_eq!(m.latency.min_us, r.latency.min_us);
    assert_eq!(m.latency.max_us, r.latency.max_us);
    assert_eq!(m.latency.count, 2 * r.latency.count);
    assert_eq!(m.requests.completed, 2 * r.requests.completed);
    assert_eq!(m.bytes.read, 2 * r.bytes.read);
    assert_eq!(m.duration_s, r.duration_s);
    assert_eq!(m.settings.connections, 2 * r.settings.connections);
    assert_eq!(m.open.as_ref().unwrap().target_rate, Some(1200.0));
    for (a, b) in m.intervals.iter().zip(&r.intervals) {
        assert_eq!((a.t, a.completed), (b.t, 2 * b.completed));
        assert_eq!(a.latency.percentiles, b.latency.percentiles);
    }
    // Another URL is another run: refused, unless forced.
    let mut other = r.clone();
    other.settings.url = "http://127.0.0.1:1/elsewhere".into();
    let e = merge(&[r.clone(), other.clone()], false).unwrap_err();
    assert!(
        e.to_string().contains("url") && e.to_string().contains("--force"),
        "{e}"
    );
    assert!(merge(&[r, other], true).is_ok());
}

#[test]
fn seconds_align_by_wall_clock() {
    let url = pong();
    let a = go(rate_spec(&url, Segment::WHOLE));
    let mut b = a.clone();
    // The same run, two seconds later.
    b.started_unix_ms += 2_000;
    let m = merge(&[a.clone(), b], false).unwrap();
    assert_eq!(m.started_unix_ms, a.started_unix_ms);
    assert!((m.duration_s - (a.duration_s + 2.0)).abs() < 1e-6);
    let first: Vec<u32> = a.intervals.iter().map(|i| i.t).collect();
    let merged: Vec<u32> = m.intervals.iter().map(|i| i.t).collect();
    let mut want: Vec<u32> = first
        .iter()
        .chain(first.iter().map(|t| t + 2).collect::<Vec<_>>().iter())
        .copied()
        .collect();
    want.sort_unstable();
    want.dedup();
    assert_eq!(merged, want);
    // The rate is over the union of the two windows.
    let expect = 2.0 * a.requests.completed as f64 / m.duration_s;
    assert!((m.throughput_rps - expect).abs() < 1e-6);
}

/// A plain V2 header: payload length, digits, bounds; then `tail`.
fn v2(payload_len: u32, digits: u32, low: u64, high: u64, tail: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&0x1c84_9313u32.to_be_bytes());
    b.extend_from_slice(&payload_len.to_be_bytes());
    b.extend_from_slice(&0u32.to_be_bytes());
    b.extend_from_slice(&digits.to_be_bytes());
    b.extend_from_slice(&low.to_be_bytes());
    b.extend_from_slice(&high.to_be_bytes());
    b.extend_from_slice(&1.0f64.to_be_bytes());
    b.extend_from_slice(tail);
    b
}

fn compressed(plain: &[u8]) -> Vec<u8> {
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(plain).unwrap();
    let deflated = z.finish().unwrap();
    let mut b = Vec::new();
    b.extend_from_slice(&0x1c84_9314u32.to_be_bytes());
    b.extend_from_slice(&(deflated.len() as u32).to_be_bytes());
    b.extend_from_slice(&deflated);
    b
}

fn b64(b: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(b)
}

#[test]
fn a_histogram_whose_header_lies_is_refused_before_anything_is_allocated() {
    use stampede_engine::{Hist, HistError};
    let start = std::time::Instant::now();
    // A header claiming 4 GiB of counts, plain and compressed.
    let lie = v2(u32::MAX, 3, 1, 3_600_000_000, &[2, 0, 2]);
    for bytes in [lie.clone(), compressed(&lie)] {
        match Hist::from_base64(&b64(&bytes)) {
            Err(HistError::Format(m)) => assert!(m.contains("claims"), "{m}"),
            other => panic!("{other:?}"),
        }
    }
    // A compressed length past the bytes there are.
    let mut short = compressed(&v2(3, 3, 1, 3_600_000_000, &[2, 0, 2]));
    short[4..8].copy_from_slice(&1_000_000u32.to_be_bytes());
    assert!(matches!(
        Hist::from_base64(&b64(&short)),
        Err(HistError::Format(_))
    ));
    // Bounds that would need tens of millions of counters: five digits over 2^63.
    let wide = v2(3, 5, 1, i64::MAX as u64, &[2, 0, 2]);
    match Hist::from_base64(&b64(&compressed(&wide))) {
        Err(HistError::Limit(m)) => assert!(m.contains("counters"), "{m}"),
        other => panic!("{other:?}"),
    }
    // A bomb: a megabyte of zeros after a valid header inflates past nothing, but a
    // compressed run of 100 MiB is cut at the ceiling.
    let bomb = v2(100 << 20, 3, 1, 3_600_000_000, &vec![0u8; 100 << 20]);
    match Hist::from_base64(&b64(&compressed(&bomb))) {
        Err(HistError::Limit(m)) => assert!(m.contains("inflates"), "{m}"),
        other => panic!("{other:?}"),
    }
    // A run of zeros of -2^63 (nine 0xff bytes: zig-zag of u64::MAX), whose negation
    // overflows in the decoder.
    let mut tail = vec![0xffu8; 9];
    tail.extend_from_slice(&[2, 0]);
    let neg = v2(tail.len() as u32, 3, 1, 3_600_000_000, &tail);
    match Hist::from_base64(&b64(&neg)) {
        Err(HistError::Format(m)) => assert!(m.contains("run of zeros"), "{m}"),
        other => panic!("{other:?}"),
    }
    // Five digits over an hour is a histogram other tools write: it decodes.
    let mut fine = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 5).unwrap();
    fine.record_n(1_000, 7).unwrap();
    let mut bytes = Vec::new();
    use hdrhistogram::serialization::Serializer as _;
    hdrhistogram::serialization::V2DeflateSerializer::new()
        .serialize(&fine, &mut bytes)
        .unwrap();
    assert_eq!(Hist::from_base64(&b64(&bytes)).unwrap().0.len(), 7);
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn counts_past_what_the_format_holds_are_refused_and_counters_saturate() {
    use stampede_engine::{Hist, HistError};
    let mut a = Hist::default();
    a.0.record_n(100, 5_000_000_000_000_000_000).unwrap();
    let b = a.clone();
    match a.add_checked(&b.0) {
        Err(HistError::Limit(m)) => assert!(m.contains("counts add up past"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(a.0.len(), 5_000_000_000_000_000_000, "nothing was added");
    // Through a merge: an error, not a panic when the sum is written.
    let mut r: RunResult = serde_json::from_str(include_str!("data/small-result.json")).unwrap();
    r.histograms.latency = a;
    r.requests.completed = u64::MAX - 1;
    let mut twice = r.clone();
    twice.origin.segment = None;
    r.origin.segment = None;
    match merge(&[r.clone(), twice], true) {
        Err(MergeError::Hist(HistError::Limit(_))) => {}
        other => panic!("{other:?}"),
    }
    r.histograms.latency = Hist::default();
    let m = merge(&[r.clone(), r], true).unwrap();
    assert_eq!(m.requests.completed, u64::MAX, "counters saturate");
}

#[test]
fn an_interval_log_past_any_clock_is_refused_not_a_panic() {
    let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
    h.record(250).unwrap();
    let mut bytes = Vec::new();
    use hdrhistogram::serialization::Serializer as _;
    hdrhistogram::serialization::V2DeflateSerializer::new()
        .serialize(&h, &mut bytes)
        .unwrap();
    let log = format!(
        "#[BaseTime: 18446744073709551000.000 (seconds since epoch)]\n\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n1000.000,1.000,0.250,{}\n",
        b64(&bytes)
    );
    match stampede_engine::merge::from_hlog(log.as_bytes()) {
        Err(MergeError::Hlog(m)) => assert!(m.contains("past any clock"), "{m}"),
        other => panic!("{other:?}"),
    }
}
