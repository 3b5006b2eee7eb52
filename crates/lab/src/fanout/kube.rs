//! `stampede k8s --apply`: the Job submitted with `kubectl`, its pods watched until
//! every one has succeeded or failed (a failed or evicted pod is seen within seconds
//! and named with its reason; pods still running at the deadline are named too), the
//! results of those that succeeded read from their logs and merged, and what was
//! created deleted unless asked to keep it. When the pods join a collector instead
//! (`--listen`), their results come over its connections: the watch then only tells
//! the fleet's loop of each pod that failed ([`watch_failures`]).

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use stampede_engine::merge::Merger;
use stampede_engine::{FleetMissing, FleetSummary, RunResult};

use super::{FanoutError, Job};
use crate::remote::parse_result;

/// How `apply` waits and what it leaves.
#[derive(Debug, Clone, Copy)]
pub struct Watch {
    /// From submission, for every pod to end.
    pub wait: Duration,
    /// Between two looks at the pods.
    pub every: Duration,
    /// Merge the pods that succeeded when some did not.
    pub partial: bool,
    /// Leave the Job (and its ConfigMap) in the cluster.
    pub keep: bool,
}

/// Most bytes of `kubectl get pods -o json` read (a thousand pods' status is a few MB).
const MAX_LIST: usize = 64 << 20;

