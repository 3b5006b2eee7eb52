#!/usr/bin/env bash
# Streamed responses: how close stampede's figures come to the true ones, and what
# timing each event costs the client.
#
#   bash bench/stream.sh [ROUNDS=3]
#
# The server is `stampede serve --threads 1` on CPU 1, whose /sse/<n> and mock LLM
# send their events on known timers; the client runs on CPU 0. Rows:
#
# - accuracy: `load --sse` of /sse/20?gap=20&first=50 (8 connections, 160 streams):
#   the first event's p50 and p99 against the true 50 ms, the gap's against 20 ms;
#   `load --openai chat` against the mock at 40 ms TTFT and 8 ms ITL (8 connections,
#   64 completions of 32 tokens): TTFT, ITL and TPOT against 40, 8 and 8 ms. The
#   server's own lateness is in the truth here (its timers fire within a
#   millisecond), so the figures can only be late, never early.
# - cost: the client's CPU per event of `load --sse` over /sse/200?gap=1 (64
#   connections, each stream 200 events 1 ms apart), beside its CPU per response of
#   `load` over /pong (64 connections, closed): what watching a body adds.
#
# Rounds alternate the cases; medians are printed with the machine.
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-3}
[ -x "$STAMPEDE" ] || (cd "$ROOT" && cargo build --release -q)
port=$(free_port)
start_serve "$port" --llm-ttft 40ms --llm-itl 8ms
base="http://127.0.0.1:$port"
: > "$WORK/rows"

# json_at FILE EXPR: a figure of a result, by a Python expression on `r`.
json_at() { python3 -c "import json,sys; r=json.load(open('$1')); print($2)"; }
pct() { echo "[p['us'] for p in $1['percentiles'] if p['p']==$2][0]/1000"; }

for r in $(seq "$ROUNDS"); do
  out=$WORK/sse-$r.json
  taskset -c 0 "$STAMPEDE" load -q --sse -c 8 -t 1 -n 160 --json "$out" \
    "$base/sse/20?gap=20&first=50" > /dev/null
  echo "sse_first_p50 $(json_at "$out" "$(pct "r['stream']['first_event']" 50)")" >> "$WORK/rows"
  echo "sse_first_p99 $(json_at "$out" "$(pct "r['stream']['first_event']" 99)")" >> "$WORK/rows"
  echo "sse_gap_p50 $(json_at "$out" "$(pct "r['stream']['gap']" 50)")" >> "$WORK/rows"
  echo "sse_gap_p99 $(json_at "$out" "$(pct "r['stream']['gap']" 99)")" >> "$WORK/rows"

  out=$WORK/llm-$r.json
  taskset -c 0 "$STAMPEDE" load -q --openai chat --input-tokens 64 --output-tokens 32 \
    -c 8 -t 1 -n 64 --json "$out" "$base/v1/chat/completions" > /dev/null
  echo "llm_ttft_p50 $(json_at "$out" "$(pct "r['stream']['first_event']" 50)")" >> "$WORK/rows"
  echo "llm_ttft_p99 $(json_at "$out" "$(pct "r['stream']['first_event']" 99)")" >> "$WORK/rows"
  echo "llm_itl_p50 $(json_at "$out" "$(pct "r['stream']['gap']" 50)")" >> "$WORK/rows"
  echo "llm_tpot_p50 $(json_at "$out" "$(pct "r['stream']['tokens']['tpot']" 50)")" >> "$WORK/rows"

  out=$WORK/cost-sse-$r
  timed "$out" taskset -c 0 "$STAMPEDE" load -q --sse -c 64 -t 1 -n 1280 --json "$out.json" \
    "$base/sse/200?gap=1"
  read -r u s _ < "$out.time"
  events=$(json_at "$out.json" "r['stream']['events']")
  echo "cost_event_us $(python3 -c "print(($u + $s) * 1e6 / $events)")" >> "$WORK/rows"
  echo "event_rate $(json_at "$out.json" "r['stream']['events'] / r['duration_s']")" >> "$WORK/rows"

  out=$WORK/cost-pong-$r
  timed "$out" taskset -c 0 "$STAMPEDE" load -q -c 64 -t 1 -n 200000 --json "$out.json" \
    "$base/pong"
  read -r u s _ < "$out.time"
  done_=$(json_at "$out.json" "r['requests']['completed']")
  echo "cost_response_us $(python3 -c "print(($u + $s) * 1e6 / $done_)")" >> "$WORK/rows"
done

echo "| figure | truth | median of $ROUNDS |"
echo "|---|---:|---:|"
for row in "sse_first_p50 50" "sse_first_p99 50" "sse_gap_p50 20" "sse_gap_p99 20" \
           "llm_ttft_p50 40" "llm_ttft_p99 40" "llm_itl_p50 8" "llm_tpot_p50 8" \
           "cost_event_us -" "cost_response_us -" "event_rate -"; do
  set -- $row
  echo "| $1 | $2 | $(median_of "$WORK/rows" 2 "$1") |"
done
echo
machine
