//! gRPC calls without generated code: the schema from `.proto` files compiled at run
//! time, from a protoset, or asked of the server's reflection service
//! ([`crate::reflect`]), the method found by its full name, and the request
//! messages built from JSON once, before the run, as the engine's requests (an HTTP/2
//! POST to `/package.Service/Method` carrying length-prefixed messages).
//!
//! What is wrong is said before any load: a `.proto` that does not parse (file and
//! line), a method that does not exist (the services and methods that do), JSON that
//! does not fit the message (the field). Each `.proto` file and protoset is read
//! within a size limit checked before reading.

use std::path::{Path, PathBuf};

use miette::Diagnostic;
use prost_reflect::{DescriptorPool, DynamicMessage, MethodDescriptor};
use protox::file::{ChainFileResolver, File, FileResolver, GoogleFileResolver};
use stampede_engine::input::{self, Input};
use stampede_engine::{Request, RequestBuilder, Target};

use crate::calldata::Maker;
use crate::GrpcError;

/// The most one `.proto` file may hold.
const MAX_PROTO: u64 = 4 << 20;

/// The most messages one call's data may hold (a JSON array).
pub const MAX_MESSAGES: usize = 10_000;

/// A run's calls: its requests, built once; or its one request, whose body and
/// templated metadata are made for each call; and how a stream's messages are paced.
pub struct Calls {
    pub requests: Vec<Request>,
    pub made: Option<std::sync::Arc<Maker>>,
    pub send: Option<stampede_engine::StreamSend>,
}

/// A stream's pacing as the flags give it (zero: not given).
#[derive(Debug, Clone, Copy, Default)]
pub struct Pacing {
    pub interval: std::time::Duration,
    pub duration: std::time::Duration,
    pub count: u64,
}

/// How a client or bidirectional stream of `method` sends its messages (see
/// [`stampede_engine::StreamSend`]): `None` without an interval (all at once, a count
/// then cycling the data's messages into the body). `flags` name the interval, the
/// duration and the count in the errors.
pub fn stream_send(
    method: &MethodDescriptor,
    p: Pacing,
    flags: [&str; 3],
) -> Result<Option<stampede_engine::StreamSend>, GrpcError> {
    let [interval, duration, count] = flags;
    let given = [
        (!p.interval.is_zero(), interval),
        (!p.duration.is_zero(), duration),
        (p.count > 0, count),
    ];
    if let Some((_, flag)) = given.iter().find(|g| g.0) {
        if !method.is_client_streaming() {
            return Err(GrpcError::usage(format!(
                "{flag}: {} takes one message per call; it applies to client and bidirectional streams",
                method.full_name()
            )));
        }
    }
    let max = stampede_engine::StreamSend::MAX_SPAN;
    for (d, flag) in [(p.interval, interval), (p.duration, duration)] {
        if d > max {
            return Err(GrpcError::usage(format!("{flag} {d:?}: at most an hour")));
        }
    }
    if p.interval.is_zero() {
        if !p.duration.is_zero() {
            return Err(GrpcError::usage(format!(
                "{duration}: a stream's messages are paced here, never sent as fast as the connection takes them; give {interval} too (e.g. 10ms), or {count} for a number of messages"
            )));
        }
        if p.count > MAX_MESSAGES as u64 {
            return Err(GrpcError::usage(format!(
                "{count} {}: at most {MAX_MESSAGES} messages a stream sent at once (with {interval}, any number)",
                p.count
            )));
        }
        return Ok(None);
    }
    if p.count > stampede_engine::StreamSend::MAX_COUNT {
        return Err(GrpcError::usage(format!(
            "{count} {}: at most {} messages a stream",
            p.count,
            stampede_engine::StreamSend::MAX_COUNT
        )));
    }
    Ok(Some(stampede_engine::StreamSend {
        interval: p.interval,
        count: (p.count > 0).then_some(p.count),
        duration_us: (!p.duration.is_zero()).then_some(p.duration.as_micros() as u64),
    }))
}

impl Calls {
    /// What the engine takes of the maker.
    pub fn engine_calls(&self) -> Option<stampede_engine::made::MadeCalls> {
        (self.made.clone()).map(|m| stampede_engine::made::MadeCalls(m))
    }
}

