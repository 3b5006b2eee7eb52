//! Fuzzes the server's HTTP/1 connection (request parser, router and all): any bytes,
//! fed in two pieces at a split point taken from the input and kept as the event loop
//! keeps a partial request, must give answers, "need more" or a refusal that ends the
//! connection — never a panic, never a pass that answers nothing and uses nothing
//! while it could go on.
#![no_main]

use std::cell::RefCell;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use stampede_server::h1::{Answering, H1Conn};
use stampede_server::request::Limits;
use stampede_server::routes::{resolve_static, Ctx, Lines};
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
    let input = &data[1..];
    let split = (data[0] as usize * 5).min(input.len());
    let mut conn = H1Conn::new();
    let (mut pending, mut out) = (Vec::new(), Vec::new());
    for part in [&input[..split], &input[split..]] {
        pending.extend_from_slice(part);
        loop {
            out.clear();
            let answered = CTX.with_borrow_mut(|ctx| {
                conn.answer(
                    &pending,
                    &mut Answering {
                        out: &mut out,
                        ctx,
                        limits: &limits,
                        lines: Lines {
                            date: b"Date: x\r\n",
                            server: b"Server: fuzz\r\n",
                        },
                        draining: false,
                        waiting_output: 0,
                        max_output: 1 << 20,
                    },
                )
            });
            assert!(answered.used <= pending.len());
            pending.drain(..answered.used);
            if answered.close {
                return;
            }
            while conn.has_tail() {
                out.clear();
                conn.fill_tail(&mut out);
            }
            if answered.deferred.is_some() {
                let lines = Lines {
                    date: b"Date: x\r\n",
                    server: b"Server: fuzz\r\n",
                };
                assert!(conn.finish_deferred(&mut out, lines, b"later\n", false).is_some());
            }
            // Go on while a pass stopped at a body or a deferred answer with input left.
            if !(answered.tail || answered.deferred.is_some()) || pending.is_empty() {
                break;
            }
        }
    }
    // Static paths, decoded from any bytes, must never leave their directory.
    if let Some(p) = resolve_static(std::path::Path::new("/nonexistent-fuzz-dir"), input) {
        assert!(p.starts_with("/nonexistent-fuzz-dir"));
    }
});
