//! The reference server's gRPC services, over HTTP/2: `helloworld.Greeter`,
//! `stampede.v1.Echo` and `grpc.health.v1.Health`, as `proto/helloworld.proto`,
//! `proto/echo.proto` and `proto/health.proto` define them.
//!
//! Their messages are a few scalar and bytes fields, read and written here with
//! protobuf's wire format directly (varints and length-delimited fields, unknown
//! fields skipped), so that an answer costs what the protocol costs. A request's
//! messages come whole (the stream's body, within the server's body limit); messages
//! compressed with gzip (`grpc-encoding: gzip`) are inflated, each within the message
//! limit. A message over 4 MiB, one compressed otherwise, or one that does not decode
//! is answered with the status gRPC gives it, never a panic. Answers go uncompressed.

use std::io::Read as _;
use std::time::Duration;

use stampede_wire::grpc::{self, MessageReader};

use crate::routes::{Feed, FeedKind};

/// What a call is answered with.
#[derive(Debug, PartialEq, Eq)]
pub enum Reply {
    /// Now: the framed messages (none: a trailers-only answer), then the status.
    Now {
        messages: Vec<u8>,
        status: u8,
        message: &'static str,
    },
    /// Later, on timers: a stream of replies, then the status (see [`Feed`]).
    Later(Feed),
}

/// What `stampede.v1.Echo`'s request asks for.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct EchoRequest<'a> {
    payload: &'a [u8],
    size: u32,
    count: u32,
    interval_ms: u32,
    delay_ms: u32,
    status: u32,
}

/// The most replies one server stream sends.
pub const MAX_STREAM: u32 = 1_000_000;
/// The largest reply payload asked for by `size`.
pub const MAX_SIZE: u32 = 4 << 20;
/// The longest interval or delay asked for, in ms.
pub const MAX_WAIT_MS: u32 = 60_000;

/// A varint at `*at`, advancing past it.
fn varint(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*at)?;
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Calls `each(field, value)` for every field of a message: varints as numbers,
/// length-delimited fields as bytes; fixed-width fields are skipped. `None` when the
/// message does not decode.
pub(crate) fn each_field<'a>(b: &'a [u8], mut each: impl FnMut(u64, Field<'a>)) -> Option<()> {
    let mut at = 0;
    while at < b.len() {
        let key = varint(b, &mut at)?;
        let (field, wire) = (key >> 3, key & 7);
        match wire {
            0 => each(field, Field::Number(varint(b, &mut at)?)),
            1 => at = at.checked_add(8).filter(|&e| e <= b.len())?,
            2 => {
                let len = usize::try_from(varint(b, &mut at)?).ok()?;
                let end = at.checked_add(len).filter(|&e| e <= b.len())?;
                each(field, Field::Bytes(&b[at..end]));
                at = end;
            }
            5 => at = at.checked_add(4).filter(|&e| e <= b.len())?,
            _ => return None,
        }
    }
    Some(())
}

pub(crate) enum Field<'a> {
    Number(u64),
    Bytes(&'a [u8]),
}

/// A message's field 1 as bytes (a string), empty when absent (HelloRequest's name,
/// HealthCheckRequest's service); `None` when the message does not decode.
fn first_bytes(m: &[u8]) -> Option<&[u8]> {
    let mut value: &[u8] = b"";
    each_field(m, |f, v| {
        if let (1, Field::Bytes(b)) = (f, v) {
            value = b;
        }
    })?;
    Some(value)
}

fn echo_request(b: &[u8]) -> Option<EchoRequest<'_>> {
    let mut r = EchoRequest::default();
    let num = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
    each_field(b, |f, v| match (f, v) {
        (1, Field::Bytes(p)) => r.payload = p,
        (2, Field::Number(n)) => r.size = num(n),
        (3, Field::Number(n)) => r.count = num(n),
        (4, Field::Number(n)) => r.interval_ms = num(n),
        (5, Field::Number(n)) => r.delay_ms = num(n),
        (6, Field::Number(n)) => r.status = num(n),
        _ => {}
    })?;
    Some(r)
}

/// The message of an answer that fails: the caller chose it (`status` in the request).
pub const ASKED: &str = "asked for";

/// Appends, as one message, what `write` appends: its prefix goes first and its length
/// is filled in after, so the message is encoded in place.
fn framed_in(out: &mut Vec<u8>, write: impl FnOnce(&mut Vec<u8>)) {
    let at = out.len();
    out.extend_from_slice(&[0; grpc::PREFIX]);
    write(out);
    let n = (out.len() - at - grpc::PREFIX) as u32;
    out[at + 1..at + grpc::PREFIX].copy_from_slice(&n.to_be_bytes());
}

