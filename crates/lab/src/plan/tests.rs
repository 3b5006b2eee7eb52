use super::*;

const GOOD: &str = r#"
name = "two servers"

[runs]
warmup = 1
repetitions = 2
pause = "100ms"

[client]
cpus = [0]

[[target]]
name = "a"
start = "{stampede} serve --listen 127.0.0.1:{port}"
ready = "/pong"
cpus = [1]

[[target]]
name = "b"
url = "http://127.0.0.1:9"

[[scenario]]
name = "backend"
path = "/backend"
connections = 10
requests = 1000
verify = { body_length = 31, content_type = "text/plain" }

[[scenario]]
name = "users"
path = "/pong"
inject = ["rampUsers(10) over (1 seconds)"]
calls = 2

[[scenario]]
name = "bursts"
sessions = { count = 10, rate = 100 }
calls = 10
burst = 5
"#;

#[test]
fn parses_a_full_plan() {
    let p = Plan::parse(GOOD, "p.toml").unwrap();
    assert_eq!(p.name, "two servers");
    assert_eq!(p.runs.repetitions, 2);
    assert_eq!(p.runs.pause, Duration::from_millis(100));
    assert_eq!(p.targets.len(), 2);
    assert_eq!(p.targets[0].cpus, vec![1]);
    assert_eq!(p.targets[0].line, 12);
    assert!(matches!(p.targets[1].kind, TargetKind::External { .. }));
    assert_eq!(p.scenarios[0].verify.body_length, Some(31));
    assert!(matches!(p.scenarios[1].shape, Shape::Users(_)));
    assert_eq!(p.scenarios[1].timeout, Duration::from_secs(60));
    assert!(matches!(
        p.scenarios[2].shape,
        Shape::Sessions {
            count: 10,
            period: Some(_)
        }
    ));
}

fn err(src: &str) -> PlanError {
    Plan::parse(src, "bad.toml").unwrap_err()
}

#[test]
fn zero_counts_duplicates_wrong_types_and_line_breaks_are_refused_with_their_field() {
    let base =
        "[[target]]\nname = \"a\"\nurl = \"http://127.0.0.1:1\"\n[[scenario]]\nname = \"s\"\n";
    let cases: [(&str, usize, &str, &str); 19] = [
        ("requests = 0\n", 6, "scenario.requests", "at least 1"),
        (
            "requests = 1\npipeline = 4294967296\n",
            7,
            "scenario.pipeline",
            "at most 65536",
        ),
        (
            "duration = \"1s\"\nrate = 1e10\n",
            4,
            "scenario.rate",
            "at most 1e7",
        ),
        (
            "requests = 1\nconnections = 0\n",
            7,
            "scenario.connections",
            "at least 1",
        ),
        (
            "inject = [\"atOnceUsers(1)\"]\ncalls = 0\n",
            7,
            "scenario.calls",
            "at least 1",
        ),
        (
            "inject = [\"atOnceUsers(1)\"]\nburst = 0\n",
            7,
            "scenario.burst",
            "at least 1",
        ),
        (
            "requests = 1\ntimeout = \"0s\"\n",
            7,
            "scenario.timeout",
            "longer than 0",
        ),
        (
            "requests = 1\n[client]\nthreads = 0\n",
            8,
            "client.threads",
            "at least 1",
        ),
        (
            "requests = 1\n[[scenario]]\nname = \"s\"\nrequests = 1\n",
            8,
            "scenario.name",
            "used twice",
        ),
        (
            "requests = \"many\"\n",
            6,
            "scenario.requests",
            "invalid type",
        ),
        (
            "requests = 1\nkeepalive = 3\n",
            7,
            "scenario.keepalive",
            "invalid type",
        ),
        (
            "sessions = { count = \"x\" }\n",
            6,
            "scenario.sessions.count",
            "invalid type",
        ),
        (
            "requests = 1\n[runs]\nwarmup = -1\n",
            8,
            "runs.warmup",
            "invalid value",
        ),
        (
            "requests = 1\nheaders = [\"X-A: 1\\r\\nX-Evil: 1\"]\n",
            7,
            "scenario.headers",
            "line break",
        ),
        (
            "requests = 1\nheaders = [\"X-A: 1\\u0000\"]\n",
            7,
            "scenario.headers",
            "NUL",
        ),
        (
            "requests = 1\nmethod = \"GET / HTTP/1.1\\r\\nX: y\"\n",
            7,
            "scenario.method",
            "line break",
        ),
        (
            "requests = 1\npath = \"/a HTTP/1.1\\r\\n\\r\\nGET /b\"\n",
            7,
            "scenario.path",
            "line break",
        ),
        (
            "requests = 1\npath = \"/a b\"\n",
            7,
            "scenario.path",
            "whitespace",
        ),
        (
            "inject = [\"atOnceUsers(1)\"]\nsteps = [{ path = \"/a\", method = \"G T\" }]\n",
            7,
            "scenario.steps.method",
            "not allowed",
        ),
    ];
    for (tail, line, field, msg) in cases {
        let e = err(&format!("{base}{tail}"));
        assert_eq!((e.line, e.field.as_str()), (line, field), "{tail:?}: {e}");
        assert!(e.message.contains(msg), "{tail:?}: {e}");
    }
    // The flags' spellings of durations hold in plans too.
    let p = Plan::parse(&format!("{base}duration = \"10sec\"\n"), "ok.toml").unwrap();
    assert_eq!(p.scenarios[0].duration, Some(Duration::from_secs(10)));
    let e = err("[[target]]\nname = \"a\"\nurl = \"http://127.0.0.1:1\"\nready = \"/\\r\\nX: 1\"\n[[scenario]]\nname = \"s\"\nrequests = 1\n");
    assert_eq!((e.line, e.field.as_str()), (4, "target.ready"), "{e}");
}

