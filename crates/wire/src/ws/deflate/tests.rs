use super::*;
use crate::ws::{self, Event, Reader, ReaderOptions, TOO_BIG};

/// Inflates one message's payload whole.
fn inflate(i: &mut Inflater, payload: &[u8]) -> Result<Vec<u8>, WsError> {
    let mut out = Vec::new();
    let mut on = |p: &[u8]| {
        out.extend_from_slice(p);
        Ok(())
    };
    i.feed(payload, &mut on)?;
    i.finish(&mut on)?;
    Ok(out)
}

#[test]
fn the_rfcs_examples_inflate() {
    // RFC 7692 §7.2.3.1: "Hello" compressed.
    let mut i = Inflater::new(false);
    assert_eq!(
        inflate(&mut i, &[0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00]).unwrap(),
        b"Hello"
    );
    // §7.2.3.2: the same again, with the context kept from the first.
    assert_eq!(
        inflate(&mut i, &[0xf2, 0x00, 0x11, 0x00, 0x00]).unwrap(),
        b"Hello"
    );
    // §7.2.3.3: a stored (uncompressed) block.
    let mut i = Inflater::new(false);
    let stored = [
        0x00, 0x05, 0x00, 0xfa, 0xff, 0x48, 0x65, 0x6c, 0x6c, 0x6f, 0x00,
    ];
    assert_eq!(inflate(&mut i, &stored).unwrap(), b"Hello");
    // §7.2.3.4: a final block (BFINAL set); what follows the stream's end is let go
    // and the next message starts a fresh stream.
    let mut i = Inflater::new(false);
    let fin = [0xf3, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00, 0x00];
    assert_eq!(inflate(&mut i, &fin).unwrap(), b"Hello");
    assert_eq!(inflate(&mut i, &fin).unwrap(), b"Hello");
    // §7.2.3.5: two blocks in one message.
    let mut i = Inflater::new(false);
    let two = [
        0xf2, 0x48, 0x05, 0x00, 0x00, 0x00, 0xff, 0xff, 0xca, 0xc9, 0xc9, 0x07, 0x00,
    ];
    assert_eq!(inflate(&mut i, &two).unwrap(), b"Hello");
}

#[test]
fn messages_round_trip_with_every_window_and_context() {
    let text: Vec<u8> = (0..20_000u32)
        .flat_map(|n| format!("message {} of the feed; ", n % 97).into_bytes())
        .collect();
    // Letters that repeat nothing within themselves: only the context shrinks them.
    let mut x = 7u32;
    let noise: Vec<u8> = (0..200)
        .map(|_| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            b'a' + (x >> 16) as u8 % 26
        })
        .collect();
    for bits in 8..=15 {
        for reset in [false, true] {
            let mut d = Deflater::new(bits, reset);
            let mut i = Inflater::new(reset);
            let mut sizes = Vec::new();
            for m in [&text[..], &noise[..], &noise[..], b"", b"x"] {
                let mut payload = Vec::new();
                let compressed = d.message(m, &mut payload);
                assert_eq!(compressed, bits > 8, "window 2^{bits}");
                let back = if compressed {
                    inflate(&mut i, &payload).unwrap()
                } else {
                    payload.clone()
                };
                assert_eq!(back, m, "window 2^{bits}, reset {reset}");
                sizes.push(payload.len());
            }
            if bits > 8 {
                // Repetitive text shrinks; a short message again costs less when
                // the context is kept (it is all in the window) than when reset.
                assert!(sizes[0] < text.len() / 10, "{sizes:?}");
                if reset {
                    assert_eq!(sizes[1], sizes[2], "{sizes:?}");
                } else {
                    assert!(sizes[2] * 4 < sizes[1], "{sizes:?}");
                }
                // An empty message is the one byte RFC 7692 §7.2.3.6 gives it.
                assert_eq!(sizes[3], 1, "{sizes:?}");
            }
        }
    }
}

#[test]
fn a_deflaters_window_holds_what_the_peer_agreed_to() {
    // With a 2^9 window, an inflater with that window reads what it sends (a wider
    // match distance would fail it).
    let text: Vec<u8> = (0..4000u32).flat_map(|n| (n % 251).to_le_bytes()).collect();
    let mut d = Deflater::new(9, false);
    let mut payload = Vec::new();
    assert!(d.message(&text, &mut payload));
    payload.extend_from_slice(&TAIL);
    let mut narrow = Decompress::new_with_window_bits(false, 9);
    let mut out = vec![0u8; text.len() + 64];
    narrow
        .decompress(&payload, &mut out, FlushDecompress::Sync)
        .unwrap();
    assert_eq!(&out[..narrow.total_out() as usize], &text[..]);
}

