//! A run fanned out over machines, one segment each: the command every segment runs
//! (its segment and `--json -` added to the user's `load` or dialect command, with the
//! shared start for pods or `--fleet` for ssh's hosts), the files it reads shipped
//! with it ([`inputs`]), and, for Kubernetes, the Indexed Job that runs them as pods
//! ([`manifest`], shaped by [`PodShape`]) and the watch and collection of their
//! results ([`kube::apply`]). `stampede ssh` runs its segments as a fleet over
//! [`crate::fleet`].

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

pub mod inputs;
pub mod kube;

/// Why a fan-out cannot be made or did not complete: a usage error (the command or a
/// setting is wrong) or a failure of the machines or of `kubectl`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct FanoutError {
    /// The user's input is wrong (else the run failed).
    pub usage: bool,
    pub message: String,
}

impl FanoutError {
    fn usage(message: impl std::fmt::Display) -> FanoutError {
        FanoutError {
            usage: true,
            message: message.to_string(),
        }
    }

    fn fail(message: impl std::fmt::Display) -> FanoutError {
        FanoutError {
            usage: false,
            message: message.to_string(),
        }
    }
}

/// The subcommands a segment may run: each writes its result as JSON on standard
/// output with `--json -` (its report then goes to standard error). Two are named by
/// more than one word: `vegeta attack` and `vllm bench serve`.
pub const COMMANDS: [&str; 10] = [
    "load",
    "ab",
    "wrk",
    "httperf",
    "h2load",
    "oha",
    "hey",
    "ghz",
    "vegeta attack",
    "vllm bench serve",
];

/// How many words of `command` name its subcommand (`vegeta attack` two), when it is
/// one of [`COMMANDS`].
pub fn command_words(command: &[String]) -> Option<usize> {
    COMMANDS.iter().find_map(|c| {
        let n = c.split(' ').count();
        let named = command.len() >= n && c.split(' ').zip(command).all(|(a, b)| a == b);
        named.then_some(n)
    })
}

/// Flags each segment is given and the user must leave out.
const GIVEN: [&str; 5] = [
    "--segment",
    "--start-at",
    "--start-strict",
    "--json",
    "--fleet",
];

/// Checks the command after `--`; `each` names what runs a segment ("host", "pod").
pub fn check(command: &[String], each: &str) -> Result<(), FanoutError> {
    let Some(sub) = command.first() else {
        return Err(FanoutError::usage(
            "give the stampede command after --, without `stampede`: -- load URL …",
        ));
    };
    if command_words(command).is_none() {
        return Err(FanoutError::usage(format!(
            "after --: {:?} is not one of {}; give the command without `stampede`",
            match sub.as_str() {
                "vegeta" | "vllm" => command
                    .iter()
                    .take(3)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(" "),
                _ => sub.clone(),
            },
            COMMANDS.join(", ")
        )));
    }
    for taken in GIVEN {
        if command
            .iter()
            .any(|x| x == taken || x.starts_with(&format!("{taken}=")))
        {
            return Err(FanoutError::usage(format!(
                "after --: leave out {taken}; each {each} is given its own"
            )));
        }
    }
    Ok(())
}

/// The command with its segment (`K/N`, or `env:NAME/N`) and the shared start (Unix
/// seconds) added, its result as JSON on standard output. A pod that starts after the
/// shared start starts nothing (`--start-strict`): it would fire its backlog at once;
/// it fails, and is named as missing.
pub fn segment_command(command: &[String], segment: &str, start_at: f64) -> Vec<String> {
    given(
        command,
        segment,
        &["--start-at", &format!("{start_at:.3}"), "--start-strict"],
    )
}

/// The command as a fleet's segment runs it over ssh: its segment, `--fleet` (the
/// coordinator gives the start) and its result as JSON on standard output.
pub fn fleet_command(command: &[String], segment: &str) -> Vec<String> {
    given(command, segment, &["--fleet"])
}

/// `command` with its segment, `start` (how it is started) and `--json -` added; no
/// live lines for `load`, whose output is its result.
fn given(command: &[String], segment: &str, start: &[&str]) -> Vec<String> {
    let mut words = command.to_vec();
    if words[0] == "load" {
        words.insert(1, "-q".into());
    }
    words.extend(["--segment".to_string(), segment.to_string()]);
    words.extend(start.iter().map(|w| w.to_string()));
    words.extend(["--json".to_string(), "-".to_string()]);
    words
}

