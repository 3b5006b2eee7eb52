#!/usr/bin/env bash
# Load generators against the same server: nginx (one worker, `return 200 "PONG"`)
# pinned to CPU 1, each client pinned to CPU 0 with 64 keep-alive connections and one
# thread. Clients run in turn, round after round (A B C D E, A B C D E, …), and the
# table gives medians: req/s, client CPU (user+sys) per request, client max RSS.
#
#   bash bench/clients.sh [ROUNDS=5] [SECONDS=5]
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-5}
SECS=${2:-5}
install_peers
PORT=$(free_port)
start_nginx "$PORT" 1
URL=http://127.0.0.1:$PORT/pong
CLIENTS=(stampede wrk oha h2load ab)

run_client() {
  local name=$1 out=$2
  case $name in
    stampede) timed "$out" taskset -c 0 "$STAMPEDE" wrk -t1 -c64 -d${SECS}s "$URL" ;;
    wrk)      timed "$out" taskset -c 0 wrk -t1 -c64 -d${SECS}s "$URL" ;;
    oha)      timed "$out" taskset -c 0 "$OHA" --no-tui -c 64 -z ${SECS}s "$URL" ;;
    h2load)   timed "$out" taskset -c 0 h2load --h1 -t1 -c64 -D $SECS "$URL" ;;
    ab)       timed "$out" taskset -c 0 ab -q -k -c 64 -t $SECS -n 100000000 "$URL" ;;
  esac
}

taskset -c 0 "$STAMPEDE" wrk -t1 -c64 -d1s "$URL" >/dev/null  # warm-up, discarded
for r in $(seq "$ROUNDS"); do
  for c in "${CLIENTS[@]}"; do
    out=$WORK/$c.$r
    run_client "$c" "$out"
    read -r rps n < <(parse_report "$c" "$out")
    read -r u s rss < "$out.time"
    cpu_us=$(python3 -c "print(f'{($u+$s)*1e6/max(float($n),1):.2f}')")
    echo "$c $rps $cpu_us $rss" >> "$WORK/results"
    printf 'round %d %-9s %10.0f req/s %6s µs CPU/req %7s KB max RSS\n' "$r" "$c" "$rps" "$cpu_us" "$rss" >&2
  done
done

echo
echo "| client | req/s (median of $ROUNDS) | client CPU µs/request | max RSS KB |"
echo "|---|---:|---:|---:|"
for c in "${CLIENTS[@]}"; do
  rps=$(awk -v c="$c" '$1==c{print $2}' "$WORK/results" | median)
  cpu=$(awk -v c="$c" '$1==c{print $3}' "$WORK/results" | median)
  rss=$(awk -v c="$c" '$1==c{print $4}' "$WORK/results" | median)
  printf '| %s | %.0f | %.2f | %.0f |\n' "$c" "$rps" "$cpu" "$rss"
  echo "$c $rps $cpu" >> "$WORK/medians"
done
python3 - "$WORK/medians" <<'PY'
import sys
m = {l.split()[0]: (float(l.split()[1]), float(l.split()[2])) for l in open(sys.argv[1])}
s = m["stampede"]
print()
for peer in ("wrk", "oha", "h2load", "ab"):
    r, c = m[peer]
    print(f"stampede vs {peer}: {s[0]/r:.2f}x req/s, {c/s[1]:.2f}x less client CPU per request")
PY
echo
machine
