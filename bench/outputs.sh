#!/usr/bin/env bash
# What the outputs cost: the same run (N requests, 64 keep-alive connections, one
# thread pinned to CPU 0, against `stampede serve --threads 1` on CPU 1) without
# outputs, with --raw as CSV and as NDJSON, scraped by Prometheus at /metrics (1 s
# scrape interval), and pushing to Prometheus (remote write), InfluxDB and an OTLP
# receiver. Modes run in turn, round after round (A B C …, A B C …); the table gives
# medians of the client's CPU (user+sys, the records' writer thread included) per
# request, its max RSS and req/s, each mode's difference from the run without
# outputs, and the limit verdict most of its runs gave.
#
#   bash bench/outputs.sh [ROUNDS=5] [REQUESTS=1000000]
#
# Prometheus and InfluxDB (Debian's packages) and the tests' OTLP receiver (with
# STAMPEDE_OTLP_PYTHON, a Python with opentelemetry-proto) are started here on loopback,
# pinned to CPU 1, when installed; the modes that need one are left out when not.
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-5}
N=${2:-1000000}
need_apt time
[ -x "$STAMPEDE" ] || (cd "$ROOT" && cargo build --release -q)
SERVE_PORT=$(free_port)
start_serve "$SERVE_PORT" --no-http2
URL="http://127.0.0.1:$SERVE_PORT/pong"
MODES=(none raw-csv raw-ndjson)

METRICS_PORT=$(free_port)
if command -v prometheus >/dev/null 2>&1; then
  PROM_PORT=$(free_port)
  cat > "$WORK/prometheus.yml" <<YML
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: stampede
    static_configs:
      - targets: ['127.0.0.1:$METRICS_PORT']
YML
  taskset -c 1 prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/prom" \
    --web.listen-address=127.0.0.1:"$PROM_PORT" --web.enable-remote-write-receiver >/dev/null 2>&1 &
  PIDS+=("$!")
  wait_port "$PROM_PORT"
  MODES+=(metrics prometheus-rw)
fi
if command -v influxd >/dev/null 2>&1; then
  INFLUX_PORT=$(free_port)
  cat > "$WORK/influxdb.conf" <<CONF
reporting-disabled = true
bind-address = "127.0.0.1:$(free_port)"
[meta]
  dir = "$WORK/influx/meta"
[data]
  dir = "$WORK/influx/data"
  wal-dir = "$WORK/influx/wal"
[http]
  bind-address = "127.0.0.1:$INFLUX_PORT"
  log-enabled = false
CONF
  taskset -c 1 influxd -config "$WORK/influxdb.conf" >/dev/null 2>&1 &
  PIDS+=("$!")
  wait_port "$INFLUX_PORT"
  curl -s -XPOST "http://127.0.0.1:$INFLUX_PORT/query" --data-urlencode "q=CREATE DATABASE stampede" >/dev/null
  MODES+=(influxdb)
fi

if [ -n "${STAMPEDE_OTLP_PYTHON:-}" ]; then
  taskset -c 1 "$STAMPEDE_OTLP_PYTHON" "$ROOT/crates/cli/tests/peers/otlp_receiver.py" /dev/null \
    > "$WORK/otlp.port" 2>/dev/null &
  PIDS+=("$!")
  for _ in $(seq 100); do grep -q ready "$WORK/otlp.port" 2>/dev/null && break; sleep 0.1; done
  OTLP_PORT=$(awk '{print $2}' "$WORK/otlp.port")
  MODES+=(otlp)
fi

run_mode() {
  local mode=$1 out=$2 extra=()
  case $mode in
    raw-csv) extra=(--raw "$WORK/records.csv") ;;
    raw-ndjson) extra=(--raw "$WORK/records.ndjson") ;;
    metrics) extra=(--metrics-listen "127.0.0.1:$METRICS_PORT") ;;
    prometheus-rw) extra=(--out "prometheus-rw=http://127.0.0.1:$PROM_PORT/api/v1/write") ;;
    influxdb) extra=(--out "influxdb=http://127.0.0.1:$INFLUX_PORT/stampede") ;;
    otlp) extra=(--out "otlp=http://127.0.0.1:$OTLP_PORT") ;;
  esac
  /usr/bin/time -f "%U %S %M" -o "$out.time" taskset -c 0 "$STAMPEDE" load "$URL" \
    -n "$N" -c 64 -t 1 -q --json "$out.json" "${extra[@]}" > /dev/null 2> "$out.err"
  rm -f "$WORK/records.csv" "$WORK/records.ndjson"
}

taskset -c 0 "$STAMPEDE" load "$URL" -n 100000 -c 64 -t 1 -q > /dev/null  # warm-up, discarded
for r in $(seq "$ROUNDS"); do
  for m in "${MODES[@]}"; do
    out=$WORK/$m.$r
    run_mode "$m" "$out"
    read -r u sy rss < "$out.time"
    read -r rps n verdict < <(python3 -c "
import json; j = json.load(open('$out.json'))
print(j['throughput_rps'], j['requests']['completed'] + j['requests']['failed'], j.get('limit', {}).get('verdict', '?'))")
    cpu=$(python3 -c "print(f'{($u + $sy) * 1e6 / max($n, 1):.3f}')")
    echo "$m $rps $cpu $rss $verdict" >> "$WORK/results"
    printf '%-14s round %d %10.0f req/s %7s µs CPU/req %7s KB max RSS  %s\n' "$m" "$r" "$rps" "$cpu" "$rss" "$verdict" >&2
  done
done

echo
echo "| output | req/s (median of $ROUNDS) | client CPU µs/request | vs none | max RSS KB | vs none | limit |"
echo "|---|---:|---:|---:|---:|---:|---|"
base_cpu=$(median_of "$WORK/results" 3 none)
base_rss=$(median_of "$WORK/results" 4 none)
for m in "${MODES[@]}"; do
  rps=$(median_of "$WORK/results" 2 "$m")
  cpu=$(median_of "$WORK/results" 3 "$m")
  rss=$(median_of "$WORK/results" 4 "$m")
  limit=$(awk -v m="$m" '$1 == m {print $5}' "$WORK/results" | sort | uniq -c | sort -rn | awk 'NR == 1 {print $2 " (" $1 " of '"$ROUNDS"')"}')
  python3 -c "print(f'| $m | {$rps:.0f} | {$cpu:.3f} | {$cpu - $base_cpu:+.3f} | {$rss:.0f} | {$rss - $base_rss:+.0f} | $limit |')"
done
echo
echo "$N requests a run, one client thread on CPU 0, the server on CPU 1."
machine
