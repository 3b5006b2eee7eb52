//! The `stampede` binary: parses arguments, dispatches to a dialect, maps errors to exit
//! codes (0 ran, 1 could not run, 2 bad usage, 3 an assertion failed; a bench stopped
//! by Ctrl-C or SIGTERM exits 130, as does a second Ctrl-C during any run). Dialects
//! that mimic other tools (`ab`, `wrk`, `oha`, `hey`, …) parse their own arguments so
//! that their flags keep those tools' meaning.

/// `eprintln!` that never panics: a closed standard error (`stampede … 2>&1 | head`)
/// is not an error, and what could not be written is dropped. Its warnings and
/// failures are painted on a terminal ([`colour`]). Defined before the
/// modules so that theirs is this one.
macro_rules! eprintln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let line = $crate::colour::paint(&format!($($arg)*), $crate::colour::Stream::Err);
        let _ = writeln!(std::io::stderr(), "{line}");
    }};
}

mod ab;
mod artillery;
mod bench;
mod collect;
mod colour;
mod common;
mod console;
mod contract;
mod coordinate;
mod fanout;
mod fleet;
mod ghz;
mod grpc;
mod guidellm;
mod h2load;
mod har;
mod hey;
mod httperf;
mod k8s;
mod live;
mod load;
mod manual;
mod merge;
mod metrics;
mod oha;
mod report;
mod serve;
mod served;
mod ssh;
use stampede_flags::tls;
mod aiperf;
mod topics;
mod vegeta;
mod vllm;
mod watch;
mod wrk;

use clap::{Parser, Subcommand};

use common::Exit;

