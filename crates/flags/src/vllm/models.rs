//! The model `vllm bench serve` asks for when `--model` is not given: as vLLM does,
//! the first of the server's `GET /v1/models`, asked with the live outputs' HTTP
//! client (a timeout, a bounded answer, TLS for https); a server that does not
//! answer is an error naming `--model`.

use std::time::Duration;

use stampede_metrics::post::{Client, Endpoint};

use crate::FlagError;

/// The most bytes of the answer read.
const MAX_ANSWER: usize = 1 << 20;

/// The first model `base` (`http[s]://host:port[/prefix]`) serves.
pub fn first_model(base: &str) -> Result<String, FlagError> {
    let fail = |why: String| {
        FlagError::fail(format!(
            "--model: not given, and the server's first model could not be read from {base}/v1/models: {why}; give --model NAME"
        ))
    };
    let endpoint = Endpoint::parse(&format!("{}/v1/models", base.trim_end_matches('/')))
        .map_err(|e| fail(e.to_string()))?;
    let mut client = Client::new(endpoint);
    client.timeout = Duration::from_secs(10);
    let body = client.get(MAX_ANSWER).map_err(|e| fail(e.to_string()))?;
    let v: serde_json::Value =
        serde_json::from_slice(&body).map_err(|e| fail(format!("not JSON ({e})")))?;
    v["data"][0]["id"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| fail("no model in its data".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_that_is_not_there_is_an_error_naming_the_flag() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let e = first_model(&format!("http://127.0.0.1:{port}"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--model: not given") && e.contains("give --model NAME"),
            "{e}"
        );
        let e = first_model("ftp://127.0.0.1:1").unwrap_err().to_string();
        assert!(e.contains("http:// or https://"), "{e}");
    }
}
