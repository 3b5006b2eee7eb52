//! QPACK's decoder and encoder against sections from other encoders, the dynamic
//! table's instructions, and the bounds every input is held to.

use super::*;

fn fields(d: &mut Decoder, block: &[u8]) -> Result<Vec<(String, String)>, H3Error> {
    let mut got = Vec::new();
    let r = d.decode(block, &mut |n, v| {
        got.push((
            String::from_utf8_lossy(n).into_owned(),
            String::from_utf8_lossy(v).into_owned(),
        ))
    })?;
    assert!(matches!(r, Decoded::Fields { .. }), "{r:?}");
    Ok(got)
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn owned(list: &[(&str, &str)]) -> Vec<(String, String)> {
    (list.iter())
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

#[test]
fn a_section_seen_before_is_handed_over_as_it_decoded() {
    let mut d = Decoder::new(16_384);
    let list = [
        (":status", "200"),
        ("date", "Thu, 26 Nov 2026 18:00:00 GMT"),
    ];
    let mut one = Vec::new();
    encode(
        &mut one,
        list.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())),
    );
    let mut other = Vec::new();
    encode(&mut other, [(&b":status"[..], &b"404"[..])]);
    // The same bytes again, another section, then the first again: each decodes
    // to its own fields whether kept or not.
    for block in [&one, &one, &other, &one] {
        let want = if *block == one {
            owned(&list)
        } else {
            owned(&[(":status", "404")])
        };
        assert_eq!(fields(&mut d, block).unwrap(), want);
    }
    // A broken section after a good one is refused, not answered from memory, and
    // the good one still decodes after it.
    let mut broken = one.clone();
    broken.truncate(one.len() - 3);
    assert!(d.decode(&broken, &mut |_, _| {}).is_err());
    assert_eq!(fields(&mut d, &one).unwrap(), owned(&list));
    // A section over the limit is refused every time, not only the first.
    let mut small = Decoder::new(40);
    assert!(small.decode(&one, &mut |_, _| {}).is_err());
    assert!(small.decode(&one, &mut |_, _| {}).is_err());
}

/// Sections and encoder-stream bytes written by ls-qpack (pylsqpack 1.0.0) with a
/// table of 4,096 bytes: the second and third sections reference entries the
/// encoder stream inserted, relative and post-base; one decoded before its
/// insertions arrive is blocked, and decodes once they have.
#[test]
fn sections_from_another_encoder_decode_through_the_dynamic_table() {
    let mut d = Decoder::with_table(16_384, 4096);
    d.encoder_stream(&hex("3fe11f")).unwrap();
    let first = owned(&[
        (":method", "GET"),
        (":scheme", "https"),
        (":authority", "bench.example:8443"),
        (":path", "/items/1"),
        ("user-agent", "stampede/0.1"),
        ("x-session", "s-0001"),
    ]);
    let block = hex("0000d1d7508e8cb51275cbe474d7416e3cd34cff518660c92d28603f5f508942474d6590ac0170ff2f00f2b20a8418f57f8442c00003");
    assert_eq!(fields(&mut d, &block).unwrap(), first);
    // The second section, before its insertions: blocked, nothing handed over.
    let second = hex("0482d1d710518660c92d28605f1112");
    let mut seen = 0;
    let r = d.decode(&second, &mut |_, _| seen += 1).unwrap();
    assert_eq!((r, seen), (Decoded::Blocked { needs: 3 }, 0));
    // Its insertions, fed a byte at a time.
    for b in
        hex("c08e8cb51275cbe474d7416e3cd34cffff208942474d6590ac0170ff67f2b20a8418f57f8442c00003")
    {
        d.encoder_stream(&[b]).unwrap();
    }
    assert_eq!(d.inserted(), 3);
    let mut got = Vec::new();
    let r = d
        .decode(&second, &mut |n, v| {
            got.push((
                String::from_utf8_lossy(n).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            ))
        })
        .unwrap();
    assert_eq!(r, Decoded::Fields { required: 3 });
    let mut want = first.clone();
    want[3].1 = "/items/2".into();
    assert_eq!(got, want);
    // The acknowledgment and an increment go on the decoder stream.
    let mut out = Vec::new();
    d.ack(&mut out, 4, 3);
    d.increment(&mut out);
    assert_eq!(out, [0x84]);
    d.encoder_stream(&hex("c18660c92d28605f")).unwrap();
    let third = owned(&[
        (":method", "POST"),
        (":scheme", "https"),
        (":authority", "bench.example:8443"),
        (":path", "/items/2"),
        ("x-session", "s-0002"),
        ("user-agent", "stampede/0.1"),
    ]);
    assert_eq!(
        fields(&mut d, &hex("0580d4d78210408442c0000581")).unwrap(),
        third
    );
    let mut out = Vec::new();
    d.increment(&mut out);
    assert_eq!(out, [0x01]);
}

