#!/usr/bin/env bash
# Instructions a request (valgrind's callgrind) of the client's and the server's
# HTTP/1.1, HTTP/2 and HTTP/3 paths, for comparing two builds where two noisy cores
# cannot tell a 1 % difference in time.
#   client: a run of N2 requests less one of N1, under callgrind, against a native
#           server (PEER, `serve --threads 1`);
#   server: under callgrind, one fresh server for N1 requests and one for N2 from a
#           native client, each dumped once its run is over (a dump between two runs
#           stalls the HTTP/3 endpoint under valgrind), the difference over N2 - N1.
# Startup and teardown cancel out in both.
#
#   bash bench/callgrind.sh BINARY [PEER=target/release/stampede] [PROTOCOLS="h1 h2 h3"]
source "$(dirname "$0")/lib.sh"
need_apt valgrind
B=$(realpath "$1")
PEER=$(realpath "${2:-$STAMPEDE}")
PROTOCOLS=${3:-h1 h2 h3}
N1=2000
N2=12000
[ -x "$PEER" ] || (cd "$ROOT" && cargo build --release -q)

# Instructions of a callgrind output file.
ir() { callgrind_annotate "$1" 2>/dev/null | awk '/PROGRAM TOTALS/ && !n { gsub(",", "", $1); print $1; n = 1 }'; }

server_args() { case $1 in h3) echo "--tls-self-signed --http3 --io epoll" ;; *) echo "--io epoll" ;; esac; }
client_args() { # PROTOCOL URL N
  case $1 in
    h1) echo "load $2/pong -n $3 -c 8 -t 1 --io epoll -q" ;;
    h2) echo "load $2/pong --http2 -n $3 -c 8 -t 1 --io epoll -q" ;;
    h3) echo "load $2/pong --http3 --insecure -n $3 -c 8 -t 1 -q" ;;
  esac
}

# Starts `$@ serve …` and sets SERVER (its pid) and URL once it listens; under
# valgrind the HTTP/3 endpoint comes up a moment after the line, so one more wait.
start_server() { # PROTOCOL COMMAND...
  local p=$1 err=$WORK/server.err
  shift
  : >"$err"
  # shellcheck disable=SC2046
  "$@" serve --listen 127.0.0.1:0 --threads 1 $(server_args "$p") 2>"$err" &
  SERVER=$!
  PIDS+=("$SERVER")
  for _ in $(seq 300); do grep -q listening "$err" && break; sleep 0.1; done
  URL=$(grep -o "https\?://127.0.0.1:[0-9]*" "$err" | head -n 1)
  if [ "$1" = valgrind ] && [ "$p" = h3 ]; then sleep 3; fi
}

for p in $PROTOCOLS; do
  start_server "$p" "$PEER"
  counts=()
  for n in $N1 $N2; do
    # shellcheck disable=SC2046
    valgrind --tool=callgrind --callgrind-out-file="$WORK/client.$n" -q "$B" $(client_args "$p" "$URL" "$n") >/dev/null 2>&1
    counts+=("$(ir "$WORK/client.$n")")
  done
  kill "$SERVER"; wait "$SERVER" 2>/dev/null || true
  echo "client $p $(((counts[1] - counts[0]) / (N2 - N1))) instructions a request"

  counts=()
  for n in $N1 $N2; do
    start_server "$p" valgrind --tool=callgrind --callgrind-out-file="$WORK/server.$n" -q "$B"
    # shellcheck disable=SC2046
    "$PEER" $(client_args "$p" "$URL" "$n") >/dev/null
    callgrind_control -d "$SERVER" >/dev/null 2>&1
    sleep 2
    counts+=("$(ir "$(ls -t "$WORK"/server."$n".* | head -n 1)")")
    kill -9 "$SERVER"; wait "$SERVER" 2>/dev/null || true
  done
  echo "server $p $(((counts[1] - counts[0]) / (N2 - N1))) instructions a request"
done