#[test]
fn errors_name_file_line_and_field() {
    let base = "[[target]]\nname = \"a\"\nurl = \"http://127.0.0.1:1\"\n";
    let cases: [(String, usize, &str, &str); 8] = [
        (
            format!("{base}[[scenario]]\nname = \"s\"\nrequests = 5\nconections = 3\n"),
            7,
            "scenario.conections",
            "unknown field",
        ),
        (
            format!("{base}[[scenario]]\nname = \"s\"\nduration = \"10 parsecs\"\n"),
            6,
            "scenario.duration",
            "unknown unit",
        ),
        (
            format!("{base}[[scenario]]\nname = \"s\"\n"),
            4,
            "scenario.requests",
            "needs requests or duration",
        ),
        (
            format!(
                "{base}[[scenario]]\nname = \"s\"\nrate = 10.0\ninject = [\"atOnceUsers(1)\"]\n"
            ),
            4,
            "scenario.rate",
            "choose one",
        ),
        (
            format!("{base}[[scenario]]\nname = \"s\"\ninject = [\"rampUsers(1)\"]\n"),
            6,
            "scenario.inject",
            "needs .during",
        ),
        (
            format!("{base}[[scenario]]\nname = \"s\"\nrequests = 1\npath = \"x\"\n"),
            7,
            "scenario.path",
            "must start with /",
        ),
        (
            format!("{base}[[scenario]]\nname = \"s\"\nrequests = 1\nheaders = [\"bad\"]\n"),
            7,
            "scenario.headers",
            "Name: value",
        ),
        (
            "[[target]]\nname = \"a\"\n[[scenario]]\nname = \"s\"\nrequests = 1\n".to_string(),
            1,
            "target.start",
            "exactly one of",
        ),
    ];
    for (src, line, field, msg) in cases {
        let e = err(&src);
        assert_eq!((e.line, e.field.as_str()), (line, field), "{e}");
        assert!(e.message.contains(msg), "{e}");
        assert!(
            e.to_string().starts_with(&format!("bad.toml:{line}: ")),
            "{e}"
        );
    }
    let steps = [
        (format!("{base}[[scenario]]\nname = \"s\"\nrequests = 1\nsteps = [{{ path = \"/a\" }}]\n"), 7, "scenario.steps", "needs inject or sessions"),
        (format!("{base}[[scenario]]\nname = \"s\"\ninject = [\"atOnceUsers(1)\"]\npath = \"/a\"\nsteps = [{{ path = \"/b\" }}]\n"), 8, "scenario.steps", "not both"),
        (format!("{base}[[scenario]]\nname = \"s\"\ninject = [\"atOnceUsers(1)\"]\nsteps = [\n {{ path = \"/b\" }},\n {{ path = \"/c\", pause = \"1 jiffy\" }},\n]\n"), 9, "scenario.steps.pause", "unknown unit"),
        (format!("{base}[[scenario]]\nname = \"s\"\ninject = [\"atOnceUsers(1)\"]\nsteps = [{{ path = \"b\" }}]\n"), 7, "scenario.steps.path", "must start with /"),
    ];
    for (src, line, field, msg) in steps {
        let e = err(&src);
        assert_eq!((e.line, e.field.as_str()), (line, field), "{e}");
        assert!(e.message.contains(msg), "{e}");
    }
    let ok = format!("{base}[[scenario]]\nname = \"s\"\ninject = [\"atOnceUsers(1)\"]\nsteps = [{{ path = \"/b\", pause = \"1s\", method = \"post\", body = \"x\", verify = {{ status = 201 }} }}, {{ path = \"/c\" }}]\n");
    let p = Plan::parse(&ok, "ok.toml").unwrap();
    let st = &p.scenarios[0].steps;
    assert_eq!(
        (st.len(), st[0].method.as_str(), st[0].pause),
        (2, "POST", Duration::from_secs(1))
    );
    assert_eq!(st[0].verify.as_ref().unwrap().status, 201);
    assert_eq!(p.scenarios[0].path, "/b");
    let scen = "[[scenario]]\nname = \"s\"\nrequests = 1\n";
    let tls = [
        (
            "url = \"http://127.0.0.1:1\"\ninsecure = true\n",
            4,
            "target.insecure",
            "add tls = true",
        ),
        (
            "url = \"http://127.0.0.1:1\"\ncacert = \"ca.pem\"\n",
            4,
            "target.cacert",
            "add tls = true",
        ),
        (
            "url = \"http://127.0.0.1:1\"\ntls = true\n",
            3,
            "target.url",
            "needs an https:// url",
        ),
        (
            "url = \"https://127.0.0.1:1\"\ninsecure = true\ncacert = \"ca.pem\"\n",
            4,
            "target.insecure",
            "exclude each other",
        ),
        (
            "url = \"ftp://127.0.0.1:1\"\n",
            3,
            "target.url",
            "http:// or https://",
        ),
    ];
    for (t, line, field, msg) in tls {
        let e = err(&format!("[[target]]\nname = \"a\"\n{t}{scen}"));
        assert_eq!((e.line, e.field.as_str()), (line, field), "{e}");
        assert!(e.message.contains(msg), "{e}");
    }
    let p = Plan::parse(
        &format!(
            "[[target]]\nname = \"a\"\nurl = \"https://127.0.0.1:1\"\ncacert = \"ca.pem\"\n{scen}"
        ),
        "ok.toml",
    )
    .unwrap();
    assert_eq!(
        p.targets[0].tls,
        Some(TargetTls {
            insecure: false,
            cacert: Some("ca.pem".into())
        })
    );
    let p = Plan::parse(
        &format!("[[target]]\nname = \"a\"\nstart = \"x {{port}}\"\n{scen}"),
        "ok.toml",
    )
    .unwrap();
    assert_eq!(p.targets[0].tls, None);
    let e = err("[[target]\n");
    assert_eq!(e.line, 1);
    let e = err(base);
    assert_eq!(e.field, "scenario");
}

