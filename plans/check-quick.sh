#!/usr/bin/env bash
# Runs every plan scaled down (`stampede bench PLAN --quick`) and checks that each target
# started, was verified, measured on every scenario and stopped, and that nothing a
# target started is left running. A target named *-error-pages is a deliberately broken
# server: it must start and stop, and verification must refuse every scenario on it
# (the plan says so with expect = "refused", so the bench still exits 0).
# Usage: STAMPEDE=path/to/stampede bash plans/check-quick.sh [PLAN ...]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
stampede="$(realpath "${STAMPEDE:-$here/../target/release/stampede}")"
cd "$here"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
plans=("$@")
[ ${#plans[@]} -gt 0 ] || plans=(*.toml)
leftovers() {
  pgrep -af 'plans/targets|AkkaServer|JdkServer|Http4sServer|catalina|apache2 -f|nginx: master|puma' || true
}
before="$(leftovers)"
for plan in "${plans[@]}"; do
  echo "== $plan --quick"
  start=$(date +%s)
  set +e
  "$stampede" bench "$plan" --quick -q --db "$work/s.db" --report "$work/report.md" --json "$work/summary.json"
  code=$?
  set -e
  echo "   exit $code after $(( $(date +%s) - start )) s"
  python3 - "$work/summary.json" "$code" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
code = int(sys.argv[2])
bad = []
broken = lambda name: name.endswith("-error-pages")
for t in s["targets"]:
    if not t["ok"] or not t["status"].startswith("stopped"):
        bad.append(f"target {t['name']}: {t['status']}")
refused = {(v["target"], v["scenario"]) for v in s["verification_problems"] if v["outcome"] == "fail"}
for row in s["rows"]:
    for c in row["cells"]:
        key = (c["target"], row["scenario"])
        if broken(c["target"]):
            if key not in refused or c["runs"] != 0:
                bad.append(f"{key}: a server of error pages was not refused by verification")
        elif key in refused or c["runs"] < 1:
            bad.append(f"{key}: not measured: {'; '.join(c['notes'])}")
expected = 0
if code != expected:
    bad.append(f"exit code {code}, expected {expected}")
for b in bad:
    print("   FAIL", b)
print(f"   {len(s['targets'])} targets × {len(s['rows'])} scenarios checked")
sys.exit(1 if bad else 0)
PY
  after="$(leftovers)"
  if [ "$after" != "$before" ]; then
    echo "   FAIL: left running after the bench:"; echo "$after"; exit 1
  fi
done
