#!/usr/bin/env bash
# WebSocket push streams and a broadcast room, each message timed from when it was
# due, against `stampede serve --threads 1` on CPU 1 with the clients on CPU 0 (one
# thread each), each round against a fresh server, two ways:
#   feed — SUBS subscribers (10,000 by default) to /ws/push?interval_ms=1000&size=64
#          &stamp=1 for 10 s: one message a second each, stamped with its slot on the
#          server's schedule (`load … --stream -c SUBS -d 10s`);
#   room — MEMBERS members (1,000) of /ws/room running `--stream` for 14 s, and once
#          all are in, one publisher sending RATE (50) stamped messages a second for
#          10 s into the room (`--ws-stamp -R RATE -c 1 --pipeline 8`, so that its own
#          copies coming back do not hold its sends): RATE × MEMBERS deliveries a
#          second, each timed from when the publisher meant to send it.
# Reported: messages received, per second, their delivery from when due (p50, p99,
# max) and from their send (p99), those stamped after they came (clocks apart: 0 on
# one machine), failures, the client's max RSS; for the room also the publisher's own
# round trips (its copy of each message) and its send lag.
#
#   bash bench/ws-push.sh [ROUNDS=3] [SUBS=10000] [MEMBERS=1000] [RATE=50]
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-3}
SUBS=${2:-10000}
MEMBERS=${3:-1000}
RATE=${4:-50}
[ -x "$STAMPEDE" ] || (cd "$ROOT" && cargo build --release -q)

# Waits until N WebSocket connections to PORT are established (a room's members in).
wait_conns() {
  local port=$1 n=$2
  for _ in $(seq 600); do
    [ "$(ss -Htn state established "( dport = :$port )" | wc -l)" -ge "$n" ] && return 0
    sleep 0.05
  done
  echo "bench: $n connections to $port not established within 30 s" >&2
  return 1
}

push_figures() {
  python3 - "$@" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
u, s, rss = open(sys.argv[2]).read().split()
st = r.get("stream") or {}
d = st.get("delivery") or {}
def at(l, p):
    return next((x["us"] for x in (l or {}).get("percentiles", []) if x["p"] == p), 0)
lat, unc = d.get("latency"), d.get("latency_uncorrected")
# way events per-second delivery-p50 p99 max from-send-p99 early failed client-rss-kb
print(sys.argv[3], st.get("events", 0), st.get("events", 0) / r["duration_s"], at(lat, 50.0),
      at(lat, 99.0), (lat or {}).get("max_us", 0), at(unc, 99.0), d.get("early", 0),
      r["requests"]["failed"], rss)
PY
}

for r in $(seq "$ROUNDS"); do
  port=$(free_port)
  start_serve "$port"
  out=$WORK/feed.$r
  timed "$out" taskset -c 0 "$STAMPEDE" load \
    "ws://127.0.0.1:$port/ws/push?interval_ms=1000&size=64&stamp=1" --stream -c "$SUBS" \
    -t 1 -d 10s -q --json -
  push_figures "$out" "$out.time" feed >> "$WORK/results"
  tail -1 "$WORK/results" >&2
  kill "$SERVE_PID" 2>/dev/null || true
  wait "$SERVE_PID" 2>/dev/null || true

  port=$(free_port)
  start_serve "$port"
  out=$WORK/room.$r
  url="ws://127.0.0.1:$port/ws/room?name=bench"
  timed "$out" taskset -c 0 "$STAMPEDE" load "$url" --stream -c "$MEMBERS" -t 1 -d 14s -q \
    --json - &
  members=$!
  wait_conns "$port" "$MEMBERS"
  taskset -c 0 "$STAMPEDE" load "$url" --ws-stamp --ws-message '{"say":"hello, room"}' \
    -R "$RATE" -c 1 --pipeline 8 -t 1 -d 10s -q --json - > "$out.pub" 2>/dev/null || true
  wait "$members"
  push_figures "$out" "$out.time" room >> "$WORK/results"
  python3 - "$out.pub" <<'PY' >> "$WORK/publisher"
import json, sys
r = json.load(open(sys.argv[1]))
at = lambda l, p: next(x["us"] for x in l["percentiles"] if x["p"] == p)
print(r["requests"]["completed"], at(r["latency"], 99.0), at(r["open"]["send_lag"], 99.0))
PY
  tail -1 "$WORK/results" >&2
  kill "$SERVE_PID" 2>/dev/null || true
  wait "$SERVE_PID" 2>/dev/null || true
done

python3 - "$WORK/results" "$WORK/publisher" "$SUBS" "$MEMBERS" "$RATE" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
pubs = [l.split() for l in open(sys.argv[2])]
subs, members, rate = sys.argv[3:6]
med = lambda way, col: statistics.median(float(r[col]) for r in rows if r[0] == way)
print("| way | connections | messages received | per second | delivery p50 ms | p99 ms | max ms | from the send p99 ms | stamped after they came | failed | client max RSS MiB |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for way, conns in (("feed", subs), ("room", members)):
    print(f"| {way} | {conns} | {med(way, 1):.0f} | {med(way, 2):.0f} | {med(way, 3) / 1000:.2f} |"
          f" {med(way, 4) / 1000:.2f} | {med(way, 5) / 1000:.2f} | {med(way, 6) / 1000:.2f} |"
          f" {med(way, 7):.0f} | {med(way, 8):.0f} | {med(way, 9) / 1024:.1f} |")
p = lambda col: statistics.median(float(r[col]) for r in pubs)
print(f"\nroom publisher at {rate}/s: {p(0):.0f} sent and answered by its own copy, round trip p99 "
      f"{p(1) / 1000:.2f} ms, send lag p99 {p(2) / 1000:.2f} ms (medians of {len(pubs)})")
PY
echo
machine
echo "- stampede $("$STAMPEDE" --version | awk '{print $2}') (git $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo none))"
