#!/usr/bin/env bash
# Each dialect once: build, start the reference server, and run
# scaled-down versions of the reference experiments against it with each dialect.
# Client and server are pinned to different cores when there are two or more.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q
S=./target/release/stampede
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
if [ "$(nproc)" -ge 2 ]; then SRV="taskset -c 1"; CLI="taskset -c 0"; else SRV=""; CLI=""; fi
$SRV $S serve --listen 127.0.0.1:"$PORT" --threads 1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null' EXIT
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/"$PORT") 2>/dev/null && break; sleep 0.05; done
URL=http://127.0.0.1:$PORT
set -x
# Reference 001: ab -k -c 100 on /chat (10^5 requests).
$CLI $S ab -q -k -c 100 -n 100000 "$URL/chat"
# Reference 000: the Akka endpoints, closed loop, with the wrk dialect and its HdrHistogram spectrum.
$CLI $S wrk -t1 -c100 -d5s --latency "$URL/quacker?i=b9ogpt96K0NmkI"
# Reference 002: 10,000 concurrent connections without keep-alive on /perf (length varies: -l).
$CLI $S ab -q -l -c 10000 -n 20000 "$URL/perf" || true
# The native interface: a summary plus the full result as JSON.
$CLI $S load "$URL/biteq?i=b9ogpt96K0NmkI" -c 64 -d 5s --json quickstart-result.json
