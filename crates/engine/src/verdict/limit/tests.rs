//! The limit verdict's rules, each with the figures that decide it.

use super::*;

fn limit(threads: &[(f64, f64)]) -> Limit {
    Limit {
        verdict: Verdict::Undetermined,
        reason: String::new(),
        client_threads: threads
            .iter()
            .map(|&(busy, waiting)| ThreadLoad {
                busy,
                waiting,
                peak: busy + waiting,
                idle: None,
            })
            .collect(),
        client_cores: 2.0,
        offered_rps: None,
        achieved_rps: 1000.0,
        pool_saturation: None,
        network: None,
        target: None,
        server_queue: None,
    }
}

const CLOSED: Context = Context {
    duration_s: 5.0,
    closed: true,
    behind: false,
    unconnected: (0, 1000),
};
const OPEN: Context = Context {
    duration_s: 5.0,
    closed: false,
    behind: false,
    unconnected: (0, 1000),
};

/// A queue in front of the server that grew names the server as the limit,
/// with the figures, where the client had time to spare.
#[test]
fn a_queue_that_grew_is_the_servers_limit() {
    let mut l = limit(&[(0.1, 0.0)]);
    l.offered_rps = Some(60.0);
    l.achieved_rps = 60.0;
    l.server_queue = Some(crate::measure::server::QueueGrowth {
        series: "vllm:num_requests_waiting".into(),
        from: 0.0,
        peak: 37.0,
        last: 2.0,
    });
    let cx = Context {
        duration_s: 5.0,
        closed: false,
        behind: false,
        unconnected: (0, 100),
    };
    l.judge(cx);
    assert_eq!(l.verdict, Verdict::ServerBound);
    assert!(
        l.reason.starts_with(
            "the queue in front of the server grew from 0 to 37 (vllm:num_requests_waiting)"
        ),
        "{}",
        l.reason
    );
}

#[test]
fn connections_that_could_not_open_leave_the_limit_undetermined() {
    let mut l = limit(&[(0.3, 0.0)]);
    l.judge(Context {
        unconnected: (8976, 10_000),
        ..CLOSED
    });
    assert_eq!(l.verdict, Verdict::Undetermined);
    assert!(l.reason.contains("8976 of 10000"), "{}", l.reason);
    // A few, or a server seen saturated: judged as ever.
    l.judge(Context {
        unconnected: (10, 10_000),
        ..CLOSED
    });
    assert_eq!(l.verdict, Verdict::ServerBound);
    l.target = Some(TargetLoad {
        busy_cores: 1.0,
        cores: 1.0,
        busiest_thread: Some(1.0),
    });
    l.judge(Context {
        unconnected: (8976, 10_000),
        ..CLOSED
    });
    assert_eq!(l.verdict, Verdict::ServerBound);
}

#[test]
fn a_thread_that_wanted_the_cpu_all_the_time_makes_the_client_the_limit() {
    let mut l = limit(&[(0.3, 0.1), (0.55, 0.4)]);
    l.judge(CLOSED);
    assert_eq!(l.verdict, Verdict::ClientBound);
    assert!(l.reason.contains("thread 2 of 2"), "{}", l.reason);
    assert!(l.reason.contains("used 55 % of a core") && l.reason.contains("CPU 40 %"));
}

#[test]
fn a_thread_that_was_never_idle_is_the_limit_whatever_the_scheduler_charged_it() {
    // 85 % on a CPU, the rest lost to interrupts and stolen time: never idle.
    let mut l = limit(&[(0.85, 0.0)]);
    l.judge(CLOSED);
    assert_eq!(l.verdict, Verdict::ServerBound, "{}", l.reason);
    l.client_threads[0].idle = Some(0.02);
    l.judge(CLOSED);
    assert_eq!(l.verdict, Verdict::ClientBound, "{}", l.reason);
    assert!(
        l.reason.contains("spent 2 % of it in its waits"),
        "{}",
        l.reason
    );
    // Idle a third of the run: the server kept it waiting.
    l.client_threads[0].idle = Some(0.33);
    l.judge(CLOSED);
    assert_eq!(l.verdict, Verdict::ServerBound, "{}", l.reason);
    // A thread waiting for a CPU behind another process is the limit even where
    // its wake-ups (counted as idle) were slow.
    l.client_threads[0] = ThreadLoad {
        busy: 0.45,
        waiting: 0.5,
        peak: 0.95,
        idle: Some(0.2),
    };
    l.judge(CLOSED);
    assert_eq!(l.verdict, Verdict::ClientBound, "{}", l.reason);
}

#[test]
fn a_closed_loop_with_time_to_spare_waited_on_the_server() {
    let mut l = limit(&[(0.4, 0.0)]);
    l.judge(CLOSED);
    assert_eq!(l.verdict, Verdict::ServerBound);
    l.target = Some(TargetLoad {
        busy_cores: 0.97,
        cores: 4.0,
        busiest_thread: Some(0.97),
    });
    l.judge(CLOSED);
    assert_eq!(l.verdict, Verdict::ServerBound);
    assert!(
        l.reason.contains("busiest thread used 97 %"),
        "{}",
        l.reason
    );
}

#[test]
fn a_held_rate_with_spare_time_names_no_side() {
    let mut l = limit(&[(0.2, 0.0)]);
    l.offered_rps = Some(1000.0);
    l.achieved_rps = 999.5;
    l.pool_saturation = Some(0.0);
    l.judge(OPEN);
    assert_eq!(l.verdict, Verdict::Undetermined);
    assert!(l.reason.contains("offered rate was the limit"));
    l.achieved_rps = 600.0;
    l.judge(OPEN);
    assert_eq!(l.verdict, Verdict::ServerBound);
    assert!(l.reason.contains("600 of the 1000"), "{}", l.reason);
}

#[test]
fn a_full_link_is_the_limit_and_too_short_a_run_is_not_judged() {
    let mut l = limit(&[(0.5, 0.0)]);
    l.network = Some(Network {
        interface: "eth0".into(),
        speed_mbps: 1000.0,
        used_mbps: 950.0,
    });
    l.judge(CLOSED);
    assert_eq!(l.verdict, Verdict::NetworkBound);
    l.judge(Context {
        duration_s: 0.1,
        ..CLOSED
    });
    assert_eq!(l.verdict, Verdict::Undetermined);
}

#[test]
fn the_sampler_accounts_for_a_busy_and_an_idle_thread() {
    let s = Sampler::default();
    std::thread::scope(|sc| {
        sc.spawn(|| {
            let k = s.register();
            let end = Instant::now() + Duration::from_millis(300);
            while Instant::now() < end {
                std::hint::spin_loop();
            }
            s.finish(&k);
        });
    });
    std::thread::scope(|sc| {
        sc.spawn(|| {
            let k = s.register();
            // A wait with nothing to do, counted as the worker counts its waits:
            // a sleep, since the verdict sets the thread's CPU time against the
            // machine's time, and only time off the CPU is idle.
            let t0 = Instant::now();
            std::thread::sleep(Duration::from_millis(300));
            k.idle(t0.elapsed());
            s.finish(&k);
        });
    });
    let l = s.loads();
    assert_eq!(l.len(), 2);
    assert!(l[0].demand() > 0.8, "{:?}", l[0]);
    assert!(l[0].idle.unwrap() < 0.01, "{:?}", l[0]);
    assert!(l[1].busy < 0.2, "{:?}", l[1]);
    assert!(l[1].idle.unwrap() > 0.9, "{:?}", l[1]);
    assert!(l[1].demand() < 0.2, "{:?}", l[1]);
}
