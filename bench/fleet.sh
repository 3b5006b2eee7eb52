#!/usr/bin/env bash
# The fleet coordinator's own cost: `stampede ssh` (MODE ssh) or `stampede collect`
# (MODE collect, with /metrics served from the merged seconds too) merging SEGMENTS
# processes' seconds live. Each "host" is a stand-in that plays a real segment — over
# a stand-in ssh, or a bash connection to the collector with the run's token: it says
# ready, waits
# for the start, then sends one second's frame a second — a real second of a busy
# run (its latency histograms as a stampede load at 20,000 req/s against the
# reference server made them) — and at the end a real result of its segment. The
# coordinator's user + system CPU (its own, from /proc, not its children's) is read
# a few seconds into the run and a few before its end; the difference over the time
# between is its share of one core while merging, printing the fleet's line and
# writing --live-log. Medians of ROUNDS.
#
#   bash bench/fleet.sh [SEGMENTS=64] [SECONDS=30] [ROUNDS=3] [MODE=ssh|collect]
source "$(dirname "$0")/lib.sh"
SEGMENTS=${1:-64}
SECS=${2:-30}
ROUNDS=${3:-3}
MODE=${4:-ssh}
[ -x "$STAMPEDE" ] || (cd "$ROOT" && cargo build --release -q)
port=$(free_port)
start_serve "$port"
url="http://127.0.0.1:$port/pong"

# One busy second, from a real run: its interval's JSON after its "t".
taskset -c 0 "$STAMPEDE" load -q --rate 20000 -d 3s -c 64 "$url" --json "$WORK/busy.json"
python3 - "$WORK/busy.json" "$WORK/tail" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
iv = max(r["intervals"], key=lambda i: i["completed"])
body = json.dumps(iv, separators=(",", ":"))
assert body.startswith('{"t":')
open(sys.argv[2], "w").write(body[body.index(","):-1])
PY
# Every segment's own result (short runs, a few at a time).
# (`wait` alone would wait for the server too.)
batch=()
for k in $(seq "$SEGMENTS"); do
  "$STAMPEDE" load -q -n "$SEGMENTS" -c "$SEGMENTS" "$url" --segment "$k/$SEGMENTS" --json "$WORK/r$k.json" > /dev/null &
  batch+=($!)
  if (( ${#batch[@]} == 8 )); then wait "${batch[@]}"; batch=(); fi
done
[ ${#batch[@]} -eq 0 ] || wait "${batch[@]}"

# The stand-in ssh: the host's name is the segment's number.
mkdir -p "$WORK/bin"
cat > "$WORK/bin/ssh" <<SH
#!/bin/sh
while [ "\$1" = -o ]; do shift 2; done
[ "\$1" = -- ] && shift
k=\$1
echo '@stampede-fleet {"ready":{"segment":"'\$k'/$SEGMENTS"}}'
read start
tail=\$(cat $WORK/tail)
t=0
while [ \$t -lt $SECS ]; do
  sleep 1
  printf '@stampede-fleet {"second":{"t":%d%s}}\n' "\$t" "\$tail"
  t=\$((t + 1))
done
cat $WORK/r\$k.json
SH
chmod +x "$WORK/bin/ssh"
hosts=$(seq -s, "$SEGMENTS")

ticks=$(getconf CLK_TCK)
cpu_of() { awk '{print $14 + $15}' "/proc/$1/stat"; }
: > "$WORK/shares"
# A stand-in segment joining the collector on port $1 as segment $2, on a bash
# connection.
joined() {
  exec 3<>"/dev/tcp/127.0.0.1/$1"
  printf '@stampede-fleet {"token":"%s","segment":"%d/%d"}\n' "$(cat "$WORK/token")" "$2" "$SEGMENTS" >&3
  printf '@stampede-fleet {"ready":{"segment":"%d/%d"}}\n' "$2" "$SEGMENTS" >&3
  read -r _ <&3
  local tail t=0
  tail=$(cat "$WORK/tail")
  while [ $t -lt "$SECS" ]; do
    sleep 1
    printf '@stampede-fleet {"second":{"t":%d%s}}\n' "$t" "$tail" >&3
    t=$((t + 1))
  done
  cat "$WORK/r$2.json" >&3
  exec 3>&-
}
for r in $(seq "$ROUNDS"); do
  if [ "$MODE" = collect ]; then
    rm -f "$WORK/token"
    taskset -c 0 "$STAMPEDE" collect --listen 127.0.0.1:0 --segments "$SEGMENTS" \
      --token-file "$WORK/token" --start-in 30s --metrics-listen 127.0.0.1:0 \
      --live-log "$WORK/live.jsonl" --json "$WORK/merged.json" -- load -q "$url" \
      > /dev/null 2> "$WORK/err" &
    pid=$!
    until cport=$(sed -n 's/.*collecting [0-9]* segments on 127.0.0.1:\([0-9]*\);.*/\1/p' "$WORK/err") && [ -n "$cport" ]; do
      kill -0 "$pid" || { cat "$WORK/err"; exit 1; }
      sleep 0.1
    done
    for k in $(seq "$SEGMENTS"); do (taskset -c 1 bash -c "$(declare -f joined); WORK=$WORK SECS=$SECS SEGMENTS=$SEGMENTS joined $cport $k") & done
  else
    PATH="$WORK/bin:$PATH" taskset -c 0 "$STAMPEDE" ssh --hosts "$hosts" --remote-stampede stampede \
      --start-in 30s --live-log "$WORK/live.jsonl" --json "$WORK/merged.json" -- load -q "$url" \
      > /dev/null 2> "$WORK/err" &
    pid=$!
  fi
  sleep 5
  a=$(cpu_of "$pid"); ta=$(date +%s.%N)
  sleep $((SECS - 8))
  b=$(cpu_of "$pid"); tb=$(date +%s.%N)
  wait "$pid" || { cat "$WORK/err"; exit 1; }
  lines=$(wc -l < "$WORK/live.jsonl")
  segs=$(python3 -c "import json; print(max(json.loads(l)['segments'] for l in open('$WORK/live.jsonl')))")
  python3 -c "print(f'{($b - $a) / $ticks / ($tb - $ta) * 100:.2f}')" >> "$WORK/shares"
  echo "round $r: $(tail -1 "$WORK/shares") % of a core; $lines seconds shown, up to $segs segments each" >&2
done
machine
echo
echo "$MODE coordinator merging $SEGMENTS segments' seconds live: $(median < "$WORK/shares") % of one core (median of $ROUNDS; rounds: $(tr '\n' ' ' < "$WORK/shares"))"