/// A Kubernetes Indexed Job's settings: one pod per segment.
#[derive(Debug, Clone)]
pub struct Job {
    /// The Job's name (lower-case letters, digits and '-').
    pub name: String,
    pub namespace: Option<String>,
    /// The image with `stampede` on its PATH.
    pub image: String,
    /// Segments, one pod each.
    pub segments: u32,
    /// CPU and memory each pod requests and is limited to (Kubernetes quantities).
    pub cpu: String,
    pub memory: String,
    /// The stampede command each pod runs.
    pub command: Vec<String>,
    /// The files it reads, shipped in a ConfigMap (none: the command as given).
    pub inputs: Option<inputs::Inputs>,
    /// How the pods are shaped beyond the above.
    pub shape: PodShape,
    /// The collector the pods join, instead of starting at a set time and leaving
    /// their results in their logs.
    pub join: Option<Join>,
}

/// Where a Job's pods join their run ([`crate::fleet::collect`]) and with what.
#[derive(Debug, Clone)]
pub struct Join {
    /// `HOST:PORT` as the pods reach it.
    pub addr: String,
    /// The run's token, given to the pods from a Secret.
    pub token: String,
}

/// The name of the Secret holding a Job's run token.
pub fn token_secret(a: &Job) -> String {
    format!("{}-token", a.name)
}

/// What shapes the pods for the cluster: the common fields, and a pod template (the
/// shape of a Job's `spec.template`) merged over the generated one.
#[derive(Debug, Clone, Default)]
pub struct PodShape {
    pub node_selector: Vec<(String, String)>,
    /// `key[=value]:Effect` each, as `kubectl taint` writes a taint.
    pub tolerations: Vec<String>,
    pub service_account: Option<String>,
    pub pull_secrets: Vec<String>,
    pub labels: Vec<(String, String)>,
    pub annotations: Vec<(String, String)>,
    /// A pod template (`metadata`, `spec`), read from YAML or JSON.
    pub template: Option<Value>,
}

/// Applies the pod's shape to a Job's generated `spec.template`.
fn shape(t: &mut Value, s: &PodShape) -> Result<(), FanoutError> {
    let spec = &mut t["spec"];
    if !s.node_selector.is_empty() {
        spec["nodeSelector"] = (s.node_selector.iter())
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect::<serde_json::Map<_, _>>()
            .into();
    }
    if !s.tolerations.is_empty() {
        spec["tolerations"] = Value::Array(
            (s.tolerations.iter())
                .map(|x| toleration(x))
                .collect::<Result<_, _>>()?,
        );
    }
    if let Some(sa) = &s.service_account {
        spec["serviceAccountName"] = json!(sa);
    }
    if !s.pull_secrets.is_empty() {
        spec["imagePullSecrets"] = (s.pull_secrets.iter())
            .map(|n| json!({ "name": n }))
            .collect::<Vec<_>>()
            .into();
    }
    if !s.annotations.is_empty() {
        t["metadata"]["annotations"] = (s.annotations.iter())
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect::<serde_json::Map<_, _>>()
            .into();
    }
    if let Some(template) = &s.template {
        if !template.is_object() {
            return Err(FanoutError::usage(
                "--pod-template: a pod template is a mapping (metadata, spec), as a Job's spec.template",
            ));
        }
        merge_template(t, template);
    }
    Ok(())
}

/// A toleration of a taint written `key[=value]:Effect`.
pub fn toleration(t: &str) -> Result<Value, FanoutError> {
    let bad = || {
        FanoutError::usage(format!(
            "--toleration {t:?}: write it as a taint is written, key[=value]:Effect (Effect: NoSchedule, PreferNoSchedule or NoExecute)"
        ))
    };
    let (kv, effect) = t.rsplit_once(':').ok_or_else(bad)?;
    if !["NoSchedule", "PreferNoSchedule", "NoExecute"].contains(&effect) || kv.is_empty() {
        return Err(bad());
    }
    Ok(match kv.split_once('=') {
        Some((k, v)) => json!({ "key": k, "operator": "Equal", "value": v, "effect": effect }),
        None => json!({ "key": kv, "operator": "Exists", "effect": effect }),
    })
}

