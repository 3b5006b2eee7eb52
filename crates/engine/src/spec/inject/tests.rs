use super::*;
use crate::math::erf;

fn p(s: &str) -> Profile {
    Profile::parse(&[s.to_string()]).unwrap()
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

#[test]
fn both_spellings_parse_to_the_same_steps() {
    assert_eq!(
        p("rampUsers(100).during(60)"),
        p("rampUsers(100) over (1 minute)")
    );
    assert_eq!(
        p("rampUsers(100).during(60)"),
        p("rampUsers(100).during(60.seconds)")
    );
    assert_eq!(
        p("constantUsersPerSec(20).during(15)"),
        p("constantUsersPerSec(20) during (15 seconds)")
    );
    assert_eq!(
        p("rampUsersPerSec(10).to(20).during(10.minutes).randomized"),
        p("rampUsersPerSec(10) to 20 during (10 minutes) randomized")
    );
    assert_eq!(
        p("nothingFor(500 ms)").steps,
        vec![InjectionStep::NothingFor(Duration::from_millis(500))]
    );
    let chained = p("nothingFor(4), atOnceUsers(10), rampUsers(10).during(5)");
    assert_eq!(chained.steps.len(), 3);
    assert_eq!(secs(chained.duration()), 9.0);
}

#[test]
fn errors_name_the_step_and_list_the_forms() {
    for (bad, needle) in [
        ("rampUsers(10)", "needs .during"),
        ("rampUser(10).during(5)", "unknown step"),
        ("rampUsers(10).during(5).sideways", "unknown modifier"),
        ("atOnceUsers(1.5)", "whole number"),
        ("rampUsers(10).during(5", "missing )"),
        ("constantUsersPerSec(-1).during(5)", "unexpected character"),
        (
            "rampUsers(10) over (1 fortnight)",
            "unknown time unit \"fortnight\"",
        ),
        (
            "rampUsers(10).during(1.fortnight)",
            "unknown time unit \"fortnight\"",
        ),
        ("atOnceUsers(100000000000000000000)", "at most 100000000"),
        (
            "constantUsersPerSec(20000000).during(1)",
            "users/s is beyond",
        ),
    ] {
        let e = Profile::parse(&[bad.to_string()]).unwrap_err();
        assert!(
            e.0.contains(needle) && e.0.contains("accepted:"),
            "{bad}: {e}"
        );
    }
    // A modifier after a bare number is no unit.
    for ok in [
        "constantUsersPerSec(10) during 60 randomized",
        "constantUsersPerSec(10) during 60.randomized",
        "rampUsers(10) over (1 minute)",
    ] {
        assert!(Profile::parse(&[ok.to_string()]).is_ok(), "{ok}");
    }
    let e = Profile::parse(&["atOnceUsers(1), constantConcurrentUsers(2).during(1)".into()])
        .unwrap_err();
    assert!(e.0.contains("cannot be mixed"), "{e}");
}

#[test]
fn open_steps_arrive_exactly() {
    let a: Vec<Duration> = p("nothingFor(2), atOnceUsers(3), rampUsers(4).during(2)")
        .arrivals(1)
        .collect();
    let ms: Vec<u128> = a.iter().map(|d| d.as_millis()).collect();
    assert_eq!(ms, [2000, 2000, 2000, 2000, 2500, 3000, 3500]);
    // constantUsersPerSec(r).during(d) is rampUsers(round(r·d)).during(d).
    let c: Vec<Duration> = p("constantUsersPerSec(50).during(10)")
        .arrivals(1)
        .collect();
    assert_eq!(c.len(), 500);
    assert_eq!(c[1], Duration::from_millis(20));
    assert!(c.iter().all(|t| *t < Duration::from_secs(10)));
}

#[test]
fn ramp_rate_counts_and_density() {
    let a: Vec<Duration> = p("rampUsersPerSec(10).to(30).during(10)")
        .arrivals(1)
        .collect();
    assert_eq!(a.len(), 200);
    let first = a.iter().filter(|t| **t < Duration::from_secs(1)).count();
    let last = a.iter().filter(|t| **t >= Duration::from_secs(9)).count();
    // Rate 10→12 in the first second, 28→30 in the last.
    assert_eq!(first, 11);
    assert_eq!(last, 29);
    assert!(a.windows(2).all(|w| w[0] <= w[1]));
}

#[test]
fn randomized_steps_are_poisson_with_the_right_count() {
    let a: Vec<Duration> = p("constantUsersPerSec(1000).during(10).randomized")
        .arrivals(9)
        .collect();
    assert!((9_700..10_300).contains(&a.len()), "{}", a.len());
    assert!(a.iter().all(|t| *t < Duration::from_secs(10)));
    let r: Vec<Duration> = p("rampUsersPerSec(0).to(2000).during(10).randomized")
        .arrivals(9)
        .collect();
    assert!((9_700..10_300).contains(&r.len()), "{}", r.len());
    let early = r.iter().filter(|t| **t < Duration::from_secs(5)).count();
    assert!((2_300..2_700).contains(&early), "{early}");
}

#[test]
fn stress_peak_is_a_smoothed_step() {
    let a: Vec<Duration> = p("stressPeakUsers(1000).during(20)").arrivals(1).collect();
    assert_eq!(a.len(), 1000);
    assert_eq!(a[0], Duration::ZERO);
    assert!(a.windows(2).all(|w| w[0] <= w[1]));
    let middle = a
        .iter()
        .filter(|t| (8.0..12.0).contains(&secs(**t)))
        .count();
    let edges = a
        .iter()
        .filter(|t| secs(**t) < 4.0 || secs(**t) >= 16.0)
        .count();
    assert!(middle > 300, "{middle}");
    assert!(edges < 100, "{edges}");
    assert!((erf(erfinv(0.3)) - 0.3).abs() < 1e-9);
}

#[test]
fn staircases_expand_like_gatling() {
    let s = p("incrementUsersPerSec(10).times(3).eachLevelLasting(10).separatedByRampsLasting(5).startingFrom(5)");
    let rates: Vec<String> = s
        .steps
        .iter()
        .map(|st| match st {
            InjectionStep::ConstantRate { rate, .. } => format!("L{rate}"),
            InjectionStep::RampRate { from, to, .. } => format!("R{from}-{to}"),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(rates, ["L5", "R5-15", "L15", "R15-25", "L25"]);
    assert_eq!(secs(s.duration()), 40.0);
    let z = p("incrementUsersPerSec(10).times(2).eachLevelLasting(10).separatedByRampsLasting(5)");
    assert_eq!(z.steps.len(), 4);
    let users = z.arrivals(1).count();
    // ramp 0→10 over 5 s (25) + 10/s for 10 s (100) + ramp 10→20 (75) + 20/s for 10 s (200)
    assert_eq!(users, 400);
}

#[test]
fn closed_profiles_give_concurrency_over_time() {
    let c = p("constantConcurrentUsers(10).during(5), rampConcurrentUsers(10).to(20).during(10)");
    assert!(c.is_closed());
    assert_eq!(c.concurrency_at(Duration::from_secs(0)), 10);
    assert_eq!(c.concurrency_at(Duration::from_secs(5)), 10);
    assert_eq!(c.concurrency_at(Duration::from_secs(10)), 15);
    assert_eq!(c.concurrency_at(Duration::from_secs(15)), 0);
    let st = p("incrementConcurrentUsers(5).times(3).eachLevelLasting(10).startingFrom(10)");
    let levels: Vec<u64> = [0, 10, 20, 29]
        .iter()
        .map(|&s| st.concurrency_at(Duration::from_secs(s)))
        .collect();
    assert_eq!(levels, [10, 15, 20, 20]);
}

#[test]
fn most_users_bounds_how_many_are_there_at_once() {
    let p =
        |s: &[&str]| Profile::parse(&s.iter().map(|x| x.to_string()).collect::<Vec<_>>()).unwrap();
    assert_eq!(
        p(&["atOnceUsers(12)", "rampUsers(8).during(1)"]).most_users(),
        20
    );
    assert_eq!(
        p(&["constantUsersPerSec(100).during(30)"]).most_users(),
        3_000
    );
    assert_eq!(
        p(&["rampUsersPerSec(10).to(30).during(10)"]).most_users(),
        200
    );
    assert_eq!(
        p(&[
            "constantConcurrentUsers(50).during(10)",
            "rampConcurrentUsers(50).to(70).during(5)"
        ])
        .most_users(),
        70
    );
}
