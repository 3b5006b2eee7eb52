#!/usr/bin/env bash
# WebSocket echo round trips: stampede (`load ws://…`) and Artillery's ws engine,
# each pinned to CPU 0, 64 connections, an 8-byte text message, against `stampede
# serve --threads 1` (/ws/echo) pinned to CPU 1. Clients alternate round by round;
# the table gives medians of messages/s, the client's CPU per message (user+system
# of the whole process, start-up included) and the server's CPU per message, so a
# row says which side was the limit. Artillery runs twice: waiting for each echo
# (`send` with `match`, a round trip as stampede times it) and sending without
# waiting (its fastest: messages written, not answered). Then stampede holds a
# fixed rate and gives its send lag p99. Held connections: bench/ws-hold.sh. With
# DEFLATE=1 both clients take permessage-deflate (stampede's --ws-deflate, the
# ws library's perMessageDeflate), every message compressed both ways.
#
#   [DEFLATE=1] bash bench/ws.sh [ROUNDS=5] [MESSAGES=256000] [RATE=20000]
#
# Needs Node.js and npm (Artillery 2.0.34 is installed into
# ~/.cache/stampede/artillery).
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-5}
N=${2:-256000}
RATE=${3:-20000}
DEFLATE=${DEFLATE:-0}
DEFLATE_FLAG=()
[ "$DEFLATE" = 1 ] && DEFLATE_FLAG=(--ws-deflate)
ART_DIR=$HOME/.cache/stampede/artillery
ART=$ART_DIR/node_modules/.bin/artillery
if [ ! -x "$ART" ]; then
  mkdir -p "$ART_DIR"
  (cd "$ART_DIR" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install -q --no-audit --no-fund \
    --ignore-scripts artillery@2.0.34 >/dev/null)
fi
[ -x "$STAMPEDE" ] || (cd "$ROOT" && cargo build --release -q)
PORT=$(free_port)
start_serve "$PORT"
URL=ws://127.0.0.1:$PORT/ws/echo

# artillery_plan FILE MATCH: 64 users at once, each sending N/64 messages, waiting
# for each echo when MATCH is 1. Its ws library offers permessage-deflate unless told
# not to, and the echo takes it: both clients send plain messages, as stampede does
# without --ws-deflate, unless DEFLATE=1.
artillery_plan() {
  local wait=""
  [ "$2" = 1 ] && wait=$'\n              match:\n                regexp: "stampede"'
  cat > "$1" <<YAML
config:
  target: "$URL"
  ws:
    perMessageDeflate: $([ "$DEFLATE" = 1 ] && echo true || echo false)
  phases:
    - duration: 1
      arrivalCount: 64
scenarios:
  - engine: ws
    flow:
      - loop:
          - send:
              payload: "stampede"$wait
        count: $((N / 64))
YAML
}
artillery_plan "$WORK/rt.yml" 1
artillery_plan "$WORK/send.yml" 0

# messages OUT CLIENT: "messages/s messages" from a run's report.
messages() {
  python3 - "$1" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
if sys.argv[2] == "stampede":
    print(r["throughput_rps"], r["requests"]["completed"])
else:
    a = r["aggregate"]
    c = a["counters"]
    n = c.get("websocket.messages_received", 0) if sys.argv[2] == "artillery-rt" else c.get("websocket.messages_sent", 0)
    span = max((a["lastCounterAt"] - a["firstCounterAt"]) / 1000, 1e-3)
    print(n / span, n)
PY
}

: > "$WORK/results"
timed "$WORK/warm" taskset -c 0 "$STAMPEDE" load "$URL" -c 64 -t 1 -n 20000 -q --json - "${DEFLATE_FLAG[@]}"
for r in $(seq "$ROUNDS"); do
  for c in stampede artillery-rt artillery-send; do
    out=$WORK/$c.$r
    before=$(cpu_seconds "$SERVE_PID")
    case $c in
      stampede) timed "$out" taskset -c 0 "$STAMPEDE" load "$URL" -c 64 -t 1 -n "$N" -q --json - "${DEFLATE_FLAG[@]}" ;;
      artillery-rt) timed "$out.log" taskset -c 0 "$ART" run --output "$out" "$WORK/rt.yml" ;;
      artillery-send) timed "$out.log" taskset -c 0 "$ART" run --output "$out" "$WORK/send.yml" ;;
    esac
    [ -f "$out.log.time" ] && mv "$out.log.time" "$out.time"
    after=$(cpu_seconds "$SERVE_PID")
    read -r mps n < <(messages "$out" "$c")
    read -r u sy rss < "$out.time"
    python3 -c "
n = max(float('$n'), 1)
print('echo $c', f'{$mps:.0f}', f'{($u + $sy) * 1e6 / n:.2f}', f'{($after - $before) * 1e6 / n:.2f}', int(n), '$rss')" >> "$WORK/results"
    tail -1 "$WORK/results" >&2
  done
done

# A fixed rate of messages over the 64 connections: stampede's send lag.
for r in $(seq "$ROUNDS"); do
  out=$WORK/rate.$r
  timed "$out" taskset -c 0 "$STAMPEDE" load "$URL" -c 64 -t 1 -R "$RATE" -d 5s -q --json - "${DEFLATE_FLAG[@]}"
  python3 - "$out" "$out.time" "$r" <<'PY' >> "$WORK/results"
import json, sys
r = json.load(open(sys.argv[1]))
u, s, _ = open(sys.argv[2]).read().split()
lag = (r.get("open") or {}).get("send_lag", {}).get("percentiles", [])
p99 = next((p["us"] for p in lag if p["p"] == 99.0), 0)
lat = next((p["us"] for p in r["latency"]["percentiles"] if p["p"] == 99.0), 0)
n = max(r["requests"]["completed"], 1)
print("rate stampede", r["throughput_rps"], f"{(float(u) + float(s)) * 1e6 / n:.2f}", p99, lat, r["requests"]["failed"])
PY
  tail -1 "$WORK/results" >&2
done

echo
echo "| client | messages/s | client CPU µs/message | server CPU µs/message | client max RSS KB |"
echo "|---|---:|---:|---:|---:|"
for c in stampede artillery-rt artillery-send; do
  printf '| %s | %.0f | %.2f | %.2f | %.0f |\n' "$c" \
    "$(median_of "$WORK/results" 3 echo "$c")" \
    "$(median_of "$WORK/results" 4 echo "$c")" \
    "$(median_of "$WORK/results" 5 echo "$c")" \
    "$(median_of "$WORK/results" 7 echo "$c")"
done
echo
echo "Fixed rate $RATE messages/s over 64 connections, 5 s: messages/s $(median_of "$WORK/results" 3 rate stampede)," \
  "client CPU µs/message $(median_of "$WORK/results" 4 rate stampede)," \
  "send lag p99 µs $(median_of "$WORK/results" 5 rate stampede)," \
  "latency p99 µs $(median_of "$WORK/results" 6 rate stampede)"
echo
echo "- CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') ($(nproc) cores)," \
  "kernel $(uname -r); stampede $("$STAMPEDE" --version | awk '{print $2}')" \
  "(git $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo none)), Artillery" \
  "$("$ART" --version 2>/dev/null | awk '/Artillery:/{print $2}'), Node.js $(node --version)"