/// Where the schema comes from.
pub struct Schema<'a> {
    /// `.proto` files (`--proto`), found directly or under the import paths.
    pub protos: &'a [String],
    /// A compiled `FileDescriptorSet` (`--protoset`).
    pub protoset: Option<&'a str>,
    /// Where imports are looked for (`--import-paths`); each proto's own directory
    /// is added.
    pub import_paths: &'a [String],
}

/// Looks a file up under each include directory, within [`MAX_PROTO`].
struct Limited {
    includes: Vec<PathBuf>,
}

impl FileResolver for Limited {
    fn resolve_path(&self, path: &Path) -> Option<String> {
        self.includes.iter().find_map(|dir| {
            let rel = path.strip_prefix(dir).ok()?;
            let name: Vec<&str> = rel.iter().map(|c| c.to_str()).collect::<Option<_>>()?;
            Some(name.join("/"))
        })
    }

    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        for dir in &self.includes {
            let path = dir.join(name);
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            if !meta.is_file() {
                continue;
            }
            if meta.len() > MAX_PROTO {
                return Err(protox::Error::new(std::io::Error::other(format!(
                    "{}: {} bytes, over the limit of {} MiB for a .proto file",
                    path.display(),
                    meta.len(),
                    MAX_PROTO >> 20
                ))));
            }
            // The compiler parses nesting by recursion: too deep a file is refused
            // here, with its place, before it can overflow the stack.
            let text = std::fs::read(&path).map_err(protox::Error::new)?;
            let text = String::from_utf8_lossy(&text);
            if let Err(refused) = stampede_wire::schema::check(&text) {
                let (line, col) = line_of(&text, refused.offset());
                return Err(protox::Error::new(std::io::Error::other(format!(
                    "{}:{line}:{col}: {refused}",
                    path.display()
                ))));
            }
            return File::open(name, &path);
        }
        Err(protox::Error::file_not_found(name))
    }
}

/// The line (from 1) and column of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    (line, col)
}

/// A compile error as `file:line:col: message`, where the error says where.
fn describe(e: &protox::Error, includes: &[PathBuf]) -> String {
    let file = e.file().map(str::to_string);
    let at = e
        .labels()
        .and_then(|mut l| l.next())
        .map(|l| l.offset())
        .zip(file.as_ref())
        .and_then(|(offset, name)| {
            let text = includes
                .iter()
                .find_map(|d| std::fs::read_to_string(d.join(name)).ok())?;
            Some(line_of(&text, offset))
        });
    match (file, at) {
        (Some(f), Some((line, col))) => format!("{f}:{line}:{col}: {e}"),
        (Some(f), None) if !e.to_string().contains(&f) => format!("{f}: {e}"),
        _ => e.to_string(),
    }
}

impl Schema<'_> {
    /// The descriptors, compiled or decoded.
    pub fn load(&self) -> Result<DescriptorPool, GrpcError> {
        if let Some(set) = self.protoset {
            if !self.protos.is_empty() {
                return Err(GrpcError::usage(
                    "--protoset and --proto both give the schema; give one",
                ));
            }
            let bytes = input::read(set, "--protoset", Input::Config)
                .map_err(|e| GrpcError::usage(e.to_string()))?;
            return DescriptorPool::decode(&bytes[..]).map_err(|e| {
                GrpcError::usage(format!(
                    "--protoset {set}: not a FileDescriptorSet ({e}); write one with protoc --include_imports -o FILE"
                ))
            });
        }
        if self.protos.is_empty() {
            return Err(GrpcError::usage(
                "gRPC calls need the schema: --proto FILE (with --import-paths DIR) or --protoset FILE",
            ));
        }
        let mut includes: Vec<PathBuf> = self.import_paths.iter().map(PathBuf::from).collect();
        for p in self.protos {
            let dir = Path::new(p).parent().filter(|d| !d.as_os_str().is_empty());
            includes.push(dir.map_or_else(|| PathBuf::from("."), Path::to_path_buf));
        }
        includes.push(PathBuf::from("."));
        let mut chain = ChainFileResolver::new();
        chain.add(Limited {
            includes: includes.clone(),
        });
        chain.add(GoogleFileResolver::new());
        let mut c = protox::Compiler::with_file_resolver(chain);
        c.include_imports(true);
        for p in self.protos {
            // A path under an import path is named from it, else by its file name
            // (its directory is an import path).
            let name = Path::new(p);
            let opened = match c.open_file(name) {
                Ok(_) => Ok(()),
                Err(_) if name.is_absolute() || name.components().count() > 1 => name
                    .file_name()
                    .map_or(Ok(()), |f| c.open_file(f).map(|_| ())),
                Err(e) => Err(e),
            };
            opened.map_err(|e| {
                GrpcError::usage(format!("--proto {p}: {}", describe(&e, &includes)))
            })?;
        }
        Ok(c.descriptor_pool())
    }
}

