//! gRPC against the Go implementation, both ways: its example greeter server loaded
//! by `stampede load --call` and by `stampede ghz`; its example client, ghz and the
//! health probe calling the reference server; and `stampede ghz`'s summary laid out
//! line for line as ghz's own, both run against the reference server. The Go binaries
//! come from $STAMPEDE_GO_GRPC (a directory with `greeter`, `greeter_client`, `ghz`
//! and `grpc-health-probe`, built from the Go module proxy by .ci/run). The schema is
//! also asked of the Go server's reflection service.

use std::io::BufRead;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;

use crate::common::missing_peer;

const BIN: &str = env!("CARGO_BIN_EXE_stampede");
const PROTO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../proto");

fn hello_proto() -> String {
    format!("{PROTO}/helloworld.proto")
}

/// The directory of the Go binaries; `None` (said) when it is not set.
fn go_bin() -> Option<PathBuf> {
    match std::env::var_os("STAMPEDE_GO_GRPC") {
        Some(d) => Some(PathBuf::from(d)),
        None => {
            missing_peer("the Go gRPC examples, ghz and grpc-health-probe (STAMPEDE_GO_GRPC=DIR holding greeter, greeter_client, ghz and grpc-health-probe, built by .ci/run with `go build`/`go install`)");
            None
        }
    }
}

/// A child process, killed when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The Go greeter on 127.0.0.1, once it says where it listens: its `HOST:PORT`.
fn go_greeter(bin: &std::path::Path) -> (Running, String) {
    let mut child = Command::new(bin.join("greeter"))
        .args(["--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the Go greeter starts");
    let out = child.stdout.take().unwrap();
    let mut line = String::new();
    std::io::BufReader::new(out).read_line(&mut line).unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("the Go greeter said {line:?}"))
        .to_string();
    (Running(child), addr)
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `stampede load` at `http://addr` with `args`: its JSON result.
fn load_json(addr: &str, args: &[&str]) -> Value {
    let out = Command::new(BIN)
        .args(["load", &format!("http://{addr}")])
        .args(args)
        .args(["-q", "--json", "-"])
        .output()
        .unwrap();
    serde_json::from_str(&ok(&out)).unwrap()
}

/// `ghz`'s arguments for `n` SayHello calls, 10 in flight, to `addr`.
fn ghz_args(addr: &str, n: &str, format: &str) -> Vec<String> {
    [
        "--insecure",
        "--proto",
        &hello_proto(),
        "--call",
        "helloworld.Greeter.SayHello",
        "-d",
        r#"{"name": "go"}"#,
        "-n",
        n,
        "-c",
        "10",
        "-O",
        format,
        addr,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

#[test]
fn the_go_greeter_is_loaded_natively_and_as_ghz_would() {
    let Some(bin) = go_bin() else { return };
    let (_server, addr) = go_greeter(&bin);
    let proto = hello_proto();
    let call = ["--proto", &proto, "--call", "helloworld.Greeter/SayHello"];
    let flags = [
        "--data",
        r#"{"name": "x"}"#,
        "-n",
        "500",
        "-c",
        "2",
        "--streams",
        "10",
    ];
    let v = load_json(&addr, &[&call[..], &flags[..]].concat());
    assert_eq!(v["grpc"]["OK"], 500, "{}", v["grpc"]);
    assert_eq!(v["stream"]["events"], 500, "{}", v["stream"]);
    let out = Command::new(BIN)
        .arg("ghz")
        .args(ghz_args(&addr, "300", "json"))
        .output()
        .unwrap();
    let v: Value = serde_json::from_str(&ok(&out)).unwrap();
    assert_eq!(v["count"], 300, "{v}");
    assert_eq!(v["statusCodeDistribution"]["OK"], 300, "{v}");
    assert_eq!(v["details"].as_array().unwrap().len(), 300);
    assert_eq!(v["options"]["call"], "helloworld.Greeter.SayHello");
    // A method the Go server does not have: each call answered Unimplemented.
    let out = Command::new(BIN)
        .args([
            "ghz",
            "--insecure",
            "--proto",
            &format!("{PROTO}/echo.proto"),
        ])
        .args([
            "--call",
            "stampede.v1.Echo.Unary",
            "-n",
            "20",
            "-c",
            "2",
            &addr,
        ])
        .output()
        .unwrap();
    let text = ok(&out);
    assert!(text.contains("[Unimplemented]   20 responses"), "{text}");
    assert!(text.contains("rpc error: code = Unimplemented"), "{text}");
}

#[test]
fn go_clients_call_the_reference_server() {
    let Some(bin) = go_bin() else { return };
    let s = crate::common::srv();
    let addr = s.addr().to_string();
    let out = Command::new(bin.join("greeter_client"))
        .args(["-addr", &addr, "-name", "stampede"])
        .output()
        .unwrap();
    ok(&out);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("Greeting: Hello stampede"), "{said}");
    let out = Command::new(bin.join("ghz"))
        .args(ghz_args(&addr, "200", "json"))
        .output()
        .unwrap();
    let v: Value = serde_json::from_str(&ok(&out)).unwrap();
    assert_eq!(v["statusCodeDistribution"]["OK"], 200, "{v}");
    // ghz compressing its messages with gzip: inflated by the server.
    let mut args = ghz_args(&addr, "50", "json");
    args.insert(0, "-e".into());
    let out = Command::new(bin.join("ghz")).args(&args).output().unwrap();
    let v: Value = serde_json::from_str(&ok(&out)).unwrap();
    assert_eq!(v["statusCodeDistribution"]["OK"], 50, "{v}");
    // The health probe: the server, a service it serves, one it does not.
    let probe = |service: &str| {
        Command::new(bin.join("grpc-health-probe"))
            .args([&format!("-addr={addr}"), &format!("-service={service}")])
            .output()
            .unwrap()
    };
    for service in ["", "helloworld.Greeter", "grpc.health.v1.Health"] {
        let out = probe(service);
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("status: SERVING"),
            "{service}: {out:?}"
        );
        assert!(out.status.success(), "{service}: {out:?}");
    }
    let out = probe("no.Such");
    assert!(!out.status.success(), "{out:?}");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("NotFound"), "{said}");
}

