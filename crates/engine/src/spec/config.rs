//! The run's configuration: what a checked [`LoadSpec`] becomes once it is planned, in
//! the form the run reads, and the only description of the run it reads.
//!
//! A [`LoadSpec`] is the flags' form: one field per setting, shared by every front end
//! and saved as it is. Several of its fields say together what one choice is (HTTP/2,
//! HTTP/3 and WebSocket are three fields, most of whose combinations are refused), and
//! the run would have to re-derive that choice at each use. Planning moves the spec's
//! parts into a [`Config`] instead: the [`Protocol`] chosen once (a refused combination
//! is a variant that does not exist), and the rest grouped by what reads it — where
//! connections go, how many there are, when the run ends, when starts arrive, what is
//! sent and what is watched. Nothing is copied: the spec's requests move in.

use std::sync::Arc;
use std::time::Duration;

use crate::proto::h2::H2Settings;
use crate::proto::h3::H3Settings;
use crate::spec::segment::Segment;
use crate::spec::{
    Load, LoadProtocol, LoadSpec, LoadStreams, Request, Session, Shape, Slo, Step, StreamSend,
    Walk, WsLoad,
};

/// The protocol every connection of a run speaks, with its settings.
#[derive(Debug, Clone, PartialEq)]
pub enum Protocol {
    /// HTTP/1.1.
    Http1,
    /// HTTP/2: with prior knowledge (h2c) over plain TCP; over TLS when ALPN chooses
    /// h2, HTTP/1.1 otherwise. A connection keeps the run's pipeline depth of streams.
    Http2(H2Settings),
    /// HTTP/3 over QUIC (an https target; UDP to its port).
    Http3(H3Settings),
    /// WebSocket: each connection upgraded, over HTTP/1.1 or (with `h2`) as an HTTP/2
    /// stream (RFC 8441); each request is one message.
    WebSocket {
        /// The messages and what answers them.
        ws: WsLoad,
        /// HTTP/2's settings where the WebSocket goes over HTTP/2.
        h2: Option<H2Settings>,
    },
}

impl Protocol {
    /// The choice the spec's fields make, which validation has already checked.
    fn of(http2: bool, h2: H2Settings, http3: Option<H3Settings>, ws: Option<WsLoad>) -> Protocol {
        match (ws, http3) {
            (Some(ws), _) => Protocol::WebSocket {
                ws,
                h2: http2.then_some(h2),
            },
            (None, Some(h3)) => Protocol::Http3(h3),
            (None, None) if http2 => Protocol::Http2(h2),
            (None, None) => Protocol::Http1,
        }
    }

    /// HTTP/2's settings where connections are TCP ones that speak HTTP/2 (plain
    /// HTTP/2, or WebSocket over it).
    pub fn over_http2(&self) -> Option<H2Settings> {
        match self {
            Protocol::Http2(s) => Some(*s),
            Protocol::WebSocket { h2, .. } => *h2,
            Protocol::Http1 | Protocol::Http3(_) => None,
        }
    }

    /// HTTP/3's settings, where the run speaks it.
    pub fn http3(&self) -> Option<&H3Settings> {
        match self {
            Protocol::Http3(s) => Some(s),
            _ => None,
        }
    }

    /// The WebSocket messages, where the run sends them.
    pub fn websocket(&self) -> Option<&WsLoad> {
        match self {
            Protocol::WebSocket { ws, .. } => Some(ws),
            _ => None,
        }
    }

    /// Requests go as HTTP/2-style streams (HTTP/2 itself, or HTTP/3), translated
    /// once from the spec's HTTP/1.1 form.
    pub fn has_streams(&self) -> bool {
        matches!(self, Protocol::Http2(_) | Protocol::Http3(_))
    }
}

/// Everything a run reads, grouped by what reads it.
#[derive(Debug, Clone)]
pub struct Config {
    /// What every connection speaks.
    pub protocol: Protocol,
    /// Where connections go and how.
    pub net: Net,
    /// How many connections and threads, and how deep each connection's pipeline.
    pub size: Size,
    /// When the run ends, and when a request or connection has waited too long.
    pub ends: Ends,
    /// When starts are due.
    pub arrivals: Arrivals,
    /// What is sent.
    pub sends: Sends,
    /// What is watched of the answers.
    pub watch: Watch,
    /// This process's share of a run several carry out together.
    pub segment: Segment,
    /// The wall-clock instant the schedule starts from, shared by every segment.
    pub start_at: Option<std::time::SystemTime>,
    /// Keep one record per request.
    pub record_requests: bool,
}

/// Where connections go and how: the target, a proxy, TLS and socket options.
#[derive(Debug, Clone)]
pub struct Net {
    pub target: crate::spec::target::Target,
    pub proxy: Option<crate::spec::net::Proxy>,
    pub tls: Option<Arc<stampede_tls::rustls::ClientConfig>>,
    pub socket: crate::spec::net::SocketOptions,
}