#[test]
fn hosts_for_the_load_and_for_targets_are_checked() {
    let err = |s: &str| Plan::parse(s, "h.toml").unwrap_err();
    let scen = "[[scenario]]\nname = \"s\"\nrequests = 1\n";
    let cases = [
        (
            "[[target]]\nname = \"a\"\nstart = \"x\"\nhost = \"srv\"\n",
            4,
            "target.host",
            "needs port = N",
        ),
        (
            "[[target]]\nname = \"a\"\nurl = \"http://10.0.0.1:80\"\nhost = \"srv\"\n",
            4,
            "target.host",
            "a target given by url is reached at its url",
        ),
        (
            "[client]\ncpus = [0]\nhosts = [\"c1\"]\n[[target]]\nname = \"a\"\nurl = \"http://10.0.0.1:80\"\n",
            2,
            "client.cpus",
            "the load comes from the hosts",
        ),
        (
            "[client]\nhosts = [\"c1\", \"\"]\n[[target]]\nname = \"a\"\nurl = \"http://10.0.0.1:80\"\n",
            2,
            "client.hosts",
            "a host is empty",
        ),
        (
            "[client]\nhosts = [\"c1\"]\n[[target]]\nname = \"a\"\nstart = \"x {port}\"\n",
            2,
            "client.hosts",
            "give address = ",
        ),
        (
            "[client]\nhosts = [\"c1\"]\n[[target]]\nname = \"a\"\nurl = \"http://localhost:80\"\n",
            2,
            "client.hosts",
            "loopback",
        ),
        (
            "[ssh]\nport = 22\n[[target]]\nname = \"a\"\nurl = \"http://10.0.0.1:80\"\n",
            2,
            "ssh.port",
            "unknown field",
        ),
        (
            "[client]\nhosts = [\"c1\", \"-oProxyCommand=x\"]\n[[target]]\nname = \"a\"\nurl = \"http://10.0.0.1:80\"\n",
            2,
            "client.hosts",
            "begins with '-'",
        ),
        (
            "[[target]]\nname = \"a\"\nstart = \"x\"\nport = 80\nhost = \"-F/tmp/c\"\n",
            5,
            "target.host",
            "begins with '-'",
        ),
        (
            "[[target]]\nname = \"a\"\nstart = \"x\"\nenv = { \"A=1; touch /tmp/x; B\" = \"1\" }\n",
            2,
            "target.env",
            "is not an environment variable's name",
        ),
    ];
    for (src, line, field, msg) in cases {
        let e = err(&format!("{src}{scen}"));
        assert_eq!((e.line, e.field.as_str()), (line, field), "{src}: {e}");
        assert!(e.message.contains(msg), "{src}: {e}");
    }
    let p = Plan::parse(
        &format!(
            "[client]\nhosts = [\"c1\", \"u@c2\"]\nthreads = 2\n[ssh]\noptions = [\"Port=2222\"]\ncopy = true\n\
             [[target]]\nname = \"a\"\nstart = \"x {{port}}\"\nhost = \"u@srv\"\nport = 8080\n\
             [[target]]\nname = \"b\"\nstart = \"y {{port}}\"\naddress = \"10.0.0.5\"\n{scen}"
        ),
        "ok.toml",
    )
    .unwrap();
    assert_eq!(p.remote.hosts, ["c1", "u@c2"]);
    assert_eq!(p.remote.options, ["Port=2222"]);
    assert!(p.remote.copy);
    assert!(
        matches!(&p.targets[0].kind, TargetKind::Command { host: Some(h), .. } if h == "u@srv")
    );
    assert_eq!(p.targets[1].address.as_deref(), Some("10.0.0.5"));
}

