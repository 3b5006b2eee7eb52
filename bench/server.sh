#!/usr/bin/env bash
# The reference server against nginx: each runs alone with one thread/worker pinned to
# CPU 1; wrk runs on CPU 0 with 64 connections on /pong, plain keep-alive and with
# 16 requests pipelined per write. Servers alternate (A B A B …); medians and ratios.
# Then the c10k reference run: ab -c 10000 -n 20000 /perf against stampede serve,
# with the server's peak RSS.
#
#   bash bench/server.sh [ROUNDS=5] [SECONDS=5]
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-5}
SECS=${2:-5}
install_peers
cat > "$WORK/pipeline.lua" <<'LUA'
init = function(args)
   local r = {}
   for i = 1, tonumber(args[1]) or 1 do r[i] = wrk.format() end
   req = table.concat(r)
end
request = function() return req end
LUA

start_server() {
  local name=$1 port=$2
  case $name in
    nginx) start_nginx "$port" 1 ;;
    stampede) start_serve "$port" ;;
  esac
}

stop_server() {
  kill "${PIDS[-1]}" 2>/dev/null || true
  wait "${PIDS[-1]}" 2>/dev/null || true
  unset 'PIDS[-1]'
}

for r in $(seq "$ROUNDS"); do
  for s in stampede nginx; do
    port=$(free_port)
    start_server "$s" "$port"
    url=http://127.0.0.1:$port/pong
    taskset -c 0 wrk -t1 -c64 -d1s "$url" >/dev/null   # warm-up, discarded
    plain=$(taskset -c 0 wrk -t1 -c64 -d${SECS}s "$url" | awk '/Requests\/sec/{print $2}')
    piped=$(taskset -c 0 wrk -t1 -c64 -d${SECS}s -s "$WORK/pipeline.lua" "$url" -- 16 | awk '/Requests\/sec/{print $2}')
    stop_server
    echo "$s $plain $piped" >> "$WORK/results"
    printf 'round %d %-9s keep-alive %10.0f req/s   pipelined x16 %10.0f req/s\n' "$r" "$s" "$plain" "$piped" >&2
  done
done

echo "| server (1 thread, CPU 1) | keep-alive req/s | pipelined x16 req/s |"
echo "|---|---:|---:|"
for s in stampede nginx; do
  a=$(median_of "$WORK/results" 2 "$s")
  b=$(median_of "$WORK/results" 3 "$s")
  printf '| %s | %.0f | %.0f |\n' "$s" "$a" "$b"
  echo "$s $a $b" >> "$WORK/medians"
done
awk '{a[$1]=$2; b[$1]=$3} END{printf "\nstampede/nginx: keep-alive %.2fx, pipelined %.2fx\n", a["stampede"]/a["nginx"], b["stampede"]/b["nginx"]}' "$WORK/medians"

# c10k: 10,000 concurrent connections, no keep-alive; the second run counts.
echo
ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)"
port=$(free_port)
start_serve "$port"
SP=$SERVE_PID
for run in primer measured; do
  taskset -c 0 ab -q -r -c 10000 -n 20000 "http://127.0.0.1:$port/perf" > "$WORK/c10k.$run" 2>&1 || true
done
hwm=$(awk '/VmHWM/{print $2}' /proc/$SP/status)
m=$WORK/c10k.measured
echo "c10k (ab -c 10000 -n 20000 /perf, second run): $(awk '/Complete requests/{print $3}' "$m") complete, $(awk '/Requests per second/{print $4}' "$m") req/s, failed $(awk '/Failed requests/{print $3}' "$m") (ab counts /perf's varying length as Length failures: $(grep -o 'Length: [0-9]*' "$m" || echo 'none this run')), server peak RSS ${hwm} KB"
c2=$(taskset -c 0 "$STAMPEDE" ab -q -c 10000 -n 20000 "http://127.0.0.1:$port/perf" 2>/dev/null | awk '/Complete requests/{c=$3} /Failed requests/{f=$3} END{print c, f}')
echo "stampede ab -c 10000 -n 20000 /perf: complete/failed = $c2"
echo
machine