#[derive(Parser, Debug)]
#[command(
    name = "stampede",
    version,
    about = "HTTP load generator, reference server and benchmark lab",
    long_about = "stampede measures HTTP servers: `load` is the native interface; `ab`, `wrk`, `httperf`, `h2load`, `oha`, `hey`, `vegeta`, `ghz`, `vllm bench serve`, `aiperf profile` and `guidellm run` accept those tools' flags and print their reports; `serve` runs the reference server; `bench` runs a plan (or the built-in one) and compares servers; `compare` sets a stored bench against an earlier one; `merge` makes one result of a run's segments (`--segment K/N`, `--start-at`). Exit codes: 0 the run happened (read its warnings), 1 it could not run, 2 bad usage, 3 an assertion failed; Ctrl-C or SIGTERM stops a run, reports what was measured, marked as interrupted, and exits 130 (a bench likewise); a second Ctrl-C exits 130 at once.",
    after_help = "Guides: stampede help topics lists the reference pages (stampede help dialects, stampede help protocols, …).",
    after_long_help = "Guides: stampede help topics lists the reference pages (stampede help dialects, stampede help protocols, …)."
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a load test (native interface)
    Load(Box<load::LoadArgs>),
    /// Run the reference server
    Serve(serve::ServeArgs),
    /// Run a benchmark plan: start, verify, warm up, measure, repeat, store, compare
    Bench(bench::BenchArgs),
    /// Compare a bench in the store with an earlier one
    Compare(bench::CompareArgs),
    /// Write an HTML report of a stored bench or run
    Report(report::ReportArgs),
    /// Each scenario × target across the stored benches, with the changes found
    History(bench::HistoryArgs),
    /// Merge the results of a run's segments (--segment K/N) exactly into one
    Merge(merge::MergeArgs),
    /// A journey from a browser's recording (HAR), its handed-out values captured
    Har(har::HarArgs),
    /// A run's segments as a Kubernetes Indexed Job (and, with --apply, run and merge)
    K8s(Box<k8s::K8sArgs>),
    /// A run's segments on several hosts over ssh, merged
    Ssh(Box<ssh::SshArgs>),
    /// Coordinate a run whose segments something else starts: they connect, start
    /// together and are merged live (--fleet-connect)
    Collect(Box<collect::CollectArgs>),
    /// ApacheBench-compatible flags and report: stampede ab -n 1000 -c 10 URL
    /// (`stampede help ab` for its flags)
    #[command(disable_help_flag = true)]
    Ab {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// wrk-compatible flags and report: stampede wrk -t2 -c64 -d10s URL (`stampede
    /// help wrk` for its flags)
    #[command(disable_help_flag = true)]
    Wrk {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// httperf-compatible flags and report: stampede httperf --server H --port P --uri /x
    /// (`stampede help httperf` for its flags)
    #[command(disable_help_flag = true)]
    Httperf {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// h2load-compatible flags and report: stampede h2load -n 100000 -c 4 -m 10 URL
    /// (`stampede help h2load` for its flags)
    #[command(disable_help_flag = true)]
    H2load {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// oha-compatible flags and reports: stampede oha -n 1000 -c 50 URL (`stampede
    /// help oha` for its flags)
    #[command(disable_help_flag = true)]
    Oha {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// hey-compatible flags and report: stampede hey -n 1000 -c 50 URL (`stampede help
    /// hey` for its flags)
    #[command(disable_help_flag = true)]
    Hey {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// ghz-compatible gRPC flags and reports: stampede ghz --insecure --proto P.proto
    /// --call pkg.Service.Method -d '{}' HOST:PORT (`stampede help ghz` for its flags)
    #[command(disable_help_flag = true)]
    Ghz {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// vegeta's pipeline: stampede vegeta attack -rate 100/s -duration 10s -targets
    /// t.txt | stampede vegeta report (`stampede help vegeta` for its flags)
    #[command(disable_help_flag = true)]
    Vegeta {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// Artillery 2's test scripts, run as they are: stampede artillery run script.yml
    /// [--output report.json]
    #[command(disable_help_flag = true)]
    Artillery {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// vLLM's serving benchmark: stampede vllm bench serve --model M --base-url URL
    /// (`stampede help vllm` for its flags)
    #[command(disable_help_flag = true)]
    Vllm {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// AIPerf's profile: stampede aiperf profile -m MODEL --url URL --streaming
    /// (`stampede help aiperf` for its flags)
    #[command(disable_help_flag = true)]
    Aiperf {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// GuideLLM's run: stampede guidellm run --backend kind=openai_http,target=URL
    /// --profile kind=sweep --data kind=synthetic_text,prompt_tokens=N,output_tokens=N
    /// (`stampede help guidellm` for its flags)
    #[command(disable_help_flag = true)]
    Guidellm {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// Shell completions on standard output: stampede completions
    /// bash|zsh|fish|elvish|powershell (e.g. `source <(stampede completions bash)`)
    Completions {
        #[arg(value_enum, value_name = "SHELL")]
        shell: clap_complete::Shell,
    },
    /// A man page in roff on standard output, a subcommand's or (with none)
    /// stampede's own: `stampede man load | man -l -`
    Man {
        #[arg(value_name = "SUBCOMMAND", conflicts_with = "dir")]
        subcommand: Option<String>,
        /// Write every page into DIR instead (stampede.1 and stampede-SUBCOMMAND.1,
        /// as a package installs them)
        #[arg(long = "dir", value_name = "DIR")]
        dir: Option<std::path::PathBuf>,
    },
}

/// mimalloc rather than the C library's allocator: QUIC's state machine allocates per
/// stream (and frees as acknowledgements come), which put a tenth of the HTTP/3
/// client's time in malloc and free; HTTP/1.1 and HTTP/2 allocate nothing per
/// request and run the same either way.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `load -h`: the common flags alone (those under no heading, and a few of the
/// groups'), a screenful; the headings of the others are named, for `--help` to show
/// them all.
fn load_short_help() -> String {
    use clap::CommandFactory as _;
    let mut headings: Vec<String> = Vec::new();
    let cmd = Cli::command();
    let Some(load) = cmd.find_subcommand("load") else {
        return String::new();
    };
    for a in load.get_arguments() {
        if let Some(h) = a.get_help_heading() {
            if !headings.iter().any(|k| k == h) {
                headings.push(h.to_string());
            }
        }
    }
    let more = format!(
        "More flags, by group (stampede load --help shows them all): {}.",
        headings.join(", ")
    );
    let mut load = load
        .clone()
        .mut_args(|a| {
            // The few flags of the groups that most runs use stay in view.
            let common = ["rate", "http2", "json", "html", "insecure"];
            if a.get_help_heading().is_some() && !common.contains(&a.get_id().as_str()) {
                a.hide_short_help(true)
            } else {
                a
            }
        })
        .bin_name("stampede load")
        .after_help(more);
    load.render_help().to_string()
}

fn main() {
    // A bench's target keeper (see stampede_lab::guard), not a user command.
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() == Some(stampede_lab::guard::ARG) {
        let rest: Vec<String> = args.collect();
        std::process::exit(stampede_lab::guard::run(&rest));
    }
    let argv: Vec<String> = std::env::args().skip(1).collect();
    // `stampede help vegeta attack` is vegeta's help, as `stampede help vegeta`.
    let topic = match &argv[..] {
        [help, v, _] if help == "help" && v == "vegeta" => &argv[..2],
        _ => &argv[..],
    };
    if let [help, dialect] = topic {
        if help == "help" {
            if dialect == "topics" {
                common::out(&topics::list());
                return;
            }
            if let Some(page) = topics::page(dialect) {
                common::out(page);
                return;
            }
            let text = match dialect.as_str() {
                "ab" => Some(stampede_flags::ab::DIALECT.help::<stampede_flags::ab::AbArgs>()),
                "wrk" => Some(stampede_flags::wrk::DIALECT.help::<stampede_flags::wrk::WrkArgs>()),
                "httperf" => Some(
                    stampede_flags::httperf::DIALECT.help::<stampede_flags::httperf::HttperfArgs>(),
                ),
                "h2load" => Some(
                    stampede_flags::h2load::DIALECT.help::<stampede_flags::h2load::H2loadArgs>(),
                ),
                "vllm" => {
                    Some(stampede_flags::vllm::DIALECT.help::<stampede_flags::vllm::VllmArgs>())
                }
                "aiperf" => Some(
                    stampede_flags::aiperf::DIALECT.help::<stampede_flags::aiperf::AiperfArgs>(),
                ),
                "guidellm" => Some(
                    stampede_flags::guidellm::DIALECT
                        .help::<stampede_flags::guidellm::GuidellmArgs>(),
                ),
                "oha" => Some(stampede_flags::oha::DIALECT.help::<stampede_flags::oha::OhaArgs>()),
                "hey" => Some(stampede_flags::hey::DIALECT.help::<stampede_flags::hey::HeyArgs>()),
                "ghz" => Some(stampede_flags::ghz::DIALECT.help::<stampede_flags::ghz::GhzArgs>()),
                "vegeta" => Some(vegeta::help()),
                _ => None,
            };
            if let Some(t) = text {
                common::out(&t);
                return;
            }
        }
    }
    if argv.first().map(String::as_str) == Some("load") {
        if argv[1..].iter().any(|a| a == "-h") && !argv[1..].iter().any(|a| a == "--help") {
            common::out(&load_short_help());
            return;
        }
        if let Err(e) = load::precheck(&argv[1..]) {
            eprintln!("stampede: {}", e.message);
            std::process::exit(e.code);
        }
    }
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() {
                common::EXIT_USAGE
            } else {
                0
            };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    let run_command = matches!(
        cli.command,
        Command::Load(_)
            | Command::Ab { .. }
            | Command::Wrk { .. }
            | Command::Httperf { .. }
            | Command::H2load { .. }
            | Command::Vllm { .. }
            | Command::Aiperf { .. }
            | Command::Guidellm { .. }
            | Command::Oha { .. }
            | Command::Hey { .. }
            | Command::Ghz { .. }
            | Command::Vegeta { .. }
            | Command::Artillery { .. }
    );
    if run_command {
        // From the start: a signal while the run is being set up (or its target
        // probed) stops it as one during the run does, never the process unreported.
        common::install_sigint();
    }
    let res: Result<(), Exit> = match cli.command {
        Command::Load(a) => load::main(*a),
        Command::Serve(a) => serve::main(a),
        Command::Bench(a) => bench::main(a),
        Command::Compare(a) => bench::compare(a),
        Command::Report(a) => report::report(a),
        Command::History(a) => bench::history(a),
        Command::Merge(a) => merge::main(a),
        Command::Har(a) => har::main(a),
        Command::K8s(a) => k8s::main(*a),
        Command::Ssh(a) => ssh::main(*a),
        Command::Collect(a) => collect::main(*a),
        Command::Ab { args } => ab::main(&args),
        Command::Wrk { args } => wrk::main(&args),
        Command::Httperf { args } => httperf::main(&args),
        Command::H2load { args } => h2load::main(&args),
        Command::Vllm { args } => vllm::main(&args),
        Command::Aiperf { args } => aiperf::main(&args),
        Command::Guidellm { args } => guidellm::main(&args),
        Command::Oha { args } => oha::main(&args),
        Command::Hey { args } => hey::main(&args),
        Command::Ghz { args } => ghz::main(&args),
        Command::Vegeta { args } => vegeta::main(&args),
        Command::Artillery { args } => artillery::main(&args),
        Command::Completions { shell } => manual::completions(shell),
        Command::Man { dir: Some(dir), .. } => manual::man_dir(&dir),
        Command::Man { subcommand, .. } => manual::man(subcommand.as_deref()),
    };
    if let Err(e) = res {
        // A fleet's coordinator hears why, where no exit status reaches it.
        fleet::failed(&e.message);
        match e.code {
            // Help asked for: the text is the answer.
            0 => common::out(&e.message),
            _ if !e.message.is_empty() => eprintln!("stampede: {}", e.message),
            _ => {}
        }
        std::process::exit(e.code);
    }
    // A run stopped early printed what it measured, marked as partial; the exit code
    // tells a script it is not the whole run.
    if run_command && common::interrupted() {
        eprintln!(
            "stampede: interrupted: the report covers only the part of the run before the signal (exit {})",
            common::EXIT_INTERRUPTED
        );
        std::process::exit(common::EXIT_INTERRUPTED);
    }
}