/// Merges `template` (a Job's `spec.template`) into `generated`: objects field by
/// field, the template's values winning; lists joined (the template's first); the
/// container named `stampede` merged with the template's container of that name,
/// whose image, command and arguments stay the generated ones.
pub fn merge_template(generated: &mut Value, template: &Value) {
    let (Some(dst), Some(src)) = (generated.as_object_mut(), template.as_object()) else {
        return;
    };
    for (k, v) in src {
        match (dst.get_mut(k), v) {
            (Some(Value::Array(mine)), Value::Array(theirs)) if k == "containers" => {
                for c in theirs {
                    match mine.iter_mut().find(|m| m["name"] == c["name"]) {
                        Some(m) => {
                            let keep: Vec<(String, Value)> = ["image", "command", "args"]
                                .iter()
                                .filter_map(|f| m.get(*f).map(|x| (f.to_string(), x.clone())))
                                .collect();
                            merge_template(m, c);
                            for (f, x) in keep {
                                m[f] = x;
                            }
                        }
                        None => mine.push(c.clone()),
                    }
                }
            }
            (Some(Value::Array(mine)), Value::Array(theirs)) => {
                let mut all = theirs.clone();
                all.append(mine);
                *mine = all;
            }
            (Some(mine @ Value::Object(_)), Value::Object(_)) => merge_template(mine, v),
            _ => {
                dst.insert(k.clone(), v.clone());
            }
        }
    }
}

/// Where the pods find the shipped inputs.
pub const INPUTS_DIR: &str = "/stampede/inputs";

/// Inputs a ConfigMap carries: at most 1,000,000 bytes (Kubernetes refuses one over
/// 1 MiB, its keys and metadata included).
pub const IN_CONFIGMAP: inputs::Bound = inputs::Bound {
    bytes: 1_000_000,
    way: "in a ConfigMap (put larger inputs in the image and name their path there)",
};

