#!/usr/bin/env bash
# WebSocket echo round trips with and without permessage-deflate, against `stampede
# serve --threads 1` on CPU 1, the client on CPU 0 with one thread, each round against
# a fresh server, alternating plain and compressed:
#   round trips — 64 connections in the closed model for 10 s, each message a 1.2 KiB
#                 JSON quote (`load ws://…/ws/echo -c 64 --ws-message JSON`, then the
#                 same with `--ws-deflate`): messages a second, latency p50/p99, bytes
#                 on the wire a message each way, CPU a message on each side and which
#                 side was full;
#   held        — HOLD connections (2,000) and 64 opened at once, each pinging once a
#                 second for 10 s, with and without the extension: the difference in
#                 max RSS over the difference in connections is what a compressed
#                 connection costs each side (its compressor's window and tables).
#
#   bash bench/ws-deflate.sh [ROUNDS=3] [HOLD=2000]
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-3}
HOLD=${2:-2000}
[ -x "$STAMPEDE" ] || (cd "$ROOT" && cargo build --release -q)

MESSAGE=$(python3 -c '
import json
q = [{"symbol": s, "bid": 101.25 + i, "ask": 101.5 + i, "last": 101.3 + i, "volume": 1200 * i}
     for i, s in enumerate(["ACME", "INIT", "GLOBX", "UMBR", "STARK", "WAYNE", "OSCP", "CYBD", "TYRL", "SOYL"])]
print(json.dumps({"op": "quotes", "seq": 1, "quotes": q}))')

for r in $(seq "$ROUNDS"); do
  for way in plain deflate; do
    flag=(); [ "$way" = deflate ] && flag=(--ws-deflate)
    port=$(free_port)
    start_serve "$port"
    out=$WORK/trips.$way.$r
    before=$(cpu_seconds "$SERVE_PID")
    timed "$out" taskset -c 0 "$STAMPEDE" load "ws://127.0.0.1:$port/ws/echo" -c 64 -t 1 \
      -d 10s -q --json - --ws-message "$MESSAGE" "${flag[@]}"
    server_cpu=$(python3 -c "print($(cpu_seconds "$SERVE_PID") - $before)")
    kill "$SERVE_PID" 2>/dev/null || true
    wait "$SERVE_PID" 2>/dev/null || true
    python3 - "$out" "$out.time" "$way" "$server_cpu" <<'PY' >> "$WORK/trips"
import json, sys
r = json.load(open(sys.argv[1]))
u, s, rss = open(sys.argv[2]).read().split()
n = r["requests"]["completed"]
def at(p):
    return next(x["us"] for x in r["latency"]["percentiles"] if x["p"] == p)
# way completed failed per-second p50 p99 read/msg written/msg client-us/msg server-us/msg client-busy server-busy
wall = r["duration_s"]
print(sys.argv[3], n, r["requests"]["failed"], n / wall, at(50.0), at(99.0),
      r["bytes"]["read"] / n, r["bytes"]["written"] / n, (float(u) + float(s)) * 1e6 / n,
      float(sys.argv[4]) * 1e6 / n, (float(u) + float(s)) * 100 / wall, float(sys.argv[4]) * 100 / wall)
PY
  done
  for conns in "$HOLD" 64; do
    for way in plain deflate; do
      flag=(); [ "$way" = deflate ] && flag=(--ws-deflate)
      port=$(free_port)
      start_serve "$port"
      out=$WORK/held.$way.$conns.$r
      timed "$out" taskset -c 0 "$STAMPEDE" load "ws://127.0.0.1:$port/ws/echo" \
        --inject "atOnceUsers($conns)" --calls 10 --think 1s --ws-ping -t 1 -q --json - "${flag[@]}"
      hwm=$(awk '/VmHWM/{print $2}' "/proc/$SERVE_PID/status")
      kill "$SERVE_PID" 2>/dev/null || true
      wait "$SERVE_PID" 2>/dev/null || true
      python3 - "$out" "$out.time" "$way" "$conns" "$hwm" <<'PY' >> "$WORK/held"
import json, sys
r = json.load(open(sys.argv[1]))
u, s, rss = open(sys.argv[2]).read().split()
print(sys.argv[3], sys.argv[4], r["connections_opened"], r["requests"]["completed"], r["requests"]["failed"], rss, sys.argv[5])
PY
    done
  done
done

python3 - "$WORK/trips" "$WORK/held" "$HOLD" "${#MESSAGE}" <<'PY'
import statistics, sys
trips = [l.split() for l in open(sys.argv[1])]
held = [l.split() for l in open(sys.argv[2])]
big, size = sys.argv[3], sys.argv[4]
def med(rows, key, col):
    return statistics.median(float(r[col]) for r in rows if r[:len(key)] == key)
print(f"Echo round trips of a {size}-byte JSON message, 64 connections, 10 s (medians):")
print()
print("| way | completed | failed | messages/s | p50 ms | p99 ms | bytes read a message | bytes written a message | client µs a message | server µs a message | client busy % | server busy % |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for way in ("plain", "deflate"):
    k = [way]
    print(f"| {way} | {med(trips, k, 1):.0f} | {med(trips, k, 2):.0f} | {med(trips, k, 3):.0f} |"
          f" {med(trips, k, 4) / 1000:.2f} | {med(trips, k, 5) / 1000:.2f} | {med(trips, k, 6):.1f} |"
          f" {med(trips, k, 7):.1f} | {med(trips, k, 8):.2f} | {med(trips, k, 9):.2f} |"
          f" {med(trips, k, 10):.0f} | {med(trips, k, 11):.0f} |")
print()
print(f"Connections held, {big} against 64, each pinging once a second (medians):")
print()
print("| way | opened | completed | failed | client bytes a connection | server bytes a connection |")
print("|---|---:|---:|---:|---:|---:|")
for way in ("plain", "deflate"):
    n = med(held, [way, big], 2) - med(held, [way, "64"], 2)
    client = (med(held, [way, big], 5) - med(held, [way, "64"], 5)) * 1024 / n
    server = (med(held, [way, big], 6) - med(held, [way, "64"], 6)) * 1024 / n
    print(f"| {way} | {med(held, [way, big], 2):.0f} | {med(held, [way, big], 3):.0f} |"
          f" {med(held, [way, big], 4):.0f} | {client:.0f} | {server:.0f} |")
PY
echo
machine
