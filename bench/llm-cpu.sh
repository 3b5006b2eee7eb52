#!/usr/bin/env bash
# Client CPU per streamed token where the client's cost matters: a busy engine.
# `stampede serve --llm-engine` on CPU 1 runs STREAMS sequences at once in steps of
# 5 ms (+ 5 µs a sequence), so every step gives every running completion its next
# token, as a serving engine does — STREAMS × 200 tokens a second at most. Each client
# on CPU 0 keeps STREAMS completions under way (vLLM's --max-concurrency, AIPerf's
# --concurrency, GuideLLM's concurrent profile) asking for 128 tokens (`ignore_eos`):
# a run of 16 prompts gives its start-up, a run of PROMPTS its total, and the CPU per
# token past the start-up is (total − start-up) / the tokens between. Each run's wall
# time gives the token rate it reached (the engine's ceiling, or the client's when the
# client is the limit). Medians of ROUNDS, clients alternating.
#
#   bash bench/llm-cpu.sh [ROUNDS=3] [STREAMS=64] [PROMPTS=320]
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-3}
STREAMS=${2:-64}
PROMPTS=${3:-320}
OUT_TOKENS=128
PEERS=${LLM_PEERS:-/opt/stampede-llm-peers}
need_apt time
[ -x "$STAMPEDE" ] || (cd "$ROOT" && cargo build --release -q)
port=$(free_port)
start_serve "$port" --llm-engine --llm-step 5ms --llm-per-seq 5us --llm-prefill-per-token 1us \
  --llm-max-seqs "$STREAMS"
base="http://127.0.0.1:$port"
: > "$WORK/cpu"
if [ -x "$PEERS/bin/aiperf" ]; then
  TOKENIZER=$WORK/tokenizer
  word_tokenizer "$PEERS/bin/python" "$TOKENIZER"
fi

# timed NAME PROMPTS COMMAND...: the run's user + system CPU and wall seconds, pinned
# to CPU 0, beside its token count.
timed() {
  local name=$1 n=$2
  shift 2
  /usr/bin/time -f "%U %S %e" -o "$WORK/t" taskset -c 0 "$@" > "$WORK/log" 2>&1 ||
    { echo "$name failed:" >&2; tail -5 "$WORK/log" >&2; return 0; }
  echo "$name $n $(awk '{print $1 + $2, $3}' "$WORK/t")" >> "$WORK/cpu"
}

vllm_run() {
  timed "$1" "$2" "$STAMPEDE" vllm bench serve --base-url "$base" --model stampede-mock \
    --num-prompts "$2" --random-input-len 64 --random-output-len "$OUT_TOKENS" --ignore-eos \
    --max-concurrency "$STREAMS" --ready-check-timeout-sec 0
}

aiperf_run() {
  rm -rf "$WORK/ap"
  timed "$1" "$2" $3 profile -m stampede-mock --url "$base" --endpoint-type completions \
    --streaming --concurrency "$STREAMS" --request-count "$2" --isl 64 --osl "$OUT_TOKENS" \
    --extra-inputs ignore_eos:true --artifact-dir "$WORK/ap" --ui none --random-seed 1 \
    --no-server-metrics ${TOKENIZER:+--tokenizer "$TOKENIZER"}
}

guidellm_run() {
  rm -f "$WORK/g.json"
  timed "$1" "$2" $3 run \
    --backend "kind=openai_http,target=$base,model=stampede-mock,request_format=/v1/completions" \
    --profile "kind=concurrent,streams=$STREAMS" --constraint "kind=max_requests,count=$2" \
    --data "kind=synthetic_text,prompt_tokens=64,output_tokens=$OUT_TOKENS" \
    ${TOKENIZER:+--tokenizer "kind=hf_auto,model=$TOKENIZER"} \
    --output "kind=json,path=$WORK/g.json" --disable-progress
}

for r in $(seq "$ROUNDS"); do
  for n in 16 "$PROMPTS"; do
    vllm_run "stampede-vllm-bench-serve" "$n"
    aiperf_run "stampede-aiperf-profile" "$n" "$STAMPEDE aiperf"
    guidellm_run "stampede-guidellm-run" "$n" "$STAMPEDE guidellm"
    [ -x "$PEERS/bin/aiperf" ] && aiperf_run "AIPerf-0.13.0" "$n" "$PEERS/bin/aiperf"
    [ -x "$PEERS/bin/guidellm" ] && guidellm_run "GuideLLM-0.8.1" "$n" "$PEERS/bin/guidellm"
  done
done
machine
echo
echo "$STREAMS streams of $OUT_TOKENS tokens, 5 ms steps (at most $((STREAMS * 200)) tokens/s); medians of $ROUNDS"
echo "client | CPU s, 16 prompts | CPU s, $PROMPTS prompts | wall s, $PROMPTS | tokens/s reached | µs per token past the start-up"
tokens=$(((PROMPTS - 16) * OUT_TOKENS))
cut -d' ' -f1 "$WORK/cpu" | sort -u | while read -r name; do
  small=$(awk -v n="$name" '$1 == n && $2 == 16 {print $3}' "$WORK/cpu" | median)
  big=$(awk -v n="$name" -v p="$PROMPTS" '$1 == n && $2 == p {print $3}' "$WORK/cpu" | median)
  wall=$(awk -v n="$name" -v p="$PROMPTS" '$1 == n && $2 == p {print $4}' "$WORK/cpu" | median)
  python3 -c "import sys; s, b, w, t, all_ = map(float, sys.argv[2:]); print(f'{sys.argv[1]} | {s:.2f} | {b:.2f} | {w:.2f} | {all_ / w:,.0f} | {(b - s) / t * 1e6:.1f}')" \
    "$name" "$small" "$big" "$wall" "$tokens" "$((PROMPTS * OUT_TOKENS))"
done
