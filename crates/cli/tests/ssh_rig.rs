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
        let tag = if server_sshd { "l" } else { "s" };
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
    rig.children.push(
        Command::new("ip")
            .args([
                "netns",
                "exec",
                &server_ns,
                env!("CARGO_BIN_EXE_stampede"),
                "serve",
            ])
            .args([
                "--threads",
                "1",
                "--listen",
                &format!("{SERVER_ADDR}:{port}"),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_tcp(&server_ns, SERVER_ADDR, port);
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
        .args(["--json", merged.to_str().unwrap(), "--"])
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
