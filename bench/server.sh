#!/usr/bin/env bash
# The reference server against nginx: each runs alone with one thread/worker pinned to
# CPU 1; wrk runs on CPU 0 with 64 connections on /pong, plain keep-alive and with
# 16 requests pipelined per write. Servers alternate (A B A B …): stampede on epoll,
# stampede on io_uring (--io), nginx; medians of req/s and of the server's CPU per
# answer (its process's CPU time over the answers wrk counted), and ratios.
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
    stampede) start_serve "$port" --io epoll ;;
    stampede-uring) start_serve "$port" --io io_uring ;;
  esac
}

stop_server() {
  kill "${PIDS[-1]}" 2>/dev/null || true
  wait "${PIDS[-1]}" 2>/dev/null || true
  unset 'PIDS[-1]'
}

SERVERS=(stampede stampede-uring nginx)
# wrk_run URL [DEPTH]: "req/s server-CPU-µs-per-answer" of one wrk run against the
# server last started (its main process: nginx's one worker is its child, read apart),
# DEPTH requests pipelined per write when given.
wrk_run() {
  local url=$1 pid before after out args=()
  [[ -n ${2:-} ]] && args=(-s "$WORK/pipeline.lua" "$url" -- "$2") || args=("$url")
  pid=${PIDS[-1]}
  [[ -n ${NGINX_WORKER:-} ]] && pid=$NGINX_WORKER
  before=$(cpu_seconds "$pid")
  out=$(taskset -c 0 wrk -t1 -c64 -d${SECS}s "${args[@]}")
  after=$(cpu_seconds "$pid")
  awk -v b="$before" -v a="$after" '/requests in/{n=$1} /Requests\/sec/{r=$2}
    END{printf "%s %.2f\n", r, (a - b) * 1e6 / n}' <<< "$out"
}

for r in $(seq "$ROUNDS"); do
  for s in "${SERVERS[@]}"; do
    port=$(free_port)
    start_server "$s" "$port"
    NGINX_WORKER=
    [[ $s == nginx ]] && NGINX_WORKER=$(pgrep -P "${PIDS[-1]}" | head -1)
    url=http://127.0.0.1:$port/pong
    taskset -c 0 wrk -t1 -c64 -d1s "$url" >/dev/null   # warm-up, discarded
    read -r plain plain_us < <(wrk_run "$url")
    read -r piped piped_us < <(wrk_run "$url" 16)
    stop_server
    echo "$s $plain $piped $plain_us $piped_us" >> "$WORK/results"
    printf 'round %d %-15s keep-alive %10.0f req/s %6s µs/answer   pipelined x16 %10.0f req/s %6s µs/answer\n' \
      "$r" "$s" "$plain" "$plain_us" "$piped" "$piped_us" >&2
  done
done

echo "| server (1 thread, CPU 1) | keep-alive req/s | server CPU µs/answer | pipelined x16 req/s | server CPU µs/answer |"
echo "|---|---:|---:|---:|---:|"
for s in "${SERVERS[@]}"; do
  a=$(median_of "$WORK/results" 2 "$s")
  b=$(median_of "$WORK/results" 3 "$s")
  c=$(median_of "$WORK/results" 4 "$s")
  d=$(median_of "$WORK/results" 5 "$s")
  printf '| %s | %.0f | %.2f | %.0f | %.2f |\n' "$s" "$a" "$c" "$b" "$d"
  echo "$s $a $b $c $d" >> "$WORK/medians"
done
awk '{a[$1]=$2; b[$1]=$3; c[$1]=$4; d[$1]=$5} END{
  printf "\nstampede/nginx: keep-alive %.2fx, pipelined %.2fx\n", a["stampede"]/a["nginx"], b["stampede"]/b["nginx"]
  printf "io_uring/epoll server CPU per answer: keep-alive %.3f, pipelined %.3f\n", c["stampede-uring"]/c["stampede"], d["stampede-uring"]/d["stampede"]}' "$WORK/medians"

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