#[test]
fn inflating_stops_at_the_readers_limit_and_at_garbage() {
    // A megabyte of zeros deflates to about a kilobyte; a reader held to 64 KiB
    // refuses it once 64 KiB are inflated, having kept no more.
    let mut d = Deflater::new(15, false);
    let mut payload = Vec::new();
    assert!(d.message(&vec![0u8; 1 << 20], &mut payload));
    assert!(payload.len() < 4096, "{}", payload.len());
    let mut frame = Vec::new();
    ws::frame(&mut frame, (true, true), ws::BINARY, &payload, None);
    let mut r = Reader::new(ReaderOptions {
        peer_is_client: false,
        max_message: 64 << 10,
        keep: true,
    });
    r.inflate(false);
    let e = r.feed(&frame, &mut |_| panic!("no message")).unwrap_err();
    assert_eq!(e.code, TOO_BIG);
    // Bytes that are no deflate stream.
    let mut i = Inflater::new(false);
    let e = inflate(&mut i, &[0xff; 16]).unwrap_err();
    assert_eq!(e.code, INVALID_DATA);
}

#[test]
fn the_reader_inflates_fragmented_masked_messages_cut_anywhere() {
    let text = "ünïcödé text, again and again; ".repeat(300);
    let mut d = Deflater::new(15, false);
    let mut frames = Vec::new();
    for _ in 0..2 {
        let mut payload = Vec::new();
        assert!(d.message(text.as_bytes(), &mut payload));
        // Three fragments, RSV1 on the first only, each masked.
        let (a, b) = (payload.len() / 3, 2 * payload.len() / 3);
        ws::frame(
            &mut frames,
            (false, true),
            ws::TEXT,
            &payload[..a],
            Some([1, 2, 3, 4]),
        );
        ws::frame(
            &mut frames,
            (false, false),
            0,
            &payload[a..b],
            Some([5, 6, 7, 8]),
        );
        ws::frame(
            &mut frames,
            (true, false),
            0,
            &payload[b..],
            Some([9, 9, 9, 9]),
        );
    }
    ws::frame(&mut frames, (true, false), ws::PING, b"p", Some([0; 4]));
    for cut in [1, 7, 100, frames.len() / 2, frames.len()] {
        for keep in [true, false] {
            let mut r = Reader::new(ReaderOptions {
                peer_is_client: true,
                max_message: 1 << 20,
                keep,
            });
            r.inflate(false);
            r.keep_prefix(5);
            let mut seen = Vec::new();
            let mut on = |e: Event<'_>| match e {
                Event::Message {
                    text: t,
                    compressed,
                    len,
                    data,
                } => {
                    assert!(t && compressed);
                    assert_eq!(len, text.len() as u64);
                    let want = if keep {
                        text.as_bytes()
                    } else {
                        &text.as_bytes()[..5]
                    };
                    assert_eq!(data, want);
                    seen.push("message");
                }
                Event::Ping(_) => seen.push("ping"),
                _ => panic!("{e:?}"),
            };
            for piece in frames.chunks(cut) {
                r.feed(piece, &mut on).unwrap();
            }
            assert_eq!(
                seen,
                ["message", "message", "ping"],
                "cut {cut}, keep {keep}"
            );
        }
    }
}

#[test]
fn inflated_text_that_is_not_utf8_fails_as_such() {
    let mut d = Deflater::new(15, true);
    let mut payload = Vec::new();
    assert!(d.message(b"ok \xff then", &mut payload));
    let mut frame = Vec::new();
    ws::frame(&mut frame, (true, true), ws::TEXT, &payload, None);
    let mut r = Reader::new(ReaderOptions {
        peer_is_client: false,
        max_message: 1 << 20,
        keep: false,
    });
    r.inflate(true);
    let e = r.feed(&frame, &mut |_| panic!("no message")).unwrap_err();
    assert_eq!(e.code, INVALID_DATA);
    // Without the extension, RSV1 is a protocol error.
    let mut r = Reader::new(ReaderOptions {
        peer_is_client: false,
        max_message: 1 << 20,
        keep: false,
    });
    assert_eq!(
        r.feed(&frame, &mut |_| {}).unwrap_err().code,
        ws::PROTOCOL_ERROR
    );
}

