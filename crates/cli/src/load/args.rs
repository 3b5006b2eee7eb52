//! `stampede load`'s flags: one field per flag, grouped under the help's headings,
//! and the checks made on them before clap (oha's `-q N`) and after it (a burstiness
//! without a rate).

use clap::builder::TypedValueParser;
use clap::{ArgAction, Args, ValueEnum};

use crate::common::{self, Exit};

/// The report printed at the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// stampede's compact summary.
    Text,
    /// Gatling's console summary (OK/KO, response time distribution, errors).
    Gatling,
}

/// Arguments of `stampede load`: one field per flag (hence over twenty), grouped
/// under the help's headings.
#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("multiplexed").args(["http2", "http3", "call"]).multiple(true)))]
pub struct LoadArgs {
    /// The URL to load: http://host:port/path, https://…, ws://… or wss://… (WebSocket
    /// message round trips), or http+unix://%2Fpath%2Fto.sock/path
    #[arg(value_name = "URL", required_unless_present_any = ["spec", "targets"])]
    pub url: Option<String>,
    /// Several requests used in turn from a file in vegeta's target format: blocks of
    /// 'METHOD URL', header lines 'Name: value' and an optional '@path' body file,
    /// separated by blank lines (instead of URL); several servers share the run's
    /// connections, threads, count and rate in proportion to their requests
    #[arg(help_heading = "What to load", long = "targets", value_name = "FILE", conflicts_with_all = ["url", "body_file", "method"])]
    pub targets: Option<String>,
    /// The URL is a regular expression: each request gets a new path drawn from it (oha's
    /// --rand-regex-url); the scheme, host and port must be fixed text (dots escaped as
    /// \.), e.g. 'http://127\.0\.0\.1:8080/item/[0-9]{4}'
    #[arg(help_heading = "What to load", 
        long = "rand-regex-url",
        requires = "url",
        conflicts_with_all = ["targets", "body_lines", "http2", "inject"]
    )]
    pub rand_regex_url: bool,
    /// With --rand-regex-url: how many more times than its minimum an open repetition
    /// (*, +, {n,}) may repeat
    #[arg(
        help_heading = "What to load",
        long = "max-repeat",
        value_name = "N",
        default_value_t = 4,
        requires = "rand_regex_url"
    )]
    pub max_repeat: u32,
    /// Walk the journey in FILE (TOML: steps whose URL, headers and body are templates,
    /// captures from each answer, checks, think times, a CSV or JSONL feeder; see
    /// `stampede help journeys`): each connection is a user walking it again and again
    /// (over HTTP/1.1, or --http2 or --http3, one request at a time), and each step
    /// gets figures of its own
    #[arg(help_heading = "What to load",
        long = "journey",
        value_name = "FILE",
        requires = "url",
        conflicts_with_all = [
            "targets", "body_lines", "body_file", "rand_regex_url", "stream", "sse",
            "openai", "ws_message", "ws_steps", "calls", "burst", "think", "pipeline", "redirects",
        ]
    )]
    pub journey: Option<String>,
    /// Feed each request a row of FILE (CSV with a header row, or JSONL): the URL's
    /// path, the -H values and the --body-file are then templates over its columns,
    /// `{{ name }}`, and the built-in values ({{ $uuid }}, {{ $seq }},
    /// {{ $randomNumber(1, 100) }}, …; see `stampede help journeys`), rendered for
    /// each request
    #[arg(help_heading = "What to load",
        long = "feeder",
        value_name = "FILE",
        requires = "url",
        conflicts_with_all = [
            "journey", "targets", "body_lines", "rand_regex_url", "stream", "sse",
            "openai", "ws_message", "ws_steps", "calls", "burst", "think", "pipeline", "redirects",
        ]
    )]
    pub feeder: Option<String>,
    /// With --feeder: the order requests take its rows in — sequence (starting over
    /// after the last), random, or unique (each row once; the run stops when they are
    /// used up)
    #[arg(help_heading = "What to load", long = "feeder-order", value_name = "ORDER",
        default_value = "sequence", value_parser = parse_order, requires = "feeder")]
    pub feeder_order: stampede_journey::feeder::Order,
    /// One request per non-empty line of FILE, the line as its body (with -m's method
    /// and the -H headers), used in turn; with a ws:// URL each line is a message,
    /// each connection sending them in turn
    #[arg(
        help_heading = "What to load",
        long = "body-lines",
        value_name = "FILE",
        conflicts_with = "body_file"
    )]
    pub body_lines: Option<String>,
    /// Run the spec in FILE ('-': standard input), as --save-spec wrote it, instead of
    /// building one from the request and load flags
    #[arg(help_heading = "What to load", 
        long = "spec",
        value_name = "FILE",
        conflicts_with_all = [
            "url", "targets", "body_lines", "connections", "requests", "duration", "threads", "pipeline", "http2", "http3",
            "streams", "keepalive", "no_keepalive", "headers", "method", "body_file",
            "timeout", "rate", "poisson", "burstiness", "seed", "inject", "calls", "burst", "think",
            "unix_socket", "insecure", "cacert", "cert", "key", "resume", "version",
            "proxy", "proxy_user", "local_address", "send_buffer", "recv_buffer",
            "rand_regex_url", "redirects", "send_horizon", "stream", "sse", "openai", "event_timeout",
            "ws_message", "ws_binary", "ws_protocols", "ws_ping", "ws_stamp", "ws_deflate", "ws_expect", "ws_deflate_params", "ws_steps",
            "journey", "feeder",
        ]
    )]
    pub spec: Option<String>,
    /// Write the spec these flags make to FILE ('-': standard output), to run the same
    /// load elsewhere with --spec, and exit without running it
    #[arg(help_heading = "What to load", long = "save-spec", value_name = "FILE", conflicts_with_all = ["spec", "rand_regex_url"])]
    pub save_spec: Option<String>,
    /// Concurrent connections
    #[arg(
        short = 'c',
        long = "connections",
        value_name = "N",
        default_value_t = 64
    )]
    pub connections: usize,
    /// Stop after N requests
    #[arg(short = 'n', long = "requests", value_name = "N")]
    pub requests: Option<u64>,
    /// Stop after this long (10s, 500ms, 2m); default 10s when -n is not given (-z as
    /// oha)
    #[arg(short = 'd', short_alias = 'z', long = "duration", value_name = "T", value_parser = common::parse_duration)]
    pub duration: Option<std::time::Duration>,
    /// Worker threads (default: all cores)
    #[arg(short = 't', long = "threads", value_name = "N")]
    pub threads: Option<usize>,
    /// Requests written back to back per connection
    #[arg(
        help_heading = "What to load",
        long = "pipeline",
        value_name = "N",
        default_value_t = 1
    )]
    pub pipeline: usize,
    /// Speak HTTP/2: h2c with prior knowledge for http://, ALPN h2 (HTTP/1.1 if the
    /// server prefers it) for https://; for ws:// and wss://, each connection's
    /// WebSocket on an HTTP/2 stream (RFC 8441's extended CONNECT)
    #[arg(help_heading = "HTTP/2", long = "http2")]
    pub http2: bool,
    /// HTTP/2 and HTTP/3: streams kept open per connection (h2load's -m)
    #[arg(
        help_heading = "HTTP/2",
        long = "streams",
        visible_alias = "max-concurrent-streams",
        value_name = "N",
        requires = "multiplexed",
        conflicts_with = "pipeline"
    )]
    pub streams: Option<usize>,
    /// Speak HTTP/3 over QUIC (https:// only): UDP to the URL's port, a stream per
    /// request, QUIC's handshake, losses and round trip reported beside HTTP's figures
    #[arg(help_heading = "HTTP/3", long = "http3", conflicts_with = "http2")]
    pub http3: bool,
    /// HTTP/3: the largest UDP payload sent, 1200 to 65527 bytes (QUIC's path MTU
    /// discovery searches no higher)
    #[arg(
        help_heading = "HTTP/3",
        long = "max-udp-payload-size",
        value_name = "BYTES",
        requires = "http3"
    )]
    pub max_udp_payload: Option<u16>,
    /// HTTP/3: send each datagram with a system call of its own (without this,
    /// several of a connection go in one where the kernel offers UDP segmentation
    /// offload)
    #[arg(help_heading = "HTTP/3", long = "no-udp-gso", requires = "http3")]
    pub no_udp_gso: bool,
    /// HTTP/3: the QPACK dynamic table the server may fill for responses (0, QPACK's
    /// default, unless given; h2load's --header-table-size)
    #[arg(
        help_heading = "HTTP/3",
        long = "qpack-table-size",
        value_name = "BYTES",
        requires = "http3"
    )]
    pub qpack_table: Option<u32>,
    /// WebSocket (a ws:// or wss:// URL): the text each message carries (default
    /// 'stampede'); each request is a message, its answer the server's next one,
    /// timed as a round trip. Call data templates make each message its own:
    /// {{.RequestNumber}}, {{.WorkerID}}, {{.UUID}}, {{newUUID}}, {{.TimestampUnixMilli}},
    /// {{randomString N}}, {{randomInt MIN MAX}}, … (--body-file sends a file's bytes
    /// as written)
    #[arg(
        help_heading = "WebSocket",
        long = "ws-message",
        value_name = "TEXT",
        conflicts_with = "body_file"
    )]
    pub ws_message: Option<String>,
    /// WebSocket: send binary messages (opcode 2) instead of text
    #[arg(help_heading = "WebSocket", long = "ws-binary")]
    pub ws_binary: bool,
    /// WebSocket: offer this subprotocol (Sec-WebSocket-Protocol; repeatable, in order
    /// of preference)
    #[arg(help_heading = "WebSocket", long = "ws-protocol", value_name = "NAME", action = ArgAction::Append)]
    pub ws_protocols: Vec<String>,
    /// WebSocket: each request is a ping carrying the message (at most 125 bytes),
    /// answered by its pong — connections held with heartbeats (with --inject
    /// 'atOnceUsers(N)' --calls and --think: N held at once, each pinging in turn)
    #[arg(
        help_heading = "WebSocket",
        long = "ws-ping",
        conflicts_with = "ws_binary"
    )]
    pub ws_ping: bool,
    /// Begin each message with a send stamp (43 bytes: when it was due and when it
    /// went out), so that whoever receives it can time it from them — a broadcast
    /// room's members run with --stream, say
    #[arg(
        help_heading = "WebSocket",
        long = "ws-stamp",
        conflicts_with = "ws_ping"
    )]
    pub ws_stamp: bool,
    /// Offer permessage-deflate (RFC 7692) and require it: messages go compressed both
    /// ways, and a server that declines fails each connection as ws_deflate_declined
    #[arg(help_heading = "WebSocket", long = "ws-deflate")]
    pub ws_deflate: bool,
    /// --ws-deflate: permessage-deflate parameters the offer asks of the server, as the
    /// header writes them — 'server_no_context_takeover; server_max_window_bits=10',
    /// say, to measure the server as it would be configured; an answer that does not
    /// honour them fails the connection (ws_handshake)
    #[arg(
        help_heading = "WebSocket",
        long = "ws-deflate-params",
        value_name = "PARAMS",
        requires = "ws_deflate"
    )]
    pub ws_deflate_params: Option<String>,
    /// WebSocket: each message's answer is the next message holding TEXT; the others
    /// are read, counted and let go (a room's or a feed's traffic between answers).
    /// Takes --ws-message's templates, made with the same values as its message:
    /// --ws-message '{"id":{{.RequestNumber}}}' --ws-expect '"id":{{.RequestNumber}}'
    #[arg(
        help_heading = "WebSocket",
        long = "ws-expect",
        value_name = "TEXT",
        conflicts_with_all = ["ws_ping", "stream"]
    )]
    pub ws_expect: Option<String>,
    /// WebSocket: a session's send/expect steps from FILE, one JSON object a line:
    /// {"send": "join", "expect": "joined"} ("expect" left out: any message answers).
    /// Each connection sends the steps in turn from the first, each answer the next
    /// message holding its step's text; with --inject or --sessions a user makes
    /// --calls of them, --think apart
    #[arg(
        help_heading = "WebSocket",
        long = "ws-steps",
        value_name = "FILE",
        conflicts_with_all = ["ws_ping", "ws_message", "ws_expect", "body_lines", "body_file", "stream"]
    )]
    pub ws_steps: Option<String>,
    /// Reuse connections (the default)
    #[arg(
        help_heading = "What to load",
        long = "keepalive",
        overrides_with = "no_keepalive"
    )]
    pub keepalive: bool,
    /// Open a new connection for every request
    #[arg(
        help_heading = "What to load",
        long = "no-keepalive",
        alias = "disable-keepalive"
    )]
    pub no_keepalive: bool,
    /// Add a header, 'Name: value' (repeatable)
    #[arg(short = 'H', long = "header", value_name = "H", action = ArgAction::Append)]
    pub headers: Vec<String>,
    /// Request method
    #[arg(short = 'm', long = "method", value_name = "M", default_value = "GET")]
    pub method: String,
    /// Follow up to N redirects per request (at most 100; 301, 302, 303, 307, 308 to
    /// the same origin), each hop timed; the request's latency runs to the last answer. 0 (the
    /// default): a 3xx is the answer. oha's --redirect, though oha follows 10 unless told
    #[arg(
        help_heading = "What to load",
        long = "redirects",
        visible_alias = "redirect",
        value_name = "N",
        default_value_t = 0
    )]
    pub redirects: u32,
    /// Time each response body as it arrives: its first byte, each piece the server
    /// framed (an HTTP/1.1 chunk, an HTTP/2 DATA frame, a read of an unframed body) and
    /// the gaps between them, from each request's intended start. With a ws:// URL,
    /// each message the server pushes (from its send stamp too, when it has one)
    #[arg(
        help_heading = "Streams and LLM serving",
        long = "stream",
        conflicts_with = "sse"
    )]
    pub stream: bool,
    /// Time each response as a server-sent event stream (text/event-stream): its first
    /// byte, each event and the gaps between them; a `data: [DONE]` event ends it
    #[arg(help_heading = "Streams and LLM serving", long = "sse")]
    pub sse: bool,
    /// Load an OpenAI-compatible completion server (the URL is its /v1/completions or
    /// /v1/chat/completions): each request a streamed completion of a drawn prompt
    /// (or one of --prompts), timed as --sse times events (only those carrying text),
    /// with each completion's tokens (its usage chunk's count), the time per output
    /// token and tokens per second
    #[arg(help_heading = "Streams and LLM serving", 
        long = "openai",
        value_name = "API",
        value_parser = clap::builder::PossibleValuesParser::new(["chat", "completions"])
            .try_map(|s| s.parse::<stampede_engine::openai::Api>()),
        conflicts_with_all = ["body_file", "body_lines", "targets", "stream", "sse", "rand_regex_url"]
    )]
    pub openai: Option<stampede_engine::openai::Api>,
    /// --openai: the model each request names
    #[arg(
        help_heading = "Streams and LLM serving",
        long = "model",
        value_name = "NAME",
        requires = "openai",
        default_value = "stampede-mock"
    )]
    pub model: String,
    /// --openai: words in each drawn prompt (with --tokenizer: tokens; the mean, see
    /// --range-ratio)
    #[arg(
        help_heading = "Streams and LLM serving",
        long = "input-tokens",
        value_name = "N",
        requires = "openai",
        default_value_t = 128
    )]
    pub input_tokens: u32,
    /// --openai: tokens each completion asks for at most (the mean)
    #[arg(
        help_heading = "Streams and LLM serving",
        long = "output-tokens",
        value_name = "N",
        requires = "openai",
        default_value_t = 64
    )]
    pub output_tokens: u32,
    /// --openai: each prompt's length and maximum drawn uniformly within this ratio of
    /// the means, in [0, 1)
    #[arg(
        help_heading = "Streams and LLM serving",
        long = "range-ratio",
        value_name = "R",
        requires = "openai",
        default_value_t = 0.0
    )]
    pub range_ratio: f64,
    /// --openai: prompts from FILE, one JSON object per line: {"prompt": "…"} (and
    /// "output_tokens": N for its own maximum), used in turn
    #[arg(
        help_heading = "Streams and LLM serving",
        long = "prompts",
        value_name = "FILE",
        requires = "openai"
    )]
    pub prompts: Option<String>,
    /// --openai: ask the server to ignore its end-of-sequence token (vLLM's
    /// ignore_eos), so each completion runs to its maximum
    #[arg(
        help_heading = "Streams and LLM serving",
        long = "ignore-eos",
        requires = "openai"
    )]
    pub ignore_eos: bool,
    /// --openai: the model's tokenizer (its tokenizer.json, the directory holding it,
    /// or a model in the local Hugging Face cache): drawn prompts are --input-tokens
    /// of its tokens, and a completion without usage is counted from its text
    #[arg(
        help_heading = "Streams and LLM serving",
        long = "tokenizer",
        value_name = "PATH",
        requires = "openai"
    )]
    pub tokenizer: Option<String>,
    /// --openai chat: conversations of N turns, each request carrying the history so
    /// far (the shared system prompt, earlier turns and the model's answers); each
    /// connection holds one conversation after another (with --rate, conversations
    /// arrive at that rate, each on its own connection); figures per turn
    #[arg(
        help_heading = "Streams and LLM serving",
        long = "turns",
        value_name = "N",
        requires = "openai"
    )]
    pub turns: Option<u32>,
    /// --turns: the wait before each turn after the first: a duration, or MIN-MAX
    /// drawn uniformly (500ms-2s)
    #[arg(
        help_heading = "Streams and LLM serving",
        long = "turn-delay",
        value_name = "T[-T]",
        requires = "turns"
    )]
    pub turn_delay: Option<String>,
    /// --turns: a system prompt of N words (tokens with --tokenizer) that every
    /// conversation begins with, the prefix a server's cache can share
    #[arg(
        help_heading = "Streams and LLM serving",
        long = "system-prompt",
        value_name = "N",
        requires = "turns"
    )]
    pub system_prompt: Option<u32>,
    /// --turns: the most tokens (words without --tokenizer) one request's messages
    /// may hold
    #[arg(
        help_heading = "Streams and LLM serving",
        long = "max-context",
        value_name = "N",
        requires = "turns"
    )]
    pub max_context: Option<u32>,
    /// --max-context: a longer history drops its oldest exchanges (drop-oldest) or
    /// ends its conversation (end)
    #[arg(help_heading = "Streams and LLM serving", long = "context-overflow", value_name = "HOW", default_value = "drop-oldest", value_parser = |s: &str| s.parse::<stampede_journey::chat::Overflow>())]
    pub context_overflow: stampede_journey::chat::Overflow,
    /// --turns: conversations from a ShareGPT JSON file: each human turn a user turn
    /// asking for as many tokens as its recorded reply had, the model answering live
    #[arg(
        help_heading = "Streams and LLM serving",
        long = "conversations",
        value_name = "FILE",
        requires = "turns"
    )]
    pub conversations: Option<String>,
    /// With --stream, --sse or --openai: a response with no event for this long (since
    /// its last, or its send before the first) fails as stream_stall and its
    /// connection closes
    #[arg(help_heading = "Streams and LLM serving", long = "event-timeout", value_name = "T", value_parser = common::parse_duration)]
    pub event_timeout: Option<std::time::Duration>,
    /// With --openai: service levels a completion must meet to count toward goodput,
    /// KEY:MS with KEY ttft, tpot or e2el (vLLM's --goodput; TTFT and E2EL from the
    /// intended start)
    #[arg(help_heading = "Streams and LLM serving", long = "goodput", value_name = "KEY:MS", num_args = 1.., requires = "openai")]
    pub goodput: Vec<String>,
    /// Request body from a file (-D as oha)
    #[arg(long = "body-file", short_alias = 'D', value_name = "FILE")]
    pub body_file: Option<String>,
    /// Per-request timeout (default 30s; 60s with --inject, as Gatling)
    #[arg(long = "timeout", value_name = "T", value_parser = common::parse_duration)]
    pub timeout: Option<std::time::Duration>,
    /// Offer R requests per second over the connection pool (open model; latency counts
    /// from each request's scheduled start, correcting coordinated omission)
    #[arg(
        help_heading = "The open model",
        short = 'R',
        long = "rate",
        value_name = "R",
        conflicts_with = "inject"
    )]
    pub rate: Option<f64>,
    /// With --rate: Poisson arrivals instead of evenly spaced ones
    #[arg(help_heading = "The open model", long = "poisson", requires = "rate")]
    pub poisson: bool,
    /// With --rate or --find-max: gamma-distributed gaps between arrivals with this
    /// shape, as vLLM's --burstiness: below 1 burstier, above 1 smoother, 1 a Poisson
    /// process (default: evenly spaced, or Poisson with --poisson)
    #[arg(help_heading = "The open model", long = "burstiness", value_name = "F")]
    pub burstiness: Option<f64>,
    /// Offer requests at rates that change over the run, as Gatling's open steps,
    /// e.g. 'rampUsersPerSec(100) to(1000) during(1 minute)' or
    /// 'constantUsersPerSec(500) during(30s)' (repeatable, chained in order): each
    /// arrival a request on the connection pool, timed from its arrival (k6's
    /// ramping-arrival-rate); the run ends with the steps, or at -d
    #[arg(
        help_heading = "The open model",
        long = "rate-steps",
        value_name = "STEP",
        action = ArgAction::Append,
        conflicts_with_all = ["rate", "inject"]
    )]
    pub rate_steps: Vec<String>,
    /// Open model: a request (or user) due within T of a moment the client is awake
    /// goes out then, at most T early, timed from its send, so one wake-up sends what
    /// falls due in the next moments (default 400us; 0: each at its own time)
    #[arg(help_heading = "The open model", long = "send-horizon", value_name = "T", value_parser = common::parse_duration)]
    pub send_horizon: Option<std::time::Duration>,
    /// Seed of random arrivals (--poisson, randomized injection): the same seed gives
    /// the same schedule, on every segment of a run
    #[arg(
        help_heading = "The open model",
        long = "seed",
        value_name = "N",
        default_value_t = 0x5eed
    )]
    pub seed: u64,
    /// A Gatling injection step, e.g. 'rampUsers(100).during(60)' or
    /// 'constantUsersPerSec(50) during (1 minute)' (repeatable, chained in order); each
    /// user opens its own connection, makes --calls requests and closes it
    #[arg(help_heading = "The open model", long = "inject", value_name = "STEP", action = ArgAction::Append)]
    pub inject: Vec<String>,
    /// Requests per user (with --inject)
    #[arg(
        help_heading = "The open model",
        long = "calls",
        value_name = "N",
        default_value_t = 1,
        requires = "inject"
    )]
    pub calls: u32,
    /// Requests a user writes back to back before waiting for their responses
    #[arg(
        help_heading = "The open model",
        long = "burst",
        value_name = "N",
        default_value_t = 1,
        requires = "inject"
    )]
    pub burst: u32,
    /// Pause between a user's bursts
    #[arg(help_heading = "The open model", long = "think", value_name = "T", default_value = "0s", value_parser = common::parse_duration, requires = "inject")]
    pub think: std::time::Duration,
    /// Capacity search: find the highest fixed rate that meets this condition (as
    /// --assert writes one: 'p99 < 10ms', 'errors < 0.1%'; repeatable, all must hold)
    /// with open-model steps up to --max-rate
    #[arg(help_heading = "Capacity search", 
        long = "find-max",
        value_name = "COND",
        action = ArgAction::Append,
        requires = "max_rate",
        conflicts_with_all = ["rate", "inject", "requests", "spec"]
    )]
    pub find_max: Vec<String>,
    /// With --find-max: never offer more than R req/s
    #[arg(
        help_heading = "Capacity search",
        long = "max-rate",
        value_name = "R",
        requires = "find_max"
    )]
    pub max_rate: Option<f64>,
    /// With --find-max: the first step's rate (default: 1/32 of --max-rate)
    #[arg(
        help_heading = "Capacity search",
        long = "start-rate",
        value_name = "R",
        requires = "find_max"
    )]
    pub start_rate: Option<f64>,
    /// With --find-max: how long each step is measured
    #[arg(help_heading = "Capacity search", long = "step-duration", value_name = "T", default_value = "5s", value_parser = common::parse_duration, requires = "find_max")]
    pub step_duration: std::time::Duration,
    /// With --find-max: a run at each step's rate before it is measured, not counted
    #[arg(help_heading = "Capacity search", long = "step-warmup", value_name = "T", default_value = "1s", value_parser = common::parse_duration, requires = "find_max")]
    pub step_warmup: std::time::Duration,
    /// With --find-max: stop when the highest pass and the lowest failure are this
    /// close (percent of the failure)
    #[arg(
        help_heading = "Capacity search",
        long = "precision",
        value_name = "PCT",
        default_value_t = 5.0,
        requires = "find_max"
    )]
    pub precision: f64,
    /// With --find-max: most steps in all
    #[arg(
        help_heading = "Capacity search",
        long = "max-steps",
        value_name = "N",
        default_value_t = 16,
        requires = "find_max"
    )]
    pub max_steps: usize,
    /// Report format
    #[arg(
        help_heading = "Outputs",
        long = "format",
        value_enum,
        default_value = "text"
    )]
    pub format: Format,
    /// Bounds of the Gatling response-time distribution, in ms
    #[arg(
        help_heading = "Outputs",
        long = "gatling-bounds",
        value_name = "LOW,HIGH",
        default_value = "800,1200"
    )]
    pub gatling_bounds: String,
    /// The summary's limit line with its reasons and figures (the JSON's `limit` has
    /// them all), and which kernel interface carried the run (--io)
    #[arg(help_heading = "Outputs", short = 'v', long = "verbose")]
    pub verbose: bool,
    /// No live view (progress, per-second lines). As in ab and curl, -q is quiet; oha's
    /// -q (queries per second) is -R/--rate here
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
    /// Connect to this Unix socket, keeping the URL's host and path for the request
    #[arg(
        help_heading = "What to load",
        long = "unix-socket",
        value_name = "PATH"
    )]
    pub unix_socket: Option<String>,
    #[command(flatten, next_help_heading = "Outputs")]
    pub out: crate::common::Outputs,
    /// Show the run live in a browser at http://ADDR/ (default 127.0.0.1:8089; give an
    /// address as --dashboard=HOST:PORT); the page turns into the HTML report at the end
    #[arg(help_heading = "Outputs", 
        long = "dashboard",
        value_name = "ADDR",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = stampede_metrics::dashboard::DEFAULT_ADDR
    )]
    pub dashboard: Option<String>,
    #[command(flatten, next_help_heading = "gRPC")]
    pub grpc: crate::grpc::GrpcArgs,
    #[command(flatten, next_help_heading = "Outputs")]
    pub live: crate::metrics::LiveArgs,
    #[command(flatten, next_help_heading = "Connections and TLS")]
    pub tls: crate::tls::TlsArgs,
    #[command(flatten, next_help_heading = "Connections and TLS")]
    pub net: crate::common::NetArgs,
    #[command(flatten, next_help_heading = "Distributed runs")]
    pub segments: crate::common::SegmentArgs,
    #[command(flatten)]
    pub server: stampede_flags::args::ServerMetricsArgs,
}

