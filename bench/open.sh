#!/usr/bin/env bash
# The reference open-model run: 50,000 requests per second for 60 s (Gatling's
# "attempted 50k RPS"), against stampede serve with one thread on CPU 1, the generator
# on CPU 0. Reports target vs achieved rate, send lag and the latency spectrum; repeats
# ROUNDS times and gives medians.
#
#   bash bench/open.sh [ROUNDS=3] [SECONDS=60] [RATE=50000]
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-3}
SECS=${2:-60}
RATE=${3:-50000}
[ -x "$STAMPEDE" ] || (cd "$ROOT" && cargo build --release -q)
PORT=$(free_port)
start_serve "$PORT"
for r in $(seq "$ROUNDS"); do
  taskset -c 0 "$STAMPEDE" load "http://127.0.0.1:$PORT/pong" --rate "$RATE" -d "${SECS}s" -c 64 -t 1 -q \
    --json "$WORK/open.$r.json" > "$WORK/open.$r.txt" 2>&1
  python3 - "$WORK/open.$r.json" "$RATE" <<'PY' | tee -a "$WORK/rows" >&2
import json, sys
r = json.load(open(sys.argv[1])); o = r["open"]; target = float(sys.argv[2])
done = r["requests"]["completed"] / r["duration_s"]
lag = {p["p"]: p["us"] for p in o["send_lag"]["percentiles"]}
lat = {p["p"]: p["us"] for p in r["latency"]["percentiles"]}
print(f'{o["achieved_rate"]:.1f} {done:.1f} {100*o["achieved_rate"]/target:.3f} {lag[50.0]} {lag[99.0]} {o["send_lag"]["max_us"]} {lat[50.0]} {lat[99.0]} {lat[99.9]} {r["latency"]["max_us"]} {o["never_sent"]} {r["requests"]["failed"]}')
PY
done
echo "| metric (median of $ROUNDS) | value |"
echo "|---|---:|"
names=("sent req/s" "completed req/s" "sent / target %" "send lag p50 µs" "send lag p99 µs" "send lag max µs" "latency p50 µs" "latency p99 µs" "latency p99.9 µs" "latency max µs" "never sent" "failed")
for i in $(seq 1 12); do
  printf '| %s | %s |\n' "${names[$((i-1))]}" "$(median_of "$WORK/rows" "$i")"
done
echo
machine 2>/dev/null || true
