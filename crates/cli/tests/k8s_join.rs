//! `stampede k8s --apply --listen`: the pods join this process instead of leaving their
//! results in their logs. A stand-in `kubectl` plays the cluster: `apply` starts each
//! pod's command as a process with its completion index and the token from the
//! manifest's Secret (the one it reads from its environment in a real pod), `get pods`
//! reports each one's phase from how it ended. One pod's image fails at once: the
//! watch sees it and the run does not wait out the ready time for it.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::time::{Duration, Instant};

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Secret;

/// The pods' processes, killed when the test ends however it ends.
struct Pods(std::path::PathBuf);

impl Drop for Pods {
    fn drop(&mut self) {
        for k in 0..3 {
            if let Ok(pid) = std::fs::read_to_string(self.0.join(format!("pod-{k}.pid"))) {
                let _ = Command::new("kill").arg(pid.trim()).status();
            }
        }
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The stand-in kubectl (Python): calls recorded; `apply` saves the manifest and
/// starts the pods (index `fail` exits 3 at once, as a broken image would); `get pods`
/// lists them by how their processes ended; `delete` is recorded only.
fn kubectl(dir: &std::path::Path, fail: u32) -> String {
    format!(
        r#"#!/usr/bin/env python3
import json, os, subprocess, sys
d = {dir:?}
args = sys.argv[1:]
with open(os.path.join(d, "calls"), "a") as f:
    f.write(" ".join(args) + "\n")
if args[0] == "apply":
    m = json.load(sys.stdin)
    json.dump(m, open(os.path.join(d, "applied.json"), "w"))
    items = m["items"] if m.get("kind") == "List" else [m]
    token = next(i["stringData"]["token"] for i in items if i["kind"] == "Secret")
    job = next(i for i in items if i["kind"] == "Job")
    c = job["spec"]["template"]["spec"]["containers"][0]
    for k in range(job["spec"]["completions"]):
        env = dict(os.environ, JOB_COMPLETION_INDEX=str(k))
        env[c["env"][0]["name"]] = token
        words = [{stampede:?}] + c["args"] if k != {fail} else ["sh", "-c", "exit 3"]
        ended = os.path.join(d, f"pod-{{k}}.exit")
        log = open(os.path.join(d, f"pod-{{k}}.log"), "w")
        p = subprocess.Popen(["sh", "-c", '"$@"; echo $? > ' + ended, "pod"] + words,
                             env=env, stdout=log, stderr=log, start_new_session=True)
        open(os.path.join(d, f"pod-{{k}}.pid"), "w").write(str(p.pid))
elif args[0] == "get":
    items = []
    k = 0
    while os.path.exists(os.path.join(d, f"pod-{{k}}.pid")):
        ended = os.path.join(d, f"pod-{{k}}.exit")
        status = {{"phase": "Running"}}
        if os.path.exists(ended) and open(ended).read().strip():
            code = int(open(ended).read())
            status = {{"phase": "Succeeded"}} if code == 0 else {{
                "phase": "Failed",
                "containerStatuses": [{{"state": {{"terminated": {{"reason": "Error", "exitCode": code}}}}}}]}}
        items.append({{"metadata": {{"name": f"stampede-{{k}}-x",
            "annotations": {{"batch.kubernetes.io/job-completion-index": str(k)}}}}, "status": status}})
        k += 1
    print(json.dumps({{"kind": "List", "items": items}}))
"#,
        dir = dir.display().to_string(),
        stampede = env!("CARGO_BIN_EXE_stampede"),
    )
}

#[test]
fn pods_join_this_process_and_a_failed_one_is_seen_at_once() {
    if Command::new("python3").arg("--version").output().is_err() {
        crate::common::missing_peer("python3");
        return;
    }
    let srv = crate::common::srv();
    let dir = std::env::temp_dir().join(format!("stampede-k8s-j-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let pods = Pods(dir.clone());
    let fake = dir.join("kubectl");
    std::fs::write(&fake, kubectl(&dir, 2)).unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (merged, live) = (dir.join("merged.json"), dir.join("live.jsonl"));
    let url = srv.url("/pong");
    let began = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_stampede"))
        .env(
            "PATH",
            format!("{}:{}", dir.display(), std::env::var("PATH").unwrap()),
        )
        .args(["k8s", "--segments", "3", "--image", "i", "--apply"])
        .args(["--listen", "127.0.0.1:0", "--partial", "--start-in", "60s"])
        .arg("--json")
        .arg(&merged)
        .arg("--live-log")
        .arg(&live)
        .args(["--", "load", "--rate", "300", "-d", "2s", "-c", "3", &url])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // The failed pod was seen by the watch, long before the 60 s ready time.
    assert!(began.elapsed() < Duration::from_secs(40), "{err}");
    assert!(
        err.contains(
            "segment 3/3 on stampede-2 is missing: pod stampede-2-x failed: Error (exit code 3)"
        ),
        "{err}"
    );
    // The manifest: a Secret with the token, the pods reading it from there and
    // joining this process's address.
    let applied: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("applied.json")).unwrap()).unwrap();
    let items = applied["items"].as_array().unwrap();
    let secret: Secret = serde_json::from_value(items[0].clone()).unwrap();
    assert_eq!(serde_json::to_value(&secret).unwrap(), items[0]);
    let token = &secret.string_data.as_ref().unwrap()["token"];
    assert_eq!(token.len(), 32);
    let job: Job = serde_json::from_value(items[1].clone()).unwrap();
    assert_eq!(serde_json::to_value(&job).unwrap(), items[1]);
    let c = &job.spec.unwrap().template.spec.unwrap().containers[0];
    let args = c.args.clone().unwrap();
    let at = |flag: &str| args[args.iter().position(|a| a == flag).unwrap() + 1].clone();
    assert!(at("--fleet-connect").starts_with("127.0.0.1:"), "{args:?}");
    assert!(!args.iter().any(|a| a == "--start-at"), "{args:?}");
    let env = &c.env.as_ref().unwrap()[0];
    assert_eq!(env.name, "STAMPEDE_FLEET_TOKEN");
    let key = env
        .value_from
        .as_ref()
        .unwrap()
        .secret_key_ref
        .as_ref()
        .unwrap();
    assert_eq!(
        (key.name.as_str(), key.key.as_str()),
        ("stampede-token", "token")
    );
    assert!(
        !items[1].to_string().contains(token.as_str()),
        "the Job holds no token"
    );
    // Two pods' results came over their connections (no log was read), merged: every
    // arrival of their two thirds of 600.
    let m: serde_json::Value = serde_json::from_slice(&std::fs::read(&merged).unwrap()).unwrap();
    let n = |k: &str| m["requests"][k].as_u64().unwrap();
    assert_eq!(
        n("started") + m["open"]["never_sent"].as_u64().unwrap(),
        400,
        "{m:#}"
    );
    assert_eq!(m["fleet"]["merged"], 2, "{m:#}");
    assert_eq!(m["fleet"]["missing"][0]["segment"], "3/3");
    let calls = std::fs::read_to_string(dir.join("calls")).unwrap();
    assert!(!calls.contains("logs"), "{calls}");
    assert!(
        calls.ends_with(
            "delete --ignore-not-found --wait=false job/stampede secret/stampede-token\n"
        ),
        "{calls}"
    );
    // The live view merged the two running pods each second.
    let lines = std::fs::read_to_string(&live).unwrap();
    let first: serde_json::Value = serde_json::from_str(lines.lines().next().unwrap()).unwrap();
    assert_eq!(first["segments"], 2, "{lines}");
    drop(pods);
}

#[test]
fn live_flags_without_a_channel_and_a_collector_without_its_token_are_refused() {
    let k8s = |extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_stampede"))
            .args(["k8s", "--segments", "2", "--image", "i"])
            .args(extra)
            .args(["--", "load", "http://a/"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    assert!(
        k8s(&["--abort-on", "p99 < 10ms"]).contains("--abort-on follows the pods' live figures")
    );
    assert!(k8s(&["--collect", "c:7411"]).contains("--collect: give --token-file"));
    let e = k8s(&["--apply", "--listen", "0.0.0.0:0"]);
    assert!(e.contains("give --collect HOST:"), "{e}");
}
