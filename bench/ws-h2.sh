#!/usr/bin/env bash
# WebSocket echo round trips over HTTP/1.1's upgrade and over HTTP/2 streams (RFC
# 8441, `--http2`): the same client (`stampede load ws://…`, pinned to CPU 0, one
# thread, 64 connections, an 8-byte text message) against the same `stampede serve
# --threads 1` (/ws/echo, pinned to CPU 1), the two ways alternating round by round.
# Medians of messages/s, the client's CPU per message (user+system of the whole
# process) and the server's, so that a row says what HTTP/2's framing costs each
# side and which side was the limit.
#
#   bash bench/ws-h2.sh [ROUNDS=5] [MESSAGES=256000]
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-5}
N=${2:-256000}
[ -x "$STAMPEDE" ] || (cd "$ROOT" && cargo build --release -q)
PORT=$(free_port)
start_serve "$PORT"
URL=ws://127.0.0.1:$PORT/ws/echo

: > "$WORK/results"
timed "$WORK/warm" taskset -c 0 "$STAMPEDE" load "$URL" -c 64 -t 1 -n 20000 -q --json -
for r in $(seq "$ROUNDS"); do
  for way in upgrade http2; do
    out=$WORK/$way.$r
    flag=()
    [ "$way" = http2 ] && flag=(--http2)
    before=$(cpu_seconds "$SERVE_PID")
    timed "$out" taskset -c 0 "$STAMPEDE" load "$URL" -c 64 -t 1 -n "$N" -q --json - "${flag[@]}"
    after=$(cpu_seconds "$SERVE_PID")
    python3 - "$out" "$out.time" "$before" "$after" "$way" <<'PY' >> "$WORK/results"
import json, sys
r = json.load(open(sys.argv[1]))
u, s, rss = open(sys.argv[2]).read().split()
n = max(r["requests"]["completed"], 1)
server = (float(sys.argv[4]) - float(sys.argv[3])) * 1e6 / n
print("echo", sys.argv[5], f'{r["throughput_rps"]:.0f}', f"{(float(u) + float(s)) * 1e6 / n:.2f}",
      f"{server:.2f}", r["requests"]["completed"], r["requests"]["failed"], rss)
PY
    tail -1 "$WORK/results" >&2
  done
done

echo
echo "| way | messages/s | client CPU µs/message | server CPU µs/message | failed | client max RSS KB |"
echo "|---|---:|---:|---:|---:|---:|"
for way in upgrade http2; do
  printf '| %s | %.0f | %.2f | %.2f | %.0f | %.0f |\n' "$way" \
    "$(median_of "$WORK/results" 3 echo "$way")" \
    "$(median_of "$WORK/results" 4 echo "$way")" \
    "$(median_of "$WORK/results" 5 echo "$way")" \
    "$(median_of "$WORK/results" 7 echo "$way")" \
    "$(median_of "$WORK/results" 8 echo "$way")"
done
echo
machine
