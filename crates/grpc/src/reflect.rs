//! The schema of a gRPC call asked of the server itself, through its reflection
//! service (`grpc.reflection.v1`, else `grpc.reflection.v1alpha`), when no `.proto` or
//! protoset is given: the file that defines the call's service, then each file it
//! imports, by name, until none is missing.
//!
//! This happens once, before the run, over a connection of its own: a small blocking
//! HTTP/2 exchange (h2c, or TLS with ALPN `h2`), each request a call of its own that
//! sends it and ends (the service answers each request of a call in turn, so one
//! request a call is what every server takes, including one that answers a call only
//! once its requests are all in). Everything the server sends is
//! bounded (16 MiB in all, within the connection's time limit), and each way it can
//! fail is said: the address, the handshake, no reflection service (the schema flags
//! named), the service unknown to it (the services it has, listed), a file that does
//! not decode.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use prost::Message as _;
use prost_reflect::DescriptorPool;
use stampede_engine::target::Address;
use stampede_engine::Target;
use stampede_tls::rustls;
use stampede_wire::block::{Assembler, Bounds};
use stampede_wire::frame::{self, Head};
use stampede_wire::grpc::{self as wire, MessageReader};
use stampede_wire::hpack;

use crate::GrpcError;

/// The most the server may send over the whole exchange.
const MAX_RECEIVED: usize = 16 << 20;
/// The most files a schema may take.
const MAX_FILES: usize = 1_000;

