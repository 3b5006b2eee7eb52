#!/usr/bin/env bash
# The batching mock's truth against the clients' figures: `stampede serve
# --llm-engine --llm-truth FILE` (one engine, on CPU 1) logs each completion it
# finishes as it scheduled it — the time from its arrival to its first token and to
# its end, and every gap between its tokens — and the clients on CPU 0 time them
# themselves. The log is emptied before each client run, and bench/llm-truth.py puts
# the run's percentiles (p50, p90, p99) beside the log's:
#
# - TTFT and E2EL, every client;
# - ITL over every gap between tokens (vLLM's and stampede's definition);
# - TPOT, each request's mean gap (vLLM's and stampede's; AIPerf's and GuideLLM's
#   "inter-token latency" is this per-request mean, and is compared with it).
#
# Cases, 400 prompts of 256 words asking for 32 tokens (`ignore_eos`), the engine
# capped at 32 sequences so a queue forms at the rate given:
#
# - stampede vllm bench serve at 40/s and at a capped concurrency of 16,
# - stampede aiperf profile and AIPerf (PyPI) at 40/s (Poisson),
# - stampede guidellm run and GuideLLM (PyPI) at a constant 40/s,
# - stampede load --openai chat --turns 4: conversations arriving at 10/s for 10 s,
#   each turn carrying the history, turns 50–150 ms apart.
#
# Each client run is timed (`time`: user + system CPU of its processes); a run of 16
# prompts per client family gives its start-up, and the CPU per streamed token past
# it is (run − start-up) / the tokens between. Medians of ROUNDS, clients alternating.
#
#   bash bench/llm-engine.sh [ROUNDS=3]
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-3}
PEERS=${LLM_PEERS:-/opt/stampede-llm-peers}
need_apt time
[ -x "$STAMPEDE" ] || (cd "$ROOT" && cargo build --release -q)
port=$(free_port)
TRUTH=$WORK/truth.jsonl
start_serve "$port" --llm-engine --llm-max-seqs 32 --llm-truth "$TRUTH"
base="http://127.0.0.1:$port"
: > "$WORK/rows"
: > "$WORK/cpu"

# row KIND RESULT CASE: the run's percentiles beside the engine's over the same
# requests (a ready check or warm-up included, a request or two in four hundred).
row() { python3 "$BENCH_DIR/llm-truth.py" "$1" "$2" "$TRUTH" "$3" >> "$WORK/rows"; }

# cpu NAME TOKENS TIMEFILE: the run's CPU seconds and tokens.
cpu() { echo "$1 $2 $(awk '{print $1 + $2}' "$3")" >> "$WORK/cpu"; }

vllm_run() {
  local name=$1 n=$2; shift 2
  : > "$TRUTH"
  /usr/bin/time -f "%U %S" -o "$WORK/t" taskset -c 0 "$STAMPEDE" vllm bench serve --base-url "$base" \
    --model stampede-mock --num-prompts "$n" --random-input-len 256 --random-output-len 32 \
    --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,90,99 \
    --ready-check-timeout-sec 0 --save-result --result-dir "$WORK" --result-filename v.json "$@" >/dev/null 2>&1
  cpu "$name" $((n * 32)) "$WORK/t"
  [ "$n" -lt 400 ] && return
  row vllm "$WORK/v.json" "$name"
}

aiperf_run() {
  local name=$1 n=$2 bin=$3
  : > "$TRUTH"
  rm -rf "$WORK/ap"
  /usr/bin/time -f "%U %S" -o "$WORK/t" taskset -c 0 $bin profile -m stampede-mock --url "$base" --endpoint-type completions --streaming \
    --request-rate 40 --request-rate-mode poisson --request-count "$n" --isl 256 --osl 32 \
    --extra-inputs ignore_eos:true --artifact-dir "$WORK/ap" --ui none --random-seed 1 --no-server-metrics \
    ${TOKENIZER:+--tokenizer "$TOKENIZER"} >/dev/null 2>&1
  cpu "$name" $((n * 32)) "$WORK/t"
  [ "$n" -lt 400 ] && return
  row aiperf "$WORK/ap/profile_export_aiperf.json" "$name"
}

