#!/usr/bin/env bash
# One open-model run carried out by N segments (N processes, --segment K/N with one
# shared --start-at) against the same run from one process, alternating A B A B:
# stampede serve with one thread on CPU 1, every client process on CPU 0. The segments'
# results are merged with `stampede merge`; the table gives, per side, the medians of
# the achieved rate, the corrected p50/p99 and the send lag's p99, and how long the
# merge took.
#
#   bash bench/segments.sh [ROUNDS=3] [SECONDS=20] [RATE=50000] [SEGMENTS=4]
#
# THREADS=N gives every client process N worker threads (default: stampede's own, one
# per core).
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-3}
SECS=${2:-20}
RATE=${3:-50000}
N=${4:-4}
T=(${THREADS:+-t "$THREADS"})
[ -x "$STAMPEDE" ] || (cd "$ROOT" && cargo build --release -q)
PORT=$(free_port)
start_serve "$PORT"
URL="http://127.0.0.1:$PORT/pong"
taskset -c 0 "$STAMPEDE" load -q --rate "$RATE" -d 2s -c 64 "$URL" >/dev/null # warm-up
row() { # SIDE JSON MERGE_S
  python3 - "$1" "$2" "$3" >> "$WORK/results" <<'PY'
import json, sys
side, path, merge_s = sys.argv[1:]
r = json.load(open(path))
p = {x["p"]: x["us"] for x in r["latency"]["percentiles"]}
lag = {x["p"]: x["us"] for x in r["open"]["send_lag"]["percentiles"]}
print(side, r["open"]["achieved_rate"], r["requests"]["completed"], p[50.0], p[99.0], lag[99.0], merge_s)
PY
}
for r in $(seq "$ROUNDS"); do
  # One process.
  taskset -c 0 "$STAMPEDE" load -q "${T[@]}" --rate "$RATE" -d "${SECS}s" -c 64 --json "$WORK/one.$r.json" "$URL" >/dev/null
  row one "$WORK/one.$r.json" 0
  # N segments, one shared start a second ahead.
  at=$(python3 -c 'import time; print(f"{time.time() + 1.0:.3f}")')
  pids=()
  for k in $(seq "$N"); do
    taskset -c 0 "$STAMPEDE" load -q "${T[@]}" --rate "$RATE" -d "${SECS}s" -c 64 --segment "$k/$N" \
      --start-at "$at" --json "$WORK/seg.$r.$k.json" "$URL" >/dev/null &
    pids+=($!)
  done
  wait "${pids[@]}"
  start=$(date +%s.%N)
  "$STAMPEDE" merge "$WORK"/seg."$r".*.json --json "$WORK/merged.$r.json" >/dev/null 2>&1
  merge_s=$(python3 -c "import time; print(f'{time.time() - $start:.3f}')")
  row "segments" "$WORK/merged.$r.json" "$merge_s"
  tail -2 "$WORK/results" >&2
done
echo
echo "| side | achieved req/s (median of $ROUNDS) | completed | p50 µs | p99 µs | send lag p99 µs | merge s |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for side in one segments; do
  printf '| %s |' "$side"
  for col in 2 3 4 5 6 7; do printf ' %s |' "$(median_of "$WORK/results" "$col" "$side")"; done
  echo
done
echo
machine