/// The service and the method `call` names (`package.Service/Method` or
/// `package.Service.Method`).
fn split_call(call: &str) -> Result<(&str, &str), GrpcError> {
    let (service, name) = call
        .rsplit_once('/')
        .or_else(|| call.rsplit_once('.'))
        .ok_or_else(|| {
            GrpcError::usage(format!(
                "--call {call:?}: write package.Service/Method, e.g. helloworld.Greeter/SayHello"
            ))
        })?;
    Ok((service.trim_start_matches('/'), name))
}

/// The service `call` names (`package.Service`).
pub fn service_of(call: &str) -> Result<&str, GrpcError> {
    split_call(call).map(|(service, _)| service)
}

/// The method `call` names (`package.Service/Method` or `package.Service.Method`);
/// when there is none, the services and methods there are.
pub fn method(pool: &DescriptorPool, call: &str) -> Result<MethodDescriptor, GrpcError> {
    let (service, name) = split_call(call)?;
    let found = pool
        .get_service_by_name(service)
        .and_then(|s| s.methods().find(|m| m.name() == name));
    found.ok_or_else(|| {
        let mut there: Vec<String> = pool
            .services()
            .flat_map(|s| {
                let full = s.full_name().to_string();
                s.methods()
                    .map(move |m| format!("{full}/{}", m.name()))
                    .collect::<Vec<_>>()
            })
            .collect();
        there.truncate(40);
        GrpcError::usage(format!(
            "--call {call}: no such method; the schema has {}",
            if there.is_empty() {
                "no services".to_string()
            } else {
                there.join(", ")
            }
        ))
    })
}

/// The messages `json` describes for `method`'s input: one object, or an array of
/// them (each call of a unary or server-streaming method takes the next in turn; a
/// client stream sends them all). Encoded, each framed.
pub fn messages(
    method: &MethodDescriptor,
    json: &str,
    what: &str,
) -> Result<Vec<Vec<u8>>, GrpcError> {
    let input = method.input();
    let value: serde_json::Value = serde_json::from_str(json)
        .map_err(|e| GrpcError::usage(format!("{what}: not JSON ({e})")))?;
    let items = match value {
        serde_json::Value::Array(items) => items,
        one => vec![one],
    };
    if items.is_empty() || items.len() > MAX_MESSAGES {
        return Err(GrpcError::usage(format!(
            "{what}: {} messages; give from 1 to {MAX_MESSAGES}",
            items.len()
        )));
    }
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            let m = DynamicMessage::deserialize(input.clone(), item).map_err(|e| {
                let which = if i == 0 {
                    String::new()
                } else {
                    format!(" (message {})", i + 1)
                };
                GrpcError::usage(format!(
                    "{what}{which}: does not fit {} ({e})",
                    input.full_name()
                ))
            })?;
            let mut framed = Vec::new();
            stampede_wire::grpc::frame(&mut framed, false, &prost::Message::encode_to_vec(&m));
            Ok(framed)
        })
        .collect()
}

