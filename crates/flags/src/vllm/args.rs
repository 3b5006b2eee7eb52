//! `vllm bench serve`'s flags as clap parses them: the run's, the datasets' and the
//! sampling parameters', each with vLLM's name and default.

use clap::{Args, Parser};

use crate::args::{ResultFile, SegmentArgs, ServerMetricsArgs};

/// `vllm bench serve`'s flags.
#[derive(Parser, Debug)]
#[command(
    name = "stampede vllm bench serve",
    version,
    about = "vLLM's serving benchmark (vllm bench serve's flags, datasets, report and JSON result)",
    disable_version_flag = true
)]
pub struct VllmArgs {
    /// The server's API: vllm or openai (/v1/completions), openai-chat
    /// (/v1/chat/completions), openai-embeddings, openai-embeddings-chat (/v1/embeddings),
    /// infinity-embeddings
    #[arg(long = "backend", value_name = "NAME", default_value = "openai")]
    pub backend: String,
    /// The server's URL (instead of --host and --port)
    #[arg(long = "base-url", value_name = "URL")]
    pub base_url: Option<String>,
    #[arg(long = "host", value_name = "HOST", default_value = "127.0.0.1")]
    pub host: String,
    #[arg(long = "port", value_name = "PORT", default_value_t = 8000)]
    pub port: u16,
    /// The API's path
    #[arg(
        long = "endpoint",
        value_name = "PATH",
        default_value = "/v1/completions"
    )]
    pub endpoint: String,
    /// Headers sent with every request, KEY=VALUE each
    #[arg(long = "header", value_name = "KEY=VALUE", num_args = 0..)]
    pub header: Vec<String>,
    /// The model to ask for (default: the first of the server's /v1/models)
    #[arg(long = "model", value_name = "NAME")]
    pub model: Option<String>,
    /// The name the server serves the model under, sent in requests instead of --model
    #[arg(long = "served-model-name", value_name = "NAME")]
    pub served_model_name: Option<String>,
    /// LoRA modules the server was started with: each request asks for one, drawn at
    /// random with --seed
    #[arg(long = "lora-modules", value_name = "NAME", num_args = 1..)]
    pub lora_modules: Vec<String>,
    /// The model's tokenizer: its tokenizer.json, the directory holding it, or a model
    /// in the local Hugging Face cache (default: --model's, where the cache has it)
    #[arg(long = "tokenizer", value_name = "NAME")]
    pub tokenizer: Option<String>,
    /// Any mode reads the same tokenizer.json
    #[arg(long = "tokenizer-mode", value_name = "MODE", default_value = "auto")]
    pub tokenizer_mode: String,
    /// The input length of every dataset that has one (--random-input-len,
    /// --sonnet-input-len)
    #[arg(long = "input-len", value_name = "N")]
    pub input_len: Option<u32>,
    /// The output length of every dataset that has one (--random-output-len,
    /// --sonnet-output-len, --sharegpt-output-len, --custom-output-len, …)
    #[arg(long = "output-len", value_name = "N")]
    pub output_len: Option<u32>,
    /// Requests per second (inf: all at once, within --max-concurrency)
    #[arg(long = "request-rate", value_name = "RPS")]
    pub request_rate: Option<String>,
    /// The gaps' gamma shape with --request-rate: 1 a Poisson process, below 1
    /// burstier, above 1 smoother
    #[arg(long = "burstiness", value_name = "F", default_value_t = 1.0)]
    pub burstiness: f64,
    /// Raise the rate over the run, by each request's place: linear or exponential
    #[arg(long = "ramp-up-strategy", value_name = "NAME")]
    pub ramp_up_strategy: Option<String>,
    #[arg(long = "ramp-up-start-rps", value_name = "RPS")]
    pub ramp_up_start_rps: Option<f64>,
    #[arg(long = "ramp-up-end-rps", value_name = "RPS")]
    pub ramp_up_end_rps: Option<f64>,
    /// Requests in flight at most
    #[arg(long = "max-concurrency", value_name = "N")]
    pub max_concurrency: Option<usize>,
    /// Requests of the first prompt sent before the run, not counted
    #[arg(long = "num-warmups", value_name = "N", default_value_t = 0)]
    pub num_warmups: u64,
    /// How long to wait for the server to answer the first prompt before the run
    /// (0: do not ask first)
    #[arg(
        long = "ready-check-timeout-sec",
        value_name = "S",
        default_value_t = 600
    )]
    pub ready_check_timeout_sec: u64,
    /// Metrics with percentiles in the report: ttft, tpot, itl, e2el (default:
    /// ttft,tpot,itl; e2el for embeddings)
    #[arg(long = "percentile-metrics", value_name = "LIST")]
    pub percentile_metrics: Option<String>,
    /// Percentiles reported, comma-separated
    #[arg(long = "metric-percentiles", value_name = "LIST", default_value = "99")]
    pub metric_percentiles: String,
    /// Service levels, KEY:MS for ttft, tpot and e2el (goodput: the requests meeting
    /// all)
    #[arg(long = "goodput", value_name = "KEY:MS", num_args = 1..)]
    pub goodput: Vec<String>,
    /// Ask the server to ignore its end-of-sequence token (always, with the random
    /// dataset, as vLLM does)
    #[arg(long = "ignore-eos")]
    pub ignore_eos: bool,
    /// Each request's x-request-id is this and its number (default: bench-, eight hex
    /// digits and -)
    #[arg(long = "request-id-prefix", value_name = "TEXT")]
    pub request_id_prefix: Option<String>,
    /// A JSON object merged into every request's body
    #[arg(long = "extra-body", value_name = "JSON")]
    pub extra_body: Option<String>,
    /// Write vLLM's JSON result
    #[arg(long = "save-result")]
    pub save_result: bool,
    /// Write vLLM's JSON result after those already in the file, a line each
    #[arg(long = "append-result")]
    pub append_result: bool,
    /// KEY=VALUE pairs written into the JSON result
    #[arg(long = "metadata", value_name = "KEY=VALUE", num_args = 0..)]
    pub metadata: Vec<String>,
    #[arg(long = "result-dir", value_name = "DIR")]
    pub result_dir: Option<String>,
    #[arg(long = "result-filename", value_name = "FILE")]
    pub result_filename: Option<String>,
    /// The results' label: the saved result's file name begins with it, and its JSON
    /// carries it (default: --backend)
    #[arg(long = "label", value_name = "NAME")]
    pub label: Option<String>,
    #[arg(long = "disable-tqdm")]
    pub disable_tqdm: bool,
    #[arg(long = "trust-remote-code")]
    pub trust_remote_code: bool,
    #[command(flatten)]
    pub dataset: DatasetArgs,
    #[command(flatten)]
    pub sampling: SamplingArgs,
    #[command(flatten)]
    pub server: ServerMetricsArgs,
    #[command(flatten)]
    pub result: ResultFile,
    #[command(flatten)]
    pub segments: SegmentArgs,
}

