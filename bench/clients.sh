#!/usr/bin/env bash
# Load generators against the same server, pinned to CPU 1: nginx (one worker,
# `return 200 "PONG"`) and `stampede serve --threads 1`. Each client runs pinned to
# CPU 0 with 64 keep-alive connections and one thread. Clients run in turn, round after
# round (A B C D E, A B C D E, …), and the tables give medians: req/s, client CPU
# (user+sys) per request, client max RSS, and how busy each core was.
#
# Which side limits a run decides what its req/s means, so both cores are measured: a
# client whose core is full while the server's core has room is client-bound, and only
# then do req/s compare clients. When the server's core is full (nginx's one worker is
# on this kind of machine) every client gets the server's rate, and client CPU per
# request is the column that compares them.
#
#   bash bench/clients.sh [ROUNDS=5] [SECONDS=5]
#
# STAMPEDE_BASE=/path/to/an/older/stampede adds that build as client "stampede-base",
# in the same rotation, for a before/after comparison; CLIENTS="stampede wrk" runs
# only those clients, and "stampede-oha" is stampede's oha dialect with oha's flags.
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-5}
SECS=${2:-5}
read -r -a CLIENTS <<< "${CLIENTS:-stampede wrk oha h2load ab}"
if [ -n "${STAMPEDE_BASE:-}" ]; then CLIENTS=(stampede stampede-base "${CLIENTS[@]:1}"); fi
install_peers
NGINX_PORT=$(free_port)
start_nginx "$NGINX_PORT" 1
# nginx's master forks the worker that does the work; its CPU is the server's.
NGINX_WORKER=""
for _ in $(seq 50); do
  NGINX_WORKER=$(pgrep -P "${PIDS[-1]}" | head -1) && [ -n "$NGINX_WORKER" ] && break
  sleep 0.1
done
SERVE_PORT=$(free_port)
start_serve "$SERVE_PORT" --no-http2
SERVERS=(nginx stampede-serve)

server_pid() { case $1 in nginx) echo "$NGINX_WORKER" ;; stampede-serve) echo "$SERVE_PID" ;; esac; }
server_url() {
  case $1 in
    nginx) echo "http://127.0.0.1:$NGINX_PORT/pong" ;;
    stampede-serve) echo "http://127.0.0.1:$SERVE_PORT/pong" ;;
  esac
}

run_client() {
  local name=$1 out=$2 url=$3
  case $name in
    stampede) timed "$out" taskset -c 0 "$STAMPEDE" wrk -t1 -c64 -d${SECS}s "$url" ;;
    stampede-base) timed "$out" taskset -c 0 "$STAMPEDE_BASE" wrk -t1 -c64 -d${SECS}s "$url" ;;
    wrk)      timed "$out" taskset -c 0 wrk -t1 -c64 -d${SECS}s "$url" ;;
    oha)      timed "$out" taskset -c 0 "$OHA" --no-tui -c 64 -z ${SECS}s "$url" ;;
    stampede-oha) timed "$out" taskset -c 0 "$STAMPEDE" oha --no-tui -c 64 -z ${SECS}s "$url" ;;
    h2load)   timed "$out" taskset -c 0 h2load --h1 -t1 -c64 -D $SECS "$url" ;;
    ab)       timed "$out" taskset -c 0 ab -q -k -c 64 -t $SECS -n 100000000 "$url" ;;
  esac
}

for s in "${SERVERS[@]}"; do
  taskset -c 0 "$STAMPEDE" wrk -t1 -c64 -d1s "$(server_url "$s")" >/dev/null  # warm-up, discarded
done
for r in $(seq "$ROUNDS"); do
  for s in "${SERVERS[@]}"; do
    for c in "${CLIENTS[@]}"; do
      out=$WORK/$s.$c.$r
      read -r rps _ cpu_us _ rss client_busy server_busy < <(busy_run "$(server_pid "$s")" "$c" "$out" \
        run_client "$c" "$out" "$(server_url "$s")")
      echo "$s $c $rps $cpu_us $rss $client_busy $server_busy" >> "$WORK/results"
      printf '%-14s round %d %-9s %10.0f req/s %6s µs CPU/req %7s KB max RSS  cores busy: client %3s %%, server %3s %%\n' \
        "$s" "$r" "$c" "$rps" "$cpu_us" "$rss" "$client_busy" "$server_busy" >&2
    done
  done
done

: > "$WORK/medians"
for s in "${SERVERS[@]}"; do
  echo
  echo "Server: $s"
  echo
  echo "| client | req/s (median of $ROUNDS) | client CPU µs/request | max RSS KB | client core busy % | server core busy % |"
  echo "|---|---:|---:|---:|---:|---:|"
  for c in "${CLIENTS[@]}"; do
    col() { median_of "$WORK/results" "$1" "$s" "$c"; }
    rps=$(col 3) cpu=$(col 4) rss=$(col 5) cb=$(col 6) sb=$(col 7)
    printf '| %s | %.0f | %.2f | %.0f | %.0f | %.0f |\n' "$c" "$rps" "$cpu" "$rss" "$cb" "$sb"
    echo "$s $c $rps $cpu $cb $sb" >> "$WORK/medians"
  done
done
python3 - "$WORK/medians" <<'PY'
import sys
m = {}
for l in open(sys.argv[1]):
    s, c, r, u, cb, sb = l.split()
    m.setdefault(s, {})[c] = (float(r), float(u), float(cb), float(sb))
for s, row in m.items():
    print()
    me = row["stampede"]
    print(f"{s}: stampede's runs: client core {me[2]:.0f} % busy, server core {me[3]:.0f} %")
    for peer, (r, u, cb, sb) in row.items():
        if peer != "stampede":
            print(f"{s}: stampede vs {peer}: {me[0]/r:.2f}x req/s, {u/me[1]:.2f}x less client CPU "
                  f"per request ({peer}'s runs: client core {cb:.0f} % busy, server core {sb:.0f} %)")
PY
echo
machine
