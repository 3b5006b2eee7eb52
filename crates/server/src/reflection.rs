//! gRPC server reflection (`grpc.reflection.v1.ServerReflection` and its `v1alpha`
//! twin, which has the same messages): how a client with no `.proto` learns the
//! services this server offers and the files that define them.
//!
//! The files are given whole, as serialized `FileDescriptorProto`s with their names,
//! imports and the symbols they define (whoever starts the server compiles them from
//! the `.proto` files it ships); this module answers requests from that table with
//! protobuf's wire format directly. A file is sent with every file it imports,
//! transitively, as gRPC's own servers do, so that one answer is a usable schema.
//! Each request message gets one answer message; what cannot be answered is an
//! `ErrorResponse` (NOT_FOUND, UNIMPLEMENTED for extension queries), never a failed
//! call, as the service's definition asks.

use std::collections::HashMap;

/// One file the reflection service describes.
#[derive(Debug, Clone)]
pub struct ReflectedFile {
    /// Its name, as imports name it (`helloworld.proto`).
    pub name: String,
    /// Its serialized `FileDescriptorProto`.
    pub bytes: Vec<u8>,
    /// The names of the files it imports.
    pub imports: Vec<String>,
    /// The fully qualified names it defines: services, methods, messages (nested ones
    /// too) and enums.
    pub symbols: Vec<String>,
    /// The fully qualified names of its services.
    pub services: Vec<String>,
}

/// What the reflection service answers from.
#[derive(Debug, Default)]
pub struct Reflection {
    files: Vec<ReflectedFile>,
    by_name: HashMap<String, usize>,
    by_symbol: HashMap<String, usize>,
}

/// A field number of `ServerReflectionRequest`'s question.
const FILE_BY_FILENAME: u64 = 3;
const FILE_CONTAINING_SYMBOL: u64 = 4;
const FILE_CONTAINING_EXTENSION: u64 = 5;
const ALL_EXTENSION_NUMBERS_OF_TYPE: u64 = 6;
const LIST_SERVICES: u64 = 7;

/// The largest request message taken (a name or two).
pub const MAX_REQUEST: usize = 64 * 1024;

impl Reflection {
    /// The service over `files` (any order; a name given twice keeps the first).
    pub fn new(files: Vec<ReflectedFile>) -> Reflection {
        let mut r = Reflection::default();
        for f in files {
            if r.by_name.contains_key(&f.name) {
                continue;
            }
            let i = r.files.len();
            r.by_name.insert(f.name.clone(), i);
            for s in &f.symbols {
                r.by_symbol.entry(s.clone()).or_insert(i);
            }
            r.files.push(f);
        }
        r
    }

    /// The services described, in the order their files came.
    pub fn services(&self) -> impl Iterator<Item = &str> {
        self.files
            .iter()
            .flat_map(|f| f.services.iter().map(String::as_str))
    }

    /// Appends to `out` the `ServerReflectionResponse` (unframed) to the request
    /// message `request`; `None` when the request does not decode.
    pub fn answer(&self, request: &[u8], out: &mut Vec<u8>) -> Option<()> {
        let mut host: &[u8] = b"";
        let mut ask: Option<(u64, &[u8])> = None;
        crate::grpc::each_field(request, |field, value| match (field, value) {
            (1, crate::grpc::Field::Bytes(b)) => host = b,
            (3..=7, crate::grpc::Field::Bytes(b)) => ask = Some((field, b)),
            _ => {}
        })?;
        // valid_host (1) and original_request (2), then the answer.
        bytes_field(out, 1, host);
        bytes_field(out, 2, request);
        let not_found = |out: &mut Vec<u8>, what: &str, name: &[u8]| {
            let text = format!("{what} {} not found", String::from_utf8_lossy(name));
            error(out, 5, &text);
        };
        match ask {
            Some((FILE_BY_FILENAME, name)) => {
                match std::str::from_utf8(name)
                    .ok()
                    .and_then(|n| self.by_name.get(n))
                {
                    Some(&i) => self.files_from(i, out),
                    None => not_found(out, "file", name),
                }
            }
            Some((FILE_CONTAINING_SYMBOL, symbol)) => {
                let symbol = std::str::from_utf8(symbol).ok();
                match symbol.and_then(|s| self.by_symbol.get(s.trim_start_matches('.'))) {
                    Some(&i) => self.files_from(i, out),
                    None => not_found(out, "symbol", symbol.unwrap_or("").as_bytes()),
                }
            }
            Some((FILE_CONTAINING_EXTENSION | ALL_EXTENSION_NUMBERS_OF_TYPE, _)) => {
                error(out, 12, "the files served define no extensions")
            }
            Some((LIST_SERVICES, _)) => {
                let mut list = Vec::new();
                for s in self.services() {
                    let mut one = Vec::new();
                    bytes_field(&mut one, 1, s.as_bytes());
                    bytes_field(&mut list, 1, &one);
                }
                bytes_field(out, 6, &list);
            }
            _ => error(out, 3, "the request asks nothing this service answers"),
        }
        Some(())
    }

