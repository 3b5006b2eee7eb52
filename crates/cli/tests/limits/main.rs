//! Limit verdicts and capacity searches on constructed cases whose answer is known:
//! a single-threaded server that spends a fixed CPU time per answer (`/cpu/<us>`), a
//! rate no client can offer, a client sharing its core with a busy process, a mock LLM
//! that slows past two streams at once.
//!
//! A test binary of its own, its tests one at a time: verdicts read CPU accounting, so
//! these runs must not share the machine with the other end-to-end tests (cargo runs
//! test binaries one after another). Servers are `stampede serve` processes on
//! 127.0.0.1:0-style free ports, pinned apart from the client where the machine has
//! two cores.

use std::io::BufRead as _;
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_stampede");

/// One test at a time.
static ONE: Mutex<()> = Mutex::new(());

fn one() -> std::sync::MutexGuard<'static, ()> {
    ONE.lock().unwrap_or_else(|e| e.into_inner())
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// `cmd`, pinned to `cpu` with taskset when the machine has two cores or more.
fn pinned(cpu: usize, args: &[&str]) -> Command {
    if cores() >= 2 && which("taskset") {
        let mut c = Command::new("taskset");
        c.args(["-c", &cpu.to_string(), BIN]).args(args);
        c
    } else {
        let mut c = Command::new(BIN);
        c.args(args);
        c
    }
}

