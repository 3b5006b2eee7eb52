//! The script API without a network: loading, setup and init, what a script asks of
//! the run, the thread hooks, `done`, and errors with their file and line.

use super::*;

fn target() -> Target {
    Target {
        url: "http://127.0.0.1:8080/p?q=1".into(),
        scheme: "http".into(),
        host: "127.0.0.1".into(),
        port: Some("8080".into()),
        path: "/p?q=1".into(),
        headers: vec![("X-Flag".into(), "on".into())],
        method: "GET".into(),
        body: None,
    }
}

fn load(src: &str, threads: usize) -> Result<Script, String> {
    load_typed(src, threads).map_err(|e| e.to_string())
}

fn load_typed(src: &str, threads: usize) -> Result<Script, ScriptError> {
    Script::load(
        "t.lua",
        src,
        &target(),
        &["a1".into(), "a2".into()],
        threads,
        None,
    )
}

/// A response on connection 0 as the engine hands it over.
fn reply<'a>(status: u16, headers: &'a stampede_engine::Fields, body: &'a [u8]) -> Reply<'a> {
    Reply {
        conn: 0,
        status,
        head: b"",
        headers,
        body,
        cut: false,
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn an_empty_script_sends_wrks_default_request_once_prepared() {
    let s = load("", 2).unwrap();
    let p = s.plan();
    assert!(!p.dynamic && !p.responds && !p.delays && !p.done);
    assert_eq!(p.pipeline, 1);
    let r = text(&p.request.bytes);
    assert!(r.starts_with("GET /p?q=1 HTTP/1.1\r\n"), "{r}");
    assert!(r.contains("Host: 127.0.0.1:8080\r\n"), "{r}");
    assert!(r.contains("X-Flag: on\r\n"), "{r}");
    assert!(r.ends_with("\r\n\r\n"), "{r}");
    // Neither thread builds requests: nothing is called per request.
    let t = s.thread(1);
    assert!(!t.builds_requests() && !t.wants_responses() && !t.has_delay());
}

#[test]
fn a_post_body_set_in_the_script_gets_its_length() {
    let s = load(
        r#"wrk.method = "POST"
           wrk.body = "foo=bar&baz=quux"
           wrk.headers["Content-Type"] = "application/x-www-form-urlencoded""#,
        1,
    )
    .unwrap();
    let r = text(&s.plan().request.bytes);
    assert!(r.starts_with("POST /p?q=1 HTTP/1.1\r\n"), "{r}");
    assert!(r.contains("Content-Length: 16\r\n"), "{r}");
    assert!(r.ends_with("\r\n\r\nfoo=bar&baz=quux"), "{r}");
    assert_eq!(s.plan().request.method, "POST");
}

#[test]
fn init_gets_the_url_and_the_arguments_after_the_double_dash() {
    let s = load(
        r#"function init(args)
             wrk.headers["X-Args"] = args[0] .. "|" .. args[1] .. "|" .. args[2] .. "|" .. #args
           end"#,
        1,
    )
    .unwrap();
    let r = text(&s.plan().request.bytes);
    assert!(
        r.contains("X-Args: http://127.0.0.1:8080/p?q=1|a1|a2|2\r\n"),
        "{r}"
    );
}

#[test]
fn pipelined_requests_are_counted_and_each_call_builds_a_batch() {
    let s = load(include_str!("../scripts/pipeline.lua"), 1).unwrap();
    assert!(s.plan().dynamic);
    assert_eq!(s.plan().pipeline, 3);
    let mut t = s.thread(0);
    let mut out = Vec::new();
    assert_eq!(t.request(0, &mut out), Flow::Go);
    let r = text(&out);
    assert_eq!(r.matches(" HTTP/1.1\r\n").count(), 3, "{r}");
    assert!(r.contains("GET /?baz HTTP/1.1"), "{r}");
}

#[test]
fn a_counter_per_request_changes_every_request() {
    let s = load(include_str!("../scripts/counter.lua"), 1).unwrap();
    let mut t = s.thread(0);
    // The plan's count called request() once, as wrk does.
    for n in 1..4 {
        let mut out = Vec::new();
        assert_eq!(t.request(0, &mut out), Flow::Go);
        let r = text(&out);
        assert!(r.starts_with(&format!("GET /{n} HTTP/1.1")), "{r}");
        assert!(r.contains(&format!("X-Counter: {n}\r\n")), "{r}");
    }
}

#[test]
fn setup_reaches_each_threads_globals_and_done_reads_them_back() {
    let s = load(
        r#"local counter = 1
           local threads = {}
           function setup(thread)
             thread:set("id", counter)
             thread:set("tags", { name = "t" .. counter, n = counter })
             table.insert(threads, thread)
             counter = counter + 1
           end
           function init(args)
             requests = 0
             responses = 0
             label = tags.name
           end
           function request()
             requests = requests + 1
             return wrk.request()
           end
           function response(status, headers, body)
             responses = responses + 1
             last = status .. " " .. (headers["Server"] or "-") .. " " .. body
           end
           function done(summary, latency, requests)
             local parts = {}
             for _, t in ipairs(threads) do
               parts[#parts + 1] = string.format("%d:%s:%d:%d:%s", t:get("id"), t:get("label"),
                 t:get("requests"), t:get("responses"), tostring(t:get("last")))
             end
             result = table.concat(parts, ",") .. " " .. summary.requests .. " " ..
               summary.errors.status .. " " .. latency.max .. " " .. latency:percentile(50) ..
               " " .. #latency .. " " .. select(1, latency(1)) .. "x" .. select(2, latency(1))
           end"#,
        2,
    )
    .unwrap();
    let mut t0 = s.thread(0);
    let mut t1 = s.thread(1);
    let mut out = Vec::new();
    t0.request(0, &mut out);
    t0.request(0, &mut out);
    t1.request(0, &mut out);
    let headers = stampede_engine::Fields::from_pairs([("Server", "x")]);
    assert_eq!(t0.response(&reply(200, &headers, b"PONG")), Flow::Go);
    assert_eq!(t1.response(&reply(404, &Default::default(), b"")), Flow::Go);
    let mut h = Histogram::<u64>::new(3).unwrap();
    h.record_n(100, 3).unwrap();
    h.record(900).unwrap();
    let summary = Summary {
        requests: 4,
        status: 1,
        ..Summary::default()
    };
    s.done(&summary, &h, &[10.0, 12.0]).unwrap();
    let result: String = s.main.globals().get("result").unwrap();
    // Thread 1 made 3 requests (one was the plan's count), thread 2 one.
    assert_eq!(
        result,
        "1:t1:3:1:200 x PONG,2:t2:1:1:404 -  4 1 900 100 2 100x3"
    );
}

#[test]
fn a_thread_stops_itself_from_response() {
    let s = load(
        r#"local counter = 1
           function response()
             if counter == 3 then wrk.thread:stop() end
             counter = counter + 1
           end"#,
        1,
    )
    .unwrap();
    let mut t = s.thread(0);
    assert_eq!(t.response(&reply(200, &Default::default(), b"")), Flow::Go);
    assert_eq!(t.response(&reply(200, &Default::default(), b"")), Flow::Go);
    assert_eq!(
        t.response(&reply(200, &Default::default(), b"")),
        Flow::StopThread
    );
}

#[test]
fn stop_outside_the_running_phase_is_an_error() {
    let e = load("function setup(thread) thread:stop() end", 1).unwrap_err();
    assert!(e.contains("while the thread is running"), "{e}");
    assert!(e.contains("in setup"), "{e}");
}

#[test]
fn delay_is_in_milliseconds() {
    let s = load("function delay() return 25 end", 1).unwrap();
    assert!(s.plan().delays);
    let mut t = s.thread(0);
    assert_eq!(t.delay(0), (Duration::from_millis(25), Flow::Go));
}

#[test]
fn errors_name_the_file_and_line_and_stop_the_run() {
    // A syntax error: the script does not load.
    let e = load("x = = 1", 1).unwrap_err();
    assert!(e.starts_with("t.lua:1:"), "{e}");
    // A runtime error in init.
    let e = load("\nfunction init() error('no args') end", 1).unwrap_err();
    assert!(
        e.contains("t.lua:2: no args") && e.contains("in init"),
        "{e}"
    );
    // A runtime error inside request: the run stops, the error is kept.
    let s = load(
        "n = 0\nfunction request()\n  n = n + 1\n  if n > 1 then local t = nil; return t.x end\n  return wrk.format()\nend",
        1,
    )
    .unwrap();
    let mut t = s.thread(0);
    assert_eq!(t.request(0, &mut Vec::new()), Flow::StopRun);
    let errs = s.errors();
    assert_eq!(errs.len(), 1);
    assert!(errs[0].starts_with("t.lua:4:"), "{errs:?}");
    assert!(errs[0].ends_with("(in request)"), "{errs:?}");
    // response raising.
    let s = load("function response(s) error('bad status ' .. s) end", 1).unwrap();
    let mut t = s.thread(0);
    assert_eq!(
        t.response(&reply(503, &Default::default(), b"")),
        Flow::StopRun
    );
    assert!(
        s.errors()[0].contains("t.lua:1: bad status 503"),
        "{:?}",
        s.errors()
    );
    // request returning something other than a string.
    let e = load("function request() return 42 end", 1).unwrap_err();
    assert!(e.contains("returned number"), "{e}");
    assert!(matches!(
        load_typed("function request() return 42 end", 1),
        Err(ScriptError::NotString {
            found: "number",
            ..
        })
    ));
    // An invalid request is refused before any load.
    let e = load("function request() return 'hello' end", 1).unwrap_err();
    assert!(e.contains("not valid HTTP/1.1"), "{e}");
    assert!(matches!(
        load_typed("function request() return 'hello' end", 1),
        Err(ScriptError::Request { .. })
    ));
    // Where the error arose is a field of its own.
    assert!(matches!(
        load_typed("\nfunction init() error('no args') end", 1),
        Err(ScriptError::Lua {
            stage: Some("init"),
            ..
        })
    ));
}

#[test]
fn lookup_and_connect_and_thread_addresses() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let src = format!(
        r#"local addrs = nil
           function setup(thread)
             if not addrs then
               addrs = wrk.lookup("127.0.0.1", "{port}")
               for i = #addrs, 1, -1 do
                 if not wrk.connect(addrs[i]) then table.remove(addrs, i) end
               end
             end
             thread.addr = addrs[1]
           end
           function init(args) seen = tostring(wrk.thread.addr) end"#
    );
    let s = load(&src, 2).unwrap();
    let t = s.thread(1);
    assert_eq!(
        t.address(),
        Some(format!("127.0.0.1:{port}").parse().unwrap())
    );
    let seen: String = s.states[1].globals().get("seen").unwrap();
    assert_eq!(seen, format!("127.0.0.1:{port}"));
    // A value that is not an address cannot be set.
    let e = load("function setup(t) t.addr = 'x' end", 1).unwrap_err();
    assert!(e.contains("thread.addr"), "{e}");
    // Functions cannot cross between states.
    let e = load("function setup(t) t:set('f', print) end", 1).unwrap_err();
    assert!(e.contains("cannot transfer 'function'"), "{e}");
}

#[test]
fn header_order_alone_does_not_make_a_request_differ() {
    let a = b"GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\n\r\n";
    let b = b"GET / HTTP/1.1\r\nB: 2\r\nA: 1\r\n\r\n";
    assert!(same_request(a, b));
    assert!(!same_request(a, b"GET / HTTP/1.1\r\nB: 2\r\nA: 3\r\n\r\n"));
    // Many headers, many threads: no thread copies its own request.
    let s = load(
        "for i = 1, 40 do wrk.headers['X-H' .. i] = tostring(i) end",
        8,
    )
    .unwrap();
    for i in 0..8 {
        assert!(!s.thread(i).builds_requests(), "thread {i}");
    }
}

#[test]
fn threads_whose_init_differs_send_their_own_fixed_request() {
    let s = load(
        r#"local n = 0
           function setup(thread) n = n + 1; thread:set("id", n) end
           function init() wrk.headers["X-Thread"] = id end"#,
        2,
    )
    .unwrap();
    assert!(!s.plan().dynamic);
    assert!(text(&s.plan().request.bytes).contains("X-Thread: 1\r\n"));
    assert!(!s.thread(0).builds_requests());
    let mut t = s.thread(1);
    assert!(t.builds_requests());
    let mut out = Vec::new();
    t.request(0, &mut out);
    assert!(text(&out).contains("X-Thread: 2\r\n"));
}
