#!/usr/bin/env bash
# HTTP/3: stampede's client and server against the HTTP/3 peers obtainable here, each
# side pinned (clients on CPU 0, servers on CPU 1, one thread each).
#
#   bash bench/h3.sh [ROUNDS=5] [SECONDS=5]
#
# Rows, medians of ROUNDS rounds that alternate the sides:
#
# - client: `stampede load --http3` and oha built with its http3 feature (from
#   crates.io; /opt/oha-h3), 4 connections and 100 streams each, SECONDS long,
#   against `stampede serve --http3 --threads 1`. oha's HTTP/3 runs do not print
#   their report (they hang once done), so oha's requests are the server's count
#   over the run (`serve` prints it when stopped) and oha is stopped after it;
#   client CPU is that of the whole process, over the run and the wait until it is
#   stopped (its busy share is over both). Beside them, stampede over HTTP/2 on the
#   same server's TCP port: what HTTP/3 costs the client per request.
# - server: `stampede serve --http3` against Caddy (from Debian; quic-go, GOMAXPROCS
#   1, `respond "pong"`), the same stampede client: req/s per server core, and the
#   server's CPU share.
# - fixed rate: `stampede load --http3 --rate R` for SECONDS at rising rates against
#   the stampede server, ROUNDS times through the rates: the achieved rate and the
#   send lag's p99 (medians, and each round's), to name the highest rate held within
#   1 % with a p99 lag under 200 µs.
#
# PARTS=rate runs the fixed-rate part alone (PARTS=closed the rest alone).
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-5}
SECS=${2:-5}
need_apt caddy time
[ -x "$STAMPEDE" ] || (cd "$ROOT" && cargo build --release -q)
OHA3=/opt/oha-h3/bin/oha
if [ ! -x "$OHA3" ]; then
  cargo install oha --locked --features http3 --root /opt/oha-h3 >/dev/null
fi
self_signed
: > "$WORK/results"

# serve_h3 PORT: a fresh `stampede serve --http3` on CPU 1 (its log in $WORK/serve-PORT).
serve_h3() {
  taskset -c 1 "$STAMPEDE" serve --listen 127.0.0.1:"$1" --threads 1 --http3 \
    --tls-cert "$WORK/cert.pem" --tls-key "$WORK/key.pem" 2> "$WORK/serve-$1" &
  SERVE_PID=$!
  PIDS+=("$SERVE_PID")
  wait_port "$1"
}

# stop_serve PORT: stops the server; its HTTP/3 request count is then in $SERVED.
stop_serve() {
  kill -INT "$SERVE_PID"
  wait "$SERVE_PID" 2>/dev/null || true
  SERVED=$(sed -n 's/.*HTTP\/3: [0-9]* connections, \([0-9]*\) requests.*/\1/p' "$WORK/serve-$1")
}

# caddy_h3 PORT: Caddy on CPU 1 with its own CA, answering /pong.
caddy_h3() {
  mkdir -p "$WORK/caddy"
  cat > "$WORK/caddy/Caddyfile" <<CADDY
{
	admin off
	local_certs
	skip_install_trust
	storage file_system $WORK/caddy/data
	servers {
		protocols h1 h2 h3
	}
}
https://localhost:$1 {
	tls internal
	respond /pong "pong" 200
}
CADDY
  HOME=$WORK/caddy XDG_DATA_HOME=$WORK/caddy XDG_CONFIG_HOME=$WORK/caddy GOMAXPROCS=1 \
    taskset -c 1 caddy run --adapter caddyfile --config "$WORK/caddy/Caddyfile" >/dev/null 2>&1 &
  CADDY_PID=$!
  PIDS+=("$CADDY_PID")
  wait_port "$1"
  for _ in $(seq 100); do
    "$STAMPEDE" load -q --http3 --insecure -n 1 "https://localhost:$1/pong" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "caddy's HTTP/3 did not answer" >&2; return 1
}

# json_at FILE EXPR: a figure of a result, by a Python expression on `r`.
json_at() { python3 -c "import json; r=json.load(open('$1')); print($2)"; }

# load_row CASE NAME PROTO URL SERVER_PID: one closed run of the stampede client.
load_row() {
  local case=$1 name=$2 proto=$3 url=$4 pid=$5 out=$WORK/$1.$2.$r.json
  local before after
  before=$(cpu_seconds "$pid")
  /usr/bin/time -f "%U %S %M" -o "$out.time" taskset -c 0 "$STAMPEDE" load -q "--$proto" \
    --insecure -c 4 --streams 100 -t 1 -d "${SECS}s" --json "$out" "$url" >/dev/null
  after=$(cpu_seconds "$pid")
  local n rps u sy
  n=$(json_at "$out" "r['requests']['completed']")
  rps=$(json_at "$out" "r['throughput_rps']")
  read -r u sy _ < "$out.time"
  echo "$case $name $rps $(python3 -c "print(($u + $sy) * 1e6 / max($n, 1))") $(python3 -c "print(($after - $before) * 100 / $SECS)") $(python3 -c "print(($u + $sy) * 100 / $SECS)")" >> "$WORK/results"
  printf '%-7s round %d %-14s %9.0f req/s\n' "$case" "$r" "$name" "$rps" >&2
}

