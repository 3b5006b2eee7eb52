//! The built-in plan parses for any number of CPUs and pins client and server apart where it can.

#[test]
fn the_builtin_plan_parses_and_pins_apart_where_it_can() {
    for cpus in [1, 2, 3, 16] {
        let p = stampede_lab::plan::Plan::parse(&super::builtin_plan(cpus), "builtin").unwrap();
        assert_eq!(p.targets.len(), 2);
        assert!(p.scenarios.len() >= 8);
        let d = p.description.unwrap();
        if cpus >= 3 {
            assert_eq!(p.client_cpus, [0]);
            let server: Vec<usize> = (1..cpus).collect();
            assert!(p.targets.iter().all(|t| t.cpus == server), "{cpus}");
            assert!(d.contains("CPU 0"), "{d}");
            let all = &p.targets[1];
            let stampede_lab::plan::TargetKind::Command { start, .. } = &all.kind else {
                panic!()
            };
            assert!(
                start.ends_with(&format!("--threads {}", cpus - 1)),
                "{start}"
            );
        } else {
            assert!(p.client_cpus.is_empty());
            assert!(p.targets.iter().all(|t| t.cpus.is_empty()));
            assert!(d.contains("share"), "{d}");
        }
    }
}
