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
use crate::coordinate::{run_length, FleetArgs};

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
    /// With --apply: this process is the run's collector, listening at ADDR (e.g.
    /// 0.0.0.0:7411) for the pods, which join it with a token made for the run (in a
    /// Secret): the start is given once every pod is ready, each second is merged
    /// live, --abort-on stops every pod, and the results come over the connections,
    /// not the pods' logs
    #[arg(long = "listen", value_name = "ADDR", requires = "apply")]
    pub listen: Option<String>,
    /// The collector the pods join, as the cluster reaches it: this process's
    /// --listen (default: its address, when it names one), or a `stampede collect`
    /// elsewhere, started with the same --segments and --token-file
    #[arg(long = "collect", value_name = "HOST:PORT")]
    pub collect: Option<String>,
    /// The run's token, as `stampede collect --token-file` wrote it (with --collect
    /// and no --listen; with --listen, one is made for the run when not given)
    #[arg(long = "token-file", value_name = "FILE")]
    pub token_file: Option<String>,
    #[command(flatten)]
    pub fleet: FleetArgs,
    /// With --apply: how long after submission to wait for every pod to end (default:
    /// --start-in, the command's own duration and two minutes; 30 minutes for a run
    /// bounded by its count); pods still running then are named and left out
    #[arg(long = "wait", value_name = "DURATION", value_parser = common::parse_duration)]
    pub wait: Option<Duration>,
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
    let start_in = a.fleet.ready_within(Duration::from_secs(60));
    if a.listen.is_none() {
        if let Some(flag) = a.fleet.live_only() {
            return Err(Exit::usage(format!(
                "{flag} follows the pods' live figures, which reach this process only when they join it: give --listen{}",
                if a.collect.is_some() { " (or give it to the `stampede collect` at --collect)" } else { "" }
            )));
        }
    }
    if a.collect.is_some() && a.listen.is_none() && a.token_file.is_none() {
        return Err(Exit::usage(
            "--collect: give --token-file, as the collector there wrote it (`stampede collect --token-file`)",
        ));
    }
    if a.collect.is_some() && a.listen.is_none() && a.apply && !a.dry_run {
        return Err(Exit::usage(
            "--collect without --listen: the collector there merges the results; write the manifest (no --apply) and submit it with `kubectl apply -f`, or give --listen to collect here",
        ));
    }
    let token = match &a.token_file {
        Some(path) => Some(crate::collect::read_token(path)?),
        None => None,
    };
    // With --listen, the address is bound first: the pods are told where it is.
    let listener = match (&a.listen, a.apply && !a.dry_run) {
        (Some(addr), true) => Some(
            std::net::TcpListener::bind(addr)
                .map_err(|e| Exit::usage(format!("--listen {addr}: {e}")))?,
        ),
        _ => None,
    };
    let join = match (&a.listen, &a.collect) {
        (None, None) => None,
        (listen, collect) => {
            let addr = match (collect, &listener, listen) {
                (Some(c), ..) => c.clone(),
                (None, Some(l), _) => advertised(l)?,
                (None, None, Some(addr)) => addr.clone(),
                (None, None, None) => unreachable!("one of the two is given"),
            };
            let token = match &token {
                Some(t) => t.clone(),
                None => stampede_lab::fleet::collect::token()
                    .map_err(|e| Exit::fail(format!("a token: {e}")))?,
            };
            Some(fanout::Join { addr, token })
        }
    };
    let start = SystemTime::now() + start_in;
    let job = job_of(&a, inputs, template, join);
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
    if let Some(listener) = listener {
        return collect_here(&a, &job, &text, listener, start_in);
    }
    let asserts = a.fleet.out.assertions()?;
    a.fleet.out.check_paths()?;
    let wait = a.wait.unwrap_or_else(|| match run_length(&a.command) {
        Some(d) => start_in + d + Duration::from_secs(120),
        None => Duration::from_secs(30 * 60),
    });
    let watch = fanout::kube::Watch {
        wait,
        every: Duration::from_secs(2),
        partial: a.fleet.partial,
        keep: a.keep,
    };
    let r = fanout::kube::apply(&job, &text, watch)?;
    let (command, format) = (&a.command, a.fleet.format);
    crate::merge::emit_with(
        &r,
        |r| crate::fanout::print_report(command, format, r),
        &a.fleet.out,
        &asserts,
    )
}

/// The Job submitted, its pods joining this process: driven as a fleet, a failed pod
/// told to the loop as soon as the watch sees it, what was made deleted after.
fn collect_here(
    a: &K8sArgs,
    job: &fanout::Job,
    manifest: &str,
    listener: std::net::TcpListener,
    ready: Duration,
) -> Result<(), Exit> {
    let checked = a.fleet.check(ready, &a.command)?;
    let token = job
        .join
        .as_ref()
        .map(|j| j.token.clone())
        .unwrap_or_default();
    let n = a.segments as usize;
    let channel = stampede_lab::fleet::collect::listen(listener, token, n);
    fanout::kube::submit(job, manifest)?;
    eprintln!(
        "stampede: Job {} submitted: {n} pods join {}; the start is given once every one is ready (within {:.1} s)",
        job.name,
        job.join.as_ref().map_or("", |j| j.addr.as_str()),
        ready.as_secs_f64()
    );
    // The watch ends when `done` is dropped, with the run.
    let (done, ended) = std::sync::mpsc::channel::<()>();
    fanout::kube::watch_failures(job, Duration::from_secs(2), channel.lost(), ended);
    let names: Vec<String> = (0..n).map(|i| format!("{}-{i}", job.name)).collect();
    let out = crate::coordinate::drive(channel, &names, &a.fleet, checked, &a.command);
    drop(done);
    if !a.keep {
        fanout::kube::clean_up(job);
    }
    out
}

/// The address the pods are told, for a listener bound to a given one; one bound to
/// every address needs --collect to say which the cluster reaches.
fn advertised(l: &std::net::TcpListener) -> Result<String, Exit> {
    let at = l
        .local_addr()
        .map_err(|e| Exit::fail(format!("--listen: {e}")))?;
    match at.ip().is_unspecified() {
        true => Err(Exit::usage(format!(
            "--listen {at}: listening on every address; give --collect HOST:{} with the address the pods reach this machine at",
            at.port()
        ))),
        false => Ok(at.to_string()),
    }
}

/// The Job the flags describe.
fn job_of(
    a: &K8sArgs,
    inputs: fanout::inputs::Inputs,
    template: Option<serde_json::Value>,
    join: Option<fanout::Join>,
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
        join,
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
