use super::*;

fn decode_all(d: &mut Decoder, block: &[u8]) -> Vec<(String, String)> {
    let mut v = Vec::new();
    d.decode(block, |n, val| {
        v.push((
            String::from_utf8_lossy(n).into_owned(),
            String::from_utf8_lossy(val).into_owned(),
        ))
    })
    .unwrap();
    v
}

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn rfc7541_c6_responses_with_huffman_and_eviction() {
    // RFC 7541 C.6: three responses, Huffman-coded, table size 256.
    let mut d = Decoder::new();
    d.max_size = 256;
    let r1 = hex("4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3");
    assert_eq!(
        decode_all(&mut d, &r1),
        [
            (":status".into(), "302".into()),
            ("cache-control".into(), "private".into()),
            ("date".into(), "Mon, 21 Oct 2013 20:13:21 GMT".into()),
            ("location".into(), "https://www.example.com".into())
        ]
    );
    assert_eq!(d.size, 222);
    let r2 = hex("4883 640e ffc1 c0bf");
    assert_eq!(decode_all(&mut d, &r2)[0], (":status".into(), "307".into()));
    assert_eq!(d.size, 222);
    let r3 = hex("88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07");
    let h = decode_all(&mut d, &r3);
    assert_eq!(h[0], (":status".into(), "200".into()));
    assert_eq!(
        h[5],
        (
            "set-cookie".into(),
            "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1".into()
        )
    );
    assert_eq!(d.size, 215);
    assert_eq!(d.table.len(), 3);
}

#[test]
fn encoder_blocks_decode_to_the_fields_and_repeats_are_indexes() {
    let mut e = Encoder::new();
    let mut d = Decoder::new();
    let mut block = Vec::new();
    e.begin(&mut block);
    e.indexed(&mut block, 8);
    e.field(&mut block, 54, b"stampede/0.1.0", true);
    e.field(&mut block, 31, b"text/plain", true);
    e.field(&mut block, 28, b"4", false);
    let want = [
        (":status".to_string(), "200".to_string()),
        ("server".into(), "stampede/0.1.0".into()),
        ("content-type".into(), "text/plain".into()),
        ("content-length".into(), "4".into()),
    ];
    assert_eq!(decode_all(&mut d, &block), want);
    let first = block.len();
    block.clear();
    e.begin(&mut block);
    e.indexed(&mut block, 8);
    e.field(&mut block, 54, b"stampede/0.1.0", true);
    e.field(&mut block, 31, b"text/plain", true);
    e.field(&mut block, 28, b"4", false);
    assert_eq!(block.len(), 7, "{block:?} after a first block of {first}");
    assert_eq!(decode_all(&mut d, &block), want);
    // A peer that shrinks its table to 0: an update first, then literals only.
    e.set_peer_table_size(0);
    e.set_peer_table_size(100);
    block.clear();
    e.begin(&mut block);
    assert_eq!(&block[..2], &[0x20, 0x3f]);
    e.field(&mut block, 54, b"stampede/0.1.0", true);
    let got = decode_all(&mut d, &block);
    assert_eq!(got, [("server".to_string(), "stampede/0.1.0".to_string())]);
    assert_eq!(d.max_size, 100);
    assert_eq!(d.table.len(), 1);
    // And the same through an independent decoder.
    let mut other = loona_hpack::Decoder::new();
    let mut e = Encoder::new();
    for _ in 0..3 {
        let mut b = Vec::new();
        e.begin(&mut b);
        e.indexed(&mut b, 13);
        e.field(&mut b, 33, b"Sun, 22 Nov 2026 20:00:00 GMT", true);
        let h = other.decode(&b).unwrap();
        assert_eq!(h[0], (b":status".to_vec(), b"404".to_vec()));
        assert_eq!(h[1].1, b"Sun, 22 Nov 2026 20:00:00 GMT".to_vec());
    }
}

#[test]
fn bad_blocks_are_errors_not_panics() {
    for bad in [
        // A table size update after a field (RFC 7541 4.2).
        &[0x82, 0x3f, 0xe1, 0x1f][..],
        &[0x80][..],
        &[0xff, 0xff],
        &[0x40, 0x85, 0xff],
        &[0x3f, 0xff, 0x7f],
        &[0xbe],
    ] {
        assert!(Decoder::new().decode(bad, |_, _| {}).is_err(), "{bad:?}");
    }
    // Updates before the first field are allowed, two in a row too.
    let mut fields = Vec::new();
    Decoder::new()
        .decode(&[0x20, 0x3f, 0xe1, 0x1f, 0x82], |n, v| {
            fields.push((n.to_vec(), v.to_vec()))
        })
        .unwrap();
    assert_eq!(fields, [(b":method".to_vec(), b"GET".to_vec())]);
    let mut out = Vec::new();
    // EOS padding longer than 7 bits, and a code that is not all ones at the end.
    assert!(huffman_decode(&[0xff, 0xff], &mut out).is_err());
    assert!(huffman_decode(&[0x00], &mut out).is_err());
    huffman_decode(&[0x1f], &mut out).unwrap();
    assert_eq!(out, b"a");
}
