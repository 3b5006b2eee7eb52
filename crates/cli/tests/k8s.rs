//! `stampede k8s`: the Indexed Job manifest, checked against the Kubernetes API types,
//! and the `--apply` flow against a stand-in `kubectl` that plays a cluster whose pods
//! ran real segments against the reference server.

use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Output};

use k8s_openapi::api::batch::v1::Job;

fn stampede_with_path(args: &[&str], path: Option<&str>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_stampede"));
    c.args(args);
    if let Some(p) = path {
        let old = std::env::var("PATH").unwrap_or_default();
        c.env("PATH", format!("{p}:{old}"));
    }
    c.output().unwrap()
}

/// `kubectl get pods -o json` of a Job's pods: (name, index, phase, reason, message).
fn pods_json(pods: &[(&str, u32, &str, &str, &str)]) -> String {
    let items: Vec<serde_json::Value> = pods
        .iter()
        .map(|(name, index, phase, reason, message)| {
            let mut status = serde_json::json!({ "phase": phase });
            if !reason.is_empty() {
                status["reason"] = serde_json::json!(reason);
                status["message"] = serde_json::json!(message);
            }
            serde_json::json!({
                "metadata": {
                    "name": name,
                    "annotations": { "batch.kubernetes.io/job-completion-index": index.to_string() },
                },
                "status": status,
            })
        })
        .collect();
    serde_json::json!({ "kind": "List", "items": items }).to_string()
}

