#!/usr/bin/env bash
# wrk's Lua scripts: `stampede wrk -s` against wrk itself (Debian's wrk 4.1, LuaJIT),
# both pinned to CPU 0 with one thread and 64 connections against
# `stampede serve --threads 1 --no-http2` on CPU 1, clients alternating round by round.
# Three cases:
#   counter  a request() that builds a new request every call with a per-request
#            counter header (wrk's counter.lua): one Lua call per request;
#   init     a script with only init() and wrk.format (a fixed request built once);
#   none     no script, the baseline the init case must match.
# Each row: median req/s, client CPU µs per request, and each core's busy share, so a
# row says which side was the limit.
#
#   bash bench/lua.sh [ROUNDS=5] [SECONDS=5]
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-5}
SECS=${2:-5}
need_apt wrk time
[ -x "$STAMPEDE" ] || (cd "$ROOT" && cargo build --release -q)
cat > "$WORK/counter.lua" <<'LUA'
counter = 0
request = function()
   wrk.headers["X-Counter"] = counter
   counter = counter + 1
   return wrk.format(nil, "/pong")
end
LUA
cat > "$WORK/init.lua" <<'LUA'
function init(args)
   wrk.headers["X-Run"] = "fixed"
   req = wrk.format("GET", "/pong")
end
LUA
PORT=$(free_port)
start_serve "$PORT" --no-http2
URL="http://127.0.0.1:$PORT/pong"
CASES="counter init none"
CLIENTS="stampede wrk"
script_args() { case $1 in none) ;; *) echo "-s $WORK/$1.lua" ;; esac; }
run_client() {
  local c=$1 case=$2 out=$3
  # shellcheck disable=SC2046
  case $c in
    stampede) timed "$out" taskset -c 0 "$STAMPEDE" wrk -t1 -c64 -d${SECS}s $(script_args "$case") "$URL" ;;
    wrk) timed "$out" taskset -c 0 wrk -t1 -c64 -d${SECS}s $(script_args "$case") "$URL" ;;
  esac
}
taskset -c 0 "$STAMPEDE" wrk -t1 -c64 -d1s "$URL" > /dev/null  # warm-up, discarded
for r in $(seq "$ROUNDS"); do
  for case in $CASES; do
    for c in $CLIENTS; do
      out=$WORK/$case.$c.$r
      read -r rps _ cpu_us _ _ cb sb < <(busy_run "$SERVE_PID" wrk "$out" run_client "$c" "$case" "$out")
      echo "$case $c $rps $cpu_us $cb $sb" >> "$WORK/results"
      printf '%-8s round %d %-9s %10.0f req/s %6s µs CPU/req  cores busy: client %3s %%, server %3s %%\n' \
        "$case" "$r" "$c" "$rps" "$cpu_us" "$cb" "$sb" >&2
    done
  done
done
echo
echo "| case | client | req/s (median of $ROUNDS) | client CPU µs/request | client core busy % | server core busy % |"
echo "|---|---|---:|---:|---:|---:|"
: > "$WORK/medians"
for case in $CASES; do
  for c in $CLIENTS; do
    col() { median_of "$WORK/results" "$1" "$case" "$c"; }
    rps=$(col 3) cpu=$(col 4) cb=$(col 5) sb=$(col 6)
    printf '| %s | %s | %.0f | %.2f | %.0f | %.0f |\n' "$case" "$c" "$rps" "$cpu" "$cb" "$sb"
    echo "$case $c $rps $cpu" >> "$WORK/medians"
  done
done
python3 - "$WORK/medians" <<'PY'
import sys
m = {}
for l in open(sys.argv[1]):
    k, c, r, u = l.split()
    m.setdefault(k, {})[c] = (float(r), float(u))
print()
for k, row in m.items():
    s, w = row["stampede"], row["wrk"]
    print(f"{k}: stampede vs wrk: {s[0]/w[0]:.2f}x req/s, {w[1]/s[1]:.2f}x less client CPU per request")
s_none, s_init = m["none"]["stampede"], m["init"]["stampede"]
print(f"stampede, init-only script against no script: {s_init[0]/s_none[0]:.3f}x req/s, "
      f"{s_init[1]/s_none[1]:.3f}x client CPU per request")
PY
echo
machine