/// Appends a framed `EchoReply` with `size` bytes of payload (or `payload`) and `seq`.
pub fn echo_reply(out: &mut Vec<u8>, payload: Option<&[u8]>, size: u32, seq: u32) {
    framed_in(out, |out| {
        let len = payload.map_or(size as usize, <[u8]>::len);
        if len > 0 {
            out.push(0x0a);
            put_varint(out, len as u64);
            match payload {
                Some(p) => out.extend_from_slice(p),
                None => out.resize(out.len() + len, b'x'),
            }
        }
        if seq > 0 {
            out.push(0x10);
            put_varint(out, u64::from(seq));
        }
    });
}

/// How a request's messages are compressed: its `grpc-encoding`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Encoding {
    /// None said (or `identity`): a message flagged compressed is an error.
    #[default]
    Identity,
    /// `gzip`, the one compression taken here.
    Gzip,
    /// Any other.
    Other,
}

impl Encoding {
    /// The encoding a `grpc-encoding` value names.
    pub fn of(value: &[u8]) -> Encoding {
        match value {
            b"identity" => Encoding::Identity,
            b"gzip" => Encoding::Gzip,
            _ => Encoding::Other,
        }
    }
}

/// A status that refuses a call, with its message.
pub type Refusal = (u8, &'static str);

/// The messages of a whole request body, borrowed from it (the reader finds them,
/// keeping nothing; each lies after the ones before and its prefix), each with
/// whether it is compressed; or the status that refuses them.
fn messages(body: &[u8]) -> Result<Vec<(bool, &[u8])>, Refusal> {
    let mut r = MessageReader::new(grpc::DEFAULT_MAX_MESSAGE, false);
    let mut out = Vec::new();
    let mut at = 0;
    r.feed(body, &mut |m| {
        let start = at + grpc::PREFIX;
        at = start + m.len as usize;
        out.push((m.compressed, &body[start..at]));
    })
    .map_err(|e| match e {
        grpc::GrpcError::TooLarge { .. } => (8, "a message over 4 MiB"),
        _ => (13, "the request's messages break their framing"),
    })?;
    if r.finish().is_err() {
        return Err((13, "the request ended inside a message"));
    }
    Ok(out)
}

/// The request's messages inflated and framed again uncompressed, each within the
/// message limit; or the status that refuses them.
fn inflate(msgs: &[(bool, &[u8])], encoding: Encoding) -> Result<Vec<u8>, Refusal> {
    let mut plain = Vec::new();
    for &(compressed, m) in msgs {
        if !compressed {
            grpc::frame(&mut plain, false, m);
            continue;
        }
        gzip_only(encoding)?;
        let at = plain.len();
        plain.extend_from_slice(&[0; grpc::PREFIX]);
        let n = gunzip(m, &mut plain)?;
        plain[at + 1..at + grpc::PREFIX].copy_from_slice(&(n as u32).to_be_bytes());
    }
    Ok(plain)
}

/// A message flagged compressed is taken only with `grpc-encoding: gzip`.
fn gzip_only(encoding: Encoding) -> Result<(), Refusal> {
    match encoding {
        Encoding::Gzip => Ok(()),
        Encoding::Identity => Err((13, "a compressed message without grpc-encoding")),
        Encoding::Other => Err((12, "only gzip compression is accepted")),
    }
}

/// Appends the gzip message `m` inflated to `out`, within the message limit; returns
/// its length.
fn gunzip(m: &[u8], out: &mut Vec<u8>) -> Result<usize, Refusal> {
    let limit = grpc::DEFAULT_MAX_MESSAGE as u64;
    let n = flate2::read::GzDecoder::new(m)
        .take(limit + 1)
        .read_to_end(out)
        .map_err(|_| (13, "a gzip message that does not inflate"))?;
    if n as u64 > limit {
        return Err((8, "a message over 4 MiB once inflated"));
    }
    Ok(n)
}

/// Whether `path` is one of the services' methods.
pub fn is_call(path: &[u8]) -> bool {
    path.starts_with(b"/helloworld.Greeter/")
        || path.starts_with(b"/stampede.v1.Echo/")
        || path.starts_with(b"/grpc.health.v1.Health/")
        || live(path).is_some()
}

/// A method whose requests are answered one by one as they arrive, the call staying
/// open both ways: a client may wait for each answer before it sends its next request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Live {
    /// `stampede.v1.Echo/Bidi`: an echo of each request.
    Bidi,
    /// `ServerReflectionInfo` (v1 or v1alpha): a reflection answer to each.
    Reflection,
}

