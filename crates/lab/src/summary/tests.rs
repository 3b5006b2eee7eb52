//! The bench summary's verdicts on runs built by hand: what a client-bound run
//! withholds, and what is still given beside or as a bound.

use super::*;
use crate::stats::Shift;
use stampede_engine::limit::{Limit, Verdict};
use stampede_engine::RunResult;

/// A run of `n` answers at `rps` whose server spent `cpu_us` per answer; its limit
/// is the client's when `client_bound`.
fn run(target: &str, rep: u32, rps: f64, cpu_us: f64, client_bound: bool) -> RunRecord {
    let mut r: RunResult = serde_json::from_str(include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../engine/tests/data/small-result.json"
    )))
    .expect("fixture");
    let n = 100_000;
    r.requests.completed = n;
    r.throughput_rps = rps;
    r.limit = Some(Limit {
        verdict: if client_bound {
            Verdict::ClientBound
        } else {
            Verdict::ServerBound
        },
        reason: "figures".into(),
        client_threads: Vec::new(),
        client_cores: 1.0,
        offered_rps: None,
        achieved_rps: rps,
        pool_saturation: None,
        network: None,
        target: None,
        server_queue: None,
    });
    RunRecord {
        target: target.into(),
        scenario: "s".into(),
        repetition: rep,
        result: r,
        target_cpu_user_s: Some(cpu_us * n as f64 / 1e6 * 0.25),
        target_cpu_sys_s: Some(cpu_us * n as f64 / 1e6 * 0.75),
        target_peak_rss_kb: None,
        client_cpu_s: None,
    }
}

fn summary(runs: &[RunRecord]) -> BenchSummary {
    let targets: Vec<TargetStatus> = ["a", "b"]
        .iter()
        .map(|n| TargetStatus {
            name: n.to_string(),
            ok: true,
            status: "stopped: exited 0".into(),
            version: None,
            stderr_tail: None,
        })
        .collect();
    summarize_bench(
        &BenchRecord {
            bench_id: 1,
            plan: "p",
            environment: &serde_json::Value::Null,
            machine: "m",
            targets: &targets,
            scenarios: &["s".to_string()],
            verifications: &[],
            runs,
            assertions: &[],
            notes: &[],
            interrupted: false,
        },
        0.02,
        Test::Welch,
    )
}

#[test]
fn a_client_bound_comparison_still_answers_on_the_server_s_cpu_per_request() {
    let cpu = [(4.9, 4.5), (5.0, 4.4), (4.8, 4.5), (4.9, 4.6)];
    let runs: Vec<RunRecord> = (cpu.iter().enumerate())
        .flat_map(|(i, &(a, b))| {
            let i = i as u32 + 1;
            [
                run("a", i, 200_000.0 + i as f64, a, true),
                run("b", i, 215_000.0 - i as f64, b, true),
            ]
        })
        .collect();
    let s = summary(&runs);
    let b = &s.rows[0].cells[1];
    let v = b.vs_baseline.as_ref().expect("a comparison");
    assert_eq!(v.verdict, Shift::Withheld);
    let c = b.cpu_vs_baseline.as_ref().expect("the CPU comparison");
    assert_eq!(c.verdict, Shift::Lower, "{c:?}");
    assert!((c.ratio - 4.5 / 4.9).abs() < 0.01, "{}", c.ratio);
    // Not given where the row's own verdict stands.
    let runs: Vec<RunRecord> = (runs.into_iter())
        .map(|mut r| {
            r.result.limit.as_mut().unwrap().verdict = Verdict::ServerBound;
            r
        })
        .collect();
    let s = summary(&runs);
    let b = &s.rows[0].cells[1];
    assert_ne!(b.vs_baseline.as_ref().unwrap().verdict, Shift::Withheld);
    assert!(b.cpu_vs_baseline.is_none());
}

#[test]
fn a_side_that_set_its_own_pace_behind_a_client_bound_one_is_behind_at_least_that() {
    // The baseline client-bound at about 21,000 req/s; the other server-bound.
    let pair = |other: f64, other_held: bool| -> Comparison {
        let runs: Vec<RunRecord> = (1..=4u32)
            .flat_map(|i| {
                let f = i as f64;
                [
                    run("a", i, 21_000.0 + 50.0 * f, 25.0, true),
                    run("b", i, other + 40.0 * f, 60.0, other_held),
                ]
            })
            .collect();
        let s = summary(&runs);
        s.rows[0].cells[1]
            .vs_baseline
            .clone()
            .expect("a comparison")
    };
    let slower = pair(6_000.0, false);
    assert_eq!(slower.verdict, Shift::Lower, "{slower:?}");
    assert_eq!(slower.at_least.as_deref(), Some(AT_LEAST));
    // Ahead of a client-bound baseline, a server-bound side's lead could be the
    // client's: withheld.
    let faster = pair(25_000.0, false);
    assert_eq!(faster.verdict, Shift::Withheld, "{faster:?}");
    // Both held by the client: withheld whichever is ahead.
    let both = pair(6_000.0, true);
    assert_eq!(both.verdict, Shift::Withheld, "{both:?}");
}
