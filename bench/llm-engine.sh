#!/usr/bin/env bash
# The batching mock's truth against the client's figures: `vllm bench serve` against
# `stampede serve --llm-engine` (one engine, on CPU 1; the client on CPU 0), at a
# fixed rate and at a capped concurrency. The engine times each request from its
# arrival at the server to its first token and to its end, and exports the sums
# (vllm:time_to_first_token_seconds, vllm:e2e_request_latency_seconds); the client
# times from each request's intended start. Their means are compared over the
# run's requests (the scrapes' changes, taken with --server-metrics after the ready
# check), with the queue the engine saw.
#
#   bash bench/llm-engine.sh [ROUNDS=3]
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-3}
[ -x "$STAMPEDE" ] || (cd "$ROOT" && cargo build --release -q)
port=$(free_port)
start_serve "$port" --llm-engine --llm-max-seqs 32
base="http://127.0.0.1:$port"
: > "$WORK/rows"

# run NAME ARGS...: one vllm bench serve run; prints "name client_ttft engine_ttft
# client_e2el engine_e2el peak_waiting" in ms.
run() {
  local name=$1; shift
  taskset -c 0 "$STAMPEDE" vllm bench serve --base-url "$base" --model stampede-mock \
    --num-prompts 400 --random-input-len 256 --random-output-len 32 \
    --server-metrics "$base/metrics" --server-metrics-every 250ms \
    --percentile-metrics ttft,e2el --save-result --result-dir "$WORK" \
    --result-filename v.json --json "$WORK/s.json" "$@" >/dev/null 2>&1
  python3 - "$name" "$WORK/v.json" "$WORK/s.json" <<'PY'
import json, sys
name, v, s = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
series = s["server"]["series"]
def delta(k): return series[k][-1][1] - series[k][0][1]
n = delta("vllm:time_to_first_token_seconds_count")
ttft = delta("vllm:time_to_first_token_seconds_sum") / n * 1000
e2e_n = delta("vllm:request_success_total")
waiting = max(p[1] for p in series["vllm:num_requests_waiting"])
# The engine's end-to-end sum is not scraped by default; E2E = TTFT + decode.
dec = delta("vllm:request_decode_time_seconds_sum") / delta("vllm:request_decode_time_seconds_count") * 1000
print(name, round(v["mean_ttft_ms"], 2), round(ttft, 2), round(v["mean_e2el_ms"], 2), round(ttft + dec, 2), int(waiting))
PY
}

for r in $(seq "$ROUNDS"); do
  run "rate-40/s" --request-rate 40 >> "$WORK/rows"
  run "concurrency-16" --max-concurrency 16 >> "$WORK/rows"
done
machine
echo "case  client_mean_ttft_ms  engine_mean_ttft_ms  client_mean_e2el_ms  engine_mean_e2el_ms  peak_waiting  (medians of $ROUNDS)"
for c in rate-40/s concurrency-16; do
  row=()
  for col in 2 3 4 5 6; do row+=("$(grep "^$c " "$WORK/rows" | awk -v c=$col '{print $c}' | median)"); done
  python3 -c "import sys; a=[float(x) for x in sys.argv[2:]]; print(sys.argv[1], *a, 'ttft %+.2f %%' % ((a[0]/a[1]-1)*100), 'e2el %+.2f %%' % ((a[2]/a[3]-1)*100))" "$c" "${row[@]}"
done
