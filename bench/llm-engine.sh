#!/usr/bin/env bash
# The batching mock's truth against the clients' figures: `stampede serve
# --llm-engine` (one engine, on CPU 1) times each request from its arrival to its
# first token, its decode and its end, and exports the sums under vLLM's names; the
# clients on CPU 0 time them themselves. Each run's truth is the change of those sums
# over the change of their counts, read from /metrics before and after the run:
#
# - TTFT: vllm:time_to_first_token_seconds
# - ITL (the time per token after the first; every completion has 32 tokens, so a
#   mean per request and the engine's mean per token weigh alike):
#   vllm:request_decode_time_seconds over (generation tokens − completions)
# - E2EL: vllm:e2e_request_latency_seconds
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
start_serve "$port" --llm-engine --llm-max-seqs 32
base="http://127.0.0.1:$port"
: > "$WORK/rows"
: > "$WORK/cpu"

# truth: "ttft_sum ttft_count decode_sum e2e_sum gen_tokens" so far.
truth() {
  curl -s "$base/metrics" | awk '
    /^vllm:time_to_first_token_seconds_sum/{a=$2} /^vllm:time_to_first_token_seconds_count/{b=$2}
    /^vllm:request_decode_time_seconds_sum/{c=$2} /^vllm:e2e_request_latency_seconds_sum/{d=$2}
    /^vllm:generation_tokens_total/{e=$2} END{print a, b, c, d, e}'
}

# row NAME "TTFT ITL E2EL" (client means, ms) BEFORE AFTER: the client's means beside
# the engine's over the same requests (ready checks and warm-ups included, a request
# or two in four hundred).
row() {
  python3 - "$@" <<'PY' >> "$WORK/rows"
import sys
name, client = sys.argv[1], [float(x) for x in sys.argv[2].split()]
b, a = [float(x) for x in sys.argv[3:8]], [float(x) for x in sys.argv[8:13]]
n = a[1] - b[1]
truth = [(a[0] - b[0]) / n * 1000, (a[2] - b[2]) / ((a[4] - b[4]) - n) * 1000, (a[3] - b[3]) / n * 1000]
print(name, *[f"{x:.3f}" for x in client + truth])
PY
}

# cpu NAME TOKENS TIMEFILE: the run's CPU seconds and tokens.
cpu() { echo "$1 $2 $(awk '{print $1 + $2}' "$3")" >> "$WORK/cpu"; }

vllm_run() {
  local name=$1 n=$2; shift 2
  local before; before=$(truth)
  /usr/bin/time -f "%U %S" -o "$WORK/t" taskset -c 0 "$STAMPEDE" vllm bench serve --base-url "$base" \
    --model stampede-mock --num-prompts "$n" --random-input-len 256 --random-output-len 32 \
    --ready-check-timeout-sec 0 --save-result --result-dir "$WORK" --result-filename v.json "$@" >/dev/null 2>&1
  cpu "$name" $((n * 32)) "$WORK/t"
  [ "$n" -lt 400 ] && return
  row "$name" "$(python3 -c "import json; d=json.load(open('$WORK/v.json')); print(d['mean_ttft_ms'], d['mean_tpot_ms'], d['mean_e2el_ms'])")" $before $(truth)
}

aiperf_run() {
  local name=$1 n=$2 bin=$3
  local before; before=$(truth)
  rm -rf "$WORK/ap"
  /usr/bin/time -f "%U %S" -o "$WORK/t" taskset -c 0 $bin profile -m stampede-mock --url "$base" --endpoint-type completions --streaming \
    --request-rate 40 --request-rate-mode poisson --request-count "$n" --isl 256 --osl 32 \
    --extra-inputs ignore_eos:true --artifact-dir "$WORK/ap" --ui none --random-seed 1 --no-server-metrics \
    ${TOKENIZER:+--tokenizer "$TOKENIZER"} >/dev/null 2>&1
  cpu "$name" $((n * 32)) "$WORK/t"
  [ "$n" -lt 400 ] && return
  row "$name" "$(python3 -c "import json; d=json.load(open('$WORK/ap/profile_export_aiperf.json')); print(d['time_to_first_token']['avg'], d['inter_token_latency']['avg'], d['request_latency']['avg'])")" $before $(truth)
}

