#!/usr/bin/env bash
# HTTPS (HTTP/1.1 over TLS) clients against the same server: nginx with one worker and
# a self-signed ECDSA P-256 certificate, pinned to CPU 1, `return 200 "PONG"`; each
# client pinned to CPU 0, one thread, 64 connections. Two cases: keep-alive, and a new
# connection (full TLS 1.3 handshake) per request via `Connection: close`. Clients run
# in turn, round after round, and the table gives medians: req/s and client CPU
# (user+sys) per request.
#
#   bash bench/tls.sh [ROUNDS=5] [SECONDS=5]
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-5}
SECS=${2:-5}
install_peers
self_signed
PORT=$(free_port)
start_nginx "$PORT" 1 "$WORK/cert.pem" "$WORK/key.pem"
URL=https://127.0.0.1:$PORT/pong
CLIENTS=(stampede wrk oha)

run_client() {
  local name=$1 case=$2 out=$3 hdr=() oha=()
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

taskset -c 0 "$STAMPEDE" wrk -t1 -c64 -d1s "$URL" >/dev/null  # warm-up, discarded
for case in keepalive close; do
  for r in $(seq "$ROUNDS"); do
    for c in "${CLIENTS[@]}"; do
      run_client "$c" "$case" "$WORK/$case.$c.$r"
      record "$case" "$c" "$r" "$WORK/$case.$c.$r"
    done
  done
done
summarize HTTPS "$ROUNDS" "keepalive close" "${CLIENTS[*]}"
