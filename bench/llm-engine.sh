#!/usr/bin/env bash
# The batching mock's truth against the clients' figures: `stampede serve
# --llm-engine` (one engine, on CPU 1) times each request from its arrival to its
# first token and exports the sum (vllm:time_to_first_token_seconds); the clients on
# CPU 0 time it themselves. Each run's truth is the change of that sum over the
# change of its count, read from /metrics before and after the run. Rows:
#
# - stampede vllm bench serve at a fixed rate (40/s) and at a capped concurrency (16),
# - stampede aiperf profile and AIPerf itself (PyPI, when installed at $LLM_PEERS) at
#   the same fixed rate, AIPerf's figures being its own (from the send).
#
# 400 prompts of 256 words asking for 32 tokens, engine capped at 32 sequences, so
# the queue grows at the rate given. Medians of ROUNDS, alternating the clients.
#
#   bash bench/llm-engine.sh [ROUNDS=3]
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-3}
PEERS=${LLM_PEERS:-/opt/stampede-llm-peers}
[ -x "$STAMPEDE" ] || (cd "$ROOT" && cargo build --release -q)
port=$(free_port)
start_serve "$port" --llm-engine --llm-max-seqs 32
base="http://127.0.0.1:$port"
: > "$WORK/rows"

# ttft_sum_count: the engine's TTFT sum (s) and count so far.
ttft_sum_count() {
  curl -s "$base/metrics" | awk '/^vllm:time_to_first_token_seconds_sum/{s=$2} /^vllm:time_to_first_token_seconds_count/{c=$2} END{print s, c}'
}

# row NAME CLIENT_MEAN_MS BEFORE AFTER: one row, the client's mean TTFT beside the
# engine's over the same requests (less the ready checks the client sent first).
row() {
  python3 - "$@" <<'PY' >> "$WORK/rows"
import sys
name, client, s0, c0, s1, c1 = sys.argv[1], float(sys.argv[2]), *map(float, sys.argv[3:7])
print(name, round(client, 2), round((s1 - s0) / (c1 - c0) * 1000, 2))
PY
}

vllm_run() {
  local name=$1; shift
  local before; before=$(ttft_sum_count)
  taskset -c 0 "$STAMPEDE" vllm bench serve --base-url "$base" --model stampede-mock \
    --num-prompts 400 --random-input-len 256 --random-output-len 32 --ready-check-timeout-sec 0 \
    --percentile-metrics ttft --save-result --result-dir "$WORK" --result-filename v.json "$@" >/dev/null 2>&1
  row "$name" "$(python3 -c "import json; print(json.load(open('$WORK/v.json'))['mean_ttft_ms'])")" $before $(ttft_sum_count)
}

aiperf_run() {
  local name=$1 bin=$2
  local before; before=$(ttft_sum_count)
  taskset -c 0 $bin profile -m stampede-mock --url "$base" --endpoint-type completions --streaming \
    --request-rate 40 --request-rate-mode poisson --request-count 400 --isl 256 --osl 32 \
    --extra-inputs ignore_eos:true --artifact-dir "$WORK/ap" --ui none --random-seed 1 --no-server-metrics \
    ${TOKENIZER:+--tokenizer "$TOKENIZER"} >/dev/null 2>&1
  row "$name" "$(python3 -c "import json; print(json.load(open('$WORK/ap/profile_export_aiperf.json'))['time_to_first_token']['avg'])")" $before $(ttft_sum_count)
}

if [ -x "$PEERS/bin/aiperf" ]; then
  # AIPerf needs a tokenizer: a word-level one, the mock's token being a word.
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
  vllm_run "vllm-bench-serve rate-40/s" --request-rate 40
  vllm_run "vllm-bench-serve concurrency-16" --max-concurrency 16
  aiperf_run "stampede-aiperf rate-40/s" "$STAMPEDE aiperf"
  [ -x "$PEERS/bin/aiperf" ] && aiperf_run "AIPerf-0.13.0 rate-40/s" "$PEERS/bin/aiperf"
done
machine
echo "client / case | client mean TTFT ms | engine mean TTFT ms (truth) | client / truth  (medians of $ROUNDS)"
cut -d' ' -f1-2 "$WORK/rows" | sort -u | while read -r a b; do
  c=$(grep "^$a $b " "$WORK/rows" | awk '{print $3}' | median)
  e=$(grep "^$a $b " "$WORK/rows" | awk '{print $4}' | median)
  python3 -c "import sys; c,e=float(sys.argv[3]),float(sys.argv[4]); print(f'{sys.argv[1]} {sys.argv[2]} | {c:.2f} | {e:.2f} | {(c/e-1)*100:+.2f} %')" "$a" "$b" "$c" "$e"
done
