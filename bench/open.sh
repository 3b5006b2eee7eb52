#!/usr/bin/env bash
# The reference open-model run: 50,000 requests per second for 60 s (Gatling's
# "attempted 50k RPS"), against stampede serve with one thread on CPU 1, the generator
# on CPU 0. Reports target vs achieved rate, send lag and the latency spectrum; repeats
# ROUNDS times and gives medians.
#
#   bash bench/open.sh [ROUNDS=3] [SECONDS=60] [RATE=50000]
#
# With `cost` first, the cost of a fixed rate against the closed model instead (see
# cost_mode below):
#
#   bash bench/open.sh cost [ROUNDS=3] [SECONDS=5] [RATES="10000 50000 100000 200000"]
source "$(dirname "$0")/lib.sh"
# ---- cost mode --------------------------------------------------------------------
# bash bench/open.sh cost [ROUNDS=3] [SECONDS=5] [RATES="10000 50000 100000 200000"]
#
# CPU per request at fixed rates against the closed model at the same connection count
# (64 connections, one thread, /pong, `stampede serve --threads 1 --no-http2` on CPU 1,
# the client on CPU 0), with system calls and context switches per request (perf, when
# installed), send lag, corrected p99 and the rate held; rounds alternate the clients.
# WRK2=/path/to/wrk2 runs wrk2 (built from giltene/wrk2) beside it at each rate.
cost_mode() {
  local rounds=${1:-3} secs=${2:-5} rates=${3:-"10000 50000 100000 200000"} port r rate
  [ -x "$STAMPEDE" ] || (cd "$ROOT" && cargo build --release -q)
  port=$(free_port)
  start_serve "$port" --no-http2
  local url="http://127.0.0.1:$port/pong"
  : > "$WORK/cost"
  for r in $(seq "$rounds"); do
    for rate in closed $rates; do
      cost_stampede "$url" "$rate" "$secs" "$r"
      if [ -n "${WRK2:-}" ] && [ "$rate" != closed ]; then cost_wrk2 "$url" "$rate" "$secs" "$r"; fi
    done
  done
  python3 - "$WORK/cost" "$rounds" <<'PY'
import statistics as st, sys
rows = {}
for l in open(sys.argv[1]):
    tool, rate, *v = l.split()
    rows.setdefault((tool, rate), []).append([float(x) for x in v])
med = {k: [st.median(c) for c in zip(*v)] for k, v in rows.items()}
closed = med[("stampede", "closed")][0]
print(f"| offered req/s | client | CPU µs/request (median of {sys.argv[2]}) | × closed | syscalls/request | context switches/request | send lag p99 µs | corrected p99 µs | held % | client core busy % | server core busy % |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for (tool, rate), m in sorted(med.items(), key=lambda kv: (kv[0][1] != "closed", float(kv[0][1]) if kv[0][1] != "closed" else 0, kv[0][0])):
    cpu, sc, cs, lag, p99, held, cb, sb = m
    f = lambda x: "-" if x < 0 else f"{x:.2f}"
    g = lambda x: "-" if x < 0 else f"{x:.0f}"
    print(f"| {rate} | {tool} | {cpu:.2f} | {cpu / closed:.2f} | {f(sc)} | {f(cs)} | {g(lag)} | {g(p99)} | {held:.2f} | {cb:.0f} | {sb:.0f} |")
PY
  echo
  machine 2>/dev/null || true
}

# counted OUT CMD...: runs CMD with its CPU time (OUT.time) and, under perf when there is
# one, its system calls and context switches (OUT.perf: "syscalls switches").
counted() {
  local out=$1; shift
  if command -v perf >/dev/null 2>&1; then
    /usr/bin/time -f "%U %S %M" -o "$out.time" perf stat -x, -o "$out.pstat" \
      -e raw_syscalls:sys_enter,context-switches "$@" > "$out" 2>"$out.err" || true
    awk -F, '/raw_syscalls/{s=$1} /context-switches/{c=$1} END{print s+0, c+0}' "$out.pstat" > "$out.perf"
  else
    /usr/bin/time -f "%U %S %M" -o "$out.time" "$@" > "$out" 2>"$out.err" || true
    echo "-1 -1" > "$out.perf"
  fi
}

# core_busy CPU: jiffies CPU has been busy so far (all but idle and iowait).
core_busy() { awk -v c="cpu$1" '$1 == c {print $2 + $3 + $4 + $7 + $8}' /proc/stat; }

cost_stampede() {
  local url=$1 rate=$2 secs=$3 r=$4 out="$WORK/cost.s.$2.$4" args=() b0 b1 a0 a1
  [ "$rate" = closed ] || args=(--rate "$rate")
  b0=$(core_busy 0); b1=$(core_busy 1)
  counted "$out" taskset -c 0 "$STAMPEDE" load "$url" "${args[@]}" -d "${secs}s" -c 64 -t 1 -q --json "$out.json"
  a0=$(core_busy 0); a1=$(core_busy 1)
  python3 - "$out" "$rate" "$secs" "$((a0 - b0))" "$((a1 - b1))" "$(getconf CLK_TCK)" <<'PY' >> "$WORK/cost"
import json, sys
out, rate, secs, c0, c1, hz = sys.argv[1], sys.argv[2], float(sys.argv[3]), *map(float, sys.argv[4:])
r = json.load(open(out + ".json"))
u, s, _ = map(float, open(out + ".time").read().split())
sc, cs = map(float, open(out + ".perf").read().split())
n = max(r["requests"]["completed"], 1)
o = r.get("open") or {}
lag = {p["p"]: p["us"] for p in (o.get("send_lag") or {}).get("percentiles", [])}.get(99.0, -1)
p99 = {p["p"]: p["us"] for p in r["latency"]["percentiles"]}[99.0]
held = 100 * n / r["duration_s"] / float(rate) if rate != "closed" else 100
per = lambda x: x / n if x >= 0 else -1
print("stampede", rate, (u + s) * 1e6 / n, per(sc), per(cs), lag, p99, held,
      100 * c0 / hz / secs, 100 * c1 / hz / secs)
PY
  printf 'round %d stampede %-7s %s\n' "$r" "$rate" "$(tail -1 "$WORK/cost")" >&2
}

cost_wrk2() {
  local url=$1 rate=$2 secs=$3 r=$4 out="$WORK/cost.w.$2.$4" b0 b1 a0 a1
  b0=$(core_busy 0); b1=$(core_busy 1)
  counted "$out" taskset -c 0 "$WRK2" -t 1 -c 64 -d "${secs}s" -R "$rate" --latency "$url"
  a0=$(core_busy 0); a1=$(core_busy 1)
  python3 - "$out" "$rate" "$secs" "$((a0 - b0))" "$((a1 - b1))" "$(getconf CLK_TCK)" <<'PY' >> "$WORK/cost"
import re, sys
out, rate, secs, c0, c1, hz = sys.argv[1], sys.argv[2], float(sys.argv[3]), *map(float, sys.argv[4:])
t = open(out).read()
u, s, _ = map(float, open(out + ".time").read().split())
sc, cs = map(float, open(out + ".perf").read().split())
n = float(re.search(r"(\d+) requests in", t).group(1))
unit = {"us": 1, "ms": 1e3, "s": 1e6, "m": 6e7}
m = re.search(r"99\.000%\s+([\d.]+)(us|ms|s|m)\b", t)
p99 = float(m.group(1)) * unit[m.group(2)] if m else -1
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", t).group(1))
per = lambda x: x / n if x >= 0 else -1
print("wrk2", rate, (u + s) * 1e6 / max(n, 1), per(sc), per(cs), -1, p99, 100 * rps / float(rate),
      100 * c0 / hz / secs, 100 * c1 / hz / secs)
PY
  printf 'round %d wrk2     %-7s %s\n' "$r" "$rate" "$(tail -1 "$WORK/cost")" >&2
}

if [ "${1:-}" = cost ]; then
  shift
  cost_mode "$@"
  exit 0
fi

ROUNDS=${1:-3}
SECS=${2:-60}
RATE=${3:-50000}
[ -x "$STAMPEDE" ] || (cd "$ROOT" && cargo build --release -q)
PORT=$(free_port)
start_serve "$PORT"
for r in $(seq "$ROUNDS"); do
  taskset -c 0 "$STAMPEDE" load "http://127.0.0.1:$PORT/pong" --rate "$RATE" -d "${SECS}s" -c 64 -t 1 -q \
    --json "$WORK/open.$r.json" > "$WORK/open.$r.txt" 2>&1
  python3 - "$WORK/open.$r.json" "$RATE" <<'PY' | tee -a "$WORK/rows" >&2
import json, sys
r = json.load(open(sys.argv[1])); o = r["open"]; target = float(sys.argv[2])
done = r["requests"]["completed"] / r["duration_s"]
lag = {p["p"]: p["us"] for p in o["send_lag"]["percentiles"]}
lat = {p["p"]: p["us"] for p in r["latency"]["percentiles"]}
print(f'{o["achieved_rate"]:.1f} {done:.1f} {100*o["achieved_rate"]/target:.3f} {lag[50.0]} {lag[99.0]} {o["send_lag"]["max_us"]} {lat[50.0]} {lat[99.0]} {lat[99.9]} {r["latency"]["max_us"]} {o["never_sent"]} {r["requests"]["failed"]}')
PY
done
echo "| metric (median of $ROUNDS) | value |"
echo "|---|---:|"
names=("sent req/s" "completed req/s" "sent / target %" "send lag p50 µs" "send lag p99 µs" "send lag max µs" "latency p50 µs" "latency p99 µs" "latency p99.9 µs" "latency max µs" "never sent" "failed")
for i in $(seq 1 12); do
  printf '| %s | %s |\n' "${names[$((i-1))]}" "$(median_of "$WORK/rows" "$i")"
done
echo
machine 2>/dev/null || true
