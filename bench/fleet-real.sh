#!/usr/bin/env bash
# The fleet coordinator's cost with real segments: SEGMENTS `stampede load` processes,
# one fixed-rate run of RATE req/s in all for SECONDS, joining `stampede collect` over
# loopback (their token from its file), against `stampede serve`. It wants cores: the
# collector on CPU 0, the server on the last quarter, the segments spread one a core
# over the rest. Per round: the collector's own user + system CPU between 4 s after
# the shared start and 3 s before the end, as a share of one core (it also feeds
# /metrics every merged second); how many live seconds held every segment; whether the
# merged result's counts and latency equal `stampede merge` of the parts the segments
# sent. Medians of ROUNDS.
#
#   bash bench/fleet-real.sh [SEGMENTS=64] [SECONDS=30] [ROUNDS=3] [RATE=64000]
source "$(dirname "$0")/lib.sh"
SEGMENTS=${1:-64}
SECS=${2:-30}
ROUNDS=${3:-3}
RATE=${4:-64000}
cores=$(nproc)
if ((cores < 8)); then
  echo "bench/fleet-real.sh wants 8 cores or more; this machine has $cores (bench/fleet.sh plays the segments instead)" >&2
  exit 1
fi
[ -x "$STAMPEDE" ] || (cd "$ROOT" && cargo build --release -q)
server_cpus=$((cores / 4))
first_server=$((cores - server_cpus))
seg_cpus=$((first_server - 1))
port=$((20000 + RANDOM % 30000))
taskset -c "$first_server-$((cores - 1))" "$STAMPEDE" serve --listen 127.0.0.1:"$port" \
  --threads "$server_cpus" 2> /dev/null &
PIDS+=($!)
wait_port "$port"
url="http://127.0.0.1:$port/pong"
run=(load -q --rate "$RATE" -d "${SECS}s" -c $((SEGMENTS * 2)) -t 1 "$url")

ticks=$(getconf CLK_TCK)
cpu_of() { awk '{print $14 + $15}' "/proc/$1/stat"; }
: > "$WORK/shares"
for r in $(seq "$ROUNDS"); do
  rm -rf "$WORK/token" "$WORK/parts" "$WORK/live.jsonl" "$WORK/err"
  taskset -c 0 "$STAMPEDE" collect --listen 127.0.0.1:0 --segments "$SEGMENTS" \
    --token-file "$WORK/token" --start-in 60s --metrics-listen 127.0.0.1:0 \
    --live-log "$WORK/live.jsonl" --parts "$WORK/parts" --json "$WORK/merged.json" \
    -- "${run[@]}" > /dev/null 2> "$WORK/err" &
  pid=$!
  cport=
  while [ -z "$cport" ]; do
    kill -0 "$pid" 2> /dev/null || { cat "$WORK/err"; exit 1; }
    cport=$(sed -n 's/.*collecting [0-9]* segments on 127.0.0.1:\([0-9]*\);.*/\1/p' "$WORK/err")
    sleep 0.1
  done
  token=$(cat "$WORK/token")
  segs=()
  for k in $(seq "$SEGMENTS"); do
    STAMPEDE_FLEET_TOKEN=$token taskset -c $((1 + (k - 1) % seg_cpus)) "$STAMPEDE" "${run[@]}" \
      --segment "$k/$SEGMENTS" --fleet-connect 127.0.0.1:"$cport" --json - \
      > /dev/null 2>> "$WORK/segments.err" &
    segs+=($!)
  done
  # The first merged second is written a second after the shared start.
  until [ -s "$WORK/live.jsonl" ]; do
    kill -0 "$pid" 2> /dev/null || { cat "$WORK/err"; exit 1; }
    sleep 0.05
  done
  sleep 3
  a=$(cpu_of "$pid"); ta=$(date +%s.%N)
  sleep $((SECS - 7))
  b=$(cpu_of "$pid"); tb=$(date +%s.%N)
  wait "$pid" || { cat "$WORK/err"; tail "$WORK/segments.err"; exit 1; }
  wait "${segs[@]}"
  whole=$(grep -c "\"segments\":$SEGMENTS[,}]" "$WORK/live.jsonl")
  shown=$(wc -l < "$WORK/live.jsonl")
  "$STAMPEDE" merge "$WORK"/parts/segment-*.json --json "$WORK/again.json" > /dev/null
  if command -v python3 > /dev/null; then
    same=$(python3 - "$WORK/merged.json" "$WORK/again.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
keys = ["requests", "statuses", "latency", "histograms", "intervals", "open"]
print("equal" if all(a[k] == b[k] for k in keys) else "DIFFERENT")
PY
    )
    done_=$(python3 -c "import json; r=json.load(open('$WORK/merged.json')); print(r['requests']['completed'], r['fleet']['merged'])")
  else
    same="not compared (no python3)"
    done_="not read (no python3)"
  fi
  share=$(awk -v a="$a" -v b="$b" -v ta="$ta" -v tb="$tb" -v t="$ticks" 'BEGIN { printf "%.2f", (b - a) / t / (tb - ta) * 100 }')
  echo "$share" >> "$WORK/shares"
  echo "round $r: collector $share % of a core; $whole of $shown live seconds held all $SEGMENTS segments; merged (completed, segments) = $done_; against stampede merge of the parts: $same" >&2
done
machine 2> /dev/null
echo
middle=$(sort -n "$WORK/shares" | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}')
echo "collector merging $SEGMENTS real segments (${RATE} req/s in all, ${SECS} s) live: $middle % of one core (median of $ROUNDS; rounds: $(tr '\n' ' ' < "$WORK/shares"))"
