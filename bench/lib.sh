# Shared helpers for the bench scripts: installing peers, pinning, timing, medians.
# Sourced, not run.

set -euo pipefail
BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH_DIR/.." && pwd)
STAMPEDE=${STAMPEDE:-$ROOT/target/release/stampede}
WORK=$(mktemp -d /tmp/stampede-bench.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

need_apt() {
  local missing=()
  for pkg in "$@"; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
  if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

# find_oha: where oha is (on PATH, or where install_peers puts it).
find_oha() { command -v oha || { [ -x /opt/oha/bin/oha ] && echo /opt/oha/bin/oha; } || echo "$HOME/.cargo/bin/oha"; }

install_peers() {
  need_apt wrk apache2-utils nghttp2-client nginx-light time
  # oha (a cargo build of some minutes) only when the client list, if one is set,
  # names it.
  if [[ " ${CLIENTS[*]-oha} " == *" oha "* ]] && ! command -v oha >/dev/null 2>&1 \
    && [ ! -x "$HOME/.cargo/bin/oha" ] && [ ! -x /opt/oha/bin/oha ]; then
    cargo install oha --locked --root /opt/oha >/dev/null
  fi
  OHA=$(find_oha)
  [ -x "$STAMPEDE" ] || (cd "$ROOT" && cargo build --release -q)
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

wait_port() {
  for _ in $(seq 100); do
    (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0
    sleep 0.05
  done
  echo "nothing listens on port $1" >&2; return 1
}

# start_nginx PORT CPU [CERT KEY [LISTEN_FLAGS]]: one worker, /pong returns PONG; with
# a certificate and key (give "" "" for none), over TLS 1.3 only, with session cache and
# tickets off (every new connection pays a full handshake); LISTEN_FLAGS such as http2
# go on the listen line. Each port gets its own nginx, so several can run at once.
start_nginx() {
  local port=$1 cpu=$2 listen="" tls=""
  if [ -n "${3:-}" ]; then
    listen=" ssl"
    tls="ssl_certificate $3; ssl_certificate_key $4; ssl_protocols TLSv1.3; ssl_session_cache off; ssl_session_tickets off;"
  fi
  [ -n "${5:-}" ] && listen="$listen $5"
  cat > "$WORK/nginx-$port.conf" <<NGINX
worker_processes 1;
daemon off;
pid $WORK/nginx-$port.pid;
error_log $WORK/nginx-$port-error.log;
events { worker_connections 20000; }
http {
  access_log off;
  keepalive_requests 100000000;
  server {
    listen 127.0.0.1:$port$listen reuseport backlog=4096;
    $tls
    location = /pong { default_type text/plain; return 200 "PONG"; }
  }
}
NGINX
  taskset -c "$cpu" nginx -c "$WORK/nginx-$port.conf" -p "$WORK" 2>/dev/null &
  PIDS+=($!)
  wait_port "$port"
}

# start_serve PORT [ARGS...]: `stampede serve --threads 1` on CPU 1 with extra ARGS,
# waited for; its pid is in $SERVE_PID (and PIDS, for cleanup).
start_serve() {
  local port=$1; shift
  taskset -c 1 "$STAMPEDE" serve --listen 127.0.0.1:"$port" --threads 1 "$@" 2>/dev/null &
  SERVE_PID=$!
  PIDS+=("$SERVE_PID")
  wait_port "$port"
}

# parse_report TOOL OUT: "req/s completed" from a wrk-like, oha, h2load, ab or
# stampede-probe report.
parse_report() {
  local name=$1 out=$2
  case $name in
    stampede|stampede-base|wrk) awk '/requests in/{n=$1} /Requests\/sec/{r=$2} END{print r, n}' "$out" ;;
    oha|stampede-oha) awk '/Requests\/sec/{r=$2} /\[200\]/{n=$2} END{print r, n}' "$out" ;;
    h2load) awk '/^finished in/{r=$4} /^requests:/{n=$8} END{print r, n}' "$out" ;;
    ab) awk '/Requests per second/{r=$4} /Complete requests/{n=$3} END{print r, n}' "$out" ;;
    probe) awk '{print $6, $2}' "$out" ;;
  esac
}

# self_signed: an ECDSA P-256 certificate for 127.0.0.1 in $WORK/cert.pem, key.pem.
self_signed() {
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
    -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null
}

# figures TOOL OUT: "req/s requests client-µs-CPU/request user-µs/request max-RSS-KB"
# from a run's report (OUT, as TOOL prints it) and its timing (OUT.time, from `timed`).
figures() {
  local rps n u sy rss
  read -r rps n < <(parse_report "$1" "$2")
  read -r u sy rss < "$2.time"
  python3 -c "
n = max(float('${n:-0}'), 1)
print(f'${rps:-0} {n:.0f} {($u + $sy) * 1e6 / n:.2f} {$u * 1e6 / n:.2f} $rss')"
}

