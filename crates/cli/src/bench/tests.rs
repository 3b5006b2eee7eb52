//! The built-in plan parses for any number of CPUs and pins client and server apart where it can.

#[test]
fn the_builtin_plan_parses_and_pins_apart_where_it_can() {
    for (cpus, ring) in [(1, true), (2, false), (2, true), (3, true), (16, false)] {
        let p =
            stampede_lab::plan::Plan::parse(&super::builtin_plan(cpus, ring), "builtin").unwrap();
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
        } else if cpus == 2 && ring {
            // Two CPUs: a core each, and two configurations that differ on one core.
            assert_eq!(p.client_cpus, [0]);
            assert!(p.targets.iter().all(|t| t.cpus == [1]));
            assert_eq!(p.targets[0].name, "serve-epoll");
            assert_eq!(p.targets[1].name, "serve-io_uring");
            assert!(d.contains("CPU 1"), "{d}");
        } else {
            assert!(p.client_cpus.is_empty());
            assert!(p.targets.iter().all(|t| t.cpus.is_empty()));
            assert!(d.contains("share"), "{d}");
        }
    }
}
