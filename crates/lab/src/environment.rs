//! The machine and settings a bench ran on, recorded next to every number.
//!
//! Everything here changes results: the CPU and its count, memory, kernel and OS, the
//! clock source, descriptor and port limits, TCP settings, and the CPU pinning of the
//! load generator and the targets.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A snapshot of the environment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// CPU model name.
    pub cpu: String,
    /// Logical CPUs online.
    pub cores: usize,
    /// Total memory, KiB.
    pub memory_kb: u64,
    /// Kernel release.
    pub kernel: String,
    /// OS name.
    pub os: String,
    /// Host name.
    pub hostname: String,
    /// stampede's version.
    pub stampede: String,
    /// Git commit of the working directory, if it is a repository.
    pub git_commit: Option<String>,
    /// Kernel and process settings that change results.
    pub settings: BTreeMap<String, String>,
    /// CPUs the load generator is pinned to (empty: not pinned).
    pub client_cpus: Vec<usize>,
    /// Versions and pinning of the targets, filled in as they start.
    pub targets: BTreeMap<String, TargetEnv>,
}

/// What is recorded of a target.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TargetEnv {
    /// Output of its version command.
    pub version: Option<String>,
    /// The command it was started with.
    pub command: Option<String>,
    /// CPUs it was pinned to.
    pub cpus: Vec<usize>,
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

impl Environment {
    /// Captures the environment now.
    pub fn capture(client_cpus: &[usize]) -> Environment {
        let cpu = read("/proc/cpuinfo")
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split(':').nth(1))
                    .map(|x| x.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        let memory_kb = read("/proc/meminfo")
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("MemTotal:"))
                    .and_then(|l| l.split_whitespace().nth(1))
                    .and_then(|v| v.parse().ok())
            })
            .unwrap_or(0);
        let os = read("/etc/os-release")
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("PRETTY_NAME="))
                    .map(|l| l[12..].trim_matches('"').to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        let git_commit = std::process::Command::new("git")
            .args(["rev-parse", "--short", "HEAD"])
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
        let mut settings = BTreeMap::new();
        // SAFETY: getrlimit fills the struct we pass.
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes only into the struct we pass; on failure it stays 0.
        unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
        settings.insert("ulimit_nofile".into(), lim.rlim_cur.to_string());
        for (k, p) in [
            ("somaxconn", "/proc/sys/net/core/somaxconn"),
            (
                "ip_local_port_range",
                "/proc/sys/net/ipv4/ip_local_port_range",
            ),
            ("tcp_tw_reuse", "/proc/sys/net/ipv4/tcp_tw_reuse"),
            (
                "tcp_max_syn_backlog",
                "/proc/sys/net/ipv4/tcp_max_syn_backlog",
            ),
            (
                "clocksource",
                "/sys/devices/system/clocksource/clocksource0/current_clocksource",
            ),
            (
                "cpu_governor",
                "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
            ),
        ] {
            if let Some(v) = read(p) {
                settings.insert(k.into(), v.split_whitespace().collect::<Vec<_>>().join(" "));
            }
        }
        Environment {
            cpu,
            cores: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            memory_kb,
            kernel: read("/proc/sys/kernel/osrelease").unwrap_or_default(),
            os,
            hostname: read("/proc/sys/kernel/hostname").unwrap_or_default(),
            stampede: env!("CARGO_PKG_VERSION").into(),
            git_commit,
            settings,
            client_cpus: client_cpus.to_vec(),
            targets: BTreeMap::new(),
        }
    }

    /// One line for reports.
    pub fn one_line(&self) -> String {
        format!(
            "{} ({} cores), {:.1} GiB, kernel {}, {}, stampede {}{}",
            self.cpu,
            self.cores,
            self.memory_kb as f64 / 1024.0 / 1024.0,
            self.kernel,
            self.os,
            self.stampede,
            self.git_commit
                .as_ref()
                .map(|c| format!(" ({c})"))
                .unwrap_or_default()
        )
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn captures_this_machine() {
        let e = super::Environment::capture(&[0]);
        assert!(e.cores >= 1);
        assert!(e.memory_kb > 0);
        assert!(!e.kernel.is_empty());
        assert!(e.settings.contains_key("ulimit_nofile"));
        assert!(e.one_line().contains("cores"));
    }
}