# record CASE CLIENT ROUND OUT: appends "CASE CLIENT req/s µs-CPU-per-request" from a
# run's report (OUT) and its timing (OUT.time) to $WORK/results, and shows the round.
record() {
  local case=$1 c=$2 r=$3 out=$4 tool=$2 rps cpu_us
  case $c in stampede | stampede-base) tool=${STAMPEDE_REPORT:-wrk} ;; esac
  read -r rps _ cpu_us _ _ < <(figures "$tool" "$out")
  echo "$case $c $rps $cpu_us" >> "$WORK/results"
  printf '%-9s round %d %-9s %10.0f req/s %7s µs CPU/req\n' "$case" "$r" "$c" "$rps" "$cpu_us" >&2
}

# summarize TITLE ROUNDS "CASES" "CLIENTS": a median table per case from
# $WORK/results, then stampede against every other client.
summarize() {
  local title=$1 rounds=$2 cases=$3 clients=$4 case c rps cpu
  : > "$WORK/medians"
  for case in $cases; do
    echo
    echo "$title, $case: | client | req/s (median of $rounds) | client CPU µs/request |"
    echo "|---|---:|---:|"
    for c in $clients; do
      rps=$(median_of "$WORK/results" 3 "$case" "$c")
      cpu=$(median_of "$WORK/results" 4 "$case" "$c")
      printf '| %s | %.0f | %.2f |\n' "$c" "$rps" "$cpu"
      echo "$case $c $rps $cpu" >> "$WORK/medians"
    done
  done
  echo
  python3 - "$WORK/medians" <<'PY'
import sys
m = {}
for l in open(sys.argv[1]):
    k, c, r, u = l.split()
    m.setdefault(k, {})[c] = (float(r), float(u))
for k, row in m.items():
    s = row["stampede"]
    for peer, (r, u) in row.items():
        if peer != "stampede":
            print(f"{k}: stampede vs {peer}: {s[0]/r:.2f}x req/s, {u/s[1]:.2f}x less client CPU per request")
PY
  echo
  machine
}

# timed OUT CMD...: runs CMD, stdout to OUT, and appends "cpu_s maxrss_kb" to OUT.time.
timed() {
  local out=$1; shift
  /usr/bin/time -f "%U %S %M" -o "$out.time" "$@" > "$out" 2>"$out.err" || true
}

# cpu_seconds PID: user+system CPU seconds PID (all its threads) has used so far.
cpu_seconds() {
  awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$1/stat"
}

# busy_run SERVER_PID TOOL OUT CMD...: runs CMD (a client run that writes OUT and, through
# `timed`, OUT.time) and prints its `figures` followed by "client-core-busy-%
# server-core-busy-%", the busy shares over the run's wall time, so a row says which
# side was full.
busy_run() {
  local pid=$1 tool=$2 out=$3 before after start wall u sy
  shift 3
  before=$(cpu_seconds "$pid")
  start=$(date +%s.%N)
  "$@"
  wall=$(python3 -c "import time; print(time.time() - $start)")
  after=$(cpu_seconds "$pid")
  read -r u sy _ < "$out.time"
  echo "$(figures "$tool" "$out") $(python3 -c "
print(f'{($u + $sy) * 100 / $wall:.0f} {($after - $before) * 100 / $wall:.0f}')")"
}

# median_of FILE COL KEY...: the median of column COL over FILE's lines whose first
# fields are KEY... in order (e.g. a case and a client).
median_of() {
  local file=$1 col=$2
  shift 2
  awk -v col="$col" -v keys="$*" 'BEGIN { n = split(keys, k, " ") }
    { for (i = 1; i <= n; i++) if ($i != k[i]) next; print $col }' "$file" | median
}

# median of numbers on stdin
median() { python3 -c 'import sys,statistics; v=[float(x) for x in sys.stdin.read().split()]; print(statistics.median(v) if v else float("nan"))'; }

machine() {
  echo "- CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') ($(nproc) cores)"
  echo "- Memory: $(free -h | awk '/Mem:/{print $2}'), kernel $(uname -r), $(. /etc/os-release; echo "$PRETTY_NAME")"
  echo "- stampede $("$STAMPEDE" --version | awk '{print $2}') (git $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo none)), $(command -v wrk >/dev/null && wrk -v 2>&1 | head -1 | awk '{print $1, $2}' || echo "wrk missing"), $("${OHA:-$(find_oha)}" --version 2>/dev/null | awk '{print $1, $2}' || echo "oha missing"), $(h2load --version | head -1), $(ab -V | head -1 | awk '{print $4, $5}'), $(nginx -v 2>&1 | cut -d: -f2 | sed 's/^ //')"
}

# word_tokenizer PYTHON DIR: a word-level tokenizer saved to DIR for the LLM peers
# (the mock's token being a word), made with PYTHON's tokenizers and transformers.
word_tokenizer() {
  "$1" - "$2" <<'PY'
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
}