/// The datasets' flags.
#[derive(Args, Debug)]
pub struct DatasetArgs {
    #[arg(long = "seed", value_name = "N", default_value_t = 0)]
    pub seed: u64,
    /// Prompts sent
    #[arg(long = "num-prompts", value_name = "N", default_value_t = 1000)]
    pub num_prompts: usize,
    /// random, sharegpt, sonnet, burstgpt, custom, spec_bench, prefix_repetition or hf
    /// (a local file)
    #[arg(long = "dataset-name", value_name = "NAME", default_value = "random")]
    pub dataset_name: String,
    /// The dataset's file (a directory for hf)
    #[arg(long = "dataset-path", value_name = "FILE")]
    pub dataset_path: Option<String>,
    /// Send only what the dataset holds when it holds fewer than --num-prompts
    /// (default: draw again from it at random)
    #[arg(long = "no-oversample")]
    pub no_oversample: bool,
    /// Send the dataset's entries in the file's order (by default they are shuffled
    /// with --seed, as vLLM does)
    #[arg(long = "disable-shuffle")]
    pub disable_shuffle: bool,
    #[arg(long = "no-stream")]
    pub no_stream: bool,
    #[arg(long = "skip-chat-template")]
    pub skip_chat_template: bool,
    #[arg(long = "random-input-len", value_name = "N", default_value_t = 1024)]
    pub random_input_len: u32,
    #[arg(long = "random-output-len", value_name = "N", default_value_t = 128)]
    pub random_output_len: u32,
    #[arg(long = "random-range-ratio", value_name = "R", default_value_t = 0.0)]
    pub random_range_ratio: f64,
    /// Tokens every random prompt begins with (the same for all)
    #[arg(long = "random-prefix-len", value_name = "N", default_value_t = 0)]
    pub random_prefix_len: u32,
    /// Embeddings: prompts per request
    #[arg(long = "random-batch-size", value_name = "N", default_value_t = 1)]
    pub random_batch_size: usize,
    /// Each ShareGPT prompt's maximum (instead of its reply's length)
    #[arg(long = "sharegpt-output-len", value_name = "N")]
    pub sharegpt_output_len: Option<u32>,
    #[arg(long = "sonnet-input-len", value_name = "N", default_value_t = 550)]
    pub sonnet_input_len: u32,
    #[arg(long = "sonnet-output-len", value_name = "N", default_value_t = 150)]
    pub sonnet_output_len: u32,
    #[arg(long = "sonnet-prefix-len", value_name = "N", default_value_t = 200)]
    pub sonnet_prefix_len: u32,
    #[arg(long = "custom-output-len", value_name = "N", default_value_t = 256)]
    pub custom_output_len: u32,
    #[arg(
        long = "spec-bench-output-len",
        value_name = "N",
        default_value_t = 256
    )]
    pub spec_bench_output_len: u32,
    /// Only this category's questions
    #[arg(long = "spec-bench-category", value_name = "NAME")]
    pub spec_bench_category: Option<String>,
    /// A subset's directory under --dataset-path
    #[arg(long = "hf-subset", value_name = "NAME")]
    pub hf_subset: Option<String>,
    /// The split whose files are read from a directory
    #[arg(long = "hf-split", value_name = "NAME")]
    pub hf_split: Option<String>,
    #[arg(long = "hf-name", value_name = "NAME")]
    pub hf_name: Option<String>,
    /// Each prompt's maximum (instead of its reply's length)
    #[arg(long = "hf-output-len", value_name = "N")]
    pub hf_output_len: Option<u32>,
    #[arg(
        long = "prefix-repetition-prefix-len",
        value_name = "N",
        default_value_t = 256
    )]
    pub prefix_repetition_prefix_len: u32,
    #[arg(
        long = "prefix-repetition-suffix-len",
        value_name = "N",
        default_value_t = 256
    )]
    pub prefix_repetition_suffix_len: u32,
    #[arg(
        long = "prefix-repetition-num-prefixes",
        value_name = "N",
        default_value_t = 10
    )]
    pub prefix_repetition_num_prefixes: usize,
    #[arg(
        long = "prefix-repetition-output-len",
        value_name = "N",
        default_value_t = 128
    )]
    pub prefix_repetition_output_len: u32,
}

