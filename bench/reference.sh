#!/usr/bin/env bash
# Runs the reference plans 000, 003 and 004 with their own servers at a reduced scale
# that fits a working session, keeping every shape: the same targets, connection counts,
# rates, bursts and injection forms, one discarded warm-up and three measured runs.
# Only sizes shrink, each by the factor below, in a copy of the plan next to it (removed
# afterwards):
#   000: ab runs 300,000 -> 60,000 requests; wrk2 20 s -> 5 s; rampUsers(52000) over
#        1 minute -> rampUsers(13000) over 15 seconds (the same arrival rate);
#        constantUsersPerSec(850) during 1 minute -> during 15 seconds
#   003: 1,000 sessions of 1,000 calls -> 100 sessions; 100,000 PNG sessions -> 30,000
#   004: the 10 s run as it is; the 60 s run -> 20 s
# `bash bench/reference.sh full` runs the plans as written instead (hours on 2 cores);
# plan names after the scale pick some of them (`bash bench/reference.sh reduced 003`).
# The binary is copied first, so a rebuild during the runs does not change it. Reports
# land in bench/results/ (ignored); the plans' servers come from
# bash plans/install-peers.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
scale="${1:-reduced}"
shift || true
out=bench/results
mkdir -p "$out"
stampede="$(mktemp "${TMPDIR:-/tmp}/stampede-reference.XXXXXX")"
install -m 755 target/release/stampede "$stampede"
copies=("$stampede")
trap 'rm -f "${copies[@]}"' EXIT
reduce() {
  case "$1" in
    000*) sed -e 's/requests = 300000/requests = 60000/' -e 's/duration = "20s"/duration = "5s"/' \
              -e 's/rampUsers(52000) over (1 minute)/rampUsers(13000) over (15 seconds)/' \
              -e 's/during (1 minute)/during (15 seconds)/' -e 's/-n300000"/-n60000"/' \
              -e 's/-R100000 20s"/-R100000 5s"/' -e 's/(52000) over 1 min"/(13000) over 15 s"/' \
              -e 's/(850) 1 min"/(850) 15 s"/' ;;
    003*) sed -e 's/sessions = { count = 1000, rate = 1000 }/sessions = { count = 100, rate = 1000 }/' \
              -e 's/sessions = { count = 100000, rate = 10000 }/sessions = { count = 30000, rate = 10000 }/' \
              -e 's/"pong 1000 sessions/"pong 100 sessions/' -e 's/"png 100000 sessions/"png 30000 sessions/' ;;
    004*) sed -e 's/duration = "60s"/duration = "20s"/' -e 's/50k req\/s 60s"/50k req\/s 20s"/' ;;
  esac | sed -e 's/, full scale"/, reduced scale"/'
}
wanted=("$@")
[ ${#wanted[@]} -gt 0 ] || wanted=(000 003 004)
for pick in "${wanted[@]}"; do
  plan="$(basename "$(ls plans/"$pick"*.toml | head -n 1)" .toml)"
  file="plans/$plan.toml"
  if [ "$scale" != full ]; then
    file="plans/.reduced-$plan.toml"
    reduce "$plan" < "plans/$plan.toml" > "$file"
    copies+=("$file")
    if cmp -s "$file" "plans/$plan.toml"; then echo "reduce: nothing changed in $plan" >&2; exit 1; fi
  fi
  echo "== $file ($scale)"
  "$stampede" bench "$file" --db "$out/reference.db" --report "$out/$plan.md" \
    --json "$out/$plan.json" --html "$out/$plan.html" 2> "$out/$plan.log" || echo "   exit $?"
  sed -n '1,/^$/p' "$out/$plan.md" | head -3
done
