//! `stampede k8s`: a run's segments as a Kubernetes Indexed Job, one pod per segment.
//!
//! The manifest (JSON, which `kubectl` reads as it reads YAML) runs the given
//! `stampede load` (or dialect) command in N pods at once (`completionMode: Indexed`), each with
//! `--segment env:JOB_COMPLETION_INDEX/N` (its segment from the index Kubernetes gives
//! it), one shared `--start-at` a little in the future, and `--json -` so that its
//! result is in its log; pods are spread over nodes. With `--apply` (and `kubectl` on
//! the PATH) the Job is submitted, waited for, every pod's result read from its log,
//! merged exactly and reported in the command's own form; the Job is left for
//! `kubectl delete`.

use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::Args;
use serde_json::{json, Value};
use stampede_engine::merge::merge;
use stampede_engine::RunResult;
use stampede_lab::remote::parse_result;

use crate::common::{self, Exit};
use crate::fanout;
use crate::merge::Report;

/// Arguments of `stampede k8s`.
#[derive(Args, Debug)]
pub struct K8sArgs {
    /// Segments, one pod each
    #[arg(long = "segments", value_name = "N")]
    pub segments: u32,
    /// Container image with `stampede` as its entrypoint's program (on PATH)
    #[arg(long = "image", value_name = "IMAGE")]
    pub image: String,
    /// Job name (lower-case letters, digits and '-')
    #[arg(long = "name", value_name = "NAME", default_value = "stampede")]
    pub name: String,
    /// Namespace
    #[arg(long = "namespace", value_name = "NS")]
    pub namespace: Option<String>,
    /// How long after submission the shared start is: time for every pod to be
    /// scheduled and pull the image
    #[arg(long = "start-in", value_name = "DURATION", default_value = "60s", value_parser = common::parse_duration)]
    pub start_in: Duration,
    /// CPU each pod requests and is limited to (Kubernetes quantity)
    #[arg(long = "cpu", value_name = "QUANTITY", default_value = "1")]
    pub cpu: String,
    /// Memory each pod requests and is limited to (Kubernetes quantity)
    #[arg(long = "memory", value_name = "QUANTITY", default_value = "256Mi")]
    pub memory: String,
    /// Write the manifest here instead of standard output
    #[arg(long = "output", short = 'o', value_name = "FILE")]
    pub output: Option<String>,
    /// Submit with kubectl, wait, collect the pods' results and merge them
    #[arg(long = "apply")]
    pub apply: bool,
    /// With --apply: the report printed (default: the command's own)
    #[arg(long = "format", value_enum)]
    pub format: Option<Report>,
    /// With --apply: what the merged result is written as
    #[command(flatten)]
    pub out: common::Outputs,
    /// With --apply: how long to wait for the Job
    #[arg(long = "wait", value_name = "DURATION", default_value = "30m", value_parser = common::parse_duration)]
    pub wait: Duration,
    /// The stampede command each pod runs: `load URL …` or a dialect's (`wrk …`)
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Writes the manifest, or submits it and reports the merged result.
pub fn main(a: K8sArgs) -> Result<(), Exit> {
    let start = SystemTime::now() + a.start_in;
    let job = manifest(&a, start)?;
    let text = serde_json::to_string_pretty(&job).expect("a manifest serialises") + "\n";
    if !a.apply {
        return match &a.output {
            Some(p) => common::write_file(p, &text),
            None => {
                common::out(&text);
                Ok(())
            }
        };
    }
    if let Some(p) = &a.output {
        common::write_file(p, &text)?;
    }
    let asserts = a.out.assertions()?;
    a.out.check_paths()?;
    let r = apply(&a, &text)?;
    let format = a.format.unwrap_or(fanout::report_of(&a.command));
    crate::merge::emit(&r, format, &a.out, &asserts)
}

/// The Indexed Job running `a.command` in `a.segments` pods from `start`.
pub fn manifest(a: &K8sArgs, start: SystemTime) -> Result<Value, Exit> {
    if a.segments == 0 {
        return Err(Exit::usage("--segments: must be at least 1"));
    }
    let name_ok = !a.name.is_empty()
        && a.name.len() <= 52
        && a.name.starts_with(|c: char| c.is_ascii_lowercase())
        && !a.name.ends_with('-')
        && a.name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !name_ok {
        return Err(Exit::usage(format!(
            "--name: {:?} is not a Job name: 1 to 52 lower-case letters, digits and '-', starting with a letter",
            a.name
        )));
    }
    fanout::check(&a.command, "pod")?;
    let at = start
        .duration_since(UNIX_EPOCH)
        .map_err(|_| Exit::usage("--start-in: the start is before 1970"))?
        .as_secs_f64();
    let args = fanout::segment_command(
        &a.command,
        &format!("env:JOB_COMPLETION_INDEX/{}", a.segments),
        at,
    );
    let labels = json!({
        "app.kubernetes.io/name": "stampede",
        "stampede.run/job": a.name,
    });
    let resources = json!({ "cpu": a.cpu, "memory": a.memory });
    let mut metadata = json!({ "name": a.name, "labels": labels });
    if let Some(ns) = &a.namespace {
        metadata["namespace"] = json!(ns);
    }
    Ok(json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": {
            "completionMode": "Indexed",
            "completions": a.segments,
            "parallelism": a.segments,
            "backoffLimit": 0,
            "template": {
                "metadata": { "labels": labels },
                "spec": {
                    "restartPolicy": "Never",
                    "topologySpreadConstraints": [{
                        "maxSkew": 1,
                        "topologyKey": "kubernetes.io/hostname",
                        "whenUnsatisfiable": "ScheduleAnyway",
                        "labelSelector": { "matchLabels": { "stampede.run/job": a.name } },
                    }],
                    "containers": [{
                        "name": "stampede",
                        "image": a.image,
                        "command": ["stampede"],
                        "args": args,
                        "resources": { "requests": resources, "limits": resources },
                    }],
                },
            },
        },
    }))
}

