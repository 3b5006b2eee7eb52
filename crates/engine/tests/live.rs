//! The live view and the per-second gauges: a watched run hands over each second while
//! it runs, identical to the final result's; a server stall shows as a second with
//! connections and requests held but nothing answered. Bounded in time and count.

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::{ok_response, serve};
use stampede_engine::{run, Control, Interval, Live, LoadSpec, RequestBuilder, Target};

fn spec(url: &str, connections: usize, threads: usize, duration_ms: u64) -> LoadSpec {
    let target = Target::parse(url).unwrap();
    let req = RequestBuilder::native(&target, "GET", true)
        .build()
        .unwrap();
    let mut s = LoadSpec::new(target, req);
    s.load.connections = connections;
    s.load.threads = threads;
    s.load.duration = Some(Duration::from_millis(duration_ms));
    s.load.timeout = Some(Duration::from_secs(5));
    s.validate().unwrap();
    s
}

/// Polls the live view of a run with `workers` workers until `seconds` have come (10 s
/// at most), noting when each came.
fn watch(
    control: &Arc<Control>,
    workers: usize,
    seconds: usize,
) -> std::thread::JoinHandle<Vec<(Instant, Interval)>> {
    let control = control.clone();
    std::thread::spawn(move || {
        let mut live = Live::new(workers);
        let mut seen: Vec<(Instant, Interval)> = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(10);
        while seen.len() < seconds && Instant::now() < deadline {
            // The live view is polled as the command line's progress polls it: when
            // each second shows up is what the tests check.
            std::thread::sleep(Duration::from_millis(50));
            let now = Instant::now();
            for s in live.poll(&control) {
                // Each second's breakdown by status accounts for its responses.
                let by_status: u64 = s.statuses.iter().map(|(_, n)| n).sum();
                assert_eq!(by_status, s.interval.completed, "{:?}", s.statuses);
                assert!(s.statuses.iter().all(|(code, _)| *code == 200));
                assert!(s.errors.is_empty(), "{:?}", s.errors);
                seen.push((now, s.interval));
            }
        }
        seen
    })
}

#[test]
fn seconds_arrive_while_the_run_goes_and_match_the_result() {
    let url = serve(
        "/",
        Arc::new(|s, _| {
            // 200 µs per answer, so that the run spans several seconds.
            std::thread::sleep(Duration::from_micros(200));
            s.write_all(&ok_response("PONG")).is_ok()
        }),
    );
    let s = spec(&url, 4, 2, 2500);
    let control = Arc::new(Control::watched());
    let watcher = watch(&control, 2, 3);
    let r = run(&s.clone().plan().unwrap(), control).unwrap().result;
    let ended = Instant::now();
    let seen = watcher.join().unwrap();
    assert_eq!(
        seen.iter().map(|(_, i)| i.t).collect::<Vec<_>>(),
        [0, 1, 2],
        "seconds in order"
    );
    for (at, i) in &seen[..2] {
        assert!(*at < ended, "second {} arrived only after the run", i.t);
        assert!(i.completed > 100, "{i:?}");
        assert_eq!((i.connections, i.in_flight, i.users), (4, 4, 0), "{i:?}");
    }
    for (_, i) in &seen {
        let fin = r.intervals.iter().find(|f| f.t == i.t).unwrap();
        assert_eq!(fin.completed, i.completed);
        assert_eq!(fin.histogram, i.histogram, "the same merge");
    }
}

#[test]
fn a_stalled_second_is_kept_with_its_connections_held() {
    let url = serve(
        "/",
        Arc::new(|s, n| {
            if n == 20 {
                // The server stalls for two seconds: the stalled second is under test.
                std::thread::sleep(Duration::from_millis(2300));
            }
            s.write_all(&ok_response("x")).is_ok()
        }),
    );
    let r = run(
        &spec(&url, 1, 1, 2800).plan().unwrap(),
        Arc::new(Control::default()),
    )
    .unwrap()
    .result;
    let stalled = r
        .intervals
        .iter()
        .find(|i| i.t == 1)
        .expect("second 1 kept");
    assert_eq!(stalled.completed, 0, "{stalled:?}");
    assert_eq!((stalled.connections, stalled.in_flight), (1, 1));
    assert!(r.intervals.iter().any(|i| i.t == 2 && i.completed > 0));
}

#[test]
fn seconds_keep_coming_after_a_worker_ends_while_another_waits() {
    // One of two requests is answered at once, the other after 2.5 s: the worker of
    // the first ends, and the live view must not wait for its seconds.
    let url = serve(
        "/",
        Arc::new(|s, n| {
            if n == 1 {
                std::thread::sleep(Duration::from_millis(2500));
            }
            s.write_all(&ok_response("PONG")).is_ok()
        }),
    );
    let mut s = spec(&url, 2, 2, 1);
    s.load.duration = None;
    s.load.requests = Some(2);
    s.validate().unwrap();
    let control = Arc::new(Control::watched());
    let watcher = watch(&control, 2, 2);
    let r = run(&s.clone().plan().unwrap(), control).unwrap().result;
    let ended = Instant::now();
    let seen = watcher.join().unwrap();
    assert_eq!(r.requests.completed, 2);
    assert_eq!(seen.iter().map(|(_, i)| i.t).collect::<Vec<_>>(), [0, 1]);
    let (at, second) = &seen[1];
    assert!(*at < ended, "second 1 came only after the run ended");
    assert_eq!(second.in_flight, 1, "{second:?}");
}
