#!/usr/bin/env bash
# epoll against io_uring for the open model: `stampede load --rate R -c 64 -t 1` on CPU 0
# against `stampede serve --threads 1 --no-http2` on CPU 1 (on epoll, so that only the
# client's backend changes), --io epoll and --io io_uring alternating, at each rate.
# Medians of send lag p50/p99/p99.9, corrected latency p99 and client CPU per request.
#
#   bash bench/io.sh [ROUNDS=5] [SECONDS=5] [RATES="10000 50000"]
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-5}
SECS=${2:-5}
RATES=${3:-"10000 50000"}
PORT=$(free_port)
start_serve "$PORT" --no-http2 --io epoll
URL=http://127.0.0.1:$PORT/pong
: > "$WORK/io"
for r in $(seq "$ROUNDS"); do
  for rate in $RATES; do
    for io in epoll io_uring; do
      out=$WORK/io.$io.$rate.$r
      timed "$out" taskset -c 0 "$STAMPEDE" load --io "$io" --rate "$rate" -d "${SECS}s" -c 64 -t 1 \
        -q --json - "$URL"
      read -r u sy _ < "$out.time"
      line=$(python3 - "$out" "$u" "$sy" "$io" "$rate" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
lag = {p["p"]: p["us"] for p in r["open"]["send_lag"]["percentiles"]}
lat = {p["p"]: p["us"] for p in r["latency"]["percentiles"]}
n = r["requests"]["completed"]
cpu = (float(sys.argv[2]) + float(sys.argv[3])) * 1e6 / max(n, 1)
assert r["origin"]["io"] == sys.argv[4], r["origin"]
print(f'{sys.argv[4]}-{sys.argv[5]} {lag[50.0]} {lag[99.0]} {lag[99.9]} {lat[99.0]} {cpu:.2f} {r["requests"]["failed"]}')
PY
)
      echo "$line" >> "$WORK/io"
      echo "round $r $line" >&2
    done
  done
done
echo "| client --io, rate | send lag p50 µs | p99 µs | p99.9 µs | latency p99 µs | client CPU µs/request | failed |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for rate in $RATES; do
  for io in epoll io_uring; do
    k=$io-$rate
    printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$k" "$(median_of "$WORK/io" 2 "$k")" \
      "$(median_of "$WORK/io" 3 "$k")" "$(median_of "$WORK/io" 4 "$k")" \
      "$(median_of "$WORK/io" 5 "$k")" "$(median_of "$WORK/io" 6 "$k")" "$(median_of "$WORK/io" 7 "$k")"
  done
done
echo
machine
