//! The model `vllm bench serve` asks for when `--model` is not given: as vLLM does,
//! the first of the server's `GET /v1/models`, asked over plain HTTP with a timeout
//! and a bounded answer (a server that does not answer is an error naming `--model`).

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use crate::FlagError;

/// The most bytes of the answer read.
const MAX_ANSWER: u64 = 1 << 20;

const TIMEOUT: Duration = Duration::from_secs(10);

/// The first model `base` (`http://host:port[/prefix]`) serves.
pub fn first_model(base: &str) -> Result<String, FlagError> {
    let fail = |why: String| {
        FlagError::fail(format!(
            "--model: not given, and the server's first model could not be read from {base}/v1/models: {why}; give --model NAME"
        ))
    };
    let Some(rest) = base.strip_prefix("http://") else {
        return Err(fail("only an http:// server is asked here".into()));
    };
    let (authority, prefix) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
        None => (rest, ""),
    };
    let addr = (authority
        .to_socket_addrs()
        .map_err(|e| fail(e.to_string()))?)
    .next()
    .ok_or_else(|| fail("no address".into()))?;
    let mut c = TcpStream::connect_timeout(&addr, TIMEOUT).map_err(|e| fail(e.to_string()))?;
    c.set_read_timeout(Some(TIMEOUT))
        .map_err(|e| fail(e.to_string()))?;
    c.set_write_timeout(Some(TIMEOUT))
        .map_err(|e| fail(e.to_string()))?;
    write!(
        c,
        "GET {prefix}/v1/models HTTP/1.1\r\nHost: {authority}\r\nAccept: application/json\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| fail(e.to_string()))?;
    let mut answer = Vec::new();
    (&mut c)
        .take(MAX_ANSWER + 1)
        .read_to_end(&mut answer)
        .map_err(|e| fail(e.to_string()))?;
    if answer.len() as u64 > MAX_ANSWER {
        return Err(fail("an answer over 1 MiB".into()));
    }
    let text = String::from_utf8_lossy(&answer);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| fail("no complete answer".into()))?;
    let status = head.split_whitespace().nth(1).unwrap_or("");
    if !status.starts_with('2') {
        return Err(fail(format!("status {status}")));
    }
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_string()
    };
    let v: serde_json::Value =
        serde_json::from_str(&body).map_err(|e| fail(format!("not JSON ({e})")))?;
    v["data"][0]["id"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| fail("no model in its data".into()))
}

/// A chunked body's data (what is there of it).
fn dechunk(mut raw: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = raw.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.split(';').next().unwrap_or("").trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        raw = rest[n..].trim_start_matches("\r\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunked_bodies_are_joined() {
        assert_eq!(dechunk("3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"), "abcde");
    }

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
        let e = first_model("https://127.0.0.1:1").unwrap_err().to_string();
        assert!(e.contains("only an http:// server"), "{e}");
    }
}
