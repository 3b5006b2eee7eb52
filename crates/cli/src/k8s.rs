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
    /// With --apply: how long to wait for the Job
    #[arg(long = "wait", value_name = "DURATION", default_value = "30m", value_parser = common::parse_duration)]
    pub wait: Duration,
    /// The stampede command each pod runs: `load URL …` or a dialect's (`wrk …`)
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Writes the manifest, or submits it and reports the merged result.
pub fn main(a: K8sArgs) -> Result<(), Exit> {
    fanout::check(&a.command, "pod")?;
    // Every input is read, bounded and digested before the manifest is made.
    let inputs = fanout::inputs::find(&a.command, fanout::IN_CONFIGMAP)?;
    let start = SystemTime::now() + a.start_in;
    let job = job_of(&a, inputs);
    let manifest = fanout::manifest(&job, start)?;
    let text = serde_json::to_string_pretty(&manifest).expect("a manifest serialises") + "\n";
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
    let r = fanout::apply(&job, &text, a.start_in, a.wait)?;
    let (command, format) = (&a.command, a.format);
    crate::merge::emit_with(
        &r,
        |r| crate::fanout::print_report(command, format, r),
        &a.out,
        &asserts,
    )
}

/// The Job the flags describe.
fn job_of(a: &K8sArgs, inputs: fanout::inputs::Inputs) -> fanout::Job {
    fanout::Job {
        name: a.name.clone(),
        namespace: a.namespace.clone(),
        image: a.image.clone(),
        segments: a.segments,
        cpu: a.cpu.clone(),
        memory: a.memory.clone(),
        command: a.command.clone(),
        inputs: Some(inputs),
    }
}
