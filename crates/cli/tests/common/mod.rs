//! What the CLI's end-to-end tests share: the reference server in-process on
//! 127.0.0.1:0, finding a headless browser, and what a test does when a peer tool is
//! missing.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::process::Command;
use std::thread::JoinHandle;

use stampede_server::{Config, Server, Shutdown};

/// The reference server on 127.0.0.1:0, one thread; stopped when dropped.
pub struct Srv {
    pub addr: SocketAddr,
    shutdown: Shutdown,
    handle: Option<JoinHandle<std::io::Result<()>>>,
}

impl Srv {
    pub fn start() -> Srv {
        Srv::with(Config {
            threads: 1,
            ..Config::default()
        })
    }

    /// The reference server with this configuration, on 127.0.0.1:0.
    pub fn with(config: Config) -> Srv {
        let server = Server::bind(&["127.0.0.1:0".parse().unwrap()], config).unwrap();
        let addr = server.local_addrs()[0];
        let shutdown = Shutdown::new();
        let s = shutdown.clone();
        Srv {
            addr,
            shutdown,
            handle: Some(std::thread::spawn(move || server.run(s))),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for Srv {
    fn drop(&mut self) {
        self.shutdown.trigger();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
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