fn which(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `stampede serve --threads 1` on a free loopback port, on CPU 1; killed on drop.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn start() -> Server {
        Server::with(&[])
    }

    /// With further `serve` arguments.
    fn with(more: &[&str]) -> Server {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let listen = format!("127.0.0.1:{port}");
        let mut args = vec!["serve", "--threads", "1", "--no-http2", "--listen", &listen];
        args.extend_from_slice(more);
        let mut child = pinned(1, &args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Ready once it says it listens (its first line on stderr); the rest of its
        // stderr is drained so that it never blocks.
        use std::io::BufRead;
        let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
        let first = lines.next().expect("the server said nothing").unwrap();
        assert!(first.contains("listening on"), "{first}");
        std::thread::spawn(move || lines.for_each(drop));
        Server { child, port }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// `--rand-regex-url` and a pattern for `/pong` with a random 1,000-letter query:
    /// drawing it costs the client several times what skipping it costs the server,
    /// so the client is the limit however fast either build is.
    fn costly_for_the_client(&self) -> [String; 2] {
        [
            "--rand-regex-url".into(),
            format!("http://127\\.0\\.0\\.1:{}/pong\\?[a-z]{{1000}}", self.port),
        ]
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn load(args: &[&str]) -> (Output, serde_json::Value) {
    let mut all = vec!["load", "-q", "-t", "1", "--json", "-"];
    all.extend_from_slice(args);
    let out = pinned(0, &all).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = serde_json::from_slice(&out.stdout).unwrap();
    (out, v)
}

fn verdict(v: &serde_json::Value) -> &str {
    v["limit"]["verdict"].as_str().unwrap()
}

#[test]
fn a_server_that_spends_fixed_cpu_per_answer_is_the_limit() {
    let _one = one();
    let s = Server::start();
    // 500 µs per answer on one thread: at most 2,000 req/s, the client mostly idle.
    let (_, v) = load(&["-c", "8", "-d", "2s", &s.url("/cpu/500")]);
    assert_eq!(verdict(&v), "server-bound", "{}", v["limit"]);
    let rps = v["throughput_rps"].as_f64().unwrap();
    assert!(rps < 2_100.0, "{rps}");
    let busy = v["limit"]["client_threads"][0]["busy"].as_f64().unwrap();
    assert!(busy < 0.5, "{}", v["limit"]);
    let idle = v["limit"]["client_threads"][0]["idle"].as_f64().unwrap();
    assert!(idle > 0.5, "{}", v["limit"]);
    // An open model far above 2,000 req/s: the server fell behind, not the client.
    let (out, v) = load(&["-c", "8", "-R", "4000", "-d", "2s", &s.url("/cpu/500")]);
    assert_eq!(verdict(&v), "server-bound", "{}", v["limit"]);
    assert!(
        v["limit"]["reason"]
            .as_str()
            .unwrap()
            .contains("of the 4000 req/s offered"),
        "{}",
        v["limit"]
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("client-bound"));
}

#[test]
fn a_rate_the_generator_cannot_offer_is_client_bound_and_said_loudly() {
    let _one = one();
    let s = Server::start();
    let [regex, url] = s.costly_for_the_client();
    let (out, v) = load(&["-c", "16", "-R", "5000000", "-d", "2s", &regex, &url]);
    assert_eq!(verdict(&v), "client-bound", "{}", v["limit"]);
    assert_eq!(v["requests"]["failed"], 0, "{v}");
    let t = &v["limit"]["client_threads"][0];
    // It hardly ever waited with nothing to do: what idle there is comes with the
    // run's start and end (0.100–0.101 of the run in two runs that failed a bound of
    // 0.1, on a quiet machine, with busy at 0.99), not with its arrivals.
    assert!(t["idle"].as_f64().unwrap() < 0.2, "{t}");
    assert!(
        t["peak"].as_f64().unwrap() >= 0.8,
        "a busiest second was sampled: {t}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("WARNING: client-bound"), "{stderr}");
    // The summary says it too.
    let out = pinned(
        0,
        &[
            "load", "-q", "-t", "1", "-c", "16", "-R", "5000000", "-d", "1s", &regex, &url,
        ],
    )
    .output()
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("limit       client-bound")),
        "{text}"
    );
}

#[test]
fn a_client_sharing_its_core_with_a_busy_process_is_client_bound() {
    let _one = one();
    if cores() < 2 || !which("taskset") {
        eprintln!("skipped: needs two cores and taskset to pin the client beside a busy process");
        return;
    }
    let s = Server::start();
    // A busy loop on the client's core for the length of the run.
    let mut burner = Command::new("taskset")
        .args([
            "-c",
            "0",
            "sh",
            "-c",
            "end=$(($(date +%s)+6)); echo spinning; while [ $(date +%s) -lt $end ]; do :; done",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The loop is spinning before the run begins: the shell says so as it starts it.
    let mut said = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(burner.stdout.take().unwrap()),
        &mut said,
    )
    .unwrap();
    assert_eq!(said.trim(), "spinning");
    let [regex, url] = s.costly_for_the_client();
    let (_, v) = load(&["-c", "16", "-d", "2s", &regex, &url]);
    let _ = burner.kill();
    let _ = burner.wait();
    assert_eq!(verdict(&v), "client-bound", "{}", v["limit"]);
    let t = &v["limit"]["client_threads"][0];
    // Its time went to waiting for the core, not to work of its own.
    assert!(t["busy"].as_f64().unwrap() < 0.8, "{t}");
    assert!(t["waiting"].as_f64().unwrap() > 0.2, "{t}");
}

/// Runs `attempt` until it returns `Ok`, at most `n` times; panics with every
/// attempt's reason when none did.
///
/// For the capacity searches only: a knee is a rate where the server is nearly
/// saturated, so a stall of the server's core on a shared machine (tens of
/// milliseconds, measured) fails a step a quiet machine would pass and ends the
/// search low. A search that is wrong is wrong every time; a stall is not.
fn within_attempts<T>(n: usize, mut attempt: impl FnMut() -> Result<T, String>) -> T {
    let mut why = Vec::new();
    for i in 1..=n {
        match attempt() {
            Ok(t) => return t,
            Err(e) => {
                eprintln!("attempt {i} of {n}: {e}");
                why.push(e);
            }
        }
    }
    panic!("no attempt of {n} passed:\n{}", why.join("\n"));
}

/// Whether a search's `found` rate lies where the knee of the one-thread
/// `/cpu/1000` server must: never above the 1,000 req/s its 1 ms of CPU per answer
/// allows, and not below half of it. A quiet machine finds it near 90 %; on a shared
/// one the client's own stalls fail steps as behind (a p99 send lag over 5 ms: the
/// rate was not offered), which ends a search lower, once at 41 % of the server's
/// closed-loop ceiling. The search's exact arithmetic is tested in simulated time.
fn at_the_knee(found: f64, what: &serde_json::Value) -> Result<(), String> {
    if (500.0..=1_001.0).contains(&found) {
        Ok(())
    } else {
        Err(format!("found {found}, outside 500-1000 req/s: {what}"))
    }
}

#[test]
fn a_capacity_search_finds_the_knee_of_a_server_of_known_capacity() {
    let _one = one();
    let (out, v) = within_attempts(3, || {
        let s = Server::start();
        // One thread spending 1 ms per answer: the knee is at most 1,000 req/s. A
        // closed loop first checks that the server has its core now (enough
        // connections to keep it busy).
        let (_, closed) = load(&["-c", "8", "-d", "2s", &s.url("/cpu/1000")]);
        let ceiling = closed["throughput_rps"].as_f64().unwrap();
        if !(ceiling > 800.0 && ceiling <= 1_001.0) {
            return Err(format!(
                "a closed loop measured {ceiling} req/s, outside (800, 1001]"
            ));
        }
        let out = pinned(
            0,
            &[
                "load",
                "-t",
                "1",
                "-c",
                "64",
                "--find-max",
                "p99 < 50ms",
                "--find-max",
                "errors < 0.1%",
                "--max-rate",
                "4000",
                "--step-duration",
                "2s",
                "--step-warmup",
                "500ms",
                "--json",
                "-",
                &s.url("/cpu/1000"),
            ],
        )
        .stderr(Stdio::piped())
        .output()
        .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let found = v["capacity"]["max_rate"].as_f64().unwrap();
        // 64 connections keep a stall of the server's core from emptying the pool,
        // which fails a step as behind: with 16, a step of 750 req/s (76 % of the
        // ceiling) once did.
        at_the_knee(found, &v["capacity"]).map(|()| (out, v))
    });
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Each step was announced as it ran.
    assert!(
        out.stderr
            .lines()
            .map_while(Result::ok)
            .any(|l| l.starts_with("stampede: step 1:")),
        "{stderr}"
    );
    let c = &v["capacity"];
    let found = c["max_rate"].as_f64().unwrap();
    let steps = c["steps"].as_array().unwrap();
    assert!(steps.iter().all(|s| s["rate"].as_f64().unwrap() <= 4000.0));
    assert!(steps.iter().any(|s| !s["passed"].as_bool().unwrap()));
    // The JSON is the best step's run, which passed.
    assert!((v["open"]["target_rate"].as_f64().unwrap() - found).abs() < 1e-6);
}

#[test]
fn a_bench_scenario_s_search_finds_the_knee_and_reports_it() {
    let _one = one();
    let dir = std::env::temp_dir().join(format!("stampede-limits-{}-search", std::process::id()));
    let (stderr, found) = within_attempts(3, || {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (client, server) = if cores() >= 2 {
            ("cpus = [0]", "cpus = [1]")
        } else {
            ("threads = 1", "")
        };
        let plan = format!(
            r#"name = "search"
[runs]
warmup = 2
repetitions = 1
[client]
{client}
[[target]]
name = "one-thread"
start = "{{stampede}} serve --listen 127.0.0.1:{{port}} --threads 1 --no-http2"
ready = "/pong"
{server}
[[scenario]]
name = "knee"
path = "/cpu/1000"
connections = 64
search = {{ conditions = ["p99 < 50ms"], max_rate = 4000, step = "1s", warmup = "300ms" }}
"#
        );
        let p = dir.join("p.toml");
        std::fs::write(&p, plan).unwrap();
        let out = Command::new(BIN)
            .arg("bench")
            .arg(&p)
            .arg("--db")
            .arg(dir.join("s.db"))
            .arg("--report")
            .arg(dir.join("r.md"))
            .arg("--json")
            .arg(dir.join("s.json"))
            .current_dir(&dir)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("s.json")).unwrap()).unwrap();
        let row = &summary["rows"][0];
        assert_eq!(row["metric"], "max_rate", "{row}");
        let found = row["cells"][0]["max_rate"]["mean"].as_f64().unwrap();
        assert!(
            row["cells"][0]["info"][0]
                .as_str()
                .unwrap()
                .starts_with("run 1: capacity search of "),
            "{row}"
        );
        at_the_knee(found, row).map(|()| (stderr, found))
    });
    // Each step is shown as it ends, then what the search found; no warm-up runs.
    assert!(
        stderr.contains("run 1/1 search step 1 at 125 req/s: ") && stderr.contains(" answered"),
        "{stderr}"
    );
    // A step's warm-up is not reported as a step.
    assert!(!stderr.contains("(warm-up)"), "{stderr}");
    assert!(stderr.contains("run 1 capacity: "), "{stderr}");
    assert!(!stderr.contains("warm-up 1/2"), "{stderr}");
    // The store keeps the whole search with the best step's run; the report draws it.
    let store = stampede_lab::store::Store::open(&dir.join("s.db")).unwrap();
    let runs = store.runs(1).unwrap();
    assert_eq!(runs.len(), 1);
    let c = runs[0].result.capacity.as_ref().unwrap();
    assert_eq!(c.max_rate, Some(found));
    assert!(c.steps.iter().all(|st| st.rate <= 4000.0));
    assert!(c.steps.iter().any(|st| !st.passed));
    let html = Command::new(BIN)
        .args(["report", "--db"])
        .arg(dir.join("s.db"))
        .arg("-o")
        .arg(dir.join("r.html"))
        .output()
        .unwrap();
    assert!(html.status.success());
    let page = std::fs::read_to_string(dir.join("r.html")).unwrap();
    assert!(page.contains("Capacity (highest rate meeting every condition)"));
    assert!(page.contains("knee: p99 against offered rate"));
    let md = std::fs::read_to_string(dir.join("r.md")).unwrap();
    assert!(md.contains("max "), "{md}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--find-max` on stream figures: a mock LLM whose completions take 35 ms at full
/// speed (first token 20 ms, then 5 ms apart, 4 tokens) and slow every stream past two
/// at once, so that a high enough rate snowballs; the search on the first token's p99
/// finds a rate between its first step and its ceiling, and says which figure failed.
#[test]
fn a_search_on_stream_figures_finds_where_the_first_token_slows() {
    let _one = one();
    let s = Server::with(&[
        "--llm-ttft",
        "20ms",
        "--llm-itl",
        "5ms",
        "--llm-batch",
        "2",
        "--llm-max-tokens",
        "4",
    ]);
    let url = s.url("/v1/completions");
    let (_, r) = load(&[
        "--openai",
        "completions",
        "--output-tokens",
        "4",
        "-c",
        "32",
        "--find-max",
        "ttft_p99 < 100ms",
        "--find-max",
        "itl_p99 < 1s",
        "--max-rate",
        "800",
        "--step-duration",
        "1s",
        "--step-warmup",
        "0s",
        "--max-steps",
        "5",
        "--burstiness",
        "4",
        &url,
    ]);
    let c = &r["capacity"];
    let found = c["max_rate"].as_f64().unwrap();
    assert!((25.0..800.0).contains(&found), "{c}");
    let steps = c["steps"].as_array().unwrap();
    assert!(
        steps
            .iter()
            .any(|s| s["why"].as_str().is_some_and(|w| w.contains("ttft_p99"))),
        "{c}"
    );
    assert!(
        r["settings"]["shape"]
            .as_str()
            .unwrap()
            .contains("burstiness 4"),
        "{}",
        r["settings"]
    );
}
