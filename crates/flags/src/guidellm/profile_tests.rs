use super::*;

fn m(rps: f64, tps: f64) -> Measured {
    Measured {
        requests_per_s: rps,
        output_tokens_per_s: tps,
        ..Default::default()
    }
}

#[test]
fn a_sweep_runs_sync_and_throughput_then_rates_between_them() {
    let mut p = Planner::new(Profile::Sweep {
        size: 5,
        poisson: false,
        max_concurrency: 64,
    });
    assert_eq!(p.next(None).unwrap(), Some(Strategy::Synchronous));
    let t = p.next(Some((Strategy::Synchronous, m(2.0, 0.0)))).unwrap();
    assert_eq!(
        t,
        Some(Strategy::Throughput {
            max_concurrency: 64
        })
    );
    let mut rates = Vec::new();
    let mut last = (t.unwrap(), m(10.0, 0.0));
    while let Some(s) = p.next(Some(last)).unwrap() {
        rates.push(s.label());
        last = (s, m(1.0, 0.0));
    }
    // linspace(2, 10, 4) less its first: 4.67, 7.33, 10.
    assert_eq!(rates, ["constant@4.67", "constant@7.33", "constant@10.00"]);
}

#[test]
fn the_knee_is_where_the_token_rate_flattens_and_the_grid_surrounds_it() {
    // Rising 100 tokens/s per stream to 16, then flat.
    let tps = |c: f64| 100.0 * c.min(16.0);
    let pts: Vec<(f64, f64)> = [1.0, 4.0, 8.0, 12.0, 16.0, 24.0, 32.0, 48.0]
        .iter()
        .map(|&c| (c, tps(c)))
        .collect();
    let k = find_knee(&pts);
    assert_eq!(k.status, "ok", "{k:?}");
    assert!((k.knee.unwrap() - 16.0).abs() < 0.5, "{k:?}");
    assert_eq!(k.saturation_concurrency, Some(16.0));
    let linear: Vec<(f64, f64)> = (1..8).map(|c| (c as f64, 10.0 * c as f64)).collect();
    assert_eq!(find_knee(&linear).status, "no_knee");
    assert_eq!(find_knee(&pts[..4]).status, "no_knee");
    assert_eq!(
        knee_grid(16.0, 2, 5, &[15]),
        vec![5, 10, 20, 25],
        "step 5 fits two a side above 0"
    );
    assert_eq!(knee_grid(3.0, 2, 5, &[3]), vec![1, 2, 4, 5]);

    let mut p = Planner::new(Profile::Knee {
        streams: vec![1, 4, 8, 12, 16, 24, 32, 48],
        adaptive: true,
        each_side: 1,
        max_step: 2,
    });
    let mut last = None;
    let mut seen = Vec::new();
    while let Some(s) = p.next(last).unwrap() {
        seen.push(s.concurrency());
        last = Some((s, m(1.0, tps(s.concurrency() as f64))));
    }
    assert_eq!(seen, [1, 4, 8, 12, 16, 24, 32, 48, 14, 18]);
    assert_eq!(p.conclusion.adaptive, [14, 18]);
}

#[test]
fn goodput_doubles_then_bisects_to_the_tolerance() {
    let mut p = Planner::new(Profile::Goodput {
        target: 0.95,
        initial: 4,
        max: 1024,
        tolerance: 0.1,
        max_probes: 15,
        confidence: 0.95,
    });
    // Every request meets the levels up to 37 streams, none past it.
    let judge = |c: usize| Measured {
        judged: 1000,
        met: if c <= 37 { 1000 } else { 0 },
        ..Default::default()
    };
    let mut last = None;
    let mut seen = Vec::new();
    while let Some(s) = p.next(last).unwrap() {
        seen.push(s.concurrency());
        last = Some((s, judge(s.concurrency())));
    }
    assert_eq!(&seen[..5], [4, 8, 16, 32, 64]);
    let best = p.conclusion.best_passing.unwrap();
    assert!((34..=37).contains(&best), "{seen:?} → {best}");
    assert_eq!(p.conclusion.stop_reason, Some("converged"));
    assert!(p.conclusion.probes.iter().all(|p| p.resolved));
}

#[test]
fn wilsons_interval_matches_its_formula() {
    let (lo, hi) = wilson(95, 100, 0.95);
    assert!(
        (lo - 0.8882).abs() < 1e-3 && (hi - 0.9785).abs() < 1e-3,
        "{lo} {hi}"
    );
    assert!((normal_quantile(0.975) - 1.959_964).abs() < 1e-6);
}