#[test]
fn auto_repetitions_parse_with_bounds_and_their_errors_name_the_field() {
    let body = "[[target]]\nname = \"a\"\nurl = \"http://127.0.0.1:1\"\n[[scenario]]\nname = \"s\"\nrequests = 5\n";
    let p = Plan::parse(
        &format!("[runs]\nrepetitions = \"auto\"\nmin_repetitions = 4\nmax_repetitions = 12\nprecision = \"1.5%\"\n{body}"),
        "p.toml",
    )
    .unwrap();
    assert_eq!(
        p.runs.auto,
        Some(Auto {
            min: 4,
            max: 12,
            precision: 0.015
        })
    );
    assert_eq!((p.runs.repetitions, p.runs.most()), (4, 12));
    let p = Plan::parse(&format!("[runs]\nrepetitions = \"auto\"\n{body}"), "p.toml").unwrap();
    assert_eq!(
        p.runs.auto,
        Some(Auto {
            min: 3,
            max: 20,
            precision: 0.02
        })
    );
    for (runs, line, field, says) in [
        (
            "repetitions = \"often\"",
            2,
            "runs.repetitions",
            "neither a count nor \"auto\"",
        ),
        (
            "repetitions = 3\nmax_repetitions = 9",
            3,
            "runs.max_repetitions",
            "only with repetitions = \"auto\"",
        ),
        (
            "repetitions = \"auto\"\nmin_repetitions = 1",
            3,
            "runs.min_repetitions",
            "at least 2",
        ),
        (
            "repetitions = \"auto\"\nmin_repetitions = 5\nmax_repetitions = 4",
            4,
            "runs.max_repetitions",
            "from min_repetitions (5)",
        ),
        (
            "repetitions = \"auto\"\nprecision = \"lots\"",
            3,
            "runs.precision",
            "not a percentage",
        ),
    ] {
        let e = Plan::parse(&format!("[runs]\n{runs}\n{body}"), "p.toml").unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (line, field), "{e}");
        assert!(e.message.contains(says), "{e}");
    }
}

