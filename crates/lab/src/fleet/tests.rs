use super::*;

fn second(t: u32, latencies_us: &[u64], failed: u64) -> SegmentSecond {
    let mut h = Hist::default();
    for &v in latencies_us {
        h.0.record(v).unwrap();
    }
    Interval {
        t,
        completed: latencies_us.len() as u64,
        failed,
        bytes_read: 0,
        events: 0,
        latency: h.stats(),
        histogram: h.to_base64(),
        histogram_uncorrected: h.to_base64(),
        connections: 0,
        in_flight: 0,
        users: 0,
    }
    .into()
}

#[test]
fn frames_and_orders_travel_as_lines() {
    let f = Frame::Ready {
        segment: "2/4".into(),
        run: None,
    };
    let line = f.line();
    assert!(line.starts_with("@stampede-fleet {\"ready\""), "{line}");
    assert_eq!(Frame::parse(line.trim_end().as_bytes()), Some(Ok(f)));
    let s = Frame::Second(second(3, &[100, 200], 1));
    assert_eq!(Frame::parse(s.line().trim_end().as_bytes()), Some(Ok(s)));
    assert_eq!(Frame::parse(b"{\"schema\": 1}"), None, "a result line");
    assert!(matches!(
        Frame::parse(b"@stampede-fleet {\"ready\": 5}").unwrap(),
        Err(FrameError::Malformed(_))
    ));
    let mut long = PREFIX.as_bytes().to_vec();
    long.resize(MAX_FRAME + 1, b' ');
    assert_eq!(
        Frame::parse(&long).unwrap(),
        Err(FrameError::TooLong(MAX_FRAME + 1))
    );
    assert_eq!(Order::parse(&start_line(1.5)), Some(Order::Start(1.5)));
    assert_eq!(Order::parse(STOP_LINE), Some(Order::Stop));
    assert_eq!(Order::parse("start soon\n"), None);
    assert_eq!(Order::parse("start inf\n"), None);
}

#[test]
fn seconds_merge_exactly_and_come_out_when_every_segment_is_past_them() {
    let mut m = LiveMerge::default();
    m.add(0, &second(0, &[100, 300], 0)).unwrap();
    m.add(1, &second(0, &[200, 5_000], 1)).unwrap();
    // Neither segment is past second 0 yet.
    assert!(m.ready(&[0, 1], false).is_empty());
    m.add(0, &second(1, &[100], 0)).unwrap();
    assert!(
        m.ready(&[0, 1], false).is_empty(),
        "segment 1 is still in it"
    );
    m.add(1, &second(1, &[100], 0)).unwrap();
    let out = m.ready(&[0, 1], false);
    assert_eq!(out.len(), 1);
    let s = &out[0];
    assert_eq!((s.t, s.segments, s.completed, s.failed), (0, 2, 4, 1));
    // The merged histogram is the histogram of all four values.
    let mut all = Hist::default();
    for v in [100, 300, 200, 5_000] {
        all.0.record(v).unwrap();
    }
    assert_eq!(s.latency.stats(), all.stats());
    // A segment that ended no longer holds a second back.
    assert_eq!(
        m.ready(&[0], false).len(),
        0,
        "segment 0's second 1 is its latest"
    );
    assert_eq!(m.ready(&[], false).len(), 1);
    assert_eq!(m.total.completed, 6);
    assert_eq!(m.started, 7);
}

#[test]
fn a_segment_that_misbehaves_is_refused_never_merged() {
    let mut m = LiveMerge::default();
    m.add(0, &second(0, &[100], 0)).unwrap();
    assert_eq!(m.add(0, &second(0, &[100], 0)), Err(Refused::Twice(0)));
    assert_eq!(
        m.add(0, &second(MAX_SECOND + 1, &[100], 0)),
        Err(Refused::Far(MAX_SECOND + 1))
    );
    let mut bad = second(1, &[100], 0);
    bad.interval.histogram = "not base64 at all".into();
    assert!(matches!(m.add(0, &bad), Err(Refused::Histogram(_))));
    assert_eq!(m.ready(&[], true).len(), 1);
    assert_eq!(m.add(1, &second(0, &[100], 0)), Err(Refused::Late(0)));
    assert_eq!(m.total.completed, 1);
}

#[test]
fn statuses_and_failures_merge_by_kind_and_what_is_no_kind_is_refused() {
    let mut m = LiveMerge::default();
    let mut a = second(0, &[100], 1);
    a.statuses = vec![(200, 1)];
    a.errors = vec![("timeout".into(), 1)];
    let mut b = second(0, &[200, 300], 0);
    b.statuses = vec![(200, 1), (503, 1)];
    m.add(0, &a).unwrap();
    m.add(1, &b).unwrap();
    let s = &m.ready(&[], true)[0];
    assert_eq!(s.statuses, [(200, 2), (503, 1)].into_iter().collect());
    assert_eq!(s.errors, [(ErrorKind::Timeout, 1)].into_iter().collect());
    let mut c = second(1, &[100], 0);
    c.statuses = vec![(42, 1)];
    assert_eq!(m.add(0, &c), Err(Refused::Status(42)));
    c.statuses.clear();
    c.errors = vec![("gremlins".into(), 1)];
    assert_eq!(m.add(0, &c), Err(Refused::ErrorKind("gremlins".into())));
    // A second far ahead of the fleet's would be held until the others reach it:
    // refused, so that what is held stays bounded.
    assert_eq!(
        m.add(0, &second(2 + MAX_AHEAD, &[100], 0)),
        Err(Refused::Ahead(2 + MAX_AHEAD))
    );
    m.add(0, &second(1 + MAX_AHEAD, &[100], 0)).unwrap();
}

#[test]
fn a_second_travels_with_its_statuses_and_failures() {
    let mut s = second(4, &[100], 2);
    s.statuses = vec![(200, 1)];
    s.errors = vec![("reset".into(), 2)];
    let f = Frame::Second(s);
    let line = f.line();
    assert_eq!(Frame::parse(line.trim_end().as_bytes()), Some(Ok(f)));
    // A second without them (as a segment with none sends it) reads too.
    let bare = Frame::Second(second(5, &[], 0)).line();
    assert!(!bare.contains("statuses"), "{bare}");
}