/// A reflection request: what is asked (the `host` field is left empty).
#[derive(Clone, PartialEq, prost::Message)]
struct Request {
    #[prost(oneof = "Ask", tags = "3, 4, 7")]
    ask: Option<Ask>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
enum Ask {
    #[prost(string, tag = "3")]
    FileByFilename(String),
    #[prost(string, tag = "4")]
    FileContainingSymbol(String),
    #[prost(string, tag = "7")]
    ListServices(String),
}

/// A reflection answer: files, services, or an error.
#[derive(Clone, PartialEq, prost::Message)]
struct Response {
    #[prost(oneof = "Answer", tags = "4, 6, 7")]
    answer: Option<Answer>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
enum Answer {
    #[prost(message, tag = "4")]
    Files(Files),
    #[prost(message, tag = "6")]
    Services(Services),
    #[prost(message, tag = "7")]
    Error(ErrorAnswer),
}

#[derive(Clone, PartialEq, prost::Message)]
struct Files {
    #[prost(bytes = "vec", repeated, tag = "1")]
    file_descriptor_proto: Vec<Vec<u8>>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Services {
    #[prost(message, repeated, tag = "1")]
    service: Vec<Service>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Service {
    #[prost(string, tag = "1")]
    name: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct ErrorAnswer {
    #[prost(int32, tag = "1")]
    error_code: i32,
    #[prost(string, tag = "2")]
    error_message: String,
}

/// What reflection needs of a `FileDescriptorProto`: its name and imports.
#[derive(Clone, PartialEq, prost::Message)]
struct FileHead {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(string, repeated, tag = "3")]
    dependency: Vec<String>,
}

/// The two versions of the service, newest first.
const VERSIONS: [&str; 2] = [
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
];

/// Where and how to ask.
pub struct Reflect<'a> {
    pub target: &'a Target,
    /// TLS for an https target (its ALPN offering h2).
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// Headers sent with the reflection call (ghz's `--reflect-metadata`).
    pub metadata: &'a [(String, String)],
    /// The most the whole exchange may take.
    pub timeout: Duration,
}

impl Reflect<'_> {
    /// The schema that defines `service` (`package.Service`), as the server's
    /// reflection service gives it.
    pub fn schema(&self, service: &str) -> Result<DescriptorPool, GrpcError> {
        let deadline = Instant::now() + self.timeout;
        for (i, path) in VERSIONS.iter().enumerate() {
            let mut call = Call::open(self, path, deadline)?;
            match call.files_for(service) {
                Err(Failure::Unimplemented) if i + 1 < VERSIONS.len() => continue,
                Err(Failure::Unimplemented) => {
                    return Err(GrpcError::usage(format!(
                        "{}: the server has no reflection service (grpc.reflection.v1 or v1alpha); give the schema with --proto or --protoset",
                        self.target.authority
                    )))
                }
                Err(Failure::Said(e)) => return Err(e),
                Ok(files) => return pool(files),
            }
        }
        unreachable!("the last version returns")
    }
}

/// Why an exchange ended without the files.
enum Failure {
    /// The server has no such service (`UNIMPLEMENTED`): try the older version.
    Unimplemented,
    Said(GrpcError),
}

impl From<GrpcError> for Failure {
    fn from(e: GrpcError) -> Self {
        Failure::Said(e)
    }
}

/// The files, dependencies first, as one `FileDescriptorSet`, decoded.
fn pool(files: Vec<(FileHead, Vec<u8>)>) -> Result<DescriptorPool, GrpcError> {
    let mut ordered: Vec<usize> = Vec::with_capacity(files.len());
    let mut placed = vec![false; files.len()];
    // Each round places the files whose imports are all placed (or not among them).
    while ordered.len() < files.len() {
        let before = ordered.len();
        for (i, (head, _)) in files.iter().enumerate() {
            if placed[i] {
                continue;
            }
            let ready = head.dependency.iter().all(|d| {
                files
                    .iter()
                    .position(|(h, _)| &h.name == d)
                    .is_none_or(|j| placed[j])
            });
            if ready {
                placed[i] = true;
                ordered.push(i);
            }
        }
        if ordered.len() == before {
            return Err(GrpcError::usage(
                "reflection: the server's files import each other in a cycle",
            ));
        }
    }
    let mut set = Vec::new();
    for i in ordered {
        prost::encoding::bytes::encode(1, &files[i].1, &mut set);
    }
    DescriptorPool::decode(&set[..]).map_err(|e| {
        GrpcError::usage(format!(
            "reflection: the server's files do not make a schema ({e})"
        ))
    })
}

/// A byte stream: TCP, TLS over TCP, or a Unix socket.
trait Io: Read + Write {}
impl<T: Read + Write> Io for T {}

/// A connection to `target` for gRPC, within `left`: over TLS (with `tls`) the server
/// must choose HTTP/2 in ALPN, which gRPC needs. `what` begins each error.
fn connect(
    target: &Target,
    tls: Option<&Arc<rustls::ClientConfig>>,
    left: Duration,
    what: &str,
) -> Result<Box<dyn Io>, GrpcError> {
    match &target.address {
        Address::Tcp(addrs) => {
            let addr = addrs
                .first()
                .ok_or_else(|| GrpcError::fail(format!("{what}: no address")))?;
            let tcp = TcpStream::connect_timeout(addr, left)
                .map_err(|e| GrpcError::fail(format!("{what}: cannot connect to {addr}: {e}")))?;
            let _ = tcp.set_nodelay(true);
            tcp.set_read_timeout(Some(left))
                .and_then(|_| tcp.set_write_timeout(Some(left)))
                .map_err(|e| GrpcError::fail(format!("{what}: {e}")))?;
            let Some(config) = tls else {
                return Ok(Box::new(tcp));
            };
            let name = rustls::pki_types::ServerName::try_from(target.host.clone())
                .map_err(|e| GrpcError::usage(format!("{what}: {e}")))?;
            let conn = rustls::ClientConnection::new(config.clone(), name)
                .map_err(|e| GrpcError::fail(format!("{what}: {e}")))?;
            let mut s = rustls::StreamOwned::new(conn, tcp);
            while s.conn.is_handshaking() {
                s.conn.complete_io(&mut s.sock).map_err(|e| {
                    let hint = match stampede_tls::peer_not_tls(&e) {
                        true => " (the server does not speak TLS; add --insecure)",
                        false => "",
                    };
                    GrpcError::fail(format!("{what}: TLS handshake: {e}{hint}"))
                })?;
            }
            if s.conn.alpn_protocol() != Some(b"h2") {
                let chose = s
                    .conn
                    .alpn_protocol()
                    .map_or("no protocol".to_string(), |p| {
                        String::from_utf8_lossy(p).into_owned()
                    });
                return Err(GrpcError::fail(format!(
                    "{what}: the server chose {chose} in ALPN, not HTTP/2 (h2), which gRPC needs"
                )));
            }
            Ok(Box::new(s))
        }
        Address::Unix(p) => {
            let s = std::os::unix::net::UnixStream::connect(p).map_err(|e| {
                GrpcError::fail(format!("{what}: cannot connect to {}: {e}", p.display()))
            })?;
            s.set_read_timeout(Some(left))
                .and_then(|_| s.set_write_timeout(Some(left)))
                .map_err(|e| GrpcError::fail(format!("{what}: {e}")))?;
            Ok(Box::new(s))
        }
    }
}

/// Over TLS, checks before the run that the server speaks HTTP/2 (ALPN `h2`): one
/// whose ALPN chooses HTTP/1.1 would fail every call. Plain targets are not asked
/// (h2c is prior knowledge; the run's first connection says if it is refused).
pub fn check_h2(
    target: &Target,
    tls: Option<&Arc<rustls::ClientConfig>>,
    timeout: Duration,
) -> Result<(), GrpcError> {
    if tls.is_none() {
        return Ok(());
    }
    let what = format!("gRPC at {}", target.authority);
    connect(target, tls, timeout, &what).map(drop)
}

/// The reflection calls: a connection, its HTTP/2 state and the call in progress.
struct Call {
    io: Box<dyn Io>,
    /// The calls' header block (literals only, so the same bytes for each).
    block: Vec<u8>,
    /// The stream of the call in progress, and of the next.
    stream: u32,
    next: u32,
    what: String,
    deadline: Instant,
    buf: Vec<u8>,
    decoder: hpack::Decoder,
    blocks: Assembler,
    reader: MessageReader,
    received: usize,
    /// The messages of the answer not yet taken.
    messages: Vec<Vec<u8>>,
    /// The answer's `grpc-status`, once its trailers came.
    status: Option<(u8, String)>,
    /// The answer's HTTP status, once its head came.
    http: Option<Vec<u8>>,
}

impl Call {
    /// Connects, speaks HTTP/2's preface and opens the call.
    fn open(r: &Reflect, path: &str, deadline: Instant) -> Result<Call, GrpcError> {
        let what = format!("reflection at {}", r.target.authority);
        let left = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1));
        let io = connect(r.target, r.tls.as_ref(), left, &what)?;
        let mut call = Call {
            io,
            block: Vec::new(),
            stream: 0,
            next: 1,
            what,
            deadline,
            buf: Vec::new(),
            decoder: hpack::Decoder::new(),
            blocks: Assembler::new(Bounds {
                max_bytes: 64 << 10,
                max_continuations: 64,
            }),
            reader: MessageReader::new(MAX_RECEIVED, true),
            received: 0,
            messages: Vec::new(),
            status: None,
            http: None,
        };
        let window = MAX_RECEIVED as u32;
        let mut out = frame::PREFACE.to_vec();
        frame::settings(
            &mut out,
            &[
                (frame::SETTINGS_ENABLE_PUSH, 0),
                (frame::SETTINGS_INITIAL_WINDOW_SIZE, window),
            ],
        );
        frame::window_update(&mut out, 0, window - frame::DEFAULT_WINDOW as u32);
        let mut e = hpack::Encoder::new();
        let mut fields = Vec::new();
        e.begin(&mut fields);
        let scheme = if r.tls.is_some() { "https" } else { "http" };
        for (n, v) in [
            (":method", "POST"),
            (":scheme", scheme),
            (":path", path),
            (":authority", r.target.authority.as_str()),
            ("content-type", wire::CONTENT_TYPE),
            ("te", "trailers"),
        ] {
            e.literal(&mut fields, n.as_bytes(), v.as_bytes());
        }
        for (n, v) in r.metadata {
            e.literal(&mut fields, n.to_ascii_lowercase().as_bytes(), v.as_bytes());
        }
        call.block = fields;
        call.write(&out)?;
        Ok(call)
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), GrpcError> {
        self.io
            .write_all(bytes)
            .and_then(|_| self.io.flush())
            .map_err(|e| GrpcError::fail(format!("{}: {e}", self.what)))
    }