/// The sampling parameters sent in every completion's body.
#[derive(Args, Debug)]
pub struct SamplingArgs {
    #[arg(long = "top-p", value_name = "P")]
    pub top_p: Option<f64>,
    #[arg(long = "top-k", value_name = "K")]
    pub top_k: Option<i64>,
    #[arg(long = "min-p", value_name = "P")]
    pub min_p: Option<f64>,
    /// Default 0 (greedy), as vLLM sends
    #[arg(long = "temperature", value_name = "T")]
    pub temperature: Option<f64>,
    #[arg(long = "frequency-penalty", value_name = "F")]
    pub frequency_penalty: Option<f64>,
    #[arg(long = "presence-penalty", value_name = "F")]
    pub presence_penalty: Option<f64>,
    #[arg(long = "repetition-penalty", value_name = "F")]
    pub repetition_penalty: Option<f64>,
    /// The random dataset's shared prefix, in tokens (as --random-prefix-len)
    #[arg(long = "common-prefix-len", value_name = "N")]
    pub common_prefix_len: Option<u32>,
}

impl SamplingArgs {
    /// The parameters given, as a body's fields; temperature 0 unless given.
    pub fn fields(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut m = serde_json::Map::new();
        let mut put = |k: &str, v: Option<serde_json::Value>| {
            if let Some(v) = v {
                m.insert(k.to_string(), v);
            }
        };
        put("top_p", self.top_p.map(Into::into));
        put("top_k", self.top_k.map(Into::into));
        put("min_p", self.min_p.map(Into::into));
        put("temperature", Some(self.temperature.unwrap_or(0.0).into()));
        put("frequency_penalty", self.frequency_penalty.map(Into::into));
        put("presence_penalty", self.presence_penalty.map(Into::into));
        put(
            "repetition_penalty",
            self.repetition_penalty.map(Into::into),
        );
        m
    }
}
