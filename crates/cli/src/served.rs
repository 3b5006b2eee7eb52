//! The reference server's own schema, for its gRPC reflection service: the `.proto`
//! files the repository ships (built into the binary), compiled when `stampede serve`
//! starts, so that a client given no `.proto` (ghz, grpcurl, `stampede load --call`)
//! learns the services from the server itself, as it would from any gRPC server.

use crate::console::Exit;
use prost_reflect::MessageDescriptor;
use protox::file::{File, FileResolver};
use stampede_server::reflection::{ReflectedFile, Reflection};

/// The shipped files, by the names they import each other by.
const SHIPPED: [(&str, &str); 3] = [
    (
        "helloworld.proto",
        include_str!("../proto/helloworld.proto"),
    ),
    ("echo.proto", include_str!("../proto/echo.proto")),
    ("health.proto", include_str!("../proto/health.proto")),
];

struct Shipped;

impl FileResolver for Shipped {
    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        match SHIPPED.iter().find(|(n, _)| *n == name) {
            Some((n, source)) => File::from_source(n, source),
            None => Err(protox::Error::file_not_found(name)),
        }
    }
}

/// The reflection service over the shipped files.
pub fn reflection() -> Result<Reflection, Exit> {
    let mut c = protox::Compiler::with_file_resolver(Shipped);
    c.include_source_info(false);
    c.open_files(SHIPPED.map(|(n, _)| n))
        .map_err(|e| Exit::fail(format!("the shipped .proto files: {e}")))?;
    let pool = c.descriptor_pool();
    let files = pool
        .files()
        .map(|f| {
            let mut symbols = Vec::new();
            let mut services = Vec::new();
            for s in f.services() {
                symbols.push(s.full_name().to_string());
                services.push(s.full_name().to_string());
                symbols.extend(s.methods().map(|m| m.full_name().to_string()));
            }
            let mut messages: Vec<MessageDescriptor> = f.messages().collect();
            while let Some(m) = messages.pop() {
                symbols.push(m.full_name().to_string());
                symbols.extend(m.child_enums().map(|e| e.full_name().to_string()));
                messages.extend(m.child_messages());
            }
            symbols.extend(f.enums().map(|e| e.full_name().to_string()));
            ReflectedFile {
                name: f.name().to_string(),
                bytes: f.encode_to_vec(),
                imports: f.dependencies().map(|d| d.name().to_string()).collect(),
                symbols,
                services,
            }
        })
        .collect();
    Ok(Reflection::new(files))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_shipped_files_compile_and_name_their_services() {
        let r = super::reflection().unwrap();
        let services: Vec<&str> = r.services().collect();
        assert_eq!(
            services,
            [
                "helloworld.Greeter",
                "stampede.v1.Echo",
                "grpc.health.v1.Health"
            ]
        );
    }
}
