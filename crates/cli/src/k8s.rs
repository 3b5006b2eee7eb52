//! `stampede k8s`: a run's segments as a Kubernetes Indexed Job, one pod per segment.
//!
//! The manifest (JSON, which `kubectl` reads as it reads YAML) runs the given
//! `stampede load` (or dialect) command in N pods at once (`completionMode: Indexed`), each with
//! `--segment env:JOB_COMPLETION_INDEX/N` (its segment from the index Kubernetes gives
//! it), one shared `--start-at` a little in the future, and `--json -` so that its
//! result is in its log; pods are spread over nodes. The files the command reads go
//! in a ConfigMap beside the Job, mounted where the rewritten command reads them. With `--apply` (and `kubectl` on
//! the PATH) the Job is submitted, waited for, every pod's result read from its log,
//! merged exactly and reported in the command's own form; the Job is left for
//! `kubectl delete`.

use std::time::{Duration, SystemTime};

use clap::Args;
use stampede_lab::fanout;

use crate::common::{self, Exit};
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
    /// With --apply: how long after submission to wait for every pod to end (default:
    /// --start-in, the command's own duration and two minutes; 30 minutes for a run
    /// bounded by its count); pods still running then are named and left out
    #[arg(long = "wait", value_name = "DURATION", value_parser = common::parse_duration)]
    pub wait: Option<Duration>,
    /// With --apply: merge the pods that succeeded when some failed, were evicted or
    /// did not end in time (each named)
    #[arg(long = "partial")]
    pub partial: bool,
    /// With --apply: leave the Job (and its inputs' ConfigMap) in the cluster after
    /// the run; by default they are deleted
    #[arg(long = "keep")]
    pub keep: bool,
    /// Print the manifests and submit nothing, even with --apply
    #[arg(long = "dry-run")]
    pub dry_run: bool,
    /// A label on every pod (repeatable)
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = key_value)]
    pub labels: Vec<(String, String)>,
    /// An annotation on every pod (repeatable)
    #[arg(long = "annotation", value_name = "KEY=VALUE", value_parser = key_value)]
    pub annotations: Vec<(String, String)>,
    /// Run the pods only on nodes with this label (repeatable)
    #[arg(long = "node-selector", value_name = "KEY=VALUE", value_parser = key_value)]
    pub node_selector: Vec<(String, String)>,
    /// Tolerate a taint, written as `kubectl taint` writes it (repeatable)
    #[arg(long = "toleration", value_name = "KEY[=VALUE]:EFFECT")]
    pub tolerations: Vec<String>,
    /// The pods' service account
    #[arg(long = "service-account", value_name = "NAME")]
    pub service_account: Option<String>,
    /// A secret to pull the image with (repeatable)
    #[arg(long = "image-pull-secret", value_name = "NAME")]
    pub pull_secrets: Vec<String>,
    /// A pod template (YAML or JSON, the shape of a Job's spec.template) merged over
    /// the generated one: its fields win, its lists are joined, its `stampede`
    /// container merged with the generated one (whose image, command and arguments
    /// stay)
    #[arg(long = "pod-template", value_name = "FILE")]
    pub pod_template: Option<String>,
    /// The stampede command each pod runs: `load URL …` or a dialect's (`wrk …`)
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Writes the manifest, or submits it and reports the merged result.
pub fn main(a: K8sArgs) -> Result<(), Exit> {
    fanout::check(&a.command, "pod")?;
    // Every input is read, bounded and digested before the manifest is made.
    let inputs = fanout::inputs::find(&a.command, fanout::IN_CONFIGMAP)?;
    let template = match &a.pod_template {
        Some(path) => Some(read_template(path)?),
        None => None,
    };
    let start = SystemTime::now() + a.start_in;
    let job = job_of(&a, inputs, template);
    let manifest = fanout::manifest(&job, start)?;
    let text = serde_json::to_string_pretty(&manifest).expect("a manifest serialises") + "\n";
    if !a.apply || a.dry_run {
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
    let wait = a.wait.unwrap_or_else(|| match run_length(&a.command) {
        Some(d) => a.start_in + d + Duration::from_secs(120),
        None => Duration::from_secs(30 * 60),
    });
    let watch = fanout::kube::Watch {
        wait,
        every: Duration::from_secs(2),
        partial: a.partial,
        keep: a.keep,
    };
    let r = fanout::kube::apply(&job, &text, watch)?;
    let (command, format) = (&a.command, a.format);
    crate::merge::emit_with(
        &r,
        |r| crate::fanout::print_report(command, format, r),
        &a.out,
        &asserts,
    )
}

/// The Job the flags describe.
fn job_of(
    a: &K8sArgs,
    inputs: fanout::inputs::Inputs,
    template: Option<serde_json::Value>,
) -> fanout::Job {
    fanout::Job {
        name: a.name.clone(),
        namespace: a.namespace.clone(),
        image: a.image.clone(),
        segments: a.segments,
        cpu: a.cpu.clone(),
        memory: a.memory.clone(),
        command: a.command.clone(),
        inputs: Some(inputs),
        shape: fanout::PodShape {
            node_selector: a.node_selector.clone(),
            tolerations: a.tolerations.clone(),
            service_account: a.service_account.clone(),
            pull_secrets: a.pull_secrets.clone(),
            labels: a.labels.clone(),
            annotations: a.annotations.clone(),
            template,
        },
    }
}

/// `KEY=VALUE`.
fn key_value(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("{s:?} is not KEY=VALUE")),
    }
}

/// A pod template file, YAML or JSON, within a configuration file's bound.
fn read_template(path: &str) -> Result<serde_json::Value, Exit> {
    let text = stampede_engine::input::read_text(
        path,
        "--pod-template",
        stampede_engine::input::Input::Config,
    )
    .map_err(|e| Exit::usage(e.to_string()))?;
    serde_norway::from_str(&text).map_err(|e| {
        let at = e.location().map_or(String::new(), |l| {
            format!(", line {} column {}", l.line(), l.column())
        });
        Exit::usage(format!("--pod-template {path}{at}: {e}"))
    })
}

/// How long the command runs, where it says (`-d`, `--duration`, `-z`, `-duration`).
fn run_length(command: &[String]) -> Option<Duration> {
    let flags = ["-d", "--duration", "-z", "-duration"];
    (0..command.len()).find_map(|i| {
        let value = match command[i].split_once('=') {
            Some((f, v)) if flags.contains(&f) => v,
            _ if flags.contains(&command[i].as_str()) => command.get(i + 1)?.as_str(),
            _ => return None,
        };
        common::parse_duration(value).ok()
    })
}
