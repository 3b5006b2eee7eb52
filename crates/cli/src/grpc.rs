//! `load`'s gRPC flags and what they make: the schema, the method and its messages
//! (or the maker of each call's), by [`stampede_grpc`].

use stampede_engine::input::{self, Input};
use stampede_engine::Target;
use stampede_grpc::calldata::{Maker, Metadata, Template};
use stampede_grpc::calls::{
    base_request, messages, method, requests, service_of, stream_send, CallHeaders, Calls, Pacing,
    Schema,
};

use crate::common::Exit;

/// `load`'s gRPC flags: the schema, the method and its messages.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct GrpcArgs {
    /// Call the gRPC method package.Service/Method at the URL (h2c for http://,
    /// TLS with ALPN h2 for https://), each call timed per message from its intended
    /// start; its grpc-status counted by name. Without --proto or --protoset the
    /// schema is asked of the server's reflection service
    #[arg(
        long = "call",
        value_name = "METHOD",
        conflicts_with_all = ["targets", "body_file", "body_lines", "openai", "stream", "sse", "http3", "method", "rand_regex_url"]
    )]
    pub call: Option<String>,
    /// The .proto file that defines --call's method (repeat for several)
    #[arg(long = "proto", value_name = "FILE", requires = "call")]
    pub proto: Vec<String>,
    /// A compiled FileDescriptorSet (protoc --include_imports -o) instead of --proto
    #[arg(
        long = "protoset",
        value_name = "FILE",
        requires = "call",
        conflicts_with = "proto"
    )]
    pub protoset: Option<String>,
    /// Where --proto's imports are found (repeat, or separate with commas)
    #[arg(
        long = "import-paths",
        value_name = "DIR",
        value_delimiter = ',',
        requires = "call"
    )]
    pub import_paths: Vec<String>,
    /// The request message as JSON (protobuf's JSON mapping); an array gives several,
    /// used in turn by unary calls and all sent by a client stream (default: {})
    #[arg(
        long = "data",
        value_name = "JSON",
        requires = "call",
        conflicts_with = "data_file"
    )]
    pub data: Option<String>,
    /// --data from FILE ('-': standard input)
    #[arg(long = "data-file", value_name = "FILE", requires = "call")]
    pub data_file: Option<String>,
    /// Metadata sent with every call, 'name: value' (repeat for several)
    #[arg(long = "metadata", value_name = "NAME: VALUE", requires = "call")]
    pub metadata: Vec<String>,
    /// Each call's deadline, sent as grpc-timeout (e.g. 500ms)
    #[arg(long = "deadline", value_name = "DURATION", value_parser = crate::common::parse_duration, requires = "call")]
    pub deadline: Option<std::time::Duration>,
    /// Client and bidirectional streams: send a call's messages this far apart, the
    /// first with the call (without it, all at once)
    #[arg(long = "stream-interval", value_name = "DURATION", value_parser = crate::common::parse_duration, requires = "call")]
    pub stream_interval: Option<std::time::Duration>,
    /// With --stream-interval: close each stream's sending side this long after its
    /// call began, the data's messages sent in turn until then
    #[arg(long = "stream-duration", value_name = "DURATION", value_parser = crate::common::parse_duration, requires = "stream_interval")]
    pub stream_duration: Option<std::time::Duration>,
    /// With --stream-interval: messages each stream sends, the data's in turn, before
    /// its sending side closes
    #[arg(long = "stream-count", value_name = "N", requires = "stream_interval")]
    pub stream_count: Option<u64>,
}

impl GrpcArgs {
    /// The engine's requests for the call at `target`: the schema loaded (or asked of
    /// the server's reflection service, over `tls` for https), the method found, its
    /// messages built (or, with templates that change from call to call, the maker
    /// of each call's).
    pub fn calls(
        &self,
        target: &Target,
        tls: Option<std::sync::Arc<stampede_tls::rustls::ClientConfig>>,
    ) -> Result<Calls, Exit> {
        let call = self.call.as_deref().unwrap_or_default();
        let metadata = (self.metadata.iter())
            .map(|h| crate::common::header_arg(h))
            .collect::<Result<Vec<_>, _>>()?;
        let pool = if self.proto.is_empty() && self.protoset.is_none() {
            stampede_grpc::reflect::Reflect {
                target,
                tls: tls.clone(),
                metadata: &metadata,
                timeout: std::time::Duration::from_secs(20),
            }
            .schema(service_of(call)?)?
        } else {
            Schema {
                protos: &self.proto,
                protoset: self.protoset.as_deref(),
                import_paths: &self.import_paths,
            }
            .load()?
        };
        let m = method(&pool, call)?;
        let send = stream_send(
            &m,
            Pacing {
                interval: self.stream_interval.unwrap_or_default(),
                duration: self.stream_duration.unwrap_or_default(),
                count: self.stream_count.unwrap_or(0),
            },
            ["--stream-interval", "--stream-duration", "--stream-count"],
        )?;
        if !(self.proto.is_empty() && self.protoset.is_none()) {
            // The schema is local: over TLS, the server is asked once whether it
            // speaks HTTP/2 before any load (reflection asked it already otherwise).
            stampede_grpc::reflect::check_h2(
                target,
                tls.as_ref(),
                std::time::Duration::from_secs(20),
            )?;
        }
        let (json, what) = match (&self.data, &self.data_file) {
            (Some(d), _) => (d.clone(), "--data".to_string()),
            (None, Some(f)) => (
                input::read_text(f, "--data-file", Input::Body)
                    .map_err(|e| Exit::usage(e.to_string()))?,
                format!("--data-file {f}"),
            ),
            (None, None) => ("{}".to_string(), "--data".to_string()),
        };
        let data = Template::parse(&json, &m, &what)?;
        // Metadata whose values change from call to call is made with each call.
        let mut fixed = Vec::new();
        let mut made_fields = Vec::new();
        for (n, v) in metadata {
            let t = Template::parse(&v, &m, "--metadata")?;
            match t.constant() {
                Some(_) => fixed.push((n, v)),
                None => made_fields.push((n, t)),
            }
        }
        let headers = CallHeaders {
            metadata: &fixed,
            deadline: self.deadline,
            gzip: false,
            paced: send.is_some(),
        };
        if let (Some(json), true) = (data.constant(), made_fields.is_empty()) {
            let framed = messages(&m, json, &what)?;
            return Ok(Calls {
                requests: requests(target, &m, framed, &headers)?,
                made: None,
                send,
            });
        }
        let mut maker = Maker::new(m.clone(), data, &what);
        if !made_fields.is_empty() {
            maker.metadata = Some(Metadata::Fields(made_fields));
        }
        maker.check()?;
        Ok(Calls {
            requests: vec![base_request(target, &m, &headers)?],
            made: Some(std::sync::Arc::new(maker)),
            send,
        })
    }
}
