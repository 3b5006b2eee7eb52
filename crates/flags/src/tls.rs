//! The TLS flags of `stampede load` and the TLS settings of the dialects.
//!
//! `load` verifies certificates like curl and k6 do (system roots, or `--cacert`);
//! `ab`, `wrk` and `httperf --ssl` do not verify, as those tools do not, so a pasted
//! command behaves the same. Every new connection pays a full handshake unless
//! `--tls-resume` is given; the handshake is timed on its own.

use stampede_engine::input::{self, Input};
use std::path::PathBuf;
use std::sync::Arc;

use stampede_engine::portable::TlsSettings;
use stampede_engine::Target;
use stampede_tls::rustls::ClientConfig;
use stampede_tls::{ClientOptions, Versions};

use crate::FlagError;

/// TLS flags for https:// URLs.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct TlsArgs {
    /// https: accept any server certificate (the handshake itself is still checked)
    #[arg(long = "insecure")]
    pub insecure: bool,
    /// https: trust only the CA certificates in FILE (PEM) instead of the system's
    #[arg(long = "cacert", value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// https: present this client certificate (PEM) for mutual TLS; needs --key
    #[arg(long = "cert", value_name = "FILE", requires = "key")]
    pub cert: Option<PathBuf>,
    /// https: the client certificate's private key (PEM)
    #[arg(long = "key", value_name = "FILE", requires = "cert")]
    pub key: Option<PathBuf>,
    /// https: resume TLS sessions on new connections (by default each pays a full
    /// handshake)
    #[arg(long = "tls-resume")]
    pub resume: bool,
    /// https: offer only TLS 1.2 or only 1.3 (default: both, 1.3 preferred)
    #[arg(long = "tls-version", value_name = "1.2|1.3", value_parser = parse_version)]
    pub version: Option<Versions>,
}

/// The configuration a portable spec's TLS settings describe, built here; the CA
/// certificates travel as text and are read from a private temporary file.
pub fn from_settings(
    t: &TlsSettings,
    target: &Target,
    http2: bool,
) -> Result<Option<Arc<ClientConfig>>, FlagError> {
    let ca_file = match &t.ca_pem {
        Some(pem) => {
            let path = std::env::temp_dir().join(format!("stampede-ca-{}.pem", std::process::id()));
            std::fs::write(&path, pem).map_err(|e| {
                FlagError::fail(format!(
                    "--spec: writing its CA certificates to {}: {e}",
                    path.display()
                ))
            })?;
            Some(path)
        }
        None => None,
    };
    let version = match t.version.as_deref() {
        None => None,
        Some(v) => Some(
            parse_version(v).map_err(|e| FlagError::usage(format!("--spec: tls.version: {e}")))?,
        ),
    };
    let built = TlsArgs {
        insecure: t.insecure,
        cacert: ca_file.clone(),
        resume: t.resume,
        version,
        ..TlsArgs::default()
    }
    .config(target, http2);
    if let Some(p) = ca_file {
        let _ = std::fs::remove_file(p);
    }
    built
}

fn parse_version(s: &str) -> Result<Versions, crate::BadValue> {
    match s {
        "1.2" => Ok(Versions::Tls12),
        "1.3" => Ok(Versions::Tls13),
        _ => Err(crate::BadValue(format!(
            "{s:?} is not a TLS version; use 1.2 or 1.3"
        ))),
    }
}

impl TlsArgs {
    /// The dialects' settings: for https, no certificate verification, as ab, wrk,
    /// httperf and h2load do not verify (ALPN offering h2 first with `http2`);
    /// nothing for plain http.
    pub fn dialect(target: &Target, http2: bool) -> Result<Option<Arc<ClientConfig>>, FlagError> {
        if !target.tls {
            return Ok(None);
        }
        TlsArgs {
            insecure: true,
            ..TlsArgs::default()
        }
        .config(target, http2)
    }

    /// The settings a portable spec carries (`--save-spec`): the CA file's text, not
    /// its path; a client certificate's key is not written into a spec.
    pub fn settings(&self, target: &Target) -> Result<Option<TlsSettings>, FlagError> {
        if !target.tls {
            return Ok(None);
        }
        if self.cert.is_some() {
            return Err(FlagError::usage(
                "--save-spec: a spec does not carry a client certificate's private key; give --cert and --key where it runs",
            ));
        }
        let ca_pem = match &self.cacert {
            Some(p) => Some(
                input::read_text(&p.display().to_string(), "--cacert", Input::Config)
                    .map_err(|e| FlagError::usage(e.to_string()))?,
            ),
            None => None,
        };
        Ok(Some(TlsSettings {
            insecure: self.insecure,
            ca_pem,
            resume: self.resume,
            version: self
                .version
                .map(|v| match v {
                    Versions::Tls12 => "1.2".to_string(),
                    Versions::Tls13 => "1.3".to_string(),
                    Versions::Both => "both".to_string(),
                })
                .filter(|v| v != "both"),
        }))
    }

    fn given(&self) -> Option<&'static str> {
        if self.insecure {
            Some("--insecure")
        } else if self.cacert.is_some() {
            Some("--cacert")
        } else if self.cert.is_some() {
            Some("--cert")
        } else if self.resume {
            Some("--tls-resume")
        } else if self.version.is_some() {
            Some("--tls-version")
        } else {
            None
        }
    }

    /// The client configuration for `target`: `None` for plain http. With `http2`, ALPN
    /// offers h2 first, then http/1.1.
    pub fn config(
        &self,
        target: &Target,
        http2: bool,
    ) -> Result<Option<Arc<ClientConfig>>, FlagError> {
        if !target.tls {
            return match self.given() {
                Some(flag) => Err(FlagError::usage(format!(
                    "{flag} applies to https:// URLs; {} is plain http",
                    target.url
                ))),
                None => Ok(None),
            };
        }
        let options = ClientOptions {
            insecure: self.insecure,
            ca_file: self.cacert.clone(),
            cert_file: self.cert.clone(),
            key_file: self.key.clone(),
            resume: self.resume,
            versions: self.version.unwrap_or_default(),
            alpn: stampede_tls::alpn(http2),
        };
        stampede_tls::client_config(&options)
            .map(Some)
            .map_err(|e| {
                // Name the flag whose file is at fault.
                let flag = match &e {
                    stampede_tls::TlsError::File { path, .. } => [
                        ("--cacert", &self.cacert),
                        ("--cert", &self.cert),
                        ("--key", &self.key),
                    ]
                    .into_iter()
                    .find(|(_, p)| p.as_ref().is_some_and(|p| p.display().to_string() == *path))
                    .map_or("TLS", |(f, _)| f),
                    stampede_tls::TlsError::Config(_) => "TLS",
                };
                FlagError::usage(format!("{flag}: {e}"))
            })
    }
}
