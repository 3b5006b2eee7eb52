//! A fleet's segment (`--fleet`, as `stampede ssh` runs each): it says ready, waits
//! for the coordinator's start on its standard input, sends each second's figures
//! ahead of its result, stops when told, and starts nothing on a start that comes
//! too late.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use stampede_lab::fleet::{start_line, Frame, STOP_LINE};

fn now_s() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// A segment of a `load` run with `--fleet`, its frames read as they come.
fn segment(url: &str, duration: &str) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_stampede"))
        .args([
            "load", "-q", "--rate", "200", "-d", duration, "-c", "2", url,
        ])
        .args(["--segment", "1/2", "--fleet", "--json", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// A segment of a 5 s run, once it has said ready, against a listener that answers
/// nothing (any connection would wait in its queue); the listener lives as long as it.
fn ready_against_silence() -> (
    std::net::TcpListener,
    std::process::Child,
    BufReader<std::process::ChildStdout>,
) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}/pong", listener.local_addr().unwrap());
    let mut child = segment(&url, "5s");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    assert!(matches!(next_frame(&mut out), Some(Frame::Ready { .. })));
    (listener, child, out)
}

fn next_frame(r: &mut impl BufRead) -> Option<Frame> {
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    Frame::parse(line.trim_end().as_bytes()).map(Result::unwrap)
}

#[test]
fn a_segment_waits_for_the_start_sends_its_seconds_and_stops_when_told() {
    let srv = crate::common::srv();
    let mut child = segment(&srv.url("/pong"), "30s");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    // Ready, saying what it runs (the coordinator's live outputs label it so).
    match next_frame(&mut out) {
        Some(Frame::Ready { segment, run }) => {
            assert_eq!(segment, "1/2");
            let run = run.unwrap();
            // The run's rate (each segment runs its share of it).
            assert_eq!((run.method.as_str(), run.rate), ("GET", Some(200.0)));
            assert_eq!(run.url, srv.url("/pong"));
        }
        other => panic!("{other:?}"),
    }
    let mut stdin = child.stdin.take().unwrap();
    let at = now_s() + 0.3;
    stdin.write_all(start_line(at).as_bytes()).unwrap();
    // Two seconds of figures, then the stop.
    let mut seconds = Vec::new();
    while seconds.len() < 2 {
        match next_frame(&mut out) {
            Some(Frame::Second(s)) => {
                // Its answers by status travel with it.
                let answered: u64 = s.statuses.iter().map(|(_, n)| n).sum();
                assert_eq!(answered, s.interval.completed, "{s:?}");
                seconds.push(s.interval)
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!((seconds[0].t, seconds[1].t), (0, 1));
    // Half of 200/s: the segment's share.
    assert!((80..=120).contains(&seconds[1].completed), "{seconds:?}");
    stdin.write_all(STOP_LINE.as_bytes()).unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    let status = child.wait().unwrap();
    assert!(status.success());
    // Its last seconds' frames, then its result, which began at the given start.
    let result: Vec<&str> = rest
        .lines()
        .filter(|l| !l.starts_with(stampede_lab::fleet::PREFIX))
        .collect();
    let r: serde_json::Value = serde_json::from_str(&result.join("\n")).unwrap();
    let started = r["started_unix_ms"].as_f64().unwrap() / 1000.0;
    assert!((started - at).abs() < 0.05, "{started} {at}");
    let lasted = r["duration_s"].as_f64().unwrap();
    assert!(lasted < 10.0, "the stop ended a 30 s run: {lasted}");
}

#[test]
fn a_start_that_comes_too_late_starts_nothing() {
    let (listener, mut child, mut out) = ready_against_silence();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(start_line(now_s() - 3.0).as_bytes())
        .unwrap();
    match next_frame(&mut out) {
        Some(Frame::Missed { late_s }) => assert!((2.9..4.0).contains(&late_s), "{late_s}"),
        other => panic!("{other:?}"),
    }
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("started nothing, so that no backlog is fired"),
        "{err}"
    );
    assert!(
        listener.accept().is_err(),
        "nothing connected to the server"
    );
}

#[test]
fn a_segment_whose_coordinator_goes_away_stops() {
    let srv = crate::common::srv();
    let mut child = segment(&srv.url("/pong"), "30s");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    assert!(matches!(next_frame(&mut out), Some(Frame::Ready { .. })));
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(start_line(now_s() + 0.2).as_bytes())
        .unwrap();
    assert!(matches!(next_frame(&mut out), Some(Frame::Second(_))));
    drop(stdin);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(std::time::Instant::now() < deadline, "still running");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success());
}

#[test]
fn a_stop_before_the_start_ends_the_segment_at_once() {
    let (listener, mut child, _out) = ready_against_silence();
    let asked = std::time::Instant::now();
    child
        .stdin
        .as_mut()
        .unwrap()
        .write_all(STOP_LINE.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("stopped before the start"), "{err}");
    assert!(asked.elapsed() < Duration::from_secs(5));
    assert!(
        listener.accept().is_err(),
        "nothing connected to the server"
    );
}
