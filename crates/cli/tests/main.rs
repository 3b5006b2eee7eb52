//! The command line's integration tests, one binary: the `stampede` executable run
//! against the reference server in-process on 127.0.0.1:0, and against the peer
//! tools (ab, httperf, h2load, h2spec, nginx, Chromium, HdrHistogram's Java) where
//! installed.

mod artillery;
mod bench;
mod chat;
mod cli;
mod collect;
mod common;
mod console;
mod dashboard;
mod dialects;
mod fleet;
mod grpc;
mod grpc_go;
mod guidellm;
mod h3;
mod hdr_java;
mod html;
mod journeys;
mod k8s;
mod k8s_join;
mod lua;
mod metrics;
mod net;
mod pipes;
mod raw;
mod segments;
mod sessions;
mod ssh;
mod ssh_rig;
mod stream;
mod targets;
mod tls;
mod variety;
mod vllm;
mod ws;
mod ws_h2;
mod ws_made;
mod ws_push;