/// The live method `path` names, if it names one.
pub fn live(path: &[u8]) -> Option<Live> {
    match path {
        b"/stampede.v1.Echo/Bidi" => Some(Live::Bidi),
        b"/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"
        | b"/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo" => {
            Some(Live::Reflection)
        }
        _ => None,
    }
}

/// Appends the framed answer of the live method `kind` to one request message `m`,
/// the call's `seq`-th (from 1), inflating it first when it is `compressed`.
pub fn live_reply(
    kind: Live,
    (m, compressed): (&[u8], bool),
    (encoding, seq): (Encoding, u32),
    reflection: Option<&crate::reflection::Reflection>,
    out: &mut Vec<u8>,
) -> Result<(), Refusal> {
    let inflated;
    let m = if compressed {
        gzip_only(encoding)?;
        let mut plain = Vec::new();
        gunzip(m, &mut plain)?;
        inflated = plain;
        &inflated[..]
    } else {
        m
    };
    let at = out.len();
    let answered = match kind {
        Live::Bidi => bidi_reply(m, seq, out),
        Live::Reflection => {
            let Some(r) = reflection else {
                return Err((12, "this server has no reflection service"));
            };
            if m.len() > crate::reflection::MAX_REQUEST {
                return Err((8, "a reflection request over 64 KiB"));
            }
            let mut ok = Some(());
            framed_in(out, |out| ok = r.answer(m, out));
            ok.ok_or((3, "a reflection request that does not decode"))
        }
    };
    if answered.is_err() {
        out.truncate(at);
    }
    answered
}

/// Appends `Echo/Bidi`'s answer to its `seq`-th request `m`.
fn bidi_reply(m: &[u8], seq: u32, out: &mut Vec<u8>) -> Result<(), Refusal> {
    let r = echo_request(m).ok_or((3, "an EchoRequest does not decode"))?;
    if r.size > MAX_SIZE {
        return Err((11, "size over the server's limit"));
    }
    let payload = (r.size == 0).then_some(r.payload);
    echo_reply(out, payload, r.size, seq);
    Ok(())
}

/// The services the health service answers for ("" is the server as a whole).
const SERVICES: [&[u8]; 4] = [
    b"",
    b"helloworld.Greeter",
    b"stampede.v1.Echo",
    b"grpc.health.v1.Health",
];

