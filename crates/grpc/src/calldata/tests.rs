use super::*;
use protox::file::{File, FileResolver};

struct Echo;

impl FileResolver for Echo {
    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        match name {
            "echo.proto" => File::from_source(name, include_str!("../../proto/echo.proto")),
            _ => Err(protox::Error::file_not_found(name)),
        }
    }
}

fn method(name: &str) -> MethodDescriptor {
    let mut c = protox::Compiler::with_file_resolver(Echo);
    c.open_file("echo.proto").unwrap();
    let pool = c.descriptor_pool();
    let service = pool.get_service_by_name("stampede.v1.Echo").unwrap();
    let found = service.methods().find(|m| m.name() == name);
    found.unwrap()
}

fn render(t: &str, number: u64) -> String {
    let t = Template::parse(t, &method("Unary"), "-d").unwrap();
    let mut values = Values {
        call: Call {
            number,
            worker: 1,
            conn: 3,
        },
        prefix: "run:",
        now: Duration::from_millis(1_795_426_200_250),
        uuid: None,
    };
    let mut out = String::new();
    t.render(&mut values, &mut out);
    out
}

#[test]
fn the_methods_names_are_written_once_as_ghz_names_them() {
    let t = Template::parse(
        "{{.FullyQualifiedName}} {{ .MethodName }} {{.ServiceName}} {{.InputName}} {{.OutputName}} {{.IsClientStreaming}} {{.IsServerStreaming}}",
        &method("ServerStream"),
        "-d",
    )
    .unwrap();
    assert_eq!(
        t.constant(),
        Some("stampede.v1.Echo.ServerStream ServerStream Echo EchoRequest EchoReply false true")
    );
    assert_eq!(
        Template::parse("{}", &method("Unary"), "-d")
            .unwrap()
            .constant(),
        Some("{}")
    );
}

#[test]
fn each_call_gets_values_of_its_own() {
    assert_eq!(
        render("n={{.RequestNumber}} w={{.WorkerID}}", 41),
        "n=41 w=run:g1c3"
    );
    assert_eq!(
        render(
            "{{.Timestamp}} {{.TimestampUnix}} {{.TimestampUnixMilli}} {{.TimestampUnixNano}}",
            0
        ),
        "2026-11-23T09:30:00Z 1795426200 1795426200250 1795426200250000000"
    );
    // .UUID is the call's, the same at each use; newUUID is new each time.
    let u = render("{{.UUID}} {{.UUID}} {{newUUID}} {{newUUID}}", 0);
    let ids: Vec<&str> = u.split(' ').collect();
    assert_eq!(ids[0], ids[1]);
    assert_ne!(ids[2], ids[3]);
    assert_ne!(ids[0], ids[2]);
    for id in ids {
        assert_eq!(id.len(), 36, "{id}");
        let parts: Vec<usize> = id.split('-').map(str::len).collect();
        assert_eq!(parts, [8, 4, 4, 4, 12], "{id}");
        assert_eq!(&id[14..15], "4", "version 4: {id}");
        assert!(
            matches!(&id[19..20], "8" | "9" | "a" | "b"),
            "variant: {id}"
        );
    }
    for _ in 0..200 {
        let s = render("{{randomString 7}}|{{randomString 0}}|{{randomInt 3 6}}", 0);
        let parts: Vec<&str> = s.split('|').collect();
        assert_eq!(parts[0].len(), 7);
        assert!(parts[0].bytes().all(|b| b.is_ascii_alphanumeric()));
        assert!((2..=16).contains(&parts[1].len()), "{s}");
        let n: i64 = parts[2].parse().unwrap();
        assert!((3..6).contains(&n), "{s}");
    }
}

#[test]
fn templates_not_taken_are_named_with_those_that_are() {
    let bad = |t: &str| {
        Template::parse(t, &method("Unary"), "-d")
            .unwrap_err()
            .message
    };
    let e = bad(r#"{"name": "{{.Nope}}"}"#);
    assert!(
        e.contains("{{.Nope}}") && e.contains(".RequestNumber"),
        "{e}"
    );
    assert!(bad("{{.UUID").contains("never closed"));
    assert!(bad("{{randomInt 5 2}}").contains("not above"));
    assert!(bad("{{randomString x}}").contains("whole number"));
    assert!(bad("{{randomString 99999999}}").contains("at most"));
}

fn framed(m: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    stampede_wire::grpc::frame(&mut b, false, m);
    b
}

#[test]
fn a_maker_encodes_each_calls_message_and_metadata() {
    let m = method("Unary");
    let data =
        Template::parse(r#"[{"size": {{.RequestNumber}}}, {"count": 1}]"#, &m, "-d").unwrap();
    let mut maker = Maker::new(m.clone(), data, "-d");
    maker.metadata = Some(Metadata::Fields(vec![(
        "X-Call".into(),
        Template::parse("c{{.RequestNumber}}", &m, "--metadata").unwrap(),
    )]));
    maker.check().unwrap();
    let (mut body, mut fields) = (Vec::new(), Vec::new());
    let call = |number| Call {
        number,
        worker: 0,
        conn: 0,
    };
    assert!(maker.make(call(4), &mut body, &mut fields));
    // Unary calls take the data's messages in turn: the first, with size 4.
    assert_eq!(body, framed(b"\x10\x04"));
    let mut want = Vec::new();
    stampede_wire::hpack::literal(&mut want, b"x-call", b"c4");
    assert_eq!(fields, want);
    let (mut body, mut fields) = (Vec::new(), Vec::new());
    assert!(maker.make(call(5), &mut body, &mut fields));
    assert_eq!(body, framed(b"\x18\x01"));
    // A number past the field's range: the call is not made, and why is kept.
    assert!(maker.failure().is_none());
    assert!(!maker.make(call(1 << 32), &mut Vec::new(), &mut Vec::new()));
    let why = maker.failure().unwrap();
    assert!(
        why.contains("call 4294967296") && why.contains("\"size\": 4294967296"),
        "{why}"
    );
    // A client stream sends the data's messages, as many as asked.
    let s = method("ClientStream");
    let data = Template::parse(r#"{"size": {{.RequestNumber}}}"#, &s, "-d").unwrap();
    let mut maker = Maker::new(s, data, "-d");
    maker.stream_count = 3;
    let mut body = Vec::new();
    assert!(maker.make(call(2), &mut body, &mut Vec::new()));
    assert_eq!(body, framed(b"\x10\x02").repeat(3));
    // Data that does not fit is said before the run.
    let data = Template::parse(r#"{"size": "{{.WorkerID}}"}"#, &m, "-d").unwrap();
    let e = Maker::new(m, data, "-d").check().unwrap_err().message;
    assert!(e.contains("size") && e.contains("g0c0"), "{e}");
}