#[test]
fn a_search_parses_with_defaults_and_its_errors_name_the_field() {
    let head = "[[target]]\nname = \"a\"\nurl = \"http://127.0.0.1:1\"\n[[scenario]]\nname = \"s\"\nconnections = 32\npoisson = true\n";
    let p = Plan::parse(
        &format!("{head}search = {{ conditions = [\"p99 < 10ms\", \"errors < 0.1%\"], max_rate = 20000, start_rate = 500, step = \"2s\", warmup = \"0s\", precision = \"2%\", max_steps = 9 }}\n"),
        "p.toml",
    )
    .unwrap();
    let s = p.scenarios[0].search.as_ref().unwrap();
    assert_eq!(s.conditions.len(), 2);
    assert_eq!(s.conditions[0].text, "p99 < 10ms");
    assert_eq!((s.max_rate, s.start_rate), (20_000.0, Some(500.0)));
    assert_eq!((s.step, s.warmup), (Duration::from_secs(2), Duration::ZERO));
    assert_eq!((s.precision, s.max_steps, s.gaps), (0.02, 9, Gaps::Poisson));
    let spec = s.spec();
    assert_eq!(
        (spec.start_rate, spec.precision, spec.max_steps),
        (500.0, 0.02, 9)
    );
    // Defaults: the engine's start (max / 32), 5 s steps after 1 s, 5 %, 16 steps.
    let p = Plan::parse(&format!("{head}search = {{ max_rate = 3200 }}\n"), "p.toml").unwrap();
    let s = p.scenarios[0].search.as_ref().unwrap();
    assert!(s.conditions.is_empty() && s.start_rate.is_none());
    assert_eq!(
        (s.step, s.warmup),
        (Duration::from_secs(5), Duration::from_secs(1))
    );
    assert_eq!((s.precision, s.max_steps), (0.05, 16));
    assert_eq!(s.spec().start_rate, 100.0);
    let p = Plan::parse(
        &format!("{head}burstiness = 0.5\nsearch = {{ max_rate = 3200 }}\n"),
        "p.toml",
    )
    .unwrap();
    assert_eq!(
        p.scenarios[0].search.as_ref().unwrap().gaps,
        Gaps::Gamma(0.5)
    );
    for (extra, search, field, says) in [
        (
            "",
            "{ conditions = [\"p99 < 10ms\"] }",
            "scenario.search.max_rate",
            "is required",
        ),
        (
            "",
            "{ max_rate = 0 }",
            "scenario.search.max_rate",
            "from 1 to",
        ),
        (
            "",
            "{ max_rate = 100, start_rate = 200 }",
            "scenario.search.start_rate",
            "at most max_rate (100)",
        ),
        (
            "",
            "{ max_rate = 100, conditions = [\"p99 <\"] }",
            "scenario.search.conditions",
            "",
        ),
        (
            "",
            "{ max_rate = 100, precision = \"5\" }",
            "scenario.search.precision",
            "not a percentage",
        ),
        (
            "",
            "{ max_rate = 100, step = \"10ms\" }",
            "scenario.search.step",
            "at least 100ms",
        ),
        (
            "",
            "{ max_rate = 100, step = \"soon\" }",
            "scenario.search.step",
            "",
        ),
        (
            "",
            "{ max_rate = 100, max_steps = 0 }",
            "scenario.search.max_steps",
            "at least 1",
        ),
        (
            "",
            "{ max_rate = 100, ramp = 2 }",
            "scenario.search.ramp",
            "unknown field",
        ),
        (
            "rate = 100.0\n",
            "{ max_rate = 100 }",
            "scenario.rate",
            "drop rate",
        ),
        (
            "duration = \"5s\"\n",
            "{ max_rate = 100 }",
            "scenario.duration",
            "drop duration",
        ),
    ] {
        let src = format!("{head}{extra}search = {search}\n");
        let e = Plan::parse(&src, "p.toml").unwrap_err();
        let line = src.lines().count();
        assert_eq!((e.line, e.field.as_str()), (line, field), "{e}");
        assert!(e.message.contains(says), "{e}");
    }
    // A burstiness is a number above 0, and shapes a rate: its own line is named.
    for (tail, says) in [
        (
            "burstiness = 0\nsearch = { max_rate = 100 }\n",
            "not a burstiness factor",
        ),
        ("burstiness = 2\n", "add rate or search"),
    ] {
        let e = Plan::parse(&format!("{head}{tail}"), "p.toml").unwrap_err();
        assert_eq!(
            (e.line, e.field.as_str()),
            (8, "scenario.burstiness"),
            "{e}"
        );
        assert!(e.message.contains(says), "{e}");
    }
}

