//! Fuzzes the server's HTTP/2 connection: any frames after the preface, fed in two
//! pieces, must be answered, reset or refused with GOAWAY — never a panic — and every
//! request that comes out complete is routed and answered through the HTTP/2 responder.
#![no_main]

use std::cell::RefCell;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use stampede_server::h2::{H2Conn, H2Respond, PREFACE};
use stampede_server::request::Limits;
use stampede_server::routes::{Ctx, Respond, Routed};
use stampede_server::store::Store;

fuzz_target!(|data: &[u8]| {
    thread_local! {
        static CTX: RefCell<Ctx> = RefCell::new(Ctx::new(Arc::new(Store::generate()), None, 0));
    }
    if data.is_empty() {
        return;
    }
    let limits = Limits {
        max_head: 4096,
        max_body: 4096,
    };
    let mut out = Vec::new();
    let mut conn = H2Conn::new(limits, &mut out);
    let mut input = PREFACE.to_vec();
    input.extend_from_slice(&data[1..]);
    let split = (data[0] as usize * 7).min(input.len());
    let mut pending = Vec::new();
    let (mut path, mut body, mut request) = (Vec::new(), Vec::new(), Vec::new());
    let mut authorization = Vec::new();
    for part in [&input[..split], &input[split..]] {
        pending.extend_from_slice(part);
        match conn.feed(&pending, &mut out) {
            Ok(used) => {
                assert!(used <= pending.len());
                pending.drain(..used);
            }
            Err(e) => {
                assert!(e.code != 0, "{e:?}");
                return;
            }
        }
        while let Some(ready) = conn.next_ready(&mut path, &mut request) {
            conn.authorization(ready.stream, &mut authorization);
            CTX.with_borrow_mut(|ctx| {
                let mut resp = H2Respond {
                    conn: &mut conn,
                    out: &mut out,
                    stream: ready.stream,
                    head: false,
                    date: b"Sun, 22 Nov 2026 20:00:00 GMT",
                    server: b"stampede/fuzz",
                    body: &mut body,
                };
                let target = (&path[..], &authorization[..]);
                if let Routed::Later(_) = resp.route(&ready, target, &request, ctx) {
                    resp.respond(200, "text/plain", b"later\n");
                }
            });
        }
        out.clear();
    }
});
