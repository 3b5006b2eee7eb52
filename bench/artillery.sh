#!/usr/bin/env bash
# Journeys against Artillery 2 and Locust: the same user journey (log in with a CSV
# row and take the token, list the items, put two in the cart with the token) on the
# reference server's shop, the server on core 1 and the load generator on core 0,
# alternating A B A B. For each tool: requests answered, the client's CPU seconds
# (user + system), requests per CPU second, and both cores' busy shares (which side
# was the limit).
#   artillery: `artillery run shop.yml` (users arriving at RATE a second for DURATION);
#   stampede:  `stampede artillery run shop.yml`, the same script;
#   locust:    a locustfile of the same journey, USERS users walking it again and again
#              with no pause, headless for DURATION (Locust's users loop);
#   closed:    `stampede load --journey` of the journey the script became, USERS users
#              walking it again and again for DURATION, as Locust's do.
# Artillery and `stampede artillery` are offered the same load (the rows compare the
# CPU each spends on it); Locust and `closed` each go as fast as the client allows.
# Then the memory a user costs: `stampede load --journey` with 10,000 users (each
# pausing 2 s between steps) against the same run of plain requests on 10,000
# connections, the difference in peak RSS over the users.
#
#   bash bench/artillery.sh [BINARY=target/release/stampede] [RUNS=3]
# ARTILLERY (its launcher) and LOCUST (the locust command) name the peers.
source "$(dirname "$0")/lib.sh"
B=$(realpath "${1:-$STAMPEDE}")
RUNS=${2:-3}
RATE=${RATE:-40}
DURATION=${DURATION:-15}
USERS=${USERS:-20}
[ -x "$B" ] || (cd "$ROOT" && cargo build --release -q)
ARTILLERY=${ARTILLERY:-artillery}
LOCUST=${LOCUST:-locust}

taskset -c 1 "$B" serve --listen 127.0.0.1:0 --threads 1 --io epoll 2>"$WORK/server.err" &
SERVER=$!
PIDS+=("$SERVER")
for _ in $(seq 100); do grep -q listening "$WORK/server.err" && break; sleep 0.1; done
URL=$(grep -o "http://127.0.0.1:[0-9]*" "$WORK/server.err" | head -n 1)

printf 'ann,pw-ann\nbob,pw-bob\ncy,pw-cy\ndee,pw-dee\n' >"$WORK/users.csv"
cat >"$WORK/shop.yml" <<EOF
config:
  target: "$URL"
  phases:
    - duration: $DURATION
      arrivalRate: $RATE
  payload:
    path: "users.csv"
    fields: ["user", "password"]
    order: sequence
scenarios:
  - name: buyer
    flow:
      - post:
          url: "/shop/login"
          json:
            user: "{{ user }}"
            password: "{{ password }}"
          capture:
            - json: "\$.token"
              as: token
      - get:
          url: "/shop/items"
          headers:
            Authorization: "Bearer {{ token }}"
      - loop:
          - post:
              url: "/shop/cart"
              headers:
                Authorization: "Bearer {{ token }}"
              json:
                item: "{{ \$loopElement }}"
                qty: 2
        over:
          - 101
          - 103
EOF
cat >"$WORK/locustfile.py" <<'EOF'
import csv, itertools, os
from locust import HttpUser, task, constant

rows = itertools.cycle(list(csv.reader(open(os.path.join(os.path.dirname(__file__), "users.csv")))))

class Buyer(HttpUser):
    wait_time = constant(0)

    @task
    def buy(self):
        user, password = next(rows)
        token = self.client.post("/shop/login", json={"user": user, "password": password}).json()["token"]
        auth = {"Authorization": "Bearer " + token}
        self.client.get("/shop/items", headers=auth)
        for item in (101, 103):
            self.client.post("/shop/cart", headers=auth, json={"item": item, "qty": 2})
EOF

