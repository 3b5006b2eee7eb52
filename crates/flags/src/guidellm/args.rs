//! `stampede guidellm`'s flags: `guidellm run`'s argument strings (`--backend`,
//! `--profile`, `--constraint`, `--data`, `--tokenizer`, `--output`, `--seed`,
//! `--metrics`, `--override`) and the older `guidellm benchmark` form's plain flags
//! (`--target`, `--rate-type`, `--rate`, `--max-seconds`, `--max-requests`), taken
//! by one parser; [`super`] reads them.

use clap::Parser;

use crate::args::{ResultFile, SegmentArgs};

/// `guidellm run`'s flags, and `guidellm benchmark`'s older ones.
#[derive(Parser, Debug)]
#[command(
    name = "stampede guidellm run",
    version,
    about = "GuideLLM's run (its flags, console tables, benchmarks.json and benchmarks.csv)",
    disable_version_flag = true
)]
pub struct GuidellmArgs {
    #[arg(
        help = "kind=openai_http,target=URL[,model=NAME][,request_format=/v1/chat/completions|/v1/completions][,api_key=KEY][,timeout=S][,max_tokens=N][,stream=true][,extras=JSON]",
        long = "backend",
        value_name = "KIND,…"
    )]
    pub backend: Option<String>,
    #[arg(
        help = "kind=synchronous | concurrent,streams=N|[…] | throughput[,max_concurrency=N] | constant|poisson|async,rate=R|[…][,max_concurrency=N] | sweep[,sweep_size=10][,strategy_type=constant|poisson] | knee,initial_streams=[…]|min_streams=…,max_streams=…,count=…[,adaptive=true] | goodput[,target_attainment=0.95][,initial_streams=4][,max_streams=1024][,tolerance=0.1]",
        long = "profile",
        value_name = "KIND,…"
    )]
    pub profile: Option<String>,
    /// kind=max_requests,count=N | max_duration,seconds=S | max_errors,count=N
    #[arg(long = "constraint", value_name = "KIND,…")]
    pub constraint: Vec<String>,
    #[arg(
        help = "kind=synthetic_text,prompt_tokens=N,output_tokens=N[,…_stdev,…_min,…_max][,samples=N][,turns=N] | text_file|json_file|csv_file,path=FILE (the older prompt_tokens=…,output_tokens=… and a plain path are taken too)",
        long = "data",
        value_name = "KIND,…"
    )]
    pub data: Vec<String>,
    /// kind=hf_auto,model=DIR (the directory holding tokenizer.json, or the file)
    #[arg(long = "tokenizer", value_name = "KIND,…")]
    pub tokenizer: Option<String>,
    #[arg(
        help = "kind=console | json[,path=FILE] | csv[,path=FILE] (default: json and csv in the current directory, beside the console's tables)",
        long = "output",
        value_name = "KIND,…"
    )]
    pub output: Vec<String>,
    /// kind=static,value=N (42 unless given)
    #[arg(long = "seed", value_name = "KIND,…")]
    pub seed: Option<String>,
    #[arg(
        help = "kind=generative[,slo.ttft_ms=MS][,slo.tpot_ms=MS][,slo.e2el_ms=MS]: the service levels goodput is judged by",
        long = "metrics",
        value_name = "KIND,…"
    )]
    pub metrics: Option<String>,
    /// profile.streams VALUES or profile.rate VALUES: one benchmark per value
    #[arg(long = "override", value_names = ["KEY", "VALUES"], num_args = 2)]
    pub overrides: Vec<String>,
    /// KEY=VALUE, kept in the JSON's labels
    #[arg(short = 'l', long = "label", value_name = "KEY=VALUE")]
    pub label: Vec<String>,
    #[arg(
        long = "disable-progress",
        visible_alias = "disable-console-interactive",
        id = "disable_progress"
    )]
    pub disable_progress: bool,
    /// Print nothing to the console (the files are still written)
    #[arg(long = "disable-console", visible_alias = "disable-console-outputs")]
    pub disable_console: bool,

    /// (benchmark) The server's base URL
    #[arg(long = "target", value_name = "URL")]
    pub target: Option<String>,
    /// (benchmark) The model to ask for (default: the server's first)
    #[arg(long = "model", value_name = "NAME")]
    pub model: Option<String>,
    /// (benchmark) openai_http
    #[arg(long = "backend-type", value_name = "TYPE")]
    pub backend_type: Option<String>,
    /// (benchmark) The backend's fields as a JSON object
    #[arg(long = "backend-args", value_name = "JSON")]
    pub backend_args: Option<String>,
    /// (benchmark) chat_completions or text_completions
    #[arg(long = "request-type", value_name = "TYPE")]
    pub request_type: Option<String>,
    /// (benchmark) synchronous, concurrent, throughput, constant, poisson or sweep
    #[arg(long = "rate-type", value_name = "TYPE")]
    pub rate_type: Option<String>,
    /// (benchmark) The rates (constant, poisson), streams (concurrent) or sweep size
    #[arg(long = "rate", value_name = "R[,R…]")]
    pub rate: Option<String>,
    /// (benchmark) Each benchmark's length in seconds
    #[arg(long = "max-seconds", value_name = "S")]
    pub max_seconds: Option<f64>,
    /// (benchmark) Each benchmark's requests
    #[arg(long = "max-requests", value_name = "N")]
    pub max_requests: Option<u64>,
    /// (benchmark) Errors that end the run
    #[arg(long = "max-errors", value_name = "N")]
    pub max_errors: Option<u64>,
    /// (benchmark) The tokenizer's directory
    #[arg(long = "processor", value_name = "DIR")]
    pub processor: Option<String>,
    /// (benchmark) Where the report goes: .json, .csv (else a directory for both)
    #[arg(long = "output-path", value_name = "PATH")]
    pub output_path: Option<String>,
    /// (benchmark) The seed
    #[arg(long = "random-seed", value_name = "N")]
    pub random_seed: Option<u64>,
    #[arg(long = "display-scheduler-stats", id = "display_scheduler_stats")]
    pub display_scheduler_stats: bool,
    #[command(flatten)]
    pub result: ResultFile,
    #[command(flatten)]
    pub segments: SegmentArgs,
}
