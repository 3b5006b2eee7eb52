//! A multi-host rig on this one machine: network namespaces made here — one for the
//! reference server, four for clients — joined by veth pairs, each client namespace
//! with its own network stack, address and sshd. `stampede ssh` runs a four-host
//! open-model run through it over real SSH, and the merged result is checked; a bench
//! starts its target on the server "host" over SSH, samples it there and generates
//! the load from the four client hosts.
//! Addresses (10.77.0.0/16) exist only inside these namespaces, which are removed when
//! the test ends. Needs root, `ip` and OpenSSH's sshd: without them it says so and
//! passes, unless STAMPEDE_REQUIRE_PEERS is set (as in CI).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const CLIENTS: usize = 4;
const SERVER_ADDR: &str = "10.77.0.1";

/// What the rig made, undone on drop: namespaces (which take their veths along) and
/// the processes running in them.
struct Rig {
    namespaces: Vec<String>,
    children: Vec<Child>,
    dir: PathBuf,
    /// The server's namespace, where the controller runs too.
    server_ns: String,
    /// The client namespaces' sshd addresses.
    hosts: Vec<String>,
    /// The private key every sshd takes.
    key: PathBuf,
}

impl Drop for Rig {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for ns in &self.namespaces {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn run(args: &[&str]) {
    let out = Command::new(args[0]).args(&args[1..]).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn netns(ns: &str, args: &[&str]) {
    let mut all = vec!["ip", "netns", "exec", ns];
    all.extend_from_slice(args);
    run(&all);
}

/// Why the rig cannot be built here, if it cannot.
fn unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Some("root (network namespaces)".into());
    }
    if !Path::new("/usr/sbin/sshd").exists() {
        return Some("OpenSSH's sshd (apt install openssh-server)".into());
    }
    // Tests run at once: each probe its own name.
    static PROBES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = PROBES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let probe = format!("stampede-probe-{}-{n}", std::process::id());
    let ok = Command::new("ip")
        .args(["netns", "add", &probe])
        .status()
        .is_ok_and(|s| s.success());
    let _ = Command::new("ip").args(["netns", "del", &probe]).status();
    (!ok).then(|| "`ip netns` (iproute2, and namespaces allowed here)".into())
}

fn wait_tcp(ns: &str, addr: &str, port: u16) {
    let what = format!("{addr}:{port} in {ns} opens");
    crate::common::eventually(&what, Duration::from_secs(10), || {
        Command::new("ip")
            .args(["netns", "exec", ns, "bash", "-c"])
            .arg(format!("exec 3<>/dev/tcp/{addr}/{port}"))
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
            .then_some(())
    });
}

impl Rig {
    /// Namespaces for a server and `CLIENTS` clients, veths between them, an sshd in
    /// each client namespace (and, with `server_sshd`, one in the server's at
    /// SERVER_ADDR); `None`, said, where this machine cannot.
    fn build(server_sshd: bool) -> Option<Rig> {
        if let Some(what) = unavailable() {
            crate::common::missing_peer(&what);
            return None;
        }
        let id = std::process::id();
        // Rigs of one test process at once: each its own names (an interface's name
        // holds at most 15 bytes: "st", the id, this tag, a letter and the client).
        static RIGS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = RIGS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tag = format!("{}{n}", if server_sshd { "l" } else { "s" });
        let dir = std::env::temp_dir().join(format!("stampede-rig{tag}-{id}"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut rig = Rig {
            namespaces: Vec::new(),
            children: Vec::new(),
            dir: dir.clone(),
            server_ns: format!("st{id}{tag}-s"),
            hosts: Vec::new(),
            key: dir.join("id"),
        };
        let server_ns = rig.server_ns.clone();
        run(&["ip", "netns", "add", &server_ns]);
        rig.namespaces.push(server_ns.clone());
        netns(&server_ns, &["ip", "link", "set", "lo", "up"]);
        netns(
            &server_ns,
            &[
                "ip",
                "addr",
                "add",
                &format!("{SERVER_ADDR}/32"),
                "dev",
                "lo",
            ],
        );
        // A key for every sshd, and one to log in with.
        let key = rig.key.clone();
        let host_key = dir.join("host");
        for k in [&key, &host_key] {
            run(&[
                "ssh-keygen",
                "-q",
                "-t",
                "ed25519",
                "-N",
                "",
                "-f",
                k.to_str().unwrap(),
            ]);
        }
        let sshd = |rig: &mut Rig, ns: &str, addr: &str, n: usize| {
            let config = dir.join(format!("sshd{n}"));
            std::fs::write(
                &config,
                format!(
                    "ListenAddress {addr}\nPort 22\nHostKey {}\nAuthorizedKeysFile {}.pub\n\
                     PidFile {}/sshd{n}.pid\nUsePAM no\nStrictModes no\nPermitRootLogin yes\n\
                     PasswordAuthentication no\n",
                    host_key.display(),
                    key.display(),
                    dir.display()
                ),
            )
            .unwrap();
            // sshd refuses to start without its privilege-separation directory.
            let _ = std::fs::create_dir_all("/run/sshd");
            rig.children.push(
                Command::new("ip")
                    .args(["netns", "exec", ns, "/usr/sbin/sshd", "-D", "-e", "-f"])
                    .arg(&config)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap(),
            );
            wait_tcp(ns, addr, 22);
        };
        if server_sshd {
            sshd(&mut rig, &server_ns, SERVER_ADDR, 0);
        }
        for k in 1..=CLIENTS {
            let ns = format!("st{id}{tag}-c{k}");
            run(&["ip", "netns", "add", &ns]);
            rig.namespaces.push(ns.clone());
            let (a, b) = (format!("st{id}{tag}a{k}"), format!("st{id}{tag}b{k}"));
            run(&["ip", "link", "add", &a, "type", "veth", "peer", "name", &b]);
            run(&["ip", "link", "set", &a, "netns", &ns]);
            run(&["ip", "link", "set", &b, "netns", &server_ns]);
            let (client_addr, server_side) = (format!("10.77.{k}.1"), format!("10.77.{k}.2"));
            netns(&ns, &["ip", "link", "set", "lo", "up"]);
            netns(
                &ns,
                &["ip", "addr", "add", &format!("{client_addr}/30"), "dev", &a],
            );
            netns(&ns, &["ip", "link", "set", &a, "up"]);
            netns(
                &ns,
                &["ip", "route", "add", SERVER_ADDR, "via", &server_side],
            );
            netns(
                &server_ns,
                &["ip", "addr", "add", &format!("{server_side}/30"), "dev", &b],
            );
            netns(&server_ns, &["ip", "link", "set", &b, "up"]);
            sshd(&mut rig, &ns, &client_addr, k);
            rig.hosts.push(client_addr);
        }
        Some(rig)
    }

    /// The reference server in the server's namespace, at the one address every
    /// client routes to, listening on `port`.
    fn serve(&mut self, port: u16) {
        self.children.push(
            Command::new("ip")
                .args(["netns", "exec", &self.server_ns])
                .args([env!("CARGO_BIN_EXE_stampede"), "serve", "--threads", "1"])
                .args(["--listen", &format!("{SERVER_ADDR}:{port}")])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        wait_tcp(&self.server_ns, SERVER_ADDR, port);
    }

    /// The ssh options that log in to the rig's sshds.
    fn ssh_options(&self) -> Vec<String> {
        vec![
            format!("IdentityFile={}", self.key.display()),
            "StrictHostKeyChecking=no".into(),
            "UserKnownHostsFile=/dev/null".into(),
            "User=root".into(),
            "ConnectTimeout=5".into(),
            "LogLevel=ERROR".into(),
        ]
    }
}

#[test]
fn four_hosts_over_ssh_merge_to_one_open_model_run() {
    let Some(mut rig) = Rig::build(false) else {
        return;
    };
    let (server_ns, hosts, dir) = (rig.server_ns.clone(), rig.hosts.clone(), rig.dir.clone());
    // The reference server, in its own namespace, at the one address every client
    // routes to.
    let port = 8080;
    rig.serve(port);
    // The controller runs in the server's namespace, which reaches every client. The
    // run's URL is in a targets file, which travels with it: each host reads the
    // copy shipped to it, checked against its digest.
    let merged = dir.join("merged.json");
    let targets = dir.join("targets.txt");
    std::fs::write(&targets, format!("GET http://{SERVER_ADDR}:{port}/pong\n")).unwrap();
    let out = Command::new("ip")
        .args([
            "netns",
            "exec",
            &server_ns,
            env!("CARGO_BIN_EXE_stampede"),
            "ssh",
        ])
        .args(["--hosts", &hosts.join(","), "--start-in", "2s"])
        .args(rig.ssh_options().iter().flat_map(|o| ["-o", o.as_str()]))
        .args(["--remote-stampede", env!("CARGO_BIN_EXE_stampede")])
        .args(["--json", merged.to_str().unwrap()])
        .arg("--live-log")
        .arg(dir.join("live.jsonl"))
        .arg("--")
        .args(["load", "--rate", "2000", "-d", "2s", "-c", "8", "--targets"])
        .arg(&targets)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let shipped = err
        .lines()
        .find_map(|l| l.strip_prefix("stampede: shipping 1 input files (31 bytes) to "))
        .and_then(|l| l.strip_suffix(" on each host"))
        .unwrap_or_else(|| panic!("{err}"));
    // The hosts share this machine's files: the shipped copy and its digests are there.
    let copy = std::path::Path::new(shipped);
    assert_eq!(
        std::fs::read(copy.join("1-targets.txt")).unwrap(),
        std::fs::read(&targets).unwrap()
    );
    assert!(std::fs::read_to_string(copy.join("SHA256SUMS"))
        .unwrap()
        .ends_with("  1-targets.txt\n"));
    let _ = std::fs::remove_dir_all(copy);
    let m: serde_json::Value = serde_json::from_slice(&std::fs::read(&merged).unwrap()).unwrap();
    // 2,000 req/s for 2 s from four network stacks: every arrival is accounted for
    // once — sent or (on a busy moment near a segment's end) never sent, and a sent
    // one completed, failed or still in flight at the end (abandoned).
    let n = |k: &str| m["requests"][k].as_u64().unwrap();
    let never_sent = m["open"]["never_sent"].as_u64().unwrap();
    assert_eq!(n("started") + never_sent, 4000, "{m:#}");
    assert_eq!(
        n("completed") + n("failed") + n("abandoned"),
        n("started"),
        "{m:#}"
    );
    assert!(n("completed") >= 3900, "{m:#}");
    assert_eq!(m["requests"]["failed"].as_u64().unwrap(), 0);
    let parts: Vec<&str> = m["origin"]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert_eq!(parts.len(), CLIENTS);
    for k in 1..=CLIENTS {
        assert!(
            parts
                .iter()
                .any(|p| p.starts_with(&format!("{k}/{CLIENTS} "))),
            "{parts:?}"
        );
    }
    let open = &m["open"];
    assert!(
        (open["achieved_rate"].as_f64().unwrap() - 2000.0).abs() < 40.0,
        "{open}"
    );
    assert_eq!(m["connections_opened"].as_u64().unwrap(), 8);
    // The live view: each second merged from the four as it came is the merged
    // result's second, histogram for histogram (the shared start aligns them).
    let live = std::fs::read_to_string(dir.join("live.jsonl")).unwrap();
    let intervals = m["intervals"].as_array().unwrap();
    let mut compared = 0;
    for line in live.lines() {
        let l: serde_json::Value = serde_json::from_str(line).unwrap();
        let t = l["t"].as_u64().unwrap() as usize;
        // The 2 s run's whole seconds hold all four (a last sliver may hold fewer).
        if t < 2 {
            assert_eq!(l["segments"], 4, "{line}");
        }
        let Some(iv) = intervals.iter().find(|i| i["t"].as_u64() == Some(t as u64)) else {
            continue;
        };
        let h = stampede_engine::Hist::from_base64(iv["histogram"].as_str().unwrap()).unwrap();
        let live_h = stampede_engine::Hist::from_base64(l["histogram"].as_str().unwrap()).unwrap();
        assert_eq!(live_h, h, "second {t}");
        assert_eq!(l["completed"], iv["completed"], "second {t}");
        assert_eq!(
            l["p99_us"].as_u64().unwrap(),
            stampede_engine::value_at_percentile(&h.0, 99.0)
        );
        compared += 1;
    }
    assert!(compared >= 2, "{live}");
    assert_eq!(m["fleet"]["merged"], 4, "{m:#}");
    drop(rig);
}

/// Sixteen segments over the four hosts at a shared rate: one host that is not
/// there never becomes ready, one segment is killed mid-run and one stalls (stopped
/// by SIGSTOP). The run still ends within its length and the stall's timeout, names
/// the three, and with --partial merges the survivors exactly as `stampede merge`
/// of their own results does.
#[test]
fn a_fleet_with_a_dead_a_stalled_and_an_absent_segment_ends_on_time() {
    let Some(mut rig) = Rig::build(false) else {
        return;
    };
    let (server_ns, hosts, dir) = (rig.server_ns.clone(), rig.hosts.clone(), rig.dir.clone());
    let port = 8080;
    rig.serve(port);
    // Segments 1–15 on the four hosts in turn; segment 16 on an address nobody has.
    let mut list: Vec<String> = (0..15).map(|i| hosts[i % CLIENTS].clone()).collect();
    list.push("10.77.9.9".into());
    let parts = dir.join("parts");
    let merged = dir.join("merged.json");
    let live = dir.join("live.jsonl");
    let started = std::time::Instant::now();
    let child = Command::new("ip")
        .args([
            "netns",
            "exec",
            &server_ns,
            env!("CARGO_BIN_EXE_stampede"),
            "ssh",
        ])
        .args([
            "--hosts",
            &list.join(","),
            "--start-in",
            "8s",
            "--stall-after",
            "3s",
        ])
        .args(rig.ssh_options().iter().flat_map(|o| ["-o", o.as_str()]))
        .args([
            "--remote-stampede",
            env!("CARGO_BIN_EXE_stampede"),
            "--partial",
        ])
        .arg("--parts")
        .arg(&parts)
        .arg("--json")
        .arg(&merged)
        .arg("--live-log")
        .arg(&live)
        .args(["--", "load", "--rate", "1600", "-d", "6s", "-c", "32"])
        .arg(format!("http://{SERVER_ADDR}:{port}/pong"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once the fleet has shown a second, segment 5 dies and segment 9 stops.
    crate::common::eventually("the fleet's first second", Duration::from_secs(20), || {
        std::fs::read_to_string(&live)
            .ok()
            .filter(|l| !l.is_empty())
            .map(drop)
    });
    let signal = |sig: &str, seg: &str| {
        Command::new("pkill")
            .args([sig, "-f", &format!("segment {seg} --fleet")])
            .status()
            .unwrap()
    };
    assert!(signal("-KILL", "5/16").success());
    assert!(signal("-STOP", "9/16").success());
    let out = child.wait_with_output().unwrap();
    let took = started.elapsed();
    let _ = signal("-KILL", "9/16");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // 8 s at most to be ready (the absent host fails at once), 6 s of run, 3 s of
    // stall: within the run's length and 15 s.
    assert!(
        took < Duration::from_secs(6 + 15),
        "{took:?}
{err}"
    );
    let m: serde_json::Value = serde_json::from_slice(&std::fs::read(&merged).unwrap()).unwrap();
    let fleet = &m["fleet"];
    assert_eq!(
        (fleet["segments"].as_u64(), fleet["merged"].as_u64()),
        (Some(16), Some(13)),
        "{fleet:#}"
    );
    let missing: Vec<(String, String)> = (fleet["missing"].as_array().unwrap().iter())
        .map(|x| {
            (
                x["segment"].as_str().unwrap().to_string(),
                x["why"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let why = |seg: &str| {
        missing
            .iter()
            .find(|(s, _)| s == seg)
            .map(|(_, w)| w.clone())
            .unwrap_or_else(|| panic!("{seg} not named: {missing:?}"))
    };
    assert!(why("16/16").contains("before it was ready"), "{missing:?}");
    assert!(why("9/16").starts_with("stalled"), "{missing:?}");
    assert!(
        why("5/16").contains("exited") || why("5/16").contains("signal"),
        "{missing:?}"
    );
    for seg in ["5/16", "9/16", "16/16"] {
        assert!(err.contains(&format!("segment {seg} on ")), "{err}");
    }
    // The survivors' own results, merged by `stampede merge`, are the fleet's.
    let files: Vec<String> = (std::fs::read_dir(&parts).unwrap())
        .map(|e| e.unwrap().path().to_string_lossy().into_owned())
        .collect();
    assert_eq!(files.len(), 13);
    let again = dir.join("again.json");
    let out = Command::new(env!("CARGO_BIN_EXE_stampede"))
        .arg("merge")
        .args(&files)
        .arg("--json")
        .arg(&again)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let a: serde_json::Value = serde_json::from_slice(&std::fs::read(&again).unwrap()).unwrap();
    for k in ["requests", "latency", "histograms", "intervals", "open"] {
        assert_eq!(a[k], m[k], "{k}");
    }
    valid(&m);
    drop(rig);
}

#[test]
fn a_bench_starts_its_target_on_a_host_and_loads_it_from_four() {
    let Some(rig) = Rig::build(true) else {
        return;
    };
    let stampede = env!("CARGO_BIN_EXE_stampede");
    let options: Vec<String> = rig.ssh_options().iter().map(|o| format!("{o:?}")).collect();
    let hosts: Vec<String> = rig.hosts.iter().map(|h| format!("{h:?}")).collect();
    let plan = rig.dir.join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            "name = \"rig\"\n\
             [runs]\nwarmup = 0\nrepetitions = 1\n\
             [client]\nhosts = [{}]\nthreads = 1\n\
             [ssh]\noptions = [{}]\nstampede = {stampede:?}\n\
             [[target]]\nname = \"remote\"\nhost = \"{SERVER_ADDR}\"\nport = 8081\n\
             start = \"{{stampede}} serve --threads 1 --listen {SERVER_ADDR}:{{port}}\"\n\
             version = \"{{stampede}} --version\"\n\
             [[scenario]]\nname = \"open\"\npath = \"/pong\"\nrate = 1000\nduration = \"2s\"\nconnections = 8\n\
             verify = {{ status = 200, body = \"PONG\" }}\n",
            hosts.join(", "),
            options.join(", ")
        ),
    )
    .unwrap();
    let summary = rig.dir.join("summary.json");
    let out = Command::new("ip")
        .args(["netns", "exec", &rig.server_ns, stampede, "bench"])
        .arg(&plan)
        .arg("--db")
        .arg(rig.dir.join("s.db"))
        .arg("--json")
        .arg(&summary)
        .arg("--report")
        .arg(rig.dir.join("report.md"))
        .arg("-q")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let s: serde_json::Value = serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
    // The version command ran on the host; the target was stopped there and said so.
    let version = s["environment"]["targets"]["remote"]["version"]
        .as_str()
        .unwrap();
    assert!(version.starts_with("stampede "), "{s:#}");
    assert_eq!(
        s["targets"][0]["status"],
        "stopped: killed by signal 15 (ended by SIGTERM, which it does not catch: a normal stop)",
        "{s:#}"
    );
    // The run is the merge of the client hosts' segments (this process generated no
    // load: no client CPU of its own), and the target was sampled on its host.
    let cell = &s["rows"][0]["cells"][0];
    let completed = cell["completed"].as_u64().unwrap();
    assert!((1990..=2000).contains(&completed), "{cell:#}");
    assert!(cell["client_cpu_us_per_req"].is_null(), "{cell:#}");
    assert!(
        cell["target_peak_rss_kb"].as_u64().unwrap() > 1000,
        "{cell:#}"
    );
    // Nothing of the target is left on its host: its port closes once the remote
    // script has stopped it.
    crate::common::eventually(
        "the target stops listening after the bench",
        Duration::from_secs(5),
        || {
            let open = Command::new("ip")
                .args(["netns", "exec", &rig.server_ns, "bash", "-c"])
                .arg(format!("exec 3<>/dev/tcp/{SERVER_ADDR}/8081"))
                .stderr(Stdio::null())
                .status()
                .unwrap();
            (!open.success()).then_some(())
        },
    );
    drop(rig);
}

/// `--abort-on` judged on the fleet's merged seconds: a condition no run meets stops
/// all four hosts after the first second of a 20 s run, and the result says which
/// condition stopped it, and when.
#[test]
fn an_abort_on_condition_stops_the_whole_fleet() {
    let Some(mut rig) = Rig::build(false) else {
        return;
    };
    let (server_ns, hosts, dir) = (rig.server_ns.clone(), rig.hosts.clone(), rig.dir.clone());
    let port = 8080;
    rig.serve(port);
    let merged = dir.join("merged.json");
    let started = std::time::Instant::now();
    let out = Command::new("ip")
        .args([
            "netns",
            "exec",
            &server_ns,
            env!("CARGO_BIN_EXE_stampede"),
            "ssh",
        ])
        .args(["--hosts", &hosts.join(","), "--abort-on", "p99 < 1us"])
        .args(rig.ssh_options().iter().flat_map(|o| ["-o", o.as_str()]))
        .args(["--remote-stampede", env!("CARGO_BIN_EXE_stampede")])
        .arg("--json")
        .arg(&merged)
        .args(["--", "load", "--rate", "400", "-d", "20s", "-c", "8"])
        .arg(format!("http://{SERVER_ADDR}:{port}/pong"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("stopped by --abort-on \"p99 < 1us\" after 1 s"),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(12), "{err}");
    let m: serde_json::Value = serde_json::from_slice(&std::fs::read(&merged).unwrap()).unwrap();
    let stop = &m["fleet"]["stopped_by"];
    assert_eq!(stop["condition"], "p99 < 1us", "{m:#}");
    assert_eq!(stop["at_s"], 1.0);
    assert!(stop["actual"].as_str().unwrap().ends_with(" ms"), "{stop}");
    assert_eq!(m["fleet"]["merged"], 4);
    assert!(m["duration_s"].as_f64().unwrap() < 8.0, "{m:#}");
    valid(&m);
    drop(rig);
}

/// Checks a result against the published schema.
fn valid(m: &serde_json::Value) {
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../../schema/run-result.v1.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(m).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
}
