#!/usr/bin/env bash
# epoll against io_uring over TLS, at each end in turn. The client: `stampede load
# --insecure -t 1 -c 64` on CPU 0 against `stampede serve --threads 1 --io epoll
# --tls-self-signed` on CPU 1, its --io alternating (only the client's backend
# changes), keep-alive and a connection per request (a full handshake each). The
# server: the same server on each backend in turn, the client on epoll; its process's
# CPU time over the answers. Medians of req/s and CPU µs a request (or answer).
#
#   bash bench/io-tls.sh [ROUNDS=3] [SECONDS=4]
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-3}
SECS=${2:-4}
: > "$WORK/tls"
# one NAME IO URL SERVER_PID LOAD_ARGS...: a client run; its client and server CPU.
one() {
  local name=$1 io=$2 url=$3 pid=$4 out=$WORK/$1.$2 before after
  shift 4
  before=$(cpu_seconds "$pid")
  timed "$out" taskset -c 0 "$STAMPEDE" load --insecure -t 1 -d "${SECS}s" -q --json - "$@" "$url"
  after=$(cpu_seconds "$pid")
  read -r u sy _ < "$out.time"
  python3 - "$out" "$u" "$sy" "$name" "$io" "$before" "$after" <<'PY' | tee -a "$WORK/tls" >&2
import json, sys
r = json.load(open(sys.argv[1]))
n = r["requests"]["completed"]
client = (float(sys.argv[2]) + float(sys.argv[3])) * 1e6 / max(n, 1)
server = (float(sys.argv[7]) - float(sys.argv[6])) * 1e6 / max(n, 1)
assert r["tls"]["handshakes"] > 0, r.get("tls")
print(f'{sys.argv[4]} {sys.argv[5]} {n / r["duration_s"]:.0f} {client:.2f} {server:.2f} {r["requests"]["failed"]}')
PY
}
for r in $(seq "$ROUNDS"); do
  port=$(free_port)
  start_serve "$port" --io epoll --tls-self-signed
  url=https://127.0.0.1:$port/pong
  for io in epoll io_uring; do one client-keepalive "$io" "$url" "$SERVE_PID" --io "$io" -c 64; done
  for io in epoll io_uring; do one client-handshakes "$io" "$url" "$SERVE_PID" --io "$io" -c 16 --no-keepalive; done
  kill "$SERVE_PID"; wait "$SERVE_PID" 2>/dev/null || true
  for io in epoll io_uring; do
    port=$(free_port)
    start_serve "$port" --io "$io" --tls-self-signed
    one server-keepalive "$io" "https://127.0.0.1:$port/pong" "$SERVE_PID" --io epoll -c 64
    kill "$SERVE_PID"; wait "$SERVE_PID" 2>/dev/null || true
  done
done
echo "| over TLS | --io | req/s | client CPU µs/request | server CPU µs/answer | failed |"
echo "|---|---|---:|---:|---:|---:|"
for name in client-keepalive client-handshakes server-keepalive; do
  for io in epoll io_uring; do
    printf '| %s | %s | %.0f | %.2f | %.2f | %.0f |\n' "$name" "$io" \
      "$(median_of "$WORK/tls" 3 "$name" "$io")" "$(median_of "$WORK/tls" 4 "$name" "$io")" \
      "$(median_of "$WORK/tls" 5 "$name" "$io")" "$(median_of "$WORK/tls" 6 "$name" "$io")"
  done
done
echo
machine
