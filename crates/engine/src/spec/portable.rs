//! A load spec as a file: what `stampede load --save-spec` writes and `--spec` runs, and
//! what a plan's client hosts are sent, so that a run built on one machine (from flags,
//! a dialect's translation or a plan's scenario) is the same run on another.
//!
//! It holds a [`LoadSpec`]'s [`Load`] as it is, and beside it (the [`Header`]) what
//! is resolved or built where the spec runs: the target travels as its URL (and Unix
//! socket path) and the proxy as its URL, both resolved again there; the TLS client
//! configuration as its settings ([`TlsSettings`], with the CA certificates' text
//! rather than a path that may not exist on the other machine), from which the
//! caller builds it. What belongs to the process running it (its segment, the shared
//! start, a script's hooks) is given by that process's flags.

use serde::{Deserialize, Serialize};

use crate::error::SavedSpecError;
use crate::spec::target::{Address, Target};
use crate::spec::{Load, LoadSpec};
use crate::SpecError;

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

/// What a saved spec says about itself and about the parts of a [`LoadSpec`] that
/// are resolved or built where it runs: its format and version, the target's URL
/// and Unix socket, the TLS settings and the proxy.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    /// [`FORMAT`].
    pub format: String,
    /// The stampede version that wrote it.
    pub version: String,
    /// The target's URL, resolved again where the spec runs.
    pub url: String,
    /// A Unix socket to connect to instead of the URL's host.
    pub unix_socket: Option<String>,
    /// TLS settings for an https target.
    pub tls: Option<TlsSettings>,
    /// The proxy's URL, resolved again where the spec runs (absent: none).
    #[serde(default)]
    pub proxy: Option<String>,
    /// The proxy's `Proxy-Authorization` value.
    #[serde(default)]
    pub proxy_authorization: Option<String>,
}

impl Header {
    /// Its keys in a saved spec, which the [`Load`]'s keys beside them never use.
    const KEYS: [&'static str; 7] = [
        "format",
        "version",
        "url",
        "unix_socket",
        "tls",
        "proxy",
        "proxy_authorization",
    ];
}

/// A [`LoadSpec`] that can be written to a file and read on another machine: one
/// JSON object with the [`Header`]'s keys and the [`Load`]'s, the load in its own
/// serde form (the same type the spec holds, not a copy of it).
#[derive(Debug, Clone, Serialize)]
pub struct PortableSpec {
    /// Format, version, and the portable forms of what is resolved where it runs.
    #[serde(flatten)]
    pub header: Header,
    /// The load, as the spec holds it.
    #[serde(flatten)]
    pub load: Load,
}

impl PortableSpec {
    /// The portable form of `spec`, with the TLS settings its configuration was built
    /// from (`None` for plain http).
    pub fn of(spec: &LoadSpec, tls: Option<TlsSettings>) -> PortableSpec {
        PortableSpec {
            header: Header {
                format: FORMAT.into(),
                version: env!("CARGO_PKG_VERSION").into(),
                url: spec.target.url.clone(),
                unix_socket: match &spec.target.address {
                    Address::Unix(p) => Some(p.display().to_string()),
                    Address::Tcp(_) => None,
                },
                tls,
                proxy: spec.proxy.as_ref().map(|p| p.url.clone()),
                proxy_authorization: spec.proxy.as_ref().and_then(|p| p.authorization.clone()),
            },
            load: spec.load.clone(),
        }
    }

    /// Reads one from JSON, saying what is wrong with it. Every key must be the
    /// header's or the load's (serde's flattening would let an unknown one pass, so
    /// the two are read apart).
    pub fn from_json(text: &str) -> Result<PortableSpec, SavedSpecError> {
        let mut v: serde_json::Value =
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
        let fields = |e: serde_json::Error| SavedSpecError::Fields(e.to_string());
        // An object: it has a "format".
        let all = v.as_object_mut().expect("an object with a format");
        let header: serde_json::Map<String, serde_json::Value> = Header::KEYS
            .iter()
            .filter_map(|k| all.remove(*k).map(|x| (k.to_string(), x)))
            .collect();
        Ok(PortableSpec {
            header: serde_json::from_value(header.into()).map_err(fields)?,
            load: serde_json::from_value(v).map_err(|e| {
                // The load's groups are flattened, so serde names no keys: they are
                // listed here, the load's and the header's.
                let mut e = e.to_string();
                if e.starts_with("unknown field") && !e.contains("expected") {
                    e.push_str(", expected one of `");
                    e.push_str(&Load::KEYS.join("`, `"));
                    e.push_str("`, or one of the header's: `");
                    e.push_str(&Header::KEYS.join("`, `"));
                    e.push('`');
                }
                SavedSpecError::Fields(e)
            })?,
        })
    }