guidellm_run() {
  local name=$1 n=$2 bin=$3
  : > "$TRUTH"
  rm -f "$WORK/g.json"
  /usr/bin/time -f "%U %S" -o "$WORK/t" taskset -c 0 $bin run \
    --backend "kind=openai_http,target=$base,model=stampede-mock,request_format=/v1/completions" \
    --profile kind=constant,rate=40 --constraint "kind=max_requests,count=$n" \
    --data kind=synthetic_text,prompt_tokens=256,output_tokens=32 \
    ${TOKENIZER:+--tokenizer "kind=hf_auto,model=$TOKENIZER"} \
    --output "kind=json,path=$WORK/g.json" --disable-progress >/dev/null 2>&1
  cpu "$name" $((n * 32)) "$WORK/t"
  [ "$n" -lt 400 ] && return
  row guidellm "$WORK/g.json" "$name"
}

chat_run() {
  : > "$TRUTH"
  taskset -c 0 "$STAMPEDE" load "$base/v1/chat/completions" --openai chat --turns 4 --system-prompt 128 \
    --input-tokens 64 --output-tokens 32 --ignore-eos --turn-delay 50ms-150ms --rate 10 -d 10s \
    --json "$WORK/c.json" >/dev/null 2>&1
  row stampede "$WORK/c.json" "load-chat turns-4,10-conversations/s"
}

if [ -x "$PEERS/bin/aiperf" ]; then
  TOKENIZER=$WORK/tokenizer
  word_tokenizer "$PEERS/bin/python" "$TOKENIZER"
fi

for r in $(seq "$ROUNDS"); do
  for n in 16 400; do
    vllm_run "vllm-bench-serve rate-40/s" "$n" --request-rate 40
    aiperf_run "stampede-aiperf rate-40/s" "$n" "$STAMPEDE aiperf"
    guidellm_run "stampede-guidellm constant-40/s" "$n" "$STAMPEDE guidellm"
    [ -x "$PEERS/bin/aiperf" ] && aiperf_run "AIPerf-0.13.0 rate-40/s" "$n" "$PEERS/bin/aiperf"
    [ -x "$PEERS/bin/guidellm" ] && guidellm_run "GuideLLM-0.8.1 constant-40/s" "$n" "$PEERS/bin/guidellm"
  done
  vllm_run "vllm-bench-serve concurrency-16" 400 --max-concurrency 16
  chat_run
done
machine
echo
echo "client case | metric | p | client ms | truth ms | client − truth  (medians of $ROUNDS)"
cut -d' ' -f1-4 "$WORK/rows" | sort -u | while read -r a b m p; do
  c=$(grep "^$a $b $m $p " "$WORK/rows" | awk '{print $5}' | median)
  t=$(grep "^$a $b $m $p " "$WORK/rows" | awk '{print $6}' | median)
  python3 -c "
import sys; c, t = float(sys.argv[5]), float(sys.argv[6])
print(f'{sys.argv[1]} {sys.argv[2]} | {sys.argv[3]} | p{sys.argv[4]} | {c:.2f} | {t:.2f} | {(c/t-1)*100:+.2f} %')" "$a" "$b" "$m" "$p" "$c" "$t"
done
echo
echo "client | CPU s, 16 prompts | CPU s, 400 prompts | µs per token past the start-up  (medians of $ROUNDS)"
cut -d' ' -f1-2 "$WORK/cpu" | sort -u | while read -r a b; do
  small=$( (grep "^$a $b 512 " "$WORK/cpu" || true) | awk '{print $4}' | median)
  big=$( (grep "^$a $b 12800 " "$WORK/cpu" || true) | awk '{print $4}' | median)
  [ "$small" = nan ] && continue
  python3 -c "import sys; s,b=float(sys.argv[3]),float(sys.argv[4]); print(f'{sys.argv[1]} {sys.argv[2]} | {s:.2f} | {b:.2f} | {(b-s)/(12800-512)*1e6:.1f}')" "$a" "$b" "$small" "$big"
done