guidellm_run() {
  local name=$1 n=$2 bin=$3
  local before; before=$(truth)
  rm -f "$WORK/g.json"
  /usr/bin/time -f "%U %S" -o "$WORK/t" taskset -c 0 $bin run \
    --backend "kind=openai_http,target=$base,model=stampede-mock,request_format=/v1/completions" \
    --profile kind=constant,rate=40 --constraint "kind=max_requests,count=$n" \
    --data kind=synthetic_text,prompt_tokens=256,output_tokens=32 \
    ${TOKENIZER:+--tokenizer "kind=hf_auto,model=$TOKENIZER"} \
    --output "kind=json,path=$WORK/g.json" --disable-progress >/dev/null 2>&1
  cpu "$name" $((n * 32)) "$WORK/t"
  [ "$n" -lt 400 ] && return
  row "$name" "$(python3 -c "
import json; m=json.load(open('$WORK/g.json'))['benchmarks'][0]['metrics']
s=lambda k: m[k]['successful']['mean']
print(s('time_to_first_token_ms'), s('inter_token_latency_ms'), s('request_latency') * 1000)")" $before $(truth)
}

chat_run() {
  local before; before=$(truth)
  taskset -c 0 "$STAMPEDE" load "$base/v1/chat/completions" --openai chat --turns 4 --system-prompt 128 \
    --input-tokens 64 --output-tokens 32 --ignore-eos --turn-delay 50ms-150ms --rate 10 -d 10s \
    --json "$WORK/c.json" >/dev/null 2>&1
  row "load-chat turns-4,10-conversations/s" "$(python3 -c "
import json; r=json.load(open('$WORK/c.json')); s=r['stream']
print(s['first_event']['mean_us'] / 1000, s['tokens']['tpot']['mean_us'] / 1000, r['latency']['mean_us'] / 1000)")" $before $(truth)
}

if [ -x "$PEERS/bin/aiperf" ]; then
  # The peers need a tokenizer: a word-level one, the mock's token being a word.
  TOKENIZER=$WORK/tokenizer
  "$PEERS/bin/python" - "$TOKENIZER" <<'PY'
import string, sys
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast
vocab = {"[UNK]": 0, "<s>": 1, "</s>": 2}
for w in ["tok"] + list(string.ascii_letters + string.digits + string.punctuation):
    vocab.setdefault(w, len(vocab))
t = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
t.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
PreTrainedTokenizerFast(tokenizer_object=t, unk_token="[UNK]", bos_token="<s>",
                        eos_token="</s>").save_pretrained(sys.argv[1])
PY
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
echo "client case | TTFT ms: client, truth, % | ITL ms: client, truth, % | E2EL ms: client, truth, %  (medians of $ROUNDS)"
cut -d' ' -f1-2 "$WORK/rows" | sort -u | while read -r a b; do
  cols=""
  for i in 3 4 5 6 7 8; do cols+=" $(grep "^$a $b " "$WORK/rows" | awk -v i=$i '{print $i}' | median)"; done
  python3 -c "
import sys; c=[float(x) for x in sys.argv[3:]]
f=lambda x,t: f'{x:.2f} | {t:.2f} | {(x/t-1)*100:+.2f} %'
print(f'{sys.argv[1]} {sys.argv[2]} | ' + ' | '.join(f(c[i], c[i+3]) for i in range(3)))" "$a" "$b" $cols
done
echo
echo "client | CPU s, 16 prompts | CPU s, 400 prompts | µs per token past the start-up  (medians of $ROUNDS)"
cut -d' ' -f1-2 "$WORK/cpu" | sort -u | while read -r a b; do
  small=$( (grep "^$a $b 512 " "$WORK/cpu" || true) | awk '{print $4}' | median)
  big=$( (grep "^$a $b 12800 " "$WORK/cpu" || true) | awk '{print $4}' | median)
  [ "$small" = nan ] && continue
  python3 -c "import sys; s,b=float(sys.argv[3]),float(sys.argv[4]); print(f'{sys.argv[1]} {sys.argv[2]} | {s:.2f} | {b:.2f} | {(b-s)/(12800-512)*1e6:.1f}')" "$a" "$b" "$small" "$big"
done