/// The messages of a binary call data (ghz's `-b`, `-B`): messages each preceded by
/// its length as a varint, or else the whole input as one message. Each is checked
/// against `method`'s input type, then framed as sent.
pub fn binary_messages(
    method: &MethodDescriptor,
    bytes: &[u8],
    what: &str,
) -> Result<Vec<Vec<u8>>, GrpcError> {
    let input = method.input();
    let frame = |m: &[u8]| {
        let mut framed = Vec::with_capacity(m.len() + 5);
        stampede_wire::grpc::frame(&mut framed, false, m);
        framed
    };
    let delimited = || -> Option<Vec<Vec<u8>>> {
        let mut rest = bytes;
        let mut out = Vec::new();
        while !rest.is_empty() {
            let len = usize::try_from(prost::encoding::decode_varint(&mut rest).ok()?).ok()?;
            if len > rest.len() || out.len() >= MAX_MESSAGES {
                return None;
            }
            let (m, tail) = rest.split_at(len);
            DynamicMessage::decode(input.clone(), m).ok()?;
            out.push(frame(m));
            rest = tail;
        }
        (!out.is_empty()).then_some(out)
    };
    if let Some(out) = delimited() {
        return Ok(out);
    }
    DynamicMessage::decode(input.clone(), bytes).map_err(|e| {
        GrpcError::usage(format!(
            "{what}: neither one {} nor messages each after its length ({e})",
            input.full_name()
        ))
    })?;
    Ok(vec![frame(bytes)])
}

/// Framed messages compressed with gzip, each flagged as compressed.
pub fn gzip_messages(framed: Vec<Vec<u8>>) -> Result<Vec<Vec<u8>>, GrpcError> {
    use std::io::Write as _;
    framed
        .into_iter()
        .map(|f| {
            let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            z.write_all(&f[5..])
                .map_err(|e| GrpcError::fail(format!("gzip: {e}")))?;
            let packed = z
                .finish()
                .map_err(|e| GrpcError::fail(format!("gzip: {e}")))?;
            let mut out = Vec::with_capacity(packed.len() + 5);
            stampede_wire::grpc::frame(&mut out, true, &packed);
            Ok(out)
        })
        .collect()
}

/// What every call of a run shares besides its messages.
pub struct CallHeaders<'a> {
    /// Metadata (`Name: value`), sent as headers.
    pub metadata: &'a [(String, String)],
    /// The deadline sent as `grpc-timeout`, if any.
    pub deadline: Option<std::time::Duration>,
    /// The messages are gzip-compressed ([`gzip_messages`]): `grpc-encoding: gzip`.
    pub gzip: bool,
    /// The stream's messages are paced ([`stream_send`]): sent in parts, the body's
    /// length is not declared.
    pub paced: bool,
}

/// The engine's requests for `method` at `target`: one per message (unary and server
/// streaming calls take them in turn), or one carrying every message (client and
/// bidirectional streams).
pub fn requests(
    target: &Target,
    method: &MethodDescriptor,
    framed: Vec<Vec<u8>>,
    h: &CallHeaders,
) -> Result<Vec<Request>, GrpcError> {
    if method.is_client_streaming() {
        return Ok(vec![call_request(
            target,
            method,
            h,
            Some(framed.concat()),
        )?]);
    }
    (framed.into_iter())
        .map(|body| call_request(target, method, h, Some(body)))
        .collect()
}

/// The request every call of a run whose bodies are made call by call shares: no
/// body, no length (each call's body brings its own).
pub fn base_request(
    target: &Target,
    method: &MethodDescriptor,
    h: &CallHeaders,
) -> Result<Request, GrpcError> {
    call_request(target, method, h, None)
}

