#!/usr/bin/env bash
# HTTPS (HTTP/1.1 over TLS) clients against the same server, pinned to CPU 1 with a
# self-signed ECDSA P-256 certificate: nginx with one worker (`return 200 "PONG"`),
# and for keep-alive also `stampede serve --threads 1 --no-http2` (/pong), which nginx's
# one worker cannot keep up with; each client pinned to CPU 0, one thread, 64
# connections. Cases: keep-alive, and a new connection (full TLS 1.3 handshake) per
# request via `Connection: close`. Clients run in turn, round after round, and the
# table gives medians: req/s and client CPU (user+sys) per request.
#
#   bash bench/tls.sh [ROUNDS=5] [SECONDS=5]
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-5}
SECS=${2:-5}
install_peers
self_signed
PORT=$(free_port)
start_nginx "$PORT" 1 "$WORK/cert.pem" "$WORK/key.pem"
SERVE=$(free_port)
start_serve "$SERVE" --no-http2 --tls-cert "$WORK/cert.pem" --tls-key "$WORK/key.pem"
CLIENTS=(stampede wrk oha)

run_client() {
  local name=$1 case=$2 out=$3 hdr=() oha=() URL=https://127.0.0.1:$PORT/pong
  [ "$case" = serve-keepalive ] && URL=https://127.0.0.1:$SERVE/pong
  if [ "$case" = close ]; then
    hdr=(-H "Connection: close")
    oha=(--disable-keepalive)
  fi
  case $name in
    stampede) timed "$out" taskset -c 0 "$STAMPEDE" wrk -t1 -c64 -d${SECS}s "${hdr[@]}" "$URL" ;;
    wrk)      timed "$out" taskset -c 0 wrk -t1 -c64 -d${SECS}s "${hdr[@]}" "$URL" ;;
    oha)      timed "$out" taskset -c 0 "$OHA" --no-tui --insecure "${oha[@]}" -c 64 -z ${SECS}s "$URL" ;;
  esac
}

taskset -c 0 "$STAMPEDE" wrk -t1 -c64 -d1s "https://127.0.0.1:$PORT/pong" >/dev/null  # warm-up, discarded
CASES="keepalive serve-keepalive close"
for case in $CASES; do
  for r in $(seq "$ROUNDS"); do
    for c in "${CLIENTS[@]}"; do
      run_client "$c" "$case" "$WORK/$case.$c.$r"
      record "$case" "$c" "$r" "$WORK/$case.$c.$r"
    done
  done
done
summarize HTTPS "$ROUNDS" "$CASES" "${CLIENTS[*]}"