#[test]
fn a_server_takes_the_first_offer_it_can() {
    let (p, answer) = accept([&b"permessage-deflate; client_max_window_bits"[..]]).unwrap();
    assert_eq!(p, Params::default());
    assert_eq!(answer, "permessage-deflate");
    // An offer with an unknown parameter is passed over for the next; values may be
    // quoted.
    let (p, answer) = accept([
        &b"x-webkit-deflate-frame, permessage-deflate; mystery=1"[..],
        &b"permessage-deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=\"10\"; client_max_window_bits=9"[..],
    ])
    .unwrap();
    assert_eq!(
        p,
        Params {
            server_no_context_takeover: true,
            client_no_context_takeover: true,
            server_max_window_bits: 10,
            client_max_window_bits: 9,
        }
    );
    assert_eq!(
        answer,
        "permessage-deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=10"
    );
    for bad in [
        &b"permessage-deflate; server_max_window_bits"[..],
        b"permessage-deflate; server_max_window_bits=7",
        b"permessage-deflate; server_max_window_bits=16",
        b"permessage-deflate; server_max_window_bits=010",
        b"permessage-deflate; client_max_window_bits=1x",
        b"permessage-deflate; server_no_context_takeover; server_no_context_takeover",
        b"permessage-deflate; server_no_context_takeover=1",
        b"deflate-frame",
        b"",
    ] {
        assert_eq!(accept([bad]), None, "{}", String::from_utf8_lossy(bad));
    }
}

#[test]
fn a_client_checks_the_servers_answer() {
    assert_eq!(accepted([]), Ok(None));
    assert_eq!(accepted([&b""[..]]), Ok(None));
    assert_eq!(
        accepted([
            &b"permessage-deflate; client_max_window_bits=12; server_no_context_takeover"[..]
        ]),
        Ok(Some(Params {
            server_no_context_takeover: true,
            client_max_window_bits: 12,
            ..Params::default()
        }))
    );
    for bad in [
        &b"permessage-deflate, permessage-deflate"[..],
        b"x-webkit-deflate-frame",
        b"permessage-deflate; client_max_window_bits",
        b"permessage-deflate; server_max_window_bits=20",
        b"permessage-deflate; unknown",
    ] {
        assert_eq!(
            accepted([bad]),
            Err(NotOffered),
            "{}",
            String::from_utf8_lossy(bad)
        );
    }
    // Two header lines of one extension each are two extensions.
    assert_eq!(
        accepted([&b"permessage-deflate"[..], &b"permessage-deflate"[..]]),
        Err(NotOffered)
    );
    // The parameters pick each side's window and context.
    let p = Params {
        server_no_context_takeover: true,
        client_max_window_bits: 8,
        ..Params::default()
    };
    assert!(p.peer_resets(false) && !p.peer_resets(true));
    let mut out = Vec::new();
    assert!(!p.deflater(false).message(b"abc", &mut out));
    assert_eq!(out, b"abc");
    assert!(p.deflater(true).message(b"abc", &mut out));
}

#[test]
fn an_offer_asks_for_parameters_and_holds_the_answer_to_them() {
    let (header, asked) =
        offer_with("server_no_context_takeover; server_max_window_bits=10").unwrap();
    assert_eq!(
        header,
        "permessage-deflate; server_no_context_takeover; server_max_window_bits=10; client_max_window_bits"
    );
    // Our server's answer to it honours both, and the client takes it.
    let (_, answer) = accept([header.as_bytes()]).unwrap();
    let p = accepted([answer.as_bytes()]).unwrap().unwrap();
    let held = asked.hold(p).expect("honoured");
    assert!(held.server_no_context_takeover && held.server_max_window_bits == 10);
    // An answer that ignores the asks fails; a smaller window than asked is kept.
    assert_eq!(asked.hold(Params::default()), None);
    let narrower = Params {
        server_no_context_takeover: true,
        server_max_window_bits: 9,
        ..Params::default()
    };
    assert_eq!(asked.hold(narrower), Some(narrower));
    let wider = Params {
        server_max_window_bits: 11,
        ..narrower
    };
    assert_eq!(asked.hold(wider), None);
    // The client's own asks hold whatever the answer says.
    let (header, asked) =
        offer_with("client_no_context_takeover; client_max_window_bits=9").unwrap();
    assert_eq!(
        header,
        "permessage-deflate; client_no_context_takeover; client_max_window_bits=9"
    );
    let held = asked.hold(Params::default()).unwrap();
    assert!(held.client_no_context_takeover && held.client_max_window_bits == 9);
    // Nothing asked: the plain offer, any answer held as it is.
    assert_eq!(
        offer_with(" ").unwrap(),
        (OFFER.to_string(), Asked::default())
    );
    assert_eq!(Asked::default().hold(narrower), Some(narrower));
    for bad in [
        "x",
        "server_max_window_bits=16",
        "server_no_context_takeover; server_no_context_takeover",
        "server_max_window_bits",
    ] {
        let e = offer_with(bad).unwrap_err();
        assert_eq!(e, BadParams::Unknown(bad.to_string()));
        assert!(
            e.to_string()
                .contains("not permessage-deflate's parameters"),
            "{bad}: {e}"
        );
    }
    let long = "server_no_context_takeover; ".repeat(10);
    assert_eq!(
        offer_with(&long).unwrap_err(),
        BadParams::TooLong(long.len())
    );
}
