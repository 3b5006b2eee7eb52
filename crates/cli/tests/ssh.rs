//! `stampede ssh`: segments on several hosts, through a stand-in `ssh` that runs the
//! remote command here (as sshd would on the host) — every segment is a real run
//! against the reference server — fails for a host named `down` and never answers
//! for one named `stuck`.

use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Output};

fn with_fake_ssh(dir: &std::path::Path, args: &[&str]) -> Output {
    let script = "#!/bin/sh\n\
        while [ \"$1\" = -o ]; do shift 2; done\n\
        [ \"$1\" = -- ] && shift\n\
        host=$1; shift\n\
        [ \"$host\" = stuck ] && exec sleep 600\n\
        echo \"$host $*\" >> \"$(dirname \"$0\")/calls\"\n\
        [ \"$host\" = down ] && { echo 'ssh: connect to host down: No route to host' >&2; exit 255; }\n\
        exec sh -c \"$*\"\n";
    let ssh = dir.join("ssh");
    std::fs::write(&ssh, script).unwrap();
    std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new(env!("CARGO_BIN_EXE_stampede"))
        .args(args)
        .env("PATH", path)
        .output()
        .unwrap()
}

#[test]
fn three_hosts_run_one_segment_each_and_merge() {
    let srv = crate::common::srv();
    let dir = std::env::temp_dir().join(format!("stampede-ssh-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let merged = dir.join("merged.json");
    let url = srv.url("/pong");
    let out = with_fake_ssh(
        &dir,
        &[
            "ssh",
            "--hosts",
            "a,b,c",
            "--start-in",
            "1s",
            "-o",
            "Port=2222",
            "--remote-stampede",
            env!("CARGO_BIN_EXE_stampede"),
            "--json",
            merged.to_str().unwrap(),
            "--",
            "load",
            "--rate",
            "600",
            "-d",
            "1s",
            "-c",
            "3",
            &url,
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let calls = std::fs::read_to_string(dir.join("calls")).unwrap();
    for (k, host) in ["a", "b", "c"].iter().enumerate() {
        let line = calls
            .lines()
            .find(|l| l.starts_with(&format!("{host} ")))
            .unwrap();
        assert!(line.contains(&format!("--segment {}/3", k + 1)), "{line}");
        assert!(line.contains("--json -"), "{line}");
    }
    let m: serde_json::Value = serde_json::from_slice(&std::fs::read(&merged).unwrap()).unwrap();
    // Every arrival of the run, each in one segment: one due in a segment's last
    // moments may still be in flight (abandoned) or unsent at its end, never counted
    // twice.
    let count = |v: &serde_json::Value| v.as_u64().unwrap();
    let done = count(&m["requests"]["completed"]);
    let late = count(&m["requests"]["abandoned"]) + count(&m["open"]["never_sent"]);
    assert!(done + late == 600 && done >= 600 - 6, "{m:#}");
    assert_eq!(m["origin"]["parts"].as_array().unwrap().len(), 3);
    assert_eq!(m["origin"]["shared_start"], true);
    // A host that fails is named; the rest are merged only when asked.
    let _ = std::fs::remove_file(dir.join("calls"));
    let args = |partial: bool| {
        let mut v = vec![
            "ssh",
            "--hosts",
            "a,down",
            "--start-in",
            "1s",
            "--remote-stampede",
            env!("CARGO_BIN_EXE_stampede"),
        ];
        if partial {
            v.push("--partial");
        }
        v.extend(["--", "load", "--rate", "200", "-d", "1s", "-c", "2", &url]);
        v.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let strict = args(false);
    let strict: Vec<&str> = strict.iter().map(String::as_str).collect();
    let out = with_fake_ssh(&dir, &strict);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(
            "segment 2/2 on down is missing: ended before it was ready: ssh: connect to host down: No route to host"
        ) && err.contains("--partial"),
        "{err}"
    );
    let partial = args(true);
    let partial: Vec<&str> = partial.iter().map(String::as_str).collect();
    let out = with_fake_ssh(&dir, &partial);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("merged 1 of 2 segments; missing: down"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_dialects_command_runs_on_every_host_and_reports_as_the_tool() {
    let srv = crate::common::srv();
    let dir = std::env::temp_dir().join(format!("stampede-ssh-d-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let url = srv.url("/pong");
    for (command, says) in [
        (
            vec!["h2load", "-n", "300", "-c", "3", "--h1", url.as_str()],
            "requests: 300 total, 300 started, 300 done, 300 succeeded",
        ),
        (
            vec!["ab", "-n", "300", "-c", "3", url.as_str()],
            "Complete requests:      300",
        ),
    ] {
        let mut args = vec![
            "ssh",
            "--hosts",
            "a,b",
            "--start-in",
            "1s",
            "--remote-stampede",
            env!("CARGO_BIN_EXE_stampede"),
            "--",
        ];
        args.extend(command.iter().copied());
        let out = with_fake_ssh(&dir, &args);
        let report = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(report.contains(says), "{command:?}: {report}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_stuck_host_is_stopped_at_the_deadline_and_a_host_that_is_an_option_is_refused() {
    let srv = crate::common::srv();
    let dir = std::env::temp_dir().join(format!("stampede-ssh-s-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let url = srv.url("/pong");
    let start = std::time::Instant::now();
    let out = with_fake_ssh(
        &dir,
        &[
            "ssh",
            "--hosts",
            "a,stuck",
            "--start-in",
            "500ms",
            "--deadline",
            "2s",
            "--remote-stampede",
            env!("CARGO_BIN_EXE_stampede"),
            "--partial",
            "--",
            "load",
            "-n",
            "20",
            "-c",
            "1",
            &url,
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        start.elapsed() < std::time::Duration::from_secs(60),
        "{err}"
    );
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("segment 2/2 on stuck is missing: not ready within 0.5 s"),
        "{err}"
    );
    assert!(err.contains("merged 1 of 2 segments"), "{err}");
    // A host that ssh would read as an option never reaches it.
    let out = with_fake_ssh(
        &dir,
        &[
            "ssh",
            "--hosts=a,-oProxyCommand=touch /tmp/x",
            "--",
            "load",
            "-n",
            "1",
            &url,
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("begins with '-'"), "{err}");
    assert!(!std::fs::read_to_string(dir.join("calls"))
        .unwrap_or_default()
        .contains("ProxyCommand"));
    let _ = std::fs::remove_dir_all(&dir);
}