#[test]
fn the_table_evicts_to_its_capacity_and_refuses_what_cannot_fit() {
    let mut d = Decoder::with_table(4096, 100);
    // Capacity 100, then two inserts of 32 + 2 + 2 = 36 bytes each: both fit;
    // a third evicts the first.
    let mut enc = vec![0x3f, 100 - 31];
    for v in [b"v1", b"v2", b"v3"] {
        enc.extend_from_slice(&[0x42, b'n', b'1', 0x02]);
        enc.extend_from_slice(v);
    }
    d.encoder_stream(&enc).unwrap();
    assert_eq!((d.inserted(), d.table.len(), d.size), (3, 2, 72));
    // A reference to the evicted entry (absolute 0) fails; to the newest works.
    // Encoded RIC for 3 with MaxEntries 3: 3 % 6 + 1 = 4; base 3.
    assert_eq!(
        fields(&mut d, &[0x04, 0x00, 0x82]).unwrap_err().code,
        Code::QPACK_DECOMPRESSION_FAILED
    );
    assert_eq!(
        fields(&mut d, &[0x04, 0x00, 0x80]).unwrap(),
        owned(&[("n1", "v3")])
    );
    // Duplicate the newest (relative 0).
    d.encoder_stream(&[0x00]).unwrap();
    assert_eq!(d.inserted(), 4);
    // An entry over the capacity, a capacity over the one advertised.
    let mut big = vec![0x42, b'n', b'1', 80];
    big.extend(std::iter::repeat_n(b'x', 80));
    assert_eq!(
        d.encoder_stream(&big).unwrap_err().code,
        Code::QPACK_ENCODER_STREAM_ERROR
    );
    let mut d = Decoder::with_table(4096, 100);
    assert_eq!(
        d.encoder_stream(&[0x3f, 0x50]).unwrap_err().code,
        Code::QPACK_ENCODER_STREAM_ERROR
    );
    // A value announcing a gigabyte is refused from its length, not waited for.
    let mut d = Decoder::with_table(4096, 100);
    d.encoder_stream(&[0x3f, 100 - 31]).unwrap();
    let mut huge = vec![0xc0 | 17];
    crate::hpack::integer_encode(&mut huge, 0, 7, 1 << 30);
    assert_eq!(
        d.encoder_stream(&huge).unwrap_err().code,
        Code::QPACK_ENCODER_STREAM_ERROR
    );
    assert!(d.pending.capacity() < 1024);
}

#[test]
fn rfc_9204_b1_a_literal_with_a_static_name_decodes() {
    // RFC 9204 Appendix B.1: ":path: /index.html", the name from the static table.
    let block = [
        0x00, 0x00, 0x51, 0x0b, 0x2f, 0x69, 0x6e, 0x64, 0x65, 0x78, 0x2e, 0x68, 0x74, 0x6d, 0x6c,
    ];
    let got = fields(&mut Decoder::new(4096), &block).unwrap();
    assert_eq!(got, [(":path".into(), "/index.html".into())]);
}

#[test]
fn what_is_encoded_decodes_to_the_same_fields() {
    let list: Vec<(&[u8], &[u8])> = vec![
        (b":method", b"GET"),
        (b":scheme", b"https"),
        (b":authority", b"example.com:8443"),
        (b":path", b"/items/7?x=1"),
        (b"user-agent", b"stampede"),
        (b"x-request-id", b"42"),
        (b"content-type", b"application/json"),
    ];
    let mut block = Vec::new();
    encode(&mut block, list.iter().copied());
    // GET, https and the JSON content type are one byte each.
    assert_eq!(&block[..4], &[0x00, 0x00, 0xc0 | 17, 0xc0 | 23]);
    let got = fields(&mut Decoder::new(4096), &block).unwrap();
    let want: Vec<(String, String)> = (list.iter())
        .map(|(n, v)| {
            (
                String::from_utf8_lossy(n).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            )
        })
        .collect();
    assert_eq!(got, want);
}