    /// As JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("specs serialise")
    }

    /// The spec, its target and proxy resolved here; the TLS configuration is left
    /// for the caller to build from the header's settings.
    pub fn into_spec(self) -> Result<LoadSpec, SpecError> {
        let h = self.header;
        let mut target = Target::parse(&h.url)?;
        if let Some(p) = &h.unix_socket {
            target = target.with_unix_socket(p);
        }
        let mut spec = LoadSpec::with_load(target, self.load);
        if let Some(url) = &h.proxy {
            let mut p = crate::spec::net::Proxy::parse(url)?;
            p.authorization = h.proxy_authorization;
            spec.proxy = Some(p);
        }
        Ok(spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::inject::Profile;
    use crate::spec::Shape;
    use crate::RequestBuilder;
    use std::time::Duration;

    #[test]
    fn a_spec_travels_whole() {
        let target = Target::parse("http://127.0.0.1:9/x?y=1").unwrap();
        let request = RequestBuilder::native(&target, "POST", true)
            .body(vec![0, 255, b'\r', b'\n'])
            .build()
            .unwrap();
        let mut spec = LoadSpec::new(target, request);
        spec.load.connections = 7;
        spec.load.threads = 2;
        spec.load.duration = Some(Duration::from_millis(1500));
        spec.load.shape =
            Shape::Users(Profile::parse(&["rampUsers(10).during(2)".into()]).unwrap());
        spec.load.session.calls = 3;
        spec.load.seed = 42;
        spec.load.socket.reset_on_close = true;
        spec.load.socket.recv_buffer = Some(65536);
        spec.load.protocol.h2.stream_window = 1023;
        spec.load.protocol.h2.max_frame = 1 << 20;
        spec.proxy = Some(crate::spec::net::Proxy::parse("http://u:p@127.0.0.1:3128").unwrap());
        spec.load.variety = vec![spec.load.request.clone(), {
            let mut t = spec.target.clone();
            t.path = "/other".into();
            RequestBuilder::native(&t, "GET", true).build().unwrap()
        }];
        let text = PortableSpec::of(&spec, None).to_json();
        let back = PortableSpec::from_json(&text).unwrap().into_spec().unwrap();
        assert_eq!(back.load.request.bytes, spec.load.request.bytes);
        assert_eq!(back.load.request.method, "POST");
        assert_eq!(back.load.variety.len(), 2);
        assert_eq!(back.load.variety[1].bytes, spec.load.variety[1].bytes);
        assert_eq!(back.target, spec.target);
        assert_eq!(
            (&back.load.socket, &back.proxy),
            (&spec.load.socket, &spec.proxy)
        );
        assert_eq!(back.load.protocol.h2, spec.load.protocol.h2);
        assert_eq!(
            (
                back.load.connections,
                back.load.threads,
                back.load.duration,
                back.load.seed
            ),
            (7, 2, spec.load.duration, 42)
        );
        // The send horizon travels when it is not the default (older files: the default).
        assert!(!text.contains("horizon_us"));
        assert_eq!(back.load.horizon, crate::spec::DEFAULT_HORIZON);
        spec.load.horizon = Duration::ZERO;
        let exact = PortableSpec::of(&spec, None).to_json();
        let back = PortableSpec::from_json(&exact)
            .unwrap()
            .into_spec()
            .unwrap();
        assert_eq!(back.load.horizon, Duration::ZERO);
        assert_eq!(
            back.load.shape.describe(&back.load.session),
            spec.load.shape.describe(&spec.load.session)
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
        // A key neither the header's nor the load's is refused, by name.
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["conections"] = 4.into();
        match PortableSpec::from_json(&v.to_string()) {
            Err(SavedSpecError::Fields(e)) => {
                assert!(
                    e.contains("conections") && e.contains("`connections`"),
                    "{e}"
                );
                assert!(e.ends_with("header's: `format`, `version`, `url`, `unix_socket`, `tls`, `proxy`, `proxy_authorization`"), "{e}");
            }
            other => panic!("{other:?}"),
        }
        // Every key the load writes is among those an unknown one is told of, and
        // each of those is one the load reads (a wrong value, not an unknown key).
        let load = serde_json::to_value(&spec.load).unwrap();
        for k in load.as_object().unwrap().keys() {
            assert!(
                Load::KEYS.contains(&k.as_str()),
                "{k} missing from Load::KEYS"
            );
        }
        for k in Load::KEYS {
            let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
            v[k] = serde_json::json!([[["not a value"]]]);
            match PortableSpec::from_json(&v.to_string()) {
                Err(SavedSpecError::Fields(e)) => assert!(!e.starts_with("unknown"), "{k}: {e}"),
                other => panic!("{k}: {other:?}"),
            }
        }
        // The header's keys are exactly what it writes, and the load writes none of them.
        let header = serde_json::to_value(&PortableSpec::of(&spec, None).header).unwrap();
        let mut keys: Vec<&str> = header
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        let mut known = Header::KEYS.to_vec();
        keys.sort();
        known.sort();
        assert_eq!(keys, known);
        let load = serde_json::to_value(&spec.load).unwrap();
        assert!(Header::KEYS.iter().all(|k| load.get(k).is_none()));
        // A file from before the list of requests existed reads as none.
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v.as_object_mut().unwrap().remove("variety");
        let old = PortableSpec::from_json(&v.to_string()).unwrap();
        assert!(old.load.variety.is_empty());
    }
}
