//! WebSocket framing against RFC 6455's examples and the rules a peer can break.

use super::*;

fn server_reader(keep: bool) -> Reader {
    Reader::new(ReaderOptions {
        peer_is_client: true,
        max_message: 1 << 20,
        keep,
    })
}

fn client_reader() -> Reader {
    Reader::new(ReaderOptions {
        peer_is_client: false,
        max_message: 1 << 20,
        keep: true,
    })
}

/// What `r` reports for `input`, fed in pieces of `cut` bytes, as owned values.
#[derive(Debug, PartialEq, Eq)]
enum Got {
    Message(bool, u64, Vec<u8>),
    Ping(Vec<u8>),
    Pong(Vec<u8>),
    Close(Option<u16>, String),
}

fn read(r: &mut Reader, input: &[u8], cut: usize) -> Result<Vec<Got>, WsError> {
    let mut got = Vec::new();
    for piece in input.chunks(cut.max(1)) {
        r.feed(piece, &mut |e| {
            got.push(match e {
                Event::Message {
                    text, len, data, ..
                } => Got::Message(text, len, data.to_vec()),
                Event::Ping(p) => Got::Ping(p.to_vec()),
                Event::Pong(p) => Got::Pong(p.to_vec()),
                Event::Close { code, reason } => Got::Close(code, reason.to_string()),
            })
        })?;
    }
    Ok(got)
}

#[test]
fn the_accept_key_is_rfc_6455s_example() {
    assert_eq!(
        accept_key(b"dGhlIHNhbXBsZSBub25jZQ=="),
        "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
    );
    assert!(valid_key(b"dGhlIHNhbXBsZSBub25jZQ=="));
    for bad in [
        &b"dGhlIHNhbXBsZSBub25jZQ="[..],
        b"dGhlIHNhbXBsZSBub25jZR==",
        b"dGhlIHNhbXBsZSBub25j*Q==",
        b"",
    ] {
        assert!(!valid_key(bad), "{}", String::from_utf8_lossy(bad));
    }
}

#[test]
fn rfc_6455s_example_frames_are_read() {
    // §5.7: a single-frame unmasked text message, and a masked one.
    let mut c = client_reader();
    let got = read(&mut c, &[0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f], 100).unwrap();
    assert_eq!(got, [Got::Message(true, 5, b"Hello".to_vec())]);
    let mut s = server_reader(true);
    let masked = [
        0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58,
    ];
    let got = read(&mut s, &masked, 100).unwrap();
    assert_eq!(got, [Got::Message(true, 5, b"Hello".to_vec())]);
    // A fragmented unmasked text message, and a ping between its fragments.
    let frames = [
        &[0x01, 0x03, 0x48, 0x65, 0x6c][..],
        &[0x89, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f],
        &[0x80, 0x02, 0x6c, 0x6f],
    ]
    .concat();
    let got = read(&mut client_reader(), &frames, 100).unwrap();
    assert_eq!(
        got,
        [
            Got::Ping(b"Hello".to_vec()),
            Got::Message(true, 5, b"Hello".to_vec())
        ]
    );
    // 256 and 65536 bytes of binary: the 16-bit and 64-bit lengths.
    for n in [256usize, 65536] {
        let mut f = Vec::new();
        frame(&mut f, (true, false), BINARY, &vec![7; n], None);
        assert_eq!(f[1], if n == 256 { 126 } else { 127 });
        let got = read(&mut client_reader(), &f, 1000).unwrap();
        assert_eq!(got, [Got::Message(false, n as u64, vec![7; n])]);
    }
}

#[test]
fn frames_are_read_however_the_bytes_are_cut() {
    let mask = Some([1, 2, 3, 4]);
    let mut input = Vec::new();
    frame(&mut input, (false, false), TEXT, "ünï".as_bytes(), mask);
    frame(&mut input, (true, false), PING, b"p", mask);
    frame(
        &mut input,
        (true, false),
        CONTINUATION,
        "cødé €".as_bytes(),
        mask,
    );
    frame(&mut input, (true, false), BINARY, &[0u8; 300], mask);
    frame(&mut input, (true, false), PONG, b"", mask);
    close(&mut input, Some(NORMAL), "bye", mask);
    let want = [
        Got::Ping(b"p".to_vec()),
        Got::Message(true, 15, "ünïcødé €".as_bytes().to_vec()),
        Got::Message(false, 300, vec![0; 300]),
        Got::Pong(Vec::new()),
        Got::Close(Some(NORMAL), "bye".into()),
    ];
    for cut in 1..input.len() {
        let mut r = server_reader(true);
        let got = read(&mut r, &input, cut).unwrap();
        assert_eq!(got, want, "cut {cut}");
        assert!(r.closed() && !r.partial());
    }
    // Not kept: lengths only, the text still checked.
    let got = read(&mut server_reader(false), &input, 7).unwrap();
    assert_eq!(got[1], Got::Message(true, 15, Vec::new()));
}