/// `kubectl` with `args`, its standard output, or an error saying what failed.
fn kubectl(args: &[&str], input: Option<&str>) -> Result<String, Exit> {
    let child =
        stampede_lab::remote::start(Command::new("kubectl").args(args), input.map(str::as_bytes))
            .map_err(|e| Exit::fail(e.to_string()))?;
    let out = child
        .wait_with_output()
        .map_err(|e| Exit::fail(format!("kubectl {}: {e}", args.join(" "))))?;
    if !out.status.success() {
        return Err(Exit::fail(format!(
            "kubectl {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Submits the Job, waits for it, reads every pod's result and merges them.
fn apply(a: &K8sArgs, manifest: &str) -> Result<RunResult, Exit> {
    let ns: Vec<&str> = match &a.namespace {
        Some(ns) => vec!["--namespace", ns],
        None => Vec::new(),
    };
    let with_ns = |args: &[&str]| -> Vec<String> {
        args.iter()
            .chain(ns.iter())
            .map(|s| s.to_string())
            .collect()
    };
    let run = |args: Vec<String>, input: Option<&str>| {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        kubectl(&refs, input)
    };
    run(with_ns(&["apply", "-f", "-"]), Some(manifest))?;
    eprintln!(
        "stampede: Job {} submitted: {} pods, shared start in {:.0} s",
        a.name,
        a.segments,
        a.start_in.as_secs_f64()
    );
    let timeout = format!("--timeout={}s", a.wait.as_secs().max(1));
    let job = format!("job/{}", a.name);
    if let Err(e) = run(
        with_ns(&["wait", "--for=condition=complete", &timeout, &job]),
        None,
    ) {
        return Err(Exit::fail(format!(
            "Job {} did not complete: {}; see `kubectl describe {job}`",
            a.name, e.message
        )));
    }
    let selector = format!("stampede.run/job={}", a.name);
    let pods = run(
        with_ns(&[
            "get",
            "pods",
            "-l",
            &selector,
            "-o",
            "jsonpath={range .items[*]}{.metadata.name}{\"\\n\"}{end}",
        ]),
        None,
    )?;
    let mut parts = Vec::new();
    for pod in pods.lines().map(str::trim).filter(|p| !p.is_empty()) {
        let log = run(with_ns(&["logs", pod]), None)?;
        let r = parse_result(log.as_bytes()).map_err(|e| Exit::fail(format!("pod {pod}: {e}")))?;
        parts.push(r);
    }
    if parts.len() != a.segments as usize {
        return Err(Exit::fail(format!(
            "Job {}: {} of {} pods left a result",
            a.name,
            parts.len(),
            a.segments
        )));
    }
    merge(&parts, false).map_err(|e| Exit::fail(e.to_string()))
}
