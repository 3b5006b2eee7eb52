#!/usr/bin/env bash
# The client on epoll against io_uring where the floor's 64 plain connections do not
# reach: 16 requests pipelined, HTTP/2 with 16 streams (both on 64 connections), and
# 10,000 connections. `stampede load -t 1 -d SECONDS` on CPU 0 against `stampede serve
# --threads 1 --io epoll` on CPU 1 (so only the client's backend changes), STAMPEDE_IO
# alternating; medians of req/s and client CPU µs a request.
#
#   bash bench/io-clients.sh [ROUNDS=3] [SECONDS=4]
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-3}
SECS=${2:-4}
ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)"
PORT=$(free_port)
start_serve "$PORT" --io epoll
URL=http://127.0.0.1:$PORT/pong
: > "$WORK/clients"
one() {
  local name=$1 io=$2 out=$WORK/$1.$2
  shift 2
  timed "$out" env STAMPEDE_IO="$io" taskset -c 0 "$STAMPEDE" load -t 1 -d "${SECS}s" -q --json - "$@" "$URL"
  read -r u sy _ < "$out.time"
  python3 - "$out" "$u" "$sy" "$name" "$io" <<'PY' | tee -a "$WORK/clients" >&2
import json, sys
r = json.load(open(sys.argv[1]))
n = r["requests"]["completed"]
assert r["origin"]["io"] == sys.argv[5], r["origin"]
cpu = (float(sys.argv[2]) + float(sys.argv[3])) * 1e6 / max(n, 1)
print(f'{sys.argv[4]} {sys.argv[5]} {n / r["duration_s"]:.0f} {cpu:.2f} {r["requests"]["failed"]}')
PY
}
for r in $(seq "$ROUNDS"); do
  for io in epoll io_uring; do one pipelined16 "$io" -c 64 --pipeline 16; done
  for io in epoll io_uring; do one h2x16 "$io" -c 64 --http2 --streams 16; done
  for io in epoll io_uring; do one c10000 "$io" -c 10000; done
done
echo "| client load | --io | req/s | client CPU µs/request | failed |"
echo "|---|---|---:|---:|---:|"
for name in pipelined16 h2x16 c10000; do
  for io in epoll io_uring; do
    printf '| %s | %s | %.0f | %.2f | %.0f |\n' "$name" "$io" "$(median_of "$WORK/clients" 3 "$name" "$io")" \
      "$(median_of "$WORK/clients" 4 "$name" "$io")" "$(median_of "$WORK/clients" 5 "$name" "$io")"
  done
done
echo
machine
