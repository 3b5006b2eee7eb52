//! wrk's Lua scripts end to end: wrk's documented examples run by `stampede wrk -s`
//! against an in-process server on 127.0.0.1:0 that records every request it receives
//! (connection, arrival time, method, path, headers, body), so each test checks what
//! the script made the load generator send, not only what it printed. Every run is
//! bounded by a short duration.

use std::process::Output;
use std::time::{Duration, Instant};

use crate::common::recorder::{stampede, tempdir, text, Recorder};

/// One of the example scripts shipped in crates/script/scripts (wrk's examples).
fn example(name: &str) -> String {
    format!("{}/../script/scripts/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn script(name: &str, body: &str) -> (tempdir::Dir, String) {
    let dir = tempdir::Dir::new();
    let path = dir.0.join(name);
    std::fs::write(&path, body).unwrap();
    let p = path.to_string_lossy().into_owned();
    (dir, p)
}

fn wrk(args: &[&str]) -> Output {
    stampede(&[&["wrk"], args].concat())
}

#[test]
fn an_authentication_token_from_a_response_goes_on_every_later_request() {
    let srv = Recorder::start();
    let s = example("auth.lua");
    let out = wrk(&["-t1", "-c1", "-d", "500ms", "-s", &s, &srv.url("/")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let seen = srv.seen();
    assert!(seen.len() > 10, "{}", seen.len());
    assert_eq!(seen[0].path, "/authenticate");
    assert!(!seen[0].headers.contains_key("X-Token"));
    for r in &seen[1..] {
        assert_eq!(r.path, "/resource");
        assert_eq!(r.headers.get("X-Token").map(String::as_str), Some("s3cret"));
    }
}

#[test]
fn a_post_body_set_by_the_script_is_sent_with_its_length() {
    let srv = Recorder::start();
    let s = example("post.lua");
    let out = wrk(&["-t1", "-c2", "-d", "300ms", "-s", &s, &srv.url("/form")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let seen = srv.seen();
    assert!(!seen.is_empty());
    for r in &seen {
        assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/form"));
        assert_eq!(r.body, b"foo=bar&baz=quux");
        assert_eq!(r.headers["Content-Length"], "16");
        assert_eq!(
            r.headers["Content-Type"],
            "application/x-www-form-urlencoded"
        );
        assert_eq!(r.headers["Host"], format!("127.0.0.1:{}", srv.port));
    }
}

#[test]
fn pipelined_requests_from_the_script_arrive_in_order() {
    let srv = Recorder::start();
    let s = example("pipeline.lua");
    let out = wrk(&["-t1", "-c1", "-d", "300ms", "-s", &s, &srv.url("/")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let seen = srv.seen();
    assert!(seen.len() >= 3);
    for (i, r) in seen.iter().enumerate() {
        assert_eq!(r.path, ["/?foo", "/?bar", "/?baz"][i % 3], "request {i}");
    }
    // Every response was counted as a request, three per batch.
    let o = text(&out.stdout);
    let done: u64 = o
        .lines()
        .find(|l| l.contains(" requests in "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{o}"));
    assert!(
        done >= 3 && done as usize <= seen.len(),
        "{done} of {}",
        seen.len()
    );
}

#[test]
fn a_counter_per_request_numbers_every_request_once() {
    let srv = Recorder::start();
    let s = example("counter.lua");
    let out = wrk(&["-t1", "-c4", "-d", "300ms", "-s", &s, &srv.url("/")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let seen = srv.seen();
    assert!(seen.len() > 10, "{}", seen.len());
    let mut numbers: Vec<u64> = seen
        .iter()
        .map(|r| {
            let n: u64 = r.path[1..].parse().unwrap();
            assert_eq!(r.headers["X-Counter"], n.to_string());
            n
        })
        .collect();
    numbers.sort_unstable();
    numbers.dedup();
    // One thread, one counter: no number sent twice.
    assert_eq!(numbers.len(), seen.len());
}

#[test]
fn a_counter_runs_at_wrk2s_fixed_rate_too() {
    let srv = Recorder::start();
    let s = example("counter.lua");
    let out = wrk(&[
        "-t1",
        "-c2",
        "-d",
        "1s",
        "-R",
        "200",
        "-s",
        &s,
        &srv.url("/"),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let seen = srv.seen();
    assert!((180..=215).contains(&seen.len()), "{}", seen.len());
    let paths: std::collections::HashSet<&str> = seen.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths.len(), seen.len());
}

#[test]
fn a_random_delay_spaces_each_connections_requests() {
    let srv = Recorder::start();
    let s = example("delay.lua");
    let out = wrk(&["-t1", "-c1", "-d", "1s", "-s", &s, &srv.url("/")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let seen = srv.seen();
    // 10–50 ms between requests on one connection: about 20 to 100 in a second.
    assert!((15..=100).contains(&seen.len()), "{}", seen.len());
    assert!(
        seen.iter().all(|r| r.conn == seen[0].conn),
        "one connection"
    );
    for w in seen.windows(2) {
        let gap = w[1].at - w[0].at;
        assert!(gap >= Duration::from_millis(9), "gap {gap:?}");
    }
}

#[test]
fn setup_passes_data_to_and_from_each_thread() {
    let srv = Recorder::start();
    let s = example("setup.lua");
    let out = wrk(&["-t2", "-c4", "-d", "300ms", "-s", &s, &srv.url("/")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let o = text(&out.stdout);
    assert!(
        o.contains("thread 1 created") && o.contains("thread 2 created"),
        "{o}"
    );
    let mut responses = 0;
    for id in 1..=2 {
        let line = o
            .lines()
            .find(|l| l.starts_with(&format!("thread {id} made")))
            .unwrap_or_else(|| panic!("{o}"));
        let words: Vec<&str> = line.split_whitespace().collect();
        let (req, resp): (u64, u64) = (words[3].parse().unwrap(), words[7].parse().unwrap());
        assert!(req >= resp && resp > 0, "{line}");
        responses += resp;
    }
    // done() runs after the report, and its counts agree with what the server saw.
    assert!(o.find("Requests/sec").unwrap() < o.find("thread 1 made").unwrap());
    let seen = srv.seen().len() as u64;
    assert!(
        responses <= seen && seen <= responses + 4,
        "{responses} of {seen}"
    );
}

#[test]
fn setup_gives_each_thread_an_address_from_lookup() {
    let srv = Recorder::start();
    let s = example("addr.lua");
    // The URL names localhost; the script's address is the one the load goes to.
    let url = format!("http://localhost:{}/", srv.port);
    let out = wrk(&["-t2", "-c2", "-d", "200ms", "-s", &s, &url]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let o = text(&out.stdout);
    assert_eq!(o.matches("thread addr: ").count(), 2, "{o}");
    assert!(!srv.seen().is_empty());
}

#[test]
fn a_thread_that_stops_itself_sends_no_more() {
    let srv = Recorder::start();
    let s = example("stop.lua");
    let started = Instant::now();
    let out = wrk(&["-t1", "-c1", "-d", "10s", "-s", &s, &srv.url("/")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Its only thread stopped after the 100th response: the run ends there.
    assert!(started.elapsed() < Duration::from_secs(8));
    assert_eq!(srv.seen().len(), 100);
    assert!(
        text(&out.stdout).contains("100 requests in"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn done_prints_a_custom_report() {
    let srv = Recorder::start();
    let s = example("report.lua");
    let out = wrk(&["-t1", "-c2", "-d", "1s", "-s", &s, &srv.url("/")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let o = text(&out.stdout);
    let tail = &o[o
        .find("------------------------------\n")
        .unwrap_or_else(|| panic!("{o}"))..];
    let p: Vec<u64> = ["50%,", "90%,", "99%,", "99.999%,"]
        .iter()
        .map(|k| {
            tail.lines()
                .find_map(|l| l.strip_prefix(k))
                .unwrap_or_else(|| panic!("{k} in {tail}"))
                .parse()
                .unwrap()
        })
        .collect();
    assert!(p[0] > 0 && p.windows(2).all(|w| w[0] <= w[1]), "{p:?}");
    let line = tail.lines().find(|l| l.starts_with("requests,")).unwrap();
    let f: Vec<&str> = line.split(',').collect();
    let requests: usize = f[1].parse().unwrap();
    assert!(requests > 0 && requests <= srv.seen().len(), "{line}");
    assert_eq!(f[3], "0");
    let dur: u64 = f[5].parse().unwrap();
    assert!((900_000..=1_200_000).contains(&dur), "{dur}");
}

#[test]
fn lua_errors_name_the_file_and_line_and_end_the_run_cleanly() {
    let srv = Recorder::start();
    // A syntax error: nothing runs.
    let (_d, s) = script(
        "bad.lua",
        "request = function()\n  return wrk.format(\nend\n",
    );
    let out = wrk(&["-t1", "-c1", "-d", "1s", "-s", &s, &srv.url("/")]);
    assert!(!out.status.success());
    let e = text(&out.stderr);
    assert!(e.contains("bad.lua:3:"), "{e}");
    assert!(srv.seen().is_empty());
    // A runtime error inside request(), after some requests: the run stops, the report
    // is printed, the error names the line, the exit status says it failed.
    let (_d2, s) = script(
        "boom.lua",
        "n = 0\nrequest = function()\n  n = n + 1\n  if n == 50 then\n    local t = nil\n    return t.field\n  end\n  return wrk.format()\nend\n",
    );
    let started = Instant::now();
    let out = wrk(&["-t1", "-c1", "-d", "10s", "-s", &s, &srv.url("/")]);
    assert!(started.elapsed() < Duration::from_secs(8));
    assert!(!out.status.success());
    let e = text(&out.stderr);
    assert!(
        e.contains("boom.lua:6:") && e.contains("(in request)"),
        "{e}"
    );
    assert!(text(&out.stdout).contains("Requests/sec:"));
    // response() raising.
    let (_d3, s) = script(
        "raise.lua",
        "function response(status)\n  error('unexpected ' .. status)\nend\n",
    );
    let out = wrk(&["-t1", "-c1", "-d", "10s", "-s", &s, &srv.url("/")]);
    assert!(!out.status.success());
    let e = text(&out.stderr);
    assert!(
        e.contains("raise.lua:2: unexpected 200") && e.contains("(in response)"),
        "{e}"
    );
    // A file that is not there names itself and the flag.
    let out = wrk(&["-s", "/nonexistent/x.lua", &srv.url("/")]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("-s/--script: cannot read /nonexistent/x.lua"));
}

#[test]
fn a_script_that_never_returns_cannot_hold_the_run_past_its_end() {
    let rec = Recorder::start();
    let url = rec.url("/");
    // A loop LuaJIT compiles (no hook can interrupt it) in response().
    let (_d, path) = script(
        "loop.lua",
        "response = function(status, headers, body)\n  local x = 0\n  while true do x = x + 1 end\nend\n",
    );
    let start = Instant::now();
    let out = wrk(&["-t1", "-c1", "-d1s", "-s", &path, &url]);
    let err = text(&out.stderr);
    assert!(start.elapsed() < Duration::from_secs(15), "{err}");
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("the script's code has not returned 3 s after the run's end"),
        "{err}"
    );
}

#[test]
fn a_script_that_allocates_without_end_fails_at_its_memory_limit() {
    let rec = Recorder::start();
    let url = rec.url("/");
    let (_d, path) = script(
        "hog.lua",
        "local t = {}\nrequest = function()\n  for i = 1, 1e7 do t[#t + 1] = string.rep('x', 4096) .. i end\n  return wrk.format()\nend\n",
    );
    let out = wrk(&["-t1", "-c1", "-d2s", "-s", &path, &url]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("not enough memory"), "{err}");
}

#[test]
fn a_scripts_run_that_starts_later_is_not_cut_short() {
    let rec = Recorder::start();
    let url = rec.url("/");
    // A shared start 4 s ahead: the run ends about 5 s from now, past a deadline
    // counted from the command's start (1 s + 3 s) but not from the run's.
    let at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        + 4.0;
    let out = wrk(&[
        "-t1",
        "-c1",
        "-d1s",
        "--start-at",
        &format!("{at:.3}"),
        "-s",
        &example("counter.lua"),
        &url,
    ]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("has not returned"), "{err}");
    assert!(rec.seen().len() > 10);
}
