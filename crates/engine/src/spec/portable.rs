//! A load spec as a file: what `stampede load --save-spec` writes and `--spec` runs, and
//! what a plan's client hosts are sent, so that a run built on one machine (from flags,
//! a dialect's translation or a plan's scenario) is the same run on another.
//!
//! It holds everything a [`LoadSpec`] does except what belongs to the process running
//! it (its segment and shared start, given by flags) and the TLS client configuration,
//! which cannot travel as it is: its settings do ([`TlsSettings`], with the CA
//! certificates' text rather than a path that may not exist on the other machine),
//! and the caller builds the configuration from them. The target travels as its URL
//! (and Unix socket path) and is resolved again where the spec runs.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::SavedSpecError;
use crate::spec::target::{Address, Target};
use crate::spec::{LoadSpec, Session, Shape, Step};
use crate::{Request, SpecError};

/// The format's name and version, checked on reading.
pub const FORMAT: &str = "stampede-spec/1";

/// TLS settings, portable: the configuration is built from them where the spec runs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TlsSettings {
    /// Accept any server certificate.
    pub insecure: bool,
    /// CA certificates to trust instead of the system's (PEM text).
    pub ca_pem: Option<String>,
    /// Resume sessions on new connections.
    pub resume: bool,
    /// `1.2` or `1.3` only; both when absent.
    pub version: Option<String>,
}

/// A [`LoadSpec`] that can be written to a file and read on another machine.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortableSpec {
    /// [`FORMAT`].
    pub format: String,
    /// The stampede version that wrote it.
    pub version: String,
    /// The target's URL.
    pub url: String,
    /// A Unix socket to connect to instead of the URL's host.
    pub unix_socket: Option<String>,
    /// The request.
    pub request: Request,
    /// See [`LoadSpec`].
    pub connections: usize,
    /// See [`LoadSpec`].
    pub threads: usize,
    /// See [`LoadSpec`].
    pub requests: Option<u64>,
    /// See [`LoadSpec`].
    pub duration: Option<Duration>,
    /// See [`LoadSpec`].
    pub keepalive: bool,
    /// See [`LoadSpec`].
    pub pipeline: usize,
    /// See [`LoadSpec`].
    pub timeout: Option<Duration>,
    /// See [`LoadSpec`].
    pub connect_timeout: Duration,
    /// See [`LoadSpec`] (absent in older files: none).
    #[serde(default)]
    pub last_wait: Option<Duration>,
    /// See [`LoadSpec`].
    pub check_length: bool,
    /// See [`LoadSpec`].
    pub shape: Shape,
    /// See [`LoadSpec`].
    pub session: Session,
    /// See [`LoadSpec`].
    pub script: Vec<Step>,
    /// See [`LoadSpec`] (absent in files written before it existed: none).
    #[serde(default)]
    pub variety: Vec<Request>,
    /// See [`LoadSpec`].
    pub seed: u64,
    /// See [`LoadSpec`].
    pub http2: bool,
    /// TLS settings for an https target.
    pub tls: Option<TlsSettings>,
    /// See [`LoadSpec`] (absent in older files: the kernel's defaults).
    #[serde(default)]
    pub socket: crate::spec::net::SocketOptions,
    /// The proxy's URL, resolved again where the spec runs (absent: none).
    #[serde(default)]
    pub proxy: Option<String>,
    /// The proxy's `Proxy-Authorization` value.
    #[serde(default)]
    pub proxy_authorization: Option<String>,
    /// See [`LoadSpec`] (absent in older files: the defaults).
    #[serde(default)]
    pub h2: crate::proto::h2::H2Settings,
    /// See [`LoadSpec`] (absent in older files: every response timed).
    #[serde(default)]
    pub batch_latency: bool,
    /// See [`LoadSpec`] (absent in older files: requests in turn per connection).
    #[serde(default)]
    pub walk: Option<crate::spec::Walk>,
    /// See [`LoadSpec`] (absent in older files: redirects not followed).
    #[serde(default, skip_serializing_if = "crate::form::is_zero")]
    pub redirects: u32,
    /// See [`LoadSpec`], in µs (absent: the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub horizon_us: Option<u64>,
}

impl PortableSpec {
    /// The portable form of `spec`, with the TLS settings its configuration was built
    /// from (`None` for plain http).
    pub fn of(spec: &LoadSpec, tls: Option<TlsSettings>) -> PortableSpec {
        PortableSpec {
            format: FORMAT.into(),
            version: env!("CARGO_PKG_VERSION").into(),
            url: spec.target.url.clone(),
            unix_socket: match &spec.target.address {
                Address::Unix(p) => Some(p.display().to_string()),
                Address::Tcp(_) => None,
            },
            request: spec.request.clone(),
            connections: spec.connections,
            threads: spec.threads,
            requests: spec.requests,
            duration: spec.duration,
            keepalive: spec.keepalive,
            pipeline: spec.pipeline,
            timeout: spec.timeout,
            connect_timeout: spec.connect_timeout,
            last_wait: spec.last_wait,
            check_length: spec.check_length,
            shape: spec.shape.clone(),
            session: spec.session,
            script: spec.script.clone(),
            variety: spec.variety.clone(),
            seed: spec.seed,
            http2: spec.http2,
            tls,
            socket: spec.socket.clone(),
            proxy: spec.proxy.as_ref().map(|p| p.url.clone()),
            proxy_authorization: spec.proxy.as_ref().and_then(|p| p.authorization.clone()),
            h2: spec.h2,
            batch_latency: spec.batch_latency,
            walk: spec.walk,
            redirects: spec.redirects,
            horizon_us: (spec.horizon != crate::spec::DEFAULT_HORIZON)
                .then_some(spec.horizon.as_micros() as u64),
        }
    }

