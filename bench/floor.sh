#!/usr/bin/env bash
# How far a keep-alive load generator is above the kernel's floor, and whether io_uring
# lowers that floor. `stampede serve --threads 1` on CPU 1 answers /pong; on CPU 0 run in
# turn, round after round: bench/probe's epoll client (one send and one recv per request,
# nothing else), its io_uring client (all sends and receives of a wake-up in one
# io_uring_enter), stampede (as `stampede wrk`) on epoll and on io_uring (STAMPEDE_IO)
# and wrk, each with one thread and CONNS (64) connections. The table gives medians of req/s, client CPU per request and how busy
# each core was; the probes' CPU per request is what the exchange itself costs.
#
#   bash bench/floor.sh [ROUNDS=5] [SECONDS=5] [CONNS=64]
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-5}
SECS=${2:-5}
CONNS=${3:-64}
install_peers
(cd "$BENCH_DIR/probe" && cargo build --release -q)
PROBE=$BENCH_DIR/probe/target/release/stampede-probe
PORT=$(free_port)
start_serve "$PORT" --no-http2
URL=http://127.0.0.1:$PORT/pong
CLIENTS=(probe-epoll probe-uring stampede-epoll stampede-uring wrk)

run_client() {
  local name=$1 out=$2
  case $name in
    probe-epoll) timed "$out" taskset -c 0 "$PROBE" epoll 127.0.0.1:"$PORT" "$CONNS" "$SECS" ;;
    probe-uring) timed "$out" taskset -c 0 "$PROBE" uring 127.0.0.1:"$PORT" "$CONNS" "$SECS" ;;
    stampede-epoll) timed "$out" env STAMPEDE_IO=epoll taskset -c 0 "$STAMPEDE" wrk -t1 -c"$CONNS" -d${SECS}s "$URL" ;;
    stampede-uring) timed "$out" env STAMPEDE_IO=io_uring taskset -c 0 "$STAMPEDE" wrk -t1 -c"$CONNS" -d${SECS}s "$URL" ;;
    wrk) timed "$out" taskset -c 0 wrk -t1 -c"$CONNS" -d${SECS}s "$URL" ;;
  esac
}

taskset -c 0 "$STAMPEDE" wrk -t1 -c64 -d1s "$URL" >/dev/null  # warm-up, discarded
for r in $(seq "$ROUNDS"); do
  for c in "${CLIENTS[@]}"; do
    out=$WORK/$c.$r
    read -r rps _ cpu_us user_us _ client_busy server_busy < <(busy_run "$SERVE_PID" "${c%%-*}" "$out" \
      run_client "$c" "$out")
    echo "$c $rps $cpu_us $user_us $client_busy $server_busy" >> "$WORK/results"
    printf 'round %d %-12s %10.0f req/s %6s µs CPU/req  cores busy: client %3s %%, server %3s %%\n' \
      "$r" "$c" "$rps" "$cpu_us" "$client_busy" "$server_busy" >&2
  done
done

echo
echo "| client (CPU 0) | req/s (median of $ROUNDS) | client CPU µs/request | of which user µs | client core busy % | server core busy % |"
echo "|---|---:|---:|---:|---:|---:|"
for c in "${CLIENTS[@]}"; do
  col() { median_of "$WORK/results" "$1" "$c"; }
  printf '| %s | %.0f | %.2f | %.2f | %.0f | %.0f |\n' "$c" "$(col 2)" "$(col 3)" "$(col 4)" "$(col 5)" "$(col 6)"
done
echo
machine
