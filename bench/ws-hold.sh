#!/usr/bin/env bash
# WebSocket connections held: HOLD connections (19,000 by default: under this
# machine's 20,000 descriptors) against `stampede serve --threads 1` on CPU 1, the
# client on CPU 0 with one thread, each round against a fresh server, two ways:
#   sending — the pool's closed model, each connection with a message in flight,
#             for 10 s (`load ws://… -c HOLD -d 10s`);
#   pinging — HOLD users opened at once, each holding its connection for 10
#             pings one second apart (`--inject 'atOnceUsers(HOLD)' --calls 10
#             --think 1s --ws-ping`).
# Each way also runs with 64 connections; the difference in the client's max RSS
# (time(1)) and the server's peak RSS (VmHWM) over the difference in connections is
# the memory a held connection costs each side. Past 10,000 connections to a 127.x
# server the client spreads them over 127.0.0.1, 127.0.0.2, … by itself.
#
#   bash bench/ws-hold.sh [ROUNDS=3] [HOLD=19000]
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-3}
HOLD=${2:-19000}
[ -x "$STAMPEDE" ] || (cd "$ROOT" && cargo build --release -q)

for r in $(seq "$ROUNDS"); do
  for conns in "$HOLD" 64; do
    for way in sending pinging; do
      port=$(free_port)
      start_serve "$port"
      out=$WORK/$way.$conns.$r
      if [ "$way" = sending ]; then
        timed "$out" taskset -c 0 "$STAMPEDE" load "ws://127.0.0.1:$port/ws/echo" -c "$conns" \
          -t 1 -d 10s -q --json -
      else
        timed "$out" taskset -c 0 "$STAMPEDE" load "ws://127.0.0.1:$port/ws/echo" \
          --inject "atOnceUsers($conns)" --calls 10 --think 1s --ws-ping -t 1 -q --json -
      fi
      hwm=$(awk '/VmHWM/{print $2}' "/proc/$SERVE_PID/status")
      kill "$SERVE_PID" 2>/dev/null || true
      wait "$SERVE_PID" 2>/dev/null || true
      python3 - "$out" "$out.time" "$way" "$conns" "$hwm" <<'PY' >> "$WORK/results"
import json, sys
r = json.load(open(sys.argv[1]))
u, s, rss = open(sys.argv[2]).read().split()
sess = r.get("sessions") or {}
held = sess.get("max_concurrent", r["connections_opened"])
lag = ((r.get("open") or {}).get("send_lag") or {}).get("percentiles") or []
lag99 = next((p["us"] for p in lag if p["p"] == 99.0), 0)
p99 = next(p["us"] for p in r["latency"]["percentiles"] if p["p"] == 99.0)
# way conns opened held completed failed msgs/s latency-p99-us lag-p99-us client-rss-kb server-hwm-kb
print(sys.argv[3], sys.argv[4], r["connections_opened"], held, r["requests"]["completed"],
      r["requests"]["failed"], r["throughput_rps"], p99, lag99, rss, sys.argv[5])
PY
      tail -1 "$WORK/results" >&2
    done
  done
done

python3 - "$WORK/results" "$HOLD" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
big = sys.argv[2]
def med(way, conns, col):
    return statistics.median(float(r[col]) for r in rows if r[0] == way and r[1] == conns)
print("| way | connections | opened | held at once | completed | failed | messages/s | latency p99 ms | send lag p99 ms | client bytes a connection | server bytes a connection |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for way in ("sending", "pinging"):
    n = med(way, big, 2) - med(way, "64", 2)
    client = (med(way, big, 9) - med(way, "64", 9)) * 1024 / n
    server = (med(way, big, 10) - med(way, "64", 10)) * 1024 / n
    print(f"| {way} | {big} | {med(way, big, 2):.0f} | {med(way, big, 3):.0f} | {med(way, big, 4):.0f} |"
          f" {med(way, big, 5):.0f} | {med(way, big, 6):.0f} | {med(way, big, 7) / 1000:.2f} |"
          f" {med(way, big, 8) / 1000:.2f} | {client:.0f} | {server:.0f} |")
PY
echo
machine
echo "- stampede $("$STAMPEDE" --version | awk '{print $2}') (git $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo none))"