    /// A `FileDescriptorResponse` (field 4): file `i`, then what it imports,
    /// transitively, each once.
    fn files_from(&self, i: usize, out: &mut Vec<u8>) {
        let mut order = vec![i];
        let mut at = 0;
        while at < order.len() {
            for name in &self.files[order[at]].imports {
                if let Some(&j) = self.by_name.get(name) {
                    if !order.contains(&j) {
                        order.push(j);
                    }
                }
            }
            at += 1;
        }
        let mut files = Vec::new();
        for j in order {
            bytes_field(&mut files, 1, &self.files[j].bytes);
        }
        bytes_field(out, 4, &files);
    }
}

/// An `ErrorResponse` (field 7): a gRPC code and a message.
fn error(out: &mut Vec<u8>, code: u8, message: &str) {
    let mut e = vec![0x08, code];
    bytes_field(&mut e, 2, message.as_bytes());
    bytes_field(out, 7, &e);
}

/// A length-delimited field.
fn bytes_field(out: &mut Vec<u8>, field: u64, value: &[u8]) {
    crate::grpc::put_varint(out, field << 3 | 2);
    crate::grpc::put_varint(out, value.len() as u64);
    out.extend_from_slice(value);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, imports: &[&str], symbols: &[&str]) -> ReflectedFile {
        ReflectedFile {
            name: name.into(),
            bytes: name.as_bytes().to_vec(),
            imports: imports.iter().map(|s| s.to_string()).collect(),
            symbols: symbols.iter().map(|s| s.to_string()).collect(),
            services: symbols
                .iter()
                .filter(|s| s.ends_with("Svc"))
                .map(|s| s.to_string())
                .collect(),
        }
    }

    fn ask(r: &Reflection, field: u64, value: &[u8]) -> Vec<u8> {
        let mut req = Vec::new();
        bytes_field(&mut req, 1, b"h");
        bytes_field(&mut req, field, value);
        let mut out = Vec::new();
        r.answer(&req, &mut out).unwrap();
        // valid_host and original_request first.
        let mut head = Vec::new();
        bytes_field(&mut head, 1, b"h");
        bytes_field(&mut head, 2, &req);
        assert!(out.starts_with(&head));
        out.split_off(head.len())
    }

    fn files(names: &[&str]) -> Vec<u8> {
        let mut list = Vec::new();
        for n in names {
            bytes_field(&mut list, 1, n.as_bytes());
        }
        let mut out = Vec::new();
        bytes_field(&mut out, 4, &list);
        out
    }

    #[test]
    fn files_come_with_what_they_import_and_services_are_listed() {
        let r = Reflection::new(vec![
            file("a.proto", &["b.proto"], &["p.ASvc", "p.ASvc.Call", "p.Req"]),
            file("b.proto", &["c.proto", "a.proto"], &["p.B"]),
            file("c.proto", &[], &["q.CSvc"]),
        ]);
        assert_eq!(
            ask(&r, 4, b"p.ASvc"),
            files(&["a.proto", "b.proto", "c.proto"])
        );
        assert_eq!(ask(&r, 4, b".p.Req"), ask(&r, 4, b"p.ASvc.Call"));
        assert_eq!(
            ask(&r, 3, b"b.proto"),
            files(&["b.proto", "c.proto", "a.proto"])
        );
        let mut list = Vec::new();
        for s in ["p.ASvc", "q.CSvc"] {
            let mut one = Vec::new();
            bytes_field(&mut one, 1, s.as_bytes());
            bytes_field(&mut list, 1, &one);
        }
        let mut want = Vec::new();
        bytes_field(&mut want, 6, &list);
        assert_eq!(ask(&r, 7, b"*"), want);
    }

    #[test]
    fn what_is_not_there_is_an_error_answer() {
        let r = Reflection::new(vec![file("a.proto", &[], &["p.ASvc"])]);
        let mut want = Vec::new();
        error(&mut want, 5, "symbol no.Such not found");
        assert_eq!(ask(&r, 4, b"no.Such"), want);
        want.clear();
        error(&mut want, 5, "file x.proto not found");
        assert_eq!(ask(&r, 3, b"x.proto"), want);
        want.clear();
        error(&mut want, 12, "the files served define no extensions");
        assert_eq!(ask(&r, 6, b"p.Req"), want);
        // A request that does not decode.
        assert!(r.answer(&[0x0a, 0x09], &mut Vec::new()).is_none());
    }
}
