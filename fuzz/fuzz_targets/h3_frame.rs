//! Fuzzes HTTP/3's frame reader and the streams read through it: a hostile stream,
//! fed in two pieces at a split point taken from the input, must give frames (a
//! SETTINGS or GOAWAY payload read as one), a request or a response (its side from the
//! split byte's low bit), and a control stream's events, or fail with an HTTP/3 error
//! code — never panic, and never hold a frame over its limit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stampede_wire::h3::message::{Control, Message, Side};
use stampede_wire::h3::qpack::Decoder;
use stampede_wire::h3::{goaway_id, kind, Frame, FrameReader, Settings};

const LIMIT: usize = 256;

fuzz_target!(|data: &[u8]| {
    if data.is_empty() {
        return;
    }
    let body = &data[1..];
    let split = (data[0] as usize).min(body.len());
    let mut r = FrameReader::new(LIMIT);
    let mut on = |f: Frame<'_>| {
        match f {
            Frame::Data { .. } => {}
            Frame::Other { kind: t, payload } => {
                assert!(payload.len() <= LIMIT);
                match t {
                    kind::SETTINGS => {
                        Settings::parse(payload)?;
                    }
                    kind::GOAWAY => {
                        goaway_id(payload)?;
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    };
    for part in [&body[..split], &body[split..]] {
        if r.feed(part, &mut on).is_err() {
            break;
        }
    }
    let side = if data[0] & 1 == 0 { Side::Request } else { Side::Response };
    let mut m = Message::new(side);
    let mut q = Decoder::with_table(4096, 256);
    let mut c = Control::new();
    let (mut message_ok, mut control_ok) = (true, true);
    for part in [&body[..split], &body[split..]] {
        message_ok = message_ok && m.feed(part, &mut q, &mut |_| {}).is_ok();
        control_ok = control_ok && c.feed(part, &mut |_| {}).is_ok();
    }
    if message_ok {
        let _ = m.finish();
    }
});
