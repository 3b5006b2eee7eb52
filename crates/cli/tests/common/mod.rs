//! What the CLI's end-to-end tests share: the reference server in-process on
//! 127.0.0.1:0 (the one harness, [`stampede_server::Running`]), finding a headless
//! browser, and what a test does when a peer tool is missing.
#![allow(dead_code)]

pub mod recorder;

use std::process::Command;

use stampede_server::{Config, Running};

/// The reference server on 127.0.0.1:0, one thread; stopped when dropped.
pub fn srv() -> Running {
    srv_with(Config {
        threads: 1,
        ..Config::default()
    })
}

/// The reference server with this configuration, on 127.0.0.1:0.
pub fn srv_with(config: Config) -> Running {
    Running::local(config).unwrap()
}

/// Headless Chromium's flags for a quiet, offline, throw-away browser (add
/// `--user-data-dir` with a new directory).
pub const HEADLESS: [&str; 6] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
];

/// Chromium (or Chrome) when installed.
pub fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|c| {
            Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

/// A peer tool (`what`) is not installed: the test passes without it, unless
/// STAMPEDE_REQUIRE_PEERS is set (as in CI), where that is a failure.
pub fn missing_peer(what: &str) {
    assert!(
        std::env::var_os("STAMPEDE_REQUIRE_PEERS").is_none(),
        "{what} is required (STAMPEDE_REQUIRE_PEERS is set)"
    );
    // Straight to the process's standard error, past the test harness's capture, so
    // that the skip shows in `cargo test`'s output beside the "ok".
    use std::io::Write;
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test}: {what} is not installed; its checks did not run (CI sets STAMPEDE_REQUIRE_PEERS=1 and requires it)"
    );
}

/// A Python that imports every module of `modules`: the one `var` names, else the
/// `python3` on `PATH` where it has them (a peer found where it is installed). `None`
/// after saying, as [`missing_peer`] does, the exact command or variable that would
/// enable the test (`pip` names the packages, `needs` what they are).
pub fn python_with(var: &str, modules: &[&str], pip: &str) -> Option<String> {
    let imports = |python: &str| {
        std::process::Command::new(python)
            .args(["-c", &format!("import {}", modules.join(", "))])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if let Ok(python) = std::env::var(var) {
        if imports(&python) {
            return Some(python);
        }
        missing_peer(&format!(
            "{var}={python}, which cannot import {}: `{python} -m pip install {pip}`,",
            modules.join(", ")
        ));
        return None;
    }
    if imports("python3") {
        return Some("python3".to_string());
    }
    missing_peer(&format!(
        "a Python with {} (`python3 -m pip install {pip}`, or {var}=PYTHON naming one that has them)",
        modules.join(", ")
    ));
    None
}

pub use stampede_testing::{eventually, poll};

/// Waits for a `stampede serve` child to say it is listening (its first line on
/// standard error, which must be piped), and hands that line back; what the child
/// writes after it is drained in the background so that it never blocks.
pub fn listening(child: &mut std::process::Child) -> String {
    use std::io::BufRead;
    let err = child.stderr.take().expect("the child's stderr is piped");
    let mut lines = std::io::BufReader::new(err).lines();
    let first = lines
        .next()
        .expect("the server said nothing")
        .expect("its stderr reads");
    assert!(first.contains("listening on"), "{first}");
    std::thread::spawn(move || lines.for_each(drop));
    first
}

/// Starts a Python peer `script` serving with `args`, its standard input piped (it
/// serves until that closes) and its first line of output the port it listens on
/// (127.0.0.1): the child and that port.
pub fn python_server(python: &str, script: &str, args: &[&str]) -> (std::process::Child, String) {
    use std::process::{Command, Stdio};
    let mut server = Command::new(python)
        .arg(script)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        // It logs the connections a run's end cut short.
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(server.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    (server, line.trim().to_string())
}

/// What the committed result schema finds wrong with `value` (nothing: empty).
pub fn schema_errors(value: &serde_json::Value) -> Vec<String> {
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../../../schema/run-result.v1.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    validator
        .iter_errors(value)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect()
}

/// A `stampede serve` process, killed when dropped (a failing test leaves none).
pub struct Serving(std::process::Child);

impl Serving {
    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `stampede serve` as a process on 127.0.0.1:0 with `args`; returns it and the URL
/// it reports listening on.
pub fn serve(args: &[&str]) -> (Serving, String) {
    use std::io::{BufRead, BufReader};
    let mut child = Command::new(env!("CARGO_BIN_EXE_stampede"))
        .args(
            [
                &["serve", "--listen", "127.0.0.1:0", "--threads", "1"],
                args,
            ]
            .concat(),
        )
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .to_string();
    (Serving(child), url)
}