    /// One call: `ask` sent on a new stream, which it ends; its answer.
    fn ask(&mut self, ask: Ask) -> Result<Response, Failure> {
        self.stream = self.next;
        self.next += 2;
        self.messages.clear();
        self.status = None;
        self.http = None;
        self.reader.reset();
        let m = Request { ask: Some(ask) }.encode_to_vec();
        let mut data = Vec::with_capacity(m.len() + wire::PREFIX);
        wire::frame(&mut data, false, &m);
        let mut out = Vec::with_capacity(self.block.len() + data.len() + 27);
        frame::head(
            &mut out,
            self.block.len(),
            frame::HEADERS,
            frame::END_HEADERS,
            self.stream,
        );
        out.extend_from_slice(&self.block);
        let chunks: Vec<&[u8]> = data.chunks(frame::DEFAULT_MAX_FRAME).collect();
        for (i, chunk) in chunks.iter().enumerate() {
            let last = if i + 1 == chunks.len() {
                frame::END_STREAM
            } else {
                0
            };
            frame::head(&mut out, chunk.len(), frame::DATA, last, self.stream);
            out.extend_from_slice(chunk);
        }
        self.write(&out)?;
        loop {
            if !self.messages.is_empty() {
                let m = self.messages.remove(0);
                return Response::decode(&m[..]).map_err(|e| {
                    Failure::Said(GrpcError::fail(format!(
                        "{}: an answer that does not decode ({e})",
                        self.what
                    )))
                });
            }
            if let Some((code, message)) = self.status.take() {
                if code == 12 {
                    return Err(Failure::Unimplemented);
                }
                return Err(Failure::Said(GrpcError::fail(format!(
                    "{}: the call ended with {} {message}",
                    self.what,
                    wire::code_name(code)
                ))));
            }
            self.frame()?;
        }
    }