/// The run's size (see [`Load`]'s fields of the same names).
#[derive(Debug, Clone, Copy)]
pub struct Size {
    pub connections: usize,
    pub threads: usize,
    pub pipeline: usize,
    pub keepalive: bool,
}

/// When the run ends and what waits too long (see [`Load`]'s fields of the same
/// names).
#[derive(Debug, Clone, Copy)]
pub struct Ends {
    pub requests: Option<u64>,
    pub duration: Option<Duration>,
    pub drain: Option<Duration>,
    pub timeout: Option<Duration>,
    pub connect_timeout: Duration,
    pub last_wait: Option<Duration>,
    pub event_timeout: Option<Duration>,
    pub max_events: Option<u32>,
}

/// When starts are due (see [`Load`]'s fields of the same names).
#[derive(Debug, Clone)]
pub struct Arrivals {
    pub shape: Shape,
    pub session: Session,
    pub seed: u64,
    pub horizon: Duration,
}

/// What is sent (see [`Load`]'s and [`LoadSpec`]'s fields of the same names).
#[derive(Debug, Clone)]
pub struct Sends {
    pub request: Request,
    pub variety: Vec<Request>,
    pub script: Vec<Step>,
    pub walk: Option<Walk>,
    pub redirects: u32,
    pub send: Option<StreamSend>,
    pub hooks: Option<crate::run::hooks::Hooks>,
    pub calls: Option<crate::run::made::MadeCalls>,
}

/// What is watched of the answers (see [`Load`]'s fields of the same names).
#[derive(Debug, Clone)]
pub struct Watch {
    pub stream: Option<crate::StreamMode>,
    pub tokenizer: Option<crate::TokenCounter>,
    pub slo: Option<Slo>,
    pub check_length: bool,
    pub batch_latency: bool,
}

impl Config {
    /// The checked spec's parts, moved into their places. Every field is named, so a
    /// field added to the spec has to be given a place here.
    pub(crate) fn of(spec: LoadSpec) -> Config {
        let LoadSpec {
            target,
            proxy,
            tls,
            segment,
            start_at,
            hooks,
            calls,
            record_requests,
            load,
        } = spec;
        let Load {
            request,
            connections,
            threads,
            requests,
            duration,
            keepalive,
            pipeline,
            timeout,
            connect_timeout,
            last_wait,
            drain,
            check_length,
            shape,
            session,
            script,
            variety,
            seed,
            protocol:
                LoadProtocol {
                    http2,
                    h2,
                    http3,
                    ws,
                },
            socket,
            batch_latency,
            walk,
            redirects,
            horizon,
            streams:
                LoadStreams {
                    stream,
                    slo,
                    event_timeout,
                    max_events,
                    tokenizer,
                    send,
                },
        } = load;
        Config {
            protocol: Protocol::of(http2, h2, http3, ws),
            net: Net {
                target,
                proxy,
                tls,
                socket,
            },
            size: Size {
                connections,
                threads,
                pipeline,
                keepalive,
            },
            ends: Ends {
                requests,
                duration,
                drain,
                timeout,
                connect_timeout,
                last_wait,
                event_timeout,
                max_events,
            },
            arrivals: Arrivals {
                shape,
                session,
                seed,
                horizon,
            },
            sends: Sends {
                request,
                variety,
                script,
                walk,
                redirects,
                send,
                hooks,
                calls,
            },
            watch: Watch {
                stream,
                tokenizer,
                slo,
                check_length,
                batch_latency,
            },
            segment,
            start_at,
            record_requests,
        }
    }

    /// The run's requests, in the order its figures number them: the several
    /// requests, else the script's steps', else the one request.
    pub fn requests(&self) -> Vec<&Request> {
        if !self.sends.variety.is_empty() {
            self.sends.variety.iter().collect()
        } else if !self.sends.script.is_empty() {
            self.sends.script.iter().map(|s| &s.request).collect()
        } else {
            vec![&self.sends.request]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_fields_make_one_choice() {
        let h2 = H2Settings::default();
        let h3 = H3Settings::default();
        let ws = crate::proto::ws::tests::load();
        assert_eq!(Protocol::of(false, h2, None, None), Protocol::Http1);
        assert_eq!(Protocol::of(true, h2, None, None), Protocol::Http2(h2));
        assert_eq!(Protocol::of(false, h2, Some(h3), None), Protocol::Http3(h3));
        let over = Protocol::of(true, h2, None, Some(ws.clone()));
        assert_eq!(over.over_http2(), Some(h2));
        assert_eq!(over.websocket(), Some(&ws));
        assert!(!over.has_streams());
        let plain = Protocol::of(false, h2, None, Some(ws));
        assert_eq!(plain.over_http2(), None);
        assert!(Protocol::Http3(h3).has_streams() && Protocol::Http3(h3).http3().is_some());
    }
}
