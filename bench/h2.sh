#!/usr/bin/env bash
# HTTP/2 clients against the same server: nginx with one worker pinned to CPU 1,
# `return 200 "PONG"`, over h2c (prior knowledge) and over TLS 1.3 (ALPN h2, ECDSA
# P-256 certificate); stampede (`stampede h2load`) and h2load pinned to CPU 0, one
# thread, 4 clients, 100 streams each. Clients alternate round by round; the tables
# give medians: req/s and client CPU (user+sys) per request.
#
#   bash bench/h2.sh [ROUNDS=5] [REQUESTS=500000]
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-5}
N=${2:-500000}
install_peers
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
  -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
  -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null
H2C=$(free_port)
H2=$(free_port)
cat > "$WORK/nginx.conf" <<NGINX
worker_processes 1;
daemon off;
pid $WORK/nginx.pid;
error_log $WORK/nginx-error.log;
events { worker_connections 20000; }
http {
  access_log off;
  keepalive_requests 100000000;
  http2_max_concurrent_streams 128;
  server {
    listen 127.0.0.1:$H2C http2 reuseport;
    location = /pong { default_type text/plain; return 200 "PONG"; }
  }
  server {
    listen 127.0.0.1:$H2 ssl http2 reuseport;
    ssl_certificate $WORK/cert.pem;
    ssl_certificate_key $WORK/key.pem;
    ssl_protocols TLSv1.3;
    location = /pong { default_type text/plain; return 200 "PONG"; }
  }
}
NGINX
taskset -c 1 nginx -c "$WORK/nginx.conf" -p "$WORK" 2>/dev/null &
PIDS+=($!)
wait_port "$H2C"
wait_port "$H2"
CLIENTS=(stampede h2load)

for case in h2c h2; do
  if [ "$case" = h2c ]; then url=http://127.0.0.1:$H2C/pong; else url=https://127.0.0.1:$H2/pong; fi
  taskset -c 0 "$STAMPEDE" h2load -n 50000 -c 4 -m 100 "$url" >/dev/null  # warm-up, discarded
  for r in $(seq "$ROUNDS"); do
    for c in "${CLIENTS[@]}"; do
      out=$WORK/$case.$c.$r
      if [ "$c" = stampede ]; then
        timed "$out" taskset -c 0 "$STAMPEDE" h2load -n "$N" -c 4 -m 100 -t 1 "$url"
      else
        timed "$out" taskset -c 0 h2load -n "$N" -c 4 -m 100 -t 1 "$url"
      fi
      read -r rps n < <(parse_report h2load "$out")
      read -r u s rss < "$out.time"
      cpu_us=$(python3 -c "print(f'{($u+$s)*1e6/max(float(${n:-0}),1):.2f}')")
      echo "$case $c ${rps:-0} $cpu_us" >> "$WORK/results"
      printf '%-4s round %d %-9s %10.0f req/s %7s µs CPU/req\n' "$case" "$r" "$c" "${rps:-0}" "$cpu_us" >&2
    done
  done
done

for case in h2c h2; do
  echo
  echo "HTTP/2, $case: | client | req/s (median of $ROUNDS) | client CPU µs/request |"
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
for k in ("h2c", "h2"):
    s, p = m[(k, "stampede")], m[(k, "h2load")]
    print(f"{k}: stampede vs h2load: {s[0]/p[0]:.2f}x req/s, {p[1]/s[1]:.2f}x less client CPU per request")
PY
echo
machine
