//! Fuzzes the guard a `.proto` file passes before it is compiled, and the compiler's
//! parser behind it: whatever the text nests or imports, the guard refuses it or the
//! parser returns a file or an error — never a stack overflow, never a panic. Inputs
//! are also wrapped in thousands of nested messages, so that the deep cases the guard
//! exists for are always tried.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stampede_wire::schema;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if schema::check(text).is_ok() {
        let _ = protox::file::File::from_source("fuzz.proto", text);
    }
    // The same text at the bottom of a nest deeper than the limit must be refused.
    let depth = schema::MAX_NESTING + 1 + data.first().map_or(0, |b| *b as usize) * 8;
    let deep = format!("{}{text}{}", "message M{".repeat(depth), "}".repeat(depth));
    assert!(schema::check(&deep).is_err());
});