PARTS=${PARTS:-closed rate}
if [[ $PARTS == *closed* ]]; then
for r in $(seq "$ROUNDS"); do
  # Client: stampede (HTTP/3, then HTTP/2) and oha, each against a fresh server.
  port=$(free_port)
  serve_h3 "$port"
  load_row client stampede-h3 http3 "https://localhost:$port/pong" "$SERVE_PID"
  load_row client stampede-h2 http2 "https://localhost:$port/pong" "$SERVE_PID"
  stop_serve "$port"
  port=$(free_port)
  serve_h3 "$port"
  before=$(cpu_seconds "$SERVE_PID")
  /usr/bin/time -f "%U %S %M" -o "$WORK/oha.$r.time" timeout -s INT $((SECS + 3)) \
    taskset -c 0 "$OHA3" --no-tui --http-version 3 --insecure -c 4 -p 100 -z "${SECS}s" \
    "https://localhost:$port/pong" >/dev/null 2>&1 || true
  after=$(cpu_seconds "$SERVE_PID")
  stop_serve "$port"
  n=$SERVED
  # time(1) puts "Command exited with non-zero status" first when oha is stopped.
  read -r u sy _ < <(tail -1 "$WORK/oha.$r.time")
  rps=$(python3 -c "print(${n:-0} / $SECS)")
  echo "client oha-h3 $rps $(python3 -c "print(($u + $sy) * 1e6 / max(${n:-0}, 1))") $(python3 -c "print(($after - $before) * 100 / $SECS)") $(python3 -c "print(($u + $sy) * 100 / ($SECS + 3))")" >> "$WORK/results"
  printf '%-7s round %d %-14s %9.0f req/s\n' client "$r" oha-h3 "$rps" >&2

  # Server: stampede serve against Caddy, the same client.
  port=$(free_port)
  serve_h3 "$port"
  load_row server stampede-serve http3 "https://localhost:$port/pong" "$SERVE_PID"
  stop_serve "$port"
  port=$(free_port)
  caddy_h3 "$port"
  load_row server caddy http3 "https://localhost:$port/pong" "$CADDY_PID"
  kill "$CADDY_PID"; wait "$CADDY_PID" 2>/dev/null || true
done

echo
echo "| case | side | req/s (median of $ROUNDS) | client CPU µs/request | server core busy % | client core busy % |"
echo "|---|---|---:|---:|---:|---:|"
for row in "client stampede-h3" "client oha-h3" "client stampede-h2" "server stampede-serve" "server caddy"; do
  set -- $row
  printf '| %s | %s | %.0f | %.2f | %.0f | %.0f |\n' "$1" "$2" \
    "$(median_of "$WORK/results" 3 "$1" "$2")" "$(median_of "$WORK/results" 4 "$1" "$2")" \
    "$(median_of "$WORK/results" 5 "$1" "$2")" "$(median_of "$WORK/results" 6 "$1" "$2")"
done
fi

if [[ $PARTS == *rate* ]]; then
# Fixed rate: the send lag at rising rates, against the stampede server; ROUNDS
# rounds through the rates, medians per rate (one run is at the mercy of a stall).
port=$(free_port)
serve_h3 "$port"
: > "$WORK/rates"
for r in $(seq "$ROUNDS"); do
  for rate in 20000 50000 80000 110000 140000 170000 200000; do
    out=$WORK/rate.$rate.$r.json
    /usr/bin/time -f "%U %S %M" -o "$out.time" taskset -c 0 "$STAMPEDE" load -q --http3 \
      --insecure -c 8 --streams 16 -t 1 --rate "$rate" -d "${SECS}s" --json "$out" \
      "https://localhost:$port/pong" >/dev/null 2>&1
    read -r u sy _ < "$out.time"
    echo "rate $rate $(json_at "$out" "r['throughput_rps']") $(json_at "$out" "[p['us'] for p in r['open']['send_lag']['percentiles'] if p['p']==99.0][0]") $(python3 -c "print(($u + $sy) * 100 / $SECS)")" >> "$WORK/rates"
    printf 'rate    round %d %7d req/s\n' "$r" "$rate" >&2
  done
done
echo
echo "| offered req/s | achieved req/s | send lag p99 µs (median of $ROUNDS) | p99 of each round | client core busy % |"
echo "|---:|---:|---:|---|---:|"
for rate in 20000 50000 80000 110000 140000 170000 200000; do
  printf '| %d | %.0f | %.0f | %s | %.0f |\n' "$rate" "$(median_of "$WORK/rates" 3 rate "$rate")" \
    "$(median_of "$WORK/rates" 4 rate "$rate")" \
    "$(awk -v r="$rate" '$2 == r { printf "%s%s", s, $4; s = ", " }' "$WORK/rates")" \
    "$(median_of "$WORK/rates" 5 rate "$rate")"
done
fi
echo
machine
echo "- $("$OHA3" --version) (http3 feature), $(caddy version | awk '{print "caddy", $1}'), GOMAXPROCS=1 for Caddy"
