#!/usr/bin/env bash
# gRPC unary calls (helloworld.Greeter/SayHello): ghz and stampede (`load --call`)
# pinned to CPU 0, one thread, 50 calls in flight over one connection (ghz's `-c 50
# --connections 1`; stampede's `-c 1 --streams 50`), against each server pinned to CPU
# 1: the Go gRPC implementation's greeter (bench/grpc-greeter, GOMAXPROCS=1) and
# `stampede serve --threads 1`. Clients alternate round by round; the table gives
# medians of calls/s, the client's CPU per call and the server's CPU per call, so a
# row says which side was the limit; beside them, stampede's plain HTTP/2 request
# (`--http2 -c 1 --streams 50`, /pong) against the same reference server, the cost a
# call is compared with. A last case offers a fixed rate to the Go server over 4
# connections and over one (stampede -R with 50 streams each, ghz --rps with 50
# calls in flight a connection) and gives stampede's send lag p99.
#
#   bash bench/grpc.sh [ROUNDS=5] [CALLS=200000] [RATE=20000]
#
# Needs Go (ghz and the greeter are built from the Go module proxy into
# ~/.cache/stampede/bin).
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-5}
N=${2:-200000}
RATE=${3:-20000}
BIN=$HOME/.cache/stampede/bin
mkdir -p "$BIN"
[ -x "$BIN/ghz" ] || GOBIN=$BIN go install github.com/bojand/ghz/cmd/ghz@v0.93.0
[ -x "$BIN/greeter" ] || (cd "$(dirname "$0")/grpc-greeter" && go build -o "$BIN/greeter" .)
PROTO=$(cd "$(dirname "$0")/.." && pwd)/proto/helloworld.proto
GO_PORT=$(free_port)
GOMAXPROCS=1 taskset -c 1 "$BIN/greeter" --listen 127.0.0.1:"$GO_PORT" >/dev/null &
GO_PID=$!
PIDS+=("$GO_PID")
wait_port "$GO_PORT"
SERVE_PORT=$(free_port)
start_serve "$SERVE_PORT"

# call CLIENT PORT OUT [EXTRA...]: one run, its report in OUT (stampede: JSON).
call() {
  local c=$1 port=$2 out=$3
  shift 3
  if [ "$c" = stampede ]; then
    timed "$out" taskset -c 0 "$STAMPEDE" load "http://127.0.0.1:$port" --proto "$PROTO" \
      --call helloworld.Greeter/SayHello --data '{"name": "bench"}' -t 1 -q --json - "$@"
  else
    timed "$out" taskset -c 0 "$BIN/ghz" --insecure --proto "$PROTO" \
      --call helloworld.Greeter.SayHello -d '{"name": "bench"}' --cpus 1 -O json "$@" \
      "127.0.0.1:$port"
  fi
}

# calls OUT CLIENT: "calls/s calls-OK send-lag-p99-µs" from a run's report.
calls() {
  python3 - "$1" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
if sys.argv[2] == "stampede":
    ok = r.get("grpc", {}).get("OK", 0)
    lag = (r.get("open") or {}).get("send_lag", {}).get("percentiles", [])
    p99 = next((p["us"] for p in lag if p["p"] == 99.0), 0)
    print(r["throughput_rps"], ok, p99)
else:
    print(r["rps"], r.get("statusCodeDistribution", {}).get("OK", 0), 0)
PY
}

: > "$WORK/results"
for case in go serve; do
  port=$GO_PORT pid=$GO_PID
  if [ $case = serve ]; then port=$SERVE_PORT pid=$SERVE_PID; fi
  call stampede "$port" "$WORK/warm" -c 1 --streams 50 -n 20000  # warm-up, discarded
  for r in $(seq "$ROUNDS"); do
    for c in stampede ghz; do
      out=$WORK/$case.$c.$r
      before=$(cpu_seconds "$pid")
      if [ "$c" = stampede ]; then
        call stampede "$port" "$out" -c 1 --streams 50 -n "$N"
      else
        call ghz "$port" "$out" -c 50 --connections 1 -n "$N"
      fi
      after=$(cpu_seconds "$pid")
      read -r rps ok _ < <(calls "$out" "$c")
      read -r u sy _ < "$out.time"
      python3 -c "
ok = max(float('$ok'), 1)
print('$case $c $rps', f'{($u + $sy) * 1e6 / ok:.2f}', f'{($after - $before) * 1e6 / ok:.2f}', int(ok))" >> "$WORK/results"
      tail -1 "$WORK/results" >&2
    done
  done
done

# The same client's plain HTTP/2 request to the reference server, for comparison.
for r in $(seq "$ROUNDS"); do
  out=$WORK/h2.$r
  before=$(cpu_seconds "$SERVE_PID")
  timed "$out" taskset -c 0 "$STAMPEDE" load "http://127.0.0.1:$SERVE_PORT/pong" --http2 \
    -c 1 --streams 50 -t 1 -n "$N" -q --json -
  after=$(cpu_seconds "$SERVE_PID")
  read -r u sy _ < "$out.time"
  python3 -c "
import json
r = json.load(open('$out'))
n = max(r['requests']['completed'], 1)
print('serve stampede-h2', r['throughput_rps'], f'{($u + $sy) * 1e6 / n:.2f}', f'{($after - $before) * 1e6 / n:.2f}', n)" >> "$WORK/results"
  tail -1 "$WORK/results" >&2
done

# A fixed rate to the Go server over 4 connections and over one (ghz's default):
# stampede's send lag, and each side's CPU per call.
for r in $(seq "$ROUNDS"); do
  for conns in 4 1; do
    for c in stampede ghz; do
      out=$WORK/rate.$conns.$c.$r
      if [ "$c" = stampede ]; then
        call stampede "$GO_PORT" "$out" -R "$RATE" -d 5s -c "$conns" --streams 50
      else
        call ghz "$GO_PORT" "$out" -c $((50 * conns)) --connections "$conns" --rps "$RATE" -z 5s
      fi
      read -r rps ok lag < <(calls "$out" "$c")
      read -r u sy _ < "$out.time"
      echo "rate$conns $c $rps $(python3 -c "print(f'{($u + $sy) * 1e6 / max(float($ok), 1):.2f}')") $lag $ok" >> "$WORK/results"
      tail -1 "$WORK/results" >&2
    done
  done
done

echo
echo "| server | client | calls/s | client CPU µs/call | server CPU µs/call |"
echo "|---|---|---:|---:|---:|"
for row in "go stampede" "go ghz" "serve stampede" "serve ghz" "serve stampede-h2"; do
  read -r case c <<<"$row"
  {
    printf '| %s | %s | %.0f | %.2f | %.2f |\n' "$case" "$c" \
      "$(median_of "$WORK/results" 3 "$case" "$c")" \
      "$(median_of "$WORK/results" 4 "$case" "$c")" \
      "$(median_of "$WORK/results" 5 "$case" "$c")"
  }
done
echo
echo "Fixed rate $RATE calls/s to the Go server, 5 s: | connections | client | calls/s | client CPU µs/call | stampede's send lag p99 µs |"
echo "|---:|---|---:|---:|---:|"
for conns in 4 1; do
  for c in stampede ghz; do
    printf '| %s | %s | %.0f | %.2f | %s |\n' "$conns" "$c" "$(median_of "$WORK/results" 3 "rate$conns" "$c")" \
      "$(median_of "$WORK/results" 4 "rate$conns" "$c")" \
      "$([ $c = stampede ] && median_of "$WORK/results" 5 "rate$conns" "$c" || echo -)"
  done
done