    /// Reads one from JSON, saying what is wrong with it.
    pub fn from_json(text: &str) -> Result<PortableSpec, SavedSpecError> {
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| SavedSpecError::Json(e.to_string()))?;
        match v.get("format").and_then(|f| f.as_str()) {
            Some(FORMAT) => {}
            Some(other) => {
                return Err(SavedSpecError::Format {
                    found: other.to_string(),
                    expected: FORMAT,
                })
            }
            None => return Err(SavedSpecError::NoFormat(FORMAT)),
        }
        serde_json::from_value(v).map_err(|e| SavedSpecError::Fields(e.to_string()))
    }

    /// As JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("specs serialise")
    }

    /// The spec, its target resolved here; the TLS configuration is left for the
    /// caller to build from [`PortableSpec::tls`].
    pub fn into_spec(self) -> Result<LoadSpec, SpecError> {
        let mut target = Target::parse(&self.url)?;
        if let Some(p) = &self.unix_socket {
            target = target.with_unix_socket(p);
        }
        let mut spec = LoadSpec::new(target, self.request);
        spec.connections = self.connections;
        spec.threads = self.threads;
        spec.requests = self.requests;
        spec.duration = self.duration;
        spec.keepalive = self.keepalive;
        spec.pipeline = self.pipeline;
        spec.timeout = self.timeout;
        spec.connect_timeout = self.connect_timeout;
        spec.last_wait = self.last_wait;
        spec.check_length = self.check_length;
        spec.shape = self.shape;
        spec.session = self.session;
        spec.script = self.script;
        spec.variety = self.variety;
        spec.seed = self.seed;
        spec.http2 = self.http2;
        spec.socket = self.socket;
        spec.h2 = self.h2;
        spec.batch_latency = self.batch_latency;
        spec.walk = self.walk;
        spec.redirects = self.redirects;
        if let Some(us) = self.horizon_us {
            spec.horizon = Duration::from_micros(us);
        }
        if let Some(url) = &self.proxy {
            let mut p = crate::spec::net::Proxy::parse(url)?;
            p.authorization = self.proxy_authorization;
            spec.proxy = Some(p);
        }
        Ok(spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::inject::Profile;
    use crate::RequestBuilder;

    #[test]
    fn a_spec_travels_whole() {
        let target = Target::parse("http://127.0.0.1:9/x?y=1").unwrap();
        let request = RequestBuilder::native(&target, "POST", true)
            .body(vec![0, 255, b'\r', b'\n'])
            .build()
            .unwrap();
        let mut spec = LoadSpec::new(target, request);
        spec.connections = 7;
        spec.threads = 2;
        spec.duration = Some(Duration::from_millis(1500));
        spec.shape = Shape::Users(Profile::parse(&["rampUsers(10).during(2)".into()]).unwrap());
        spec.session.calls = 3;
        spec.seed = 42;
        spec.socket.reset_on_close = true;
        spec.socket.recv_buffer = Some(65536);
        spec.h2.stream_window = 1023;
        spec.h2.max_frame = 1 << 20;
        spec.proxy = Some(crate::spec::net::Proxy::parse("http://u:p@127.0.0.1:3128").unwrap());
        spec.variety = vec![spec.request.clone(), {
            let mut t = spec.target.clone();
            t.path = "/other".into();
            RequestBuilder::native(&t, "GET", true).build().unwrap()
        }];
        let text = PortableSpec::of(&spec, None).to_json();
        let back = PortableSpec::from_json(&text).unwrap().into_spec().unwrap();
        assert_eq!(back.request.bytes, spec.request.bytes);
        assert_eq!(back.request.method, "POST");
        assert_eq!(back.variety.len(), 2);
        assert_eq!(back.variety[1].bytes, spec.variety[1].bytes);
        assert_eq!(back.target, spec.target);
        assert_eq!((&back.socket, &back.proxy), (&spec.socket, &spec.proxy));
        assert_eq!(back.h2, spec.h2);
        assert_eq!(
            (back.connections, back.threads, back.duration, back.seed),
            (7, 2, spec.duration, 42)
        );
        // The send horizon travels when it is not the default (older files: the default).
        assert!(!text.contains("horizon_us"));
        assert_eq!(back.horizon, crate::spec::DEFAULT_HORIZON);
        spec.horizon = Duration::ZERO;
        let exact = PortableSpec::of(&spec, None).to_json();
        let back = PortableSpec::from_json(&exact)
            .unwrap()
            .into_spec()
            .unwrap();
        assert_eq!(back.horizon, Duration::ZERO);
        assert_eq!(
            back.shape.describe(&back.session),
            spec.shape.describe(&spec.session)
        );
        // What is not a spec, or another version's, is named.
        let none = PortableSpec::from_json("{}").unwrap_err();
        assert_eq!(none, SavedSpecError::NoFormat(FORMAT));
        assert!(none.to_string().contains("no \"format\""));
        let other = text.replace(FORMAT, "stampede-spec/9");
        let other = PortableSpec::from_json(&other).unwrap_err();
        assert!(
            matches!(&other, SavedSpecError::Format { found, .. } if found == "stampede-spec/9")
        );
        assert!(other.to_string().contains("another stampede version"));
        let odd = text.replace("\"bytes\": \"", "\"bytes\": \"0");
        assert!(matches!(
            PortableSpec::from_json(&odd),
            Err(SavedSpecError::Fields(_))
        ));
        assert!(matches!(
            PortableSpec::from_json("{"),
            Err(SavedSpecError::Json(_))
        ));
        // A file from before the list of requests existed reads as none.
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v.as_object_mut().unwrap().remove("variety");
        let old = PortableSpec::from_json(&v.to_string()).unwrap();
        assert!(old.variety.is_empty());
    }
}
