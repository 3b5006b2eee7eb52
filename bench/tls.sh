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
PORT=$(free_port)
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
  -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
  -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null
start_nginx "$PORT" 1 "$WORK/cert.pem" "$WORK/key.pem"
URL=https://127.0.0.1:$PORT/pong
CLIENTS=(stampede wrk oha)

run_client() {
  local name=$1 case=$2 out=$3 hdr=()
  [ "$case" = close ] && hdr=(-H "Connection: close")
  case $name in
    stampede) timed "$out" taskset -c 0 "$STAMPEDE" wrk -t1 -c64 -d${SECS}s "${hdr[@]}" "$URL" ;;
    wrk)      timed "$out" taskset -c 0 wrk -t1 -c64 -d${SECS}s "${hdr[@]}" "$URL" ;;
    oha)      if [ "$case" = close ]; then
                timed "$out" taskset -c 0 "$OHA" --no-tui --insecure --disable-keepalive -c 64 -z ${SECS}s "$URL"
              else
                timed "$out" taskset -c 0 "$OHA" --no-tui --insecure -c 64 -z ${SECS}s "$URL"
              fi ;;
  esac
}

taskset -c 0 "$STAMPEDE" wrk -t1 -c64 -d1s "$URL" >/dev/null  # warm-up, discarded
for case in keepalive close; do
  for r in $(seq "$ROUNDS"); do
    for c in "${CLIENTS[@]}"; do
      out=$WORK/$case.$c.$r
      run_client "$c" "$case" "$out"
      read -r rps n < <(parse_report "$c" "$out")
      read -r u s rss < "$out.time"
      cpu_us=$(python3 -c "print(f'{($u+$s)*1e6/max(float(${n:-0}),1):.2f}')")
      echo "$case $c ${rps:-0} $cpu_us" >> "$WORK/results"
      printf '%-9s round %d %-9s %10.0f req/s %7s µs CPU/req\n' "$case" "$r" "$c" "${rps:-0}" "$cpu_us" >&2
    done
  done
done

for case in keepalive close; do
  echo
  echo "HTTPS, $case: | client | req/s (median of $ROUNDS) | client CPU µs/request |"
  echo "|---|---:|---:|"
  for c in "${CLIENTS[@]}"; do
    rps=$(awk -v k="$case" -v c="$c" '$1==k && $2==c{print $3}' "$WORK/results" | median)
    cpu=$(awk -v k="$case" -v c="$c" '$1==k && $2==c{print $4}' "$WORK/results" | median)
    printf '| %s | %.0f | %.2f |\n' "$c" "$rps" "$cpu"
    echo "$case $c $rps $cpu" >> "$WORK/medians"
  done
done
python3 - "$WORK/medians" <<'PY'
import sys
m = {}
for l in open(sys.argv[1]):
    k, c, r, u = l.split()
    m[(k, c)] = (float(r), float(u))
print()
for k in ("keepalive", "close"):
    s = m[(k, "stampede")]
    for peer in ("wrk", "oha"):
        r, u = m[(k, peer)]
        print(f"{k}: stampede vs {peer}: {s[0]/r:.2f}x req/s, {u/s[1]:.2f}x less client CPU per request")
PY
echo
machine
