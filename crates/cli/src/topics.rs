//! `stampede help TOPIC`: the reference pages of `docs/`, built into the binary so
//! that they match it and need no network. A subcommand's or dialect's name gives its
//! flags instead (`stampede help load`, `stampede help oha`).

/// Each topic: its names, what it covers, and its page.
pub const TOPICS: [(&[&str], &str, &str); 11] = [
    (
        &["workloads", "open-model", "limits"],
        "load's workload models, the open model, which side was the limit, capacity search, exit codes",
        include_str!("../docs/load.md"),
    ),
    (
        &["dialects", "coming-from"],
        "ab, wrk, httperf, h2load, oha, hey, ghz, vegeta and vLLM's command lines",
        include_str!("../docs/dialects.md"),
    ),
    (
        &["protocols", "https", "http2", "http3", "tls"],
        "HTTPS, HTTP/2 and HTTP/3 on both ends",
        include_str!("../docs/protocols.md"),
    ),
    (
        &["outputs", "json", "html", "assertions"],
        "the JSON result, HdrHistogram files, the live view, HTML reports, assertions",
        include_str!("../docs/outputs.md"),
    ),
    (
        &["server", "endpoints"],
        "the reference server's endpoints and options",
        include_str!("../docs/serve.md"),
    ),
    (
        &["distributed", "segments"],
        "one run from many processes and machines, merged exactly",
        include_str!("../docs/distributed.md"),
    ),
    (
        &["plans", "plan"],
        "bench plans: targets, scenarios, verification, statistics",
        include_str!("../docs/plan.md"),
    ),
    (
        &["streaming", "llm", "sse"],
        "streamed responses, server-sent events and LLM serving",
        include_str!("../docs/streaming.md"),
    ),
    (
        &["journeys", "journey", "templates", "feeders"],
        "user journeys: steps with templates, feeders, captures, checks, cookies",
        include_str!("../docs/journeys.md"),
    ),
    (
        &["grpc"],
        "gRPC calls from a .proto or a protoset, counted by status, timed per message",
        include_str!("../docs/grpc.md"),
    ),
    (
        &["websocket", "ws"],
        "WebSocket load (message round trips) and the reference server's endpoints",
        include_str!("../docs/websocket.md"),
    ),
];

/// The page of `name`, if it names a topic.
pub fn page(name: &str) -> Option<&'static str> {
    (TOPICS.iter())
        .find(|(names, _, _)| names.contains(&name))
        .map(|t| t.2)
}

/// The list `stampede help topics` prints.
pub fn list() -> String {
    let mut o = String::from("Topics (stampede help TOPIC):\n");
    for (names, what, _) in TOPICS {
        o += &format!("  {:<12} {what}\n", names[0]);
    }
    o += "A subcommand's or dialect's name gives its flags: stampede help load, stampede help oha.\n";
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_topic_has_a_page_and_names_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for (names, _, text) in TOPICS {
            assert!(text.starts_with("# "), "{names:?}");
            for n in names {
                assert!(seen.insert(*n), "{n} twice");
                assert_eq!(page(n), Some(text));
            }
        }
        assert!(page("nosuch").is_none());
        // A subcommand's name gives its flags, never a page.
        use clap::CommandFactory as _;
        for c in crate::Cli::command().get_subcommands() {
            assert!(page(c.get_name()).is_none(), "{}", c.get_name());
        }
        assert!(list().contains("  dialects     ab, wrk"));
    }
}