impl LoadArgs {
    /// How a rate's arrivals are spaced: `--burstiness` (gamma gaps), `--poisson` or
    /// evenly; a burstiness without a rate to shape is refused.
    pub(super) fn gaps(&self) -> Result<stampede_engine::arrivals::Gaps, Exit> {
        use stampede_engine::arrivals::Gaps;
        let burstiness = match self.burstiness {
            Some(_) if self.rate.is_none() && self.find_max.is_empty() => {
                return Err(Exit::usage(
                    "--burstiness shapes the gaps of an open model's arrivals; add --rate R (or --find-max)",
                ))
            }
            Some(b) => Some(
                Gaps::check_burstiness(b).map_err(|e| Exit::usage(format!("--burstiness: {e}")))?,
            ),
            None => None,
        };
        Ok(Gaps::of(self.poisson, burstiness))
    }
}

/// `--feeder-order`'s value.
fn parse_order(s: &str) -> Result<stampede_journey::feeder::Order, stampede_journey::Invalid> {
    s.parse()
}

/// oha's `-q N` (queries per second) would be read as `-q` (quiet) and a URL `N`, or
/// as clap's complaint about one of them: it is named before clap parses, with
/// stampede's spelling. `args` follow `load`.
pub fn precheck(args: &[String]) -> Result<(), Exit> {
    let rate = args.iter().enumerate().find_map(|(i, a)| {
        let v = match a.strip_prefix("-q") {
            Some("") => args.get(i + 1)?.as_str(),
            Some(v) => v.strip_prefix('=').unwrap_or(v),
            None => return None,
        };
        v.parse::<f64>().is_ok().then_some(v)
    });
    match rate {
        Some(r) => Err(Exit::usage(format!(
            "-q {r}: -q is --quiet here (as in ab and curl) and takes no value; oha's -q (requests per second) is -R/--rate {r}"
        ))),
        None => Ok(()),
    }
}