/// A call of `method` at `target` carrying `body` (none: a base request without a
/// length).
fn call_request(
    target: &Target,
    method: &MethodDescriptor,
    h: &CallHeaders,
    body: Option<Vec<u8>>,
) -> Result<Request, GrpcError> {
    let mut t = target.clone();
    t.path = format!("/{}/{}", method.parent_service().full_name(), method.name());
    let mut b = RequestBuilder::native(&t, "POST", true)
        .set_header("content-type", stampede_wire::grpc::CONTENT_TYPE)
        .set_header("te", "trailers");
    if let Some(d) = h.deadline {
        b = b.set_header("grpc-timeout", &stampede_wire::grpc::timeout(d));
    }
    if h.gzip {
        b = b
            .set_header("grpc-encoding", "gzip")
            .set_header("grpc-accept-encoding", "gzip");
    }
    for (n, v) in h.metadata {
        b = b.header(n, v);
    }
    b = match body {
        Some(body) if h.paced => b.body(body).without_content_length(),
        Some(body) => b.body(body),
        None => b.without_content_length(),
    };
    b.build()
        .map_err(|e| GrpcError::usage(format!("--metadata: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROTO: &str = r#"syntax = "proto3";
package helloworld;
service Greeter {
  rpc SayHello (HelloRequest) returns (HelloReply) {}
  rpc SayHellos (stream HelloRequest) returns (HelloReply) {}
}
message HelloRequest { string name = 1; int32 times = 2; }
message HelloReply { string message = 1; }
"#;

    fn dir_with(files: &[(&str, &str)]) -> PathBuf {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let d = std::env::temp_dir().join(format!("stampede-grpc-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        for (name, text) in files {
            std::fs::write(d.join(name), text).unwrap();
        }
        d
    }

    fn pool_of(dir: &Path, proto: &str) -> Result<DescriptorPool, GrpcError> {
        let protos = [dir.join(proto).to_string_lossy().into_owned()];
        Schema {
            protos: &protos,
            protoset: None,
            import_paths: &[],
        }
        .load()
    }

    #[test]
    fn a_method_is_found_and_its_messages_built_from_json() {
        let d = dir_with(&[("hello.proto", PROTO)]);
        let pool = pool_of(&d, "hello.proto").unwrap();
        let m = method(&pool, "helloworld.Greeter/SayHello").unwrap();
        let framed = messages(&m, r#"{"name": "world", "times": 3}"#, "-d").unwrap();
        // name (field 1, string "world"), times (field 2, varint 3).
        let message = b"\x0a\x05world\x10\x03";
        let mut want = vec![0, 0, 0, 0, message.len() as u8];
        want.extend_from_slice(message);
        assert_eq!(framed, vec![want]);
        let t = Target::parse("http://127.0.0.1:9/").unwrap();
        let h = CallHeaders {
            metadata: &[("x-id".into(), "7".into())],
            deadline: Some(std::time::Duration::from_secs(2)),
            gzip: false,
            paced: false,
        };
        let r = requests(&t, &m, framed, &h).unwrap();
        let wire = String::from_utf8_lossy(&r[0].bytes);
        assert!(wire.starts_with("POST /helloworld.Greeter/SayHello HTTP/1.1\r\n"));
        for line in [
            "content-type: application/grpc",
            "te: trailers",
            "grpc-timeout: 2000000u",
            "x-id: 7",
        ] {
            assert!(wire.to_ascii_lowercase().contains(line), "{line}: {wire}");
        }
        // An array: one request each, or one carrying all for a client stream.
        let two = messages(&m, r#"[{"name": "a"}, {"name": "b"}]"#, "-d").unwrap();
        assert_eq!(requests(&t, &m, two.clone(), &h).unwrap().len(), 2);
        let stream = method(&pool, "helloworld.Greeter.SayHellos").unwrap();
        let r = requests(&t, &stream, two, &h).unwrap();
        assert_eq!(r.len(), 1);
        assert!(r[0].bytes.ends_with(b"\x00\x00\x00\x00\x03\x0a\x01b"));
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn mistakes_are_named_before_any_load() {
        let d = dir_with(&[
            ("hello.proto", PROTO),
            (
                "bad.proto",
                "syntax = \"proto3\";\nmessage A {\n  string x = ;\n}\n",
            ),
        ]);
        let e = pool_of(&d, "bad.proto").err().unwrap().message;
        assert!(e.contains("bad.proto:3:"), "{e}");
        let pool = pool_of(&d, "hello.proto").unwrap();
        let e = method(&pool, "helloworld.Greeter/Nope")
            .unwrap_err()
            .message;
        assert!(
            e.contains("no such method") && e.contains("helloworld.Greeter/SayHello"),
            "{e}"
        );
        let m = method(&pool, "helloworld.Greeter/SayHello").unwrap();
        let e = messages(&m, r#"{"nme": "x"}"#, "-d").unwrap_err().message;
        assert!(
            e.contains("nme") && e.contains("helloworld.HelloRequest"),
            "{e}"
        );
        let e = messages(&m, r#"{"times": "many"}"#, "-d")
            .unwrap_err()
            .message;
        assert!(e.contains("-d: does not fit"), "{e}");
        let e = messages(&m, "{", "-d").unwrap_err().message;
        assert!(e.contains("not JSON"), "{e}");
        std::fs::remove_dir_all(d).unwrap();
    }
}
