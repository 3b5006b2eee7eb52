//! The live view and the per-second gauges: a watched run hands over each second while
//! it runs, identical to the final result's; a server stall shows as a second with
//! connections and requests held but nothing answered. Bounded in time and count.

use std::io::Write;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use stampede_wire::clock::Clock;

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

/// Follows the live view of a run with `workers` workers until `seconds` have come (10
/// s at most), noting when each came.
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
            // Each second as the live view releases it: when each shows up is what
            // the tests check.
            let ready = live.wait(&control, deadline.saturating_duration_since(Instant::now()));
            let now = Instant::now();
            for s in ready {
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

/// The next second the live view releases, within 10 s.
fn next_second(live: &mut Live, control: &Control) -> Interval {
    let mut ready = live.wait(control, Duration::from_secs(10));
    assert_eq!(ready.len(), 1, "one second at a time");
    ready.remove(0).interval
}

/// A server that answers at once, but holds request `held` until the returned sender
/// says go; the receiver hears of requests `held` and `held + 1` as they come.
fn holding(held: u64) -> (String, mpsc::Receiver<u64>, mpsc::Sender<()>) {
    let (came_tx, came) = mpsc::channel();
    let (go, go_rx) = mpsc::channel::<()>();
    // The server's threads share the receiver of the go (a sender they may share).
    let go_rx = Mutex::new(go_rx);
    let url = serve(
        "/",
        Arc::new(move |s, n| {
            if n == held || n == held + 1 {
                let _ = came_tx.send(n);
            }
            if n == held {
                let _ = (go_rx.lock().unwrap()).recv_timeout(Duration::from_secs(10));
            }
            s.write_all(&ok_response("x")).is_ok()
        }),
    );
    (url, came, go)
}

#[test]
fn seconds_arrive_while_the_run_goes_and_match_the_result() {
    let url = serve(
        "/",
        Arc::new(|s, _| s.write_all(&ok_response("PONG")).is_ok()),
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

/// A watched run in simulated time against a server that holds one request until told.
struct Simulated {
    clock: Clock,
    /// Hears of the held request and of the one after it as each comes.
    came: mpsc::Receiver<u64>,
    /// Lets the held request be answered.
    go: mpsc::Sender<()>,
    control: Arc<Control>,
    live: Live,
    running: std::thread::JoinHandle<stampede_engine::RunResult>,
}

impl Simulated {
    /// Starts the run `spec` makes for the server's URL, request `held` held, and
    /// waits until that request has come.
    fn start(held: u64, spec: impl FnOnce(&str) -> LoadSpec) -> Simulated {
        let clock = Clock::manual();
        let (url, came, go) = holding(held);
        let s = spec(&url);
        let threads = s.load.threads;
        let control = Arc::new(Control::watched().on(clock.clone()));
        let plan = s.plan().unwrap();
        let running = {
            let control = control.clone();
            std::thread::spawn(move || run(&plan, control).unwrap().result)
        };
        assert_eq!(came.recv_timeout(Duration::from_secs(10)), Ok(held));
        let live = Live::new(threads);
        Simulated {
            clock,
            came,
            go,
            control,
            live,
            running,
        }
    }

    /// Moves the clock `ms` on: the second the live view releases then.
    fn step(&mut self, ms: u64) -> Interval {
        self.clock.advance(Duration::from_millis(ms));
        next_second(&mut self.live, &self.control)
    }
}

#[test]
fn a_stalled_second_is_kept_with_its_connections_held() {
    // In simulated time: the server holds request 20 while the run's clock moves
    // through a whole second.
    let mut sim = Simulated::start(20, |url| spec(url, 1, 1, 2800));
    assert_eq!(sim.step(1200).t, 0);
    let stalled = sim.step(1100);
    assert_eq!(stalled.t, 1);
    assert_eq!(stalled.completed, 0, "{stalled:?}");
    assert_eq!((stalled.connections, stalled.in_flight), (1, 1));
    // Answered at 2.3 s; the next request shows the answer was read in second 2.
    sim.go.send(()).unwrap();
    assert_eq!(sim.came.recv_timeout(Duration::from_secs(10)), Ok(21));
    sim.clock.advance(Duration::from_millis(600));
    let r = sim.running.join().unwrap();
    let kept = r.intervals.iter().find(|i| i.t == 1);
    assert_eq!(
        kept,
        Some(&stalled),
        "second 1 kept as the live view showed it"
    );
    assert!(r.intervals.iter().any(|i| i.t == 2 && i.completed > 0));
}

#[test]
fn seconds_keep_coming_after_a_worker_ends_while_another_waits() {
    // In simulated time: one of two requests is answered at once, the other is held
    // while the clock moves two seconds on. The worker of the first ends, and the live
    // view must not wait for its seconds.
    let mut sim = Simulated::start(1, |url| {
        let mut s = spec(url, 2, 2, 1);
        s.load.duration = None;
        s.load.requests = Some(2);
        s.validate().unwrap();
        s
    });
    assert_eq!(sim.step(1200).t, 0);
    // Second 1 comes while the run still waits on the held request.
    let second = sim.step(1000);
    assert_eq!(second.t, 1);
    assert_eq!(second.in_flight, 1, "{second:?}");
    assert!(!sim.running.is_finished());
    sim.go.send(()).unwrap();
    let r = sim.running.join().unwrap();
    assert_eq!(r.requests.completed, 2);
}
