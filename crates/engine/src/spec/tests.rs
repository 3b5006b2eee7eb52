//! The load description's own rules: a session's script timed step by step, a
//! walk's rate over the requests, and durations in every spelling.

use super::*;

#[test]
fn a_timed_script_times_every_step_in_order_and_alone() {
    let t = crate::Target::parse("http://127.0.0.1:9/").unwrap();
    let req = crate::RequestBuilder::native(&t, "GET", true)
        .build()
        .unwrap();
    let ms = Duration::from_millis;
    let spec = |steps: Vec<Step>| {
        let mut s = LoadSpec::new(t.clone(), req.clone());
        s.load.shape = Shape::Sessions {
            period: None,
            count: 1,
        };
        s.load.script = steps;
        s.validate()
    };
    let timed = |at| Step::timed(req.clone(), ms(at));
    assert!(spec(vec![timed(0), timed(5), timed(5)]).is_ok());
    // Each session's offsets start again from its own beginning.
    let mut again = timed(1);
    again.new_session = true;
    assert!(spec(vec![timed(0), timed(5), again]).is_ok());
    let mut paused = timed(5);
    paused.pause = ms(1);
    let mut burst = timed(5);
    burst.follows = true;
    for (steps, says) in [
        (
            vec![timed(0), Step::new(req.clone(), ms(0))],
            "step 2 has no offset",
        ),
        (vec![timed(5), timed(4)], "step 2 is meant"),
        (
            vec![timed(0), paused],
            "step 2 has an offset and a burst or pause",
        ),
        (
            vec![timed(0), burst],
            "step 2 has an offset and a burst or pause",
        ),
    ] {
        let e = spec(steps).unwrap_err().to_string();
        assert!(e.contains(says), "{e}");
    }
}

#[test]
fn a_walk_moves_on_at_its_rate_and_wraps() {
    let picks = |rate: f64, n: u64, len: usize| -> Vec<usize> {
        (0..n)
            .map(|i| Walk { rate, once: false }.index(i, len))
            .collect()
    };
    // httperf's working set at 0.25: each file four times in a row (the first
    // three, the walk starting at 0), then the next; wrapping after the last.
    assert_eq!(picks(0.25, 12, 3), [0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 0]);
    assert_eq!(picks(1.0, 5, 3), [1, 2, 0, 1, 2]);
    // A rate that is no whole fraction moves on as often as it adds up to one.
    assert_eq!(picks(0.4, 6, 10), [0, 0, 1, 1, 2, 2]);
}

#[test]
fn durations_in_every_spelling_flags_and_plans_accept() {
    let d = |s: &str| parse_duration(s).unwrap();
    assert_eq!(d("10s"), Duration::from_secs(10));
    assert_eq!(d("10"), Duration::from_secs(10));
    assert_eq!(d("10sec"), Duration::from_secs(10));
    assert_eq!(d("10 SECS"), Duration::from_secs(10));
    assert_eq!(d("500ms"), Duration::from_millis(500));
    assert_eq!(d("250us"), Duration::from_micros(250));
    assert_eq!(d("250µs"), Duration::from_micros(250));
    assert_eq!(d("2m"), Duration::from_secs(120));
    assert_eq!(d("2min"), Duration::from_secs(120));
    assert_eq!(d("1h"), Duration::from_secs(3600));
    assert_eq!(d("1.5s"), Duration::from_millis(1500));
    assert!(parse_duration("10x").unwrap_err().0.contains("unit"));
    assert!(parse_duration("5 fortnights")
        .unwrap_err()
        .0
        .contains("unknown unit"));
    assert!(parse_duration("abc").unwrap_err().0.contains("duration"));
    assert!(parse_duration("1000000000h").is_err());
}