# run TOOL: one run pinned to core 0; prints "answered cpu_s client% server%".
run() {
  local tool=$1 out=$WORK/$1.out before after start wall
  before=$(cpu_seconds "$SERVER")
  start=$(date +%s.%N)
  case $tool in
    artillery)
      (cd "$WORK" && ARTILLERY_DISABLE_TELEMETRY=true /usr/bin/time -f "%U %S %M" -o "$out.time" \
        taskset -c 0 "$ARTILLERY" run shop.yml --output "$WORK/a.json" >"$out" 2>&1) || true
      answered=$(python3 -c "import json; print(json.load(open('$WORK/a.json'))['aggregate']['counters'].get('http.responses', 0))") ;;
    stampede)
      (cd "$WORK" && /usr/bin/time -f "%U %S %M" -o "$out.time" \
        taskset -c 0 "$B" artillery run shop.yml -q --output "$WORK/s.json" >"$out" 2>&1) || true
      answered=$(python3 -c "import json; print(json.load(open('$WORK/s.json'))['aggregate']['counters'].get('http.responses', 0))") ;;
    closed)
      (cd "$WORK" && /usr/bin/time -f "%U %S %M" -o "$out.time" \
        taskset -c 0 "$B" load "$URL/" --journey shop.toml -c "$USERS" -t 1 -d "${DURATION}s" -q \
        --json "$WORK/c.json" >"$out" 2>&1) || true
      answered=$(python3 -c "import json; print(json.load(open('$WORK/c.json'))['requests']['completed'])") ;;
    locust)
      (cd "$WORK" && /usr/bin/time -f "%U %S %M" -o "$out.time" \
        taskset -c 0 "$LOCUST" -f locustfile.py --headless -u "$USERS" -r "$USERS" -t "${DURATION}s" \
        -H "$URL" --only-summary --json >"$out" 2>"$out.err") || true
      answered=$(python3 -c "
import json
print(sum(e['num_requests'] - e['num_failures'] for e in json.load(open('$out'))))") ;;
  esac
  wall=$(python3 -c "import time; print(time.time() - $start)")
  after=$(cpu_seconds "$SERVER")
  read -r u sy _ <"$out.time"
  python3 -c "print($answered, round($u + $sy, 2), round(($u + $sy) * 100 / $wall), round(($after - $before) * 100 / $wall))"
}

: >"$WORK/rows"
"$B" artillery run "$WORK/shop.yml" --journey-out "$WORK/shop.toml" -q >/dev/null 2>&1 || true
for i in $(seq "$RUNS"); do
  for tool in artillery stampede locust closed; do
    echo "$tool $(run "$tool")" | tee -a "$WORK/rows"
  done
done
echo
echo "tool answered cpu_s req/cpu_s client% server% (medians of $RUNS)"
for tool in artillery stampede locust closed; do
  awk -v t="$tool" '$1 == t { printf "%s %.0f\n", $0, $2 / ($3 > 0 ? $3 : 1e-9) }' "$WORK/rows" >"$WORK/$tool.rows"
  echo "$tool $(median_of "$WORK/$tool.rows" 2 "$tool") $(median_of "$WORK/$tool.rows" 3 "$tool") \
$(median_of "$WORK/$tool.rows" 6 "$tool") $(median_of "$WORK/$tool.rows" 4 "$tool") $(median_of "$WORK/$tool.rows" 5 "$tool")"
done

# Memory a user costs: 10,000 users at once (Gatling's constantConcurrentUsers), each
# on its connection making two requests 2 s apart, walking a journey (a capture, a
# template, a jar) against the same sessions of plain requests: the difference in
# peak RSS over the users.
ulimit -n 65536 2>/dev/null || true
token=$(curl -s -X POST "$URL/shop/login" -d '{"user":"ann","password":"pw-ann"}' |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
cat >"$WORK/mem.toml" <<EOF
[[step]]
name = "item"
url = "/shop/items/101"
headers = { Authorization = "Bearer $token" }
capture = [{ json = "\$.name", as = "name" }]
think = "2s"
[[step]]
name = "again"
url = "/shop/items/101?seen={{ name }}"
headers = { Authorization = "Bearer $token" }
EOF
users='constantConcurrentUsers(10000) during(6 seconds)'
/usr/bin/time -f "%M" -o "$WORK/plain.rss" taskset -c 0 "$B" load "$URL/shop/items/101" \
  -H "Authorization: Bearer $token" --inject "$users" --calls 2 --think 2s -t 1 -q \
  --json "$WORK/plain.json" >/dev/null 2>"$WORK/plain.err" || true
/usr/bin/time -f "%M" -o "$WORK/mem.rss" taskset -c 0 "$B" load "$URL/" --journey "$WORK/mem.toml" \
  --inject "$users" -t 1 -q --json "$WORK/mem.json" >/dev/null 2>"$WORK/mem.err" || true
python3 - "$WORK" <<'EOF'
import json, sys
w = sys.argv[1]
rss = {k: int(open(f"{w}/{k}.rss").read().split()[-1]) for k in ("plain", "mem")}
runs = {k: json.load(open(f"{w}/{k}.json")) for k in ("plain", "mem")}
done = {k: r["requests"]["completed"] for k, r in runs.items()}
most = {k: (r.get("sessions") or {}).get("max_concurrent", 0) for k, r in runs.items()}
print(f"users at once: {most['mem']} walking the journey, {most['plain']} in plain sessions; "
      f"peak RSS {rss['mem']} KiB and {rss['plain']} KiB ({done['mem']} and {done['plain']} answers): "
      f"{(rss['mem'] - rss['plain']) * 1024 / max(most['mem'], 1):.0f} bytes a user")
EOF
echo
machine
