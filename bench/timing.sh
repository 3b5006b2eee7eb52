#!/usr/bin/env bash
# h2load's timing scripts: `stampede h2load --timing-script-file` against h2load itself
# (Debian's nghttp2-client), both on CPU 0 against `stampede serve --threads 1` on CPU
# 1 over h2c, alternating round by round. The script has 101 lines, one /pong every
# 10 ms from 0 to 1000 ms, and -c 10 clients each send all of it (1,010 requests), so
# no run can end before 1000 ms: what it takes beyond that (its last response, and any
# lateness the client let add up) is the overrun. Each row: the median run time and
# overrun over the rounds.
#
#   bash bench/timing.sh [ROUNDS=5]
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-5}
need_apt nghttp2-client
[ -x "$STAMPEDE" ] || (cd "$ROOT" && cargo build --release -q)
PORT=$(free_port)
start_serve "$PORT"
python3 - "$PORT" > "$WORK/script.txt" <<'PY'
import sys
port = sys.argv[1]
for i in range(101):
    uri = f"http://127.0.0.1:{port}/pong" if i == 0 else "/pong"
    print(f"{i * 10}\t{uri}")
PY
# The run time h2load's layout prints ("finished in 1.04s, 971.50 req/s"): requests
# over the rate, in ms.
run_ms() {
  awk '/^finished in/ { gsub(",", "", $4); print 1010 / $4 * 1000 }' "$1"
}
: > "$WORK/results"
for r in $(seq "$ROUNDS"); do
  for c in stampede h2load; do
    out=$WORK/$c.$r
    case $c in
      stampede) taskset -c 0 "$STAMPEDE" h2load -c 10 --timing-script-file "$WORK/script.txt" > "$out" 2>&1 ;;
      h2load) taskset -c 0 h2load -c 10 --timing-script-file "$WORK/script.txt" > "$out" 2>&1 ;;
    esac
    grep -q "1010 succeeded" "$out" || { echo "$c: not every request succeeded:" >&2; cat "$out" >&2; exit 1; }
    ms=$(run_ms "$out")
    echo "$c $ms" >> "$WORK/results"
    printf 'round %d %-9s %8.1f ms (overrun %6.1f ms)\n' "$r" "$c" "$ms" "$(echo "$ms - 1000" | bc -l)" >&2
  done
done
echo
echo "| client | run time, ms (median of $ROUNDS) | overrun past the script's 1000 ms |"
echo "|---|---:|---:|"
for c in stampede h2load; do
  ms=$(median_of "$WORK/results" 2 "$c")
  printf '| %s | %.1f | %.1f |\n' "$c" "$ms" "$(echo "$ms - 1000" | bc -l)"
done
echo
machine