#[test]
fn the_manifest_is_an_indexed_job_of_the_kubernetes_api() {
    let out = stampede_with_path(
        &[
            "k8s",
            "--segments",
            "4",
            "--image",
            "registry.test/stampede:1",
            "--name",
            "load-a",
            "--namespace",
            "perf",
            "--cpu",
            "2",
            "--memory",
            "512Mi",
            "--",
            "load",
            "--rate",
            "50000",
            "-d",
            "60s",
            "-c",
            "256",
            "http://svc.perf:8080/pong",
        ],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let raw: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // The API types read every field: written back, nothing is lost or renamed.
    let job: Job = serde_json::from_value(raw.clone()).unwrap();
    assert_eq!(serde_json::to_value(&job).unwrap(), raw);
    let spec = job.spec.unwrap();
    assert_eq!(spec.completion_mode.as_deref(), Some("Indexed"));
    assert_eq!((spec.completions, spec.parallelism), (Some(4), Some(4)));
    let pod = spec.template.spec.unwrap();
    assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
    assert_eq!(
        pod.topology_spread_constraints.unwrap()[0].topology_key,
        "kubernetes.io/hostname"
    );
    let c = &pod.containers[0];
    let args = c.args.clone().unwrap();
    let at = |flag: &str| args[args.iter().position(|a| a == flag).unwrap() + 1].clone();
    assert_eq!(at("--segment"), "env:JOB_COMPLETION_INDEX/4");
    assert_eq!(at("--json"), "-");
    assert!(at("--start-at").parse::<f64>().is_ok());
    assert_eq!(job.metadata.namespace.as_deref(), Some("perf"));
}

#[test]
fn bad_jobs_say_why() {
    for (args, says) in [
        (
            &["--segments", "0", "--image", "i", "--", "load", "http://a/"][..],
            "at least 1",
        ),
        (
            &[
                "--segments",
                "2",
                "--image",
                "i",
                "--name",
                "No",
                "--",
                "load",
                "http://a/",
            ],
            "Job name",
        ),
        (
            &["--segments", "2", "--image", "i", "--", "curl", "http://a/"],
            "is not one of load, ab, wrk, httperf, h2load",
        ),
        (
            &[
                "--segments",
                "2",
                "--image",
                "i",
                "--",
                "load",
                "--segment",
                "1/2",
                "http://a/",
            ],
            "leave out --segment",
        ),
    ] {
        let mut all = vec!["k8s"];
        all.extend_from_slice(args);
        let out = stampede_with_path(&all, None);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn apply_collects_every_pods_result_and_merges_them() {
    let srv = crate::common::srv();
    let dir = std::env::temp_dir().join(format!("stampede-k8s-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // The command every pod runs: one wrk2 run.
    let url = srv.url("/pong");
    let wrk = [
        "wrk",
        "-R",
        "400",
        "-d",
        "1s",
        "-c",
        "2",
        "-t",
        "1",
        url.as_str(),
    ];
    // What two pods would have logged: two real segments of that run, each its report
    // (standard error, with `--json -`) and then its result, as a pod's log holds both
    // streams.
    for k in 0..2 {
        let out = Command::new(env!("CARGO_BIN_EXE_stampede"))
            .env("JOB_COMPLETION_INDEX", k.to_string())
            .args(wrk)
            .args(["--segment", "env:JOB_COMPLETION_INDEX/2", "--json", "-"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report = String::from_utf8_lossy(&out.stderr);
        assert!(report.contains("Requests/sec:"), "{report}");
        assert!(
            out.stdout.starts_with(b"{"),
            "standard output is the JSON alone"
        );
        let mut log = out.stderr.clone();
        log.extend_from_slice(&out.stdout);
        std::fs::write(dir.join(format!("pod-{k}.log")), &log).unwrap();
        std::fs::write(dir.join(format!("pod-{k}.json")), &out.stdout).unwrap();
    }
    // A stand-in kubectl: records its calls, lists the two pods, logs their results.
    let calls = dir.join("calls");
    std::fs::write(
        dir.join("pods.json"),
        pods_json(&[
            ("pod-0", 0, "Succeeded", "", ""),
            ("pod-1", 1, "Succeeded", "", ""),
        ]),
    )
    .unwrap();
    let script = format!(
        "#!/bin/sh\necho \"$@\" >> {calls}\ncase \"$1\" in\n  apply) cat > {dir}/applied.json ;;\n  get) cat {dir}/pods.json ;;\n  logs) cat {dir}/$2.log ;;\nesac\n",
        calls = calls.display(),
        dir = dir.display()
    );
    let kubectl = dir.join("kubectl");
    std::fs::write(&kubectl, script).unwrap();
    std::fs::set_permissions(&kubectl, std::fs::Permissions::from_mode(0o755)).unwrap();
    let merged = dir.join("merged.json");
    let mut args = vec![
        "k8s",
        "--segments",
        "2",
        "--image",
        "i",
        "--apply",
        "--start-in",
        "1s",
        "--json",
        merged.to_str().unwrap(),
        "--",
    ];
    args.extend(wrk);
    let out = stampede_with_path(&args, dir.to_str());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The merged result is reported as wrk reports.
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report.contains("Requests/sec:") && report.contains("Thread Stats"),
        "{report}"
    );
    let calls = std::fs::read_to_string(&calls).unwrap();
    assert!(
        calls.starts_with("apply -f -\nget pods -l stampede.run/job=stampede -o json\n"),
        "{calls}"
    );
    assert!(
        calls.ends_with("delete --ignore-not-found --wait=false job/stampede\n"),
        "the Job is deleted after the run: {calls}"
    );
    assert!(
        calls.contains("logs pod-0") && calls.contains("logs pod-1"),
        "{calls}"
    );
    let applied: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("applied.json")).unwrap()).unwrap();
    assert_eq!(applied["kind"], "Job");
    let m: serde_json::Value = serde_json::from_slice(&std::fs::read(&merged).unwrap()).unwrap();
    let parts: Vec<String> = (0..2)
        .map(|k| {
            let p: serde_json::Value =
                serde_json::from_slice(&std::fs::read(dir.join(format!("pod-{k}.json"))).unwrap())
                    .unwrap();
            p["origin"]["segment"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(parts, ["1/2", "2/2"]);
    // Every arrival of the run, each in one segment: one due in a segment's last
    // moments may still be in flight (abandoned) or unsent at its end, never counted
    // twice.
    let count = |v: &serde_json::Value| v.as_u64().unwrap();
    let done = count(&m["requests"]["completed"]);
    let late = count(&m["requests"]["abandoned"]) + count(&m["open"]["never_sent"]);
    assert!(done + late == 400 && done >= 400 - 6, "{m:#}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A command's input files travel in a ConfigMap the Job mounts, the command
/// rewritten to find them there and their digests annotated; one too large for a
/// ConfigMap is refused before anything is written.
#[test]
fn inputs_travel_in_a_config_map_the_pods_mount() {
    use k8s_openapi::api::core::v1::ConfigMap;
    let dir = std::env::temp_dir().join(format!("stampede-k8s-in-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let targets = dir.join("t.txt");
    std::fs::write(&targets, "GET http://svc:8080/a\nGET http://svc:8080/b\n").unwrap();
    let args = [
        "k8s",
        "--segments",
        "3",
        "--image",
        "i",
        "--name",
        "in-a",
        "--",
        "load",
        "--rate",
        "100",
        "-d",
        "5s",
        "--targets",
        targets.to_str().unwrap(),
    ];
    let out = stampede_with_path(&args, None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list["kind"], "List");
    let map: ConfigMap = serde_json::from_value(list["items"][0].clone()).unwrap();
    let job: Job = serde_json::from_value(list["items"][1].clone()).unwrap();
    assert_eq!(serde_json::to_value(&map).unwrap(), list["items"][0]);
    assert_eq!(serde_json::to_value(&job).unwrap(), list["items"][1]);
    assert_eq!(map.metadata.name.as_deref(), Some("in-a-inputs"));
    let data = map.binary_data.unwrap();
    assert_eq!(
        data["f1"].0,
        std::fs::read(&targets).unwrap(),
        "the bytes as read here"
    );
    let sums = &map.metadata.annotations.unwrap()["stampede.run/sha256sums"];
    assert!(sums.ends_with("  1-t.txt\n"), "{sums}");
    let pod = job.spec.unwrap().template.spec.unwrap();
    let volume = &pod.volumes.unwrap()[0];
    let items = volume.config_map.as_ref().unwrap().items.clone().unwrap();
    assert_eq!(
        (items[0].key.as_str(), items[0].path.as_str()),
        ("f1", "1-t.txt")
    );
    let c = &pod.containers[0];
    assert_eq!(
        c.volume_mounts.as_ref().unwrap()[0].mount_path,
        "/stampede/inputs"
    );
    let cargs = c.args.clone().unwrap();
    let at = cargs.iter().position(|a| a == "--targets").unwrap();
    assert_eq!(cargs[at + 1], "/stampede/inputs/1-t.txt");
    // Over a ConfigMap's size: refused, naming the file and what to do instead.
    std::fs::write(&targets, "x".repeat(1_100_000)).unwrap();
    let out = stampede_with_path(&args, None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--targets") && err.contains("in a ConfigMap (put larger inputs in the image"),
        "{err}"
    );
    // A file that is not there is named before anything is made.
    let out = stampede_with_path(
        &[
            "k8s",
            "--segments",
            "2",
            "--image",
            "i",
            "--",
            "oha",
            "-D",
            "/no/such",
            "http://a/",
        ],
        None,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("-D /no/such: ") && out.stdout.is_empty(),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Each dialect's command fanned out over two pods (their logs two real segments of
/// it, played by a stand-in `kubectl`) prints its own tool's report of the merged run.
#[test]
fn every_dialect_fans_out_and_reports_as_its_tool_does() {
    let srv = crate::common::srv();
    let dir = std::env::temp_dir().join(format!("stampede-k8s-d-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let url = srv.url("/pong");
    let targets = dir.join("t.txt");
    std::fs::write(&targets, format!("GET {url}\n")).unwrap();
    let base = srv.url("");
    let cases: [(&[&str], &[&str]); 4] = [
        (
            &["oha", "-n", "40", "-c", "2", "--no-tui", &url],
            &["Summary:", "Success rate:"],
        ),
        (
            &["hey", "-n", "40", "-c", "2", &url],
            &["Summary:", "Requests/sec:", "Latency distribution:"],
        ),
        (
            &[
                "vegeta",
                "attack",
                "-rate",
                "40/s",
                "-duration",
                "1s",
                "-targets",
                targets.to_str().unwrap(),
            ],
            &[
                "Requests      [total, rate, throughput]",
                "Status Codes  [code:count]",
            ],
        ),
        (
            &[
                "vllm",
                "bench",
                "serve",
                "--base-url",
                &base,
                "--model",
                "stampede-mock",
                "--num-prompts",
                "8",
                "--random-input-len",
                "10",
                "--random-output-len",
                "4",
                "--ready-check-timeout-sec",
                "0",
            ],
            &[
                "Serving Benchmark Result",
                "Successful requests:                     8",
            ],
        ),
    ];
    for (n, (command, says)) in cases.iter().enumerate() {
        let case = dir.join(format!("case{n}"));
        std::fs::create_dir_all(&case).unwrap();
        for k in 0..2 {
            let out = Command::new(env!("CARGO_BIN_EXE_stampede"))
                .args(*command)
                .args(["--segment", &format!("{}/2", k + 1), "--json", "-"])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{command:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            std::fs::write(case.join(format!("pod-{k}.log")), &out.stdout).unwrap();
        }
        std::fs::write(
            case.join("pods.json"),
            pods_json(&[
                ("pod-0", 0, "Succeeded", "", ""),
                ("pod-1", 1, "Succeeded", "", ""),
            ]),
        )
        .unwrap();
        let script = format!(
            "#!/bin/sh\ncase \"$1\" in\n  apply) cat > /dev/null ;;\n  get) cat {c}/pods.json ;;\n  logs) cat {c}/$2.log ;;\nesac\n",
            c = case.display()
        );
        let kubectl = case.join("kubectl");
        std::fs::write(&kubectl, script).unwrap();
        std::fs::set_permissions(&kubectl, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut args = vec![
            "k8s",
            "--segments",
            "2",
            "--image",
            "i",
            "--apply",
            "--start-in",
            "1s",
            "--",
        ];
        args.extend_from_slice(command);
        let out = stampede_with_path(&args, case.to_str());
        let report = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{command:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        for s in *says {
            assert!(report.contains(s), "{command:?} lacks {s:?}:\n{report}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A stand-in cluster of four pods: two ran real segments, one failed (its container
/// exited 1) and one was evicted. Without --partial the run fails at once, naming
/// them; with it the two are merged and the two named in the result; the Job is
/// deleted afterwards unless --keep.
#[test]
fn failed_and_evicted_pods_are_named_and_the_rest_merged_with_partial() {
    let srv = crate::common::srv();
    let dir = std::env::temp_dir().join(format!("stampede-k8s-f-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let url = srv.url("/pong");
    let command = ["load", "--rate", "200", "-d", "1s", "-c", "4", url.as_str()];
    for k in [0, 2] {
        let out = Command::new(env!("CARGO_BIN_EXE_stampede"))
            .args(command)
            .args(["--segment", &format!("{}/4", k + 1), "--json", "-"])
            .output()
            .unwrap();
        assert!(out.status.success());
        std::fs::write(dir.join(format!("pod-{k}.log")), &out.stdout).unwrap();
    }
    std::fs::write(
        dir.join("pods.json"),
        pods_json(&[
            ("pod-0", 0, "Succeeded", "", ""),
            ("pod-1", 1, "Failed", "", ""),
            ("pod-2", 2, "Succeeded", "", ""),
            (
                "pod-3",
                3,
                "Failed",
                "Evicted",
                "The node was low on resource: memory.",
            ),
        ]),
    )
    .unwrap();
    let calls = dir.join("calls");
    let script = format!(
        "#!/bin/sh\necho \"$@\" >> {calls}\ncase \"$1\" in\n  apply) cat > /dev/null ;;\n  get) cat {d}/pods.json ;;\n  logs) cat {d}/$2.log ;;\nesac\n",
        calls = calls.display(),
        d = dir.display()
    );
    let kubectl = dir.join("kubectl");
    std::fs::write(&kubectl, script).unwrap();
    std::fs::set_permissions(&kubectl, std::fs::Permissions::from_mode(0o755)).unwrap();
    let merged = dir.join("m.json");
    let run = |extra: &[&str]| {
        let _ = std::fs::remove_file(&calls);
        let mut args = vec!["k8s", "--segments", "4", "--image", "i", "--apply"];
        args.extend_from_slice(extra);
        args.extend(["--json", merged.to_str().unwrap(), "--"]);
        args.extend(command);
        let started = std::time::Instant::now();
        let out = stampede_with_path(&args, dir.to_str());
        (
            out,
            started.elapsed(),
            std::fs::read_to_string(&calls).unwrap_or_default(),
        )
    };
    let (out, took, calls_made) = run(&[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("2 pods failed (pod pod-1 failed; pod pod-3 failed: Evicted: The node was low on resource: memory.)"),
        "{err}"
    );
    assert!(
        took < std::time::Duration::from_secs(10),
        "seen at the first look: {took:?}"
    );
    assert!(
        calls_made.contains("delete --ignore-not-found --wait=false job/stampede"),
        "{calls_made}"
    );
    let (out, _, calls_made) = run(&["--partial", "--keep"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("segment 4/4 is missing: pod pod-3 failed: Evicted"),
        "{err}"
    );
    assert!(err.contains("merged 2 of 4 segments"), "{err}");
    assert!(!calls_made.contains("delete"), "--keep: {calls_made}");
    let m: serde_json::Value = serde_json::from_slice(&std::fs::read(&merged).unwrap()).unwrap();
    assert_eq!(m["fleet"]["merged"], 2);
    let missing: Vec<&str> = (m["fleet"]["missing"].as_array().unwrap().iter())
        .map(|x| x["segment"].as_str().unwrap())
        .collect();
    assert_eq!(missing, ["2/4", "4/4"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The pods shaped for the cluster: the common fields as flags and a pod template
/// merged over the generated one, every field read back by the Kubernetes API
/// types; --dry-run prints and submits nothing even with --apply.
#[test]
fn pods_are_shaped_by_flags_and_a_template_and_dry_run_submits_nothing() {
    let dir = std::env::temp_dir().join(format!("stampede-k8s-t-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let template = dir.join("pod.yaml");
    std::fs::write(
        &template,
        "metadata:\n  labels:\n    team: perf\nspec:\n  priorityClassName: load\n  tolerations:\n    - key: spot\n      operator: Exists\n  containers:\n    - name: stampede\n      image: evil/other:1\n      env:\n        - name: RUST_LOG\n          value: warn\n    - name: sidecar\n      image: busybox\n",
    )
    .unwrap();
    // A kubectl that must not be called.
    let kubectl = dir.join("kubectl");
    std::fs::write(
        &kubectl,
        "#!/bin/sh\necho called > \"$(dirname \"$0\")/called\"\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&kubectl, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = stampede_with_path(
        &[
            "k8s",
            "--segments",
            "2",
            "--image",
            "registry.test/stampede:1",
            "--apply",
            "--dry-run",
            "--node-selector",
            "pool=load",
            "--toleration",
            "dedicated=load:NoSchedule",
            "--service-account",
            "loader",
            "--image-pull-secret",
            "regcred",
            "--label",
            "run=a1",
            "--annotation",
            "owner=perf@example.test",
            "--pod-template",
            template.to_str().unwrap(),
            "--",
            "load",
            "-d",
            "10s",
            "http://svc:8080/",
        ],
        dir.to_str(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!dir.join("called").exists(), "--dry-run submitted nothing");
    let raw: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let job: Job = serde_json::from_value(raw.clone()).unwrap();
    assert_eq!(
        serde_json::to_value(&job).unwrap(),
        raw,
        "every field is the API's"
    );
    let spec = job.spec.unwrap();
    assert_eq!(spec.backoff_limit_per_index, Some(0));
    let t = spec.template;
    let labels = t.metadata.as_ref().unwrap().labels.clone().unwrap();
    assert_eq!(
        (labels["team"].as_str(), labels["run"].as_str()),
        ("perf", "a1")
    );
    assert_eq!(labels["stampede.run/job"], "stampede");
    let pod = t.spec.unwrap();
    assert_eq!(pod.node_selector.unwrap()["pool"], "load");
    assert_eq!(pod.service_account_name.as_deref(), Some("loader"));
    assert_eq!(pod.image_pull_secrets.unwrap()[0].name, "regcred");
    assert_eq!(pod.priority_class_name.as_deref(), Some("load"));
    let tol = pod.tolerations.unwrap();
    let keys: Vec<&str> = tol.iter().map(|x| x.key.as_deref().unwrap()).collect();
    assert_eq!(keys, ["spot", "dedicated"]);
    assert_eq!(pod.containers.len(), 2, "the sidecar kept");
    let c = &pod.containers[0];
    assert_eq!(
        c.image.as_deref(),
        Some("registry.test/stampede:1"),
        "the image stays"
    );
    assert_eq!(c.env.as_ref().unwrap()[0].name, "RUST_LOG");
    assert!(c
        .args
        .as_ref()
        .unwrap()
        .iter()
        .any(|a| a == "--start-strict"));
    // A template that is not YAML, and a toleration not written as a taint.
    std::fs::write(&template, "spec: [unclosed\n").unwrap();
    for (extra, says) in [
        (
            vec!["--pod-template", template.to_str().unwrap()],
            "--pod-template",
        ),
        (vec!["--toleration", "spot"], "key[=value]:Effect"),
    ] {
        let mut args = vec!["k8s", "--segments", "2", "--image", "i"];
        args.extend(extra);
        args.extend(["--", "load", "http://svc/"]);
        let out = stampede_with_path(&args, None);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(says), "{err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