    /// The status of an answer that ended without `grpc-status`: one that is no
    /// gRPC answer (an HTTP error) says the server has no such method.
    fn not_grpc(&self) -> (u8, String) {
        match self.http.as_deref() {
            Some(b"200") | None => (wire::UNKNOWN, "an answer without grpc-status".into()),
            Some(http) => (12, format!("HTTP {}", String::from_utf8_lossy(http))),
        }
    }

    /// Reads and handles one frame.
    fn frame(&mut self) -> Result<(), GrpcError> {
        while self.buf.len() < 9 || self.buf.len() < 9 + Head::parse(&self.buf).map_or(0, |h| h.len)
        {
            if Instant::now() > self.deadline {
                return Err(GrpcError::fail(format!("{}: no answer in time", self.what)));
            }
            let mut chunk = [0u8; 16 << 10];
            let n = self
                .io
                .read(&mut chunk)
                .map_err(|e| GrpcError::fail(format!("{}: {e}", self.what)))?;
            if n == 0 {
                return Err(GrpcError::fail(format!(
                    "{}: the server closed the connection",
                    self.what
                )));
            }
            self.received += n;
            if self.received > MAX_RECEIVED {
                return Err(GrpcError::fail(format!("{}: over 16 MiB sent", self.what)));
            }
            self.buf.extend_from_slice(&chunk[..n]);
            if let Some(h) = Head::parse(&self.buf) {
                if h.len > frame::DEFAULT_MAX_FRAME {
                    return Err(GrpcError::fail(format!(
                        "{}: a frame over the size offered",
                        self.what
                    )));
                }
            }
        }
        let h = Head::parse(&self.buf).expect("nine bytes");
        let payload: Vec<u8> = self.buf[9..9 + h.len].to_vec();
        self.buf.drain(..9 + h.len);
        let bad = |why: &str| GrpcError::fail(format!("{}: {why}", self.what));
        match h.kind {
            frame::SETTINGS if h.flags & frame::ACK == 0 => {
                let mut ack = Vec::new();
                frame::head(&mut ack, 0, frame::SETTINGS, frame::ACK, 0);
                self.write(&ack)?;
            }
            frame::PING if h.flags & frame::ACK == 0 => {
                let mut pong = Vec::new();
                frame::head(&mut pong, payload.len(), frame::PING, frame::ACK, 0);
                pong.extend_from_slice(&payload);
                self.write(&pong)?;
            }
            frame::GOAWAY => return Err(bad("the server went away (GOAWAY)")),
            frame::RST_STREAM if h.stream == self.stream => {
                return Err(bad("the server reset the call"))
            }
            frame::HEADERS | frame::CONTINUATION => {
                let block = self
                    .blocks
                    .frame(h, &payload)
                    .map_err(|e| bad(e.reason()))?;
                if let Some(b) = block {
                    let end = b.end_stream;
                    let mut status = None;
                    let mut http = None;
                    let mut message = String::new();
                    self.decoder
                        .decode(&b.fields, |n, v| match n {
                            b":status" => http = Some(v.to_vec()),
                            b"grpc-status" => status = wire::parse_status(v),
                            b"grpc-message" => message = String::from_utf8_lossy(v).into_owned(),
                            _ => {}
                        })
                        .map_err(|e| bad(e.0))?;
                    if b.stream == self.stream {
                        if self.http.is_none() {
                            self.http = http;
                        }
                        if end {
                            self.status = Some(match status {
                                Some(c) => (c, message),
                                None => self.not_grpc(),
                            });
                        }
                    }
                }
            }
            frame::DATA if h.stream == self.stream => {
                let data = frame::unpad(h.flags, &payload).map_err(bad)?;
                // The body of an answer that is not gRPC's (an error page) is not read.
                let grpc = self.http.as_deref() == Some(b"200");
                let mut found = Vec::new();
                if grpc {
                    self.reader
                        .feed(data, &mut |m| found.push(m.bytes.to_vec()))
                        .map_err(|_| bad("the answer's messages break their framing"))?;
                }
                self.messages.extend(found);
                if h.flags & frame::END_STREAM != 0 {
                    self.status = Some(self.not_grpc());
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The file that defines `service` and every file it imports.
    fn files_for(&mut self, service: &str) -> Result<Vec<(FileHead, Vec<u8>)>, Failure> {
        let mut files: Vec<(FileHead, Vec<u8>)> = Vec::new();
        let mut ask = Ask::FileContainingSymbol(service.to_string());
        let mut first = true;
        loop {
            let answer = self.ask(ask)?;
            match answer.answer {
                Some(Answer::Files(f)) => {
                    for bytes in f.file_descriptor_proto {
                        let head = FileHead::decode(&bytes[..]).map_err(|e| {
                            GrpcError::fail(format!(
                                "{}: a file that does not decode ({e})",
                                self.what
                            ))
                        })?;
                        if !files.iter().any(|(h, _)| h.name == head.name) {
                            files.push((head, bytes));
                        }
                    }
                }
                Some(Answer::Error(e)) if first && e.error_code == 5 => {
                    let there = match self.ask(Ask::ListServices(String::new()))?.answer {
                        Some(Answer::Services(s)) => s
                            .service
                            .into_iter()
                            .map(|s| s.name)
                            .collect::<Vec<_>>()
                            .join(", "),
                        _ => "none listed".into(),
                    };
                    return Err(Failure::Said(GrpcError::usage(format!(
                        "--call: the server does not know the service {service}; its services: {there}"
                    ))));
                }
                Some(Answer::Error(e)) => {
                    return Err(Failure::Said(GrpcError::fail(format!(
                        "{}: {} ({})",
                        self.what, e.error_message, e.error_code
                    ))))
                }
                _ => {
                    return Err(Failure::Said(GrpcError::fail(format!(
                        "{}: an answer that is not a file",
                        self.what
                    ))))
                }
            }
            first = false;
            if files.len() > MAX_FILES {
                return Err(Failure::Said(GrpcError::fail(format!(
                    "{}: over {MAX_FILES} files",
                    self.what
                ))));
            }
            // The imports not yet here, one at a time.
            let missing = files
                .iter()
                .flat_map(|(h, _)| h.dependency.iter())
                .find(|d| !files.iter().any(|(h, _)| &h.name == *d))
                .cloned();
            match missing {
                Some(name) => ask = Ask::FileByFilename(name),
                None => return Ok(files),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The files of a schema of two, `a.proto` importing `b.proto`, as a server
    /// sends them: the importing one first.
    fn files() -> Vec<(FileHead, Vec<u8>)> {
        let d = std::env::temp_dir().join(format!("stampede-reflect-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join("a.proto"),
            "syntax = \"proto3\";\npackage a;\nimport \"b.proto\";\nservice S { rpc M (b.In) returns (b.In); }\n",
        )
        .unwrap();
        std::fs::write(
            d.join("b.proto"),
            "syntax = \"proto3\";\npackage b;\nmessage In { string x = 1; }\n",
        )
        .unwrap();
        let protos = [d.join("a.proto").to_string_lossy().into_owned()];
        let pool = crate::calls::Schema {
            protos: &protos,
            protoset: None,
            import_paths: &[],
        }
        .load()
        .unwrap();
        std::fs::remove_dir_all(&d).unwrap();
        let mut out: Vec<(FileHead, Vec<u8>)> = pool
            .files()
            .map(|f| {
                let bytes = f.file_descriptor_proto().encode_to_vec();
                (FileHead::decode(&bytes[..]).unwrap(), bytes)
            })
            .collect();
        out.sort_by(|x, y| x.0.name.cmp(&y.0.name));
        out
    }

    #[test]
    fn files_in_any_order_make_the_schema_and_a_cycle_is_refused() {
        let f = files();
        assert_eq!(f[0].0.dependency, vec!["b.proto".to_string()]);
        let pool = pool(f.clone()).unwrap();
        let m = crate::calls::method(&pool, "a.S/M").unwrap();
        assert_eq!(m.input().full_name(), "b.In");
        // b.proto made to import a.proto: neither can go first.
        let mut cyclic = f;
        cyclic[1].0.dependency.push("a.proto".into());
        let e = super::pool(cyclic).unwrap_err().message;
        assert!(e.contains("cycle"), "{e}");
    }

    #[test]
    fn requests_and_answers_have_the_services_field_numbers() {
        // file_containing_symbol is field 4; file_by_filename 3; list_services 7.
        let r = Request {
            ask: Some(Ask::FileContainingSymbol("a.S".into())),
        };
        assert_eq!(r.encode_to_vec(), b"\x22\x03a.S");
        let r = Request {
            ask: Some(Ask::ListServices(String::new())),
        };
        assert_eq!(r.encode_to_vec(), b"\x3a\x00");
        // An error answer (field 7): code 5, its message.
        let answer = Response::decode(&b"\x3a\x07\x08\x05\x12\x03not"[..]).unwrap();
        assert_eq!(
            answer.answer,
            Some(Answer::Error(ErrorAnswer {
                error_code: 5,
                error_message: "not".into()
            }))
        );
    }
}