/// `kubectl` with `args` (and the namespace), its standard output, or an error
/// saying what failed.
fn kubectl(ns: Option<&str>, args: &[&str], input: Option<&str>) -> Result<String, FanoutError> {
    let mut all: Vec<&str> = args.to_vec();
    if let Some(ns) = ns {
        all.extend(["--namespace", ns]);
    }
    let child = crate::remote::start(Command::new("kubectl").args(&all), input.map(str::as_bytes))
        .map_err(|e| FanoutError::fail(e.to_string()))?;
    let out = child
        .wait_with_output()
        .map_err(|e| FanoutError::fail(format!("kubectl {}: {e}", all.join(" "))))?;
    if !out.status.success() {
        return Err(FanoutError::fail(format!(
            "kubectl {} failed: {}",
            all.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A pod as the watch sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Pod {
    pub name: String,
    /// Its completion index (the segment is index + 1).
    pub index: Option<u32>,
    /// `Pending`, `Running`, `Succeeded`, `Failed` or `Unknown`.
    pub phase: String,
    /// Why it failed: the pod's reason and message (Evicted: …), else its
    /// container's (Error, OOMKilled, exit code).
    pub why: String,
}

/// The pods of a `kubectl get pods -o json` list.
pub fn pods(list: &str) -> Result<Vec<Pod>, FanoutError> {
    if list.len() > MAX_LIST {
        return Err(FanoutError::fail(format!(
            "kubectl get pods: {} bytes, more than read",
            list.len()
        )));
    }
    let v: Value = serde_json::from_str(list)
        .map_err(|e| FanoutError::fail(format!("kubectl get pods: not JSON: {e}")))?;
    let s = |v: &Value| v.as_str().unwrap_or("").to_string();
    let items = v["items"].as_array().cloned().unwrap_or_default();
    Ok(items
        .iter()
        .map(|p| {
            let meta = &p["metadata"];
            let index = meta["annotations"]["batch.kubernetes.io/job-completion-index"]
                .as_str()
                .or_else(|| meta["labels"]["batch.kubernetes.io/job-completion-index"].as_str())
                .and_then(|i| i.parse().ok());
            let status = &p["status"];
            let term = &status["containerStatuses"][0]["state"]["terminated"];
            let why = match (s(&status["reason"]), s(&status["message"])) {
                (r, m) if !r.is_empty() && !m.is_empty() => format!("{r}: {m}"),
                (r, _) if !r.is_empty() => r,
                _ if term.is_object() => format!(
                    "{} (exit code {})",
                    s(&term["reason"]),
                    term["exitCode"].as_i64().unwrap_or(-1)
                ),
                _ => String::new(),
            };
            Pod {
                name: s(&meta["name"]),
                index,
                phase: s(&status["phase"]),
                why,
            }
        })
        .collect())
}

/// Submits the Job (its `manifest`), watches its pods, reads and merges the results
/// of those that succeeded; deletes what it made unless `watch.keep`.
pub fn apply(a: &Job, manifest: &str, watch: Watch) -> Result<RunResult, FanoutError> {
    submit(a, manifest)?;
    eprintln!(
        "stampede: Job {} submitted: {} pods; watching them (at most {:.0} s)",
        a.name,
        a.segments,
        watch.wait.as_secs_f64()
    );
    let out = watch_and_merge(a, watch);
    if !watch.keep {
        clean_up(a);
    }
    out
}

/// Submits the Job's `manifest`.
pub fn submit(a: &Job, manifest: &str) -> Result<(), FanoutError> {
    kubectl(
        a.namespace.as_deref(),
        &["apply", "-f", "-"],
        Some(manifest),
    )
    .map(drop)
}

/// Deletes what the Job's manifest made (the Job, its inputs' ConfigMap, its token's
/// Secret), saying so or why it could not.
pub fn clean_up(a: &Job) {
    let mut what = vec![format!("job/{}", a.name)];
    if a.inputs.as_ref().is_some_and(|i| !i.files.is_empty()) {
        what.push(format!("configmap/{}-inputs", a.name));
    }
    if a.join.is_some() {
        what.push(format!("secret/{}", super::token_secret(a)));
    }
    let mut args = vec!["delete", "--ignore-not-found", "--wait=false"];
    args.extend(what.iter().map(String::as_str));
    match kubectl(a.namespace.as_deref(), &args, None) {
        Ok(_) => eprintln!("stampede: deleted Job {} (--keep leaves it)", a.name),
        Err(e) => eprintln!("stampede: {e}"),
    }
}

/// Looks at the Job's pods every `every` until `done` is dropped (or sent to),
/// telling `lost` of each pod that failed (segment index + 1, with its reason), once;
/// a look that fails is said once and tried again.
pub fn watch_failures(
    a: &Job,
    every: Duration,
    lost: crate::fleet::run::Lost,
    done: std::sync::mpsc::Receiver<()>,
) {
    let ns = a.namespace.clone();
    let selector = format!("stampede.run/job={}", a.name);
    let n = a.segments as usize;
    std::thread::spawn(move || {
        let mut told = vec![false; n];
        let mut said = false;
        loop {
            let seen = kubectl(
                ns.as_deref(),
                &["get", "pods", "-l", &selector, "-o", "json"],
                None,
            )
            .and_then(|l| pods(&l));
            match seen {
                Ok(pods) => {
                    for p in pods.iter().filter(|p| p.phase == "Failed") {
                        let Some(i) = p.index.map(|i| i as usize).filter(|&i| i < n) else {
                            continue;
                        };
                        if !std::mem::replace(&mut told[i], true) {
                            lost.lost(i + 1, describe(p));
                        }
                    }
                }
                Err(e) if !said => {
                    said = true;
                    eprintln!("stampede: watching the pods: {e}; trying again");
                }
                Err(_) => {}
            }
            // The next look, unless the run ends first.
            if done.recv_timeout(every) != Err(std::sync::mpsc::RecvTimeoutError::Timeout) {
                return;
            }
        }
    });
}

fn watch_and_merge(a: &Job, watch: Watch) -> Result<RunResult, FanoutError> {
    let ns = a.namespace.as_deref();
    let selector = format!("stampede.run/job={}", a.name);
    let began = Instant::now();
    let n = a.segments as usize;
    let mut last: Vec<Pod>;
    loop {
        last = pods(&kubectl(
            ns,
            &["get", "pods", "-l", &selector, "-o", "json"],
            None,
        )?)?;
        let ended = last
            .iter()
            .filter(|p| p.phase == "Succeeded" || p.phase == "Failed")
            .count();
        let failed: Vec<&Pod> = last.iter().filter(|p| p.phase == "Failed").collect();
        if !failed.is_empty() && !watch.partial {
            let names: Vec<String> = failed.iter().map(|p| describe(p)).collect();
            return Err(FanoutError::fail(format!(
                "Job {}: {} failed ({}); nothing merged (--partial merges the others)",
                a.name,
                plural(failed.len(), "pod"),
                names.join("; ")
            )));
        }
        if last.len() >= n && ended == last.len() {
            break;
        }
        if began.elapsed() >= watch.wait {
            break;
        }
        std::thread::sleep(watch.every.min(watch.wait.saturating_sub(began.elapsed())));
    }
    let mut merger = Merger::new(false);
    let mut missing = Vec::new();
    let mut merged = 0u32;
    for k in 0..a.segments {
        let segment = format!("{}/{}", k + 1, a.segments);
        // An index's pods: the one that succeeded, else the last seen.
        let mine: Vec<&Pod> = last.iter().filter(|p| p.index == Some(k)).collect();
        let pod = (mine.iter().find(|p| p.phase == "Succeeded"))
            .or(mine.last())
            .copied();
        let why = match pod {
            None => "no pod was seen".to_string(),
            Some(p) if p.phase == "Succeeded" => {
                let log = kubectl(ns, &["logs", &p.name], None)?;
                match parse_result(log.as_bytes()) {
                    Ok(r) => {
                        merger
                            .add(&r)
                            .map_err(|e| FanoutError::fail(format!("pod {}: {e}", p.name)))?;
                        merged += 1;
                        continue;
                    }
                    Err(e) => format!("pod {}: {e}", p.name),
                }
            }
            Some(p) if p.phase == "Failed" => describe(p),
            Some(p) => format!(
                "pod {} still {} {:.0} s after submission; left out",
                p.name,
                p.phase.to_lowercase(),
                watch.wait.as_secs_f64()
            ),
        };
        eprintln!("stampede: segment {segment} is missing: {why}");
        missing.push(FleetMissing {
            segment,
            host: pod.map_or(String::new(), |p| p.name.clone()),
            why,
        });
    }
    if merged == 0 || (!missing.is_empty() && !watch.partial) {
        return Err(FanoutError::fail(format!(
            "Job {}: {merged} of {n} pods left a result{}",
            a.name,
            if merged > 0 {
                " (--partial merges them)"
            } else {
                ""
            }
        )));
    }
    let mut r = merger
        .finish()
        .map_err(|e| FanoutError::fail(e.to_string()))?;
    if !missing.is_empty() {
        eprintln!("stampede: merged {merged} of {n} segments");
    }
    r.fleet = Some(FleetSummary {
        segments: a.segments,
        merged,
        missing,
        stopped_by: None,
        refused_frames: 0,
        refused_connections: 0,
    });
    Ok(r)
}

fn describe(p: &Pod) -> String {
    match p.why.is_empty() {
        true => format!("pod {} failed", p.name),
        false => format!("pod {} failed: {}", p.name, p.why),
    }
}

fn plural(n: usize, what: &str) -> String {
    match n {
        1 => format!("1 {what}"),
        n => format!("{n} {what}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pods_are_read_with_their_index_and_why_they_failed() {
        let list = r#"{"items": [
          {"metadata": {"name": "j-0-a", "annotations": {"batch.kubernetes.io/job-completion-index": "0"}},
           "status": {"phase": "Succeeded"}},
          {"metadata": {"name": "j-1-b", "annotations": {"batch.kubernetes.io/job-completion-index": "1"}},
           "status": {"phase": "Failed", "reason": "Evicted", "message": "The node was low on resource: memory."}},
          {"metadata": {"name": "j-2-c", "labels": {"batch.kubernetes.io/job-completion-index": "2"}},
           "status": {"phase": "Failed", "containerStatuses": [{"state": {"terminated": {"reason": "OOMKilled", "exitCode": 137}}}]}}
        ]}"#;
        let p = pods(list).unwrap();
        assert_eq!(p.len(), 3);
        assert_eq!((p[0].index, p[0].phase.as_str()), (Some(0), "Succeeded"));
        assert_eq!(p[1].why, "Evicted: The node was low on resource: memory.");
        assert_eq!(
            (p[2].index, p[2].why.as_str()),
            (Some(2), "OOMKilled (exit code 137)")
        );
        assert!(pods("not json").unwrap_err().message.contains("not JSON"));
    }
}