#[test]
fn stream_and_openai_scenarios_parse_and_their_errors_name_the_field() {
    let head = "[[target]]\nname = \"a\"\nurl = \"http://127.0.0.1:1\"\n[[scenario]]\nname = \"s\"\nrequests = 8\n";
    let p = Plan::parse(
        &format!("{head}openai = {{ api = \"chat\", model = \"m\", input_tokens = 5, output_tokens = 3, goodput = [\"ttft:500\"] }}\nevent_timeout = \"2s\"\nassert = [\"ttft_p99 < 1s\", \"tokens_per_s > 1\"]\n"),
        "p.toml",
    )
    .unwrap();
    let s = &p.scenarios[0];
    assert_eq!(
        (s.method.as_str(), s.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    let st = s.stream.as_ref().unwrap();
    assert_eq!(st.mode, stampede_engine::StreamMode::Openai);
    assert_eq!(st.event_timeout, Some(Duration::from_secs(2)));
    let o = st.openai.as_ref().unwrap();
    assert_eq!(o.bodies.len(), 8);
    assert_eq!(o.slo.unwrap().ttft_us, Some(500_000));
    let v: serde_json::Value = serde_json::from_slice(s.body.as_ref().unwrap()).unwrap();
    assert_eq!(
        (v["model"].as_str(), v["stream"].as_bool()),
        (Some("m"), Some(true))
    );
    assert_eq!(v["max_completion_tokens"], 3);
    assert_eq!(
        v["messages"][0]["content"]
            .as_str()
            .unwrap()
            .split(' ')
            .count(),
        5
    );
    let p = Plan::parse(
        &format!("{head}stream = \"sse\"\npath = \"/sse/3\"\n"),
        "p.toml",
    )
    .unwrap();
    let st = p.scenarios[0].stream.as_ref().unwrap();
    assert!(st.mode == stampede_engine::StreamMode::Sse && st.openai.is_none());
    for (tail, field, says) in [
        (
            "stream = \"bytes\"\n",
            "scenario.stream",
            "not chunks or sse",
        ),
        (
            "event_timeout = \"1s\"\n",
            "scenario.event_timeout",
            "add stream or openai",
        ),
        (
            "assert = [\"ttft_p99 < 1s\"]\n",
            "scenario.assert",
            "timed with stream or openai",
        ),
        (
            "stream = \"sse\"\nassert = [\"tpot_p99 < 1s\"]\n",
            "scenario.assert",
            "openai scenarios",
        ),
        (
            "openai = { api = \"embeddings\" }\n",
            "scenario.openai.api",
            "chat or completions",
        ),
        (
            "openai = { api = \"chat\", output_tokens = 0 }\n",
            "scenario.openai.output_tokens",
            "1 to",
        ),
        (
            "openai = { api = \"chat\", goodput = [\"ttft\"] }\n",
            "scenario.openai.goodput",
            "KEY:MS",
        ),
        (
            "openai = { api = \"chat\", prompts = \"/nonexistent/p.jsonl\" }\n",
            "scenario.openai.prompts",
            "/nonexistent/p.jsonl",
        ),
        (
            "body = \"x\"\nopenai = { api = \"chat\" }\n",
            "scenario.body",
            "drop body",
        ),
        (
            "openai = { api = \"chat\", tokenizer = \"/nonexistent/t.json\" }\n",
            "scenario.openai.tokenizer",
            "is neither a tokenizer.json file",
        ),
        (
            "openai = { api = \"chat\", temperature = 1 }\n",
            "scenario.openai.temperature",
            "unknown field",
        ),
    ] {
        let e = Plan::parse(&format!("{head}{tail}"), "p.toml").unwrap_err();
        assert_eq!(e.field, field, "{tail}: {e}");
        assert!(e.message.contains(says), "{tail}: {e}");
        assert!(e.line >= 6, "{tail}: {e}");
    }
    // The line named is the wrong level's own.
    let e = Plan::parse(
        &format!("{head}openai = {{ api = \"chat\", goodput = [\n\"ttft:5\",\n\"tpot\"] }}\n"),
        "p.toml",
    )
    .unwrap_err();
    assert_eq!(
        (e.line, e.field.as_str()),
        (9, "scenario.openai.goodput"),
        "{e}"
    );
    assert!(e.message.starts_with("tpot:"), "{e}");
}
