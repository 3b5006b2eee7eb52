#!/usr/bin/env bash
# HTTP/2 clients against the same server, each server pinned to CPU 1: nginx with one
# worker (`return 200 "PONG"`) and `stampede serve --threads 1` (/pong), each over h2c
# (prior knowledge) and over TLS 1.3 (ALPN h2, the same ECDSA P-256 certificate);
# stampede (`stampede h2load`) and h2load pinned to CPU 0, one thread, 4 clients, 100
# streams each. Clients alternate round by round; the tables give medians: req/s and
# client CPU (user+sys) per request. The h2load rows against the two servers compare
# the servers.
#
#   bash bench/h2.sh [ROUNDS=5] [REQUESTS=500000]
#
# STAMPEDE_BASE=/path/to/an/older/stampede adds that build as client "stampede-base",
# alternating with the current one, for a before/after comparison.
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-5}
N=${2:-500000}
install_peers
self_signed
H2C=$(free_port)
H2=$(free_port)
start_nginx "$H2C" 1 "" "" http2
start_nginx "$H2" 1 "$WORK/cert.pem" "$WORK/key.pem" http2
SERVE_H2C=$(free_port)
SERVE_H2=$(free_port)
start_serve "$SERVE_H2C"
start_serve "$SERVE_H2" --tls-cert "$WORK/cert.pem" --tls-key "$WORK/key.pem"
STAMPEDE_REPORT=h2load
CLIENTS=(stampede h2load)
if [ -n "${STAMPEDE_BASE:-}" ]; then CLIENTS=(stampede stampede-base h2load); fi

CASES="nginx-h2c nginx-h2 serve-h2c serve-h2"
for case in $CASES; do
  case $case in
    nginx-h2c) url=http://127.0.0.1:$H2C/pong ;;
    nginx-h2) url=https://127.0.0.1:$H2/pong ;;
    serve-h2c) url=http://127.0.0.1:$SERVE_H2C/pong ;;
    serve-h2) url=https://127.0.0.1:$SERVE_H2/pong ;;
  esac
  taskset -c 0 "$STAMPEDE" h2load -n 50000 -c 4 -m 100 "$url" >/dev/null  # warm-up, discarded
  for r in $(seq "$ROUNDS"); do
    for c in "${CLIENTS[@]}"; do
      out=$WORK/$case.$c.$r
      if [ "$c" = stampede ]; then
        timed "$out" taskset -c 0 "$STAMPEDE" h2load -n "$N" -c 4 -m 100 -t 1 "$url"
      elif [ "$c" = stampede-base ]; then
        timed "$out" taskset -c 0 "$STAMPEDE_BASE" h2load -n "$N" -c 4 -m 100 -t 1 "$url"
      else
        timed "$out" taskset -c 0 h2load -n "$N" -c 4 -m 100 -t 1 "$url"
      fi
      record "$case" "$c" "$r" "$out"
    done
  done
done
summarize HTTP/2 "$ROUNDS" "$CASES" "${CLIENTS[*]}"
