//! Fuzzes the server's request parser and router: any bytes, parsed as a pipelined
//! stream, must give requests, "need more" or a refusal with a status — never a panic.
#![no_main]

use std::cell::RefCell;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use stampede_server::request::{parse, Limits, Parsed};
use stampede_server::routes::{resolve_static, route, Ctx, Http1, Persist};
use stampede_server::store::Store;

fuzz_target!(|data: &[u8]| {
    thread_local! {
        static CTX: RefCell<Ctx> = RefCell::new(Ctx::new(Arc::new(Store::generate()), None, 0));
    }
    let limits = Limits {
        max_head: 4096,
        max_body: 4096,
    };
    let mut pos = 0;
    let mut out = Vec::new();
    while pos < data.len() {
        match parse(&data[pos..], &limits) {
            Parsed::Complete(req, len) => {
                assert!(len > 0 && pos + len <= data.len());
                pos += len;
                CTX.with_borrow_mut(|ctx| {
                    out.clear();
                    let mut resp = Http1 {
                        out: &mut out,
                        date: b"Date: x\r\n",
                        server: b"Server: fuzz\r\n",
                        persist: Persist::of(&req),
                        method: req.method,
                        tail: None,
                    };
                    let _ = route(&req, ctx, &mut resp);
                });
                if let Some(rest) = req.path.strip_prefix(b"/static/") {
                    let _ = resolve_static(std::path::Path::new("/nonexistent-fuzz-dir"), rest);
                }
            }
            Parsed::Partial(_) => break,
            Parsed::Rejected(r) => {
                assert!(matches!(r.status(), 400 | 413 | 431 | 501));
                break;
            }
        }
    }
});