#[test]
fn nothing_after_the_close_is_taken() {
    let mut input = Vec::new();
    close(&mut input, None, "", None);
    frame(&mut input, (true, false), TEXT, b"late", None);
    let got = read(&mut client_reader(), &input, 100).unwrap();
    assert_eq!(got, [Got::Close(None, String::new())]);
}

#[test]
fn each_broken_rule_is_named_with_its_close_code() {
    let k = Some([9, 8, 7, 6]);
    let masked = |fin: bool, op: u8, payload: &[u8]| {
        let mut f = Vec::new();
        frame(&mut f, (fin, false), op, payload, k);
        f
    };
    let cases: Vec<(Vec<u8>, u16, &str)> = vec![
        (
            {
                let mut f = Vec::new();
                frame(&mut f, (true, false), TEXT, b"x", None);
                f
            },
            PROTOCOL_ERROR,
            "not masked",
        ),
        (vec![0xa1, 0x80, 0, 0, 0, 0], PROTOCOL_ERROR, "RSV2"),
        (
            vec![0xc1, 0x80, 0, 0, 0, 0],
            PROTOCOL_ERROR,
            "permessage-deflate",
        ),
        (masked(true, 0x3, b""), PROTOCOL_ERROR, "reserved opcode"),
        (masked(true, 0xb, b""), PROTOCOL_ERROR, "reserved opcode"),
        (
            masked(false, PING, b""),
            PROTOCOL_ERROR,
            "fragmented control",
        ),
        (masked(true, PING, &[0; 126]), PROTOCOL_ERROR, "over 125"),
        (masked(true, CONTINUATION, b"x"), PROTOCOL_ERROR, "outside"),
        (
            [masked(false, TEXT, b"a"), masked(true, BINARY, b"b")].concat(),
            PROTOCOL_ERROR,
            "before the fragmented one ended",
        ),
        (masked(true, CLOSE, &[3]), PROTOCOL_ERROR, "one byte"),
        (
            masked(true, CLOSE, &1005u16.to_be_bytes()),
            PROTOCOL_ERROR,
            "may not be sent",
        ),
        (
            masked(true, CLOSE, &999u16.to_be_bytes()),
            PROTOCOL_ERROR,
            "may not be sent",
        ),
        (masked(true, CLOSE, &[3, 232, 0xff]), INVALID_DATA, "reason"),
        (
            masked(true, TEXT, &[0xce, 0xba, 0xff]),
            INVALID_DATA,
            "not UTF-8",
        ),
        (masked(true, TEXT, &[0xce]), INVALID_DATA, "ends inside"),
        (
            vec![0x82, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4],
            PROTOCOL_ERROR,
            "top bit",
        ),
    ];
    for (input, code, why) in cases {
        for cut in [1, 3, input.len()] {
            let e = read(&mut server_reader(true), &input, cut).unwrap_err();
            assert_eq!(e.code, code, "{why}: {e}");
            assert!(e.why.contains(why), "{why}: {e}");
        }
    }
    // A server that masks.
    let e = read(&mut client_reader(), &masked(true, TEXT, b"x"), 10).unwrap_err();
    assert!(e.why.contains("masked"), "{e}");
}

#[test]
fn a_message_over_the_limit_fails_from_its_heads_before_anything_is_kept() {
    let mut r = Reader::new(ReaderOptions {
        peer_is_client: false,
        max_message: 1000,
        keep: true,
    });
    // A head claiming 2^40 bytes: refused at once.
    let mut f = Vec::new();
    head(&mut f, (true, false), BINARY, 1 << 40, None);
    let e = read(&mut r, &f, 100).unwrap_err();
    assert_eq!(e.code, TOO_BIG);
    assert!(r.data.capacity() == 0);
    // Over the limit in fragments: the frame that passes it fails.
    let mut r = Reader::new(ReaderOptions {
        peer_is_client: false,
        max_message: 1000,
        keep: true,
    });
    let mut f = Vec::new();
    frame(&mut f, (false, false), BINARY, &[1; 600], None);
    frame(&mut f, (true, false), CONTINUATION, &[1; 600], None);
    let e = read(&mut r, &f, 10_000).unwrap_err();
    assert_eq!(e.code, TOO_BIG);
}

