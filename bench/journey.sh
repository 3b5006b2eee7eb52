#!/usr/bin/env bash
# What a journey costs the load generator against plain requests, in instructions
# (valgrind's callgrind, so two noisy cores can tell): a run of N2 requests less one
# of N1, one worker thread and eight connections, against the reference server
# (`serve --threads 1`), for
#   plain:   GET /json, the same request each time;
#   journey: three steps a user walks again and again — /json with a JSON capture,
#            /pong with the captured value in a header and a status check, /json with
#            a regular expression's capture (the issue's "three-step journey with two
#            extractions and a check");
#   feeder:  GET /json?id={{ id }} with a header from a CSV row, each request its row.
# Prints instructions a request (a step, for the journey) and the journey's ratio to
# three plain requests: the generator's own code, in user space.
#
# Then the CPU it costs, as the target states it (user and system time, the kernel's
# work for the sockets included): the server pinned to core 0 and the generator to
# core 1, plain and journey runs of N3 requests alternated ROUNDS times (closed load,
# eight connections, one thread: the generator is the limit), the median CPU time a
# request of each, and their ratio.
#
#   bash bench/journey.sh [BINARY=target/release/stampede]
source "$(dirname "$0")/lib.sh"
need_apt valgrind
B=$(realpath "${1:-$STAMPEDE}")
[ -x "$B" ] || (cd "$ROOT" && cargo build --release -q)
N1=3000
N2=15000

cat >"$WORK/three.toml" <<'EOF'
[[step]]
name = "hello"
url = "/json"
capture = [{ json = "$.message", as = "said" }]

[[step]]
name = "ping"
url = "/pong"
headers = { X-Said = "{{ said }}" }
check = ["status 200"]

[[step]]
name = "again"
url = "/json"
capture = [{ regexp = '"message":"([^"]+)"', as = "again" }]
EOF
{ echo "id,name"; for i in $(seq 1000); do echo "$i,user$i"; done; } >"$WORK/ids.csv"

"$B" serve --listen 127.0.0.1:0 --threads 1 --io epoll 2>"$WORK/server.err" &
PIDS+=($!)
for _ in $(seq 100); do grep -q listening "$WORK/server.err" && break; sleep 0.1; done
URL=$(grep -o "http://127.0.0.1:[0-9]*" "$WORK/server.err" | head -n 1)

ir() { callgrind_annotate "$1" 2>/dev/null | awk '/PROGRAM TOTALS/ && !n { gsub(",", "", $1); print $1; n = 1 }'; }
declare -A per
for kind in plain journey feeder; do
  case $kind in
    plain) args=("$URL/json") ;;
    journey) args=("$URL/" --journey "$WORK/three.toml") ;;
    feeder) args=("$URL/json?id={{ id }}" --feeder "$WORK/ids.csv" -H "X-Name: {{ name }}") ;;
  esac
  counts=()
  for n in $N1 $N2; do
    valgrind --tool=callgrind --callgrind-out-file="$WORK/$kind.$n" -q \
      "$B" load "${args[@]}" -n "$n" -c 8 -t 1 --io epoll -q >/dev/null 2>&1
    counts+=("$(ir "$WORK/$kind.$n")")
  done
  per[$kind]=$(((counts[1] - counts[0]) / (N2 - N1)))
  echo "$kind ${per[$kind]} instructions a request"
done
awk -v j="${per[journey]}" -v p="${per[plain]}" \
  'BEGIN { printf "a three-step journey costs %.2fx three plain requests, in instructions\n", j / p }'

N3=${N3:-200000}
ROUNDS=${ROUNDS:-5}
"$B" serve --listen 127.0.0.1:0 --threads 1 --io epoll 2>"$WORK/pinned.err" &
PIDS+=($!)
taskset -cp 0 "$!" >/dev/null
for _ in $(seq 100); do grep -q listening "$WORK/pinned.err" && break; sleep 0.1; done
PINNED=$(grep -o "http://127.0.0.1:[0-9]*" "$WORK/pinned.err" | head -n 1)
for round in $(seq "$ROUNDS"); do
  for kind in plain journey; do
    case $kind in
      plain) args=("$PINNED/json") ;;
      journey) args=("$PINNED/" --journey "$WORK/three.toml") ;;
    esac
    /usr/bin/time -f "%U %S" -o "$WORK/cpu.$kind.$round" \
      taskset -c 1 "$B" load "${args[@]}" -n "$N3" -c 8 -t 1 --io epoll -q >/dev/null 2>&1
    awk -v k=$kind -v n="$N3" '{ print k, ($1 + $2) / n * 1e6 }' "$WORK/cpu.$kind.$round" >>"$WORK/cpu"
  done
done
plain_us=$(median_of "$WORK/cpu" 2 plain)
journey_us=$(median_of "$WORK/cpu" 2 journey)
echo "CPU a request (user + system, median of $ROUNDS): plain ${plain_us} µs, journey step ${journey_us} µs"
awk -v j="$journey_us" -v p="$plain_us" \
  'BEGIN { printf "a three-step journey costs %.2fx the CPU of three plain requests\n", j / p }'
