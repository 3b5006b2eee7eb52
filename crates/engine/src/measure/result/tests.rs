//! The result's percentiles, merges of counts and the open model's rule for falling
//! behind.

use super::*;

#[test]
fn grpc_messages_add_up_within_their_bound_most_frequent_first() {
    let mut list = Vec::new();
    add_grpc_message(&mut list, "UNAVAILABLE", "down", 2);
    add_grpc_message(&mut list, "INTERNAL", "oops", 5);
    add_grpc_message(&mut list, "UNAVAILABLE", "down", 4);
    for i in 0..100 {
        add_grpc_message(&mut list, "UNKNOWN", &format!("m{i}"), 1);
    }
    assert_eq!(list.len(), MAX_GRPC_MESSAGES);
    sort_grpc_messages(&mut list);
    assert_eq!((list[0].message.as_str(), list[0].count), ("down", 6));
    assert_eq!((list[1].message.as_str(), list[1].count), ("oops", 5));
    assert_eq!(list[2].message, "m0");
}

#[test]
fn percentiles_rank_as_the_reference_implementation_does() {
    // 1..=1000 µs: every value is exact at three significant digits.
    let mut h = new_histogram();
    for v in 1..=1000 {
        h.record(v).unwrap();
    }
    // 99.9 / 100 * 1000 = 999.0000000000001: a plain ceil would give 1000.
    assert_eq!(value_at_percentile(&h, 99.9), 999);
    assert_eq!(value_at_percentile(&h, 50.0), 500);
    assert_eq!(value_at_percentile(&h, 99.0), 990);
    assert_eq!(value_at_percentile(&h, 100.0), 1000);
    assert_eq!(value_at_percentile(&h, 0.0), 1);
    assert_eq!(value_at_percentile(&h, 0.05), 1);
    assert_eq!(value_at_percentile(&new_histogram(), 99.0), 0);
    let s = LatencyStats::of(&h);
    assert_eq!(s.at(99.9), Some(999));
}

#[test]
fn one_late_send_of_a_slow_run_is_not_falling_behind() {
    let lags = |ok: u64, late: u64| {
        let mut h = new_histogram();
        h.record_n(100, ok).unwrap();
        h.record_n(7_000, late).unwrap();
        Hist(h)
    };
    // 40 sends, the first behind the pool's connects: on time.
    assert!(!OpenStats::fell_behind(&lags(39, 1), 40, 0, None));
    assert!(OpenStats::fell_behind(&lags(38, 2), 40, 0, None));
    // Large runs: over 1 % late is behind, 1 % is not.
    assert!(!OpenStats::fell_behind(&lags(9_900, 100), 10_000, 0, None));
    assert!(OpenStats::fell_behind(&lags(9_899, 101), 10_000, 0, None));
    // Arrivals never sent: over 0.1 % is behind.
    assert!(OpenStats::fell_behind(&lags(10_000, 0), 10_000, 11, None));
    assert!(!OpenStats::fell_behind(&lags(10_000, 0), 10_000, 10, None));
    // 7 ms late is behind at 1,000/s (1 ms apart), not at 10/s (100 ms apart)...
    assert!(OpenStats::fell_behind(&lags(38, 2), 40, 0, Some(1000.0)));
    assert!(!OpenStats::fell_behind(&lags(38, 2), 40, 0, Some(10.0)));
    // ... where late past half the gap still is.
    let mut h = new_histogram();
    h.record_n(100, 38).unwrap();
    h.record_n(60_000, 2).unwrap();
    assert!(OpenStats::fell_behind(&Hist(h), 40, 0, Some(10.0)));
}