#[test]
fn invalid_text_fails_fast_in_its_first_fragment() {
    let mut r = server_reader(false);
    let mut f = Vec::new();
    frame(
        &mut f,
        (false, false),
        TEXT,
        b"ok \xc0\xaf",
        Some([1, 1, 1, 1]),
    );
    let e = read(&mut r, &f, 100).unwrap_err();
    assert_eq!(e.code, INVALID_DATA);
}

#[test]
fn utf8_is_checked_whatever_the_pieces() {
    let text = "a€ü𝄞z".as_bytes();
    for cut in 1..text.len() {
        for cut2 in cut..text.len() {
            let mut u = Utf8::default();
            assert!(u.push(&text[..cut]) && u.push(&text[cut..cut2]) && u.push(&text[cut2..]));
            assert!(u.end(), "{cut} {cut2}");
        }
    }
    // Surrogates, overlongs and bytes past U+10FFFF are refused even across pieces.
    for bad in [
        &b"\xed\xa0\x80"[..],
        b"\xe0\x80\xaf",
        b"\xf4\x90\x80\x80",
        b"\xff",
    ] {
        for cut in 1..bad.len().max(2) {
            let mut u = Utf8::default();
            let cut = cut.min(bad.len());
            let ok = u.push(&bad[..cut]) && u.push(&bad[cut..]) && u.end();
            assert!(!ok, "{bad:x?} cut {cut}");
        }
    }
}

#[test]
fn masking_in_pieces_is_masking_whole() {
    let key = [0x37, 0xfa, 0x21, 0x3d];
    let data: Vec<u8> = (0..=255u8).collect();
    let mut whole = data.clone();
    apply_mask(&mut whole, key, 0);
    for i in 0..data.len() {
        assert_eq!(whole[i], data[i] ^ key[i % 4]);
    }
    for cut in [1, 3, 7, 8, 13, 100] {
        let mut pieces = data.clone();
        let (a, b) = pieces.split_at_mut(cut);
        apply_mask(a, key, 0);
        apply_mask(b, key, cut);
        assert_eq!(pieces, whole, "cut {cut}");
    }
}

#[test]
fn a_close_reason_is_cut_at_a_character_to_fit() {
    let mut f = Vec::new();
    let long = "é".repeat(100);
    close(&mut f, Some(GOING_AWAY), &long, None);
    assert!(f.len() - 2 <= MAX_CONTROL);
    let got = read(&mut client_reader(), &f, 100).unwrap();
    let Got::Close(Some(GOING_AWAY), reason) = &got[0] else {
        panic!("{got:?}");
    };
    assert_eq!(reason.len(), 122);
}

#[test]
fn a_kept_prefix_is_the_messages_first_bytes_however_they_came() {
    // A text message in three fragments, masked (a client's) and not (a server's),
    // fed in pieces of every size: the first 10 bytes come back, unmasked, the
    // length whole; a message shorter than the prefix comes back whole.
    let text = b"stampede: the rest is counted and let go";
    let mut masked = Vec::new();
    let mut plain = Vec::new();
    for (out, mask) in [(&mut masked, Some([1, 2, 3, 4])), (&mut plain, None)] {
        frame(out, (false, false), TEXT, &text[..4], mask);
        frame(out, (false, false), CONTINUATION, &text[4..13], mask);
        frame(out, (true, false), CONTINUATION, &text[13..], mask);
        frame(out, (true, false), BINARY, b"short", mask);
    }
    for cut in 1..=masked.len() {
        for (input, peer_is_client) in [(&masked, true), (&plain, false)] {
            let mut r = Reader::new(ReaderOptions {
                peer_is_client,
                max_message: 1 << 20,
                keep: false,
            });
            r.keep_prefix(10);
            let got = read(&mut r, input, cut).unwrap();
            assert_eq!(
                got,
                vec![
                    Got::Message(true, text.len() as u64, text[..10].to_vec()),
                    Got::Message(false, 5, b"short".to_vec()),
                ],
                "cut {cut}, client {peer_is_client}"
            );
        }
    }
    // Without the prefix, nothing is kept.
    let mut r = server_reader(false);
    let got = read(&mut r, &masked, 7).unwrap();
    assert_eq!(got[0], Got::Message(true, text.len() as u64, Vec::new()));
}