/// A section written by an independent encoder (ls-qpack, through pylsqpack 1.0.0,
/// its table capacity 0): static indices, static names with Huffman-coded values,
/// and Huffman-coded literal names.
#[test]
fn a_section_from_another_encoder_decodes() {
    let hex = "0000d4d7508a089d5c0b8170dc79a699519563b85824e34b043d35d05498f523fc426c28e9803fee5f508942474d6590ac0170ff2df2b26c190b881c64582265690b2f5f0e8c497ca582f72d495909b0a3a7";
    let block: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    let got = fields(&mut Decoder::new(4096), &block).unwrap();
    let want = [
        (":method", "POST"),
        (":scheme", "https"),
        (":authority", "127.0.0.1:8443"),
        (":path", "/v1/chat/completions?stream=1"),
        ("content-type", "application/json"),
        ("user-agent", "stampede/0.1"),
        ("x-trace", "abc-123-def"),
        ("accept", "text/event-stream"),
    ];
    let want: Vec<(String, String)> = (want.iter())
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn huffman_strings_decode() {
    // "www.example.com" Huffman-coded (RFC 7541 C.4.1) as a literal value of
    // :authority (static index 0): 0101 0000, H=1 and length 12.
    let mut block = vec![0x00, 0x00, 0x50, 0x8c];
    block.extend_from_slice(&[
        0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff,
    ]);
    let got = fields(&mut Decoder::new(4096), &block).unwrap();
    assert_eq!(got, [(":authority".into(), "www.example.com".into())]);
    // A bad code (EOS padding past 7 bits: four bytes of ones) fails the section's
    // decompression, the connection's error — not a stream's.
    let bad = [0x00, 0x00, 0x50, 0x84, 0xff, 0xff, 0xff, 0xff];
    let e = fields(&mut Decoder::new(4096), &bad).unwrap_err();
    assert_eq!(e.code, Code::QPACK_DECOMPRESSION_FAILED, "{e}");
    assert!(!e.is_stream_error());
}

#[test]
fn dynamic_references_and_bombs_are_errors_not_memory() {
    let mut d = Decoder::new(256);
    let code = |d: &mut Decoder, b: &[u8]| fields(d, b).unwrap_err().code;
    // A Required Insert Count above 0.
    assert_eq!(
        code(&mut d, &[0x02, 0x00, 0x80]),
        Code::QPACK_DECOMPRESSION_FAILED
    );
    // Indexed from the dynamic table, post-base forms, a dynamic name.
    for b in [0x80u8, 0x10, 0x00, 0x40] {
        assert_eq!(
            code(&mut d, &[0x00, 0x00, b]),
            Code::QPACK_DECOMPRESSION_FAILED
        );
    }
    // A static index past the table, a string past the section's end.
    assert_eq!(
        code(&mut d, &[0x00, 0x00, 0xff, 0x30]),
        Code::QPACK_DECOMPRESSION_FAILED
    );
    assert_eq!(
        code(&mut d, &[0x00, 0x00, 0x51, 0x05, b'/']),
        Code::QPACK_DECOMPRESSION_FAILED
    );
    // A value announcing a gigabyte: refused from its length, nothing copied.
    let mut huge = vec![0x00, 0x00, 0x51];
    crate::hpack::integer_encode(&mut huge, 0, 7, 1 << 30);
    assert_eq!(code(&mut d, &huge), Code::EXCESSIVE_LOAD);
    // Many small fields that together pass the limit.
    let mut many = vec![0x00, 0x00];
    many.extend(std::iter::repeat_n(0xc0 | 17, 20));
    assert_eq!(code(&mut d, &many), Code::EXCESSIVE_LOAD);
    // One value over the limit, present in full.
    let mut big = Vec::new();
    encode(&mut big, [(&b"x-big"[..], &[b'a'; 300][..])]);
    assert_eq!(code(&mut d, &big), Code::EXCESSIVE_LOAD);
    assert!(d.value.capacity() < 300, "{}", d.value.capacity());
    // A section with no base.
    assert_eq!(code(&mut d, &[0x00]), Code::QPACK_DECOMPRESSION_FAILED);
}

#[test]
fn with_capacity_0_the_encoder_stream_may_only_set_a_capacity_of_0() {
    let mut d = Decoder::new(4096);
    assert_eq!(d.encoder_stream(&[0x20, 0x20]), Ok(()));
    assert_eq!(
        d.encoder_stream(&[0x3f, 0xe1, 0x1f]).unwrap_err().code,
        Code::QPACK_ENCODER_STREAM_ERROR
    );
    // Insert with name reference, with literal name (both whole), duplicate.
    for bytes in [
        &[0xc0 | 17, 0x01, b'x'][..],
        &[0x41, b'n', 0x01, b'v'],
        &[0x00],
    ] {
        assert_eq!(
            Decoder::new(4096).encoder_stream(bytes).unwrap_err().code,
            Code::QPACK_ENCODER_STREAM_ERROR,
            "{bytes:?}"
        );
    }
}

#[test]
fn decoder_instructions_past_what_was_sent_are_the_decoder_streams_error() {
    let mut d = DecoderInstructions::default();
    // Stream Cancellations, one cut across two reads (a 6-bit prefix past 63).
    d.feed(&[0x40 | 5, 0x7f]).unwrap();
    d.feed(&[0x10]).unwrap();
    for bad in [&[0x00][..], &[0x01], &[0x80 | 4]] {
        let e = DecoderInstructions::default().feed(bad).unwrap_err();
        assert_eq!(e.code, Code::QPACK_DECODER_STREAM_ERROR, "{bad:?}");
    }
}