/// What a summary's lines say, numbers left out: the labels in their order.
fn skeleton(summary: &str) -> Vec<String> {
    summary
        .lines()
        // The histogram's rows and the distribution's depend on the numbers.
        .filter(|l| !l.contains("]\t|") && !l.contains(" % in "))
        .map(|l| {
            l.chars()
                .filter(|c| !c.is_ascii_digit() && *c != '.')
                .collect::<String>()
                .trim_end()
                .to_string()
        })
        .collect()
}

#[test]
fn the_ghz_summary_is_laid_out_as_ghzs() {
    let Some(bin) = go_bin() else { return };
    let s = crate::common::srv();
    let addr = s.addr().to_string();
    let theirs = ok(&Command::new(bin.join("ghz"))
        .args(ghz_args(&addr, "200", "summary"))
        .output()
        .unwrap());
    let ours = ok(&Command::new(BIN)
        .arg("ghz")
        .args(ghz_args(&addr, "200", "summary"))
        .output()
        .unwrap());
    assert_eq!(
        skeleton(&ours),
        skeleton(&theirs),
        "ours:\n{ours}\ntheirs:\n{theirs}"
    );
    let rows = |t: &str| t.lines().filter(|l| l.contains("]\t|")).count();
    assert_eq!(rows(&ours), 11, "{ours}");
    let pct = |t: &str| {
        t.lines()
            .filter(|l| l.contains(" % in "))
            .map(|l| l.split(" % in").next().unwrap_or("").trim().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(pct(&ours), pct(&theirs));
    // The CSV's head and a line per call, as ghz's.
    let csv = ok(&Command::new(BIN)
        .arg("ghz")
        .args(ghz_args(&addr, "20", "csv"))
        .output()
        .unwrap());
    let theirs = ok(&Command::new(bin.join("ghz"))
        .args(ghz_args(&addr, "20", "csv"))
        .output()
        .unwrap());
    assert_eq!(csv.lines().nth(1), theirs.lines().nth(1));
    assert_eq!(
        csv.lines().filter(|l| l.ends_with(",OK,")).count(),
        20,
        "{csv}"
    );
}

#[test]
fn the_schema_is_asked_of_the_go_servers_reflection_service() {
    let Some(bin) = go_bin() else { return };
    let (_server, addr) = go_greeter(&bin);
    // No --proto: the Go server's reflection service gives the schema.
    let call = [
        "--call",
        "helloworld.Greeter/SayHello",
        "--data",
        r#"{"name": "r"}"#,
    ];
    let v = load_json(&addr, &[&call[..], &["-n", "100", "-c", "1"]].concat());
    assert_eq!(v["grpc"]["OK"], 100, "{}", v["grpc"]);
    let out = Command::new(BIN)
        .args(["ghz", "--insecure", "--call", "helloworld.Greeter.SayHello"])
        .args(["--reflect-metadata", r#"{"x-asked": "yes"}"#])
        .args([
            "-d",
            r#"{"name": "r"}"#,
            "-n",
            "50",
            "-c",
            "5",
            "-O",
            "json",
            &addr,
        ])
        .output()
        .unwrap();
    let v: Value = serde_json::from_str(&ok(&out)).unwrap();
    assert_eq!(v["statusCodeDistribution"]["OK"], 50, "{v}");
    // A service it does not have: the ones it has, listed; a field its schema does
    // not have, named.
    let out = Command::new(BIN)
        .args([
            "ghz",
            "--insecure",
            "--call",
            "no.Such.Call",
            "-n",
            "1",
            &addr,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("no.Such") && said.contains("helloworld.Greeter"),
        "{said}"
    );
    let out = Command::new(BIN)
        .args(["ghz", "--insecure", "--call", "helloworld.Greeter.SayHello"])
        .args(["-d", r#"{"nom": "r"}"#, "-n", "1", &addr])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("nom"), "{said}");
}

#[test]
fn ghz_learns_the_reference_servers_schema_by_reflection() {
    let Some(bin) = go_bin() else { return };
    let (_serving, url) = crate::common::serve(&[]);
    let addr = url.trim_start_matches("http://");
    let ghz = |call: &str, data: &str, n: &str| {
        let out = Command::new(bin.join("ghz"))
            .args(["--insecure", "--call", call, "-d", data, "-n", n])
            .args(["-c", "5", "-O", "json", addr])
            .output()
            .unwrap();
        serde_json::from_str::<Value>(&ok(&out)).unwrap()
    };
    let v = ghz("helloworld.Greeter.SayHello", r#"{"name": "r"}"#, "50");
    assert_eq!(v["statusCodeDistribution"]["OK"], 50, "{v}");
    // A bidirectional stream: ghz sends its messages while it reads the answers.
    let v = ghz(
        "stampede.v1.Echo.Bidi",
        r#"[{"size": 3}, {"size": 4}]"#,
        "20",
    );
    assert_eq!(v["statusCodeDistribution"]["OK"], 20, "{v}");
}
