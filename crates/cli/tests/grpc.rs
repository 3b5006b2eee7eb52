//! gRPC against an independent implementation: grpcio's server (gRPC's C core), built
//! from the repository's .proto files at run time, loaded by `stampede load --call`:
//! unary calls counted by status, a server stream timed per message, a client stream,
//! and the schema's mistakes named before any load.

use std::io::BufRead;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::common::schema_errors;

const BIN: &str = env!("CARGO_BIN_EXE_stampede");
const PEER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/peers/grpc_peer.py");
const PROTO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../proto");

/// The grpcio server, stopped when dropped.
struct Peer {
    child: Child,
    port: u16,
}

impl Peer {
    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// grpcio's server on 127.0.0.1, once it says it is ready; `None` (said) when the
/// peer's Python is not set.
fn grpcio_server() -> Option<Peer> {
    let python = crate::common::python_with(
        "STAMPEDE_GRPC_PYTHON",
        &["grpc", "grpc_tools"],
        "grpcio grpcio-tools",
    )?;
    let mut child = Command::new(python)
        .args([PEER, "serve", PROTO])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the grpcio server starts");
    let out = child.stdout.take().unwrap();
    let mut line = String::new();
    std::io::BufReader::new(out).read_line(&mut line).unwrap();
    let port = line
        .trim()
        .strip_prefix("ready ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("the grpcio server said {line:?}"));
    Some(Peer { child, port })
}

/// `stampede load` at `url` with `args`; its JSON result, checked against the schema.
fn load(url: &str, args: &[&str]) -> Value {
    let out = Command::new(BIN)
        .arg("load")
        .arg(url)
        .args(args)
        .args(["-q", "--json", "-"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let errors = schema_errors(&v);
    assert!(errors.is_empty(), "{errors:#?}");
    v
}

fn proto(name: &str) -> String {
    format!("{PROTO}/{name}")
}

#[test]
fn unary_calls_to_grpcio_are_counted_by_status() {
    let Some(peer) = grpcio_server() else { return };
    let hello = proto("helloworld.proto");
    let call = ["--proto", &hello, "--call", "helloworld.Greeter/SayHello"];
    let v = load(
        &peer.url(),
        &[
            &call[..],
            &[
                "--data",
                r#"{"name": "load"}"#,
                "-n",
                "400",
                "-c",
                "2",
                "--streams",
                "4",
            ],
        ]
        .concat(),
    );
    assert_eq!(v["requests"]["completed"], 400, "{}", v["requests"]);
    assert_eq!(v["grpc"]["OK"], 400, "{}", v["grpc"]);
    assert_eq!(v["stream"]["mode"], "grpc");
    assert_eq!(v["stream"]["events"], 400);
    assert_eq!(v["settings"]["http2"], true);
    assert!(
        v["settings"]["url"]
            .as_str()
            .unwrap()
            .ends_with("/helloworld.Greeter/SayHello"),
        "{}",
        v["settings"]["url"]
    );
    // Messages in turn: every other call is answered UNAVAILABLE.
    let data = r#"[{"name": "a"}, {"name": "unavailable"}]"#;
    let v = load(
        &peer.url(),
        &[&call[..], &["--data", data, "-n", "200", "-c", "2"]].concat(),
    );
    // Each connection takes them in turn: half each, give or take one a connection.
    let (ok, down) = (v["grpc"]["OK"].as_u64(), v["grpc"]["UNAVAILABLE"].as_u64());
    let (ok, down) = (ok.unwrap_or(0), down.unwrap_or(0));
    assert!(ok + down == 200 && ok.abs_diff(100) <= 2, "{}", v["grpc"]);
    assert_eq!(v["requests"]["failed"], 0);
    // The server's grpc-message, kept with its status and counted.
    let m = &v["grpc_messages"];
    assert_eq!(
        m,
        &serde_json::json!([{"status": "UNAVAILABLE", "message": "down for the test", "count": down}])
    );
}

#[test]
fn a_server_stream_is_timed_per_message_and_a_client_stream_sends_them_all() {
    let Some(peer) = grpcio_server() else { return };
    let echo = proto("echo.proto");
    let v = load(
        &peer.url(),
        &[
            "--proto",
            &echo,
            "--call",
            "stampede.v1.Echo/ServerStream",
            "--data",
            r#"{"count": 4, "interval_ms": 20, "size": 64}"#,
            "-n",
            "20",
            "-c",
            "4",
        ],
    );
    assert_eq!(v["grpc"]["OK"], 20, "{}", v["grpc"]);
    let s = &v["stream"];
    assert_eq!(s["events"], 80, "{s}");
    let per = &s["events_per_response"];
    assert_eq!(
        (per["min_us"].as_u64(), per["max_us"].as_u64()),
        (Some(4), Some(4)),
        "{s}"
    );
    // Three gaps of about 20 ms per stream, timed as each message came.
    let p50 = |l: &Value| l["percentiles"][0]["us"].as_u64().unwrap();
    assert_eq!(s["gap"]["count"], 60, "{s}");
    assert!((18_000..40_000).contains(&p50(&s["gap"])), "{s}");
    assert!(p50(&s["first_event"]) < 18_000, "{s}");
    let v = load(
        &peer.url(),
        &[
            "--proto",
            &echo,
            "--call",
            "stampede.v1.Echo/ClientStream",
            "--data",
            "[{}, {}, {}]",
            "-n",
            "30",
            "-c",
            "3",
        ],
    );
    assert_eq!(v["grpc"]["OK"], 30, "{}", v["grpc"]);
}

#[test]
fn schema_mistakes_are_named_before_any_load() {
    let tmp = crate::common::recorder::tempdir::Dir::new();
    let bad = tmp.0.join("bad.proto");
    std::fs::write(
        &bad,
        "syntax = \"proto3\";\nmessage A {\n  string x = ;\n}\n",
    )
    .unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(BIN)
            .args(["load", "http://127.0.0.1:9", "-n", "1"])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let e = run(&["--proto", bad.to_str().unwrap(), "--call", "A/B"]);
    assert!(e.contains("bad.proto:3:"), "{e}");
    let hello = proto("helloworld.proto");
    let e = run(&["--proto", &hello, "--call", "helloworld.Greeter/Hi"]);
    assert!(e.contains("helloworld.Greeter/SayHello"), "{e}");
    let e = run(&[
        "--proto",
        &hello,
        "--call",
        "helloworld.Greeter/SayHello",
        "--data",
        r#"{"nam": 1}"#,
    ]);
    assert!(
        e.contains("nam") && e.contains("helloworld.HelloRequest"),
        "{e}"
    );
}

/// A hostile schema — brackets nested thousands deep, imports that climb out of
/// the import paths — is refused with its place and exit 2, never a stack overflow.
#[test]
fn schemas_nested_past_the_limit_or_importing_outside_are_refused() {
    let tmp = crate::common::recorder::tempdir::Dir::new();
    let n = 3000;
    let deep = tmp.0.join("deep.proto");
    let text = format!(
        "syntax=\"proto3\";package d;{}{}",
        "message M{".repeat(n),
        "}".repeat(n)
    );
    std::fs::write(&deep, text).unwrap();
    let option = tmp.0.join("option.proto");
    let text = format!(
        "syntax=\"proto3\";\npackage d;\nimport \"google/protobuf/descriptor.proto\";\noption (x) = {}{};\n",
        "{a:".repeat(n),
        "}".repeat(n)
    );
    std::fs::write(&option, text).unwrap();
    let climbs = tmp.0.join("climbs.proto");
    std::fs::write(
        &climbs,
        "syntax = \"proto3\";\nimport \"../x.proto\";\nimport \"/etc/y.proto\";\n",
    )
    .unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(BIN).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        err
    };
    for p in [&deep, &option] {
        let p = p.to_str().unwrap();
        let load = ["load", "http://127.0.0.1:9", "-n", "1", "--proto", p];
        let e = run(&[&load[..], &["--call", "d.S/Call"]].concat());
        assert!(
            e.contains("nested 101 deep") && (e.contains(":1:") || e.contains(":4:")),
            "{e}"
        );
        let e = run(&[
            "ghz",
            "--insecure",
            "--proto",
            p,
            "--call",
            "d.S/Call",
            "-n",
            "1",
            "127.0.0.1:9",
        ]);
        assert!(e.contains("past the limit of 100"), "{e}");
    }
    let e = run(&[
        "load",
        "http://127.0.0.1:9",
        "--proto",
        climbs.to_str().unwrap(),
        "--call",
        "d.S/Call",
    ]);
    assert!(
        e.contains("climbs.proto:2:8")
            && e.contains("import \"../x.proto\"")
            && e.contains("--import-paths"),
        "{e}"
    );
}

/// TLS spoken to a plaintext server: said as what it is, with what to do.
#[test]
fn tls_to_a_plaintext_server_says_the_server_does_not_speak_it() {
    let srv = crate::common::srv();
    let hello = proto("helloworld.proto");
    let addr = srv
        .url("/")
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let out = Command::new(BIN)
        .args([
            "ghz",
            "--proto",
            &hello,
            "--call",
            "helloworld.Greeter/SayHello",
            "-n",
            "1",
            &addr,
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("does not speak TLS; add --insecure"), "{err}");
    let out = Command::new(BIN)
        .args(["load", &format!("https://{addr}/pong"), "-n", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("does not speak TLS") && err.contains("http:// URL"),
        "{err}"
    );
}

#[test]
fn grpcio_calls_the_reference_server() {
    let Some(python) = crate::common::python_with(
        "STAMPEDE_GRPC_PYTHON",
        &["grpc", "grpc_tools"],
        "grpcio grpcio-tools",
    ) else {
        return;
    };
    let s = crate::common::srv();
    let out = Command::new(python)
        .args([PEER, "call", PROTO, &s.addr().to_string(), "3"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["replies"],
        serde_json::json!(["Hello n0", "Hello n1", "Hello n2"])
    );
    assert_eq!(v["stream"], serde_json::json!([1, 2, 3]));
    assert_eq!(v["bidi"], serde_json::json!([1, 2, 3]));
    // Each answer came before the next request was sent.
    assert_eq!(v["pingpong"], serde_json::json!([1, 2, 3, 4]));
    assert_eq!(v["status"], "UNAVAILABLE: asked for");
    assert_eq!(v["big"], 300_000);
}

#[test]
fn the_reference_server_answers_every_kind_of_call() {
    let s = crate::common::srv();
    let echo = proto("echo.proto");
    let url = s.url("/");
    let run = |call: &str, data: &str, extra: &[&str]| {
        let args = [
            &["--proto", &echo, "--call", call, "--data", data][..],
            extra,
        ]
        .concat();
        load(&url, &args)
    };
    let v = run(
        "stampede.v1.Echo/Unary",
        r#"{"size": 100}"#,
        &["-n", "1000", "-c", "2", "--streams", "8"],
    );
    assert_eq!(v["grpc"]["OK"], 1000, "{}", v["grpc"]);
    // Each answer: the 5-byte prefix, 2 + 100 bytes of payload, 2 of seq.
    assert_eq!(v["bytes"]["body"], 1000 * 109, "{}", v["bytes"]);
    let v = run(
        "stampede.v1.Echo/Unary",
        r#"{"status": 14}"#,
        &["-n", "50", "-c", "1"],
    );
    assert_eq!(v["grpc"]["UNAVAILABLE"], 50, "{}", v["grpc"]);
    let v = run(
        "stampede.v1.Echo/ServerStream",
        r#"{"count": 5, "interval_ms": 10}"#,
        &["-n", "20", "-c", "4"],
    );
    assert_eq!(v["grpc"]["OK"], 20, "{}", v["grpc"]);
    assert_eq!(v["stream"]["events"], 100);
    let gap = v["stream"]["gap"]["percentiles"][0]["us"].as_u64().unwrap();
    assert!((9_000..30_000).contains(&gap), "{}", v["stream"]);
    let v = run(
        "stampede.v1.Echo/Bidi",
        r#"[{}, {"size": 3}]"#,
        &["-n", "20", "-c", "2"],
    );
    assert_eq!(v["stream"]["events"], 40, "{}", v["stream"]);
    // Gatling's injection: each user a connection of its own, three calls each.
    let users = ["--inject", "rampUsers(10) during(1s)", "--calls", "3"];
    let v = run("stampede.v1.Echo/Unary", "{}", &users);
    assert_eq!(v["grpc"]["OK"], 30, "{}", v["grpc"]);
    assert_eq!(v["sessions"]["completed"], 10, "{}", v["sessions"]);
    // At a rate, corrected: the open model's schedule holds.
    let v = run(
        "stampede.v1.Echo/Unary",
        "{}",
        &["-R", "500", "-d", "1s", "-c", "4"],
    );
    assert_eq!(v["open"]["target_rate"], 500.0);
    let done = v["grpc"]["OK"].as_u64().unwrap();
    assert!(done.abs_diff(500) <= 25, "{done}");
}

#[test]
fn client_streams_are_paced_message_by_message() {
    let s = crate::common::srv();
    let echo = proto("echo.proto");
    let url = s.url("/");
    let bidi = ["--proto", &echo, "--call", "stampede.v1.Echo/Bidi"];
    // Four messages 30 ms apart, the data's two in turn: four answers a call, and
    // each call lasts at least the three intervals.
    let paced = [
        "--data",
        r#"[{"size": 3}, {"size": 4}]"#,
        "--stream-interval",
        "30ms",
        "-n",
        "6",
        "-c",
        "3",
    ];
    let v = load(
        &url,
        &[&bidi[..], &paced, &["--stream-count", "4"]].concat(),
    );
    assert_eq!(v["grpc"]["OK"], 6, "{}", v["grpc"]);
    assert_eq!(v["stream"]["events"], 24, "{}", v["stream"]);
    let min = v["latency"]["min_us"].as_u64().unwrap();
    assert!(min >= 90_000, "{min} µs");
    let gap = v["stream"]["gap"]["percentiles"][0]["us"].as_u64().unwrap();
    assert!(gap >= 15_000, "{}", v["stream"]);
    // By time: messages at 0, 30, 60 and 90 ms, the send side closed at 100 ms.
    let v = load(
        &url,
        &[&bidi[..], &paced, &["--stream-duration", "100ms"]].concat(),
    );
    assert_eq!(v["stream"]["events"], 24, "{}", v["stream"]);
    assert!(v["latency"]["min_us"].as_u64().unwrap() >= 100_000);
    // Neither: the data's messages once, paced.
    let v = load(&url, &[&bidi[..], &paced].concat());
    assert_eq!(v["stream"]["events"], 12, "{}", v["stream"]);
    assert!(v["latency"]["min_us"].as_u64().unwrap() >= 30_000);
    // ghz's flags: a client stream closed after 100 ms, then answered once.
    let addr = s.addr().to_string();
    let text = stampede_out(&[
        "ghz",
        "--insecure",
        "--proto",
        &echo,
        "--call",
        "stampede.v1.Echo.ClientStream",
        "-d",
        "{}",
        "--stream-interval",
        "20ms",
        "--stream-call-duration",
        "100ms",
        "-n",
        "4",
        "-c",
        "2",
        "-O",
        "json",
        &addr,
    ]);
    let g: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(g["statusCodeDistribution"]["OK"], 4, "{g}");
    assert!(g["fastest"].as_f64().unwrap() >= 100e6, "{}", g["fastest"]);
    assert_eq!(g["options"]["stream-interval"], 20_000_000);
    // A duration alone is not taken: the messages are paced here.
    let out = Command::new(BIN)
        .args(["load", &url])
        .args(bidi)
        .args(["--stream-duration", "1s", "-n", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("--stream-interval"), "{e}");
}

/// `stampede` with `args`: its standard output, after checking it succeeded.
fn stampede_out(args: &[&str]) -> String {
    let out = Command::new(BIN).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_ghz_dialect_reports_as_ghz_does() {
    let s = crate::common::srv();
    let addr = s.addr().to_string();
    let echo = proto("echo.proto");
    let ghz = |extra: &[&str]| {
        let base = ["ghz", "--insecure", "--proto", &echo, "--call"];
        stampede_out(&[&base[..], extra, &[addr.as_str()]].concat())
    };
    // One call in three answered UNAVAILABLE: counted by Go's name, left out of the
    // latencies unless errors are counted.
    let data = r#"[{}, {"status": 14}, {"size": 8}]"#;
    let unary = ["stampede.v1.Echo.Unary", "-d", data, "-n", "90", "-c", "3"];
    let text = ghz(&unary);
    assert!(text.contains("  Count:\t90\n"), "{text}");
    assert!(
        text.contains("  [OK]            60 responses   \n"),
        "{text}"
    );
    assert!(
        text.contains("  [Unavailable]   30 responses   \n"),
        "{text}"
    );
    // The status's grpc-message, as ghz's desc.
    assert!(
        text.contains("  [30]   rpc error: code = Unavailable desc = asked for   \n"),
        "{text}"
    );
    let v: Value = serde_json::from_str(&ghz(&[&unary[..], &["-O", "json"]].concat())).unwrap();
    assert_eq!(v["count"], 90);
    assert_eq!(v["statusCodeDistribution"]["Unavailable"], 30, "{v}");
    let details = v["details"].as_array().unwrap();
    assert_eq!(details.len(), 90);
    let down = details
        .iter()
        .filter(|d| d["status"] == "Unavailable")
        .count();
    assert_eq!(down, 30);
    assert_eq!(v["options"]["concurrency"], 3);
    assert_eq!(v["endReason"], "normal");
    // Messages compressed with gzip, the influx line, the report in a file.
    let tmp = crate::common::recorder::tempdir::Dir::new();
    let file = tmp.0.join("ghz.txt");
    let f = file.to_str().unwrap();
    let gz = [
        "stampede.v1.Echo.Unary",
        "-e",
        "-d",
        r#"{"size": 4}"#,
        "-n",
        "40",
    ];
    ghz(&[&gz[..], &["-O", "influx-summary", "-o", f, "--name", "gz"]].concat());
    let line = std::fs::read_to_string(&file).unwrap();
    assert!(line.starts_with("ghz_run,proto=\""), "{line}");
    assert!(
        line.contains(" count=40,") && line.contains(",errors=0 "),
        "{line}"
    );
    // A client stream of --stream-call-count messages: the server counts them.
    let cs = ["stampede.v1.Echo.ClientStream", "--stream-call-count", "7"];
    let v: Value =
        serde_json::from_str(&ghz(&[&cs[..], &["-n", "10", "-O", "json"]].concat())).unwrap();
    assert_eq!(v["statusCodeDistribution"]["OK"], 10, "{v}");
    // A timed run: the calls in flight at its end are Canceled, unless ignored.
    let slow = [
        "stampede.v1.Echo.Unary",
        "-d",
        r#"{"delay_ms": 400}"#,
        "-z",
        "1s",
    ];
    // Four connections of one call each: each starts its next call as its answer
    // comes, so four are in flight at the end whatever order the answers come in
    // (over one connection a stream is refilled once half of them are free).
    let four = ["-c", "4", "--connections", "4", "-O", "json"];
    let v: Value = serde_json::from_str(&ghz(&[&slow[..], &four[..]].concat())).unwrap();
    assert_eq!(v["endReason"], "timeout");
    assert_eq!(v["statusCodeDistribution"]["Canceled"], 4, "{v}");
    let ignore = [&four[..], &["--duration-stop", "ignore"]].concat();
    let v: Value = serde_json::from_str(&ghz(&[&slow[..], &ignore[..]].concat())).unwrap();
    assert!(v["statusCodeDistribution"].get("Canceled").is_none(), "{v}");
    // stampede's own result beside ghz's report.
    let out = Command::new(BIN)
        .args(["ghz", "--insecure", "--proto", &echo, "--call"])
        .args([
            "stampede.v1.Echo.Unary",
            "-n",
            "20",
            "-c",
            "2",
            "--json",
            "-",
            &addr,
        ])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["grpc"]["OK"], 20, "{v}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("Summary:"));
}

#[test]
fn a_ghz_step_schedule_raises_the_rate_step_by_step() {
    let s = crate::common::srv();
    let hello = proto("helloworld.proto");
    let out = stampede_out(&[
        "ghz",
        "--insecure",
        "--proto",
        &hello,
        "--call",
        "helloworld.Greeter.SayHello",
        "--load-schedule",
        "step",
        "--load-start",
        "100",
        "--load-step",
        "200",
        "--load-step-duration",
        "1s",
        "-z",
        "2s",
        "-c",
        "10",
        "--json",
        "-",
        &s.addr().to_string(),
    ]);
    let v: Value = serde_json::from_str(&out).unwrap();
    // 100 calls in the first second, 300 in the second.
    let second = |t: usize| v["intervals"][t]["completed"].as_u64().unwrap_or(0);
    assert!(second(0).abs_diff(100) <= 10, "{}", v["intervals"]);
    assert!(second(1).abs_diff(300) <= 30, "{}", v["intervals"]);
    assert!(
        v["grpc"]["OK"].as_u64().unwrap().abs_diff(400) <= 20,
        "{}",
        v["grpc"]
    );
}

#[test]
fn segments_of_a_grpc_run_merge_their_statuses() {
    let s = crate::common::srv();
    let tmp = crate::common::recorder::tempdir::Dir::new();
    let echo = proto("echo.proto");
    let data = r#"[{}, {"status": 5}]"#;
    let mut files = Vec::new();
    for k in 1..=2 {
        let file = tmp.0.join(format!("part{k}.json"));
        let f = file.to_str().unwrap().to_string();
        let seg = format!("{k}/2");
        stampede_out(&[
            "load",
            &s.url("/"),
            "--proto",
            &echo,
            "--call",
            "stampede.v1.Echo/Unary",
            "--data",
            data,
            "-n",
            "200",
            "-c",
            "2",
            "--segment",
            &seg,
            "-q",
            "--json",
            &f,
        ]);
        files.push(f);
    }
    let merged = stampede_out(&["merge", &files[0], &files[1], "--json", "-"]);
    let v: Value = serde_json::from_str(&merged).unwrap();
    assert_eq!(v["requests"]["completed"], 200, "{}", v["requests"]);
    assert_eq!(v["grpc"]["OK"], 100, "{}", v["grpc"]);
    assert_eq!(v["grpc"]["NOT_FOUND"], 100, "{}", v["grpc"]);
    assert_eq!(v["stream"]["mode"], "grpc");
}

#[test]
fn a_server_without_reflection_is_said_to_have_none() {
    let s = crate::common::srv();
    let out = Command::new(BIN)
        .args([
            "ghz",
            "--insecure",
            "--call",
            "helloworld.Greeter.SayHello",
            "-n",
            "1",
        ])
        .arg(s.addr().to_string())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("has no reflection service"), "{said}");
}

#[test]
fn a_service_the_reference_server_lacks_is_unimplemented() {
    let s = crate::common::srv();
    let tmp = crate::common::recorder::tempdir::Dir::new();
    let nope = tmp.0.join("nope.proto");
    std::fs::write(
        &nope,
        "syntax = \"proto3\";\npackage x;\nmessage A {}\nservice Nope { rpc M (A) returns (A); }\n",
    )
    .unwrap();
    let v = load(
        &s.url("/"),
        &[
            "--proto",
            nope.to_str().unwrap(),
            "--call",
            "x.Nope/M",
            "-n",
            "20",
            "-c",
            "2",
        ],
    );
    assert_eq!(v["grpc"]["UNIMPLEMENTED"], 20, "{}", v["grpc"]);
    assert_eq!(v["requests"]["failed"], 0);
}

#[test]
fn stampede_serve_describes_itself_by_reflection() {
    let (_serving, url) = crate::common::serve(&[]);
    // No --proto: the schema is the server's own, asked of its reflection service.
    let v = load(
        &url,
        &[
            "--call",
            "helloworld.Greeter/SayHello",
            "--data",
            r#"{"name": "r"}"#,
            "-n",
            "30",
        ],
    );
    assert_eq!(v["grpc"]["OK"], 30, "{}", v["grpc"]);
    let v = load(
        &url,
        &[
            "--call",
            "stampede.v1.Echo/Bidi",
            "--data",
            r#"[{"size": 3}, {"size": 4}]"#,
            "-n",
            "20",
        ],
    );
    assert_eq!(v["grpc"]["OK"], 20, "{}", v["grpc"]);
    assert_eq!(v["stream"]["events"], 40, "{}", v["stream"]);
    // A service it lacks: named, with those it has.
    let out = Command::new(BIN)
        .args(["load", &url, "--call", "no.Such/M", "-n", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("no.Such") && said.contains("stampede.v1.Echo"),
        "{said}"
    );
}

#[test]
fn call_data_templates_give_each_call_a_message_of_its_own() {
    let s = crate::common::srv();
    let addr = s.addr().to_string();
    let echo = proto("echo.proto");
    // ghz's command line: call N asks for status N, so the 17 calls get the 17 codes.
    let out = stampede_out(&[
        "ghz",
        "--insecure",
        "--proto",
        &echo,
        "--call",
        "stampede.v1.Echo.Unary",
        "-d",
        r#"{"status": {{.RequestNumber}}}"#,
        "-m",
        r#"{"x-id": "{{.UUID}}"}"#,
        "-n",
        "17",
        "-c",
        "5",
        "-O",
        "json",
        &addr,
    ]);
    let v: Value = serde_json::from_str(&out).unwrap();
    let codes = v["statusCodeDistribution"].as_object().unwrap();
    assert_eq!(codes.len(), 17, "{codes:?}");
    assert!(codes.values().all(|n| n == 1), "{codes:?}");
    // Natively: call N asks for N bytes back, its metadata templated too; the answers'
    // bytes add up to what each number asked for (5-byte prefix, the payload field
    // when N > 0, the sequence field).
    let v = load(
        &s.url("/"),
        &[
            "--proto",
            &echo,
            "--call",
            "stampede.v1.Echo/Unary",
            "--data",
            r#"{"size": {{.RequestNumber}}}"#,
            "--metadata",
            "x-n: {{.RequestNumber}}",
            "-n",
            "100",
            "-c",
            "4",
        ],
    );
    assert_eq!(v["grpc"]["OK"], 100, "{}", v["grpc"]);
    let want: u64 = (0..100u64)
        .map(|n| 5 + 2 + if n > 0 { 2 + n } else { 0 })
        .sum();
    assert_eq!(v["bytes"]["body"], want);
    // Data that does not fit once rendered is said before the run.
    let out = Command::new(BIN)
        .args(["load", &s.url("/"), "--proto", &echo])
        .args(["--call", "stampede.v1.Echo/Unary", "-n", "1"])
        .args(["--data", r#"{"size": "{{.WorkerID}}"}"#])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("size") && said.contains("g0c0"), "{said}");
}