/// The Indexed Job running `a.command` in `a.segments` pods from `start`.
pub fn manifest(a: &Job, start: SystemTime) -> Result<Value, FanoutError> {
    if a.segments == 0 {
        return Err(FanoutError::usage("--segments: must be at least 1"));
    }
    let name_ok = !a.name.is_empty()
        && a.name.len() <= 52
        && a.name.starts_with(|c: char| c.is_ascii_lowercase())
        && !a.name.ends_with('-')
        && a.name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !name_ok {
        return Err(FanoutError::usage(format!(
            "--name: {:?} is not a Job name: 1 to 52 lower-case letters, digits and '-', starting with a letter",
            a.name
        )));
    }
    check(&a.command, "pod")?;
    let shipped = a.inputs.as_ref().filter(|i| !i.files.is_empty());
    let command = match shipped {
        Some(i) => i.command_at(INPUTS_DIR),
        None => a.command.clone(),
    };
    let at = start
        .duration_since(UNIX_EPOCH)
        .map_err(|_| FanoutError::usage("--start-in: the start is before 1970"))?
        .as_secs_f64();
    let segment = format!("env:JOB_COMPLETION_INDEX/{}", a.segments);
    let args = match &a.join {
        Some(j) => given(&command, &segment, &["--fleet-connect", &j.addr]),
        None => segment_command(&command, &segment, at),
    };
    let labels = json!({
        "app.kubernetes.io/name": "stampede",
        "stampede.run/job": a.name,
    });
    let mut pod_labels = labels.clone();
    for (k, v) in &a.shape.labels {
        pod_labels[k] = json!(v);
    }
    let resources = json!({ "cpu": a.cpu, "memory": a.memory });
    let mut metadata = json!({ "name": a.name, "labels": labels });
    if let Some(ns) = &a.namespace {
        metadata["namespace"] = json!(ns);
    }
    let mut job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": {
            "completionMode": "Indexed",
            "completions": a.segments,
            "parallelism": a.segments,
            // Each index fails alone, never retried: one failed pod does not fail the
            // Job and end the others (a plain backoffLimit would).
            "backoffLimitPerIndex": 0,
            "template": {
                "metadata": { "labels": pod_labels },
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
    });
    shape(&mut job["spec"]["template"], &a.shape)?;
    let mut items = Vec::new();
    if let Some(j) = &a.join {
        // The token from a Secret, never in the Job's own text.
        let secret = token_secret(a);
        let env = &mut job["spec"]["template"]["spec"]["containers"][0]["env"];
        let mut all = env.as_array().cloned().unwrap_or_default();
        all.push(json!({
            "name": "STAMPEDE_FLEET_TOKEN",
            "valueFrom": { "secretKeyRef": { "name": secret, "key": "token" } },
        }));
        *env = json!(all);
        let mut meta = json!({ "name": secret, "labels": labels });
        if let Some(ns) = &a.namespace {
            meta["namespace"] = json!(ns);
        }
        items.push(json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": meta,
            "type": "Opaque",
            "stringData": { "token": j.token },
        }));
    }
    let Some(inputs) = shipped else {
        return Ok(match items.is_empty() {
            true => job,
            false => {
                items.push(job);
                json!({ "apiVersion": "v1", "kind": "List", "items": items })
            }
        });
    };
    // The inputs as a ConfigMap's binary data, a key each (keys may not hold '/'),
    // mounted where the rewritten command looks for them; its digests annotated.
    let map = format!("{}-inputs", a.name);
    let mut data = serde_json::Map::new();
    let mut keys = Vec::new();
    for (i, f) in inputs.files.iter().enumerate() {
        let key = format!("f{}", i + 1);
        data.insert(
            key.clone(),
            json!(base64::Engine::encode(
                &base64::engine::general_purpose::STANDARD,
                &f.bytes
            )),
        );
        keys.push(json!({ "key": key, "path": f.name }));
    }
    let pod = &mut job["spec"]["template"]["spec"];
    pod["volumes"] = json!([{ "name": "inputs", "configMap": { "name": map, "items": keys } }]);
    pod["containers"][0]["volumeMounts"] =
        json!([{ "name": "inputs", "mountPath": INPUTS_DIR, "readOnly": true }]);
    let mut map_meta = json!({
        "name": map,
        "labels": labels,
        "annotations": { "stampede.run/sha256sums": inputs.sums() },
    });
    if let Some(ns) = &a.namespace {
        map_meta["namespace"] = json!(ns);
    }
    let config_map = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": map_meta,
        "binaryData": data,
    });
    items.extend([config_map, job]);
    Ok(json!({ "apiVersion": "v1", "kind": "List", "items": items }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split(' ').map(String::from).collect()
    }

    #[test]
    fn commands_are_checked_and_given_their_segment() {
        assert!(check(&words("load http://h/"), "host").is_ok());
        assert!(check(&words("wrk -R 100 http://h/"), "host").is_ok());
        assert!(check(&words("vegeta attack -rate 5/s -targets t.txt"), "host").is_ok());
        assert!(check(&words("vllm bench serve --model m"), "host").is_ok());
        assert!(check(&words("oha -z 5s http://h/"), "host").is_ok());
        let e = check(&words("serve"), "pod").unwrap_err();
        assert!(e.to_string().contains("not one of load, ab"), "{e}");
        let e = check(&words("vegeta report r.bin"), "pod").unwrap_err();
        assert!(
            e.to_string()
                .contains("\"vegeta report r.bin\" is not one of"),
            "{e}"
        );
        assert_eq!(command_words(&words("vllm bench serve --model m")), Some(3));
        let e = check(&words("ab --json=x http://h/"), "pod").unwrap_err();
        assert!(e.to_string().contains("leave out --json; each pod"), "{e}");
        assert_eq!(
            segment_command(&words("load http://h/"), "2/4", 1.5).join(" "),
            "load -q http://h/ --segment 2/4 --start-at 1.500 --start-strict --json -"
        );
        assert_eq!(
            segment_command(&words("wrk http://h/"), "env:I/4", 1.0).join(" "),
            "wrk http://h/ --segment env:I/4 --start-at 1.000 --start-strict --json -"
        );
    }
}