/// The answer to a call of `path` with the request body `body`.
pub fn answer(path: &[u8], body: &[u8], encoding: Encoding) -> Reply {
    let fail = |status: u8, message: &'static str| Reply::Now {
        messages: Vec::new(),
        status,
        message,
    };
    let msgs = match messages(body) {
        Ok(m) => m,
        Err((status, message)) => return fail(status, message),
    };
    if msgs.iter().any(|m| m.0) {
        return match inflate(&msgs, encoding) {
            Ok(plain) => answer(path, &plain, Encoding::Identity),
            Err((status, message)) => fail(status, message),
        };
    }
    let msgs: Vec<&[u8]> = msgs.into_iter().map(|m| m.1).collect();
    let one = match *msgs {
        [m] => Ok(m),
        _ => Err((3, "a unary call takes exactly one message")),
    };
    match path {
        b"/helloworld.Greeter/SayHello" => {
            let m = match one {
                Ok(m) => m,
                Err((status, message)) => return fail(status, message),
            };
            let Some(name) = first_bytes(m) else {
                return fail(3, "the HelloRequest does not decode");
            };
            // HelloReply: field 1, "Hello " and the name.
            let mut out = Vec::with_capacity(grpc::PREFIX + 16 + name.len());
            framed_in(&mut out, |out| {
                out.push(0x0a);
                put_varint(out, 6 + name.len() as u64);
                out.extend_from_slice(b"Hello ");
                out.extend_from_slice(name);
            });
            Reply::Now {
                messages: out,
                status: 0,
                message: "",
            }
        }
        b"/stampede.v1.Echo/Unary" | b"/stampede.v1.Echo/ServerStream" => {
            let m = match one {
                Ok(m) => m,
                Err((status, message)) => return fail(status, message),
            };
            let Some(r) = echo_request(m) else {
                return fail(3, "the EchoRequest does not decode");
            };
            if r.size > MAX_SIZE || r.count > MAX_STREAM {
                return fail(11, "size or count over the server's limit");
            }
            if r.interval_ms > MAX_WAIT_MS || r.delay_ms > MAX_WAIT_MS {
                return fail(11, "interval or delay over 60 s");
            }
            let status = u8::try_from(r.status).unwrap_or(grpc::UNKNOWN).min(16);
            let stream = path.ends_with(b"ServerStream");
            if !stream && r.delay_ms == 0 {
                let mut out = Vec::new();
                if status == 0 {
                    let payload = (r.size == 0).then_some(r.payload);
                    echo_reply(&mut out, payload, r.size, 1);
                }
                return Reply::Now {
                    messages: out,
                    status,
                    message: if status == 0 { "" } else { ASKED },
                };
            }
            Reply::Later(Feed {
                kind: FeedKind::Grpc {
                    size: r.size,
                    status,
                },
                n: match (stream, status) {
                    (true, _) => r.count.max(1),
                    (false, 0) => 1,
                    // A unary call that fails sends no message, only its status.
                    (false, _) => 0,
                },
                gap: Duration::from_millis(u64::from(r.interval_ms)),
                first: Duration::from_millis(u64::from(r.delay_ms)),
                id: 0,
                pace: crate::feed::Pace::Fixed,
            })
        }
        b"/stampede.v1.Echo/ClientStream" => {
            let mut out = Vec::new();
            echo_reply(&mut out, Some(b""), 0, msgs.len() as u32);
            Reply::Now {
                messages: out,
                status: 0,
                message: "",
            }
        }
        b"/stampede.v1.Echo/Bidi" => {
            let mut out = Vec::new();
            for (i, m) in msgs.iter().enumerate() {
                if let Err((status, message)) = bidi_reply(m, i as u32 + 1, &mut out) {
                    return fail(status, message);
                }
            }
            Reply::Now {
                messages: out,
                status: 0,
                message: "",
            }
        }
        b"/grpc.health.v1.Health/Check" => {
            let m = match one {
                Ok(m) => m,
                Err((status, message)) => return fail(status, message),
            };
            let Some(service) = first_bytes(m) else {
                return fail(3, "the HealthCheckRequest does not decode");
            };
            if !SERVICES.contains(&service) {
                return fail(5, "unknown service");
            }
            // HealthCheckResponse: status (field 1) SERVING (1).
            let mut out = Vec::with_capacity(grpc::PREFIX + 2);
            framed_in(&mut out, |out| out.extend_from_slice(b"\x08\x01"));
            Reply::Now {
                messages: out,
                status: 0,
                message: "",
            }
        }
        b"/grpc.health.v1.Health/Watch" => fail(12, "Watch is not offered; ask Check"),
        // Its requests are answered one by one as they come (see [`live`]): here only
        // a call that sent none.
        p if live(p) == Some(Live::Reflection) && msgs.is_empty() => Reply::Now {
            messages: Vec::new(),
            status: 0,
            message: "",
        },
        _ => fail(12, "no such method"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(m: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        grpc::frame(&mut b, false, m);
        b
    }

    fn now(r: Reply) -> (Vec<u8>, u8) {
        match r {
            Reply::Now {
                messages, status, ..
            } => (messages, status),
            Reply::Later(f) => panic!("later: {f:?}"),
        }
    }

    #[test]
    fn the_greeter_answers_hello_and_the_name() {
        let (m, status) = now(answer(
            b"/helloworld.Greeter/SayHello",
            &framed(b"\x0a\x05world"),
            Encoding::Identity,
        ));
        assert_eq!(status, 0);
        assert_eq!(m, framed(b"\x0a\x0bHello world"));
        // An empty request: an empty name.
        let (m, _) = now(answer(
            b"/helloworld.Greeter/SayHello",
            &framed(b""),
            Encoding::Identity,
        ));
        assert_eq!(m, framed(b"\x0a\x06Hello "));
    }

    #[test]
    fn echo_sizes_statuses_and_streams() {
        // size 3 (field 2), seq 1.
        let (m, _) = now(answer(
            b"/stampede.v1.Echo/Unary",
            &framed(b"\x10\x03"),
            Encoding::Identity,
        ));
        assert_eq!(m, framed(b"\x0a\x03xxx\x10\x01"));
        // The payload echoed (field 1).
        let (m, _) = now(answer(
            b"/stampede.v1.Echo/Unary",
            &framed(b"\x0a\x02hi"),
            Encoding::Identity,
        ));
        assert_eq!(m, framed(b"\x0a\x02hi\x10\x01"));
        // status 14: trailers only.
        let (m, status) = now(answer(
            b"/stampede.v1.Echo/Unary",
            &framed(b"\x30\x0e"),
            Encoding::Identity,
        ));
        assert_eq!((m.len(), status), (0, 14));
        // count 3, interval 10 ms: later, on timers.
        match answer(
            b"/stampede.v1.Echo/ServerStream",
            &framed(b"\x18\x03\x20\x0a"),
            Encoding::Identity,
        ) {
            Reply::Later(f) => {
                assert_eq!((f.n, f.gap), (3, Duration::from_millis(10)));
                let mut piece = Vec::new();
                f.piece(1, &mut piece);
                assert_eq!(piece, framed(b"\x10\x02"));
            }
            r => panic!("{r:?}"),
        }
        // A client stream of three: one answer counting them; bidi answers each.
        let three = [framed(b""), framed(b"\x10\x01"), framed(b"")].concat();
        let (m, _) = now(answer(
            b"/stampede.v1.Echo/ClientStream",
            &three,
            Encoding::Identity,
        ));
        assert_eq!(m, framed(b"\x10\x03"));
        let (m, _) = now(answer(
            b"/stampede.v1.Echo/Bidi",
            &three,
            Encoding::Identity,
        ));
        assert_eq!(
            m,
            [
                framed(b"\x10\x01"),
                framed(b"\x0a\x01x\x10\x02"),
                framed(b"\x10\x03")
            ]
            .concat()
        );
    }

    #[test]
    fn bad_requests_get_the_status_grpc_gives_them() {
        let status = |path: &[u8], body: &[u8]| now(answer(path, body, Encoding::Identity)).1;
        let unary = &b"/stampede.v1.Echo/Unary"[..];
        // A prefix that lies, a compressed message without an encoding, a field that
        // does not decode.
        assert_eq!(status(unary, &[0, 0, 0, 0, 9, 1]), 13);
        assert_eq!(status(unary, &[1, 0, 0, 0, 0]), 13);
        assert_eq!(status(unary, &framed(b"\x0a\x09ab")), 3);
        assert_eq!(status(unary, &[0, 0x01, 0, 0, 0]), 8);
        // Two messages to a unary call; a count over the limit; no such method.
        assert_eq!(status(unary, &[framed(b""), framed(b"")].concat()), 3);
        assert_eq!(status(unary, &framed(b"\x18\xff\xff\xff\xff\x0f")), 11);
        assert_eq!(status(b"/stampede.v1.Echo/Nope", &framed(b"")), 12);
    }

    fn gzip(m: &[u8]) -> Vec<u8> {
        use std::io::Write as _;
        let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(m).unwrap();
        let packed = z.finish().unwrap();
        let mut b = Vec::new();
        grpc::frame(&mut b, true, &packed);
        b
    }

    #[test]
    fn gzip_messages_are_inflated_and_others_refused() {
        let hello = &b"/helloworld.Greeter/SayHello"[..];
        let (m, status) = now(answer(hello, &gzip(b"\x0a\x02zz"), Encoding::Gzip));
        assert_eq!(status, 0);
        assert_eq!(m, framed(b"\x0a\x08Hello zz"));
        // Compressed and plain messages may mix in one stream.
        let two = [gzip(b""), framed(b"\x10\x01")].concat();
        let (m, _) = now(answer(
            b"/stampede.v1.Echo/ClientStream",
            &two,
            Encoding::Gzip,
        ));
        assert_eq!(m, framed(b"\x10\x02"));
        let status = |body: &[u8], e| now(answer(hello, body, e)).1;
        // Another encoding; bytes that do not inflate; a bomb past the limit.
        assert_eq!(status(&gzip(b""), Encoding::Other), 12);
        let mut broken = gzip(b"\x0a\x02zz");
        let n = broken.len();
        broken[n - 6] ^= 0xff;
        assert_eq!(status(&broken, Encoding::Gzip), 13);
        let bomb = vec![0u8; (4 << 20) + 1];
        assert_eq!(status(&gzip(&bomb), Encoding::Gzip), 8);
        assert_eq!(Encoding::of(b"gzip"), Encoding::Gzip);
        assert_eq!(Encoding::of(b"snappy"), Encoding::Other);
    }

    #[test]
    fn health_checks_name_the_services_served() {
        let check = |service: &[u8]| {
            let mut m = vec![0x0a, service.len() as u8];
            m.extend_from_slice(service);
            now(answer(
                b"/grpc.health.v1.Health/Check",
                &framed(&m),
                Encoding::Identity,
            ))
        };
        assert_eq!(check(b""), (framed(b"\x08\x01"), 0));
        assert_eq!(check(b"helloworld.Greeter"), (framed(b"\x08\x01"), 0));
        assert_eq!(check(b"no.Such").1, 5);
        let watch = now(answer(
            b"/grpc.health.v1.Health/Watch",
            &framed(b""),
            Encoding::Identity,
        ));
        assert_eq!(watch.1, 12);
        assert!(is_call(b"/grpc.health.v1.Health/Check"));
    }
}
